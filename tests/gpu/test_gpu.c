/*
 * test_gpu.c -- every GPU kernel against the contract.
 *
 * The reference is gpu_reference.cu (the contract in binary64 on the GPU,
 * written independently of kernels/), itself checked first against
 * tests/definition.h (the CPU brute force) on small sets. Then:
 *   - every kernel x block sizes {32, 64, 256, 1024} x buckets {1, 80,
 *     3984, 70000} x N {0, 1, 2, 33, 1000, 100003}: exact counts identical,
 *     fast counts with the right total and close;
 *   - point sets that stress float32 (far from the origin, coincident
 *     points, integer lattices with distances on bucket edges, clusters);
 *   - auto, prefetch, progress and cancel, errors, and a job split over
 *     several GPUs (or over one GPU as if several) against one GPU;
 *   - tensor-core (blocks of 256 only) where its own paths run: auto's
 *     envelope, rows of sub-rows (k = 16..19), lattices whose distances
 *     fall on edges in both of its queues, a far outlier (wide tile
 *     pairs), progress and cancel, the jobs its plan declines, a job in
 *     parts over several GPUs (or over one as if several).
 * Exits 77 ("skipped: no CUDA device: <why>") without a usable GPU.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "../definition.h"
#include "../pointsets.h"
#include "histd/histd.h"

#include <cuda_runtime_api.h>

#include "gpu_engine.h"
#include "../plain.h"

int gpu_reference_histogram(const double *x, const double *y, const double *z, uint32_t n,
                            double w, uint32_t nb, uint64_t *counts);
const char *gpu_reference_error(int e);

static const char *const gpu_kernels[] = {
    "naive",    "privatized", "tiled",           "tiled-privatized", "tiled-privatized-f64",
    "balanced", "multi-copy", "register-shuffle", "circular", "tensor-core"};
#define NK (sizeof gpu_kernels / sizeof gpu_kernels[0])

static histd_worker *W;
static int runs = 0;

/* tensor-core runs blocks of 256 threads only */
static int is_tc(const char *k) { return strcmp(k, "tensor-core") == 0; }

/* reference counts: nb entries + overflow */
static uint64_t *reference(const histd_dataset *ds, double w, uint32_t nb) {
  uint64_t *ref = calloc((size_t)nb + 1, sizeof *ref);
  int e = gpu_reference_histogram(ds->x, ds->y, ds->z, (uint32_t)ds->n, w, nb, ref);
  CHECK(e == 0, "GPU reference failed: %s", gpu_reference_error(e));
  return ref;
}

static int run(histd_worker *w, const histd_dataset *ds, const char *k, uint32_t block, double width,
               uint32_t nb, histd_precision prec, const histd_control *ctl, histd_result *res,
               char *msg, size_t msglen) {
  plain_job spec;
  plain_init(&spec);
  spec.bucket_width = width;
  spec.buckets = nb;
  spec.precision = prec;
  spec.block_size = block;
  snprintf(spec.kernel, sizeof spec.kernel, "%s", k);
  runs++;
  return plain_worker_run(w, ds, &spec, ctl, res, msg, msglen);
}

/* Runs kernel k and compares with ref; returns 1 if identical. */
static int compare(const histd_dataset *ds, const char *k, uint32_t block, double width,
                   uint32_t nb, histd_precision prec, const uint64_t *ref, const char *what) {
  histd_result res;
  char msg[512] = "";
  int rc = run(W, ds, k, block, width, nb, prec, NULL, &res, msg, sizeof msg);
  CHECK(rc == 0, "%s block %u on %s: %s", k, block, what, msg);
  if (rc != 0)
    return 0;
  uint64_t n = ds->n, total = n < 2 ? 0 : n * (n - 1) / 2, sum = res.overflow;
  for (uint32_t b = 0; b < nb; b++)
    sum += res.counts[b];
  CHECK_EQ_U64(sum, total, "sum(counts) + overflow = n(n-1)/2");
  CHECK(res.block_size == block || block == 0, "%s: ran block %u, asked %u", k, res.block_size,
        block);
  CHECK(strstr(res.device, "GPU") != NULL, "%s: device \"%s\"", k, res.device);
  int ok = 1;
  if (prec == HISTD_PRECISION_EXACT) {
    CHECK(res.exact, "%s claims inexact counts in exact mode", k);
    int bad = 0;
    for (uint32_t b = 0; b <= nb && bad < 3; b++) {
      uint64_t got = b < nb ? res.counts[b] : res.overflow;
      if (got != ref[b]) {
        bad++;
        ok = 0;
        CHECK(0, "%s block %u exact on %s (n=%zu w=%g nb=%u): %s %u: got %" PRIu64
                 ", want %" PRIu64,
              k, block, what, ds->n, width, nb, b < nb ? "bucket" : "overflow", b, got, ref[b]);
      }
    }
  } else {
    uint64_t diff = 0;
    for (uint32_t b = 0; b <= nb; b++) {
      uint64_t got = b < nb ? res.counts[b] : res.overflow;
      diff += got > ref[b] ? got - ref[b] : ref[b] - got;
    }
    /* float32 moves pairs within ~8u*diagonal/w buckets of an edge */
    double tol = (double)total * (2e-3 + 1e-5 * nb) + 2;
    CHECK((double)diff <= tol, "%s fast on %s: counts differ by %" PRIu64 " of %" PRIu64, k,
          what, diff, total);
  }
  histd_result_free(&res);
  return ok;
}

static histd_dataset make_set(size_t n, shape_kind shape, double side, uint64_t seed) {
  histd_dataset ds;
  histd_dataset_alloc(&ds, n, NULL, 0);
  pointset_fill(&ds, shape, side, seed);
  return ds;
}

/* The reference itself, against the CPU brute force. */
static void test_reference(void) {
  for (int shape = 0; shape < SHAPE_COUNT; shape++) {
    histd_dataset ds = make_set(1500, (shape_kind)shape, shape == SHAPE_LATTICE ? 9 : 23000, 3);
    double w = shape == SHAPE_LATTICE ? 1.0 : 97.0;
    uint32_t nb = 300;
    def_hist d = definition_histogram(ds.x, ds.y, ds.z, ds.n, w, nb);
    uint64_t *ref = reference(&ds, w, nb);
    int bad = 0;
    for (uint32_t b = 0; b < nb; b++)
      bad += ref[b] != d.counts[b];
    bad += ref[nb] != d.overflow;
    CHECK(bad == 0, "GPU reference differs from the definition on %s (%d buckets)",
          shape_names[shape], bad);
    free(d.counts);
    free(ref);
    histd_dataset_free(&ds);
  }
}

