/*
 * registry.c -- the one table of kernels. The CLI and the service look
 * kernel names up here and nowhere else.
 *
 * Each row says what the kernel can compute beyond the plain histogram
 * (caps: periodic boxes, cross pairs, weights, explicit edges, within a
 * radius); the worker never hands a kernel a problem it cannot run, and
 * "auto" chooses among the able ones. The GPU rows are here whether or not
 * histd was built with CUDA: without it they run nothing, and say why. A
 * GPU row of the seeds' brute-force family also carries how it launches
 * (its family, where it counts, its diagonal tile, float64 only, a first
 * guess of its rate: gpu_launch.h), which kernels/gpu_engine.c plans from.
 *
 * "auto" resolves at run time, frame by frame: its row's run asks
 * choose.c what to run on this worker (the rules and their models live
 * there), runs that row, and records which ran and why
 * (histd_result.reason). A grid or a tiled-stats run that answers
 * HISTD_ETOOBIG (it does not fit the GPU) makes it choose again without
 * that rule.
 */
#include <stdio.h>
#include <string.h>

#include "engine.h"
#include "gpu_launch.h"

#define CPU_ALL                                                                               \
  (HISTD_CAN_PERIODIC | HISTD_CAN_CROSS | HISTD_CAN_WEIGHTS | HISTD_CAN_EDGES | HISTD_CAN_WITHIN | \
   HISTD_CAN_BINS2 | HISTD_CAN_RAVG)
#define GPU_CAPS 0u /* the plain histogram (the GPU issue widens this) */
/* the statistics of points (per point, pair lists): the grid's driver, or
 * brute force on the CPU's plain kernels (points.c) */
#define POINT_CAPS (HISTD_CAN_POINTS | HISTD_CAN_PAIRS)

static int auto_run(HISTD__RUN_ARGS);
static int grid_run(HISTD__RUN_ARGS);
static int dmtree_run(HISTD__RUN_ARGS);

/* How the brute-force GPU kernels launch (gpu_launch.h): family, where
 * they count, their diagonal tile, float64 only, a low guess of pairs per
 * ms for the first launch. */
static const histd__gpu_launch
    naive = {SDH_FAM_NAIVE, SDH_PREF_GLOBAL, SDH_DIAG_TRI, false, 2e6},
    privatized = {SDH_FAM_NAIVE, SDH_PREF_SINGLE, SDH_DIAG_TRI, false, 5e6},
    tiled = {SDH_FAM_CLASSIC, SDH_PREF_GLOBAL, SDH_DIAG_TRI, false, 5e6},
    tiled_privatized = {SDH_FAM_CLASSIC, SDH_PREF_SINGLE, SDH_DIAG_TRI, false, 2e7},
    tiled_privatized_f64 = {SDH_FAM_CLASSIC, SDH_PREF_SINGLE, SDH_DIAG_TRI, true, 1e7},
    balanced = {SDH_FAM_LINEAR, SDH_PREF_LANE, SDH_DIAG_CIRC, false, 5e7},
    multi_copy = {SDH_FAM_CLASSIC, SDH_PREF_WARP, SDH_DIAG_TRI, false, 2e7},
    register_shuffle = {SDH_FAM_SHUFFLE, SDH_PREF_LANE, SDH_DIAG_TRI, false, 2e7},
    circular = {SDH_FAM_CIRC, SDH_PREF_SINGLE, SDH_DIAG_CIRC, false, 2e7};

