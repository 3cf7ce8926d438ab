/*
 * test_choose.c -- what "auto" runs (src/engine/choose.c), checked against
 * the rules as the README's table of kernels and choose.c's comments
 * state them, each expectation worked out here from the problem's
 * numbers, never from the code under test:
 *
 *   - a value per point or a list of pairs: the grid;
 *   - dm-tree where the bin width (or R) is at least 3 times the points'
 *     mean spacing (the cube root of the bounding box's volume per point)
 *     and there are at least 10^7 pairs, unweighted, equal bins or within
 *     R (CPU workers); on GPU workers only open, equal-width histograms,
 *     from 23 spacings and 10^13 pairs: D1 (2e7 points in the 23,000 cube,
 *     width 2,000: 23.6 spacings) takes it on both;
 *   - the grid where its cells (side >= r_max, as many as fit the extent;
 *     at most a point a cell on the CPU, a 16th of them on a GPU) would
 *     visit at most half the pairs: the product over the axes of
 *     (3n - 2) / n^2 (open) or min(n, 3) / n (periodic);
 *   - else on a GPU: the plain self histogram on balanced in blocks of 256
 *     below 50,000 points, 512 below 200,000, else 1,024 (the job's block
 *     where it names one; tensor-core needs the GPU's own plan, so a
 *     worker without one never takes it), the plain A x B on
 *     tiled-privatized, everything else on the grid in open space (more
 *     than one cell, whatever its share), else tiled-stats; on the CPU
 *     "cpu";
 *   - never a float64-only GPU row (tiled-privatized-f64, the baseline).
 *
 * The problems are shapes: n points with their bounds and no coordinates,
 * all a choice looks at, so D1's 2e7 points cost nothing. A "GPU worker"
 * here is device 0 without a CUDA context (the choice reads w->device;
 * only tensor-core's plan and the split over GPUs need the context).
 * Then runs on real points: every "auto" result's kernel and reason are
 * the ones the choice gave for its problem, the statistics of points
 * included; and the cluster's sizing (histd_shard_work) follows the
 * grid's model as histd.h states it.
 */
#include <math.h>

#include "../check.h"
#include "../pointsets.h"
#include "engine.h"
#include "gpu_launch.h"
#include "histd/histd.h"

static const histd_worker CPU = {.device = -1}, GPU = {.device = 0};

/* n points spanning [lo, hi) on every axis, no coordinates. */
static histd_dataset shape(size_t n, double lo, double hi) {
  histd_dataset ds;
  memset(&ds, 0, sizeof ds);
  ds.n = n;
  for (int k = 0; k < 3; k++) {
    ds.min[k] = lo;
    ds.max[k] = hi;
  }
  return ds;
}

/* n points uniform in the 100 cube (real ones, for runs). */
static histd_dataset uniform(size_t n, uint64_t seed) {
  histd_dataset ds;
  histd_dataset_alloc(&ds, n, NULL, 0);
  pointset_fill(&ds, SHAPE_UNIFORM, 100, seed);
  return ds;
}

