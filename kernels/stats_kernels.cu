/*
 * stats_kernels.cu -- the device code of "tiled-stats" and its C-callable
 * launcher (stats_gpu.h says what it computes and why the weighted sums
 * keep their bound).
 *
 * One kernel template, specialised on the metric (open, orthorhombic,
 * triclinic), the bins (width, edges) and the weights (none, warp partials
 * by shared atomics, lane partials), so none of its eighteen variants
 * branches on them at run time. The pair arithmetic is
 * histd/pair.h's, which nvcc compiles with the __d*_rn intrinsics: no FMA
 * contraction, every operation rounded on its own, as the contract says.
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>

#include "histd/histd.h"
#include "sdh_gpu.h"
#include "stats_gpu.h"
#include "launch_util.cuh"
#include "wsum_device.cuh"

struct smem_layout {
  double *tx, *ty, *tz, *tw;   /* the staged partner tile */
  double *edges;               /* the edges, or NULL (read from global) */
  unsigned long long *hist;    /* slots, or NULL (global atomics) */
  double *part, *wsum, *werr;  /* weighted: partials, then warps x slots each */
};

/* Bytes of the layout, in the order the kernel carves it. Partial sums:
 * STATS_W_ATOMIC one per warp and slot, STATS_W_LANES one per lane. */
__host__ __device__ static size_t layout_bytes(uint32_t block, uint32_t count, uint32_t count1,
                                               int wmode, bool edges, bool hist) {
  size_t warps = block / 32, slots = (size_t)count + 2;
  size_t bytes = (size_t)block * sizeof(double) * (wmode ? 4 : 3);
  if (edges)
    bytes += ((size_t)count1 + 1) * sizeof(double);
  if (hist)
    bytes += slots * sizeof(unsigned long long);
  if (wmode)
    bytes += (wmode == STATS_W_LANES ? 32 + 2 : 3) * warps * slots * sizeof(double);
  return bytes;
}

template <int METRIC, bool EDGES, int W, bool TWO>
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
  L.edges = (EDGES || TWO) && p.shared_edges ? next : nullptr;
  if (L.edges)
    next += p.count1 + 1;
  L.hist = p.shared_counts ? (unsigned long long *)next : nullptr;
  if (L.hist)
    next += slots;
  const size_t per_warp = (size_t)slots * (W == STATS_W_LANES ? 32 : 1);
  L.part = next;
  L.wsum = L.part + warps * per_warp;
  L.werr = L.wsum + (size_t)warps * slots;

  if (L.edges)
    for (uint32_t k = tid; k <= p.count1; k += B)
      L.edges[k] = p.dedges[k];
  if (L.hist)
    for (uint32_t k = tid; k < slots; k += B)
      L.hist[k] = 0;
  if (W)
    for (size_t k = tid; k < warps * (per_warp + 2 * (size_t)slots); k += B)
      L.part[k] = 0;
  __syncthreads();

  histd_metric m = p.metric;
  m.kind = METRIC; /* a constant: histd_min_image's branches fold away */
  const double *edges = L.edges ? L.edges : p.dedges;
  unsigned long long *hist = L.hist ? L.hist : p.counts;
  double *part = L.part + warp * per_warp;
  histd_ev_bin ev = p.ev; /* two axes: the evaluator, with the kernel's edges */
  ev.edges = p.edges ? edges : nullptr;
  const uint32_t tiles_b = (p.nb + B - 1) / B;

  for (uint32_t I = t0 + blockIdx.x; I < t1; I += gridDim.x) {
    const uint32_t i = I * B + tid;
    const bool live = i < p.na;
    const double xi = live ? p.ax[i] : 0, yi = live ? p.ay[i] : 0, zi = live ? p.az[i] : 0;
    const double wi = W && live ? (p.unit ? 1.0 : p.aw[i]) : 0;
    for (uint32_t J = p.cross ? 0 : I; J < tiles_b; J++) {
      __syncthreads(); /* the previous tile is no longer read */
      const uint32_t j = J * B + tid;
      if (j < p.nb) {
        L.tx[tid] = p.bx[j];
        L.ty[tid] = p.by[j];
        L.tz[tid] = p.bz[j];
        if (W)
          L.tw[tid] = p.unit ? 1.0 : p.bw[j];
      }
      __syncthreads();
      const uint32_t jn = min(B, p.nb - J * B);
      const uint32_t j0 = (!p.cross && J == I) ? tid + 1 : 0;
      if (live)
        for (uint32_t jj = j0; jj < jn; jj++) {
          uint32_t k;
          double u;
          if (TWO) { /* (r_p, pi) or (s, mu): slot, below (count) or overflow */
            k = histd_ev_bin_pair(&ev, &m, xi, yi, zi, L.tx[jj], L.ty[jj], L.tz[jj], &u);
          } else {
            double d = histd_pair_d(&m, xi, yi, zi, L.tx[jj], L.ty[jj], L.tz[jj]);
            u = d;
            /* histd_ev_bin_slot's rule, written out: through the evaluator's
             * struct the width and its inverse sit in registers, and GS1 ran
             * 6% slower on an H200 (bench/RESULTS.md, 2026-11-28) */
            uint32_t bin = EDGES ? histd_bin_edges_guess(d, edges, count, p.ev.ga, p.ev.gb)
                                 : histd_bin_width(d, p.width, p.inv_width, count);
            k = bin == HISTD_BIN_BELOW ? count : bin == HISTD_BIN_OVER ? count + 1 : bin;
          }
          if (!W || p.sum == HISTD_SUM_W) /* (the unweighted variants: always) */
            atomicAdd(&hist[k], 1ull);
          if (W) { /* the channel's term (w_i w_j; for ravg (w_i w_j) u) */
            const double v = histd_ev_sum(p.sum, __dmul_rn(wi, L.tw[jj]), u);
            if (W == STATS_W_LANES) /* this lane's own column: no atomic */
              part[(size_t)k * 32 + lane] = __dadd_rn(part[(size_t)k * 32 + lane], v);
            else
              atomicAdd(&part[k], v);
          }
        }
      if (W == STATS_W_LANES) { /* each slot: the lanes' columns, summed by shuffles */
        __syncwarp();
        for (uint32_t k = 0; k < slots; k++) {
          double v = part[(size_t)k * 32 + lane];
          part[(size_t)k * 32 + lane] = 0;
          for (int o = 16; o > 0; o /= 2)
            v = __dadd_rn(v, __shfl_xor_sync(0xffffffffu, v, o));
          if (lane == 0 && v != 0)
            histd_ev_neumaier(&L.wsum[(size_t)warp * slots + k],
                              &L.werr[(size_t)warp * slots + k], v);
        }
        __syncwarp();
      } else if (W == STATS_W_ATOMIC) { /* at most 32 * B terms per slot since the last */
        wsum_warp_fold(part, L.wsum + (size_t)warp * slots, L.werr + (size_t)warp * slots,
                       slots, lane);
      }
    }
  }
  __syncthreads();
  if (L.hist)
    for (uint32_t k = tid; k < slots; k += B)
      if (L.hist[k] != 0)
        atomicAdd(&p.counts[k], L.hist[k]);
  if (W)
    wsum_block_fold(L.wsum, L.werr, warps, slots, p.wsum + (size_t)blockIdx.x * slots,
                    p.werr + (size_t)blockIdx.x * slots);
}

