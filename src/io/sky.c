/*
 * sky.c -- sky catalogues made into points: the comoving distance of a
 * redshift (include/histd/io.h states the rule and its error), the checks
 * every sky column's value passes, and the one step that turns a parser's
 * columns into a dataset (x, y, z from ra, dec and the distance, in
 * binary64, once, on the host; the sky columns, weights and regions kept).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io_internal.h"

/* ---- the comoving distance --------------------------------------------- */

/* The 16 Gauss-Legendre nodes and weights on [-1, 1]: Newton's iteration on
 * the Legendre polynomial P16 from the classic first guess, in long double,
 * rounded once. */
static void gauss_legendre16(double node[16], double weight[16]) {
  const int n = 16;
  for (int i = 0; i < n / 2; i++) {
    long double x = cosl(3.14159265358979323846264338327950288L * (i + 0.75L) / (n + 0.5L));
    long double dp = 0;
    for (int it = 0; it < 100; it++) {
      long double p0 = 1, p1 = x;
      for (int k = 2; k <= n; k++) {
        long double p2 = ((2 * k - 1) * x * p1 - (k - 1) * p0) / k;
        p0 = p1;
        p1 = p2;
      }
      dp = n * (x * p1 - p0) / (x * x - 1);
      long double dx = p1 / dp;
      x -= dx;
      if (fabsl(dx) < 1e-19L)
        break;
    }
    long double p0 = 1, p1 = x; /* the derivative at the converged node */
    for (int k = 2; k <= n; k++) {
      long double p2 = ((2 * k - 1) * x * p1 - (k - 1) * p0) / k;
      p0 = p1;
      p1 = p2;
    }
    dp = n * (x * p1 - p0) / (x * x - 1);
    const long double w = 2 / ((1 - x * x) * dp * dp);
    node[i] = (double)-x;
    node[n - 1 - i] = (double)x;
    weight[i] = weight[n - 1 - i] = (double)w;
  }
}

/* The integrand in u: 1 / sqrt(Omega_m + (1 - Omega_m) u^6). */
static double integrand(double om, double u) {
  const double u2 = u * u, u6 = u2 * u2 * u2;
  return 1.0 / sqrt(om + (1.0 - om) * u6);
}

/* Gauss-Legendre over [top - len, top]. */
static double panel(const histd_distance_table *t, double top, double len) {
  const double half = 0.5 * len, mid = top - half;
  double sum = 0;
  for (int i = 0; i < 16; i++)
    sum += t->weight[i] * integrand(t->omega_m, mid + half * t->node[i]);
  return half * sum;
}

int histd_distance_table_init(histd_distance_table *t, double omega_m, char *msg,
                              size_t msglen) {
  if (!(omega_m >= 0.01 && omega_m <= 1))
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "omega_m must be from 0.01 to 1 (a flat LambdaCDM universe), got %g",
                      omega_m);
  memset(t, 0, sizeof *t);
  t->omega_m = omega_m;
  gauss_legendre16(t->node, t->weight);
  const int K = HISTD_DISTANCE_PANELS;
  t->above[K] = 0;
  for (int k = K - 1; k >= 0; k--)
    t->above[k] = t->above[k + 1] + panel(t, (double)(k + 1) / K, 1.0 / K);
  return 0;
}

double histd_comoving_distance(const histd_distance_table *t, double z) {
  if (!(z >= 0) || !isfinite(z))
    return NAN;
  if (z == 0)
    return 0;
  const int K = HISTD_DISTANCE_PANELS;
  const double s = sqrt(1.0 + z), u = 1.0 / s;
  int k = (int)(u * K);
  if (k >= K)
    k = K - 1;
  const double top = (double)(k + 1) / K;
  /* the partial panel [u, top]; in the last one 1 - u without cancellation */
  const double len = k == K - 1 ? z / (s * (1.0 + s)) : top - u;
  double part = len > 0 ? panel(t, top, len) : 0;
  return 2.0 * HISTD_C_OVER_H0 * (t->above[k + 1] + part);
}

/* ---- the checks -------------------------------------------------------- */

