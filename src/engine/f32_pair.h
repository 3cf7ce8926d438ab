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
 * whichever image each takes; no test of the half-box is needed. (The
 * triclinic rule's image is not chosen axis by axis: a different k there
 * moves the other components, so triclinic boxes are not planned.)
 * The contract's own component is within 2^-51 (2M + L) of t - k' L, and
 * its d within 4 ed of the exact image's length, ed = 2^-44 (sum M + sum
 * L), some 2^9 times its roundings. So |D32| is within e_x + e_y + e_z
 * of the exact image's length (r_p: e_x + e_y; |dz|: e_z), and the float32
 * bins' tables (fast_bins.h) take e1 = that plus 4 ed.
 */
#ifndef HISTD_F32_PAIR_H
#define HISTD_F32_PAIR_H

#include <math.h>
#include <stdbool.h>

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

/* One axis of the float32 difference b - a (centred float32 points):
 * kind 1 (orthorhombic) takes the image with len = fl32(L) and inv =
 * fl32(1 / L); kind 0 (open) leaves it. Within the bound of
 * histd__f32_bounds of the contract's component, in magnitude. */
HISTD_PAIR_FN float histd__f32_axis(int kind, float a, float b, float len, float inv) {
  float d = HISTD_F32_SUB(b, a);
  if (kind == 1)
    d = HISTD_F32_FMA(-rintf(HISTD_F32_MUL(d, inv)), len, d);
  return d;
}

/* The bounds of the head for points whose coordinates lie in [lo[k],
 * hi[k]] (both sets) under metric m (kind 0 or 1): the centre c, each
 * component's bound e[k], the contract's ed, and m's box in float32
 * (len32, inv32); false where they do not apply (a triclinic box,
 * coordinates or box lengths beyond float32's comfortable range). */
static inline bool histd__f32_bounds(const histd_metric *m, const double lo[3],
                                     const double hi[3], double c[3], double e[3], double *ed,
                                     float len32[3], float inv32[3]) {
  if (m->kind != 0 && m->kind != 1)
    return false;
  const double u = 0x1p-24, g = 1 + 0x1p-20;
  const double len[3] = {m->ax, m->by, m->cz};
  double sum = 0;
  for (int k = 0; k < 3; k++) {
    c[k] = 0.5 * lo[k] + 0.5 * hi[k];
    const double mk = fmax(fabs(lo[k] - c[k]), fabs(hi[k] - c[k])) * (1 + 0x1p-50); /* M */
    if (!(mk <= 0x1p100))
      return false;
    const double rho = mk * (u + 0x1p-52) + 0x1p-125;
    const double d1 = 2 * rho + u * (2 * mk + 2 * rho) + 0x1p-125;
    e[k] = d1;
    len32[k] = inv32[k] = 0;
    if (m->kind == 1) {
      const double l = len[k];
      if (!(l >= 0x1p-60 && l <= 0x1p100))
        return false;
      len32[k] = (float)l;
      inv32[k] = (float)(1 / l);
      const double z = d1 + 2 * u * (2 * mk + d1) * g + l * 0x1p-125;
      e[k] = d1 + u * (2 * mk + d1 + l) * g + u * (l / 2 + z) * g + 0x1p-125 + 2 * z;
      sum += l;
    }
    e[k] = e[k] * (1 + 0x1p-16) + 0x1p-120;
    sum += mk;
  }
  *ed = 0x1p-44 * sum;
  return true;
}

#endif /* HISTD_F32_PAIR_H */
