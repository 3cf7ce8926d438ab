/*
 * test_dmtree.c -- the kernel "dm-tree" against definitions written here,
 * independently of the engine:
 *
 *   - every shape of pointsets.h and two more (points on a line, one dense
 *     clump in a sparse background), N from 0 to 3,000,
 *     bin widths from one that resolves almost every pair (the whole range
 *     in one bin) to one that resolves none, on 1 and 3 threads, against
 *     the O(N^2) definition (tests/definition.h), and A x B against the
 *     same arithmetic written here;
 *   - explicit edges placed on the lattice's distances (sqrt 2, sqrt 3, 2):
 *     pairs exactly on edges;
 *   - large integer lattices, whose histograms are known by counting the
 *     offset vectors (n - |i|)(n - |j|)(n - |k|) times each, every
 *     coordinate difference exact: 64^3 points open, 40^3 periodic (each
 *     point meets every wrapped offset once), and 100^3 = 10^6 points open
 *     (sanitized builds: 40^3 open instead of 64^3 and 100^3);
 *   - the tree really resolves: with one bin over the whole range at least
 *     99% of the pairs are counted a node pair at a time (its device line
 *     says how many);
 *   - "auto" on the CPU runs it where the bins (or the radius of a count
 *     within R) are wide for the density, ahead of the grid; on a GPU
 *     where its GPU model says so (a lattice of 168^3 points);
 *   - weighted sums against long double, to 1e-12 of each bin's sum of
 *     |w_i w_j|, with weights of both signs and over nine decades.
 * test_stats runs dm-tree on every statistic it checks (periodic boxes,
 * triclinic, edges, within R, weights, frames) besides.
 *
 * Where histd_run finds a GPU, dm-tree runs on it (its leaf pairs on the
 * GPU: kernels/dmtree_engine.c) and every case above checks that: open,
 * unweighted jobs must say the GPU took their leaf pairs; periodic and
 * weighted ones run their leaves on the host. There it also counts a
 * lattice of 216^3 = 10,077,696 points (the gpu suite runs this file too).
 */
#include <math.h>

#include "../check.h"
#include "../gpus.h"
#include "../definition.h"
#include "../pointsets.h"
#include "histd/histd.h"

static int gpus; /* histd_run's device count (main): dm-tree runs on GPU 0 where one exists */

static int run_dm(const histd_problem *p, uint32_t threads, histd_result *r, const char *what) {
  histd_exec ex;
  histd_exec_init(&ex);
  snprintf(ex.kernel, sizeof ex.kernel, "dm-tree");
  ex.threads = threads;
  char msg[256] = "";
  int rc = histd_run(p, &ex, NULL, r, msg, sizeof msg);
  CHECK(rc == 0, "%s: %s", what, msg);
  if (rc == 0)
    CHECK(strcmp(r->kernel, "dm-tree") == 0, "%s: ran %s", what, r->kernel);
  if (rc == 0 && gpus > 0) /* the GPU takes the leaf pairs of open, unweighted jobs */
    CHECK((strstr(r->device, ": leaf pairs; cpu:") != NULL) ==
              (p->box.kind == HISTD_BOX_NONE && !p->weighted),
          "%s: ran on %s", what, r->device);
  return rc;
}

/* The percentage dm-tree's device line gives for the pairs it resolved. */
static double resolved_pct(const histd_result *r) {
  const char *s = strstr(r->device, "nodes");
  s = s ? strchr(s, ')') : NULL;
  return s ? atof(s + 2) : -1;
}

/* The contract's distance of point i of a and point j of b, each operation
 * rounded on its own (built with -ffp-contract=off). */
static double def_d(const histd_dataset *a, size_t i, const histd_dataset *b, size_t j) {
  return definition_distance(a->x[i], a->y[i], a->z[i], b->x[j], b->y[j], b->z[j]);
}

static histd_problem plain(const histd_dataset *a, const histd_dataset *b, double width,
                           uint32_t count) {
  histd_problem p;
  memset(&p, 0, sizeof p);
  p.a = a;
  p.b = b;
  p.bins.kind = HISTD_BINS_WIDTH;
  p.bins.width = width;
  p.bins.count = count;
  return p;
}

static void same(const histd_result *r, const uint64_t *want, uint64_t over, uint32_t count,
                 const char *what) {
  int bad = 0;
  for (uint32_t k = 0; k < count; k++)
    if (r->counts[k] != want[k] && bad++ < 3)
      CHECK(0, "%s: bin %u has %" PRIu64 ", want %" PRIu64, what, k, r->counts[k], want[k]);
  CHECK(r->overflow == over, "%s: overflow %" PRIu64 ", want %" PRIu64, what, r->overflow, over);
}

