/*
 * test_bins2.c -- counts in bins of two axes (the statistics rp_pi and
 * s_mu) against a brute force written here from the rules in
 * shared/DESIGN.md, independently of the engine:
 *
 *   - dx, dy, dz = i - j, the periodic minimum image per axis
 *     (definition.h);
 *   - line of sight z: r_p = sqrt(dx*dx + dy*dy), pi = |dz|;
 *     midpoint: s = v_i - v_j, l = v_i + v_j, pi = |s.l| / sqrt(l.l) (0
 *     when l.l = 0), r_p = sqrt(max(s.s - pi*pi, 0)), each dot product
 *     (x + y) + z; s = sqrt(s.s) and mu = pi / s (0 when s.s = 0);
 *   - axis 2 in n2 equal bins of width fl(max2 / n2) from 0: pi beyond
 *     its range when pi >= pi_max, mu when mu > mu_max; else floor(v /
 *     width2), the last bin where that reaches n2; axis 1 by
 *     definition_slot (floor(u / w), or E[k] <= u < E[k+1] by a scan);
 *   - a pair with axis 2 out of range, or axis 1 at or past its last
 *     edge, counts in overflow; axis 1 below E[0] (axis 2 in range) in
 *     below; weighted sums in long double, within 1e-12 of the sum of
 *     |w_i w_j| in the bin;
 *
 * on random, clustered and lattice sets (the lattice puts pairs exactly on
 * r_p, pi and mu edges), periodic boxes with pi across the box's z edge,
 * A x B and A = B, weights, the midpoint line of sight on a shell of
 * points far from the origin (and a pair through the origin: l.l = 0),
 * on every kernel that takes them (and "grid" and "auto" on the GPU where
 * there is one, histd_run); on the GPU also pairs placed on and beside
 * every boundary of s, r_p, pi and mu, for the grid's float32 bins and
 * tiled-stats' float32 pairs (near_edges), and pairs about half the box
 * for the latter's float32 image (half_box); and the refusals, each with
 * its sentence.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "../gpus.h"
#include "../definition.h"
#include "histd/histd.h"
#include "histd/params.h"

static uint64_t seed = 20261128;
static double rnd(void) { /* splitmix64 -> [0, 1) */
  uint64_t z = (seed += 0x9E3779B97F4A7C15u);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
  return (double)((z ^ (z >> 31)) >> 11) * 0x1p-53;
}
static double gauss(void) {
  double u = rnd(), v = rnd();
  return sqrt(-2 * log(u > 0 ? u : 0x1p-60)) * cos(6.283185307179586 * v);
}

/* where there is a GPU, grid and auto run on it, and tiled-stats too */
static const char *const kernels[] = {"cpu-reference", "cpu", "grid", "auto", "tiled-stats"};
static size_t nkernels = 4;
#define NKERNELS nkernels

/* ---- the definition ---------------------------------------------------------- */

typedef struct want {
  uint64_t *counts, below, overflow, total;
  long double *w, *wabs, *r, *rabs; /* weighted sums; ravg's sums of (w_i w_j) u */
} want;

/* The slot of pair (i, j) by definition.h's rule of two axes. */
static uint32_t def_slot(const histd_problem *p, const def_box *bx, const histd_dataset *a,
                         size_t i, const histd_dataset *b, size_t j, double *u_out) {
  const histd_bins *bins = &p->bins;
  const int axes = p->statistic == HISTD_STAT_RP_PI ? DEF_RP_PI
                   : p->statistic == HISTD_STAT_S_MU ? DEF_S_MU
                                                     : DEF_D;
  return definition_slot2(axes, p->los_midpoint, bx, bins->width,
                          bins->kind == HISTD_BINS_EDGES ? bins->edges : NULL, bins->count,
                          bins->max2, bins->count2 ? bins->count2 : 1, a->x[i], a->y[i], a->z[i],
                          b->x[j], b->y[j], b->z[j], u_out);
}

static uint32_t slots_of(const histd_bins *b) { return b->count * (b->count2 ? b->count2 : 1); }

static void definition(const histd_problem *p, want *W) {
  const uint32_t slots = slots_of(&p->bins);
  W->counts = calloc(slots, sizeof *W->counts);
  W->w = calloc(slots + 2, sizeof *W->w);
  W->wabs = calloc(slots + 2, sizeof *W->wabs);
  W->r = calloc(slots + 2, sizeof *W->r);
  W->rabs = calloc(slots + 2, sizeof *W->rabs);
  W->below = W->overflow = W->total = 0;
  def_box bx = {p->box.kind == HISTD_BOX_NONE ? 0 : p->box.kind == HISTD_BOX_ORTHO ? 1 : 2,
                p->box.ax, p->box.bx, p->box.by, p->box.cx, p->box.cy, p->box.cz};
  const histd_dataset *a = p->a, *b = p->b ? p->b : p->a;
  for (size_t i = 0; i < a->n; i++)
    for (size_t j = p->b ? 0 : i + 1; j < b->n; j++) {
      double u;
      uint32_t s = def_slot(p, &bx, a, i, b, j, &u);
      if (s < slots)
        W->counts[s]++;
      else if (s == slots)
        W->below++;
      else
        W->overflow++;
      W->total++;
      long double ww = p->weighted ? (long double)a->w[i] * b->w[j] : 1;
      W->w[s] += ww;
      W->wabs[s] += fabsl(ww);
      W->r[s] += ww * u;
      W->rabs[s] += fabsl(ww * u);
    }
}

static void want_free(want *W) {
  free(W->counts);
  free(W->w);
  free(W->wabs);
  free(W->r);
  free(W->rabs);
}

/* ---- the sets ------------------------------------------------------------- */

