/*
 * pair.h -- the exactness contract for one pair, written once, for C and
 * CUDA alike.
 *
 * Every operation below is one IEEE-754 binary64 operation rounded to
 * nearest on its own: C compiles it with -ffp-contract=off, CUDA through
 * the __d*_rn intrinsics, which nvcc never fuses. So a kernel that calls
 * these functions computes the definition itself, bit for bit, on either
 * side; a kernel that computes faster (float32, vectors) must agree with
 * them on every pair it counts in precision "exact".
 *
 * The distance (histd_pair_d):
 *
 *   dx = xi - xj;  dy = yi - yj;  dz = zi - zj
 *   periodic, orthorhombic box (ax, by, cz), per axis:
 *       dx = dx - ax * nearbyint(dx / ax)     (same for y with by, z with cz)
 *   periodic, triclinic box (a, b, c lower-triangular, histd.h), in order:
 *       n = nearbyint(dz / cz);  dz = dz - cz*n;  dy = dy - cy*n;  dx = dx - cx*n
 *       n = nearbyint(dy / by);  dy = dy - by*n;  dx = dx - bx*n
 *       n = nearbyint(dx / ax);  dx = dx - ax*n
 *   s = (dx*dx + dy*dy) + dz*dz;  d = sqrt(s)
 *
 * nearbyint rounds half to even (the default rounding mode). The triclinic
 * rule is LAMMPS's minimum image written with nearbyint; for every pair
 * whose nearest image lies within half the box's shortest perpendicular
 * width (the largest r_max a job may ask for) it finds that image, since
 * that half-width is at most ax/2, by/2 and cz/2.
 *
 * The bin (histd_pair_bin): WIDTH bins b = floor(d / w), overflow when
 * b >= count; EDGES bins k with E[k] <= d < E[k+1], below when d < E[0],
 * overflow when d >= E[count]. The bin index returned is 0..count-1, or
 * HISTD_BIN_BELOW / HISTD_BIN_OVER.
 */
#ifndef HISTD_PAIR_H
#define HISTD_PAIR_H

#include <stdint.h>

#ifdef __CUDACC__
/* device code only: the __d*_rn intrinsics exist on the device alone */
#define HISTD_PAIR_FN __device__ static inline
#define HISTD_ADD(a, b) __dadd_rn((a), (b))
#define HISTD_SUB(a, b) __dsub_rn((a), (b))
#define HISTD_MUL(a, b) __dmul_rn((a), (b))
#define HISTD_DIV(a, b) __ddiv_rn((a), (b))
#define HISTD_SQRT(a) __dsqrt_rn(a)
#define HISTD_RINT(a) rint(a)
#define HISTD_FLOOR(a) floor(a)
#define HISTD_LOG2F(a) __log2f(a)
#else
#include <math.h>
#define HISTD_PAIR_FN static inline
#define HISTD_ADD(a, b) ((a) + (b))
#define HISTD_SUB(a, b) ((a) - (b))
#define HISTD_MUL(a, b) ((a) * (b))
#define HISTD_DIV(a, b) ((a) / (b))
#define HISTD_SQRT(a) sqrt(a)
#define HISTD_RINT(a) histd_rint(a)
#define HISTD_FLOOR(a) floor(a)
#define HISTD_LOG2F(a) log2f(a)
/* nearbyint in the default rounding mode, inline: adding and subtracting
 * 1.5 * 2^52 rounds to the nearest integer, ties to even, exactly, for
 * |x| < 2^51; larger doubles are integers already. (libm's nearbyint is a
 * call on baseline x86-64.) It may return +0 where nearbyint gives -0,
 * which no distance can tell: L * (+-0) subtracted from dx leaves dx's
 * square unchanged. -ffp-contract=off and no fast-math keep both roundings. */
static inline double histd_rint(double x) {
  const double magic = 0x1.8p52;
  if (!(__builtin_fabs(x) < 0x1p51))
    return x;
  double t = x + magic;
  return t - magic;
}
#endif

#define HISTD_BIN_BELOW 0xFFFFFFFEu
#define HISTD_BIN_OVER 0xFFFFFFFFu

