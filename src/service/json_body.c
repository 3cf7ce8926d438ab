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
 */
#include <stdio.h>
#include <string.h>

#include "service.h"

static bool hex_zero4(const char *p, const char *end) {
  if (end - p < 4)
    return false;
  return p[0] == '0' && p[1] == '0' && p[2] == '0' && p[3] == '0';
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
  *out = o;
  return 0;
}
