/*
 * service.h -- the daemon's private declarations: the one context struct and
 * the interfaces between the service's rooms.
 *
 * The daemon is a handful of rooms around one context (struct service),
 * after redis and libuv: nothing global, every module reaches the others
 * through the context it is handed.
 *
 *   main.c             flags, startup, the libuv loop (signals, timers, wake-ups)
 *   config.c           flags and environment variables -> struct config
 *   http.c             libmicrohttpd: requests, bodies, auth, CORS, the route table
 *   guard.c            what every request must be (its head, Host, Origin, types)
 *   deadline.c         slow clients: head and body deadlines, connection limits
 *   accept.c           content negotiation (Accept)
 *   cors.c             which origins get which CORS headers
 *   problem.c          application/problem+json errors and response helpers
 *   routes_datasets.c  /v1/datasets
 *   routes_jobs.c      /v1/jobs and /v1/histogram
 *   routes_misc.c      /v1/kernels, /v1/devices, /healthz, /readyz, /metrics, static files
 *   jobs.c             the job front: the backend's jobs, long-poll waiters
 *   backend.h          one host or a cluster: the jobs backend, chosen at startup
 *   jobs_local.c       one host's backend: the job queue, the worker pool
 *   cluster.c          the cluster's backend: PostgreSQL, shards, the shared store
 *   bind.c             a job bound to its loaded operands (both backends)
 *   datasets.c         loaded datasets: mmapped payloads shared by refcount
 *   store.c            SQLite metadata and results, payload files on disk
 *   sha256.c           content hashes (OpenSSL when present, else portable C)
 *   metrics.c          counters and the Prometheus text
 *   batch.c            `histd batch`: a job's shards as batch tasks (no daemon)
 *
 * Threads: libmicrohttpd's pool threads run the handlers; the worker pool's
 * threads run jobs; the main thread runs the libuv loop. They meet in the
 * jobs module (one mutex + condition variable), the store (one mutex around
 * the SQLite connection that writes; each read on a connection of its own)
 * and the metrics (atomics).
 */
#ifndef HISTD_SERVICE_H
#define HISTD_SERVICE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "histd/histd.h"
#include "histd/io.h"
#include "histd/job.h"
#include "histd/params.h"
#include "backend.h"
#include "batch.h"
#include "bind.h"
#include "config.h"
#include "datasets.h"
#include "json_util.h"
#include "sha256.h"
#include "store.h"
#include "util.h"

/* ---- byte budgets (budget.c) ---------------------------------------------- */

/* Bytes held at once against a limit (0: no limit), thread-safe. */
typedef struct budget {
  atomic_uint_fast64_t used;
  uint64_t limit;
} budget;
/* Takes `bytes` if they fit under the limit; false (nothing taken) if not. */
bool budget_take(budget *b, uint64_t bytes);
/* The same, but also takes bytes beyond the limit when nothing else is
 * held: one thing larger than the whole budget can still be served. */
bool budget_take_or_alone(budget *b, uint64_t bytes);
void budget_give(budget *b, uint64_t bytes);

/* ---- streamed float64 uploads (upload_stream.c) ---------------------------- */

struct service;
typedef struct upload_stream upload_stream;
/* NULL (and msg empty) when the body should take the buffered path. */
upload_stream *upload_stream_open(struct service *svc, size_t n, char *msg, size_t msglen);
void upload_stream_write(upload_stream *u, const char *data, size_t len);
/* Stores the dataset; 0, or the HTTP status of the failure with msg. Frees u. */
unsigned upload_stream_finish(upload_stream *u, const char *name, dataset_meta *meta,
                              bool *created, char *msg, size_t msglen);
void upload_stream_abort(upload_stream *u); /* frees u, removes its temp file */

/* ---- metrics (metrics.c) ------------------------------------------------------ */

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

/* ---- jobs (jobs.c) ------------------------------------------------------------ */

typedef struct jobs jobs;

/* What the job front reports to the daemon's loop (daemon.c). */
typedef struct jobs_hooks {
  void (*wake)(void *u); /* thread-safe: run jobs_resume_waiters on the loop soon */
  /* thread-safe: a GPU lost its CUDA context; the process must end */
  void (*gpu_lost)(void *u, const char *reason);
  void *u;
} jobs_hooks;

/* Starts the backend b (chosen by the caller, who closes it after
 * jobs_destroy) with the front's events; m counts submitted and finished
 * jobs. */
int jobs_start(jobs **out, const backend *b, metrics *m, const jobs_hooks *hooks, char *msg,
               size_t msglen);
/* The backend's watch on the loop (a cluster's NOTIFYs), if it has one. */
struct uv_loop_s;
void jobs_listen(jobs *q, struct uv_loop_s *loop);
void jobs_unlisten(jobs *q);
/* Stops the workers: running jobs are interrupted and stay queued in the
 * store, so the next start runs them again. */
