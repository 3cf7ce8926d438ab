/*
 * count_sink.h -- where a kernel of the family counts its pairs' slots
 * (tiled-stats, stats_kernels.cu): 32-bit counters in shared memory,
 * flushed into the job's 64-bit counts in global memory at the end of a
 * launch.
 *
 * Why 32 bits: sm_80 and sm_90 have no 64-bit add in shared memory; a
 * 64-bit atomicAdd there is a compare-and-swap loop (with the float32
 * tables staged too, GS1 ran 9% faster without it: bench/RESULTS.md,
 * 2026-11-29). A 32-bit red.shared.add is one instruction.
 *
 * Three layouts (stats_params.shared_counts), the first whose bytes the
 * host finds room for:
 *   COUNTS_LANES  one column per lane (slot k, lane l at word 32 k + l): the
 *                 lanes of a warp never meet on a word or a bank, whatever
 *                 their slots; warps of the block share the columns.
 *   COUNTS_BLOCK  one column for the block (lanes on one slot serialise).
 *   COUNTS_GLOBAL no shared counters: 64-bit atomics in global memory.
 * A shared counter holds at most the block's pairs of one launch; the host
 * keeps that below 2^32 (stats_engine.c's run_tiles), so the column sums
 * at the flush are exact too.
 */
#ifndef HISTD_COUNT_SINK_H
#define HISTD_COUNT_SINK_H

#include <stddef.h>
#include <stdint.h>

enum { COUNTS_GLOBAL = 0, COUNTS_BLOCK = 1, COUNTS_LANES = 2 };

/* Shared-memory bytes of a layout for `slots` slots, rounded up to 8. */
#ifdef __CUDACC__
__host__ __device__
#endif
static inline size_t count_sink_bytes(int mode, uint32_t slots) {
  return mode == COUNTS_LANES ? (size_t)slots * 32 * 4
         : mode == COUNTS_BLOCK ? ((size_t)slots * 4 + 7) / 8 * 8
                                : 0;
}

#ifdef __CUDACC__ /* the device half */

/* x through a move the compiler cannot see into: a shared address made
 * once stays in one register instead of being rebuilt in a hot loop. */
__device__ __forceinline__ uint32_t opaque(uint32_t x) {
  uint32_t y;
  asm("mov.b32 %0, %1;" : "=r"(y) : "r"(x));
  return y;
}

struct count_sink {
  int mode;
  uint32_t at;     /* the shared address of this thread's counter of slot 0 */
  uint32_t stride; /* bytes from one slot's counter to the next */
  uint32_t *words; /* the shared counters (generic pointer) */
  unsigned long long *global;

  /* Every thread of the block: the counters at `mem` zeroed (the caller's
   * barrier follows). */
  __device__ void init(int m, void *mem, uint32_t slots, unsigned long long *counts) {
    mode = m, global = counts, words = (uint32_t *)mem;
    const uint32_t n = (uint32_t)(count_sink_bytes(m, slots) / 4);
    for (uint32_t k = threadIdx.x; k < n; k += blockDim.x)
      words[k] = 0;
    const uint32_t lane = threadIdx.x & 31;
    stride = opaque(m == COUNTS_LANES ? 128 : 4);
    at = opaque(m == COUNTS_GLOBAL ? 0
                                   : (uint32_t)__cvta_generic_to_shared(
                                         words + (m == COUNTS_LANES ? lane : 0)));
  }

  /* SHARED: the caller knows the mode is not COUNTS_GLOBAL */
  template <bool SHARED = false> __device__ __forceinline__ void add(uint32_t k) {
    if (SHARED || mode != COUNTS_GLOBAL)
      asm volatile("red.shared.add.u32 [%0], 1;" ::"r"(at + k * stride) : "memory");
    else
      atomicAdd(global + k, 1ull);
  }

  /* Every thread of the block, after a barrier: the block's counts into
   * the global ones. */
  __device__ void flush(uint32_t slots) {
    if (mode == COUNTS_GLOBAL)
      return;
    for (uint32_t k = threadIdx.x; k < slots; k += blockDim.x) {
      uint32_t sum = 0;
      if (mode == COUNTS_LANES)
        for (uint32_t l = 0; l < 32; l++)
          sum += words[k * 32 + ((l + k) & 31)]; /* (a diagonal: no bank twice) */
      else
        sum = words[k];
      if (sum != 0)
        atomicAdd(global + k, (unsigned long long)sum);
    }
  }
};
#endif /* __CUDACC__ */

#endif
