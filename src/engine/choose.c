/*
 * choose.c -- what "auto" runs: the one place where the engine picks a
 * kernel for a job, with the measured models behind each rule (their
 * numbers are in bench/RESULTS.md). The registry's "auto" row runs what
 * histd__choose says (registry.c), and so does the worker for the
 * statistics of points (worker.c); a GPU's shards on its resident tiles
 * (histd__cuda_tiles_fit) ask it what "auto" would run for the shard, and
 * the cluster's sizing of shards (histd_shard_work) takes the grid's share
 * model from here (histd__work_share).
 *
 * The rules, in order, for one frame (bins resolved) on a worker:
 *   1. a statistic of points (a value per point, pair lists): "grid", the
 *      cell grid's driver (brute force runs them only where "cpu" or
 *      "cpu-reference" is named);
 *   2. "dm-tree" where its model for the worker's kind (CPU or GPU) says
 *      the tree pays: ahead of the grid, as where both pay the tree was
 *      the faster;
 *   3. "grid" where its share model says the cells visit at most half the
 *      pairs;
 *   4. on a GPU worker, brute force: the plain self histogram on
 *      "tensor-core" in its envelope, else "balanced" (its block by the
 *      points); the plain A x B on "tiled-privatized", A's tiles meeting
 *      B's; the rest of the family on "grid" in open space where it has
 *      more than one cell, whatever its share (grid_outruns), else on
 *      "tiled-stats";
 *   5. "cpu".
 * The reason says which rule and its numbers; it is what the result
 * records (histd_result.reason).
 *
 * The engines keep how to run what was chosen, and what only a run can
 * find: a grid that does not fit the GPU, or a weighted tiled-stats
 * histogram too large for its shared memory, answers HISTD_ETOOBIG and
 * "auto" chooses again without that rule (histd__choice.retry); tensor-
 * core's plan (tc_engine.c) is asked here whether it takes the job, and a
 * job it still declines when it runs (its tiles do not fit the free
 * memory) runs "balanced" there.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "engine.h"
#include "grid.h"

/* ---- dm-tree: its models, CPU and GPU ------------------------------------------------- */

/* "auto" takes the tree on a CPU worker from this bin width (or radius)
 * over the mean spacing (the cube root of the bounding box's volume per
 * point), ahead of the grid: measured on one core of the dev box (AMD
 * EPYC), 50,000 uniform points, against "cpu": 0.35x at 1.6, 1.3x at 3.2,
 * 2.1x at 4.8, 2.2x at 6.4, 2.9x at 9.6; on two cores, 200,000 points in
 * the 23,000 cube against "grid": within R at R / spacing 1.5 1.0x, 3.1
 * 1.85x, 5.1 2.6x, 15 11x; 2 bins of 1,000 (ratio 2.5) 3.1x (bench/
 * RESULTS.md, 2026-11-24). Too few pairs: no matter. */
#define DMTREE_MIN_RATIO 3.0
#define DMTREE_MIN_PAIRS 1e7
/* On a GPU worker (the leaf pairs on the GPU, kernels/dmtree_engine.c),
 * open full-range histograms in equal bins, measured on one H100 against
 * the brute force "auto" ran there then (balanced, blocks of 1,024) in the
 * same run, points uniform in the 23,000 cube: width / spacing 11.2
 * 0.61x, 14.9 0.68x, 18.7 1.02x, 23.6 1.45x, 29.7 1.45x, 37.5 1.83x (5e6
 * to 2e7 points; bench/RESULTS.md, 2026-11-24). Brute force is now
 * tensor-core, 1.39x balanced at D1 (23.6): the tree measured 1.04x it
 * there (2026-11-27); the other rows scaled alike give 0.73x at 18.7,
 * 1.04x at 29.7, 1.32x at 37.5, so the tree from 23 (it ties near there;
 * tensor-core's last step, 3% at W2, came after D1 was measured: about a
 * tie at D1 now, not measured).
 * Below 10^13 pairs (under 6 s of brute force) the tree's fixed costs
 * were not measured. */
#define DMTREE_GPU_MIN_RATIO 23.0
#define DMTREE_GPU_MIN_PAIRS 1e13

/* Whether the tree pays for p on a CPU worker (gpu false) or a GPU worker;
 * if so, why. */
