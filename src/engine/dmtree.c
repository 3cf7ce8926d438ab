/*
 * dmtree.c -- the kernel "dm-tree": the histogram without meeting every
 * pair (the density-map SDH of Tu, Chen and Pandit, ICDE 2009), exact, on
 * every core.
 *
 * Idea. Two groups of points whose every pair lands in one bin add
 * |A| |B| to that bin at once. An octree over the points gives groups at
 * every scale; pairs of nodes are tried from the root down, and a pair
 * that cannot be resolved is split (the larger node into its children).
 * Two leaves that still cannot be resolved span few levels (bins) between
 * them: every pair of the two is compared with the thresholds between
 * those levels only (below), in one vector loop of the contract's
 * arithmetic that counts and never updates a histogram, a few times
 * faster per pair than brute force. Leaf pairs spanning more than
 * PASSES + 1 levels go point by point: each point of A against B's box
 * first, then pair by pair. With bins of width w and nodes of side h,
 * about 1.5 h / w of the pairs are left to the leaves, so the tree pays as
 * the bins widen against the points' spacing (choose.c has the measured
 * models "auto" follows, for CPU and GPU workers). Leaves hold up to 256 points: smaller
 * ones resolve a little more but cost more node pairs than they save
 * (measured from 16 to 512).
 *
 * Tree. Each set (A, and B for A x B) is sorted on the Morton code of its
 * points in a grid of cubes over its bounding box (morton.c)
 * and copied in that order. A node is a run of points sharing a code
 * prefix (an octree cell), with the tight bounding box of its points; it
 * is a leaf at LEAF points or fewer. A cell whose points all fall in one
 * child is not a node of its own (chains collapse), so clumps cost no
 * empty levels.
 *
 * Bins, in s. The contract bins a pair by lvl(s): its squared distance s
 * through sqrt, then floor(d / w) or the edges (histd/pair.h), as a level
 * 0 (below), b + 1 (bin b) or count + 1 (overflow). Every step is monotone
 * non-decreasing in s (sqrt is correctly rounded, floor(fl(d / w)) and the
 * edge search are monotone in d), so lvl(s) >= k exactly when s >= T[k-1],
 * T[k-1] the least double s with lvl(s) >= k (found once per job by a
 * search over the bit patterns of s, through the contract's own
 * functions; NaN where none exists). A pair's level is then the number
 * of thresholds at or below its s: no square root, no division.
 *
 * Bounds (why a resolved node pair is exact). The contract's s is a
 * composition of monotone roundings: dx = fl(xa - xb) is non-decreasing
 * in xa and non-increasing in xb (rounding to nearest is monotone), so
 * over a in A, b in B it lies in [fl(A.lo - B.hi), fl(A.hi - B.lo)],
 * computed with the same operation; fl(dx * dx) grows with |dx|, and the
 * two sums grow with their terms. So s over every pair lies in
 * [s(least |dx|, |dy|, |dz|), s(largest)], both evaluated with the
 * contract's own operations: these are the s of real or virtual pairs,
 * not estimates, and need no widening. If lvl is the same at both ends,
 * it is the same for every pair (lvl is monotone). Periodic boxes: the
 * image n = nearbyint(fl(d / L)) (histd_image) is monotone in d, so over
 * an interval of d it takes the integers between its values at the ends;
 * for each n the wrapped d - fl(L n) is again monotone in d, and the
 * triclinic steps (z, then y with the z image's tilt, then x) chain such
 * intervals. The bound is the union over the (at most 3 per axis) images;
 * more than that (nodes wider than the box) is not resolved. Where every
 * axis has one image over a whole leaf pair, the leaf loop subtracts those
 * images' constant offsets, the contract's operations exactly.
 *
 * Threads. The first levels of the traversal run on the caller, deep
 * enough to leave some 256 node pairs per thread; threads claim them from
 * an atomic counter, each counting into its own histogram (64-bit), and
 * poll the cancel flag and report progress after each.
 *
 * Another engine's leaves (histd__dm_leaves, engine.h). On a GPU worker
 * the tree and the walk stay here and the leaf pairs of open, unweighted
 * jobs go to the GPU (kernels/dmtree_engine.c) instead of the loops
 * below, each with the levels lo..hi its bound allows; that engine's
 * counts join the planner's histogram at the end. Its loop is cheap per
 * pair and a leaf pair costs a visit here, so it asks for larger leaves.
 * Planning may walk the first levels more than once (plan_at, deeper
 * each time), so while planning such leaf pairs become tasks: every one
 * is handed over exactly once, by a thread.
 *
 * Weights. A node keeps the (compensated) sum of its points' weights, so
 * a resolved node pair adds W_A W_B to its bin (its own pairs: sum over j
 * of w_j times the sum before it, self_weight), and the leaf loops sum
 * each level's partners' weights apart (wrow_levels); every bin's sum goes
 * through Neumaier's compensation, so it stays within a few ulps of the
 * sum of |w_a w_b| over its pairs, as every kernel's does.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "morton.h"

#define LEAF 256u             /* points in a leaf at most, on the host's loops */
#define PASSES 4u             /* thresholds a leaf pair's loop meets at most; more: point by point */
#define LEVELS HISTD_MORTON_LEVELS
#define TASKS_PER_THREAD 256u /* node pairs planned per thread */
#define MAX_POINTS 0xFFFFFFFFu
typedef struct dm_node {
  double lo[3], hi[3];   /* the bounding box of its points */
  uint32_t start, count; /* its points: [start, start + count) of the sorted set */
  uint32_t child, nchild; /* its children [child, child + nchild); nchild 0: a leaf */
  double wsum;            /* the sum of its points' weights (weighted jobs) */
} dm_node;

typedef struct dm_tree {
  double *x, *y, *z; /* the points in Morton order */
  double *w;         /* their weights, or NULL */
  dm_node *node;     /* node 0 is the root */
  size_t nodes, cap;
  uint32_t leaf;     /* points in a leaf at most (but at the last level) */
} dm_tree;

/* ---- building the tree --------------------------------------------------------- */

static int digit_of(uint64_t key, int level) { return (int)(key >> (3 * (LEVELS - 1 - level))) & 7; }

