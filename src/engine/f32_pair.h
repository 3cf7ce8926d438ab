/*
 * f32_pair.h -- a pair's difference vector in float32, and the bound on
 * how far each of its components' magnitudes can be from the contract's
 * minimum image: written once, for the host (the bounds, and the unit
 * test that holds the arithmetic to them, tests/engine/test_f32_pair.c)
 * and for the device (tiled-stats' float32 pairs, kernels/stats_kernels.cu).
 *
 * The points: X~ = fl32(fl64(x - c)) on each axis, c a centre shared by
 * A and B, M >= |x - c| over both sets on that axis. With u = 2^-24 and
 * flushed subnormals (-ftz on the device) adding 2^-125 to an operation:
 *   rho = M (u + 2^-52) + 2^-125 bounds |X~ - (x - c)|;
 *   dx = fl32(X~_j - X~_i) is within d1 = 2 rho + u (2M + 2 rho) + 2^-125
 *   of t = x_j - x_i (exact), the difference the contract rounds.
 * Open: the component is dx, within e_c = d1 of t (the contract rounds t
 * once; ed below covers that).
 * Orthorhombic, box length L on the axis: k = rintf(fl32(dx fl32(1/L)))
 * and c32 = fmaf(-k, fl32(L), dx), one rounding. The product is within
 * 2u (1 + 2^-20) |dx| / L of dx / L, so |t - k L| <= L / 2 + z with z =
 * d1 + 2u (2M + d1) (1 + 2^-20) (+ L 2^-125 for a flushed quotient); and
 * c32 is within d1 + u (2M + d1 + L) (1 + 2^-20) (|k| times fl32(L)'s
 * error) + u (L / 2 + z) (1 + 2^-20) (its rounding) of t - k L. The
 * contract takes its own image k' (nearbyint of its quotient, within
 * 2^-50 of exact), so |t - k' L| <= L / 2 + z too. Where k = k', |c32| is
 * within that of |t - k' L|. Where they differ, |t - k L| + |t - k' L| >=
 * L puts both within z of L / 2, so their magnitudes differ by at most
 * 2 z. So | |c32| - |t - k' L| | <= e_c = (the rounding terms) + 2 z,
 * whichever image each takes; no test of the half-box is needed.
 * Triclinic (the contract's rule: z's image, then y's, then x's, each
 * step moving the components below it): a different k at z or y moves the
 * other components by a lattice vector, so there each step's float32
 * quotient q must be clear of the half-integers, |q - rintf(q)| < h = 1/2
 * - m (q - rintf(q) is exact for |q| < 2^22), m bounding |q - the
 * contract's quotient|: then both take the same k, the two vectors are the
 * same lattice vector, and each component is within its accumulated
 * error (each step adds |k| times the float32 box entry's error and the
 * fma's rounding). A pair not clear is not sure (histd__f32_diff returns
 * false) and goes to the contract. x's step is the orthorhombic one,
 * whose |c| argument needs no test. histd__f32_bounds sums these terms
 * step by step.
 * The contract's own component is within 2^-51 (2M + L) of t - k' L, and
 * its d within 4 ed of the exact image's length, ed = 2^-44 (sum M + sum
 * L) (triclinic: the tilts' magnitudes added, times 1 + the largest |k|,
 * for the contract's roundings of k times each entry), some 2^9 times its
 * roundings. So |D32| is within e_x + e_y + e_z
 * of the exact image's length (r_p: e_x + e_y; |dz|: e_z), and the float32
 * bins' tables (fast_bins.h) take e1 = that plus 4 ed.
 */
#ifndef HISTD_F32_PAIR_H
#define HISTD_F32_PAIR_H

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "fast_bins.h"   /* histd__float_down */
#include "histd/pair.h" /* HISTD_PAIR_FN, histd_metric */

#ifdef __CUDACC__
#define HISTD_F32_SUB(a, b) __fsub_rn((a), (b))
#define HISTD_F32_MUL(a, b) __fmul_rn((a), (b))
#define HISTD_F32_FMA(a, b, c) __fmaf_rn((a), (b), (c))
#else
#define HISTD_F32_SUB(a, b) ((a) - (b)) /* one rounding each: -ffp-contract=off */
#define HISTD_F32_MUL(a, b) ((a) * (b))
#define HISTD_F32_FMA(a, b, c) fmaf((a), (b), (c))
#endif

