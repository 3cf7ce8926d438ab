/*
 * test_limits.c -- jobs at the limits of binary64 (issue #28): each is
 * refused with a sentence or computed exactly, never a crash, a hang or an
 * allocation of gigabytes. Counts are checked against definitions written
 * here, from shared/DESIGN.md and histd/pair.h's text, not the engine's
 * functions:
 *
 *   - periodic boxes outside the range histd.h states (a side of 1e-300 or
 *     1e200, a sliver of a triclinic box) are refused, from the job, from a
 *     frame and from the parameters, on every CPU kernel; boxes near the
 *     ends of the range run and match the contract's minimum image; points
 *     too far from the origin for a periodic box are refused, points just
 *     within the limit counted;
 *   - the grid refuses a geometry of no cells instead of indexing one;
 *   - edges of a huge dynamic range (5e-324 .. 3, 1e-200 .. 1e200, log bins
 *     from 1e-300 to 1e300) on every CPU kernel, counts identical to the
 *     brute force, under a 4 GiB address-space limit (a table sized by the
 *     edges' exponents once asked for 16 GiB);
 *   - weights whose products overflow or underflow binary64 are refused;
 *     weights just inside the bound are summed to 1e-12.
 */
#include <float.h>
#include <math.h>
#include <sys/resource.h>

#include "../check.h"
#include "../definition.h"
#include "grid.h"
#include "histd/histd.h"
#include "histd/pair.h"
#include "histd/params.h"

static uint64_t seed = 2828;
static double rnd(void) { return test_rand01(&seed); }

/* n points uniform in [lo, lo + len)^3 (weights w when w != 0). */
static histd_dataset points(size_t n, double lo, double len, double w) {
  histd_dataset ds;
  histd_dataset_alloc(&ds, n, NULL, 0);
  if (w != 0)
    histd_dataset_alloc_weights(&ds, NULL, 0);
  for (size_t i = 0; i < n; i++) {
    ds.x[i] = lo + rnd() * len;
    ds.y[i] = lo + rnd() * len;
    ds.z[i] = lo + rnd() * len;
    if (w != 0)
      ds.w[i] = w * (i % 2 ? 1 : -0.5);
  }
  histd_dataset_finish(&ds, NULL, 0);
  return ds;
}

static histd_problem problem(const histd_dataset *a, histd_box box, histd_bins bins) {
  histd_problem p;
  memset(&p, 0, sizeof p);
  p.a = a;
  p.box = box;
  p.bins = bins;
  return p;
}

/* ---- the definition --------------------------------------------------------- */

/* The contract's distance of a pair in the box (definition.h). */
static double distance(const histd_box *box, double xi, double yi, double zi, double xj, double yj,
                       double zj) {
  const def_box b = {(int)box->kind, box->ax, box->bx, box->by, box->cx, box->cy, box->cz};
  return definition_box_distance(&b, xi, yi, zi, xj, yj, zj);
}

/* The slot of d: 0..count-1 a bin, count below, count + 1 overflow. */
static uint32_t slot(const histd_bins *bins, double d) {
  return definition_slot(d, bins->width, bins->kind == HISTD_BINS_EDGES ? bins->edges : NULL,
                         bins->count);
}

/* Counts the problem's self pairs into want[count + 2]. */
static void brute(const histd_problem *p, uint64_t *want) {
  const histd_dataset *a = p->a;
  memset(want, 0, ((size_t)p->bins.count + 2) * sizeof *want);
  for (size_t i = 0; i < a->n; i++)
    for (size_t j = i + 1; j < a->n; j++)
      want[slot(&p->bins,
                distance(&p->box, a->x[i], a->y[i], a->z[i], a->x[j], a->y[j], a->z[j]))]++;
}

/* ---- running every CPU kernel ----------------------------------------------- */

