/*
 * test_gro_pdb.c -- the GRO and PDB parsers: the files in tests/io/data that
 * GROMACS and MDAnalysis wrote (make_gro_pdb.py), every frame and atom
 * against what MDAnalysis reads back from them (FILE.ref: coordinates,
 * cell vectors, names, residues, molecules, elements); then small inputs
 * for what those files do not show (field widths other than %8.3f,
 * residue numbers that wrap, chains and TER, CRYST1's special cases, the
 * element guesses), and every malformed case, whose message must name its
 * line. Inputs are copied into heap blocks of exactly their length so that
 * the sanitizer build catches a read past the end.
 *
 * usage: test_gro_pdb DATA_DIR
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "../../src/io/molfile.h"
#include "histd/io.h"

#define G HISTD_FORMAT_GRO
#define P HISTD_FORMAT_PDB

static char msg[512];

static int parse(histd_format fmt, const char *text, size_t max, histd_dataset *ds) {
  const size_t len = strlen(text);
  char *copy = malloc(len ? len : 1);
  memcpy(copy, text, len);
  msg[0] = '\0';
  int rc = histd_parse(fmt, copy, len, max, ds, msg, sizeof msg);
  free(copy);
  return rc;
}

/* ---- the files real programs wrote -------------------------------------- */

typedef struct ref_atom {
  char name[16], resname[16], element[16];
  long long resid, mol;
} ref_atom;

static const char *top_str(const char *slots, size_t i) { return slots + i * HISTD_ATOM_STR; }

/* The topology of ds against the reference's atoms. */
static void check_atoms(const char *file, const histd_dataset *ds, const ref_atom *ra, size_t n) {
  const histd_topology *t = ds->top;
  CHECK(t != NULL && t->atoms == n && t->name && t->element && t->resname && t->resid && t->mol,
        "%s: a topology of %zu atoms with name, element, resname, resid, mol", file, n);
  if (t == NULL || t->atoms != n || !t->name || !t->element || !t->resname || !t->resid ||
      !t->mol)
    return;
  for (size_t i = 0; i < n; i++) {
    const char *el = strcmp(ra[i].element, "-") == 0 ? "" : ra[i].element;
    CHECK(strcmp(top_str(t->name, i), ra[i].name) == 0 &&
              strcmp(top_str(t->resname, i), ra[i].resname) == 0 &&
              strcmp(top_str(t->element, i), el) == 0 && t->resid[i] == ra[i].resid &&
              t->mol[i] == ra[i].mol,
          "%s atom %zu: histd %s %s %lld mol %lld element '%s', MDAnalysis %s %s %lld mol %lld "
          "element '%s'", file, i, top_str(t->name, i), top_str(t->resname, i),
          (long long)t->resid[i], (long long)t->mol[i], top_str(t->element, i), ra[i].name,
          ra[i].resname, ra[i].resid, ra[i].mol, el);
  }
}

/* Frame f's box against the reference's cell vectors (a, b, c by rows). */
static void check_box(const char *file, size_t f, const histd_box *b, const double v[9],
                      double tol) {
  CHECK(v[1] == 0 && v[2] == 0 && v[5] == 0, "%s frame %zu: MDAnalysis's cell is not "
        "lower-triangular", file, f);
  const bool tilted = v[3] != 0 || v[6] != 0 || v[7] != 0;
  const histd_box_kind kind = v[0] == 0 ? HISTD_BOX_NONE
                              : tilted  ? HISTD_BOX_TRICLINIC
                                        : HISTD_BOX_ORTHO;
  const double got[6] = {b->ax, b->bx, b->by, b->cx, b->cy, b->cz};
  const double want[6] = {v[0], v[3], v[4], v[6], v[7], v[8]};
  CHECK(b->kind == kind, "%s frame %zu: box kind %d, want %d", file, f, (int)b->kind, (int)kind);
  for (int k = 0; k < 6 && kind != HISTD_BOX_NONE; k++)
    CHECK(fabs(got[k] - want[k]) <= tol, "%s frame %zu: box component %d is %.9g, MDAnalysis "
          "%.9g", file, f, k, got[k], want[k]);
}

