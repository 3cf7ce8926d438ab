/*
 * shard.c -- one job's pairs cut into block pairs, and partials added up.
 *
 * A cluster node or a batch task computes a shard; the one who completes
 * the job adds the partials. The cut is the tiled kernels' own idea one
 * level up: the points of A in `rows` blocks, of B in `cols` blocks, and a
 * shard the pairs of one block pair. For self pairs only bj >= bi is kept:
 * the diagonal block (bi, bi) is the self pairs of its points, i < j, and an
 * off-diagonal one (bi < bj) the cross pairs of two disjoint blocks, each
 * pair i < j exactly once. So the shards partition the pairs, and their
 * counts, added, are the whole job's bit for bit (integers); the weighted
 * sums are added with Neumaier's compensation, inside the contract's 1e-12.
 *
 * Frames ride along: a shard holds its block pair in every frame (a frame
 * shorter than the blocks just has fewer points there), so its result has
 * every frame's counts for the per-frame table, and g(r)'s volume over
 * frames, total / sum_f (P_f / V_f), is rebuilt from the partials' additive
 * `density` = sum_f (P_f / V_f) of their own pairs. Exclusions (pairs within
 * a molecule) are taken out of each shard's own pairs by the worker.
 *
 * Shards are numbered row by row: for self pairs (0,0) (0,1) .. (0,r-1)
 * (1,1) ..; for A x B (0,0) .. (0,c-1) (1,0) ..
 *
 * A partial is trusted only after histd_result_check: its bins are the
 * job's and its counts, below, overflow and excluded add up to the pairs
 * its block pair is known to hold.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <stdlib.h>

#include "engine.h"

static uint64_t ceil_div(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

/* A frame's most points. */
uint64_t histd__most_points(const histd_dataset *ds) {
  size_t frames = histd_dataset_frames(ds);
  if (frames == 1)
    return ds->n;
  uint64_t most = 0;
  for (size_t f = 0; f < frames; f++)
    most = ds->frame[f].n > most ? ds->frame[f].n : most;
  return most;
}

/* Whether p can be cut: collisions are hashed in O(n), whole; a kernel that
 * cannot count A x B cannot run an off-diagonal block. */
static bool cuttable(const histd_problem *p, const char *kernel) {
  if (p->statistic == HISTD_STAT_WITHIN && p->radius == 0)
    return false;
  if (histd_problem_in_pieces(p) || p->all_images) /* in pieces, whole */
    return false;
  const histd_kernel *k = histd_kernel_find(kernel != NULL ? kernel : "");
  return k == NULL || (k->caps & HISTD_CAN_CROSS) != 0;
}

/* The plan's shards with blocks of `block` points. */
static void plan_blocks(histd_shard_plan *plan, uint64_t block, bool self) {
  plan->block = block;
  plan->rows = plan->n_a == 0 ? 1 : ceil_div(plan->n_a, block);
  plan->cols = self ? plan->rows : plan->n_b == 0 ? 1 : ceil_div(plan->n_b, block);
  plan->count = self ? plan->rows * (plan->rows + 1) / 2 : plan->rows * plan->cols;
}

void histd_shard_plan_make(const histd_problem *p, const char *kernel, uint64_t want,
                           histd_shard_plan *plan) {
  memset(plan, 0, sizeof *plan);
  plan->n_a = histd__most_points(p->a);
  plan->n_b = p->b != NULL ? histd__most_points(p->b) : 0;
  const bool self = plan->self = p->b == NULL;
  uint64_t hi = plan->n_a > plan->n_b ? plan->n_a : plan->n_b, lo = 1;
  if (hi == 0 || want <= 1 || !cuttable(p, kernel))
    lo = hi = hi > 0 ? hi : 1;
  while (lo < hi) { /* the smallest block that makes at most `want` shards */
    uint64_t mid = lo + (hi - lo) / 2;
    plan_blocks(plan, mid, self);
    if (plan->count <= want)
      hi = mid;
    else
      lo = mid + 1;
  }
  /* blocks of whole 1024s (beyond the smallest), so that a GPU runs a
   * shard on its tiles in place (histd__cuda_tiles_run): fewer shards, never more */
  if (lo > 1024 && lo % 1024 != 0)
    lo += 1024 - lo % 1024;
  plan_blocks(plan, lo, self);
}

