/*
 * cpu_simd.c -- the "cpu" kernel's inner loops for AVX-512 and AVX2+FMA.
 *
 * Each function carries its own target attribute, so this file compiles
 * with the project's baseline flags and the binary runs on any x86-64:
 * cpu.c asks __builtin_cpu_supports() which loop to call. On other
 * architectures the file compiles to stubs that return NULL and cpu.c
 * uses its portable loops.
 *
 * The loops follow cpu.c's plan (see the error bound there):
 *   F32: q = sqrt(dx*dx + dy*dy + dz*dz) on centred coordinates already
 *        divided by the width; the bucket is floor(min(q, clamp)); a lane
 *        with |q - rint(q)| < delta and q >= 0.5 is redone in float64.
 *   F64: the contract's own operations, lane-wise (IEEE vector add, mul,
 *        sqrt and div round exactly like the scalar ones; no FMA here).
 * Lanes count into histogram copy (lane mod copies), or, in the AVX-512
 * float32 loop with few buckets, two lanes at a time into a table of
 * bucket pairs (see cpu.c).
 *
 * The statistics (AVX-512 float32 only, always exact) are the same loop,
 * f32_pstep512, with a constant `kind`: A x B reads B's points (qx..) for
 * j; CPU_K_PERIODIC takes the float32 minimum image per axis from points
 * wrapped into the box; CPU_K_EDGES takes the slot from the edge table
 * instead of floor(q), redoing lanes near the cell's edge, and with
 * CPU_K_LOG (log-spaced edges) from an estimate of log2 of the sum of
 * squares instead of the table, with no gather and no square root;
 * CPU_K_WEIGHTS adds {1, fl(w_i w_j)} to the lane's record of its slot,
 * counting the pair there too (cpu_internal.h: the records and the
 * weights' bound). The redo is histd/pair.h's
 * arithmetic (cpu_exact_index). cpu.c derives each bound.
 */
#include "cpu_internal.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(HISTD_NO_SIMD)
#define HISTD_HAVE_X86_SIMD 1
#include <immintrin.h>

#define TGT512 __attribute__((target("avx512f,avx512dq,avx512vl,avx2,fma,bmi,bmi2,popcnt")))
#define TGT256 __attribute__((target("avx2,fma,bmi,popcnt")))

/* ---- AVX-512 ------------------------------------------------------------ */

TGT512 static inline __m512i lane_offsets16(const cpu_ctx *c) {
  uint32_t off[16];
  for (int l = 0; l < 16; l++)
    off[l] = (uint32_t)(l & (int)(c->copies - 1)) * c->stride;
  return _mm512_loadu_si512(off);
}

/* Redo the lanes in `near` in float64 and count them in copy 0 (with
 * weights, their fl(w_i w_j) straight into the slot's Neumaier sum). */
static inline uint64_t redo_lanes(const cpu_ctx *c, size_t i, size_t j, uint32_t near,
                                  uint32_t *h) {
  uint64_t n = 0;
  while (near) {
    int l = __builtin_ctz(near);
    near &= near - 1;
    uint32_t slot = cpu_exact_index(c, i, j + (size_t)l);
    h[slot]++;
    if (c->kind & CPU_K_WEIGHTS) {
      double *sum = cpu_wsums(c, h - c->redo_base) + cpu_wacc(c);
      histd_ev_neumaier(&sum[slot], &sum[c->stride + slot], c->wa[i] * c->wb[j + (size_t)l]);
    }
    n++;
  }
  return n;
}

/* Count the 16 (or 8) indices of v. GCC moves the lanes to general
 * registers with vmovd/vpextrd; that measured faster on Zen 4 than a store
 * and 16 reloads (a 512-bit store does not forward to 32-bit loads). */
#define INCREMENT16(h, v)                                                      \
  do {                                                                         \
    uint32_t buf_[16] __attribute__((aligned(64)));                           \
    _mm512_store_si512(buf_, (v));                                             \
    for (int k_ = 0; k_ < 16; k_++)                                            \
      (h)[buf_[k_]]++;                                                         \
  } while (0)
#define INCREMENT8(h, v)                                                       \
  do {                                                                         \
    uint32_t buf_[8] __attribute__((aligned(32)));                            \
    _mm256_store_si256((__m256i *)buf_, (v));                                  \
    for (int k_ = 0; k_ < 8; k_++)                                             \
      (h)[buf_[k_]]++;                                                         \
  } while (0)

/*
 * One vector of 16 pairs (i, j..j+15): A's point i against B's points j..
 * (the same arrays for self pairs). With `pairs` (few buckets, plain
 * histogram), lanes 2k and 2k+1 count together in a 2-D table of bucket
 * pairs, index b0 * pair_stride + b1: half the scalar increments, which
 * are what limits this loop; cpu.c's flush adds each cell to both of its
 * buckets. `kind` (CPU_K_*, a constant in each instance) adds the
 * statistics: the float32 minimum image, the edge table, the weights
 * (cpu.c derives the bounds each one needs).
 */
