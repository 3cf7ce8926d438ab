/*
 * store.c -- durable storage: SQLite for metadata and results, one file per
 * dataset payload.
 *
 * Layout of the data dir:
 *
 *     histd.db (+ -wal, -shm)    datasets, jobs and their results
 *     payloads/<sha256>.f64      one per dataset: x[0..n) y[0..n) z[0..n),
 *                                then w[0..n) when weighted, then the frame
 *                                table when it has several frames or a box
 *                                (service.h), float64 little-endian, no
 *                                header, so it can be mmapped and handed to
 *                                the engine as is
 *
 * Payloads are written the classic atomic way: a temp file in the same
 * directory, write, fsync, rename over the final name, fsync the directory.
 * A crash leaves either no file or the whole file, never half of one; stale
 * temp files are swept at startup. The file is named by the SHA-256 of its
 * bytes, so the same points uploaded twice land on the same file and id, and
 * a reader can tell a corrupt file from a good one by hashing it again.
 * The row goes into SQLite after the file is durable: a crash in between
 * leaves an orphan file (harmless, reused by the next identical upload),
 * never a row without a file. Deletes go the other way round.
 *
 * SQLite runs in WAL mode. WAL lets readers (GETs) run while a worker
 * commits, and a kill -9 at any instant leaves the database consistent in
 * any synchronous mode. A 201 or 202 is a promise, so every state change
 * (submit, start, finish, cancel, upload, delete) is on disk before its
 * caller goes on -- but the fsync that makes it so is a group commit, not
 * SQLite's own: the connection runs with synchronous=NORMAL (a commit
 * writes its WAL frames and returns; SQLite still syncs around
 * checkpoints), and each writer, after its commit and outside the
 * connection's mutex, waits in durable() until an fdatasync of the WAL
 * file that began after its commit has returned. One writer syncs at a
 * time; everyone who committed before that sync began rides on it, so 50
 * clients submitting at once cost a few fsyncs, not 50 in a row, and no
 * reader (and no job-queue lock: jobs_local.c never calls the store under its
 * mutex) waits on the disk. One write does not wait: a job's 'running'
 * row (store_mark_job_running, which also counts the run in the job's
 * attempts), since losing it to a power cut only runs the job again, one
 * run more than --max-job-attempts allows; a crash or a kill -9 keeps it,
 * as the kernel has its WAL frames. Progress lives in memory only, never
 * in the database.
 *
 * Results are stored compactly, counts, weighted sums and per-frame tables
 * alike (result_codec.c: runs of zeros skipped, behind a version byte; the
 * raw blobs of older data dirs still read), and a result that would take
 * the data dir past --max-data-bytes is refused. Every byte counts: the
 * counts, weighted sums and per-frame tables alike, and a job's row (its
 * parameters: an explicit edges list may be long), each twice, since a
 * write lands in the WAL and again in the database at the checkpoint; the
 * WAL is cut back to WAL_KEEP_BYTES once checkpointed (journal_size_limit),
 * so that one large write does not hold its copy there for ever. A
 * deleted result (DELETE /v1/jobs/{id}/result) is overwritten with zeros
 * (secure_delete) and its pages go back to the budget: what the data dir
 * holds counts the database's pages in use, not its file, which SQLite
 * does not shrink, and the delete checkpoints the WAL that held the zeros.
 *
 * Writes go through one connection under one mutex: the daemon's writes
 * are a few per job, and a single connection keeps SQLite's threading
 * rules out of the picture. Reads do not take that mutex: each takes a
 * read-only connection of its own (reader_take: an idle one, or a new one;
 * READERS_KEPT stay open for the next), and WAL lets it read the last
 * commit while the writer writes. So a GET that reads and decodes a large
 * result holds up neither the workers' writes nor /readyz; a summary
 * (lists, ?summary=true) reads no blob at all.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json_util.h"
#include "sha256.h"
#include "store.h"
#include "util.h"

#define READERS_KEPT 16

struct store {
  sqlite3 *db;
  int lock_fd; /* flock on histd.lock: one daemon per data dir */
  pthread_mutex_t mu;
  /* Orders a payload's check-rename-insert (commit_dataset) against a
   * delete's row-then-unlink, so a delete cannot unlink the file that a
   * concurrent upload of the same points has just renamed into place. */
  pthread_mutex_t commit_mu;
  char dir[4096];
  char payload_dir[4200];
  char pairs_dir[4200]; /* pair lists: a file a PAIRS job, named by its id */
  /* group commit (durable()): commits made under mu, and the WAL synced */
  atomic_uint_fast64_t committed;
  pthread_mutex_t sync_mu;
  pthread_cond_t sync_cv;
  uint64_t synced;
  bool syncing;
  int wal_fd; /* -1 until the first sync opens it */
  /* read-only connections no reader is using now (reader_take) */
  pthread_mutex_t readers_mu;
  sqlite3 *idle[READERS_KEPT];
  int nidle;
  /* the disk budget (--max-data-bytes; 0: none) and the payloads' bytes,
   * and the most one result may take (--max-result-bytes; 0: any) */
  uint64_t max_bytes, max_result_bytes;
  atomic_uint_fast64_t payload_bytes;
};

static const char *const schema =
    "CREATE TABLE IF NOT EXISTS datasets ("
    "  id TEXT PRIMARY KEY, n INTEGER NOT NULL, format TEXT NOT NULL,"
    "  name TEXT NOT NULL DEFAULT '', created_at REAL NOT NULL,"
    "  minx REAL, miny REAL, minz REAL, maxx REAL, maxy REAL, maxz REAL,"
    "  error TEXT NOT NULL DEFAULT '', weighted INTEGER NOT NULL DEFAULT 0,"
    "  frames INTEGER NOT NULL DEFAULT 1, box TEXT NOT NULL DEFAULT '',"
    "  topology INTEGER NOT NULL DEFAULT 0, atoms TEXT NOT NULL DEFAULT '',"
    "  unit TEXT NOT NULL DEFAULT '', expires_at REAL NOT NULL DEFAULT 0,"
    "  growing INTEGER NOT NULL DEFAULT 0, sealed INTEGER NOT NULL DEFAULT 0,"
    "  sky INTEGER NOT NULL DEFAULT 0, omega_m REAL NOT NULL DEFAULT 0,"
    "  regions INTEGER NOT NULL DEFAULT 0);"
    "CREATE TABLE IF NOT EXISTS jobs ("
    "  seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE NOT NULL,"
    "  dataset TEXT NOT NULL, n INTEGER NOT NULL,"
    "  bucket_width REAL NOT NULL, buckets INTEGER NOT NULL, kernel TEXT NOT NULL,"
    "  block_size INTEGER NOT NULL, precision INTEGER NOT NULL,"
    "  threads INTEGER NOT NULL, devices INTEGER NOT NULL,"
    "  status INTEGER NOT NULL, progress REAL NOT NULL,"
    "  created_at REAL NOT NULL, started_at REAL NOT NULL, finished_at REAL NOT NULL,"
    "  t_queue REAL, t_parse REAL, t_transfer REAL, t_kernel REAL, t_total REAL,"
    "  device TEXT NOT NULL DEFAULT '', error TEXT NOT NULL DEFAULT '',"
    "  has_result INTEGER NOT NULL DEFAULT 0,"
    "  r_kernel TEXT, r_block_size INTEGER, r_threads INTEGER, r_exact INTEGER,"
    "  r_refined INTEGER, r_overflow INTEGER, r_total INTEGER, r_counts BLOB,"
    "  params TEXT, dataset_b TEXT NOT NULL DEFAULT '', n_b INTEGER NOT NULL DEFAULT 0,"
    "  r_below INTEGER NOT NULL DEFAULT 0, r_weighted BLOB,"
    "  r_frames INTEGER NOT NULL DEFAULT 1, r_volume REAL, r_box_source TEXT NOT NULL DEFAULT '',"
    "  r_reason TEXT NOT NULL DEFAULT '', r_excluded INTEGER NOT NULL DEFAULT 0,"
    "  r_n INTEGER, r_n_b INTEGER, r_per_frame BLOB, r_unit TEXT NOT NULL DEFAULT '',"
    "  attempts INTEGER NOT NULL DEFAULT 0, result_deleted_at REAL NOT NULL DEFAULT 0,"
    "  r_head BLOB, r_arrays BLOB, follow INTEGER NOT NULL DEFAULT 0);"
    "CREATE INDEX IF NOT EXISTS jobs_by_status ON jobs(status);"
    "CREATE INDEX IF NOT EXISTS jobs_by_dataset ON jobs(dataset, status);"
    "CREATE TABLE IF NOT EXISTS segments ("
    "  dataset TEXT NOT NULL, seq INTEGER NOT NULL, payload TEXT NOT NULL,"
    "  first_frame INTEGER NOT NULL, frames INTEGER NOT NULL, n INTEGER NOT NULL,"
    "  weighted INTEGER NOT NULL, box TEXT NOT NULL, topology INTEGER NOT NULL,"
    "  unit TEXT NOT NULL, minx REAL, miny REAL, minz REAL, maxx REAL, maxy REAL, maxz REAL,"
    "  bytes INTEGER NOT NULL, PRIMARY KEY (dataset, seq));"
    "CREATE INDEX IF NOT EXISTS segments_by_payload ON segments(payload);";

/*
 * Schema versions (PRAGMA user_version):
 *   0  histd 0.1 before the statistics family: a job's parameters in the
 *      columns bucket_width, buckets, kernel, block_size, precision,
 *      threads, devices; results with counts and overflow only.
 *   2  params (the job's parameters as the JSON of histd/params.h, the one
 *      truth; the old columns are still written, as a plain histogram's
 *      view of the job), dataset_b and n_b (A x B), r_below and r_weighted.
 *   3  datasets keep weights, boxes and frames: the columns weighted,
 *      frames and box (the first frame's: "kind ax bx by cx cy cz", '' for
 *      none), the payload's tail (service.h); results keep r_frames,
 *      r_volume (the volume that normalises g(r)) and r_box_source ("job"
 *      or "dataset"). A version-2 payload is a version-3 one of points
 *      only, so no file changes; a version-2 result's volume is its job's
 *      box's (r_volume NULL).
 *   4  results keep r_reason (why "auto" chose its kernel; '' before).
 *   5  datasets keep their atoms' topology (the column topology, the
 *      HISTD_TOP_* bits; the payload's tail gains the arrays: 0 before, so
 *      no file changes), atoms (atoms.c's summary) and unit (the file's
 *      length unit), '' before; results keep r_excluded (exclude molecule) and
 *      r_n, r_n_b (the atoms of A and B after selections; NULL before: the
 *      job's n and n_b) and r_per_frame (per_frame: a row a frame of the
 *      frame's pairs, its volume's float64 and its counts, 8 bytes each)
 *      and r_unit.
 *   6  jobs keep attempts: the runs that began and did not end, as the
 *      running row is written (0 before: a job running when a version-5
 *      daemon stopped has no crash counted yet, and gets its runs).
 *      r_weighted and r_per_frame are coded as r_counts is (result_codec.c;
 *      the raw blobs of before still read).
 *   7  jobs keep result_deleted_at: when DELETE /v1/jobs/{id}/result took
 *      a succeeded job's result away (its blobs NULL, has_result 0; 0:
 *      never).
 *   8  a result is what the result codec makes of it by the result schema
 *      (io's result_codec.c): r_head (its scalars) and r_arrays (its
 *      arrays), for results of every shape (per point, pair lists). The
 *      columns r_kernel ... r_unit and the blobs r_counts, r_weighted and
 *      r_per_frame are written no more: the migration reads each stored
 *      result of them (store_legacy.c, the only reader left), writes its
 *      r_head and r_arrays, and frees the old blobs.
 *   9  datasets keep expires_at: when the daemon deletes the dataset
 *      (POST /v1/datasets?expires=; 0, as before: never).
 *  10  growing datasets (POST /v1/datasets?growing=true, then POST
 *      /v1/datasets/{id}/frames): datasets keep growing and sealed (0
 *      before), and the table segments their payloads, one a row in the
 *      order their frames came (the upload's, then each append's), each a
 *      payload file of its own named by its hash like any other; jobs keep
 *      follow ("follow": true; 0 before).
 *  11  sky catalogues: datasets keep sky (1: the payload's tail holds ra,
 *      dec and dist, three float64 a point, after the topology), omega_m
 *      (the Omega_m that made the distances from redshifts; 0: given) and
 *      regions (K > 0: then the tail's last part is the region labels,
 *      int32 little-endian, two to each 8 bytes, the last 4 zero when n is
 *      odd); 0 before, so no file changes.
 * A data dir of any older version is migrated in place, in one transaction:
 * the new columns are added and (from 0) each job's params built from its
 * old columns.
 */
