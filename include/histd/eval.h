/*
 * eval.h -- pair evaluators: what one pair adds to a 2-body statistic,
 * written once for C and CUDA.
 *
 * A 2-body statistic is a pass over pairs and an evaluator. The pass (a
 * driver: brute force or the cell grid, on the CPU's threads or a GPU)
 * owns the loops, the memory and the threads; it hands the evaluator each
 * pair it meets as the contract's distance d (histd/pair.h) of point i of A
 * and point j of B. The evaluator is a small struct and a few inline
 * functions that say what that pair contributes, and where. After
 * HOOMD-blue's pair potentials, where an evaluator is a small struct and
 * one driver and one GPU kernel template serve them all: here a new
 * statistic is one evaluator and one row where the drivers dispatch.
 *
 * Two traversals, by the shape of the output:
 *   - by pair: every pair once (self pairs i < j), each adding to an
 *     output the threads share: a bin (histd_ev_bin: counts, w_i w_j), or
 *     a record of a pair list (histd_ev_within);
 *   - by point: each point of A meets every partner in B that may count,
 *     its accumulator private to the thread that owns the point, and
 *     becomes the point's row of a per-point output (histd_ev_count,
 *     histd_ev_nearest). Each pair is met twice in a self problem (once
 *     from each end); no two threads ever write one row.
 *
 * Every evaluator is exact by the contract: it sees the contract's d and
 * compares it with the job's numbers (a radius, bin edges) as the
 * definitions in shared/DESIGN.md say, and sums weights with Neumaier's
 * compensation. The fast kernels of the plain histogram (the CPU's float32
 * loops, the GPU's float32 and tensor-core kernels) keep their own loops,
 * since their speed is in how they avoid computing d at all; they serve
 * histd_ev_bin's counts, as the registry says (histd_kernel.caps).
 */
#ifndef HISTD_EVAL_H
#define HISTD_EVAL_H

#include <stdint.h>

#include "histd/pair.h"

/* ---- by pair: a bin of the distance ------------------------------------- */

/* Where a pair counts: bins of d (WIDTH: floor(d / w); EDGES: E[k] <= d <
 * E[k+1]) as a slot 0..count-1, count (below E[0]) or count + 1 (at or
 * beyond the last edge). edges NULL: WIDTH bins of `width`, inv = fl(1/w). */
typedef struct histd_ev_bin {
  const double *edges;
  double width, inv;
  uint32_t count;
} histd_ev_bin;

HISTD_PAIR_FN uint32_t histd_ev_bin_slot(const histd_ev_bin *e, double d) {
  uint32_t b = e->edges != 0 ? histd_bin_edges(d, e->edges, e->count)
                             : histd_bin_width(d, e->width, e->inv, e->count);
  return b == HISTD_BIN_BELOW ? e->count : b == HISTD_BIN_OVER ? e->count + 1 : b;
}

/* ---- by pair: the pairs within a radius --------------------------------- */

/* A pair counts (a pair list's record, a count within R) when d <= r. */
HISTD_PAIR_FN int histd_ev_within(double d, double r) { return d <= r; }

/* ---- by point: the neighbours within a radius --------------------------- */

/* A point's partners with d <= r: how many, and the sum of their weights
 * (Neumaier-compensated: sum + err). */
typedef struct histd_ev_count {
  uint64_t n;
  double sum, err;
} histd_ev_count;

HISTD_PAIR_FN void histd_ev_count_begin(histd_ev_count *a) {
  a->n = 0;
  a->sum = 0;
  a->err = 0;
}

HISTD_PAIR_FN void histd_ev_count_pair(histd_ev_count *a, double d, double r) {
  a->n += d <= r;
}

/* Neumaier's step, in the contract's separate roundings. */
HISTD_PAIR_FN void histd_ev_neumaier(double *sum, double *err, double v) {
  double t = HISTD_ADD(*sum, v);
  double as = *sum < 0 ? -*sum : *sum, av = v < 0 ? -v : v;
  if (as >= av)
    *err = HISTD_ADD(*err, HISTD_ADD(HISTD_SUB(*sum, t), v));
  else
    *err = HISTD_ADD(*err, HISTD_ADD(HISTD_SUB(v, t), *sum));
  *sum = t;
}

HISTD_PAIR_FN void histd_ev_count_pair_w(histd_ev_count *a, double d, double r, double wj) {
  if (d <= r) {
    a->n++;
    histd_ev_neumaier(&a->sum, &a->err, wj);
  }
}

HISTD_PAIR_FN double histd_ev_count_weight(const histd_ev_count *a) {
  return HISTD_ADD(a->sum, a->err);
}

/* ---- by point: the nearest neighbour ------------------------------------ */

/* A point's nearest partner with d <= r: the least d, and of equal ones
 * the lowest index j (an index in B's dataset); j = -1: none yet. */
typedef struct histd_ev_nearest {
  double d;
  int64_t j;
} histd_ev_nearest;

HISTD_PAIR_FN void histd_ev_nearest_begin(histd_ev_nearest *a) {
  a->d = 0;
  a->j = -1;
}

HISTD_PAIR_FN void histd_ev_nearest_pair(histd_ev_nearest *a, double d, double r, int64_t j) {
  if (d <= r && (a->j < 0 || d < a->d || (d == a->d && j < a->j))) {
    a->d = d;
    a->j = j;
  }
}

#endif /* HISTD_EVAL_H */
