/*
 * worker.c -- the context one thread runs jobs in, and histd_run().
 *
 * A CPU worker is nothing but its device number (-1). A GPU worker holds
 * the CUDA side's per-device context: streams, device buffers and the last
 * dataset's points, kept between jobs. histd_worker_run() is the single path
 * every job takes: validate the problem and the execution, resolve the
 * default bucket count, look the kernel up in the registry, check it suits
 * the worker, run, and fill in the parts of the result that do not depend
 * on the kernel. A dataset of several frames is run frame by frame and
 * summed (run_frames). A count within a radius R is run as the one bin [0, R];
 * within 0 (collisions: exact equality) is hashed here, in O(n), whatever
 * the kernel. The weights' values are checked here too, not in
 * histd_problem_validate (engine.h's histd__weights_check says why).
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

int histd_worker_create(histd_worker **out, int device, char *msg, size_t msglen) {
  histd_worker *w = calloc(1, sizeof *w);
  if (w == NULL)
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for a worker");
  w->device = device < 0 ? -1 : device;
  if (w->device >= 0) {
    int rc = histd__cuda_context_create(&w->gpu, device, msg, msglen);
    if (rc != 0) {
      free(w);
      return rc;
    }
  }
  *out = w;
  return 0;
}

void histd_worker_destroy(histd_worker *w) {
  if (w == NULL)
    return;
  for (int i = 0; i < HISTD__MAX_SHARES; i++)
    histd_worker_destroy(w->peer[i]);
  if (w->gpu != NULL)
    histd__cuda_context_destroy(w->gpu);
  free(w);
}

int histd_worker_device(const histd_worker *w) { return w->device; }

int histd_worker_prefetch(histd_worker *w, const histd_dataset *ds, char *msg,
                          size_t msglen) {
  if (w->gpu == NULL)
    return 0;
  return histd__cuda_prefetch(w->gpu, ds, false, msg, msglen);
}

static int run_images(histd_worker *w, const histd_kernel *k, const histd_problem *p,
                      const histd_exec *ex, const histd_control *ctl, histd_result *res,
                      char *msg, size_t msglen);

/* Adds part (a frame's, a translation's run in the same bins) to res: its
 * counts, below and sums (histd_result_add_bins; err NULL: no sums),
 * refined pairs, exactness, timing, and where it ran (and, for auto, the
 * kernel it chose and why). */
static void add_part(histd_result *res, const histd_result *part, double *err, bool chose) {
  histd_result_add_bins(res, err, part);
  res->refined_pairs += part->refined_pairs;
  res->exact = res->exact && part->exact;
  res->block_size = part->block_size;
  res->threads = part->threads;
  memcpy(res->device, part->device, sizeof res->device);
  if (chose) {
    strcpy(res->kernel, part->kernel);
    strcpy(res->reason, part->reason);
  }
  res->timing.transfer_ms += part->timing.transfer_ms;
  res->timing.kernel_ms += part->timing.kernel_ms;
}

/* One frame's run: collisions (within 0) by hashing, every periodic image
 * (images.c), else the kernel. */
static int run_frame(histd_worker *w, const histd_kernel *k, const histd_problem *p,
                     const histd_exec *ex, const histd_control *ctl, histd_result *res,
                     char *msg, size_t msglen) {
  if (p->statistic == HISTD_STAT_WITHIN && p->radius == 0) {
    /* collisions: exact equality, by hashing, whatever the kernel */
    double tk = histd_now_ms();
    int rc = histd__collisions(p, &res->counts[0], res->weighted, msg, msglen);
    res->overflow = res->total - res->counts[0];
    res->exact = true;
    res->threads = 1;
    res->timing.kernel_ms = histd_now_ms() - tk;
    snprintf(res->device, sizeof res->device, "cpu: 1 thread, hash of the coordinates");
    return rc;
  }
  if (p->all_images)
    return run_images(w, k, p, ex, ctl, res, msg, msglen);
  return k->run(w, p, ex, ctl, res, msg, msglen);
}

/* One frame of every periodic image: each lattice translation's open-space
 * problem (A against B moved by it; a self problem's n = 0 its own pairs),
 * run with the kernel into a result of the bins and added up. The pairs
 * beyond the last edge are not counted (there are infinitely many):
 * overflow stays 0; total is the caller's, the pairs g(r) is normalised
 * by. */
static int run_images(histd_worker *w, const histd_kernel *k, const histd_problem *p,
                      const histd_exec *ex, const histd_control *ctl, histd_result *res,
                      char *msg, size_t msglen) {
  const histd_dataset *b = p->b != NULL ? p->b : p->a;
  const uint32_t count = res->bins.count;
  int32_t(*tr)[3] = NULL;
  size_t nt = 0;
  int rc = histd__images_plan(&p->box, p->a->min, p->a->max, b->min, b->max, p->b == NULL,
                              histd_bins_edge(&p->bins, count), &tr, &nt, msg, msglen);
  if (rc != 0)
    return rc;
  histd_dataset moved;
  memset(&moved, 0, sizeof moved);
  double *err = histd_result_add_errs(&res->bins);
  if (err == NULL || (rc = histd_dataset_alloc(&moved, b->n, msg, msglen)) != 0 ||
      (b->w != NULL && (rc = histd_dataset_alloc_weights(&moved, msg, msglen)) != 0))
    rc = rc ? rc : histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %u sums", count);
  res->exact = true;
  for (size_t t = 0; t < nt && rc == 0; t++) {
    const bool zero = tr[t][0] == 0 && tr[t][1] == 0 && tr[t][2] == 0;
    histd_problem q = *p;
    q.all_images = false;
    q.frame_boxes = false;
    q.box = (histd_box){HISTD_BOX_NONE, 0, 0, 0, 0, 0, 0};
    if (!zero) { /* n = 0: the pairs as given (a self problem's own, i < j) */
      if ((rc = histd__images_move(b, &p->box, tr[t], &moved, msg, msglen)) != 0)
        break;
      q.b = &moved;
    }
    histd_result part;
    if ((rc = histd_result_for(&part, p, msg, msglen)) != 0)
      break;
    part.precision = res->precision;
    part.statistic = res->statistic;
    strcpy(part.kernel, res->kernel);
    part.total = histd_problem_pairs(&q);
    part.cross = q.b != NULL;
    histd__part pc = {ctl, (double)t, (double)nt};
    histd_control sub = histd__part_control(&pc);
    rc = k->run(w, &q, ex, &sub, &part, msg, msglen);
    if (rc == 0)
      add_part(res, &part, err, histd__kernel_is_auto(k));
    histd_result_free(&part);
  }
  if (rc == 0)
    histd_result_add_done(res, err);
  res->overflow = 0;
  res->all_images = true;
  free(err);
  free(tr);
  histd_dataset_free(&moved);
  return rc;
}

