/*
 * test_sdh.c -- runs the built `sdh` (its path is argv[1]) on small files
 * written here and checks its output layouts and exit codes:
 *   - JSON parsed back and its counts compared with the brute-force
 *     definition (tests/definition.h), for every input format;
 *   - the text layout (row prefixes, five counts a row, the T: line);
 *   - CSV rows; --random's documented generator, bucket count and seeds;
 *   - --list-kernels; usage errors exit 2, runtime errors exit 1.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "../check.h"
#include "../definition.h"

static const char *sdh;
static char dir[] = "/tmp/histd-test-sdh-XXXXXX";
static char out_path[300], err_path[300];

typedef struct run_result {
  int status; /* exit status, or -1 if it did not exit normally */
  char *out, *err;
} run_result;

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (f == NULL)
    return strdup("");
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  size_t got = fread(s, 1, (size_t)n, f);
  s[got] = '\0';
  fclose(f);
  return s;
}

/* Runs sdh with the NULL-terminated arguments. */
static run_result run(const char *first, ...) {
  const char *argv[32];
  int argc = 0;
  argv[argc++] = sdh;
  va_list ap;
  va_start(ap, first);
  for (const char *a = first; a != NULL && argc < 31; a = va_arg(ap, const char *))
    argv[argc++] = a;
  va_end(ap);
  argv[argc] = NULL;
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    int o = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(o, 1);
    dup2(e, 2);
    execv(sdh, (char *const *)argv);
    _exit(127);
  }
  int ws = 0;
  waitpid(pid, &ws, 0);
  run_result r = {WIFEXITED(ws) ? WEXITSTATUS(ws) : -1, slurp(out_path), slurp(err_path)};
  return r;
}

static void run_free(run_result *r) {
  free(r->out);
  free(r->err);
}

static char *path_in_dir(const char *name) {
  static char buf[8][300];
  static int k = 0;
  char *p = buf[k++ % 8];
  snprintf(p, 300, "%s/%s", dir, name);
  return p;
}

/* ---- point files --------------------------------------------------------- */

enum { N = 70 };
static double px[N], py[N], pz[N];

static void write_file(const char *name, const void *data, size_t len) {
  FILE *f = fopen(path_in_dir(name), "wb");
  fwrite(data, 1, len, f);
  fclose(f);
}

static void le_bytes(unsigned char *p, uint64_t u, int n) {
  for (int b = 0; b < n; b++)
    p[b] = (unsigned char)(u >> (8 * b));
}

static void write_point_files(void) {
  uint64_t s = 99;
  for (int i = 0; i < N; i++) { /* multiples of 1/16: exact in float32 too */
    px[i] = (double)(test_rand_u64(&s) % 16000) / 16.0;
    py[i] = (double)(test_rand_u64(&s) % 16000) / 16.0;
    pz[i] = (double)(test_rand_u64(&s) % 16000) / 16.0;
  }
  px[1] = px[0] + 300, py[1] = py[0], pz[1] = pz[0]; /* a pair exactly on an edge */
  static char text[N * 80];
  size_t o = 0;
  o += (size_t)snprintf(text + o, sizeof text - o, "{\"points\":[");
  for (int i = 0; i < N; i++)
    o += (size_t)snprintf(text + o, sizeof text - o, "%s[%.17g,%.17g,%.17g]", i ? "," : "", px[i],
                          py[i], pz[i]);
  o += (size_t)snprintf(text + o, sizeof text - o, "]}");
  write_file("p.json", text, o);
  o = (size_t)snprintf(text, sizeof text, "x,y,z\r\n");
  for (int i = 0; i < N; i++)
    o += (size_t)snprintf(text + o, sizeof text - o, "%.17g,%.17g,%.17g\r\n", px[i], py[i], pz[i]);
  write_file("p.csv", text, o);
  write_file("p.data", text, o); /* no known extension */
  o = (size_t)snprintf(text, sizeof text, "%d\ntest points\n", N);
  for (int i = 0; i < N; i++)
    o += (size_t)snprintf(text + o, sizeof text - o, "Ar %.17g %.17g %.17g\n", px[i], py[i], pz[i]);
  write_file("p.xyz", text, o);
  static unsigned char b64[N * 24], b32[N * 12];
  for (int i = 0; i < N; i++) {
    double d[3] = {px[i], py[i], pz[i]};
    for (int a = 0; a < 3; a++) {
      uint64_t u;
      memcpy(&u, &d[a], 8);
      le_bytes(b64 + 24 * i + 8 * a, u, 8);
      float f = (float)d[a];
      uint32_t v;
      memcpy(&v, &f, 4);
      le_bytes(b32 + 12 * i + 4 * a, v, 4);
    }
  }
  write_file("p.f64", b64, sizeof b64);
  write_file("p.bin", b64, sizeof b64);
  write_file("p.f32", b32, sizeof b32);
  write_file("cut.raw", b32, sizeof b32 - 5);
  write_file("bad.csv", "1,2,3\n4,5,6\n7,8\n", 16);
  write_file("nan.csv", "1,2,3\nnan,5,6\n", 14);
}

