/*
 * json_util.h -- request JSON as the daemon and batch read it: member
 * spans without a tree (json_span.c), a body parsed strictly
 * (json_body.c), a member as a parameter's value (params_json.c).
 */
#ifndef HISTD_JSON_UTIL_H
#define HISTD_JSON_UTIL_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "histd/params.h"

/* ---- JSON member spans (json_span.c) -------------------------------------- */

typedef struct json_span {
  const char *key; /* as written, without the quotes (escapes not decoded) */
  size_t key_len;
  const char *value; /* the value's text */
  size_t value_len;
} json_span;

/* The top-level members of the object in text[0..len). 0, or -1 when the
 * text is not a plausible object or has more than max members. */
int json_object_spans(const char *text, size_t len, json_span *spans, size_t max,
                      size_t *count);
/* Whether the span's key, its escapes decoded, is the ASCII name. */
bool json_span_key_is(const json_span *s, const char *name);

/* One JSON member as the value of parameter `row` (params_json.c): NULL,
 * or the phrase naming what the row wants ("a number", ...) when the member
 * has another JSON type. Arrays fill a malloc'd *numbers (free it after
 * histd_param_set). A null member is the null value: the default. */
const char *param_value_from_json(const histd_param *row, const cJSON *f, histd_value *v,
                                  double **numbers);

/* A request body parsed as JSON (json_body.c): 0 and a tree in *out, or
 * HISTD_EPARSE with a sentence when it is empty, not JSON, holds a NUL
 * (a raw byte or \u0000) or names a key twice in one object (HISTD_ENOMEM
 * when there was no memory to look). */
int json_body_parse(const char *body, size_t len, cJSON **out, char *msg, size_t msglen);

#endif
