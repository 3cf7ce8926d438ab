/*
 * gpus.h -- the GPU an engine test also runs its cases on.
 *
 * Tests such as test_points or test_bins2 run their cases on the CPU's
 * kernels, and where the machine has a GPU on the GPU's too; the gpu suite
 * runs them again with a variable of their own set (TEST_POINTS_GPU, ...),
 * and there a machine without a GPU is a skip, not a pass on the CPU alone.
 */
#ifndef HISTD_TEST_GPUS_H
#define HISTD_TEST_GPUS_H

#include <stdlib.h>

#include "check.h"
#include "histd/histd.h"

/* The machine's GPUs (0: none), the first one's facts in *info; where the
 * variable gpu_suite is set and there is none, exits 77 with why. */
static inline int test_gpus(histd_device_info *info, const char *gpu_suite) {
  int gpus = 0;
  char why[256] = "";
  if (histd_devices(info, 1, &gpus, why, sizeof why) != 0)
    gpus = 0;
  if (getenv(gpu_suite) != NULL && gpus == 0)
    SKIP("no CUDA device%s%s", why[0] ? ": " : "", why);
  return gpus;
}

/* A GPU job's window of memory where it streams in slabs. outcome(ctx,
 * mib) runs it with HISTD_GPU_MEM_LIMIT_MB = mib (holding it to the
 * definition) and says 0 refused, 1 whole, n >= 2 streamed in n slabs (2
 * where the count is not known). Where the window lies moves with every
 * change of layout, so it is found, not assumed: bisection (to 1/64 MiB,
 * from 64, CUDA's reserve alone: refused, to 192: whole) for r, the most
 * memory that refuses the job, and t, the least that runs it whole; the
 * limits between, at 1/8, 1/2 and 7/8 of the way, must stream. Returns
 * the most slabs of those runs. */
static inline unsigned test_slab_window(unsigned (*outcome)(void *ctx, double mib), void *ctx,
                                        const char *name) {
  double r = 64, t = 192;
  CHECK(outcome(ctx, r) == 0, "%s: runs in %.0f MiB", name, r);
  CHECK(outcome(ctx, t) == 1, "%s: is refused or streams in %.0f MiB", name, t);
  for (double a = r, b = t; b - a > 1.0 / 64; r = a) {
    const double mid = (a + b) / 2;
    *(outcome(ctx, mid) == 0 ? &a : &b) = mid;
  }
  for (double a = r, b = t; b - a > 1.0 / 64; t = b) {
    const double mid = (a + b) / 2;
    *(outcome(ctx, mid) == 1 ? &b : &a) = mid;
  }
  CHECK(t - r > 1.0 / 32, "%s: no limit streams it (refused below %.3f MiB, whole from %.3f)",
        name, r, t);
  static const double at[] = {0.125, 0.5, 0.875};
  unsigned most = 0;
  for (int k = 0; k < 3 && t - r > 1.0 / 32; k++) {
    const double mib = r + at[k] * (t - r);
    const unsigned m = outcome(ctx, mib);
    CHECK(m >= 2, "%s: %.3f MiB free, between refusal (%.3f) and a whole run (%.3f), did not "
          "stream (%u)", name, mib, r, t, m);
    most = m > most ? m : most;
  }
  return most;
}

#endif