/* ---- checks -------------------------------------------------------------- */

static uint64_t u64_of(const cJSON *item) { return (uint64_t)cJSON_GetNumberValue(item); }

/* Checks sdh's JSON for the test points against the definition. */
static void check_json(const char *what, const char *out, double width, uint32_t want_buckets,
                       const double *x, const double *y, const double *z, size_t n) {
  cJSON *o = cJSON_Parse(out);
  CHECK(o != NULL, "%s: output is not JSON: %.200s", what, out);
  if (o == NULL)
    return;
  uint32_t buckets = (uint32_t)cJSON_GetNumberValue(cJSON_GetObjectItem(o, "buckets"));
  if (want_buckets != 0)
    CHECK(buckets == want_buckets, "%s: buckets %u, want %u", what, buckets, want_buckets);
  CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(o, "bucket_width")) == width, "%s: width", what);
  CHECK_EQ_U64(u64_of(cJSON_GetObjectItem(o, "n")), n, "n");
  def_hist h = definition_histogram(x, y, z, n, width, buckets);
  const cJSON *counts = cJSON_GetObjectItem(o, "counts");
  CHECK(cJSON_GetArraySize(counts) == (int)buckets, "%s: %d counts", what,
        cJSON_GetArraySize(counts));
  for (uint32_t b = 0; b < buckets; b++)
    CHECK(u64_of(cJSON_GetArrayItem(counts, (int)b)) == h.counts[b],
          "%s: bucket %u: %" PRIu64 ", definition %" PRIu64, what, b,
          u64_of(cJSON_GetArrayItem(counts, (int)b)), h.counts[b]);
  CHECK_EQ_U64(u64_of(cJSON_GetObjectItem(o, "overflow")), h.overflow, "overflow");
  CHECK_EQ_U64(u64_of(cJSON_GetObjectItem(o, "total")), (uint64_t)n * (n - 1) / 2, "total");
  CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(o, "edges")) == (int)buckets + 1, "%s: edges", what);
  CHECK(cJSON_IsString(cJSON_GetObjectItem(o, "kernel")), "%s: kernel", what);
  CHECK(cJSON_IsObject(cJSON_GetObjectItem(o, "timing_ms")), "%s: timing_ms", what);
  free(h.counts);
  cJSON_Delete(o);
}

static void test_formats(void) {
  static const char *const files[] = {"p.json", "p.csv", "p.xyz", "p.f64", "p.bin", "p.f32"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    run_result r = run(path_in_dir(files[i]), "--width", "300", "--format", "json", NULL);
    CHECK(r.status == 0, "%s: exit %d: %s", files[i], r.status, r.err);
    check_json(files[i], r.out, 300, 0, px, py, pz, N);
    run_free(&r);
  }
  /* A fixed bucket count with overflow, a named kernel, pretty output. */
  run_result r = run(path_in_dir("p.csv"), "-w", "250", "-b", "7", "-k", "cpu-reference",
                     "--format", "json", "--pretty", NULL);
  CHECK(r.status == 0, "buckets 7: exit %d: %s", r.status, r.err);
  check_json("buckets 7", r.out, 250, 7, px, py, pz, N);
  CHECK_STR_CONTAINS(r.out, "{\n  \"n\": ");
  CHECK_STR_CONTAINS(r.out, "\n  \"kernel\": \"cpu-reference\",\n");
  CHECK(strchr(r.out, '\n') != strrchr(r.out, '\n'), "pretty output spans lines");
  run_free(&r);
  /* --input-format overrides an unknown extension. */
  r = run(path_in_dir("p.data"), "-i", "csv", "-w", "300", "-f", "json", NULL);
  CHECK(r.status == 0, "p.data -i csv: exit %d: %s", r.status, r.err);
  check_json("p.data", r.out, 300, 0, px, py, pz, N);
  run_free(&r);
}

