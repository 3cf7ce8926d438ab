/*
 * bench_stats.c -- what the statistics family costs the "cpu" kernel, in
 * the same run as the plain histogram of as many pairs (the 1.5x target of
 * the statistics issue) and as "cpu-reference".
 *
 *   bench_stats [--runs R] [--ref-runs K] [--scale F] [--ref-scale G]
 *
 * S1  periodic g(r): 32,000 points uniform in a cube of side 34 (a liquid's
 *     density), r_max = L/2, 200 bins; baseline: the plain histogram of the
 *     same points (open space, 200 bins of the same width)
 * S2  A x B, weighted, 80 log bins from 0.1 to 23000: 200,000 x 200,000
 *     points in the 23,000 cube, the size (times --scale: 0.1 is a
 *     quick look, but sparser groups for the cpu kernel's weights, so a
 *     higher ratio); baseline: the plain self histogram of sqrt(2) n_a
 *     points (the same number of pairs), 80 bins of 500
 * Medians of R runs (default 3) of kernel time, each workload's runs taken
 * in turns with its baseline's (a passing load weighs on both); cpu-reference K runs
 * (default 1; 0 skips it) on S1, and on S2 at G times its size (default
 * 0.05: 10,000 x 10,000; the reference meets S2's 4e10 pairs one by one in
 * float64, hours), against cpu on that same smaller S2. Prints the CPU,
 * the load, pairs/s and the ratios.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "histd/histd.h"

static double run_ms(const histd_problem *p, const char *kernel) {
  histd_exec ex;
  histd_exec_init(&ex);
  snprintf(ex.kernel, sizeof ex.kernel, "%s", kernel);
  histd_result res;
  char msg[256];
  if (histd_run(p, &ex, NULL, &res, msg, sizeof msg) != 0) {
    fprintf(stderr, "%s: %s\n", kernel, msg);
    exit(1);
  }
  double ms = res.timing.kernel_ms;
  histd_result_free(&res);
  return ms;
}

/* Median kernel ms of `runs` runs. */
static double timed(const histd_problem *p, const char *kernel, int runs) {
  double t[64];
  for (int r = 0; r < runs; r++)
    t[r] = run_ms(p, kernel);
  return bench_median(t, runs);
}

/* Medians of `runs` runs of p and of its baseline q, taken in turns (p, q,
 * p, q, ...) so that a load that comes and goes weighs on both alike. */
static void timed_pair(const histd_problem *p, const histd_problem *q, int runs, double *tp,
                       double *tq) {
  double a[64], b[64];
  for (int r = 0; r < runs; r++) {
    a[r] = run_ms(p, "cpu");
    b[r] = run_ms(q, "cpu");
  }
  *tp = bench_median(a, runs);
  *tq = bench_median(b, runs);
}

