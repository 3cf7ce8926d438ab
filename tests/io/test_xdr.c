/*
 * test_xdr.c -- the GROMACS XTC and TRR readers against files real
 * programs wrote (tests/io/data, made by make_xtc.py: MDAnalysis's
 * XTCWriter and TRRWriter, GROMACS's gmx and gmx_d trjconv) and what
 * MDAnalysis reads back from them (NAME.txt): every frame's coordinates
 * and box. XTC values must match MDAnalysis's float32 decoding to 1 ulp
 * (they are computed the same way, so the test also counts exact ones),
 * TRR values exactly (float32 or float64).
 *
 * Then each malformed case, made by editing those files in memory (a cut
 * last frame, a bad magic, a corrupt compressed block, natoms changing,
 * non-finite values, ...): the message must name the frame and the byte.
 * Every input is parsed from an exact-size heap copy, so the sanitizer
 * build catches any read past the end.
 *
 *     test_xdr DATA_DIR
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "histd/io.h"

static const char *data_dir;
static char msg[512];

#include "parse_exact.h"

static int parse_exact(histd_format fmt, const void *buf, size_t len, size_t max,
                       histd_dataset *ds) {
  return parse_exact_msg(fmt, buf, len, max, ds, msg, sizeof msg);
}

/* ---- files ------------------------------------------------------------- */

static unsigned char *slurp(const char *name, size_t *len) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", data_dir, name);
  FILE *f = fopen(path, "rb");
  CHECK(f != NULL, "cannot open %s", path);
  if (f == NULL)
    exit(check_finish("test_xdr"));
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc((size_t)n + 1);
  CHECK(fread(b, 1, (size_t)n, f) == (size_t)n, "read %s", path);
  fclose(f);
  b[n] = 0;
  *len = (size_t)n;
  return b;
}

/* What MDAnalysis read (NAME.txt: see make_xtc.py). */
typedef struct expected {
  int real; /* 4: float32 values, 8: float64 */
  size_t natoms, frames, offsets[16];
  double *box; /* frames x 9   */
  double *xyz; /* frames x natoms x 3 */
} expected;

static double number(char **p, int real) {
  char *end;
  double v = real == 4 ? (double)strtof(*p, &end) : strtod(*p, &end);
  CHECK(end != *p, "expected a number at \"%.20s\"", *p);
  *p = end;
  return v;
}

/* The value after a word, e.g. "natoms 150". */
static char *after(char *p, const char *word) {
  char *q = strstr(p, word);
  CHECK(q != NULL, "no \"%s\" in the expected values", word);
  return q ? q + strlen(word) : p;
}

static expected load_expected(const char *name) {
  char txt[256];
  size_t len;
  snprintf(txt, sizeof txt, "%s.txt", name);
  char *s = (char *)slurp(txt, &len), *p = s;
  expected e;
  memset(&e, 0, sizeof e);
  e.real = (int)strtol(after(p, "\nreal "), &p, 10);
  e.natoms = strtoul(after(p, "\nnatoms "), &p, 10);
  e.frames = strtoul(after(p, "\nframes "), &p, 10);
  p = after(p, "\noffsets ");
  for (size_t f = 0; f < e.frames && f < 16; f++)
    e.offsets[f] = strtoul(p, &p, 10);
  e.box = malloc(e.frames * 9 * sizeof *e.box);
  e.xyz = malloc(e.frames * e.natoms * 3 * sizeof *e.xyz);
  for (size_t f = 0; f < e.frames; f++) {
    p = after(p, "\nbox ");
    for (int k = 0; k < 9; k++)
      e.box[9 * f + k] = number(&p, e.real);
    for (size_t i = 0; i < 3 * e.natoms; i++)
      e.xyz[3 * e.natoms * f + i] = number(&p, e.real);
  }
  free(s);
  return e;
}

static void free_expected(expected *e) {
  free(e->box);
  free(e->xyz);
}


/* ---- good files -------------------------------------------------------- */

