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

/* Zeroed counts and the sums in mask `sums` (bit c: channel c). */
static int result_init(histd_result *res, const histd_bins *bins, unsigned sums, char *msg,
                       size_t msglen) {
  memset(res, 0, sizeof *res);
  const uint64_t count = histd_bins_slots(bins);
  if (bins->count == 0 || count > HISTD_MAX_BUCKETS)
    return histd_fail(msg, msglen, HISTD_EINVAL, "buckets must be 1 to %u, got %llu",
                      HISTD_MAX_BUCKETS, (unsigned long long)count);
  uint64_t *counts = calloc(count, sizeof *counts);
  int rc = counts == NULL ? HISTD_ENOMEM : histd_result_adopt(res, bins, counts, NULL, msg, msglen);
  for (int c = 0; rc == 0 && c < HISTD_SUMS; c++)
    if ((sums >> c & 1) && (res->sums[c] = calloc(count, sizeof(double))) == NULL)
      rc = HISTD_ENOMEM;
  if (rc == HISTD_ENOMEM) {
    histd_result_free(res);
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %llu buckets",
                      (unsigned long long)count);
  }
  return rc;
}

int histd_result_init(histd_result *res, const histd_bins *bins, bool weighted, char *msg,
                      size_t msglen) {
  return result_init(res, bins, weighted ? 1u << HISTD_SUM_W : 0, msg, msglen);
}

int histd_result_for(histd_result *res, const histd_problem *p, char *msg, size_t msglen) {
  return result_init(res, &p->bins, histd_problem_sums(p), msg, msglen);
}

void histd_result_free(histd_result *res) {
  if (res == NULL)
    return;
  free(res->counts);
  for (int c = 0; c < HISTD_SUMS; c++)
    free(res->sums[c]);
  free(res->theta_edges);
  free((double *)res->bins.edges);
  free(res->frame_counts);
  free(res->frame_total);
  free(res->frame_volume);
  free(res->frame_below);
  free(res->partial_counts);
  free(res->partial_total);
  free(res->partial_below);
  free(res->partial_na);
  free(res->partial_nb);
  free(res->partial_density);
  free(res->region_counts);
  free(res->region_total);
  free(res->region_weighted);
  free(res->region_na);
  free(res->region_nb);
  free(res->region_wa);
  free(res->region_wa2);
  free(res->region_wb);
  free(res->region_wb2);
  free(res->point_index);
  free(res->point_counts);
  free(res->point_weighted);
  free(res->nearest_d);
  free(res->nearest_j);
  free(res->point_hist);
  free(res->point_below);
  free(res->point_partners);
  free(res->frame_pairs);
  memset(res, 0, sizeof *res);
}

int histd_result_init_points(histd_result *res, histd_statistic s, const histd_bins *bins,
                             uint64_t frames, uint64_t n, bool weighted, char *msg,
                             size_t msglen) {
  memset(res, 0, sizeof *res);
  if (s == HISTD_STAT_POINT_HISTOGRAM) { /* n rows of bins, and the whole result's */
    const uint64_t count = bins->count;
    int rc = histd_result_init(res, bins, false, msg, msglen);
    if (rc != 0)
      return rc;
    if (n > SIZE_MAX / 8 / count)
      rc = histd_fail(msg, msglen, HISTD_ETOOBIG, "%llu points x %llu bins do not fit",
                      (unsigned long long)n, (unsigned long long)count);
    else if ((res->point_hist = calloc(n ? n * count : 1, 8)) == NULL ||
             (res->point_below = calloc(n ? n : 1, 8)) == NULL ||
             (res->point_partners = calloc(n ? n : 1, 8)) == NULL)
      rc = histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %llu points x %llu bins",
                      (unsigned long long)n, (unsigned long long)count);
    if (rc != 0) {
      histd_result_free(res);
      return rc;
    }
    res->point_n = n;
    res->statistic = s;
    return 0;
  }
  const uint64_t rows = frames * n;
  if (frames != 0 && rows / frames != n)
    return histd_fail(msg, msglen, HISTD_ETOOBIG, "%llu frames x %llu points do not fit",
                      (unsigned long long)frames, (unsigned long long)n);
  const size_t k = rows ? (size_t)rows : 1;
  res->point_n = n;
  res->statistic = s;
  bool ok;
  if (s == HISTD_STAT_NEAREST) {
    res->nearest_d = malloc(k * sizeof *res->nearest_d);
    res->nearest_j = malloc(k * sizeof *res->nearest_j);
    ok = res->nearest_d != NULL && res->nearest_j != NULL;
    for (uint64_t i = 0; ok && i < rows; i++) {
      res->nearest_d[i] = NAN;
      res->nearest_j[i] = -1;
    }
  } else {
    res->point_counts = calloc(k, sizeof *res->point_counts);
    res->point_weighted = weighted ? calloc(k, sizeof *res->point_weighted) : NULL;
    ok = res->point_counts != NULL && (!weighted || res->point_weighted != NULL);
  }
  if (!ok) {
    histd_result_free(res);
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %llu frames x %llu points",
                      (unsigned long long)frames, (unsigned long long)n);
  }
  return 0;
}

