/*
 * grid.h -- the cell grid of the `grid` algorithm, for C and CUDA alike.
 *
 * A job whose bins stop at r_max (the last edge) well below the extent of
 * its points need not meet every pair: every pair beyond r_max is overflow.
 * The grid cuts space into cells at least `reach_eff` across, sorts the
 * points by cell, and compares each point only with the points of its own
 * and the adjacent cells (27 at most); the pairs it never visits are added
 * to overflow by arithmetic (the total is known). The pairs it does visit
 * go through the kernels' usual exact arithmetic, so the counts are the
 * contract's as long as no unvisited pair could have d < r_max. That is
 * what the margin below guarantees.
 *
 * Span. A grid of span K (1, or up to 3 on the GPU's float32 filter) cuts
 * cells of side >= reach_eff / K and compares a point with the cells
 * within K of its own on every axis ((2K + 1)^3 at most): finer cells meet
 * fewer pairs beyond reach (for reach L/5: 42% of all pairs at K = 1, 17%
 * at K = 2, 10% at K = 3) at the cost of more, emptier neighbours. Below,
 * "adjacent" means within K cells, and a cell's side s_k is at least
 * reach_eff / K, rounded up so that K s_k >= reach_eff holds exactly: to
 * the same roundings as K = 1's.
 *
 * Cells. Open sets: axis k is cut into n_k cells of side s_k >= reach_eff
 * from lo_k (the bounding box of A and B together); a point's cell is
 * floor((x_k - lo_k) / s_k) computed as fl(fl(x_k - lo_k) * fl(1 / s_k)),
 * clamped to [0, n_k - 1]. Periodic boxes (orthorhombic and triclinic alike,
 * the lower-triangular cell of histd.h): the fractional coordinates
 *     f_c = z / cz,  f_b = (y - cy f_c) / by,  f_a = (x - bx f_b - cx f_c) / ax
 * are reduced mod 1 and axis k is cut into n_k = floor(K W_k / reach_eff)
 * equal slices, W_k the box's perpendicular width across the planes of
 * constant f_k (V / |b x c|, V / |c x a|, cz). Neighbours wrap mod n_k; an
 * axis of one or two cells has one or two distinct neighbours (the lists
 * below never repeat a cell, so no pair is met twice).
 *
 * Why an unvisited pair is overflow. Two points whose cells are not
 * adjacent on axis k differ there by more than one cell in the computed
 * coordinates. Open: x_j - x_i > K s_k minus the rounding of both cell
 * coordinates. Periodic: the fractional coordinates differ (mod 1) by more
 * than K / n_k minus their rounding, and two points whose f_k differ by t
 * (mod 1) are at least t W_k apart in every image (W_k is the distance
 * between the planes f_k = 0 and f_k = 1), so again >= K W_k / n_k >=
 * reach_eff less the rounding. Every rounding involved (the cell
 * coordinate's few operations; for periodic boxes also the contract's own
 * wrap, ud (4 |r| + 2 L), histd/pair.h) is at most 2^-48 (M + B) in
 * length, M the largest |coordinate| and B the sum of the box's
 * components, times the box's aspect ratio for the fractional coordinates.
 * So with
 *     reach_eff = max(r_max (1 + 2^-20) + 2^-40 (M + B) (1 + Bmax / Bmin),
 *                     2^-500)
 * every unvisited pair's true distance exceeds r_max (1 + 2^-20) by far
 * more than those roundings, and the contract's d (within a few ulps of
 * the true distance) is > r_max: overflow, as counted. WIDTH bins count
 * overflow when fl(d / w) >= count, which d > count w (1 + 2^-21) ensures.
 * Counts in (r_p, pi) along z (orthorhombic or open) cut each axis by its
 * own reach instead: x and y by r_p's last edge E, z by pi_max, each with
 * the same margin. An unvisited pair then differs by more than E (1 +
 * 2^-20) along x or y, or by more than pi_max (1 + 2^-20) along z, in
 * every image, and the contract's dx (dy, dz) is within the same few ulps
 * of that: r_p = sqrt(dx*dx + dy*dy) >= |dx| (1 - 2^-51) > E, or pi = |dz|
 * > pi_max, overflow either way. (reach stays the sphere's,
 * sqrt(E^2 + pi_max^2): the GPU's filters drop only pairs beyond it.)
 * "Within a few ulps" needs the squares not to underflow: a difference
 * vector longer than 2^-500 has a component whose square is a normal
 * number (>= 2^-1002), beside which the others' underflow (2^-1074 at
 * most each) is negligible; two points 2^-1021 and a few ulps apart have a
 * contract distance of 0, so cells narrower than that floor would skip
 * pairs the contract counts in bin 0 (the engine fuzzer found it). The
 * margin costs nothing measurable: it widens cells by a millionth, and the
 * floor only touches sets whose whole extent is below 2^-500.
 *
 * Order. A cell's linear index is i + n0 (j + n1 k); points are sorted by
 * it, so a cell's points are contiguous and a row of consecutive cells
 * too. Self pairs: cell c meets itself (i < j) and its neighbours c' > c;
 * cross pairs: every A point of cell c meets the B points of every
 * neighbour. Each pair once.
 */