/* Runs p on the CPU with kernel k into r; 0 or the error code. */
static int run(const histd_problem *p, const char *kernel, histd_result *r, char *msg,
               size_t msglen) {
  histd_exec ex;
  histd_exec_init(&ex);
  snprintf(ex.kernel, sizeof ex.kernel, "%s", kernel);
  ex.threads = 2;
  histd_worker *w;
  int rc = histd_worker_create(&w, -1, msg, msglen);
  if (rc != 0)
    return rc;
  rc = histd_worker_run(w, p, &ex, NULL, r, msg, msglen);
  histd_worker_destroy(w);
  return rc;
}

/* Every kernel a CPU worker can run (the registry's CPU and "any" rows). */
static bool cpu_kernel(size_t i) { return histd_kernel_at(i)->engine != HISTD_ENGINE_CUDA; }

/* Every CPU kernel able to run p counts what brute force counts. */
/* What a result must hold: checked by check(r, kernel, what, ctx). */
typedef struct expected {
  void (*check)(const histd_result *r, const char *kernel, const char *what, const void *ctx);
  const void *ctx;
} expected;

/* Every CPU kernel able to run p runs it, and its result is checked. */
static void each_kernel(const histd_problem *p, const char *what, expected e) {
  for (size_t i = 0; i < histd_kernel_count(); i++) {
    const histd_kernel *k = histd_kernel_at(i);
    if (!cpu_kernel(i) || !histd_kernel_can(k, p, NULL, 0))
      continue;
    histd_result r;
    char msg[256] = "";
    int rc = run(p, k->name, &r, msg, sizeof msg);
    CHECK(rc == 0, "%s on %s: %s", what, k->name, msg);
    if (rc != 0)
      continue;
    e.check(&r, k->name, what, e.ctx);
    histd_result_free(&r);
  }
}

/* The counts, below and overflow of the definition (want[count + 2]). */
static void same_counts(const histd_result *r, const char *kernel, const char *what,
                        const void *ctx) {
  const uint64_t *want = ctx;
  const uint32_t count = r->bins.count;
  bool same = r->below == want[count] && r->overflow == want[count + 1];
  for (uint32_t b = 0; b < count; b++)
    same = same && r->counts[b] == want[b];
  CHECK(same,
        "%s on %s (%s): counts differ from the definition (below %llu want %llu, "
        "overflow %llu want %llu)",
        what, kernel, r->kernel, (unsigned long long)r->below, (unsigned long long)want[count],
        (unsigned long long)r->overflow, (unsigned long long)want[count + 1]);
}

static void expect_exact(const histd_problem *p, const char *what) {
  uint64_t *want = malloc(((size_t)p->bins.count + 2) * sizeof *want);
  brute(p, want);
  each_kernel(p, what, (expected){same_counts, want});
  free(want);
}

/* Every CPU kernel refuses p with a sentence containing needle, and so
 * does histd_problem_validate when shape (what it can tell from the
 * problem's shape: the weights' values and the default count are the
 * run's to look at). */
static void expect_refused_by(const histd_problem *p, const char *needle, bool shape) {
  char msg[256] = "";
  if (shape) {
    CHECK(histd_problem_validate(p, msg, sizeof msg) == HISTD_EINVAL, "validate refuses: %s",
          needle);
    CHECK_STR_CONTAINS(msg, needle);
  }
  for (size_t i = 0; i < histd_kernel_count(); i++) {
    if (!cpu_kernel(i) || !histd_kernel_can(histd_kernel_at(i), p, NULL, 0))
      continue;
    histd_result r;
    msg[0] = '\0';
    int rc = run(p, histd_kernel_at(i)->name, &r, msg, sizeof msg);
    CHECK(rc == HISTD_EINVAL, "%s refuses (%s): rc %d", histd_kernel_at(i)->name, needle, rc);
    if (rc == 0)
      histd_result_free(&r);
    CHECK_STR_CONTAINS(msg, needle);
  }
}