/* A copy of n elements of `size` bytes at src (NULL stays NULL); false
 * when out of memory. */
static bool dup_array(void *dst_field, const void *src, size_t n, size_t size) {
  void **dst = dst_field;
  *dst = NULL;
  if (src == NULL)
    return true;
  if ((*dst = malloc(n ? n * size : 1)) == NULL)
    return false;
  memcpy(*dst, src, n * size);
  return true;
}

int histd_result_per_frame(histd_result *res, uint64_t frames) {
  const size_t cells = (size_t)frames * res->bins.count;
  res->frame_counts = calloc(cells ? cells : 1, sizeof *res->frame_counts);
  res->frame_total = calloc(frames ? frames : 1, sizeof *res->frame_total);
  res->frame_volume = calloc(frames ? frames : 1, sizeof *res->frame_volume);
  res->frame_below = calloc(frames ? frames : 1, sizeof *res->frame_below);
  return res->frame_counts && res->frame_total && res->frame_volume && res->frame_below
             ? 0
             : HISTD_ENOMEM;
}

const char *histd_norm_name(histd_norm n) {
  static const char *const names[] = {[HISTD_NORM_UNSET] = "", [HISTD_NORM_RDF] = "rdf",
                                      [HISTD_NORM_DENSITY] = "density",
                                      [HISTD_NORM_COUNTS] = "none"};
  return (unsigned)n < sizeof names / sizeof names[0] ? names[n] : "";
}

void histd_species_pair(uint32_t species, uint32_t k, uint32_t *s, uint32_t *t) {
  uint32_t row = 0, left = k;
  while (row < species && left >= species - row) { /* row s holds species - s pairs */
    left -= species - row;
    row++;
  }
  *s = row;
  *t = row + left;
}

uint32_t histd_species_of(uint32_t partials) {
  uint32_t s = 0;
  while ((uint64_t)(s + 1) * (s + 2) / 2 <= partials)
    s++;
  return s;
}

int histd_result_partials(histd_result *res, uint32_t count) {
  const size_t k = count ? count : 1;
  res->partials = count;
  res->partial_counts = calloc(k * (res->bins.count ? res->bins.count : 1), 8);
  res->partial_total = calloc(k, 8);
  res->partial_below = calloc(k, 8);
  res->partial_na = calloc(k, 8);
  res->partial_nb = calloc(k, 8);
  res->partial_density = calloc(k, 8);
  return res->partial_counts && res->partial_total && res->partial_below && res->partial_na &&
                 res->partial_nb && res->partial_density
             ? 0
             : HISTD_ENOMEM;
}

int histd_result_regions(histd_result *res, uint32_t count, bool cross) {
  const size_t k = count ? count : 1, slots = (size_t)histd_bins_slots(&res->bins);
  const bool w = res->weighted != NULL;
  res->regions = count;
  res->region_counts = calloc(k * (slots ? slots : 1), 8);
  res->region_total = calloc(k, 8);
  res->region_na = calloc(k, 8);
  bool ok = res->region_counts && res->region_total && res->region_na;
  if (w)
    ok = (res->region_weighted = calloc(k * (slots ? slots : 1), 8)) && ok;
  if (w)
    ok = (res->region_wa = calloc(k, 8)) && (res->region_wa2 = calloc(k, 8)) && ok;
  if (cross)
    ok = (res->region_nb = calloc(k, 8)) && ok;
  if (cross && w)
    ok = (res->region_wb = calloc(k, 8)) && (res->region_wb2 = calloc(k, 8)) && ok;
  return ok ? 0 : HISTD_ENOMEM;
}

