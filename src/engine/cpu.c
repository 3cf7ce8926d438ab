/*
 * cpu.c -- the kernel "cpu": the contract on every core, fast.
 *
 * Work. The triangle i < j is cut into tiles of T points (T = 1024); a task
 * is a tile pair (I, J) with I <= J (a rectangle, or a triangle when I = J).
 * Threads claim tasks from one atomic counter, so they stay busy to the
 * end. After each task (at most T*T = 1 Mi pairs, about a millisecond) a
 * thread reports progress and polls the cancel flag.
 *
 * Grid (the kernel "grid", grid.h): the points sorted by cell, and a task
 * is a run of cells holding about 256 points of A; each cell's blocks (its
 * own pairs, and its runs of neighbour cells) go through the same loops,
 * cut into tiles, and the pairs no cell meets are overflow by arithmetic.
 * The grid's candidates spread over every bin, so it keeps a histogram
 * copy per lane while they fit in 16 KiB (L1_HIST_BYTES_GRID).
 *
 * Counting. Each thread counts into private 32-bit counters, added into
 * the 64-bit result under a lock before any could wrap (every 2^32 - T*T
 * pairs) and at the end. Slot `buckets` is overflow and slot `buckets + 1`
 * a trash slot for masked-off lanes. The scalar increments, not the
 * arithmetic, limit the loop (on Zen 4 the arithmetic alone runs ~3.7e9
 * pairs/s per core, with the increments ~1.4e9), so:
 *   - with few buckets (a (buckets+2)^2 table fits in 32 KiB) the AVX-512
 *     loop counts lanes two by two in a table of bucket pairs: half the
 *     increments; the flush adds each cell to both its buckets;
 *   - otherwise lanes count into `copies` interleaved histogram copies
 *     (lane mod copies), a few only: more copies measured slower on Zen 4.
 *
 * Arithmetic. Two paths:
 *
 *   F64: the contract's operations lane by lane (AVX-512 / AVX2 vectors of
 *   doubles, or scalar): IEEE add, mul, sqrt and div are correctly rounded
 *   in vectors as in scalars, and nothing is fused, so this is the
 *   definition itself.
 *
 *   F32 (the default when the bound below allows it): the points are
 *   centred on the bounding-box centre and divided by the width, then
 *   rounded to float32: p = fl32(fl64(fl64(x - cx) * fl64(1/w))). The
 *   estimate is q = fl32(sqrt(dx*dx + dy*dy + dz*dz)) in float32 (the
 *   vector loops may fuse the sums with FMA), and the bucket floor(q).
 *   A pair with q >= 0.5 and |q - rint(q)| < delta is redone with the
 *   contract in float64 on the original coordinates ("refined_pairs").
 *
 * The error bound (u = 2^-24, ud = 2^-53; everything in units of w, so the
 * exact real distance of the pair is D = |Xi - Xj| / w and the reference's
 * value is q_ref = fl(fl(sqrt(s))/w)). Let M >= max |(x - cx)/w| over every
 * coordinate.
 *  (1) Points: each of the four roundings is relative (ud, ud, ud, then u)
 *      plus an absolute 2^-149 where float32 goes subnormal, so every
 *      coordinate moves by at most eps = (u + 3.01 ud) M + 2^-149 and each
 *      point by sqrt(3) eps: the exact distance D_p of the float32 points
 *      has |D_p - D| <= 2 sqrt(3) eps (triangle inequality).
 *  (2) Float32 arithmetic on those points: dx = (pi - pj)(1 + a), |a| <= u;
 *      the sum of three non-negative squares, each rounded at most 5 times
 *      along its way (square of a rounded difference: 2, product: 1, two
 *      sums or FMAs: 2), is D_p^2 (1 + t) with |t| <= 5u/(1-5u), plus at
 *      most 5 * 2^-150 of float32 underflow; sqrt adds one rounding. So
 *      |q - D_p| <= 3.51 u D_p + 2^-73.
 *  (3) The reference in float64, by the same count: |q_ref - D| <= 4.51 ud D
 *      plus float64 underflow, at most 2^-536 / w <= 2^-56 as w >= 2^-480;
 *      it cannot overflow while every axis spans at most 2^500.
 *  Adding up, |q - q_ref| <= E = 6u Q + 2 sqrt(3) eps + 2^-50, where Q
 *  bounds the q of every lane that takes the edge test:
 *  Q = min(clamp, 2 sqrt(3) M) (1 + 2^-20) + 2^-100 (6u covers 3.51u +
 *  4.51ud + the second-order terms with room to spare). delta is E times
 *  (1 + 2^-10), rounded up to a float32. Then:
 *   - q >= 0.5 and |q - rint(q)| >= delta > E: no integer lies between q
 *     and q_ref, so floor(q) = floor(q_ref), the contract's bucket. (For
 *     q >= 0.5, q - rint(q) is exact in float32 by Sterbenz's lemma.)
 *   - q < 0.5: q_ref < 0.5 + delta < 1, bucket 0 = floor(q).
 *   - q >= clamp = min(buckets, 2^22) + 0.5: q_ref >= q - E(q) > buckets
 *     (E grows by only 6u per unit of q), so overflow, as counted.
 *  The F32 path is used only where that reasoning holds and pays off:
 *  M < 2^20 (float32 holds q and half-integers exactly; indices < 2^22),
 *  2^-480 <= w <= 2^1000, every axis spanning <= 2^500, and delta <= 1/32
 *  (at most ~6% of the pairs redone). Otherwise, or with huge coordinates
 *  and a tiny width (say 1e15 and 1e-3: M ~ 1e18), the F64 path runs.
 *  precision "fast" skips the redo and reports exact = false.
 *
 * For the benchmark workload (w = 500, 80 buckets, the 23000 box) delta is
 * about 3e-5 and about one pair in 20,000 is redone.
 *
 * The statistics (AVX-512 only: cpu_simd.c's f32_pstep512 with a CPU_K_*
 * kind; triclinic boxes, other ISAs, weights with more than 4096 bins and
 * data the bounds below refuse take the general float64 loop, pair_loop.c).
 * A x B: A's points are px, B's qx; the redo is histd/pair.h's own
 * histd_pair_d and bin functions (cpu_exact_index), so it is the contract.
 *
 * Periodic, orthorhombic box (L per axis; Lw = max L / w; Mr >= max |x| / w
 * over the raw coordinates of A and B). Each coordinate is wrapped in
 * float64, x' = x - L floor(x / L), then p = fl32(x' * fl(1/w)); the loop
 * takes per axis dx = fl32(pi - pj), a = |dx| and the image
 * m = min(a, fl32(fl32(Lw) - a)).
 *  (1p) x' is x - L k for an integer k (floor of a rounded quotient may be
 *      off by one: then x' lies a hair outside [0, L], which is harmless),
 *      within ud (|x| + 2L) of it; scaling and float32 add (u + 2.01 ud)
 *      relative, so p is within eps = ud (Mr + 2 Lw) + 1.02 (u + 2.01 ud) Lw
 *      + 2^-149 of (x - L k) / w, and pi - pj within 2 eps of
 *      y = (r - L K) / w (r = xi - xj exactly, K an integer), |y| <= 1.02 Lw.
 *  (2p) the exact image distance of y is dist(y, Lw Z) = min(|y|, Lw - |y|)
 *      in magnitude for |y| <= 1.5 Lw, a function 1-Lipschitz in y and in
 *      Lw; the roundings of dx, fl32(Lw) and Lw - a add u 1.02 Lw, u Lw and
 *      u 1.03 Lw. So each |m| is within e = 2 eps + 3.1 u Lw of the exact
 *      A = dist(r / w, Lw Z), whichever image either side picked: when r / L
 *      is near a half-integer both images are near L / 2 and only the
 *      magnitudes, which this bounds, reach the distance.
 *  (3p) the contract's wrap t = fl(fl(r) - fl(L nearbyint(fl(fl(r) / L))))
 *      is within ud (4 |r| + 2 L) <= ud (8 Mr + 2 Lw) w of A in magnitude
 *      (same argument: its nearbyint may pick the other image only within
 *      2 ud |r| of the half).
 *  The float32 sum of squares and sqrt of the m (3 roundings and a sqrt,
 *  inside (2)'s count) and the reference's (3) are unchanged, so the open
 *  case's E holds with its point term 2 sqrt(3) eps replaced by
 *  P = sqrt(3) (2 eps + 3.1 u Lw + ud (8 Mr + 2 Lw)), and Q = min(clamp,
 *  sqrt(3) Lw). Used where Lw < 2^20, Mr < 2^60 and delta <= 1/32 (S1:
 *  Lw = 400, delta ~ 2.5e-4 buckets).
 *
 * Explicit (and log) edges. The scale w is the power of two <= E[count],
 * so q_ref = d / w is exact and E[k] / w too (where they are normal
 * numbers: an edge below 2^-119 w, even one whose quotient underflows,
 * lies in the table's first cell, whose pairs are redone): the contract's
 * comparisons d >= E[k] are q_ref >= E[k] / w. Slot 0 is `below`, bin k
 * slot k + 1. Per lane |q - q_ref| <= E(q) = 6u q (1 + 2^-20) + P + 2^-50
 * (the bound above with Q = q). A table indexed by q's float32 bits (2^m
 * cells an octave from 2^-120 up, cells at most about half the narrowest
 * relative bin, at most 2^16 + 1 of them whatever the edges' range) gives
 * each cell a slot and the one edge (as a float32 thr) that the reach
 * [lo - E(hi), hi + E(hi)] of its q can cross; the lane's slot is the
 * cell's, plus one when q >= thr, and the lane is redone when
 * |q - thr| < (q + thr) erel + eabs, erel = 8u (1 + 2^-20) (covering 6u q,
 * thr's rounding u thr, and the float32 rounding of the test itself),
 * eabs = (P + 2^-50)(1 + 2^-10), or when the cell's reach holds two edges
 * or more (CPU_EDGE_AMBIG). Outside the test q_ref lies on the same side of
 * that edge as q, and no other edge lies within the reach, so the slot is
 * the contract's. q is clamped to etop = 2^ehi > 1.01 E[count] / w, whose
 * cell is overflow: q >= etop gives q_ref >= etop - E(etop) > E[count]/w.
 * Used where eabs <= 2^-12 (the scale puts E[count] / w in [1, 2)).
 *
 * Log-spaced edges (CPU_K_LOG: no table, no gather, no square root). The
 * model lambda(x) = (log2 x - g0 - f0) c1, with g0 an integer and f0, c1
 * float32 (g0 + f0 ~ log2 E[0]/w, c1 ~ count / log2(E[count] / E[0])),
 * puts edge k within mu of k: mu = max_k |lambda(E[k]/w) - k| + 2^-30,
 * measured here in float64 (the 2^-30 covers libm's log2), and the path is
 * taken only where mu <= 2^-10 (the edges are log-spaced). The loop works
 * on the float32 sum of squares s itself, lambda(sqrt s) = (log2 s - 2 g0 -
 * 2 f0) c1 / 2 (2 f0 and c1 / 2 exact in float32): P = fl(fl((getexp(s) -
 * 2 g0) + fl(L - 2 f0)) c1/2), L = cpu_log2_1p(getmant(s) - 1) (getexp,
 * getmant and the - 1 are exact for a normal s), |L - log2 mantissa| <= dL
 * = CPU_LOG2_ERR; the subtraction rounds by at most 2u, the sum by u |sum|,
 * the product by u |P|, so |P - lambda(sqrt s)| <= eta = c1 (dL + 2u) / 2
 * + 2.02 u |P|, and the lanes that matter have |P| <= count + 2.
 * With q = fl(sqrt s), |q - q_ref| <= A q + B as above (A = 6u (1 + 2^-20),
 * B = P + 2^-50, the point term), so |sqrt s - q_ref| <= A' sqrt s + B with
 * A' = A + 1.01 u, and for sqrt s >= 2^12 B, |lambda(sqrt s) -
 * lambda(q_ref)| <= c1 (A' + B / sqrt s) (1 + 2^-11) / ln 2 (as min(sqrt s,
 * q_ref) >= sqrt s (1 - A' - 2^-12)). Let T0 = eta + mu + c1 A' (1 + 2^-11)
 * / ln 2, T1 = c1 B (1 + 2^-11) / ln 2 and qmin = max(2^12 B, T1 / T0):
 * for sqrt s >= qmin the whole error is below tau = 2 T0 (1 + 2^-10). A lane
 * with s >= qmin^2 (rounded up) and |P - rint(P)| >= tau (exact: Sterbenz)
 * has lambda(q_ref) strictly between n + mu and n + 1 - mu for n =
 * floor(P), so E[n] / w < q_ref < E[n + 1] / w: bin n, or below for n < 0
 * (lambda(q_ref) < -mu <= lambda(E[0] / w)), or overflow for n >= count.
 * A lane with s <= qb^2 (rounded down), qb (1 + A') + B < E[0] / w, is
 * below (s = 0 included: getexp(0) = -inf gives P = -inf); the others
 * under qmin^2, and those within tau of an integer, are redone. Used where
 * tau <= 1/64 and c1 <= 2^12. S2 (80 bins over 0.1..23000): tau ~ 7e-5 and
 * qmin ~ 470 / w, so about one pair in 7,000 is redone.
 *
 * Weights: each lane adds {1, fl(w_i w_j)} to a 16-byte record per slot
 * (and lane, while the records fit in L1: lanes that share a slot then
 * form no chain of dependent adds through memory), its pair counted there
 * too, and the records fold into the counts and into Neumaier sums every
 * 4096 terms at most (cpu_internal.h states the bound: a bin within
 * 4.6e-13 of its sum of |w_i w_j|); the counts stay exact integers.
 *
 * Groups (weights, open space, AVX-512 float32; not under the grid, whose
 * cells order the points). A and B are copied in Morton order (morton.c),
 * so 16 consecutive points are a compact group, and cpu_simd.c's
 * f32_gblock512 takes pairs of groups. Each bin edge (edges: E[t] / w for
 * t = 0..count; width bins: t = 1..buckets) is a threshold thr, and the
 * contract's slot is the number of thresholds with q_ref >= thr. With the
 * per-lane bound above, |q - q_ref| <= E(q) = A q + B (A = 6u (1 + 2^-20),
 * B = P + 2^-50), where q = fl32(sqrt s) of the lane's float32 sum of
 * squares s:
 *   q >= Q+ = (thr + B) / (1 - A) gives q - E(q) >= thr: q_ref >= thr;
 *   q <  Q- = (thr - B) / (1 + A) gives q + E(q) <  thr: q_ref <  thr.
 * Q+ is rounded up and Q- down to float32 (after a 2^-40 margin for the
 * float64 evaluation), and as fl32(sqrt s) is non-decreasing in s, the
 * least float32 s with fl32(sqrt s) >= Q+ (resp. Q-), found by bisection
 * over the bit patterns, is the threshold gsp (gsm) in s: a lane with s >=
 * gsp is past thr, one with s < gsm is not, and one in between is redone.
 * No square root is taken. A group pair's boxes (float32 coordinates, the
 * differences and squares in float64 within 4 ud) bound the exact s of its
 * float32 points, and the float32 s lies within 5.01 u of it plus 5 2^-150
 * (the count in (2)), so every lane's s lies in [smin (1 - 2^-20) - 2^-140,
 * smax (1 + 2^-20) + 2^-140]: the thresholds every lane has passed (gsp <=
 * that low end) and those none can reach (gsm above the high end) are
 * decided for the whole group pair, and only the M between are compared
 * lane by lane. The sums: cpu_internal.h.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"
#include "fast_bins.h"
#include "grid.h"
#include "morton.h"

#define DEFAULT_TILE 1024u
/* Room for the histogram copies: brute force's pairs mostly land in a few
 * buckets (or overflow) and measured fastest with few copies; the grid's
 * candidates spread over every bin, and a copy per lane while they fit in
 * 16 KiB measured 22% faster on G3 (bench/RESULTS.md, 2026-11-23). */
