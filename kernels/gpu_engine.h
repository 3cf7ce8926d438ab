/*
 * gpu_engine.h -- internal entry points of the CUDA side, beyond those the
 * engine declares in src/engine/engine.h; used by tests/gpu and bench/.
 */
#ifndef HISTD_GPU_ENGINE_H
#define HISTD_GPU_ENGINE_H

#include <stdbool.h>

#include "histd/histd.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gpu_ctx gpu_ctx;

/* Runs GPU kernel `name` (a registry row with launch facts) with `block`
 * threads per block (0: its default). */
int histd__cuda_run_kernel(histd_worker *w, const char *name, uint32_t block,
                           const histd_problem *p, const histd_exec *ex,
                           const histd_control *ctl, histd_result *res, char *msg,
                           size_t msglen);

/* Tests: 1 if the worker's device holds ds's points (prefetched or kept). */
int histd__cuda_holds(const histd_worker *w, const histd_dataset *ds);

/* Tests: where the last job run on the worker's own GPU counted (an
 * SDH_SINK_* of sdh_gpu.h: 0 global, 1 and 2 shared 32-bit, 3 shared
 * 16-bit); -1 before any. */
int histd__cuda_last_sink(const histd_worker *w);

/* Tests: rsqrtf's relative error on the worker's GPU as its context
 * measured it (the float32 bound's eps_r, sdh_kernels.cu); -1 without one. */
double histd__cuda_rsqrt_err(const histd_worker *w);

/* The number in environment variable `name` (a knob of the GPU side,
 * gpu_engine.c's list), or dflt when it is unset, empty or no number. */
double histd__cuda_env(const char *name, double dflt);

/* Adds a run's histogram rows to res: row r to bucket r, the rows past
 * the last bucket to the overflow. */
void histd__cuda_fold_rows(uint32_t nrows, const uint64_t *rows, histd_result *res);

/* "NVIDIA H100 80GB HBM3 (GPU 0)" */
const char *histd__cuda_context_name(const gpu_ctx *ctx);

/* What another driver on the context needs (stats_engine.c): its device,
 * its compute stream (a cudaStream_t), multiprocessors, and the shared
 * memory a block may opt in to. */
void histd__cuda_context_info(const gpu_ctx *ctx, int *device, void **stream, int *sms,
                              size_t *smem_optin);

/* Another driver's points (grid_engine.c): ds's x, y, z on the device,
 * n doubles each back to back at *dev, loaded through the context's two
 * slots (or kept there from an earlier job, or a prefetch); the compute
 * stream waits for the copy, and *transfer_ms is its time if this job is
 * the first to use it (else 0). Valid until the context's next job. */
int histd__cuda_points(gpu_ctx *ctx, const histd_dataset *ds, const double **dev,
                       double *transfer_ms, char *msg, size_t msglen);

/* 0 if `bytes` more fit the device's free memory (less a reserve, and
 * HISTD_GPU_MEM_LIMIT_MB honoured), else HISTD_ETOOBIG with a sentence
 * naming `what`. */
int histd__cuda_mem_check(gpu_ctx *ctx, size_t bytes, const char *what, char *msg,
                          size_t msglen);

/* The bytes a run could have: the free memory as mem_check sees it, less
 * its reserve, plus what the context's dataset slots hold (a run may drop
 * them; the kept scratch buffer counts as used). */
size_t histd__cuda_mem_room(gpu_ctx *ctx);

/* Queues a copy of `bytes` of pageable host memory to dev on stream s
 * (a cudaStream_t) through the context's pinned staging ring, so that it
 * runs near the bus's speed without pinning the source; host may be reused
 * at once (its bytes are in the ring, or on their way, when this returns). */
int histd__cuda_copy_in(gpu_ctx *ctx, void *dev, const void *host, size_t bytes, void *s,
                        char *msg, size_t msglen);

/* A device buffer of at least `bytes` for one run (the grid's arena): the
 * context keeps one of at most HISTD_GPU_SCRATCH_KEEP bytes between runs,
 * so that jobs of many small runs (a species' pieces, frames) do not each
 * allocate (and synchronise on a free); a larger one is the caller's to
 * cudaFree (*owned). Checked against the free memory (mem_check) when it
 * is allocated. */
