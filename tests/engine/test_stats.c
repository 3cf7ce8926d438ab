/*
 * test_stats.c -- the statistics family on every kernel able to run it
 * here (the CPU ones, and on a machine with a GPU the GPU ones), against
 * definitions written here, independently of the engine:
 *
 *   - periodic boxes: the true minimum image, found by trying every image
 *     within two cells (not the engine's nearbyint rule), on random points
 *     in orthorhombic and triclinic boxes, self and A x B;
 *   - a simple cubic lattice, whose shell counts are known in closed form
 *     (3N pairs at a, 6N at a*sqrt(2), 4N at a*sqrt(3), 3N at 2a);
 *   - unwrapped coordinates (shifted by whole box vectors) give the same
 *     counts as wrapped ones;
 *   - explicit and log edges with distances exactly on edges;
 *   - within R, and R = 0 (collisions) on sets with many duplicates;
 *   - weights against a brute force in long double, to 1e-12 of the sum of
 *     |w_i w_j| in each bin, for several thread counts;
 *   - A x B with A = B; the r_max limit and other refusals;
 *   - several frames: counts, weighted sums and within-R are the sums of
 *     each frame's definition (in the frame's own box, or the job's), g(r)
 *     is sum_f counts_f / sum_f (P_f V_shell / V_f) and coordination
 *     sum_f cumulative_f / sum_f N_f, written out here; A x B frame by
 *     frame, a one-frame B against every frame; the refusals.
 */
#include <math.h>

#include "../check.h"
#include "../definition.h"
#include "../shards.h"
#include "histd/histd.h"

static uint64_t seed = 12345;
static double rnd(void) { /* splitmix64 -> [0, 1) */
  uint64_t z = (seed += 0x9E3779B97F4A7C15u);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
  return (double)((z ^ (z >> 31)) >> 11) * 0x1p-53;
}

static histd_dataset points(size_t n, double lx, double ly, double lz, bool weights) {
  histd_dataset ds;
  histd_dataset_alloc(&ds, n, NULL, 0);
  if (weights)
    histd_dataset_alloc_weights(&ds, NULL, 0);
  for (size_t i = 0; i < n; i++) {
    ds.x[i] = rnd() * lx;
    ds.y[i] = rnd() * ly;
    ds.z[i] = rnd() * lz;
    if (weights)
      ds.w[i] = rnd() * 4 - 1;
  }
  histd_dataset_finish(&ds, NULL, 0);
  return ds;
}

/* ---- the definitions ------------------------------------------------------ */

/* The shortest image of (dx, dy, dz) over every lattice vector i a + j b + k c
 * with |i|, |j|, |k| <= 2 (a, b, c the box's vectors; none for open space). */
static double true_distance(const histd_box *b, double dx, double dy, double dz) {
  if (b->kind == HISTD_BOX_NONE)
    return sqrt((dx * dx + dy * dy) + dz * dz);
  double best = INFINITY;
  for (int i = -2; i <= 2; i++)
    for (int j = -2; j <= 2; j++)
      for (int k = -2; k <= 2; k++) {
        double x = dx + i * b->ax + j * b->bx + k * b->cx;
        double y = dy + j * b->by + k * b->cy;
        double z = dz + k * b->cz;
        double d = sqrt((x * x + y * y) + z * z);
        best = d < best ? d : best;
      }
  return best;
}

typedef struct want {
  uint64_t counts[256], below, over;
  long double sum[256], abs[256];
} want;

static void count(want *h, const histd_bins *bins, double d, long double w) {
  int k;
  if (bins->kind == HISTD_BINS_WIDTH) {
    double q = floor(d / bins->width);
    k = q < bins->count ? (int)q : -2;
  } else if (d < bins->edges[0]) {
    k = -1;
  } else {
    k = -2;
    for (uint32_t e = 0; e < bins->count; e++)
      if (bins->edges[e] <= d && d < bins->edges[e + 1])
        k = (int)e;
  }
  if (k == -1)
    h->below++;
  else if (k == -2)
    h->over++;
  else {
    h->counts[k]++;
    h->sum[k] += w;
    h->abs[k] += fabsl(w);
  }
}

/* The contract's orthorhombic rule, literally (libm's nearbyint): it may
 * keep an image an ulp longer than the nearest when dx / L rounds to a
 * half, which the hard-spot tests below provoke on purpose. */
static double literal_axis(double d, double len) {
  volatile double q = d / len, k = nearbyint(q), lk = len * k;
  return d - lk;
}

static double literal_distance(const histd_box *b, double dx, double dy, double dz) {
  double x = literal_axis(dx, b->ax), y = literal_axis(dy, b->by), z = literal_axis(dz, b->cz);
  volatile double xx = x * x, yy = y * y, zz = z * z, s = xx + yy;
  s = s + zz;
  return sqrt(s);
}

static void definition(const histd_problem *p, want *h) {
  memset(h, 0, sizeof *h);
  const histd_dataset *a = p->a, *b = p->b ? p->b : p->a;
  for (size_t i = 0; i < a->n; i++)
    for (size_t j = p->b ? 0 : i + 1; j < b->n; j++) {
      double dx = a->x[i] - b->x[j], dy = a->y[i] - b->y[j], dz = a->z[i] - b->z[j];
      double d = p->box.kind == HISTD_BOX_ORTHO ? literal_distance(&p->box, dx, dy, dz)
                                                : true_distance(&p->box, dx, dy, dz);
      long double w = p->weighted ? (long double)a->w[i] * (long double)b->w[j] : 0;
      count(h, &p->bins, d, w);
    }
}

/* ---- running and comparing -------------------------------------------------------- */

/* Runs p on the kernel with that many threads; a failure is a failed check. */
static int run_on(const histd_problem *p, const char *kernel, uint32_t threads, histd_result *r,
                  const char *what) {
  histd_exec ex;
  histd_exec_init(&ex);
  snprintf(ex.kernel, sizeof ex.kernel, "%s", kernel);
  ex.threads = threads;
  char msg[256] = "";
  int rc = histd_run(p, &ex, NULL, r, msg, sizeof msg);
  CHECK(rc == 0, "%s, %s: %s", what, kernel, msg);
  return rc;
}

/* Does "cpu" take its float32 loops for the statistics here? (AVX-512) */
static bool fast_statistics(void) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("bmi2");
#else
  return false;
#endif
}

/* The kernels a problem runs on here: every CPU kernel, "cpu" on 1, 2 and
 * 4 threads, "auto", "grid" on 1 and 3 threads (the worker's GPU where
 * there is one), "dm-tree" on 3, and where this machine has a GPU every
 * GPU kernel able to run the problem. */
static int kernels_for(const histd_problem *p, const char *names[], uint32_t threads[], int max) {
  static int gpus = -1;
  if (gpus < 0) {
    histd_device_info info;
    if (histd_devices(&info, 1, &gpus, NULL, 0) != 0)
      gpus = 0;
  }
  static const char *const cpu[] = {"cpu-reference", "cpu", "auto", "cpu", "cpu", "grid", "grid"};
  static const uint32_t cpu_threads[] = {1, 1, 3, 2, 4, 1, 3};
  int k = 0;
  for (; k < 7; k++)
    names[k] = cpu[k], threads[k] = cpu_threads[k];
  names[k] = "dm-tree", threads[k++] = 3;
  for (size_t i = 0; i < histd_kernel_count() && k < max; i++) {
    const histd_kernel *kr = histd_kernel_at(i);
    if (gpus > 0 && kr->engine == HISTD_ENGINE_CUDA && histd_kernel_can(kr, p, NULL, 0))
      names[k] = kr->name, threads[k++] = 0;
  }
  return k;
}

/* Every kernel of kernels_for against the definition; with `path`, "cpu"
 * on one thread must name that path in its device line (where it has its
 * AVX-512 loops): "float32", or "weights in groups". */
static void compare_on(const histd_problem *p, const char *what, const char *path) {
  want h;
  definition(p, &h);
  const char *kernels[35];
  uint32_t threads[32];
  int nk = kernels_for(p, kernels, threads, 32);
  /* and cut into shards: "cpu" in 7, "grid" in 4, "dm-tree" in 5 */
  static const char *const sharded[] = {"cpu", "grid", "dm-tree"};
  static const uint64_t shards[] = {7, 4, 5};
  for (int k = 0; k < nk + 3; k++) {
    histd_result r;
    if (k >= nk ? run_sharded(p, sharded[k - nk], shards[k - nk], &r, what) != 0
                : run_on(p, kernels[k], threads[k], &r, what) != 0)
      continue;
    if (k >= nk)
      kernels[k] = "sharded";
    uint64_t sum = r.below + r.overflow;
    int bad = 0;
    for (uint32_t b = 0; b < r.bins.count; b++) {
      sum += r.counts[b];
      if (r.counts[b] != h.counts[b] && bad++ < 3)
        CHECK(0, "%s, %s: bin %u has %" PRIu64 ", want %" PRIu64, what, kernels[k], b,
              r.counts[b], h.counts[b]);
      if (p->weighted) {
        long double err = fabsl((long double)r.weighted[b] - h.sum[b]);
        CHECK(err <= 1e-12L * h.abs[b] + 1e-300L, "%s, %s: bin %u weighted %.17g, want %.17Lg",
              what, kernels[k], b, r.weighted[b], h.sum[b]);
      }
    }
    if (path != NULL && k == 1 && fast_statistics())
      CHECK(strstr(r.device, path) != NULL, "%s: cpu ran its %s path (%s)", what, path,
            r.device);
    CHECK_EQ_U64(r.below, h.below, what);
    CHECK_EQ_U64(r.overflow, h.over, what);
    CHECK_EQ_U64(sum, r.total, "counts + below + overflow = pairs");
    CHECK_EQ_U64(r.total, histd_problem_pairs(p), "total = the number of pairs");
    histd_result_free(&r);
  }
}

