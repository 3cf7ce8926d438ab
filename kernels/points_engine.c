/*
 * points_engine.c -- the host side of the point statistics on a GPU
 * worker: per-point neighbour counts and nearest neighbours, and pair
 * lists, per-point histograms (points_gpu.h has the device's design; src/engine/points.c is the
 * CPU's driver, with the same passes).
 *
 * A run copies A and B (their weights and origins) to the device, plans
 * the cell grid on the host (grid.h, the CPU's own plan), sorts the sets
 * by cell on the device (grid_sort_set, keeping each point's index before
 * the sort), and launches the kernel over ranges of A's sorted points of
 * about POINTS_LAUNCH, so that progress moves and a cancel is seen
 * between launches. Per-point rows come back at the end (a histogram's
 * rows, counts then below, added to the result's: its frames sum).
 *
 * A pair list goes through a device buffer of `cap` records: a launch
 * whose records overflow it is run again in two halves (a range of one
 * point fits: cap is at least B's size), and each launch's records are
 * copied back and handed to the control's pairs callback before the next.
 *
 * The nearest neighbour anywhere takes the CPU's passes: a grid at about
 * two point spacings, then four times the radius for the points still
 * without one, until the grid cannot reach further; the rest meet every
 * point of B (one cell).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "engine.h"
#include "gpu_engine.h"
#include "grid.h"
#include "grid_gpu.h"
#include "points_gpu.h"
#include "sdh_gpu.h"

/* A points a launch, and the records the pair buffer holds at least (the
 * tests make both small: HISTD_GPU_POINTS_LAUNCH, HISTD_GPU_PAIRS_CAP) */
#define POINTS_LAUNCH (1u << 16)
#define PAIRS_CAP_MIN (1u << 22)

#define CK SDH_CK_OUT

typedef struct dev_set {
  double *x, *y, *z, *w; /* as given */
  uint64_t *ids;         /* origins, or NULL */
  grid_set sorted;
  uint32_t *order;
} dev_set;

static void set_free(dev_set *d) {
  cudaFree(d->x);
  cudaFree(d->ids);
  cudaFree(d->sorted.sx);
  cudaFree(d->sorted.start);
  memset(d, 0, sizeof *d);
}

/* Copies ds (and its weights, its origins) to the device. */
static int set_put(dev_set *d, const histd_dataset *ds, bool weights, cudaStream_t s, char *msg,
                   size_t msglen) {
  int rc = 0;
  const size_t n = ds->n ? ds->n : 1;
  memset(d, 0, sizeof *d);
  CK(cudaMalloc((void **)&d->x, (weights ? 4 : 3) * n * sizeof(double)), "cudaMalloc");
  d->y = d->x + n;
  d->z = d->y + n;
  d->w = weights ? d->z + n : NULL;
  CK(cudaMemcpyAsync(d->x, ds->x, ds->n * 8, cudaMemcpyHostToDevice, s), "the copy of a set");
  CK(cudaMemcpyAsync(d->y, ds->y, ds->n * 8, cudaMemcpyHostToDevice, s), "the copy of a set");
  CK(cudaMemcpyAsync(d->z, ds->z, ds->n * 8, cudaMemcpyHostToDevice, s), "the copy of a set");
  if (weights)
    CK(cudaMemcpyAsync(d->w, ds->w, ds->n * 8, cudaMemcpyHostToDevice, s), "the copy of weights");
  if (ds->origin != NULL) {
    CK(cudaMalloc((void **)&d->ids, n * sizeof(uint64_t)), "cudaMalloc");
    CK(cudaMemcpyAsync(d->ids, ds->origin, ds->n * 8, cudaMemcpyHostToDevice, s),
       "the copy of the origins");
  }
out:
  return rc;
}