#define L1_HIST_BYTES (1u * 1024u)
#define L1_HIST_BYTES_GRID (16u * 1024u)
#define PAIR_TABLE_BYTES (32u * 1024u) /* the bucket-pair table's limit */
#define WACC_L1_BYTES (28u * 1024u) /* weights: a 16-byte record per lane and slot */

const char *histd__cpu_isa_name(cpu_isa isa) {
  switch (isa) {
  case CPU_ISA_GENERIC:
    return "generic";
  case CPU_ISA_AVX2:
    return "avx2";
  case CPU_ISA_AVX512:
    return "avx512";
  default:
    return "auto";
  }
}

/* ---- portable loops (any CPU; the F32 one without FMA) ---------------- */

static void f32_block_generic(const cpu_ctx *c, size_t i0, size_t i1, size_t j0,
                              size_t j1, bool diag, uint32_t *h, uint64_t *refined) {
  const uint32_t lanes = c->copies;
  for (size_t i = i0; i < i1; i++) {
    const float xi = c->px[i], yi = c->py[i], zi = c->pz[i];
    size_t j = diag ? i + 1 : j0;
    for (; j < j1; j++) {
      float dx = xi - c->px[j], dy = yi - c->py[j], dz = zi - c->pz[j];
      float sxx = dx * dx, syy = dy * dy, szz = dz * dz;
      float s = sxx + syy;
      s = s + szz;
      float q = sqrtf(s);
      if (q > c->clamp)
        q = c->clamp;
      uint32_t copy = (uint32_t)(j & (lanes - 1)) * c->stride;
      if (c->exact && q >= 0.5f && fabsf(q - rintf(q)) < c->delta) {
        h[cpu_exact_index(c, i, j)]++;
        (*refined)++;
        continue;
      }
      h[copy + (uint32_t)q]++;
    }
  }
}

