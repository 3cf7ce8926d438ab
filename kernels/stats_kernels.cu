/*
 * stats_kernels.cu -- the device code of "tiled-stats" and its C-callable
 * launcher (stats_gpu.h says what it computes and why the weighted sums
 * keep their bound).
 *
 * One kernel template, specialised on the metric (open, orthorhombic,
 * triclinic), the bins (width, edges, two axes), the weights (none, warp
 * partials by shared atomics, lane partials) and the float32 pairs (on,
 * off), so none of its fifty-four variants branches on them at run time;
 * the counts go to count_sink.h's shared counters. The pair arithmetic is
 * histd/pair.h's, which nvcc compiles with the __d*_rn intrinsics: no FMA
 * contraction, every operation rounded on its own, as the contract says.
 *
 * Float32 pairs (F32; stats_engine.c's plan_f32): each pair's difference
 * in float32 from centred float32 points, its minimum image as the
 * contract's rule takes it (src/engine/f32_pair.h, which proves each
 * component's magnitude within e_c of the contract's, and sends a
 * triclinic pair whose image is in doubt to the contract;
 * tests/engine/test_f32_pair.c holds it there on the CPU), then its slot
 * from the float32 bins (fast_slot.cuh and the tables of fast_bins.h, the
 * grid's) from a = fl32 |D32|^2 (r_p's square for (r_p, pi)) and |dz|;
 * where they leave doubt (within about e of a boundary), the pair goes to
 * the contract in the same thread, from the binary64 points, and counts
 * as refined.
 *
 * Launches: a range of tile pairs (I, J), row by row, each block an equal
 * run of them (tile_pair finds a run's first), so that every block has
 * work whatever the triangle's shape.
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>

#include "histd/histd.h"
#include "sdh_gpu.h"
#include "stats_gpu.h"
#include "f32_pair.h"
#include "fast_slot.cuh"
#include "count_sink.h"
#include "launch_util.cuh"
#include "wsum_device.cuh"

struct smem_layout {
  double *tx, *ty, *tz, *tw;   /* the staged partner tile (F32: t4's floats, then tw) */
  double *edges;               /* the edges, or NULL (read from global) */
  float *tab;                  /* F32: the float32 bins' tables, staged */
  void *counts;                /* the count sink's shared counters (count_sink.h) */
  double *part, *wsum, *werr;  /* weighted: partials, then warps x slots each */
};

/* Bytes of the layout, in the order the kernel carves it (f32: the tile
 * as float4s, and the tables' tab entries, pairs of floats). Partial
 * sums: STATS_W_ATOMIC one per warp and slot, STATS_W_LANES one per lane. */
__host__ __device__ static size_t layout_bytes(uint32_t block, uint32_t count, uint32_t count1,
                                               int wmode, bool edges, bool f32, size_t tab,
                                               int counts) {
  size_t warps = block / 32, slots = (size_t)count + 2;
  size_t bytes = (size_t)block * (f32 ? 2 * sizeof(double) : 3 * sizeof(double));
  if (wmode)
    bytes += (size_t)block * sizeof(double);
  if (edges)
    bytes += ((size_t)count1 + 1) * sizeof(double);
  bytes += tab * 2 * sizeof(float);
  bytes += count_sink_bytes(counts, (uint32_t)slots);
  if (wmode)
    bytes += (wmode == STATS_W_LANES ? 32 + 2 : 3) * warps * slots * sizeof(double);
  return bytes;
}

/* Tile pair w of a job, row by row: anchor tile I of A with partner tiles
 * J of B from I (self pairs: row I holds tiles_b - I of them, and rows
 * 0..I-1 hold S(I) = I tiles_b - I (I - 1) / 2) or from 0 (A x B). */