static void make(histd_dataset *ds, size_t n, bool weights) {
  char msg[256];
  CHECK(histd_dataset_alloc(ds, n, msg, sizeof msg) == 0, "%s", msg);
  if (weights)
    CHECK(histd_dataset_alloc_weights(ds, msg, sizeof msg) == 0, "%s", msg);
}
static void finish(histd_dataset *ds) {
  char msg[256];
  CHECK(histd_dataset_finish(ds, msg, sizeof msg) == 0, "%s", msg);
}

static void uniform(histd_dataset *ds, size_t n, double side, bool weights) {
  make(ds, n, weights);
  for (size_t i = 0; i < n; i++) {
    ds->x[i] = side * rnd();
    ds->y[i] = side * rnd();
    ds->z[i] = side * rnd();
    if (weights)
      ds->w[i] = 0.25 + rnd();
  }
  finish(ds);
}

/* Gaussian clumps of spread sigma around random centres in [0, side)^3. */
static void clumps(histd_dataset *ds, size_t n, double side, double sigma) {
  make(ds, n, true);
  double cx = 0, cy = 0, cz = 0;
  for (size_t i = 0; i < n; i++) {
    if (i % 40 == 0)
      cx = side * rnd(), cy = side * rnd(), cz = side * rnd();
    ds->x[i] = fmod(fabs(cx + sigma * gauss()), side);
    ds->y[i] = fmod(fabs(cy + sigma * gauss()), side);
    ds->z[i] = fmod(fabs(cz + sigma * gauss()), side);
    ds->w[i] = rnd() < 0.5 ? 1 : 0.5 + rnd();
  }
  finish(ds);
}

/* An integer lattice k^3: r_p, pi and s land on whole numbers and roots. */
static void lattice(histd_dataset *ds, int k) {
  make(ds, (size_t)k * k * k, false);
  size_t n = 0;
  for (int x = 0; x < k; x++)
    for (int y = 0; y < k; y++)
      for (int z = 0; z < k; z++, n++)
        ds->x[n] = x, ds->y[n] = y, ds->z[n] = z;
  finish(ds);
}

/* Points on a shell of radii [r0, r0 + dr) around the origin, as a sky
 * catalogue's comoving positions; two of them opposite (l.l = 0). */
static void shell(histd_dataset *ds, size_t n, double r0, double dr) {
  make(ds, n, true);
  for (size_t i = 0; i < n; i++) {
    double u = 2 * rnd() - 1, ph = 6.283185307179586 * rnd(), r = r0 + dr * rnd();
    double c = sqrt(1 - u * u);
    ds->x[i] = r * c * cos(ph);
    ds->y[i] = r * c * sin(ph);
    ds->z[i] = r * u;
    ds->w[i] = 0.5 + rnd();
  }
  ds->x[1] = -ds->x[0], ds->y[1] = -ds->y[0], ds->z[1] = -ds->z[0];
  finish(ds);
}

/* ---- the checks ------------------------------------------------------------ */

static int run(const histd_problem *p, const char *kernel, histd_result *r, char *msg,
               size_t msglen) {
  histd_exec ex;
  histd_exec_init(&ex);
  snprintf(ex.kernel, sizeof ex.kernel, "%s", kernel);
  return histd_run(p, &ex, NULL, r, msg, msglen);
}

/* r (kernel's result of p) against the definition W. */
static void check(const histd_problem *p, const want *W, const histd_result *r, const char *what,
                  const char *kernel) {
  const uint32_t slots = slots_of(&p->bins);
  if (p->ravg) {
    CHECK(r->rsum != NULL, "%s on %s: ravg's sums", what, kernel);
    uint32_t off = 0;
    for (uint32_t s = 0; r->rsum != NULL && s < slots; s++)
      if (!(fabsl((long double)r->rsum[s] - W->r[s]) <= 1e-12L * W->rabs[s]) && off++ < 3)
        CHECK(false, "%s on %s: bin %u's ravg sum %.17g, the definition %.17Lg", what, kernel,
              s, r->rsum[s], W->r[s]);
  }
  CHECK(r->statistic == p->statistic && r->bins.count2 == p->bins.count2 &&
            r->bins.max2 == p->bins.max2 && r->los_midpoint == p->los_midpoint,
        "%s on %s: the result's axes", what, kernel);
  uint32_t bad = 0;
  for (uint32_t s = 0; s < slots; s++)
    if (r->counts[s] != W->counts[s] && bad++ < 3)
      CHECK(false, "%s on %s: bin (%u, %u) counts %llu, the definition %llu", what, kernel,
            s / (slots / p->bins.count), s % (slots / p->bins.count),
            (unsigned long long)r->counts[s], (unsigned long long)W->counts[s]);
  CHECK(r->below == W->below && r->overflow == W->overflow && r->total == W->total,
        "%s on %s: below %llu overflow %llu total %llu, the definition %llu %llu %llu", what,
        kernel, (unsigned long long)r->below, (unsigned long long)r->overflow,
        (unsigned long long)r->total, (unsigned long long)W->below,
        (unsigned long long)W->overflow, (unsigned long long)W->total);
  if (p->weighted) {
    CHECK(r->weighted != NULL, "%s on %s: weighted sums", what, kernel);
    for (uint32_t s = 0; r->weighted != NULL && s < slots; s++)
      CHECK(fabsl((long double)r->weighted[s] - W->w[s]) <= 1e-12L * W->wabs[s],
            "%s on %s: bin %u's weighted sum %.17g, the definition %.17Lg", what, kernel, s,
            r->weighted[s], W->w[s]);
  }
}

static int span_seen = 0;    /* runs whose device names span_word (set: dense_span) */
static char span_word[16] = "";

