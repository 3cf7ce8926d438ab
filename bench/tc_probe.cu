/*
 * tc_probe.cu -- the float32 pair on the tensor cores (kernels/tc_plan.h),
 * run on a GPU beside the engine's kernels: does the hardware stay inside
 * the bound's model, are the counts the contract's, and how fast is it?
 *
 *   tc_probe [--quick] [--plan] [--only SET]
 *
 * --plan (no GPU needed): the host's side alone for each set -- the tiles'
 * build time, their radii, the mean band (2G + 1) / 2^k and the share of
 * wide tile pairs over a sample of tile pairs.
 *
 * For each set (W1, W2 of the design, and sets whose distances fall on
 * edges, clumps, a far outlier, many rows) it
 *   - builds the Morton tiles and frames on the GPU (tiles_on_device:
 *     tc_tiles_build's arithmetic; the median of 3 builds is "build ms"),
 *   - runs the tensor-core kernel below, exact (and once "fast", no edge
 *     test, and "no atomics", fast without the counts: the loop's ceilings),
 *     timed with events around its launches (the tiles on the GPU, as the
 *     engine's kernel_ms),
 *   - runs the engine's tiled-privatized-f64 (the contract in binary64) and
 *     "auto" on the same set on the same GPU, compares every bucket with
 *     both, and reports the tensor-core time against auto's (medians),
 *   - measures the tensor cores' error on every pair of some tile pairs:
 *     |S - (exact sum of the 17 products)| against the model's
 *     2^-18 of the operands' magnitudes (tc_plan.h), largest ratio seen.
 * The last lines are a table. Not yet part of the engine (bench/RESULTS.md,
 * 2026-11-27: each step of the kernel below measured).
 *
 * The kernel: a block of 256 threads (8 warps) anchors a tile of 256 points
 * and meets partner tiles J >= I. Blocks take chunks of CHUNK tile pairs
 * (row-major) from a counter, so a row of costly (wide) tile pairs is
 * shared out. Per tile pair, thread 0 plans it (tc_unit_plan: C, G, or
 * wide); the block stages the partners' fragments (16 floats a point, laid
 * out so that a quad's LDS.128 is conflict-free); each warp holds its 32
 * anchors' A fragments (2 m16 tiles, k = 16; the bias C rides as the 17th
 * product, anchor slot 12 = 1, partner slot 12 = C) and walks the 32
 * groups of 8 partners, two a loop turn: 4 mma.m16n8k8 give 8 sums a lane,
 * each becomes a code (rsqrtf, one FFMA.RD) counted in the lane's own
 * column of the shared histogram (k = 16: the counter's address is one
 * PRMT of the code and the lane, off a uniform base: rows of 256 bytes);
 * the smallest fraction of the 8 (k >= 16: of their low 16 bits, two codes
 * an instruction) decides whether the group has edge pairs, whose counts
 * are taken back and queued for the binary64 redo (sdh_kernels.cu's
 * scheme). Tile pairs on the diagonal or the last, partial tile mask their
 * pairs; wide tile pairs are counted in binary64 by the block.
 * HISTD_TC_K16=0 keeps the 128-byte rows at k = 16 (for comparison).
 * HISTD_TC_GQ=1 queues a flagged group whole (its 8 codes, 48 bytes) and
 * leaves finding its edge pairs to the block's drain, instead of testing
 * them in the warp's divergent path: 4% faster at W2, but 2-5x slower where
 * edge pairs are many (the lattices: the group queue overflows every tile
 * pair and the rest go pair by pair in the lane), so not the default.
 */
#include <cub/cub.cuh>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "histd/histd.h"
#include "morton.h"
#include "sdh_pair.cuh"
#include "tc_plan.h"

#define QBYTES 16384u            /* a block's queue of edge work: */
#define QCAP (QBYTES / 8)        /* pairs (anchor, partner), or */
#define GQCAP (QBYTES / 48 & ~7u) /* flagged groups of 8 pairs (codes; anchor, partner, band) */
#define CHUNK 16u /* tile pairs a block takes at a time */
#define NT TC_TILE /* threads a block = points a tile */
#define EPS_R 0x1p-22 /* rsqrtf: the CUDA Guide's 2 ulp */

#define CK(x)                                                                                  \
  do {                                                                                         \
    cudaError_t e_ = (x);                                                                      \
    if (e_ != cudaSuccess) {                                                                   \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));      \
      exit(1);                                                                                 \
    }                                                                                          \
  } while (0)

struct Params {
  tc_job job;
  uint32_t n, tiles, rowcap;
  double width, inv_w;
  const float4 *loc;
  const double *cen, *x, *y, *z; /* centres (3 a tile); the sorted points */
  const float *rad;
  unsigned long long *counts, *refined, *flagged, *wide;
  unsigned long long *next; /* the next unit to hand out, from the launch's u0 */
  unsigned long long *err; /* probe: [0] largest |S - exact| / magnitudes (bits), [1] pairs */
};

__device__ __forceinline__ uint32_t tf32(float x) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}

__device__ __forceinline__ void mma8(float d[4], const uint32_t a[4], uint32_t b0, uint32_t b1,
                                     float c0, float c1, float c2, float c3) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, "
               "{%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
               : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(c0),
                 "f"(c1), "f"(c2), "f"(c3));
}

__device__ __forceinline__ uint32_t bucket64(const Params &p, uint32_t i, uint32_t j) {
  return bucket64(p.x[i], p.y[i], p.z[i], p.x[j], p.y[j], p.z[j], p.width, p.rowcap);
}