/* FILE parsed by histd against FILE.ref: positions and cells to `tol`. */
static void against_reference(const char *dir, const char *file, double tol, double box_tol) {
  char path[1024], refpath[1100];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  snprintf(refpath, sizeof refpath, "%s.ref", path);
  histd_format fmt;
  histd_dataset ds;
  CHECK(histd_format_from_path(path, &fmt) == 0, "%s: no format from the name", file);
  int rc = histd_parse_file(path, fmt, 0, &ds, msg, sizeof msg);
  CHECK(rc == 0, "%s: %s", file, msg);
  FILE *ref = fopen(refpath, "r");
  CHECK(ref != NULL, "cannot open %s", refpath);
  if (rc != 0 || ref == NULL) {
    if (ref)
      fclose(ref);
    if (rc == 0)
      histd_dataset_free(&ds);
    return;
  }
  size_t n = 0, frames = 0;
  CHECK(fscanf(ref, "atoms %zu frames %zu", &n, &frames) == 2 && n > 0, "%s: header", refpath);
  ref_atom *ra = calloc(n ? n : 1, sizeof *ra);
  for (size_t i = 0; i < n; i++)
    CHECK(fscanf(ref, " a %15s %15s %lld %lld %15s", ra[i].name, ra[i].resname, &ra[i].resid,
                 &ra[i].mol, ra[i].element) == 5, "%s: atom %zu", refpath, i);
  CHECK(ds.n == n * frames && histd_dataset_frames(&ds) == frames,
        "%s: %zu points in %zu frames, MDAnalysis %zu atoms x %zu frames", file, ds.n,
        histd_dataset_frames(&ds), n, frames);
  check_atoms(file, &ds, ra, n);
  double worst = 0;
  for (size_t f = 0; f < frames && ds.n == n * frames; f++) {
    double v[9];
    CHECK(fscanf(ref, " box %lf %lf %lf %lf %lf %lf %lf %lf %lf", &v[0], &v[1], &v[2], &v[3],
                 &v[4], &v[5], &v[6], &v[7], &v[8]) == 9, "%s: box of frame %zu", refpath, f);
    histd_dataset view;
    histd_dataset_frame(&ds, f, &view);
    check_box(file, f, &view.box, v, box_tol);
    for (size_t i = 0; i < n; i++) {
      double p[3];
      CHECK(fscanf(ref, "%lf %lf %lf", &p[0], &p[1], &p[2]) == 3, "%s: frame %zu atom %zu",
            refpath, f, i);
      const double got[3] = {view.x[i], view.y[i], view.z[i]};
      for (int a = 0; a < 3; a++) {
        worst = fmax(worst, fabs(got[a] - p[a]));
        CHECK(fabs(got[a] - p[a]) <= tol, "%s frame %zu atom %zu axis %d: histd %.9g, "
              "MDAnalysis %.9g", file, f, i, a, got[a], p[a]);
      }
    }
  }
  const char *unit = fmt == G ? "nm" : "Angstrom";
  CHECK(strcmp(ds.unit, unit) == 0, "%s: unit '%s', want '%s'", file, ds.unit, unit);
  printf("%s: %zu atoms x %zu frames match MDAnalysis (largest difference %.2g)\n", file, n,
         frames, worst);
  free(ra);
  fclose(ref);
  histd_dataset_free(&ds);
}

/* ---- small inputs -------------------------------------------------------- */

/* Parses text (expecting success) into ds. */
static bool good(int line, histd_format fmt, const char *text, histd_dataset *ds) {
  int rc = parse(fmt, text, 0, ds);
  CHECK(rc == 0, "line %d: rc %d: %s", line, rc, msg);
  return rc == 0;
}

