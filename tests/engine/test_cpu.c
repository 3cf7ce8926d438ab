/*
 * test_cpu.c -- the "cpu" kernel's fast paths against the definition
 * (tests/definition.h), on inputs chosen to break them: distances within an
 * ulp of a bucket edge, coordinates near 1e15 with tiny widths, indices
 * beyond float32's integers, 1 and 70,000 buckets, 1/2/3 threads, small
 * tiles; on every instruction set this machine has (generic, AVX2,
 * AVX-512) and on both arithmetic paths (float32 + redo, float64).
 * It also checks the float32 error bound itself: the estimate the kernel
 * documents, computed here, stays within delta of the definition's d / w;
 * and the log-bin estimate's polynomial, on all 2^23 inputs.
 */
#include <float.h>
#include <math.h>

#include "../check.h"
#include "../definition.h"
#include "../pointsets.h"
#include "cpu_internal.h"
#include "histd/histd.h"
#include "../plain.h"

static int runs = 0;

/* Runs the kernel with the given knobs and compares with the definition. */
static void check_case_p(const histd_dataset *ds, double w, uint32_t buckets, unsigned threads,
                         cpu_isa isa, cpu_path path, uint32_t tile, int pairs, const char *what,
                         cpu_report *rep_out) {
  plain_job spec;
  plain_init(&spec);
  spec.bucket_width = w;
  spec.buckets = buckets;
  spec.threads = threads;
  snprintf(spec.kernel, sizeof spec.kernel, "cpu");
  histd_result res;
  char msg[256] = "";
  histd_problem prob = plain_problem(ds, &spec);
  histd_exec ex = plain_exec(&spec);
  int rc = histd_result_init(&res, &prob.bins, false, msg, sizeof msg);
  CHECK(rc == 0, "%s: %s", what, msg);
  if (rc != 0)
    return;
  res.total = ds->n < 2 ? 0 : (uint64_t)ds->n * (ds->n - 1) / 2;
  cpu_options opt = {isa, path, tile, 0, pairs};
  cpu_report rep;
  rc = histd__cpu_run_opts(&prob, &ex, NULL, &opt, &res, &rep, msg, sizeof msg);
  CHECK(rc == 0, "%s: %s", what, msg);
  runs++;
  if (rc == 0) {
    def_hist want = definition_histogram(ds->x, ds->y, ds->z, ds->n, w, buckets);
    int bad = 0;
    for (uint32_t b = 0; b < buckets && bad < 3; b++)
      if (res.counts[b] != want.counts[b]) {
        bad++;
        CHECK(0, "%s [%s %s t=%u tile=%u]: bucket %u: got %" PRIu64 ", want %" PRIu64, what,
              histd__cpu_isa_name(rep.isa), rep.path == CPU_PATH_F32 ? "f32" : "f64", threads,
              tile, b, res.counts[b], want.counts[b]);
      }
    CHECK(res.overflow == want.overflow, "%s [%s %s]: overflow %" PRIu64 ", want %" PRIu64,
          what, histd__cpu_isa_name(rep.isa), rep.path == CPU_PATH_F32 ? "f32" : "f64",
          res.overflow, want.overflow);
    CHECK(res.exact, "%s: exact mode must report exact", what);
    free(want.counts);
    if (rep_out)
      *rep_out = rep;
  }
  histd_result_free(&res);
}

static void check_case(const histd_dataset *ds, double w, uint32_t buckets, unsigned threads,
                       cpu_isa isa, cpu_path path, uint32_t tile, const char *what,
                       cpu_report *rep_out) {
  check_case_p(ds, w, buckets, threads, isa, path, tile, 0, what, rep_out);
  /* AVX-512 float32 counts in a bucket-pair table when there are few
   * buckets: run the other layout too (forced on, or off) */
  bool small = (uint64_t)(buckets + 2) * (buckets + 2) * 4 <= 32768;
  if (isa == CPU_ISA_AVX512 && path != CPU_PATH_F64 && (small || buckets <= 1000))
    check_case_p(ds, w, buckets, threads, isa, path, tile, small ? -1 : 1, what, NULL);
}

