/*
 * morton.h -- points in Morton (Z) order: the 21-bit-per-axis code of each
 * point in a grid of cubes over its set's bounding box, sorted (an LSD
 * radix sort).
 * Consecutive points in that order lie close together; every run sharing
 * a code prefix is an octree cell. dm-tree builds its tree on it, and
 * the "cpu" kernel's weighted loops take points in groups of 16 from it.
 */
#ifndef HISTD_MORTON_H
#define HISTD_MORTON_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "histd/histd.h"

#ifdef __CUDACC__ /* the GPU's tile build (bench/tc_probe.cu) makes the same codes */
#define HISTD_MORTON_HD __host__ __device__
#else
#define HISTD_MORTON_HD
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define HISTD_MORTON_LEVELS 21 /* 3 bits each: 63 bits */

/* The grid's scale: 2^21 cells over the set's longest side (0 for a point). */
static inline double histd__morton_scale(const histd_dataset *ds) {
  double side = 0;
  for (int a = 0; a < 3; a++)
    side = ds->max[a] - ds->min[a] > side ? ds->max[a] - ds->min[a] : side;
  double scale = side > 0 ? 0x1p21 / side : 0;
  return isfinite(scale) ? scale : 0;
}

/* The 21 bits of v, two zeros between each. */
HISTD_MORTON_HD static inline uint64_t histd__morton_spread3(uint32_t v) {
  uint64_t x = v & 0x1FFFFFu;
  x = (x | x << 32) & 0x1F00000000FFFFull;
  x = (x | x << 16) & 0x1F0000FF0000FFull;
  x = (x | x << 8) & 0x100F00F00F00F00Full;
  x = (x | x << 4) & 0x10C30C30C30C30C3ull;
  x = (x | x << 2) & 0x1249249249249249ull;
  return x;
}

/* A coordinate's cell number on its axis, clamped to [0, 2^21 - 1]. */
HISTD_MORTON_HD static inline uint32_t histd__morton_cell(double v, double lo, double scale) {
  double q = floor((v - lo) * scale);
  return !(q >= 0) ? 0 : q >= 0x1FFFFF ? 0x1FFFFFu : (uint32_t)q;
}

/* A point's code, x highest; lo the set's low corner (histd_dataset's min). */
HISTD_MORTON_HD static inline uint64_t histd__morton_key(double x, double y, double z,
                                                         const double lo[3], double scale) {
  return histd__morton_spread3(histd__morton_cell(x, lo[0], scale)) << 2 |
         histd__morton_spread3(histd__morton_cell(y, lo[1], scale)) << 1 |
         histd__morton_spread3(histd__morton_cell(z, lo[2], scale));
}

typedef struct histd__mkey {
  uint64_t key;   /* the Morton code */
  uint32_t index; /* the point's index in its set */
} histd__mkey;

/* The n = ds->n points' codes, sorted, in a new array *out (free() it);
 * 0 or HISTD_ENOMEM. The set holds at most 2^32 - 1 points. */
int histd__morton_sort(const histd_dataset *ds, histd__mkey **out);

#ifdef __cplusplus
}
#endif

#endif
