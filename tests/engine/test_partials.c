/*
 * test_partials.c -- every species pair in one job ("partials") against
 * the definition written here: for species s <= t (in the field's order:
 * types by number, names by strcmp), the pairs of distinct atoms i < j of a
 * frame with {species(i), species(j)} = {s, t}, measured by the contract
 * (periodic minimum image per axis), binned; pairs within a molecule left
 * out when asked; a partial's pairs N_s(N_s - 1)/2 or N_s N_t a frame less
 * its excluded; its g and both coordination numbers by the rules of
 * shared/DESIGN.md. Every CPU kernel, frames, exclusions, a selection
 * first, element names, shards as a cluster cuts them, the store's codec;
 * and every refusal with its sentence. LAMMPS's compute rdf is the other
 * oracle (tests/cli/test_lammps_rdf.py).
 */
#include <math.h>

#include "../check.h"
#include "../definition.h"
#include "../shards.h"
#include "histd/histd.h"
#include "histd/io.h"
#include "histd/job.h"
#include "histd/schema.h"

static uint64_t seed = 99;
static double rnd(void) { /* splitmix64 -> [0, 1) */
  uint64_t z = (seed += 0x9E3779B97F4A7C15u);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
  return (double)((z ^ (z >> 31)) >> 11) * 0x1p-53;
}

#define ATOMS 90
#define FRAMES 2
#define L 7.0
#define BINS 7
#define WIDTH 0.5

static const char *const elem[3] = {"Na", "Cl", "O"}; /* types 3, 1, 2: another order */
static const int type_of[3] = {3, 1, 2};

/* FRAMES frames of ATOMS atoms; species k = (i * 5) % 3 (types 3, 1, 2,
 * elements Na, Cl, O); molecules of two atoms. */
static histd_dataset make_set(void) {
  histd_dataset ds;
  histd_dataset_alloc(&ds, (size_t)FRAMES * ATOMS, NULL, 0);
  for (size_t i = 0; i < (size_t)FRAMES * ATOMS; i++) {
    ds.x[i] = rnd() * L;
    ds.y[i] = rnd() * L;
    ds.z[i] = rnd() * L;
  }
  histd_dataset_finish(&ds, NULL, 0);
  size_t counts[FRAMES];
  histd_box boxes[FRAMES];
  for (size_t f = 0; f < FRAMES; f++) {
    counts[f] = ATOMS;
    boxes[f] = (histd_box){HISTD_BOX_ORTHO, L, 0, L, 0, 0, L};
  }
  histd_dataset_set_frames(&ds, FRAMES, counts, boxes, NULL, 0);
  histd_topology_alloc(&ds, ATOMS, ~0u, NULL, 0);
  for (size_t i = 0; i < ATOMS; i++) {
    const int k = (int)((i * 5) % 3);
    ds.top->type[i] = type_of[k];
    ds.top->mol[i] = (int64_t)(i / 2);
    snprintf(ds.top->element + i * HISTD_ATOM_STR, HISTD_ATOM_STR, "%s", elem[k]);
  }
  return ds;
}

/* Species of atom i, by type order (1, 2, 3) or by element name (Cl, Na, O). */
static int species_of(const histd_dataset *ds, size_t i, bool by_type) {
  if (by_type)
    return (int)ds->top->type[i] - 1;
  const char *e = ds->top->element + i * HISTD_ATOM_STR;
  return strcmp(e, "Cl") == 0 ? 0 : strcmp(e, "Na") == 0 ? 1 : 2;
}

typedef struct want {
  uint64_t counts[6][BINS], total[6], below[6], excluded[6], na[6], nb[6];
} want;

static int pair_index(int s, int t) { /* (0,0) (0,1) (0,2) (1,1) (1,2) (2,2) */
  static const int idx[3][3] = {{0, 1, 2}, {1, 3, 4}, {2, 4, 5}};
  return idx[s][t];
}