#ifndef HISTD_GRID_H
#define HISTD_GRID_H

#include <stdint.h>

#include "histd/histd.h"

#ifdef __CUDACC__
#define HISTD_GRID_FN __host__ __device__ static inline
#else
#include <math.h>
#define HISTD_GRID_FN static inline
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct histd__grid_geom {
  int periodic;       /* 0: open (lo, scale); 1: a periodic box (fractional) */
  uint32_t n[3];      /* cells per axis, >= 1                              */
  uint32_t span;      /* K: neighbours within K cells an axis (1 to 3)     */
  uint64_t cells;     /* n0 n1 n2                                          */
  double lo[3];       /* open: the cells' origin                          */
  double scale[3];    /* open: 1 / s_k; periodic: n_k                      */
  double bx, cx, cy;  /* periodic: the box's tilts                        */
  double iax, iby, icz; /* periodic: 1 / ax, 1 / by, 1 / cz               */
  double r_max;       /* pairs at or beyond it are overflow                */
  double reach;       /* reach_eff: no cell is narrower                   */
  double rk[3];       /* each axis's cell width at least: reach, or for
                       * (r_p, pi) along z, r_p's and pi's own reach      */
} histd__grid_geom;

/* The GPU grid's largest block (its kernel's launch bounds); "auto" runs
 * the grid at its own block where the job's is larger (a brute-force one;
 * choose.c). */
#define HISTD__GRID_MAX_BLOCK 256u

HISTD_GRID_FN uint32_t histd__grid_axis(double t, uint32_t n) {
  double f = floor(t);
  if (!(f >= 0)) /* also NaN, which finite points never give */
    return 0;
  return f >= (double)n ? n - 1 : (uint32_t)f;
}

/* The cell (linear index) of a point. */
HISTD_GRID_FN uint32_t histd__grid_cell(const histd__grid_geom *g, double x, double y, double z) {
  double t[3];
  if (g->periodic) {
    double fc = z * g->icz;
    double fb = (y - g->cy * fc) * g->iby;
    double fa = (x - g->bx * fb - g->cx * fc) * g->iax;
    t[0] = (fa - floor(fa)) * g->scale[0];
    t[1] = (fb - floor(fb)) * g->scale[1];
    t[2] = (fc - floor(fc)) * g->scale[2];
  } else {
    t[0] = (x - g->lo[0]) * g->scale[0];
    t[1] = (y - g->lo[1]) * g->scale[1];
    t[2] = (z - g->lo[2]) * g->scale[2];
  }
  return histd__grid_axis(t[0], g->n[0]) +
         g->n[0] * (histd__grid_axis(t[1], g->n[1]) +
                    g->n[1] * histd__grid_axis(t[2], g->n[2]));
}

/* The distinct neighbours of index i on an axis of n cells (itself
 * included), ascending; returns how many (1 to 3). */
HISTD_GRID_FN uint32_t histd__grid_axis_neighbours(uint32_t i, uint32_t n, int periodic,
                                                   uint32_t out[3]) {
  if (n <= 3 && periodic) { /* every index is a neighbour */
    for (uint32_t k = 0; k < n; k++)
      out[k] = k;
    return n;
  }
  uint32_t m = 0;
  if (i > 0)
    out[m++] = i - 1;
  else if (periodic)
    out[m++] = n - 1; /* placed last below */
  uint32_t first = m;
  out[m++] = i;
  if (i + 1 < n)
    out[m++] = i + 1;
  else if (periodic)
    out[m++] = 0;
  /* keep them ascending: a wrapped neighbour moves to its place */
  if (first == 1 && out[0] > out[1]) { /* i = 0, periodic: n-1, 0, 1 -> 0, 1, n-1 */
    uint32_t w = out[0];
    out[0] = out[1];
    out[1] = out[2];
    out[2] = w;
  } else if (m == 3 && out[2] < out[1]) { /* i = n-1, periodic: n-2, n-1, 0 -> 0, n-2, n-1 */
    uint32_t w = out[2];
    out[2] = out[1];
    out[1] = out[0];
    out[0] = w;
  }
  return m;
}

