/*
 * upload_stream.c -- raw float64 uploads, written to disk as they arrive.
 *
 * A raw float64 body (x0 y0 z0 x1 y1 z1 ..., little-endian) with a
 * Content-Length already says how many points it holds, and the payload
 * file is just those numbers regrouped as x[], y[], z[]. So instead of
 * buffering the body, parsing it into a second copy and writing that, the
 * HTTP thread regroups each chunk as it comes off the socket into three
 * small staging arrays and pwrite()s them to their offsets in a temp file
 * in the payload dir, while it checks the numbers (finite), tracks the
 * bounds and feeds the three leaf hashes of the dataset id (sha256.c: the
 * x, y and z arrays each arrive in order, so each leaf hashes as a stream).
 * Every 2 MiB it asks the kernel to start writing back
 * (sync_file_range), so the final fdatasync finds little left to do
 * (every 8 MiB left ~8 MiB, ~3.3 ms of fdatasync, at the end; 2 MiB
 * measured 3 ms faster per 24 MB upload, bench/RESULTS.md).
 *
 * The temp file's blocks are reserved (fallocate) ahead of the writes,
 * and the staging holds up to 32,768 points (256 KiB per axis) per
 * pwrite: page-cache writes cost mostly per call and per page, and on
 * this kernel (ext4 with large folios) big writes into allocated blocks
 * are ~2.5x cheaper than 32 KiB writes into a growing file
 * (bench/RESULTS.md). The reservation doubles as points arrive (up to
 * twice what has come, at least one staging), not the whole announced
 * size at once: a client that announces a gigabyte and sends nothing
 * holds no disk. A disk without room fails the upload with a 500.
 *
 * Uploads of 65,536 points or more hash on a thread of their own: two
 * staging sets take turns, the HTTP thread regroups and writes one while
 * the hasher feeds the other to the three leaves (in order, so the id is
 * the same). SHA-256 is the largest single cost (~13 ms for 24 MB here);
 * this moves it off the thread that reads the socket. Finishing (and
 * aborting) waits for the hasher to drain and leave.
 *
 * At the end of the body the id is known at once; store_put_streamed then
 * syncs, renames and records the dataset exactly as the buffered path does
 * (or drops the temp file when the points are stored already). A body with
 * a non-finite number is read to its end and answered 400, leaving nothing
 * behind; a client that goes away mid-upload leaves nothing either
 * (upload_stream_abort, from the request's completion).
 *
 * Memory: at most 768 KiB of staging per upload (24 bytes a point for
 * smaller ones; 1.5 MiB with the hasher thread), whatever its size, instead of two copies of the payload. Everything else (JSON, CSV, XYZ, float32, bodies
 * without Content-Length, big-endian hosts) takes the buffered path.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "service.h"
#include "sha256.h"
#include "store.h"
#include "upload_stream.h"

#define STAGE_POINTS ((size_t)32768)
#define SYNC_EVERY ((size_t)2 << 20)

struct upload_stream {
  service *svc;
  size_t n, done;
  int fd;
  char tmp[4400];
  dataset_hasher *hash;
  unsigned char carry[24];
  size_t carry_len;
  double min[3], max[3];
  bool failed;
  unsigned fail_status;
  char error[256];
  size_t unsynced;
  size_t reserved; /* points per axis whose blocks are allocated */
  size_t staged, stage_first, stage_cap;
  double *stage[3]; /* the set being filled: x, y, z of stage_cap each */
  double *sets;     /* 1 set, or 2 when a hasher thread takes turns with us */
  /* the hasher thread: hashes set k while this thread fills set 1-k */
  bool threaded, stopping;
  int cur, next_hash;
  size_t ready[2]; /* points of set k waiting to be hashed, 0 when free */
  pthread_t hasher;
  pthread_mutex_t mu;
  pthread_cond_t cv;
};

#define HASH_THREAD_MIN_POINTS ((size_t)65536) /* 1.5 MB */

static void point_stage(upload_stream *u, int set) {
  for (int a = 0; a < 3; a++)
    u->stage[a] = u->sets + ((size_t)set * 3 + (size_t)a) * u->stage_cap;
}

static void *hasher_main(void *arg) {
  upload_stream *u = arg;
  pthread_mutex_lock(&u->mu);
  for (;;) {
    int k = u->next_hash;
    while (u->ready[k] == 0 && !u->stopping)
      pthread_cond_wait(&u->cv, &u->mu);
    if (u->ready[k] == 0)
      break;
    size_t count = u->ready[k];
    pthread_mutex_unlock(&u->mu);
    for (int a = 0; a < 3; a++)
      dataset_hasher_update(u->hash, a, u->sets + ((size_t)k * 3 + (size_t)a) * u->stage_cap,
                            count * sizeof(double));
    pthread_mutex_lock(&u->mu);
    u->ready[k] = 0;
    u->next_hash = 1 - k;
    pthread_cond_broadcast(&u->cv);
  }
  pthread_mutex_unlock(&u->mu);
  return NULL;
}

