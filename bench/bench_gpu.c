/*
 * bench_gpu.c -- the GPU kernels on the design's workloads W1..W4 (points
 * uniform in [0, 23000)^3), both precisions, plus auto, the float64
 * tiled-privatized baseline, the cost of chunked launches on W2, tuning
 * sweeps for auto's table, and W2 on two GPUs when there are two.
 *
 *   bench_gpu [table] [tune] [chunk] [multi] [stats] [grid] [slabs]
 *             (default: all but slabs)
 *
 * The table and the chunking test run on GPU 0 alone (devices = 1); auto
 * with devices = 0 would split W1..W3 over every GPU.
 * Times are medians of up to 5 runs of kernel_ms (CUDA events around the
 * job's launches on the device; the points stay on the GPU between runs).
 * A slow kernel gets fewer runs (at least 1; 'n' says how many) and is
 * skipped on a workload where one run would take over 12 s. Pairs/s =
 * N(N-1)/2 / time. The ratio is to tiled-privatized (same precision) in the
 * same run. The compact table comes last.
 *
 * Quick runs (environment): BENCH_GPU_WL="W2 W3" picks workloads (also
 * "B70k": N = 512,000, w = 0.5, 70,000 buckets, run only when named),
 * BENCH_GPU_KERNELS="auto,tiled-privatized-f64" picks kernels (tiled-
 * privatized always runs: it is the reference of the ratios and of the
 * counts), BENCH_GPU_PREC=exact|fast one precision, BENCH_GPU_BUDGET_MS the
 * time after which a cell stops short of 5 runs (default 2500).
 * "auto-before" (only when named) is auto as it was before 2026-11-23:
 * no 16-bit shared sink, float32 refine bands up to 1/16 (the engine's
 * HISTD_GPU_SINK16=0 HISTD_GPU_BAND_MAX=0.0625), for ratios in one run;
 * "auto-2ulp" (likewise) is auto with the float32 bound taking rsqrtf's
 * error as the CUDA Guide's 2 ulp, as before 2026-11-24, instead of the
 * error measured on the device (HISTD_GPU_RSQRT_ERR=2^-22).
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "histd/histd.h"
#include "../tests/plain.h"

typedef struct workload {
  const char *id;
  size_t n;
  double w;
  uint32_t nb;
  histd_dataset ds;
  bool extra; /* only when BENCH_GPU_WL names it */
} workload;

static workload W[] = {
    {"W4", 100000, 500, 80, {0}, false},
    {"W1", 512000, 500, 80, {0}, false},
    {"W3", 512000, 10, 3984, {0}, false},
    {"W2", 2000000, 500, 80, {0}, false},
    /* many buckets: histograms too large for shared memory (auto's table) */
    {"B70k", 512000, 0.5, 70000, {0}, true},
};
#define NW (sizeof W / sizeof W[0])

static const char *const kernels[] = {
    "tiled-privatized", "tiled-privatized-f64", "auto",      "tensor-core", "balanced", "multi-copy",
    "register-shuffle", "circular",             "tiled",     "privatized", "naive",
    "auto-before",      "auto-2ulp"};
#define NKER (sizeof kernels / sizeof kernels[0])

typedef struct cell {
  double med_ms, pairs_s, refined_frac;
  int runs;
  char ran[48];
  bool done;
} cell;

static cell table[NW][NKER][2];
static histd_worker *WK;
static char gpu_name[256];

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void fill_uniform(histd_dataset *ds, size_t n, uint64_t seed) {
  histd_dataset_alloc(ds, n, NULL, 0);
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < 3 * n; i++) {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    ds->x[i] = (double)((s * 2685821657736338717ull) >> 11) * (23000.0 / 9007199254740992.0);
  }
  histd_dataset_finish(ds, NULL, 0);
}

/* One job; returns kernel ms or -1. */
static double run_once(workload *wl, const char *k, uint32_t block, histd_precision prec,
                       uint64_t devices, histd_result *keep, double *total_ms) {
  plain_job spec;
  plain_init(&spec);
  spec.bucket_width = wl->w;
  spec.buckets = wl->nb;
  spec.precision = prec;
  spec.block_size = block;
  spec.devices = devices;
  bool before = strcmp(k, "auto-before") == 0, ulp2 = strcmp(k, "auto-2ulp") == 0;
  snprintf(spec.kernel, sizeof spec.kernel, "%s", before || ulp2 ? "auto" : k);
  if (before) {
    setenv("HISTD_GPU_SINK16", "0", 1);
    setenv("HISTD_GPU_BAND_MAX", "0.0625", 1);
  }
  if (ulp2)
    setenv("HISTD_GPU_RSQRT_ERR", "2.384185791015625e-07", 1);
  histd_result res;
  char msg[512];
  int rc = plain_worker_run(WK, &wl->ds, &spec, NULL, &res, msg, sizeof msg);
  if (before) {
    unsetenv("HISTD_GPU_SINK16");
    unsetenv("HISTD_GPU_BAND_MAX");
  }
  if (ulp2)
    unsetenv("HISTD_GPU_RSQRT_ERR");
  if (rc != 0) {
    printf("    %s %s on %s: error: %s\n", k, histd_precision_name(prec), wl->id, msg);
    return -1;
  }
  double ms = res.timing.kernel_ms;
  if (total_ms)
    *total_ms = res.timing.total_ms;
  if (keep)
    *keep = res;
  else
    histd_result_free(&res);
  return ms;
}

