/*
 * tc_engine.c -- "tensor-core" on a GPU worker: the plain self histogram
 * with the squared distances from the tensor cores (tc_kernels.cuh; the
 * arithmetic and its bound in tc_plan.h), exact or fast.
 *
 * A job: its points on the device (the context's slots, as every kernel's),
 * the tiles built there (Morton order, frames, radii: tc_tiles_device, a
 * millisecond at 2e6 points), then launches over the tile pairs, each
 * sized from the last one's rate to HISTD_GPU_CHUNK_MS (100 ms) and at
 * most TC_LAUNCH_MAX tile pairs; between launches the job reports progress
 * and honours a cancel. Its kernel_ms counts the build and the launches.
 *
 * Several GPUs. A job big enough to cut (gpu_engine.c's rule, the seeds'
 * family's) is cut into equal ranges of the tile pairs, a GPU each
 * (histd__cuda_parts): every GPU builds the tiles of all the points (the
 * same tiles: the build is deterministic) and counts its range; the rows
 * are added. A tile pair costs about the same anywhere in the order, so
 * equal ranges finish together.
 *
 * The queue of edge work. Whole flagged groups (gq) are the faster where
 * edge pairs are rare (+3-4% at W2); where they are many, either may win
 * by far: on a 40^3 lattice the group queue overflows and the spilled
 * groups go pair by pair in the lane (9x slower than the pair queue), and
 * on a lattice of 9^3 sites, each many times over (a tenth of the pairs on
 * an edge), the pair queue overflows to the global counts (13x slower
 * than the group queue). So an exact job tries both: its first launch
 * queues groups and its second pairs, a 32nd of the tile pairs each, and
 * the faster queue takes the rest. HISTD_TC_QUEUE=group or pair fixes the
 * choice (tests, bench).
 *
 * What it does not run (the plan declines: distances beyond the float32
 * code's reach, more rows than shared memory holds, points past 2^31, or
 * the devices mask leaves out the worker's GPU) runs "balanced" instead,
 * and the result says so. "auto" asks the same plan whether it takes a
 * job (histd__cuda_tc_plan); where tensor-core pays is choose.c's rule.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "engine.h"
#include "gpu_engine.h"
#include "sdh_gpu.h"
#include "tc_gpu.h"

#define TC_STATIC_SMEM 33792u /* k_tc's own shared memory, rounded up */

/* The job's plan, or a sentence (why) saying why tensor-core cannot run it. */
static bool tc_plan_job(const histd_worker *w, const histd_problem *p, const histd_exec *ex,
                        tc_params *tp, size_t *smem, char *why, size_t whylen) {
  const histd_dataset *ds = p->a;
  gpu_ctx *ctx = w->gpu;
  int device;
  void *stream;
  int sms;
  size_t optin;
  histd__cuda_context_info(ctx, &device, &stream, &sms, &optin);
  if (ex->devices != 0 && !(device < 64 && (ex->devices >> device) & 1)) {
    snprintf(why, whylen, "the devices mask leaves out the worker's GPU %d", device);
    return false;
  }
  if (ds->n < 2 || ds->n > 0x7fffffffu) {
    snprintf(why, whylen, "%zu points: tensor-core takes 2 to 2^31", ds->n);
    return false;
  }
  double eps_r = histd__cuda_env("HISTD_GPU_RSQRT_ERR", -1);
  if (eps_r < 0)
    eps_r = histd__cuda_rsqrt_err(w);
  if (!(eps_r > 0 && eps_r < 0x1p-20))
    eps_r = 0x1p-22; /* the CUDA Guide's 2 ulp */
  memset(tp, 0, sizeof *tp);
  tp->job = tc_job_plan(histd_dataset_diagonal(ds) / p->bins.width, eps_r,
                        ex->precision == HISTD_PRECISION_EXACT);
  if (!tp->job.ok) {
    snprintf(why, whylen, "the set spans %.4g bucket widths, past the float32 code's reach",
             histd_dataset_diagonal(ds) / p->bins.width);
    return false;
  }
  tp->sub = tp->job.k >= 16 ? tp->job.k - 16 : 0;
  *smem = tc_hist_bytes(tp);
  if (*smem + TC_STATIC_SMEM > optin) {
    snprintf(why, whylen,
             "its %u histogram rows take %zu bytes of shared memory a block, more than the "
             "GPU's %zu",
             tp->job.rows, *smem, optin > TC_STATIC_SMEM ? optin - TC_STATIC_SMEM : 0);
    return false;
  }
  tp->rowcap = tp->job.rows - 1;
  tp->width = p->bins.width;
  tp->inv_w = 1.0 / p->bins.width;
  return true;
}

/* The launches over tile pairs [u0, u1); *kernel_ms from the first event
 * (the tiles' build) to the last. */
