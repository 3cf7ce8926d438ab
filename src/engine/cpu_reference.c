/*
 * cpu_reference.c -- the kernel "cpu-reference": the exactness contract,
 * literally, on one thread. It is the yardstick the other kernels are
 * measured and tested against, so it stays as plain as the definition:
 * every pair i < j goes through histd_pair_bucket().
 *
 * Between rows it reports progress and polls the cancel flag, at most every
 * 2^22 pairs, so a cancel lands within a few milliseconds.
 */
#include <stdio.h>

#include "engine.h"

int histd__cpu_reference_run(histd_worker *w, const histd_dataset *ds,
                             const histd_spec *spec, const histd_control *ctl,
                             histd_result *res, char *msg, size_t msglen) {
  (void)w;
  const size_t n = ds->n;
  const double width = spec->bucket_width;
  const uint64_t total = n < 2 ? 0 : (uint64_t)n * (n - 1) / 2;
  uint64_t done = 0, since_poll = 0;
  double t0 = histd_now_ms();

  for (size_t i = 0; i + 1 < n; i++) {
    for (size_t j = i + 1; j < n; j++) {
      uint64_t b = histd_pair_bucket(ds->x[i], ds->y[i], ds->z[i], ds->x[j],
                                     ds->y[j], ds->z[j], width);
      if (b < res->buckets)
        res->counts[b]++;
      else
        res->overflow++;
    }
    done += n - 1 - i;
    since_poll += n - 1 - i;
    if (since_poll >= (1u << 22)) {
      since_poll = 0;
      if (histd__cancelled(ctl))
        return histd_fail(msg, msglen, HISTD_ECANCELED, "cancelled");
      histd__progress(ctl, (double)done / (double)total);
    }
  }
  res->exact = true;
  res->threads = 1;
  res->timing.kernel_ms = histd_now_ms() - t0;
  snprintf(res->device, sizeof res->device, "cpu: 1 thread");
  return 0;
}
