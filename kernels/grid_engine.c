/*
 * grid_engine.c -- the host side of "grid" on the GPU: the cells built on
 * the device by sorting (grid_gpu.h), then launches of the pair kernel
 * over ranges of chunks (grid_kernels.cu: its filter and why the counts
 * are the contract's), so that progress moves and a cancel is seen
 * between two launches.
 *
 * A's points come through the context's dataset slots (kept on the device
 * between jobs, or prefetched); B's (A x B with B another set) and the
 * weights are copied for the job. Everything else lives in one device
 * allocation, sized by a dry run of the same carving (carve_job); a job
 * whose run does not fit the GPU's free memory streams through it in
 * slabs (grid_slabs.c), each slab a run of its own with its A copied for
 * it (stream_a).
 *
 * Cells: at most max(n_a, n_b) / 16 (where r_max allows that many). The
 * cells' side is at least r_max's reach (span 1) or a K-th of it (span K,
 * grid.h) whatever their number, so more cells only shrink them towards
 * it and cut the candidates; but a chunk is one warp's 32 lanes of A
 * points of one cell, and a warp steps through its neighbours' B points
 * whatever number of its lanes are live: below about 16 points a cell the
 * warps' steps per point stop falling while the chunks' overhead (27 to
 * 343 neighbours looked up) grows. Span 2 or 3 is taken where the float32
 * filter applies to it and a uniform set's estimate (plan_cost) says the
 * warps step through fewer points: (r_p, pi) of C1 (reach L/5 across, L/25
 * along z) meets 3.1% of all pairs at span 2 and 2.0% at span 3 against
 * 7% at span 1.
 *
 * Overflow is never counted on the device: it is the pairs' total less the
 * bins and `below` (pairs in cells that are not adjacent, and visited pairs
 * beyond the last edge, are all overflow).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "engine.h"
#include "fast_bins.h"
#include "gpu_engine.h"
#include "grid.h"
#include "grid_gpu.h"
#include "sdh_gpu.h"
#include "stats_gpu.h"

#define GRID_MAX_POINTS (UINT32_MAX / 2)
#define GRID_LAUNCH_PAIRS 2e10 /* candidate pairs per launch, about 100 ms on an H100 */

#define CK SDH_CK_OUT

/* Carves one allocation; with base NULL it only counts the bytes. */
typedef struct arena {
  char *base;
  size_t used;
} arena;

static void *carve(arena *ar, size_t bytes) {
  void *p = ar->base != NULL ? ar->base + ar->used : NULL;
  ar->used += (bytes + 255) & ~(size_t)255;
  return p;
}

/* A set's sorted arrays (binary64, weights, float32 relative coordinates)
 * and its cell starts. */
static void carve_sorted(arena *ar, grid_set *set, bool weighted, int filter32, uint32_t cells) {
  const size_t n = set->n;
  set->sx = carve(ar, n * 8);
  set->sy = carve(ar, n * 8);
  set->sz = carve(ar, n * 8);
  set->sw = weighted ? carve(ar, n * 8) : NULL;
  set->fx = filter32 ? carve(ar, n * 4) : NULL;
  set->fy = filter32 ? carve(ar, n * 4) : NULL;
  set->fz = filter32 ? carve(ar, n * 4) : NULL;
  set->start = carve(ar, ((size_t)cells + 1) * 4);
}

/* The filter's cut (grid_kernels.cu's proof): reach^2 (1 + 2^-30), or
 * +inf (every candidate goes to the contract) where a periodic box is not
 * at least 2 reach along each of its axes. */
static double filter_cut(const histd__grid_geom *g, const histd_box *box) {
  if (box->kind != HISTD_BOX_NONE && !(0.5 * fmin(box->ax, fmin(box->by, box->cz)) >= g->reach))
    return INFINITY;
  return g->reach * g->reach * (1 + 0x1p-30);
}

/* The largest |coordinate| of a set (its bounds; 0 when empty). */
static double span(const histd_dataset *d) {
  double m = 0;
  for (int k = 0; k < 3; k++)
    m = fmax(m, fmax(fabs(d->min[k]), fabs(d->max[k])));
  return m;
}

/* The float32 filter (grid_kernels.cu's proof): 1 with its cuts and the
 * float32 translations of the (2K + 1)^3 neighbour offsets of span K, or 0
 * where it does not apply (a periodic axis of fewer than 2K + 3 cells,
 * reach beyond half the shortest width, or cells too large or small for
 * float32's range). With cyl, (r_p, pi) along z, the cuts are the
 * cylinder's (rp_cut32, pi_cut32), else the sphere's (cut32). */
