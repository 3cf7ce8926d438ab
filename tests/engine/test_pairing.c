/*
 * test_pairing.c -- two selections of one dataset against the rule written
 * out here (DESIGN.md, "the contract for the wave-3 statistics"): an atom
 * never pairs with itself; each unordered pair of distinct atoms, one
 * selected by A and one by B, counts once; "pairs": "ordered" counts every
 * (a, b) of A x B, an atom in both meeting itself at d = 0.
 *
 * The definition walks every pair of atoms of each frame of the source
 * dataset by index, decides by the selections' own predicates (written
 * here, not the library's) whether and how often the pair counts, measures
 * it with the contract's arithmetic (orthorhombic minimum image per axis)
 * and bins it; weights as w_i w_j summed in long double. The jobs go the
 * way a user's do, through the job layer (histd_job_bind), on every CPU
 * kernel, in shards as a cluster cuts them, with exclusions and frames,
 * width and explicit bins, and on a GPU where there is one (the gpu suite
 * runs this program again with TEST_PAIRING_GPU=1, skipped without one).
 */
#include <math.h>

#include "../check.h"
#include "../gpus.h"
#include "../definition.h"
#include "../shards.h"
#include "histd/histd.h"
#include "histd/job.h"
#include "histd/schema.h"

static uint64_t seed = 31;
static double rnd(void) { /* splitmix64 -> [0, 1) */
  uint64_t z = (seed += 0x9E3779B97F4A7C15u);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
  return (double)((z ^ (z >> 31)) >> 11) * 0x1p-53;
}

#define ATOMS 120
#define L 9.0

/* `frames` frames of ATOMS atoms in an L box, a few duplicated points (d =
 * 0 between distinct atoms), weights, types 1..3 and molecules of 3. */
static histd_dataset make_set(size_t frames) {
  histd_dataset ds;
  histd_dataset_alloc(&ds, ATOMS * frames, NULL, 0);
  histd_dataset_alloc_weights(&ds, NULL, 0);
  for (size_t i = 0; i < ATOMS * frames; i++) {
    ds.x[i] = rnd() * L;
    ds.y[i] = rnd() * L;
    ds.z[i] = rnd() * L;
    ds.w[i] = 0.25 + rnd();
    if (i % ATOMS >= 1 && i % 17 == 0) { /* a duplicate of the atom before it */
      ds.x[i] = ds.x[i - 1];
      ds.y[i] = ds.y[i - 1];
      ds.z[i] = ds.z[i - 1];
    }
  }
  histd_dataset_finish(&ds, NULL, 0);
  if (frames > 1) {
    size_t counts[4];
    histd_box boxes[4];
    for (size_t f = 0; f < frames; f++) {
      counts[f] = ATOMS;
      boxes[f] = (histd_box){HISTD_BOX_ORTHO, L, 0, L, 0, 0, L};
    }
    histd_dataset_set_frames(&ds, frames, counts, boxes, NULL, 0);
  }
  ds.box = (histd_box){HISTD_BOX_ORTHO, L, 0, L, 0, 0, L};
  histd_topology_alloc(&ds, ATOMS, ~0u, NULL, 0);
  for (size_t i = 0; i < ATOMS; i++) {
    ds.top->type[i] = 1 + (int)((i * 7) % 3);
    ds.top->mol[i] = (int64_t)(i / 3);
    ds.top->resid[i] = ds.top->mol[i];
    snprintf(ds.top->element + i * HISTD_ATOM_STR, HISTD_ATOM_STR, "%s",
             ds.top->type[i] == 1 ? "O" : "H");
  }
  return ds;
}

/* The selections, by hand: kinds "all", "type:LIST" and "index:A-B". */
static bool selects(const char *sel, const histd_dataset *ds, size_t i) {
  if (sel[0] == '\0' || strcmp(sel, "all") == 0)
    return true;
  if (strncmp(sel, "index:", 6) == 0) {
    unsigned lo, hi;
    sscanf(sel + 6, "%u-%u", &lo, &hi);
    return i >= lo && i <= hi;
  }
  for (const char *c = sel + 5; *c; c++) /* "type:1,2" */
    if (*c >= '1' && *c <= '9' && ds->top->type[i] == *c - '0')
      return true;
  return false;
}

typedef struct want {
  uint64_t counts[32], below, over, total, excluded;
  long double weighted[32];
} want;

static void add(want *h, const histd_bins *bins, double d, double w) {
  uint32_t k = 0;
  if (bins->kind == HISTD_BINS_WIDTH) {
    double q = d / bins->width;
    double f = floor(q);
    if (f >= bins->count) {
      h->over++;
      return;
    }
    k = (uint32_t)f;
  } else if (d < bins->edges[0]) {
    h->below++;
    return;
  } else if (d >= bins->edges[bins->count]) {
    h->over++;
    return;
  } else {
    while (!(d < bins->edges[k + 1]))
      k++;
  }
  h->counts[k]++;
  h->weighted[k] += (long double)w;
}

