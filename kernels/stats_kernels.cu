/*
 * stats_kernels.cu -- the device code of "tiled-stats" and its C-callable
 * launcher (stats_gpu.h says what it computes and why the weighted sums
 * keep their bound).
 *
 * One kernel template, specialised on the metric (open, orthorhombic,
 * triclinic), the bins (width, edges) and weights, so each of the twelve
 * variants carries no run-time branch on them. The pair arithmetic is
 * histd/pair.h's, which nvcc compiles with the __d*_rn intrinsics: no FMA
 * contraction, every operation rounded on its own, as the contract says.
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>

#include "histd/histd.h"
#include "sdh_gpu.h"
#include "stats_gpu.h"

/* Neumaier's step on the device: sum += v, the lost low part into err. */
__device__ __forceinline__ void neumaier(double *sum, double *err, double v) {
  double s = *sum;
  double t = __dadd_rn(s, v);
  if (fabs(s) >= fabs(v))
    *err = __dadd_rn(*err, __dadd_rn(__dsub_rn(s, t), v));
  else
    *err = __dadd_rn(*err, __dadd_rn(__dsub_rn(v, t), s));
  *sum = t;
}

struct smem_layout {
  double *tx, *ty, *tz, *tw;   /* the staged partner tile */
  unsigned long long *hist;    /* slots, or NULL */
  double *part, *wsum, *werr;  /* weighted: warps x slots each */
};

__host__ __device__ static size_t layout_bytes(uint32_t block, uint32_t slots, bool weighted,
                                               bool hist) {
  size_t warps = block / 32;
  size_t bytes = (size_t)block * sizeof(double) * (weighted ? 4 : 3);
  if (hist)
    bytes += (size_t)slots * sizeof(unsigned long long);
  if (weighted)
    bytes += 3 * warps * slots * sizeof(double);
  return bytes;
}

template <int METRIC, bool EDGES, bool W>
__global__ void __launch_bounds__(1024) k_stats(stats_params p, uint32_t t0, uint32_t t1) {
  extern __shared__ double smem[];
  const uint32_t B = blockDim.x, tid = threadIdx.x;
  const uint32_t warp = tid / 32, lane = tid % 32, warps = B / 32;
  const uint32_t count = p.count, slots = count + 2;
  smem_layout L;
  L.tx = smem;
  L.ty = L.tx + B;
  L.tz = L.ty + B;
  L.tw = L.tz + B;
  double *next = W ? L.tw + B : L.tz + B;
  L.hist = p.shared_counts ? (unsigned long long *)next : nullptr;
  if (p.shared_counts)
    next += slots;
  L.part = next;
  L.wsum = L.part + (size_t)warps * slots;
  L.werr = L.wsum + (size_t)warps * slots;

  for (uint32_t k = tid; k < slots; k += B)
    if (L.hist)
      L.hist[k] = 0;
  if (W)
    for (size_t k = tid; k < 3 * (size_t)warps * slots; k += B)
      L.part[k] = 0;
  __syncthreads();

  histd_metric m = p.metric;
  m.kind = METRIC; /* a constant: histd_min_image's branches fold away */
  unsigned long long *hist = L.hist ? L.hist : p.counts;
  const uint32_t tiles_b = (p.nb + B - 1) / B;

  for (uint32_t I = t0 + blockIdx.x; I < t1; I += gridDim.x) {
    const uint32_t i = I * B + tid;
    const bool live = i < p.na;
    const double xi = live ? p.ax[i] : 0, yi = live ? p.ay[i] : 0, zi = live ? p.az[i] : 0;
    const double wi = W && live ? p.aw[i] : 0;
    for (uint32_t J = p.cross ? 0 : I; J < tiles_b; J++) {
      __syncthreads(); /* the previous tile is no longer read */
      const uint32_t j = J * B + tid;
      if (j < p.nb) {
        L.tx[tid] = p.bx[j];
        L.ty[tid] = p.by[j];
        L.tz[tid] = p.bz[j];
        if (W)
          L.tw[tid] = p.bw[j];
      }
      __syncthreads();
      const uint32_t jn = min(B, p.nb - J * B);
      const uint32_t j0 = (!p.cross && J == I) ? tid + 1 : 0;
      if (live)
        for (uint32_t jj = j0; jj < jn; jj++) {
          double d = histd_pair_d(&m, xi, yi, zi, L.tx[jj], L.ty[jj], L.tz[jj]);
          uint32_t bin = EDGES ? histd_bin_edges(d, p.dedges, count)
                               : histd_bin_width(d, p.width, count);
          uint32_t k = bin == HISTD_BIN_BELOW ? count : bin == HISTD_BIN_OVER ? count + 1 : bin;
          atomicAdd(&hist[k], 1ull);
          if (W)
            atomicAdd(&L.part[(size_t)warp * slots + k], __dmul_rn(wi, L.tw[jj]));
        }
      if (W) { /* at most 32 * B terms per bin since the last flush */
        __syncwarp();
        for (uint32_t k = lane; k < slots; k += 32) {
          size_t at = (size_t)warp * slots + k;
          double v = L.part[at];
          if (v != 0) {
            neumaier(&L.wsum[at], &L.werr[at], v);
            L.part[at] = 0;
          }
        }
        __syncwarp();
      }
    }
  }
  __syncthreads();
  if (L.hist)
    for (uint32_t k = tid; k < slots; k += B)
      if (L.hist[k] != 0)
        atomicAdd(&p.counts[k], L.hist[k]);
  if (W)
    for (uint32_t k = tid; k < slots; k += B) {
      double *gs = &p.wsum[(size_t)blockIdx.x * slots + k];
      double *ge = &p.werr[(size_t)blockIdx.x * slots + k];
      for (uint32_t v = 0; v < warps; v++) {
        neumaier(gs, ge, L.wsum[(size_t)v * slots + k]);
        neumaier(gs, ge, L.werr[(size_t)v * slots + k]);
      }
    }
}