TGT512 static inline __attribute__((always_inline)) void
f32_pstep512(const cpu_ctx *c, size_t i, size_t j, __mmask16 valid, __m512 xi, __m512 yi,
             __m512 zi, __m512i off, __m512 clamp, __m512 delta, uint32_t *h, char *wacc,
             uint64_t *refined, const bool exact, const bool pairs, const unsigned kind) {
  __m512 dx = _mm512_sub_ps(xi, _mm512_maskz_loadu_ps(valid, c->qx + j));
  __m512 dy = _mm512_sub_ps(yi, _mm512_maskz_loadu_ps(valid, c->qy + j));
  __m512 dz = _mm512_sub_ps(zi, _mm512_maskz_loadu_ps(valid, c->qz + j));
  if (kind & CPU_K_PERIODIC) { /* |dx| < L + ..: the image is min(|dx|, L - |dx|) */
    dx = _mm512_abs_ps(dx);
    dy = _mm512_abs_ps(dy);
    dz = _mm512_abs_ps(dz);
    dx = _mm512_min_ps(dx, _mm512_sub_ps(_mm512_set1_ps(c->lx), dx));
    dy = _mm512_min_ps(dy, _mm512_sub_ps(_mm512_set1_ps(c->ly), dy));
    dz = _mm512_min_ps(dz, _mm512_sub_ps(_mm512_set1_ps(c->lz), dz));
  }
  __m512 s = _mm512_mul_ps(dx, dx);
  s = _mm512_fmadd_ps(dy, dy, s);
  s = _mm512_fmadd_ps(dz, dz, s);
  __m512i idx;
  __mmask16 k = 0;
  if (kind & CPU_K_LOG) {
    /* the edge coordinate P from log2 s (cpu_log2_1p, the same fused
     * operations), its floor clamped to [-1, count] the slot - 1; near an
     * integer, or for small s, the lane is redone (cpu.c's bound) */
    const __m512 t = _mm512_sub_ps(_mm512_getmant_ps(s, _MM_MANT_NORM_1_2, _MM_MANT_SIGN_zero),
                                   _mm512_set1_ps(1.0f));
    __m512 l2 = _mm512_set1_ps(cpu_log2_coef[6]);
    for (int d = 5; d >= 0; d--)
      l2 = _mm512_fmadd_ps(l2, t, _mm512_set1_ps(cpu_log2_coef[d]));
    const __m512 sv = _mm512_add_ps(_mm512_sub_ps(_mm512_getexp_ps(s), _mm512_set1_ps(c->lg0)),
                                    _mm512_sub_ps(l2, _mm512_set1_ps(c->lf0)));
    const __m512 pos = _mm512_mul_ps(sv, _mm512_set1_ps(c->lc1));
    __m512 fl = _mm512_roundscale_ps(pos, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    fl = _mm512_min_ps(_mm512_max_ps(fl, _mm512_set1_ps(-1.0f)),
                       _mm512_set1_ps((float)(c->buckets - 1)));
    idx = _mm512_add_epi32(_mm512_cvttps_epi32(fl), _mm512_set1_epi32(1));
    const __m512 dist = _mm512_abs_ps(_mm512_sub_ps(
        pos, _mm512_roundscale_ps(pos, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)));
    k = _mm512_cmp_ps_mask(dist, _mm512_set1_ps(c->ltau), _CMP_LT_OQ);
    k |= _mm512_cmp_ps_mask(s, _mm512_set1_ps(c->lsmin), _CMP_LT_OQ) &
         _mm512_cmp_ps_mask(s, _mm512_set1_ps(c->lsbelow), _CMP_GT_OQ);
    k &= valid;
  } else if (kind & CPU_K_EDGES) {
    const __m512 q = _mm512_min_ps(_mm512_sqrt_ps(s), clamp);
    /* clamp is etop: the cell from q's bits, the slot from the table, one
     * comparison with the cell's edge; near it, or in a cell with two
     * edges, the lane is redone */
    __m512i cell = _mm512_sub_epi32(_mm512_srli_epi32(_mm512_castps_si512(q), (int)c->eshift),
                                    _mm512_set1_epi32((int)c->ebase));
    cell = _mm512_max_epi32(cell, _mm512_setzero_si512());
    const long long *tab = (const long long *)c->etab;
    __m512i e0 = _mm512_i32gather_epi64(_mm512_castsi512_si256(cell), tab, 8);
    __m512i e1 = _mm512_i32gather_epi64(_mm512_extracti64x4_epi64(cell, 1), tab, 8);
    const __m512i lo = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    __m512i ent = _mm512_permutex2var_epi32(e0, lo, e1);
    __m512 thr = _mm512_castsi512_ps(
        _mm512_permutex2var_epi32(e0, _mm512_add_epi32(lo, _mm512_set1_epi32(1)), e1));
    __mmask16 up = _mm512_cmp_ps_mask(q, thr, _CMP_GE_OQ);
    idx = _mm512_and_si512(ent, _mm512_set1_epi32(0x7FFFFFFF));
    idx = _mm512_mask_add_epi32(idx, up, idx, _mm512_set1_epi32(1));
    __m512 tol = _mm512_fmadd_ps(_mm512_add_ps(q, thr), _mm512_set1_ps(c->erel),
                                 _mm512_set1_ps(c->eabs));
    k = _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_sub_ps(q, thr)), tol, _CMP_LT_OQ);
    k = (k | _mm512_test_epi32_mask(ent, _mm512_set1_epi32((int)CPU_EDGE_AMBIG))) & valid;
  } else {
    const __m512 q = _mm512_min_ps(_mm512_sqrt_ps(s), clamp);
    idx = _mm512_cvttps_epi32(q);
    if (exact) {
      __m512 r = _mm512_roundscale_ps(q, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      __m512 dist = _mm512_abs_ps(_mm512_sub_ps(q, r));
      k = _mm512_cmp_ps_mask(q, _mm512_set1_ps(0.5f), _CMP_GE_OQ);
      k = _mm512_mask_cmp_ps_mask(k & valid, dist, delta, _CMP_LT_OQ);
    }
  }
  __m512i widx = idx; /* the record: a slot's (and lane's), or the lane's spare */
  if (kind & CPU_K_WEIGHTS) {
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i spare = _mm512_add_epi32(_mm512_set1_epi32((int)(c->stride << c->wshift)), lane);
    const __m512i own =
        _mm512_add_epi32(_mm512_sllv_epi32(idx, _mm512_set1_epi32((int)c->wshift)),
                         _mm512_and_si512(lane, _mm512_set1_epi32((int)(1u << c->wshift) - 1)));
    widx = _mm512_mask_blend_epi32(valid & (__mmask16)~k, spare, own);
  }
  if (!pairs)
    idx = _mm512_add_epi32(idx, off);
  if (__builtin_expect(k != 0, 0))
    *refined += redo_lanes(c, i, j, k, h + c->redo_base);
  if (kind & CPU_K_WEIGHTS) {
    /* each lane adds {1, fl(w_i w_j)} to its 16-byte record (cpu_internal.h):
     * its pair and its weight in one read-modify-write */
    const __m512d wi = _mm512_set1_pd(c->wa[i]), one = _mm512_set1_pd(1.0);
    const __m512d p0 = _mm512_mul_pd(wi, _mm512_loadu_pd(c->wb + j));
    const __m512d p1 = _mm512_mul_pd(wi, _mm512_loadu_pd(c->wb + j + 8));
    /* lane 2m of 8 is unpacklo's 128-bit part m, lane 2m + 1 unpackhi's */
    const __m512d lo0 = _mm512_unpacklo_pd(one, p0), hi0 = _mm512_unpackhi_pd(one, p0);
    const __m512d lo1 = _mm512_unpacklo_pd(one, p1), hi1 = _mm512_unpackhi_pd(one, p1);
    uint32_t off16[16] __attribute__((aligned(64))); /* the records' byte offsets */
    double rec[32] __attribute__((aligned(64)));
    _mm512_store_si512(off16, _mm512_slli_epi32(widx, 4));
    _mm512_store_pd(rec, lo0);
    _mm512_store_pd(rec + 8, hi0);
    _mm512_store_pd(rec + 16, lo1);
    _mm512_store_pd(rec + 24, hi1);
    for (int l = 0; l < 16; l++) {
      /* lane l = 8h + 2m + e: rec[16h + 8e + 2m] */
      const double *v = rec + 16 * (l >> 3) + 8 * (l & 1) + 2 * ((l & 7) >> 1);
      double *r = (double *)(void *)(wacc + off16[l]);
      _mm_storeu_pd(r, _mm_add_pd(_mm_loadu_pd(r), _mm_load_pd(v)));
    }
    return;
  }
  __mmask16 bad = (__mmask16)~valid | k;
  if (bad)
    idx = _mm512_mask_blend_epi32(bad, idx, _mm512_set1_epi32((int)c->buckets + 1));
  if (pairs) {
    __m512i cell = _mm512_add_epi64(_mm512_mul_epu32(idx, _mm512_set1_epi64(c->pair_stride)),
                                    _mm512_srli_epi64(idx, 32));
    INCREMENT8(h, _mm512_cvtepi64_epi32(cell));
  } else {
    INCREMENT16(h, idx);
  }
}