#define SCHEMA_VERSION 11
#define TEXT_OF_(x) #x
#define TEXT_OF(x) TEXT_OF_(x)
/* What the WAL keeps of its size once checkpointed (SQLite's
 * journal_size_limit): about one auto-checkpoint's worth. */
#define WAL_KEEP_BYTES 4194304
static const char *const migrate_5_to_6 =
    "ALTER TABLE jobs ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;";
static const char *const migrate_6_to_7 =
    "ALTER TABLE jobs ADD COLUMN result_deleted_at REAL NOT NULL DEFAULT 0;";
static const char *const migrate_8_to_9 =
    "ALTER TABLE datasets ADD COLUMN expires_at REAL NOT NULL DEFAULT 0;";
static const char *const migrate_9_to_10 =
    "ALTER TABLE datasets ADD COLUMN growing INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE datasets ADD COLUMN sealed INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN follow INTEGER NOT NULL DEFAULT 0;";
static const char *const migrate_10_to_11 =
    "ALTER TABLE datasets ADD COLUMN sky INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE datasets ADD COLUMN omega_m REAL NOT NULL DEFAULT 0;"
    "ALTER TABLE datasets ADD COLUMN regions INTEGER NOT NULL DEFAULT 0;";
static const char *const expiry_index =
    "CREATE INDEX IF NOT EXISTS datasets_by_expiry ON datasets(expires_at) WHERE expires_at > 0;";
static const char *const migrate_7_to_8 =
    "ALTER TABLE jobs ADD COLUMN r_head BLOB;"
    "ALTER TABLE jobs ADD COLUMN r_arrays BLOB;";
static const char *const migrate_4_to_5 =
    "ALTER TABLE datasets ADD COLUMN topology INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE datasets ADD COLUMN atoms TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE datasets ADD COLUMN unit TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE jobs ADD COLUMN r_excluded INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN r_n INTEGER;"
    "ALTER TABLE jobs ADD COLUMN r_n_b INTEGER;"
    "ALTER TABLE jobs ADD COLUMN r_per_frame BLOB;"
    "ALTER TABLE jobs ADD COLUMN r_unit TEXT NOT NULL DEFAULT '';";
static const char *const migrate_3_to_4 =
    "ALTER TABLE jobs ADD COLUMN r_reason TEXT NOT NULL DEFAULT '';";
static const char *const migrate_2_to_3 =
    "ALTER TABLE datasets ADD COLUMN weighted INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE datasets ADD COLUMN frames INTEGER NOT NULL DEFAULT 1;"
    "ALTER TABLE datasets ADD COLUMN box TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE jobs ADD COLUMN r_frames INTEGER NOT NULL DEFAULT 1;"
    "ALTER TABLE jobs ADD COLUMN r_volume REAL;"
    "ALTER TABLE jobs ADD COLUMN r_box_source TEXT NOT NULL DEFAULT '';";
static const char *const migrate_0_to_2 =
    "ALTER TABLE jobs ADD COLUMN params TEXT;"
    "ALTER TABLE jobs ADD COLUMN dataset_b TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE jobs ADD COLUMN n_b INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN r_below INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN r_weighted BLOB;"
    "UPDATE jobs SET params = json_patch(json_patch(json_patch("
    "  json_object('bucket_width', bucket_width, 'buckets', buckets, 'kernel', kernel,"
    "              'precision', CASE precision WHEN 1 THEN 'fast' ELSE 'exact' END),"
    "  CASE WHEN block_size > 0 THEN json_object('block_size', block_size) ELSE '{}' END),"
    "  CASE WHEN threads > 0 THEN json_object('threads', threads) ELSE '{}' END),"
    "  CASE WHEN devices > 0 THEN json_object('devices', json('[' || ("
    "    WITH RECURSIVE bit(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM bit WHERE i < 62)"
    "    SELECT group_concat(i) FROM bit WHERE (devices >> i) & 1) || ']')) ELSE '{}' END);";

static bool has_column(sqlite3 *db, const char *table, const char *column) {
  sqlite3_stmt *st;
  bool has = false;
  if (sqlite3_prepare_v2(db, "SELECT 1 FROM pragma_table_info(?) WHERE name = ?", -1, &st,
                         NULL) == SQLITE_OK) {
    sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, column, -1, SQLITE_STATIC);
    has = sqlite3_step(st) == SQLITE_ROW;
  }
  sqlite3_finalize(st);
  return has;
}

/* Brings the database to SCHEMA_VERSION. A fresh one is created at it. */
static int schema_migrate(sqlite3 *db, char **err) {
  sqlite3_stmt *st;
  int version = -1;
  if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW)
    version = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  if (version == SCHEMA_VERSION)
    return SQLITE_OK;
  if (version > SCHEMA_VERSION) {
    *err = sqlite3_mprintf("the data dir was written by a newer histd (schema %d; this one "
                           "reads up to %d)", version, SCHEMA_VERSION);
    return SQLITE_ERROR;
  }
  /* version 0 (a fresh database, made above with every column, or 0.1's)
   * or 2: add what is missing */
  bool has_params = has_column(db, "jobs", "params");
  bool has_frames = has_column(db, "datasets", "frames");
  bool has_reason = has_column(db, "jobs", "r_reason");
  bool has_topology = has_column(db, "datasets", "topology");
  bool has_attempts = has_column(db, "jobs", "attempts");
  bool has_deleted = has_column(db, "jobs", "result_deleted_at");
  bool has_head = has_column(db, "jobs", "r_head");
  bool has_expiry = has_column(db, "datasets", "expires_at");
  bool has_growing = has_column(db, "datasets", "growing");
  bool has_sky = has_column(db, "datasets", "sky");
  int rc = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, err);
  if (rc == SQLITE_OK && !has_params)
    rc = sqlite3_exec(db, migrate_0_to_2, NULL, NULL, err);
  if (rc == SQLITE_OK && !has_frames)
    rc = sqlite3_exec(db, migrate_2_to_3, NULL, NULL, err);
  if (rc == SQLITE_OK && !has_reason)
    rc = sqlite3_exec(db, migrate_3_to_4, NULL, NULL, err);
  if (rc == SQLITE_OK && !has_topology)
    rc = sqlite3_exec(db, migrate_4_to_5, NULL, NULL, err);
  if (rc == SQLITE_OK && !has_attempts)
    rc = sqlite3_exec(db, migrate_5_to_6, NULL, NULL, err);
  if (rc == SQLITE_OK && !has_deleted)
    rc = sqlite3_exec(db, migrate_6_to_7, NULL, NULL, err);
  if (rc == SQLITE_OK && !has_head)
    rc = sqlite3_exec(db, migrate_7_to_8, NULL, NULL, err);
  if (rc == SQLITE_OK && !has_expiry)
    rc = sqlite3_exec(db, migrate_8_to_9, NULL, NULL, err);
  if (rc == SQLITE_OK && !has_growing)
    rc = sqlite3_exec(db, migrate_9_to_10, NULL, NULL, err);
  if (rc == SQLITE_OK && !has_sky)
    rc = sqlite3_exec(db, migrate_10_to_11, NULL, NULL, err);
  if (rc == SQLITE_OK) /* (a fresh database has the column, not yet the index) */
    rc = sqlite3_exec(db, expiry_index, NULL, NULL, err);
  if (rc == SQLITE_OK)
    rc = store_legacy_results(db, err);
  if (rc == SQLITE_OK)
    rc = sqlite3_exec(db, "PRAGMA user_version = " TEXT_OF(SCHEMA_VERSION) "; COMMIT", NULL, NULL,
                      err);
  else
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
  return rc;
}

static int fsync_dir(const char *dir);

/* A read-only connection for one read (an idle one, else a new one), or
 * NULL when the database cannot be opened; reader_give hands it back. */
static sqlite3 *reader_take(store *s) {
  pthread_mutex_lock(&s->readers_mu);
  sqlite3 *db = s->nidle > 0 ? s->idle[--s->nidle] : NULL;
  pthread_mutex_unlock(&s->readers_mu);
  if (db != NULL)
    return db;
  char path[4300];
  snprintf(path, sizeof path, "%s/histd.db", s->dir);
  if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) !=
      SQLITE_OK) {
    sqlite3_close(db);
    return NULL;
  }
  sqlite3_busy_timeout(db, 5000);
  sqlite3_exec(db, "PRAGMA cache_size=-1024", NULL, NULL, NULL); /* 1 MiB a reader */
  return db;
}

static void reader_give(store *s, sqlite3 *db) {
  if (db == NULL)
    return;
  pthread_mutex_lock(&s->readers_mu);
  if (s->nidle < READERS_KEPT) {
    s->idle[s->nidle++] = db;
    db = NULL;
  }
  pthread_mutex_unlock(&s->readers_mu);
  sqlite3_close(db);
}

static int db_fail(store *s, char *msg, size_t msglen, const char *what) {
  return histd_fail(msg, msglen, HISTD_EIO, "the database could not %s: %s", what,
                    sqlite3_errmsg(s->db));
}

/* After a commit numbered seq (s->committed, taken under s->mu): returns
 * once the WAL has been fdatasync'ed by a sync that began after that
 * commit; one thread syncs, the others wait for it or the next. */
static int durable(store *s, uint64_t seq, char *msg, size_t msglen) {
  pthread_mutex_lock(&s->sync_mu);
  int rc = 0;
  while (s->synced < seq && rc == 0) {
    if (s->syncing) {
      pthread_cond_wait(&s->sync_cv, &s->sync_mu);
      continue;
    }
    s->syncing = true;
    pthread_mutex_unlock(&s->sync_mu);
    uint64_t upto = atomic_load(&s->committed); /* their frames are written */
    int e = 0;
    if (s->wal_fd < 0) {
      char path[4300];
      snprintf(path, sizeof path, "%s/histd.db-wal", s->dir);
      s->wal_fd = open(path, O_RDONLY | O_CLOEXEC);
      if (s->wal_fd < 0 || fsync_dir(s->dir) != 0) /* the file's name, once */
        e = errno;
    }
    if (e == 0 && fdatasync(s->wal_fd) != 0)
      e = errno;
    pthread_mutex_lock(&s->sync_mu);
    s->syncing = false;
    if (e == 0 && upto > s->synced)
      s->synced = upto;
    pthread_cond_broadcast(&s->sync_cv);
    if (e != 0)
      rc = histd_fail(msg, msglen, HISTD_EIO, "the database could not be synced to disk: %s",
                      strerror(e));
  }
  pthread_mutex_unlock(&s->sync_mu);
  return rc;
}

static int fsync_dir(const char *dir) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY);
  if (fd < 0)
    return -1;
  int rc = fsync(fd);
  close(fd);
  return rc;
}

static int mkdir_p(const char *path) {
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s", path);
  for (char *p = tmp + 1; *p; p++) {
    if (*p == '/') {
      *p = '\0';
      if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
        return -1;
      *p = '/';
    }
  }
  if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
    return -1;
  return 0;
}