static void compare(const histd_problem *p, const char *what) { compare_on(p, what, NULL); }

/* "cpu" must also have run its float32 loops. */
static void compare_fast(const histd_problem *p, const char *what, bool fast) {
  compare_on(p, what, fast ? "float32" : NULL);
}

/* "cpu" must also have taken its weights in groups (a float32 loop). */
static void compare_groups(const histd_problem *p, const char *what) {
  compare_on(p, what, "weights in groups");
}

static histd_problem problem(const histd_dataset *a, const histd_dataset *b, histd_box box,
                             histd_bins bins) {
  histd_problem p;
  memset(&p, 0, sizeof p);
  p.a = a;
  p.b = b;
  p.box = box;
  p.bins = bins;
  return p;
}

static const histd_box OPEN = {HISTD_BOX_NONE, 0, 0, 0, 0, 0, 0};

static void test_periodic_random(void) {
  const histd_box ortho = {HISTD_BOX_ORTHO, 10, 0, 12, 0, 0, 9};
  const histd_box tri = {HISTD_BOX_TRICLINIC, 10, 2.5, 11, -1.5, 3, 9.5};
  histd_dataset a = points(300, 10, 12, 9, false), b = points(200, 10, 12, 9, false);
  const histd_box *boxes[2] = {&ortho, &tri};
  for (int i = 0; i < 2; i++) {
    double half = histd_box_half_width(boxes[i]);
    histd_bins bins = {HISTD_BINS_WIDTH, 40, half / 40, NULL, 0, 0};
    histd_problem p = problem(&a, NULL, *boxes[i], bins);
    compare(&p, i ? "triclinic self" : "orthorhombic self");
    p.b = &b;
    compare(&p, i ? "triclinic A x B" : "orthorhombic A x B");
  }
  histd_dataset_free(&a);
  histd_dataset_free(&b);
}

/* Simple cubic lattice, spacing 1, 6 x 6 x 6 in a periodic cube of 6:
 * each atom has 6 neighbours at 1, 12 at sqrt 2, 8 at sqrt 3, 6 at 2. */
static void test_lattice_shells(void) {
  const int m = 6;
  histd_dataset ds;
  histd_dataset_alloc(&ds, (size_t)m * m * m, NULL, 0);
  size_t n = 0;
  for (int i = 0; i < m; i++)
    for (int j = 0; j < m; j++)
      for (int k = 0; k < m; k++, n++) {
        ds.x[n] = i;
        ds.y[n] = j;
        ds.z[n] = k;
      }
  histd_dataset_finish(&ds, NULL, 0);
  const double edges[] = {0.5, 1.2, 1.5, 1.8, 2.1};
  histd_box box = {HISTD_BOX_ORTHO, m, 0, m, 0, 0, m};
  histd_problem p = problem(&ds, NULL, box, (histd_bins){HISTD_BINS_EDGES, 4, 0, edges, 0, 0});
  histd_exec ex;
  histd_exec_init(&ex);
  histd_result r;
  char msg[256] = "";
  CHECK(histd_run(&p, &ex, NULL, &r, msg, sizeof msg) == 0, "%s", msg);
  const uint64_t want[4] = {3 * n, 6 * n, 4 * n, 3 * n};
  for (int b = 0; b < 4; b++)
    CHECK_EQ_U64(r.counts[b], want[b], "simple cubic shell");
  /* g(r) of a shell: counts / (P V_k / V) */
  uint64_t cum = 0;
  double g, coord;
  histd_result_rdf_bin(&r, 0, &cum, &g, &coord);
  double shell = 4.0 / 3.0 * M_PI * (1.2 * 1.2 * 1.2 - 0.5 * 0.5 * 0.5);
  double expect = (double)(3 * n) / ((double)n * (n - 1) / 2 * shell / (m * m * m));
  CHECK(fabs(g - expect) <= 1e-12 * expect, "g of the first shell %.17g, want %.17g", g, expect);
  CHECK(fabs(coord - 6) < 1e-12, "coordination to the first shell: 6, got %g", coord);
  histd_result_free(&r);
  histd_dataset_free(&ds);
}

/* Coordinates on a 2^-20 grid in a box of 8: adding whole box lengths is
 * exact, and the counts must not change. */
static void test_unwrapped(void) {
  histd_dataset a = points(250, 8, 8, 8, false), u;
  histd_dataset_alloc(&u, a.n, NULL, 0);
  for (size_t i = 0; i < a.n; i++) {
    a.x[i] = floor(a.x[i] * 0x1p20) * 0x1p-20;
    a.y[i] = floor(a.y[i] * 0x1p20) * 0x1p-20;
    a.z[i] = floor(a.z[i] * 0x1p20) * 0x1p-20;
    u.x[i] = a.x[i] + 8 * (double)((int)(i % 5) - 2);
    u.y[i] = a.y[i] - 16 * (double)(i % 3);
    u.z[i] = a.z[i] + 24 * (double)(i % 2);
  }
  histd_dataset_finish(&a, NULL, 0);
  histd_dataset_finish(&u, NULL, 0);
  histd_box box = {HISTD_BOX_ORTHO, 8, 0, 8, 0, 0, 8};
  histd_bins bins = {HISTD_BINS_WIDTH, 64, 4.0 / 64, NULL, 0, 0};
  histd_problem pa = problem(&a, NULL, box, bins), pu = problem(&u, NULL, box, bins);
  compare(&pa, "wrapped coordinates");
  histd_exec ex;
  histd_exec_init(&ex);
  histd_result ra, ru;
  CHECK(histd_run(&pa, &ex, NULL, &ra, NULL, 0) == 0 && histd_run(&pu, &ex, NULL, &ru, NULL, 0) == 0,
        "runs");
  CHECK(memcmp(ra.counts, ru.counts, 64 * sizeof *ra.counts) == 0 && ra.overflow == ru.overflow,
        "wrapped and unwrapped coordinates give identical counts");
  histd_result_free(&ra);
  histd_result_free(&ru);
  histd_dataset_free(&a);
  histd_dataset_free(&u);
}

/* An integer lattice (open space): distances 1, 2, 3, sqrt 5, ... land
 * exactly on integer edges; log edges too. */
static void test_edges(void) {
  histd_dataset ds;
  histd_dataset_alloc(&ds, 64, NULL, 0);
  for (int i = 0; i < 64; i++) {
    ds.x[i] = i % 4;
    ds.y[i] = (i / 4) % 4;
    ds.z[i] = i / 16;
  }
  histd_dataset_finish(&ds, NULL, 0);
  const double edges[] = {1, 2, 3, 4};
  histd_problem p = problem(&ds, NULL, OPEN, (histd_bins){HISTD_BINS_EDGES, 3, 0, edges, 0, 0});
  compare(&p, "integer edges on an integer lattice");
  double log_edges[13];
  char msg[256];
  CHECK(histd_log_edges(1, 4, 12, log_edges, msg, sizeof msg) == 0, "%s", msg);
  CHECK(log_edges[0] == 1 && log_edges[12] == 4 && log_edges[6] > 1.99 && log_edges[6] < 2.01,
        "log edges from 1 to 4: E6 ~ 2");
  p.bins = (histd_bins){HISTD_BINS_EDGES, 12, 0, log_edges, 0, 0};
  compare(&p, "log edges");
  CHECK(histd_log_edges(1, 1, 3, log_edges, msg, sizeof msg) < 0, "r_min = r_max refused");
  CHECK_STR_CONTAINS(msg, "r_min < r_max");
  histd_dataset_free(&ds);
}

static void test_within(void) {
  /* many duplicates: 400 points drawn from 40 distinct ones, in a box */
  histd_dataset pool = points(40, 5, 5, 5, false), ds, b;
  histd_dataset_alloc(&ds, 400, NULL, 0);
  histd_dataset_alloc(&b, 150, NULL, 0);
  for (size_t i = 0; i < 400; i++) {
    size_t k = (size_t)(rnd() * 40);
    ds.x[i] = pool.x[k], ds.y[i] = pool.y[k], ds.z[i] = k % 7 ? pool.z[k] : -0.0 * pool.z[k];
    if (i < 150)
      b.x[i] = pool.x[(k * 7) % 40], b.y[i] = pool.y[(k * 7) % 40], b.z[i] = pool.z[(k * 7) % 40];
  }
  histd_dataset_finish(&ds, NULL, 0);
  histd_dataset_finish(&b, NULL, 0);
  for (int cross = 0; cross < 2; cross++)
    for (int r = 0; r < 3; r++) {
      const double radius = r == 0 ? 0 : r == 1 ? 1.0 : 2.5;
      histd_problem p = problem(&ds, cross ? &b : NULL, OPEN, (histd_bins){0, 0, 0, NULL, 0, 0});
      p.statistic = HISTD_STAT_WITHIN;
      p.radius = radius;
      uint64_t want = 0;
      const histd_dataset *o = cross ? &b : &ds;
      for (size_t i = 0; i < ds.n; i++)
        for (size_t j = cross ? 0 : i + 1; j < o->n; j++) {
          double dx = ds.x[i] - o->x[j], dy = ds.y[i] - o->y[j], dz = ds.z[i] - o->z[j];
          bool in = radius == 0 ? (ds.x[i] == o->x[j] && ds.y[i] == o->y[j] && ds.z[i] == o->z[j])
                                : sqrt((dx * dx + dy * dy) + dz * dz) <= radius;
          want += in;
        }
      CHECK(want > 0, "the set has pairs within %g", radius);
      const char *kernels[32];
      uint32_t threads[32];
      int nk = kernels_for(&p, kernels, threads, 32);
      for (int k = 0; k < nk; k++) {
        histd_exec ex;
        histd_exec_init(&ex);
        snprintf(ex.kernel, sizeof ex.kernel, "%s", kernels[k]);
        histd_result res;
        char msg[256] = "";
        CHECK(histd_run(&p, &ex, NULL, &res, msg, sizeof msg) == 0, "%s", msg);
        CHECK(res.within == want, "%s within %g (%s): %" PRIu64 ", want %" PRIu64, kernels[k],
              radius, cross ? "A x B" : "self", res.within, want);
        CHECK_EQ_U64(res.within + res.overflow, res.total, "within + beyond = pairs");
        histd_result_free(&res);
      }
    }
  histd_dataset_free(&pool);
  histd_dataset_free(&ds);
  histd_dataset_free(&b);
}