int histd_result_copy(histd_result *dst, const histd_result *src) {
  *dst = *src;
  dst->counts = NULL;
  for (int c = 0; c < HISTD_SUMS; c++)
    dst->sums[c] = NULL;
  dst->theta_edges = NULL;
  dst->bins.edges = NULL;
  const size_t count = src->bins.count, slots = (size_t)histd_bins_slots(&src->bins);
  if (src->counts != NULL && (dst->counts = malloc(slots * sizeof *dst->counts)) != NULL)
    memcpy(dst->counts, src->counts, slots * sizeof *dst->counts);
  double *e = NULL;
  if (src->bins.edges != NULL && (e = malloc((count + 1) * sizeof *e)) != NULL)
    memcpy(e, src->bins.edges, (count + 1) * sizeof *e);
  dst->bins.edges = e;
  dst->frame_counts = NULL;
  dst->frame_total = NULL;
  dst->frame_volume = NULL;
  dst->frame_below = NULL;
  bool frames_ok = true;
  if (src->frame_counts != NULL) {
    const uint64_t frames = src->frames > 0 ? src->frames : 1;
    frames_ok = histd_result_per_frame(dst, frames) == 0;
    if (frames_ok) {
      memcpy(dst->frame_counts, src->frame_counts, frames * count * sizeof *dst->frame_counts);
      memcpy(dst->frame_total, src->frame_total, frames * sizeof *dst->frame_total);
      memcpy(dst->frame_volume, src->frame_volume, frames * sizeof *dst->frame_volume);
      if (src->frame_below != NULL)
        memcpy(dst->frame_below, src->frame_below, frames * sizeof *dst->frame_below);
    }
  }
  const size_t rows = (size_t)((src->frames > 0 ? src->frames : 1) * src->point_n);
  bool points_ok = dup_array(&dst->point_index, src->point_index, src->point_n, 8);
  points_ok = dup_array(&dst->point_counts, src->point_counts, rows, 8) && points_ok;
  points_ok = dup_array(&dst->point_weighted, src->point_weighted, rows, 8) && points_ok;
  points_ok = dup_array(&dst->nearest_d, src->nearest_d, rows, 8) && points_ok;
  points_ok = dup_array(&dst->nearest_j, src->nearest_j, rows, 8) && points_ok;
  points_ok = dup_array(&dst->point_hist, src->point_hist, (size_t)src->point_n * count, 8) &&
              points_ok;
  points_ok = dup_array(&dst->point_below, src->point_below, (size_t)src->point_n, 8) && points_ok;
  points_ok = dup_array(&dst->point_partners, src->point_partners, (size_t)src->point_n, 8) &&
              points_ok;
  points_ok = dup_array(&dst->frame_pairs, src->frame_pairs,
                        (size_t)(src->frames > 0 ? src->frames : 1), 8) &&
              points_ok;
  const size_t parts = src->partials;
  points_ok = dup_array(&dst->partial_counts, src->partial_counts, parts * count, 8) && points_ok;
  points_ok = dup_array(&dst->partial_total, src->partial_total, parts, 8) && points_ok;
  points_ok = dup_array(&dst->partial_below, src->partial_below, parts, 8) && points_ok;
  points_ok = dup_array(&dst->partial_na, src->partial_na, parts, 8) && points_ok;
  points_ok = dup_array(&dst->partial_nb, src->partial_nb, parts, 8) && points_ok;
  points_ok = dup_array(&dst->partial_density, src->partial_density, parts, 8) && points_ok;
  for (int c = 0; c < HISTD_SUMS; c++)
    points_ok = dup_array(&dst->sums[c], src->sums[c], slots, 8) && points_ok;
  const size_t regions = src->regions;
  points_ok = dup_array(&dst->region_counts, src->region_counts, regions * slots, 8) && points_ok;
  points_ok = dup_array(&dst->region_total, src->region_total, regions, 8) && points_ok;
  points_ok = dup_array(&dst->region_weighted, src->region_weighted, regions * slots, 8) &&
              points_ok;
  points_ok = dup_array(&dst->region_na, src->region_na, regions, 8) && points_ok;
  points_ok = dup_array(&dst->region_nb, src->region_nb, regions, 8) && points_ok;
  points_ok = dup_array(&dst->region_wa, src->region_wa, regions, 8) && points_ok;
  points_ok = dup_array(&dst->region_wa2, src->region_wa2, regions, 8) && points_ok;
  points_ok = dup_array(&dst->region_wb, src->region_wb, regions, 8) && points_ok;
  points_ok = dup_array(&dst->region_wb2, src->region_wb2, regions, 8) && points_ok;
  points_ok = dup_array(&dst->theta_edges, src->theta_edges, count + 1, 8) && points_ok;
  if ((src->counts && !dst->counts) ||
      (src->bins.edges && !e) || !frames_ok || !points_ok) {
    histd_result_free(dst);
    return HISTD_ENOMEM;
  }
  return 0;
}

