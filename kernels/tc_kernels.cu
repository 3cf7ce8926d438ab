/*
 * tc_kernels.cu -- the tensor-core kernel's launchers (tc_gpu.h): the
 * engine's variants of tc_kernels.cuh's k_tc (exact or fast; SUB where the
 * job's k >= 16; the queue of whole groups or of pairs) and the tiles'
 * build on the device.
 */
#include <cub/cub.cuh>

#include "morton.h"
#include "tc_kernels.cuh"

using namespace tc;

typedef void (*tc_kernel)(tc_params, uint64_t, uint64_t);

/* [exact][sub][gq] (fast has no queue: its gq entry repeats) */
static const tc_kernel kernels[2][2][2] = {
    {{k_tc<false, false, false, false, false>, k_tc<false, false, false, false, false>},
     {k_tc<false, false, false, true, false>, k_tc<false, false, false, true, false>}},
    {{k_tc<true, false, false, false, false>, k_tc<true, false, false, false, true>},
     {k_tc<true, false, false, true, false>, k_tc<true, false, false, true, true>}},
};

static tc_kernel pick(const tc_params *p, int gq) {
  return kernels[p->job.exact != 0][p->job.k >= 16][gq != 0];
}

extern "C" size_t tc_hist_bytes(const tc_params *p) {
  const size_t per = p->job.k >= 16 ? (size_t)256 << p->sub : 128;
  return (size_t)p->job.rows * per;
}

extern "C" cudaError_t tc_prepare(const tc_params *p, int gq, uint32_t *grid, size_t *smem) {
  const tc_kernel k = pick(p, gq);
  *smem = tc_hist_bytes(p);
  int dev = 0, per = 0, sms = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e == cudaSuccess)
    e = cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)*smem);
  if (e == cudaSuccess)
    e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, k, TC_NT, *smem);
  if (e == cudaSuccess)
    e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  if (e == cudaSuccess && per < 1)
    e = cudaErrorInvalidConfiguration;
  *grid = (uint32_t)(per * sms);
  return e;
}

extern "C" cudaError_t tc_launch(const tc_params *p, int gq, uint32_t grid, size_t smem,
                                 uint64_t u0, uint64_t u1, cudaStream_t s) {
  cudaError_t e = cudaMemsetAsync(&p->stats[TC_NEXT], 0, sizeof p->stats[TC_NEXT], s);
  if (e != cudaSuccess)
    return e;
  pick(p, gq)<<<grid, TC_NT, smem, s>>>(*p, u0, u1);
  return cudaGetLastError();
}

/* ---- the tiles, built on the GPU -------------------------------------------
 * tc_tiles_build's arithmetic (tc_plan.h) on the device: the Morton codes
 * of morton.h (histd__morton_key, the host's own), CUB's radix sort, the
 * points gathered in that order, then a block a tile for its centre, frame
 * and radius (rounded up). Any order is exact (each tile's radius is its own
 * points'); Morton order keeps the radii small. */

static __global__ void k_morton(const double *x, const double *y, const double *z, uint32_t n,
                                double lx, double ly, double lz, double scale,
                                unsigned long long *key, uint32_t *idx) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  const double lo[3] = {lx, ly, lz};
  if (i < n) {
    key[i] = histd__morton_key(x[i], y[i], z[i], lo, scale);
    idx[i] = i;
  }
}

static __global__ void k_gather(const double *x, const double *y, const double *z,
                                const uint32_t *idx, uint32_t n, double *xs) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    const uint32_t o = idx[i];
    xs[i] = x[o];
    xs[n + i] = y[o];
    xs[2 * (size_t)n + i] = z[o];
  }
}

struct MinOp {
  __device__ double operator()(double a, double b) const { return b < a ? b : a; }
};
struct MaxOp {
  __device__ double operator()(double a, double b) const { return b > a ? b : a; }
};

