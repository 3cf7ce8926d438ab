/*
 * test_points.c -- the statistics of a value per point and of a record
 * per pair (per-point neighbour counts within R, nearest neighbours, the
 * pairs within R) on every CPU kernel able to run them, against brute
 * forces written here from the contract (shared/DESIGN.md), independently
 * of the engine:
 *
 *   - the distance: each operation on its own line; periodic boxes by the
 *     literal rule of histd/pair.h's comment with libm's nearbyint
 *     (orthorhombic per axis; triclinic z, then y, then x);
 *   - per point: for each point i of A, the points j of B (j != i in a
 *     self problem; of another origin for two selections of one dataset)
 *     with d <= R; weighted: the sum of w_j in long double;
 *   - nearest: the least d, ties to the lowest index, within R or
 *     anywhere; "none" where no point is within R;
 *   - pairs: every pair with d <= R as a set of (frame, i, j, d), i < j for
 *     self pairs, compared after sorting;
 *   - per point histogram: for each point i of A, over every frame, the
 *     points j of B (as per point) by bin: floor(d / w) for equal widths,
 *     E[k] <= d < E[k+1] by a linear scan for edges (definition.h); below E[0] apart; its
 *     partners (B's points less itself); the whole result's counts their
 *     column sums, total the partners', overflow the rest; periodic: g of
 *     a point count / (partners V_shell / V) with V = total / sum_f(P_f /
 *     V_f) computed here;
 *
 * on random points (open, orthorhombic, triclinic), a simple cubic
 * lattice whose neighbour distances are exactly R (the edge d = R counts),
 * duplicate-heavy sets (d = 0), several frames, selections, several thread
 * counts; and the refusals (radius 0, weights where none apply, a result
 * larger than its limit, shards).
 *
 * Where there is a GPU, "grid" and "auto" run on it (histd_run gives them a
 * GPU worker), so the same checks hold the GPU's kernels to the definition;
 * then again with launches of 97 points and a pair buffer of 50 records,
 * so that the driver's ranges and its halving of a range whose pairs
 * overflow the buffer are exercised. The gpu suite runs this program with
 * TEST_POINTS_GPU=1, which skips it where there is no GPU.
 */
#include <math.h>

#include "../check.h"
#include "../gpus.h"
#include "../definition.h"
#include "histd/histd.h"

static uint64_t seed = 424242;
static double rnd(void) { /* splitmix64 -> [0, 1) */
  uint64_t z = (seed += 0x9E3779B97F4A7C15u);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
  return (double)((z ^ (z >> 31)) >> 11) * 0x1p-53;
}

static const char *const kernels[] = {"cpu-reference", "cpu", "grid", "auto"};
#define NKERNELS (sizeof kernels / sizeof kernels[0])

/* ---- the definition ----------------------------------------------------------- */

static double wrap(double d, double len) {
  volatile double q = d / len, k = nearbyint(q), lk = len * k;
  return d - lk;
}

/* The contract's d of points i (of a) and j (of b) under box bx. */
static double def_d(const histd_box *bx, const histd_dataset *a, size_t i,
                    const histd_dataset *b, size_t j) {
  volatile double dx = a->x[i] - b->x[j], dy = a->y[i] - b->y[j], dz = a->z[i] - b->z[j];
  if (bx->kind == HISTD_BOX_ORTHO) {
    dx = wrap(dx, bx->ax);
    dy = wrap(dy, bx->by);
    dz = wrap(dz, bx->cz);
  } else if (bx->kind == HISTD_BOX_TRICLINIC) {
    volatile double q = dz / bx->cz, k = nearbyint(q), t;
    t = bx->cz * k, dz = dz - t;
    t = bx->cy * k, dy = dy - t;
    t = bx->cx * k, dx = dx - t;
    q = dy / bx->by, k = nearbyint(q);
    t = bx->by * k, dy = dy - t;
    t = bx->bx * k, dx = dx - t;
    dx = wrap(dx, bx->ax);
  }
  volatile double xx = dx * dx, yy = dy * dy, zz = dz * dz, s = xx + yy;
  s = s + zz;
  return sqrt(s);
}