static int tc_launches(cudaStream_t s, tc_params *tp, uint64_t u0, uint64_t u1, cudaEvent_t ev[3],
                       part_ctl *pc, double *kernel_ms, char *msg, size_t msglen) {
  int rc = 0;
  const char *qenv = getenv("HISTD_TC_QUEUE");
  /* adapt: launch 0 queues groups and launch 1 pairs, a 32nd of the job
   * each; the faster queue takes the rest */
  int trial = tp->job.exact && (qenv == NULL || strcmp(qenv, "adapt") == 0) ? 0 : 2;
  int gq = tp->job.exact && qenv != NULL && strcmp(qenv, "group") == 0;
  double trial_rate[2] = {0, 0};
  uint32_t grid[2];
  size_t smem;
  SDH_CK_OUT(tc_prepare(tp, 0, &grid[0], &smem), "the tensor-core kernel's configuration");
  SDH_CK_OUT(tc_prepare(tp, 1, &grid[1], &smem), "the tensor-core kernel's configuration");
  const uint64_t U = u1 - u0;
  const double target = histd__cuda_env("HISTD_GPU_CHUNK_MS", 100);
  double rate = 2e4; /* tile pairs a millisecond: a low guess for the first launch */
  for (uint64_t u = u0; u < u1;) {
    if (trial < 2)
      gq = trial == 0;
    double want = trial < 2 ? (double)U / 32 : target > 0 ? rate * target : (double)TC_LAUNCH_MAX;
    const uint64_t least = trial < 2 ? grid[gq] : (uint64_t)grid[gq] * TC_CHUNK;
    uint64_t len = want < (double)least ? least : (uint64_t)fmin(want, (double)TC_LAUNCH_MAX);
    if (len > u1 - u)
      len = u1 - u;
    SDH_CK_OUT(cudaEventRecord(ev[1], s), "cudaEventRecord");
    SDH_CK_OUT(tc_launch(tp, gq, grid[gq], smem, u, u + len, s), "the tensor-core kernel");
    SDH_CK_OUT(cudaEventRecord(ev[2], s), "cudaEventRecord");
    SDH_CK_OUT(cudaEventSynchronize(ev[2]), "the tensor-core kernel");
    float ms = 0;
    SDH_CK_OUT(cudaEventElapsedTime(&ms, ev[1], ev[2]), "cudaEventElapsedTime");
    const double r = (double)len / fmax(ms, 1e-3);
    if (trial < 2) {
      trial_rate[trial++] = r;
      if (trial == 2) {
        gq = trial_rate[0] >= trial_rate[1];
        rate = trial_rate[!gq];
      }
    } else if (ms > 0.5f) {
      rate = r;
    }
    u += len;
    histd__part_progress(pc, (double)(u - u0) / (double)U);
    if (u < u1 && histd__part_stopped(pc)) {
      rc = histd_fail(msg, msglen, HISTD_ECANCELED, "cancelled");
      goto out;
    }
  }
  float all = 0;
  SDH_CK_OUT(cudaEventElapsedTime(&all, ev[0], ev[2]), "cudaEventElapsedTime");
  *kernel_ms = all;
out:
  return rc;
}

/* A part: tile pairs [ua, ub) of the planned job, on one GPU (its points
 * and its own tiles there). */
typedef struct tc_job_in {
  const histd_dataset *ds;
  tc_params tp; /* the plan: the buffers are each part's */
} tc_job_in;

