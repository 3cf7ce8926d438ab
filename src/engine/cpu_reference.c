/*
 * cpu_reference.c -- the kernel "cpu-reference": the exactness contract,
 * literally, on one thread. It is the yardstick the other kernels are
 * measured and tested against, so it stays as plain as the definition:
 * every pair goes through the general pair loop (pair_loop.c), which is
 * histd/pair.h one pair at a time.
 *
 * Between rows it reports progress and polls the cancel flag, at most every
 * 2^22 pairs, so a cancel lands within a few milliseconds.
 */
#include <stdio.h>

#include "engine.h"

int histd__cpu_reference_run(HISTD__RUN_ARGS) {
  (void)w;
  (void)ex;
  const bool self = p->b == NULL;
  const size_t n = p->a->n, nb = self ? n : p->b->n;
  const uint64_t total = res->total;
  uint64_t done = 0, since_poll = 0;
  double t0 = histd_now_ms();
  histd__sink sink;
  if (histd__sink_init(&sink, (uint32_t)histd_bins_slots(&res->bins), histd_problem_sums(p)) != 0)
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %u buckets",
                      res->bins.count);
  int rc = 0;
  const histd_ev_bin ev = histd__ev_bin(p);
  for (size_t i = 0; i < n; i++) {
    histd__pairs_block(p, &ev, i, i + 1, 0, nb, self, &sink);
    uint64_t row = self ? n - 1 - i : nb;
    done += row;
    since_poll += row;
    if (since_poll >= (1u << 22)) {
      since_poll = 0;
      if (histd__cancelled(ctl)) {
        rc = histd_fail(msg, msglen, HISTD_ECANCELED, "cancelled");
        break;
      }
      histd__progress(ctl, (double)done / (double)total);
    }
  }
  if (rc == 0) {
    histd__sink_to_result(res, &sink);
    res->exact = true;
    res->threads = 1;
    res->timing.kernel_ms = histd_now_ms() - t0;
    snprintf(res->device, sizeof res->device, "cpu: 1 thread");
  }
  histd__sink_free(&sink);
  return rc;
}