static void test_text_layout(void) {
  run_result r = run(path_in_dir("p.csv"), "--width", "100", "--kernel", "cpu", NULL);
  CHECK(r.status == 0, "text: exit %d: %s", r.status, r.err);
  def_hist h = {0};
  /* find the bucket count from the JSON run of the same job */
  run_result j = run(path_in_dir("p.csv"), "--width", "100", "--kernel", "cpu", "-f", "json", NULL);
  cJSON *o = cJSON_Parse(j.out);
  uint32_t buckets = o ? (uint32_t)cJSON_GetNumberValue(cJSON_GetObjectItem(o, "buckets")) : 0;
  cJSON_Delete(o);
  run_free(&j);
  CHECK(buckets > 10, "text: %u buckets", buckets);
  h = definition_histogram(px, py, pz, N, 100, buckets);

  char *save = NULL, *line = strtok_r(r.out, "\n", &save);
  uint32_t b = 0;
  int rows = 0;
  int prefix_width = buckets - 1 >= 100 ? 3 : 2;
  for (; line != NULL && line[0] != 'T'; line = strtok_r(NULL, "\n", &save), rows++) {
    char want[16];
    snprintf(want, sizeof want, "%0*u:", prefix_width, b);
    CHECK(strncmp(line, want, strlen(want)) == 0, "row %d: '%s' should start with '%s'", rows,
          line, want);
    char *p = line + strlen(want), *end;
    int k = 0;
    for (;; p = end, k++) {
      uint64_t v = strtoull(p, &end, 10);
      if (end == p)
        break;
      CHECK(b < buckets && v == h.counts[b], "bucket %u: %" PRIu64 ", definition %" PRIu64, b, v,
            b < buckets ? h.counts[b] : 0);
      b++;
    }
    CHECK(k == 5 || b == buckets, "row %d has %d counts", rows, k);
  }
  CHECK(b == buckets, "text rows hold %u of %u buckets", b, buckets);
  CHECK(line != NULL, "a T: line");
  if (line != NULL) {
    char want[32];
    snprintf(want, sizeof want, "T:%d", N * (N - 1) / 2);
    CHECK(strcmp(line, want) == 0, "'%s' should be '%s'", line, want);
    /* then the result's other scalars, a line each */
    const char *rest = line + strlen(line) + 1;
    CHECK_STR_CONTAINS(rest, "\nkernel: cpu\n");
    CHECK_STR_CONTAINS(rest, "\ntotal_ms: ");
    CHECK_STR_CONTAINS(rest, "\ndevice: cpu: ");
  }
  free(h.counts);
  run_free(&r);

  /* Overflow is shown when nonzero. */
  r = run(path_in_dir("p.json"), "-w", "100", "-b", "3", NULL);
  CHECK(r.status == 0, "overflow run: %s", r.err);
  CHECK(strncmp(r.out, "00:", 3) == 0, "3 buckets: %s", r.out);
  CHECK_STR_CONTAINS(r.out, "\noverflow: ");
  run_free(&r);
}

static void test_csv_output(void) {
  run_result r = run(path_in_dir("p.xyz"), "-w", "500", "-b", "10", "-f", "csv", NULL);
  CHECK(r.status == 0, "csv: %s", r.err);
  def_hist h = definition_histogram(px, py, pz, N, 500, 10);
  /* the result's scalars first, as "# name: value" lines */
  CHECK(strncmp(r.out, "# n: 70\n", 8) == 0, "csv scalars: %.40s", r.out);
  CHECK_STR_CONTAINS(r.out, "\n# total: 2415\n");
  char *save = NULL, *line = strtok_r(r.out, "\n", &save);
  while (line && line[0] == '#')
    line = strtok_r(NULL, "\n", &save);
  CHECK(line && strcmp(line, "bucket,lower,upper,count") == 0, "csv header: %s", line ? line : "");
  for (uint32_t b = 0; b < 10; b++) {
    line = strtok_r(NULL, "\n", &save);
    char want[96];
    snprintf(want, sizeof want, "%u,%u,%u,%" PRIu64, b, b * 500, (b + 1) * 500, h.counts[b]);
    CHECK(line && strcmp(line, want) == 0, "csv row %u: '%s', want '%s'", b, line ? line : "",
          want);
  }
  line = strtok_r(NULL, "\n", &save);
  char want[64];
  snprintf(want, sizeof want, "overflow,5000,,%" PRIu64, h.overflow);
  CHECK(line && strcmp(line, want) == 0, "csv overflow: '%s', want '%s'", line ? line : "", want);
  CHECK(strtok_r(NULL, "\n", &save) == NULL, "nothing after the overflow row");
  free(h.counts);
  run_free(&r);
}

