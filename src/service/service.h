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
 *   jobs.c             the job queue, the worker pool, long-poll waiters
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

/* ---- configuration (config.c) ------------------------------------------- */

typedef struct config {
  char listen_host[256];
  uint16_t listen_port;        /* 0: any free port (printed at startup) */
  char data_dir[4096];
  int workers;                 /* 0: one per GPU, else one CPU worker */
  size_t max_upload_bytes;
  size_t max_points;
  size_t max_sync_points;      /* POST /v1/histogram */
  size_t queue_limit;
  char cors_origin[1024];      /* "" (off), "*", or "a,b,c" */
  char token[256];             /* "" (off) */
  bool allow_anonymous;        /* listen beyond loopback without a token */
  char allowed_hosts[1024];    /* more Host names, "a,b", or "*" */
  char static_dir[4096];
  char import_dir[4096];       /* "" (off): POST /v1/datasets?path= reads under it */
  int http_threads;
  int histogram_threads;       /* POST /v1/histogram's pool; 0: one per core */
  unsigned connection_timeout; /* seconds */
  double header_timeout;       /* seconds to send a request head; 0 = none */
  double body_timeout;         /* seconds to send a request body; 0 = none */
  size_t min_body_rate;        /* bytes per second; 0 = none */
  unsigned connection_limit;
  unsigned per_ip_connection_limit;
  size_t connection_memory_limit;
  int max_wait;                /* cap of ?wait= in seconds */
  double job_retention;        /* seconds a finished job is kept; 0 = for ever */
  int max_job_attempts;        /* runs of a job the daemon died during, at most */
  size_t max_data_bytes;       /* the data dir's disk budget; 0 = none */
  size_t max_result_bytes;     /* one job's stored result, at most; 0 = any */
  size_t max_pairs_bytes;      /* one job's pair list, at most; 0 = any      */
  size_t max_buffered_bytes;   /* request bodies and large answers held at once */
  bool print_routes;
  bool access_log;             /* one line per request on stderr */
  char coordinator[1024];      /* "" (one host), else PostgreSQL's conninfo */
  char shared_store[1024];     /* cluster: a directory or s3://BUCKET/PREFIX */
  double lease;                /* cluster: seconds a shard's claim lasts (0: 30) */
  char node_name[256];         /* cluster: "" -> host:port */
  size_t shard_pairs;          /* cluster: pairs per shard (0: 20G) */
} config;

/* Fills cfg from defaults, then the environment, then argv. Returns 0, 1 for
 * --help/--version/--print-routes handled (exit 0), or -1 with msg. */
int config_load(config *cfg, int argc, char **argv, char *msg, size_t msglen);

/* ---- subcommands ----------------------------------------------------------- */

/* `histd batch ...` (batch.c): plan, run and merge a job's shards as a
 * batch scheduler's tasks. argv[0] is "batch"; returns the exit status. */
int batch_main(int argc, char **argv);

/* ---- content hashes (sha256.c) -------------------------------------------- */

typedef struct sha256_ctx sha256_ctx;
sha256_ctx *sha256_new(void);
void sha256_update(sha256_ctx *c, const void *data, size_t len);
void sha256_final_hex(sha256_ctx *c, char hex[65]); /* frees c */
void sha256_final_raw(sha256_ctx *c, unsigned char d[32]); /* frees c */
void sha256_hex(const void *data, size_t len, char hex[65]);

/* Dataset ids: SHA-256(SHA-256(x) || SHA-256(y) || SHA-256(z)) over the
 * float64 arrays; at once (the three leaves in parallel), or streaming. */
void dataset_id_hex(const double *x, const double *y, const double *z, size_t n,
                    char hex[65]);
/* The same for a payload with a tail (weights, the frame table: tail_len
 * doubles after z): SHA-256(H(x) || H(y) || H(z) || H(tail)); no tail is
 * dataset_id_hex, so a dataset of points only keeps its id. */
void dataset_id_hex_tail(const double *x, const double *y, const double *z, size_t n,
                         const double *tail, size_t tail_len, char hex[65]);
