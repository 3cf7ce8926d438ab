/*
 * points_kernels.cu -- the point statistics' device code (points_gpu.h):
 * one kernel template over the cell grid, instantiated per evaluator
 * (histd/eval.h) and metric. Every pair a thread meets is measured by the
 * contract (histd_pair_d: binary64, each operation rounded on its own
 * through the __d*_rn intrinsics, which nvcc never fuses), so the values
 * are the definition's, bit for bit, as on the CPU (src/engine/points.c).
 */
#include <cuda_runtime.h>

#include "histd/eval.h"
#include "points_gpu.h"
#include "sdh_gpu.h"

/* The origin of point i of a set (its index when the set has none). */
__device__ __forceinline__ uint64_t origin(const uint64_t *ids, uint32_t i) {
  return ids != nullptr ? ids[i] : i;
}

/* The evaluators' traversals: STAT as a template parameter, so each
 * instance keeps only its own accumulator in registers. */
template <int STAT>
__global__ void __launch_bounds__(256) k_points(points_params p, uint32_t p0, uint32_t p1) {
  const uint32_t a = p0 + blockIdx.x * blockDim.x + threadIdx.x;
  if (a >= p1)
    return;
  const histd__grid_geom &g = p.geom;
  const double xi = p.ax[a], yi = p.ay[a], zi = p.az[a];
  const uint32_t c = histd__grid_cell(&g, xi, yi, zi);
  const uint32_t ia = p.order_a[a];
  if (STAT == HISTD_STAT_NEAREST && p.nj[ia] >= 0)
    return; /* an earlier pass found its nearest */
  const uint64_t id = origin(p.id_a, ia);
  uint32_t nbr[27];
  const uint32_t count = histd__grid_neighbours(&g, c, nbr);
  unsigned long long *hist =
      STAT == HISTD_STAT_POINT_HISTOGRAM ? p.hist + (size_t)ia * (p.bin.count + 1) : nullptr;
  histd_ev_count cnt;
  histd_ev_nearest near;
  histd_ev_count_begin(&cnt);
  histd_ev_nearest_begin(&near);
  for (uint32_t k = 0; k < count; k++) {
    if (STAT == HISTD_STAT_PAIRS && p.self && nbr[k] < c)
      continue; /* each pair once: from the lower cell */
    uint32_t q = p.start_b[nbr[k]];
    const uint32_t q1 = p.start_b[nbr[k] + 1];
    if (STAT == HISTD_STAT_PAIRS && p.self && nbr[k] == c)
      q = a + 1; /* and in one cell, from the lower position */
    for (; q < q1; q++) {
      if (STAT != HISTD_STAT_PAIRS && p.self && q == a)
        continue;
      const uint32_t ib = p.order_b[q];
      const uint64_t jd = origin(p.id_b, ib);
      if (p.distinct && !p.self && jd == id)
        continue;
      const double d = histd_pair_d(&p.metric, xi, yi, zi, p.bx[q], p.by[q], p.bz[q]);
      if (STAT == HISTD_STAT_NEAREST) {
        histd_ev_nearest_pair(&near, d, p.r, (int64_t)jd);
      } else if (STAT == HISTD_STAT_POINT_HISTOGRAM) { /* its own row: no atomics */
        const uint32_t slot = histd_ev_bin_slot(&p.bin, d);
        if (slot <= p.bin.count)
          hist[slot]++;
      } else if (STAT == HISTD_STAT_POINT_COUNTS) {
        if (p.weighted)
          histd_ev_count_pair_w(&cnt, d, p.r, p.bw[q]);
        else
          histd_ev_count_pair(&cnt, d, p.r);
      } else if (histd_ev_within(d, p.r)) {
        const unsigned long long slot = atomicAdd(p.nrec, 1ull);
        if (slot < p.cap) {
          const bool swap = p.self && id > jd; /* self pairs: i < j */
          histd_pair_record rec = {p.frame, swap ? jd : id, swap ? id : jd, d};
          p.rec[slot] = rec;
        }
      }
    }
  }
  if (STAT == HISTD_STAT_NEAREST) {
    if (near.j >= 0) {
      p.nd[ia] = near.d;
      p.nj[ia] = near.j;
    }
  } else if (STAT == HISTD_STAT_POINT_COUNTS) {
    p.counts[ia] = cnt.n;
    if (p.weighted)
      p.wsum[ia] = histd_ev_count_weight(&cnt);
  }
}

extern "C" int points_launch(const points_params *p, uint32_t p0, uint32_t p1, cudaStream_t s,
                             char *msg, size_t msglen) {
  if (p1 <= p0)
    return 0;
  const uint32_t blocks = (p1 - p0 + 255) / 256;
  switch (p->stat) {
  case HISTD_STAT_POINT_COUNTS:
    k_points<HISTD_STAT_POINT_COUNTS><<<blocks, 256, 0, s>>>(*p, p0, p1);
    break;
  case HISTD_STAT_NEAREST:
    k_points<HISTD_STAT_NEAREST><<<blocks, 256, 0, s>>>(*p, p0, p1);
    break;
  case HISTD_STAT_POINT_HISTOGRAM:
    k_points<HISTD_STAT_POINT_HISTOGRAM><<<blocks, 256, 0, s>>>(*p, p0, p1);
    break;
  default:
    k_points<HISTD_STAT_PAIRS><<<blocks, 256, 0, s>>>(*p, p0, p1);
    break;
  }
  cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? 0 : sdh_cuda_fail(msg, msglen, "the point statistics' kernel", e);
}
