/*
 * test_sky.c -- sky catalogues (sky-csv, sky-json, fits): the comoving
 * distance against independent integrations (Romberg in ln(1 + z), long
 * double) and Einstein-de Sitter's closed form; points against the test's
 * own conversion in long double; the sky columns, weights and regions
 * kept, carried by selections and unit vectors; k-means regions by their
 * defining properties; and a sentence for every malformed catalogue. FITS
 * files are written here by a small writer of the standard's BINTABLE
 * (big-endian columns, 2880-byte blocks), not by cfitsio.
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "histd/histd.h"
#include "histd/io.h"

static char msg[512];

/* ---- the distance ------------------------------------------------------ */

/* c/H0 * integral_0^z dz / E(z), by Romberg in w = ln(1 + z), long double. */
static long double romberg_distance(long double om, long double z) {
  const long double W = log1pl(z);
  long double R[18][18];
  for (int k = 0; k < 18; k++) {
    const long n = 1L << k;
    const long double h = W / n;
    long double sum = 0;
    for (long i = 0; i <= n; i++) {
      if (k > 0 && i % 2 == 0)
        continue; /* the points of the coarser level are in R[k-1][0] */
      const long double w = i * h, a = expl(w);
      const long double f = a / sqrtl(om * a * a * a + 1 - om);
      sum += (i == 0 || i == n) ? f / 2 : f;
    }
    R[k][0] = k == 0 ? h * sum : R[k - 1][0] / 2 + h * sum;
    for (int j = 1; j <= k; j++)
      R[k][j] = R[k][j - 1] + (R[k][j - 1] - R[k - 1][j - 1]) / (powl(4, j) - 1);
    if (k >= 6 && fabsl(R[k][k] - R[k - 1][k - 1]) <= 1e-19L * fabsl(R[k][k]))
      return 2997.92458L * R[k][k];
  }
  return 2997.92458L * R[17][17];
}

static void test_distance(void) {
  histd_distance_table t;
  /* Einstein-de Sitter: D = 2 c/H0 (1 - 1/sqrt(1 + z)) = 2 c/H0 z / (s (1 + s)) */
  CHECK(histd_distance_table_init(&t, 1.0, msg, sizeof msg) == 0, "%s", msg);
  const double zs[] = {1e-12, 1e-8, 1e-4, 0.01, 0.1, 0.5, 1, 3, 10, 1100, 1e6, 1e12};
  for (size_t i = 0; i < sizeof zs / sizeof zs[0]; i++) {
    const long double s = sqrtl(1 + (long double)zs[i]);
    const long double want = 2 * 2997.92458L * zs[i] / (s * (1 + s));
    const double got = histd_comoving_distance(&t, zs[i]);
    CHECK(fabsl(got - want) <= 1e-13L * want, "EdS z %g: %.17g, want %.17Lg", zs[i], got, want);
  }
  CHECK(histd_comoving_distance(&t, 0) == 0, "z = 0");
  CHECK(isnan(histd_comoving_distance(&t, -1)) && isnan(histd_comoving_distance(&t, NAN)),
        "z < 0, NaN");
  /* flat LambdaCDM against Romberg */
  const double oms[] = {0.315, 0.05, 0.7};
  const double zl[] = {1e-9, 1e-5, 0.01, 0.1, 0.5, 1, 2, 5, 10, 100, 1100, 1e5};
  for (size_t k = 0; k < sizeof oms / sizeof oms[0]; k++) {
    CHECK(histd_distance_table_init(&t, oms[k], msg, sizeof msg) == 0, "%s", msg);
    for (size_t i = 0; i < sizeof zl / sizeof zl[0]; i++) {
      const long double want = romberg_distance(oms[k], zl[i]);
      const double got = histd_comoving_distance(&t, zl[i]);
      CHECK(fabsl(got - want) <= 1e-12L * want, "Omega_m %g z %g: %.17g, want %.17Lg (rel %Lg)",
            oms[k], zl[i], got, want, fabsl(got - want) / want);
    }
  }
  CHECK(histd_distance_table_init(&t, 0.005, msg, sizeof msg) == HISTD_EINVAL, "0.005");
  CHECK_STR_CONTAINS(msg, "omega_m must be from 0.01 to 1");
  CHECK(histd_distance_table_init(&t, 1.5, msg, sizeof msg) == HISTD_EINVAL, "1.5");
  CHECK(histd_distance_table_init(&t, NAN, msg, sizeof msg) == HISTD_EINVAL, "NaN");
}