typedef struct dataset_hasher dataset_hasher;
dataset_hasher *dataset_hasher_new(void);
void dataset_hasher_update(dataset_hasher *h, int axis, const void *data, size_t len);
void dataset_hasher_final_hex(dataset_hasher *h, char hex[65]); /* frees h */
void dataset_hasher_free(dataset_hasher *h);

/* ---- JSON member spans (json_span.c) -------------------------------------- */

typedef struct json_span {
  const char *key; /* as written, without the quotes (escapes not decoded) */
  size_t key_len;
  const char *value; /* the value's text */
  size_t value_len;
} json_span;

/* The top-level members of the object in text[0..len). 0, or -1 when the
 * text is not a plausible object or has more than max members. */
int json_object_spans(const char *text, size_t len, json_span *spans, size_t max,
                      size_t *count);
/* Whether the span's key, its escapes decoded, is the ASCII name. */
bool json_span_key_is(const json_span *s, const char *name);

/* One JSON member as the value of parameter `row` (params_json.c): NULL,
 * or the phrase naming what the row wants ("a number", ...) when the member
 * has another JSON type. Arrays fill a malloc'd *numbers (free it after
 * histd_param_set). A null member is the null value: the default. */
const char *param_value_from_json(const histd_param *row, const cJSON *f, histd_value *v,
                                  double **numbers);

/* A request body parsed as JSON (json_body.c): 0 and a tree in *out, or
 * HISTD_EPARSE with a sentence when it is empty, not JSON, holds a NUL
 * (a raw byte or \u0000) or names a key twice in one object (HISTD_ENOMEM
 * when there was no memory to look). */
int json_body_parse(const char *body, size_t len, cJSON **out, char *msg, size_t msglen);

/* ---- time ------------------------------------------------------------------ */

/* The next entry of a comma-separated list (--cors-origin, --allowed-hosts)
 * at *p, blanks around it trimmed: [*s, *s + *len). False at the end. */
bool list_next(const char **p, const char **s, size_t *len);

double wall_now(void);                               /* seconds since the epoch */
void format_rfc3339(double t, char *buf, size_t len); /* "2026-11-21T07:40:01.123Z" */

/* ---- storage (store.c) ----------------------------------------------------- */

typedef struct store store;

typedef struct dataset_meta {
  char id[65];
  size_t n;
  char format[8];
  char name[256];
  double created_at;
  double min[3], max[3];
  char error[256]; /* "" when the payload is fine as far as we know */
  bool weighted;   /* the payload has n weights after z              */
  size_t frames;   /* >= 1                                           */
  histd_box box;   /* the first frame's periodic box, or kind NONE   */
  unsigned topology; /* HISTD_TOP_* bits: the atoms' arrays the payload keeps */
  char atoms[2048];  /* "" or a JSON object: what the file said of its atoms (atoms.c) */
  char unit[12];     /* the length unit the file's format implies, or ""  */
} dataset_meta;

/* A stored dataset's shape (the job layer's histd_shape): what a job is
 * checked against when it is submitted, without the points. */
void dataset_shape(const dataset_meta *m, histd_shape *out);

/* The JSON text of dataset_meta.atoms for ds ("" when it has one frame and
 * no topology, or when the text would not fit in len). */
void dataset_atoms_summary(const histd_dataset *ds, char *out, size_t len);

/*
 * A dataset's payload file (schema 3): x[n] y[n] z[n], then w[n] when
 * weighted, then the frame table when there are several frames or a box:
 * a record of 8 float64 per frame {points, box kind, ax, bx, by, cx, cy,
 * cz}. All little-endian float64, so the file maps as the engine's arrays.
 * Schema 5 adds the topology (when `topology` is not 0): for each array of
 * histd_topology in the order of the HISTD_TOP_* bits, one 8-byte slot an
 * atom of a frame (a name's HISTD_ATOM_STR bytes, or an int64).
 */
bool dataset_has_table(const dataset_meta *m);
uint64_t dataset_payload_bytes(const dataset_meta *m);
#define DATASET_FRAME_RECORD 8
/* The payload's tail of a parsed dataset (malloc'd, *len doubles; NULL when
 * none) and its shape (n, bounds, weights, frames, box); tail NULL: the
 * shape and the length only. */
int dataset_tail(const histd_dataset *ds, dataset_meta *shape, double **tail, size_t *len,
                 char *msg, size_t msglen);