/* Median of up to `maxruns` runs, fewer once `budget_ms` is spent. */
static double median_runs(workload *wl, const char *k, uint32_t block, histd_precision prec,
                          uint64_t devices, int maxruns, double budget_ms, int *nruns,
                          histd_result *last, double *med_total) {
  double t[16], tot[16], spent = 0;
  int n = 0;
  histd_result res;
  memset(&res, 0, sizeof res);
  while (n < maxruns && (n == 0 || spent < budget_ms)) {
    if (n > 0)
      histd_result_free(&res);
    double ms = run_once(wl, k, block, prec, devices, &res, &tot[n]);
    if (ms < 0)
      return -1;
    t[n++] = ms;
    spent += ms;
  }
  qsort(t, (size_t)n, sizeof t[0], cmp_d);
  qsort(tot, (size_t)n, sizeof tot[0], cmp_d);
  if (nruns)
    *nruns = n;
  if (med_total)
    *med_total = tot[n / 2];
  if (last)
    *last = res;
  else
    histd_result_free(&res);
  return t[n / 2];
}

static double pairs_of(const workload *wl) { return (double)wl->n * (double)(wl->n - 1) / 2; }

static bool wl_selected(const workload *wl) {
  const char *sel = getenv("BENCH_GPU_WL");
  if (sel == NULL || *sel == '\0')
    return !wl->extra;
  return strstr(sel, wl->id) != NULL;
}

static bool kernel_selected(size_t k) {
  const char *sel = getenv("BENCH_GPU_KERNELS");
  if (k == 0)
    return true;
  if (sel == NULL || *sel == '\0')
    return strcmp(kernels[k], "auto-before") != 0 && strcmp(kernels[k], "auto-2ulp") != 0;
  size_t len = strlen(kernels[k]);
  for (const char *p = sel; (p = strstr(p, kernels[k])) != NULL; p += len)
    if ((p == sel || p[-1] == ',' || p[-1] == ' ') && (p[len] == '\0' || p[len] == ',' || p[len] == ' '))
      return true;
  return false;
}

static bool prec_selected(int pr) {
  const char *sel = getenv("BENCH_GPU_PREC");
  return sel == NULL || *sel == '\0' || strcmp(sel, pr ? "fast" : "exact") == 0;
}

static uint64_t wl_ref[70000]; /* tiled-privatized's exact counts (the most buckets of any workload) */

static void section_table(void) {
  printf("\n== every kernel on W1..W4 (median kernel ms of up to 5 runs) ==\n");
  double rate80[NKER][2] = {{0}};
  double max_s = getenv("BENCH_GPU_MAX_S") ? atof(getenv("BENCH_GPU_MAX_S")) : 12.0;
  double budget = getenv("BENCH_GPU_BUDGET_MS") ? atof(getenv("BENCH_GPU_BUDGET_MS")) : 2500;
  for (size_t wi = 0; wi < NW; wi++) {
    workload *wl = &W[wi];
    if (!wl_selected(wl))
      continue;
    for (size_t k = 0; k < NKER; k++) {
      if (!kernel_selected(k))
        continue;
      for (int pr = 0; pr < 2; pr++) {
        if (pr == 1 && strcmp(kernels[k], "tiled-privatized-f64") == 0)
          continue;
        if (!prec_selected(pr) && !(k == 0 && pr == 0))
          continue;
        double rate = rate80[k][pr];
        if (rate > 0 && pairs_of(wl) / rate > max_s) {
          printf("  %s %-22s %-5s skipped: one run would take about %.0f s\n", wl->id,
                 kernels[k], pr ? "fast" : "exact", pairs_of(wl) / rate);
          continue;
        }
        int n = 0;
        histd_result res;
        double ms = median_runs(wl, kernels[k], 0, pr ? HISTD_PRECISION_FAST : HISTD_PRECISION_EXACT,
                                1, 5, budget, &n, &res, NULL);
        uint64_t sum = res.overflow;
        for (uint32_t b = 0; b < res.bins.count; b++)
          sum += res.counts[b];
        if (sum != (uint64_t)wl->n * (wl->n - 1) / 2)
          printf("    %s %s: counts sum to %llu, not n(n-1)/2!\n", wl->id, kernels[k],
                 (unsigned long long)sum);
        if (pr == 0 && k == 0)
          memcpy(wl_ref, res.counts, wl->nb * sizeof *res.counts);
        else if (pr == 0 && memcmp(wl_ref, res.counts, wl->nb * sizeof *res.counts) != 0)
          printf("    %s %s exact: counts differ from tiled-privatized exact!\n", wl->id,
                 kernels[k]);
        if (ms < 0)
          continue;
        cell *c = &table[wi][k][pr];
        c->done = true;
        c->med_ms = ms;
        c->runs = n;
        c->pairs_s = pairs_of(wl) / (ms / 1e3);
        c->refined_frac = (double)res.refined_pairs / pairs_of(wl);
        snprintf(c->ran, sizeof c->ran, "%s/%u", res.kernel, res.block_size);
        histd_result_free(&res);
        if (wl->nb == 80)
          rate80[k][pr] = c->pairs_s;
        printf("  %s %-22s %-5s %10.3f ms  %9.3e pairs/s  n=%d  refined %.2e  (%s)\n", wl->id,
               kernels[k], pr ? "fast" : "exact", ms, c->pairs_s, n, c->refined_frac, c->ran);
        fflush(stdout);
      }
    }
  }
}

