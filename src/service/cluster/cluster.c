/*
 * cluster.c -- many histd nodes, one PostgreSQL: the coordinator.
 *
 * With --coordinator, jobs and the index of datasets live in PostgreSQL
 * and every node answers the whole API from there; the node's own SQLite
 * store keeps only the datasets it has seen, as a cache. Nothing of this
 * is active without the flag.
 *
 * A job becomes shards (shard.c: block pairs of its points), one row each,
 * inserted in the job's transaction. Each worker (a GPU, or the CPU engine)
 * of every node claims the oldest queued shard it can run (the job's
 * `engine`: its kernel's, cpu, cuda or any), or one whose lease has
 * expired, with SELECT ... FOR UPDATE SKIP LOCKED, so two workers never
 * claim the same row, and nobody waits on a row somebody else holds. A
 * claim takes a lease (an expiry from the database's clock, never a node's)
 * and a fencing token (a sequence: every claim a larger number). A renewer
 * thread extends the leases of this node's running shards every lease / 4;
 * a renewal that finds the row no longer running under its token (the
 * lease expired and someone else claimed it, or the job was cancelled)
 * stops the run.
 *
 * Exactly once: a shard's partial is stored by the UPDATE that marks it
 * done, which matches the row only while status is running and the token
 * is the worker's own; a stale worker's UPDATE matches nothing and its
 * result is dropped. In the same transaction the job's shards_done is
 * incremented (the job's row lock orders concurrent completions), and the
 * transaction that completes the last shard reads every partial, checks
 * each against the pairs its block pair holds (histd_result_check), adds
 * them (histd_result_add) and stores the job's result. A commit whose
 * answer was lost (the database restarted) is retried: the retry matches
 * nothing if the first went through, so nothing is counted twice.
 *
 * A shard whose run fails goes back to the queue until it has been tried
 * max_attempts times (a claim counts as a try, so a shard whose nodes keep
 * dying counts too); then the job fails with the shard's sentence.
 * Cancelling marks the job and its unfinished shards cancelled and sends
 * NOTIFY histd_cancel; every node LISTENs on a connection whose socket is
 * in the libuv loop and stops its runs of that job at once (the renewal
 * would notice within a second anyway). NOTIFY histd_work wakes idle
 * workers when shards are queued; histd_done (and histd_cancel) carry the
 * ended job's id to every node's long-polls.
 *
 * Datasets: an upload is stored locally as always, published to the shared
 * store (shared_store.c: a shared directory or S3) under its content
 * address, and indexed in PostgreSQL. A node that lacks one answers for it
 * from the index, and its shards map it from the shared store, fetching
 * only the blocks they read ("views", below).
 *
 * Connections: libpq connections are not shared between threads, so each
 * worker, the renewer and the listener have their own, and the HTTP
 * threads share one under a mutex. A connection that broke (the database
 * restarted) is reset before its next use.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "bind.h"
#include "cluster.h"
#include "datasets.h"
#include "shared_store.h"
#include "store.h"
#include "util.h"

/* 2: histd_jobs.engine, the workers a job's shards may go to (claim_shard) */
#define SCHEMA_VERSION 2
#define TEXT_(v) #v
#define TEXT(v) TEXT_(v) /* a macro's value as a string literal */

typedef struct cluster cluster;

typedef struct cworker {
  cluster *c;
  pthread_t tid;
  bool started;
  histd_worker *engine;
  int device;
  uint32_t threads;
  const char *engines; /* the jobs' engines it claims shards of: a text[] literal */
  PGconn *db;
  /* the shard running now (guarded by c->mu): the renewer and the listener
   * stop it through `stop` */
  bool busy;
  char job[33];
  int64_t idx, token;
  atomic_bool stop;
} cworker;

struct cluster {
  backend_env env;
  backend_events ev; /* what the daemon is told (a job ended: its long-polls) */
  char conninfo[1024];
  char node[256];
  double lease_s;
  uint64_t shard_pairs;
  int max_attempts;
  shared_store *shared;
  PGconn *api; /* the HTTP threads' connection */
  pthread_mutex_t api_mu;
  pthread_mutex_t mu; /* workers' state; idle workers wait on cv */
  pthread_cond_t cv;
  atomic_bool stopping;
  cworker *workers;
  int nworkers;
  pthread_t renewer;
  bool renewer_started;
  PGconn *listen_db;
  uv_poll_t poll;
  uv_timer_t retry;
  bool listening;
};

static const char *const SCHEMA[] = {
    "CREATE TABLE IF NOT EXISTS histd_schema (version integer NOT NULL)",
    "CREATE TABLE IF NOT EXISTS histd_datasets ("
    " id text PRIMARY KEY, meta text NOT NULL, created_at double precision NOT NULL)",
    "CREATE TABLE IF NOT EXISTS histd_jobs ("
    " id text PRIMARY KEY, seq bigserial, dataset text NOT NULL, dataset_b text NOT NULL,"
    " n bigint NOT NULL, n_b bigint NOT NULL, params text NOT NULL, want bigint NOT NULL,"
    " status text NOT NULL, created_at double precision NOT NULL,"
    " started_at double precision NOT NULL DEFAULT 0,"
    " finished_at double precision NOT NULL DEFAULT 0, error text NOT NULL DEFAULT '',"
    " device text NOT NULL DEFAULT '', shards bigint NOT NULL,"
    " shards_done bigint NOT NULL DEFAULT 0, kernel_ms double precision NOT NULL DEFAULT 0,"
    " transfer_ms double precision NOT NULL DEFAULT 0, result bytea)",
    "CREATE TABLE IF NOT EXISTS histd_shards ("
    " job_id text NOT NULL REFERENCES histd_jobs(id) ON DELETE CASCADE, idx bigint NOT NULL,"
    " seq bigint NOT NULL, status text NOT NULL, token bigint NOT NULL DEFAULT 0,"
    " node text NOT NULL DEFAULT '', lease_until timestamptz, attempts integer NOT NULL"
    " DEFAULT 0, error text NOT NULL DEFAULT '', partial bytea, PRIMARY KEY (job_id, idx))",
    "CREATE INDEX IF NOT EXISTS histd_shards_open ON histd_shards (seq, idx)"
    " WHERE status IN ('queued', 'running')",
    /* version 2: which workers may run the job's shards (its kernel's
     * engine: cpu, cuda or any); jobs from version 1 take 'any' */
    "ALTER TABLE histd_jobs ADD COLUMN IF NOT EXISTS engine text NOT NULL DEFAULT 'any'",
    "CREATE SEQUENCE IF NOT EXISTS histd_fence",
};

/* ---- connections ------------------------------------------------------------------- */

static int pg_fail(PGconn *db, const PGresult *r, char *msg, size_t msglen, const char *what) {
  const char *e = r != NULL ? PQresultErrorMessage(r) : PQerrorMessage(db);
  char text[300];
  snprintf(text, sizeof text, "%s", e && *e ? e : "no answer");
  text[strcspn(text, "\n")] = 0;
  return histd_fail(msg, msglen, HISTD_EIO, "the coordinator could not %s: %s", what, text);
}

/* A usable connection: reset when it broke. */
static bool pg_ready(PGconn *db) {
  if (PQstatus(db) == CONNECTION_OK)
    return true;
  PQreset(db);
  return PQstatus(db) == CONNECTION_OK;
}

/* Runs sql with text parameters (NULL: SQL NULL; lens for binary ones);
 * the result, or NULL with msg. */
static PGresult *pg_exec(PGconn *db, const char *sql, int n, const char *const *v,
                         const int *lens, const int *bin, char *msg, size_t msglen,
                         const char *what) {
  if (!pg_ready(db)) {
    pg_fail(db, NULL, msg, msglen, what);
    return NULL;
  }
  const bool idle = PQtransactionStatus(db) == PQTRANS_IDLE;
  PGresult *r = PQexecParams(db, sql, n, NULL, v, lens, bin, 0);
  ExecStatusType st = PQresultStatus(r);
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK && idle &&
      PQstatus(db) == CONNECTION_BAD && pg_ready(db)) {
    /* the database restarted since the last use: once more on a fresh
     * connection (outside a transaction only: inside one, the caller's
     * earlier statements are gone, and it must start over) */
    PQclear(r);
    r = PQexecParams(db, sql, n, NULL, v, lens, bin, 0);
    st = PQresultStatus(r);
  }
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
    pg_fail(db, r, msg, msglen, what);
    PQclear(r);
    return NULL;
  }
  return r;
}