static void f64_block_generic(const cpu_ctx *c, size_t i0, size_t i1, size_t j0,
                              size_t j1, bool diag, uint32_t *h, uint64_t *refined) {
  (void)refined;
  const uint32_t lanes = c->copies;
  for (size_t i = i0; i < i1; i++) {
    size_t j = diag ? i + 1 : j0;
    for (; j < j1; j++)
      h[(uint32_t)(j & (lanes - 1)) * c->stride + cpu_exact_index(c, i, j)]++;
  }
}

/* ---- the plan: which path, the float32 points, delta --------------------- */

typedef struct cpu_plan {
  cpu_ctx ctx;
  float *pts; /* px, py, pz (and B's qx, qy, qz) in one allocation, or NULL */
  double *wpad;    /* B's weights padded with zeros (CPU_K_WEIGHTS)        */
  double *sorted;  /* CPU_K_GROUPS: A's x, y, z, w (and B's) in Morton order */
  float *gthr;     /* CPU_K_GROUPS: gsp, then gsm                          */
  uint64_t *etab;  /* the edge table (CPU_K_EDGES)                         */
  bool general;    /* a statistics problem the float32 loops do not cover  */
  cpu_path path;
  cpu_isa isa;
  cpu_block_fn block;
  double delta;
} cpu_plan;

static void plan_free(cpu_plan *p) {
  free(p->pts);
  free(p->wpad);
  free(p->etab);
  free(p->sorted);
  free(p->gthr);
}

static cpu_isa best_isa(void) {
  if (histd__cpu_isa_supported(CPU_ISA_AVX512))
    return CPU_ISA_AVX512;
  if (histd__cpu_isa_supported(CPU_ISA_AVX2))
    return CPU_ISA_AVX2;
  return CPU_ISA_GENERIC;
}

/* The slot (cpu_internal.h's numbering) of a distance v under the edges. */
static uint32_t edge_slot(const double *edges, uint32_t count, double v) {
  uint32_t k = histd_bin_edges(v, edges, count);
  return k == HISTD_BIN_BELOW ? 0 : k == HISTD_BIN_OVER ? count + 1 : k + 1;
}