/* Folds the weights' records into the counts (copy 0) and the Neumaier sums
 * (the bound is in cpu_internal.h), scanning them four at a time, as most
 * of them stay empty. */
TGT512 static void fold512(const cpu_ctx *c, uint32_t *h) {
  double *acc = cpu_wsums(c, h), *sum = acc + cpu_wacc(c), *err = sum + c->stride;
  uint32_t *h0 = h + c->redo_base;
  const size_t n = cpu_wacc(c) / 2; /* records */
  for (size_t t0 = 0; t0 < n; t0 += 4) {
    const __mmask8 in = n - t0 >= 4 ? 0xFF : (__mmask8)((1u << (2 * (n - t0))) - 1);
    __mmask8 nz = _mm512_mask_cmp_pd_mask(in & 0x55, _mm512_maskz_loadu_pd(in, acc + 2 * t0),
                                          _mm512_setzero_pd(), _CMP_NEQ_UQ);
    while (nz) {
      const size_t t = t0 + (size_t)__builtin_ctz(nz) / 2;
      nz &= (__mmask8)(nz - 1);
      const size_t slot = t >> c->wshift; /* beyond buckets: a spare */
      if (slot <= c->buckets) {
        h0[slot] += (uint32_t)acc[2 * t];
        histd_ev_neumaier(&sum[slot], &err[slot], acc[2 * t + 1]);
      }
      acc[2 * t] = acc[2 * t + 1] = 0;
    }
  }
  if (c->kind & CPU_K_GROUPS) {
    double *gs = cpu_gsums(c, h);
    for (uint32_t s = 0; s <= c->buckets; s++)
      if (gs[s] != 0) {
        histd_ev_neumaier(&sum[s], &err[s], gs[s]);
        gs[s] = 0;
      }
  }
}

