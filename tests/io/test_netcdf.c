/*
 * test_netcdf.c -- the AMBER NetCDF reader against files MDAnalysis wrote.
 *
 * tests/io/data/ holds four small trajectories written by MDAnalysis 2.4.2's
 * NCDFWriter (through scipy.io.netcdf, a writer independent of libnetcdf)
 * and, beside each, <file>.txt: what MDAnalysis's NCDFReader reads back,
 * every frame's box (triclinic_vectors) and coordinates (make_netcdf.py
 * writes both). Each file is parsed twice, from an exact-size heap copy and
 * through histd_parse_file (a read-only mapping), and every frame's box and
 * coordinates compared to 1e-6 relative (the data are float32), and the
 * limit (max_points). Then the errors, on copies of ortho.nc with a few
 * bytes changed (another Conventions, a renamed variable or dimension, a
 * dimension of the wrong length, a variable of the wrong type or shape,
 * radian angles, a NaN coordinate, an infinite cell length, and the two
 * headers that crash or balloon libnetcdf 4.9.0, which parse_netcdf.c must
 * refuse before libnetcdf reads them), truncated, or on garbage: each
 * message checked for what it must name.
 *
 * usage: test_netcdf DATA_DIR. Exit status 77 (skipped) when histd was
 * built without NetCDF support.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "histd/io.h"

static char msg[512];
static const char *data_dir;

/* A whole file into an exact-size heap block. */
static char *slurp(const char *name, size_t *len) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", data_dir, name);
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    fprintf(stderr, "cannot open %s\n", path);
    exit(1);
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc(n > 0 ? (size_t)n : 1);
  if (buf == NULL || fread(buf, 1, (size_t)n, f) != (size_t)n) {
    fprintf(stderr, "cannot read %s\n", path);
    exit(1);
  }
  fclose(f);
  *len = (size_t)n;
  return buf;
}

/* What MDAnalysis read: frames x atoms coordinates and a box per frame. */
typedef struct expected {
  size_t frames, atoms;
  histd_box *box;
  double *xyz; /* frame-major, x y z per atom */
} expected;

static expected load_expected(const char *name) {
  char path[1024], line[512];
  snprintf(path, sizeof path, "%s/%s.txt", data_dir, name);
  FILE *f = fopen(path, "r");
  expected e = {0, 0, NULL, NULL};
  if (f == NULL) {
    fprintf(stderr, "cannot open %s\n", path);
    exit(1);
  }
  while (fgets(line, sizeof line, f) != NULL && line[0] == '#')
    ;
  if (sscanf(line, "%zu %zu", &e.frames, &e.atoms) != 2 || e.frames == 0 || e.atoms == 0) {
    fprintf(stderr, "%s: no 'frames atoms' line\n", path);
    exit(1);
  }
  e.box = calloc(e.frames, sizeof *e.box);
  e.xyz = calloc(3 * e.frames * e.atoms, sizeof *e.xyz);
  for (size_t fr = 0; fr < e.frames; fr++) {
    char kind[16];
    histd_box *b = &e.box[fr];
    size_t no;
    if (fscanf(f, " frame %zu %15s %lf %lf %lf %lf %lf %lf", &no, kind, &b->ax, &b->bx, &b->by,
               &b->cx, &b->cy, &b->cz) != 8 || no != fr) {
      fprintf(stderr, "%s: frame %zu: bad frame line\n", path, fr);
      exit(1);
    }
    b->kind = strcmp(kind, "ortho") == 0       ? HISTD_BOX_ORTHO
              : strcmp(kind, "triclinic") == 0 ? HISTD_BOX_TRICLINIC
                                               : HISTD_BOX_NONE;
    for (size_t i = 0; i < 3 * e.atoms; i++)
      if (fscanf(f, "%lf", &e.xyz[3 * fr * e.atoms + i]) != 1) {
        fprintf(stderr, "%s: frame %zu: too few coordinates\n", path, fr);
        exit(1);
      }
  }
  fclose(f);
  return e;
}

static bool close_to(double got, double want) { return fabs(got - want) <= 1e-6 * fabs(want); }