/* Sorts d (n points) into the grid g's cells: sorted copies, starts, order. */
static int set_sort(dev_set *d, uint32_t n, bool weights, const histd__grid_geom *g,
                    const histd_metric *m, grid_scratch *scr, cudaStream_t s, char *msg,
                    size_t msglen) {
  int rc = 0;
  cudaFree(d->sorted.sx);
  cudaFree(d->sorted.start);
  grid_set *gs = &d->sorted;
  memset(gs, 0, sizeof *gs);
  gs->n = n;
  gs->x = d->x, gs->y = d->y, gs->z = d->z, gs->w = weights ? d->w : NULL;
  const size_t k = n ? n : 1;
  CK(cudaMalloc((void **)&gs->sx, (weights ? 4 : 3) * k * 8 + k * 4), "cudaMalloc");
  gs->sy = gs->sx + k;
  gs->sz = gs->sy + k;
  gs->sw = weights ? gs->sz + k : NULL;
  d->order = (uint32_t *)((weights ? gs->sw : gs->sz) + k);
  gs->order = d->order;
  CK(cudaMalloc((void **)&gs->start, ((size_t)g->cells + 1) * 4), "cudaMalloc");
  rc = grid_sort_set(g, m, gs, scr, s, msg, msglen);
out:
  return rc;
}

typedef struct pt_run {
  gpu_ctx *ctx;
  cudaStream_t s;
  const histd_problem *p;
  const histd_exec *ex;
  const histd_control *ctl;
  dev_set a, b;
  points_params pp;
  grid_scratch scr;
  histd_pair_record *host_rec;
  double *edges;              /* POINT_HISTOGRAM: explicit edges, on the device */
  unsigned long long *hist;   /*   and the rows, back on the host */
  uint64_t emitted;
  double kernel_ms;
} pt_run;

/* The grid of p at radius `reach` with at most max_cells cells: sorted sets
 * and the kernel's parameters. */
static int pass_plan(pt_run *R, double reach, uint64_t max_cells, char *msg, size_t msglen) {
  const histd_problem *p = R->p;
  double edges[2];
  histd_problem gp;
  histd__grid_problem(p, reach, edges, &gp);
  histd__grid_geom g;
  int rc = histd__grid_plan(&gp, max_cells, &g, msg, msglen);
  if (rc != 0)
    return rc;
  if (g.cells == 0 || g.cells > UINT32_MAX)
    return histd_fail(msg, msglen, HISTD_EINVAL, "the grid has %llu cells",
                      (unsigned long long)g.cells);
  const bool self = p->b == NULL;
  const uint32_t na = (uint32_t)p->a->n, nb = self ? na : (uint32_t)p->b->n;
  const uint32_t nmax = na > nb ? na : nb;
  cudaFree(R->scr.keys);
  memset(&R->scr, 0, sizeof R->scr);
  size_t temp = 0;
  if ((rc = grid_temp_bytes(nmax, g.cells, &temp, msg, msglen)) != 0)
    return rc;
  cudaError_t e = cudaMalloc((void **)&R->scr.keys, 4 * (size_t)(nmax ? nmax : 1) * 4 + temp);
  if (e != cudaSuccess)
    return sdh_cuda_fail(msg, msglen, "cudaMalloc", e);
  R->scr.vals = R->scr.keys + 2 * (size_t)(nmax ? nmax : 1);
  R->scr.temp = R->scr.vals + 2 * (size_t)(nmax ? nmax : 1);
  R->scr.temp_bytes = temp;
  const histd_metric m = histd__metric(&p->box);
  const bool weights = p->weighted;
  rc = set_sort(&R->a, na, self && weights, &g, &m, &R->scr, R->s, msg, msglen);
  if (rc == 0 && !self)
    rc = set_sort(&R->b, nb, weights, &g, &m, &R->scr, R->s, msg, msglen);
  if (rc != 0)
    return rc;
  const dev_set *b = self ? &R->a : &R->b;
  points_params *pp = &R->pp;
  pp->geom = g;
  pp->metric = m;
  pp->na = na;
  pp->nb = nb;
  pp->ax = R->a.sorted.sx, pp->ay = R->a.sorted.sy, pp->az = R->a.sorted.sz;
  pp->bx = b->sorted.sx, pp->by = b->sorted.sy, pp->bz = b->sorted.sz;
  pp->bw = b->sorted.sw;
  pp->start_a = R->a.sorted.start;
  pp->start_b = b->sorted.start;
  pp->order_a = R->a.order;
  pp->order_b = b->order;
  return 0;
}