/* Waits until every staged set is hashed and the hasher has left. */
static void hasher_stop(upload_stream *u) {
  if (!u->threaded)
    return;
  pthread_mutex_lock(&u->mu);
  u->stopping = true;
  pthread_cond_broadcast(&u->cv);
  pthread_mutex_unlock(&u->mu);
  pthread_join(u->hasher, NULL);
  pthread_mutex_destroy(&u->mu);
  pthread_cond_destroy(&u->cv);
  u->threaded = false;
}

static bool host_little_endian(void) {
  const uint16_t one = 1;
  unsigned char b;
  memcpy(&b, &one, 1);
  return b == 1;
}

upload_stream *upload_stream_open(service *svc, size_t n, char *msg, size_t msglen) {
  if (!host_little_endian() || n == 0)
    return NULL;
  upload_stream *u = calloc(1, sizeof *u);
  if (u == NULL) {
    histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for the upload");
    return NULL;
  }
  u->svc = svc;
  u->n = n;
  u->fd = -1;
  u->stage_cap = n < STAGE_POINTS ? n : STAGE_POINTS;
  bool two = n >= HASH_THREAD_MIN_POINTS;
  u->sets = malloc((two ? 6 : 3) * u->stage_cap * sizeof(double));
  u->hash = dataset_hasher_new();
  if (u->sets == NULL || u->hash == NULL) {
    histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for the upload");
    dataset_hasher_free(u->hash);
    free(u->sets);
    free(u);
    return NULL;
  }
  point_stage(u, 0);
  for (int a = 0; a < 3; a++) {
    u->min[a] = INFINITY;
    u->max[a] = -INFINITY;
  }
  if (store_temp_payload(svc->store, u->tmp, sizeof u->tmp, &u->fd, msg, msglen) != 0) {
    dataset_hasher_free(u->hash);
    free(u->sets);
    free(u);
    return NULL;
  }
  if (two) {
    pthread_mutex_init(&u->mu, NULL);
    pthread_cond_init(&u->cv, NULL);
    u->threaded = pthread_create(&u->hasher, NULL, hasher_main, u) == 0;
    if (!u->threaded) { /* hash here, one set */
      pthread_mutex_destroy(&u->mu);
      pthread_cond_destroy(&u->cv);
    }
  }
  return u;
}

