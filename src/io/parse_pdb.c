/*
 * parse_pdb.c -- the Protein Data Bank's format, one frame or several:
 *
 *     CRYST1   16.000   17.000   18.000  80.00  75.00  65.00 P 1           1
 *     MODEL        1
 *     ATOM      1 NA    NA     1       5.000   5.000   5.000  1.00  0.00          Na
 *     ATOM      3  OW  SOL     3       2.300   6.280   1.130  1.00  0.00           O
 *     TER
 *     ENDMDL
 *     MODEL        2
 *     ...
 *     END
 *
 * Records are named by columns 1-6; these are read, the others (HEADER,
 * REMARK, CONECT, ...) skipped:
 *   ATOM, HETATM  an atom, fixed columns: name 13-16, residue name 18-21
 *       (the standard's 18-20 and the fourth column that GROMACS and
 *       CHARMM use), chain 22, residue number 23-26, x y z 31-38, 39-46,
 *       47-54 (Angstrom, kept as they are), element 77-78 when the line
 *       has them, else guessed from the name (molfile.h).
 *   CRYST1  a b c alpha beta gamma (columns 7-15, 16-24, 25-33, 34-40,
 *       41-47, 48-54): the box of the frames that follow, until the next
 *       CRYST1 (a file may give one, or one a model). All angles 90: a
 *       rectangular box; else triclinic, with MDAnalysis's triclinic_vectors
 *       (a along x, b in the xy plane). 1 1 1 90 90 90 is the standard's
 *       "no cell" and gives open space, as MDAnalysis reads it.
 *   MODEL ... ENDMDL  a frame each. Without MODEL records the atoms up to
 *       END (or the end of the input) are a frame, and END-separated
 *       groups of atoms are frames one after another.
 *   TER  the next atom starts a new molecule.
 * An atom outside MODEL ... ENDMDL in a file of models, a MODEL inside a
 * model, an ENDMDL without one, and an input that ends inside a model
 * (a truncated last frame) are named by their line.
 *
 * The topology (molfile.h): atom name, element, residue name and number,
 * and a molecule per residue (the counter moves on when the residue
 * number, name or chain changes, or at a TER). Every frame must list the
 * same atoms in the same order.
 *
 * Memory: a PDB does not say how many atoms come, so the arrays double as
 * they fill (each atom is a line of at least 54 bytes) and shrink at the
 * end; frame 1's atoms are kept besides (about 48 bytes each).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "molfile.h"

typedef struct reader {
  histd__mol m;
  size_t max_points;
  histd_box box;     /* the last CRYST1's                   */
  size_t model;      /* the open MODEL's line; 0: none open */
  bool models;       /* the file has MODEL records           */
} reader;

static bool record(const char *ls, const char *le, const char *name) {
  const size_t n = strlen(name), len = (size_t)(le - ls);
  if (len < n || memcmp(ls, name, n) != 0)
    return false;
  return histd__blank(ls + n, ls + (len < 6 ? len : 6));
}

/* Columns from..to as a finite number (what names them for a message). */
static int number(reader *r, const char *ls, const char *le, size_t from, size_t to,
                  const char *what, double *v) {
  const char *s = ls, *e = ls;
  histd__columns(ls, le, from, to, &s, &e);
  if (histd__parse_number(s, (size_t)(e - s), HISTD__NUM_TEXT, r->m.loc, v) == HISTD__NUM_OK)
    return 0;
  char q[64];
  histd__quote(q, sizeof q, s, (size_t)(e - s));
  return histd_fail(r->m.msg, r->m.msglen, HISTD_EPARSE, "line %zu: %s (columns %zu-%zu) is '%s', "
                    "not a %snumber", r->m.l.no, what, from, to, q,
                    histd__looks_numeric(s, (size_t)(e - s)) ? "finite " : "");
}

