/*
 * parse_json.c -- {"points": [[x, y, z], ...]} or {"x": [...], "y": [...], "z": [...]},
 * with weights as a "w" array beside either, or as a fourth number of every
 * point ([x, y, z, w]).
 *
 * A hand-written single-pass parser for exactly these two shapes, rather than
 * a general JSON tree: a tree of a million points is four million heap nodes
 * (hundreds of MB, and slow), while this writes each number straight into
 * the dataset. Memory is bounded before parsing starts: a valid document of
 * n points holds at least 3n-1 commas and 3n digits, so min(commas/3,
 * digits/3)+1 slots always suffice (and cost at most 4 bytes per input byte).
 *
 * Errors name the JSON path ("points[17]: expected 3 numbers, found 2",
 * "y: has 4 values, but x has 5"); syntax errors add the line and column.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io_internal.h"

typedef struct jparser {
  const char *buf, *p, *end;
  locale_t loc;
  char *msg;
  size_t msglen;
  histd_dataset *ds;
  size_t cap;        /* slots per axis in ds                              */
  size_t max_points; /* 0 = unlimited                                     */
  bool overflowed;   /* a value past cap was dropped (input must be bad)   */
  double *w;         /* NULL, or cap weights (allocated on the first one)  */
  size_t width;      /* numbers per point: 0 (none yet), 3, or 4 (x y z w) */
} jparser;

/* Room for the weights, on the first one. */
static int weights_room(jparser *j) {
  if (j->w == NULL && (j->w = malloc(j->cap * sizeof *j->w)) == NULL)
    return histd_fail(j->msg, j->msglen, HISTD_ENOMEM, "out of memory for %zu weights", j->cap);
  return 0;
}

static void skip_ws(jparser *j) {
  while (j->p < j->end &&
         (*j->p == ' ' || *j->p == '\n' || *j->p == '\r' || *j->p == '\t'))
    j->p++;
}

/* Consumes c if it is the next character. */
static bool eat(jparser *j, char c) {
  if (j->p >= j->end || *j->p != c)
    return false;
  j->p++;
  return true;
}

static bool is_delim(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == ',' || c == ']' ||
         c == '}' || c == '[' || c == '{' || c == ':' || c == '"';
}

/* A description of what starts at p, for "expected X, found Y". */
static void describe(const jparser *j, char *out, size_t outlen) {
  if (j->p >= j->end) {
    snprintf(out, outlen, "the end of the input");
    return;
  }
  char c = *j->p;
  if (c == '{') {
    snprintf(out, outlen, "an object");
  } else if (c == '[') {
    snprintf(out, outlen, "an array");
  } else if (c == '"') {
    snprintf(out, outlen, "a string");
  } else if (c == '-' || (c >= '0' && c <= '9')) {
    snprintf(out, outlen, "a number");
  } else if (is_delim(c)) {
    snprintf(out, outlen, "'%c'", c);
  } else {
    size_t n = 0;
    while (j->p + n < j->end && !is_delim(j->p[n]))
      n++;
    char q[64];
    histd__quote(q, sizeof q, j->p, n);
    if (strcmp(q, "true") == 0 || strcmp(q, "false") == 0 || strcmp(q, "null") == 0)
      snprintf(out, outlen, "%s", q);
    else
      snprintf(out, outlen, "'%s'", q);
  }
}

/* " (line L, column C)" of the parser's position. */
static void where(const jparser *j, char *out, size_t outlen) {
  size_t line = 1;
  const char *ls = j->buf;
  for (const char *q = j->buf; q < j->p; q++) {
    if (*q == '\n') {
      line++;
      ls = q + 1;
    }
  }
  snprintf(out, outlen, " (line %zu, column %zu)", line, (size_t)(j->p - ls) + 1);
}

/* Fails with "<prefix>expected <what>, found <here> (line, column)". */
static int expected(jparser *j, const char *path, const char *what) {
  char here[80], pos[64];
  describe(j, here, sizeof here);
  where(j, pos, sizeof pos);
  return histd_fail(j->msg, j->msglen, HISTD_EPARSE, "%s%sexpected %s, found %s%s",
                    path ? path : "", path && *path ? ": " : "", what, here, pos);
}