typedef void (*stats_fn)(stats_params, uint32_t, uint32_t);

template <int METRIC, bool EDGES, bool TWO> static stats_fn pick3(int w) {
  return w == STATS_W_LANES    ? k_stats<METRIC, EDGES, STATS_W_LANES, TWO>
         : w == STATS_W_ATOMIC ? k_stats<METRIC, EDGES, STATS_W_ATOMIC, TWO>
                               : k_stats<METRIC, EDGES, 0, TWO>;
}

/* two axes: one variant a metric and weighting (the evaluator reads its
 * edges or width at run time) */
template <int METRIC> static stats_fn pick2(bool edges, int w, bool two) {
  return two ? pick3<METRIC, false, true>(w)
             : edges ? pick3<METRIC, true, false>(w) : pick3<METRIC, false, false>(w);
}

static stats_fn pick(const stats_params *p) {
  switch (p->metric.kind) {
  case 1:
    return pick2<1>(p->edges, p->weighted, p->two);
  case 2:
    return pick2<2>(p->edges, p->weighted, p->two);
  default:
    return pick2<0>(p->edges, p->weighted, p->two);
  }
}

extern "C" size_t stats_smem_bytes(const stats_params *p) {
  return layout_bytes(p->block, p->count, p->count1, p->weighted, p->shared_edges != 0,
                      p->shared_counts != 0);
}

extern "C" int stats_blocks_per_sm(const stats_params *p, int *blocks, char *msg,
                                   size_t msglen) {
  return kernel_blocks_per_sm(pick(p), p->block, p->smem, blocks, msg, msglen);
}

extern "C" int stats_launch(const stats_params *p, uint32_t t0, uint32_t t1, uint32_t grid,
                            cudaStream_t s, char *msg, size_t msglen) {
  stats_fn f = pick(p);
  cudaError_t e = kernel_smem_prepare(f, p->smem);
  if (e != cudaSuccess)
    return sdh_cuda_fail(msg, msglen, "the kernel's shared-memory setting", e);
  f<<<grid, p->block, p->smem, s>>>(*p, t0, t1);
  e = cudaGetLastError();
  return e == cudaSuccess ? 0 : sdh_cuda_fail(msg, msglen, "the tiled-stats launch", e);
}
