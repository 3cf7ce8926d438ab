/*
 * daemon.c -- histd, the daemon: startup, the libuv loop, shutdown.
 *
 * Three kinds of threads, one owner each:
 *
 *   - the main thread runs a libuv loop. It owns the shutdown (SIGINT and
 *     SIGTERM start it; SIGPIPE is ignored), a timer that expires
 *     long-poll deadlines and closes slow clients (deadline.c), one that deletes finished jobs older than
 *     --job-retention, one that deletes the datasets whose ?expires= has
 *     come (once a second, and at once at a start), and a uv_async that the job front pokes (the
 *     service_wake hook it was handed: jobs_hooks) when its backend
 *     reports a job's end, so the loop resumes the connections waiting on
 *     it -- redis's bio.c completions, libuv-style;
 *   - libmicrohttpd's pool threads read requests and run the handlers
 *     (http.c);
 *   - the backend's workers run jobs (backend.h: jobs_local.c on one host,
 *     cluster/ with --coordinator; picked here, once, before anything
 *     starts);
 *   - one thread waits for SIGINT and SIGTERM with sigwait() and wakes the
 *     loop (a uv_async) to shut down.
 *
 * Startup order is inside out: store (the data dir), GPU discovery, the
 * job pool (which requeues jobs a previous run left unfinished), then HTTP,
 * so the daemon never accepts a request it cannot serve. SIGINT and SIGTERM
 * are blocked before anything starts, in every thread (threads inherit the
 * mask), and never unblocked: no handler runs, a signal stays pending
 * until the signal thread, started just before the loop runs, takes it
 * with sigwait(). So one that arrives as soon as /healthz answers (or
 * during startup) stops the daemon cleanly. (Handlers installed by libuv
 * and unblocked on the main thread lost a signal now and then under
 * ThreadSanitizer, which defers handlers; sigwait has no handler to
 * defer.) A second signal exits at once. Shutdown is the
 * reverse: stop accepting (new connections are closed: http.c), answer long-polls,
 * stop the workers (running jobs are interrupted and stay queued in the
 * store for the next start), then close HTTP and the store. Exit status 0
 * after a signal; 75 (EX_TEMPFAIL) after a GPU lost its CUDA context
 * (service_gpu_lost), since only a new process can use that GPU again:
 * systemd (Restart=on-failure), Docker (restart: unless-stopped) and
 * Kubernetes start one, and the queued jobs run there.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "backend.h"
#include "cluster/cluster.h"
#include "config.h"
#include "daemon.h"
#include "datasets.h"
#include "deadline.h"
#include "defer.h"
#include "http.h"
#include "jobs.h"
#include "routes.h"
#include "service.h"
#include "store.h"
#include "sync_pool.h"
#include "util.h"

typedef struct loop_state {
  service *svc;
  uv_loop_t loop;
  uv_async_t stop; /* the signal thread's wake-up */
  pthread_mutex_t stop_lock;
  bool stop_closed; /* under stop_lock: the async is closed, do not send */
  atomic_int signum;
  atomic_int signals;
  pthread_t signal_thread;
  sigset_t stop_signals;
  uv_timer_t tick;
  uv_timer_t expire; /* --job-retention: deletes old finished jobs */
  uv_timer_t expire_datasets; /* deletes datasets past their expires_at */
  uv_async_t wake;
} loop_state;

/* The job front's and the pools' reports (jobs_hooks): thread-safe. Wake
 * asks the loop to run jobs_resume_waiters soon. */
static void service_wake(void *u) {
  service *svc = u;
  if (svc->loop_async != NULL)
    uv_async_send((uv_async_t *)svc->loop_async);
}

static void shut_down(loop_state *ls) {
  atomic_store(&ls->svc->stopping, true); /* no new connections from here on (http.c) */
  uv_stop(&ls->loop);
}

/* A GPU hit a sticky CUDA error (HISTD_EGPULOST), which no later CUDA call
 * of this process can get past. /healthz turns 503 with the reason and the
 * daemon shuts down as on SIGTERM (running jobs stay queued), exiting with
 * status 75 so that its supervisor starts a fresh process. The first
 * reason is kept. */