__device__ static void tile_pair(uint64_t w, uint32_t tiles_b, int cross, uint32_t &I,
                                 uint32_t &J) {
  if (cross) {
    I = (uint32_t)(w / tiles_b), J = (uint32_t)(w % tiles_b);
    return;
  }
  const uint64_t n = tiles_b;
  auto S = [n](uint64_t r) { return r * n - r * (r - 1) / 2; };
  const double b = 2.0 * (double)n + 1; /* the root of S(r) = w, then corrected */
  const double x = floor((b - sqrt(fmax(b * b - 8.0 * (double)w, 0.0))) / 2);
  uint64_t r = x > 0 ? (uint64_t)x : 0;
  while (r > 0 && S(r) > w)
    r--;
  while (r + 1 < n && S(r + 1) <= w)
    r++;
  I = (uint32_t)r, J = (uint32_t)(r + (w - S(r)));
}

/* F32 variants at 40 registers (six blocks of 256 a multiprocessor): their
 * hot loop needs fewer, and on an H200 32, 40, 48 and 64 ran GS1 alike
 * (bench/RESULTS.md, 2026-11-29); the contract's rare path spills instead. */
template <int METRIC, bool EDGES, int W, bool TWO, bool F32>
__global__ void __launch_bounds__(1024) __maxnreg__(F32 ? 40 : 64)
    k_stats(stats_params p, uint64_t w0, uint64_t w1) {
  extern __shared__ __align__(16) double smem[];
  const uint32_t B = blockDim.x, tid = threadIdx.x;
  const uint32_t warp = tid / 32, lane = tid % 32, warps = B / 32;
  const uint32_t count = p.count, slots = count + 2;
  smem_layout L;
  L.tx = smem;
  float4 *const t4 = reinterpret_cast<float4 *>(smem); /* F32: the staged tile, as floats */
  L.ty = L.tx + B;
  L.tz = L.ty + B;
  L.tw = F32 ? L.tx + 2 * B : L.tz + B;
  double *next = W ? L.tw + B : F32 ? L.tx + 2 * B : L.tz + B;
  L.edges = (EDGES || TWO) && p.shared_edges ? next : nullptr;
  if (L.edges)
    next += p.count1 + 1;
  const size_t tab = F32 ? histd__fast_entries(p.fb.count1, p.fb.count2) : 0;
  L.tab = reinterpret_cast<float *>(next);
  next += tab;
  L.counts = next;
  next += count_sink_bytes(p.shared_counts, slots) / 8;
  const size_t per_warp = (size_t)slots * (W == STATS_W_LANES ? 32 : 1);
  L.part = next;
  L.wsum = L.part + warps * per_warp;
  L.werr = L.wsum + (size_t)warps * slots;

  if (L.edges)
    for (uint32_t k = tid; k <= p.count1; k += B)
      L.edges[k] = p.dedges[k];
  if constexpr (F32)
    for (size_t k = tid; k < 2 * tab; k += B)
      L.tab[k] = p.fb.tab[k];
  count_sink sink;
  sink.init(p.shared_counts, L.counts, slots, p.counts);
  if (W)
    for (size_t k = tid; k < warps * (per_warp + 2 * (size_t)slots); k += B)
      L.part[k] = 0;
  __syncthreads();

  histd_metric m = p.metric;
  m.kind = METRIC; /* a constant: histd_min_image's branches fold away */
  const double *edges = L.edges ? L.edges : p.dedges;
  double *part = L.part + warp * per_warp;
  histd_ev_bin ev = p.ev; /* two axes: the evaluator, with the kernel's edges */
  ev.edges = p.edges ? edges : nullptr;
  const uint32_t tiles_b = (p.nb + B - 1) / B;

  unsigned long long refined = 0; /* F32: pairs binned by the contract */
  const float4 *a32 = reinterpret_cast<const float4 *>(p.a32);
  const float4 *b32 = reinterpret_cast<const float4 *>(p.b32);
  const bool rp = TWO && p.fb.axis2 == HISTD_FAST_PI;
  const histd__f32_box box32 = p.box32; /* (a local copy: its fields in registers) */
  histd__fast_dev fb = p.fb;            /* F32: with the staged tables */
  fb.tab = L.tab;

  /* this block's share of the launch's tile pairs [w0, w1), from (I, J) */
  const uint64_t span = w1 - w0;
  const uint64_t wb = w0 + span * blockIdx.x / gridDim.x;
  const uint64_t we = w0 + span * (blockIdx.x + 1) / gridDim.x;
  uint32_t I, J, anchor = UINT32_MAX;
  tile_pair(wb, tiles_b, p.cross, I, J);
  uint32_t i = 0;
  bool live = false;
  double xi = 0, yi = 0, zi = 0, wi = 0;
  float4 fi = make_float4(0, 0, 0, 0);
  for (uint64_t w = wb; w < we; w++) {
    if (I != anchor) { /* a new anchor tile: its points in registers */
      anchor = I;
      i = I * B + tid;
      live = i < p.na;
      /* (F32: the binary64 anchor is loaded only for a pair the contract bins) */
      xi = live && !F32 ? p.ax[i] : 0, yi = live && !F32 ? p.ay[i] : 0;
      zi = live && !F32 ? p.az[i] : 0;
      fi = F32 && live ? a32[i] : make_float4(0, 0, 0, 0);
      wi = W && live ? (p.unit ? 1.0 : p.aw[i]) : 0;
    }
    { /* tile pair (I, J) */
      __syncthreads(); /* the previous tile is no longer read */
      const uint32_t j = J * B + tid;
      if (j < p.nb) {
        if (F32) {
          t4[tid] = b32[j];
        } else {
          L.tx[tid] = p.bx[j];
          L.ty[tid] = p.by[j];
          L.tz[tid] = p.bz[j];
        }
        if (W)
          L.tw[tid] = p.unit ? 1.0 : p.bw[j];
      }
      __syncthreads();
      const uint32_t jn = opaque(min(B, p.nb - J * B)); /* (in a register: the loop's bound) */
      const uint32_t j0 = (!p.cross && J == I) ? tid + 1 : 0;
      if (live)
        for (uint32_t jj = j0; jj < jn; jj++) {
          uint32_t k;
          double u = 0;
          bool binned = false;
          if constexpr (F32) { /* the head's float32 image, and the float32 bins */
            const float4 q = t4[jj];
            float d[3];
            const bool sure = histd__f32_diff(METRIC, &box32, fi.x, fi.y, fi.z, q.x, q.y, q.z, d);
            const float axy = __fmaf_rn(d[1], d[1], __fmul_rn(d[0], d[0]));
            /* (one axis: the kernel's EDGES is the tables', plan_f32 checks) */
            binned = histd__fast_slot<TWO, TWO ? -1 : EDGES>(
                         fb, rp ? axy : __fmaf_rn(d[2], d[2], axy), fabsf(d[2]), k) &&
                     sure;
          }
          if (__builtin_expect(!binned, 0)) {
            refined += F32;
            const uint32_t jg = J * B + jj;
            const double ax = F32 ? p.ax[i] : xi, ay = F32 ? p.ay[i] : yi, az = F32 ? p.az[i] : zi;
            const double bx = F32 ? p.bx[jg] : L.tx[jj], by = F32 ? p.by[jg] : L.ty[jj],
                         bz = F32 ? p.bz[jg] : L.tz[jj];
            if (TWO) { /* (r_p, pi) or (s, mu): slot, below (count) or overflow */
              k = histd_ev_bin_pair(&ev, &m, ax, ay, az, bx, by, bz, &u);
            } else {
              double d = histd_pair_d(&m, ax, ay, az, bx, by, bz);
              u = d;
              /* histd_ev_bin_slot's rule, written out: through the evaluator's
               * struct the width and its inverse sit in registers, and GS1 ran
               * 6% slower on an H200 (bench/RESULTS.md, 2026-11-28) */
              uint32_t bin = EDGES ? histd_bin_edges_guess(d, edges, count, p.ev.ga, p.ev.gb)
                                   : histd_bin_width(d, p.width, p.inv_width, count);
              k = bin == HISTD_BIN_BELOW ? count : bin == HISTD_BIN_OVER ? count + 1 : bin;
            }
          }
          /* overflow: the host counts it, as every pair less the rest (one
           * slot for half of GS1's pairs: in global memory its atomics
           * serialised); unweighted float32 pairs count it in shared memory,
           * unread, rather than branch */
          if (k > count && !(F32 && !W))
            continue;
          if (!W || p.sum == HISTD_SUM_W) /* (the unweighted variants: always) */
            sink.add<F32>(k); /* (F32: the counts are in shared memory) */
          if (W) { /* the channel's term (w_i w_j; for ravg (w_i w_j) u: never F32) */
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
    if (++J == tiles_b) /* the next tile pair */
      I++, J = p.cross ? 0 : I;
  }
  if (F32 && refined != 0)
    atomicAdd(p.refined, refined);
  __syncthreads();
  sink.flush(slots);
  if (W)
    wsum_block_fold(L.wsum, L.werr, warps, slots, p.wsum + (size_t)blockIdx.x * slots,
                    p.werr + (size_t)blockIdx.x * slots);
}

typedef void (*stats_fn)(stats_params, uint64_t, uint64_t);

template <int METRIC, bool EDGES, bool TWO, bool F32> static stats_fn pick3(int w) {
  return w == STATS_W_LANES    ? k_stats<METRIC, EDGES, STATS_W_LANES, TWO, F32>
         : w == STATS_W_ATOMIC ? k_stats<METRIC, EDGES, STATS_W_ATOMIC, TWO, F32>
                               : k_stats<METRIC, EDGES, 0, TWO, F32>;
}

/* two axes: one variant a metric and weighting (the evaluator reads its
 * edges or width at run time) */
template <int METRIC, bool F32> static stats_fn pick2(bool edges, int w, bool two) {
  return two ? pick3<METRIC, false, true, F32>(w)
             : edges ? pick3<METRIC, true, false, F32>(w) : pick3<METRIC, false, false, F32>(w);
}

static stats_fn pick(const stats_params *p) {
  switch (p->metric.kind) {
  case 1:
    return p->f32 ? pick2<1, true>(p->edges, p->weighted, p->two)
                  : pick2<1, false>(p->edges, p->weighted, p->two);
  case 2:
    return p->f32 ? pick2<2, true>(p->edges, p->weighted, p->two)
                  : pick2<2, false>(p->edges, p->weighted, p->two);
  default:
    return p->f32 ? pick2<0, true>(p->edges, p->weighted, p->two)
                  : pick2<0, false>(p->edges, p->weighted, p->two);
  }
}

extern "C" size_t stats_smem_bytes(const stats_params *p) {
  const size_t tab = p->f32 ? histd__fast_entries(p->fb.count1, p->fb.count2) : 0;
  return layout_bytes(p->block, p->count, p->count1, p->weighted, p->shared_edges != 0,
                      p->f32 != 0, tab, p->shared_counts);
}

extern "C" int stats_blocks_per_sm(const stats_params *p, int *blocks, char *msg,
                                   size_t msglen) {
  return kernel_blocks_per_sm(pick(p), p->block, p->smem, blocks, msg, msglen);
}

extern "C" int stats_launch(const stats_params *p, uint64_t w0, uint64_t w1, uint32_t grid,
                            cudaStream_t s, char *msg, size_t msglen) {
  stats_fn f = pick(p);
  cudaError_t e = kernel_smem_prepare(f, p->smem);
  if (e != cudaSuccess)
    return sdh_cuda_fail(msg, msglen, "the kernel's shared-memory setting", e);
  f<<<grid, p->block, p->smem, s>>>(*p, w0, w1);
  e = cudaGetLastError();
  return e == cudaSuccess ? 0 : sdh_cuda_fail(msg, msglen, "the tiled-stats launch", e);
}