static int plan_filter32(const histd__grid_geom *g, const histd_problem *p, bool cyl,
                         grid_params *gp, float delta[GRID_OFFSETS_MAX * 3]) {
  const histd_box *box = &p->box;
  const int K = (int)g->span;
  double edge[3][3] = {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}}; /* the cell's edge vectors */
  double bsum = 0, rho = 1;
  if (g->periodic) {
    for (int k = 0; k < 3; k++)
      if (g->n[k] < 2 * g->span + 3)
        return 0;
    if (!(g->reach <= histd_box_half_width(box)))
      return 0;
    edge[0][0] = box->ax / g->n[0];
    edge[1][0] = box->bx / g->n[1], edge[1][1] = box->by / g->n[1];
    edge[2][0] = box->cx / g->n[2], edge[2][1] = box->cy / g->n[2], edge[2][2] = box->cz / g->n[2];
    bsum = box->ax + fabs(box->bx) + box->by + fabs(box->cx) + fabs(box->cy) + box->cz;
    double bmax = fmax(fmax(box->ax, box->by), fmax(box->cz, fmax(fabs(box->bx),
                                                                  fmax(fabs(box->cx), fabs(box->cy)))));
    rho = bmax / fmin(box->ax, fmin(box->by, box->cz));
  } else {
    for (int k = 0; k < 3; k++)
      edge[k][k] = 1 / g->scale[k];
  }
  const double m = fmax(span(p->a), p->b != NULL ? span(p->b) : 0);
  const double ed = 0x1p-44 * (m + bsum) * (1 + rho);
  double e[3]; /* each component's error bound */
  for (int x = 0; x < 3; x++) {
    double r = fabs(edge[0][x]) + fabs(edge[1][x]) + fabs(edge[2][x]);
    if (!(r <= 0x1p60) || (r != 0 && !(r >= 0x1p-60)))
      return 0;
    e[x] = (3 * K + 5.01) * 0x1p-24 * (r * (1 + 0x1p-20) + ed) + 2 * ed + 0x1p-120;
    gp->e32[x] = e[x];
  }
  gp->ed = ed;
  /* each cut (reach + E)^2 (1 + 2^-20), rounded up to a float */
  const double rad[3] = {g->reach, g->rk[0], g->rk[2]};
  const double err[3] = {e[0] + e[1] + e[2], e[0] + e[1], e[2]};
  float *cuts[3] = {&gp->cut32, &gp->rp_cut32, &gp->pi_cut32};
  for (int c = 0; c < 3; c++) {
    const double cut = (rad[c] + err[c]) * (rad[c] + err[c]) * (1 + 0x1p-20);
    if (!(rad[c] >= 0x1p-60 && cut <= 0x1p120))
      return 0;
    *cuts[c] = histd__float_up(cut);
  }
  if (!cyl) /* the sphere's alone */
    gp->rp_cut32 = gp->pi_cut32 = INFINITY;
  const int side = 2 * K + 1;
  for (int oz = -K; oz <= K; oz++)
    for (int oy = -K; oy <= K; oy++)
      for (int ox = -K; ox <= K; ox++) {
        const int at = 3 * (((oz + K) * side + (oy + K)) * side + (ox + K));
        for (int x = 0; x < 3; x++)
          delta[at + x] = (float)-(ox * edge[0][x] + oy * edge[1][x] + oz * edge[2][x]);
      }
  return 1;
}

/* The float32 bins (grid_kernels.cu's proof, "Float32 bins") of gp's
 * float32-filtered job, from its components' bounds and the contract's
 * ed: their tables' axes (x) and the kernel's guesses and margins (f);
 * false where they do not apply (histd__fast_plan). */
static bool fast_plan(const grid_params *gp, const histd_problem *p, histd__fast_axes *x,
                      histd__fast_dev *f) {
  const histd_ev_bin ev = histd__ev_bin(p);
  return gp->filter32 && histd__fast_plan(&ev, gp->e32, gp->ed, x, f);
}

/* A uniform set's cost of a plan, in B points its warps step through: the
 * chunks (32 A points each, whatever number of lanes hold one) times the
 * neighbour cells each meets, a cell costing its points and about 8
 * points' worth of overhead; the float64 filter 2.2 times the float32
 * one's a pair (an H200: 4.0 against 1.84 ps a candidate). */
static double plan_cost(const histd__grid_geom *g, uint32_t na, uint32_t nb, int filter32) {
  const double cells = (double)g->cells, side = 2.0 * g->span + 1;
  const double chunks = cells * ceil(na / cells / GRID_CHUNK);
  return chunks * side * side * side * (nb / cells + 8) * (filter32 ? 1 : 2.2);
}

/* The block size and the shared-memory layout: the first that fits of the
 * block sizes (the job's, else 256 down to 32) with, in order, the
 * histogram and the edges in shared memory. Weighted jobs keep their
 * warps' partials and Neumaier pairs in global memory (wglobal 2, below). */
