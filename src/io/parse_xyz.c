/*
 * parse_xyz.c -- the molecular XYZ format and extended XYZ, one frame or
 * several one after another:
 *
 *     3
 *     Lattice="10 0 0 0 10 0 0 0 10" Properties=species:S:1:pos:R:3:w:R:1 pbc="T T T"
 *     O  0.000  0.000  0.117  1.0
 *     H  0.000  0.757 -0.470  0.5
 *     H  0.000 -0.757 -0.470  0.5
 *     3
 *     (the next frame: its count, its comment line, its atoms)
 *
 * The comment line is free text, except for three keys (any case) at the
 * start of a blank-separated token, the extended XYZ ones:
 *   Lattice="ax ay az bx by bz cx cy cz"  the cell vectors a, b, c, which
 *       must be lower-triangular (ay = az = bz = 0, as LAMMPS and GROMACS
 *       write them); the frame's periodic box;
 *   pbc="T T T"  periodic (the default with a Lattice) or "F F F" (open
 *       space); a mix is refused;
 *   Properties=name:type:count:...  the columns, in order; pos:R:3 are the
 *       coordinates, a column w, weight or weights of type R and count 1 the
 *       weight; the others (species:S:1, vel:R:3, ...) are skipped, and every
 *       atom line must hold exactly the columns named.
 * Without Properties, an atom line is "element x y z": with exactly one
 * more field (on the frame's first atom line) that field is the weight and
 * every atom line of the frame has it; with two or more, the columns after
 * z are ignored. Every frame has weights or none does.
 *
 * The element of each atom (the first field, or the species column that
 * Properties names) makes the topology when every frame lists the same
 * elements in the same order; frames that differ keep no topology. So do
 * the columns name:S:1 and resname:S:1 (atom and residue names, cut at 7
 * bytes as GRO's are), resid:I:1 (residue numbers) and mol:I:1 (or
 * molecule:I:1: molecule ids, for exclusions), each kept when every frame
 * has it with the same values.
 *
 * Memory: each frame grows the arrays by min(count, what the rest of the
 * input can hold: a line is at least "H 1 2 3" plus a newline), so a lying
 * count cannot make us allocate.
 */
#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "io_internal.h"