/* The bytes of the regular files in dir. */
static uint64_t dir_bytes(const char *dir) {
  DIR *d = opendir(dir);
  if (d == NULL)
    return 0;
  uint64_t sum = 0;
  struct dirent *e;
  struct stat sb;
  while ((e = readdir(d)) != NULL)
    if (fstatat(dirfd(d), e->d_name, &sb, 0) == 0 && S_ISREG(sb.st_mode))
      sum += (uint64_t)sb.st_size;
  closedir(d);
  return sum;
}

static uint64_t file_bytes(const char *dir, const char *name) {
  char path[4300];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  struct stat sb;
  return stat(path, &sb) == 0 ? (uint64_t)sb.st_size : 0;
}

void store_set_limits(store *s, uint64_t max_bytes, uint64_t max_result_bytes) {
  s->max_bytes = max_bytes;
  s->max_result_bytes = max_result_bytes;
}

int store_room(store *s, const char *what, uint64_t bytes, char *msg, size_t msglen) {
  const uint64_t held = store_data_bytes(s);
  if (s->max_bytes == 0 || (held <= s->max_bytes && 2 * bytes <= s->max_bytes - held))
    return 0;
  return histd_fail(msg, msglen, HISTD_ETOOBIG,
                    "%s (%llu bytes, written twice: to the database's log, then the database) "
                    "would take the data dir past its budget of %llu bytes (--max-data-bytes; "
                    "%llu are in use)",
                    what, (unsigned long long)bytes, (unsigned long long)s->max_bytes,
                    (unsigned long long)held);
}

/* The database's pages in use: its file less the free pages that deletes
 * left (a deleted result, expired jobs), which later writes take before
 * the file grows. */
static uint64_t db_used_bytes(store *s) {
  sqlite3 *db = reader_take(s);
  sqlite3_stmt *st;
  uint64_t used = 0;
  bool known = false;
  if (db != NULL &&
      sqlite3_prepare_v2(db,
                         "SELECT (page_count - freelist_count) * page_size FROM "
                         "pragma_page_count, pragma_freelist_count, pragma_page_size",
                         -1, &st, NULL) == SQLITE_OK) {
    if (sqlite3_step(st) == SQLITE_ROW) {
      used = (uint64_t)sqlite3_column_int64(st, 0);
      known = true;
    }
    sqlite3_finalize(st);
  }
  reader_give(s, db);
  return known ? used : file_bytes(s->dir, "histd.db");
}

uint64_t store_data_bytes(store *s) {
  return atomic_load(&s->payload_bytes) + db_used_bytes(s) + file_bytes(s->dir, "histd.db-wal");
}

static void sweep_temp_files(const char *dir) {
  DIR *d = opendir(dir);
  if (d == NULL)
    return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    size_t l = strlen(e->d_name);
    if (l > 4 && strcmp(e->d_name + l - 4, ".tmp") == 0)
      unlinkat(dirfd(d), e->d_name, 0);
  }
  closedir(d);
}

int store_open(store **out, const char *data_dir, char *msg, size_t msglen) {
  store *s = calloc(1, sizeof *s);
  if (s == NULL)
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for the store");
  pthread_mutex_init(&s->mu, NULL);
  pthread_mutex_init(&s->commit_mu, NULL);
  pthread_mutex_init(&s->sync_mu, NULL);
  pthread_mutex_init(&s->readers_mu, NULL);
  pthread_cond_init(&s->sync_cv, NULL);
  s->wal_fd = -1;
  snprintf(s->dir, sizeof s->dir, "%s", data_dir);
  snprintf(s->payload_dir, sizeof s->payload_dir, "%s/payloads", data_dir);
  if (mkdir_p(s->payload_dir) != 0) {
    int e = errno;
    free(s);
    return histd_fail(msg, msglen, HISTD_EIO, "cannot create the data dir %s: %s", data_dir,
                      strerror(e));
  }
  /* Two daemons on one data dir would both requeue the same jobs. */
  char lock_path[4300];
  snprintf(lock_path, sizeof lock_path, "%s/histd.lock", data_dir);
  s->lock_fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (s->lock_fd < 0 || flock(s->lock_fd, LOCK_EX | LOCK_NB) != 0) {
    int e = errno;
    if (s->lock_fd >= 0)
      close(s->lock_fd);
    free(s);
    return histd_fail(msg, msglen, HISTD_EIO, "%s is in use by another histd (%s)", data_dir,
                      e == EWOULDBLOCK ? "its lock is held" : strerror(e));
  }
  snprintf(s->pairs_dir, sizeof s->pairs_dir, "%s/pairs", data_dir);
  if (mkdir_p(s->pairs_dir) != 0) {
    int e = errno;
    close(s->lock_fd);
    free(s);
    return histd_fail(msg, msglen, HISTD_EIO, "cannot create %s/pairs: %s", data_dir,
                      strerror(e));
  }
  sweep_temp_files(s->payload_dir);
  sweep_temp_files(s->pairs_dir);
  /* the files' bytes: payloads and pair lists */
  atomic_init(&s->payload_bytes, dir_bytes(s->payload_dir) + dir_bytes(s->pairs_dir));
  char path[4300];
  snprintf(path, sizeof path, "%s/histd.db", data_dir);
  if (sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                                         SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
    int rc = histd_fail(msg, msglen, HISTD_EIO, "cannot open %s: %s", path,
                        s->db ? sqlite3_errmsg(s->db) : "out of memory");
    sqlite3_close(s->db);
    close(s->lock_fd);
    free(s);
    return rc;
  }
  sqlite3_busy_timeout(s->db, 5000);
  char *err = NULL;
  if (sqlite3_exec(s->db,
                   "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA secure_delete=ON; "
                   "PRAGMA journal_size_limit=" TEXT_OF(WAL_KEEP_BYTES) ";",
                   NULL, NULL, &err) != SQLITE_OK ||
      sqlite3_exec(s->db, schema, NULL, NULL, &err) != SQLITE_OK ||
      schema_migrate(s->db, &err) != SQLITE_OK) {
    int rc = histd_fail(msg, msglen, HISTD_EIO, "cannot set up %s: %s", path,
                        err ? err : "unknown error");
    sqlite3_free(err);
    sqlite3_close(s->db);
    close(s->lock_fd);
    free(s);
    return rc;
  }
  *out = s;
  return 0;
}

void store_close(store *s) {
  if (s == NULL)
    return;
  while (s->nidle > 0)
    sqlite3_close(s->idle[--s->nidle]);
  pthread_mutex_destroy(&s->readers_mu);
  sqlite3_close(s->db);
  if (s->wal_fd >= 0)
    close(s->wal_fd);
  close(s->lock_fd);
  pthread_cond_destroy(&s->sync_cv);
  pthread_mutex_destroy(&s->sync_mu);
  pthread_mutex_destroy(&s->commit_mu);
  pthread_mutex_destroy(&s->mu);
  free(s);
}

const char *store_payload_dir(const store *s) { return s->payload_dir; }

/* ---- pair lists ------------------------------------------------------------ */

static void pairs_path(const store *s, const char *job, const char *suffix, char *path,
                       size_t len) {
  snprintf(path, len, "%s/%s%s", s->pairs_dir, job, suffix);
}

int store_pairs_temp(store *s, const char *job, int *fd, char *msg, size_t msglen) {
  char path[4400];
  pairs_path(s, job, ".tmp", path, sizeof path);
  *fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (*fd < 0)
    return histd_fail(msg, msglen, HISTD_EIO, "cannot create the pair list's file: %s",
                      strerror(errno));
  return 0;
}

int store_pairs_keep(store *s, const char *job, int fd, bool keep, char *msg, size_t msglen) {
  char tmp[4400], path[4400];
  pairs_path(s, job, ".tmp", tmp, sizeof tmp);
  pairs_path(s, job, "", path, sizeof path);
  struct stat sb;
  int rc = 0;
  if (keep && (fsync(fd) != 0 || fstat(fd, &sb) != 0 || rename(tmp, path) != 0 ||
               fsync_dir(s->pairs_dir) != 0))
    rc = histd_fail(msg, msglen, HISTD_EIO, "cannot keep the pair list's file: %s",
                    strerror(errno));
  close(fd);
  if (!keep || rc != 0)
    unlink(tmp);
  else
    atomic_fetch_add(&s->payload_bytes, (uint64_t)sb.st_size);
  return rc;
}

int store_pairs_open(store *s, const char *job) {
  char path[4400];
  pairs_path(s, job, "", path, sizeof path);
  return open(path, O_RDONLY | O_CLOEXEC);
}

void store_pairs_drop(store *s, const char *job) {
  char path[4400];
  pairs_path(s, job, "", path, sizeof path);
  struct stat sb;
  if (stat(path, &sb) == 0 && unlink(path) == 0)
    atomic_fetch_sub(&s->payload_bytes, (uint64_t)sb.st_size);
}

void store_payload_path(const store *s, const char *id, char *path, size_t len) {
  snprintf(path, len, "%s/%s.f64", s->payload_dir, id);
}

/* ---- datasets ------------------------------------------------------------------- */

static void box_parse(const char *box, histd_box *b);

static void row_to_dataset(sqlite3_stmt *st, dataset_meta *m) {
  memset(m, 0, sizeof *m);
  snprintf(m->id, sizeof m->id, "%s", (const char *)sqlite3_column_text(st, 0));
  m->n = (size_t)sqlite3_column_int64(st, 1);
  snprintf(m->format, sizeof m->format, "%s", (const char *)sqlite3_column_text(st, 2));
  snprintf(m->name, sizeof m->name, "%s", (const char *)sqlite3_column_text(st, 3));
  m->created_at = sqlite3_column_double(st, 4);
  for (int a = 0; a < 3; a++) {
    m->min[a] = sqlite3_column_double(st, 5 + a);
    m->max[a] = sqlite3_column_double(st, 8 + a);
  }
  snprintf(m->error, sizeof m->error, "%s", (const char *)sqlite3_column_text(st, 11));
  m->weighted = sqlite3_column_int(st, 12) != 0;
  sqlite3_int64 frames = sqlite3_column_int64(st, 13);
  m->frames = frames > 1 ? (size_t)frames : 1;
  box_parse((const char *)sqlite3_column_text(st, 14), &m->box);
  m->topology = (unsigned)sqlite3_column_int(st, 15) & ((HISTD_TOP_MOL << 1) - 1);
  const char *atoms = (const char *)sqlite3_column_text(st, 16);
  snprintf(m->atoms, sizeof m->atoms, "%s", atoms ? atoms : "");
  const char *unit = (const char *)sqlite3_column_text(st, 17);
  snprintf(m->unit, sizeof m->unit, "%s", unit ? unit : "");
  m->expires_at = sqlite3_column_double(st, 18);
  m->sky = sqlite3_column_int(st, 19) != 0;
  m->omega_m = sqlite3_column_double(st, 20);
  sqlite3_int64 regions = sqlite3_column_int64(st, 21);
  m->regions = regions > 0 && regions <= HISTD_MAX_REGIONS ? (uint32_t)regions : 0;
  m->growing = sqlite3_column_int(st, 22) != 0;
  m->sealed = sqlite3_column_int(st, 23) != 0;
  m->bytes = (uint64_t)sqlite3_column_int64(st, 24);
}

/* A box as the tables keep it: "kind ax bx by cx cy cz", '' for none. */
static void box_text(const histd_box *b, char *out, size_t len) {
  out[0] = '\0';
  if (b->kind != HISTD_BOX_NONE)
    snprintf(out, len, "%d %.17g %.17g %.17g %.17g %.17g %.17g", (int)b->kind, b->ax, b->bx,
             b->by, b->cx, b->cy, b->cz);
}

static void box_parse(const char *box, histd_box *b) {
  int kind = 0;
  if (box == NULL || sscanf(box, "%d %lf %lf %lf %lf %lf %lf", &kind, &b->ax, &b->bx, &b->by,
                            &b->cx, &b->cy, &b->cz) != 7 ||
      kind < HISTD_BOX_ORTHO || kind > HISTD_BOX_TRICLINIC)
    memset(b, 0, sizeof *b);
  else
    b->kind = (histd_box_kind)kind;
}