static void expect_exit(int want, const char *needle, const char *a1, const char *a2,
                        const char *a3, const char *a4, const char *a5, const char *a6);

/* The statistics flags, on files small enough to work out by hand. */
static void test_statistics(void) {
  /* weights in a fourth column: pairs 0-1 (d 5, w 1), 1-2 (d 5, w 0.5),
   * 0-2 (d 10, w 2) */
  const char *wcsv = "0 0 0 2\n3 4 0 0.5\n6 8 0 1\n";
  write_file("w.csv", wcsv, strlen(wcsv));
  run_result r = run(path_in_dir("w.csv"), "--width", "5", "--buckets", "3", "--weighted", "-f",
                     "csv", NULL);
  CHECK(r.status == 0, "--weighted: %s", r.err);
  CHECK_STR_CONTAINS(r.out, "bucket,lower,upper,count,weighted\n0,0,5,0,0\n1,5,10,2,1.5\n"
                            "2,10,15,1,2\noverflow,15,,0,\n");
  run_free(&r);
  /* collisions: 3 equal points and 2 equal points: 3 + 1 pairs of 10 */
  const char *dup = "1,2,3\n1,2,3\n4,5,6\n1,2,3\n4,5,6\n";
  write_file("dup.csv", dup, strlen(dup));
  r = run(path_in_dir("dup.csv"), "--within", "0", "-f", "csv", NULL);
  CHECK(r.status == 0, "--within 0: %s", r.err);
  CHECK_STR_CONTAINS(r.out, "n,frames,statistic,radius,within,overflow,total,");
  CHECK_STR_CONTAINS(r.out, "\n5,1,within,0,4,6,10,");
  run_free(&r);
  /* A x B: w.csv with dup.csv, every pair, in explicit edges */
  r = run(path_in_dir("w.csv"), "--with", path_in_dir("dup.csv"), "--edges", "1,5,20", "-f",
          "json", NULL);
  CHECK(r.status == 0, "--with: %s", r.err);
  CHECK_STR_CONTAINS(r.out, "\"n\":3,\"n_b\":5");
  CHECK_STR_CONTAINS(r.out, "\"total\":15");
  CHECK_STR_CONTAINS(r.out, "\"edges\":[1,5,20]");
  run_free(&r);
  /* the same edges from a file (blanks, commas and newlines between them) */
  const char *edges = "1\n 5,\t20\n";
  write_file("edges.txt", edges, strlen(edges));
  write_file("empty.txt", "", 0);
  r = run(path_in_dir("w.csv"), "--with", path_in_dir("dup.csv"), "--edges",
          path_in_dir("edges.txt"), "-f", "json", NULL);
  CHECK(r.status == 0, "--edges FILE: %s", r.err);
  CHECK_STR_CONTAINS(r.out, "\"total\":15");
  CHECK_STR_CONTAINS(r.out, "\"edges\":[1,5,20]");
  run_free(&r);
  expect_exit(2, "cannot open", path_in_dir("w.csv"), "--edges", path_in_dir("nowhere.txt"),
              NULL, NULL, NULL);
  expect_exit(2, "holds no numbers", path_in_dir("w.csv"), "--edges",
              path_in_dir("empty.txt"), NULL, NULL, NULL);
  /* a periodic cube of 10: (0,0,0)-(9,0,0) is 1 apart; r_max 6 > 5 refused */
  const char *pbc = "0 0 0\n9 0 0\n";
  write_file("pbc.csv", pbc, strlen(pbc));
  r = run(path_in_dir("pbc.csv"), "--periodic", "10", "--r-max", "5", "--buckets", "5", "-f",
          "csv", NULL);
  CHECK(r.status == 0, "--periodic: %s", r.err);
  CHECK_STR_CONTAINS(r.out, "bucket,lower,upper,count,g,coordination\n0,0,1,0,");
  CHECK_STR_CONTAINS(r.out, "\n1,1,2,1,");
  run_free(&r);
  expect_exit(2, "exceeds half the periodic box", path_in_dir("pbc.csv"), "--periodic", "10",
              "--edges", "0,6", NULL);
  expect_exit(2, "log_bins needs 0 < r_min < r_max", path_in_dir("pbc.csv"), "--log-bins",
              "5,1,3", NULL, NULL, NULL);
  expect_exit(2, "give one way of binning", path_in_dir("pbc.csv"), "--width", "1", "--within",
              "2", NULL);
  expect_exit(2, "weights were asked for, but the points (A) carry none", path_in_dir("pbc.csv"),
              "--width", "1", "--weighted", NULL, NULL);
  /* two extended-XYZ frames in a cube of 10: d 1 in the first, 2.5 in the second */
  const char *frames = "2\nLattice=\"10 0 0 0 10 0 0 0 10\"\nAr 0 0 0\nAr 9 0 0\n"
                       "2\nLattice=\"10 0 0 0 10 0 0 0 10\"\nAr 0 0 0\nAr 0 0 7.5\n";
  write_file("frames.xyz", frames, strlen(frames));
  r = run(path_in_dir("frames.xyz"), "--r-max", "5", "--buckets", "5", NULL);
  CHECK(r.status == 0, "frames: %s", r.err);
  CHECK_STR_CONTAINS(r.out, "\n       1              1              2              1 ");
  CHECK_STR_CONTAINS(r.out, "\n       2              2              3              1 ");
  CHECK_STR_CONTAINS(r.out, "\nT:2\nn: 4\nunit: Angstrom\nframes: 2\nvolume: 1000\n"
                            "box_source: dataset\n");
  run_free(&r);
  r = run(path_in_dir("frames.xyz"), "--periodic", "20", "--r-max", "5", "--buckets", "5", "-f",
          "json", NULL);
  CHECK(r.status == 0, "frames, the job's box: %s", r.err);
  CHECK_STR_CONTAINS(r.out, "\"frames\":2,\"volume\":8000,\"box_source\":\"job\"");
  CHECK_STR_CONTAINS(r.out, "\"counts\":[0,0,0,0,0],\"g\""); /* 9 and 7.5 apart now */
  CHECK_STR_CONTAINS(r.out, "\"overflow\":2,\"total\":2");
  run_free(&r);
  expect_exit(2, "has 2 frames and the first (A) one", path_in_dir("pbc.csv"), "--with",
              path_in_dir("frames.xyz"), "--within", "1", NULL);
}