static void definition(const histd_dataset *ds, size_t lo, size_t hi, bool by_type,
                       bool exclude, want *w) {
  memset(w, 0, sizeof *w);
  const def_box box = {1, L, 0, L, 0, 0, L};
  for (size_t f = 0; f < FRAMES; f++) {
    histd_dataset v;
    histd_dataset_frame(ds, f, &v);
    for (size_t i = lo; i < hi; i++)
      for (size_t j = i + 1; j < hi; j++) {
        const int si = species_of(ds, i, by_type), sj = species_of(ds, j, by_type);
        const int k = pair_index(si < sj ? si : sj, si < sj ? sj : si);
        if (exclude && ds->top->mol[i] == ds->top->mol[j]) {
          w->excluded[k]++;
          continue;
        }
        w->total[k]++;
        const double d =
            definition_box_distance(&box, v.x[i], v.y[i], v.z[i], v.x[j], v.y[j], v.z[j]);
        const uint32_t b = definition_slot(d, WIDTH, NULL, BINS);
        if (b < BINS)
          w->counts[k][b]++;
      }
    for (int s = 0; s < 3; s++)
      for (int t = s; t < 3; t++)
        for (size_t i = lo; i < hi; i++) {
          w->na[pair_index(s, t)] += species_of(ds, i, by_type) == s;
          w->nb[pair_index(s, t)] += species_of(ds, i, by_type) == t;
        }
  }
}

static double field(const histd_result *r, const char *group, const char *name, uint64_t i,
                    histd_fvalue *raw) {
  const histd_field *fd = histd_schema_find(group, name);
  if (fd == NULL || !fd->present(r))
    return NAN;
  histd_fvalue v;
  uint64_t acc = 0;
  for (uint64_t k = 0; k <= i; k++) /* in order: the cumulative fields */
    fd->get(r, k, &acc, &v);
  if (raw != NULL)
    *raw = v;
  return fd->type == HISTD_FT_U64 ? (double)v.u : fd->type == HISTD_FT_F64 ? v.d : 0;
}

