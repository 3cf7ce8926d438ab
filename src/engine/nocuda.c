/*
 * nocuda.c -- the CUDA side's entry points for a build without CUDA: no
 * GPU kernels in the registry, no devices, and a sentence saying why.
 */
#include "engine.h"

const histd_kernel histd__cuda_kernels[1];
const size_t histd__cuda_kernel_count = 0;

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

int histd__cuda_prefetch(void *ctx, const histd_dataset *ds, char *msg, size_t msglen) {
  (void)ctx;
  (void)ds;
  (void)msg;
  (void)msglen;
  return 0;
}

int histd__cuda_auto_run(histd_worker *w, const histd_dataset *ds,
                         const histd_spec *spec, const histd_control *ctl,
                         histd_result *res, char *msg, size_t msglen) {
  (void)w; (void)ds; (void)spec; (void)ctl; (void)res;
  return histd_fail(msg, msglen, HISTD_ENODEV, "histd was built without CUDA");
}