/* Whether point i of A and j of B are one point (never a pair). */
static bool same(const histd_problem *p, size_t i, size_t j) {
  if (p->b == NULL)
    return i == j;
  if (!p->same_atoms)
    return false;
  uint64_t oi = p->a->origin ? p->a->origin[i] : i, oj = p->b->origin ? p->b->origin[j] : j;
  return oi == oj;
}

static uint64_t id_of(const histd_dataset *d, size_t i) { return d->origin ? d->origin[i] : i; }

/* ---- running ---------------------------------------------------------------------- */

typedef struct pairs_out {
  histd_pair_record *r;
  size_t n, cap;
  size_t calls;
  int fail_at; /* a nonzero return on this call (0: never) */
} pairs_out;

static int collect(void *u, const histd_pair_record *r, size_t n, char *msg, size_t msglen) {
  pairs_out *o = u;
  if (o->fail_at != 0 && (int)++o->calls == o->fail_at) {
    snprintf(msg, msglen, "the test's sink is full");
    return HISTD_EIO;
  }
  if (o->n + n > o->cap) {
    o->cap = (o->n + n) * 2;
    o->r = realloc(o->r, o->cap * sizeof *o->r);
  }
  memcpy(o->r + o->n, r, n * sizeof *r);
  o->n += n;
  return 0;
}

static int run(const histd_problem *p, const char *kernel, uint32_t threads, histd_result *r,
               pairs_out *out, char *msg, size_t msglen) {
  histd_exec ex;
  histd_exec_init(&ex);
  snprintf(ex.kernel, sizeof ex.kernel, "%s", kernel);
  ex.threads = threads;
  histd_control ctl = {NULL, NULL, out, out ? collect : NULL};
  return histd_run(p, &ex, &ctl, r, msg, msglen);
}

/* ---- per point ------------------------------------------------------------------ */

/* Frame f's view of ds (a one-frame set is every frame). */
static histd_dataset frame_of(const histd_dataset *ds, size_t f) {
  histd_dataset v;
  histd_dataset_frame(ds, histd_dataset_frames(ds) == 1 ? 0 : f, &v);
  return v;
}

static histd_box frame_box(const histd_problem *p, const histd_dataset *fa) {
  return p->frame_boxes ? fa->box : p->box;
}

static void check_counts(const histd_problem *p, const char *what) {
  const size_t frames = histd_problem_frames(p);
  for (size_t k = 0; k < NKERNELS; k++)
    for (uint32_t threads = 1; threads <= 3; threads += 2) {
      histd_result r;
      char msg[256] = "";
      int rc = run(p, kernels[k], threads, &r, NULL, msg, sizeof msg);
      CHECK(rc == 0, "%s on %s: %s", what, kernels[k], msg);
      if (rc != 0)
        continue;
      bool ok = true;
      for (size_t f = 0; f < frames && ok; f++) {
        histd_dataset a = frame_of(p->a, f), b = p->b ? frame_of(p->b, f) : a;
        histd_box box = frame_box(p, &a);
        for (size_t i = 0; i < a.n && ok; i++) {
          uint64_t want = 0;
          long double sw = 0, sa = 0;
          for (size_t j = 0; j < b.n; j++) {
            if (same(p, i, j) || !(def_d(&box, &a, i, &b, j) <= p->radius))
              continue;
            want++;
            if (p->weighted) {
              sw += b.w[j];
              sa += fabsl((long double)b.w[j]);
            }
          }
          const size_t row = f * a.n + i;
          if (r.point_counts[row] != want) {
            CHECK(false, "%s on %s (%u threads): frame %zu point %zu: %llu neighbours, want "
                         "%llu", what, kernels[k], threads, f, i,
                  (unsigned long long)r.point_counts[row], (unsigned long long)want);
            ok = false;
          }
          if (p->weighted && fabsl((long double)r.point_weighted[row] - sw) > 1e-12L * sa) {
            CHECK(false, "%s on %s: point %zu: weight sum %.17g, want %.17Lg", what,
                  kernels[k], i, r.point_weighted[row], sw);
            ok = false;
          }
        }
      }
      CHECK(r.frames == frames && r.point_n == (p->a->frame ? p->a->frame[0].n : p->a->n),
            "%s: %llu frames x %llu points", what, (unsigned long long)r.frames,
            (unsigned long long)r.point_n);
      histd_result_free(&r);
    }
}

