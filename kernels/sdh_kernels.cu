/*
 * sdh_kernels.cu -- the device code of every GPU kernel, and C-callable
 * launchers (extern "C", declared in sdh_gpu.h).
 *
 * Three precisions share each kernel's traversal:
 *
 *   SDH_MODE_F64    the contract itself, per pair, with __dsub_rn/__dmul_rn/
 *                   __dadd_rn/__dsqrt_rn/__ddiv_rn (no FMA contraction).
 *   SDH_MODE_FAST   float32 on centred, width-scaled points; no checks.
 *   SDH_MODE_EXACT  the float32 pair, plus a test whether the contract's
 *                   value could lie on the other side of a bucket edge; the
 *                   few pairs that could are queued in shared memory and
 *                   redone with the F64 arithmetic (so counts are identical
 *                   to the contract). While such pairs are rare, the tile
 *                   loops go in branch-free groups of 32 pairs: each pair's
 *                   float32 row is counted and its edge test is one bit of
 *                   a mask; a group with bits set takes those counts back
 *                   and queues the pairs (meet_range, edge_group).
 *
 * The float32 pair (6 FP32 ops, one MUFU.RSQ, one FFMA.RD):
 *
 *   dx = xi - xj (RN, likewise dy, dz), on points already centred on the
 *   bounding box's centre c and scaled by 1/w on the device in binary64:
 *   xi~ = f32((x_i - c) * (1/w)).
 *   s  = fma(dz,dz, fma(dy,dy, fma(dx,dx, 2^-100)))   (s > 0 always)
 *   r  = rsqrtf(s)                                      (MUFU.RSQ)
 *   v  = fmaf_rd(s, r, magic), magic = 2^(23-k) + G*2^-k
 *
 *   v lies in [2^(23-k), 2^(24-k)) where the float spacing is 2^-k, so its
 *   23 mantissa bits are F = floor(2^k (q~ + G 2^-k)), q~ = s*r exactly (the
 *   FMA rounds once, downwards): a fixed-point value with k fraction bits.
 *   bits(v) >> k = rowbase + floor(q~ + E'), E' = G 2^-k, and
 *   bits(v) & (2^k-1) are the fraction bits.
 *
 * The error bound (host side computes E, see gpu_engine.c: plan_f32()).
 * Let D be the real distance of the pair divided by w, q_c the contract's
 * value fl(fl(sqrt(fl(s)))/w) before the floor, q~ = s*r as above.
 *   - Coordinates: |xi~ - X_i| <= rho_a = R_a/w (2^-24 + 2^-50) + 2^-140,
 *     X_i = (x_i - c)/w real, R_a the largest |x_i - c| on axis a.
 *   - dx = (X_i - X_j + eps)(1 + eta) + alpha, |eps| <= 2 rho_a, |eta| <=
 *     2^-24 and |alpha| <= 2^-125 for a flushed subnormal (-ftz=true).
 *     So | |d| - D | <= u D + 2.0001 |rho| + 2^-123,  |rho| = norm(rho_a).
 *   - s = (|d|^2 + 2^-100)(1 + t), |t| <= 3u/(1-3u) (three roundings, each
 *     FMA exact before it rounds); sqrt(s) = sqrt(|d|^2+2^-100)(1 + t/2+..)
 *     and sqrt(2^-100) = 2^-50.
 *   - rsqrtf: r = (1 + e) / sqrt(s), |e| <= eps_r, the largest relative
 *     error of the instruction over every positive normal float, measured
 *     on each device when its context starts (k_rsqrt_error: all 2^31 - 2^23
 *     inputs against binary64, plus 2^-50 for the binary64 check's own
 *     rounding). The CUDA Programming Guide promises 2 ulp (eps_r <= 4u);
 *     an H100 measures 1.247e-7 (2.09u; test_gpu prints it), which takes
 *     B70k's band from 7/64 to 5/64 (bench/RESULTS.md, 2026-11-24).
 *   - q~ = s r exactly (the FMA rounds only after adding magic).
 *   - Contract: q_c = D (1 + z), |z| <= 7.1 * 2^-53 < 2^-50 (seven binary64
 *     roundings: subtraction, square, two sums, sqrt, division; and
 *     none before, the contract works on the given coordinates).
 *   Summing with u = 2^-24 and D <= Dmax (the bounding box's diagonal/w):
 *     |q~ - q_c| <= E = c Dmax + 2.1 |rho| + 2^-40,
 *     c = (2.5 u + eps_r)(1 + 2^-16) + 2^-49,
 *   generous in each term: the relative terms multiply to (1 + u)(1 + 1.5u')
 *   (1 + eps_r) - 1 with u' = u / (1 - 3u), whose products of two or more
 *   (< 12 u^2 < 2^-44) the factor 1 + 2^-16 covers many times over, and
 *   2^-49 covers z. (Until 2026-11-24, c = 8u, the Guide's 2 ulp rounded up.)
 *   If no integer m >= 1 lies in [q~ - E, q~ + E], then floor(q_c) =
 *   floor(q~ + E') with E' = G 2^-k >= E. With z = 2^k (q~ + E') and
 *   F = floor(z), an integer m lies in [q~ - E', q~ + E'] only if
 *   m 2^k lies in [F - 2G, F], i.e. only if (F mod 2^k) <= 2G. So a pair is
 *   refined iff (bits(v) & mask) < thresh = 2G + 1 and its row is not 0
 *   (m = 0 is no edge: q_c >= 0 always). k is chosen on the host so that
 *   q~ + E' < 2^(23-k) for every pair (Dmax + 2E + 2 < 2^(23-k)); jobs where
 *   that leaves too coarse a k, or E too large (tiny widths, huge ranges)
 *   run in SDH_MODE_F64 instead, which is the contract itself.
 *
 * 16-bit counters (SDH_SINK_H16), for histograms that 32-bit shared
 * counters cannot hold (B70k: 70,000 buckets): one copy per block, rows 2w
 * and 2w+1 in the low and high halves of word w; rows from hcap on (only
 * overflow: hcap <= buckets) have no counter and are not counted anywhere,
 * and the host sets overflow = n(n-1)/2 - sum(counts). An increment adds
 * 1 or 2^16 to the word (atom.add, which returns the old word). A thread
 * whose increment finds bit 14 or 15 of either half set (a half >= 2^14)
 * later, before the next barrier, clears both halves' bits 14 and 15 with
 * one atom.and and adds what it cleared (old & 0xC000 of each half) to the
 * global counts; any thread may do such a clear, and each set bit is
 * cleared, so moved, exactly once. Invariant: at every barrier each half
 * holds at most 2^14. Proof: take the last clear of the half before the
 * barrier (or the barrier before, where the half held <= 2^14). Every
 * increment after it found bits 14-15 clear, else its thread would have
 * cleared later; so the half was < 2^14 before each of them, and it is
 * <= 2^14 after the last. Between two barriers a block makes at most
 * SDH_H16_EPOCH = 49151 shared increments (the host spaces the barriers:
 * drain_every partners x block threads <= 32768, one shared increment per
 * pair, plus the redo of at most 31 pairs per warp left in its queue from
 * before, <= 992 (edge_groups 2: a warp queue holds < 32 after each group);
 * a drain's adds, <= qcap, lie between barriers of their own; the
 * exact-mode take-back of a provisional count and a refined pair's count
 * when the queue is full go to the global counts instead), so a half
 * never exceeds 2^14 + 49151 < 2^16 and no carry ever reaches its
 * neighbour. The counts are the shared halves at the end plus what was
 * moved plus the global adds (mod 2^64), which is exact. The float32
 * arithmetic, the edge test and the refinement are the same for every sink.
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "count_sink.h" /* opaque */
#include "histd/histd.h"
#include "sdh_gpu.h"
#include "sdh_pair.cuh"