#define NO_INDEX SIZE_MAX

/* "key", "key[i]" or "key[i][k]": built only when an error needs it. */
static const char *path_of(char *buf, size_t n, const char *key, size_t i, size_t k) {
  if (i == NO_INDEX)
    snprintf(buf, n, "%s", key);
  else if (k == NO_INDEX)
    snprintf(buf, n, "%s[%zu]", key, i);
  else
    snprintf(buf, n, "%s[%zu][%zu]", key, i, k);
  return buf;
}

/* Parses a number at p into *v; key[i][k] names it in errors. */
static int number(jparser *j, const char *key, size_t i, size_t k, double *v) {
  char path[64];
  if (j->p >= j->end || is_delim(*j->p))
    return expected(j, path_of(path, sizeof path, key, i, k), "a number");
  const char *t = j->p;
  while (j->p < j->end && !is_delim(*j->p))
    j->p++;
  size_t len = (size_t)(j->p - t);
  histd__num_status st = histd__parse_number(t, len, HISTD__NUM_JSON, j->loc, v);
  if (st == HISTD__NUM_OK)
    return 0;
  char q[64], pos[64];
  path_of(path, sizeof path, key, i, k);
  switch (st) {
  case HISTD__NUM_NONFINITE:
    histd__quote(q, sizeof q, t, len);
    return histd_fail(j->msg, j->msglen, HISTD_EPARSE,
                      "%s: '%s' is not a finite number (JSON has no NaN or Infinity)", path, q);
  case HISTD__NUM_RANGE:
    histd__quote(q, sizeof q, t, len);
    return histd_fail(j->msg, j->msglen, HISTD_EPARSE,
                      "%s: %s is too large for a double (not a finite number)", path, q);
  case HISTD__NUM_NOMEM:
    return histd_fail(j->msg, j->msglen, HISTD_ENOMEM, "%s: out of memory", path);
  default:
    j->p = t;
    if (len == 4 && (memcmp(t, "true", 4) == 0 || memcmp(t, "null", 4) == 0))
      return expected(j, path, "a number");
    if (len == 5 && memcmp(t, "false", 5) == 0)
      return expected(j, path, "a number");
    histd__quote(q, sizeof q, t, len);
    where(j, pos, sizeof pos);
    return histd_fail(j->msg, j->msglen, HISTD_EPARSE, "%s: '%s' is not a valid JSON number%s",
                      path, q, pos);
  }
}

/* Index i is about to be stored: ETOOBIG past the limit, drop past cap. */
static int slot(jparser *j, const char *what, size_t i, bool *store) {
  if (j->max_points != 0 && i >= j->max_points)
    return histd_fail(j->msg, j->msglen, HISTD_ETOOBIG,
                      "%s: more than %zu points, the limit for this input", what,
                      j->max_points);
  *store = i < j->cap;
  if (!*store)
    j->overflowed = true;
  return 0;
}