/* Frame problem pf's part: shard sh of it (ps, on views of its blocks), or
 * all of it (sh NULL, ps == pf); a shard of a plain self histogram that
 * would run brute force on a GPU runs on the whole resident frame instead
 * of copies of its blocks. */
static int run_part(histd_worker *w, const histd_kernel *k, const histd_problem *pf,
                    const histd_problem *ps, const histd_shard *sh, const histd_exec *ex,
                    const histd_control *ctl, histd_result *res, char *msg, size_t msglen) {
  if (sh != NULL && histd__cuda_tiles_fit(w, k, pf, ps, sh, ex))
    return histd__cuda_tiles_run(w, pf, ex, sh, ctl, res, msg, msglen);
  return run_frame(w, k, ps, ex, ctl, res, msg, msglen);
}

/* Takes frame problem pf's excluded pairs (x; NULL: none) within shard sh
 * (NULL: all) out of r: its counts, below, overflow and total; adds them to
 * r->excluded. */
static int take_excluded(const histd__exclusions *x, const histd_problem *pf,
                         const histd_shard *sh, histd_result *r, char *msg, size_t msglen) {
  if (x == NULL)
    return 0;
  const uint32_t count = r->bins.count;
  histd__sink s;
  if (histd__sink_init(&s, count, 0) != 0)
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %u bins", count);
  const uint64_t n = histd__exclusions_count(x, pf, sh, &s);
  for (uint32_t k = 0; k < count; k++)
    r->counts[k] -= s.counts[k];
  r->below -= s.counts[count];
  r->overflow -= s.counts[count + 1];
  r->total -= n;
  r->excluded += n;
  histd__sink_free(&s);
  return 0;
}

/* Several frames: each run on its own (its views of a and b, its box) into
 * a result of the same bins, and summed into res; weighted sums with
 * Neumaier's compensation across frames. volume becomes the one that
 * normalises g(r) by the frames' total: total / sum_f (P_f / V_f). */
static int run_frames(histd_worker *w, const histd_kernel *k, const histd_problem *p,
                      const histd_exec *ex, const histd_shard *sh, const histd_control *ctl,
                      const histd__exclusions *x, histd_result *res, char *msg, size_t msglen) {
  const size_t frames = histd_problem_frames(p);
  const uint32_t count = (uint32_t)histd_bins_slots(&res->bins);
  double *err = histd_result_add_errs(&res->bins), density = 0, v0 = 0;
  if (err == NULL)
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %u slots' sums", count);
  int rc = 0;
  res->exact = true;
  /* On a GPU the next frame's points are copied while this frame's kernels
   * run (histd__cuda_prefetch: the copy stream, into the slot the frame
   * before used), sealed: the views stay as they are until their run, which
   * then trusts the copy without comparing it. Frame f's views live in
   * [f % 2], so that the prefetched views are the ones its run asks for.
   * HISTD_FRAME_PREFETCH=0 turns it off (the benchmark's baseline). */
  histd_dataset fa[2], fb[2];
  histd_problem fp[2];
  const char *knob = getenv("HISTD_FRAME_PREFETCH");
  const bool prefetch = w->gpu != NULL && sh == NULL && !p->all_images &&
                        !(knob != NULL && strcmp(knob, "0") == 0);
  histd_problem_frame(p, 0, &fa[0], &fb[0], &fp[0]);
  if (prefetch) /* a copy that fails here is made again by the run */
    histd__cuda_prefetch(w->gpu, fp[0].a, true, NULL, 0);
  for (size_t f = 0; f < frames && rc == 0; f++) {
    const histd_problem pf = fp[f % 2];
    if (f + 1 < frames) {
      const size_t g = (f + 1) % 2;
      histd_problem_frame(p, f + 1, &fa[g], &fb[g], &fp[g]);
      if (prefetch)
        histd__cuda_prefetch(w->gpu, fp[g].a, true, NULL, 0);
    }
    histd_dataset sa, sb;
    histd_problem ps;
    if (sh != NULL)
      histd__problem_shard(&pf, sh, &sa, &sb, &ps);
    else
      ps = pf;
    histd_result part;
    if ((rc = histd_result_for(&part, p, msg, msglen)) != 0)
      break;
    part.precision = res->precision;
    part.statistic = res->statistic;
    part.radius = res->radius;
    strcpy(part.kernel, res->kernel);
    part.total = histd_problem_pairs(&ps);
    part.n = pf.a->n;
    part.n_b = pf.b != NULL ? pf.b->n : 0;
    part.cross = res->cross;
    part.volume = histd_box_volume(&pf.box);
    histd__part fc = {ctl, (double)f, (double)frames};
    histd_control sub = histd__part_control(&fc);
    rc = run_part(w, k, &pf, &ps, sh, ex, &sub, &part, msg, msglen);
    if (rc == 0)
      rc = take_excluded(x, &pf, sh, &part, msg, msglen);
    if (rc == 0 && res->frame_counts != NULL) {
      memcpy(res->frame_counts + f * count, part.counts, count * sizeof *part.counts);
      res->frame_total[f] = part.total;
      res->frame_below[f] = part.below;
      res->frame_volume[f] = part.volume;
    }
    if (rc == 0) {
      add_part(res, &part, err, histd__kernel_is_auto(k));
      res->overflow += part.overflow;
      res->total -= part.excluded;
      res->excluded += part.excluded;
      res->volume_sum += part.volume;
      if (part.volume > 0) {
        density += (double)part.total / part.volume;
        if (f == 0)
          v0 = part.volume;
      }
      histd__progress(ctl, (double)(f + 1) / (double)frames); /* a frame done, whatever
                                                               * the kernel reported */
    }
    histd_result_free(&part);
  }
  if (prefetch) /* the frame views go away with this call */
    histd__cuda_unseal(w->gpu);
  histd_result_add_done(res, err);
  free(err);
  res->density = density;
  if (v0 > 0)
    res->volume = density > 0 ? (double)res->total / density : v0;
  return rc;
}