static void test_matrix(void) {
  static const size_t sizes[] = {0, 1, 2, 33, 1000, 100003};
  static const uint32_t nbs[] = {1, 80, 3984, 70000};
  static const double widths[] = {500, 500, 10, 0.569};
  static const uint32_t blocks[] = {32, 64, 256, 1024};
  for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
    histd_dataset ds = make_set(sizes[si], SHAPE_UNIFORM, 23000, 11 + si);
    for (size_t bi = 0; bi < 4; bi++) {
      uint64_t *ref = reference(&ds, widths[bi], nbs[bi]);
      char what[64];
      snprintf(what, sizeof what, "uniform n=%zu nb=%u", ds.n, nbs[bi]);
      int fails = 0;
      for (size_t k = 0; k < NK; k++)
        for (size_t b = 0; b < 4; b++) {
          if (is_tc(gpu_kernels[k]) && blocks[b] != 256)
            continue;
          fails += !compare(&ds, gpu_kernels[k], blocks[b], widths[bi], nbs[bi],
                            HISTD_PRECISION_EXACT, ref, what);
          if (ds.n < 100003 || b == 2)
            compare(&ds, gpu_kernels[k], blocks[b], widths[bi], nbs[bi], HISTD_PRECISION_FAST,
                    ref, what);
        }
      printf("  %-32s %s\n", what, fails ? "FAILED" : "ok (all kernels, block sizes, precisions)");
      fflush(stdout);
      free(ref);
    }
    histd_dataset_free(&ds);
  }
}

static void test_float32_stress(void) {
  struct {
    shape_kind shape;
    double side, w;
    uint32_t nb;
  } cases[] = {
      {SHAPE_FAR, 23000, 500, 80},      {SHAPE_FAR, 50, 0.01, 9000},
      {SHAPE_DUPLICATES, 23000, 500, 80}, {SHAPE_DUPLICATES, 100, 1, 200},
      {SHAPE_LATTICE, 9, 1, 16},        {SHAPE_LATTICE, 9, 0.5, 32},
      {SHAPE_LATTICE, 9, 3, 6},         {SHAPE_CLUSTERED, 23000, 10, 3984},
      {SHAPE_CLUSTERED, 23000, 1e-3, 100}, {SHAPE_UNIFORM, 23000, 1e-4, 70000},
      {SHAPE_UNIFORM, 1e-3, 1e-7, 40000},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    histd_dataset ds = make_set(20011, cases[c].shape, cases[c].side, 100 + c);
    uint64_t *ref = reference(&ds, cases[c].w, cases[c].nb);
    char what[96];
    snprintf(what, sizeof what, "%s side=%g w=%g nb=%u", shape_names[cases[c].shape],
             cases[c].side, cases[c].w, cases[c].nb);
    int fails = 0;
    for (size_t k = 0; k < NK; k++) {
      fails += !compare(&ds, gpu_kernels[k], 256, cases[c].w, cases[c].nb, HISTD_PRECISION_EXACT,
                        ref, what);
      if (!is_tc(gpu_kernels[k]))
        fails += !compare(&ds, gpu_kernels[k], 64, cases[c].w, cases[c].nb, HISTD_PRECISION_EXACT,
                        ref, what);
    }
    fails += !compare(&ds, "auto", 0, cases[c].w, cases[c].nb, HISTD_PRECISION_EXACT, ref, what);
    printf("  %-44s %s\n", what, fails ? "FAILED" : "ok");
    fflush(stdout);
    free(ref);
    histd_dataset_free(&ds);
  }
}

static void test_auto_and_prefetch(void) {
  histd_dataset a = make_set(50000, SHAPE_UNIFORM, 23000, 7);
  histd_dataset b = make_set(40000, SHAPE_CLUSTERED, 23000, 8);
  uint64_t *ra = reference(&a, 500, 80), *rb = reference(&b, 10, 3984);
  char msg[512];
  CHECK(histd_worker_prefetch(W, &b, msg, sizeof msg) == 0, "prefetch: %s", msg);
  histd_result res;
  int rc = run(W, &a, "auto", 0, 500, 80, HISTD_PRECISION_EXACT, NULL, &res, msg, sizeof msg);
  CHECK(rc == 0, "auto: %s", msg);
  if (rc == 0) {
    CHECK(strcmp(res.kernel, "auto") != 0 && res.block_size >= 32,
          "auto must name what ran, got \"%s\" block %u", res.kernel, res.block_size);
    int same = memcmp(res.counts, ra, 80 * sizeof *ra) == 0 && res.overflow == ra[80];
    CHECK(same, "auto on uniform differs from the reference");
    CHECK(res.timing.kernel_ms > 0, "kernel_ms %g", res.timing.kernel_ms);
    printf("  auto ran %s block %u on %s, %.3f ms kernel, %.3f ms transfer, %" PRIu64
           " pairs refined\n",
           res.kernel, res.block_size, res.device, res.timing.kernel_ms, res.timing.transfer_ms,
           res.refined_pairs);
    histd_result_free(&res);
  }
  /* b was prefetched: correct, and its copy is charged to this job */
  rc = run(W, &b, "auto", 0, 10, 3984, HISTD_PRECISION_EXACT, NULL, &res, msg, sizeof msg);
  CHECK(rc == 0, "auto after prefetch: %s", msg);
  if (rc == 0) {
    int same = memcmp(res.counts, rb, 3984 * sizeof *rb) == 0 && res.overflow == rb[3984];
    CHECK(same, "auto on the prefetched set differs from the reference");
    histd_result_free(&res);
  }
  /* a changed in place must not be served from the device's stale copy */
  a.x[17] += 1000;
  histd_dataset_finish(&a, NULL, 0);
  free(ra);
  ra = reference(&a, 500, 80);
  rc = run(W, &a, "balanced", 128, 500, 80, HISTD_PRECISION_EXACT, NULL, &res, msg, sizeof msg);
  if (rc == 0) {
    int same = memcmp(res.counts, ra, 80 * sizeof *ra) == 0 && res.overflow == ra[80];
    CHECK(same, "a dataset changed in place was served from a stale device copy");
    histd_result_free(&res);
  }
  free(ra);
  free(rb);
  histd_dataset_free(&a);
  histd_dataset_free(&b);
  printf("  auto, prefetch, cached points: done\n");
}

/* The service's pattern: before it runs job k it prefetches job k+1's
 * points. Job k's points (prefetched before job k-1 ran) must still be on
 * the device when job k runs, and the counts must be right. */