static histd_box box_of(const double m[9]) {
  bool zero = true;
  for (int k = 0; k < 9; k++)
    zero = zero && m[k] == 0;
  if (zero)
    return (histd_box){HISTD_BOX_NONE, 0, 0, 0, 0, 0, 0};
  return (histd_box){m[3] != 0 || m[6] != 0 || m[7] != 0 ? HISTD_BOX_TRICLINIC : HISTD_BOX_ORTHO,
                     m[0], m[3], m[4], m[6], m[7], m[8]};
}

/* Checks ds against e; XTC values to 1 ulp of float32, the rest exactly.
 * Returns how many values matched exactly. */
static size_t compare(const char *name, const histd_dataset *ds, const expected *e, bool xtc) {
  size_t exact = 0, bad = 0;
  CHECK(ds->n == e->natoms * e->frames, "%s: %zu points, want %zu", name, ds->n,
        e->natoms * e->frames);
  CHECK(histd_dataset_frames(ds) == e->frames, "%s: %zu frames, want %zu", name,
        histd_dataset_frames(ds), e->frames);
  if (ds->n != e->natoms * e->frames || histd_dataset_frames(ds) != e->frames)
    return 0;
  for (size_t f = 0; f < e->frames; f++) {
    histd_dataset v;
    histd_dataset_frame(ds, f, &v);
    histd_box want = box_of(&e->box[9 * f]);
    CHECK(v.n == e->natoms, "%s frame %zu: n %zu", name, f + 1, v.n);
    CHECK(v.box.kind == want.kind && v.box.ax == want.ax && v.box.bx == want.bx &&
              v.box.by == want.by && v.box.cx == want.cx && v.box.cy == want.cy &&
              v.box.cz == want.cz,
          "%s frame %zu: box kind %d (%g %g %g %g %g %g), want kind %d (%g %g %g %g %g %g)",
          name, f + 1, (int)v.box.kind, v.box.ax, v.box.bx, v.box.by, v.box.cx, v.box.cy,
          v.box.cz, (int)want.kind, want.ax, want.bx, want.by, want.cx, want.cy, want.cz);
    for (size_t i = 0; i < e->natoms && i < v.n; i++) {
      const double got[3] = {v.x[i], v.y[i], v.z[i]};
      for (int a = 0; a < 3; a++) {
        double w = e->xyz[3 * (e->natoms * f + i) + a];
        double tol = xtc ? (double)(nextafterf((float)fabs(w), INFINITY) - (float)fabs(w)) : 0;
        exact += got[a] == w;
        if (!(fabs(got[a] - w) <= tol) && bad++ < 5)
          CHECK(0, "%s frame %zu atom %zu %c: %.9g, MDAnalysis %.9g", name, f + 1, i + 1,
                'x' + a, got[a], w);
      }
    }
  }
  CHECK(bad == 0, "%s: %zu values differ", name, bad);
  return exact;
}

static void test_file(const char *name, histd_format fmt) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", data_dir, name);
  histd_format from_path;
  CHECK(histd_format_from_path(path, &from_path) == 0 && from_path == fmt, "%s: format", name);
  expected e = load_expected(name);
  histd_dataset ds;
  int rc = histd_parse_file(path, fmt, 0, &ds, msg, sizeof msg);
  CHECK(rc == 0, "%s: rc %d: %s", name, rc, msg);
  if (rc == 0) {
    size_t exact = compare(name, &ds, &e, fmt == HISTD_FORMAT_XTC);
    printf("%s: %zu frames of %zu atoms, %zu of %zu values exactly MDAnalysis's\n", name,
           e.frames, e.natoms, exact, 3 * e.natoms * e.frames);
    histd_dataset_free(&ds);
  }
  /* max_points: all the points fit, one fewer does not */
  size_t len, n = e.natoms * e.frames;
  unsigned char *b = slurp(name, &len);
  rc = parse_exact(fmt, b, len, n, &ds);
  CHECK(rc == 0, "%s with max_points %zu: %s", name, n, msg);
  if (rc == 0)
    histd_dataset_free(&ds);
  rc = parse_exact(fmt, b, len, n - 1, &ds);
  CHECK(rc == HISTD_ETOOBIG, "%s with max_points %zu: rc %d", name, n - 1, rc);
  CHECK_STR_CONTAINS(msg, "more than");
  free(b);
  free_expected(&e);
}