/* pg_exec on the HTTP threads' shared connection, under its mutex. */
static PGresult *api_exec(cluster *c, const char *sql, int n, const char *const *v, char *msg,
                          size_t msglen, const char *what) {
  pthread_mutex_lock(&c->api_mu);
  PGresult *r = pg_exec(c->api, sql, n, v, NULL, NULL, msg, msglen, what);
  pthread_mutex_unlock(&c->api_mu);
  return r;
}

static int pg_cmd(PGconn *db, const char *sql, char *msg, size_t msglen, const char *what) {
  PGresult *r = pg_exec(db, sql, 0, NULL, NULL, NULL, msg, msglen, what);
  PQclear(r);
  return r != NULL ? 0 : HISTD_EIO;
}

static PGconn *pg_connect(const char *conninfo, char *msg, size_t msglen) {
  PGconn *db = PQconnectdb(conninfo);
  if (PQstatus(db) != CONNECTION_OK) {
    pg_fail(db, NULL, msg, msglen, "be reached");
    PQfinish(db);
    return NULL;
  }
  PGresult *r = PQexec(db, "SET client_min_messages = warning");
  PQclear(r);
  return db;
}

static int migrate(PGconn *db, char *msg, size_t msglen) {
  /* one migration at a time, whichever node starts first */
  int rc = pg_cmd(db, "BEGIN", msg, msglen, "begin the migration");
  if (rc == 0)
    rc = pg_cmd(db, "SELECT pg_advisory_xact_lock(7346329)", msg, msglen, "lock the schema");
  for (size_t i = 0; rc == 0 && i < sizeof SCHEMA / sizeof *SCHEMA; i++)
    rc = pg_cmd(db, SCHEMA[i], msg, msglen, "create the schema");
  PGresult *r = rc == 0 ? pg_exec(db, "SELECT max(version) FROM histd_schema", 0, NULL, NULL,
                                  NULL, msg, msglen, "read the schema version")
                        : NULL;
  if (r != NULL) {
    int version = PQgetisnull(r, 0, 0) ? 0 : atoi(PQgetvalue(r, 0, 0));
    PQclear(r);
    if (version > SCHEMA_VERSION)
      rc = histd_fail(msg, msglen, HISTD_EINVAL,
                      "the coordinator's schema is version %d, newer than this histd's %d: "
                      "upgrade histd", version, SCHEMA_VERSION);
    else if (version < SCHEMA_VERSION)
      rc = pg_cmd(db, "DELETE FROM histd_schema", msg, msglen, "record the schema version");
    if (rc == 0 && version < SCHEMA_VERSION)
      rc = pg_cmd(db, "INSERT INTO histd_schema VALUES (" TEXT(SCHEMA_VERSION) ")", msg,
                  msglen, "record the schema version");
  } else if (rc == 0) {
    rc = HISTD_EIO;
  }
  rc = rc == 0 ? pg_cmd(db, "COMMIT", msg, msglen, "commit the migration") : rc;
  if (rc != 0) {
    PGresult *x = PQexec(db, "ROLLBACK");
    PQclear(x);
  }
  return rc;
}

int cluster_migrate(const char *conninfo, char *msg, size_t msglen) {
  PGconn *db = pg_connect(conninfo, msg, msglen);
  if (db == NULL)
    return HISTD_EIO;
  int rc = migrate(db, msg, msglen);
  PQfinish(db);
  return rc;
}

/* ---- text helpers ------------------------------------------------------------------ */

static char *params_text(const histd_params *p) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (f == NULL)
    return NULL;
  histd_params_write_json(f, p);
  fclose(f);
  return buf;
}

static void u64_text(char out[24], uint64_t v) { snprintf(out, 24, "%" PRIu64, v); }

static job_status status_from(const char *s) {
  for (int k = 0; k < JOB_STATUS_COUNT; k++)
    if (strcmp(s, job_status_name((job_status)k)) == 0)
      return (job_status)k;
  return JOB_FAILED;
}

/* ---- datasets ---------------------------------------------------------------------- */

static cJSON *meta_to_json(const dataset_meta *m) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "id", m->id);
  cJSON_AddNumberToObject(o, "n", (double)m->n);
  cJSON_AddStringToObject(o, "format", m->format);
  cJSON_AddStringToObject(o, "name", m->name);
  cJSON_AddNumberToObject(o, "created_at", m->created_at);
  cJSON_AddItemToObject(o, "min", cJSON_CreateDoubleArray(m->min, 3));
  cJSON_AddItemToObject(o, "max", cJSON_CreateDoubleArray(m->max, 3));
  cJSON_AddBoolToObject(o, "weighted", m->weighted);
  cJSON_AddNumberToObject(o, "frames", (double)m->frames);
  const double box[7] = {m->box.kind, m->box.ax, m->box.bx, m->box.by,
                         m->box.cx,   m->box.cy, m->box.cz};
  cJSON_AddItemToObject(o, "box", cJSON_CreateDoubleArray(box, 7));
  cJSON_AddNumberToObject(o, "topology", m->topology);
  cJSON_AddStringToObject(o, "atoms", m->atoms);
  cJSON_AddStringToObject(o, "unit", m->unit);
  return o;
}

static double num(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static void str(const cJSON *o, const char *k, char *out, size_t len) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  snprintf(out, len, "%s", cJSON_IsString(v) ? v->valuestring : "");
}

static void nums(const cJSON *o, const char *k, double *out, int n) {
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, k);
  for (int i = 0; i < n; i++) {
    const cJSON *v = cJSON_GetArrayItem(a, i);
    out[i] = cJSON_IsNumber(v) ? v->valuedouble : 0;
  }
}

static int meta_from_text(const char *text, dataset_meta *m) {
  cJSON *o = cJSON_Parse(text);
  if (o == NULL)
    return HISTD_EIO;
  memset(m, 0, sizeof *m);
  str(o, "id", m->id, sizeof m->id);
  m->n = (size_t)num(o, "n");
  str(o, "format", m->format, sizeof m->format);
  str(o, "name", m->name, sizeof m->name);
  m->created_at = num(o, "created_at");
  nums(o, "min", m->min, 3);
  nums(o, "max", m->max, 3);
  m->weighted = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "weighted"));
  m->frames = (size_t)num(o, "frames");
  double box[7];
  nums(o, "box", box, 7);
  m->box = (histd_box){(histd_box_kind)box[0], box[1], box[2], box[3], box[4], box[5], box[6]};
  m->topology = (unsigned)num(o, "topology");
  str(o, "atoms", m->atoms, sizeof m->atoms);
  str(o, "unit", m->unit, sizeof m->unit);
  cJSON_Delete(o);
  return 0;
}

static int cluster_publish_dataset(void *self, const dataset_meta *m, char *msg, size_t msglen) {
  cluster *c = self;
  char path[4400];
  store_payload_path(c->env.store, m->id, path, sizeof path);
  int rc = shared_store_put(c->shared, m->id, path, msg, msglen);
  if (rc != 0)
    return rc;
  cJSON *o = meta_to_json(m);
  char *text = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  char created[40];
  snprintf(created, sizeof created, "%.17g", m->created_at);
  const char *v[3] = {m->id, text, created};
  PGresult *r = api_exec(c,
                         "INSERT INTO histd_datasets (id, meta, created_at) VALUES ($1, $2, $3)"
                         " ON CONFLICT (id) DO NOTHING",
                         3, v, msg, msglen, "index the dataset");
  free(text);
  PQclear(r);
  return r != NULL ? 0 : HISTD_EIO;
}

