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
 *
 * The atoms' descriptions (histd_topology): the columns type, mol and
 * element. With an id column each frame's atoms are sorted by id (LAMMPS
 * writes them in any order), so that atom k is the same atom in every
 * frame; a later frame must then list the same ids with the same type,
 * mol and element, or the line is named. Frames of different sizes keep
 * no topology (the plain histogram still runs).
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io_internal.h"

/* The topology columns of the frames read so far: frame 1's values are
 * the topology; a later frame's are checked against them. */
enum { TOP_ID, TOP_TYPE, TOP_MOL, TOP_ELEMENT, TOP_COLS };
typedef struct lmp_atom {
  int64_t id, type, mol;
  char element[HISTD_ATOM_STR];
  size_t line; /* where it was read, for a message */
} lmp_atom;

typedef struct lmp_top {
  unsigned cols;     /* which TOP_* columns frame 1 had (bits) */
  size_t atoms;      /* frame 1's count                         */
  lmp_atom *first;   /* frame 1's atoms, sorted by id            */
  bool dropped;      /* frames differ in size: no topology       */
} lmp_top;

typedef struct reader {
  histd__lines l;
  locale_t loc;
  char *msg;
  size_t msglen;
  lmp_top top;
} reader;

static int by_id(const void *l, const void *r) {
  const lmp_atom *a = l, *b = r;
  return a->id < b->id ? -1 : a->id > b->id;
}

/* A whole number token (LAMMPS writes ids, types and mols as integers). */
static bool token_int(const char *t, size_t tl, int64_t *out) {
  char buf[24];
  if (tl == 0 || tl >= sizeof buf)
    return false;
  memcpy(buf, t, tl);
  buf[tl] = '\0';
  char *end;
  errno = 0;
  long long v = strtoll(buf, &end, 10);
  if (errno != 0 || *end != '\0')
    return false;
  *out = v;
  return true;
}

/* Sorts the frame's atoms [first, first + count) by id, its points with
 * them, and holds its topology to frame 1's (or makes it frame 1's). */
static int frame_topology(reader *r, unsigned cols, lmp_atom *atoms, size_t count,
                          histd_dataset *ds, size_t cap, size_t first, double *ws, size_t fno) {
  lmp_top *t = &r->top;
  if (cols & (1u << TOP_ID)) {
    for (size_t i = 0; i < count; i++)
      atoms[i].line = i; /* the point's index within the frame, for the permutation */
    qsort(atoms, count, sizeof *atoms, by_id);
    for (size_t i = 1; i < count; i++)
      if (atoms[i].id == atoms[i - 1].id)
        return histd_fail(r->msg, r->msglen, HISTD_EPARSE, "frame %zu lists atom id %lld twice",
                          fno, (long long)atoms[i].id);
    double *tmp = malloc((count ? count : 1) * sizeof *tmp);
    if (tmp == NULL)
      return histd_fail(r->msg, r->msglen, HISTD_ENOMEM, "out of memory for %zu atoms", count);
    double *arrays[4] = {ds->x + first, ds->x + cap + first, ds->x + 2 * cap + first,
                         ws ? ws + first : NULL};
    for (int a = 0; a < 4; a++) {
      if (arrays[a] == NULL)
        continue;
      for (size_t i = 0; i < count; i++)
        tmp[i] = arrays[a][atoms[i].line];
      memcpy(arrays[a], tmp, count * sizeof *tmp);
    }
    free(tmp);
  }
  if (fno == 1) {
    t->cols = cols;
    t->atoms = count;
    if ((cols & ~(1u << TOP_ID)) == 0)
      return 0;
    t->first = malloc((count ? count : 1) * sizeof *t->first);
    if (t->first == NULL)
      return histd_fail(r->msg, r->msglen, HISTD_ENOMEM, "out of memory for %zu atoms", count);
    memcpy(t->first, atoms, count * sizeof *atoms);
    return 0;
  }
  if (t->first == NULL || t->dropped)
    return 0;
  if (count != t->atoms || cols != t->cols) {
    t->dropped = true; /* frames of other sizes or columns: no topology */
    return 0;
  }
  for (size_t i = 0; i < count; i++) {
    const lmp_atom *a = &atoms[i], *b = &t->first[i];
    if (a->id != b->id || a->type != b->type || a->mol != b->mol ||
        memcmp(a->element, b->element, HISTD_ATOM_STR) != 0)
      return histd_fail(r->msg, r->msglen, HISTD_EPARSE,
                        "frame %zu: atom %zu (id %lld) differs from frame 1's (id %lld) in its "
                        "id, type, mol or element: every frame must list the same atoms",
                        fno, i + 1, (long long)a->id, (long long)b->id);
  }
  return 0;
}