static void section_tune(void) {
  printf("\n== tuning: balanced, block sizes and histogram copies (exact) ==\n");
  static const uint32_t blocks[] = {64, 128, 256, 512, 1024};
  static const char *const ks[] = {"balanced", "register-shuffle", "multi-copy", "circular"};
  size_t wls[] = {0, 1, 2};
  for (size_t a = 0; a < 3; a++) {
    workload *wl = &W[wls[a]];
    for (size_t k = 0; k < 4; k++)
      for (size_t b = 0; b < 5; b++) {
        double ms = median_runs(wl, ks[k], blocks[b], HISTD_PRECISION_EXACT, 1, 3, 1500, NULL,
                                NULL, NULL);
        if (ms > 0)
          printf("  %s %-18s block %4u  %9.3f ms  %9.3e pairs/s\n", wl->id, ks[k], blocks[b], ms,
                 pairs_of(wl) / (ms / 1e3));
      }
  }
  static const char *const copies[] = {"1", "2", "4", "8", "16"};
  for (size_t c = 0; c < 5; c++) {
    setenv("HISTD_GPU_COPIES", copies[c], 1);
    for (size_t b = 1; b < 4; b++) {
      double ms = median_runs(&W[2], "balanced", blocks[b], HISTD_PRECISION_EXACT, 1, 3, 1500,
                              NULL, NULL, NULL);
      if (ms > 0)
        printf("  W3 balanced copies %-2s block %4u  %9.3f ms  %9.3e pairs/s\n", copies[c],
               blocks[b], ms, pairs_of(&W[2]) / (ms / 1e3));
    }
  }
  unsetenv("HISTD_GPU_COPIES");
  fflush(stdout);
}

static double chunk_overhead = -1, chunked_ms = 0, single_ms = 0;

static void section_chunk(void) {
  printf("\n== W2 auto: chunked launches (100 ms) vs as few launches as possible ==\n");
  double a[5], b[5];
  for (int r = 0; r < 5; r++) {
    unsetenv("HISTD_GPU_CHUNK_MS");
    a[r] = run_once(&W[3], "auto", 0, HISTD_PRECISION_EXACT, 1, NULL, NULL);
    setenv("HISTD_GPU_CHUNK_MS", "0", 1);
    b[r] = run_once(&W[3], "auto", 0, HISTD_PRECISION_EXACT, 1, NULL, NULL);
  }
  unsetenv("HISTD_GPU_CHUNK_MS");
  qsort(a, 5, sizeof a[0], cmp_d);
  qsort(b, 5, sizeof b[0], cmp_d);
  chunked_ms = a[2];
  single_ms = b[2];
  chunk_overhead = (a[2] / b[2] - 1) * 100;
  printf("  chunked %.3f ms, single %.3f ms: overhead %+.2f%%\n", a[2], b[2], chunk_overhead);
}

static double multi_ms = 0, multi_total = 0, one_ms = 0, one_total = 0;
static char multi_dev[256];

static void section_multi(int ndev) {
  if (ndev < 2) {
    printf("\n== W2 on several GPUs: skipped, this machine has %d GPU ==\n", ndev);
    return;
  }
  printf("\n== W2 auto on 1 GPU vs %d GPUs (median of 5; kernel ms = slowest GPU) ==\n", ndev);
  histd_result res;
  one_ms = median_runs(&W[3], "auto", 0, HISTD_PRECISION_EXACT, 1, 5, 1e9, NULL, NULL, &one_total);
  multi_ms = median_runs(&W[3], "auto", 0, HISTD_PRECISION_EXACT, 0, 5, 1e9, NULL, &res,
                         &multi_total);
  if (multi_ms > 0) {
    snprintf(multi_dev, sizeof multi_dev, "%s", res.device);
    histd_result_free(&res);
  }
  printf("  1 GPU: %.3f ms kernel, %.3f ms total;  %d GPUs: %.3f ms kernel, %.3f ms total\n",
         one_ms, one_total, ndev, multi_ms, multi_total);
  printf("  speed-up: %.2fx (kernel), %.2fx (total)  [%s]\n", one_ms / multi_ms,
         one_total / multi_total, multi_dev);
}

/*
 * stats: the statistics family on tiled-stats (its float32 pairs, and
 * every pair in binary64 by HISTD_STATS_F32=0), against the plain
 * histogram of as many pairs on "auto" and on tiled-privatized-f64 (the
 * binary64 plain kernel) in the same run:
 *   GS1 periodic g(r): 512,000 points in the 23,000 cube, r_max = L/2,
 *       200 bins; baseline: the plain histogram of the same points,
 *       200 bins of the same width
 *   GS1 in a triclinic box (tilts L/5), bins of the same width to its
 *       half width: float32 pairs against binary64
 *   GS2 A x B weighted, 80 log bins from 10 to 11,500: 362,039 x 362,039
 *       (as many pairs as 512,000 self); baseline: W1's 512,000 plain;
 *       and on "grid" (its float32 filter and bins), weighted and not,
 *       and on "auto"
 * Medians of 3 runs of kernel_ms; counts + below + overflow checked.
 */
