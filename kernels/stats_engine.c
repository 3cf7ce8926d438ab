/*
 * stats_engine.c -- the host side of "tiled-stats": every statistic of the
 * family on one GPU, exact (stats_gpu.h has the design).
 *
 * A job copies A (and B, the weights, the edges) to the device, then runs
 * launches over ranges of its tile pairs, each about STATS_LAUNCH_PAIRS pairs,
 * so that progress moves and a cancel is seen between two launches; the
 * counts and the blocks' weighted rows come back at the end and are folded
 * here (Neumaier again, over the rows).
 *
 * The sums (histd_sum's channels): the pass that keeps the counts sums
 * channel W where the job is weighted; every other channel the result has
 * runs one pass more over the same tiles, in the weighted layout (weights
 * of 1 without weights) and into rows of its own. A new channel needs
 * nothing here: its term is histd_ev_sum's.
 *
 * The points are copied for each job rather than kept on the device as
 * the plain kernels keep theirs: a statistics job does O(N^2) binary64
 * work on O(N) bytes, so the copy is a small part of it.
 *
 * Float32 pairs (src/engine/f32_pair.h): plan_f32 decides whether a job
 * takes them, centres the points and bounds each component's error; the
 * float32 copies and the tables travel with the binary64 points, which
 * the pairs near a boundary still need. HISTD_STATS_F32=0 keeps every
 * pair in binary64 (the benchmark's baseline, and tests).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "engine.h"
#include "f32_pair.h"
#include "gpu_engine.h"
#include "sdh_gpu.h"
#include "stats_gpu.h"

#define STATS_LAUNCH_PAIRS 4e9 /* tens of ms of pairs on an H100 or H200 */

typedef struct stats_job {
  double *dev;                /* one allocation: A, B, w, edges */
  float *f32;                 /* float32 pairs: A's and B's (x, y, z, 0), the tables */
  unsigned long long *refined; /* float32 pairs: the contract's count */
  unsigned long long *counts; /* slots */
  double *rows[HISTD_SUMS];   /* channel c's: 2 * its pass's grid * slots, sums
                               * then compensations (NULL: not summed) */
} stats_job;

#define CK SDH_CK_OUT

/* Copies n doubles of one array to dst (or nothing when src is NULL). */
static cudaError_t put(double *dst, const double *src, size_t n, cudaStream_t s) {
  if (src == NULL || n == 0)
    return cudaSuccess;
  return cudaMemcpyAsync(dst, src, n * sizeof(double), cudaMemcpyHostToDevice, s);
}

/* The block size and the shared-memory layout, the first that fits of,
 * in order: for weights lane columns (only where two blocks still fit a
 * multiprocessor: one block of 4 warps cannot hide binary64 latency), else
 * warp partials by atomics; the counts in lane columns (where four blocks
 * still fit), one column a block, or global atomics (count_sink.h; not
 * for float32 pairs, which give their float32 up where nothing else
 * fits); the edges staged (edge bins). A weighted job whose partials do
 * not fit is refused. */
static int choose_layout(stats_params *sp, bool weighted, const histd_exec *ex, size_t optin,
                         char *msg, size_t msglen) {
  uint32_t block = ex->block_size != 0 ? ex->block_size : weighted ? STATS_WEIGHTED_BLOCK : 256;
  if (weighted && block > STATS_WEIGHTED_BLOCK)
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "weighted jobs on tiled-stats run with block_size <= %u (the bound on "
                      "their sums needs it), got %u",
                      STATS_WEIGHTED_BLOCK, block);
  sp->block = block;
  const size_t room = optin - SDH_STATIC_SMEM;
  static const int wmodes[2][2] = {{STATS_W_NONE, STATS_W_NONE},
                                   {STATS_W_LANES, STATS_W_ATOMIC}};
  for (int w = 0; w < 2; w++)
    for (int counts = COUNTS_LANES; counts >= (sp->f32 ? COUNTS_BLOCK : COUNTS_GLOBAL); counts--)
      for (int edges = sp->edges; edges >= 0; edges--) {
        sp->weighted = wmodes[weighted][w];
        sp->shared_counts = counts;
        sp->shared_edges = edges;
        size_t bytes = stats_smem_bytes(sp);
        size_t limit = sp->weighted == STATS_W_LANES ? room / 2 - 1024
                       : counts == COUNTS_LANES  ? room / 4
                                                 : room;
        if (bytes <= limit) {
          sp->smem = bytes;
          return 0;
        }
      }
  if (sp->f32) { /* float32 pairs count in shared memory only: without them, in global */
    sp->f32 = 0;
    return choose_layout(sp, weighted, ex, optin, msg, msglen);
  }
  sp->weighted = STATS_W_ATOMIC, sp->shared_counts = 0, sp->shared_edges = 0;
  size_t fixed = stats_smem_bytes(sp) - 3 * (block / 32) * ((size_t)sp->count + 2) * 8;
  return histd_fail(msg, msglen, HISTD_ETOOBIG,
                    "a weighted histogram on the GPU holds at most %zu bins at block_size "
                    "%u, and this job has %u; use fewer bins, a smaller block_size, or "
                    "kernel \"cpu\"",
                    (room - fixed) / (3 * (block / 32) * 8) - 2, block, sp->count);
}

