/*
 * test_parse.c -- the point-set parsers: good inputs of every format read
 * coordinate by coordinate, every error path (the message checked for its
 * key words), limits, non-finite and huge numbers, and the same points in
 * all five formats giving the same dataset.
 *
 * Every input is copied into a heap block of exactly its length, so the
 * sanitizer build catches any read past the end (the parsers must not need
 * a terminating NUL).
 */
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../check.h"
#include "../../src/io/io_internal.h"
#include "histd/io.h"
#include "parse_exact.h"

static char msg[512];

/* Parses buf[0..len) from an exact-size heap copy. */
static int parse_exact(histd_format fmt, const void *buf, size_t len, size_t max,
                       histd_dataset *ds) {
  return parse_exact_msg(fmt, buf, len, max, ds, msg, sizeof msg);
}

/* Expects text to parse into n points equal to xyz (x0 y0 z0 x1 ...). */
static void good_len(int line, histd_format fmt, const void *text, size_t len, size_t n,
                     const double *xyz) {
  histd_dataset ds;
  int rc = parse_exact(fmt, text, len, 0, &ds);
  CHECK(rc == 0, "line %d (%s): rc %d (%s)", line, histd_format_name(fmt), rc, msg);
  if (rc != 0)
    return;
  CHECK(ds.n == n, "line %d: n = %zu, want %zu", line, ds.n, n);
  for (size_t i = 0; i < n && i < ds.n; i++) {
    CHECK(ds.x[i] == xyz[3 * i] && ds.y[i] == xyz[3 * i + 1] && ds.z[i] == xyz[3 * i + 2],
          "line %d: point %zu = (%.17g, %.17g, %.17g), want (%.17g, %.17g, %.17g)", line, i,
          ds.x[i], ds.y[i], ds.z[i], xyz[3 * i], xyz[3 * i + 1], xyz[3 * i + 2]);
  }
  double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  for (size_t i = 0; i < n; i++)
    for (int a = 0; a < 3; a++) {
      lo[a] = fmin(lo[a], xyz[3 * i + a]);
      hi[a] = fmax(hi[a], xyz[3 * i + a]);
    }
  for (int a = 0; a < 3; a++)
    CHECK(ds.min[a] == lo[a] && ds.max[a] == hi[a], "line %d: bounds of axis %d", line, a);
  histd_dataset_free(&ds);
}
#define GOOD(fmt, text, n, ...)                                                   \
  do {                                                                            \
    const double want_[] = {__VA_ARGS__};                                         \
    good_len(__LINE__, fmt, text, strlen(text), n, want_);                        \
  } while (0)

/* Expects an error rc whose message contains every key word given. */
static void bad_len(int line, histd_format fmt, const void *text, size_t len, size_t max,
                    int want_rc, ...) {
  histd_dataset ds;
  memset(&ds, 0xAB, sizeof ds);
  int rc = parse_exact(fmt, text, len, max, &ds);
  CHECK(rc == want_rc, "line %d (%s): rc %d (%s), want %d; message \"%s\"", line,
        histd_format_name(fmt), rc, histd_strerror(rc), want_rc, msg);
  CHECK(ds.n == 0 && ds.x == NULL, "line %d: dataset not left empty on error", line);
  if (rc == 0)
    histd_dataset_free(&ds);
  va_list ap;
  va_start(ap, want_rc);
  const char *k;
  while ((k = va_arg(ap, const char *)) != NULL)
    CHECK(strstr(msg, k) != NULL, "line %d: message \"%s\" lacks \"%s\"", line, msg, k);
  va_end(ap);
}
#define BAD(fmt, text, ...) bad_len(__LINE__, fmt, text, strlen(text), 0, HISTD_EPARSE, __VA_ARGS__, NULL)
#define BAD_MAX(fmt, text, max, ...) \
  bad_len(__LINE__, fmt, text, strlen(text), max, HISTD_ETOOBIG, __VA_ARGS__, NULL)

#define J HISTD_FORMAT_JSON
#define C HISTD_FORMAT_CSV
#define X HISTD_FORMAT_XYZ

static void test_json(void) {
  GOOD(J, "{\"points\":[[1,2,3],[4,5,6]]}", 2, 1, 2, 3, 4, 5, 6);
  GOOD(J, " \n{ \"points\" : [ [ -1.5 , 2e3 , 0.1 ] ] } \n", 1, -1.5, 2000, 0.1);
  GOOD(J, "{\"x\":[1,4],\"y\":[2,5],\"z\":[3,6]}", 2, 1, 2, 3, 4, 5, 6);
  GOOD(J, "{\"z\":[3,6],\"x\":[1,4],\"y\":[2,5]}", 2, 1, 2, 3, 4, 5, 6);
  GOOD(J, "\xEF\xBB\xBF{\"points\":[[0,0,0]]}", 1, 0, 0, 0);
  GOOD(J, "{\"\\u0078\":[1],\"y\":[2],\"z\":[3]}", 1, 1, 2, 3);
  GOOD(J, "{\"points\":[[1E2,-0,0.5e-1]]}", 1, 100, -0.0, 0.05);
  GOOD(J, "{\"points\":[[1e-400,4.9e-324,1.7976931348623157e308]]}", 1, 0, 4.9e-324,
       1.7976931348623157e308);
  GOOD(J, "{\"points\":[[1,2,3]]}\r\n\t ", 1, 1, 2, 3);

  BAD(J, "", "empty");
  BAD(J, " \n\t", "empty");
  BAD(J, "[[1,2,3]]", "expected a JSON object", "found an array");
  BAD(J, "{}", "no points", "\"points\"");
  BAD(J, "{\"points\":[]}", "no points", "empty");
  BAD(J, "{\"x\":[],\"y\":[],\"z\":[]}", "no points");
  BAD(J, "{\"points\":[[1,2,3],[1,2]]}", "points[1]: expected 3 numbers as points[0] has, found 2");
  BAD(J, "{\"points\":[[1,2,3,4,5]]}", "points[0]: expected 3 numbers (x, y, z) or 4 (x, y, z, w), found 5");
  BAD(J, "{\"points\":[[]]}", "points[0]: expected 3 numbers", "found 0");
  BAD(J, "{\"points\":[[1,2,\"a\"]]}", "points[0][2]", "expected a number", "a string");
  BAD(J, "{\"points\":[[1,2,null]]}", "points[0][2]", "expected a number", "null");
  BAD(J, "{\"points\":[[1,true,3]]}", "points[0][1]", "found true");
  BAD(J, "{\"points\":[[1,[2],3]]}", "points[0][1]", "found an array");
  BAD(J, "{\"points\":[1,2,3]}", "points[0]", "expected an array [x, y, z]", "a number");
  BAD(J, "{\"points\":{\"a\":1}}", "points: expected an array", "an object");
  BAD(J, "{\"points\":[[1,2,3],]}", "points[1]", "expected an array");
  BAD(J, "{\"points\":[[1,2,]]}", "points[0][2]", "expected a number", "']'");
  BAD(J, "{\"points\":[[1 2 3]]}", "points[0]", "expected ',' or ']'");
  BAD(J, "{\"points\":[[1,2,3]", "expected ',' or ']'", "end of the input");
  BAD(J, "{\"points\":[[1,2,3]]", "expected ',' or '}'", "end of the input");
  BAD(J, "{\"points\":[[1,2,3]]}x", "unexpected content after the JSON object", "line 1");
  BAD(J, "{\"points\":[[1,2,3]]}{}", "unexpected content");
  BAD(J, "{\"x\":[1],\"y\":[1,2],\"z\":[1]}", "y: has 2 values, but x has 1");
  BAD(J, "{\"x\":[1,2],\"y\":[1,2],\"z\":[1]}", "z: has 1 values, but x has 2");
  BAD(J, "{\"x\":[1],\"y\":[1]}", "missing the key \"z\"");
  BAD(J, "{\"y\":[1],\"z\":[1]}", "missing the key \"x\"");
  BAD(J, "{\"x\":[1],\"y\":[1],\"z\":[1],\"v\":[1]}", "unknown key \"v\"");
  BAD(J, "{\"name\":\"a\",\"points\":[[1,2,3]]}", "unknown key \"name\"");
  BAD(J, "{\"x\":[1],\"x\":[1]}", "duplicate key \"x\"");
  BAD(J, "{\"points\":[[1,2,3]],\"points\":[[1,2,3]]}", "duplicate key \"points\"");
  BAD(J, "{\"points\":[[1,2,3]],\"x\":[1]}", "\"points\" and \"x\" cannot both be given");
  BAD(J, "{\"y\":[1],\"points\":[[1,2,3]]}", "\"points\" and \"y\" cannot both be given");
  BAD(J, "{\"x\":{},\"y\":[1],\"z\":[1]}", "x: expected an array of numbers", "an object");
  BAD(J, "{\"x\":[1,\"2\"],\"y\":[1],\"z\":[1]}", "x[1]", "expected a number");
  BAD(J, "{\"points\":[[NaN,2,3]]}", "points[0][0]", "'NaN' is not a finite number");
  BAD(J, "{\"points\":[[1,-Infinity,3]]}", "points[0][1]", "not a finite number");
  BAD(J, "{\"points\":[[1,2,1e400]]}", "points[0][2]", "1e400 is too large");
  BAD(J, "{\"points\":[[1,2,-1e309]]}", "too large");
  BAD(J, "{\"points\":[[+1,2,3]]}", "points[0][0]", "'+1' is not a valid JSON number");
  BAD(J, "{\"points\":[[01,2,3]]}", "'01' is not a valid JSON number");
  BAD(J, "{\"points\":[[.5,2,3]]}", "'.5' is not a valid JSON number");
  BAD(J, "{\"points\":[[1.,2,3]]}", "'1.' is not a valid JSON number");
  BAD(J, "{\"points\":[[0x10,2,3]]}", "'0x10' is not a valid JSON number");
  BAD(J, "{\"points\":[[1,2,3e]]}", "'3e' is not a valid JSON number");
  BAD(J, "{\"points\":[[1,2,3]]\n,\n\"q\" [1]}", "expected ':' after the key \"q\"", "line 3, column 5");
  BAD(J, "{\"q\":[1]}", "unknown key \"q\"");
  BAD(J, "{\"points\" [[1,2,3]]}", "expected ':'", "line 1, column 11");
  BAD(J, "{points:[[1,2,3]]}", "expected a key in double quotes");
  BAD(J, "{\"points\":[[1,2,3]],}", "expected a key in double quotes", "'}'");
  BAD(J, "{\"poi", "unterminated string");
  BAD(J, "{\"po\\qints\":1}", "invalid escape");
  BAD(J, "{\"po\\u00", "invalid escape");
  BAD(J, "{\"po\nints\":1}", "control character");
  BAD(J, "{\"points\":\n[[1,2,3],\n [4,5,6]\n [7,8,9]]}", "expected ',' or ']' after points[1]",
      "line 4, column 2");
  BAD(J, "{\"points\":[[1,2,3]", "end of the input");
  BAD(J, "{", "expected a key", "end of the input");
  /* A key that cannot be a real one, with bytes a message must not echo. */
  BAD(J, "{\"\x01\":1}", "control character");
  BAD(J, "{\"\xff\xfe\":1}", "unknown key \"??\"");
  BAD(J, "{\"x\\u0000\":[1],\"y\":[1],\"z\":[1]}", "unknown key \"x?u0000\"");
  BAD(J, "{\"\\u00e9\":[1]}", "unknown key");

  BAD_MAX(J, "{\"points\":[[1,2,3],[4,5,6],[7,8,9]]}", 2, "more than 2 points");
  BAD_MAX(J, "{\"x\":[1,2,3],\"y\":[1,2,3],\"z\":[1,2,3]}", 2, "more than 2 points");
  histd_dataset ds;
  const char *ok3 = "{\"points\":[[1,2,3],[4,5,6],[7,8,9]]}";
  CHECK(histd_parse(J, ok3, strlen(ok3), 3, &ds, msg, sizeof msg) == 0, "max 3: %s", msg);
  CHECK(ds.n == 3, "max 3: n");
  histd_dataset_free(&ds);
}