/* Every frame of ds against e. */
static void compare(const char *name, const char *how, const histd_dataset *ds,
                    const expected *e) {
  CHECK(ds->n == e->frames * e->atoms, "%s (%s): %zu points, want %zu", name, how, ds->n,
        e->frames * e->atoms);
  CHECK(histd_dataset_frames(ds) == e->frames, "%s (%s): %zu frames, want %zu", name, how,
        histd_dataset_frames(ds), e->frames);
  if (ds->n != e->frames * e->atoms || histd_dataset_frames(ds) != e->frames)
    return;
  CHECK(ds->w == NULL, "%s: weights", name);
  CHECK(ds->box.kind == e->box[0].kind, "%s: the dataset's box is not the first frame's", name);
  size_t bad = 0;
  for (size_t f = 0; f < e->frames; f++) {
    histd_dataset v;
    histd_dataset_frame(ds, f, &v);
    const histd_box *b = &e->box[f];
    CHECK(v.n == e->atoms, "%s frame %zu: %zu atoms", name, f, v.n);
    CHECK(v.box.kind == b->kind, "%s frame %zu: box kind %d, want %d", name, f, (int)v.box.kind,
          (int)b->kind);
    const double got[6] = {v.box.ax, v.box.bx, v.box.by, v.box.cx, v.box.cy, v.box.cz};
    const double want[6] = {b->ax, b->bx, b->by, b->cx, b->cy, b->cz};
    for (int k = 0; k < 6; k++)
      CHECK(close_to(got[k], want[k]), "%s (%s) frame %zu: box[%d] %.17g, MDAnalysis %.17g",
            name, how, f, k, got[k], want[k]);
    for (size_t i = 0; i < e->atoms && i < v.n; i++) {
      const double *w = &e->xyz[3 * (f * e->atoms + i)];
      const double g[3] = {v.x[i], v.y[i], v.z[i]};
      for (int a = 0; a < 3; a++)
        if (!close_to(g[a], w[a]) && bad++ < 5)
          CHECK(0, "%s (%s) frame %zu atom %zu %c: %.17g, MDAnalysis %.17g", name, how, f, i,
                "xyz"[a], g[a], w[a]);
    }
  }
  CHECK(bad == 0, "%s (%s): %zu coordinates differ from MDAnalysis's", name, how, bad);
}

static void test_file(const char *name, histd_box_kind kind) {
  expected e = load_expected(name);
  CHECK(e.box[0].kind == kind, "%s.txt: box kind %d", name, (int)e.box[0].kind);
  size_t len;
  char *buf = slurp(name, &len);
  histd_dataset ds;
  int rc = histd_parse(HISTD_FORMAT_NETCDF, buf, len, 0, &ds, msg, sizeof msg);
  CHECK(rc == 0, "%s: rc %d: %s", name, rc, msg);
  if (rc == 0) {
    compare(name, "memory", &ds, &e);
    histd_dataset_free(&ds);
  }
  /* through the file: the format from the extension, the bytes mapped
   * read-only (libnetcdf must not write to them) */
  char path[1024];
  histd_format fmt;
  snprintf(path, sizeof path, "%s/%s", data_dir, name);
  CHECK(histd_format_from_path(path, &fmt) == 0 && fmt == HISTD_FORMAT_NETCDF, "%s: format",
        name);
  rc = histd_parse_file(path, HISTD_FORMAT_NETCDF, 0, &ds, msg, sizeof msg);
  CHECK(rc == 0, "%s (file): rc %d: %s", name, rc, msg);
  if (rc == 0) {
    compare(name, "file", &ds, &e);
    histd_dataset_free(&ds);
  }
  /* the limit: exactly every point, then one fewer */
  size_t n = e.frames * e.atoms;
  rc = histd_parse(HISTD_FORMAT_NETCDF, buf, len, n, &ds, msg, sizeof msg);
  CHECK(rc == 0, "%s: max_points %zu: rc %d: %s", name, n, rc, msg);
  histd_dataset_free(&ds);
  rc = histd_parse(HISTD_FORMAT_NETCDF, buf, len, n - 1, &ds, msg, sizeof msg);
  CHECK(rc == HISTD_ETOOBIG, "%s: max_points %zu: rc %d", name, n - 1, rc);
  CHECK_STR_CONTAINS(msg, "the limit for this input");
  free(buf);
  free(e.box);
  free(e.xyz);
}

/* Parses an exact-size copy of buf[0..len) and expects an HISTD_EPARSE
 * whose message holds `want`. */