/* CRYST1 a b c alpha beta gamma into r->box. */
static int cryst1(reader *r, const char *ls, const char *le) {
  if ((size_t)(le - ls) < 54)
    return histd_fail(r->m.msg, r->m.msglen, HISTD_EPARSE, "line %zu: CRYST1 needs a, b, c, alpha, "
                      "beta and gamma in columns 7-54; the line has %zu characters", r->m.l.no,
                      (size_t)(le - ls));
  static const size_t col[7] = {7, 16, 25, 34, 41, 48, 55};
  static const char *const what[6] = {"CRYST1's a", "CRYST1's b", "CRYST1's c",
                                      "CRYST1's alpha", "CRYST1's beta", "CRYST1's gamma"};
  double v[6];
  int rc;
  for (int k = 0; k < 6; k++)
    if ((rc = number(r, ls, le, col[k], col[k + 1] - 1, what[k], &v[k])) != 0)
      return rc;
  const bool square = v[3] == 90 && v[4] == 90 && v[5] == 90;
  if (square && v[0] == 1 && v[1] == 1 && v[2] == 1) {
    r->box = (histd_box){HISTD_BOX_NONE, 0, 0, 0, 0, 0, 0};
    return 0;
  }
  if (!(v[0] > 0 && v[1] > 0 && v[2] > 0 && v[3] > 0 && v[3] < 180 && v[4] > 0 && v[4] < 180 &&
        v[5] > 0 && v[5] < 180))
    return histd_fail(r->m.msg, r->m.msglen, HISTD_EPARSE, "line %zu: CRYST1 needs a, b, c > 0 and "
                      "angles strictly between 0 and 180 degrees", r->m.l.no);
  if (square) {
    r->box = (histd_box){HISTD_BOX_ORTHO, v[0], 0, v[1], 0, 0, v[2]};
    return 0;
  }
  /* MDAnalysis's triclinic_vectors, exact at right angles */
  const double rad = 3.14159265358979323846 / 180;
  const double ca = v[3] == 90 ? 0 : cos(v[3] * rad), cb = v[4] == 90 ? 0 : cos(v[4] * rad);
  const double cg = v[5] == 90 ? 0 : cos(v[5] * rad), sg = v[5] == 90 ? 1 : sin(v[5] * rad);
  const double bx = v[1] * cg, by = v[1] * sg, cx = v[2] * cb, cy = v[2] * (ca - cb * cg) / sg;
  const double cz2 = v[2] * v[2] - cx * cx - cy * cy;
  if (!(cz2 > 0))
    return histd_fail(r->m.msg, r->m.msglen, HISTD_EPARSE, "line %zu: CRYST1's angles %g, %g, %g "
                      "make no cell", r->m.l.no, v[3], v[4], v[5]);
  r->box = (histd_box){HISTD_BOX_TRICLINIC, v[0], bx, by, cx, cy, sqrt(cz2)};
  return 0;
}

/* An ATOM or HETATM record, appended to the dataset. */
static int atom(reader *r, const char *ls, const char *le) {
  const size_t fno = r->m.frames.count + 1, len = (size_t)(le - ls);
  if (r->models && r->model == 0)
    return histd_fail(r->m.msg, r->m.msglen, HISTD_EPARSE, "line %zu: an atom outside MODEL ... "
                      "ENDMDL, in a file whose frames are models", r->m.l.no);
  if (len < 54)
    return histd_fail(r->m.msg, r->m.msglen, HISTD_EPARSE, "line %zu: atom %zu of frame %zu: the "
                      "line has %zu characters; x, y and z are columns 31-54", r->m.l.no,
                      r->m.atoms.i + 1, fno, len);
  if (r->max_points != 0 && r->m.used >= r->max_points)
    return histd_fail(r->m.msg, r->m.msglen, HISTD_ETOOBIG, "line %zu: more than %zu atoms, the "
                      "limit for this input", r->m.l.no, r->max_points);
  double v[3];
  static const char *const axis[3] = {"x", "y", "z"};
  int rc;
  for (int k = 0; k < 3; k++)
    if ((rc = number(r, ls, le, 31 + 8 * (size_t)k, 38 + 8 * (size_t)k, axis[k], &v[k])) != 0)
      return rc;
  histd__atom a;
  const char *s = ls, *e = ls;
  histd__columns(ls, le, 23, 26, &s, &e);
  if (!histd__whole(s, e, &a.resid)) {
    char q[64];
    histd__quote(q, sizeof q, s, (size_t)(e - s));
    return histd_fail(r->m.msg, r->m.msglen, HISTD_EPARSE, "line %zu: the residue number (columns "
                      "23-26) is '%s', not a whole number", r->m.l.no, q);
  }
  histd__columns(ls, le, 18, 21, &s, &e);
  histd__atom_str(a.resname, s, e);
  histd__columns(ls, le, 13, 16, &s, &e);
  histd__atom_str(a.name, s, e);
  a.chain = ls[21];
  if (!histd__columns(ls, le, 77, 78, &s, &e) || !histd__element_column(s, e, a.element))
    histd__guess_element(ls + 12, 4, a.resname, true, a.element);
  if ((rc = histd__atoms_add(&r->m.atoms, &a, r->m.l.no, r->m.msg, r->m.msglen)) != 0)
    return rc;
  return histd__mol_point(&r->m, v);
}

