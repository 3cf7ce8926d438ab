/*
 * fuzz_common.h -- the body of every parser fuzz target: parse the input
 * (with no limit and with a small one), check what a successful parse must
 * guarantee (n > 0, every coordinate finite and inside the bounds), free.
 * Any crash, leak, out-of-bounds read or abort() is a finding.
 */
#ifndef HISTD_FUZZ_COMMON_H
#define HISTD_FUZZ_COMMON_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "histd/io.h"

static void fuzz_one(histd_format fmt, const uint8_t *data, size_t size, size_t max_points) {
  /* An exact-size copy: the parsers must not read past len. */
  char *buf = malloc(size ? size : 1);
  if (size)
    memcpy(buf, data, size);
  histd_dataset ds;
  char msg[256];
  msg[0] = '\0';
  int rc = histd_parse(fmt, buf, size, max_points, &ds, msg, sizeof msg);
  if (rc == 0) {
    if (ds.n == 0 || (max_points && ds.n > max_points))
      abort();
    for (size_t i = 0; i < ds.n; i++) {
      const double v[3] = {ds.x[i], ds.y[i], ds.z[i]};
      for (int a = 0; a < 3; a++)
        if (!isfinite(v[a]) || v[a] < ds.min[a] || v[a] > ds.max[a])
          abort();
    }
    histd_dataset_free(&ds);
  } else {
    if (ds.n != 0 || ds.x != NULL || msg[0] == '\0' || memchr(msg, '\0', sizeof msg) == NULL)
      abort();
  }
  free(buf);
}

#endif