static int choose_layout(grid_params *gp, const histd_exec *ex, size_t optin, char *msg,
                         size_t msglen) {
  static const uint32_t sizes[] = {256, 128, 64, 32};
  const uint32_t *tries = ex->block_size != 0 ? &ex->block_size : sizes;
  const int ntries = ex->block_size != 0 ? 1 : 4;
  if (ex->block_size > GRID_MAX_BLOCK)
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "grid on the GPU runs with block_size up to %u, got %u", GRID_MAX_BLOCK,
                      ex->block_size);
  /* Weighted partials go to global memory (wglobal 2) even where shared
   * memory would hold them: the shared-memory float64 atomic is a
   * compare-and-swap loop, the global one the L2's native add, and a
   * warp's pairs crowd few slots. On an H200, C1's weighted (r_p, pi)
   * (1,000 slots) ran 16% to 19% faster, the weighted histogram of its 1M
   * clumped points in 25 log bins 1.65x. HISTD_GRID_WGLOBAL=K (0, 1 or
   * 2), an A/B setting, tries layout K first (0: partials and pairs in
   * shared memory, 1: the pairs in global memory). */
  const char *wset = getenv("HISTD_GRID_WGLOBAL");
  const int wk = wset != NULL ? atoi(wset) : 2;
  const int w0 = !gp->weighted ? 0 : wk < 0 ? 0 : wk > 2 ? 2 : wk;
  for (int b = 0; b < ntries; b++)
    for (int counts = 1; counts >= 0; counts--)
      for (int edges = gp->edges; edges >= 0; edges--)
        for (int wglobal = w0; wglobal <= (gp->weighted ? 2 : 0); wglobal++) {
          gp->block = tries[b];
          gp->shared_counts = counts;
          gp->shared_edges = edges;
          gp->wglobal = wglobal;
          size_t bytes = grid_smem_bytes(gp);
          /* weighted (the A/B layouts): the pairs in shared memory where 2
           * blocks fit, the partials where one block does */
          const size_t room = gp->weighted && wglobal == 0 ? optin / 2 : optin;
          if (bytes <= room) {
            gp->smem = bytes;
            return 0;
          }
        }
  return histd_fail(msg, msglen, HISTD_ETOOBIG,
                    "grid's layout for %u bins and block_size %u does not fit the GPU's shared "
                    "memory; use a smaller block_size, or the CPU",
                    gp->count, tries[ntries - 1]);
}

static void finish_result(histd_result *res, const grid_params *gp, const gpu_ctx *ctx,
                          const histd__grid_geom *g, double candidates, double build_ms) {
  res->exact = true; /* the contract's own arithmetic for every pair counted */
  res->refined_pairs = 0;
  res->block_size = gp->block;
  res->threads = 0;
  if (g != NULL)
    snprintf(res->device, sizeof res->device,
             "%s, grid %ux%ux%u cells of span %u, %s, %.4g candidate pairs, cells built "
             "in %.2f ms",
             histd__cuda_context_name(ctx), g->n[0], g->n[1], g->n[2], g->span,
             gp->fast       ? "float32 filter and bins"
             : gp->filter32 ? "float32 filter"
                            : "float64 filter",
             candidates, build_ms);
  else
    snprintf(res->device, sizeof res->device, "%s, grid: no pairs",
             histd__cuda_context_name(ctx));
}

/* A copy to the device: n doubles from host to dev. */
typedef struct copy_in {
  const double *dev, *host;
  size_t n;
} copy_in;

/* A job's launch plan: what the pair kernel needs besides memory. */
typedef struct grid_job {
  grid_params gp;     /* the pass that keeps the counts (and sums channel W) */
  grid_params cgp[HISTD_SUMS]; /* each other channel's pass: the weighted layout
                                * (weights of 1 without weights), its own rows */
  uint32_t cgrid[HISTD_SUMS];  /* their blocks per launch (0: no such pass) */
  histd__grid_geom g;
  float delta[GRID_OFFSETS_MAX * 3]; /* the float32 filter's offsets */
  histd__fast_axes fx; /* gp.fast: the float32 bins' tables' axes */
  uint32_t grid;      /* blocks per launch (persistent) */
  size_t temp_bytes;  /* CUB's */
  uint32_t na, nb;    /* A's points, B's (A's for self pairs) */
  bool own_b;         /* B's cells are not A's */
  uint64_t total;     /* the pairs */
} grid_job;

/* Plans p on ctx: layout, cells (at most max_cells; 0: p's own cap),
 * filter, blocks. A job with no pairs is planned no further (total 0). */