static void expect_refused(const histd_problem *p, const char *needle) {
  expect_refused_by(p, needle, !p->weighted);
}

/* ---- boxes -------------------------------------------------------------------- */

static void test_box_range(void) {
  histd_dataset a = points(40, 0, 1, 0);
  const histd_bins bins = {HISTD_BINS_WIDTH, 4, 1e-302, NULL, 0, 0};
  /* the boxes: widths 0/0 and inf/inf made the r_max check pass */
  histd_problem p =
      problem(&a, (histd_box){HISTD_BOX_ORTHO, 1e-300, 0, 1e-300, 0, 0, 1e-300}, bins);
  expect_refused(&p, "is below 2^-250");
  p = problem(&a, (histd_box){HISTD_BOX_ORTHO, 1e200, 0, 1e200, 0, 0, 1e200},
              (histd_bins){HISTD_BINS_WIDTH, 10, 1, NULL, 0, 0});
  expect_refused(&p, "x length, 1e+200, is beyond 2^250");
  p.box = (histd_box){HISTD_BOX_TRICLINIC, 10, 1e200, 10, 0, 0, 10};
  expect_refused(&p, "tilt bx, 1e+200, is beyond 2^250");
  p.box = (histd_box){HISTD_BOX_TRICLINIC, 10, 1e13, 10, 0, 0, 10}; /* a sliver */
  expect_refused(&p, "is less than 2^-40 times");
  p.box = (histd_box){HISTD_BOX_ORTHO, 1, 0, 1, 0, 0, INFINITY};
  expect_refused(&p, "z length must be a finite number > 0");

  /* from a frame's box: the file's */
  histd_box boxes[2] = {{HISTD_BOX_ORTHO, 10, 0, 10, 0, 0, 10},
                        {HISTD_BOX_ORTHO, 10, 0, 10, 0, 0, 1e-300}};
  size_t counts[2] = {20, 20};
  char msg[256] = "";
  CHECK(histd_dataset_set_frames(&a, 2, counts, boxes, msg, sizeof msg) == 0, "frames: %s", msg);
  p = problem(&a, (histd_box){HISTD_BOX_NONE, 0, 0, 0, 0, 0, 0},
              (histd_bins){HISTD_BINS_WIDTH, 4, 0.1, NULL, 0, 0});
  p.frame_boxes = true;
  expect_refused(&p, "frame 2's");
  histd_dataset_set_frames(&a, 1, (size_t[]){40}, NULL, NULL, 0);

  /* from the parameters */
  histd_params par;
  histd_params_init(&par);
  const histd_param *row = histd_param_find("box");
  double sides[3] = {1, 1e200, 1};
  histd_value v = {.kind = HISTD_VALUE_NUMBERS, .numbers = sides, .count = 3};
  msg[0] = '\0';
  CHECK(histd_param_set(&par, row, &v, msg, sizeof msg) == HISTD_EINVAL, "box [1, 1e200, 1]");
  CHECK_STR_CONTAINS(msg, "y length, 1e+200, is beyond 2^250");
  sides[1] = 1e-300;
  CHECK(histd_param_set(&par, row, &v, msg, sizeof msg) == HISTD_EINVAL, "box [1, 1e-300, 1]");
  CHECK_STR_CONTAINS(msg, "is below 2^-250");
  histd_dataset_free(&a);
}

/* Boxes near the ends of the range run, exactly. */
static void test_box_ends(void) {
  const double big = 0x1p249, small = 0x1p-249;
  histd_dataset a = points(300, 0, big, 0);
  histd_problem p = problem(&a, (histd_box){HISTD_BOX_ORTHO, big, 0, big, 0, 0, big},
                            (histd_bins){HISTD_BINS_WIDTH, 10, big / 20, NULL, 0, 0});
  expect_exact(&p, "a box of side 2^249");
  histd_dataset_free(&a);
  a = points(300, -small, 3 * small, 0); /* unwrapped: within three boxes */
  p = problem(
      &a, (histd_box){HISTD_BOX_TRICLINIC, small, small / 3, small, -small / 4, small / 5, small},
      (histd_bins){HISTD_BINS_WIDTH, 8, small / 40, NULL, 0, 0});
  expect_exact(&p, "a triclinic box of side 2^-249");
  histd_dataset_free(&a);
}