/* The cluster's record of dataset id: 0, HISTD_ENOENT, or HISTD_EIO. */
static int indexed_meta(PGconn *db, const char *id, dataset_meta *m, char *msg,
                        size_t msglen) {
  const char *v[1] = {id};
  PGresult *r = pg_exec(db, "SELECT meta FROM histd_datasets WHERE id = $1", 1, v, NULL, NULL,
                        msg, msglen, "look the dataset up");
  if (r == NULL)
    return HISTD_EIO;
  int rc = PQntuples(r) == 0 ? HISTD_ENOENT : meta_from_text(PQgetvalue(r, 0, 0), m);
  PQclear(r);
  return rc;
}

/* The cluster's dataset id: the index's record (this node's own, when it
 * has it), its error set when the shared payload is missing or torn.
 * 0, HISTD_ENOENT (deleted: then gone here too), HISTD_EIO. */
static int find_dataset(cluster *c, PGconn *db, const char *id, dataset_meta *m) {
  char msg[256];
  int rc = indexed_meta(db, id, m, msg, sizeof msg);
  if (rc == HISTD_ENOENT) { /* deleted by another node: not here either */
    char ignored[64];
    dataset_meta local;
    if (store_get_dataset(c->env.store, id, &local) == 0)
      store_delete_dataset(c->env.store, id, ignored, sizeof ignored);
    return HISTD_ENOENT;
  }
  if (rc != 0)
    return rc;
  if (store_get_dataset(c->env.store, id, m) == 0) {
    store_check_payload(c->env.store, m);
    return 0;
  }
  uint64_t size = 0;
  int s = shared_store_size(c->shared, id, &size, msg, sizeof msg);
  if (s != 0 || size != dataset_payload_bytes(m))
    snprintf(m->error, sizeof m->error, "the shared payload is %.200s",
             s != 0 ? msg : "torn: its size does not match its points");
  return 0;
}

/* ---- datasets on a node that did not store them: views of the shared store ---- */

/*
 * A job's datasets on a node that lacks them are mapped from the shared
 * store (the shared file, or S3's sparse cache) and only the bytes a shard
 * reads are fetched: the tail (frame table, topology) when mapped, then
 * each frame's rows and columns of the shard. A job with selections,
 * another dataset's topology, exclusions or a frame slice reads its
 * operands whole as it binds them, so its datasets are fetched whole.
 */
typedef struct view_ctx {
  cluster *c;
  PGconn *db;
  bool whole;
} view_ctx;

static bool reads_whole(const histd_params *p) {
  return p->select_a[0] || p->select_b[0] || p->topology[0] || p->exclude_molecule ||
         p->has_frames;
}

/* dataset_getter: this node's copy, or a view of the shared store's. */
static int get_view(void *u, const char *id, loaded_dataset **out, char *msg, size_t msglen) {
  view_ctx *v = u;
  cluster *c = v->c;
  dataset_meta m;
  if (store_get_dataset(c->env.store, id, &m) == 0)
    return dataset_acquire(c->env.cache, id, out, msg, msglen);
  int rc = find_dataset(c, v->db, id, &m);
  if (rc != 0)
    return histd_fail(msg, msglen, rc == HISTD_ENOENT ? HISTD_ENOENT : HISTD_EIO,
                      "dataset %s is not in the cluster%s", id,
                      rc == HISTD_ENOENT ? " (deleted)" : "'s index (the coordinator is away)");
  if (m.error[0])
    return histd_fail(msg, msglen, HISTD_EIO, "dataset %.16s...: %s", id, m.error);
  const uint64_t bytes = dataset_payload_bytes(&m), points = 3 * (uint64_t)m.n * 8;
  const uint64_t tail = v->whole ? 0 : points + (m.weighted ? (uint64_t)m.n * 8 : 0);
  char path[4400];
  rc = shared_store_fetch(c->shared, id, tail, bytes - tail, path, sizeof path, msg, msglen);
  if (rc == 0)
    rc = dataset_acquire_file(c->env.cache, &m, path, out, msg, msglen);
  return rc;
}

/* Points [lo, hi) of every frame of ds (of n points in all, weighted or
 * not), fetched into the view. */
static int fetch_rows(cluster *c, const char *id, const histd_dataset *ds, uint64_t lo,
                      uint64_t hi, char *msg, size_t msglen) {
  char path[4400];
  const size_t frames = histd_dataset_frames(ds);
  const int arrays = ds->w != NULL ? 4 : 3;
  for (size_t f = 0; f < frames; f++) {
    const uint64_t start = frames == 1 ? 0 : ds->frame[f].start;
    const uint64_t n = frames == 1 ? ds->n : ds->frame[f].n;
    const uint64_t a = lo < n ? lo : n, b = hi < n ? hi : n;
    for (int k = 0; k < arrays && b > a; k++) {
      int rc = shared_store_fetch(c->shared, id, ((uint64_t)k * ds->n + start + a) * 8,
                                  (b - a) * 8, path, sizeof path, msg, msglen);
      if (rc != 0)
        return rc;
    }
  }
  return 0;
}

/* Makes shard sh's rows of A and columns of B (A's for self pairs) present
 * where they come from the shared store. */
static int fetch_shard(cluster *c, const job_record *rec, loaded_dataset *d,
                       const job_binding *b, const histd_shard *sh, char *msg, size_t msglen) {
  dataset_meta m;
  const bool cross = rec->dataset_b[0] != '\0';
  const bool a_view = store_get_dataset(c->env.store, rec->dataset, &m) != 0;
  const bool b_view = cross ? store_get_dataset(c->env.store, rec->dataset_b, &m) != 0 : a_view;
  int rc = a_view ? fetch_rows(c, rec->dataset, loaded_dataset_points(d), sh->i0, sh->i1, msg,
                               msglen)
                  : 0;
  if (rc == 0 && b_view) /* the columns: B's, or A's again for self pairs */
    rc = fetch_rows(c, cross ? rec->dataset_b : rec->dataset,
                    loaded_dataset_points(cross ? b->d_b : d), sh->j0, sh->j1, msg, msglen);
  return rc;
}

static int cluster_find_dataset(void *self, const char *id, dataset_meta *m) {
  cluster *c = self;
  pthread_mutex_lock(&c->api_mu);
  int rc = find_dataset(c, c->api, id, m);
  pthread_mutex_unlock(&c->api_mu);
  return rc;
}

static int cluster_list_datasets(void *self, size_t limit,
                                 bool (*fn)(const dataset_meta *m, void *u), void *u) {
  cluster *c = self;
  char msg[256], lim[24];
  u64_text(lim, limit);
  const char *v[1] = {lim};
  PGresult *r = api_exec(c, "SELECT meta FROM histd_datasets ORDER BY created_at DESC LIMIT $1",
                         1, v, msg, sizeof msg, "list the datasets");
  if (r == NULL)
    return HISTD_EIO;
  for (int i = 0; i < PQntuples(r); i++) {
    dataset_meta m;
    if (meta_from_text(PQgetvalue(r, i, 0), &m) == 0 && !fn(&m, u))
      break;
  }
  PQclear(r);
  return 0;
}

/* The index's row and the shared payload: 0, HISTD_ENOENT, HISTD_EIO. */
static int delete_shared(cluster *c, const char *id, char *msg, size_t msglen) {
  const char *v[1] = {id};
  PGresult *r = api_exec(c, "DELETE FROM histd_datasets WHERE id = $1 RETURNING 1", 1, v, msg,
                         msglen, "delete the dataset");
  if (r == NULL)
    return HISTD_EIO;
  const bool had = PQntuples(r) > 0;
  PQclear(r);
  if (!had)
    return HISTD_ENOENT;
  return shared_store_delete(c->shared, id, msg, msglen); /* (absent is 0: idempotent) */
}

/* The cluster's dataset, then this node's copy (a dataset only the
 * cluster has, never fetched here, is deleted all the same). */
static int cluster_delete_dataset(void *self, const char *id, char *msg, size_t msglen) {
  cluster *c = self;
  int shared = delete_shared(c, id, msg, msglen);
  int rc = shared == 0 || shared == HISTD_ENOENT
               ? store_delete_dataset(c->env.store, id, msg, msglen)
               : shared;
  if (rc == HISTD_ENOENT && shared == 0) /* the cluster's, never fetched here */
    rc = 0;
  return rc;
}