/* sdh's JSON of explicit edges for the test points: the counts, below and
 * overflow of the contract (E[k] <= d < E[k+1]) in the edges it publishes. */
static void check_edges_json(const char *what, const char *out) {
  cJSON *o = cJSON_Parse(out);
  CHECK(o != NULL, "%s: output is not JSON: %.200s", what, out);
  if (o == NULL)
    return;
  const cJSON *je = cJSON_GetObjectItem(o, "edges"), *counts = cJSON_GetObjectItem(o, "counts");
  const int k = cJSON_GetArraySize(je) - 1;
  CHECK(k >= 1 && k <= 64 && cJSON_GetArraySize(counts) == k, "%s: %d edges", what, k + 1);
  double e[65];
  uint64_t want[66] = {0}; /* [0, k) bins, k below, k + 1 overflow */
  for (int i = 0; i <= k && i < 65; i++)
    e[i] = cJSON_GetNumberValue(cJSON_GetArrayItem(je, i));
  for (int i = 0; i < N && k >= 1 && k <= 64; i++)
    for (int j = i + 1; j < N; j++) {
      double d = definition_distance(px[i], py[i], pz[i], px[j], py[j], pz[j]);
      int b = d < e[0] ? k : k + 1;
      for (int m = 0; m < k; m++)
        if (e[m] <= d && d < e[m + 1])
          b = m;
      want[b]++;
    }
  for (int b = 0; b < k && b < 64; b++)
    CHECK(u64_of(cJSON_GetArrayItem(counts, b)) == want[b],
          "%s: bin %d: %" PRIu64 ", want %" PRIu64, what, b, u64_of(cJSON_GetArrayItem(counts, b)),
          want[b]);
  CHECK_EQ_U64(u64_of(cJSON_GetObjectItem(o, "below")), want[k < 64 ? k : 0], "below");
  CHECK_EQ_U64(u64_of(cJSON_GetObjectItem(o, "overflow")), want[k < 64 ? k + 1 : 0], "overflow");
  cJSON_Delete(o);
}