static void test_prefetch_pattern(void) {
  enum { JOBS = 5 };
  histd_dataset d[JOBS];
  uint64_t *ref[JOBS];
  for (int k = 0; k < JOBS; k++) {
    d[k] = make_set(20000 + (size_t)k, SHAPE_UNIFORM, 23000, 60 + (uint64_t)k);
    ref[k] = reference(&d[k], 500, 80);
  }
  char msg[512];
  int kept = 0;
  for (int k = 0; k < JOBS; k++) {
    if (k + 1 < JOBS)
      CHECK(histd_worker_prefetch(W, &d[k + 1], msg, sizeof msg) == 0, "prefetch: %s", msg);
    if (k > 0) {
      int held = histd__cuda_holds(W, &d[k]);
      kept += held;
      CHECK(held, "job %d: prefetching job %d's points evicted its own", k, k + 1);
    }
    char what[64];
    snprintf(what, sizeof what, "prefetch pattern, job %d", k);
    compare(&d[k], k % 2 ? "balanced" : "tiled-privatized", 256, 500, 80,
            HISTD_PRECISION_EXACT, ref[k], what);
    if (k + 1 < JOBS)
      CHECK(histd__cuda_holds(W, &d[k + 1]), "job %d evicted the next job's points", k);
  }
  for (int k = 0; k < JOBS; k++) {
    free(ref[k]);
    histd_dataset_free(&d[k]);
  }
  printf("  prefetch pattern: %d of %d jobs found their points on the device\n", kept,
         JOBS - 1);
}

typedef struct {
  int calls;
  double last;
  int monotonic;
  int cancel_after;
  double cancel_at;
} watch;

static void on_progress(void *u, double f) {
  watch *w = u;
  if (f < w->last || f < 0 || f > 1)
    w->monotonic = 0;
  w->last = f;
  w->calls++;
}
static bool on_cancel(void *u) {
  watch *w = u;
  if (w->cancel_after >= 0 && w->calls >= w->cancel_after) {
    if (w->cancel_at == 0)
      w->cancel_at = histd_now_ms();
    return true;
  }
  return false;
}

static void test_progress_cancel_errors(void) {
  histd_dataset ds = make_set(200000, SHAPE_UNIFORM, 23000, 21);
  char msg[512];
  histd_result res;
  watch wt = {0, 0, 1, -1, 0};
  histd_control ctl = {on_progress, on_cancel, &wt, NULL};
  int rc = run(W, &ds, "tiled-privatized-f64", 256, 500, 80, HISTD_PRECISION_EXACT, &ctl, &res,
               msg, sizeof msg);
  CHECK(rc == 0, "progress run: %s", msg);
  CHECK(wt.calls >= 3, "progress called %d times for 2e10 pairs", wt.calls);
  CHECK(wt.monotonic && wt.last == 1.0, "progress must rise to 1 (last %g)", wt.last);
  if (rc == 0)
    histd_result_free(&res);
  printf("  progress: %d calls\n", wt.calls);

  /* cancel: the naive kernel on 2e10 pairs takes seconds; stop after one chunk */
  wt = (watch){0, 0, 1, 1, 0};
  double t0 = histd_now_ms();
  rc = run(W, &ds, "naive", 256, 500, 80, HISTD_PRECISION_EXACT, &ctl, &res, msg, sizeof msg);
  double t1 = histd_now_ms();
  CHECK(rc == HISTD_ECANCELED, "a cancelled run returns ECANCELED, got %d (%s)", rc, msg);
  if (rc == 0)
    histd_result_free(&res);
  CHECK(wt.cancel_at > 0 && t1 - wt.cancel_at < 1000, "cancel took %.0f ms (limit 1000)",
        t1 - wt.cancel_at);
  printf("  cancel: stopped %.0f ms after the request (run %.0f ms)\n", t1 - wt.cancel_at,
         t1 - t0);

  /* errors: a bad block size; a job too large for the (pretended) memory */
  rc = run(W, &ds, "balanced", 48, 500, 80, HISTD_PRECISION_EXACT, NULL, &res, msg, sizeof msg);
  CHECK(rc == HISTD_EINVAL, "block 48 must be EINVAL, got %d", rc);
  CHECK_STR_CONTAINS(msg, "block_size");
  histd_worker *w2;
  rc = histd_worker_create(&w2, histd_worker_device(W), msg, sizeof msg);
  CHECK(rc == 0, "second worker: %s", msg);
  if (rc == 0) {
    setenv("HISTD_GPU_MEM_LIMIT_MB", "1", 1);
    rc = run(w2, &ds, "balanced", 256, 500, 80, HISTD_PRECISION_EXACT, NULL, &res, msg,
             sizeof msg);
    unsetenv("HISTD_GPU_MEM_LIMIT_MB");
    CHECK(rc == HISTD_ETOOBIG, "a job over the memory limit must be ETOOBIG, got %d", rc);
    CHECK_STR_CONTAINS(msg, "too large");
    printf("  too large: \"%s\"\n", msg);
    /* a second set of the same size needs room for its binary64 points
     * only: the float32 buffer is there (pretend 24n + 64 MiB fits, 40n
     * + 64 MiB does not) */
    histd_dataset ds2 = make_set(ds.n, SHAPE_UNIFORM, 23000, 22);
    rc = run(w2, &ds, "balanced", 256, 500, 80, HISTD_PRECISION_EXACT, NULL, &res, msg,
             sizeof msg);
    CHECK(rc == 0, "balanced on a second worker: %s", msg);
    if (rc == 0)
      histd_result_free(&res);
    char lim[32];
    snprintf(lim, sizeof lim, "%.0f", 64 + (double)ds.n * 32 / 1048576.0);
    setenv("HISTD_GPU_MEM_LIMIT_MB", lim, 1);
    rc = run(w2, &ds2, "balanced", 256, 500, 80, HISTD_PRECISION_EXACT, NULL, &res, msg,
             sizeof msg);
    unsetenv("HISTD_GPU_MEM_LIMIT_MB");
    CHECK(rc == 0, "a set that fits the pretended %s MiB next to the float32 buffer: %s", lim,
          msg);
    if (rc == 0)
      histd_result_free(&res);
    histd_dataset_free(&ds2);
    /* the worker still works afterwards */
    rc = run(w2, &ds, "balanced", 256, 500, 80, HISTD_PRECISION_EXACT, NULL, &res, msg,
             sizeof msg);
    CHECK(rc == 0, "the worker after a too-large job: %s", msg);
    if (rc == 0)
      histd_result_free(&res);
    histd_worker_destroy(w2);
  }
  histd_dataset_free(&ds);
}