/* ---- malformed files --------------------------------------------------- */

static void put32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)(v >> 24);
  p[1] = (unsigned char)(v >> 16);
  p[2] = (unsigned char)(v >> 8);
  p[3] = (unsigned char)v;
}

static uint32_t get32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Expects buf[0..len) to fail with rc, its message holding "frame F, byte
 * B" and every other key word given. */
static void bad(int line, histd_format fmt, const unsigned char *buf, size_t len, int want_rc,
                size_t frame, size_t byte, ...) {
  histd_dataset ds;
  memset(&ds, 0xAB, sizeof ds);
  int rc = parse_exact(fmt, buf, len, 0, &ds);
  CHECK(rc == want_rc, "line %d: rc %d, want %d; message \"%s\"", line, rc, want_rc, msg);
  CHECK(ds.n == 0 && ds.x == NULL, "line %d: dataset not left empty on error", line);
  if (rc == 0)
    histd_dataset_free(&ds);
  char where[64];
  snprintf(where, sizeof where, "frame %zu, byte %zu:", frame, byte);
  CHECK(strstr(msg, where) != NULL, "line %d: message \"%s\" lacks \"%s\"", line, msg, where);
  va_list ap;
  va_start(ap, byte);
  const char *k;
  while ((k = va_arg(ap, const char *)) != NULL)
    CHECK(strstr(msg, k) != NULL, "line %d: message \"%s\" lacks \"%s\"", line, msg, k);
  va_end(ap);
}
#define BAD(fmt, buf, len, frame, byte, ...) \
  bad(__LINE__, fmt, buf, len, HISTD_EPARSE, frame, byte, __VA_ARGS__, NULL)

/* A file of the other format read as fmt: its magic is named. */
static void other_format(histd_format fmt, const char *name, const char *hint) {
  size_t len;
  unsigned char *b = slurp(name, &len);
  BAD(fmt, b, len, 1, 0, hint);
  free(b);
}

/* A copy of b to edit. */
static unsigned char *dup(const unsigned char *b, size_t len) {
  unsigned char *c = malloc(len);
  memcpy(c, b, len);
  return c;
}

/* XTC frame layout (bytes from the frame's start): magic 0, natoms 4, box 16,
 * natoms again 52; compressed: precision 56, minint 60, maxint 72, smallidx
 * 84, length 88, block 92. */
enum { X_NATOMS = 4, X_BOX = 16, X_NATOMS2 = 52, X_PREC = 56, X_SMALLIDX = 84, X_LEN = 88,
       X_BLOCK = 92 };

/* Expects a corrupt compressed block in frame 2 (at f2), at a byte of its
 * block (blen bytes). */
static void in_block(const unsigned char *c, size_t len, size_t f2, size_t blen) {
  histd_dataset ds;
  CHECK(parse_exact(HISTD_FORMAT_XTC, c, len, 0, &ds) == HISTD_EPARSE, "corrupt block: %s", msg);
  CHECK_STR_CONTAINS(msg, "frame 2, byte ");
  CHECK_STR_CONTAINS(msg, "corrupt compressed block at atom");
  const char *b = strstr(msg, "byte ");
  size_t at = b ? strtoul(b + 5, NULL, 10) : 0;
  CHECK(at >= f2 + X_BLOCK && at <= f2 + X_BLOCK + blen, "corrupt block: byte %zu outside "
        "the block [%zu, %zu]", at, f2 + X_BLOCK, f2 + X_BLOCK + blen);
}