/* p on the kernels [k0, k1) of the list against the definition. */
static void compare_on(const histd_problem *p, const char *what, size_t k0, size_t k1) {
  want W;
  definition(p, &W);
  const uint32_t slots = slots_of(&p->bins);
  uint64_t inside = 0;
  for (uint32_t s = 0; s < slots; s++)
    inside += W.counts[s];
  CHECK(inside > 0 && W.overflow > 0, "%s: a case that counts pairs in and out (%llu in)", what,
        (unsigned long long)inside);
  for (size_t k = k0; k < k1; k++) {
    histd_result r;
    char msg[512];
    int rc = run(p, kernels[k], &r, msg, sizeof msg);
    CHECK(rc == 0, "%s on %s: %s", what, kernels[k], msg);
    if (rc != 0)
      continue;
    check(p, &W, &r, what, kernels[k]);
    span_seen += span_word[0] != 0 && strstr(r.device, span_word) != NULL;
    histd_result_free(&r);
  }
  want_free(&W);
}

static void compare(const histd_problem *p, const char *what) {
  compare_on(p, what, 0, NKERNELS);
}

static histd_problem problem(const histd_dataset *a, const histd_dataset *b, double box,
                             histd_statistic stat, histd_bins bins) {
  histd_problem p;
  memset(&p, 0, sizeof p);
  p.a = a;
  p.b = b;
  if (box > 0)
    p.box = (histd_box){HISTD_BOX_ORTHO, box, 0, box, 0, 0, box};
  p.statistic = stat;
  p.bins = bins;
  p.weighted = a->w != NULL && (b == NULL || b->w != NULL);
  return p;
}

static void refused(const histd_problem *p, const char *word, const char *what) {
  histd_result r;
  char msg[512] = "";
  int rc = run(p, "cpu", &r, msg, sizeof msg);
  CHECK(rc != 0 && strstr(msg, word) != NULL, "%s: refused, saying \"%s\" (got %d: %s)", what,
        word, rc, msg);
  if (rc == 0)
    histd_result_free(&r);
}

/* Every case above, each against the definition on every kernel. */
static void cases(void) {
  histd_dataset u, v, c, lat, sh, sh2;
  const double log_edges[6] = {0.3, 0.6, 1.2, 2.4, 4.8, 9.6};
  const double lat_edges[5] = {1, 1.5, 2, 2.5, 3}; /* r_p 1, 2, 3: edges; sqrt 2: inside */

  /* random, open and periodic (pi across the box's z edge), self and A x B */
  uniform(&u, 700, 20, true);
  uniform(&v, 500, 20, true);
  histd_problem p = problem(&u, NULL, 0, HISTD_STAT_RP_PI,
                            (histd_bins){HISTD_BINS_EDGES, 5, 0, log_edges, 8, 4});
  compare(&p, "rp_pi, log r_p bins, open, weighted");
  p.ravg = true;
  compare(&p, "rp_pi, open, weighted, ravg");
  p.ravg = false;
  p.box = (histd_box){HISTD_BOX_ORTHO, 20, 0, 20, 0, 0, 20};
  compare(&p, "rp_pi, periodic");
  p.b = &v;
  compare(&p, "rp_pi, periodic, A x B");
  p = problem(&u, &v, 20, HISTD_STAT_S_MU, (histd_bins){HISTD_BINS_WIDTH, 8, 0.75, NULL, 5, 1});
  p.ravg = true;
  compare(&p, "s_mu, equal s bins, periodic, A x B, ravg");
  p.ravg = false;
  p.b = NULL;
  p.box.kind = HISTD_BOX_NONE;
  p.bins.max2 = 0.6;
  compare(&p, "s_mu, mu_max 0.6, open");

  /* clustered: most pairs at small separations */
  clumps(&c, 1200, 50, 1.5);
  p = problem(&c, NULL, 50, HISTD_STAT_RP_PI,
              (histd_bins){HISTD_BINS_EDGES, 5, 0, log_edges, 10, 6});
  compare(&p, "rp_pi, clustered, periodic");
  p = problem(&c, NULL, 50, HISTD_STAT_S_MU,
              (histd_bins){HISTD_BINS_EDGES, 5, 0, log_edges, 7, 1});
  compare(&p, "s_mu, clustered, periodic");
  /* many slots, weighted: the GPU grid keeps its warps' sums in global
   * memory (25 x 50 slots: 30 KB a warp in shared memory) */
  p = problem(&c, NULL, 50, HISTD_STAT_S_MU, (histd_bins){HISTD_BINS_WIDTH, 25, 0.4, NULL, 50, 1});
  p.ravg = true;
  compare(&p, "s_mu, 25 x 50 slots, clustered, periodic, weighted, ravg");
  p = problem(&c, NULL, 50, HISTD_STAT_HISTOGRAM,
              (histd_bins){HISTD_BINS_EDGES, 5, 0, log_edges, 0, 0});
  p.ravg = true;
  compare(&p, "the histogram of d, clustered, periodic, weighted, ravg");
  p.weighted = false;
  compare(&p, "the histogram of d, clustered, periodic, ravg (unweighted: the mean d)");

  /* the lattice: pairs on the edges of r_p (1, 2, 3), pi (pi_max 2 = 2 bins
   * of 1: pi 1 on an edge, pi 2 out) and mu (pairs along z: mu = 1 = mu_max
   * in the last bin; mu 1/sqrt(2) and 1/2 where bins of 1/4 or 1/2 meet) */
  lattice(&lat, 6);
  p = problem(&lat, NULL, 0, HISTD_STAT_RP_PI,
              (histd_bins){HISTD_BINS_EDGES, 4, 0, lat_edges, 2, 2});
  compare(&p, "rp_pi, lattice, open");
  p = problem(&lat, NULL, 6, HISTD_STAT_RP_PI, (histd_bins){HISTD_BINS_WIDTH, 3, 1, NULL, 3, 3});
  compare(&p, "rp_pi, lattice, periodic (the box is 6: pi 3 is half of it)");
  p = problem(&lat, NULL, 0, HISTD_STAT_S_MU, (histd_bins){HISTD_BINS_WIDTH, 3, 1, NULL, 4, 1});
  compare(&p, "s_mu, lattice, mu bins of 1/4");
  p.bins.count2 = 2;
  p.bins.max2 = 0.5;
  compare(&p, "s_mu, lattice, mu_max 1/2 (mu 1/2 in the last bin)");

  /* the midpoint line of sight on a far shell, A x B and self (two
   * points opposite: l.l = 0, pi = 0) */
  shell(&sh, 500, 1000, 40);
  shell(&sh2, 400, 1000, 40);
  const double sky_edges[6] = {1, 4, 8, 16, 32, 64};
  p = problem(&sh, NULL, 0, HISTD_STAT_RP_PI,
              (histd_bins){HISTD_BINS_EDGES, 5, 0, sky_edges, 10, 40});
  p.los_midpoint = true;
  compare(&p, "rp_pi, midpoint, a shell of points");
  p.b = &sh2;
  compare(&p, "rp_pi, midpoint, A x B");
  p = problem(&sh, &sh2, 0, HISTD_STAT_S_MU, (histd_bins){HISTD_BINS_EDGES, 5, 0, sky_edges, 6, 1});
  p.los_midpoint = true;
  p.ravg = true;
  compare(&p, "s_mu, midpoint, A x B, ravg");
  p.ravg = false;
  sh.x[0] = sh.y[0] = sh.z[0] = 0; /* a pair through the origin */
  sh.x[1] = sh.y[1] = sh.z[1] = 0;
  p = problem(&sh, NULL, 0, HISTD_STAT_S_MU,
              (histd_bins){HISTD_BINS_WIDTH, 40, 100, NULL, 6, 1});
  p.los_midpoint = true;
  compare(&p, "s_mu, midpoint, two points at the origin (s.s = 0, l.l = 0)");

  histd_dataset *sets[] = {&u, &v, &c, &lat, &sh, &sh2};
  for (size_t k = 0; k < sizeof sets / sizeof sets[0]; k++)
    histd_dataset_free(sets[k]);
}

