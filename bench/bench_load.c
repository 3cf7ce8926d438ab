/*
 * bench_load.c -- many clients against one daemon for a fixed time: what
 * the service does under load (issue 15's "50 clients for 60 s").
 *
 *     build/bench/bench_load build/src/service/histd [clients] [seconds] [histd flags...]
 *
 * Starts the daemon (127.0.0.1, a free port, a temporary data dir), uploads
 * one 2,000-point dataset (a job on it is ~10 ms of CPU), then runs
 * `clients` (50) threads for `seconds` (60), each with its own keep-alive
 * libcurl handle, each looping over one round of:
 *
 *   job       POST /v1/jobs (cpu, 80 buckets) and GET ?wait=30 until it ends:
 *             the job's end-to-end time as its client sees it
 *   submit    the POST alone (202: the job is durable)
 *   get       GET /v1/jobs/{id} of a queued or running job
 *   result    GET /v1/jobs/{id}/result of the finished job
 *   list      GET /v1/jobs?limit=20
 *   upload    POST /v1/datasets, 100 new points as JSON (a durable write)
 *   histogram POST /v1/histogram, 200 points
 *   metrics   GET /metrics
 *
 * and prints, per operation, the count, failures (transport errors and
 * status codes other than the expected one), p50, p99 and max in ms; and
 * the daemon's RSS and open fds at the start, their peak (sampled every
 * 100 ms) and at the end. Loopback only; bounded by `seconds` plus at most
 * one round's requests per client (each bounded by a 60 s curl timeout).
 */
#include <curl/curl.h>
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- the daemon ------------------------------------------------------------------------ */

static pid_t daemon_pid;
static int daemon_port;
static char daemon_dir[256];

static int daemon_start(const char *exe, char **extra, int nextra) {
  snprintf(daemon_dir, sizeof daemon_dir, "/tmp/histd-load-XXXXXX");
  if (mkdtemp(daemon_dir) == NULL)
    return -1;
  int fds[2];
  if (pipe(fds) != 0)
    return -1;
  daemon_pid = fork();
  if (daemon_pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    char data[300];
    snprintf(data, sizeof data, "%s/data", daemon_dir);
    char *argv[64] = {(char *)exe, "--listen", "127.0.0.1:0", "--data-dir", data};
    int n = 5;
    for (int i = 0; i < nextra && n < 63; i++)
      argv[n++] = extra[i];
    argv[n] = NULL;
    execv(exe, argv);
    _exit(127);
  }
  close(fds[1]);
  char line[256];
  size_t len = 0;
  while (len + 1 < sizeof line && read(fds[0], line + len, 1) == 1)
    if (line[len++] == '\n')
      break;
  line[len] = '\0';
  close(fds[0]);
  const char *colon = strrchr(line, ':');
  if (strstr(line, "listening on") == NULL || colon == NULL)
    return -1;
  daemon_port = atoi(colon + 1);
  return 0;
}

static long rss_kb(void) {
  char path[64], buf[256];
  snprintf(path, sizeof path, "/proc/%d/status", (int)daemon_pid);
  FILE *f = fopen(path, "r");
  long v = -1;
  while (f && fgets(buf, sizeof buf, f))
    if (strncmp(buf, "VmRSS:", 6) == 0)
      v = strtol(buf + 6, NULL, 10);
  if (f)
    fclose(f);
  return v;
}

static long open_fds(void) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/fd", (int)daemon_pid);
  DIR *d = opendir(path);
  long n = 0;
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL)
    n += e->d_name[0] != '.';
  if (d)
    closedir(d);
  return n;
}

/* ---- operations and their latencies ------------------------------------------------------- */

enum { OP_JOB, OP_SUBMIT, OP_GET, OP_RESULT, OP_LIST, OP_UPLOAD, OP_HISTOGRAM, OP_METRICS, NOPS };
static const char *const op_names[NOPS] = {"job (submit to end)", "submit", "get (live job)",
                                           "result", "list", "upload", "histogram", "metrics"};

typedef struct samples {
  double *v;
  size_t n, cap;
  uint64_t failed;
} samples;

typedef struct client {
  pthread_t tid;
  int index;
  samples ops[NOPS];
} client;

static double deadline;
static char dataset_id[80];

static void add(samples *s, double ms) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 1024;
    double *v = realloc(s->v, cap * sizeof *v);
    if (v == NULL)
      return;
    s->v = v;
    s->cap = cap;
  }
  s->v[s->n++] = ms;
}

typedef struct sink {
  char *p;
  size_t len;
} sink;

static size_t on_data(char *ptr, size_t size, size_t n, void *u) {
  sink *s = u;
  size_t add_len = size * n;
  char *p = realloc(s->p, s->len + add_len + 1);
  if (p == NULL)
    return 0;
  memcpy(p + s->len, ptr, add_len);
  s->len += add_len;
  p[s->len] = '\0';
  s->p = p;
  return add_len;
}

