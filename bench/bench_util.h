/*
 * bench_util.h -- what the engine's benchmarks share: a seeded generator,
 * uniform points in a cube, and the median of a set of timings.
 */
#ifndef HISTD_BENCH_UTIL_H
#define HISTD_BENCH_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "histd/histd.h"

static uint64_t bench_rng_state = 0x5EED2026ull;

/* Uniform in [0, 1) (xorshift64*). */
static inline double bench_rnd(void) {
  bench_rng_state ^= bench_rng_state >> 12;
  bench_rng_state ^= bench_rng_state << 25;
  bench_rng_state ^= bench_rng_state >> 27;
  return (double)((bench_rng_state * 2685821657736338717ull) >> 11) * 0x1p-53;
}

/* n points uniform in [0, side)^3, with weights in [0.5, 1.5) if asked. */
static inline histd_dataset bench_cube(size_t n, double side, bool weights) {
  histd_dataset ds;
  histd_dataset_alloc(&ds, n, NULL, 0);
  if (weights)
    histd_dataset_alloc_weights(&ds, NULL, 0);
  for (size_t i = 0; i < n; i++) {
    ds.x[i] = bench_rnd() * side;
    ds.y[i] = bench_rnd() * side;
    ds.z[i] = bench_rnd() * side;
    if (weights)
      ds.w[i] = 0.5 + bench_rnd();
  }
  histd_dataset_finish(&ds, NULL, 0);
  return ds;
}

static inline int bench_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The median of t[0..runs) (sorts t). */
static inline double bench_median(double *t, int runs) {
  qsort(t, (size_t)runs, sizeof *t, bench_cmp_double);
  return runs % 2 ? t[runs / 2] : 0.5 * (t[runs / 2 - 1] + t[runs / 2]);
}

#endif
