/*
 * grid_kernels.cu -- the device code of "grid" on the GPU and its
 * C-callable launchers (grid_gpu.h has the steps).
 *
 * The pair kernel. A warp takes a chunk: up to 32 points of A in one cell
 * c, one per lane, held in registers. It walks its cell's neighbour cells
 * (self pairs: only cells after c, and the cell itself with j > i); 32 B
 * points at a time are loaded by the lanes and passed around by shuffles,
 * so the warp meets (its 32 A points) x (32 B points) per step.
 *
 * Each pair goes through two stages: a filter drops pairs that are surely
 * overflow (overflow is counted by the host as total - sum(counts) -
 * below), and every other pair (those within reach, about 1/6 of the
 * candidates of a uniform set) is queued in the warp's shared memory.
 * When the queue holds 32 pairs the warp takes them one per lane and bins
 * them: from their float32 values where the bounds decide the bin
 * ("Float32 bins" below), else by the contract: histd_pair_s /
 * histd_diff_s (histd/pair.h: the minimum image with its guard, the sum
 * of squares, every operation rounded on its own), sqrt, histd_bin_width
 * / histd_bin_edges; then the counts (a shared-memory histogram per
 * block, or global atomics when it does not fit). So a pair is counted
 * in the contract's bin, and the filters need only be right about what
 * they drop. Notation: u = 2^-53, M the largest |coordinate|, B the sum of
 * |box components|, rho the box's aspect ratio, all as in grid.h, whose
 * reach = r_max (1 + 2^-20) + 2^-40 (M + B)(1 + rho). The contract's d of
 * any pair is within e_c = 2^-48 (M + B)(1 + rho) (plus 4u d) of the
 * length of the lattice image it computes, as every operand of its image
 * rule is at most 2M + (2M / Bmin + 1) Bmax in size. So a pair whose every
 * image is at least reach long has d > r_max (1 + 2^-21): overflow for
 * edges (d >= E[K] = r_max) and for width bins (fl(d / w) >= count, as
 * grid.h shows).
 *
 * The float32 filter (the host's choice where it applies: open sets, and
 * periodic boxes with at least 2K + 3 cells on each axis, K the grid's
 * span (grid.h), and reach <= half the shortest width). Each point is
 * stored, beside its binary64 coordinates, relative to its cell's corner
 * in float32 (cell_relative: in binary64 to within e_d = 2^-44 (M + B)(1 +
 * rho), then rounded once); its components are at most R_k (1 + 2^-20) +
 * e_d, R the cell's extent along each axis (ax/n0 + |bx|/n1 + |cx|/n2,
 * by/n1 + |cy|/n2, cz/n2; open: the cell's sides). A neighbour at offset o
 * in {-K..K}^3 is met in the image placed o cells away: D = rel_a - rel_b
 * + delta[o], delta[o] = -(o0/n0 a + o1/n1 b + o2/n2 c) (open: -o_k s_k),
 * computed in binary64 and rounded to float32 (|delta_k| <= K R_k). The
 * warp computes
 *     ap = fl32(rel_a + delta)  (once per neighbour cell),
 *     dx = fl32(ap - rel_b) (y, z alike),  s32 = fmaf(dz, dz, fmaf(dy, dy, dx * dx)).
 * Every component carries at most (3K + 5.01) 2^-24 (R_k (1 + 2^-20) +
 * e_d) + 2 e_d of error (five float32 roundings of values up to R (rel_a),
 * K R (delta), (K + 1) R (ap), R (rel_b) and (K + 2) R (dx), delta's
 * binary64 sum, and the binary64 ones) plus 2^-120 for flushed subnormals
 * (-ftz); E is the sum over the axes. s32 is |D32|^2 (1 + t), |t| <= 3.01
 * 2^-24, or less where underflow flushes (an underestimate). The host's
 * cut32 >= (reach + E)^2 (1 + 2^-20), rounded up to a float. So s32 >
 * cut32 gives |D| > reach: this image of the pair is longer than reach.
 * It is the shortest one whenever the shortest is below reach: an image
 * shorter than reach (<= half the shortest width W) has every fractional
 * difference below 1/2 (the distance between the planes f_k = const is
 * W_k >= W); so has ours (the two cells are within K: below (K + 1)/n_k
 * <= (K + 1)/(2K + 3) < 1/2, plus rounding); two images that differ by a
 * lattice vector and both have every fractional difference below 1/2 are
 * one. Hence every image is at least reach long, and the pair is
 * overflow. In open sets D is the pair's difference itself.
 *   The cylinder ((r_p, pi) along z, orthorhombic or open: cyl): the same
 * bounds axis by axis, rp_cut32 >= (rk_0 + E_x + E_y)^2 (1 + 2^-20) for
 * fmaf(dy, dy, dx * dx) (two roundings) and pi_cut32 >= (rk_2 + E_z)^2 (1
 * + 2^-20) for dz * dz, rk the cells' reaches (grid.h). Above either, D's
 * r_p exceeds rk_0 or its |dz| exceeds rk_2. In an orthorhombic box D's
 * every component is below half the box along its axis, so each is the
 * minimum image's on that axis, which the contract's per-axis wrap
 * computes to within e_c, or, where it takes the other image of a
 * component within e_c of half the box, a component of at least L_k / 2 -
 * 3e >= reach - 3e: beyond rk_0 and rk_2 either way, so the contract's r_p
 * > E or pi > pi_max, overflow.
 *
 * Float32 bins (fast: the float32 filter's jobs with the line of sight
 * z, axis 1 in width bins or log edges; not ravg's pass, which sums the
 * contract's u). The queue keeps each pair's a = fl32 |D|^2 (r_p's
 * fmaf(dy, dy, dx * dx) for (r_p, pi)) and pz = |dz|, and the drain bins
 * it from them where the bounds leave no doubt, and by the contract
 * otherwise. D32's components are within e_k of the image D the proof
 * above places (the shortest, for every pair within reach), so |D32| is
 * within E1 (their sum over axis 1's components) of |D|, and a =
 * |D32|^2 (1 + t) with |t| < 2^-21 (less where -ftz flushes, 2^-100 at
 * most). The contract's d (r_p, pi) is within 4 ed (ed = 2^-44 (M + B)
 * (1 + rho), sixteen times grid.h's rounding) and 4u of |D| (|D_xy|,
 * |D_z|) whenever |D| is within reach, as it must be for a pair counted
 * in a bin (beyond it the contract's value is overflow whatever image it
 * takes, and so is the pair's here: a > lo of the last edge). Axis 1's
 * boundaries b_j (the edges, or j w, where a width bin's fl(d / w) moves
 * by 2u) widened by 2^-40 relative and E1 + 4 ed become the squares lo_j
 * and hi_j (rounded outward to float; src/engine/fast_bins.h): a > lo_j
 * gives d >= b_j, a < hi_j gives d < b_j. pi's boundaries (j w2, and
 * pi_max) are moved by e_z + 4 ed the same way. mu = fl(pi / s) is within
 * (e_z + E + 8 ed) / |D32| (1 + 2^-19) + 2^-20 of pz rsqrtf(a) for |D32|
 * > 4E (a > smin), given rsqrtf's 2 ulp (the CUDA Guide; 2.09 u measured, sdh's
 * k_rsqrt_error), a's own rounding and the product's: the margin cmu r +
 * amu (2^-19 absolute, for the float boundaries and the differences'
 * roundings) puts mu clear of its boundaries. A first guess of the bin
 * (log2 of a, or its root over w) is only confirmed or sent to the
 * contract; so are pairs near any boundary (within about 1e-5 of a cell
 * at span 3), a pair on a boundary exactly, mu = 1 along z, and s near
 * 0. The binned pair skips the contract's binary64 loads, minimum image,
 * square roots, division and bin searches.
 *
 * The float64 filter (elsewhere: few cells a periodic axis, or r_max near
 * half the box). dx = xi - xj, dy, dz exactly as the contract rounds them
 * (__dsub_rn); an estimate s_e of the squared distance: the contract's
 * image rule with rint and FMA, without histd_image's guard against
 * half-integers and with the products fused:
 *     ortho:  dx = fma(-ax, rint(dx * iax), dx)  (y, z alike)
 *     tricl.: k = rint(dz * icz); dz, dy, dx -= (cz, cy, cx) k by fma;
 *             k = rint(dy * iby); dy, dx -= (by, bx) k; k = rint(dx * iax); dx -= ax k
 *     s_e = fma(dz, dz, fma(dy, dy, dx * dx))
 * s_cut = fl(fl(reach^2) (1 + 2^-30)) >= reach^2 (1 + 2^-31). The host
 * sets s_cut = +inf (nothing dropped) unless, in a periodic box,
 * min(ax, by, cz) / 2 >= reach.
 *  (a) Same images. Where the estimate's rint gives every k the contract's
 *      nearbyint gives, both compute the same lattice vector V = (dx, dy,
 *      dz) - k3 c - k2 b - k1 a, each component within e = e_c of V's. The
 *      estimate's s_e is |V_e|^2 (1 + t), |t| <= 3u (one rounding for the
 *      product, two for the fmas), so s_e > s_cut gives |V_e| > reach (1 +
 *      2^-33), |V| > reach - 2e, and the contract's d >= |V| - 2e - 4u|V|
 *      > r_max (1 + 2^-21).
 *  (b) Different images. An axis where the two k differ first (z, then y,
 *      then x) has its two inputs within e of each other and their
 *      quotients by the box length within 3u of the exact ones, on both
 *      sides of one half-integer h; so the contract's input there is within
 *      e + 3u (2M + B) of h L, and after its wrap (by k = h +- 1/2, rounded
 *      once) that component is at least L / 2 - 2e. Later steps do not touch
 *      that component, so the contract's d >= L / 2 - 3e >= reach - 3e >
 *      r_max (1 + 2^-21), overflow again (L / 2 >= reach is why the host
 *      asks for it).
 *  Open sets: no images, dx, dy, dz are the contract's own, and s_e is
 *  within 3u of the contract's s: (a) with V = (dx, dy, dz).
 *  NaN never compares above either cut, so a pair whose estimate is NaN
 *  goes to the contract, which decides it.
 *
 * Weights: the product w_i w_j (rounded once) goes into the warp's
 * partial of its slot by an atomic add; after every 128 drains of
 * at most 32 terms (4096 terms) the warp folds its partials into its
 * Neumaier pairs (wsum_device.cuh; stats_gpu.h has the 1e-12 bound).
 * Both are the block's rows in global memory (wglobal 2, wscr): float64
 * atomics there are the L2's own, where shared memory's are a
 * compare-and-swap loop (grid_engine.c's choose_layout has the
 * measurements). The layouts with the partials (wglobal 0) or the pairs
 * (1) in shared memory remain as A/B settings: a 25 x 50 (s, mu)
 * histogram's 30 KB a warp there left one block of 4 warps a
 * multiprocessor, and (s, mu) ran 2.9x slower.
 */