static const cpu_isa isas[] = {CPU_ISA_GENERIC, CPU_ISA_AVX2, CPU_ISA_AVX512};
static const cpu_path paths[] = {CPU_PATH_AUTO, CPU_PATH_F64};

/* Every ISA this machine has, both paths, a few thread counts and tiles. */
static void check_all(const histd_dataset *ds, double w, uint32_t buckets, const char *what,
                      bool want_f32) {
  static const unsigned threads[] = {1, 2, 3};
  static const uint32_t tiles[] = {0, 16, 37};
  int k = 0;
  for (size_t a = 0; a < 3; a++) {
    if (!histd__cpu_isa_supported(isas[a]))
      continue;
    for (size_t p = 0; p < 2; p++) {
      cpu_report rep = {0};
      k++;
      check_case(ds, w, buckets, threads[k % 3], isas[a], paths[p], tiles[k % 3], what, &rep);
      if (paths[p] == CPU_PATH_AUTO)
        CHECK((rep.path == CPU_PATH_F32) == want_f32,
              "%s: expected the %s path (delta %g)", what, want_f32 ? "float32" : "float64",
              rep.delta);
    }
  }
}

static histd_dataset alloc_ds(size_t n) {
  histd_dataset ds;
  histd_dataset_alloc(&ds, n, NULL, 0);
  return ds;
}

/* n points uniform in [base, base + side)^3, from seed; finished. */
static histd_dataset box_ds(size_t n, double base, double side, uint64_t seed) {
  histd_dataset ds = alloc_ds(n);
  for (size_t i = 0; i < n; i++) {
    ds.x[i] = base + test_rand01(&seed) * side;
    ds.y[i] = base + test_rand01(&seed) * side;
    ds.z[i] = base + test_rand01(&seed) * side;
  }
  histd_dataset_finish(&ds, NULL, 0);
  return ds;
}

/* Pairs at distance k*w, and one ulp (of the coordinate) either side, along
 * axes and along Pythagorean quadruples (a, b, c, d): a^2+b^2+c^2 = d^2. */
static void test_near_edges(void) {
  static const int quad[][4] = {{1, 2, 2, 3}, {2, 3, 6, 7}, {1, 4, 8, 9}, {4, 4, 7, 9},
                                {2, 6, 9, 11}, {6, 6, 7, 11}, {3, 4, 12, 13}, {2, 5, 14, 15}};
  static const double widths[] = {0.7, 1.0, 3.0 / 7.0, 500.0, 1e-3};
  for (size_t wi = 0; wi < sizeof widths / sizeof widths[0]; wi++) {
    double w = widths[wi];
    size_t n = 0, cap = 1200;
    histd_dataset ds = alloc_ds(cap);
    uint64_t s = 77 + wi;
    while (n + 4 <= cap) {
      /* an anchor point and three partners near the edge k*w / (d) */
      double ax = test_rand01(&s) * 40 * w, ay = test_rand01(&s) * 40 * w,
             az = test_rand01(&s) * 40 * w;
      const int *qd = quad[test_rand_u64(&s) % 8];
      double k = (double)(1 + test_rand_u64(&s) % 12);
      double f = k * w / qd[3];
      ds.x[n] = ax, ds.y[n] = ay, ds.z[n] = az, n++;
      for (int t = -1; t <= 1; t++) {
        double px = ax + qd[0] * f, py = ay + qd[1] * f, pz = az + qd[2] * f;
        if (t != 0)
          px = nextafter(px, t < 0 ? -INFINITY : INFINITY);
        ds.x[n] = px, ds.y[n] = py, ds.z[n] = pz, n++;
      }
    }
    ds.n = n;
    histd_dataset_finish(&ds, NULL, 0);
    char what[64];
    snprintf(what, sizeof what, "near-edge quadruples w=%g", w);
    check_all(&ds, w, 0 + (uint32_t)(80 * sqrt(3.0)) + 2, what, true);
    check_all(&ds, w, 7, what, true);
    histd_dataset_free(&ds);
  }

  /* on an axis: 0 and k*w, nextafter both ways, for many k */
  for (int wi = 0; wi < 3; wi++) {
    double w = wi == 0 ? 0.1 : wi == 1 ? 1.0 / 3.0 : 2.5;
    histd_dataset ds = alloc_ds(601);
    ds.x[0] = ds.y[0] = ds.z[0] = 0;
    for (size_t i = 1; i < 601; i++) {
      double k = (double)((i - 1) / 3 + 1);
      double x = k * w;
      int t = (int)((i - 1) % 3) - 1;
      ds.x[i] = t == 0 ? x : nextafter(x, t < 0 ? 0 : INFINITY);
      ds.y[i] = 0;
      ds.z[i] = 0;
    }
    histd_dataset_finish(&ds, NULL, 0);
    char what[64];
    snprintf(what, sizeof what, "axis edges w=%g", w);
    check_all(&ds, w, 250, what, true);
    histd_dataset_free(&ds);
  }
}