static void report(const char *label, const char *what, double ms, uint64_t pairs) {
  char load[64] = "?";
  FILE *f = fopen("/proc/loadavg", "r");
  if (f != NULL && fgets(load, sizeof load, f))
    load[strcspn(load, "\n")] = 0;
  if (f)
    fclose(f);
  printf("%-3s %-34s median %9.1f ms  %.3e pairs/s  load: %s\n", label, what, ms,
         (double)pairs / (ms / 1e3), load);
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  int runs = 3, ref_runs = 1;
  double scale = 1, ref_scale = 0.05;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
      runs = atoi(argv[++i]);
    else if (strcmp(argv[i], "--ref-runs") == 0 && i + 1 < argc)
      ref_runs = atoi(argv[++i]);
    else if (strcmp(argv[i], "--scale") == 0 && i + 1 < argc)
      scale = atof(argv[++i]);
    else if (strcmp(argv[i], "--ref-scale") == 0 && i + 1 < argc)
      ref_scale = atof(argv[++i]);
    else {
      fprintf(stderr, "usage: %s [--runs R] [--ref-runs K] [--scale F] [--ref-scale G]\n",
              argv[0]);
      return 2;
    }
  }
  if (runs < 1 || runs > 64 || ref_runs < 0 || ref_runs > 64 || !(scale > 0 && scale <= 1) ||
      !(ref_scale > 0 && ref_scale <= 1)) {
    fprintf(stderr, "runs 1..64, ref-runs 0..64, scale and ref-scale in (0, 1]\n");
    return 2;
  }
  printf("cores: %u\n", histd_cpu_count());

  /* S1: periodic g(r) against the plain histogram of the same points */
  const double side = 34;
  histd_dataset liquid = bench_cube(32000, side, false);
  histd_problem rdf;
  memset(&rdf, 0, sizeof rdf);
  rdf.a = &liquid;
  rdf.box = (histd_box){HISTD_BOX_ORTHO, side, 0, side, 0, 0, side};
  rdf.bins = (histd_bins){HISTD_BINS_WIDTH, 200, side / 2 / 200, NULL, 0, 0};
  histd_problem plain = rdf;
  plain.box.kind = HISTD_BOX_NONE;
  plain.box = (histd_box){HISTD_BOX_NONE, 0, 0, 0, 0, 0, 0};
  const uint64_t p1 = histd_problem_pairs(&rdf);
  double t_rdf, t_plain1;
  timed_pair(&rdf, &plain, runs, &t_rdf, &t_plain1);
  report("S1", "cpu, periodic g(r)", t_rdf, p1);
  report("S1", "cpu, plain histogram (baseline)", t_plain1, p1);
  if (ref_runs > 0) {
    double t_ref = timed(&rdf, "cpu-reference", ref_runs);
    report("S1", "cpu-reference, periodic g(r)", t_ref, p1);
    printf("S1  cpu / cpu-reference: %.2fx faster\n", t_ref / t_rdf);
  }
  printf("S1  periodic g(r) costs %.2fx the plain histogram (target <= 1.5x)\n", t_rdf / t_plain1);
  histd_dataset_free(&liquid);

  /* S2: weighted A x B in log bins against a plain self histogram of as
   * many pairs */
  const size_t na = (size_t)(200000 * scale);
  histd_dataset a = bench_cube(na, 23000, true), b = bench_cube(na, 23000, true);
  double edges[81];
  histd_log_edges(0.1, 23000, 80, edges, NULL, 0);
  histd_problem dr;
  memset(&dr, 0, sizeof dr);
  dr.a = &a;
  dr.b = &b;
  dr.bins = (histd_bins){HISTD_BINS_EDGES, 80, 0, edges, 0, 0};
  dr.weighted = true;
  histd_dataset self = bench_cube((size_t)(na * sqrt(2.0)) + 1, 23000, false);
  histd_problem base;
  memset(&base, 0, sizeof base);
  base.a = &self;
  base.bins = (histd_bins){HISTD_BINS_WIDTH, 80, 500, NULL, 0, 0};
  double t_dr, t_base;
  timed_pair(&dr, &base, runs, &t_dr, &t_base);
  report("S2", "cpu, A x B weighted, 80 log bins", t_dr, histd_problem_pairs(&dr));
  report("S2", "cpu, plain self histogram (baseline)", t_base, histd_problem_pairs(&base));
  double per_dr = t_dr / (double)histd_problem_pairs(&dr);
  double per_base = t_base / (double)histd_problem_pairs(&base);
  printf("S2  (%zu x %zu) weighted A x B costs %.2fx the plain histogram per pair (target <= 1.5x)\n",
         na, na, per_dr / per_base);
  if (ref_runs > 0) { /* cpu-reference on a smaller S2, against cpu on the same */
    const size_t nr = (size_t)(200000 * ref_scale);
    histd_dataset ra = bench_cube(nr, 23000, true), rb = bench_cube(nr, 23000, true);
    histd_problem small = dr;
    small.a = &ra;
    small.b = &rb;
    const uint64_t ps = histd_problem_pairs(&small);
    double t_ref = timed(&small, "cpu-reference", ref_runs), t_cpu = timed(&small, "cpu", runs);
    report("S2", "cpu-reference, smaller S2", t_ref, ps);
    report("S2", "cpu, smaller S2", t_cpu, ps);
    printf("S2  (%zu x %zu) cpu / cpu-reference: %.2fx faster\n", nr, nr, t_ref / t_cpu);
    histd_dataset_free(&ra);
    histd_dataset_free(&rb);
  }
  histd_dataset_free(&a);
  histd_dataset_free(&b);
  histd_dataset_free(&self);
  return 0;
}