/* Every tile pair of sp's job through its kernel, `grid` blocks a launch
 * and at least a tile pair a block (about STATS_LAUNCH_PAIRS pairs a
 * launch), with progress from `from` to `from + span` of the job. */
static int run_tiles(const stats_params *sp, uint32_t grid, uint32_t tiles_a, uint32_t tiles_b,
                     cudaStream_t s, const histd_control *ctl, double from, double span,
                     char *msg, size_t msglen) {
  int rc = 0;
  const uint64_t all = sp->cross ? (uint64_t)tiles_a * tiles_b
                                 : (uint64_t)tiles_a * (tiles_a + 1) / 2;
  const uint64_t tile = (uint64_t)sp->block * sp->block; /* pairs of a tile pair, at most */
  uint64_t step = (uint64_t)(STATS_LAUNCH_PAIRS / (double)tile);
  step = step > grid ? step : grid;
  /* a block's pairs in a launch below 2^32: its shared counters' bound (count_sink.h) */
  const uint64_t cap = (uint64_t)grid * (UINT32_MAX / tile);
  step = step < cap ? step : cap;
  for (uint64_t w0 = 0; w0 < all;) {
    if (histd__cancelled(ctl))
      return histd_fail(msg, msglen, HISTD_ECANCELED, "cancelled");
    const uint64_t w1 = all - w0 > step ? w0 + step : all;
    rc = stats_launch(sp, w0, w1, w1 - w0 < grid ? (uint32_t)(w1 - w0) : grid, s, msg, msglen);
    if (rc != 0)
      return rc;
    CK(cudaStreamSynchronize(s), "the tiled-stats kernel");
    histd__progress(ctl, from + span * (w1 < all ? (double)w1 / all : 0.99));
    w0 = w1;
  }
out:
  return rc;
}

void stats_fold_rows(const double *rows, uint32_t grid, uint32_t slots, uint32_t count,
                     double *out) {
  for (uint32_t k = 0; k < count; k++) {
    double sum = 0, err = 0;
    for (uint32_t g = 0; g < grid; g++) {
      histd_ev_neumaier(&sum, &err, rows[(size_t)g * slots + k]);
      histd_ev_neumaier(&sum, &err, rows[((size_t)grid + g) * slots + k]);
    }
    out[k] = sum + err;
  }
}

int stats_fold_device_rows(const double *dev, uint32_t grid, uint32_t slots, uint32_t count,
                           double *out, const char *what, char *msg, size_t msglen) {
  const size_t n = 2 * (size_t)grid * slots;
  double *rows = malloc(n * sizeof *rows);
  if (rows == NULL)
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for the GPU's %s", what);
  cudaError_t e = cudaMemcpy(rows, dev, n * sizeof *rows, cudaMemcpyDeviceToHost);
  if (e == cudaSuccess)
    stats_fold_rows(rows, grid, slots, count, out);
  free(rows);
  return e == cudaSuccess ? 0 : sdh_cuda_fail(msg, msglen, what, e);
}

/* Float32 pairs for sp's job (f32_pair.h has the bounds): false where
 * they do not apply (the midpoint line of sight, edges that are not a
 * geometric row, coordinates or boxes beyond float32's reach,
 * HISTD_STATS_F32=0); else the centre c, sp's box in float32 and
 * the float32 bins' guesses (sp->fb) and their tables' axes. */
