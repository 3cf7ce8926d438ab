/* util.c -- wall-clock time and RFC 3339 timestamps for the service. */
#include <stdio.h>
#include <time.h>

#include "util.h"

bool list_next(const char **p, const char **s, size_t *len) {
  const char *q = *p;
  while (*q == ' ' || *q == ',')
    q++;
  const char *end = q;
  while (*end && *end != ',')
    end++;
  const char *last = end;
  while (last > q && last[-1] == ' ')
    last--;
  *p = end;
  *s = q;
  *len = (size_t)(last - q);
  return *q != '\0';
}

double wall_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void format_rfc3339(double t, char *buf, size_t len) {
  time_t secs = (time_t)t;
  int ms = (int)((t - (double)secs) * 1000.0);
  if (ms < 0)
    ms = 0;
  if (ms > 999)
    ms = 999;
  struct tm tm;
  gmtime_r(&secs, &tm);
  snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
           tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
}