static const histd_kernel kernels[] = {
    {"auto", "the fastest exact kernel for the workload and the worker's device", HISTD_ENGINE_ANY,
     CPU_ALL | POINT_CAPS, auto_run, 0, NULL},
    {"grid",
     "cells of side r_max: each point meets only its neighbour cells' points; every "
     "statistic, exact; on the worker's GPU or the CPU",
     HISTD_ENGINE_ANY, CPU_ALL | POINT_CAPS, grid_run, 0, NULL},
    {"dm-tree",
     "density-map tree: pairs of octree cells whose every distance falls in one bin are "
     "counted at once, the rest split down to the points; exact, sub-quadratic where bins "
     "are wide for the points' density; every core, and on a GPU worker its GPU takes the "
     "leaf pairs of open, unweighted jobs",
     HISTD_ENGINE_ANY, CPU_ALL & ~(HISTD_CAN_BINS2 | HISTD_CAN_RAVG), dmtree_run, 0, NULL},
    {"cpu-reference", "the exactness contract, literally, on one CPU thread", HISTD_ENGINE_CPU,
     CPU_ALL | POINT_CAPS, histd__cpu_reference_run, 0, NULL},
    {"cpu", "multithreaded, cache-tiled, vectorised CPU engine; exact", HISTD_ENGINE_CPU,
     CPU_ALL | POINT_CAPS, histd__cpu_run, 0, NULL},
    {"naive", "GPU: one thread per point i, loops j > i, a global atomic per pair",
     HISTD_ENGINE_CUDA, GPU_CAPS, histd__cuda_run, 0, &naive},
    {"privatized", "GPU: naive with a per-block histogram in shared memory", HISTD_ENGINE_CUDA,
     GPU_CAPS, histd__cuda_run, 0, &privatized},
    {"tiled", "GPU: partner tiles staged in shared memory, anchor in registers; global atomics",
     HISTD_ENGINE_CUDA, GPU_CAPS, histd__cuda_run, 0, &tiled},
    /* (the plain A x B too, where "auto" hands it one: A's tiles anchor,
     * B's are the partners; named, the self histogram only) */
    {"tiled-privatized", "GPU: tiling plus a shared-memory histogram per block (Algorithm 3)",
     HISTD_ENGINE_CUDA, GPU_CAPS, histd__cuda_run, 0, &tiled_privatized},
    {"tiled-privatized-f64",
     "GPU: tiled-privatized computed entirely in float64 (Algorithm 3 as the reports ran it)",
     HISTD_ENGINE_CUDA, GPU_CAPS, histd__cuda_run, 0, &tiled_privatized_f64},
    {"balanced",
     "GPU: equal tile pairs per block and equal pairs per thread; lane-private histograms",
     HISTD_ENGINE_CUDA, GPU_CAPS, histd__cuda_run, 0, &balanced},
    {"multi-copy", "GPU: tiled-privatized with one shared histogram copy per warp",
     HISTD_ENGINE_CUDA, GPU_CAPS, histd__cuda_run, 0, &multi_copy},
    {"register-shuffle", "GPU: partner points in registers, passed between lanes by shuffles",
     HISTD_ENGINE_CUDA, GPU_CAPS, histd__cuda_run, 0, &register_shuffle},
    {"circular", "GPU: each point meets the next (N-1)/2 points circularly (depth N/2)",
     HISTD_ENGINE_CUDA, GPU_CAPS, histd__cuda_run, 0, &circular},
    {"tensor-core",
     "GPU: the squared distances of 256 x 256 pairs from matrix products on the tensor cores "
     "(3xTF32), pairs near a bucket edge redone in binary64; exact",
     HISTD_ENGINE_CUDA, GPU_CAPS, histd__cuda_tc_run, 256 /* TC_TILE */, NULL},
    {"tiled-stats",
     "GPU: every statistic (periodic boxes, A x B, weights, edges, within a radius), exact: "
     "pairs in float32 where their error bounds leave no doubt of the bin, the rest in "
     "binary64 by the contract itself; partner tiles in shared memory, a histogram per block",
     HISTD_ENGINE_CUDA, CPU_ALL, histd__cuda_stats_run, 0, NULL},
};

#define KERNEL_COUNT (sizeof kernels / sizeof kernels[0])

