/*
 * service.h -- the daemon's context: the one struct its rooms share.
 *
 * The daemon is a handful of rooms around one context (struct service),
 * after redis and libuv: nothing global, every module reaches the others
 * through the context it is handed. Each room has its own header, and a
 * file includes the headers of what it calls, not this whole list.
 *
 *   daemon.c           startup, the libuv loop (signals, timers, wake-ups), shutdown
 *   config.c           flags and environment variables -> struct config (config.h)
 *   http.c             libmicrohttpd: requests, bodies, auth, CORS, the route table
 *   guard.c            what every request must be (its head, Host, Origin, types)
 *   deadline.c         slow clients: head and body deadlines, connection limits
 *   accept.c           content negotiation (Accept)
 *   cors.c             which origins get which CORS headers
 *   problem.c          application/problem+json errors and response helpers
 *   routes_datasets.c  /v1/datasets
 *   routes_jobs.c      /v1/jobs and /v1/histogram
 *   routes_misc.c      /v1/kernels, /v1/devices, /healthz, /readyz, /metrics, static files
 *   events.c           GET /v1/jobs/{id}/events: a job's progress, updates and end (SSE)
 *   jobs.c             the job front: the backend's jobs, long-poll waiters
 *   sync_pool.c        POST /v1/histogram's compute threads
 *   defer.c            handler steps that wait on the disk
 *   upload_stream.c    raw float64 uploads straight to a payload file
 *   metrics.c          counters and the Prometheus text
 *   budget.c           bytes held at once (--max-buffered-bytes)
 *
 * Below the daemon, in src/service (it calls down, never the other way):
 * the backend it picks at startup (backend.h: jobs_local.c for one host,
 * cluster/ for many), and what both backends stand on -- the store
 * (store.c), loaded datasets (datasets.c), binding a job to them
 * (bind.c), content hashes (sha256.c), following jobs' results
 * (follow.c). What a lower room must tell the
 * daemon it reports through a callback the daemon registered (the
 * backend's events, jobs_hooks, sync_pool's gpu_lost), never by calling
 * into daemon.c.
 *
 * Threads: libmicrohttpd's pool threads run the handlers; the backend's
 * worker threads run jobs; the main thread runs the libuv loop. They meet
 * in the job front and the backend (a mutex + condition variable each),
 * the store (one mutex around the SQLite connection that writes; each
 * read on a connection of its own) and the metrics (atomics).
 */
#ifndef HISTD_SERVICE_H
#define HISTD_SERVICE_H

#include <pthread.h>
#include <stdatomic.h>

#include "histd/histd.h"
#include "backend.h"
#include "budget.h"
#include "config.h"
#include "datasets.h"
#include "deadline.h"
#include "defer.h"
#include "jobs.h"
#include "metrics.h"
#include "store.h"
#include "sync_pool.h"

/* ---- the context ---------------------------------------------------------------- */

typedef struct service {
  config cfg;
  store *store;
  dataset_cache *cache;
  jobs *jobs;
  backend backend; /* this host's, or the cluster's (--coordinator) */
  sync_pool *sync;
  deadlines *deadlines;
  defer_pool *defer;
  metrics metrics;
  struct MHD_Daemon *mhd;
  void *loop_async; /* uv_async_t*: wakes the loop (thread-safe) */
  /* Orders dataset deletes (write) against job submits (read): submits
   * on different datasets run side by side. */
  pthread_rwlock_t datasets_lock;
  budget buffered; /* --max-buffered-bytes: request bodies, large answers */
  atomic_bool stopping;
  atomic_bool lost; /* a GPU's context is lost: the process is ending */
  atomic_int http_in_flight; /* requests begun and not yet answered */
  atomic_int event_streams;  /* GET /v1/jobs/{id}/events open (events.c) */
  char lost_reason[512]; /* written once, before lost is set */
  double started_at;
  int gpu_count;
  histd_device_info gpus[16];
  char gpu_reason[256];
} service;

#endif
