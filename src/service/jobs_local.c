/*
 * jobs_local.c -- the single-host backend (backend.h): the job queue and
 * the worker pool of one daemon, its jobs and datasets in its own store.
 *
 * The shape is redis's bio.c: a mutex, a condition variable, a FIFO of
 * jobs, and a few threads that pop, work without the lock, and report back.
 * Each worker thread owns one histd_worker: one per GPU when the engine
 * finds GPUs (plus one CPU worker, so jobs that name a CPU kernel still
 * run), else CPU workers. A worker takes the oldest queued job it can run
 * (a CUDA kernel needs a GPU worker, a CPU kernel a CPU one, "auto" either),
 * so one engine's backlog never blocks the other's.
 *
 * A job's life: submit writes the row (status queued) and only then answers
 * 202, so an accepted job survives a crash. A worker marks it running in
 * the store, maps the dataset (datasets.c, shared, never copied), runs it
 * with a histd_control whose cancelled() reads the job's cancel flag and
 * the pool's stop flag, and writes the outcome and result in one UPDATE.
 * Progress moves in memory only (an atomic double the engine writes from
 * its threads); the store sees state changes, never ticks.
 *
 * The queue's mutex is never held across a store call: a store write
 * waits for the disk (store.c's group commit), and under the mutex it
 * would make every worker, every GET of a live job and the loop wait on
 * it too. So submit reserves a place in the queue (q->reserved, counted
 * against --queue-limit), writes the row unlocked, then appends; a queued
 * job being cancelled is marked (`cancelling`: no worker takes it, a
 * second DELETE waits) while its row is written.
 *
 * A job's end is only what the store records. When the row cannot say
 * it (a full disk, a result past --max-data-bytes), the job is failed
 * with the store's sentence instead: a result that cannot be stored
 * fails the job, whose failed row (small) is written in its place; a job
 * that cannot even be recorded as running fails before it runs. If even
 * the failed row cannot be written, the job stays in memory (q->ended)
 * as failed, so GET tells the truth until the daemon stops (after a
 * restart it runs again: the store still has it queued). The metrics
 * count what the job finally was.
 *
 * Stopping (SIGTERM) interrupts running jobs and leaves them, like the
 * queued ones, queued in the store: the next start runs them again. A
 * kill -9 leaves rows that say queued or running; startup treats both as
 * queued. So jobs are at-least-once, and a result is written exactly when
 * a run completes.
 *
 * But a job that crashes the daemon would crash it at every start. So a
 * job's row counts its attempts: the running row a worker writes before
 * the run counts it (store_mark_job_running), and a run that ends
 * cleanly interrupted by a stop takes its count back. At a start, then,
 * an unfinished job's attempts are the runs the daemon died during; at
 * --max-job-attempts (3) the job fails with a sentence naming the count
 * instead of running again.
 *
 * Finished jobs leave memory: GET reads them from the store. Memory holds
 * only queued and running jobs, so a long-lived daemon's RSS does not grow
 * with its history.
 *
 * A following job ("follow": true, on a growing dataset) does not hold a
 * worker while it waits for frames. A worker runs it over the frames the
 * dataset has, one stored segment at a time (the upload's, then each
 * append's), adds each segment's result to the job's kept result
 * (follow.c) and records it -- the job running, its result the frames so
 * far, durable before anyone is shown it (job_updated) -- and then parks
 * the job (q->parked) and takes other work. An append or a seal of the
 * dataset (dataset_grew) puts the job back in the queue; a job that finds
 * the dataset sealed and every frame counted succeeds with its result.
 * Each pass is counted in the job's attempts like a run, and its update
 * takes the count back. A restart reads the kept result back with the
 * job (restore_one) and goes on from its frames.
 *
 * What the daemon above it learns, it learns through the events it gave
 * at start (backend_events): a job that left the queue (job_ended: the
 * long-polls waiting on it answer), a job's final status for the metrics
 * (job_counted), a GPU that lost its CUDA context (gpu_lost). The backend
 * never calls up into the daemon; it does not know there is HTTP.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "histd/io.h"
#include "histd/job.h"
#include "backend.h"
#include "bind.h"
#include "follow.h"
#include "util.h"

typedef struct queue queue;

typedef struct job {
  job_record rec;
  _Atomic double progress;
  _Atomic size_t frames; /* what the running job counts: progress x frames are done */
  atomic_bool cancel;
  bool cancelling; /* queued, its cancellation being written (q->mu) */
  bool parked;     /* following, between passes: in q->parked or queued again (q->mu) */
  bool grew;       /* following, on a worker: its dataset grew since the pass began (q->mu) */
  struct job *next;
} job;

typedef struct worker {
  pthread_t tid;
  queue *q;
  histd_worker *engine;
  int device;           /* -1: CPU */
  uint32_t cpu_threads; /* CPU threads per job on a CPU worker */
  job *current;
  loaded_dataset *prefetched;
  bool started;
  bool lost; /* its GPU hit a sticky CUDA error: it takes no more jobs */
} worker;

struct queue {
  backend_env env;
  backend_events ev;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  job *head, *tail;
  size_t depth;
  size_t reserved; /* submits writing their row: places in the queue held */
  job *ended;      /* ended, but the store could not record how (see above) */
  job *parked;     /* following jobs waiting for their dataset's next frames */
  worker *workers;
  int nworkers;
  bool has_gpu;
  atomic_bool stopping; /* written under mu; read without it by on_cancelled */
};

/* ---- helpers (q->mu held) ------------------------------------------------------------ */