/* Whether kernel k runs a statistic of points by brute force (the CPU's
 * plain kernels) rather than by the cell grid ("grid", and "auto", which
 * chooses it). */
static bool points_brute(const histd_kernel *k) {
  return strcmp(k->name, "cpu") == 0 || strcmp(k->name, "cpu-reference") == 0;
}

/* PAIRS with a result limit: the pairs within the radius counted first
 * (the plain count, by the fastest kernel), so that a list larger than
 * the limit is refused before a record is written. */
static int pairs_fit(histd_worker *w, const histd_problem *p, const histd_exec *ex,
                     const histd_control *ctl, char *msg, size_t msglen) {
  histd_problem q = *p;
  q.statistic = HISTD_STAT_WITHIN;
  q.same_atoms = false; /* counts a selection's shared points too: at most the list */
  histd_exec qe = *ex;
  snprintf(qe.kernel, sizeof qe.kernel, "auto");
  histd_control qc = {0};
  if (ctl != NULL)
    qc = (histd_control){NULL, ctl->cancelled, ctl->user, NULL};
  histd_result r;
  int rc = histd_worker_run(w, &q, &qe, &qc, &r, msg, msglen);
  if (rc != 0)
    return rc;
  const uint64_t within = r.within;
  histd_result_free(&r);
  if (histd_pairs_bytes(within) > p->result_limit)
    return histd_fail(msg, msglen, HISTD_ETOOBIG,
                      "the pair list would hold %llu pairs within %g, %llu bytes, more than the "
                      "%llu bytes a result may take; give a smaller radius or fewer points",
                      (unsigned long long)within, p->radius,
                      (unsigned long long)histd_pairs_bytes(within),
                      (unsigned long long)p->result_limit);
  return 0;
}

/* The kernel frame 0 of p runs: k, or where k is "auto" its choice (into
 * *c), as auto's run makes it. */
static const histd_kernel *frame_kernel(const histd_worker *w, const histd_kernel *k,
                                        const histd_problem *p, const histd_exec *ex,
                                        histd__choice *c) {
  if (!histd__kernel_is_auto(k))
    return k;
  histd_dataset a0, b0;
  histd_problem p0;
  histd_problem_frame(p, 0, &a0, &b0, &p0);
  histd__choose(w, &p0, ex, 0, c);
  return c->kernel;
}

/* The statistics of points (POINT_COUNTS, NEAREST, PAIRS): each frame
 * into its row of the result, or its records to ctl->pairs. */
static int run_points(histd_worker *w, const histd_kernel *k, const histd_problem *p,
                      const histd_exec *ex, const histd_control *ctl, histd_result *res,
                      char *msg, size_t msglen) {
  const size_t frames = histd_problem_frames(p);
  if (histd__kernel_is_auto(k)) { /* what it chooses for points: the grid */
    histd__choice c;
    k = frame_kernel(w, k, p, ex, &c);
    snprintf(res->kernel, sizeof res->kernel, "%s", c.kernel->name);
    snprintf(res->reason, sizeof res->reason, "%s", c.reason);
  }
  const bool brute = points_brute(k);
  histd_exec e = *ex;
  if (strcmp(k->name, "cpu-reference") == 0)
    e.threads = 1; /* the definition, on one thread */
  ex = &e;
  int rc = 0;
  if (p->statistic == HISTD_STAT_PAIRS &&
      (res->frame_pairs = calloc(frames ? frames : 1, sizeof *res->frame_pairs)) == NULL)
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %zu frames", frames);
  for (size_t f = 0; f < frames && rc == 0; f++) {
    histd_dataset a, b;
    histd_problem pf;
    histd_problem_frame(p, f, &a, &b, &pf);
    const uint64_t before = res->pairs;
    histd__part pt = {ctl, (double)f, (double)frames};
    histd_control sub = histd__part_control(&pt);
    /* a GPU worker runs them on its GPU unless a CPU kernel was named */
    rc = w->gpu != NULL && !brute
             ? histd__cuda_points_run(w, &pf, ex, &sub, f, res, msg, msglen)
             : histd__points_run(&pf, ex, &sub, brute, f, res, msg, msglen);
    if (rc == 0 && res->frame_pairs != NULL)
      res->frame_pairs[f] = res->pairs - before;
    if (rc == 0)
      histd__progress(ctl, (double)(f + 1) / (double)frames);
  }
  return rc;
}

/* Whether each point of A is also in B (a self problem: all; selections of
 * one dataset: those whose origin B holds; else none), into in_b[n]. */
static int points_in_b(const histd_problem *p, const histd_dataset *a, const histd_dataset *b,
                       bool *in_b, char *msg, size_t msglen) {
  const bool self = p->b == NULL;
  if (self || !p->same_atoms || a->origin == NULL || b->origin == NULL) {
    for (size_t i = 0; i < a->n; i++)
      in_b[i] = self || (p->same_atoms && a->origin == NULL && b->origin == NULL);
    return 0;
  }
  uint64_t top = 0; /* the origins are indices in the dataset: a bitmap of B's */
  for (size_t j = 0; j < b->n; j++)
    top = b->origin[j] > top ? b->origin[j] : top;
  for (size_t i = 0; i < a->n; i++)
    top = a->origin[i] > top ? a->origin[i] : top;
  unsigned char *mark = calloc((size_t)(top / 8 + 1), 1);
  if (mark == NULL)
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for the points of B");
  for (size_t j = 0; j < b->n; j++)
    mark[b->origin[j] / 8] |= (unsigned char)(1u << (b->origin[j] % 8));
  for (size_t i = 0; i < a->n; i++)
    in_b[i] = (mark[a->origin[i] / 8] >> (a->origin[i] % 8)) & 1u;
  free(mark);
  return 0;
}

