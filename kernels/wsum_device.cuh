/*
 * wsum_device.cuh -- the weighted sums' device steps, shared by the
 * kernels that sum w_i w_j per bin ("tiled-stats", stats_kernels.cu, and
 * "grid", grid_kernels.cu); stats_gpu.h states the bound they keep.
 *
 * Each warp adds its pairs' products into partials, one per slot (bins,
 * below, overflow), each taking at most 4096 terms between two folds; a
 * fold moves every partial into the warp's own Neumaier (sum,
 * compensation) pair per slot. At the end of a launch the block folds its
 * warps' pairs into its own row of (sum, compensation) in global memory;
 * the host folds the rows (stats_fold_rows).
 */
#ifndef HISTD_WSUM_DEVICE_CUH
#define HISTD_WSUM_DEVICE_CUH

#include <stdint.h>

#include "histd/eval.h" /* histd_ev_neumaier: Neumaier's step, in __dadd_rn */

/* One warp (all 32 lanes) folds its partials part[0..slots) into its pairs
 * wsum/werr[0..slots) and zeroes them. */
__device__ __forceinline__ void wsum_warp_fold(double *part, double *wsum, double *werr,
                                               uint32_t slots, uint32_t lane) {
  __syncwarp();
  for (uint32_t k = lane; k < slots; k += 32) {
    double v = part[k];
    if (v != 0) {
      histd_ev_neumaier(&wsum[k], &werr[k], v);
      part[k] = 0;
    }
  }
  __syncwarp();
}

/* The block (after a barrier) folds its `warps` rows of pairs, wsum/werr
 * + v * slots, into its global row gsum/gerr[0..slots). */
__device__ __forceinline__ void wsum_block_fold(const double *wsum, const double *werr,
                                                uint32_t warps, uint32_t slots, double *gsum,
                                                double *gerr) {
  for (uint32_t k = threadIdx.x; k < slots; k += blockDim.x)
    for (uint32_t v = 0; v < warps; v++) {
      histd_ev_neumaier(&gsum[k], &gerr[k], wsum[(size_t)v * slots + k]);
      histd_ev_neumaier(&gsum[k], &gerr[k], werr[(size_t)v * slots + k]);
    }
}

#endif