/* Far from the origin, huge coordinates, tiny widths, huge indices. */
static void test_magnitudes(void) {
  struct {
    double base, side, w;
    uint32_t buckets;
    bool f32;
    const char *what;
  } cases[] = {
      {1e6, 2300, 5, 0, true, "1e6 + 2300, w=5"},
      {1e15, 1000, 0.1, 0, true, "1e15 + 1000 (ulp 0.125), w=0.1"},
      {1e15, 1000, 1e-3, 4000, false, "1e15 + 1000, w=1e-3: indices ~1e6"},
      {-1e15, 64, 0.125, 1000, true, "-1e15 + 64, w=ulp"},
      {0, 1000, 1e-5, 1000, false, "w=1e-5: indices ~1.7e8 > 2^24, mostly overflow"},
      {0, 1e-300, 1e-302, 300, false, "tiny coordinates 1e-300"},
      {0, 1e-30, 1e-32, 200, true, "small coordinates 1e-30 (float32 subnormal range)"},
      {0, 1e140, 1e138, 200, true, "coordinates 1e140"},
      {0, 1e200, 1e198, 200, false, "coordinates 1e200 (span > 2^500)"},
      {1e300, 1e299, 1e297, 20, false, "coordinates 1e300 (squares overflow float64)"},
      {0, 23000, 500, 1, true, "buckets=1"},
      {0, 23000, 0.3, 70000, false, "70000 buckets"},
      {0, 100, 0.003, 70000, true, "70000 buckets, smaller box"},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    histd_dataset ds = box_ds(700, cases[c].base, cases[c].side, 1000 + c);
    uint32_t buckets = cases[c].buckets;
    if (buckets == 0)
      histd_default_buckets(&ds, cases[c].w, &buckets, NULL, 0);
    check_all(&ds, cases[c].w, buckets, cases[c].what, cases[c].f32);
    histd_dataset_free(&ds);
  }
}

/* The registry's shapes on odd sizes through every ISA. */
static void test_shapes(void) {
  static const size_t sizes[] = {2, 15, 16, 17, 33, 500};
  for (int shape = 0; shape < SHAPE_COUNT; shape++)
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
      histd_dataset ds = alloc_ds(sizes[si]);
      double side = shape == SHAPE_LATTICE ? 9 : 23000;
      pointset_fill(&ds, (shape_kind)shape, side, 99 + si);
      double w = shape == SHAPE_LATTICE ? 1 : 230;
      char what[64];
      snprintf(what, sizeof what, "%s n=%zu", shape_names[shape], ds.n);
      for (size_t a = 0; a < 3; a++)
        for (size_t p = 0; p < 2; p++)
          if (histd__cpu_isa_supported(isas[a])) {
            check_case(&ds, w, 200, 1 + (unsigned)(si % 3), isas[a], paths[p], 0, what, NULL);
            check_case(&ds, w, 3, 2, isas[a], paths[p], 16, what, NULL);
          }
      histd_dataset_free(&ds);
    }
}

