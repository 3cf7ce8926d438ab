/*
 * test_grid_gpu.c -- kernel "grid" on the GPU against the contract,
 * brute force, written here independently of the engine (every pair, each
 * binary64 operation on its own, libm's nearbyint for the images, the
 * bins found by a bisection of this file's own):
 *
 *   - open, orthorhombic and triclinic sets with r_max at 1%, 10% and 49%
 *     of the box (and exactly half a cube, where the filter steps aside);
 *   - coordinates shifted by whole box vectors (unwrapped), far from the
 *     origin (1e6), clustered (cells from empty to thousands of points);
 *   - A x B, and A x B with A = B; log and explicit edges (below counted);
 *   - weights, to 1e-12 of the sum of |w_i w_j| per bin;
 *   - within R (R = 0 too); lattices whose distances fall on bin edges
 *     and on r_max;
 *   - block sizes 32 to 256, a histogram too large for shared memory,
 *     empty sets, cancel, and a job too large for the (pretended) memory;
 *   - jobs larger than the (pretended) free memory, streamed in slabs.
 * Exits 77 ("skipped: no CUDA device: <why>") without a usable GPU.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "../gpus.h"
#include "../pointsets.h"
#include "histd/histd.h"

static histd_worker *W;
static int runs = 0;
/* TEST_GRID_GPU_ON_CPU=1: the same cases on the CPU's grid (a check of
 * this file's definitions on a machine without a GPU) */
static bool on_cpu = false;
static int filter32 = 0, filter64 = 0; /* the runs that took each filter */
static int span2 = 0, span3 = 0;       /* the runs on cells of span 2 and 3 (grid.h) */
static uint64_t rng = 2026;

static double rnd(void) { return test_rand01(&rng); }

/* ---- the definition ---------------------------------------------------------- */

static double literal_wrap(double d, double len) {
  volatile double q = d / len, k = nearbyint(q), lk = len * k;
  return d - lk;
}

/* The contract's distance of a - b under the box: its literal image rule. */
static double contract_d(const histd_box *box, double xa, double ya, double za, double xb,
                         double yb, double zb) {
  volatile double dx = xa - xb, dy = ya - yb, dz = za - zb;
  if (box->kind == HISTD_BOX_ORTHO) {
    dx = literal_wrap(dx, box->ax);
    dy = literal_wrap(dy, box->by);
    dz = literal_wrap(dz, box->cz);
  } else if (box->kind == HISTD_BOX_TRICLINIC) {
    volatile double q = dz / box->cz, k = nearbyint(q), t;
    t = box->cz * k, dz = dz - t;
    t = box->cy * k, dy = dy - t;
    t = box->cx * k, dx = dx - t;
    q = dy / box->by, k = nearbyint(q);
    t = box->by * k, dy = dy - t;
    t = box->bx * k, dx = dx - t;
    q = dx / box->ax, k = nearbyint(q);
    t = box->ax * k, dx = dx - t;
  }
  volatile double xx = dx * dx, yy = dy * dy, zz = dz * dz, s = xx + yy;
  s = s + zz;
  return sqrt(s);
}

typedef struct want {
  uint32_t count;
  uint64_t *counts, below, over, within;
  long double *sum, *abs;
} want;

