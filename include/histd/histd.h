/*
 * histd.h -- the one public header of the histd engine.
 *
 * The engine computes the spatial distance histogram (SDH) of a 3-D point
 * set: the counts of all N(N-1)/2 pairwise distances in equal-width buckets.
 * It knows nothing of HTTP or JSON; the service (src/service) and the CLI
 * (src/cli) drive it through this header and nothing else.
 *
 * Conventions, after libuv:
 *   - public names start with histd_, private ones with histd__;
 *   - every call that can fail returns 0 or a negative HISTD_E* code, fills
 *     its out-parameters only on success, and writes one human sentence into
 *     the caller's message buffer (msg, msglen) when it fails;
 *   - no global mutable state: everything lives in the objects below.
 *
 * The exactness contract (shared/DESIGN.md) is the definition of a pair's
 * bucket, in IEEE-754 binary64, round-to-nearest, no fused multiply-add:
 *
 *     dx = xi - xj;  dy = yi - yj;  dz = zi - zj
 *     s  = (dx*dx + dy*dy) + dz*dz
 *     d  = sqrt(s)
 *     b  = floor(d / w)          -> counts[b] if b < buckets, else overflow
 *
 * histd_pair_bucket() below is that definition, literally; every kernel in
 * precision "exact" must agree with it on every pair.
 */
#ifndef HISTD_HISTD_H
#define HISTD_HISTD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HISTD_VERSION "0.1.0"

/* ---- errors ------------------------------------------------------------ */

enum {
  HISTD_OK = 0,
  HISTD_EINVAL = -22,     /* a bad argument: the message says which       */
  HISTD_ENOMEM = -12,     /* host memory exhausted                          */
  HISTD_EIO = -5,         /* a file could not be read or written           */
  HISTD_ENOENT = -2,      /* no such kernel, file or device                */
  HISTD_ENODEV = -19,     /* the kernel needs a GPU and none is usable     */
  HISTD_ECANCELED = -125, /* the caller's cancel flag stopped the run      */
  HISTD_EPARSE = -1001,   /* malformed input data                          */
  HISTD_EDEVICE = -1002,  /* a CUDA call failed: the message has CUDA's text */
  HISTD_ETOOBIG = -1003,  /* the job does not fit the device or a limit    */
  HISTD_EGPULOST = -1004  /* a CUDA error that ruins the GPU's context for
                           * this process (illegal address, hardware fault):
                           * only a new process can use that GPU again      */
};

/* A short name for an error code ("EINVAL", ...); never NULL. */
const char *histd_strerror(int err);

