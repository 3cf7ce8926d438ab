/*
 * pair_loop.c -- the general pair loop: any problem, through the contract's
 * own functions (histd/pair.h), one pair at a time, in float64.
 *
 * "cpu-reference" runs it over the whole problem on one thread; "cpu" runs
 * it on tiles, on every core, for the problems its float32 loops do not
 * cover. A sink collects what a block counted: 64-bit counts with two extra
 * slots (below, overflow) and, with weights, a Neumaier-compensated sum per
 * bin, so a bin's weighted sum stays within a few ulps of the sum of
 * |w_i w_j| whatever the order or the number of threads (plain summation
 * of 10^10 terms could lose 10^-6 of it).
 */
#include <stdlib.h>
#include <string.h>

#include "engine.h"

int histd__sink_init(histd__sink *s, uint32_t count, bool weighted, bool ravg) {
  memset(s, 0, sizeof *s);
  size_t slots = (size_t)count + 2;
  s->counts = calloc(slots, sizeof *s->counts);
  if (weighted) {
    s->sum = calloc(slots, sizeof *s->sum);
    s->err = calloc(slots, sizeof *s->err);
  }
  if (ravg) {
    s->rsum = calloc(slots, sizeof *s->rsum);
    s->rerr = calloc(slots, sizeof *s->rerr);
  }
  if (s->counts == NULL || (weighted && (s->sum == NULL || s->err == NULL)) ||
      (ravg && (s->rsum == NULL || s->rerr == NULL))) {
    histd__sink_free(s);
    return HISTD_ENOMEM;
  }
  return 0;
}

void histd__sink_free(histd__sink *s) {
  free(s->counts);
  free(s->sum);
  free(s->err);
  free(s->rsum);
  free(s->rerr);
  memset(s, 0, sizeof *s);
}

void histd__pairs_block(const histd_problem *p, const histd_ev_bin *ev, size_t i0, size_t i1,
                        size_t j0, size_t j1, bool diag, histd__sink *s) {
  const histd_metric m = histd__metric(&p->box);
  const histd_dataset *a = p->a, *b = p->b ? p->b : p->a;
  for (size_t i = i0; i < i1; i++)
    for (size_t j = diag ? (i + 1 > j0 ? i + 1 : j0) : j0; j < j1; j++) {
      double u;
      size_t k = histd__pair_slot(p, &m, ev, i, j, &u);
      s->counts[k]++;
      const double wp = s->sum != NULL ? a->w[i] * b->w[j] : 1;
      if (s->sum != NULL)
        histd_ev_neumaier(&s->sum[k], &s->err[k], wp);
      if (s->rsum != NULL) /* ravg: (w_i w_j) u, one rounding */
        histd_ev_neumaier(&s->rsum[k], &s->rerr[k], wp * u);
    }
}

void histd__sink_merge(histd__sink *total, const histd__sink *s, uint32_t count) {
  for (size_t k = 0; k < (size_t)count + 2; k++) {
    total->counts[k] += s->counts[k];
    if (total->sum != NULL && s->sum != NULL) {
      histd_ev_neumaier(&total->sum[k], &total->err[k], s->sum[k]);
      histd_ev_neumaier(&total->sum[k], &total->err[k], s->err[k]);
    }
    if (total->rsum != NULL && s->rsum != NULL) {
      histd_ev_neumaier(&total->rsum[k], &total->rerr[k], s->rsum[k]);
      histd_ev_neumaier(&total->rsum[k], &total->rerr[k], s->rerr[k]);
    }
  }
}

void histd__sink_to_result(histd_result *res, const histd__sink *s) {
  const uint32_t count = (uint32_t)histd_bins_slots(&res->bins);
  for (uint32_t k = 0; k < count; k++) {
    res->counts[k] += s->counts[k];
    if (res->weighted != NULL && s->sum != NULL)
      res->weighted[k] = s->sum[k] + s->err[k];
    if (res->rsum != NULL && s->rsum != NULL)
      res->rsum[k] = s->rsum[k] + s->rerr[k];
  }
  res->below += s->counts[count];
  res->overflow += s->counts[count + 1];
}