/* ---- catalogues to points ---------------------------------------------- */

/* The point of (ra, dec, d) by the test's own arithmetic, long double. */
static void own_point(long double ra, long double dec, long double d, long double p[3]) {
  const long double deg = 3.14159265358979323846264338327950288L / 180;
  p[0] = d * cosl(dec * deg) * cosl(ra * deg);
  p[1] = d * cosl(dec * deg) * sinl(ra * deg);
  p[2] = d * sinl(dec * deg);
}

#define NP 8
static const double cat_ra[NP] = {0, 360, -30, 725, 359.999999, 123.4, 10, 200};
static const double cat_dec[NP] = {90, -90, 0, 45.5, -12, 0.000001, 89.9999, -89.9999};
static const double cat_dist[NP] = {100, 250.5, 1000, 0, 3000, 42, 7.25, 1e4};
static const double cat_w[NP] = {1, 0.5, 2, 3, 1, 1, 0.25, 4};
static const int cat_region[NP] = {0, 3, 1, 1, 2, 0, 3, 2};

static void check_points(const histd_dataset *ds, const char *what, bool with_extra) {
  CHECK(ds->n == NP, "%s: n %zu", what, ds->n);
  if (ds->n != NP || ds->sky == NULL)
    return;
  for (int i = 0; i < NP; i++) {
    long double p[3];
    own_point(cat_ra[i], cat_dec[i], cat_dist[i], p);
    const double got[3] = {ds->x[i], ds->y[i], ds->z[i]};
    for (int a = 0; a < 3; a++)
      CHECK(fabsl(got[a] - p[a]) <= 1e-14L * cat_dist[i] + 1e-300L, "%s: point %d axis %d: %.17g, want %.17Lg",
            what, i, a, got[a], p[a]);
    long double wrapped = fmodl(cat_ra[i], 360);
    if (wrapped < 0)
      wrapped += 360;
    CHECK(ds->sky[3 * i] == (double)wrapped && ds->sky[3 * i] >= 0 && ds->sky[3 * i] < 360,
          "%s: ra %d: %.17g, want %.17Lg", what, i, ds->sky[3 * i], wrapped);
    CHECK(ds->sky[3 * i + 1] == cat_dec[i] && ds->sky[3 * i + 2] == cat_dist[i], "%s: sky %d",
          what, i);
    if (with_extra) {
      CHECK(ds->w != NULL && ds->w[i] == cat_w[i], "%s: weight %d", what, i);
      CHECK(ds->region != NULL && ds->region[i] == cat_region[i], "%s: region %d", what, i);
    }
  }
  CHECK(ds->omega_m == 0, "%s: distances given, no Omega_m", what);
  if (with_extra)
    CHECK(ds->regions == 4, "%s: regions %u", what, ds->regions);
  else
    CHECK(ds->w == NULL && ds->region == NULL && ds->regions == 0, "%s: no extras", what);
}

static char *csv_text(bool extra) {
  static char buf[4096];
  size_t at = (size_t)snprintf(buf, sizeof buf, "# a catalogue\nID, RA ,Dec,DIST%s\n",
                               extra ? ",weight,Region" : "");
  for (int i = 0; i < NP; i++) {
    at += (size_t)snprintf(buf + at, sizeof buf - at, "g%d,%.17g,%.17g,%.17g", i, cat_ra[i],
                           cat_dec[i], cat_dist[i]);
    if (extra)
      at += (size_t)snprintf(buf + at, sizeof buf - at, ",%.17g,%d", cat_w[i], cat_region[i]);
    at += (size_t)snprintf(buf + at, sizeof buf - at, "%s", i % 2 ? "\r\n" : "\n");
  }
  return buf;
}