bool dataset_has_table(const dataset_meta *m) {
  return m->frames > 1 || m->box.kind != HISTD_BOX_NONE;
}

/* The atoms of a frame and the topology's slots (8 bytes an atom an array). */
static uint64_t topology_slots(const dataset_meta *m) {
  return m->topology ? (uint64_t)__builtin_popcount(m->topology) * (m->n / m->frames) : 0;
}

uint64_t dataset_sky_offset(const dataset_meta *m) {
  return (uint64_t)m->n * (m->weighted ? 4 : 3) +
         (dataset_has_table(m) ? (uint64_t)m->frames * DATASET_FRAME_RECORD : 0) +
         topology_slots(m);
}

uint64_t dataset_payload_bytes(const dataset_meta *m) {
  if (m->growing) /* its segments' files */
    return m->bytes;
  return (dataset_sky_offset(m) + (m->sky ? 3 * (uint64_t)m->n : 0) +
          (m->regions > 0 ? ((uint64_t)m->n + 1) / 2 : 0)) * 8;
}

/* The topology's arrays, one after another in the order of their bits:
 * each array's bytes (8 an atom) at *slot, which moves on. */
static void *topology_array(histd_topology *t, unsigned bit) {
  switch (bit) {
  case HISTD_TOP_NAME: return t->name;
  case HISTD_TOP_ELEMENT: return t->element;
  case HISTD_TOP_RESNAME: return t->resname;
  case HISTD_TOP_RESID: return t->resid;
  case HISTD_TOP_TYPE: return t->type;
  default: return t->mol;
  }
}

static void topology_copy(histd_topology *t, unsigned fields, double *tail, bool to_tail) {
  for (unsigned bit = 1; bit <= HISTD_TOP_MOL; bit <<= 1) {
    if (!(fields & bit))
      continue;
    void *a = topology_array(t, bit);
    if (to_tail)
      memcpy(tail, a, t->atoms * 8);
    else
      memcpy(a, tail, t->atoms * 8);
    tail += t->atoms;
  }
}

int dataset_topology_from_tail(histd_dataset *ds, const dataset_meta *m, const double *tail,
                               char *msg, size_t msglen) {
  if (m->topology == 0)
    return 0;
  int rc = histd_topology_alloc(ds, m->n / m->frames, m->topology, msg, msglen);
  if (rc == 0)
    topology_copy(ds->top, m->topology, (double *)tail, false);
  return rc;
}

#define DATASET_COLUMNS \
  "id, n, format, name, created_at, minx, miny, minz, maxx, maxy, maxz, error, weighted, " \
  "frames, box, topology, atoms, unit, expires_at, sky, omega_m, regions"
/* what a read takes: the columns, and a growing dataset's segments' bytes */
#define DATASET_SELECT \
  DATASET_COLUMNS ", growing, sealed, " \
  "(SELECT ifnull(sum(bytes), 0) FROM segments WHERE segments.dataset = datasets.id)"

static int get_dataset_in(sqlite3 *db, const char *id, dataset_meta *m) {
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db, "SELECT " DATASET_SELECT " FROM datasets WHERE id = ?", -1, &st,
                         NULL) != SQLITE_OK)
    return HISTD_EIO;
  sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
  int rc = HISTD_ENOENT;
  if (sqlite3_step(st) == SQLITE_ROW) {
    row_to_dataset(st, m);
    rc = 0;
  }
  sqlite3_finalize(st);
  return rc;
}

int store_get_dataset(store *s, const char *id, dataset_meta *m) {
  sqlite3 *db = reader_take(s);
  int rc = db != NULL ? get_dataset_in(db, id, m) : HISTD_EIO;
  reader_give(s, db);
  return rc;
}

/* Writes the payload, count pieces one after another, to a temp file (no
 * fsync yet). */
typedef struct piece {
  const void *data;
  size_t len;
} piece;

static int payload_write_temp(store *s, const piece *pieces, int count, char *tmp_path,
                              size_t tmplen, char *msg, size_t msglen) {
  static atomic_uint counter;
  snprintf(tmp_path, tmplen, "%s/.upload.%ld.%u.tmp", s->payload_dir, (long)getpid(),
           atomic_fetch_add(&counter, 1));
  int fd = open(tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    return histd_fail(msg, msglen, HISTD_EIO, "cannot create %s: %s", tmp_path,
                      strerror(errno));
  for (int k = 0; k < count; k++) {
    const char *p = pieces[k].data;
    size_t left = pieces[k].len;
    while (left > 0) {
      ssize_t w = write(fd, p, left > ((size_t)1 << 30) ? (size_t)1 << 30 : left);
      if (w < 0 && errno == EINTR)
        continue;
      if (w <= 0) {
        int e = errno;
        close(fd);
        unlink(tmp_path);
        return histd_fail(msg, msglen, HISTD_EIO, "cannot write the dataset's payload: %s",
                          strerror(e));
      }
      p += w;
      left -= (size_t)w;
    }
  }
  if (close(fd) != 0) {
    int e = errno;
    unlink(tmp_path);
    return histd_fail(msg, msglen, HISTD_EIO, "cannot write the dataset's payload: %s",
                      strerror(e));
  }
  return 0;
}

/* Makes the temp file durable under its final name: fsync, rename, fsync
 * the directory. */
static int payload_commit(store *s, const char *tmp_path, const char *id, char *msg,
                          size_t msglen) {
  char final_path[4400];
  store_payload_path(s, id, final_path, sizeof final_path);
  int fd = open(tmp_path, O_RDONLY | O_CLOEXEC);
  if (fd < 0 || fdatasync(fd) != 0) {
    int e = errno;
    if (fd >= 0)
      close(fd);
    unlink(tmp_path);
    return histd_fail(msg, msglen, HISTD_EIO, "cannot sync the dataset's payload: %s",
                      strerror(e));
  }
  close(fd);
  if (rename(tmp_path, final_path) != 0) {
    int e = errno;
    unlink(tmp_path);
    return histd_fail(msg, msglen, HISTD_EIO, "cannot rename the dataset's payload: %s",
                      strerror(e));
  }
  if (fsync_dir(s->payload_dir) != 0)
    return histd_fail(msg, msglen, HISTD_EIO, "cannot sync %s: %s", s->payload_dir,
                      strerror(errno));
  return 0;
}

typedef struct hash_job {
  const histd_dataset *ds;
  const double *tail;
  size_t tail_len;
  char hex[65];
} hash_job;

static void *hash_main(void *arg) {
  hash_job *h = arg;
  dataset_id_hex_tail(h->ds->x, h->ds->y, h->ds->z, h->ds->n, h->tail, h->tail_len, h->hex);
  return NULL;
}

int dataset_tail(const histd_dataset *ds, dataset_meta *shape, double **tail, size_t *len,
                 char *msg, size_t msglen) {
  memset(shape, 0, sizeof *shape);
  shape->n = ds->n;
  memcpy(shape->min, ds->min, sizeof shape->min);
  memcpy(shape->max, ds->max, sizeof shape->max);
  shape->weighted = ds->w != NULL;
  shape->frames = histd_dataset_frames(ds);
  shape->box = ds->box;
  shape->topology = histd_topology_fields(ds->top);
  memcpy(shape->unit, ds->unit, sizeof shape->unit);
  if (shape->topology && ds->top->atoms * shape->frames != ds->n)
    shape->topology = 0; /* frames of other sizes: a topology cannot describe them */
  shape->sky = ds->sky != NULL;
  shape->omega_m = ds->sky != NULL ? ds->omega_m : 0;
  shape->regions = ds->region != NULL ? ds->regions : 0;
  if (tail != NULL)
    dataset_atoms_summary(ds, shape->atoms, sizeof shape->atoms);
  *len = (size_t)((dataset_payload_bytes(shape) - (uint64_t)ds->n * 24) / 8);
  if (tail != NULL)
    *tail = NULL;
  if (tail == NULL || *len == 0)
    return 0;
  double *t = malloc(*len * sizeof *t);
  if (t == NULL)
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for the dataset's frames");
  size_t k = 0;
  if (ds->w != NULL) {
    memcpy(t, ds->w, ds->n * sizeof *t);
    k = ds->n;
  }
  for (size_t f = 0; dataset_has_table(shape) && f < shape->frames; f++) {
    histd_frame one = {0, ds->n, ds->box};
    const histd_frame *fr = ds->frame != NULL ? &ds->frame[f] : &one;
    const double rec[DATASET_FRAME_RECORD] = {(double)fr->n, (double)fr->box.kind, fr->box.ax,
                                              fr->box.bx, fr->box.by, fr->box.cx, fr->box.cy,
                                              fr->box.cz};
    memcpy(t + k, rec, sizeof rec);
    k += DATASET_FRAME_RECORD;
  }
  if (shape->topology)
    topology_copy(ds->top, shape->topology, t + k, true);
  const uint64_t at = dataset_sky_offset(shape) - 3 * (uint64_t)ds->n;
  if (shape->sky)
    memcpy(t + at, ds->sky, 3 * ds->n * sizeof *t);
  if (shape->regions > 0) {
    double *r = t + at + (shape->sky ? 3 * ds->n : 0);
    r[(ds->n + 1) / 2 - 1] = 0; /* the last 4 bytes when n is odd */
    memcpy(r, ds->region, ds->n * sizeof *ds->region);
  }
  *tail = t;
  return 0;
}

int dataset_frames_from_table(histd_dataset *ds, const double *table, size_t frames, char *msg,
                              size_t msglen) {
  size_t *counts = malloc(frames * sizeof *counts);
  histd_box *boxes = malloc(frames * sizeof *boxes);
  int rc = counts && boxes ? 0 : histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for frames");
  for (size_t f = 0; rc == 0 && f < frames; f++) {
    const double *r = table + f * DATASET_FRAME_RECORD;
    if (!(r[0] >= 0 && r[0] <= (double)ds->n && r[0] == floor(r[0])) ||
        !(r[1] == HISTD_BOX_NONE || r[1] == HISTD_BOX_ORTHO || r[1] == HISTD_BOX_TRICLINIC))
      rc = histd_fail(msg, msglen, HISTD_EIO, "the payload's frame %zu is corrupt", f + 1);
    counts[f] = (size_t)r[0];
    boxes[f] = (histd_box){(histd_box_kind)(int)r[1], r[2], r[3], r[4], r[5], r[6], r[7]};
  }
  if (rc == 0)
    rc = histd_dataset_set_frames(ds, frames, counts, boxes, msg, msglen);
  free(counts);
  free(boxes);
  return rc;
}

/* The common end of both upload paths: the payload is in tmp_path (not yet
 * synced; unlinked here on every path), its id is known, shape says its n,
 * bounds, weights, frames and box. The temp file's
 * bytes are known good (its hash is the id), so it always replaces the
 * stored file, which may be missing, cut short, or the right size with
 * the wrong bytes: a re-upload repairs a corrupt payload. (Jobs that have
 * the old file mapped keep their mapping.) */
/* The values of a dataset's row (DATASET_COLUMNS, error '') into st. */
static void bind_dataset_row(sqlite3_stmt *st, const char *id, const dataset_meta *shape,
                             const char *format, const char *name, double expires_at) {
  sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 2, (sqlite3_int64)shape->n);
  sqlite3_bind_text(st, 3, format, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 4, name ? name : "", -1, SQLITE_STATIC);
  sqlite3_bind_double(st, 5, wall_now());
  for (int a = 0; a < 3; a++) {
    sqlite3_bind_double(st, 6 + a, shape->min[a]);
    sqlite3_bind_double(st, 9 + a, shape->max[a]);
  }
  sqlite3_bind_int(st, 12, shape->weighted ? 1 : 0);
  sqlite3_bind_int64(st, 13, (sqlite3_int64)(shape->frames > 1 ? shape->frames : 1));
  char box[200];
  box_text(&shape->box, box, sizeof box);
  sqlite3_bind_text(st, 14, box, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int(st, 15, (int)shape->topology);
  sqlite3_bind_text(st, 16, shape->atoms, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 17, shape->unit, -1, SQLITE_STATIC);
  sqlite3_bind_double(st, 18, expires_at > 0 ? expires_at : 0);
  sqlite3_bind_int(st, 19, shape->sky ? 1 : 0);
  sqlite3_bind_double(st, 20, shape->omega_m);
  sqlite3_bind_int64(st, 21, (sqlite3_int64)shape->regions);
}

static void payload_drop_unreferenced(store *s, const char *hash);

static int commit_dataset_locked(store *s, const char *tmp_path, const char *id,
                                 const dataset_meta *shape, const char *format,
                                 const char *name, double expires_at, dataset_meta *meta,
                                 bool *created, char *msg, size_t msglen) {
  pthread_mutex_lock(&s->mu);
  int rc = get_dataset_in(s->db, id, meta);
  pthread_mutex_unlock(&s->mu);
  bool existed = rc == 0;
  char final_path[4400];
  store_payload_path(s, id, final_path, sizeof final_path);
  struct stat old;
  uint64_t old_bytes = stat(final_path, &old) == 0 ? (uint64_t)old.st_size : 0;
  const uint64_t bytes = dataset_payload_bytes(shape);
  rc = payload_commit(s, tmp_path, id, msg, msglen);
  if (rc != 0)
    return rc;
  atomic_fetch_add(&s->payload_bytes, bytes);
  atomic_fetch_sub(&s->payload_bytes, old_bytes);

  pthread_mutex_lock(&s->mu);
  sqlite3_stmt *st;
  rc = 0;
  if (sqlite3_prepare_v2(s->db,
                         "INSERT INTO datasets (" DATASET_COLUMNS ") "
                         "VALUES (?,?,?,?,?,?,?,?,?,?,?, '',?,?,?,?,?,?,?,?,?,?) "
                         "ON CONFLICT(id) DO UPDATE SET error = '', expires_at = "
                         "CASE WHEN expires_at = 0 OR excluded.expires_at = 0 THEN 0 "
                         "ELSE max(expires_at, excluded.expires_at) END",
                         -1, &st, NULL) != SQLITE_OK) {
    rc = db_fail(s, msg, msglen, "store the dataset");
  } else {
    bind_dataset_row(st, id, shape, format, name, expires_at);
    if (sqlite3_step(st) != SQLITE_DONE)
      rc = db_fail(s, msg, msglen, "store the dataset");
    sqlite3_finalize(st);
  }
  uint64_t seq = rc == 0 ? atomic_fetch_add(&s->committed, 1) + 1 : 0;
  if (rc == 0) {
    rc = get_dataset_in(s->db, id, meta);
    if (rc != 0)
      rc = db_fail(s, msg, msglen, "read the dataset back");
  }
  pthread_mutex_unlock(&s->mu);
  if (rc == 0)
    rc = durable(s, seq, msg, msglen);
  if (rc != 0 && !existed) /* no row, so no file: nothing stored half-way */
    payload_drop_unreferenced(s, id);
  *created = !existed;
  return rc;
}

/* ---- growing datasets ------------------------------------------------------------
 *
 * A growing dataset (POST /v1/datasets?growing=true) is a row of its own,
 * under an id of its own (random: its points are not what names it, since
 * they change), and its segments: the payload files its frames are in,
 * the upload's first, then one an append (store_append_frames). Each
 * segment is a payload like any other (its frames, their weights, boxes
 * and the atoms' topology), named by the hash of its bytes, so a reader
 * checks it as it checks any payload, and a segment whose bytes another
 * dataset has shares the file. A file is removed when no row names it any
 * more (payload_drop_unreferenced). An append writes and syncs its file,
 * then adds its segment and the dataset's new counts in one transaction:
 * a crash leaves the frames appended or not, never a part of them.
 */

static void new_dataset_id(char id[65]) {
  unsigned char raw[32];
  if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw) {
    double t = histd_now_ms();
    memset(raw, 0, sizeof raw);
    memcpy(raw, &t, sizeof t);
    uintptr_t addr = (uintptr_t)id;
    memcpy(raw + 8, &addr, sizeof addr < 8 ? sizeof addr : 8);
    pid_t pid = getpid();
    memcpy(raw + 16, &pid, sizeof pid);
  }
  static const char digits[] = "0123456789abcdef";
  for (int i = 0; i < 32; i++) {
    id[2 * i] = digits[raw[i] >> 4];
    id[2 * i + 1] = digits[raw[i] & 15];
  }
  id[64] = '\0';
}

