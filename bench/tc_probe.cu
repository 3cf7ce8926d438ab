/*
 * tc_probe.cu -- the engine's "tensor-core" kernel (kernels/tc_kernels.cuh)
 * run on a GPU beside the engine's other kernels: does the hardware stay
 * inside the bound's model, are the counts the contract's, where does the
 * time go, and how fast is it against "balanced" (what auto ran before)?
 *
 *   tc_probe [--quick] [--plan] [--only SET]
 *
 * --plan (no GPU needed): the host's side alone for each set -- the tiles'
 * build time, their radii, the mean band (2G + 1) / 2^k and the share of
 * wide tile pairs over a sample of tile pairs.
 *
 * For each set (W1, W2 of the design, and sets whose distances fall on
 * edges, clumps, a far outlier, many rows, few rows) it
 *   - builds the tiles on the GPU (tc_tiles_device; the median of 3 builds
 *     is "build ms"),
 *   - runs the kernel through its launcher over every tile pair in
 *     launches of TC_LAUNCH_MAX, exact (HISTD_TC_GQ=1: whole flagged groups
 *     queued, else pairs), once "fast" (no edge test) and once "no
 *     atomics" (fast without the counts: the loop's ceilings), timed with
 *     events around its launches,
 *   - runs the engine's tensor-core job (its kernel_ms: the build and the
 *     launches, the queue chosen as the engine does), tiled-privatized-f64
 *     (the contract in binary64) and balanced at auto's old block size on
 *     the same set on the same GPU, compares every bucket of the three, and
 *     reports the engine's tensor-core time against balanced's (medians),
 *   - measures the tensor cores' error on every pair of some tile pairs:
 *     |S - (exact sum of the 17 products)| against the model's
 *     2^-18 of the operands' magnitudes (tc_plan.h), largest ratio seen.
 * The last lines are a table.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "choose.h"
#include "gpu_engine.h"
#include "histd/histd.h"
#include "tc_kernels.cuh"

using namespace tc;

#define EPS_R 0x1p-22 /* rsqrtf: the CUDA Guide's 2 ulp */

#define CK(x)                                                                                  \
  do {                                                                                         \
    cudaError_t e_ = (x);                                                                      \
    if (e_ != cudaSuccess) {                                                                   \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));      \
      exit(1);                                                                                 \
    }                                                                                          \
  } while (0)

/* The probe's own variants: the tensor cores' error (128-byte rows) and
 * the loop without its atomics (SUB where the job's k >= 16). */
static void probe_launch(const tc_params &p, bool err, uint32_t grid, uint64_t u0, uint64_t u1) {
  void (*k)(tc_params, uint64_t, uint64_t) =
      err ? k_tc<true, true, false, false, false>
          : p.job.k >= 16 ? k_tc<false, false, true, true, false> : k_tc<false, false, true, false, false>;
  const size_t sm = err ? (size_t)p.job.rows * 128 : tc_hist_bytes(&p);
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sm));
  CK(cudaMemset(&p.stats[TC_NEXT], 0, sizeof p.stats[TC_NEXT]));
  k<<<grid, TC_NT, sm>>>(p, u0, u1);
  CK(cudaGetLastError());
}

/* ---- the host side ---------------------------------------------------------- */

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

typedef struct row {
  char name[32];
  uint32_t n;
  double w, build_ms, tc_ms, fast_ms, noatom_ms, eng_ms, base_ms, refined, flagged, wide, err;
  char base_kernel[48];
  bool same_f64, same_base, same_eng;
} row;

static histd_worker *WK;

/* kernel ms of one engine run (counts kept in *keep) */
static double engine_run(const histd_dataset *ds, double w, uint32_t buckets, const char *k,
                         uint32_t block, histd_result *keep) {
  histd_problem pr;
  memset(&pr, 0, sizeof pr);
  pr.a = ds;
  pr.bins.kind = HISTD_BINS_WIDTH;
  pr.bins.count = buckets;
  pr.bins.width = w;
  histd_exec ex;
  histd_exec_init(&ex);
  snprintf(ex.kernel, sizeof ex.kernel, "%s", k);
  ex.block_size = block;
  ex.devices = 1;
  char msg[512];
  if (histd_worker_run(WK, &pr, &ex, NULL, keep, msg, sizeof msg) != 0) {
    printf("  %s: %s\n", k, msg);
    return -1;
  }
  return keep->timing.kernel_ms;
}