/* Inputs at the limits of binary64 (issue #28): a sentence and exit 2 for a
 * bad job, 1 for a bad file, never a crash; edges of a huge range counted. */
static void test_limits(void) {
  const char *csv = path_in_dir("p.csv");
  expect_exit(2, "--periodic: the box's x length, 1e-300, is below 2^-250", csv, "--periodic",
              "1e-300", "--width", "1e-302", NULL);
  expect_exit(2, "--periodic: the box's x length, 1e+200, is beyond 2^250", csv, "--periodic",
              "1e200", "--width", "1", NULL);
  run_result r = run(csv, "--periodic", "1e200", "--width", "1", "-b", "10", "-k", "grid", NULL);
  CHECK(r.status == 2 && strstr(r.err, "beyond 2^250"), "grid, box 1e200: exit %d, %s", r.status,
        r.err);
  run_free(&r);
  const char *tiny = "1\nLattice=\"1e-300 0 0 0 1e-300 0 0 0 1e-300\"\nAr 0 0 0\n";
  write_file("tiny.xyz", tiny, strlen(tiny));
  expect_exit(1, "frame 1: the box's x length, 1e-300, is below 2^-250", path_in_dir("tiny.xyz"),
              "--width", "1e-302", NULL, NULL, NULL);
  const char *far = "1e300 0 0\n-1e300 0 0\n";
  write_file("far.csv", far, strlen(far));
  expect_exit(2, "within 2^40 times the periodic box's smallest width", path_in_dir("far.csv"),
              "--periodic", "10", "--width", "1", NULL);
  const char *heavy = "0 0 0 1e308\n1 0 0 1e308\n";
  write_file("heavy.csv", heavy, strlen(heavy));
  expect_exit(2, "the weighted sums could overflow binary64", path_in_dir("heavy.csv"), "--width",
              "1", "--weighted", NULL, NULL);
  const char *const edges[] = {"5e-324,100,1000,3000", "1e-200,100,1000,1e200"};
  for (int i = 0; i < 2; i++) {
    r = run(csv, "--edges", edges[i], "-f", "json", NULL);
    CHECK(r.status == 0, "--edges %s: exit %d, %s", edges[i], r.status, r.err);
    check_edges_json(edges[i], r.out);
    run_free(&r);
  }
  r = run(csv, "--log-bins", "1e-300,1e300,40", "-f", "json", NULL);
  CHECK(r.status == 0, "--log-bins 1e-300,1e300,40: exit %d, %s", r.status, r.err);
  check_edges_json("log bins 1e-300 to 1e300", r.out);
  run_free(&r);
}

/* The documented generator: splitmix64 from the seed, x, y, z per point,
 * each box * (next >> 11) * 2^-53. */
static uint64_t splitmix64(uint64_t *state) {
  uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return z ^ (z >> 31);
}

