/*
 * events.c -- GET /v1/jobs/{id}/events: a job's life as Server-Sent Events
 * (text/event-stream), so that a dashboard or a client is told instead of
 * polling.
 *
 * Events, each a JSON object on its data line:
 *
 *   event: progress  {"id", "status", "progress", "frames": {"done", "total"}}
 *                    when the status, the progress (by 0.001) or the
 *                    frames change; the first event tells the state the
 *                    job is in when the stream opens
 *   event: update    {"id", "status", "frames", "result"}: a following
 *                    job recorded a new result, of frames 0..frames-1
 *                    ("frames" is the result's version); "result" is its
 *                    summary, without arrays: GET /v1/jobs/{id}/result
 *                    has the whole of it (the latest)
 *   event: end       the job's document as GET /v1/jobs/{id}?summary=true
 *                    gives it once it has ended (succeeded, failed or
 *                    cancelled), then the stream ends
 *
 * and a comment (": ping") every PING_MS of silence, which keeps proxies
 * from closing an idle stream and finds a client that has gone.
 *
 * The body is libmicrohttpd's content-reader callback (chunked). It never
 * blocks: with nothing to send it registers its connection with the job
 * front (jobs_stream_wait), suspends it from inside the callback (which
 * libmicrohttpd allows) and returns 0; the loop resumes it when the job
 * ends or has an update, and at a deadline (every PROGRESS_MS while the
 * job is live, for its progress; else at the next ping). A suspended
 * connection does not time out (--connection-timeout) and deadline.c
 * neither counts a stream as a slow head nor a slow body, so a healthy
 * stream lives as long as its job; a client that stops reading is closed
 * by the idle timeout once its socket's buffer is full. Streams are
 * long-lived by design, so they are capped: at most half of
 * --connection-limit or of --per-ip-connection-limit, whichever is lower
 * (256 without either), at once, the next answered 503 with a sentence,
 * so that streams never take every connection.
 */
#include <math.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "histd/io.h"
#include "http.h"
#include "jobs.h"
#include "routes.h"
#include "service.h"

#define PING_MS 15000.0
#define PROGRESS_MS 500.0

typedef struct event_stream {
  service *svc;
  struct MHD_Connection *conn;
  char job[33];
  char *buf; /* events composed, not yet sent: [off, len) */
  size_t len, off, cap;
  int status;      /* what was told: -1 nothing yet */
  double progress;
  double done, total;
  uint64_t version; /* the frames of the last update told (0: none) */
  bool live;
  bool ended;       /* the end is composed: the stream ends once it is sent */
  double next_ping;
} event_stream;

/* The most streams at once: half the connections (of every address, and
 * of one: deadline.c's limits, where a stream is never the one that makes
 * room), so that others always get in. */
static int stream_cap(const service *svc) {
  unsigned all = svc->cfg.connection_limit, one = svc->cfg.per_ip_connection_limit;
  unsigned most = all == 0 ? one : one == 0 || all < one ? all : one;
  return most > 0 ? (int)(most / 2 > 0 ? most / 2 : 1) : 256;
}

static void add(event_stream *es, const char *text, size_t n) {
  if (es->len + n > es->cap) {
    size_t cap = es->cap ? es->cap : 1024;
    while (cap < es->len + n)
      cap *= 2;
    char *p = realloc(es->buf, cap);
    if (p == NULL)
      return; /* (the event is lost; the next one tells the state again) */
    es->buf = p;
    es->cap = cap;
  }
  memcpy(es->buf + es->len, text, n);
  es->len += n;
}

/* "event: NAME\ndata: JSON\n\n", JSON taken. */
static void add_event(event_stream *es, const char *name, cJSON *data) {
  char *text = data ? cJSON_PrintUnformatted(data) : NULL;
  cJSON_Delete(data);
  if (text == NULL)
    return;
  char head[64];
  int h = snprintf(head, sizeof head, "event: %s\ndata: ", name);
  add(es, head, (size_t)h);
  add(es, text, strlen(text));
  add(es, "\n\n", 2);
  free(text);
}

/* The result's summary (its scalars) as JSON, or NULL. */
static cJSON *result_summary(const histd_result *res) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  int rc = f ? histd_write_json(f, res, HISTD_JSON_SUMMARY) : HISTD_ENOMEM;
  if (f)
    fclose(f);
  cJSON *o = rc == 0 && text ? cJSON_Parse(text) : NULL;
  free(text);
  return o;
}

