/*
 * parse_lammps.c -- a LAMMPS dump file (dump atom / dump custom), one frame
 * or several:
 *
 *     ITEM: TIMESTEP
 *     2000
 *     ITEM: NUMBER OF ATOMS
 *     500
 *     ITEM: BOX BOUNDS pp pp pp          (or "xy xz yz pp pp pp")
 *     0 8.397980956912537                (xlo_bound xhi_bound [xy])
 *     0 8.397980956912537                (ylo_bound yhi_bound [xz])
 *     0 8.397980956912537                (zlo_bound zhi_bound [yz])
 *     ITEM: ATOMS id type x y z ...
 *     1 1 0.1 0.2 0.3 ...
 *
 * Columns are found by name in the ATOMS line: x y z, or unwrapped xu yu
 * zu, or scaled xs ys zs (then x = xlo + xs lx + ys xy + zs xz, y = ylo +
 * ys ly + zs yz, z = zlo + zs lz); a column "w" (or "weight") is a weight.
 * The box: "pp pp pp" makes it periodic (ds->box), triclinic when the BOX
 * BOUNDS line names xy xz yz (the bounds are then LAMMPS's bounding box:
 * xlo = xlo_bound - min(0, xy, xz, xy + xz), xhi = xhi_bound - max(...),
 * ylo = ylo_bound - min(0, yz), yhi = yhi_bound - max(0, yz)); any
 * non-periodic axis makes it open space, and a mix is refused (half-
 * periodic boxes are not supported). Several frames follow one another,
 * each from its ITEM: TIMESTEP with its own count, box and columns (blank
 * lines between them are skipped); every frame has a weight column or none
 * does. Every malformed line names its number.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io_internal.h"

typedef struct reader {
  histd__lines l;
  locale_t loc;
  char *msg;
  size_t msglen;
} reader;

static bool is(const char *t, size_t tl, const char *word) {
  return t != NULL && tl == strlen(word) && memcmp(t, word, tl) == 0;
}

/* Expects the line "ITEM: <what>..." and returns what follows <what>. */
static int item(reader *r, const char *what, const char **rest, const char **le) {
  const char *ls;
  size_t n = strlen(what);
  if (!histd__next_line(&r->l, &ls, le))
    return histd_fail(r->msg, r->msglen, HISTD_EPARSE, "line %zu: the input ends where "
                      "\"ITEM: %s\" was expected", r->l.no + 1, what);
  if ((size_t)(*le - ls) < 6 + n || memcmp(ls, "ITEM: ", 6) != 0 || memcmp(ls + 6, what, n) != 0)
    return histd_fail(r->msg, r->msglen, HISTD_EPARSE, "line %zu: expected \"ITEM: %s\"",
                      r->l.no, what);
  *rest = ls + 6 + n;
  return 0;
}

/* n numbers from the next line (exactly n, or at least n when more_ok). */
static int numbers(reader *r, double *v, int n, int more_ok, const char *what) {
  const char *ls, *le;
  if (!histd__next_line(&r->l, &ls, &le))
    return histd_fail(r->msg, r->msglen, HISTD_EPARSE, "line %zu: the input ends where %s "
                      "was expected", r->l.no + 1, what);
  const char *c = ls;
  size_t tl;
  int i = 0;
  for (const char *t; (t = histd__token(&c, le, &tl)) != NULL; i++) {
    if (i >= n && !more_ok)
      break;
    if (i < n && histd__parse_number(t, tl, HISTD__NUM_TEXT, r->loc, &v[i]) != HISTD__NUM_OK) {
      char q[64];
      histd__quote(q, sizeof q, t, tl);
      return histd_fail(r->msg, r->msglen, HISTD_EPARSE,
                        "line %zu: %s: '%s' is not a finite number", r->l.no, what, q);
    }
  }
  if (i < n || (i > n && !more_ok))
    return histd_fail(r->msg, r->msglen, HISTD_EPARSE, "line %zu: %s: expected %d numbers, "
                      "found %d", r->l.no, what, n, i);
  return 0;
}

/* One frame from its ITEM: TIMESTEP: appended to ds (reserved for *cap
 * points, *used of them filled; weights into *ws), its count and box to
 * frames. */