static double stats_ms[4];

static double stats_median(const histd_problem *p, const char *k, double *pairs_s) {
  double t[3];
  for (int r = 0; r < 3; r++) {
    histd_exec ex;
    histd_exec_init(&ex);
    snprintf(ex.kernel, sizeof ex.kernel, "%s", k);
    histd_result res;
    char msg[512];
    if (histd_worker_run(WK, p, &ex, NULL, &res, msg, sizeof msg) != 0) {
      printf("    %s: error: %s\n", k, msg);
      return -1;
    }
    uint64_t sum = res.below + res.overflow;
    for (uint32_t b = 0; b < res.bins.count; b++)
      sum += res.counts[b];
    if (sum != res.total)
      printf("    %s: counts + below + overflow = %llu, pairs %llu: WRONG\n", k,
             (unsigned long long)sum, (unsigned long long)res.total);
    t[r] = res.timing.kernel_ms;
    histd_result_free(&res);
  }
  qsort(t, 3, sizeof t[0], cmp_d);
  *pairs_s = (double)histd_problem_pairs(p) / (t[1] / 1e3);
  return t[1];
}

/* tiled-stats with every pair in binary64 (HISTD_STATS_F32=0): the
 * float32 pairs' baseline, in the same run. */
static double b64_median(const histd_problem *p, double *pairs_s) {
  setenv("HISTD_STATS_F32", "0", 1);
  const double ms = stats_median(p, "tiled-stats", pairs_s);
  unsetenv("HISTD_STATS_F32");
  return ms;
}

static void section_stats(void) {
  printf("\n== stats: the statistics family on tiled-stats (float32 pairs; binary64) ==\n");
  const double L = 23000;
  histd_dataset *a = &W[1].ds; /* W1: 512,000 points in the cube */
  histd_box box = {HISTD_BOX_ORTHO, L, 0, L, 0, 0, L};
  histd_problem g = {.a = a, .box = box, .bins = {HISTD_BINS_WIDTH, 200, L / 2 / 200, NULL, 0, 0}};
  histd_problem plain = g;
  plain.box.kind = HISTD_BOX_NONE;
  double ps[4], b64_ps;
  stats_ms[0] = stats_median(&g, "tiled-stats", &ps[0]);
  stats_ms[1] = stats_median(&plain, "auto", &ps[1]);
  printf("  GS1 g(r)   tiled-stats %10.1f ms %10.3e pairs/s; plain auto %8.1f ms: %.1fx\n",
         stats_ms[0], ps[0], stats_ms[1], stats_ms[0] / stats_ms[1]);
  double b64_ms = b64_median(&g, &b64_ps);
  printf("  GS1 g(r)   binary64    %10.1f ms %10.3e pairs/s (float32 pairs: %.2fx)\n", b64_ms,
         b64_ps, b64_ms / stats_ms[0]);
  /* GS1 in a triclinic box: the same points and bins, tilts of L/5 (its
   * half width is below L/2: 150 bins of the same width) */
  histd_problem gt = g;
  gt.box = (histd_box){HISTD_BOX_TRICLINIC, L, L / 5, L, -L / 5, L / 5, L};
  gt.bins.count = (uint32_t)floor(histd_box_half_width(&gt.box) / gt.bins.width);
  double tri_ps, tri_ms = stats_median(&gt, "tiled-stats", &tri_ps);
  b64_ms = b64_median(&gt, &b64_ps);
  printf("  GS1 triclinic (%u bins) tiled-stats %10.1f ms %10.3e pairs/s; binary64 %10.1f ms "
         "(float32 pairs: %.2fx)\n",
         gt.bins.count, tri_ms, tri_ps, b64_ms, b64_ms / tri_ms);
  histd_dataset da, db;
  size_t nab = 362039;
  fill_uniform(&da, nab, 77);
  fill_uniform(&db, nab, 78);
  histd_dataset_alloc_weights(&da, NULL, 0);
  histd_dataset_alloc_weights(&db, NULL, 0);
  for (size_t i = 0; i < nab; i++)
    da.w[i] = 0.5 + da.x[i] / L, db.w[i] = 1.5 - db.y[i] / L;
  double edges[81];
  histd_log_edges(10, 11500, 80, edges, NULL, 0);
  histd_problem x = {.a = &da, .b = &db, .bins = {HISTD_BINS_EDGES, 80, 0, edges, 0, 0},
                     .weighted = true};
  histd_problem w1 = {.a = a, .bins = {HISTD_BINS_WIDTH, 80, 500, NULL, 0, 0}};
  stats_ms[2] = stats_median(&x, "tiled-stats", &ps[2]);
  stats_ms[3] = stats_median(&w1, "tiled-privatized-f64", &ps[3]);
  double auto_ps;
  double auto_ms = stats_median(&w1, "auto", &auto_ps);
  printf("  GS2 A x B  tiled-stats %10.1f ms %10.3e pairs/s; plain f64 %8.1f ms: %.1fx; "
         "plain auto %.1f ms: %.1fx\n",
         stats_ms[2], ps[2], stats_ms[3], stats_ms[2] / stats_ms[3], auto_ms,
         stats_ms[2] / auto_ms);
  /* the grid, one cell or a few (r_max is half the cube): every pair a
   * candidate of its float32 filter, binned by its float32 bins */
  double grid_ps, grid_ms = stats_median(&x, "grid", &grid_ps);
  printf("  GS2 A x B  grid        %10.1f ms %10.3e pairs/s (%.2fx tiled-stats)\n", grid_ms,
         grid_ps, stats_ms[2] / grid_ms);
  b64_ms = b64_median(&x, &b64_ps);
  printf("  GS2 A x B  binary64    %10.1f ms %10.3e pairs/s (float32 pairs: %.2fx)\n", b64_ms,
         b64_ps, b64_ms / stats_ms[2]);
  x.weighted = false;
  double unw_ps, unw_ms = stats_median(&x, "tiled-stats", &unw_ps);
  printf("  GS2 unweighted tiled-stats %10.1f ms %10.3e pairs/s (what the weights cost)\n",
         unw_ms, unw_ps);
  b64_ms = b64_median(&x, &b64_ps);
  printf("  GS2 unweighted binary64    %10.1f ms %10.3e pairs/s (float32 pairs: %.2fx)\n",
         b64_ms, b64_ps, b64_ms / unw_ms);
  double ugrid_ps, ugrid_ms = stats_median(&x, "grid", &ugrid_ps);
  printf("  GS2 unweighted grid        %10.1f ms %10.3e pairs/s (%.2fx tiled-stats)\n", ugrid_ms,
         ugrid_ps, unw_ms / ugrid_ms);
  x.weighted = true; /* what "auto" takes for GS2 (choose.c: the grid in open space) */
  double gauto_ps, gauto_ms = stats_median(&x, "auto", &gauto_ps);
  printf("  GS2 A x B  auto        %10.1f ms %10.3e pairs/s (%.2fx tiled-stats)\n", gauto_ms,
         gauto_ps, stats_ms[2] / gauto_ms);
  histd_dataset_free(&da);
  histd_dataset_free(&db);
}