/* Points far from a periodic box: within 2^40 of its smallest width, the
 * contract's arithmetic stays finite and they count; beyond, refused. */
static void test_box_far_points(void) {
  histd_dataset a = points(60, 0, 10, 0);
  for (size_t i = 0; i < a.n; i += 3)
    a.x[i] += 1e13 * (i % 2 ? 1 : -1);
  histd_dataset_finish(&a, NULL, 0);
  histd_problem p = problem(&a, (histd_box){HISTD_BOX_ORTHO, 10, 0, 10, 0, 0, 10},
                            (histd_bins){HISTD_BINS_WIDTH, 10, 0.5, NULL, 0, 0});
  expect_exact(&p, "points 1e13 from a box of 10");
  a.x[0] = 1e300; /* (x - x') / L overflows, and x - x' - L inf is NaN */
  a.x[1] = -1e300;
  histd_dataset_finish(&a, NULL, 0);
  expect_refused(&p, "within 2^40 times the periodic box's smallest width");
  histd_dataset_free(&a);
}

/* The grid's plan refuses what would give no cells, whatever its caller
 * validated: a box whose widths are NaN here. */
static void test_grid_guard(void) {
  histd_dataset a = points(10, 0, 1, 0);
  histd_problem p = problem(&a, (histd_box){HISTD_BOX_ORTHO, 1e-300, 0, 1e-300, 0, 0, 1e-300},
                            (histd_bins){HISTD_BINS_WIDTH, 1, 1e-302, NULL, 0, 0});
  histd__grid_geom g;
  char msg[256] = "";
  int rc = histd__grid_plan(&p, 100, &g, msg, sizeof msg);
  CHECK(rc != 0, "a grid of %llu cells (%u x %u x %u) was planned", (unsigned long long)g.cells,
        g.n[0], g.n[1], g.n[2]);
  CHECK_STR_CONTAINS(msg, "the grid");
  histd_dataset_free(&a);
}

/* Points 2^-1020 apart at most: every square underflows, so the contract
 * puts every pair at d = 0, in bin 0 (the engine fuzzer's finding: the
 * grid cut such a set into cells and called the pairs it skipped overflow). */
static void test_grid_underflow(void) {
  histd_dataset a = points(30, 0, 1, 0);
  for (size_t i = 0; i < a.n; i++) {
    a.x[i] = ldexp(floor(a.x[i] * 64), -1026);
    a.y[i] = ldexp(floor(a.y[i] * 64), -1026);
    a.z[i] = ldexp(floor(a.z[i] * 64), -1026);
  }
  histd_dataset_finish(&a, NULL, 0);
  histd_problem p = problem(&a, (histd_box){HISTD_BOX_NONE, 0, 0, 0, 0, 0, 0},
                            (histd_bins){HISTD_BINS_WIDTH, 1, 0x1p-1074, NULL, 0, 0});
  expect_exact(&p, "points 2^-1020 apart, width 2^-1074");
  histd_dataset_free(&a);
}

/* n points in [0, 4)^3 but three, at DBL_MAX, -DBL_MAX and DBL_MAX / 2 on
 * an axis: their differences overflow to inf. */
static histd_dataset far_points(size_t n) {
  histd_dataset a = points(n, 0, 4, 0);
  a.x[0] = DBL_MAX;
  a.x[1] = -DBL_MAX;
  a.y[2] = DBL_MAX / 2;
  histd_dataset_finish(&a, NULL, 0);
  return a;
}

/* Distances of inf, which the contract puts in overflow; no default count
 * covers them. */