/* Dense sets on the GPU's grid at span K (HISTD_GRID_SPAN=K: cells a K-th
 * of the reach, neighbours K cells away, the float32 filter; (r_p, pi) by
 * its cylinder), each run held to the definition and seen at span K. */
static void dense_span(int K) {
  histd_dataset u, v;
  uniform(&u, 12000, 100, true);
  uniform(&v, 7000, 100, true);
  double edges[26];
  for (int k = 0; k <= 25; k++)
    edges[k] = 0.1 * pow(200, k / 25.0); /* 0.1 to 20: a fifth of the box */
  char span[8], what[96];
  snprintf(span, sizeof span, "%d", K);
  snprintf(span_word, sizeof span_word, "of span %d", K);
  setenv("HISTD_GRID_SPAN", span, 1);
  const int before = span_seen;
  const size_t grid = 2; /* kernels[2] */
  static const char *const names[5] = {
      "rp_pi, dense, periodic, weighted (the cylinder)",
      "rp_pi, dense, periodic, A x B, weighted, ravg", "rp_pi, dense, open, weighted",
      "s_mu, dense, periodic, weighted, ravg", "s_mu, dense, periodic, A x B"};
  for (int c = 0; c < 5; c++) {
    histd_problem p;
    if (c < 3)
      p = problem(&u, c == 1 ? &v : NULL, c == 2 ? 0 : 100, HISTD_STAT_RP_PI,
                  (histd_bins){HISTD_BINS_EDGES, 25, 0, edges, 8, 4});
    else
      p = problem(&u, c == 4 ? &v : NULL, 100, HISTD_STAT_S_MU,
                  (histd_bins){HISTD_BINS_EDGES, 25, 0, edges, 10, 1});
    p.ravg = c == 1 || c == 3;
    p.weighted = c != 4;
    snprintf(what, sizeof what, "span %d: %s", K, names[c]);
    compare_on(&p, what, grid, grid + 1);
  }
  unsetenv("HISTD_GRID_SPAN");
  CHECK(span_seen - before == 5, "the dense cases ran at span %d: %d of 5", K,
        span_seen - before);
  histd_dataset_free(&u);
  histd_dataset_free(&v);
}

/* Pairs placed on and beside the boundaries of every axis: for half of
 * them s on an edge of `edges` or a multiple of `width` and mu on a
 * multiple of 1/10, for the other half r_p on one and pi on a whole
 * number, each off by one of `offs` (relative: from a few ulps to past
 * the float32 filter's error, about 1e-5 of a cell), the first point
 * uniform in the box (a quarter within 1 of a face, so that partners
 * wrap). A set of the first points (a) and one of their partners (b),
 * weighted. */