static int new_nodes(dm_tree *t, size_t k, size_t *first) {
  if (t->nodes + k > t->cap) {
    size_t cap = t->cap ? t->cap : 64;
    while (cap < t->nodes + k)
      cap *= 2;
    dm_node *nn = realloc(t->node, cap * sizeof *nn);
    if (nn == NULL)
      return HISTD_ENOMEM;
    t->node = nn;
    t->cap = cap;
  }
  *first = t->nodes;
  memset(t->node + t->nodes, 0, k * sizeof *t->node);
  t->nodes += k;
  return 0;
}

/* Fills node `at` with the points [s, e) (sorted keys), digits from `level`. */
static int fill(dm_tree *t, const histd__mkey *k, uint32_t s, uint32_t e, int level, size_t at) {
  while (level < LEVELS && digit_of(k[s].key, level) == digit_of(k[e - 1].key, level))
    level++; /* one child only: no node for it */
  dm_node nd = {{0}, {0}, s, e - s, 0, 0, 0};
  if (e - s > t->leaf && level < LEVELS) {
    uint32_t cut[9], m = 0;
    cut[m++] = s;
    for (uint32_t i = s + 1; i < e; i++)
      if (digit_of(k[i].key, level) != digit_of(k[i - 1].key, level))
        cut[m++] = i;
    cut[m] = e;
    size_t first;
    if (new_nodes(t, m, &first) != 0)
      return HISTD_ENOMEM;
    nd.child = (uint32_t)first;
    nd.nchild = m;
    for (uint32_t c = 0; c < m; c++)
      if (fill(t, k, cut[c], cut[c + 1], level + 1, first + c) != 0)
        return HISTD_ENOMEM;
    for (int a = 0; a < 3; a++) {
      nd.lo[a] = INFINITY;
      nd.hi[a] = -INFINITY;
    }
    double err = 0;
    for (uint32_t c = 0; c < m; c++) {
      for (int a = 0; a < 3; a++) {
        nd.lo[a] = fmin(nd.lo[a], t->node[first + c].lo[a]);
        nd.hi[a] = fmax(nd.hi[a], t->node[first + c].hi[a]);
      }
      if (t->w != NULL)
        histd_ev_neumaier(&nd.wsum, &err, t->node[first + c].wsum);
    }
    nd.wsum += err;
  } else {
    const double *p[3] = {t->x, t->y, t->z};
    for (int a = 0; a < 3; a++) {
      nd.lo[a] = nd.hi[a] = p[a][s];
      for (uint32_t i = s + 1; i < e; i++) {
        nd.lo[a] = fmin(nd.lo[a], p[a][i]);
        nd.hi[a] = fmax(nd.hi[a], p[a][i]);
      }
    }
    double err = 0;
    for (uint32_t i = s; t->w != NULL && i < e; i++)
      histd_ev_neumaier(&nd.wsum, &err, t->w[i]);
    nd.wsum += err;
  }
  t->node[at] = nd;
  return 0;
}

static void tree_free(dm_tree *t) {
  free(t->x);
  free(t->y);
  free(t->z);
  free(t->w);
  free(t->node);
  memset(t, 0, sizeof *t);
}

static int tree_build(dm_tree *t, const histd_dataset *ds, bool weighted, uint32_t leaf) {
  memset(t, 0, sizeof *t);
  t->leaf = leaf;
  const size_t n = ds->n;
  if (n == 0)
    return 0;
  const double *p[3] = {ds->x, ds->y, ds->z};
  histd__mkey *k = NULL;
  t->x = malloc(n * sizeof *t->x);
  t->y = malloc(n * sizeof *t->y);
  t->z = malloc(n * sizeof *t->z);
  if (weighted)
    t->w = malloc(n * sizeof *t->w);
  int rc = t->x && t->y && t->z && (!weighted || t->w) ? 0 : HISTD_ENOMEM;
  if (rc == 0)
    rc = histd__morton_sort(ds, &k);
  if (rc == 0) {
    for (size_t i = 0; i < n; i++) {
      t->x[i] = p[0][k[i].index];
      t->y[i] = p[1][k[i].index];
      t->z[i] = p[2][k[i].index];
      if (weighted)
        t->w[i] = ds->w[k[i].index];
    }
    size_t root;
    rc = new_nodes(t, 1, &root);
    if (rc == 0)
      rc = fill(t, k, 0, (uint32_t)n, 0, root);
  }
  free(k);
  if (rc != 0)
    tree_free(t);
  return rc;
}

/* ---- levels and thresholds ------------------------------------------------------ */

/* The contract's level of squared distance s: 0 below, b + 1 bin b,
 * count + 1 overflow. */
static uint32_t contract_level(const histd_bins *bins, double inv_w, double s) {
  double d = HISTD_SQRT(s);
  uint32_t b = bins->kind == HISTD_BINS_EDGES ? histd_bin_edges(d, bins->edges, bins->count)
                                              : histd_bin_width(d, bins->width, inv_w, bins->count);
  return b == HISTD_BIN_BELOW ? 0 : b == HISTD_BIN_OVER ? bins->count + 1 : b + 1;
}

static double of_bits(uint64_t b) {
  double v;
  memcpy(&v, &b, sizeof v);
  return v;
}

static uint64_t bits_of(double v) {
  uint64_t b;
  memcpy(&b, &v, sizeof b);
  return b;
}

/* The least s >= 0 with contract_level(s) >= k, or NaN: a search over the
 * bit patterns of the non-negative doubles (ordered as integers), from a
 * guess, galloping out then bisecting. */
