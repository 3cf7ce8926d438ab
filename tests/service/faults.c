/*
 * faults.c -- an LD_PRELOAD shim that injects the faults the service tests
 * cannot produce from outside the daemon:
 *
 *   HISTD_TEST_SLOW_UNLINK_MS=N  unlink() of a payload file (*.f64) sleeps
 *       N ms first, which widens the window between a delete's row and its
 *       file to something a test can hit every time (test_delete_race).
 *   HISTD_TEST_DISK_FULL=PATH  while the file PATH exists, the data dir's
 *       disk is full: every write to the SQLite database (histd.db and its
 *       -wal and -journal files) or to a payload file, and every
 *       fallocate() there, fails with ENOSPC (test_store_fault).
 *   HISTD_TEST_SLOW_SIGNAL_START_MS=N  uv_signal_start() sleeps N ms
 *       first, which widens any window between the daemon answering and
 *       its signal handlers being installed (test_startup_signal).
 */
#undef _FILE_OFFSET_BITS /* pwrite and pwrite64 are two symbols to replace */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

static void sleep_ms_from(const char *var) {
  const char *ms = getenv(var);
  if (ms == NULL)
    return;
  long v = atol(ms);
  struct timespec ts = {v / 1000, (v % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* libuv's, declared here so the shim needs no uv.h */
typedef struct uv_signal_s uv_signal_t;
typedef void (*uv_signal_cb)(uv_signal_t *handle, int signum);

int uv_signal_start(uv_signal_t *handle, uv_signal_cb cb, int signum) {
  static int (*real)(uv_signal_t *, uv_signal_cb, int);
  if (real == NULL)
    real = (int (*)(uv_signal_t *, uv_signal_cb, int))dlsym(RTLD_NEXT, "uv_signal_start");
  sleep_ms_from("HISTD_TEST_SLOW_SIGNAL_START_MS");
  return real(handle, cb, signum);
}

int unlink(const char *path) {
  static int (*real_unlink)(const char *);
  if (real_unlink == NULL)
    real_unlink = (int (*)(const char *))dlsym(RTLD_NEXT, "unlink");
  size_t l = strlen(path);
  if (l > 4 && strcmp(path + l - 4, ".f64") == 0)
    sleep_ms_from("HISTD_TEST_SLOW_UNLINK_MS");
  return real_unlink(path);
}

static bool disk_full(int fd) {
  const char *flag = getenv("HISTD_TEST_DISK_FULL");
  if (flag == NULL || access(flag, F_OK) != 0)
    return false;
  char link[64], path[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, sizeof path - 1);
  if (n <= 0)
    return false;
  path[n] = '\0';
  if (strstr(path, "/histd.db") == NULL && strstr(path, "/payloads/") == NULL)
    return false;
  errno = ENOSPC;
  return true;
}

ssize_t write(int fd, const void *buf, size_t len) {
  static ssize_t (*real)(int, const void *, size_t);
  if (real == NULL)
    real = (ssize_t (*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
  return disk_full(fd) ? -1 : real(fd, buf, len);
}

ssize_t pwrite(int fd, const void *buf, size_t len, off_t off) {
  static ssize_t (*real)(int, const void *, size_t, off_t);
  if (real == NULL)
    real = (ssize_t (*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite");
  return disk_full(fd) ? -1 : real(fd, buf, len, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t len, off64_t off) {
  static ssize_t (*real)(int, const void *, size_t, off64_t);
  if (real == NULL)
    real = (ssize_t (*)(int, const void *, size_t, off64_t))dlsym(RTLD_NEXT, "pwrite64");
  return disk_full(fd) ? -1 : real(fd, buf, len, off);
}

int fallocate(int fd, int mode, off_t off, off_t len) {
  static int (*real)(int, int, off_t, off_t);
  if (real == NULL)
    real = (int (*)(int, int, off_t, off_t))dlsym(RTLD_NEXT, "fallocate");
  return disk_full(fd) ? -1 : real(fd, mode, off, len);
}

int fallocate64(int fd, int mode, off64_t off, off64_t len) {
  static int (*real)(int, int, off64_t, off64_t);
  if (real == NULL)
    real = (int (*)(int, int, off64_t, off64_t))dlsym(RTLD_NEXT, "fallocate64");
  return disk_full(fd) ? -1 : real(fd, mode, off, len);
}