/* One request; its status (0 on a transport error), its body in out. */
static long request(CURL *c, const char *method, const char *path, const char *body,
                    sink *out, double *ms) {
  char url[512];
  snprintf(url, sizeof url, "http://127.0.0.1:%d%s", daemon_port, path);
  struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
  h = curl_slist_append(h, "Expect:");
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
  if (body != NULL) {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
  } else {
    curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
  }
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
  out->len = 0;
  double t0 = now_s();
  long code = 0;
  if (curl_easy_perform(c) == CURLE_OK)
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
  *ms = (now_s() - t0) * 1000.0;
  curl_slist_free_all(h);
  return code;
}

static void timed(client *cl, int op, CURL *c, const char *method, const char *path,
                  const char *body, long want, sink *out) {
  double ms;
  long code = request(c, method, path, body, out, &ms);
  if (code == want)
    add(&cl->ops[op], ms);
  else
    cl->ops[op].failed++;
}

static bool json_string(const char *doc, const char *key, char *out, size_t len) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\":\"", key);
  const char *p = doc ? strstr(doc, pat) : NULL;
  if (p == NULL)
    return false;
  p += strlen(pat);
  size_t i = 0;
  while (p[i] && p[i] != '"' && i + 1 < len) {
    out[i] = p[i];
    i++;
  }
  out[i] = '\0';
  return true;
}

