/*
 * json_span.c -- where a JSON object's top-level members are, without
 * building a tree.
 *
 * POST /v1/histogram carries thousands of coordinates next to a handful of
 * parameters. Building a cJSON node per coordinate (a malloc and a strtod
 * each) cost more than the histogram itself for 1,000 points. So the route
 * finds the spans of "points" / "x" / "y" / "z" here, hands those bytes to
 * the io layer's JSON point parser (fast number path, exact error
 * positions), and gives cJSON only the parameters, with the point spans
 * blanked out.
 *
 * The scanner checks only what it must to find spans (strings, escapes,
 * nesting); whatever it cannot make sense of makes it give up, and the
 * caller falls back to the full cJSON parse, which says what is wrong.
 * Keys are compared with their escapes decoded (json_span_key_is), as cJSON
 * reads them: "\u0070oints" is "points", never an unknown key that cJSON
 * would then accept beside x, y and z.
 */
#include <string.h>

#include "json_util.h"

static const char *ws(const char *p, const char *end) {
  while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
    p++;
  return p;
}

static const char *string_end(const char *p, const char *end) {
  if (p >= end || *p != '"')
    return NULL;
  for (p++; p < end; p++) {
    if (*p == '\\') {
      p++;
      continue;
    }
    if (*p == '"')
      return p + 1;
  }
  return NULL;
}

static const char *value_end(const char *p, const char *end) {
  if (p >= end)
    return NULL;
  if (*p == '"')
    return string_end(p, end);
  if (*p == '[' || *p == '{') {
    int depth = 0;
    for (; p < end; p++) {
      char c = *p;
      if (c == '"') {
        p = string_end(p, end);
        if (p == NULL)
          return NULL;
        p--;
      } else if (c == '[' || c == '{') {
        if (++depth > 64)
          return NULL;
      } else if (c == ']' || c == '}') {
        if (--depth == 0)
          return p + 1;
      }
    }
    return NULL;
  }
  while (p < end && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\t' &&
         *p != '\n' && *p != '\r')
    p++;
  return p;
}

int json_object_spans(const char *text, size_t len, json_span *spans, size_t max,
                      size_t *count) {
  const char *p = text, *end = text + len;
  *count = 0;
  p = ws(p, end);
  if (p >= end || *p != '{')
    return -1;
  p = ws(p + 1, end);
  if (p < end && *p == '}')
    return ws(p + 1, end) == end ? 0 : -1;
  for (;;) {
    const char *k = p, *kend = string_end(p, end);
    if (kend == NULL)
      return -1;
    p = ws(kend, end);
    if (p >= end || *p != ':')
      return -1;
    p = ws(p + 1, end);
    const char *v = p, *vend = value_end(p, end);
    if (vend == NULL || vend == v)
      return -1;
    if (*count == max)
      return -1;
    spans[*count] = (json_span){k + 1, (size_t)(kend - k - 2), v, (size_t)(vend - v)};
    (*count)++;
    p = ws(vend, end);
    if (p < end && *p == ',') {
      p = ws(p + 1, end);
      continue;
    }
    if (p < end && *p == '}')
      return ws(p + 1, end) == end ? 0 : -1;
    return -1;
  }
}

static int hex_digit(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

bool json_span_key_is(const json_span *s, const char *name) {
  const char *p = s->key, *end = s->key + s->key_len;
  for (; p < end; name++) {
    int c = (unsigned char)*p++;
    if (c == '\\') {
      if (p >= end)
        return false;
      char e = *p++;
      switch (e) {
      case 'u': {
        if (end - p < 4)
          return false;
        c = 0;
        for (int i = 0; i < 4; i++) {
          int d = hex_digit(p[i]);
          if (d < 0)
            return false;
          c = c * 16 + d;
        }
        p += 4;
        break;
      }
      case 'b': c = '\b'; break;
      case 'f': c = '\f'; break;
      case 'n': c = '\n'; break;
      case 'r': c = '\r'; break;
      case 't': c = '\t'; break;
      default: c = (unsigned char)e; break; /* \" \\ \/ */
      }
    }
    if (*name == '\0' || c == 0 || c >= 0x80 || c != (unsigned char)*name)
      return false; /* the names are ASCII: no other code point matches */
  }
  return *name == '\0';
}