static void bad(int line, const void *buf, size_t len, const char *want) {
  char *copy = malloc(len ? len : 1);
  if (len)
    memcpy(copy, buf, len);
  histd_dataset ds;
  msg[0] = '\0';
  int rc = histd_parse(HISTD_FORMAT_NETCDF, copy, len, 0, &ds, msg, sizeof msg);
  CHECK(rc == HISTD_EPARSE, "line %d: rc %d (%s), want a parse error", line, rc, msg);
  CHECK(ds.n == 0 && ds.x == NULL, "line %d: a dataset was left behind", line);
  CHECK(strstr(msg, want) != NULL, "line %d: \"%s\" does not say \"%s\"", line, msg, want);
  free(copy);
}

/* Replaces the first n bytes equal to from, after the first `after` (when
 * not NULL), by to; the pattern must be there. */
static void patch(char *buf, size_t len, const char *after, const void *from, const void *to,
                  size_t n) {
  size_t start = 0;
  if (after != NULL) {
    while (start + strlen(after) <= len && memcmp(buf + start, after, strlen(after)) != 0)
      start++;
  }
  for (size_t i = start; i + n <= len; i++)
    if (memcmp(buf + i, from, n) == 0) {
      memcpy(buf + i, to, n);
      return;
    }
  fprintf(stderr, "patch: pattern not found\n");
  exit(1);
}

/* A change of a header's bytes: from -> to (string literals of the same
 * length, zero bytes allowed), after the first `after`. */
#define CHANGE(from, to) from, to, sizeof(from) - 1