#define TINY 7.8886090522101181e-31f /* 2^-100 */
#define FULL 0xffffffffu

/* ---- the pair arithmetic ------------------------------------------------ */

struct D3 {
  double x, y, z;
};

__device__ __forceinline__ uint32_t code32(const float4 &a, const float4 &b, float magic) {
  float dx = __fsub_rn(a.x, b.x);
  float dy = __fsub_rn(a.y, b.y);
  float dz = __fsub_rn(a.z, b.z);
  float s = __fmaf_rn(dx, dx, TINY);
  s = __fmaf_rn(dy, dy, s);
  s = __fmaf_rn(dz, dz, s);
  float r = rsqrtf(s);
  return __float_as_uint(__fmaf_rd(s, r, magic));
}

/* ---- points ------------------------------------------------------------- */

template <int MODE> struct PT {
  typedef float4 T;
};
template <> struct PT<SDH_MODE_F64> {
  typedef D3 T;
};

template <int MODE>
__device__ __forceinline__ typename PT<MODE>::T load_point(const sdh_params &p, uint32_t i);
template <> __device__ __forceinline__ float4 load_point<SDH_MODE_EXACT>(const sdh_params &p,
                                                                         uint32_t i) {
  return __ldg(&p.p32[i]);
}
template <> __device__ __forceinline__ float4 load_point<SDH_MODE_FAST>(const sdh_params &p,
                                                                        uint32_t i) {
  return __ldg(&p.p32[i]);
}
template <> __device__ __forceinline__ D3 load_point<SDH_MODE_F64>(const sdh_params &p,
                                                                   uint32_t i) {
  D3 d;
  d.x = __ldg(&p.x64[i]);
  d.y = __ldg(&p.y64[i]);
  d.z = __ldg(&p.z64[i]);
  return d;
}

/* ---- sinks -------------------------------------------------------------- */

/* Shared-memory atomic increment at a 32-bit shared address. The base
 * address goes through an opaque move so the compiler keeps it in one
 * register and the address costs one LEA/IMAD per pair. */
__device__ __forceinline__ void red_shared(uint32_t addr) {
  asm volatile("red.shared.add.u32 [%0], 1;" ::"r"(addr));
}
/* The decrement (mod 2^32) that takes back a provisional increment. */
__device__ __forceinline__ void dec_shared(uint32_t addr) {
  asm volatile("red.shared.add.u32 [%0], %1;" ::"r"(addr), "r"(0xffffffffu));
}
/* Shared-memory atomic add and and, returning the old word (H16 sink). */
__device__ __forceinline__ uint32_t atom_add_shared(uint32_t addr, uint32_t v) {
  uint32_t old;
  asm volatile("atom.shared.add.u32 %0, [%1], %2;" : "=r"(old) : "r"(addr), "r"(v));
  return old;
}
__device__ __forceinline__ uint32_t atom_and_shared(uint32_t addr, uint32_t v) {
  uint32_t old;
  asm volatile("atom.shared.and.b32 %0, [%1], %2;" : "=r"(old) : "r"(addr), "r"(v));
  return old;
}
/* The same add where ok != 0; else nothing happens and it returns 0 (a
 * predicated instruction, not a branch). */
__device__ __forceinline__ uint32_t atom_add_shared_if(uint32_t ok, uint32_t addr, uint32_t v) {
  uint32_t old = 0;
  asm volatile("{\n\t.reg .pred q;\n\tsetp.ne.u32 q, %1, 0;\n\t"
               "@q atom.shared.add.u32 %0, [%2], %3;\n\t}"
               : "+r"(old)
               : "r"(ok), "r"(addr), "r"(v));
  return old;
}

/* add_hi(h): h = rowbase + row (the float32 code's high bits); add_row(r). */
template <int SK> struct Sink;

template <> struct Sink<SDH_SINK_GLOBAL> {
  unsigned long long *g;
  __device__ void init(const sdh_params &p, uint32_t *) { g = p.counts - p.rowbase; }
  __device__ __forceinline__ void add_hi(uint32_t h) { atomicAdd(g + h, 1ull); }
  __device__ __forceinline__ void sub_hi(uint32_t h) { atomicAdd(g + h, ~0ull); }
  __device__ __forceinline__ void add_far(uint32_t h) { add_hi(h); }
  __device__ void flush(const sdh_params &, uint32_t *) {}
};

template <> struct Sink<SDH_SINK_GEN> {
  uint32_t hb; /* shared address of this thread's copy, less rowbase rows */
  uint32_t rs; /* row stride in bytes */
  __device__ void init(const sdh_params &p, uint32_t *h) {
    uint32_t words = (p.copies - 1) * p.copy_stride + p.rows * p.row_stride;
    for (uint32_t k = threadIdx.x; k < words; k += blockDim.x)
      h[k] = 0;
    uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    uint32_t copy = p.copy_by_warp ? warp % p.copies : lane % p.copies;
    rs = p.row_stride * 4;
    hb = opaque((uint32_t)__cvta_generic_to_shared(h + copy * p.copy_stride) - p.rowbase * rs);
  }
  __device__ __forceinline__ void add_hi(uint32_t h) { red_shared(hb + h * rs); }
  __device__ __forceinline__ void sub_hi(uint32_t h) { dec_shared(hb + h * rs); }
  __device__ __forceinline__ void add_far(uint32_t h) { add_hi(h); }
  __device__ void flush(const sdh_params &p, uint32_t *h) {
    for (uint32_t r = threadIdx.x; r < p.rows; r += blockDim.x) {
      uint32_t sum = 0; /* per launch and block < 2^32 pairs: exact */
      for (uint32_t c = 0; c < p.copies; c++)
        sum += h[c * p.copy_stride + r * p.row_stride];
      if (sum)
        atomicAdd(&p.counts[r], (unsigned long long)sum);
    }
  }
};

template <> struct Sink<SDH_SINK_LANE> {
  uint32_t hb; /* shared address of this lane's column, less rowbase rows */
  __device__ void init(const sdh_params &p, uint32_t *h) {
    for (uint32_t k = threadIdx.x; k < p.rows * 32; k += blockDim.x)
      h[k] = 0;
    hb = opaque((uint32_t)__cvta_generic_to_shared(h + (threadIdx.x & 31)) - p.rowbase * 128);
  }
  __device__ __forceinline__ void add_hi(uint32_t h) { red_shared(hb + (h << 7)); }
  __device__ __forceinline__ void sub_hi(uint32_t h) { dec_shared(hb + (h << 7)); }
  __device__ __forceinline__ void add_far(uint32_t h) { add_hi(h); }
  __device__ void flush(const sdh_params &p, uint32_t *h) {
    for (uint32_t r = threadIdx.x; r < p.rows; r += blockDim.x) {
      uint32_t sum = 0;
      for (uint32_t c = 0; c < 32; c++)
        sum += h[r * 32 + ((c + r) & 31)];
      if (sum)
        atomicAdd(&p.counts[r], (unsigned long long)sum);
    }
  }
};

