/*
 * backend.h -- where jobs run and datasets are indexed: one interface,
 * two backends, chosen once at startup.
 *
 * The daemon answers the same API on one host and in a cluster; what
 * differs is where a job is queued and run, and who keeps the index of
 * datasets. On one host (jobs_local.c) a job is a row in the daemon's
 * SQLite store and an entry in its in-memory queue, run whole by one of
 * its workers; datasets are what the store holds. In a cluster
 * (cluster.c, with --coordinator) a job is a row in PostgreSQL cut into
 * shards that every node's workers claim; datasets are published to the
 * shared store and indexed in PostgreSQL, and a node answers for ones it
 * never stored.
 *
 * As libuv keeps unix/ and win/ behind one set of uv_* calls, the daemon
 * keeps both behind a table of function pointers (backend_ops), filled by
 * each backend's open function. The daemon picks one before it starts
 * (daemon.c: --coordinator or not), and from then on neither the routes
 * nor the job front (jobs.c) asks which one it has: a capability that
 * only one backend has is a NULL entry (listen: the cluster's NOTIFYs;
 * delete_result: one host only), not a branch on the mode.
 *
 * A backend sits below the daemon and never calls up into it. What the
 * daemon must learn -- a job left the queue, a job's final status for the
 * metrics, a GPU lost its context -- it reports through the events it was
 * handed at start (backend_events), on whatever thread noticed.
 *
 * Every entry is thread-safe once the backend has started (HTTP threads,
 * defer.c's threads and the loop call them), except start, listen,
 * unlisten, stop and close, which the daemon's main thread calls in its
 * startup and shutdown order.
 */
#ifndef HISTD_BACKEND_H
#define HISTD_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "histd/histd.h"
#include "config.h"
#include "datasets.h"
#include "store.h"

struct uv_loop_s;

/* What a backend reports to the daemon above it (any thread). */
typedef struct backend_events {
  /* job left the queued and running states (any node's, in a cluster) */
  void (*job_ended)(void *u, const char *job);
  /* a job of this host finished as final after `seconds` of running */
  void (*job_counted)(void *u, job_status final, double seconds, uint64_t pairs);
  /* a GPU hit a sticky CUDA error (HISTD_EGPULOST): the process must end */
  void (*gpu_lost)(void *u, const char *reason);
  void *u;
  /* a following job recorded a new result (its frames so far) */
  void (*job_updated)(void *u, const char *job);
} backend_events;

/* What a backend is built on: the settings, this host's store and its
 * loaded datasets, the GPUs found. All outlive the backend. */
typedef struct backend_env {
  const config *cfg;
  store *store;
  dataset_cache *cache;
  int gpu_count;
  const histd_device_info *gpus;
  const char *gpu_reason; /* why there is no GPU ("" when there is one) */
} backend_env;

typedef struct backend_ops {
  const char *name; /* "local", "cluster" */
  /* Starts the workers (and, on one host, requeues the last run's
   * unfinished jobs); events are reported from here on. */
  int (*start)(void *self, const backend_events *ev, char *msg, size_t msglen);
  /* Watches the loop for other nodes' news; NULL: nothing to watch. */
  void (*listen)(void *self, struct uv_loop_s *loop);
  void (*unlisten)(void *self);
  /* Stops the workers: running jobs (shards) go back to the queue. */
  void (*stop)(void *self);
  void (*close)(void *self); /* stops if need be, frees */

  /* jobs: the contracts of jobs.h's jobs_submit, jobs_get, jobs_cancel,
   * jobs_list and jobs_active_on */
  int (*submit)(void *self, job_record *rec, char *msg, size_t msglen);
  int (*get)(void *self, const char *id, job_record *out, bool arrays);
  int (*cancel)(void *self, const char *id, job_record *out, char *msg, size_t msglen);
  int (*list)(void *self, size_t limit, bool (*fn)(const job_record *j, void *u), void *u);
  /* 1: queued or running; 0: ended (or unknown to this host's queue);
   * < 0: the backend cannot tell (no such row, the coordinator away) */
  int (*live)(void *self, const char *id);
  size_t (*active_on)(void *self, const char *dataset);
  /* frames were appended to a growing dataset, or it was sealed: the jobs
   * that follow it look again; NULL: no growing datasets here */
  void (*dataset_grew)(void *self, const char *dataset);
  size_t (*queue_depth)(void *self); /* this host's, for /readyz and /metrics */
  size_t (*running)(void *self);
  int (*workers)(void *self);
  /* Takes a succeeded job's result away (store_delete_result's contract);
   * NULL: not available with this backend. */
  int (*delete_result)(void *self, const char *id, double at, char *msg, size_t msglen);

  /* datasets: a dataset just stored here, made visible to the backend's
   * other readers; one by id (0, HISTD_ENOENT, HISTD_EIO), its payload
   * checked; newest first; deleted (0, HISTD_ENOENT, or an error with msg) */
  int (*dataset_publish)(void *self, const dataset_meta *m, char *msg, size_t msglen);
  int (*dataset_find)(void *self, const char *id, dataset_meta *m);
  int (*dataset_list)(void *self, size_t limit, bool (*fn)(const dataset_meta *m, void *u),
                      void *u);
  int (*dataset_delete)(void *self, const char *id, char *msg, size_t msglen);
} backend_ops;

typedef struct backend {
  const backend_ops *ops;
  void *self;
} backend;

/* The dataset entries as calls (the routes' way in). */
static inline int backend_dataset_publish(const backend *b, const dataset_meta *m, char *msg,
                                          size_t msglen) {
  return b->ops->dataset_publish(b->self, m, msg, msglen);
}
static inline int backend_dataset_find(const backend *b, const char *id, dataset_meta *m) {
  return b->ops->dataset_find(b->self, id, m);
}
static inline int backend_dataset_list(const backend *b, size_t limit,
                                       bool (*fn)(const dataset_meta *m, void *u), void *u) {
  return b->ops->dataset_list(b->self, limit, fn, u);
}
static inline int backend_dataset_delete(const backend *b, const char *id, char *msg,
                                         size_t msglen) {
  return b->ops->dataset_delete(b->self, id, msg, msglen);
}

/* This host alone (jobs_local.c); the cluster's is cluster.h's
 * cluster_backend_open. Nothing runs until start. */
int local_backend_open(backend *out, const backend_env *env, char *msg, size_t msglen);

#endif
