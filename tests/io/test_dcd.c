/*
 * test_dcd.c -- the DCD parser on files real programs wrote
 * (tests/io/data/make_dcd.py: MDAnalysis, MDTraj; big-endian and 8-byte
 * marker variants), every frame's coordinates and box checked against what
 * MDAnalysis read from the same file (the .expect beside each one); then
 * every malformed case, made by cutting or patching those files, checked for
 * a message that names the frame and the byte.
 *
 * usage: test_dcd DATA_DIR (tests/io/data)
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "histd/io.h"
#include "parse_exact.h"

static const char *dir;
static char msg[512];

/* The whole file dir/name (exits on failure: the data is part of the tree). */
static unsigned char *slurp(const char *name, size_t *len) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    fprintf(stderr, "cannot open %s\n", path);
    exit(1);
  }
  size_t cap = 1 << 16, n = 0;
  unsigned char *b = malloc(cap);
  for (size_t r; (r = fread(b + n, 1, cap - n, f)) > 0;)
    if ((n += r) == cap)
      b = realloc(b, cap *= 2);
  fclose(f);
  *len = n;
  return b;
}

static int parse_exact(const void *buf, size_t len, size_t max, histd_dataset *ds) {
  return parse_exact_msg(HISTD_FORMAT_DCD, buf, len, max, ds, msg, sizeof msg);
}

static bool close_rel(double got, double want, double scale) {
  return fabs(got - want) <= 1e-6 * fmax(fabs(want), scale);
}

static const char *const kinds[3] = {"none", "ortho", "triclinic"};

/* One frame's "frame f box KIND v..." line against the view's box. */
static void check_box(const char *name, size_t f, const char *line, const histd_box *b) {
  char kind[16];
  double v[6];
  size_t ff;
  if (sscanf(line, "frame %zu box %15s %lf %lf %lf %lf %lf %lf", &ff, kind, &v[0], &v[1],
             &v[2], &v[3], &v[4], &v[5]) != 8 || ff != f) {
    CHECK(0, "%s: frame %zu: bad .expect line '%s'", name, f, line);
    return;
  }
  CHECK(strcmp(kinds[b->kind], kind) == 0, "%s frame %zu: box %s, MDAnalysis %s", name, f,
        kinds[b->kind], kind);
  /* MDAnalysis holds the cell in float32: 1e-6 of the box's longest edge */
  double scale = fmax(v[0], fmax(v[2], v[5]));
  const double got[6] = {b->ax, b->bx, b->by, b->cx, b->cy, b->cz};
  for (int i = 0; i < 6; i++)
    CHECK(close_rel(got[i], v[i], scale), "%s frame %zu: box value %d is %.17g, MDAnalysis %.17g",
          name, f, i, got[i], v[i]);
}

/* name.dcd against name.expect (or `expect` when given). */
static void check_file(const char *name, const char *expect) {
  char fn[256];
  size_t len;
  snprintf(fn, sizeof fn, "%s.dcd", name);
  unsigned char *buf = slurp(fn, &len);
  histd_dataset ds;
  int rc = parse_exact(buf, len, 0, &ds);
  free(buf);
  CHECK(rc == 0, "%s: rc %d (%s)", fn, rc, msg);
  if (rc != 0)
    return;
  snprintf(fn, sizeof fn, "%s/%s.expect", dir, expect ? expect : name);
  FILE *f = fopen(fn, "r");
  CHECK(f != NULL, "cannot open %s", fn);
  char line[512];
  size_t natoms = 0, frames = 0, fr = SIZE_MAX, i = 0, points = 0;
  histd_dataset view;
  memset(&view, 0, sizeof view);
  while (f != NULL && fgets(line, sizeof line, f) != NULL) {
    double x, y, z;
    size_t k;
    if (line[0] == '#')
      continue;
    if (sscanf(line, "natoms %zu frames %zu", &natoms, &frames) == 2) {
      CHECK(histd_dataset_frames(&ds) == frames && ds.n == natoms * frames,
            "%s: %zu frames of %zu points, MDAnalysis %zu of %zu", name,
            histd_dataset_frames(&ds), ds.n, frames, natoms);
      if (histd_dataset_frames(&ds) != frames || ds.n != natoms * frames)
        break;
    } else if (strncmp(line, "frame ", 6) == 0) {
      histd_dataset_frame(&ds, ++fr, &view);
      CHECK(view.n == natoms, "%s frame %zu: %zu points", name, fr, view.n);
      check_box(name, fr, line, &view.box);
      i = 0;
    } else if (sscanf(line, "%zu %lf %lf %lf", &k, &x, &y, &z) == 4 && k == i && i < view.n) {
      CHECK(close_rel(view.x[i], x, 0) && close_rel(view.y[i], y, 0) && close_rel(view.z[i], z, 0),
            "%s frame %zu atom %zu: (%.9g, %.9g, %.9g), MDAnalysis (%.9g, %.9g, %.9g)", name, fr,
            i, view.x[i], view.y[i], view.z[i], x, y, z);
      i++;
      points++;
    } else {
      CHECK(0, "%s: unexpected .expect line '%s'", name, line);
    }
  }
  CHECK(points == natoms * frames && points > 0, "%s: compared %zu points", name, points);
  if (f != NULL)
    fclose(f);
  histd_dataset_free(&ds);
}