static void near_pairs(histd_dataset *a, histd_dataset *b, size_t pairs, double L,
                       const double *edges, uint32_t ne, double width) {
  static const double offs[] = {0,     0x1p-52, 1e-13, 1e-10, 1e-8, 1e-7,
                                3e-7,  1e-6,    3e-6,  1e-5,  3e-5, 1e-4};
  const size_t no = sizeof offs / sizeof offs[0];
  make(a, pairs, true);
  make(b, pairs, true);
  for (size_t i = 0; i < pairs; i++) {
    double p[3], v[3];
    for (int k = 0; k < 3; k++)
      p[k] = i % 4 == 0 && k == (int)(i / 4 % 3) ? (rnd() < 0.5 ? rnd() : L - rnd()) : L * rnd();
    const double d1 = offs[(size_t)(rnd() * no)] * (rnd() < 0.5 ? -1 : 1);
    const double d2 = offs[(size_t)(rnd() * no)] * (rnd() < 0.5 ? -1 : 1);
    const double e = rnd() < 0.5 ? edges[(size_t)(rnd() * (ne + 1))]
                                 : width * (1 + (size_t)(rnd() * 24));
    const double phi = 6.283185307179586 * rnd(), zs = rnd() < 0.5 ? -1 : 1;
    if (i % 2 == 0) { /* s on e, mu on k / 10 */
      double mu = (size_t)(rnd() * 11) / 10.0 * (1 + d2);
      mu = mu > 1 ? 1 : mu;
      const double rp = sqrt(1 - mu * mu), s = e * (1 + d1);
      v[0] = s * rp * cos(phi), v[1] = s * rp * sin(phi), v[2] = zs * s * mu;
    } else { /* r_p on e, pi on a whole number */
      const double rp = e * (1 + d1), pi = (size_t)(rnd() * 9) * (1 + d2);
      v[0] = rp * cos(phi), v[1] = rp * sin(phi), v[2] = zs * pi;
    }
    double *pa[3] = {a->x, a->y, a->z}, *pb[3] = {b->x, b->y, b->z};
    for (int k = 0; k < 3; k++) {
      pa[k][i] = p[k];
      const double q = p[k] + v[k];
      pb[k][i] = q < 0 ? q + L : q >= L ? q - L : q;
    }
    a->w[i] = 0.25 + rnd();
    b->w[i] = 0.25 + rnd();
  }
  finish(a);
  finish(b);
}

/* The n weighted points of a, then the n of b, as one set (ab). */
static void joined(const histd_dataset *a, const histd_dataset *b, histd_dataset *ab) {
  const size_t n = a->n;
  make(ab, 2 * n, true);
  for (size_t i = 0; i < n; i++) {
    ab->x[i] = a->x[i], ab->y[i] = a->y[i], ab->z[i] = a->z[i], ab->w[i] = a->w[i];
    ab->x[n + i] = b->x[i], ab->y[n + i] = b->y[i], ab->z[n + i] = b->z[i];
    ab->w[n + i] = b->w[i];
  }
  finish(ab);
}

/* p on tiled-stats against the definition W, seen to take its float32
 * pairs (f32_pair.h) and to send some pairs to the contract. */
static void stats_f32(const histd_problem *p, const want *W, const char *name) {
  char what[256];
  snprintf(what, sizeof what, "tiled-stats' float32 pairs: %s", name);
  histd_result r;
  char msg[512];
  int rc = run(p, "tiled-stats", &r, msg, sizeof msg);
  CHECK(rc == 0, "%s: %s", what, msg);
  if (rc != 0)
    return;
  check(p, W, &r, what, "tiled-stats");
  CHECK(strstr(r.device, "float32 pairs and bins") != NULL && r.refined_pairs > 0,
        "%s: float32 pairs, %llu of them by the contract (%s)", what,
        (unsigned long long)r.refined_pairs, r.device);
  histd_result_free(&r);
}

/* The GPU grid's float32 bins (grid_kernels.cu) on near_pairs' sets at
 * spans 1 to 3 (12,000 pairs: enough cells for span 3's float32 filter):
 * every pair they bin is in the contract's bin, those near a boundary go
 * to the contract; each run held to the definition (computed once a
 * case) and seen to take the float32 bins at its span. */
static void near_edges(void) {
  const double L = 100;
  const size_t n = 12000;
  double edges[26];
  for (int k = 0; k <= 25; k++)
    edges[k] = 0.1 * pow(190, k / 25.0); /* 0.1 to 19: 5 cells an axis at span 1 */
  histd_dataset a, b, ab;
  near_pairs(&a, &b, n, L, edges, 25, 0.76);
  joined(&a, &b, &ab); /* a and b as one set: self pairs */
  const histd_bins logb = {HISTD_BINS_EDGES, 25, 0, edges, 0, 0};
  const histd_bins widthb = {HISTD_BINS_WIDTH, 25, 0.76, NULL, 0, 0};
  struct {
    const char *name;
    const histd_dataset *b;
    double box;
    histd_statistic stat;
    histd_bins bins;
  } cs[] = {
      {"the histogram of d, log edges, periodic", NULL, L, HISTD_STAT_HISTOGRAM, logb},
      {"the histogram of d, width bins, periodic, A x B", &b, L, HISTD_STAT_HISTOGRAM, widthb},
      {"rp_pi, log edges, pi bins of 1, periodic", NULL, L, HISTD_STAT_RP_PI, logb},
      {"rp_pi, width bins, open, A x B", &b, 0, HISTD_STAT_RP_PI, widthb},
      {"s_mu, log edges, mu bins of 1/10, periodic", NULL, L, HISTD_STAT_S_MU, logb},
      {"s_mu, width bins, mu_max 1/2, periodic, A x B", &b, L, HISTD_STAT_S_MU, widthb},
  };
  for (size_t c = 0; c < sizeof cs / sizeof cs[0]; c++) {
    histd_problem p =
        problem(cs[c].b != NULL ? &a : &ab, cs[c].b, cs[c].box, cs[c].stat, cs[c].bins);
    if (cs[c].stat == HISTD_STAT_RP_PI)
      p.bins.count2 = 8, p.bins.max2 = 8;
    if (cs[c].stat == HISTD_STAT_S_MU)
      p.bins.count2 = c == 5 ? 5 : 10, p.bins.max2 = c == 5 ? 0.5 : 1;
    want W;
    definition(&p, &W);
    for (int K = 1; K <= 3; K++) {
      char span[8], what[128], word[40];
      snprintf(span, sizeof span, "%d", K);
      setenv("HISTD_GRID_SPAN", span, 1);
      snprintf(what, sizeof what, "near edges, span %d: %s", K, cs[c].name);
      histd_result r;
      char msg[512];
      int rc = run(&p, "grid", &r, msg, sizeof msg);
      CHECK(rc == 0, "%s: %s", what, msg);
      if (rc != 0)
        continue;
      check(&p, &W, &r, what, "grid");
      snprintf(word, sizeof word, "of span %d, float32 filter and bins", K);
      CHECK(strstr(r.device, word) != NULL, "%s: ran %s (%s)", what, word, r.device);
      histd_result_free(&r);
    }
    unsetenv("HISTD_GRID_SPAN");
    stats_f32(&p, &W, cs[c].name);
    want_free(&W);
  }
  histd_dataset_free(&a);
  histd_dataset_free(&b);
  histd_dataset_free(&ab);
}