static void check_nearest(const histd_problem *p, const char *what) {
  const size_t frames = histd_problem_frames(p);
  for (size_t k = 0; k < NKERNELS; k++)
    for (uint32_t threads = 1; threads <= 3; threads += 2) {
      histd_result r;
      char msg[256] = "";
      int rc = run(p, kernels[k], threads, &r, NULL, msg, sizeof msg);
      CHECK(rc == 0, "%s on %s: %s", what, kernels[k], msg);
      if (rc != 0)
        continue;
      bool ok = true;
      for (size_t f = 0; f < frames && ok; f++) {
        histd_dataset a = frame_of(p->a, f), b = p->b ? frame_of(p->b, f) : a;
        histd_box box = frame_box(p, &a);
        for (size_t i = 0; i < a.n && ok; i++) {
          double bd = 0;
          int64_t bj = -1;
          for (size_t j = 0; j < b.n; j++) {
            if (same(p, i, j))
              continue;
            double d = def_d(&box, &a, i, &b, j);
            int64_t id = (int64_t)id_of(&b, j);
            if (d <= p->radius && (bj < 0 || d < bd || (d == bd && id < bj))) {
              bd = d;
              bj = id;
            }
          }
          const size_t row = f * a.n + i;
          const double got = r.nearest_d[row];
          if (r.nearest_j[row] != bj || (bj >= 0 && got != bd) || (bj < 0 && !isnan(got))) {
            CHECK(false, "%s on %s (%u threads): frame %zu point %zu: nearest %lld at %.17g, "
                         "want %lld at %.17g", what, kernels[k], threads, f, i,
                  (long long)r.nearest_j[row], got, (long long)bj, bj >= 0 ? bd : NAN);
            ok = false;
          }
        }
      }
      histd_result_free(&r);
    }
}

/* ---- a histogram per point ------------------------------------------------------ */