TGT512 static inline __attribute__((always_inline)) void
f32_pblock512(const cpu_ctx *c, size_t i0, size_t i1, size_t j0, size_t j1, bool diag,
              uint32_t *h, uint64_t *refined, const bool exact, const bool pairs,
              const unsigned kind) {
  const __m512i off = lane_offsets16(c);
  const __m512 clamp = _mm512_set1_ps((kind & CPU_K_EDGES) ? c->etop : c->clamp);
  const __m512 delta = _mm512_set1_ps(c->delta);
  char *wacc = (kind & CPU_K_WEIGHTS) ? (char *)cpu_wsums(c, h) : NULL; /* the records */
  uint32_t steps = 0; /* CPU_K_WEIGHTS: vector steps since the last fold */
  for (size_t i = i0; i < i1; i++) {
    const __m512 xi = _mm512_set1_ps(c->px[i]);
    const __m512 yi = _mm512_set1_ps(c->py[i]);
    const __m512 zi = _mm512_set1_ps(c->pz[i]);
    size_t j = diag ? i + 1 : j0;
    for (; j + 16 <= j1; j += 16) {
      f32_pstep512(c, i, j, 0xFFFF, xi, yi, zi, off, clamp, delta, h, wacc, refined, exact,
                   pairs, kind);
      if ((kind & CPU_K_WEIGHTS) && ++steps == c->wfold) {
        fold512(c, h);
        steps = 0;
      }
    }
    if (j < j1) {
      f32_pstep512(c, i, j, (__mmask16)((1u << (j1 - j)) - 1), xi, yi, zi, off, clamp, delta,
                   h, wacc, refined, exact, pairs, kind);
      if ((kind & CPU_K_WEIGHTS) && ++steps == c->wfold) {
        fold512(c, h);
        steps = 0;
      }
    }
  }
  if (kind & CPU_K_WEIGHTS)
    fold512(c, h);
}

/*
 * Weights in groups (CPU_K_GROUPS; cpu.c's "Groups" has the bound). A and
 * B come in Morton order, so 16 consecutive points lie close together: a
 * group. For a pair of groups (GA rows of A, 16 lanes of B), the boxes
 * bound s, and the thresholds of cpu_ctx.gsp/gsm tell which slots k0 ..
 * k0 + M their pairs can reach. With M <= GT the rows go through gpair512:
 * M comparisons give each lane its slot (two where a lane could sit within
 * the bound of a threshold: then it is redone), and the products add into
 * M + 1 slot sums held in registers, the pairs into M + 1 counts, with no
 * memory traffic and no function call (the lanes to redo wait in a queue).
 * The group pair ends by adding each slot's 16 lane sums (a tree of depth
 * 4) to its groups' sum (cpu_gsums), folded with the records. Wider group
 * pairs (near ones, at small distances, where the bins are narrow) take
 * f32_pstep512's records.
 */
#define GA 16  /* rows of A in a group */
#define GT 8    /* thresholds a group pair tests lane by lane at most */
#define GFOLD 256 /* group pairs between two folds (the bound) */

/* The box of the points j.. in v of one set (float32, centred). */
TGT512 static inline __attribute__((always_inline)) void
box16(const float *x, const float *y, const float *z, size_t j, __mmask16 v, float lo[3],
      float hi[3]) {
  const __m512 X = _mm512_maskz_loadu_ps(v, x + j), Y = _mm512_maskz_loadu_ps(v, y + j),
               Z = _mm512_maskz_loadu_ps(v, z + j);
  lo[0] = _mm512_mask_reduce_min_ps(v, X);
  hi[0] = _mm512_mask_reduce_max_ps(v, X);
  lo[1] = _mm512_mask_reduce_min_ps(v, Y);
  hi[1] = _mm512_mask_reduce_max_ps(v, Y);
  lo[2] = _mm512_mask_reduce_min_ps(v, Z);
  hi[2] = _mm512_mask_reduce_max_ps(v, Z);
}

/* Of B's lanes j.., those past A's row i (self pairs in one range: j > i). */
static inline __mmask16 after_row(size_t i, size_t j) {
  return i < j ? 0xFFFF : (__mmask16)(i - j + 1 < 16 ? 0xFFFFu << (i - j + 1) : 0);
}