static bool dmtree_pays(const histd_problem *p, bool gpu, char *why, size_t whylen) {
  /* weighted: 1.07x cpu at D1's density (1e6 points, 16 threads): not worth
   * the risk of a model; explicit edges: the narrowest bin would have to
   * decide. Within R is one bin [0, R]: R stands for the width. On a GPU:
   * the measured case only (open, equal bins, the full range). */
  double w;
  if (p->weighted || p->bins.count2 != 0 || p->ravg) /* the tree counts d's bins alone */
    return false;
  if (gpu && (p->statistic == HISTD_STAT_WITHIN || p->box.kind != HISTD_BOX_NONE))
    return false;
  if (p->statistic == HISTD_STAT_WITHIN)
    w = p->radius;
  else if (p->bins.kind == HISTD_BINS_WIDTH)
    w = p->bins.width;
  else
    return false;
  const histd_dataset *a = p->a, *b = p->b ? p->b : p->a;
  const double n = (double)a->n + (p->b ? (double)b->n : 0);
  const double min_ratio = gpu ? DMTREE_GPU_MIN_RATIO : DMTREE_MIN_RATIO;
  if ((double)histd_problem_pairs(p) < (gpu ? DMTREE_GPU_MIN_PAIRS : DMTREE_MIN_PAIRS) || !(w > 0))
    return false;
  double v = 1;
  for (int k = 0; k < 3; k++)
    v *= fmax(a->max[k], b->max[k]) - fmin(a->min[k], b->min[k]);
  const double spacing = cbrt(v / n), ratio = w / spacing;
  if (!(ratio >= min_ratio)) /* NaN never: a flat set has spacing 0 */
    return false;
  if (why != NULL)
    snprintf(why, whylen,
             "dm-tree: the %s %.6g is %.3g times the points' mean spacing %.6g (the tree pays "
             "from %g%s)",
             p->statistic == HISTD_STAT_WITHIN ? "radius" : "bin width", w, ratio, spacing,
             min_ratio, gpu ? " on a GPU" : "");
  return true;
}

/* ---- the grid: its share model -------------------------------------------------------- */

/* For points spread evenly, the grid visits a share of all pairs of about
 * the product over the axes of the share of cell pairs that are
 * neighbours: min(n, 3) / n on a periodic axis, (3n - 2) / n^2 on an open
 * one. Its loops cost a little more per pair than brute force's (shorter
 * runs of points), so the grid pays where that share is at most
 * GRID_SHARE_MAX: CPU and GPU (bench/RESULTS.md, 2026-11-23). */
#define GRID_SHARE_MAX_CPU 0.5
#define GRID_SHARE_MAX_GPU 0.5

static double grid_share(const histd__grid_geom *g) {
  double share = 1;
  for (int k = 0; k < 3; k++) {
    double n = g->n[k];
    share *= g->periodic ? fmin(n, 3) / n : (3 * n - 2) / (n * n);
  }
  return share;
}

/* Whether the grid pays for p on a CPU worker (gpu false) or a GPU
 * worker, with the worker's cap on cells (histd__grid_max_cells); a
 * sentence saying which and why into why (either way). */
static bool grid_pays(const histd_problem *p, bool gpu, char *why, size_t whylen) {
  histd__grid_geom g;
  if (histd__grid_plan(p, histd__grid_max_cells(p, gpu), &g, NULL, 0) != 0) {
    if (why != NULL)
      snprintf(why, whylen, "brute force: the bins have no finite r_max for a grid");
    return false;
  }
  const double share = grid_share(&g), max = gpu ? GRID_SHARE_MAX_GPU : GRID_SHARE_MAX_CPU;
  const bool pays = g.cells > 1 && share <= max;
  if (why != NULL)
    snprintf(why, whylen,
             "%s: r_max %.6g gives %ux%ux%u cells of side >= r_max, which visit about %.3g%% "
             "of the pairs (the grid pays below %.0f%%)",
             pays ? "grid" : "brute force", g.r_max, g.n[0], g.n[1], g.n[2], 100 * share,
             100 * max);
  return pays;
}

/* Whether, on a GPU, the grid outruns tiled-stats for a job of the family
 * (not the plain histogram) whatever its share: in open space, where its
 * float32 filter and bins meet every pair of 2 cells an axis faster than
 * tiled-stats' float32 pairs (GS2, 362,039 x 362,039 in 80 log bins to half
 * the cube, on an H200: 173.7 against 193.0 ms, weighted 334.2 against
 * 1309.1; bench/RESULTS.md, 2026-11-29, the leaner float32 loop).
 * Periodic boxes at such reaches take its float64 filter: not measured
 * against tiled-stats, left to it. */
static bool grid_outruns(const histd_problem *p) {
  histd__grid_geom g;
  return p->box.kind == HISTD_BOX_NONE &&
         histd__grid_plan(p, histd__grid_max_cells(p, true), &g, NULL, 0) == 0 && g.cells > 1;
}

/* ---- brute force on a GPU ------------------------------------------------------------- */

/* tensor-core's envelope (bench/RESULTS.md, 2026-11-27, tc_probe on an
 * H200): from 5e5 points and at k >= 16 (fewer than ~128 rows) it ran
 * 1.18-1.36x "balanced"; below (W4, 1e5 points: 0.44x) the tiles are too
 * few to fill the GPU, and at k < 16 (400 rows: 0.72x) the rows take the
 * shared memory and the counters' address costs more. A job big enough
 * to cut runs on every GPU it is given, as balanced's does. Its plan must take the job
 * (histd__cuda_tc_plan: the float32 code's reach, shared memory, the
 * devices mask), and the job's block size must be its own or none. */
#define TC_MIN_POINTS 500000u
#define TC_MIN_K 16u