#include <cuda_runtime.h>
#include <stdint.h>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include "grid_gpu.h"
#include "histd/histd.h"
#include "sdh_gpu.h"
#include "fast_slot.cuh"
#include "launch_util.cuh"
#include "wsum_device.cuh"

#define FULL 0xffffffffu

/* ---- building the cells ---------------------------------------------------- */

static uint32_t blocks_for(uint64_t n) {
  uint64_t b = (n + 255) / 256;
  return b < 1 ? 1 : b > 8192 ? 8192 : (uint32_t)b;
}

__global__ void k_keys(histd__grid_geom g, uint32_t n, const double *x, const double *y,
                       const double *z, uint32_t *key, uint32_t *idx) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    key[i] = histd__grid_cell(&g, x[i], y[i], z[i]);
    idx[i] = i;
  }
}

/* A point relative to the corner of its cell `key` (the float32 filter's
 * coordinates): v = x - corner, then reduced by whole box vectors to the
 * image whose fractional coordinates are nearest zero. The cell's own
 * points have fractional coordinates in [0, 1/n) relative to its corner
 * (up to rounding), so whatever floor the key's computation took, this
 * finds the image inside the cell. */
__device__ __forceinline__ void cell_relative(const histd__grid_geom &g, const histd_metric &m,
                                              uint32_t key, double x, double y, double z,
                                              float *rx, float *ry, float *rz) {
  const uint32_t i = key % g.n[0], j = (key / g.n[0]) % g.n[1], k = key / g.n[0] / g.n[1];
  double vx, vy, vz;
  if (g.periodic) {
    const double fi = (double)i / g.n[0], fj = (double)j / g.n[1], fk = (double)k / g.n[2];
    vx = x - (fi * m.ax + fj * m.bx + fk * m.cx);
    vy = y - (fj * m.by + fk * m.cy);
    vz = z - fk * m.cz;
    const double fc = vz * m.icz, fb = (vy - m.cy * fc) * m.iby;
    const double fa = (vx - m.bx * fb - m.cx * fc) * m.iax;
    const double na = rint(fa), nb = rint(fb), nc = rint(fc);
    vx = vx - (na * m.ax + nb * m.bx + nc * m.cx);
    vy = vy - (nb * m.by + nc * m.cy);
    vz = vz - nc * m.cz;
  } else {
    vx = x - (g.lo[0] + i / g.scale[0]);
    vy = y - (g.lo[1] + j / g.scale[1]);
    vz = z - (g.lo[2] + k / g.scale[2]);
  }
  *rx = (float)vx;
  *ry = (float)vy;
  *rz = (float)vz;
}