/* A queued or running job. */
static job *find_live_locked(queue *q, const char *id, worker **on) {
  for (int i = 0; i < q->nworkers; i++)
    if (q->workers[i].current != NULL && strcmp(q->workers[i].current->rec.id, id) == 0) {
      if (on)
        *on = &q->workers[i];
      return q->workers[i].current;
    }
  for (int list = 0; list < 2; list++)
    for (job *j = list == 0 ? q->head : q->parked; j != NULL; j = j->next)
      if (strcmp(j->rec.id, id) == 0) {
        if (on)
          *on = NULL;
        return j;
      }
  return NULL;
}

/* A queued or running job, or one whose end only memory knows (*on NULL). */
static job *find_locked(queue *q, const char *id, worker **on) {
  job *j = find_live_locked(q, id, on);
  for (job *e = q->ended; j == NULL && e != NULL; e = e->next)
    if (strcmp(e->rec.id, id) == 0) {
      if (on)
        *on = NULL;
      j = e;
    }
  return j;
}

/* A job to queue: rec as it is to be run (queued, not started, no result). */
static job *job_new(const job_record *rec) {
  job *j = calloc(1, sizeof *j);
  if (j == NULL)
    return NULL;
  j->rec = *rec;
  j->rec.has_result = false;
  memset(&j->rec.result, 0, sizeof j->rec.result);
  if (histd_params_copy(&j->rec.params, &rec->params, NULL, 0) != 0) {
    free(j);
    return NULL;
  }
  j->rec.status = JOB_QUEUED;
  j->rec.started_at = 0;
  j->rec.progress = 0;
  atomic_init(&j->progress, 0.0);
  atomic_init(&j->frames, 0);
  atomic_init(&j->cancel, false);
  return j;
}

static void append_locked(queue *q, job *j) {
  if (q->tail)
    q->tail->next = j;
  else
    q->head = j;
  q->tail = j;
  q->depth++;
}

/* Takes a parked following job out of q->parked; false when it is not there. */
static bool unpark_locked(queue *q, job *target) {
  for (job **p = &q->parked; *p != NULL; p = &(*p)->next)
    if (*p == target) {
      *p = target->next;
      target->next = NULL;
      return true;
    }
  return false;
}

static void unlink_locked(queue *q, job *target) {
  job *prev = NULL;
  for (job *j = q->head; j != NULL; prev = j, j = j->next) {
    if (j != target)
      continue;
    if (prev)
      prev->next = j->next;
    else
      q->head = j->next;
    if (q->tail == j)
      q->tail = prev;
    q->depth--;
    j->next = NULL;
    return;
  }
}

static bool fits(const worker *w, const job *j) {
  if (w->lost)
    return false;
  const histd_kernel *k = histd_kernel_find(j->rec.params.exec.kernel);
  if (k == NULL)
    return w->device < 0; /* fails with a sentence wherever it runs */
  /* ANY kernels ("auto", "grid") run on the GPUs when there are some */
  if (w->device < 0)
    return k->engine == HISTD_ENGINE_CPU || (k->engine == HISTD_ENGINE_ANY && !w->q->has_gpu);
  if (k->engine == HISTD_ENGINE_CPU)
    return false;
  uint64_t mask = j->rec.params.exec.devices;
  return mask == 0 || (w->device < 64 && (mask & (UINT64_C(1) << w->device)));
}

static job *take_locked(queue *q, worker *w) {
  for (job *j = q->head; j != NULL; j = j->next)
    if (!j->cancelling && fits(w, j)) {
      unlink_locked(q, j);
      return j;
    }
  return NULL;
}

static void copy_record(const job *j, job_record *out) {
  if (job_record_copy(out, &j->rec) != 0) { /* the job without its result */
    *out = j->rec;
    out->has_result = false;
    memset(&out->result, 0, sizeof out->result);
    histd_params_copy(&out->params, &j->rec.params, NULL, 0);
  }
  out->progress = atomic_load(&((job *)j)->progress);
  out->frames = atomic_load(&((job *)j)->frames);
}

static void job_free(job *j) {
  if (j == NULL)
    return;
  job_record_free(&j->rec);
  free(j);
}

/* ---- the engine's callbacks ---------------------------------------------------------- */

typedef struct run_ctx {
  job *job;
  queue *q;
  histd_pair_file *pairs; /* a pair list's file, for on_pairs; NULL: none */
  double p0, p1;          /* the run's share of the job's progress (a following job's pass) */
} run_ctx;

static int on_pairs(void *user, const histd_pair_record *r, size_t n, char *msg, size_t msglen) {
  run_ctx *c = user;
  return histd_pair_file_put(c->pairs, r, n, msg, msglen);
}

/* A pair list's room: --max-pairs-bytes, and what the data dir's budget
 * has left (0: no limit). */
static uint64_t pairs_room(const backend_env *env) {
  uint64_t room = env->cfg->max_pairs_bytes;
  if (env->cfg->max_data_bytes != 0) {
    const uint64_t held = store_data_bytes(env->store);
    const uint64_t left =
        held < env->cfg->max_data_bytes ? env->cfg->max_data_bytes - held : 1;
    room = room == 0 || left < room ? left : room;
  }
  return room;
}

static void on_progress(void *user, double fraction) {
  run_ctx *c = user;
  atomic_store(&c->job->progress, c->p0 + fraction * (c->p1 - c->p0));
}

static bool on_cancelled(void *user) {
  run_ctx *c = user;
  if (atomic_load(&c->job->cancel))
    return true;
  return atomic_load_explicit(&c->q->stopping, memory_order_relaxed);
}

/* ---- the worker thread ----------------------------------------------------------------- */