void jobs_stop(jobs *q);
void jobs_destroy(jobs *q);

/* Submits a validated job. Returns 0, HISTD_ETOOBIG when the queue is full. */
int jobs_submit(jobs *q, job_record *j, char *msg, size_t msglen);
/* The job's current state: from memory when queued or running, else from
 * the store (with the result's arrays, or without: a summary).
 * HISTD_ENOENT when unknown. */
int jobs_get(jobs *q, const char *id, job_record *out, bool arrays);
/* Cancels: a queued job at once, a running one within a second. Returns 1
 * when a running job was asked to stop, 0 when it is cancelled or had
 * already ended, HISTD_ENOENT when unknown, or HISTD_EIO (msg says why)
 * when the store could not record it: the job then stays queued. */
int jobs_cancel(jobs *q, const char *id, job_record *out, char *msg, size_t msglen);
size_t jobs_queue_depth(jobs *q);
size_t jobs_running(jobs *q);
/* Queued or running jobs that read the dataset (as A, as B or as topology). */
size_t jobs_active_on(jobs *q, const char *dataset);
int jobs_worker_count(jobs *q);
/* Jobs newest first, from the store (or the cluster); fn returns false to stop. */
int jobs_list(jobs *q, size_t limit, bool (*fn)(const job_record *j, void *u), void *u);
/* Whether the backend can take a result away (DELETE /v1/jobs/{id}/result),
 * and doing it (store_delete_result's contract). */
bool jobs_deletes_results(jobs *q);
int jobs_delete_result(jobs *q, const char *id, double at, char *msg, size_t msglen);
/* Long-poll: registers conn to be resumed when job `id` ends or at the
 * deadline; returns false (and does not suspend) when the job has ended. */
struct MHD_Connection;
bool jobs_wait(jobs *q, const char *id, struct MHD_Connection *conn, double deadline);
/* From the loop: resumes waiters whose job ended or whose deadline passed
 * (all of them when `all`). */
void jobs_resume_waiters(jobs *q, bool all);

/* ---- POST /v1/histogram's compute threads (sync_pool.c) ------------------------ */

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

/* ---- slow clients (deadline.c) ------------------------------------------------------ */

/* Watches every connection: a request head must arrive within
 * --header-timeout, a body at --min-body-rate and within --body-timeout;
 * one address holds at most --per-ip-connection-limit connections, all of
 * them --connection-limit, the least busy one making room at either limit.
 * The hooks run on libmicrohttpd's threads, the sweep on the loop. */
typedef struct deadlines deadlines;
struct MHD_Connection;
int deadlines_create(deadlines **out, struct service *svc, char *msg, size_t msglen);
void deadlines_destroy(deadlines *d); /* after libmicrohttpd has stopped */
void deadlines_opened(deadlines *d, struct MHD_Connection *conn, void **socket_context);
void deadlines_closed(deadlines *d, void **socket_context);
void deadlines_request_line(deadlines *d, struct MHD_Connection *conn);
void deadlines_head_done(deadlines *d, struct MHD_Connection *conn, bool body_coming);
void deadlines_body(deadlines *d, struct MHD_Connection *conn, size_t bytes);
void deadlines_body_done(deadlines *d, struct MHD_Connection *conn);
void deadlines_request_done(deadlines *d, struct MHD_Connection *conn);
void deadlines_sweep(deadlines *d); /* closes the offenders */
/* ---- handler steps that wait on the disk (defer.c) ------------------------------ */

typedef struct defer_pool defer_pool;
int defer_pool_start(defer_pool **out, char *msg, size_t msglen);
/* Suspends conn and runs fn(arg) on a pool thread, then resumes conn (the
 * handler runs again with r->resumed). False when stopping or out of
 * memory: then the caller runs fn itself. */
struct MHD_Connection;
bool defer_submit(defer_pool *p, struct MHD_Connection *conn, void (*fn)(void *arg),
                  void *arg);
void defer_pool_stop(defer_pool *p); /* runs what is queued, joins */
void defer_pool_destroy(defer_pool *p);

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
  char lost_reason[512]; /* written once, before lost is set */
  double started_at;
  int gpu_count;
  histd_device_info gpus[16];
  char gpu_reason[256];
} service;


/* ---- HTTP (http.c, problem.c, cors.c) ---------------------------------------------- */

struct MHD_Response;