/* frame 1's topology onto the finished dataset */
static int attach_topology(reader *r, histd_dataset *ds) {
  const lmp_top *t = &r->top;
  if (t->first == NULL || t->dropped)
    return 0;
  const unsigned fields = ((t->cols & (1u << TOP_TYPE)) ? HISTD_TOP_TYPE : 0u) |
                          ((t->cols & (1u << TOP_MOL)) ? HISTD_TOP_MOL : 0u) |
                          ((t->cols & (1u << TOP_ELEMENT)) ? HISTD_TOP_ELEMENT : 0u);
  int rc = histd_topology_alloc(ds, t->atoms, fields, r->msg, r->msglen);
  for (size_t i = 0; rc == 0 && i < t->atoms; i++) {
    if (ds->top->type)
      ds->top->type[i] = t->first[i].type;
    if (ds->top->mol)
      ds->top->mol[i] = t->first[i].mol;
    if (ds->top->element)
      memcpy(ds->top->element + i * HISTD_ATOM_STR, t->first[i].element, HISTD_ATOM_STR);
  }
  return rc;
}

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
  size_t tcol[TOP_COLS] = {SIZE_MAX, SIZE_MAX, SIZE_MAX, SIZE_MAX};
  static const char *const tnames[TOP_COLS] = {"id", "type", "mol", "element"};
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
    for (int k = 0; k < TOP_COLS; k++)
      if (is(t, tl, tnames[k]) && tcol[k] == SIZE_MAX)
        tcol[k] = cols;
  }
  unsigned tcols = 0;
  for (int k = 0; k < TOP_COLS; k++)
    tcols |= tcol[k] != SIZE_MAX ? 1u << k : 0u;
  if (kind < 0 || col[0] == SIZE_MAX || col[1] == SIZE_MAX || col[2] == SIZE_MAX)
    return histd_fail(msg, msglen, HISTD_EPARSE, "line %zu: the ATOMS columns name no complete "
                      "set of x y z, xu yu zu or xs ys zs", r->l.no);
  if (frames->count > 0 && (col[3] != SIZE_MAX) != (*ws != NULL))
    return histd_fail(msg, msglen, HISTD_EPARSE, "line %zu: frame %zu has %s weight column and "
                      "frame 1 has %s: every frame has weights or none does", r->l.no, fno,
                      col[3] != SIZE_MAX ? "a" : "no", col[3] != SIZE_MAX ? "none" : "one");
  /* what the rest can hold: an atom's line is at least "0 0 0" and its newline */
  size_t room = (size_t)(r->l.end - r->l.p + 1) / 6 + 1;
  if ((rc = histd__ds_grow(ds, cap, *used + (count < room ? count : room), ws, msg, msglen)) != 0)
    return rc;
  if (col[3] != SIZE_MAX && *ws == NULL && (*ws = malloc(*cap * sizeof **ws)) == NULL)
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %zu weights", *cap);
  lmp_atom *atoms = NULL; /* the topology columns, when there are any */
  const size_t natoms = count < room ? count : room;
  if (tcols != 0 && (atoms = calloc(natoms, sizeof *atoms)) == NULL)
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %zu atoms", count);
  const size_t first = *used;
  for (size_t i = 0; i < count; i++) {
    bool ended = !histd__next_line(&r->l, &ls, &le);
    if (ended || ls == le || *used >= *cap || i >= natoms) {
      free(atoms);
      return histd_fail(msg, msglen, HISTD_EPARSE, "line %zu: expected atom %zu of %zu%s",
                        r->l.no + ended, i + 1, count, ended ? ", found the end of the input" : "");
    }
    double v[4] = {0, 0, 0, 0};
    c = ls;
    size_t f = 0;
    for (; (t = histd__token(&c, le, &tl)) != NULL; f++) {
      for (int a = 0; a < 4; a++)
        if (f == col[a] &&
            histd__parse_number(t, tl, HISTD__NUM_TEXT, r->loc, &v[a]) != HISTD__NUM_OK) {
          char q[64];
          histd__quote(q, sizeof q, t, tl);
          free(atoms);
          return histd_fail(msg, msglen, HISTD_EPARSE, "line %zu: '%s' is not a finite number",
                            r->l.no, q);
        }
      for (int k = 0; atoms != NULL && k < TOP_COLS; k++) {
        if (f != tcol[k])
          continue;
        int64_t *iv = k == TOP_ID ? &atoms[i].id : k == TOP_TYPE ? &atoms[i].type : &atoms[i].mol;
        bool ok = k == TOP_ELEMENT ? tl < HISTD_ATOM_STR : token_int(t, tl, iv);
        if (ok && k == TOP_ELEMENT)
          memcpy(atoms[i].element, t, tl);
        if (!ok) {
          char q[64];
          histd__quote(q, sizeof q, t, tl);
          free(atoms);
          return histd_fail(msg, msglen, HISTD_EPARSE, "line %zu: the %s '%s' is not %s",
                            r->l.no, tnames[k], q,
                            k == TOP_ELEMENT ? "an element name of at most 7 characters"
                                             : "a whole number");
        }
      }
    }
    if (f != cols) {
      free(atoms);
      return histd_fail(msg, msglen, HISTD_EPARSE, "line %zu: expected %zu columns (as the ATOMS "
                        "line names), found %zu", r->l.no, cols, f);
    }
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
  rc = frame_topology(r, tcols, atoms, atoms ? count : 0, ds, *cap, first, *ws, fno);
  if (rc == 0 && atoms == NULL && fno > 1 && r->top.first != NULL)
    r->top.dropped = true; /* this frame names no topology columns */
  free(atoms);
  if (rc != 0)
    return rc;
  histd_box box = {HISTD_BOX_NONE, 0, 0, 0, 0, 0, 0};
  if (periodic == 3)
    box = (histd_box){tilted && (xy != 0 || xz != 0 || yz != 0) ? HISTD_BOX_TRICLINIC
                                                                : HISTD_BOX_ORTHO,
                      lx, xy, ly, xz, yz, lz};
  return histd__frames_add(frames, count, &box, msg, msglen);
}

int histd__parse_lammps(const char *buf, size_t len, size_t max_points, histd_dataset *out,
                        char *msg, size_t msglen) {
  reader r = {{buf + histd__skip_bom(buf, len), buf + len, 0}, (locale_t)0, msg, msglen,
              {0, 0, NULL, false}};
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
  if (rc == 0 && (rc = attach_topology(&r, &ds)) != 0)
    histd_dataset_free(&ds);
  free(r.top.first);
  if (rc != 0)
    return rc;
  *out = ds;
  return 0;
fail:
  free(r.top.first);
  free(ws);
  histd__frames_free(&frames);
  freelocale(r.loc);
  histd_dataset_free(&ds);
  return rc;
}
