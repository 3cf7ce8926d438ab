/* test_gpu_nocuda.c -- the GPU suite of a build without CUDA: it says why
 * it cannot run (exit 77, meson's "skipped"). */
#include "../check.h"
#include "histd/histd.h"

int main(void) {
  histd_device_info dev[1];
  int count = 0;
  char msg[256] = "";
  histd_devices(dev, 1, &count, msg, sizeof msg);
  if (count == 0)
    SKIP("no CUDA device: %s", msg);
  fprintf(stderr, "histd was built without CUDA, yet reports %d GPUs\n", count);
  return 1;
}
