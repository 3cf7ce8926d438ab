/*
 * parse_csv.c -- one point per line, comma- or blank-separated, optional header.
 *
 * The rules are in include/histd/io.h. Memory: one pass counts the lines,
 * then the dataset is reserved for min(lines, (len+1)/6 + 1) points (a data
 * line is at least "1,2,3" plus a newline) and shrunk to size at the end, so
 * the parser never holds more than the float64 payload plus that slack, and
 * nothing is allocated per line. Each number is copied into a small stack
 * buffer for strtod_l (C locale), correctly rounded.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "io_internal.h"

int histd__next_field(histd__fields *it, const char **tok, size_t *tl) {
  while (it->q < it->le && histd__is_blank(*it->q))
    it->q++;
  if (it->q == it->le)
    return it->after_comma ? -1 : 0;
  if (*it->q == ',')
    return -1;
  const char *s = it->q;
  while (it->q < it->le && !histd__is_blank(*it->q) && *it->q != ',')
    it->q++;
  *tok = s;
  *tl = (size_t)(it->q - s);
  it->idx++;
  while (it->q < it->le && histd__is_blank(*it->q))
    it->q++;
  it->after_comma = false;
  if (it->q < it->le && *it->q == ',') {
    it->q++;
    it->after_comma = true;
  }
  return 1;
}

int histd__number_error(histd__num_status st, size_t line, const char *tok, size_t tl,
                        const char *column, char *msg, size_t msglen) {
  char q[64];
  histd__quote(q, sizeof q, tok, tl);
  switch (st) {
  case HISTD__NUM_NONFINITE:
    return histd_fail(msg, msglen, HISTD_EPARSE, "line %zu: '%s' is not a finite number%s",
                      line, q, column);
  case HISTD__NUM_RANGE:
    return histd_fail(msg, msglen, HISTD_EPARSE,
                      "line %zu: %s is too large for a double (not a finite number)%s", line,
                      q, column);
  case HISTD__NUM_NOMEM:
    return histd_fail(msg, msglen, HISTD_ENOMEM, "line %zu: out of memory", line);
  default:
    return histd_fail(msg, msglen, HISTD_EPARSE, "line %zu: '%s' is not a number%s", line, q,
                      column);
  }
}

static bool name_is(const char *tok, size_t tl, char axis) {
  if (tl >= 2 && tok[0] == '"' && tok[tl - 1] == '"') {
    tok++;
    tl -= 2;
  }
  return tl == 1 && (tok[0] == axis || tok[0] == axis - 'a' + 'A');
}

/* Reads the header line [ls, le): sets *ncols and col[5] (col[3], the
 * weight column "w" or "weight"; col[4], the molecule id column "mol" or
 * "molecule", for exclusions; SIZE_MAX when there is none). */
static int read_header(const char *ls, const char *le, size_t line, size_t *ncols,
                       size_t col[5], char *msg, size_t msglen) {
  histd__fields it = {ls, le, 0, false};
  const char *tok;
  size_t tl;
  int r;
  bool found[3] = {false, false, false};
  col[3] = col[4] = SIZE_MAX;
  while ((r = histd__next_field(&it, &tok, &tl)) == 1) {
    if (col[4] == SIZE_MAX && ((tl == 3 && strncasecmp(tok, "mol", 3) == 0) ||
                               (tl == 8 && strncasecmp(tok, "molecule", 8) == 0)))
      col[4] = it.idx - 1;
    for (int a = 0; a < 3; a++) {
      if (!found[a] && name_is(tok, tl, (char)('x' + a))) {
        found[a] = true;
        col[a] = it.idx - 1;
      }
    }
    if (col[3] == SIZE_MAX && (name_is(tok, tl, 'w') ||
                               (tl == 6 && strncasecmp(tok, "weight", 6) == 0)))
      col[3] = it.idx - 1;
  }
  if (r < 0)
    return histd_fail(msg, msglen, HISTD_EPARSE, "line %zu: header field %zu is empty", line,
                      it.idx + 1);
  *ncols = it.idx;
  if (found[0] && found[1] && found[2])
    return 0;
  bool sky[2] = {false, false}; /* ra and dec: a sky catalogue, not points */
  histd__fields again = {ls, le, 0, false};
  while (histd__next_field(&again, &tok, &tl) == 1) {
    const int c = histd__sky_column(tok, tl);
    if (c == HISTD__SKY_RA || c == HISTD__SKY_DEC)
      sky[c] = true;
  }
  if (sky[0] && sky[1])
    return histd_fail(msg, msglen, HISTD_EPARSE,
                      "line %zu: the header names ra and dec, a sky catalogue: upload it as "
                      "sky-csv (?format=sky-csv), which makes points of ra, dec and dist or z",
                      line);
  if (it.idx == 3 || (it.idx == 4 && col[3] == 3)) {
    col[0] = 0, col[1] = 1, col[2] = 2;
    return 0;
  }
  return histd_fail(msg, msglen, HISTD_EPARSE,
                    "line %zu: the header has %zu columns but does not name all of x, y and z",
                    line, it.idx);
}