#define HISTD_GPU_SCRATCH_KEEP ((size_t)256 << 20)
int histd__cuda_scratch(gpu_ctx *ctx, size_t bytes, const char *what, void **out, bool *owned,
                        char *msg, size_t msglen);

/* Frees the context's dataset slots (the points kept for later jobs) and
 * its kept scratch buffer. */
void histd__cuda_drop_slots(gpu_ctx *ctx);

/* "grid" on the GPU (grid_engine.c). _part: one run over p, its cells
 * capped at max_cells (0: p's own cap, histd__grid_max_cells); stream_a:
 * A's points are copied for this run alone (a slab), not kept in the
 * context's slots. _bytes: the device memory such a run allocates, less
 * A's slot. A job too large for the GPU's memory runs in slabs
 * (grid_slabs.c). */
int histd__cuda_grid_part(histd_worker *w, const histd_problem *p, const histd_exec *ex,
                          const histd_control *ctl, uint64_t max_cells, bool stream_a,
                          histd_result *res, char *msg, size_t msglen);
int histd__cuda_grid_bytes(gpu_ctx *ctx, const histd_problem *p, const histd_exec *ex,
                           uint64_t max_cells, size_t *bytes, char *msg, size_t msglen);
int histd__cuda_grid_slabs(histd_worker *w, const histd_problem *p, const histd_exec *ex,
                           const histd_control *ctl, histd_result *res, char *msg,
                           size_t msglen);

/* ---- a job in parts over GPUs (gpu_engine.c) --------------------------------
 * A kernel whose job is a range of units in its own order (the seeds'
 * family: tile pairs or anchors; tensor-core: tile pairs) cuts it at
 * cut[0..nd] and runs part i, units [cut[i], cut[i+1]), on GPU dev[i], a
 * host thread each; the parts' rows are added into the result. */

/* How a part reports (gpu_engine.c): alone, through the job's control;
 * one of several, through atomics the job's thread polls. Opaque here, so
 * that the header stays C++ (bench/tc_probe.cu includes it). */
typedef struct part_ctl part_ctl;

/* Reports that a fraction `frac` of the part is done. */
void histd__part_progress(part_ctl *pc, double frac);
/* Whether the part should stop: the job cancelled, or another part failed. */
bool histd__part_stopped(const part_ctl *pc);

typedef struct part_out {
  uint64_t *rows;   /* the kernel's histogram rows (histd__cuda_fold_rows) */
  uint64_t refined; /* pairs redone in binary64 */
  double transfer_ms, kernel_ms;
  char device[HISTD_DEVICE_NAME_MAX];
  bool dropped; /* rows past the counted ones were not counted (H16) */
} part_out;

/* Runs units [ua, ub) of `job` on the context; fills out. */
typedef int (*histd__part_fn)(gpu_ctx *ctx, const void *job, uint64_t ua, uint64_t ub,
                              part_ctl *pc, part_out *out, char *msg, size_t msglen);

/* The GPUs a job of `pairs` pairs runs on, into dev (the worker's own
 * first): every one ex->devices allows where the job is splittable and has
 * at least HISTD_GPU_SPLIT_MIN_PAIRS pairs, else one; HISTD_GPU_FAKE_SPLIT=k
 * (tests): k parts on the worker's own GPU. 0: the mask allows none. */
int histd__cuda_job_split(const gpu_ctx *ctx, const histd_exec *ex, bool splittable,
                          double pairs, int dev[64]);

/* Runs the parts (nd == 1: on this thread) and adds their rows (nrows each)
 * into res, with their refined pairs, the slowest part's times and the
 * devices' names; *dropped when a part dropped rows. A failed part stops the
 * others and its error is the job's. */
int histd__cuda_parts(gpu_ctx *ctx, const int *dev, int nd, const uint64_t *cut, uint32_t nrows,
                      histd__part_fn run, const void *job, const histd_control *ctl,
                      histd_result *res, bool *dropped, char *msg, size_t msglen);

#ifdef __cplusplus
}
#endif
#endif
