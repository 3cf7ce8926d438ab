/* dataset.c -- point sets: N points in float64, structure of arrays. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "histd/histd.h"

int histd_dataset_alloc(histd_dataset *ds, size_t n, char *msg, size_t msglen) {
  memset(ds, 0, sizeof *ds);
  if (n > SIZE_MAX / (3 * sizeof(double)))
    return histd_fail(msg, msglen, HISTD_ETOOBIG, "%zu points do not fit in memory", n);
  double *xyz = malloc(n == 0 ? 1 : 3 * n * sizeof(double));
  if (xyz == NULL)
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %zu points", n);
  histd_dataset_borrow(ds, xyz, n);
  ds->borrowed = false;
  return 0;
}

void histd_dataset_borrow(histd_dataset *ds, double *xyz, size_t n) {
  memset(ds, 0, sizeof *ds);
  ds->n = n;
  ds->x = xyz;
  ds->y = xyz + n;
  ds->z = xyz + 2 * n;
  ds->borrowed = true;
}

int histd_dataset_alloc_weights(histd_dataset *ds, char *msg, size_t msglen) {
  /* one block x, y, z, w, so that free() stays one call */
  const size_t n = ds->n;
  if (ds->borrowed || n > SIZE_MAX / (4 * sizeof(double)))
    return histd_fail(msg, msglen, HISTD_EINVAL, "no room for the weights of %zu points", n);
  double *xyzw = realloc(ds->x, n == 0 ? 1 : 4 * n * sizeof(double));
  if (xyzw == NULL)
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %zu weights", n);
  ds->x = xyzw;
  ds->y = xyzw + n;
  ds->z = xyzw + 2 * n;
  ds->w = xyzw + 3 * n;
  return 0;
}

void histd_dataset_free(histd_dataset *ds) {
  if (ds == NULL)
    return;
  if (!ds->borrowed)
    free(ds->x);
  memset(ds, 0, sizeof *ds);
}

int histd_dataset_finish(histd_dataset *ds, char *msg, size_t msglen) {
  const double *c[3] = {ds->x, ds->y, ds->z};
  static const char axis[3] = {'x', 'y', 'z'};
  for (int a = 0; a < 3; a++) {
    double lo = 0, hi = 0;
    for (size_t i = 0; i < ds->n; i++) {
      double v = c[a][i];
      if (!isfinite(v))
        return histd_fail(msg, msglen, HISTD_EINVAL,
                          "point %zu: %c is not a finite number", i + 1, axis[a]);
      if (i == 0 || v < lo)
        lo = v;
      if (i == 0 || v > hi)
        hi = v;
    }
    ds->min[a] = lo;
    ds->max[a] = hi;
  }
  for (size_t i = 0; ds->w != NULL && i < ds->n; i++)
    if (!isfinite(ds->w[i]))
      return histd_fail(msg, msglen, HISTD_EINVAL, "point %zu: the weight is not a finite number",
                        i + 1);
  return 0;
}

double histd_dataset_diagonal(const histd_dataset *ds) {
  /* Rounding is monotonic, so the contract's distance between the box's
   * corners bounds the contract's distance of every pair inside it. */
  double dx = ds->max[0] - ds->min[0];
  double dy = ds->max[1] - ds->min[1];
  double dz = ds->max[2] - ds->min[2];
  return sqrt((dx * dx + dy * dy) + dz * dz);
}
