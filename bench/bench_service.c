/*
 * bench_service.c -- end-to-end benchmarks of the histd daemon over HTTP.
 *
 *     build/bench/bench_service build/src/service/histd [requests] [clients] [points]
 *
 * Starts the daemon itself (127.0.0.1, a free port, a temporary data dir),
 * once per measurement that reads its memory high-water mark, and measures:
 *
 *   1. latency of POST /v1/histogram with `points` (1,000) random points in
 *      [0, 23000)^3, bucket width 500: `requests` (2,000) requests from
 *      `clients` (16) threads, each with its own keep-alive libcurl handle,
 *      after 100 warm-up requests; p50, p90, p99, max and requests/s, and
 *      the medians of the daemon's own timing_ms (queue wait in its
 *      histogram pool, parse, kernel) from the answers.
 *      Next to it, the ceiling no HTTP code can beat: the engine alone,
 *      computing the same histogram as the daemon's histogram pool does
 *      (a one-thread CPU worker per histogram), on every core for 2 s. A
 *      closed loop of C clients has mean latency C / throughput (Little's
 *      law), so C / that ceiling is the least mean latency any daemon on
 *      this engine and machine could show;
 *   2. upload throughput of a 1,000,000-point dataset as JSON, CSV and
 *      float64 binary: body bytes / wall time of the POST (median of 3, each
 *      upload different points so none is deduplicated), and the daemon's
 *      VmHWM (peak RSS) from /proc, in a fresh daemon per format, next to
 *      its VmHWM before the uploads.
 *
 * BENCH_ONLY=latency, upload or f64 (the float64 upload alone) picks a part;
 * BENCH_RUNS sets the uploads per format (default 3, the median is printed).
 *
 * It prints one line per number, machine-readable enough to paste into
 * bench/RESULTS.md.
 */
#include <curl/curl.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "histd/histd.h"
#include "../tests/plain.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- the daemon --------------------------------------------------------------------- */

typedef struct daemon_proc {
  pid_t pid;
  int port;
  char dir[256];
} daemon_proc;

static int daemon_start(daemon_proc *d, const char *exe) {
  snprintf(d->dir, sizeof d->dir, "/tmp/histd-bench-XXXXXX");
  if (mkdtemp(d->dir) == NULL)
    return -1;
  int fds[2];
  if (pipe(fds) != 0)
    return -1;
  d->pid = fork();
  if (d->pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    char data[300];
    snprintf(data, sizeof data, "%s/data", d->dir);
    execl(exe, exe, "--listen", "127.0.0.1:0", "--data-dir", data, "--max-upload-bytes", "2G",
          (char *)NULL);
    _exit(127);
  }
  close(fds[1]);
  char line[256];
  size_t len = 0;
  while (len + 1 < sizeof line) {
    ssize_t r = read(fds[0], line + len, 1);
    if (r <= 0)
      break;
    if (line[len++] == '\n')
      break;
  }
  line[len] = '\0';
  close(fds[0]);
  const char *colon = strrchr(line, ':');
  if (strstr(line, "listening on") == NULL || colon == NULL) {
    fprintf(stderr, "bench: the daemon did not start: %s\n", line);
    return -1;
  }
  d->port = atoi(colon + 1);
  return 0;
}

static long daemon_status_kb(const daemon_proc *d, const char *key) {
  char path[64], buf[256];
  snprintf(path, sizeof path, "/proc/%d/status", (int)d->pid);
  FILE *f = fopen(path, "r");
  long v = -1;
  size_t kl = strlen(key);
  while (f && fgets(buf, sizeof buf, f))
    if (strncmp(buf, key, kl) == 0 && buf[kl] == ':')
      v = strtol(buf + kl + 1, NULL, 10);
  if (f)
    fclose(f);
  return v;
}

static void daemon_stop(daemon_proc *d) {
  kill(d->pid, SIGTERM);
  int status;
  waitpid(d->pid, &status, 0);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", d->dir);
  if (system(cmd) != 0)
    fprintf(stderr, "bench: could not remove %s\n", d->dir);
}

/* ---- HTTP ------------------------------------------------------------------------------ */

typedef struct sink {
  char *p;
  size_t len;
} sink;