/* The host's side of a set: tiles, radii, bands, wide tile pairs (every
 * 7th row of tile pairs, every 5th pair in it). */
static void plan_stats(const char *name, const histd_dataset *ds, double w) {
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  tc_tiles t;
  if (tc_tiles_build(ds, w, &t) != 0)
    return;
  clock_gettime(CLOCK_MONOTONIC, &b);
  tc_job jb = tc_job_plan(histd_dataset_diagonal(ds) / w, EPS_R, 1);
  double rsum = 0, rmax = 0, band = 0;
  uint64_t met = 0, wide = 0;
  for (uint32_t I = 0; I < t.tiles; I++) {
    rsum += t.rad[I];
    rmax = t.rad[I] > rmax ? t.rad[I] : rmax;
  }
  for (uint32_t I = 0; jb.ok && I < t.tiles; I += 7)
    for (uint32_t J = I; J < t.tiles; J += 5) {
      float dl[3];
      tc_unit u = tc_unit_plan(&jb, tc_unit_gap(t.cen, I, J, 1.0 / w, dl), t.rad[I], t.rad[J]);
      met++;
      if (u.tc)
        band += (2.0 * u.g + 1) / ldexp(1.0, (int)jb.k);
      else
        wide++;
    }
  printf("%-12s n=%-8zu w=%-5g plan: tiles %u built in %.3f s on the host, radius mean %.2f "
         "max %.2f buckets, k %u, rows %u; over %llu tile pairs: mean band %.2e of a bucket, "
         "wide %.4f\n",
         name, ds->n, w, t.tiles,
         (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9,
         rsum / (t.tiles ? t.tiles : 1), rmax, jb.k, jb.rows, (unsigned long long)met,
         band / (double)(met > wide ? met - wide : 1), (double)wide / (double)(met ? met : 1));
  fflush(stdout);
  tc_tiles_free(&t);
}

static double ms_since(const struct timespec *a) {
  struct timespec b;
  clock_gettime(CLOCK_MONOTONIC, &b);
  return (double)(b.tv_sec - a->tv_sec) * 1e3 + (double)(b.tv_nsec - a->tv_nsec) * 1e-6;
}

/* median of `reps` engine runs of kernel k; the last run's counts in *keep */
static double engine_median(const histd_dataset *ds, double w, uint32_t buckets, const char *k,
                            uint32_t block, int reps, histd_result *keep, bool *ok) {
  double ms[16];
  int m = 0;
  *ok = true;
  for (int rep = 0; rep < reps && *ok; rep++) {
    if (rep > 0)
      histd_result_free(keep);
    ms[m] = engine_run(ds, w, buckets, k, block, keep);
    *ok = ms[m++] >= 0;
  }
  if (!*ok)
    return 0;
  qsort(ms, (size_t)m, sizeof ms[0], cmp_d);
  return ms[m / 2];
}

static bool same_counts(const unsigned long long *rows, uint32_t nrows, const histd_result *r,
                        uint32_t buckets) {
  for (uint32_t b = 0; b < nrows; b++)
    if (rows[b] != (b < buckets ? r->counts[b] : r->overflow))
      return false;
  return true;
}

static row run_set(const char *name, histd_dataset *ds, double w, int reps) {
  row R;
  memset(&R, 0, sizeof R);
  snprintf(R.name, sizeof R.name, "%s", name);
  R.n = (uint32_t)ds->n;
  R.w = w;
  tc_params p;
  memset(&p, 0, sizeof p);
  p.job = tc_job_plan(histd_dataset_diagonal(ds) / w, EPS_R, 1);
  if (!p.job.ok) {
    printf("%s: the plan declined\n", name);
    return R;
  }
  const uint32_t n = (uint32_t)ds->n, rows = p.job.rows;
  p.sub = p.job.k >= 16 ? p.job.k - 16 : 0;
  p.rowcap = rows - 1;
  p.width = w;
  p.inv_w = 1.0 / w;
  /* the points on the GPU (the engine keeps a set's binary64 points there),
   * the tiles built from them: the median of 3 builds */
  double *din;
  void *mem;
  CK(cudaMalloc(&din, 3 * (size_t)n * sizeof(double)));
  CK(cudaMemcpy(din, ds->x, n * sizeof(double), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(din + n, ds->y, n * sizeof(double), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(din + 2 * (size_t)n, ds->z, n * sizeof(double), cudaMemcpyHostToDevice));
  CK(cudaMalloc(&mem, tc_tiles_bytes(n)));
  const double lo[3] = {ds->min[0], ds->min[1], ds->min[2]};
  double bms[3];
  for (int b = 0; b < 3; b++) {
    struct timespec ta;
    clock_gettime(CLOCK_MONOTONIC, &ta);
    CK(tc_tiles_device(din, n, lo, histd__morton_scale(ds), w, mem, &p, 0));
    CK(cudaDeviceSynchronize());
    bms[b] = ms_since(&ta);
  }
  qsort(bms, 3, sizeof bms[0], cmp_d);
  R.build_ms = bms[1];
  unsigned long long *dc;
  CK(cudaMalloc(&dc, (rows + TC_NSTATS) * sizeof(unsigned long long)));
  p.counts = dc;
  p.stats = dc + rows;
  tc_params pf = p; /* fast: no band */
  pf.job = tc_job_plan(histd_dataset_diagonal(ds) / w, EPS_R, 0);
  const int gq = getenv("HISTD_TC_GQ") && atoi(getenv("HISTD_TC_GQ")) == 1;
  uint32_t grid, gridf;
  size_t sm, smf;
  CK(tc_prepare(&p, gq, &grid, &sm));
  CK(tc_prepare(&pf, 0, &gridf, &smf));
  const uint64_t U = (uint64_t)p.tiles * (p.tiles + 1) / 2;
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  unsigned long long st[TC_NSTATS];
  const double pairs = (double)n * (n - 1) / 2;
  double ms[16];
  for (int variant = 0; variant < 3; variant++) {
    const int nrep = variant == 0 ? reps : 1;
    for (int rep = 0; rep < nrep; rep++) {
      CK(cudaMemset(dc, 0, (rows + TC_NSTATS) * sizeof(unsigned long long)));
      CK(cudaEventRecord(e0));
      for (uint64_t a = 0; a < U; a += TC_LAUNCH_MAX) {
        const uint64_t b = a + TC_LAUNCH_MAX < U ? a + TC_LAUNCH_MAX : U;
        if (variant == 0)
          CK(tc_launch(&p, gq, grid, sm, a, b, 0));
        else if (variant == 1)
          CK(tc_launch(&pf, 0, gridf, smf, a, b, 0));
        else
          probe_launch(pf, false, gridf, a, b);
      }
      CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1));
      float f;
      CK(cudaEventElapsedTime(&f, e0, e1));
      ms[rep] = f;
    }
    qsort(ms, (size_t)nrep, sizeof ms[0], cmp_d);
    if (variant == 0) {
      R.tc_ms = ms[nrep / 2];
      CK(cudaMemcpy(st, p.stats, sizeof st, cudaMemcpyDeviceToHost));
      R.refined = st[TC_REFINED] / pairs;
      R.flagged = st[TC_FLAGGED] / (pairs / 8.0);
      R.wide = (double)st[TC_WIDE] / (double)U;
    } else if (variant == 1) {
      R.fast_ms = ms[0];
    } else {
      R.noatom_ms = ms[0];
    }
  }
  /* the counts of an exact run */
  CK(cudaMemset(dc, 0, (rows + TC_NSTATS) * sizeof(unsigned long long)));
  for (uint64_t a = 0; a < U; a += TC_LAUNCH_MAX)
    CK(tc_launch(&p, gq, grid, sm, a, a + TC_LAUNCH_MAX < U ? a + TC_LAUNCH_MAX : U, 0));
  unsigned long long *hc = (unsigned long long *)calloc(rows, sizeof *hc);
  CK(cudaMemcpy(hc, dc, rows * sizeof *hc, cudaMemcpyDeviceToHost));
  /* the tensor cores' error: every pair of the first and the last 2,000 tile pairs */
  CK(cudaMemset(p.stats, 0, TC_NSTATS * sizeof(unsigned long long)));
  const uint64_t Up = U < 2000 ? U : 2000;
  probe_launch(p, true, grid, 0, Up);
  probe_launch(p, true, grid, U - Up, U);
  CK(cudaDeviceSynchronize());
  CK(cudaMemcpy(st, p.stats, sizeof st, cudaMemcpyDeviceToHost));
  memcpy(&R.err, &st[TC_ERR], sizeof R.err);
  cudaFree(din);
  cudaFree(mem);
  cudaFree(dc);
  /* the engine: tensor-core, binary64 and balanced on the same set */
  histd_result r64, rb, re;
  const uint32_t buckets = rows - 1; /* rows past the last bucket are overflow */
  histd_problem bp;                  /* the brute force "auto" runs past tensor-core (choose.c) */
  memset(&bp, 0, sizeof bp);
  bp.a = ds;
  uint32_t bblock;
  const char *bk = histd__choose_gpu_brute(&bp, NULL, &bblock)->name;
  bool got64 = engine_run(ds, w, buckets, "tiled-privatized-f64", 0, &r64) >= 0, gotb, gote;
  R.base_ms = engine_median(ds, w, buckets, bk, bblock, reps, &rb, &gotb);
  R.eng_ms = engine_median(ds, w, buckets, "tensor-core", 0, reps, &re, &gote);
  snprintf(R.base_kernel, sizeof R.base_kernel, "%s/%u", gotb ? rb.kernel : bk, bblock);
  R.same_f64 = got64 && same_counts(hc, rows, &r64, buckets);
  R.same_base = gotb && same_counts(hc, rows, &rb, buckets);
  R.same_eng = gote && got64 && !memcmp(re.counts, r64.counts, buckets * sizeof *re.counts) &&
               re.overflow == r64.overflow && strcmp(re.kernel, "tensor-core") == 0;
  printf("%-12s n=%-8u w=%-5g tiles=%u rows=%u k=%u grid=%u: tiles built on the GPU in "
         "%.2f ms; tc %.2f ms (%.3e pairs/s), fast %.2f ms, no atomics %.2f ms; engine "
         "tensor-core %.2f ms (%.3e pairs/s; ran %s), %s %.2f ms: %.2fx; refined %.2e, flagged "
         "groups of 8 pairs %.2e, wide tile pairs %.4f, tensor-core error %.3g of the "
         "magnitudes (model 2^-18 = %.3g); counts %s binary64, %s %s, engine's %s\n",
         name, n, w, p.tiles, rows, p.job.k, grid, R.build_ms, R.tc_ms, pairs / R.tc_ms * 1e3,
         R.fast_ms, R.noatom_ms, R.eng_ms, pairs / R.eng_ms * 1e3, gote ? re.kernel : "-",
         R.base_kernel, R.base_ms, R.base_ms / R.eng_ms, R.refined, R.flagged, R.wide, R.err,
         0x1p-18, R.same_f64 ? "identical to" : "DIFFER from",
         R.same_base ? "identical to" : "DIFFER from", R.base_kernel,
         R.same_eng ? "identical" : "DIFFER");
  fflush(stdout);
  if (got64)
    histd_result_free(&r64);
  if (gotb)
    histd_result_free(&rb);
  if (gote)
    histd_result_free(&re);
  free(hc);
  return R;
}

static uint64_t S = 88172645463325252ull;
static double rnd(void) {
  S ^= S >> 12;
  S ^= S << 25;
  S ^= S >> 27;
  return (double)((S * 2685821657736338717ull) >> 11) * 0x1p-53;
}

static void fill(histd_dataset *ds, size_t n, int kind) {
  histd_dataset_alloc(ds, n, NULL, 0);
  for (size_t i = 0; i < n; i++) {
    double p[3];
    if (kind == 1) { /* an integer lattice far from the origin */
      size_t m = (size_t)ceil(cbrt((double)n));
      p[0] = 1e5 + (double)(i % m);
      p[1] = -3e4 + (double)(i / m % m);
      p[2] = 7 + (double)(i / m / m);
    } else if (kind == 2) { /* 100 clumps */
      size_t c = i % 100;
      for (int a = 0; a < 3; a++) {
        double centre = 23000 * (double)((c * (a + 7) * 37) % 100) / 100.0;
        p[a] = centre + 500 * (rnd() + rnd() + rnd() - 1.5);
      }
    } else {
      for (int a = 0; a < 3; a++)
        p[a] = 23000 * rnd();
    }
    ds->x[i] = p[0];
    ds->y[i] = p[1];
    ds->z[i] = p[2];
  }
  if (kind == 3) /* uniform with one point far out: its tile is wide */
    ds->x[12345 % n] = 1e6;
  histd_dataset_finish(ds, NULL, 0);
}

int main(int argc, char **argv) {
  bool quick = false, plan = false;
  const char *only = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
      only = argv[++i];
    quick |= strcmp(argv[i], "--quick") == 0;
    plan |= strcmp(argv[i], "--plan") == 0;
  }
  histd_device_info dev[16];
  int count = 0;
  char msg[512] = "";
  if (!plan)
    histd_devices(dev, 16, &count, msg, sizeof msg);
  if (!plan && count == 0) {
    printf("tc_probe: %s\n", msg);
    return 77;
  }
  if (!plan)
    printf("tc_probe on %s (cc %d.%d, %d SMs)\n", dev[0].name, dev[0].cc_major, dev[0].cc_minor,
         dev[0].multiprocessors);
  if (!plan && histd_worker_create(&WK, dev[0].index, msg, sizeof msg) != 0) {
    printf("tc_probe: %s\n", msg);
    return 1;
  }
  const struct {
    const char *name;
    size_t n;
    double w;
    int kind, reps;
  } sets[] = {
      {"lattice w=1", 64000, 1, 1, 1},  {"lattice w=3", 216000, 3, 1, 1},
      {"clumps", 400000, 200, 2, 1},    {"outlier", 300000, 1000, 3, 1},
      {"W4", 100000, 500, 0, 5},        {"W1", 512000, 500, 0, 5},
      {"W2", 2000000, 500, 0, 3},       {"W2 w=100", 2000000, 100, 0, 3},
      {"W2 w=1000", 2000000, 1000, 0, 3}, {"clumps 2M", 2000000, 500, 2, 3},
  };
  row R[16];
  int nr = 0;
  for (size_t s = 0; s < sizeof sets / sizeof sets[0]; s++) {
    if ((quick && sets[s].n > 600000) || (only && strcmp(only, sets[s].name) != 0))
      continue;
    histd_dataset ds;
    fill(&ds, sets[s].n, sets[s].kind);
    plan_stats(sets[s].name, &ds, sets[s].w);
    if (!plan)
      R[nr++] = run_set(sets[s].name, &ds, sets[s].w, sets[s].reps);
    histd_dataset_free(&ds);
  }
  if (plan)
    return 0;
  printf("\n== summary: %s ==\n", dev[0].name);
  printf("%-12s %9s %6s %8s %9s %9s %9s %11s %9s %7s %9s %9s %8s %6s %s\n", "set", "n", "w",
         "build ms", "tc ms", "fast ms", "engine ms", "pairs/s", "base ms", "ratio", "refined",
         "tc err", "wide", "counts", "base");
  for (int i = 0; i < nr; i++) {
    double pairs = (double)R[i].n * (R[i].n - 1) / 2;
    printf("%-12s %9u %6g %8.2f %9.2f %9.2f %9.2f %11.3e %9.2f %6.2fx %9.2e %9.2e %8.4f %6s %s\n",
           R[i].name, R[i].n, R[i].w, R[i].build_ms, R[i].tc_ms, R[i].fast_ms, R[i].eng_ms,
           pairs / R[i].eng_ms * 1e3, R[i].base_ms, R[i].base_ms / R[i].eng_ms, R[i].refined,
           R[i].err, R[i].wide, R[i].same_f64 && R[i].same_base && R[i].same_eng ? "same" : "DIFFER",
           R[i].base_kernel);
  }
  histd_worker_destroy(WK);
  return 0;
}
