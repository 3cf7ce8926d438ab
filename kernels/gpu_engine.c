/*
 * gpu_engine.c -- the CUDA side of the engine, in C: devices, per-GPU
 * contexts (a copy stream, a compute stream, device buffers, the last
 * datasets' points), the plan of a job (precision path, histogram rows,
 * where counts go), the sequence of short launches that runs it (progress,
 * cancel), the split of one job over several GPUs, and the plain A x B
 * and a shard's tiles on the CLASSIC kernels. What each brute-force kernel
 * is (its family, where it counts) comes from its registry row
 * (histd_kernel.gpu, gpu_launch.h); which of them "auto" runs, from
 * choose.c.
 *
 * The device code and its launchers are in sdh_kernels.cu (sdh_gpu.h).
 * Every CUDA call is checked; a failure becomes HISTD_EDEVICE carrying
 * cudaGetErrorString's text, never an abort; a "sticky" one (illegal
 * address, hardware fault) becomes HISTD_EGPULOST, as no later call of
 * this process on that GPU can succeed.
 *
 * Environment knobs (for the benchmark and tests, not for users):
 *   HISTD_GPU_CHUNK_MS   target milliseconds per launch (default 100;
 *                        0 = as few launches as the 32-bit counters allow)
 *   HISTD_GPU_COPIES     force the number of shared histogram copies of
 *                        the lane-privatised kernels (1..32)
 *   HISTD_GPU_MEM_LIMIT_MB  pretend the GPU has this much free memory
 *   HISTD_GPU_SINK16     0: never the 16-bit shared sink; 1: whenever the
 *                        kernel family takes it (tests), not only where
 *                        32-bit counters do not fit
 *   HISTD_GPU_BAND_MAX   the widest refine band (share of pairs) the
 *                        float32 path may take before float64 runs
 *                        instead (default 1/8; 1/16 before 2026-11-23)
 *   HISTD_GPU_RSQRT_ERR  rsqrtf's relative error for the float32 bound,
 *                        instead of the one measured on the device (the
 *                        benchmark's baseline: 2^-22, the Guide's 2 ulp)
 *   HISTD_TC_QUEUE       group | pair: tensor-core's queue of edge work,
 *                        instead of trying both (tc_engine.c)
 *   HISTD_SLAB_TRACE     when set, a grid job streamed in slabs prints
 *                        where its time went (grid_slabs.c) to stderr
 *   HISTD_TEST_CUDA_FAULT   when set, every job first runs a kernel that
 *                        writes to an invalid address (a sticky error)
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "engine.h"
#include "gpu_engine.h"
#include "sdh_gpu.h"

/* ---- errors ------------------------------------------------------------- */

#define CK(call, what)                                                          \
  do {                                                                          \
    cudaError_t e_ = (call);                                                    \
    if (e_ != cudaSuccess)                                                      \
      return cuda_error(msg, msglen, what, ctx->device, e_);                    \
  } while (0)

static int cuda_error(char *msg, size_t msglen, const char *what, int device, cudaError_t e) {
  /* a failed runtime call also sets the thread's last error; left there, a
   * non-sticky one (out of memory, a bad argument) would be returned by the
   * next launch's cudaGetLastError() and fail the worker's next job */
  (void)cudaGetLastError();
  int code = sdh_error_code(e);
  if (code == HISTD_ETOOBIG)
    return histd_fail(msg, msglen, code, "GPU %d: out of memory in %s (%s)", device, what,
                      cudaGetErrorString(e));
  return histd_fail(msg, msglen, code, "CUDA error on GPU %d in %s: %s%s", device, what,
                    cudaGetErrorString(e),
                    code == HISTD_EGPULOST ? " (this process can no longer use that GPU)" : "");
}

double histd__cuda_env(const char *name, double dflt) { return histd__env_number(name, dflt); }

/* ---- kernels ------------------------------------------------------------ */

/* The registry's row of a brute-force GPU kernel (one with launch facts),
 * or NULL. */
static const histd_kernel *gpu_row(const char *name) {
  const histd_kernel *k = histd_kernel_find(name);
  return k != NULL && k->gpu != NULL ? k : NULL;
}

/* ---- devices ------------------------------------------------------------ */

static int why_no_device(cudaError_t e, char *msg, size_t msglen) {
  switch (e) {
  case cudaErrorNoDevice:
    return histd_fail(msg, msglen, 0, "no CUDA device: the driver reports no GPU");
  case cudaErrorInsufficientDriver:
    return histd_fail(msg, msglen, 0,
                      "no CUDA device: the NVIDIA driver is missing or older than this "
                      "build's CUDA runtime (%d.%d)",
                      CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10);
  default:
    return histd_fail(msg, msglen, 0, "no CUDA device: %s", cudaGetErrorString(e));
  }
}

int histd__cuda_devices(histd_device_info *out, int max, int *count, char *msg,
                        size_t msglen) {
  int n = 0;
  *count = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return why_no_device(e, msg, msglen);
  }
  if (n == 0)
    return why_no_device(cudaErrorNoDevice, msg, msglen);
  int prev = 0;
  cudaGetDevice(&prev);
  for (int d = 0; d < n && d < max; d++) {
    struct cudaDeviceProp pr;
    if (cudaGetDeviceProperties(&pr, d) != cudaSuccess) {
      cudaGetLastError();
      continue;
    }
    histd_device_info *o = &out[*count];
    memset(o, 0, sizeof *o);
    o->index = d;
    snprintf(o->name, sizeof o->name, "%.120s", pr.name);
    o->cc_major = pr.major;
    o->cc_minor = pr.minor;
    o->multiprocessors = pr.multiProcessorCount;
    o->memory_total = pr.totalGlobalMem;
    size_t fr = 0, tot = 0;
    if (cudaSetDevice(d) == cudaSuccess && cudaMemGetInfo(&fr, &tot) == cudaSuccess)
      o->memory_free = fr;
    cudaGetLastError();
    (*count)++;
  }
  cudaSetDevice(prev);
  if (*count == 0)
    return why_no_device(cudaErrorNoDevice, msg, msglen);
  return 0;
}

/* ---- contexts ------------------------------------------------------------ */

typedef struct gpu_slot {
  double *host; /* pinned: x[0..n) y[0..n) z[0..n) */
  double *dev;
  size_t cap, n;
  const histd_dataset *ds;
  bool valid, fresh; /* fresh: its copy not yet charged to a job */
  bool sealed;       /* a sealed prefetch's: its run trusts ds without comparing */
  cudaEvent_t ready, t0, t1;
} gpu_slot;

struct gpu_ctx {
  int device;
  char name[HISTD_DEVICE_NAME_MAX];
  int sms, cc_major, cc_minor;
  size_t smem_optin;
  cudaStream_t copy, compute;
  gpu_slot slot[2];
  int cur; /* the slot the last run used */
  int pf;  /* the slot the last prefetch loaded, until a run uses it; -1 none */
  int last_sink; /* SDH_SINK_* of the last part run here (tests); -1 none */
  double rsq_err; /* rsqrtf's relative error on this device (rsqrt_error) */
  float4 *d32;
  size_t cap32;
  unsigned long long *dcounts, *drefined;
  size_t capcounts;
  unsigned long long *hcounts; /* pinned */
  size_t caphcounts;
  void *scratch; /* histd__cuda_scratch's kept buffer */
  size_t capscratch;
  /* histd__cuda_copy_in's pinned staging ring (allocated with the context:
   * pinning 64 MB takes tens of ms, which a job should not pay) */
#define STAGE_BYTES ((size_t)32 << 20)
  char *stage[2];
  cudaEvent_t staged[2];
#define NEV 4
  cudaEvent_t ev_start[NEV], ev_end[NEV], k0, k1, d0, d1;
  /* the contexts of a job's other parts (histd__cuda_parts), part i's in
   * peer[i], kept for the next job in parts (a context's staging ring and
   * the points' slots cost tens of ms to make): each holds the last points
   * it ran, as this context does, until the worker ends */
#define MAX_PARTS 64
  struct gpu_ctx *peer[MAX_PARTS];
};

static void slot_free(gpu_slot *s) {
  if (s->host)
    cudaFreeHost(s->host);
  if (s->dev)
    cudaFree(s->dev);
  s->host = NULL;
  s->dev = NULL;
  s->cap = 0;
  s->valid = false;
}