static float f32_of_bits(uint32_t bits) {
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

/*
 * The edge table (see the bound at the top): cells are the floats q with
 * the same top m bits of mantissa (2^m cells an octave) from 2^elo to
 * etop = 2^ehi > 1.01 E[count] / w; cell 0 also takes every smaller q,
 * the last cell every larger one. A cell's q lie in [lo, hi), so the
 * contract's q_ref lies in [lo - E, hi + E] with E = erel hi + eabs (the
 * bound at hi); if no edge lies in that reach, the cell's slot is decided;
 * if one does, the slot is decided by q >= that edge unless q is within
 * the tolerance of it; if two or more do, every pair in the cell is redone.
 */
static int edge_table(cpu_plan *p, const double *edges, uint32_t count, double w) {
  cpu_ctx *c = &p->ctx;
  const double top = edges[count] / w; /* in [1, 2): w is a power of two */
  uint32_t first = 0;
  while (!(edges[first] > 0))
    first++;
  /* cells from 2^elo, elo >= -120: an edge below 2^-119 w (even one whose
   * quotient underflows to 0, where ilogb is INT_MIN) puts cell 0 over many
   * edges, and its pairs are redone. With ehi <= 2, the table holds at most
   * 122 octaves, cut into at most 2^16 + 1 cells by the loop on m below */
  const double e0 = edges[first] / w;
  int elo = e0 >= 0x1p-119 ? ilogb(e0) - 1 : -120, ehi = ilogb(top * 1.01) + 1;
  double minrel = 1;
  for (uint32_t k = first; k < count; k++) {
    double rel = (edges[k + 1] - edges[k]) / edges[k + 1];
    minrel = rel < minrel ? rel : minrel;
  }
  int m = (int)ceil(log2(2 / minrel)); /* cells at most half a bin wide */
  m = m < 0 ? 0 : m > 12 ? 12 : m;
  while (m > 0 && ((size_t)(ehi - elo) << m) > ((size_t)1 << 16))
    m--;
  const uint32_t ncells = ((uint32_t)(ehi - elo) << m) + 1;
  c->eshift = 23u - (uint32_t)m;
  c->ebase = (uint32_t)(127 + elo) << m;
  c->etop = ldexpf(1.0f, ehi);
  p->etab = malloc(ncells * sizeof *p->etab);
  if (p->etab == NULL)
    return HISTD_ENOMEM;
  for (uint32_t k = 0; k < ncells; k++) {
    uint32_t slot = count + 1; /* the last cell: q >= etop gives q_ref >= etop - E(etop) > top */
    float thr = INFINITY;
    if (k < ncells - 1) {
      double lo = k == 0 ? 0 : f32_of_bits((c->ebase + k) << c->eshift);
      double hi = f32_of_bits((c->ebase + k + 1) << c->eshift);
      double e = ((double)c->erel * hi + (double)c->eabs) * (1 + 0x1p-10);
      double a = lo - e, b = hi + e;
      a -= fabs(a) * 0x1p-50;
      b += fabs(b) * 0x1p-50;
      uint32_t shi = edge_slot(edges, count, b * w);
      slot = edge_slot(edges, count, a * w);
      if (shi == slot + 1)
        thr = (float)(edges[slot] / w);
      else if (shi != slot)
        slot |= CPU_EDGE_AMBIG;
    }
    uint32_t tb;
    memcpy(&tb, &thr, sizeof tb);
    p->etab[k] = slot | (uint64_t)tb << 32;
  }
  c->etab = p->etab;
  return 0;
}

/* Log-spaced edges (see the bound at the top): fills the CPU_K_LOG
 * constants and returns true, or false where the edges are not log-spaced
 * enough or the bound too loose. pnt is the point term P. */
static bool log_plan(cpu_ctx *c, const double *edges, uint32_t count, double w, double pnt) {
  const double u = 0x1p-24, ln2 = 0.6931471805599453;
  const double a = 6 * u * (1 + 0x1p-20) + 1.01 * u, b = pnt + 0x1p-50;
  if (!(edges[0] > 0))
    return false;
  const double e0 = edges[0] / w, c1d = count / log2(edges[count] / edges[0]);
  const double g0 = floor(log2(e0));
  const float f0 = (float)(log2(e0) - g0), c1 = (float)c1d;
  if (!(c1 > 0) || c1 > 0x1p12f || g0 < -60)
    return false;
  double mu = 0;
  for (uint32_t k = 0; k <= count; k++) {
    double m = fabs((log2(edges[k] / w) - g0 - f0) * c1 - k);
    mu = m > mu ? m : mu;
  }
  mu += 0x1p-30;
  if (!(mu <= 0x1p-10))
    return false;
  const double eta = c1 * (CPU_LOG2_ERR + 2 * u) / 2 + 2.02 * u * (count + 2);
  const double t0 = eta + mu + c1 * a * (1 + 0x1p-11) / ln2;
  const double t1 = c1 * b * (1 + 0x1p-11) / ln2;
  const double tau = 2 * t0 * (1 + 0x1p-10);
  double qmin = t1 / t0 > 0x1p12 * b ? t1 / t0 : 0x1p12 * b;
  if (!(tau <= 1.0 / 64))
    return false;
  double qb = (e0 - b) / (1 + a) * (1 - 0x1p-20);
  c->lg0 = (float)(2 * g0);
  c->lf0 = 2 * f0;
  c->lc1 = c1 / 2;
  c->ltau = histd__float_up(tau);
  c->lsmin = histd__float_up(qmin * qmin * (1 + 0x1p-20));
  float sb = qb > 0 ? (float)(qb * qb * (1 - 0x1p-20)) : -1.0f;
  c->lsbelow = qb > 0 && (double)sb > qb * qb ? nextafterf(sb, -INFINITY) : sb;
  c->kind |= CPU_K_LOG;
  return true;
}

/* The float32 points of one dataset: centred and scaled, or (periodic)
 * wrapped into the box with x - L floor(x / L) in float64, then scaled. */
static void to_f32(float *dst, const double *src, size_t n, size_t padded, double centre,
                   double len, double iw) {
  for (size_t i = 0; i < n; i++) {
    double v = len > 0 ? src[i] - len * floor(src[i] / len) : src[i] - centre;
    dst[i] = (float)(v * iw);
  }
  for (size_t i = n; i < padded; i++)
    dst[i] = 0;
}

/* The datasets' own coordinates, for the float64 loops and the redo. */
static void ctx_points(cpu_ctx *c, const histd_dataset *a, const histd_dataset *b) {
  c->x = a->x;
  c->y = a->y;
  c->z = a->z;
  c->xb = b->x;
  c->yb = b->y;
  c->zb = b->z;
}

/* A's (and B's) coordinates and weights copied in Morton order into
 * p->sorted, and pointed at by ds[0] (ds[1]) for the rest of the plan. */
static int sort_sets(cpu_plan *p, histd_dataset ds[2], bool cross) {
  const size_t n = ds[0].n + (cross ? ds[1].n : 0);
  p->sorted = malloc((n ? n : 1) * 4 * sizeof(double));
  if (p->sorted == NULL)
    return HISTD_ENOMEM;
  double *dst = p->sorted;
  for (int k = 0; k < (cross ? 2 : 1); k++) {
    histd__mkey *key;
    int rc = histd__morton_sort(&ds[k], &key);
    if (rc != 0)
      return rc;
    const size_t m = ds[k].n;
    double *x = dst, *y = x + m, *z = y + m, *w = z + m;
    for (size_t i = 0; i < m; i++) {
      const uint32_t s = key[i].index;
      x[i] = ds[k].x[s];
      y[i] = ds[k].y[s];
      z[i] = ds[k].z[s];
      w[i] = ds[k].w[s];
    }
    free(key);
    ds[k].x = x;
    ds[k].y = y;
    ds[k].z = z;
    ds[k].w = w;
    dst += 4 * m;
  }
  if (!cross)
    ds[1] = ds[0];
  return 0;
}

/* The groups' thresholds in s (cpu.c's "Groups"): n of them, thr[t] =
 * edges[t] / w, or t + 1 for width bins; pnt the point term P. */
static int group_thresholds(cpu_plan *p, const double *edges, uint32_t n, double iw,
                            double pnt) {
  p->gthr = malloc(2 * (size_t)n * sizeof *p->gthr);
  if (p->gthr == NULL)
    return HISTD_ENOMEM;
  for (uint32_t t = 0; t < n; t++)
    histd__f32_band(edges ? edges[t] * iw : t + 1.0, pnt, &p->gthr[t], &p->gthr[n + t]);
  p->ctx.gsp = p->gthr;
  p->ctx.gsm = p->gthr + n;
  p->ctx.gn = n;
  return 0;
}

/* Decides F32 or F64 and, for F32, fills the float32 points and the bound;
 * for a statistics problem the float32 loops do not cover, sets general. */
static int plan_make(cpu_plan *p, const histd_problem *pr, histd_precision precision,
                     size_t hist_bytes, bool grid,
                     const cpu_options *opt, uint32_t tile, char *msg, size_t msglen) {
  memset(p, 0, sizeof *p);
  cpu_ctx *c = &p->ctx;
  const histd_dataset *a = pr->a, *b = pr->b ? pr->b : pr->a;
  const bool periodic = pr->box.kind != HISTD_BOX_NONE;
  const bool edges = pr->bins.kind == HISTD_BINS_EDGES;
  const uint32_t count = pr->bins.count, buckets = edges ? count + 1 : count;
  const bool stats = histd_problem_needs(pr) != 0;
  ctx_points(c, a, b);
  c->metric = histd__metric(&pr->box);
  c->kind = (periodic ? CPU_K_PERIODIC : 0u) | (edges ? CPU_K_EDGES : 0u) |
            (pr->weighted ? CPU_K_WEIGHTS : 0u);
  c->edges = edges ? pr->bins.edges : NULL;
  c->buckets = buckets;
  c->exact = precision == HISTD_PRECISION_EXACT || stats; /* statistics: always exact */

  p->isa = opt->isa == CPU_ISA_AUTO ? best_isa() : opt->isa;
  if (!histd__cpu_isa_supported(p->isa))
    return histd_fail(msg, msglen, HISTD_EINVAL, "this CPU lacks the %s instructions",
                      histd__cpu_isa_name(p->isa));
  /* the statistics' float32 loops: AVX-512, orthorhombic or open, weights
   * with at most 4096 bins (the folds' cost) and tiles of at most 4096 */
  if (stats && (p->isa != CPU_ISA_AVX512 || pr->box.kind == HISTD_BOX_TRICLINIC ||
                pr->bins.count2 != 0 || pr->ravg ||
                opt->path == CPU_PATH_F64 || (pr->weighted && count > 4096) || tile > 4096 ||
                (edges && !(pr->bins.edges[count] > 0)))) {
    p->general = true;
    return 0;
  }
  const uint32_t lanes = p->isa == CPU_ISA_AVX512 ? 16 : p->isa == CPU_ISA_AVX2 ? 8 : 4;

  /* histogram copies: one per lane while they fit in L1, at least one */
  c->stride = ((buckets + 2 + 15) & ~15u) + 1;
  c->copies = lanes;
  while (c->copies > 1 && (size_t)c->copies * c->stride * 4 > hist_bytes)
    c->copies /= 2;
  if (opt->copies && opt->copies <= lanes && (opt->copies & (opt->copies - 1)) == 0)
    c->copies = opt->copies;
  if (pr->weighted) /* the float32 loop counts a lane's pairs in its weights' record */
    c->copies = 1;
  c->hist_size = c->copies * c->stride;

  /* ---- can the F32 path be exact here? (see the bound at the top) ---- */
  p->path = CPU_PATH_F64;
  /* the scale: the bucket width, or for edges the power of two <= E[count] */
  const double w = edges ? ldexp(1.0, ilogb(pr->bins.edges[count])) : pr->bins.width;
  double centre[3], len[3] = {0, 0, 0}, m, mraw = 0, lw = 0;
  const bool framed = histd__f32_frame(a, b, w, centre, &m);
  for (int ax = 0; ax < 3; ax++) {
    double lo = a->min[ax] < b->min[ax] ? a->min[ax] : b->min[ax];
    double hi = a->max[ax] > b->max[ax] ? a->max[ax] : b->max[ax];
    double r = fabs(lo) > fabs(hi) ? fabs(lo) : fabs(hi);
    mraw = r > mraw ? r : mraw;
  }
  if (periodic) {
    len[0] = pr->box.ax;
    len[1] = pr->box.by;
    len[2] = pr->box.cz;
    for (int ax = 0; ax < 3; ax++)
      lw = len[ax] > lw ? len[ax] : lw;
  }
  const double iw = 1.0 / w;
  bool f32_ok = opt->path != CPU_PATH_F64 && a->n >= 1 && b->n >= 1 && (stats || a->n >= 2) &&
                framed;
  if (f32_ok) {
    mraw = mraw * iw * (1 + 0x1p-50);
    lw = lw * iw * (1 + 0x1p-50);
    f32_ok = periodic ? lw < 0x1p20 && mraw < 0x1p60 : m < 0x1p20;
  }
  double delta = 0;
  float clamp = (float)(buckets < (1u << 22) ? buckets : (1u << 22)) + 0.5f;
  double pnt = 0; /* the point term P of the bound */
  if (f32_ok) {
    const double u = 0x1p-24, ud = 0x1p-53, r3 = 1.7320508075688774; /* > sqrt(3) */
    double qmax;
    if (periodic) { /* (1p) and (2p) at the top */
      double eps = ud * (mraw + 2 * lw) + 1.02 * (u + 2.01 * ud) * lw + 0x1p-149;
      pnt = r3 * (2 * eps + 3.1 * u * lw + ud * (8 * mraw + 2 * lw));
      qmax = r3 * lw;
    } else {
      pnt = histd__f32_open_pnt(m);
      qmax = 2 * r3 * m;
    }
    if (edges) {
      c->erel = histd__float_up(8 * u * (1 + 0x1p-20));
      c->eabs = histd__float_up((pnt + 0x1p-50) * (1 + 0x1p-10));
      f32_ok = log_plan(c, pr->bins.edges, count, w, pnt) || c->eabs <= 0x1p-12f;
      delta = c->eabs;
    } else {
      double q = (clamp < qmax ? clamp : qmax) * (1 + 0x1p-20) + 0x1p-100;
      double e = 6 * u * q + pnt + 0x1p-50;
      delta = e * (1 + 0x1p-10);
      f32_ok = delta <= 1.0 / 32;
    }
  }
  if (stats && !f32_ok) {
    p->general = true;
    return 0;
  }
  if (f32_ok) {
    const size_t padded = (a->n + 15) & ~(size_t)15, padded_b = (b->n + 15) & ~(size_t)15;
    const bool cross = pr->b != NULL;
    histd_dataset sets[2] = {*a, *b}; /* their points, in Morton order for the groups */
    if (pr->weighted && !periodic && !grid && p->isa == CPU_ISA_AVX512) {
      int rc = sort_sets(p, sets, cross);
      if (rc == 0)
        rc = group_thresholds(p, edges ? pr->bins.edges : NULL, edges ? count + 1 : buckets, iw,
                              pnt);
      if (rc != 0)
        return histd_fail(msg, msglen, rc, "out of memory for the groups of %zu points", a->n);
      c->kind |= CPU_K_GROUPS;
      a = &sets[0];
      b = &sets[1];
      ctx_points(c, a, b);
    }
    float *pts = aligned_alloc(64, 3 * (padded + (cross ? padded_b : 0)) * sizeof(float));
    if (pts == NULL)
      return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %zu float32 points",
                        a->n);
    p->pts = pts;
    const double *src[6] = {a->x, a->y, a->z, b->x, b->y, b->z};
    for (int ax = 0; ax < (cross ? 6 : 3); ax++)
      to_f32(pts + (ax < 3 ? (size_t)ax * padded : 3 * padded + (size_t)(ax - 3) * padded_b),
             src[ax], ax < 3 ? a->n : b->n, ax < 3 ? padded : padded_b, centre[ax % 3],
             len[ax % 3], iw);
    c->px = pts;
    c->py = pts + padded;
    c->pz = pts + 2 * padded;
    c->qx = cross ? pts + 3 * padded : c->px;
    c->qy = cross ? c->qx + padded_b : c->py;
    c->qz = cross ? c->qx + 2 * padded_b : c->pz;
    c->lx = (float)(len[0] * iw);
    c->ly = (float)(len[1] * iw);
    c->lz = (float)(len[2] * iw);
    c->width = w;
    c->clamp = clamp;
    const float df = histd__float_up(delta);
    c->delta = df;
    p->delta = df;
    p->path = CPU_PATH_F32;
    if (edges && !(c->kind & CPU_K_LOG) && edge_table(p, pr->bins.edges, count, w) != 0)
      return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for the edge table");
    if (pr->weighted) {
      /* a vector's 16 lanes from any j < n_b (self rows start at i + 1) */
      p->wpad = calloc(b->n + 16, sizeof *p->wpad);
      if (p->wpad == NULL)
        return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %zu weights", b->n);
      memcpy(p->wpad, b->w, b->n * sizeof *p->wpad);
      c->wa = a->w;
      c->wb = p->wpad;
    }
  } else {
    c->width = pr->bins.width;
  }
  c->inv_width = 1 / c->width;
  /* the bucket-pair table, where it stays small (AVX-512 float32 only) */
  const uint32_t s2 = buckets + 2;
  bool pairs = p->path == CPU_PATH_F32 && p->isa == CPU_ISA_AVX512 &&
               !(c->kind & CPU_K_WEIGHTS) && /* weights count a pair in its lane's record */
               opt->pairs >= 0 && (opt->pairs > 0 || (size_t)s2 * s2 * 4 <= PAIR_TABLE_BYTES) &&
               (size_t)s2 * s2 < (1u << 26);
  if (pairs) {
    c->copies = 1;
    c->pair_stride = s2;
    c->redo_base = s2 * s2;
    c->hist_size = s2 * s2 + s2;
  }
  c->wsum_off = ((size_t)c->hist_size * 4 + 63) & ~(size_t)63;
  c->wshift = (size_t)c->stride * 16 * 2 * sizeof(double) <= WACC_L1_BYTES ? 4 : 0;
  c->wfold = c->wshift == 4 ? 4096 : 4096 / 16; /* the weights' bound's n = 4096 */
  p->block = histd__cpu_simd_block(p->isa, p->path, c->exact, pairs, c->kind);
  if (p->block == NULL)
    p->block = p->path == CPU_PATH_F32 ? f32_block_generic : f64_block_generic;
  return 0;
}