static double threshold(const histd_bins *bins, double inv_w, uint32_t k, double guess) {
  const uint64_t top = 0x7FF0000000000000ull; /* +inf */
  uint64_t g = guess > 0 ? bits_of(guess) : 0;
  g = g > top ? top : g;
#define OK(b) (contract_level(bins, inv_w, of_bits(b)) >= k)
  uint64_t lo, hi; /* !OK(lo) (or lo = -1: none), OK(hi) */
  if (OK(g)) {
    hi = g;
    uint64_t step = 1;
    for (;;) {
      if (hi < step || hi - step == 0) {
        if (OK(0))
          return 0;
        lo = 0;
        break;
      }
      if (!OK(hi - step)) {
        lo = hi - step;
        break;
      }
      hi -= step;
      step *= 2;
    }
  } else {
    lo = g;
    uint64_t step = 1;
    for (;;) {
      if (top - lo <= step) {
        if (!OK(top))
          return NAN;
        hi = top;
        break;
      }
      if (OK(lo + step)) {
        hi = lo + step;
        break;
      }
      lo += step;
      step *= 2;
    }
  }
  while (hi - lo > 1) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (OK(mid))
      hi = mid;
    else
      lo = mid;
  }
#undef OK
  return of_bits(hi);
}

/* ---- bounds --------------------------------------------------------------------- */

typedef struct dm_job dm_job;

/* The images of a node pair where each axis has one: the offsets the leaf
 * loop subtracts (z: oz; y: oy1 then oy2; x: ox1, ox2, ox3), histd/pair.h's
 * minimum image with those images. */
typedef struct dm_offsets {
  double oz, oy1, oy2, ox1, ox2, ox3;
} dm_offsets;

typedef struct dm_range {
  double s_lo, s_hi;
  int one_image; /* every axis has one image (open: always) */
  dm_offsets off;
} dm_range;

static double mag_lo(double lo, double hi) { return lo >= 0 ? lo : hi <= 0 ? -hi : 0; }
static double mag_hi(double lo, double hi) { return -lo > hi ? -lo : hi; }

static double s_of(double mx, double my, double mz) {
  return HISTD_ADD(HISTD_ADD(HISTD_MUL(mx, mx), HISTD_MUL(my, my)), HISTD_MUL(mz, mz));
}

/* Widens r by the s range of the difference intervals d (x, y, z). */
static void take(dm_range *r, const double lo[3], const double hi[3]) {
  double a = s_of(mag_lo(lo[0], hi[0]), mag_lo(lo[1], hi[1]), mag_lo(lo[2], hi[2]));
  double b = s_of(mag_hi(lo[0], hi[0]), mag_hi(lo[1], hi[1]), mag_hi(lo[2], hi[2]));
  r->s_lo = a < r->s_lo ? a : r->s_lo;
  r->s_hi = b > r->s_hi ? b : r->s_hi;
}

/* The images of [lo, hi] on an axis of length len: n0..n1, or false when
 * more than three. */
static int images(double lo, double hi, double len, double inv, double *n0, double *n1) {
  *n0 = histd_image(lo, len, inv);
  *n1 = histd_image(hi, len, inv);
  return *n1 - *n0 <= 2;
}

/* The range of the contract's s over every pair of the boxes a and b. */
static void bound(const histd_metric *m, const double alo[3], const double ahi[3],
                  const double blo[3], const double bhi[3], dm_range *r) {
  double lo[3], hi[3];
  for (int k = 0; k < 3; k++) {
    lo[k] = HISTD_SUB(alo[k], bhi[k]);
    hi[k] = HISTD_SUB(ahi[k], blo[k]);
  }
  r->s_lo = INFINITY;
  r->s_hi = -INFINITY;
  r->one_image = 1;
  memset(&r->off, 0, sizeof r->off);
  if (m->kind == 0) {
    take(r, lo, hi);
    return;
  }
  const double cx = m->kind == 2 ? m->cx : 0, cy = m->kind == 2 ? m->cy : 0,
               bx = m->kind == 2 ? m->bx : 0;
  double z0, z1;
  if (!images(lo[2], hi[2], m->cz, m->icz, &z0, &z1))
    goto wide;
  for (double nz = z0; nz <= z1; nz++) {
    const double oz = HISTD_MUL(m->cz, nz), oy1 = HISTD_MUL(cy, nz), ox1 = HISTD_MUL(cx, nz);
    double l1[3] = {HISTD_SUB(lo[0], ox1), HISTD_SUB(lo[1], oy1), HISTD_SUB(lo[2], oz)};
    double h1[3] = {HISTD_SUB(hi[0], ox1), HISTD_SUB(hi[1], oy1), HISTD_SUB(hi[2], oz)};
    double y0, y1;
    if (!images(l1[1], h1[1], m->by, m->iby, &y0, &y1))
      goto wide;
    for (double ny = y0; ny <= y1; ny++) {
      const double oy2 = HISTD_MUL(m->by, ny), ox2 = HISTD_MUL(bx, ny);
      double l2[3] = {HISTD_SUB(l1[0], ox2), HISTD_SUB(l1[1], oy2), l1[2]};
      double h2[3] = {HISTD_SUB(h1[0], ox2), HISTD_SUB(h1[1], oy2), h1[2]};
      double x0, x1;
      if (!images(l2[0], h2[0], m->ax, m->iax, &x0, &x1))
        goto wide;
      for (double nx = x0; nx <= x1; nx++) {
        const double ox3 = HISTD_MUL(m->ax, nx);
        double l3[3] = {HISTD_SUB(l2[0], ox3), l2[1], l2[2]};
        double h3[3] = {HISTD_SUB(h2[0], ox3), h2[1], h2[2]};
        take(r, l3, h3);
        r->off = (dm_offsets){oz, oy1, oy2, ox1, ox2, ox3};
      }
      r->one_image &= x0 == x1;
    }
    r->one_image &= y0 == y1;
  }
  r->one_image &= z0 == z1;
  return;
wide: /* nodes wider than the box: no bound */
  r->s_lo = 0;
  r->s_hi = INFINITY;
  r->one_image = 0;
}

#define DM_BLOCK_ARGS                                                                          \
  const double *ax, const double *ay, const double *az, uint32_t na, const double *bx,         \
      const double *by, const double *bz, uint32_t nb, const double *t, uint32_t nt,           \
      const dm_offsets *o, uint64_t *c

#define DM_WROW_ARGS                                                                           \
  const double *ax, const double *ay, const double *az, const double *bx, const double *by,   \
      const double *bz, const double *bw, uint32_t nb, const double *t, uint32_t nt,           \
      const dm_offsets *o, uint64_t *cnt, double *acc

