/*
 * registry.c -- the one table of kernels. The CLI and the service look
 * kernel names up here and nowhere else.
 *
 * The table is the CPU kernels below followed by the CUDA side's table
 * (kernels/, empty in a build without CUDA). "auto" resolves at run time:
 * on a GPU worker the CUDA side picks the fastest exact kernel for the job,
 * on a CPU worker it runs "cpu".
 */
#include <string.h>

#include "engine.h"

static int auto_run(histd_worker *w, const histd_dataset *ds,
                    const histd_spec *spec, const histd_control *ctl,
                    histd_result *res, char *msg, size_t msglen) {
  if (w->device >= 0)
    return histd__cuda_auto_run(w, ds, spec, ctl, res, msg, msglen);
  int rc = histd__cpu_run(w, ds, spec, ctl, res, msg, msglen);
  if (rc == 0)
    strcpy(res->kernel, "cpu");
  return rc;
}

static const histd_kernel cpu_kernels[] = {
    {"auto", "the fastest exact kernel for the workload and the worker's device",
     HISTD_ENGINE_CPU, auto_run},
    {"cpu-reference", "the exactness contract, literally, on one CPU thread",
     HISTD_ENGINE_CPU, histd__cpu_reference_run},
    {"cpu", "multithreaded, cache-tiled, vectorised CPU engine; exact",
     HISTD_ENGINE_CPU, histd__cpu_run},
};

#define CPU_KERNEL_COUNT (sizeof cpu_kernels / sizeof cpu_kernels[0])

size_t histd_kernel_count(void) { return CPU_KERNEL_COUNT + histd__cuda_kernel_count; }

const histd_kernel *histd_kernel_at(size_t i) {
  if (i < CPU_KERNEL_COUNT)
    return &cpu_kernels[i];
  i -= CPU_KERNEL_COUNT;
  return i < histd__cuda_kernel_count ? &histd__cuda_kernels[i] : NULL;
}

const histd_kernel *histd_kernel_find(const char *name) {
  if (name == NULL)
    return NULL;
  if (name[0] == '\0')
    name = "auto";
  for (size_t i = 0; i < histd_kernel_count(); i++)
    if (strcmp(histd_kernel_at(i)->name, name) == 0)
      return histd_kernel_at(i);
  return NULL;
}
