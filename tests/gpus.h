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

#endif
