/*
 * grid_gpu.h -- the interface between the host driver of "grid" on the
 * GPU (grid_engine.c, plain C) and its device code (grid_kernels.cu).
 *
 * The cells (src/engine/grid.h: geometry, and why pairs in cells that are
 * not adjacent are overflow) are built on the device:
 *   1. keys: each point's cell, histd__grid_cell (the same function as the
 *      CPU's), and its index;
 *   2. CUB's radix sort of (cell, index) on the cell's bits;
 *   3. a gather of the coordinates (and weights) into cell order;
 *   4. cell starts: start[c] = the first sorted point of cell >= c, by a
 *      binary search per cell (start[cells] = n);
 *   5. chunks: each cell's A points in runs of 32, one warp's work; their
 *      first chunk per cell by CUB's exclusive scan.
 * Then the pair kernel (grid_kernels.cu states its arithmetic and why it
 * is exact): a persistent grid whose warps take chunks from a counter;
 * each chunk's 32 A points meet the B points of their cell's neighbours
 * (self pairs: cells c' > c, and j > i inside the cell).
 */
#ifndef HISTD_GRID_GPU_H
#define HISTD_GRID_GPU_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "fast_bins.h"
#include "grid.h"
#include "histd/eval.h"
#include "histd/pair.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GRID_CHUNK 32u      /* A points per chunk: one per lane of a warp */
#define GRID_MAX_BLOCK HISTD__GRID_MAX_BLOCK /* threads per block, at most (launch bounds) */
#define GRID_QUEUE 64u      /* per warp: pairs that passed the filter, awaiting the contract */
/* Blocks a multiprocessor of the two-axis kernels' launch bounds (80
 * registers on sm_90): 3 against the 2 their 97 to 118 registers left,
 * (r_p, pi) and (s, mu) of C1 23% to 25% faster on an H200 */
#define GRID_TWO_BLOCKS 3
/* and of the one-axis float32 filter's (64 registers, no spills): the
 * offset loop of spans 1 to 3 had taken G1's to 72, 3 blocks instead of 4,
 * and G1 and G2 10% to 13% slower on an H200 */
#define GRID_ONE_BLOCKS 4
/* A cell's neighbour offsets at the largest span: (2K + 1)^3 */
#define GRID_OFFSETS_MAX                                                                          \
  ((2 * HISTD__GRID_SPAN_MAX + 1) * (2 * HISTD__GRID_SPAN_MAX + 1) * (2 * HISTD__GRID_SPAN_MAX + 1))

/* The neighbour offsets of a grid of span K: (2K + 1)^3 (27, 125 or 343). */
static inline uint32_t grid_offsets(const histd__grid_geom *g) {
  const uint32_t side = 2 * g->span + 1;
  return side * side * side;
}

/* One point set sorted by cell, on the device. */
typedef struct grid_set {
  uint32_t n;
  const double *x, *y, *z, *w; /* as given (w may be NULL) */
  double *sx, *sy, *sz, *sw;   /* sorted by cell (sw NULL without weights) */
  float *fx, *fy, *fz;         /* float32 filter: the sorted points relative to
                                * their cell's corner (grid_kernels.cu), or NULL */
  uint32_t *start;             /* cells + 1 */
  uint32_t *order;             /* NULL, or each sorted point's index before the sort */
} grid_set;

/* Scratch for sorting sets of up to n points over `cells` cells. */
typedef struct grid_scratch {
  uint32_t *keys, *vals; /* 2n each: CUB's double buffers */
  void *temp;
  size_t temp_bytes;
} grid_scratch;

/* Bytes CUB needs to sort n pairs and to scan cells + 1 counts. */
int grid_temp_bytes(uint32_t n, uint64_t cells, size_t *bytes, char *msg, size_t msglen);

/* Steps 1 to 4 for one set, queued on stream s (m: the box, for the
 * float32 filter's relative coordinates). */
int grid_sort_set(const histd__grid_geom *g, const histd_metric *m, grid_set *set,
                  grid_scratch *scr, cudaStream_t s, char *msg, size_t msglen);

/* Step 5: chunk_off[c] (cells + 1 of them) = the chunks of cells before c,
 * with cnt (cells + 1) as scratch; *chunks = chunk_off[cells] (the stream
 * is synchronised to read it). */
int grid_chunks(const uint32_t *start, uint64_t cells, uint32_t *cnt, uint32_t *chunk_off,
                grid_scratch *scr, uint32_t *chunks, cudaStream_t s, char *msg, size_t msglen);