/* The leaf pairs' loops (block_levels, wrow_levels, below): for every pair
 * of the na points a and the nb points b, c[k] += (s >= t[k]), k < nt;
 * with weights, per level for one point a. */
typedef void (*dm_block_fn)(DM_BLOCK_ARGS);
typedef void (*dm_wrow_fn)(DM_WROW_ARGS);

/* ---- the traversal ---------------------------------------------------------------- */

struct dm_job {
  const dm_tree *ta, *tb; /* tb == ta: self */
  bool self;
  histd_metric m;
  const double *T;   /* T[k]: the least s of level >= k + 1 (k = 0..count) */
  uint32_t nt;       /* count + 1 */
  dm_block_fn block; /* the leaf pairs' loops for this machine */
  dm_wrow_fn wrow;
  uint32_t (*task)[2]; /* node pairs left to the threads */
  size_t ntasks, tcap;
  bool oom; /* planning ran out of memory for its tasks */
  atomic_size_t next;
  atomic_uint_fast64_t done;
  atomic_bool stop, cancelled;
  const histd_control *ctl;
  const histd__dm_leaves *leaves; /* leaf pairs to another engine, or NULL */
  atomic_int leaves_rc;           /* its first error */
  pthread_mutex_t lock;
  double reported;
  uint64_t total;
};

typedef struct dm_thread {
  dm_job *job;
  uint64_t *h;       /* count + 2 levels */
  double *ws, *we;   /* weighted jobs: each level's sum of w_a w_b and its
                      * running compensation (Neumaier); else NULL */
  uint64_t resolved; /* pairs counted a node pair at a time */
  unsigned index;    /* 0.. for job->leaves */
  pthread_t tid;
} dm_thread;

/* The level of s among the thresholds of levels lo + 1..hi. */
static uint32_t level_in(const double *T, uint32_t lo, uint32_t hi, double s) {
  while (lo < hi) { /* s >= T[k] exactly when level > k */
    uint32_t mid = lo + (hi - lo) / 2;
    if (s >= T[mid])
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* c[k] += how many pairs of the na points (ax, ay, az) and the nb points
 * (bx, by, bz) have s >= t[k], k < NT: open space (DIFF_OPEN), or every
 * axis with one image (DIFF_IMAGES, the offsets o). One pass: each s meets
 * every threshold. A macro, so that each count of thresholds is its own
 * loop (measured: an inline function with a constant count vectorised
 * 25% slower). */
#define DIFF_OPEN                                                                              \
  double dx = xa - bx[j];                                                                      \
  double dy = ya - by[j];                                                                      \
  double dz = za - bz[j];
#define DIFF_IMAGES                                                                            \
  double dz = (za - bz[j]) - o->oz;                                                            \
  double dy = ((ya - by[j]) - o->oy1) - o->oy2;                                                \
  double dx = (((xa - bx[j]) - o->ox1) - o->ox2) - o->ox3;
#define DM_BLOCK(NT, DIFF)                                                                     \
  do {                                                                                         \
    uint64_t cc[NT] = {0};                                                                     \
    double tt[NT];                                                                             \
    for (int k = 0; k < NT; k++)                                                               \
      tt[k] = t[k];                                                                            \
    for (uint32_t i = 0; i < na; i++) {                                                        \
      const double xa = ax[i], ya = ay[i], za = az[i];                                         \
      for (uint32_t j = 0; j < nb; j++) {                                                      \
        DIFF double s = (dx * dx + dy * dy) + dz * dz;                                         \
        for (int k = 0; k < NT; k++)                                                           \
          cc[k] += s >= tt[k];                                                                 \
      }                                                                                        \
    }                                                                                          \
    for (int k = 0; k < NT; k++)                                                               \
      c[k] += cc[k];                                                                           \
  } while (0)

/* LOOP(NT, DIFF) for the count of thresholds nt (1 to PASSES) and the
 * space (o: NULL open, else images): a loop of its own for each. */
#define DM_DISPATCH(LOOP, OPEN, IMAGES)                                                        \
  do {                                                                                         \
    if (o == NULL) {                                                                           \
      switch (nt) {                                                                            \
      case 1: LOOP(1, OPEN); break;                                                            \
      case 2: LOOP(2, OPEN); break;                                                            \
      case 3: LOOP(3, OPEN); break;                                                            \
      default: LOOP(4, OPEN); break;                                                           \
      }                                                                                        \
    } else {                                                                                   \
      switch (nt) {                                                                            \
      case 1: LOOP(1, IMAGES); break;                                                          \
      case 2: LOOP(2, IMAGES); break;                                                          \
      case 3: LOOP(3, IMAGES); break;                                                          \
      default: LOOP(4, IMAGES); break;                                                         \
      }                                                                                        \
    }                                                                                          \
  } while (0)

static inline __attribute__((always_inline)) void block_levels(DM_BLOCK_ARGS) {
  DM_DISPATCH(DM_BLOCK, DIFF_OPEN, DIFF_IMAGES);
}

/* Eight lanes in GCC's vector extensions, lowered to the target's vectors:
 * each lane keeps its own partial sum per level (a plain loop's double sum
 * is a reduction the compiler may not reorder, so it stays scalar). */
typedef double dm_v8d __attribute__((vector_size(64)));
typedef long long dm_v8l __attribute__((vector_size(64)));

/* v = the n (<= 8) doubles at p, then pad (a macro: a function returning
 * a 64-byte vector changes the ABI where AVX-512 is off). */
#define V8_LOAD(v, p, n, pad)                                                                  \
  do {                                                                                         \
    if ((n) == 8)                                                                              \
      memcpy(&(v), (p), sizeof(v));                                                            \
    else                                                                                       \
      for (uint32_t l_ = 0; l_ < 8; l_++)                                                      \
        (v)[l_] = l_ < (n) ? (p)[l_] : (pad);                                                  \
  } while (0)

/* Weighted jobs, one point a against the nb points b (weights bw):
 * cnt[m] += the pairs at level offset m (how many of the nt thresholds
 * their s reaches, 0..nt), acc[m] += the sum of those b's weights, in
 * eight lane sums. Each level's own sum, never a difference of sums: a
 * bin's weighted sum stays within a few ulps of its own sum of |w_a w_b|. */
#define DM_WROW(NT, DIFF)                                                                      \
  do {                                                                                         \
    dm_v8d aa[NT + 1];                                                                         \
    dm_v8l cc[NT + 1];                                                                         \
    for (int k = 0; k <= NT; k++) {                                                            \
      aa[k] = (dm_v8d){0};                                                                     \
      cc[k] = (dm_v8l){0};                                                                     \
    }                                                                                          \
    const dm_v8d xa = {ax[0], ax[0], ax[0], ax[0], ax[0], ax[0], ax[0], ax[0]};                \
    const dm_v8d ya = {ay[0], ay[0], ay[0], ay[0], ay[0], ay[0], ay[0], ay[0]};                \
    const dm_v8d za = {az[0], az[0], az[0], az[0], az[0], az[0], az[0], az[0]};                \
    for (uint32_t j0 = 0; j0 < nb; j0 += 8) {                                                  \
      const uint32_t n8 = nb - j0 < 8 ? nb - j0 : 8;                                           \
      /* lanes past the end: at the first point (any finite s), weight 0, not counted */      \
      dm_v8d bxv, byv, bzv, wv;                                                                \
      V8_LOAD(bxv, bx + j0, n8, bx[0]);                                                        \
      V8_LOAD(byv, by + j0, n8, by[0]);                                                        \
      V8_LOAD(bzv, bz + j0, n8, bz[0]);                                                        \
      V8_LOAD(wv, bw + j0, n8, 0.0);                                                           \
      dm_v8l valid;                                                                            \
      for (uint32_t l = 0; l < 8; l++)                                                         \
        valid[l] = l < n8 ? -1 : 0;                                                            \
      DIFF                                                                                     \
      const dm_v8d s = (dx * dx + dy * dy) + dz * dz;                                          \
      dm_v8l below = valid; /* lanes below every threshold so far */                          \
      for (int k = 0; k < NT; k++) {                                                           \
        const dm_v8l ge = (dm_v8l)(s >= t[k]) & valid;                                         \
        const dm_v8l in = below & ~ge; /* level k: at or above t[k-1], below t[k] */          \
        aa[k] += (dm_v8d)((dm_v8l)wv & in);                                                    \
        cc[k] -= in;                                                                           \
        below = ge;                                                                            \
      }                                                                                        \
      aa[NT] += (dm_v8d)((dm_v8l)wv & below);                                                  \
      cc[NT] -= below;                                                                         \
    }                                                                                          \
    for (int k = 0; k <= NT; k++)                                                              \
      for (int l = 0; l < 8; l++) {                                                            \
        acc[k] += aa[k][l];                                                                    \
        cnt[k] += (uint64_t)cc[k][l];                                                          \
      }                                                                                        \
  } while (0)
#define VDIFF_OPEN                                                                             \
  const dm_v8d dx = xa - bxv;                                                                  \
  const dm_v8d dy = ya - byv;                                                                  \
  const dm_v8d dz = za - bzv;
#define VDIFF_IMAGES                                                                           \
  const dm_v8d dz = (za - bzv) - o->oz;                                                        \
  const dm_v8d dy = ((ya - byv) - o->oy1) - o->oy2;                                            \
  const dm_v8d dx = (((xa - bxv) - o->ox1) - o->ox2) - o->ox3;

static inline __attribute__((always_inline)) void wrow_levels(DM_WROW_ARGS) {
  DM_DISPATCH(DM_WROW, VDIFF_OPEN, VDIFF_IMAGES);
}

/* The loop for the machine's vectors: compiled three times, chosen once
 * per job by __builtin_cpu_supports (not an ifunc: its resolver would run
 * before ThreadSanitizer's runtime starts). IEEE add, mul and compare are
 * exact per lane in every width, and nothing is fused (-ffp-contract=off). */
#define DM_LOOPS(SUFFIX, ATTR)                                                                 \
  ATTR static void block_levels_##SUFFIX(DM_BLOCK_ARGS) {                                      \
    block_levels(ax, ay, az, na, bx, by, bz, nb, t, nt, o, c);                                 \
  }                                                                                            \
  ATTR static void wrow_levels_##SUFFIX(DM_WROW_ARGS) {                                        \
    wrow_levels(ax, ay, az, bx, by, bz, bw, nb, t, nt, o, cnt, acc);                           \
  }

