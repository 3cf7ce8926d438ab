/*
 * test_topology.c -- selections and exclusions against definitions written
 * here: a selection is the atoms whose field matches, filtered by hand; an
 * exclusion run counts exactly the pairs of different molecules, by a brute
 * force over every pair with the contract's arithmetic written out again
 * (orthorhombic minimum image per axis, then the bin). Every CPU kernel,
 * self and A x B (overlapping selections included, as "pairs": "ordered"
 * counts them: an atom in both A and B pairs with itself and that pair is
 * within its molecule), one and several
 * frames, width and explicit bins, within R; and every error a user can
 * cause gets its sentence.
 */
#include <math.h>

#include "../check.h"
#include "../shards.h"
#include "histd/histd.h"
#include "histd/params.h"

static uint64_t seed = 2026;
static double rnd(void) { /* splitmix64 -> [0, 1) */
  uint64_t z = (seed += 0x9E3779B97F4A7C15u);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
  return (double)((z ^ (z >> 31)) >> 11) * 0x1p-53;
}

static const char *const elements[3] = {"O", "H", "C"};
static const char *const names[3] = {"OW", "HW1", "CT"};

/* `frames` frames of `atoms` atoms in an L box: molecules of 1 to 4 atoms,
 * their atoms scattered over the indices (ids not contiguous), type 1..3,
 * element and name from the type, resname SOL or ION, resid = mol. */
static histd_dataset make_set(size_t atoms, size_t frames, double L) {
  histd_dataset ds;
  histd_dataset_alloc(&ds, atoms * frames, NULL, 0);
  for (size_t i = 0; i < atoms * frames; i++) {
    ds.x[i] = rnd() * L;
    ds.y[i] = rnd() * L;
    ds.z[i] = rnd() * L;
  }
  histd_dataset_finish(&ds, NULL, 0);
  if (frames > 1) {
    size_t counts[8];
    histd_box boxes[8];
    for (size_t f = 0; f < frames; f++) {
      counts[f] = atoms;
      boxes[f] = (histd_box){HISTD_BOX_ORTHO, L, 0, L, 0, 0, L};
    }
    histd_dataset_set_frames(&ds, frames, counts, boxes, NULL, 0);
  }
  ds.box = (histd_box){HISTD_BOX_ORTHO, L, 0, L, 0, 0, L};
  histd_topology_alloc(&ds, atoms, ~0u, NULL, 0);
  int64_t mol = 1;
  size_t left = 0;
  for (size_t i = 0; i < atoms; i++) {
    if (left == 0) {
      mol += 1 + (int64_t)(rnd() * 3);
      left = 1 + (size_t)(rnd() * 4);
    }
    left--;
    ds.top->mol[i] = mol;
  }
  for (size_t i = atoms; i-- > 1;) { /* scatter the molecules over the indices */
    size_t j = (size_t)(rnd() * (double)(i + 1));
    int64_t t = ds.top->mol[i];
    ds.top->mol[i] = ds.top->mol[j];
    ds.top->mol[j] = t;
  }
  for (size_t i = 0; i < atoms; i++) {
    int t = (int)(rnd() * 3);
    ds.top->type[i] = t + 1;
    ds.top->resid[i] = ds.top->mol[i];
    snprintf(ds.top->element + i * HISTD_ATOM_STR, HISTD_ATOM_STR, "%s", elements[t]);
    snprintf(ds.top->name + i * HISTD_ATOM_STR, HISTD_ATOM_STR, "%s", names[t]);
    snprintf(ds.top->resname + i * HISTD_ATOM_STR, HISTD_ATOM_STR, "%s", t == 2 ? "ION" : "SOL");
  }
  return ds;
}

/* ---- selections ----------------------------------------------------------------------- */