static void check_hist(const histd_problem *p, const char *what) {
  const size_t frames = histd_problem_frames(p);
  const uint32_t count = p->bins.count;
  const size_t n = p->a->frame ? p->a->frame[0].n : p->a->n;
  uint64_t *want = calloc(n * (count + 2), 8), *partners = calloc(n, 8);
  long double density = 0;
  uint64_t total = 0;
  for (size_t f = 0; f < frames; f++) {
    histd_dataset a = frame_of(p->a, f), b = p->b ? frame_of(p->b, f) : a;
    histd_box box = frame_box(p, &a);
    uint64_t pairs = 0;
    for (size_t i = 0; i < a.n; i++)
      for (size_t j = 0; j < b.n; j++) {
        if (same(p, i, j))
          continue;
        want[i * (count + 2) + definition_slot(def_d(&box, &a, i, &b, j), p->bins.width,
                                                p->bins.edges, count)]++;
        partners[i]++;
        pairs++;
      }
    total += pairs;
    if (box.kind != HISTD_BOX_NONE) /* the volume: a determinant, triangular */
      density += (long double)pairs / ((long double)box.ax * box.by * box.cz);
  }
  for (size_t k = 0; k < NKERNELS; k++)
    for (uint32_t threads = 1; threads <= 3; threads += 2) {
      histd_result r;
      char msg[256] = "";
      int rc = run(p, kernels[k], threads, &r, NULL, msg, sizeof msg);
      CHECK(rc == 0, "%s on %s: %s", what, kernels[k], msg);
      if (rc != 0)
        continue;
      bool ok = r.point_n == n && r.bins.count == count && r.total == total;
      CHECK(ok, "%s on %s: %llu points x %u bins, %llu pairs; want %zu x %u, %llu", what,
            kernels[k], (unsigned long long)r.point_n, r.bins.count,
            (unsigned long long)r.total, n, count, (unsigned long long)total);
      uint64_t below = 0, in_bins = 0;
      for (size_t i = 0; i < n && ok; i++) {
        const uint64_t *w = want + i * (count + 2);
        for (uint32_t b = 0; b < count && ok; b++)
          if (r.point_hist[i * count + b] != w[b]) {
            CHECK(false, "%s on %s (%u threads): point %zu bin %u: %llu, want %llu", what,
                  kernels[k], threads, i, b, (unsigned long long)r.point_hist[i * count + b],
                  (unsigned long long)w[b]);
            ok = false;
          }
        if (ok && (r.point_below[i] != w[count] || r.point_partners[i] != partners[i])) {
          CHECK(false, "%s on %s: point %zu: below %llu partners %llu, want %llu and %llu",
                what, kernels[k], i, (unsigned long long)r.point_below[i],
                (unsigned long long)r.point_partners[i], (unsigned long long)w[count],
                (unsigned long long)partners[i]);
          ok = false;
        }
        below += w[count];
      }
      for (uint32_t b = 0; b < count && ok; b++) {
        uint64_t sum = 0;
        for (size_t i = 0; i < n; i++)
          sum += want[i * (count + 2) + b];
        in_bins += sum;
        CHECK(r.counts[b] == sum, "%s on %s: bin %u of the whole: %llu, want %llu", what,
              kernels[k], b, (unsigned long long)r.counts[b], (unsigned long long)sum);
      }
      if (ok) {
        CHECK(r.below == below && r.overflow == total - below - in_bins,
              "%s on %s: below %llu overflow %llu", what, kernels[k],
              (unsigned long long)r.below, (unsigned long long)r.overflow);
        if (density > 0) { /* one point's g: its counts over its partners' expectation */
          const size_t i = n / 2;
          const long double v = (long double)total / density;
          for (uint32_t b = 0; b < count; b++) {
            const long double lo = b == 0 && p->bins.kind == HISTD_BINS_WIDTH ? 0
                                   : p->bins.kind == HISTD_BINS_WIDTH ? (long double)b * p->bins.width
                                                                      : p->bins.edges[b];
            const long double hi = p->bins.kind == HISTD_BINS_WIDTH
                                       ? (long double)(b + 1) * p->bins.width
                                       : p->bins.edges[b + 1];
            const long double shell = 4.0L / 3.0L * 3.14159265358979323846L *
                                      (hi * hi * hi - lo * lo * lo);
            const long double g = (long double)want[i * (count + 2) + b] /
                                  ((long double)partners[i] * shell / v);
            const double got = histd_result_point_g(&r, i, b);
            CHECK(fabsl((long double)got - g) <= 1e-12L * (1 + fabsl(g)),
                  "%s on %s: point %zu's g in bin %u: %.17g, want %.17Lg", what, kernels[k], i,
                  b, got, g);
          }
        }
      }
      histd_result_free(&r);
    }
  free(want);
  free(partners);
}

/* ---- pairs ---------------------------------------------------------------------- */

static int rec_cmp(const void *x, const void *y) {
  const histd_pair_record *a = x, *b = y;
  if (a->frame != b->frame)
    return a->frame < b->frame ? -1 : 1;
  if (a->i != b->i)
    return a->i < b->i ? -1 : 1;
  if (a->j != b->j)
    return a->j < b->j ? -1 : 1;
  return 0;
}