/* m^3 integer lattice points (m = ceil(cbrt(n)), the first n of them) at
 * `off` from the origin: distances sqrt(integer), many on bucket edges */
static histd_dataset make_lattice(size_t n, double off) {
  histd_dataset ds;
  histd_dataset_alloc(&ds, n, NULL, 0);
  size_t m = (size_t)ceil(cbrt((double)n));
  for (size_t i = 0; i < n; i++) {
    ds.x[i] = off + (double)(i % m);
    ds.y[i] = -off + (double)(i / m % m);
    ds.z[i] = 7 + (double)(i / m / m);
  }
  histd_dataset_finish(&ds, NULL, 0);
  return ds;
}

/* Runs `kernel` (tensor-core or auto) exactly on ds against the reference;
 * the job must have run tensor-core. parts 0: on the worker's GPU alone;
 * else cut into parts over every GPU (parts of them; one GPU: that many
 * parts of it, as if it were several). */
static int gpu_count; /* the machine's GPUs */

static void tc_parts_case(const histd_dataset *ds, const char *kernel, double w, uint32_t nb,
                          int parts, const char *what) {
  uint64_t *ref = reference(ds, w, nb);
  histd_result res;
  char msg[512] = "";
  plain_job spec;
  plain_init(&spec);
  spec.bucket_width = w;
  spec.buckets = nb;
  spec.precision = HISTD_PRECISION_EXACT;
  spec.devices = parts == 0 ? UINT64_C(1) << histd_worker_device(W) : 0;
  snprintf(spec.kernel, sizeof spec.kernel, "%s", kernel);
  runs++;
  if (parts > 0) {
    setenv("HISTD_GPU_SPLIT_MIN_PAIRS", "0", 1);
    if (gpu_count < 2) {
      char k[16];
      snprintf(k, sizeof k, "%d", parts);
      setenv("HISTD_GPU_FAKE_SPLIT", k, 1);
    }
  }
  int rc = plain_worker_run(W, ds, &spec, NULL, &res, msg, sizeof msg);
  unsetenv("HISTD_GPU_SPLIT_MIN_PAIRS");
  unsetenv("HISTD_GPU_FAKE_SPLIT");
  CHECK(rc == 0, "%s on %s: %s", kernel, what, msg);
  if (rc == 0) {
    CHECK(strcmp(res.kernel, "tensor-core") == 0 && res.block_size == 256,
          "%s on %s ran %s/%u (%s), not tensor-core/256", kernel, what, res.kernel,
          res.block_size, res.reason);
    CHECK(parts == 0 || strstr(res.device, " + ") != NULL,
          "%s on %s ran on %s, not in parts", kernel, what, res.device);
    CHECK(res.exact, "tensor-core claims inexact counts in exact mode");
    int bad = 0;
    for (uint32_t b = 0; b <= nb; b++) {
      uint64_t got = b < nb ? res.counts[b] : res.overflow;
      if (got != ref[b] && bad++ < 3)
        CHECK(0, "%s on %s: %s %u: got %" PRIu64 ", want %" PRIu64, kernel, what,
              b < nb ? "bucket" : "overflow", b, got, ref[b]);
    }
    printf("  %-44s %s (%s, %.2f ms, %" PRIu64 " pairs refined%s%s)\n", what,
           bad ? "FAILED" : "ok", res.kernel, res.timing.kernel_ms, res.refined_pairs,
           parts > 0 ? ", on " : "", parts > 0 ? res.device : "");
    fflush(stdout);
    histd_result_free(&res);
  }
  free(ref);
}

static void tc_case(const histd_dataset *ds, const char *kernel, double w, uint32_t nb,
                    const char *what) {
  tc_parts_case(ds, kernel, w, nb, 0, what);
}