static void test_weights(void) {
  histd_dataset a = points(500, 30, 30, 30, true), b = points(300, 30, 30, 30, true);
  double edges[21];
  histd_log_edges(0.5, 40, 20, edges, NULL, 0);
  histd_problem p = problem(&a, NULL, OPEN, (histd_bins){HISTD_BINS_EDGES, 20, 0, edges, 0, 0});
  p.weighted = true;
  compare(&p, "weighted self, log edges");
  p.b = &b;
  compare(&p, "weighted A x B, log edges");
  histd_box box = {HISTD_BOX_ORTHO, 30, 0, 30, 0, 0, 30};
  p.box = box;
  p.bins = (histd_bins){HISTD_BINS_WIDTH, 30, 0.5, NULL, 0, 0};
  compare(&p, "weighted A x B, periodic");
  /* within 0 with weights: the pairs of equal points */
  histd_dataset d;
  histd_dataset_alloc(&d, 6, NULL, 0);
  histd_dataset_alloc_weights(&d, NULL, 0);
  for (int i = 0; i < 6; i++) {
    d.x[i] = d.y[i] = d.z[i] = i % 2;
    d.w[i] = i + 1;
  }
  histd_dataset_finish(&d, NULL, 0);
  histd_problem q = problem(&d, NULL, OPEN, (histd_bins){0, 0, 0, NULL, 0, 0});
  q.statistic = HISTD_STAT_WITHIN;
  q.weighted = true;
  histd_exec ex;
  histd_exec_init(&ex);
  histd_result r;
  CHECK(histd_run(&q, &ex, NULL, &r, NULL, 0) == 0, "weighted collisions");
  /* groups {1,3,5} and {2,4,6}: 1*3+1*5+3*5 + 2*4+2*6+4*6 = 23 + 44 */
  CHECK(r.within == 6 && r.weighted[0] == 67, "weighted collisions: %" PRIu64 " pairs, %g",
        r.within, r.weighted[0]);
  histd_result_free(&r);
  histd_dataset_free(&d);
  histd_dataset_free(&a);
  histd_dataset_free(&b);
}

/* A x B with B = A: n^2 pairs, each i-j pair twice and n zero distances. */
static void test_cross_self(void) {
  histd_dataset a = points(200, 100, 100, 100, false);
  histd_bins bins = {HISTD_BINS_WIDTH, 20, 10, NULL, 0, 0};
  histd_problem self = problem(&a, NULL, OPEN, bins), cross = problem(&a, &a, OPEN, bins);
  compare(&cross, "A x A");
  histd_exec ex;
  histd_exec_init(&ex);
  histd_result rs, rc;
  CHECK(histd_run(&self, &ex, NULL, &rs, NULL, 0) == 0 && histd_run(&cross, &ex, NULL, &rc, NULL, 0) == 0,
        "runs");
  CHECK_EQ_U64(rc.total, 200 * 200, "A x A has n^2 pairs");
  for (uint32_t k = 0; k < 20; k++)
    CHECK_EQ_U64(rc.counts[k], 2 * rs.counts[k] + (k == 0 ? 200 : 0), "A x A = 2 self + n zeros");
  histd_result_free(&rs);
  histd_result_free(&rc);
  histd_dataset_free(&a);
}

static void expect_refused(const histd_problem *p, const char *kernel, const char *needle) {
  histd_exec ex;
  histd_exec_init(&ex);
  snprintf(ex.kernel, sizeof ex.kernel, "%s", kernel);
  histd_result r;
  char msg[256] = "";
  CHECK(histd_run(p, &ex, NULL, &r, msg, sizeof msg) < 0, "refused: %s", needle);
  CHECK_STR_CONTAINS(msg, needle);
}

static void test_refusals(void) {
  histd_dataset a = points(10, 10, 10, 10, false);
  histd_box box = {HISTD_BOX_ORTHO, 10, 0, 12, 0, 0, 9};
  histd_problem p = problem(&a, NULL, box, (histd_bins){HISTD_BINS_WIDTH, 10, 0.5, NULL, 0, 0});
  expect_refused(&p, "cpu", "exceeds half the periodic box's shortest perpendicular width, 4.5");
  p.bins.count = 9; /* r_max = 4.5, exactly half: allowed */
  histd_exec ex;
  histd_exec_init(&ex);
  histd_result r;
  CHECK(histd_run(&p, &ex, NULL, &r, NULL, 0) == 0, "r_max = half the box is allowed");
  histd_result_free(&r);
  p.box.bx = 9; /* a strong tilt narrows the box */
  p.box.kind = HISTD_BOX_TRICLINIC;
  expect_refused(&p, "cpu", "exceeds half");
  p.box = box;
  p.box.ax = -1;
  expect_refused(&p, "cpu", "x length must be a finite number > 0");
  p = problem(&a, NULL, OPEN, (histd_bins){HISTD_BINS_WIDTH, 10, 1, NULL, 0, 0});
  p.weighted = true;
  expect_refused(&p, "cpu", "the points (A) carry none");
  const double bad[] = {0, 2, 2};
  p = problem(&a, NULL, OPEN, (histd_bins){HISTD_BINS_EDGES, 2, 0, bad, 0, 0});
  expect_refused(&p, "cpu", "edges must ascend strictly");
  p = problem(&a, NULL, box, (histd_bins){HISTD_BINS_WIDTH, 4, 1, NULL, 0, 0});
  int gpu = -1;
  for (size_t i = 0; i < histd_kernel_count(); i++)
    if (histd_kernel_at(i)->engine == HISTD_ENGINE_CUDA && gpu < 0)
      gpu = (int)i;
  CHECK(gpu >= 0, "the GPU kernels are in the registry, CUDA or not");
  if (gpu >= 0)
    expect_refused(&p, histd_kernel_at((size_t)gpu)->name,
                   "cannot compute periodic boxes; kernels that can: auto, grid, dm-tree, cpu-reference, cpu");
  histd_dataset_free(&a);
}

/* Distances that are multiples of the width as doubles compute them:
 * points k * 0.1 on a line, width 0.1. Many quotients d / w then round to
 * within an ulp of an integer, where d * (1 / w) and d / w can floor
 * differently (0.3 / 0.1 = 2.9999999999999996, 0.3 * 10 = 3); the
 * contract is the division. Open, and in a periodic box. */
static void test_width_on_multiples(void) {
  histd_dataset ds;
  histd_dataset_alloc(&ds, 60, NULL, 0);
  for (size_t k = 0; k < 60; k++) {
    ds.x[k] = (double)k * 0.1;
    ds.y[k] = 0;
    ds.z[k] = k % 2 ? 0.3 : 0;
  }
  histd_dataset_finish(&ds, NULL, 0);
  histd_problem p = problem(&ds, NULL, OPEN, (histd_bins){HISTD_BINS_WIDTH, 70, 0.1, NULL, 0, 0});
  compare(&p, "width 0.1, multiples of 0.1");
  const histd_box box = {HISTD_BOX_ORTHO, 6.0, 0, 6.0, 0, 0, 6.0};
  p = problem(&ds, NULL, box, (histd_bins){HISTD_BINS_WIDTH, 30, 0.1, NULL, 0, 0});
  compare(&p, "width 0.1, multiples of 0.1, periodic 6");
  histd_dataset_free(&ds);
}

/* The GPU's tiled-stats on what small sets do not reach: several tiles
 * and launches with partial last tiles, every block size, far-from-origin
 * points, a histogram of 40,000 bins, and a weighted one too large for
 * shared memory (refused; "auto" runs it on the CPU). */