/* ---- jobs -------------------------------------------------------------------------- */

static size_t cluster_active_on(void *self, const char *dataset) {
  cluster *c = self;
  char msg[256];
  const char *v[1] = {dataset};
  PGresult *r = api_exec(c,
                         "SELECT count(*) FROM histd_jobs WHERE status IN ('queued', 'running')"
                         " AND (dataset = $1 OR dataset_b = $1"
                         " OR params::jsonb ->> 'topology' = $1)",
                         1, v, msg, sizeof msg, "count the dataset's jobs");
  size_t n = r != NULL ? (size_t)strtoull(PQgetvalue(r, 0, 0), NULL, 10) : 0;
  PQclear(r);
  return n;
}

#define JOB_COLUMNS                                                                          \
  "id, seq, dataset, dataset_b, n, n_b, params, status, created_at, started_at, finished_at," \
  " error, device, shards, shards_done, kernel_ms, transfer_ms, result"

static int row_to_job(PGresult *r, int i, job_record *j, char *msg, size_t msglen) {
  memset(j, 0, sizeof *j);
  snprintf(j->id, sizeof j->id, "%s", PQgetvalue(r, i, 0));
  j->seq = strtoll(PQgetvalue(r, i, 1), NULL, 10);
  snprintf(j->dataset, sizeof j->dataset, "%s", PQgetvalue(r, i, 2));
  snprintf(j->dataset_b, sizeof j->dataset_b, "%s", PQgetvalue(r, i, 3));
  j->n = (size_t)strtoull(PQgetvalue(r, i, 4), NULL, 10);
  j->n_b = (size_t)strtoull(PQgetvalue(r, i, 5), NULL, 10);
  job_params_from_json(PQgetvalue(r, i, 6), &j->params);
  j->status = status_from(PQgetvalue(r, i, 7));
  j->created_at = strtod(PQgetvalue(r, i, 8), NULL);
  j->started_at = strtod(PQgetvalue(r, i, 9), NULL);
  j->finished_at = strtod(PQgetvalue(r, i, 10), NULL);
  snprintf(j->error, sizeof j->error, "%s", PQgetvalue(r, i, 11));
  snprintf(j->device, sizeof j->device, "%s", PQgetvalue(r, i, 12));
  const double shards = strtod(PQgetvalue(r, i, 13), NULL);
  const double done = strtod(PQgetvalue(r, i, 14), NULL);
  j->progress = j->status == JOB_SUCCEEDED ? 1 : shards > 0 ? done / shards : 0;
  j->timing.kernel_ms = strtod(PQgetvalue(r, i, 15), NULL);
  j->timing.transfer_ms = strtod(PQgetvalue(r, i, 16), NULL);
  if (j->started_at > 0)
    j->timing.queue_ms = (j->started_at - j->created_at) * 1000.0;
  if (j->finished_at > 0 && j->started_at > 0)
    j->timing.total_ms = (j->finished_at - j->started_at) * 1000.0;
  if (!PQgetisnull(r, i, 17)) {
    size_t len;
    unsigned char *bytes = PQunescapeBytea((const unsigned char *)PQgetvalue(r, i, 17), &len);
    int rc = bytes != NULL ? histd_partial_decode(bytes, len, &j->result, msg, msglen)
                           : HISTD_ENOMEM;
    PQfreemem(bytes);
    if (rc != 0) {
      snprintf(j->error, sizeof j->error, "the stored result cannot be read: %s", msg);
      return HISTD_EIO;
    }
    j->result.timing = j->timing;
    j->has_result = true;
  }
  return 0;
}

static int get_job(PGconn *db, const char *id, job_record *j) {
  char msg[256];
  const char *v[1] = {id};
  PGresult *r = pg_exec(db, "SELECT " JOB_COLUMNS " FROM histd_jobs WHERE id = $1", 1, v, NULL,
                        NULL, msg, sizeof msg, "read the job");
  if (r == NULL)
    return HISTD_EIO;
  int rc = PQntuples(r) == 0 ? HISTD_ENOENT : row_to_job(r, 0, j, msg, sizeof msg);
  PQclear(r);
  return rc;
}

static int cluster_get_job(cluster *c, const char *id, job_record *j) {
  pthread_mutex_lock(&c->api_mu);
  int rc = get_job(c->api, id, j);
  pthread_mutex_unlock(&c->api_mu);
  return rc;
}

static int cluster_list_jobs(void *self, size_t limit,
                             bool (*fn)(const job_record *j, void *u), void *u) {
  cluster *c = self;
  char msg[256], lim[24];
  u64_text(lim, limit);
  const char *v[1] = {lim};
  PGresult *r = api_exec(c,
                         "SELECT id, seq, dataset, dataset_b, n, n_b, params, status, created_at,"
                         " started_at, finished_at, error, device, shards, shards_done,"
                         " kernel_ms, transfer_ms, NULL FROM histd_jobs ORDER BY seq DESC"
                         " LIMIT $1",
                         1, v, msg, sizeof msg, "list the jobs");
  if (r == NULL)
    return HISTD_EIO;
  for (int i = 0; i < PQntuples(r); i++) {
    job_record j;
    row_to_job(r, i, &j, msg, sizeof msg);
    bool more = fn(&j, u);
    job_record_free(&j);
    if (!more)
      break;
  }
  PQclear(r);
  return 0;
}

static int cluster_get(void *self, const char *id, job_record *j, bool arrays) {
  (void)arrays; /* (the row holds the result whole) */
  return cluster_get_job(self, id, j);
}

static int cluster_live(void *self, const char *id) {
  job_record j;
  if (cluster_get_job(self, id, &j) != 0)
    return -1; /* no row, or the coordinator is away */
  bool live = j.status == JOB_QUEUED || j.status == JOB_RUNNING;
  job_record_free(&j);
  return live;
}

/* The queue and the workers are the cluster's, not this host's. */
static size_t cluster_none(void *self) {
  (void)self;
  return 0;
}

static int cluster_no_workers(void *self) {
  (void)self;
  return 0;
}

/* How many shards a problem gets: about one per --shard-pairs pairs
 * compared (the grid compares only its cells' neighbours: histd_shard_work). */
static uint64_t shards_wanted(const cluster *c, const histd_problem *p, const char *kernel) {
  const uint64_t pairs = histd_shard_work(p, kernel);
  uint64_t want = pairs / c->shard_pairs + (pairs % c->shard_pairs != 0);
  return want < 1 ? 1 : want > 100000 ? 100000 : want;
}

