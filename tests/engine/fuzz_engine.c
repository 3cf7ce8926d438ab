/*
 * fuzz_engine.c -- libFuzzer target for the engine itself: a problem at the
 * limits of binary64, run on every kernel a CPU worker has, its result
 * checked against the contract written out here (shared/DESIGN.md and
 * histd/pair.h's text, not the engine's functions).
 *
 * The input (missing bytes read as 0):
 *   byte 0  shape: bits 0-1 the box (0 open, 1 orthorhombic, 2 triclinic,
 *           3 open), bits 2-3 the bins (0 width and count, 1 width with
 *           the default count, 2 explicit edges, 3 log bins), bit 4 a
 *           statistic of a radius instead of a histogram (then bits 2-3
 *           say which: within R, a count per point, the nearest point
 *           (within R, or anywhere where R is 0), the pairs within R),
 *           bit 5 weighted, bit 6 A x B, bit 7 two frames in their own
 *           boxes (the file's)
 *   byte 1  A's points, 1 + byte % 40;  byte 2 B's, likewise
 *   byte 3  the bins' count, 1 + byte % 12
 *   byte 4  how to run: bit 0 two threads, bit 1 precision "fast", bits
 *           2-3 the cpu kernel's ISA for its knob run (auto, generic, avx2,
 *           avx512), bit 4 its float64 path, bit 5 tiles of 16, bits 6-7
 *           its bucket-pair table (default, never, forced)
 *   then values of two bytes each (value()): the box (3 or 6 components:
 *   ax, by, cz or ax, bx, by, cx, cy, cz), frame 2's box, the width (or
 *   count + 1 edges, sorted, or r_min and r_max) or, for a statistic of a
 *   radius, the radius; A's offset, A's x, y, z (offset + value) and
 *   weights, then B's likewise;
 *   then (a histogram's, read after the points so that older inputs keep
 *   their meaning) byte 5: bits 0-1 the axes (0 and 3 d alone, 1 (r_p,
 *   pi), 2 (s, mu)), bit 2 ravg, bit 3 the midpoint line of sight, bits
 *   4-6 axis 2's bins 1 + (byte >> 4) % 8; and axis 2's range (pi_max or
 *   mu_max), a value.
 *
 * A value is a table entry (0, subnormals, 1e-300, the box range's ends
 * 2^-250 and 2^250, simple numbers that land on edges, 2^52, DBL_MAX/4,
 * DBL_MAX, ...) times a small integer, moved a few ulps, with a sign.
 *
 * Checks: histd_problem_validate either refuses with a sentence or every
 * CPU kernel able to (the registry's "cpu" and "any" rows) runs it; a run
 * either fails with a sentence or its counts, below and overflow are the
 * contract's (with precision "fast", where the result says it is exact),
 * sum(counts) + below + overflow = total = the number of pairs, the
 * default count in open space leaves no overflow, and weighted sums (and
 * ravg's sums of (w_i w_j) u) lie within 1e-12 of the exact sum relative
 * to the sum of the terms' magnitudes (ravg's plus 2^-1074 a term, which
 * may underflow). Two axes bin by definition.h's
 * definition_slot2. A count
 * per point is each point's partners with d <= R (never itself) and their
 * weights' sum to 1e-12; the nearest point its least d, ties to the lowest
 * index, none (NaN, -1) where no point is within R; the pairs within R the
 * records (frame, i, j, d), i < j for self pairs, as a set. "auto" runs
 * whatever "cpu-reference" (the contract, literally) runs. The cpu kernel
 * runs histograms once more with the byte-4 knobs (histd__cpu_run_opts).
 * Any mismatch aborts, with the case on stderr.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../definition.h"
#include "cpu_internal.h"
#include "histd/histd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_N 40
#define MAX_BINS 4096 /* a default count above this is validated, not run */

