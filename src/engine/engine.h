/*
 * engine.h -- private declarations shared by the engine's files and the
 * CUDA launchers in kernels/. Nothing outside src/engine and kernels/
 * includes it.
 */
#ifndef HISTD_ENGINE_H
#define HISTD_ENGINE_H

#include <pthread.h>

#include "choose.h"
#include "histd/histd.h"
#include "histd/eval.h"
#include "histd/pair.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HISTD__MAX_SHARES 8 /* the GPUs a job is cut over (worker.c's run_devices) */
struct histd_worker {
  int device; /* -1: the CPU engine */
  void *gpu;  /* the CUDA side's per-device context; NULL on the CPU */
  /* the workers of a job's other GPUs (run_devices), share i's in peer[i],
   * kept for the next job cut over GPUs, until this worker ends */
  struct histd_worker *peer[HISTD__MAX_SHARES];
};

/* Whether k is the registry's "auto" row (registry.c). */
bool histd__kernel_is_auto(const histd_kernel *k);

/* The signature every kernel's run() has (histd_kernel.run). */
#define HISTD__RUN_ARGS                                                              \
  histd_worker *w, const histd_problem *p, const histd_exec *ex,                     \
      const histd_control *ctl, histd_result *res, char *msg, size_t msglen

/* The CPU kernels (src/engine/cpu_*.c). */
int histd__cpu_reference_run(HISTD__RUN_ARGS);
int histd__cpu_run(HISTD__RUN_ARGS);
/* "grid" on the CPU: the cpu kernel's loops over the cells' blocks (cpu.c). */
int histd__cpu_grid_run(HISTD__RUN_ARGS);
/* "dm-tree": node pairs resolved whole, exact, sub-quadratic (dmtree.c). */
int histd__dmtree_run(HISTD__RUN_ARGS);

/* dm-tree with its leaf pairs handed to another engine (the GPU's,
 * kernels/dmtree_engine.c): the tree, the traversal and the resolved node
 * pairs stay on the host's threads; every leaf pair of an open, unweighted
 * job that the tree cannot resolve goes to pair() instead of the host's
 * leaf loops. Levels as dmtree.c counts them: 0 below, b + 1 bin b,
 * count + 1 overflow; T[k] the least s of level >= k + 1. */
typedef struct histd__dm_leafpair {
  uint32_t a0, na; /* A's points [a0, a0 + na) in the tree's (Morton) order */
  uint32_t b0, nb; /* B's (A's again for self pairs) */
  uint32_t lo, hi; /* every pair's level lies in lo..hi (lo < hi) */
  uint32_t same;   /* 1: one leaf with itself, the pairs i < j */
} histd__dm_leafpair;

typedef struct histd__dm_leaves {
  void *ctx;
  const char *name; /* where the leaf pairs ran, for the result's device line */
  uint32_t leaf;    /* the leaf size to build the tree with (0: dm-tree's own) */
  /* Once, before the traversal: the sorted sets (b = a for self pairs),
   * the thresholds, and how many threads (0..threads-1) will call pair(). */
  int (*begin)(void *ctx, const double *const a[3], size_t na, const double *const b[3],
               size_t nb, const double *T, uint32_t nt, unsigned threads, char *msg,
               size_t msglen);
  /* A leaf pair from thread `thread`; 0 or a negative HISTD_E* code. */
  int (*pair)(void *ctx, unsigned thread, const histd__dm_leafpair *lp);
  /* Once after begin, when every thread is done: the leaf pairs' counts
   * added to levels[0..nt] (when ok), everything freed; 0 or an error. */
  int (*end)(void *ctx, bool ok, uint64_t *levels, char *msg, size_t msglen);
} histd__dm_leaves;

int histd__dmtree_run_leaves(HISTD__RUN_ARGS, const histd__dm_leaves *leaves);

/* The statistics of a value per point and a record per pair
 * (POINT_COUNTS, NEAREST, PAIRS; points.c) of one frame problem p (bins
 * unused; radius resolved), frame f of the result, on the CPU's threads:
 * by the cell grid, or brute force when `brute`. Writes res's row f
 * (per point) or hands the records to ctl->pairs. */
int histd__points_run(const histd_problem *p, const histd_exec *ex, const histd_control *ctl,
                      bool brute, uint64_t f, histd_result *res, char *msg, size_t msglen);
/* The problem whose cell grid holds every pair of p with d <= reach: p
 * with the one bin [0, reach] (edges[2] its edges, the caller's). */
void histd__grid_problem(const histd_problem *p, double reach, double edges[2],
                         histd_problem *out);
/* The nearest-anywhere passes' radii (points.c, and the GPU's): how far a
 * grid of p can reach (half a periodic box, past every pair of an open
 * set) and a first radius, about two point spacings of B. */
