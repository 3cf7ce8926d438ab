/*
 * tc_kernels.cuh -- "tensor-core": the squared distances of a tile of
 * pairs from one matrix product on the tensor cores (3xTF32), each turned
 * into a float32 code whose band says whether the pair may lie on a bucket
 * edge; edge pairs are redone in binary64, so the counts are the
 * contract's (tc_plan.h has the arithmetic and the bound). Included by
 * tc_kernels.cu (the engine's launcher) and bench/tc_probe.cu (which adds
 * its probe variants: the tensor cores' error, the loop without atomics);
 * the tiles' build is tc_kernels.cu's.
 *
 * A block of 256 threads (8 warps) anchors a tile of 256 points and meets
 * partner tiles J >= I. Blocks take chunks of TC_CHUNK tile pairs (row-major)
 * from a counter, so a row of costly (wide) tile pairs is shared out, and
 * plan the chunk's tile pairs at once, a thread each (tc_unit_plan: C, G,
 * or wide; planned by thread 0 before each tile pair, the binary64 plan and
 * two more barriers cost W2 4%). Per tile pair the block stages the
 * partners' fragments (16 floats a point, laid out so that a
 * quad's LDS.128 is conflict-free); each warp holds its 32 anchors' A
 * fragments (2 m16 tiles, k = 16; the bias C rides as the 17th product,
 * anchor slot 12 = 1, partner slot 12 = C) and walks the 32 groups of 8
 * partners, TC_UNROLL a loop turn: 4 mma.m16n8k8 give 8 sums a lane, each
 * becomes a code (rsqrtf, one FFMA.RD) counted in the lane's own column of
 * the block's shared histogram.
 *
 * The histogram (SUB: the job's k >= 16, every job with fewer than ~128
 * rows). A code's bits 16 and up are its row and its top k - 16 fraction
 * bits: a "sub-row". The histogram has 2^(k-16) sub-rows a row, of 64
 * words (256 bytes; the lanes use the first 32), so a counter's address is
 * one PRMT of the code and the lane off a uniform base; the block's end
 * adds a row's sub-rows. Otherwise (k < 16) rows of 32 words, the row
 * from a shift.
 *
 * The edge test: the smallest fraction of the 8 codes (SUB: of their low
 * 16 bits, two codes an instruction, VIMNMX3.U16x2) decides whether the
 * group may have edge pairs. A flagged group's edge pairs have their
 * float32 count taken back and are queued for the binary64 redo: either
 * found in the warp and queued pair by pair (GQ false), or the group queued
 * whole, its 8 codes, and found by the block's drain (GQ: 2-4% faster
 * where edge pairs are rare; where they are many either queue may
 * overflow and be the slower by far: tc_engine.c tries both on each job).
 * Tile pairs on the diagonal or the last, partial tile mask their pairs;
 * wide tile pairs are counted in binary64 by the block.
 */
#ifndef HISTD_TC_KERNELS_CUH
#define HISTD_TC_KERNELS_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "sdh_pair.cuh"
#include "tc_gpu.h"

#define TC_QBYTES 16384u                /* a block's queue of edge work: */
#define TC_QCAP (TC_QBYTES / 8)         /* pairs (anchor, partner), or */
#define TC_GQCAP (TC_QBYTES / 48 & ~7u) /* groups of 8 (codes; anchor, partner, band) */
#define TC_NT TC_TILE                   /* threads a block = points a tile */
#ifndef TC_UNROLL
#define TC_UNROLL 4 /* groups a loop turn: measured best (RESULTS.md) */
#endif
#ifndef TC_MINB
#define TC_MINB 4 /* blocks a multiprocessor: 64 registers */
#endif

namespace tc {

constexpr uint32_t NT = TC_NT;
constexpr int kUnroll = TC_UNROLL;

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
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(c0), "f"(c1),
                 "f"(c2), "f"(c3));
}

__device__ __forceinline__ uint32_t pair64(const tc_params &p, uint32_t i, uint32_t j) {
  return bucket64(p.x[i], p.y[i], p.z[i], p.x[j], p.y[j], p.z[j], p.width, p.rowcap);
}