static const double table[64] = {
    0,        0x1p-1074, 1e-320,      0x1p-1022,   0x1p-1000, 1e-300,  0x1p-600,  0x1p-251,
    0x1p-250, 0x1p-249,  1e-200,      1e-100,      0x1p-60,   1e-10,   0x1p-20,   1e-3,
    0.1,      0.25,      1.0 / 3,     0.5,         2.0 / 3,   0.75,    1,         1.25,
    1.5,      2,         2.5,         3,           4,         5,       7,         10,
    16,       100,       255.5,       500,         1000,      1024,    23000,     0x1p20,
    1e6,      0x1p24,    1e10,        0x1p40,      1e13,      0x1p52,  0x1p53,    0x1p60,
    1e20,     1e50,      1e100,       0x1p249,     0x1p250,   0x1p251, 1e200,     0x1p512,
    1e300,    0x1p1000,  DBL_MAX / 4, DBL_MAX / 2, DBL_MAX,   0.3,     0.1 + 0.2, 6,
};

typedef struct reader {
  const uint8_t *p;
  size_t n, at;
} reader;

static uint8_t byte(reader *r) { return r->at < r->n ? r->p[r->at++] : 0; }

/* b0: bits 0-5 the entry, bit 6 the sign, bit 7 a multiplier 2..33 from
 * b1's top bits; b1's low 3 bits move it -3..4 ulps. */
static double value(reader *r) {
  const uint8_t b0 = byte(r), b1 = byte(r);
  double v = table[b0 & 63];
  if (b0 & 128)
    v *= (double)((b1 >> 3) + 2);
  for (int u = (b1 & 7) - 3; u != 0; u += u < 0 ? 1 : -1)
    v = nextafter(v, u < 0 ? -INFINITY : INFINITY);
  return b0 & 64 ? -v : v;
}

/* ---- the contract ------------------------------------------------------------ */

/* The box for definition.h's rule. */
static def_box def_of(const histd_box *b) {
  return (def_box){(int)b->kind, b->ax, b->bx, b->by, b->cx, b->cy, b->cz};
}

static double distance(const histd_box *box, const histd_dataset *a, size_t i,
                       const histd_dataset *c, size_t j) {
  const def_box b = def_of(box);
  return definition_box_distance(&b, a->x[i], a->y[i], a->z[i], c->x[j], c->y[j], c->z[j]);
}

/* Collisions (within 0): each point reduced by the minimum image of its
 * own coordinates, then equal x, y and z (collide.c's rule, -0 = +0). */
static bool collide(const histd_box *box, const histd_dataset *a, size_t i, const histd_dataset *c,
                    size_t j) {
  const def_box b = def_of(box);
  double p[3] = {a->x[i], a->y[i], a->z[i]}, q[3] = {c->x[j], c->y[j], c->z[j]};
  definition_min_image(&b, &p[0], &p[1], &p[2]);
  definition_min_image(&b, &q[0], &q[1], &q[2]);
  return p[0] == q[0] && p[1] == q[1] && p[2] == q[2];
}

/* The expected result: slots 0..count-1 the bins (of both axes), count
 * below, count + 1 overflow; weighted sums, ravg's sums of (w_i w_j) u, and
 * their magnitudes in long double. */
typedef struct expect {
  uint32_t count;
  uint64_t slot[MAX_BINS + 2], total;
  long double sum[MAX_BINS + 2], mag[MAX_BINS + 2], rsum[MAX_BINS + 2], rmag[MAX_BINS + 2];
} expect;