static void prefetch_next(worker *w, const char *current_dataset) {
  queue *q = w->q;
  char next_id[65] = "";
  pthread_mutex_lock(&q->mu);
  for (job *j = q->head; j != NULL; j = j->next)
    if (!j->cancelling && fits(w, j)) {
      if (!j->rec.follow) /* (a following job reads its new frames alone) */
        snprintf(next_id, sizeof next_id, "%s", j->rec.dataset);
      break;
    }
  pthread_mutex_unlock(&q->mu);
  if (next_id[0] == '\0' || strcmp(next_id, current_dataset) == 0)
    return;
  loaded_dataset *d;
  char msg[256];
  if (dataset_acquire(q->env.cache, next_id, &d, msg, sizeof msg) != 0)
    return; /* the job will fail with the sentence when it runs */
  if (histd_worker_prefetch(w->engine, loaded_dataset_points(d), msg, sizeof msg) != 0) {
    dataset_release(q->env.cache, d);
    return;
  }
  w->prefetched = d; /* alive until after the next run */
}

/* Writes the job's end `r` (a copy: until it is recorded, GET shows the
 * job still running), then publishes it in j->rec. When the store cannot
 * take it, the job fails with the store's sentence (without its result);
 * when even that cannot be written, it is kept in q->ended. Returns true
 * when the job can leave memory. */
static bool record_end(queue *q, job *j, job_record *r) {
  char msg[256];
  histd_result lost; /* a result that could not be stored: freed once unpublished */
  memset(&lost, 0, sizeof lost);
  bool recorded = store_update_job(q->env.store, r, msg, sizeof msg) == 0;
  if (!recorded) {
    fprintf(stderr, "histd: job %s: %s\n", r->id, msg);
    if (r->status == JOB_SUCCEEDED) { /* its result cannot be kept */
      r->status = JOB_FAILED;
      snprintf(r->error, sizeof r->error, "the result could not be stored: %s", msg);
      lost = r->result; /* (a following job's is still j->rec's, which GETs read) */
      memset(&r->result, 0, sizeof r->result);
      r->has_result = false;
    }
    /* interrupted by a stop (queued): the store has it queued or running,
     * and either way the next start runs it again */
    recorded = r->status == JOB_QUEUED ||
               store_update_job(q->env.store, r, msg, sizeof msg) == 0;
    if (!recorded)
      fprintf(stderr, "histd: job %s: its end is not recorded either (%s); it is kept in "
                      "memory as %s\n", r->id, msg, job_status_name(r->status));
  }
  pthread_mutex_lock(&q->mu);
  j->rec = *r;
  if (!recorded) {
    j->next = q->ended;
    q->ended = j;
  }
  pthread_mutex_unlock(&q->mu);
  histd_result_free(&lost);
  return recorded;
}

/* A run's end (rc; ran: the dataset was there to run on): the job's end
 * recorded and published (record_end), or, interrupted by a stop, queued
 * again; the events. res (taken) is the result of a success; a following
 * job's is its kept one (j->rec.result), which it keeps when interrupted
 * (the next start goes on from it) and loses when it fails or is
 * cancelled, as any job does. */
static void end_run(worker *w, job *j, int rc, bool ran, histd_result *resp, const char *msg,
                    double t_start, double t_loaded, double t_end) {
  queue *q = w->q;
  const backend_env *env = &q->env;
  histd_result res = *resp;
  memset(resp, 0, sizeof *resp);
  histd_result dropped; /* a following job's kept result, when it ends without one */
  memset(&dropped, 0, sizeof dropped);
  pthread_mutex_lock(&q->mu);
  bool interrupted = ran && rc == HISTD_ECANCELED && !atomic_load(&j->cancel) &&
                     atomic_load(&q->stopping);
  if (j->rec.follow && !interrupted && j->rec.has_result) { /* (GETs copy it under q->mu) */
    if (rc == 0) { /* the end's record shares it: j->rec shows it until record_end
                    * publishes the end (no window where the job runs without one) */
      res = j->rec.result;
    } else {
      dropped = j->rec.result;
      memset(&j->rec.result, 0, sizeof j->rec.result);
      j->rec.has_result = false;
    }
  }
  job_record end = j->rec, *r = &end; /* published by record_end */
  if (interrupted) {
    /* Back to queued in the store: the next start runs it again, and this
     * run, which ended cleanly, is not counted against it. */
    r->status = JOB_QUEUED;
    r->attempts--;
    r->started_at = 0;
    r->progress = 0;
    memset(&r->timing, 0, sizeof r->timing);
  } else {
    r->finished_at = wall_now();
    r->timing.queue_ms = (r->started_at - r->created_at) * 1000.0;
    if (r->timing.queue_ms < 0)
      r->timing.queue_ms = 0;
    r->timing.parse_ms = t_loaded - t_start;
    r->timing.total_ms = t_end - t_start;
    if (rc == 0) {
      r->status = JOB_SUCCEEDED;
      r->progress = 1;
      r->timing.transfer_ms = res.timing.transfer_ms;
      r->timing.kernel_ms = res.timing.kernel_ms;
      res.timing = r->timing;
      snprintf(r->device, sizeof r->device, "%s", res.device);
      r->result = res;
      r->has_result = true;
      memset(&res, 0, sizeof res);
    } else if (rc == HISTD_ECANCELED) {
      r->status = JOB_CANCELLED;
      r->progress = atomic_load(&j->progress);
      snprintf(r->error, sizeof r->error, "the job was cancelled");
    } else {
      r->status = JOB_FAILED;
      r->progress = atomic_load(&j->progress);
      snprintf(r->error, sizeof r->error, "%s", msg[0] ? msg : histd_strerror(rc));
    }
  }
  pthread_mutex_unlock(&q->mu);
  histd_result_free(&res);
  histd_result_free(&dropped);

  bool left = record_end(q, j, r); /* may turn a success into a failure */
  if (r->status != JOB_SUCCEEDED && !interrupted)
    store_pairs_drop(env->store, r->id); /* a list kept for a result not recorded */
  if (!interrupted)
    q->ev.job_counted(q->ev.u, r->status, (t_end - t_start) / 1000.0,
                      r->status == JOB_SUCCEEDED ? r->result.total : 0);
  char id[sizeof r->id];
  memcpy(id, r->id, sizeof id); /* (j may leave memory below) */

  pthread_mutex_lock(&q->mu);
  w->current = NULL;
  w->lost = w->lost || rc == HISTD_EGPULOST;
  pthread_mutex_unlock(&q->mu);
  if (left)
    job_free(j);
  if (rc == HISTD_EGPULOST)
    q->ev.gpu_lost(q->ev.u, msg);
  q->ev.job_ended(q->ev.u, id);
}