/* 16-bit counters, two to a word (see the header comment). add_hi() checks
 * each increment at once; the hot loop's groups use add_code() and OR the
 * old words, then settle() every row of a group whose OR has a high bit. */
#define H16_HIGH 0xC000C000u

template <> struct Sink<SDH_SINK_H16> {
  uint32_t hb;             /* shared address of word 0, less rowbase/2 words */
  uint32_t hcap;           /* rows h < hcap (rowbase + p.hcap) are counted */
  uint32_t ccap;           /* float32 codes c < ccap = hcap << shift are */
  unsigned long long *g;   /* counts - rowbase */
  __device__ void init(const sdh_params &p, uint32_t *h) {
    uint32_t words = (p.hcap + 1) / 2;
    for (uint32_t k = threadIdx.x; k < words; k += blockDim.x)
      h[k] = 0;
    hb = opaque((uint32_t)__cvta_generic_to_shared(h) - (p.rowbase >> 1) * 4); /* rowbase even */
    hcap = p.rowbase + p.hcap;
    /* float32 codes: hcap <= 2^(23-shift) + rowbase rows, so no overflow */
    ccap = hcap << p.shift;
    g = p.counts - p.rowbase;
  }
  /* add_ret of the row of float32 code c (h = c >> shift) where take != 0,
   * without a branch: the word's byte offset (h >> 1) * 4 is
   * (c >> (shift-1)) & ~3, the half is bit `shift` of c (float32 plans
   * have shift >= 6) */
  __device__ __forceinline__ uint32_t add_code(uint32_t c, uint32_t take, const sdh_params &p) {
    uint32_t off = (c >> (p.shift - 1)) & ~3u;
    uint32_t inc = (c >> p.shift) & 1 ? 0x10000u : 1u;
    return atom_add_shared_if(take & (c < ccap), hb + off, inc);
  }
  /* the word before the increment (0 for a row without a counter) */
  __device__ __forceinline__ uint32_t add_ret(uint32_t h) {
    uint32_t old = 0;
    if (h < hcap)
      old = atom_add_shared(hb + (h >> 1) * 4, (h & 1) * 0xffffu + 1u);
    return old;
  }
  /* moves bits 14-15 of both halves of h's word to the global counts */
  __device__ __forceinline__ void settle(uint32_t h) {
    if (h >= hcap)
      return;
    uint32_t old = atom_and_shared(hb + (h >> 1) * 4, ~H16_HIGH);
    uint32_t lo = old & 0xc000u, hi = (old >> 16) & 0xc000u;
    unsigned long long *w = g + (h & ~1u);
    if (lo)
      atomicAdd(w, (unsigned long long)lo);
    if (hi)
      atomicAdd(w + 1, (unsigned long long)hi);
  }
  __device__ __forceinline__ void add_hi(uint32_t h) {
    if (__builtin_expect((add_ret(h) & H16_HIGH) != 0, 0))
      settle(h);
  }
  /* counts that must not use a shared increment (the epoch bound) */
  __device__ __forceinline__ void sub_hi(uint32_t h) {
    if (h < hcap)
      atomicAdd(g + h, ~0ull);
  }
  __device__ __forceinline__ void add_far(uint32_t h) {
    if (h < hcap)
      atomicAdd(g + h, 1ull);
  }
  __device__ void flush(const sdh_params &p, uint32_t *h) {
    uint32_t words = (p.hcap + 1) / 2;
    for (uint32_t k = threadIdx.x; k < words; k += blockDim.x) {
      uint32_t v = h[k];
      if (v & 0xffffu)
        atomicAdd(&p.counts[2 * k], (unsigned long long)(v & 0xffffu));
      if (v >> 16)
        atomicAdd(&p.counts[2 * k + 1], (unsigned long long)(v >> 16));
    }
  }
};

/* ---- per-block state: queue of pairs to refine ------------------------- */

struct Blk {
  uint2 *q;      /* p.qcap entries (exact mode) */
  uint32_t *qn;  /* entries requested (may exceed p.qcap) */
  uint32_t ref;  /* pairs refined so far (thread 0) */
  uint2 *wq;     /* edge_groups 2: this warp's queue, p.wqcap entries */
  uint32_t wn;   /* ... entries in it (the same in every lane) */
  uint32_t wref; /* ... pairs it took (the same in every lane) */
};

__device__ __forceinline__ uint32_t refine_row(const sdh_params &p, uint32_t i, uint32_t j) {
  return bucket64(__ldg(&p.x64[i]), __ldg(&p.y64[i]), __ldg(&p.z64[i]), __ldg(&p.x64[j]),
                  __ldg(&p.y64[j]), __ldg(&p.z64[j]), p.width, p.rowcap);
}

/* The rare path: a pair whose bucket the float32 value cannot decide.
 * (Out of line, as a call, it cost registers and a stack frame: inlined.) */
template <int SK, bool QUEUE>
__device__ __forceinline__ void edge_pair(uint32_t h, uint32_t ai, uint32_t bj, Sink<SK> *sk,
                                       const sdh_params &p, Blk *blk) {
  if (h == p.rowbase) { /* only the edge at 0 is near: bucket 0 */
    sk->add_hi(h);
  } else if (QUEUE) {
    uint32_t slot = atomicAdd(blk->qn, 1u);
    if (slot < p.qcap)
      blk->q[slot] = make_uint2(ai, bj);
    else
      sk->add_hi(p.rowbase + refine_row(p, ai, bj));
  } else {
    sk->add_hi(p.rowbase + refine_row(p, ai, bj));
    atomicAdd(p.refined, 1ull);
  }
}

/* One pair. QUEUE: tile kernels queue edge pairs; others refine inline. */
template <int MODE, int SK, bool QUEUE>
__device__ __forceinline__ void pair(const float4 &a, const float4 &b, uint32_t ai, uint32_t bj,
                                     Sink<SK> &sk, const sdh_params &p, Blk &blk) {
  uint32_t c = code32(a, b, p.magic);
  uint32_t h = c >> p.shift;
  if (MODE == SDH_MODE_EXACT && __builtin_expect((c & p.mask) < p.thresh, 0))
    edge_pair<SK, QUEUE>(h, ai, bj, &sk, p, &blk);
  else
    sk.add_hi(h);
}

template <int MODE, int SK, bool QUEUE>
__device__ __forceinline__ void pair(const D3 &a, const D3 &b, uint32_t, uint32_t, Sink<SK> &sk,
                                     const sdh_params &p, Blk &) {
  sk.add_hi(bucket64(a.x, a.y, a.z, b.x, b.y, b.z, p.width, p.rowcap));
}

/* Redo the queued pairs in float64; every thread of the block calls it. */
template <int MODE, int SK>
__device__ __forceinline__ void drain(Sink<SK> &sk, const sdh_params &p, Blk &blk) {
  if constexpr (MODE != SDH_MODE_EXACT)
    return;
  __syncthreads();
  uint32_t n = *blk.qn;
  if (n != 0) {
    uint32_t m = n < p.qcap ? n : p.qcap;
    for (uint32_t e = threadIdx.x; e < m; e += blockDim.x) {
      uint2 pr = blk.q[e];
      sk.add_hi(p.rowbase + refine_row(p, pr.x, pr.y));
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      blk.ref += n;
      *blk.qn = 0;
    }
    __syncthreads();
  }
}

