/*
 * launch_util.cuh -- the host steps every kernel family's launcher takes
 * before a launch (stats_kernels.cu, grid_kernels.cu): the dynamic
 * shared-memory limit raised where a block needs more than the default
 * 48 KiB, and the occupancy query.
 */
#ifndef HISTD_LAUNCH_UTIL_CUH
#define HISTD_LAUNCH_UTIL_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "sdh_gpu.h"

/* Lets kernel f have `smem` bytes of dynamic shared memory per block. */
template <typename F> static cudaError_t kernel_smem_prepare(F f, size_t smem) {
  if (smem > 48 * 1024)
    return cudaFuncSetAttribute((const void *)f, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)smem);
  return cudaSuccess;
}

/* Blocks of f (`block` threads, `smem` bytes) that fit one multiprocessor. */
template <typename F>
static int kernel_blocks_per_sm(F f, uint32_t block, size_t smem, int *blocks, char *msg,
                                size_t msglen) {
  cudaError_t e = kernel_smem_prepare(f, smem);
  if (e == cudaSuccess)
    e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, (const void *)f, (int)block, smem);
  return e == cudaSuccess ? 0 : sdh_cuda_fail(msg, msglen, "the occupancy query", e);
}

#endif
