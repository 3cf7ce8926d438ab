/*
 * test_kernels.c -- every kernel of the CPU in the registry against the definition
 * (tests/definition.h), bucket for bucket, on hand-computable sets and on
 * random sets of several shapes; totals; cancellation and progress.
 */
#include <math.h>
#include <pthread.h>

#include "../check.h"
#include "../definition.h"
#include "../pointsets.h"
#include "histd/histd.h"
#include "../plain.h"

static void compare_with_definition(const char *kernel, const histd_dataset *ds,
                                    double width, uint32_t buckets, const char *what) {
  plain_job spec;
  plain_init(&spec);
  spec.bucket_width = width;
  spec.buckets = buckets;
  snprintf(spec.kernel, sizeof spec.kernel, "%s", kernel);
  histd_result res;
  char msg[256] = "";
  int rc = plain_run(ds, &spec, NULL, &res, msg, sizeof msg);
  CHECK(rc == 0, "%s on %s: %s", kernel, what, msg);
  if (rc != 0)
    return;
  uint32_t nb = buckets ? buckets : res.bins.count;
  def_hist want = definition_histogram(ds->x, ds->y, ds->z, ds->n, width, nb);
  CHECK(res.bins.count == nb, "%s on %s: %u buckets, want %u", kernel, what, res.bins.count, nb);
  int bad = 0;
  for (uint32_t b = 0; b < nb && bad < 5; b++) {
    if (res.counts[b] != want.counts[b]) {
      bad++;
      CHECK(0, "%s on %s (n=%zu w=%g): bucket %u: got %" PRIu64 ", want %" PRIu64,
            kernel, what, ds->n, width, b, res.counts[b], want.counts[b]);
    }
  }
  CHECK_EQ_U64(res.overflow, want.overflow, what);
  uint64_t n = ds->n, sum = res.overflow;
  for (uint32_t b = 0; b < nb; b++)
    sum += res.counts[b];
  CHECK_EQ_U64(res.total, n < 2 ? 0 : n * (n - 1) / 2, "total = n(n-1)/2");
  CHECK_EQ_U64(sum, res.total, "sum(counts) + overflow = total");
  CHECK(res.exact, "%s claims inexact counts in exact mode", kernel);
  free(want.counts);
  histd_result_free(&res);
}

static histd_dataset make(size_t n, const double (*pts)[3]) {
  histd_dataset ds;
  histd_dataset_alloc(&ds, n, NULL, 0);
  for (size_t i = 0; i < n; i++) {
    ds.x[i] = pts[i][0];
    ds.y[i] = pts[i][1];
    ds.z[i] = pts[i][2];
  }
  histd_dataset_finish(&ds, NULL, 0);
  return ds;
}

static uint64_t run_counts(const char *kernel, const histd_dataset *ds, double w,
                           uint32_t buckets, uint64_t *out, uint64_t *overflow) {
  plain_job spec;
  plain_init(&spec);
  spec.bucket_width = w;
  spec.buckets = buckets;
  snprintf(spec.kernel, sizeof spec.kernel, "%s", kernel);
  histd_result res;
  char msg[256] = "";
  int rc = plain_run(ds, &spec, NULL, &res, msg, sizeof msg);
  CHECK(rc == 0, "%s: %s", kernel, msg);
  if (rc != 0)
    return 0;
  for (uint32_t b = 0; b < buckets; b++)
    out[b] = res.counts[b];
  *overflow = res.overflow;
  uint64_t total = res.total;
  histd_result_free(&res);
  return total;
}

/* Hand-computed answers: these do not depend on any implementation. */
static void test_tiny_sets(const char *k) {
  uint64_t c[8], of;
  static const double two[2][3] = {{0, 0, 0}, {3, 4, 0}}; /* distance 5 */
  histd_dataset ds = make(0, two);
  CHECK_EQ_U64(run_counts(k, &ds, 1.0, 4, c, &of), 0, "n=0 total");
  CHECK_EQ_U64(c[0] + c[1] + c[2] + c[3] + of, 0, "n=0 counts");
  histd_dataset_free(&ds);

  ds = make(1, two);
  CHECK_EQ_U64(run_counts(k, &ds, 1.0, 4, c, &of), 0, "n=1 total");
  CHECK_EQ_U64(c[0] + c[1] + c[2] + c[3] + of, 0, "n=1 counts");
  histd_dataset_free(&ds);

  ds = make(2, two); /* d = 5 exactly: w=2 -> bucket 2; w=5 -> bucket 1 (edge) */
  CHECK_EQ_U64(run_counts(k, &ds, 2.0, 4, c, &of), 1, "n=2 total");
  CHECK_EQ_U64(c[2], 1, "n=2, d=5, w=2: bucket 2");
  run_counts(k, &ds, 5.0, 4, c, &of);
  CHECK_EQ_U64(c[1], 1, "n=2, d=5 on the edge w=5: bucket 1");
  CHECK_EQ_U64(c[0], 0, "n=2, d=5, w=5: bucket 0 empty");
  run_counts(k, &ds, 1.0, 5, c, &of);
  CHECK_EQ_U64(of, 1, "n=2, d=5, w=1, 5 buckets: overflow");
  histd_dataset_free(&ds);

  /* 3-4-5 triangle: distances 3, 4, 5; w = 1 puts each exactly on an edge */
  static const double tri[3][3] = {{0, 0, 0}, {3, 0, 0}, {0, 4, 0}};
  ds = make(3, tri);
  CHECK_EQ_U64(run_counts(k, &ds, 1.0, 6, c, &of), 3, "n=3 total");
  CHECK(c[3] == 1 && c[4] == 1 && c[5] == 1 && c[0] + c[1] + c[2] == 0 && of == 0,
        "3-4-5 triangle, w=1: buckets 3, 4, 5 hold one pair each (%s)", k);
  histd_dataset_free(&ds);

  /* unit cube corners: 12 edges (1), 12 face diagonals (1.414), 4 body (1.732) */
  double cube[8][3];
  for (int i = 0; i < 8; i++)
    for (int a = 0; a < 3; a++)
      cube[i][a] = (i >> a) & 1;
  ds = make(8, (const double(*)[3])cube);
  CHECK_EQ_U64(run_counts(k, &ds, 0.5, 4, c, &of), 28, "cube total");
  CHECK(c[0] == 0 && c[1] == 0 && c[2] == 24 && c[3] == 4 && of == 0,
        "cube, w=0.5: [0 0 24 4] (%s): got [%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "]",
        k, c[0], c[1], c[2], c[3]);
  run_counts(k, &ds, 1.0, 2, c, &of);
  CHECK(c[0] == 0 && c[1] == 28 && of == 0, "cube, w=1: every pair in bucket 1 (%s)", k);
  histd_dataset_free(&ds);
}