void histd__nearest_radii(const histd_problem *p, double *first, double *reach);

/* "dm-tree" on a GPU worker (kernels/dmtree_engine.c; nocuda.c without CUDA). */
int histd__cuda_dmtree_run(HISTD__RUN_ARGS);

/* The float32 estimate's thresholds in s (f32band.c): the cpu kernel's
 * bound |q - q_ref| <= 6u q + P + 2^-50 (cpu.c's header derives it) for
 * points p = fl32((x - c) / w) of an open set, q = fl32(sqrt(s)), s their
 * float32 sum of squares. histd__f32_frame: c, the centre of A's and
 * B's joint bounding box, and M >= max |x - c| / w; false where the bound
 * cannot hold (w outside [2^-480, 2^1000], an axis spanning over 2^500;
 * open sets also need M < 2^20). histd__f32_open_pnt(M) is P for
 * coordinates |x - c| / w <= M. histd__f32_band: for a threshold thr (in units of w),
 * s >= *sp proves q_ref >= thr, s < *sm proves q_ref < thr. */
bool histd__f32_frame(const histd_dataset *a, const histd_dataset *b, double w,
                      double centre[3], double *m);
double histd__f32_open_pnt(double m);
void histd__f32_band(double thr, double pnt, float *sp, float *sm);

/* Collisions (within 0) by hashing the coordinates: O(n) (collide.c); with
 * weights, also the sum of w_i w_j over the colliding pairs. */
int histd__collisions(const histd_problem *p, uint64_t *pairs, double *weighted, char *msg,
                      size_t msglen);

/* The weights' range, the one rule of a weighted job that needs the
 * weights' values (histd_problem_validate looks at a problem's shape only:
 * the service validates jobs on datasets it has not loaded), so
 * histd_worker_run checks it before any kernel runs: the largest |w| of A
 * times that of B (A's again for self pairs) times the number of pairs at
 * most 2^1000, so that no bin's sum, partial sum or compensation term can
 * overflow, and the smallest nonzero |w| of A times that of B at least
 * 2^-1022, so that every nonzero product w_i w_j is a normal number, within
 * 2^-53 of the exact one (the weights' 1e-12 promise); with ravg, that
 * bound times axis 1's last edge (2^512 for a default count: any binned
 * separation's square is finite) at most 2^1000 too, for its sums of
 * (w_i w_j) u (unweighted ravg cannot overflow). A per-point count
 * (POINT_COUNTS) sums B's weights, no products: the largest |w| of B times
 * its points at most 2^1000. 0, or HISTD_EINVAL with a sentence. */
int histd__weights_check(const histd_problem *p, char *msg, size_t msglen);

/* The box's perpendicular widths across its three pairs of faces (the
 * planes of constant fractional coordinate a, b, c). */
void histd__box_widths(const histd_box *box, double w[3]);

/* The problem's metric, flattened for the pair functions of histd/pair.h. */
static inline histd_metric histd__metric(const histd_box *b) {
  bool box = b->kind != HISTD_BOX_NONE;
  histd_metric m = {(int)b->kind, b->ax, b->bx, b->by, b->cx, b->cy, b->cz,
                    box ? 1 / b->ax : 0, box ? 1 / b->by : 0, box ? 1 / b->cz : 0};
  return m;
}

/*
 * The general pair loop: every pair of the block i in [i0, i1), j in
 * [j0, j1) (j > i when diag; j indexes B for cross problems) through the
 * contract's functions (histd/pair.h), counted into a sink. The reference
 * kernel runs it on the whole problem; "cpu" runs it on tiles where its
 * float32 loops do not apply (pair_loop.c).
 */
typedef struct histd__sink {
  uint64_t *counts; /* count + 2: [count] below, [count + 1] overflow */
  /* channel c (histd_sum): NULL, or count + 2 Neumaier sums and their
   * running compensations */
  double *sum[HISTD_SUMS], *err[HISTD_SUMS];
} histd__sink;

/* The sink slot of the pair (i of a, j of b; b = a for self pairs) by the
 * contract (histd/pair.h), through the bin evaluator ev (histd__ev_bin): a
 * bin 0..count-1, count below, count + 1 over. */
static inline size_t histd__pair_slot(const histd_problem *p, const histd_metric *m,
                                      const histd_ev_bin *ev, size_t i, size_t j, double *u) {
  const histd_dataset *a = p->a, *b = p->b ? p->b : p->a;
  return histd_ev_bin_pair(ev, m, a->x[i], a->y[i], a->z[i], b->x[j], b->y[j], b->z[j], u);
}