/* ---- tasks and threads ---------------------------------------------------- */

typedef struct cpu_job {
  const cpu_plan *plan;       /* the float32/float64 loops of a plain problem */
  const histd_problem *prob;  /* else the general pair loop on this problem   */
  histd_ev_bin ev;            /* and its bins (histd__ev_bin, made once)      */
  const histd__grid *grid;    /* tasks are runs of cells (else tile pairs)   */
  uint64_t chunk;             /* grid: cells per task                        */
  uint64_t flush_at;          /* pairs a thread counts before it flushes     */
  histd__sink total;          /* the general loop's sinks, merged under lock  */
  bool cross;                 /* tasks are tile pairs of A x B                */
  size_t ntiles_b;
  const histd_control *ctl;
  histd_result *res;
  size_t n, n_b, tile, ntiles;
  uint64_t ntasks;
  atomic_uint_fast64_t next_task;
  atomic_uint_fast64_t done_pairs;
  atomic_bool stop;
  atomic_bool cancelled;
  pthread_mutex_t lock; /* guards res->counts, overflow and progress calls */
  double reported;
} cpu_job;

typedef struct cpu_thread {
  pthread_t tid;
  cpu_job *job;
  uint32_t *hist;     /* the plain loops' private counters */
  histd__sink sink;   /* the general loop's                */
  uint64_t refined;
  uint64_t since_flush;
} cpu_thread;

