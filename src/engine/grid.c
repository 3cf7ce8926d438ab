/*
 * grid.c -- the cell grid on the host: its geometry (grid.h states why no
 * pair it skips can be below r_max) and, for the CPU engine, the points
 * sorted by cell and the blocks of pairs each cell meets.
 *
 * The sort is a counting sort (one pass to count the cells, a prefix sum,
 * one pass to scatter): O(n), stable, and as fast as the copy it makes.
 * The GPU sorts the same keys with CUB's radix sort (kernels/).
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "grid.h"

#define AXIS_CELLS_MAX (1u << 20)

static double max_abs(const histd_dataset *d) {
  double m = 0;
  for (int k = 0; k < 3; k++) {
    m = fmax(m, fabs(d->min[k]));
    m = fmax(m, fabs(d->max[k]));
  }
  return m;
}

/* Scales the per-axis counts down until their product is at most max. */
static void cap_cells(uint32_t n[3], uint64_t max) {
  while ((uint64_t)n[0] * n[1] * n[2] > max) {
    int k = n[0] >= n[1] && n[0] >= n[2] ? 0 : n[1] >= n[2] ? 1 : 2;
    double f = cbrt((double)max / ((double)n[0] * n[1] * n[2]));
    uint32_t v = (uint32_t)(n[k] * f);
    n[k] = v >= n[k] ? n[k] - 1 : v < 1 ? 1 : v;
  }
}

/* The guard every grid's plan passes before anyone indexes its cells (the
 * CPU's sort and blocks, the GPU's arrays of cells + 1): 1 to 2^20 cells an
 * axis, 1 to max_cells (at most 2^32 - 1: a cell's index is 32 bits) in
 * all, finite scales and a reach > 0. A plan that fails it is an error,
 * never a grid of no cells. */
static int grid_check(const histd__grid_geom *g, uint64_t max_cells, char *msg, size_t msglen) {
  bool ok = g->reach > 0 && g->cells >= 1 && g->cells <= max_cells && g->cells <= UINT32_MAX &&
            g->cells == (uint64_t)g->n[0] * g->n[1] * g->n[2];
  for (int k = 0; k < 3; k++)
    ok = ok && g->n[k] >= 1 && g->n[k] <= AXIS_CELLS_MAX && g->scale[k] >= 0 &&
         g->scale[k] <= DBL_MAX;
  if (ok)
    return 0;
  return histd_fail(msg, msglen, HISTD_EINVAL,
                    "the grid's plan came to %u x %u x %u cells (at most %llu allowed, reach "
                    "%g): it cannot count this job; run a brute-force kernel (\"cpu\")",
                    g->n[0], g->n[1], g->n[2], (unsigned long long)max_cells, g->reach);
}

int histd__grid_plan(const histd_problem *p, uint64_t max_cells, histd__grid_geom *g,
                     char *msg, size_t msglen) {
  return histd__grid_plan_span(p, max_cells, 1, g, msg, msglen);
}