/* A whole line [s, e) that is a decimal count. */
static bool parse_count(const char *s, const char *e, size_t *out) {
  if (s == e)
    return false;
  size_t v = 0;
  for (; s < e; s++) {
    if (*s < '0' || *s > '9')
      return false;
    size_t d = (size_t)(*s - '0');
    if (v > (SIZE_MAX - d) / 10)
      return false;
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

/* The topology's columns: strings (the element, the atom's and its
 * residue's names) and whole numbers (the molecule id, the residue
 * number), in these orders. */
enum { XS_ELEMENT, XS_NAME, XS_RESNAME, XS_COUNT };
enum { XI_MOL, XI_RESID, XI_COUNT };
static const unsigned xs_field[XS_COUNT] = {HISTD_TOP_ELEMENT, HISTD_TOP_NAME, HISTD_TOP_RESNAME};
static const unsigned xi_field[XI_COUNT] = {HISTD_TOP_MOL, HISTD_TOP_RESID};

/* The columns of one frame's atom lines. */
typedef struct columns {
  bool named;   /* Properties= gave them                       */
  size_t count; /* named: the fields a line has                */
  size_t pos;   /* the field of x (y, z follow)                */
  size_t w;     /* the weight's field, or SIZE_MAX             */
  size_t str[3]; /* the fields of the strings (XS_*), or SIZE_MAX */
  size_t num[2]; /* the fields of the whole numbers (XI_*), or SIZE_MAX */
} columns;

/* The value of key= at the start of a token of [s, e) (any case), or false.
 * A quoted value runs to the next '"'. */
static int comment_value(const char *s, const char *e, const char *key, const char **vs,
                         const char **ve, size_t line, char *msg, size_t msglen) {
  const size_t kl = strlen(key);
  for (const char *p = s; p + kl < e; p++) {
    if (p > s && !histd__is_blank(p[-1]))
      continue;
    if (strncasecmp(p, key, kl) != 0 || p[kl] != '=')
      continue;
    const char *v = p + kl + 1;
    if (v < e && *v == '"') {
      const char *q = memchr(v + 1, '"', (size_t)(e - v - 1));
      if (q == NULL)
        return histd_fail(msg, msglen, HISTD_EPARSE, "line %zu: %s=\" has no closing quote",
                          line, key);
      *vs = v + 1;
      *ve = q;
    } else {
      *vs = v;
      while (v < e && !histd__is_blank(*v))
        v++;
      *ve = v;
    }
    return 1;
  }
  return 0;
}

/* Lattice= and pbc= into the frame's box (kind NONE without them). */
static int comment_box(const char *s, const char *e, size_t line, locale_t loc, histd_box *box,
                       char *msg, size_t msglen) {
  const char *vs, *ve;
  *box = (histd_box){HISTD_BOX_NONE, 0, 0, 0, 0, 0, 0};
  int has = comment_value(s, e, "Lattice", &vs, &ve, line, msg, msglen);
  if (has <= 0)
    return has;
  double v[9];
  const char *c = vs, *t;
  size_t tl;
  int k = 0;
  for (; (t = histd__token(&c, ve, &tl)) != NULL; k++)
    if (k < 9 && histd__parse_number(t, tl, HISTD__NUM_TEXT, loc, &v[k]) != HISTD__NUM_OK) {
      char q[64];
      histd__quote(q, sizeof q, t, tl);
      return histd_fail(msg, msglen, HISTD_EPARSE,
                        "line %zu: Lattice: '%s' is not a finite number", line, q);
    }
  if (k != 9)
    return histd_fail(msg, msglen, HISTD_EPARSE,
                      "line %zu: Lattice needs 9 numbers (the vectors a, b, c), found %d", line, k);
  histd_box lattice;
  int shape = histd__box_from_vectors(v, &lattice);
  if (shape == HISTD__BOX_NOT_LOWER)
    return histd_fail(msg, msglen, HISTD_EPARSE,
                      "line %zu: Lattice's vectors must be lower-triangular (ay = az = bz = 0, "
                      "as LAMMPS and GROMACS write them); got ay %g, az %g, bz %g",
                      line, v[1], v[2], v[5]);
  if (shape == HISTD__BOX_NOT_POSITIVE)
    return histd_fail(msg, msglen, HISTD_EPARSE,
                      "line %zu: Lattice's ax, by and cz must be > 0, got %g, %g, %g", line,
                      v[0], v[4], v[8]);
  int periodic = 3;
  if ((has = comment_value(s, e, "pbc", &vs, &ve, line, msg, msglen)) < 0)
    return has;
  if (has) {
    periodic = 0;
    int flags = 0;
    for (c = vs; (t = histd__token(&c, ve, &tl)) != NULL; flags++) {
      bool yes = tl == 1 && (*t == 'T' || *t == 't' || *t == '1');
      bool no = tl == 1 && (*t == 'F' || *t == 'f' || *t == '0');
      if (!yes && !no)
        flags = 99;
      periodic += yes;
    }
    if (flags != 3)
      return histd_fail(msg, msglen, HISTD_EPARSE,
                        "line %zu: pbc must be three flags T or F, such as pbc=\"T T T\"", line);
    if (periodic != 0 && periodic != 3)
      return histd_fail(msg, msglen, HISTD_EPARSE,
                        "line %zu: pbc is periodic along %d of the 3 axes; histd supports fully "
                        "periodic boxes or open space", line, periodic);
  }
  if (periodic == 3)
    *box = lattice;
  return 0;
}

/* Properties=name:type:count:... into the columns. */
static int comment_columns(const char *s, const char *e, size_t line, columns *col, char *msg,
                           size_t msglen) {
  const char *vs, *ve;
  *col = (columns){false, 0, 1, SIZE_MAX, {0, SIZE_MAX, SIZE_MAX}, {SIZE_MAX, SIZE_MAX}};
  int has = comment_value(s, e, "Properties", &vs, &ve, line, msg, msglen);
  if (has <= 0)
    return has;
  col->named = true;
  col->str[XS_ELEMENT] = SIZE_MAX;
  bool pos = false;
  for (const char *p = vs; p < ve;) {
    const char *f[3];
    size_t fl[3];
    for (int k = 0; k < 3; k++) {
      const char *q = p;
      while (q < ve && *q != ':')
        q++;
      f[k] = p;
      fl[k] = (size_t)(q - p);
      if (q >= ve && k < 2)
        return histd_fail(msg, msglen, HISTD_EPARSE,
                          "line %zu: Properties must be name:type:count triples, such as "
                          "species:S:1:pos:R:3", line);
      p = q < ve ? q + 1 : q;
    }
    size_t count;
    bool real = fl[1] == 1 && (*f[1] == 'R' || *f[1] == 'r');
    if (fl[0] == 0 || fl[1] != 1 || strchr("SRILsril", *f[1]) == NULL ||
        !parse_count(f[2], f[2] + fl[2], &count) || count == 0 || count > 1000) {
      char q[64];
      histd__quote(q, sizeof q, f[0], (size_t)(f[2] + fl[2] - f[0]));
      return histd_fail(msg, msglen, HISTD_EPARSE,
                        "line %zu: Properties: '%s' is not a name:type:count triple (type S, "
                        "R, I or L; count a whole number from 1)", line, q);
    }
    const bool text = *f[1] == 'S' || *f[1] == 's', whole = *f[1] == 'I' || *f[1] == 'i';
#define IS(word) (fl[0] == strlen(word) && memcmp(f[0], word, fl[0]) == 0 && count == 1)
    if (IS("species") && text)
      col->str[XS_ELEMENT] = col->count;
    if (IS("name") && text)
      col->str[XS_NAME] = col->count;
    if (IS("resname") && text)
      col->str[XS_RESNAME] = col->count;
    if ((IS("mol") || IS("molecule")) && whole)
      col->num[XI_MOL] = col->count;
    if (IS("resid") && whole)
      col->num[XI_RESID] = col->count;
#undef IS
    if (fl[0] == 3 && memcmp(f[0], "pos", 3) == 0) {
      if (!real || count != 3)
        return histd_fail(msg, msglen, HISTD_EPARSE,
                          "line %zu: Properties: pos must be pos:R:3", line);
      col->pos = col->count;
      pos = true;
    } else if ((fl[0] == 1 && *f[0] == 'w') || (fl[0] == 6 && memcmp(f[0], "weight", 6) == 0) ||
               (fl[0] == 7 && memcmp(f[0], "weights", 7) == 0)) {
      if (!real || count != 1)
        return histd_fail(msg, msglen, HISTD_EPARSE,
                          "line %zu: Properties: a weight column must be of type R and count 1",
                          line);
      col->w = col->count;
    }
    col->count += count;
  }
  if (!pos)
    return histd_fail(msg, msglen, HISTD_EPARSE,
                      "line %zu: Properties names no pos:R:3 column (the coordinates)", line);
  return 0;
}

/* One atom line [ls, le) of the frame: its coordinates and weight, its
 * strings into str (NUL-padded; "" when absent, and an element too long
 * for a slot; names are cut) and its whole numbers into num (the columns
 * that Properties names). */
static int atom_line(const char *ls, const char *le, size_t line, columns *col, bool first,
                     locale_t loc, double v[4], char str[XS_COUNT][HISTD_ATOM_STR],
                     int64_t num[XI_COUNT], char *msg, size_t msglen) {
  static const char *const num_what[XI_COUNT] = {"molecule id", "residue number"};
  const char *c = ls, *t;
  size_t tl, f = 0;
  memset(str, 0, XS_COUNT * HISTD_ATOM_STR);
  if (!col->named && first) { /* element x y z [w]: the first line says */
    size_t fields = 0;
    while (histd__token(&c, le, &tl) != NULL)
      fields++;
    col->count = fields == 5 ? 5 : 0;
    col->w = fields == 5 ? 4 : SIZE_MAX;
    c = ls;
  }
  for (; (t = histd__token(&c, le, &tl)) != NULL; f++) {
    for (int k = 0; k < XS_COUNT; k++)
      if (f == col->str[k] && (k != XS_ELEMENT || tl < HISTD_ATOM_STR))
        memcpy(str[k], t, tl < HISTD_ATOM_STR - 1 ? tl : HISTD_ATOM_STR - 1);
    for (int k = 0; k < XI_COUNT; k++) {
      double m;
      if (f != col->num[k])
        continue;
      if (histd__parse_number(t, tl, HISTD__NUM_TEXT, loc, &m) != HISTD__NUM_OK ||
          m != floor(m) || fabs(m) > 0x1p53) {
        char q[64];
        histd__quote(q, sizeof q, t, tl);
        return histd_fail(msg, msglen, HISTD_EPARSE,
                          "line %zu: the %s '%s' is not a whole number", line, num_what[k], q);
      }
      num[k] = (int64_t)m;
    }
    int a = f >= col->pos && f < col->pos + 3 ? (int)(f - col->pos) : f == col->w ? 3 : -1;
    if (a < 0)
      continue;
    histd__num_status st = histd__parse_number(t, tl, HISTD__NUM_TEXT, loc, &v[a]);
    if (st != HISTD__NUM_OK) {
      char q[64];
      static const char *const what[4] = {"x", "y", "z", "the weight"};
      histd__quote(q, sizeof q, t, tl);
      if (st == HISTD__NUM_NOMEM)
        return histd_fail(msg, msglen, HISTD_ENOMEM, "line %zu: out of memory", line);
      return histd_fail(msg, msglen, HISTD_EPARSE, "line %zu: %s: '%s' is not a %snumber", line,
                        what[a], q, st == HISTD__NUM_SYNTAX ? "" : "finite ");
    }
  }
  if (col->named && f != col->count)
    return histd_fail(msg, msglen, HISTD_EPARSE,
                      "line %zu: expected %zu fields (as Properties names), found %zu", line,
                      col->count, f);
  if (!col->named && f < 4)
    return histd_fail(msg, msglen, HISTD_EPARSE,
                      "line %zu: expected an element and 3 numbers, found %zu number%s", line,
                      f ? f - 1 : 0, f == 2 ? "" : "s");
  if (!col->named && col->count == 5 && f != 5)
    return histd_fail(msg, msglen, HISTD_EPARSE,
                      "line %zu: expected element x y z and a weight, as the frame's first atom "
                      "line has, found %zu fields", line, f);
  return 0;
}

int histd__parse_xyz(const char *buf, size_t len, size_t max_points, histd_dataset *out,
                     char *msg, size_t msglen) {
  size_t bom = histd__skip_bom(buf, len);
  histd__lines l = {buf + bom, buf + len, 0};
  const char *ls, *le;
  char q[64];
  bool any = false;
  for (const char *c = l.p; c < l.end && !any; c++)
    any = !(histd__is_blank(*c) || *c == '\n' || *c == '\r');
  if (!any)
    return histd_fail(msg, msglen, HISTD_EPARSE, "empty input: no points");
  locale_t loc;
  int rc = histd__c_locale(&loc, msg, msglen);
  if (rc != 0)
    return rc;
  histd_dataset ds;
  memset(&ds, 0, sizeof ds);
  histd__frames frames = {0, 0, NULL, NULL};
  double *ws = NULL;
  /* frame 1's strings (HISTD_ATOM_STR each) and whole numbers, by column;
   * NULL: frame 1 has no such column; ok: every frame so far agrees */
  char *strs[XS_COUNT] = {NULL, NULL, NULL};
  int64_t *nums[XI_COUNT] = {NULL, NULL};
  bool strs_ok[XS_COUNT] = {true, true, true}, nums_ok[XI_COUNT] = {true, true};
  size_t cap = 0, used = 0;
  if ((rc = histd__ds_reserve(&ds, 0, msg, msglen)) != 0)
    goto fail;
  while (histd__next_line(&l, &ls, &le)) {
    if (ls == le && frames.count > 0)
      continue; /* blank lines after a frame */
    const size_t count_line = l.no, fno = frames.count + 1;
    size_t count;
    if (!parse_count(ls, le, &count)) {
      histd__quote(q, sizeof q, ls, (size_t)(le - ls));
      if (frames.count == 0)
        rc = histd_fail(msg, msglen, HISTD_EPARSE,
                        "line %zu: expected the atom count (a whole number), found '%s'",
                        count_line, q);
      else
        rc = histd_fail(msg, msglen, HISTD_EPARSE,
                        "line %zu: expected the atom count of frame %zu (a whole number), "
                        "found '%s' (unexpected content after the %zu atoms of frame %zu)",
                        count_line, fno, q, frames.counts[frames.count - 1], fno - 1);
      goto fail;
    }
    if (count == 0) {
      rc = histd_fail(msg, msglen, HISTD_EPARSE, "line %zu: the atom count is 0: no points",
                      count_line);
      goto fail;
    }
    if (max_points != 0 && (count > max_points || used > max_points - count)) {
      rc = histd_fail(msg, msglen, HISTD_ETOOBIG,
                      "line %zu: %zu atoms is more than %zu points, the limit for this input",
                      count_line, used + count, max_points);
      goto fail;
    }
    if (!histd__next_line(&l, &ls, &le)) {
      rc = histd_fail(msg, msglen, HISTD_EPARSE,
                      "line %zu: missing the comment line after the atom count", l.no + 1);
      goto fail;
    }
    columns col;
    histd_box box;
    if ((rc = comment_box(ls, le, l.no, loc, &box, msg, msglen)) != 0 ||
        (rc = comment_columns(ls, le, l.no, &col, msg, msglen)) != 0)
      goto fail;
    size_t room = (size_t)(l.end - l.p + 1) / 8 + 1; /* what the rest can hold */
    if ((rc = histd__ds_grow(&ds, &cap, used + (count < room ? count : room), &ws, msg,
                             msglen)) != 0)
      goto fail;
    const size_t kept = fno == 1 ? (count < room ? count : room) : frames.counts[0];
    for (int k = 0; k < XS_COUNT + XI_COUNT; k++) {
      const bool is_str = k < XS_COUNT;
      const int x = is_str ? k : k - XS_COUNT;
      const bool has = (is_str ? col.str[x] : col.num[x]) != SIZE_MAX;
      void **first = is_str ? (void **)&strs[x] : (void **)&nums[x];
      bool *ok = is_str ? &strs_ok[x] : &nums_ok[x];
      if (fno > 1 && (count != frames.counts[0] || has != (*first != NULL)))
        *ok = false; /* frames that differ keep no such column */
      if (fno == 1 && has &&
          (*first = calloc(kept, is_str ? HISTD_ATOM_STR : sizeof(int64_t))) == NULL) {
        rc = histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %zu atoms", count);
        goto fail;
      }
    }
    for (size_t i = 0; i < count; i++) {
      if (!histd__next_line(&l, &ls, &le)) {
        rc = histd_fail(msg, msglen, HISTD_EPARSE,
                        "line %zu announces %zu atoms, but the input ends after %zu",
                        count_line, count, i);
        goto fail;
      }
      if (ls == le) {
        rc = histd_fail(msg, msglen, HISTD_EPARSE,
                        "line %zu: expected atom %zu of %zu ('element x y z'), found a blank "
                        "line", l.no, i + 1, count);
        goto fail;
      }
      double v[4] = {0, 0, 0, 0};
      char str[XS_COUNT][HISTD_ATOM_STR];
      int64_t num[XI_COUNT] = {0, 0};
      if ((rc = atom_line(ls, le, l.no, &col, i == 0, loc, v, str, num, msg, msglen)) != 0)
        goto fail;
      for (int k = 0; k < XS_COUNT && i < kept; k++) {
        char *at = strs[k] ? strs[k] + i * HISTD_ATOM_STR : NULL;
        if (at != NULL && fno == 1)
          memcpy(at, str[k], HISTD_ATOM_STR);
        else if (at != NULL && strs_ok[k] && memcmp(at, str[k], HISTD_ATOM_STR) != 0)
          strs_ok[k] = false;
        strs_ok[k] = strs_ok[k] && str[k][0] != '\0';
      }
      for (int k = 0; k < XI_COUNT && i < kept; k++) {
        if (nums[k] != NULL && fno == 1)
          nums[k][i] = num[k];
        else if (nums[k] != NULL && nums_ok[k] && nums[k][i] != num[k])
          nums_ok[k] = false;
      }
      if (i == 0 && (col.w != SIZE_MAX) != (ws != NULL) && (frames.count > 0 || ws != NULL)) {
        rc = histd_fail(msg, msglen, HISTD_EPARSE,
                        "line %zu: frame %zu %s, frame 1 %s: every frame has weights or none "
                        "does", l.no, fno, col.w != SIZE_MAX ? "has weights" : "has none",
                        col.w != SIZE_MAX ? "has none" : "has weights");
        goto fail;
      }
      if (i == 0 && col.w != SIZE_MAX && ws == NULL &&
          (ws = malloc((cap ? cap : 1) * sizeof *ws)) == NULL) {
        rc = histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %zu weights", cap);
        goto fail;
      }
      if (used >= cap) { /* impossible: the lines would have run out */
        rc = histd_fail(msg, msglen, HISTD_EPARSE,
                        "internal error: more atoms than the input can hold");
        goto fail;
      }
      ds.x[used] = v[0];
      ds.x[cap + used] = v[1];
      ds.x[2 * cap + used] = v[2];
      if (ws != NULL)
        ws[used] = v[3];
      used++;
    }
    if ((rc = histd__frames_add(&frames, count, &box, msg, msglen)) != 0)
      goto fail;
  }
  freelocale(loc);
  rc = histd__ds_complete_all(&ds, cap, used, ws, frames.count, frames.counts, frames.boxes,
                              msg, msglen);
  if (rc == 0)
    snprintf(ds.unit, sizeof ds.unit, "Angstrom"); /* XYZ's and extended XYZ's convention */
  unsigned fields = 0;
  for (int k = 0; k < XS_COUNT; k++)
    fields |= strs_ok[k] && strs[k] != NULL ? xs_field[k] : 0u;
  for (int k = 0; k < XI_COUNT; k++)
    fields |= nums_ok[k] && nums[k] != NULL ? xi_field[k] : 0u;
  if (rc == 0 && fields != 0 &&
      (rc = histd_topology_alloc(&ds, frames.counts[0], fields, msg, msglen)) == 0) {
    char *const str_to[XS_COUNT] = {ds.top->element, ds.top->name, ds.top->resname};
    int64_t *const num_to[XI_COUNT] = {ds.top->mol, ds.top->resid};
    for (int k = 0; k < XS_COUNT; k++)
      if (str_to[k] != NULL)
        memcpy(str_to[k], strs[k], frames.counts[0] * HISTD_ATOM_STR);
    for (int k = 0; k < XI_COUNT; k++)
      if (num_to[k] != NULL)
        memcpy(num_to[k], nums[k], frames.counts[0] * sizeof(int64_t));
  }
  if (rc != 0 && ds.x != NULL)
    histd_dataset_free(&ds);
  free(ws);
  for (int k = 0; k < XS_COUNT; k++)
    free(strs[k]);
  for (int k = 0; k < XI_COUNT; k++)
    free(nums[k]);
  histd__frames_free(&frames);
  if (rc != 0)
    return rc;
  *out = ds;
  return 0;
fail:
  freelocale(loc);
  for (int k = 0; k < XS_COUNT; k++)
    free(strs[k]);
  for (int k = 0; k < XI_COUNT; k++)
    free(nums[k]);
  free(ws);
  histd__frames_free(&frames);
  histd_dataset_free(&ds);
  return rc;
}
