/*
 * metrics.h -- the daemon's counters (metrics.c, atomics any thread
 * bumps) and their Prometheus text.
 */
#ifndef HISTD_METRICS_H
#define HISTD_METRICS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

#define METRICS_DURATION_BUCKETS 12
typedef struct metrics {
  atomic_uint_fast64_t jobs_finished[JOB_STATUS_COUNT];
  atomic_uint_fast64_t jobs_submitted;
  atomic_uint_fast64_t pairs_computed;
  atomic_uint_fast64_t upload_bytes;
  atomic_uint_fast64_t uploads;
  atomic_uint_fast64_t http_requests;
  atomic_uint_fast64_t http_errors;
  atomic_uint_fast64_t sync_histograms;
  atomic_uint_fast64_t http_slow_headers; /* closed: no request head in time */
  atomic_uint_fast64_t http_slow_bodies;  /* closed: a body below the minimum rate */
  /* the job-duration histogram, in microseconds so it sums in integers */
  atomic_uint_fast64_t duration_buckets[METRICS_DURATION_BUCKETS + 1];
  atomic_uint_fast64_t duration_sum_us;
  atomic_uint_fast64_t duration_count;
} metrics;

struct service;
void metrics_observe_job(metrics *m, job_status final, double seconds, uint64_t pairs);
/* Appends the Prometheus text exposition to a malloc'd string. */
char *metrics_render(struct service *svc, size_t *len);

#endif