__global__ void k_gather(histd__grid_geom g, histd_metric m, uint32_t n, const uint32_t *key,
                         const uint32_t *idx, const double *x, const double *y, const double *z,
                         const double *w, double *sx, double *sy, double *sz, double *sw,
                         float *fx, float *fy, float *fz) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const uint32_t j = idx[i];
    const double px = x[j], py = y[j], pz = z[j];
    sx[i] = px;
    sy[i] = py;
    sz[i] = pz;
    if (w != nullptr)
      sw[i] = w[j];
    if (fx != nullptr)
      cell_relative(g, m, key[i], px, py, pz, &fx[i], &fy[i], &fz[i]);
  }
}

/* start[c] = the first i with key[i] >= c, for c in [0, cells]. */
__global__ void k_starts(uint32_t n, const uint32_t *key, uint32_t cells, uint32_t *start) {
  for (uint32_t c = blockIdx.x * blockDim.x + threadIdx.x; c <= cells;
       c += gridDim.x * blockDim.x) {
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
      uint32_t mid = lo + (hi - lo) / 2;
      if (key[mid] < c)
        lo = mid + 1;
      else
        hi = mid;
    }
    start[c] = lo;
  }
}

__global__ void k_chunk_counts(const uint32_t *start, uint32_t cells, uint32_t *cnt) {
  for (uint32_t c = blockIdx.x * blockDim.x + threadIdx.x; c <= cells;
       c += gridDim.x * blockDim.x)
    cnt[c] = c < cells ? (start[c + 1] - start[c] + GRID_CHUNK - 1) / GRID_CHUNK : 0;
}

/* The bits of a cell index: cells <= 2^bits. */
static int key_bits(uint64_t cells) {
  int bits = 1;
  while (bits < 32 && ((uint64_t)1 << bits) < cells)
    bits++;
  return bits;
}

extern "C" int grid_temp_bytes(uint32_t n, uint64_t cells, size_t *bytes, char *msg,
                               size_t msglen) {
  size_t sort = 0, scan = 0;
  cub::DoubleBuffer<uint32_t> k(nullptr, nullptr), v(nullptr, nullptr);
  cudaError_t e =
      cub::DeviceRadixSort::SortPairs(nullptr, sort, k, v, n ? n : 1, 0, key_bits(cells));
  if (e == cudaSuccess)
    e = cub::DeviceScan::ExclusiveSum(nullptr, scan, (const uint32_t *)nullptr,
                                      (uint32_t *)nullptr, (uint32_t)(cells + 1));
  if (e != cudaSuccess)
    return sdh_cuda_fail(msg, msglen, "CUB's size query", e);
  *bytes = sort > scan ? sort : scan;
  return 0;
}