/* The neighbour cells of cell c (itself included), ascending, distinct;
 * returns how many (at most 27). Span 1 only: the CPU's grids and the
 * GPU's float64 filter are planned with it (a span-2 grid is walked by
 * its offsets, grid_kernels.cu). */
HISTD_GRID_FN uint32_t histd__grid_neighbours(const histd__grid_geom *g, uint32_t c,
                                              uint32_t out[27]) {
  uint32_t i = c % g->n[0], j = (c / g->n[0]) % g->n[1], k = c / g->n[0] / g->n[1];
  uint32_t ni[3] = {0, 0, 0}, nj[3] = {0, 0, 0}, nk[3] = {0, 0, 0};
  uint32_t ci = histd__grid_axis_neighbours(i, g->n[0], g->periodic, ni);
  uint32_t cj = histd__grid_axis_neighbours(j, g->n[1], g->periodic, nj);
  uint32_t ck = histd__grid_axis_neighbours(k, g->n[2], g->periodic, nk);
  uint32_t m = 0;
  for (uint32_t a = 0; a < ck; a++)
    for (uint32_t b = 0; b < cj; b++)
      for (uint32_t d = 0; d < ci; d++)
        out[m++] = ni[d] + g->n[0] * (nj[b] + g->n[1] * nk[a]);
  return m;
}

/* The geometry of span 1 (histd__grid_plan_span's) for a problem (bins
 * resolved, one frame) with at most max_cells cells (1 to 2^32 - 1: a
 * cell's index is 32 bits): 0, or
 * HISTD_EINVAL with a sentence when the grid cannot apply (r_max not
 * finite, a box whose widths are not finite numbers > 0) or its plan fails
 * grid.c's guard (no cells, more than max_cells, a NaN scale): no caller,
 * CPU or GPU, ever indexes a grid of no cells. */
int histd__grid_plan(const histd_problem *p, uint64_t max_cells, histd__grid_geom *g,
                     char *msg, size_t msglen);
/* The same of span K, 1 to HISTD__GRID_SPAN_MAX: cells >= reach / K. */
#define HISTD__GRID_SPAN_MAX 3u
int histd__grid_plan_span(const histd_problem *p, uint64_t max_cells, uint32_t span,
                          histd__grid_geom *g, char *msg, size_t msglen);

/* The most cells a grid of this problem gets: on the CPU about a point of
 * B (or A) a cell (emptier cells cost more to visit than they save); on
 * the GPU max(n_a, n_b) / 16, at most 2^28 (kernels/grid_engine.c).
 * "auto" plans with it to see whether the cells pay (choose.c). */
uint64_t histd__grid_max_cells(const histd_problem *p, bool gpu);

/* ---- the CPU's grid: points sorted by cell (grid.c) ---------------------- */

typedef struct histd__grid {
  histd__grid_geom g;
  size_t *start_a;    /* cells + 1: A's cell c is [start_a[c], start_a[c+1]) */
  size_t *start_b;    /* B's (cross), or start_a                         */
  histd_dataset a, b; /* A (and B, cross) sorted by cell, weights with them */
  histd_problem p;    /* the problem on the sorted sets                  */
  uint64_t candidates; /* the pairs the grid visits                     */
  size_t *order_a;    /* keep_order: A's sorted position -> its index before */
  size_t *order_b;    /* B's (cross), or order_a                        */
} histd__grid;

/* A block of pairs: i in [i0, i1) x j in [j0, j1) (j > i when diag). */
typedef struct histd__block {
  size_t i0, i1, j0, j1;
  int diag;
} histd__block;

int histd__grid_build(histd__grid *grid, const histd_problem *p, uint64_t max_cells,
                      bool keep_order, char *msg, size_t msglen);
void histd__grid_free(histd__grid *grid);
/* Cell c's blocks (neighbour cells in consecutive runs merged): at most 28. */
uint32_t histd__grid_blocks(const histd__grid *grid, uint32_t c, histd__block out[28]);
/* Every neighbour cell of c (c too) as runs of B's points [j0, j1), for a
 * traversal by point: each point of A's cell c meets them all (self
 * problems included: the caller skips the point itself). At most 27. */
uint32_t histd__grid_runs(const histd__grid *grid, uint32_t c, histd__block out[27]);

#ifdef __cplusplus
}
#endif
#endif
