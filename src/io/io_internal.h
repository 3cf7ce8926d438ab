/*
 * io_internal.h -- private helpers shared by the parsers in src/io.
 * Nothing outside src/io (and its tests) includes it.
 */
#ifndef HISTD_IO_INTERNAL_H
#define HISTD_IO_INTERNAL_H

#include <locale.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "histd/io.h"

/* One parser per format: same contract as histd_parse(). */
int histd__parse_json(const char *buf, size_t len, size_t max_points,
                      histd_dataset *out, char *msg, size_t msglen);
int histd__parse_csv(const char *buf, size_t len, size_t max_points,
                     histd_dataset *out, char *msg, size_t msglen);
int histd__parse_xyz(const char *buf, size_t len, size_t max_points,
                     histd_dataset *out, char *msg, size_t msglen);
int histd__parse_lammps(const char *buf, size_t len, size_t max_points,
                        histd_dataset *out, char *msg, size_t msglen);
int histd__parse_dcd(const char *buf, size_t len, size_t max_points,
                     histd_dataset *out, char *msg, size_t msglen);
/* AMBER NetCDF through libnetcdf; without it (HISTD_HAVE_NETCDF unset) an
 * error saying histd was built without NetCDF support. */
int histd__parse_netcdf(const char *buf, size_t len, size_t max_points,
                        histd_dataset *out, char *msg, size_t msglen);
int histd__parse_gro(const char *buf, size_t len, size_t max_points, histd_dataset *out,
                     char *msg, size_t msglen);
int histd__parse_pdb(const char *buf, size_t len, size_t max_points, histd_dataset *out,
                     char *msg, size_t msglen);
int histd__parse_raw(const char *buf, size_t len, bool f32, size_t max_points,
                     histd_dataset *out, char *msg, size_t msglen);
int histd__parse_xtc(const char *buf, size_t len, size_t max_points, histd_dataset *out,
                     char *msg, size_t msglen);
int histd__parse_trr(const char *buf, size_t len, size_t max_points, histd_dataset *out,
                     char *msg, size_t msglen);
/* The sky catalogues (parse_sky.c, parse_fits.c): histd_parse's contract,
 * with the options of histd_parse_with (NULL: the defaults). parse_fits
 * without cfitsio (HISTD_HAVE_CFITSIO unset): an error saying histd was
 * built without FITS support. */
int histd__parse_sky_csv(const char *buf, size_t len, size_t max_points,
                         const histd_sky_options *opt, histd_dataset *out, char *msg,
                         size_t msglen);
int histd__parse_sky_json(const char *buf, size_t len, size_t max_points,
                          const histd_sky_options *opt, histd_dataset *out, char *msg,
                          size_t msglen);
int histd__parse_fits(const char *buf, size_t len, size_t max_points,
                      const histd_sky_options *opt, histd_dataset *out, char *msg,
                      size_t msglen);

/* ---- sky catalogues (sky.c) -------------------------------------------- */

/* The columns a sky catalogue may have, by name (histd__sky_column). */
enum {
  HISTD__SKY_RA,
  HISTD__SKY_DEC,
  HISTD__SKY_DIST,
  HISTD__SKY_Z,
  HISTD__SKY_W,
  HISTD__SKY_REGION,
  HISTD__SKY_COLUMNS
};
/* "ra", "dec", "dist", "z", "w", "region". */
const char *histd__sky_column_name(int column);
/* The column a name (case-insensitive, quotes allowed; "weight" is w)
 * stands for, or -1. */
int histd__sky_column(const char *name, size_t len);
/* Why v cannot be a value of the column ("is outside [-90, 90] ..."), or
 * NULL when it can. */
const char *histd__sky_bad_value(int column, double v);
/* The columns found (col[c] their index, SIZE_MAX when absent) make a
 * catalogue: ra, dec and exactly one of dist and z; else HISTD_EPARSE with
 * a sentence about `where` ("the header", "the object"). */
int histd__sky_header_check(const size_t col[HISTD__SKY_COLUMNS], const char *where,
                            char *msg, size_t msglen);
/* A catalogue's columns as read: v[c] n values (NULL: no such column). */
typedef struct histd__sky_cols {
  size_t n, cap;
  double *v[HISTD__SKY_COLUMNS];
} histd__sky_cols;
/* Room for cap values of each column wanted. */
int histd__sky_cols_alloc(histd__sky_cols *c, size_t cap, const bool want[HISTD__SKY_COLUMNS],
                          char *msg, size_t msglen);
void histd__sky_cols_free(histd__sky_cols *c);
/* The points of checked columns (io.h's rule), as a new dataset: x, y, z,
 * the sky columns, weights and regions, regions assigned when the options
 * ask. The columns are freed, whatever the outcome. */