void histd__cuda_context_destroy(void *p) {
  gpu_ctx *ctx = p;
  if (ctx == NULL)
    return;
  for (int i = 0; i < MAX_PARTS; i++)
    histd__cuda_context_destroy(ctx->peer[i]);
  cudaSetDevice(ctx->device);
  if (ctx->compute)
    cudaStreamSynchronize(ctx->compute);
  if (ctx->copy)
    cudaStreamSynchronize(ctx->copy);
  for (int i = 0; i < 2; i++) {
    slot_free(&ctx->slot[i]);
    if (ctx->slot[i].ready) {
      cudaEventDestroy(ctx->slot[i].ready);
      cudaEventDestroy(ctx->slot[i].t0);
      cudaEventDestroy(ctx->slot[i].t1);
    }
  }
  if (ctx->d32)
    cudaFree(ctx->d32);
  if (ctx->dcounts)
    cudaFree(ctx->dcounts);
  if (ctx->drefined)
    cudaFree(ctx->drefined);
  if (ctx->hcounts)
    cudaFreeHost(ctx->hcounts);
  if (ctx->scratch)
    cudaFree(ctx->scratch);
  for (int i = 0; i < 2; i++) {
    if (ctx->stage[i])
      cudaFreeHost(ctx->stage[i]);
    if (ctx->staged[i])
      cudaEventDestroy(ctx->staged[i]);
  }
  cudaEvent_t *evs[] = {ctx->ev_start, ctx->ev_end};
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < NEV; i++)
      if (evs[k][i])
        cudaEventDestroy(evs[k][i]);
  cudaEvent_t one[] = {ctx->k0, ctx->k1, ctx->d0, ctx->d1};
  for (int i = 0; i < 4; i++)
    if (one[i])
      cudaEventDestroy(one[i]);
  if (ctx->copy)
    cudaStreamDestroy(ctx->copy);
  if (ctx->compute)
    cudaStreamDestroy(ctx->compute);
  cudaGetLastError();
  free(ctx);
}

/* rsqrtf's relative error on `device` (the float32 bound's, plan_f32),
 * measured once per device and process by sdh_rsqrt_error. */
static int rsqrt_error(int device, double *err, char *msg, size_t msglen) {
  static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  static double known[64];
  int rc = 0;
  pthread_mutex_lock(&lock);
  if (device < 0 || device >= 64 || known[device] == 0) {
    rc = sdh_rsqrt_error(err, msg, msglen);
    if (rc == 0 && device >= 0 && device < 64)
      known[device] = *err;
  } else {
    *err = known[device];
  }
  pthread_mutex_unlock(&lock);
  return rc;
}

static int context_init(gpu_ctx *ctx, char *msg, size_t msglen) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();
    why_no_device(e, msg, msglen);
    return HISTD_ENODEV;
  }
  if (ctx->device >= n)
    return histd_fail(msg, msglen, HISTD_ENODEV, "GPU %d requested, but there are %d GPUs",
                      ctx->device, n);
  CK(cudaSetDevice(ctx->device), "cudaSetDevice");
  /* wait for the GPU without spinning a core; ignored once the device is
   * initialised (another worker on the same GPU got there first) */
  if (cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync) != cudaSuccess)
    cudaGetLastError();
  struct cudaDeviceProp pr;
  CK(cudaGetDeviceProperties(&pr, ctx->device), "cudaGetDeviceProperties");
  snprintf(ctx->name, sizeof ctx->name, "%.100s (GPU %d)", pr.name, ctx->device);
  ctx->sms = pr.multiProcessorCount;
  ctx->cc_major = pr.major;
  ctx->cc_minor = pr.minor;
  ctx->smem_optin = pr.sharedMemPerBlockOptin;
  if (pr.major < 8)
    return histd_fail(msg, msglen, HISTD_ENODEV,
                      "GPU %d (%s) has compute capability %d.%d; histd's kernels need 8.0 or newer",
                      ctx->device, pr.name, pr.major, pr.minor);
  CK(cudaStreamCreateWithFlags(&ctx->copy, cudaStreamNonBlocking), "cudaStreamCreate");
  CK(cudaStreamCreateWithFlags(&ctx->compute, cudaStreamNonBlocking), "cudaStreamCreate");
  for (int i = 0; i < 2; i++) {
    CK(cudaEventCreateWithFlags(&ctx->slot[i].ready, cudaEventDisableTiming), "cudaEventCreate");
    CK(cudaEventCreate(&ctx->slot[i].t0), "cudaEventCreate");
    CK(cudaEventCreate(&ctx->slot[i].t1), "cudaEventCreate");
  }
  for (int i = 0; i < NEV; i++) {
    CK(cudaEventCreate(&ctx->ev_start[i]), "cudaEventCreate");
    CK(cudaEventCreate(&ctx->ev_end[i]), "cudaEventCreate");
  }
  CK(cudaEventCreate(&ctx->k0), "cudaEventCreate");
  CK(cudaEventCreate(&ctx->k1), "cudaEventCreate");
  CK(cudaEventCreate(&ctx->d0), "cudaEventCreate");
  CK(cudaEventCreate(&ctx->d1), "cudaEventCreate");
  CK(cudaMalloc((void **)&ctx->drefined, sizeof(unsigned long long)), "cudaMalloc");
  for (int i = 0; i < 2; i++) {
    CK(cudaMallocHost((void **)&ctx->stage[i], STAGE_BYTES), "cudaMallocHost (staging)");
    CK(cudaEventCreateWithFlags(&ctx->staged[i], cudaEventDisableTiming), "cudaEventCreate");
  }
  return rsqrt_error(ctx->device, &ctx->rsq_err, msg, msglen);
}

int histd__cuda_context_create(void **out, int device, char *msg, size_t msglen) {
  gpu_ctx *ctx = calloc(1, sizeof *ctx);
  if (ctx == NULL)
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for a GPU context");
  ctx->device = device;
  ctx->pf = -1;
  ctx->last_sink = -1;
  int rc = context_init(ctx, msg, msglen);
  if (rc != 0) {
    histd__cuda_context_destroy(ctx);
    return rc;
  }
  *out = ctx;
  return 0;
}

const char *histd__cuda_context_name(const gpu_ctx *ctx) { return ctx->name; }

void histd__cuda_context_info(const gpu_ctx *ctx, int *device, void **stream, int *sms,
                              size_t *smem_optin) {
  *device = ctx->device;
  *stream = ctx->compute;
  *sms = ctx->sms;
  *smem_optin = ctx->smem_optin;
}

/* ---- device memory -------------------------------------------------------- */

#define MEM_RESERVE ((size_t)64 << 20) /* left free for CUDA's own needs */

/* *fr = the current device's free bytes, HISTD_GPU_MEM_LIMIT_MB honoured. */
static int free_bytes(gpu_ctx *ctx, size_t *fr, char *msg, size_t msglen) {
  size_t tot = 0;
  CK(cudaMemGetInfo(fr, &tot), "cudaMemGetInfo");
  double lim = histd__cuda_env("HISTD_GPU_MEM_LIMIT_MB", -1);
  if (lim >= 0 && (double)*fr > lim * 1048576.0)
    *fr = (size_t)(lim * 1048576.0);
  return 0;
}

static int mem_check(gpu_ctx *ctx, size_t bytes, const char *what, char *msg, size_t msglen) {
  size_t fr = 0;
  int rc = free_bytes(ctx, &fr, msg, msglen);
  if (rc != 0)
    return rc;
  if (bytes + MEM_RESERVE > fr)
    return histd_fail(msg, msglen, HISTD_ETOOBIG,
                      "the job is too large for GPU %d (%s): %s needs %.1f MiB, and %.1f MiB "
                      "of its memory is free",
                      ctx->device, ctx->name, what, (double)bytes / 1048576.0,
                      (double)fr / 1048576.0);
  return 0;
}

int histd__cuda_copy_in(gpu_ctx *ctx, void *dev, const void *host, size_t bytes, void *stream,
                        char *msg, size_t msglen) {
  cudaStream_t s = stream;
  struct cudaPointerAttributes at;
  if (cudaPointerGetAttributes(&at, host) == cudaSuccess && at.type == cudaMemoryTypeHost) {
    /* pinned already (a registered slab buffer): straight from it */
    CK(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync");
    return 0;
  }
  cudaGetLastError();
  /* chunk k goes through buffer k % 2 once that buffer's last copy is done,
   * so the host's copy of one chunk overlaps the bus's of the other */
  for (size_t off = 0, k = 0; off < bytes; off += STAGE_BYTES, k++) {
    const size_t len = bytes - off < STAGE_BYTES ? bytes - off : STAGE_BYTES;
    char *buf = ctx->stage[k % 2];
    CK(cudaEventSynchronize(ctx->staged[k % 2]), "cudaEventSynchronize (staging)");
    memcpy(buf, (const char *)host + off, len);
    CK(cudaMemcpyAsync((char *)dev + off, buf, len, cudaMemcpyHostToDevice, s),
       "cudaMemcpyAsync (staging)");
    CK(cudaEventRecord(ctx->staged[k % 2], s), "cudaEventRecord (staging)");
  }
  return 0;
}

int histd__cuda_scratch(gpu_ctx *ctx, size_t bytes, const char *what, void **out, bool *owned,
                        char *msg, size_t msglen) {
  *out = NULL;
  *owned = bytes > HISTD_GPU_SCRATCH_KEEP;
  if (!*owned && bytes <= ctx->capscratch) {
    *out = ctx->scratch;
    return 0;
  }
  if (!*owned && ctx->scratch != NULL) { /* too small: the larger one replaces it */
    CK(cudaFree(ctx->scratch), "cudaFree");
    ctx->scratch = NULL;
    ctx->capscratch = 0;
  }
  int rc = histd__cuda_mem_check(ctx, bytes, what, msg, msglen);
  if (rc != 0)
    return rc;
  void *p = NULL;
  cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);
  if (e != cudaSuccess)
    return sdh_cuda_fail(msg, msglen, "cudaMalloc", e);
  if (!*owned) {
    ctx->scratch = p;
    ctx->capscratch = bytes;
  }
  *out = p;
  return 0;
}

