/*
 * dmtree_kernels.cu -- dm-tree's leaf pairs on the GPU (dmtree_gpu.h has
 * the design and why every count is the contract's).
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>

#include "histd/histd.h"
#include "dmtree_gpu.h"
#include "sdh_gpu.h"

/* The contract's s of A's point i and B's point j (indices into the sets). */
__device__ static inline double contract_s(const dmt_params &p, uint32_t i, uint32_t j) {
  return histd_pair_s(&p.metric, p.ax[i], p.ay[i], p.az[i], p.bx[j], p.by[j], p.bz[j]);
}

/* The float32 s of a difference (sums fused; the bound allows it). It
 * grows with each |d| (every rounding, and the flush of subnormals, is
 * monotone), which the partner boxes below rely on. */
__device__ static inline float f32_sum(float dx, float dy, float dz) {
  return fmaf(dz, dz, fmaf(dy, dy, dx * dx));
}

/* The float32 s of two float32 points. */
__device__ static inline float f32_s(float4 a, float4 b) {
  return f32_sum(a.x - b.x, a.y - b.y, a.z - b.z);
}

/* Adds a block's v (one per thread) to *dst: warp sums, then one atomic a warp. */
__device__ static inline void block_add(unsigned long long *dst, unsigned long long v) {
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_down_sync(0xffffffffu, v, o);
  if ((threadIdx.x & 31) == 0 && v != 0)
    atomicAdd(dst, v);
}

/* Stages B's points [j0, j0 + DMT_BLOCK) of the entry in shared memory. */
__device__ static inline uint32_t stage(const dmt_entry &e, const float4 *pb, uint32_t j0,
                                        float4 *sb) {
  __syncthreads(); /* the last chunk's readers are done */
  if (j0 + threadIdx.x < e.nb)
    sb[threadIdx.x] = pb[e.b0 + j0 + threadIdx.x];
  __syncthreads();
  return e.nb - j0 < DMT_BLOCK ? e.nb - j0 : DMT_BLOCK;
}

/* The contract's s decides pair (i, j) whose float32 s fell in a band
 * (or the bands are NaN): c[k] gets (T[k] <= its s) instead of s >= sp[k]. */
template <int NT>
__device__ static inline void redo(const dmt_params &p, const float *tp, const double *tt,
                                   float s, uint32_t i, uint32_t j, uint32_t *c) {
  const double sd = contract_s(p, i, j);
#pragma unroll
  for (int k = 0; k < NT; k++)
    c[k] += (uint32_t)(sd >= tt[k]) - (uint32_t)(s >= tp[k]);
}

#define DMT_UNROLL 8 /* partners a step: their float32 s decided branch-free */

/* Partner u of a step: c[k] += (s >= sp[k]), and bit u of *band set where
 * s lies in a band (NaN bands: always). */
template <int NT>
__device__ static inline void decide(float s, const float *tp, const float *tm, int u,
                                     uint32_t *c, uint32_t *band) {
#pragma unroll
  for (int k = 0; k < NT; k++) {
    const bool up = s >= tp[k];
    c[k] += up;
    *band |= (uint32_t)!(up || s < tm[k]) << u;
  }
}

/* A's point a (index ia) against the staged partners sb[j..m) (B's
 * indices jb + j): c[k] += (contract s >= T[k]), DMT_UNROLL partners a
 * step, those in a band redone after the step. */
template <int NT>
__device__ static inline void partners(const dmt_params &p, const float *tp, const float *tm,
                                       const double *tt, float4 a, uint32_t ia,
                                       const float4 *sb, uint32_t j, uint32_t m, uint32_t jb,
                                       uint32_t *c) {
  for (; j < m; j += DMT_UNROLL) {
    const uint32_t n = m - j < DMT_UNROLL ? m - j : DMT_UNROLL;
    uint32_t band = 0;
    if (n == DMT_UNROLL) {
#pragma unroll
      for (int u = 0; u < DMT_UNROLL; u++)
        decide<NT>(f32_s(a, sb[j + u]), tp, tm, u, c, &band);
    } else {
      for (uint32_t u = 0; u < n; u++)
        decide<NT>(f32_s(a, sb[j + u]), tp, tm, u, c, &band);
    }
    while (band != 0) {
      const int u = __ffs(band) - 1;
      band &= band - 1;
      redo<NT>(p, tp, tt, f32_s(a, sb[j + u]), ia, jb + j + u, c);
    }
  }
}

/* Staged partners a box (a power of two, at most a warp). One H100, 10^7
 * points of D1's cube, bins of 2,000 / 4,000: boxes of 32 27.1 / 14.9 s,
 * of 16 27.4 / 15.7 s, of 8 31.2 / 17.6 s (bench/RESULTS.md). */
#define DMT_BOX 32