/* The slot of pair (i of a, j of c), and in *u the value axis 1 bins. */
static uint32_t slot_of(const histd_problem *p, const histd_bins *bins, const histd_box *box,
                        const histd_dataset *a, size_t i, const histd_dataset *c, size_t j,
                        double *u) {
  *u = 0;
  if (p->statistic == HISTD_STAT_WITHIN)
    return distance(box, a, i, c, j) <= p->radius ? 0 : 2; /* [0, R], else overflow */
  const def_box b = def_of(box);
  const int axes = p->statistic == HISTD_STAT_RP_PI ? DEF_RP_PI
                   : p->statistic == HISTD_STAT_S_MU ? DEF_S_MU
                                                     : DEF_D;
  return definition_slot2(axes, p->los_midpoint, &b, bins->width,
                          bins->kind == HISTD_BINS_EDGES ? bins->edges : NULL, bins->count,
                          bins->max2, bins->count2 ? bins->count2 : 1, a->x[i], a->y[i], a->z[i],
                          c->x[j], c->y[j], c->z[j], u);
}

static void expect_pair(expect *e, const histd_problem *p, const histd_bins *bins,
                        const histd_box *box, const histd_dataset *a, size_t i,
                        const histd_dataset *c, size_t j) {
  uint32_t s;
  double u = 0;
  if (p->statistic == HISTD_STAT_WITHIN && p->radius == 0)
    s = collide(box, a, i, c, j) ? 0 : 2;
  else
    s = slot_of(p, bins, box, a, i, c, j, &u);
  e->slot[s]++;
  e->total++;
  const long double w = p->weighted ? (long double)a->w[i] * c->w[j] : 1;
  e->sum[s] += w;
  e->mag[s] += fabsl(w);
  e->rsum[s] += w * u;
  e->rmag[s] += fabsl(w * u);
}

/* Every pair of every frame: A's frames each in its own box (frame_boxes)
 * or the job's, with itself (i < j) or with B's one frame. */
static void expect_all(expect *e, const histd_problem *p, const histd_bins *bins) {
  memset(e, 0, sizeof *e);
  e->count = bins->count * (bins->count2 ? bins->count2 : 1);
  const histd_dataset *a = p->a;
  const size_t frames = a->frames > 1 ? a->frames : 1;
  for (size_t f = 0; f < frames; f++) {
    const size_t s = frames > 1 ? a->frame[f].start : 0, n = frames > 1 ? a->frame[f].n : a->n;
    const histd_box *box = !p->frame_boxes ? &p->box : frames > 1 ? &a->frame[f].box : &a->box;
    for (size_t i = s; i < s + n; i++) {
      if (p->b != NULL)
        for (size_t j = 0; j < p->b->n; j++)
          expect_pair(e, p, bins, box, a, i, p->b, j);
      else
        for (size_t j = i + 1; j < s + n; j++)
          expect_pair(e, p, bins, box, a, i, a, j);
    }
  }
}

/* ---- checking a run ----------------------------------------------------------- */

static void fail(const char *what, const char *kernel, const char *why) {
  fprintf(stderr, "fuzz_engine: %s on %s: %s\n", what, kernel, why);
  abort();
}

/* A refusal is a sentence: non-empty, terminated. */
static void check_refusal(int rc, const char *msg, size_t msglen, const char *kernel) {
  if (rc >= 0 || msg[0] == '\0' || memchr(msg, '\0', msglen) == NULL)
    fail("a refusal without a sentence", kernel, msg);
}

/* A sum per slot within 1e-12 of the contract's, relative to the sum of
 * its terms' magnitudes, plus 2^-1074 for each of its terms (terms[k], or
 * none where terms is NULL) that may underflow in binary64: ravg's (w_i
 * w_j) u below 2^-1022 (histd_ev_sum; the weights' products are kept
 * normal by the weights' check). */
static void check_sums(const char *what, const double *got, const long double *want,
                       const long double *mag, const uint64_t *terms, uint32_t count,
                       const char *kernel, const char *device) {
  for (uint32_t k = 0; k < count; k++)
    if (!(fabsl((long double)got[k] - want[k]) <=
          1e-12L * mag[k] + (terms != NULL ? (long double)terms[k] * 0x1p-1074L : 0))) {
      fprintf(stderr, "bin %u: %s sum %.17g, the contract %.17Lg (magnitudes %.3Lg)\n", k, what,
              got[k], want[k], mag[k]);
      fail("a sum beyond 1e-12 of the contract", kernel, device);
    }
}