int histd__sky_finish(histd__sky_cols *c, const histd_sky_options *opt, histd_dataset *out,
                      char *msg, size_t msglen);

/* ---- numbers ----------------------------------------------------------- */

typedef enum histd__num_status {
  HISTD__NUM_OK,        /* a finite double                                 */
  HISTD__NUM_SYNTAX,    /* not a number at all                             */
  HISTD__NUM_NONFINITE, /* "nan", "inf", "infinity" (any case, any sign)   */
  HISTD__NUM_RANGE,     /* a number whose magnitude overflows a double     */
  HISTD__NUM_NOMEM      /* a very long token could not be copied          */
} histd__num_status;

/* The grammar the caller accepts: strict JSON numbers, or the decimal
 * numbers of the text formats (optional '+', ".5", "5."). */
typedef enum histd__num_grammar { HISTD__NUM_JSON, HISTD__NUM_TEXT } histd__num_grammar;

/*
 * Converts tok[0..len) (not NUL-terminated) into *out, correctly rounded,
 * in the C locale `loc`. Never reads outside the token.
 */
histd__num_status histd__parse_number(const char *tok, size_t len, histd__num_grammar g,
                                      locale_t loc, double *out);

/* True when the token reads as a number or as nan/inf (used by the CSV
 * header test). */
bool histd__looks_numeric(const char *tok, size_t len);

/* Copies a token for an error message: at most 40 bytes, non-printable
 * bytes as '?', "..." when cut. */
void histd__quote(char *dst, size_t dstlen, const char *tok, size_t len);

/* The C locale for strtod_l: created per parse, freed after. */
int histd__c_locale(locale_t *out, char *msg, size_t msglen);

/* ---- CSV fields (parse_csv.c), for the sky CSV too ---------------------- */

/* Field iterator over one line [q, le). */
typedef struct histd__fields {
  const char *q, *le;
  size_t idx;       /* index of the next field                         */
  bool after_comma; /* a ',' was consumed, so another field must follow */
} histd__fields;
/* 1: a field in tok/tl (index it->idx - 1); 0: end of line; -1: an empty
 * field (its index is it->idx). */
int histd__next_field(histd__fields *it, const char **tok, size_t *tl);
/* The sentence for a number that did not parse (st), on `line`, `column` a
 * suffix such as " (column x)". */
int histd__number_error(histd__num_status st, size_t line, const char *tok, size_t tl,
                        const char *column, char *msg, size_t msglen);

/* ---- datasets under construction --------------------------------------- */

/* Allocates room for `cap` points (x at 0, y at cap, z at 2*cap). */
int histd__ds_reserve(histd_dataset *ds, size_t cap, char *msg, size_t msglen);

/* Shrinks a dataset reserved for `cap` points to its first n points (moving
 * y and z down) and finishes it (bounds, finiteness). Frees it on failure. */
int histd__ds_complete(histd_dataset *ds, size_t cap, size_t n, char *msg,
                       size_t msglen);

/* Grows a dataset reserved for *cap points (and the weights *ws, when ws
 * and *ws are not NULL) to at least `need`, doubling; y and z move up. */
int histd__ds_grow(histd_dataset *ds, size_t *cap, size_t need, double **ws, char *msg,
                   size_t msglen);

/* The frames a parser has read: their point counts and boxes. */
typedef struct histd__frames {
  size_t count, cap;
  size_t *counts;
  histd_box *boxes;
} histd__frames;
/* Adds a frame of n points in box; every parser's boxes pass here, and one
 * outside the range histd.h states (histd_box_check) is HISTD_EPARSE with
 * the frame's number and the reason. */
int histd__frames_add(histd__frames *t, size_t n, const histd_box *box, char *msg,
                      size_t msglen);
void histd__frames_free(histd__frames *t);

/* The periodic box of the cell vectors a = v[0..3), b = v[3..6), c =
 * v[6..9), as histd_box wants them: lower-triangular (ay = az = bz = 0,
 * as LAMMPS and GROMACS write them) with ax, by, cz > 0; orthorhombic when
 * bx = cx = cy = 0, else triclinic. Returns 0, HISTD__BOX_NOT_LOWER or
 * HISTD__BOX_NOT_POSITIVE (box untouched): the caller's message says so. */
enum { HISTD__BOX_NOT_LOWER = 1, HISTD__BOX_NOT_POSITIVE = 2 };
int histd__box_from_vectors(const double v[9], histd_box *box);

/* histd__ds_complete, then the weights ws[0..n) (when not NULL) and the
 * frame table (when frames > 0: counts and boxes). Frees ds on failure. */
