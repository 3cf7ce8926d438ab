/*
 * gpu_launch.h -- how a brute-force GPU kernel launches, for C and CUDA
 * alike: the facts a registry row carries (histd_kernel.gpu) and the enums
 * they are made of, which the device code (sdh_gpu.h, sdh_kernels.cu)
 * switches on. The registry (registry.c) is the one table of kernels; a
 * GPU row of the seeds' family points to its launch facts there, so that
 * the host side (kernels/gpu_engine.c) plans a launch from the row itself,
 * never from a second table joined by name.
 */
#ifndef HISTD_GPU_LAUNCH_H
#define HISTD_GPU_LAUNCH_H

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The kernel families: what one launch's "units" are (sdh_gpu.h). */
enum {
  SDH_FAM_NAIVE = 0,
  SDH_FAM_CLASSIC = 1,
  SDH_FAM_LINEAR = 2,
  SDH_FAM_SHUFFLE = 3,
  SDH_FAM_CIRC = 4
};
/* The tile a block meets itself in: j > i (triangle) or the next half
 * circularly (every thread does the same number of pairs). */
enum { SDH_DIAG_TRI = 0, SDH_DIAG_CIRC = 1 };
/* Where a kernel would rather count (the host picks the sink from it,
 * gpu_engine.c's make_params): global atomics, one shared histogram a
 * block, a copy a warp, a column a lane. */
enum { SDH_PREF_GLOBAL = 0, SDH_PREF_SINGLE = 1, SDH_PREF_WARP = 2, SDH_PREF_LANE = 3 };

typedef struct histd__gpu_launch {
  int family, pref, diag; /* SDH_FAM_*, SDH_PREF_*, SDH_DIAG_* */
  bool f64_only;          /* computes in binary64 throughout (no float32 path) */
  double est_rate;        /* a low guess of pairs per ms, for the first launch */
} histd__gpu_launch;

#ifdef __cplusplus
}
#endif
#endif