/* The topology of a mapped payload (its slots at tail) into ds->top. */
int dataset_topology_from_tail(histd_dataset *ds, const dataset_meta *m, const double *tail,
                               char *msg, size_t msglen);
/* The frame table of a mapped payload into ds's frames (HISTD_EIO when
 * it does not add up). */
int dataset_frames_from_table(histd_dataset *ds, const double *table, size_t frames, char *msg,
                              size_t msglen);

typedef enum job_status {
  JOB_QUEUED = 0,
  JOB_RUNNING,
  JOB_SUCCEEDED,
  JOB_FAILED,
  JOB_CANCELLED,
  JOB_STATUS_COUNT
} job_status;

const char *job_status_name(job_status s);

/* A job as the store keeps it (and as the jobs module hands it around). */
typedef struct job_record {
  char id[33];
  int64_t seq;
  char dataset[65];
  char dataset_b[65];   /* "" for self pairs; else A x B */
  size_t n, n_b;        /* the datasets' points, when known */
  histd_params params;  /* as resolved at submission; owns its edges */
  job_status status;
  double progress;
  size_t frames;        /* the frames the running job counts (0: not yet known) */
  double created_at, started_at, finished_at; /* 0 = not yet */
  histd_timing timing;
  char device[HISTD_DEVICE_NAME_MAX];
  char error[512];
  unsigned attempts;    /* runs begun and not ended, not even by a clean stop */
  uint64_t stored_bytes; /* the stored result's blobs */
  double result_deleted_at; /* when DELETE /v1/jobs/{id}/result took it; 0 */
  bool has_result;
  histd_result result;  /* counts owned when has_result */
} job_record;

int store_open(store **out, const char *data_dir, char *msg, size_t msglen);
/* The data dir's disk budget (0: none): a result that would take the data
 * dir past it is not stored (store_update_job fails, HISTD_ETOOBIG); nor
 * is a result of more than max_result_bytes (0: any size). */
void store_set_limits(store *s, uint64_t max_bytes, uint64_t max_result_bytes);
/* What the data dir holds now: payloads, the database's pages in use and
 * its WAL. */
uint64_t store_data_bytes(store *s);
/* Whether `bytes` more in the database (a result, a job's row) fit the
 * budget, counted twice (the WAL, then the database): 0, or HISTD_ETOOBIG
 * with a sentence that begins with `what`. */
int store_room(store *s, const char *what, uint64_t bytes, char *msg, size_t msglen);
void store_close(store *s);
const char *store_payload_dir(const store *s);

/* Writes the dataset's payload (atomically; content-addressed) and its row.
 * *created is false when the same points were already stored (then meta is
 * the stored one). */
int store_put_dataset(store *s, const histd_dataset *ds, const char *format,
                      const char *name, dataset_meta *meta, bool *created,
                      char *msg, size_t msglen);
/* The streaming path: a temp file in the payload dir for the caller to
 * fill (x[], y[], z[] at their offsets), then store_put_streamed with its
 * id and bounds, which syncs, renames and records it (or, when the points
 * are stored already, drops it). */
int store_temp_payload(store *s, char *tmp_path, size_t len, int *fd, char *msg,
                       size_t msglen);
/* A dataset parsed into a temp payload file (histd_parse_to_fd: ds's points
 * are the file's first 3 n doubles): its tail (weights, frames, topology)
 * appended, hashed from the mapping, synced, renamed and recorded like any
 * other; the temp file is renamed or removed. */
int store_put_parsed_file(store *s, const char *tmp_path, int fd, const histd_dataset *ds,
                          const char *format, const char *name, dataset_meta *meta,
                          bool *created, char *msg, size_t msglen);
int store_put_streamed(store *s, const char *tmp_path, const char *id, size_t n,
                       const double min[3], const double max[3], const char *format,
                       const char *name, dataset_meta *meta, bool *created, char *msg,
                       size_t msglen);
int store_get_dataset(store *s, const char *id, dataset_meta *meta); /* 0 / HISTD_ENOENT */
/* Calls fn for each dataset, newest first; fn returns false to stop. */
int store_list_datasets(store *s, size_t limit,
                        bool (*fn)(const dataset_meta *m, void *u), void *u);
