/*
 * sync_pool.h -- POST /v1/histogram's compute threads (sync_pool.c).
 */
#ifndef HISTD_SYNC_POOL_H
#define HISTD_SYNC_POOL_H

#include <stdbool.h>
#include <stddef.h>

#include "histd/histd.h"
#include "histd/params.h"

struct MHD_Connection;

/* One request's histogram, queued whole. */
typedef struct sync_task {
  struct MHD_Connection *conn;
  histd_dataset ds;
  histd_params params;
  histd_result res;
  int rc;
  char msg[512];
  bool done;
  double parse_ms, queued_ms, started_ms;
  struct sync_task *next;
} sync_task;

typedef struct sync_pool sync_pool;
/* threads: 0 for one per core; limit: tasks queued at most (--queue-limit);
 * gpu_lost(u, reason): a named CUDA kernel's GPU lost its context. */
int sync_pool_start(sync_pool **out, int threads, size_t limit,
                    void (*gpu_lost)(void *u, const char *reason), void *u, char *msg,
                    size_t msglen);
/* Queues t and suspends its connection; HISTD_ETOOBIG when full or stopping. */
int sync_pool_submit(sync_pool *p, sync_task *t);
size_t sync_pool_depth(sync_pool *p);
/* Answers what is queued and joins the threads; later submits get
 * HISTD_ETOOBIG. The pool stays valid (HTTP threads may still call in) until
 * sync_pool_destroy, after libmicrohttpd has stopped. */
void sync_pool_stop(sync_pool *p);
void sync_pool_destroy(sync_pool *p); /* stops if need be, frees */
void sync_task_free(sync_task *t);

#endif
