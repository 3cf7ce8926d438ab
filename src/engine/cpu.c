/*
 * cpu.c -- the kernel "cpu": the contract on every core.
 *
 * Threads take blocks of rows from a shared counter, count into private
 * histograms, and the histograms are summed at the end. This first version
 * computes each pair with the reference arithmetic; see the notes in
 * bench/RESULTS.md for the tuned version's design.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "engine.h"

#define ROWS_PER_TASK 64

typedef struct cpu_job {
  const histd_dataset *ds;
  const histd_spec *spec;
  const histd_control *ctl;
  uint32_t buckets;
  atomic_size_t next_row;
  atomic_uint_fast64_t done;
  atomic_bool stop;
  uint64_t total;
} cpu_job;

typedef struct cpu_thread {
  pthread_t tid;
  cpu_job *job;
  uint64_t *counts; /* buckets + 1: the last is overflow */
  int rc;
} cpu_thread;

static void *cpu_thread_main(void *arg) {
  cpu_thread *t = arg;
  cpu_job *job = t->job;
  const histd_dataset *ds = job->ds;
  const double w = job->spec->bucket_width;
  const size_t n = ds->n;
  for (;;) {
    size_t r0 = atomic_fetch_add(&job->next_row, ROWS_PER_TASK);
    if (r0 + 1 >= n || atomic_load(&job->stop))
      break;
    size_t r1 = r0 + ROWS_PER_TASK < n ? r0 + ROWS_PER_TASK : n;
    uint64_t pairs = 0;
    for (size_t i = r0; i < r1; i++) {
      for (size_t j = i + 1; j < n; j++) {
        uint64_t b = histd_pair_bucket(ds->x[i], ds->y[i], ds->z[i], ds->x[j],
                                       ds->y[j], ds->z[j], w);
        t->counts[b < job->buckets ? b : job->buckets]++;
      }
      pairs += n - 1 - i;
    }
    uint64_t done = atomic_fetch_add(&job->done, pairs) + pairs;
    if (histd__cancelled(job->ctl)) {
      atomic_store(&job->stop, true);
      t->rc = HISTD_ECANCELED;
      break;
    }
    histd__progress(job->ctl, (double)done / (double)job->total);
  }
  return NULL;
}

int histd__cpu_run(histd_worker *w, const histd_dataset *ds,
                   const histd_spec *spec, const histd_control *ctl,
                   histd_result *res, char *msg, size_t msglen) {
  (void)w;
  unsigned nthreads = spec->threads ? spec->threads : histd__cpu_count();
  cpu_job job = {.ds = ds, .spec = spec, .ctl = ctl, .buckets = res->buckets,
                 .total = res->total ? res->total : 1};
  atomic_init(&job.next_row, 0);
  atomic_init(&job.done, 0);
  atomic_init(&job.stop, false);
  cpu_thread *t = calloc(nthreads, sizeof *t);
  if (t == NULL)
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for threads");
  double t0 = histd_now_ms();
  int rc = 0;
  unsigned started = 0;
  for (; started < nthreads; started++) {
    t[started].job = &job;
    t[started].counts = calloc((size_t)res->buckets + 1, sizeof(uint64_t));
    if (t[started].counts == NULL) {
      rc = histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for histograms");
      break;
    }
    if (pthread_create(&t[started].tid, NULL, cpu_thread_main, &t[started]) != 0) {
      free(t[started].counts);
      rc = histd_fail(msg, msglen, HISTD_ENOMEM, "could not start a thread");
      break;
    }
  }
  if (rc != 0)
    atomic_store(&job.stop, true);
  for (unsigned i = 0; i < started; i++) {
    pthread_join(t[i].tid, NULL);
    for (uint32_t b = 0; b < res->buckets; b++)
      res->counts[b] += t[i].counts[b];
    res->overflow += t[i].counts[res->buckets];
    if (t[i].rc != 0 && rc == 0)
      rc = histd_fail(msg, msglen, t[i].rc, "cancelled");
    free(t[i].counts);
  }
  free(t);
  if (rc != 0)
    return rc;
  res->exact = true;
  res->threads = nthreads;
  res->timing.kernel_ms = histd_now_ms() - t0;
  snprintf(res->device, sizeof res->device, "cpu: %u threads", nthreads);
  return 0;
}