/* Whether a row names the payload file `hash` (a dataset's own, or a
 * growing dataset's segment); s->mu held. */
static bool payload_referenced_locked(store *s, const char *hash) {
  sqlite3_stmt *st;
  bool used = true; /* when in doubt, keep it */
  if (sqlite3_prepare_v2(s->db,
                         "SELECT (SELECT count(*) FROM datasets WHERE id = ?1) + "
                         "(SELECT count(*) FROM segments WHERE payload = ?1)",
                         -1, &st, NULL) == SQLITE_OK) {
    sqlite3_bind_text(st, 1, hash, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW)
      used = sqlite3_column_int64(st, 0) > 0;
    sqlite3_finalize(st);
  }
  return used;
}

/* Removes the payload file `hash` unless a row names it (commit_mu held). */
static void payload_drop_unreferenced(store *s, const char *hash) {
  pthread_mutex_lock(&s->mu);
  bool used = payload_referenced_locked(s, hash);
  pthread_mutex_unlock(&s->mu);
  if (used)
    return;
  char path[4400];
  store_payload_path(s, hash, path, sizeof path);
  struct stat sb;
  if (stat(path, &sb) == 0 && unlink(path) == 0)
    atomic_fetch_sub(&s->payload_bytes, (uint64_t)sb.st_size);
}

/* Adds segment seq of dataset id: the payload `hash` of `shape`, its first
 * frame the dataset's first_frame; s->mu held, inside a transaction. */