/* The metric, flattened for kernels: kind 0 open, 1 orthorhombic, 2
 * triclinic; iax, iby, icz are 1/ax, 1/by, 1/cz (histd_image's shortcut). */
typedef struct histd_metric {
  int kind;
  double ax, bx, by, cx, cy, cz;
  double iax, iby, icz;
} histd_metric;

/* Whether q, an estimate of the rounded quotient x = fl(a / b) within
 * about 3u |x| of it (u = 2^-53), is far enough from every point t + k
 * (k an integer) that q and x lie on the same side of each: then q can
 * stand for x in floor (t = 0) or nearbyint (t = 1/2). The margin,
 * 2^-30 (1 + |q|), is millions of times that error. */
HISTD_PAIR_FN int histd_clear_of(double q, double t) {
  double f = HISTD_SUB(q, HISTD_FLOOR(HISTD_SUB(q, t))); /* in [t, t + 1) */
  double margin = HISTD_MUL(0x1p-30, HISTD_ADD(1.0, q < 0 ? -q : q));
  return HISTD_SUB(f, t) > margin && HISTD_SUB(HISTD_ADD(t, 1.0), f) > margin;
}

/* nearbyint(d / L), the periodic image of one axis, given inv = fl(1 / L).
 * q = fl(d * inv) is within 3u |d / L| of fl(d / L) (two roundings, and
 * fl(d / L)'s own); where q is clear of every half-integer, nearbyint(q)
 * is nearbyint(fl(d / L)) (nearbyint is monotone and q, fl(d / L) lie
 * between the same two half-integers). Elsewhere (about one pair in 10^8,
 * and ties) the division is done.
 *
 * "Clear" is histd_clear_of's margin m, measured from k = nearbyint(q):
 * e = q - k is exact (k = 0, or q within a factor 2 of k: Sterbenz; past
 * |q| = 2^29 the margin passes 1/2 and the test fails), so |e| < 1/2 - m
 * puts q more than m, less a rounding of 1/2 - m, from every
 * half-integer: still millions of times the error. Fewer operations than
 * histd_clear_of's floor and two sides, which every periodic pair pays on
 * every axis. */
HISTD_PAIR_FN double histd_image(double d, double len, double inv) {
  const double q = HISTD_MUL(d, inv), k = HISTD_RINT(q), e = HISTD_SUB(q, k);
  const double margin = HISTD_MUL(0x1p-30, HISTD_ADD(1.0, q < 0 ? -q : q));
  if ((e < 0 ? -e : e) < HISTD_SUB(0.5, margin))
    return k;
  return HISTD_RINT(HISTD_DIV(d, len));
}

/* One periodic axis: d - L * nearbyint(d / L). */
HISTD_PAIR_FN double histd_wrap(double d, double len, double inv) {
  return HISTD_SUB(d, HISTD_MUL(len, histd_image(d, len, inv)));
}

/* The minimum image of a difference vector, in place (open: unchanged). */
HISTD_PAIR_FN void histd_min_image(const histd_metric *m, double *dx, double *dy, double *dz) {
  if (m->kind == 1) {
    *dx = histd_wrap(*dx, m->ax, m->iax);
    *dy = histd_wrap(*dy, m->by, m->iby);
    *dz = histd_wrap(*dz, m->cz, m->icz);
  } else if (m->kind == 2) {
    double k = histd_image(*dz, m->cz, m->icz);
    *dz = HISTD_SUB(*dz, HISTD_MUL(m->cz, k));
    *dy = HISTD_SUB(*dy, HISTD_MUL(m->cy, k));
    *dx = HISTD_SUB(*dx, HISTD_MUL(m->cx, k));
    k = histd_image(*dy, m->by, m->iby);
    *dy = HISTD_SUB(*dy, HISTD_MUL(m->by, k));
    *dx = HISTD_SUB(*dx, HISTD_MUL(m->bx, k));
    *dx = histd_wrap(*dx, m->ax, m->iax);
  }
}

/* The contract's s of a difference vector dx = xi - xj, ... (each
 * difference rounded on its own): its minimum image, then the sum of
 * squares. */