static bool plan_f32(stats_params *sp, const histd_problem *p, const histd_dataset *a,
                     const histd_dataset *b, double c[3], histd__fast_axes *fx) {
  const char *env = getenv("HISTD_STATS_F32");
  if (env != NULL && strcmp(env, "0") == 0)
    return false;
  double lo[3], hi[3], e[3], ed;
  for (int k = 0; k < 3; k++)
    lo[k] = fmin(a->min[k], b->min[k]), hi[k] = fmax(a->max[k], b->max[k]);
  if (!histd__f32_bounds(&sp->metric, lo, hi, c, e, &ed, &sp->box32))
    return false;
  const histd_ev_bin ev = histd__ev_bin(p);
  /* (the kernel stages the tables in shared memory: larger ones, such as
   * a histogram of 40,000 bins, stay binary64) */
  return histd__fast_plan(&ev, e, ed, fx, &sp->fb) &&
         histd__fast_entries(sp->fb.count1, sp->fb.count2) <= STATS_F32_TABLE &&
         (sp->two || (sp->fb.edges != 0) == (sp->edges != 0)); /* (the kernel's EDGES) */
}

/* n points of ds as float32 (x - c, y - c, z - c, 0) into out. */
static void points_f32(const histd_dataset *ds, const double c[3], float *out) {
  for (size_t i = 0; i < ds->n; i++) {
    out[4 * i] = (float)(ds->x[i] - c[0]);
    out[4 * i + 1] = (float)(ds->y[i] - c[1]);
    out[4 * i + 2] = (float)(ds->z[i] - c[2]);
    out[4 * i + 3] = 0;
  }
}

