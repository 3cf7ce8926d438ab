/* result.c -- results: their bins, 64-bit counts, below and overflow, the
 * weighted sums, and g(r) derived from them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "histd/histd.h"

int histd_result_adopt(histd_result *res, const histd_bins *bins, uint64_t *counts,
                       double *weighted, char *msg, size_t msglen) {
  memset(res, 0, sizeof *res);
  const uint32_t count = bins->count;
  res->bins = *bins;
  res->bins.edges = NULL;
  res->counts = counts;
  res->weighted = weighted;
  if (bins->kind == HISTD_BINS_EDGES) {
    double *edges = malloc(((size_t)count + 1) * sizeof *edges);
    if (edges == NULL) {
      histd_result_free(res);
      return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %u edges", count + 1);
    }
    memcpy(edges, bins->edges, ((size_t)count + 1) * sizeof *edges);
    res->bins.edges = edges;
  }
  return 0;
}

int histd_result_init(histd_result *res, const histd_bins *bins, bool weighted, char *msg,
                      size_t msglen) {
  memset(res, 0, sizeof *res);
  const uint32_t count = bins->count;
  if (count == 0 || count > HISTD_MAX_BUCKETS)
    return histd_fail(msg, msglen, HISTD_EINVAL, "buckets must be 1 to %u, got %u",
                      HISTD_MAX_BUCKETS, count);
  uint64_t *counts = calloc(count, sizeof *counts);
  double *sums = weighted ? calloc(count, sizeof *sums) : NULL;
  if (counts == NULL || (weighted && sums == NULL)) {
    free(counts);
    free(sums);
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %u buckets", count);
  }
  return histd_result_adopt(res, bins, counts, sums, msg, msglen);
}

void histd_result_free(histd_result *res) {
  if (res == NULL)
    return;
  free(res->counts);
  free(res->weighted);
  free((double *)res->bins.edges);
  memset(res, 0, sizeof *res);
}

int histd_result_copy(histd_result *dst, const histd_result *src) {
  *dst = *src;
  dst->counts = NULL;
  dst->weighted = NULL;
  dst->bins.edges = NULL;
  const size_t count = src->bins.count;
  if (src->counts != NULL && (dst->counts = malloc(count * sizeof *dst->counts)) != NULL)
    memcpy(dst->counts, src->counts, count * sizeof *dst->counts);
  if (src->weighted != NULL && (dst->weighted = malloc(count * sizeof *dst->weighted)) != NULL)
    memcpy(dst->weighted, src->weighted, count * sizeof *dst->weighted);
  double *e = NULL;
  if (src->bins.edges != NULL && (e = malloc((count + 1) * sizeof *e)) != NULL)
    memcpy(e, src->bins.edges, (count + 1) * sizeof *e);
  dst->bins.edges = e;
  if ((src->counts && !dst->counts) || (src->weighted && !dst->weighted) ||
      (src->bins.edges && !e)) {
    histd_result_free(dst);
    return HISTD_ENOMEM;
  }
  return 0;
}

void histd_result_rdf_bin(const histd_result *res, uint32_t k, uint64_t *cumulative, double *g,
                          double *coordination) {
  const double pi = 3.14159265358979323846;
  if (k == 0)
    *cumulative = res->below;
  double lo = histd_bins_edge(&res->bins, k), hi = histd_bins_edge(&res->bins, k + 1);
  double shell = 4.0 / 3.0 * pi * (hi * hi * hi - lo * lo * lo);
  double expected = (double)res->total * shell / res->volume;
  *g = expected > 0 ? (double)res->counts[k] / expected : 0;
  *cumulative += res->counts[k];
  *coordination = res->n == 0 ? 0 : (res->cross ? 1.0 : 2.0) * (double)*cumulative / (double)res->n;
}