static void run_one(worker *w, job *j) {
  queue *q = w->q;
  const backend_env *env = &q->env;
  char msg[512] = "";
  double t_start = histd_now_ms();

  loaded_dataset *d = NULL;
  histd_result res;
  memset(&res, 0, sizeof res);
  char why[256];
  int rc = store_mark_job_running(env->store, &j->rec, why, sizeof why);
  if (rc != 0) /* not recorded as running: do not run it unrecorded */
    snprintf(msg, sizeof msg, "the job could not be recorded as running: %s", why);
  else
    rc = dataset_acquire(env->cache, j->rec.dataset, &d, msg, sizeof msg);
  double t_loaded = histd_now_ms();
  loaded_dataset *old_prefetch = w->prefetched;
  w->prefetched = NULL;
  if (rc == 0 && w->device >= 0)
    prefetch_next(w, j->rec.dataset);
  bool ran = rc == 0;
  dataset_release(env->cache, old_prefetch);

  if (rc == 0) {
    histd_exec ex = j->rec.params.exec;
    if (w->device < 0 && ex.threads == 0)
      ex.threads = w->cpu_threads;
    run_ctx ctx = {j, q, NULL, 0, 1};
    histd_control ctl = {on_progress, on_cancelled, &ctx, on_pairs};
    job_binding b;
    int pairs_fd = -1;
    rc = job_bind(env->cache, &j->rec, d, NULL, NULL, &b, msg, sizeof msg);
    if (rc == 0 && histd_statistic_about(b.prob.statistic)->answer == HISTD_ANSWER_PAIRS) {
      /* the list goes to its file */
      b.prob.result_limit = pairs_room(env);
      if ((ctx.pairs = malloc(sizeof *ctx.pairs)) == NULL)
        rc = histd_fail(msg, sizeof msg, HISTD_ENOMEM, "out of memory for the pair list");
      else if ((rc = store_pairs_temp(env->store, j->rec.id, &pairs_fd, msg, sizeof msg)) == 0)
        histd_pair_file_init(ctx.pairs, pairs_fd, b.prob.result_limit);
      if (rc != 0)
        job_unbind(env->cache, &b);
    }
    if (rc == 0) {
      atomic_store(&j->frames, histd_problem_frames(&b.prob));
      rc = histd_worker_run(w->engine, &b.prob, &ex, &ctl, &res, msg, sizeof msg);
      if (rc == 0 && ctx.pairs != NULL)
        rc = histd_pair_file_flush(ctx.pairs, false, msg, sizeof msg);
      if (pairs_fd >= 0) { /* synced and kept with a result, else removed */
        int kept = store_pairs_keep(env->store, j->rec.id, pairs_fd, rc == 0, msg, sizeof msg);
        rc = rc != 0 ? rc : kept;
      }
      free(ctx.pairs);
      if (rc == 0)
        histd_job_label(&j->rec.params, &res);
      job_unbind(env->cache, &b);
    }
  }
  dataset_release(env->cache, d);
  double t_end = histd_now_ms();
  end_run(w, j, rc, ran, &res, msg, t_start, t_loaded, t_end);
}

/* ---- following jobs ---------------------------------------------------------------- */

/* One pass of a following job: the frames of its dataset's segment from
 * frame `done` on (the dataset has `total` so far), run with p, added to
 * the job's kept result, recorded (durable: the running row with the
 * result of frames 0..done + the segment's, its attempts back to before
 * the pass) and then published. */
