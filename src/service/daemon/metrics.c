/*
 * metrics.c -- counters, and /metrics in the Prometheus text format 0.0.4.
 *
 * Counters are atomics bumped where things happen (a job ends, an upload is
 * stored); gauges are read when scraped: queue depth and running jobs from
 * the queue, jobs by status from the store (so they survive restarts), and
 * device memory from histd_devices(). The job-duration histogram keeps its
 * sum in integer microseconds so concurrent observations add without a lock.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobs.h"
#include "metrics.h"
#include "service.h"
#include "store.h"
#include "sync_pool.h"
#include "util.h"

/* Upper bounds (seconds) of the job-duration buckets; +Inf is implicit. */
static const double duration_le[METRICS_DURATION_BUCKETS] = {
    0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 60, 300, 1800};

void metrics_observe_job(metrics *m, job_status final, double seconds, uint64_t pairs) {
  if ((unsigned)final < JOB_STATUS_COUNT)
    atomic_fetch_add(&m->jobs_finished[final], 1);
  if (seconds < 0)
    seconds = 0;
  int b = 0;
  while (b < METRICS_DURATION_BUCKETS && seconds > duration_le[b])
    b++;
  atomic_fetch_add(&m->duration_buckets[b], 1);
  atomic_fetch_add(&m->duration_sum_us, (uint64_t)(seconds * 1e6));
  atomic_fetch_add(&m->duration_count, 1);
  atomic_fetch_add(&m->pairs_computed, pairs);
}

typedef struct buf {
  char *p;
  size_t len, cap;
  bool oom;
} buf;