/* An anchor row's 4 slots for quad position t (tc_plan.h's table). */
__device__ __forceinline__ void arow(float4 l, uint32_t t, uint32_t s[4]) {
  if (t < 3) {
    float v = t == 0 ? l.x : (t == 1 ? l.y : l.z);
    uint32_t h = tf32(v);
    s[0] = h;
    s[1] = tf32(v - __uint_as_float(h));
    s[2] = h;
    s[3] = t == 0 ? __float_as_uint(1.f) : 0; /* slot 12: 1 x the bias */
  } else {
    double qa = (double)l.x * l.x + (double)l.y * l.y + (double)l.z * l.z;
    uint32_t h = tf32((float)qa);
    s[0] = h;
    s[1] = tf32((float)(qa - (double)__uint_as_float(h)));
    s[2] = s[3] = __float_as_uint(1.f);
  }
}

/* A partner column's 16 slots, slot-major: out[t] holds slots t, t+4, t+8, t+12. */
__device__ __forceinline__ void bcol(float4 l, const float d[3], float bias, float4 out[4]) {
  float X = __fadd_rn(l.x, d[0]), Y = __fadd_rn(l.y, d[1]), Z = __fadd_rn(l.z, d[2]);
  float v[3] = {-2.f * X, -2.f * Y, -2.f * Z};
#pragma unroll
  for (int a = 0; a < 3; a++) {
    float h = __uint_as_float(tf32(v[a]));
    out[a] = make_float4(h, h, __uint_as_float(tf32(v[a] - h)), 0.f);
  }
  out[0].w = bias; /* slot 12 (tc_unit_plan made it a tf32 value) */
  float q = __fmaf_rn(X, X, __fmaf_rn(Y, Y, __fmul_rn(Z, Z)));
  float h = __uint_as_float(tf32(q));
  out[3] = make_float4(1.f, 1.f, h, __uint_as_float(tf32(q - h)));
}

/* One count in the lane's column: rows of 32 words (rsh 7) or, K16, of 64
 * words of which the lanes use 32 (rsh 8, below). */
__device__ __forceinline__ void count(uint32_t hb, uint32_t row, int rsh = 7) {
  asm volatile("red.shared.add.u32 [%0], 1;" ::"r"(hb + (row << rsh)));
}

#ifndef TC_UNROLL
#define TC_UNROLL 4 /* groups a loop turn: measured best (RESULTS.md) */
#endif
constexpr int kUnroll = TC_UNROLL;

/* Is a code an edge pair's (exact mode)? Not a masked pair (~0), its
 * fraction within the band, and not row 0 (whose only near edge is 0). */
__device__ __forceinline__ bool tc_edge(const tc_job &jb, uint32_t cc, uint32_t thresh) {
  return cc != 0xffffffffu && (cc & jb.mask) < thresh && (cc >> jb.k) != jb.rowbase;
}

/* Pair k of a lane's group of 8: its anchor and partner. */
__device__ __forceinline__ uint32_t group_ai(uint32_t row0, uint32_t k) {
  return row0 + (k >> 2) * 16 + ((k & 3) >> 1) * 8;
}

/* A pair the full pair queue cannot take: the contract, to the global
 * counts (rare; out of line, so that the hot loop keeps its registers). */
__device__ __noinline__ void far_pair(const Params &p, uint32_t ai, uint32_t bj) {
  atomicAdd(&p.counts[bucket64(p, ai, bj)], 1ull);
  atomicAdd(p.refined, 1ull);
}

/* A flagged group the full group queue cannot take: its edge pairs' counts
 * taken back, the contract's counted in the lane's column (out of line). */
__device__ __noinline__ void far_group(const Params &p, uint4 c0, uint4 c1, uint4 at,
                                       uint32_t hb, int rsh) {
  const uint32_t c[8] = {c0.x, c0.y, c0.z, c0.w, c1.x, c1.y, c1.z, c1.w};
  uint32_t refined = 0;
  for (uint32_t k = 0; k < 8; k++)
    if (tc_edge(p.job, c[k], at.z)) {
      asm volatile("red.shared.add.u32 [%0], %1;" ::"r"(hb + ((c[k] >> p.job.k) << rsh)),
                   "r"(0xffffffffu));
      count(hb, p.job.rowbase + bucket64(p, group_ai(at.x, k), at.y + (k & 1)), rsh);
      refined++;
    }
  if (refined)
    atomicAdd(p.refined, (unsigned long long)refined);
}

/* The queued groups' edge pairs (every thread of the block calls it): the
 * float32 count taken back, the contract's counted; returns the thread's
 * refined pairs. */
__device__ __forceinline__ uint32_t gq_drain(const Params &p, const uint4 (*gqc)[2],
                                             const uint4 *gqa, uint32_t n, uint32_t hb, int rsh) {
  uint32_t refined = 0;
  for (uint32_t e = threadIdx.x; e < 8 * n; e += NT) {
    const uint32_t gi = e >> 3, k = e & 7;
    const uint4 cv = gqc[gi][k >> 2], at = gqa[gi];
    const uint32_t cc = (k & 3) == 0 ? cv.x : (k & 3) == 1 ? cv.y : (k & 3) == 2 ? cv.z : cv.w;
    if (tc_edge(p.job, cc, at.z)) {
      asm volatile("red.shared.add.u32 [%0], %1;" ::"r"(hb + ((cc >> p.job.k) << rsh)),
                   "r"(0xffffffffu));
      count(hb, p.job.rowbase + bucket64(p, group_ai(at.x, k), at.y + (k & 1)), rsh);
      refined++;
    }
  }
  return refined;
}

/* The queue's work (every thread of the block calls it): the thread's refined pairs. */
template <bool GQ>
__device__ __forceinline__ uint32_t drain(const Params &p, const uint2 *q, const uint4 (*gqc)[2],
                                          const uint4 *gqa, uint32_t n, uint32_t hb, int rsh) {
  if (GQ)
    return gq_drain(p, gqc, gqa, n, hb, rsh);
  uint32_t refined = 0;
  for (uint32_t e = threadIdx.x; e < n; e += NT, refined++)
    count(hb, p.job.rowbase + bucket64(p, q[e].x, q[e].y), rsh);
  return refined;
}