static int auto_run(HISTD__RUN_ARGS) {
  histd__choice c;
  unsigned skip = 0;
  int rc;
  for (;;) {
    histd__choose(w, p, ex, skip, &c);
    histd_exec cex = *ex;
    snprintf(cex.kernel, sizeof cex.kernel, "%s", c.kernel->name);
    if (c.kernel->block == 0) /* a row of one block size (tensor-core) keeps the job's,
                               * which its own fallback to balanced follows */
      cex.block_size = c.block;
    /* what ran, unless the run names another (tensor-core's fallback) */
    snprintf(res->kernel, sizeof res->kernel, "%s", c.kernel->name);
    rc = c.kernel->run(w, p, &cex, ctl, res, msg, msglen);
    if (rc != HISTD_ETOOBIG || c.retry == 0 || (skip & c.retry) != 0)
      break;
    skip |= c.retry; /* it did not fit: the next rule */
  }
  if (rc == 0)
    snprintf(res->reason, sizeof res->reason, "%s", c.reason);
  return rc;
}

static int grid_run(HISTD__RUN_ARGS) {
  if (w->device >= 0)
    return histd__cuda_grid_run(w, p, ex, ctl, res, msg, msglen);
  return histd__cpu_grid_run(w, p, ex, ctl, res, msg, msglen);
}

static int dmtree_run(HISTD__RUN_ARGS) {
  if (w->device >= 0)
    return histd__cuda_dmtree_run(w, p, ex, ctl, res, msg, msglen);
  return histd__dmtree_run(w, p, ex, ctl, res, msg, msglen);
}

size_t histd_kernel_count(void) { return KERNEL_COUNT; }

bool histd__kernel_is_auto(const histd_kernel *k) { return k == &kernels[0]; }

const histd_kernel *histd_kernel_at(size_t i) { return i < KERNEL_COUNT ? &kernels[i] : NULL; }

const histd_kernel *histd_kernel_find(const char *name) {
  if (name == NULL)
    return NULL;
  if (name[0] == '\0')
    name = "auto";
  for (size_t i = 0; i < KERNEL_COUNT; i++)
    if (strcmp(kernels[i].name, name) == 0)
      return &kernels[i];
  return NULL;
}

static const char *cap_phrase(unsigned cap) {
  switch (cap) {
  case HISTD_CAN_PERIODIC:
    return "periodic boxes";
  case HISTD_CAN_CROSS:
    return "cross pairs (A x B)";
  case HISTD_CAN_WEIGHTS:
    return "weights";
  case HISTD_CAN_EDGES:
    return "explicit or log bin edges";
  case HISTD_CAN_POINTS:
    return "per-point results (neighbour counts, nearest neighbours)";
  case HISTD_CAN_PAIRS:
    return "pair lists";
  case HISTD_CAN_BINS2:
    return "bins of two axes (rp_pi, s_mu)";
  case HISTD_CAN_RAVG:
    return "ravg (each bin's mean separation)";
  default:
    return "pair counts within a radius";
  }
}

bool histd_kernel_can(const histd_kernel *k, const histd_problem *p, char *msg, size_t msglen) {
  return histd_kernel_can_do(k, histd_problem_needs(p), msg, msglen);
}

bool histd_kernel_can_do(const histd_kernel *k, unsigned needs, char *msg, size_t msglen) {
  unsigned missing = needs & ~k->caps;
  if (missing == 0)
    return true;
  unsigned cap = missing & -missing; /* the first one missing */
  char able[256] = "";
  size_t len = 0;
  for (size_t i = 0; i < KERNEL_COUNT; i++)
    if ((needs & ~kernels[i].caps) == 0 && len < sizeof able)
      len += (size_t)snprintf(able + len, sizeof able - len, "%s%s", len ? ", " : "",
                              kernels[i].name);
  histd_fail(msg, msglen, HISTD_EINVAL, "kernel \"%s\" cannot compute %s; kernels that can: %s",
             k->name, cap_phrase(cap), able);
  return false;
}