int histd__cuda_stats_run(HISTD__RUN_ARGS) {
  gpu_ctx *ctx = w->gpu;
  int device, sms;
  size_t optin;
  void *stream;
  histd__cuda_context_info(ctx, &device, &stream, &sms, &optin);
  cudaStream_t s = stream;
  const histd_dataset *a = p->a, *b = p->b != NULL ? p->b : p->a;
  if (a->n > UINT32_MAX / 2 || b->n > UINT32_MAX / 2)
    return histd_fail(msg, msglen, HISTD_ETOOBIG,
                      "tiled-stats takes at most %u points a side", UINT32_MAX / 2);
  /* two axes: count1 x count2 bins, one slot each */
  const uint32_t count = (uint32_t)histd_bins_slots(&res->bins), slots = count + 2;
  stats_params sp;
  memset(&sp, 0, sizeof sp);
  sp.metric = histd__metric(&p->box);
  sp.edges = p->bins.kind == HISTD_BINS_EDGES;
  sp.count = count;
  sp.count1 = p->bins.count;
  sp.ev = histd__ev_bin(p);
  sp.two = sp.ev.axes != HISTD_EV_D;
  sp.width = p->bins.width;
  sp.inv_width = sp.edges ? 0 : 1 / p->bins.width;
  sp.na = (uint32_t)a->n;
  sp.nb = (uint32_t)b->n;
  sp.cross = p->b != NULL;
  stats_job job = {NULL, NULL, NULL, NULL, {NULL}};
  int rc = 0;
  double t_start = histd_now_ms(), t_kernel = 0, t_back = 0;
  uint64_t *host_counts = NULL;
  float *host_f32 = NULL;
  double centre[3];
  histd__fast_axes fx = {0};
  sp.f32 = plan_f32(&sp, p, a, b, centre, &fx);
  CK(cudaSetDevice(device), "cudaSetDevice");
  rc = choose_layout(&sp, p->weighted, ex, optin, msg, msglen);
  if (rc != 0)
    goto out;
  int per_sm = 0;
  rc = stats_blocks_per_sm(&sp, &per_sm, msg, msglen);
  if (rc != 0)
    goto out;
  if (per_sm < 1) {
    rc = histd_fail(msg, msglen, HISTD_ETOOBIG,
                    "tiled-stats with block_size %u and %u bins does not fit a multiprocessor",
                    sp.block, count);
    goto out;
  }
  const uint32_t tiles_a = (sp.na + sp.block - 1) / sp.block;
  const uint32_t tiles_b = (sp.nb + sp.block - 1) / sp.block;
  const uint32_t grid = (uint32_t)sms * (uint32_t)per_sm;
  const bool weighted = p->weighted;
  size_t na = a->n, nb = sp.cross ? b->n : 0, ne = sp.edges ? (size_t)sp.count1 + 1 : 0;
  size_t doubles = (3 + weighted) * (na + nb) + ne;
  CK(cudaMalloc((void **)&job.dev, (doubles ? doubles : 1) * sizeof(double)), "cudaMalloc");
  CK(cudaMalloc((void **)&job.counts, slots * sizeof(unsigned long long)), "cudaMalloc");
  if (weighted)
    CK(cudaMalloc((void **)&job.rows[HISTD_SUM_W], 2 * (size_t)grid * slots * sizeof(double)),
       "cudaMalloc");
  double *at = job.dev;
  sp.ax = at, at += na;
  sp.ay = at, at += na;
  sp.az = at, at += na;
  sp.aw = weighted ? at : NULL, at += weighted ? na : 0;
  if (sp.cross) {
    sp.bx = at, at += nb;
    sp.by = at, at += nb;
    sp.bz = at, at += nb;
    sp.bw = weighted ? at : NULL, at += weighted ? nb : 0;
  } else {
    sp.bx = sp.ax, sp.by = sp.ay, sp.bz = sp.az, sp.bw = sp.aw;
  }
  sp.dedges = sp.edges ? at : NULL;
  if (sp.f32) { /* the float32 points (B's only for A x B) and the tables, staged here */
    const size_t tab = 2 * histd__fast_entries(sp.fb.count1, sp.fb.count2);
    const size_t floats = 4 * (na + nb) + tab;
    host_f32 = malloc(floats * sizeof *host_f32);
    if (host_f32 == NULL) {
      rc = histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for the float32 points");
      goto out;
    }
    points_f32(a, centre, host_f32);
    if (sp.cross)
      points_f32(b, centre, host_f32 + 4 * na);
    histd__fast_tables(&fx, host_f32 + 4 * (na + nb));
    CK(cudaMalloc((void **)&job.f32, floats * sizeof(float)), "cudaMalloc");
    CK(cudaMalloc((void **)&job.refined, sizeof *job.refined), "cudaMalloc");
    CK(cudaMemcpyAsync(job.f32, host_f32, floats * sizeof(float), cudaMemcpyHostToDevice, s),
       "the copy of the float32 points");
    CK(cudaMemsetAsync(job.refined, 0, sizeof *job.refined, s), "cudaMemset");
    sp.a32 = job.f32;
    sp.b32 = sp.cross ? job.f32 + 4 * na : job.f32;
    sp.fb.tab = job.f32 + 4 * (na + nb);
    sp.refined = job.refined;
  }
  sp.counts = job.counts;
  sp.wsum = job.rows[HISTD_SUM_W];
  sp.werr = weighted ? job.rows[HISTD_SUM_W] + (size_t)grid * slots : NULL;
  CK(put((double *)sp.ax, a->x, na, s), "the copy of A");
  CK(put((double *)sp.ay, a->y, na, s), "the copy of A");
  CK(put((double *)sp.az, a->z, na, s), "the copy of A");
  if (weighted)
    CK(put((double *)sp.aw, a->w, na, s), "the copy of A's weights");
  if (sp.cross) {
    CK(put((double *)sp.bx, b->x, nb, s), "the copy of B");
    CK(put((double *)sp.by, b->y, nb, s), "the copy of B");
    CK(put((double *)sp.bz, b->z, nb, s), "the copy of B");
    if (weighted)
      CK(put((double *)sp.bw, b->w, nb, s), "the copy of B's weights");
  }
  if (sp.edges)
    CK(put((double *)sp.dedges, p->bins.edges, ne, s), "the copy of the edges");
  CK(cudaMemsetAsync(job.counts, 0, slots * sizeof(unsigned long long), s), "cudaMemset");
  if (weighted)
    CK(cudaMemsetAsync(job.rows[HISTD_SUM_W], 0, 2 * (size_t)grid * slots * sizeof(double), s),
       "cudaMemset");
  CK(cudaStreamSynchronize(s), "the copies to the device");
  double t_copied = histd_now_ms();
  /* the other channels' passes (the file's head) */
  stats_params cp[HISTD_SUMS];
  uint32_t grids[HISTD_SUMS] = {0};
  grids[HISTD_SUM_W] = grid;
  int passes = 1;
  for (int c = 0; c < HISTD_SUMS; c++) {
    if (c == HISTD_SUM_W || !(histd_problem_sums(p) >> c & 1))
      continue;
    cp[c] = sp;
    cp[c].unit = !weighted;
    cp[c].sum = c;
    cp[c].f32 = sp.f32 && c != HISTD_SUM_WU; /* (ravg sums the contract's u) */
    int per = 0;
    if ((rc = choose_layout(&cp[c], true, ex, optin, msg, msglen)) != 0 ||
        (rc = stats_blocks_per_sm(&cp[c], &per, msg, msglen)) != 0)
      goto out;
    grids[c] = (uint32_t)sms * (uint32_t)(per > 0 ? per : 1);
    const size_t n = 2 * (size_t)grids[c] * slots;
    CK(cudaMalloc((void **)&job.rows[c], n * sizeof(double)), "cudaMalloc");
    CK(cudaMemsetAsync(job.rows[c], 0, n * sizeof(double), s), "cudaMemset");
    cp[c].wsum = job.rows[c];
    cp[c].werr = job.rows[c] + (size_t)grids[c] * slots;
    passes++;
  }
  const double share = 1.0 / passes;
  if ((rc = run_tiles(&sp, grid, tiles_a, tiles_b, s, ctl, 0, share, msg, msglen)) != 0)
    goto out;
  for (int c = 0, k = 1; c < HISTD_SUMS; c++)
    if (c != HISTD_SUM_W && job.rows[c] != NULL) {
      const uint32_t ta = (cp[c].na + cp[c].block - 1) / cp[c].block;
      const uint32_t tb = (cp[c].nb + cp[c].block - 1) / cp[c].block;
      if ((rc = run_tiles(&cp[c], grids[c], ta, tb, s, ctl, share * k++, share, msg, msglen)) != 0)
        goto out;
    }
  t_kernel = histd_now_ms();
  host_counts = malloc(slots * sizeof *host_counts);
  if (host_counts == NULL) {
    rc = histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for the GPU's answer");
    goto out;
  }
  CK(cudaMemcpy(host_counts, job.counts, slots * sizeof *host_counts, cudaMemcpyDeviceToHost),
     "the copy of the counts");
  for (int c = 0; c < HISTD_SUMS; c++)
    if (job.rows[c] != NULL &&
        (rc = stats_fold_device_rows(job.rows[c], grids[c], slots, count, res->sums[c], "sums",
                                     msg, msglen)) != 0)
      goto out;
  unsigned long long refined = 0;
  if (sp.f32)
    CK(cudaMemcpy(&refined, job.refined, sizeof refined, cudaMemcpyDeviceToHost),
       "the copy of the refined count");
  t_back = histd_now_ms();
  for (uint32_t k = 0; k < count; k++)
    res->counts[k] = host_counts[k];
  res->below = host_counts[count];
  /* overflow: the kernel's every pair less those it counted (it adds no
   * atomics for overflow, nor its sums, which the result does not keep) */
  uint64_t counted = res->below;
  for (uint32_t k = 0; k < count; k++)
    counted += host_counts[k];
  const uint64_t pairs =
      sp.cross ? (uint64_t)sp.na * sp.nb : (uint64_t)sp.na * (sp.na - 1) / 2;
  res->overflow = pairs - counted;
  res->exact = true; /* the contract's own bins, whatever the precision asked */
  res->refined_pairs = refined; /* (float32 pairs: those the contract binned) */
  res->block_size = sp.block;
  res->threads = 0;
  res->timing.transfer_ms = (t_copied - t_start) + (t_back - t_kernel);
  res->timing.kernel_ms = t_kernel - t_copied;
  snprintf(res->device, sizeof res->device, "%s%s", histd__cuda_context_name(ctx),
           sp.f32 ? ", float32 pairs and bins" : "");
out:
  free(host_counts);
  free(host_f32);
  if (job.f32)
    cudaFree(job.f32);
  if (job.refined)
    cudaFree(job.refined);
  if (job.dev)
    cudaFree(job.dev);
  if (job.counts)
    cudaFree(job.counts);
  for (int c = 0; c < HISTD_SUMS; c++)
    if (job.rows[c])
      cudaFree(job.rows[c]);
  return rc;
}