int store_delete_dataset(store *s, const char *id, char *msg, size_t msglen);
void store_set_dataset_error(store *s, const char *id, const char *error);
/* The payload file's path and whether it exists with the right size. */
void store_payload_path(const store *s, const char *id, char *path, size_t len);
void store_check_payload(const store *s, dataset_meta *m);

/* A PAIRS job's list, beside its row (data_dir/pairs/<job id>): a temp
 * file its run writes (temp: *fd), then kept (synced, renamed, its bytes
 * counted in the data dir's) or removed (keep false; fd closed either
 * way); open: the kept file to read, or -1; drop: removed with its job or
 * result (DELETE /v1/jobs/{id}/result, expiry). */
int store_pairs_temp(store *s, const char *job, int *fd, char *msg, size_t msglen);
int store_pairs_keep(store *s, const char *job, int fd, bool keep, char *msg, size_t msglen);
int store_pairs_open(store *s, const char *job);
void store_pairs_drop(store *s, const char *job);

int store_put_job(store *s, job_record *j, char *msg, size_t msglen); /* sets seq */
int store_update_job(store *s, const job_record *j, char *msg, size_t msglen);
/* store_update_job for a job that starts to run (its attempts counting
 * this run): committed (a kill -9 keeps it), but not waited on to reach
 * the disk, since losing it to a power cut only runs the job again, one
 * run more than --max-job-attempts would allow. */
int store_mark_job_running(store *s, const job_record *j, char *msg, size_t msglen);
/* 0, HISTD_ENOENT, or HISTD_EIO: the database cannot be read, or the
 * job's stored result cannot be decoded (then j->error says why and
 * j->has_result is false). The result is freed by job_record_free.
 * Without `arrays`, a summary: the result's scalars, no blob read. */
int store_get_job(store *s, const char *id, job_record *j, bool arrays);
int store_list_jobs(store *s, size_t limit, bool with_results,
                    bool (*fn)(const job_record *j, void *u), void *u);
/* Jobs that were queued or running when the daemon stopped, oldest first. */
int store_unfinished_jobs(store *s, bool (*fn)(const job_record *j, void *u), void *u);
int store_count_jobs(store *s, uint64_t counts[JOB_STATUS_COUNT]);
/* Takes a succeeded job's result away (its blobs; the job stays, with
 * result_deleted_at = at): 0, HISTD_ENOENT when the job has no stored
 * result (then nothing changed), or HISTD_EIO. */
int store_delete_result(store *s, const char *id, double at, char *msg, size_t msglen);
/* Deletes finished jobs (succeeded, failed, cancelled) that finished
 * before `before` (wall-clock seconds); 0 and the number in *deleted. */
int store_expire_jobs(store *s, double before, uint64_t *deleted, char *msg, size_t msglen);
/* The migration to schema 8 (store_legacy.c): every result stored in the
 * columns of schema 7 and before, encoded as the result codec keeps it. */
struct sqlite3;
int store_legacy_results(struct sqlite3 *db, char **err);
/* A job's parameters from the JSON the table wrote (histd_params_write_json). */
void job_params_from_json(const char *text, histd_params *p);
/* A deep copy (parameters and result); 0 or HISTD_ENOMEM. */
int job_record_copy(job_record *dst, const job_record *src);
void job_record_free(job_record *j);

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

/* ---- loaded datasets (datasets.c) ------------------------------------------ */

typedef struct loaded_dataset loaded_dataset;
typedef struct dataset_cache dataset_cache;

int dataset_cache_create(dataset_cache **out, store *s);
void dataset_cache_destroy(dataset_cache *c);
/* Maps the payload (once; later callers share it) and checks its size and
 * hash. The histd_dataset is borrowed from the mapping. */
int dataset_acquire(dataset_cache *c, const char *id, loaded_dataset **out,
                    char *msg, size_t msglen);
/* A payload that is not in the store: another node's, at path in the
 * cluster's shared store (or its sparse cache), as meta describes it;
 * mapped shared and not hashed whole (the S3 backend checks each block it
 * fetches). The caller makes the bytes it reads present first. */
int dataset_acquire_file(dataset_cache *c, const dataset_meta *meta, const char *path,
                         loaded_dataset **out, char *msg, size_t msglen);