/* The lattice lands on edges: the redo must run, and "fast" says inexact. */
static void test_refined_and_fast(void) {
  histd_dataset ds = alloc_ds(400);
  pointset_fill(&ds, SHAPE_LATTICE, 9, 3);
  plain_job spec;
  plain_init(&spec);
  spec.bucket_width = 1;
  snprintf(spec.kernel, sizeof spec.kernel, "cpu");
  histd_result res;
  char msg[256];
  int rc = plain_run(&ds, &spec, NULL, &res, msg, sizeof msg);
  CHECK(rc == 0, "%s", msg);
  if (rc == 0) {
    CHECK(res.refined_pairs > 0, "lattice distances sit on edges: some pairs must be redone");
    CHECK(res.exact, "exact");
    histd_result_free(&res);
  }
  spec.precision = HISTD_PRECISION_FAST;
  rc = plain_run(&ds, &spec, NULL, &res, msg, sizeof msg);
  CHECK(rc == 0, "%s", msg);
  if (rc == 0) {
    uint64_t sum = res.overflow;
    for (uint32_t b = 0; b < res.bins.count; b++)
      sum += res.counts[b];
    CHECK_EQ_U64(sum, res.total, "fast: counts + overflow = total");
    CHECK(!res.exact, "precision fast on the float32 path reports exact = false");
    CHECK_EQ_U64(res.refined_pairs, 0, "fast redoes nothing");
    histd_result_free(&res);
  }
  histd_dataset_free(&ds);
}

/*
 * The bound itself: for random pairs, the float32 estimate documented in
 * cpu.c (centre, divide by w, round to float32, then float32 arithmetic,
 * with or without FMA) stays within delta of the definition's d / w.
 */
static void test_error_bound(void) {
  struct {
    double base, side, w;
    uint32_t buckets;
  } cases[] = {{0, 23000, 500, 80},     {1e6, 23000, 50, 800}, {1e15, 2000, 0.5, 7000},
               {0, 23000, 2, 20000},    {5, 1, 1e-4, 17000},   {0, 1e-3, 1e-7, 17000}};
  double worst = 0;
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    histd_dataset ds = box_ds(2000, cases[c].base, cases[c].side, 4242 + c);
    /* the kernel's delta for this job */
    cpu_report rep = {0};
    check_case(&ds, cases[c].w, cases[c].buckets, 2, CPU_ISA_AUTO, CPU_PATH_AUTO, 0,
               "bound case", &rep);
    CHECK(rep.path == CPU_PATH_F32, "bound case %zu should take the float32 path", c);
    if (rep.path != CPU_PATH_F32) {
      histd_dataset_free(&ds);
      continue;
    }
    double cen[3] = {0.5 * ds.min[0] + 0.5 * ds.max[0], 0.5 * ds.min[1] + 0.5 * ds.max[1],
                     0.5 * ds.min[2] + 0.5 * ds.max[2]};
    double iw = 1.0 / cases[c].w;
    for (size_t i = 0; i < ds.n; i++) {
      float pi[3] = {(float)((ds.x[i] - cen[0]) * iw), (float)((ds.y[i] - cen[1]) * iw),
                     (float)((ds.z[i] - cen[2]) * iw)};
      for (size_t j = i + 1; j < ds.n; j++) {
        float pj[3] = {(float)((ds.x[j] - cen[0]) * iw), (float)((ds.y[j] - cen[1]) * iw),
                       (float)((ds.z[j] - cen[2]) * iw)};
        float dx = pi[0] - pj[0], dy = pi[1] - pj[1], dz = pi[2] - pj[2];
        float a = dx * dx, b = dy * dy, cc = dz * dz;
        float s1 = a + b;
        float q1 = sqrtf(s1 + cc);
        float q2 = sqrtf(fmaf(dz, dz, fmaf(dy, dy, a)));
        /* the definition's d / w, as in definition.h */
        double ex = ds.x[i] - ds.x[j], ey = ds.y[i] - ds.y[j], ez = ds.z[i] - ds.z[j];
        double sxx = ex * ex, syy = ey * ey, szz = ez * ez;
        double sd = sxx + syy;
        sd = sd + szz;
        double qd = sqrt(sd) / cases[c].w;
        if (qd > (double)cases[c].buckets + 1)
          continue; /* clamped lanes take no edge test */
        double e = fmax(fabs(q1 - qd), fabs(q2 - qd)) / rep.delta;
        worst = e > worst ? e : worst;
      }
    }
    histd_dataset_free(&ds);
  }
  printf("float32 estimate: worst |q - d/w| = %.3f of delta over the bound cases\n", worst);
  CHECK(worst < 1.0, "the float32 estimate left the error bound (%.3f delta)", worst);
}