static int plan_job(gpu_ctx *ctx, const histd_problem *p, const histd_exec *ex,
                    uint64_t max_cells, grid_job *job, char *msg, size_t msglen) {
  int device, sms;
  size_t optin;
  void *stream;
  histd__cuda_context_info(ctx, &device, &stream, &sms, &optin);
  memset(job, 0, sizeof *job);
  const bool cross = p->b != NULL;
  const histd_dataset *a = p->a, *b = cross ? p->b : p->a;
  if (a->n > GRID_MAX_POINTS || b->n > GRID_MAX_POINTS)
    return histd_fail(msg, msglen, HISTD_ETOOBIG, "grid on the GPU takes at most %u points a side",
                      GRID_MAX_POINTS);
  job->na = (uint32_t)a->n;
  job->nb = (uint32_t)b->n;
  job->own_b = cross && p->b != p->a;
  job->total = histd_problem_pairs(p);
  grid_params *gp = &job->gp;
  gp->metric = histd__metric(&p->box);
  gp->edges = p->bins.kind == HISTD_BINS_EDGES;
  gp->count = (uint32_t)histd_bins_slots(&p->bins); /* two axes: count1 x count2 */
  gp->count1 = p->bins.count;
  gp->ev = histd__ev_bin(p);
  gp->two = gp->ev.axes != HISTD_EV_D;
  gp->width = p->bins.width;
  gp->inv_width = gp->edges ? 0 : 1 / p->bins.width;
  gp->cross = cross;
  gp->weighted = p->weighted;
  int rc = choose_layout(gp, ex, optin, msg, msglen);
  if (rc != 0 || job->total == 0)
    return rc;
  const uint64_t cap = max_cells ? max_cells : histd__grid_max_cells(p, true);
  rc = histd__grid_plan(p, cap, &job->g, msg, msglen);
  if (rc != 0)
    return rc;
  gp->s_cut = filter_cut(&job->g, &p->box);
  /* (r_p, pi) along z: the cylinder of the axes' own reaches (grid_kernels.cu) */
  gp->cyl = gp->two && p->statistic == HISTD_STAT_RP_PI && !p->los_midpoint &&
            p->box.kind != HISTD_BOX_TRICLINIC &&
            isfinite(gp->s_cut);
  gp->rp_cut = job->g.rk[0] * job->g.rk[0] * (1 + 0x1p-30);
  gp->pi_cut = job->g.rk[2] * job->g.rk[2] * (1 + 0x1p-30);
  gp->filter32 = plan_filter32(&job->g, p, gp->cyl, gp, job->delta);
  /* a finer span (grid.h) where its float32 filter applies and a uniform
   * set's warps step through fewer points than at the best span below it;
   * HISTD_GRID_SPAN=K (the tests') takes span K wherever it can */
  const char *force = getenv("HISTD_GRID_SPAN");
  const uint32_t want = force != NULL ? (uint32_t)atoi(force) : 0;
  histd__grid_geom g2;
  grid_params cuts2 = *gp; /* (plan_filter32 sets only the cuts and their bounds) */
  float delta2[GRID_OFFSETS_MAX * 3];
  double cost = plan_cost(&job->g, job->na, job->nb, gp->filter32);
  for (uint32_t span = 2; span <= HISTD__GRID_SPAN_MAX && want != 1; span++) {
    if ((want != 0 && want != span) || histd__grid_plan_span(p, cap, span, &g2, NULL, 0) != 0 ||
        !plan_filter32(&g2, p, gp->cyl, &cuts2, delta2))
      continue;
    const double cost2 = plan_cost(&g2, job->na, job->nb, 1);
    if (want == span || cost2 < cost ||
        (p->los_midpoint && !gp->filter32)) { /* (the midpoint needs float32) */
      job->g = g2;
      cost = cost2;
      gp->filter32 = 1;
      gp->cut32 = cuts2.cut32, gp->rp_cut32 = cuts2.rp_cut32, gp->pi_cut32 = cuts2.pi_cut32;
      memcpy(gp->e32, cuts2.e32, sizeof gp->e32);
      gp->ed = cuts2.ed;
      memcpy(job->delta, delta2, sizeof job->delta);
    }
  }
  gp->geom = job->g;
  gp->cells = (uint32_t)job->g.cells; /* 1 to 2^32 - 1: the plan's guard (grid.c) */
  if (p->los_midpoint && !gp->filter32) /* its queue would hold differences, not points */
    return histd_fail(msg, msglen, HISTD_ETOOBIG,
                      "the midpoint line of sight on the GPU's grid needs its float32 filter, "
                      "which these points' range does not allow; brute force takes the job");
  gp->fast = fast_plan(gp, p, &job->fx, &gp->fb);
  if (gp->filter32) { /* its queue is smaller: the layout again */
    rc = choose_layout(gp, ex, optin, msg, msglen);
    if (rc != 0)
      return rc;
  }
  int per_sm = 0;
  rc = grid_blocks_per_sm(gp, &per_sm, msg, msglen);
  if (rc != 0)
    return rc;
  if (per_sm < 1)
    return histd_fail(msg, msglen, HISTD_ETOOBIG,
                      "grid with block_size %u and %u bins does not fit a multiprocessor",
                      gp->block, gp->count);
  job->grid = (uint32_t)sms * (uint32_t)per_sm;
  for (int c = 0; c < HISTD_SUMS; c++) { /* the other channels' passes */
    if (c == HISTD_SUM_W || !(histd_problem_sums(p) >> c & 1))
      continue;
    grid_params *cp = &job->cgp[c];
    *cp = *gp;
    cp->weighted = 1;
    cp->unit = !p->weighted;
    cp->sum = c;
    int cper_sm = 0;
    if ((rc = choose_layout(cp, ex, optin, msg, msglen)) != 0 ||
        (rc = grid_blocks_per_sm(cp, &cper_sm, msg, msglen)) != 0)
      return rc;
    if (cper_sm < 1)
      return histd_fail(msg, msglen, HISTD_ETOOBIG,
                        "grid's weighted sums with %u bins do not fit a multiprocessor",
                        gp->count);
    job->cgrid[c] = (uint32_t)sms * (uint32_t)cper_sm;
  }
  return grid_temp_bytes(job->na > job->nb ? job->na : job->nb, job->g.cells, &job->temp_bytes,
                         msg, msglen);
}