static void check_result(const histd_problem *p, const histd_result *r, const char *kernel) {
  expect *e = malloc(sizeof *e);
  const histd_bins *bins = &r->bins;
  if (p->statistic == HISTD_STAT_WITHIN && bins->count != 1)
    fail("within R has one bin", kernel, "");
  if (histd_bins_slots(bins) > MAX_BINS)
    fail("more bins than the case allows", kernel, "");
  expect_all(e, p, bins);
  const uint32_t count = e->count;
  uint64_t sum = r->below + r->overflow;
  for (uint32_t k = 0; k < count; k++)
    sum += r->counts[k];
  if (sum != r->total || r->total != e->total)
    fail("sum(counts) + below + overflow = total = the pairs", kernel, "");
  const bool exact = r->exact || p->statistic == HISTD_STAT_WITHIN;
  if (exact) {
    for (uint32_t k = 0; k < count; k++)
      if (r->counts[k] != e->slot[k]) {
        fprintf(stderr, "bin %u: %llu, the contract %llu\n", k, (unsigned long long)r->counts[k],
                (unsigned long long)e->slot[k]);
        fail("counts differ from the contract", kernel, r->device);
      }
    if (r->below != e->slot[count] || r->overflow != e->slot[count + 1]) {
      fprintf(stderr, "below %llu (contract %llu), overflow %llu (contract %llu)\n",
              (unsigned long long)r->below, (unsigned long long)e->slot[count],
              (unsigned long long)r->overflow, (unsigned long long)e->slot[count + 1]);
      fail("below or overflow differ from the contract", kernel, r->device);
    }
    if (p->statistic == HISTD_STAT_WITHIN && r->within != e->slot[0])
      fail("within differs from the contract", kernel, r->device);
  }
  if (exact && p->statistic == HISTD_STAT_HISTOGRAM && p->bins.kind == HISTD_BINS_WIDTH &&
      p->bins.count == 0 && p->box.kind == HISTD_BOX_NONE && !p->frame_boxes && r->overflow != 0)
    fail("the default count covers every pair", kernel, r->device);
  if (exact && ((p->weighted && r->weighted == NULL) || (p->ravg && r->rsum == NULL)))
    fail("a sum the job asks is missing", kernel, r->device);
  if (exact && p->weighted)
    check_sums("weighted", r->weighted, e->sum, e->mag, NULL, count, kernel, r->device);
  if (exact && p->ravg)
    check_sums("ravg", r->rsum, e->rsum, e->rmag, e->slot, count, kernel, r->device);
  free(e);
}

/* Frame f's points of ds: [*start, *start + *n) (a one-frame set: all). */
static void frame_range(const histd_dataset *ds, size_t f, size_t *start, size_t *n) {
  const bool one = ds->frames <= 1;
  *start = one ? 0 : ds->frame[f].start;
  *n = one ? ds->n : ds->frame[f].n;
}

static const histd_box *frame_box(const histd_problem *p, size_t f) {
  const histd_dataset *a = p->a;
  return !p->frame_boxes ? &p->box : a->frames > 1 ? &a->frame[f].box : &a->box;
}

/* A count per point and the nearest point: row f * n + i of frame f's
 * point i, against its partners in B's frame (B's only frame, or A's own
 * frame without i). */
