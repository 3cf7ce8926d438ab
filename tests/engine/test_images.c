/*
 * test_images.c -- every periodic image within r_max ("images": "all",
 * histd_problem.all_images) against a replicated supercell counted here by
 * brute force, from the rule in shared/DESIGN.md and histd.h, written
 * independently of the engine:
 *
 *   - the image of point j under the lattice translation n = (na, nb, nc):
 *     x' = ((x + na ax) + nb bx) + nc cx, y' = (y + nb by) + nc cy,
 *     z' = z + nc cz, each operation rounded on its own (volatile);
 *   - a pair's d: the open-space contract from A's point to the image,
 *     dx dx + dy dy, + dz dz, sqrt;
 *   - a self set: n = 0 with i < j, and every n whose first nonzero
 *     component is positive with every (i, j), i = j included (an atom and
 *     its own images); A x B: every n, every (i, j);
 *   - every n of a cube far larger than r_max needs (no pruning here), so
 *     the supercell holds every image within reach; bins by floor(d / w),
 *     or E[k] <= d < E[k+1] by a scan (definition.h), below apart;
 *
 * on orthorhombic and triclinic boxes, r_max past half the box and past
 * the box itself, A x B, explicit edges with a gap below, weights (long
 * double sums), several frames each in its own box, points outside the
 * box, on every CPU kernel that runs an open A x B (and, where there is a
 * GPU, auto and grid there); and the refusals: open space, exclusions, a
 * per-point statistic, bins with no count, r_max reaching too many
 * translations, and a periodic job past half the box without the option
 * (its sentence names it); and such a job is one shard, all of it.
 */
#include <math.h>

#include "../check.h"
#include "../definition.h"
#include "histd/histd.h"

static uint64_t seed = 20261128;
static double rnd(void) { /* splitmix64 -> [0, 1) */
  uint64_t z = (seed += 0x9E3779B97F4A7C15u);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
  return (double)((z ^ (z >> 31)) >> 11) * 0x1p-53;
}

static const char *const kernels[] = {"cpu-reference", "cpu", "grid", "dm-tree", "auto"};
#define NKERNELS (sizeof kernels / sizeof kernels[0])

/* ---- the definition ---------------------------------------------------------- */

static double image_d(const histd_box *bx, const int n[3], double xi, double yi, double zi,
                      double xj, double yj, double zj) {
  volatile double t, x = xj, y = yj, z = zj;
  t = n[0] * bx->ax, x = x + t;
  t = n[1] * bx->bx, x = x + t;
  t = n[2] * bx->cx, x = x + t;
  t = n[1] * bx->by, y = y + t;
  t = n[2] * bx->cy, y = y + t;
  t = n[2] * bx->cz, z = z + t;
  volatile double dx = xi - x, dy = yi - y, dz = zi - z;
  volatile double xx = dx * dx, yy = dy * dy, zz = dz * dz, s = xx + yy;
  s = s + zz;
  return sqrt(s);
}

typedef struct want {
  uint64_t counts[64], below;
  long double w[64], wabs[64];
} want;

/* One frame of a (and b, NULL: self) in box bx, added to W. */
static void supercell(const histd_dataset *a, const histd_dataset *b, const histd_box *bx,
                      const histd_bins *bins, int reach, bool weighted, want *W) {
  const histd_dataset *bb = b ? b : a;
  for (int na = -reach; na <= reach; na++)
    for (int nb = -reach; nb <= reach; nb++)
      for (int nc = -reach; nc <= reach; nc++) {
        const int n[3] = {na, nb, nc};
        const bool zero = !na && !nb && !nc;
        const bool pos = na ? na > 0 : nb ? nb > 0 : nc > 0;
        if (b == NULL && !zero && !pos)
          continue;
        for (size_t i = 0; i < a->n; i++)
          for (size_t j = b == NULL && zero ? i + 1 : 0; j < bb->n; j++) {
            const double d = image_d(bx, n, a->x[i], a->y[i], a->z[i], bb->x[j], bb->y[j],
                                     bb->z[j]);
            const uint32_t k = definition_slot(d, bins->width, bins->edges, bins->count);
            if (k == bins->count) {
              W->below++;
            } else if (k < bins->count) {
              W->counts[k]++;
              if (weighted) {
                const long double p = (long double)a->w[i] * bb->w[j];
                W->w[k] += p;
                W->wabs[k] += fabsl(p);
              }
            }
          }
      }
}

/* ---- running ------------------------------------------------------------------ */

