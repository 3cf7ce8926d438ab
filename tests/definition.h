/*
 * definition.h -- the exactness contract, written out again for the tests,
 * independently of the engine: an O(N^2) brute force over every pair i < j,
 * with each operation in binary64 on its own line so the compiler (built
 * with -ffp-contract=off) cannot fuse them.
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