/*
 * grid: the cell grid on the GPU ("grid", kernels/grid_*.c*) on the
 * design's G1 and G2 (points uniform in the periodic 23,000 cube):
 *   G1 10,000,000 points, r_max = L/20, 200 bins: grid against brute force
 *      ("tiled-stats": what "auto" runs for a periodic box when it does not
 *      take the grid; named, as "auto" now takes the grid). Brute force on
 *      10M points would take about half an hour, so it runs on the first
 *      BENCH_GRID_SUB points (default 250,000) and its time is scaled by
 *      the pairs to 10M; grid runs on that subsample too and its counts,
 *      below and overflow must be identical to brute force's.
 *   G2 100,000,000 points, r_max = L/100, 200 bins: grid alone.
 * grid: median of 5 runs of kernel_ms (CUDA events around the whole job
 * on the device: keys, CUB's sort, gather, cell starts, chunks, pair
 * launches; the points stay on the device between runs, so the copy is
 * in the first run's transfer_ms only). Brute force: median of 3.
 * Candidate pairs (those the warps meet) come from the device string.
 */
static double g1_ms = -1, g1_build = 0, g1_cand = 0, g1_brute_ms = -1, g1_brute_est = -1;
static double g2_ms = -1, g2_build = 0, g2_cand = 0, g2_transfer = 0, g2_inrange = 0;
static size_t g1_sub = 0;
static int g1_same = -1;
static char g_dev[HISTD_DEVICE_NAME_MAX];

static void grid_parse(const char *dev, double *cand, double *build) {
  const char *c = strstr(dev, " candidate pairs, cells built in ");
  *cand = 0, *build = 0;
  while (c != NULL && c > dev && c[-1] != ' ') /* back to the count's first character */
    c--;
  if (c == NULL || sscanf(c, "%lf candidate pairs, cells built in %lf ms", cand, build) != 2)
    printf("    (no candidate count in \"%s\")\n", dev);
}

/* Median kernel_ms of `runs` runs of p on kernel k; the last result kept. */
static double grid_median(const histd_problem *p, const char *k, uint32_t block, int runs,
                          histd_result *last, double *first_transfer) {
  double t[8];
  memset(last, 0, sizeof *last);
  for (int r = 0; r < runs; r++) {
    histd_exec ex;
    histd_exec_init(&ex);
    snprintf(ex.kernel, sizeof ex.kernel, "%s", k);
    ex.block_size = block;
    if (r > 0)
      histd_result_free(last);
    char msg[512];
    if (histd_worker_run(WK, p, &ex, NULL, last, msg, sizeof msg) != 0) {
      printf("    %s: error: %s\n", k, msg);
      return -1;
    }
    uint64_t sum = last->below + last->overflow;
    for (uint32_t b = 0; b < last->bins.count; b++)
      sum += last->counts[b];
    if (sum != last->total)
      printf("    %s: counts + below + overflow = %llu, pairs %llu: WRONG\n", k,
             (unsigned long long)sum, (unsigned long long)last->total);
    if (r == 0 && first_transfer)
      *first_transfer = last->timing.transfer_ms;
    t[r] = last->timing.kernel_ms;
  }
  qsort(t, (size_t)runs, sizeof t[0], cmp_d);
  return t[runs / 2];
}