/* A per-point histogram's rows (the driver's counts and below) become the
 * whole result: each point's partners (B's points a frame, less itself
 * where it is in B, summed over the frames), the counts' column sums, and
 * below, overflow, total, the pair density and volume as a histogram of
 * the same ordered pairs has them. */
static int point_histogram_sums(const histd_problem *p, histd_result *res, char *msg,
                                size_t msglen) {
  const size_t frames = histd_problem_frames(p), n = res->point_n;
  const uint32_t count = res->bins.count;
  bool *in_b = malloc(n ? n : 1);
  if (in_b == NULL)
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %zu points", n);
  double density = 0;
  int rc = 0;
  res->total = 0;
  res->volume_sum = 0;
  for (size_t f = 0; f < frames && rc == 0; f++) {
    histd_dataset a, b;
    histd_problem pf;
    histd_problem_frame(p, f, &a, &b, &pf);
    const histd_dataset *bf = pf.b != NULL ? pf.b : pf.a;
    if (f == 0 && (rc = points_in_b(&pf, pf.a, bf, in_b, msg, msglen)) != 0)
      break;
    uint64_t pairs = 0;
    for (size_t i = 0; i < n; i++) {
      const uint64_t partners = bf->n - in_b[i];
      res->point_partners[i] += partners;
      pairs += partners;
    }
    res->total += pairs;
    const double v = histd_box_volume(&pf.box);
    res->volume_sum += v;
    if (v > 0)
      density += (double)pairs / v;
  }
  free(in_b);
  if (rc != 0)
    return rc;
  uint64_t binned = 0;
  res->below = 0;
  for (size_t i = 0; i < n; i++) {
    const uint64_t *row = res->point_hist + i * count;
    for (uint32_t k = 0; k < count; k++)
      res->counts[k] += row[k];
    res->below += res->point_below[i];
  }
  for (uint32_t k = 0; k < count; k++)
    binned += res->counts[k];
  res->overflow = res->total - res->below - binned;
  res->density = density;
  res->volume = density > 0 ? (double)res->total / density : 0;
  return 0;
}

int histd__problem_resolve(const histd_problem *p, double within_edges[2], histd_problem *out,
                           char *msg, size_t msglen) {
  *out = *p;
  /* within R is the one bin [0, R]: E[0] = 0 <= d < E[1] = the next double
   * above R, i.e. d <= R */
  const histd_statistic_info *in = histd_statistic_about(p->statistic);
  if (in->answer != HISTD_ANSWER_BINS && !in->binned) {
    out->bins = (histd_bins){HISTD_BINS_EDGES, 0, 0, NULL, 0, 0}; /* no bins */
  } else if (p->statistic == HISTD_STAT_WITHIN) {
    within_edges[0] = 0;
    within_edges[1] = nextafter(p->radius, INFINITY);
    out->bins = (histd_bins){HISTD_BINS_EDGES, 1, 0, within_edges, 0, 0};
  } else if (p->bins.kind == HISTD_BINS_WIDTH && p->bins.count == 0) {
    return histd_default_bins(out, &out->bins.count, msg, msglen);
  }
  return 0;
}

int histd_worker_run(histd_worker *w, const histd_problem *p, const histd_exec *ex,
                     const histd_control *ctl, histd_result *res, char *msg, size_t msglen) {
  return histd_worker_run_shard(w, p, ex, NULL, ctl, res, msg, msglen);
}

/* Piece k's result into the partial of its species pair: its counts,
 * pairs, pairs below the first edge and pair density. */
static void keep_partial(histd_result *res, uint32_t k, const histd_result *part) {
  const uint32_t bins = res->bins.count;
  memcpy(res->partial_counts + (size_t)k * bins, part->counts, bins * sizeof *part->counts);
  res->partial_total[k] = part->total;
  res->partial_below[k] = part->below;
  res->partial_density[k] = part->density;
}

/* Piece k's result into its jackknife regions' rows: region s's and, for
 * two regions, t's (regions.c's rule). */
static void keep_region(histd_result *res, const histd_problem *p, uint32_t k,
                        const histd_result *part) {
  const size_t slots = (size_t)histd_bins_slots(&res->bins);
  uint32_t s, t;
  histd_problem_piece_regions(p, k, &s, &t);
  for (int twice = 0; twice < (s == t ? 1 : 2); twice++) {
    const size_t row = twice ? t : s;
    uint64_t *c = res->region_counts + row * slots;
    for (size_t i = 0; i < slots; i++)
      c[i] += part->counts[i];
    for (size_t i = 0; res->region_weighted != NULL && i < slots; i++)
      res->region_weighted[row * slots + i] += part->weighted[i];
    res->region_total[row] += part->total;
  }
}

/* Each region's points (and weights' sums, Neumaier-compensated) of the
 * sets `sets` into n, w and w2 (w NULL: unweighted). */
static void region_points(const histd_dataset *sets, uint32_t r, uint64_t *n, double *w,
                          double *w2) {
  for (uint32_t k = 0; k < r; k++) {
    n[k] = sets[k].n;
    double s = 0, se = 0, q = 0, qe = 0;
    for (size_t i = 0; w != NULL && i < sets[k].n; i++) {
      histd_ev_neumaier(&s, &se, sets[k].w[i]);
      histd_ev_neumaier(&q, &qe, sets[k].w[i] * sets[k].w[i]);
    }
    if (w != NULL) {
      w[k] = s + se;
      w2[k] = q + qe;
    }
  }
}

/* Whether shard sh is all of p (the one shard a problem that is not cut
 * makes: histd_shard_plan_make). */
static bool shard_whole(const histd_problem *p, const histd_shard *sh) {
  const histd_dataset *b = p->b != NULL ? p->b : p->a;
  return sh->i0 == 0 && sh->j0 == 0 && sh->i1 >= histd__most_points(p->a) &&
         sh->j1 >= histd__most_points(b);
}