/* Many threads asked for, many buckets: the private histograms (4 bytes a
 * bucket, one per thread) stay within CPU_HIST_BUDGET_BYTES together, and
 * the counts are still the definition's. 64 threads x 16 Mi buckets would
 * be 4 GiB. */
static void test_thread_memory_bound(void) {
  const size_t n = 400;
  const uint32_t buckets = HISTD_MAX_BUCKETS;
  histd_dataset ds = alloc_ds(n);
  uint64_t seed = 99;
  for (size_t i = 0; i < n; i++) {
    ds.x[i] = test_rand01(&seed) * 100;
    ds.y[i] = test_rand01(&seed) * 100;
    ds.z[i] = test_rand01(&seed) * 100;
  }
  histd_dataset_finish(&ds, NULL, 0);
  plain_job spec;
  plain_init(&spec);
  spec.bucket_width = 1e-5;
  spec.buckets = buckets;
  spec.threads = 64;
  histd_result res;
  char msg[256] = "";
  histd_problem prob = plain_problem(&ds, &spec);
  histd_exec ex = plain_exec(&spec);
  CHECK(histd_result_init(&res, &prob.bins, false, msg, sizeof msg) == 0, "%s", msg);
  res.total = (uint64_t)n * (n - 1) / 2;
  cpu_options opt = {CPU_ISA_AUTO, CPU_PATH_AUTO, 16, 0, 0}; /* 325 tasks */
  int rc = histd__cpu_run_opts(&prob, &ex, NULL, &opt, &res, NULL, msg, sizeof msg);
  CHECK(rc == 0, "many threads, many buckets: %s", msg);
  if (rc == 0) {
    CHECK((uint64_t)res.threads * ((uint64_t)buckets + 2) * 4 <= CPU_HIST_BUDGET_BYTES,
          "%u threads of %u buckets take more than %zu bytes of private histograms",
          res.threads, buckets, CPU_HIST_BUDGET_BYTES);
    CHECK(res.threads >= 1, "at least one thread");
    def_hist want = definition_histogram(ds.x, ds.y, ds.z, n, spec.bucket_width, buckets);
    bool same = res.overflow == want.overflow;
    for (uint32_t b = 0; b < buckets && same; b++)
      same = res.counts[b] == want.counts[b];
    CHECK(same, "many threads, many buckets: counts differ from the definition");
    free(want.counts);
    runs++;
  }
  histd_result_free(&res);
  histd_dataset_free(&ds);
}

/* cpu_log2_1p's documented bound, on every float32 t = m - 1 of a mantissa
 * m in [1, 2), against libm's log2 in float64 (within 2^-52 relative). */
static void test_log2_bound(void) {
  double worst = 0, at = 0;
  for (uint32_t k = 0; k < (1u << 23); k++) {
    const float t = (float)k * 0x1p-23f;
    const double err = fabs((double)cpu_log2_1p(t) - log2(1.0 + (double)t));
    if (err > worst) {
      worst = err;
      at = t;
    }
  }
  printf("cpu_log2_1p: largest error %.3g (at t = %.9g), bound %.3g\n", worst, at,
         CPU_LOG2_ERR);
  CHECK(worst + 0x1p-50 <= CPU_LOG2_ERR, "cpu_log2_1p within CPU_LOG2_ERR: %.3g at %.9g",
        worst, at);
}

int main(void) {
  test_log2_bound();
  printf("instruction sets here:");
  for (size_t a = 0; a < 3; a++)
    if (histd__cpu_isa_supported(isas[a]))
      printf(" %s", histd__cpu_isa_name(isas[a]));
  printf("\n");
  test_near_edges();
  test_magnitudes();
  test_shapes();
  test_refined_and_fast();
  test_error_bound();
  test_thread_memory_bound();
  printf("%d kernel runs compared with the definition\n", runs);
  return check_finish("test_cpu");
}