/* ---- shapes ------------------------------------------------------------------------ */

enum { LINE = SHAPE_COUNT, CLUMP, SHAPES };

static void fill(histd_dataset *ds, int shape, double side, uint64_t seed) {
  if (shape < SHAPE_COUNT) {
    pointset_fill(ds, (shape_kind)shape, side, seed);
    return;
  }
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 7;
  for (size_t i = 0; i < ds->n; i++) {
    if (shape == LINE) { /* on one line, not along an axis */
      double t = test_rand01(&s) * side;
      ds->x[i] = 3 + t;
      ds->y[i] = 5 + 0.5 * t;
      ds->z[i] = 7 - 0.25 * t;
    } else if (i % 5 != 0) { /* four in five in a clump of side / 200 */
      ds->x[i] = side * (0.3 + 0.005 * test_rand01(&s));
      ds->y[i] = side * (0.6 + 0.005 * test_rand01(&s));
      ds->z[i] = side * (0.5 + 0.005 * test_rand01(&s));
    } else {
      ds->x[i] = side * test_rand01(&s);
      ds->y[i] = side * test_rand01(&s);
      ds->z[i] = side * test_rand01(&s);
    }
  }
  histd_dataset_finish(ds, NULL, 0);
}

static const char *shape_name(int shape) {
  return shape < SHAPE_COUNT ? shape_names[shape] : shape == LINE ? "line" : "clump";
}

static void test_shapes(void) {
  static const size_t sizes[] = {0, 1, 2, 33, 700, 3000};
  const double side = 100;
  /* one bin over everything (resolves almost every pair) down to widths
   * far below the spacing (resolves none) */
  static const double widths[] = {4 * 100, 100 / 3.0, 100 / 37.0, 100 / 1000.0};
  for (int shape = 0; shape < SHAPES; shape++)
    for (size_t ni = 0; ni < sizeof sizes / sizeof *sizes; ni++)
      for (size_t wi = 0; wi < sizeof widths / sizeof *widths; wi++) {
        const size_t n = sizes[ni];
        if (n > 700 && wi == 3)
          continue; /* nothing to resolve: the definition's time only */
        histd_dataset ds;
        histd_dataset_alloc(&ds, n, NULL, 0);
        fill(&ds, shape, side, 17 + ni);
        const double w = widths[wi];
        uint32_t count = (uint32_t)fmin(ceil(side * 1.8 / w) + 1, 4000);
        def_hist h = definition_histogram(ds.x, ds.y, ds.z, n, w, count);
        histd_problem p = plain(&ds, NULL, w, count);
        for (uint32_t threads = 1; threads <= 3; threads += 2) {
          char what[128];
          snprintf(what, sizeof what, "%s, n %zu, width %g, %u thread%s", shape_name(shape), n,
                   w, threads, threads > 1 ? "s" : "");
          histd_result r;
          if (run_dm(&p, threads, &r, what) != 0)
            continue;
          same(&r, h.counts, h.overflow, count, what);
          CHECK_EQ_U64(r.total, h.total, what);
          if (wi == 0 && n >= 700)
            CHECK(resolved_pct(&r) >= 99.0, "%s: resolved %g%% of pairs at once (%s)", what,
                  resolved_pct(&r), r.device);
          histd_result_free(&r);
        }
        free(h.counts);
        histd_dataset_free(&ds);
      }
}

/* A x B: every pair of A and B, the contract's arithmetic. */
static void test_cross(void) {
  for (int shape = 0; shape < SHAPES; shape++) {
    histd_dataset a, b;
    histd_dataset_alloc(&a, 900, NULL, 0);
    histd_dataset_alloc(&b, 1300, NULL, 0);
    fill(&a, shape, 60, 3);
    fill(&b, (shape + 2) % SHAPES, 80, 4);
    for (int wi = 0; wi < 3; wi++) {
      const double w = wi == 0 ? 300 : wi == 1 ? 7.5 : 0.3;
      const uint32_t count = wi == 2 ? 500 : (uint32_t)(200 / w) + 1;
      uint64_t *want = calloc(count, sizeof *want), over = 0;
      for (size_t i = 0; i < a.n; i++)
        for (size_t j = 0; j < b.n; j++) {
          double q = floor(def_d(&a, i, &b, j) / w);
          if (q < count)
            want[(size_t)q]++;
          else
            over++;
        }
      histd_problem p = plain(&a, &b, w, count);
      char what[96];
      snprintf(what, sizeof what, "A x B, %s x %s, width %g", shape_name(shape),
               shape_name((shape + 2) % SHAPES), w);
      histd_result r;
      if (run_dm(&p, 3, &r, what) == 0) {
        same(&r, want, over, count, what);
        CHECK_EQ_U64(r.total, (uint64_t)a.n * b.n, what);
        histd_result_free(&r);
      }
      free(want);
    }
    histd_dataset_free(&a);
    histd_dataset_free(&b);
  }
}

