/*
 * test_blocks.c -- error bars from blocks of frames ("blocks": K) against
 * the definition written out here: frame f belongs to block floor(f K / F);
 * a block's g in bin k is its frames' counts over (their pairs x V_k / V),
 * V its pairs over its pair density sum_f P_f / V_f (the rule of g over
 * several frames, shared/DESIGN.md); its coordination the cumulative count
 * to the bin's upper edge (pairs below the first edge included), twice for
 * self pairs, per atom of A in its frames; the mean over the blocks and
 * the standard error of that mean, sqrt(sum (x - mean)^2 / (K - 1) / K).
 * The counts of each frame come from a brute force of the contract (the
 * periodic minimum image per axis). Every CPU kernel, A x B and self, equal
 * and explicit bins (E[0] > 0: pairs below it), frames of different boxes,
 * in shards as a cluster cuts them, and the result through the store's
 * codec and back; the refusals with their sentences.
 */
#include <math.h>

#include "../check.h"
#include "../definition.h"
#include "../shards.h"
#include "histd/histd.h"
#include "histd/io.h"
#include "histd/job.h"
#include "histd/schema.h"

static uint64_t seed = 77;
static double rnd(void) { /* splitmix64 -> [0, 1) */
  uint64_t z = (seed += 0x9E3779B97F4A7C15u);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
  return (double)((z ^ (z >> 31)) >> 11) * 0x1p-53;
}

#define FRAMES 7
#define N 60

/* FRAMES frames of N points, frame f in a cube of side 8 + f / 4. */
static histd_dataset make_set(void) {
  histd_dataset ds;
  histd_dataset_alloc(&ds, (size_t)FRAMES * N, NULL, 0);
  size_t counts[FRAMES];
  histd_box boxes[FRAMES];
  for (size_t f = 0; f < FRAMES; f++) {
    const double L = 8 + (double)f / 4;
    for (size_t i = 0; i < N; i++) {
      ds.x[f * N + i] = rnd() * L;
      ds.y[f * N + i] = rnd() * L;
      ds.z[f * N + i] = rnd() * L;
    }
    counts[f] = N;
    boxes[f] = (histd_box){HISTD_BOX_ORTHO, L, 0, L, 0, 0, L};
  }
  histd_dataset_finish(&ds, NULL, 0);
  histd_dataset_set_frames(&ds, FRAMES, counts, boxes, NULL, 0);
  return ds;
}

/* Frame f's counts (bins 0..K-1), below and pairs, by the rule: self pairs
 * i < j of the frame, or A = its first half against B = its second. */
static void frame_counts(const histd_dataset *ds, size_t f, bool cross, const histd_bins *bins,
                         uint64_t *counts, uint64_t *below, uint64_t *pairs) {
  histd_dataset v;
  histd_dataset_frame(ds, f, &v);
  const def_box box = {1, v.box.ax, 0, v.box.by, 0, 0, v.box.cz};
  memset(counts, 0, bins->count * sizeof *counts);
  *below = *pairs = 0;
  for (size_t i = 0; i < N; i++)
    for (size_t j = cross ? N / 2 : i + 1; j < N; j++) {
      if (cross && i >= N / 2)
        break;
      const double d = definition_box_distance(&box, v.x[i], v.y[i], v.z[i], v.x[j], v.y[j],
                                               v.z[j]);
      (*pairs)++;
      const uint32_t s = definition_slot(d, bins->width, bins->edges, bins->count);
      if (s < bins->count)
        counts[s]++;
      else if (s == bins->count)
        (*below)++;
    }
}

typedef struct want {
  double g[FRAMES][16], n[FRAMES][16], g_mean[16], g_sem[16], n_mean[16], n_sem[16];
} want;