/* #{t < n : S[t] <= v}, S ascending. */
static inline uint32_t count_le(const float *S, uint32_t n, double v) {
  uint32_t lo = 0, hi = n;
  while (lo < hi) {
    const uint32_t mid = lo + (hi - lo) / 2;
    if ((double)S[mid] <= v)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* The rows [i0, i1) against B's lanes vj of j.. (with diag, only j > i),
 * M thresholds from k0: slot sums and counts in registers, added to the
 * groups' sums and the counts at the end. Returns the redo queue's length
 * (rows rq_i, lanes rq_m). */
TGT512 static inline __attribute__((always_inline)) int
gpair512(const cpu_ctx *c, size_t i0, size_t i1, size_t j, __mmask16 vj, bool diag,
         uint32_t k0, const int M, uint32_t *h0, double *gs, size_t *rq_i, __mmask16 *rq_m) {
  const __m512 bx = _mm512_maskz_loadu_ps(vj, c->qx + j), by = _mm512_maskz_loadu_ps(vj, c->qy + j),
               bz = _mm512_maskz_loadu_ps(vj, c->qz + j);
  const __m512d w0 = _mm512_loadu_pd(c->wb + j), w1 = _mm512_loadu_pd(c->wb + j + 8);
  __m512 sp[GT], sm[GT];
  for (int t = 0; t < M; t++) {
    sp[t] = _mm512_set1_ps(c->gsp[k0 + (uint32_t)t]);
    sm[t] = _mm512_set1_ps(c->gsm[k0 + (uint32_t)t]);
  }
  __m512d acc[GT + 1][2];
  uint32_t cnt[GT + 1];
  for (int r = 0; r <= M; r++) {
    acc[r][0] = acc[r][1] = _mm512_setzero_pd();
    cnt[r] = 0;
  }
  int nq = 0;
  for (size_t i = i0; i < i1; i++) {
    __mmask16 use = diag ? vj & after_row(i, j) : vj;
    const __m512 dx = _mm512_sub_ps(_mm512_set1_ps(c->px[i]), bx);
    const __m512 dy = _mm512_sub_ps(_mm512_set1_ps(c->py[i]), by);
    const __m512 dz = _mm512_sub_ps(_mm512_set1_ps(c->pz[i]), bz);
    __m512 s = _mm512_mul_ps(dx, dx);
    s = _mm512_fmadd_ps(dy, dy, s);
    s = _mm512_fmadd_ps(dz, dz, s);
    __mmask16 above[GT], amb = 0;
    for (int t = 0; t < M; t++) {
      above[t] = _mm512_mask_cmp_ps_mask(use, s, sp[t], _CMP_GE_OQ);
      amb |= _mm512_mask_cmp_ps_mask(use, s, sm[t], _CMP_GE_OQ) & (__mmask16)~above[t];
    }
    if (__builtin_expect(amb != 0, 0)) {
      rq_i[nq] = i;
      rq_m[nq++] = amb;
      use &= (__mmask16)~amb;
    }
    const __m512d wi = _mm512_set1_pd(c->wa[i]);
    const __m512d p0 = _mm512_mul_pd(wi, w0), p1 = _mm512_mul_pd(wi, w1);
    for (int r = 0; r <= M; r++) {
      __mmask16 m = use;
      if (r > 0)
        m &= above[r - 1];
      if (r < M)
        m &= (__mmask16)~above[r];
      acc[r][0] = _mm512_mask_add_pd(acc[r][0], (__mmask8)m, acc[r][0], p0);
      acc[r][1] = _mm512_mask_add_pd(acc[r][1], (__mmask8)(m >> 8), acc[r][1], p1);
      cnt[r] += (uint32_t)__builtin_popcount(m);
    }
  }
  for (int r = 0; r <= M; r++)
    if (cnt[r] != 0) {
      h0[k0 + (uint32_t)r] += cnt[r];
      gs[k0 + (uint32_t)r] += _mm512_reduce_add_pd(_mm512_add_pd(acc[r][0], acc[r][1]));
    }
  return nq;
}

TGT512 static inline __attribute__((always_inline)) void
f32_gblock512(const cpu_ctx *c, size_t i0, size_t i1, size_t j0, size_t j1, bool diag,
              uint32_t *h, uint64_t *refined, const unsigned kind) {
  const unsigned skind = kind & ~(unsigned)CPU_K_GROUPS; /* the records' loop */
  const __m512i off = lane_offsets16(c);
  const __m512 clamp = _mm512_set1_ps((kind & CPU_K_EDGES) ? c->etop : c->clamp);
  const __m512 delta = _mm512_set1_ps(c->delta);
  char *wacc = (char *)cpu_wsums(c, h);
  double *gs = cpu_gsums(c, h);
  uint32_t *h0 = h + c->redo_base;
  uint32_t steps = 0, gpairs = 0; /* since the last fold */
  size_t rq_i[GA];
  __mmask16 rq_m[GA];
  /* B's boxes, once per block (its groups start at j0 + 16 k, diag too as
   * i0 = j0 then; cpu.c's tiles hold at most 4096 points) */
  float bb[4096 / 16][6];
  for (size_t j = j0; j < j1; j += 16)
    box16(c->qx, c->qy, c->qz, j, j + 16 <= j1 ? 0xFFFF : (__mmask16)((1u << (j1 - j)) - 1),
          bb[(j - j0) / 16], bb[(j - j0) / 16] + 3);
  for (size_t ia = i0; ia < i1; ia += GA) {
    const size_t ib = ia + GA < i1 ? ia + GA : i1;
    float alo[3], ahi[3];
    box16(c->px, c->py, c->pz, ia, (__mmask16)((1u << (ib - ia)) - 1), alo, ahi);
    for (size_t j = diag ? ia : j0; j < j1; j += 16) {
      const __mmask16 vj = j + 16 <= j1 ? 0xFFFF : (__mmask16)((1u << (j1 - j)) - 1);
      const float *blo = bb[(j - j0) / 16], *bhi = blo + 3;
      double smin = 0, smax = 0;
      for (int ax = 0; ax < 3; ax++) {
        const double g1 = (double)alo[ax] - bhi[ax], g2 = (double)blo[ax] - ahi[ax];
        const double gap = g1 > g2 ? g1 : g2, far = fmax((double)ahi[ax] - blo[ax],
                                                         (double)bhi[ax] - alo[ax]);
        smin += gap > 0 ? gap * gap : 0;
        smax += far * far;
      }
      /* every lane's float32 s lies in [smin', smax'] (cpu.c) */
      const uint32_t k0 = count_le(c->gsp, c->gn, smin * (1 - 0x1p-20) - 0x1p-140);
      const uint32_t k1 = count_le(c->gsm, c->gn, smax * (1 + 0x1p-20) + 0x1p-140);
      int nq;
      switch (k1 - k0) {
      case 0: nq = gpair512(c, ia, ib, j, vj, diag, k0, 0, h0, gs, rq_i, rq_m); break;
      case 1: nq = gpair512(c, ia, ib, j, vj, diag, k0, 1, h0, gs, rq_i, rq_m); break;
      case 2: nq = gpair512(c, ia, ib, j, vj, diag, k0, 2, h0, gs, rq_i, rq_m); break;
      case 3: nq = gpair512(c, ia, ib, j, vj, diag, k0, 3, h0, gs, rq_i, rq_m); break;
      case 4: nq = gpair512(c, ia, ib, j, vj, diag, k0, 4, h0, gs, rq_i, rq_m); break;
      case 5: nq = gpair512(c, ia, ib, j, vj, diag, k0, 5, h0, gs, rq_i, rq_m); break;
      case 6: nq = gpair512(c, ia, ib, j, vj, diag, k0, 6, h0, gs, rq_i, rq_m); break;
      case 7: nq = gpair512(c, ia, ib, j, vj, diag, k0, 7, h0, gs, rq_i, rq_m); break;
      case 8: nq = gpair512(c, ia, ib, j, vj, diag, k0, 8, h0, gs, rq_i, rq_m); break;
      default: /* wide: the records, a row at a time */
        nq = 0;
        for (size_t i = ia; i < ib; i++) {
          const __mmask16 v = diag ? vj & after_row(i, j) : vj;
          if (v == 0)
            continue;
          f32_pstep512(c, i, j, v, _mm512_set1_ps(c->px[i]), _mm512_set1_ps(c->py[i]),
                       _mm512_set1_ps(c->pz[i]), off, clamp, delta, h, wacc, refined, true,
                       false, skind);
          if (++steps == c->wfold) {
            fold512(c, h);
            steps = gpairs = 0;
          }
        }
      }
      for (int q = 0; q < nq; q++)
        *refined += redo_lanes(c, rq_i[q], j, rq_m[q], h0);
      if (++gpairs == GFOLD) {
        fold512(c, h);
        steps = gpairs = 0;
      }
    }
  }
  fold512(c, h);
}

/* The instances: the plain loops (pairs table or copies, exact or fast)
 * and the statistics loops, always exact, one per CPU_K_* combination. */
#define F32_512(name, exact, pairs, kind)                                                 \
  TGT512 static void name(const cpu_ctx *c, size_t i0, size_t i1, size_t j0, size_t j1,  \
                          bool diag, uint32_t *h, uint64_t *refined) {                   \
    f32_pblock512(c, i0, i1, j0, j1, diag, h, refined, exact, pairs, kind);              \
  }
F32_512(f32_exact512_pairs, true, true, 0)
F32_512(f32_fast512_pairs, false, true, 0)
F32_512(f32_exact512, true, false, 0)
F32_512(f32_fast512, false, false, 0)
#define STATS_512(k)                                                                     \
  F32_512(f32_stats512_##k, true, false, k)                                                \
  F32_512(f32_stats512_pairs_##k, true, true, k)
STATS_512(1)
STATS_512(2)
STATS_512(3)
STATS_512(10)
STATS_512(11)
/* with weights, a lane's pair is counted in its record: no bucket-pair table */
F32_512(f32_stats512_4, true, false, 4)
F32_512(f32_stats512_5, true, false, 5)
F32_512(f32_stats512_6, true, false, 6)
F32_512(f32_stats512_7, true, false, 7)
F32_512(f32_stats512_14, true, false, 14)
F32_512(f32_stats512_15, true, false, 15)

/* the groups: weighted, open, width or edges (log or not) */
#define GROUPS_512(k)                                                                    \
  TGT512 static void f32_groups512_##k(const cpu_ctx *c, size_t i0, size_t i1, size_t j0,\
                                       size_t j1, bool diag, uint32_t *h, uint64_t *refined) { \
    f32_gblock512(c, i0, i1, j0, j1, diag, h, refined, k | CPU_K_GROUPS);               \
  }
GROUPS_512(4)
GROUPS_512(6)
GROUPS_512(14)

/* by kind; CPU_K_LOG comes only with CPU_K_EDGES */
static const cpu_block_fn stats512[2][16] = {
    {f32_exact512, f32_stats512_1, f32_stats512_2, f32_stats512_3, f32_stats512_4,
     f32_stats512_5, f32_stats512_6, f32_stats512_7, NULL, NULL, f32_stats512_10,
     f32_stats512_11, NULL, NULL, f32_stats512_14, f32_stats512_15},
    {f32_exact512_pairs, f32_stats512_pairs_1, f32_stats512_pairs_2, f32_stats512_pairs_3,
     NULL, NULL, NULL, NULL, NULL, NULL, f32_stats512_pairs_10, f32_stats512_pairs_11, NULL,
     NULL, NULL, NULL}};

TGT512 static inline __attribute__((always_inline)) void f64_step512(const cpu_ctx *c, size_t j, __mmask8 valid, __m512d xi,
                                      __m512d yi, __m512d zi, __m256i off, uint32_t *h) {
  __m512d dx = _mm512_sub_pd(xi, _mm512_maskz_loadu_pd(valid, c->x + j));
  __m512d dy = _mm512_sub_pd(yi, _mm512_maskz_loadu_pd(valid, c->y + j));
  __m512d dz = _mm512_sub_pd(zi, _mm512_maskz_loadu_pd(valid, c->z + j));
  __m512d s = _mm512_add_pd(_mm512_mul_pd(dx, dx), _mm512_mul_pd(dy, dy));
  s = _mm512_add_pd(s, _mm512_mul_pd(dz, dz));
  __m512d q = _mm512_div_pd(_mm512_sqrt_pd(s), _mm512_set1_pd(c->width));
  __m512d b = _mm512_roundscale_pd(q, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  b = _mm512_min_pd(b, _mm512_set1_pd((double)c->buckets)); /* +inf -> overflow */
  __m256i idx = _mm256_add_epi32(_mm512_cvttpd_epi32(b), off);
  if (valid != 0xFF)
    idx = _mm256_mask_blend_epi32(valid, _mm256_set1_epi32((int)c->buckets + 1), idx);
  uint32_t buf[8] __attribute__((aligned(32)));
  _mm256_store_si256((__m256i *)buf, idx);
  for (int k = 0; k < 8; k++)
    h[buf[k]]++;
}

TGT512 static void f64_block512(const cpu_ctx *c, size_t i0, size_t i1, size_t j0, size_t j1,
                                bool diag, uint32_t *h, uint64_t *refined) {
  (void)refined;
  uint32_t o[8];
  for (int l = 0; l < 8; l++)
    o[l] = (uint32_t)(l & (int)(c->copies - 1)) * c->stride;
  const __m256i off = _mm256_loadu_si256((const __m256i *)o);
  for (size_t i = i0; i < i1; i++) {
    const __m512d xi = _mm512_set1_pd(c->x[i]);
    const __m512d yi = _mm512_set1_pd(c->y[i]);
    const __m512d zi = _mm512_set1_pd(c->z[i]);
    size_t j = diag ? i + 1 : j0;
    for (; j + 8 <= j1; j += 8)
      f64_step512(c, j, 0xFF, xi, yi, zi, off, h);
    if (j < j1)
      f64_step512(c, j, (__mmask8)((1u << (j1 - j)) - 1), xi, yi, zi, off, h);
  }
}

/* ---- AVX2 + FMA --------------------------------------------------------- */

TGT256 static inline __m256i tail_mask8(size_t n) {
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), lanes);
}

TGT256 static inline __attribute__((always_inline)) void f32_step256(const cpu_ctx *c, size_t i, size_t j, size_t nvalid,
                                      __m256 xi, __m256 yi, __m256 zi, __m256i off,
                                      __m256i trash, uint32_t *h, uint64_t *refined,
                                      const bool exact) {
  __m256 px, py, pz;
  __m256i vmask = _mm256_set1_epi32(-1);
  if (nvalid >= 8) {
    px = _mm256_loadu_ps(c->px + j);
    py = _mm256_loadu_ps(c->py + j);
    pz = _mm256_loadu_ps(c->pz + j);
  } else {
    vmask = tail_mask8(nvalid);
    px = _mm256_maskload_ps(c->px + j, vmask);
    py = _mm256_maskload_ps(c->py + j, vmask);
    pz = _mm256_maskload_ps(c->pz + j, vmask);
  }
  __m256 dx = _mm256_sub_ps(xi, px);
  __m256 dy = _mm256_sub_ps(yi, py);
  __m256 dz = _mm256_sub_ps(zi, pz);
  __m256 s = _mm256_mul_ps(dx, dx);
  s = _mm256_fmadd_ps(dy, dy, s);
  s = _mm256_fmadd_ps(dz, dz, s);
  __m256 q = _mm256_min_ps(_mm256_sqrt_ps(s), _mm256_set1_ps(c->clamp));
  __m256i idx = _mm256_add_epi32(_mm256_cvttps_epi32(q), off);
  unsigned valid = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(vmask));
  unsigned bad = ~valid & 0xFFu;
  if (exact) {
    __m256 r = _mm256_round_ps(q, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 dist = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), _mm256_sub_ps(q, r));
    __m256 k = _mm256_and_ps(_mm256_cmp_ps(q, _mm256_set1_ps(0.5f), _CMP_GE_OQ),
                             _mm256_cmp_ps(dist, _mm256_set1_ps(c->delta), _CMP_LT_OQ));
    unsigned near = (unsigned)_mm256_movemask_ps(k) & valid;
    if (__builtin_expect(near != 0, 0))
      *refined += redo_lanes(c, i, j, near, h);
    bad |= near;
  }
  if (bad) {
    const __m256i bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    __m256i m = _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32((int)bad), bit), bit);
    idx = _mm256_blendv_epi8(idx, trash, m);
  }
  uint32_t buf[8] __attribute__((aligned(32)));
  _mm256_store_si256((__m256i *)buf, idx);
  for (int k = 0; k < 8; k++)
    h[buf[k]]++;
}