static void test_infinite_distances(void) {
  histd_dataset a = far_points(12);
  histd_problem p = problem(&a, (histd_box){HISTD_BOX_NONE, 0, 0, 0, 0, 0, 0},
                            (histd_bins){HISTD_BINS_WIDTH, 8, 1, NULL, 0, 0});
  expect_exact(&p, "points from -DBL_MAX to DBL_MAX");
  p.bins.count = 0;
  expect_refused_by(&p, "the data's diagonal overflows binary64", false);
  histd_dataset_free(&a);
}

/* The nearest point anywhere among points from -DBL_MAX to DBL_MAX: the
 * drivers' last pass (every point of B, one cell) asked the grid for cells
 * as wide as the diagonal, inf, and the grid refused (the engine fuzzer's
 * finding). Ties to the lowest index; none where every distance is inf. */
static void same_nearest(const histd_result *r, const char *kernel, const char *what,
                         const void *ctx) {
  const histd_dataset *a = ctx;
  for (size_t i = 0; i < a->n; i++) {
    double best = 0;
    int64_t best_j = -1;
    for (size_t j = 0; j < a->n; j++) {
      const histd_box open = {HISTD_BOX_NONE, 0, 0, 0, 0, 0, 0};
      const double d = distance(&open, a->x[i], a->y[i], a->z[i], a->x[j], a->y[j], a->z[j]);
      if (j != i && (best_j < 0 || d < best))
        best = d, best_j = (int64_t)j;
    }
    CHECK(r->nearest_j[i] == best_j && r->nearest_d[i] == best,
          "%s on %s: point %zu's nearest %lld at %g, want %lld at %g", what, kernel, i,
          (long long)r->nearest_j[i], r->nearest_d[i], (long long)best_j, best);
  }
}

static void test_nearest_infinite(void) {
  histd_dataset a = far_points(9);
  histd_problem p = problem(&a, (histd_box){HISTD_BOX_NONE, 0, 0, 0, 0, 0, 0},
                            (histd_bins){HISTD_BINS_WIDTH, 0, 0, NULL, 0, 0});
  p.statistic = HISTD_STAT_NEAREST;
  p.radius = INFINITY;
  each_kernel(&p, "the nearest anywhere, points from -DBL_MAX to DBL_MAX",
              (expected){same_nearest, &a});
  histd_dataset_free(&a);
}

/* ---- edges ---------------------------------------------------------------------- */

static void test_edges_range(void) {
  histd_dataset a = points(200, 0, 2, 0);
  a.x[0] = a.y[0] = a.z[0] = 0; /* some distances below 1e-200 */
  a.x[1] = a.y[1] = a.z[1] = 0;
  a.x[2] = 5e-324;
  histd_dataset_finish(&a, NULL, 0);
  const double e1[] = {5e-324, 1, 2, 3};
  histd_problem p = problem(&a, (histd_box){HISTD_BOX_NONE, 0, 0, 0, 0, 0, 0},
                            (histd_bins){HISTD_BINS_EDGES, 3, 0, e1, 0, 0});
  expect_exact(&p, "edges 5e-324, 1, 2, 3");
  const double e2[] = {1e-200, 1, 2, 1e200};
  p.bins.edges = e2;
  expect_exact(&p, "edges 1e-200, 1, 2, 1e200");
  double e3[41];
  char msg[256] = "";
  CHECK(histd_log_edges(1e-300, 1e300, 40, e3, msg, sizeof msg) == 0, "log edges: %s", msg);
  p.bins = (histd_bins){HISTD_BINS_EDGES, 40, 0, e3, 0, 0};
  expect_exact(&p, "40 log bins from 1e-300 to 1e300");
  const double e4[] = {-1, 0, 5e-324, 1e-310, 1e-300};
  p.bins = (histd_bins){HISTD_BINS_EDGES, 4, 0, e4, 0, 0};
  expect_exact(&p, "edges -1, 0, 5e-324, 1e-310, 1e-300");
  histd_dataset_free(&a);
}

