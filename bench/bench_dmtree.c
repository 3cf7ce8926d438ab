/*
 * bench_dmtree.c -- "dm-tree" against "cpu" (brute force) in the same run.
 *
 *   bench_dmtree [--n N] [--width W] [--runs R] [--cpu-runs K] [--threads T]
 *                [--scaling N1,N2,...] [--clumps C] [--weighted] [--gpu]
 *                [--baseline K]
 *
 * D1 on the CPU (shared/DESIGN.md, the CPU size): N = 2,000,000
 * uniform in [0, 23000)^3, width 2,000, every pair in 20 bins. dm-tree runs
 * R times (default 3), cpu K times (default 1) on the full workload --
 * nothing is extrapolated; the counts must be identical bucket for bucket.
 * --clumps C draws the points from C Gaussian clumps (sigma 500, centres
 * uniform in the cube; D2's shape) instead. --scaling times dm-tree alone
 * at each N (same box and width) and fits the exponent of time ~ N^k by
 * least squares on the logs (the paper's bound is k = 5/3). --weighted
 * gives every point a weight in [0.5, 1.5) and compares the weighted sums
 * too (to 1e-12 of each bin's). --gpu runs both on a worker of GPU 0
 * (dm-tree's leaf pairs on the GPU) against "tensor-core" instead of
 * "cpu" (the brute force "auto" runs there for such sets when the tree
 * does not pay: src/engine/choose.c's rules; before 2026-11-27
 * "balanced" at block size 1024, now --baseline balanced); D1 on the GPU
 * is --gpu --n 20000000. --baseline K names another kernel to compare
 * with (at its default block size; balanced: 1024). Prints
 * the CPU model (and the GPU), the load average, medians, pairs/s and the
 * ratio.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

static double gauss(void) { /* Box-Muller */
  double u = bench_rnd(), v = bench_rnd();
  return sqrt(-2 * log(1 - u)) * cos(6.283185307179586 * v);
}

static histd_dataset points(size_t n, size_t clumps, bool weighted) {
  if (clumps == 0)
    return bench_cube(n, 23000, weighted);
  double (*c)[3] = malloc(clumps * sizeof *c);
  for (size_t k = 0; k < clumps; k++)
    for (int a = 0; a < 3; a++)
      c[k][a] = bench_rnd() * 23000;
  histd_dataset ds;
  histd_dataset_alloc(&ds, n, NULL, 0);
  if (weighted)
    histd_dataset_alloc_weights(&ds, NULL, 0);
  for (size_t i = 0; i < n; i++) {
    if (weighted)
      ds.w[i] = 0.5 + bench_rnd();
    const double *o = c[(size_t)(bench_rnd() * (double)clumps)];
    ds.x[i] = o[0] + 500 * gauss();
    ds.y[i] = o[1] + 500 * gauss();
    ds.z[i] = o[2] + 500 * gauss();
  }
  free(c);
  histd_dataset_finish(&ds, NULL, 0);
  return ds;
}

static histd_worker *worker; /* the CPU's, or GPU 0's (--gpu) */

/* Median kernel time (ms) of `runs` runs; the last result stays in *keep. */
static double time_kernel(const histd_dataset *ds, const char *kernel, uint32_t block,
                          double width, int runs, unsigned threads, histd_result *keep) {
  histd_problem p;
  memset(&p, 0, sizeof p);
  p.a = ds;
  p.weighted = ds->w != NULL;
  p.bins.kind = HISTD_BINS_WIDTH;
  p.bins.width = width;
  double t[64];
  runs = runs > 64 ? 64 : runs;
  for (int r = 0; r < runs; r++) {
    histd_exec ex;
    histd_exec_init(&ex);
    snprintf(ex.kernel, sizeof ex.kernel, "%s", kernel);
    ex.threads = threads;
    ex.block_size = block;
    char msg[256] = "";
    histd_result res;
    if (histd_worker_run(worker, &p, &ex, NULL, &res, msg, sizeof msg) != 0) {
      fprintf(stderr, "%s: %s\n", kernel, msg);
      exit(1);
    }
    t[r] = res.timing.kernel_ms;
    if (r + 1 < runs)
      histd_result_free(&res);
    else
      *keep = res;
  }
  return bench_median(t, runs);
}

