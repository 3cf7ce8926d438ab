/*
 * follow.c -- a following job's result over frames 0..k plus the result of
 * frames k..m: the result of frames 0..m (follow.h).
 *
 * The statistics a job may follow are those whose frames add up: every
 * count, pair total and pair density is a sum over frames (added as a
 * shard's partial is, histd_result_add, and the partials' and per-point
 * histogram rows' sums beside); the per-frame table and the frames'
 * volumes are one row a frame (appended). The volume that normalises g(r)
 * is rebuilt from the summed pair density as a run over all the frames
 * builds it (total / density). What does not add this way is refused when
 * the job is submitted (follow_refusal): a value per point and frame, a
 * pair list, a B of several frames (frame f of A meets frame f of B).
 */
#include <stdlib.h>
#include <string.h>

#include "follow.h"

const char *follow_refusal(const histd_params *p, histd_statistic statistic, bool cross,
                           uint64_t frames_b) {
  if (statistic == HISTD_STAT_POINT_COUNTS || statistic == HISTD_STAT_NEAREST)
    return "follow keeps sums over frames, and a value per point and frame (per_point, "
           "nearest) is not one: run it once the dataset is sealed";
  if (statistic == HISTD_STAT_PAIRS)
    return "follow keeps sums over frames, and a pair list is not one: run pairs_within once "
           "the dataset is sealed";
  if (p->has_frames)
    return "follow counts every frame as it arrives, so it takes no frames slice";
  if (cross && frames_b > 1)
    return "follow adds frames of A as they arrive, and dataset_b has several frames (frame f "
           "of A meets frame f of B): give a B of one frame";
  return NULL;
}

/* *a grown to hold `count` more of size `size` after `have`, the new ones
 * from b (NULL: zero). */
static int extend(void **a, size_t have, size_t count, size_t size, const void *b) {
  const size_t bytes = (have + count) * size;
  void *p = realloc(*a, bytes > 0 ? bytes : 1);
  if (p == NULL)
    return HISTD_ENOMEM;
  *a = p;
  if (b != NULL)
    memcpy((char *)p + have * size, b, count * size);
  else
    memset((char *)p + have * size, 0, count * size);
  return 0;
}

static void add_u64(uint64_t *sum, const uint64_t *part, size_t count) {
  for (size_t i = 0; sum != NULL && part != NULL && i < count; i++)
    sum[i] += part[i];
}

int follow_add(histd_result *sum, const histd_result *part, bool b_whole, char *msg,
               size_t msglen) {
  const uint32_t bins = sum->bins.count;
  if (part->bins.count != bins || part->statistic != sum->statistic ||
      part->partials != sum->partials || part->point_n != sum->point_n ||
      (part->weighted == NULL) != (sum->weighted == NULL) ||
      (part->frame_counts == NULL) != (sum->frame_counts == NULL))
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "the new frames' result is not shaped as the frames' before it");
  const uint64_t had = sum->frames, more = part->frames;
  if (sum->frame_counts != NULL && sum->frame_below == NULL && /* (a result from before it) */
      (sum->frame_below = calloc(had ? had : 1, 8)) == NULL)
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for the per-frame table");
  if (sum->frame_counts != NULL &&
      (extend((void **)&sum->frame_counts, had * bins, more * bins, 8, part->frame_counts) ||
       extend((void **)&sum->frame_total, had, more, 8, part->frame_total) ||
       extend((void **)&sum->frame_volume, had, more, 8, part->frame_volume) ||
       extend((void **)&sum->frame_below, had, more, 8, part->frame_below)))
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for the per-frame table");
  /* the sums a shard's partial adds too (histd_result_add), the per-frame
   * rows aside: they are appended above, not added */
  histd_result p = *part; /* (shallow: read only) */
  uint64_t *counts = sum->frame_counts, *totals = sum->frame_total, *below = sum->frame_below;
  double *volumes = sum->frame_volume;
  p.frame_counts = p.frame_total = p.frame_below = NULL;
  p.frame_volume = NULL;
  sum->frame_counts = sum->frame_total = sum->frame_below = NULL;
  sum->frame_volume = NULL;
  double *err = histd_result_add_errs(&sum->bins);
  int rc = err == NULL
               ? histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for the weighted sums")
               : histd_result_add(sum, err, &p, msg, msglen);
  histd_result_add_done(sum, err);
  free(err);
  sum->frame_counts = counts;
  sum->frame_total = totals;
  sum->frame_below = below;
  sum->frame_volume = volumes;
  if (rc != 0)
    return rc;
  const size_t partials = sum->partials;
  add_u64(sum->partial_counts, part->partial_counts, partials * bins);
  add_u64(sum->partial_total, part->partial_total, partials);
  add_u64(sum->partial_below, part->partial_below, partials);
  add_u64(sum->partial_na, part->partial_na, partials);
  add_u64(sum->partial_nb, part->partial_nb, partials);
  for (size_t k = 0; sum->partial_density != NULL && k < partials; k++)
    sum->partial_density[k] += part->partial_density[k];
  if (sum->point_hist != NULL) { /* rows summed over frames */
    add_u64(sum->point_hist, part->point_hist, sum->point_n * bins);
    add_u64(sum->point_below, part->point_below, sum->point_n);
    add_u64(sum->point_partners, part->point_partners, sum->point_n);
  }
  sum->volume_sum += part->volume_sum;
  sum->n += part->n; /* A's points, every frame's */
  if (!b_whole)
    sum->n_b += part->n_b; /* B a selection of the same frames: every frame's too */
  sum->frames = had + more;
  if (sum->density > 0)
    sum->volume = (double)sum->total / sum->density;
  sum->timing.total_ms += part->timing.total_ms;
  memcpy(sum->kernel, part->kernel, sizeof sum->kernel);
  memcpy(sum->reason, part->reason, sizeof sum->reason);
  memcpy(sum->device, part->device, sizeof sum->device);
  sum->block_size = part->block_size;
  sum->threads = part->threads;
  return 0;
}
