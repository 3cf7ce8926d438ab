/*
 * tc_gpu.h -- the interface between the tensor-core kernel's driver
 * (tc_engine.c, plain C) and its device code (tc_kernels.cu, whose kernel
 * is in tc_kernels.cuh; tc_plan.h has the arithmetic and why the counts
 * are the contract's).
 *
 * A job: the points on the device are sorted in Morton order and cut into
 * tiles of TC_TILE with their frames (tc_tiles_device), then launches over
 * ranges [u0, u1) of the tile pairs (I <= J, row-major) count into `counts`
 * (job.rows rows: row r is bucket r, the last rows past the job's buckets).
 * A launch may take at most TC_LAUNCH_MAX tile pairs: a block's shared
 * counters are 32 bits, read as signed at the block's end (a drain takes
 * back counts in its own thread's column, not the counting lane's, so a
 * column may end below 0), and one counter gains at most 256 + 11 a tile
 * pair: 8e6 x 267 < 2^31.
 */
#ifndef HISTD_TC_GPU_H
#define HISTD_TC_GPU_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "tc_plan.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TC_LAUNCH_MAX 8000000ull /* tile pairs a launch (above) */
#define TC_CHUNK 16u             /* tile pairs a block takes at a time */

/* the job's counters on the device (tc_params.stats) */
enum {
  TC_REFINED, /* pairs counted by the binary64 redo */
  TC_FLAGGED, /* groups of 8 pairs with an edge pair among them */
  TC_WIDE,    /* tile pairs counted in binary64 whole */
  TC_NEXT,    /* the launch's next chunk of tile pairs (from its u0) */
  TC_ERR,     /* the probe: largest |S - exact| / magnitudes (a double's bits) */
  TC_ERR_PAIRS,
  TC_NSTATS
};

typedef struct tc_params {
  tc_job job;
  uint32_t n, tiles;
  uint32_t sub;    /* k >= 16: a row is 2^(k - 16) sub-rows of 256 bytes (tc_kernels.cuh) */
  uint32_t rowcap; /* job.rows - 1: the binary64 redo's last row */
  double width, inv_w;
  const float *loc;           /* 4 floats a point: its coordinates in its tile's frame */
  const double *cen;          /* 3 a tile: its centre */
  const float *rad;           /* a tile: its radius in widths, rounded up */
  const double *x, *y, *z;    /* the sorted points (the binary64 redo) */
  unsigned long long *counts; /* job.rows */
  unsigned long long *stats;  /* TC_NSTATS */
} tc_params;

/* The device memory tc_tiles_device takes for n points, its scratch included. */
size_t tc_tiles_bytes(uint32_t n);

/* Sorts the n points at dx (x, y, z back to back) in Morton order on the
 * grid of histd__morton_scale (lo: the set's minimum corner) and builds the
 * tiles for width w in `mem` (tc_tiles_bytes(n)), on stream s; p's n,
 * tiles, loc, cen, rad, x, y, z are set. */
cudaError_t tc_tiles_device(const double *dx, uint32_t n, const double lo[3], double scale,
                            double w, void *mem, tc_params *p, cudaStream_t s);

/* The shared memory of a block's histogram for p's job (its job and sub). */
size_t tc_hist_bytes(const tc_params *p);

/* The kernel for p's job (exact or fast by p->job.exact; gq: flagged groups
 * queued whole): its grid (blocks resident at once) and shared memory. */
cudaError_t tc_prepare(const tc_params *p, int gq, uint32_t *grid, size_t *smem);

/* One launch over tile pairs [u0, u1) (stats[TC_NEXT] reset first). */
cudaError_t tc_launch(const tc_params *p, int gq, uint32_t grid, size_t smem, uint64_t u0,
                      uint64_t u1, cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif
