/*
 * dmtree_engine.c -- "dm-tree" on a GPU worker: the host builds the tree
 * and walks it on every core (src/engine/dmtree.c), resolving node pairs
 * whole; the leaf pairs it cannot resolve come here (histd__dm_leaves) and
 * run on the GPU (dmtree_kernels.cu; dmtree_gpu.h has why they are exact).
 *
 * Each host thread of the walk owns a CUDA stream and two batches of
 * DMG_BATCH entries in pinned memory: a full batch is copied and launched
 * on the thread's stream while the thread fills the other, and it waits
 * only when it comes back to a batch whose launch is still running. The
 * blocks of every stream add to one array of levels on the device, which
 * the end of the walk adds to the host's.
 *
 * Periodic and weighted jobs keep their leaf pairs on the host's loops
 * (the GPU's loop has no images and no weights): dmtree.c hands over open,
 * unweighted ones only.
 *
 * Leaves: the GPU's loop is fast and each leaf pair costs the host a visit
 * and an entry, so the tree is built with larger leaves than the host's
 * own (DMG_LEAF); HISTD_DMTREE_GPU_LEAF overrides it, for benchmarks.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "engine.h"
#include "dmtree_gpu.h"
#include "gpu_engine.h"
#include "sdh_gpu.h"

#define DMG_BATCH 4096u /* entries a launch */
#define DMG_LEAF 2048u  /* points in a leaf at most */

typedef struct dmg_thread {
  cudaStream_t s;
  cudaEvent_t done[2]; /* each batch's launch finished */
  bool pending[2];     /* an event recorded and not waited for */
  dmt_entry *host[2];  /* pinned */
  dmt_entry *dev[2];
  uint32_t n;          /* entries in host[cur] */
  int cur;
  bool bound;          /* cudaSetDevice done on this thread */
} dmg_thread;

typedef struct dmg {
  gpu_ctx *ctx;
  int device;
  double centre[3], iw, pnt; /* the float32 frame (f32band.c) */
  bool f32;
  bool edges;
  const double *edge;
  dmt_params kp;
  void *mem; /* one device allocation: points, thresholds, levels, entries */
  uint32_t nt;
  dmg_thread *th;
  unsigned nth;
  pthread_mutex_t lock;
  int rc; /* the first error, its sentence in why */
  char why[256];
} dmg;

/* Records the first error (any thread). */
static int dmg_fail(dmg *g, int rc, const char *why) {
  pthread_mutex_lock(&g->lock);
  if (g->rc == 0) {
    g->rc = rc;
    snprintf(g->why, sizeof g->why, "%s", why);
  }
  pthread_mutex_unlock(&g->lock);
  return rc;
}

static int dmg_cuda(dmg *g, cudaError_t e, const char *what) {
  char m[256];
  return dmg_fail(g, sdh_cuda_fail(m, sizeof m, what, e), m);
}

/* The float32 frame of the job: centre, scale, point term, the cpu
 * kernel's for an open set (f32band.c). */
static void frame(dmg *g, const histd_problem *p) {
  const histd_dataset *a = p->a, *b = p->b ? p->b : p->a;
  const uint32_t count = p->bins.count;
  g->edges = p->bins.kind == HISTD_BINS_EDGES;
  g->edge = p->bins.edges;
  g->f32 = !g->edges || p->bins.edges[count] > 0;
  if (!g->f32)
    return;
  const double w = g->edges ? ldexp(1.0, ilogb(p->bins.edges[count])) : p->bins.width;
  g->iw = 1 / w;
  double m;
  g->f32 = histd__f32_frame(a, b, w, g->centre, &m) && m < 0x1p20;
  g->pnt = g->f32 ? histd__f32_open_pnt(m) : 0;
}

/* n points as float32 4-vectors p = fl32((x - c) / w), 0 in the fourth. */
static float *points32(const dmg *g, const double *const x[3], size_t n) {
  float *f = malloc((n ? n : 1) * 4 * sizeof *f);
  for (size_t i = 0; f != NULL && i < n; i++) {
    for (int ax = 0; ax < 3; ax++)
      f[4 * i + ax] = g->f32 ? (float)((x[ax][i] - g->centre[ax]) * g->iw) : 0.0f;
    f[4 * i + 3] = 0;
  }
  return f;
}

static size_t up256(size_t b) { return (b + 255) & ~(size_t)255; }

