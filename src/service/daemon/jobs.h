/*
 * jobs.h -- the job front (jobs.c): how the routes reach the backend's
 * jobs (backend.h), and GET /v1/jobs/{id}?wait=S.
 */
#ifndef HISTD_JOBS_H
#define HISTD_JOBS_H

#include <stdbool.h>
#include <stddef.h>

#include "backend.h"
#include "metrics.h"
#include "store.h"

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
/* An events stream's wait (events.c, from its content reader): conn
 * suspended until the job ends, has a new result, or the deadline; false
 * (not suspended) when the daemon is stopping. */
bool jobs_stream_wait(jobs *q, const char *id, struct MHD_Connection *conn, double deadline);
/* Frames were appended to a growing dataset, or it was sealed: the jobs
 * that follow it look again. */
void jobs_dataset_grew(jobs *q, const char *dataset);
/* From the loop: resumes waiters whose job ended (or, for a stream, has a
 * new result) or whose deadline passed (all of them when `all`). */
void jobs_resume_waiters(jobs *q, bool all);

#endif