size_t histd__cuda_mem_room(gpu_ctx *ctx) {
  size_t fr = 0;
  if (cudaSetDevice(ctx->device) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  if (free_bytes(ctx, &fr, NULL, 0) != 0)
    return 0;
  for (int i = 0; i < 2; i++)
    if (ctx->slot[i].dev != NULL)
      fr += 3 * ctx->slot[i].cap * sizeof(double);
  return fr > MEM_RESERVE ? fr - MEM_RESERVE : 0;
}

void histd__cuda_drop_slots(gpu_ctx *ctx) {
  if (cudaSetDevice(ctx->device) != cudaSuccess) {
    cudaGetLastError();
    return;
  }
  for (int i = 0; i < 2; i++) {
    cudaEventSynchronize(ctx->slot[i].ready);
    slot_free(&ctx->slot[i]);
    ctx->slot[i].sealed = false;
  }
  ctx->pf = -1;
  if (ctx->scratch != NULL) { /* the kept scratch buffer too: room for a large run */
    cudaFree(ctx->scratch);
    ctx->scratch = NULL;
    ctx->capscratch = 0;
  }
}

/* evict: a run may drop the other slot's points (a cache) to make room; a
 * prefetch may not (they are the points of the job about to run). */
static int ensure_slot(gpu_ctx *ctx, gpu_slot *s, size_t n, bool evict, char *msg,
                       size_t msglen) {
  if (s->cap >= n && s->host != NULL)
    return 0;
  CK(cudaEventSynchronize(s->ready), "cudaEventSynchronize");
  slot_free(s);
  size_t bytes = 3 * (n ? n : 1) * sizeof(double);
  /* the float32 copy only where the context has none large enough yet */
  size_t need = bytes + (ctx->cap32 >= n ? 0 : 16 * n);
  const char *what = "the points (binary64 and float32 copies)";
  int rc = mem_check(ctx, need, what, msg, msglen);
  gpu_slot *o = &ctx->slot[s == &ctx->slot[0] ? 1 : 0];
  if (rc == HISTD_ETOOBIG && evict && o->dev != NULL) {
    CK(cudaEventSynchronize(o->ready), "cudaEventSynchronize");
    slot_free(o);
    if (ctx->pf == (int)(o - ctx->slot))
      ctx->pf = -1;
    rc = mem_check(ctx, need, what, msg, msglen);
  }
  if (rc != 0)
    return rc;
  CK(cudaMallocHost((void **)&s->host, bytes), "cudaMallocHost");
  CK(cudaMalloc((void **)&s->dev, bytes), "cudaMalloc (points)");
  s->cap = n ? n : 1;
  return 0;
}

static bool slot_holds(const gpu_slot *s, const histd_dataset *ds) {
  size_t n = ds->n;
  return s->valid && s->ds == ds && s->n == n &&
         memcmp(s->host, ds->x, n * sizeof(double)) == 0 &&
         memcmp(s->host + n, ds->y, n * sizeof(double)) == 0 &&
         memcmp(s->host + 2 * n, ds->z, n * sizeof(double)) == 0;
}

/* Starts copying ds into slot s on the copy stream. */
static int slot_load(gpu_ctx *ctx, gpu_slot *s, const histd_dataset *ds, bool evict,
                     char *msg, size_t msglen) {
  size_t n = ds->n;
  CK(cudaEventSynchronize(s->ready), "cudaEventSynchronize"); /* its last copy */
  int rc = ensure_slot(ctx, s, n, evict, msg, msglen);
  if (rc != 0)
    return rc;
  s->valid = false;
  memcpy(s->host, ds->x, n * sizeof(double));
  memcpy(s->host + n, ds->y, n * sizeof(double));
  memcpy(s->host + 2 * n, ds->z, n * sizeof(double));
  CK(cudaEventRecord(s->t0, ctx->copy), "cudaEventRecord");
  if (n)
    CK(cudaMemcpyAsync(s->dev, s->host, 3 * n * sizeof(double), cudaMemcpyHostToDevice,
                       ctx->copy),
       "cudaMemcpyAsync (points)");
  CK(cudaEventRecord(s->t1, ctx->copy), "cudaEventRecord");
  CK(cudaEventRecord(s->ready, ctx->copy), "cudaEventRecord");
  s->ds = ds;
  s->n = n;
  s->valid = true;
  s->fresh = true;
  s->sealed = false;
  return 0;
}

int histd__cuda_prefetch(void *p, const histd_dataset *ds, bool sealed, char *msg,
                         size_t msglen) {
  gpu_ctx *ctx = p;
  if (ctx == NULL || ds == NULL)
    return 0;
  CK(cudaSetDevice(ctx->device), "cudaSetDevice");
  for (int i = 0; i < 2; i++)
    if (slot_holds(&ctx->slot[i], ds)) {
      ctx->pf = i;
      return 0;
    }
  /* The service prefetches job k+1's points just before it runs job k,
   * whose points job k-1's prefetch loaded: the slot of the previous
   * prefetch is the one about to be used, so load into the other (the last
   * run's, whose kernels have finished). */
  int target = ctx->pf >= 0 ? 1 - ctx->pf : 1 - ctx->cur;
  int rc = slot_load(ctx, &ctx->slot[target], ds, false, msg, msglen);
  if (rc == 0) {
    ctx->pf = target;
    ctx->slot[target].sealed = sealed;
  }
  return rc;
}

void histd__cuda_unseal(void *p) {
  gpu_ctx *ctx = p;
  if (ctx != NULL)
    ctx->slot[0].sealed = ctx->slot[1].sealed = false;
}

int histd__cuda_holds(const histd_worker *w, const histd_dataset *ds) {
  const gpu_ctx *ctx = w->gpu;
  if (ctx == NULL)
    return 0;
  return slot_holds(&ctx->slot[0], ds) || slot_holds(&ctx->slot[1], ds);
}

double histd__cuda_rsqrt_err(const histd_worker *w) {
  const gpu_ctx *ctx = w->gpu;
  return ctx == NULL ? -1 : ctx->rsq_err;
}

int histd__cuda_last_sink(const histd_worker *w) {
  const gpu_ctx *ctx = w->gpu;
  return ctx == NULL ? -1 : ctx->last_sink;
}

/* The slot holding ds after this call (copy queued on the copy stream). */
static int dataset_on_device(gpu_ctx *ctx, const histd_dataset *ds, gpu_slot **out,
                             double *transfer_ms, char *msg, size_t msglen) {
  int use = -1;
  for (int i = 0; i < 2; i++) { /* a sealed prefetch of ds is trusted as it is */
    const gpu_slot *s = &ctx->slot[i];
    if (s->sealed && s->valid && s->ds == ds && s->n == ds->n)
      use = i;
  }
  for (int i = 0; i < 2 && use < 0; i++)
    if (slot_holds(&ctx->slot[i], ds))
      use = i;
  if (use < 0) {
    /* not the slot the last prefetch loaded (a later job's points); else
     * keep the last job's points and use the other slot */
    use = ctx->pf >= 0 ? 1 - ctx->pf : 1 - ctx->cur;
    int rc = slot_load(ctx, &ctx->slot[use], ds, true, msg, msglen);
    if (rc != 0)
      return rc;
  }
  if (use == ctx->pf)
    ctx->pf = -1; /* the prefetch served its job */
  gpu_slot *s = &ctx->slot[use];
  s->sealed = false; /* its promise ends with this run */
  ctx->cur = use;
  CK(cudaStreamWaitEvent(ctx->compute, s->ready, 0), "cudaStreamWaitEvent");
  *transfer_ms = 0;
  if (s->fresh) {
    float ms = 0;
    CK(cudaEventSynchronize(s->t1), "cudaEventSynchronize");
    CK(cudaEventElapsedTime(&ms, s->t0, s->t1), "cudaEventElapsedTime");
    *transfer_ms = ms;
    s->fresh = false;
  }
  *out = s;
  return 0;
}

int histd__cuda_points(gpu_ctx *ctx, const histd_dataset *ds, const double **dev,
                       double *transfer_ms, char *msg, size_t msglen) {
  gpu_slot *s = NULL;
  int rc = dataset_on_device(ctx, ds, &s, transfer_ms, msg, msglen);
  if (rc == 0)
    *dev = s->dev;
  return rc;
}

int histd__cuda_mem_check(gpu_ctx *ctx, size_t bytes, const char *what, char *msg,
                          size_t msglen) {
  return mem_check(ctx, bytes, what, msg, msglen);
}

/* ---- the plan of a job ---------------------------------------------------- */

typedef struct job_plan {
  const histd_kernel *k; /* a row with launch facts (k->gpu) */
  int mode; /* SDH_MODE_*: EXACT may become F64 when float32 cannot serve */
  uint32_t block, buckets, rows;
  double centre[3], inv_w, width;
  float magic;
  uint32_t shift, mask, thresh, rowbase, rowcap;
  uint64_t pairs; /* the pairs the run counts (n(n-1)/2, or a part's) */
  /* CLASSIC family on part of the tiles (cross_run: A x B; a shard's
   * block pair): `anchors` tiles from anchor0 anchor, meeting partner tiles
   * [ua, ub); anchors 0: every tile, every unit */
  uint32_t anchor0, anchors;
  uint64_t ua, ub;
} job_plan;

/*
 * The float32 path's parameters (see the bound in sdh_kernels.cu). Returns
 * false when float32 cannot serve this job exactly at a useful rate.
 */
static bool plan_f32(const histd_dataset *ds, double w, bool exact, double rsq_err,
                     job_plan *jp) {
  const double u = ldexp(1.0, -24), up = 1 + ldexp(1.0, -40);
  double rho2 = 0;
  for (int a = 0; a < 3; a++) {
    double c = ds->min[a] + (ds->max[a] - ds->min[a]) / 2;
    if (!(c >= ds->min[a] && c <= ds->max[a]))
      c = ds->min[a];
    jp->centre[a] = c;
    double R = fmax(fabs(ds->max[a] - c), fabs(c - ds->min[a])) * up;
    double rho = R / w * up * (u + ldexp(1.0, -50)) + ldexp(1.0, -140);
    rho2 += rho * rho;
  }
  jp->inv_w = 1.0 / w;
  double dmax = histd_dataset_diagonal(ds) / w * up;
  if (!isfinite(dmax) || dmax > 1e6 || !isfinite(jp->inv_w))
    return false;
  double eps_r = histd__cuda_env("HISTD_GPU_RSQRT_ERR", -1);
  if (eps_r < 0)
    eps_r = rsq_err;
  const double rel = (2.5 * u + eps_r) * (1 + ldexp(1.0, -16)) + ldexp(1.0, -49);
  double E = rel * dmax + 2.1 * sqrt(rho2) * up + ldexp(1.0, -40);
  if (!exact)
    E = 0;
  int k = 0;
  while (k < 22 && (dmax + 2 * E + 2) * ldexp(1.0, k + 1) < ldexp(1.0, 23))
    k++;
  double G = ceil(E * ldexp(1.0, k));
  if (exact && G < 1)
    G = 1;
  /* a band wider than 1/8 (B70k: 7/64, refined through a larger queue):
   * float64 throughout is cheaper */
  double band_max = histd__cuda_env("HISTD_GPU_BAND_MAX", 0.125);
  if (k < 6 || (2 * G + 1) > band_max * ldexp(1.0, k))
    return false;
  jp->shift = (uint32_t)k;
  jp->mask = (1u << k) - 1;
  jp->thresh = exact ? (uint32_t)(2 * G + 1) : 0;
  float base = ldexpf(1.0f, 23 - k);
  uint32_t bits;
  memcpy(&bits, &base, sizeof bits);
  jp->rowbase = bits >> k;
  jp->magic = (float)(ldexp(1.0, 23 - k) + G * ldexp(1.0, -k)); /* exact */
  double bhi = floor(dmax + 3 * (G + 1) * ldexp(1.0, -k)) + 1;
  jp->rows = (uint32_t)bhi + 1;
  jp->rowcap = jp->rows - 1;
  return true;
}

static void plan_f64(const histd_dataset *ds, double w, uint32_t buckets, job_plan *jp) {
  double bhi = floor(histd_dataset_diagonal(ds) / w * (1 + ldexp(1.0, -40))) + 1;
  jp->rows = (isfinite(bhi) && bhi + 1 < (double)buckets) ? (uint32_t)bhi + 2 : buckets + 1;
  jp->rowcap = jp->rows - 1;
  jp->rowbase = 0;
  jp->shift = 0;
  jp->mask = 0;
  jp->thresh = 0;
  jp->magic = 0;
}

static int make_plan(const gpu_ctx *ctx, const histd_kernel *k, const histd_dataset *ds,
                     double width, histd_precision precision, uint32_t buckets, uint32_t block,
                     job_plan *jp) {
  memset(jp, 0, sizeof *jp);
  jp->k = k;
  jp->block = block;
  jp->buckets = buckets;
  jp->width = width;
  bool exact = precision == HISTD_PRECISION_EXACT;
  jp->mode = exact ? SDH_MODE_EXACT : SDH_MODE_FAST;
  if (k->gpu->f64_only || !plan_f32(ds, width, exact, ctx->rsq_err, jp)) {
    jp->mode = SDH_MODE_F64;
    plan_f64(ds, width, buckets, jp);
  }
  jp->pairs = ds->n < 2 ? 0 : (uint64_t)ds->n * (ds->n - 1) / 2;
  return 0;
}

/* Kernel parameters for one device: where counts go, shared memory. */
static int make_params(const gpu_ctx *ctx, const job_plan *jp, sdh_params *p, char *msg,
                       size_t msglen) {
  memset(p, 0, sizeof *p);
  p->mode = jp->mode;
  p->family = jp->k->gpu->family;
  p->diag = jp->k->gpu->diag;
  p->block = jp->block;
  p->rows = jp->rows;
  p->magic = jp->magic;
  p->shift = jp->shift;
  p->mask = jp->mask;
  p->thresh = jp->thresh;
  p->rowbase = jp->rowbase;
  p->rowcap = jp->rowcap;
  p->width = jp->width;
  p->copies = 1;
  p->row_stride = 1;
  p->copy_stride = 0;
  /* room for the histogram: all the device offers, less what the tile and
   * queue take; lane-private copies only while two blocks fit an SM */
  p->sink = SDH_SINK_GLOBAL;
  /* the refine queue: twice the entries expected between two drains at the
   * closest spacing (32 partners), at least SDH_QCAP */
  double band = jp->mode == SDH_MODE_EXACT ? (double)jp->thresh / (double)(jp->mask + 1) : 0;
  double want = 2.0 * jp->block * 32 * band;
  p->qcap = SDH_QCAP;
  if (want > SDH_QCAP)
    p->qcap = want >= SDH_QCAP_MAX ? SDH_QCAP_MAX : ((uint32_t)want + 255) / 256 * 256;
  size_t optin = ctx->smem_optin > SDH_STATIC_SMEM ? ctx->smem_optin - SDH_STATIC_SMEM : 0;
  size_t other = sdh_smem_bytes(p);
  size_t room = optin > other ? optin - other : 0;
  size_t pair_room = 110 * 1024 > other ? 110 * 1024 - other : 0;
  size_t rowb = (size_t)jp->rows * 4;
  int pref = jp->k->gpu->pref;
  if (pref == SDH_PREF_LANE) {
    int force = (int)histd__cuda_env("HISTD_GPU_COPIES", 0);
    uint32_t c = 32;
    if (force >= 1 && force <= 32)
      c = (uint32_t)force;
    else
      while (c > 1 && rowb * c > pair_room)
        c /= 2;
    if (c == 32 && rowb * 32 <= room) {
      p->sink = SDH_SINK_LANE;
      p->copies = 32;
      p->row_stride = 32;
      p->copy_stride = 1;
    } else if (rowb * c <= room) {
      p->sink = SDH_SINK_GEN;
      p->copies = c;
      p->row_stride = c;
      p->copy_stride = 1;
    }
  } else if (pref == SDH_PREF_WARP) {
    uint32_t stride = jp->rows | 1; /* odd: copies start in different banks */
    uint32_t c = jp->block / 32;
    while (c > 1 && (size_t)stride * 4 * c > room)
      c--;
    if ((size_t)stride * 4 * c <= room) {
      p->sink = SDH_SINK_GEN;
      p->copies = c;
      p->row_stride = 1;
      p->copy_stride = stride;
      p->copy_by_warp = 1;
    }
  } else if (pref == SDH_PREF_SINGLE) {
    if (rowb <= room)
      p->sink = SDH_SINK_GEN;
  }
  /* 16-bit counters, one copy, for the tile families (their loops have the
   * barriers the counters need): where 32-bit counters do not fit (B70k),
   * or always with HISTD_GPU_SINK16=1. Rows from min(rows, buckets) on are
   * overflow and get no counter. rowbase is even (two rows to a word). */
  int s16 = (int)histd__cuda_env("HISTD_GPU_SINK16", -1);
  uint32_t cap16 = jp->rows < jp->buckets ? jp->rows : jp->buckets;
  if (pref != SDH_PREF_GLOBAL && s16 != 0 && (p->sink == SDH_SINK_GLOBAL || s16 == 1) &&
      (p->family == SDH_FAM_CLASSIC || p->family == SDH_FAM_LINEAR) && jp->rowbase % 2 == 0 &&
      ((size_t)cap16 + 1) / 2 * 4 <= room) {
    p->sink = SDH_SINK_H16;
    p->copies = 1;
    p->row_stride = 1;
    p->copy_stride = 0;
    p->copy_by_warp = 0;
    p->hcap = cap16;
  }
  /* drains of the refine queue: expected entries per drain <= qcap/2 */
  double every = band > 0 ? (p->qcap / 2.0) / (jp->block * band) : jp->block;
  every = fmax(32, fmin(every, jp->block));
  /* H16: at most SDH_H16_EPOCH shared increments between two barriers */
  if (p->sink == SDH_SINK_H16)
    every = fmin(every, fmax(32, (double)(SDH_H16_EPOCH / jp->block)));
  p->drain_every = (uint32_t)every / 32 * 32;
  /* groups of 32 pairs with one edge test each win while edge pairs are
   * rare: W1/W2/W4 (band 1.5e-4) gain 25-30%, W3 (band 5e-3) lost 8% */
  p->edge_groups = band < 1e-3;
  /* many edge pairs on the 16-bit sink (B70k: 7/64 of the pairs): groups
   * whose edge pairs go to per-warp queues (sdh_kernels.cu, meet_range_wq),
   * redone by full warps while other warps count; the block's queue (the
   * diagonal tiles' edge pairs) goes back to its default size to make room.
   * HISTD_GPU_EDGE_MODE=0|1|2 forces a mode (tests; 2 on the 16-bit sink
   * only: the other sinks' kernels are built without it). */
  int emode = (int)histd__cuda_env("HISTD_GPU_EDGE_MODE", -1);
  p->wqcap = 0;
  if (jp->mode == SDH_MODE_EXACT && emode >= 0 && emode <= 1)
    p->edge_groups = (uint32_t)emode;
  if (jp->mode == SDH_MODE_EXACT && p->sink == SDH_SINK_H16 &&
      (emode == 2 || (emode < 0 && band >= 1e-3))) {
    sdh_params t = *p;
    t.qcap = SDH_QCAP;
    t.edge_groups = 0;
    size_t used = sdh_smem_bytes(&t), warps = jp->block / 32;
    /* twice a group's expected entries, plus the < 32 left from before */
    double want = 64 + 2.0 * 32 * 32 * band;
    size_t cap = want >= 256 ? 256 : ((size_t)want + 31) / 32 * 32;
    size_t fit = optin > used ? (optin - used) / (8 * warps) / 32 * 32 : 0;
    if (fit < cap)
      cap = fit;
    if (cap >= 64) {
      p->edge_groups = 2;
      p->qcap = SDH_QCAP;
      p->wqcap = (uint32_t)cap;
    }
  }
  p->smem = sdh_smem_bytes(p);
  if (p->smem > optin)
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "block size %u needs %zu bytes of shared memory; GPU %d offers %zu",
                      p->block, p->smem, ctx->device, optin);
  return 0;
}