DM_LOOPS(base, )
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(HISTD_NO_SIMD)
DM_LOOPS(avx2, __attribute__((target("avx2"))))
DM_LOOPS(avx512, __attribute__((target("avx512f"))))

static void pick_loops(dm_job *job) {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) {
    job->block = block_levels_avx512;
    job->wrow = wrow_levels_avx512;
  } else if (__builtin_cpu_supports("avx2")) {
    job->block = block_levels_avx2;
    job->wrow = wrow_levels_avx2;
  } else {
    job->block = block_levels_base;
    job->wrow = wrow_levels_base;
  }
}
#else
static void pick_loops(dm_job *job) {
  job->block = block_levels_base;
  job->wrow = wrow_levels_base;
}
#endif

/* Adds n pairs spread over levels lo..hi to h, c[k] of them at s >= T[lo + k]. */
static void add_levels(uint64_t *h, uint32_t lo, uint32_t hi, uint64_t n, const uint64_t *c) {
  uint64_t prev = n;
  for (uint32_t k = lo; k < hi; k++) {
    h[k] += prev - c[k - lo];
    prev = c[k - lo];
  }
  h[hi] += prev;
}

static void add_weight(dm_thread *t, uint32_t level, double v) {
  histd_ev_neumaier(&t->ws[level], &t->we[level], v);
}

/* The sum of w_i w_j over the pairs i < j of a node's points, as the sum
 * over j of w_j times the (compensated) sum of the w_i before it: each
 * term within a few ulps of sum_i |w_i w_j|, so the whole within a few
 * ulps of the sum of |w_i w_j| (W^2 - sum w^2 would cancel). */