static void put(buf *b, const char *fmt, ...) {
  if (b->oom)
    return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    if (n < 0) {
      b->oom = true;
      return;
    }
    if ((size_t)n < b->cap - b->len) {
      b->len += (size_t)n;
      return;
    }
    size_t cap = b->cap * 2 + (size_t)n;
    char *p = realloc(b->p, cap);
    if (p == NULL) {
      b->oom = true;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
}

static void header(buf *b, const char *name, const char *type, const char *help) {
  put(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A counter without labels: its header and its one sample. */
static void counter(buf *b, const char *name, const char *help, atomic_uint_fast64_t *v) {
  header(b, name, "counter", help);
  put(b, "%s %llu\n", name, (unsigned long long)atomic_load(v));
}

char *metrics_render(service *svc, size_t *len) {
  metrics *m = &svc->metrics;
  buf b = {malloc(8192), 0, 8192, false};
  if (b.p == NULL)
    return NULL;

  uint64_t by_status[JOB_STATUS_COUNT];
  store_count_jobs(svc->store, by_status);
  header(&b, "histd_jobs", "gauge", "Jobs in the store, by status.");
  for (int s = 0; s < JOB_STATUS_COUNT; s++)
    put(&b, "histd_jobs{status=\"%s\"} %llu\n", job_status_name((job_status)s),
        (unsigned long long)by_status[s]);

  header(&b, "histd_jobs_finished_total", "counter",
         "Jobs that ended since the daemon started, by final status.");
  for (int s = JOB_SUCCEEDED; s < JOB_STATUS_COUNT; s++)
    put(&b, "histd_jobs_finished_total{status=\"%s\"} %llu\n", job_status_name((job_status)s),
        (unsigned long long)atomic_load(&m->jobs_finished[s]));

  counter(&b, "histd_jobs_submitted_total", "Jobs accepted since the daemon started.",
          &m->jobs_submitted);

  header(&b, "histd_queue_depth", "gauge", "Jobs waiting for a worker.");
  put(&b, "histd_queue_depth %zu\n", jobs_queue_depth(svc->jobs));
  header(&b, "histd_sync_queue_depth", "gauge",
         "POST /v1/histogram requests waiting for a compute thread.");
  put(&b, "histd_sync_queue_depth %zu\n", sync_pool_depth(svc->sync));
  header(&b, "histd_jobs_running", "gauge", "Jobs running on a worker now.");
  put(&b, "histd_jobs_running %zu\n", jobs_running(svc->jobs));
  header(&b, "histd_workers", "gauge", "Job workers (GPU and CPU).");
  put(&b, "histd_workers %d\n", jobs_worker_count(svc->jobs));

  header(&b, "histd_job_duration_seconds", "histogram",
         "Wall time of finished jobs, from start to end of the run.");
  uint64_t cum = 0;
  for (int i = 0; i < METRICS_DURATION_BUCKETS; i++) {
    cum += atomic_load(&m->duration_buckets[i]);
    put(&b, "histd_job_duration_seconds_bucket{le=\"%g\"} %llu\n", duration_le[i],
        (unsigned long long)cum);
  }
  cum += atomic_load(&m->duration_buckets[METRICS_DURATION_BUCKETS]);
  put(&b, "histd_job_duration_seconds_bucket{le=\"+Inf\"} %llu\n", (unsigned long long)cum);
  put(&b, "histd_job_duration_seconds_sum %.6f\n",
      (double)atomic_load(&m->duration_sum_us) / 1e6);
  put(&b, "histd_job_duration_seconds_count %llu\n",
      (unsigned long long)atomic_load(&m->duration_count));

  counter(&b, "histd_pairs_computed_total",
          "Point pairs histogrammed by finished jobs and POST /v1/histogram.",
          &m->pairs_computed);

  counter(&b, "histd_upload_bytes_total", "Request body bytes of dataset uploads.",
          &m->upload_bytes);
  counter(&b, "histd_uploads_total", "Datasets uploaded (new or already stored).", &m->uploads);
  counter(&b, "histd_sync_histograms_total", "POST /v1/histogram requests answered.",
          &m->sync_histograms);
  counter(&b, "histd_http_requests_total", "HTTP requests answered.", &m->http_requests);
  counter(&b, "histd_http_errors_total", "HTTP requests answered with 4xx or 5xx.",
          &m->http_errors);
  header(&b, "histd_http_slow_clients_total", "counter",
         "Connections closed for a request head not in within --header-timeout (header) "
         "or a body slower than --min-body-rate or past --body-timeout (body), or closed "
         "to make room at a connection limit while waiting for one or the other.");
  put(&b, "histd_http_slow_clients_total{reason=\"header\"} %llu\n",
      (unsigned long long)atomic_load(&m->http_slow_headers));
  put(&b, "histd_http_slow_clients_total{reason=\"body\"} %llu\n",
      (unsigned long long)atomic_load(&m->http_slow_bodies));

  header(&b, "histd_buffered_bytes", "gauge",
         "Bytes held now for request bodies as they arrive and large answers not yet sent "
         "(the budget is --max-buffered-bytes).");
  put(&b, "histd_buffered_bytes %llu\n", (unsigned long long)atomic_load(&svc->buffered.used));

  histd_device_info dev[16];
  int count = 0;
  histd_devices(dev, 16, &count, NULL, 0);
  header(&b, "histd_device_memory_used_bytes", "gauge",
         "GPU memory in use (total - free), per device.");
  for (int i = 0; i < count && i < 16; i++)
    put(&b, "histd_device_memory_used_bytes{device=\"%d\"} %zu\n", dev[i].index,
        dev[i].memory_total - dev[i].memory_free);
  header(&b, "histd_device_memory_total_bytes", "gauge", "GPU memory, per device.");
  for (int i = 0; i < count && i < 16; i++)
    put(&b, "histd_device_memory_total_bytes{device=\"%d\"} %zu\n", dev[i].index,
        dev[i].memory_total);

  header(&b, "histd_uptime_seconds", "gauge", "Seconds since the daemon started.");
  put(&b, "histd_uptime_seconds %.3f\n", wall_now() - svc->started_at);

  if (b.oom) {
    free(b.p);
    return NULL;
  }
  *len = b.len;
  return b.p;
}