/* Ends the frame being read at line `line` (when it has atoms). */
static int end_frame(reader *r, size_t line) {
  return r->m.atoms.i == 0 ? 0 : histd__mol_frame(&r->m, line, &r->box);
}

/* MODEL, ENDMDL and END. */
static int model_record(reader *r, const char *ls, const char *le) {
  const size_t no = r->m.l.no;
  if (record(ls, le, "MODEL")) {
    if (r->model != 0)
      return histd_fail(r->m.msg, r->m.msglen, HISTD_EPARSE, "line %zu: MODEL inside the model "
                        "that line %zu opened (no ENDMDL before it)", no, r->model);
    if (r->m.atoms.i != 0)
      return histd_fail(r->m.msg, r->m.msglen, HISTD_EPARSE, "line %zu: MODEL after %zu atoms that "
                        "are in no model", no, r->m.atoms.i);
    r->model = no;
    r->models = true;
    return 0;
  }
  if (record(ls, le, "ENDMDL")) {
    if (r->model == 0)
      return histd_fail(r->m.msg, r->m.msglen, HISTD_EPARSE, "line %zu: ENDMDL without a MODEL",
                        no);
    if (r->m.atoms.i == 0)
      return histd_fail(r->m.msg, r->m.msglen, HISTD_EPARSE, "line %zu: the model that line %zu "
                        "opened (frame %zu) has no atoms", no, r->model, r->m.frames.count + 1);
    r->model = 0;
    return end_frame(r, no);
  }
  if (r->model != 0) /* END */
    return histd_fail(r->m.msg, r->m.msglen, HISTD_EPARSE, "line %zu: END inside the model that "
                      "line %zu opened (no ENDMDL before it)", no, r->model);
  return end_frame(r, no);
}

static int line(reader *r, const char *ls, const char *le) {
  if (record(ls, le, "ATOM") || record(ls, le, "HETATM"))
    return atom(r, ls, le);
  if (record(ls, le, "CRYST1"))
    return cryst1(r, ls, le);
  if (record(ls, le, "TER"))
    r->m.atoms.brk = true;
  else if (record(ls, le, "MODEL") || record(ls, le, "ENDMDL") || record(ls, le, "END"))
    return model_record(r, ls, le);
  return 0;
}

int histd__parse_pdb(const char *buf, size_t len, size_t max_points, histd_dataset *out,
                     char *msg, size_t msglen) {
  reader r;
  memset(&r, 0, sizeof r);
  r.max_points = max_points;
  int rc = histd__mol_open(&r.m, buf, len, "Angstrom", msg, msglen);
  if (rc != 0)
    return rc;
  const char *ls, *le;
  while (rc == 0 && histd__raw_line(&r.m.l, &ls, &le))
    rc = line(&r, ls, le);
  if (rc == 0 && r.model != 0)
    rc = histd_fail(msg, msglen, HISTD_EPARSE, "line %zu: the input ends inside frame %zu (the "
                    "model that line %zu opened has no ENDMDL): the last frame is truncated",
                    r.m.l.no + 1, r.m.frames.count + 1, r.model);
  if (rc == 0)
    rc = end_frame(&r, r.m.l.no + 1);
  if (rc == 0 && r.m.used == 0)
    rc = histd_fail(msg, msglen, HISTD_EPARSE, "no points: the input has no ATOM or HETATM "
                    "records");
  return histd__mol_close(&r.m, rc, out);
}