static char *json_text(void) {
  static char buf[4096];
  const char *names[5] = {"ra", "dec", "dist", "w", "region"};
  size_t at = (size_t)snprintf(buf, sizeof buf, "{");
  for (int k = 0; k < 5; k++) {
    at += (size_t)snprintf(buf + at, sizeof buf - at, "%s\"%s\": [", k ? ", " : "", names[k]);
    for (int i = 0; i < NP; i++) {
      double v = k == 0 ? cat_ra[i] : k == 1 ? cat_dec[i] : k == 2 ? cat_dist[i]
                 : k == 3 ? cat_w[i] : cat_region[i];
      at += (size_t)snprintf(buf + at, sizeof buf - at, "%s%.17g", i ? ", " : "", v);
    }
    at += (size_t)snprintf(buf + at, sizeof buf - at, "]");
  }
  snprintf(buf + at, sizeof buf - at, "}\n");
  return buf;
}

/* ---- a small FITS writer ----------------------------------------------- */

typedef struct fcol {
  const char *name, *form; /* form: "D", "E", "J", "2D", "8A" */
  const double *v;
} fcol;

typedef struct fbuf {
  unsigned char *p;
  size_t n, cap;
} fbuf;

static void put(fbuf *b, const void *d, size_t n) {
  if (b->n + n > b->cap) {
    b->cap = (b->n + n) * 2;
    b->p = realloc(b->p, b->cap);
  }
  memcpy(b->p + b->n, d, n);
  b->n += n;
}