/* One tile pair's 32 groups of 8 partners for one warp (MASKED: the diagonal
 * or the last tile, whose pairs are masked; NOATOM: no histogram, a probe of
 * the loop's cost without its atomics; GQ: a flagged group is queued whole,
 * else its edge pairs are found here and queued). */
template <bool EXACT, bool PROBE, bool MASKED, bool NOATOM, bool P16, bool K16, bool GQ>
__device__ __forceinline__ void tc_groups(const Params &p, const float4 (*bf)[4], uint2 *q,
                                          uint4 (*gqc)[2], uint4 *gqa, uint32_t &qn,
                                          const uint32_t (&A1)[2][4],
                                          const uint32_t (&A2)[2][4], uint32_t hb, uint32_t hb0,
                                          float magic, uint32_t thresh, uint32_t I, uint32_t J,
                                          uint32_t &flagged, uint32_t &sink) {
  const tc_job &jb = p.job;
  const uint32_t tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
  const uint32_t row0 = I * NT + warp * 32 + g, col0 = J * NT + 2 * t;
  const uint32_t lane4 = lane * 4; /* hb0: the block's (uniform) base, hb = hb0 + lane4 */
  const float4 *bp = &bf[g][t];
#pragma unroll kUnroll
  for (uint32_t nb = 0; nb < NT / 8; nb++) {
    const float4 bv = bp[nb * 32];
    const uint32_t b0 = __float_as_uint(bv.x), b1 = __float_as_uint(bv.y),
                   b2 = __float_as_uint(bv.z), b3 = __float_as_uint(bv.w);
    uint32_t c[8], m = 0xffffffffu;
#pragma unroll
    for (int r = 0; r < 2; r++) {
      float d[4];
      mma8(d, A1[r], b0, b1, 0.f, 0.f, 0.f, 0.f);
      mma8(d, A2[r], b2, b3, d[0], d[1], d[2], d[3]);
#pragma unroll
      for (int k = 0; k < 4; k++) {
        const uint32_t cc = __float_as_uint(__fmaf_rd(d[k], rsqrtf(d[k]), magic));
        const uint32_t ai = row0 + r * 16 + (k >> 1) * 8, bj = col0 + nb * 8 + (k & 1);
        const bool ok = !MASKED || (ai < p.n && bj < p.n && (I != J || bj > ai));
        c[r * 4 + k] = ok ? cc : 0xffffffffu; /* a masked pair is no edge */
        if (ok) {
          /* K16 (k = 16): bytes 2, 3 of the code are its row; one PRMT makes
           * row * 256 + lane * 4, and hb0 + that is the lane's counter */
          if (NOATOM)
            sink += cc;
          else if (K16)
            asm volatile("red.shared.add.u32 [%0], 1;" ::"r"(hb0 + __byte_perm(cc, lane4, 0x7324)));
          else
            count(hb, cc >> jb.k);
          if (EXACT && !P16)
            m = min(m, cc & jb.mask);
        }
        if (PROBE && ok) {
          /* the exact sum of the 16 products and C, from the same operands */
          uint32_t jl = nb * 8 + 2 * t + (k & 1);
          float4 la = p.loc[ai];
          double ex = 0, mag = 0;
          for (uint32_t tt = 0; tt < 4; tt++) {
            uint32_t s4[4];
            arow(la, tt, s4);
            float4 bb = bf[jl][tt];
            float bq[4] = {bb.x, bb.y, bb.z, bb.w};
            for (int j = 0; j < 4; j++) {
              double pr = (double)__uint_as_float(s4[j]) * (double)bq[j];
              ex += pr;
              mag += fabs(pr);
            }
          }
          double ratio = fabs((double)d[k] - ex) / mag;
          atomicMax(&p.err[0], (unsigned long long)__double_as_longlong(ratio));
          atomicAdd(&p.err[1], 1ull);
        }
      }
      if (EXACT && P16) { /* low halves: the fraction's low 16 bits (k >= 16) */
        m = __vimin3_u16x2(m, c[r * 4], c[r * 4 + 1]);
        m = __vimin3_u16x2(m, c[r * 4 + 2], c[r * 4 + 3]);
      }
    }
    /* P16: a pair whose fraction is < thresh has its low 16 bits < thresh
     * (k >= 16); the converse can fail for k > 16, and such a group only
     * takes the path below, which tests each pair in full */
    if (EXACT && GQ && (P16 ? m & 0xffffu : m) < thresh) {
      /* the group goes to the block's queue whole: its 8 codes, its pairs'
       * first anchor and partner, the band; the drain finds its edge pairs */
      flagged++;
      const uint4 c0 = make_uint4(c[0], c[1], c[2], c[3]), c1 = make_uint4(c[4], c[5], c[6], c[7]),
                  at = make_uint4(row0, col0 + nb * 8, thresh, 0);
      const uint32_t slot = atomicAdd(&qn, 1u);
      if (slot < GQCAP) {
        gqc[slot][0] = c0;
        gqc[slot][1] = c1;
        gqa[slot] = at;
      } else {
        far_group(p, c0, c1, at, hb, K16 ? 8 : 7);
      }
    } else if (EXACT && !GQ && (P16 ? m & 0xffffu : m) < thresh) {
      flagged++;
      uint32_t e = 0; /* the group's edge pairs: counts taken back, queued below */
#pragma unroll
      for (int k = 0; k < 8; k++) {
        const uint32_t cc = c[k];
        if (tc_edge(jb, cc, thresh)) {
          asm volatile("red.shared.add.u32 [%0], %1;" ::"r"(hb + ((cc >> jb.k) << (K16 ? 8 : 7))),
                       "r"(0xffffffffu));
          e |= 1u << k;
        }
      }
      if (e) {
        uint32_t slot = atomicAdd(&qn, (uint32_t)__popc(e));
        for (; e; e &= e - 1, slot++) {
          const uint32_t k = __ffs(e) - 1, ai = group_ai(row0, k), bj = col0 + nb * 8 + (k & 1);
          if (slot < QCAP)
            q[slot] = make_uint2(ai, bj);
          else
            far_pair(p, ai, bj);
        }
      }
    }
  }
}

