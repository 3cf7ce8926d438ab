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

#include <stddef.h>
#include <stdint.h>

#include "histd/histd.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HISTD_MORTON_LEVELS 21 /* 3 bits each: 63 bits */

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