/* Writes printf-style text into msg (if msg and msglen) and returns err. */
int histd_fail(char *msg, size_t msglen, int err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* ---- limits ------------------------------------------------------------ */

#define HISTD_MAX_BUCKETS (1u << 24)     /* 16 Mi buckets: 128 MiB of counts */
#define HISTD_MIN_BLOCK_SIZE 32u
#define HISTD_MAX_BLOCK_SIZE 1024u
#define HISTD_NAME_MAX 32                /* kernel names, with the NUL      */
#define HISTD_DEVICE_NAME_MAX 128

/* ---- datasets ---------------------------------------------------------- */

/*
 * N points in float64, structure of arrays. x, y and z point into one block
 * of 3*n doubles (x first), owned by the dataset unless `borrowed` is set,
 * in which case someone else (a file mapping, say) keeps it alive and
 * histd_dataset_free() leaves it alone.
 */
typedef struct histd_dataset {
  size_t n;
  double *x, *y, *z;
  double min[3], max[3]; /* bounding box; all zero when n == 0 */
  bool borrowed;
} histd_dataset;

/* Allocates room for n points (coordinates uninitialised, bounds zeroed). */
int histd_dataset_alloc(histd_dataset *ds, size_t n, char *msg, size_t msglen);

/* Wraps 3*n doubles laid out x[0..n), y[0..n), z[0..n) without copying. */
void histd_dataset_borrow(histd_dataset *ds, double *xyz, size_t n);

/* Releases what alloc made; safe on a zeroed or already-freed dataset. */
void histd_dataset_free(histd_dataset *ds);

/*
 * Checks every coordinate is finite and computes the bounds. Call it once
 * the coordinates are filled in; HISTD_EINVAL names the first bad point.
 */
int histd_dataset_finish(histd_dataset *ds, char *msg, size_t msglen);

/* The bounding box's diagonal, computed with the contract's arithmetic, so
 * that no pair's distance (computed the same way) exceeds it. */
double histd_dataset_diagonal(const histd_dataset *ds);

/* ---- the histogram spec ------------------------------------------------ */

typedef enum histd_precision {
  HISTD_PRECISION_EXACT = 0, /* identical to the contract, on every input */
  HISTD_PRECISION_FAST = 1   /* may differ for pairs near a bucket edge   */
} histd_precision;

typedef struct histd_spec {
  double bucket_width;       /* > 0 and finite                              */
  uint32_t buckets;          /* 1..HISTD_MAX_BUCKETS; 0 = cover the diagonal */
  histd_precision precision; /* default exact                               */
  char kernel[HISTD_NAME_MAX]; /* a registered name; "" means "auto"       */
  uint32_t block_size;       /* GPU threads per block, 32..1024; 0 = kernel's choice */
  uint32_t threads;          /* CPU threads; 0 = every core                */
  uint64_t devices;          /* GPU bit mask; 0 = every GPU                 */
} histd_spec;

/* Defaults: width 0 (must be set), buckets 0, exact, kernel "auto". */
void histd_spec_init(histd_spec *spec);

/* Every bad value gets a sentence, e.g. "bucket_width must be > 0". */
int histd_spec_validate(const histd_spec *spec, char *msg, size_t msglen);

/* floor(diagonal / width) + 1: the bucket count that covers every pair. */
int histd_default_buckets(const histd_dataset *ds, double width,
                          uint32_t *buckets, char *msg, size_t msglen);

/* "exact" / "fast" <-> enum; parse returns HISTD_EINVAL on anything else. */
const char *histd_precision_name(histd_precision p);
int histd_precision_parse(const char *s, histd_precision *out);

/* The contract, literally: the bucket of one pair (may be >= buckets). */
uint64_t histd_pair_bucket(double xi, double yi, double zi, double xj,
                           double yj, double zj, double width);

/* ---- results ----------------------------------------------------------- */

typedef struct histd_timing {
  double queue_ms;    /* waiting for a worker (service only)     */
  double parse_ms;    /* reading the points (service, CLI)       */
  double transfer_ms; /* host <-> device copies                  */
  double kernel_ms;   /* the computation                          */
  double total_ms;    /* wall time of the whole run               */
} histd_timing;

typedef struct histd_result {
  uint32_t buckets;
  double bucket_width;
  uint64_t *counts;  /* buckets entries                          */
  uint64_t overflow; /* pairs with bucket >= buckets              */
  uint64_t total;    /* n(n-1)/2 = sum(counts) + overflow         */
  histd_precision precision;
  bool exact;              /* counts follow the contract            */
  uint64_t refined_pairs;  /* pairs redone in float64 (diagnostics)  */
  char kernel[HISTD_NAME_MAX]; /* the kernel that ran ("auto" resolved) */
  uint32_t block_size;     /* GPU block size that ran; 0 on the CPU  */
  uint32_t threads;        /* CPU threads that ran; 0 on the GPU     */
  char device[HISTD_DEVICE_NAME_MAX]; /* "cpu: 2 threads", "NVIDIA H100 ..." */
  histd_timing timing;
} histd_result;

/* Allocates zeroed counts for `buckets` buckets. */
int histd_result_init(histd_result *res, uint32_t buckets, double width,
                      char *msg, size_t msglen);
void histd_result_free(histd_result *res);

/* ---- progress and cancellation ----------------------------------------- */

/*
 * Backends call progress() and cancelled() between chunks of work, from any
 * of their threads (so both must be thread-safe), at least a few times a
 * second. A run whose cancelled() returns true stops and returns
 * HISTD_ECANCELED. Either pointer may be NULL; so may the whole control.
 */
typedef struct histd_control {
  void (*progress)(void *user, double fraction); /* 0..1, non-decreasing */
  bool (*cancelled)(void *user);
  void *user;
} histd_control;

/* ---- kernels and the registry ------------------------------------------ */

typedef enum histd_engine { HISTD_ENGINE_CPU = 0, HISTD_ENGINE_CUDA = 1 } histd_engine;

typedef struct histd_worker histd_worker;

/*
 * One entry of the registry. run() computes into `res`, already initialised
 * with the spec's bucket count (buckets resolved, never 0); it fills counts,
 * overflow, exact, refined_pairs, block_size/threads, device and
 * timing.transfer_ms/kernel_ms. The caller fills the rest.
 * `worker` is the calling worker's context (see histd_worker_*), never NULL.
 */
typedef struct histd_kernel {
  const char *name;
  const char *summary; /* one line for --list-kernels and /v1/kernels */
  histd_engine engine;
  int (*run)(histd_worker *worker, const histd_dataset *ds,
             const histd_spec *spec, const histd_control *ctl,
             histd_result *res, char *msg, size_t msglen);
} histd_kernel;

/* The registry: the one table of kernels, in a fixed order. */
size_t histd_kernel_count(void);
const histd_kernel *histd_kernel_at(size_t i);
const histd_kernel *histd_kernel_find(const char *name); /* NULL if unknown */

/* ---- devices ----------------------------------------------------------- */

typedef struct histd_device_info {
  int index;
  char name[HISTD_DEVICE_NAME_MAX];
  int cc_major, cc_minor;
  int multiprocessors;
  size_t memory_total, memory_free; /* bytes */
} histd_device_info;

/*
 * Lists usable GPUs into out[0..max). *count gets how many there are. With
 * no GPU (no CUDA build, no driver, a driver too old, no device) it returns
 * 0 with *count = 0 and a sentence in msg saying why.
 */
int histd_devices(histd_device_info *out, int max, int *count, char *msg,
                  size_t msglen);

/* ---- workers ----------------------------------------------------------- */

/*
 * A worker is the context one thread runs jobs in: the CPU engine, or one
 * GPU with its streams and device buffers. Workers keep what they can
 * between jobs (a GPU worker keeps the last dataset's points on the device,
 * and histd_worker_prefetch() starts copying the next job's points while the
 * current one computes). A worker is used by one thread at a time.
 *
 * device: -1 for the CPU engine, else a GPU index from histd_devices().
 */
int histd_worker_create(histd_worker **out, int device, char *msg,
                        size_t msglen);
void histd_worker_destroy(histd_worker *w);
int histd_worker_device(const histd_worker *w); /* -1 for the CPU */

/* A hint: the next run will be on ds. The dataset must stay alive until that
 * run (or the worker) ends. A no-op on the CPU. */
int histd_worker_prefetch(histd_worker *w, const histd_dataset *ds,
                          char *msg, size_t msglen);

/*
 * Validates the spec, resolves the default bucket count and "auto", runs the
 * kernel and fills `res` (which it initialises; free it with
 * histd_result_free on success). On failure res is left empty.
 */
int histd_worker_run(histd_worker *w, const histd_dataset *ds,
                     const histd_spec *spec, const histd_control *ctl,
                     histd_result *res, char *msg, size_t msglen);

/* One-shot convenience: a CPU-or-GPU worker made, used and destroyed. */
int histd_run(const histd_dataset *ds, const histd_spec *spec,
              const histd_control *ctl, histd_result *res, char *msg,
              size_t msglen);

/* Milliseconds from a monotonic clock. */
double histd_now_ms(void);

/* The cores this process may run on: its CPU affinity (taskset, a
 * container's cpuset), else the online count; at least 1. */
unsigned histd_cpu_count(void);

#ifdef __cplusplus
}
#endif
#endif /* HISTD_HISTD_H */