/* The kernel over A's points [p0, p1) in launches, with progress (from
 * done0 to done1 of the whole) and cancel between them; pair records
 * handed out as each launch ends. */
static int pass_run(pt_run *R, double done0, double done1, char *msg, size_t msglen) {
  int rc = 0;
  const uint32_t na = R->pp.na;
  points_params *pp = &R->pp;
  const double knob = histd__cuda_env("HISTD_GPU_POINTS_LAUNCH", POINTS_LAUNCH);
  const uint32_t launch = knob >= 1 && knob <= POINTS_LAUNCH ? (uint32_t)knob : POINTS_LAUNCH;
  for (uint32_t p0 = 0, step = launch; p0 < na;) {
    if (histd__cancelled(R->ctl))
      return histd_fail(msg, msglen, HISTD_ECANCELED, "cancelled");
    const uint32_t p1 = na - p0 > step ? p0 + step : na;
    double t0 = histd_now_ms();
    if (pp->stat == HISTD_STAT_PAIRS)
      CK(cudaMemsetAsync(pp->nrec, 0, sizeof *pp->nrec, R->s), "cudaMemset");
    if ((rc = points_launch(pp, p0, p1, R->s, msg, msglen)) != 0)
      goto out;
    CK(cudaStreamSynchronize(R->s), "the point statistics' kernel");
    R->kernel_ms += histd_now_ms() - t0;
    if (pp->stat == HISTD_STAT_PAIRS) {
      unsigned long long n = 0;
      CK(cudaMemcpy(&n, pp->nrec, sizeof n, cudaMemcpyDeviceToHost), "the pair count");
      if (n > pp->cap) { /* too many for the buffer: the range again, halved */
        step = (p1 - p0) / 2 ? (p1 - p0) / 2 : 1;
        if (p1 - p0 == 1)
          return histd_fail(msg, msglen, HISTD_ETOOBIG,
                            "one point has %llu pairs within the radius, more than the GPU's "
                            "buffer of %llu records", n, pp->cap);
        continue;
      }
      for (unsigned long long k = 0; k < n;) {
        const size_t batch = n - k > 65536 ? 65536 : (size_t)(n - k);
        CK(cudaMemcpy(R->host_rec, pp->rec + k, batch * sizeof *R->host_rec,
                      cudaMemcpyDeviceToHost),
           "the pair records");
        if ((rc = histd__emit_pairs(R->ctl, R->host_rec, batch, msg, msglen)) != 0)
          goto out;
        k += batch;
      }
      R->emitted += n;
    }
    p0 = p1;
    step = launch;
    histd__progress(R->ctl, done0 + (done1 - done0) * (double)p0 / (double)(na ? na : 1));
  }
out:
  return rc;
}

/* How many of the frame's rows still have no nearest neighbour. */
static int nearest_left(pt_run *R, uint64_t n, size_t *left, char *msg, size_t msglen) {
  int rc = 0;
  long long *nj = malloc((n ? n : 1) * sizeof *nj);
  if (nj == NULL)
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory");
  CK(cudaMemcpy(nj, R->pp.nj, n * sizeof *nj, cudaMemcpyDeviceToHost), "the nearest indices");
  *left = 0;
  for (uint64_t i = 0; i < n; i++)
    *left += nj[i] < 0;
out:
  free(nj);
  return rc;
}