const histd_dataset *loaded_dataset_points(const loaded_dataset *d);
void dataset_release(dataset_cache *c, loaded_dataset *d);
/* Forgets a deleted dataset's verification. */
void dataset_cache_forget(dataset_cache *c, const char *id);

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

int jobs_start(jobs **out, struct service *svc, char *msg, size_t msglen);
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
bool jobs_on_gpu(jobs *q);
/* Long-poll: registers conn to be resumed when job `id` ends or at the
 * deadline; returns false (and does not suspend) when the job has ended. */
struct MHD_Connection;
/* Jobs newest first, from the store (or the cluster); fn returns false to stop. */
int jobs_list(jobs *q, size_t limit, bool (*fn)(const job_record *j, void *u), void *u);
bool jobs_wait(jobs *q, const char *id, struct MHD_Connection *conn, double deadline);
/* From the loop: resumes waiters whose job ended or whose deadline passed
 * (all of them when `all`). */
void jobs_resume_waiters(jobs *q, bool all);

/* ---- binding a job to its operands (jobs.c) ------------------------------ */

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
int job_bind(struct service *svc, const job_record *rec, loaded_dataset *d,
             dataset_getter get, void *u, job_binding *b, char *msg, size_t msglen);
void job_unbind(struct service *svc, job_binding *b);

/* ---- the cluster (cluster.c): PostgreSQL coordinates many nodes ---------- */

typedef struct cluster cluster;
struct uv_loop_s;
/* Connects, migrates the schema, opens the shared store (svc->cfg). */
int cluster_open(cluster **out, struct service *svc, char *msg, size_t msglen);
/* Starts the node's workers (one per GPU, else one CPU) and the lease renewer. */
int cluster_start(cluster *c, char *msg, size_t msglen);
/* LISTEN for cancels and new work on the loop's thread; unlisten before
 * the loop closes. */
void cluster_listen(cluster *c, struct uv_loop_s *loop);
void cluster_unlisten(cluster *c);
/* fn(u, job id) on the loop's thread when any node ends a job (long-polls). */
void cluster_on_job_end(cluster *c, void (*fn)(void *u, const char *job), void *u);
void cluster_stop(cluster *c); /* running shards go back to the queue */
void cluster_close(cluster *c);
const char *cluster_node(const cluster *c);
/* `histd migrate`: creates or upgrades the coordinator's schema. */
int cluster_migrate(const char *conninfo, char *msg, size_t msglen);
int cluster_submit(cluster *c, job_record *rec, char *msg, size_t msglen);
/* Queued or running jobs of the cluster on dataset (as A, B or topology). */
size_t cluster_active_on(cluster *c, const char *dataset);
int cluster_get_job(cluster *c, const char *id, job_record *j);
int cluster_cancel(cluster *c, const char *id, job_record *out, char *msg, size_t msglen);
int cluster_list_jobs(cluster *c, size_t limit, bool (*fn)(const job_record *j, void *u),
                      void *u);
/* A dataset stored here, shared and indexed for the other nodes. */
int cluster_publish_dataset(cluster *c, const dataset_meta *m, char *msg, size_t msglen);
/* The cluster's dataset id, fetched into this node's store when missing
 * (0, HISTD_ENOENT, HISTD_EIO). */
int cluster_find_dataset(cluster *c, const char *id, dataset_meta *m);
int cluster_list_datasets(cluster *c, size_t limit, bool (*fn)(const dataset_meta *m, void *u),
                          void *u);
int cluster_delete_dataset(cluster *c, const char *id, char *msg, size_t msglen);

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
int sync_pool_start(sync_pool **out, struct service *svc, char *msg, size_t msglen);
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
  cluster *cluster; /* NULL: one host (no --coordinator) */
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

/* Thread-safe: asks the loop to run jobs_resume_waiters soon. */
void service_wake(service *svc);

/* Thread-safe: a GPU hit a sticky CUDA error (HISTD_EGPULOST), which no
 * later CUDA call of this process can get past. /healthz turns 503 with
 * the reason and the daemon shuts down as on SIGTERM (running jobs stay
 * queued), exiting with status 75 so that its supervisor starts a fresh
 * process. The first reason is kept. */
void service_gpu_lost(service *svc, const char *reason);

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