static __global__ void __launch_bounds__(NT)
    k_tiles(const double *xs, uint32_t n, double iw, float4 *locs, double *cen, float *rad) {
  typedef cub::BlockReduce<double, NT> R;
  __shared__ typename R::TempStorage tmp;
  __shared__ double s_c[3];
  const uint32_t I = blockIdx.x, i = I * NT + threadIdx.x, i0 = I * NT;
  const bool valid = i < n;
  double v[3];
  for (int a = 0; a < 3; a++) {
    const double *c = xs + (size_t)a * n;
    v[a] = c[valid ? i : i0];
    double lo = R(tmp).Reduce(v[a], MinOp());
    __syncthreads();
    double hi = R(tmp).Reduce(v[a], MaxOp());
    __syncthreads();
    if (threadIdx.x == 0) {
      double m = lo + (hi - lo) / 2;
      s_c[a] = m >= lo && m <= hi ? m : lo;
      cen[3 * I + a] = s_c[a];
    }
  }
  __syncthreads();
  float f[3] = {0, 0, 0};
  double e2 = 0;
  if (valid) {
    for (int a = 0; a < 3; a++) {
      f[a] = __double2float_rn(__dmul_rn(__dsub_rn(v[a], s_c[a]), iw));
      e2 = __dadd_rn(e2, __dmul_rn((double)f[a], (double)f[a]));
    }
  }
  locs[i] = make_float4(f[0], f[1], f[2], 0.f);
  double m2 = R(tmp).Reduce(e2, MaxOp());
  if (threadIdx.x == 0)
    rad[I] = __double2float_ru(__dmul_rn(sqrt(m2), 1 + 0x1p-20));
}

static size_t up256(size_t b) { return (b + 255) & ~(size_t)255; }

/* the sort's scratch for n keys */
static size_t sort_bytes(uint32_t n) {
  size_t tb = 0;
  cub::DoubleBuffer<unsigned long long> kb(nullptr, nullptr);
  cub::DoubleBuffer<uint32_t> vb(nullptr, nullptr);
  cub::DeviceRadixSort::SortPairs(nullptr, tb, kb, vb, (int)n, 0, 63);
  return up256(tb ? tb : 1);
}

/* The layout of mem: sorted points, frames, centres, radii; then the
 * sort's keys, indices (two each) and scratch. */
extern "C" size_t tc_tiles_bytes(uint32_t n) {
  const size_t T = (n + TC_NT - 1) / TC_NT;
  return up256(24 * (size_t)n) + up256(16 * T * TC_NT) + up256(24 * T) + up256(4 * T) +
         up256(16 * (size_t)n) + up256(8 * (size_t)n) + sort_bytes(n);
}

extern "C" cudaError_t tc_tiles_device(const double *dx, uint32_t n, const double lo[3],
                                       double scale, double w, void *mem, tc_params *p,
                                       cudaStream_t s) {
  const uint32_t T = (n + TC_NT - 1) / TC_NT;
  char *at = (char *)mem;
#define TAKE(ptr, type, size) (ptr = (type)(void *)at, at += up256(size))
  double *xs, *cen;
  float4 *locs;
  float *rad;
  unsigned long long *key;
  uint32_t *idx;
  void *tmp;
  TAKE(xs, double *, 24 * (size_t)n);
  TAKE(locs, float4 *, 16 * (size_t)T * TC_NT);
  TAKE(cen, double *, 24 * (size_t)T);
  TAKE(rad, float *, 4 * (size_t)T);
  TAKE(key, unsigned long long *, 16 * (size_t)n);
  TAKE(idx, uint32_t *, 8 * (size_t)n);
  size_t tb = sort_bytes(n);
  TAKE(tmp, void *, tb);
#undef TAKE
  p->n = n;
  p->tiles = T;
  p->loc = (const float *)locs;
  p->cen = cen;
  p->rad = rad;
  p->x = xs;
  p->y = xs + n;
  p->z = xs + 2 * (size_t)n;
  if (n == 0)
    return cudaSuccess;
  const uint32_t gb = (n + 255) / 256;
  k_morton<<<gb, 256, 0, s>>>(dx, dx + n, dx + 2 * (size_t)n, n, lo[0], lo[1], lo[2], scale, key,
                              idx);
  cub::DoubleBuffer<unsigned long long> kb(key, key + n);
  cub::DoubleBuffer<uint32_t> vb(idx, idx + n);
  cudaError_t e = cub::DeviceRadixSort::SortPairs(tmp, tb, kb, vb, (int)n, 0, 63, s);
  if (e != cudaSuccess)
    return e;
  k_gather<<<gb, 256, 0, s>>>(dx, dx + n, dx + 2 * (size_t)n, vb.Current(), n, xs);
  k_tiles<<<T, TC_NT, 0, s>>>(xs, n, 1.0 / w, locs, cen, rad);
  return cudaGetLastError();
}