/* "points": [[x, y, z], ...]; *n gets the point count. */
static int points_array(jparser *j, size_t *n) {
  char path[64];
  if (!eat(j, '['))
    return expected(j, "points", "an array of points [[x, y, z], ...]");
  skip_ws(j);
  size_t i = 0;
  if (eat(j, ']')) {
    *n = 0;
    return 0;
  }
  for (;;) {
    skip_ws(j);
    if (!eat(j, '['))
      return expected(j, path_of(path, sizeof path, "points", i, NO_INDEX), "an array [x, y, z]");
    double v[4] = {0, 0, 0, 0};
    size_t k = 0;
    for (;;) {
      skip_ws(j);
      if (eat(j, ']'))
        break;
      if (k > 0) {
        if (!eat(j, ','))
          return expected(j, path_of(path, sizeof path, "points", i, NO_INDEX),
                          "',' or ']' after a coordinate");
        skip_ws(j);
      }
      double d;
      int rc = number(j, "points", i, k, &d);
      if (rc != 0)
        return rc;
      if (k < 4)
        v[k] = d;
      k++;
    }
    if (j->width == 0 && (k == 3 || k == 4))
      j->width = k; /* the first point says whether they carry weights */
    if (k != j->width || k == 0)
      return histd_fail(j->msg, j->msglen, HISTD_EPARSE,
                        i == 0 ? "points[%zu]: expected 3 numbers (x, y, z) or 4 (x, y, z, w), "
                                 "found %zu"
                        : j->width == 4 ? "points[%zu]: expected 4 numbers (x, y, z, w) as "
                                          "points[0] has, found %zu"
                                        : "points[%zu]: expected 3 numbers as points[0] has, "
                                          "found %zu", i, k);
    bool store = false;
    int rc = slot(j, "points", i, &store);
    if (rc == 0 && k == 4)
      rc = weights_room(j);
    if (rc != 0)
      return rc;
    if (store) {
      j->ds->x[i] = v[0];
      j->ds->x[j->cap + i] = v[1];
      j->ds->x[2 * j->cap + i] = v[2];
      if (k == 4)
        j->w[i] = v[3];
    }
    i++;
    skip_ws(j);
    if (eat(j, ','))
      continue;
    if (eat(j, ']'))
      break;
    char what[64];
    snprintf(what, sizeof what, "',' or ']' after points[%zu]", i - 1);
    return expected(j, "points", what);
  }
  *n = i;
  return 0;
}

/* "x" / "y" / "z" / "w": [v, ...] into axis a (3: the weights); *n gets
 * the value count. */
static int axis_array(jparser *j, int a, size_t *n) {
  static const char *const names[4] = {"x", "y", "z", "w"};
  int rc0 = a == 3 ? weights_room(j) : 0;
  if (rc0 != 0)
    return rc0;
  if (!eat(j, '['))
    return expected(j, names[a], "an array of numbers");
  skip_ws(j);
  size_t i = 0;
  if (eat(j, ']')) {
    *n = 0;
    return 0;
  }
  for (;;) {
    skip_ws(j);
    double d;
    int rc = number(j, names[a], i, NO_INDEX, &d);
    if (rc != 0)
      return rc;
    bool store = false;
    rc = slot(j, names[a], i, &store);
    if (rc != 0)
      return rc;
    if (store && a == 3)
      j->w[i] = d;
    else if (store)
      j->ds->x[(size_t)a * j->cap + i] = d;
    i++;
    skip_ws(j);
    if (eat(j, ','))
      continue;
    if (eat(j, ']'))
      break;
    return expected(j, names[a], "',' or ']' after a number");
  }
  *n = i;
  return 0;
}

/* The body names "points" and the axis too. */
static int both_shapes(char *msg, size_t msglen, const char *axis) {
  return histd_fail(msg, msglen, HISTD_EPARSE,
                    "\"points\" and \"%s\" cannot both be given: use either "
                    "{\"points\": [[x, y, z], ...]} or {\"x\": [...], \"y\": [...], \"z\": [...]}",
                    axis);
}