static void section_grid(void) {
  printf("\n== grid: cells of side r_max on the GPU (G1, G2) ==\n");
  const double L = 23000;
  const histd_box box = {HISTD_BOX_ORTHO, L, 0, L, 0, 0, L};
  histd_result res;
  /* warm up: module load */
  histd_problem warm = {.a = &W[0].ds, .box = box, .bins = {HISTD_BINS_WIDTH, 200, L / 20 / 200, NULL, 0, 0}};
  if (grid_median(&warm, "grid", 0, 1, &res, NULL) >= 0)
    histd_result_free(&res);

  histd_dataset g1;
  fill_uniform(&g1, 10000000, 2001);
  histd_problem p1 = {.a = &g1, .box = box, .bins = {HISTD_BINS_WIDTH, 200, L / 20 / 200, NULL, 0, 0}};
  double tr = 0;
  g1_ms = grid_median(&p1, "grid", 0, 5, &res, &tr);
  if (g1_ms >= 0) {
    grid_parse(res.device, &g1_cand, &g1_build);
    snprintf(g_dev, sizeof g_dev, "%s", res.device);
    printf("  G1 grid, 10,000,000 points, r_max = L/20: %.1f ms (median of 5; cells built in "
           "%.1f ms), %.4g candidate pairs, %.3e candidate pairs/s; first copy %.1f ms\n"
           "     [%s]\n",
           g1_ms, g1_build, g1_cand, g1_cand / (g1_ms / 1e3), tr, res.device);
    histd_result_free(&res);
  }
  printf("  G1 grid by block size (one run each):");
  for (uint32_t blk = 64; blk <= 256; blk *= 2) {
    double ms = grid_median(&p1, "grid", blk, 1, &res, NULL);
    if (ms >= 0) {
      printf("  %u: %.1f ms", blk, ms);
      histd_result_free(&res);
    }
  }
  printf("\n");
  const char *sub_env = getenv("BENCH_GRID_SUB");
  g1_sub = sub_env ? strtoul(sub_env, NULL, 10) : 250000;
  if (g1_sub < 2 || g1_sub > g1.n)
    g1_sub = 250000;
  histd_dataset sub;
  histd_dataset_borrow(&sub, g1.x, 0); /* a view of the first g1_sub points */
  sub.n = g1_sub;
  sub.x = g1.x, sub.y = g1.y, sub.z = g1.z;
  sub.borrowed = true;
  histd_dataset_finish(&sub, NULL, 0);
  histd_problem ps = p1;
  ps.a = &sub;
  histd_result brute, gsub;
  g1_brute_ms = grid_median(&ps, "tiled-stats", 0, 3, &brute, NULL);
  double gs_ms = grid_median(&ps, "grid", 0, 3, &gsub, NULL);
  if (g1_brute_ms >= 0 && gs_ms >= 0) {
    const double sub_pairs = (double)g1_sub * (g1_sub - 1) / 2, all = 1e7 * (1e7 - 1) / 2;
    g1_brute_est = g1_brute_ms * all / sub_pairs;
    g1_same = memcmp(brute.counts, gsub.counts, 200 * sizeof *brute.counts) == 0 &&
              brute.below == gsub.below && brute.overflow == gsub.overflow;
    printf("  G1 brute force (%s) on the first %zu points: %.1f ms (median of 3) for "
           "%.4g pairs, %.3e pairs/s; scaled by pairs to 10M: %.0f ms (estimated, not run)\n",
           brute.kernel, g1_sub, g1_brute_ms, sub_pairs, sub_pairs / (g1_brute_ms / 1e3),
           g1_brute_est);
    printf("  G1 grid on the same %zu points: %.1f ms; counts, below, overflow identical to "
           "brute force: %s\n",
           g1_sub, gs_ms, g1_same ? "yes" : "NO");
    histd_result_free(&brute);
    histd_result_free(&gsub);
  }
  histd_dataset_free(&g1);

  histd_dataset g2;
  fill_uniform(&g2, 100000000, 2002);
  histd_problem p2 = {.a = &g2, .box = box, .bins = {HISTD_BINS_WIDTH, 200, L / 100 / 200, NULL, 0, 0}};
  g2_ms = grid_median(&p2, "grid", 0, 5, &res, &g2_transfer);
  if (g2_ms >= 0) {
    grid_parse(res.device, &g2_cand, &g2_build);
    g2_inrange = (double)(res.total - res.overflow);
    printf("  G2 grid, 100,000,000 points, r_max = L/100: %.1f ms including the cells (built "
           "in %.1f ms: keys, sort, gather, starts), %.4g candidate pairs, %.3e candidate "
           "pairs/s, %.4g pairs within r_max; first copy %.1f ms\n     [%s]\n",
           g2_ms, g2_build, g2_cand, g2_cand / (g2_ms / 1e3), g2_inrange, g2_transfer,
           res.device);
    histd_result_free(&res);
  }
  histd_dataset_free(&g2);
}

/*
 * slabs: grid jobs larger than the GPU's memory, streamed in slabs of z
 * (kernels/grid_slabs.c), on the periodic 23,000 cube:
 *   SG2 G2's job (100,000,000 points, r_max = L/100, 200 bins) whole and
 *       under pretended memory limits (HISTD_GPU_MEM_LIMIT_MB) that cut it
 *       into slabs: median of 3 of the wall time of the whole call (a
 *       slab run copies its slabs every time; the whole job's points stay
 *       on the device after the first run) and of the kernels' sum; counts,
 *       below and overflow identical to the whole job's.
 *   SB  BENCH_SLAB_N points (default 1,000,000,000: more than an 80 GB
 *       GPU holds), r_max = L/400, 200 bins, one run as the GPU's memory
 *       cuts it and one under a limit of a quarter of that room: counts
 *       identical.
 */