/* Expects an error rc whose message contains every key word given. */
static void bad(int line, const void *buf, size_t len, size_t max, int want_rc, ...) {
  histd_dataset ds;
  memset(&ds, 0xAB, sizeof ds);
  int rc = parse_exact(buf, len, max, &ds);
  CHECK(rc == want_rc, "line %d: rc %d, want %d; message \"%s\"", line, rc, want_rc, msg);
  CHECK(rc == 0 || (ds.n == 0 && ds.x == NULL), "line %d: dataset not left empty on error", line);
  if (rc == 0)
    histd_dataset_free(&ds);
  va_list ap;
  va_start(ap, want_rc);
  for (const char *k; (k = va_arg(ap, const char *)) != NULL;)
    CHECK(strstr(msg, k) != NULL, "line %d: message \"%s\" lacks \"%s\"", line, msg, k);
  va_end(ap);
}
#define BAD(buf, len, ...) bad(__LINE__, buf, len, 0, HISTD_EPARSE, __VA_ARGS__, NULL)

static void put_u32le(unsigned char *p, uint32_t v) {
  for (int b = 0; b < 4; b++)
    p[b] = (unsigned char)(v >> (8 * b));
}

/* mda_degrees.dcd: little-endian, CHARMM, a unit cell, 16 atoms, 4 frames:
 * a header of 92 + 252 + 12 = 356 bytes, then frames of 56 + 3 x 72 = 272
 * bytes at 356, 628, 900, 1172; it ends at 1444. */
enum { HEAD = 356, FRAME = 272, CELL = 56, XYZ = 72 };

static void test_errors(void) {
  size_t len;
  unsigned char *src = slurp("mda_degrees.dcd", &len), *b = malloc(len + 16);
  CHECK(len == HEAD + 4 * FRAME, "mda_degrees.dcd has %zu bytes", len);
  /* truncated last frame: inside its z record, and at its start */
  BAD(src, len - 10, "frame 4 is cut short", "z record at byte 1372", "truncated last frame");
  BAD(src, len - FRAME + 2, "frame 4 is cut short", "unit cell record at byte 1172");
  BAD(src, HEAD + CELL + 30, "frame 1 is cut short", "x record at byte 412");
  /* bad markers: a frame's y record's start, x record's end */
  memcpy(b, src, len);
  put_u32le(b + HEAD + FRAME + CELL + XYZ, 999);
  BAD(b, len, "frame 2, byte 756: bad record marker", "y record says it holds 999 bytes",
      "expected 64 (4 bytes x NATOM 16)");
  memcpy(b, src, len);
  put_u32le(b + HEAD + FRAME + CELL + XYZ - 4, 60);
  BAD(b, len, "frame 2, byte 752: bad record marker", "x record's end marker says 60",
      "start (byte 684) says 64");
  /* NATOM that does not match the records */
  memcpy(b, src, len);
  put_u32le(b + HEAD - 8, 17);
  BAD(b, len, "frame 1, byte 412: bad record marker", "NATOM 17");
  put_u32le(b + HEAD - 8, 0);
  BAD(b, len, "byte 348: NATOM is 0: no points");
  /* a non-finite coordinate: frame 3, atom 5's y */
  memcpy(b, src, len);
  const size_t nan_at = HEAD + 2 * FRAME + CELL + XYZ + 4 + 16;
  put_u32le(b + nan_at, 0x7fc00000u);
  BAD(b, len, "frame 3, byte 1048: atom 5's y is not a finite number");
  put_u32le(b + nan_at, 0xff800000u);
  BAD(b, len, "frame 3, byte 1048", "not a finite number (-inf)");
  /* a unit cell that is no box: A = 0 with B and C > 0 */
  memcpy(b, src, len);
  memset(b + HEAD + 4, 0, 8);
  BAD(b, len, "frame 1, byte 360: the unit cell", "is not a periodic box");
  /* fixed atoms, the header alone, trailing bytes, garbage, empty */
  memcpy(b, src, len);
  put_u32le(b + 40, 3);
  BAD(b, len, "byte 40", "3 fixed atoms (NAMNF)");
  BAD(src, HEAD, "byte 356", "header but no frames: no points");
  BAD(src, 50, "byte 0: the input ends inside the DCD header: its CORD record needs 92");
  BAD(src, 300, "byte 92: the input ends inside the DCD header: its title record needs 252");
  memcpy(b, src, len);
  memset(b + len, 0, 12);
  BAD(b, len + 12, "frame 5, byte 1444: bad record marker", "unit cell record says it holds 0");
  BAD(b, len + 3, "frame 5 is cut short", "byte 1444");
  BAD("hello, world: not a trajectory", 30, "byte 0: not a DCD file",
      "first record marker is 1819043176");
  memcpy(b, src, len);
  memcpy(b + 4, "CARD", 4);
  BAD(b, len, "byte 4: not a DCD file", "starts with 'CARD', not CORD");
  BAD(src, 3, "byte 0: not a DCD file", "too short");
  BAD(src, 0, "empty input");
  bad(__LINE__, src, len, 40, HISTD_ETOOBIG, "frame 3, byte 900", "48 atoms is more than 40",
      NULL);
  /* big-endian and 8-byte markers, cut short too */
  free(src);
  src = slurp("be_degrees.dcd", &len);
  BAD(src, len - 1, "frame 4 is cut short", "z record at byte 1372");
  free(src);
  src = slurp("m8_cosines.dcd", &len);
  BAD(src, len - 1, "frame 3 is cut short", "z record");
  memcpy(b, src, len < 64 ? len : 64);
  b[8] = 'X';
  BAD(b, 64, "byte 4: not a DCD file", "not CORD");
  free(src);
  free(b);
}