static histd_dataset random_set(size_t n, double lo, double hi, bool weights) {
  histd_dataset ds;
  histd_dataset_alloc(&ds, n, NULL, 0);
  if (weights)
    histd_dataset_alloc_weights(&ds, NULL, 0);
  for (size_t i = 0; i < n; i++) {
    ds.x[i] = lo + rnd() * (hi - lo);
    ds.y[i] = lo + rnd() * (hi - lo);
    ds.z[i] = lo + rnd() * (hi - lo);
    if (weights)
      ds.w[i] = rnd() * 2 - 0.5;
  }
  histd_dataset_finish(&ds, NULL, 0);
  return ds;
}

static int run(const histd_problem *p, const char *kernel, histd_result *r, char *msg,
               size_t msglen) {
  histd_exec ex;
  histd_exec_init(&ex);
  snprintf(ex.kernel, sizeof ex.kernel, "%s", kernel);
  ex.threads = 2;
  return histd_run(p, &ex, NULL, r, msg, msglen);
}

static histd_dataset frame_of(const histd_dataset *ds, size_t f) {
  histd_dataset v;
  histd_dataset_frame(ds, histd_dataset_frames(ds) == 1 ? 0 : f, &v);
  return v;
}

/* Every kernel's result against the supercell; reach: its translations,
 * -reach..reach on each axis. */
static void check_images(const histd_problem *p, int reach, const char *what) {
  want W;
  memset(&W, 0, sizeof W);
  const size_t frames = histd_problem_frames(p);
  for (size_t f = 0; f < frames; f++) {
    histd_dataset a = frame_of(p->a, f), b = p->b ? frame_of(p->b, f) : a;
    supercell(&a, p->b ? &b : NULL, p->frame_boxes ? &a.box : &p->box, &p->bins, reach,
              p->weighted, &W);
  }
  for (size_t k = 0; k < NKERNELS; k++) {
    histd_result r;
    char msg[256] = "";
    int rc = run(p, kernels[k], &r, msg, sizeof msg);
    printf("%s on %s: %s\n", what, kernels[k], rc == 0 ? r.kernel : msg);
    CHECK(rc == 0, "%s on %s: %s", what, kernels[k], msg);
    if (rc != 0)
      continue;
    bool ok = r.all_images && r.overflow == 0 && r.below == W.below;
    CHECK(ok, "%s on %s: images %d overflow %llu below %llu, want below %llu", what,
          kernels[k], r.all_images, (unsigned long long)r.overflow,
          (unsigned long long)r.below, (unsigned long long)W.below);
    for (uint32_t i = 0; i < p->bins.count && ok; i++) {
      if (r.counts[i] != W.counts[i]) {
        CHECK(false, "%s on %s: bin %u: %llu, want %llu", what, kernels[k], i,
              (unsigned long long)r.counts[i], (unsigned long long)W.counts[i]);
        ok = false;
      }
      if (p->weighted && fabsl((long double)r.weighted[i] - W.w[i]) > 1e-12L * W.wabs[i]) {
        CHECK(false, "%s on %s: bin %u: weighted %.17g, want %.17Lg", what, kernels[k], i,
              r.weighted[i], W.w[i]);
        ok = false;
      }
    }
    histd_result_free(&r);
  }
}

static histd_problem problem(const histd_dataset *a, const histd_dataset *b, histd_box box,
                             uint32_t count, double width) {
  histd_problem p;
  memset(&p, 0, sizeof p);
  p.a = a;
  p.b = b;
  p.box = box;
  p.statistic = HISTD_STAT_HISTOGRAM;
  p.bins = (histd_bins){HISTD_BINS_WIDTH, count, width, NULL, 0, 0};
  p.all_images = true;
  return p;
}

/* ---- the cases ------------------------------------------------------------------ */

static void test_orthorhombic(void) {
  /* a 4 x 5 x 6 box, 30 points (some outside it), r_max 1.7 times its
   * shortest side: several images of every pair, an atom's own too */
  const histd_box box = {HISTD_BOX_ORTHO, 4, 0, 5, 0, 0, 6};
  histd_dataset a = random_set(30, -1, 5, false), b = random_set(12, 0, 4, false);
  histd_problem p = problem(&a, NULL, box, 17, 0.4);
  check_images(&p, 4, "orthorhombic self, r_max 6.8");
  p.b = &b;
  check_images(&p, 4, "orthorhombic A x B");
  /* edges with a gap below, from past the half box */
  const double edges[5] = {1.5, 2.5, 3.1, 4.75, 5.5};
  p.bins = (histd_bins){HISTD_BINS_EDGES, 4, 0, edges, 0, 0};
  check_images(&p, 4, "orthorhombic A x B, edges");
  p.b = NULL;
  check_images(&p, 4, "orthorhombic self, edges");
  histd_dataset_free(&a);
  histd_dataset_free(&b);
}

