/*
 * definition.h -- the exactness contract, written out again for the tests,
 * independently of the engine: an O(N^2) brute force over every pair i < j,
 * with each operation in binary64 on its own line so the compiler (built
 * with -ffp-contract=off) cannot fuse them; and the family's periodic
 * minimum image and bins, from their text in shared/DESIGN.md and
 * histd/pair.h.
 */
#ifndef HISTD_TEST_DEFINITION_H
#define HISTD_TEST_DEFINITION_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

/* The contract's distance between two points, each operation rounded on
 * its own. */
static inline double definition_distance(double xi, double yi, double zi, double xj,
                                         double yj, double zj) {
  double dx = xi - xj;
  double dy = yi - yj;
  double dz = zi - zj;
  double sxx = dx * dx;
  double syy = dy * dy;
  double szz = dz * dz;
  double s = sxx + syy;
  s = s + szz;
  return sqrt(s);
}

/* A periodic box as histd.h lays it out (a = (ax, 0, 0), b = (bx, by, 0),
 * c = (cx, cy, cz)); kind 0 open, 1 orthorhombic, 2 triclinic. */
typedef struct def_box {
  int kind;
  double ax, bx, by, cx, cy, cz;
} def_box;

/* One periodic axis: d - L nearbyint(d / L), each operation on its own. */
static inline double definition_wrap(double d, double len) {
  double q = d / len;
  double n = nearbyint(q);
  double t = len * n;
  return d - t;
}

/* The minimum image of a difference vector (dx, dy, dz), in place, by the
 * rule histd/pair.h's text states: per axis in an orthorhombic box; in a
 * triclinic one z's image, then y's, then x's. */
static inline void definition_min_image(const def_box *b, double *dx, double *dy, double *dz) {
  if (b->kind == 1) {
    *dx = definition_wrap(*dx, b->ax);
    *dy = definition_wrap(*dy, b->by);
    *dz = definition_wrap(*dz, b->cz);
  } else if (b->kind == 2) {
    double n = nearbyint(*dz / b->cz);
    double t = b->cz * n;
    *dz = *dz - t;
    t = b->cy * n;
    *dy = *dy - t;
    t = b->cx * n;
    *dx = *dx - t;
    n = nearbyint(*dy / b->by);
    t = b->by * n;
    *dy = *dy - t;
    t = b->bx * n;
    *dx = *dx - t;
    *dx = definition_wrap(*dx, b->ax);
  }
}

/* The contract's distance between two points in a box (open: kind 0). */
static inline double definition_box_distance(const def_box *b, double xi, double yi, double zi,
                                             double xj, double yj, double zj) {
  double dx = xi - xj;
  double dy = yi - yj;
  double dz = zi - zj;
  definition_min_image(b, &dx, &dy, &dz);
  return definition_distance(dx, dy, dz, 0, 0, 0); /* dx - 0 is dx */
}

/* The slot of a distance d in the contract's bins: equal widths (edges
 * NULL) floor(d / width) when below count, else count + 1 (overflow);
 * explicit edges E[0..count] the k with E[k] <= d < E[k+1], count when
 * d < E[0] (below), else count + 1 (overflow). */
static inline uint32_t definition_slot(double d, double width, const double *edges,
                                       uint32_t count) {
  if (edges == NULL) {
    double q = d / width;
    double f = floor(q);
    return f < (double)count ? (uint32_t)f : count + 1;
  }
  if (d < edges[0])
    return count;
  for (uint32_t k = 0; k < count; k++)
    if (edges[k] <= d && d < edges[k + 1])
      return k;
  return count + 1;
}

/* Axis 2's bin of v in n2 equal bins of width fl(max2 / n2) from 0, or n2
 * (out of range: v >= max2, or v > max2 when `closed`); floor(v / width),
 * the last bin where that reaches n2. */
static inline uint32_t definition_axis2(double v, double max2, uint32_t n2, int closed) {
  if (closed ? !(v <= max2) : !(v < max2))
    return n2;
  double width = max2 / n2;
  double q = v / width;
  double f = floor(q);
  return f < (double)n2 ? (uint32_t)f : n2 - 1;
}