static int insert_segment_locked(store *s, const char *id, int64_t seq, const char *hash,
                                 uint64_t first_frame, const dataset_meta *shape) {
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(s->db,
                         "INSERT INTO segments (dataset, seq, payload, first_frame, frames, n, "
                         "weighted, box, topology, unit, minx, miny, minz, maxx, maxy, maxz, "
                         "bytes) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                         -1, &st, NULL) != SQLITE_OK)
    return SQLITE_ERROR;
  sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 2, seq);
  sqlite3_bind_text(st, 3, hash, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 4, (sqlite3_int64)first_frame);
  sqlite3_bind_int64(st, 5, (sqlite3_int64)(shape->frames > 1 ? shape->frames : 1));
  sqlite3_bind_int64(st, 6, (sqlite3_int64)shape->n);
  sqlite3_bind_int(st, 7, shape->weighted ? 1 : 0);
  char box[200];
  box_text(&shape->box, box, sizeof box);
  sqlite3_bind_text(st, 8, box, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int(st, 9, (int)shape->topology);
  sqlite3_bind_text(st, 10, shape->unit, -1, SQLITE_STATIC);
  for (int a = 0; a < 3; a++) {
    sqlite3_bind_double(st, 11 + a, shape->min[a]);
    sqlite3_bind_double(st, 14 + a, shape->max[a]);
  }
  sqlite3_bind_int64(st, 17, (sqlite3_int64)dataset_payload_bytes(shape));
  int rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
  sqlite3_finalize(st);
  return rc;
}

/* The end of a transaction (begun under s->mu, released here) that
 * changes the growing dataset id (and adds the payload `hash` to it; NULL:
 * none): committed when ok, else rolled back with a sentence that the
 * database could not `what`; the row read back into meta; durable. On
 * failure the payload file goes, unless a row names it. */
static int end_dataset_write(store *s, bool ok, const char *id, const char *hash,
                             const char *what, dataset_meta *meta, char *msg, size_t msglen) {
  int rc = 0;
  if (ok)
    ok = sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK;
  if (!ok) {
    rc = db_fail(s, msg, msglen, what);
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
  }
  uint64_t seq = rc == 0 ? atomic_fetch_add(&s->committed, 1) + 1 : 0;
  if (rc == 0 && get_dataset_in(s->db, id, meta) != 0)
    rc = db_fail(s, msg, msglen, "read the dataset back");
  pthread_mutex_unlock(&s->mu);
  if (rc == 0)
    rc = durable(s, seq, msg, msglen);
  if (rc != 0 && hash != NULL)
    payload_drop_unreferenced(s, hash);
  return rc;
}

/* A growing dataset's first segment, the upload in tmp_path (its hash
 * `hash`), and its row under a new id; commit_mu held. */
static int commit_growing_locked(store *s, const char *tmp_path, const char *hash,
                                 const dataset_meta *shape, const char *format, const char *name,
                                 double expires_at, dataset_meta *meta, char *msg,
                                 size_t msglen) {
  char final_path[4400];
  store_payload_path(s, hash, final_path, sizeof final_path);
  struct stat old;
  uint64_t old_bytes = stat(final_path, &old) == 0 ? (uint64_t)old.st_size : 0;
  int rc = payload_commit(s, tmp_path, hash, msg, msglen);
  if (rc != 0)
    return rc;
  atomic_fetch_add(&s->payload_bytes, dataset_payload_bytes(shape));
  atomic_fetch_sub(&s->payload_bytes, old_bytes);
  char id[65];
  new_dataset_id(id);
  pthread_mutex_lock(&s->mu);
  sqlite3_stmt *st;
  bool ok = sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK;
  if (ok && sqlite3_prepare_v2(s->db,
                               "INSERT INTO datasets (" DATASET_COLUMNS ", growing) "
                               "VALUES (?,?,?,?,?,?,?,?,?,?,?, '',?,?,?,?,?,?,?,?,?,?, 1)",
                               -1, &st, NULL) == SQLITE_OK) {
    bind_dataset_row(st, id, shape, format, name, expires_at);
    ok = sqlite3_step(st) == SQLITE_DONE;
    sqlite3_finalize(st);
  } else {
    ok = false;
  }
  ok = ok && insert_segment_locked(s, id, 0, hash, 0, shape) == SQLITE_OK;
  return end_dataset_write(s, ok, id, hash, "store the dataset", meta, msg, msglen);
}

static int commit_dataset(store *s, const char *tmp_path, const char *id,
                          const dataset_meta *shape, const char *format, const char *name,
                          double expires_at, bool growing, dataset_meta *meta, bool *created,
                          char *msg, size_t msglen) {
  pthread_mutex_lock(&s->commit_mu);
  int rc;
  if (growing) {
    *created = true;
    rc = commit_growing_locked(s, tmp_path, id, shape, format, name, expires_at, meta, msg,
                               msglen);
  } else {
    rc = commit_dataset_locked(s, tmp_path, id, shape, format, name, expires_at, meta, created,
                               msg, msglen);
  }
  pthread_mutex_unlock(&s->commit_mu);
  return rc;
}

/* A parsed dataset's payload written to a temp file (tmp_path) and hashed
 * (hex), and its shape. */
static int payload_write_hashed(store *s, const histd_dataset *ds, dataset_meta *shape,
                                char *tmp_path, size_t tmplen, char hex[65], char *msg,
                                size_t msglen) {
  size_t bytes = ds->n * 3 * sizeof(double);
  double *tail;
  size_t tail_len;
  int rc = dataset_tail(ds, shape, &tail, &tail_len, msg, msglen);
  if (rc != 0)
    return rc;
  /* x, y and z are one block of 3n doubles, x first: the payload as is,
   * then its tail (weights, frames). Hash it on other threads while this
   * one writes the temp file; the name (the hash) is only needed at the
   * rename. */
  hash_job hj = {ds, tail, tail_len, ""};
  pthread_t hasher;
  bool threaded = bytes >= ((size_t)1 << 20) && pthread_create(&hasher, NULL, hash_main, &hj) == 0;
  const piece pieces[2] = {{ds->x, bytes}, {tail, tail_len * sizeof(double)}};
  rc = payload_write_temp(s, pieces, 2, tmp_path, tmplen, msg, msglen);
  if (threaded)
    pthread_join(hasher, NULL);
  else if (rc == 0)
    hash_main(&hj);
  free(tail);
  memcpy(hex, hj.hex, 65);
  return rc;
}

int store_put_dataset(store *s, const histd_dataset *ds, const char *format, const char *name,
                      double expires_at, bool growing, dataset_meta *meta, bool *created,
                      char *msg, size_t msglen) {
  dataset_meta shape;
  char tmp_path[4400], hex[65];
  int rc = payload_write_hashed(s, ds, &shape, tmp_path, sizeof tmp_path, hex, msg, msglen);
  if (rc != 0)
    return rc;
  return commit_dataset(s, tmp_path, hex, &shape, format, name, expires_at, growing, meta,
                        created, msg, msglen);
}

int store_put_parsed_file(store *s, const char *tmp_path, int fd, const histd_dataset *ds,
                          const char *format, const char *name, double expires_at, bool growing,
                          dataset_meta *meta, bool *created, char *msg, size_t msglen) {
  dataset_meta shape;
  double *tail = NULL;
  size_t tail_len = 0;
  int rc = dataset_tail(ds, &shape, &tail, &tail_len, msg, msglen);
  const size_t at = ds->n * 3 * sizeof(double);
  if (rc == 0 && tail_len > 0 &&
      pwrite(fd, tail, tail_len * sizeof *tail, (off_t)at) != (ssize_t)(tail_len * sizeof *tail))
    rc = histd_fail(msg, msglen, HISTD_EIO, "the payload's tail could not be written: %s",
                    strerror(errno));
  char id[65];
  if (rc == 0)
    dataset_id_hex_tail(ds->x, ds->y, ds->z, ds->n, tail, tail_len, id);
  free(tail);
  if (rc != 0) {
    unlink(tmp_path);
    return rc;
  }
  return commit_dataset(s, tmp_path, id, &shape, format, name, expires_at, growing, meta,
                        created, msg, msglen);
}

int store_temp_payload(store *s, char *tmp_path, size_t len, int *fd, char *msg,
                       size_t msglen) {
  static atomic_uint counter;
  snprintf(tmp_path, len, "%s/.stream.%ld.%u.tmp", s->payload_dir, (long)getpid(),
           atomic_fetch_add(&counter, 1));
  *fd = open(tmp_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (*fd < 0)
    return histd_fail(msg, msglen, HISTD_EIO, "cannot create %s: %s", tmp_path,
                      strerror(errno));
  return 0;
}

int store_put_streamed(store *s, const char *tmp_path, const char *id, size_t n,
                       const double min[3], const double max[3], const char *format,
                       const char *name, double expires_at, bool growing, dataset_meta *meta,
                       bool *created, char *msg, size_t msglen) {
  dataset_meta shape; /* points only: f64 carries no weights, box or frames */
  memset(&shape, 0, sizeof shape);
  shape.n = n;
  shape.frames = 1;
  memcpy(shape.min, min, sizeof shape.min);
  memcpy(shape.max, max, sizeof shape.max);
  return commit_dataset(s, tmp_path, id, &shape, format, name, expires_at, growing, meta,
                        created, msg, msglen);
}

int store_append_frames(store *s, const char *id, const histd_dataset *ds, int64_t at,
                        dataset_meta *meta, bool *appended, char *msg, size_t msglen) {
  *appended = false;
  dataset_meta shape;
  char tmp_path[4400], hash[65];
  int rc = payload_write_hashed(s, ds, &shape, tmp_path, sizeof tmp_path, hash, msg, msglen);
  if (rc != 0)
    return rc;
  pthread_mutex_lock(&s->commit_mu); /* (appends, seals and deletes one at a time) */
  pthread_mutex_lock(&s->mu);
  rc = get_dataset_in(s->db, id, meta);
  char same[65] = ""; /* ?at= names frames appended already: their segment's payload */
  if (rc == 0 && meta->growing && !meta->sealed && at >= 0 && (uint64_t)at < meta->frames) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT payload FROM segments WHERE dataset = ? AND first_frame = ? "
                           "AND frames = ?",
                           -1, &st, NULL) == SQLITE_OK) {
      sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
      sqlite3_bind_int64(st, 2, at);
      sqlite3_bind_int64(st, 3, (sqlite3_int64)shape.frames);
      if (sqlite3_step(st) == SQLITE_ROW)
        snprintf(same, sizeof same, "%s", (const char *)sqlite3_column_text(st, 0));
      sqlite3_finalize(st);
    }
  }
  pthread_mutex_unlock(&s->mu);
  if (rc != 0)
    rc = rc == HISTD_ENOENT ? histd_fail(msg, msglen, HISTD_ENOENT, "no dataset has the id \"%s\"", id)
                            : db_fail(s, msg, msglen, "read the dataset");
  else if (!meta->growing)
    rc = histd_fail(msg, msglen, HISTD_EINVAL,
                    "dataset %s was not uploaded with ?growing=true: its id is the hash of its "
                    "points, which an identical upload shares, so it takes no frames; upload "
                    "the first frames with POST /v1/datasets?growing=true and append to that",
                    id);
  else if (meta->sealed)
    rc = histd_fail(msg, msglen, HISTD_EINVAL,
                    "dataset %s is sealed (POST /v1/datasets/{id}/seal): it takes no more frames",
                    id);
  else if (at >= 0 && (uint64_t)at != meta->frames && strcmp(same, hash) != 0)
    rc = histd_fail(msg, msglen, HISTD_EINVAL,
                    "the frames were sent for ?at=%lld, and dataset %s has %zu frames%s", (long long)at,
                    id, meta->frames,
                    (uint64_t)at < meta->frames ? ", other frames than these at that place"
                                                : "; append the frames before them first");
  if (rc != 0 || (at >= 0 && (uint64_t)at < meta->frames)) { /* refused, or there already */
    unlink(tmp_path);
    pthread_mutex_unlock(&s->commit_mu);
    return rc;
  }
  char final_path[4400];
  store_payload_path(s, hash, final_path, sizeof final_path);
  struct stat old;
  uint64_t old_bytes = stat(final_path, &old) == 0 ? (uint64_t)old.st_size : 0;
  if ((rc = payload_commit(s, tmp_path, hash, msg, msglen)) != 0) {
    pthread_mutex_unlock(&s->commit_mu);
    return rc;
  }
  atomic_fetch_add(&s->payload_bytes, dataset_payload_bytes(&shape));
  atomic_fetch_sub(&s->payload_bytes, old_bytes);
  pthread_mutex_lock(&s->mu);
  bool ok = sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK;
  sqlite3_int64 next = 0;
  sqlite3_stmt *st;
  if (ok && sqlite3_prepare_v2(s->db, "SELECT ifnull(max(seq), -1) + 1 FROM segments WHERE "
                                      "dataset = ?", -1, &st, NULL) == SQLITE_OK) {
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    ok = sqlite3_step(st) == SQLITE_ROW;
    next = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
  } else {
    ok = false;
  }
  ok = ok && insert_segment_locked(s, id, next, hash, meta->frames, &shape) == SQLITE_OK;
  if (ok && sqlite3_prepare_v2(s->db,
                               "UPDATE datasets SET n = n + ?, frames = frames + ?, "
                               "minx = min(minx, ?), miny = min(miny, ?), minz = min(minz, ?), "
                               "maxx = max(maxx, ?), maxy = max(maxy, ?), maxz = max(maxz, ?) "
                               "WHERE id = ?",
                               -1, &st, NULL) == SQLITE_OK) {
    sqlite3_bind_int64(st, 1, (sqlite3_int64)shape.n);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)(shape.frames > 1 ? shape.frames : 1));
    for (int a = 0; a < 3; a++) {
      sqlite3_bind_double(st, 3 + a, shape.min[a]);
      sqlite3_bind_double(st, 6 + a, shape.max[a]);
    }
    sqlite3_bind_text(st, 9, id, -1, SQLITE_STATIC);
    ok = sqlite3_step(st) == SQLITE_DONE;
    sqlite3_finalize(st);
  } else {
    ok = false;
  }
  rc = end_dataset_write(s, ok, id, hash, "append the frames", meta, msg, msglen);
  *appended = rc == 0;
  pthread_mutex_unlock(&s->commit_mu);
  return rc;
}

int store_seal_dataset(store *s, const char *id, dataset_meta *meta, char *msg, size_t msglen) {
  pthread_mutex_lock(&s->commit_mu);
  pthread_mutex_lock(&s->mu);
  int rc = get_dataset_in(s->db, id, meta);
  sqlite3_stmt *st;
  if (rc == HISTD_ENOENT)
    rc = histd_fail(msg, msglen, HISTD_ENOENT, "no dataset has the id \"%s\"", id);
  else if (rc != 0)
    rc = db_fail(s, msg, msglen, "read the dataset");
  else if (!meta->growing)
    rc = histd_fail(msg, msglen, HISTD_EINVAL,
                    "dataset %s was not uploaded with ?growing=true: it takes no frames, so "
                    "there is nothing to seal",
                    id);
  if (rc != 0) {
    pthread_mutex_unlock(&s->mu);
    pthread_mutex_unlock(&s->commit_mu);
    return rc;
  }
  bool ok = sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK &&
            sqlite3_prepare_v2(s->db, "UPDATE datasets SET sealed = 1 WHERE id = ?", -1, &st,
                               NULL) == SQLITE_OK;
  if (ok) {
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    ok = sqlite3_step(st) == SQLITE_DONE;
    sqlite3_finalize(st);
  }
  rc = end_dataset_write(s, ok, id, NULL, "seal the dataset", meta, msg, msglen);
  pthread_mutex_unlock(&s->commit_mu);
  return rc;
}

int store_dataset_segments(store *s, const char *id, dataset_segment **out, size_t *count) {
  *out = NULL;
  *count = 0;
  sqlite3 *db = reader_take(s);
  sqlite3_stmt *st;
  if (db == NULL ||
      sqlite3_prepare_v2(db,
                         "SELECT payload, first_frame, frames, n, weighted, box, topology, unit, "
                         "minx, miny, minz, maxx, maxy, maxz FROM segments WHERE dataset = ? "
                         "ORDER BY seq",
                         -1, &st, NULL) != SQLITE_OK) {
    reader_give(s, db);
    return HISTD_EIO;
  }
  sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
  size_t cap = 0;
  int rc = 0;
  while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
    if (*count == cap) {
      cap = cap ? 2 * cap : 8;
      dataset_segment *bigger = realloc(*out, cap * sizeof *bigger);
      if (bigger == NULL) {
        rc = HISTD_ENOMEM;
        break;
      }
      *out = bigger;
    }
    dataset_segment *g = &(*out)[(*count)++];
    memset(g, 0, sizeof *g);
    dataset_meta *m = &g->meta;
    snprintf(m->id, sizeof m->id, "%s", (const char *)sqlite3_column_text(st, 0));
    g->first_frame = (uint64_t)sqlite3_column_int64(st, 1);
    m->frames = (size_t)sqlite3_column_int64(st, 2);
    m->n = (size_t)sqlite3_column_int64(st, 3);
    m->weighted = sqlite3_column_int(st, 4) != 0;
    box_parse((const char *)sqlite3_column_text(st, 5), &m->box);
    m->topology = (unsigned)sqlite3_column_int(st, 6) & ((HISTD_TOP_MOL << 1) - 1);
    const char *unit = (const char *)sqlite3_column_text(st, 7);
    snprintf(m->unit, sizeof m->unit, "%s", unit ? unit : "");
    for (int a = 0; a < 3; a++) {
      m->min[a] = sqlite3_column_double(st, 8 + a);
      m->max[a] = sqlite3_column_double(st, 11 + a);
    }
  }
  sqlite3_finalize(st);
  reader_give(s, db);
  if (rc != 0) {
    free(*out);
    *out = NULL;
    *count = 0;
  }
  return rc;
}