TGT256 static inline __attribute__((always_inline)) void f32_block256(const cpu_ctx *c, size_t i0, size_t i1, size_t j0,
                                       size_t j1, bool diag, uint32_t *h, uint64_t *refined,
                                       const bool exact) {
  uint32_t o[8];
  for (int l = 0; l < 8; l++)
    o[l] = (uint32_t)(l & (int)(c->copies - 1)) * c->stride;
  const __m256i off = _mm256_loadu_si256((const __m256i *)o);
  const __m256i trash = _mm256_set1_epi32((int)c->buckets + 1);
  for (size_t i = i0; i < i1; i++) {
    const __m256 xi = _mm256_set1_ps(c->px[i]);
    const __m256 yi = _mm256_set1_ps(c->py[i]);
    const __m256 zi = _mm256_set1_ps(c->pz[i]);
    size_t j = diag ? i + 1 : j0;
    for (; j + 8 <= j1; j += 8)
      f32_step256(c, i, j, 8, xi, yi, zi, off, trash, h, refined, exact);
    if (j < j1)
      f32_step256(c, i, j, j1 - j, xi, yi, zi, off, trash, h, refined, exact);
  }
}

TGT256 static void f32_exact256(const cpu_ctx *c, size_t i0, size_t i1, size_t j0, size_t j1,
                                bool diag, uint32_t *h, uint64_t *refined) {
  f32_block256(c, i0, i1, j0, j1, diag, h, refined, true);
}