static void definition(const histd_dataset *ds, bool cross, const histd_bins *bins, uint32_t K,
                       want *w) {
  const double pi = 3.14159265358979323846;
  uint64_t c[FRAMES][16], below[FRAMES], pairs[FRAMES];
  for (size_t f = 0; f < FRAMES; f++)
    frame_counts(ds, f, cross, bins, c[f], &below[f], &pairs[f]);
  const double atoms = cross ? N / 2 : N; /* A's points a frame */
  for (uint32_t b = 0; b < K; b++) {
    uint64_t total = 0, cum = 0, count[16] = {0};
    double density = 0, frames = 0;
    for (size_t f = 0; f < FRAMES; f++) {
      if (f * K / FRAMES != b)
        continue;
      frames++;
      total += pairs[f];
      cum += below[f];
      density += (double)pairs[f] / (ds->frame[f].box.ax * ds->frame[f].box.by *
                                     ds->frame[f].box.cz);
      for (uint32_t k = 0; k < bins->count; k++)
        count[k] += c[f][k];
    }
    for (uint32_t k = 0; k < bins->count; k++) {
      const double lo = histd_bins_edge(bins, k), hi = histd_bins_edge(bins, k + 1);
      const double shell = 4.0 / 3.0 * pi * (hi * hi * hi - lo * lo * lo);
      w->g[b][k] = (double)count[k] / ((double)total * shell / ((double)total / density));
      cum += count[k];
      w->n[b][k] = (cross ? 1.0 : 2.0) * (double)cum / (atoms * frames);
    }
  }
  for (uint32_t k = 0; k < bins->count; k++) {
    double sg = 0, sn = 0, qg = 0, qn = 0;
    for (uint32_t b = 0; b < K; b++)
      sg += w->g[b][k], sn += w->n[b][k];
    w->g_mean[k] = sg / K;
    w->n_mean[k] = sn / K;
    for (uint32_t b = 0; b < K; b++) {
      qg += (w->g[b][k] - w->g_mean[k]) * (w->g[b][k] - w->g_mean[k]);
      qn += (w->n[b][k] - w->n_mean[k]) * (w->n[b][k] - w->n_mean[k]);
    }
    w->g_sem[k] = sqrt(qg / (K - 1) / K);
    w->n_sem[k] = sqrt(qn / (K - 1) / K);
  }
}

/* Field (group, name) of r, element i. */
static double field(const histd_result *r, const char *group, const char *name, uint64_t i) {
  const histd_field *fd = histd_schema_find(group, name);
  if (fd == NULL || !fd->present(r))
    return NAN;
  histd_fvalue v;
  uint64_t acc = 0;
  fd->get(r, i, &acc, &v);
  return fd->type == HISTD_FT_U64 ? (double)v.u : v.d;
}

static bool near(double a, double b) { return fabs(a - b) <= 1e-12 * fmax(fabs(b), 1e-300); }

static void compare(const histd_result *r, const want *w, uint32_t K, const char *what) {
  const uint32_t bins = r->bins.count;
  CHECK(field(r, NULL, "blocks", 0) == K, "%s: blocks %g, want %u", what,
        field(r, NULL, "blocks", 0), K);
  for (uint32_t b = 0; b < K; b++)
    for (uint32_t k = 0; k < bins; k++) {
      const double g = field(r, "block", "g", (uint64_t)b * bins + k);
      const double n = field(r, "block", "coordination", (uint64_t)b * bins + k);
      CHECK(near(g, w->g[b][k]) && near(n, w->n[b][k]),
            "%s: block %u bin %u: g %.17g n %.17g, want %.17g %.17g", what, b, k, g, n,
            w->g[b][k], w->n[b][k]);
    }
  for (uint32_t k = 0; k < bins; k++) {
    const double got[4] = {field(r, "block", "g_mean", k), field(r, "block", "g_sem", k),
                           field(r, "block", "coordination_mean", k),
                           field(r, "block", "coordination_sem", k)};
    const double exp[4] = {w->g_mean[k], w->g_sem[k], w->n_mean[k], w->n_sem[k]};
    for (int q = 0; q < 4; q++) /* a sem of deviations: a little looser */
      CHECK(fabs(got[q] - exp[q]) <= 1e-10 * fmax(fabs(exp[q]), 1e-12),
            "%s: bin %u statistic %d: %.17g, want %.17g", what, k, q, got[q], exp[q]);
  }
}