static void test_csv(void) {
  GOOD(C, "1,2,3\n4,5,6\n", 2, 1, 2, 3, 4, 5, 6);
  GOOD(C, "1,2,3\n4,5,6", 2, 1, 2, 3, 4, 5, 6);
  GOOD(C, "1 2 3\n4\t5\t6\n", 2, 1, 2, 3, 4, 5, 6);
  GOOD(C, "  1 ,  2,3  \n\t4,\t5 ,6\t\n", 2, 1, 2, 3, 4, 5, 6);
  GOOD(C, "1,2,3\r\n4,5,6\r\n", 2, 1, 2, 3, 4, 5, 6);
  GOOD(C, "x,y,z\r\n1,2,3\r\n", 1, 1, 2, 3);
  GOOD(C, "\n\n# a comment\n  # another\nX Y Z\n\n1 2 3\n\n# c\n4 5 6\n\n", 2, 1, 2, 3, 4, 5,
       6);
  GOOD(C, "a,b,c\n1,2,3\n", 1, 1, 2, 3);
  GOOD(C, "\"x\",\"y\",\"z\"\n1,2,3\n", 1, 1, 2, 3);
  GOOD(C, "id,element,z,y,x,mass\n7,H,3,2,1,1.008\n8,O,6,5,4,16\n", 2, 1, 2, 3, 4, 5, 6);
  GOOD(C, ".5,5.,+1\n-1E3,1e-2,-0.0\n", 2, 0.5, 5, 1, -1000, 0.01, -0.0);
  GOOD(C, "0.1,0.2,0.3\n", 1, 0.1, 0.2, 0.3);
  GOOD(C, "\xEF\xBB\xBF" "1,2,3", 1, 1, 2, 3);
  GOOD(C, "1e-400,4.9e-324,1.7976931348623157e308\n", 1, 0, 4.9e-324, 1.7976931348623157e308);

  BAD(C, "", "no points", "empty");
  BAD(C, "\n\n  \r\n# only comments\n", "no points");
  BAD(C, "x,y,z\n", "no points", "header");
  BAD(C, "x,y,z\n\n# nothing\n", "no points", "header");
  BAD(C, "1,2,3\n4,5\n", "line 2: expected 3 numbers, found 2");
  BAD(C, "1,2,3\n4,5,6,7\n", "line 2: expected 3 numbers, found 4");
  BAD(C, "1,2,3\n\n4\n", "line 3: expected 3 numbers, found 1");
  BAD(C, "1,2,3\n4,abc,6\n", "line 2: 'abc' is not a number");
  BAD(C, "x,y,z\n1,2,3\nx,y,z\n", "line 3: 'x' is not a number");
  BAD(C, "1,2,3\n0x10,2,3\n", "line 2: '0x10' is not a number");
  BAD(C, "1,2,3\n\"1\",2,3\n", "line 2:", "is not a number");
  BAD(C, "1,2,nan\n", "line 1: 'nan' is not a finite number");
  BAD(C, "1,2,3\n-inf 2 3\n", "line 2: '-inf' is not a finite number");
  BAD(C, "1,2,3\n1,Infinity,3\n", "line 2", "not a finite number");
  BAD(C, "1,2,1e400\n", "line 1: 1e400 is too large for a double");
  BAD(C, "1,,3\n", "line 1: field 2 is empty");
  BAD(C, ",1,2,3\n", "line 1: field 1 is empty");
  BAD(C, "1,2,3,\n", "line 1: field 4 is empty");
  BAD(C, "1,2,3\r\n4,5\r\n", "line 2: expected 3 numbers, found 2");
  BAD(C, "a,b,c,d\n1,2,3,4\n", "line 1: the header has 4 columns", "x, y and z");
  BAD(C, "x,y\n1,2\n", "line 1: the header has 2 columns");
  BAD(C, "id,x,y,z\n1,2,3,4\n2,3,4\n", "line 3: expected 4 fields (as in the header), found 3");
  BAD(C, "id,x,y,z\n1,2,q,4\n", "line 2: 'q' is not a number (column y)");
  BAD(C, "x,,z\n1,2,3\n", "line 1: header field 2 is empty");
  {
    /* The token in a message is cut, and control bytes are replaced. */
    char line[300];
    memset(line, 'a', sizeof line);
    memcpy(line + sizeof line - 6, ",1,2\n", 5);
    line[sizeof line - 1] = '\0';
    char text[400];
    snprintf(text, sizeof text, "1,2,3\n%s", line);
    BAD(C, text, "line 2: 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...' is not a number");
    BAD(C, "1,2,3\n1,\x1b[31m,3\n", "line 2: '?[31m' is not a number");
  }
  BAD_MAX(C, "1,2,3\n4,5,6\n7,8,9\n", 2, "line 3", "more than 2 points");
  histd_dataset ds;
  CHECK(histd_parse(C, "1,2,3\n4,5,6\n", 12, 2, &ds, msg, sizeof msg) == 0, "max 2: %s", msg);
  histd_dataset_free(&ds);

  /* A long number (past the parser's stack buffer) is still correctly rounded. */
  {
    char text[1200];
    size_t o = 0;
    o += (size_t)snprintf(text + o, sizeof text - o, "0.");
    for (int i = 0; i < 600; i++)
      text[o++] = '0';
    o += (size_t)snprintf(text + o, sizeof text - o, "1e601,");
    for (int i = 0; i < 300; i++)
      text[o++] = '0';
    o += (size_t)snprintf(text + o, sizeof text - o, "3,2.50000000000000000000000000000000001\n");
    GOOD(C, text, 1, 1, 3, 2.5);
  }
}

