/*
 * defer.c -- handler steps that wait on the disk, run off the HTTP threads.
 *
 * libmicrohttpd's pool threads each serve many connections: a handler that
 * blocks (a job's row waiting for its fsync in store.c's group commit)
 * blocks every other connection of its thread, a GET of a queued job
 * included. So the handlers whose answer must wait for a durable write
 * (POST /v1/jobs, DELETE /v1/jobs/{id} of a queued job) hand that step to
 * this pool: the connection is suspended, a pool thread runs the step
 * (which may wait on the disk as long as it must: the answer is only sent
 * once the write is durable), then resumes the connection, and the
 * handler runs again (r->resumed) to answer from what the step left.
 *
 * The pool's threads mostly wait for fsyncs; several of them let
 * concurrent submits share one (store.c's group commit). The task is
 * queued and the connection suspended under the pool's lock, so no thread
 * resumes a connection before it is suspended (as sync_pool.c). Stopping
 * runs what is queued, then joins: every suspended connection is resumed.
 */
#include <microhttpd.h>
#include <pthread.h>
#include <stdlib.h>

#include "histd/histd.h"
#include "defer.h"

#define DEFER_THREADS 8

typedef struct defer_task {
  struct MHD_Connection *conn;
  void (*fn)(void *arg);
  void *arg;
  struct defer_task *next;
} defer_task;

struct defer_pool {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  defer_task *head, *tail;
  bool stopping;
  pthread_t threads[DEFER_THREADS];
  int nthreads;
};

static void *defer_main(void *arg) {
  defer_pool *p = arg;
  for (;;) {
    pthread_mutex_lock(&p->mu);
    while (!p->stopping && p->head == NULL)
      pthread_cond_wait(&p->cv, &p->mu);
    defer_task *t = p->head;
    if (t == NULL) { /* stopping, and nothing left */
      pthread_mutex_unlock(&p->mu);
      return NULL;
    }
    p->head = t->next;
    if (p->head == NULL)
      p->tail = NULL;
    pthread_mutex_unlock(&p->mu);
    t->fn(t->arg);
    struct MHD_Connection *conn = t->conn;
    free(t);
    MHD_resume_connection(conn); /* the handler runs again and answers */
  }
}

int defer_pool_start(defer_pool **out, char *msg, size_t msglen) {
  defer_pool *p = calloc(1, sizeof *p);
  if (p == NULL)
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory");
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv, NULL);
  for (int i = 0; i < DEFER_THREADS; i++) {
    if (pthread_create(&p->threads[i], NULL, defer_main, p) != 0) {
      defer_pool_destroy(p);
      return histd_fail(msg, msglen, HISTD_ENOMEM, "cannot start the store's request threads");
    }
    p->nthreads = i + 1;
  }
  *out = p;
  return 0;
}

bool defer_submit(defer_pool *p, struct MHD_Connection *conn, void (*fn)(void *arg),
                  void *arg) {
  defer_task *t = malloc(sizeof *t);
  if (t == NULL)
    return false;
  *t = (defer_task){conn, fn, arg, NULL};
  pthread_mutex_lock(&p->mu);
  if (p->stopping) {
    pthread_mutex_unlock(&p->mu);
    free(t);
    return false;
  }
  if (p->tail)
    p->tail->next = t;
  else
    p->head = t;
  p->tail = t;
  MHD_suspend_connection(conn); /* before any pool thread can resume it */
  pthread_cond_signal(&p->cv);
  pthread_mutex_unlock(&p->mu);
  return true;
}

void defer_pool_stop(defer_pool *p) {
  if (p == NULL)
    return;
  pthread_mutex_lock(&p->mu);
  p->stopping = true;
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
  for (int i = 0; i < p->nthreads; i++)
    pthread_join(p->threads[i], NULL);
  p->nthreads = 0;
}

void defer_pool_destroy(defer_pool *p) {
  if (p == NULL)
    return;
  defer_pool_stop(p);
  pthread_cond_destroy(&p->cv);
  pthread_mutex_destroy(&p->mu);
  free(p);
}
