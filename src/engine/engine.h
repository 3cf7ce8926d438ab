/*
 * engine.h -- private declarations shared by the engine's files and the
 * CUDA launchers in kernels/. Nothing outside src/engine and kernels/
 * includes it.
 */
#ifndef HISTD_ENGINE_H
#define HISTD_ENGINE_H

#include "histd/histd.h"

#ifdef __cplusplus
extern "C" {
#endif

struct histd_worker {
  int device; /* -1: the CPU engine */
  void *gpu;  /* the CUDA side's per-device context; NULL on the CPU */
};

/* The CPU kernels (src/engine/cpu_*.c). */
int histd__cpu_reference_run(histd_worker *w, const histd_dataset *ds,
                             const histd_spec *spec, const histd_control *ctl,
                             histd_result *res, char *msg, size_t msglen);
int histd__cpu_run(histd_worker *w, const histd_dataset *ds,
                   const histd_spec *spec, const histd_control *ctl,
                   histd_result *res, char *msg, size_t msglen);

/* Helpers for backends: NULL-safe wrappers around a histd_control. */
bool histd__cancelled(const histd_control *ctl);
void histd__progress(const histd_control *ctl, double fraction);

/*
 * The CUDA side (kernels/), or the stubs in src/engine/nocuda.c when histd
 * is built without CUDA. The kernel table is appended to the registry.
 */
extern const histd_kernel histd__cuda_kernels[];
extern const size_t histd__cuda_kernel_count;

int histd__cuda_devices(histd_device_info *out, int max, int *count,
                        char *msg, size_t msglen);
int histd__cuda_context_create(void **ctx, int device, char *msg,
                               size_t msglen);
void histd__cuda_context_destroy(void *ctx);
int histd__cuda_prefetch(void *ctx, const histd_dataset *ds, char *msg,
                         size_t msglen);
/* "auto" on a GPU worker: runs the fastest exact kernel for the job. */
int histd__cuda_auto_run(histd_worker *w, const histd_dataset *ds,
                         const histd_spec *spec, const histd_control *ctl,
                         histd_result *res, char *msg, size_t msglen);

#ifdef __cplusplus
}
#endif
#endif
