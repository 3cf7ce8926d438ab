/*
 * sync_pool.c -- the threads that compute POST /v1/histogram.
 *
 * A synchronous histogram is small (--max-sync-points) but still real
 * work: 20,000 points are 2e8 pairs. Computing it on the libmicrohttpd
 * thread that read the request would stall every other connection that
 * thread serves -- a health probe included -- for as long as it runs. So
 * the HTTP thread parses the request, queues a task here and suspends the
 * connection; one of this pool's threads (one per core) computes it with a
 * one-thread CPU worker (or, for a named CUDA kernel, a GPU one) and
 * resumes the connection, and the handler runs again to answer.
 *
 * One FIFO for all tasks, so concurrent clients are served in arrival
 * order and the latency spread stays narrow; bounded by --queue-limit
 * (503 beyond). The task is pushed and the connection suspended under the
 * pool's lock, so no thread can resume a connection before it is
 * suspended. Stopping fails the tasks still queued ("shutting down") and
 * resumes their connections before libmicrohttpd stops.
 *
 * The pool does not share the job workers: a long job never delays a
 * quick histogram, and these never touch the store. A GPU that loses its
 * CUDA context is reported up through the callback the daemon gave at
 * start; the pool knows nothing else of the daemon.
 */
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "histd/job.h"
#include "sync_pool.h"

struct sync_pool {
  size_t limit; /* --queue-limit */
  void (*gpu_lost)(void *u, const char *reason); /* reported up: the process must end */
  void *gpu_lost_u;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  sync_task *head, *tail;
  size_t depth;
  bool stopping;
  pthread_t *threads;
  int nthreads;
};

static void run_task(sync_task *t) {
  histd_job job;
  t->rc = histd_job_bind(&job, &t->params, &t->ds, NULL, NULL, t->msg, sizeof t->msg);
  if (t->rc != 0)
    return;
  const histd_problem prob = job.problem;
  const histd_kernel *k = histd_kernel_find(t->params.exec.kernel);
  if (k != NULL && k->engine == HISTD_ENGINE_CUDA) {
    t->rc = histd_run(&prob, &t->params.exec, NULL, &t->res, t->msg, sizeof t->msg);
  } else {
    histd_worker *w = NULL;
    t->rc = histd_worker_create(&w, -1, t->msg, sizeof t->msg);
    if (t->rc == 0)
      t->rc = histd_worker_run(w, &prob, &t->params.exec, NULL, &t->res, t->msg, sizeof t->msg);
    histd_worker_destroy(w);
  }
  if (t->rc == 0)
    histd_job_label(&t->params, &t->res);
  histd_job_free(&job);
}

static void *pool_main(void *arg) {
  sync_pool *p = arg;
  for (;;) {
    pthread_mutex_lock(&p->mu);
    while (!p->stopping && p->head == NULL)
      pthread_cond_wait(&p->cv, &p->mu);
    if (p->head == NULL) { /* stopping, and nothing left */
      pthread_mutex_unlock(&p->mu);
      return NULL;
    }
    sync_task *t = p->head;
    p->head = t->next;
    if (p->head == NULL)
      p->tail = NULL;
    p->depth--;
    bool stopping = p->stopping;
    pthread_mutex_unlock(&p->mu);
    t->started_ms = histd_now_ms();
    if (stopping) {
      t->rc = HISTD_ECANCELED;
      snprintf(t->msg, sizeof t->msg, "the daemon is shutting down");
    } else {
      run_task(t);
      if (t->rc == HISTD_EGPULOST)
        p->gpu_lost(p->gpu_lost_u, t->msg);
    }
    t->done = true;
    MHD_resume_connection(t->conn);
  }
}

int sync_pool_start(sync_pool **out, int threads, size_t limit,
                    void (*gpu_lost)(void *u, const char *reason), void *u, char *msg,
                    size_t msglen) {
  sync_pool *p = calloc(1, sizeof *p);
  if (p == NULL)
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory");
  p->limit = limit;
  p->gpu_lost = gpu_lost;
  p->gpu_lost_u = u;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv, NULL);
  unsigned n = threads > 0 ? (unsigned)threads : histd_cpu_count();
  p->nthreads = n > 64 ? 64 : (int)n;
  p->threads = calloc((size_t)p->nthreads, sizeof *p->threads);
  if (p->threads == NULL) {
    free(p);
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory");
  }
  for (int i = 0; i < p->nthreads; i++)
    if (pthread_create(&p->threads[i], NULL, pool_main, p) != 0) {
      p->nthreads = i;
      sync_pool_destroy(p);
      return histd_fail(msg, msglen, HISTD_ENOMEM, "cannot start the histogram threads");
    }
  *out = p;
  return 0;
}

int sync_pool_submit(sync_pool *p, sync_task *t) {
  pthread_mutex_lock(&p->mu);
  if (p->stopping || p->depth >= p->limit) {
    pthread_mutex_unlock(&p->mu);
    return HISTD_ETOOBIG;
  }
  t->next = NULL;
  if (p->tail)
    p->tail->next = t;
  else
    p->head = t;
  p->tail = t;
  p->depth++;
  t->queued_ms = histd_now_ms();
  MHD_suspend_connection(t->conn); /* before any pool thread can resume it */
  pthread_cond_signal(&p->cv);
  pthread_mutex_unlock(&p->mu);
  return 0;
}

size_t sync_pool_depth(sync_pool *p) {
  pthread_mutex_lock(&p->mu);
  size_t d = p->depth;
  pthread_mutex_unlock(&p->mu);
  return d;
}

void sync_pool_stop(sync_pool *p) {
  if (p == NULL)
    return;
  pthread_mutex_lock(&p->mu);
  p->stopping = true; /* queued tasks are answered "shutting down" */
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
  for (int i = 0; i < p->nthreads; i++)
    pthread_join(p->threads[i], NULL);
  p->nthreads = 0;
}

void sync_pool_destroy(sync_pool *p) {
  if (p == NULL)
    return;
  sync_pool_stop(p);
  free(p->threads);
  pthread_cond_destroy(&p->cv);
  pthread_mutex_destroy(&p->mu);
  free(p);
}

void sync_task_free(sync_task *t) {
  if (t == NULL)
    return;
  histd_dataset_free(&t->ds);
  histd_params_free(&t->params);
  if (t->done && t->rc == 0)
    histd_result_free(&t->res);
  free(t);
}
