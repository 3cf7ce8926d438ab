/* dataset.c -- point sets: N points in float64, structure of arrays, in
 * one or several frames. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

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
  free(ds->frame);
  free(ds->origin);
  histd_topology_free(ds->top);
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

size_t histd_dataset_frames(const histd_dataset *ds) {
  return ds->frame != NULL && ds->frames > 1 ? ds->frames : 1;
}

void histd_dataset_frame(const histd_dataset *ds, size_t f, histd_dataset *view) {
  if (histd_dataset_frames(ds) == 1) {
    *view = *ds;
    view->borrowed = true;
    view->frames = 0;
    view->frame = NULL;
    return;
  }
  const histd_frame *fr = &ds->frame[f];
  histd__view(ds, fr->start, fr->n, view);
  view->box = fr->box;
  view->top = ds->top;
  view->origin = ds->origin;
}

void histd__view(const histd_dataset *ds, size_t start, size_t n, histd_dataset *view) {
  memset(view, 0, sizeof *view);
  view->n = n;
  view->x = ds->x + start;
  view->y = ds->y + start;
  view->z = ds->z + start;
  view->w = ds->w != NULL ? ds->w + start : NULL;
  view->borrowed = true;
  const double *c[3] = {view->x, view->y, view->z};
  for (int a = 0; a < 3; a++)
    for (size_t i = 0; i < n; i++) {
      if (i == 0 || c[a][i] < view->min[a])
        view->min[a] = c[a][i];
      if (i == 0 || c[a][i] > view->max[a])
        view->max[a] = c[a][i];
    }
}

int histd_dataset_set_frames(histd_dataset *ds, size_t frames, const size_t *counts,
                             const histd_box *boxes, char *msg, size_t msglen) {
  size_t sum = 0;
  for (size_t f = 0; f < frames; f++) {
    if (counts[f] > ds->n - sum)
      return histd_fail(msg, msglen, HISTD_EINVAL,
                        "the frames hold more points than the dataset's %zu", ds->n);
    sum += counts[f];
  }
  if (frames == 0 || sum != ds->n)
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "the frames hold %zu points, the dataset %zu", sum, ds->n);
  histd_frame *t = NULL;
  if (frames > 1) {
    if (frames > SIZE_MAX / sizeof *t || (t = malloc(frames * sizeof *t)) == NULL)
      return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %zu frames", frames);
    for (size_t f = 0, start = 0; f < frames; start += counts[f], f++)
      t[f] = (histd_frame){start, counts[f], boxes ? boxes[f] : (histd_box){HISTD_BOX_NONE, 0, 0, 0, 0, 0, 0}};
  }
  free(ds->frame);
  ds->frame = t;
  ds->frames = frames;
  ds->box = boxes ? boxes[0] : (histd_box){HISTD_BOX_NONE, 0, 0, 0, 0, 0, 0};
  return 0;
}