typedef bool (*pick_fn)(const histd_topology *t, size_t i);
static bool pick_type1(const histd_topology *t, size_t i) { return t->type[i] == 1; }
static bool pick_type23(const histd_topology *t, size_t i) { return t->type[i] >= 2; }
static bool pick_o(const histd_topology *t, size_t i) {
  return strcmp(t->element + i * HISTD_ATOM_STR, "O") == 0;
}
static bool pick_index(const histd_topology *t, size_t i) {
  (void)t;
  return i <= 9 || (i >= 20 && i <= 29) || i == 57;
}
static bool pick_hw1_ct(const histd_topology *t, size_t i) {
  return strcmp(t->name + i * HISTD_ATOM_STR, "HW1") == 0 ||
         strcmp(t->name + i * HISTD_ATOM_STR, "CT") == 0;
}
static bool pick_ion(const histd_topology *t, size_t i) {
  return strcmp(t->resname + i * HISTD_ATOM_STR, "ION") == 0;
}
static bool pick_resid(const histd_topology *t, size_t i) {
  return t->resid[i] >= 5 && t->resid[i] <= 40;
}
static bool pick_all(const histd_topology *t, size_t i) {
  (void)t;
  (void)i;
  return true;
}

static void test_selections(void) {
  const size_t atoms = 120, frames = 3;
  histd_dataset ds = make_set(atoms, frames, 10);
  histd_dataset_alloc_weights(&ds, NULL, 0);
  for (size_t i = 0; i < ds.n; i++)
    ds.w[i] = rnd();
  const struct {
    const char *sel;
    pick_fn pick;
  } cases[] = {{"type:1", pick_type1},         {"type:2-3", pick_type23},
               {"element:o", pick_o},          {"index:0-9,20-29,57", pick_index},
               {"name:HW1,CT", pick_hw1_ct},   {"resname:ION", pick_ion},
               {"resid:5-40", pick_resid},     {"all", pick_all},
               {"type:3,1-1,2", pick_all}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    histd_dataset sel;
    char msg[256] = "";
    int rc = histd_dataset_select(&ds, cases[c].sel, NULL, &sel, msg, sizeof msg);
    CHECK(rc == 0, "%s: %s", cases[c].sel, msg);
    if (rc != 0)
      continue;
    size_t want = 0;
    for (size_t i = 0; i < atoms; i++)
      want += cases[c].pick(ds.top, i);
    CHECK(sel.top != NULL && sel.top->atoms == want, "%s: %zu atoms, want %zu", cases[c].sel,
          sel.top ? sel.top->atoms : 0, want);
    CHECK(histd_dataset_frames(&sel) == frames && sel.n == want * frames,
          "%s: %zu frames of %zu points", cases[c].sel, histd_dataset_frames(&sel), sel.n);
    for (size_t f = 0; f < frames && sel.n == want * frames; f++) {
      size_t k = 0;
      for (size_t i = 0; i < atoms; i++) {
        if (!cases[c].pick(ds.top, i))
          continue;
        const size_t src = f * atoms + i, dst = sel.frame[f].start + k;
        CHECK(sel.x[dst] == ds.x[src] && sel.y[dst] == ds.y[src] && sel.z[dst] == ds.z[src] &&
                  sel.w[dst] == ds.w[src],
              "%s: frame %zu atom %zu is atom %zu of the set", cases[c].sel, f, k, i);
        CHECK(sel.top->mol[k] == ds.top->mol[i] && sel.top->type[k] == ds.top->type[i],
              "%s: atom %zu keeps its topology", cases[c].sel, k);
        k++;
      }
      CHECK(sel.frame[f].box.kind == HISTD_BOX_ORTHO, "%s: frame %zu keeps its box",
            cases[c].sel, f);
    }
    histd_dataset_free(&sel);
  }
  /* every bad selection: a sentence, nothing made */
  const struct {
    const char *sel, *says;
  } bad[] = {{"type:9", "matches none"},
             {"color:red", "KIND:LIST"},
             {"type:2-1", "is empty"},
             {"type:x", "not a whole number"},
             {"index:", "empty item"},
             {"type:1,,2", "empty item"},
             {"name:ABCDEFGHIJ", "longer than"},
             {"element", "KIND:LIST"}};
  for (size_t c = 0; c < sizeof bad / sizeof bad[0]; c++) {
    histd_dataset sel;
    char msg[256] = "";
    CHECK(histd_dataset_select(&ds, bad[c].sel, NULL, &sel, msg, sizeof msg) != 0 && sel.x == NULL,
          "%s refused", bad[c].sel);
    CHECK(strstr(msg, bad[c].says) != NULL, "%s: \"%s\" says \"%s\"", bad[c].sel, msg,
          bad[c].says);
  }
  /* a set without a topology: index only */
  histd_dataset plain;
  histd_dataset_alloc(&plain, 30, NULL, 0);
  for (size_t i = 0; i < 30; i++)
    plain.x[i] = plain.y[i] = plain.z[i] = (double)i;
  histd_dataset_finish(&plain, NULL, 0);
  histd_dataset sel;
  char msg[256] = "";
  CHECK(histd_dataset_select(&plain, "index:3-5", NULL, &sel, msg, sizeof msg) == 0 && sel.n == 3 &&
            sel.x[0] == 3 && sel.x[2] == 5,
        "index selection without a topology: %s", msg);
  histd_dataset_free(&sel);
  CHECK(histd_dataset_select(&plain, "element:O", NULL, &sel, msg, sizeof msg) != 0 &&
            strstr(msg, "gives its atoms no element") != NULL,
        "element without a topology: %s", msg);
  histd_dataset_free(&plain);
  histd_dataset_free(&ds);
}

