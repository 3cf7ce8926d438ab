/*
 * gpu_reference.cu -- the exactness contract on the GPU, written for the
 * tests independently of kernels/: one thread per point i, every j > i,
 * each binary64 operation an explicit round-to-nearest intrinsic (no FMA),
 * counts in a per-block shared histogram (or global atomics when the
 * histogram is too large). test_gpu.c checks it against tests/definition.h
 * before trusting it for large N.
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

#define REF_SHARED_MAX 8192u

__device__ static uint32_t ref_bucket(double xi, double yi, double zi, double xj, double yj,
                                      double zj, double w, uint32_t nb) {
  double dx = __dsub_rn(xi, xj), dy = __dsub_rn(yi, yj), dz = __dsub_rn(zi, zj);
  double sxx = __dmul_rn(dx, dx), syy = __dmul_rn(dy, dy), szz = __dmul_rn(dz, dz);
  double s = __dadd_rn(__dadd_rn(sxx, syy), szz);
  double b = floor(__ddiv_rn(__dsqrt_rn(s), w));
  return b < (double)nb ? (uint32_t)b : nb; /* nb: overflow */
}

__global__ static void ref_kernel(const double *x, const double *y, const double *z, uint32_t n,
                                  uint32_t j0, uint32_t j1, double w, uint32_t nb,
                                  unsigned long long *g) {
  extern __shared__ uint32_t h[];
  bool sh = nb + 1 <= REF_SHARED_MAX;
  if (sh)
    for (uint32_t k = threadIdx.x; k <= nb; k += blockDim.x)
      h[k] = 0;
  __syncthreads();
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    double xi = x[i], yi = y[i], zi = z[i];
    uint32_t jb = i + 1 > j0 ? i + 1 : j0;
    for (uint32_t j = jb; j < j1 && j < n; j++) {
      uint32_t b = ref_bucket(xi, yi, zi, x[j], y[j], z[j], w, nb);
      if (sh)
        atomicAdd(&h[b], 1u);
      else
        atomicAdd(&g[b], 1ull);
    }
  }
  __syncthreads();
  if (sh)
    for (uint32_t k = threadIdx.x; k <= nb; k += blockDim.x)
      if (h[k])
        atomicAdd(&g[k], (unsigned long long)h[k]);
}

/* counts[0..nb) and counts[nb] = overflow. Returns 0 or a CUDA error code. */
extern "C" int gpu_reference_histogram(const double *hx, const double *hy, const double *hz,
                                       uint32_t n, double w, uint32_t nb, uint64_t *counts) {
  double *d = NULL;
  unsigned long long *g = NULL;
  cudaError_t e = cudaMalloc((void **)&d, 3 * (size_t)(n ? n : 1) * sizeof(double));
  if (e == cudaSuccess)
    e = cudaMalloc((void **)&g, ((size_t)nb + 1) * sizeof *g);
  if (e == cudaSuccess && n) {
    e = cudaMemcpy(d, hx, n * sizeof(double), cudaMemcpyHostToDevice);
    if (e == cudaSuccess)
      e = cudaMemcpy(d + n, hy, n * sizeof(double), cudaMemcpyHostToDevice);
    if (e == cudaSuccess)
      e = cudaMemcpy(d + 2 * (size_t)n, hz, n * sizeof(double), cudaMemcpyHostToDevice);
  }
  if (e == cudaSuccess)
    e = cudaMemset(g, 0, ((size_t)nb + 1) * sizeof *g);
  size_t smem = nb + 1 <= REF_SHARED_MAX ? ((size_t)nb + 1) * 4 : 0;
  /* windows of partners keep each launch short */
  for (uint32_t j0 = 0; e == cudaSuccess && j0 < n; j0 += 8192) {
    uint32_t j1 = j0 + 8192 < n ? j0 + 8192 : n;
    ref_kernel<<<(j1 + 127) / 128, 128, smem>>>(d, d + n, d + 2 * (size_t)n, n, j0, j1, w, nb, g);
    e = cudaGetLastError();
  }
  if (e == cudaSuccess)
    e = cudaMemcpy(counts, g, ((size_t)nb + 1) * sizeof *g, cudaMemcpyDeviceToHost);
  cudaFree(d);
  cudaFree(g);
  return (int)e;
}

extern "C" const char *gpu_reference_error(int e) { return cudaGetErrorString((cudaError_t)e); }
