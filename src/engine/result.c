/* result.c -- histogram results: 64-bit counts plus overflow. */
#include <stdlib.h>
#include <string.h>

#include "histd/histd.h"

int histd_result_init(histd_result *res, uint32_t buckets, double width,
                      char *msg, size_t msglen) {
  memset(res, 0, sizeof *res);
  if (buckets == 0 || buckets > HISTD_MAX_BUCKETS)
    return histd_fail(msg, msglen, HISTD_EINVAL, "buckets must be 1 to %u, got %u",
                      HISTD_MAX_BUCKETS, buckets);
  res->counts = calloc(buckets, sizeof *res->counts);
  if (res->counts == NULL)
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %u buckets", buckets);
  res->buckets = buckets;
  res->bucket_width = width;
  return 0;
}

void histd_result_free(histd_result *res) {
  if (res == NULL)
    return;
  free(res->counts);
  memset(res, 0, sizeof *res);
}
