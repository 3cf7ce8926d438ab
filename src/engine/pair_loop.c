/*
 * pair_loop.c -- the general pair loop: any problem, through the contract's
 * own functions (histd/pair.h), one pair at a time, in float64.
 *
 * "cpu-reference" runs it over the whole problem on one thread; "cpu" runs
 * it on tiles, on every core, for the problems its float32 loops do not
 * cover. A sink collects what a block counted: 64-bit counts with two extra
 * slots (below, overflow) and, for each sum the job asks (histd_sum: w_i
 * w_j, ravg's (w_i w_j) u), a Neumaier-compensated sum per slot, so a
 * slot's sum stays within a few ulps of the sum of the terms' magnitudes
 * whatever the order or the number of threads (plain summation of 10^10
 * terms could lose 10^-6 of it). Every channel is handled by the same
 * loops: a new sum is its histd_sum row and its value in histd_ev_sum.
 */
#include <stdlib.h>
#include <string.h>

#include "engine.h"

int histd__sink_init(histd__sink *s, uint32_t count, unsigned sums) {
  memset(s, 0, sizeof *s);
  size_t slots = (size_t)count + 2;
  bool ok = (s->counts = calloc(slots, sizeof *s->counts)) != NULL;
  for (int c = 0; c < HISTD_SUMS; c++)
    if (sums >> c & 1)
      ok = (s->sum[c] = calloc(slots, sizeof(double))) != NULL &&
           (s->err[c] = calloc(slots, sizeof(double))) != NULL && ok;
  if (!ok) {
    histd__sink_free(s);
    return HISTD_ENOMEM;
  }
  return 0;
}

void histd__sink_free(histd__sink *s) {
  free(s->counts);
  for (int c = 0; c < HISTD_SUMS; c++) {
    free(s->sum[c]);
    free(s->err[c]);
  }
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
      const double wp = s->sum[HISTD_SUM_W] != NULL ? a->w[i] * b->w[j] : 1;
      for (int c = 0; c < HISTD_SUMS; c++)
        if (s->sum[c] != NULL)
          histd_ev_neumaier(&s->sum[c][k], &s->err[c][k], histd_ev_sum(c, wp, u));
    }
}

void histd__sink_zero(histd__sink *s, uint32_t count) {
  const size_t slots = (size_t)count + 2;
  memset(s->counts, 0, slots * sizeof *s->counts);
  for (int c = 0; c < HISTD_SUMS; c++)
    if (s->sum[c] != NULL) {
      memset(s->sum[c], 0, slots * sizeof(double));
      memset(s->err[c], 0, slots * sizeof(double));
    }
}

void histd__sink_merge(histd__sink *total, const histd__sink *s, uint32_t count) {
  for (size_t k = 0; k < (size_t)count + 2; k++)
    total->counts[k] += s->counts[k];
  for (int c = 0; c < HISTD_SUMS; c++)
    for (size_t k = 0; total->sum[c] != NULL && s->sum[c] != NULL && k < (size_t)count + 2; k++) {
      histd_ev_neumaier(&total->sum[c][k], &total->err[c][k], s->sum[c][k]);
      histd_ev_neumaier(&total->sum[c][k], &total->err[c][k], s->err[c][k]);
    }
}

void histd__sink_to_result(histd_result *res, const histd__sink *s) {
  const uint32_t count = (uint32_t)histd_bins_slots(&res->bins);
  for (uint32_t k = 0; k < count; k++)
    res->counts[k] += s->counts[k];
  for (int c = 0; c < HISTD_SUMS; c++)
    for (uint32_t k = 0; res->sums[c] != NULL && s->sum[c] != NULL && k < count; k++)
      res->sums[c][k] = s->sum[c][k] + s->err[c][k];
  res->below += s->counts[count];
  res->overflow += s->counts[count + 1];
}