static void test_tensor_core(void) {
  printf("tensor-core\n");
  /* auto's envelope: 5e5 points and more, k >= 16 */
  histd_dataset u = make_set(600011, SHAPE_UNIFORM, 23000, 61);
  tc_case(&u, "auto", 500, 80, "auto: uniform n=600011 w=500 (k 16)");
  tc_parts_case(&u, "auto", 500, 80, 2, "auto: uniform n=600011 w=500, in parts");
  histd_dataset_free(&u);
  /* rows of 2^(k-16) sub-rows; the last tile partial */
  u = make_set(100003, SHAPE_UNIFORM, 23000, 62);
  tc_case(&u, "tensor-core", 1000, 41, "uniform n=100003 w=1000 (k 17)");
  tc_case(&u, "tensor-core", 2500, 17, "uniform n=100003 w=2500 (k 18)");
  tc_case(&u, "tensor-core", 200, 200, "uniform n=100003 w=200 (k 15)");
  /* fast: the right total, counts close */
  uint64_t *ref = reference(&u, 1000, 41);
  compare(&u, "tensor-core", 256, 1000, 41, HISTD_PRECISION_FAST, ref, "uniform n=100003 fast");
  free(ref);
  histd_dataset_free(&u);
  /* edges: every queue (adapt: the group queue until it overflows) */
  static const char *const queues[] = {"group", "pair", "adapt"};
  histd_dataset lat = make_lattice(64000, 1e5), rl = make_set(100003, SHAPE_LATTICE, 9, 63);
  for (int qi = 0; qi < 3; qi++) {
    setenv("HISTD_TC_QUEUE", queues[qi], 1);
    char what[96];
    snprintf(what, sizeof what, "lattice 40^3 at 1e5 w=1 (k 16), %s queue", queues[qi]);
    tc_case(&lat, "tensor-core", 1, 70, what);
    snprintf(what, sizeof what, "9^3 sites x 137 w=0.5 (k 18), %s queue", queues[qi]);
    tc_case(&rl, "tensor-core", 0.5, 30, what);
  }
  unsetenv("HISTD_TC_QUEUE");
  /* cut into parts over the GPUs (or one GPU, 3 parts): the edges' redo in
   * every part, the last part's tile pairs ending with the last tile */
  tc_parts_case(&lat, "tensor-core", 1, 70, 3, "lattice 40^3 at 1e5 w=1, in parts");
  tc_parts_case(&rl, "tensor-core", 0.5, 30, 2, "9^3 sites x 137 w=0.5, in parts");
  histd_dataset_free(&rl);
  /* clumps; a far outlier whose tile is wide against its neighbours */
  histd_dataset c = make_set(300007, SHAPE_CLUSTERED, 23000, 64);
  tc_case(&c, "tensor-core", 50, 300, "clumps n=300007 w=50");
  histd_dataset_free(&c);
  u = make_set(200000, SHAPE_UNIFORM, 23000, 65);
  u.x[777] = 60000;
  histd_dataset_finish(&u, NULL, 0);
  tc_case(&u, "tensor-core", 1000, 80, "uniform with an outlier at 6e4 w=1000");

  /* progress rises to 1; a cancel stops it between launches */
  char msg[512];
  histd_result res;
  watch wt = {0, 0, 1, -1, 0};
  histd_control ctl = {on_progress, on_cancel, &wt, NULL};
  setenv("HISTD_GPU_CHUNK_MS", "2", 1);
  int rc = run(W, &u, "tensor-core", 0, 1000, 80, HISTD_PRECISION_EXACT, &ctl, &res, msg,
               sizeof msg);
  CHECK(rc == 0, "tensor-core with progress: %s", msg);
  CHECK(wt.calls >= 3 && wt.monotonic && wt.last == 1.0,
        "progress: %d calls, last %g, monotonic %d", wt.calls, wt.last, wt.monotonic);
  if (rc == 0)
    histd_result_free(&res);
  wt = (watch){0, 0, 1, 1, 0};
  rc = run(W, &u, "tensor-core", 0, 1000, 80, HISTD_PRECISION_EXACT, &ctl, &res, msg, sizeof msg);
  unsetenv("HISTD_GPU_CHUNK_MS");
  CHECK(rc == HISTD_ECANCELED, "a cancelled tensor-core run returns ECANCELED, got %d (%s)", rc,
        msg);
  if (rc == 0)
    histd_result_free(&res);
  /* a block size it cannot take; the worker goes on */
  rc = run(W, &u, "tensor-core", 64, 1000, 80, HISTD_PRECISION_EXACT, NULL, &res, msg,
           sizeof msg);
  CHECK(rc == HISTD_EINVAL, "tensor-core with block 64 must be EINVAL, got %d", rc);
  CHECK_STR_CONTAINS(msg, "block_size");
  tc_case(&u, "tensor-core", 1000, 80, "the same set after the cancel and the error");
  histd_dataset_free(&u);
  /* jobs its plan declines run balanced, and say so: too many rows for
   * shared memory, distances past the float32 code */
  u = make_set(20011, SHAPE_UNIFORM, 23000, 66);
  const double ws[2] = {10, 0.569};
  const uint32_t nbs[2] = {3984, 70000};
  for (int i = 0; i < 2; i++) {
    ref = reference(&u, ws[i], nbs[i]);
    rc = run(W, &u, "tensor-core", 0, ws[i], nbs[i], HISTD_PRECISION_EXACT, NULL, &res, msg,
             sizeof msg);
    CHECK(rc == 0, "tensor-core declining w=%g: %s", ws[i], msg);
    if (rc == 0) {
      CHECK(strcmp(res.kernel, "balanced") == 0, "declined job ran %s", res.kernel);
      CHECK_STR_CONTAINS(res.reason, "tensor-core could not run");
      CHECK(memcmp(res.counts, ref, nbs[i] * sizeof *ref) == 0 && res.overflow == ref[nbs[i]],
            "the declined job's counts differ from the reference");
      printf("  declined w=%g: \"%s\"\n", ws[i], res.reason);
      histd_result_free(&res);
    }
    free(ref);
  }
  histd_dataset_free(&u);
  histd_dataset_free(&lat);
}

/* A failed CUDA call leaves its (non-sticky) error as the thread's last
 * error; the next job on that thread must not report it as its own. */
static void test_stale_error(void) {
  histd_dataset ds = make_set(1000, SHAPE_UNIFORM, 23000, 41);
  uint64_t *ref = reference(&ds, 500, 80);
  const char *ks[] = {"tiled-privatized", "tiled-privatized-f64"};
  for (int i = 0; i < 2; i++) {
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, (size_t)1 << 60); /* fails: out of memory */
    CHECK(e != cudaSuccess, "a 2^60-byte cudaMalloc succeeded");
    if (e == cudaSuccess)
      cudaFree(p);
    int ok = compare(&ds, ks[i], 256, 500, 80, HISTD_PRECISION_EXACT, ref,
                     "uniform n=1000 after a failed CUDA call");
    CHECK(ok, "%s: a stale CUDA error from an earlier call failed the job", ks[i]);
  }
  free(ref);
  histd_dataset_free(&ds);
  printf("  a stale CUDA error does not fail the next job: done\n");
}

/* A histogram that fills exactly the shared memory a block may opt in to
 * leaves no room for the kernels' static shared memory: it must go to the
 * global sink (or fewer copies), not fail the launch. */
static void test_smem_boundary(int device) {
  struct cudaDeviceProp pr;
  if (cudaGetDeviceProperties(&pr, device) != cudaSuccess) {
    CHECK(0, "cudaGetDeviceProperties failed");
    return;
  }
  size_t optin = pr.sharedMemPerBlockOptin;
  /* width 0.25 on a 23000 box: every plan is float64 (no refine queue; at
   * 0.5 float32 now runs, with a refine band of 7/64), and the histogram
   * has buckets + 1 rows of 4 bytes next to a tile of 256 float64 points
   * (24 bytes each; none for the naive family) */
  histd_dataset ds = make_set(1000, SHAPE_UNIFORM, 23000, 43);
  struct {
    const char *k;
    size_t tile;
  } cs[] = {{"tiled-privatized-f64", 256 * 24},
            {"tiled-privatized", 256 * 24},
            {"circular", 256 * 24},
            {"privatized", 0}};
  for (size_t c = 0; c < sizeof cs / sizeof cs[0]; c++) {
    uint32_t nb = (uint32_t)((optin - cs[c].tile) / 4 - 1);
    uint64_t *ref = reference(&ds, 0.25, nb);
    char what[96];
    snprintf(what, sizeof what, "uniform n=1000 nb=%u (shared memory full)", nb);
    int ok = compare(&ds, cs[c].k, 256, 0.25, nb, HISTD_PRECISION_EXACT, ref, what);
    CHECK(ok, "%s: a histogram filling the opt-in shared memory failed", cs[c].k);
    free(ref);
  }
  histd_dataset_free(&ds);
  printf("  histograms that fill the opt-in shared memory (%zu bytes): done\n", optin);
}

/* Points in clusters of exact duplicates: sizes[c] copies of pos[c], in
 * that order (tiles of one cluster meet tiles of one cluster: every pair of
 * a tile pair lands in the same bucket). */