/* A problem in pieces (two selections that share atoms, src/job/pairing.c;
 * one set's species, src/job/partials.c; jackknife regions,
 * src/job/regions.c): each piece run on its own and the results added as
 * shards' are, each species pair's also kept as its partial, each region
 * pair's also added to its regions'; the one shard such a problem is cut
 * into (histd_shard_plan_make) is all of it. */
static int run_pieces(histd_worker *w, const histd_problem *p, const histd_exec *ex,
                      const histd_shard *sh, const histd_control *ctl, histd_result *res,
                      char *msg, size_t msglen) {
  const double t0 = histd_now_ms();
  const uint32_t n = histd_problem_pieces(p);
  if (sh != NULL && !shard_whole(p, sh))
    return histd_fail(msg, msglen, HISTD_EINVAL, "a job counted in pieces is not cut into shards");
  int rc = histd_problem_validate(p, msg, msglen), ran = 0;
  double *err = NULL;
  uint64_t most = 0;
  for (uint32_t k = 0; rc == 0 && k < n; k++) {
    histd_problem piece;
    histd_problem_piece(p, k, &piece);
    const uint64_t pairs = histd_problem_pairs(&piece);
    if (pairs == 0)
      continue; /* an empty piece: nothing to count (a kernel is not asked) */
    histd__part fc = {ctl, (double)k, (double)n};
    histd_control sub = histd__part_control(&fc);
    histd_result part;
    if ((rc = histd_worker_run_shard(w, &piece, ex, NULL, &sub, &part, msg, msglen)) != 0)
      break;
    if (ran++ == 0) {
      *res = part;
      most = pairs;
      if ((err = histd_result_add_errs(&res->bins)) == NULL)
        rc = histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for the sums' compensations");
      if (rc == 0 && p->species != NULL && histd_result_partials(res, n) != 0)
        rc = histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %u partials", n);
      if (rc == 0 && p->species != NULL)
        keep_partial(res, k, &part);
      if (rc == 0 && p->regions_a != NULL &&
          histd_result_regions(res, p->region_count, p->regions_b != NULL) != 0)
        rc = histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %u regions' counts",
                        p->region_count);
      if (rc == 0 && p->regions_a != NULL)
        keep_region(res, p, k, &part);
      continue;
    }
    if (p->species != NULL)
      keep_partial(res, k, &part);
    if (p->regions_a != NULL)
      keep_region(res, p, k, &part);
    rc = histd_result_add(res, err, &part, msg, msglen);
    if (pairs > most) { /* the kernel that ran the most pairs ("auto" may choose per piece) */
      most = pairs;
      strcpy(res->kernel, part.kernel);
      strcpy(res->reason, part.reason);
    }
    histd_result_free(&part);
  }
  if (rc == 0 && ran == 0)
    rc = histd_fail(msg, msglen, HISTD_EINVAL,
                    p->species != NULL     ? "the species hold no pair of distinct atoms"
                    : p->regions_a != NULL ? "the catalogues hold no pair of distinct points"
                                           : "the selections hold no pair of distinct atoms");
  if (rc != 0) {
    if (ran > 0)
      histd_result_free(res);
    free(err);
    return rc;
  }
  histd_result_add_done(res, err);
  free(err);
  if (p->species != NULL) { /* the partials' atoms: A's of each species, every frame's */
    for (uint32_t k = 0; k < n; k++) {
      histd_problem piece;
      histd_problem_piece(p, k, &piece);
      res->partial_na[k] = piece.a->n;
      res->partial_nb[k] = piece.b != NULL ? piece.b->n : piece.a->n;
    }
    snprintf(res->species, sizeof res->species, "%s", p->species_names);
    res->n = p->a->n;
    res->n_b = 0;
    res->cross = false;
  } else if (p->regions_a != NULL) { /* A and B whole (a piece may have been either kind) */
    region_points(p->regions_a, p->region_count, res->region_na, res->region_wa,
                  res->region_wa2);
    if (p->regions_b != NULL)
      region_points(p->regions_b, p->region_count, res->region_nb, res->region_wb,
                    res->region_wb2);
    res->n = p->a->n;
    res->n_b = p->b != NULL ? p->b->n : 0;
    res->cross = p->b != NULL;
    res->pairing = p->pairing;
  } else {
    res->n = p->a->n + p->shared->n; /* A and B whole, every frame's together */
    res->n_b = p->b->n + p->shared->n;
    res->cross = true;
    res->pairing = HISTD_PAIRING_DISTINCT;
  }
  res->timing.total_ms = histd_now_ms() - t0;
  return 0;
}

int histd__job_devices(int own, uint64_t mask, int *dev, int max) {
  histd_device_info info[64];
  int count = 0;
  char why[128];
  if (histd__cuda_devices(info, 64, &count, why, sizeof why) != 0)
    count = 0;
  int m = 0;
  if (mask == 0 || (own >= 0 && own < 64 && (mask >> own) & 1))
    dev[m++] = own;
  for (int d = 0; d < count && d < 64 && m < max; d++)
    if (d != own && (mask == 0 || ((mask >> d) & 1)))
      dev[m++] = d;
  return m;
}

/*
 * Several GPUs for a job of the family's kernels, which run on one GPU (the
 * grid and tiled-stats, the kernels of every statistic): the job is cut into shards
 * (histd_shard_plan_make, a few a GPU) and each GPU runs its share, a
 * worker of its own in a thread of its own (the job's worker on its own
 * GPU), the shards dealt out largest first to the GPU with the fewest
 * pairs so far; their results are added as a cluster's partials are
 * (histd_result_add), so the counts are the one-GPU job's and the weighted
 * sums agree to rounding. The plain histogram's own kernels are left as
 * they run: the seeds' family and tensor-core split a self job over the
 * GPUs themselves (gpu_engine.c's histd__cuda_parts). The other GPUs'
 * workers are kept (the job's worker's peers) for the next job cut so.
 * Progress is the pairs of the shards done, and of each GPU's shard in
 * flight by its own progress, over the job's. Only jobs of at least
 * HISTD_GPU_SPLIT_MIN_PAIRS pairs (2e10) are cut, as there;
 * HISTD_GPU_FAKE_SPLIT=k (tests) cuts over k workers of the job's own GPU.
 */
