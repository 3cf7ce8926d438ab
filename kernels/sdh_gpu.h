/*
 * sdh_gpu.h -- the interface between the host side of the CUDA engine
 * (gpu_engine.c, plain C) and the device code (sdh_kernels.cu). Nothing
 * outside kernels/ (and tests/gpu, bench/) includes it.
 *
 * One launch covers a range [u0, u1) of "units" of one kernel family:
 *   NAIVE    units are partner points j: thread i meets j in [max(i+1,u0), u1)
 *   CLASSIC  units are partner tiles J: block I meets J in [max(I,u0), u1)
 *   LINEAR   units are tile pairs (I <= J) in row-major order, split evenly
 *            over a persistent grid (also SHUFFLE, its register variant)
 *   CIRC     units are circular steps m: block I meets the B points that
 *            start m*B after its own, modulo n
 * so a long job is a sequence of short launches (progress, cancel), and a
 * LINEAR job's range can be split across GPUs.
 */
#ifndef HISTD_SDH_GPU_H
#define HISTD_SDH_GPU_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "gpu_launch.h" /* the families (SDH_FAM_*) and diagonals (SDH_DIAG_*) */

#ifdef __cplusplus
extern "C" {
#endif

enum { SDH_MODE_EXACT = 0, SDH_MODE_FAST = 1, SDH_MODE_F64 = 2 };
/* Where counts go: global 64-bit atomics, a shared-memory histogram with
 * `copies` copies (general layout), one column per lane (hist[row][lane]),
 * or (H16, for histograms too large for 32-bit counters; the CLASSIC and
 * LINEAR families) one copy of 16-bit counters, two to a word, that move
 * to the global counts in steps of 2^14 before they could wrap; rows from
 * `hcap` on are not counted at all (the host sets overflow = pairs - sum). */
enum { SDH_SINK_GLOBAL = 0, SDH_SINK_GEN = 1, SDH_SINK_LANE = 2, SDH_SINK_H16 = 3 };

#define SDH_QCAP 2048u  /* refine-queue entries per block (exact mode): the default */
#define SDH_QCAP_MAX 8192u /* ... and the most, for wide refine bands */
/* H16 sink: at most this many shared increments per block between two
 * barriers (a counter holds at most 2^14 at a barrier, and must stay under
 * 2^16 until the next one; sdh_kernels.cu, "16-bit counters"). */
#define SDH_H16_EPOCH 49151u
/* Static shared memory of every kernel (the queue counter in smem_setup();
 * ptxas -v reports "16 bytes smem"). The dynamic size plus this must not
 * exceed the device's sharedMemPerBlockOptin, or the launch fails. */
#define SDH_STATIC_SMEM 16u

typedef struct sdh_params {
  int mode, family, sink, diag;
  uint32_t n;     /* points */
  uint32_t block; /* threads per block = points per tile */
  uint32_t tiles; /* ceil(n / block) */
  uint32_t tile0; /* CLASSIC: block b anchors tile tile0 + b (a shard's rows; else 0) */
  uint32_t rows;  /* length of `counts`: histogram rows, folded on the host */
  /* shared sink: index = copy*copy_stride + row*row_stride */
  uint32_t copies, row_stride, copy_stride;
  int copy_by_warp; /* copy = warp % copies; else lane % copies */
  /* float32 path: code = bits(fmaf_rd(s, rsqrt(s), magic)) */
  float magic;
  uint32_t shift, mask, thresh, rowbase;
  /* float64 path and refinement */
  double width;
  uint32_t rowcap; /* float64 bucket b goes to row min(b, rowcap) */
  /* circular: h = (n-1)/2, even = n % 2 == 0 */
  uint32_t circ_h, circ_even;
  /* exact mode: partners between two drains of the refine queue; H16
   * sink (every mode): partners between two barriers, <= SDH_H16_EPOCH/block */
  uint32_t drain_every;
  uint32_t qcap; /* exact mode: refine-queue entries per block */
  uint32_t hcap; /* H16 sink: rows [0, hcap) are counted, later ones dropped */
  /* exact mode: 1 = branch-free groups of 32 pairs with one edge test per
   * group (few edge pairs); 0 = an edge test and branch per pair (many);
   * 2 = branch-free groups in which edge pairs are not counted but go to
   * the warp's own queue, which the warp redoes 32 at a time (many edge
   * pairs; the H16 sink of CLASSIC and LINEAR, full warps off the
   * diagonal tile) */
  uint32_t edge_groups;
  uint32_t wqcap; /* edge_groups 2: queue entries per warp */
  /* device data */
  const float4 *p32; /* centred, scaled float32 points (x, y, z, 0) */
  const double *x64, *y64, *z64; /* the points as given */
  unsigned long long *counts; /* rows */
  unsigned long long *refined;
  size_t smem; /* dynamic shared memory per block */
} sdh_params;

/* Shared-memory bytes the kernel needs for p (tile + queue + histogram). */
size_t sdh_smem_bytes(const sdh_params *p);

/* Blocks of p's kernel that fit on one multiprocessor (0 if none). */
int sdh_blocks_per_sm(const sdh_params *p, int *blocks, char *msg, size_t msglen);

/* Launches p's kernel over units [u0, u1) with `grid` blocks on stream s.
 * Returns 0 or HISTD_EDEVICE with CUDA's message. */
int sdh_launch(const sdh_params *p, uint64_t u0, uint64_t u1, uint32_t grid,
               cudaStream_t s, char *msg, size_t msglen);

/* p32[i] = float32((x[i] - c) / w) for each axis, computed in binary64
 * with one rounding to float32 at the end. */
int sdh_convert(const double *x, const double *y, const double *z, uint32_t n,
                double cx, double cy, double cz, double inv_w, float4 *p32,
                cudaStream_t s, char *msg, size_t msglen);

/* The engine's code for a CUDA error: HISTD_EGPULOST for the "sticky"
 * ones, after which every CUDA call of this process on that device fails
 * (CUDA's documentation: the process must be restarted), HISTD_ETOOBIG for
 * out of memory, else HISTD_EDEVICE. */
int sdh_error_code(cudaError_t e);

/* Clears a non-sticky error (the next job must not see it) and fails with
 * sdh_error_code(e) and "CUDA error in WHAT: CUDA's text". */
int sdh_cuda_fail(char *msg, size_t msglen, const char *what, cudaError_t e);

/* For host drivers with `int rc`, `msg`, `msglen` and an `out:` label
 * (stats_engine.c, grid_engine.c): a failed CUDA call sets rc by
 * sdh_cuda_fail and jumps to out. */
#define SDH_CK_OUT(call, what)                                                           \
  do {                                                                                   \
    cudaError_t e_ = (call);                                                             \
    if (e_ != cudaSuccess) {                                                             \
      rc = sdh_cuda_fail(msg, msglen, what, e_);                                         \
      goto out;                                                                          \
    }                                                                                    \
  } while (0)

/* Fault injection for the tests (HISTD_TEST_CUDA_FAULT): a kernel that
 * writes to an invalid address, so the next synchronisation on the device
 * fails with cudaErrorIllegalAddress, a sticky error. */
int sdh_inject_fault(cudaStream_t s, char *msg, size_t msglen);

/* *err = the largest relative error of rsqrtf (MUFU.RSQ) on the current
 * device over every positive normal float, measured against binary64, plus
 * that measurement's own error bound (2^-50). A few milliseconds. */
int sdh_rsqrt_error(double *err, char *msg, size_t msglen);

/* Registers and local-memory bytes of p's kernel (for reports). */
int sdh_kernel_attrs(const sdh_params *p, int *regs, int *local_bytes,
                     int *max_threads);

#ifdef __cplusplus
}
#endif
#endif