static void check_pairs(const histd_problem *p, const char *what) {
  const size_t frames = histd_problem_frames(p);
  pairs_out want = {0};
  for (size_t f = 0; f < frames; f++) {
    histd_dataset a = frame_of(p->a, f), b = p->b ? frame_of(p->b, f) : a;
    histd_box box = frame_box(p, &a);
    for (size_t i = 0; i < a.n; i++)
      for (size_t j = p->b ? 0 : i + 1; j < b.n; j++) {
        if (same(p, i, j))
          continue;
        double d = def_d(&box, &a, i, &b, j);
        if (d <= p->radius) {
          histd_pair_record rec = {f, id_of(&a, i), id_of(&b, j), d};
          collect(&want, &rec, 1, NULL, 0);
        }
      }
  }
  qsort(want.r, want.n, sizeof *want.r, rec_cmp);
  for (size_t k = 0; k < NKERNELS; k++)
    for (uint32_t threads = 1; threads <= 3; threads += 2) {
      histd_result r;
      pairs_out got = {0};
      char msg[256] = "";
      int rc = run(p, kernels[k], threads, &r, &got, msg, sizeof msg);
      CHECK(rc == 0, "%s on %s: %s", what, kernels[k], msg);
      if (rc != 0)
        continue;
      CHECK_EQ_U64(r.pairs, got.n, "records counted and handed out");
      qsort(got.r, got.n, sizeof *got.r, rec_cmp);
      bool same_set = got.n == want.n;
      for (size_t i = 0; same_set && i < got.n; i++)
        same_set = rec_cmp(&got.r[i], &want.r[i]) == 0 && got.r[i].d == want.r[i].d;
      CHECK(same_set, "%s on %s (%u threads): %zu pairs, want %zu (or a record differs)",
            what, kernels[k], threads, got.n, want.n);
      for (size_t i = 0; p->b == NULL && i < got.n; i++)
        if (!(got.r[i].i < got.r[i].j)) {
          CHECK(false, "%s: self record %zu has i %llu >= j %llu", what, i,
                (unsigned long long)got.r[i].i, (unsigned long long)got.r[i].j);
          break;
        }
      free(got.r);
      histd_result_free(&r);
    }
  free(want.r);
}

/* ---- sets ----------------------------------------------------------------------- */

static histd_dataset random_set(size_t n, double l, bool weights) {
  histd_dataset ds;
  histd_dataset_alloc(&ds, n, NULL, 0);
  if (weights)
    histd_dataset_alloc_weights(&ds, NULL, 0);
  for (size_t i = 0; i < n; i++) {
    ds.x[i] = rnd() * l;
    ds.y[i] = rnd() * l;
    ds.z[i] = rnd() * l;
    if (weights)
      ds.w[i] = rnd() * 4 - 1;
  }
  histd_dataset_finish(&ds, NULL, 0);
  return ds;
}

/* A simple cubic lattice of side k and spacing a, offset far from the
 * origin: every neighbour distance is a multiple of a, exactly. */
static histd_dataset lattice(unsigned k, double a, double offset) {
  histd_dataset ds;
  histd_dataset_alloc(&ds, (size_t)k * k * k, NULL, 0);
  size_t n = 0;
  for (unsigned i = 0; i < k; i++)
    for (unsigned j = 0; j < k; j++)
      for (unsigned l = 0; l < k; l++, n++) {
        ds.x[n] = offset + i * a;
        ds.y[n] = offset + j * a;
        ds.z[n] = offset + l * a;
      }
  histd_dataset_finish(&ds, NULL, 0);
  return ds;
}

/* Points drawn from a few sites, each many times over. */
static histd_dataset duplicates(size_t n, unsigned sites) {
  histd_dataset ds;
  histd_dataset_alloc(&ds, n, NULL, 0);
  double sx[16], sy[16], sz[16];
  for (unsigned s = 0; s < sites; s++)
    sx[s] = rnd() * 4, sy[s] = rnd() * 4, sz[s] = rnd() * 4;
  for (size_t i = 0; i < n; i++) {
    unsigned s = (unsigned)(rnd() * sites);
    ds.x[i] = sx[s], ds.y[i] = sy[s], ds.z[i] = sz[s];
  }
  histd_dataset_finish(&ds, NULL, 0);
  return ds;
}

static histd_problem problem(const histd_dataset *a, const histd_dataset *b,
                             histd_statistic s, double r) {
  histd_problem p;
  memset(&p, 0, sizeof p);
  p.a = a;
  p.b = b;
  p.statistic = s;
  p.radius = r;
  return p;
}