/* ---- lattices ---------------------------------------------------------------------- */

/* The integer lattice {0..n-1}^3, in a shuffled order. */
static histd_dataset lattice(uint32_t n) {
  histd_dataset ds;
  const size_t m = (size_t)n * n * n;
  histd_dataset_alloc(&ds, m, NULL, 0);
  uint64_t s = 99;
  size_t *order = malloc(m * sizeof *order);
  for (size_t i = 0; i < m; i++)
    order[i] = i;
  for (size_t i = m - 1; i > 0; i--) {
    size_t j = (size_t)(test_rand_u64(&s) % (i + 1)), t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  for (size_t i = 0; i < m; i++) {
    size_t c = order[i];
    ds.x[i] = (double)(c % n);
    ds.y[i] = (double)(c / n % n);
    ds.z[i] = (double)(c / n / n);
  }
  free(order);
  histd_dataset_finish(&ds, NULL, 0);
  return ds;
}

/* The bin of an offset's length under the contract (its squares and sums
 * are exact integers, so this is every such pair's own arithmetic); -1
 * overflow. */
static long offset_bin(const histd_bins *bins, long i, long j, long k) {
  double d = sqrt((double)(i * i + j * j + k * k));
  if (bins->kind == HISTD_BINS_WIDTH) {
    double q = floor(d / bins->width);
    return q < bins->count ? (long)q : -1;
  }
  for (uint32_t e = 0; e < bins->count; e++)
    if (bins->edges[e] <= d && d < bins->edges[e + 1])
      return (long)e;
  return -1; /* beyond the last edge (the tests' first edge is below every pair) */
}

/* The open lattice's histogram: offset (i, j, k) joins (n-|i|)(n-|j|)(n-|k|)
 * ordered pairs; each unordered pair is two opposite offsets. */
static void lattice_open_want(uint32_t n, const histd_bins *bins, uint64_t *want,
                              uint64_t *over) {
  memset(want, 0, bins->count * sizeof *want);
  *over = 0;
  const long m = n;
  for (long i = -(m - 1); i < m; i++)
    for (long j = -(m - 1); j < m; j++)
      for (long k = -(m - 1); k < m; k++) {
        if (i == 0 && j == 0 && k == 0)
          continue;
        uint64_t mult = (uint64_t)(m - labs(i)) * (uint64_t)(m - labs(j)) * (uint64_t)(m - labs(k));
        long b = offset_bin(bins, i, j, k);
        if (b < 0)
          *over += mult;
        else
          want[b] += mult;
      }
  for (uint32_t b = 0; b < bins->count; b++)
    want[b] /= 2;
  *over /= 2;
}

static void lattice_open(uint32_t n, double width, uint32_t count) {
  histd_dataset ds = lattice(n);
  histd_problem p = plain(&ds, NULL, width, count);
  uint64_t *want = malloc(count * sizeof *want), over;
  lattice_open_want(n, &p.bins, want, &over);
  char what[96];
  snprintf(what, sizeof what, "open lattice %u^3, width %g", n, width);
  histd_result r;
  if (run_dm(&p, 0, &r, what) == 0) {
    same(&r, want, over, count, what);
    histd_result_free(&r);
  }
  free(want);
  histd_dataset_free(&ds);
}

/* Sanitized builds run the smaller lattices only (they are 5-20x slower). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#else
#define SANITIZED 0
#endif

static void test_lattices(void) {
  if (SANITIZED) {
    lattice_open(40, 12.5, 6); /* 64,000 points, every pair within 6 bins */
    lattice_open(40, 9.4, 4);  /* pairs beyond the last bin: overflow */
  } else {
    lattice_open(64, 20, 6);   /* 262,144 points, every pair within 6 bins of 20 */
    lattice_open(64, 15, 4);   /* pairs beyond the last bin: overflow */
    lattice_open(100, 90, 2);  /* 10^6 points */
  }
  if (gpus > 0 && !SANITIZED)
    lattice_open(216, 40, 6); /* 10^7 points: every pair within 240 in 6 bins */

  /* explicit edges on the lattice's own distances: sqrt(2), sqrt(3), 2
   * land exactly on edges */
  histd_dataset ds = lattice(12);
  double edges[] = {0.5, sqrt(2.0), sqrt(3.0), 2, 2.5, 7.75, 11};
  histd_problem p = plain(&ds, NULL, 0, 0);
  p.bins.kind = HISTD_BINS_EDGES;
  p.bins.edges = edges;
  p.bins.count = 6;
  uint64_t want[6], over;
  lattice_open_want(12, &p.bins, want, &over);
  histd_result r;
  if (run_dm(&p, 3, &r, "lattice 12^3, edges on distances") == 0) {
    same(&r, want, over, 6, "lattice 12^3, edges on distances");
    CHECK_EQ_U64(r.below, 0, "no pair below 0.5");
    histd_result_free(&r);
  }
  histd_dataset_free(&ds);

  /* periodic: the lattice n^3 in the cube of side n; each point meets each
   * wrapped offset (mx, my, mz) != 0 once, at length
   * |(min(mx, n - mx), ...)|, so a bin holds n^3 / 2 pairs per offset */
  const uint32_t n = 40;
  ds = lattice(n);
  p = plain(&ds, NULL, 5, 4);
  p.box = (histd_box){HISTD_BOX_ORTHO, n, 0, n, 0, 0, n};
  uint64_t pw[4] = {0}, pover = 0;
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++)
      for (long k = 0; k < n; k++) {
        if (i == 0 && j == 0 && k == 0)
          continue;
        long b = offset_bin(&p.bins, i < n - i ? i : n - i, j < n - j ? j : n - j,
                            k < n - k ? k : n - k);
        if (b < 0)
          pover++;
        else
          pw[b]++;
      }
  const uint64_t half = (uint64_t)n * n * n / 2;
  for (int b = 0; b < 4; b++)
    pw[b] *= half;
  pover *= half;
  if (run_dm(&p, 3, &r, "periodic lattice 40^3") == 0) {
    same(&r, pw, pover, 4, "periodic lattice 40^3");
    histd_result_free(&r);
  }
  histd_dataset_free(&ds);
}