/* One request as the handlers see it. */
typedef struct request {
  service *svc;
  struct MHD_Connection *conn;
  const char *method;
  const char *url;
  const char *path_id;   /* the {id} segment, when the route has one */
  char *body;            /* the whole body (NUL-terminated), or NULL */
  size_t body_len;
  struct upload_stream *stream; /* a raw float64 upload going straight to disk */
  int spool_fd;                 /* spooling: a big body going to a temp file whole */
  bool spooling;
  int spool_errno;              /* a write that failed (0: none)               */
  char spool_path[4400];
  struct sync_task *sync_task;  /* POST /v1/histogram's work, while it is away */
  void *deferred;               /* a handler's state while defer.c runs its step (malloc'd) */
  size_t content_length;
  /* long-poll state */
  bool suspended;
  bool resumed;
  double wait_deadline;
  bool vary_accept;      /* the answer was chosen by Accept (negotiate) */
  /* the response the handler built */
  unsigned status;
  struct MHD_Response *response;
} request;

typedef void (*route_handler)(request *r);

typedef struct route {
  const char *method;
  const char *pattern; /* "/v1/jobs/{id}/result": {id} matches one segment */
  route_handler handler;
  bool body;           /* reads a request body */
  bool public_route;   /* no token needed */
  const char *summary;
} route;

extern const route service_routes[];
extern const size_t service_route_count;
void print_routes(void);

int http_start(service *svc, char *msg, size_t msglen);
void http_stop(service *svc);

/* Response helpers: each sets r->status and r->response. */
void respond_json(request *r, unsigned status, cJSON *body); /* takes body */
void respond_text(request *r, unsigned status, const char *content_type,
                  char *data, size_t len); /* takes data (malloc'd) */
void respond_empty(request *r, unsigned status);

/* A body written through a FILE: into memory, or, when it may be large (a
 * result with many buckets), into an unnamed file in the data dir that
 * libmicrohttpd then sends from the page cache, so that a 16 Mi-bucket
 * result does not cost the daemon its text in memory. */
typedef struct body_writer {
  FILE *f;
  char *mem;
  size_t len;
  bool file;
} body_writer;
bool body_open(body_writer *b, const service *svc, bool large);
/* Answers with what was written; 500 instead if the writer returned
 * rc != 0 or the stream failed. Closes b. */
void respond_body(request *r, unsigned status, const char *content_type, body_writer *b,
                  int rc);
void respond_problem(request *r, unsigned status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
const char *http_status_title(unsigned status);
bool utf8_valid(const char *s);
void response_add_header(request *r, const char *name, const char *value);

/* Which of types[0..count) (the default first) the request's Accept
 * prefers (accept.c): its index, or -1 when it accepts none of them
 * (answered 406 with a sentence listing them). */
int negotiate(request *r, const char *const *types, size_t count);

/* Query parameters and headers. */
const char *request_query(request *r, const char *key);
const char *request_header(request *r, const char *key);

/* What every request must satisfy (guard.c); each returns 0, or a negative
 * HISTD_E* code with the HTTP status and a sentence. */
int guard_head(struct MHD_Connection *conn, unsigned *status, char *msg, size_t msglen);
int guard_nul(bool nul_in_url, unsigned *status, char *msg, size_t msglen);
int guard_host(const config *cfg, const char *host, bool http11, unsigned *status, char *msg,
               size_t msglen);
int guard_origin(const config *cfg, const char *method, const char *origin, const char *host,
                 unsigned *status, char *msg, size_t msglen);
int guard_content_type(const char *content_type, bool uploads, bool format_given,
                       unsigned *status, char *msg, size_t msglen);
/* localhost, *.localhost, 127.0.0.0/8, ::1, or a name resolving only to them. */
bool host_is_loopback(const char *host);

/* CORS: the Access-Control-Allow-Origin value for this Origin, or NULL. */
const char *cors_allow_origin(const config *cfg, const char *origin);

/* The handlers (routes_*.c). */
void route_datasets_create(request *r);
/* At the headers of POST /v1/datasets: 1 = the body streams (r->stream)
 * or spools to a temp file (r->spooling), 0 = buffer it, -1 = answered. */
int route_datasets_stream(request *r, unsigned long long content_length);
/* A chunk of a spooled body (route_datasets_stream chose to spool it). */
void route_datasets_spool(request *r, const char *data, size_t len);
void route_datasets_list(request *r);
void route_datasets_get(request *r);
void route_datasets_delete(request *r);
void route_jobs_create(request *r);
void route_jobs_list(request *r);
void route_jobs_get(request *r);
void route_jobs_delete(request *r);
void route_jobs_result(request *r);
void route_jobs_result_delete(request *r);
void route_histogram(request *r);
void route_kernels(request *r);
void route_schema(request *r);
void route_devices(request *r);
void route_healthz(request *r);
void route_readyz(request *r);
void route_metrics(request *r);
void route_static(request *r);

/* JSON shapes shared by routes (routes_jobs.c). */
cJSON *dataset_to_json(const dataset_meta *m);

#endif