/* Every pair of atoms i, j of every frame, counted as the rule says. */
static void definition(const histd_dataset *ds, const char *sa, const char *sb, bool ordered,
                       bool exclude, const histd_bins *bins, want *h) {
  memset(h, 0, sizeof *h);
  for (size_t f = 0, frames = histd_dataset_frames(ds); f < frames; f++) {
    histd_dataset v;
    histd_dataset_frame(ds, f, &v);
    for (size_t i = 0; i < ATOMS; i++)
      for (size_t j = 0; j < ATOMS; j++) {
        const bool ab = selects(sa, ds, i) && selects(sb, ds, j);
        /* ordered: every (a, b); else the unordered pair {i, j}, i < j,
         * when one of its atoms is A's and the other B's */
        const bool counted = ordered ? ab
                                     : i < j && (ab || (selects(sa, ds, j) && selects(sb, ds, i)));
        if (!counted)
          continue;
        if (exclude && ds->top->mol[i] == ds->top->mol[j]) {
          h->excluded++;
          continue;
        }
        h->total++;
        const def_box box = {1, L, 0, L, 0, 0, L};
        add(h, bins, definition_box_distance(&box, v.x[i], v.y[i], v.z[i], v.x[j], v.y[j], v.z[j]),
            v.w[i] * v.w[j]);
      }
  }
}

/* The job's parameters: the selections, the bins (width 0.5 and 8 buckets,
 * or the edges), weights, exclusions, ordered pairs. */
static void params_of(histd_params *p, const char *sa, const char *sb, bool ordered, bool exclude,
                      bool edges) {
  histd_params_init(p);
  snprintf(p->select_a, sizeof p->select_a, "%s", sa);
  snprintf(p->select_b, sizeof p->select_b, "%s", sb);
  p->ordered_pairs = ordered;
  p->exclude_molecule = exclude;
  p->weights = !exclude; /* exclusions are unweighted */
  p->box = (histd_box){HISTD_BOX_ORTHO, L, 0, L, 0, 0, L};
  if (edges) {
    static double e[6] = {0.0, 0.3, 1, 2, 3.5, 4.25};
    p->edges = malloc(sizeof e);
    memcpy(p->edges, e, sizeof e);
    p->edge_count = 6;
  } else {
    p->bucket_width = 0.5;
    p->buckets = 8;
  }
}

static const char *kernels[8];
static int kernel_count;

static void check_case(const histd_dataset *ds, const char *sa, const char *sb, bool ordered,
                       bool exclude, bool edges, const char *pairing_want) {
  char what[256];
  snprintf(what, sizeof what, "%s x %s%s%s%s, %zu frame(s)", sa, sb, ordered ? ", ordered" : "",
           exclude ? ", exclude molecule" : "", edges ? ", edges" : "", histd_dataset_frames(ds));
  histd_params params;
  params_of(&params, sa, sb, ordered, exclude, edges);
  histd_job job;
  char msg[256] = "";
  int rc = histd_job_bind(&job, &params, ds, NULL, NULL, msg, sizeof msg);
  CHECK(rc == 0, "%s: %s", what, msg);
  if (rc != 0) {
    histd_params_free(&params);
    return;
  }
  want h;
  definition(ds, sa, sb, ordered, exclude, &job.problem.bins, &h);
  CHECK_EQ_U64(histd_problem_pairs(&job.problem), h.total + h.excluded, what);
  uint64_t na = 0, nb = 0;
  for (size_t i = 0; i < ATOMS; i++) {
    na += selects(sa, ds, i);
    nb += selects(sb, ds, i);
  }
  const uint64_t frames = histd_dataset_frames(ds);
  const bool same = strcmp(pairing_want, "self") == 0;
  for (int k = 0; k <= kernel_count; k++) {
    histd_result r;
    const char *kernel = k < kernel_count ? kernels[k] : "cpu in 5 shards";
    if (k == kernel_count) {
      if (run_sharded(&job.problem, "cpu", 5, &r, what) != 0)
        continue;
    } else {
      histd_exec ex;
      histd_exec_init(&ex);
      snprintf(ex.kernel, sizeof ex.kernel, "%s", kernel);
      ex.threads = 2;
      rc = histd_run(&job.problem, &ex, NULL, &r, msg, sizeof msg);
      CHECK(rc == 0, "%s, %s: %s", what, kernel, msg);
      if (rc != 0)
        continue;
    }
    for (uint32_t b = 0; b < r.bins.count; b++) {
      CHECK(r.counts[b] == h.counts[b], "%s, %s: bin %u has %" PRIu64 ", want %" PRIu64, what,
            kernel, b, r.counts[b], h.counts[b]);
      if (r.weighted != NULL) {
        const double want_w = (double)h.weighted[b];
        CHECK(fabs(r.weighted[b] - want_w) <= 1e-12 * want_w, "%s, %s: bin %u weighs %.17g, "
              "want %.17g", what, kernel, b, r.weighted[b], want_w);
      }
    }
    CHECK_EQ_U64(r.below, h.below, what);
    CHECK_EQ_U64(r.overflow, h.over, what);
    CHECK_EQ_U64(r.total, h.total, what);
    CHECK_EQ_U64(r.excluded, h.excluded, what);
    CHECK(r.weighted != NULL || exclude, "%s, %s: weighted sums", what, kernel);
    /* the result says how the pairs were made, and of how many atoms */
    r.select_b[0] = 'x'; /* (the front ends label it; "pairing" is shown with it) */
    const histd_field *fd = histd_schema_find(NULL, "pairing");
    histd_fvalue v;
    fd->get(&r, 0, NULL, &v);
    CHECK(strcmp(v.s, pairing_want) == 0, "%s, %s: pairing \"%s\", want \"%s\"", what, kernel,
          v.s, pairing_want);
    CHECK_EQ_U64(r.n, na * frames, what);
    CHECK_EQ_U64(r.n_b, same ? 0 : nb * frames, what);
    if (r.volume > 0 && h.total > 0) { /* g(r) is normalised by the pairs counted */
      CHECK(fabs(r.volume - L * L * L) <= 1e-9, "%s, %s: volume %g", what, kernel, r.volume);
    }
    histd_result_free(&r);
  }
  histd_job_free(&job);
  histd_params_free(&params);
}