static int follow_pass(worker *w, job *j, const histd_params *p, uint64_t done, uint64_t total,
                       char *msg, size_t msglen) {
  queue *q = w->q;
  const backend_env *env = &q->env;
  loaded_dataset *seg;
  int rc = dataset_acquire_segment(env->cache, j->rec.dataset, done, &seg, msg, msglen);
  if (rc != 0)
    return rc;
  const uint64_t frames = histd_dataset_frames(loaded_dataset_points(seg));
  job_record view = j->rec; /* (shallow: the pass's parameters) */
  view.params = *p;
  job_binding b;
  histd_result part;
  memset(&part, 0, sizeof part);
  rc = job_bind(env->cache, &view, seg, NULL, NULL, &b, msg, msglen);
  if (rc == 0) {
    histd_exec ex = p->exec;
    if (w->device < 0 && ex.threads == 0)
      ex.threads = w->cpu_threads;
    run_ctx ctx = {j, q, NULL, (double)done / (double)total,
                   (double)(done + frames) / (double)total};
    histd_control ctl = {on_progress, on_cancelled, &ctx, on_pairs};
    rc = histd_worker_run(w->engine, &b.prob, &ex, &ctl, &part, msg, msglen);
    job_unbind(env->cache, &b);
  }
  dataset_release(env->cache, seg);
  if (rc != 0)
    return rc;
  /* the kept result and this pass's, added in a copy that GETs do not see yet */
  histd_result next;
  if (j->rec.has_result) {
    if (histd_result_copy(&next, &j->rec.result) != 0)
      rc = histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for the job's result");
    else if ((rc = follow_add(&next, &part, j->rec.dataset_b[0] != '\0', msg, msglen)) != 0)
      histd_result_free(&next);
    histd_result_free(&part);
  } else {
    next = part;
  }
  if (rc != 0)
    return rc;
  histd_job_label(&j->rec.params, &next);
  next.blocks = next.frames >= j->rec.params.blocks ? j->rec.params.blocks : 0;
  job_record r = j->rec; /* (shallow) */
  r.result = next;
  r.has_result = true;
  r.attempts--; /* the pass ended */
  r.progress = (double)(done + frames) / (double)total;
  snprintf(r.device, sizeof r.device, "%s", next.device);
  if ((rc = store_update_job(env->store, &r, msg, msglen)) != 0) {
    histd_result_free(&next);
    return rc;
  }
  pthread_mutex_lock(&q->mu);
  histd_result old = j->rec.result;
  bool had = j->rec.has_result;
  j->rec.result = next;
  j->rec.has_result = true;
  j->rec.attempts = r.attempts;
  snprintf(j->rec.device, sizeof j->rec.device, "%s", r.device);
  pthread_mutex_unlock(&q->mu);
  if (had)
    histd_result_free(&old);
  if (q->ev.job_updated != NULL)
    q->ev.job_updated(q->ev.u, j->rec.id);
  return 0;
}

/* A following job on a worker: passes over the frames its dataset has
 * that its result has not counted, then parked until the dataset grows
 * (dataset_grew), or ended: succeeded once the dataset is sealed and
 * every frame counted, cancelled, failed, or queued again by a stop. Each
 * pass is counted in attempts while it runs (the row marked running
 * first), and its update takes the count back. */
static void run_follow(worker *w, job *j) {
  queue *q = w->q;
  const backend_env *env = &q->env;
  char msg[512] = "", why[256];
  double t_start = histd_now_ms();
  histd_params p; /* a pass's: blocks are the whole result's (follow_pass) */
  int rc = histd_params_copy(&p, &j->rec.params, msg, sizeof msg);
  if (rc == 0) {
    p.per_frame = p.per_frame || p.blocks > 0;
    p.blocks = 0;
  }
  bool counted = true; /* j->rec.attempts counts a pass (worker_main counted this one) */
  bool ran = false;
  while (rc == 0) {
    pthread_mutex_lock(&q->mu);
    j->grew = false;
    pthread_mutex_unlock(&q->mu);
    if (atomic_load(&j->cancel) || atomic_load(&q->stopping)) {
      rc = HISTD_ECANCELED;
      break;
    }
    dataset_meta m;
    if (store_get_dataset(env->store, j->rec.dataset, &m) != 0) {
      rc = histd_fail(msg, sizeof msg, HISTD_ENOENT, "dataset %s no longer exists",
                      j->rec.dataset);
      break;
    }
    ran = true;
    const uint64_t done = j->rec.has_result ? j->rec.result.frames : 0;
    atomic_store(&j->frames, m.frames);
    if (done < m.frames) {
      if (!counted) {
        pthread_mutex_lock(&q->mu);
        j->rec.attempts++;
        pthread_mutex_unlock(&q->mu);
        counted = true;
      }
      if ((rc = store_mark_job_running(env->store, &j->rec, why, sizeof why)) != 0) {
        snprintf(msg, sizeof msg, "the job could not be recorded as running: %s", why);
        break;
      }
      rc = follow_pass(w, j, &p, done, m.frames, msg, sizeof msg);
      counted = rc != 0; /* an update takes the pass's count back */
      continue;
    }
    if (m.sealed) /* every frame counted: the result is final */
      break;
    /* parked until the dataset grows, unless it grew since the pass began */
    pthread_mutex_lock(&q->mu);
    bool park = !j->grew && !atomic_load(&j->cancel) && !atomic_load(&q->stopping);
    if (park) {
      if (counted)
        j->rec.attempts--; /* (no pass began: the row never counted it) */
      j->parked = true;
      j->next = q->parked;
      q->parked = j;
      w->current = NULL;
    }
    pthread_mutex_unlock(&q->mu);
    if (park) {
      histd_params_free(&p);
      return;
    }
  }
  histd_params_free(&p);
  if (!counted) { /* end_run takes back the count of a run a stop interrupts */
    pthread_mutex_lock(&q->mu);
    j->rec.attempts++;
    pthread_mutex_unlock(&q->mu);
  }
  histd_result none;
  memset(&none, 0, sizeof none);
  end_run(w, j, rc, ran, &none, msg, t_start, t_start, histd_now_ms());
}