static int frame(reader *r, size_t max_points, histd_dataset *ds, size_t *cap, size_t *used,
                 double **ws, histd__frames *frames) {
  char *msg = r->msg;
  size_t msglen = r->msglen;
  const char *rest, *le, *ls;
  const size_t fno = frames->count + 1;
  double step, count_d, b[3][3] = {{0}};
  int rc;
  if ((rc = item(r, "TIMESTEP", &rest, &le)) != 0 ||
      (rc = numbers(r, &step, 1, 0, "the timestep")) != 0 ||
      (rc = item(r, "NUMBER OF ATOMS", &rest, &le)) != 0 ||
      (rc = numbers(r, &count_d, 1, 0, "the atom count")) != 0)
    return rc;
  if (!(count_d >= 1 && count_d <= 0x1p53) || count_d != floor(count_d))
    return histd_fail(msg, msglen, HISTD_EPARSE, "line %zu: the atom count must be a whole "
                      "number >= 1, got %g", r->l.no, count_d);
  size_t count = (size_t)count_d;
  if (max_points != 0 && (count > max_points || *used > max_points - count))
    return histd_fail(msg, msglen, HISTD_ETOOBIG, "line %zu: %zu atoms is more than %zu points, "
                      "the limit for this input", r->l.no, *used + count, max_points);
  /* BOX BOUNDS [xy xz yz] f1 f2 f3 */
  if ((rc = item(r, "BOX BOUNDS", &rest, &le)) != 0)
    return rc;
  size_t bounds_line = r->l.no, tl;
  const char *c = rest, *t;
  bool tilted = false;
  int periodic = 0, flags = 0;
  while ((t = histd__token(&c, le, &tl)) != NULL) {
    if (is(t, tl, "xy") || is(t, tl, "xz") || is(t, tl, "yz"))
      tilted = true;
    else if (flags < 3) {
      flags++;
      periodic += is(t, tl, "pp");
    }
  }
  if (flags != 3)
    return histd_fail(msg, msglen, HISTD_EPARSE, "line %zu: BOX BOUNDS needs three boundary "
                      "flags (pp pp pp for a periodic box), found %d", bounds_line, flags);
  if (periodic != 0 && periodic != 3)
    return histd_fail(msg, msglen, HISTD_EPARSE, "line %zu: the box is periodic along %d of its "
                      "3 axes; histd supports fully periodic boxes or open space", bounds_line,
                      periodic);
  static const char *const which[3] = {"the x bounds", "the y bounds", "the z bounds"};
  for (int a = 0; a < 3; a++)
    if ((rc = numbers(r, b[a], tilted ? 3 : 2, 0, which[a])) != 0)
      return rc;
  double xy = b[0][2], xz = b[1][2], yz = b[2][2];
  double xlo = b[0][0] - fmin(fmin(0, xy), fmin(xz, xy + xz));
  double xhi = b[0][1] - fmax(fmax(0, xy), fmax(xz, xy + xz));
  double ylo = b[1][0] - fmin(0, yz), yhi = b[1][1] - fmax(0, yz);
  double zlo = b[2][0], zhi = b[2][1];
  double lx = xhi - xlo, ly = yhi - ylo, lz = zhi - zlo;
  if (!(lx > 0 && ly > 0 && lz > 0))
    return histd_fail(msg, msglen, HISTD_EPARSE, "line %zu: the box has a length <= 0 (%g, %g, "
                      "%g)", bounds_line + 1, lx, ly, lz);
  /* ATOMS columns */
  if ((rc = item(r, "ATOMS", &rest, &le)) != 0)
    return rc;
  size_t cols = 0, col[4] = {SIZE_MAX, SIZE_MAX, SIZE_MAX, SIZE_MAX};
  int kind = -1; /* 0 x y z, 1 xu yu zu, 2 xs ys zs */
  static const char *const names[3][3] = {{"x", "y", "z"}, {"xu", "yu", "zu"}, {"xs", "ys", "zs"}};
  c = rest;
  for (; (t = histd__token(&c, le, &tl)) != NULL; cols++) {
    for (int k = 0; k < 3; k++)
      for (int a = 0; a < 3; a++)
        if (is(t, tl, names[k][a]) && (kind < 0 || kind == k) && col[a] == SIZE_MAX) {
          col[a] = cols;
          kind = k;
        }
    if (is(t, tl, "w") || is(t, tl, "weight"))
      col[3] = cols;
  }
  if (kind < 0 || col[0] == SIZE_MAX || col[1] == SIZE_MAX || col[2] == SIZE_MAX)
    return histd_fail(msg, msglen, HISTD_EPARSE, "line %zu: the ATOMS columns name no complete "
                      "set of x y z, xu yu zu or xs ys zs", r->l.no);
  if (frames->count > 0 && (col[3] != SIZE_MAX) != (*ws != NULL))
    return histd_fail(msg, msglen, HISTD_EPARSE, "line %zu: frame %zu has %s weight column and "
                      "frame 1 has %s: every frame has weights or none does", r->l.no, fno,
                      col[3] != SIZE_MAX ? "a" : "no", col[3] != SIZE_MAX ? "none" : "one");
  size_t room = (size_t)(r->l.end - r->l.p + 1) / 8 + 1; /* what the rest can hold */
  if ((rc = histd__ds_grow(ds, cap, *used + (count < room ? count : room), ws, msg, msglen)) != 0)
    return rc;
  if (col[3] != SIZE_MAX && *ws == NULL && (*ws = malloc(*cap * sizeof **ws)) == NULL)
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %zu weights", *cap);
  for (size_t i = 0; i < count; i++) {
    bool ended = !histd__next_line(&r->l, &ls, &le);
    if (ended || ls == le || *used >= *cap)
      return histd_fail(msg, msglen, HISTD_EPARSE, "line %zu: expected atom %zu of %zu%s",
                        r->l.no + ended, i + 1, count, ended ? ", found the end of the input" : "");
    double v[4] = {0, 0, 0, 0};
    c = ls;
    size_t f = 0;
    for (; (t = histd__token(&c, le, &tl)) != NULL; f++)
      for (int a = 0; a < 4; a++)
        if (f == col[a] &&
            histd__parse_number(t, tl, HISTD__NUM_TEXT, r->loc, &v[a]) != HISTD__NUM_OK) {
          char q[64];
          histd__quote(q, sizeof q, t, tl);
          return histd_fail(msg, msglen, HISTD_EPARSE, "line %zu: '%s' is not a finite number",
                            r->l.no, q);
        }
    if (f != cols)
      return histd_fail(msg, msglen, HISTD_EPARSE, "line %zu: expected %zu columns (as the ATOMS "
                        "line names), found %zu", r->l.no, cols, f);
    if (kind == 2) { /* scaled */
      double xs = v[0], ys = v[1], zs = v[2];
      v[0] = xlo + xs * lx + ys * xy + zs * xz;
      v[1] = ylo + ys * ly + zs * yz;
      v[2] = zlo + zs * lz;
    }
    ds->x[*used] = v[0];
    ds->x[*cap + *used] = v[1];
    ds->x[2 * *cap + *used] = v[2];
    if (*ws != NULL)
      (*ws)[*used] = v[3];
    ++*used;
  }
  histd_box box = {HISTD_BOX_NONE, 0, 0, 0, 0, 0, 0};
  if (periodic == 3)
    box = (histd_box){tilted && (xy != 0 || xz != 0 || yz != 0) ? HISTD_BOX_TRICLINIC
                                                                : HISTD_BOX_ORTHO,
                      lx, xy, ly, xz, yz, lz};
  return histd__frames_add(frames, count, &box, msg, msglen);
}

