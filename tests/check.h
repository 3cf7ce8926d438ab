/*
 * check.h -- the tests' tiny assertion kit. A failed CHECK prints where and
 * why and counts; a test program exits 1 if any check failed, 0 otherwise,
 * and 77 (meson's "skipped") through SKIP().
 */
#ifndef HISTD_TEST_CHECK_H
#define HISTD_TEST_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_failures = 0;

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      check_failures++;                                                        \
      fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                            \
      fputc('\n', stderr);                                                     \
    }                                                                          \
  } while (0)

#define CHECK_EQ_U64(a, b, what)                                              \
  CHECK((uint64_t)(a) == (uint64_t)(b), "%s: got %" PRIu64 ", want %" PRIu64, \
        what, (uint64_t)(a), (uint64_t)(b))

#define CHECK_STR_CONTAINS(hay, needle)                                        \
  CHECK(strstr((hay), (needle)) != NULL, "\"%s\" does not contain \"%s\"",     \
        (hay), (needle))

#define SKIP(...)                                                              \
  do {                                                                         \
    printf("skipped: ");                                                       \
    printf(__VA_ARGS__);                                                       \
    printf("\n");                                                              \
    exit(77);                                                                  \
  } while (0)

static inline int check_finish(const char *name) {
  if (check_failures) {
    fprintf(stderr, "%s: %d check(s) failed\n", name, check_failures);
    return 1;
  }
  printf("%s: all checks passed\n", name);
  return 0;
}

/* xorshift64*: a reproducible generator for test data. */
static inline uint64_t test_rand_u64(uint64_t *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 2685821657736338717ull;
}

/* Uniform in [0, 1). */
static inline double test_rand01(uint64_t *s) {
  return (double)(test_rand_u64(s) >> 11) * (1.0 / 9007199254740992.0);
}

#endif
