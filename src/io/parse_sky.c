/*
 * parse_sky.c -- sky catalogues as text: sky-csv (a header naming ra, dec,
 * dist or z, w, region) and sky-json ({"ra": [...], "dec": [...], "z":
 * [...]}). The rules are in include/histd/io.h; each value is checked as it
 * is read, so a sentence names its line (CSV) or key and index (JSON); the
 * columns then go to histd__sky_finish (sky.c), which makes the points.
 *
 * Memory: the CSV's columns are reserved once for min(lines, (len + 1) / 6
 * + 1) rows (a row is at least "1,2,3" and a newline); the JSON's arrays
 * grow by doubling, each its own.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io_internal.h"

/* "line 7: dec '95' is outside [-90, 90] ..." when v cannot be column c's. */
static int check_value(int c, double v, const char *where, const char *tok, size_t tl,
                       char *msg, size_t msglen) {
  const char *why = histd__sky_bad_value(c, v);
  if (why == NULL)
    return 0;
  char q[64];
  histd__quote(q, sizeof q, tok, tl);
  return histd_fail(msg, msglen, HISTD_EPARSE, "%s: %s %s %s", where,
                    histd__sky_column_name(c), q, why);
}

/* ---- sky-csv --------------------------------------------------------------- */

/* The header [ls, le) into colof[field] (the sky column of each field, -1
 * for one ignored; malloc'd), *ncols and col[c] (the field of column c). */
static int sky_header(const char *ls, const char *le, size_t line, int **colof, size_t *ncols,
                      size_t col[HISTD__SKY_COLUMNS], char *msg, size_t msglen) {
  histd__fields it = {ls, le, 0, false};
  const char *tok;
  size_t tl, fields = 0;
  int r;
  while ((r = histd__next_field(&it, &tok, &tl)) == 1)
    fields++;
  if (r < 0)
    return histd_fail(msg, msglen, HISTD_EPARSE, "line %zu: header field %zu is empty", line,
                      it.idx + 1);
  int *of = malloc(fields * sizeof *of);
  if (of == NULL)
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %zu columns", fields);
  for (int c = 0; c < HISTD__SKY_COLUMNS; c++)
    col[c] = SIZE_MAX;
  it = (histd__fields){ls, le, 0, false};
  while (histd__next_field(&it, &tok, &tl) == 1) {
    const size_t f = it.idx - 1;
    const int c = histd__sky_column(tok, tl);
    of[f] = c;
    if (c < 0)
      continue;
    if (col[c] != SIZE_MAX) {
      free(of);
      return histd_fail(msg, msglen, HISTD_EPARSE, "line %zu: the header names the column %s "
                        "twice (fields %zu and %zu)", line, histd__sky_column_name(c),
                        col[c] + 1, f + 1);
    }
    col[c] = f;
  }
  char where[48];
  snprintf(where, sizeof where, "line %zu: the header", line);
  int rc = histd__sky_header_check(col, where, msg, msglen);
  if (rc != 0) {
    free(of);
    return rc;
  }
  *colof = of;
  *ncols = fields;
  return 0;
}

/* True when some field of the line reads as a number. */
static bool has_number(const char *ls, const char *le) {
  histd__fields it = {ls, le, 0, false};
  const char *tok;
  size_t tl;
  while (histd__next_field(&it, &tok, &tl) != 0)
    if (it.idx > 0 && tl > 0 && histd__looks_numeric(tok, tl))
      return true;
  return false;
}