const histd_kernel *histd__choose_gpu_brute(const histd_problem *p, const histd_exec *ex,
                                            uint32_t *block) {
  /* the lane-privatised balanced kernel wins every size measured but
   * tensor-core's (bench/RESULTS.md, "GPU kernels", on an H200); small
   * jobs: more, smaller tiles keep every SM busy (W4 best at 512, W1, W2,
   * W3 at 1024). (tiled-privatized/256 was a few percent faster on W2, but
   * its launches over partner-tile windows are uneven, and chunking cost
   * it 3% of W2; balanced's equal shares cost 0.1%.) */
  const size_t n = p->a->n;
  *block = n < 50000 ? 256 : n < 200000 ? 512 : 1024;
  if (ex != NULL && ex->block_size != 0)
    *block = ex->block_size;
  return histd_kernel_find("balanced");
}

/* The plain self histogram (open space, equal widths, no weights) on the
 * GPU worker w. */
static const histd_kernel *gpu_plain(const histd_worker *w, const histd_problem *p,
                                     const histd_exec *ex, uint32_t *block) {
  const histd_kernel *tc = histd_kernel_find("tensor-core");
  uint32_t k = 0;
  if (w->gpu != NULL && (ex->block_size == 0 || ex->block_size == tc->block) &&
      p->a->n >= TC_MIN_POINTS && histd__cuda_tc_plan(w, p, ex, &k) && k >= TC_MIN_K) {
    *block = tc->block;
    return tc;
  }
  return histd__choose_gpu_brute(p, ex, block);
}

/* ---- the choice ----------------------------------------------------------------------- */

/* Appends to the reason. */
static void say(histd__choice *c, const char *fmt, ...) {
  const size_t len = strlen(c->reason);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->reason + len, sizeof c->reason - len, fmt, ap);
  va_end(ap);
}

static void pick(histd__choice *c, const char *name, uint32_t block, bool every_pair,
                 unsigned retry) {
  c->kernel = histd_kernel_find(name);
  c->block = block;
  c->every_pair = every_pair;
  c->retry = retry;
}

void histd__choose(const histd_worker *w, const histd_problem *p, const histd_exec *ex,
                   unsigned skip, histd__choice *c) {
  histd_exec dflt;
  if (ex == NULL) {
    histd_exec_init(&dflt);
    ex = &dflt;
  }
  const bool gpu = w->device >= 0;
  memset(c, 0, sizeof *c);
  if (histd_statistic_about(p->statistic)->answer != HISTD_ANSWER_BINS) {
    say(c, "grid: a value per point or a list of pairs within R: the cells meet only the pairs "
           "within reach");
    pick(c, "grid", 0, false, 0);
    return;
  }
  if (dmtree_pays(p, gpu, c->reason, sizeof c->reason)) {
    pick(c, "dm-tree", ex->block_size, false, 0);
    return;
  }
  if (grid_pays(p, gpu, c->reason, sizeof c->reason)) {
    if (!(skip & HISTD__CHOOSE_NO_GRID)) {
      /* a block size for brute force: the grid takes its own */
      pick(c, "grid", ex->block_size > HISTD__GRID_MAX_BLOCK ? 0 : ex->block_size, false,
           HISTD__CHOOSE_NO_GRID);
      return;
    }
    say(c, "; the grid does not fit the GPU"); /* brute force, then */
  }
  const histd_kernel *plain = histd_kernel_find("balanced");
  const unsigned beyond = histd_problem_needs(p) & ~plain->caps;
  if (gpu && beyond == 0) {
    c->kernel = gpu_plain(w, p, ex, &c->block);
    c->every_pair = true;
  } else if (gpu && beyond == HISTD_CAN_CROSS) { /* the plain A x B */
    say(c, "%sA x B on a self kernel: A's tiles meet B's", c->reason[0] ? "; " : "");
    pick(c, "tiled-privatized", ex->block_size, true, 0);
  } else if (gpu && !(skip & HISTD__CHOOSE_NO_GRID) && grid_outruns(p)) {
    say(c, "; but on a GPU in open space the grid outruns tiled-stats at any share: grid");
    pick(c, "grid", ex->block_size > HISTD__GRID_MAX_BLOCK ? 0 : ex->block_size, false,
         HISTD__CHOOSE_NO_GRID);
  } else if (gpu && !(skip & HISTD__CHOOSE_NO_GPU_STATS)) {
    /* the statistics family; a weighted histogram too large for the GPU's
     * shared memory (or memory) runs on the CPU instead */
    pick(c, "tiled-stats", ex->block_size, true, HISTD__CHOOSE_NO_GPU_STATS);
  } else {
    pick(c, "cpu", 0, true, 0);
  }
}

double histd__work_share(const histd_problem *p, const histd_kernel *k) {
  /* "auto" by the CPU's models (a cluster sizes shards before a worker
   * takes them): the grid's share where the grid pays, whether it then
   * runs the grid or the tree (where both pay the tree was the faster: no
   * more work than the grid's); every pair where it runs brute force, or
   * the tree alone (its visits have no model of their own) */
  const bool grid =
      histd__kernel_is_auto(k) ? grid_pays(p, false, NULL, 0) : strcmp(k->name, "grid") == 0;
  histd__grid_geom g;
  if (!grid || histd__grid_plan(p, histd__grid_max_cells(p, false), &g, NULL, 0) != 0)
    return 1;
  return grid_share(&g);
}