/* A box in float32 for histd__f32_diff: the lengths (ax, by, cz), their
 * inverses, the triclinic entries, and the two steps' clear thresholds. */
typedef struct histd__f32_box {
  float len[3], inv[3];
  float bx, cx, cy; /* triclinic */
  float hz, hy;     /* triclinic: z's and y's quotients must be this clear of k */
} histd__f32_box;

/* One periodic axis as the orthorhombic rule takes it: d - fl32(L) k,
 * k = rintf(fl32(d fl32(1 / L))), one rounding. */
HISTD_PAIR_FN float histd__f32_wrap(float d, float len, float inv) {
  return HISTD_F32_FMA(-rintf(HISTD_F32_MUL(d, inv)), len, d);
}

/* The float32 difference b - a of centred float32 points under metric kind
 * (0 open, 1 orthorhombic, 2 triclinic) into d[3]: each component's
 * magnitude within histd__f32_bounds' e of the contract's minimum image
 * where it returns true; false (triclinic only) where a step's image is
 * in doubt, and the contract must take the pair. */
HISTD_PAIR_FN bool histd__f32_diff(int kind, const histd__f32_box *B, float ax, float ay,
                                   float az, float bx, float by, float bz, float d[3]) {
  float dx = HISTD_F32_SUB(bx, ax), dy = HISTD_F32_SUB(by, ay), dz = HISTD_F32_SUB(bz, az);
  bool sure = true;
  if (kind == 1) {
    dx = histd__f32_wrap(dx, B->len[0], B->inv[0]);
    dy = histd__f32_wrap(dy, B->len[1], B->inv[1]);
    dz = histd__f32_wrap(dz, B->len[2], B->inv[2]);
  } else if (kind == 2) {
    float q = HISTD_F32_MUL(dz, B->inv[2]), k = rintf(q);
    sure = fabsf(HISTD_F32_SUB(q, k)) < B->hz;
    dz = HISTD_F32_FMA(-k, B->len[2], dz);
    dy = HISTD_F32_FMA(-k, B->cy, dy);
    dx = HISTD_F32_FMA(-k, B->cx, dx);
    q = HISTD_F32_MUL(dy, B->inv[1]), k = rintf(q);
    sure = sure && fabsf(HISTD_F32_SUB(q, k)) < B->hy;
    dy = HISTD_F32_FMA(-k, B->len[1], dy);
    dx = HISTD_F32_FMA(-k, B->bx, dx);
    dx = histd__f32_wrap(dx, B->len[0], B->inv[0]);
  }
  d[0] = dx, d[1] = dy, d[2] = dz;
  return sure;
}

/* x's step of the orthorhombic rule on a component within err of its
 * exact value and at most dmax in magnitude, box length l: the head's
 * bound (the rounding terms plus 2 z). */
static inline double histd__f32_wrap_err(double err, double dmax, double l) {
  const double u = 0x1p-24, g = 1 + 0x1p-20;
  const double z = err + 2 * u * dmax * g + l * 0x1p-125;
  return err + u * (dmax + l) * g + u * (l / 2 + z) * g + 0x1p-125 + 2 * z;
}

/* A fused step d - k x (one rounding) on a component within err of its
 * exact value, |d| <= *dmax, |k| <= kmax, fl32(x) within u |x| of x: the
 * new error; *dmax becomes the bound on the result. */
static inline double histd__f32_step_err(double err, double *dmax, double kmax, double x) {
  const double u = 0x1p-24, g = 1 + 0x1p-20;
  *dmax += kmax * fabs(x) * (1 + u) + err;
  return err + kmax * u * fabs(x) * g + u * *dmax * g + 0x1p-125;
}

/* The quotient q = fl32(d fl32(1 / l)) of a component within err of its
 * exact value, |d| <= dmax: how far it can be from the contract's (two
 * roundings and the error here; the contract's within 2^-50). */