/* Weights: a fourth column without a header, or a header's w / weight. */
static void weights(int line, const char *text, size_t n, const double *w) {
  histd_dataset ds;
  int rc = parse_exact(C, text, strlen(text), 0, &ds);
  CHECK(rc == 0, "line %d: %s", line, msg);
  if (rc != 0)
    return;
  CHECK(ds.n == n && ds.w != NULL, "line %d: %zu points with weights, want %zu", line, ds.n, n);
  for (size_t i = 0; ds.w != NULL && i < n && i < ds.n; i++)
    CHECK(ds.w[i] == w[i], "line %d: w[%zu] = %g, want %g", line, i, ds.w[i], w[i]);
  histd_dataset_free(&ds);
}

static void test_csv_weights(void) {
  weights(__LINE__, "1,2,3,0.5\n4,5,6,-2\n", 2, (const double[]){0.5, -2});
  weights(__LINE__, "x y z w\n1 2 3 7\n", 1, (const double[]){7});
  weights(__LINE__, "id,weight,x,y,z\n1,0.25,1,2,3\n2,4,4,5,6\n", 2, (const double[]){0.25, 4});
  GOOD(C, "id,weight,x,y,z\n1,0.25,1,2,3\n", 1, 1, 2, 3);
  histd_dataset ds; /* three columns: no weights */
  CHECK(parse_exact(C, "1,2,3\n", 6, 0, &ds) == 0 && ds.w == NULL, "no weight column, no w");
  histd_dataset_free(&ds);
  BAD(C, "1,2,3,4\n5,6,7\n", "line 2: expected 4 numbers (x, y, z and a weight");
  BAD(C, "1,2,3\n5,6,7,8\n", "line 2: expected 3 numbers, found 4");
  BAD(C, "x,y,z,w\n1,2,3,nan\n", "line 2: 'nan' is not a finite number (column w)");
}

#define L HISTD_FORMAT_LAMMPS
#define DUMP_HEAD "ITEM: TIMESTEP\n5\nITEM: NUMBER OF ATOMS\n2\n"

/* A dump's box, as the dataset carries it. */
static void dump_box(int line, const char *text, histd_box_kind kind, const double want[6]) {
  histd_dataset ds;
  int rc = parse_exact(L, text, strlen(text), 0, &ds);
  CHECK(rc == 0, "line %d: %s", line, msg);
  if (rc != 0)
    return;
  const histd_box *b = &ds.box;
  CHECK(b->kind == kind, "line %d: box kind %d, want %d", line, (int)b->kind, (int)kind);
  if (kind != HISTD_BOX_NONE) {
    const double got[6] = {b->ax, b->by, b->cz, b->bx, b->cx, b->cy};
    for (int i = 0; i < 6; i++)
      CHECK(got[i] == want[i], "line %d: box value %d is %.17g, want %.17g", line, i, got[i],
            want[i]);
  }
  histd_dataset_free(&ds);
}

static void test_lammps(void) {
  GOOD(L, DUMP_HEAD "ITEM: BOX BOUNDS pp pp pp\n0 10\n0 20\n-5 5\nITEM: ATOMS id type x y z\n"
          "1 1 1 2 3\n2 1 4 5 6\n", 2, 1, 2, 3, 4, 5, 6);
  /* scaled, and columns in another order */
  GOOD(L, DUMP_HEAD "ITEM: BOX BOUNDS pp pp pp\n0 10\n0 20\n-5 5\nITEM: ATOMS zs id ys xs\n"
          "0.5 1 0.25 0.5\n0 2 1 0\n", 2, 5, 5, 0, 0, 20, -5);
  /* unwrapped */
  GOOD(L, DUMP_HEAD "ITEM: BOX BOUNDS pp pp pp\n0 10\n0 20\n0 5\nITEM: ATOMS id xu yu zu\n"
          "1 -3 25 7\n2 0 0 0\n", 2, -3, 25, 7, 0, 0, 0);
  dump_box(__LINE__, DUMP_HEAD "ITEM: BOX BOUNDS pp pp pp\n0 10\n0 20\n-5 5\nITEM: ATOMS x y z\n"
                     "1 2 3\n4 5 6\n", HISTD_BOX_ORTHO, (const double[]){10, 20, 10, 0, 0, 0});
  /* triclinic: bounds are the bounding box; xy 2, xz -1, yz 3:
   * xlo = 0 - min(0, 2, -1, 1) = 1, xhi = 12 - max(0, 2, -1, 1) = 10 -> lx 9;
   * ylo = -1 - min(0, 3) = -1, yhi = 11 - 3 = 8 -> ly 9; lz 7 */
  dump_box(__LINE__, DUMP_HEAD "ITEM: BOX BOUNDS xy xz yz pp pp pp\n0 12 2\n-1 11 -1\n0 7 3\n"
                     "ITEM: ATOMS x y z\n1 2 3\n4 5 6\n",
           HISTD_BOX_TRICLINIC, (const double[]){9, 9, 7, 2, -1, 3});
  dump_box(__LINE__, DUMP_HEAD "ITEM: BOX BOUNDS ff ff ff\n0 10\n0 20\n-5 5\nITEM: ATOMS x y z\n"
                     "1 2 3\n4 5 6\n", HISTD_BOX_NONE, NULL);
  BAD(L, "", "line 1", "ITEM: TIMESTEP");
  BAD(L,
      DUMP_HEAD "ITEM: BOX BOUNDS pp pp pp\n0 1e200\n0 1\n0 1\nITEM: ATOMS x y z\n1 2 3\n"
                "4 5 6\n",
      "frame 1", "x length, 1e+200, is beyond 2^250");
  BAD(L,
      DUMP_HEAD "ITEM: BOX BOUNDS pp pp pp\n0 1\n0 1e-300\n0 1\nITEM: ATOMS x y z\n0 0 0\n"
                "0 0 0\n",
      "frame 1", "is below 2^-250");
  BAD(L, DUMP_HEAD "ITEM: BOX BOUNDS pp ff pp\n0 1\n0 1\n0 1\nITEM: ATOMS x y z\n1 2 3\n4 5 6\n",
      "line 5", "periodic along 2 of its 3 axes");
  BAD(L, DUMP_HEAD "ITEM: BOX BOUNDS pp pp pp\n0 1\n0 x\n0 1\nITEM: ATOMS x y z\n1 2 3\n4 5 6\n",
      "line 7", "the y bounds", "'x' is not a finite number");
  BAD(L, DUMP_HEAD "ITEM: BOX BOUNDS pp pp pp\n0 1\n0 1\n0 1\nITEM: ATOMS id type q\n1 1 0\n2 1 0\n",
      "line 9", "no complete set of x y z");
  BAD(L, DUMP_HEAD "ITEM: BOX BOUNDS pp pp pp\n0 1\n0 1\n0 1\nITEM: ATOMS x y z\n1 2 3\n",
      "line 11", "expected atom 2 of 2");
  BAD(L, DUMP_HEAD "ITEM: BOX BOUNDS pp pp pp\n0 1\n0 1\n0 1\nITEM: ATOMS x y z\n1 2 3\n4 5\n",
      "line 11", "expected 3 columns");
  BAD(L, DUMP_HEAD "ITEM: BOX BOUNDS pp pp pp\n0 1\n0 1\n0 1\nITEM: ATOMS x y z\n1 2 3\n4 5 6\n"
         DUMP_HEAD, "line 16", "\"ITEM: BOX BOUNDS\" was expected");
  BAD(L, DUMP_HEAD "ITEM: BOX BOUNDS pp pp pp\n0 1\n0 1\n0 1\nITEM: ATOMS x y z\n1 2 3\n4 5 6\n"
         "7 8 9\n", "line 12", "unexpected content after the atoms of frame 1");
  BAD_MAX(L, DUMP_HEAD "ITEM: BOX BOUNDS pp pp pp\n0 1\n0 1\n0 1\nITEM: ATOMS x y z\n1 2 3\n4 5 6\n",
          1, "2 atoms is more than 1 points");
}