static bool starts(const char *s, const char *prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

static histd_problem hist(const histd_dataset *a, const histd_dataset *b, double width,
                          uint32_t count) {
  histd_problem p = {.a = a, .b = b, .bins = {HISTD_BINS_WIDTH, count, width, NULL, 0, 0}};
  return p;
}

/* The choice of worker w for p with the job's block size; checks the
 * kernel (and block, where want_block is not ~0u) and that the kernel can
 * run p. */
static histd__choice choose(const histd_worker *w, const histd_problem *p, uint32_t job_block,
                            const char *want, uint32_t want_block, const char *what) {
  histd_exec ex;
  histd_exec_init(&ex);
  ex.block_size = job_block;
  histd__choice c;
  histd__choose(w, p, &ex, 0, &c);
  const char *on = w->device < 0 ? "CPU" : "GPU";
  CHECK(c.kernel != NULL && strcmp(c.kernel->name, want) == 0,
        "%s on the %s: chose %s, want %s (%s)", what, on, c.kernel ? c.kernel->name : "nothing",
        want, c.reason);
  /* never a float64-only row (tiled-privatized-f64: the baseline, which
   * the README's table says auto never picks) */
  CHECK(c.kernel == NULL || c.kernel->gpu == NULL || !c.kernel->gpu->f64_only,
        "%s on the %s: chose the float64-only %s", what, on, c.kernel->name);
  CHECK(want_block == ~0u || c.block == want_block, "%s on the %s: block %u, want %u", what, on,
        c.block, want_block);
  /* a kernel that can run p; tiled-privatized's row lists the self
   * histogram only, as named that is all it runs (the plain A x B is
   * auto's to hand it) */
  char msg[512];
  const bool plain_cross =
      histd_problem_needs(p) == HISTD_CAN_CROSS && strcmp(want, "tiled-privatized") == 0;
  CHECK(c.kernel == NULL || plain_cross || histd_kernel_can(c.kernel, p, msg, sizeof msg), "%s: %s",
        what, msg);
  const bool brute = strcmp(want, "grid") != 0 && strcmp(want, "dm-tree") != 0;
  CHECK(c.every_pair == brute, "%s on the %s: every_pair %d", what, on, c.every_pair);
  return c;
}

/* The tree's rule: unweighted, equal bins or within R, its width over the
 * mean spacing and its pairs past the worker's thresholds. */
static bool tree_rule(double width, double n, double pairs, double volume, bool gpu) {
  const double spacing = cbrt(volume / n);
  return width / spacing >= (gpu ? 23 : 3) && pairs >= (gpu ? 1e13 : 1e7);
}

/* The share of pairs a grid of n cells an axis visits (open space). */
static double open_share(double n) { return pow((3 * n - 2) / (n * n), 3); }

static void test_tree(void) {
  /* D1: 2e7 uniform points in the 23,000 cube, width 2,000, the full
   * range (the diagonal 39,837 in 20 bins) */
  histd_dataset d1 = shape(20000000, 0, 23000);
  histd_problem p = hist(&d1, NULL, 2000, 20);
  const double pairs = 2e7 * (2e7 - 1) / 2, v = pow(23000, 3);
  CHECK(tree_rule(2000, 2e7, pairs, v, false) && tree_rule(2000, 2e7, pairs, v, true),
        "D1 is inside both of the tree's models");
  histd__choice c = choose(&CPU, &p, 0, "dm-tree", ~0u, "D1");
  CHECK_STR_CONTAINS(c.reason, "dm-tree: the bin width 2000 is 23.6 times the points' mean");
  CHECK_STR_CONTAINS(c.reason, "(the tree pays from 3)");
  c = choose(&GPU, &p, 0, "dm-tree", ~0u, "D1");
  CHECK_STR_CONTAINS(c.reason, "(the tree pays from 23 on a GPU)");
  CHECK(c.retry == 0, "the tree has no fallback");

  /* 5e6 of D1's points: 14.9 spacings, a tree on the CPU, brute force on
   * a GPU (one cell: the grid does not pay; balanced from 200,000 points) */
  histd_dataset d5 = shape(5000000, 0, 23000);
  p = hist(&d5, NULL, 2000, 20);
  CHECK(tree_rule(2000, 5e6, 5e6 * (5e6 - 1) / 2, v, false) &&
            !tree_rule(2000, 5e6, 5e6 * (5e6 - 1) / 2, v, true),
        "5e6 points: the CPU's model only");
  choose(&CPU, &p, 0, "dm-tree", ~0u, "D1 at 5e6 points");
  c = choose(&GPU, &p, 0, "balanced", 1024, "D1 at 5e6 points");
  CHECK(starts(c.reason, "brute force: r_max 40000 gives 1x1x1 cells"), "%s", c.reason);

  /* the tree's exclusions: weights, explicit edges; a within-R count on a
   * GPU (the CPU takes the tree for it: R stands for the width) */
  p = hist(&d1, NULL, 2000, 20);
  p.weighted = true;
  choose(&CPU, &p, 0, "cpu", ~0u, "weighted D1");
  choose(&GPU, &p, 0, "tiled-stats", 0, "weighted D1");
  double edges[21];
  for (int k = 0; k <= 20; k++)
    edges[k] = 2000.0 * k;
  p = hist(&d1, NULL, 2000, 20);
  p.bins = (histd_bins){HISTD_BINS_EDGES, 20, 0, edges, 0, 0};
  choose(&CPU, &p, 0, "cpu", ~0u, "D1 in explicit edges");
  choose(&GPU, &p, 256, "tiled-stats", 256, "D1 in explicit edges");

  /* within R = 30 of 5,000 points in the 100 cube: 5.1 spacings, 1.25e7
   * pairs: the tree on the CPU; on a GPU the grid (R / 100: 4 cells an
   * axis, 24% of the pairs) */
  histd_dataset w5 = shape(5000, 0, 100);
  static double within[2];
  p = hist(&w5, NULL, 1, 1);
  p.statistic = HISTD_STAT_WITHIN;
  p.radius = 30;
  within[0] = 0;
  within[1] = nextafter(30, INFINITY);
  p.bins = (histd_bins){HISTD_BINS_EDGES, 1, 0, within, 0, 0};
  CHECK(tree_rule(30, 5000, 5000.0 * 4999 / 2, 1e6, false), "within 30: the CPU's tree");
  c = choose(&CPU, &p, 0, "dm-tree", ~0u, "within 30");
  CHECK_STR_CONTAINS(c.reason, "dm-tree: the radius 30 is");
  c = choose(&GPU, &p, 0, "grid", 0, "within 30");
  CHECK(open_share(4) <= 0.5, "4 cells an axis visit %g of the pairs", open_share(4));
  CHECK_STR_CONTAINS(c.reason, "grid: r_max 30 gives 4x4x4 cells");
  /* too few pairs for the tree: 4,000 points (8e6 pairs) */
  w5.n = 4000;
  choose(&CPU, &p, 0, "grid", ~0u, "within 30 of 4,000 points");
}

static void test_grid(void) {
  /* 20,000 points in the 100 cube, r_max 7 (7 bins of 1): 0.27 spacings,
   * no tree; cells of 100 / 7 -> 15 an axis (3,375, under a point a
   * cell), which visit 0.7% of the pairs */
  histd_dataset a = shape(20000, 0, 100);
  histd_problem p = hist(&a, NULL, 1, 7);
  CHECK(!tree_rule(1, 2e4, 2e4 * 19999 / 2, 1e6, false), "r_max 7: no tree");
  histd__choice c = choose(&CPU, &p, 0, "grid", 0, "r_max 7");
  char want[128];
  snprintf(want, sizeof want,
           "grid: r_max 7 gives 15x15x15 cells of side >= r_max, which visit "
           "about %.3g%% of the pairs (the grid pays below 50%%)",
           100 * open_share(15));
  CHECK(strcmp(c.reason, want) == 0, "the grid's reason: \"%s\", want \"%s\"", c.reason, want);
  CHECK(c.retry == HISTD__CHOOSE_NO_GRID, "a grid that does not fit falls back");
  /* a GPU worker: the grid too (its cap of 1,250 cells), in the job's
   * block up to the grid's largest, its own beyond */
  choose(&GPU, &p, 0, "grid", 0, "r_max 7");
  choose(&GPU, &p, 128, "grid", 128, "r_max 7, blocks of 128");
  choose(&GPU, &p, 1024, "grid", 0, "r_max 7, blocks of 1,024");
  /* the grid did not fit: brute force, and the reason says so */
  histd__choice nc;
  histd__choose(&CPU, &p, NULL, HISTD__CHOOSE_NO_GRID, &nc);
  CHECK(strcmp(nc.kernel->name, "cpu") == 0 && starts(nc.reason, want) &&
            strcmp(nc.reason + strlen(want), "; the grid does not fit the GPU") == 0,
        "without the grid: %s (%s)", nc.kernel->name, nc.reason);
  histd__choose(&GPU, &p, NULL, HISTD__CHOOSE_NO_GRID, &nc);
  CHECK(strcmp(nc.kernel->name, "balanced") == 0 && nc.block == 256 &&
            strstr(nc.reason, "; the grid does not fit the GPU") != NULL,
        "without the grid on a GPU: %s/%u (%s)", nc.kernel->name, nc.block, nc.reason);

  /* r_max 60: 2 cells an axis visit every pair ((3*2 - 2) / 4 = 1): brute
   * force, and so at 3 (7/9, cubed 0.47: the grid) but not at r_max 45 */
  p = hist(&a, NULL, 10, 6);
  CHECK(open_share(2) > 0.5, "2 cells an axis pay nothing");
  c = choose(&CPU, &p, 0, "cpu", 0, "r_max 60");
  CHECK(starts(c.reason, "brute force: r_max 60 gives 2x2x2 cells"), "%s", c.reason);
  /* on a GPU the plain histogram at r_max 60 is brute force's own; a
   * weighted one (the family) runs on the grid in open space whatever its
   * share, and says why */
  choose(&GPU, &p, 0, "balanced", 256, "r_max 60, plain");
  p.weighted = true;
  c = choose(&GPU, &p, 0, "grid", 0, "r_max 60, weighted");
  CHECK(starts(c.reason, "brute force: r_max 60 gives 2x2x2 cells") &&
            strstr(c.reason, "; but on a GPU in open space the grid outruns tiled-stats") != NULL,
        "%s", c.reason);
  CHECK(c.retry == HISTD__CHOOSE_NO_GRID, "a grid that does not fit falls back");
  histd__choose(&GPU, &p, NULL, HISTD__CHOOSE_NO_GRID, &nc);
  CHECK(strcmp(nc.kernel->name, "tiled-stats") == 0, "without the grid: %s (%s)",
        nc.kernel->name, nc.reason);
  p.weighted = false;
  p = hist(&a, NULL, 10, 4);
  CHECK(open_share(3) <= 0.5, "3 cells an axis: %g", open_share(3));
  choose(&CPU, &p, 0, "grid", 0, "r_max 40");

  /* periodic, the box 100 wide and r_max 40: 2 slices an axis, every
   * pair (min(2, 3) / 2 = 1); r_max 20: 4 slices (the cells' margin over
   * r_max leaves no room for a fifth), (3/4)^3 = 42% */
  p = hist(&a, NULL, 10, 4);
  p.box = (histd_box){HISTD_BOX_ORTHO, 100, 0, 100, 0, 0, 100};
  choose(&CPU, &p, 0, "cpu", 0, "periodic r_max 40");
  choose(&GPU, &p, 0, "tiled-stats", 0, "periodic r_max 40");
  p.bins.count = 2;
  c = choose(&CPU, &p, 0, "grid", 0, "periodic r_max 20");
  CHECK_STR_CONTAINS(c.reason, "4x4x4 cells");
}

static void test_brute(void) {
  /* full range (one cell) in bins under 3 spacings (no tree): the GPU's
   * brute force by the points */
  static const size_t sizes[] = {49999, 50000, 199999, 200000};
  static const uint32_t blocks[] = {256, 512, 512, 1024};
  for (int i = 0; i < 4; i++) {
    histd_dataset a = shape(sizes[i], 0, 100);
    histd_problem p = hist(&a, NULL, 5, 40);
    CHECK(!tree_rule(5, (double)sizes[i], 1e9, 1e6, false), "width 5: no tree");
    char what[64];
    snprintf(what, sizeof what, "%zu points, full range", sizes[i]);
    histd__choice c = choose(&GPU, &p, 0, "balanced", blocks[i], what);
    CHECK(c.retry == 0, "balanced has no fallback");
    choose(&GPU, &p, 128, "balanced", 128, what);
    choose(&CPU, &p, 0, "cpu", 0, what);
    /* what tensor-core's fallback runs: the same */
    uint32_t block = 0;
    CHECK(strcmp(histd__choose_gpu_brute(&p, NULL, &block)->name, "balanced") == 0 &&
              block == blocks[i],
          "%s: tensor-core's fallback in blocks of %u", what, block);
  }
  /* the plain A x B: tiled-privatized, A's tiles meeting B's */
  histd_dataset a = shape(1000, 0, 100), b = shape(3000, 0, 100);
  histd_problem p = hist(&a, &b, 200, 1);
  histd__choice c = choose(&GPU, &p, 0, "tiled-privatized", 0, "A x B");
  CHECK(starts(c.reason, "brute force: ") &&
            strstr(c.reason, "; A x B on a self kernel: A's tiles meet B's") != NULL,
        "A x B: %s", c.reason);
  choose(&GPU, &p, 512, "tiled-privatized", 512, "A x B, blocks of 512");
  choose(&CPU, &p, 0, "cpu", 0, "A x B");
  /* A x B beyond the plain: tiled-stats, which falls back to the CPU */
  p.weighted = true;
  c = choose(&GPU, &p, 0, "tiled-stats", 0, "weighted A x B");
  CHECK(c.retry == HISTD__CHOOSE_NO_GPU_STATS, "tiled-stats falls back");
  histd__choice nc;
  histd__choose(&GPU, &p, NULL, HISTD__CHOOSE_NO_GPU_STATS, &nc);
  CHECK(strcmp(nc.kernel->name, "cpu") == 0 && strcmp(nc.reason, c.reason) == 0,
        "tiled-stats did not fit: %s (%s)", nc.kernel->name, nc.reason);
}

static void test_points_choice(void) {
  static const histd_statistic stats[] = {HISTD_STAT_POINT_COUNTS, HISTD_STAT_NEAREST,
                                          HISTD_STAT_PAIRS};
  histd_dataset d1 = shape(20000000, 0, 23000);
  for (int s = 0; s < 3; s++) {
    histd_problem p = hist(&d1, NULL, 0, 0);
    p.bins = (histd_bins){HISTD_BINS_EDGES, 0, 0, NULL, 0, 0};
    p.statistic = stats[s];
    p.radius = stats[s] == HISTD_STAT_NEAREST ? INFINITY : 2000;
    for (int g = 0; g < 2; g++) {
      histd__choice c = choose(g ? &GPU : &CPU, &p, 0, "grid", 0, "a statistic of points");
      CHECK(starts(c.reason, "grid: ") && c.retry == 0, "%s", c.reason);
    }
  }
}

/* Runs p by "auto" on a CPU worker; its kernel and reason must be the
 * choice for p's first frame, resolved. */
static void run_as_chosen(histd_worker *w, const histd_problem *p, const char *want,
                          const char *what) {
  histd_exec ex;
  histd_exec_init(&ex);
  histd_result r;
  char msg[512] = "";
  int rc = histd_worker_run(w, p, &ex, NULL, &r, msg, sizeof msg);
  CHECK(rc == 0, "%s: %s", what, msg);
  if (rc != 0)
    return;
  histd_problem pr, pf;
  histd_dataset a, b;
  double within[2];
  CHECK(histd__problem_resolve(p, within, &pr, msg, sizeof msg) == 0, "%s", msg);
  histd_problem_frame(&pr, 0, &a, &b, &pf);
  histd__choice c;
  histd__choose(w, &pf, &ex, 0, &c);
  CHECK(strcmp(r.kernel, c.kernel->name) == 0 && strcmp(r.kernel, want) == 0,
        "%s: ran %s, chosen %s, want %s", what, r.kernel, c.kernel->name, want);
  CHECK(strcmp(r.reason, c.reason) == 0, "%s: the result says \"%s\", the choice \"%s\"", what,
        r.reason, c.reason);
  histd_result_free(&r);
}

static void test_runs(void) {
  histd_worker *w;
  char msg[256];
  if (histd_worker_create(&w, -1, msg, sizeof msg) != 0) {
    CHECK(0, "a CPU worker: %s", msg);
    return;
  }
  histd_dataset a = uniform(20000, 3);
  histd_problem p = hist(&a, NULL, 1, 7);
  run_as_chosen(w, &p, "grid", "20,000 points, r_max 7");
  histd_dataset_free(&a);
  a = uniform(1000, 4);
  p = hist(&a, NULL, 10, 0); /* a default count: the full range */
  run_as_chosen(w, &p, "cpu", "1,000 points, full range");
  histd_dataset_free(&a);
  a = uniform(5000, 5); /* 1.25e7 pairs, spacing 5.85 */
  p = hist(&a, NULL, 40, 5);
  run_as_chosen(w, &p, "dm-tree", "5,000 points, width 40");
  p.statistic = HISTD_STAT_WITHIN;
  p.radius = 30;
  run_as_chosen(w, &p, "dm-tree", "5,000 points within 30");
  histd_dataset_free(&a);
  /* a value per point: by the grid, and the result says so */
  a = uniform(2000, 6);
  p = hist(&a, NULL, 0, 0);
  p.statistic = HISTD_STAT_POINT_COUNTS;
  p.radius = 5;
  run_as_chosen(w, &p, "grid", "neighbours within 5");
  p.statistic = HISTD_STAT_NEAREST;
  p.radius = INFINITY;
  run_as_chosen(w, &p, "grid", "the nearest point");
  histd_dataset_free(&a);
  histd_worker_destroy(w);
}

/* The cluster's sizing (histd.h): the grid's share for "grid", and for
 * "auto" where the grid pays on the CPU's model (auto runs the grid
 * there, or the tree where it pays too); every pair otherwise, a named
 * tree included (its visits have no model of their own). */
static void test_work(void) {
  histd_dataset a = shape(20000, 0, 100);
  histd_problem p = hist(&a, NULL, 1, 7);
  const uint64_t pairs = 20000ull * 19999 / 2;
  const uint64_t grid15 = (uint64_t)ceil((double)pairs * open_share(15));
  CHECK_EQ_U64(histd_shard_work(&p, "auto"), grid15, "auto on the grid");
  CHECK_EQ_U64(histd_shard_work(&p, "grid"), grid15, "the grid");
  CHECK_EQ_U64(histd_shard_work(&p, "cpu"), pairs, "cpu");
  CHECK_EQ_U64(histd_shard_work(&p, "dm-tree"), pairs, "the tree, named");
  /* within 30 of 5,000: the tree, and the grid (4 cells an axis) pays */
  histd_dataset w5 = shape(5000, 0, 100);
  p = hist(&w5, NULL, 1, 1);
  p.statistic = HISTD_STAT_WITHIN;
  p.radius = 30;
  const uint64_t wp = 5000ull * 4999 / 2, grid4 = (uint64_t)ceil((double)wp * open_share(4));
  CHECK_EQ_U64(histd_shard_work(&p, "auto"), grid4, "auto's tree within 30");
  CHECK_EQ_U64(histd_shard_work(&p, "dm-tree"), wp, "the tree, named, within 30");
  /* D1: the tree alone */
  histd_dataset d1 = shape(20000000, 0, 23000);
  p = hist(&d1, NULL, 2000, 20);
  CHECK_EQ_U64(histd_shard_work(&p, "auto"), 20000000ull * 19999999 / 2, "auto's tree on D1");
}

int main(void) {
  test_tree();
  test_grid();
  test_brute();
  test_points_choice();
  test_runs();
  test_work();
  return check_finish("test_choose");
}