static int begin(void *ctx, const double *const a[3], size_t na, const double *const b[3],
                 size_t nb, const double *T, uint32_t nt, unsigned threads, char *msg,
                 size_t msglen) {
  dmg *g = ctx;
  const bool self = a[0] == b[0];
  g->nt = nt;
  int rc = 0;
  float *fa = NULL, *fb = NULL, *band = NULL;
  SDH_CK_OUT(cudaSetDevice(g->device), "cudaSetDevice");
  /* the layout: float32 A (B), binary64 A (B), T, bands, levels, entries */
  const size_t pts = up256(16 * na) + (self ? 0 : up256(16 * nb)) +
                     3 * (up256(8 * na) + (self ? 0 : up256(8 * nb)));
  const size_t thr = up256(8 * (size_t)nt) + 2 * up256(4 * (size_t)nt) +
                     up256(8 * ((size_t)nt + 1));
  const size_t batches = 2 * (size_t)threads * up256(DMG_BATCH * sizeof(dmt_entry));
  const size_t bytes = pts + thr + batches;
  rc = histd__cuda_mem_check(g->ctx, bytes, "dm-tree's points and leaf pairs", msg, msglen);
  if (rc != 0) { /* the context's kept datasets may make room */
    histd__cuda_drop_slots(g->ctx);
    rc = histd__cuda_mem_check(g->ctx, bytes, "dm-tree's points and leaf pairs", msg, msglen);
    if (rc != 0)
      return rc;
  }
  fa = points32(g, a, na);
  fb = self ? fa : points32(g, b, nb);
  band = malloc(2 * (size_t)nt * sizeof *band);
  g->th = calloc(threads, sizeof *g->th);
  if (fa == NULL || fb == NULL || band == NULL || g->th == NULL) {
    rc = histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for dm-tree's float32 points");
    goto out;
  }
  g->nth = threads;
  for (uint32_t k = 0; k < nt; k++) {
    if (g->f32 && !isnan(T[k])) {
      const double thr_k = g->edges ? g->edge[k] * g->iw : (double)k;
      histd__f32_band(thr_k, g->pnt, &band[k], &band[nt + k]);
    } else {
      band[k] = band[nt + k] = NAN;
    }
  }
  SDH_CK_OUT(cudaMalloc(&g->mem, bytes), "cudaMalloc");
  char *at = g->mem;
#define TAKE(ptr, type, size) (ptr = (type)(void *)at, at += up256(size))
  float *pa, *pb;
  double *dx[6], *dT;
  float *dsp, *dsm;
  TAKE(pa, float *, 16 * na);
  pb = pa;
  if (!self)
    TAKE(pb, float *, 16 * nb);
  for (int k = 0; k < 3; k++)
    TAKE(dx[k], double *, 8 * na);
  for (int k = 3; k < 6; k++)
    if (self)
      dx[k] = dx[k - 3];
    else
      TAKE(dx[k], double *, 8 * nb);
  TAKE(dT, double *, 8 * (size_t)nt);
  TAKE(dsp, float *, 4 * (size_t)nt);
  TAKE(dsm, float *, 4 * (size_t)nt);
  TAKE(g->kp.levels, unsigned long long *, 8 * ((size_t)nt + 1));
  for (unsigned t = 0; t < threads; t++)
    for (int k = 0; k < 2; k++)
      TAKE(g->th[t].dev[k], dmt_entry *, DMG_BATCH * sizeof(dmt_entry));
#undef TAKE
  SDH_CK_OUT(cudaMemcpy(pa, fa, 16 * na, cudaMemcpyHostToDevice), "the copy of A");
  if (!self)
    SDH_CK_OUT(cudaMemcpy(pb, fb, 16 * nb, cudaMemcpyHostToDevice), "the copy of B");
  for (int k = 0; k < 6; k++)
    if (k < 3 || !self)
      SDH_CK_OUT(cudaMemcpy(dx[k], k < 3 ? a[k] : b[k - 3], 8 * (k < 3 ? na : nb),
                            cudaMemcpyHostToDevice),
                 "the copy of the points");
  SDH_CK_OUT(cudaMemcpy(dT, T, 8 * (size_t)nt, cudaMemcpyHostToDevice), "the copy of T");
  SDH_CK_OUT(cudaMemcpy(dsp, band, 4 * (size_t)nt, cudaMemcpyHostToDevice), "the bands");
  SDH_CK_OUT(cudaMemcpy(dsm, band + nt, 4 * (size_t)nt, cudaMemcpyHostToDevice), "the bands");
  SDH_CK_OUT(cudaMemset(g->kp.levels, 0, 8 * ((size_t)nt + 1)), "cudaMemset");
  memset(&g->kp.metric, 0, sizeof g->kp.metric); /* open */
  g->kp.pa = pa;
  g->kp.pb = pb;
  g->kp.ax = dx[0], g->kp.ay = dx[1], g->kp.az = dx[2];
  g->kp.bx = dx[3], g->kp.by = dx[4], g->kp.bz = dx[5];
  g->kp.T = dT;
  g->kp.sp = dsp;
  g->kp.sm = dsm;
  g->kp.f32 = g->f32;
  for (unsigned t = 0; t < threads; t++) {
    dmg_thread *th = &g->th[t];
    SDH_CK_OUT(cudaStreamCreateWithFlags(&th->s, cudaStreamNonBlocking), "a stream");
    for (int k = 0; k < 2; k++) {
      SDH_CK_OUT(cudaEventCreateWithFlags(&th->done[k], cudaEventDisableTiming), "an event");
      SDH_CK_OUT(cudaMallocHost((void **)&th->host[k], DMG_BATCH * sizeof(dmt_entry)),
                 "cudaMallocHost");
    }
  }
out:
  free(fa);
  if (fb != fa)
    free(fb);
  free(band);
  return rc;
}