/* ---- exclusions ----------------------------------------------------------------------- */

/* The contract's distance: per axis dx - L nearbyint(dx / L), then sqrt. */
static double contract_d(double L, double xi, double yi, double zi, double xj, double yj,
                         double zj) {
  double d3[3] = {xi - xj, yi - yj, zi - zj}, s = 0;
  for (int a = 0; a < 3; a++) {
    double q = d3[a] / L;
    double k = nearbyint(q);
    double m = L * k;
    d3[a] = d3[a] - m;
  }
  double sxx = d3[0] * d3[0];
  double syy = d3[1] * d3[1];
  double szz = d3[2] * d3[2];
  s = sxx + syy;
  s = s + szz;
  return sqrt(s);
}

typedef struct want {
  uint64_t counts[64], below, over, total, excluded;
} want;

/* Every pair of frame views (a, b; b NULL: i < j of a), by mol: different
 * molecules count, the same molecule is excluded. */
static void definition(const histd_dataset *a, const int64_t *mol_a, const histd_dataset *b,
                       const int64_t *mol_b, double L, const histd_bins *bins, want *h) {
  const size_t nb = b ? b->n : a->n;
  for (size_t i = 0; i < a->n; i++)
    for (size_t j = b ? 0 : i + 1; j < nb; j++) {
      const histd_dataset *B = b ? b : a;
      const int64_t mj = b ? mol_b[j] : mol_a[j];
      if (mol_a[i] == mj) {
        h->excluded++;
        continue;
      }
      h->total++;
      double d = contract_d(L, a->x[i], a->y[i], a->z[i], B->x[j], B->y[j], B->z[j]);
      if (bins->kind == HISTD_BINS_WIDTH) {
        double q = d / bins->width;
        double k = floor(q);
        if (k < bins->count)
          h->counts[(size_t)k]++;
        else
          h->over++;
      } else if (d < bins->edges[0]) {
        h->below++;
      } else if (d >= bins->edges[bins->count]) {
        h->over++;
      } else {
        uint32_t k = 0;
        while (!(d < bins->edges[k + 1]))
          k++;
        h->counts[k]++;
      }
    }
}