/* The atoms' descriptions: a dump's type, mol and element columns with the
 * atoms sorted by id in every frame; XYZ elements. */
static void test_topology(void) {
  const char *two =
      "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n3\nITEM: BOX BOUNDS pp pp pp\n0 9\n0 9\n0 9\n"
      "ITEM: ATOMS id mol type element x y z\n"
      "7 2 1 O 7 0 0\n3 1 2 H 3 0 0\n5 1 1 O 5 0 0\n"
      "ITEM: TIMESTEP\n1\nITEM: NUMBER OF ATOMS\n3\nITEM: BOX BOUNDS pp pp pp\n0 9\n0 9\n0 9\n"
      "ITEM: ATOMS id x y z mol type element\n"
      "5 1.5 1 1 1 1 O\n7 1.7 1 1 2 1 O\n3 1.3 1 1 1 2 H\n";
  histd_dataset ds;
  int rc = parse_exact(L, two, strlen(two), 0, &ds);
  CHECK(rc == 0, "two frames with a topology: %s", msg);
  if (rc == 0) {
    const double want_x[6] = {3, 5, 7, 1.3, 1.5, 1.7}; /* by id in each frame */
    for (int i = 0; i < 6; i++)
      CHECK(ds.x[i] == want_x[i], "point %d: x %g, want %g (sorted by id)", i, ds.x[i],
            want_x[i]);
    CHECK(ds.top != NULL && ds.top->atoms == 3 && ds.top->type && ds.top->mol &&
              ds.top->element && !ds.top->name,
          "the dump's topology: type, mol, element");
    if (ds.top != NULL && ds.top->type && ds.top->mol && ds.top->element) {
      CHECK(ds.top->type[0] == 2 && ds.top->type[1] == 1 && ds.top->type[2] == 1 &&
                ds.top->mol[0] == 1 && ds.top->mol[1] == 1 && ds.top->mol[2] == 2,
            "types and mols by id");
      CHECK(strcmp(ds.top->element, "H") == 0 && strcmp(ds.top->element + HISTD_ATOM_STR, "O") == 0,
            "elements by id");
    }
    histd_dataset_free(&ds);
  }
  char changed[1024];
  snprintf(changed, sizeof changed, "%s", two);
  char *p = strstr(changed, "3 1.3 1 1 1 2 H");
  p[12] = '3'; /* atom 3's type becomes 3 in frame 2 */
  BAD(L, changed, "frame 2", "same atoms");
  BAD(L, DUMP_HEAD "ITEM: BOX BOUNDS pp pp pp\n0 1\n0 1\n0 1\nITEM: ATOMS id type x y z\n"
                   "4 1 0 0 0\n4 1 1 1 1\n", "atom id 4 twice");
  BAD(L, DUMP_HEAD "ITEM: BOX BOUNDS pp pp pp\n0 1\n0 1\n0 1\nITEM: ATOMS id type x y z\n"
                   "1 a 0 0 0\n2 1 1 1 1\n", "line 10", "type 'a' is not a whole number");
  const char *xyz = "2\n\nO 0 0 0\nH 1 0 0\n2\n\nO 0 0 1\nH 1 0 1\n";
  rc = parse_exact(X, xyz, strlen(xyz), 0, &ds);
  CHECK(rc == 0 && ds.top != NULL && ds.top->element != NULL &&
            strcmp(ds.top->element + HISTD_ATOM_STR, "H") == 0,
        "XYZ elements make a topology");
  if (rc == 0)
    histd_dataset_free(&ds);
  const char *swapped = "2\n\nO 0 0 0\nH 1 0 0\n2\n\nH 0 0 1\nO 1 0 1\n";
  rc = parse_exact(X, swapped, strlen(swapped), 0, &ds);
  CHECK(rc == 0 && ds.top == NULL, "XYZ frames with other elements keep no topology");
  if (rc == 0)
    histd_dataset_free(&ds);
}

/* An explicit molecule id column, for exclusions: CSV's "mol", extended
 * XYZ's mol:I:1. */
static void test_mol_columns(void) {
  const char *csv = "x,y,mol,z\n0,0,7,0\n1,0,7,0\n5,0,9,0\n";
  histd_dataset ds;
  int rc = parse_exact(C, csv, strlen(csv), 0, &ds);
  CHECK(rc == 0 && ds.top != NULL && ds.top->mol != NULL && ds.top->mol[0] == 7 &&
            ds.top->mol[2] == 9 && ds.x[2] == 5 && ds.z[2] == 0,
        "CSV's mol column: %s", msg);
  if (rc == 0)
    histd_dataset_free(&ds);
  BAD(C, "x,y,z,mol\n0,0,0,1.5\n", "line 2", "molecule id '1.5' is not a whole number");
  const char *xyz = "2\nProperties=species:S:1:pos:R:3:mol:I:1\nO 0 0 0 4\nH 1 0 0 4\n"
                    "2\nProperties=species:S:1:pos:R:3:mol:I:1\nO 0 0 1 4\nH 1 0 1 4\n";
  rc = parse_exact(X, xyz, strlen(xyz), 0, &ds);
  CHECK(rc == 0 && ds.top != NULL && ds.top->mol != NULL && ds.top->mol[1] == 4 &&
            ds.top->element != NULL,
        "XYZ's mol:I:1 column: %s", msg);
  if (rc == 0)
    histd_dataset_free(&ds);
  BAD(X, "1\nProperties=species:S:1:pos:R:3:mol:I:1\nO 0 0 0 x\n", "line 3",
      "molecule id 'x' is not a whole number");
  /* names, residue names and numbers (what the Python client writes), each
   * kept when every frame agrees; a name past 7 bytes is cut, as GRO's */
  const char *named = "2\nProperties=species:S:1:name:S:1:resname:S:1:resid:I:1:pos:R:3\n"
                      "O OW SOL 7 0 0 0\nH HW1_LONGER SOL 7 1 0 0\n"
                      "2\nProperties=species:S:1:name:S:1:resname:S:1:resid:I:1:pos:R:3\n"
                      "O OW SOL 7 0 0 1\nH HW1_LONGER WAT 7 1 0 1\n";
  rc = parse_exact(X, named, strlen(named), 0, &ds);
  CHECK(rc == 0 && ds.top != NULL && ds.top->name != NULL && ds.top->resid != NULL &&
            ds.top->element != NULL && ds.top->resname == NULL && ds.top->mol == NULL &&
            strcmp(ds.top->name, "OW") == 0 &&
            strcmp(ds.top->name + HISTD_ATOM_STR, "HW1_LON") == 0 && ds.top->resid[1] == 7 &&
            ds.z[3] == 1,
        "XYZ's name, resname and resid columns (resname differs in frame 2: not kept): %s",
        msg);
  if (rc == 0)
    histd_dataset_free(&ds);
  BAD(X, "1\nProperties=species:S:1:pos:R:3:resid:I:1\nO 0 0 0 2.5\n", "line 3",
      "residue number '2.5' is not a whole number");
}