typedef struct grid_params {
  histd__grid_geom geom;
  histd_metric metric;
  int edges;               /* 0: width bins, 1: explicit edges */
  uint32_t count;          /* bins; slots = count + 2 (below, overflow); two axes:
                            * count1 x count2 */
  uint32_t count1;         /* the first axis's bins (its edges: count1 + 1) */
  int two;                 /* bins of two axes: ev says where a pair counts */
  histd_ev_bin ev;         /* two: the evaluator (its edges: the kernel's) */
  double width, inv_width; /* width bins: w and fl(1 / w) */
  const double *dedges;    /* explicit: count1 + 1 edges on the device */
  int filter32;            /* 1: the float32 filter, else the float64 one (grid_kernels.cu) */
  double s_cut;            /* float64 filter: an estimate above it is overflow */
  int cyl;                 /* (r_p, pi) along z: drop by the cylinder */
  double rp_cut, pi_cut;   /* cyl: estimates of dx^2 + dy^2, dz^2 above them are overflow */
  float cut32;             /* float32 filter: likewise, of dx^2 + dy^2 + dz^2 */
  float rp_cut32, pi_cut32; /* float32 filter with cyl: of dx^2 + dy^2, dz^2 */
  double e32[3], ed;       /* float32 filter: each component's error bound, and
                            * 2^-44 (M + B)(1 + rho) (the contract's, 16 times over) */
  int fast;                /* float32 bins (grid_kernels.cu): queued pairs binned
                            * from their float32 values where the bounds allow */
  histd__fast_dev fb;      /* fast: the tables (on the device), the guesses and
                            * mu's margin (fast_bins.h, fast_slot.cuh) */
  const float *delta;      /* float32 filter: (2K + 1)^3 x 3 (K the span), the
                            * translation of each neighbour offset (ox, oy, oz),
                            * at 3 (((oz+K) (2K+1) + oy+K) (2K+1) + ox+K) */
  int cross;               /* 0: self pairs i < j of A */
  int weighted;            /* aw and bw hold the weights */
  int unit;                /* weighted sums with every weight 1 (aw, bw unread) */
  int sum;                 /* weighted: the channel (histd_sum) the rows sum; the
                            * counts are kept in HISTD_SUM_W's pass only */
  const double *ax, *ay, *az, *aw; /* A sorted by cell */
  const double *bx, *by, *bz, *bw; /* B sorted by cell (A's for self pairs) */
  const float *afx, *afy, *afz, *bfx, *bfy, *bfz; /* float32 filter: relative to the cells */
  const uint32_t *start_a, *start_b; /* cells + 1 */
  const uint32_t *chunk_off;         /* cells + 1 */
  uint32_t cells;
  uint32_t block;          /* threads per block (a multiple of 32, <= GRID_MAX_BLOCK) */
  int shared_counts;       /* 1: a per-block histogram in shared memory */
  int shared_edges;        /* 1: the edges staged in shared memory */
  size_t smem;             /* dynamic shared memory per block */
  unsigned long long *counts; /* slots; bins, below (overflow is left to the host) */
  double *wsum, *werr;     /* weighted: grid rows of slots (Neumaier pairs) */
  int wglobal;             /* weighted: 0 the warps' partials and Neumaier pairs
                            * in shared memory; 1 the pairs in wscr; 2 the
                            * partials too (the default: choose_layout) */
  double *wscr;            /* wglobal: each block's rows between folds, 2 (1) or
                            * 3 (2) x warps x slots a block (grid_wscr_bytes),
                            * zeroed by the kernel at each launch */
  uint32_t split;          /* work items a chunk: 1 (a warp takes a chunk with
                            * every neighbour cell) or the offsets, (2K + 1)^3
                            * (a neighbour offset each, for jobs of too few
                            * chunks to fill the device's warps: a species'
                            * piece, a small set) */
  unsigned int *next;      /* the launch's item counter, zeroed before it */
  unsigned long long *candidates; /* += the pairs the warps met */
} grid_params;

/* Shared-memory bytes of p's kernel as its fields lay it out. */
size_t grid_smem_bytes(const grid_params *p);

/* Global scratch bytes (wscr) of p's weighted kernel with `grid` blocks. */
static inline size_t grid_wscr_bytes(const grid_params *p, uint32_t grid) {
  return p->weighted && p->wglobal
             ? (size_t)grid * (p->wglobal == 2 ? 3 : 2) * (p->block / 32) *
                   ((size_t)p->count + 2) * 8
             : 0;
}

/* Blocks of p's kernel that fit on one multiprocessor. */
int grid_blocks_per_sm(const grid_params *p, int *blocks, char *msg, size_t msglen);

/* Launches p's pair kernel over chunks [k0, k1) with `grid` blocks (the
 * same on every launch of a job: block b owns row b of wsum/werr). */
int grid_pairs_launch(const grid_params *p, uint32_t k0, uint32_t k1, uint32_t grid,
                      cudaStream_t s, char *msg, size_t msglen);

#ifdef __cplusplus
}
#endif
#endif