static void test_random(void) {
  run_result a = run("--random", "300", "--width", "500", "--seed", "42", "-f", "json", NULL);
  run_result b = run("--random", "300", "--width", "500", "--seed", "42", "-f", "json", NULL);
  run_result c = run("--random", "300", "--width", "500", "--seed", "43", "-f", "json", NULL);
  CHECK(a.status == 0 && b.status == 0 && c.status == 0, "random runs: %s", a.err);
  /* floor(23000*sqrt(3)/500)+1 = 80 */
  enum { RN = 300 };
  double x[RN], y[RN], z[RN];
  uint64_t st = 42;
  for (int i = 0; i < RN; i++) {
    x[i] = 23000.0 * ((double)(splitmix64(&st) >> 11) * 0x1p-53);
    y[i] = 23000.0 * ((double)(splitmix64(&st) >> 11) * 0x1p-53);
    z[i] = 23000.0 * ((double)(splitmix64(&st) >> 11) * 0x1p-53);
  }
  check_json("random seed 42", a.out, 500, 80, x, y, z, RN);
  cJSON *ja = cJSON_Parse(a.out), *jb = cJSON_Parse(b.out), *jc = cJSON_Parse(c.out);
  CHECK(cJSON_Compare(cJSON_GetObjectItem(ja, "counts"), cJSON_GetObjectItem(jb, "counts"), 1),
        "same seed, same counts");
  CHECK(!cJSON_Compare(cJSON_GetObjectItem(ja, "counts"), cJSON_GetObjectItem(jc, "counts"), 1),
        "another seed, other counts");
  cJSON_Delete(ja);
  cJSON_Delete(jb);
  cJSON_Delete(jc);
  run_free(&a);
  run_free(&b);
  run_free(&c);

  static const struct {
    const char *width, *box;
    uint32_t buckets;
  } cases[] = {{"10", NULL, 3984}, {"1000", NULL, 40}, {"500", NULL, 80}, {"10", "100", 18},
               {"7", "7", 2}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    run_result r = cases[i].box
                       ? run("--random", "20", "-w", cases[i].width, "--box", cases[i].box, "-f",
                             "json", NULL)
                       : run("--random", "20", "-w", cases[i].width, "-f", "json", NULL);
    cJSON *o = cJSON_Parse(r.out);
    double want = floor((cases[i].box ? atof(cases[i].box) : 23000.0) * sqrt(3.0) /
                        atof(cases[i].width)) + 1;
    CHECK(o && cJSON_GetNumberValue(cJSON_GetObjectItem(o, "buckets")) == cases[i].buckets &&
              want == cases[i].buckets,
          "random w=%s box=%s: buckets %g, want %u", cases[i].width,
          cases[i].box ? cases[i].box : "23000",
          o ? cJSON_GetNumberValue(cJSON_GetObjectItem(o, "buckets")) : -1, cases[i].buckets);
    cJSON_Delete(o);
    run_free(&r);
  }
  run_result r = run("--random", "50", "-w", "500", "-b", "5", "-f", "json", NULL);
  cJSON *o = cJSON_Parse(r.out);
  CHECK(o && cJSON_GetNumberValue(cJSON_GetObjectItem(o, "buckets")) == 5, "--buckets wins");
  cJSON_Delete(o);
  run_free(&r);
  /* text output of the seed experiment: 80 buckets in 16 rows */
  r = run("--random", "200", "-w", "500", NULL);
  CHECK(strstr(r.out, "\n75:") != NULL && strstr(r.out, "\n80:") == NULL, "16 rows: %s", r.out);
  CHECK_STR_CONTAINS(r.out, "\nT:19900\n");
  run_free(&r);
}

static void test_list_kernels(void) {
  run_result r = run("--list-kernels", NULL);
  CHECK(r.status == 0, "--list-kernels exit %d", r.status);
  int lines = 0;
  bool ref = false, cpu = false;
  char *save = NULL;
  for (char *l = strtok_r(r.out, "\n", &save); l; l = strtok_r(NULL, "\n", &save), lines++) {
    char name[64], engine[16];
    CHECK(sscanf(l, "%63s %15s", name, engine) == 2, "line '%s'", l);
    CHECK(strcmp(engine, "cpu") == 0 || strcmp(engine, "cuda") == 0 || strcmp(engine, "any") == 0,
          "engine in '%s'", l);
    ref |= strcmp(name, "cpu-reference") == 0 && strcmp(engine, "cpu") == 0;
    cpu |= strcmp(name, "cpu") == 0 && strcmp(engine, "cpu") == 0;
    CHECK(strlen(l) > strlen(name) + strlen(engine) + 6, "a summary in '%s'", l);
  }
  CHECK(ref && cpu, "cpu-reference and cpu are listed");
  CHECK(lines >= 3, "%d kernels", lines);
  run_free(&r);
}

static void expect_exit(int want, const char *needle, const char *a1, const char *a2,
                        const char *a3, const char *a4, const char *a5, const char *a6) {
  run_result r = run(a1, a2, a3, a4, a5, a6, NULL);
  CHECK(r.status == want, "sdh %s %s %s %s: exit %d, want %d (stderr: %s)", a1 ? a1 : "",
        a2 ? a2 : "", a3 ? a3 : "", a4 ? a4 : "", r.status, want, r.err);
  if (needle != NULL)
    CHECK(strstr(r.err, needle) != NULL, "stderr '%s' lacks '%s'", r.err, needle);
  if (want != 0)
    CHECK(r.out[0] == '\0', "nothing on stdout on error: %s", r.out);
  run_free(&r);
}