int store_list_datasets(store *s, size_t limit, bool (*fn)(const dataset_meta *m, void *u),
                        void *u) {
  sqlite3 *db = reader_take(s);
  sqlite3_stmt *st;
  if (db == NULL || sqlite3_prepare_v2(db,
                                       "SELECT " DATASET_SELECT
                                       " FROM datasets ORDER BY created_at DESC, id LIMIT ?",
                                       -1, &st, NULL) != SQLITE_OK) {
    reader_give(s, db);
    return HISTD_EIO;
  }
  sqlite3_bind_int64(st, 1, limit ? (sqlite3_int64)limit : -1);
  /* Collect first, call back without the lock: callbacks may stat files. */
  size_t cap = 16, count = 0;
  dataset_meta *rows = malloc(cap * sizeof *rows);
  while (rows != NULL && sqlite3_step(st) == SQLITE_ROW) {
    if (count == cap) {
      dataset_meta *bigger = realloc(rows, 2 * cap * sizeof *rows);
      if (bigger == NULL)
        break;
      rows = bigger;
      cap *= 2;
    }
    row_to_dataset(st, &rows[count++]);
  }
  sqlite3_finalize(st);
  reader_give(s, db);
  if (rows == NULL)
    return HISTD_ENOMEM;
  for (size_t i = 0; i < count; i++)
    if (!fn(&rows[i], u))
      break;
  free(rows);
  return 0;
}

/* Column 0 of st's rows (ids) appended to ids (count of them, room for
 * cap, malloc'd; NULL: out of memory), grown as needed; the rows that do
 * not fit in memory are left out. */
static char (*collect_ids(sqlite3_stmt *st, char (*ids)[65], size_t *count, size_t *cap))[65] {
  while (ids != NULL && sqlite3_step(st) == SQLITE_ROW) {
    if (*count == *cap) {
      char(*bigger)[65] = realloc(ids, 2 * *cap * sizeof *ids);
      if (bigger == NULL)
        break;
      ids = bigger;
      *cap *= 2;
    }
    snprintf(ids[(*count)++], sizeof ids[0], "%s", (const char *)sqlite3_column_text(st, 0));
  }
  return ids;
}

int store_delete_dataset(store *s, const char *id, char *msg, size_t msglen) {
  pthread_mutex_lock(&s->commit_mu);
  pthread_mutex_lock(&s->mu);
  sqlite3_stmt *st;
  int rc = 0;
  /* the files it names: its own, or a growing dataset's segments' */
  size_t count = 0, cap = 1;
  char(*files)[65] = malloc(sizeof *files);
  if (files != NULL)
    snprintf(files[count++], sizeof files[0], "%s", id);
  if (files != NULL && sqlite3_prepare_v2(s->db, "SELECT payload FROM segments WHERE dataset = ?",
                                          -1, &st, NULL) == SQLITE_OK) {
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    files = collect_ids(st, files, &count, &cap);
    sqlite3_finalize(st);
  }
  bool ok = sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK;
  if (ok && sqlite3_prepare_v2(s->db, "DELETE FROM segments WHERE dataset = ?", -1, &st,
                               NULL) == SQLITE_OK) {
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    ok = sqlite3_step(st) == SQLITE_DONE;
    sqlite3_finalize(st);
  } else {
    ok = false;
  }
  if (ok && sqlite3_prepare_v2(s->db, "DELETE FROM datasets WHERE id = ?", -1, &st, NULL) ==
                SQLITE_OK) {
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    ok = sqlite3_step(st) == SQLITE_DONE;
    if (ok && sqlite3_changes(s->db) == 0)
      rc = histd_fail(msg, msglen, HISTD_ENOENT, "no dataset has the id \"%s\"", id);
    sqlite3_finalize(st);
  } else {
    ok = false;
  }
  if (ok && rc == 0)
    ok = sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK;
  if (!ok)
    rc = db_fail(s, msg, msglen, "delete the dataset");
  if (rc != 0)
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
  uint64_t seq = rc == 0 ? atomic_fetch_add(&s->committed, 1) + 1 : 0;
  pthread_mutex_unlock(&s->mu);
  if (rc == 0)
    rc = durable(s, seq, msg, msglen); /* the row is gone for good before the file */
  if (rc == 0) {
    for (size_t i = 0; files != NULL && i < count; i++)
      payload_drop_unreferenced(s, files[i]); /* (a file another row names stays) */
    fsync_dir(s->payload_dir);
  }
  free(files);
  pthread_mutex_unlock(&s->commit_mu);
  return rc;
}

int store_expired_datasets(store *s, double now, bool (*fn)(const char *id, void *u), void *u) {
  sqlite3 *db = reader_take(s);
  sqlite3_stmt *st;
  if (db == NULL || sqlite3_prepare_v2(db,
                                       "SELECT id FROM datasets WHERE expires_at > 0 AND "
                                       "expires_at <= ? ORDER BY expires_at LIMIT 1000",
                                       -1, &st, NULL) != SQLITE_OK) {
    reader_give(s, db);
    return HISTD_EIO;
  }
  sqlite3_bind_double(st, 1, now);
  size_t cap = 16, count = 0; /* collected first: fn deletes, through the writer */
  char(*ids)[65] = collect_ids(st, malloc(cap * sizeof *ids), &count, &cap);
  sqlite3_finalize(st);
  reader_give(s, db);
  if (ids == NULL)
    return HISTD_ENOMEM;
  for (size_t i = 0; i < count; i++)
    if (!fn(ids[i], u))
      break;
  free(ids);
  return 0;
}

void store_set_dataset_error(store *s, const char *id, const char *error) {
  pthread_mutex_lock(&s->mu);
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(s->db, "UPDATE datasets SET error = ? WHERE id = ?", -1, &st, NULL) ==
      SQLITE_OK) {
    sqlite3_bind_text(st, 1, error, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, id, -1, SQLITE_STATIC);
    sqlite3_step(st);
    sqlite3_finalize(st);
  }
  pthread_mutex_unlock(&s->mu);
}

void store_check_payload(store *s, dataset_meta *m) {
  if (m->error[0] != '\0')
    return;
  if (m->growing) { /* each segment's file */
    dataset_segment *segs;
    size_t count;
    if (store_dataset_segments(s, m->id, &segs, &count) != 0)
      return;
    for (size_t i = 0; i < count && m->error[0] == '\0'; i++) {
      store_check_payload(s, &segs[i].meta);
      if (segs[i].meta.error[0] != '\0')
        snprintf(m->error, sizeof m->error, "frames from %llu: %.200s",
                 (unsigned long long)segs[i].first_frame, segs[i].meta.error);
    }
    free(segs);
    return;
  }
  char path[4400];
  store_payload_path(s, m->id, path, sizeof path);
  struct stat sb;
  if (stat(path, &sb) != 0)
    snprintf(m->error, sizeof m->error, "the payload file is missing (%s)", strerror(errno));
  else if ((uint64_t)sb.st_size != dataset_payload_bytes(m))
    snprintf(m->error, sizeof m->error,
             "the payload file is corrupt: %lld bytes where %llu were written",
             (long long)sb.st_size, (unsigned long long)dataset_payload_bytes(m));
}

/* ---- jobs --------------------------------------------------------------------------- */

static int update_job(store *s, const job_record *j, bool sync, char *msg, size_t msglen);

#define JOB_COLUMNS                                                                       \
  "seq, id, dataset, n, status, progress, created_at, started_at, finished_at, t_queue, "  \
  "t_parse, t_transfer, t_kernel, t_total, device, error, has_result, params, dataset_b, "  \
  "n_b, attempts, ifnull(length(r_head), 0) + ifnull(length(r_arrays), 0), "               \
  "result_deleted_at, follow, r_head"
#define COL_HEAD 24
/* the column after JOB_COLUMNS in a query for the whole result */
#define COL_ARRAYS 25

/* The job's parameters from their JSON (histd/params.h's table). */
void job_params_from_json(const char *text, histd_params *p) {
  histd_params_init(p);
  cJSON *o = text ? cJSON_Parse(text) : NULL;
  for (const cJSON *f = o ? o->child : NULL; f != NULL; f = f->next) {
    const histd_param *row = histd_param_find(f->string);
    if (row == NULL)
      continue;
    histd_value v;
    double *numbers;
    if (param_value_from_json(row, f, &v, &numbers) == NULL)
      histd_param_set(p, row, &v, NULL, 0); /* what the table itself wrote */
    free(numbers);
  }
  cJSON_Delete(o);
}

/* 0, or HISTD_EIO when the stored result does not decode (j->error says
 * why; j->has_result is then false). With arrays, the whole result; else
 * its head alone (a summary). */
static int row_to_job(sqlite3_stmt *st, job_record *j, bool arrays) {
  memset(j, 0, sizeof *j);
  j->seq = sqlite3_column_int64(st, 0);
  snprintf(j->id, sizeof j->id, "%s", (const char *)sqlite3_column_text(st, 1));
  snprintf(j->dataset, sizeof j->dataset, "%s", (const char *)sqlite3_column_text(st, 2));
  j->n = (size_t)sqlite3_column_int64(st, 3);
  j->status = (job_status)sqlite3_column_int(st, 4);
  j->progress = sqlite3_column_double(st, 5);
  j->created_at = sqlite3_column_double(st, 6);
  j->started_at = sqlite3_column_double(st, 7);
  j->finished_at = sqlite3_column_double(st, 8);
  j->timing.queue_ms = sqlite3_column_double(st, 9);
  j->timing.parse_ms = sqlite3_column_double(st, 10);
  j->timing.transfer_ms = sqlite3_column_double(st, 11);
  j->timing.kernel_ms = sqlite3_column_double(st, 12);
  j->timing.total_ms = sqlite3_column_double(st, 13);
  snprintf(j->device, sizeof j->device, "%s", (const char *)sqlite3_column_text(st, 14));
  snprintf(j->error, sizeof j->error, "%s", (const char *)sqlite3_column_text(st, 15));
  j->has_result = sqlite3_column_int(st, 16) != 0;
  job_params_from_json((const char *)sqlite3_column_text(st, 17), &j->params);
  const char *b = (const char *)sqlite3_column_text(st, 18);
  snprintf(j->dataset_b, sizeof j->dataset_b, "%s", b ? b : "");
  j->n_b = (size_t)sqlite3_column_int64(st, 19);
  j->attempts = (unsigned)sqlite3_column_int(st, 20);
  j->stored_bytes = (uint64_t)sqlite3_column_int64(st, 21);
  j->result_deleted_at = sqlite3_column_double(st, 22);
  j->follow = sqlite3_column_int(st, 23) != 0;
  if (!j->has_result)
    return 0;
  char why[400];
  if (histd_result_decode(sqlite3_column_blob(st, COL_HEAD),
                          (size_t)sqlite3_column_bytes(st, COL_HEAD),
                          arrays ? sqlite3_column_blob(st, COL_ARRAYS) : NULL,
                          arrays ? (size_t)sqlite3_column_bytes(st, COL_ARRAYS) : 0, &j->result,
                          why, sizeof why) != 0) {
    j->has_result = false;
    snprintf(j->error, sizeof j->error, "the stored result is corrupt: %s", why);
    return HISTD_EIO;
  }
  return 0;
}

const char *job_status_name(job_status s) {
  static const char *const names[] = {"queued", "running", "succeeded", "failed", "cancelled"};
  return (unsigned)s < JOB_STATUS_COUNT ? names[s] : "unknown";
}

int job_record_copy(job_record *dst, const job_record *src) {
  *dst = *src;
  memset(&dst->result, 0, sizeof dst->result);
  if (histd_params_copy(&dst->params, &src->params, NULL, 0) != 0)
    return HISTD_ENOMEM;
  if (src->has_result && histd_result_copy(&dst->result, &src->result) != 0) {
    histd_params_free(&dst->params);
    return HISTD_ENOMEM;
  }
  return 0;
}