extern "C" int grid_sort_set(const histd__grid_geom *g, const histd_metric *m, grid_set *set,
                             grid_scratch *scr, cudaStream_t s, char *msg, size_t msglen) {
  const uint32_t n = set->n, cells = (uint32_t)g->cells;
  if (n == 0) {
    cudaError_t e = cudaMemsetAsync(set->start, 0, ((size_t)cells + 1) * sizeof(uint32_t), s);
    return e == cudaSuccess ? 0 : sdh_cuda_fail(msg, msglen, "cudaMemsetAsync", e);
  }
  const int bits = key_bits(cells); /* keys < cells <= 2^bits */
  k_keys<<<blocks_for(n), 256, 0, s>>>(*g, n, set->x, set->y, set->z, scr->keys, scr->vals);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    return sdh_cuda_fail(msg, msglen, "the grid's key kernel", e);
  cub::DoubleBuffer<uint32_t> k(scr->keys, scr->keys + n), v(scr->vals, scr->vals + n);
  size_t tb = scr->temp_bytes;
  e = cub::DeviceRadixSort::SortPairs(scr->temp, tb, k, v, n, 0, bits, s);
  if (e != cudaSuccess)
    return sdh_cuda_fail(msg, msglen, "CUB's radix sort of the cells", e);
  k_gather<<<blocks_for(n), 256, 0, s>>>(*g, *m, n, k.Current(), v.Current(), set->x, set->y,
                                         set->z, set->w, set->sx, set->sy, set->sz, set->sw,
                                         set->fx, set->fy, set->fz);
  k_starts<<<blocks_for((uint64_t)cells + 1), 256, 0, s>>>(n, k.Current(), cells, set->start);
  e = cudaGetLastError();
  if (e == cudaSuccess && set->order != nullptr)
    e = cudaMemcpyAsync(set->order, v.Current(), (size_t)n * sizeof(uint32_t),
                        cudaMemcpyDeviceToDevice, s);
  return e == cudaSuccess ? 0 : sdh_cuda_fail(msg, msglen, "the grid's gather", e);
}

extern "C" int grid_chunks(const uint32_t *start, uint64_t cells, uint32_t *cnt,
                           uint32_t *chunk_off, grid_scratch *scr, uint32_t *chunks,
                           cudaStream_t s, char *msg, size_t msglen) {
  k_chunk_counts<<<blocks_for(cells + 1), 256, 0, s>>>(start, (uint32_t)cells, cnt);
  cudaError_t e = cudaGetLastError();
  size_t tb = scr->temp_bytes;
  if (e == cudaSuccess)
    e = cub::DeviceScan::ExclusiveSum(scr->temp, tb, (const uint32_t *)cnt, chunk_off,
                                      (uint32_t)(cells + 1), s);
  if (e == cudaSuccess)
    e = cudaMemcpyAsync(chunks, chunk_off + cells, sizeof(uint32_t), cudaMemcpyDeviceToHost, s);
  if (e == cudaSuccess)
    e = cudaStreamSynchronize(s);
  return e == cudaSuccess ? 0 : sdh_cuda_fail(msg, msglen, "the grid's chunks", e);
}

/* ---- the pair kernel ------------------------------------------------------- */

/* How a kernel bins: width bins or explicit edges of d, or two axes by the
 * evaluator (a template argument each, so that the one-axis kernels hold
 * none of the two-axis code: inlined into them it took G1's kernel from 62
 * to 89 registers and G1 from 394 to 557 ms on an H200). */
enum { BIN_WIDTH = 0, BIN_EDGES = 1, BIN_TWO = 2 };

/* The filter's estimate of s (the header's proof says why it may only drop
 * overflow); with cyl, (r_p, pi) along z, of dx^2 + dy^2 and dz^2 apart,
 * each against its own axes' reach (the same proof, axis by axis: an
 * estimate above rp_cut (pi_cut) has the contract's r_p (pi) beyond its
 * range, in the same image or, in another, a component of at least half
 * the box less 3e, which the host's half-width condition puts beyond
 * either reach). */
template <int METRIC, bool CYL>
__device__ __forceinline__ bool beyond(const grid_params &p, const histd_metric &m, double dx,
                                       double dy, double dz);

template <int METRIC>
__device__ __forceinline__ double estimate_s(const histd_metric &m, double dx, double dy,
                                             double dz) {
  if (METRIC == 1) {
    dx = fma(-m.ax, rint(dx * m.iax), dx);
    dy = fma(-m.by, rint(dy * m.iby), dy);
    dz = fma(-m.cz, rint(dz * m.icz), dz);
  } else if (METRIC == 2) {
    double k = rint(dz * m.icz);
    dz = fma(-m.cz, k, dz);
    dy = fma(-m.cy, k, dy);
    dx = fma(-m.cx, k, dx);
    k = rint(dy * m.iby);
    dy = fma(-m.by, k, dy);
    dx = fma(-m.bx, k, dx);
    dx = fma(-m.ax, rint(dx * m.iax), dx);
  }
  return fma(dz, dz, fma(dy, dy, dx * dx));
}

template <int METRIC, bool CYL>
__device__ __forceinline__ bool beyond(const grid_params &p, const histd_metric &m, double dx,
                                       double dy, double dz) {
  if (!CYL || !p.cyl)
    return estimate_s<METRIC>(m, dx, dy, dz) > p.s_cut;
  if (METRIC == 1) { /* rp_pi's boxes are orthorhombic */
    dx = fma(-m.ax, rint(dx * m.iax), dx);
    dy = fma(-m.by, rint(dy * m.iby), dy);
    dz = fma(-m.cz, rint(dz * m.icz), dz);
  }
  return fma(dy, dy, dx * dx) > p.rp_cut || dz * dz > p.pi_cut;
}