static void check_exclusions(const histd_dataset *ds, const char *sa, const char *sb,
                             const histd_bins *bins, double L, const char *what) {
  histd_params params;
  histd_params_init(&params);
  snprintf(params.select_a, sizeof params.select_a, "%s", sa);
  snprintf(params.select_b, sizeof params.select_b, "%s", sb);
  params.ordered_pairs = true; /* A x B as it is (test_pairing.c checks the distinct rule) */
  histd_operands ops;
  char msg[256] = "";
  int rc = histd_params_operands(&params, ds, NULL, &ops, msg, sizeof msg);
  CHECK(rc == 0, "%s: %s", what, msg);
  if (rc != 0)
    return;
  want h;
  memset(&h, 0, sizeof h);
  for (size_t f = 0, frames = histd_dataset_frames(ops.a); f < frames; f++) {
    histd_dataset a, b;
    histd_dataset_frame(ops.a, f, &a);
    if (ops.b)
      histd_dataset_frame(ops.b, f, &b);
    definition(&a, ops.a->top->mol, ops.b ? &b : NULL, ops.b ? ops.b->top->mol : NULL, L, bins,
               &h);
  }
  const char *kernels[] = {"cpu-reference", "cpu", "grid", "auto", "cpu in 6 shards"};
  for (int k = 0; k < 5; k++) {
    histd_problem p;
    memset(&p, 0, sizeof p);
    p.a = ops.a;
    p.b = ops.b;
    p.box = (histd_box){HISTD_BOX_ORTHO, L, 0, L, 0, 0, L};
    p.bins = *bins;
    p.exclude_molecule = true;
    histd_exec ex;
    histd_exec_init(&ex);
    snprintf(ex.kernel, sizeof ex.kernel, "%s", kernels[k]);
    ex.threads = 2;
    histd_result r;
    if (k == 4) {
      if (run_sharded(&p, "cpu", 6, &r, what) != 0)
        continue;
    } else {
      rc = histd_run(&p, &ex, NULL, &r, msg, sizeof msg);
      CHECK(rc == 0, "%s, %s: %s", what, kernels[k], msg);
      if (rc != 0)
        continue;
    }
    for (uint32_t b = 0; b < bins->count; b++)
      CHECK(r.counts[b] == h.counts[b], "%s, %s: bin %u has %" PRIu64 ", want %" PRIu64, what,
            kernels[k], b, r.counts[b], h.counts[b]);
    CHECK_EQ_U64(r.below, h.below, what);
    CHECK_EQ_U64(r.overflow, h.over, what);
    CHECK_EQ_U64(r.total, h.total, what);
    CHECK_EQ_U64(r.excluded, h.excluded, what);
    CHECK(r.exclude_molecule, "%s: the result says it excluded", what);
    if (r.volume > 0) { /* g's pairs are the allowed ones: the last bin's g by hand */
      uint32_t b = bins->count - 1;
      double lo = histd_bins_edge(bins, b), hi = histd_bins_edge(bins, b + 1);
      double shell = 4.0 / 3.0 * M_PI * (hi * hi * hi - lo * lo * lo);
      uint64_t cum = 0;
      double g = 0, n = 0;
      for (uint32_t k2 = 0; k2 <= b; k2++)
        histd_result_rdf_bin(&r, k2, &cum, &g, &n);
      double want_g = (double)h.counts[b] / ((double)h.total * shell / (L * L * L));
      CHECK(fabs(g - want_g) <= 1e-12 * want_g, "%s: g %.17g, want %.17g (allowed pairs)", what,
            g, want_g);
    }
    histd_result_free(&r);
  }
  histd_operands_free(&ops);
}