/* ---- weights -------------------------------------------------------------------- */

/* The weighted sums to 1e-12 of ctx's exact sums relative to their sums
 * of magnitudes (ctx: {sum, mag}, a bin each). */
static void same_sums(const histd_result *r, const char *kernel, const char *what,
                      const void *ctx) {
  const long double *const *s = ctx;
  for (uint32_t b = 0; b < r->bins.count; b++)
    CHECK(fabsl(r->weighted[b] - s[0][b]) <= 1e-12L * s[1][b],
          "%s on %s: bin %u's sum %.17g, want %.17Lg", what, kernel, b, r->weighted[b], s[0][b]);
}

static void test_weights_range(void) {
  histd_dataset a = points(10, 0, 1, 1e308); /* products overflow: NaN sums */
  histd_problem p = problem(&a, (histd_box){HISTD_BOX_NONE, 0, 0, 0, 0, 0, 0},
                            (histd_bins){HISTD_BINS_WIDTH, 4, 0.5, NULL, 0, 0});
  p.weighted = true;
  expect_refused(&p, "overflow");
  histd_dataset_free(&a);
  a = points(10, 0, 1, 1e150); /* 45 pairs x 1e300: past 2^1000 */
  p.a = &a;
  expect_refused(&p, "overflow");
  histd_dataset_free(&a);
  a = points(10, 0, 1, 1e-170); /* products of 1e-340 underflow */
  p.a = &a;
  expect_refused(&p, "underflow");
  histd_dataset_free(&a);

  /* just inside: 45 pairs x 1e298 and 1e-300 / 4; the sums to 1e-12 */
  const double ws[2] = {1e149, 0x1p-510};
  for (int t = 0; t < 2; t++) {
    a = points(10, 0, 1, ws[t]);
    p.a = &a;
    long double want[6] = {0}, mag[6] = {0};
    for (size_t i = 0; i < a.n; i++)
      for (size_t j = i + 1; j < a.n; j++) {
        uint32_t s =
            slot(&p.bins, distance(&p.box, a.x[i], a.y[i], a.z[i], a.x[j], a.y[j], a.z[j]));
        want[s] += (long double)a.w[i] * a.w[j];
        mag[s] += fabsl((long double)a.w[i] * a.w[j]);
      }
    const long double *sums[2] = {want, mag};
    char what[64];
    snprintf(what, sizeof what, "weights %g", ws[t]);
    each_kernel(&p, what, (expected){same_sums, sums});
    histd_dataset_free(&a);
  }
}

/* One side's weights summed before they multiply (dm-tree's nodes, the
 * CPU's weighted groups): tiny weights on A keep every product finite
 * while the sum of B's would overflow, and the job is refused with a
 * sentence (the engine fuzzer's case of 2026-11-29: dm-tree summed B's
 * weights to -inf and wrote NaN); with B's weights a little smaller every
 * kernel runs it to the definition, A x B and A's self pairs. */
static void test_side_weight_sums(void) {
  histd_dataset a = points(6, 0, 1, 1e-300), b = points(4, 0, 1, -1e308);
  histd_problem p = problem(&a, (histd_box){HISTD_BOX_NONE, 0, 0, 0, 0, 0, 0},
                            (histd_bins){HISTD_BINS_WIDTH, 4, 0.5, NULL, 0, 0});
  p.b = &b;
  p.weighted = true;
  expect_refused(&p, "the sums of B's weights could overflow binary64");
  histd_dataset_free(&b);
  b = points(4, 0, 1, -1e300);
  long double want[6] = {0}, mag[6] = {0};
  for (size_t i = 0; i < a.n; i++)
    for (size_t j = 0; j < b.n; j++) {
      uint32_t s = slot(&p.bins, distance(&p.box, a.x[i], a.y[i], a.z[i], b.x[j], b.y[j], b.z[j]));
      want[s] += (long double)a.w[i] * b.w[j];
      mag[s] += fabsl((long double)a.w[i] * b.w[j]);
    }
  const long double *sums[2] = {want, mag};
  each_kernel(&p, "A x B, weights 1e-300 and -1e300", (expected){same_sums, sums});
  histd_dataset_free(&a);
  histd_dataset_free(&b);
}