int histd__grid_plan_span(const histd_problem *p, uint64_t max_cells, uint32_t span,
                          histd__grid_geom *g, char *msg, size_t msglen) {
  memset(g, 0, sizeof *g);
  if (span < 1 || span > HISTD__GRID_SPAN_MAX)
    return histd_fail(msg, msglen, HISTD_EINVAL, "the grid's span is 1 to %u, got %u",
                      HISTD__GRID_SPAN_MAX, span);
  max_cells = max_cells < 1 ? 1 : max_cells > UINT32_MAX ? UINT32_MAX : max_cells;
  const histd_dataset *a = p->a, *b = p->b ? p->b : p->a;
  const double r_max = histd_problem_reach(p);
  if (!isfinite(r_max) || !(r_max > 0))
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "the grid needs a finite r_max > 0 (the last bin edge), got %g", r_max);
  const histd_box *box = &p->box;
  const bool periodic = box->kind != HISTD_BOX_NONE;
  double m = fmax(max_abs(a), max_abs(b)), bsum = 0, ratio = 1;
  if (periodic) {
    bsum = box->ax + fabs(box->bx) + box->by + fabs(box->cx) + fabs(box->cy) + box->cz;
    double bmin = fmin(box->ax, fmin(box->by, box->cz));
    double bmax = fmax(fmax(box->ax, box->by), fmax(box->cz, fmax(fabs(box->bx),
                                                                  fmax(fabs(box->cx), fabs(box->cy)))));
    ratio = bmax / bmin;
  }
  /* grid.h: the margin, and the floor below which squares underflow */
  const double margin = 0x1p-40 * (m + bsum) * (1 + ratio);
  const double reach = fmax(r_max * (1 + 0x1p-20) + margin, 0x1p-500);
  /* each axis's cells: reach wide, or for (r_p, pi) along z in an
   * orthorhombic box or open space, r_p's last edge across and pi_max
   * along (grid.h: a pair farther apart on an axis is overflow) */
  double rk[3] = {reach, reach, reach};
  if (p->statistic == HISTD_STAT_RP_PI && !p->los_midpoint && box->kind != HISTD_BOX_TRICLINIC) {
    const double rp = histd_bins_edge(&p->bins, p->bins.count);
    rk[0] = rk[1] = fmax(rp * (1 + 0x1p-20) + margin, 0x1p-500);
    rk[2] = fmax(p->bins.max2 * (1 + 0x1p-20) + margin, 0x1p-500);
  }
  g->r_max = r_max;
  g->reach = reach;
  memcpy(g->rk, rk, sizeof g->rk);
  g->periodic = periodic;
  g->span = span;
  double side[3]; /* each axis's least cell side: rk / K, rounded up (K side >= rk) */
  for (int k = 0; k < 3; k++) {
    side[k] = rk[k] / span;
    if (fma(side[k], span, -rk[k]) < 0)
      side[k] = nextafter(side[k], INFINITY);
  }
  if (periodic) {
    double w[3];
    histd__box_widths(box, w);
    for (int k = 0; k < 3; k++) {
      if (!(w[k] > 0 && w[k] <= DBL_MAX)) /* histd_box_check refuses such a box first */
        return histd_fail(msg, msglen, HISTD_EINVAL,
                          "the grid cannot cut a periodic box whose width %d is %g", k + 1, w[k]);
      double f = floor(w[k] / side[k]);
      uint32_t n = f < 1 ? 1 : f > AXIS_CELLS_MAX ? AXIS_CELLS_MAX : (uint32_t)f;
      while (n > 1 && w[k] / n < side[k]) /* the division rounded up */
        n--;
      g->n[k] = n;
    }
    cap_cells(g->n, max_cells);
    g->bx = box->bx;
    g->cx = box->cx;
    g->cy = box->cy;
    g->iax = 1 / box->ax;
    g->iby = 1 / box->by;
    g->icz = 1 / box->cz;
    for (int k = 0; k < 3; k++)
      g->scale[k] = g->n[k];
  } else {
    double ext[3];
    for (int k = 0; k < 3; k++) {
      double lo = fmin(a->min[k], b->min[k]), hi = fmax(a->max[k], b->max[k]);
      g->lo[k] = lo;
      ext[k] = hi - lo;
      double f = floor(ext[k] / side[k]) + 1;
      g->n[k] = !(f < AXIS_CELLS_MAX) ? AXIS_CELLS_MAX : (uint32_t)f;
    }
    cap_cells(g->n, max_cells);
    for (int k = 0; k < 3; k++) /* cells at least rk / K wide, n of them cover the extent */
      g->scale[k] = 1 / fmax(side[k], ext[k] / g->n[k]);
  }
  g->cells = (uint64_t)g->n[0] * g->n[1] * g->n[2];
  return grid_check(g, max_cells, msg, msglen);
}

uint64_t histd__grid_max_cells(const histd_problem *p, bool gpu) {
  const size_t na = p->a->n, nb = p->b != NULL ? p->b->n : na;
  uint64_t m = gpu ? (na > nb ? na : nb) / 16 : nb;
  m = m > (1u << 28) ? (1u << 28) : m;
  return m > 0 ? m : 1;
}

void histd__grid_free(histd__grid *grid) {
  free(grid->start_a);
  if (grid->start_b != grid->start_a)
    free(grid->start_b);
  if (grid->order_b != grid->order_a)
    free(grid->order_b);
  free(grid->order_a);
  histd_dataset_free(&grid->a);
  histd_dataset_free(&grid->b);
  memset(grid, 0, sizeof *grid);
}

/* Sorts src by cell into dst (with its weights) and fills start (cells +
 * 1) and, when order_out is not NULL, each sorted point's index in src. */