static void *worker_main(void *arg) {
  worker *w = arg;
  queue *q = w->q;
  for (;;) {
    pthread_mutex_lock(&q->mu);
    job *j = NULL;
    while (!atomic_load(&q->stopping) && (j = take_locked(q, w)) == NULL)
      pthread_cond_wait(&q->cv, &q->mu);
    if (atomic_load(&q->stopping)) {
      if (j != NULL) { /* taken just now: leave it queued (it is in the store) */
        job_free(j);
      }
      pthread_mutex_unlock(&q->mu);
      break;
    }
    j->rec.status = JOB_RUNNING;
    if (!j->parked) /* (a following job's next pass: it runs since it began) */
      j->rec.started_at = wall_now();
    j->parked = false;
    j->rec.attempts++; /* in the running row: a run the daemon may not survive */
    w->current = j;
    pthread_mutex_unlock(&q->mu);
    if (j->rec.follow)
      run_follow(w, j);
    else
      run_one(w, j);
  }
  dataset_release(q->env.cache, w->prefetched);
  w->prefetched = NULL;
  return NULL;
}

/* ---- the pool ----------------------------------------------------------------------- */

static bool restore_one(const job_record *rec, void *u) {
  queue *q = u;
  job *j = job_new(rec);
  if (j == NULL)
    return false;
  job_record kept; /* a following job goes on from its result's frames */
  if (rec->follow && store_get_job(q->env.store, rec->id, &kept, true) == 0) {
    if (kept.has_result) {
      j->rec.result = kept.result;
      j->rec.has_result = true;
      memset(&kept.result, 0, sizeof kept.result);
      kept.has_result = false;
    }
    job_record_free(&kept);
  }
  append_locked(q, j);
  return true;
}

/* Why a job from the last run is not queued again (into why), or false
 * when it is. A job the daemon died during --max-job-attempts times may be
 * what kills it: it fails rather than crash every start. A job that no
 * worker of this daemon can take (it names a CUDA kernel and the daemon
 * restarted without a GPU, or a GPU it no longer has) fails rather than
 * wait for ever; submission refuses such jobs with a 422, so only a
 * restart can produce them. */
static bool not_restored(queue *q, const job *j, char *why, size_t len) {
  const unsigned max = (unsigned)q->env.cfg->max_job_attempts;
  if (j->rec.attempts >= max) {
    snprintf(why, len,
             "the daemon died %u time%s while this job was running (a crash or a kill, not a "
             "clean stop); it is not run again, in case it is what kills the daemon "
             "(--max-job-attempts %u)",
             j->rec.attempts, j->rec.attempts == 1 ? "" : "s", max);
    return true;
  }
  for (int i = 0; i < q->nworkers; i++)
    if (fits(&q->workers[i], j))
      return false;
  const histd_kernel *k = histd_kernel_find(j->rec.params.exec.kernel);
  if (k != NULL && k->engine == HISTD_ENGINE_CUDA && !q->has_gpu)
    snprintf(why, len, "kernel \"%s\" needs a GPU, and the daemon restarted without one (%s)",
             j->rec.params.exec.kernel, q->env.gpu_reason);
  else
    snprintf(why, len, "the job names GPUs the daemon does not have since its restart "
                       "(see GET /v1/devices)");
  return true;
}

/* The jobs from the last run that are not queued again fail with why. */
static void fail_unrestored(queue *q) {
  for (job *j = q->head, *next; j != NULL; j = next) {
    next = j->next;
    if (!not_restored(q, j, j->rec.error, sizeof j->rec.error))
      continue;
    j->rec.status = JOB_FAILED;
    j->rec.finished_at = wall_now();
    if (j->rec.has_result) { /* a following job's: a failed job keeps none */
      histd_result_free(&j->rec.result);
      j->rec.has_result = false;
    }
    unlink_locked(q, j);
    char msg[256];
    if (store_update_job(q->env.store, &j->rec, msg, sizeof msg) != 0)
      fprintf(stderr, "histd: job %s: %s\n", j->rec.id, msg);
    fprintf(stderr, "histd: job %s failed on restore: %s\n", j->rec.id, j->rec.error);
    job_free(j);
  }
}

/* ---- the backend's operations ---------------------------------------------------------- */

static int local_start(void *self, const backend_events *ev, char *msg, size_t msglen) {
  queue *q = self;
  const backend_env *env = &q->env;
  q->ev = *ev;
  int ncpu = (int)histd_cpu_count();
  int ngpu_workers = 0, ncpu_workers;
  if (q->has_gpu) {
    ngpu_workers = env->cfg->workers > 0 ? env->cfg->workers : env->gpu_count;
    ncpu_workers = 1;
  } else {
    ncpu_workers = env->cfg->workers > 0 ? env->cfg->workers : 1;
  }
  q->nworkers = ngpu_workers + ncpu_workers;
  q->workers = calloc((size_t)q->nworkers, sizeof *q->workers);
  if (q->workers == NULL) {
    q->nworkers = 0;
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for workers");
  }
  for (int i = 0; i < q->nworkers; i++) {
    worker *w = &q->workers[i];
    w->q = q;
    w->device = i < ngpu_workers ? env->gpus[i % env->gpu_count].index : -1;
    int per = ncpu / ncpu_workers;
    w->cpu_threads = (uint32_t)(per < 1 ? 1 : per);
    int rc = histd_worker_create(&w->engine, w->device, msg, msglen);
    if (rc != 0) {
      for (int k = 0; k < i; k++)
        histd_worker_destroy(q->workers[k].engine);
      free(q->workers);
      q->workers = NULL;
      q->nworkers = 0;
      return rc;
    }
  }

  /* Jobs that were queued or running when the daemon last stopped. */
  store_unfinished_jobs(env->store, restore_one, q);
  fail_unrestored(q);
  for (job *j = q->head; j != NULL; j = j->next)
    store_update_job(env->store, &j->rec, NULL, 0);
  if (q->depth > 0)
    fprintf(stderr, "histd: %zu unfinished job(s) from the last run are queued again\n",
            q->depth);

  for (int i = 0; i < q->nworkers; i++) {
    if (pthread_create(&q->workers[i].tid, NULL, worker_main, &q->workers[i]) != 0)
      return histd_fail(msg, msglen, HISTD_ENOMEM, "cannot start worker threads");
    q->workers[i].started = true;
  }
  return 0;
}

