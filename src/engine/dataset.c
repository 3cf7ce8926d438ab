/* dataset.c -- point sets: N points in float64, structure of arrays, in
 * one or several frames; a sky catalogue's unit vectors and jackknife
 * regions (histd.h). */
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
  if (!ds->borrowed) {
    free(ds->x);
    free(ds->sky);
  }
  free(ds->region);
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
  view->sky = ds->sky != NULL ? ds->sky + 3 * start : NULL;
  view->omega_m = ds->omega_m;
  view->region = ds->region != NULL ? ds->region + start : NULL;
  view->regions = ds->regions;
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

/* ---- sky catalogues: unit vectors and jackknife regions ------------------------------ */

void histd_sky_unit(double ra, double dec, double u[3]) {
  const double deg = M_PI / 180.0;
  const double r = ra * deg, d = dec * deg;
  const double cd = cos(d);
  u[0] = cd * cos(r);
  u[1] = cd * sin(r);
  u[2] = sin(d);
}

int histd_dataset_unit_vectors(const histd_dataset *ds, histd_dataset *out, char *msg,
                               size_t msglen) {
  memset(out, 0, sizeof *out);
  if (ds->sky == NULL)
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "the dataset is not a sky catalogue: it has no ra and dec to make unit "
                      "vectors of");
  const size_t n = ds->n;
  int rc = histd_dataset_alloc(out, n, msg, msglen);
  if (rc == 0 && ds->w != NULL && (rc = histd_dataset_alloc_weights(out, msg, msglen)) == 0)
    memcpy(out->w, ds->w, n * sizeof *out->w);
  if (rc == 0 && (out->sky = malloc((n ? n : 1) * 3 * sizeof *out->sky)) == NULL)
    rc = histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %zu points' sky columns", n);
  if (rc == 0 && ds->region != NULL &&
      (out->region = malloc((n ? n : 1) * sizeof *out->region)) == NULL)
    rc = histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %zu points' regions", n);
  if (rc != 0) {
    histd_dataset_free(out);
    return rc;
  }
  memcpy(out->sky, ds->sky, n * 3 * sizeof *out->sky);
  if (ds->region != NULL)
    memcpy(out->region, ds->region, n * sizeof *out->region);
  out->regions = ds->regions;
  out->omega_m = ds->omega_m;
  for (size_t i = 0; i < n; i++) {
    double u[3];
    histd_sky_unit(ds->sky[3 * i], ds->sky[3 * i + 1], u);
    out->x[i] = u[0];
    out->y[i] = u[1];
    out->z[i] = u[2];
  }
  rc = histd_dataset_finish(out, msg, msglen);
  if (rc != 0)
    histd_dataset_free(out);
  return rc;
}

static uint64_t regions_next(uint64_t *state) { /* splitmix64 */
  uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return z ^ (z >> 31);
}

static double dot3(const double *a, const double *b) { return (a[0] * b[0] + a[1] * b[1]) + a[2] * b[2]; }

/* The centre of the largest u . c among c[0..k) (the lowest index on ties;
 * a NaN centre, a region without points, is never nearest). */
static uint32_t nearest_centre(const double *u, const double *c, uint32_t k) {
  uint32_t best = 0;
  double top = dot3(u, c);
  for (uint32_t j = 1; j < k; j++) {
    const double d = dot3(u, c + 3 * j);
    if (d > top || (top != top && d == d)) {
      top = d;
      best = j;
    }
  }
  return best;
}

#define REGIONS_SAMPLE 100000u
#define REGIONS_ROUNDS 100