static int sort_by_cell(const histd__grid_geom *g, const histd_dataset *src, bool weights,
                        histd_dataset *dst, size_t **start_out, size_t **order_out, char *msg,
                        size_t msglen) {
  const size_t n = src->n;
  uint32_t *key = malloc((n ? n : 1) * sizeof *key);
  size_t *start = calloc(g->cells + 1, sizeof *start);
  size_t *order = order_out != NULL ? malloc((n ? n : 1) * sizeof *order) : NULL;
  int rc = histd_dataset_alloc(dst, n, msg, msglen);
  if (rc == 0 && weights)
    rc = histd_dataset_alloc_weights(dst, msg, msglen);
  if (rc == 0 && (key == NULL || start == NULL || (order_out != NULL && order == NULL)))
    rc = histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for a grid of %llu cells",
                    (unsigned long long)g->cells);
  if (rc != 0) {
    free(key);
    free(start);
    free(order);
    histd_dataset_free(dst);
    return rc;
  }
  for (size_t i = 0; i < n; i++) {
    key[i] = histd__grid_cell(g, src->x[i], src->y[i], src->z[i]);
    start[key[i] + 1]++;
  }
  for (uint64_t c = 0; c < g->cells; c++)
    start[c + 1] += start[c];
  size_t *next = malloc((g->cells ? g->cells : 1) * sizeof *next);
  if (next == NULL) {
    free(key);
    free(start);
    free(order);
    histd_dataset_free(dst);
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for a grid of %llu cells",
                      (unsigned long long)g->cells);
  }
  memcpy(next, start, g->cells * sizeof *next);
  for (size_t i = 0; i < n; i++) {
    size_t o = next[key[i]]++;
    dst->x[o] = src->x[i];
    dst->y[o] = src->y[i];
    dst->z[o] = src->z[i];
    if (weights)
      dst->w[o] = src->w[i];
    if (order != NULL)
      order[o] = i;
  }
  free(next);
  free(key);
  memcpy(dst->min, src->min, sizeof dst->min);
  memcpy(dst->max, src->max, sizeof dst->max);
  dst->box = src->box;
  *start_out = start;
  if (order_out != NULL)
    *order_out = order;
  return 0;
}

/* The pairs the grid visits: sum over cells of what histd__grid_blocks
 * gives. */
static uint64_t count_candidates(const histd__grid *grid) {
  uint64_t total = 0;
  histd__block blk[28];
  for (uint64_t c = 0; c < grid->g.cells; c++) {
    uint32_t nb = histd__grid_blocks(grid, (uint32_t)c, blk);
    for (uint32_t k = 0; k < nb; k++) {
      uint64_t ni = blk[k].i1 - blk[k].i0;
      total += blk[k].diag ? ni * (ni - 1) / 2 : ni * (uint64_t)(blk[k].j1 - blk[k].j0);
    }
  }
  return total;
}

int histd__grid_build(histd__grid *grid, const histd_problem *p, uint64_t max_cells,
                      bool keep_order, char *msg, size_t msglen) {
  memset(grid, 0, sizeof *grid);
  int rc = histd__grid_plan(p, max_cells, &grid->g, msg, msglen);
  if (rc != 0)
    return rc;
  const bool cross = p->b != NULL;
  /* each set's weights where it has them: a count per point weighs B's
   * neighbours only, and A may carry none */
  rc = sort_by_cell(&grid->g, p->a, p->weighted && p->a->w != NULL, &grid->a, &grid->start_a,
                    keep_order ? &grid->order_a : NULL, msg, msglen);
  if (rc == 0 && cross)
    rc = sort_by_cell(&grid->g, p->b, p->weighted && p->b->w != NULL, &grid->b, &grid->start_b,
                      keep_order ? &grid->order_b : NULL, msg, msglen);
  if (rc != 0) {
    histd__grid_free(grid);
    return rc;
  }
  if (!cross) {
    grid->start_b = grid->start_a;
    grid->order_b = grid->order_a;
  }
  grid->p = *p;
  grid->p.a = &grid->a;
  grid->p.b = cross ? &grid->b : NULL;
  grid->candidates = count_candidates(grid);
  return 0;
}

/* Cell c's neighbour cells (self: only those after c when after_only) as
 * runs of consecutive cells, each one range of B's points. */
static uint32_t neighbour_runs(const histd__grid *grid, uint32_t c, bool after_only,
                               histd__block *out) {
  const size_t i0 = grid->start_a[c], i1 = grid->start_a[c + 1];
  uint32_t nbr[27], m = 0;
  const uint32_t count = histd__grid_neighbours(&grid->g, c, nbr);
  for (uint32_t k = 0; k < count;) {
    if (after_only && nbr[k] <= c) {
      k++;
      continue;
    }
    uint32_t e = k;
    while (e + 1 < count && nbr[e + 1] == nbr[e] + 1)
      e++;
    size_t j0 = grid->start_b[nbr[k]], j1 = grid->start_b[nbr[e] + 1];
    if (j1 > j0)
      out[m++] = (histd__block){i0, i1, j0, j1, 0};
    k = e + 1;
  }
  return m;
}

uint32_t histd__grid_runs(const histd__grid *grid, uint32_t c, histd__block out[27]) {
  if (grid->start_a[c + 1] == grid->start_a[c])
    return 0;
  return neighbour_runs(grid, c, false, out);
}

uint32_t histd__grid_blocks(const histd__grid *grid, uint32_t c, histd__block out[28]) {
  const bool self = grid->p.b == NULL;
  const size_t i0 = grid->start_a[c], i1 = grid->start_a[c + 1];
  if (i1 == i0)
    return 0;
  uint32_t m = 0;
  if (self && i1 - i0 >= 2)
    out[m++] = (histd__block){i0, i1, i0, i1, 1};
  /* runs of consecutive cells (self: only those after c) are one range */
  return m + neighbour_runs(grid, c, self, out + m);
}