/* tiled-stats' float32 pairs where the image is in doubt (f32_pair.h:
 * the float32 and the contract's images may differ only for a component
 * within rounding of half the box): pairs with one, two or three
 * components on or beside half the box (exactly half is a tie, which
 * nearbyint breaks to even), so at distances beside L / 2, g(r)'s last
 * edge to half the box; pairs beside every other edge; every point moved
 * by up to 3 boxes on each axis (unwrapped coordinates). In a cube, a
 * rectangular box and a triclinic one (whose image steps send the pairs
 * in doubt to the contract), self and A x B, the histogram, rp_pi and
 * s_mu. */
static void half_box(void) {
  static const double offs[] = {0, 0x1p-52, 1e-13, 1e-10, 1e-8, 1e-7, 3e-7, 1e-6, 1e-5, 1e-4};
  const size_t no = sizeof offs / sizeof offs[0], n = 6000;
  const histd_box boxes[3] = {{HISTD_BOX_ORTHO, 10, 0, 10, 0, 0, 10},
                              {HISTD_BOX_ORTHO, 10, 0, 12, 0, 0, 9},
                              {HISTD_BOX_TRICLINIC, 10, 2, 11, -1.5, 3, 9}};
  for (int bx = 0; bx < 3; bx++) {
    const double L[3] = {boxes[bx].ax, boxes[bx].by, boxes[bx].cz};
    const double half = histd_box_half_width(&boxes[bx]);
    double edges[26];
    for (int k = 0; k < 25; k++)
      edges[k] = half * pow(100, (k - 25) / 25.0); /* half / 100 to half */
    edges[25] = half;
    histd_dataset a, b, ab;
    make(&a, n, true);
    make(&b, n, true);
    for (size_t i = 0; i < n; i++) {
      double p[3], v[3];
      const double off = offs[(size_t)(rnd() * no)] * (rnd() < 0.5 ? -1 : 1);
      for (int k = 0; k < 3; k++)
        p[k] = L[k] * rnd();
      if (i % 2 == 0) { /* components at half the box (1 to 3 of them), the rest tiny */
        const int first = (int)(rnd() * 3), many = 1 + (int)(rnd() * 3);
        for (int k = 0; k < 3; k++) {
          const bool at = (k - first + 3) % 3 < many;
          const double tiny = offs[(size_t)(rnd() * no)] * L[k];
          v[k] = (rnd() < 0.5 ? -1 : 1) * (at ? 0.5 * L[k] * (1 + off) : tiny);
        }
      } else { /* d beside an edge, in a random direction */
        const double e = (i % 4 == 1 ? edges[(size_t)(rnd() * 26)] : half) * (1 + off);
        const double mu = 2 * rnd() - 1, phi = 6.283185307179586 * rnd(), r = sqrt(1 - mu * mu);
        v[0] = e * r * cos(phi), v[1] = e * r * sin(phi), v[2] = e * mu;
      }
      double *pa[3] = {a.x, a.y, a.z}, *pb[3] = {b.x, b.y, b.z};
      for (int k = 0; k < 3; k++) { /* unwrapped: a few boxes away, either point */
        pa[k][i] = p[k] + (i % 3 == 0 ? (double)((int)(rnd() * 7) - 3) * L[k] : 0);
        pb[k][i] = p[k] + v[k] + (i % 5 == 0 ? (double)((int)(rnd() * 7) - 3) * L[k] : 0);
      }
      a.w[i] = 0.25 + rnd();
      b.w[i] = 0.25 + rnd();
    }
    finish(&a);
    finish(&b);
    joined(&a, &b, &ab);
    const histd_bins logb = {HISTD_BINS_EDGES, 25, 0, edges, 0, 0};
    const histd_bins widthb = {HISTD_BINS_WIDTH, 20, half / 20, NULL, 0, 0};
    const struct {
      const char *name;
      bool cross;
      histd_statistic stat;
      histd_bins bins;
    } cs[] = {
        {"the histogram of d, width bins to half the box", false, HISTD_STAT_HISTOGRAM, widthb},
        {"the histogram of d, log edges to half the box, A x B", true, HISTD_STAT_HISTOGRAM, logb},
        {"rp_pi, width bins, pi to half the box, A x B", true, HISTD_STAT_RP_PI, widthb},
        {"s_mu, log edges, mu bins of 1/10", false, HISTD_STAT_S_MU, logb},
    };
    for (size_t c = 0; c < sizeof cs / sizeof cs[0]; c++) {
      if (bx == 2 && cs[c].stat == HISTD_STAT_RP_PI) /* (rp_pi: orthorhombic boxes only) */
        continue;
      histd_problem p = problem(cs[c].cross ? &a : &ab, cs[c].cross ? &b : NULL, 0, cs[c].stat,
                                cs[c].bins);
      p.box = boxes[bx];
      if (cs[c].stat == HISTD_STAT_RP_PI)
        p.bins.count2 = 5, p.bins.max2 = half;
      if (cs[c].stat == HISTD_STAT_S_MU)
        p.bins.count2 = 10, p.bins.max2 = 1;
      char name[160];
      snprintf(name, sizeof name, "half the box (%gx%gx%g%s): %s", L[0], L[1], L[2],
               bx == 2 ? ", triclinic" : "", cs[c].name);
      want W;
      definition(&p, &W);
      stats_f32(&p, &W, name);
      want_free(&W);
    }
    histd_dataset_free(&a);
    histd_dataset_free(&b);
    histd_dataset_free(&ab);
  }
}