#ifndef TC_MINB
#define TC_MINB 4 /* blocks a multiprocessor: 64 registers */
#endif
template <bool EXACT, bool PROBE, bool NOATOM = false, bool P16 = false, bool K16 = false,
          bool GQ = false>
__global__ void __launch_bounds__(NT, TC_MINB) k_tc(const __grid_constant__ Params p, uint64_t u0,
                                              uint64_t u1) {
  __shared__ float4 bf[NT][4]; /* partner j's 16 slots: bf[j][t] holds t, t+4, t+8, t+12 */
  __shared__ __align__(16) unsigned char qmem[QBYTES]; /* the queue: pairs, or (GQ) groups */
  uint2 *q = (uint2 *)qmem;
  uint4(*gqc)[2] = (uint4(*)[2])qmem, *gqa = (uint4 *)(qmem + GQCAP * 32);
  __shared__ uint32_t qn, s_tc, s_thresh;
  __shared__ float s_magic, s_bias, s_d[3];
  extern __shared__ uint32_t hist[]; /* rows x RS words, lanes in the first 32 */
  constexpr uint32_t RS = K16 ? 64 : 32;
  constexpr int RSH = K16 ? 8 : 7;
  const tc_job &jb = p.job;
  const uint32_t tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
  for (uint32_t k = tid; k < jb.rows * RS; k += NT)
    hist[k] = 0;
  if (tid == 0)
    qn = 0;
  const uint32_t hb0 = (uint32_t)__cvta_generic_to_shared(hist) - jb.rowbase * RS * 4,
                 hb = hb0 + lane * 4;
  __shared__ unsigned long long s_u;
  uint32_t I = 0, J = 0, curI = 0xffffffffu, flagged = 0, wide = 0, sink = 0, refined = 0;
  uint32_t A1[2][4], A2[2][4];
  uint64_t u = 0, uend = 0;
  for (;;) {
    if (u == uend) { /* the next chunk of tile pairs (the body's barriers order s_u) */
      if (tid == 0)
        s_u = u0 + atomicAdd(p.next, (unsigned long long)CHUNK);
      __syncthreads();
      u = s_u;
      if (u >= u1)
        break;
      uend = u + CHUNK < u1 ? u + CHUNK : u1;
      decode_pair(u, p.tiles, &I, &J);
    }
    if (I != curI) {
      curI = I;
#pragma unroll
      for (int r = 0; r < 2; r++) {
        uint32_t sa[4], sb[4], ra = I * NT + warp * 32 + r * 16 + g;
        arow(p.loc[ra], t, sa);
        arow(p.loc[ra + 8], t, sb);
        uint32_t x1[4] = {sa[0], sb[0], sa[1], sb[1]}, x2[4] = {sa[2], sb[2], sa[3], sb[3]};
        for (int k = 0; k < 4; k++) {
          A1[r][k] = x1[k];
          A2[r][k] = x2[k];
        }
      }
    }
    __syncthreads(); /* the last tile pair's readers of bf and s_* are done */
    if (tid == 0) {
      float dl[3];
      double D = tc_unit_gap(p.cen, I, J, p.inv_w, dl);
      for (int a = 0; a < 3; a++)
        s_d[a] = dl[a];
      tc_unit un = tc_unit_plan(&jb, D, p.rad[I], p.rad[J]);
      s_tc = un.tc;
      s_bias = un.bias;
      s_magic = (float)(ldexp(1.0, 23 - (int)jb.k) + un.g * ldexp(1.0, -(int)jb.k));
      s_thresh = EXACT ? 2 * un.g + 1 : 0;
    }
    __syncthreads();
    const bool masked = I == J || I + 1 == p.tiles || J + 1 == p.tiles;
    if (!s_tc) {
      /* wide: the contract, pair by pair */
      wide++;
      uint32_t i = I * NT + tid;
      for (uint32_t c = 0; c < NT && i < p.n; c++) {
        uint32_t j = J * NT + c;
        if (j < p.n && (I != J || j > i))
          count(hb, jb.rowbase + bucket64(p, i, j), RSH);
      }
    } else {
      {
        float4 o[4];
        float d[3] = {s_d[0], s_d[1], s_d[2]};
        bcol(p.loc[J * NT + tid], d, s_bias, o);
#pragma unroll
        for (int k = 0; k < 4; k++)
          bf[tid][k] = o[k];
      }
      __syncthreads();
      if (masked)
        tc_groups<EXACT, PROBE, true, NOATOM, P16, K16, GQ>(p, bf, q, gqc, gqa, qn, A1, A2, hb,
                                                            hb0, s_magic, s_thresh, I, J,
                                                            flagged, sink);
      else
        tc_groups<EXACT, PROBE, false, NOATOM, P16, K16, GQ>(p, bf, q, gqc, gqa, qn, A1, A2, hb,
                                                             hb0, s_magic, s_thresh, I, J,
                                                             flagged, sink);
    }
    __syncthreads();
    const uint32_t nq = qn, cap = GQ ? GQCAP : QCAP;
    if (EXACT && nq >= cap / 2) {
      refined += drain<GQ>(p, q, gqc, gqa, nq < cap ? nq : cap, hb, RSH);
      __syncthreads();
      if (tid == 0)
        qn = 0;
    }
    u++;
    if (++J == p.tiles) {
      I++;
      J = I;
    }
  }
  __syncthreads();
  if (EXACT)
    refined += drain<GQ>(p, q, gqc, gqa, qn < (GQ ? GQCAP : QCAP) ? qn : (GQ ? GQCAP : QCAP), hb,
                         RSH);
  if (refined)
    atomicAdd(p.refined, (unsigned long long)refined);
  __syncthreads();
  for (uint32_t r = tid; r < jb.rows; r += NT) {
    uint32_t sum = 0;
    for (uint32_t c = 0; c < 32; c++)
      sum += hist[r * RS + ((c + r) & 31)];
    if (sum)
      atomicAdd(&p.counts[r], (unsigned long long)sum);
  }
  if (flagged)
    atomicAdd(p.flagged, (unsigned long long)flagged);
  if (wide && tid == 0)
    atomicAdd(p.wide, (unsigned long long)wide);
  if (NOATOM && sink == 0x9e3779b9u) /* keeps the loop's codes alive */
    atomicAdd(p.wide, 1ull);
}