const char *histd__sky_column_name(int c) {
  static const char *const names[HISTD__SKY_COLUMNS] = {"ra", "dec", "dist", "z", "w",
                                                          "region"};
  return c >= 0 && c < HISTD__SKY_COLUMNS ? names[c] : "?";
}

int histd__sky_column(const char *name, size_t len) {
  if (len >= 2 && name[0] == '"' && name[len - 1] == '"') {
    name++;
    len -= 2;
  }
  for (int c = 0; c < HISTD__SKY_COLUMNS; c++) {
    const char *n = histd__sky_column_name(c);
    if (strlen(n) == len && strncasecmp(name, n, len) == 0)
      return c;
  }
  if (len == 6 && strncasecmp(name, "weight", 6) == 0)
    return HISTD__SKY_W;
  return -1;
}

const char *histd__sky_bad_value(int column, double v) {
  if (!isfinite(v))
    return "is not a finite number";
  switch (column) {
  case HISTD__SKY_DEC:
    return v >= -90 && v <= 90 ? NULL : "is outside [-90, 90] (dec is in degrees)";
  case HISTD__SKY_DIST:
    return v >= 0 ? NULL : "is negative (a comoving distance is at least 0)";
  case HISTD__SKY_Z:
    return v >= 0 ? NULL : "is negative (a redshift is at least 0)";
  case HISTD__SKY_REGION:
    return v >= 0 && v < HISTD_MAX_REGIONS && v == floor(v)
               ? NULL
               : "is not a region (a whole number from 0 to 65535)";
  default:
    return NULL;
  }
}

int histd__sky_header_check(const size_t col[HISTD__SKY_COLUMNS], const char *where, char *msg,
                            size_t msglen) {
  const bool has_dist = col[HISTD__SKY_DIST] != SIZE_MAX, has_z = col[HISTD__SKY_Z] != SIZE_MAX;
  if (col[HISTD__SKY_RA] == SIZE_MAX || col[HISTD__SKY_DEC] == SIZE_MAX)
    return histd_fail(msg, msglen, HISTD_EPARSE,
                      "%s has no %s column: a sky catalogue needs ra and dec (degrees), and "
                      "dist (Mpc/h) or z", where,
                      col[HISTD__SKY_RA] == SIZE_MAX ? "ra" : "dec");
  if (has_dist && has_z)
    return histd_fail(msg, msglen, HISTD_EPARSE,
                      "%s has both a dist and a z column: give the comoving distance or the "
                      "redshift, not both", where);
  if (!has_dist && !has_z)
    return histd_fail(msg, msglen, HISTD_EPARSE,
                      "%s has neither a dist nor a z column: a sky catalogue needs the comoving "
                      "distance (Mpc/h) or the redshift of each point", where);
  return 0;
}

/* ---- columns to points ------------------------------------------------- */

int histd__sky_cols_alloc(histd__sky_cols *c, size_t cap, const bool want[HISTD__SKY_COLUMNS],
                          char *msg, size_t msglen) {
  memset(c, 0, sizeof *c);
  c->cap = cap;
  for (int k = 0; k < HISTD__SKY_COLUMNS; k++) {
    if (!want[k])
      continue;
    if ((c->v[k] = malloc((cap ? cap : 1) * sizeof(double))) == NULL) {
      histd__sky_cols_free(c);
      return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %zu points", cap);
    }
  }
  return 0;
}

void histd__sky_cols_free(histd__sky_cols *c) {
  for (int k = 0; k < HISTD__SKY_COLUMNS; k++)
    free(c->v[k]);
  memset(c, 0, sizeof *c);
}

static int check_options(const histd_sky_options *opt, double *omega_m, char *msg,
                         size_t msglen) {
  *omega_m = opt != NULL && opt->omega_m != 0 ? opt->omega_m : HISTD_OMEGA_M;
  if (opt != NULL && opt->regions > HISTD_MAX_REGIONS)
    return histd_fail(msg, msglen, HISTD_EINVAL, "regions must be from 1 to %u, got %u",
                      HISTD_MAX_REGIONS, opt->regions);
  return 0;
}