static void test_gpu_paths(void) {
  int gpus = 0;
  histd_device_info info;
  if (histd_devices(&info, 1, &gpus, NULL, 0) != 0 || gpus == 0) {
    printf("test_gpu_paths: no GPU here, skipped\n");
    return;
  }
  const histd_box tri = {HISTD_BOX_TRICLINIC, 20, 4.5, 21, -3.5, 2, 19.5};
  histd_dataset a = points(1500, 20, 21, 19.5, true), b = points(1100, 20, 21, 19.5, true);
  double half = histd_box_half_width(&tri);
  double edges[201];
  CHECK(histd_log_edges(half / 1000, half, 200, edges, NULL, 0) == 0, "log edges");
  static const uint32_t blocks[] = {32, 64, 128, 256, 1024};
  for (int bi = 0; bi < 5; bi++)
    for (int weighted = 0; weighted < 2; weighted++) {
      if (weighted && blocks[bi] > 128)
        continue;
      for (int cross = 0; cross < 2; cross++) {
        histd_problem p = problem(&a, cross ? &b : NULL, tri,
                                  (histd_bins){HISTD_BINS_EDGES, 200, 0, edges, 0, 0});
        p.weighted = weighted;
        want h;
        definition(&p, &h);
        histd_exec ex;
        histd_exec_init(&ex);
        snprintf(ex.kernel, sizeof ex.kernel, "tiled-stats");
        ex.block_size = blocks[bi];
        histd_result r;
        char msg[256] = "";
        CHECK(histd_run(&p, &ex, NULL, &r, msg, sizeof msg) == 0, "%s", msg);
        int bad = 0;
        for (uint32_t k = 0; k < 200; k++) {
          if (r.counts[k] != h.counts[k] && bad++ < 3)
            CHECK(0, "block %u %s%s: bin %u has %" PRIu64 ", want %" PRIu64, blocks[bi],
                  cross ? "A x B" : "self", weighted ? " weighted" : "", k, r.counts[k],
                  h.counts[k]);
          if (weighted)
            CHECK(fabsl((long double)r.weighted[k] - h.sum[k]) <= 1e-12L * h.abs[k] + 1e-300L,
                  "block %u: bin %u weighted %.17g, want %.17Lg", blocks[bi], k,
                  r.weighted[k], h.sum[k]);
        }
        CHECK_EQ_U64(r.below, h.below, "below");
        CHECK_EQ_U64(r.overflow, h.over, "overflow");
        histd_result_free(&r);
      }
    }
  /* far from the origin, 40,000 bins: binary64 (float32 pairs' tables
   * hold at most STATS_F32_TABLE entries), the counts in one 32-bit column
   * a block (test_bins2's many_slots has a job whose counts fit nowhere) */
  histd_dataset far = points(2500, 50, 50, 50, true);
  for (size_t i = 0; i < far.n; i++)
    far.x[i] += 1e7, far.y[i] -= 3e6;
  histd_dataset_finish(&far, NULL, 0);
  histd_problem p = problem(&far, NULL, OPEN, (histd_bins){HISTD_BINS_WIDTH, 40000, 0.002, NULL, 0, 0});
  def_hist d = definition_histogram(far.x, far.y, far.z, far.n, 0.002, 40000);
  histd_exec ex;
  histd_exec_init(&ex);
  snprintf(ex.kernel, sizeof ex.kernel, "tiled-stats");
  histd_result r;
  char msg[256] = "";
  CHECK(histd_run(&p, &ex, NULL, &r, msg, sizeof msg) == 0, "%s", msg);
  int bad = 0;
  for (uint32_t k = 0; k < 40000; k++)
    if (r.counts[k] != d.counts[k] && bad++ < 3)
      CHECK(0, "40,000 bins: bin %u has %" PRIu64 ", want %" PRIu64, k, r.counts[k],
            d.counts[k]);
  CHECK_EQ_U64(r.overflow, d.overflow, "40,000 bins: overflow");
  histd_result_free(&r);
  free(d.counts);
  p.weighted = true;
  expect_refused(&p, "tiled-stats", "a weighted histogram on the GPU holds at most");
  snprintf(ex.kernel, sizeof ex.kernel, "auto");
  CHECK(histd_run(&p, &ex, NULL, &r, msg, sizeof msg) == 0, "%s", msg);
  CHECK(strcmp(r.kernel, "cpu") == 0, "auto ran a too-large weighted job on %s", r.kernel);
  histd_result_free(&r);
  histd_dataset_free(&far);
  histd_dataset_free(&a);
  histd_dataset_free(&b);
}

/* ---- the float32 fast paths' hard spots ------------------------------------ */

/* n points on the 1/16 grid of [0, 8)^3, each coordinate then moved by one
 * of 0, +-2^-40, +-2^-20 (exact: shifting them by whole multiples of 8 up
 * to 32 stays exact), so that many distances fall exactly on the edges
 * k/16 or a hair (far below float32's resolution) beside them; and pairs
 * placed |dx| = 4 = L/2 apart, exactly and 2^-40 either side. */
static const double HAIR[5] = {0, 0x1p-40, -0x1p-40, 0x1p-20, -0x1p-20};

static double grid16(void) { return floor(rnd() * 128) / 16; }

static histd_dataset hard_points(size_t n, bool weights, bool ulps) {
  histd_dataset ds;
  histd_dataset_alloc(&ds, n, NULL, 0);
  if (weights)
    histd_dataset_alloc_weights(&ds, NULL, 0);
  double *c[3] = {ds.x, ds.y, ds.z};
  for (size_t i = 0; i < n; i++) {
    for (int a = 0; a < 3; a++) {
      double v = grid16() + HAIR[(size_t)(rnd() * 5)];
      if (ulps && rnd() < 0.3) /* one ulp either side (not shift-exact) */
        v = nextafter(v, rnd() < 0.5 ? -INFINITY : INFINITY);
      c[a][i] = v < 0 ? v + 8 : v >= 8 ? v - 8 : v;
    }
    if (i % 4 == 1) { /* |dx| = L/2 from the previous point, +- a hair */
      ds.x[i] = ds.x[i - 1] + 4 + HAIR[i % 3];
      ds.y[i] = ds.y[i - 1];
      ds.z[i] = ds.z[i - 1] + (i % 8 == 1 ? 0 : 0.25);
    } else if (i % 4 == 2) { /* 3-4-5: a distance of exactly 5/16 */
      ds.x[i] = ds.x[i - 2] + 3.0 / 16;
      ds.y[i] = ds.y[i - 2] + 4.0 / 16;
      ds.z[i] = ds.z[i - 2];
    }
    if (weights)
      ds.w[i] = rnd() * 4 - 1;
  }
  histd_dataset_finish(&ds, NULL, 0);
  return ds;
}

/* The same points moved by whole box lengths: +-8, 16, 24 per axis. */
static histd_dataset unwrap(const histd_dataset *a) {
  histd_dataset u;
  histd_dataset_alloc(&u, a->n, NULL, 0);
  for (size_t i = 0; i < a->n; i++) {
    u.x[i] = a->x[i] + 8 * (double)((int)(i % 7) - 3);
    u.y[i] = a->y[i] - 8 * (double)(i % 4);
    u.z[i] = a->z[i] + 8 * (double)(i % 3);
  }
  histd_dataset_finish(&u, NULL, 0);
  return u;
}

static void same_counts(const histd_problem *pa, const histd_problem *pu, const char *what) {
  static const uint32_t threads[] = {1, 2, 3};
  for (int t = 0; t < 3; t++) {
    histd_exec ex;
    histd_exec_init(&ex);
    snprintf(ex.kernel, sizeof ex.kernel, "cpu");
    ex.threads = threads[t];
    histd_result ra, ru;
    char msg[256] = "";
    int rc = histd_run(pa, &ex, NULL, &ra, msg, sizeof msg);
    CHECK(rc == 0, "%s: %s", what, msg);
    if (rc != 0)
      continue;
    rc = histd_run(pu, &ex, NULL, &ru, msg, sizeof msg);
    CHECK(rc == 0, "%s: %s", what, msg);
    if (rc == 0) {
      CHECK(memcmp(ra.counts, ru.counts, ra.bins.count * sizeof *ra.counts) == 0 &&
                ra.overflow == ru.overflow && ra.below == ru.below,
            "%s: wrapped and unwrapped give identical counts (%u threads)", what, threads[t]);
      histd_result_free(&ru);
    }
    histd_result_free(&ra);
  }
}

static void test_fast_periodic_hard(void) {
  const histd_box cube = {HISTD_BOX_ORTHO, 8, 0, 8, 0, 0, 8};
  const histd_box rect = {HISTD_BOX_ORTHO, 8, 0, 10, 0, 0, 9};
  histd_dataset a = hard_points(600, true, true), b = hard_points(300, true, true);
  double sixteenths[65], logs[41];
  for (int k = 0; k <= 64; k++)
    sixteenths[k] = k / 16.0;
  histd_log_edges(1.0 / 16, 4, 40, logs, NULL, 0);
  const histd_bins width = {HISTD_BINS_WIDTH, 64, 1.0 / 16, NULL, 0, 0}; /* r_max = 4 = L/2 */
  const histd_bins explicit = {HISTD_BINS_EDGES, 64, 0, sixteenths, 0, 0};
  const histd_bins logbins = {HISTD_BINS_EDGES, 40, 0, logs, 0, 0};
  const histd_bins *bins[3] = {&width, &explicit, &logbins};
  const char *names[3] = {"width", "explicit edges", "log edges"};
  char what[128];
  for (int k = 0; k < 3; k++)
    for (int box = 0; box < 2; box++)
      for (int cross = 0; cross < 2; cross++)
        for (int w = 0; w < 2; w++) {
          histd_problem p = problem(&a, cross ? &b : NULL, box ? rect : cube, *bins[k]);
          p.weighted = w;
          snprintf(what, sizeof what, "hard spots, periodic %s, %s, %s%s", box ? "8x10x9" : "cube",
                   names[k], cross ? "A x B" : "self", w ? ", weighted" : "");
          compare_fast(&p, what, true);
        }
  histd_dataset_free(&a);
  histd_dataset_free(&b);
}