/* Launches thread th's current batch and turns to the other one, after
 * its launch (if any) is done with it. */
static int flush(dmg *g, dmg_thread *th) {
  const int b = th->cur;
  cudaError_t e = cudaMemcpyAsync(th->dev[b], th->host[b], th->n * sizeof(dmt_entry),
                                  cudaMemcpyHostToDevice, th->s);
  if (e != cudaSuccess)
    return dmg_cuda(g, e, "the copy of the leaf pairs");
  char m[256];
  int rc = dmt_launch(&g->kp, th->dev[b], th->n, th->s, m, sizeof m);
  if (rc != 0)
    return dmg_fail(g, rc, m);
  if ((e = cudaEventRecord(th->done[b], th->s)) != cudaSuccess)
    return dmg_cuda(g, e, "cudaEventRecord");
  th->pending[b] = true;
  th->n = 0;
  th->cur = b ^ 1;
  if (th->pending[b ^ 1]) {
    th->pending[b ^ 1] = false;
    if ((e = cudaEventSynchronize(th->done[b ^ 1])) != cudaSuccess)
      return dmg_cuda(g, e, "the dm-tree leaf kernel");
  }
  return 0;
}

static int pair(void *ctx, unsigned thread, const histd__dm_leafpair *lp) {
  dmg *g = ctx;
  dmg_thread *th = &g->th[thread];
  if (!th->bound) { /* the walk's threads are the host's own */
    cudaError_t e = cudaSetDevice(g->device);
    if (e != cudaSuccess)
      return dmg_cuda(g, e, "cudaSetDevice");
    th->bound = true;
  }
  th->host[th->cur][th->n++] =
      (dmt_entry){lp->a0, lp->na, lp->b0, lp->nb, lp->lo, lp->hi, lp->same};
  return th->n == DMG_BATCH ? flush(g, th) : 0;
}

static int end(void *ctx, bool ok, uint64_t *levels, char *msg, size_t msglen) {
  dmg *g = ctx;
  int rc = 0;
  unsigned long long *h = NULL;
  cudaError_t e = cudaSetDevice(g->device);
  if (e != cudaSuccess)
    dmg_cuda(g, e, "cudaSetDevice");
  for (unsigned t = 0; t < g->nth; t++) {
    dmg_thread *th = &g->th[t];
    if (ok && g->rc == 0 && th->n > 0)
      flush(g, th);
    if (th->s != NULL && (e = cudaStreamSynchronize(th->s)) != cudaSuccess)
      dmg_cuda(g, e, "the dm-tree leaf kernel");
  }
  if (ok && g->rc == 0) {
    h = malloc(((size_t)g->nt + 1) * sizeof *h);
    if (h == NULL)
      dmg_fail(g, HISTD_ENOMEM, "out of memory for the GPU's levels");
    else if ((e = cudaMemcpy(h, g->kp.levels, ((size_t)g->nt + 1) * sizeof *h,
                             cudaMemcpyDeviceToHost)) != cudaSuccess)
      dmg_cuda(g, e, "the copy of the levels");
    else
      for (uint32_t l = 0; l <= g->nt; l++)
        levels[l] += h[l];
  }
  if (g->rc != 0)
    rc = msg != NULL ? histd_fail(msg, msglen, g->rc, "%s", g->why) : g->rc;
  free(h);
  for (unsigned t = 0; t < g->nth; t++) {
    dmg_thread *th = &g->th[t];
    for (int k = 0; k < 2; k++) {
      if (th->done[k] != NULL)
        cudaEventDestroy(th->done[k]);
      if (th->host[k] != NULL)
        cudaFreeHost(th->host[k]);
    }
    if (th->s != NULL)
      cudaStreamDestroy(th->s);
  }
  free(g->th);
  g->th = NULL;
  if (g->mem != NULL)
    cudaFree(g->mem);
  g->mem = NULL;
  return rc;
}

int histd__cuda_dmtree_run(HISTD__RUN_ARGS) {
  dmg g;
  memset(&g, 0, sizeof g);
  g.ctx = w->gpu;
  void *stream;
  int sms;
  size_t optin;
  histd__cuda_context_info(g.ctx, &g.device, &stream, &sms, &optin);
  frame(&g, p);
  pthread_mutex_init(&g.lock, NULL);
  const char *env = getenv("HISTD_DMTREE_GPU_LEAF");
  long leaf = env != NULL ? strtol(env, NULL, 10) : 0;
  histd__dm_leaves lv = {&g, histd__cuda_context_name(g.ctx),
                         leaf >= 16 && leaf <= 65536 ? (uint32_t)leaf : DMG_LEAF,
                         begin, pair, end};
  int rc = histd__dmtree_run_leaves(w, p, ex, ctl, res, msg, msglen, &lv);
  if (g.th != NULL || g.mem != NULL) /* begin failed half-way */
    end(&g, false, NULL, NULL, 0);
  pthread_mutex_destroy(&g.lock);
  return rc;
}