/* Expects HISTD_EPARSE (or want_rc) with every key word in the message. */
static void bad_rc(int line, histd_format fmt, const char *text, size_t max, int want_rc, ...) {
  histd_dataset ds;
  memset(&ds, 0xAB, sizeof ds);
  int rc = parse(fmt, text, max, &ds);
  CHECK(rc == want_rc, "line %d (%s): rc %d, want %d; message \"%s\"", line,
        histd_format_name(fmt), rc, want_rc, msg);
  CHECK(ds.n == 0 && ds.x == NULL && ds.top == NULL, "line %d: dataset not left empty", line);
  if (rc == 0)
    histd_dataset_free(&ds);
  va_list ap;
  va_start(ap, want_rc);
  for (const char *k; (k = va_arg(ap, const char *)) != NULL;)
    CHECK(strstr(msg, k) != NULL, "line %d: message \"%s\" lacks \"%s\"", line, msg, k);
  va_end(ap);
}
#define BAD(fmt, text, ...) bad_rc(__LINE__, fmt, text, 0, HISTD_EPARSE, __VA_ARGS__, NULL)

static const char gro2[] =
    "two waters\n"
    "    6\n"
    "    1SOL     OW    1   0.126   1.624   1.679  0.1227 -0.0580  0.0434\n"
    "    1SOL    HW1    2   0.190   1.661   1.747  0.8085  0.3191 -0.7791\n"
    "    1SOL    HW2    3   0.177   1.568   1.613 -0.9045 -2.0536  0.3924\n"
    "    2SOL     OW    4   1.275   0.053   0.622  0.2519  0.3140 -0.1360\n"
    "    2SOL    HW1    5   1.337   0.002   0.680  1.0980 -0.2640  0.2170\n"
    "    2SOL    HW2    6   1.326   0.120   0.568  1.1000  0.1000 -0.1000\n"
    "   1.86206   1.86206   1.86206\n";

static void test_gro_small(void) {
  histd_dataset ds;
  /* %10.5f fields, velocities after them, CRLF, no final newline */
  if (good(__LINE__, G,
           "wide\r\n 2\r\n"
           "    1SOL     OW    1   0.12345  -1.23456  12.34567   0.123456   0.234567\r\n"
           "    2NA      NA    2  -0.00001   0.00000  99.99999\r\n"
           "   2.0 2.0 2.0", &ds)) {
    CHECK(ds.n == 2 && ds.x[0] == 0.12345 && ds.y[0] == -1.23456 && ds.z[0] == 12.34567 &&
              ds.x[1] == -0.00001 && ds.z[1] == 99.99999, "%%10.5f fields");
    CHECK(ds.box.kind == HISTD_BOX_ORTHO && ds.box.ax == 2, "a box of 3 numbers");
    CHECK(strcmp(top_str(ds.top->element, 1), "Na") == 0, "NA of residue NA is sodium");
    histd_dataset_free(&ds);
  }
  /* GROMACS's order of the nine numbers: v1x v2y v3z v1y v1z v2x v2z v3x v3y */
  if (good(__LINE__, G, "t\n1\n    1A        A    1   0.100   0.200   0.300\n"
                        "1 2 3 0 0 0.4 0 0.5 0.6\n", &ds)) {
    const histd_box b = ds.box;
    CHECK(b.kind == HISTD_BOX_TRICLINIC && b.ax == 1 && b.by == 2 && b.cz == 3 && b.bx == 0.4 &&
              b.cx == 0.5 && b.cy == 0.6, "triclinic box %g %g %g %g %g %g", b.ax, b.bx, b.by,
          b.cx, b.cy, b.cz);
    histd_dataset_free(&ds);
  }
  if (good(__LINE__, G, "vacuum\n1\n    1A        A    1   0.100   0.200   0.300\n"
                        "   0.00000   0.00000   0.00000\n", &ds)) {
    CHECK(ds.box.kind == HISTD_BOX_NONE, "a box of zeros is open space");
    histd_dataset_free(&ds);
  }
  /* residue numbers wrap at 99999: the molecule counter follows changes */
  if (good(__LINE__, G, "wrap\n4\n"
                        "99999SOL     OW    1   0.100   0.200   0.300\n"
                        "99999SOL    HW1    2   0.100   0.200   0.300\n"
                        "    0SOL     OW    3   0.100   0.200   0.300\n"
                        "    0NA      NA    4   0.100   0.200   0.300\n"
                        "1 1 1\n", &ds)) {
    const int64_t *mol = ds.top->mol, *resid = ds.top->resid;
    CHECK(mol[0] == 1 && mol[1] == 1 && mol[2] == 2 && mol[3] == 3, "mols %lld %lld %lld %lld",
          (long long)mol[0], (long long)mol[1], (long long)mol[2], (long long)mol[3]);
    CHECK(resid[0] == 99999 && resid[2] == 0, "resids as written");
    histd_dataset_free(&ds);
  }
  /* two frames, blank lines between them; a blank title for frame 1 */
  char two[2048];
  snprintf(two, sizeof two, "\n%s\n\n%s", gro2 + strlen("two waters\n"), gro2);
  if (good(__LINE__, G, two, &ds)) {
    CHECK(ds.n == 12 && histd_dataset_frames(&ds) == 2 && ds.top->atoms == 6 &&
              ds.top->mol[5] == 2, "two frames of 6 atoms, 2 molecules");
    histd_dataset_free(&ds);
  }
}