static void check_points(const histd_problem *p, const histd_result *r, const char *kernel) {
  const size_t frames = histd_problem_frames(p);
  for (size_t f = 0; f < frames; f++) {
    size_t sa, na, sb, nb;
    frame_range(p->a, f, &sa, &na);
    const histd_dataset *b = p->b != NULL ? p->b : p->a;
    frame_range(b, p->b != NULL && p->b->frames <= 1 ? 0 : f, &sb, &nb);
    if (r->point_n != na)
      fail("a row per point of the frame", kernel, "");
    for (size_t i = 0; i < na; i++) {
      uint64_t count = 0;
      long double sum = 0, mag = 0;
      double best = 0;
      int64_t best_j = -1;
      for (size_t j = 0; j < nb; j++) {
        if (p->b == NULL && j == i)
          continue;
        const double d = distance(frame_box(p, f), p->a, sa + i, b, sb + j);
        if (!(d <= p->radius))
          continue;
        count++;
        if (p->weighted) {
          sum += b->w[sb + j];
          mag += fabsl((long double)b->w[sb + j]);
        }
        if (best_j < 0 || d < best)
          best = d, best_j = (int64_t)j;
      }
      const size_t row = f * na + i;
      if (p->statistic == HISTD_STAT_POINT_COUNTS &&
          (r->point_counts[row] != count ||
           (p->weighted && !(fabsl(r->point_weighted[row] - sum) <= 1e-12L * mag)))) {
        fprintf(stderr, "frame %zu point %zu: %llu partners (the contract %llu)\n", f, i,
                (unsigned long long)r->point_counts[row], (unsigned long long)count);
        fail("a count per point differs from the contract", kernel, r->device);
      }
      if (p->statistic == HISTD_STAT_NEAREST &&
          (r->nearest_j[row] != best_j || (best_j >= 0 && r->nearest_d[row] != best) ||
           (best_j < 0 && !isnan(r->nearest_d[row])))) {
        fprintf(stderr, "frame %zu point %zu: nearest %lld at %a (the contract %lld at %a)\n", f, i,
                (long long)r->nearest_j[row], r->nearest_d[row], (long long)best_j, best);
        fail("the nearest point differs from the contract", kernel, r->device);
      }
    }
  }
}

/* The pairs within R, as a list the run handed out (fuzz_engine's sink). */
typedef struct records {
  histd_pair_record *r;
  size_t n, cap;
} records;

static int collect(void *user, const histd_pair_record *r, size_t n, char *msg, size_t msglen) {
  (void)msg, (void)msglen;
  records *o = user;
  if (o->n + n > o->cap) {
    o->cap = 2 * (o->n + n);
    o->r = realloc(o->r, o->cap * sizeof *o->r);
    if (o->r == NULL)
      abort();
  }
  memcpy(o->r + o->n, r, n * sizeof *r);
  o->n += n;
  return 0;
}

static int record_cmp(const void *x, const void *y) {
  const histd_pair_record *a = x, *b = y;
  if (a->frame != b->frame)
    return a->frame < b->frame ? -1 : 1;
  if (a->i != b->i)
    return a->i < b->i ? -1 : 1;
  return a->j < b->j ? -1 : a->j > b->j ? 1 : 0;
}

static void check_pairs(const histd_problem *p, const histd_result *r, records *got,
                        const char *kernel) {
  records want = {NULL, 0, 0};
  for (size_t f = 0, frames = histd_problem_frames(p); f < frames; f++) {
    size_t sa, na, sb, nb;
    frame_range(p->a, f, &sa, &na);
    const histd_dataset *b = p->b != NULL ? p->b : p->a;
    frame_range(b, p->b != NULL && p->b->frames <= 1 ? 0 : f, &sb, &nb);
    for (size_t i = 0; i < na; i++)
      for (size_t j = p->b != NULL ? 0 : i + 1; j < nb; j++) {
        const double d = distance(frame_box(p, f), p->a, sa + i, b, sb + j);
        const histd_pair_record rec = {f, i, j, d};
        if (d <= p->radius)
          collect(&want, &rec, 1, NULL, 0);
      }
  }
  if (want.n > 1) /* qsort's array may not be NULL, even for none */
    qsort(want.r, want.n, sizeof *want.r, record_cmp);
  if (got->n > 1)
    qsort(got->r, got->n, sizeof *got->r, record_cmp);
  bool same = got->n == want.n && r->pairs == got->n;
  for (size_t k = 0; same && k < got->n; k++)
    same = record_cmp(&got->r[k], &want.r[k]) == 0 && got->r[k].d == want.r[k].d;
  if (!same) {
    fprintf(stderr, "%zu records (%llu counted), the contract %zu\n", got->n,
            (unsigned long long)r->pairs, want.n);
    fail("the pairs within R differ from the contract", kernel, r->device);
  }
  free(want.r);
}

