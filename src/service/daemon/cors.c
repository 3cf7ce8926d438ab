/*
 * cors.c -- which origins may call the API from a browser.
 *
 * --cors-origin is empty (no CORS headers: same-origin only, the default),
 * "*" (any origin, answered with "*"; fine because auth is a bearer token,
 * never a cookie), or a comma-separated list of exact origins
 * ("https://lab.example.org,http://localhost:3000"), answered by echoing
 * the request's Origin with Vary: Origin.
 */
#include <string.h>

#include "config.h"
#include "guard.h"
#include "util.h"

const char *cors_allow_origin(const config *cfg, const char *origin) {
  const char *list = cfg->cors_origin;
  if (list[0] == '\0')
    return NULL;
  if (strcmp(list, "*") == 0)
    return "*";
  if (origin == NULL || origin[0] == '\0')
    return NULL;
  size_t olen = strlen(origin);
  const char *p = list, *s;
  size_t len;
  while (list_next(&p, &s, &len)) {
    if (len == 1 && *s == '*')
      return "*";
    if (len == olen && strncmp(s, origin, len) == 0)
      return origin;
  }
  return NULL;
}