static void test_gro_errors(void) {
  const char *atom = "    1SOL     OW    1   0.126   1.624   1.679\n";
  char buf[4096];
  BAD(G, "", "no points");
  BAD(G, "  \n\n", "no points");
  BAD(G, "t\nabc\n", "line 2", "atom count");
  BAD(G, "t\n", "line 2", "atom count");
  BAD(G, "t\n0\n1 1 1\n", "line 2", "is 0");
  BAD(G, "t\n-3\n", "line 2", "atom count");
  snprintf(buf, sizeof buf, "t\n1\n%.30s\n1 1 1\n", atom);
  BAD(G, buf, "line 3", "decimal points");
  BAD(G, "t\n1\n    1SOL     OW    1   0.126   1.624  1.679\n1 1 1\n", "line 3", "evenly");
  BAD(G, "t\n2\n    1SOL     OW    1   0.126   1.624   1.679\n"
         "    1SOL     OW    1   0.126   1.624\n1 1 1\n", "line 4", "atom 2 of frame 1");
  BAD(G, "t\n1\n    1SOL     OW    1   0.126   1.6x4   1.679\n1 1 1\n", "line 3", "y (columns "
      "29-36)", "1.6x4");
  BAD(G, "t\n2\n    1SOL     OW    1   0.126   1.624   1.679\n"
         "    1SOL     OW    1   0.126   1.624     nan\n1 1 1\n", "line 4", "z", "finite");
  BAD(G, "t\n1\n    xSOL     OW    1   0.126   1.624   1.679\n1 1 1\n", "line 3",
      "residue number");
  snprintf(buf, sizeof buf, "t\n1\n%s1 1\n", atom);
  BAD(G, buf, "line 4", "box of frame 1", "found 2");
  snprintf(buf, sizeof buf, "t\n1\n%s1 1 x\n", atom);
  BAD(G, buf, "line 4", "box of frame 1", "'x'");
  snprintf(buf, sizeof buf, "t\n1\n%s1 1 1 0.5 0 0 0 0 0\n", atom);
  BAD(G, buf, "line 4", "lower-triangular");
  snprintf(buf, sizeof buf, "t\n1\n%s1 -1 1\n", atom);
  BAD(G, buf, "line 4", "length <= 0");
  snprintf(buf, sizeof buf, "t\n1\n%s1 1e200 1\n", atom); /* histd.h's range */
  BAD(G, buf, "frame 1", "y length, 1e+200, is beyond 2^250");
  /* a truncated last frame: atoms missing, or the box */
  snprintf(buf, sizeof buf, "%st\n6\n%s", gro2, atom);
  BAD(G, buf, "line 11", "announces 6 atoms for frame 2", "ends after 1");
  snprintf(buf, sizeof buf, "%.*s", (int)(strlen(gro2) - strlen("   1.86206   1.86206   1.86206\n")),
           gro2);
  BAD(G, buf, "line 9", "box of frame 1");
  /* a frame whose atoms differ from frame 1's */
  snprintf(buf, sizeof buf, "%st\n1\n%s1 1 1\n", gro2, atom);
  BAD(G, buf, "line 11", "frame 2 has 1 atoms, frame 1 has 6");
  snprintf(buf, sizeof buf, "%s%s", gro2, gro2);
  char *hw = strstr(buf + strlen(gro2), "HW2");
  memcpy(hw, "HW3", 3);
  BAD(G, buf, "line 14", "atom 3 of frame 2 (HW3 of SOL 1) is not frame 1's (HW2 of SOL 1)");
  bad_rc(__LINE__, G, gro2, 5, HISTD_ETOOBIG, "line 2", NULL);
  snprintf(buf, sizeof buf, "%s%s", gro2, gro2);
  bad_rc(__LINE__, G, buf, 10, HISTD_ETOOBIG, "line 11", NULL);
}