static int cluster_submit(void *self, job_record *rec, char *msg, size_t msglen) {
  cluster *c = self;
  /* the plan: bind the job here, where its datasets are */
  loaded_dataset *d = NULL;
  view_ctx view = {c, c->api, reads_whole(&rec->params)};
  pthread_mutex_lock(&c->api_mu);
  int rc = get_view(&view, rec->dataset, &d, msg, msglen);
  job_binding b;
  if (rc == 0)
    rc = job_bind(c->env.cache, rec, d, get_view, &view, &b, msg, msglen);
  pthread_mutex_unlock(&c->api_mu);
  if (rc != 0) {
    dataset_release(c->env.cache, d);
    return rc;
  }
  const uint64_t want = shards_wanted(c, &b.prob, rec->params.exec.kernel);
  histd_shard_plan plan;
  histd_shard_plan_make(&b.prob, rec->params.exec.kernel, want, &plan);
  job_unbind(c->env.cache, &b);
  dataset_release(c->env.cache, d);

  char *params = params_text(&rec->params);
  char n[24], n_b[24], w[24], count[24], created[40];
  u64_text(n, rec->n);
  u64_text(n_b, rec->n_b);
  u64_text(w, want);
  u64_text(count, plan.count);
  snprintf(created, sizeof created, "%.17g", rec->created_at);
  const histd_kernel *k = histd_kernel_find(rec->params.exec.kernel);
  const char *engine = k == NULL || k->engine == HISTD_ENGINE_ANY ? "any"
                       : k->engine == HISTD_ENGINE_CUDA          ? "cuda"
                                                                 : "cpu";
  const char *v[10] = {rec->id, rec->dataset, rec->dataset_b, n, n_b, params ? params : "{}",
                       w, created, count, engine};
  pthread_mutex_lock(&c->api_mu);
  rc = pg_cmd(c->api, "BEGIN", msg, msglen, "begin the job");
  PGresult *r = rc == 0 ? pg_exec(c->api,
                                  "INSERT INTO histd_jobs (id, dataset, dataset_b, n, n_b,"
                                  " params, want, status, created_at, shards, engine)"
                                  " VALUES ($1,$2,$3,$4,$5,$6,$7,'queued',$8,$9,$10) RETURNING seq",
                                  10, v, NULL, NULL, msg, msglen, "store the job")
                        : NULL;
  if (r != NULL) {
    rec->seq = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    const char *s[3] = {rec->id, PQgetvalue(r, 0, 0), count};
    PGresult *x = pg_exec(c->api,
                          "INSERT INTO histd_shards (job_id, idx, seq, status)"
                          " SELECT $1, i, $2, 'queued' FROM generate_series(0, $3::bigint - 1) i",
                          3, s, NULL, NULL, msg, msglen, "store the job's shards");
    rc = x != NULL ? 0 : HISTD_EIO;
    PQclear(x);
    PQclear(r);
  } else if (rc == 0) {
    rc = HISTD_EIO;
  }
  if (rc == 0)
    rc = pg_cmd(c->api, "NOTIFY histd_work", msg, msglen, "announce the job");
  if (rc == 0)
    rc = pg_cmd(c->api, "COMMIT", msg, msglen, "commit the job");
  else
    PQclear(PQexec(c->api, "ROLLBACK"));
  pthread_mutex_unlock(&c->api_mu);
  free(params);
  return rc;
}

/* Marks job id and its open shards cancelled (or failed, with error) and
 * tells every node; 1 when it was still open. */
static int end_job(PGconn *db, const char *id, job_status status, const char *error,
                   char *msg, size_t msglen) {
  char finished[40];
  snprintf(finished, sizeof finished, "%.17g", wall_now());
  const char *v[4] = {id, job_status_name(status), error, finished};
  int rc = pg_cmd(db, "BEGIN", msg, msglen, "begin ending the job");
  PGresult *r = rc == 0 ? pg_exec(db,
                                  "UPDATE histd_jobs SET status = $2, error = $3,"
                                  " finished_at = $4 WHERE id = $1"
                                  " AND status IN ('queued', 'running') RETURNING 1",
                                  4, v, NULL, NULL, msg, msglen, "end the job")
                        : NULL;
  int open = r != NULL && PQntuples(r) > 0;
  PQclear(r);
  if (r == NULL)
    rc = HISTD_EIO;
  if (rc == 0 && open) {
    PGresult *x = pg_exec(db,
                          "UPDATE histd_shards SET status = 'cancelled' WHERE job_id = $1"
                          " AND status IN ('queued', 'running')",
                          1, v, NULL, NULL, msg, msglen, "end the job's shards");
    PQclear(x);
    rc = x != NULL ? 0 : HISTD_EIO;
    if (rc == 0) {
      x = pg_exec(db, "SELECT pg_notify('histd_cancel', $1)", 1, v, NULL, NULL, msg, msglen,
                  "announce the end");
      PQclear(x);
      rc = x != NULL ? 0 : HISTD_EIO;
    }
  }
  if (rc == 0)
    rc = pg_cmd(db, "COMMIT", msg, msglen, "commit the end");
  else
    PQclear(PQexec(db, "ROLLBACK"));
  return rc != 0 ? rc : open;
}

static int cluster_cancel(void *self, const char *id, job_record *out, char *msg, size_t msglen) {
  cluster *c = self;
  pthread_mutex_lock(&c->api_mu);
  int rc = end_job(c->api, id, JOB_CANCELLED, "the job was cancelled", msg, msglen);
  if (rc >= 0) /* ended now, or before, or never there: the row says (ENOENT) */
    rc = get_job(c->api, id, out);
  pthread_mutex_unlock(&c->api_mu);
  return rc;
}

/* ---- workers ----------------------------------------------------------------------- */

typedef struct claim {
  char job[33];
  int64_t idx, token;
  int attempts;
  char last_error[256];
} claim;

/* Claims the oldest open shard of a job whose engine is one of `engines`
 * (a text[] literal): 1 and *cl, 0 when there is none, or < 0. */
static int claim_shard(cluster *c, PGconn *db, const char *engines, claim *cl, char *msg,
                       size_t msglen) {
  char lease[32];
  snprintf(lease, sizeof lease, "%.3f", c->lease_s);
  const char *v[3] = {c->node, lease, engines};
  PGresult *r = pg_exec(
      db,
      "UPDATE histd_shards s SET status = 'running', token = nextval('histd_fence'),"
      " node = $1, lease_until = now() + make_interval(secs => $2::double precision),"
      " attempts = s.attempts + 1"
      " FROM (SELECT o.job_id, o.idx FROM histd_shards o JOIN histd_jobs j ON j.id = o.job_id"
      "   WHERE (o.status = 'queued' OR (o.status = 'running' AND o.lease_until < now()))"
      "   AND j.engine = ANY($3::text[])"
      "   ORDER BY o.seq, o.idx LIMIT 1 FOR UPDATE OF o SKIP LOCKED) o"
      " WHERE s.job_id = o.job_id AND s.idx = o.idx"
      " RETURNING s.job_id, s.idx, s.token, s.attempts, s.error",
      3, v, NULL, NULL, msg, msglen, "claim a shard");
  if (r == NULL)
    return HISTD_EIO;
  int got = PQntuples(r) > 0;
  if (got) {
    snprintf(cl->job, sizeof cl->job, "%s", PQgetvalue(r, 0, 0));
    cl->idx = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
    cl->token = strtoll(PQgetvalue(r, 0, 2), NULL, 10);
    cl->attempts = atoi(PQgetvalue(r, 0, 3));
    snprintf(cl->last_error, sizeof cl->last_error, "%s", PQgetvalue(r, 0, 4));
  }
  PQclear(r);
  if (got) {
    char now[40];
    snprintf(now, sizeof now, "%.17g", wall_now());
    const char *j[2] = {cl->job, now};
    PQclear(pg_exec(db,
                    "UPDATE histd_jobs SET status = 'running', started_at = $2"
                    " WHERE id = $1 AND status = 'queued'",
                    2, j, NULL, NULL, msg, msglen, "start the job"));
  }
  return got;
}

static bool run_cancelled(void *u) {
  cworker *w = u;
  return atomic_load(&w->stop) || atomic_load(&w->c->stopping);
}

/* All partials of job id, checked against their block pairs and added:
 * the job's result (its timing from the partials). */
static int merge(PGconn *db, const job_record *rec, const histd_problem *p,
                 const histd_shard_plan *plan, histd_result *sum, char *msg, size_t msglen) {
  const char *v[1] = {rec->id};
  PGresult *r = pg_exec(db,
                        "SELECT idx, partial FROM histd_shards WHERE job_id = $1"
                        " AND status = 'done' ORDER BY idx",
                        1, v, NULL, NULL, msg, msglen, "read the partials");
  if (r == NULL)
    return HISTD_EIO;
  int rc = (uint64_t)PQntuples(r) == plan->count
               ? 0
               : histd_fail(msg, msglen, HISTD_EIO, "%d of the job's %" PRIu64
                            " shards are done", PQntuples(r), plan->count);
  double *err = NULL;
  for (int i = 0; rc == 0 && i < PQntuples(r); i++) {
    size_t len;
    unsigned char *bytes = PQunescapeBytea((const unsigned char *)PQgetvalue(r, i, 1), &len);
    histd_result part;
    histd_shard sh;
    histd_shard_get(plan, (uint64_t)strtoll(PQgetvalue(r, i, 0), NULL, 10), &sh);
    rc = bytes ? histd_partial_decode(bytes, len, &part, msg, msglen) : HISTD_ENOMEM;
    PQfreemem(bytes);
    if (rc != 0)
      break;
    rc = histd_result_check(&part, &part.bins, histd_shard_pairs(p, &sh), msg, msglen);
    if (rc == 0 && i == 0) {
      rc = histd_result_copy(sum, &part);
      err = histd_result_add_errs(&part.bins);
      rc = rc == 0 && err == NULL ? HISTD_ENOMEM : rc;
    } else if (rc == 0) {
      rc = histd_result_add(sum, err, &part, msg, msglen);
    }
    histd_result_free(&part);
  }
  PQclear(r);
  if (rc == 0) {
    histd_result_add_done(sum, err);
    histd_job_label(&rec->params, sum);
  }
  free(err);
  return rc;
}