static void test_xtc_errors(void) {
  const histd_format X = HISTD_FORMAT_XTC;
  expected e = load_expected("water.xtc");
  size_t len;
  unsigned char *b = slurp("water.xtc", &len), *c;
  const size_t f2 = e.offsets[1], last = e.offsets[e.frames - 1];

  /* the last frame cut short: in its header, its block's header, its block */
  BAD(X, b, last + 30, e.frames, last, "cut short", "inside its header");
  BAD(X, b, last + 70, e.frames, last, "cut short", "compressed block's header");
  BAD(X, b, len - 4, e.frames, last + X_BLOCK, "cut short", "runs past the end");
  BAD(X, b, last + 2, e.frames, last, "cut short");

  c = dup(b, len); /* bad magic in frame 2 */
  put32(c + f2, 1996);
  BAD(X, c, len, 2, f2, "bad magic number 1996");
  put32(c + f2, 1993);
  BAD(X, c, len, 2, f2, "1993 starts a TRR file");
  free(c);

  c = dup(b, len); /* natoms changing */
  put32(c + f2 + X_NATOMS, 149);
  put32(c + f2 + X_NATOMS2, 149);
  BAD(X, c, len, 2, f2 + X_NATOMS, "149 atoms, but the first frame has 150");
  put32(c + f2 + X_NATOMS2, 150);
  put32(c + f2 + X_NATOMS, 150);
  put32(c + f2 + X_NATOMS2, 151);
  BAD(X, c, len, 2, f2 + X_NATOMS2, "coordinates are of 151 atoms, the header says 150");
  put32(c + X_NATOMS, 0);
  BAD(X, c, len, 1, (size_t)X_NATOMS, "atom count is 0");
  free(c);

  c = dup(b, len); /* corrupt compressed blocks */
  put32(c + f2 + X_SMALLIDX, 80);
  BAD(X, c, len, 2, f2 + X_SMALLIDX, "corrupt compressed block", "smallidx");
  free(c);
  c = dup(b, len); /* a block 8 bytes shorter: its bits end before its atoms */
  uint32_t blen = get32(b + f2 + X_LEN);
  put32(c + f2 + X_LEN, blen - 8);
  in_block(c, len, f2, blen - 8);
  put32(c + f2 + X_LEN, 3); /* far too short for 150 atoms */
  BAD(X, c, len, 2, f2 + X_LEN, "corrupt compressed block", "too few bytes");
  put32(c + f2 + X_LEN, 0xfffffff0u); /* overruns the input */
  BAD(X, c, len, 2, f2 + X_BLOCK, "runs past the end of the input");
  free(c);
  c = dup(b, len); /* maxint below minint */
  put32(c + f2 + X_PREC + 4 + 12, get32(c + f2 + X_PREC + 4) - 1);
  BAD(X, c, len, 2, f2 + X_PREC + 4, "corrupt compressed block", "maxint is below minint");
  free(c);
  c = dup(b, len); /* a range of 1 along x: the bits no longer fit the coordinates */
  put32(c + f2 + X_PREC + 4 + 12, get32(c + f2 + X_PREC + 4));
  in_block(c, len, f2, blen);
  free(c);

  c = dup(b, len); /* non-finite numbers and bad boxes */
  put32(c + f2 + X_PREC, 0x7fc00000u);
  BAD(X, c, len, 2, f2 + X_PREC, "precision");
  put32(c + f2 + X_PREC, 0);
  BAD(X, c, len, 2, f2 + X_PREC, "precision");
  put32(c + f2 + X_PREC, 0x00000001u); /* the smallest subnormal: 1/prec overflows */
  BAD(X, c, len, 2, f2 + X_PREC, "precision");
  memcpy(c + f2 + X_PREC, b + f2 + X_PREC, 4);
  put32(c + f2 + X_BOX + 8, 0x7f800000u); /* az = inf */
  BAD(X, c, len, 2, f2 + X_BOX + 8, "box holds a number that is not finite");
  put32(c + f2 + X_BOX + 8, 0x3f800000u); /* az = 1 */
  BAD(X, c, len, 2, f2 + X_BOX, "lower-triangular");
  put32(c + f2 + X_BOX + 8, 0);
  put32(c + f2 + X_BOX, 0xbf800000u); /* ax = -1 */
  BAD(X, c, len, 2, f2 + X_BOX, "must be > 0");
  free(c);

  size_t slen;
  unsigned char *s = slurp("small.xtc", &slen); /* uncompressed: 7 atoms */
  c = dup(s, slen);
  put32(c + 56 + 12 * 2 + 4, 0xffc00000u); /* atom 3's y = nan */
  BAD(X, c, slen, 1, (size_t)(56 + 12 * 2 + 4), "atom 3's y is not a finite number");
  free(c);
  BAD(X, s, slen - 1, 3, slen - 140, "cut short", "inside its coordinates");
  free(s);

  /* wrong inputs altogether */
  histd_dataset ds;
  CHECK(parse_exact(X, b, 0, 0, &ds) == HISTD_EPARSE, "empty input");
  CHECK_STR_CONTAINS(msg, "empty input: no points");
  other_format(X, "water.trr", "1993 starts a TRR file");
  free(b);
  free_expected(&e);
}