static const char pdb_frame[] =
    "MODEL        1\n"
    "ATOM      1  N   ALA A   1      11.104   6.134  -6.504  1.00  0.00           N\n"
    "ATOM      2  CA  ALA A   1      11.639   6.071  -5.147  1.00  0.00           C\n"
    "TER\n"
    "HETATM    3  O   HOH A   2       1.000   2.000   3.000  1.00  0.00           O\n"
    "ENDMDL\n";

static void test_pdb_small(void) {
  histd_dataset ds;
  /* no MODEL; chains and TER start molecules; elements guessed or read */
  if (good(__LINE__, P,
           "REMARK  made by hand\n"
           "CRYST1   10.000   20.000   30.000  90.00  90.00  90.00 P 1           1\n"
           "ATOM      1  CA  GLY A   1       1.000   2.000   3.000\n"
           "ATOM      2 CA   CA  A   2       1.500   2.500   3.500\n"
           "ATOM      3 CA   CA  B   2       1.000   2.000   3.000  1.00  0.00          CA\n"
           "ATOM      4  N   GLY B   2       1.000   2.000   3.000  1.00  0.00\n"
           "TER       5      GLY B   2\n"
           "HETATM    6  O   GLY B   2      -1.000  -2.000  -3.000  1.00  0.00          ?!\n"
           "ATOM      7 HG11 VAL B   3       0.000   0.000   0.000  1.00  0.00           7\n"
           "END\n", &ds)) {
    const histd_topology *t = ds.top;
    static const char *const el[] = {"C", "Ca", "Ca", "N", "O", "H"};
    static const int64_t mol[] = {1, 2, 3, 4, 5, 6}; /* residue, chain, residue, TER, residue */
    for (size_t i = 0; i < 6; i++)
      CHECK(strcmp(top_str(t->element, i), el[i]) == 0 && t->mol[i] == mol[i],
            "atom %zu: element %s mol %lld, want %s %lld", i, top_str(t->element, i),
            (long long)t->mol[i], el[i], (long long)mol[i]);
    CHECK(strcmp(top_str(t->name, 5), "HG11") == 0 && t->resid[5] == 3, "HG11 of VAL 3");
    CHECK(ds.box.kind == HISTD_BOX_ORTHO && ds.box.ax == 10 && ds.box.by == 20 &&
              ds.box.cz == 30, "CRYST1 of right angles");
    CHECK(ds.x[4] == -1 && ds.z[4] == -3, "HETATM coordinates");
    histd_dataset_free(&ds);
  }
  /* CRYST1 1 1 1 90 90 90: no cell; END-separated frames */
  if (good(__LINE__, P,
           "CRYST1    1.000    1.000    1.000  90.00  90.00  90.00 P 1           1\n"
           "ATOM      1  O   HOH     1       1.000   2.000   3.000\n"
           "END\n"
           "ATOM      1  O   HOH     1       4.000   5.000   6.000\n"
           "END\n", &ds)) {
    CHECK(ds.box.kind == HISTD_BOX_NONE && histd_dataset_frames(&ds) == 2 && ds.x[1] == 4,
          "END-separated frames in open space");
    histd_dataset_free(&ds);
  }
  /* models, with a CRYST1 between them */
  char buf[4096];
  snprintf(buf, sizeof buf, "%sCRYST1   10.000   10.000   10.000  60.00  60.00  90.00\n%s",
           pdb_frame, pdb_frame);
  if (good(__LINE__, P, buf, &ds)) {
    histd_dataset f1;
    histd_dataset_frame(&ds, 1, &f1);
    const histd_box b = f1.box;
    CHECK(histd_dataset_frames(&ds) == 2 && ds.box.kind == HISTD_BOX_NONE &&
              b.kind == HISTD_BOX_TRICLINIC && b.ax == 10 && b.bx == 0 && b.by == 10 &&
              fabs(b.cx - 5) < 1e-12 && fabs(b.cy - 5) < 1e-12 &&
              fabs(b.cz - sqrt(50)) < 1e-12, "frame 2's box %g %g %g %g %g %g", b.ax, b.bx,
          b.by, b.cx, b.cy, b.cz);
    histd_dataset_free(&ds);
  }
}