/* Two axes (shared/DESIGN.md): DEF_D the histogram of d (n2 = 1),
 * DEF_RP_PI (r_p, pi), DEF_S_MU (s, mu). The pair's minimum-image
 * difference dx, dy, dz = i - j; line of sight z: r_p = sqrt(dx*dx +
 * dy*dy), pi = |dz|; midpoint: l = v_i + v_j, pi = |s.l| / sqrt(l.l) (0
 * when l.l = 0), r_p = sqrt(max(s.s - pi*pi, 0)), each dot product (x + y)
 * + z; s = sqrt(s.s), mu = pi / s (0 when s.s = 0). Axis 1 (d, r_p or s:
 * *u) by definition_slot's bins, axis 2 (pi: [0, max2); mu: [0, max2]) by
 * definition_axis2. Returns k1 * n2 + k2; n1 n2 (below: axis 1 below E[0]
 * with axis 2 in range) or n1 n2 + 1 (overflow: either out of range). */
enum { DEF_D = 0, DEF_RP_PI = 1, DEF_S_MU = 2 };
static inline uint32_t definition_slot2(int axes, int midpoint, const def_box *bx, double width,
                                        const double *edges, uint32_t n1, double max2,
                                        uint32_t n2, double xi, double yi, double zi,
                                        double xj, double yj, double zj, double *u_out) {
  const uint32_t slots = n1 * n2;
  double dx = xi - xj;
  double dy = yi - yj;
  double dz = zi - zj;
  definition_min_image(bx, &dx, &dy, &dz);
  double xx = dx * dx, yy = dy * dy, zz = dz * dz;
  double ss = xx + yy;
  ss = ss + zz;
  double rp, pi;
  if (!midpoint) {
    double t = xx + yy;
    rp = sqrt(t);
    pi = fabs(dz);
  } else {
    double lx = xi + xj, ly = yi + yj, lz = zi + zj;
    double t1 = dx * lx, t2 = dy * ly, t3 = dz * lz;
    double sl = t1 + t2;
    sl = sl + t3;
    t1 = lx * lx, t2 = ly * ly, t3 = lz * lz;
    double ll = t1 + t2;
    ll = ll + t3;
    if (ll > 0) {
      double root = sqrt(ll);
      pi = fabs(sl) / root;
    } else {
      pi = 0;
    }
    double pp = pi * pi;
    double t = ss - pp;
    rp = sqrt(t > 0 ? t : 0);
  }
  double u;
  uint32_t k2;
  if (axes == DEF_D) {
    u = sqrt(ss);
    k2 = 0;
  } else if (axes == DEF_RP_PI) {
    u = rp;
    k2 = definition_axis2(pi, max2, n2, 0);
  } else {
    u = sqrt(ss);
    double mu = ss > 0 ? pi / u : 0;
    k2 = definition_axis2(mu, max2, n2, 1);
  }
  *u_out = u;
  if (k2 == n2)
    return slots + 1;
  uint32_t k1 = definition_slot(u, width, edges, n1);
  return k1 == n1 ? slots : k1 == n1 + 1 ? slots + 1 : k1 * n2 + k2;
}

typedef struct def_hist {
  uint64_t *counts;
  uint64_t overflow;
  uint64_t total;
} def_hist;

static inline def_hist definition_histogram(const double *x, const double *y,
                                            const double *z, size_t n,
                                            double width, uint32_t buckets) {
  def_hist h = {calloc(buckets ? buckets : 1, sizeof(uint64_t)), 0, 0};
  for (size_t i = 0; i < n; i++) {
    for (size_t j = i + 1; j < n; j++) {
      double d = definition_distance(x[i], y[i], z[i], x[j], y[j], z[j]);
      double q = d / width;
      double b = floor(q);
      if (b < (double)buckets)
        h.counts[(size_t)b]++;
      else
        h.overflow++;
      h.total++;
    }
  }
  return h;
}

#endif