/* Task t -> tile pair (I, J): for A x B every pair, row by row; for self
 * pairs I <= J, row by row: row I holds ntiles - I. */
static void task_tiles(const cpu_job *job, uint64_t t, size_t *I, size_t *J) {
  if (job->cross) {
    *I = (size_t)(t / job->ntiles_b);
    *J = (size_t)(t % job->ntiles_b);
    return;
  }
  /* rows before I hold I*nt - I(I-1)/2 tasks; find the largest such I <= t */
  size_t lo = 0, hi = job->ntiles - 1;
  const uint64_t nt = job->ntiles;
  while (lo < hi) {
    size_t mid = (lo + hi + 1) / 2;
    uint64_t first = (uint64_t)mid * nt - (uint64_t)mid * (mid - 1) / 2;
    if (first <= t)
      lo = mid;
    else
      hi = mid - 1;
  }
  uint64_t first = (uint64_t)lo * nt - (uint64_t)lo * (lo - 1) / 2;
  *I = lo;
  *J = lo + (size_t)(t - first);
}

/* Adds v pairs counted in slot s (cpu_internal.h's numbering; the trash
 * slot buckets + 1 is never added) to the result. */
static inline void add_slot(histd_result *res, const cpu_ctx *c, uint32_t s, uint64_t v) {
  const uint32_t first = (c->kind & CPU_K_EDGES) ? 1 : 0;
  if (s == c->buckets)
    res->overflow += v;
  else if (s < first)
    res->below += v;
  else
    res->counts[s - first] += v;
}