/* Where a block counts: the edges, the histogram (shared or global), and
 * its warp's weighted partials and Neumaier pairs. */
struct grid_sink {
  const double *edges;
  unsigned long long *hist;
  double *part, *wsum, *werr;
};

/* A warp's queue of filtered pairs; n is the same in every lane. The
 * float64 filter queues the contract's differences (qx, qy, qz) and
 * w_i w_j (qw); the float32 filter the pair's indices (qi into A's sorted
 * points, qj into B's), whose binary64 coordinates the drain loads. */
struct grid_queue {
  double *qx, *qy, *qz, *qw;
  uint32_t *qi, *qj;
  float *qa, *qp; /* float32 filter: the pair's float32 a and |dz| (fast_slot) */
  uint32_t n, drains;
};

/* A pair counted in `slot` (not overflow, which the host counts): its
 * count in the counts' pass (another channel's pass sums alone), and with
 * w the term of the pass's channel. */
__device__ __forceinline__ void count_slot(const grid_params &p, const grid_sink &k,
                                           uint32_t slot, bool w, double term) {
  if (!w || p.sum == HISTD_SUM_W)
    atomicAdd(&k.hist[slot], 1ull);
  if (w)
    atomicAdd(&k.part[slot], term);
}

/* The contract's bin of a pair of squared distance s (histd/pair.h's
 * arithmetic), counted with its weight product wp. */
template <bool EDGES, bool W>
__device__ __forceinline__ void count_s(const grid_params &p, const grid_sink &k, double s,
                                        double wp) {
  const double d = __dsqrt_rn(s);
  const uint32_t bin = EDGES ? histd_bin_edges_guess(d, k.edges, p.count, p.ev.ga, p.ev.gb)
                             : histd_bin_width(d, p.width, p.inv_width, p.count);
  if (bin != HISTD_BIN_OVER)
    count_slot(p, k, bin == HISTD_BIN_BELOW ? p.count : bin, W, histd_ev_sum(p.sum, wp, d));
}

/* Two axes: the pair's slot by the evaluator (from the two points, or
 * from the contract's difference as (dx, dy, dz) - (0, 0, 0), which only
 * the line of sight z may take: the host keeps the midpoint's jobs on the
 * float32 filter, whose queue holds the points), counted unless overflow. */
__device__ __forceinline__ void count_two(const grid_params &p, const histd_metric &m,
                                          const grid_sink &k, double xi, double yi, double zi,
                                          double xj, double yj, double zj, double wp, bool w) {
  histd_ev_bin ev = p.ev;
  ev.edges = p.edges ? k.edges : nullptr;
  double u;
  const uint32_t slot = histd_ev_bin_pair(&ev, &m, xi, yi, zi, xj, yj, zj, &u);
  if (slot <= p.count)
    count_slot(p, k, slot, w, histd_ev_sum(p.sum, wp, u));
}

/* The warp takes the queue's top `take` (<= 32) pairs, one per lane, and
 * counts them by the contract. */
template <bool F32, int METRIC, int BIN, bool W>
__device__ __forceinline__ void drain(const grid_params &p, const histd_metric &m,
                                      const grid_sink &k, grid_queue &q, uint32_t take,
                                      uint32_t lane) {
  __syncwarp(); /* the lanes' pushes are visible */
  if (lane < take) {
    const uint32_t e = q.n - take + lane;
    if constexpr (F32) {
      const uint32_t a = q.qi[e], b = q.qj[e];
      const double wp = W ? (p.unit ? 1.0 : __dmul_rn(p.aw[a], p.bw[b])) : 0.0;
      uint32_t slot;
      if (p.fast &&
          histd__fast_slot<BIN == BIN_TWO>(p.fb, q.qa[e], BIN == BIN_TWO ? q.qp[e] : 0.f, slot)) {
        if (slot <= p.count) /* (fast passes sum w_i w_j alone) */
          count_slot(p, k, slot, W, wp);
      } else if constexpr (BIN == BIN_TWO)
        count_two(p, m, k, p.ax[a], p.ay[a], p.az[a], p.bx[b], p.by[b], p.bz[b], wp, W);
      else
        count_s<BIN == BIN_EDGES, W>(p, k, histd_pair_s(&m, p.ax[a], p.ay[a], p.az[a], p.bx[b],
                                                        p.by[b], p.bz[b]),
                                     wp);
    } else if constexpr (BIN == BIN_TWO) {
      count_two(p, m, k, q.qx[e], q.qy[e], q.qz[e], 0, 0, 0, W ? q.qw[e] : 0.0, W);
    } else {
      count_s<BIN == BIN_EDGES, W>(p, k, histd_diff_s(&m, q.qx[e], q.qy[e], q.qz[e]),
                                   W ? q.qw[e] : 0.0);
    }
  }
  q.n -= take;
  if (W && ++q.drains == 4096 / 32) { /* at most 4096 terms in a partial */
    wsum_warp_fold(k.part, k.wsum, k.werr, p.count + 2, lane);
    q.drains = 0;
  }
  __syncwarp(); /* the entries read before the next pushes */
}