/* A CHARMM file with a fourth coordinate (no program here writes one):
 * mda_degrees.dcd with the header's 4D flag set and a record of NATOM
 * floats after each frame's z; the points and boxes are the same. */
static void test_four_dims(void) {
  size_t len;
  unsigned char *src = slurp("mda_degrees.dcd", &len);
  unsigned char *b = calloc(1, len + 4 * XYZ);
  memcpy(b, src, HEAD);
  put_u32le(b + 4 + 48, 1);
  size_t o = HEAD;
  for (int f = 0; f < 4; f++) {
    memcpy(b + o, src + HEAD + (size_t)f * FRAME, FRAME);
    o += FRAME;
    put_u32le(b + o, XYZ - 8);
    put_u32le(b + o + XYZ - 4, XYZ - 8);
    o += XYZ;
  }
  histd_dataset four, three;
  int rc = parse_exact(b, o, 0, &four);
  CHECK(rc == 0, "4-D file: %s", msg);
  CHECK(parse_exact(src, len, 0, &three) == 0, "mda_degrees.dcd: %s", msg);
  if (rc == 0) {
    const histd_box *p = &four.frame[3].box, *q = &three.frame[3].box;
    CHECK(four.n == three.n && memcmp(four.x, three.x, 3 * three.n * sizeof(double)) == 0 &&
              four.frames == 4 && p->kind == q->kind && p->ax == q->ax && p->bx == q->bx &&
              p->by == q->by && p->cx == q->cx && p->cy == q->cy && p->cz == q->cz,
          "4-D file: other points than the 3-D one (n %zu, %zu frames)", four.n, four.frames);
    histd_dataset_free(&four);
  }
  histd_dataset_free(&three);
  BAD(b, o - 1, "frame 4 is cut short", "fourth coordinate record");
  free(src);
  free(b);
}

/* The file front door (mmap) and the format tables. */
static void test_front_door(void) {
  char path[1024];
  snprintf(path, sizeof path, "%s/mdtraj_cosines.dcd", dir);
  histd_format fmt;
  CHECK(histd_format_from_path(path, &fmt) == 0 && fmt == HISTD_FORMAT_DCD, ".dcd");
  CHECK(histd_format_from_content_type("application/x-dcd", &fmt) == 0 &&
            fmt == HISTD_FORMAT_DCD, "application/x-dcd");
  CHECK(histd_format_parse("dcd", &fmt) == 0 && fmt == HISTD_FORMAT_DCD, "dcd");
  histd_dataset ds;
  int rc = histd_parse_file(path, HISTD_FORMAT_DCD, 0, &ds, msg, sizeof msg);
  CHECK(rc == 0 && ds.n == 48 && ds.frames == 3 && ds.box.kind == HISTD_BOX_ORTHO,
        "parse_file: rc %d (%s)", rc, msg);
  if (rc == 0)
    histd_dataset_free(&ds);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_dcd DATA_DIR\n");
    return 2;
  }
  dir = argv[1];
  check_file("mda_degrees", NULL);
  check_file("mdtraj_cosines", NULL);
  check_file("mda_xplor", NULL);
  check_file("mda_matrix", NULL);
  check_file("be_degrees", NULL);
  check_file("m8_cosines", NULL);
  test_errors();
  test_four_dims();
  test_front_door();
  return check_finish("test_dcd");
}