/*
 * Every periodic image (images.c): the lattice translations n H that can
 * bring B (moved) within r_max of A, in the order z, y, x ranges give them
 * (a self problem: n = 0 and the positive half only), as a malloc'd list
 * of *count; more than HISTD_MAX_IMAGES is refused with a sentence. The
 * image of a point under n (each product and sum rounded on its own), and
 * src moved by n into dst (allocated for src->n points, with weights when
 * src has them), finished.
 */
#define HISTD_MAX_IMAGES 4096
int histd__images_plan(const histd_box *box, const double amin[3], const double amax[3],
                       const double bmin[3], const double bmax[3], bool self, double r_max,
                       int32_t (**out)[3], size_t *count, char *msg, size_t msglen);
void histd__image_of(const histd_box *box, const int32_t n[3], double x, double y, double z,
                     double out[3]);
int histd__images_move(const histd_dataset *src, const histd_box *box, const int32_t n[3],
                       histd_dataset *dst, char *msg, size_t msglen);

/* The bin evaluator of p's bins (histd/eval.h). */
static inline histd_ev_bin histd__ev_bin(const histd_problem *p) {
  const bool edges = p->bins.kind == HISTD_BINS_EDGES;
  histd_ev_bin e = {edges ? p->bins.edges : NULL, p->bins.width, edges ? 0 : 1 / p->bins.width,
                    0, 0, p->bins.count, HISTD_EV_D, p->los_midpoint, 0, 0, 0, 0};
  if (edges)
    histd_edges_guess(p->bins.edges, p->bins.count, &e.ga, &e.gb);
  if (p->statistic == HISTD_STAT_RP_PI || p->statistic == HISTD_STAT_S_MU) {
    e.axes = p->statistic == HISTD_STAT_RP_PI ? HISTD_EV_RP_PI : HISTD_EV_S_MU;
    e.count2 = p->bins.count2;
    e.max2 = p->bins.max2;
    e.width2 = p->bins.max2 / p->bins.count2;
    e.inv2 = 1 / e.width2;
  }
  return e;
}

/*
 * Exclusions (exclude.c): the pairs of atoms with the same molecule id,
 * found once by sorting each operand's atoms by molecule, then counted a
 * frame at a time by the contract so that the worker can take them out of
 * the kernel's counts exactly.
 */
typedef struct histd__exclusions {
  size_t *a, *b;       /* atom indices sorted by molecule (b NULL: self)   */
  const int64_t *mol_a, *mol_b;
  size_t n_a, n_b;
} histd__exclusions;
int histd__exclusions_init(histd__exclusions *x, const histd_problem *p, char *msg,
                           size_t msglen);
void histd__exclusions_free(histd__exclusions *x);
/* Frame problem pf's excluded pairs within shard sh (NULL: all) into s
 * (counts only, zeroed first); their number. */
uint64_t histd__exclusions_count(const histd__exclusions *x, const histd_problem *pf,
                                 const histd_shard *sh, histd__sink *s);
/* A borrowed view of ds's points [start, start + n) with their bounds (no
 * box, topology or frames). */
void histd__view(const histd_dataset *ds, size_t start, size_t n, histd_dataset *view);
/* p with its bins as the kernels see them: within R as the one bin [0, R]
 * (within_edges holds its edges), default bins counted. */
int histd__problem_resolve(const histd_problem *p, double within_edges[2], histd_problem *out,
                           char *msg, size_t msglen);
/* Shard sh of one-frame problem pf: views of its blocks in a (and b) and
 * the problem on them (self pairs of a diagonal block, else A x B). */
void histd__problem_shard(const histd_problem *pf, const histd_shard *sh, histd_dataset *a,
                          histd_dataset *b, histd_problem *out);

/* A sink of count + 2 slots and the sums in mask `sums` (histd_problem_sums). */
int histd__sink_init(histd__sink *s, uint32_t count, unsigned sums);
void histd__sink_free(histd__sink *s);
/* The pairs [i0, i1) x [j0, j1) of p (j > i when diag) into s, binned by
 * ev (histd__ev_bin(p), made once a run: it reads the edges). */
void histd__pairs_block(const histd_problem *p, const histd_ev_bin *ev, size_t i0, size_t i1,
                        size_t j0, size_t j1, bool diag, histd__sink *s);
/* Zeroes the sink's counts and sums (count + 2 slots). */
void histd__sink_zero(histd__sink *s, uint32_t count);
/* Adds sink s into total (same count); then total into the result. */
void histd__sink_merge(histd__sink *total, const histd__sink *s, uint32_t count);
void histd__sink_to_result(histd_result *res, const histd__sink *s);

/* Helpers for backends: NULL-safe wrappers around a histd_control. */
bool histd__cancelled(const histd_control *ctl);
void histd__progress(const histd_control *ctl, double fraction);
/* Progress from a kernel's threads after each task: reports fraction when
 * it has moved by 1e-3 since *reported (at most ~1000 calls a run), never
 * 1 (the worker reports the end), serialised and never backwards (lock). */