/* ---- shared-memory layout ----------------------------------------------- */

__host__ __device__ inline size_t tile_bytes(const sdh_params &p) {
  if (p.family == SDH_FAM_NAIVE || p.family == SDH_FAM_SHUFFLE)
    return 0;
  return (size_t)p.block * (p.mode == SDH_MODE_F64 ? sizeof(D3) : sizeof(float4));
}
__host__ __device__ inline size_t queue_bytes(const sdh_params &p) {
  return (p.mode == SDH_MODE_EXACT && p.family != SDH_FAM_NAIVE) ? (size_t)p.qcap * sizeof(uint2)
                                                                   : 0;
}
__host__ __device__ inline size_t wq_bytes(const sdh_params &p) {
  return (p.mode == SDH_MODE_EXACT && p.edge_groups == 2 &&
          (p.family == SDH_FAM_CLASSIC || p.family == SDH_FAM_LINEAR))
             ? (size_t)(p.block / 32) * p.wqcap * sizeof(uint2)
             : 0;
}
__host__ __device__ inline size_t hist_words(const sdh_params &p) {
  if (p.sink == SDH_SINK_GLOBAL)
    return 0;
  if (p.sink == SDH_SINK_LANE)
    return (size_t)p.rows * 32;
  if (p.sink == SDH_SINK_H16)
    return ((size_t)p.hcap + 1) / 2;
  return (size_t)(p.copies - 1) * p.copy_stride + (size_t)p.rows * p.row_stride;
}

extern "C" size_t sdh_smem_bytes(const sdh_params *p) {
  return tile_bytes(*p) + queue_bytes(*p) + wq_bytes(*p) + 4 * hist_words(*p);
}

struct Smem {
  unsigned char *tile;
  Blk blk;
  uint32_t *hist;
};

__device__ __forceinline__ Smem smem_setup(const sdh_params &p) {
  extern __shared__ uint4 smem_u4[];
  __shared__ uint32_t s_qn;
  unsigned char *base = (unsigned char *)smem_u4;
  Smem s;
  s.tile = base;
  s.blk.q = (uint2 *)(base + tile_bytes(p));
  s.blk.qn = &s_qn;
  s.blk.ref = 0;
  s.blk.wq = (uint2 *)(base + tile_bytes(p) + queue_bytes(p)) + (threadIdx.x >> 5) * p.wqcap;
  s.blk.wn = 0;
  s.blk.wref = 0;
  s.hist = (uint32_t *)(base + tile_bytes(p) + queue_bytes(p) + wq_bytes(p));
  if (threadIdx.x == 0)
    s_qn = 0;
  return s;
}

/* edge_groups 2: the warp redoes the entries left in its queue (< 32; the
 * warp is converged here, at the end of its tile loop). */
template <int MODE, int SK>
__device__ __forceinline__ void wq_flush(Sink<SK> &sk, const sdh_params &p, Blk &blk) {
  if constexpr (MODE == SDH_MODE_EXACT && SK == SDH_SINK_H16) {
    if (p.edge_groups == 2) {
      uint32_t lane = threadIdx.x & 31;
      __syncwarp();
      if (lane < blk.wn) {
        uint2 pr = blk.wq[lane];
        sk.add_hi(p.rowbase + refine_row(p, pr.x, pr.y));
      }
      blk.wn = 0;
      if (lane == 0 && blk.wref)
        atomicAdd(p.refined, (unsigned long long)blk.wref);
    }
  }
}

template <int MODE, int SK>
__device__ __forceinline__ void finish(Sink<SK> &sk, const sdh_params &p, Smem &s) {
  wq_flush<MODE, SK>(sk, p, s.blk);
  __syncthreads();
  sk.flush(p, s.hist);
  if (MODE == SDH_MODE_EXACT && threadIdx.x == 0 && s.blk.ref)
    atomicAdd(p.refined, (unsigned long long)s.blk.ref);
}

/* ---- inner loops over a partner tile in shared memory ------------------- */

/* The rare path of a group of 32 float32 pairs (exact mode): bit 31-k of m
 * is set when pair k (partner tile[u + k]) lies within the error bound of a
 * bucket edge. Its provisional increment is taken back and the pair queued
 * for the float64 redo; code32 is recomputed bit for bit (same instructions,
 * same operands). Row 0's only near edge is 0, which no pair crosses: its
 * provisional count stands. Kept out of the hot loop's body. */
template <int SK>
__device__ __forceinline__ void edge_group(uint32_t m, const float4 &a, uint32_t ai,
                                        const float4 *tile, uint32_t u, uint32_t jt,
                                        Sink<SK> &sk, const sdh_params &p, Blk &blk) {
  do {
    uint32_t k = __clz(m);
    m ^= 0x80000000u >> k;
    uint32_t c = code32(a, tile[u + k], p.magic);
    uint32_t h = c >> p.shift;
    if (h != p.rowbase) {
      sk.sub_hi(h);
      uint32_t slot = atomicAdd(blk.qn, 1u);
      if (slot < p.qcap)
        blk.q[slot] = make_uint2(ai, jt + u + k);
      else
        sk.add_far(p.rowbase + refine_row(p, ai, jt + u + k));
    }
  } while (m);
}

/* H16 sink: some increment of a group found a half at 2^14 or more. Every
 * row of the group is settled (recomputed bit for bit, as in edge_group). */
template <int SK>
__device__ __forceinline__ void settle_group(const float4 &a, const float4 *tile, uint32_t u,
                                          Sink<SK> &sk, const sdh_params &p) {
  if constexpr (SK == SDH_SINK_H16) {
    for (uint32_t k = 0; k < 32; k++)
      sk.settle(code32(a, tile[u + k], p.magic) >> p.shift);
  }
}

/* anchors a (index ai) meet tile points [u0, u1) (global index jt + u).
 *
 * float32: whole groups of 32 partners first. Each pair's float32 row is
 * counted unconditionally, and its near-edge test only shifts one bit into
 * m (LOP3, IADD, SHF: (c & mask) - thresh is negative iff the pair is near
 * an edge), so the group's body has no branch, no reconvergence and no trip
 * test; one test of m per group sends the rare groups to edge_group. The
 * remainder (< 32 partners) and float64 go pair by pair, and so does exact
 * mode when edge pairs are too many for groups to pay (p.edge_groups = 0:
 * then nearly every warp's group has some, and the per-lane walk over them
 * plus the take-back costs more than a branch per pair). */
template <int MODE, int SK>
__device__ __forceinline__ void meet_range(const typename PT<MODE>::T &a, uint32_t ai,
                                           const typename PT<MODE>::T *tile, uint32_t u0,
                                           uint32_t u1, uint32_t jt, Sink<SK> &sk,
                                           const sdh_params &p, Blk &blk) {
  uint32_t u = u0;
  if constexpr (MODE != SDH_MODE_F64) {
    for (; (MODE == SDH_MODE_FAST || p.edge_groups == 1) && u + 32 <= u1; u += 32) {
      uint32_t m = 0, hi = 0;
#pragma unroll
      for (uint32_t k = 0; k < 32; k++) {
        uint32_t c = code32(a, tile[u + k], p.magic);
        if constexpr (SK == SDH_SINK_H16)
          hi |= sk.add_code(c, 1u, p);
        else
          sk.add_hi(c >> p.shift);
        if (MODE == SDH_MODE_EXACT)
          m = __funnelshift_l((c & p.mask) - p.thresh, m, 1);
      }
      if (SK == SDH_SINK_H16 && __builtin_expect((hi & H16_HIGH) != 0, 0))
        settle_group<SK>(a, tile, u, sk, p);
      if (MODE == SDH_MODE_EXACT && __builtin_expect(m != 0, 0))
        edge_group<SK>(m, a, ai, tile, u, jt, sk, p, blk);
    }
  }
#pragma unroll 8
  for (; u < u1; u++)
    pair<MODE, SK, true>(a, tile[u], ai, jt + u, sk, p, blk);
}