static void local_stop(void *self) {
  queue *q = self;
  pthread_mutex_lock(&q->mu);
  atomic_store(&q->stopping, true);
  pthread_cond_broadcast(&q->cv);
  pthread_mutex_unlock(&q->mu);
  for (int i = 0; i < q->nworkers; i++)
    if (q->workers[i].started) {
      pthread_join(q->workers[i].tid, NULL);
      q->workers[i].started = false;
    }
}

static void local_close(void *self) {
  queue *q = self;
  local_stop(q);
  while (q->head != NULL) {
    job *j = q->head;
    q->head = j->next;
    job_free(j);
  }
  while (q->ended != NULL) {
    job *j = q->ended;
    q->ended = j->next;
    job_free(j);
  }
  while (q->parked != NULL) {
    job *j = q->parked;
    q->parked = j->next;
    job_free(j);
  }
  for (int i = 0; i < q->nworkers; i++)
    histd_worker_destroy(q->workers[i].engine);
  free(q->workers);
  pthread_cond_destroy(&q->cv);
  pthread_mutex_destroy(&q->mu);
  free(q);
}

static int local_submit(void *self, job_record *rec, char *msg, size_t msglen) {
  queue *q = self;
  job *j = job_new(rec);
  if (j == NULL)
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for the job");
  pthread_mutex_lock(&q->mu);
  if (atomic_load(&q->stopping)) {
    pthread_mutex_unlock(&q->mu);
    job_free(j);
    return histd_fail(msg, msglen, HISTD_ETOOBIG, "the daemon is shutting down");
  }
  if (q->depth + q->reserved >= q->env.cfg->queue_limit) {
    pthread_mutex_unlock(&q->mu);
    job_free(j);
    return histd_fail(msg, msglen, HISTD_ETOOBIG,
                      "the job queue is full (%zu jobs waiting); try again shortly",
                      q->env.cfg->queue_limit);
  }
  q->reserved++; /* our place, while the row is written without the lock */
  pthread_mutex_unlock(&q->mu);
  /* Durable before it is visible: the row first, then the queue. */
  int rc = store_put_job(q->env.store, &j->rec, msg, msglen);
  pthread_mutex_lock(&q->mu);
  q->reserved--;
  if (rc != 0) {
    pthread_mutex_unlock(&q->mu);
    job_free(j);
    return rc;
  }
  /* Stopping meanwhile: queue it anyway; it is in the store, the workers
   * are leaving, and the next start runs it. */
  append_locked(q, j);
  rec->seq = j->rec.seq;
  pthread_cond_broadcast(&q->cv);
  pthread_mutex_unlock(&q->mu);
  return 0;
}

static int local_get(void *self, const char *id, job_record *out, bool arrays) {
  queue *q = self;
  pthread_mutex_lock(&q->mu);
  job *j = find_locked(q, id, NULL);
  if (j != NULL) {
    copy_record(j, out);
    pthread_mutex_unlock(&q->mu);
    return 0;
  }
  pthread_mutex_unlock(&q->mu);
  return store_get_job(q->env.store, id, out, arrays);
}

static int local_live(void *self, const char *id) {
  queue *q = self;
  pthread_mutex_lock(&q->mu);
  bool live = find_live_locked(q, id, NULL) != NULL;
  pthread_mutex_unlock(&q->mu);
  return live;
}

static int local_cancel(void *self, const char *id, job_record *out, char *msg, size_t msglen) {
  queue *q = self;
  pthread_mutex_lock(&q->mu);
  worker *on = NULL;
  job *j = find_locked(q, id, &on);
  while (j != NULL && j->cancelling) { /* another DELETE is writing it: its outcome */
    pthread_cond_wait(&q->cv, &q->mu);
    j = find_locked(q, id, &on);
  }
  if (j != NULL && on == NULL && (j->rec.status == JOB_QUEUED || j->parked)) {
    /* queued, or following and parked: cancelled at once, once the store
     * says so; meanwhile no worker takes it */
    job_record cancelled = j->rec;
    cancelled.has_result = false;
    cancelled.status = JOB_CANCELLED;
    cancelled.finished_at = wall_now();
    cancelled.timing.queue_ms = (cancelled.finished_at - cancelled.created_at) * 1000.0;
    snprintf(cancelled.error, sizeof cancelled.error, "the job was cancelled before it started");
    j->cancelling = true;
    pthread_mutex_unlock(&q->mu);
    int rc = store_update_job(q->env.store, &cancelled, msg, msglen);
    pthread_mutex_lock(&q->mu);
    j->cancelling = false;
    pthread_cond_broadcast(&q->cv); /* workers may take it again; other DELETEs go on */
    if (rc != 0) { /* still queued, in the store and here */
      pthread_mutex_unlock(&q->mu);
      return rc;
    }
    if (!unpark_locked(q, j))
      unlink_locked(q, j);
    if (j->rec.has_result) /* a following job's result: a cancelled job keeps none */
      histd_result_free(&j->rec.result);
    j->rec = cancelled;
    copy_record(j, out);
    pthread_mutex_unlock(&q->mu);
    q->ev.job_counted(q->ev.u, JOB_CANCELLED, 0, 0);
    job_free(j);
    q->ev.job_ended(q->ev.u, id);
    return 0;
  }
  if (j != NULL) { /* running (the engine polls the flag a few times a second), or
                    * ended with only memory knowing */
    bool still_running = on != NULL && j->rec.status == JOB_RUNNING; /* else it ended */
    if (still_running)
      atomic_store(&j->cancel, true);
    copy_record(j, out);
    pthread_mutex_unlock(&q->mu);
    return still_running ? 1 : 0;
  }
  pthread_mutex_unlock(&q->mu);
  return store_get_job(q->env.store, id, out, false); /* ended: answered as a summary */
}

