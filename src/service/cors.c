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

#include "service.h"

const char *cors_allow_origin(const config *cfg, const char *origin) {
  const char *list = cfg->cors_origin;
  if (list[0] == '\0')
    return NULL;
  if (strcmp(list, "*") == 0)
    return "*";
  if (origin == NULL || origin[0] == '\0')
    return NULL;
  size_t olen = strlen(origin);
  for (const char *p = list; *p;) {
    while (*p == ' ' || *p == ',')
      p++;
    const char *end = p;
    while (*end && *end != ',')
      end++;
    const char *last = end;
    while (last > p && last[-1] == ' ')
      last--;
    size_t len = (size_t)(last - p);
    if (len == 1 && *p == '*')
      return "*";
    if (len > 0 && len == olen && strncmp(p, origin, len) == 0)
      return origin;
    p = end;
  }
  return NULL;
}
