/*
 * parse_exact.h -- the io tests' way to parse: from a heap block of exactly
 * the input's length, so that the sanitizer build catches any read past the
 * end (the parsers must not need a terminating NUL).
 */
#ifndef HISTD_TEST_PARSE_EXACT_H
#define HISTD_TEST_PARSE_EXACT_H

#include <stdlib.h>
#include <string.h>

#include "histd/io.h"

static int parse_exact_msg(histd_format fmt, const void *buf, size_t len, size_t max,
                           histd_dataset *ds, char *msg, size_t msglen) {
  char *copy = malloc(len ? len : 1);
  if (len)
    memcpy(copy, buf, len);
  msg[0] = '\0';
  int rc = histd_parse(fmt, copy, len, max, ds, msg, msglen);
  free(copy);
  return rc;
}

#endif
