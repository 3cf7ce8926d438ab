/*
 * points.c -- the statistics of a value per point and of a record per pair,
 * on the CPU's threads: the neighbours of each point within a radius
 * (POINT_COUNTS), each point's nearest neighbour (NEAREST), each point's
 * histogram of its distances (POINT_HISTOGRAM), and the list of the pairs
 * within a radius (PAIRS, the distance join).
 *
 * One driver, two traversals of the cell grid (grid.h), the evaluators of
 * histd/eval.h:
 *   - by point (POINT_COUNTS, NEAREST, POINT_HISTOGRAM): a task is a run
 *     of A's cells; each
 *     point of a cell meets every point of B in the cell's neighbourhood
 *     (histd__grid_runs), skipping itself, and its accumulator becomes its
 *     row of the result. A thread owns the rows of its task's points, so
 *     nothing is shared but the task counter.
 *   - by pair (PAIRS): a task is the same run of cells, walked as the
 *     histogram's grid walks it (histd__grid_blocks: each pair once, i < j
 *     for self pairs); a thread collects records in a buffer of its own and
 *     hands it, full, to the control's pairs callback under the job's lock,
 *     so the caller sees one batch at a time and memory stays bounded.
 * Brute force is the same driver on a grid of one cell. A histogram's
 * radius is its last edge: a pair beyond it is its point's overflow,
 * which the caller counts from the point's partners (worker.c), and its
 * rows add up over the frames.
 *
 * Exactness. Every pair is measured by the contract (histd_pair_d) on the
 * original float64 coordinates, and the grid's cells are at least the
 * radius wide (plus grid.h's margin), so no pair with d <= radius is left
 * unvisited: the values are the definition's, whatever the thread count.
 *
 * Identity. A point never meets itself: in a self problem, or where A and
 * B are selections of one dataset (same_atoms), a pair whose two points
 * have the same index in their dataset (their origin) is skipped. Indices
 * reported (NEAREST's j, a record's i and j) are those dataset indices, in
 * a frame.
 *
 * The nearest neighbour anywhere (radius INFINITY) is found by passes: a
 * grid at a radius of about two point spacings finds most points' nearest;
 * the points still without one go again at four times the radius, and so
 * on; past what a grid can reach (half a periodic box, an open set's
 * diagonal) the rest meet every point of B (a grid of one cell). A point
 * that found a neighbour within radius R has met every point within R, so
 * its nearest is exact.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "grid.h"
#include "histd/eval.h"

#define POINTS_PER_TASK 256
#define RECORDS_PER_BATCH 4096

typedef struct pt_job {
  const histd__grid *grid;
  histd_metric m;
  double r;              /* a pair counts when d <= r */
  histd_statistic stat;
  bool self;             /* B is A: blocks of pairs i < j */
  bool distinct;         /* skip the pairs of a point with itself (equal ids) */
  bool weighted;
  const uint64_t *id_a;  /* A's sorted position -> its index in its dataset */
  const uint64_t *id_b;  /* B's likewise (id_a for self problems) */
  const size_t *row_a;   /* A's sorted position -> its row of the output */
  uint64_t *counts;      /* the frame's rows: POINT_COUNTS */
  double *wsum;          /*   and with weights                       */
  double *nd;            /* NEAREST                                   */
  int64_t *nj;
  histd_ev_bin bin;      /* POINT_HISTOGRAM: its bins, and each row's   */
  uint64_t *hist;        /*   counts (bin.count a row), summed over frames */
  uint64_t *below;       /*   and pairs below the first edge           */
  uint64_t frame;        /* PAIRS: the records' frame                 */
  uint64_t emitted;      /* PAIRS: records handed out (under lock)    */
  uint64_t chunk, ntasks;
  atomic_uint_fast64_t next_task, done;
  const histd_control *ctl;
  pthread_mutex_t lock;
  double reported;
  atomic_bool stop;
  int rc; /* the first failure (a sink's, a cancel), under lock */
  char msg[256];
} pt_job;

