/*
 * slow_unlink.c -- an LD_PRELOAD shim for test_delete_race.py: unlink() of
 * a payload file (*.f64) sleeps HISTD_TEST_SLOW_UNLINK_MS first, which
 * widens the window between a delete's row and its file to something a
 * test can hit every time.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int unlink(const char *path) {
  static int (*real_unlink)(const char *);
  if (real_unlink == NULL)
    real_unlink = (int (*)(const char *))dlsym(RTLD_NEXT, "unlink");
  const char *ms = getenv("HISTD_TEST_SLOW_UNLINK_MS");
  size_t l = path ? strlen(path) : 0;
  if (ms != NULL && l > 4 && strcmp(path + l - 4, ".f64") == 0) {
    long v = atol(ms);
    struct timespec ts = {v / 1000, (v % 1000) * 1000000L};
    nanosleep(&ts, NULL);
  }
  return real_unlink(path);
}
