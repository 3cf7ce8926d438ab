/*
 * regions.c -- jackknife counts ("jackknife": true): each region's share of
 * a histogram, by the datasets' region labels.
 *
 * A survey's covariance comes from leaving one region of the sky out at a
 * time: the counts without region k's points are the total less the pairs
 * that have a point in region k. So a pair of points in regions a and b
 * adds to region a's counts and, if b != a, to region b's (Corrfunc's and
 * the rule), and the client subtracts.
 *
 * No kernel knows of regions. As partials.c does for species, A's points
 * are sorted into R sets by their labels (and B's, for A x B), and the
 * job's pairs become the region pairs' pieces: a's own pairs and a x b for
 * a < b (self pairs: R(R+1)/2 pieces), or A's a x B's b (A x B: R^2). Each
 * pair of the job lies in exactly one piece, so the job meets each pair
 * once, on any kernel and engine (histd_problem_piece); the worker adds
 * each piece's counts into the total and into its two regions' rows. A
 * piece with no pair (an empty region) is not run; a piece whose regions
 * are far apart costs its kernel's setup, which is why the regions are
 * capped at HISTD_MAX_JACKKNIFE.
 *
 * The labels are the datasets' own, given at upload: a region column,
 * ?regions=K (k-means on the sky), or ?regions_like=ID (a stored
 * catalogue's regions, so that galaxies and their randoms share them).
 */
#include <stdlib.h>
#include <string.h>

#include "histd/job.h"

int histd_regions_check(const histd_shape *a, const histd_shape *b, uint32_t *count, char *msg,
                        size_t msglen) {
  if (a->regions == 0 || (b != NULL && b->regions == 0))
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "jackknife needs each point's region: upload %s as a sky catalogue with "
                      "a region column, ?regions=K or ?regions_like=ID",
                      a->regions == 0 ? "the dataset" : "dataset_b");
  if (a->frames > 1 || (b != NULL && b->frames > 1))
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "jackknife takes catalogues of one frame; the %s has %llu",
                      a->frames > 1 ? "dataset" : "dataset_b",
                      (unsigned long long)(a->frames > 1 ? a->frames : b->frames));
  const uint32_t r = b != NULL && b->regions > a->regions ? b->regions : a->regions;
  if (r < 2 || r > HISTD_MAX_JACKKNIFE)
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "jackknife needs 2 to %u regions, and the labels name %u", HISTD_MAX_JACKKNIFE,
                      r);
  *count = r;
  return 0;
}

/* ds's points by region, r sets (region k's in index order) into *out. */
static int split(const histd_dataset *ds, uint32_t r, histd_dataset **out, char *msg,
                 size_t msglen) {
  size_t *start = calloc((size_t)r + 1, sizeof *start);
  size_t *pick = malloc((ds->n ? ds->n : 1) * sizeof *pick);
  histd_dataset *sets = calloc(r, sizeof *sets);
  int rc = 0;
  if (start == NULL || pick == NULL || sets == NULL) {
    rc = histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %u regions of %zu points", r,
                    ds->n);
    goto done;
  }
  for (size_t i = 0; i < ds->n; i++) /* labels are 0 .. ds->regions - 1 <= r - 1 */
    start[(uint32_t)ds->region[i] + 1]++;
  for (uint32_t k = 0; k < r; k++)
    start[k + 1] += start[k];
  size_t *next = malloc((size_t)r * sizeof *next); /* each region's next place */
  if (next == NULL) {
    rc = histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %u regions", r);
    goto done;
  }
  memcpy(next, start, (size_t)r * sizeof *next);
  for (size_t i = 0; i < ds->n; i++)
    pick[next[ds->region[i]]++] = i;
  free(next);
  for (uint32_t k = 0; k < r && rc == 0; k++)
    rc = histd_dataset_pick(ds, pick + start[k], start[k + 1] - start[k], &sets[k], msg, msglen);
  if (rc == 0) {
    *out = sets;
    sets = NULL;
  }
done:
  for (uint32_t k = 0; sets != NULL && k < r; k++)
    histd_dataset_free(&sets[k]);
  free(sets);
  free(pick);
  free(start);
  return rc;
}

int histd_operands_regions(histd_operands *o, const histd_dataset *pa, const histd_dataset *pb,
                           char *msg, size_t msglen) {
  if (o->shared != NULL)
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "jackknife takes A and B with no point in both: give dataset_b, or "
                      "selections that share no point");
  histd_shape a, b;
  histd_dataset_shape(pa, &a);
  if (pb != NULL)
    histd_dataset_shape(pb, &b);
  uint32_t r;
  int rc = histd_regions_check(&a, pb != NULL ? &b : NULL, &r, msg, msglen);
  if (rc == 0 && (rc = split(pa, r, &o->regions_a, msg, msglen)) == 0)
    o->region_count = r; /* (histd_operands_regions_free frees by it) */
  if (rc == 0 && pb != NULL)
    rc = split(pb, r, &o->regions_b, msg, msglen);
  return rc;
}

void histd_operands_regions_free(histd_operands *o) {
  for (uint32_t k = 0; k < o->region_count; k++) {
    if (o->regions_a != NULL)
      histd_dataset_free(&o->regions_a[k]);
    if (o->regions_b != NULL)
      histd_dataset_free(&o->regions_b[k]);
  }
  free(o->regions_a);
  free(o->regions_b);
  o->regions_a = o->regions_b = NULL;
  o->region_count = 0;
}