/* Stops the job with rc and its sentence (the first failure wins). */
static void pt_fail(pt_job *J, int rc, const char *why) {
  pthread_mutex_lock(&J->lock);
  if (J->rc == 0) {
    J->rc = rc;
    snprintf(J->msg, sizeof J->msg, "%s", why);
  }
  pthread_mutex_unlock(&J->lock);
  atomic_store(&J->stop, true);
}

/* ---- by point ----------------------------------------------------------- */

/* Point p of A (sorted position) against B's runs, through the evaluator
 * of `stat` (a constant where it is inlined: one loop, specialised). */
static inline __attribute__((always_inline)) void point_pairs(const pt_job *J, size_t p,
                                                              const histd__block *runs,
                                                              uint32_t nruns,
                                                              histd_statistic stat) {
  const histd_dataset *a = &J->grid->a, *b = J->self ? a : &J->grid->b;
  const double xi = a->x[p], yi = a->y[p], zi = a->z[p];
  const uint64_t id = J->id_a[p];
  const size_t row = J->row_a[p];
  uint64_t *hist = stat == HISTD_STAT_POINT_HISTOGRAM ? J->hist + row * J->bin.count : NULL;
  histd_ev_count cnt;
  histd_ev_nearest near;
  histd_ev_count_begin(&cnt);
  histd_ev_nearest_begin(&near);
  for (uint32_t k = 0; k < nruns; k++)
    for (size_t q = runs[k].j0; q < runs[k].j1; q++) {
      if (J->distinct && J->id_b[q] == id)
        continue;
      const double d = histd_pair_d(&J->m, xi, yi, zi, b->x[q], b->y[q], b->z[q]);
      if (stat == HISTD_STAT_NEAREST) {
        histd_ev_nearest_pair(&near, d, J->r, (int64_t)J->id_b[q]);
      } else if (stat == HISTD_STAT_POINT_HISTOGRAM) {
        const uint32_t slot = histd_ev_bin_slot(&J->bin, d);
        if (slot < J->bin.count)
          hist[slot]++;
        else if (slot == J->bin.count)
          J->below[row]++;
      } else if (J->weighted)
        histd_ev_count_pair_w(&cnt, d, J->r, b->w[q]);
      else
        histd_ev_count_pair(&cnt, d, J->r);
    }
  if (stat == HISTD_STAT_NEAREST) {
    if (near.j >= 0) {
      J->nd[row] = near.d;
      J->nj[row] = near.j;
    }
  } else if (stat == HISTD_STAT_POINT_COUNTS) {
    J->counts[row] = cnt.n;
    if (J->weighted)
      J->wsum[row] = histd_ev_count_weight(&cnt);
  }
}

static inline __attribute__((always_inline)) uint64_t cells_by_point(const pt_job *J,
                                                                    uint64_t c0, uint64_t c1,
                                                                    histd_statistic stat) {
  const histd__grid *g = J->grid;
  histd__block runs[27];
  uint64_t met = 0;
  for (uint64_t c = c0; c < c1; c++) {
    const size_t i0 = g->start_a[c], i1 = g->start_a[c + 1];
    if (i0 == i1)
      continue;
    const uint32_t nruns = histd__grid_runs(g, (uint32_t)c, runs);
    uint64_t partners = 0;
    for (uint32_t k = 0; k < nruns; k++)
      partners += runs[k].j1 - runs[k].j0;
    for (size_t p = i0; p < i1; p++)
      point_pairs(J, p, runs, nruns, stat);
    met += (uint64_t)(i1 - i0) * partners;
  }
  return met;
}

static uint64_t cells_counts(const pt_job *J, uint64_t c0, uint64_t c1) {
  return cells_by_point(J, c0, c1, HISTD_STAT_POINT_COUNTS);
}