/* Commits a done shard's partial under its token, and when it was the
 * last, the job's result: 1 done, 0 stale (not ours any more), < 0 error. */
static int commit_shard(PGconn *db, const claim *cl, const job_record *rec,
                        const histd_problem *p, const histd_shard_plan *plan,
                        const unsigned char *bytes, size_t len, char *msg, size_t msglen) {
  char idx[24], token[24];
  snprintf(idx, sizeof idx, "%" PRId64, cl->idx);
  snprintf(token, sizeof token, "%" PRId64, cl->token);
  int rc = pg_cmd(db, "BEGIN", msg, msglen, "begin the shard's commit");
  const char *v[4] = {cl->job, idx, token, (const char *)bytes};
  const int lens[4] = {0, 0, 0, (int)len}, bin[4] = {0, 0, 0, 1};
  PGresult *r = rc == 0 ? pg_exec(db,
                                  "UPDATE histd_shards SET status = 'done', partial = $4,"
                                  " lease_until = NULL WHERE job_id = $1 AND idx = $2"
                                  " AND token = $3 AND status = 'running' RETURNING 1",
                                  4, v, lens, bin, msg, msglen, "store the partial")
                        : NULL;
  int ours = r != NULL && PQntuples(r) == 1;
  if (r == NULL)
    rc = HISTD_EIO;
  PQclear(r);
  bool last = false;
  if (rc == 0 && ours) {
    const char *j[1] = {cl->job};
    r = pg_exec(db,
                "UPDATE histd_jobs SET shards_done = shards_done + 1 WHERE id = $1"
                " AND status = 'running' RETURNING shards_done = shards",
                1, j, NULL, NULL, msg, msglen, "count the shard");
    if (r == NULL)
      rc = HISTD_EIO;
    else
      last = PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
    ours = r != NULL && PQntuples(r) == 1; /* a job ended meanwhile takes nothing */
    PQclear(r);
  }
  if (rc == 0 && last) {
    histd_result sum;
    char why[512];
    int m = merge(db, rec, p, plan, &sum, why, sizeof why);
    unsigned char *res = NULL;
    size_t res_len = 0;
    if (m == 0)
      m = histd_partial_encode(&sum, &res, &res_len, why, sizeof why);
    char finished[40], kernel[40], transfer[40], device[HISTD_DEVICE_NAME_MAX + 64];
    snprintf(finished, sizeof finished, "%.17g", wall_now());
    snprintf(kernel, sizeof kernel, "%.17g", m == 0 ? sum.timing.kernel_ms : 0);
    snprintf(transfer, sizeof transfer, "%.17g", m == 0 ? sum.timing.transfer_ms : 0);
    snprintf(device, sizeof device, "cluster: %" PRIu64 " shards; %s", plan->count,
             m == 0 ? sum.device : "");
    const char *f[7] = {cl->job, finished, (const char *)res, kernel, transfer, device,
                        m == 0 ? "" : why};
    const int fl[7] = {0, 0, (int)res_len, 0, 0, 0, 0}, fb[7] = {0, 0, 1, 0, 0, 0, 0};
    r = pg_exec(db,
                m == 0 ? "UPDATE histd_jobs SET status = 'succeeded', finished_at = $2,"
                         " result = $3, kernel_ms = $4, transfer_ms = $5, device = $6,"
                         " error = $7 WHERE id = $1"
                       : "UPDATE histd_jobs SET status = 'failed', finished_at = $2,"
                         " error = 'the partials could not be added: ' || $7 WHERE id = $1",
                7, f, fl, fb, msg, msglen, "store the job's result");
    rc = r != NULL ? 0 : HISTD_EIO;
    PQclear(r);
    if (rc == 0) {
      const char *n[1] = {cl->job};
      PGresult *x = pg_exec(db, "SELECT pg_notify('histd_done', $1)", 1, n, NULL, NULL, msg,
                            msglen, "announce the end");
      rc = x != NULL ? 0 : HISTD_EIO;
      PQclear(x);
    }
    free(res);
    if (m == 0)
      histd_result_free(&sum);
  }
  if (rc == 0)
    rc = pg_cmd(db, "COMMIT", msg, msglen, "commit the shard");
  else
    PQclear(PQexec(db, "ROLLBACK"));
  return rc != 0 ? rc : ours;
}

/* The shard ran into error: back to the queue, or after max_attempts the
 * job fails with it. */
static void shard_failed(cluster *c, PGconn *db, const claim *cl, const char *error) {
  char idx[24], token[24], max[24], msg[256];
  snprintf(idx, sizeof idx, "%" PRId64, cl->idx);
  snprintf(token, sizeof token, "%" PRId64, cl->token);
  snprintf(max, sizeof max, "%d", c->max_attempts);
  const char *v[5] = {cl->job, idx, token, error, max};
  PGresult *r = pg_exec(db,
                        "UPDATE histd_shards SET status = CASE WHEN attempts >= $5::int"
                        " THEN 'failed' ELSE 'queued' END, error = $4, lease_until = NULL"
                        " WHERE job_id = $1 AND idx = $2 AND token = $3"
                        " AND status = 'running' RETURNING status",
                        5, v, NULL, NULL, msg, sizeof msg, "record the shard's failure");
  bool failed = r != NULL && PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "failed") == 0;
  PQclear(r);
  if (failed) {
    char why[512];
    snprintf(why, sizeof why, "shard %" PRId64 " failed %d times; the last: %s", cl->idx,
             cl->attempts, error);
    end_job(db, cl->job, JOB_FAILED, why, msg, sizeof msg);
  }
}

/* Puts a shard this node gives up (the node stops) back in the queue. */
static void shard_release(PGconn *db, const claim *cl) {
  char idx[24], token[24], msg[256];
  snprintf(idx, sizeof idx, "%" PRId64, cl->idx);
  snprintf(token, sizeof token, "%" PRId64, cl->token);
  const char *v[3] = {cl->job, idx, token};
  PQclear(pg_exec(db,
                  "UPDATE histd_shards SET status = 'queued', lease_until = NULL,"
                  " attempts = attempts - 1 WHERE job_id = $1 AND idx = $2 AND token = $3"
                  " AND status = 'running'",
                  3, v, NULL, NULL, msg, sizeof msg, "release the shard"));
}

