/*
 * jobs.c -- the job front: the daemon's one way to its backend's jobs,
 * and the long-poll waiters.
 *
 * The routes see jobs through this file only. Where the jobs are queued
 * and run is the backend's business (backend.h: this host's queue and
 * workers, or the cluster's shards), chosen once at startup; the front
 * forwards to it without asking which, and adds what is the same either
 * way: the metrics of jobs submitted and finished, and GET
 * /v1/jobs/{id}?wait=S.
 *
 * Long-poll: the HTTP thread registers a waiter and suspends its
 * connection (MHD_suspend_connection) under the front's lock, then asks
 * the backend whether the job is still live; a job that ended before that
 * question marks the waiter at once, one that ends after it is reported
 * by the backend (its job_ended event, on a worker thread or, in a
 * cluster, on the loop from another node's NOTIFY) and marks it then. So
 * no end falls between the check and the suspend. A marked waiter is
 * resumed on the loop: the event wakes it (the daemon's wake hook, a
 * uv_async), and a loop timer resumes those whose deadline has passed.
 * No HTTP thread ever blocks on a job.
 *
 * An events stream (events.c) waits the same way between its events: its
 * connection suspended in a waiter marked `stream`, which a following
 * job's update (the backend's job_updated) resumes too.
 *
 * The front calls down only: the backend's operations, and the hooks the
 * daemon handed it (wake the loop, a GPU lost) for what it must report up.
 */
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "jobs.h"
#include "metrics.h"
#include "store.h"

typedef struct waiter {
  struct MHD_Connection *conn;
  char job[33];
  double deadline;
  bool ended; /* the backend said the job ended */
  bool stream;  /* an events stream: resumed at an update too */
  bool updated; /* the backend said the job has a new result */
  struct waiter *next;
} waiter;

struct jobs {
  backend b;
  metrics *metrics;
  jobs_hooks hooks;
  pthread_mutex_t mu; /* the waiters, stopping */
  bool stopping;
  waiter *waiters;
};

/* ---- the backend's events ------------------------------------------------------------ */

static void on_job_ended(void *u, const char *id) {
  jobs *q = u;
  pthread_mutex_lock(&q->mu);
  for (waiter *w = q->waiters; w != NULL; w = w->next)
    if (strcmp(w->job, id) == 0)
      w->ended = true;
  pthread_mutex_unlock(&q->mu);
  q->hooks.wake(q->hooks.u);
}

static void on_job_updated(void *u, const char *id) {
  jobs *q = u;
  pthread_mutex_lock(&q->mu);
  for (waiter *w = q->waiters; w != NULL; w = w->next)
    if (w->stream && strcmp(w->job, id) == 0)
      w->updated = true;
  pthread_mutex_unlock(&q->mu);
  q->hooks.wake(q->hooks.u);
}

static void on_job_counted(void *u, job_status final, double seconds, uint64_t pairs) {
  jobs *q = u;
  metrics_observe_job(q->metrics, final, seconds, pairs);
}

static void on_gpu_lost(void *u, const char *reason) {
  jobs *q = u;
  q->hooks.gpu_lost(q->hooks.u, reason);
}

/* ---- life ----------------------------------------------------------------------------- */

int jobs_start(jobs **out, const backend *b, metrics *m, const jobs_hooks *hooks, char *msg,
               size_t msglen) {
  jobs *q = calloc(1, sizeof *q);
  if (q == NULL)
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for the job queue");
  q->b = *b;
  q->metrics = m;
  q->hooks = *hooks;
  pthread_mutex_init(&q->mu, NULL);
  const backend_events ev = {on_job_ended, on_job_counted, on_gpu_lost, q, on_job_updated};
  int rc = b->ops->start(b->self, &ev, msg, msglen);
  if (rc != 0) {
    b->ops->stop(b->self);
    pthread_mutex_destroy(&q->mu);
    free(q);
    return rc;
  }
  *out = q;
  return 0;
}

void jobs_listen(jobs *q, struct uv_loop_s *loop) {
  if (q->b.ops->listen != NULL)
    q->b.ops->listen(q->b.self, loop);
}

void jobs_unlisten(jobs *q) {
  if (q->b.ops->unlisten != NULL)
    q->b.ops->unlisten(q->b.self);
}