static void compare(const histd_result *r, const want *w, bool by_type, const char *what) {
  const char *names = by_type ? "1,2,3" : "Cl,Na,O";
  CHECK(r->partials == 6 && strcmp(r->species, names) == 0, "%s: %u partials of \"%s\"", what,
        r->partials, r->species);
  if (r->partials != 6)
    return;
  const double pi = 3.14159265358979323846;
  uint64_t all[BINS] = {0};
  for (int k = 0; k < 6; k++) {
    const int s = k < 3 ? 0 : k < 5 ? 1 : 2, t = k < 3 ? k : k < 5 ? k - 2 : 2;
    histd_fvalue a, b;
    field(r, "partial", "a", (uint64_t)k, &a);
    field(r, "partial", "b", (uint64_t)k, &b);
    static const char *const type_names[3] = {"1", "2", "3"}, *const elem_names[3] = {
                                                                   "Cl", "Na", "O"};
    const char *const *sp = by_type ? type_names : elem_names;
    CHECK(strcmp(a.s, sp[s]) == 0 && strcmp(b.s, sp[t]) == 0, "%s: partial %d is %s-%s, want "
          "%s-%s", what, k, a.s, b.s, sp[s], sp[t]);
    CHECK(field(r, "partial", "total", (uint64_t)k, NULL) == (double)w->total[k] &&
              field(r, "partial", "n_a", (uint64_t)k, NULL) == (double)w->na[k] &&
              field(r, "partial", "n_b", (uint64_t)k, NULL) == (double)w->nb[k],
          "%s: partial %d (%s-%s): pairs %g, atoms %g %g; want %llu, %llu %llu", what, k, a.s,
          b.s, field(r, "partial", "total", (uint64_t)k, NULL),
          field(r, "partial", "n_a", (uint64_t)k, NULL),
          field(r, "partial", "n_b", (uint64_t)k, NULL), (unsigned long long)w->total[k],
          (unsigned long long)w->na[k], (unsigned long long)w->nb[k]);
    uint64_t cum = 0;
    for (uint32_t bin = 0; bin < BINS; bin++) {
      const uint64_t i = (uint64_t)k * BINS + bin;
      const double got = field(r, "partial", "counts", i, NULL);
      CHECK(got == (double)w->counts[k][bin], "%s: partial %d bin %u: %g, want %llu", what, k,
            bin, got, (unsigned long long)w->counts[k][bin]);
      all[bin] += w->counts[k][bin];
      cum += w->counts[k][bin];
      /* g: counts / (pairs x V_shell / V), every frame's box the same */
      const double lo = bin * WIDTH, hi = (bin + 1) * WIDTH;
      const double shell = 4.0 / 3.0 * pi * (hi * hi * hi - lo * lo * lo);
      const double g = (double)w->counts[k][bin] / ((double)w->total[k] * shell / (L * L * L));
      const double twice = s == t ? 2.0 : 1.0;
      const double ab = twice * (double)cum / (double)w->na[k];
      const double ba = twice * (double)cum / (double)w->nb[k];
      const double gg = field(r, "partial", "g", i, NULL);
      const double gab = field(r, "partial", "coordination_ab", i, NULL);
      const double gba = field(r, "partial", "coordination_ba", i, NULL);
      CHECK(fabs(gg - g) <= 1e-12 * g && fabs(gab - ab) <= 1e-12 * ab &&
                fabs(gba - ba) <= 1e-12 * ba,
            "%s: partial %d bin %u: g %.17g n %.17g %.17g, want %.17g %.17g %.17g", what, k, bin,
            gg, gab, gba, g, ab, ba);
    }
  }
  for (uint32_t bin = 0; bin < BINS; bin++)
    CHECK(r->counts[bin] == all[bin], "%s: bin %u of every pair: %llu, want %llu", what, bin,
          (unsigned long long)r->counts[bin], (unsigned long long)all[bin]);
}

static void check_case(const histd_dataset *ds, bool by_type, bool exclude, bool selected) {
  char what[128];
  snprintf(what, sizeof what, "partials by %s%s%s", by_type ? "type" : "element",
           exclude ? ", exclude molecule" : "", selected ? ", of index:0-59" : "");
  histd_params params;
  histd_params_init(&params);
  snprintf(params.partials, sizeof params.partials, "%s", by_type ? "type" : "element");
  params.exclude_molecule = exclude;
  params.bucket_width = WIDTH;
  params.buckets = BINS;
  params.box = (histd_box){HISTD_BOX_ORTHO, L, 0, L, 0, 0, L};
  if (selected)
    snprintf(params.select_a, sizeof params.select_a, "index:0-59");
  histd_job job;
  char msg[256] = "";
  int rc = histd_job_bind(&job, &params, ds, NULL, NULL, msg, sizeof msg);
  CHECK(rc == 0, "%s: %s", what, msg);
  if (rc != 0) {
    histd_params_free(&params);
    return;
  }
  want w;
  definition(ds, 0, selected ? 60 : ATOMS, by_type, exclude, &w);
  const char *kernels[] = {"cpu-reference", "cpu", "grid", "dm-tree", "auto"};
  for (int k = 0; k <= 5; k++) {
    histd_result r;
    char label[192];
    snprintf(label, sizeof label, "%s, %s", what, k < 5 ? kernels[k] : "cpu in 3 shards");
    if (k == 5) {
      if (run_sharded(&job.problem, "cpu", 3, &r, label) != 0)
        continue;
    } else {
      histd_exec ex;
      histd_exec_init(&ex);
      snprintf(ex.kernel, sizeof ex.kernel, "%s", kernels[k]);
      ex.threads = 2;
      if ((rc = histd_run(&job.problem, &ex, NULL, &r, msg, sizeof msg)) != 0) {
        CHECK(rc == 0 || (k == 3 && exclude), "%s: %s", label, msg);
        continue;
      }
    }
    compare(&r, &w, by_type, label);
    if (k == 1) { /* the store's codec and back */
      unsigned char *head = NULL, *arrays = NULL;
      size_t hl = 0, al = 0;
      histd_result back;
      CHECK(histd_result_encode(&r, &head, &hl, &arrays, &al, msg, sizeof msg) == 0 &&
                histd_result_decode(head, hl, arrays, al, &back, msg, sizeof msg) == 0,
            "%s: codec: %s", label, msg);
      snprintf(label, sizeof label, "%s, through the codec", what);
      compare(&back, &w, by_type, label);
      histd_result_free(&back);
      free(head);
      free(arrays);
    }
    histd_result_free(&r);
  }
  histd_job_free(&job);
  histd_params_free(&params);
}

