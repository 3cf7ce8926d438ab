/*
 * parse_exact.h -- the io tests' parse: buf[0..len) from an exact-size heap
 * copy, so that the sanitizer build catches any read past the end (the
 * parsers must not need a terminating NUL). Include it after defining
 * `static char msg[...]`, which receives the message.
 */
#ifndef HISTD_TEST_PARSE_EXACT_H
#define HISTD_TEST_PARSE_EXACT_H

#include <stdlib.h>
#include <string.h>

#include "histd/io.h"

static int parse_exact(histd_format fmt, const void *buf, size_t len, size_t max,
                       histd_dataset *ds) {
  char *copy = malloc(len ? len : 1);
  if (len)
    memcpy(copy, buf, len);
  msg[0] = '\0';
  int rc = histd_parse(fmt, copy, len, max, ds, msg, sizeof msg);
  free(copy);
  return rc;
}

#endif