static void each_statistic(histd_problem p, double nearest_r, const char *what) {
  char name[160];
  p.statistic = HISTD_STAT_POINT_COUNTS;
  snprintf(name, sizeof name, "%s: per point", what);
  check_counts(&p, name);
  p.statistic = HISTD_STAT_PAIRS;
  snprintf(name, sizeof name, "%s: pairs", what);
  check_pairs(&p, name);
  const double r = p.radius;
  p.statistic = HISTD_STAT_NEAREST;
  p.radius = nearest_r;
  snprintf(name, sizeof name, "%s: nearest within %g", what, nearest_r);
  check_nearest(&p, name);
  p.radius = INFINITY;
  snprintf(name, sizeof name, "%s: nearest anywhere", what);
  check_nearest(&p, name);
  p.radius = r;
  /* a histogram per point, to R: 4 equal bins, and edges with a gap below */
  p.statistic = HISTD_STAT_POINT_HISTOGRAM;
  p.bins = (histd_bins){HISTD_BINS_WIDTH, 4, r / 4, NULL, 0, 0};
  snprintf(name, sizeof name, "%s: a histogram per point, equal bins", what);
  check_hist(&p, name);
  const double edges[4] = {r / 8, r / 3, r / 2, r};
  p.bins = (histd_bins){HISTD_BINS_EDGES, 3, 0, edges, 0, 0};
  snprintf(name, sizeof name, "%s: a histogram per point, edges", what);
  check_hist(&p, name);
}

static void test_open(void) {
  histd_dataset a = random_set(700, 10, true), b = random_set(300, 10, true);
  each_statistic(problem(&a, NULL, HISTD_STAT_POINT_COUNTS, 1.3), 0.4, "open self");
  each_statistic(problem(&a, &b, HISTD_STAT_POINT_COUNTS, 1.3), 0.4, "open A x B");
  histd_problem w = problem(&a, NULL, HISTD_STAT_POINT_COUNTS, 1.3);
  w.weighted = true;
  check_counts(&w, "open self, weighted");
  w.b = &b;
  check_counts(&w, "open A x B, weighted");
  histd_dataset_free(&a);
  histd_dataset_free(&b);
}

static void test_periodic(void) {
  histd_dataset a = random_set(600, 9, false), b = random_set(250, 9, false);
  /* coordinates outside the box too: the contract wraps them */
  for (size_t i = 0; i < a.n; i += 7)
    a.x[i] += 9 * 3, a.z[i] -= 9 * 2;
  histd_dataset_finish(&a, NULL, 0);
  histd_problem p = problem(&a, NULL, HISTD_STAT_POINT_COUNTS, 1.9);
  p.box = (histd_box){HISTD_BOX_ORTHO, 9, 0, 9, 0, 0, 9};
  each_statistic(p, 0.5, "orthorhombic self");
  p.b = &b;
  each_statistic(p, 0.5, "orthorhombic A x B");
  p.b = NULL;
  p.box = (histd_box){HISTD_BOX_TRICLINIC, 9, 2.5, 8.5, -1.5, 2, 8};
  each_statistic(p, 0.5, "triclinic self");
  p.b = &b;
  each_statistic(p, 0.5, "triclinic A x B");
  histd_dataset_free(&a);
  histd_dataset_free(&b);
}

static void test_lattice(void) {
  /* spacing 0.75 (exact in binary64), far from the origin: d = 0.75 exactly
   * for 6 neighbours of an inner point, and R = 0.75 counts them */
  histd_dataset l = lattice(6, 0.75, 1024);
  histd_problem p = problem(&l, NULL, HISTD_STAT_POINT_COUNTS, 0.75);
  each_statistic(p, 0.75, "lattice, R on the neighbour distance");
  histd_result r;
  char msg[256];
  CHECK(run(&p, "grid", 2, &r, NULL, msg, sizeof msg) == 0, "%s", msg);
  CHECK_EQ_U64(r.point_counts[1 + 6 * (1 + 6 * 1)], 6, "an inner point's 6 neighbours at d = R");
  histd_result_free(&r);
  p.radius = nextafter(0.75, 0);
  p.statistic = HISTD_STAT_POINT_COUNTS;
  check_counts(&p, "lattice, R an ulp below the neighbour distance");
  /* every neighbour ties: the lowest index wins */
  each_statistic(problem(&l, NULL, HISTD_STAT_POINT_COUNTS, 1.1), 0.8, "lattice, ties");
  histd_dataset_free(&l);
}