/* The float32 boxes of the staged partners, DMT_BOX each: box[w] the
 * least, box[DMT_BLOCK / DMT_BOX + w] the largest coordinates of
 * sb[DMT_BOX w .. DMT_BOX (w + 1)) within the m staged. */
__device__ static inline void stage_boxes(const float4 *sb, uint32_t m, float4 *box) {
  const uint32_t t = threadIdx.x;
  float4 lo = make_float4(INFINITY, INFINITY, INFINITY, 0),
         hi = make_float4(-INFINITY, -INFINITY, -INFINITY, 0);
  if (t < m) {
    lo = sb[t];
    hi = sb[t];
  }
  for (int o = DMT_BOX / 2; o > 0; o >>= 1) {
    lo.x = fminf(lo.x, __shfl_xor_sync(0xffffffffu, lo.x, o));
    lo.y = fminf(lo.y, __shfl_xor_sync(0xffffffffu, lo.y, o));
    lo.z = fminf(lo.z, __shfl_xor_sync(0xffffffffu, lo.z, o));
    hi.x = fmaxf(hi.x, __shfl_xor_sync(0xffffffffu, hi.x, o));
    hi.y = fmaxf(hi.y, __shfl_xor_sync(0xffffffffu, hi.y, o));
    hi.z = fmaxf(hi.z, __shfl_xor_sync(0xffffffffu, hi.z, o));
  }
  if (t % DMT_BOX == 0) {
    box[t / DMT_BOX] = lo;
    box[DMT_BLOCK / DMT_BOX + t / DMT_BOX] = hi;
  }
  __syncthreads();
}

/* The least and largest |a - b| on one axis over b in [lo, hi], as the
 * float32 subtraction gives them (it is monotone in b). */
__device__ static inline void axis_range(float a, float lo, float hi, float *mn, float *mx) {
  const float d0 = a - hi, d1 = a - lo; /* every fl(a - b) lies in [d0, d1] */
  *mn = d0 > 0 ? d0 : d1 < 0 ? -d1 : 0.0f;
  *mx = fmaxf(-d0, d1);
}

/* NT thresholds T[lo..lo + NT) in registers. SAME: one leaf, its pairs
 * i < j, every pair through partners(). Else each point of A meets the
 * staged partners a box (DMT_BOX points) at a time: the float32 s of every
 * pair lies between f32_sum of the least and of the largest |d| per axis
 * over the box (f32_sum and the subtractions are monotone), so where that
 * range clears every threshold's band the box's pairs are decided at once,
 * and only the rest go pair by pair. */
template <int NT, bool SAME>
__device__ static void fast(const dmt_params &p, const dmt_entry &e, float4 *sb, float4 *box) {
  const float4 *pa = (const float4 *)p.pa, *pb = (const float4 *)p.pb;
  float tp[NT], tm[NT];
  double tt[NT];
#pragma unroll
  for (int k = 0; k < NT; k++) {
    tp[k] = p.sp[e.lo + k];
    tm[k] = p.sm[e.lo + k];
    tt[k] = p.T[e.lo + k];
  }
  unsigned long long tot[NT];
#pragma unroll
  for (int k = 0; k < NT; k++)
    tot[k] = 0;
  for (uint32_t j0 = 0; j0 < e.nb; j0 += DMT_BLOCK) {
    const uint32_t m = stage(e, pb, j0, sb);
    if (!SAME)
      stage_boxes(sb, m, box);
    for (uint32_t i = threadIdx.x; i < e.na; i += DMT_BLOCK) {
      const uint32_t js = SAME ? (i + 1 > j0 ? i + 1 - j0 : 0) : 0;
      if (js >= m)
        continue;
      const float4 a = pa[e.a0 + i];
      uint32_t c[NT];
#pragma unroll
      for (int k = 0; k < NT; k++)
        c[k] = 0;
      if (SAME) {
        partners<NT>(p, tp, tm, tt, a, e.a0 + i, sb, js, m, e.b0 + j0, c);
      } else {
        for (uint32_t q = 0; DMT_BOX * q < m; q++) {
          const uint32_t jq = DMT_BOX * q, mq = m - jq < DMT_BOX ? m - jq : DMT_BOX;
          const float4 lo = box[q], hi = box[DMT_BLOCK / DMT_BOX + q];
          float nx, ny, nz, xx, xy, xz;
          axis_range(a.x, lo.x, hi.x, &nx, &xx);
          axis_range(a.y, lo.y, hi.y, &ny, &xy);
          axis_range(a.z, lo.z, hi.z, &nz, &xz);
          const float slo = f32_sum(nx, ny, nz), shi = f32_sum(xx, xy, xz);
          bool open = false;
#pragma unroll
          for (int k = 0; k < NT; k++)
            open |= !(slo >= tp[k] || shi < tm[k]); /* NaN bands: open */
          if (!open) {
#pragma unroll
            for (int k = 0; k < NT; k++)
              c[k] += slo >= tp[k] ? mq : 0;
          } else {
            partners<NT>(p, tp, tm, tt, a, e.a0 + i, sb, jq, jq + mq, e.b0 + j0, c);
          }
        }
      }
#pragma unroll
      for (int k = 0; k < NT; k++)
        tot[k] += c[k];
    }
  }
  const unsigned long long pairs =
      SAME ? (unsigned long long)e.na * (e.na - 1) / 2 : (unsigned long long)e.na * e.nb;
  if (threadIdx.x == 0)
    atomicAdd(&p.levels[e.lo], pairs);
#pragma unroll
  for (int k = 0; k < NT; k++) {
    block_add(&p.levels[e.lo + k + 1], tot[k]);
    block_add(&p.levels[e.lo + k], 0ull - tot[k]);
  }
}