static void test_pdb_errors(void) {
  char buf[4096];
  /* pdb_frame's lines: MODEL, the atoms N and CA, TER, HETATM O, ENDMDL */
  const char *n = strchr(pdb_frame, '\n') + 1, *ca = strchr(n, '\n') + 1;
  const int atom = (int)(ca - n), body = (int)(strstr(pdb_frame, "ENDMDL") - n);
  BAD(P, "", "no points");
  BAD(P, "REMARK nothing\nEND\n", "no points");
  BAD(P, "ATOM      1  N   ALA A   1      11.104   6.134\n", "line 1", "columns 31-54");
  BAD(P, "ATOM      1  N   ALA A   1      11.104   6.1x4  -6.504\n", "line 1", "y (columns 39-46)");
  BAD(P, "ATOM      1  N   ALA A   x      11.104   6.134  -6.504\n", "line 1", "residue number");
  BAD(P, "CRYST1   10.000   20.000\n", "line 1", "CRYST1");
  BAD(P, "CRYST1   10.000   20.000   30.000  90.00  90.00 190.00 P 1\n", "line 1", "angles");
  BAD(P, "CRYST1   10.000   20.000   30.000  10.00  10.00 170.00 P 1\n", "line 1", "no cell");
  BAD(P, "CRYST1   10.000   20.000   3x.000  90.00  90.00  90.00 P 1\n", "line 1", "CRYST1's c");
  snprintf(buf, sizeof buf, "CRYST1 1.00e-99   20.000   30.000  90.00  90.00  90.00 P 1\n%s",
           pdb_frame);
  BAD(P, buf, "frame 1", "is below 2^-250");
  snprintf(buf, sizeof buf, "MODEL 1\n%s", pdb_frame);
  BAD(P, buf, "line 2", "MODEL inside the model that line 1 opened");
  BAD(P, "ENDMDL\n", "line 1", "ENDMDL without a MODEL");
  BAD(P, "MODEL 1\nENDMDL\n", "line 2", "no atoms");
  /* a truncated last frame: no ENDMDL */
  snprintf(buf, sizeof buf, "%sMODEL 2\n%.*s", pdb_frame, body, n);
  BAD(P, buf, "line 12", "ends inside frame 2", "line 7", "truncated");
  snprintf(buf, sizeof buf, "MODEL 1\n%.*sEND\n", body, n);
  BAD(P, buf, "line 6", "END inside the model");
  snprintf(buf, sizeof buf, "%s%.*s", pdb_frame, body, n);
  BAD(P, buf, "line 7", "outside MODEL");
  snprintf(buf, sizeof buf, "%.*s%s", body, n, pdb_frame);
  BAD(P, buf, "line 5", "MODEL after 3 atoms");
  /* frames whose atoms differ */
  snprintf(buf, sizeof buf, "%sMODEL 2\n%.*sENDMDL\n", pdb_frame, atom, n);
  BAD(P, buf, "line 9", "frame 2 has 1 atoms, frame 1 has 3");
  snprintf(buf, sizeof buf, "%s%s", pdb_frame, pdb_frame);
  memcpy(strstr(buf + strlen(pdb_frame), "CA  ALA"), "CB", 2);
  BAD(P, buf, "line 9", "atom 2 of frame 2 (CB of ALA 1) is not frame 1's (CA of ALA 1)");
  snprintf(buf, sizeof buf, "MODEL 1\n%.*sTER\n%.*sENDMDL\nMODEL 2\n%.*sENDMDL\n", atom, n,
           atom, ca, 2 * atom, n);
  BAD(P, buf, "line 8", "atom 2 of frame 2 (CA of ALA 1)", "molecules"); /* no TER before it */
  snprintf(buf, sizeof buf, "%sMODEL 2\n%.*s%.*sENDMDL\n", pdb_frame, body, n, atom, n);
  BAD(P, buf, "line 12", "more atoms than frame 1's 3");
  bad_rc(__LINE__, P, pdb_frame, 2, HISTD_ETOOBIG, "line 5", NULL);
}