/* The cpu kernel once more with the knobs of byte 4 (one frame, not
 * collisions: those are the worker's, not the kernel's). */
static void run_knobs(const histd_problem *p, const histd_exec *ex, uint8_t how) {
  if (histd_dataset_frames(p->a) > 1 || p->statistic > HISTD_STAT_WITHIN ||
      (p->statistic == HISTD_STAT_WITHIN && p->radius == 0))
    return;
  static const cpu_isa isas[4] = {CPU_ISA_AUTO, CPU_ISA_GENERIC, CPU_ISA_AVX2, CPU_ISA_AVX512};
  const cpu_options opt = {isas[(how >> 2) & 3], (how & 16) ? CPU_PATH_F64 : CPU_PATH_AUTO,
                           (how & 32) ? 16 : 0, 0, (int)((how >> 6) % 3) - 1};
  if (!histd__cpu_isa_supported(opt.isa == CPU_ISA_AUTO ? CPU_ISA_GENERIC : opt.isa))
    return;
  char msg[256] = "";
  double within[2];
  histd_problem rp;
  if (histd__problem_resolve(p, within, &rp, msg, sizeof msg) != 0 ||
      histd__weights_check(p, msg, sizeof msg) != 0)
    return;
  histd_result res;
  if (histd_result_for(&res, &rp, msg, sizeof msg) != 0)
    return;
  res.total = histd_problem_pairs(&rp);
  int rc = histd__cpu_run_opts(&rp, ex, NULL, &opt, &res, NULL, msg, sizeof msg);
  if (rc != 0) {
    check_refusal(rc, msg, sizeof msg, "cpu (knobs)");
  } else {
    res.within = rp.statistic == HISTD_STAT_WITHIN ? res.counts[0] : 0;
    check_result(p, &res, "cpu (knobs)");
  }
  histd_result_free(&res);
}

/* The case, for FUZZ_ENGINE_VERBOSE: every number to the bit. */
static void dump(const histd_problem *p) {
  const histd_box *b = &p->box;
  fprintf(stderr, "box %d: %a %a %a %a %a %a; frame boxes %d; statistic %d, radius %a\n",
          (int)b->kind, b->ax, b->bx, b->by, b->cx, b->cy, b->cz, (int)p->frame_boxes,
          (int)p->statistic, p->radius);
  fprintf(stderr, "bins %d, count %u, width %a, edges", (int)p->bins.kind, p->bins.count,
          p->bins.width);
  for (uint32_t k = 0; p->bins.kind == HISTD_BINS_EDGES && k <= p->bins.count; k++)
    fprintf(stderr, " %a", p->bins.edges[k]);
  fputc('\n', stderr);
  fprintf(stderr, "axis 2: %u bins to %a; ravg %d, midpoint %d\n", p->bins.count2, p->bins.max2,
          (int)p->ravg, (int)p->los_midpoint);
  const histd_dataset *sets[2] = {p->a, p->b};
  for (int s = 0; s < 2 && sets[s] != NULL; s++) {
    const histd_dataset *d = sets[s];
    for (size_t i = 0; i < d->n; i++)
      fprintf(stderr, "%c%zu: %a %a %a w %a\n", s ? 'B' : 'A', i, d->x[i], d->y[i], d->z[i],
              d->w ? d->w[i] : 0.0);
  }
}

/* ---- the case ---------------------------------------------------------------------- */