static void test_errors(void) {
  const char *csv = path_in_dir("p.csv");
  expect_exit(2, "no input", NULL, NULL, NULL, NULL, NULL, NULL);
  expect_exit(2, "--width W is required", csv, NULL, NULL, NULL, NULL, NULL);
  expect_exit(2, "--width: bucket_width must be > 0", csv, "-w", "0", NULL, NULL, NULL);
  expect_exit(2, "--width: bucket_width must be > 0", csv, "-w", "-3", NULL, NULL, NULL);
  expect_exit(2, "--width must be a number, got 'abc'", csv, "-w", "abc", NULL, NULL, NULL);
  expect_exit(2, "bucket_width must be a finite number", csv, "-w", "inf", NULL, NULL, NULL);
  expect_exit(2, "needs a value", csv, "-w", NULL, NULL, NULL, NULL);
  expect_exit(2, "unknown option '--frobnicate'", csv, "--frobnicate", NULL, NULL, NULL, NULL);
  expect_exit(2, "unknown option '-Q'", csv, "-Q", NULL, NULL, NULL, NULL);
  expect_exit(2, "--kernel: unknown kernel \"warp-drive\"", csv, "-w", "1", "--kernel", "warp-drive", NULL);
  expect_exit(2, "--format must be text, json, csv or npz", csv, "-w", "1", "--format", "xml", NULL);
  expect_exit(2, "--input-format must be", csv, "-w", "1", "--input-format", "mol2", NULL);
  expect_exit(2, "--precision: precision must be \"exact\" or \"fast\"", csv, "-w", "1", "--precision", "close", NULL);
  expect_exit(2, "block_size must be a multiple of 32", csv, "-w", "1", "--block-size", "100",
              NULL);
  expect_exit(2, "--buckets: buckets must be a whole number", csv, "-w", "1", "-b", "2.5", NULL);
  expect_exit(2, "--buckets: buckets must be at most", csv, "-w", "1", "-b", "99999999999", NULL);
  expect_exit(2, "--threads: threads must be from 0 to", csv, "-w", "1", "-t", "-1", NULL);
  expect_exit(2, "cannot tell the format", path_in_dir("p.data"), "-w", "1", NULL, NULL, NULL);
  expect_exit(2, "not both", csv, "--random", "10", "-w", "1", NULL);
  expect_exit(2, "--random must be", "--random", "0", "-w", "1", NULL, NULL);
  expect_exit(2, "--random must be", "--random", "ten", "-w", "1", NULL, NULL);
  expect_exit(2, "--box must be", "--random", "10", "-w", "1", "--box", "-5");
  expect_exit(2, "--seed must be", "--random", "10", "-w", "1", "--seed", "x");
  expect_exit(2, "go with --random", csv, "-w", "1", "--seed", "3", NULL);
  expect_exit(2, "too small", "--random", "10", "-w", "0.0001", NULL, NULL);
  expect_exit(2, "one input file at a time", csv, csv, "-w", "1", NULL, NULL);
  expect_exit(1, "cannot open", path_in_dir("missing.csv"), "-w", "1", NULL, NULL, NULL);
  expect_exit(1, "line 3: expected 3 numbers, found 2", path_in_dir("bad.csv"), "-w", "1", NULL,
              NULL, NULL);
  expect_exit(1, "line 2: 'nan' is not a finite number", path_in_dir("nan.csv"), "-w", "1", NULL,
              NULL, NULL);
  expect_exit(1, "not a multiple of 12", path_in_dir("cut.raw"), "-i", "f32", "-w", "1", NULL);
  expect_exit(1, "not a multiple of 24", path_in_dir("cut.raw"), "-i", "bin", "-w", "1", NULL);
  run_result r = run("--help", NULL);
  CHECK(r.status == 0 && strstr(r.out, "usage: sdh") && strstr(r.out, "--list-kernels"),
        "--help: exit %d", r.status);
  run_free(&r);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: test_sdh PATH-TO-SDH\n");
    return 2;
  }
  sdh = argv[1];
  if (mkdtemp(dir) == NULL) {
    perror("mkdtemp");
    return 1;
  }
  snprintf(out_path, sizeof out_path, "%s/stdout", dir);
  snprintf(err_path, sizeof err_path, "%s/stderr", dir);
  write_point_files();
  test_formats();
  test_text_layout();
  test_csv_output();
  test_random();
  test_list_kernels();
  test_errors();
  test_statistics();
  test_limits();
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", dir);
  return check_finish("test_sdh");
}