static uint64_t cells_nearest(const pt_job *J, uint64_t c0, uint64_t c1) {
  return cells_by_point(J, c0, c1, HISTD_STAT_NEAREST);
}

static uint64_t cells_hist(const pt_job *J, uint64_t c0, uint64_t c1) {
  return cells_by_point(J, c0, c1, HISTD_STAT_POINT_HISTOGRAM);
}

/* ---- by pair ------------------------------------------------------------ */

typedef struct pt_batch {
  histd_pair_record r[RECORDS_PER_BATCH];
  size_t n;
} pt_batch;

static void batch_flush(pt_job *J, pt_batch *bt) {
  if (bt->n == 0)
    return;
  char why[256] = "";
  pthread_mutex_lock(&J->lock);
  int rc = J->rc != 0 ? J->rc : histd__emit_pairs(J->ctl, bt->r, bt->n, why, sizeof why);
  if (rc == 0)
    J->emitted += bt->n;
  pthread_mutex_unlock(&J->lock);
  bt->n = 0;
  if (rc != 0)
    pt_fail(J, rc, why);
}

static uint64_t cells_pairs(pt_job *J, uint64_t c0, uint64_t c1, pt_batch *bt) {
  const histd__grid *g = J->grid;
  const histd_dataset *a = &g->a, *b = J->self ? a : &g->b;
  histd__block blk[28];
  uint64_t met = 0;
  for (uint64_t c = c0; c < c1 && !atomic_load_explicit(&J->stop, memory_order_relaxed); c++) {
    const uint32_t nb = histd__grid_blocks(g, (uint32_t)c, blk);
    for (uint32_t k = 0; k < nb; k++) {
      const histd__block *bk = &blk[k];
      for (size_t p = bk->i0; p < bk->i1; p++) {
        const uint64_t ip = J->id_a[p];
        for (size_t q = bk->diag ? p + 1 : bk->j0; q < bk->j1; q++) {
          const uint64_t jq = J->id_b[q];
          if (J->distinct && jq == ip)
            continue;
          const double d = histd_pair_d(&J->m, a->x[p], a->y[p], a->z[p], b->x[q], b->y[q],
                                        b->z[q]);
          if (!histd_ev_within(d, J->r))
            continue;
          histd_pair_record *rec = &bt->r[bt->n++];
          const bool swap = J->self && ip > jq; /* self pairs: i < j */
          *rec = (histd_pair_record){J->frame, swap ? jq : ip, swap ? ip : jq, d};
          if (bt->n == RECORDS_PER_BATCH)
            batch_flush(J, bt);
        }
      }
      met += bk->diag ? (uint64_t)(bk->i1 - bk->i0) * (bk->i1 - bk->i0 - 1) / 2
                      : (uint64_t)(bk->i1 - bk->i0) * (bk->j1 - bk->j0);
    }
  }
  return met;
}

/* ---- the threads ---------------------------------------------------------- */

static void *pt_thread(void *arg) {
  pt_job *J = arg;
  pt_batch *bt = J->stat == HISTD_STAT_PAIRS ? malloc(sizeof *bt) : NULL;
  if (J->stat == HISTD_STAT_PAIRS && bt == NULL) {
    pt_fail(J, HISTD_ENOMEM, "out of memory for a batch of pair records");
    return NULL;
  }
  if (bt != NULL)
    bt->n = 0;
  const uint64_t cells = J->grid->g.cells;
  const uint64_t total = J->grid->candidates ? J->grid->candidates : 1;
  for (;;) {
    if (atomic_load_explicit(&J->stop, memory_order_relaxed))
      break;
    const uint64_t task = atomic_fetch_add(&J->next_task, 1);
    if (task >= J->ntasks)
      break;
    const uint64_t c0 = task * J->chunk, c1 = c0 + J->chunk < cells ? c0 + J->chunk : cells;
    uint64_t met = J->stat == HISTD_STAT_PAIRS            ? cells_pairs(J, c0, c1, bt)
                   : J->stat == HISTD_STAT_NEAREST        ? cells_nearest(J, c0, c1)
                   : J->stat == HISTD_STAT_POINT_HISTOGRAM ? cells_hist(J, c0, c1)
                                                          : cells_counts(J, c0, c1);
    if (histd__cancelled(J->ctl)) {
      pt_fail(J, HISTD_ECANCELED, "cancelled");
      break;
    }
    /* by point, each self pair is met from both ends: about twice the
     * grid's candidates */
    const uint64_t done = atomic_fetch_add(&J->done, met) + met;
    const double scale = J->stat == HISTD_STAT_PAIRS ? 1.0 : 0.5;
    histd__progress_step(J->ctl, &J->lock, &J->reported, scale * (double)done / (double)total);
  }
  if (bt != NULL && !atomic_load(&J->stop))
    batch_flush(J, bt);
  free(bt);
  return NULL;
}