static void card(fbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void card(fbuf *b, const char *fmt, ...) {
  char c[81];
  va_list ap;
  va_start(ap, fmt);
  int l = vsnprintf(c, sizeof c, fmt, ap);
  va_end(ap);
  memset(c + l, ' ', 80 - (size_t)l);
  put(b, c, 80);
}

static void pad(fbuf *b, char with) {
  while (b->n % 2880)
    put(b, &with, 1);
}

static void be(fbuf *b, const void *v, size_t n) {
  unsigned char t[8];
  for (size_t i = 0; i < n; i++)
    t[i] = ((const unsigned char *)v)[n - 1 - i];
  put(b, t, n);
}

/* A primary HDU with no data, then a BINTABLE of rows x cols (ntab 0: none). */
static unsigned char *fits_file(const fcol *cols, int ncol, size_t rows, int ntab, size_t *len) {
  fbuf b = {0};
  card(&b, "SIMPLE  = %20s", "T");
  card(&b, "BITPIX  = %20d", 8);
  card(&b, "NAXIS   = %20d", 0);
  card(&b, "EXTEND  = %20s", "T");
  card(&b, "END");
  pad(&b, ' ');
  if (ntab) {
    size_t width = 0;
    for (int c = 0; c < ncol; c++) {
      const char *f = cols[c].form;
      int rep = f[0] >= '0' && f[0] <= '9' ? atoi(f) : 1;
      char t = f[strlen(f) - 1];
      width += (size_t)rep * (t == 'D' ? 8 : t == 'A' ? 1 : 4);
    }
    card(&b, "XTENSION= '%-8s'", "BINTABLE");
    card(&b, "BITPIX  = %20d", 8);
    card(&b, "NAXIS   = %20d", 2);
    card(&b, "NAXIS1  = %20zu", width);
    card(&b, "NAXIS2  = %20zu", rows);
    card(&b, "PCOUNT  = %20d", 0);
    card(&b, "GCOUNT  = %20d", 1);
    card(&b, "TFIELDS = %20d", ncol);
    for (int c = 0; c < ncol; c++) {
      card(&b, "TTYPE%-3d= '%-8s'", c + 1, cols[c].name);
      card(&b, "TFORM%-3d= '%-8s'", c + 1, cols[c].form);
    }
    card(&b, "END");
    pad(&b, ' ');
    for (size_t r = 0; r < rows; r++)
      for (int c = 0; c < ncol; c++) {
        const char *f = cols[c].form;
        int rep = f[0] >= '0' && f[0] <= '9' ? atoi(f) : 1;
        char t = f[strlen(f) - 1];
        for (int k = 0; k < rep; k++) {
          double v = cols[c].v[r];
          if (t == 'D') {
            be(&b, &v, 8);
          } else if (t == 'E') {
            float x = (float)v;
            be(&b, &x, 4);
          } else if (t == 'J') {
            int32_t x = (int32_t)v;
            be(&b, &x, 4);
          } else {
            put(&b, "a", 1);
          }
        }
      }
    pad(&b, '\0');
  }
  *len = b.n;
  return b.p;
}

/* ---- the tests ----------------------------------------------------------- */

static void test_parse(void) {
  histd_dataset ds;
  const char *csv = csv_text(false);
  int rc = histd_parse(HISTD_FORMAT_SKY_CSV, csv, strlen(csv), 0, &ds, msg, sizeof msg);
  CHECK(rc == 0, "sky-csv: %s", msg);
  if (rc == 0) {
    check_points(&ds, "sky-csv", false);
    histd_dataset_free(&ds);
  }
  csv = csv_text(true);
  rc = histd_parse(HISTD_FORMAT_SKY_CSV, csv, strlen(csv), 0, &ds, msg, sizeof msg);
  CHECK(rc == 0, "sky-csv with w, region: %s", msg);
  histd_dataset js;
  const char *json = json_text();
  int rj = histd_parse(HISTD_FORMAT_SKY_JSON, json, strlen(json), 0, &js, msg, sizeof msg);
  CHECK(rj == 0, "sky-json: %s", msg);
  if (rc == 0)
    check_points(&ds, "sky-csv+", true);
  if (rj == 0)
    check_points(&js, "sky-json", true);
  if (rc == 0 && rj == 0)
    CHECK(memcmp(ds.x, js.x, 3 * NP * sizeof(double)) == 0, "csv and json: the same points");

  /* a selection carries the sky columns and the regions */
  if (rc == 0) {
    histd_dataset sel;
    rc = histd_dataset_select(&ds, "index:2-4", NULL, &sel, msg, sizeof msg);
    CHECK(rc == 0, "select: %s", msg);
    if (rc == 0) {
      CHECK(sel.n == 3 && sel.sky != NULL && sel.region != NULL && sel.regions == 4, "selected");
      for (size_t i = 0; sel.sky && sel.region && i < 3; i++) {
        CHECK(memcmp(sel.sky + 3 * i, ds.sky + 3 * (i + 2), 3 * sizeof(double)) == 0, "sky %zu", i);
        CHECK(sel.region[i] == ds.region[i + 2] && sel.x[i] == ds.x[i + 2], "region %zu", i);
      }
      histd_dataset_free(&sel);
    }
    /* unit vectors: the test's own, weights and regions carried */
    histd_dataset u;
    rc = histd_dataset_unit_vectors(&ds, &u, msg, sizeof msg);
    CHECK(rc == 0, "unit vectors: %s", msg);
    for (int i = 0; rc == 0 && i < NP; i++) {
      long double p[3];
      own_point(cat_ra[i], cat_dec[i], 1, p);
      CHECK(fabsl(u.x[i] - p[0]) < 1e-15L && fabsl(u.y[i] - p[1]) < 1e-15L &&
                fabsl(u.z[i] - p[2]) < 1e-15L, "unit %d", i);
      CHECK(u.w[i] == cat_w[i] && u.region[i] == cat_region[i], "unit %d extras", i);
    }
    if (rc == 0)
      histd_dataset_free(&u);
    histd_dataset_free(&ds);
  }
  if (rj == 0)
    histd_dataset_free(&js);

  /* redshifts: |x| is D(z) of the options' Omega_m */
  const char *zcat = "ra dec z\n10 20 0.5\n200 -45 1.5\n0 0 0\n";
  histd_sky_options opt = {0.3, 0, NULL, 0};
  rc = histd_parse_with(HISTD_FORMAT_SKY_CSV, zcat, strlen(zcat), 0, &opt, &ds, msg, sizeof msg);
  CHECK(rc == 0, "z: %s", msg);
  if (rc == 0) {
    const double z[3] = {0.5, 1.5, 0}, ra[3] = {10, 200, 0}, dec[3] = {20, -45, 0};
    for (int i = 0; i < 3; i++) {
      const long double d = z[i] > 0 ? romberg_distance(0.3L, z[i]) : 0;
      long double p[3];
      own_point(ra[i], dec[i], d, p);
      CHECK(fabsl(ds.x[i] - p[0]) <= 1e-12L * d && fabsl(ds.y[i] - p[1]) <= 1e-12L * d &&
                fabsl(ds.z[i] - p[2]) <= 1e-12L * d, "z point %d", i);
      CHECK(fabsl(ds.sky[3 * i + 2] - d) <= 1e-12L * d, "z distance %d", i);
    }
    CHECK(ds.omega_m == 0.3, "Omega_m kept");
    histd_dataset_free(&ds);
  }
  rc = histd_parse(HISTD_FORMAT_SKY_CSV, zcat, strlen(zcat), 0, &ds, msg, sizeof msg);
  CHECK(rc == 0 && ds.omega_m == HISTD_OMEGA_M, "the default Omega_m");
  if (rc == 0)
    histd_dataset_free(&ds);

  /* FITS: D, E and J columns, found by name (skipped where histd was built
   * without cfitsio: then every FITS upload says so) */
  if (histd_parse(HISTD_FORMAT_FITS, "x", 1, 0, &ds, msg, sizeof msg) == HISTD_EINVAL) {
    CHECK_STR_CONTAINS(msg, "histd was built without FITS support");
    printf("test_sky: built without cfitsio, FITS cases skipped\n");
    return;
  }
  const double ra[3] = {0, 359.5, 180}, dec[3] = {90, -10, 0}, d[3] = {10, 20, 30},
               w[3] = {1, 2, 3}, reg[3] = {0, 1, 1};
  const fcol cols[] = {{"RA", "D", ra}, {"extra", "8A", ra}, {"Dec", "E", dec},
                       {"dist", "D", d}, {"WEIGHT", "D", w}, {"region", "J", reg}};
  size_t flen;
  unsigned char *fits = fits_file(cols, 6, 3, 1, &flen);
  rc = histd_parse(HISTD_FORMAT_FITS, (const char *)fits, flen, 0, &ds, msg, sizeof msg);
  CHECK(rc == 0, "fits: %s", msg);
  if (rc == 0) {
    for (int i = 0; i < 3; i++) {
      long double p[3];
      own_point(ra[i], (float)dec[i], d[i], p);
      CHECK(fabsl(ds.x[i] - p[0]) <= 1e-14L * d[i] && fabsl(ds.z[i] - p[2]) <= 1e-14L * d[i],
            "fits point %d", i);
      CHECK(ds.w[i] == w[i] && ds.region[i] == (int32_t)reg[i], "fits extras %d", i);
    }
    CHECK(ds.regions == 2, "fits regions");
    histd_dataset_free(&ds);
  }
  free(fits);
}

/* One malformed catalogue: the code and the words the sentence must hold. */
static void bad(histd_format f, const char *text, size_t len, const histd_sky_options *opt,
                int want, const char *words, int line) {
  histd_dataset ds;
  memset(msg, 0, sizeof msg);
  int rc = histd_parse_with(f, text, len, 0, opt, &ds, msg, sizeof msg);
  CHECK(rc == want, "line %d: rc %d, want %d (%s)", line, rc, want, msg);
  CHECK(strstr(msg, words) != NULL, "line %d: \"%s\" does not contain \"%s\"", line, msg, words);
  if (rc == 0)
    histd_dataset_free(&ds);
}
#define BAD(f, text, opt, want, words) bad(f, text, strlen(text), opt, want, words, __LINE__)

static void test_malformed(void) {
  const histd_format C = HISTD_FORMAT_SKY_CSV, J = HISTD_FORMAT_SKY_JSON, F = HISTD_FORMAT_FITS;
  const int P = HISTD_EPARSE;
  BAD(C, "", NULL, P, "no points");
  BAD(C, "1,2,3\n", NULL, P, "starts with a header line");
  BAD(C, "dec,dist\n1,2\n", NULL, P, "no ra column");
  BAD(C, "ra,dist\n1,2\n", NULL, P, "no dec column");
  BAD(C, "ra,dec,dist,z\n1,2,3,4\n", NULL, P, "both a dist and a z column");
  BAD(C, "ra,dec,w\n1,2,3\n", NULL, P, "neither a dist nor a z column");
  BAD(C, "ra,dec,ra,z\n1,2,3,4\n", NULL, P, "names the column ra twice");
  BAD(C, "ra,dec,z\n1,2\n", NULL, P, "line 2: expected 3 fields (as in the header), found 2");
  BAD(C, "ra,dec,z\n1,2,3,4\n", NULL, P, "expected 3 fields");
  BAD(C, "ra,dec,z\n1,95,0.1\n", NULL, P, "line 2: dec 95 is outside [-90, 90]");
  BAD(C, "ra,dec,z\n1,-90.5,0.1\n", NULL, P, "dec -90.5 is outside");
  BAD(C, "ra,dec,z\n1,2,-0.1\n", NULL, P, "z -0.1 is negative");
  BAD(C, "ra,dec,dist\n1,2,-3\n", NULL, P, "dist -3 is negative");
  BAD(C, "ra,dec,dist\n1,2,abc\n", NULL, P, "line 2: 'abc' is not a number (column dist)");
  BAD(C, "ra,dec,dist\nnan,2,3\n", NULL, P, "'nan' is not a finite number (column ra)");
  BAD(C, "ra,dec,dist\n1e999,2,3\n", NULL, P, "too large for a double");
  BAD(C, "ra,dec,dist,region\n1,2,3,1.5\n", NULL, P, "region 1.5 is not a region");
  BAD(C, "ra,dec,dist,region\n1,2,3,-1\n", NULL, P, "region -1 is not a region");
  BAD(C, "ra,dec,dist,region\n1,2,3,65536\n", NULL, P, "region 65536 is not a region");
  BAD(C, "ra,dec,dist\n1,,3\n", NULL, P, "field 2 is empty");
  BAD(C, "ra,dec,dist\n", NULL, P, "no points");
  const histd_sky_options low = {0.001, 0, NULL, 0}, four = {0, 4, NULL, 0}, many = {0, 70000, NULL, 0};
  BAD(C, "ra,dec,z\n1,2,3\n", &low, HISTD_EINVAL, "omega_m must be from 0.01 to 1");
  BAD(C, "ra,dec,dist,region\n1,2,3,0\n2,3,4,0\n3,4,5,0\n4,5,6,0\n5,6,7,0\n", &four,
      HISTD_EINVAL, "has a region column and regions=4");
  BAD(C, "ra,dec,dist\n1,2,3\n", &four, HISTD_EINVAL, "at most the 1 points");
  BAD(C, "ra,dec,dist\n1,2,3\n", &many, HISTD_EINVAL, "regions must be from 1 to 65536");
  const histd_sky_options two = {0, 2, NULL, 0};
  BAD(C, "ra,dec,dist\n1,2,3\n1,2,5\n1,2,7\n", &two, HISTD_EINVAL, "only 1 distinct directions");
  /* the plain csv parser points a sky catalogue to sky-csv */
  BAD(HISTD_FORMAT_CSV, "ra,dec,z\n1,2,3\n", NULL, P, "upload it as sky-csv");

  BAD(J, "", NULL, P, "no points");
  BAD(J, "[1,2]", NULL, P, "expected a JSON object");
  BAD(J, "{\"ra\": [1], \"dec\": [2]}", NULL, P, "neither a dist nor a z column");
  BAD(J, "{\"ra\": [1], \"dec\": [2], \"dist\": [1], \"z\": [1]}", NULL, P, "both a dist and a z");
  BAD(J, "{\"ra\": [1, 2], \"dec\": [2], \"z\": [1, 2]}", NULL, P, "dec: has 1 values, but ra has 2");
  BAD(J, "{\"ra\": [1], \"dec\": [2], \"z\": [1], \"x\": [1]}", NULL, P, "unknown key \"x\"");
  BAD(J, "{\"ra\": [1], \"dec\": [2], \"z\": [1], \"RA\": [1]}", NULL, P, "given twice");
  BAD(J, "{\"ra\": [null], \"dec\": [2], \"z\": [1]}", NULL, P, "ra[0]: expected a finite number");
  BAD(J, "{\"ra\": [1], \"dec\": [2, ], \"z\": [1]}", NULL, P, "dec[1]: expected a number");
  BAD(J, "{\"ra\": [1], \"dec\": [91], \"z\": [1]}", NULL, P, "dec[0]: dec 91 is outside");
  BAD(J, "{\"ra\": [1], \"dec\": [2], \"z\": [1]} x", NULL, P, "expected the end of the input");
  BAD(J, "{\"ra\": 1, \"dec\": [2], \"z\": [1]}", NULL, P, "ra: expected an array of numbers");
  BAD(J, "{\"ra\": [], \"dec\": [], \"z\": []}", NULL, P, "no points");
  BAD(J, "{\"ra\": [1], \"dec\": [2], \"z\": [1], \"region\": [0.5]}", NULL, P, "region[0]");

  histd_dataset probe;
  if (histd_parse(F, "x", 1, 0, &probe, msg, sizeof msg) == HISTD_EINVAL)
    return; /* built without cfitsio (test_parse says so) */
  BAD(F, "not fits at all", NULL, P, "not a FITS file");
  size_t flen;
  unsigned char *f = fits_file(NULL, 0, 0, 0, &flen);
  bad(F, (const char *)f, flen, NULL, P, "no table extension", __LINE__);
  free(f);
  const double one[2] = {1, 2}, nanv[2] = {1, NAN}, big[2] = {1, 100};
  struct {
    fcol cols[4];
    int n;
    const char *words;
  } fc[] = {
      {{{"ra", "D", one}, {"dec", "D", one}}, 2, "neither a dist nor a z"},
      {{{"ra", "D", one}, {"dec", "D", one}, {"z", "D", one}, {"dist", "D", one}}, 4, "both a dist"},
      {{{"ra", "D", one}, {"dec", "D", nanv}, {"z", "D", one}}, 3, "row 2: dec is null (undefined, or NaN)"},
      {{{"ra", "D", one}, {"dec", "D", big}, {"z", "D", one}}, 3, "row 2: dec 100 is outside"},
      {{{"ra", "2D", one}, {"dec", "D", one}, {"z", "D", one}}, 3, "holds 2 values a row"},
      {{{"ra", "8A", one}, {"dec", "D", one}, {"z", "D", one}}, 3, "does not hold real numbers"},
      {{{"ra", "D", one}, {"RA", "D", one}, {"dec", "D", one}, {"z", "D", one}}, 4,
       "more than one column named ra"},
  };
  for (size_t k = 0; k < sizeof fc / sizeof fc[0]; k++) {
    f = fits_file(fc[k].cols, fc[k].n, 2, 1, &flen);
    bad(F, (const char *)f, flen, NULL, P, fc[k].words, (int)(1000 + k));
    /* cut short: the rows the header promises are not there */
    if (k == 3)
      bad(F, (const char *)f, 2880 * 2, NULL, P, "more than the 5760 bytes of the file hold",
          (int)(2000 + k));
    free(f);
  }
}

/* k-means regions: K clumps far apart on the sky get one label each. */
static void test_regions(void) {
  enum { K = 6, PER = 40 };
  const double cra[K] = {0, 60, 120, 180, 240, 300}, cdec[K] = {80, 30, -20, 0, -60, 10};
  char *text = malloc(64 * K * PER + 64);
  size_t at = (size_t)sprintf(text, "ra,dec,dist\n");
  uint64_t s = 12345;
  for (int c = 0; c < K; c++)
    for (int i = 0; i < PER; i++)
      at += (size_t)sprintf(text + at, "%.17g,%.17g,%.17g\n", cra[c] + 2 * test_rand01(&s) - 1,
                            cdec[c] + 2 * test_rand01(&s) - 1, 100 + 50 * test_rand01(&s));
  histd_sky_options opt = {0, K, NULL, 0};
  histd_dataset a, b;
  int rc = histd_parse_with(HISTD_FORMAT_SKY_CSV, text, at, 0, &opt, &a, msg, sizeof msg);
  CHECK(rc == 0, "regions: %s", msg);
  int rb = histd_parse_with(HISTD_FORMAT_SKY_CSV, text, at, 0, &opt, &b, msg, sizeof msg);
  if (rc == 0 && rb == 0) {
    CHECK(a.regions == K && a.region != NULL, "K regions");
    CHECK(memcmp(a.region, b.region, K * PER * sizeof *a.region) == 0, "deterministic");
    bool used[K] = {false};
    for (int c = 0; c < K; c++) {
      const int32_t l = a.region[c * PER];
      CHECK(l >= 0 && l < K && !used[l], "clump %d: label %d", c, l);
      if (l >= 0 && l < K)
        used[l] = true;
      for (int i = 0; i < PER; i++)
        CHECK(a.region[c * PER + i] == l, "clump %d point %d", c, i);
    }
    /* the fixed point: each point's label is the nearest normalised mean */
    double cen[K][3] = {{0}};
    for (int i = 0; i < K * PER; i++) {
      double u[3];
      histd_sky_unit(a.sky[3 * i], a.sky[3 * i + 1], u);
      for (int k = 0; k < 3; k++)
        cen[a.region[i]][k] += u[k];
    }
    for (int i = 0; i < K * PER; i++) {
      double u[3], best = -2;
      int arg = -1;
      histd_sky_unit(a.sky[3 * i], a.sky[3 * i + 1], u);
      for (int c = 0; c < K; c++) {
        const double l = sqrt(cen[c][0] * cen[c][0] + cen[c][1] * cen[c][1] + cen[c][2] * cen[c][2]);
        const double d = (u[0] * cen[c][0] + u[1] * cen[c][1] + u[2] * cen[c][2]) / l;
        if (d > best) {
          best = d;
          arg = c;
        }
      }
      CHECK(arg == a.region[i], "point %d: nearest %d, label %d", i, arg, a.region[i]);
    }
  }
  if (rc == 0)
    histd_dataset_free(&a);
  if (rb == 0)
    histd_dataset_free(&b);
  /* a dataset that is not a sky catalogue has no regions to assign */
  const char *pts = "1 2 3\n4 5 6\n";
  rc = histd_parse(HISTD_FORMAT_CSV, pts, strlen(pts), 0, &a, msg, sizeof msg);
  if (rc == 0) {
    CHECK(histd_dataset_assign_regions(&a, 1, msg, sizeof msg) == HISTD_EINVAL, "not sky");
    CHECK_STR_CONTAINS(msg, "not a sky catalogue");
    histd_dataset u;
    CHECK(histd_dataset_unit_vectors(&a, &u, msg, sizeof msg) == HISTD_EINVAL, "no unit vectors");
    histd_dataset_free(&a);
  }
  free(text);
}

int main(void) {
  test_distance();
  test_parse();
  test_malformed();
  test_regions();
  return check_finish("test_sky");
}