/* Adds part (taken) into *sum, counting the parts in *ran: the first
 * becomes the sum, with *err (its sums' compensations, for
 * histd_result_add) made for it. 0 or an error. */
static int sum_part(histd_result *sum, double **err, int *ran, histd_result *part, char *msg,
                    size_t msglen) {
  if ((*ran)++ == 0) {
    *sum = *part;
    memset(part, 0, sizeof *part);
    if ((*err = histd_result_add_errs(&sum->bins)) == NULL)
      return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for the sums' compensations");
    return 0;
  }
  int rc = histd_result_add(sum, *err, part, msg, msglen);
  histd_result_free(part);
  return rc;
}

typedef struct device_share device_share;

/* What the GPUs' shares of one job share: their progress. */
typedef struct device_job {
  const histd_control *ctl;
  pthread_mutex_t lock;
  double pairs, reported; /* the job's; the fraction reported */
  device_share *d;
  int nd;
} device_job;

struct device_share {
  histd_worker *w;        /* NULL until made (another GPU's) */
  bool peer;              /* w is the job's worker's peer (kept or made) */
  device_job *job;
  double done, shard, in_shard; /* pairs: of the shards done, the one in flight, done of it */
  int device;
  const histd_problem *p;
  const histd_exec *ex;
  const histd_shard_plan *plan;
  const uint64_t *order;  /* the plan's shards, largest first */
  const uint64_t *pairs;  /* each shard's pairs */
  const int *owner;       /* each of order's GPU (an index of the shares) */
  int me;
  histd_control ctl;
  histd_result sum;
  double *err;
  int ran, rc;
  double kernel_ms, transfer_ms;
  char msg[512];
};

/* Reports the job's progress: the pairs of the shards done and in flight. */
static void job_report(device_job *j) {
  pthread_mutex_lock(&j->lock);
  double done = 0;
  for (int i = 0; i < j->nd; i++)
    done += j->d[i].done + j->d[i].in_shard;
  pthread_mutex_unlock(&j->lock);
  histd__progress_step(j->ctl, &j->lock, &j->reported, done / j->pairs);
}

/* A share's shard in flight is x done (its worker's progress). */
static void share_progress(void *u, double x) {
  device_share *d = u;
  pthread_mutex_lock(&d->job->lock);
  d->in_shard = x * d->shard;
  pthread_mutex_unlock(&d->job->lock);
  job_report(d->job);
}

static bool share_cancelled(void *u) { return histd__cancelled(((device_share *)u)->job->ctl); }

static void *device_share_run(void *arg) {
  device_share *d = arg;
  if (d->w == NULL && (d->rc = histd_worker_create(&d->w, d->device, d->msg, sizeof d->msg)) != 0)
    return NULL;
  for (uint64_t k = 0; k < d->plan->count && d->rc == 0; k++) {
    if (d->owner[k] != d->me)
      continue;
    histd_shard sh;
    histd_result part;
    histd_shard_get(d->plan, d->order[k], &sh);
    d->shard = (double)d->pairs[d->order[k]];
    if ((d->rc = histd_worker_run_shard(d->w, d->p, d->ex, &sh, &d->ctl, &part, d->msg,
                                        sizeof d->msg)) != 0)
      break;
    pthread_mutex_lock(&d->job->lock);
    d->done += d->shard;
    d->in_shard = 0;
    pthread_mutex_unlock(&d->job->lock);
    job_report(d->job);
    d->kernel_ms += part.timing.kernel_ms;
    d->transfer_ms += part.timing.transfer_ms;
    d->rc = sum_part(&d->sum, &d->err, &d->ran, &part, d->msg, sizeof d->msg);
  }
  if (d->ran > 0)
    histd_result_add_done(&d->sum, d->err);
  return NULL;
}

/* Whether p (resolved, one frame or several) runs on the GPUs of dev[0..nd)
 * by shards (above), and then the run: 1 (not cut: run it as one), 0 (res
 * filled) or an error. */