/* Runs the job's tasks on `threads` threads; 0 or the first failure. */
static int pt_run(pt_job *J, unsigned threads, char *msg, size_t msglen) {
  const uint64_t cells = J->grid->g.cells, n = J->grid->a.n;
  J->chunk = n > POINTS_PER_TASK ? cells * POINTS_PER_TASK / n : cells;
  J->chunk = J->chunk ? J->chunk : 1;
  J->ntasks = (cells + J->chunk - 1) / J->chunk;
  atomic_init(&J->next_task, 0);
  atomic_init(&J->done, 0);
  atomic_init(&J->stop, false);
  pthread_mutex_init(&J->lock, NULL);
  if (threads > J->ntasks)
    threads = J->ntasks ? (unsigned)J->ntasks : 1;
  pthread_t *tid = calloc(threads, sizeof *tid);
  unsigned started = 0;
  if (tid == NULL)
    pt_fail(J, HISTD_ENOMEM, "out of memory for threads");
  for (; tid != NULL && started < threads; started++)
    if (pthread_create(&tid[started], NULL, pt_thread, J) != 0) {
      pt_fail(J, HISTD_ENOMEM, "could not start a thread");
      break;
    }
  for (unsigned i = 0; i < started; i++)
    pthread_join(tid[i], NULL);
  free(tid);
  pthread_mutex_destroy(&J->lock);
  return J->rc != 0 ? histd_fail(msg, msglen, J->rc, "%s", J->msg) : 0;
}

/* ---- one pass ------------------------------------------------------------- */

/* The sorted order's ids and rows: sorted position k of a set whose
 * points have ids ids[] (NULL: their index) and rows rows[] (NULL: their
 * index). */
static int sorted_ids(const size_t *order, size_t n, const uint64_t *ids, const size_t *rows,
                      uint64_t **sid, size_t **srow) {
  *sid = malloc((n ? n : 1) * sizeof **sid);
  if (srow != NULL)
    *srow = malloc((n ? n : 1) * sizeof **srow);
  if (*sid == NULL || (srow != NULL && *srow == NULL))
    return HISTD_ENOMEM;
  for (size_t k = 0; k < n; k++) {
    const size_t i = order[k];
    (*sid)[k] = ids != NULL ? ids[i] : i;
    if (srow != NULL)
      (*srow)[k] = rows != NULL ? rows[i] : i;
  }
  return 0;
}

/*
 * One pass of the driver over problem p (one frame; p->a's points have
 * ids ids_a and output rows rows_a, NULL: their index; B's ids ids_b),
 * within radius r, on a grid of at most max_cells cells (1: brute force).
 * The grid's cells are at least `reach` wide (r itself, or for r =
 * INFINITY and one cell, any finite width).
 */