/* "auto" on the CPU takes the tree where the bins are wide for the points'
 * density, and says why; not where they are narrow. (Where histd_run has
 * a GPU, auto runs brute force there: only the counts are checked.) */
static void test_auto(void) {
  histd_dataset ds;
  histd_dataset_alloc(&ds, 5000, NULL, 0);
  pointset_fill(&ds, SHAPE_UNIFORM, 100, 5); /* mean spacing 100 / 5000^(1/3) = 5.85 */
  for (int wide = 0; wide < 2; wide++) {
    const double w = wide ? 40 : 5;
    const uint32_t count = (uint32_t)(180 / w) + 1;
    def_hist h = definition_histogram(ds.x, ds.y, ds.z, ds.n, w, count);
    histd_problem p = plain(&ds, NULL, w, count);
    histd_exec ex;
    histd_exec_init(&ex);
    histd_result r;
    char msg[256] = "";
    CHECK(histd_run(&p, &ex, NULL, &r, msg, sizeof msg) == 0, "auto: %s", msg);
    const char *want = gpus > 0 ? NULL : wide ? "dm-tree" : "cpu";
    CHECK(want == NULL || strcmp(r.kernel, want) == 0, "auto at width %g ran %s, want %s (%s)",
          w, r.kernel, want, r.reason);
    if (want != NULL && wide)
      CHECK_STR_CONTAINS(r.reason, "mean spacing");
    same(&r, h.counts, h.overflow, count, wide ? "auto, wide bins" : "auto, narrow bins");
    histd_result_free(&r);
    free(h.counts);
  }
  /* within R = 30 (5.1 spacings): the tree, ahead of the grid */
  uint64_t want = 0;
  for (size_t i = 0; i < ds.n; i++)
    for (size_t j = i + 1; j < ds.n; j++) {
      want += def_d(&ds, i, &ds, j) <= 30;
    }
  histd_problem p = plain(&ds, NULL, 1, 1);
  p.statistic = HISTD_STAT_WITHIN;
  p.radius = 30;
  histd_exec ex;
  histd_exec_init(&ex);
  histd_result r;
  char msg[256] = "";
  CHECK(histd_run(&p, &ex, NULL, &r, msg, sizeof msg) == 0, "auto within 30: %s", msg);
  CHECK(gpus > 0 || strcmp(r.kernel, "dm-tree") == 0, "auto within 30 ran %s (%s)", r.kernel,
        r.reason);
  CHECK(r.within == want, "auto within 30: %" PRIu64 ", want %" PRIu64, r.within, want);
  histd_result_free(&r);
  histd_dataset_free(&ds);

  /* on a GPU: the tree from bins 23 spacings wide and 10^13 pairs; a
   * lattice of 168^3 points (1.1e13 pairs) in bins of 24 */
  if (gpus > 0 && !SANITIZED) {
    const uint32_t n = 168, count = 13;
    ds = lattice(n);
    p = plain(&ds, NULL, 24, count);
    uint64_t *hw = malloc(count * sizeof *hw), over;
    lattice_open_want(n, &p.bins, hw, &over);
    CHECK(histd_run(&p, &ex, NULL, &r, msg, sizeof msg) == 0, "auto on 168^3: %s", msg);
    CHECK(strcmp(r.kernel, "dm-tree") == 0, "auto on 168^3 ran %s (%s)", r.kernel, r.reason);
    CHECK_STR_CONTAINS(r.reason, "on a GPU");
    same(&r, hw, over, count, "auto on the lattice 168^3");
    histd_result_free(&r);
    free(hw);
    histd_dataset_free(&ds);
  }
}