static int run_devices(histd_worker *w, const histd_problem *p, const histd_problem *p_in,
                       const histd_exec *ex, const histd_kernel *k, const histd_control *ctl,
                       histd_result *res, char *msg, size_t msglen) {
  if (histd_statistic_about(p->statistic)->answer != HISTD_ANSWER_BINS || p->all_images ||
      (double)histd_problem_pairs(p) < histd__env_number("HISTD_GPU_SPLIT_MIN_PAIRS", 2e10))
    return 1; /* (before asking for the GPUs: most jobs stop here) */
  int dev[64];
  const int fake = (int)histd__env_number("HISTD_GPU_FAKE_SPLIT", 0);
  int nd = histd__job_devices(w->device, ex->devices, dev, HISTD__MAX_SHARES);
  if (fake > 1)
    for (nd = 0; nd < fake && nd < HISTD__MAX_SHARES; nd++)
      dev[nd] = w->device;
  if (nd < 2)
    return 1;
  histd__choice c;
  const histd_kernel *kk = frame_kernel(w, k, p, ex, &c);
  if (kk->engine == HISTD_ENGINE_CPU || !(kk->caps & HISTD_CAN_BINS2))
    return 1; /* the plain histogram's own kernels: the seeds' family and tensor-core
               * split a self job themselves, and their A x B runs on one */
  histd_shard_plan plan;
  histd_shard_plan_make(p, kk->name, (uint64_t)nd * 4, &plan);
  if (plan.count < (uint64_t)nd)
    return 1;
  uint64_t *order = malloc(plan.count * sizeof *order), *pairs = malloc(plan.count * 8);
  int *owner = malloc(plan.count * sizeof *owner);
  device_share *d = calloc((size_t)nd, sizeof *d);
  pthread_t *t = calloc((size_t)nd, sizeof *t);
  int rc = 0;
  if (order == NULL || pairs == NULL || owner == NULL || d == NULL || t == NULL) {
    rc = histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %d GPUs' shares", nd);
    goto done;
  }
  for (uint64_t s = 0; s < plan.count; s++) {
    histd_shard sh;
    histd_shard_get(&plan, s, &sh);
    pairs[s] = histd_shard_pairs(p, &sh);
    uint64_t at = s; /* insertion: largest first */
    while (at > 0 && pairs[order[at - 1]] < pairs[s]) {
      order[at] = order[at - 1];
      at--;
    }
    order[at] = s;
  }
  uint64_t load[HISTD__MAX_SHARES] = {0};
  device_job job = {ctl, PTHREAD_MUTEX_INITIALIZER, 0, 0, d, nd};
  for (uint64_t s = 0; s < plan.count; s++)
    job.pairs += (double)pairs[s];
  for (uint64_t k2 = 0; k2 < plan.count; k2++) {
    int least = 0;
    for (int i = 1; i < nd; i++)
      if (load[i] < load[least])
        least = i;
    owner[k2] = least;
    load[least] += pairs[order[k2]];
  }
  const double t0 = histd_now_ms();
  int started = 0;
  for (int i = 0; i < nd; i++) { /* (calloc zeroed the rest) */
    if (i == 0 && dev[0] == w->device) {
      d[i].w = w;
    } else { /* a peer: the one kept for share i, if it is on the same GPU */
      if (w->peer[i] != NULL && w->peer[i]->device != dev[i]) {
        histd_worker_destroy(w->peer[i]);
        w->peer[i] = NULL;
      }
      d[i].w = w->peer[i];
      d[i].peer = true;
    }
    d[i].device = dev[i];
    d[i].job = &job;
    d[i].p = p_in;
    d[i].ex = ex;
    d[i].plan = &plan;
    d[i].order = order;
    d[i].pairs = pairs;
    d[i].owner = owner;
    d[i].me = i;
    d[i].ctl = (histd_control){share_progress, share_cancelled, &d[i], NULL};
    if (pthread_create(&t[i], NULL, device_share_run, &d[i]) != 0) {
      rc = histd_fail(msg, msglen, HISTD_EIO, "cannot start a thread for GPU %d", dev[i]);
      break;
    }
    started++;
  }
  for (int i = 0; i < started; i++) {
    pthread_join(t[i], NULL);
    if (d[i].peer) { /* kept for the next job, unless its share failed (a GPU lost, ...) */
      if (d[i].rc != 0 && d[i].rc != HISTD_ECANCELED) {
        histd_worker_destroy(d[i].w);
        d[i].w = NULL;
      }
      w->peer[i] = d[i].w;
    }
  }
  for (int i = 0; i < started && rc == 0; i++)
    if (d[i].rc != 0)
      rc = histd_fail(msg, msglen, d[i].rc, "GPU %d: %s", dev[i], d[i].msg);
  double *err = NULL;
  int merged = 0;
  for (int i = 0; rc == 0 && i < started; i++)
    if (d[i].ran > 0) {
      d[i].ran = 0; /* (its sum is taken) */
      rc = sum_part(res, &err, &merged, &d[i].sum, msg, msglen);
    }
  if (rc == 0) {
    histd_result_add_done(res, err);
    /* the first GPU's device text, then the others, and the shards */
    size_t len = strlen(res->device);
    res->timing.kernel_ms = res->timing.transfer_ms = 0;
    for (int i = 0; i < started; i++) { /* the slowest GPU's times */
      if (d[i].kernel_ms > res->timing.kernel_ms)
        res->timing.kernel_ms = d[i].kernel_ms;
      if (d[i].transfer_ms > res->timing.transfer_ms)
        res->timing.transfer_ms = d[i].transfer_ms;
      if (i > 0 && len < sizeof res->device)
        len += (size_t)snprintf(res->device + len, sizeof res->device - len, " + GPU %d",
                                dev[i]);
    }
    if (len < sizeof res->device)
      snprintf(res->device + len, sizeof res->device - len, " (%llu shards)",
               (unsigned long long)plan.count);
    res->timing.total_ms = histd_now_ms() - t0;
  } else if (merged > 0) {
    histd_result_free(res);
  }
  free(err);
done:
  for (int i = 0; d != NULL && i < nd; i++) {
    if (d[i].ran > 0)
      histd_result_free(&d[i].sum);
    free(d[i].err);
  }
  free(order);
  free(pairs);
  free(owner);
  free(d);
  free(t);
  return rc;
}