static void test_fast_unwrapped_hard(void) {
  const histd_box cube = {HISTD_BOX_ORTHO, 8, 0, 8, 0, 0, 8};
  histd_dataset a = hard_points(700, false, false), b = hard_points(400, false, false);
  histd_dataset ua = unwrap(&a), ub = unwrap(&b);
  double logs[41];
  histd_log_edges(1.0 / 16, 4, 40, logs, NULL, 0);
  const histd_bins width = {HISTD_BINS_WIDTH, 64, 1.0 / 16, NULL, 0, 0};
  const histd_bins logbins = {HISTD_BINS_EDGES, 40, 0, logs, 0, 0};
  for (int k = 0; k < 2; k++) {
    histd_problem pa = problem(&a, NULL, cube, k ? logbins : width);
    histd_problem pu = problem(&ua, NULL, cube, k ? logbins : width);
    compare_fast(&pu, k ? "unwrapped hard spots, log edges" : "unwrapped hard spots", true);
    same_counts(&pa, &pu, k ? "hard spots self, log edges" : "hard spots self");
    pa.b = &b;
    pu.b = &ub;
    same_counts(&pa, &pu, k ? "hard spots A x B, log edges" : "hard spots A x B");
  }
  histd_dataset_free(&a);
  histd_dataset_free(&b);
  histd_dataset_free(&ua);
  histd_dataset_free(&ub);
}

/* Open space: points on the x axis at every log edge and an ulp either
 * side, others off the axis; distances exactly on edges and an ulp from
 * them. Self and A x B, weighted against the long-double sums. */
static void test_fast_open_edges_hard(void) {
  double logs[33];
  histd_log_edges(0.1, 50, 32, logs, NULL, 0);
  histd_dataset a, b;
  histd_dataset_alloc(&a, 33 * 3 + 40, NULL, 0);
  histd_dataset_alloc_weights(&a, NULL, 0);
  size_t n = 0;
  for (int k = 0; k <= 32; k++)
    for (int s = -1; s <= 1; s++, n++) {
      a.x[n] = s == 0 ? logs[k] : nextafter(logs[k], s * INFINITY);
      a.y[n] = a.z[n] = 0;
      a.w[n] = rnd() * 2 - 0.5;
    }
  for (; n < a.n; n++) { /* on the y axis at edges: sqrt(E_i^2 + E_j^2) */
    a.x[n] = 0;
    a.y[n] = logs[(n * 7) % 33];
    a.z[n] = n % 3 ? 0 : logs[(n * 5) % 33];
    a.w[n] = rnd() * 2 - 0.5;
  }
  histd_dataset_finish(&a, NULL, 0);
  histd_dataset_alloc(&b, 3, NULL, 0); /* the origin, an edge, an ulp below one */
  histd_dataset_alloc_weights(&b, NULL, 0);
  b.x[0] = b.y[0] = b.z[0] = 0;
  b.x[1] = logs[10], b.y[1] = b.z[1] = 0;
  b.x[2] = 0, b.y[2] = nextafter(logs[20], 0), b.z[2] = 0;
  b.w[0] = 1, b.w[1] = -2, b.w[2] = 0.5;
  histd_dataset_finish(&b, NULL, 0);
  histd_problem p = problem(&a, NULL, OPEN, (histd_bins){HISTD_BINS_EDGES, 32, 0, logs, 0, 0});
  for (int w = 0; w < 2; w++) {
    p.weighted = w;
    p.b = NULL;
    compare_fast(&p, w ? "open log edges on and beside edges, weighted" : "open log edges on and beside edges", true);
    p.b = &b;
    compare_fast(&p, w ? "open log edges A x B, weighted" : "open log edges A x B", true);
  }
  histd_dataset_free(&a);
  histd_dataset_free(&b);
}

/* Weights over many tiles (rows folded, threads merged) against long
 * double: 2,500 x 1,800 points, open and periodic, log edges. */
static void test_fast_weights_many(void) {
  histd_dataset a = points(2500, 30, 30, 30, true), b = points(1800, 30, 30, 30, true);
  double edges[25];
  histd_log_edges(0.3, 15, 24, edges, NULL, 0);
  histd_problem p = problem(&a, &b, OPEN, (histd_bins){HISTD_BINS_EDGES, 24, 0, edges, 0, 0});
  p.weighted = true;
  compare_fast(&p, "weighted A x B over many tiles, log edges", true);
  p.box = (histd_box){HISTD_BOX_ORTHO, 30, 0, 30, 0, 0, 30};
  p.b = NULL;
  compare_fast(&p, "weighted periodic self over many tiles, log edges", true);
  histd_dataset_free(&a);
  histd_dataset_free(&b);
}

/* The cpu kernel's weights in groups (cpu.c's "Groups": open space,
 * thresholds in s, the points in Morton order): a weighted integer lattice
 * whose distances sit on the integer edges (width 1 and explicit edges),
 * self and against a shifted copy, over several tiles; bins far narrower
 * than a group (the records take those group pairs); a clump far from the
 * origin in a sparse background. Against the definition, and "cpu" must
 * say it took the groups (AVX-512). */
static void test_fast_weights_groups(void) {
  histd_dataset lat, shifted;
  const int n = 11; /* 1,331 points: two tiles */
  histd_dataset_alloc(&lat, (size_t)n * n * n, NULL, 0);
  histd_dataset_alloc_weights(&lat, NULL, 0);
  histd_dataset_alloc(&shifted, 700, NULL, 0);
  histd_dataset_alloc_weights(&shifted, NULL, 0);
  for (size_t i = 0; i < lat.n; i++) {
    lat.x[i] = (double)(i % n);
    lat.y[i] = (double)(i / n % n);
    lat.z[i] = (double)(i / n / n);
    lat.w[i] = rnd() * 3 - 1;
  }
  for (size_t i = 0; i < shifted.n; i++) { /* lattice points moved by (0.5, 0, 12) */
    shifted.x[i] = (double)(i % 9) + 0.5;
    shifted.y[i] = (double)(i / 9 % 9);
    shifted.z[i] = (double)(i / 81) + 12;
    shifted.w[i] = rnd() * 2 - 0.5;
  }
  histd_dataset_finish(&lat, NULL, 0);
  histd_dataset_finish(&shifted, NULL, 0);
  double ints[31];
  for (int k = 0; k <= 30; k++)
    ints[k] = k;
  const histd_bins width = {HISTD_BINS_WIDTH, 25, 1, NULL, 0, 0};
  const histd_bins explicit = {HISTD_BINS_EDGES, 30, 0, ints, 0, 0};
  char what[128];
  for (int k = 0; k < 2; k++)
    for (int cross = 0; cross < 2; cross++) {
      histd_problem p = problem(&lat, cross ? &shifted : NULL, OPEN, k ? explicit : width);
      p.weighted = true;
      snprintf(what, sizeof what, "weighted lattice on %s, %s", k ? "integer edges" : "width 1",
               cross ? "A x B" : "self");
      compare_groups(&p, what);
    }
  /* narrow bins: 2,000 points in the 10 cube, 200 bins of 0.05 */
  histd_dataset dense = points(2000, 10, 10, 10, true);
  histd_problem p = problem(&dense, NULL, OPEN, (histd_bins){HISTD_BINS_WIDTH, 200, 0.05, NULL, 0, 0});
  p.weighted = true;
  compare_groups(&p, "weighted, bins far narrower than a group");
  /* a clump near (1e4, 1e4, 1e4) in a sparse background, log edges */
  histd_dataset mix = points(1500, 2e4, 2e4, 2e4, true);
  for (size_t i = 0; i < 900; i++) {
    mix.x[i] = 1e4 + rnd();
    mix.y[i] = 1e4 + rnd();
    mix.z[i] = 1e4 + rnd();
  }
  histd_dataset_finish(&mix, NULL, 0);
  double logs[41];
  histd_log_edges(1e-3, 3e4, 40, logs, NULL, 0);
  p = problem(&mix, &dense, OPEN, (histd_bins){HISTD_BINS_EDGES, 40, 0, logs, 0, 0});
  p.weighted = true;
  compare_groups(&p, "weighted, a clump far out against a dense cube, log edges");
  p.b = NULL;
  compare_groups(&p, "weighted, a clump far out in a sparse background, log edges");
  histd_dataset_free(&lat);
  histd_dataset_free(&shifted);
  histd_dataset_free(&dense);
  histd_dataset_free(&mix);
}

/* The cpu kernel's log-bin estimate (cpu.c's CPU_K_LOG bound): log edges
 * of several shapes (one bin, 80 over six decades, 1,000 narrow ones, a
 * first edge far below the points' spread), points on a ray through every
 * edge and an ulp either side plus random ones, self and A x B, weighted,
 * open and periodic, and duplicates (distance 0), against the definition;
 * and the cpu kernel must have taken the estimate (AVX-512), while edges
 * that are not log-spaced take the table. */