/* ---- the tiles, built on the GPU -------------------------------------------
 * tc_tiles_build's arithmetic (tc_plan.h) on the device: the Morton codes
 * of morton.h (histd__morton_key, the host's own), CUB's radix sort, the
 * points gathered in that order, then a block a tile for its centre, frame
 * and radius (rounded up). Any order is exact (each tile's radius is its own
 * points'); Morton order keeps the radii small. */

__global__ void k_morton(const double *x, const double *y, const double *z, uint32_t n,
                         double lx, double ly, double lz, double scale,
                         unsigned long long *key, uint32_t *idx) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  const double lo[3] = {lx, ly, lz};
  if (i < n) {
    key[i] = histd__morton_key(x[i], y[i], z[i], lo, scale);
    idx[i] = i;
  }
}

__global__ void k_gather(const double *x, const double *y, const double *z, const uint32_t *idx,
                         uint32_t n, double *xs) {
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

__global__ void __launch_bounds__(NT) k_tiles(const double *xs, uint32_t n, double iw,
                                              float4 *loc, double *cen, float *rad) {
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
  loc[i] = make_float4(f[0], f[1], f[2], 0.f);
  double m2 = R(tmp).Reduce(e2, MaxOp());
  if (threadIdx.x == 0)
    rad[I] = __double2float_ru(__dmul_rn(sqrt(m2), 1 + 0x1p-20));
}

/* The device tiles of n points (device x, y, z; the set's box from ds):
 * dxs (3n, sorted), dloc (tiles x NT), dcen, drad, all allocated here. */
static void tiles_on_device(const histd_dataset *ds, const double *dx, double w, double **dxs,
                            float4 **dloc, double **dcen, float **drad) {
  const uint32_t n = (uint32_t)ds->n, T = (n + NT - 1) / NT;
  const double scale = histd__morton_scale(ds);
  unsigned long long *key[2];
  uint32_t *idx[2];
  CK(cudaMalloc(&key[0], 2 * (size_t)n * sizeof(unsigned long long)));
  CK(cudaMalloc(&idx[0], 2 * (size_t)n * sizeof(uint32_t)));
  key[1] = key[0] + n;
  idx[1] = idx[0] + n;
  CK(cudaMalloc(dxs, 3 * (size_t)n * sizeof(double)));
  CK(cudaMalloc(dloc, (size_t)T * NT * sizeof(float4)));
  CK(cudaMalloc(dcen, 3 * (size_t)T * sizeof(double)));
  CK(cudaMalloc(drad, (size_t)T * sizeof(float)));
  const uint32_t gb = (n + 255) / 256;
  k_morton<<<gb, 256>>>(dx, dx + n, dx + 2 * (size_t)n, n, ds->min[0], ds->min[1], ds->min[2],
                        scale, key[0], idx[0]);
  cub::DoubleBuffer<unsigned long long> kb(key[0], key[1]);
  cub::DoubleBuffer<uint32_t> vb(idx[0], idx[1]);
  size_t tb = 0;
  CK(cub::DeviceRadixSort::SortPairs(nullptr, tb, kb, vb, (int)n, 0, 63));
  void *tmp;
  CK(cudaMalloc(&tmp, tb ? tb : 1));
  CK(cub::DeviceRadixSort::SortPairs(tmp, tb, kb, vb, (int)n, 0, 63));
  k_gather<<<gb, 256>>>(dx, dx + n, dx + 2 * (size_t)n, vb.Current(), n, *dxs);
  k_tiles<<<T, NT>>>(*dxs, n, 1.0 / w, *dloc, *dcen, *drad);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  cudaFree(tmp);
  cudaFree(key[0]);
  cudaFree(idx[0]);
}

/* ---- the host side ---------------------------------------------------------- */

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

typedef struct row {
  char name[32];
  uint32_t n;
  double w, build_ms, tc_ms, fast_ms, noatom_ms, auto_ms, refined, flagged, wide, err;
  char auto_kernel[48];
  bool same_f64, same_auto;
} row;

static histd_worker *WK;

/* kernel ms of one engine run (counts kept in *keep) */
static double engine_run(const histd_dataset *ds, double w, uint32_t buckets, const char *k,
                         histd_result *keep) {
  histd_problem pr;
  memset(&pr, 0, sizeof pr);
  pr.a = ds;
  pr.bins.kind = HISTD_BINS_WIDTH;
  pr.bins.count = buckets;
  pr.bins.width = w;
  histd_exec ex;
  histd_exec_init(&ex);
  snprintf(ex.kernel, sizeof ex.kernel, "%s", k);
  ex.devices = 1;
  char msg[512];
  if (histd_worker_run(WK, &pr, &ex, NULL, keep, msg, sizeof msg) != 0) {
    printf("  %s: %s\n", k, msg);
    return -1;
  }
  return keep->timing.kernel_ms;
}

/* The host's side of a set: tiles, radii, bands, wide tile pairs (every
 * 7th row of tile pairs, every 5th pair in it). */
static void plan_stats(const char *name, const histd_dataset *ds, double w) {
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  tc_tiles t;
  if (tc_tiles_build(ds, w, &t) != 0)
    return;
  clock_gettime(CLOCK_MONOTONIC, &b);
  tc_job jb = tc_job_plan(histd_dataset_diagonal(ds) / w, EPS_R, 1);
  double rsum = 0, rmax = 0, band = 0;
  uint64_t met = 0, wide = 0;
  for (uint32_t I = 0; I < t.tiles; I++) {
    rsum += t.rad[I];
    rmax = t.rad[I] > rmax ? t.rad[I] : rmax;
  }
  for (uint32_t I = 0; jb.ok && I < t.tiles; I += 7)
    for (uint32_t J = I; J < t.tiles; J += 5) {
      float dl[3];
      tc_unit u = tc_unit_plan(&jb, tc_unit_gap(t.cen, I, J, 1.0 / w, dl), t.rad[I], t.rad[J]);
      met++;
      if (u.tc)
        band += (2.0 * u.g + 1) / ldexp(1.0, (int)jb.k);
      else
        wide++;
    }
  printf("%-12s n=%-8zu w=%-5g plan: tiles %u built in %.3f s on the host, radius mean %.2f "
         "max %.2f buckets, k %u, rows %u; over %llu tile pairs: mean band %.2e of a bucket, "
         "wide %.4f\n",
         name, ds->n, w, t.tiles,
         (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9,
         rsum / (t.tiles ? t.tiles : 1), rmax, jb.k, jb.rows, (unsigned long long)met,
         band / (double)(met > wide ? met - wide : 1), (double)wide / (double)(met ? met : 1));
  fflush(stdout);
  tc_tiles_free(&t);
}

static row run_set(const char *name, histd_dataset *ds, double w, int reps) {
  row R;
  memset(&R, 0, sizeof R);
  snprintf(R.name, sizeof R.name, "%s", name);
  R.n = (uint32_t)ds->n;
  R.w = w;
  Params p;
  memset(&p, 0, sizeof p);
  p.job = tc_job_plan(histd_dataset_diagonal(ds) / w, EPS_R, 1);
  if (!p.job.ok) {
    printf("%s: the plan declined\n", name);
    return R;
  }
  struct {
    uint32_t n, tiles;
  } t = {(uint32_t)ds->n, (uint32_t)((ds->n + NT - 1) / NT)};
  /* the tiles on the GPU from the points on the GPU (the engine keeps a
   * set's binary64 points there): the median of 3 builds, allocations in */
  double *din;
  CK(cudaMalloc(&din, 3 * (size_t)t.n * sizeof(double)));
  CK(cudaMemcpy(din, ds->x, t.n * sizeof(double), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(din + t.n, ds->y, t.n * sizeof(double), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(din + 2 * (size_t)t.n, ds->z, t.n * sizeof(double), cudaMemcpyHostToDevice));
  float4 *dloc = NULL;
  double *dcen = NULL, *dxyz = NULL;
  float *drad = NULL;
  double bms[3];
  for (int b = 0; b < 3; b++) {
    if (b > 0) {
      cudaFree(dxyz);
      cudaFree(dloc);
      cudaFree(dcen);
      cudaFree(drad);
    }
    struct timespec ta, tb;
    clock_gettime(CLOCK_MONOTONIC, &ta);
    tiles_on_device(ds, din, w, &dxyz, &dloc, &dcen, &drad);
    clock_gettime(CLOCK_MONOTONIC, &tb);
    bms[b] = (double)(tb.tv_sec - ta.tv_sec) * 1e3 + (double)(tb.tv_nsec - ta.tv_nsec) * 1e-6;
  }
  qsort(bms, 3, sizeof bms[0], cmp_d);
  R.build_ms = bms[1];
  cudaFree(din);
  const uint32_t rows = p.job.rows;
  p.n = t.n;
  p.tiles = t.tiles;
  p.rowcap = rows - 1;
  p.width = w;
  p.inv_w = 1.0 / w;
  unsigned long long *dc, *dst;
  CK(cudaMalloc(&dc, rows * sizeof(unsigned long long)));
  CK(cudaMalloc(&dst, 7 * sizeof(unsigned long long)));
  p.loc = dloc;
  p.cen = dcen;
  p.rad = drad;
  p.x = dxyz;
  p.y = dxyz + t.n;
  p.z = dxyz + 2 * (size_t)t.n;
  p.counts = dc;
  p.refined = dst;
  p.flagged = dst + 1;
  p.wide = dst + 2;
  p.err = dst + 3;
  p.next = dst + 6;
  /* the exact kernel's edge test in 16-bit halves where the fraction has 16
   * bits or more; at k = 16 (HISTD_TC_K16=0 says no) the counters' address
   * from one PRMT, rows of 256 bytes (the probe variant keeps 128) */
  const bool k16 = p.job.k == 16 && !(getenv("HISTD_TC_K16") && atoi(getenv("HISTD_TC_K16")) == 0);
  /* HISTD_TC_GQ=1: flagged groups queued whole (RESULTS.md) */
  const bool gq = getenv("HISTD_TC_GQ") && atoi(getenv("HISTD_TC_GQ")) == 1;
  void (*kern[4])(Params, uint64_t, uint64_t) = {
      k16 ? (gq ? k_tc<true, false, false, true, true, true> : k_tc<true, false, false, true, true>)
      : p.job.k >= 16
          ? (gq ? k_tc<true, false, false, true, false, true> : k_tc<true, false, false, true>)
          : (gq ? k_tc<true, false, false, false, false, true> : k_tc<true, false>),
      k16 ? k_tc<false, false, false, false, true> : k_tc<false, false>, k_tc<true, true>,
      k16 ? k_tc<false, false, true, false, true> : k_tc<false, false, true>};
  size_t smemv[4];
  for (int k = 0; k < 4; k++) {
    smemv[k] = (size_t)rows * (k16 && k != 2 ? 256 : 128);
    CK(cudaFuncSetAttribute(kern[k], cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smemv[k]));
  }
  int per = 0, sms = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, kern[0], NT, smemv[0]));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const uint32_t grid = (uint32_t)(per * sms);
  const uint64_t U = (uint64_t)t.tiles * (t.tiles + 1) / 2;
  const uint64_t step = (uint64_t)grid * 30000; /* 32-bit shared counters */
  /* one launch over tile pairs [a, b): the chunk counter from 0 */
  auto launch = [&](void (*k)(Params, uint64_t, uint64_t), size_t sm, uint64_t a, uint64_t b) {
    CK(cudaMemsetAsync(p.next, 0, sizeof *p.next));
    k<<<grid, NT, sm>>>(p, a, b);
  };
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  unsigned long long st[6];
  double pairs = (double)t.n * (t.n - 1) / 2;
  double ms[16];
  for (int variant = 0; variant < 3; variant++) {
    int nrep = variant == 0 ? reps : 1;
    int kv = variant == 2 ? 3 : variant;
    for (int rep = 0; rep < nrep; rep++) {
      CK(cudaMemset(dc, 0, rows * sizeof(unsigned long long)));
      CK(cudaMemset(dst, 0, 6 * sizeof(unsigned long long)));
      CK(cudaEventRecord(e0));
      for (uint64_t a = 0; a < U; a += step)
        launch(kern[kv], smemv[kv], a, a + step < U ? a + step : U);
      CK(cudaGetLastError());
      CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1));
      float f;
      CK(cudaEventElapsedTime(&f, e0, e1));
      ms[rep] = f;
    }
    qsort(ms, (size_t)nrep, sizeof ms[0], cmp_d);
    if (variant == 0) {
      R.tc_ms = ms[nrep / 2];
      CK(cudaMemcpy(st, dst, sizeof st, cudaMemcpyDeviceToHost));
      R.refined = st[0] / pairs;
      R.flagged = st[1] / (pairs / 8.0);
      R.wide = (double)st[2] / (double)U;
    } else if (variant == 1) {
      R.fast_ms = ms[0];
    } else {
      R.noatom_ms = ms[0];
    }
  }
  /* the counts of the last exact run: rerun exact once more for them */
  CK(cudaMemset(dc, 0, rows * sizeof(unsigned long long)));
  for (uint64_t a = 0; a < U; a += step)
    launch(kern[0], smemv[0], a, a + step < U ? a + step : U);
  CK(cudaGetLastError());
  unsigned long long *hc = (unsigned long long *)calloc(rows, sizeof *hc);
  CK(cudaMemcpy(hc, dc, rows * sizeof *hc, cudaMemcpyDeviceToHost));
  /* the probe: every pair of the first and the last 2,000 tile pairs */
  CK(cudaMemset(dst, 0, 6 * sizeof(unsigned long long)));
  uint64_t Up = U < 2000 ? U : 2000;
  launch(kern[2], smemv[2], 0, Up);
  launch(kern[2], smemv[2], U - Up, U);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  CK(cudaMemcpy(st, dst, sizeof st, cudaMemcpyDeviceToHost));
  memcpy(&R.err, &st[3], sizeof R.err);
  /* the engine: binary64 and auto on the same set, every bucket compared */
  histd_result r64, ra;
  uint32_t buckets = rows - 1; /* rows past the last bucket are overflow */
  bool got64 = engine_run(ds, w, buckets, "tiled-privatized-f64", &r64) >= 0;
  double am[16];
  int an = 0;
  bool gota = true;
  for (int rep = 0; rep < reps && gota; rep++) {
    if (rep > 0)
      histd_result_free(&ra);
    am[an] = engine_run(ds, w, buckets, "auto", &ra);
    gota = am[an++] >= 0;
  }
  if (gota) {
    qsort(am, (size_t)an, sizeof am[0], cmp_d);
    R.auto_ms = am[an / 2];
    snprintf(R.auto_kernel, sizeof R.auto_kernel, "%s/%u", ra.kernel, ra.block_size);
  }
  R.same_f64 = got64;
  R.same_auto = gota;
  for (uint32_t b = 0; b < rows; b++) {
    unsigned long long want64 = got64 ? (b < buckets ? r64.counts[b] : r64.overflow) : 0;
    unsigned long long wanta = gota ? (b < buckets ? ra.counts[b] : ra.overflow) : 0;
    if (got64 && hc[b] != want64)
      R.same_f64 = false;
    if (gota && hc[b] != wanta)
      R.same_auto = false;
  }
  printf("%-12s n=%-8u w=%-5g tiles=%u rows=%u k=%u grid=%u (%d/SM): tiles built on the GPU in "
         "%.2f ms; tc %.2f ms (%.3e pairs/s), "
         "fast %.2f ms, no atomics %.2f ms, auto %s %.2f ms: %.2fx; refined %.2e, flagged "
         "groups of 8 pairs %.2e, wide tile pairs %.4f, tensor-core error %.3g of the "
         "magnitudes (model 2^-18 = %.3g); counts %s binary64, %s auto\n",
         name, t.n, w, t.tiles, rows, p.job.k, grid, per, R.build_ms, R.tc_ms,
         pairs / R.tc_ms * 1e3, R.fast_ms, R.noatom_ms, R.auto_kernel, R.auto_ms,
         R.auto_ms / R.tc_ms, R.refined, R.flagged, R.wide, R.err, 0x1p-18,
         R.same_f64 ? "identical to" : "DIFFER from", R.same_auto ? "identical to" : "DIFFER from");
  fflush(stdout);
  if (got64)
    histd_result_free(&r64);
  if (gota)
    histd_result_free(&ra);
  free(hc);
  cudaFree(dloc);
  cudaFree(dcen);
  cudaFree(drad);
  cudaFree(dxyz);
  cudaFree(dc);
  cudaFree(dst);
  return R;
}