/* ravg sums (w_i w_j) u: weights the weighted sums allow, at separations
 * of 1e100, would overflow them, and are refused with a sentence; the
 * same weights with separations of 1 run, and each bin's ravg is its mean
 * separation (the definition's, to 1e-12). */
static void test_ravg_sums(void) {
  histd_dataset far = points(6, 0, 1e100, 1e148), near = points(6, 0, 1, 1e148);
  const double edges[3] = {0, 1e100, 1e101};
  histd_problem p = problem(&far, (histd_box){HISTD_BOX_NONE, 0, 0, 0, 0, 0, 0},
                            (histd_bins){HISTD_BINS_EDGES, 2, 0, edges, 0, 0});
  p.weighted = true;
  p.ravg = true;
  expect_refused(&p, "ravg's sums could overflow binary64");
  const double near_edges[3] = {0, 1, 2};
  p.a = &near;
  p.bins.edges = near_edges;
  histd_exec ex;
  histd_exec_init(&ex);
  histd_result r;
  char msg[256] = "";
  int rc = histd_run(&p, &ex, NULL, &r, msg, sizeof msg);
  CHECK(rc == 0, "ravg of weights 1e148 at separations below 2: %s", msg);
  long double sum[2] = {0, 0}, mag[2] = {0, 0};
  for (size_t i = 0; i < near.n; i++)
    for (size_t j = i + 1; j < near.n; j++) {
      double d = distance(&p.box, near.x[i], near.y[i], near.z[i], near.x[j], near.y[j], near.z[j]);
      uint32_t k = definition_slot(d, 0, near_edges, 2); /* 0 or 1: every d < 2 */
      long double t = (long double)near.w[i] * near.w[j] * d;
      sum[k] += t;
      mag[k] += fabsl(t);
    }
  for (int k = 0; rc == 0 && k < 2; k++)
    CHECK(fabsl(r.rsum[k] - sum[k]) <= 1e-12L * mag[k], "bin %d's ravg sum %.17g, want %.17Lg",
          k, r.rsum[k], sum[k]);
  if (rc == 0)
    histd_result_free(&r);
  histd_dataset_free(&far);
  histd_dataset_free(&near);
}

/* Each point's sum of its neighbours' weights, as same_sums. */
static void same_point_sums(const histd_result *r, const char *kernel, const char *what,
                            const void *ctx) {
  const long double *const *s = ctx;
  for (size_t q = 0; q < r->n; q++)
    CHECK(fabsl(r->point_weighted[q] - s[0][q]) <= 1e-12L * s[1][q],
          "%s on %s: point %zu's sum %.17g, want %.17Lg", what, kernel, q, r->point_weighted[q],
          s[0][q]);
}

/* A count per point sums B's weights (no products): their magnitude
 * times B's points at most 2^1000, and tiny weights are fine; A needs none. */