static void test_exclusions(void) {
  const double L = 12;
  histd_dataset one = make_set(300, 1, L), many = make_set(150, 3, L);
  const histd_bins width = {HISTD_BINS_WIDTH, 24, 0.25, NULL, 0, 0};
  double e[6] = {0.5, 1, 2, 3.5, 4, 5.5};
  const histd_bins edges = {HISTD_BINS_EDGES, 5, 0, e, 0, 0};
  const histd_dataset *sets[2] = {&one, &many};
  for (int s = 0; s < 2; s++) {
    char what[128];
    const char *tag = s ? "3 frames" : "1 frame";
    snprintf(what, sizeof what, "%s, self, width bins", tag);
    check_exclusions(sets[s], "", "", &width, L, what);
    snprintf(what, sizeof what, "%s, type 1 x types 2-3, width bins", tag);
    check_exclusions(sets[s], "type:1", "type:2,3", &width, L, what);
    snprintf(what, sizeof what, "%s, all x type 1 (overlapping), edges", tag);
    check_exclusions(sets[s], "all", "type:1", &edges, L, what);
    snprintf(what, sizeof what, "%s, O self, edges", tag);
    check_exclusions(sets[s], "element:O", "", &edges, L, what);
  }
  histd_dataset_free(&one);
  histd_dataset_free(&many);
}

/* within R with exclusions: the pairs of different molecules within R */
static void test_within(void) {
  const double L = 10;
  histd_dataset ds = make_set(200, 1, L);
  histd_problem p;
  memset(&p, 0, sizeof p);
  p.a = &ds;
  p.box = (histd_box){HISTD_BOX_ORTHO, L, 0, L, 0, 0, L};
  p.statistic = HISTD_STAT_WITHIN;
  p.radius = 1.5;
  p.exclude_molecule = true;
  uint64_t want_in = 0, want_x = 0;
  for (size_t i = 0; i < ds.n; i++)
    for (size_t j = i + 1; j < ds.n; j++) {
      if (ds.top->mol[i] == ds.top->mol[j]) {
        want_x++;
        continue;
      }
      want_in += contract_d(L, ds.x[i], ds.y[i], ds.z[i], ds.x[j], ds.y[j], ds.z[j]) <= 1.5;
    }
  histd_exec ex;
  histd_exec_init(&ex);
  histd_result r;
  char msg[256];
  int rc = histd_run(&p, &ex, NULL, &r, msg, sizeof msg);
  CHECK(rc == 0, "within with exclusions: %s", msg);
  if (rc == 0) {
    CHECK_EQ_U64(r.within, want_in, "within R, other molecules");
    CHECK_EQ_U64(r.excluded, want_x, "within R, excluded");
    histd_result_free(&r);
  }
  histd_dataset_free(&ds);
}

/* frames 1:5:2 of five, per frame: each kept frame's counts, pairs, volume
 * and g against the definition; the sums are theirs. */