/* The rule's answers that are not histograms: a pair list of overlapping
 * selections is refused with a sentence; of the same atoms it is the self
 * list, i < j; a value per point counts B's atoms other than itself. */
static void test_other_shapes(const histd_dataset *ds) {
  histd_params params;
  histd_params_init(&params);
  snprintf(params.select_a, sizeof params.select_a, "type:1,2");
  snprintf(params.select_b, sizeof params.select_b, "type:2,3");
  params.has_pairs_within = true;
  params.pairs_within = 1.5;
  histd_job job;
  char msg[256] = "";
  CHECK(histd_job_bind(&job, &params, ds, NULL, NULL, msg, sizeof msg) == HISTD_EINVAL,
        "a pair list of overlapping selections is refused");
  CHECK_STR_CONTAINS(msg, "share");
  CHECK_STR_CONTAINS(msg, "\"ordered\"");
  snprintf(params.select_b, sizeof params.select_b, "type:1,2");
  CHECK(histd_job_bind(&job, &params, ds, NULL, NULL, msg, sizeof msg) == 0, "%s", msg);
  CHECK(job.problem.b == NULL && job.problem.shared == NULL,
        "a pair list of the same atoms is a self job");
  histd_job_free(&job);
  params.has_pairs_within = false;
  params.per_point = true;
  params.has_within = true;
  params.within = 1.5;
  snprintf(params.select_b, sizeof params.select_b, "all");
  CHECK(histd_job_bind(&job, &params, ds, NULL, NULL, msg, sizeof msg) == 0, "%s", msg);
  CHECK(job.problem.b != NULL && job.problem.shared == NULL && job.problem.same_atoms,
        "a value per point of overlapping selections keeps A x B, other than itself");
  histd_job_free(&job);
  histd_params_free(&params);
}

int main(void) {
  histd_device_info info;
  int gpus = test_gpus(&info, "TEST_PAIRING_GPU");
  if (gpus > 0) {
    kernels[kernel_count++] = "auto";
    kernels[kernel_count++] = "tiled-stats";
    kernels[kernel_count++] = "grid";
  } else {
    const char *cpu[] = {"cpu-reference", "cpu", "grid", "dm-tree", "auto"};
    for (int k = 0; k < 5; k++)
      kernels[kernel_count++] = cpu[k];
  }
  printf("kernels on %s\n", gpus > 0 ? info.name : "the CPU");
  histd_dataset one = make_set(1), three = make_set(3);
  const histd_dataset *sets[2] = {&one, &three};
  for (int s = 0; s < 2; s++) {
    for (int e = 0; e < 2; e++) {
      const bool edges = e == 1;
      check_case(sets[s], "type:1", "type:1", false, false, edges, "self");
      check_case(sets[s], "all", "all", false, false, edges, "self");
      check_case(sets[s], "type:1", "all", false, false, edges, "distinct");
      check_case(sets[s], "all", "type:2", false, false, edges, "distinct");
      check_case(sets[s], "index:0-69", "index:40-119", false, false, edges, "distinct");
      check_case(sets[s], "type:1,2", "type:2,3", false, true, edges, "distinct");
      check_case(sets[s], "type:1", "type:2,3", false, false, edges, "cross");
      check_case(sets[s], "type:1", "type:1", true, false, edges, "ordered");
      check_case(sets[s], "index:0-69", "index:40-119", true, true, edges, "ordered");
    }
  }
  test_other_shapes(&one);
  histd_dataset_free(&one);
  histd_dataset_free(&three);
  if (check_failures)
    fprintf(stderr, "%d checks failed\n", check_failures);
  else
    printf("all checks passed\n");
  return check_failures ? 1 : 0;
}