uint64_t histd_shard_work(const histd_problem *p, const char *kernel) {
  const uint64_t pairs = histd_problem_pairs(p);
  const histd_kernel *k = kernel != NULL ? histd_kernel_find(kernel) : NULL;
  histd_dataset a, b;
  histd_problem pr, pf;
  double within[2];
  if (k == NULL || histd__problem_resolve(p, within, &pr, NULL, 0) != 0)
    return pairs;
  histd_problem_frame(&pr, 0, &a, &b, &pf);
  /* the kernel's share of the pairs, by the grid's model (choose.c) */
  const double work = ceil((double)pairs * histd__work_share(&pf, k));
  return work < (double)pairs ? (uint64_t)work : pairs;
}

void histd_shard_get(const histd_shard_plan *plan, uint64_t s, histd_shard *out) {
  uint64_t bi = 0, bj = 0;
  if (plan->self) {
    uint64_t left = s; /* row bi holds rows - bi shards */
    while (left >= plan->rows - bi) {
      left -= plan->rows - bi;
      bi++;
    }
    bj = bi + left;
  } else {
    bi = s / plan->cols;
    bj = s % plan->cols;
  }
  const uint64_t nb = plan->self ? plan->n_a : plan->n_b;
  out->index = s;
  out->i0 = bi * plan->block;
  out->i1 = out->i0 + plan->block < plan->n_a ? out->i0 + plan->block : plan->n_a;
  out->j0 = bj * plan->block;
  out->j1 = out->j0 + plan->block < nb ? out->j0 + plan->block : nb;
  if (out->i0 > plan->n_a)
    out->i0 = out->i1 = plan->n_a;
  if (out->j0 > nb)
    out->j0 = out->j1 = nb;
}

/* Points [lo, hi) of n, clamped. */
static uint64_t span(uint64_t lo, uint64_t hi, uint64_t n) {
  hi = hi < n ? hi : n;
  return lo < hi ? hi - lo : 0;
}

uint64_t histd_shard_pairs(const histd_problem *p, const histd_shard *sh) {
  if (histd_problem_in_pieces(p)) /* its one shard is the whole problem */
    return histd_problem_pairs(p);
  uint64_t sum = 0;
  for (size_t f = 0, frames = histd_problem_frames(p); f < frames; f++) {
    histd_dataset a, b;
    histd_problem pf;
    histd_problem_frame(p, f, &a, &b, &pf);
    const uint64_t ra = span(sh->i0, sh->i1, a.n);
    if (pf.b != NULL)
      sum += ra * span(sh->j0, sh->j1, b.n);
    else if (sh->i0 == sh->j0)
      sum += ra < 2 ? 0 : ra * (ra - 1) / 2;
    else
      sum += ra * span(sh->j0, sh->j1, a.n);
  }
  return sum;
}

/* Points [lo, hi) of the one-frame view v (clamped), in v's box. */
static void slice(const histd_dataset *v, uint64_t lo, uint64_t hi, histd_dataset *out) {
  hi = hi < v->n ? hi : v->n;
  lo = lo < hi ? lo : hi;
  histd__view(v, lo, hi - lo, out);
  out->box = v->box;
  memcpy(out->unit, v->unit, sizeof out->unit);
}

void histd__problem_shard(const histd_problem *pf, const histd_shard *sh, histd_dataset *a,
                          histd_dataset *b, histd_problem *out) {
  *out = *pf;
  slice(pf->a, sh->i0, sh->i1, a);
  out->a = a;
  if (pf->b != NULL) {
    slice(pf->b, sh->j0, sh->j1, b);
    out->b = b;
  } else if (sh->i0 != sh->j0) {
    slice(pf->a, sh->j0, sh->j1, b);
    out->b = b;
  }
}

static bool same_bins(const histd_bins *x, const histd_bins *y) {
  if (x->kind != y->kind || x->count != y->count || x->count2 != y->count2 ||
      x->max2 != y->max2)
    return false;
  if (x->kind != HISTD_BINS_EDGES)
    return x->width == y->width;
  for (uint32_t k = 0; k <= x->count; k++)
    if (x->edges[k] != y->edges[k])
      return false;
  return true;
}