/* The device memory of one run, carved from one allocation (with ar->base
 * NULL it only counts the bytes). dev_a: A's points where the context's
 * slot holds them, else NULL and A's are carved here too (a slab's). */
typedef struct grid_mem {
  grid_set sa, sb;
  grid_scratch scr;
  const double *raw_a; /* x, y, z of A, n each, back to back */
  uint32_t *cnt, *chunk_off, *next;
  double *dedges, *aw;
  double *rows[HISTD_SUMS]; /* channel c's: 2 * its pass's grid * slots (NULL: none) */
  double *wscr;             /* the weighted passes' scratch (one at a time: the largest) */
  float *ddelta, *dfast;
  unsigned long long *dcounts, *dcand;
} grid_mem;

static void carve_job(arena *ar, const grid_job *job, const double *dev_a, grid_mem *m) {
  const grid_params *gp = &job->gp;
  const bool weighted = gp->weighted;
  const uint32_t na = job->na, nb = job->nb, cells = gp->cells, slots = gp->count + 2;
  memset(m, 0, sizeof *m);
  m->raw_a = dev_a != NULL ? dev_a : carve(ar, (size_t)na * 24);
  m->sa.n = na;
  if (m->raw_a != NULL) {
    m->sa.x = m->raw_a;
    m->sa.y = m->raw_a + na;
    m->sa.z = m->raw_a + 2 * (size_t)na;
  }
  m->aw = weighted ? carve(ar, (size_t)na * 8) : NULL;
  m->sa.w = m->aw;
  carve_sorted(ar, &m->sa, weighted, gp->filter32, cells);
  if (job->own_b) {
    m->sb.n = nb;
    m->sb.x = carve(ar, (size_t)nb * 8);
    m->sb.y = carve(ar, (size_t)nb * 8);
    m->sb.z = carve(ar, (size_t)nb * 8);
    m->sb.w = weighted ? carve(ar, (size_t)nb * 8) : NULL;
    carve_sorted(ar, &m->sb, weighted, gp->filter32, cells);
  } else {
    m->sb = m->sa;
  }
  const size_t nmax = na > nb ? na : nb;
  m->scr.keys = carve(ar, 2 * nmax * 4);
  m->scr.vals = carve(ar, 2 * nmax * 4);
  m->scr.temp = carve(ar, job->temp_bytes);
  m->scr.temp_bytes = job->temp_bytes;
  m->cnt = carve(ar, ((size_t)cells + 1) * 4);
  m->chunk_off = carve(ar, ((size_t)cells + 1) * 4);
  m->dedges = gp->edges ? carve(ar, ((size_t)gp->count1 + 1) * 8) : NULL;
  m->ddelta = gp->filter32 ? carve(ar, sizeof job->delta) : NULL;
  const size_t tab = histd__fast_entries(gp->fb.count1, gp->fb.count2);
  m->dfast = gp->fast ? carve(ar, tab * 2 * sizeof(float)) : NULL;
  m->dcounts = carve(ar, (size_t)slots * 8);
  size_t wscr = grid_wscr_bytes(gp, job->grid);
  for (int c = 0; c < HISTD_SUMS; c++) {
    const uint32_t g = c == HISTD_SUM_W ? (weighted ? job->grid : 0) : job->cgrid[c];
    m->rows[c] = g != 0 ? carve(ar, 2 * (size_t)g * slots * 8) : NULL;
    if (c != HISTD_SUM_W && g != 0 && grid_wscr_bytes(&job->cgp[c], g) > wscr)
      wscr = grid_wscr_bytes(&job->cgp[c], g);
  }
  m->wscr = wscr ? carve(ar, wscr) : NULL;
  m->next = carve(ar, 4);
  m->dcand = carve(ar, 8);
}

/* The device bytes of job's allocation (a dry run of its carving, A's
 * points in it). */
static size_t job_bytes(const grid_job *job) {
  arena ar = {NULL, 0};
  grid_mem m;
  if (job->total > 0)
    carve_job(&ar, job, NULL, &m);
  return ar.used;
}

int histd__cuda_grid_bytes(gpu_ctx *ctx, const histd_problem *p, const histd_exec *ex,
                           uint64_t max_cells, size_t *bytes, char *msg, size_t msglen) {
  grid_job job;
  int rc = plan_job(ctx, p, ex, max_cells, &job, msg, msglen);
  if (rc == 0)
    *bytes = job_bytes(&job);
  return rc;
}

