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
 *       fallocate() there, fails with ENOSPC, and statvfs() says the disk
 *       has no free blocks (test_store_fault).
 *   HISTD_TEST_WAL_LIMIT=PATH  while the file PATH exists and holds a
 *       number N, a write to the database's WAL (histd.db-wal) that would
 *       end past byte N fails with ENOSPC: a disk with a little room left,
 *       where small updates fit and a large one does not (SQLite writes a
 *       failed transaction's frames again from the same offset, so the
 *       next small one fits) (test_result_store).
 *   HISTD_TEST_STALL_SYNC=PATH  while the file PATH exists, fsync() and
 *       fdatasync() of the database's WAL wait (a disk that does not
 *       answer): whatever waits on the disk waits until the test removes
 *       PATH, and whatever must not, answers meanwhile (test_durability).
 *   HISTD_TEST_UNREADABLE=PATH  while the file PATH exists and holds a
 *       dataset id, open() of any file whose path has that id in it fails
 *       with EIO: a dataset no node can read any more, so every shard of a
 *       job on it fails (tests/cluster's test_cluster).
 *   HISTD_TEST_SLOW_SIGNAL_START_MS=N  the first sigwait() sleeps N ms
 *       first, which widens any window between the daemon answering and
 *       its taking a stop signal (test_startup_signal).
 *   HISTD_TEST_NO_OPENAT2=1  syscall(SYS_openat2, ...) fails with ENOSYS, as
 *       on a kernel before 5.6, so an import takes its openat walk
 *       (test_import).
 */
#undef _FILE_OFFSET_BITS /* pwrite and pwrite64 are two symbols to replace */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
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

/* The daemon's signal thread takes SIGINT and SIGTERM with sigwait(): its
 * first call sleeps first, so a signal sent as soon as the daemon answers
 * waits, pending, for longer (the window test_startup_signal widens). */
int sigwait(const sigset_t *set, int *sig) {
  static int (*real)(const sigset_t *, int *);
  static int calls;
  if (real == NULL)
    real = (int (*)(const sigset_t *, int *))dlsym(RTLD_NEXT, "sigwait");
  if (calls++ == 0)
    sleep_ms_from("HISTD_TEST_SLOW_SIGNAL_START_MS");
  return real(set, sig);
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

/* HISTD_TEST_UNREADABLE: whether path names the unreadable dataset. */
static bool unreadable(const char *path, int (*real)(const char *, int, ...)) {
  const char *flag = getenv("HISTD_TEST_UNREADABLE");
  if (flag == NULL || path == NULL)
    return false;
  int fd = real(flag, O_RDONLY);
  if (fd < 0)
    return false;
  char id[65] = "";
  ssize_t got = read(fd, id, 64);
  close(fd);
  id[got > 0 ? got : 0] = 0;
  return got == 64 && strstr(path, id) != NULL;
}

#define OPEN_WRAPPER(name)                                                  \
  int name(const char *path, int flags, ...) {                              \
    static int (*real)(const char *, int, ...);                             \
    if (real == NULL)                                                       \
      real = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, #name);      \
    mode_t mode = 0;                                                        \
    if (flags & (O_CREAT | O_TMPFILE)) {                                    \
      va_list ap;                                                           \
      va_start(ap, flags);                                                  \
      mode = (mode_t)va_arg(ap, int);                                       \
      va_end(ap);                                                           \
    }                                                                       \
    if (unreadable(path, real)) {                                           \
      errno = EIO;                                                          \
      return -1;                                                            \
    }                                                                       \
    return real(path, flags, mode);                                         \
  }
OPEN_WRAPPER(open)
OPEN_WRAPPER(open64)

static bool flag_on(void) {
  const char *flag = getenv("HISTD_TEST_DISK_FULL");
  return flag != NULL && access(flag, F_OK) == 0;
}

static bool is_wal(const char *path, size_t n) {
  static const char wal[] = "/histd.db-wal";
  return n >= sizeof wal - 1 && strcmp(path + n - (sizeof wal - 1), wal) == 0;
}

/* Whether a write to fd of len bytes at off (-1: the file position) ends
 * past HISTD_TEST_WAL_LIMIT's number, fd being the WAL. */
static bool past_wal_limit(int fd, size_t len, long long off) {
  /* async-signal-safe calls only: libuv writes from its signal handler */
  const char *flag = getenv("HISTD_TEST_WAL_LIMIT");
  if (flag == NULL)
    return false;
  char link[64], path[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, sizeof path - 1);
  if (n <= 0)
    return false;
  path[n] = '\0';
  if (!is_wal(path, (size_t)n))
    return false;
  int ffd = open(flag, O_RDONLY | O_CLOEXEC);
  if (ffd < 0)
    return false;
  char text[32];
  ssize_t got = read(ffd, text, sizeof text - 1);
  close(ffd);
  if (got <= 0)
    return false;
  text[got] = '\0';
  long long limit = strtoll(text, NULL, 10);
  if (limit <= 0)
    return false;
  if (off < 0)
    off = (long long)lseek(fd, 0, SEEK_CUR);
  if (off + (long long)len <= limit)
    return false;
  errno = ENOSPC;
  return true;
}

static bool disk_full(int fd) {
  if (!flag_on())
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
  return disk_full(fd) || past_wal_limit(fd, len, -1) ? -1 : real(fd, buf, len);
}

ssize_t pwrite(int fd, const void *buf, size_t len, off_t off) {
  static ssize_t (*real)(int, const void *, size_t, off_t);
  if (real == NULL)
    real = (ssize_t (*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite");
  return disk_full(fd) || past_wal_limit(fd, len, off) ? -1 : real(fd, buf, len, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t len, off64_t off) {
  static ssize_t (*real)(int, const void *, size_t, off64_t);
  if (real == NULL)
    real = (ssize_t (*)(int, const void *, size_t, off64_t))dlsym(RTLD_NEXT, "pwrite64");
  return disk_full(fd) || past_wal_limit(fd, len, off) ? -1 : real(fd, buf, len, off);
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

/* A full disk has no free blocks (the daemon's /readyz asks). */
static void no_room(struct statvfs *st) {
  if (flag_on())
    st->f_bfree = st->f_bavail = 0;
}

int statvfs(const char *path, struct statvfs *st) {
  static int (*real)(const char *, struct statvfs *);
  if (real == NULL)
    real = (int (*)(const char *, struct statvfs *))dlsym(RTLD_NEXT, "statvfs");
  int rc = real(path, st);
  if (rc == 0)
    no_room(st);
  return rc;
}

int statvfs64(const char *path, struct statvfs64 *st) {
  static int (*real)(const char *, struct statvfs64 *);
  if (real == NULL)
    real = (int (*)(const char *, struct statvfs64 *))dlsym(RTLD_NEXT, "statvfs64");
  int rc = real(path, st);
  if (rc == 0 && flag_on())
    st->f_bfree = st->f_bavail = 0;
  return rc;
}

/* HISTD_TEST_STALL_SYNC: a sync of the WAL waits while the flag exists. */
static void stall_if_wal(int fd) {
  const char *flag = getenv("HISTD_TEST_STALL_SYNC");
  if (flag == NULL || access(flag, F_OK) != 0)
    return;
  char link[64], path[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, sizeof path - 1);
  if (n <= 0)
    return;
  path[n] = '\0';
  if (!is_wal(path, (size_t)n))
    return;
  struct timespec ts = {0, 10 * 1000000L};
  while (access(flag, F_OK) == 0)
    nanosleep(&ts, NULL);
}

int fsync(int fd) {
  static int (*real)(int);
  if (real == NULL)
    real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
  stall_if_wal(fd);
  return real(fd);
}

int fdatasync(int fd) {
  static int (*real)(int);
  if (real == NULL)
    real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
  stall_if_wal(fd);
  return real(fd);
}

/* glibc has no openat2 wrapper: histd calls it through syscall(). Every
 * other number goes through with its six possible arguments. */
long syscall(long number, ...) {
  static long (*real)(long, ...);
  if (real == NULL)
    real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
  va_list ap;
  va_start(ap, number);
  long a[6];
  for (int i = 0; i < 6; i++)
    a[i] = va_arg(ap, long);
  va_end(ap);
#ifdef SYS_openat2
  if (number == SYS_openat2 && getenv("HISTD_TEST_NO_OPENAT2") != NULL) {
    errno = ENOSYS;
    return -1;
  }
#endif
  return real(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}
