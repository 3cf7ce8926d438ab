/*
 * tc_plan.h -- the float32 pair on the tensor cores: the squared distance
 * of a whole tile of pairs from one matrix product, and the bound that keeps
 * the counts exact. Shared by the "tensor-core" kernel (tc_kernels.cuh,
 * tc_engine.c), its probe (bench/tc_probe.cu) and the CPU test that plays
 * the arithmetic at its worst (tests/gpu/test_tc_band.c).
 *
 * Why: the exact brute-force loop spends ~15 instructions a pair, 7 of them
 * loading the partner and forming s (sdh_kernels.cu). A matrix product
 * gives s = |a|^2 + |b|^2 - 2 a.b for a 16 x 8 block of pairs in two
 * mma.m16n8k8 (TF32) instructions, which leaves the regular pipes the
 * square root, the bucket and the count (~7 a pair).
 *
 * Tiles and frames. The points are sorted in Morton order (morton.c) and
 * cut into tiles of TC_TILE; c_I is the midpoint of tile I's bounding box,
 * loc_i = f32(f64(f64(x_i - c_I) * (1/w))) a point's coordinates in its
 * tile's frame, and e_I >= max |loc_i| the tile's radius (bucket widths).
 * A tile pair (I <= J) is computed in tile I's frame:
 *   A' = loc_i,  B' = f32(loc_j + Delta),  Delta = f32(f64(f64(c_J - c_I) * (1/w)))
 * (tc_unit_gap).
 * So |A'| <= e_I, and with x = |A' - B'| (the float32 vectors' distance),
 * |B'| <= x + e_I: every magnitude is of the order of the pair's own
 * distance, whatever the set's extent -- what keeps the band narrow.
 *
 * The product (16 products, two k8 steps; t = a lane's quad position):
 *   anchor row, slot t + 4j:  t < 3 (axis t):  a_h, a_l, a_h, 0 (t = 0: 1)
 *                             t = 3:           qa_h, qa_l, 1, 1
 *   partner column:           t < 3:           b_h, b_h, b_l, 0 (t = 0: C)
 *                             t = 3:           1, 1, qb_h, qb_l
 * with a = A'_t, b = -2 B'_t (exact), v_h = tf32(v), v_l = tf32(v - v_h)
 * (round to nearest; v - v_h is exact), qa = f64(|A'|^2) (three exact
 * squares, two roundings), qb = fma(X,X, fma(Y,Y, Z*Z)) in float32, and the
 * bias C (below) as one more product, 1 x C in slot 12 (tc_unit_plan makes C
 * a tf32 value, so the product is exact; the accumulator starts at 0). The
 * sum is
 *   S = C + sum_t (a_h b_h + a_l b_h + a_h b_l) + qa_h + qa_l + qb_h + qb_l.
 *
 * The bound. u = 2^-24.
 *  - Splits: |v - v_h| <= 2^-11 |v|, |v - v_h - v_l| <= 2^-22 |v|, so
 *    |a b - (a_h b_h + a_l b_h + a_h b_l)| = |a_l b_l + r_a b + (a - r_a) r_b|
 *    <= 3.001 * 2^-22 |a b|; |qa - qa_h - qa_l| <= 1.001 * 2^-22 qa and
 *    qa is |A'|^2 (1 +- 2^-52); qb = |B'|^2 (1 +- 3.001u) and its split
 *    loses 2^-22 more. With sum_t |a b| <= 2 |A'||B'|, the exact sum of the
 *    operands differs from s' = |A' - B'|^2 by at most
 *    3.003 * 2^-22 (|A'| + |B'|)^2, and the sum of their magnitudes is at
 *    most 1.002 (|A'| + |B'|)^2 + C.
 *  - Tensor cores (the one assumption; the probe measures it on each
 *    device): products are exact (11 x 11 bits), and each fused block of
 *    b >= 2 products meets the accumulator with every one of its b + 1
 *    operands cut at most to the unit of the 24th bit of the largest, and
 *    its sum cut or rounded once to 24 bits; so a block errs by less than
 *    (b + 2) 2^-23 times its operands' magnitudes, and the 16 products,
 *    16/b blocks, by less than 32 * 2^-23 = 2^-18 of the sum of all
 *    magnitudes (b = 8: 20 * 2^-23; sequential IEEE FMAs: 16u). Fasi,
 *    Higham, Mikaitis and Pranesh (PeerJ CS 2021) and Khattak and Mikaitis
 *    (arXiv 2512.07004) measured such truncating blocks on the V100, A100
 *    and H100.
 *  - Together: |S - C - s'| <= kappa (|A'| + |B'|)^2 + 2^-18 C, with
 *    kappa = 1.002 * 2^-18 + 3.003 * 2^-22 < TC_KAPPA = 1.2 * 2^-18, and
 *    (|A'| + |B'|)^2 <= (x + 2 e_I)^2. Write delta(x) = C (1 + 2^-17) +
 *    TC_KAPPA (x + 2 e_I)^2 >= |S - s'|.
 *  - The bias C keeps S positive and normal. A tile pair whose distances
 *    x are all at least dmin > 0 with dmin^2 > 2 TC_KAPPA (dmin + 2 e_I)^2
 *    has S >= x^2 - TC_KAPPA (x + 2 e_I)^2 - 2^-18 C > x^2 / 2 (the
 *    ratio falls with x): there C = 2^-100. Any other takes C = 8 TC_KAPPA
 *    e_I^2 + 2^-100: S >= x^2 (1 - 2 TC_KAPPA) + C/2 (use (x + 2e)^2 <= 2x^2
 *    + 8e^2). So rsqrtf never sees 0.
 *  - Coordinates: loc, Delta and B' are each one float32 rounding of their
 *    binary64 values, so with X the exact frame coordinates (x - c_I)/w,
 *    |A' - X_A| + |B' - X_B| <= rho(x) = 2^-23 (x + 1.5 e_I + e_J)(1 + 2^-19),
 *    and | x - D | <= rho(x) for D = |x_i - x_j| / w, the real distance.
 *  - The rest is sdh_kernels.cu's float32 pair: q~ = S r exactly inside
 *    fmaf_rd(S, r, magic), r = rsqrtf(S) = (1 + e_r)/sqrt(S), |e_r| <=
 *    eps_r (measured per device), and the contract's q_c = D (1 +- 2^-50).
 *    For x >= x0 = max(dmin, 1/2), where delta(x) <= x^2 / 64 (checked at
 *    x0 for each tile pair: delta(x)/x^2 falls with x),
 *    |sqrt(S) - x| <= delta / (x + sqrt(x^2 - delta)) <= delta / (1.99216 x),
 *    so
 *      |q~ - q_c| <= Ebar(x) = (1 + eps_r) delta(x) / (1.99216 x)
 *                              + eps_r x + rho(x) + 2^-50 (x + rho(x)),
 *    a convex function of x (delta(x)/x is c/x plus a linear term), so its
 *    largest value over a tile pair's range [x0, dmax] is at an end
 *    (tc_unit_plan). For x < 1/2 (then x0 = 1/2), |sqrt(S) - x| <=
 *    sqrt(delta(x)) <= sqrt(delta(1/2)) <= 1/16: q~ < 3/4 and q_c < 1, row
 *    0 and bucket 0 both (row 0 is never refined). With E = that largest value, sdh_kernels.cu's argument holds
 *    unchanged: the code fmaf_rd(S, r, 2^(23-k) + G 2^-k), G = ceil(E 2^k),
 *    counts a pair in floor(q~ + G 2^-k), and a pair is refined in binary64
 *    iff its k fraction bits are < 2G + 1 and its row is not 0.
 *  Each tile pair gets its own C and G (its own radii and distance range);
 *  the job one k and one row count, for G up to 2^k/32. A tile pair whose
 *  anchor tile is too wide for that (a tile with an outlier, close to its
 *  partners: delta(x0) > x0^2 / 64, or G over the cap) is "wide": it is
 *  counted in binary64, the contract itself, pair by pair (tc_unit_plan).
 */