/* edge_groups 2 (exact mode, many edge pairs; the 16-bit sink only, so that
 * the other sinks' kernels keep their registers): a full warp whose anchors
 * all meet tile points [u0, u1). Groups of 32 partners, branch-free: a pair
 * near an edge is not counted (its increment is predicated off) and its bit
 * goes into m, as in meet_range. Then the warp appends its lanes' edge
 * pairs to its own queue (a prefix sum over lanes, no atomics) and, while
 * the queue holds 32 or more, each lane redoes one in float64: the redo
 * runs on full warps, and other warps' groups hide its latency (no block
 * barrier). A pair the full queue cannot take is redone at once. The rest
 * (< 32 partners) goes pair by pair through the block's queue. */
template <int SK>
__device__ __forceinline__ void meet_range_wq(const float4 &a, uint32_t ai, const float4 *tile,
                                              uint32_t u0, uint32_t u1, uint32_t jt,
                                              Sink<SK> &sk, const sdh_params &p, Blk &blk) {
  const uint32_t lane = threadIdx.x & 31;
  uint32_t u = u0;
  for (; u + 32 <= u1; u += 32) {
    uint32_t m = 0, hi = 0;
#pragma unroll 8
    for (uint32_t k = 0; k < 32; k++) {
      uint32_t c = code32(a, tile[u + k], p.magic);
      uint32_t t = (c & p.mask) - p.thresh; /* negative: near an edge */
      if constexpr (SK == SDH_SINK_H16) {
        hi |= sk.add_code(c, (int32_t)t >= 0, p);
      } else {
        if ((int32_t)t >= 0)
          sk.add_hi(c >> p.shift);
      }
      m = __funnelshift_l(t, m, 1);
    }
    if (SK == SDH_SINK_H16 && __builtin_expect((hi & H16_HIGH) != 0, 0))
      settle_group<SK>(a, tile, u, sk, p);
    if (__any_sync(FULL, m != 0)) {
      uint32_t cnt = __popc(m), incl = cnt;
#pragma unroll
      for (int d = 1; d < 32; d <<= 1) {
        uint32_t v = __shfl_up_sync(FULL, incl, d);
        if (lane >= (uint32_t)d)
          incl += v;
      }
      uint32_t total = __shfl_sync(FULL, incl, 31);
      uint32_t slot = blk.wn + incl - cnt;
      __syncwarp(); /* the last redo's reads are done before these writes */
      while (m) {
        uint32_t k = __clz(m);
        m ^= 0x80000000u >> k;
        if (slot < p.wqcap)
          blk.wq[slot] = make_uint2(ai, jt + u + k);
        else
          sk.add_hi(p.rowbase + refine_row(p, ai, jt + u + k));
        slot++;
      }
      blk.wref += total;
      blk.wn = blk.wn + total < p.wqcap ? blk.wn + total : p.wqcap;
      __syncwarp();
      while (blk.wn >= 32) {
        blk.wn -= 32;
        uint2 pr = blk.wq[blk.wn + lane];
        sk.add_hi(p.rowbase + refine_row(p, pr.x, pr.y));
      }
    }
  }
  for (; u < u1; u++)
    pair<SDH_MODE_EXACT, SK, true>(a, tile[u], ai, jt + u, sk, p, blk);
}

/* Either of the two, for partners [u0, u1) of an off-diagonal tile: wfull,
 * all 32 anchors of the warp exist (the warp-queue path needs full warps). */
template <int MODE, int SK>
__device__ __forceinline__ void meet_part(bool va, bool wfull, const typename PT<MODE>::T &a,
                                          uint32_t ai, const typename PT<MODE>::T *tile,
                                          uint32_t u0, uint32_t u1, uint32_t jt, Sink<SK> &sk,
                                          const sdh_params &p, Blk &blk) {
  if constexpr (MODE == SDH_MODE_EXACT && SK == SDH_SINK_H16) {
    if (p.edge_groups == 2 && wfull) {
      meet_range_wq<SK>(a, ai, tile, u0, u1, jt, sk, p, blk);
      return;
    }
  }
  if (va)
    meet_range<MODE, SK>(a, ai, tile, u0, u1, jt, sk, p, blk);
}

/* A full off-diagonal tile of L partners, drained every SDH_SUBCHUNK. */
template <int MODE, int SK>
__device__ __forceinline__ void meet_tile(bool va, bool wfull, const typename PT<MODE>::T &a,
                                          uint32_t ai, const typename PT<MODE>::T *tile,
                                          uint32_t L, uint32_t jt, Sink<SK> &sk,
                                          const sdh_params &p, Blk &blk) {
  if constexpr (SK == SDH_SINK_H16) {
    /* a barrier (or a drain) every drain_every partners: the epoch bound */
    for (uint32_t u0 = 0; u0 < L; u0 += p.drain_every) {
      uint32_t u1 = u0 + p.drain_every < L ? u0 + p.drain_every : L;
      meet_part<MODE, SK>(va, wfull, a, ai, tile, u0, u1, jt, sk, p, blk);
      if constexpr (MODE == SDH_MODE_EXACT)
        drain<MODE, SK>(sk, p, blk);
      else
        __syncthreads();
    }
    return;
  } else if constexpr (MODE != SDH_MODE_EXACT) {
    if (va)
      meet_range<MODE, SK>(a, ai, tile, 0, L, jt, sk, p, blk);
    return;
  } else {
  for (uint32_t u0 = 0; u0 < L; u0 += p.drain_every) {
    uint32_t u1 = u0 + p.drain_every < L ? u0 + p.drain_every : L;
    meet_part<MODE, SK>(va, wfull, a, ai, tile, u0, u1, jt, sk, p, blk);
    drain<MODE, SK>(sk, p, blk);
  }
  }
}