static void test_random_sets(const char *k) {
  static const size_t sizes[] = {2, 3, 17, 100, 257, 1000};
  static const double widths[] = {0.37, 1.0, 500.0};
  for (int shape = 0; shape < SHAPE_COUNT; shape++) {
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
      histd_dataset ds;
      histd_dataset_alloc(&ds, sizes[si], NULL, 0);
      double side = shape == SHAPE_LATTICE ? 9 : 23000;
      pointset_fill(&ds, (shape_kind)shape, side, 17 * si + (uint64_t)shape);
      for (size_t wi = 0; wi < 3; wi++) {
        double w = shape == SHAPE_LATTICE ? (double)(wi + 1) : widths[wi] * side / 230.0;
        char what[96];
        snprintf(what, sizeof what, "%s n=%zu w=%g", shape_names[shape], ds.n, w);
        compare_with_definition(k, &ds, w, 0, what);    /* default: covers all */
        compare_with_definition(k, &ds, w, 7, what);    /* most pairs overflow */
        compare_with_definition(k, &ds, w, 4000, what); /* many buckets */
      }
      histd_dataset_free(&ds);
    }
  }
}

/* The callbacks may be called from any of the backend's threads (histd.h),
 * so the watch takes a lock (ThreadSanitizer saw the plain version race). */
typedef struct {
  int calls;
  double last;
  bool monotonic;
  int cancel_after;
  pthread_mutex_t mu;
} watch;

static void on_progress(void *u, double f) {
  watch *w = u;
  pthread_mutex_lock(&w->mu);
  if (f < w->last || f < 0 || f > 1)
    w->monotonic = false;
  w->last = f;
  w->calls++;
  pthread_mutex_unlock(&w->mu);
}
static bool on_cancel(void *u) {
  watch *w = u;
  pthread_mutex_lock(&w->mu);
  bool stop = w->cancel_after >= 0 && w->calls >= w->cancel_after;
  pthread_mutex_unlock(&w->mu);
  return stop;
}

static void test_progress_and_cancel(const char *k) {
  histd_dataset ds;
  histd_dataset_alloc(&ds, 6000, NULL, 0);
  pointset_fill(&ds, SHAPE_UNIFORM, 100, 5);
  plain_job spec;
  plain_init(&spec);
  spec.bucket_width = 1;
  snprintf(spec.kernel, sizeof spec.kernel, "%s", k);
  watch w = {0, 0, true, -1, PTHREAD_MUTEX_INITIALIZER};
  histd_control ctl = {on_progress, on_cancel, &w, NULL};
  histd_result res;
  char msg[256];
  int rc = plain_run(&ds, &spec, &ctl, &res, msg, sizeof msg);
  CHECK(rc == 0, "%s: %s", k, msg);
  CHECK(w.calls >= 3, "%s: progress called %d times for 18M pairs", k, w.calls);
  CHECK(w.monotonic && w.last == 1.0, "%s: progress must rise to 1 (last %g)", k, w.last);
  if (rc == 0)
    histd_result_free(&res);
  w = (watch){0, 0, true, 1, PTHREAD_MUTEX_INITIALIZER};
  rc = plain_run(&ds, &spec, &ctl, &res, msg, sizeof msg);
  CHECK(rc == HISTD_ECANCELED, "%s: a cancelled run returns ECANCELED, got %d", k, rc);
  CHECK(w.last < 1.0, "%s: a cancelled run stops early (progress %g)", k, w.last);
  histd_dataset_free(&ds);
}

int main(void) {
  for (size_t i = 0; i < histd_kernel_count(); i++) {
    const histd_kernel *k = histd_kernel_at(i);
    /* the CPU's kernels, dm-tree and auto (on a GPU machine histd_run gives
     * those two the GPU); not grid, whose cells take this workload in one
     * step, too few for the progress checks (test_stats and
     * tests/gpu/test_grid_gpu check its counts) */
    if (k->engine == HISTD_ENGINE_CUDA || strcmp(k->name, "grid") == 0)
      continue;
    printf("kernel %s\n", k->name);
    test_tiny_sets(k->name);
    test_random_sets(k->name);
    test_progress_and_cancel(k->name);
  }
  return check_finish("test_kernels");
}