static double self_weight(const dm_tree *tr, const dm_node *nd) {
  double before = 0, berr = 0, sum = 0, err = 0;
  for (uint32_t j = nd->start; j < nd->start + nd->count; j++) {
    histd_ev_neumaier(&sum, &err, tr->w[j] * (before + berr));
    histd_ev_neumaier(&before, &berr, tr->w[j]);
  }
  return sum + err;
}

/* Point i of A against the points [j0, j1) of B, whose s from it lie in
 * levels lo..hi (r). */
static void point_run(dm_thread *t, uint32_t i, uint32_t j0, uint32_t j1, uint32_t lo,
                      uint32_t hi, const dm_range *r) {
  const dm_job *job = t->job;
  const dm_tree *a = job->ta, *b = job->tb;
  const double xa = a->x[i], ya = a->y[i], za = a->z[i];
  const uint32_t n = j1 - j0;
  const dm_offsets *o = job->m.kind == 0 ? NULL : &r->off;
  if (r->one_image && hi - lo <= PASSES && a->w != NULL) {
    uint64_t cnt[PASSES + 1] = {0};
    double acc[PASSES + 1] = {0};
    job->wrow(&xa, &ya, &za, b->x + j0, b->y + j0, b->z + j0, b->w + j0, n, job->T + lo,
              hi - lo, o, cnt, acc);
    for (uint32_t m = 0; m <= hi - lo; m++) {
      t->h[lo + m] += cnt[m];
      add_weight(t, lo + m, a->w[i] * acc[m]);
    }
    return;
  }
  if (r->one_image && hi - lo <= PASSES) {
    uint64_t c[PASSES] = {0};
    job->block(&xa, &ya, &za, 1, b->x + j0, b->y + j0, b->z + j0, n, job->T + lo, hi - lo, o,
               c);
    add_levels(t->h, lo, hi, n, c);
    return;
  }
  for (uint32_t j = j0; j < j1; j++) {
    double s = histd_pair_s(&job->m, xa, ya, za, b->x[j], b->y[j], b->z[j]);
    uint32_t level = level_in(job->T, lo, hi, s);
    t->h[level]++;
    if (a->w != NULL)
      add_weight(t, level, a->w[i] * b->w[j]);
  }
}

static uint32_t level_of(const dm_job *job, double s) { return level_in(job->T, 0, job->nt, s); }

static uint64_t pairs_of(const dm_job *job, uint32_t ia, uint32_t ib) {
  const uint64_t na = job->ta->node[ia].count;
  return job->self && ia == ib ? na * (na - 1) / 2 : na * job->tb->node[ib].count;
}

static void add_task(dm_job *job, uint32_t ia, uint32_t ib) {
  if (job->ntasks == job->tcap) {
    size_t cap = job->tcap ? 2 * job->tcap : 1024;
    uint32_t(*nt)[2] = realloc(job->task, cap * sizeof *nt);
    if (nt == NULL) {
      job->oom = true;
      return;
    }
    job->task = nt;
    job->tcap = cap;
  }
  job->task[job->ntasks][0] = ia;
  job->task[job->ntasks][1] = ib;
  job->ntasks++;
}

/* Counts every pair of nodes ia (of A) and ib (of B; self: ia <= ib, a
 * node with itself meaning its own pairs). While planning (budget >= 0)
 * the pairs `budget` splits down become tasks instead. */
static void visit(dm_thread *t, uint32_t ia, uint32_t ib, int budget) {
  dm_job *job = t->job;
  const dm_node *A = &job->ta->node[ia], *B = &job->tb->node[ib];
  const bool same = job->self && ia == ib;
  if (same && A->count < 2)
    return;
  dm_range r;
  bound(&job->m, A->lo, A->hi, B->lo, B->hi, &r);
  uint32_t lo = level_of(job, r.s_lo), hi = level_of(job, r.s_hi);
  if (lo == hi) {
    uint64_t n = pairs_of(job, ia, ib);
    t->h[lo] += n;
    t->resolved += n;
    if (t->ws != NULL)
      add_weight(t, lo, same ? self_weight(job->ta, A) : A->wsum * B->wsum);
    return;
  }
  if (A->nchild == 0 && B->nchild == 0) {
    /* planning (budget > 0) may run more than once: the other engine's
     * leaf pairs are tasks then, counted once, by the threads */
    if (budget == 0 || (budget > 0 && job->leaves != NULL)) {
      add_task(job, ia, ib);
      return;
    }
    const dm_tree *ta = job->ta, *tb = job->tb;
    if (job->leaves != NULL) {
      const histd__dm_leafpair lp = {A->start, A->count, B->start, B->count, lo, hi, same};
      int rc = job->leaves->pair(job->leaves->ctx, t->index, &lp);
      if (rc != 0) {
        int none = 0;
        atomic_compare_exchange_strong(&job->leaves_rc, &none, rc);
        atomic_store(&job->stop, true);
      }
      return;
    }
    if (!same && r.one_image && hi - lo <= PASSES && ta->w == NULL) {
      /* the whole block against the thresholds between */
      const uint32_t i0 = A->start, j0 = B->start;
      uint64_t c[PASSES] = {0};
      job->block(ta->x + i0, ta->y + i0, ta->z + i0, A->count, tb->x + j0, tb->y + j0,
                 tb->z + j0, B->count, job->T + lo, hi - lo, job->m.kind == 0 ? NULL : &r.off,
                 c);
      add_levels(t->h, lo, hi, pairs_of(job, ia, ib), c);
      return;
    }
    /* point by point: the rest of its own leaf, or B's box first */
    for (uint32_t i = A->start; i < A->start + A->count; i++) {
      uint32_t j0 = same ? i + 1 : B->start, j1 = B->start + B->count;
      if (j0 >= j1)
        continue;
      if (same || (r.one_image && hi - lo <= PASSES)) {
        point_run(t, i, j0, j1, lo, hi, &r);
        continue;
      }
      const double pa[3] = {ta->x[i], ta->y[i], ta->z[i]};
      dm_range rp;
      bound(&job->m, pa, pa, B->lo, B->hi, &rp);
      uint32_t plo = level_of(job, rp.s_lo), phi = level_of(job, rp.s_hi);
      if (plo == phi) {
        t->h[plo] += j1 - j0;
        t->resolved += j1 - j0;
        if (t->ws != NULL)
          add_weight(t, plo, ta->w[i] * B->wsum);
      } else {
        point_run(t, i, j0, j1, plo, phi, &rp);
      }
    }
    return;
  }
  if (budget == 0) {
    add_task(job, ia, ib);
    return;
  }
  const int next = budget > 0 ? budget - 1 : -1;
  if (same) {
    for (uint32_t i = 0; i < A->nchild; i++)
      for (uint32_t j = i; j < A->nchild; j++)
        visit(t, A->child + i, A->child + j, next);
    return;
  }
  /* split the larger box (a leaf never) */
  double ea = 0, eb = 0;
  for (int k = 0; k < 3; k++) {
    ea = fmax(ea, A->hi[k] - A->lo[k]);
    eb = fmax(eb, B->hi[k] - B->lo[k]);
  }
  if (B->nchild == 0 || (A->nchild != 0 && ea >= eb)) {
    for (uint32_t i = 0; i < A->nchild; i++)
      visit(t, A->child + i, ib, next);
  } else {
    for (uint32_t j = 0; j < B->nchild; j++)
      visit(t, ia, B->child + j, next);
  }
}