TGT256 static void f32_fast256(const cpu_ctx *c, size_t i0, size_t i1, size_t j0, size_t j1,
                               bool diag, uint32_t *h, uint64_t *refined) {
  f32_block256(c, i0, i1, j0, j1, diag, h, refined, false);
}

TGT256 static void f64_block256(const cpu_ctx *c, size_t i0, size_t i1, size_t j0, size_t j1,
                                bool diag, uint32_t *h, uint64_t *refined) {
  (void)refined;
  const __m256d w = _mm256_set1_pd(c->width);
  const __m256d nb = _mm256_set1_pd((double)c->buckets);
  const __m128i off = _mm_setr_epi32(0, (int)((1u & (c->copies - 1)) * c->stride),
                                     (int)((2u & (c->copies - 1)) * c->stride),
                                     (int)((3u & (c->copies - 1)) * c->stride));
  for (size_t i = i0; i < i1; i++) {
    const __m256d xi = _mm256_set1_pd(c->x[i]);
    const __m256d yi = _mm256_set1_pd(c->y[i]);
    const __m256d zi = _mm256_set1_pd(c->z[i]);
    size_t j = diag ? i + 1 : j0;
    for (; j + 4 <= j1; j += 4) {
      __m256d dx = _mm256_sub_pd(xi, _mm256_loadu_pd(c->x + j));
      __m256d dy = _mm256_sub_pd(yi, _mm256_loadu_pd(c->y + j));
      __m256d dz = _mm256_sub_pd(zi, _mm256_loadu_pd(c->z + j));
      __m256d s = _mm256_add_pd(_mm256_mul_pd(dx, dx), _mm256_mul_pd(dy, dy));
      s = _mm256_add_pd(s, _mm256_mul_pd(dz, dz));
      __m256d q = _mm256_div_pd(_mm256_sqrt_pd(s), w);
      __m256d b = _mm256_min_pd(_mm256_floor_pd(q), nb);
      __m128i idx = _mm_add_epi32(_mm256_cvttpd_epi32(b), off);
      uint32_t buf[4] __attribute__((aligned(16)));
      _mm_store_si128((__m128i *)buf, idx);
      h[buf[0]]++;
      h[buf[1]]++;
      h[buf[2]]++;
      h[buf[3]]++;
    }
    for (; j < j1; j++)
      h[cpu_exact_index(c, i, j)]++;
  }
}