static uint64_t S = 88172645463325252ull;
static double rnd(void) {
  S ^= S >> 12;
  S ^= S << 25;
  S ^= S >> 27;
  return (double)((S * 2685821657736338717ull) >> 11) * 0x1p-53;
}

static void fill(histd_dataset *ds, size_t n, int kind) {
  histd_dataset_alloc(ds, n, NULL, 0);
  for (size_t i = 0; i < n; i++) {
    double p[3];
    if (kind == 1) { /* an integer lattice far from the origin */
      size_t m = (size_t)ceil(cbrt((double)n));
      p[0] = 1e5 + (double)(i % m);
      p[1] = -3e4 + (double)(i / m % m);
      p[2] = 7 + (double)(i / m / m);
    } else if (kind == 2) { /* 100 clumps */
      size_t c = i % 100;
      for (int a = 0; a < 3; a++) {
        double centre = 23000 * (double)((c * (a + 7) * 37) % 100) / 100.0;
        p[a] = centre + 500 * (rnd() + rnd() + rnd() - 1.5);
      }
    } else {
      for (int a = 0; a < 3; a++)
        p[a] = 23000 * rnd();
    }
    ds->x[i] = p[0];
    ds->y[i] = p[1];
    ds->z[i] = p[2];
  }
  if (kind == 3) /* uniform with one point far out: its tile is wide */
    ds->x[12345 % n] = 1e6;
  histd_dataset_finish(ds, NULL, 0);
}