static void flush(cpu_thread *t) {
  cpu_job *job = t->job;
  if (job->prob != NULL) {
    const uint32_t count = (uint32_t)histd_bins_slots(&job->res->bins);
    pthread_mutex_lock(&job->lock);
    histd__sink_merge(&job->total, &t->sink, count);
    pthread_mutex_unlock(&job->lock);
    histd__sink_zero(&t->sink, count); /* or the next flush adds it twice */
    return;
  }
  const cpu_ctx *c = &job->plan->ctx;
  uint32_t *h = t->hist;
  pthread_mutex_lock(&job->lock);
  if (c->pair_stride) { /* each cell to both its slots */
    const uint32_t s2 = c->pair_stride;
    for (uint32_t b0 = 0; b0 <= c->buckets; b0++)
      for (uint32_t b1 = 0; b1 <= c->buckets; b1++) {
        uint32_t v = h[(size_t)b0 * s2 + b1];
        add_slot(job->res, c, b0, v);
        add_slot(job->res, c, b1, v);
      }
    for (uint32_t b = 0; b <= c->buckets; b++) { /* one lane in the trash */
      add_slot(job->res, c, b, h[(size_t)b * s2 + c->buckets + 1]);
      add_slot(job->res, c, b, h[(size_t)(c->buckets + 1) * s2 + b]);
    }
  }
  const uint32_t first = (c->kind & CPU_K_EDGES) ? 1 : 0; /* edges: slot 0 is below */
  for (uint32_t k = 0; k < c->copies; k++) {
    const uint32_t *hk = h + c->redo_base + (size_t)k * c->stride;
    for (uint32_t b = 0; b <= c->buckets; b++)
      add_slot(job->res, c, b, hk[b]);
  }
  if (c->kind & CPU_K_WEIGHTS) { /* slots to the sink's bins, below, overflow */
    const uint32_t count = job->res->bins.count;
    double *sum = cpu_wsums(c, h) + cpu_wacc(c), *err = sum + c->stride;
    for (uint32_t s = 0; s <= c->buckets; s++) {
      uint32_t k = s == c->buckets ? count + 1 : first && s == 0 ? count : s - first;
      histd_ev_neumaier(&job->total.sum[HISTD_SUM_W][k], &job->total.err[HISTD_SUM_W][k], sum[s]);
      histd_ev_neumaier(&job->total.sum[HISTD_SUM_W][k], &job->total.err[HISTD_SUM_W][k], err[s]);
      sum[s] = err[s] = 0;
    }
  }
  pthread_mutex_unlock(&job->lock);
  memset(h, 0, (size_t)c->hist_size * sizeof *h);
}

/* Counts a block of pairs in sub-blocks of at most tile x tile (so the
 * 32-bit counters cannot wrap between flushes); returns its pairs. */
static uint64_t run_block(cpu_thread *t, const histd__block *b) {
  cpu_job *job = t->job;
  const cpu_plan *plan = job->plan;
  const size_t T = job->tile;
  uint64_t pairs = 0;
  for (size_t i0 = b->i0; i0 < b->i1; i0 += T) {
    const size_t i1 = i0 + T < b->i1 ? i0 + T : b->i1;
    for (size_t j0 = b->diag ? i0 : b->j0; j0 < b->j1; j0 += T) {
      const size_t j1 = j0 + T < b->j1 ? j0 + T : b->j1;
      const bool diag = b->diag && j0 == i0;
      if (job->prob != NULL)
        histd__pairs_block(job->prob, &job->ev, i0, i1, j0, j1, diag, &t->sink);
      else
        plan->block(&plan->ctx, i0, i1, j0, j1, diag, t->hist, &t->refined);
      uint64_t n = diag ? (uint64_t)(i1 - i0) * (i1 - i0 - 1) / 2
                        : (uint64_t)(i1 - i0) * (j1 - j0);
      pairs += n;
      t->since_flush += n;
      if (t->since_flush > job->flush_at) {
        flush(t);
        t->since_flush = 0;
      }
      /* a grid cell may hold a crowd: look at the cancel flag between tiles */
      if (atomic_load_explicit(&job->stop, memory_order_relaxed))
        return pairs;
      if (job->grid != NULL && histd__cancelled(job->ctl)) {
        atomic_store(&job->cancelled, true);
        atomic_store(&job->stop, true);
        return pairs;
      }
    }
  }
  return pairs;
}

/* Task t's pairs: a tile pair, or the blocks of a run of cells. */
static uint64_t run_task(cpu_thread *t, uint64_t task) {
  cpu_job *job = t->job;
  if (job->grid != NULL) {
    const uint64_t c0 = task * job->chunk;
    const uint64_t c1 = c0 + job->chunk < job->grid->g.cells ? c0 + job->chunk : job->grid->g.cells;
    uint64_t pairs = 0;
    histd__block blk[28];
    for (uint64_t c = c0; c < c1; c++) {
      uint32_t nb = histd__grid_blocks(job->grid, (uint32_t)c, blk);
      for (uint32_t k = 0; k < nb; k++)
        pairs += run_block(t, &blk[k]);
    }
    return pairs;
  }
  size_t I, J;
  task_tiles(job, task, &I, &J);
  histd__block b = {I * job->tile, 0, J * job->tile, 0, !job->cross && I == J};
  b.i1 = b.i0 + job->tile < job->n ? b.i0 + job->tile : job->n;
  b.j1 = b.j0 + job->tile < job->n_b ? b.j0 + job->tile : job->n_b;
  return run_block(t, &b);
}

static void *thread_main(void *arg) {
  cpu_thread *t = arg;
  cpu_job *job = t->job;
  /* the grid visits only its candidate pairs */
  const uint64_t total = job->grid != NULL ? job->grid->candidates : job->res->total;
  for (;;) {
    if (atomic_load_explicit(&job->stop, memory_order_relaxed))
      break;
    uint64_t task = atomic_fetch_add(&job->next_task, 1);
    if (task >= job->ntasks)
      break;
    uint64_t pairs = run_task(t, task);
    uint64_t done = atomic_fetch_add(&job->done_pairs, pairs) + pairs;
    if (histd__cancelled(job->ctl)) {
      atomic_store(&job->cancelled, true);
      atomic_store(&job->stop, true);
      break;
    }
    histd__progress_step(job->ctl, &job->lock, &job->reported,
                         total ? (double)done / (double)total : 1.0);
  }
  flush(t);
  return NULL;
}

/* The problem p, or with a grid its cells' pairs of grid->p (the sorted
 * sets); the pairs the grid skips are overflow. */