static void test_fast_log_estimate(void) {
  const struct {
    double r_min, r_max;
    uint32_t count;
    double side;
  } cases[] = {{0.1, 23000, 80, 2300}, {1e-3, 1, 1, 1.5}, {0.5, 40, 250, 30}, {2, 3, 7, 6},
               {1e-6, 7, 33, 9}};
  char what[160];
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const uint32_t count = cases[c].count;
    double *edges = malloc((count + 1) * sizeof *edges);
    histd_log_edges(cases[c].r_min, cases[c].r_max, count, edges, NULL, 0);
    const size_t ray = count + 1 < 60 ? count + 1 : 60;
    histd_dataset a, b = points(150, cases[c].side, cases[c].side, cases[c].side, true);
    histd_dataset_alloc(&a, 3 * ray + 400, NULL, 0);
    histd_dataset_alloc_weights(&a, NULL, 0);
    size_t n = 0;
    for (size_t e = 0; e < ray; e++) /* edges (a spread of them) on the x axis from 0 */
      for (int sgn = -1; sgn <= 1; sgn++, n++) {
        const double x = edges[e * count / (ray - 1 > 0 ? ray - 1 : 1)];
        a.x[n] = sgn == 0 ? x : nextafter(x, sgn * INFINITY);
        a.y[n] = a.z[n] = 0;
        a.w[n] = rnd() * 2 - 0.5;
      }
    for (; n < a.n; n++) {
      const bool dup = n % 10 == 0 && n > 3 * ray; /* a copy of the point before */
      a.x[n] = dup ? a.x[n - 1] : rnd() * cases[c].side;
      a.y[n] = dup ? a.y[n - 1] : rnd() * cases[c].side;
      a.z[n] = dup ? a.z[n - 1] : rnd() * cases[c].side;
      a.w[n] = rnd() * 2 - 0.5;
    }
    histd_dataset_finish(&a, NULL, 0);
    const double l = fmax(cases[c].side * 2.2, cases[c].r_max * 2.2); /* r_max < L / 2 */
    const histd_box boxes[2] = {OPEN, {HISTD_BOX_ORTHO, l, 0, l * 1.1, 0, 0, l * 0.95}};
    for (int bx = 0; bx < 2; bx++)
      for (int cross = 0; cross < 2; cross++)
        for (int w = 0; w < 2; w++) {
          histd_problem p = problem(&a, cross ? &b : NULL, boxes[bx],
                                    (histd_bins){HISTD_BINS_EDGES, count, 0, edges, 0, 0});
          p.weighted = w;
          snprintf(what, sizeof what, "log estimate, %u bins %g..%g, %s, %s%s", count,
                   cases[c].r_min, cases[c].r_max, bx ? "periodic" : "open",
                   cross ? "A x B" : "self", w ? ", weighted" : "");
          compare_fast(&p, what, true);
          histd_result r;
          if (fast_statistics() && run_on(&p, "cpu", 2, &r, what) == 0) {
            CHECK(strstr(r.device, "log-bin estimate") != NULL, "%s: cpu took it (%s)", what,
                  r.device);
            histd_result_free(&r);
          }
        }
    histd_dataset_free(&a);
    histd_dataset_free(&b);
    free(edges);
  }
  /* edges that are not log-spaced: the table */
  double uneven[5] = {0.5, 1, 1.2, 3, 7};
  histd_dataset a = points(300, 5, 5, 5, false);
  histd_problem p = problem(&a, NULL, OPEN, (histd_bins){HISTD_BINS_EDGES, 4, 0, uneven, 0, 0});
  compare_fast(&p, "uneven edges", true);
  histd_result r;
  if (fast_statistics() && run_on(&p, "cpu", 1, &r, "uneven edges") == 0) {
    CHECK(strstr(r.device, "edge table") != NULL, "uneven edges take the table (%s)", r.device);
    histd_result_free(&r);
  }
  histd_dataset_free(&a);
}

/* ---- several frames ------------------------------------------------------------- */

/* Frames of n[f] random points in boxes[f] (weighted), one after another. */
static histd_dataset frames_of(size_t frames, const size_t *n, const histd_box *boxes) {
  size_t total = 0;
  for (size_t f = 0; f < frames; f++)
    total += n[f];
  histd_dataset ds;
  histd_dataset_alloc(&ds, total, NULL, 0);
  histd_dataset_alloc_weights(&ds, NULL, 0);
  for (size_t f = 0, i = 0; f < frames; f++)
    for (size_t k = 0; k < n[f]; k++, i++) {
      ds.x[i] = rnd() * boxes[f].ax * 1.3 - 1; /* some outside the box: unwrapped */
      ds.y[i] = rnd() * boxes[f].by;
      ds.z[i] = rnd() * boxes[f].cz;
      ds.w[i] = rnd() * 2 - 0.5;
    }
  histd_dataset_finish(&ds, NULL, 0);
  CHECK(histd_dataset_set_frames(&ds, frames, n, boxes, NULL, 0) == 0, "set frames");
  return ds;
}

/* A one-frame copy of frame f's points (the definition's operand). */
static histd_dataset copy_frame(const histd_dataset *ds, size_t f) {
  const histd_frame *fr = &ds->frame[f];
  histd_dataset c;
  histd_dataset_alloc(&c, fr->n, NULL, 0);
  histd_dataset_alloc_weights(&c, NULL, 0);
  memcpy(c.x, ds->x + fr->start, fr->n * sizeof(double));
  memcpy(c.y, ds->y + fr->start, fr->n * sizeof(double));
  memcpy(c.z, ds->z + fr->start, fr->n * sizeof(double));
  memcpy(c.w, ds->w + fr->start, fr->n * sizeof(double));
  histd_dataset_finish(&c, NULL, 0);
  c.box = fr->box;
  return c;
}

/* Runs p (several frames) on cpu-reference, cpu, auto, grid and dm-tree;
 * checks its
 * counts, weighted sums, g and coordination against the frames' definitions. */
static void compare_frames(const histd_problem *p, size_t frames, const char *what) {
  want sum, h;
  memset(&sum, 0, sizeof sum);
  long double density = 0; /* sum_f P_f / V_f */
  uint64_t pairs = 0, atoms = 0;
  for (size_t f = 0; f < frames; f++) {
    histd_dataset a = copy_frame(p->a, f), b;
    histd_problem pf = *p;
    pf.a = &a;
    pf.frame_boxes = false;
    if (p->frame_boxes)
      pf.box = a.box;
    if (p->b != NULL) {
      b = p->b->frame != NULL ? copy_frame(p->b, f) : *p->b;
      pf.b = &b;
    }
    definition(&pf, &h);
    for (uint32_t k = 0; k < 256; k++) {
      sum.counts[k] += h.counts[k];
      sum.sum[k] += h.sum[k];
      sum.abs[k] += h.abs[k];
    }
    sum.below += h.below;
    sum.over += h.over;
    uint64_t pf_pairs = p->b ? (uint64_t)a.n * pf.b->n : (uint64_t)a.n * (a.n - 1) / 2;
    pairs += pf_pairs;
    atoms += a.n;
    density += (long double)pf_pairs / ((long double)pf.box.ax * pf.box.by * pf.box.cz);
    histd_dataset_free(&a);
    if (p->b != NULL && p->b->frame != NULL)
      histd_dataset_free(&b);
  }
  /* auto and grid run on the GPU where there is one: frame after frame, the
   * next one's copy overlapping (worker.c's prefetch) */
  static const char *const kernels[] = {"cpu-reference", "cpu", "auto", "grid",
                                        "dm-tree", "cpu in 5 shards"};
  for (int k = 0; k < 6; k++) {
    histd_result r;
    if (k == 5 ? run_sharded(p, "cpu", 5, &r, what) != 0 : run_on(p, kernels[k], 2, &r, what) != 0)
      continue;
    CHECK_EQ_U64(r.frames, frames, what);
    CHECK_EQ_U64(r.total, pairs, what);
    CHECK_EQ_U64(r.below, sum.below, what);
    CHECK_EQ_U64(r.overflow, sum.over, what);
    uint64_t cumulative = 0, mine = sum.below;
    for (uint32_t b = 0; b < r.bins.count; b++) {
      CHECK(r.counts[b] == sum.counts[b], "%s, %s: bin %u has %" PRIu64 ", want %" PRIu64,
            what, kernels[k], b, r.counts[b], sum.counts[b]);
      if (p->weighted) {
        long double err = fabsl((long double)r.weighted[b] - sum.sum[b]);
        CHECK(err <= 1e-12L * sum.abs[b] + 1e-300L, "%s: bin %u weighted %.17g, want %.17Lg",
              what, b, r.weighted[b], sum.sum[b]);
      }
      if (r.volume > 0) {
        double g, n;
        histd_result_rdf_bin(&r, b, &cumulative, &g, &n);
        long double lo = histd_bins_edge(&r.bins, b), hi = histd_bins_edge(&r.bins, b + 1);
        long double shell = 4.0L / 3.0L * 3.14159265358979323846L * (hi * hi * hi - lo * lo * lo);
        long double want_g = (long double)sum.counts[b] / (shell * density);
        mine += sum.counts[b];
        long double want_n = (p->b ? 1.0L : 2.0L) * mine / atoms;
        CHECK(fabsl(g - want_g) <= 1e-12L * fabsl(want_g), "%s: g[%u] %.17g, want %.17Lg", what,
              b, g, want_g);
        CHECK(fabsl(n - want_n) <= 1e-12L * fabsl(want_n), "%s: n[%u] %.17g, want %.17Lg", what,
              b, n, want_n);
      }
    }
    histd_result_free(&r);
  }
}

