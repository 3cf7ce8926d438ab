/*
 * pointsets.h -- test point sets of several shapes, shared by the engine
 * and GPU suites. Each fills a dataset allocated with histd_dataset_alloc
 * and finishes it (bounds).
 */
#ifndef HISTD_TEST_POINTSETS_H
#define HISTD_TEST_POINTSETS_H

#include "check.h"
#include "histd/histd.h"

typedef enum {
  SHAPE_UNIFORM,    /* uniform in [0, side)^3                               */
  SHAPE_CLUSTERED,  /* a few tight Gaussian-ish clumps                       */
  SHAPE_FAR,        /* 1e6 plus a spread of `side`: float32 loses digits     */
  SHAPE_DUPLICATES, /* few distinct points, each repeated many times         */
  SHAPE_LATTICE,    /* integer lattice: distances land exactly on edges      */
  SHAPE_COUNT
} shape_kind;

static const char *const shape_names[SHAPE_COUNT] = {
    "uniform", "clustered", "far-from-origin", "duplicates", "lattice"};

static inline void pointset_fill(histd_dataset *ds, shape_kind shape, double side,
                                 uint64_t seed) {
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  size_t n = ds->n;
  for (size_t i = 0; i < n; i++) {
    double p[3];
    switch (shape) {
    case SHAPE_CLUSTERED: {
      uint64_t c = test_rand_u64(&s) % 4;
      for (int a = 0; a < 3; a++) {
        double centre = side * (0.2 + 0.2 * (double)c);
        double u = test_rand01(&s) + test_rand01(&s) + test_rand01(&s) - 1.5;
        p[a] = centre + u * side * 0.02;
      }
      break;
    }
    case SHAPE_FAR:
      for (int a = 0; a < 3; a++)
        p[a] = 1e6 + test_rand01(&s) * side;
      break;
    case SHAPE_DUPLICATES: {
      uint64_t k = test_rand_u64(&s) % 7;
      for (int a = 0; a < 3; a++)
        p[a] = (double)((k * (a + 3)) % 5) * side / 5.0;
      break;
    }
    case SHAPE_LATTICE:
      for (int a = 0; a < 3; a++)
        p[a] = (double)(test_rand_u64(&s) % 9);
      break;
    default:
      for (int a = 0; a < 3; a++)
        p[a] = test_rand01(&s) * side;
      break;
    }
    ds->x[i] = p[0];
    ds->y[i] = p[1];
    ds->z[i] = p[2];
  }
  histd_dataset_finish(ds, NULL, 0);
}

#endif