static void service_gpu_lost(void *u, const char *reason) {
  service *svc = u;
  static atomic_flag once = ATOMIC_FLAG_INIT;
  if (atomic_flag_test_and_set(&once))
    return;
  snprintf(svc->lost_reason, sizeof svc->lost_reason, "%s", reason);
  atomic_store(&svc->lost, true);
  service_wake(svc);
}

static void on_wake(uv_async_t *h) {
  loop_state *ls = h->data;
  jobs_resume_waiters(ls->svc->jobs, false);
  if (atomic_load(&ls->svc->lost) && !atomic_load(&ls->svc->stopping)) {
    fprintf(stderr, "histd: %s; stopping, so that a new process can use the GPU "
                    "(exit status 75)\n", ls->svc->lost_reason);
    shut_down(ls);
  }
}

static void on_tick(uv_timer_t *t) {
  loop_state *ls = t->data;
  jobs_resume_waiters(ls->svc->jobs, false);
  deadlines_sweep(ls->svc->deadlines); /* slow heads and bodies */
}

static void on_expire(uv_timer_t *t) {
  loop_state *ls = t->data;
  service *svc = ls->svc;
  uint64_t deleted = 0;
  char msg[256];
  if (store_expire_jobs(svc->store, wall_now() - svc->cfg.job_retention, &deleted, msg,
                        sizeof msg) != 0)
    fprintf(stderr, "histd: %s\n", msg);
  else if (deleted > 0)
    fprintf(stderr, "histd: %" PRIu64 " finished job(s) older than --job-retention removed\n",
            deleted);
}

/* One expired dataset: deleted, unless jobs still use it (then a later
 * sweep, once they have ended). */
static bool expire_dataset(const char *id, void *u) {
  service *svc = u;
  char msg[256] = "";
  size_t active;
  int rc = datasets_delete_unused(svc, id, &active, msg, sizeof msg);
  if (rc == 0)
    fprintf(stderr, "histd: dataset %s expired and was deleted\n", id);
  else if (active == 0 && rc != HISTD_ENOENT)
    fprintf(stderr, "histd: the expired dataset %s could not be deleted: %s\n", id, msg);
  return !atomic_load(&svc->stopping);
}

static void on_expire_datasets(uv_timer_t *t) {
  loop_state *ls = t->data;
  if (store_expired_datasets(ls->svc->store, wall_now(), expire_dataset, ls->svc) != 0)
    fprintf(stderr, "histd: the expired datasets could not be listed\n");
}

static void close_cb(uv_handle_t *h) { (void)h; }

/* A start that fails after the loop is made: the handles made so far (the
 * signals and the wake-up; not yet the timers) and the loop itself. */
static void close_loop_early(loop_state *ls) {
  uv_close((uv_handle_t *)&ls->stop, close_cb);
  uv_close((uv_handle_t *)&ls->wake, close_cb);
  uv_run(&ls->loop, UV_RUN_DEFAULT);
  uv_loop_close(&ls->loop);
}

/* The signal thread: takes SIGINT and SIGTERM (blocked everywhere) one
 * at a time; the first wakes the loop, a second exits at once. */
static void *signal_main(void *arg) {
  loop_state *ls = arg;
  for (;;) {
    int sig;
    if (sigwait(&ls->stop_signals, &sig) != 0)
      continue;
    if (atomic_fetch_add(&ls->signals, 1) > 0) {
      fprintf(stderr, "histd: second signal, exiting now\n");
      _exit(1);
    }
    atomic_store(&ls->signum, sig);
    pthread_mutex_lock(&ls->stop_lock);
    if (!ls->stop_closed)
      uv_async_send(&ls->stop);
    pthread_mutex_unlock(&ls->stop_lock);
  }
  return NULL;
}

static void on_stop(uv_async_t *h) {
  loop_state *ls = h->data;
  fprintf(stderr, "histd: %s received, shutting down\n",
          atomic_load(&ls->signum) == SIGINT ? "SIGINT" : "SIGTERM");
  shut_down(ls);
}