/* One lane's pair after its filter: queued when hit; the warp drains 32. */
template <bool F32, int METRIC, int BIN, bool W>
__device__ __forceinline__ void push(const grid_params &p, const histd_metric &m,
                                     const grid_sink &k, grid_queue &q, bool hit, uint32_t lane,
                                     uint32_t i, uint32_t j, double dx, double dy, double dz,
                                     double wp, float fa, float fp) {
  const unsigned mask = __ballot_sync(FULL, hit);
  if (hit) {
    const uint32_t pos = q.n + __popc(mask & ((1u << lane) - 1));
    if constexpr (F32) {
      q.qi[pos] = i;
      q.qj[pos] = j;
      q.qa[pos] = fa;
      if (BIN == BIN_TWO)
        q.qp[pos] = fp;
    } else {
      q.qx[pos] = dx;
      q.qy[pos] = dy;
      q.qz[pos] = dz;
      if (W)
        q.qw[pos] = wp;
    }
  }
  q.n += __popc(mask);
  if (q.n >= 32)
    drain<F32, METRIC, BIN, W>(p, m, k, q, 32, lane);
}

/* The warp's A points (one per lane, `live` where there is one) meet B's
 * points [j0, j1); DIAG: the A points' own cell, pairs j > i only.
 * Float64 filter: (xi, yi, zi) are the A point's coordinates. Float32
 * filter: they are its coordinates relative to its cell's corner plus
 * the offset of this B cell (rounded to float32). */
template <bool F32, int METRIC, int BIN, bool W, bool DIAG, typename T>
__device__ __forceinline__ void visit(const grid_params &p, const histd_metric &m,
                                      const grid_sink &k, grid_queue &q, uint32_t j0,
                                      uint32_t j1, uint32_t i, bool live, T xi, T yi, T zi,
                                      double wi, uint32_t lane, unsigned long long &cand) {
  if (live && j1 > j0)
    cand += DIAG ? (j1 > i + 1 ? j1 - (i + 1) : 0) : j1 - j0;
  for (uint32_t jb = j0; jb < j1; jb += 32) {
    const uint32_t jl = jb + lane;
    T bxl = 0, byl = 0, bzl = 0;
    double bwl = 0;
    if (jl < j1) {
      if constexpr (F32) {
        bxl = p.bfx[jl];
        byl = p.bfy[jl];
        bzl = p.bfz[jl];
      } else {
        bxl = p.bx[jl];
        byl = p.by[jl];
        bzl = p.bz[jl];
        if (W)
          bwl = p.unit ? 1.0 : p.bw[jl];
      }
    }
    const uint32_t steps = min(32u, j1 - jb);
    for (uint32_t t = 0; t < steps; t++) {
      const T xj = __shfl_sync(FULL, bxl, t);
      const T yj = __shfl_sync(FULL, byl, t);
      const T zj = __shfl_sync(FULL, bzl, t);
      const bool pair = live && (!DIAG || jb + t > i);
      if constexpr (F32) {
        const float dx = xi - xj, dy = yi - yj, dz = zi - zj;
        const float rp2 = fmaf(dy, dy, dx * dx), s2 = fmaf(dz, dz, rp2);
        bool out;
        if constexpr (BIN == BIN_TWO) /* (the cylinder's test only in two-axis kernels) */
          out = p.cyl ? rp2 > p.rp_cut32 || dz * dz > p.pi_cut32 : s2 > p.cut32;
        else
          out = s2 > p.cut32;
        const bool rp = BIN == BIN_TWO && p.ev.axes == HISTD_EV_RP_PI;
        push<F32, METRIC, BIN, W>(p, m, k, q, pair && !out, lane, i, jb + t, 0, 0, 0, 0,
                                  rp ? rp2 : s2, fabsf(dz));
      } else {
        const double wj = W ? __shfl_sync(FULL, bwl, t) : 0.0;
        const double dx = __dsub_rn(xi, xj), dy = __dsub_rn(yi, yj), dz = __dsub_rn(zi, zj);
        const bool hit = pair && !beyond<METRIC, BIN == BIN_TWO>(p, m, dx, dy, dz);
        push<F32, METRIC, BIN, W>(p, m, k, q, hit, lane, i, jb + t, dx, dy, dz,
                                    W ? __dmul_rn(wi, wj) : 0.0, 0.f, 0.f);
      }
    }
  }
}

/* The next neighbour offset: x fastest, then y, then z, each in -K..K. */
__device__ __forceinline__ void step_offset(int &ox, int &oy, int &oz, int K) {
  if (++ox > K) {
    ox = -K;
    if (++oy > K) {
      oy = -K;
      ++oz;
    }
  }
}