#ifndef HISTD_TC_PLAN_H
#define HISTD_TC_PLAN_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define TC_HD __host__ __device__
#else
#define TC_HD
#endif

#define TC_TILE 256                                  /* points a tile */
#define TC_KAPPA (1.2 * 0.000003814697265625)        /* 1.2 * 2^-18 */

/* Ebar(x): the bound on |q~ - q_c| for pairs at float32 distance x >= x0
 * of a tile pair whose anchor tile has radius ea and partner tile eb. */
TC_HD static inline double tc_band_at(double x, double ea, double eb, double bias,
                                      double eps_r) {
  double t = x + 2 * ea;
  double delta = bias * (1 + 0x1p-17) + TC_KAPPA * t * t;
  double rho = 0x1p-23 * (x + 1.5 * ea + eb) * (1 + 0x1p-19) + 0x1p-120;
  return (1 + eps_r) * delta / (1.99216 * x) + eps_r * x + rho + 0x1p-50 * (x + rho) +
         0x1p-60;
}

/* A tile pair's frame shift Delta (dl, per axis: each one float32
 * rounding of its binary64 value) and its centres' distance D, in bucket
 * widths; cen holds 3 doubles a tile, inv_w = 1/w. */
TC_HD static inline double tc_unit_gap(const double *cen, uint32_t I, uint32_t J, double inv_w,
                                       float dl[3]) {
  double D2 = 0;
  for (int a = 0; a < 3; a++) {
    double d = (cen[3 * J + a] - cen[3 * I + a]) * inv_w;
    dl[a] = (float)d;
    D2 += d * d;
  }
  return sqrt(D2);
}