int histd__cuda_points_run(histd_worker *w, const histd_problem *p, const histd_exec *ex,
                           const histd_control *ctl, uint64_t f, histd_result *res, char *msg,
                           size_t msglen) {
  gpu_ctx *ctx = w->gpu;
  int device, sms, rc = 0;
  size_t optin;
  void *stream;
  histd__cuda_context_info(ctx, &device, &stream, &sms, &optin);
  const bool self = p->b == NULL;
  if (p->a->n > UINT32_MAX / 4 || (!self && p->b->n > UINT32_MAX / 4))
    return histd_fail(msg, msglen, HISTD_ETOOBIG, "the GPU takes at most %u points a side",
                      UINT32_MAX / 4);
  pt_run R;
  memset(&R, 0, sizeof R);
  R.ctx = ctx;
  R.s = stream;
  R.p = p;
  R.ex = ex;
  R.ctl = ctl;
  const uint64_t na = p->a->n, nb = self ? na : p->b->n;
  const size_t row0 = (size_t)(f * res->point_n);
  const double t_start = histd_now_ms();
  CK(cudaSetDevice(device), "cudaSetDevice");
  points_params *pp = &R.pp;
  pp->stat = p->statistic;
  pp->r = p->radius;
  pp->self = self;
  pp->distinct = self || p->same_atoms;
  pp->weighted = p->weighted;
  pp->frame = f;
  if ((rc = set_put(&R.a, p->a, self && p->weighted, R.s, msg, msglen)) != 0 ||
      (!self && (rc = set_put(&R.b, p->b, p->weighted, R.s, msg, msglen)) != 0))
    goto out;
  pp->id_a = R.a.ids;
  pp->id_b = self ? R.a.ids : R.b.ids;
  if (pp->stat == HISTD_STAT_POINT_COUNTS) {
    CK(cudaMalloc((void **)&pp->counts, (na ? na : 1) * 8), "cudaMalloc");
    if (p->weighted)
      CK(cudaMalloc((void **)&pp->wsum, (na ? na : 1) * 8), "cudaMalloc");
  } else if (pp->stat == HISTD_STAT_NEAREST) {
    CK(cudaMalloc((void **)&pp->nd, (na ? na : 1) * 8), "cudaMalloc");
    CK(cudaMalloc((void **)&pp->nj, (na ? na : 1) * 8), "cudaMalloc");
    CK(cudaMemcpyAsync(pp->nd, res->nearest_d + row0, na * 8, cudaMemcpyHostToDevice, R.s),
       "the nearest rows");
    CK(cudaMemcpyAsync(pp->nj, res->nearest_j + row0, na * 8, cudaMemcpyHostToDevice, R.s),
       "the nearest rows");
  } else if (pp->stat == HISTD_STAT_POINT_HISTOGRAM) {
    const size_t cols = (size_t)p->bins.count + 1, rows = (size_t)(na ? na : 1);
    pp->bin = histd__ev_bin(p);
    pp->r = histd_bins_edge(&p->bins, p->bins.count); /* its reach: the last edge */
    if (p->bins.kind == HISTD_BINS_EDGES) {
      CK(cudaMalloc((void **)&R.edges, cols * 8), "cudaMalloc");
      CK(cudaMemcpyAsync(R.edges, p->bins.edges, cols * 8, cudaMemcpyHostToDevice, R.s),
         "the copy of the edges");
      pp->bin.edges = R.edges;
    }
    CK(cudaMalloc((void **)&pp->hist, rows * cols * 8), "cudaMalloc");
    CK(cudaMemsetAsync(pp->hist, 0, rows * cols * 8, R.s), "cudaMemset");
    if ((R.hist = malloc(rows * cols * 8)) == NULL) {
      rc = histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %zu x %zu counts", rows,
                      cols);
      goto out;
    }
  } else {
    const double cap = histd__cuda_env("HISTD_GPU_PAIRS_CAP", PAIRS_CAP_MIN);
    pp->cap = cap >= 1 && cap < PAIRS_CAP_MIN ? (unsigned long long)cap : PAIRS_CAP_MIN;
    if (pp->cap < nb) /* one point's pairs always fit */
      pp->cap = nb;
    CK(cudaMalloc((void **)&pp->rec, pp->cap * sizeof *pp->rec), "cudaMalloc");
    CK(cudaMalloc((void **)&pp->nrec, sizeof *pp->nrec), "cudaMalloc");
    if ((R.host_rec = malloc(65536 * sizeof *R.host_rec)) == NULL) {
      rc = histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for pair records");
      goto out;
    }
  }
  const double transfer_ms = histd_now_ms() - t_start;
  const histd_problem *gp = p;
  if (pp->stat == HISTD_STAT_NEAREST && isinf(p->radius)) {
    double r, reach;
    size_t left = (size_t)na;
    histd__nearest_radii(gp, &r, &reach);
    for (int pass = 0; left > 0; pass++) {
      const bool last = !(r < reach);
      pp->r = last ? INFINITY : r;
      histd_problem q = *gp;
      /* the last pass: one cell, of any finite width (reach is inf where
       * the diagonal overflows) */
      if ((rc = pass_plan(&R, last ? 1 : r, last ? 1 : histd__grid_max_cells(&q, true), msg,
                          msglen)) != 0 ||
          (rc = pass_run(&R, 0, 1, msg, msglen)) != 0 ||
          (rc = nearest_left(&R, na, &left, msg, msglen)) != 0)
        goto out;
      if (last)
        break;
      r = fmin(r * 4, reach);
      if (r >= reach)
        r = reach * 2;
    }
  } else if ((rc = pass_plan(&R, isinf(pp->r) ? 1 : pp->r,
                             histd__grid_max_cells(gp, true), msg, msglen)) != 0 ||
             (rc = pass_run(&R, 0, 1, msg, msglen)) != 0) {
    goto out;
  }
  if (pp->stat == HISTD_STAT_POINT_COUNTS) {
    CK(cudaMemcpy(res->point_counts + row0, pp->counts, na * 8, cudaMemcpyDeviceToHost),
       "the per-point counts");
    if (p->weighted)
      CK(cudaMemcpy(res->point_weighted + row0, pp->wsum, na * 8, cudaMemcpyDeviceToHost),
         "the per-point sums");
  } else if (pp->stat == HISTD_STAT_POINT_HISTOGRAM) {
    const size_t count = p->bins.count;
    CK(cudaMemcpy(R.hist, pp->hist, na * (count + 1) * 8, cudaMemcpyDeviceToHost),
       "the per-point histograms");
    for (size_t i = 0; i < na; i++) {
      for (size_t k = 0; k < count; k++)
        res->point_hist[i * count + k] += R.hist[i * (count + 1) + k];
      res->point_below[i] += R.hist[i * (count + 1) + count];
    }
  } else if (pp->stat == HISTD_STAT_NEAREST) {
    CK(cudaMemcpy(res->nearest_d + row0, pp->nd, na * 8, cudaMemcpyDeviceToHost),
       "the nearest distances");
    CK(cudaMemcpy(res->nearest_j + row0, pp->nj, na * 8, cudaMemcpyDeviceToHost),
       "the nearest indices");
  }
  res->pairs += R.emitted;
  res->exact = true;
  res->block_size = 256;
  res->threads = 0;
  res->timing.transfer_ms += transfer_ms;
  res->timing.kernel_ms += R.kernel_ms;
  snprintf(res->device, sizeof res->device, "%s, cell grid %ux%ux%u, binary64",
           histd__cuda_context_name(ctx), pp->geom.n[0], pp->geom.n[1], pp->geom.n[2]);
out:
  set_free(&R.a);
  set_free(&R.b);
  cudaFree(R.scr.keys);
  cudaFree(pp->counts);
  cudaFree(pp->wsum);
  cudaFree(pp->nd);
  cudaFree(pp->nj);
  cudaFree(pp->rec);
  cudaFree(pp->nrec);
  cudaFree(pp->hist);
  cudaFree(R.edges);
  free(R.host_rec);
  free(R.hist);
  return rc;
}
