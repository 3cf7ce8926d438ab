/*
 * json_body.c -- a request body parsed as JSON, the one place where that
 * happens for every route that reads JSON parameters.
 *
 * cJSON decodes "\u0000" into a C string that ends there, so
 * "kernel": "cpu\u0000x" would read as "cpu": a value the client did not
 * send. Rather than checking each string field, the text is refused here,
 * before any tree is built, when it holds a NUL: a raw 0 byte (never valid
 * JSON) or the escape \u0000 (in a key or a value alike). The scan skips
 * each escape's second character, so "\\u0000" (a backslash, then the
 * text u0000) is not mistaken for one.
 *
 * cJSON keeps every member of an object, duplicates too, and a lookup
 * finds the first: {"kernel": "cpu", "kernel": "naive"} would run "cpu"
 * while another reader of the same text takes the last. The contract
 * refuses conflicting fields, so a tree with one key twice in any object,
 * at any depth, is refused here with the key's name: every JSON body the
 * daemon reads (jobs, histograms, batch plans) comes through this
 * function. Keys are compared as cJSON decoded them ("\u0070oints" is
 * "points"), each object's sorted once, so a body of many keys costs
 * n log n, never n^2.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_util.h"

static bool hex_zero4(const char *p, const char *end) {
  if (end - p < 4)
    return false;
  return p[0] == '0' && p[1] == '0' && p[2] == '0' && p[3] == '0';
}

static int key_order(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The first key found twice in one object of the tree at o, or NULL; *oom
 * when there was no memory to look. */
static const char *duplicate_key(const cJSON *o, bool *oom) {
  size_t n = 0;
  for (const cJSON *c = o->child; c != NULL; c = c->next) {
    n++;
    const char *d = cJSON_IsArray(c) || cJSON_IsObject(c) ? duplicate_key(c, oom) : NULL;
    if (d != NULL || *oom)
      return d;
  }
  if (!cJSON_IsObject(o) || n < 2)
    return NULL;
  const char **keys = malloc(n * sizeof *keys);
  if (keys == NULL) {
    *oom = true;
    return NULL;
  }
  size_t k = 0;
  for (const cJSON *c = o->child; c != NULL; c = c->next)
    keys[k++] = c->string;
  qsort(keys, n, sizeof *keys, key_order);
  const char *dup = NULL;
  for (k = 1; k < n && dup == NULL; k++)
    if (strcmp(keys[k - 1], keys[k]) == 0)
      dup = keys[k];
  free(keys);
  return dup;
}

int json_body_parse(const char *body, size_t len, cJSON **out, char *msg, size_t msglen) {
  *out = NULL;
  if (body == NULL || len == 0)
    return histd_fail(msg, msglen, HISTD_EPARSE, "the body is empty; send a JSON object");
  const char *nul = memchr(body, '\0', len);
  if (nul != NULL)
    return histd_fail(msg, msglen, HISTD_EPARSE,
                      "the body holds a NUL byte at byte %zu, which JSON text never does",
                      (size_t)(nul - body));
  const char *end = body + len;
  for (const char *p = body; p + 1 < end; p++) {
    if (*p != '\\')
      continue;
    if (p[1] == 'u' && hex_zero4(p + 2, end))
      return histd_fail(msg, msglen, HISTD_EPARSE,
                        "the body holds the escape \\u0000 (a NUL character) at byte %zu; "
                        "no field of this API may contain one",
                        (size_t)(p - body));
    p++; /* the escaped character */
  }
  const char *stop = NULL;
  cJSON *o = cJSON_ParseWithLengthOpts(body, len, &stop, false);
  if (o == NULL) {
    size_t at = stop && stop >= body ? (size_t)(stop - body) : 0;
    return histd_fail(msg, msglen, HISTD_EPARSE, "the body is not valid JSON (error near byte %zu)",
                      at);
  }
  bool oom = false;
  const char *dup = duplicate_key(o, &oom);
  if (dup != NULL || oom) {
    int rc = oom ? histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory while reading the body")
                 : histd_fail(msg, msglen, HISTD_EPARSE,
                              "the body names \"%.64s\" twice in one object; each member "
                              "may be given once",
                              dup);
    cJSON_Delete(o);
    return rc;
  }
  *out = o;
  return 0;
}