/* ---- launches over unit ranges ------------------------------------------- */

static uint64_t units_total(const sdh_params *p) {
  uint64_t T = p->tiles, n = p->n, B = p->block;
  switch (p->family) {
  case SDH_FAM_NAIVE:
    return n;
  case SDH_FAM_CLASSIC:
    return T;
  case SDH_FAM_CIRC:
    return (n / 2 + B - 1) / B + 1;
  default:
    return T * (T + 1) / 2;
  }
}

/* Pairs (roughly) in units [a, b). */
static double units_pairs(const sdh_params *p, uint64_t a, uint64_t b) {
  double B2 = (double)p->block * p->block, da = (double)a, db = (double)b;
  switch (p->family) {
  case SDH_FAM_NAIVE:
    return (db * (db - 1) - da * (da - 1)) / 2;
  case SDH_FAM_CLASSIC:
    return (db * (db + 1) - da * (da + 1)) / 2 * B2;
  case SDH_FAM_CIRC:
    return (db - da) * p->tiles * B2;
  default:
    return (db - da) * B2;
  }
}

/* The end of a launch starting at unit a with about `target` pairs, kept
 * under 2^31 pairs per block (32-bit shared counters). */
static uint64_t units_next(const sdh_params *p, uint64_t a, uint64_t U, double target,
                           uint32_t G) {
  double B = p->block, B2 = B * B, da = (double)a;
  double lim = 2147483648.0;
  double d;
  switch (p->family) {
  case SDH_FAM_NAIVE:
    d = ceil(sqrt(da * da + 2 * target)) - da;
    d = fmin(d, lim / B);
    break;
  case SDH_FAM_CLASSIC:
    d = ceil(sqrt(da * da + 2 * target / B2)) - da;
    d = fmin(d, lim / B2 - 1);
    break;
  case SDH_FAM_CIRC:
    d = floor(target / (p->tiles * B2));
    d = fmin(d, lim / B2 - 1);
    break;
  default:
    d = floor(target / B2);
    d = fmin(d, (double)G * (lim / B2 - 1));
    break;
  }
  if (!(d >= 1))
    d = 1;
  uint64_t b = (double)(U - a) <= d ? U : a + (uint64_t)d;
  return b;
}