void job_record_free(job_record *j) {
  if (j == NULL)
    return;
  if (j->has_result)
    histd_result_free(&j->result);
  histd_params_free(&j->params);
}

int store_put_job(store *s, job_record *j, char *msg, size_t msglen) {
  pthread_mutex_lock(&s->mu);
  sqlite3_stmt *st;
  int rc = 0;
  if (sqlite3_prepare_v2(s->db,
                         "INSERT INTO jobs (id, dataset, n, bucket_width, buckets, kernel, "
                         "block_size, precision, threads, devices, status, progress, "
                         "created_at, started_at, finished_at, params, dataset_b, n_b, "
                         "follow) VALUES (?,?,?,?,?,?,?,?,?,?,?,0,?,0,0,?,?,?,?)",
                         -1, &st, NULL) != SQLITE_OK) {
    rc = db_fail(s, msg, msglen, "store the job");
  } else {
    sqlite3_bind_text(st, 1, j->id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, j->dataset, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)j->n);
    const histd_params *p = &j->params;
    sqlite3_bind_double(st, 4, p->bucket_width);
    sqlite3_bind_int64(st, 5, p->buckets);
    sqlite3_bind_text(st, 6, p->exec.kernel, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 7, p->exec.block_size);
    sqlite3_bind_int(st, 8, (int)p->exec.precision);
    sqlite3_bind_int64(st, 9, p->exec.threads);
    sqlite3_bind_int64(st, 10, (sqlite3_int64)p->exec.devices);
    sqlite3_bind_int(st, 11, (int)j->status);
    sqlite3_bind_double(st, 12, j->created_at);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (f != NULL) {
      histd_params_write_json(f, p);
      fclose(f);
    }
    sqlite3_bind_text(st, 13, text ? text : "{}", -1, SQLITE_TRANSIENT);
    free(text);
    sqlite3_bind_text(st, 14, j->dataset_b, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 15, (sqlite3_int64)j->n_b);
    sqlite3_bind_int(st, 16, j->follow ? 1 : 0);
    if (sqlite3_step(st) != SQLITE_DONE)
      rc = db_fail(s, msg, msglen, "store the job");
    else
      j->seq = sqlite3_last_insert_rowid(s->db);
    sqlite3_finalize(st);
  }
  uint64_t seq = rc == 0 ? atomic_fetch_add(&s->committed, 1) + 1 : 0;
  pthread_mutex_unlock(&s->mu);
  return rc == 0 ? durable(s, seq, msg, msglen) : rc;
}

int store_update_job(store *s, const job_record *j, char *msg, size_t msglen) {
  return update_job(s, j, true, msg, msglen);
}

int store_mark_job_running(store *s, const job_record *j, char *msg, size_t msglen) {
  return update_job(s, j, false, msg, msglen);
}

static int update_job(store *s, const job_record *j, bool sync, char *msg, size_t msglen) {
  unsigned char *head = NULL, *arrays = NULL;
  size_t head_len = 0, arrays_len = 0;
  if (j->has_result) {
    int rc = histd_result_encode(&j->result, &head, &head_len, &arrays, &arrays_len, msg,
                                 msglen);
    const uint64_t bytes = (uint64_t)head_len + arrays_len;
    if (rc == 0 && s->max_result_bytes != 0 && bytes > s->max_result_bytes)
      rc = histd_fail(msg, msglen, HISTD_ETOOBIG,
                      "the result takes %llu bytes, more than the %llu a result may take "
                      "(--max-result-bytes)",
                      (unsigned long long)bytes, (unsigned long long)s->max_result_bytes);
    if (rc == 0)
      rc = store_room(s, "the result", bytes, msg, msglen);
    if (rc != 0) {
      free(head);
      free(arrays);
      return rc;
    }
  }
  pthread_mutex_lock(&s->mu);
  sqlite3_stmt *st;
  int rc = 0;
  if (sqlite3_prepare_v2(s->db,
                         "UPDATE jobs SET status=?, progress=?, started_at=?, finished_at=?, "
                         "t_queue=?, t_parse=?, t_transfer=?, t_kernel=?, t_total=?, device=?, "
                         "error=?, has_result=?, r_head=?, r_arrays=?, attempts=? WHERE id=?",
                         -1, &st, NULL) != SQLITE_OK) {
    rc = db_fail(s, msg, msglen, "update the job");
  } else {
    sqlite3_bind_int(st, 1, (int)j->status);
    sqlite3_bind_double(st, 2, j->progress);
    sqlite3_bind_double(st, 3, j->started_at);
    sqlite3_bind_double(st, 4, j->finished_at);
    sqlite3_bind_double(st, 5, j->timing.queue_ms);
    sqlite3_bind_double(st, 6, j->timing.parse_ms);
    sqlite3_bind_double(st, 7, j->timing.transfer_ms);
    sqlite3_bind_double(st, 8, j->timing.kernel_ms);
    sqlite3_bind_double(st, 9, j->timing.total_ms);
    sqlite3_bind_text(st, 10, j->device, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 11, j->error, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 12, j->has_result ? 1 : 0);
    if (j->has_result) {
      sqlite3_bind_blob64(st, 13, head, (sqlite3_uint64)head_len, SQLITE_STATIC);
      sqlite3_bind_blob64(st, 14, arrays, (sqlite3_uint64)arrays_len, SQLITE_STATIC);
    }
    sqlite3_bind_int(st, 15, (int)j->attempts);
    sqlite3_bind_text(st, 16, j->id, -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_DONE)
      rc = db_fail(s, msg, msglen, "update the job");
    sqlite3_finalize(st);
  }
  uint64_t seq = rc == 0 ? atomic_fetch_add(&s->committed, 1) + 1 : 0;
  pthread_mutex_unlock(&s->mu);
  free(head);
  free(arrays);
  return rc == 0 && sync ? durable(s, seq, msg, msglen) : rc;
}

int store_get_job(store *s, const char *id, job_record *j, bool arrays) {
  sqlite3 *db = reader_take(s);
  sqlite3_stmt *st;
  int rc = HISTD_EIO;
  if (db != NULL &&
      sqlite3_prepare_v2(db,
                         arrays ? "SELECT " JOB_COLUMNS ", r_arrays FROM jobs WHERE id = ?"
                                : "SELECT " JOB_COLUMNS " FROM jobs WHERE id = ?",
                         -1, &st, NULL) == SQLITE_OK) {
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    rc = HISTD_ENOENT;
    if (sqlite3_step(st) == SQLITE_ROW)
      rc = row_to_job(st, j, arrays);
    sqlite3_finalize(st);
  }
  reader_give(s, db);
  return rc;
}

static int list_jobs(store *s, const char *sql, sqlite3_int64 limit,
                     bool (*fn)(const job_record *j, void *u), void *u) {
  sqlite3 *db = reader_take(s);
  sqlite3_stmt *st;
  if (db == NULL || sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
    reader_give(s, db);
    return HISTD_EIO;
  }
  if (limit != 0)
    sqlite3_bind_int64(st, 1, limit);
  size_t cap = 16, count = 0;
  job_record *rows = malloc(cap * sizeof *rows);
  while (rows != NULL && sqlite3_step(st) == SQLITE_ROW) {
    if (count == cap) {
      job_record *bigger = realloc(rows, 2 * cap * sizeof *rows);
      if (bigger == NULL)
        break;
      rows = bigger;
      cap *= 2;
    }
    (void)row_to_job(st, &rows[count++], false); /* no counts: cannot fail */
  }
  sqlite3_finalize(st);
  reader_give(s, db);
  if (rows == NULL)
    return HISTD_ENOMEM;
  bool go = true;
  for (size_t i = 0; i < count; i++) {
    if (go)
      go = fn(&rows[i], u);
    job_record_free(&rows[i]);
  }
  free(rows);
  return 0;
}

int store_list_jobs(store *s, size_t limit, bool with_results,
                    bool (*fn)(const job_record *j, void *u), void *u) {
  (void)with_results;
  return list_jobs(s, "SELECT " JOB_COLUMNS " FROM jobs ORDER BY seq DESC LIMIT ?",
                   limit ? (sqlite3_int64)limit : -1, fn, u);
}

int store_unfinished_jobs(store *s, bool (*fn)(const job_record *j, void *u), void *u) {
  return list_jobs(s, "SELECT " JOB_COLUMNS " FROM jobs WHERE status <= 1 ORDER BY seq", 0, fn,
                   u);
}

int store_delete_result(store *s, const char *id, double at, char *msg, size_t msglen) {
  pthread_mutex_lock(&s->mu);
  sqlite3_stmt *st;
  int rc = 0;
  if (sqlite3_prepare_v2(s->db,
                         "UPDATE jobs SET has_result = 0, r_head = NULL, r_arrays = NULL, "
                         "result_deleted_at = ? "
                         "WHERE id = ? AND status = 2 AND has_result = 1",
                         -1, &st, NULL) != SQLITE_OK) {
    rc = db_fail(s, msg, msglen, "delete the result");
  } else {
    sqlite3_bind_double(st, 1, at);
    sqlite3_bind_text(st, 2, id, -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_DONE)
      rc = db_fail(s, msg, msglen, "delete the result");
    else if (sqlite3_changes(s->db) == 0)
      rc = histd_fail(msg, msglen, HISTD_ENOENT, "job %s has no stored result", id);
    sqlite3_finalize(st);
  }
  uint64_t seq = rc == 0 ? atomic_fetch_add(&s->committed, 1) + 1 : 0;
  pthread_mutex_unlock(&s->mu);
  if (rc == 0)
    rc = durable(s, seq, msg, msglen);
  if (rc == 0)
    store_pairs_drop(s, id);
  if (rc == 0) { /* the zeroed pages' copy leaves the WAL (best effort: a reader may hold it) */
    pthread_mutex_lock(&s->mu);
    sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
    pthread_mutex_unlock(&s->mu);
  }
  return rc;
}

int store_expire_jobs(store *s, double before, uint64_t *deleted, char *msg, size_t msglen) {
  pthread_mutex_lock(&s->mu);
  sqlite3_stmt *st;
  int rc = 0;
  *deleted = 0;
  /* the pair lists of the jobs that go */
  if (sqlite3_prepare_v2(s->db,
                         "SELECT id FROM jobs WHERE status >= 2 AND finished_at > 0 "
                         "AND finished_at < ?",
                         -1, &st, NULL) == SQLITE_OK) {
    sqlite3_bind_double(st, 1, before);
    while (sqlite3_step(st) == SQLITE_ROW)
      store_pairs_drop(s, (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
  }
  if (sqlite3_prepare_v2(s->db,
                         "DELETE FROM jobs WHERE status >= 2 AND finished_at > 0 "
                         "AND finished_at < ?",
                         -1, &st, NULL) != SQLITE_OK) {
    rc = db_fail(s, msg, msglen, "expire old jobs");
  } else {
    sqlite3_bind_double(st, 1, before);
    if (sqlite3_step(st) != SQLITE_DONE)
      rc = db_fail(s, msg, msglen, "expire old jobs");
    else
      *deleted = (uint64_t)sqlite3_changes(s->db);
    sqlite3_finalize(st);
  }
  pthread_mutex_unlock(&s->mu);
  return rc;
}

int store_count_jobs(store *s, uint64_t counts[JOB_STATUS_COUNT]) {
  memset(counts, 0, sizeof(uint64_t) * JOB_STATUS_COUNT);
  sqlite3 *db = reader_take(s);
  sqlite3_stmt *st;
  int rc = HISTD_EIO;
  if (db != NULL && sqlite3_prepare_v2(db, "SELECT status, count(*) FROM jobs GROUP BY status",
                                       -1, &st, NULL) == SQLITE_OK) {
    while (sqlite3_step(st) == SQLITE_ROW) {
      int status = sqlite3_column_int(st, 0);
      if (status >= 0 && status < JOB_STATUS_COUNT)
        counts[status] = (uint64_t)sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    rc = 0;
  }
  reader_give(s, db);
  return rc;
}