static void test_frames(void) {
  const size_t n[3] = {30, 45, 21};
  const histd_box boxes[3] = {{HISTD_BOX_ORTHO, 10, 0, 12, 0, 0, 9},
                              {HISTD_BOX_ORTHO, 11, 0, 11, 0, 0, 11},
                              {HISTD_BOX_TRICLINIC, 9.5, 1.5, 10, -1, 0.5, 10.5}};
  histd_dataset a = frames_of(3, n, boxes);
  CHECK_EQ_U64(histd_dataset_frames(&a), 3, "three frames");
  const histd_bins bins = {HISTD_BINS_WIDTH, 16, 0.25, NULL, 0, 0};
  histd_problem p = problem(&a, NULL, OPEN, bins);
  p.frame_boxes = true;
  p.weighted = true;
  compare_frames(&p, 3, "self, each frame in its own box");
  p.frame_boxes = false;
  p.box = (histd_box){HISTD_BOX_ORTHO, 10, 0, 10, 0, 0, 10};
  compare_frames(&p, 3, "self, the job's box for every frame");
  const size_t nb[3] = {12, 17, 9};
  histd_dataset b = frames_of(3, nb, boxes);
  p = problem(&a, &b, OPEN, bins);
  p.frame_boxes = true;
  p.weighted = true;
  compare_frames(&p, 3, "A x B, frame f with frame f");
  histd_dataset one = points(13, 10, 10, 10, true);
  p.b = &one;
  compare_frames(&p, 3, "A x B, B's one frame with every frame of A");
  const double edges[] = {0.5, 1, 2, 3.5};
  p = problem(&a, NULL, OPEN, (histd_bins){HISTD_BINS_EDGES, 3, 0, edges, 0, 0});
  p.frame_boxes = true;
  compare_frames(&p, 3, "explicit edges over frames");
  /* within R and collisions, summed over frames */
  p = problem(&a, NULL, OPEN, bins);
  p.statistic = HISTD_STAT_WITHIN;
  p.radius = 2.5;
  p.frame_boxes = true;
  histd_exec ex;
  histd_exec_init(&ex);
  histd_result r;
  char msg[256] = "";
  uint64_t want_within = 0;
  for (size_t f = 0; f < 3; f++) {
    histd_dataset c = copy_frame(&a, f);
    for (size_t i = 0; i < c.n; i++)
      for (size_t j = i + 1; j < c.n; j++)
        want_within += true_distance(&c.box, c.x[i] - c.x[j], c.y[i] - c.y[j], c.z[i] - c.z[j]) <= 2.5;
    histd_dataset_free(&c);
  }
  CHECK(histd_run(&p, &ex, NULL, &r, msg, sizeof msg) == 0, "within over frames: %s", msg);
  CHECK_EQ_U64(r.within, want_within, "within 2.5, summed over frames");
  histd_result_free(&r);
  /* frames with duplicates across them: collisions never pair frames */
  histd_dataset d;
  histd_dataset_alloc(&d, 6, NULL, 0);
  for (size_t i = 0; i < 6; i++)
    d.x[i] = d.y[i] = d.z[i] = (double)(i % 2); /* 0 1 0 | 1 0 1 */
  histd_dataset_finish(&d, NULL, 0);
  const size_t three[2] = {3, 3};
  CHECK(histd_dataset_set_frames(&d, 2, three, NULL, NULL, 0) == 0, "two open frames");
  p = problem(&d, NULL, OPEN, bins);
  p.statistic = HISTD_STAT_WITHIN;
  p.radius = 0;
  CHECK(histd_run(&p, &ex, NULL, &r, msg, sizeof msg) == 0, "collisions over frames: %s", msg);
  CHECK_EQ_U64(r.within, 2, "one collision in each frame, none across");
  CHECK_EQ_U64(r.total, 6, "3 pairs a frame");
  histd_result_free(&r);
  /* refusals */
  const size_t two[2] = {40, 56};
  histd_dataset b2 = frames_of(2, two, boxes);
  p = problem(&a, &b2, boxes[0], bins);
  expect_refused(&p, "cpu", "A has 3 frames and B 2");
  p = problem(&one, &a, boxes[0], bins);
  expect_refused(&p, "cpu", "has 3 frames and the first (A) one");
  p = problem(&a, NULL, OPEN, (histd_bins){HISTD_BINS_WIDTH, 19, 0.25, NULL, 0, 0});
  p.frame_boxes = true; /* 4.75: beyond frame 1's half width 4.5 */
  expect_refused(&p, "cpu", "(frame 1's, from the file)");
  histd_box mixed[2] = {boxes[0], OPEN};
  CHECK(histd_dataset_set_frames(&d, 2, three, mixed, NULL, 0) == 0, "mixed boxes");
  p = problem(&d, NULL, OPEN, bins);
  p.frame_boxes = true;
  expect_refused(&p, "cpu", "frame 2 has no periodic box and frame 1 has one");
  CHECK(histd_dataset_set_frames(&d, 2, two, NULL, msg, sizeof msg) != 0, "counts != n");
  CHECK_STR_CONTAINS(msg, "the frames hold more points than the dataset's 6");
  histd_dataset_free(&d);
  histd_dataset_free(&b2);
  histd_dataset_free(&one);
  histd_dataset_free(&b);
  histd_dataset_free(&a);
}

/* ---- the grid ------------------------------------------------------------------ */

/* Is there a GPU, so that "auto" runs there? */
static bool gpu_here(void) {
  histd_device_info dev[1];
  int count = 0;
  char msg[256];
  return histd_devices(dev, 1, &count, msg, sizeof msg) == 0 && count > 0;
}

/* Runs the problem on "grid" (1 and 3 threads, through kernels_for) and on
 * "auto" against the definition, and checks the grid really cut space into
 * cells (more than one: else it is brute force) and that "auto" took it
 * when `auto_grid`, with its reason. */
static void compare_grid(const histd_problem *p, const char *what, bool auto_grid) {
  compare(p, what);
  histd_result r;
  if (run_on(p, "grid", 0, &r, what) == 0) {
    unsigned nx = 0, ny = 0, nz = 0; /* the device names "NxNxN cells" */
    for (const char *c = r.device; *c != '\0' && nx == 0; c++)
      if (sscanf(c, "%ux%ux%u cells", &nx, &ny, &nz) != 3)
        nx = 0;
    CHECK((uint64_t)nx * ny * nz > 1, "%s: the grid has cells (%s)", what, r.device);
    histd_result_free(&r);
  }
  if (run_on(p, "auto", 0, &r, what) == 0) {
    CHECK(!auto_grid || strcmp(r.kernel, "grid") == 0, "%s: auto chose the grid (%s: %s)", what,
          r.kernel, r.reason);
    CHECK(strncmp(r.reason, auto_grid ? "grid: " : "brute force: ", auto_grid ? 6 : 13) == 0 ||
              !auto_grid,
          "%s: auto says why (%s)", what, r.reason);
    histd_result_free(&r);
  }
}

/* Pairs with d <= R, by the tests' own distance. */
static uint64_t within_want(const histd_problem *p, double radius) {
  const histd_dataset *a = p->a, *b = p->b ? p->b : p->a;
  uint64_t n = 0;
  for (size_t i = 0; i < a->n; i++)
    for (size_t j = p->b ? 0 : i + 1; j < b->n; j++) {
      double dx = a->x[i] - b->x[j], dy = a->y[i] - b->y[j], dz = a->z[i] - b->z[j];
      double d = p->box.kind == HISTD_BOX_ORTHO ? literal_distance(&p->box, dx, dy, dz)
                                                : true_distance(&p->box, dx, dy, dz);
      n += d <= radius;
    }
  return n;
}

static histd_dataset shifted(const histd_dataset *src, double by) {
  histd_dataset ds;
  histd_dataset_alloc(&ds, src->n, NULL, 0);
  for (size_t i = 0; i < src->n; i++)
    ds.x[i] = src->x[i] + by, ds.y[i] = src->y[i] - by, ds.z[i] = src->z[i] + by;
  histd_dataset_finish(&ds, NULL, 0);
  return ds;
}

/*
 * The grid against the definition: open, orthorhombic and triclinic sets
 * with r_max at 1%, 10% and 49% of the box (or the points' extent), self
 * and A x B (B also A), weights, log edges, within R; a cluster of
 * thousands of points in one cell among empty cells; points a million
 * box lengths from the origin (open and unwrapped periodic); a lattice
 * whose distances fall exactly on the edges and on r_max itself.
 */