static void check_case(const histd_dataset *ds, bool cross, bool edges, uint32_t K) {
  char what[128];
  snprintf(what, sizeof what, "%s, %s bins, %u blocks", cross ? "A x B" : "self",
           edges ? "explicit" : "equal", K);
  histd_params params;
  histd_params_init(&params);
  params.blocks = K;
  if (cross) {
    snprintf(params.select_a, sizeof params.select_a, "index:0-%d", N / 2 - 1);
    snprintf(params.select_b, sizeof params.select_b, "index:%d-%d", N / 2, N - 1);
  }
  if (edges) {
    const double e[5] = {0.5, 1.25, 2, 3, 3.9};
    params.edges = malloc(sizeof e);
    memcpy(params.edges, e, sizeof e);
    params.edge_count = 5;
  } else {
    params.bucket_width = 0.5;
    params.buckets = 7;
  }
  histd_job job;
  char msg[256] = "";
  int rc = histd_job_bind(&job, &params, ds, NULL, NULL, msg, sizeof msg);
  CHECK(rc == 0, "%s: %s", what, msg);
  if (rc != 0) {
    histd_params_free(&params);
    return;
  }
  want w;
  definition(ds, cross, &job.problem.bins, K, &w);
  const char *kernels[] = {"cpu-reference", "cpu", "grid", "auto"};
  for (int k = 0; k <= 4; k++) {
    histd_result r;
    char label[192];
    snprintf(label, sizeof label, "%s, %s", what, k < 4 ? kernels[k] : "cpu in 4 shards");
    if (k == 4) {
      if (run_sharded(&job.problem, "cpu", 4, &r, label) != 0)
        continue;
    } else {
      histd_exec ex;
      histd_exec_init(&ex);
      snprintf(ex.kernel, sizeof ex.kernel, "%s", kernels[k]);
      ex.threads = 2;
      if ((rc = histd_run(&job.problem, &ex, NULL, &r, msg, sizeof msg)) != 0) {
        CHECK(rc == 0, "%s: %s", label, msg);
        continue;
      }
    }
    compare(&r, &w, K, label);
    if (k == 1) { /* the store's codec and back: the blocks are read again */
      unsigned char *head = NULL, *arrays = NULL;
      size_t hl = 0, al = 0;
      histd_result back;
      CHECK(histd_result_encode(&r, &head, &hl, &arrays, &al, msg, sizeof msg) == 0 &&
                histd_result_decode(head, hl, arrays, al, &back, msg, sizeof msg) == 0,
            "%s: codec: %s", label, msg);
      snprintf(label, sizeof label, "%s, through the codec", what);
      compare(&back, &w, K, label);
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
  histd_value v = {.kind = HISTD_VALUE_NUMBER, .number = 1};
  char msg[256] = "";
  histd_params_init(&params);
  const histd_param *row = histd_param_find("blocks");
  CHECK(row != NULL && row->set(&params, &v, msg, sizeof msg) != 0, "blocks 1 is refused");
  CHECK_STR_CONTAINS(msg, "at least 2");
  params.blocks = FRAMES + 1;
  params.bucket_width = 0.5;
  params.buckets = 7;
  histd_job job;
  CHECK(histd_job_bind(&job, &params, ds, NULL, NULL, msg, sizeof msg) != 0,
        "more blocks than frames is refused");
  CHECK_STR_CONTAINS(msg, "frames");
  params.blocks = 2;
  params.bucket_width = 0;
  params.buckets = 0;
  params.has_within = true;
  params.within = 1;
  CHECK(histd_job_bind(&job, &params, ds, NULL, NULL, msg, sizeof msg) != 0,
        "blocks with within is refused");
  CHECK_STR_CONTAINS(msg, "blocks");
  histd_params_free(&params);
}

int main(void) {
  histd_dataset ds = make_set();
  for (int cross = 0; cross < 2; cross++)
    for (int edges = 0; edges < 2; edges++) {
      check_case(&ds, cross, edges, 3); /* 7 frames: blocks of 3, 2 and 2 */
      check_case(&ds, cross, edges, 7); /* a frame a block */
    }
  check_case(&ds, false, false, 2);
  test_refusals(&ds);
  histd_dataset_free(&ds);
  if (check_failures)
    fprintf(stderr, "%d checks failed\n", check_failures);
  else
    printf("all checks passed\n");
  return check_failures ? 1 : 0;
}