static size_t on_data(char *ptr, size_t size, size_t n, void *u) {
  sink *s = u;
  size_t add = size * n;
  char *p = realloc(s->p, s->len + add + 1);
  if (p == NULL)
    return 0;
  memcpy(p + s->len, ptr, add);
  s->len += add;
  p[s->len] = '\0';
  s->p = p;
  return add;
}

static long post(CURL *c, const char *url, const char *ctype, const char *body, size_t len,
                 sink *out) {
  struct curl_slist *h = NULL;
  char hdr[128];
  snprintf(hdr, sizeof hdr, "Content-Type: %s", ctype);
  h = curl_slist_append(h, hdr);
  h = curl_slist_append(h, "Expect:");
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
  long code = 0;
  CURLcode rc = curl_easy_perform(c);
  if (rc == CURLE_OK)
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
  else
    fprintf(stderr, "bench: %s\n", curl_easy_strerror(rc));
  curl_slist_free_all(h);
  return code;
}

/* ---- point sets ----------------------------------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double uniform(double hi) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (double)(rng_state >> 11) / 9007199254740992.0 * hi;
}

typedef struct body {
  char *p;
  size_t len, cap;
} body;

static void put(body *b, const char *fmt, ...) {
  va_list ap;
  for (;;) {
    va_start(ap, fmt);
    int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    if ((size_t)n < b->cap - b->len) {
      b->len += (size_t)n;
      return;
    }
    b->cap = b->cap * 2 + (size_t)n + 1;
    b->p = realloc(b->p, b->cap);
    if (b->p == NULL)
      abort();
  }
}

static body make_body(const char *fmt, size_t n, const char *extra) {
  body b = {malloc(1 << 20), 0, 1 << 20};
  if (strcmp(fmt, "f64") == 0) {
    b.len = n * 24;
    b.p = realloc(b.p, b.len);
    double *d = (double *)b.p;
    for (size_t i = 0; i < 3 * n; i++)
      d[i] = uniform(23000.0);
    return b;
  }
  if (strcmp(fmt, "csv") == 0) {
    put(&b, "x,y,z\n");
    for (size_t i = 0; i < n; i++)
      put(&b, "%.3f,%.3f,%.3f\n", uniform(23000), uniform(23000), uniform(23000));
    return b;
  }
  put(&b, "{%s\"points\":[", extra ? extra : "");
  for (size_t i = 0; i < n; i++)
    put(&b, "%s[%.3f,%.3f,%.3f]", i ? "," : "", uniform(23000), uniform(23000), uniform(23000));
  put(&b, "]}");
  return b;
}

/* ---- 1. latency ------------------------------------------------------------------------------ */

typedef struct lat_thread {
  pthread_t tid;
  int port;
  const body *req;
  int count;
  double *lat;             /* seconds, end to end */
  double *queue, *parse, *kernel; /* ms, the answer's timing_ms */
  int failures;
} lat_thread;

/* The number after "key": inside the answer's "timing_ms" object, or 0. */
static double timing_ms(const char *answer, const char *key) {
  const char *t = answer ? strstr(answer, "\"timing_ms\":{") : NULL;
  char pat[32];
  snprintf(pat, sizeof pat, "\"%s\":", key);
  const char *v = t ? strstr(t, pat) : NULL;
  return v ? atof(v + strlen(pat)) : 0;
}