int histd_worker_run_shard(histd_worker *w, const histd_problem *p_in, const histd_exec *ex_in,
                           const histd_shard *sh, const histd_control *ctl, histd_result *res,
                           char *msg, size_t msglen) {
  double t0 = histd_now_ms();
  memset(res, 0, sizeof *res);
  if (histd_problem_in_pieces(p_in))
    return run_pieces(w, p_in, ex_in, sh, ctl, res, msg, msglen);
  int rc = histd_problem_validate(p_in, msg, msglen);
  if (rc == 0)
    rc = histd__weights_check(p_in, msg, msglen);
  if (rc == 0)
    rc = histd_exec_validate(ex_in, p_in, msg, msglen);
  if (rc != 0)
    return rc;
  histd_problem p;
  histd_exec ex = *ex_in;
  double within_edges[2];
  if ((rc = histd__problem_resolve(p_in, within_edges, &p, msg, msglen)) != 0)
    return rc;
  const histd_kernel *k = histd_kernel_find(ex.kernel);
  if (k->engine == HISTD_ENGINE_CUDA && w->device < 0)
    return histd_fail(msg, msglen, HISTD_ENODEV,
                      "kernel \"%s\" needs a GPU, and this worker runs on the CPU", k->name);
  if (k->engine == HISTD_ENGINE_CPU && w->device >= 0)
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "kernel \"%s\" runs on the CPU, and this worker owns GPU %d",
                      k->name, w->device);
  snprintf(ex.kernel, sizeof ex.kernel, "%s", k->name);
  const bool points = histd_statistic_about(p.statistic)->answer != HISTD_ANSWER_BINS;
  if (points && sh != NULL)
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "per-point results and pair lists are not cut into shards");
  if (p.all_images && sh != NULL && !shard_whole(&p, sh))
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "every periodic image (images \"all\") is not cut into shards: run it on "
                      "one device");
  if (p.all_images)
    sh = NULL; /* the one shard it is cut into: all of it */
  if (histd_statistic_about(p.statistic)->answer == HISTD_ANSWER_PAIRS && p.result_limit != 0 &&
      (rc = pairs_fit(w, &p, &ex, ctl, msg, msglen)) != 0)
    return rc;
  if (sh == NULL && w->device >= 0 && !points &&
      (rc = run_devices(w, &p, p_in, &ex, k, ctl, res, msg, msglen)) != 1) {
    if (rc == 0)
      histd__progress(ctl, 1.0);
    return rc;
  }
  rc = 0;
  const uint64_t frames = histd_problem_frames(&p);
  const uint64_t point_n = frames > 1 && p.a->frame ? p.a->frame[0].n : p.a->n;
  if (points) {
    if (histd_statistic_per_point(p.statistic))
      rc = histd_result_init_points(res, p.statistic, &p.bins, frames, point_n, p.weighted, msg,
                                    msglen);
    else
      memset(res, 0, sizeof *res);
    if (rc == 0 && p.a->origin != NULL && histd_statistic_per_point(p.statistic)) {
      if ((res->point_index = malloc(point_n * sizeof *res->point_index)) == NULL)
        rc = histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for the points' indices");
      else
        memcpy(res->point_index, p.a->origin, point_n * sizeof *res->point_index);
    }
    if (rc != 0) {
      histd_result_free(res);
      return rc;
    }
  } else if ((rc = histd_result_for(res, &p, msg, msglen)) != 0) {
    return rc;
  }
  res->precision = ex.precision;
  res->statistic = p.statistic;
  res->radius = p.radius;
  strcpy(res->kernel, k->name);
  res->total = sh != NULL ? histd_shard_pairs(&p, sh) : histd_problem_pairs(&p);
  res->n = p.a->n;
  res->n_b = p.b != NULL ? p.b->n : 0;
  res->cross = p.b != NULL;
  res->pairing = p.pairing;
  res->blocks = p.blocks;
  res->frames = histd_problem_frames(&p);
  res->box_from_dataset = p.frame_boxes;
  res->exclude_molecule = p.exclude_molecule;
  res->all_images = p.all_images;
  res->los_midpoint = p.los_midpoint;
  memcpy(res->unit, p.a->unit, sizeof res->unit);
  histd__exclusions excl;
  if (p.exclude_molecule && (rc = histd__exclusions_init(&excl, &p, msg, msglen)) != 0) {
    histd_result_free(res);
    return rc;
  }
  const histd__exclusions *x = p.exclude_molecule ? &excl : NULL;
  if (p.per_frame && histd_result_per_frame(res, res->frames) != 0) {
    if (x != NULL)
      histd__exclusions_free(&excl);
    histd_result_free(res);
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for the per-frame counts");
  }
  if (points) {
    rc = run_points(w, k, &p, &ex, ctl, res, msg, msglen);
    if (rc == 0 && p.statistic == HISTD_STAT_POINT_HISTOGRAM)
      rc = point_histogram_sums(&p, res, msg, msglen);
  } else if (res->frames > 1) {
    rc = run_frames(w, k, &p, &ex, sh, ctl, x, res, msg, msglen);
  } else {
    histd_dataset a, b, sa, sb;
    histd_problem one, part;
    histd_problem_frame(&p, 0, &a, &b, &one); /* the box, from the file or the job */
    if (sh != NULL)
      histd__problem_shard(&one, sh, &sa, &sb, &part);
    else
      part = one;
    res->volume = histd_box_volume(&one.box);
    res->volume_sum = res->volume;
    rc = run_part(w, k, &one, &part, sh, &ex, ctl, res, msg, msglen);
    if (rc == 0)
      rc = take_excluded(x, &one, sh, res, msg, msglen);
    if (rc == 0 && res->volume > 0)
      res->density = (double)res->total / res->volume;
    if (rc == 0 && res->frame_counts != NULL) {
      memcpy(res->frame_counts, res->counts, res->bins.count * sizeof *res->counts);
      res->frame_total[0] = res->total;
      res->frame_below[0] = res->below;
      res->frame_volume[0] = res->volume;
    }
  }
  if (x != NULL)
    histd__exclusions_free(&excl);
  if (rc != 0) {
    histd_result_free(res);
    return rc;
  }
  if (p.statistic == HISTD_STAT_WITHIN)
    res->within = res->counts[0];
  histd__progress(ctl, 1.0);
  res->timing.total_ms = histd_now_ms() - t0;
  return 0;
}

int histd_exec_device(const histd_exec *ex) {
  const histd_kernel *k = histd_kernel_find(ex->kernel);
  int device = -1;
  if (k != NULL && k->engine == HISTD_ENGINE_CUDA) {
    device = 0;
  } else if (k != NULL && k->engine == HISTD_ENGINE_ANY) {
    int count = 0;
    histd_device_info info;
    if (histd_devices(&info, 1, &count, NULL, 0) == 0 && count > 0)
      device = info.index;
  }
  if (device >= 0 && ex->devices != 0) {
    device = 0;
    while (device < 64 && !(ex->devices & (UINT64_C(1) << device)))
      device++;
  }
  return device;
}

int histd_run(const histd_problem *p, const histd_exec *ex, const histd_control *ctl,
              histd_result *res, char *msg, size_t msglen) {
  memset(res, 0, sizeof *res);
  int rc = histd_problem_validate(p, msg, msglen); /* before looking for a GPU */
  if (rc == 0)
    rc = histd_exec_validate(ex, p, msg, msglen);
  if (rc != 0)
    return rc;
  histd_worker *w;
  rc = histd_worker_create(&w, histd_exec_device(ex), msg, msglen);
  if (rc != 0)
    return rc;
  rc = histd_worker_run(w, p, ex, ctl, res, msg, msglen);
  histd_worker_destroy(w);
  return rc;
}

int histd_devices(histd_device_info *out, int max, int *count, char *msg,
                  size_t msglen) {
  return histd__cuda_devices(out, max, count, msg, msglen);
}
