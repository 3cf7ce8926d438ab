/*
 * sdh_pair.cuh -- two device pieces of the brute-force kernels, shared by
 * sdh_kernels.cu and the tensor-core probe (bench/tc_probe.cu):
 *   bucket64     the exactness contract for one pair, with explicit
 *                roundings (no FMA contraction): the binary64 redo of every
 *                float32 edge pair;
 *   decode_pair  tile pair q's (I, J), J >= I, in row-major order of the
 *                upper triangle of T tiles (the persistent grids' units).
 */
#ifndef HISTD_SDH_PAIR_CUH
#define HISTD_SDH_PAIR_CUH

#include <stdint.h>

/* The contract, with explicit roundings (no FMA). */
static __device__ __forceinline__ uint32_t bucket64(double xi, double yi, double zi, double xj,
                                                    double yj, double zj, double w, uint32_t cap) {
  double dx = __dsub_rn(xi, xj);
  double dy = __dsub_rn(yi, yj);
  double dz = __dsub_rn(zi, zj);
  double s = __dadd_rn(__dadd_rn(__dmul_rn(dx, dx), __dmul_rn(dy, dy)), __dmul_rn(dz, dz));
  double q = __ddiv_rn(__dsqrt_rn(s), w);
  double b = floor(q);
  return b < (double)cap ? (uint32_t)b : cap;
}

static __device__ __forceinline__ uint64_t row_start(uint64_t I, uint64_t T) {
  return I * T - I * (I - 1) / 2; /* pairs before row I: sum of T-k, k<I */
}

static __device__ void decode_pair(uint64_t q, uint32_t T, uint32_t *I, uint32_t *J) {
  double b = 2.0 * T + 1.0;
  double disc = b * b - 8.0 * (double)q;
  double x = (b - sqrt(disc > 0 ? disc : 0)) / 2.0;
  int64_t r = (int64_t)x;
  if (r < 0)
    r = 0;
  if (r > (int64_t)T - 1)
    r = T - 1;
  while (r > 0 && row_start(r, T) > q)
    r--;
  while (r + 1 < T && row_start(r + 1, T) <= q)
    r++;
  *I = (uint32_t)r;
  *J = (uint32_t)(r + (q - row_start(r, T)));
}

#endif