static void *thread_main(void *arg) {
  dm_thread *t = arg;
  dm_job *job = t->job;
  for (;;) {
    if (atomic_load_explicit(&job->stop, memory_order_relaxed))
      break;
    size_t k = atomic_fetch_add(&job->next, 1);
    if (k >= job->ntasks)
      break;
    visit(t, job->task[k][0], job->task[k][1], -1);
    uint64_t pairs = pairs_of(job, job->task[k][0], job->task[k][1]);
    uint64_t done = atomic_fetch_add(&job->done, pairs) + pairs;
    if (histd__cancelled(job->ctl)) {
      atomic_store(&job->cancelled, true);
      atomic_store(&job->stop, true);
      break;
    }
    histd__progress_step(job->ctl, &job->lock, &job->reported,
                         job->total ? (double)done / (double)job->total : 1.0);
  }
  return NULL;
}

/* Plans with the first `budget` levels of splits done on thread t (its
 * histogram starts over); returns the number of tasks left below them. */
static size_t plan_at(dm_job *job, dm_thread *t, size_t hist_bytes, int budget) {
  job->ntasks = 0;
  memset(t->h, 0, hist_bytes);
  if (t->ws != NULL) {
    memset(t->ws, 0, hist_bytes);
    memset(t->we, 0, hist_bytes);
  }
  t->resolved = 0;
  visit(t, 0, 0, budget);
  return job->ntasks;
}

/* ---- the kernel ------------------------------------------------------------------- */

static int thresholds(const histd_bins *bins, double inv_w, double **out) {
  const uint32_t nt = bins->count + 1;
  double *T = malloc(nt * sizeof *T);
  if (T == NULL)
    return HISTD_ENOMEM;
  for (uint32_t k = 0; k < nt; k++) {
    double e = bins->kind == HISTD_BINS_EDGES ? bins->edges[k] : (double)k * bins->width;
    T[k] = threshold(bins, inv_w, k + 1, e > 0 ? e * e : 0);
  }
  *out = T;
  return 0;
}

int histd__dmtree_run(HISTD__RUN_ARGS) {
  return histd__dmtree_run_leaves(w, p, ex, ctl, res, msg, msglen, NULL);
}