/* Weighted: each bin's sum of w_i w_j against long double, to 1e-12 of
 * its sum of |w_i w_j|, self and A x B, with bins that resolve whole node
 * pairs (and leaves, and single points); weights of both signs, and
 * weights over nine decades (where a difference of sums would lose a small
 * bin's digits). */
static void test_weights(void) {
  static const int shapes[] = {SHAPE_UNIFORM, SHAPE_CLUSTERED, SHAPE_DUPLICATES, CLUMP};
  for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++)
    for (int cross = 0; cross < 2; cross++)
      for (int wide = 0; wide < 3; wide++) {
        histd_dataset a, b;
        histd_dataset_alloc(&a, 1500, NULL, 0);
        histd_dataset_alloc(&b, 1100, NULL, 0);
        fill(&a, shapes[si], 100, 11 + si);
        fill(&b, shapes[si], 100, 12 + si);
        histd_dataset_alloc_weights(&a, NULL, 0);
        histd_dataset_alloc_weights(&b, NULL, 0);
        uint64_t rs = 77 + si;
        for (size_t i = 0; i < a.n; i++)
          a.w[i] = wide == 2 ? pow(10, 9 * test_rand01(&rs) - 6) : 4 * test_rand01(&rs) - 1;
        for (size_t i = 0; i < b.n; i++)
          b.w[i] = wide == 2 ? pow(10, 9 * test_rand01(&rs) - 6) : 4 * test_rand01(&rs) - 1;
        const double w = wide == 1 ? 9 : 60;
        const uint32_t count = (uint32_t)(180 / w) + 1;
        histd_problem p = plain(&a, cross ? &b : NULL, w, count);
        p.weighted = true;
        uint64_t want[32] = {0}, over = 0;
        long double sum[32] = {0}, mag[32] = {0};
        const histd_dataset *o = cross ? &b : &a;
        for (size_t i = 0; i < a.n; i++)
          for (size_t j = cross ? 0 : i + 1; j < o->n; j++) {
            double q = floor(def_d(&a, i, o, j) / w);
            if (!(q < count)) {
              over++;
              continue;
            }
            long double v = (long double)a.w[i] * (long double)o->w[j];
            want[(size_t)q]++;
            sum[(size_t)q] += v;
            mag[(size_t)q] += fabsl(v);
          }
        char what[128];
        snprintf(what, sizeof what, "weighted %s, %s, width %g%s", shape_name(shapes[si]),
                 cross ? "A x B" : "self", w, wide == 2 ? ", weights over 9 decades" : "");
        histd_result r;
        if (run_dm(&p, 3, &r, what) == 0) {
          same(&r, want, over, count, what);
          for (uint32_t k = 0; k < count; k++) {
            long double err = fabsl((long double)r.weighted[k] - sum[k]);
            CHECK(err <= 1e-12L * mag[k] + 1e-300L, "%s: bin %u weighted %.17g, want %.17Lg",
                  what, k, r.weighted[k], sum[k]);
          }
          histd_result_free(&r);
        }
        histd_dataset_free(&a);
        histd_dataset_free(&b);
      }
}

int main(void) {
  histd_device_info info;
  gpus = test_gpus(&info, "TEST_DMTREE_GPU");
  test_shapes();
  test_cross();
  test_lattices();
  test_auto();
  test_weights();
  return check_finish("test_dmtree");
}