static int pt_pass(const histd_problem *p, double r, double reach, uint64_t max_cells,
                   const uint64_t *ids_a, const size_t *rows_a, const uint64_t *ids_b,
                   bool distinct, const histd_exec *ex, const histd_control *ctl, pt_job *J,
                   char *msg, size_t msglen) {
  double edges[2];
  histd_problem gp;
  histd__grid_problem(p, reach, edges, &gp);
  histd__grid grid;
  int rc = histd__grid_build(&grid, &gp, max_cells, true, msg, msglen);
  if (rc != 0)
    return rc;
  const bool self = p->b == NULL;
  uint64_t *sid_a = NULL, *sid_b = NULL;
  size_t *srow_a = NULL;
  if (sorted_ids(grid.order_a, grid.a.n, ids_a, rows_a, &sid_a, &srow_a) != 0 ||
      (!self && sorted_ids(grid.order_b, grid.b.n, ids_b, NULL, &sid_b, NULL) != 0)) {
    rc = histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for the points' indices");
  } else {
    J->grid = &grid;
    J->m = histd__metric(&p->box);
    J->r = r;
    J->self = self;
    J->distinct = distinct;
    J->weighted = p->weighted;
    J->id_a = sid_a;
    J->id_b = self ? sid_a : sid_b;
    J->row_a = srow_a;
    J->ctl = ctl;
    J->rc = 0;
    J->reported = 0;
    rc = pt_run(J, ex->threads ? ex->threads : histd_cpu_count(), msg, msglen);
  }
  free(sid_a);
  free(sid_b);
  free(srow_a);
  histd__grid_free(&grid);
  return rc;
}

/* ---- the nearest neighbour anywhere --------------------------------------- */

void histd__nearest_radii(const histd_problem *p, double *first, double *reach) {
  const histd_dataset *a = p->a, *b = p->b ? p->b : p->a;
  double vol;
  if (p->box.kind != HISTD_BOX_NONE) {
    *reach = histd_box_half_width(&p->box);
    vol = histd_box_volume(&p->box);
  } else {
    double ext[3], diag = 0;
    vol = 1;
    for (int k = 0; k < 3; k++) {
      ext[k] = fmax(a->max[k], b->max[k]) - fmin(a->min[k], b->min[k]);
      diag += ext[k] * ext[k];
    }
    *reach = sqrt(diag) * (1 + 0x1p-20);
    const double floor_ext = fmax(*reach, 1e-300) * 1e-3; /* flat sets: a slab */
    for (int k = 0; k < 3; k++)
      vol *= fmax(ext[k], floor_ext);
  }
  const double nb = b->n > 1 ? (double)b->n : 2.0;
  double r0 = 2 * cbrt(vol / nb);
  if (!(r0 > 0) || !isfinite(r0) || r0 > *reach)
    r0 = *reach;
  *first = r0;
}

void histd__grid_problem(const histd_problem *p, double reach, double edges[2],
                         histd_problem *out) {
  edges[0] = 0;
  edges[1] = nextafter(reach, INFINITY);
  *out = *p;
  out->statistic = HISTD_STAT_WITHIN;
  out->radius = reach;
  out->bins = (histd_bins){HISTD_BINS_EDGES, 1, 0, edges, 0, 0};
}