#endif /* x86-64 */

bool histd__cpu_isa_supported(cpu_isa isa) {
  switch (isa) {
  case CPU_ISA_GENERIC:
    return true;
#ifdef HISTD_HAVE_X86_SIMD
  case CPU_ISA_AVX2:
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  case CPU_ISA_AVX512:
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx2") &&
           __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi2");
#endif
  default:
    return false;
  }
}

cpu_block_fn histd__cpu_simd_block(cpu_isa isa, cpu_path path, bool exact, bool pairs,
                                   unsigned kind) {
#ifdef HISTD_HAVE_X86_SIMD
  if (kind != 0) { /* the statistics: AVX-512 float32 only */
    if (isa != CPU_ISA_AVX512 || path != CPU_PATH_F32)
      return NULL;
    if (!(kind & CPU_K_GROUPS))
      return stats512[pairs][kind & 15];
    return kind == (4 | CPU_K_GROUPS)    ? f32_groups512_4
           : kind == (6 | CPU_K_GROUPS)  ? f32_groups512_6
           : kind == (14 | CPU_K_GROUPS) ? f32_groups512_14
                                         : NULL;
  }
  if (isa == CPU_ISA_AVX512)
    return path == CPU_PATH_F64 ? f64_block512
           : pairs              ? (exact ? f32_exact512_pairs : f32_fast512_pairs)
           : exact              ? f32_exact512
                                : f32_fast512;
  if (isa == CPU_ISA_AVX2)
    return path == CPU_PATH_F64 ? f64_block256 : exact ? f32_exact256 : f32_fast256;
#else
  (void)isa;
  (void)path;
  (void)exact;
  (void)pairs;
  (void)kind;
#endif
  return NULL;
}