static size_t local_queue_depth(void *self) {
  queue *q = self;
  pthread_mutex_lock(&q->mu);
  size_t d = q->depth;
  pthread_mutex_unlock(&q->mu);
  return d;
}

static size_t local_running(void *self) {
  queue *q = self;
  size_t n = 0;
  pthread_mutex_lock(&q->mu);
  for (int i = 0; i < q->nworkers; i++)
    n += q->workers[i].current != NULL;
  pthread_mutex_unlock(&q->mu);
  return n;
}

/* Whether the job reads the dataset: as A, as B, or for its atoms' names. */
static bool job_uses(const job_record *r, const char *dataset) {
  return strcmp(r->dataset, dataset) == 0 || strcmp(r->dataset_b, dataset) == 0 ||
         strcmp(r->params.topology, dataset) == 0;
}

static size_t local_active_on(void *self, const char *dataset) {
  queue *q = self;
  size_t n = 0;
  pthread_mutex_lock(&q->mu);
  for (int i = 0; i < q->nworkers; i++)
    n += q->workers[i].current != NULL && job_uses(&q->workers[i].current->rec, dataset);
  for (job *j = q->head; j != NULL; j = j->next)
    n += job_uses(&j->rec, dataset);
  for (job *j = q->parked; j != NULL; j = j->next)
    n += job_uses(&j->rec, dataset);
  pthread_mutex_unlock(&q->mu);
  return n;
}

/* Frames were appended to the dataset, or it was sealed: its parked
 * following jobs go back to the queue, and those on a worker look again
 * before they park. */
static void local_dataset_grew(void *self, const char *dataset) {
  queue *q = self;
  pthread_mutex_lock(&q->mu);
  for (job **p = &q->parked; *p != NULL;) {
    job *j = *p;
    if (strcmp(j->rec.dataset, dataset) == 0) {
      *p = j->next;
      j->next = NULL;
      append_locked(q, j);
    } else {
      p = &j->next;
    }
  }
  for (int i = 0; i < q->nworkers; i++)
    if (q->workers[i].current != NULL && strcmp(q->workers[i].current->rec.dataset, dataset) == 0)
      q->workers[i].current->grew = true;
  pthread_cond_broadcast(&q->cv);
  pthread_mutex_unlock(&q->mu);
}

static int local_workers(void *self) { return ((queue *)self)->nworkers; }

static int local_list(void *self, size_t limit, bool (*fn)(const job_record *j, void *u),
                      void *u) {
  return store_list_jobs(((queue *)self)->env.store, limit, false, fn, u);
}

static int local_delete_result(void *self, const char *id, double at, char *msg,
                               size_t msglen) {
  return store_delete_result(((queue *)self)->env.store, id, at, msg, msglen);
}

/* ---- datasets: this host's store is the whole index -------------------------------- */

static int local_dataset_publish(void *self, const dataset_meta *m, char *msg, size_t msglen) {
  (void)self, (void)m, (void)msg, (void)msglen;
  return 0; /* stored is published */
}

static int local_dataset_find(void *self, const char *id, dataset_meta *m) {
  queue *q = self;
  int rc = store_get_dataset(q->env.store, id, m);
  if (rc == 0)
    store_check_payload(q->env.store, m);
  return rc;
}

typedef struct list_ctx {
  store *store;
  bool (*fn)(const dataset_meta *m, void *u);
  void *u;
} list_ctx;

static bool list_checked(const dataset_meta *m, void *u) {
  list_ctx *c = u;
  dataset_meta copy = *m;
  store_check_payload(c->store, &copy);
  return c->fn(&copy, c->u);
}

static int local_dataset_list(void *self, size_t limit,
                              bool (*fn)(const dataset_meta *m, void *u), void *u) {
  queue *q = self;
  list_ctx c = {q->env.store, fn, u};
  return store_list_datasets(q->env.store, limit, list_checked, &c);
}

static int local_dataset_delete(void *self, const char *id, char *msg, size_t msglen) {
  return store_delete_dataset(((queue *)self)->env.store, id, msg, msglen);
}

static const backend_ops local_ops = {
    .name = "local",
    .start = local_start,
    .stop = local_stop,
    .close = local_close,
    .submit = local_submit,
    .get = local_get,
    .live = local_live,
    .cancel = local_cancel,
    .list = local_list,
    .active_on = local_active_on,
    .dataset_grew = local_dataset_grew,
    .queue_depth = local_queue_depth,
    .running = local_running,
    .workers = local_workers,
    .delete_result = local_delete_result,
    .dataset_publish = local_dataset_publish,
    .dataset_find = local_dataset_find,
    .dataset_list = local_dataset_list,
    .dataset_delete = local_dataset_delete,
};

int local_backend_open(backend *out, const backend_env *env, char *msg, size_t msglen) {
  queue *q = calloc(1, sizeof *q);
  if (q == NULL)
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for the job queue");
  q->env = *env;
  pthread_mutex_init(&q->mu, NULL);
  pthread_cond_init(&q->cv, NULL);
  atomic_init(&q->stopping, false);
  q->has_gpu = env->gpu_count > 0;
  out->ops = &local_ops;
  out->self = q;
  return 0;
}