int histd__sky_finish(histd__sky_cols *c, const histd_sky_options *opt, histd_dataset *out,
                      char *msg, size_t msglen) {
  const size_t n = c->n;
  double omega_m;
  histd_distance_table table;
  int rc = check_options(opt, &omega_m, msg, msglen);
  const bool redshift = c->v[HISTD__SKY_Z] != NULL;
  if (rc == 0 && redshift)
    rc = histd_distance_table_init(&table, omega_m, msg, msglen);
  if (rc == 0 && n == 0)
    rc = histd_fail(msg, msglen, HISTD_EPARSE, "no points: the catalogue has no rows");
  if (rc == 0 && opt != NULL && opt->regions > 0 && c->v[HISTD__SKY_REGION] != NULL)
    rc = histd_fail(msg, msglen, HISTD_EINVAL,
                    "the catalogue has a region column and regions=%u asks for regions on the "
                    "sky: give one or the other", opt->regions);
  if (rc == 0 && opt != NULL && opt->centres != NULL && c->v[HISTD__SKY_REGION] != NULL)
    rc = histd_fail(msg, msglen, HISTD_EINVAL,
                    "the catalogue has a region column and regions_like asks for another "
                    "catalogue's regions: give one or the other");
  if (rc != 0) {
    histd__sky_cols_free(c);
    return rc;
  }
  histd_dataset ds;
  double *sky = malloc(n * 3 * sizeof *sky);
  int32_t *region = c->v[HISTD__SKY_REGION] ? malloc(n * sizeof *region) : NULL;
  if (sky == NULL || (c->v[HISTD__SKY_REGION] && region == NULL) ||
      (rc = histd__ds_reserve(&ds, n, msg, msglen)) != 0) {
    free(sky);
    free(region);
    histd__sky_cols_free(c);
    return rc != 0 ? rc : histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %zu points", n);
  }
  const double *ra = c->v[HISTD__SKY_RA], *dec = c->v[HISTD__SKY_DEC];
  const double *r = redshift ? c->v[HISTD__SKY_Z] : c->v[HISTD__SKY_DIST];
  uint32_t regions = 0;
  for (size_t i = 0; i < n; i++) {
    double a = fmod(ra[i], 360.0);
    if (a < 0)
      a += 360.0;
    if (a >= 360.0) /* -1e-20 + 360 rounds to 360 */
      a = 0;
    a += 0.0; /* -0 is 0 */
    const double d = redshift ? histd_comoving_distance(&table, r[i]) : r[i];
    double u[3];
    histd_sky_unit(a, dec[i], u);
    ds.x[i] = d * u[0];
    ds.y[i] = d * u[1];
    ds.z[i] = d * u[2];
    sky[3 * i] = a;
    sky[3 * i + 1] = dec[i];
    sky[3 * i + 2] = d;
    if (region != NULL) {
      region[i] = (int32_t)c->v[HISTD__SKY_REGION][i];
      if ((uint32_t)region[i] + 1 > regions)
        regions = (uint32_t)region[i] + 1;
    }
  }
  rc = histd__ds_complete_all(&ds, n, n, c->v[HISTD__SKY_W], 0, NULL, NULL, msg, msglen);
  histd__sky_cols_free(c);
  if (rc != 0) { /* (ds freed) */
    free(sky);
    free(region);
    return rc;
  }
  ds.sky = sky;
  ds.omega_m = redshift ? omega_m : 0;
  ds.region = region;
  ds.regions = regions;
  if (opt != NULL && ((opt->regions > 0 &&
                       (rc = histd_dataset_assign_regions(&ds, opt->regions, msg, msglen)) != 0) ||
                      (opt->centres != NULL &&
                       (rc = histd_dataset_label_regions(&ds, opt->centres, opt->centre_count, msg,
                                                         msglen)) != 0))) {
    if (ds.borrowed) { /* the arena's points: histd_parse_to_fd drops its mapping */
      free(ds.sky);
      free(ds.region);
      free(ds.frame);
      memset(&ds, 0, sizeof ds);
    } else {
      histd_dataset_free(&ds);
    }
    return rc;
  }
  *out = ds;
  return 0;
}
