/*
 * bench_shards.c -- what cutting a job into shards costs: the whole job on
 * one worker against the sum of its shards (histd_shard_plan_make's block
 * pairs) run one after another on the same worker, in the same run. A
 * grid job is the case to watch: each shard builds its own cells over its
 * two blocks (sorting them, and on a GPU copying them), and a block of
 * fewer points gets fewer cells on a GPU (at most a cell per 16 points).
 *
 *   bench_shards [--n N] [--div D] [--shards K] [--runs R] [--gpu]
 *
 * The job: N uniform points (default 1,000,000) in a periodic cube,
 * r_max = L/D (default 20), 200 bins, kernel grid (G1's shape at a CPU's
 * scale; D = 100 is G2's), cut into at most K shards (default 8). Wall
 * time of each shard's histd_worker_run_shard (its sort included), summed;
 * medians of R (default 3). Checks that both give the same counts.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "histd/histd.h"

/* The plan's shards (all of p when plan is NULL) run on w one by one: the
 * summed wall ms; counts and overflow added into sum (count + 1 slots). */
static double run_plan(histd_worker *w, const histd_problem *p, const histd_shard_plan *plan,
                       uint64_t *sum) {
  histd_exec ex;
  histd_exec_init(&ex);
  snprintf(ex.kernel, sizeof ex.kernel, "grid");
  const uint64_t count = plan != NULL ? plan->count : 1;
  double ms = 0;
  memset(sum, 0, (p->bins.count + 1) * sizeof *sum);
  for (uint64_t s = 0; s < count; s++) {
    histd_shard sh;
    if (plan != NULL)
      histd_shard_get(plan, s, &sh);
    histd_result r;
    char msg[256];
    const double t0 = histd_now_ms();
    if (histd_worker_run_shard(w, p, &ex, plan != NULL ? &sh : NULL, NULL, &r, msg,
                               sizeof msg) != 0) {
      fprintf(stderr, "bench_shards: shard %llu: %s\n", (unsigned long long)s, msg);
      exit(1);
    }
    ms += histd_now_ms() - t0;
    for (uint32_t k = 0; k < p->bins.count; k++)
      sum[k] += r.counts[k];
    sum[p->bins.count] += r.overflow;
    if (s == 0 && plan == NULL)
      printf("whole job on %s\n", r.device);
    histd_result_free(&r);
  }
  return ms;
}

int main(int argc, char **argv) {
  size_t n = 1000000;
  uint64_t want = 8;
  int runs = 3, device = -1;
  double div = 20;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--n") == 0 && i + 1 < argc)
      n = strtoull(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--div") == 0 && i + 1 < argc)
      div = atof(argv[++i]);
    else if (strcmp(argv[i], "--shards") == 0 && i + 1 < argc)
      want = strtoull(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
      runs = atoi(argv[++i]);
    else if (strcmp(argv[i], "--gpu") == 0)
      device = 0;
    else {
      fprintf(stderr, "usage: bench_shards [--n N] [--div D] [--shards K] [--runs R] [--gpu]\n");
      return 2;
    }
  }
  if (runs < 1 || runs > 64 || n < 2 || want < 1 || !(div >= 2)) {
    fprintf(stderr, "bench_shards: runs 1..64, n >= 2, shards >= 1, div >= 2\n");
    return 2;
  }
  /* a liquid's density: n / L^3 = 0.8 */
  const double L = cbrt((double)n / 0.8);
  histd_dataset ds = bench_cube(n, L, false);
  histd_problem p;
  memset(&p, 0, sizeof p);
  p.a = &ds;
  p.box = (histd_box){HISTD_BOX_ORTHO, L, 0, L, 0, 0, L};
  p.bins = (histd_bins){HISTD_BINS_WIDTH, 200, L / div / 200, NULL, 0, 0};

  histd_shard_plan plan;
  histd_shard_plan_make(&p, "grid", want, &plan);

  histd_worker *w;
  char msg[256];
  if (histd_worker_create(&w, device, msg, sizeof msg) != 0) {
    fprintf(stderr, "bench_shards: %s\n", msg);
    return 1;
  }
  uint64_t *s0 = calloc(202, sizeof *s0), *s1 = calloc(202, sizeof *s1);
  double t[2][64];
  for (int k = 0; k < runs; k++) { /* in turns: a passing load weighs on both */
    t[0][k] = run_plan(w, &p, NULL, s0);
    t[1][k] = run_plan(w, &p, &plan, s1);
  }
  const bool same = memcmp(s0, s1, 201 * sizeof *s0) == 0;
  const double m0 = bench_median(t[0], runs), m1 = bench_median(t[1], runs);
  printf("%zu points, periodic cube L = %.4g, r_max = L/%g, 200 bins, kernel grid; "
         "medians of %d (wall ms, sorting included)\n", n, L, div, runs);
  printf("| run | shards | time | vs whole |\n| --- | ---: | ---: | ---: |\n");
  printf("| whole job | 1 | %.1f ms | 1 |\n", m0);
  printf("| its shards, one after another | %llu | %.1f ms | %.2fx |\n",
         (unsigned long long)plan.count, m1, m1 / m0);
  printf("counts and overflow identical: %s\n", same ? "yes" : "NO");
  histd_worker_destroy(w);
  histd_dataset_free(&ds);
  free(s0);
  free(s1);
  return same ? 0 : 1;
}
