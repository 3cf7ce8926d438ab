/*
 * store.h -- this host's storage (store.c, store_legacy.c, atoms.c): the
 * SQLite metadata of datasets and jobs, results, payload files on disk,
 * and the records the rest of the service hands around (dataset_meta,
 * job_record). Below the backends: it knows nothing of queues, HTTP or
 * the cluster.
 */
#ifndef HISTD_STORE_H
#define HISTD_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "histd/histd.h"
#include "histd/io.h"
#include "histd/job.h"
#include "histd/params.h"

typedef struct store store;

typedef struct dataset_meta {
  char id[65];
  size_t n;
  char format[16];
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
  double expires_at; /* when the daemon deletes it (wall-clock seconds); 0: never */
  bool growing;      /* uploaded with ?growing=true: an id of its own, frames appended
                      * (store_append_frames) until it is sealed            */
  bool sealed;       /* growing, and takes no more frames                   */
  uint64_t bytes;    /* growing: its segments' payload bytes                */
  bool sky;          /* a sky catalogue: the payload keeps ra, dec, dist       */
  double omega_m;    /* the Omega_m that made its distances from z; 0: given   */
  uint32_t regions;  /* K > 0: the payload keeps a region label a point (0..K-1) */
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
 * Schema 11 adds a sky catalogue's columns (when `sky`): ra, dec and dist,
 * three float64 a point, then (when `regions`) the region labels, int32
 * little-endian, two to each 8 bytes (the last 4 zero for an odd n).
 */
/* Where the sky columns start in the payload, in doubles from its start. */
uint64_t dataset_sky_offset(const dataset_meta *m);
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

/* A job as the store keeps it (and as the backends hand it around). */
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
  bool follow;          /* "follow": the result is kept current as frames arrive; while
                         * running, `result` is the latest (its frames the ones done) */
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
 * the stored one). expires_at: when the dataset is to be deleted (0:
 * never); the same points stored again keep the later of the two times,
 * and never when either upload asked for never. */
int store_put_dataset(store *s, const histd_dataset *ds, const char *format,
                      const char *name, double expires_at, bool growing, dataset_meta *meta,
                      bool *created, char *msg, size_t msglen);
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
                          const char *format, const char *name, double expires_at,
                          bool growing, dataset_meta *meta, bool *created, char *msg,
                          size_t msglen);
int store_put_streamed(store *s, const char *tmp_path, const char *id, size_t n,
                       const double min[3], const double max[3], const char *format,
                       const char *name, double expires_at, bool growing, dataset_meta *meta,
                       bool *created, char *msg, size_t msglen);
/* growing (every store_put_*): the dataset is stored under an id of its own,
 * as its first segment, never shared with an identical upload (*created is
 * true); frames are appended to it until it is sealed.
 *
 * Appends ds's frames (its atoms a frame the dataset's, checked by the
 * caller) to the growing dataset id, durably: the segment's file synced,
 * then its row and the dataset's counts in one transaction. at >= 0: the
 * frames are sent to start at frame `at`, which must be the dataset's
 * frame count, or the first frame of the same frames appended already
 * (then nothing changes: a retry; *appended false). 0 and meta the
 * dataset's new row; HISTD_ENOENT; HISTD_EINVAL (a sentence: not growing,
 * sealed, or ?at= off); or another error. */
int store_append_frames(store *s, const char *id, const histd_dataset *ds, int64_t at,
                        dataset_meta *meta, bool *appended, char *msg, size_t msglen);
/* Seals a growing dataset (again: no change): 0, HISTD_ENOENT, HISTD_EINVAL
 * (it does not grow), or another error. */
int store_seal_dataset(store *s, const char *id, dataset_meta *meta, char *msg, size_t msglen);
/* A growing dataset's segments in the order of their frames, each as a
 * dataset of its own (meta.id: its payload's hash) and its first frame in
 * the dataset; *out malloc'd. 0, HISTD_EIO, HISTD_ENOMEM. */
typedef struct dataset_segment {
  dataset_meta meta;
  uint64_t first_frame;
} dataset_segment;
int store_dataset_segments(store *s, const char *id, dataset_segment **out, size_t *count);
int store_get_dataset(store *s, const char *id, dataset_meta *meta); /* 0 / HISTD_ENOENT */
/* Calls fn for each dataset, newest first; fn returns false to stop. */
int store_list_datasets(store *s, size_t limit,
                        bool (*fn)(const dataset_meta *m, void *u), void *u);
int store_delete_dataset(store *s, const char *id, char *msg, size_t msglen);
/* Calls fn with the id of each dataset whose expires_at has come (0 <
 * expires_at <= now), soonest first; fn returns false to stop. */
int store_expired_datasets(store *s, double now, bool (*fn)(const char *id, void *u), void *u);
void store_set_dataset_error(store *s, const char *id, const char *error);
/* The payload file's path and whether it exists with the right size. */
void store_payload_path(const store *s, const char *id, char *path, size_t len);
void store_check_payload(store *s, dataset_meta *m);

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

#endif