/* The element guesses of molfile.h, one by one. */
static void test_elements(void) {
  static const struct {
    const char *name, *resname;
    bool pdb;
    const char *el;
  } cases[] = {
      {"OW", "SOL", false, "O"},     {"HW1", "SOL", false, "H"},   {"CA", "ALA", false, "C"},
      {"CA", "CA", false, "Ca"},     {"NA", "NA", false, "Na"},    {"CL", "CL", false, "Cl"},
      {"CL1", "LIG", false, "Cl"},   {"ZN", "ZN2", false, "Zn"},   {"1HB", "ALA", false, "H"},
      {"HG11", "VAL", false, "H"},   {"SOD", "SOD", false, "Na"},  {"CLA", "CLA", false, "Cl"},
      {"POT", "POT", false, "K"},    {"MW", "SOL", false, ""},     {"", "SOL", false, ""},
      {"K", "K", false, "K"},        {" CA ", "ALA", true, "C"},   {"CA  ", "CA", true, "Ca"},
      {"NA  ", "NA", true, "Na"},    {" NA ", "XX", true, "N"},    {"HG11", "VAL", true, "H"},
      {"1HB ", "ALA", true, "H"},    {" OW ", "SOL", true, "O"},   {"CL  ", "CL", true, "Cl"},
      {"    ", "X", true, ""},        {"BR  ", "BR", true, "Br"},   {"FE  ", "HEM", true, "Fe"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    char out[HISTD_ATOM_STR];
    histd__guess_element(cases[k].name, strlen(cases[k].name), cases[k].resname, cases[k].pdb,
                         out);
    CHECK(strcmp(out, cases[k].el) == 0, "'%s' of %s (%s): '%s', want '%s'", cases[k].name,
          cases[k].resname, cases[k].pdb ? "pdb" : "gro", out, cases[k].el);
  }
}

static void test_formats(void) {
  histd_format f;
  CHECK(histd_format_parse("gro", &f) == 0 && f == G, "gro");
  CHECK(histd_format_parse("PDB", &f) == 0 && f == P, "pdb");
  CHECK(histd_format_from_path("a/b.GRO", &f) == 0 && f == G, ".gro");
  CHECK(histd_format_from_path("1abc.pdb", &f) == 0 && f == P, ".pdb");
  CHECK(histd_format_from_path("pdb1abc.ent", &f) == 0 && f == P, ".ent");
  CHECK(histd_format_from_content_type("chemical/x-pdb", &f) == 0 && f == P, "chemical/x-pdb");
  CHECK(histd_format_from_content_type("application/x-gro; charset=us-ascii", &f) == 0 && f == G,
        "application/x-gro");
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_gro_pdb DATA_DIR\n");
    return 2;
  }
  against_reference(argv[1], "water.gro", 1e-3, 1e-4);
  against_reference(argv[1], "frames.gro", 1e-3, 1e-4);
  against_reference(argv[1], "peptide.gro", 1e-3, 1e-4);
  against_reference(argv[1], "frames_gmx.pdb", 1e-3, 1e-3);
  against_reference(argv[1], "peptide.pdb", 1e-3, 1e-3);
  test_gro_small();
  test_gro_errors();
  test_pdb_small();
  test_pdb_errors();
  test_elements();
  test_formats();
  return check_finish("test_gro_pdb");
}