int histd__parse_sky_csv(const char *buf, size_t len, size_t max_points,
                         const histd_sky_options *opt, histd_dataset *out, char *msg,
                         size_t msglen) {
  memset(out, 0, sizeof *out);
  const char *p = buf + histd__skip_bom(buf, len), *end = buf + len;
  const size_t cap = histd__csv_rows_cap(p, end, len, max_points);
  locale_t loc;
  int rc = histd__c_locale(&loc, msg, msglen);
  if (rc != 0)
    return rc;
  histd__sky_cols cols;
  memset(&cols, 0, sizeof cols);
  int *colof = NULL;
  size_t ncols = 0, col[HISTD__SKY_COLUMNS], line = 0, n = 0;
  bool header = false;
  while (p < end) {
    line++;
    const char *ls = p, *le = memchr(p, '\n', (size_t)(end - p));
    p = le ? le + 1 : end;
    if (le == NULL)
      le = end;
    if (le > ls && le[-1] == '\r')
      le--;
    while (ls < le && histd__is_blank(*ls))
      ls++;
    if (ls == le || *ls == '#')
      continue;
    if (!header) {
      if (has_number(ls, le)) {
        rc = histd_fail(msg, msglen, HISTD_EPARSE,
                        "line %zu: a sky catalogue starts with a header line naming its "
                        "columns (ra, dec, and dist or z; w and region optional)", line);
        goto fail;
      }
      if ((rc = sky_header(ls, le, line, &colof, &ncols, col, msg, msglen)) != 0)
        goto fail;
      bool want[HISTD__SKY_COLUMNS];
      for (int c = 0; c < HISTD__SKY_COLUMNS; c++)
        want[c] = col[c] != SIZE_MAX;
      if ((rc = histd__sky_cols_alloc(&cols, cap, want, msg, msglen)) != 0)
        goto fail;
      header = true;
      continue;
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
    histd__fields it = {ls, le, 0, false};
    const char *tok;
    size_t tl;
    int r;
    while ((r = histd__next_field(&it, &tok, &tl)) == 1) {
      const size_t f = it.idx - 1;
      const int c = f < ncols ? colof[f] : -1;
      if (c < 0)
        continue;
      double v;
      histd__num_status st = histd__parse_number(tok, tl, HISTD__NUM_TEXT, loc, &v);
      if (st != HISTD__NUM_OK) {
        char column[32];
        snprintf(column, sizeof column, " (column %s)", histd__sky_column_name(c));
        rc = histd__number_error(st, line, tok, tl, column, msg, msglen);
        goto fail;
      }
      char where[32];
      snprintf(where, sizeof where, "line %zu", line);
      if ((rc = check_value(c, v, where, tok, tl, msg, msglen)) != 0)
        goto fail;
      cols.v[c][n] = v;
    }
    if (r < 0) {
      rc = histd_fail(msg, msglen, HISTD_EPARSE, "line %zu: field %zu is empty", line,
                      it.idx + 1);
      goto fail;
    }
    if (it.idx != ncols) {
      rc = histd_fail(msg, msglen, HISTD_EPARSE,
                      "line %zu: expected %zu fields (as in the header), found %zu", line, ncols,
                      it.idx);
      goto fail;
    }
    n++;
  }
  freelocale(loc);
  free(colof);
  if (!header) {
    histd__sky_cols_free(&cols);
    return histd_fail(msg, msglen, HISTD_EPARSE,
                      "no points: the input is empty or only blank and comment lines");
  }
  cols.n = n;
  return histd__sky_finish(&cols, opt, out, msg, msglen);
fail:
  freelocale(loc);
  free(colof);
  histd__sky_cols_free(&cols);
  return rc;
}

/* ---- sky-json -------------------------------------------------------------- */

typedef struct jsky {
  const char *buf, *p, *end;
  locale_t loc;
  char *msg;
  size_t msglen;
  size_t max_points;
} jsky;

static void skip_ws(jsky *j) {
  while (j->p < j->end && (*j->p == ' ' || *j->p == '\n' || *j->p == '\r' || *j->p == '\t'))
    j->p++;
}

static bool is_delim(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == ',' || c == ']' || c == '}' ||
         c == '[' || c == '{' || c == ':' || c == '"';
}

/* "expected WHAT, found ... (line L, column C)", after `path: ` when given. */
static int expected(jsky *j, const char *path, const char *what) {
  size_t line = 1;
  const char *ls = j->buf;
  for (const char *q = j->buf; q < j->p; q++)
    if (*q == '\n') {
      line++;
      ls = q + 1;
    }
  char here[64];
  if (j->p >= j->end) {
    snprintf(here, sizeof here, "the end of the input");
  } else if (*j->p == '"') {
    snprintf(here, sizeof here, "a string");
  } else if (*j->p == '[' || *j->p == '{') {
    snprintf(here, sizeof here, "%s", *j->p == '[' ? "an array" : "an object");
  } else if (is_delim(*j->p)) {
    snprintf(here, sizeof here, "'%c'", *j->p);
  } else {
    size_t n = 0;
    while (j->p + n < j->end && !is_delim(j->p[n]))
      n++;
    char q[48];
    histd__quote(q, sizeof q, j->p, n);
    snprintf(here, sizeof here, "'%s'", q);
  }
  return histd_fail(j->msg, j->msglen, HISTD_EPARSE, "%s%sexpected %s, found %s (line %zu, "
                    "column %zu)", path ? path : "", path ? ": " : "", what, here, line,
                    (size_t)(j->p - ls) + 1);
}

/* A key: its text (escapes not decoded: no column's name has one) in
 * [*k, *k + *kl). */
static int key(jsky *j, const char **k, size_t *kl) {
  if (j->p >= j->end || *j->p != '"')
    return expected(j, NULL, "a key in double quotes");
  const char *s = ++j->p;
  while (j->p < j->end && *j->p != '"') {
    if ((unsigned char)*j->p < 0x20)
      return expected(j, NULL, "the key's closing quote");
    j->p += *j->p == '\\' && j->p + 1 < j->end ? 2 : 1;
  }
  if (j->p >= j->end)
    return expected(j, NULL, "the key's closing quote");
  *k = s;
  *kl = (size_t)(j->p - s);
  j->p++;
  return 0;
}

/* The array of numbers of column c into *vals (grown by doubling), *n of them. */
static int numbers(jsky *j, int c, double **vals, size_t *n) {
  const char *name = histd__sky_column_name(c);
  char path[48];
  if (j->p >= j->end || *j->p != '[')
    return expected(j, name, "an array of numbers");
  j->p++;
  size_t cap = 0, i = 0;
  skip_ws(j);
  if (j->p < j->end && *j->p == ']') {
    j->p++;
    *n = 0;
    return 0;
  }
  for (;;) {
    skip_ws(j);
    snprintf(path, sizeof path, "%s[%zu]", name, i);
    const char *t = j->p;
    while (j->p < j->end && !is_delim(*j->p))
      j->p++;
    if (j->p == t)
      return expected(j, path, "a number");
    double v;
    histd__num_status st = histd__parse_number(t, (size_t)(j->p - t), HISTD__NUM_JSON, j->loc, &v);
    if (st == HISTD__NUM_NOMEM)
      return histd_fail(j->msg, j->msglen, HISTD_ENOMEM, "%s: out of memory", path);
    if (st != HISTD__NUM_OK) {
      j->p = t;
      return expected(j, path, "a finite number");
    }
    int rc = check_value(c, v, path, t, (size_t)(j->p - t), j->msg, j->msglen);
    if (rc != 0)
      return rc;
    if (j->max_points != 0 && i >= j->max_points)
      return histd_fail(j->msg, j->msglen, HISTD_ETOOBIG,
                        "%s: more than %zu points, the limit for this input", name,
                        j->max_points);
    if (i == cap) {
      cap = cap ? 2 * cap : 1024;
      double *b = cap > SIZE_MAX / sizeof *b ? NULL : realloc(*vals, cap * sizeof *b);
      if (b == NULL)
        return histd_fail(j->msg, j->msglen, HISTD_ENOMEM, "%s: out of memory for %zu values",
                          name, cap);
      *vals = b;
    }
    (*vals)[i++] = v;
    skip_ws(j);
    if (j->p < j->end && *j->p == ',') {
      j->p++;
      continue;
    }
    if (j->p < j->end && *j->p == ']') {
      j->p++;
      break;
    }
    return expected(j, name, "',' or ']' after a number");
  }
  *n = i;
  return 0;
}

int histd__parse_sky_json(const char *buf, size_t len, size_t max_points,
                          const histd_sky_options *opt, histd_dataset *out, char *msg,
                          size_t msglen) {
  memset(out, 0, sizeof *out);
  jsky j = {.buf = buf, .p = buf, .end = buf + len, .msg = msg, .msglen = msglen,
            .max_points = max_points};
  j.p += histd__skip_bom(buf, len);
  skip_ws(&j);
  if (j.p >= j.end)
    return histd_fail(msg, msglen, HISTD_EPARSE, "empty input: no points");
  if (*j.p != '{')
    return expected(&j, NULL, "a JSON object such as {\"ra\": [...], \"dec\": [...], \"z\": "
                              "[...]}");
  int rc = histd__c_locale(&j.loc, msg, msglen);
  if (rc != 0)
    return rc;
  histd__sky_cols cols;
  memset(&cols, 0, sizeof cols);
  size_t count[HISTD__SKY_COLUMNS] = {0}, col[HISTD__SKY_COLUMNS];
  for (int c = 0; c < HISTD__SKY_COLUMNS; c++)
    col[c] = SIZE_MAX;
  j.p++;
  skip_ws(&j);
  if (j.p < j.end && *j.p == '}') {
    j.p++;
  } else {
    for (size_t k = 0;; k++) {
      skip_ws(&j);
      const char *name = NULL;
      size_t nl = 0;
      if ((rc = key(&j, &name, &nl)) != 0)
        goto fail;
      const int c = histd__sky_column(name, nl);
      char q[48];
      histd__quote(q, sizeof q, name, nl);
      if (c < 0) {
        rc = histd_fail(msg, msglen, HISTD_EPARSE, "unknown key \"%s\": a sky catalogue's keys "
                        "are \"ra\", \"dec\", \"dist\" or \"z\", \"w\" and \"region\"", q);
        goto fail;
      }
      if (col[c] != SIZE_MAX) {
        rc = histd_fail(msg, msglen, HISTD_EPARSE, "the key \"%s\" is given twice%s", q,
                        c == HISTD__SKY_W ? " (\"w\" and \"weight\" are the same column)" : "");
        goto fail;
      }
      col[c] = k;
      skip_ws(&j);
      if (j.p >= j.end || *j.p != ':') {
        rc = expected(&j, NULL, "':' after a key");
        goto fail;
      }
      j.p++;
      skip_ws(&j);
      if ((rc = numbers(&j, c, &cols.v[c], &count[c])) != 0)
        goto fail;
      skip_ws(&j);
      if (j.p < j.end && *j.p == ',') {
        j.p++;
        continue;
      }
      if (j.p < j.end && *j.p == '}') {
        j.p++;
        break;
      }
      rc = expected(&j, NULL, "',' or '}' after an array");
      goto fail;
    }
  }
  skip_ws(&j);
  if (j.p < j.end) {
    rc = expected(&j, NULL, "the end of the input after the object");
    goto fail;
  }
  if ((rc = histd__sky_header_check(col, "the object", msg, msglen)) != 0)
    goto fail;
  for (int c = 0; c < HISTD__SKY_COLUMNS; c++)
    if (col[c] != SIZE_MAX && count[c] != count[HISTD__SKY_RA]) {
      rc = histd_fail(msg, msglen, HISTD_EPARSE, "%s: has %zu values, but ra has %zu",
                      histd__sky_column_name(c), count[c], count[HISTD__SKY_RA]);
      goto fail;
    }
  freelocale(j.loc);
  cols.n = cols.cap = count[HISTD__SKY_RA];
  return histd__sky_finish(&cols, opt, out, msg, msglen);
fail:
  freelocale(j.loc);
  histd__sky_cols_free(&cols);
  return rc;
}