/* What changed since the last events, as events. */
static void compose(event_stream *es) {
  job_record j;
  int rc = jobs_get(es->svc->jobs, es->job, &j, false);
  if (rc != 0) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", es->job);
    cJSON_AddStringToObject(o, "status", "unknown");
    cJSON_AddStringToObject(o, "error", rc == HISTD_ENOENT ? "the job no longer exists"
                                                           : "the job could not be read");
    add_event(es, "end", o);
    es->ended = true;
    return;
  }
  es->live = j.status == JOB_QUEUED || j.status == JOB_RUNNING;
  double done = 0, total = (double)j.frames;
  if (j.follow)
    done = j.has_result ? (double)j.result.frames : 0;
  else if (j.frames > 0)
    done = fmin(floor(j.progress * (double)j.frames), (double)j.frames);
  if (es->live && ((int)j.status != es->status || fabs(j.progress - es->progress) >= 0.001 ||
                   done != es->done || total != es->total)) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", j.id);
    cJSON_AddStringToObject(o, "status", job_status_name(j.status));
    cJSON_AddNumberToObject(o, "progress", j.progress);
    if (total > 0) {
      cJSON *f = cJSON_AddObjectToObject(o, "frames");
      cJSON_AddNumberToObject(f, "done", done);
      cJSON_AddNumberToObject(f, "total", total);
    }
    add_event(es, "progress", o);
    es->status = (int)j.status;
    es->progress = j.progress;
    es->done = done;
    es->total = total;
  }
  if (j.follow && es->live && j.has_result && j.result.frames != es->version) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", j.id);
    cJSON_AddStringToObject(o, "status", job_status_name(j.status));
    cJSON_AddNumberToObject(o, "frames", (double)j.result.frames);
    cJSON *res = result_summary(&j.result);
    if (res != NULL)
      cJSON_AddItemToObject(o, "result", res);
    add_event(es, "update", o);
    es->version = j.result.frames;
  }
  if (!es->live) {
    add_event(es, "end", job_to_json(&j, true));
    es->ended = true;
  }
  job_record_free(&j);
}

static ssize_t read_events(void *cls, uint64_t pos, char *buf, size_t max) {
  (void)pos;
  event_stream *es = cls;
  for (;;) {
    if (es->off < es->len) {
      size_t n = es->len - es->off < max ? es->len - es->off : max;
      memcpy(buf, es->buf + es->off, n);
      es->off += n;
      return (ssize_t)n;
    }
    es->off = es->len = 0;
    if (es->ended || atomic_load(&es->svc->stopping))
      return MHD_CONTENT_READER_END_OF_STREAM;
    compose(es);
    if (es->len > 0)
      continue;
    const double now = histd_now_ms();
    if (now >= es->next_ping) {
      add(es, ": ping\n\n", 8);
      es->next_ping = now + PING_MS;
      continue;
    }
    const double deadline = es->live ? fmin(now + PROGRESS_MS, es->next_ping) : es->next_ping;
    if (!jobs_stream_wait(es->svc->jobs, es->job, es->conn, deadline))
      return MHD_CONTENT_READER_END_OF_STREAM; /* the daemon is stopping */
    return 0; /* suspended: called again once resumed */
  }
}

static void free_events(void *cls) {
  event_stream *es = cls;
  atomic_fetch_sub(&es->svc->event_streams, 1);
  free(es->buf);
  free(es);
}

void route_jobs_events(request *r) {
  service *svc = r->svc;
  job_record j;
  int rc = jobs_get(svc->jobs, r->path_id, &j, false);
  if (rc == HISTD_ENOENT) {
    respond_problem(r, 404, "no job has the id \"%s\"", r->path_id);
    return;
  }
  if (rc != 0) {
    respond_problem(r, 500, "job %s could not be read from the database", r->path_id);
    return;
  }
  job_record_free(&j);
  const int cap = stream_cap(svc);
  if (atomic_fetch_add(&svc->event_streams, 1) >= cap) {
    atomic_fetch_sub(&svc->event_streams, 1);
    respond_problem(r, 503, "the daemon has %d event streams open, the most it keeps at once "
                            "(half of --connection-limit or --per-ip-connection-limit); poll "
                            "GET /v1/jobs/{id}?wait= instead, or try again shortly", cap);
    response_add_header(r, "Retry-After", "5");
    return;
  }
  event_stream *es = calloc(1, sizeof *es);
  if (es != NULL) {
    es->svc = svc;
    es->conn = r->conn;
    snprintf(es->job, sizeof es->job, "%s", r->path_id);
    es->status = -1;
    es->progress = -1;
    es->done = es->total = -1;
    es->next_ping = histd_now_ms() + PING_MS;
    r->response = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, read_events, es,
                                                    free_events);
  }
  if (r->response == NULL) {
    if (es != NULL)
      free(es);
    atomic_fetch_sub(&svc->event_streams, 1);
    respond_problem(r, 503, "out of memory; try again shortly");
    return;
  }
  r->status = 200;
  response_add_header(r, "Content-Type", "text/event-stream");
  response_add_header(r, "Cache-Control", "no-cache");
  response_add_header(r, "X-Accel-Buffering", "no"); /* nginx: pass each event on at once */
}