int main(int argc, char **argv) {
  bool quick = false, plan = false;
  const char *only = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
      only = argv[++i];
    quick |= strcmp(argv[i], "--quick") == 0;
    plan |= strcmp(argv[i], "--plan") == 0;
  }
  histd_device_info dev[16];
  int count = 0;
  char msg[512] = "";
  if (!plan)
    histd_devices(dev, 16, &count, msg, sizeof msg);
  if (!plan && count == 0) {
    printf("tc_probe: %s\n", msg);
    return 77;
  }
  if (!plan)
    printf("tc_probe on %s (cc %d.%d, %d SMs)\n", dev[0].name, dev[0].cc_major, dev[0].cc_minor,
         dev[0].multiprocessors);
  if (!plan && histd_worker_create(&WK, dev[0].index, msg, sizeof msg) != 0) {
    printf("tc_probe: %s\n", msg);
    return 1;
  }
  const struct {
    const char *name;
    size_t n;
    double w;
    int kind, reps;
  } sets[] = {
      {"lattice w=1", 64000, 1, 1, 1},  {"lattice w=3", 216000, 3, 1, 1},
      {"clumps", 400000, 200, 2, 1},    {"outlier", 300000, 1000, 3, 1},
      {"W4", 100000, 500, 0, 5},        {"W1", 512000, 500, 0, 5},
      {"W2", 2000000, 500, 0, 3},       {"W2 w=100", 2000000, 100, 0, 3},
      {"clumps 2M", 2000000, 500, 2, 3},
  };
  row R[16];
  int nr = 0;
  for (size_t s = 0; s < sizeof sets / sizeof sets[0]; s++) {
    if ((quick && sets[s].n > 600000) || (only && strcmp(only, sets[s].name) != 0))
      continue;
    histd_dataset ds;
    fill(&ds, sets[s].n, sets[s].kind);
    plan_stats(sets[s].name, &ds, sets[s].w);
    if (!plan)
      R[nr++] = run_set(sets[s].name, &ds, sets[s].w, sets[s].reps);
    histd_dataset_free(&ds);
  }
  if (plan)
    return 0;
  printf("\n== summary: %s ==\n", dev[0].name);
  printf("%-12s %9s %6s %8s %10s %11s %10s %10s %10s %7s %7s %9s %9s %8s %8s %s\n", "set", "n",
         "w", "build ms", "tc ms", "tc pairs/s", "fast ms", "noatom ms", "auto ms", "ratio",
         "w/build", "refined", "tc err", "wide", "counts", "auto ran");
  for (int i = 0; i < nr; i++) {
    double pairs = (double)R[i].n * (R[i].n - 1) / 2;
    printf("%-12s %9u %6g %8.2f %10.2f %11.3e %10.2f %10.2f %10.2f %6.2fx %6.2fx %9.2e %9.2e "
           "%8.4f %8s %s\n",
           R[i].name, R[i].n, R[i].w, R[i].build_ms, R[i].tc_ms, pairs / R[i].tc_ms * 1e3,
           R[i].fast_ms, R[i].noatom_ms, R[i].auto_ms, R[i].auto_ms / R[i].tc_ms,
           R[i].auto_ms / (R[i].tc_ms + R[i].build_ms), R[i].refined, R[i].err, R[i].wide,
           R[i].same_f64 && R[i].same_auto ? "same" : "DIFFER", R[i].auto_kernel);
  }
  histd_worker_destroy(WK);
  return 0;
}