/* water.xtc rewritten in GROMACS 2023's format for large frames (magic
 * 2023, the block's length in 8 bytes): the same coordinates. GROMACS 2022
 * cannot write it, so this file is made here from the real one. */
static void test_xtc_2023(void) {
  expected e = load_expected("water.xtc");
  size_t len, o = 0;
  unsigned char *b = slurp("water.xtc", &len), *c = malloc(len + 4 * e.frames);
  for (size_t f = 0; f < e.frames; f++) {
    size_t at = e.offsets[f], end = f + 1 < e.frames ? e.offsets[f + 1] : len;
    memcpy(c + o, b + at, X_LEN);
    put32(c + o, 2023);
    put32(c + o + X_LEN, 0);
    memcpy(c + o + X_LEN + 4, b + at + X_LEN, end - at - X_LEN);
    o += end - at + 4;
  }
  histd_dataset ds;
  int rc = parse_exact(HISTD_FORMAT_XTC, c, o, 0, &ds);
  CHECK(rc == 0, "magic 2023: %s", msg);
  if (rc == 0) {
    compare("water.xtc as magic 2023", &ds, &e, true);
    histd_dataset_free(&ds);
  }
  free(c);
  free(b);
  free_expected(&e);
}

/* TRR float frame layout: magic 0, version 4..24, sizes from 24 (box 32,
 * vir 36, pres 40, x 52, v 56, f 60), natoms 64, time 76, lambda 80,
 * blocks from 84. */
enum { T_BOX = 32, T_X = 52, T_V = 56, T_F = 60, T_NATOMS = 64, T_BLOCKS = 84 };