/* The tile meets itself: thread t (anchor t) with L points. */
template <int MODE, int SK>
__device__ __forceinline__ void meet_diag(bool va, const typename PT<MODE>::T &a, uint32_t ai,
                                          const typename PT<MODE>::T *tile, uint32_t L,
                                          uint32_t jt, Sink<SK> &sk, const sdh_params &p,
                                          Blk &blk) {
  uint32_t t = threadIdx.x;
  if constexpr (SK == SDH_SINK_H16) {
    /* the same pairs in pieces of at most S partners per thread, with a
     * barrier (or a drain) after each piece: the epoch bound */
    const uint32_t S = p.drain_every;
    if (p.diag == SDH_DIAG_TRI) {
      for (uint32_t u0 = 0; u0 < L; u0 += S) {
        uint32_t u1 = u0 + S < L ? u0 + S : L;
        uint32_t b = t + 1 > u0 ? t + 1 : u0;
        if (va && b < u1)
          meet_range<MODE, SK>(a, ai, tile, b, u1, jt, sk, p, blk);
        if constexpr (MODE == SDH_MODE_EXACT)
          drain<MODE, SK>(sk, p, blk);
        else
          __syncthreads();
      }
    } else {
      /* thread t meets offsets o in [1, h] (partner (t + o) mod L) */
      uint32_t hmax = (L - 1) / 2 + (L % 2 == 0 ? 1 : 0);
      uint32_t h = (L - 1) / 2 + ((L % 2 == 0 && t < L / 2) ? 1 : 0);
      for (uint32_t o0 = 1; o0 <= hmax; o0 += S) {
        uint32_t o1 = o0 + S < h + 1 ? o0 + S : h + 1; /* offsets [o0, o1) */
        if (va && o0 < o1) {
          uint32_t b = t + o0, e = t + o1; /* positions [b, e), mod L */
          if (b >= L) {
            meet_range<MODE, SK>(a, ai, tile, b - L, e - L, jt, sk, p, blk);
          } else {
            meet_range<MODE, SK>(a, ai, tile, b, e < L ? e : L, jt, sk, p, blk);
            if (e > L)
              meet_range<MODE, SK>(a, ai, tile, 0, e - L, jt, sk, p, blk);
          }
        }
        if constexpr (MODE == SDH_MODE_EXACT)
          drain<MODE, SK>(sk, p, blk);
        else
          __syncthreads();
      }
    }
    return;
  }
  if (va) {
    if (p.diag == SDH_DIAG_TRI) {
      meet_range<MODE, SK>(a, ai, tile, t + 1, L, jt, sk, p, blk);
    } else {
      /* the next (L-1)/2 points circularly, plus the opposite point for the
       * first half when L is even: every pair once, equal work per thread */
      uint32_t h = (L - 1) / 2 + ((L % 2 == 0 && t < L / 2) ? 1 : 0);
      uint32_t e1 = t + 1 + h < L ? t + 1 + h : L;
      meet_range<MODE, SK>(a, ai, tile, t + 1, e1, jt, sk, p, blk);
      uint32_t rest = t + 1 + h - e1;
      meet_range<MODE, SK>(a, ai, tile, 0, rest, jt, sk, p, blk);
    }
  }
  drain<MODE, SK>(sk, p, blk);
}

template <int MODE>
__device__ __forceinline__ void stage(const sdh_params &p, typename PT<MODE>::T *tile,
                                      uint32_t first, uint32_t L) {
  if (threadIdx.x < L)
    tile[threadIdx.x] = load_point<MODE>(p, first + threadIdx.x);
}

/* ---- NAIVE: one thread per point i, j > i from global memory ----------- */

template <int MODE, int SK>
__global__ void __launch_bounds__(1024, 1) k_naive(const __grid_constant__ sdh_params p, uint64_t u0, uint64_t u1) {
  Smem s = smem_setup(p);
  Sink<SK> sk;
  sk.init(p, s.hist);
  __syncthreads();
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < p.n) {
    typename PT<MODE>::T a = load_point<MODE>(p, i);
    uint32_t jb = (uint64_t)i + 1 > u0 ? i + 1 : (uint32_t)u0;
    uint32_t je = u1 < p.n ? (uint32_t)u1 : p.n;
#pragma unroll 4
    for (uint32_t j = jb; j < je; j++)
      pair<MODE, SK, false>(a, load_point<MODE>(p, j), i, j, sk, p, s.blk);
  }
  finish<MODE, SK>(sk, p, s);
}

/* ---- CLASSIC: block I stages partner tiles J in [max(I,u0), u1) -------- */

template <int MODE, int SK>
__global__ void __launch_bounds__(1024, 1) k_classic(const __grid_constant__ sdh_params p, uint64_t u0, uint64_t u1) {
  typedef typename PT<MODE>::T T;
  Smem s = smem_setup(p);
  T *tile = (T *)s.tile;
  Sink<SK> sk;
  sk.init(p, s.hist);
  uint32_t I = blockIdx.x + p.tile0, B = blockDim.x;
  uint32_t ai = I * B + threadIdx.x;
  bool va = ai < p.n;
  bool wfull = I * B + (threadIdx.x & ~31u) + 31 < p.n; /* the whole warp has anchors */
  T a = load_point<MODE>(p, va ? ai : 0);
  uint32_t J0 = I > u0 ? I : (uint32_t)u0;
  for (uint32_t J = J0; J < (uint32_t)u1; J++) {
    uint32_t jt = J * B;
    uint32_t L = p.n - jt < B ? p.n - jt : B;
    __syncthreads();
    stage<MODE>(p, tile, jt, L);
    __syncthreads();
    if (J == I)
      meet_diag<MODE, SK>(va, a, ai, tile, L, jt, sk, p, s.blk);
    else
      meet_tile<MODE, SK>(va, wfull, a, ai, tile, L, jt, sk, p, s.blk);
  }
  finish<MODE, SK>(sk, p, s);
}

/* ---- LINEAR: tile pairs [u0, u1) split evenly over a persistent grid ---- */

/* (decode_pair: sdh_pair.cuh) */

template <int MODE, int SK>
__global__ void __launch_bounds__(1024, 1) k_linear(const __grid_constant__ sdh_params p, uint64_t u0, uint64_t u1) {
  typedef typename PT<MODE>::T T;
  Smem s = smem_setup(p);
  T *tile = (T *)s.tile;
  Sink<SK> sk;
  sk.init(p, s.hist);
  uint64_t len = u1 - u0, G = gridDim.x;
  uint64_t q0 = u0 + len * blockIdx.x / G, q1 = u0 + len * (blockIdx.x + 1) / G;
  uint32_t B = blockDim.x, I = 0, J = 0, curI = 0xffffffffu;
  if (q0 < q1)
    decode_pair(q0, p.tiles, &I, &J);
  T a;
  uint32_t ai = 0;
  bool va = false, wfull = false;
  for (uint64_t q = q0; q < q1; q++) {
    if (I != curI) {
      curI = I;
      ai = I * B + threadIdx.x;
      va = ai < p.n;
      wfull = I * B + (threadIdx.x & ~31u) + 31 < p.n; /* the whole warp has anchors */
      a = load_point<MODE>(p, va ? ai : 0);
    }
    uint32_t jt = J * B;
    uint32_t L = p.n - jt < B ? p.n - jt : B;
    __syncthreads();
    stage<MODE>(p, tile, jt, L);
    __syncthreads();
    if (J == I)
      meet_diag<MODE, SK>(va, a, ai, tile, L, jt, sk, p, s.blk);
    else
      meet_tile<MODE, SK>(va, wfull, a, ai, tile, L, jt, sk, p, s.blk);
    if (++J == p.tiles) {
      I++;
      J = I;
    }
  }
  finish<MODE, SK>(sk, p, s);
}

/* ---- SHUFFLE: LINEAR, but partners travel between lanes by shuffles ----- */