int daemon_main(int argc, char **argv) {
  static service svc; /* big (paths); one per process */
  char msg[1024];
  int rc = config_load(&svc.cfg, argc, argv, msg, sizeof msg);
  if (rc != 0) {
    if (rc > 0)
      return 0;
    fprintf(stderr, "histd: %s\n", msg);
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  loop_state ls;
  memset(&ls, 0, sizeof ls);
  sigemptyset(&ls.stop_signals);
  sigaddset(&ls.stop_signals, SIGINT);
  sigaddset(&ls.stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &ls.stop_signals, NULL); /* before any thread */
  svc.started_at = wall_now();
  pthread_rwlockattr_t rwa; /* a delete waits for submits under way, not for all to come */
  pthread_rwlockattr_init(&rwa);
  pthread_rwlockattr_setkind_np(&rwa, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
  pthread_rwlock_init(&svc.datasets_lock, &rwa);
  pthread_rwlockattr_destroy(&rwa);
  svc.buffered.limit = svc.cfg.max_buffered_bytes;
  atomic_init(&svc.stopping, false);
  atomic_init(&svc.lost, false);

  if (store_open(&svc.store, svc.cfg.data_dir, msg, sizeof msg) != 0) {
    fprintf(stderr, "histd: %s\n", msg);
    return 1;
  }
  store_set_limits(svc.store, svc.cfg.max_data_bytes, svc.cfg.max_result_bytes);
  dataset_cache_create(&svc.cache, svc.store);

  svc.gpu_reason[0] = '\0';
  histd_devices(svc.gpus, 16, &svc.gpu_count, svc.gpu_reason, sizeof svc.gpu_reason);
  if (svc.gpu_count > 16)
    svc.gpu_count = 16;
  if (svc.gpu_count == 0 && svc.gpu_reason[0] == '\0')
    snprintf(svc.gpu_reason, sizeof svc.gpu_reason, "no usable GPU was found");

  /* The backend, once: this host alone, or a node of the cluster. */
  const backend_env env = {.cfg = &svc.cfg,
                           .store = svc.store,
                           .cache = svc.cache,
                           .gpu_count = svc.gpu_count,
                           .gpus = svc.gpus,
                           .gpu_reason = svc.gpu_reason};
  if ((svc.cfg.coordinator[0] ? cluster_backend_open(&svc.backend, &env, msg, sizeof msg)
                              : local_backend_open(&svc.backend, &env, msg, sizeof msg)) != 0) {
    fprintf(stderr, "histd: %s\n", msg);
    return 1;
  }

  ls.svc = &svc;
  uv_loop_init(&ls.loop);
  uv_async_init(&ls.loop, &ls.wake, on_wake);
  ls.wake.data = &ls;
  svc.loop_async = &ls.wake;
  uv_async_init(&ls.loop, &ls.stop, on_stop);
  ls.stop.data = &ls;
  pthread_mutex_init(&ls.stop_lock, NULL);

  const jobs_hooks hooks = {service_wake, service_gpu_lost, &svc};
  if (jobs_start(&svc.jobs, &svc.backend, &svc.metrics, &hooks, msg, sizeof msg) != 0) {
    fprintf(stderr, "histd: %s\n", msg);
    return 1;
  }
  if (sync_pool_start(&svc.sync, svc.cfg.histogram_threads, svc.cfg.queue_limit,
                      service_gpu_lost, &svc, msg, sizeof msg) != 0) {
    fprintf(stderr, "histd: %s\n", msg);
    return 1;
  }
  if (deadlines_create(&svc.deadlines, &svc, msg, sizeof msg) != 0) {
    fprintf(stderr, "histd: %s\n", msg);
    return 1;
  }
  if (defer_pool_start(&svc.defer, msg, sizeof msg) != 0) {
    fprintf(stderr, "histd: %s\n", msg);
    return 1;
  }
  if (http_start(&svc, msg, sizeof msg) != 0) {
    fprintf(stderr, "histd: %s\n", msg);
    defer_pool_destroy(svc.defer);
    deadlines_destroy(svc.deadlines);
    sync_pool_destroy(svc.sync);
    jobs_stop(svc.jobs);
    jobs_destroy(svc.jobs);
    svc.backend.ops->close(svc.backend.self);
    svc.loop_async = NULL;
    close_loop_early(&ls);
    dataset_cache_destroy(svc.cache);
    store_close(svc.store);
    return 1;
  }
  jobs_listen(svc.jobs, &ls.loop);
  fprintf(stderr, "histd %s: data in %s, %d worker(s) on %s, dashboard from %s\n",
          HISTD_VERSION, svc.cfg.data_dir, jobs_worker_count(svc.jobs),
          svc.gpu_count > 0 ? "GPU + CPU" : "the CPU", svc.cfg.static_dir);
  if (svc.gpu_count == 0)
    fprintf(stderr, "histd: no GPU: %s\n", svc.gpu_reason);

  uv_timer_init(&ls.loop, &ls.tick);
  ls.tick.data = &ls;
  uv_timer_start(&ls.tick, on_tick, 100, 100);
  uv_timer_init(&ls.loop, &ls.expire);
  ls.expire.data = &ls;
  if (svc.cfg.job_retention > 0) { /* at once, then a few times per retention period */
    double every = svc.cfg.job_retention / 4;
    every = every < 1 ? 1 : every > 60 ? 60 : every;
    uv_timer_start(&ls.expire, on_expire, 0, (uint64_t)(every * 1000));
  }
  uv_timer_init(&ls.loop, &ls.expire_datasets);
  ls.expire_datasets.data = &ls;
  uv_timer_start(&ls.expire_datasets, on_expire_datasets, 0, 1000);

  /* Only now may a stop signal be taken: everything it stops has started.
   * One that came earlier is pending: the signal thread takes it at once,
   * and uv_run handles its wake-up. */
  int prc = pthread_create(&ls.signal_thread, NULL, signal_main, &ls);
  if (prc != 0) {
    fprintf(stderr, "histd: the signal thread could not start: %s\n", strerror(prc));
    atomic_store(&svc.stopping, true);
  } else {
    pthread_detach(ls.signal_thread); /* it waits until the process ends */
    uv_run(&ls.loop, UV_RUN_DEFAULT);
  }

  /* A signal stopped the loop. The uv handles stay open until every thread
   * that may poke them (workers, HTTP threads) has stopped. */
  jobs_resume_waiters(svc.jobs, true); /* long-polls answer with the current state */
  jobs_stop(svc.jobs);                 /* running jobs go back to queued */
  jobs_resume_waiters(svc.jobs, true);
  sync_pool_stop(svc.sync); /* queued histograms answer 503 */
  defer_pool_stop(svc.defer); /* submits under way answer */
  http_stop(&svc);
  svc.loop_async = NULL;
  pthread_mutex_lock(&ls.stop_lock); /* from here a signal exits at once */
  ls.stop_closed = true;
  atomic_store(&ls.signals, 1);
  pthread_mutex_unlock(&ls.stop_lock);
  jobs_unlisten(svc.jobs);
  uv_close((uv_handle_t *)&ls.stop, close_cb);
  uv_close((uv_handle_t *)&ls.tick, close_cb);
  uv_close((uv_handle_t *)&ls.expire, close_cb);
  uv_close((uv_handle_t *)&ls.expire_datasets, close_cb);
  uv_close((uv_handle_t *)&ls.wake, close_cb);
  uv_run(&ls.loop, UV_RUN_DEFAULT);
  jobs_destroy(svc.jobs);
  sync_pool_destroy(svc.sync); /* after http_stop: no handler can reach it now */
  deadlines_destroy(svc.deadlines);
  defer_pool_destroy(svc.defer);
  svc.backend.ops->close(svc.backend.self);
  dataset_cache_destroy(svc.cache);
  store_close(svc.store);
  uv_loop_close(&ls.loop);
  pthread_rwlock_destroy(&svc.datasets_lock);
  bool lost = atomic_load(&svc.lost);
  fprintf(stderr, "histd: stopped%s\n", lost ? " (a GPU was lost; exit status 75)" : "");
  return lost ? 75 : 0;
}