static void test_frames(void) {
  const double L = 11;
  histd_dataset ds = make_set(120, 5, L);
  histd_params params;
  histd_params_init(&params);
  char msg[256] = "";
  const histd_param *row = histd_param_find("frames");
  CHECK(histd_param_set_text(&params, row, "1:5:2", msg, sizeof msg) == 0, "frames: %s", msg);
  CHECK(histd_param_set_text(&params, histd_param_find("per_frame"), NULL, msg, sizeof msg) == 0,
        "per_frame: %s", msg);
  snprintf(params.select_a, sizeof params.select_a, "type:1,2");
  params.exclude_molecule = true;
  params.r_max = 5;
  params.buckets = 10;
  params.box = (histd_box){HISTD_BOX_ORTHO, L, 0, L, 0, 0, L};
  histd_operands ops;
  histd_problem p;
  double *edges = NULL;
  int rc = histd_params_operands(&params, &ds, NULL, &ops, msg, sizeof msg);
  CHECK(rc == 0, "operands: %s", msg);
  if (rc == 0 && (rc = histd_params_problem(&params, ops.a, ops.b, &p, &edges, msg, sizeof msg)) != 0)
    CHECK(0, "problem: %s", msg);
  histd_result r;
  memset(&r, 0, sizeof r);
  if (rc == 0) {
    histd_exec ex;
    histd_exec_init(&ex);
    rc = histd_run(&p, &ex, NULL, &r, msg, sizeof msg);
    CHECK(rc == 0, "run: %s", msg);
  }
  if (rc == 0) {
    CHECK(r.frames == 2 && r.frame_counts != NULL, "two frames kept, per frame");
    want sum;
    memset(&sum, 0, sizeof sum);
    for (uint64_t f = 0; f < 2 && r.frame_counts != NULL; f++) {
      histd_dataset view;
      histd_dataset_frame(&ds, 1 + 2 * f, &view); /* frames 1 and 3 of the set */
      histd_dataset sel;
      histd_slice one = {1 + 2 * f, 2 + 2 * f, 1};
      CHECK(histd_dataset_select(&ds, "type:1,2", &one, &sel, msg, sizeof msg) == 0, "%s", msg);
      want h;
      memset(&h, 0, sizeof h);
      definition(&sel, sel.top->mol, NULL, NULL, L, &p.bins, &h);
      for (uint32_t b = 0; b < p.bins.count; b++) {
        CHECK(r.frame_counts[f * p.bins.count + b] == h.counts[b],
              "frame %" PRIu64 " bin %u: %" PRIu64 ", want %" PRIu64, f, b,
              r.frame_counts[f * p.bins.count + b], h.counts[b]);
        sum.counts[b] += h.counts[b];
        double lo = b * 0.5, hi = lo + 0.5;
        double shell = 4.0 / 3.0 * M_PI * (hi * hi * hi - lo * lo * lo);
        double want_g = (double)h.counts[b] / ((double)h.total * shell / (L * L * L));
        double g = histd_result_frame_g(&r, f, b);
        CHECK(fabs(g - want_g) <= 1e-12 * want_g, "frame %" PRIu64 " g[%u] %.17g, want %.17g",
              f, b, g, want_g);
      }
      CHECK_EQ_U64(r.frame_total[f], h.total, "a frame's allowed pairs");
      CHECK(r.frame_volume[f] == L * L * L, "a frame's volume");
      sum.total += h.total;
      histd_dataset_free(&sel);
      (void)view;
    }
    for (uint32_t b = 0; b < p.bins.count; b++)
      CHECK_EQ_U64(r.counts[b], sum.counts[b], "the sum of the frames");
    CHECK_EQ_U64(r.total, sum.total, "the pairs of the frames");
    histd_result copy;
    CHECK(histd_result_copy(&copy, &r) == 0 && copy.frame_counts[p.bins.count + 3] ==
                                                   r.frame_counts[p.bins.count + 3],
          "a copy keeps the frames");
    histd_result_free(&copy);
    histd_result_free(&r);
  }
  free(edges);
  histd_operands_free(&ops);
  /* the slices that keep nothing, and the malformed ones */
  histd_slice beyond = {7, 0, 1};
  histd_dataset sel;
  CHECK(histd_dataset_select(&ds, NULL, &beyond, &sel, msg, sizeof msg) != 0 &&
            strstr(msg, "keep no frame") != NULL,
        "frames beyond the end: %s", msg);
  const char *bad[] = {"5:2", "a:b", "::0", "1:2:3:4", "-1:"};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++)
    CHECK(histd_param_set_text(&params, row, bad[k], msg, sizeof msg) != 0 &&
              strstr(msg, "frames") != NULL,
          "frames \"%s\" refused: %s", bad[k], msg);
  histd_dataset_free(&ds);
}

/* A trajectory without names takes another file's: the same selections as
 * the named set; counts that differ are refused. */