void jobs_stop(jobs *q) {
  if (q == NULL)
    return;
  pthread_mutex_lock(&q->mu);
  q->stopping = true;
  pthread_mutex_unlock(&q->mu);
  q->b.ops->stop(q->b.self);
}

void jobs_destroy(jobs *q) {
  if (q == NULL)
    return;
  while (q->waiters != NULL) {
    waiter *w = q->waiters;
    q->waiters = w->next;
    free(w);
  }
  pthread_mutex_destroy(&q->mu);
  free(q);
}

/* ---- jobs ----------------------------------------------------------------------------- */

int jobs_submit(jobs *q, job_record *rec, char *msg, size_t msglen) {
  int rc = q->b.ops->submit(q->b.self, rec, msg, msglen);
  if (rc == 0)
    atomic_fetch_add(&q->metrics->jobs_submitted, 1);
  return rc;
}

int jobs_get(jobs *q, const char *id, job_record *out, bool arrays) {
  return q->b.ops->get(q->b.self, id, out, arrays);
}

int jobs_cancel(jobs *q, const char *id, job_record *out, char *msg, size_t msglen) {
  return q->b.ops->cancel(q->b.self, id, out, msg, msglen);
}

int jobs_list(jobs *q, size_t limit, bool (*fn)(const job_record *j, void *u), void *u) {
  return q->b.ops->list(q->b.self, limit, fn, u);
}

size_t jobs_active_on(jobs *q, const char *dataset) {
  return q->b.ops->active_on(q->b.self, dataset);
}

size_t jobs_queue_depth(jobs *q) { return q->b.ops->queue_depth(q->b.self); }
size_t jobs_running(jobs *q) { return q->b.ops->running(q->b.self); }
int jobs_worker_count(jobs *q) { return q->b.ops->workers(q->b.self); }
bool jobs_deletes_results(jobs *q) { return q->b.ops->delete_result != NULL; }

int jobs_delete_result(jobs *q, const char *id, double at, char *msg, size_t msglen) {
  return q->b.ops->delete_result(q->b.self, id, at, msg, msglen);
}

void jobs_dataset_grew(jobs *q, const char *dataset) {
  if (q->b.ops->dataset_grew != NULL)
    q->b.ops->dataset_grew(q->b.self, dataset);
}

/* ---- long-poll ------------------------------------------------------------------------ */

/* conn suspended in a new waiter on job id; false (not suspended) when
 * out of memory or stopping. */
static bool add_waiter(jobs *q, const char *id, struct MHD_Connection *conn, double deadline,
                       bool stream) {
  waiter *w = calloc(1, sizeof *w);
  if (w == NULL)
    return false;
  w->conn = conn;
  snprintf(w->job, sizeof w->job, "%s", id);
  w->deadline = deadline;
  w->stream = stream;
  pthread_mutex_lock(&q->mu);
  if (q->stopping) {
    pthread_mutex_unlock(&q->mu);
    free(w);
    return false;
  }
  w->next = q->waiters;
  q->waiters = w;
  MHD_suspend_connection(conn);
  pthread_mutex_unlock(&q->mu);
  return true;
}

bool jobs_wait(jobs *q, const char *id, struct MHD_Connection *conn, double deadline) {
  if (q->b.ops->live(q->b.self, id) != 1 || !add_waiter(q, id, conn, deadline, false))
    return false;
  /* an end reported from now on marks the waiter; one before, this finds */
  if (q->b.ops->live(q->b.self, id) == 0)
    on_job_ended(q, id);
  return true;
}

bool jobs_stream_wait(jobs *q, const char *id, struct MHD_Connection *conn, double deadline) {
  return add_waiter(q, id, conn, deadline, true);
}

void jobs_resume_waiters(jobs *q, bool all) {
  double now = histd_now_ms();
  pthread_mutex_lock(&q->mu);
  for (waiter **p = &q->waiters; *p != NULL;) {
    waiter *w = *p;
    if (all || q->stopping || now >= w->deadline || w->ended || w->updated) {
      *p = w->next;
      MHD_resume_connection(w->conn);
      free(w);
    } else {
      p = &w->next;
    }
  }
  pthread_mutex_unlock(&q->mu);
}