static double slab_run(const histd_problem *p, const char *limit, histd_result *res,
                       double *kernel_ms) {
  histd_exec ex;
  histd_exec_init(&ex);
  snprintf(ex.kernel, sizeof ex.kernel, "grid");
  if (limit != NULL)
    setenv("HISTD_GPU_MEM_LIMIT_MB", limit, 1);
  char msg[512];
  double t0 = histd_now_ms();
  int rc = histd_worker_run(WK, p, &ex, NULL, res, msg, sizeof msg);
  double ms = histd_now_ms() - t0;
  unsetenv("HISTD_GPU_MEM_LIMIT_MB");
  if (rc != 0) {
    printf("    error (limit %s MiB): %s\n", limit ? limit : "none", msg);
    return -1;
  }
  *kernel_ms = res->timing.kernel_ms;
  return ms;
}

static bool same_counts(const histd_result *a, const histd_result *b) {
  return a->below == b->below && a->overflow == b->overflow &&
         memcmp(a->counts, b->counts, a->bins.count * sizeof *a->counts) == 0;
}

static char slab_lines[8][256];
static int nslab_lines = 0;

static void section_slabs(void) {
  printf("\n== slabs: grid jobs larger than the GPU's memory ==\n");
  const double L = 23000;
  const histd_box box = {HISTD_BOX_ORTHO, L, 0, L, 0, 0, L};
  histd_dataset g2;
  fill_uniform(&g2, 100000000, 2002);
  histd_problem p2 = {.a = &g2, .box = box, .bins = {HISTD_BINS_WIDTH, 200, L / 100 / 200, NULL, 0, 0}};
  const char *limits[] = {NULL, "6000", "1500"};
  histd_result whole;
  memset(&whole, 0, sizeof whole);
  double whole_ms = 0;
  for (int l = 0; l < 3; l++) {
    double wall[3], kern[3];
    histd_result r;
    int ok = 1;
    for (int i = 0; i < 3 && ok; i++) {
      wall[i] = slab_run(&p2, limits[l], &r, &kern[i]);
      ok = wall[i] >= 0;
      if (ok && i < 2) /* the last run's result is kept */
        histd_result_free(&r);
    }
    if (!ok)
      continue;
    qsort(wall, 3, sizeof wall[0], cmp_d);
    qsort(kern, 3, sizeof kern[0], cmp_d);
    if (l == 0) {
      whole = r;
      whole_ms = wall[1];
    }
    const char *at = strstr(l == 0 ? whole.device : r.device, "streamed in ");
    unsigned m = at ? (unsigned)strtoul(at + 12, NULL, 10) : 1;
    snprintf(slab_lines[nslab_lines++], sizeof slab_lines[0],
             "SG2 limit %5s MiB: %2u slab(s), wall %8.1f ms (%.2fx whole), kernels %8.1f ms, "
             "counts %s",
             limits[l] ? limits[l] : "none", m, wall[1], wall[1] / whole_ms, kern[1],
             l == 0 ? "(the reference)" : same_counts(&r, &whole) ? "identical" : "DIFFER");
    printf("  %s\n     [%s]\n", slab_lines[nslab_lines - 1], l == 0 ? whole.device : r.device);
    if (l > 0)
      histd_result_free(&r);
  }
  histd_result_free(&whole);
  histd_dataset_free(&g2);

  const char *env = getenv("BENCH_SLAB_N");
  size_t n = env ? (size_t)strtod(env, NULL) : 1000000000;
  if (n == 0)
    return;
  histd_dataset big;
  double t0 = histd_now_ms();
  fill_uniform(&big, n, 3003);
  printf("  SB: %zu points made in %.1f s\n", n, (histd_now_ms() - t0) / 1e3);
  histd_problem pb = {.a = &big, .box = box, .bins = {HISTD_BINS_WIDTH, 200, L / 400 / 200, NULL, 0, 0}};
  histd_result r1, r2;
  double k1 = 0, k2 = 0;
  double w1 = slab_run(&pb, NULL, &r1, &k1);
  if (w1 >= 0) {
    const char *at = strstr(r1.device, "streamed in ");
    unsigned m = at ? (unsigned)strtoul(at + 12, NULL, 10) : 1;
    const char *fm = strstr(r1.device, "slabs of z (");
    double room = fm ? strtod(fm + 12, NULL) : 0;
    char lim[32];
    snprintf(lim, sizeof lim, "%.0f", room / 4 + 64);
    double w2 = slab_run(&pb, lim, &r2, &k2);
    const char *at2 = w2 >= 0 ? strstr(r2.device, "streamed in ") : NULL;
    snprintf(slab_lines[nslab_lines++], sizeof slab_lines[0],
             "SB %zu points, r_max L/400: %u slab(s) %.1f s wall (kernels %.1f s), %.4g pairs "
             "within r_max; limit %s MiB: %u slabs %.1f s, counts %s",
             n, m, w1 / 1e3, k1 / 1e3, (double)(r1.total - r1.overflow), lim,
             at2 ? (unsigned)strtoul(at2 + 12, NULL, 10) : 0, w2 / 1e3,
             w2 < 0 ? "-" : same_counts(&r1, &r2) ? "identical" : "DIFFER");
    printf("  %s\n     [%s]\n", slab_lines[nslab_lines - 1], r1.device);
    histd_result_free(&r1);
    if (w2 >= 0)
      histd_result_free(&r2);
  }
  histd_dataset_free(&big);
}