int main(int argc, char **argv) {
  size_t n = 2000000, clumps = 0;
  double width = 2000;
  int runs = 3, cpu_runs = 1;
  unsigned threads = 0;
  const char *scaling = NULL;
  bool weighted = false, gpu = false;
  const char *baseline = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--n") == 0 && i + 1 < argc)
      n = strtoull(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--width") == 0 && i + 1 < argc)
      width = atof(argv[++i]);
    else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
      runs = atoi(argv[++i]);
    else if (strcmp(argv[i], "--cpu-runs") == 0 && i + 1 < argc)
      cpu_runs = atoi(argv[++i]);
    else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
      threads = (unsigned)atoi(argv[++i]);
    else if (strcmp(argv[i], "--scaling") == 0 && i + 1 < argc)
      scaling = argv[++i];
    else if (strcmp(argv[i], "--clumps") == 0 && i + 1 < argc)
      clumps = strtoull(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--weighted") == 0)
      weighted = true;
    else if (strcmp(argv[i], "--gpu") == 0)
      gpu = true;
    else if (strcmp(argv[i], "--baseline") == 0 && i + 1 < argc)
      baseline = argv[++i];
    else {
      fprintf(stderr,
              "usage: %s [--n N] [--width W] [--runs R] [--cpu-runs K] [--threads T] "
              "[--scaling N1,N2,...] [--clumps C] [--weighted] [--gpu] [--baseline K]\n",
              argv[0]);
      return 2;
    }
  }
  char model[256] = "unknown", line[512];
  FILE *f = fopen("/proc/cpuinfo", "r");
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "model name", 10) == 0) {
      snprintf(model, sizeof model, "%s", strchr(line, ':') + 2);
      model[strcspn(model, "\n")] = 0;
      break;
    }
  if (f)
    fclose(f);
  double load = 0;
  f = fopen("/proc/loadavg", "r");
  if (f && fscanf(f, "%lf", &load) != 1)
    load = -1;
  if (f)
    fclose(f);
  printf("cpu: %s, %u threads, load average %.2f\n", model,
         threads ? threads : histd_cpu_count(), load);
  char why[256] = "";
  if (histd_worker_create(&worker, gpu ? 0 : -1, why, sizeof why) != 0) {
    fprintf(stderr, "no worker on %s: %s\n", gpu ? "GPU 0" : "the CPU", why);
    return 1;
  }
  const char *base = baseline ? baseline : gpu ? "tensor-core" : "cpu";

  if (scaling != NULL) {
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    int m = 0;
    for (const char *s = scaling; *s;) {
      size_t k = strtoull(s, (char **)&s, 10);
      s += *s == ',';
      histd_dataset ds = points(k, clumps, weighted);
      histd_result r;
      double ms = time_kernel(&ds, "dm-tree", 0, width, runs, threads, &r);
      printf("scaling: n %zu, width %g: dm-tree %.1f ms median of %d (%s)\n", k, width, ms,
             runs, r.device);
      double x = log((double)k), y = log(ms);
      sx += x, sy += y, sxx += x * x, sxy += x * y, m++;
      histd_result_free(&r);
      histd_dataset_free(&ds);
    }
    if (m >= 2)
      printf("scaling: time ~ N^%.3f (least squares over %d sizes; the paper: 5/3 = 1.667)\n",
             (m * sxy - sx * sy) / (m * sxx - sx * sx), m);
    return 0;
  }

  histd_dataset ds = points(n, clumps, weighted);
  histd_result rd, rc;
  double td = time_kernel(&ds, "dm-tree", 0, width, runs, threads, &rd);
  if (cpu_runs <= 0) { /* dm-tree alone */
    printf("dm-tree: %.1f ms median of %d, %.3g pairs/s (%s)\n", td, runs,
           (double)rd.total / td * 1e3, rd.device);
    histd_result_free(&rd);
    histd_dataset_free(&ds);
    histd_worker_destroy(worker);
    return 0;
  }
  const uint32_t block = strcmp(base, "balanced") == 0 ? 1024 : 0;
  double tc = time_kernel(&ds, base, block, width, cpu_runs, threads, &rc);
  bool same = rd.bins.count == rc.bins.count && rd.overflow == rc.overflow &&
              memcmp(rd.counts, rc.counts, rd.bins.count * sizeof *rd.counts) == 0;
  for (uint32_t k = 0; same && weighted && k < rd.bins.count; k++) /* weights >= 0.25 */
    same = fabs(rd.weighted[k] - rc.weighted[k]) <= 1e-12 * fabs(rc.weighted[k]);
  const double pairs = (double)rd.total;
  printf("workload: n %zu (%s%s), width %g, %u bins, %.4g pairs\n", n,
         clumps ? "Gaussian clumps" : "uniform in the 23000 cube",
         weighted ? ", weighted" : "", width, rd.bins.count, pairs);
  printf("dm-tree: %.1f ms median of %d, %.3g pairs/s (%s)\n", td, runs, pairs / td * 1e3,
         rd.device);
  printf("%s: %.1f ms median of %d, %.3g pairs/s (%s, block %u: %s)\n", base, tc, cpu_runs,
         pairs / tc * 1e3, rc.kernel, rc.block_size, rc.device);
  printf("ratio dm-tree / %s: %.2fx faster; counts %s\n", base, tc / td,
         same ? (weighted ? "identical, weighted sums within 1e-12" : "identical") : "DIFFER");
  histd_result_free(&rd);
  histd_result_free(&rc);
  histd_dataset_free(&ds);
  histd_worker_destroy(worker);
  return same ? 0 : 1;
}
