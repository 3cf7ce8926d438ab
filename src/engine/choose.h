/*
 * choose.h -- what "auto" runs (choose.c): the kernel, its block size and
 * why, for one frame of a job on one worker. engine.h includes it; it
 * stands apart so that C++ host code (bench/tc_probe.cu), which cannot
 * include engine.h's inline pair functions, can ask it too.
 */
#ifndef HISTD_CHOOSE_H
#define HISTD_CHOOSE_H

#include "histd/histd.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Rules a new choice passes over: what a run of an earlier choice found
 * (histd__choice.retry). */
enum {
  HISTD__CHOOSE_NO_GRID = 1u << 0,     /* the grid did not fit (HISTD_ETOOBIG) */
  HISTD__CHOOSE_NO_GPU_STATS = 1u << 1 /* tiled-stats did not fit (HISTD_ETOOBIG) */
};

typedef struct histd__choice {
  const histd_kernel *kernel;    /* the registry row "auto" runs            */
  uint32_t block;                /* the block size it runs with (GPU rows; 0:
                                  * the kernel's own choice, and the CPU's)  */
  bool every_pair;               /* brute force: it meets every pair (not the
                                  * grid, not the tree)                       */
  unsigned retry;                /* HISTD__CHOOSE_NO_*: where its run answers
                                  * HISTD_ETOOBIG, choose again passing over
                                  * this rule; 0: the error stands           */
  char reason[HISTD_REASON_MAX]; /* why, as the result records it        */
} histd__choice;

/* What "auto" runs for the one-frame problem p (bins resolved, as
 * histd__problem_resolve leaves them) on worker w (its device: -1 for the
 * CPU), with the job's execution ex (NULL: the defaults), passing over the
 * rules in skip (HISTD__CHOOSE_NO_*). Always a kernel that can run p. */
void histd__choose(const histd_worker *w, const histd_problem *p, const histd_exec *ex,
                   unsigned skip, histd__choice *c);

/* The brute-force GPU kernel of a plain self histogram where tensor-core
 * does not run it: "balanced", with its block size by the points (the
 * job's where ex names one) in *block. */
const histd_kernel *histd__choose_gpu_brute(const histd_problem *p, const histd_exec *ex,
                                            uint32_t *block);

/* The share of p's pairs (one frame, bins resolved) that kernel k
 * compares, by the grid's model: its estimate for "grid", and for "auto"
 * where the grid pays on a CPU worker (it runs the grid there, or the
 * tree, which was the faster where both pay); else 1 (histd_shard_work). */
double histd__work_share(const histd_problem *p, const histd_kernel *k);

#ifdef __cplusplus
}
#endif
#endif