static int nearest_anywhere(const histd_problem *p, bool distinct, const uint64_t *ids_a,
                            const uint64_t *ids_b, const histd_exec *ex, const histd_control *ctl,
                            pt_job *J, char *msg, size_t msglen) {
  const size_t n = p->a->n;
  double r, reach;
  histd__nearest_radii(p, &r, &reach);
  size_t *missing = malloc((n ? n : 1) * sizeof *missing);
  uint64_t *mids = malloc((n ? n : 1) * sizeof *mids);
  histd_dataset sub;
  memset(&sub, 0, sizeof sub);
  int rc = missing && mids ? 0 : histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory");
  for (size_t i = 0; i < n; i++)
    missing[i] = i;
  size_t m = n;
  /* the points of B, for self problems: A's whole set */
  histd_problem q = *p;
  if (q.b == NULL)
    q.b = p->a;
  const uint64_t *qids_b = p->b == NULL ? ids_a : ids_b;
  for (int pass = 0; rc == 0 && m > 0; pass++) {
    const bool last = !(r < reach);
    /* A: the points still without a neighbour */
    histd_dataset_free(&sub);
    if ((rc = histd_dataset_alloc(&sub, m, msg, msglen)) != 0)
      break;
    for (size_t k = 0; k < m; k++) {
      const size_t i = missing[k];
      sub.x[k] = p->a->x[i];
      sub.y[k] = p->a->y[i];
      sub.z[k] = p->a->z[i];
      mids[k] = ids_a != NULL ? ids_a[i] : i;
    }
    if ((rc = histd_dataset_finish(&sub, msg, msglen)) != 0)
      break;
    sub.box = p->a->box;
    q.a = &sub;
    /* the last pass: one cell, of any finite width (reach is inf where the
     * diagonal overflows) */
    rc = pt_pass(&q, last ? INFINITY : r, last ? 1 : r, last ? 1 : histd__grid_max_cells(&q, false),
                 mids, missing, qids_b, distinct, ex, ctl, J, msg, msglen);
    size_t left = 0;
    for (size_t k = 0; rc == 0 && k < m; k++)
      if (J->nj[missing[k]] < 0)
        missing[left++] = missing[k];
    m = left;
    if (last)
      break; /* every point of B was met: the rest have no partner at all */
    r = fmin(r * 4, reach);
    if (r >= reach)
      r = reach * 2; /* past the grid's reach: the next pass is the last */
  }
  histd_dataset_free(&sub);
  free(missing);
  free(mids);
  return rc;
}

/* ---- the entry ---------------------------------------------------------------- */

int histd__points_run(const histd_problem *p, const histd_exec *ex, const histd_control *ctl,
                      bool brute, uint64_t f, histd_result *res, char *msg, size_t msglen) {
  const double t0 = histd_now_ms();
  const bool self = p->b == NULL;
  const bool distinct = self || p->same_atoms;
  const uint64_t *ids_a = p->a->origin, *ids_b = self ? ids_a : p->b->origin;
  pt_job J;
  memset(&J, 0, sizeof J);
  J.stat = p->statistic;
  J.frame = f;
  const size_t row0 = (size_t)(f * res->point_n);
  if (p->statistic == HISTD_STAT_POINT_COUNTS) {
    J.counts = res->point_counts + row0;
    J.wsum = res->point_weighted != NULL ? res->point_weighted + row0 : NULL;
  } else if (p->statistic == HISTD_STAT_NEAREST) {
    J.nd = res->nearest_d + row0;
    J.nj = res->nearest_j + row0;
  } else if (p->statistic == HISTD_STAT_POINT_HISTOGRAM) { /* every frame into one row */
    J.bin = histd__ev_bin(p);
    J.hist = res->point_hist;
    J.below = res->point_below;
  }
  /* a histogram's reach: its last edge */
  const double r = p->statistic == HISTD_STAT_POINT_HISTOGRAM
                       ? histd_bins_edge(&p->bins, p->bins.count)
                       : p->radius;
  int rc;
  if (p->statistic == HISTD_STAT_NEAREST && isinf(p->radius) && !brute)
    rc = nearest_anywhere(p, distinct, ids_a, ids_b, ex, ctl, &J, msg, msglen);
  else
    rc = pt_pass(p, r, isinf(r) ? 1 : r,
                 brute ? 1 : histd__grid_max_cells(p, false), ids_a, NULL, ids_b, distinct, ex,
                 ctl, &J, msg, msglen);
  if (rc != 0)
    return rc;
  res->pairs += J.emitted;
  res->exact = true;
  res->threads = ex->threads ? ex->threads : histd_cpu_count();
  res->timing.kernel_ms += histd_now_ms() - t0;
  snprintf(res->device, sizeof res->device, "cpu: %u thread%s, float64, %s", res->threads,
           res->threads == 1 ? "" : "s", brute ? "every pair" : "cell grid");
  return 0;
}
