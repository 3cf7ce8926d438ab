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

#include "histd/histd.h" /* histd_sum */
#include "histd/pair.h"

/* ---- by pair: a bin of the distance ------------------------------------- */

/* Where a pair counts: bins of d (WIDTH: floor(d / w); EDGES: E[k] <= d <
 * E[k+1]) as a slot 0..count-1, count (below E[0]) or count + 1 (at or
 * beyond the last edge). edges NULL: WIDTH bins of `width`, inv = fl(1/w).
 * Edges in a geometric row (log bins) are searched from a guess
 * (histd_bin_edges_guess with ga, gb; ga 0: none), with the same answer.
 *
 * Two axes (axes RP_PI or S_MU, histd_ev_bin_pair): axis 1 (r_p, or s =
 * d) in those bins, axis 2 (pi, or mu) in count2 equal bins of width2
 * from 0 (inv2 = fl(1/width2)) up to max2, which pi must stay below and mu
 * may reach (it lands in the last bin). Slot k1 * count2 + k2, below
 * (slots = count * count2) when axis 1 is below E[0] and axis 2 in range,
 * overflow (slots + 1) when either is beyond its range: a grid that meets
 * only the pairs within the bins' reach counts every pair it skips there. */
enum { HISTD_EV_D = 0, HISTD_EV_RP_PI = 1, HISTD_EV_S_MU = 2 };

typedef struct histd_ev_bin {
  const double *edges;
  double width, inv;
  float ga, gb; /* edges: histd_edges_guess's, or ga 0 */
  uint32_t count;
  int axes;     /* HISTD_EV_*  */
  int midpoint; /* the line of sight: the pair's midpoint, else z */
  uint32_t count2;
  double max2, width2, inv2;
} histd_ev_bin;

/* Axis 1's bin of u (HISTD_BIN_BELOW, HISTD_BIN_OVER or 0..count-1). */
HISTD_PAIR_FN uint32_t histd_ev_axis1(const histd_ev_bin *e, double u) {
  return e->edges == 0 ? histd_bin_width(u, e->width, e->inv, e->count)
                       : histd_bin_edges_guess(u, e->edges, e->count, e->ga, e->gb);
}

HISTD_PAIR_FN uint32_t histd_ev_bin_slot(const histd_ev_bin *e, double d) {
  uint32_t b = histd_ev_axis1(e, d);
  return b == HISTD_BIN_BELOW ? e->count : b == HISTD_BIN_OVER ? e->count + 1 : b;
}

/* The pair's pi, from the two points and the minimum-image difference
 * (dx, dy, dz) = i - j. Line of sight z: pi = |dz|. Midpoint (open space):
 * with s = v_i - v_j and l = v_i + v_j, pi = |s.l| / sqrt(l.l) (0 when
 * l.l = 0: no line of sight); each dot product summed (x + y) + z, every
 * operation rounded on its own. */
HISTD_PAIR_FN double histd_pair_pi(int midpoint, double xi, double yi, double zi, double xj,
                                   double yj, double zj, double dx, double dy, double dz) {
  if (!midpoint)
    return dz < 0 ? -dz : dz;
  const double lx = HISTD_ADD(xi, xj), ly = HISTD_ADD(yi, yj), lz = HISTD_ADD(zi, zj);
  const double sl = HISTD_ADD(HISTD_ADD(HISTD_MUL(dx, lx), HISTD_MUL(dy, ly)), HISTD_MUL(dz, lz));
  const double ll = HISTD_ADD(HISTD_ADD(HISTD_MUL(lx, lx), HISTD_MUL(ly, ly)), HISTD_MUL(lz, lz));
  return ll > 0 ? HISTD_DIV(sl < 0 ? -sl : sl, HISTD_SQRT(ll)) : 0;
}

/* Its r_p, given its pi and ss = s.s (the contract's s): line of sight z,
 * sqrt(dx*dx + dy*dy); midpoint, sqrt(max(ss - pi*pi, 0)). Apart from pi
 * because (s, mu) needs pi only: the square root is a tenth of a GPU
 * drain's work on a pair. */