/* The job's fixed point and rows (as gpu_engine.c's plan_f32). */
typedef struct tc_job {
  int ok;   /* 0: distances too large for the float32 code: not this path */
  int exact;
  uint32_t k, gcap, rows, rowbase, mask;
  double eps_r;
} tc_job;

/* dmax: the set's bounding-box diagonal over w (histd_dataset_diagonal);
 * exact: 0 for "fast" (no band, no refine). */
static inline tc_job tc_job_plan(double dmax, double eps_r, int exact) {
  tc_job j = {0, exact, 0, 0, 0, 0, 0, eps_r};
  if (!(dmax >= 0 && dmax < 1e6))
    return j;
  /* q~ <= x + E <= dm + 1/16 for every counted pair (G <= gcap) */
  double dm = dmax * (1 + 0x1p-20) + 0x1p-40;
  int k = 0;
  while (k < 22 && (dm + 2) * ldexp(1.0, k + 1) < ldexp(1.0, 23))
    k++;
  if (k < 9)
    return j;
  j.k = (uint32_t)k;
  j.gcap = (1u << (k - 5)) - 1; /* 2G + 1 < 2^k / 16 */
  j.mask = (1u << k) - 1;
  union {
    float f;
    uint32_t u;
  } base = {ldexpf(1.0f, 23 - k)};
  j.rowbase = base.u >> k;
  j.rows = (uint32_t)floor(dm + 0.25) + 2;
  j.ok = 1;
  return j;
}

/* A tile pair: on the tensor cores (tc = 1) with bias C and band G, or
 * wide (tc = 0: binary64 pair by pair). D: the centres' distance, ea, eb:
 * the anchor and partner tiles' radii, all in bucket widths. */
typedef struct tc_unit {
  int tc;
  uint32_t g;
  float bias;
  double e; /* E, the bound on |q~ - q_c| */
} tc_unit;

TC_HD static inline tc_unit tc_unit_plan(const tc_job *j, double D, double ea, double eb) {
  tc_unit u = {0, 0, 0.f, 0};
  /* the float32 distances' range (D from the binary64 centres: its own
   * error is far below the margins) */
  double dmax = (D + ea + eb) * (1 + 0x1p-20) + 0x1p-40;
  double dmin = (D - ea - eb) * (1 - 0x1p-20);
  double x0 = dmin > 0.5 ? dmin : 0.5;
  if (dmax < x0)
    dmax = x0;
  double t0 = dmin + 2 * ea, bias = 0x1p-100;
  if (!(dmin >= 0x1p-40 && dmin * dmin > 2 * TC_KAPPA * t0 * t0))
    bias += 8 * TC_KAPPA * ea * ea;
  /* rounded up to a tf32 value (10 fraction bits), so that the kernel may
   * carry it as one more exact product (1 x C) instead of the accumulator */
  union {
    float f;
    uint32_t u;
  } fbu = {(float)bias};
  if ((double)fbu.f < bias)
    fbu.f = nextafterf(fbu.f, INFINITY);
  if (fbu.u & 0x1fffu)
    fbu.u = (fbu.u | 0x1fffu) + 1;
  float fb = fbu.f;
  u.bias = fb;
  double t = x0 + 2 * ea;
  if (!((double)fb * (1 + 0x1p-17) + TC_KAPPA * t * t <= x0 * x0 / 64))
    return u; /* delta(x0) > x0^2 / 64 */
  double a = tc_band_at(x0, ea, eb, fb, j->eps_r), b = tc_band_at(dmax, ea, eb, fb, j->eps_r);
  u.e = a > b ? a : b;
  double G = j->exact ? ceil(u.e * ldexp(1.0, (int)j->k)) : 0;
  if (j->exact && G < 1)
    G = 1;
  if (!(G <= (double)j->gcap))
    return u;
  u.g = (uint32_t)G;
  u.tc = 1;
  return u;
}