HISTD_PAIR_FN double histd_diff_s(const histd_metric *m, double dx, double dy, double dz) {
  histd_min_image(m, &dx, &dy, &dz);
  return HISTD_ADD(HISTD_ADD(HISTD_MUL(dx, dx), HISTD_MUL(dy, dy)), HISTD_MUL(dz, dz));
}

/* The contract's squared distance s of one pair under the metric. */
HISTD_PAIR_FN double histd_pair_s(const histd_metric *m, double xi, double yi, double zi,
                                  double xj, double yj, double zj) {
  return histd_diff_s(m, HISTD_SUB(xi, xj), HISTD_SUB(yi, yj), HISTD_SUB(zi, zj));
}

/* The distance d = sqrt(s). */
HISTD_PAIR_FN double histd_pair_d(const histd_metric *m, double xi, double yi, double zi,
                                  double xj, double yj, double zj) {
  return HISTD_SQRT(histd_pair_s(m, xi, yi, zi, xj, yj, zj));
}

/* WIDTH bins: floor(d / w), or HISTD_BIN_OVER at or beyond count, given
 * inv = fl(1 / w): floor(fl(d * inv)) where that is clear of the integers
 * (histd_clear_of), else the division. */
HISTD_PAIR_FN uint32_t histd_bin_width(double d, double width, double inv, uint32_t count) {
  double q = HISTD_MUL(d, inv);
  double b = HISTD_FLOOR(histd_clear_of(q, 0) ? q : HISTD_DIV(d, width));
  return b < (double)count ? (uint32_t)b : HISTD_BIN_OVER;
}

/* EDGES bins: the k with E[k] <= d < E[k+1], by bisection. */
HISTD_PAIR_FN uint32_t histd_bin_edges(double d, const double *edges, uint32_t count) {
  if (!(d >= edges[0]))
    return HISTD_BIN_BELOW;
  if (d >= edges[count])
    return HISTD_BIN_OVER;
  uint32_t lo = 0, hi = count; /* edges[lo] <= d < edges[hi] */
  while (hi - lo > 1) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (d >= edges[mid])
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

/* histd_bin_edges's answer where the edges are a geometric row (log bins,
 * histd_edges_guess below says which): a first guess from the float32 log
 * of d, floor(log2(d) ga + gb), within a bin or two of the answer, then
 * moved by the edges themselves to the k with edges[k] <= d < edges[k+1].
 * The guess only decides where the comparisons start, so any guess gives
 * the search's answer; a good one saves its steps (GS2 on an H200: 1.46x).
 * ga 0 (edges that are no such row): histd_bin_edges itself. */
HISTD_PAIR_FN uint32_t histd_bin_edges_guess(double d, const double *edges, uint32_t count,
                                             float ga, float gb) {
  if (ga == 0)
    return histd_bin_edges(d, edges, count);
  if (!(d >= edges[0]))
    return HISTD_BIN_BELOW;
  if (d >= edges[count])
    return HISTD_BIN_OVER;
  const float g = HISTD_LOG2F((float)d) * ga + gb;
  uint32_t k = !(g > 0) ? 0 : g >= (float)(count - 1) ? count - 1 : (uint32_t)g;
  while (d < edges[k]) /* (stops at 0 at the latest: edges[0] <= d) */
    k--;
  while (d >= edges[k + 1]) /* (stops at count - 1 at the latest: d < edges[count]) */
    k++;
  return k;
}

/* The guess's ga and gb for edges[0..count] (1, and ga 0 where the edges
 * are no geometric row within a thousandth of a bin, or leave [1e-30,
 * 1e30], where float32's log would not serve). */
static inline int histd_edges_guess(const double *e, uint32_t count, float *ga, float *gb) {
  *ga = *gb = 0;
  if (e == 0 || count < 2 || !(e[0] >= 1e-30 && e[count] <= 1e30))
    return 0;
  const double q = log2(e[count] / e[0]) / count;
  if (!(q > 0))
    return 0;
  for (uint32_t k = 0; k <= count; k++)
    if (!(fabs(log2(e[k] / e[0]) / q - k) < 1e-3))
      return 0;
  *ga = (float)(1 / q);
  *gb = (float)(-log2(e[0]) / q);
  return 1;
}

#endif /* HISTD_PAIR_H */
