/*
 * molfile.h -- what the GRO and PDB parsers share (molfile.c): lines read
 * with their columns kept, fixed-column fields, the element guessed from
 * an atom name, and the atoms of frame 1 (the topology) against which
 * every later frame is held: GRO and PDB trajectories list their atoms in
 * order, with no id to sort by, so frame k's atom i must be frame 1's.
 */
#ifndef HISTD_MOLFILE_H
#define HISTD_MOLFILE_H

#include <stdint.h>

#include "io_internal.h"

/* Whether [s, e) holds nothing but blanks. */
static inline bool histd__blank(const char *s, const char *e) {
  while (s < e && histd__is_blank(*s))
    s++;
  return s == e;
}

/* Columns from..to (1-based, inclusive) of the line [ls, le), cut at its
 * end and trimmed of blanks, into [*fs, *fe); false when the line ends
 * before column `from`. */
static inline bool histd__columns(const char *ls, const char *le, size_t from, size_t to,
                                  const char **fs, const char **fe) {
  const size_t len = (size_t)(le - ls);
  if (len < from)
    return false;
  const char *s = ls + from - 1, *e = ls + (to < len ? to : len);
  while (s < e && histd__is_blank(*s))
    s++;
  while (e > s && histd__is_blank(e[-1]))
    e--;
  *fs = s;
  *fe = e;
  return true;
}

/* [s, e) as a whole number: an optional sign and 1 to 18 digits. */
bool histd__whole(const char *s, const char *e, int64_t *out);

/* Copies [s, e) into a NUL-padded HISTD_ATOM_STR slot (cut at 7 bytes). */
void histd__atom_str(char dst[HISTD_ATOM_STR], const char *s, const char *e);

/*
 * The element of an atom from its name, for files that do not say it: the
 * first letter when it is H C N O P S F I or K, or the first two when they
 * are Cl Br Na Mg Ca Fe Zn Cu or Li and the name says so, as follows.
 * Leading digits ("1HB") are skipped. CHARMM's ions SOD, POT, CLA and CAL
 * (an atom named as its residue) are Na, K, Cl and Ca. "" when unsure.
 *   GRO (pdb false; the name trimmed): a two-letter symbol when the name's
 *       letters are exactly those two ("NA", "CL", "ZN2"), except CA,
 *       which is a protein's C-alpha unless its residue is named CA too.
 *   PDB (pdb true; the name's four columns 13-16 as they are): a two-letter
 *       symbol when the name starts in column 13 (the PDB's convention for
 *       two-letter elements: "CA  " is calcium, " CA " a C-alpha).
 * So OW, HW1 -> O, H; CA -> C; NA (residue NA) -> Na; HG11 -> H; MW -> "".
 */
void histd__guess_element(const char *name, size_t len, const char *resname, bool pdb,
                          char out[HISTD_ATOM_STR]);

/* An element column (PDB's 77-78, trimmed): one or two letters, written
 * as a symbol ("CL" -> "Cl"); false for anything else. */
bool histd__element_column(const char *s, const char *e, char out[HISTD_ATOM_STR]);

/* One atom as a GRO or PDB file describes it. */
typedef struct histd__atom {
  char name[HISTD_ATOM_STR], resname[HISTD_ATOM_STR], element[HISTD_ATOM_STR];
  int64_t resid;
  int64_t mol; /* set by histd__atoms_add */
  char chain;  /* PDB's chain id; ' ' for GRO */
} histd__atom;

/* The atoms of the frames read so far. */
typedef struct histd__atoms {
  histd__atom *first; /* frame 1's atoms, n of them (cap allocated) */
  size_t n, cap;
  size_t frame;       /* the frame being read, from 1      */
  size_t i;           /* its atoms read so far              */
  histd__atom prev;   /* its last atom                      */
  int64_t mol;        /* its molecule counter               */
  bool brk;           /* a TER since prev: a new molecule   */
} histd__atoms;

/* The next atom of the frame being read, from the line `line`. Its
 * molecule (a->mol) is the frame's counter, which starts at 1 and moves
 * on whenever the residue number, residue name or chain changes from the
 * previous atom's, or a TER came between them (residue numbers wrap in
 * both formats, so changes count, not numbers). Frame 1's atoms are kept;
 * a later frame's must equal frame 1's atom at the same place, or the
 * sentence names the line. */
int histd__atoms_add(histd__atoms *t, histd__atom *a, size_t line, char *msg, size_t msglen);

/* A GRO or PDB file being read: its lines, the points and frames so far
 * (ds reserved for cap points, used of them filled), and the atoms. */
typedef struct histd__mol {
  const char *unit; /* the format's length unit, for ds.unit */
  histd__lines l;
  locale_t loc;
  char *msg;
  size_t msglen;
  histd_dataset ds;
  size_t cap, used;
  histd__frames frames;
  histd__atoms atoms;
} histd__mol;

/* Starts reading buf[0..len) (after a byte-order mark), a format whose
 * coordinates are in `unit` ("nm", "Angstrom"). */
int histd__mol_open(histd__mol *m, const char *buf, size_t len, const char *unit, char *msg,
                    size_t msglen);

/* Appends a point, growing the arrays (doubling) when they are full. */
int histd__mol_point(histd__mol *m, const double v[3]);

/* Ends the frame of the atoms added since the last one, with its box, at
 * line `line`: a later frame must have as many atoms as frame 1. */
int histd__mol_frame(histd__mol *m, size_t line, const histd_box *box);

/* When rc is 0, finishes the dataset (bounds, frames, its unit, and frame
 * 1's atoms as its topology: name, element, resname, resid, mol) into *out; frees
 * the rest either way. Returns rc, or the error finishing it. */
int histd__mol_close(histd__mol *m, int rc, histd_dataset *out);

#endif
