/*
 * bind.h -- a stored job bound to its loaded operands (bind.c), the same
 * way for either backend; only where a dataset comes from differs.
 */
#ifndef HISTD_BIND_H
#define HISTD_BIND_H

#include <stddef.h>

#include "histd/job.h"
#include "datasets.h"
#include "store.h"

/* A job's problem on loaded datasets (the job layer's histd_job_bind): A
 * is d (the caller's), B and the topology's dataset acquired here through
 * get (NULL: dataset_acquire from the store); B held, and the job's
 * selections owned, until job_unbind. prob is job.problem. */
typedef struct job_binding {
  loaded_dataset *d_b;
  histd_job job;
  histd_problem prob;
} job_binding;
/* How job_bind gets B and the topology's dataset: dataset_acquire, or the
 * cluster's (from the shared store). */
typedef int (*dataset_getter)(void *u, const char *id, loaded_dataset **out, char *msg,
                              size_t msglen);
int job_bind(dataset_cache *cache, const job_record *rec, loaded_dataset *d,
             dataset_getter get, void *u, job_binding *b, char *msg, size_t msglen);
void job_unbind(dataset_cache *cache, job_binding *b);

#endif