static void *lat_main(void *arg) {
  lat_thread *t = arg;
  CURL *c = curl_easy_init();
  char url[128];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/v1/histogram", t->port);
  for (int i = 0; i < t->count; i++) {
    sink s = {NULL, 0};
    double t0 = now_s();
    long code = post(c, url, "application/json", t->req->p, t->req->len, &s);
    t->lat[i] = now_s() - t0;
    if (t->queue != NULL) {
      t->queue[i] = timing_ms(s.p, "queue");
      t->parse[i] = timing_ms(s.p, "parse");
      t->kernel[i] = timing_ms(s.p, "kernel");
    }
    if (code != 200) {
      t->failures++;
      if (t->failures == 1)
        fprintf(stderr, "bench: HTTP %ld: %.200s\n", code, s.p ? s.p : "");
    }
    free(s.p);
  }
  curl_easy_cleanup(c);
  return NULL;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double pct(const double *sorted, int n, double p) {
  int i = (int)(p / 100.0 * (n - 1) + 0.5);
  return sorted[i < 0 ? 0 : i >= n ? n - 1 : i];
}

typedef struct ceiling_thread {
  pthread_t tid;
  histd_dataset ds;
  double until;
  long done;
  int rc;
} ceiling_thread;

static void *ceiling_main(void *arg) {
  ceiling_thread *t = arg;
  plain_job spec;
  plain_init(&spec);
  spec.bucket_width = 500;
  spec.buckets = 80;
  spec.threads = 1;
  char msg[256];
  while (t->rc == 0 && now_s() < t->until) {
    histd_worker *w = NULL;
    histd_result res;
    t->rc = histd_worker_create(&w, -1, msg, sizeof msg);
    if (t->rc == 0)
      t->rc = plain_worker_run(w, &t->ds, &spec, NULL, &res, msg, sizeof msg);
    histd_worker_destroy(w);
    if (t->rc == 0) {
      histd_result_free(&res);
      t->done++;
    } else {
      fprintf(stderr, "bench: engine: %s\n", msg);
    }
  }
  return NULL;
}

/* Histograms of `points` random points per second, the engine alone on
 * every core; 0 on failure. */
static double engine_ceiling(size_t points, int *cores) {
  unsigned n = histd_cpu_count(); /* taskset-aware, like the daemon's pools */
  *cores = n > 256 ? 256 : (int)n;
  ceiling_thread *t = calloc((size_t)*cores, sizeof *t);
  double t0 = now_s(), rate = 0;
  char msg[256];
  int started = 0;
  for (int i = 0; i < *cores; i++) {
    if (histd_dataset_alloc(&t[i].ds, points, msg, sizeof msg) != 0)
      break;
    for (size_t k = 0; k < 3 * points; k++)
      t[i].ds.x[k] = uniform(23000.0); /* x, y, z are one block */
    histd_dataset_finish(&t[i].ds, msg, sizeof msg);
    t[i].until = t0 + 2.0;
    pthread_create(&t[i].tid, NULL, ceiling_main, &t[i]);
    started++;
  }
  long done = 0;
  int failed = started < *cores;
  for (int i = 0; i < started; i++) {
    pthread_join(t[i].tid, NULL);
    done += t[i].done;
    failed |= t[i].rc != 0;
    histd_dataset_free(&t[i].ds);
  }
  double wall = now_s() - t0;
  if (!failed)
    rate = done / wall;
  free(t);
  return rate;
}

static int bench_latency(const char *exe, int requests, int clients, size_t points) {
  daemon_proc d;
  if (daemon_start(&d, exe) != 0)
    return 1;
  body req = make_body("json", points, "\"bucket_width\":500,\"buckets\":80,");
  /* warm-up */
  lat_thread warm = {.port = d.port, .req = &req, .count = 100};
  warm.lat = calloc(100, sizeof(double));
  lat_main(&warm);
  free(warm.lat);

  lat_thread *t = calloc((size_t)clients, sizeof *t);
  double *all = calloc(4 * (size_t)requests, sizeof(double));
  double *queue = all + requests, *parse = queue + requests, *kernel = parse + requests;
  int per = requests / clients, given = 0;
  double t0 = now_s();
  for (int i = 0; i < clients; i++) {
    t[i].port = d.port;
    t[i].req = &req;
    t[i].count = per + (i < requests % clients);
    t[i].lat = all + given;
    t[i].queue = queue + given;
    t[i].parse = parse + given;
    t[i].kernel = kernel + given;
    given += t[i].count;
    pthread_create(&t[i].tid, NULL, lat_main, &t[i]);
  }
  int failures = 0;
  for (int i = 0; i < clients; i++) {
    pthread_join(t[i].tid, NULL);
    failures += t[i].failures;
  }
  double wall = now_s() - t0;
  qsort(all, (size_t)requests, sizeof(double), cmp_double);
  qsort(queue, (size_t)requests, sizeof(double), cmp_double);
  qsort(parse, (size_t)requests, sizeof(double), cmp_double);
  qsort(kernel, (size_t)requests, sizeof(double), cmp_double);
  printf("histogram latency: %zu points, %d requests, %d clients, body %zu bytes\n", points,
         requests, clients, req.len);
  printf("  p50 %.3f ms  p90 %.3f ms  p99 %.3f ms  max %.3f ms  (%.0f requests/s, %d failed)\n",
         pct(all, requests, 50) * 1e3, pct(all, requests, 90) * 1e3,
         pct(all, requests, 99) * 1e3, all[requests - 1] * 1e3, requests / wall, failures);
  printf("  the daemon's timing_ms, medians: queue %.3f ms, parse %.3f ms, kernel %.3f ms\n",
         pct(queue, requests, 50), pct(parse, requests, 50), pct(kernel, requests, 50));
  printf("  daemon VmHWM %ld kB\n", daemon_status_kb(&d, "VmHWM"));
  fflush(stdout);
  free(all);
  free(t);
  free(req.p);
  daemon_stop(&d);

  int cores;
  double ceiling = engine_ceiling(points, &cores);
  if (ceiling <= 0)
    return 1;
  printf("  engine alone, %d cores: %.0f histograms/s; so with %d clients no daemon on this\n"
         "  engine and machine can average under %.3f ms (the daemon above: %.0f%% of that rate)\n",
         cores, ceiling, clients, clients / ceiling * 1e3, requests / wall / ceiling * 100);
  fflush(stdout);
  return failures != 0;
}

/* ---- 2. uploads ------------------------------------------------------------------------------- */

static int bench_upload(const char *exe, const char *fmt, const char *ctype, size_t n) {
  daemon_proc d;
  if (daemon_start(&d, exe) != 0)
    return 1;
  long hwm0 = daemon_status_kb(&d, "VmHWM");
  char url[128];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/v1/datasets", d.port);
  CURL *c = curl_easy_init();
  const char *runs_env = getenv("BENCH_RUNS"); /* uploads per format, default 3 */
  int runs = runs_env ? atoi(runs_env) : 3;
  if (runs < 1 || runs > 99)
    runs = 3;
  double best[99];
  size_t bytes = 0;
  int failures = 0;
  for (int run = 0; run < runs; run++) {
    body b = make_body(fmt, n, NULL);
    bytes = b.len;
    sink s = {NULL, 0};
    double t0 = now_s();
    long code = post(c, url, ctype, b.p, b.len, &s);
    best[run] = now_s() - t0;
    if (code != 201) {
      failures++;
      fprintf(stderr, "bench: upload %s: HTTP %ld %.200s\n", fmt, code, s.p ? s.p : "");
    }
    free(s.p);
    free(b.p);
  }
  curl_easy_cleanup(c);
  qsort(best, (size_t)runs, sizeof(double), cmp_double);
  long hwm = daemon_status_kb(&d, "VmHWM");
  double payload_mb = (double)n * 24 / 1e6;
  double median = runs % 2 ? best[runs / 2] : (best[runs / 2 - 1] + best[runs / 2]) / 2;
  printf("upload %-4s %zu points, body %.1f MB: median of %d %.1f ms = %.0f MB/s (best %.0f MB/s); "
         "daemon VmHWM %.1f MB (%.1f MB at start; %.2fx the %.0f MB float64 payload)%s\n",
         fmt, n, bytes / 1e6, runs, median * 1e3, bytes / 1e6 / median, bytes / 1e6 / best[0],
         hwm / 1024.0, hwm0 / 1024.0, hwm * 1024.0 / 1e6 / payload_mb, payload_mb,
         failures ? " FAILED" : "");
  fflush(stdout);
  daemon_stop(&d);
  return failures != 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: bench_service HISTD_EXE [requests] [clients] [points]\n");
    return 2;
  }
  const char *exe = argv[1];
  int requests = argc > 2 ? atoi(argv[2]) : 2000;
  int clients = argc > 3 ? atoi(argv[3]) : 16;
  size_t points = argc > 4 ? (size_t)atol(argv[4]) : 1000;
  const char *only = getenv("BENCH_ONLY"); /* "latency", "upload" or "f64" */
  curl_global_init(CURL_GLOBAL_ALL);
  signal(SIGPIPE, SIG_IGN);
  int rc = 0;
  if (only == NULL || strcmp(only, "latency") == 0)
    rc |= bench_latency(exe, requests, clients, points);
  bool uploads = only == NULL || strcmp(only, "upload") == 0;
  if (uploads) {
    rc |= bench_upload(exe, "json", "application/json", 1000000);
    rc |= bench_upload(exe, "csv", "text/csv", 1000000);
  }
  if (uploads || strcmp(only, "f64") == 0)
    rc |= bench_upload(exe, "f64", "application/x-float64", 1000000);
  curl_global_cleanup();
  return rc;
}