static void test_refusals(const histd_dataset *ds) {
  histd_params params;
  histd_job job;
  char msg[256] = "";
  const histd_param *row = histd_param_find("partials");
  histd_value v = {.kind = HISTD_VALUE_STRING, .string = "colour"};
  histd_params_init(&params);
  CHECK(row != NULL && row->set(&params, &v, msg, sizeof msg) != 0, "partials colour refused");
  CHECK_STR_CONTAINS(msg, "element, type, name or resname");
  snprintf(params.partials, sizeof params.partials, "type");
  params.bucket_width = WIDTH;
  params.buckets = BINS;
  snprintf(params.select_b, sizeof params.select_b, "type:1");
  CHECK(histd_job_bind(&job, &params, ds, NULL, NULL, msg, sizeof msg) != 0,
        "partials with select_b refused");
  CHECK_STR_CONTAINS(msg, "one set");
  params.select_b[0] = '\0';
  snprintf(params.partials, sizeof params.partials, "resname");
  histd_dataset plain = *ds;
  plain.top = NULL;
  CHECK(histd_job_bind(&job, &params, &plain, NULL, NULL, msg, sizeof msg) != 0,
        "partials without names refused");
  CHECK_STR_CONTAINS(msg, "resname");
  snprintf(params.partials, sizeof params.partials, "type");
  params.bucket_width = 0;
  params.buckets = 0;
  params.has_within = true;
  params.within = 1;
  CHECK(histd_job_bind(&job, &params, ds, NULL, NULL, msg, sizeof msg) != 0,
        "partials with within refused");
  CHECK_STR_CONTAINS(msg, "partials");
  histd_params_free(&params);
  /* more species than HISTD_MAX_SPECIES */
  histd_dataset many;
  histd_dataset_alloc(&many, 40, NULL, 0);
  for (size_t i = 0; i < 40; i++)
    many.x[i] = many.y[i] = many.z[i] = (double)i;
  histd_dataset_finish(&many, NULL, 0);
  histd_topology_alloc(&many, 40, HISTD_TOP_TYPE, NULL, 0);
  for (size_t i = 0; i < 40; i++)
    many.top->type[i] = (int64_t)i;
  histd_params_init(&params);
  snprintf(params.partials, sizeof params.partials, "type");
  params.bucket_width = 1;
  params.buckets = 4;
  CHECK(histd_job_bind(&job, &params, &many, NULL, NULL, msg, sizeof msg) != 0,
        "40 species refused");
  CHECK_STR_CONTAINS(msg, "more than 16 species");
  histd_params_free(&params);
  histd_dataset_free(&many);
}

int main(void) {
  histd_dataset ds = make_set();
  check_case(&ds, true, false, false);
  check_case(&ds, false, false, false);
  check_case(&ds, true, true, false);
  check_case(&ds, false, false, true);
  test_refusals(&ds);
  histd_dataset_free(&ds);
  if (check_failures)
    fprintf(stderr, "%d checks failed\n", check_failures);
  else
    printf("all checks passed\n");
  return check_failures ? 1 : 0;
}