typedef void (*stats_fn)(stats_params, uint32_t, uint32_t);

template <int METRIC> static stats_fn pick2(bool edges, bool w) {
  if (edges)
    return w ? k_stats<METRIC, true, true> : k_stats<METRIC, true, false>;
  return w ? k_stats<METRIC, false, true> : k_stats<METRIC, false, false>;
}

static stats_fn pick(const stats_params *p) {
  bool w = p->weighted != 0;
  switch (p->metric.kind) {
  case 1:
    return pick2<1>(p->edges, w);
  case 2:
    return pick2<2>(p->edges, w);
  default:
    return pick2<0>(p->edges, w);
  }
}

static int fail(char *msg, size_t msglen, const char *what, cudaError_t e) {
  (void)cudaGetLastError();
  return histd_fail(msg, msglen, sdh_error_code(e), "CUDA error in %s: %s", what,
                    cudaGetErrorString(e));
}

extern "C" size_t stats_smem_bytes(const stats_params *p, int shared_counts) {
  return layout_bytes(p->block, p->count + 2, p->weighted != 0, shared_counts != 0);
}

static cudaError_t prepare(const stats_params *p, stats_fn f) {
  if (p->smem > 48 * 1024)
    return cudaFuncSetAttribute((const void *)f, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)p->smem);
  return cudaSuccess;
}

extern "C" int stats_blocks_per_sm(const stats_params *p, int *blocks, char *msg,
                                   size_t msglen) {
  stats_fn f = pick(p);
  cudaError_t e = prepare(p, f);
  if (e == cudaSuccess)
    e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, (const void *)f, (int)p->block,
                                                      p->smem);
  return e == cudaSuccess ? 0 : fail(msg, msglen, "the occupancy query", e);
}

extern "C" int stats_launch(const stats_params *p, uint32_t t0, uint32_t t1, uint32_t grid,
                            cudaStream_t s, char *msg, size_t msglen) {
  stats_fn f = pick(p);
  cudaError_t e = prepare(p, f);
  if (e != cudaSuccess)
    return fail(msg, msglen, "the kernel's shared-memory setting", e);
  f<<<grid, p->block, p->smem, s>>>(*p, t0, t1);
  e = cudaGetLastError();
  return e == cudaSuccess ? 0 : fail(msg, msglen, "the tiled-stats launch", e);
}