static int hexval(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/* A key string at p. key gets its decoded text when it is short ASCII (else
 * ""); raw/rawlen the undecoded bytes for messages. */
static int key_string(jparser *j, char *key, size_t keycap, const char **raw, size_t *rawlen) {
  if (!eat(j, '"'))
    return expected(j, NULL, "a key in double quotes");
  *raw = j->p;
  size_t k = 0;
  bool usable = true;
  for (;;) {
    if (j->p >= j->end) {
      char pos[64];
      where(j, pos, sizeof pos);
      return histd_fail(j->msg, j->msglen, HISTD_EPARSE, "unterminated string%s", pos);
    }
    unsigned char c = (unsigned char)*j->p;
    if (c == '"')
      break;
    if (c < 0x20) {
      char pos[64];
      where(j, pos, sizeof pos);
      return histd_fail(j->msg, j->msglen, HISTD_EPARSE,
                        "control character in a string%s", pos);
    }
    int out = c;
    if (c == '\\') {
      if (j->end - j->p < 2)
        out = -1;
      else {
        switch (j->p[1]) {
        case '"': out = '"'; break;
        case '\\': out = '\\'; break;
        case '/': out = '/'; break;
        case 'b': out = '\b'; break;
        case 'f': out = '\f'; break;
        case 'n': out = '\n'; break;
        case 'r': out = '\r'; break;
        case 't': out = '\t'; break;
        case 'u': {
          out = -1;
          if (j->end - j->p >= 6) {
            int h = 0;
            for (int q = 2; q < 6 && h >= 0; q++) {
              int d = hexval(j->p[q]);
              h = d < 0 ? -1 : h * 16 + d;
            }
            if (h >= 0) {
              out = (h > 0 && h < 0x80) ? h : 0x80; /* NUL, non-ASCII: no key matches */
              j->p += 4;
            }
          }
          break;
        }
        default: out = -1;
        }
      }
      if (out < 0) {
        char pos[64];
        where(j, pos, sizeof pos);
        return histd_fail(j->msg, j->msglen, HISTD_EPARSE, "invalid escape in a string%s", pos);
      }
      j->p++;
    }
    j->p++;
    if (out >= 0x80 || k + 1 >= keycap)
      usable = false;
    else
      key[k++] = (char)out;
  }
  *rawlen = (size_t)(j->p - *raw);
  j->p++; /* closing quote */
  key[usable ? k : 0] = '\0';
  if (!usable)
    key[0] = '\0';
  return 0;
}

int histd__parse_json(const char *buf, size_t len, size_t max_points, histd_dataset *out,
                      char *msg, size_t msglen) {
  jparser j = {.buf = buf, .p = buf, .end = buf + len, .msg = msg, .msglen = msglen,
               .max_points = max_points};
  j.p += histd__skip_bom(buf, len);
  skip_ws(&j);
  if (j.p >= j.end)
    return histd_fail(msg, msglen, HISTD_EPARSE, "empty input: no points");
  if (*j.p != '{')
    return expected(&j, NULL, "a JSON object such as {\"points\": [[x, y, z], ...]}");

  /* The bound on the point count (see the top of the file). */
  size_t commas = 0, digits = 0;
  for (const char *q = j.p; q < j.end; q++) {
    commas += *q == ',';
    digits += (unsigned char)(*q - '0') <= 9;
  }
  size_t cap = commas / 3 + 1;
  if (digits / 3 + 1 < cap)
    cap = digits / 3 + 1;
  if (max_points != 0 && cap > max_points)
    cap = max_points;
  histd_dataset ds;
  int rc = histd__ds_reserve(&ds, cap, msg, msglen);
  if (rc != 0)
    return rc;
  j.ds = &ds;
  j.cap = cap;
  rc = histd__c_locale(&j.loc, msg, msglen);
  if (rc != 0) {
    histd_dataset_free(&ds);
    return rc;
  }

  static const char *const names[3] = {"x", "y", "z"};
  bool have_points = false, have_axis[3] = {false, false, false}, have_w = false;
  size_t n = 0, axis_n[3] = {0, 0, 0}, w_n = 0;
  int first_axis = -1;
  j.p++; /* '{' */
  skip_ws(&j);
  if (!eat(&j, '}')) {
    for (;;) {
      skip_ws(&j);
      char key[16];
      const char *raw = NULL;
      size_t rawlen = 0;
      if ((rc = key_string(&j, key, sizeof key, &raw, &rawlen)) != 0)
        goto fail;
      skip_ws(&j);
      if (!eat(&j, ':')) {
        char what[64];
        snprintf(what, sizeof what, "':' after the key \"%s\"", key);
        rc = expected(&j, NULL, what);
        goto fail;
      }
      skip_ws(&j);
      int a = -1;
      for (int q = 0; q < 3; q++)
        if (strcmp(key, names[q]) == 0)
          a = q;
      if (strcmp(key, "points") == 0) {
        if (have_points) {
          rc = histd_fail(msg, msglen, HISTD_EPARSE, "duplicate key \"points\"");
          goto fail;
        }
        if (first_axis >= 0) {
          rc = both_shapes(msg, msglen, names[first_axis]);
          goto fail;
        }
        have_points = true;
        if ((rc = points_array(&j, &n)) != 0)
          goto fail;
      } else if (a >= 0) {
        if (have_axis[a]) {
          rc = histd_fail(msg, msglen, HISTD_EPARSE, "duplicate key \"%s\"", names[a]);
          goto fail;
        }
        if (have_points) {
          rc = both_shapes(msg, msglen, names[a]);
          goto fail;
        }
        have_axis[a] = true;
        if ((rc = axis_array(&j, a, &axis_n[a])) != 0)
          goto fail;
        if (first_axis < 0) {
          first_axis = a;
        } else if (axis_n[a] != axis_n[first_axis]) {
          rc = histd_fail(msg, msglen, HISTD_EPARSE, "%s: has %zu values, but %s has %zu",
                          names[a], axis_n[a], names[first_axis], axis_n[first_axis]);
          goto fail;
        }
      } else if (strcmp(key, "w") == 0) {
        if (have_w) {
          rc = histd_fail(msg, msglen, HISTD_EPARSE, "duplicate key \"w\"");
          goto fail;
        }
        have_w = true;
        if ((rc = axis_array(&j, 3, &w_n)) != 0)
          goto fail;
      } else {
        char q[64];
        histd__quote(q, sizeof q, raw, rawlen);
        rc = histd_fail(msg, msglen, HISTD_EPARSE,
                        "unknown key \"%s\": expected \"points\", or \"x\", \"y\" and \"z\" "
                        "(and \"w\", the weights)", q);
        goto fail;
      }
      skip_ws(&j);
      if (eat(&j, ','))
        continue;
      if (eat(&j, '}'))
        break;
      rc = expected(&j, NULL, "',' or '}' after a value of the object");
      goto fail;
    }
  }
  skip_ws(&j);
  if (j.p < j.end) {
    char pos[64];
    where(&j, pos, sizeof pos);
    rc = histd_fail(msg, msglen, HISTD_EPARSE, "unexpected content after the JSON object%s", pos);
    goto fail;
  }
  if (!have_points) {
    if (first_axis < 0) {
      rc = histd_fail(msg, msglen, HISTD_EPARSE,
                      "no points: expected the key \"points\", or the keys \"x\", \"y\" and \"z\"");
      goto fail;
    }
    for (int a = 0; a < 3; a++) {
      if (!have_axis[a]) {
        rc = histd_fail(msg, msglen, HISTD_EPARSE, "missing the key \"%s\" (\"x\", \"y\" and \"z\" go together)",
                        names[a]);
        goto fail;
      }
    }
    n = axis_n[0];
  }
  if (n == 0) {
    rc = histd_fail(msg, msglen, HISTD_EPARSE, "no points: %s empty",
                    have_points ? "\"points\" is" : "\"x\", \"y\" and \"z\" are");
    goto fail;
  }
  if (have_w && j.width == 4) {
    rc = histd_fail(msg, msglen, HISTD_EPARSE,
                    "the weights are given twice: as \"w\" and as the points' fourth numbers");
    goto fail;
  }
  if (have_w && w_n != n) {
    rc = histd_fail(msg, msglen, HISTD_EPARSE, "w: has %zu values, but there are %zu points",
                    w_n, n);
    goto fail;
  }
  if (j.overflowed || n > cap) { /* impossible for valid input; never trust it */
    rc = histd_fail(msg, msglen, HISTD_EPARSE, "internal error: more points than the input can hold");
    goto fail;
  }
  freelocale(j.loc);
  rc = histd__ds_complete_all(&ds, cap, n, j.w, 0, NULL, NULL, msg, msglen);
  free(j.w);
  if (rc != 0)
    return rc;
  *out = ds;
  return 0;
fail:
  freelocale(j.loc);
  free(j.w);
  histd_dataset_free(&ds);
  return rc;
}