static void test_xyz(void) {
  GOOD(X, "3\nwater\nO 0.0 0.0 0.117\nH 0.0 0.757 -0.470\nH 0.0 -0.757 -0.470\n", 3, 0, 0,
       0.117, 0, 0.757, -0.470, 0, -0.757, -0.470);
  GOOD(X, "  2  \r\n\r\nC\t1\t2\t3\r\n8 4 5 6\r\n\r\n\n", 2, 1, 2, 3, 4, 5, 6);
  GOOD(X, "1\n\nH 1 2 3", 1, 1, 2, 3);
  GOOD(X, "1\nProperties=species:S:1:pos:R:3:vel:R:3\nH 1 2 3 0.1 0.2 0.3\n", 1, 1, 2, 3);
  GOOD(X, "1\ncomment with 5 numbers 1 2 3 4\nHe 1e2 -2.5 .5\n", 1, 100, -2.5, 0.5);

  BAD(X, "", "empty");
  BAD(X, "\n \n", "empty");
  BAD(X, "abc\ncomment\nH 1 2 3\n", "line 1: expected the atom count", "'abc'");
  BAD(X, "3 atoms\ncomment\nH 1 2 3\n", "line 1: expected the atom count");
  BAD(X, "-1\n\n", "line 1: expected the atom count");
  BAD(X, "99999999999999999999999999\n\n", "line 1: expected the atom count");
  BAD(X, "0\ncomment\n", "line 1: the atom count is 0", "no points");
  BAD(X, "2", "line 2: missing the comment line");
  BAD(X, "3\ncomment\nH 1 2 3\nH 4 5 6\n", "announces 3 atoms", "ends after 2");
  BAD(X, "1000000000\ncomment\nH 1 2 3\n", "announces 1000000000 atoms", "ends after 1");
  BAD(X, "2\ncomment\nH 1 2 3\n\nH 4 5 6\n", "line 4", "found a blank line");
  BAD(X, "2\ncomment\nH 1 2 3\nH 4 5\n", "line 4: expected an element and 3 numbers, found 2 numbers");
  BAD(X, "1\ncomment\nH\n", "line 3: expected an element and 3 numbers, found 0 numbers");
  BAD(X, "1\ncomment\n1 2 3\n", "line 3", "found 2 numbers");
  BAD(X, "1\ncomment\nH 1 q 3\n", "line 3: y: 'q' is not a number");
  BAD(X, "1\ncomment\nH 1 2 nan\n", "line 3: z: 'nan' is not a finite number");
  BAD(X, "1\ncomment\nH 1e999 2 3\n", "line 3: x:", "not a finite number");
  BAD(X, "1\nc\nH 1 2 3\nH 4 5 6\n", "line 4: expected the atom count of frame 2",
      "unexpected content after the 1 atoms of frame 1");
  BAD_MAX(X, "3\nc\nH 1 2 3\nH 1 2 3\nH 1 2 3\n", 2, "line 1", "more than 2 points");
}

/* Parses text and checks its frames: the point counts, the boxes and the
 * weights (w NULL: none), beside the coordinates want (x0 y0 z0 ...). */
static void frames_ok(int line, histd_format fmt, const char *text, size_t frames,
                      const size_t *counts, const histd_box *boxes, const double *w,
                      const double *want) {
  histd_dataset ds;
  int rc = parse_exact(fmt, text, strlen(text), 0, &ds);
  CHECK(rc == 0, "line %d: %s", line, msg);
  if (rc != 0)
    return;
  CHECK(histd_dataset_frames(&ds) == frames, "line %d: %zu frames, want %zu", line,
        histd_dataset_frames(&ds), frames);
  size_t n = 0;
  for (size_t f = 0; f < frames && histd_dataset_frames(&ds) == frames; f++) {
    histd_dataset v;
    histd_dataset_frame(&ds, f, &v);
    CHECK(v.n == counts[f], "line %d: frame %zu has %zu points, want %zu", line, f, v.n,
          counts[f]);
    const histd_box *b = &v.box, *e = &boxes[f];
    CHECK(b->kind == e->kind && b->ax == e->ax && b->bx == e->bx && b->by == e->by &&
              b->cx == e->cx && b->cy == e->cy && b->cz == e->cz,
          "line %d: frame %zu's box is %d %g %g %g %g %g %g", line, f, (int)b->kind, b->ax,
          b->bx, b->by, b->cx, b->cy, b->cz);
    n += counts[f];
  }
  CHECK(ds.n == n, "line %d: %zu points, want %zu", line, ds.n, n);
  CHECK((ds.w != NULL) == (w != NULL), "line %d: weights %s", line, ds.w ? "present" : "absent");
  for (size_t i = 0; i < n && i < ds.n; i++) {
    CHECK(ds.x[i] == want[3 * i] && ds.y[i] == want[3 * i + 1] && ds.z[i] == want[3 * i + 2],
          "line %d: point %zu is (%g, %g, %g)", line, i, ds.x[i], ds.y[i], ds.z[i]);
    if (w != NULL && ds.w != NULL)
      CHECK(ds.w[i] == w[i], "line %d: weight %zu is %g, want %g", line, i, ds.w[i], w[i]);
  }
  histd_dataset_free(&ds);
}

#define OPEN_BOX {HISTD_BOX_NONE, 0, 0, 0, 0, 0, 0}
#define FRAMES(fmt, text, frames, counts, boxes, w, ...)                                  \
  frames_ok(__LINE__, fmt, text, frames, (const size_t[])counts, (const histd_box[])boxes, \
            w, (const double[]){__VA_ARGS__})
#define LIST(...) {__VA_ARGS__}