static uint64_t rng_next(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static char *points_json(size_t n, uint64_t *seed, const char *extra) {
  size_t cap = n * 80 + 256;
  char *b = malloc(cap);
  size_t len = (size_t)snprintf(b, cap, "{\"points\":[");
  for (size_t i = 0; i < n; i++) {
    double v[3];
    for (int a = 0; a < 3; a++)
      v[a] = (double)(rng_next(seed) >> 11) / 9007199254740992.0 * 23000.0;
    len += (size_t)snprintf(b + len, cap - len, "%s[%.17g,%.17g,%.17g]", i ? "," : "", v[0],
                            v[1], v[2]);
  }
  snprintf(b + len, cap - len, "]%s}", extra);
  return b;
}

static void *client_main(void *arg) {
  client *cl = arg;
  CURL *c = curl_easy_init();
  sink out = {NULL, 0};
  uint64_t seed = 0x9e3779b97f4a7c15ull + (uint64_t)cl->index * 7919;
  char job_body[256], path[256], id[64];
  snprintf(job_body, sizeof job_body,
           "{\"dataset\":\"%s\",\"bucket_width\":500,\"buckets\":80,\"kernel\":\"cpu\"}",
           dataset_id);
  char *hist = points_json(200, &seed, ",\"bucket_width\":500");
  while (now_s() < deadline) {
    /* a job, end to end; its submit and a GET while it is live */
    double t0 = now_s(), ms;
    long code = request(c, "POST", "/v1/jobs", job_body, &out, &ms);
    if (code != 202 || !json_string(out.p, "id", id, sizeof id)) {
      cl->ops[OP_SUBMIT].failed++;
      cl->ops[OP_JOB].failed++;
    } else {
      add(&cl->ops[OP_SUBMIT], ms);
      snprintf(path, sizeof path, "/v1/jobs/%s", id);
      timed(cl, OP_GET, c, "GET", path, NULL, 200, &out);
      snprintf(path, sizeof path, "/v1/jobs/%s?wait=30", id);
      char status[32] = "";
      for (int i = 0; i < 10; i++) {
        if (request(c, "GET", path, NULL, &out, &ms) != 200 ||
            !json_string(out.p, "status", status, sizeof status))
          break;
        if (strcmp(status, "queued") != 0 && strcmp(status, "running") != 0)
          break;
      }
      if (strcmp(status, "succeeded") == 0) {
        add(&cl->ops[OP_JOB], (now_s() - t0) * 1000.0);
        snprintf(path, sizeof path, "/v1/jobs/%s/result", id);
        timed(cl, OP_RESULT, c, "GET", path, NULL, 200, &out);
      } else {
        cl->ops[OP_JOB].failed++;
      }
    }
    timed(cl, OP_LIST, c, "GET", "/v1/jobs?limit=20", NULL, 200, &out);
    char *up = points_json(100, &seed, "");
    timed(cl, OP_UPLOAD, c, "POST", "/v1/datasets", up, 201, &out);
    free(up);
    timed(cl, OP_HISTOGRAM, c, "POST", "/v1/histogram", hist, 200, &out);
    timed(cl, OP_METRICS, c, "GET", "/metrics", NULL, 200, &out);
  }
  free(hist);
  free(out.p);
  curl_easy_cleanup(c);
  return NULL;
}

/* ---- the sampler ----------------------------------------------------------------------------- */

static atomic_bool sampling;
static long rss_peak, fds_peak;

static void *sampler_main(void *arg) {
  (void)arg;
  while (atomic_load(&sampling)) {
    long r = rss_kb(), f = open_fds();
    rss_peak = r > rss_peak ? r : rss_peak;
    fds_peak = f > fds_peak ? f : fds_peak;
    usleep(100 * 1000);
  }
  return NULL;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: bench_load HISTD_EXE [clients] [seconds] [histd flags...]\n");
    return 2;
  }
  int nclients = argc > 2 ? atoi(argv[2]) : 50;
  double seconds = argc > 3 ? atof(argv[3]) : 60;
  if (nclients < 1 || nclients > 1000 || !(seconds > 0 && seconds <= 3600)) {
    fprintf(stderr, "bench_load: 1 to 1000 clients, 0 to 3600 s\n");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  curl_global_init(CURL_GLOBAL_DEFAULT);
  if (daemon_start(argv[1], argv + 4, argc > 4 ? argc - 4 : 0) != 0) {
    fprintf(stderr, "bench_load: the daemon did not start\n");
    return 1;
  }
  CURL *c = curl_easy_init();
  sink out = {NULL, 0};
  uint64_t seed = 42;
  char *pts = points_json(2000, &seed, "");
  double ms;
  long code = request(c, "POST", "/v1/datasets", pts, &out, &ms);
  free(pts);
  if (code != 201 || !json_string(out.p, "id", dataset_id, sizeof dataset_id)) {
    fprintf(stderr, "bench_load: upload failed (%ld)\n", code);
    kill(daemon_pid, SIGKILL);
    return 1;
  }
  curl_easy_cleanup(c);
  free(out.p);

  long rss_start = rss_kb(), fds_start = open_fds();
  rss_peak = rss_start;
  fds_peak = fds_start;
  atomic_store(&sampling, true);
  pthread_t sampler;
  pthread_create(&sampler, NULL, sampler_main, NULL);
  client *cl = calloc((size_t)nclients, sizeof *cl);
  double t0 = now_s();
  deadline = t0 + seconds;
  for (int i = 0; i < nclients; i++) {
    cl[i].index = i;
    pthread_create(&cl[i].tid, NULL, client_main, &cl[i]);
  }
  for (int i = 0; i < nclients; i++)
    pthread_join(cl[i].tid, NULL);
  double wall = now_s() - t0;
  atomic_store(&sampling, false);
  pthread_join(sampler, NULL);
  long rss_end = rss_kb(), fds_end = open_fds();

  char host[128] = "?";
  gethostname(host, sizeof host);
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) < 0)
    load[0] = -1;
  printf("bench_load: %d clients, %.0f s (ran %.1f s), host %s, %ld cpus, load %.2f\n",
         nclients, seconds, wall, host, sysconf(_SC_NPROCESSORS_ONLN), load[0]);
  printf("%-22s %8s %8s %10s %10s %10s\n", "operation", "count", "failed", "p50 ms", "p99 ms",
         "max ms");
  uint64_t total = 0, failed = 0;
  for (int op = 0; op < NOPS; op++) {
    samples all = {NULL, 0, 0, 0};
    for (int i = 0; i < nclients; i++) {
      all.failed += cl[i].ops[op].failed;
      for (size_t k = 0; k < cl[i].ops[op].n; k++)
        add(&all, cl[i].ops[op].v[k]);
    }
    qsort(all.v, all.n, sizeof *all.v, cmp_double);
    double p50 = all.n ? all.v[all.n / 2] : 0, p99 = all.n ? all.v[all.n * 99 / 100] : 0;
    double mx = all.n ? all.v[all.n - 1] : 0;
    printf("%-22s %8zu %8llu %10.1f %10.1f %10.1f\n", op_names[op], all.n,
           (unsigned long long)all.failed, p50, p99, mx);
    if (op != OP_JOB) /* a job's requests are counted as submit, get and result */
      total += all.n + all.failed, failed += all.failed;
    free(all.v);
  }
  printf("requests %llu (+ long-polls), failed %llu\n", (unsigned long long)total,
         (unsigned long long)failed);
  printf("daemon RSS MB start %.1f peak %.1f end %.1f; fds start %ld peak %ld end %ld\n",
         rss_start / 1024.0, rss_peak / 1024.0, rss_end / 1024.0, fds_start, fds_peak, fds_end);
  kill(daemon_pid, SIGTERM);
  int status;
  waitpid(daemon_pid, &status, 0);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", daemon_dir);
  if (system(cmd) != 0)
    fprintf(stderr, "bench_load: could not remove %s\n", daemon_dir);
  for (int i = 0; i < nclients; i++)
    for (int op = 0; op < NOPS; op++)
      free(cl[i].ops[op].v);
  free(cl);
  curl_global_cleanup();
  return 0;
}