int main(int argc, char **argv) {
  bool all = argc < 2, do_table = all, do_tune = all, do_chunk = all, do_multi = all;
  bool do_stats = all, do_grid = all, do_slabs = false; /* slabs only when named */
  for (int i = 1; i < argc; i++) {
    do_table |= strcmp(argv[i], "table") == 0;
    do_tune |= strcmp(argv[i], "tune") == 0;
    do_chunk |= strcmp(argv[i], "chunk") == 0;
    do_multi |= strcmp(argv[i], "multi") == 0;
    do_stats |= strcmp(argv[i], "stats") == 0;
    do_grid |= strcmp(argv[i], "grid") == 0;
    do_slabs |= strcmp(argv[i], "slabs") == 0;
  }
  histd_device_info dev[16];
  int count = 0;
  char msg[512] = "";
  histd_devices(dev, 16, &count, msg, sizeof msg);
  if (count == 0) {
    printf("bench_gpu: %s\n", msg);
    return 77;
  }
  snprintf(gpu_name, sizeof gpu_name, "%s (cc %d.%d, %d SMs)", dev[0].name, dev[0].cc_major,
           dev[0].cc_minor, dev[0].multiprocessors);
  printf("bench_gpu on %s; %d GPU(s)\n", gpu_name, count);
  if (histd_worker_create(&WK, dev[0].index, msg, sizeof msg) != 0) {
    printf("bench_gpu: %s\n", msg);
    return 1;
  }
  for (size_t i = 0; i < NW; i++)
    fill_uniform(&W[i].ds, W[i].n, 1000 + i);
  /* warm up: module load, first allocations */
  run_once(&W[0], "auto", 0, HISTD_PRECISION_EXACT, 0, NULL, NULL);
  if (do_tune)
    section_tune();
  if (do_table)
    section_table();
  if (do_chunk)
    section_chunk();
  if (do_multi)
    section_multi(count);
  if (do_stats)
    section_stats();
  if (do_grid)
    section_grid();
  if (do_slabs)
    section_slabs();

  printf("\n== summary: %s ==\n", gpu_name);
  if (do_table) {
    printf("%-4s %-21s %5s %11s %11s %7s %s\n", "wl", "kernel", "prec", "median ms", "pairs/s",
           "vs t-p", "ran");
    for (size_t wi = 0; wi < NW; wi++)
      for (size_t k = 0; k < NKER; k++)
        for (int pr = 0; pr < 2; pr++) {
          cell *c = &table[wi][k][pr];
          if (!c->done)
            continue;
          cell *tp = &table[wi][0][pr];
          double ratio = tp->done ? tp->med_ms / c->med_ms : 0;
          printf("%-4s %-21s %5s %11.3f %11.3e %6.2fx %s n=%d\n", W[wi].id, kernels[k],
                 pr ? "fast" : "exact", c->med_ms, c->pairs_s, ratio, c->ran, c->runs);
        }
    cell *au = &table[3][2][0], *f64 = &table[3][1][0], *w3 = &table[2][2][0];
    if (au->done && f64->done)
      printf("W2 auto exact: %.3e pairs/s (target 1.5e12), %.2fx tiled-privatized-f64 (target 3x)\n",
             au->pairs_s, f64->med_ms / au->med_ms);
    if (w3->done)
      printf("W3 auto exact: %.3e pairs/s (target 0.8e12)\n", w3->pairs_s);
  }
  if (chunk_overhead > -100 && do_chunk)
    printf("W2 chunking overhead: %+.2f%% (%.3f ms chunked vs %.3f ms single; limit 2%%)\n",
           chunk_overhead, chunked_ms, single_ms);
  if (multi_ms > 0)
    printf("W2 %d GPUs: %.2fx one GPU by kernel time, %.2fx by total (target 1.8x)\n", count,
           one_ms / multi_ms, one_total / multi_total);
  if (g1_ms >= 0)
    printf("G1 grid %.1f ms (cells %.1f ms), %.3e candidate pairs/s; brute force (tiled-stats) "
           "%.0f ms estimated from %zu points (%.1f ms, counts identical to grid: %s): "
           "grid %.0fx faster\n",
           g1_ms, g1_build, g1_cand / (g1_ms / 1e3), g1_brute_est, g1_sub, g1_brute_ms,
           g1_same == 1 ? "yes" : "NO", g1_brute_est / g1_ms);
  if (g2_ms >= 0)
    printf("G2 grid %.1f ms including the cells (%.1f ms), %.4g candidates, %.3e candidate "
           "pairs/s (target < 1000 ms)\n",
           g2_ms, g2_build, g2_cand, g2_cand / (g2_ms / 1e3));
  if (g_dev[0])
    printf("grid device: %s\n", g_dev);
  for (int i = 0; i < nslab_lines; i++)
    printf("%s\n", slab_lines[i]);
  histd_worker_destroy(WK);
  for (size_t i = 0; i < NW; i++)
    histd_dataset_free(&W[i].ds);
  return 0;
}