static void test_weights_frames(void) {
  /* JSON: a fourth number, or a "w" array beside either shape */
  FRAMES(J, "{\"points\":[[1,2,3,0.5],[4,5,6,-2]]}", 1, LIST(2), LIST(OPEN_BOX),
         ((const double[]){0.5, -2}), 1, 2, 3, 4, 5, 6);
  FRAMES(J, "{\"w\":[0.5,-2],\"points\":[[1,2,3],[4,5,6]]}", 1, LIST(2), LIST(OPEN_BOX),
         ((const double[]){0.5, -2}), 1, 2, 3, 4, 5, 6);
  FRAMES(J, "{\"x\":[1,4],\"y\":[2,5],\"z\":[3,6],\"w\":[0.5,-2]}", 1, LIST(2), LIST(OPEN_BOX),
         ((const double[]){0.5, -2}), 1, 2, 3, 4, 5, 6);
  BAD(J, "{\"points\":[[1,2,3,4],[1,2,3]]}", "points[1]: expected 4 numbers (x, y, z, w)");
  BAD(J, "{\"points\":[[1,2,3]],\"w\":[1,2]}", "w: has 2 values, but there are 1 points");
  BAD(J, "{\"points\":[[1,2,3,4]],\"w\":[1]}", "the weights are given twice");
  BAD(J, "{\"w\":[1],\"w\":[1],\"points\":[[1,2,3]]}", "duplicate key \"w\"");
  BAD(J, "{\"points\":[[1,2,3]],\"w\":[true]}", "w[0]", "expected a number");
  BAD(J, "{\"points\":[[1,2,3,NaN]]}", "points[0][3]");

  /* XYZ: a fifth field is a weight; extended XYZ; several frames */
  FRAMES(X, "2\nc\nH 1 2 3 0.5\nO 4 5 6 2\n", 1, LIST(2), LIST(OPEN_BOX),
         ((const double[]){0.5, 2}), 1, 2, 3, 4, 5, 6);
  FRAMES(X, "2\nLattice=\"10 0 0 0 12 0 0 0 9\" Properties=species:S:1:pos:R:3:w:R:1 "
            "pbc=\"T T T\"\nH 1 2 3 0.5\nO 4 5 6 2\n",
         1, LIST(2), LIST({HISTD_BOX_ORTHO, 10, 0, 12, 0, 0, 9}), ((const double[]){0.5, 2}),
         1, 2, 3, 4, 5, 6);
  FRAMES(X, "1\nlattice=\"10 0 0 0 10 0 0 0 10\" time=\"1 2\"\nH 1 2 3\n\n"
            "2\nLattice=\"9 0 0 2 8 0 -1 0.5 7\" Properties=species:S:1:mass:R:1:pos:R:3\n"
            "H 1 4 5 6\nO 16 7 8 9\n"
            "1\nLattice=\"9 0 0 0 9 0 0 0 9\" pbc=\"F F F\"\nC 0 0 0\n",
         3, LIST(1, 2, 1),
         LIST({HISTD_BOX_ORTHO, 10, 0, 10, 0, 0, 10}, {HISTD_BOX_TRICLINIC, 9, 2, 8, -1, 0.5, 7},
              OPEN_BOX),
         NULL, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 0, 0);
  FRAMES(X, "1\nframe 1\nH 1 2 3 1\n1\nframe 2\nH 4 5 6 3\n", 2, LIST(1, 1),
         LIST(OPEN_BOX, OPEN_BOX), ((const double[]){1, 3}), 1, 2, 3, 4, 5, 6);
  BAD(X, "1\nLattice=\"1 0 0 0 1 0 0 0\"\nH 1 2 3\n", "line 2: Lattice needs 9 numbers", "found 8");
  BAD(X, "1\nLattice=\"1 0 0 0 1 0 0 0 1\nH 1 2 3\n", "line 2: Lattice=\" has no closing quote");
  BAD(X, "1\nLattice=\"1 0 0 0 1 0 0 0 x\"\nH 1 2 3\n", "line 2: Lattice: 'x' is not a finite");
  BAD(X, "1\nLattice=\"1 1 0 0 1 0 0 0 1\"\nH 1 2 3\n", "line 2", "lower-triangular", "ay 1");
  BAD(X, "1\nLattice=\"1 0 0 0 -1 0 0 0 1\"\nH 1 2 3\n", "line 2", "must be > 0");
  /* boxes outside histd.h's range (issue #28): refused, not a grid of no cells */
  BAD(X, "1\nLattice=\"1e-300 0 0 0 1e-300 0 0 0 1e-300\"\nH 1 2 3\n", "frame 1",
      "is below 2^-250");
  BAD(X,
      "1\nLattice=\"1 0 0 0 1 0 0 0 1\"\nH 1 2 3\n1\nLattice=\"1e200 0 0 0 1 0 0 0 1\"\n"
      "H 1 2 3\n",
      "frame 2", "x length, 1e+200, is beyond 2^250");
  BAD(X, "1\nLattice=\"1 0 0 1e13 1 0 0 0 1\"\nH 1 2 3\n", "frame 1", "sliver");
  BAD(X, "1\nLattice=\"1 0 0 0 1 0 0 0 1\" pbc=\"T F T\"\nH 1 2 3\n", "line 2",
      "periodic along 2 of the 3 axes");
  BAD(X, "1\nLattice=\"1 0 0 0 1 0 0 0 1\" pbc=\"T T\"\nH 1 2 3\n", "line 2", "three flags");
  BAD(X, "1\nProperties=species:S:1:vel:R:3\nH 1 2 3\n", "line 2", "no pos:R:3");
  BAD(X, "1\nProperties=species:S\nH 1 2 3\n", "line 2", "name:type:count");
  BAD(X, "1\nProperties=species:Q:1:pos:R:3\nH 1 2 3\n", "line 2", "'species:Q:1'");
  BAD(X, "1\nProperties=pos:I:3\nH 1 2 3\n", "line 2", "pos must be pos:R:3");
  BAD(X, "1\nProperties=species:S:1:pos:R:3:w:S:1\nH 1 2 3 a\n", "line 2",
      "a weight column must be of type R and count 1");
  BAD(X, "1\nProperties=species:S:1:pos:R:3:w:R:1\nH 1 2 3\n", "line 3",
      "expected 5 fields (as Properties names), found 4");
  BAD(X, "2\nc\nH 1 2 3 1\nH 1 2 3\n", "line 4", "expected element x y z and a weight");
  BAD(X, "1\nc\nH 1 2 3 abc\n", "line 3: the weight: 'abc' is not a number");
  BAD(X, "1\nc\nH 1 2 3 1\n1\nc\nH 1 2 3\n", "line 6: frame 2 has none, frame 1 has weights");
  BAD(X, "1\nc\nH 1 2 3\n1\nc\nH 1 2 3 1\n", "line 6: frame 2 has weights, frame 1 has none");
  BAD(X, "1\nc\nH 1 2 3\n0\nc\n", "line 4: the atom count is 0");
  BAD(X, "1\nc\nH 1 2 3\n3\nc\nH 1 2 3\n", "line 4 announces 3 atoms", "ends after 1");
  BAD(X, "1\nc\nH 1 2 3\n3", "line 5: missing the comment line");
  BAD_MAX(X, "1\nc\nH 1 2 3\n2\nc\nH 1 2 3\nH 1 2 3\n", 2, "line 4", "more than 2 points");

  /* LAMMPS: several frames, each with its box; a weight column */
  FRAMES(L, "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n2\nITEM: BOX BOUNDS pp pp pp\n0 10\n0 20\n"
            "-5 5\nITEM: ATOMS id x y z w\n1 1 2 3 0.5\n2 4 5 6 1.5\n\n"
            "ITEM: TIMESTEP\n100\nITEM: NUMBER OF ATOMS\n1\n"
            "ITEM: BOX BOUNDS xy xz yz pp pp pp\n0 12 2\n-1 11 -1\n0 7 3\n"
            "ITEM: ATOMS w xs ys zs id\n2 0 0 0 1\n",
         2, LIST(2, 1),
         LIST({HISTD_BOX_ORTHO, 10, 0, 20, 0, 0, 10}, {HISTD_BOX_TRICLINIC, 9, 2, 9, -1, 3, 7}),
         ((const double[]){0.5, 1.5, 2}), 1, 2, 3, 4, 5, 6, 1, -1, 0);
#define FRAME2 "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n1\nITEM: BOX BOUNDS pp pp pp\n0 1\n0 1\n0 1\n"
  BAD(L, FRAME2 "ITEM: ATOMS x y z w\n1 2 3 1\n" FRAME2 "ITEM: ATOMS x y z\n1 2 3\n",
      "line 19: frame 2 has no weight column and frame 1 has one");
  BAD(L, FRAME2 "ITEM: ATOMS x y z\n1 2 3\n" FRAME2 "ITEM: ATOMS x y z w\n1 2 3 1\n",
      "line 19: frame 2 has a weight column and frame 1 has none");
  BAD(L, FRAME2 "ITEM: ATOMS x y z\n1 2 3\nITEM: TIMESTEP\n1\nITEM: NUMBER OF ATOMS\n1\n"
         "ITEM: BOX BOUNDS pp pp pp\n0 1\n0 q\n", "line 17: the y bounds");
  BAD(L, FRAME2 "ITEM: ATOMS x y z\n1 2 3\n" FRAME2 "ITEM: ATOMS x y z\n", "line 20",
      "expected atom 1 of 1");
  BAD(L, FRAME2 "ITEM: ATOMS x y z\n1 2 3\nITEM: TIMESTEP\n", "line 12", "the timestep");
  BAD_MAX(L, FRAME2 "ITEM: ATOMS x y z\n1 2 3\n" FRAME2 "ITEM: ATOMS x y z\n1 2 3\n", 1,
          "line 14", "more than 1 points");
}

static void put_f64(unsigned char *p, double v) {
  uint64_t u;
  memcpy(&u, &v, 8);
  for (int b = 0; b < 8; b++)
    p[b] = (unsigned char)(u >> (8 * b)); /* little-endian whatever the host */
}

static void put_f32(unsigned char *p, float v) {
  uint32_t u;
  memcpy(&u, &v, 4);
  for (int b = 0; b < 4; b++)
    p[b] = (unsigned char)(u >> (8 * b));
}

static void test_raw(void) {
  const double pts[] = {1, 2, 3, -4.5, 0.1, 1e300, 7, 8, 9};
  unsigned char b64[1 + 72], b32[1 + 36];
  for (int i = 0; i < 9; i++) {
    put_f64(b64 + 1 + 8 * i, pts[i]); /* odd offset: unaligned on purpose */
    put_f32(b32 + 1 + 4 * i, (float)pts[i]);
  }
  good_len(__LINE__, HISTD_FORMAT_F64, b64 + 1, 72, 3, pts);
  /* float32: the same values after rounding to float (1e300 becomes inf). */
  bad_len(__LINE__, HISTD_FORMAT_F32, b32 + 1, 36, 0, HISTD_EPARSE, "point 2", "z",
          "not a finite number", NULL);
  put_f32(b32 + 1 + 4 * 5, 6.0f);
  const double p32[] = {1, 2, 3, -4.5, (float)0.1, 6, 7, 8, 9};
  good_len(__LINE__, HISTD_FORMAT_F32, b32 + 1, 36, 3, p32);

  bad_len(__LINE__, HISTD_FORMAT_F64, b64, 0, 0, HISTD_EPARSE, "empty", NULL);
  bad_len(__LINE__, HISTD_FORMAT_F32, b32, 0, 0, HISTD_EPARSE, "empty", NULL);
  bad_len(__LINE__, HISTD_FORMAT_F64, b64 + 1, 71, 0, HISTD_EPARSE, "f64 input: 71 bytes",
          "not a multiple of 24", "cut short after 23 bytes", NULL);
  bad_len(__LINE__, HISTD_FORMAT_F64, b64 + 1, 12, 0, HISTD_EPARSE, "not a multiple of 24", NULL);
  bad_len(__LINE__, HISTD_FORMAT_F32, b32 + 1, 37 - 1 - 4, 0, HISTD_EPARSE,
          "f32 input: 32 bytes", "not a multiple of 12", NULL);
  bad_len(__LINE__, HISTD_FORMAT_F64, b64 + 1, 72, 2, HISTD_ETOOBIG, "3 points", "more than 2",
          NULL);
  unsigned char nan64[24];
  put_f64(nan64, 1);
  put_f64(nan64 + 8, NAN);
  put_f64(nan64 + 16, 3);
  bad_len(__LINE__, HISTD_FORMAT_F64, nan64, 24, 0, HISTD_EPARSE, "point 1", "y",
          "not a finite number", NULL);
  put_f64(nan64 + 8, -INFINITY);
  bad_len(__LINE__, HISTD_FORMAT_F64, nan64, 24, 0, HISTD_EPARSE, "not a finite number", NULL);
}