static histd_dataset make_clusters(const size_t *sizes, double (*pos)[3], int nc) {
  size_t n = 0;
  for (int c = 0; c < nc; c++)
    n += sizes[c];
  histd_dataset ds;
  histd_dataset_alloc(&ds, n, NULL, 0);
  size_t i = 0;
  for (int c = 0; c < nc; c++)
    for (size_t k = 0; k < sizes[c]; k++, i++) {
      ds.x[i] = pos[c][0];
      ds.y[i] = pos[c][1];
      ds.z[i] = pos[c][2];
    }
  histd_dataset_finish(&ds, NULL, 0);
  return ds;
}

/*
 * The 16-bit shared sink (SDH_SINK_H16): counts that cross 2^14, 2^15 and
 * 2^16 in one block, in a low half (even row) and a high half (odd row);
 * every pair of a tile pair in one bucket (the most increments of one
 * counter between two barriers); rows past the last bucket with no counter
 * (overflow by difference); exact and fast, float32 and float64 plans.
 */
static void test_sink16(void) {
  static const char *const ks[] = {"tiled-privatized", "balanced", "multi-copy",
                                   "tiled-privatized-f64"};
  static const uint32_t blocks[] = {32, 256, 1024};
  /* (1) the sink a job of many buckets gets by itself: three clusters of
   * 10,000 and one far point, 65,000 rows; 70,000 buckets (all counted)
   * and 60,000 (the far pairs are overflow, not counted on the GPU) */
  {
    size_t sizes[] = {10000, 10000, 10000, 1};
    double pos[4][3] = {{0, 0, 0}, {12345.5, 0, 0}, {0, 20000.5, 0}, {37528, 37528, 37528}};
    histd_dataset ds = make_clusters(sizes, pos, 4);
    static const uint32_t nbs[] = {70000, 60000};
    for (int bi = 0; bi < 2; bi++) {
      uint64_t *ref = reference(&ds, 1.0, nbs[bi]);
      char what[96];
      snprintf(what, sizeof what, "clusters n=%zu w=1 nb=%u (16-bit sink)", ds.n, nbs[bi]);
      int fails = 0, sink16 = 0, runs16 = 0;
      for (size_t k = 0; k < sizeof ks / sizeof ks[0]; k++)
        for (size_t b = 0; b < 3; b++)
          for (int pr = 0; pr < 2; pr++) {
            if (pr == 1 && strcmp(ks[k], "tiled-privatized-f64") == 0)
              continue;
            histd_precision prec = pr ? HISTD_PRECISION_FAST : HISTD_PRECISION_EXACT;
            fails += !compare(&ds, ks[k], blocks[b], 1.0, nbs[bi], prec, ref, what);
            sink16 += histd__cuda_last_sink(W) == 3;
            runs16++;
          }
      fails += !compare(&ds, "auto", 0, 1.0, nbs[bi], HISTD_PRECISION_EXACT, ref, what);
      CHECK(histd__cuda_last_sink(W) == 3, "auto on %s counted in sink %d, not the 16-bit one",
            what, histd__cuda_last_sink(W));
      CHECK(sink16 == runs16, "%s: %d of %d runs used the 16-bit sink", what, sink16, runs16);
      printf("  %-48s %s\n", what, fails ? "FAILED" : "ok");
      free(ref);
    }
    histd_dataset_free(&ds);
  }
  /* (2) counts at the 16-bit steps in one block (n <= 1024 with block
   * 1024), in an odd row (41) and an even row (42), the sink forced */
  {
    static const size_t ab[][2] = {{127, 129}, {128, 128}, {113, 145}, {217, 151}, {128, 256},
                                   {192, 256}, {255, 257}, {256, 256}, {23, 2137}};
    setenv("HISTD_GPU_SINK16", "1", 1);
    int fails = 0, sink16 = 0, runs16 = 0;
    for (size_t c = 0; c < sizeof ab / sizeof ab[0]; c++)
      for (int row = 41; row <= 42; row++) {
        double pos[2][3] = {{100, 200, 300}, {100 + (row + 0.5) * 10.0, 200, 300}};
        histd_dataset ds = make_clusters(ab[c], pos, 2);
        uint64_t *ref = reference(&ds, 10.0, 80);
        CHECK_EQ_U64(ref[row], (uint64_t)ab[c][0] * ab[c][1], "the reference's cross pairs");
        char what[96];
        snprintf(what, sizeof what, "two clusters %zux%zu, row %d (16-bit sink)", ab[c][0],
                 ab[c][1], row);
        for (size_t k = 0; k < sizeof ks / sizeof ks[0]; k++)
          for (uint32_t b = 64; b <= 1024; b *= 16) {
            fails += !compare(&ds, ks[k], b, 10.0, 80, HISTD_PRECISION_EXACT, ref, what);
            sink16 += histd__cuda_last_sink(W) == 3;
            runs16++;
          }
        free(ref);
        histd_dataset_free(&ds);
      }
    unsetenv("HISTD_GPU_SINK16");
    CHECK(sink16 == runs16, "counts at the 16-bit steps: %d of %d runs used the 16-bit sink",
          sink16, runs16);
    printf("  %-48s %s\n", "counts at 2^14, 2^15, 2^16 (16-bit sink)", fails ? "FAILED" : "ok");
  }
  /* (3) point sets whose pairs lie on bucket edges (float64 redo with
   * 16-bit counters: take-backs to the global counts in groups, or full
   * warp queues) and a uniform set (fast mode too): the 16-bit sink
   * forced, with each of the two edge modes of groups forced */
  {
    struct {
      shape_kind shape;
      double side, w;
      uint32_t nb;
    } cs[] = {{SHAPE_LATTICE, 9, 1, 16}, {SHAPE_DUPLICATES, 23000, 0.5, 70000},
              {SHAPE_UNIFORM, 23000, 10, 3984}};
    static const char *const modes[][2] = {{"1", "1"}, {"1", "2"}};
    static const char *const mode_names[] = {"16-bit sink, take-backs", "16-bit sink, warp queues"};
    for (size_t c = 0; c < sizeof cs / sizeof cs[0]; c++) {
      histd_dataset ds = make_set(20011, cs[c].shape, cs[c].side, 300 + c);
      uint64_t *ref = reference(&ds, cs[c].w, cs[c].nb);
      for (size_t md = 0; md < 2; md++) {
        if (modes[md][0])
          setenv("HISTD_GPU_SINK16", modes[md][0], 1);
        if (modes[md][1])
          setenv("HISTD_GPU_EDGE_MODE", modes[md][1], 1);
        char what[128];
        snprintf(what, sizeof what, "%s side=%g w=%g nb=%u (%s)", shape_names[cs[c].shape],
                 cs[c].side, cs[c].w, cs[c].nb, mode_names[md]);
        int fails = 0;
        for (size_t k = 0; k < sizeof ks / sizeof ks[0]; k++)
          for (size_t b = 0; b < 3; b++) {
            fails += !compare(&ds, ks[k], blocks[b], cs[c].w, cs[c].nb, HISTD_PRECISION_EXACT,
                              ref, what);
            /* fast mode may move every pair of a lattice edge: uniform only */
            if (strcmp(ks[k], "tiled-privatized-f64") != 0 && cs[c].shape == SHAPE_UNIFORM)
              compare(&ds, ks[k], blocks[b], cs[c].w, cs[c].nb, HISTD_PRECISION_FAST, ref, what);
          }
        unsetenv("HISTD_GPU_SINK16");
        unsetenv("HISTD_GPU_EDGE_MODE");
        printf("  %-64s %s\n", what, fails ? "FAILED" : "ok");
      }
      free(ref);
      histd_dataset_free(&ds);
    }
  }
}

