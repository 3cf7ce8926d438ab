/*
 * util.h -- small helpers of every part of the service (util.c): lists
 * of settings, wall-clock time and its RFC 3339 text.
 */
#ifndef HISTD_UTIL_H
#define HISTD_UTIL_H

#include <stdbool.h>
#include <stddef.h>

/* The next entry of a comma-separated list (--cors-origin, --allowed-hosts)
 * at *p, blanks around it trimmed: [*s, *s + *len). False at the end. */
bool list_next(const char **p, const char **s, size_t *len);

double wall_now(void);                               /* seconds since the epoch */
void format_rfc3339(double t, char *buf, size_t len); /* "2026-11-21T07:40:01.123Z" */

#endif