/* -2: overflow, -1: below, else the bin. */
static long bin_of(const histd_bins *bins, double d) {
  if (bins->kind == HISTD_BINS_WIDTH) {
    volatile double q = d / bins->width;
    double b = floor(q);
    return b < (double)bins->count ? (long)b : -2;
  }
  if (!(d >= bins->edges[0]))
    return -1;
  if (d >= bins->edges[bins->count])
    return -2;
  long lo = 0, hi = bins->count;
  while (hi - lo > 1) {
    long mid = (lo + hi) / 2;
    if (d >= bins->edges[mid])
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

static void definition(const histd_problem *p, want *h) {
  memset(h, 0, sizeof *h);
  h->count = p->statistic == HISTD_STAT_WITHIN ? 1 : p->bins.count;
  h->counts = calloc(h->count, sizeof *h->counts);
  h->sum = calloc(h->count, sizeof *h->sum);
  h->abs = calloc(h->count, sizeof *h->abs);
  const histd_dataset *a = p->a, *b = p->b ? p->b : p->a;
  for (size_t i = 0; i < a->n; i++)
    for (size_t j = p->b ? 0 : i + 1; j < b->n; j++) {
      double d = contract_d(&p->box, a->x[i], a->y[i], a->z[i], b->x[j], b->y[j], b->z[j]);
      if (p->statistic == HISTD_STAT_WITHIN) {
        if (d <= p->radius)
          h->within++;
        continue;
      }
      long k = bin_of(&p->bins, d);
      if (k == -1)
        h->below++;
      else if (k == -2)
        h->over++;
      else {
        h->counts[k]++;
        if (p->weighted) {
          long double w = (long double)a->w[i] * (long double)b->w[j];
          h->sum[k] += w;
          h->abs[k] += fabsl(w);
        }
      }
    }
}

static void want_free(want *h) {
  free(h->counts);
  free(h->sum);
  free(h->abs);
}

/* ---- running and comparing ----------------------------------------------------- */

/* the last run's return code and device line; allow_too_big: a refusal
 * "even in slabs" (HISTD_ETOOBIG) is an answer, not a failure */
static int last_rc = 0;
static char last_device[HISTD_DEVICE_NAME_MAX];
static bool allow_too_big = false;

static uint64_t cut = 1; /* > 1: runs are planned into that many shards, each run, added */
static uint64_t cut_shards = 0;

static int run_grid(const histd_problem *p, uint32_t block, const histd_control *ctl,
                    histd_result *r, char *msg, size_t msglen) {
  histd_exec ex;
  histd_exec_init(&ex);
  snprintf(ex.kernel, sizeof ex.kernel, "grid");
  ex.block_size = block;
  runs++;
  if (cut <= 1)
    return histd_worker_run(W, p, &ex, ctl, r, msg, msglen);
  /* cut into block pairs, as a cluster runs them */
  histd_shard_plan plan;
  histd_shard_plan_make(p, "grid", cut, &plan);
  CHECK(plan.count > 1, "a plan of at most %llu shards (got %llu)", (unsigned long long)cut,
        (unsigned long long)plan.count);
  double *err = NULL;
  int rc = 0;
  memset(r, 0, sizeof *r);
  for (uint64_t s = 0; rc == 0 && s < plan.count; s++) {
    histd_shard sh;
    histd_shard_get(&plan, s, &sh);
    histd_result part;
    rc = histd_worker_run_shard(W, p, &ex, &sh, ctl, &part, msg, msglen);
    if (rc == 0)
      rc = histd_result_check(&part, &part.bins, histd_shard_pairs(p, &sh), msg, msglen);
    if (rc == 0 && s == 0) {
      rc = histd_result_copy(r, &part);
      err = histd_result_add_errs(&part.bins);
    } else if (rc == 0) {
      rc = histd_result_add(r, err, &part, msg, msglen);
    }
    if (rc == 0)
      cut_shards++;
    histd_result_free(&part);
  }
  if (rc == 0)
    histd_result_add_done(r, err);
  else if (plan.count > 0)
    histd_result_free(r);
  free(err);
  return rc;
}

/* Runs p on the GPU's grid with each block size and compares with h. */
static int compare(const histd_problem *p, const want *h, const uint32_t *blocks, int nblocks,
                   const char *what) {
  int fails = 0;
  for (int bi = 0; bi < nblocks; bi++) {
    histd_result r;
    char msg[512] = "";
    int rc = run_grid(p, blocks[bi], NULL, &r, msg, sizeof msg);
    last_rc = rc;
    if (rc == HISTD_ETOOBIG && allow_too_big) {
      CHECK_STR_CONTAINS(msg, "even in slabs");
      printf("  %-58s refused  [%s]\n", what, msg);
      continue;
    }
    CHECK(rc == 0, "%s, block %u: %s", what, blocks[bi], msg);
    if (rc != 0) {
      fails++;
      continue;
    }
    int bad = 0;
    /* within 0 is the worker's hash of the coordinates, whatever the kernel */
    if (!on_cpu && !(p->statistic == HISTD_STAT_WITHIN && p->radius == 0))
      CHECK(strstr(r.device, "GPU") != NULL && strstr(r.device, "grid") != NULL,
            "%s: grid ran on \"%s\", not on the GPU", what, r.device);
    CHECK(r.exact, "%s: grid claims inexact counts", what);
    filter32 += strstr(r.device, "float32 filter") != NULL;
    filter64 += strstr(r.device, "float64 filter") != NULL;
    span2 += strstr(r.device, "of span 2") != NULL;
    span3 += strstr(r.device, "of span 3") != NULL;
    uint64_t sum = r.below + r.overflow;
    for (uint32_t k = 0; k < r.bins.count; k++)
      sum += r.counts[k];
    CHECK_EQ_U64(sum, r.total, "counts + below + overflow = pairs");
    if (p->statistic == HISTD_STAT_WITHIN) {
      if (r.within != h->within) {
        bad++;
        CHECK(0, "%s, block %u: within %" PRIu64 ", want %" PRIu64, what, blocks[bi], r.within,
              h->within);
      }
    } else {
      for (uint32_t k = 0; k < h->count; k++) {
        if (r.counts[k] != h->counts[k] && bad++ < 3)
          CHECK(0, "%s, block %u: bin %u has %" PRIu64 ", want %" PRIu64, what, blocks[bi], k,
                r.counts[k], h->counts[k]);
        if (p->weighted) {
          long double err = fabsl((long double)r.weighted[k] - h->sum[k]);
          if (!(err <= 1e-12L * h->abs[k] + 1e-300L) && bad++ < 3)
            CHECK(0, "%s, block %u: bin %u weighted %.17g, want %.17Lg (|w| sum %.6Lg)", what,
                  blocks[bi], k, r.weighted[k], h->sum[k], h->abs[k]);
        }
      }
      if (r.below != h->below || r.overflow != h->over) {
        bad++;
        CHECK(0, "%s, block %u: below %" PRIu64 " overflow %" PRIu64 ", want %" PRIu64
                 " and %" PRIu64,
              what, blocks[bi], r.below, r.overflow, h->below, h->over);
      }
    }
    if (bi == 0)
      printf("  %-58s %s  [%s]\n", what, bad ? "FAILED" : "ok", r.device);
    snprintf(last_device, sizeof last_device, "%s", r.device);
    fails += bad != 0;
    histd_result_free(&r);
  }
  fflush(stdout);
  return fails;
}

static int check(const histd_problem *p, const char *what) {
  static const uint32_t blocks[] = {0};
  want h;
  definition(p, &h);
  int f = compare(p, &h, blocks, 1, what);
  want_free(&h);
  return f;
}

/* ---- point sets ---------------------------------------------------------------- */

static histd_dataset uniform(size_t n, double lx, double ly, double lz, double off, bool w) {
  histd_dataset ds;
  histd_dataset_alloc(&ds, n, NULL, 0);
  if (w)
    histd_dataset_alloc_weights(&ds, NULL, 0);
  for (size_t i = 0; i < n; i++) {
    ds.x[i] = off + rnd() * lx;
    ds.y[i] = off + rnd() * ly;
    ds.z[i] = off + rnd() * lz;
    if (w)
      ds.w[i] = rnd() * 4 - 1;
  }
  histd_dataset_finish(&ds, NULL, 0);
  return ds;
}

/* Points in a (possibly triclinic) box: fractional coordinates in [0, 1),
 * shifted by `shift` whole box vectors at random (-shift..shift). */
static histd_dataset in_box(size_t n, const histd_box *b, int shift, bool w) {
  histd_dataset ds;
  histd_dataset_alloc(&ds, n, NULL, 0);
  if (w)
    histd_dataset_alloc_weights(&ds, NULL, 0);
  for (size_t i = 0; i < n; i++) {
    double f[3];
    for (int k = 0; k < 3; k++) {
      f[k] = rnd();
      if (shift)
        f[k] += (double)((int)(test_rand_u64(&rng) % (2 * (unsigned)shift + 1)) - shift);
    }
    ds.x[i] = f[0] * b->ax + f[1] * b->bx + f[2] * b->cx;
    ds.y[i] = f[1] * b->by + f[2] * b->cy;
    ds.z[i] = f[2] * b->cz;
    if (w)
      ds.w[i] = rnd() * 2 - 0.5;
  }
  histd_dataset_finish(&ds, NULL, 0);
  return ds;
}

static histd_problem width_problem(const histd_dataset *a, const histd_dataset *b, histd_box box,
                                   double r_max, uint32_t count) {
  histd_problem p;
  memset(&p, 0, sizeof p);
  p.a = a;
  p.b = b;
  p.box = box;
  p.bins = (histd_bins){HISTD_BINS_WIDTH, count, r_max / count, NULL, 0, 0};
  return p;
}

/* ---- the cases ------------------------------------------------------------------ */

static int test_boxes(void) {
  int fails = 0;
  const histd_box open = {HISTD_BOX_NONE, 0, 0, 0, 0, 0, 0};
  const histd_box cube = {HISTD_BOX_ORTHO, 10, 0, 10, 0, 0, 10};
  const histd_box ortho = {HISTD_BOX_ORTHO, 10, 0, 11.5, 0, 0, 12.25};
  const histd_box tri = {HISTD_BOX_TRICLINIC, 10, 2, 9, -1.5, 2.5, 8};
  static const double fractions[] = {0.01, 0.10, 0.49};
  char what[128];
  /* open: r_max a fraction of the cube the points fill */
  histd_dataset o = uniform(6000, 10, 10, 10, 0, false);
  for (int f = 0; f < 3; f++) {
    histd_problem p = width_problem(&o, NULL, open, 10 * fractions[f], 40);
    snprintf(what, sizeof what, "open n=6000 r_max %.0f%% of the box", 100 * fractions[f]);
    fails += check(&p, what);
  }
  histd_dataset_free(&o);
  const histd_box *boxes[] = {&cube, &ortho, &tri};
  const char *names[] = {"cube", "orthorhombic", "triclinic"};
  for (int bi = 0; bi < 3; bi++) {
    histd_dataset d = in_box(5000, boxes[bi], 0, false);
    histd_dataset u = in_box(3000, boxes[bi], 3, false); /* unwrapped */
    double half = histd_box_half_width(boxes[bi]);
    for (int f = 0; f < 3; f++) {
      /* a fraction of the box: of its shortest width, 2 * half */
      histd_problem p = width_problem(&d, NULL, *boxes[bi], 2 * half * fractions[f], 50);
      snprintf(what, sizeof what, "%s n=5000 r_max %.0f%% of the width", names[bi],
               100 * fractions[f]);
      fails += check(&p, what);
      p.a = &u;
      snprintf(what, sizeof what, "%s unwrapped (+-3 boxes) n=3000 r_max %.0f%%", names[bi],
               100 * fractions[f]);
      fails += check(&p, what);
    }
    histd_dataset_free(&d);
    histd_dataset_free(&u);
  }
  /* exactly half the cube: the filter steps aside, the contract decides */
  histd_dataset c = in_box(4000, &cube, 1, false);
  histd_problem p = width_problem(&c, NULL, cube, 5, 50);
  p.bins.width = 0.1;
  fails += check(&p, "cube r_max = L/2 exactly (width 0.1 x 50)");
  histd_dataset_free(&c);
  return fails;
}

static int test_shapes(void) {
  int fails = 0;
  const histd_box open = {HISTD_BOX_NONE, 0, 0, 0, 0, 0, 0};
  /* clustered: four clumps, thousands of points in a cell, most cells empty */
  histd_dataset cl;
  histd_dataset_alloc(&cl, 20000, NULL, 0);
  pointset_fill(&cl, SHAPE_CLUSTERED, 100, 5);
  histd_problem p = width_problem(&cl, NULL, open, 1, 25);
  fails += check(&p, "clustered n=20000 r_max 1% (thousands a cell)");
  p = width_problem(&cl, NULL, open, 10, 100);
  fails += check(&p, "clustered n=20000 r_max 10%");
  histd_dataset_free(&cl);
  /* far from the origin: 1e6 + [0, 100) */
  histd_dataset far;
  histd_dataset_alloc(&far, 8000, NULL, 0);
  pointset_fill(&far, SHAPE_FAR, 100, 6);
  p = width_problem(&far, NULL, open, 5, 64);
  fails += check(&p, "far from the origin (1e6) n=8000 r_max 5");
  const histd_box fbox = {HISTD_BOX_ORTHO, 100, 0, 100, 0, 0, 100};
  p = width_problem(&far, NULL, fbox, 20, 64);
  fails += check(&p, "far from the origin, periodic 100 box, r_max 20");
  histd_dataset_free(&far);
  /* duplicates: many coincident points (d = 0 in bin 0) */
  histd_dataset dup;
  histd_dataset_alloc(&dup, 3000, NULL, 0);
  pointset_fill(&dup, SHAPE_DUPLICATES, 50, 7);
  p = width_problem(&dup, NULL, open, 15, 30);
  fails += check(&p, "duplicates n=3000");
  histd_dataset_free(&dup);
  return fails;
}

/* Integer lattices: distances exactly on the edges and on r_max. */
static int test_lattice(void) {
  int fails = 0;
  histd_dataset lat;
  histd_dataset_alloc(&lat, 4000, NULL, 0);
  pointset_fill(&lat, SHAPE_LATTICE, 9, 8); /* coordinates 0..8 */
  const histd_box open = {HISTD_BOX_NONE, 0, 0, 0, 0, 0, 0};
  const histd_box box9 = {HISTD_BOX_ORTHO, 9, 0, 9, 0, 0, 9};
  histd_problem p = width_problem(&lat, NULL, open, 3, 3); /* width 1: d = 1, 2, 3 on edges */
  fails += check(&p, "lattice open width 1 x 3 (d = r_max = 3)");
  p = width_problem(&lat, NULL, box9, 4, 8); /* width 0.5 */
  fails += check(&p, "lattice periodic 9 width 0.5 x 8");
  double edges[7];
  for (int k = 0; k < 7; k++)
    edges[k] = sqrt((double)(k + 1)); /* 1, sqrt2, sqrt3, 2, sqrt5, sqrt6, sqrt7 */
  p.bins = (histd_bins){HISTD_BINS_EDGES, 6, 0, edges, 0, 0};
  fails += check(&p, "lattice periodic 9, edges sqrt(1..7) (below: d < 1)");
  p.box = open;
  fails += check(&p, "lattice open, edges sqrt(1..7)");
  histd_dataset_free(&lat);
  return fails;
}

static int test_cross_edges_weights(void) {
  int fails = 0;
  const histd_box ortho = {HISTD_BOX_ORTHO, 20, 0, 18, 0, 0, 22};
  const histd_box tri = {HISTD_BOX_TRICLINIC, 20, 3, 18, 2, -4, 22};
  histd_dataset a = in_box(2500, &ortho, 1, true), b = in_box(3500, &ortho, 0, true);
  histd_problem p = width_problem(&a, &b, ortho, 6, 60);
  fails += check(&p, "A x B ortho 2500 x 3500");
  p.weighted = true;
  fails += check(&p, "A x B ortho weighted");
  p.b = &a;
  fails += check(&p, "A x A (A = B) ortho weighted");
  p.b = NULL;
  fails += check(&p, "self ortho weighted");
  double log_edges[31];
  histd_log_edges(0.05, 8.5, 30, log_edges, NULL, 0);
  p.bins = (histd_bins){HISTD_BINS_EDGES, 30, 0, log_edges, 0, 0};
  fails += check(&p, "self ortho weighted, 30 log edges 0.05..8.5");
  p.b = &b;
  fails += check(&p, "A x B ortho weighted, log edges");
  double odd[6] = {0.5, 0.75, 2, 2.5, 6.25, 8};
  p.bins = (histd_bins){HISTD_BINS_EDGES, 5, 0, odd, 0, 0};
  p.weighted = false;
  fails += check(&p, "A x B ortho, explicit edges 0.5..8");
  histd_dataset ta = in_box(2500, &tri, 2, true), tb = in_box(2000, &tri, 0, true);
  p = width_problem(&ta, &tb, tri, 7, 70);
  p.weighted = true;
  fails += check(&p, "A x B triclinic weighted");
  p.b = &ta;
  p.bins = (histd_bins){HISTD_BINS_EDGES, 30, 0, log_edges, 0, 0};
  fails += check(&p, "A x A triclinic weighted, log edges");
  /* many bins: the histogram in global memory (unweighted); weighted, a
   * smaller block */
  p = width_problem(&a, NULL, ortho, 8.5, 70000);
  fails += check(&p, "self ortho, 70000 bins (global histogram)");
  p = width_problem(&a, &b, ortho, 8.5, 5000);
  p.weighted = true;
  fails += check(&p, "A x B ortho weighted, 5000 bins");
  histd_dataset_free(&a);
  histd_dataset_free(&b);
  histd_dataset_free(&ta);
  histd_dataset_free(&tb);
  /* the same with at least 5 cells an axis (the float32 filter) */
  histd_dataset a2 = in_box(6000, &ortho, 1, true), b2 = in_box(9000, &ortho, 0, true);
  p = width_problem(&a2, &b2, ortho, 1.6, 40);
  p.weighted = true;
  fails += check(&p, "A x B ortho weighted 6000 x 9000, r_max 1.6");
  p.b = &a2;
  fails += check(&p, "A x A ortho weighted, r_max 1.6");
  p.b = NULL;
  p.bins = (histd_bins){HISTD_BINS_EDGES, 30, 0, log_edges, 0, 0};
  histd_log_edges(0.05, 1.6, 30, log_edges, NULL, 0);
  fails += check(&p, "self ortho weighted, 30 log edges 0.05..1.6");
  histd_dataset t2 = in_box(6000, &tri, 2, true), u2 = in_box(7000, &tri, 0, true);
  p = width_problem(&t2, &u2, tri, 1.7, 34);
  p.weighted = true;
  fails += check(&p, "A x B triclinic weighted 6000 x 7000, r_max 1.7");
  p.b = NULL;
  fails += check(&p, "self triclinic weighted, r_max 1.7");
  histd_dataset_free(&a2);
  histd_dataset_free(&b2);
  histd_dataset_free(&t2);
  histd_dataset_free(&u2);
  /* weights whose products cancel: sums near zero, |w| sums large */
  histd_dataset c = uniform(5000, 30, 30, 30, 0, true);
  for (size_t i = 0; i < c.n; i++)
    c.w[i] = (i % 2 ? 1e3 : -1e3) * (1 + 1e-9 * (double)(i % 7));
  const histd_box open = {HISTD_BOX_NONE, 0, 0, 0, 0, 0, 0};
  p = width_problem(&c, NULL, open, 12, 24);
  p.weighted = true;
  fails += check(&p, "open weighted, alternating +-1e3 weights");
  histd_dataset_free(&c);
  return fails;
}

static int test_within(void) {
  int fails = 0;
  const histd_box cube = {HISTD_BOX_ORTHO, 10, 0, 10, 0, 0, 10};
  histd_dataset d = in_box(6000, &cube, 1, false);
  histd_dataset lat;
  histd_dataset_alloc(&lat, 3000, NULL, 0);
  pointset_fill(&lat, SHAPE_LATTICE, 9, 9);
  const double radii[] = {0.3, 1.7, 4.9};
  char what[96];
  for (int k = 0; k < 3; k++) {
    histd_problem p;
    memset(&p, 0, sizeof p);
    p.a = &d;
    p.box = cube;
    p.statistic = HISTD_STAT_WITHIN;
    p.radius = radii[k];
    snprintf(what, sizeof what, "within R = %g, periodic cube n=6000", radii[k]);
    fails += check(&p, what);
  }
  histd_problem p;
  memset(&p, 0, sizeof p);
  p.a = &lat;
  p.statistic = HISTD_STAT_WITHIN;
  p.radius = 2; /* lattice distances exactly 2 count (d <= R) */
  fails += check(&p, "within R = 2 on a lattice (d = R counts)");
  p.radius = 0;
  fails += check(&p, "within R = 0 on a lattice (collisions)");
  histd_dataset_free(&d);
  histd_dataset_free(&lat);
  return fails;
}

static int test_blocks_and_sizes(void) {
  int fails = 0;
  const histd_box tri = {HISTD_BOX_TRICLINIC, 10, 2, 9, -1.5, 2.5, 8};
  histd_dataset d = in_box(4000, &tri, 1, true);
  histd_problem p = width_problem(&d, NULL, tri, 3, 30);
  p.weighted = true;
  static const uint32_t blocks[] = {32, 64, 128, 256};
  want h;
  definition(&p, &h);
  fails += compare(&p, &h, blocks, 4, "triclinic weighted, blocks 32..256");
  want_free(&h);
  /* tiny and empty sets */
  static const size_t sizes[] = {0, 1, 2, 3, 31, 33, 100};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    histd_dataset t = in_box(sizes[s], &tri, 0, true);
    histd_problem q = width_problem(&t, NULL, tri, 3.5, 7);
    q.weighted = true;
    char what[64];
    snprintf(what, sizeof what, "triclinic n=%zu", sizes[s]);
    fails += check(&q, what);
    q.b = &d;
    snprintf(what, sizeof what, "triclinic A x B n=%zu x 4000", sizes[s]);
    fails += check(&q, what);
    histd_dataset_free(&t);
  }
  /* a block size above the grid's limit is refused with a sentence */
  histd_result r;
  char msg[256] = "";
  int rc = on_cpu ? HISTD_EINVAL : run_grid(&p, 512, NULL, &r, msg, sizeof msg);
  CHECK(rc == HISTD_EINVAL, "block 512 must be EINVAL, got %d (%s)", rc, msg);
  if (rc == 0)
    histd_result_free(&r);
  /* ... but "auto" taking the grid with a brute-force block size (1024)
   * runs the grid at its own block */
  histd_exec ex;
  histd_exec_init(&ex);
  snprintf(ex.kernel, sizeof ex.kernel, "auto");
  ex.block_size = 1024;
  const histd_box cube = {HISTD_BOX_ORTHO, 10, 0, 10, 0, 0, 10};
  histd_dataset c = in_box(20000, &cube, 0, false);
  histd_problem pc = width_problem(&c, NULL, cube, 1.0, 40);
  definition(&pc, &h);
  rc = histd_worker_run(W, &pc, &ex, NULL, &r, msg, sizeof msg);
  runs++;
  CHECK(rc == 0, "auto with block 1024 where the grid pays: %s", msg);
  if (rc == 0) {
    CHECK(strcmp(r.kernel, "grid") == 0, "auto with block 1024 ran %s, not the grid", r.kernel);
    bool same = r.overflow == h.over && memcmp(r.counts, h.counts, 40 * sizeof *h.counts) == 0;
    CHECK(same, "auto (the grid) with block 1024 differs from the definition");
    printf("  %-58s %s  [%s, block %u]\n", "auto with block_size 1024 (the grid's own block)",
           same ? "ok" : "FAILED", r.device, r.block_size);
    fails += !same;
    histd_result_free(&r);
  }
  want_free(&h);
  histd_dataset_free(&c);
  histd_dataset_free(&d);
  return fails;
}

/* Jobs cut into shards (block pairs), every shard run on the grid and added:
 * the sum is the definition's, for self pairs and A x B, open and periodic
 * (orthorhombic, triclinic), weights and within R. */
static int test_shards(void) {
  int fails = 0;
  const histd_box open = {HISTD_BOX_NONE, 0, 0, 0, 0, 0, 0};
  const histd_box tri = {HISTD_BOX_TRICLINIC, 10, 2, 9, -1.5, 2.5, 8};
  histd_dataset o = uniform(5000, 10, 10, 10, 0, true), o2 = uniform(3000, 10, 10, 10, 0, true);
  histd_dataset t = in_box(4000, &tri, 2, true);
  const uint64_t cuts[] = {3, 6, 13};
  char what[128];
  for (int c = 0; c < 3; c++) {
    cut = cuts[c];
    histd_problem p = width_problem(&o, NULL, open, 1.0, 20);
    snprintf(what, sizeof what, "open n=5000 r_max 10%%, %llu shards", (unsigned long long)cut);
    fails += check(&p, what);
    p.weighted = true;
    p.b = &o2;
    snprintf(what, sizeof what, "open A x B weighted, %llu shards", (unsigned long long)cut);
    fails += check(&p, what);
    p = width_problem(&t, NULL, tri, 2 * histd_box_half_width(&tri) * 0.2, 30);
    p.weighted = true;
    snprintf(what, sizeof what, "triclinic unwrapped weighted r_max 20%%, %llu shards",
             (unsigned long long)cut);
    fails += check(&p, what);
    p.weighted = false;
    p.statistic = HISTD_STAT_WITHIN;
    p.radius = 0.75;
    snprintf(what, sizeof what, "triclinic within 0.75, %llu shards", (unsigned long long)cut);
    fails += check(&p, what);
  }
  cut = 1;
  printf("  %llu shards run\n", (unsigned long long)cut_shards);
  histd_dataset_free(&o);
  histd_dataset_free(&o2);
  histd_dataset_free(&t);
  return fails;
}

/* Jobs larger than the (pretended) free memory: streamed in slabs of z
 * (grid_slabs.c), at memory limits around and inside the window where
 * each streams (test_slab_window, gpus.h), each run against the
 * definition; a limit too small even for slabs must say so. */
static unsigned slabs_of(const char *device) {
  const char *at = strstr(device, "streamed in ");
  return at != NULL ? (unsigned)strtoul(at + 12, NULL, 10) : 1;
}

/* A job of test_slabs at a memory limit (test_slab_window's outcome). */
typedef struct slab_job {
  const histd_problem *p;
  const want *h;
  const char *name;
  int fails;
} slab_job;

static unsigned slabs_at(void *ctx, double mib) {
  static const uint32_t blocks[] = {0};
  slab_job *j = ctx;
  char lim[32], what[160];
  snprintf(lim, sizeof lim, "%.4f", mib);
  snprintf(what, sizeof what, "%s, %s MiB free", j->name, lim);
  setenv("HISTD_GPU_MEM_LIMIT_MB", lim, 1);
  last_device[0] = '\0';
  j->fails += compare(j->p, j->h, blocks, 1, what);
  unsetenv("HISTD_GPU_MEM_LIMIT_MB");
  return last_rc != 0 ? 0 : slabs_of(last_device);
}

static int test_slabs(void) {
  int fails = 0;
  const histd_box open = {HISTD_BOX_NONE, 0, 0, 0, 0, 0, 0};
  const histd_box cube = {HISTD_BOX_ORTHO, 10, 0, 10, 0, 0, 10};
  const histd_box ortho = {HISTD_BOX_ORTHO, 10, 0, 11.5, 0, 0, 12.25};
  const histd_box tri = {HISTD_BOX_TRICLINIC, 10, 2, 9, -1.5, 2.5, 8};
  histd_dataset c = in_box(20000, &cube, 0, false), o = uniform(16000, 10, 10, 10, 0, true);
  histd_dataset ta = in_box(12000, &tri, 2, true), tb = in_box(9000, &tri, 1, true);
  histd_dataset r = in_box(16000, &ortho, 0, false);
  double edges[25];
  for (int k = 0; k <= 24; k++) /* log edges from 0.05 to 1.2 */
    edges[k] = 0.05 * pow(24.0, k / 24.0);
  histd_problem ps[5];
  const char *names[5] = {"periodic cube r_max 10%", "open weighted r_max 10%",
                          "triclinic unwrapped A x B weighted log edges",
                          "orthorhombic within 0.6", "periodic cube A x B with A = B"};
  ps[0] = width_problem(&c, NULL, cube, 1.0, 40);
  ps[1] = width_problem(&o, NULL, open, 1.0, 25);
  ps[1].weighted = true;
  ps[2] = width_problem(&ta, &tb, tri, 1.2, 24);
  ps[2].bins = (histd_bins){HISTD_BINS_EDGES, 24, 0, edges, 0, 0};
  ps[2].weighted = true;
  ps[3] = width_problem(&r, NULL, ortho, 0.6, 1);
  ps[3].statistic = HISTD_STAT_WITHIN;
  ps[3].radius = 0.6;
  ps[4] = width_problem(&c, &c, cube, 1.0, 40);
  unsigned most = 0;
  allow_too_big = true;
  for (int i = 0; i < 5; i++) {
    want h;
    definition(&ps[i], &h);
    slab_job j = {&ps[i], &h, names[i], 0};
    const unsigned m = test_slab_window(slabs_at, &j, names[i]);
    fails += j.fails;
    most = m > most ? m : most;
    want_free(&h);
  }
  allow_too_big = false;
  CHECK(most >= 4, "the most slabs any run took is %u (want 4 or more)", most);
  printf("  the most slabs a run took: %u\n", most);
  histd_dataset_free(&c);
  histd_dataset_free(&o);
  histd_dataset_free(&ta);
  histd_dataset_free(&tb);
  histd_dataset_free(&r);
  return fails;
}

static bool always(void *u) {
  (void)u;
  return true;
}

/* A dense periodic set whose reach is L / 4.5: four cells an axis at span
 * 1 (the float64 filter), eight at span 2 (float32), which the engine
 * takes on its own; self, A x B, weights, log edges. */
static int test_span2(void) {
  int fails = 0;
  const histd_box cube = {HISTD_BOX_ORTHO, 9, 0, 9, 0, 0, 9};
  histd_dataset a = in_box(30000, &cube, 1, true), b = in_box(12000, &cube, 0, true);
  histd_problem p = width_problem(&a, NULL, cube, 2, 50);
  fails += check(&p, "dense periodic cube, r_max L/4.5, self");
  if (!on_cpu)
    CHECK(strstr(last_device, "of span 2") != NULL, "the dense cube's grid: span 2, got \"%s\"",
          last_device);
  p.b = &b;
  p.weighted = true;
  fails += check(&p, "dense periodic cube, A x B, weighted");
  double edges[21];
  for (int k = 0; k <= 20; k++)
    edges[k] = 0.02 * pow(100, k / 20.0);
  p.bins = (histd_bins){HISTD_BINS_EDGES, 20, 0, edges, 0, 0};
  fails += check(&p, "dense periodic cube, A x B, weighted, log edges");
  histd_dataset_free(&a);
  histd_dataset_free(&b);
  return fails;
}

static void test_cancel_and_memory(void) {
  const histd_box cube = {HISTD_BOX_ORTHO, 10, 0, 10, 0, 0, 10};
  histd_dataset d = in_box(20000, &cube, 0, false);
  histd_problem p = width_problem(&d, NULL, cube, 2, 20);
  histd_control ctl = {NULL, always, NULL, NULL};
  histd_result r;
  char msg[256] = "";
  int rc = run_grid(&p, 0, &ctl, &r, msg, sizeof msg);
  CHECK(rc == HISTD_ECANCELED, "a cancelled grid job returns ECANCELED, got %d (%s)", rc, msg);
  if (rc == 0)
    histd_result_free(&r);
  histd_worker *w2;
  rc = histd_worker_create(&w2, histd_worker_device(W), msg, sizeof msg);
  CHECK(rc == 0, "second worker: %s", msg);
  if (rc == 0) {
    histd_exec ex;
    histd_exec_init(&ex);
    snprintf(ex.kernel, sizeof ex.kernel, "grid");
    setenv("HISTD_GPU_MEM_LIMIT_MB", "1", 1);
    rc = histd_worker_run(w2, &p, &ex, NULL, &r, msg, sizeof msg);
    unsetenv("HISTD_GPU_MEM_LIMIT_MB");
    CHECK(rc == HISTD_ETOOBIG, "a grid job over the memory limit must be ETOOBIG, got %d", rc);
    CHECK_STR_CONTAINS(msg, "too large");
    printf("  too large: \"%s\"\n", msg);
    if (rc == 0)
      histd_result_free(&r);
    /* the worker works afterwards */
    want h;
    definition(&p, &h);
    rc = histd_worker_run(w2, &p, &ex, NULL, &r, msg, sizeof msg);
    CHECK(rc == 0, "grid after a too-large job: %s", msg);
    if (rc == 0) {
      int same = memcmp(r.counts, h.counts, 20 * sizeof *h.counts) == 0 && r.overflow == h.over;
      CHECK(same, "grid after a too-large job differs from the definition");
      histd_result_free(&r);
    }
    want_free(&h);
    histd_worker_destroy(w2);
  }
  histd_dataset_free(&d);
  printf("  cancel and memory limit: done\n");
}

/* The cases again on cells of span K wherever its float32 filter applies
 * (the rest stay at span 1); with more, the block sizes and slabs too. */
static int cases_at_span(const char *K, bool more) {
  printf("the cases again at span %s (HISTD_GRID_SPAN=%s)\n", K, K);
  setenv("HISTD_GRID_SPAN", K, 1);
  int fails = test_boxes(); /* (one at a time: they draw from one generator) */
  fails += test_shapes();
  fails += test_lattice();
  fails += test_cross_edges_weights();
  fails += test_within();
  if (more) {
    fails += test_blocks_and_sizes();
    fails += test_slabs();
  }
  unsetenv("HISTD_GRID_SPAN");
  return fails;
}

int main(void) {
  histd_device_info dev[16];
  int count = 0;
  char msg[512] = "";
  const char *cpu = getenv("TEST_GRID_GPU_ON_CPU");
  on_cpu = cpu != NULL && strcmp(cpu, "1") == 0;
  histd_devices(dev, 16, &count, msg, sizeof msg);
  if (on_cpu) {
    printf("TEST_GRID_GPU_ON_CPU=1: the CPU's grid, not the GPU's\n");
    if (histd_worker_create(&W, -1, msg, sizeof msg) != 0)
      return 1;
  } else {
    if (count == 0)
      SKIP("%s", strncmp(msg, "no CUDA device", 14) == 0 ? msg : "no CUDA device: see above");
    printf("GPU %d: %s, cc %d.%d, %d SMs\n", dev[0].index, dev[0].name, dev[0].cc_major,
           dev[0].cc_minor, dev[0].multiprocessors);
    if (histd_worker_create(&W, dev[0].index, msg, sizeof msg) != 0)
      SKIP("no CUDA device: GPU %d unusable: %s", dev[0].index, msg);
  }
  double t0 = histd_now_ms();
  int fails = 0;
  const char *only = getenv("TEST_GRID_GPU_ONLY"); /* "slabs": those alone, spans 1 and 2 */
  if (!on_cpu && only != NULL && strcmp(only, "slabs") == 0) {
    printf("larger than the GPU's memory: slabs (TEST_GRID_GPU_ONLY=slabs)\n");
    fails += test_slabs();
    setenv("HISTD_GRID_SPAN", "2", 1);
    fails += test_slabs();
    unsetenv("HISTD_GRID_SPAN");
    histd_worker_destroy(W);
    printf("%d grid runs on the GPU, %d case(s) failed\n", runs, fails);
    return check_finish("test_grid_gpu");
  }
  printf("boxes\n");
  fails += test_boxes();
  printf("shapes\n");
  fails += test_shapes();
  printf("lattices\n");
  fails += test_lattice();
  printf("A x B, edges, weights\n");
  fails += test_cross_edges_weights();
  printf("within R\n");
  fails += test_within();
  printf("block sizes, small sets\n");
  fails += test_blocks_and_sizes();
  printf("cut into shards (as a cluster runs them)\n");
  fails += test_shards();
  printf("span 2 by the engine's choice\n");
  fails += test_span2();
  if (!on_cpu) {
    printf("larger than the GPU's memory: slabs\n");
    fails += test_slabs();
    test_cancel_and_memory();
    fails += cases_at_span("2", true);
    fails += cases_at_span("3", false);
  }
  histd_worker_destroy(W);
  if (!on_cpu) {
    printf("filters: float32 in %d runs, float64 in %d; span 2 in %d, span 3 in %d\n", filter32,
           filter64, span2, span3);
    CHECK(filter32 >= 10 && filter64 >= 10, "both filters must be tested: float32 %d, float64 %d",
          filter32, filter64);
    CHECK(span2 >= 20 && span3 >= 5, "spans 2 and 3 must be tested: %d and %d runs", span2,
          span3);
  }
  printf("%d grid runs on the %s in %.1f s, %d case(s) failed\n", runs, on_cpu ? "CPU" : "GPU",
         (histd_now_ms() - t0) / 1000, fails);
  return check_finish("test_grid_gpu");
}