template <bool F32, int METRIC, int BIN, bool W, bool CROSS>
__global__ void __launch_bounds__(GRID_MAX_BLOCK,
                                  BIN == BIN_TWO ? GRID_TWO_BLOCKS : F32 ? GRID_ONE_BLOCKS : 1)
    k_grid_pairs(grid_params p, uint32_t k0, uint32_t k1) {
  extern __shared__ double smem[];
  const uint32_t tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, warps = blockDim.x >> 5;
  const uint32_t count = p.count, slots = count + 2;
  const uint32_t per_queue = GRID_QUEUE * (F32 ? 2 : W ? 4 : 3); /* doubles */
  grid_queue q;
  q.qx = smem + (size_t)warp * per_queue;
  q.qy = q.qx + GRID_QUEUE;
  q.qz = q.qy + GRID_QUEUE;
  q.qw = W ? q.qz + GRID_QUEUE : nullptr;
  q.qi = (uint32_t *)q.qx;
  q.qj = q.qi + GRID_QUEUE;
  q.qa = (float *)(q.qj + GRID_QUEUE);
  q.qp = q.qa + GRID_QUEUE;
  q.n = 0;
  q.drains = 0;
  double *next = smem + (size_t)warps * per_queue;
  /* weighted: the warps' partials (warps x slots), then their sums and
   * compensations (warps x slots each): all here (wglobal 0), the sums
   * in the block's rows of wscr (1), or all three there (2) */
  const size_t wn = (size_t)warps * slots;
  double *wbase = nullptr;
  grid_sink k;
  k.part = k.wsum = k.werr = nullptr;
  if (W) {
    const size_t per_block = (p.wglobal == 2 ? 3 : 2) * wn;
    double *rows = p.wglobal ? p.wscr + (size_t)blockIdx.x * per_block : nullptr;
    double *pbase = p.wglobal == 2 ? rows + 2 * wn : next;
    wbase = p.wglobal ? rows : next + wn;
    k.part = pbase + (size_t)warp * slots;
    k.wsum = wbase + (size_t)warp * slots;
    k.werr = wbase + wn + (size_t)warp * slots;
    for (size_t c = tid; c < wn; c += blockDim.x)
      pbase[c] = 0;
    for (size_t c = tid; c < 2 * wn; c += blockDim.x)
      wbase[c] = 0;
    next += p.wglobal == 0 ? 3 * wn : p.wglobal == 1 ? wn : 0;
  }
  k.edges = p.dedges;
  if (p.edges && p.shared_edges) {
    for (uint32_t c = tid; c <= p.count1; c += blockDim.x)
      next[c] = p.dedges[c];
    k.edges = next;
    next += p.count1 + 1;
  }
  k.hist = p.counts;
  if (p.shared_counts) {
    k.hist = (unsigned long long *)next;
    for (uint32_t c = tid; c < slots; c += blockDim.x)
      k.hist[c] = 0;
  }
  __syncthreads();

  histd_metric m = p.metric;
  m.kind = METRIC; /* a constant: histd_min_image's branches fold away */
  unsigned long long cand = 0;
  const uint32_t n0 = p.geom.n[0], n1 = p.geom.n[1], n2 = p.geom.n[2];
  for (;;) {
    uint32_t t = 0;
    if (lane == 0)
      t = k0 + atomicAdd(p.next, 1u);
    t = __shfl_sync(FULL, t, 0);
    if (t >= k1)
      break;
    /* item t: a chunk, and with split, one of its neighbour offsets (its
     * own cell's pairs j > i go with the middle one, (0, 0, 0), or the
     * float64 filter's first neighbour) */
    const uint32_t split = p.split > 1 ? p.split : 1, o = t % split;
    const uint32_t chunk = t / split;
    /* the chunk's cell: the last c with chunk_off[c] <= chunk (it has chunks) */
    uint32_t lo = 0, hi = p.cells; /* chunk_off[lo] <= chunk < chunk_off[hi] */
    while (hi - lo > 1) {
      const uint32_t mid = lo + (hi - lo) / 2;
      if (p.chunk_off[mid] <= chunk)
        lo = mid;
      else
        hi = mid;
    }
    const uint32_t c = lo;
    const uint32_t first = p.start_a[c] + GRID_CHUNK * (chunk - p.chunk_off[c]);
    const uint32_t a_end = p.start_a[c + 1];
    const uint32_t i = first + lane;
    const bool live = i < a_end;
    const double wi = W && live ? (p.unit ? 1.0 : p.aw[i]) : 0;
    if constexpr (F32) {
      /* every neighbour cell by its offset o in {-K..K}^3, K the span
       * (periodic axes have >= 2K + 3 cells, so the wrapped ones are
       * distinct), with the offset's float32 translation delta[o] */
      const float rx = live ? p.afx[i] : 0.f, ry = live ? p.afy[i] : 0.f,
                  rz = live ? p.afz[i] : 0.f;
      const int K = (int)p.geom.span, side = 2 * K + 1;
      const uint32_t offsets = (uint32_t)(side * side * side);
      if (!CROSS && (split == 1 || o == offsets / 2)) /* (0, 0, 0): the middle offset */
        visit<true, METRIC, BIN, W, true>(p, m, k, q, first + 1, a_end, i, live, rx, ry, rz,
                                            wi, lane, cand);
      const int ci = (int)(c % n0), cj = (int)((c / n0) % n1), ck = (int)(c / n0 / n1);
      /* offset (ox, oy, oz) as oo = ((oz + K) side + oy + K) side + ox + K:
       * all of them, or split's one; decoded once, then stepped (divisions
       * in the loop cost G2 2%) */
      const uint32_t o0 = split == 1 ? 0 : o;
      int ox = (int)(o0 % side) - K, oy = (int)(o0 / side % side) - K,
          oz = (int)(o0 / side / side) - K;
      const uint32_t o1 = split == 1 ? offsets : o + 1;
      for (uint32_t oo = o0; oo < o1; oo++, step_offset(ox, oy, oz, K)) {
        int kz = ck + oz, ky = cj + oy, kx = ci + ox;
        if (kz < 0 || kz >= (int)n2 || ky < 0 || ky >= (int)n1 || kx < 0 || kx >= (int)n0) {
          if (!p.geom.periodic)
            continue;
          kz = kz < 0 ? kz + (int)n2 : kz >= (int)n2 ? kz - (int)n2 : kz;
          ky = ky < 0 ? ky + (int)n1 : ky >= (int)n1 ? ky - (int)n1 : ky;
          kx = kx < 0 ? kx + (int)n0 : kx >= (int)n0 ? kx - (int)n0 : kx;
        }
        const uint32_t c2 = (uint32_t)kx + n0 * ((uint32_t)ky + n1 * (uint32_t)kz);
        if (!CROSS && c2 <= c) /* self pairs: the cells after c */
          continue;
        const float *dl = p.delta + 3 * oo;
        visit<true, METRIC, BIN, W, false>(p, m, k, q, p.start_b[c2], p.start_b[c2 + 1], i,
                                             live, rx + dl[0], ry + dl[1], rz + dl[2], wi, lane,
                                             cand);
      }
    } else {
      const double xi = live ? p.ax[i] : 0, yi = live ? p.ay[i] : 0, zi = live ? p.az[i] : 0;
      if (!CROSS && o == 0)
        visit<false, METRIC, BIN, W, true>(p, m, k, q, first + 1, a_end, i, live, xi, yi, zi,
                                             wi, lane, cand);
      uint32_t nbr[27];
      const uint32_t nn = histd__grid_neighbours(&p.geom, c, nbr);
      const uint32_t a_end_n = split == 1 ? nn : (o < nn ? o + 1 : 0);
      for (uint32_t a = split == 1 ? 0 : o; a < a_end_n;) {
        if (!CROSS && nbr[a] <= c) { /* self pairs: the cells after c */
          a++;
          continue;
        }
        uint32_t e = a; /* a run of consecutive cells is one range of points */
        while (split == 1 && e + 1 < nn && nbr[e + 1] == nbr[e] + 1)
          e++;
        visit<false, METRIC, BIN, W, false>(p, m, k, q, p.start_b[nbr[a]],
                                              p.start_b[nbr[e] + 1], i, live, xi, yi, zi, wi,
                                              lane, cand);
        a = e + 1;
      }
    }
  }
  if (q.n > 0)
    drain<F32, METRIC, BIN, W>(p, m, k, q, q.n, lane);
  if (W)
    wsum_warp_fold(k.part, k.wsum, k.werr, slots, lane);
  __syncthreads();
  if (p.shared_counts)
    for (uint32_t c = tid; c < slots; c += blockDim.x)
      if (k.hist[c] != 0)
        atomicAdd(&p.counts[c], k.hist[c]);
  if (W)
    wsum_block_fold(wbase, wbase + wn, warps, slots,
                    p.wsum + (size_t)blockIdx.x * slots, p.werr + (size_t)blockIdx.x * slots);
  for (int o = 16; o > 0; o /= 2)
    cand += __shfl_xor_sync(FULL, cand, o);
  if (lane == 0 && cand != 0 && p.sum == HISTD_SUM_W) /* (other passes meet them again) */
    atomicAdd(p.candidates, cand);
}