__device__ __forceinline__ float4 loc(const tc_params &p, uint32_t i) {
  return reinterpret_cast<const float4 *>(p.loc)[i];
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

/* The histogram's slots: a code's (its sub-row, SUB, or its row) and a
 * row's (its first sub-row); a slot is 1 << RSH bytes, the lanes' columns
 * in its first 128. */
template <bool SUB> struct hist_layout {
  static constexpr uint32_t RS = SUB ? 64 : 32; /* words a slot */
  static constexpr int RSH = SUB ? 8 : 7;
  __device__ static uint32_t of_code(const tc_params &p, uint32_t cc) {
    return SUB ? cc >> 16 : cc >> p.job.k;
  }
  __device__ static uint32_t of_row(const tc_params &p, uint32_t r) { return SUB ? r << p.sub : r; }
  __device__ static uint32_t per_row(const tc_params &p) { return SUB ? 1u << p.sub : 1u; }
};

/* One count at byte address a (shared), or `v` (a take-back: ~0). */
__device__ __forceinline__ void count_at(uint32_t a, uint32_t v = 1) {
  asm volatile("red.shared.add.u32 [%0], %1;" ::"r"(a), "r"(v));
}

/* Is a code an edge pair's (exact mode)? Not a masked pair (~0), its
 * fraction within the band, and not row 0 (whose only near edge is 0). */
__device__ __forceinline__ bool edge(const tc_job &jb, uint32_t cc, uint32_t thresh) {
  return cc != 0xffffffffu && (cc & jb.mask) < thresh && (cc >> jb.k) != jb.rowbase;
}

/* Pair k of a lane's group of 8: its anchor (its partner: the group's
 * first + (k & 1)). */
__device__ __forceinline__ uint32_t group_ai(uint32_t row0, uint32_t k) {
  return row0 + (k >> 2) * 16 + ((k & 3) >> 1) * 8;
}

/* A pair the full pair queue cannot take: the contract, to the global
 * counts (rare; out of line, so that the hot loop keeps its registers). */
static __device__ __noinline__ void far_pair(const tc_params &p, uint32_t ai, uint32_t bj) {
  atomicAdd(&p.counts[pair64(p, ai, bj)], 1ull);
  atomicAdd(&p.stats[TC_REFINED], 1ull);
}

/* A queued group's pair (ai, bj) with code cc and band thresh: if it is an
 * edge pair, its float32 count taken back and the contract's counted in
 * the column at hb; returns 1 if so. */
template <bool SUB>
__device__ __forceinline__ uint32_t edge_redo(const tc_params &p, uint32_t cc, uint32_t ai,
                                              uint32_t bj, uint32_t thresh, uint32_t hb) {
  typedef hist_layout<SUB> H;
  if (!edge(p.job, cc, thresh))
    return 0;
  count_at(hb + (H::of_code(p, cc) << H::RSH), 0xffffffffu);
  count_at(hb + (H::of_row(p, p.job.rowbase + pair64(p, ai, bj)) << H::RSH));
  return 1;
}

/* A flagged group the full group queue cannot take (out of line). */
template <bool SUB>
__device__ __noinline__ void far_group(const tc_params &p, uint4 c0, uint4 c1, uint4 at,
                                       uint32_t hb) {
  const uint32_t c[8] = {c0.x, c0.y, c0.z, c0.w, c1.x, c1.y, c1.z, c1.w};
  uint32_t refined = 0;
  for (uint32_t k = 0; k < 8; k++)
    refined += edge_redo<SUB>(p, c[k], group_ai(at.x, k), at.y + (k & 1), at.z, hb);
  if (refined)
    atomicAdd(&p.stats[TC_REFINED], (unsigned long long)refined);
}

/* The queue's work (every thread of the block calls it): the queued pairs,
 * or (GQ) the queued groups' edge pairs; returns the thread's refined pairs. */
template <bool GQ, bool SUB>
__device__ __forceinline__ uint32_t drain(const tc_params &p, const uint2 *q, const uint4 (*gqc)[2],
                                          const uint4 *gqa, uint32_t n, uint32_t hb) {
  typedef hist_layout<SUB> H;
  uint32_t refined = 0;
  if (GQ) { /* a thread a pair of the queued groups */
    for (uint32_t e = threadIdx.x; e < 8 * n; e += NT) {
      const uint32_t gi = e >> 3, k = e & 7;
      const uint4 cv = gqc[gi][k >> 2], at = gqa[gi];
      const uint32_t cc = (k & 3) == 0 ? cv.x : (k & 3) == 1 ? cv.y : (k & 3) == 2 ? cv.z : cv.w;
      refined += edge_redo<SUB>(p, cc, group_ai(at.x, k), at.y + (k & 1), at.z, hb);
    }
  } else {
    for (uint32_t e = threadIdx.x; e < n; e += NT, refined++)
      count_at(hb + (H::of_row(p, p.job.rowbase + pair64(p, q[e].x, q[e].y)) << H::RSH));
  }
  return refined;
}

/* One tile pair's 32 groups of 8 partners for one warp (MASKED: the diagonal
 * or the last tile, whose pairs are masked; NOATOM: no histogram, a probe of
 * the loop's cost without its atomics; PROBE: the tensor cores' error on
 * every pair). hb0: the block's (uniform) histogram base, hb = hb0 + lane * 4. */
template <bool EXACT, bool PROBE, bool MASKED, bool NOATOM, bool SUB, bool GQ>
__device__ __forceinline__ void groups(const tc_params &p, const float4 (*bf)[4], uint2 *q,
                                       uint4 (*gqc)[2], uint4 *gqa, uint32_t &qn,
                                       const uint32_t (&A1)[2][4], const uint32_t (&A2)[2][4],
                                       uint32_t hb, uint32_t hb0, float magic, uint32_t thresh,
                                       uint32_t I, uint32_t J, uint32_t &flagged, uint32_t &sink) {
  typedef hist_layout<SUB> H;
  const tc_job &jb = p.job;
  const uint32_t tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
  const uint32_t row0 = I * NT + warp * 32 + g, col0 = J * NT + 2 * t;
  const uint32_t lane4 = lane * 4;
  const float4 *bp = &bf[g][t];
#pragma unroll kUnroll
  for (uint32_t nb = 0; nb < NT / 8; nb++) {
    const float4 bv = bp[nb * 32];
    const uint32_t b0 = __float_as_uint(bv.x), b1 = __float_as_uint(bv.y),
                   b2 = __float_as_uint(bv.z), b3 = __float_as_uint(bv.w);
    /* SUB: the high half of m starts, and so stays, 0 (below) */
    uint32_t c[8], m = SUB ? 0xffffu : 0xffffffffu;
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
          /* SUB: bytes 2, 3 of the code are its sub-row; one PRMT makes
           * sub-row * 256 + lane * 4, and hb0 + that is the lane's counter */
          if (NOATOM)
            sink += cc;
          else if (SUB)
            count_at(hb0 + __byte_perm(cc, lane4, 0x7324));
          else
            count_at(hb + (H::of_code(p, cc) << H::RSH));
          if (EXACT && !SUB)
            m = min(m, cc & jb.mask);
        }
        if (PROBE && ok) {
          /* the exact sum of the 16 products and C, from the same operands */
          uint32_t jl = nb * 8 + 2 * t + (k & 1);
          float4 la = loc(p, ai);
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
          atomicMax(&p.stats[TC_ERR], (unsigned long long)__double_as_longlong(ratio));
          atomicAdd(&p.stats[TC_ERR_PAIRS], 1ull);
        }
      }
      if (EXACT && SUB) { /* low halves: the fraction's low 16 bits (k >= 16); the
                           * high halves' minimum is 0, so m is the low one's */
        m = __vimin3_u16x2(m, c[r * 4], c[r * 4 + 1]);
        m = __vimin3_u16x2(m, c[r * 4 + 2], c[r * 4 + 3]);
      }
    }
    /* SUB: a pair whose fraction is < thresh has its low 16 bits < thresh
     * (k >= 16); the converse can fail for k > 16, and such a group only
     * takes the path below, which tests each pair in full */
    if (EXACT && m < thresh) {
      flagged++;
      if (GQ) {
        /* the group to the block's queue whole: its 8 codes, its pairs'
         * first anchor and partner, the band; the drain finds its edge pairs */
        const uint4 c0 = make_uint4(c[0], c[1], c[2], c[3]),
                    c1 = make_uint4(c[4], c[5], c[6], c[7]),
                    at = make_uint4(row0, col0 + nb * 8, thresh, 0);
        const uint32_t slot = atomicAdd(&qn, 1u);
        if (slot < TC_GQCAP) {
          gqc[slot][0] = c0;
          gqc[slot][1] = c1;
          gqa[slot] = at;
        } else {
          far_group<SUB>(p, c0, c1, at, hb);
        }
      } else {
        uint32_t e = 0; /* the group's edge pairs: counts taken back, queued below */
#pragma unroll
        for (int k = 0; k < 8; k++) {
          const uint32_t cc = c[k];
          if (edge(jb, cc, thresh)) {
            count_at(hb + (H::of_code(p, cc) << H::RSH), 0xffffffffu);
            e |= 1u << k;
          }
        }
        if (e) {
          uint32_t slot = atomicAdd(&qn, (uint32_t)__popc(e));
          for (; e; e &= e - 1, slot++) {
            const uint32_t k = __ffs(e) - 1, ai = group_ai(row0, k), bj = col0 + nb * 8 + (k & 1);
            if (slot < TC_QCAP)
              q[slot] = make_uint2(ai, bj);
            else
              far_pair(p, ai, bj);
          }
        }
      }
    }
  }
}