static void test_grid(void) {
  const histd_box ortho = {HISTD_BOX_ORTHO, 40, 0, 40, 0, 0, 40};
  const histd_box tri = {HISTD_BOX_TRICLINIC, 40, 8, 38, -6, 5, 41};
  const histd_box *boxes[3] = {&OPEN, &ortho, &tri};
  const char *names[3] = {"open", "orthorhombic", "triclinic"};
  const double frac[3] = {0.01, 0.10, 0.49};
  char what[160];
  for (int bi = 0; bi < 3; bi++) {
    const size_t n = bi == 2 ? 700 : 2000; /* the triclinic definition tries 125 images */
    histd_dataset a = points(n, 40, 40, 40, true), b = points(n / 2, 40, 40, 40, true);
    const double span = bi == 0 ? 40 : 2 * histd_box_half_width(boxes[bi]);
    for (int fi = 0; fi < 3; fi++) {
      const double r_max = frac[fi] * span;
      histd_problem p = problem(&a, NULL, *boxes[bi],
                                (histd_bins){HISTD_BINS_WIDTH, 20, r_max / 20, NULL, 0, 0});
      /* 10% of an open 40: 9^3 cells pay too. On a GPU a grid gets at most n / 16
       * cells (grid.h: a warp's worth of points a cell), so the triclinic set's
       * 700 points make at most 43 cells, about 75% of the pairs: brute force
       * is then the right choice, and only the counts are checked */
      const bool pays = (fi == 0 || (fi == 1 && bi != 0)) && !(bi == 2 && gpu_here());
      snprintf(what, sizeof what, "grid %s self, r_max %.0f%%", names[bi], 100 * frac[fi]);
      compare_grid(&p, what, pays);
      p.b = &b;
      snprintf(what, sizeof what, "grid %s A x B, r_max %.0f%%", names[bi], 100 * frac[fi]);
      compare_grid(&p, what, pays);
      p.b = &a;
      snprintf(what, sizeof what, "grid %s A x A, r_max %.0f%%", names[bi], 100 * frac[fi]);
      compare(&p, what);
      if (fi == 1) {
        p.b = &b;
        p.weighted = true;
        snprintf(what, sizeof what, "grid %s weighted A x B", names[bi]);
        compare(&p, what);
        p.b = NULL;
        snprintf(what, sizeof what, "grid %s weighted self", names[bi]);
        compare(&p, what);
        p.weighted = false;
        double edges[17];
        histd_log_edges(r_max / 50, r_max, 16, edges, NULL, 0);
        p.bins = (histd_bins){HISTD_BINS_EDGES, 16, 0, edges, 0, 0};
        snprintf(what, sizeof what, "grid %s log edges", names[bi]);
        compare(&p, what);
        p.statistic = HISTD_STAT_WITHIN;
        p.radius = r_max / 2;
        uint64_t want = within_want(&p, p.radius);
        histd_result r;
        if (run_on(&p, "grid", 0, &r, "grid within") == 0) {
          CHECK(want > 0 && r.within == want, "grid %s within %g: %" PRIu64 ", want %" PRIu64,
                names[bi], p.radius, r.within, want);
          histd_result_free(&r);
        }
      }
    }
    histd_dataset_free(&a);
    histd_dataset_free(&b);
  }

  /* a cluster: 2500 points in one cell, 400 spread over many empty cells */
  histd_dataset cl;
  histd_dataset_alloc(&cl, 2900, NULL, 0);
  for (size_t i = 0; i < cl.n; i++) {
    double s = i < 2500 ? 0.5 : 40, o = i < 2500 ? 10 : 0;
    cl.x[i] = o + rnd() * s, cl.y[i] = o + rnd() * s, cl.z[i] = o + rnd() * s;
  }
  histd_dataset_finish(&cl, NULL, 0);
  for (int bi = 0; bi < 2; bi++) {
    histd_problem p = problem(&cl, NULL, *boxes[bi], (histd_bins){HISTD_BINS_WIDTH, 10, 0.2, NULL, 0, 0});
    snprintf(what, sizeof what, "grid %s, a cluster of 2500 in one cell", names[bi]);
    compare_grid(&p, what, true);
  }

  /* far from the origin: open at 1e6, periodic unwrapped by 25000 boxes */
  histd_dataset base = points(1500, 40, 40, 40, false);
  histd_dataset far = shifted(&base, 1e6);
  for (int bi = 0; bi < 2; bi++) {
    histd_problem p = problem(&far, NULL, *boxes[bi], (histd_bins){HISTD_BINS_WIDTH, 16, 0.25, NULL, 0, 0});
    snprintf(what, sizeof what, "grid %s, points 1e6 from the origin", names[bi]);
    compare_grid(&p, what, true);
  }
  histd_dataset_free(&base);
  histd_dataset_free(&far);

  /* a simple cubic lattice of spacing 1 in a periodic cube of 12 (and
   * open): distances 1, sqrt 2, sqrt 3 and 2 = r_max exactly */
  const int m = 12;
  histd_dataset lat;
  histd_dataset_alloc(&lat, (size_t)m * m * m, NULL, 0);
  for (int i = 0; i < m * m * m; i++)
    lat.x[i] = i % m, lat.y[i] = (i / m) % m, lat.z[i] = i / (m * m);
  histd_dataset_finish(&lat, NULL, 0);
  const histd_box cube = {HISTD_BOX_ORTHO, m, 0, m, 0, 0, m};
  const double on_edges[] = {0.5, 1, 1.5, 2};
  for (int bi = 0; bi < 2; bi++) {
    histd_problem p = problem(&lat, NULL, bi ? cube : OPEN, (histd_bins){HISTD_BINS_WIDTH, 4, 0.5, NULL, 0, 0});
    snprintf(what, sizeof what, "grid %s lattice, r_max = 2 on a shell", bi ? "periodic" : "open");
    compare_grid(&p, what, true);
    p.bins = (histd_bins){HISTD_BINS_EDGES, 3, 0, on_edges, 0, 0};
    snprintf(what, sizeof what, "grid %s lattice, edges on shells", bi ? "periodic" : "open");
    compare(&p, what);
  }
  histd_dataset_free(&lat);
  histd_dataset_free(&cl);
}

/* Every plan's shards hold every pair exactly once, and as many as
 * histd_shard_pairs says: pairs marked one by one here, self and A x B, for
 * sizes around the block boundaries and every shard count up to 30. */
static void test_shard_partition(void) {
  static unsigned char seen[40][40];
  for (size_t na = 0; na <= 23; na += (na < 5 ? 1 : 6))
    for (size_t nb = 0; nb <= 17; nb += (nb < 3 ? 1 : 7))
      for (uint64_t want = 1; want <= 30; want++) {
        histd_dataset a = points(na, 5, 5, 5, false), b = points(nb, 5, 5, 5, false);
        const bool self = nb == 0;
        histd_problem p = problem(&a, self ? NULL : &b, OPEN,
                                  (histd_bins){HISTD_BINS_WIDTH, 4, 1, NULL, 0, 0});
        histd_shard_plan plan;
        histd_shard_plan_make(&p, "cpu", want, &plan);
        CHECK(plan.count >= 1 && plan.count <= (want > 1 ? want : 1),
              "%zu x %zu in %llu shards: planned %llu", na, nb, (unsigned long long)want,
              (unsigned long long)plan.count);
        memset(seen, 0, sizeof seen);
        uint64_t held = 0;
        for (uint64_t s = 0; s < plan.count; s++) {
          histd_shard sh;
          histd_shard_get(&plan, s, &sh);
          held += histd_shard_pairs(&p, &sh);
          for (size_t i = sh.i0; i < sh.i1; i++)
            for (size_t j = sh.j0; j < sh.j1; j++)
              if (!self)
                seen[i][j]++;
              else if (i < j || (i != j && sh.i0 != sh.j0))
                seen[i < j ? i : j][i < j ? j : i]++;
        }
        uint64_t bad = 0;
        for (size_t i = 0; i < na; i++)
          for (size_t j = self ? i + 1 : 0; j < (self ? na : nb); j++)
            bad += seen[i][j] != 1;
        CHECK(bad == 0, "%zu x %zu, %llu shards: %llu pairs not held exactly once", na, nb,
              (unsigned long long)plan.count, (unsigned long long)bad);
        CHECK_EQ_U64(held, histd_problem_pairs(&p), "the shards' pairs add up");
        histd_dataset_free(&a);
        histd_dataset_free(&b);
      }
  /* the work a cluster sizes shards by: every pair for brute force; for the
   * grid in a periodic cube of side 10 with r_max 1 (cells a hair wider
   * than r_max: 9 an axis, each meeting 3 of them), a 27th of the pairs */
  {
    histd_dataset c = points(2000, 10, 10, 10, false);
    histd_problem p = problem(&c, NULL, (histd_box){HISTD_BOX_ORTHO, 10, 0, 10, 0, 0, 10},
                              (histd_bins){HISTD_BINS_WIDTH, 10, 0.1, NULL, 0, 0});
    const uint64_t pairs = 2000ull * 1999 / 2;
    CHECK_EQ_U64(histd_shard_work(&p, "cpu"), pairs, "brute force compares every pair");
    CHECK_EQ_U64(histd_shard_work(&p, "grid"), (pairs + 26) / 27, "the grid a 27th of them");
    CHECK_EQ_U64(histd_shard_work(&p, "auto"), (pairs + 26) / 27, "auto takes the grid here");
    p.statistic = HISTD_STAT_WITHIN; /* within 1: the one bin [0, 1] */
    p.radius = 1;
    CHECK_EQ_U64(histd_shard_work(&p, "grid"), (pairs + 26) / 27, "within R on the grid");
    histd_dataset_free(&c);
  }
  /* collisions are counted whole, by hashing */
  histd_dataset a = points(50, 5, 5, 5, false);
  histd_problem p = problem(&a, NULL, OPEN, (histd_bins){HISTD_BINS_WIDTH, 4, 1, NULL, 0, 0});
  p.statistic = HISTD_STAT_WITHIN;
  histd_shard_plan plan;
  histd_shard_plan_make(&p, "cpu", 10, &plan);
  CHECK_EQ_U64(plan.count, 1, "collisions are one shard");
  histd_dataset_free(&a);
}

int main(void) {
  test_shard_partition();
  test_grid();
  test_periodic_random();
  test_lattice_shells();
  test_unwrapped();
  test_edges();
  test_within();
  test_weights();
  test_cross_self();
  test_refusals();
  test_fast_periodic_hard();
  test_fast_unwrapped_hard();
  test_fast_open_edges_hard();
  test_fast_weights_many();
  test_fast_weights_groups();
  test_fast_log_estimate();
  test_width_on_multiples();
  test_gpu_paths();
  test_frames();
  return check_finish("test_stats");
}