static void test_point_weights(void) {
  histd_dataset a = points(10, 0, 1, 0), b = points(10, 0, 1, 1e305);
  histd_problem p = problem(&a, (histd_box){HISTD_BOX_NONE, 0, 0, 0, 0, 0, 0},
                            (histd_bins){HISTD_BINS_WIDTH, 0, 0, NULL, 0, 0});
  p.b = &b;
  p.statistic = HISTD_STAT_POINT_COUNTS;
  p.radius = 0.8;
  p.weighted = true;
  expect_refused(&p, "the per-point weight sums could overflow binary64");
  histd_dataset_free(&b);
  b = points(10, 0, 1, 1e-300);
  long double want[10] = {0}, mag[10] = {0};
  for (size_t q = 0; q < a.n; q++)
    for (size_t j = 0; j < b.n; j++)
      if (distance(&p.box, a.x[q], a.y[q], a.z[q], b.x[j], b.y[j], b.z[j]) <= p.radius) {
        want[q] += b.w[j];
        mag[q] += fabsl((long double)b.w[j]);
      }
  const long double *sums[2] = {want, mag};
  each_kernel(&p, "per point, weights 1e-300", (expected){same_point_sums, sums});
  histd_dataset_free(&a);
  histd_dataset_free(&b);
}

/* A table that grows with the edges' exponents once asked for 2^31 cells:
 * with the address space capped, such a request fails instead of paging.
 * (Not under the sanitizers: they reserve terabytes of shadow.) */
static void limit_memory(void) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
  return;
#endif
#endif
  struct rlimit rl = {(rlim_t)4 << 30, (rlim_t)4 << 30};
  CHECK(setrlimit(RLIMIT_AS, &rl) == 0, "setrlimit");
}

/* One axis's periodic image, histd_image (fl(d * (1/L)) and a margin,
 * else the division), against the definition's nearbyint(fl(d / L)):
 * d up to 60 ulps either side of every half-integer multiple of L from
 * -9.5 L to 9.5 L (the ties themselves included), of integer multiples,
 * far out (|d / L| near 2^20 to 2^45, where the margin passes 1/2) and at
 * random, for lengths whose inverse is inexact and at the ends of the
 * range boxes may have. */
static void test_image_rule(void) {
  static const double lens[] = {10, 3, 7.3, 0.1, 1e-3, 1000, 1e6, 3 * 0x1p-249, 0x1p249 / 3};
  unsigned long bad = 0, runs = 0;
  double bad_d = 0, bad_len = 0;
#define IMAGE_CHECK(dd, ll)                                                                      \
  do {                                                                                           \
    const double d_ = (dd), l_ = (ll);                                                           \
    runs++;                                                                                      \
    if (histd_image(d_, l_, 1 / l_) != nearbyint(d_ / l_) && bad++ == 0)                         \
      bad_d = d_, bad_len = l_;                                                                  \
  } while (0)
  for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
    const double len = lens[i];
    for (int h = -19; h <= 19; h++) { /* h / 2: half-integers (odd h) and integers */
      const double base = h / 2.0 * len;
      double up = base, down = base;
      for (int k = 0; k <= 60; k++) {
        IMAGE_CHECK(up, len);
        IMAGE_CHECK(down, len);
        up = nextafter(up, INFINITY);
        down = nextafter(down, -INFINITY);
      }
    }
    for (int e = 20; e <= 45; e++)
      for (int k = -2; k <= 2; k++) {
        const double far = ldexp(1.0, e) * len;
        IMAGE_CHECK(far + k * len / 2, len);
        IMAGE_CHECK(-far + k * len / 2, len);
      }
    for (int k = 0; k < 20000; k++)
      IMAGE_CHECK((2 * rnd() - 1) * 10 * len, len);
  }
#undef IMAGE_CHECK
  CHECK(bad == 0, "histd_image differs from nearbyint(d / L) in %lu of %lu cases, first d = %a, "
        "L = %a", bad, runs, bad_d, bad_len);
  printf("the image rule: %lu cases, %lu differ\n", runs, bad);
}

int main(void) {
  limit_memory();
  test_image_rule();
  test_box_range();
  test_box_ends();
  test_box_far_points();
  test_grid_guard();
  test_grid_underflow();
  test_infinite_distances();
  test_nearest_infinite();
  test_edges_range();
  test_weights_range();
  test_point_weights();
  test_side_weight_sums();
  test_ravg_sums();
  return check_finish("test_limits");
}