static uint32_t units_grid(const sdh_params *p, uint64_t a, uint64_t b, uint32_t G) {
  (void)a;
  switch (p->family) {
  case SDH_FAM_NAIVE: {
    uint64_t m = b < p->n ? b : p->n;
    return (uint32_t)((m + p->block - 1) / p->block);
  }
  case SDH_FAM_CLASSIC:
    return (uint32_t)(b < p->tiles ? b : p->tiles);
  case SDH_FAM_CIRC:
    return p->tiles;
  default:
    return (uint32_t)((b - a) < G ? (b - a) : G);
  }
}

/* Runs units [ua, ub) (ub = 0: all) of the job on one GPU. */
static int part_run_streams(gpu_ctx *ctx, const histd_dataset *ds, const job_plan *jp, uint64_t ua,
                    uint64_t ub, part_ctl *pc, part_out *out, char *msg, size_t msglen) {
  CK(cudaSetDevice(ctx->device), "cudaSetDevice");
  /* launches are checked with cudaGetLastError(): start from a clean slate,
   * whatever failed earlier on this thread (a sticky error stays sticky) */
  (void)cudaGetLastError();
  snprintf(out->device, sizeof out->device, "%s", ctx->name);
  sdh_params p;
  int rc = make_params(ctx, jp, &p, msg, msglen);
  if (rc == 0 && getenv("HISTD_TEST_CUDA_FAULT") != NULL) {
    rc = sdh_inject_fault(ctx->compute, msg, msglen);
    if (rc == 0)
      CK(cudaStreamSynchronize(ctx->compute), "the fault injection");
  }
  if (rc != 0)
    return rc;
  out->dropped = p.sink == SDH_SINK_H16 && p.hcap < jp->rows;
  ctx->last_sink = p.sink;
  size_t n = ds->n;
  if (n > 0x7fffffffu)
    return histd_fail(msg, msglen, HISTD_ETOOBIG,
                      "%zu points: the GPU kernels take at most 2^31-1 points", n);
  p.n = (uint32_t)n;
  p.tiles = (uint32_t)((n + jp->block - 1) / jp->block);
  p.tile0 = jp->anchor0;
  p.circ_h = (uint32_t)(n > 0 ? (n - 1) / 2 : 0);
  p.circ_even = n % 2 == 0;
  /* memory: the counts, plus (in ensure_slot) the points */
  size_t cbytes = (size_t)jp->rows * sizeof(unsigned long long);
  if (ctx->capcounts < jp->rows) {
    if (ctx->dcounts)
      cudaFree(ctx->dcounts);
    if (ctx->hcounts)
      cudaFreeHost(ctx->hcounts);
    ctx->dcounts = NULL;
    ctx->hcounts = NULL;
    ctx->capcounts = 0;
    rc = mem_check(ctx, cbytes, "the histogram", msg, msglen);
    if (rc != 0)
      return rc;
    CK(cudaMalloc((void **)&ctx->dcounts, cbytes), "cudaMalloc (histogram)");
    CK(cudaMallocHost((void **)&ctx->hcounts, cbytes), "cudaMallocHost (histogram)");
    ctx->capcounts = jp->rows;
  }
  gpu_slot *slot = NULL;
  double tms = 0;
  rc = dataset_on_device(ctx, ds, &slot, &tms, msg, msglen);
  if (rc != 0)
    return rc;
  out->transfer_ms += tms;
  if (jp->mode != SDH_MODE_F64 && ctx->cap32 < n) {
    if (ctx->d32)
      cudaFree(ctx->d32);
    ctx->d32 = NULL;
    ctx->cap32 = 0;
    rc = mem_check(ctx, n * sizeof(float4), "the float32 points", msg, msglen);
    if (rc != 0)
      return rc;
    CK(cudaMalloc((void **)&ctx->d32, n * sizeof(float4)), "cudaMalloc (float32 points)");
    ctx->cap32 = n;
  }
  p.x64 = slot->dev;
  p.y64 = slot->dev + n;
  p.z64 = slot->dev + 2 * n;
  p.p32 = ctx->d32;
  p.counts = ctx->dcounts;
  p.refined = ctx->drefined;

  CK(cudaMemsetAsync(ctx->dcounts, 0, cbytes, ctx->compute), "cudaMemsetAsync");
  CK(cudaMemsetAsync(ctx->drefined, 0, sizeof(unsigned long long), ctx->compute),
     "cudaMemsetAsync");
  CK(cudaEventRecord(ctx->k0, ctx->compute), "cudaEventRecord");
  if (jp->mode != SDH_MODE_F64) {
    rc = sdh_convert(p.x64, p.y64, p.z64, p.n, jp->centre[0], jp->centre[1], jp->centre[2],
                     jp->inv_w, ctx->d32, ctx->compute, msg, msglen);
    if (rc != 0)
      return rc;
  }

  uint64_t U = n < 2 ? 0 : units_total(&p);
  if (ub == 0 || ub > U)
    ub = U;
  uint32_t G = 1;
  if (p.family == SDH_FAM_LINEAR || p.family == SDH_FAM_SHUFFLE) {
    int per = 0;
    rc = sdh_blocks_per_sm(&p, &per, msg, msglen);
    if (rc != 0)
      return rc;
    if (per < 1)
      return histd_fail(msg, msglen, HISTD_EINVAL,
                        "block size %u with %zu bytes of shared memory does not fit GPU %d",
                        p.block, p.smem, ctx->device);
    G = (uint32_t)(per * ctx->sms);
  }
  double target_ms = histd__cuda_env("HISTD_GPU_CHUNK_MS", 100);
  double rate = jp->k->gpu->est_rate * (jp->mode == SDH_MODE_F64 ? 0.3 : 1); /* pairs/ms */
  double part_pairs = ua < ub ? units_pairs(&p, ua, ub) : 0;
  double done_pairs = 0;
  uint64_t a = ua;
  int head = 0, tail = 0; /* launches in flight: ev index tail..head-1 */
  double inflight_pairs[NEV] = {0};
  double last_target = rate * (target_ms > 0 ? target_ms : 100);
  bool cancelled = false;
  while (a < ub || tail < head) {
    while (!cancelled && a < ub && head - tail < 2) {
      if (histd__part_stopped(pc)) {
        cancelled = true;
        break;
      }
      double target = target_ms > 0 ? fmin(rate * target_ms, last_target * 4) : 1e30;
      if (head == 0 && target_ms > 0)
        target = fmin(target, part_pairs / 4);
      last_target = target;
      uint64_t b = units_next(&p, a, ub, target, G);
      uint32_t grid = units_grid(&p, a, b, G);
      if (jp->anchors != 0 && grid > jp->anchors)
        grid = jp->anchors;
      int e = head % NEV;
      CK(cudaEventRecord(ctx->ev_start[e], ctx->compute), "cudaEventRecord");
      rc = sdh_launch(&p, a, b, grid, ctx->compute, msg, msglen);
      if (rc != 0)
        return rc;
      CK(cudaEventRecord(ctx->ev_end[e], ctx->compute), "cudaEventRecord");
      inflight_pairs[e] = units_pairs(&p, a, b);
      head++;
      a = b;
    }
    if (tail == head)
      break;
    int e = tail % NEV;
    CK(cudaEventSynchronize(ctx->ev_end[e]), "a kernel (cudaEventSynchronize)");
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, ctx->ev_start[e], ctx->ev_end[e]), "cudaEventElapsedTime");
    if (ms > 0.05 && inflight_pairs[e] > 0)
      rate = inflight_pairs[e] / ms;
    done_pairs += inflight_pairs[e];
    tail++;
    if (!cancelled) /* a cancelled job's progress stops where it was */
      histd__part_progress(pc, part_pairs > 0 ? fmin(done_pairs / part_pairs, 1.0) : 1.0);
    /* a cancel seen while launches remain stops the job, even if the
     * last launch is already queued */
    if (!cancelled && (a < ub || tail < head) && histd__part_stopped(pc))
      cancelled = true;
  }
  if (cancelled) {
    CK(cudaStreamSynchronize(ctx->compute), "cudaStreamSynchronize");
    return histd_fail(msg, msglen, HISTD_ECANCELED, "cancelled");
  }
  CK(cudaEventRecord(ctx->k1, ctx->compute), "cudaEventRecord");
  CK(cudaEventRecord(ctx->d0, ctx->compute), "cudaEventRecord");
  CK(cudaMemcpyAsync(ctx->hcounts, ctx->dcounts, cbytes, cudaMemcpyDeviceToHost, ctx->compute),
     "cudaMemcpyAsync (histogram)");
  unsigned long long refined = 0;
  CK(cudaMemcpyAsync(&refined, ctx->drefined, sizeof refined, cudaMemcpyDeviceToHost,
                     ctx->compute),
     "cudaMemcpyAsync (refined)");
  CK(cudaEventRecord(ctx->d1, ctx->compute), "cudaEventRecord");
  CK(cudaStreamSynchronize(ctx->compute), "the last kernel (cudaStreamSynchronize)");
  float kms = 0, dms = 0;
  CK(cudaEventElapsedTime(&kms, ctx->k0, ctx->k1), "cudaEventElapsedTime");
  CK(cudaEventElapsedTime(&dms, ctx->d0, ctx->d1), "cudaEventElapsedTime");
  out->kernel_ms = kms;
  out->transfer_ms += dms;
  out->refined = refined;
  memcpy(out->rows, ctx->hcounts, cbytes);
  return 0;
}