static void test_split_kernel(const histd_dataset *ds, const char *k, int ndev) {
  char msg[512];
  histd_result one, many;
  int rc = run(W, ds, k, 256, 10, 3984, HISTD_PRECISION_EXACT, NULL, &one, msg, sizeof msg);
  CHECK(rc == 0, "single GPU: %s", msg);
  setenv("HISTD_GPU_SPLIT_MIN_PAIRS", "0", 1);
  if (ndev < 2)
    setenv("HISTD_GPU_FAKE_SPLIT", "3", 1);
  int rc2 = run(W, ds, k, 256, 10, 3984, HISTD_PRECISION_EXACT, NULL, &many, msg, sizeof msg);
  unsetenv("HISTD_GPU_SPLIT_MIN_PAIRS");
  unsetenv("HISTD_GPU_FAKE_SPLIT");
  CHECK(rc2 == 0, "split run: %s", msg);
  if (rc == 0 && rc2 == 0) {
    int same = memcmp(one.counts, many.counts, 3984 * sizeof *one.counts) == 0 &&
               one.overflow == many.overflow;
    CHECK(same, "%s: a job split over %s differs from one GPU", k,
          ndev >= 2 ? "several GPUs" : "three parts of one GPU");
    printf("  %s split over %s (%s): %s\n", k, ndev >= 2 ? "all GPUs" : "3 parts of one GPU",
           many.device, same ? "identical to one GPU" : "DIFFERENT");
  }
  if (rc == 0)
    histd_result_free(&one);
  if (rc2 == 0)
    histd_result_free(&many);
}

/* One part of a split job fails (too large for the pretended memory of the
 * contexts made for the other parts); the part on the worker's own context,
 * whose buffers are already there, is stopped. The job must fail with the
 * failure's message, not as "cancelled". */
static void test_split_error(void) {
  histd_dataset ds = make_set(300007, SHAPE_UNIFORM, 23000, 47);
  char msg[512];
  histd_result res;
  int rc = run(W, &ds, "balanced", 256, 500, 80, HISTD_PRECISION_EXACT, NULL, &res, msg,
               sizeof msg);
  CHECK(rc == 0, "balanced: %s", msg);
  if (rc == 0)
    histd_result_free(&res);
  setenv("HISTD_GPU_SPLIT_MIN_PAIRS", "0", 1);
  setenv("HISTD_GPU_FAKE_SPLIT", "3", 1);
  setenv("HISTD_GPU_MEM_LIMIT_MB", "1", 1);
  rc = run(W, &ds, "naive", 256, 500, 80, HISTD_PRECISION_EXACT, NULL, &res, msg, sizeof msg);
  unsetenv("HISTD_GPU_MEM_LIMIT_MB");
  unsetenv("HISTD_GPU_FAKE_SPLIT");
  unsetenv("HISTD_GPU_SPLIT_MIN_PAIRS");
  CHECK(rc == HISTD_ETOOBIG, "a split job whose part failed must report it, got %d (%s)", rc,
        msg);
  if (rc == 0)
    histd_result_free(&res);
  printf("  a failed part of a split job: \"%s\"\n", msg);
  histd_dataset_free(&ds);
}

static void test_split(int ndev) {
  histd_dataset ds = make_set(300007, SHAPE_UNIFORM, 23000, 31);
  test_split_kernel(&ds, "balanced", ndev);
  test_split_kernel(&ds, "tiled-privatized", ndev);
  test_split_kernel(&ds, "circular", ndev);
  histd_dataset_free(&ds);
}

/* A x B's plain histogram on the GPU ("auto": A's tiles meet B's on a self
 * kernel) against the definition over every (i, j), written here: every
 * shape, sizes around the tile boundaries, block sizes 256 and 1024, A = B. */
static void test_cross(void) {
  static const size_t sizes[][2] = {{1, 1},     {1, 700},   {255, 3},    {256, 256},
                                    {257, 999}, {1000, 1},  {2049, 1500}, {3000, 2500}};
  static const uint32_t blocks[] = {256, 1024};
  int cases = 0;
  for (int shape = 0; shape < SHAPE_COUNT; shape++)
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++)
      for (int bl = 0; bl < 2; bl++) {
        const size_t na = sizes[z][0], nb = sizes[z][1];
        histd_dataset a, b;
        histd_dataset_alloc(&a, na, NULL, 0);
        histd_dataset_alloc(&b, nb, NULL, 0);
        pointset_fill(&a, (shape_kind)shape, 40, 11 + z);
        pointset_fill(&b, (shape_kind)shape, 40, 97 + z);
        const double width = shape == SHAPE_LATTICE ? 1 : 2.5;
        const uint32_t count = shape == SHAPE_LATTICE ? 40 : 25;
        uint64_t want[41] = {0}, over = 0;
        for (size_t i = 0; i < na; i++)
          for (size_t j = 0; j < nb; j++) {
            double dx = a.x[i] - b.x[j];
            double dy = a.y[i] - b.y[j];
            double dz = a.z[i] - b.z[j];
            double sxx = dx * dx;
            double syy = dy * dy;
            double szz = dz * dz;
            double s2 = sxx + syy;
            s2 = s2 + szz;
            double q = floor(sqrt(s2) / width);
            if (q < count)
              want[(size_t)q]++;
            else
              over++;
          }
        histd_problem p;
        memset(&p, 0, sizeof p);
        p.a = &a;
        p.b = &b;
        p.bins = (histd_bins){HISTD_BINS_WIDTH, count, width, NULL, 0, 0};
        histd_exec ex;
        histd_exec_init(&ex);
        ex.block_size = blocks[bl];
        histd_result r;
        char msg[512] = "";
        int rc = histd_worker_run(W, &p, &ex, NULL, &r, msg, sizeof msg);
        CHECK(rc == 0, "A x B %s %zu x %zu: %s", shape_names[shape], na, nb, msg);
        if (rc != 0) {
          histd_dataset_free(&a);
          histd_dataset_free(&b);
          continue;
        }
        cases++;
        int bad = 0;
        for (uint32_t k = 0; k < count && bad < 3; k++)
          if (r.counts[k] != want[k]) {
            bad++;
            CHECK(0, "A x B %s %zu x %zu block %u: bin %u has %" PRIu64 ", want %" PRIu64,
                  shape_names[shape], na, nb, blocks[bl], k, r.counts[k], want[k]);
          }
        CHECK_EQ_U64(r.overflow, over, "A x B overflow");
        CHECK_EQ_U64(r.total, (uint64_t)na * nb, "A x B total");
        CHECK(r.exact && strstr(r.device, "GPU") != NULL && strstr(r.reason, "A x B") != NULL,
              "A x B ran on the GPU's self kernel, exact (%s; %s)", r.device, r.reason);
        histd_result_free(&r);
        histd_dataset_free(&a);
        histd_dataset_free(&b);
      }
  printf("A x B on the self kernels: %d cases\n", cases);
}