typedef void (*grid_fn)(grid_params, uint32_t, uint32_t);

template <bool F32, int METRIC, int BIN, bool W> static grid_fn pick5(bool cross) {
  return cross ? k_grid_pairs<F32, METRIC, BIN, W, true>
               : k_grid_pairs<F32, METRIC, BIN, W, false>;
}

template <bool F32, int METRIC, int BIN> static grid_fn pick4(bool w, bool cross) {
  return w ? pick5<F32, METRIC, BIN, true>(cross) : pick5<F32, METRIC, BIN, false>(cross);
}

template <bool F32, int METRIC> static grid_fn pick3(int bin, bool w, bool cross) {
  return bin == BIN_TWO     ? pick4<F32, METRIC, BIN_TWO>(w, cross)
         : bin == BIN_EDGES ? pick4<F32, METRIC, BIN_EDGES>(w, cross)
                            : pick4<F32, METRIC, BIN_WIDTH>(w, cross);
}

template <bool F32> static grid_fn pick2(int metric, int bin, bool w, bool c) {
  switch (metric) {
  case 1:
    return pick3<F32, 1>(bin, w, c);
  case 2:
    return pick3<F32, 2>(bin, w, c);
  default:
    return pick3<F32, 0>(bin, w, c);
  }
}

static grid_fn pick(const grid_params *p) {
  const int bin = p->two ? BIN_TWO : p->edges ? BIN_EDGES : BIN_WIDTH;
  const bool w = p->weighted != 0, c = p->cross != 0;
  return p->filter32 ? pick2<true>(p->metric.kind, bin, w, c)
                     : pick2<false>(p->metric.kind, bin, w, c);
}

extern "C" size_t grid_smem_bytes(const grid_params *p) {
  const size_t warps = p->block / 32, slots = (size_t)p->count + 2;
  size_t bytes = warps * GRID_QUEUE * (p->filter32 ? 2 : p->weighted ? 4 : 3) * sizeof(double);
  if (p->weighted)
    bytes += (p->wglobal == 0 ? 3 : p->wglobal == 1 ? 1 : 0) * warps * slots * sizeof(double);
  if (p->edges && p->shared_edges)
    bytes += ((size_t)p->count1 + 1) * sizeof(double);
  if (p->shared_counts)
    bytes += slots * sizeof(unsigned long long);
  return bytes;
}

extern "C" int grid_blocks_per_sm(const grid_params *p, int *blocks, char *msg, size_t msglen) {
  return kernel_blocks_per_sm(pick(p), p->block, p->smem, blocks, msg, msglen);
}

extern "C" int grid_pairs_launch(const grid_params *p, uint32_t k0, uint32_t k1, uint32_t grid,
                                 cudaStream_t s, char *msg, size_t msglen) {
  grid_fn f = pick(p);
  cudaError_t e = kernel_smem_prepare(f, p->smem);
  if (e != cudaSuccess)
    return sdh_cuda_fail(msg, msglen, "the kernel's shared-memory setting", e);
  f<<<grid, p->block, p->smem, s>>>(*p, k0, k1);
  e = cudaGetLastError();
  return e == cudaSuccess ? 0 : sdh_cuda_fail(msg, msglen, "the grid pair launch", e);
}