static int cpu_run(const histd_problem *p, const histd__grid *grid, const histd_exec *ex,
                   const histd_control *ctl, const cpu_options *opt, histd_result *res,
                   cpu_report *report, char *msg, size_t msglen) {
  static const cpu_options defaults = {CPU_ISA_AUTO, CPU_PATH_AUTO, 0, 0, 0};
  if (opt == NULL)
    opt = &defaults;
  if (grid != NULL)
    p = &grid->p;
  double t0 = histd_now_ms();
  const histd_dataset *ds = p->a;
  const uint32_t count = (uint32_t)histd_bins_slots(&res->bins);
  const uint32_t tile = opt->tile ? opt->tile : DEFAULT_TILE;
  cpu_plan plan;
  int rc = plan_make(&plan, p, ex->precision, grid ? L1_HIST_BYTES_GRID : L1_HIST_BYTES,
                     grid != NULL, opt, tile, msg, msglen);
  if (rc != 0) {
    plan_free(&plan);
    return rc;
  }
  const bool general = plan.general;
  const bool weighted = p->weighted; /* a sink for the weighted sums */
  if (report != NULL) {
    report->isa = general ? CPU_ISA_GENERIC : plan.isa;
    report->path = general ? CPU_PATH_F64 : plan.path;
    report->delta = plan.delta;
  }

  cpu_job job;
  memset(&job, 0, sizeof job);
  job.plan = general ? NULL : &plan;
  job.prob = general ? p : NULL;
  if (general)
    job.ev = histd__ev_bin(p);
  job.cross = p->b != NULL;
  job.ctl = ctl;
  job.res = res;
  job.n = ds->n;
  job.n_b = job.cross ? p->b->n : ds->n;
  job.tile = tile;
  job.ntiles = (ds->n + job.tile - 1) / job.tile;
  job.ntiles_b = (job.n_b + job.tile - 1) / job.tile;
  job.flush_at = UINT32_MAX - (uint64_t)job.tile * job.tile;
  job.grid = grid;
  if (grid != NULL) { /* tasks of about 256 points of A */
    const uint64_t cells = grid->g.cells;
    job.chunk = ds->n > 256 ? cells * 256 / ds->n : cells;
    job.chunk = job.chunk ? job.chunk : 1;
    job.ntasks = (cells + job.chunk - 1) / job.chunk;
  } else if (job.cross)
    job.ntasks = (uint64_t)job.ntiles * job.ntiles_b;
  else
    job.ntasks = ds->n < 2 ? 0 : (uint64_t)job.ntiles * (job.ntiles + 1) / 2;
  atomic_init(&job.next_task, 0);
  atomic_init(&job.done_pairs, 0);
  atomic_init(&job.stop, false);
  atomic_init(&job.cancelled, false);
  pthread_mutex_init(&job.lock, NULL);
  if ((general || weighted) && histd__sink_init(&job.total, count, histd_problem_sums(p)) != 0) {
    plan_free(&plan);
    pthread_mutex_destroy(&job.lock);
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %u buckets", count);
  }

  unsigned nthreads = ex->threads ? ex->threads : histd_cpu_count();
  if (nthreads > job.ntasks)
    nthreads = job.ntasks ? (unsigned)job.ntasks : 1;
  /* Each thread zeroes (so commits) its own histogram: bound their sum, or
   * many threads times many buckets exhaust memory (1024 x 64 MiB). */
  const size_t hist_bytes = general    ? ((size_t)count + 2) * (p->weighted ? 24 : 8)
                            : weighted ? cpu_wbytes(&plan.ctx)
                                       : (size_t)plan.ctx.hist_size * sizeof(uint32_t);
  const size_t max_threads = CPU_HIST_BUDGET_BYTES / (hist_bytes ? hist_bytes : 1);
  if (nthreads > max_threads)
    nthreads = max_threads ? (unsigned)max_threads : 1;
  cpu_thread *th = calloc(nthreads, sizeof *th);
  if (th == NULL) {
    plan_free(&plan);
    histd__sink_free(&job.total);
    pthread_mutex_destroy(&job.lock);
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for threads");
  }
  unsigned started = 0;
  for (; started < nthreads; started++) {
    cpu_thread *t = &th[started];
    t->job = &job;
    bool ok;
    if (general) {
      ok = histd__sink_init(&t->sink, count, histd_problem_sums(p)) == 0;
    } else {
      t->hist = aligned_alloc(64, (hist_bytes + 63) & ~(size_t)63);
      ok = t->hist != NULL;
      if (ok)
        memset(t->hist, 0, hist_bytes);
    }
    if (!ok) {
      rc = histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for histograms");
      break;
    }
    if (pthread_create(&t->tid, NULL, thread_main, t) != 0) {
      free(t->hist);
      histd__sink_free(&t->sink);
      rc = histd_fail(msg, msglen, HISTD_ENOMEM, "could not start a thread");
      break;
    }
  }
  if (rc != 0)
    atomic_store(&job.stop, true);
  uint64_t refined = 0;
  for (unsigned i = 0; i < started; i++) {
    pthread_join(th[i].tid, NULL);
    refined += th[i].refined;
    free(th[i].hist);
    histd__sink_free(&th[i].sink);
  }
  free(th);
  plan_free(&plan);
  pthread_mutex_destroy(&job.lock);
  if (rc == 0 && atomic_load(&job.cancelled))
    rc = histd_fail(msg, msglen, HISTD_ECANCELED, "cancelled");
  if (rc == 0 && (general || weighted))
    histd__sink_to_result(res, &job.total);
  if (rc == 0 && grid != NULL)
    res->overflow += res->total - grid->candidates;
  histd__sink_free(&job.total);
  if (rc != 0)
    return rc;
  res->exact = general || plan.ctx.exact || plan.path == CPU_PATH_F64;
  res->refined_pairs = refined;
  res->threads = nthreads;
  res->block_size = 0;
  res->timing.kernel_ms = histd_now_ms() - t0;
  const char *arith = general ? "float64"
                      : plan.path == CPU_PATH_F64 ? "float64"
                      : plan.ctx.exact ? "float32 + float64 redo" : "float32";
  const char *bins = general || !(plan.ctx.kind & CPU_K_EDGES) ? ""
                     : (plan.ctx.kind & CPU_K_LOG)               ? ", log-bin estimate"
                                                                 : ", edge table";
  snprintf(res->device, sizeof res->device, "cpu: %u thread%s, %s, %s%s%s", nthreads,
           nthreads == 1 ? "" : "s", histd__cpu_isa_name(general ? CPU_ISA_GENERIC : plan.isa),
           arith, bins, !general && (plan.ctx.kind & CPU_K_GROUPS) ? ", weights in groups" : "");
  return 0;
}

int histd__cpu_run_opts(const histd_problem *p, const histd_exec *ex, const histd_control *ctl,
                        const cpu_options *opt, histd_result *res, cpu_report *report,
                        char *msg, size_t msglen) {
  return cpu_run(p, NULL, ex, ctl, opt, res, report, msg, msglen);
}

int histd__cpu_run(HISTD__RUN_ARGS) {
  (void)w;
  return cpu_run(p, NULL, ex, ctl, NULL, res, NULL, msg, msglen);
}

int histd__cpu_grid_run(HISTD__RUN_ARGS) {
  (void)w;
  double t0 = histd_now_ms();
  histd__grid grid;
  int rc = histd__grid_build(&grid, p, histd__grid_max_cells(p, false), false, msg, msglen);
  if (rc != 0)
    return rc;
  double tb = histd_now_ms() - t0;
  rc = cpu_run(p, &grid, ex, ctl, NULL, res, NULL, msg, msglen);
  if (rc == 0) {
    res->timing.kernel_ms += tb;
    size_t len = strlen(res->device);
    snprintf(res->device + len, sizeof res->device - len, ", %ux%ux%u cells",
             grid.g.n[0], grid.g.n[1], grid.g.n[2]);
  }
  histd__grid_free(&grid);
  return rc;
}