/* The same points written in all five formats parse to the same dataset. */
static void test_equivalence(void) {
  enum { N = 150 };
  double pts[3 * N];
  uint64_t s = 12345;
  for (int i = 0; i < 3 * N; i++) /* exact in float32: 24-bit significands */
    pts[i] = (double)(int32_t)(test_rand_u64(&s) % 2000001 - 1000000) / 64.0;
  static char json[N * 100], csv[N * 100], xyz[N * 100], xyzsoa[N * 100];
  static unsigned char f64[N * 24], f32[N * 12];
  size_t jo = 0, co = 0, xo = 0, so = 0;
  jo += (size_t)snprintf(json + jo, sizeof json - jo, "{\"points\": [");
  co += (size_t)snprintf(csv + co, sizeof csv - co, "x,y,z\n");
  xo += (size_t)snprintf(xyz + xo, sizeof xyz - xo, "%d\nequivalence\n", N);
  for (int i = 0; i < N; i++) {
    const double *p = pts + 3 * i;
    jo += (size_t)snprintf(json + jo, sizeof json - jo, "%s[%.17g, %.17g, %.17g]", i ? ", " : "",
                           p[0], p[1], p[2]);
    co += (size_t)snprintf(csv + co, sizeof csv - co, "%.17g,%.17g,%.17g\n", p[0], p[1], p[2]);
    xo += (size_t)snprintf(xyz + xo, sizeof xyz - xo, "C %.17g %.17g %.17g\n", p[0], p[1], p[2]);
    for (int a = 0; a < 3; a++) {
      put_f64(f64 + 24 * i + 8 * a, p[a]);
      put_f32(f32 + 12 * i + 4 * a, (float)p[a]);
    }
  }
  snprintf(json + jo, sizeof json - jo, "]}");
  for (int a = 0; a < 3; a++) {
    so += (size_t)snprintf(xyzsoa + so, sizeof xyzsoa - so, "%s\"%c\": [", a ? ", " : "{",
                           'x' + a);
    for (int i = 0; i < N; i++)
      so += (size_t)snprintf(xyzsoa + so, sizeof xyzsoa - so, "%s%.17g", i ? "," : "",
                             pts[3 * i + a]);
    so += (size_t)snprintf(xyzsoa + so, sizeof xyzsoa - so, "]");
  }
  snprintf(xyzsoa + so, sizeof xyzsoa - so, "}");
  good_len(__LINE__, J, json, strlen(json), N, pts);
  good_len(__LINE__, J, xyzsoa, strlen(xyzsoa), N, pts);
  good_len(__LINE__, C, csv, strlen(csv), N, pts);
  good_len(__LINE__, X, xyz, strlen(xyz), N, pts);
  good_len(__LINE__, HISTD_FORMAT_F64, f64, sizeof f64, N, pts);
  good_len(__LINE__, HISTD_FORMAT_F32, f32, sizeof f32, N, pts);
}

static void test_formats(void) {
  histd_format f;
  static const char *const names[] = {"json", "csv", "xyz", "f64", "f32", "lammps", "dcd", "xtc",
                                      "trr", "netcdf", "gro", "pdb", "sky-csv", "sky-json",
                                      "fits"};
  CHECK(sizeof names / sizeof names[0] == HISTD_FORMAT_COUNT, "every format named");
  for (int i = 0; i < HISTD_FORMAT_COUNT; i++) {
    CHECK(strcmp(histd_format_name((histd_format)i), names[i]) == 0, "name %d", i);
    CHECK(histd_format_parse(names[i], &f) == 0 && f == (histd_format)i, "parse %s", names[i]);
  }
  CHECK(strcmp(histd_format_name((histd_format)99), "?") == 0, "name out of range");
  CHECK(histd_format_parse("bin", &f) == 0 && f == HISTD_FORMAT_F64, "bin");
  CHECK(histd_format_parse("NC", &f) == 0 && f == HISTD_FORMAT_NETCDF, "nc");
  CHECK(histd_format_parse("JSON", &f) == 0 && f == HISTD_FORMAT_JSON, "JSON");
  CHECK(histd_format_parse("xml", &f) == HISTD_EINVAL, "xml");
  CHECK(histd_format_parse(NULL, &f) == HISTD_EINVAL, "NULL name");

  static const struct {
    const char *path;
    int f; /* -1: rejected */
  } paths[] = {{"a.json", HISTD_FORMAT_JSON}, {"dir.x/b.CSV", HISTD_FORMAT_CSV},
               {"c.tsv", HISTD_FORMAT_CSV},   {"c.txt", HISTD_FORMAT_CSV},
               {"m.xyz", HISTD_FORMAT_XYZ},   {"t.extxyz", HISTD_FORMAT_XYZ}, {"p.f64", HISTD_FORMAT_F64},
               {"p.bin", HISTD_FORMAT_F64},   {"p.f32", HISTD_FORMAT_F32},
               {"run.dcd", HISTD_FORMAT_DCD}, {"d/RUN.DCD", HISTD_FORMAT_DCD},
               {"t.lammpstrj", HISTD_FORMAT_LAMMPS},
               {"run/traj.XTC", HISTD_FORMAT_XTC}, {"md.trr", HISTD_FORMAT_TRR},
               {"t.nc", HISTD_FORMAT_NETCDF}, {"t.NCDF", HISTD_FORMAT_NETCDF},
               {"gal.fits", HISTD_FORMAT_FITS}, {"GAL.FIT", HISTD_FORMAT_FITS},
               {"g.fts", HISTD_FORMAT_FITS},
               {"noext", -1},                 {".json", -1},
               {"a.json/b", -1},              {"a.dat", -1},
               {"a.", -1}};
  for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
    int rc = histd_format_from_path(paths[i].path, &f);
    if (paths[i].f < 0)
      CHECK(rc == HISTD_EINVAL, "path %s should be rejected", paths[i].path);
    else
      CHECK(rc == 0 && f == (histd_format)paths[i].f, "path %s", paths[i].path);
  }

  static const struct {
    const char *ct;
    int f;
  } cts[] = {{"application/json", HISTD_FORMAT_JSON},
             {"application/json; charset=utf-8", HISTD_FORMAT_JSON},
             {"Application/JSON ;charset=UTF-8", HISTD_FORMAT_JSON},
             {"application/vnd.histd.points+json", HISTD_FORMAT_JSON},
             {"text/csv", HISTD_FORMAT_CSV},
             {" text/csv ; header=present", HISTD_FORMAT_CSV},
             {"text/plain", HISTD_FORMAT_CSV},
             {"text/tab-separated-values", HISTD_FORMAT_CSV},
             {"chemical/x-xyz", HISTD_FORMAT_XYZ},
             {"application/octet-stream", HISTD_FORMAT_F64},
             {"application/x-float64", HISTD_FORMAT_F64},
             {"application/x-float32", HISTD_FORMAT_F32},
             {"text/x-lammps-dump", HISTD_FORMAT_LAMMPS},
             {"application/x-dcd", HISTD_FORMAT_DCD},
             {"Application/X-DCD; charset=binary", HISTD_FORMAT_DCD},
             {"application/x-xtc", HISTD_FORMAT_XTC},
             {"Application/X-TRR", HISTD_FORMAT_TRR},
             {"application/x-netcdf", HISTD_FORMAT_NETCDF},
             {"application/fits", HISTD_FORMAT_FITS},
             {"image/fits", HISTD_FORMAT_FITS},
             {"application/xml", -1},
             {"+json", -1},
             {"", -1},
             {"text/csvx", -1},
             {"application/jso", -1}};
  for (size_t i = 0; i < sizeof cts / sizeof cts[0]; i++) {
    int rc = histd_format_from_content_type(cts[i].ct, &f);
    if (cts[i].f < 0)
      CHECK(rc == HISTD_EINVAL, "content type '%s' should be rejected", cts[i].ct);
    else
      CHECK(rc == 0 && f == (histd_format)cts[i].f, "content type '%s'", cts[i].ct);
  }
  CHECK(histd_format_from_content_type(NULL, &f) == HISTD_EINVAL, "NULL content type");

  histd_dataset ds;
  CHECK(histd_parse((histd_format)42, "1", 1, 0, &ds, msg, sizeof msg) == HISTD_EINVAL,
        "unknown format");
  CHECK_STR_CONTAINS(msg, "unknown input format");
  CHECK(histd_parse(C, NULL, 5, 0, &ds, msg, sizeof msg) == HISTD_EINVAL, "NULL buffer");
  CHECK(histd_parse(C, NULL, 0, 0, &ds, msg, sizeof msg) == HISTD_EPARSE, "NULL empty");
}