int histd__parse_lammps(const char *buf, size_t len, size_t max_points, histd_dataset *out,
                        char *msg, size_t msglen) {
  reader r = {{buf + histd__skip_bom(buf, len), buf + len, 0}, (locale_t)0, msg, msglen};
  int rc = histd__c_locale(&r.loc, msg, msglen);
  if (rc != 0)
    return rc;
  histd_dataset ds;
  histd__frames frames = {0, 0, NULL, NULL};
  double *ws = NULL;
  size_t cap = 0, used = 0;
  if ((rc = histd__ds_reserve(&ds, 0, msg, msglen)) != 0)
    goto fail;
  do {
    if ((rc = frame(&r, max_points, &ds, &cap, &used, &ws, &frames)) != 0)
      goto fail;
    /* blank lines, then the next frame's ITEM: TIMESTEP or the end */
    histd__lines peek = r.l;
    const char *ls, *le;
    bool more = false;
    while (histd__next_line(&peek, &ls, &le)) {
      if (ls == le) {
        r.l = peek;
        continue;
      }
      if ((size_t)(le - ls) < 14 || memcmp(ls, "ITEM: TIMESTEP", 14) != 0) {
        rc = histd_fail(msg, msglen, HISTD_EPARSE, "line %zu: unexpected content after the "
                        "atoms of frame %zu (a frame starts with ITEM: TIMESTEP)", peek.no,
                        frames.count);
        goto fail;
      }
      more = true;
      break;
    }
    if (!more)
      break;
  } while (1);
  freelocale(r.loc);
  rc = histd__ds_complete_all(&ds, cap, used, ws, frames.count, frames.counts, frames.boxes,
                              msg, msglen);
  free(ws);
  histd__frames_free(&frames);
  if (rc != 0)
    return rc;
  *out = ds;
  return 0;
fail:
  free(ws);
  histd__frames_free(&frames);
  freelocale(r.loc);
  histd_dataset_free(&ds);
  return rc;
}
