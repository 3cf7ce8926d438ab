/*
 * grid_engine.c -- "grid" on the GPU (being written: the helper's branch
 * replaces this file).
 */
#include "engine.h"

int histd__cuda_grid_run(HISTD__RUN_ARGS) {
  (void)w; (void)p; (void)ex; (void)ctl; (void)res;
  return histd_fail(msg, msglen, HISTD_ENODEV, "the GPU grid is not built yet");
}