static void test_duplicates(void) {
  histd_dataset d = duplicates(400, 5), e = duplicates(150, 3);
  each_statistic(problem(&d, NULL, HISTD_STAT_POINT_COUNTS, 0.01), 0.01, "duplicates self");
  each_statistic(problem(&d, &e, HISTD_STAT_POINT_COUNTS, 2.0), 0.01, "duplicates A x B");
  histd_dataset_free(&d);
  histd_dataset_free(&e);
}

static void test_frames(void) {
  /* three frames of 200 points, each in its own box, and a one-frame B */
  histd_dataset t = random_set(600, 8, false), b = random_set(90, 8, false);
  size_t counts[3] = {200, 200, 200};
  histd_box boxes[3] = {{HISTD_BOX_ORTHO, 8, 0, 8, 0, 0, 8},
                        {HISTD_BOX_ORTHO, 8.5, 0, 8, 0, 0, 8.25},
                        {HISTD_BOX_TRICLINIC, 8, 1, 8, 0.5, -1, 8}};
  CHECK(histd_dataset_set_frames(&t, 3, counts, boxes, NULL, 0) == 0, "frames");
  histd_problem p = problem(&t, NULL, HISTD_STAT_POINT_COUNTS, 1.7);
  p.frame_boxes = true;
  each_statistic(p, 0.6, "three frames, their own boxes");
  p.b = &b;
  each_statistic(p, 0.6, "three frames against a one-frame B");
  histd_dataset_free(&t);
  histd_dataset_free(&b);
}

static void test_selections(void) {
  /* two overlapping selections of one dataset: a point never meets itself */
  histd_dataset ds = random_set(300, 6, false), sa, sb;
  char msg[256];
  CHECK(histd_dataset_select(&ds, "index:0-199", NULL, &sa, msg, sizeof msg) == 0, "%s", msg);
  CHECK(histd_dataset_select(&ds, "index:100-299", NULL, &sb, msg, sizeof msg) == 0, "%s", msg);
  CHECK(sb.origin != NULL && sb.origin[0] == 100, "a selection's origins");
  histd_problem p = problem(&sa, &sb, HISTD_STAT_POINT_COUNTS, 1.2);
  p.same_atoms = true;
  each_statistic(p, 0.5, "overlapping selections");
  /* the per-point result says which atoms its rows are */
  histd_result r;
  p.statistic = HISTD_STAT_POINT_COUNTS;
  CHECK(run(&p, "auto", 2, &r, NULL, msg, sizeof msg) == 0, "%s", msg);
  CHECK(r.point_index != NULL && r.point_index[5] == 5, "rows name the atoms of A");
  histd_result_free(&r);
  histd_dataset_free(&sa);
  histd_dataset_free(&sb);
  histd_dataset_free(&ds);
}