static void test_adopt(void) {
  histd_dataset named = make_set(60, 3, 9), bare = make_set(60, 3, 9), sa, sb;
  for (size_t i = 0; i < named.n; i++) { /* the same points, no names */
    bare.x[i] = named.x[i];
    bare.y[i] = named.y[i];
    bare.z[i] = named.z[i];
  }
  histd_topology_free(bare.top);
  bare.top = NULL;
  char msg[256] = "";
  CHECK(histd_dataset_select(&bare, "type:2", NULL, &sa, msg, sizeof msg) != 0,
        "no names, no type selection");
  CHECK(histd_dataset_adopt_topology(&bare, &named, msg, sizeof msg) == 0, "adopt: %s", msg);
  CHECK(histd_dataset_select(&bare, "type:2", NULL, &sa, msg, sizeof msg) == 0 &&
            histd_dataset_select(&named, "type:2", NULL, &sb, msg, sizeof msg) == 0,
        "select after adopting: %s", msg);
  CHECK(sa.n == sb.n && memcmp(sa.x, sb.x, sa.n * sizeof *sa.x) == 0 &&
            memcmp(sa.top->mol, sb.top->mol, sa.top->atoms * sizeof *sa.top->mol) == 0,
        "the adopted names select the same atoms");
  histd_dataset_free(&sa);
  histd_dataset_free(&sb);
  histd_dataset small = make_set(59, 1, 9);
  CHECK(histd_dataset_adopt_topology(&bare, &small, msg, sizeof msg) != 0 &&
            strstr(msg, "same system") != NULL,
        "59 atoms cannot name 60: %s", msg);
  histd_topology_free(small.top);
  small.top = NULL;
  CHECK(histd_dataset_adopt_topology(&bare, &small, msg, sizeof msg) != 0 &&
            strstr(msg, "names no atoms") != NULL,
        "a file without names: %s", msg);
  histd_dataset_free(&small);
  histd_dataset_free(&named);
  histd_dataset_free(&bare);
}

static void test_errors(void) {
  histd_dataset ds = make_set(40, 1, 8);
  histd_dataset_alloc_weights(&ds, NULL, 0);
  for (size_t i = 0; i < ds.n; i++)
    ds.w[i] = 1;
  histd_problem p;
  memset(&p, 0, sizeof p);
  p.a = &ds;
  p.bins = (histd_bins){HISTD_BINS_WIDTH, 4, 1, NULL, 0, 0};
  p.exclude_molecule = true;
  p.weighted = true;
  char msg[256] = "";
  CHECK(histd_problem_validate(&p, msg, sizeof msg) != 0 && strstr(msg, "weights") != NULL,
        "exclusions with weights refused: %s", msg);
  p.weighted = false;
  free(ds.top->mol);
  ds.top->mol = NULL;
  CHECK(histd_problem_validate(&p, msg, sizeof msg) != 0 && strstr(msg, "molecule ids") != NULL,
        "exclusions without molecule ids refused: %s", msg);
  histd_topology_free(ds.top);
  ds.top = NULL;
  CHECK(histd_problem_validate(&p, msg, sizeof msg) != 0 && strstr(msg, "molecule ids") != NULL,
        "exclusions without a topology refused: %s", msg);
  histd_dataset_free(&ds);
  /* frames of different sizes cannot be selected from */
  histd_dataset two;
  histd_dataset_alloc(&two, 5, NULL, 0);
  for (size_t i = 0; i < 5; i++)
    two.x[i] = two.y[i] = two.z[i] = (double)i;
  histd_dataset_finish(&two, NULL, 0);
  size_t counts[2] = {2, 3};
  histd_dataset_set_frames(&two, 2, counts, NULL, NULL, 0);
  histd_dataset sel;
  CHECK(histd_dataset_select(&two, "index:0", NULL, &sel, msg, sizeof msg) != 0 &&
            strstr(msg, "same atoms") != NULL,
        "frames of other sizes refused: %s", msg);
  histd_dataset_free(&two);
  /* the parameter: syntax checked when set */
  histd_params params;
  histd_params_init(&params);
  const histd_param *row = histd_param_find("select_a");
  CHECK(row != NULL && histd_param_set_text(&params, row, "kind:1", msg, sizeof msg) != 0,
        "select_a checks its syntax: %s", msg);
  row = histd_param_find("exclude");
  CHECK(row != NULL && histd_param_set_text(&params, row, "residue", msg, sizeof msg) != 0 &&
            strstr(msg, "molecule") != NULL,
        "exclude takes only molecule: %s", msg);
}

int main(void) {
  test_selections();
  test_exclusions();
  test_within();
  test_frames();
  test_adopt();
  test_errors();
  return check_finish("test_topology");
}