static void run_claim(cworker *w, const claim *cl, double t_claim) {
  cluster *c = w->c;
  char msg[512] = "";
  double t_bound = 0, t_run = 0, t_done = 0;
  const double t0 = histd_now_ms();
  job_record rec;
  int rc = get_job(w->db, cl->job, &rec);
  if (rc != 0) {
    shard_failed(c, w->db, cl, "the job's row cannot be read");
    return;
  }
  if (cl->attempts > c->max_attempts) { /* its nodes kept dying or stalling */
    snprintf(msg, sizeof msg, "its lease expired %d times (the node running it died or "
             "stalled)%s%s", cl->attempts - 1, cl->last_error[0] ? "; before that: " : "",
             cl->last_error);
    shard_failed(c, w->db, cl, msg);
    job_record_free(&rec);
    return;
  }
  loaded_dataset *d = NULL;
  view_ctx v = {c, w->db, reads_whole(&rec.params)};
  rc = get_view(&v, rec.dataset, &d, msg, sizeof msg);
  job_binding b;
  bool bound = false;
  if (rc == 0)
    bound = (rc = job_bind(c->env.cache, &rec, d, get_view, &v, &b, msg, sizeof msg)) == 0;
  histd_shard_plan plan;
  histd_result part;
  memset(&part, 0, sizeof part);
  if (rc == 0) {
    const char *id[1] = {rec.id};
    PGresult *r = pg_exec(w->db, "SELECT want, shards FROM histd_jobs WHERE id = $1", 1, id,
                          NULL, NULL, msg, sizeof msg, "read the plan");
    const bool row = r != NULL && PQntuples(r) == 1;
    uint64_t want = row ? strtoull(PQgetvalue(r, 0, 0), NULL, 10) : 0;
    uint64_t count = row ? strtoull(PQgetvalue(r, 0, 1), NULL, 10) : 0;
    PQclear(r);
    histd_shard_plan_make(&b.prob, rec.params.exec.kernel, want, &plan);
    if (!row || plan.count != count)
      rc = histd_fail(msg, sizeof msg, HISTD_EIO,
                      "node %s plans %" PRIu64 " shards where the job has %" PRIu64, c->node,
                      plan.count, count);
  }
  t_bound = histd_now_ms();
  if (rc == 0) {
    histd_shard sh;
    histd_shard_get(&plan, (uint64_t)cl->idx, &sh);
    if (!v.whole)
      rc = fetch_shard(c, &rec, d, &b, &sh, msg, sizeof msg);
    histd_exec ex = rec.params.exec;
    if (w->device < 0 && ex.threads == 0)
      ex.threads = w->threads;
    histd_control ctl = {NULL, run_cancelled, w, NULL};
    if (rc == 0)
      rc = histd_worker_run_shard(w->engine, &b.prob, &ex, &sh, &ctl, &part, msg, sizeof msg);
    if (rc == 0)
      rc = histd_result_check(&part, &part.bins, histd_shard_pairs(&b.prob, &sh), msg,
                              sizeof msg);
  }
  t_run = histd_now_ms();
  if (rc == 0) {
    unsigned char *bytes;
    size_t len;
    rc = histd_partial_encode(&part, &bytes, &len, msg, sizeof msg);
    /* the commit is retried while the database is away: its answer may be
     * lost after it went through, and a retry then matches nothing */
    for (int tries = 0; rc == 0 && !atomic_load(&c->stopping); tries++) {
      int done = commit_shard(w->db, cl, &rec, &b.prob, &plan, bytes, len, msg, sizeof msg);
      if (done >= 0)
        break;
      if (tries == 0 || tries % 10 == 0)
        fprintf(stderr, "histd: shard %s/%" PRId64 ": %s; retrying\n", cl->job, cl->idx, msg);
      sleep(1);
    }
    if (rc == 0)
      free(bytes);
  } else if (rc == HISTD_ECANCELED) {
    if (atomic_load(&c->stopping) && !atomic_load(&w->stop))
      shard_release(w->db, cl); /* this node stops: another takes it now */
    /* else lost its lease or the job ended: nothing to record */
  } else {
    shard_failed(c, w->db, cl, msg);
  }
  t_done = histd_now_ms();
  if (rc == 0) /* one line a shard: where its time went */
    fprintf(stderr,
            "histd: shard %s/%" PRId64 " on %s: claim %.1f ms, bind %.1f ms, run %.1f ms "
            "(kernel %.1f, transfer %.1f), commit %.1f ms\n",
            cl->job, cl->idx, c->node, t_claim, t_bound - t0, t_run - t_bound,
            part.timing.kernel_ms, part.timing.transfer_ms, t_done - t_run);
  histd_result_free(&part);
  if (bound)
    job_unbind(c->env.cache, &b);
  dataset_release(c->env.cache, d);
  job_record_free(&rec);
}

static void *worker_main(void *arg) {
  cworker *w = arg;
  cluster *c = w->c;
  while (!atomic_load(&c->stopping)) {
    claim cl;
    char msg[256];
    const double t0 = histd_now_ms();
    int got = claim_shard(c, w->db, w->engines, &cl, msg, sizeof msg);
    if (got > 0) {
      pthread_mutex_lock(&c->mu);
      w->busy = true;
      snprintf(w->job, sizeof w->job, "%s", cl.job);
      w->idx = cl.idx;
      w->token = cl.token;
      atomic_store(&w->stop, false);
      pthread_mutex_unlock(&c->mu);
      run_claim(w, &cl, histd_now_ms() - t0);
      pthread_mutex_lock(&c->mu);
      w->busy = false;
      pthread_mutex_unlock(&c->mu);
      continue;
    }
    if (got < 0)
      fprintf(stderr, "histd: %s\n", msg);
    /* nothing to do: wait for a NOTIFY, or look again in a second (an
     * expired lease announces nothing) */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 1;
    pthread_mutex_lock(&c->mu);
    if (!atomic_load(&c->stopping))
      pthread_cond_timedwait(&c->cv, &c->mu, &until);
    pthread_mutex_unlock(&c->mu);
  }
  return NULL;
}

/* Extends this node's leases every lease / 4; a shard no longer ours
 * (lease lost, job ended) is stopped. */
static void *renewer_main(void *arg) {
  cluster *c = arg;
  char msg[256];
  PGconn *db = pg_connect(c->conninfo, msg, sizeof msg);
  const double every = c->lease_s / 4 < 1 ? c->lease_s / 4 : 1;
  while (!atomic_load(&c->stopping)) {
    struct timespec nap = {(time_t)every, (long)((every - floor(every)) * 1e9)};
    nanosleep(&nap, NULL);
    if (db == NULL && (db = pg_connect(c->conninfo, msg, sizeof msg)) == NULL)
      continue;
    for (int i = 0; i < c->nworkers; i++) {
      cworker *w = &c->workers[i];
      pthread_mutex_lock(&c->mu);
      bool busy = w->busy;
      char job[33], idx[24], token[24], lease[32];
      snprintf(job, sizeof job, "%s", w->job);
      snprintf(idx, sizeof idx, "%" PRId64, w->idx);
      snprintf(token, sizeof token, "%" PRId64, w->token);
      pthread_mutex_unlock(&c->mu);
      if (!busy)
        continue;
      snprintf(lease, sizeof lease, "%.3f", c->lease_s);
      const char *v[4] = {job, idx, token, lease};
      PGresult *r = pg_exec(db,
                            "UPDATE histd_shards SET lease_until = now() +"
                            " make_interval(secs => $4::double precision)"
                            " WHERE job_id = $1 AND idx = $2 AND token = $3"
                            " AND status = 'running' RETURNING 1",
                            4, v, NULL, NULL, msg, sizeof msg, "renew a lease");
      if (r != NULL && PQntuples(r) == 0) { /* not ours any more */
        pthread_mutex_lock(&c->mu);
        if (w->busy && w->token == strtoll(token, NULL, 10))
          atomic_store(&w->stop, true);
        pthread_mutex_unlock(&c->mu);
      }
      PQclear(r);
    }
  }
  PQfinish(db);
  return NULL;
}

/* ---- LISTEN on the loop ------------------------------------------------------------ */

static void on_notify(uv_poll_t *h, int status, int events);

static void listen_again(uv_timer_t *t) {
  cluster *c = t->data;
  if (atomic_load(&c->stopping) || !pg_ready(c->listen_db))
    return; /* the timer tries again */
  PGresult *r = PQexec(c->listen_db, "LISTEN histd_cancel; LISTEN histd_work; LISTEN histd_done");
  /* (PQexec, not PQexecParams: several commands in one string) */
  bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
  PQclear(r);
  if (!ok)
    return;
  uv_timer_stop(&c->retry);
  uv_poll_init(uv_handle_get_loop((uv_handle_t *)t), &c->poll, PQsocket(c->listen_db));
  c->poll.data = c;
  uv_poll_start(&c->poll, UV_READABLE, on_notify);
  c->listening = true;
}

