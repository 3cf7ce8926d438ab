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