template <int MODE> struct Shfl;
template <int MODE> __device__ __forceinline__ float4 rot(const float4 &b, int src) {
  float4 r;
  r.x = __shfl_sync(FULL, b.x, src);
  r.y = __shfl_sync(FULL, b.y, src);
  r.z = __shfl_sync(FULL, b.z, src);
  r.w = 0.f;
  return r;
}
__device__ __forceinline__ D3 rot64(const D3 &b, int src) {
  D3 r;
  r.x = __shfl_sync(FULL, b.x, src);
  r.y = __shfl_sync(FULL, b.y, src);
  r.z = __shfl_sync(FULL, b.z, src);
  return r;
}
__device__ __forceinline__ float4 rotp(const float4 &b, int src) { return rot<0>(b, src); }
__device__ __forceinline__ D3 rotp(const D3 &b, int src) { return rot64(b, src); }

template <int MODE, int SK>
__global__ void __launch_bounds__(1024, 1) k_shuffle(const __grid_constant__ sdh_params p, uint64_t u0, uint64_t u1) {
  typedef typename PT<MODE>::T T;
  Smem s = smem_setup(p);
  Sink<SK> sk;
  sk.init(p, s.hist);
  __syncthreads();
  uint64_t len = u1 - u0, G = gridDim.x;
  uint64_t q0 = u0 + len * blockIdx.x / G, q1 = u0 + len * (blockIdx.x + 1) / G;
  uint32_t B = blockDim.x, I = 0, J = 0, curI = 0xffffffffu;
  uint32_t lane = threadIdx.x & 31, wbase = threadIdx.x & ~31u;
  int next = (lane + 1) & 31;
  if (q0 < q1)
    decode_pair(q0, p.tiles, &I, &J);
  T a;
  uint32_t ai = 0;
  bool va = false, wfull = false;
  for (uint64_t q = q0; q < q1; q++) {
    if (I != curI) {
      curI = I;
      ai = I * B + threadIdx.x;
      va = ai < p.n;
      wfull = I * B + wbase + 31 < p.n; /* the whole warp has anchors */
      a = load_point<MODE>(p, va ? ai : 0);
    }
    uint32_t jt = J * B;
    uint32_t L = p.n - jt < B ? p.n - jt : B;
    for (uint32_t c = 0; c < L; c += 32) {
      uint32_t jl = c + lane; /* this lane's partner, local index */
      T b = load_point<MODE>(p, jt + (jl < L ? jl : 0));
      if (wfull && J != I && c + 32 <= L) {
#pragma unroll 8
        for (uint32_t st = 0; st < 32; st++) {
          /* after st rotations this lane holds partner c + (lane+st)%32 */
          pair<MODE, SK, true>(a, b, ai, jt + c + ((lane + st) & 31), sk, p, s.blk);
          b = rotp(b, next);
        }
      } else {
        for (uint32_t st = 0; st < 32; st++) {
          uint32_t jj = c + ((lane + st) & 31);
          bool ok = va && jj < L && (J != I || jj > threadIdx.x);
          if (ok)
            pair<MODE, SK, true>(a, b, ai, jt + jj, sk, p, s.blk);
          b = rotp(b, next);
        }
      }
      if (MODE == SDH_MODE_EXACT && (c + 32) % p.drain_every == 0)
        drain<MODE, SK>(sk, p, s.blk);
    }
    drain<MODE, SK>(sk, p, s.blk);
    if (++J == p.tiles) {
      I++;
      J = I;
    }
  }
  finish<MODE, SK>(sk, p, s);
}

/* ---- CIRC: each point meets the next (n-1)/2 points circularly --------- */

template <int MODE, int SK>
__global__ void __launch_bounds__(1024, 1) k_circ(const __grid_constant__ sdh_params p, uint64_t u0, uint64_t u1) {
  typedef typename PT<MODE>::T T;
  Smem s = smem_setup(p);
  T *tile = (T *)s.tile;
  Sink<SK> sk;
  sk.init(p, s.hist);
  uint32_t I = blockIdx.x, B = blockDim.x, t = threadIdx.x;
  uint32_t ai = I * B + t;
  bool va = ai < p.n;
  T a = load_point<MODE>(p, va ? ai : 0);
  const uint64_t n = p.n, h = p.circ_h;
  for (uint64_t m = u0; m < u1; m++) {
    uint64_t start = ((uint64_t)I * B + m * B) % n; /* partner u is (start+u) % n */
    __syncthreads();
    {
      uint64_t j = start + t;
      j = j < n ? j : j % n;
      tile[t] = load_point<MODE>(p, (uint32_t)j);
    }
    __syncthreads();
    if (m >= 1 && (m + 1) * B - 1 <= h) {
      /* every offset m*B + u - t lies in [1, h]: no checks; the partner
       * index only matters for refinement, where it is reduced mod n */
      for (uint32_t c0 = 0; c0 < B; c0 += p.drain_every) {
        uint32_t c1 = c0 + p.drain_every < B ? c0 + p.drain_every : B;
        if (va) {
          if (MODE == SDH_MODE_F64 || start + B <= n) {
#pragma unroll 8
            for (uint32_t u = c0; u < c1; u++)
              pair<MODE, SK, true>(a, tile[u], ai, (uint32_t)(start + u), sk, p, s.blk);
          } else {
#pragma unroll 8
            for (uint32_t u = c0; u < c1; u++)
              pair<MODE, SK, true>(a, tile[u], ai, (uint32_t)((start + u) % n), sk, p, s.blk);
          }
        }
        drain<MODE, SK>(sk, p, s.blk);
      }
    } else {
      if (va) {
        for (uint32_t u = 0; u < B; u++) {
          int64_t o = (int64_t)(m * B) + u - t; /* offset j - i, each once */
          bool ok = (o >= 1 && (uint64_t)o <= h) ||
                    (p.circ_even && (uint64_t)o == n / 2 && ai < n / 2);
          if (ok)
            pair<MODE, SK, true>(a, tile[u], ai, (uint32_t)((start + u) % n), sk, p, s.blk);
        }
      }
      drain<MODE, SK>(sk, p, s.blk);
    }
  }
  finish<MODE, SK>(sk, p, s);
}

/* ---- conversion --------------------------------------------------------- */

__global__ void k_convert(const double *x, const double *y, const double *z, uint32_t n,
                          double cx, double cy, double cz, double iw, float4 *out) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = make_float4(__double2float_rn(__dmul_rn(__dsub_rn(x[i], cx), iw)),
                         __double2float_rn(__dmul_rn(__dsub_rn(y[i], cy), iw)),
                         __double2float_rn(__dmul_rn(__dsub_rn(z[i], cz), iw)), 0.f);
}

/* ---- dispatch ----------------------------------------------------------- */

typedef void (*kfn)(const sdh_params, uint64_t, uint64_t);

template <int MODE> static kfn pick_mode(int family, int sink) {
  switch (family) {
  case SDH_FAM_NAIVE:
    return sink == SDH_SINK_GLOBAL ? k_naive<MODE, SDH_SINK_GLOBAL> : k_naive<MODE, SDH_SINK_GEN>;
  case SDH_FAM_CLASSIC:
    return sink == SDH_SINK_GLOBAL ? k_classic<MODE, SDH_SINK_GLOBAL>
           : sink == SDH_SINK_H16  ? k_classic<MODE, SDH_SINK_H16>
                                   : k_classic<MODE, SDH_SINK_GEN>;
  case SDH_FAM_LINEAR:
    return sink == SDH_SINK_GLOBAL ? k_linear<MODE, SDH_SINK_GLOBAL>
           : sink == SDH_SINK_LANE ? k_linear<MODE, SDH_SINK_LANE>
           : sink == SDH_SINK_H16  ? k_linear<MODE, SDH_SINK_H16>
                                   : k_linear<MODE, SDH_SINK_GEN>;
  case SDH_FAM_SHUFFLE:
    return sink == SDH_SINK_GLOBAL ? k_shuffle<MODE, SDH_SINK_GLOBAL>
           : sink == SDH_SINK_LANE ? k_shuffle<MODE, SDH_SINK_LANE>
                                   : k_shuffle<MODE, SDH_SINK_GEN>;
  case SDH_FAM_CIRC:
    return sink == SDH_SINK_GLOBAL ? k_circ<MODE, SDH_SINK_GLOBAL> : k_circ<MODE, SDH_SINK_GEN>;
  }
  return NULL;
}