/* The kernel: tile pairs [u0, u1), chunks of TC_CHUNK from stats[TC_NEXT]. */
template <bool EXACT, bool PROBE, bool NOATOM, bool SUB, bool GQ>
__global__ void __launch_bounds__(NT, TC_MINB)
    k_tc(const __grid_constant__ tc_params p, uint64_t u0, uint64_t u1) {
  typedef hist_layout<SUB> H;
  __shared__ float4 bf[NT][4]; /* partner j's 16 slots: bf[j][t] holds t, t+4, t+8, t+12 */
  __shared__ __align__(16) unsigned char qmem[TC_QBYTES]; /* the queue: pairs, or (GQ) groups */
  uint2 *q = (uint2 *)qmem;
  uint4(*gqc)[2] = (uint4(*)[2])qmem, *gqa = (uint4 *)(qmem + TC_GQCAP * 32);
  __shared__ uint32_t qn;
  /* the chunk's plans: frame shift and bias, magic, band (~0: wide) */
  __shared__ float4 s_plan[TC_CHUNK];
  __shared__ float s_magic[TC_CHUNK];
  __shared__ uint32_t s_thresh[TC_CHUNK];
  __shared__ unsigned long long s_u;
  extern __shared__ uint32_t hist[]; /* rows x per_row slots of RS words, lanes in the first 32 */
  const tc_job &jb = p.job;
  const uint32_t tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
  const uint32_t slots = jb.rows * H::per_row(p);
  for (uint32_t k = tid; k < slots * H::RS; k += NT)
    hist[k] = 0;
  if (tid == 0)
    qn = 0;
  const uint32_t hb0 = (uint32_t)__cvta_generic_to_shared(hist) -
                       H::of_row(p, jb.rowbase) * H::RS * 4,
                 hb = hb0 + lane * 4;
  uint32_t I = 0, J = 0, curI = 0xffffffffu, flagged = 0, wide = 0, sink = 0, refined = 0;
  uint32_t A1[2][4], A2[2][4];
  uint64_t u = 0, uend = 0, uc = 0;
  for (;;) {
    if (u == uend) {
      /* the next chunk of tile pairs, its plans made by a thread each (the
       * last tile pair's barrier ordered every read of s_u and the plans) */
      if (tid == 0)
        s_u = u0 + atomicAdd(&p.stats[TC_NEXT], (unsigned long long)TC_CHUNK);
      __syncthreads();
      u = s_u;
      if (u >= u1)
        break;
      uc = u;
      uend = u + TC_CHUNK < u1 ? u + TC_CHUNK : u1;
      if (tid < uend - u) {
        uint32_t pi, pj;
        float dl[3];
        decode_pair(u + tid, p.tiles, &pi, &pj);
        const double D = tc_unit_gap(p.cen, pi, pj, p.inv_w, dl);
        const tc_unit un = tc_unit_plan(&jb, D, p.rad[pi], p.rad[pj]);
        s_plan[tid] = make_float4(dl[0], dl[1], dl[2], un.bias);
        s_magic[tid] = (float)(ldexp(1.0, 23 - (int)jb.k) + un.g * ldexp(1.0, -(int)jb.k));
        s_thresh[tid] = !un.tc ? 0xffffffffu : EXACT ? 2 * un.g + 1 : 0; /* ~0: wide */
      }
      decode_pair(u, p.tiles, &I, &J);
      __syncthreads();
    }
    if (I != curI) {
      curI = I;
#pragma unroll
      for (int r = 0; r < 2; r++) {
        uint32_t sa[4], sb[4], ra = I * NT + warp * 32 + r * 16 + g;
        arow(loc(p, ra), t, sa);
        arow(loc(p, ra + 8), t, sb);
        uint32_t x1[4] = {sa[0], sb[0], sa[1], sb[1]}, x2[4] = {sa[2], sb[2], sa[3], sb[3]};
        for (int k = 0; k < 4; k++) {
          A1[r][k] = x1[k];
          A2[r][k] = x2[k];
        }
      }
    }
    /* (the last tile pair's closing barrier: its readers of bf are done) */
    const uint32_t c = (uint32_t)(u - uc), thresh = s_thresh[c];
    const bool masked = I == J || I + 1 == p.tiles || J + 1 == p.tiles;
    if (thresh == 0xffffffffu) {
      /* wide: the contract, pair by pair */
      wide++;
      uint32_t i = I * NT + tid;
      for (uint32_t c = 0; c < NT && i < p.n; c++) {
        uint32_t j = J * NT + c;
        if (j < p.n && (I != J || j > i))
          count_at(hb + (H::of_row(p, jb.rowbase + pair64(p, i, j)) << H::RSH));
      }
    } else {
      {
        float4 o[4];
        const float4 pl = s_plan[c];
        const float d[3] = {pl.x, pl.y, pl.z};
        bcol(loc(p, J * NT + tid), d, pl.w, o);
#pragma unroll
        for (int k = 0; k < 4; k++)
          bf[tid][k] = o[k];
      }
      __syncthreads();
      const float magic = s_magic[c];
      if (masked)
        groups<EXACT, PROBE, true, NOATOM, SUB, GQ>(p, bf, q, gqc, gqa, qn, A1, A2, hb, hb0, magic,
                                                    thresh, I, J, flagged, sink);
      else
        groups<EXACT, PROBE, false, NOATOM, SUB, GQ>(p, bf, q, gqc, gqa, qn, A1, A2, hb, hb0, magic,
                                                     thresh, I, J, flagged, sink);
    }
    __syncthreads();
    const uint32_t nq = qn, cap = GQ ? TC_GQCAP : TC_QCAP;
    if (EXACT && nq >= cap / 2) {
      refined += drain<GQ, SUB>(p, q, gqc, gqa, nq < cap ? nq : cap, hb);
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
  if (EXACT) {
    const uint32_t cap = GQ ? TC_GQCAP : TC_QCAP;
    refined += drain<GQ, SUB>(p, q, gqc, gqa, qn < cap ? qn : cap, hb);
  }
  if (refined)
    atomicAdd(&p.stats[TC_REFINED], (unsigned long long)refined);
  __syncthreads();
  /* a row: its sub-rows' 32 columns (each a count in [-2^31, 2^31):
   * TC_LAUNCH_MAX), added in 64 bits */
  const uint32_t per = H::per_row(p);
  for (uint32_t r = tid; r < jb.rows; r += NT) {
    long long sum = 0;
    for (uint32_t s = 0; s < per; s++)
      for (uint32_t c = 0; c < 32; c++)
        sum += (int32_t)hist[(r * per + s) * H::RS + ((c + r) & 31)];
    if (sum)
      atomicAdd(&p.counts[r], (unsigned long long)sum);
  }
  if (flagged)
    atomicAdd(&p.stats[TC_FLAGGED], (unsigned long long)flagged);
  if (wide && tid == 0)
    atomicAdd(&p.stats[TC_WIDE], (unsigned long long)wide);
  if (NOATOM && sink == 0x9e3779b9u) /* keeps the loop's codes alive */
    atomicAdd(&p.stats[TC_WIDE], 1ull);
}

} // namespace tc

#endif