static int part_run(gpu_ctx *ctx, const histd_dataset *ds, const job_plan *jp, uint64_t ua,
                    uint64_t ub, part_ctl *pc, part_out *out, char *msg, size_t msglen) {
  int rc = part_run_streams(ctx, ds, jp, ua, ub, pc, out, msg, msglen);
  if (rc != 0) {
    /* a failure can leave launches queued on the compute stream and a copy
     * on the copy stream: let them finish, so that the next job's copy into
     * a slot does not overwrite points a kernel of this one still reads */
    cudaStreamSynchronize(ctx->compute);
    cudaStreamSynchronize(ctx->copy);
    (void)cudaGetLastError();
  }
  return rc;
}

/* ---- one job, on one or several GPUs --------------------------------------- */

/* The unit where part i of nd starts, so that parts hold equal pairs:
 * pairs grow with the square of the unit for NAIVE and CLASSIC. */
static uint64_t split_point(const sdh_params *p, uint64_t U, int i, int nd) {
  if (i <= 0)
    return 0;
  if (i >= nd)
    return U;
  if (p->family == SDH_FAM_NAIVE || p->family == SDH_FAM_CLASSIC)
    return (uint64_t)llround((double)U * sqrt((double)i / nd));
  return U * (uint64_t)i / (uint64_t)nd;
}

void histd__cuda_fold_rows(uint32_t nrows, const uint64_t *rows, histd_result *res) {
  for (uint32_t r = 0; r < nrows; r++) {
    if (r < res->bins.count)
      res->counts[r] += rows[r];
    else
      res->overflow += rows[r];
  }
}

/* A part that did not count its overflow rows (H16): every pair of the
 * run not in a bucket is overflow, overflow = jp->pairs - sum(counts). */
static void overflow_by_difference(const job_plan *jp, histd_result *res) {
  uint64_t sum = 0;
  for (uint32_t b = 0; b < res->bins.count; b++)
    sum += res->counts[b];
  res->overflow = jp->pairs - sum;
}

/* What ran: kernel k in blocks of `block` under plan jp (a zeroed plan, no
 * run, is exact). */
static void ran_kernel(histd_result *res, const histd_kernel *k, uint32_t block,
                       const job_plan *jp) {
  snprintf(res->kernel, sizeof res->kernel, "%s", k->name);
  res->block_size = block;
  res->threads = 0;
  res->exact = jp->mode != SDH_MODE_FAST;
}

/* 0, or HISTD_EINVAL for a block size the kernels cannot take. */
static int check_block(uint32_t block, char *msg, size_t msglen) {
  if (block < HISTD_MIN_BLOCK_SIZE || block > HISTD_MAX_BLOCK_SIZE || block % 32 != 0)
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "block_size must be a multiple of 32 from %u to %u, got %u",
                      HISTD_MIN_BLOCK_SIZE, HISTD_MAX_BLOCK_SIZE, block);
  return 0;
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* (gpu_engine.h) */
int histd__cuda_job_split(const gpu_ctx *ctx, const histd_exec *ex, bool splittable,
                          double pairs, int dev[64]) {
  int nd = histd__job_devices(ctx->device, ex->devices, dev, 64);
  if (nd == 0)
    return 0;
  if (!splittable || pairs < histd__cuda_env("HISTD_GPU_SPLIT_MIN_PAIRS", 2e10))
    nd = 1;
  if (histd__cuda_env("HISTD_GPU_FAKE_SPLIT", 0) > 1 && splittable) {
    /* tests: split over the same GPU, as if it were several */
    nd = (int)histd__cuda_env("HISTD_GPU_FAKE_SPLIT", 0);
    if (nd > 8)
      nd = 8;
    for (int i = 0; i < nd; i++)
      dev[i] = ctx->device;
  }
  return nd;
}