/* Runs planned job p (see histd__cuda_grid_part). */
static int run_job(histd_worker *w, const histd_problem *p, const histd_control *ctl,
                   const grid_job *jp, bool stream_a, histd_result *res, char *msg,
                   size_t msglen) {
  gpu_ctx *ctx = w->gpu;
  int device, sms;
  size_t optin;
  void *stream;
  histd__cuda_context_info(ctx, &device, &stream, &sms, &optin);
  cudaStream_t s = stream;
  const histd_dataset *a = p->a, *b = p->b != NULL ? p->b : p->a;
  int rc = 0;
  grid_params gp = jp->gp;
  const uint32_t count = gp.count, slots = count + 2, na = jp->na, nb = jp->nb,
                 grid = jp->grid, cells = gp.cells;
  const bool weighted = gp.weighted, own_b = jp->own_b;
  cudaError_t e_dev = cudaSetDevice(device);
  if (e_dev != cudaSuccess)
    return sdh_cuda_fail(msg, msglen, "cudaSetDevice", e_dev);
  if (jp->total == 0) {
    res->below = 0;
    res->overflow = 0;
    res->timing.transfer_ms = 0;
    res->timing.kernel_ms = 0;
    finish_result(res, &gp, ctx, NULL, 0, 0);
    return 0;
  }
  const histd__grid_geom g = jp->g;
  const double t_entry = histd_now_ms();
  double t_alloc = 0;

  arena ar = {NULL, 0};
  cudaEvent_t ev[3] = {NULL, NULL, NULL};
  uint64_t *host_counts = NULL;
  float *host_fast = NULL;
  double t_start = 0, t_points = 0, t_copied = 0, t_back = 0;

  /* A's points first, unless streamed: the slot checks its own room */
  const double *dev_a = NULL;
  if (!stream_a) {
    rc = histd__cuda_points(ctx, a, &dev_a, &t_points, msg, msglen);
    if (rc != 0)
      return rc;
    cudaError_t e0 = cudaStreamSynchronize(s); /* its copy, timed by the slot */
    if (e0 != cudaSuccess)
      return sdh_cuda_fail(msg, msglen, "the copy of A", e0);
  }

  /* one allocation for the rest, sized by a dry run of the same carving */
  grid_mem m;
  carve_job(&ar, jp, dev_a, &m);
  size_t bytes = ar.used;
  bool owned = false;
  void *base = NULL;
  rc = histd__cuda_scratch(ctx, bytes, "grid's sorted points and cells", &base, &owned, msg,
                           msglen);
  if (rc != 0)
    return rc;
  ar.used = 0;
  ar.base = base;
  carve_job(&ar, jp, dev_a, &m);
  t_alloc = histd_now_ms();

  t_start = histd_now_ms();
  for (int i = 0; i < 3; i++)
    CK(cudaEventCreate(&ev[i]), "cudaEventCreate");
  /* A's points (a slab's), weights and B's points from pageable memory,
   * through the context's pinned staging ring */
  copy_in in[8];
  int nin = 0;
  if (stream_a) {
    in[nin++] = (copy_in){m.raw_a, a->x, na};
    in[nin++] = (copy_in){m.raw_a + na, a->y, na};
    in[nin++] = (copy_in){m.raw_a + 2 * (size_t)na, a->z, na};
  }
  if (weighted)
    in[nin++] = (copy_in){m.aw, a->w, na};
  if (own_b) {
    in[nin++] = (copy_in){m.sb.x, b->x, nb};
    in[nin++] = (copy_in){m.sb.y, b->y, nb};
    in[nin++] = (copy_in){m.sb.z, b->z, nb};
    if (weighted)
      in[nin++] = (copy_in){m.sb.w, b->w, nb};
  }
  for (int i = 0; i < nin && rc == 0; i++)
    rc = histd__cuda_copy_in(ctx, (void *)in[i].dev, in[i].host, in[i].n * 8, s, msg, msglen);
  if (rc != 0)
    goto out;
  if (gp.edges)
    CK(cudaMemcpyAsync(m.dedges, p->bins.edges, ((size_t)gp.count1 + 1) * 8, cudaMemcpyHostToDevice,
                       s),
       "the copy of the edges");
  if (gp.filter32)
    CK(cudaMemcpyAsync(m.ddelta, jp->delta, sizeof jp->delta, cudaMemcpyHostToDevice, s),
       "the copy of the offsets");
  if (gp.fast) {
    const size_t fast_bytes = histd__fast_entries(gp.fb.count1, gp.fb.count2) * 2 * sizeof(float);
    host_fast = malloc(fast_bytes);
    if (host_fast == NULL) {
      rc = histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for grid's bin tables");
      goto out;
    }
    histd__fast_tables(&jp->fx, host_fast);
    CK(cudaMemcpyAsync(m.dfast, host_fast, fast_bytes, cudaMemcpyHostToDevice, s),
       "the copy of the bin tables");
  }
  CK(cudaMemsetAsync(m.dcounts, 0, (size_t)slots * 8, s), "cudaMemsetAsync");
  CK(cudaMemsetAsync(m.dcand, 0, 8, s), "cudaMemsetAsync");
  uint32_t grids[HISTD_SUMS]; /* each channel's pass's blocks */
  for (int c = 0; c < HISTD_SUMS; c++) {
    grids[c] = c == HISTD_SUM_W ? grid : jp->cgrid[c];
    if (m.rows[c] != NULL)
      CK(cudaMemsetAsync(m.rows[c], 0, 2 * (size_t)grids[c] * slots * 8, s), "cudaMemsetAsync");
  }
  CK(cudaStreamSynchronize(s), "the copies to the device");
  t_copied = histd_now_ms();

  /* the cells */
  uint32_t chunks = 0;
  CK(cudaEventRecord(ev[0], s), "cudaEventRecord");
  rc = grid_sort_set(&g, &gp.metric, &m.sa, &m.scr, s, msg, msglen);
  if (rc == 0 && own_b)
    rc = grid_sort_set(&g, &gp.metric, &m.sb, &m.scr, s, msg, msglen);
  if (rc == 0)
    rc = grid_chunks(m.sa.start, cells, m.cnt, m.chunk_off, &m.scr, &chunks, s, msg, msglen);
  if (rc != 0)
    goto out;
  CK(cudaEventRecord(ev[1], s), "cudaEventRecord");

  /* the pairs, in launches of about GRID_LAUNCH_PAIRS candidates (a
   * uniform set's estimate) */
  gp.dedges = m.dedges;
  gp.ax = m.sa.sx, gp.ay = m.sa.sy, gp.az = m.sa.sz, gp.aw = m.sa.sw;
  gp.bx = m.sb.sx, gp.by = m.sb.sy, gp.bz = m.sb.sz, gp.bw = m.sb.sw;
  gp.afx = m.sa.fx, gp.afy = m.sa.fy, gp.afz = m.sa.fz;
  gp.bfx = m.sb.fx, gp.bfy = m.sb.fy, gp.bfz = m.sb.fz;
  gp.delta = m.ddelta;
  gp.fb.tab = m.dfast;
  gp.start_a = m.sa.start;
  gp.start_b = m.sb.start;
  gp.chunk_off = m.chunk_off;
  gp.counts = m.dcounts;
  gp.wsum = m.rows[HISTD_SUM_W];
  gp.werr = weighted ? m.rows[HISTD_SUM_W] + (size_t)grid * slots : NULL;
  gp.wscr = m.wscr;
  gp.next = m.next;
  gp.candidates = m.dcand;
  /* too few chunks to give every warp of the grid two: a work item a
   * chunk's neighbour offset ((2K + 1)^3 an item), so that the device fills */
  const uint32_t offsets = grid_offsets(&g);
  gp.split = chunks < 2 * (grid * (gp.block / 32)) ? offsets : 1;
  const uint32_t items = chunks * gp.split;
  const double est = (double)na * ((double)offsets * nb / cells) / (gp.cross ? 1 : 2);
  double launches = ceil(est / GRID_LAUNCH_PAIRS);
  /* but each launch at least two items for every resident warp: C1's DR
   * (s, mu), 1,000,000 x 5,000,000 at span 3, had 25 launches of 1,350
   * chunks for 3,168 warps, and ran 1.8x slower a pair than its RR */
  const double fill = floor((double)items / (2.0 * grid * (gp.block / 32)));
  launches = launches > fill ? fill : launches;
  launches = launches < 1 ? 1 : launches > chunks ? chunks : launches;
  const uint32_t per = items == 0 ? 1 : (uint32_t)ceil(items / launches);
  /* the passes: the counts' (gp), then each other channel's, over the same
   * items through its own layout into its own rows */
  grid_params pass[HISTD_SUMS];
  uint32_t pass_grid[HISTD_SUMS];
  int passes = 0;
  pass[passes] = gp, pass_grid[passes++] = grid;
  for (int c = 0; c < HISTD_SUMS; c++)
    if (c != HISTD_SUM_W && m.rows[c] != NULL) {
      const grid_params *lay = &jp->cgp[c];
      grid_params *cp = &pass[passes];
      *cp = gp;
      cp->weighted = 1, cp->unit = lay->unit, cp->sum = c;
      cp->fast = gp.fast && c != HISTD_SUM_WU; /* (ravg sums the contract's u) */
      cp->block = lay->block, cp->smem = lay->smem;
      cp->shared_counts = lay->shared_counts, cp->shared_edges = lay->shared_edges;
      cp->wglobal = lay->wglobal;
      cp->wsum = m.rows[c];
      cp->werr = m.rows[c] + (size_t)grids[c] * slots;
      pass_grid[passes++] = grids[c];
    }
  for (int k = 0; k < passes; k++) {
    const grid_params *pp = &pass[k];
    const double from = (double)k / passes, span = 1.0 / passes;
    for (uint32_t k0 = 0; k0 < items; k0 += per) {
      if (histd__cancelled(ctl)) {
        rc = histd_fail(msg, msglen, HISTD_ECANCELED, "cancelled");
        goto out;
      }
      const uint32_t k1 = items - k0 > per ? k0 + per : items;
      CK(cudaMemsetAsync(m.next, 0, 4, s), "cudaMemsetAsync");
      rc = grid_pairs_launch(pp, k0, k1, pass_grid[k], s, msg, msglen);
      if (rc != 0)
        goto out;
      CK(cudaStreamSynchronize(s), "the grid pair kernel");
      histd__progress(ctl, from + span * (k1 < items ? (double)k1 / items : 0.99));
    }
  }
  CK(cudaEventRecord(ev[2], s), "cudaEventRecord");
  CK(cudaEventSynchronize(ev[2]), "cudaEventSynchronize");
  float build_ms = 0, kernel_ms = 0;
  CK(cudaEventElapsedTime(&build_ms, ev[0], ev[1]), "cudaEventElapsedTime");
  CK(cudaEventElapsedTime(&kernel_ms, ev[0], ev[2]), "cudaEventElapsedTime");

  double t_kernel = histd_now_ms();
  unsigned long long cand = 0;
  host_counts = malloc((size_t)slots * sizeof *host_counts);
  if (host_counts == NULL) {
    rc = histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for the GPU's answer");
    goto out;
  }
  CK(cudaMemcpy(host_counts, m.dcounts, (size_t)slots * 8, cudaMemcpyDeviceToHost),
     "the copy of the counts");
  CK(cudaMemcpy(&cand, m.dcand, 8, cudaMemcpyDeviceToHost), "the copy of the counts");
  for (int c = 0; c < HISTD_SUMS; c++)
    if (m.rows[c] != NULL && (rc = stats_fold_device_rows(m.rows[c], grids[c], slots, count,
                                                          res->sums[c], "sums", msg, msglen)) != 0)
      goto out;
  t_back = histd_now_ms();
  uint64_t sum = host_counts[count];
  for (uint32_t k = 0; k < count; k++) {
    res->counts[k] = host_counts[k];
    sum += host_counts[k];
  }
  res->below = host_counts[count];
  res->overflow = jp->total - sum;
  res->timing.transfer_ms = t_points + (t_copied - t_start) + (t_back - t_kernel);
  res->timing.kernel_ms = kernel_ms;
  finish_result(res, &gp, ctx, &g, (double)cand, build_ms);
  if (getenv("HISTD_GRID_TRACE") != NULL) /* where a run's time goes, for many small runs */
    fprintf(stderr, "grid run: %u x %u points, %u cells: A's points %.3f ms, alloc %.3f, copies "
            "%.3f, cells %.3f, pairs %.3f (%u item%s a chunk), back %.3f (wall %.3f ms)\n", na, nb,
            cells,
            t_points, t_alloc - t_entry - t_points, t_copied - t_start, build_ms,
            kernel_ms - build_ms, gp.split, gp.split == 1 ? "" : "s", t_back - t_kernel,
            t_back - t_entry);
out:
  free(host_counts);
  free(host_fast);
  for (int i = 0; i < 3; i++)
    if (ev[i] != NULL)
      cudaEventDestroy(ev[i]);
  if (ar.base != NULL) {
    cudaStreamSynchronize(s); /* a failed or cancelled job may leave work queued */
    if (owned)
      cudaFree(ar.base);
  }
  return rc;
}