static void test_files(void) {
  char dir[] = "/tmp/histd-test-parse-XXXXXX";
  CHECK(mkdtemp(dir) != NULL, "mkdtemp");
  char path[256];
  snprintf(path, sizeof path, "%s/p.csv", dir);
  FILE *f = fopen(path, "w");
  fputs("x y z\n1 2 3\n4 5 6\n", f);
  fclose(f);
  histd_dataset ds;
  int rc = histd_parse_file(path, C, 0, &ds, msg, sizeof msg);
  CHECK(rc == 0 && ds.n == 2 && ds.z[1] == 6, "parse_file: %s", msg);
  if (rc == 0)
    histd_dataset_free(&ds);
  rc = histd_parse_file(path, C, 1, &ds, msg, sizeof msg);
  CHECK(rc == HISTD_ETOOBIG, "parse_file max: %d", rc);

  char empty[256];
  snprintf(empty, sizeof empty, "%s/e.f64", dir);
  fclose(fopen(empty, "w"));
  rc = histd_parse_file(empty, HISTD_FORMAT_F64, 0, &ds, msg, sizeof msg);
  CHECK(rc == HISTD_EPARSE, "empty file: %d", rc);
  CHECK_STR_CONTAINS(msg, "empty");

  char missing[256];
  snprintf(missing, sizeof missing, "%s/missing.csv", dir);
  rc = histd_parse_file(missing, C, 0, &ds, msg, sizeof msg);
  CHECK(rc == HISTD_ENOENT, "missing file: %d", rc);
  CHECK_STR_CONTAINS(msg, "missing.csv");
  rc = histd_parse_file(dir, C, 0, &ds, msg, sizeof msg);
  CHECK(rc == HISTD_EIO, "directory: %d", rc);
  CHECK_STR_CONTAINS(msg, "is a directory");
  unlink(path);
  unlink(empty);
  rmdir(dir);
}

/* Numbers read in the C locale even when the process uses a comma locale. */
static void test_locale(void) {
  const char *locs[] = {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "fr_FR.utf8"};
  const char *got = NULL;
  for (size_t i = 0; i < sizeof locs / sizeof locs[0] && got == NULL; i++)
    got = setlocale(LC_NUMERIC, locs[i]);
  if (got == NULL) {
    printf("locale test: no comma-decimal locale installed, checked the C locale only\n");
  }
  GOOD(C, "0.5,1.25,-2.5e1\n", 1, 0.5, 1.25, -25);
  GOOD(J, "{\"points\":[[0.5,1.25,-2.5e1]]}", 1, 0.5, 1.25, -25);
  setlocale(LC_NUMERIC, "C");
}

/* The number reader (fast path and strtod) against strtod, bit for bit, on
 * random decimal tokens of every length, point position and exponent. */
static void test_numbers(void) {
  locale_t loc;
  CHECK(histd__c_locale(&loc, NULL, 0) == 0, "C locale");
  uint64_t s = 2024;
  char tok[64];
  int mismatches = 0;
  for (int k = 0; k < 300000 && mismatches < 10; k++) {
    size_t o = 0;
    uint64_t r = test_rand_u64(&s);
    if (r & 1)
      tok[o++] = '-';
    int ndig = 1 + (int)((r >> 1) % 22);
    int point = (int)((r >> 6) % (uint64_t)(ndig + 1));
    for (int d = 0; d < ndig; d++) {
      if (d == point && d > 0)
        tok[o++] = '.';
      uint64_t q = test_rand_u64(&s);
      tok[o++] = (char)('0' + (q % 4 == 0 ? 0 : q % 10)); /* zeros often */
    }
    if ((r >> 12) % 3 == 0)
      o += (size_t)snprintf(tok + o, sizeof tok - o, "e%d", (int)((r >> 16) % 80) - 40);
    tok[o] = '\0';
    double want = strtod(tok, NULL), got = -1;
    histd__num_status st = histd__parse_number(tok, o, HISTD__NUM_TEXT, loc, &got);
    if (st != HISTD__NUM_OK || memcmp(&got, &want, sizeof got) != 0) {
      mismatches++;
      CHECK(0, "'%s': got %.17g (status %d), strtod %.17g", tok, got, (int)st, want);
    }
  }
  static const char *const edge[] = {"9007199254740992", "9007199254740993", "9007199254740993e-22",
                                     "1e22", "1e23", "123456789012345678", "0.1", "-0", "0e999999",
                                     "2.2250738585072011e-308", "4.9406564584124654e-324",
                                     "1.7976931348623157e308", "9999999999999999999", "0.000001e22"};
  for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++) {
    double want = strtod(edge[i], NULL), got = -1;
    CHECK(histd__parse_number(edge[i], strlen(edge[i]), HISTD__NUM_TEXT, loc, &got) ==
                  HISTD__NUM_OK &&
              memcmp(&got, &want, sizeof got) == 0,
          "'%s': got %.17g, strtod %.17g", edge[i], got, want);
  }
  freelocale(loc);
}

/* histd_parse_to_fd: the same dataset as histd_parse, its points in the
 * file (x[n] y[n] z[n], the file that long); a malformed input leaves no
 * mapping and says why. */
static void test_parse_to_fd(void) {
  char text[4096];
  size_t at = 0;
  for (int f = 0; f < 3; f++) { /* three frames of 40 atoms: the arena grows */
    at += (size_t)snprintf(text + at, sizeof text - at, "40\nLattice=\"9 0 0 0 9 0 0 0 9\"\n");
    for (int i = 0; i < 40; i++)
      at += (size_t)snprintf(text + at, sizeof text - at, "%s %d.5 %d.25 %d\n", i % 3 ? "H" : "O",
                             i, f, i + f);
  }
  histd_dataset heap, disk;
  CHECK(histd_parse(X, text, at, 0, &heap, msg, sizeof msg) == 0, "heap: %s", msg);
  FILE *tmp = tmpfile();
  int fd = fileno(tmp);
  int rc = histd_parse_to_fd(X, text, at, 0, fd, &disk, msg, sizeof msg);
  CHECK(rc == 0, "to a file: %s", msg);
  if (rc == 0) {
    CHECK(disk.n == heap.n && disk.frames == heap.frames && disk.borrowed &&
              disk.top != NULL && disk.top->atoms == 40,
          "the same shape: %zu points, %zu frames", disk.n, disk.frames);
    CHECK(memcmp(disk.x, heap.x, heap.n * sizeof(double)) == 0 &&
              memcmp(disk.y, heap.y, heap.n * sizeof(double)) == 0 &&
              memcmp(disk.z, heap.z, heap.n * sizeof(double)) == 0,
          "the same points");
    double back[3];
    CHECK(fseek(tmp, 0, SEEK_END) == 0 && (size_t)ftell(tmp) == 3 * heap.n * sizeof(double),
          "the file holds 3 n doubles (%ld bytes)", ftell(tmp));
    CHECK(pread(fd, back, sizeof back, 0) == (ssize_t)sizeof back && back[0] == heap.x[0] &&
              pread(fd, back, 8, (off_t)(heap.n * 8)) == 8 && back[0] == heap.y[0],
          "x then y in the file");
    histd_parse_unmap(&disk);
  }
  histd_dataset_free(&heap);
  rc = histd_parse_to_fd(X, "2\n\nO 0 0 0\nH 1 x 0\n", 18, 0, fd, &disk, msg, sizeof msg);
  CHECK(rc != 0 && strstr(msg, "line 4") != NULL, "a malformed file: %s", msg);
  fclose(tmp);
}

int main(void) {
  test_parse_to_fd();
  test_numbers();
  test_json();
  test_csv();
  test_csv_weights();
  test_lammps();
  test_topology();
  test_mol_columns();
  test_weights_frames();
  test_xyz();
  test_raw();
  test_equivalence();
  test_formats();
  test_files();
  test_locale();
  return check_finish("test_parse");
}