static int tc_part(gpu_ctx *ctx, const void *job, uint64_t ua, uint64_t ub, part_ctl *pc,
                   part_out *out, char *msg, size_t msglen) {
  const tc_job_in *j = job;
  const histd_dataset *ds = j->ds;
  tc_params tp = j->tp;
  const uint32_t n = (uint32_t)ds->n;
  int device, sms, rc = 0;
  void *sv;
  size_t optin;
  histd__cuda_context_info(ctx, &device, &sv, &sms, &optin);
  cudaStream_t s = sv;
  void *mem = NULL;
  cudaEvent_t ev[3] = {NULL, NULL, NULL};
  const double *dx;
  const size_t tiles = tc_tiles_bytes(n), extra = 8 * ((size_t)tp.job.rows + TC_NSTATS);
  snprintf(out->device, sizeof out->device, "%s", histd__cuda_context_name(ctx));
  SDH_CK_OUT(cudaSetDevice(device), "cudaSetDevice");
  rc = histd__cuda_points(ctx, ds, &dx, &out->transfer_ms, msg, msglen);
  if (rc != 0)
    return rc;
  if (histd__cuda_mem_check(ctx, tiles + extra, "the tensor-core kernel's tiles", msg, msglen))
    return histd_fail(msg, msglen, HISTD_ETOOBIG,
                      "its tiles (%.1f MB) do not fit the free memory of GPU %d",
                      (double)(tiles + extra) / 1e6, device);
  for (int i = 0; i < 3; i++)
    SDH_CK_OUT(cudaEventCreate(&ev[i]), "cudaEventCreate");
  SDH_CK_OUT(cudaMalloc(&mem, tiles + extra), "cudaMalloc");
  tp.counts = (unsigned long long *)((char *)mem + tiles);
  tp.stats = tp.counts + tp.job.rows;
  SDH_CK_OUT(cudaMemsetAsync(tp.counts, 0, extra, s), "cudaMemset");
  SDH_CK_OUT(cudaEventRecord(ev[0], s), "cudaEventRecord");
  double lo[3] = {ds->min[0], ds->min[1], ds->min[2]};
  SDH_CK_OUT(tc_tiles_device(dx, n, lo, histd__morton_scale(ds), tp.width, mem, &tp, s),
             "the tensor-core kernel's tiles");
  if ((rc = tc_launches(s, &tp, ua, ub, ev, pc, &out->kernel_ms, msg, msglen)) != 0)
    goto out;
  unsigned long long stats[TC_NSTATS];
  SDH_CK_OUT(cudaMemcpy(out->rows, tp.counts, 8 * (size_t)tp.job.rows, cudaMemcpyDeviceToHost),
             "the copy of the counts");
  SDH_CK_OUT(cudaMemcpy(stats, tp.stats, sizeof stats, cudaMemcpyDeviceToHost),
             "the copy of the counts");
  out->refined = stats[TC_REFINED];
out:
  if (mem != NULL)
    cudaFree(mem);
  for (int i = 0; i < 3; i++)
    if (ev[i] != NULL)
      cudaEventDestroy(ev[i]);
  return rc;
}

/* Runs the job, on the GPUs it is given (equal shares of the tile pairs,
 * each GPU its own tiles); 1 (nothing run) where its plan declines, or its
 * tiles do not fit a GPU, with why. */
static int tc_run(HISTD__RUN_ARGS, char *why, size_t whylen) {
  tc_job_in job;
  memset(&job, 0, sizeof job);
  job.ds = p->a;
  size_t smem;
  if (!tc_plan_job(w, p, ex, &job.tp, &smem, why, whylen))
    return 1;
  const uint64_t n = p->a->n, T = (n + TC_TILE - 1) / TC_TILE, U = T * (T + 1) / 2;
  int dev[64];
  const int nd = histd__cuda_job_split(w->gpu, ex, true, (double)n * (double)(n - 1) / 2, dev);
  if (nd == 0) {
    snprintf(why, whylen, "the devices mask selects no GPU");
    return 1;
  }
  uint64_t cut[65];
  for (int i = 0; i <= nd; i++)
    cut[i] = U * (uint64_t)i / (uint64_t)nd;
  bool dropped;
  int rc = histd__cuda_parts(w->gpu, dev, nd, cut, job.tp.job.rows, tc_part, &job, ctl, res,
                             &dropped, msg, msglen);
  if (rc == HISTD_ETOOBIG) {
    snprintf(why, whylen, "%s", msg);
    return 1;
  }
  if (rc != 0)
    return rc;
  snprintf(res->kernel, sizeof res->kernel, "tensor-core");
  res->block_size = TC_TILE;
  res->threads = 0;
  res->exact = job.tp.job.exact != 0;
  return 0;
}

bool histd__cuda_tc_plan(const histd_worker *w, const histd_problem *p, const histd_exec *ex,
                         uint32_t *k) {
  tc_params tp;
  size_t smem;
  char why[256];
  if (w->gpu == NULL || !tc_plan_job(w, p, ex, &tp, &smem, why, sizeof why))
    return false;
  *k = tp.job.k;
  return true;
}

int histd__cuda_tc_run(HISTD__RUN_ARGS) {
  if (w->gpu == NULL)
    return histd_fail(msg, msglen, HISTD_ENODEV, "this worker has no GPU");
  /* (a block size other than 0 or 256: refused by histd_exec_validate from
   * the registry row's block, before any run) */
  char why[256] = "";
  int rc = tc_run(w, p, ex, ctl, res, msg, msglen, why, sizeof why);
  if (rc != 1)
    return rc;
  /* the plan declined: the brute-force kernel "auto" runs past tensor-core
   * instead (choose.c), and why */
  uint32_t block;
  const char *name = histd__choose_gpu_brute(p, ex, &block)->name;
  rc = histd__cuda_run_kernel(w, name, block, p, ex, ctl, res, msg, msglen);
  if (rc == 0)
    snprintf(res->reason, sizeof res->reason, "tensor-core could not run this job (%s): %s ran",
             why, name);
  return rc;
}