/* A GPU job cut over shares (3 workers of the GPU: run_devices) reports
 * its progress as its shards go, never backwards, up to 1; a second job on
 * the same worker (which keeps the shares' workers) counts the same. */
typedef struct seen {
  int calls, backwards, inner; /* inner: fractions strictly inside (0, 1) */
  double last;
} seen;

static void on_progress(void *u, double x) {
  seen *s = u;
  s->backwards += x < s->last;
  s->inner += x > 0 && x < 1;
  s->last = x;
  s->calls++;
}

static void shares_twice(int device) {
  histd_dataset u;
  uniform(&u, 4000, 100, true);
  histd_problem p = problem(&u, NULL, 100, HISTD_STAT_S_MU,
                            (histd_bins){HISTD_BINS_WIDTH, 20, 2, NULL, 10, 1});
  want W;
  definition(&p, &W);
  histd_worker *w = NULL;
  char msg[512];
  CHECK(histd_worker_create(&w, device, msg, sizeof msg) == 0, "a worker on GPU %d: %s", device,
        msg);
  histd_exec ex;
  histd_exec_init(&ex);
  snprintf(ex.kernel, sizeof ex.kernel, "tiled-stats");
  for (int round = 0; w != NULL && round < 2; round++) {
    seen s = {0, 0, 0, 0};
    histd_control ctl = {on_progress, NULL, &s, NULL};
    histd_result r;
    int rc = histd_worker_run(w, &p, &ex, &ctl, &r, msg, sizeof msg);
    CHECK(rc == 0, "the job in shares, round %d: %s", round, msg);
    if (rc != 0)
      continue;
    CHECK(strstr(r.device, "shards") != NULL, "round %d ran on %s, not in shards", round,
          r.device);
    CHECK(memcmp(r.counts, W.counts, slots_of(&p.bins) * sizeof *r.counts) == 0 &&
              r.overflow == W.overflow,
          "round %d: the counts differ from the definition", round);
    CHECK(s.backwards == 0 && s.last == 1.0 && s.inner >= 2,
          "round %d's progress: %d calls, %d inside (0, 1), %d backwards, last %g", round,
          s.calls, s.inner, s.backwards, s.last);
    printf("  a job in shares, round %d: %d progress calls (%d inside (0, 1)), on %s\n", round,
           s.calls, s.inner, r.device);
    histd_result_free(&r);
  }
  histd_worker_destroy(w);
  want_free(&W);
  histd_dataset_free(&u);
}

/* A job of slabs() at a memory limit (test_slab_window's outcome). */
typedef struct slab_job {
  const histd_problem *p;
  const want *W;
  const char *name;
} slab_job;

static unsigned slabs_at(void *ctx, double mib) {
  const slab_job *j = ctx;
  char lim[32], what[160], msg[512] = "";
  snprintf(lim, sizeof lim, "%.4f", mib);
  snprintf(what, sizeof what, "%s, %s MiB free", j->name, lim);
  histd_result r;
  setenv("HISTD_GPU_MEM_LIMIT_MB", lim, 1);
  int rc = run(j->p, "grid", &r, msg, sizeof msg);
  unsetenv("HISTD_GPU_MEM_LIMIT_MB");
  if (rc == HISTD_ETOOBIG) {
    CHECK(strstr(msg, "even in slabs") != NULL, "%s: refused, saying why: %s", what, msg);
    return 0;
  }
  CHECK(rc == 0, "%s: %s", what, msg);
  if (rc != 0)
    return 0;
  const unsigned streamed = strstr(r.device, "slabs") != NULL;
  printf("  %s: %s\n", what, r.device);
  check(j->p, j->W, &r, what, "grid");
  histd_result_free(&r);
  return streamed ? 2 : 1;
}

/* The GPU grid streams a job larger than its (pretended) free memory in
 * slabs of z (kernels/grid_slabs.c), each slab's result added into the
 * job's: every slot of the two axes, and every sum the job has (ravg's
 * too), held to the definition at memory limits around and inside the
 * window where it streams (test_slab_window, gpus.h); a limit too small
 * even for slabs is refused with a sentence. */
static void slabs(void) {
  histd_dataset u;
  uniform(&u, 16000, 10, true);
  const double edges[6] = {0.05, 0.1, 0.2, 0.4, 0.8, 1.0};
  histd_problem ps[2];
  const char *names[2] = {"rp_pi, periodic, weighted, ravg, in slabs",
                          "s_mu, periodic, ravg (unweighted), in slabs"};
  ps[0] = problem(&u, NULL, 10, HISTD_STAT_RP_PI,
                  (histd_bins){HISTD_BINS_EDGES, 5, 0, edges, 4, 1});
  ps[0].ravg = true;
  ps[1] = problem(&u, NULL, 10, HISTD_STAT_S_MU,
                  (histd_bins){HISTD_BINS_WIDTH, 10, 0.1, NULL, 5, 1});
  ps[1].ravg = true;
  ps[1].weighted = false;
  for (int i = 0; i < 2; i++) {
    want W;
    definition(&ps[i], &W);
    slab_job j = {&ps[i], &W, names[i]};
    test_slab_window(slabs_at, &j, names[i]);
    want_free(&W);
  }
  histd_dataset_free(&u);
}

/* tiled-stats where its counts crowd shared memory (count_sink.h): 100 x
 * 100 slots take the float32 pairs, counting in one 32-bit column a block
 * (lane columns would take 1.3 MB); 1,000 x 60 fit no shared layout of
 * any GPU (240 KB), so the job gives its float32 pairs up and counts in
 * global memory. Each against the definition. */