HISTD_PAIR_FN double histd_pair_rp(int midpoint, double dx, double dy, double ss, double pi) {
  if (!midpoint)
    return HISTD_SQRT(HISTD_ADD(HISTD_MUL(dx, dx), HISTD_MUL(dy, dy)));
  const double t = HISTD_SUB(ss, HISTD_MUL(pi, pi));
  return HISTD_SQRT(t > 0 ? t : 0);
}

/* Axis 2: v beyond max2 (pi: v >= max2; mu: v > max2) HISTD_BIN_OVER,
 * else floor(v / width2), the last bin where rounding reaches count2. */
HISTD_PAIR_FN uint32_t histd_ev_axis2(const histd_ev_bin *e, double v) {
  if (e->axes == HISTD_EV_RP_PI ? !(v < e->max2) : !(v <= e->max2))
    return HISTD_BIN_OVER;
  uint32_t k = histd_bin_width(v, e->width2, e->inv2, e->count2);
  return k == HISTD_BIN_OVER ? e->count2 - 1 : k;
}

/* The slot of the pair (i, j) under metric m, for any axes, and in *u the
 * value axis 1 bins (d, r_p or s: what ravg averages). */
HISTD_PAIR_FN uint32_t histd_ev_bin_pair(const histd_ev_bin *e, const histd_metric *m,
                                         double xi, double yi, double zi, double xj, double yj,
                                         double zj, double *u_out) {
  double dx = HISTD_SUB(xi, xj), dy = HISTD_SUB(yi, yj), dz = HISTD_SUB(zi, zj);
  histd_min_image(m, &dx, &dy, &dz);
  const double s = HISTD_ADD(HISTD_ADD(HISTD_MUL(dx, dx), HISTD_MUL(dy, dy)), HISTD_MUL(dz, dz));
  if (e->axes == HISTD_EV_D) {
    *u_out = HISTD_SQRT(s);
    return histd_ev_bin_slot(e, *u_out);
  }
  const uint32_t slots = e->count * e->count2;
  const double pi = histd_pair_pi(e->midpoint, xi, yi, zi, xj, yj, zj, dx, dy, dz);
  double u;
  uint32_t k2;
  if (e->axes == HISTD_EV_RP_PI) {
    u = histd_pair_rp(e->midpoint, dx, dy, s, pi);
    k2 = histd_ev_axis2(e, pi);
  } else { /* s = d, mu = pi / s */
    u = HISTD_SQRT(s);
    k2 = histd_ev_axis2(e, s > 0 ? HISTD_DIV(pi, u) : 0);
  }
  *u_out = u;
  if (k2 == HISTD_BIN_OVER)
    return slots + 1;
  const uint32_t k1 = histd_ev_axis1(e, u);
  return k1 == HISTD_BIN_BELOW ? slots : k1 == HISTD_BIN_OVER ? slots + 1 : k1 * e->count2 + k2;
}

/* ---- by pair: the sums beside a slot's count ---------------------------- */

/* What a binned pair adds to its slot's sum of channel c (histd_sum,
 * histd.h): wp its weight product (w_i w_j; 1 unweighted), u the value
 * axis 1 bins (d, r_p or s). A new sum is a channel there and a case here;
 * the drivers add every channel a result has alike. Each term is rounded
 * once more (wp * u): the weights' check keeps every nonzero wp normal,
 * but a term wp * u below 2^-1022 may lose up to 2^-1075 to underflow
 * (points within about 1e-300 of each other, or weights near 2^-1022), so
 * ravg's sums hold the weights' 1e-12 bound plus 2^-1074 a pair. */
HISTD_PAIR_FN double histd_ev_sum(int c, double wp, double u) {
  return c == HISTD_SUM_WU ? HISTD_MUL(wp, u) : wp;
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