static void fail(upload_stream *u, unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void fail(upload_stream *u, unsigned status, const char *fmt, ...) {
  if (u->failed)
    return;
  u->failed = true;
  u->fail_status = status;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(u->error, sizeof u->error, fmt, ap);
  va_end(ap);
}

/* Allocates the blocks of points [reserved, upto) of each axis, and more
 * ahead; false (and the upload failed) when the disk has no room. A file
 * system without fallocate just grows the file. */
static bool reserve(upload_stream *u, size_t upto) {
  if (upto <= u->reserved)
    return true;
  size_t want = 2 * upto > upto + u->stage_cap ? 2 * upto : upto + u->stage_cap;
  if (want > u->n)
    want = u->n;
  for (size_t a = 0; a < 3; a++) {
    off_t at = (off_t)((a * u->n + u->reserved) * sizeof(double));
    off_t len = (off_t)((want - u->reserved) * sizeof(double));
    if (fallocate(u->fd, 0, at, len) != 0 && errno != EOPNOTSUPP && errno != ENOSYS) {
      fail(u, 500, "no room on the disk for the payload after %zu points: %s", u->reserved,
           strerror(errno));
      return false;
    }
  }
  u->reserved = want;
  return true;
}

static void flush(upload_stream *u) {
  if (u->staged == 0 || u->failed || !reserve(u, u->stage_first + u->staged)) {
    u->stage_first += u->staged;
    u->staged = 0;
    return;
  }
  for (int a = 0; a < 3; a++) {
    const char *p = (const char *)u->stage[a];
    size_t left = u->staged * sizeof(double);
    off_t off = (off_t)(((size_t)a * u->n + u->stage_first) * sizeof(double));
    while (left > 0) {
      ssize_t w = pwrite(u->fd, p, left, off);
      if (w < 0 && errno == EINTR)
        continue;
      if (w <= 0) {
        fail(u, 500, "the payload could not be written after %zu points: %s", u->stage_first,
             strerror(errno));
        return;
      }
      p += w;
      off += w;
      left -= (size_t)w;
    }
    if (!u->threaded)
      dataset_hasher_update(u->hash, a, u->stage[a], u->staged * sizeof(double));
  }
  if (u->threaded) { /* hand this set over, take the other once it is hashed */
    pthread_mutex_lock(&u->mu);
    u->ready[u->cur] = u->staged;
    pthread_cond_broadcast(&u->cv);
    u->cur = 1 - u->cur;
    while (u->ready[u->cur] != 0)
      pthread_cond_wait(&u->cv, &u->mu);
    pthread_mutex_unlock(&u->mu);
    point_stage(u, u->cur);
  }
  u->unsynced += u->staged * 24;
  if (u->unsynced >= SYNC_EVERY) {
    sync_file_range(u->fd, 0, 0, SYNC_FILE_RANGE_WRITE); /* start the writeback */
    u->unsynced = 0;
  }
  u->stage_first += u->staged;
  u->staged = 0;
}

/* Regroups `count` whole points at p into the staging, checking and
 * bounding them on the way; flushes whenever the staging fills. */
static void add_points(upload_stream *u, const unsigned char *p, size_t count) {
  if (count > u->n - u->done) {
    fail(u, 400, "the body holds more than the %zu points its length announced", u->n);
    count = u->n - u->done;
  }
  while (count > 0 && !u->failed) {
    size_t room = u->stage_cap - u->staged;
    size_t k = count < room ? count : room;
    double *sx = u->stage[0] + u->staged, *sy = u->stage[1] + u->staged,
           *sz = u->stage[2] + u->staged;
    double lo[3] = {u->min[0], u->min[1], u->min[2]};
    double hi[3] = {u->max[0], u->max[1], u->max[2]};
    int finite = 1;
    for (size_t i = 0; i < k; i++) {
      double v[3];
      memcpy(v, p + 24 * i, sizeof v);
      sx[i] = v[0];
      sy[i] = v[1];
      sz[i] = v[2];
      for (int a = 0; a < 3; a++) {
        finite &= isfinite(v[a]) != 0;
        lo[a] = v[a] < lo[a] ? v[a] : lo[a];
        hi[a] = v[a] > hi[a] ? v[a] : hi[a];
      }
    }
    if (!finite) { /* name the first culprit */
      for (size_t i = 0; i < k; i++)
        for (int a = 0; a < 3; a++) {
          double v;
          memcpy(&v, p + 24 * i + 8 * (size_t)a, sizeof v);
          if (!isfinite(v)) {
            fail(u, 400, "point %zu: %c is not a finite number", u->done + i + 1, "xyz"[a]);
            i = k;
            break;
          }
        }
      break;
    }
    memcpy(u->min, lo, sizeof lo);
    memcpy(u->max, hi, sizeof hi);
    u->done += k;
    u->staged += k;
    p += 24 * k;
    count -= k;
    if (u->staged == u->stage_cap)
      flush(u);
  }
  u->done += count; /* after a failure: counted, not kept */
}

void upload_stream_write(upload_stream *u, const char *data, size_t len) {
  const unsigned char *p = (const unsigned char *)data;
  if (u->carry_len > 0) {
    size_t take = 24 - u->carry_len < len ? 24 - u->carry_len : len;
    memcpy(u->carry + u->carry_len, p, take);
    u->carry_len += take;
    p += take;
    len -= take;
    if (u->carry_len < 24)
      return;
    add_points(u, u->carry, 1);
    u->carry_len = 0;
  }
  add_points(u, p, len / 24);
  p += len / 24 * 24;
  len %= 24;
  memcpy(u->carry, p, len);
  u->carry_len = len;
}

static void drop(upload_stream *u) {
  if (u->fd >= 0)
    close(u->fd);
  u->fd = -1;
  unlink(u->tmp);
  hasher_stop(u);
  dataset_hasher_free(u->hash);
  free(u->sets);
  free(u);
}

void upload_stream_abort(upload_stream *u) {
  if (u != NULL)
    drop(u);
}

unsigned upload_stream_finish(upload_stream *u, const char *name, double expires_at,
                              bool growing, dataset_meta *meta, bool *created, char *msg,
                              size_t msglen) {
  flush(u);
  if (!u->failed && (u->done != u->n || u->carry_len != 0))
    fail(u, 400, "the body ended after %zu of %zu announced points", u->done, u->n);
  if (u->failed) {
    snprintf(msg, msglen, "%s", u->error);
    unsigned status = u->fail_status;
    drop(u);
    return status;
  }
  int rc = close(u->fd);
  u->fd = -1;
  if (rc != 0) {
    snprintf(msg, msglen, "the payload could not be written: %s", strerror(errno));
    drop(u);
    return 500;
  }
  hasher_stop(u); /* every set hashed */
  char id[65];
  dataset_hasher_final_hex(u->hash, id);
  u->hash = NULL;
  rc = store_put_streamed(u->svc->store, u->tmp, id, u->n, u->min, u->max, "f64", name,
                          expires_at, growing, meta, created, msg, msglen);
  /* store_put_streamed has renamed or removed the temp file */
  free(u->sets);
  free(u);
  return rc == 0 ? 0 : 500;
}