static void many_slots(void) {
  histd_dataset u;
  uniform(&u, 2000, 10, false);
  static const struct {
    uint32_t c1, c2;
    double width;
    bool f32;
  } jobs[2] = {{100, 100, 0.049, true}, {1000, 60, 0.0049, false}};
  for (int i = 0; i < 2; i++) {
    histd_problem p = problem(&u, NULL, 10, HISTD_STAT_S_MU,
                              (histd_bins){HISTD_BINS_WIDTH, jobs[i].c1, jobs[i].width, NULL,
                                           jobs[i].c2, 1});
    char what[128];
    snprintf(what, sizeof what, "s_mu, %u x %u slots", jobs[i].c1, jobs[i].c2);
    want W;
    definition(&p, &W);
    histd_result r;
    char msg[512];
    int rc = run(&p, "tiled-stats", &r, msg, sizeof msg);
    CHECK(rc == 0, "%s: %s", what, msg);
    if (rc == 0) {
      check(&p, &W, &r, what, "tiled-stats");
      CHECK((strstr(r.device, "float32 pairs and bins") != NULL) == jobs[i].f32,
            "%s: float32 pairs %s (%s)", what, jobs[i].f32 ? "expected" : "given up", r.device);
      histd_result_free(&r);
    }
    want_free(&W);
  }
  histd_dataset_free(&u);
}

int main(void) {
  histd_device_info info;
  int gpus = test_gpus(&info, "TEST_BINS2_GPU");
  if (gpus > 0)
    nkernels = 5;
  printf("grid and auto run on %s\n", gpus > 0 ? info.name : "the CPU");
  cases();
  if (gpus > 0) { /* the same jobs, each cut into shards over 3 workers of the GPU (as over
                   * 3 GPUs: worker.c's run_devices), held to the definition again */
    setenv("HISTD_GPU_FAKE_SPLIT", "3", 1);
    setenv("HISTD_GPU_SPLIT_MIN_PAIRS", "0", 1);
    printf("the cases again, each job cut over 3 workers of the GPU\n");
    cases();
    shares_twice(info.index);
    unsetenv("HISTD_GPU_FAKE_SPLIT");
    unsetenv("HISTD_GPU_SPLIT_MIN_PAIRS");
    printf("jobs larger than the GPU's (pretended) memory, in slabs\n");
    slabs();
    printf("pairs on and beside every boundary, spans 1 to 3 and tiled-stats\n");
    near_edges();
    printf("tiled-stats' float32 pairs about half the box\n");
    half_box();
    printf("tiled-stats with its counts crowding shared memory\n");
    many_slots();
    printf("dense sets on cells of span 2 and 3\n");
    dense_span(2);
    dense_span(3);
  }
  histd_dataset u;
  uniform(&u, 700, 20, true);
  histd_problem p;

  /* refusals */
  p = problem(&u, NULL, 20, HISTD_STAT_RP_PI, (histd_bins){HISTD_BINS_WIDTH, 10, 1, NULL, 8, 4});
  p.los_midpoint = true;
  refused(&p, "midpoint", "the midpoint in a periodic box");
  p.los_midpoint = false;
  p.bins.max2 = 10.5; /* past 10, half the box */
  refused(&p, "half the periodic box", "pi_max past half the box");
  p.bins.max2 = 4;
  p.per_frame = true;
  refused(&p, "per_frame", "per_frame");
  p.per_frame = false;
  p.bins.count2 = 0;
  refused(&p, "pi_bins", "no pi bins");
  p.bins.count2 = 5000;
  p.bins.count = 5000;
  refused(&p, "more than", "too many bins of the two axes");
  p = problem(&u, NULL, 0, HISTD_STAT_S_MU, (histd_bins){HISTD_BINS_WIDTH, 10, 1, NULL, 8, 1.5});
  refused(&p, "mu_max", "mu_max above 1");
  p = problem(&u, NULL, 0, HISTD_STAT_HISTOGRAM, (histd_bins){HISTD_BINS_WIDTH, 10, 1, NULL, 8, 1});
  refused(&p, "rp_pi or s_mu", "axis-2 bins on the histogram of d");

  /* the job layer's parameters: each missing or stray one named */
  static const struct {
    const char *json[4][2];
    const char *word;
  } bad[] = {
      {{{"statistic", "rp_pi"}, {"edges", "1,2"}, {"pi_bins", "4"}}, "pi_max"},
      {{{"statistic", "s_mu"}, {"edges", "1,2"}}, "mu_bins"},
      {{{"statistic", "histogram"}, {"bucket_width", "1"}, {"pi_max", "4"}}, "pi_max"},
      {{{"statistic", "s_mu"}, {"edges", "1,2"}, {"mu_bins", "3"}, {"pi_bins", "2"}}, "pi_"},
      {{{"statistic", "rp_pi"}, {"within", "2"}, {"pi_max", "4"}, {"pi_bins", "2"}}, "within"},
  };
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    histd_params pa;
    histd_params_init(&pa);
    char msg[512] = "";
    int rc = 0;
    for (int f = 0; f < 4 && bad[k].json[f][0] != NULL && rc == 0; f++) {
      const histd_param *row = histd_param_find(bad[k].json[f][0]);
      CHECK(row != NULL, "parameter %s", bad[k].json[f][0]);
      rc = histd_param_set_text(&pa, row, bad[k].json[f][1], msg, sizeof msg);
    }
    histd_problem spec;
    double *edges = NULL;
    if (rc == 0)
      rc = histd_params_spec(&pa, &spec, &edges, msg, sizeof msg);
    CHECK(rc != 0 && strstr(msg, bad[k].word) != NULL, "parameters %zu: refused naming %s (%s)",
          k, bad[k].word, msg);
    free(edges);
    histd_params_free(&pa);
  }
  histd_dataset_free(&u);
  return check_finish("test_bins2");
}
