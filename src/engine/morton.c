/*
 * morton.c -- the points of a set in Morton order (morton.h).
 *
 * The grid spans the set's own bounding box (histd_dataset's min and max),
 * 2^21 cells an axis, a flat axis in cell 0; or, cubic, cubes of one side
 * (2^-21 of the box's longest side) from the box's low corner, so that an
 * octree cell is a cube in space however flat or long the box. The code interleaves the
 * three cell numbers' bits, x highest; the sort is an LSD radix sort of
 * 11 bits a pass that skips the passes where every key has the same digit.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "morton.h"

static uint64_t spread3(uint32_t v) { /* the 21 bits of v, two zeros between each */
  uint64_t x = v & 0x1FFFFFu;
  x = (x | x << 32) & 0x1F00000000FFFFull;
  x = (x | x << 16) & 0x1F0000FF0000FFull;
  x = (x | x << 8) & 0x100F00F00F00F00Full;
  x = (x | x << 4) & 0x10C30C30C30C30C3ull;
  x = (x | x << 2) & 0x1249249249249249ull;
  return x;
}

static uint32_t quantise(double v, double lo, double scale) {
  double q = floor((v - lo) * scale);
  return !(q >= 0) ? 0 : q >= 0x1FFFFF ? 0x1FFFFFu : (uint32_t)q;
}

static int radix_sort(histd__mkey *k, size_t n) {
  histd__mkey *tmp = malloc(n * sizeof *tmp);
  size_t *cnt = malloc(2048 * sizeof *cnt);
  if (tmp == NULL || cnt == NULL) {
    free(tmp);
    free(cnt);
    return HISTD_ENOMEM;
  }
  histd__mkey *src = k, *dst = tmp;
  for (int shift = 0; shift < 64; shift += 11) {
    memset(cnt, 0, 2048 * sizeof *cnt);
    for (size_t i = 0; i < n; i++)
      cnt[(src[i].key >> shift) & 2047]++;
    if (n == 0 || cnt[(src[0].key >> shift) & 2047] == n)
      continue;
    size_t sum = 0;
    for (int d = 0; d < 2048; d++) {
      size_t c = cnt[d];
      cnt[d] = sum;
      sum += c;
    }
    for (size_t i = 0; i < n; i++)
      dst[cnt[(src[i].key >> shift) & 2047]++] = src[i];
    histd__mkey *t = src;
    src = dst;
    dst = t;
  }
  if (src != k)
    memcpy(k, src, n * sizeof *k);
  free(tmp);
  free(cnt);
  return 0;
}

int histd__morton_sort(const histd_dataset *ds, bool cubic, histd__mkey **out) {
  const size_t n = ds->n;
  const double *p[3] = {ds->x, ds->y, ds->z};
  double scale[3], side = 0;
  for (int a = 0; a < 3; a++)
    side = ds->max[a] - ds->min[a] > side ? ds->max[a] - ds->min[a] : side;
  for (int a = 0; a < 3; a++) {
    double len = cubic ? side : ds->max[a] - ds->min[a];
    scale[a] = len > 0 ? 0x1p21 / len : 0;
    if (!isfinite(scale[a]))
      scale[a] = 0;
  }
  histd__mkey *k = malloc((n ? n : 1) * sizeof *k);
  if (k == NULL)
    return HISTD_ENOMEM;
  for (size_t i = 0; i < n; i++) {
    k[i].key = spread3(quantise(p[0][i], ds->min[0], scale[0])) << 2 |
               spread3(quantise(p[1][i], ds->min[1], scale[1])) << 1 |
               spread3(quantise(p[2][i], ds->min[2], scale[2]));
    k[i].index = (uint32_t)i;
  }
  int rc = radix_sort(k, n);
  if (rc != 0) {
    free(k);
    return rc;
  }
  *out = k;
  return 0;
}