int histd__cuda_grid_part(histd_worker *w, const histd_problem *p, const histd_exec *ex,
                          const histd_control *ctl, uint64_t max_cells, bool stream_a,
                          histd_result *res, char *msg, size_t msglen) {
  grid_job job;
  int rc = plan_job(w->gpu, p, ex, max_cells, &job, msg, msglen);
  return rc != 0 ? rc : run_job(w, p, ctl, &job, stream_a, res, msg, msglen);
}

int histd__cuda_grid_run(HISTD__RUN_ARGS) {
  gpu_ctx *ctx = w->gpu;
  grid_job job;
  const double t0 = histd_now_ms();
  int rc = plan_job(ctx, p, ex, 0, &job, msg, msglen);
  if (rc != 0)
    return rc;
  /* A's points in the context's slot: binary64, and room for float32 */
  const size_t slot = p->a->n * 40;
  if (job_bytes(&job) + slot > histd__cuda_mem_room(ctx))
    return histd__cuda_grid_slabs(w, p, ex, ctl, res, msg, msglen);
  const double t1 = histd_now_ms();
  rc = run_job(w, p, ctl, &job, false, res, msg, msglen);
  if (getenv("HISTD_GRID_TRACE") != NULL)
    fprintf(stderr, "grid job: plan %.3f ms, run and free %.3f ms\n", t1 - t0,
            histd_now_ms() - t1);
  return rc;
}