struct part_ctl {
  const histd_control *ctl; /* a part alone, else NULL */
  atomic_ullong *done; /* several: done fractions * 1e9, summed */
  atomic_bool *stop;
  double weight; /* this part's share of the whole job */
  double reported; /* the fraction it has reported */
};

void histd__part_progress(part_ctl *pc, double frac) {
  if (pc->ctl != NULL)
    histd__progress(pc->ctl, frac);
  if (pc->done != NULL) {
    const unsigned long long add = (unsigned long long)((frac - pc->reported) * pc->weight * 1e9);
    atomic_fetch_add(pc->done, add);
    pc->reported += (double)add / (pc->weight * 1e9);
  }
}

bool histd__part_stopped(const part_ctl *pc) {
  return (pc->ctl != NULL && histd__cancelled(pc->ctl)) ||
         (pc->stop != NULL && atomic_load(pc->stop));
}

typedef struct part_thread {
  pthread_t tid;
  gpu_ctx *ctx;
  bool own; /* ctx is a peer (kept or made) of the job's context */
  int device;
  histd__part_fn run;
  const void *job;
  uint64_t ua, ub;
  bool empty; /* one of several with no units: not run */
  part_ctl pc;
  part_out out;
  int rc;
  char msg[256];
  atomic_bool finished;
} part_thread;

static void *part_main(void *arg) {
  part_thread *t = arg;
  if (t->ctx == NULL) {
    void *c = NULL;
    t->rc = histd__cuda_context_create(&c, t->device, t->msg, sizeof t->msg);
    t->ctx = c;
  }
  if (t->rc == 0)
    t->rc = t->run(t->ctx, t->job, t->ua, t->ub, &t->pc, &t->out, t->msg, sizeof t->msg);
  if (t->rc != 0 && t->pc.stop)
    atomic_store(t->pc.stop, true);
  atomic_store(&t->finished, true);
  return NULL;
}

/* (gpu_engine.h) */
int histd__cuda_parts(gpu_ctx *ctx, const int *dev, int nd, const uint64_t *cut, uint32_t nrows,
                      histd__part_fn run, const void *job, const histd_control *ctl,
                      histd_result *res, bool *dropped, char *msg, size_t msglen) {
  uint64_t *rows = calloc((size_t)nrows * (size_t)nd, sizeof *rows);
  part_thread *t = calloc((size_t)nd, sizeof *t);
  if (rows == NULL || t == NULL) {
    free(rows);
    free(t);
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %d GPUs' %u rows", nd,
                      nrows);
  }
  atomic_ullong done;
  atomic_bool stop;
  atomic_init(&done, 0);
  atomic_init(&stop, false);
  int rc = 0, started = 0;
  for (int i = 0; i < nd; i++) {
    if (i == 0 && dev[0] == ctx->device) {
      t[i].ctx = ctx;
    } else { /* a peer: the one kept for part i, if it is on the same GPU */
      if (ctx->peer[i] != NULL && ctx->peer[i]->device != dev[i]) {
        histd__cuda_context_destroy(ctx->peer[i]);
        ctx->peer[i] = NULL;
      }
      t[i].ctx = ctx->peer[i];
      t[i].own = true;
    }
    t[i].device = dev[i];
    t[i].run = run;
    t[i].job = job;
    t[i].ua = cut[i];
    t[i].ub = cut[i + 1];
    t[i].pc = nd == 1 ? (part_ctl){ctl, NULL, NULL, 1.0, 0}
                      : (part_ctl){NULL, &done, &stop, 1.0 / nd, 0};
    t[i].out.rows = rows + (size_t)nrows * i;
    t[i].empty = nd > 1 && t[i].ua >= t[i].ub;
    atomic_init(&t[i].finished, t[i].empty);
  }
  if (nd == 1) { /* alone: on this thread, reporting through ctl */
    part_main(&t[0]);
  } else {
    for (int i = 0; i < nd; i++, started++)
      if (!t[i].empty && pthread_create(&t[i].tid, NULL, part_main, &t[i]) != 0) {
        rc = histd_fail(msg, msglen, HISTD_ENOMEM, "could not start a thread for GPU %d",
                        dev[i]);
        atomic_store(&stop, true);
        break;
      }
    for (;;) {
      bool all = true;
      for (int i = 0; i < started; i++)
        all = all && atomic_load(&t[i].finished);
      histd__progress(ctl, fmin((double)atomic_load(&done) / 1e9, 1.0));
      if (histd__cancelled(ctl))
        atomic_store(&stop, true);
      if (all)
        break;
      sleep_ms(20);
    }
  }
  double kms = 0, tms = 0;
  uint64_t refined = 0;
  *dropped = false;
  res->device[0] = '\0';
  for (int i = 0; i < nd; i++) {
    if (nd > 1 && i < started && !t[i].empty)
      pthread_join(t[i].tid, NULL);
    if (t[i].own) { /* kept for the next job, unless its part failed (a GPU lost, ...) */
      if (t[i].rc != 0 && t[i].rc != HISTD_ECANCELED) {
        histd__cuda_context_destroy(t[i].ctx);
        t[i].ctx = NULL;
      }
      ctx->peer[i] = t[i].ctx;
    }
    /* a part that failed stops the others, which then return ECANCELED:
     * report the failure, not "cancelled" (a real cancel is checked below) */
    if (t[i].rc != 0 &&
        (rc == 0 || (rc == HISTD_ECANCELED && t[i].rc != HISTD_ECANCELED) ||
         (t[i].rc == HISTD_EGPULOST && rc != HISTD_EGPULOST)))
      rc = histd_fail(msg, msglen, t[i].rc, "%s", t[i].msg);
    if (t[i].rc == 0 && !t[i].empty && (nd == 1 || i < started)) {
      histd__cuda_fold_rows(nrows, t[i].out.rows, res);
      *dropped = *dropped || t[i].out.dropped;
      refined += t[i].out.refined;
      kms = fmax(kms, t[i].out.kernel_ms);
      tms = fmax(tms, t[i].out.transfer_ms);
      size_t len = strlen(res->device);
      snprintf(res->device + len, sizeof res->device - len, "%s%s", len ? " + " : "",
               t[i].out.device);
    }
  }
  if (rc == 0 && nd > 1 && histd__cancelled(ctl))
    rc = histd_fail(msg, msglen, HISTD_ECANCELED, "cancelled");
  if (rc != 0) {
    memset(res->counts, 0, (size_t)res->bins.count * sizeof *res->counts);
    res->overflow = 0;
  }
  res->refined_pairs = refined;
  res->timing.kernel_ms = kms;
  res->timing.transfer_ms = tms;
  free(t);
  free(rows);
  return rc;
}

/* The seeds' family: a part is units [ua, ub) of the job's plan. */
typedef struct plan_job {
  const histd_dataset *ds;
  const job_plan *jp;
} plan_job;

static int plan_part(gpu_ctx *ctx, const void *job, uint64_t ua, uint64_t ub, part_ctl *pc,
                     part_out *out, char *msg, size_t msglen) {
  const plan_job *j = job;
  return part_run(ctx, j->ds, j->jp, ua, ub, pc, out, msg, msglen);
}

static int run_plan(histd_worker *w, const histd_dataset *ds, const histd_exec *ex,
                    const histd_control *ctl, const job_plan *jp, histd_result *res,
                    char *msg, size_t msglen) {
  gpu_ctx *ctx = w->gpu;
  if (ctx == NULL)
    return histd_fail(msg, msglen, HISTD_ENODEV, "this worker has no GPU");
  int dev[64];
  const int nd = histd__cuda_job_split(ctx, ex, jp->anchors == 0 /* A x B: one GPU */,
                                       (double)jp->pairs, dev);
  if (nd == 0)
    return histd_fail(msg, msglen, HISTD_ENODEV,
                      "devices mask 0x%llx selects no GPU of this machine",
                      (unsigned long long)ex->devices);
  /* one GPU: the plan's own units; several: equal shares of the tile pairs */
  uint64_t cut[65] = {jp->ua, jp->ub};
  if (nd > 1) {
    sdh_params p0;
    memset(&p0, 0, sizeof p0);
    p0.family = jp->k->gpu->family;
    p0.block = jp->block;
    p0.n = (uint32_t)ds->n;
    p0.tiles = (uint32_t)((ds->n + jp->block - 1) / jp->block);
    const uint64_t U = units_total(&p0);
    for (int i = 0; i <= nd; i++)
      cut[i] = split_point(&p0, U, i, nd);
  }
  const plan_job job = {ds, jp};
  bool dropped;
  int rc = histd__cuda_parts(ctx, dev, nd, cut, jp->rows, plan_part, &job, ctl, res, &dropped,
                             msg, msglen);
  if (rc == 0 && dropped)
    overflow_by_difference(jp, res);
  return rc;
}

/* ---- entry points ---------------------------------------------------------- */

static uint32_t default_block(const histd_kernel *k) {
  switch (k->gpu->family) {
  case SDH_FAM_NAIVE:
    return 256;
  default:
    return 256;
  }
}