static void test_trr_errors(void) {
  const histd_format T = HISTD_FORMAT_TRR;
  expected e = load_expected("water.trr");
  size_t len;
  unsigned char *b = slurp("water.trr", &len), *c;
  const size_t f2 = e.offsets[1], last = e.offsets[e.frames - 1], n = e.natoms;
  const size_t box = get32(b + T_BOX), vir = get32(b + T_BOX + 4), pres = get32(b + T_BOX + 8);
  const size_t x_at = T_BLOCKS + box + vir + pres; /* x's first byte in a frame */
  CHECK(get32(b + T_X) == 12 * n && get32(b + T_V) == 12 * n && get32(b + T_F) == 12 * n,
        "water.trr holds x, v and f");

  BAD(T, b, last + 40, e.frames, last, "cut short", "inside its header");
  BAD(T, b, last + x_at + 10, e.frames, last, "cut short", "inside its coordinates");
  BAD(T, b, len - 1, e.frames, last, "cut short", "inside its forces");

  c = dup(b, len);
  put32(c + f2, 1995);
  BAD(T, c, len, 2, f2, "bad magic number 1995", "XTC");
  memcpy(c + f2, b + f2, 4);
  c[f2 + 14] = 'Q'; /* GMX_trn_file -> GMQ_trn_file */
  BAD(T, c, len, 2, f2 + 4, "version string");
  memcpy(c, b, len);
  put32(c + f2 + T_NATOMS, (uint32_t)n + 1);
  BAD(T, c, len, 2, f2 + T_NATOMS, "61 atoms, but the first frame has 60");
  memcpy(c, b, len);
  put32(c + f2 + T_V, 100);
  BAD(T, c, len, 2, f2 + T_V, "v_size is 100, neither 0 nor 720 (float)");
  memcpy(c, b, len);
  put32(c + f2 + T_BOX, 0);
  put32(c + f2 + T_X, 7);
  BAD(T, c, len, 2, f2, "neither float nor double");
  memcpy(c, b, len);
  put32(c + f2 + x_at + 12 * 4 + 8, 0x7f800000u); /* atom 5's z = inf */
  BAD(T, c, len, 2, f2 + x_at + 12 * 4 + 8, "atom 5's z is not a finite number");
  free(c);

  /* a frame without x (velocities and forces only) is skipped */
  size_t flen = e.offsets[1], nlen = flen - 12 * n;
  c = malloc(nlen + len);
  memcpy(c, b, x_at);
  put32(c + T_X, 0);
  memcpy(c + x_at, b + x_at + 12 * n, flen - x_at - 12 * n);
  memcpy(c + nlen, b, len);
  histd_dataset ds;
  int rc = parse_exact(T, c, nlen + len, 0, &ds);
  CHECK(rc == 0, "a frame without x first: %s", msg);
  if (rc == 0) {
    compare("water.trr after a frame without x", &ds, &e, false);
    histd_dataset_free(&ds);
  }
  rc = parse_exact(T, c, nlen, 0, &ds); /* that frame alone */
  CHECK(rc == HISTD_EPARSE, "only frames without x: rc %d", rc);
  CHECK_STR_CONTAINS(msg, "no frame holds coordinates");
  put32(c + nlen + T_NATOMS, (uint32_t)n - 1); /* its natoms counts too */
  BAD(T, c, nlen + len, 2, nlen + T_NATOMS, "59 atoms, but the first frame has 60");
  free(c);

  /* double precision: cut, and a non-finite x */
  expected d = load_expected("double.trr");
  size_t dlen;
  unsigned char *db = slurp("double.trr", &dlen);
  CHECK(get32(db + T_BOX) == 72, "double.trr: box_size %u", get32(db + T_BOX));
  BAD(T, db, dlen - 8, d.frames, d.offsets[d.frames - 1], "cut short", "coordinates");
  c = dup(db, dlen);
  const size_t dx = 76 + 16 + 72; /* header with double time and lambda, box */
  put32(c + d.offsets[1] + dx + 8, 0x7ff80000u); /* atom 1's y = nan */
  BAD(T, c, dlen, 2, d.offsets[1] + dx + 8, "atom 1's y is not a finite number");
  memcpy(c, db, dlen);
  put32(c + d.offsets[1] + 76 + 16 + 8, 0x3ff00000u); /* ay = 1 */
  BAD(T, c, dlen, 2, d.offsets[1] + 76 + 16, "lower-triangular");
  free(c);
  free(db);
  free_expected(&d);

  other_format(T, "water.xtc", "1995 or 2023 starts an XTC file");
  free(b);
  free_expected(&e);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: test_xdr DATA_DIR\n");
    return 2;
  }
  data_dir = argv[1];
  test_file("water.xtc", HISTD_FORMAT_XTC);
  test_file("triclinic.xtc", HISTD_FORMAT_XTC);
  test_file("small.xtc", HISTD_FORMAT_XTC);
  test_file("wide.xtc", HISTD_FORMAT_XTC);
  test_file("gmx.xtc", HISTD_FORMAT_XTC);
  test_file("water.trr", HISTD_FORMAT_TRR);
  test_file("double.trr", HISTD_FORMAT_TRR);
  test_xtc_2023();
  test_xtc_errors();
  test_trr_errors();
  return check_finish("test_xdr");
}