static void test_header_errors(void) {
  static const struct {
    const char *after, *from, *to;
    size_t n;
    const char *want;
  } cases[] = {
      {"Conventions", CHANGE("AMBER", "OTHER"),
       "not an AMBER trajectory: its Conventions attribute is \"OTHER\""},
      {NULL, CHANGE("Conventions", "Conventionz"), "has no Conventions attribute"},
      {NULL, CHANGE("ConventionVersion", "ConventionVersioN"), "no ConventionVersion attribute"},
      {NULL, CHANGE("\0\0\0\x0b" "coordinates", "\0\0\0\x0b" "coordinatez"),
       "has no 'coordinates' variable"},
      {NULL, CHANGE("cell_angles", "cell_anglez"), "has no 'cell_angles' variable"},
      {NULL, CHANGE("\0\0\0\x04" "atom", "\0\0\0\x04" "atoM"), "has no 'atom' dimension"},
      {NULL, CHANGE("\0\0\0\x07spatial\0\0\0\0\x03", "\0\0\0\x07spatial\0\0\0\0\x02"),
       "the 'spatial' dimension is 2; an AMBER trajectory has 3"},
      {NULL, CHANGE("\0\0\0\x0c" "cell_angular\0\0\0\x03", "\0\0\0\x0c" "cell_angular\0\0\0\x02"),
       "the 'cell_angular' dimension is 2; an AMBER trajectory has 3"},
      /* a longer dimension: the variables' sizes no longer match their offsets */
      {NULL, CHANGE("\0\0\0\x0c" "cell_angular\0\0\0\x03", "\0\0\0\x0c" "cell_angular\0\0\0\x04"),
       "the NetCDF library cannot open it: NetCDF: "},
      /* cell_lengths of type NC_STRING (12), which classic files cannot
       * have: libnetcdf 4.9.0 would divide by its size, 0 (SIGFPE) */
      {NULL, CHANGE("\0\0\0\x06\0\0\0\x18", "\0\0\0\x0c\0\0\0\x18"),
       "the NetCDF header is cut short or malformed at byte 700, in a variable's type"},
      /* a name 4 GB long: refused before libnetcdf would allocate it */
      {NULL, CHANGE("\0\0\0\x04" "atom", "\xff\xff\xff\xf0" "atom"),
       "the NetCDF header is cut short or malformed at byte 36, in the dimension list"},
      {NULL, CHANGE("degree", "radian"), "'cell_angles' is in \"radian\"; the AMBER convention "
                                         "has degree"},
      /* coordinates of type int (4) */
      {NULL, CHANGE("angstrom\0\0\0\x05", "angstrom\0\0\0\x04"),
       "'coordinates' must be float or double (frame, atom, spatial); it is int (frame, atom, "
       "spatial)"},
      /* cell_lengths over (frame, cell_angular) */
      {NULL, CHANGE("cell_lengths\0\0\0\x02\0\0\0\0\0\0\0\x03",
                    "cell_lengths\0\0\0\x02\0\0\0\0\0\0\0\x04"),
       "'cell_lengths' must be float or double (frame, cell_spatial); it is double (frame, "
       "cell_angular)"},
      /* the file's first "angstrom": coordinates's units */
      {NULL, CHANGE("angstrom", "nanometr"), "'coordinates' is in \"nanometr\""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    size_t len;
    char *buf = slurp("ortho.nc", &len);
    patch(buf, len, cases[i].after, cases[i].from, cases[i].to, cases[i].n);
    bad(__LINE__ * 100 + (int)i, buf, len, cases[i].want);
    free(buf);
  }
}

/* The 12 big-endian bytes of a float32 atom (x, y, z). */
static void be_floats(const double v[3], unsigned char out[12]) {
  for (int a = 0; a < 3; a++) {
    float f = (float)v[a];
    uint32_t u;
    memcpy(&u, &f, 4);
    for (int k = 0; k < 4; k++)
      out[4 * a + k] = (unsigned char)(u >> (24 - 8 * k));
  }
}

static void test_data_errors(void) {
  expected e = load_expected("ortho.nc");
  size_t len;
  /* frame 2, atom 7's y made a NaN (the atom found by its bytes) */
  char *buf = slurp("ortho.nc", &len);
  unsigned char was[12], now[12];
  be_floats(&e.xyz[3 * (1 * e.atoms + 6)], was);
  memcpy(now, was, 12);
  memcpy(now + 4, "\x7f\xc0\x00\x00", 4);
  patch(buf, len, NULL, was, now, 12);
  bad(__LINE__, buf, len, "frame 2, atom 7: y is ");
  bad(__LINE__, buf, len, "not a finite number");
  /* an infinite cell length in frame 4 (the doubles follow the atoms) */
  free(buf);
  buf = slurp("ortho.nc", &len);
  unsigned char lx[8], inf[8] = {0x7f, 0xf0, 0, 0, 0, 0, 0, 0};
  uint64_t u;
  memcpy(&u, &e.box[3].ax, 8);
  for (int k = 0; k < 8; k++)
    lx[k] = (unsigned char)(u >> (56 - 8 * k));
  patch(buf, len, NULL, lx, inf, 8);
  bad(__LINE__, buf, len, "frame 4: the cell's lengths (inf,");
  free(buf);
  /* truncated: the header announces more than the file holds */
  buf = slurp("ortho.nc", &len);
  bad(__LINE__, buf, len / 2, "is it truncated?");
  bad(__LINE__, buf, 40, "the NetCDF header is cut short or malformed at byte 16, in the "
                         "dimension list (a count or a length beyond the input's 40 bytes");
  bad(__LINE__, buf, 3, "not a NetCDF file");
  bad(__LINE__, buf, 0, "empty input: no points");
  free(buf);
  free(e.box);
  free(e.xyz);
}

static void test_garbage(void) {
  char junk[4096];
  uint64_t s = 12345;
  for (size_t i = 0; i < sizeof junk; i++)
    junk[i] = (char)(test_rand_u64(&s) >> 56);
  bad(__LINE__, junk, sizeof junk, "not a NetCDF file");
  memcpy(junk, "CDF\x02", 4);
  bad(__LINE__, junk, sizeof junk, "the NetCDF header is cut short or malformed");
  memcpy(junk, "\x89HDF\r\n\x1a\n", 8);
  bad(__LINE__, junk, sizeof junk, "a NetCDF-4 (HDF5) file");
  const char text[] = "ITEM: TIMESTEP\n0\n";
  bad(__LINE__, text, sizeof text - 1, "not a NetCDF file");
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_netcdf DATA_DIR\n");
    return 2;
  }
  data_dir = argv[1];
  histd_dataset ds;
  if (histd_parse(HISTD_FORMAT_NETCDF, "CDF\x02", 4, 0, &ds, msg, sizeof msg) == HISTD_EINVAL &&
      strstr(msg, "histd was built without NetCDF support") != NULL)
    SKIP("%s", msg);
  test_file("ortho.nc", HISTD_BOX_ORTHO);
  test_file("triclinic.ncdf", HISTD_BOX_TRICLINIC);
  test_file("nobox.nc", HISTD_BOX_NONE);
  test_file("scaled.nc", HISTD_BOX_ORTHO);
  test_header_errors();
  test_data_errors();
  test_garbage();
  return check_finish("test_netcdf");
}