static void test_refusals(void) {
  histd_dataset a = random_set(50, 5, false);
  char msg[256];
  histd_result r;
  histd_problem p = problem(&a, NULL, HISTD_STAT_POINT_COUNTS, 0);
  CHECK(run(&p, "auto", 1, &r, NULL, msg, sizeof msg) == HISTD_EINVAL, "radius 0");
  CHECK_STR_CONTAINS(msg, "radius > 0");
  p.radius = 1;
  p.weighted = true;
  CHECK(run(&p, "auto", 1, &r, NULL, msg, sizeof msg) == HISTD_EINVAL, "no weights");
  CHECK_STR_CONTAINS(msg, "carry none");
  p.weighted = false;
  p.statistic = HISTD_STAT_NEAREST;
  p.radius = -1;
  CHECK(run(&p, "auto", 1, &r, NULL, msg, sizeof msg) == HISTD_EINVAL, "negative radius");
  p.radius = 1;
  p.result_limit = 100; /* 50 points x 16 bytes */
  CHECK(run(&p, "auto", 1, &r, NULL, msg, sizeof msg) == HISTD_ETOOBIG, "over the limit");
  CHECK_STR_CONTAINS(msg, "800 bytes");
  CHECK_STR_CONTAINS(msg, "100 bytes");
  /* a pair list over its limit is refused before any record is written */
  p.statistic = HISTD_STAT_PAIRS;
  p.radius = 100;
  p.result_limit = 1000;
  pairs_out out = {0};
  CHECK(run(&p, "auto", 1, &r, &out, msg, sizeof msg) == HISTD_ETOOBIG, "pairs over the limit");
  CHECK_STR_CONTAINS(msg, "1225 pairs");
  CHECK_EQ_U64(out.n, 0, "records written before the refusal");
  p.result_limit = 0;
  /* a sink that fails stops the run with its code and sentence */
  out.fail_at = 1;
  CHECK(run(&p, "cpu", 1, &r, &out, msg, sizeof msg) == HISTD_EIO, "a failing sink");
  CHECK_STR_CONTAINS(msg, "sink is full");
  /* no sink: a sentence, not a crash */
  CHECK(run(&p, "cpu", 1, &r, NULL, msg, sizeof msg) == HISTD_EINVAL, "no sink");
  /* a histogram per point: no weights, its rows within the limit, r_max
   * within half a periodic box */
  p.statistic = HISTD_STAT_POINT_HISTOGRAM;
  p.bins = (histd_bins){HISTD_BINS_WIDTH, 4, 0.5, NULL, 0, 0};
  p.weighted = true;
  CHECK(run(&p, "auto", 1, &r, NULL, msg, sizeof msg) == HISTD_EINVAL, "a histogram's weights");
  CHECK_STR_CONTAINS(msg, "does not take weights");
  p.weighted = false;
  p.result_limit = 1000; /* 50 points x (4 x 8 + 16) bytes + 32 */
  CHECK(run(&p, "auto", 1, &r, NULL, msg, sizeof msg) == HISTD_ETOOBIG, "rows over the limit");
  CHECK_STR_CONTAINS(msg, "50 points x 4 bins, 2432 bytes");
  p.result_limit = 0;
  p.box = (histd_box){HISTD_BOX_ORTHO, 3, 0, 3, 0, 0, 3};
  CHECK(run(&p, "auto", 1, &r, NULL, msg, sizeof msg) == HISTD_EINVAL, "r_max past half");
  CHECK_STR_CONTAINS(msg, "exceeds half the periodic box");
  p.box = (histd_box){HISTD_BOX_NONE, 0, 0, 0, 0, 0, 0};
  p.statistic = HISTD_STAT_PAIRS;
  /* kernels that cannot */
  histd_exec ex;
  histd_exec_init(&ex);
  snprintf(ex.kernel, sizeof ex.kernel, "dm-tree");
  CHECK(histd_exec_validate(&ex, &p, msg, sizeof msg) == HISTD_EINVAL, "dm-tree");
  CHECK_STR_CONTAINS(msg, "pair lists");
  free(out.r);
  histd_dataset_free(&a);
}

int main(void) {
  histd_device_info info;
  int gpus = test_gpus(&info, "TEST_POINTS_GPU");
  printf("grid and auto run on %s\n", gpus > 0 ? info.name : "the CPU");
  test_open();
  test_periodic();
  test_lattice();
  test_duplicates();
  test_frames();
  test_selections();
  test_refusals();
  if (gpus > 0) { /* small launches, a small pair buffer */
    setenv("HISTD_GPU_POINTS_LAUNCH", "97", 1);
    setenv("HISTD_GPU_PAIRS_CAP", "50", 1);
    test_open();
    test_periodic();
    test_frames();
    unsetenv("HISTD_GPU_POINTS_LAUNCH");
    unsetenv("HISTD_GPU_PAIRS_CAP");
  }
  if (check_failures)
    fprintf(stderr, "%d checks failed\n", check_failures);
  else
    printf("all checks passed\n");
  return check_failures ? 1 : 0;
}