int histd__dmtree_run_leaves(HISTD__RUN_ARGS, const histd__dm_leaves *leaves) {
  (void)w;
  const double t0 = histd_now_ms();
  const histd_dataset *a = p->a, *b = p->b ? p->b : p->a;
  if (a->n > MAX_POINTS || b->n > MAX_POINTS)
    return histd_fail(msg, msglen, HISTD_ETOOBIG,
                      "dm-tree takes at most %u points a set, got %zu", MAX_POINTS,
                      a->n > b->n ? a->n : b->n);
  const uint32_t count = res->bins.count;
  dm_job job;
  memset(&job, 0, sizeof job);
  job.self = p->b == NULL;
  job.m = histd__metric(&p->box);
  job.nt = count + 1;
  job.ctl = ctl;
  job.total = res->total;
  /* the other engine takes open, unweighted leaf pairs (its loop has no
   * images and no weights) */
  job.leaves = leaves != NULL && job.m.kind == 0 && !p->weighted ? leaves : NULL;
  atomic_init(&job.leaves_rc, 0);
  const uint32_t leaf = job.leaves != NULL && job.leaves->leaf ? job.leaves->leaf : LEAF;
  pick_loops(&job);
  dm_tree ta, tb;
  memset(&tb, 0, sizeof tb);
  double *T = NULL;
  int rc = tree_build(&ta, a, p->weighted, leaf);
  if (rc == 0 && !job.self)
    rc = tree_build(&tb, b, p->weighted, leaf);
  if (rc == 0)
    rc = thresholds(&p->bins, p->bins.kind == HISTD_BINS_EDGES ? 0 : 1 / p->bins.width, &T);
  if (rc != 0) {
    tree_free(&ta);
    tree_free(&tb);
    free(T);
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for the tree");
  }
  job.ta = &ta;
  job.tb = job.self ? &ta : &tb;
  job.T = T;
  const double tree_ms = histd_now_ms() - t0;

  unsigned nthreads = ex->threads ? ex->threads : histd_cpu_count();
  const size_t hist_bytes = ((size_t)count + 2) * sizeof(uint64_t);
  const size_t thread_bytes = hist_bytes * (p->weighted ? 3 : 1);
  if ((size_t)nthreads * thread_bytes > ((size_t)1 << 30))
    nthreads = (unsigned)(((size_t)1 << 30) / thread_bytes);
  nthreads = nthreads ? nthreads : 1;
  const unsigned nalloc = nthreads + 1; /* the last one plans */
  dm_thread *th = calloc(nalloc, sizeof *th);
  rc = th == NULL ? HISTD_ENOMEM : 0;
  for (unsigned i = 0; rc == 0 && i < nalloc; i++) {
    th[i].job = &job;
    th[i].index = i;
    th[i].h = calloc((size_t)count + 2, sizeof(uint64_t));
    if (p->weighted) {
      th[i].ws = calloc((size_t)count + 2, sizeof(double));
      th[i].we = calloc((size_t)count + 2, sizeof(double));
    }
    rc = th[i].h == NULL || (p->weighted && (th[i].ws == NULL || th[i].we == NULL))
             ? HISTD_ENOMEM : 0;
  }

  bool begun = false, said = false;
  if (rc == 0 && job.leaves != NULL) {
    const double *const sa[3] = {ta.x, ta.y, ta.z};
    const dm_tree *sb = job.self ? &ta : &tb;
    const double *const sbp[3] = {sb->x, sb->y, sb->z};
    rc = job.leaves->begin(job.leaves->ctx, sa, a->n, sbp, b->n, T, job.nt, nalloc, msg,
                           msglen);
    begun = rc == 0;
    said = rc != 0; /* its sentence is in msg */
  }

  /* Plan: the first `budget` levels of splits on this thread, the pairs
   * below them tasks; deeper while that gives more tasks and too few. */
  dm_thread *plan = rc == 0 ? &th[nthreads] : NULL;
  if (rc == 0 && ta.nodes > 0 && (job.self || tb.nodes > 0)) {
    int best = 1;
    size_t most = plan_at(&job, plan, hist_bytes, 1);
    for (int budget = 2; !job.oom && most < (size_t)TASKS_PER_THREAD * nthreads &&
                         budget <= 3 * LEVELS; budget++) {
      size_t n = plan_at(&job, plan, hist_bytes, budget);
      if (n <= most)
        break;
      best = budget;
      most = n;
    }
    if (!job.oom && job.ntasks != most)
      plan_at(&job, plan, hist_bytes, best);
    rc = job.oom ? HISTD_ENOMEM : 0;
  }
  if (rc == 0) {
    uint64_t planned = 0;
    for (size_t k = 0; k < job.ntasks; k++)
      planned += pairs_of(&job, job.task[k][0], job.task[k][1]);
    atomic_init(&job.done, job.total - planned);
  }
  atomic_init(&job.next, 0);
  atomic_init(&job.stop, false);
  atomic_init(&job.cancelled, false);
  pthread_mutex_init(&job.lock, NULL);
  unsigned started = 0;
  if (rc == 0) {
    if (nthreads > job.ntasks)
      nthreads = job.ntasks ? (unsigned)job.ntasks : 1;
    for (; started < nthreads && job.ntasks > 0; started++)
      if (pthread_create(&th[started].tid, NULL, thread_main, &th[started]) != 0) {
        atomic_store(&job.stop, true);
        rc = HISTD_ENOMEM;
        break;
      }
  }
  for (unsigned i = 0; i < started; i++)
    pthread_join(th[i].tid, NULL);
  pthread_mutex_destroy(&job.lock);
  if (begun) { /* the leaf pairs' counts into the planner's levels */
    const bool ok = rc == 0 && !atomic_load(&job.cancelled) && !atomic_load(&job.leaves_rc);
    int lrc = job.leaves->end(job.leaves->ctx, ok, th[nalloc - 1].h, msg, msglen);
    if (rc == 0 && !atomic_load(&job.cancelled) && lrc != 0) {
      rc = lrc;
      said = true;
    }
  }
  if (rc == 0 && atomic_load(&job.cancelled))
    rc = histd_fail(msg, msglen, HISTD_ECANCELED, "cancelled");
  else if (rc != 0 && !said)
    rc = histd_fail(msg, msglen, rc, "out of memory or threads for dm-tree");
  uint64_t resolved = 0;
  if (rc == 0) {
    /* the workers' histograms and the planner's, level by level into a
     * sink's slots (bins, below, overflow); weighted sums through
     * Neumaier's compensation, as every kernel sums them */
    histd__sink total;
    if (histd__sink_init(&total, count, p->weighted ? 1u << HISTD_SUM_W : 0) != 0)
      rc = histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %u bins", count);
    for (unsigned i = 0; rc == 0 && i < nalloc; i++) {
      const dm_thread *t = &th[i];
      for (uint32_t l = 0; l < count + 2; l++) {
        const size_t k = l == 0 ? count : l == count + 1 ? (size_t)count + 1 : l - 1;
        total.counts[k] += t->h[l];
        if (p->weighted) {
          histd_ev_neumaier(&total.sum[HISTD_SUM_W][k], &total.err[HISTD_SUM_W][k], t->ws[l]);
          histd_ev_neumaier(&total.sum[HISTD_SUM_W][k], &total.err[HISTD_SUM_W][k], t->we[l]);
        }
      }
      resolved += t->resolved;
    }
    if (rc == 0)
      histd__sink_to_result(res, &total);
    histd__sink_free(&total);
  }
  const size_t nodes = ta.nodes + tb.nodes;
  for (unsigned i = 0; th != NULL && i < nalloc; i++) {
    free(th[i].h);
    free(th[i].ws);
    free(th[i].we);
  }
  free(th);
  free(job.task);
  free(T);
  tree_free(&ta);
  tree_free(&tb);
  if (rc != 0)
    return rc;
  res->exact = true;
  res->refined_pairs = 0;
  res->threads = started ? started : 1;
  res->block_size = 0;
  res->timing.kernel_ms = histd_now_ms() - t0;
  /* 128 bytes: "NVIDIA H100 80GB HBM3 (GPU 0): leaf pairs; cpu: 16 threads, dm-tree of
   * 1234567 nodes (<= 1024 points, 120 ms), 12.3% resolved" */
  char where[64] = "";
  if (job.leaves != NULL)
    snprintf(where, sizeof where, "%s: leaf pairs; ", job.leaves->name);
  snprintf(res->device, sizeof res->device,
           "%scpu: %u thread%s, dm-tree of %zu nodes (<= %u points, %.0f ms), %.1f%% resolved",
           where, res->threads, res->threads == 1 ? "" : "s", nodes, leaf, tree_ms,
           res->total ? 100.0 * (double)resolved / (double)res->total : 100.0);
  return 0;
}