/* g of `count` pairs in bin k of a histogram of `total` pairs in a box of
 * `volume`: count / (total V_shell,k / volume) (0 when nothing is expected). */
static double rdf_g(const histd_bins *bins, uint32_t k, uint64_t count, uint64_t total,
                    double volume) {
  double expected = (double)total * histd_bins_shell(bins, k) / volume;
  return expected > 0 ? (double)count / expected : 0;
}

double histd_result_frame_g(const histd_result *res, uint64_t f, uint32_t k) {
  return rdf_g(&res->bins, k, res->frame_counts[f * res->bins.count + k], res->frame_total[f],
               res->frame_volume[f]);
}

/* The coordination of `cumulative` pairs up to a bin among n points of A:
 * a pair is one neighbour of each of its atoms in a self problem (a
 * per-point histogram's counts are ordered pairs already: each from A's
 * end). */
static double coordination_of(const histd_result *res, uint64_t cumulative, double n) {
  const bool ordered = res->cross || res->statistic == HISTD_STAT_POINT_HISTOGRAM;
  return n == 0 ? 0 : (ordered ? 1.0 : 2.0) * (double)cumulative / n;
}

double histd_result_point_g(const histd_result *res, uint64_t i, uint32_t k) {
  return rdf_g(&res->bins, k, res->point_hist[i * res->bins.count + k], res->point_partners[i],
               res->volume);
}

void histd_result_rdf_bin(const histd_result *res, uint32_t k, uint64_t *cumulative, double *g,
                          double *coordination) {
  if (k == 0)
    *cumulative = res->below;
  *g = rdf_g(&res->bins, k, res->counts[k], res->total, res->volume);
  *cumulative += res->counts[k];
  *coordination = coordination_of(res, *cumulative, (double)res->n);
}

void histd_result_partial_bin(const histd_result *res, uint32_t k, uint32_t bin,
                              uint64_t cumulative, double *g, double *ab, double *ba) {
  const uint64_t total = res->partial_total[k];
  const double density = res->partial_density[k];
  *g = density > 0 ? rdf_g(&res->bins, bin, res->partial_counts[(size_t)k * res->bins.count + bin],
                           total, (double)total / density)
                   : 0;
  /* s == t: the piece was s's self pairs, each pair a neighbour of both */
  uint32_t s, t;
  histd_species_pair(histd_species_of(res->partials), k, &s, &t);
  const double twice = s == t ? 2.0 : 1.0;
  *ab = res->partial_na[k] ? twice * (double)cumulative / (double)res->partial_na[k] : 0;
  *ba = res->partial_nb[k] ? twice * (double)cumulative / (double)res->partial_nb[k] : 0;
}

void histd_result_block_frames(const histd_result *res, uint32_t b, uint64_t *f0,
                               uint64_t *f1) {
  const uint64_t frames = res->frames > 0 ? res->frames : 1, k = res->blocks ? res->blocks : 1;
  *f0 = ((uint64_t)b * frames + k - 1) / k; /* the first f with f * k / frames >= b */
  *f1 = ((uint64_t)(b + 1) * frames + k - 1) / k;
}

void histd_result_block_bin(const histd_result *res, uint32_t b, uint32_t k, double *g,
                            double *coordination) {
  const uint32_t bins = res->bins.count;
  const uint64_t frames = res->frames > 0 ? res->frames : 1;
  uint64_t f0, f1, total = 0, cumulative = 0, count = 0;
  double density = 0;
  histd_result_block_frames(res, b, &f0, &f1);
  for (uint64_t f = f0; f < f1; f++) {
    total += res->frame_total[f];
    cumulative += res->frame_below != NULL ? res->frame_below[f] : 0;
    for (uint32_t j = 0; j <= k; j++)
      cumulative += res->frame_counts[f * bins + j];
    count += res->frame_counts[f * bins + k];
    if (res->frame_volume[f] > 0)
      density += (double)res->frame_total[f] / res->frame_volume[f];
  }
  /* the volume that normalises the block's g: its pairs / its pair density,
   * as a result over several frames has it */
  *g = density > 0 ? rdf_g(&res->bins, k, count, total, (double)total / density) : 0;
  *coordination = coordination_of(res, cumulative, (double)res->n * (double)(f1 - f0) /
                                                       (double)frames);
}
