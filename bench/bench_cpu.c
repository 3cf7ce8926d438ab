/*
 * bench_cpu.c -- the "cpu" kernel against "cpu-reference", in the same run.
 *
 *   bench_cpu [--quick] [--runs R] [--ref-runs K] [--n N] [--threads T]
 *
 * Workloads (shared/DESIGN.md): W4 = N 100,000, w 500, 80 buckets, and
 * N 200,000, w 500, 80 buckets; points uniform in [0, 23000)^3 from a fixed
 * seed. `cpu` runs R times (default 5), `cpu-reference` K times (default 1)
 * on the full workload -- nothing is extrapolated. Prints the CPU model,
 * the load average, medians, pairs/s, the ratio cpu / cpu-reference, and
 * whether the two kernels' counts are identical bucket for bucket.
 * --n runs one workload of that size instead; --quick skips cpu-reference.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "histd/histd.h"
#include "../tests/plain.h"

static uint64_t rng(uint64_t *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 2685821657736338717ull;
}

static void cpu_model(char *out, size_t len) {
  snprintf(out, len, "unknown");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (f == NULL)
    return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "model name", 10) == 0) {
      char *p = strchr(line, ':');
      if (p) {
        p += 2;
        p[strcspn(p, "\n")] = 0;
        snprintf(out, len, "%s", p);
      }
      break;
    }
  }
  fclose(f);
}

static void loadavg(char *out, size_t len) {
  snprintf(out, len, "?");
  FILE *f = fopen("/proc/loadavg", "r");
  if (f == NULL)
    return;
  if (fgets(out, (int)len, f))
    out[strcspn(out, "\n")] = 0;
  fclose(f);
}

/* CPU time of the whole process (all threads), ms: less sensitive than wall
 * time to other jobs sharing the machine. */
static double cpu_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Runs `kernel` `runs` times; returns the median kernel time in ms and keeps
 * the last result in *keep (caller frees). */
static double time_kernel(const histd_dataset *ds, const char *kernel, int runs,
                          unsigned threads, histd_result *keep, double *min_ms,
                          double *cpu_med) {
  plain_job spec;
  plain_init(&spec);
  spec.bucket_width = 500;
  spec.buckets = 80;
  spec.threads = threads;
  snprintf(spec.kernel, sizeof spec.kernel, "%s", kernel);
  double t[64], c[64];
  char msg[256];
  *min_ms = 1e300;
  for (int r = 0; r < runs; r++) {
    histd_result res;
    double c0 = cpu_ms();
    if (plain_run(ds, &spec, NULL, &res, msg, sizeof msg) != 0) {
      fprintf(stderr, "%s: %s\n", kernel, msg);
      exit(1);
    }
    c[r] = cpu_ms() - c0;
    t[r] = res.timing.kernel_ms;
    if (t[r] < *min_ms)
      *min_ms = t[r];
    if (r == runs - 1)
      *keep = res;
    else
      histd_result_free(&res);
  }
  *cpu_med = median(c, runs);
  return median(t, runs);
}

static int bench(size_t n, const char *label, int runs, int ref_runs, unsigned threads) {
  histd_dataset ds;
  char msg[256];
  if (histd_dataset_alloc(&ds, n, msg, sizeof msg) != 0) {
    fprintf(stderr, "%s\n", msg);
    return 1;
  }
  uint64_t s = 0x5EED2026ull;
  for (size_t i = 0; i < n; i++) {
    ds.x[i] = (double)(rng(&s) >> 11) * 0x1p-53 * 23000.0;
    ds.y[i] = (double)(rng(&s) >> 11) * 0x1p-53 * 23000.0;
    ds.z[i] = (double)(rng(&s) >> 11) * 0x1p-53 * 23000.0;
  }
  histd_dataset_finish(&ds, NULL, 0);
  double pairs = (double)n * (double)(n - 1) / 2;
  char la[128];

  histd_result fast, ref;
  double fmin, rmin, fcpu, rcpu;
  loadavg(la, sizeof la);
  double ft = time_kernel(&ds, "cpu", runs, threads, &fast, &fmin, &fcpu);
  printf("%-14s cpu           runs %2d  median %8.1f ms  min %8.1f ms  %.3e pairs/s"
         "  (cpu time %8.1f ms: %.3e pairs per cpu-s)  refined %" PRIu64 "  [%s]  load: %s\n",
         label, runs, ft, fmin, pairs / (ft / 1e3), fcpu, pairs / (fcpu / 1e3),
         fast.refined_pairs, fast.device, la);
  int rc = 0;
  if (ref_runs > 0) {
    loadavg(la, sizeof la);
    double rt = time_kernel(&ds, "cpu-reference", ref_runs, 1, &ref, &rmin, &rcpu);
    printf("%-14s cpu-reference runs %2d  median %8.1f ms  min %8.1f ms  %.3e pairs/s"
           "  (cpu time %8.1f ms)  load: %s\n",
           label, ref_runs, rt, rmin, pairs / (rt / 1e3), rcpu, la);
    bool same = ref.overflow == fast.overflow &&
                memcmp(ref.counts, fast.counts, 80 * sizeof *ref.counts) == 0;
    printf("%-14s ratio cpu/cpu-reference (medians) %.2fx; counts identical: %s\n", label,
           rt / ft, same ? "yes" : "NO");
    rc = same ? 0 : 1;
    histd_result_free(&ref);
  }
  histd_result_free(&fast);
  histd_dataset_free(&ds);
  return rc;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  int runs = 5, ref_runs = 1;
  size_t only_n = 0;
  unsigned threads = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--quick") == 0)
      ref_runs = 0;
    else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
      runs = atoi(argv[++i]);
    else if (strcmp(argv[i], "--ref-runs") == 0 && i + 1 < argc)
      ref_runs = atoi(argv[++i]);
    else if (strcmp(argv[i], "--n") == 0 && i + 1 < argc)
      only_n = (size_t)strtoull(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
      threads = (unsigned)atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: %s [--quick] [--runs R] [--ref-runs K] [--n N] [--threads T]\n",
              argv[0]);
      return 2;
    }
  }
  if (runs < 1 || runs > 64 || ref_runs < 0 || ref_runs > 64) {
    fprintf(stderr, "runs must be 1..64, ref-runs 0..64\n");
    return 2;
  }
  char model[256];
  cpu_model(model, sizeof model);
  printf("CPU: %s (%u cores); cpu threads: %s\n", model, histd_cpu_count(),
         threads ? "as given" : "all cores");
  int rc = 0;
  if (only_n)
    rc |= bench(only_n, "custom", runs, ref_runs, threads);
  else {
    rc |= bench(100000, "W4 N=100000", runs, ref_runs, threads);
    rc |= bench(200000, "N=200000", runs, ref_runs, threads);
  }
  return rc;
}