static kfn pick(const sdh_params *p) {
  if (p->sink == SDH_SINK_H16 && p->family != SDH_FAM_CLASSIC && p->family != SDH_FAM_LINEAR)
    return NULL; /* the 16-bit sink needs the tile loops' barriers */
  switch (p->mode) {
  case SDH_MODE_EXACT:
    return pick_mode<SDH_MODE_EXACT>(p->family, p->sink);
  case SDH_MODE_FAST:
    return pick_mode<SDH_MODE_FAST>(p->family, p->sink);
  case SDH_MODE_F64:
    return pick_mode<SDH_MODE_F64>(p->family, p->sink);
  }
  return NULL;
}

extern "C" int sdh_error_code(cudaError_t e) {
  switch (e) {
  case cudaErrorMemoryAllocation:
    return HISTD_ETOOBIG;
  case cudaErrorIllegalAddress:
  case cudaErrorLaunchTimeout:
  case cudaErrorAssert:
  case cudaErrorHardwareStackError:
  case cudaErrorIllegalInstruction:
  case cudaErrorMisalignedAddress:
  case cudaErrorInvalidAddressSpace:
  case cudaErrorInvalidPc:
  case cudaErrorLaunchFailure:
  case cudaErrorECCUncorrectable:
    return HISTD_EGPULOST;
  default:
    return HISTD_EDEVICE;
  }
}

extern "C" int sdh_cuda_fail(char *msg, size_t msglen, const char *what, cudaError_t e) {
  (void)cudaGetLastError(); /* clear a non-sticky error: the next job must not see it */
  return histd_fail(msg, msglen, sdh_error_code(e), "CUDA error in %s: %s", what,
                    cudaGetErrorString(e));
}

/* rsqrtf's largest relative error over every positive normal float (the
 * same instruction as code32's, compiled with the same flags): each value
 * against 1/sqrt in binary64, whose own error (two roundings, < 2^-51.9)
 * is added to the largest found. */
__global__ void k_rsqrt_error(unsigned long long *worst) {
  const uint32_t lo = 0x00800000u, hi = 0x7f800000u; /* [FLT_MIN, inf) */
  double m = 0;
  for (uint64_t b = lo + (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; b < hi;
       b += (uint64_t)gridDim.x * blockDim.x) {
    float x = __uint_as_float((uint32_t)b);
    double e = fabs((double)rsqrtf(x) * sqrt((double)x) - 1.0);
    m = e > m ? e : m;
  }
  for (int o = 16; o > 0; o /= 2)
    m = fmax(m, __shfl_xor_sync(FULL, m, o));
  if ((threadIdx.x & 31) == 0)
    atomicMax(worst, (unsigned long long)__double_as_longlong(m));
}

extern "C" int sdh_rsqrt_error(double *err, char *msg, size_t msglen) {
  unsigned long long *d = NULL, h = 0;
  cudaError_t e = cudaMalloc((void **)&d, sizeof *d);
  if (e == cudaSuccess)
    e = cudaMemset(d, 0, sizeof *d);
  if (e == cudaSuccess) {
    k_rsqrt_error<<<4096, 256>>>(d);
    e = cudaGetLastError();
  }
  if (e == cudaSuccess)
    e = cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost);
  cudaFree(d);
  if (e != cudaSuccess)
    return sdh_cuda_fail(msg, msglen, "the rsqrtf probe", e);
  double m;
  memcpy(&m, &h, sizeof m);
  *err = m + 0x1p-50;
  return 0;
}

__global__ void k_fault(int *p) { *p = 1; }

extern "C" int sdh_inject_fault(cudaStream_t s, char *msg, size_t msglen) {
  k_fault<<<1, 1, 0, s>>>((int *)(uintptr_t)0x8);
  cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? 0 : sdh_cuda_fail(msg, msglen, "the fault injection", e);
}

static cudaError_t prepare(const sdh_params *p, kfn f) {
  size_t smem = p->smem;
  if (smem > 48 * 1024)
    return cudaFuncSetAttribute((const void *)f, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)smem);
  return cudaSuccess;
}

extern "C" int sdh_blocks_per_sm(const sdh_params *p, int *blocks, char *msg, size_t msglen) {
  kfn f = pick(p);
  if (f == NULL)
    return histd_fail(msg, msglen, HISTD_EINVAL, "no GPU kernel for this family/sink/mode");
  cudaError_t e = prepare(p, f);
  if (e != cudaSuccess)
    return sdh_cuda_fail(msg, msglen, "cudaFuncSetAttribute", e);
  e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, (const void *)f, (int)p->block,
                                                    p->smem);
  if (e != cudaSuccess)
    return sdh_cuda_fail(msg, msglen, "cudaOccupancyMaxActiveBlocksPerMultiprocessor", e);
  return 0;
}

extern "C" int sdh_launch(const sdh_params *p, uint64_t u0, uint64_t u1, uint32_t grid,
                          cudaStream_t s, char *msg, size_t msglen) {
  kfn f = pick(p);
  if (f == NULL)
    return histd_fail(msg, msglen, HISTD_EINVAL, "no GPU kernel for this family/sink/mode");
  if (grid == 0 || u0 >= u1)
    return 0;
  cudaError_t e = prepare(p, f);
  if (e != cudaSuccess)
    return sdh_cuda_fail(msg, msglen, "cudaFuncSetAttribute", e);
  f<<<grid, p->block, p->smem, s>>>(*p, u0, u1);
  e = cudaGetLastError();
  if (e != cudaSuccess)
    return sdh_cuda_fail(msg, msglen, "a kernel launch", e);
  return 0;
}

extern "C" int sdh_convert(const double *x, const double *y, const double *z, uint32_t n,
                           double cx, double cy, double cz, double inv_w, float4 *p32,
                           cudaStream_t s, char *msg, size_t msglen) {
  if (n == 0)
    return 0;
  k_convert<<<(n + 255) / 256, 256, 0, s>>>(x, y, z, n, cx, cy, cz, inv_w, p32);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    return sdh_cuda_fail(msg, msglen, "the conversion kernel's launch", e);
  return 0;
}

extern "C" int sdh_kernel_attrs(const sdh_params *p, int *regs, int *local_bytes,
                                int *max_threads) {
  kfn f = pick(p);
  cudaFuncAttributes a;
  if (f == NULL || cudaFuncGetAttributes(&a, (const void *)f) != cudaSuccess)
    return HISTD_EDEVICE;
  *regs = a.numRegs;
  *local_bytes = (int)a.localSizeBytes;
  *max_threads = a.maxThreadsPerBlock;
  return 0;
}