int histd_result_check(const histd_result *part, const histd_bins *bins, uint64_t pairs,
                       char *msg, size_t msglen) {
  if (!same_bins(&part->bins, bins))
    return histd_fail(msg, msglen, HISTD_EIO, "the partial's bins are not the job's");
  uint64_t sum = part->below + part->overflow;
  for (uint64_t k = 0, slots = histd_bins_slots(&part->bins); k < slots; k++)
    sum += part->counts[k];
  if (sum != part->total)
    return histd_fail(msg, msglen, HISTD_EIO,
                      "the partial's counts add up to %llu pairs but it says %llu",
                      (unsigned long long)sum, (unsigned long long)part->total);
  if (part->total + part->excluded != pairs)
    return histd_fail(msg, msglen, HISTD_EIO,
                      "the partial counted %llu pairs (%llu excluded) where its block pair "
                      "holds %llu",
                      (unsigned long long)part->total, (unsigned long long)part->excluded,
                      (unsigned long long)pairs);
  return 0;
}

int histd_result_add(histd_result *sum, double *err, const histd_result *part, char *msg,
                     size_t msglen) {
  if (!same_bins(&sum->bins, &part->bins))
    return histd_fail(msg, msglen, HISTD_EINVAL, "a partial's bins are not the job's");
  bool same_sums = true;
  for (int c = 0; c < HISTD_SUMS; c++)
    same_sums = same_sums && (sum->sums[c] == NULL) == (part->sums[c] == NULL);
  if (!same_sums || (sum->frame_counts == NULL) != (part->frame_counts == NULL) ||
      (sum->frame_counts != NULL && sum->frames != part->frames))
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "a partial's weighted or ravg sums or frames are not the job's");
  const uint32_t count = sum->bins.count;
  histd_result_add_bins(sum, err, part);
  for (uint64_t f = 0; sum->frame_counts != NULL && f < sum->frames; f++) {
    for (uint32_t k = 0; k < count; k++)
      sum->frame_counts[f * count + k] += part->frame_counts[f * count + k];
    sum->frame_total[f] += part->frame_total[f];
    if (sum->frame_below != NULL && part->frame_below != NULL)
      sum->frame_below[f] += part->frame_below[f];
    sum->frame_volume[f] = part->frame_volume[f];
  }
  /* the volume: kept while every partial has the same, else rebuilt from
   * the densities in histd_result_add_done */
  if (sum->volume != part->volume)
    sum->volume = NAN;
  sum->overflow += part->overflow;
  sum->total += part->total;
  sum->excluded += part->excluded;
  sum->within += part->within;
  sum->density += part->density;
  sum->refined_pairs += part->refined_pairs;
  sum->exact = sum->exact && part->exact;
  sum->timing.transfer_ms += part->timing.transfer_ms;
  sum->timing.kernel_ms += part->timing.kernel_ms;
  return 0;
}

void histd_result_add_bins(histd_result *sum, double *err, const histd_result *part) {
  const uint64_t slots = histd_bins_slots(&sum->bins);
  for (uint64_t k = 0; k < slots; k++)
    sum->counts[k] += part->counts[k];
  sum->below += part->below;
  for (int c = 0; err != NULL && c < HISTD_SUMS; c++)
    for (uint64_t k = 0; sum->sums[c] != NULL && k < slots; k++)
      histd_ev_neumaier(&sum->sums[c][k], &err[c * slots + k], part->sums[c][k]);
}

double *histd_result_add_errs(const histd_bins *bins) {
  return calloc(HISTD_SUMS * histd_bins_slots(bins) + 1, sizeof(double));
}

void histd_result_add_done(histd_result *sum, double *err) {
  const uint64_t slots = histd_bins_slots(&sum->bins);
  for (int c = 0; err != NULL && c < HISTD_SUMS; c++)
    for (uint64_t k = 0; sum->sums[c] != NULL && k < slots; k++)
      sum->sums[c][k] += err[c * slots + k];
  if (isnan(sum->volume))
    sum->volume = sum->density > 0 ? (double)sum->total / sum->density : 0;
}