int histd_dataset_assign_regions(histd_dataset *ds, uint32_t k, char *msg, size_t msglen) {
  const size_t n = ds->n;
  if (ds->sky == NULL)
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "regions are assigned on the sky, and this dataset is not a sky "
                      "catalogue (give each point a region column instead)");
  if (k < 1 || k > HISTD_MAX_REGIONS || k > n)
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "regions must be from 1 to %u and at most the %zu points, got %u",
                      HISTD_MAX_REGIONS, n, k);
  const size_t s = (n + REGIONS_SAMPLE - 1) / REGIONS_SAMPLE, m = (n + s - 1) / s;
  double *u = malloc(m * 3 * sizeof *u), *c = malloc((size_t)k * 3 * sizeof *c);
  double *dist = malloc(m * sizeof *dist);
  uint32_t *label = malloc(m * sizeof *label);
  int rc = 0;
  if (u == NULL || c == NULL || dist == NULL || label == NULL) {
    rc = histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %u regions of %zu points", k,
                    n);
    goto out;
  }
  for (size_t j = 0; j < m; j++)
    histd_sky_unit(ds->sky[3 * j * s], ds->sky[3 * j * s + 1], u + 3 * j);
  /* k-means++ seeding */
  uint64_t state = HISTD_REGIONS_SEED;
  size_t first = (size_t)(regions_next(&state) % m);
  memcpy(c, u + 3 * first, 3 * sizeof *c);
  for (size_t j = 0; j < m; j++)
    dist[j] = 1.0 - dot3(u + 3 * j, c);
  for (uint32_t q = 1; q < k; q++) {
    double sum = 0;
    for (size_t j = 0; j < m; j++)
      sum += dist[j] > 0 ? dist[j] : 0;
    if (!(sum > 0)) {
      rc = histd_fail(msg, msglen, HISTD_EINVAL,
                      "cannot make %u regions: the catalogue's points lie in only %u distinct "
                      "directions", k, q);
      goto out;
    }
    const double t = (double)(regions_next(&state) >> 11) * 0x1p-53 * sum;
    double run = 0;
    size_t pick = m;
    for (size_t j = 0; j < m && pick == m; j++) {
      run += dist[j] > 0 ? dist[j] : 0;
      if (dist[j] > 0 && run >= t)
        pick = j;
    }
    for (size_t j = m; pick == m && j-- > 0;) /* t past the sum by rounding: the last one */
      if (dist[j] > 0)
        pick = j;
    memcpy(c + 3 * q, u + 3 * pick, 3 * sizeof *c);
    for (size_t j = 0; j < m; j++) {
      const double d = 1.0 - dot3(u + 3 * j, c + 3 * q);
      if (d < dist[j])
        dist[j] = d;
    }
  }
  /* Lloyd's rounds on the sample (dist now holds the new centres' sums) */
  double *sums = malloc((size_t)k * 3 * sizeof *sums);
  if (sums == NULL) {
    rc = histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %u regions", k);
    goto out;
  }
  for (size_t j = 0; j < m; j++)
    label[j] = UINT32_MAX;
  for (int round = 0; round < REGIONS_ROUNDS; round++) {
    bool changed = false;
    for (size_t j = 0; j < m; j++) {
      const uint32_t b = nearest_centre(u + 3 * j, c, k);
      changed |= b != label[j];
      label[j] = b;
    }
    if (!changed)
      break;
    memset(sums, 0, (size_t)k * 3 * sizeof *sums);
    for (size_t j = 0; j < m; j++)
      for (int a = 0; a < 3; a++)
        sums[3 * label[j] + a] += u[3 * j + a];
    for (uint32_t q = 0; q < k; q++) {
      const double len = sqrt(dot3(sums + 3 * q, sums + 3 * q));
      if (len > 0)
        for (int a = 0; a < 3; a++)
          c[3 * q + a] = sums[3 * q + a] / len;
    }
  }
  free(sums);
  rc = histd_dataset_label_regions(ds, c, k, msg, msglen); /* step 4 */
out:
  free(u);
  free(c);
  free(dist);
  free(label);
  return rc;
}

int histd_sky_region_centres(const histd_dataset *ds, double **centres, uint32_t *k, char *msg,
                             size_t msglen) {
  *centres = NULL;
  if (ds->sky == NULL || ds->region == NULL || ds->regions == 0)
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "the dataset whose regions are to be followed has no jackknife regions "
                      "on the sky (a sky catalogue with a region column, or ?regions=K)");
  const uint32_t r = ds->regions;
  double *c = calloc((size_t)r * 3, sizeof *c);
  if (c == NULL)
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %u regions' centres", r);
  for (size_t i = 0; i < ds->n; i++) { /* sums in index order */
    double u[3];
    histd_sky_unit(ds->sky[3 * i], ds->sky[3 * i + 1], u);
    for (int a = 0; a < 3; a++)
      c[3 * (size_t)ds->region[i] + a] += u[a];
  }
  for (uint32_t q = 0; q < r; q++) {
    const double len = sqrt(dot3(c + 3 * q, c + 3 * q));
    for (int a = 0; a < 3; a++)
      c[3 * q + a] = len > 0 ? c[3 * q + a] / len : NAN;
  }
  *centres = c;
  *k = r;
  return 0;
}

int histd_dataset_label_regions(histd_dataset *ds, const double *centres, uint32_t k, char *msg,
                                size_t msglen) {
  if (ds->sky == NULL)
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "regions are assigned on the sky, and this dataset is not a sky catalogue");
  int32_t *region = malloc((ds->n ? ds->n : 1) * sizeof *region);
  if (region == NULL)
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %zu points' regions", ds->n);
  for (size_t i = 0; i < ds->n; i++) {
    double u[3];
    histd_sky_unit(ds->sky[3 * i], ds->sky[3 * i + 1], u);
    region[i] = (int32_t)nearest_centre(u, centres, k);
  }
  free(ds->region);
  ds->region = region;
  ds->regions = k;
  return 0;
}