/* A self histogram cut into shards on the GPU: each shard runs on the
 * whole resident set (the kernel's tiles, no copies), and the partials add
 * up to the definition's counts (tests/definition.h): every shape, sizes
 * whose blocks of whole 1024s end mid-tile at the last block, blocks 256
 * and 1024. */
static void test_shards(void) {
  static const size_t sizes[] = {2500, 7000, 20001};
  int ran_tiles = 0;
  for (int shape = 0; shape < SHAPE_COUNT; shape++)
    for (size_t z = 0; z < sizeof sizes / sizeof *sizes; z++)
      for (uint32_t block = 256; block <= 1024; block *= 4) {
        histd_dataset a;
        histd_dataset_alloc(&a, sizes[z], NULL, 0);
        pointset_fill(&a, (shape_kind)shape, 40, 5 + z);
        const double width = shape == SHAPE_LATTICE ? 1 : 2.5;
        const uint32_t count = shape == SHAPE_LATTICE ? 60 : 30;
        def_hist want = definition_histogram(a.x, a.y, a.z, a.n, width, count);
        histd_problem p;
        memset(&p, 0, sizeof p);
        p.a = &a;
        p.bins = (histd_bins){HISTD_BINS_WIDTH, count, width, NULL, 0, 0};
        histd_exec ex;
        histd_exec_init(&ex);
        ex.block_size = block;
        histd_shard_plan plan;
        histd_shard_plan_make(&p, "auto", 7, &plan);
        uint64_t got[61] = {0}, over = 0;
        char msg[512] = "";
        int rc = 0;
        for (uint64_t s = 0; s < plan.count && rc == 0; s++) {
          histd_shard sh;
          histd_shard_get(&plan, s, &sh);
          histd_result r;
          rc = histd_worker_run_shard(W, &p, &ex, &sh, NULL, &r, msg, sizeof msg);
          CHECK(rc == 0, "shard %llu of %s n=%zu: %s", (unsigned long long)s,
                shape_names[shape], a.n, msg);
          if (rc != 0)
            break;
          CHECK(histd_result_check(&r, &r.bins, histd_shard_pairs(&p, &sh), msg, sizeof msg) ==
                    0, "shard %llu: %s", (unsigned long long)s, msg);
          ran_tiles += strcmp(r.kernel, "tiled-privatized") == 0;
          for (uint32_t k = 0; k < count; k++)
            got[k] += r.counts[k];
          over += r.overflow;
          histd_result_free(&r);
        }
        int bad = 0;
        for (uint32_t k = 0; k < count && rc == 0 && bad < 3; k++)
          if (got[k] != want.counts[k]) {
            bad++;
            CHECK(0, "%s n=%zu block %u in %llu shards: bin %u has %" PRIu64 ", want %" PRIu64,
                  shape_names[shape], a.n, block, (unsigned long long)plan.count, k, got[k],
                  want.counts[k]);
          }
        if (rc == 0)
          CHECK_EQ_U64(over, want.overflow, "the shards' overflow");
        free(want.counts);
        histd_dataset_free(&a);
      }
  CHECK(ran_tiles > 0, "shards ran on the resident tiles (%d)", ran_tiles);
  printf("shards on the resident tiles: %d\n", ran_tiles);
}

int main(void) {
  histd_device_info dev[16];
  int count = 0;
  char msg[512] = "";
  histd_devices(dev, 16, &count, msg, sizeof msg);
  if (count == 0)
    SKIP("%s", strncmp(msg, "no CUDA device", 14) == 0 ? msg : "no CUDA device: see above");
  for (int i = 0; i < count; i++)
    printf("GPU %d: %s, cc %d.%d, %d SMs, %.1f GiB (%.1f free)\n", dev[i].index, dev[i].name,
           dev[i].cc_major, dev[i].cc_minor, dev[i].multiprocessors,
           (double)dev[i].memory_total / 1073741824.0, (double)dev[i].memory_free / 1073741824.0);
  if (histd_worker_create(&W, dev[0].index, msg, sizeof msg) != 0)
    SKIP("no CUDA device: GPU %d unusable: %s", dev[0].index, msg);
  /* the float32 bound's eps_r (sdh_kernels.cu): measured by the context;
   * the CUDA Programming Guide promises at most 2 ulp (relative 2^-22) */
  double eps_r = histd__cuda_rsqrt_err(W);
  printf("rsqrtf's relative error measured on GPU %d: %.4g (%.3f u)\n", dev[0].index, eps_r,
         eps_r / 0x1p-24);
  CHECK(eps_r > 0x1p-50 && eps_r <= 0x1p-22 + 0x1p-50,
        "rsqrtf's measured error %.4g is not in (0, 2 ulp]", eps_r);
  double t0 = histd_now_ms();
  printf("reference vs definition\n");
  test_reference();
  printf("matrix\n");
  test_matrix();
  printf("float32 stress sets\n");
  test_float32_stress();
  test_auto_and_prefetch();
  gpu_count = count;
  test_tensor_core();
  test_cross();
  test_shards();
  test_prefetch_pattern();
  test_progress_cancel_errors();
  test_stale_error();
  test_smem_boundary(dev[0].index);
  printf("16-bit shared sink\n");
  test_sink16();
  test_split(count);
  test_split_error();
  histd_worker_destroy(W);
  printf("%d GPU runs in %.1f s\n", runs, (histd_now_ms() - t0) / 1000);
  return check_finish("test_gpu");
}