static void on_notify(uv_poll_t *h, int status, int events) {
  cluster *c = h->data;
  (void)events;
  if (status < 0 || !PQconsumeInput(c->listen_db) || PQstatus(c->listen_db) != CONNECTION_OK) {
    uv_poll_stop(&c->poll); /* the database went away: reconnect from a timer */
    uv_close((uv_handle_t *)&c->poll, NULL);
    c->listening = false;
    uv_timer_start(&c->retry, listen_again, 1000, 1000);
    return;
  }
  PGnotify *n;
  bool work = false;
  while ((n = PQnotifies(c->listen_db)) != NULL) {
    if (strcmp(n->relname, "histd_cancel") == 0) {
      pthread_mutex_lock(&c->mu);
      for (int i = 0; i < c->nworkers; i++)
        if (c->workers[i].busy && strcmp(c->workers[i].job, n->extra) == 0)
          atomic_store(&c->workers[i].stop, true);
      pthread_mutex_unlock(&c->mu);
    }
    if (c->ev.job_ended != NULL && strcmp(n->relname, "histd_work") != 0)
      c->ev.job_ended(c->ev.u, n->extra); /* histd_cancel and histd_done: the job ended */
    work = work || strcmp(n->relname, "histd_work") == 0;
    PQfreemem(n);
  }
  if (work) {
    pthread_mutex_lock(&c->mu);
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
  }
}

static void cluster_listen(void *self, uv_loop_t *loop) {
  cluster *c = self;
  char msg[256];
  c->listen_db = pg_connect(c->conninfo, msg, sizeof msg);
  uv_timer_init(loop, &c->retry);
  c->retry.data = c;
  if (c->listen_db == NULL)
    c->listen_db = PQconnectStart(c->conninfo); /* reset from the timer */
  listen_again(&c->retry);
  if (!c->listening)
    uv_timer_start(&c->retry, listen_again, 1000, 1000);
}

static void cluster_unlisten(void *self) {
  cluster *c = self;
  if (c->listening) {
    uv_poll_stop(&c->poll);
    uv_close((uv_handle_t *)&c->poll, NULL);
    c->listening = false;
  }
  uv_timer_stop(&c->retry);
  uv_close((uv_handle_t *)&c->retry, NULL);
}

/* ---- life -------------------------------------------------------------------------- */

static void cluster_stop(void *self);
static void cluster_close(void *self);

static int cluster_open(cluster **out, const backend_env *env, char *msg, size_t msglen) {
  cluster *c = calloc(1, sizeof *c);
  if (c == NULL)
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for the cluster");
  c->env = *env;
  const config *cfg = env->cfg;
  snprintf(c->conninfo, sizeof c->conninfo, "%s", cfg->coordinator);
  if (cfg->node_name[0]) {
    snprintf(c->node, sizeof c->node, "%s", cfg->node_name);
  } else {
    char host[200] = "localhost";
    gethostname(host, sizeof host - 1);
    snprintf(c->node, sizeof c->node, "%s:%u", host, (unsigned)cfg->listen_port);
  }
  c->lease_s = cfg->lease > 0 ? cfg->lease : 30;
  c->shard_pairs = cfg->shard_pairs > 0 ? cfg->shard_pairs : (uint64_t)20000000000ull;
  c->max_attempts = 3;
  pthread_mutex_init(&c->api_mu, NULL);
  pthread_mutex_init(&c->mu, NULL);
  pthread_cond_init(&c->cv, NULL);
  atomic_init(&c->stopping, false);
  char cache[4400];
  snprintf(cache, sizeof cache, "%s/shared-cache", cfg->data_dir);
  mkdir(cache, 0700);
  int rc = 0;
  if (!cfg->shared_store[0])
    rc = histd_fail(msg, msglen, HISTD_EINVAL,
                    "--coordinator needs --shared-store (a directory every node mounts, or "
                    "s3://BUCKET/PREFIX) for the datasets");
  else
    rc = shared_store_open(&c->shared, cfg->shared_store, cache, msg, msglen);
  if (rc == 0 && (c->api = pg_connect(c->conninfo, msg, msglen)) == NULL)
    rc = HISTD_EIO;
  if (rc == 0)
    rc = migrate(c->api, msg, msglen);
  if (rc != 0) {
    cluster_close(c);
    return rc;
  }
  *out = c;
  return 0;
}

static int cluster_start(void *self, const backend_events *ev, char *msg, size_t msglen) {
  cluster *c = self;
  c->ev = *ev;
  const int gpus = c->env.gpu_count;
  /* as a single daemon: a worker per GPU for the GPU's and "any" kernels'
   * shards, and one on the CPU for the CPU kernels' (on a node without a
   * GPU, for "any" too: a GPU node's CPU worker would make a slow straggler
   * of an "auto" shard) */
  c->nworkers = gpus + 1;
  c->workers = calloc((size_t)c->nworkers, sizeof *c->workers);
  if (c->workers == NULL)
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for the cluster's workers");
  for (int i = 0; i < c->nworkers; i++) {
    cworker *w = &c->workers[i];
    w->c = c;
    w->device = i < gpus ? c->env.gpus[i].index : -1;
    w->engines = i < gpus ? "{cuda,any}" : gpus > 0 ? "{cpu}" : "{cpu,any}";
    w->threads = histd_cpu_count();
    atomic_init(&w->stop, false);
    int rc = histd_worker_create(&w->engine, w->device, msg, msglen);
    if (rc == 0 && (w->db = pg_connect(c->conninfo, msg, msglen)) == NULL)
      rc = HISTD_EIO;
    if (rc == 0 && pthread_create(&w->tid, NULL, worker_main, w) != 0)
      rc = histd_fail(msg, msglen, HISTD_ENOMEM, "cannot start the cluster's workers");
    if (rc != 0) {
      cluster_stop(c);
      return rc;
    }
    w->started = true;
  }
  if (pthread_create(&c->renewer, NULL, renewer_main, c) != 0) {
    cluster_stop(c);
    return histd_fail(msg, msglen, HISTD_ENOMEM, "cannot start the lease renewer");
  }
  c->renewer_started = true;
  fprintf(stderr, "histd: cluster node %s: %d worker(s), lease %.3g s, coordinator up\n",
          c->node, c->nworkers, c->lease_s);
  return 0;
}

static void cluster_stop(void *self) {
  cluster *c = self;
  if (c == NULL)
    return;
  pthread_mutex_lock(&c->mu);
  atomic_store(&c->stopping, true);
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  for (int i = 0; i < c->nworkers; i++)
    if (c->workers[i].started) {
      pthread_join(c->workers[i].tid, NULL);
      c->workers[i].started = false;
    }
  if (c->renewer_started) {
    pthread_join(c->renewer, NULL);
    c->renewer_started = false;
  }
}

static void cluster_close(void *self) {
  cluster *c = self;
  if (c == NULL)
    return;
  cluster_stop(c);
  for (int i = 0; i < c->nworkers; i++) {
    histd_worker_destroy(c->workers[i].engine);
    PQfinish(c->workers[i].db);
  }
  free(c->workers);
  PQfinish(c->api);
  PQfinish(c->listen_db);
  shared_store_close(c->shared);
  pthread_cond_destroy(&c->cv);
  pthread_mutex_destroy(&c->mu);
  pthread_mutex_destroy(&c->api_mu);
  free(c);
}

static const backend_ops cluster_ops = {
    .name = "cluster",
    .start = cluster_start,
    .listen = cluster_listen,
    .unlisten = cluster_unlisten,
    .stop = cluster_stop,
    .close = cluster_close,
    .submit = cluster_submit,
    .get = cluster_get,
    .cancel = cluster_cancel,
    .list = cluster_list_jobs,
    .live = cluster_live,
    .active_on = cluster_active_on,
    .queue_depth = cluster_none,
    .running = cluster_none,
    .workers = cluster_no_workers,
    .delete_result = NULL, /* not in cluster mode yet (routes_jobs.c answers 501) */
    .dataset_publish = cluster_publish_dataset,
    .dataset_find = cluster_find_dataset,
    .dataset_list = cluster_list_datasets,
    .dataset_delete = cluster_delete_dataset,
};

int cluster_backend_open(backend *out, const backend_env *env, char *msg, size_t msglen) {
  cluster *c;
  int rc = cluster_open(&c, env, msg, msglen);
  if (rc != 0)
    return rc;
  out->ops = &cluster_ops;
  out->self = c;
  return 0;
}