static int cross_run(histd_worker *w, const histd_kernel *k, uint32_t block, const histd_problem *p,
                     const histd_exec *ex, const histd_control *ctl, histd_result *res, char *msg,
                     size_t msglen);

int histd__cuda_run_kernel(histd_worker *w, const char *name, uint32_t block,
                           const histd_problem *p, const histd_exec *ex,
                           const histd_control *ctl, histd_result *res, char *msg,
                           size_t msglen) {
  const histd_dataset *ds = p->a;
  const histd_kernel *k = gpu_row(name);
  if (k == NULL)
    return histd_fail(msg, msglen, HISTD_ENOENT, "no GPU kernel \"%s\"", name);
  if (block == 0)
    block = default_block(k);
  int rc = check_block(block, msg, msglen);
  if (rc != 0)
    return rc;
  if (p->b != NULL)
    return cross_run(w, k, block, p, ex, ctl, res, msg, msglen);
  job_plan jp;
  make_plan(w->gpu, k, ds, p->bins.width, ex->precision, res->bins.count, block, &jp);
  rc = run_plan(w, ds, ex, ctl, &jp, res, msg, msglen);
  if (rc != 0)
    return rc;
  ran_kernel(res, k, block, &jp);
  return 0;
}

/* The block of a CLASSIC run on part of the tiles: the job's, else 256. */
static uint32_t classic_block(const histd_exec *ex) {
  return ex->block_size ? ex->block_size : 256;
}

/*
 * A x B (the plain histogram: open space, equal widths, no weights) on a
 * self kernel k of the CLASSIC family (the row "auto" chooses for it is
 * tiled-privatized), in blocks of `block`, whose block I anchors tile I and meets
 * partner tiles [u0, u1). The points go to the GPU as one set
 * C = [A, pad, B], A padded to whole tiles with `pad` copies of a sentinel
 * S; anchors are A's tiles only (the launch's grid) and partners B's
 * tiles, so the kernel meets exactly (A + pad) x B and never a diagonal
 * tile. S lies (buckets + 2) widths beyond every point along each axis, so
 * every pair with it is past the last edge: the counts are A x B's, and
 * the overflow is A x B's pairs less the counted ones. The float32 plan is
 * made for C as it is (its bounds include S), so the exactness argument of
 * sdh_kernels.cu holds unchanged; the kernel runs at the self kernels'
 * speed instead of tiled-stats' binary64 one.
 */
static int cross_run(histd_worker *w, const histd_kernel *k, uint32_t block, const histd_problem *p,
                     const histd_exec *ex, const histd_control *ctl, histd_result *res, char *msg,
                     size_t msglen) {
  const histd_dataset *a = p->a, *b = p->b;
  if (k->gpu->family != SDH_FAM_CLASSIC)
    return histd_fail(msg, msglen, HISTD_EINVAL, "kernel \"%s\" cannot run A x B", k->name);
  int rc = 0;
  const uint64_t tiles_a = (a->n + block - 1) / block, pad = tiles_a * block - a->n;
  const uint64_t n = tiles_a * block + b->n;
  if (n > UINT32_MAX) { /* past the kernels' 32-bit point indices */
    rc = histd__cuda_stats_run(w, p, ex, ctl, res, msg, msglen);
    if (rc == 0)
      snprintf(res->kernel, sizeof res->kernel, "tiled-stats");
    return rc;
  }
  job_plan jp;
  memset(&jp, 0, sizeof jp);
  if (a->n == 0 || b->n == 0) {
    snprintf(res->device, sizeof res->device, "%s (A x B: no pairs)",
             histd__cuda_context_name(w->gpu));
  } else {
    histd_dataset c;
    rc = histd_dataset_alloc(&c, n, msg, msglen);
    if (rc != 0)
      return rc;
    const double reach = ((double)res->bins.count + 2) * p->bins.width;
    double *dst[3] = {c.x, c.y, c.z};
    const double *sa[3] = {a->x, a->y, a->z}, *sb[3] = {b->x, b->y, b->z};
    for (int ax = 0; ax < 3; ax++) {
      const double hi = fmax(a->max[ax], b->max[ax]), s = hi + reach;
      memcpy(dst[ax], sa[ax], a->n * sizeof(double));
      for (uint64_t i = 0; i < pad; i++)
        dst[ax][a->n + i] = s;
      memcpy(dst[ax] + tiles_a * block, sb[ax], b->n * sizeof(double));
    }
    rc = histd_dataset_finish(&c, msg, msglen);
    if (rc == 0) {
      make_plan(w->gpu, k, &c, p->bins.width, ex->precision, res->bins.count, block, &jp);
      jp.anchors = (uint32_t)tiles_a;
      jp.ua = tiles_a;
      jp.ub = (n + block - 1) / block;
      jp.pairs = (a->n + pad) * b->n;
      rc = run_plan(w, &c, ex, ctl, &jp, res, msg, msglen);
    }
    histd_dataset_free(&c);
    if (rc != 0)
      return rc;
    res->overflow -= pad * b->n; /* the sentinel's pairs, all past the last edge */
  }
  ran_kernel(res, k, block, &jp);
  return 0;
}

/*
 * A shard of a plain self histogram on the whole frame, resident on the GPU
 * (no copy of its blocks): the CLASSIC kernel's blocks anchor the shard's
 * row tiles (tile0 on) and meet its column tiles, which for a diagonal
 * block pair are the same tiles, met from the anchor's own on (J >= I: the
 * block's self pairs once), and for an off-diagonal one tiles after every
 * anchor (the whole rectangle). The shard's edges must fall on tile edges:
 * histd_shard_plan_make makes blocks of a multiple of 1024 points. It runs
 * a shard of tiled-privatized, or of "auto" where what it chooses for the
 * shard's own problem ps meets every pair (brute force, on its blocks'
 * copies otherwise: tensor-core or balanced on a diagonal block,
 * tiled-privatized's A x B off it), not where it chooses the grid or the
 * tree for ps.
 */
bool histd__cuda_tiles_fit(const histd_worker *w, const histd_kernel *k, const histd_problem *pf,
                           const histd_problem *ps, const histd_shard *sh, const histd_exec *ex) {
  const uint32_t B = classic_block(ex);
  if (w->device < 0 || pf->b != NULL || histd_problem_needs(pf) != 0 ||
      pf->statistic != HISTD_STAT_HISTOGRAM || pf->bins.kind != HISTD_BINS_WIDTH ||
      B < 32 || B > 1024 || (B & (B - 1)) != 0 || pf->a->n > 0x7fffffffu)
    return false;
  if (histd__kernel_is_auto(k)) {
    histd__choice c;
    histd__choose(w, ps, ex, 0, &c);
    if (!c.every_pair)
      return false;
  } else if (strcmp(k->name, "tiled-privatized") != 0) {
    return false;
  }
  const uint64_t n = pf->a->n, e[4] = {sh->i0, sh->i1, sh->j0, sh->j1};
  for (int i = 0; i < 4; i++)
    if (e[i] % B != 0 && e[i] < n)
      return false;
  return sh->i0 == sh->j0 ? sh->i1 == sh->j1 : sh->i1 <= sh->j0;
}

int histd__cuda_tiles_run(histd_worker *w, const histd_problem *pf, const histd_exec *ex,
                          const histd_shard *sh, const histd_control *ctl, histd_result *res,
                          char *msg, size_t msglen) {
  const histd_dataset *ds = pf->a;
  const histd_kernel *k = gpu_row("tiled-privatized");
  const uint32_t B = classic_block(ex);
  const uint64_t n = ds->n, i1 = sh->i1 < n ? sh->i1 : n, j1 = sh->j1 < n ? sh->j1 : n;
  const uint64_t i0 = sh->i0 < i1 ? sh->i0 : i1, j0 = sh->j0 < j1 ? sh->j0 : j1;
  const bool diag = sh->i0 == sh->j0;
  const uint64_t pairs = diag ? (i1 - i0 < 2 ? 0 : (i1 - i0) * (i1 - i0 - 1) / 2)
                              : (i1 - i0) * (j1 - j0);
  int rc = 0;
  job_plan jp;
  memset(&jp, 0, sizeof jp);
  if (pairs > 0) {
    make_plan(w->gpu, k, ds, pf->bins.width, ex->precision, res->bins.count, B, &jp);
    jp.anchor0 = (uint32_t)(i0 / B);
    jp.anchors = (uint32_t)((i1 + B - 1) / B - i0 / B);
    jp.ua = j0 / B;
    jp.ub = (j1 + B - 1) / B;
    jp.pairs = pairs;
    rc = run_plan(w, ds, ex, ctl, &jp, res, msg, msglen);
  }
  if (rc != 0)
    return rc;
  if (pairs == 0)
    snprintf(res->device, sizeof res->device, "%s (shard: no pairs)",
             histd__cuda_context_name(w->gpu));
  ran_kernel(res, k, B, &jp);
  return 0;
}

int histd__cuda_run(HISTD__RUN_ARGS) {
  return histd__cuda_run_kernel(w, ex->kernel, ex->block_size, p, ex, ctl, res, msg, msglen);
}

