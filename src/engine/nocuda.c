/*
 * nocuda.c -- the CUDA side's entry points for a build without CUDA: no
 * devices, and GPU kernels (still in the registry) that say why they
 * cannot run.
 */
#include "engine.h"

int histd__cuda_devices(histd_device_info *out, int max, int *count,
                        char *msg, size_t msglen) {
  (void)out;
  (void)max;
  *count = 0;
  histd_fail(msg, msglen, 0, "histd was built without CUDA");
  return 0;
}

int histd__cuda_context_create(void **ctx, int device, char *msg, size_t msglen) {
  (void)ctx;
  return histd_fail(msg, msglen, HISTD_ENODEV,
                    "GPU %d requested, but histd was built without CUDA", device);
}

void histd__cuda_context_destroy(void *ctx) { (void)ctx; }

void histd__cuda_unseal(void *ctx) { (void)ctx; }

int histd__cuda_prefetch(void *ctx, const histd_dataset *ds, bool sealed, char *msg,
                         size_t msglen) {
  (void)ctx;
  (void)ds;
  (void)sealed;
  (void)msg;
  (void)msglen;
  return 0;
}

int histd__cuda_run(HISTD__RUN_ARGS) {
  (void)w; (void)p; (void)ctl; (void)res;
  return histd_fail(msg, msglen, HISTD_ENODEV,
                    "kernel \"%s\" needs a GPU, and histd was built without CUDA", ex->kernel);
}

bool histd__cuda_tc_plan(const histd_worker *w, const histd_problem *p, const histd_exec *ex,
                         uint32_t *k) {
  (void)w, (void)p, (void)ex, (void)k;
  return false;
}

int histd__cuda_grid_run(HISTD__RUN_ARGS) {
  return histd__cuda_run(w, p, ex, ctl, res, msg, msglen);
}

int histd__cuda_points_run(histd_worker *w, const histd_problem *p, const histd_exec *ex,
                           const histd_control *ctl, uint64_t f, histd_result *res, char *msg,
                           size_t msglen) {
  (void)w, (void)p, (void)ex, (void)ctl, (void)f, (void)res;
  return histd_fail(msg, msglen, HISTD_ENODEV, "histd was built without CUDA");
}

int histd__cuda_dmtree_run(HISTD__RUN_ARGS) {
  return histd__cuda_run(w, p, ex, ctl, res, msg, msglen);
}

int histd__cuda_tc_run(HISTD__RUN_ARGS) {
  return histd__cuda_run(w, p, ex, ctl, res, msg, msglen);
}

int histd__cuda_stats_run(HISTD__RUN_ARGS) {
  return histd__cuda_run(w, p, ex, ctl, res, msg, msglen);
}

bool histd__cuda_tiles_fit(const histd_worker *w, const histd_kernel *k, const histd_problem *pf,
                           const histd_problem *ps, const histd_shard *sh, const histd_exec *ex) {
  (void)w, (void)k, (void)pf, (void)ps, (void)sh, (void)ex;
  return false;
}

int histd__cuda_tiles_run(histd_worker *w, const histd_problem *pf, const histd_exec *ex,
                          const histd_shard *sh, const histd_control *ctl, histd_result *res,
                          char *msg, size_t msglen) {
  (void)sh;
  return histd__cuda_run(w, pf, ex, ctl, res, msg, msglen);
}