/* The number of thresholds t[0..n) at or below s (t non-decreasing; a NaN
 * threshold is never passed). */
template <typename R>
__device__ static inline uint32_t passed(const R *t, uint32_t n, R s) {
  uint32_t lo = 0;
  while (lo < n) {
    const uint32_t mid = lo + (n - lo) / 2;
    if (s >= t[mid])
      lo = mid + 1;
    else
      n = mid;
  }
  return lo;
}

/* More thresholds than DMT_FAST: each pair's level by bisection. */
__device__ static void wide(const dmt_params &p, const dmt_entry &e, float4 *sb,
                            unsigned long long *hist) {
  const float4 *pa = (const float4 *)p.pa, *pb = (const float4 *)p.pb;
  const uint32_t nt = e.hi - e.lo, nl = nt + 1;
  const bool local = nl <= DMT_SHARED;
  for (uint32_t l = threadIdx.x; local && l < nl; l += DMT_BLOCK)
    hist[l] = 0;
  for (uint32_t j0 = 0; j0 < e.nb; j0 += DMT_BLOCK) {
    const uint32_t m = stage(e, pb, j0, sb);
    for (uint32_t i = threadIdx.x; i < e.na; i += DMT_BLOCK) {
      const uint32_t js = e.same ? (i + 1 > j0 ? i + 1 - j0 : 0) : 0;
      const float4 a = pa[e.a0 + i];
      for (uint32_t j = js; j < m; j++) {
        const float s = f32_s(a, sb[j]);
        uint32_t l = passed(p.sp + e.lo, nt, s);
        if (!p.f32 || l != passed(p.sm + e.lo, nt, s))
          l = passed(p.T + e.lo, nt, contract_s(p, e.a0 + i, e.b0 + j0 + j));
        atomicAdd(local ? &hist[l] : &p.levels[e.lo + l], 1ull);
      }
    }
  }
  __syncthreads();
  for (uint32_t l = threadIdx.x; local && l < nl; l += DMT_BLOCK)
    if (hist[l] != 0)
      atomicAdd(&p.levels[e.lo + l], hist[l]);
}

__global__ void __launch_bounds__(DMT_BLOCK) k_leaves(const dmt_params p, const dmt_entry *es) {
  __shared__ float4 sb[DMT_BLOCK];               /* B's points, staged */
  __shared__ float4 box[2 * DMT_BLOCK / DMT_BOX]; /* their boxes */
  __shared__ unsigned long long hist[DMT_SHARED]; /* wide(): the levels lo..hi */
  const dmt_entry e = es[blockIdx.x];
  const uint32_t nt = e.hi - e.lo;
  /* 1..4: the register loop for nt thresholds, 5..8 for a leaf's own pairs */
  switch (nt > DMT_FAST ? 0 : e.same ? nt + DMT_FAST : nt) {
  case 1: fast<1, false>(p, e, sb, box); break;
  case 2: fast<2, false>(p, e, sb, box); break;
  case 3: fast<3, false>(p, e, sb, box); break;
  case 4: fast<4, false>(p, e, sb, box); break;
  case 1 + DMT_FAST: fast<1, true>(p, e, sb, box); break;
  case 2 + DMT_FAST: fast<2, true>(p, e, sb, box); break;
  case 3 + DMT_FAST: fast<3, true>(p, e, sb, box); break;
  case 4 + DMT_FAST: fast<4, true>(p, e, sb, box); break;
  default: wide(p, e, sb, hist);
  }
}

extern "C" int dmt_launch(const dmt_params *p, const dmt_entry *entries, uint32_t n,
                          cudaStream_t s, char *msg, size_t msglen) {
  if (n == 0)
    return 0;
  k_leaves<<<n, DMT_BLOCK, 0, s>>>(*p, entries);
  cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? 0 : sdh_cuda_fail(msg, msglen, "the dm-tree leaf launch", e);
}
