/*
 * stats_gpu.h -- the interface between the host driver of "tiled-stats"
 * (stats_engine.c, plain C) and its device code (stats_kernels.cu).
 *
 * "tiled-stats" runs every problem of the statistics family: open,
 * orthorhombic and triclinic boxes, self and A x B pairs, equal-width and
 * explicit edges (log bins and within-R are explicit edges by then), with
 * or without weights. Each pair's bin is the contract's: by histd/pair.h,
 * the contract's own binary64 functions, or by float32 pairs where their
 * bounds leave no doubt (below).
 *
 * One launch covers a range of tile pairs (I, J) (tiles of `block`
 * points), each block an equal run of them: a block holds anchor tile I's
 * points one per thread in registers and meets B's tile J staged in
 * shared memory (self pairs: tiles J >= I, j > i inside tile I). Counts
 * go to 32-bit counters in shared memory, one column per lane or one per
 * block, when they fit, else straight to global 64-bit atomics
 * (count_sink.h); overflow is not read there (half of a g(r)'s pairs to
 * half the box: in global memory one slot's atomics, all serialised) but
 * counted by the host, as every pair less those counted. (Unweighted
 * float32 pairs add overflow to their shared counters all the same, unread:
 * cheaper than a branch.)
 *
 * Weights, within 1e-12 of the exact sum relative to the sum of |w_i w_j|
 * in the bin, whatever the order: each warp adds its pairs' products to
 * partial sums per bin, either one column per lane (no atomics; when the
 * columns leave room for two blocks a multiprocessor) or one per warp by
 * shared-memory atomics; a partial takes at most 32 * block terms between
 * two flushes (block <= 128: at most 4096 terms, so whatever the order or
 * tree of the additions its error is at most 4095 u sum|terms| < 4.6e-13
 * of it, u = 2^-53); after each partner tile the warp folds its partials
 * into its own Neumaier (sum, compensation) pair per bin, whose error is
 * about 2u of what it holds. At the end of a launch the block folds its warps' pairs
 * into its own row of (sum, compensation) in global memory, again by
 * Neumaier steps; the host folds the rows. The errors add to well under
 * 1e-12 of sum |w_i w_j|.
 *
 * Float32 pairs (f32; src/engine/f32_pair.h has the proof): in open,
 * orthorhombic and triclinic boxes, with axis 1 in width bins or geometric edges and
 * the line of sight z (tables of at most STATS_F32_TABLE entries, which the
 * kernel stages in shared memory), a pair's minimum image is taken in float32 from
 * centred float32 copies of the points, and its slot from the float32
 * bins (fast_bins.h) wherever their tables leave no doubt; every other
 * pair, and every pair of ravg's pass, by the contract as above. The
 * counts are the contract's either way.
 */
#ifndef HISTD_STATS_GPU_H
#define HISTD_STATS_GPU_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "count_sink.h"
#include "f32_pair.h"
#include "fast_bins.h"
#include "histd/eval.h"
#include "histd/pair.h"

#ifdef __cplusplus
extern "C" {
#endif

#define STATS_WEIGHTED_BLOCK 128u /* the bound above needs block <= 128 */
#define STATS_F32_TABLE 2048u     /* f32: the tables' most entries (staged in shared memory) */
enum { STATS_W_NONE = 0, STATS_W_ATOMIC = 1, STATS_W_LANES = 2 }; /* weighted */

typedef struct stats_params {
  histd_metric metric;
  int edges;         /* 0: width bins, 1: explicit edges */
  uint32_t count;    /* bins; slots = count + 2 (below, overflow); two axes: count1 x count2 */
  uint32_t count1;   /* the first axis's bins (its edges: count1 + 1) */
  int two;           /* bins of two axes: ev says where a pair counts */
  histd_ev_bin ev;   /* two: the evaluator (its edges: the kernel's) */
  double width, inv_width; /* width bins: w and fl(1 / w) */
  const double *dedges; /* explicit: count1 + 1 edges on the device */
  uint32_t na, nb;   /* points of A and B (B = A for self pairs) */
  int cross;         /* 0: self pairs i < j of A */
  int weighted;      /* STATS_W_*: aw and bw hold the weights, and how they sum */
  int unit;          /* weighted sums with every weight 1 (aw, bw unread) */
  int sum;           /* weighted: the channel (histd_sum) the rows sum; the
                      * counts are kept in HISTD_SUM_W's pass only */
  const double *ax, *ay, *az, *aw; /* A on the device */
  const double *bx, *by, *bz, *bw; /* B (the same pointers as A for self) */
  uint32_t block;    /* threads per block = points per tile */
  int shared_counts; /* COUNTS_*: the counts' layout (count_sink.h) */
  int shared_edges;  /* 1: the edges staged in shared memory */
  unsigned long long *counts; /* count + 2 slots */
  double *wsum, *werr; /* weighted: grid rows of count + 2 (Neumaier pairs) */
  size_t smem;       /* dynamic shared memory per block */
  int f32;           /* float32 pairs and bins (the head), else binary64 only */
  const float *a32, *b32; /* f32: A's and B's points, (x - c, y - c, z - c, 0) as
                      * float32 (c the centre stats_engine.c picks; b32 = a32 for self) */
  histd__f32_box box32; /* f32: the box in float32 (f32_pair.h) */
  histd__fast_dev fb; /* f32: the tables (on the device), the guesses, mu's margin */
  unsigned long long *refined; /* f32: how many pairs the contract binned */
} stats_params;

/* Shared-memory bytes of p's kernel as its fields lay it out. */
size_t stats_smem_bytes(const stats_params *p);

/* Blocks of p's kernel that fit on one multiprocessor. */
int stats_blocks_per_sm(const stats_params *p, int *blocks, char *msg, size_t msglen);

/* Launches p's kernel over tile pairs [w0, w1) of the job (row by row:
 * anchor tile I of A, partner tiles J of B from I for self pairs, from 0
 * for A x B), each of `grid` blocks an equal share; the same grid on every
 * launch of a job (block b owns row b of wsum/werr). */
int stats_launch(const stats_params *p, uint64_t w0, uint64_t w1, uint32_t grid,
                 cudaStream_t s, char *msg, size_t msglen);

/* The host's last step: rows[0..grid) of sums and rows[grid..2 grid) of
 * their compensations, `slots` each (block b's at row b), folded by
 * Neumaier steps into out[0..count). */
void stats_fold_rows(const double *rows, uint32_t grid, uint32_t slots, uint32_t count,
                     double *out);
/* The same from the device's rows (2 grid x slots doubles at dev): copied
 * back and folded into out[0..count); 0, or a sentence naming `what`. */
int stats_fold_device_rows(const double *dev, uint32_t grid, uint32_t slots, uint32_t count,
                           double *out, const char *what, char *msg, size_t msglen);

#ifdef __cplusplus
}
#endif
#endif