/* The number of fields of a data line (for a file without a header). */
static size_t count_fields(const char *ls, const char *le) {
  histd__fields it = {ls, le, 0, false};
  const char *tok;
  size_t tl;
  while (histd__next_field(&it, &tok, &tl) == 1)
    ;
  return it.idx;
}

/* True when no field of the line reads as a number: the line is a header. */
static bool is_header(const char *ls, const char *le) {
  const char *q = ls;
  while (q < le) {
    while (q < le && (histd__is_blank(*q) || *q == ','))
      q++;
    const char *t = q;
    while (q < le && !histd__is_blank(*q) && *q != ',')
      q++;
    if (q > t && histd__looks_numeric(t, (size_t)(q - t)))
      return false;
  }
  return true;
}

size_t histd__csv_rows_cap(const char *p, const char *end, size_t len, size_t max_points) {
  size_t lines = 1;
  for (const char *q = p; (q = memchr(q, '\n', (size_t)(end - q))) != NULL; q++)
    lines++;
  size_t cap = lines;
  if ((len + 1) / 6 + 1 < cap)
    cap = (len + 1) / 6 + 1;
  if (max_points != 0 && cap > max_points)
    cap = max_points;
  return cap;
}

int histd__parse_csv(const char *buf, size_t len, size_t max_points, histd_dataset *out,
                     char *msg, size_t msglen) {
  const char *p = buf + histd__skip_bom(buf, len), *end = buf + len;
  const size_t cap = histd__csv_rows_cap(p, end, len, max_points);
  histd_dataset ds;
  int rc = histd__ds_reserve(&ds, cap, msg, msglen);
  if (rc != 0)
    return rc;
  locale_t loc;
  if ((rc = histd__c_locale(&loc, msg, msglen)) != 0) {
    histd_dataset_free(&ds);
    return rc;
  }
  double *xs = ds.x, *ys = ds.x + cap, *zs = ds.x + 2 * cap, *ws = NULL;
  int64_t *mols = NULL; /* a "mol" column's molecule ids */

  size_t n = 0, line = 0;
  bool seen_content = false, header = false;
  size_t ncols = 3, col[5] = {0, 1, 2, SIZE_MAX, SIZE_MAX};
  while (p < end) {
    line++;
    const char *ls = p, *le = memchr(p, '\n', (size_t)(end - p));
    if (le == NULL) {
      le = end;
      p = end;
    } else {
      p = le + 1;
    }
    if (le > ls && le[-1] == '\r')
      le--;
    while (ls < le && histd__is_blank(*ls))
      ls++;
    if (ls == le || *ls == '#')
      continue;
    if (!seen_content) {
      seen_content = true;
      if (is_header(ls, le)) {
        header = true;
        if ((rc = read_header(ls, le, line, &ncols, col, msg, msglen)) != 0)
          goto fail;
      } else if (count_fields(ls, le) == 4) { /* x y z w, no header */
        ncols = 4;
        col[3] = 3;
      }
      if (col[3] != SIZE_MAX && (ws = malloc(cap * sizeof *ws)) == NULL) {
        rc = histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %zu weights", cap);
        goto fail;
      }
      if (col[4] != SIZE_MAX && (mols = malloc(cap * sizeof *mols)) == NULL) {
        rc = histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %zu molecule ids", cap);
        goto fail;
      }
      if (header)
        continue;
    }
    histd__fields it = {ls, le, 0, false};
    const char *tok;
    size_t tl;
    int r;
    double v[5] = {0, 0, 0, 0, 0};
    while ((r = histd__next_field(&it, &tok, &tl)) == 1) {
      size_t f = it.idx - 1;
      int a = -1;
      for (int c = 0; c < 5 && a < 0; c++)
        if (f == col[c])
          a = c;
      if (a < 0)
        continue;
      histd__num_status st = histd__parse_number(tok, tl, HISTD__NUM_TEXT, loc, &v[a]);
      if (st != HISTD__NUM_OK) {
        char column[32] = "";
        if (ncols != 3)
          snprintf(column, sizeof column, " (column %s)", (const char *[]){"x", "y", "z", "w",
                                                                           "mol"}[a]);
        rc = histd__number_error(st, line, tok, tl, column, msg, msglen);
        goto fail;
      }
      if (a == 4 && !(v[4] == floor(v[4]) && fabs(v[4]) <= 0x1p53)) {
        char q[64];
        histd__quote(q, sizeof q, tok, tl);
        rc = histd_fail(msg, msglen, HISTD_EPARSE,
                        "line %zu: the molecule id '%s' is not a whole number", line, q);
        goto fail;
      }
    }
    if (r < 0) {
      rc = histd_fail(msg, msglen, HISTD_EPARSE, "line %zu: field %zu is empty", line,
                      it.idx + 1);
      goto fail;
    }
    if (it.idx != ncols) {
      if (!header)
        rc = histd_fail(msg, msglen, HISTD_EPARSE, "line %zu: expected %zu numbers%s, found %zu",
                        line, ncols, ncols == 4 ? " (x, y, z and a weight, as on the first line)" : "",
                        it.idx);
      else
        rc = histd_fail(msg, msglen, HISTD_EPARSE,
                        "line %zu: expected %zu fields (as in the header), found %zu", line,
                        ncols, it.idx);
      goto fail;
    }
    if (max_points != 0 && n >= max_points) {
      rc = histd_fail(msg, msglen, HISTD_ETOOBIG,
                      "line %zu: more than %zu points, the limit for this input", line,
                      max_points);
      goto fail;
    }
    if (n >= cap) { /* impossible (see the top of the file); never trust it */
      rc = histd_fail(msg, msglen, HISTD_EPARSE,
                      "line %zu: internal error: more points than the input can hold", line);
      goto fail;
    }
    xs[n] = v[0];
    ys[n] = v[1];
    zs[n] = v[2];
    if (ws != NULL)
      ws[n] = v[3];
    if (mols != NULL)
      mols[n] = (int64_t)v[4];
    n++;
  }
  freelocale(loc);
  if (n == 0) {
    free(ws);
    free(mols);
    histd_dataset_free(&ds);
    return histd_fail(msg, msglen, HISTD_EPARSE, "no points: the input %s",
                      header ? "has a header but no data lines"
                      : seen_content ? "has no data lines"
                                     : "is empty or only blank and comment lines");
  }
  rc = histd__ds_complete_all(&ds, cap, n, ws, 0, NULL, NULL, msg, msglen);
  free(ws);
  if (rc == 0 && mols != NULL) { /* (complete_all freed ds when it failed) */
    rc = histd_topology_alloc(&ds, n, HISTD_TOP_MOL, msg, msglen);
    if (rc == 0)
      memcpy(ds.top->mol, mols, n * sizeof *mols);
    else
      histd_dataset_free(&ds);
  }
  free(mols);
  if (rc != 0)
    return rc;
  *out = ds;
  return 0;
fail:
  freelocale(loc);
  free(mols);
  free(ws);
  histd_dataset_free(&ds);
  return rc;
}
