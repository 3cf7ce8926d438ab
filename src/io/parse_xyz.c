/*
 * parse_xyz.c -- the molecular XYZ format, one frame.
 *
 *     3
 *     water, any comment
 *     O  0.000  0.000  0.117
 *     H  0.000  0.757 -0.470
 *     H  0.000 -0.757 -0.470
 *
 * The element is any token (symbol or atomic number); columns after z
 * (extended XYZ) are ignored. The count must match the atom lines; after
 * them only blank lines may follow, so a multi-frame trajectory is rejected
 * with a sentence saying so rather than silently cut to its first frame.
 * Memory: min(count, (len+1)/8 + 1) slots (an atom line is at least
 * "H 1 2 3" plus a newline), so a lying count cannot make us allocate.
 */
#include <stdio.h>
#include <string.h>

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
  histd__next_line(&l, &ls, &le);
  size_t count;
  if (!parse_count(ls, le, &count)) {
    histd__quote(q, sizeof q, ls, (size_t)(le - ls));
    return histd_fail(msg, msglen, HISTD_EPARSE,
                      "line 1: expected the atom count (a whole number), found '%s'", q);
  }
  if (count == 0)
    return histd_fail(msg, msglen, HISTD_EPARSE, "line 1: the atom count is 0: no points");
  if (max_points != 0 && count > max_points)
    return histd_fail(msg, msglen, HISTD_ETOOBIG,
                      "line 1: %zu atoms is more than %zu points, the limit for this input",
                      count, max_points);
  if (!histd__next_line(&l, &ls, &le))
    return histd_fail(msg, msglen, HISTD_EPARSE,
                      "line 2: missing the comment line after the atom count");

  size_t cap = count;
  if ((len + 1) / 8 + 1 < cap)
    cap = (len + 1) / 8 + 1;
  histd_dataset ds;
  int rc = histd__ds_reserve(&ds, cap, msg, msglen);
  if (rc != 0)
    return rc;
  locale_t loc;
  if ((rc = histd__c_locale(&loc, msg, msglen)) != 0) {
    histd_dataset_free(&ds);
    return rc;
  }
  for (size_t i = 0; i < count; i++) {
    if (!histd__next_line(&l, &ls, &le)) {
      rc = histd_fail(msg, msglen, HISTD_EPARSE,
                      "line 1 announces %zu atoms, but the input ends after %zu", count, i);
      goto fail;
    }
    if (ls == le) {
      rc = histd_fail(msg, msglen, HISTD_EPARSE,
                      "line %zu: expected atom %zu of %zu ('element x y z'), found a blank line",
                      l.no, i + 1, count);
      goto fail;
    }
    const char *c = ls;
    size_t tl;
    histd__token(&c, le, &tl); /* the element */
    double v[3];
    for (int a = 0; a < 3; a++) {
      const char *t = histd__token(&c, le, &tl);
      if (t == NULL) {
        rc = histd_fail(msg, msglen, HISTD_EPARSE,
                        "line %zu: expected an element and 3 numbers, found %d number%s", l.no,
                        a, a == 1 ? "" : "s");
        goto fail;
      }
      histd__num_status st = histd__parse_number(t, tl, HISTD__NUM_TEXT, loc, &v[a]);
      if (st != HISTD__NUM_OK) {
        histd__quote(q, sizeof q, t, tl);
        if (st == HISTD__NUM_NOMEM)
          rc = histd_fail(msg, msglen, HISTD_ENOMEM, "line %zu: out of memory", l.no);
        else if (st == HISTD__NUM_SYNTAX)
          rc = histd_fail(msg, msglen, HISTD_EPARSE, "line %zu: %c: '%s' is not a number",
                          l.no, 'x' + a, q);
        else
          rc = histd_fail(msg, msglen, HISTD_EPARSE,
                          "line %zu: %c: '%s' is not a finite number", l.no, 'x' + a, q);
        goto fail;
      }
    }
    if (i < cap) {
      ds.x[i] = v[0];
      ds.x[cap + i] = v[1];
      ds.x[2 * cap + i] = v[2];
    }
  }
  while (histd__next_line(&l, &ls, &le)) {
    if (ls == le)
      continue;
    size_t next;
    if (parse_count(ls, le, &next))
      rc = histd_fail(msg, msglen, HISTD_EPARSE,
                      "line %zu: a second frame starts here; multi-frame XYZ is not "
                      "supported (split the trajectory into one file per frame)",
                      l.no);
    else
      rc = histd_fail(msg, msglen, HISTD_EPARSE,
                      "line %zu: unexpected content after the %zu atoms that line 1 announces",
                      l.no, count);
    goto fail;
  }
  if (count > cap) { /* impossible: the lines would have run out */
    rc = histd_fail(msg, msglen, HISTD_EPARSE, "internal error: more atoms than the input can hold");
    goto fail;
  }
  freelocale(loc);
  rc = histd__ds_complete(&ds, cap, count, msg, msglen);
  if (rc != 0)
    return rc;
  *out = ds;
  return 0;
fail:
  freelocale(loc);
  histd_dataset_free(&ds);
  return rc;
}