void histd__progress_step(const histd_control *ctl, pthread_mutex_t *lock, double *reported,
                          double fraction);

/* Hands n pair records to the control's pairs callback (HISTD_EINVAL
 * when there is none); what it returns. */
int histd__emit_pairs(const histd_control *ctl, const histd_pair_record *r, size_t n, char *msg,
                      size_t msglen);

/* Part k of `parts` of a run (a frame, a slab): histd__part_control(&pt)
 * is a control whose progress is scaled into outer's and whose cancel is
 * outer's; pt must outlive its use. */
/* The most points a frame of ds holds. */
uint64_t histd__most_points(const histd_dataset *ds);

/* An environment variable's number (tests' and benchmarks' knobs), or dflt
 * where it is unset or not a number. */
double histd__env_number(const char *name, double dflt);

/* The GPUs a job may use (mask: ex->devices, 0 = all), as a list into
 * dev[0..max): the worker's own (own) first; how many. */
int histd__job_devices(int own, uint64_t mask, int *dev, int max);

typedef struct histd__part {
  const histd_control *outer;
  double k, parts;
} histd__part;
histd_control histd__part_control(histd__part *pt);

/*
 * The CUDA side (kernels/), or the stubs in src/engine/nocuda.c when histd
 * is built without CUDA (its kernels are in the registry either way, so a
 * build without CUDA can say that a GPU kernel needs a GPU).
 */
int histd__cuda_devices(histd_device_info *out, int max, int *count,
                        char *msg, size_t msglen);
int histd__cuda_context_create(void **ctx, int device, char *msg,
                               size_t msglen);
void histd__cuda_context_destroy(void *ctx);
/* sealed: the caller keeps ds's points as they are until the run that uses
 * them (a trajectory's next frame), so that run skips the content check. */
int histd__cuda_prefetch(void *ctx, const histd_dataset *ds, bool sealed, char *msg,
                         size_t msglen);
/* Ends every sealed prefetch's promise (a run of frames that stopped early). */
void histd__cuda_unseal(void *ctx);
/* The brute-force GPU kernel ex->kernel (a row with launch facts) in
 * blocks of ex->block_size; the plain histogram of one set, or of A x B
 * (open space, equal widths, no weights) on a CLASSIC kernel at the self
 * kernels' speed, which only "auto" hands it (kernels/gpu_engine.c). */
int histd__cuda_run(HISTD__RUN_ARGS);
/* Whether tensor-core's plan takes the plain self histogram p on worker
 * w's GPU (the float32 code's reach, its rows in shared memory, 2 to 2^31
 * points, the devices mask), and its k (the float code's row bits) in *k
 * (kernels/tc_engine.c). */
bool histd__cuda_tc_plan(const histd_worker *w, const histd_problem *p, const histd_exec *ex,
                         uint32_t *k);
/* A shard sh of a plain self histogram (frame problem pf; ps the shard's
 * own problem) on the worker's GPU over the whole frame (no copy of its
 * blocks), where kernel k would run brute force on ps (tiled-privatized,
 * or "auto" as choose.c says for ps) and the shard's edges fall on the
 * kernel's tiles (kernels/gpu_engine.c). */
bool histd__cuda_tiles_fit(const histd_worker *w, const histd_kernel *k, const histd_problem *pf,
                           const histd_problem *ps, const histd_shard *sh, const histd_exec *ex);
int histd__cuda_tiles_run(histd_worker *w, const histd_problem *pf, const histd_exec *ex,
                          const histd_shard *sh, const histd_control *ctl, histd_result *res,
                          char *msg, size_t msglen);
/* "tiled-stats": every statistic on the worker's GPU, in binary64. */
int histd__cuda_stats_run(HISTD__RUN_ARGS);
/* The point statistics (POINT_COUNTS, NEAREST, PAIRS) of one frame
 * problem on the worker's GPU, by the cell grid (kernels/points_engine.c):
 * frame f's row of res, or its records to ctl->pairs. */
int histd__cuda_points_run(histd_worker *w, const histd_problem *p, const histd_exec *ex,
                           const histd_control *ctl, uint64_t f, histd_result *res, char *msg,
                           size_t msglen);
/* "grid" on the worker's GPU (kernels/grid_engine.c). */
int histd__cuda_grid_run(HISTD__RUN_ARGS);
/* "tensor-core": the plain self histogram with the squared distances from
 * the tensor cores (kernels/tc_engine.c); a job its plan declines runs
 * "balanced", and the result's reason says why. */
int histd__cuda_tc_run(HISTD__RUN_ARGS);

#ifdef __cplusplus
}
#endif
#endif
