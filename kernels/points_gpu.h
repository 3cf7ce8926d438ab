/*
 * points_gpu.h -- the interface between the host driver of the point
 * statistics on the GPU (points_engine.c, plain C) and its device code
 * (points_kernels.cu): per-point neighbour counts, nearest neighbours and
 * pair lists, by the cell grid (src/engine/grid.h), the evaluators of
 * histd/eval.h, and the contract's binary64 pair (histd/pair.h).
 *
 * The sets are sorted by cell on the device as the histogram's grid sorts
 * them (grid_gpu.h's grid_sort_set, with each sorted point's index before
 * the sort kept in `order`). A thread is a point of A (a sorted position):
 *   - by point: it meets the B points of its cell's neighbours (itself
 *     skipped) and writes its row of the output at its index before the
 *     sort, so rows come out in A's order;
 *   - by pair (a pair list): it meets the B points of the neighbours after
 *     its cell, and those after it in its own cell (self pairs), or every
 *     neighbour's (A x B), and appends each pair within the radius to a
 *     device buffer through an atomic counter; a launch whose pairs do not
 *     fit is run again in halves by the host, so the buffer bounds memory.
 */
#ifndef HISTD_POINTS_GPU_H
#define HISTD_POINTS_GPU_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "grid.h"
#include "histd/histd.h"
#include "histd/pair.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct points_params {
  histd__grid_geom geom;
  histd_metric metric;
  double r;          /* a pair counts when d <= r                        */
  int stat;          /* HISTD_STAT_POINT_COUNTS, _NEAREST, _PAIRS or
                      * _POINT_HISTOGRAM                                 */
  int self;          /* B is A                                           */
  int distinct;      /* skip the pairs of a point with itself (equal ids) */
  int weighted;      /* POINT_COUNTS: sum B's weights too                 */
  uint32_t na, nb;
  const double *ax, *ay, *az;          /* A sorted by cell               */
  const double *bx, *by, *bz, *bw;     /* B sorted by cell (A's for self) */
  const uint32_t *start_a, *start_b;   /* cells + 1                      */
  const uint32_t *order_a, *order_b;   /* sorted position -> index before */
  const uint64_t *id_a, *id_b;         /* index -> origin (NULL: index)   */
  /* by point: rows in A's order */
  unsigned long long *counts;
  double *wsum;
  double *nd;
  long long *nj;
  histd_ev_bin bin;             /* POINT_HISTOGRAM: its bins (edges on the device) */
  unsigned long long *hist;     /*   rows of bin.count + 1: counts, then below */
  /* by pair */
  histd_pair_record *rec;
  unsigned long long *nrec; /* records appended (may pass cap: then none fit) */
  unsigned long long cap;
  uint64_t frame;
} points_params;

/* Threads over A's sorted positions [p0, p1) of p's kernel, on stream s. */
int points_launch(const points_params *p, uint32_t p0, uint32_t p1, cudaStream_t s, char *msg,
                  size_t msglen);

#ifdef __cplusplus
}
#endif
#endif