static inline double histd__f32_quot_err(double err, double dmax, double l) {
  const double q = dmax / l;
  return err / l + 2.01 * 0x1p-24 * q * (1 + 0x1p-20) + 0x1p-50 * q + 0x1p-125;
}

/* The bounds of the head for points whose coordinates lie in [lo[k],
 * hi[k]] (both sets) under metric m: the centre c, each component's bound
 * e[k], the contract's ed, and m's box in float32 (B); false where they do
 * not apply (coordinates or box lengths beyond float32's comfortable
 * range, or triclinic quotients too large or too uncertain to tell the
 * images apart). */
static inline bool histd__f32_bounds(const histd_metric *m, const double lo[3],
                                     const double hi[3], double c[3], double e[3], double *ed,
                                     histd__f32_box *B) {
  if (m->kind < 0 || m->kind > 2)
    return false;
  const double u = 0x1p-24;
  const double len[3] = {m->ax, m->by, m->cz};
  double sum = 0, dmax[3];
  memset(B, 0, sizeof *B);
  for (int k = 0; k < 3; k++) {
    c[k] = 0.5 * lo[k] + 0.5 * hi[k];
    const double mk = fmax(fabs(lo[k] - c[k]), fabs(hi[k] - c[k])) * (1 + 0x1p-50); /* M */
    if (!(mk <= 0x1p100))
      return false;
    const double rho = mk * (u + 0x1p-52) + 0x1p-125;
    e[k] = 2 * rho + u * (2 * mk + 2 * rho) + 0x1p-125; /* d1 */
    dmax[k] = 2 * mk + e[k];
    sum += mk;
    if (m->kind != 0) {
      const double l = len[k];
      if (!(l >= 0x1p-60 && l <= 0x1p100))
        return false;
      B->len[k] = (float)l;
      B->inv[k] = (float)(1 / l);
      sum += l;
    }
  }
  if (m->kind == 1)
    for (int k = 0; k < 3; k++)
      e[k] = histd__f32_wrap_err(e[k], dmax[k], len[k]);
  if (m->kind == 2) {
    /* z: its quotient clear by mz, then the step on z, y and x (a clear
     * quotient leaves |dz - k cz| <= cz / 2 + its error) */
    const double mz = histd__f32_quot_err(e[2], dmax[2], m->cz), kz = dmax[2] / m->cz + 0.5;
    e[2] = histd__f32_step_err(e[2], &dmax[2], kz, m->cz);
    dmax[2] = fmin(dmax[2], m->cz / 2 + 2 * e[2]);
    e[1] = histd__f32_step_err(e[1], &dmax[1], kz, m->cy);
    e[0] = histd__f32_step_err(e[0], &dmax[0], kz, m->cx);
    /* y, likewise on y and x */
    const double my = histd__f32_quot_err(e[1], dmax[1], m->by), ky = dmax[1] / m->by + 0.5;
    e[1] = histd__f32_step_err(e[1], &dmax[1], ky, m->by);
    dmax[1] = fmin(dmax[1], m->by / 2 + 2 * e[1]);
    e[0] = histd__f32_step_err(e[0], &dmax[0], ky, m->bx);
    e[0] = histd__f32_wrap_err(e[0], dmax[0], m->ax); /* x: the orthorhombic step */
    if (!(mz < 0.25 && my < 0.25 && kz < 0x1p20 && ky < 0x1p20))
      return false;
    B->hz = histd__float_down(0.5 - mz);
    B->hy = histd__float_down(0.5 - my);
    B->bx = (float)m->bx, B->cx = (float)m->cx, B->cy = (float)m->cy;
    /* the contract's roundings grow with k times the entries */
    sum = (sum + fabs(m->bx) + fabs(m->cx) + fabs(m->cy)) * (1 + fmax(kz, ky));
  }
  for (int k = 0; k < 3; k++)
    e[k] = e[k] * (1 + 0x1p-16) + 0x1p-120;
  *ed = 0x1p-44 * sum;
  return true;
}

#endif /* HISTD_F32_PAIR_H */
