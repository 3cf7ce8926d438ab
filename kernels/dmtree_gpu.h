/*
 * dmtree_gpu.h -- the interface between dm-tree's GPU driver
 * (dmtree_engine.c, plain C) and its device code (dmtree_kernels.cu).
 *
 * The host's tree (src/engine/dmtree.c) resolves node pairs whole and
 * hands the GPU the leaf pairs it cannot resolve, in batches of entries:
 * A's points [a0, a0 + na) against B's [b0, b0 + nb) of the sets in the
 * tree's (Morton) order, every pair's level known to lie in lo..hi. One
 * block takes one entry: B's points staged in shared memory 256 at a
 * time, A's one per thread.
 *
 * A pair's level is the number of thresholds T[k] (in s, the contract's
 * squared distance) at or below its s. The loop never takes the contract's
 * s first: it forms the float32 s of the points p = fl32((x - c) / w) and
 * compares it with each threshold's band (src/engine/f32band.c): s >= sp[k]
 * proves the contract's s >= T[k], s < sm[k] proves s < T[k], and a pair
 * between the two is redone with histd/pair.h's binary64 s and T itself
 * (at D1's sizes a band is some 10^-5 of a bin wide). So every count is
 * the contract's. Where the float32 bound does not hold (coordinates over 2^20
 * widths from the centre, say) the driver sets the bands to NaN and every
 * pair is redone.
 *
 * The bound in f32band.c allows the sums to be fused and float32
 * subnormals to flush (-ftz=true): a flush moves a difference or a square
 * by less than 2^-126 widths, so q by less than 2^-62, inside the bound's
 * 2^-50.
 *
 * Up to DMT_FAST thresholds between lo and hi (nearly every leaf pair: a
 * leaf spans little of a bin) count in registers, c[k] += (s >= T[k]).
 * Each point of A meets B's staged points 32 at a time, through their
 * float32 box first: the subtraction is monotone in b and the float32 sum
 * of squares in each |d|, so every pair's float32 s lies between that sum
 * at the least and at the largest |d| per axis over the box; where that
 * range clears every threshold's band the 32 pairs are counted at once
 * (the 32 points of a Morton run span a fraction of a bin, so at D1's
 * density most do; the share was not measured). The others go eight
 * partners a step, decided without a branch, those in a band redone after
 * the step;
 * the block adds its sums to the levels as differences (levels[lo] += its
 * pairs, levels[lo + k] -= c[k], levels[lo + k + 1] += c[k]; unsigned, so
 * modulo 2^64, and every final level is a true count). More thresholds
 * (narrow bins) find each pair's level by bisection and count it in a
 * shared-memory histogram of lo..hi.
 */
#ifndef HISTD_DMTREE_GPU_H
#define HISTD_DMTREE_GPU_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "histd/pair.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DMT_BLOCK 256u   /* threads per block, B's points staged at a time */
#define DMT_FAST 4u      /* thresholds a leaf pair's register loop takes at most */
#define DMT_SHARED 2048u /* levels a block's shared histogram holds (wider: global) */

typedef struct dmt_entry {
  uint32_t a0, na, b0, nb, lo, hi, same; /* histd__dm_leafpair's fields */
} dmt_entry;

typedef struct dmt_params {
  histd_metric metric;  /* open: the redo's histd_pair_s */
  const float *pa, *pb; /* float32 points, 4 floats each (x, y, z, 0) */
  const double *ax, *ay, *az, *bx, *by, *bz; /* the binary64 points (the redo) */
  const double *T;      /* nt thresholds in s */
  const float *sp, *sm; /* their float32 bands, or NaN (every pair redone) */
  int f32;              /* 0: the bands are NaN */
  unsigned long long *levels; /* nt + 1 levels (as differences, see above) */
} dmt_params;

/* Launches the blocks of n entries (on the device) on stream s. */
int dmt_launch(const dmt_params *p, const dmt_entry *entries, uint32_t n, cudaStream_t s,
               char *msg, size_t msglen);

#ifdef __cplusplus
}
#endif
#endif