static void test_triclinic(void) {
  const histd_box box = {HISTD_BOX_TRICLINIC, 5, 1.5, 4.5, -1.25, 2, 4};
  histd_dataset a = random_set(25, 0, 5, true), b = random_set(10, 0, 4, true);
  histd_problem p = problem(&a, NULL, box, 12, 0.5);
  check_images(&p, 5, "triclinic self, r_max 6");
  p.weighted = true;
  check_images(&p, 5, "triclinic self, weighted");
  p.b = &b;
  check_images(&p, 5, "triclinic A x B, weighted");
  histd_dataset_free(&a);
  histd_dataset_free(&b);
}

static void test_frames(void) {
  /* three frames of 16 points, each in its own box (the file's) */
  histd_dataset t = random_set(48, 0, 4, false);
  size_t counts[3] = {16, 16, 16};
  histd_box boxes[3] = {{HISTD_BOX_ORTHO, 4, 0, 4, 0, 0, 4},
                        {HISTD_BOX_ORTHO, 4.5, 0, 4, 0, 0, 4.25},
                        {HISTD_BOX_TRICLINIC, 4, 1, 4, 0.5, -1, 4}};
  CHECK(histd_dataset_set_frames(&t, 3, counts, boxes, NULL, 0) == 0, "frames");
  histd_problem p = problem(&t, NULL, (histd_box){HISTD_BOX_NONE, 0, 0, 0, 0, 0, 0}, 10, 0.5);
  p.frame_boxes = true;
  p.per_frame = true;
  check_images(&p, 5, "three frames, their own boxes");
  histd_dataset_free(&t);
}

static void test_refusals(void) {
  histd_dataset a = random_set(20, 0, 4, false);
  char msg[256];
  histd_result r;
  const histd_box box = {HISTD_BOX_ORTHO, 4, 0, 4, 0, 0, 4};
  histd_problem p = problem(&a, NULL, (histd_box){HISTD_BOX_NONE, 0, 0, 0, 0, 0, 0}, 10, 0.5);
  CHECK(run(&p, "auto", &r, msg, sizeof msg) == HISTD_EINVAL, "open space");
  CHECK_STR_CONTAINS(msg, "needs a periodic box");
  p.box = box;
  p.exclude_molecule = true;
  CHECK(run(&p, "auto", &r, msg, sizeof msg) != 0, "exclusions");
  p.exclude_molecule = false;
  p.bins.count = 0;
  CHECK(run(&p, "auto", &r, msg, sizeof msg) == HISTD_EINVAL, "no count");
  CHECK_STR_CONTAINS(msg, "needs the bins' reach");
  p.bins = (histd_bins){HISTD_BINS_WIDTH, 100, 2, NULL, 0, 0}; /* r_max 200 = 50 boxes */
  CHECK(run(&p, "auto", &r, msg, sizeof msg) == HISTD_EINVAL, "too many translations");
  CHECK_STR_CONTAINS(msg, "lattice translations");
  p.bins = (histd_bins){HISTD_BINS_WIDTH, 10, 0.5, NULL, 0, 0};
  p.statistic = HISTD_STAT_POINT_COUNTS;
  p.radius = 1;
  CHECK(run(&p, "auto", &r, msg, sizeof msg) == HISTD_EINVAL, "per point");
  CHECK_STR_CONTAINS(msg, "images");
  p.statistic = HISTD_STAT_HISTOGRAM;
  /* not cut into shards (devices, cluster nodes): one shard, all of it */
  histd_shard_plan plan;
  histd_shard_plan_make(&p, "auto", 4, &plan);
  CHECK(plan.count == 1, "every image in %llu shards", (unsigned long long)plan.count);
  histd_shard one;
  histd_shard_get(&plan, 0, &one);
  histd_worker *w;
  CHECK(histd_worker_create(&w, -1, msg, sizeof msg) == 0, "%s", msg);
  histd_exec ex;
  histd_exec_init(&ex);
  CHECK(histd_worker_run_shard(w, &p, &ex, &one, NULL, &r, msg, sizeof msg) == 0 && r.all_images,
        "its one shard runs: %s", msg);
  histd_result_free(&r);
  histd_worker_destroy(w);
  p.all_images = false; /* r_max 5 past half of 4: refused without the option */
  CHECK(run(&p, "auto", &r, msg, sizeof msg) == HISTD_EINVAL, "past half the box");
  CHECK_STR_CONTAINS(msg, "images");
  histd_dataset_free(&a);
}

int main(void) {
  test_orthorhombic();
  test_triclinic();
  test_frames();
  test_refusals();
  if (check_failures)
    fprintf(stderr, "%d checks failed\n", check_failures);
  else
    printf("all checks passed\n");
  return check_failures ? 1 : 0;
}