int histd__ds_complete_all(histd_dataset *ds, size_t cap, size_t n, const double *ws,
                           size_t frames, const size_t *counts, const histd_box *boxes,
                           char *msg, size_t msglen);

/* Skips a UTF-8 byte-order mark. */
size_t histd__skip_bom(const char *buf, size_t len);
/* The most rows a CSV body from p to end can hold: its lines, and no more
 * than one per 6 bytes (the shortest row, "0,0,0\n"), nor than max_points
 * (0: no bound); what a parser reserves before it reads. */
size_t histd__csv_rows_cap(const char *p, const char *end, size_t len, size_t max_points);

static inline bool histd__is_blank(char c) { return c == ' ' || c == '\t'; }

/* Line-by-line reading for the line formats (xyz, lammps, gro, pdb): the
 * next line without its newline and a CR before it (histd__raw_line: its
 * blanks kept, so columns count from its first byte), or without its
 * surrounding blanks too (histd__next_line); `no` counts the lines
 * returned. */
typedef struct histd__lines {
  const char *p, *end;
  size_t no;
} histd__lines;

static inline bool histd__raw_line(histd__lines *l, const char **ls, const char **le) {
  if (l->p >= l->end)
    return false;
  const char *s = l->p, *e = (const char *)memchr(s, '\n', (size_t)(l->end - s));
  l->p = e ? e + 1 : l->end;
  if (e == NULL)
    e = l->end;
  if (e > s && e[-1] == '\r')
    e--;
  *ls = s;
  *le = e;
  l->no++;
  return true;
}

static inline bool histd__next_line(histd__lines *l, const char **ls, const char **le) {
  if (!histd__raw_line(l, ls, le))
    return false;
  const char *s = *ls, *e = *le;
  while (s < e && histd__is_blank(*s))
    s++;
  while (e > s && histd__is_blank(e[-1]))
    e--;
  *ls = s;
  *le = e;
  return true;
}

/* The next blank-separated token of [*q, e), or NULL at the end. */
static inline const char *histd__token(const char **q, const char *e, size_t *tl) {
  while (*q < e && histd__is_blank(**q))
    (*q)++;
  const char *s = *q;
  while (*q < e && !histd__is_blank(**q))
    (*q)++;
  *tl = (size_t)(*q - s);
  return *tl ? s : NULL;
}


/* ---- writers ----------------------------------------------------------- */

/* The shortest of %.15g, %.16g, %.17g that reads back as v, in the C locale
 * (the caller passes one from histd__c_locale and has it in use). */
void histd__format_double(char *buf, size_t buflen, double v, locale_t loc);

/*
 * The values of one field of a result, in order (write_*.c): element by
 * element through the schema's getter, a pair list's column batch by batch
 * from its file. values_next is false at the end, or on a read error
 * (then err is HISTD_EIO).
 */
#include "histd/schema.h"
typedef struct histd__values {
  const histd_field *f;
  const histd_result *r;
  uint64_t i, n, acc;
  histd_pair_record *batch; /* PAIRS: records [first, first + have) */
  uint64_t first;
  size_t have;
  int err;
} histd__values;
void histd__values_open(histd__values *it, const histd_field *f, const histd_result *r);
bool histd__values_next(histd__values *it, histd_fvalue *v);
void histd__values_close(histd__values *it);
/* Whether field f of r goes to output `out` (HISTD_OUT_*): the output
 * carries it and r has it. */
bool histd__field_shown(const histd_field *f, const histd_result *r, unsigned out);
/* f's CSV and text name: its column, else group.name, else name. */
void histd__field_column(const histd_field *f, char *buf, size_t len);
/* The fields of shape s1 or s2 that output `out` shows for r, in the
 * schema's order, each with its values (a table's columns). close: the
 * first read error, or 0. */
#define HISTD__MAX_TABLE 64
typedef struct histd__table {
  const histd_field *f[HISTD__MAX_TABLE];
  histd__values it[HISTD__MAX_TABLE];
  size_t n;
} histd__table;
void histd__table_open(histd__table *c, const histd_result *r, unsigned out,
                         histd_fshape s1, histd_fshape s2);
int histd__table_close(histd__table *c);
/* Every scalar that output `out` shows for r but `skip` (NULL: none), a
 * line each: prefix, its column name, ": ", the value as put() writes it. */
typedef void (*histd__put_value)(void *user, histd_ftype type, const histd_fvalue *v);
void histd__scalar_lines(FILE *f, const histd_result *r, unsigned out, const char *prefix,
                         const histd_field *skip, histd__put_value put, void *user);

#endif
