/*
 * fast_slot.cuh -- a pair's slot from its float32 values, where the
 * tables of src/engine/fast_bins.h leave no doubt; the device half of the
 * float32 bins, for every kernel that takes them (the grid's drain,
 * tiled-stats' float32 pairs). Each caller proves its own error bounds
 * (grid_kernels.cu's "Float32 bins", src/engine/f32_pair.h) and plans
 * the tables from them with histd__fast_plan.
 */
#ifndef HISTD_FAST_SLOT_CUH
#define HISTD_FAST_SLOT_CUH

#include <stdint.h>

#include "fast_bins.h"

/* The slot of a pair from a, the float32 square of axis 1's value (s, or
 * r_p), and pz = |dz|: true with `slot` (f.count: below; f.count + 1:
 * overflow), else false, and the contract decides. A guess picks the bin
 * (from log2 of a, or its root over the width), the tables confirm it; a
 * wrong guess only sends the pair to the contract. TWO: the job has axis 2;
 * EDGES: 1 or 0 where the caller knows f.edges at compile time, else -1.
 * One axis is branch-free (selects), for kernels whose every pair comes
 * here. */
template <bool TWO, int EDGES = -1>
__device__ __forceinline__ bool histd__fast_slot(const histd__fast_dev &f, float a, float pz,
                                                 uint32_t &slot) {
  const int n1 = (int)f.count1;
  const bool edges = EDGES < 0 ? f.edges != 0 : EDGES == 1;
  const float g = edges ? __log2f(a) * f.ga + f.gb : a * rsqrtf(a) * f.inv;
  /* floor(g) clamped to [-1 or 0, n1] in float32, without branches (fmaxf
   * takes a NaN g, from a = 0 with width bins, to the low end). (Clamped as
   * integers, ptxas fused the two ends into one VIMNMX.RELU whose flag then
   * picked below for overflow: tiled-stats counted every overflow pair as
   * below on an H200, 2026-11-29.) */
  const int k = (int)fminf(fmaxf(floorf(g), edges ? -1.f : 0.f), (float)n1);
  const float2 t = reinterpret_cast<const float2 *>(f.tab)[k + 1];
  const bool sure = a > t.x && a < t.y;
  if constexpr (!TWO) {
    slot = k == n1 ? f.count + 1 : k < 0 ? f.count : (uint32_t)k;
    return sure;
  } else {
    if (!sure)
      return false;
    if (k == n1) {
      slot = f.count + 1;
      return true;
    }
    const int n2 = (int)f.count2;
    float v = pz, mg = 0;
    if (f.axis2 == HISTD_FAST_MU) { /* mu = pi / s, its margin by the pair's s */
      if (!(a > f.smin))
        return false;
      const float r = rsqrtf(a);
      v = pz * r;
      mg = fmaf(f.cmu, r, f.amu);
    }
    const float h = v * f.inv2;
    const int k2 = h >= (float)n2 ? n2 : (int)h;
    const float2 t2 = reinterpret_cast<const float2 *>(f.tab)[n1 + 2 + k2];
    if (!(v - t2.x > mg && t2.y - v > mg))
      return false;
    slot = k2 == n2 ? f.count + 1 : k < 0 ? f.count : (uint32_t)k * (uint32_t)n2 + (uint32_t)k2;
    return true;
  }
}

#endif
