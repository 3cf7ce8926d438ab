/*
 * accept.c -- content negotiation: which of a route's representations the
 * request's Accept header prefers (RFC 9110 12.5.1).
 *
 * Routes that answer in several types (a result as JSON, CSV or NPZ) call
 * negotiate() with their types, the default first, and nowhere else read
 * Accept. Accept is a list of media ranges, each with an optional weight:
 *
 *     Accept: text/csv;q=0.5, application/json;q=0.4, image/png;q=0
 *
 * A range is a type ("text/csv"), a wildcard subtype ("text/" and a star)
 * or the full wildcard (a star, a slash and a star). A type's weight is
 * that of the most specific range that names it (the type itself over its
 * subtype wildcard over the full one; of two equally specific, the first),
 * 0 when none does; q=0 refuses it. The type with the highest weight wins,
 * ties going to the route's order. No Accept header (or one with no ranges)
 * means anything, so the default. Parameters other than q do not narrow a
 * range ("text/csv; charset=utf-8" is text/csv), a lone star is the full
 * wildcard (Java's URLConnection sends it), and an element with a q that
 * is not a number from 0 to 1, or that is not type/subtype, is skipped: a
 * client's odd element costs it that element, not the answer.
 *
 * When every type weighs 0, the answer is 406 with a sentence that lists
 * what the route offers. Whatever the outcome, the answer varies with
 * Accept and says so (Vary: Accept, which http.c's finish() adds).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http.h"

/* One element of Accept: its range (type and subtype, "*" for any) and q. */
typedef struct media_range {
  char type[64], sub[64];
  double q;
} media_range;

/* s without its leading and trailing blanks (s is cut in place). */
static char *trim(char *s) {
  while (*s == ' ' || *s == '\t')
    s++;
  size_t n = strlen(s);
  while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
    s[--n] = '\0';
  return s;
}

/* Parses one element of Accept (cut in place); false when it is skipped. */
static bool parse_range(char *element, media_range *m) {
  char *save = NULL, *first = strtok_r(element, ";", &save);
  if (first == NULL)
    return false;
  const char *range = trim(first);
  if (strcmp(range, "*") == 0)
    range = "*/*";
  const char *slash = strchr(range, '/');
  size_t tl = slash ? (size_t)(slash - range) : 0, sl = slash ? strlen(slash + 1) : 0;
  if (tl == 0 || sl == 0 || tl >= sizeof m->type || sl >= sizeof m->sub)
    return false;
  memcpy(m->type, range, tl);
  m->type[tl] = '\0';
  memcpy(m->sub, slash + 1, sl + 1);
  m->q = 1.0;
  for (char *param; (param = strtok_r(NULL, ";", &save)) != NULL;) {
    param = trim(param);
    if ((param[0] == 'q' || param[0] == 'Q') && param[1] == '=') {
      char *stop;
      double q = strtod(param + 2, &stop);
      if (stop == param + 2 || *stop != '\0' || !(q >= 0.0 && q <= 1.0))
        return false;
      m->q = q;
    }
  }
  return true;
}

/* How specifically m names type ("a/b"): 3 by itself, 2 by its subtype wildcard, 1 by
 * the full wildcard, 0 not at all. */
static int specificity(const media_range *m, const char *type) {
  const char *slash = strchr(type, '/');
  if (strcmp(m->type, "*") == 0)
    return strcmp(m->sub, "*") == 0 ? 1 : 0;
  if (strlen(m->type) != (size_t)(slash - type) || strncasecmp(m->type, type, strlen(m->type)))
    return 0;
  if (strcmp(m->sub, "*") == 0)
    return 2;
  return strcasecmp(m->sub, slash + 1) == 0 ? 3 : 0;
}

/* The weight Accept gives type: that of its most specific range, or 0.
 * *any_range: whether Accept has a range at all. */
static double weight(const char *accept, const char *type, bool *any_range) {
  int best = 0;
  double q = 0.0;
  for (const char *p = accept; *p != '\0';) {
    size_t n = strcspn(p, ",");
    char element[256];
    media_range m;
    if (n < sizeof element) { /* (a longer element names no type histd offers) */
      memcpy(element, p, n);
      element[n] = '\0';
      if (parse_range(element, &m)) {
        *any_range = true;
        int s = specificity(&m, type);
        if (s > best) {
          best = s;
          q = m.q;
        }
      }
    }
    p += n + (p[n] == ',');
  }
  return q;
}

int negotiate(request *r, const char *const *types, size_t count) {
  r->vary_accept = true;
  const char *accept = request_header(r, "Accept");
  if (accept == NULL)
    return 0;
  int best = -1;
  double best_q = 0.0;
  bool any_range = false;
  for (size_t i = 0; i < count; i++) {
    double q = weight(accept, types[i], &any_range);
    if (q > best_q) {
      best = (int)i;
      best_q = q;
    }
  }
  if (!any_range)
    return 0; /* no range at all: as if there were no Accept */
  if (best >= 0)
    return best;
  char offered[256] = "";
  for (size_t i = 0; i < count; i++) {
    size_t l = strlen(offered);
    const char *sep = i == 0 ? "" : i + 1 < count ? ", " : " or ";
    snprintf(offered + l, sizeof offered - l, "%s%s", sep, types[i]);
  }
  respond_problem(r, 406, "none of the types this answer comes in (%s) is acceptable to "
                          "\"Accept: %.200s\"",
                  offered, accept);
  return -1;
}