static histd_box read_box(reader *r, int kind) {
  histd_box b = {HISTD_BOX_NONE, 0, 0, 0, 0, 0, 0};
  if (kind == 1) {
    b.kind = HISTD_BOX_ORTHO;
    b.ax = value(r), b.by = value(r), b.cz = value(r);
  } else if (kind == 2) {
    b.kind = HISTD_BOX_TRICLINIC;
    b.ax = value(r), b.bx = value(r), b.by = value(r);
    b.cx = value(r), b.cy = value(r), b.cz = value(r);
  }
  return b;
}

/* n points (and weights), each coordinate offset + value; false where one
 * is not finite. */
static bool read_points(reader *r, size_t n, bool weighted, histd_dataset *ds) {
  if (histd_dataset_alloc(ds, n, NULL, 0) != 0)
    abort();
  if (weighted && histd_dataset_alloc_weights(ds, NULL, 0) != 0)
    abort();
  const double off = value(r);
  double *c[3] = {ds->x, ds->y, ds->z};
  for (size_t i = 0; i < n; i++)
    for (int k = 0; k < 3; k++)
      c[k][i] = off + value(r);
  for (size_t i = 0; weighted && i < n; i++)
    ds->w[i] = value(r);
  char msg[256];
  return histd_dataset_finish(ds, msg, sizeof msg) == 0;
}

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return a < b ? -1 : a > b ? 1 : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  reader r = {data, size, 0};
  const uint8_t shape = byte(&r), na = byte(&r), nb = byte(&r), nbins = byte(&r), how = byte(&r);
  const int box_kind = (shape & 3) == 3 ? 0 : shape & 3, bins_kind = (shape >> 2) & 3;
  const bool radial = shape & 16, weighted = shape & 32, cross = shape & 64, frames = shape & 128;
  const histd_statistic stat =
      radial ? (histd_statistic)(HISTD_STAT_WITHIN + bins_kind) : HISTD_STAT_HISTOGRAM;
  const uint32_t count = 1 + nbins % 12;
  histd_box boxes[2];
  boxes[0] = read_box(&r, box_kind);
  boxes[1] = frames ? read_box(&r, box_kind) : boxes[0];
  double edges[14];
  histd_bins bins = {HISTD_BINS_WIDTH, count, 0, NULL, 0, 0};
  if (radial) {
    /* no bins: a statistic of the radius alone */
  } else if (bins_kind <= 1) {
    bins.width = value(&r);
    bins.count = bins_kind == 1 ? 0 : count;
  } else if (bins_kind == 2) {
    for (uint32_t k = 0; k <= count; k++)
      edges[k] = value(&r);
    qsort(edges, count + 1, sizeof *edges, cmp_double);
    bins = (histd_bins){HISTD_BINS_EDGES, count, 0, edges, 0, 0};
  } else {
    const double lo = value(&r), hi = value(&r);
    if (histd_log_edges(lo, hi, count, edges, NULL, 0) != 0)
      return 0; /* test_spec checks its refusals */
    bins = (histd_bins){HISTD_BINS_EDGES, count, 0, edges, 0, 0};
  }
  double radius = radial ? value(&r) : 0;
  if (stat == HISTD_STAT_NEAREST && radius == 0)
    radius = INFINITY; /* the nearest anywhere */

  histd_dataset a, b;
  memset(&b, 0, sizeof b);
  const size_t n_a = 1 + na % MAX_N, n_b = 1 + nb % MAX_N;
  bool ok = read_points(&r, n_a, weighted, &a);
  if (cross)
    ok = read_points(&r, n_b, weighted, &b) && ok;
  const uint8_t ext = byte(&r); /* byte 5, after the points */
  const double max2 = value(&r);
  const int axes = radial ? 0 : ext & 3;
  const size_t split[2] = {n_a / 2, n_a - n_a / 2};
  if (ok && frames && n_a >= 2 && histd_dataset_set_frames(&a, 2, split, boxes, NULL, 0) != 0)
    abort();
  histd_problem p;
  memset(&p, 0, sizeof p);
  p.a = &a;
  p.b = cross ? &b : NULL;
  p.box = boxes[0];
  p.frame_boxes = frames && n_a >= 2;
  if (p.frame_boxes)
    a.box = boxes[0];
  p.bins = bins;
  p.statistic = stat;
  p.radius = radius;
  p.weighted = weighted;
  if (axes == 1 || axes == 2) {
    p.statistic = axes == 1 ? HISTD_STAT_RP_PI : HISTD_STAT_S_MU;
    p.bins.count2 = 1 + (ext >> 4) % 8;
    p.bins.max2 = max2;
    p.los_midpoint = (ext & 8) != 0;
  }
  p.ravg = !radial && (ext & 4);

  char msg[256] = "";
  int rc = ok ? histd_problem_validate(&p, msg, sizeof msg) : HISTD_EINVAL;
  const bool verbose = getenv("FUZZ_ENGINE_VERBOSE") != NULL;
  if (ok && rc != 0)
    check_refusal(rc, msg, sizeof msg, "histd_problem_validate");
  if (verbose) {
    fprintf(stderr, "fuzz_engine: %s\n", !ok ? "a coordinate is not finite" : rc ? msg : "valid");
    if (ok)
      dump(&p);
  }
  uint32_t resolved = count;
  if (ok && rc == 0 && !radial && bins_kind == 1 &&
      histd_default_bins(&p, &resolved, msg, sizeof msg) != 0)
    check_refusal(HISTD_EINVAL, msg, sizeof msg, "histd_default_bins");
  if (ok && rc == 0 && (uint64_t)resolved * (p.bins.count2 ? p.bins.count2 : 1) <= MAX_BINS) {
    histd_exec ex;
    histd_exec_init(&ex);
    ex.threads = (how & 1) ? 2 : 1;
    ex.precision = (how & 2) ? HISTD_PRECISION_FAST : HISTD_PRECISION_EXACT;
    histd_worker *w;
    if (histd_worker_create(&w, -1, msg, sizeof msg) != 0)
      abort();
    int auto_rc = 0, reference_rc = -1; /* auto runs what the literal contract runs */
    char auto_msg[256] = "";
    for (size_t i = 0; i < histd_kernel_count(); i++) {
      const histd_kernel *k = histd_kernel_at(i);
      if (k->engine == HISTD_ENGINE_CUDA || !histd_kernel_can(k, &p, NULL, 0))
        continue;
      snprintf(ex.kernel, sizeof ex.kernel, "%s", k->name);
      histd_result res;
      records got = {NULL, 0, 0};
      const histd_control ctl = {NULL, NULL, &got, collect};
      msg[0] = '\0';
      rc = histd_worker_run(w, &p, &ex, &ctl, &res, msg, sizeof msg);
      if (strcmp(k->name, "auto") == 0) {
        auto_rc = rc;
        memcpy(auto_msg, msg, sizeof auto_msg);
      } else if (strcmp(k->name, "cpu-reference") == 0) {
        reference_rc = rc;
      }
      if (rc != 0) {
        check_refusal(rc, msg, sizeof msg, k->name);
        if (verbose)
          fprintf(stderr, "fuzz_engine: %s refused: %s\n", k->name, msg);
        free(got.r);
        continue;
      }
      if (p.statistic == HISTD_STAT_PAIRS)
        check_pairs(&p, &res, &got, k->name);
      else if (histd_statistic_per_point(p.statistic))
        check_points(&p, &res, k->name);
      else
        check_result(&p, &res, k->name);
      free(got.r);
      histd_result_free(&res);
    }
    if (auto_rc != 0 && reference_rc == 0)
      fail("auto refused what cpu-reference runs", "auto", auto_msg);
    histd_worker_destroy(w);
    run_knobs(&p, &ex, how);
  }
  histd_dataset_free(&a);
  histd_dataset_free(&b);
  return 0;
}