/* ---- the tiles, built on the host ------------------------------------------ */

#include <stdlib.h>
#include <string.h>

#include "morton.h"

typedef struct tc_tiles {
  uint32_t n, tiles;
  double *x, *y, *z; /* the points in that order (the binary64 refine reads them) */
  float *loc;        /* 4 a point, (x, y, z, 0) in its tile's frame; tiles * TC_TILE */
  double *cen;       /* 3 a tile: c_I */
  float *rad;        /* a tile: e_I, rounded up */
} tc_tiles;

static inline void tc_tiles_free(tc_tiles *t) {
  free(t->x);
  free(t->loc);
  free(t->cen);
  free(t->rad);
  memset(t, 0, sizeof *t);
}

/* Sorts ds (finished: its min/max set) in Morton order and cuts it into
 * tiles with their frames for bucket width w. 0 or HISTD_ENOMEM. */
static inline int tc_tiles_build(const histd_dataset *ds, double w, tc_tiles *t) {
  memset(t, 0, sizeof *t);
  uint32_t n = (uint32_t)ds->n, T = (n + TC_TILE - 1) / TC_TILE;
  histd__mkey *key = NULL;
  if (histd__morton_sort(ds, &key) != 0)
    return HISTD_ENOMEM;
  t->n = n;
  t->tiles = T;
  t->x = (double *)malloc(3 * (n ? n : 1) * sizeof(double));
  t->loc = (float *)calloc(4 * (size_t)(T ? T : 1) * TC_TILE, sizeof(float));
  t->cen = (double *)calloc(3 * (size_t)(T ? T : 1), sizeof(double));
  t->rad = (float *)calloc(T ? T : 1, sizeof(float));
  if (!t->x || !t->loc || !t->cen || !t->rad) {
    free(key);
    tc_tiles_free(t);
    return HISTD_ENOMEM;
  }
  t->y = t->x + n;
  t->z = t->x + 2 * (size_t)n;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t o = key[i].index;
    t->x[i] = ds->x[o];
    t->y[i] = ds->y[o];
    t->z[i] = ds->z[o];
  }
  free(key);
  const double iw = 1.0 / w;
  const double *c[3] = {t->x, t->y, t->z};
  for (uint32_t I = 0; I < T; I++) {
    uint32_t i0 = I * TC_TILE, i1 = i0 + TC_TILE < n ? i0 + TC_TILE : n;
    double e2 = 0;
    for (int a = 0; a < 3; a++) {
      double lo = c[a][i0], hi = c[a][i0];
      for (uint32_t i = i0; i < i1; i++) {
        lo = c[a][i] < lo ? c[a][i] : lo;
        hi = c[a][i] > hi ? c[a][i] : hi;
      }
      double m = lo + (hi - lo) / 2;
      t->cen[3 * I + a] = m >= lo && m <= hi ? m : lo;
    }
    for (uint32_t i = i0; i < i1; i++) {
      double s = 0;
      for (int a = 0; a < 3; a++) {
        double d = c[a][i] - t->cen[3 * I + a];
        float f = (float)(d * iw);
        t->loc[4 * (size_t)i + a] = f;
        s += (double)f * f;
      }
      e2 = s > e2 ? s : e2;
    }
    double e = sqrt(e2) * (1 + 0x1p-20);
    float fe = (float)e;
    if ((double)fe < e)
      fe = nextafterf(fe, INFINITY);
    t->rad[I] = fe;
  }
  return 0;
}

#endif
