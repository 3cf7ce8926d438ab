/*
 * http.c -- libmicrohttpd: the route table, request bodies, auth and CORS.
 *
 * libmicrohttpd runs its own thread pool (MHD_USE_INTERNAL_POLLING_THREAD
 * with MHD_OPTION_THREAD_POOL_SIZE, epoll underneath) and calls on_request
 * for every request, several times:
 *
 *   1. headers read, no body yet: match the route, check the method, the
 *      token and Content-Length. Anything wrong is answered right here, so
 *      an oversized upload gets its 413 before a byte of its body is read
 *      (and MHD closes the connection rather than drain the body).
 *   2. zero or more times with body chunks: append to one buffer, which
 *      grows as the bytes come (doubling from 64 KiB, never past the
 *      Content-Length); a chunked body that outgrows --max-upload-bytes is
 *      cut off with 413 as soon as it does.
 *   3. body complete: run the route's handler, queue its response.
 *
 * Buffered bodies count against --max-buffered-bytes (svc->buffered, one
 * budget for every request in flight) as they arrive: a body holds its
 * buffer, which is at most twice what its client has sent (and nothing
 * before its first byte), never what its Content-Length announces. (Taking
 * the announced size at the headers let one client that announced the
 * budget and sent a byte a second hold all of it.) A body larger than the
 * whole budget is 413 at the headers, one whose Content-Length does not
 * fit in what is free at that moment 503 with Retry-After; a body that
 * outgrows the budget while it arrives is read to its end and answered
 * 503. What a request took is given back when it completes. Streamed
 * float64 uploads and spooled bodies buffer nothing. How long a body may
 * take, and so how long its buffer is held, is deadline.c's
 * (--body-timeout, --min-body-rate).
 *
 * A long-polling handler may suspend its connection instead of answering
 * (jobs.c resumes it); MHD then calls on_request again, and the handler
 * runs a second time with r->resumed set.
 *
 * Connections are watched by deadline.c (a request head in --header-timeout,
 * a body at --min-body-rate, the per-address limit), through
 * MHD_OPTION_NOTIFY_CONNECTION, the request-line callback and the calls
 * below; requests are checked by guard.c before they are routed.
 *
 * Every response leaves through finish(), which adds the CORS headers for
 * the request's Origin, so errors carry them too. The route table is the
 * single source of the daemon's surface: the dispatcher, 405's Allow
 * header, OPTIONS preflights and `histd --print-routes` (which the test
 * compares with api/openapi.yaml) all read it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "budget.h"
#include "config.h"
#include "deadline.h"
#include "guard.h"
#include "http.h"
#include "routes.h"
#include "service.h"
#include "sync_pool.h"
#include "upload_stream.h"

const route service_routes[] = {
    {"POST", "/v1/datasets", route_datasets_create, true, false,
     "upload a point set (JSON, CSV, XYZ, raw float64 or float32)"},
    {"GET", "/v1/datasets", route_datasets_list, false, false, "list datasets, newest first"},
    {"GET", "/v1/datasets/{id}", route_datasets_get, false, false, "one dataset's metadata"},
    {"DELETE", "/v1/datasets/{id}", route_datasets_delete, false, false, "delete a dataset"},
    {"POST", "/v1/datasets/{id}/frames", route_datasets_frames, true, false,
     "append frames to a growing dataset"},
    {"POST", "/v1/datasets/{id}/seal", route_datasets_seal, false, false,
     "seal a growing dataset: it takes no more frames"},
    {"POST", "/v1/jobs", route_jobs_create, true, false, "submit a histogram job"},
    {"GET", "/v1/jobs", route_jobs_list, false, false, "list jobs, newest first"},
    {"GET", "/v1/jobs/{id}", route_jobs_get, false, false, "one job (?wait= long-polls)"},
    {"DELETE", "/v1/jobs/{id}", route_jobs_delete, false, false, "cancel a job"},
    {"GET", "/v1/jobs/{id}/result", route_jobs_result, false, false,
     "a finished job's histogram as JSON or CSV"},
    {"DELETE", "/v1/jobs/{id}/result", route_jobs_result_delete, false, false,
     "delete a succeeded job's stored result (the job stays)"},
    {"GET", "/v1/jobs/{id}/events", route_jobs_events, false, false,
     "a job's progress, updates and end as Server-Sent Events"},
    {"POST", "/v1/histogram", route_histogram, true, false,
     "points and parameters in, histogram out, in one request"},
    {"GET", "/v1/kernels", route_kernels, false, false, "the kernel registry"},
    {"GET", "/v1/schema", route_schema, false, false, "the fields a result may hold"},
    {"GET", "/v1/devices", route_devices, false, false, "GPUs and CPU threads"},
    {"GET", "/healthz", route_healthz, false, true, "liveness"},
    {"GET", "/readyz", route_readyz, false, false, "readiness"},
    {"GET", "/metrics", route_metrics, false, false, "Prometheus metrics"},
    {"GET", "/", route_static, false, true, "the dashboard"},
    {"GET", "/{asset}", route_static, false, true, "the dashboard's static files"},
};
const size_t service_route_count = sizeof service_routes / sizeof service_routes[0];

void print_routes(void) {
  for (size_t i = 0; i < service_route_count; i++)
    printf("%s %s\n", service_routes[i].method, service_routes[i].pattern);
}

/* ---- matching --------------------------------------------------------------------- */

/* Matches path against pattern; a {...} segment matches one non-empty
 * segment, whose start goes to *id. */
static bool match(const char *pattern, const char *path, const char **id, size_t *idlen) {
  const char *p = pattern, *s = path;
  while (*p && *s) {
    if (*p == '{') {
      const char *end = strchr(s, '/');
      size_t len = end ? (size_t)(end - s) : strlen(s);
      if (len == 0)
        return false;
      if (id) {
        *id = s;
        *idlen = len;
      }
      s += len;
      p = strchr(p, '}') + 1;
      continue;
    }
    if (*p != *s)
      return false;
    p++;
    s++;
  }
  return *p == '\0' && *s == '\0';
}

/* The static-asset pattern only claims paths that are not the API's. */
static bool is_api_path(const char *path) {
  return strncmp(path, "/v1/", 4) == 0 || strcmp(path, "/v1") == 0;
}

static const route *find_route(const char *method, const char *path, const char **id,
                               size_t *idlen, bool *path_known, char *allow, size_t allowlen) {
  const route *found = NULL;
  *path_known = false;
  allow[0] = '\0';
  for (size_t i = 0; i < service_route_count; i++) {
    const route *rt = &service_routes[i];
    const char *mid = NULL;
    size_t mlen = 0;
    if (strcmp(rt->pattern, "/{asset}") == 0) {
      /* Any non-API path below /, nested or not, for GET and HEAD only: a
       * POST to /nowhere is a 404, not a 405. */
      if (is_api_path(path) || strlen(path) < 2 ||
          (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0))
        continue;
      mid = path + 1;
      mlen = strlen(mid);
    } else if (!match(rt->pattern, path, &mid, &mlen)) {
      continue;
    }
    *path_known = true;
    if (strstr(allow, rt->method) == NULL) {
      size_t l = strlen(allow);
      snprintf(allow + l, allowlen - l, "%s%s", l ? ", " : "", rt->method);
      if (strcmp(rt->method, "GET") == 0) {
        l = strlen(allow);
        snprintf(allow + l, allowlen - l, ", HEAD");
      }
    }
    bool same = strcmp(rt->method, method) == 0 ||
                (strcmp(method, "HEAD") == 0 && strcmp(rt->method, "GET") == 0);
    if (same && found == NULL) {
      found = rt;
      if (id) {
        *id = mid;
        *idlen = mlen;
      }
    }
  }
  if (*path_known) {
    size_t l = strlen(allow);
    snprintf(allow + l, allowlen - l, ", OPTIONS");
  }
  return found;
}

/* ---- per-request state ---------------------------------------------------------------- */

typedef struct request_state {
  request r;
  const route *route;
  char id[128];
  size_t cap;
  bool dispatched;
  bool answered;
  bool body_too_big;
  bool over_budget;  /* a body outgrew --max-buffered-bytes */
  bool buffering;    /* the body goes to r->body (not streamed or spooled) */
  size_t most;       /* the largest the buffer may grow: Content-Length + 1, or the limit + 1 */
  size_t held;       /* bytes taken from svc->buffered */
  bool early; /* answered at the headers; sent at the request's end */
  bool close; /* answer with Connection: close (the framing could not be trusted) */
  bool started;     /* on_request has seen this request (and counted it in flight) */
  bool nul_in_url;  /* the raw request target held %00 */
  double t0;         /* when the headers were in */
  size_t body_bytes; /* bytes of body received */
  size_t discarded;
  char allow[128];
} request_state;

const char *request_query(request *r, const char *key) {
  return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, key);
}

const char *request_header(request *r, const char *key) {
  return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, key);
}

void response_add_header(request *r, const char *name, const char *value) {
  if (r->response != NULL)
    MHD_add_response_header(r->response, name, value);
}

static void add_cors(request *r) {
  const char *origin = request_header(r, "Origin");
  const char *allow = cors_allow_origin(&r->svc->cfg, origin);
  if (allow == NULL)
    return;
  response_add_header(r, "Access-Control-Allow-Origin", allow);
  if (strcmp(allow, "*") != 0)
    response_add_header(r, "Vary", "Origin");
  response_add_header(r, "Access-Control-Expose-Headers",
                      "Location, Retry-After, Content-Disposition, Allow");
}

/* Queues r->response (with CORS headers) and counts it. */
static enum MHD_Result finish(request_state *st) {
  request *r = &st->r;
  if (r->response == NULL)
    respond_problem(r, 500, "the handler produced no response");
  if (r->response == NULL)
    return MHD_NO;
  add_cors(r);
  if (r->vary_accept)
    response_add_header(r, "Vary", "Accept");
  if (st->close)
    response_add_header(r, "Connection", "close");
  enum MHD_Result rc = MHD_queue_response(r->conn, r->status, r->response);
  MHD_destroy_response(r->response);
  r->response = NULL;
  st->answered = true;
  if (r->svc->cfg.access_log)
    fprintf(stderr, "histd: %s %s %u %zu %.2fms\n", r->method, r->url, r->status,
            st->body_bytes, histd_now_ms() - st->t0);
  atomic_fetch_add(&r->svc->metrics.http_requests, 1);
  if (r->status >= 400)
    atomic_fetch_add(&r->svc->metrics.http_errors, 1);
  return rc;
}

static bool token_ok(request *r) {
  const config *cfg = &r->svc->cfg;
  if (cfg->token[0] == '\0')
    return true;
  const char *h = request_header(r, "Authorization");
  if (h == NULL || strncasecmp(h, "Bearer ", 7) != 0)
    return false;
  h += 7;
  while (*h == ' ')
    h++;
  /* Compare in time independent of where the first difference is. */
  size_t a = strlen(h), b = strlen(cfg->token);
  unsigned char diff = a != b;
  for (size_t i = 0; i < b; i++)
    diff |= (unsigned char)(cfg->token[i] ^ (i < a ? h[i] : 0));
  return diff == 0;
}

static void preflight(request_state *st) {
  request *r = &st->r;
  respond_empty(r, 204);
  response_add_header(r, "Allow", st->allow);
  if (cors_allow_origin(&r->svc->cfg, request_header(r, "Origin")) != NULL) {
    response_add_header(r, "Access-Control-Allow-Methods", st->allow);
    response_add_header(r, "Access-Control-Allow-Headers",
                        "Authorization, Content-Type, Accept");
    response_add_header(r, "Access-Control-Max-Age", "600");
  }
}

/* First call: framing, host, route, method, origin, auth, type, size. Returns true
 * when answered. */
static bool admit(request_state *st, const char *version) {
  request *r = &st->r;
  const char *id = NULL;
  size_t idlen = 0;
  bool path_known;
  const char *path = r->url;
  const config *cfg = &r->svc->cfg;
  unsigned status;
  char msg[512];
  if (guard_head(r->conn, &status, msg, sizeof msg) != 0) {
    st->close = true;
    respond_problem(r, status, "%s", msg);
    return true;
  }
  if (guard_nul(st->nul_in_url, &status, msg, sizeof msg) != 0) {
    respond_problem(r, status, "%s", msg);
    return true;
  }
  if (guard_host(cfg, request_header(r, "Host"), strcmp(version, "HTTP/1.0") != 0, &status,
                 msg, sizeof msg) != 0) {
    respond_problem(r, status, "%s", msg);
    return true;
  }
  st->route = find_route(r->method, path, &id, &idlen, &path_known, st->allow, sizeof st->allow);
  if (strcmp(r->method, "OPTIONS") == 0 && path_known) {
    preflight(st);
    return true;
  }
  if (st->route == NULL) {
    if (path_known) {
      respond_problem(r, 405, "%s is not allowed on %s; allowed: %s", r->method, path,
                      st->allow);
      response_add_header(r, "Allow", st->allow);
    } else {
      respond_problem(r, 404, "there is no route %s (see GET /v1/kernels, /v1/datasets, "
                              "/v1/jobs, or api/openapi.yaml)", path);
    }
    return true;
  }
  if (id != NULL) {
    if (idlen >= sizeof st->id) {
      respond_problem(r, 404, "no resource has an id that long");
      return true;
    }
    memcpy(st->id, id, idlen);
    st->id[idlen] = '\0';
    r->path_id = st->id;
  }
  if (guard_origin(cfg, r->method, request_header(r, "Origin"), request_header(r, "Host"),
                   &status, msg, sizeof msg) != 0) {
    respond_problem(r, status, "%s", msg);
    return true;
  }
  if (!st->route->public_route && !token_ok(r)) {
    respond_problem(r, 401, "this route needs the header 'Authorization: Bearer <token>' "
                            "with the daemon's token");
    response_add_header(r, "WWW-Authenticate", "Bearer realm=\"histd\"");
    return true;
  }
  if (st->route->body) {
    if (guard_content_type(request_header(r, "Content-Type"),
                           st->route->handler == route_datasets_create ||
                               st->route->handler == route_datasets_frames,
                           request_query(r, "format") != NULL || request_query(r, "path") != NULL,
                           &status, msg, sizeof msg) != 0) {
      respond_problem(r, status, "%s", msg);
      return true;
    }
    const char *cl = request_header(r, "Content-Length");
    if (cl != NULL) {
      char *end;
      unsigned long long v = strtoull(cl, &end, 10);
      if (end == cl || *end != '\0') {
        respond_problem(r, 400, "Content-Length is not a number");
        return true;
      }
      if (v > r->svc->cfg.max_upload_bytes) {
        respond_problem(r, 413, "the body has %llu bytes, more than the limit of %zu "
                                "(--max-upload-bytes)", v, r->svc->cfg.max_upload_bytes);
        return true;
      }
      st->most = (size_t)v + 1;
      r->content_length = (size_t)v;
      if (st->route->handler == route_datasets_create) {
        int s = route_datasets_stream(r, v);
        if (s < 0)
          return true;
        if (s > 0)
          return false; /* no buffer: the chunks go to r->stream or the spool */
      }
    } else {
      st->most = r->svc->cfg.max_upload_bytes + 1;
    }
    st->buffering = true;
    budget *b = &r->svc->buffered;
    if (cl != NULL && b->limit != 0 && st->most > b->limit) {
      respond_problem(r, 413, "the body has %zu bytes, more than the %llu bytes the daemon "
                              "buffers for all requests at once (--max-buffered-bytes)",
                      st->most - 1, (unsigned long long)b->limit);
      return true;
    }
    uint64_t used = atomic_load(&b->used);
    if (cl != NULL && b->limit != 0 && (used >= b->limit || st->most > b->limit - used)) {
      respond_problem(r, 503, "the daemon is buffering %llu bytes of other requests, too near "
                              "its limit of %llu (--max-buffered-bytes) for this body's %zu; "
                              "try again shortly",
                      (unsigned long long)used, (unsigned long long)b->limit, st->most - 1);
      response_add_header(r, "Retry-After", "2");
      return true;
    }
  }
  return false;
}

/* Appends a chunk, growing the buffer (and its share of the budget) as
 * needed; false when the body is too big (st->over_budget set when it is
 * --max-buffered-bytes rather than --max-upload-bytes). */
static bool append_body(request_state *st, const char *data, size_t len) {
  request *r = &st->r;
  if (r->body_len + len + 1 > st->most)
    return false;
  if (r->body_len + len + 1 > st->cap) {
    size_t cap = st->cap > 0 ? st->cap * 2 : (size_t)64 << 10;
    while (cap < r->body_len + len + 1)
      cap *= 2;
    if (cap > st->most)
      cap = st->most;
    if (!budget_take(&r->svc->buffered, cap - st->cap)) {
      st->over_budget = true;
      return false;
    }
    st->held += cap - st->cap;
    char *p = realloc(r->body, cap);
    if (p == NULL)
      return false;
    r->body = p;
    st->cap = cap;
  }
  memcpy(r->body + r->body_len, data, len);
  r->body_len += len;
  return true;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls) {
  service *svc = cls;
  request_state *st = *con_cls;
  if (st == NULL || !st->started) {
    if (st == NULL) /* on_request_line could not allocate it */
      st = calloc(1, sizeof *st);
    if (st == NULL)
      return MHD_NO;
    *con_cls = st;
    st->started = true;
    atomic_fetch_add(&svc->http_in_flight, 1);
    st->r.svc = svc;
    st->r.conn = conn;
    st->r.method = method;
    st->r.url = url;
    st->t0 = histd_now_ms();
    const char *cl0 = request_header(&st->r, "Content-Length");
    deadlines_head_done(svc->deadlines, conn,
                        request_header(&st->r, "Transfer-Encoding") != NULL ||
                            (cl0 != NULL && strcmp(cl0, "0") != 0));
    if (admit(st, version)) {
      /* Answered at the headers. With a body on its way (413, 401 ...),
       * answer now: MHD then closes rather than reads it. Without one, wait
       * for the end of the request so the connection stays alive. */
      const char *cl = request_header(&st->r, "Content-Length");
      bool body_coming = request_header(&st->r, "Transfer-Encoding") != NULL ||
                         (cl != NULL && strcmp(cl, "0") != 0);
      if (body_coming)
        return finish(st);
      st->early = true;
    }
    return MHD_YES;
  }
  request *r = &st->r;
  if (st->answered) { /* answered early (413 ...): drop whatever still comes */
    *upload_data_size = 0;
    return MHD_YES;
  }
  if (st->early) {
    *upload_data_size = 0;
    return finish(st);
  }
  if (*upload_data_size > 0) {
    st->body_bytes += *upload_data_size;
    deadlines_body(svc->deadlines, conn, *upload_data_size);
    if (st->body_too_big) {
      /* MHD cannot answer in the middle of a body: drop the rest and answer
       * 413 at its end, unless the client keeps sending far past the limit. */
      st->discarded += *upload_data_size;
      *upload_data_size = 0;
      return st->discarded > 2 * svc->cfg.max_upload_bytes + (1u << 20) ? MHD_NO : MHD_YES;
    }
    if (r->stream != NULL) {
      upload_stream_write(r->stream, upload_data, *upload_data_size);
      *upload_data_size = 0;
      return MHD_YES;
    }
    if (r->spooling) {
      route_datasets_spool(r, upload_data, *upload_data_size);
      *upload_data_size = 0;
      return MHD_YES;
    }
    if (st->buffering && !append_body(st, upload_data, *upload_data_size)) {
      st->body_too_big = true;
      st->buffering = false;
      st->discarded = r->body_len + *upload_data_size;
      free(r->body);
      r->body = NULL;
      r->body_len = 0;
    }
    *upload_data_size = 0;
    return MHD_YES;
  }
  deadlines_body_done(svc->deadlines, conn); /* the body, if any, is in */
  if (st->body_too_big && st->over_budget) {
    respond_problem(r, 503, "the daemon is buffering other requests' bodies up to its limit "
                            "of %llu bytes (--max-buffered-bytes); try again shortly",
                    (unsigned long long)svc->buffered.limit);
    response_add_header(r, "Retry-After", "2");
    return finish(st);
  }
  if (st->body_too_big) {
    respond_problem(r, 413, "the body is larger than the limit of %zu bytes "
                            "(--max-upload-bytes)", svc->cfg.max_upload_bytes);
    return finish(st);
  }
  /* The whole request is in (or we were resumed from a long-poll). */
  if (st->dispatched)
    r->resumed = true;
  st->dispatched = true;
  if (r->body != NULL)
    r->body[r->body_len] = '\0';
  r->suspended = false;
  st->route->handler(r);
  if (r->suspended)
    return MHD_YES;
  return finish(st);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
  (void)toe;
  service *svc = cls;
  deadlines_request_done(svc->deadlines, conn); /* the next head's deadline starts */
  request_state *st = *con_cls;
  if (st == NULL)
    return;
  if (st->started)
    atomic_fetch_sub(&svc->http_in_flight, 1);
  if (st->r.response != NULL)
    MHD_destroy_response(st->r.response);
  upload_stream_abort(st->r.stream); /* a client that left mid-upload */
  if (st->r.spooling) {               /* ... or mid-spool */
    close(st->r.spool_fd);
    unlink(st->r.spool_path);
  }
  sync_task_free(st->r.sync_task);
  free(st->r.deferred);
  free(st->r.body);
  budget_give(&svc->buffered, st->held);
  free(st);
  *con_cls = NULL;
}

/* A stopping daemon takes no new connection: libmicrohttpd closes one its
 * accept policy refuses, and the listening socket stays as it is until
 * MHD_stop_daemon closes it. (MHD_quiesce_daemon did this before; in
 * libmicrohttpd 0.9.75 it removes the socket from each pool thread's epoll
 * set from the calling thread while that thread, seeing the daemon
 * quiesced, may remove it too, and the loser's failed epoll_ctl is a
 * libmicrohttpd panic, an abort: test_shutdown caught it once in the tsan
 * build.) */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen) {
  (void)addr;
  (void)addrlen;
  const service *svc = cls;
  return atomic_load(&svc->stopping) ? MHD_NO : MHD_YES;
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code) {
  service *svc = cls;
  if (code == MHD_CONNECTION_NOTIFY_STARTED)
    deadlines_opened(svc->deadlines, conn, socket_context);
  else
    deadlines_closed(svc->deadlines, socket_context);
}

/* Called when a request line has been read, with its target as sent: the
 * head has begun. Its return value becomes the request's context: the
 * request's state, which notes a %00 in the target here, since
 * libmicrohttpd's decoded URL would end at that NUL ("/v1/x%00y" read as
 * "/v1/x"). on_request completes the state; on_completed frees it. */
static void *on_request_line(void *cls, const char *uri, struct MHD_Connection *conn) {
  service *svc = cls;
  deadlines_request_line(svc->deadlines, conn);
  request_state *st = calloc(1, sizeof *st);
  if (st != NULL && uri != NULL)
    st->nul_in_url = strstr(uri, "%00") != NULL;
  return st;
}

static void on_panic(void *cls, const char *file, unsigned int line, const char *reason) {
  (void)cls;
  fprintf(stderr, "histd: libmicrohttpd failed at %s:%u: %s\n", file ? file : "?", line,
          reason ? reason : "");
  abort();
}

/* libmicrohttpd's own error log. While MHD_start_daemon runs, its messages
 * are kept (the last one) rather than printed, so that a failed start says
 * one thing, in http_start's words; afterwards they go to stderr. */
static pthread_mutex_t start_log_lock = PTHREAD_MUTEX_INITIALIZER;
static bool start_log_keep;
static char start_log_last[256];

static void on_log(void *cls, const char *fmt, va_list ap) {
  (void)cls;
  pthread_mutex_lock(&start_log_lock);
  if (start_log_keep) {
    vsnprintf(start_log_last, sizeof start_log_last, fmt, ap);
    size_t n = strlen(start_log_last);
    while (n > 0 && (start_log_last[n - 1] == '\n' || start_log_last[n - 1] == '.'))
      start_log_last[--n] = '\0';
  } else {
    fputs("histd: http: ", stderr);
    vfprintf(stderr, fmt, ap);
  }
  pthread_mutex_unlock(&start_log_lock);
}

static void start_log(bool keep) {
  pthread_mutex_lock(&start_log_lock);
  start_log_keep = keep;
  if (keep)
    start_log_last[0] = '\0';
  pthread_mutex_unlock(&start_log_lock);
}

/* Binds and listens on the address itself (rather than leaving it to
 * libmicrohttpd, whose message on failure names "port 0" when the address
 * comes by MHD_OPTION_SOCK_ADDR), so that a failure can say which address
 * and why, in one sentence. The same socket options as libmicrohttpd's:
 * SO_REUSEADDR, IPv6 only on an IPv6 address. Returns the socket, or -1
 * with the reason in msg. */
static int listen_on(const struct addrinfo *ai, const char *where, char *msg, size_t msglen) {
  int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
  if (fd < 0) {
    histd_fail(msg, msglen, HISTD_EIO, "cannot listen on %s: cannot make a socket: %s", where,
               strerror(errno));
    return -1;
  }
  int on = 1;
  (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  if (ai->ai_family == AF_INET6)
    (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on);
  if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 1024) == 0)
    return fd;
  int err = errno;
  close(fd);
  const char *why;
  switch (err) {
  case EADDRINUSE:
    why = "the port is already in use by another process (choose another with --listen)";
    break;
  case EADDRNOTAVAIL:
    why = "that is not an address of this host";
    break;
  case EACCES:
    why = "permission denied (ports below 1024 need root or CAP_NET_BIND_SERVICE)";
    break;
  default:
    why = strerror(err);
  }
  histd_fail(msg, msglen, HISTD_EIO, "cannot listen on %s: %s", where, why);
  return -1;
}

int http_start(service *svc, char *msg, size_t msglen) {
  const config *cfg = &svc->cfg;
  char port[8];
  snprintf(port, sizeof port, "%u", cfg->listen_port);
  struct addrinfo hints = {0}, *ai = NULL;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  int gai = getaddrinfo(cfg->listen_host, port, &hints, &ai);
  if (gai != 0)
    return histd_fail(msg, msglen, HISTD_EINVAL, "cannot resolve --listen host \"%s\": %s",
                      cfg->listen_host, gai_strerror(gai));
  int threads = cfg->http_threads;
  if (threads <= 0) {
    unsigned n = histd_cpu_count();
    threads = n > 64 ? 128 : (int)(2 * n);
    if (threads < 4)
      threads = 4;
  }
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_ALLOW_SUSPEND_RESUME |
                   MHD_USE_ERROR_LOG;
  if (ai->ai_family == AF_INET6)
    flags |= MHD_USE_IPv6;
  bool v6 = strchr(cfg->listen_host, ':') != NULL;
  char where[sizeof cfg->listen_host + 16];
  snprintf(where, sizeof where, "%s%s%s:%u", v6 ? "[" : "", cfg->listen_host, v6 ? "]" : "",
           cfg->listen_port);
  int fd = listen_on(ai, where, msg, msglen);
  freeaddrinfo(ai);
  if (fd < 0)
    return -1;
  MHD_set_panic_func(on_panic, NULL);
  start_log(true);
  svc->mhd = MHD_start_daemon(
      flags, 0, on_accept, svc, on_request, svc,
      MHD_OPTION_EXTERNAL_LOGGER, on_log, NULL,
      MHD_OPTION_LISTEN_SOCKET, fd,
      MHD_OPTION_THREAD_POOL_SIZE, (unsigned)threads,
      MHD_OPTION_CONNECTION_TIMEOUT, cfg->connection_timeout,
      /* deadline.c counts connections and makes room at its limits, so
       * libmicrohttpd's own limit leaves it room to: the new connection
       * and those shut down but not yet closed. */
      MHD_OPTION_CONNECTION_LIMIT,
      cfg->connection_limit == 0 ? 0u : cfg->connection_limit + cfg->connection_limit / 4 + 16,
      MHD_OPTION_PER_IP_CONNECTION_LIMIT, 0u,
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, cfg->connection_memory_limit,
      MHD_OPTION_NOTIFY_COMPLETED, on_completed, svc,
      MHD_OPTION_NOTIFY_CONNECTION, on_connection, svc,
      MHD_OPTION_URI_LOG_CALLBACK, on_request_line, svc,
      MHD_OPTION_END);
  if (svc->mhd == NULL) {
    /* fd is left open: whether libmicrohttpd closed it on its way out is not
     * said, and the process is about to exit. */
    histd_fail(msg, msglen, HISTD_EIO, "cannot start the HTTP server on %s: %s", where,
               start_log_last[0] ? start_log_last : "libmicrohttpd gave no reason");
    start_log(false);
    return -1;
  }
  start_log(false);
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(svc->mhd, MHD_DAEMON_INFO_BIND_PORT);
  unsigned bound = info ? info->port : cfg->listen_port;
  printf("histd: listening on http://%s%s%s:%u\n", v6 ? "[" : "", cfg->listen_host,
         v6 ? "]" : "", bound);
  fflush(stdout);
  return 0;
}

void http_stop(service *svc) {
  if (svc->mhd != NULL) {
    /* Let requests under way be answered (a histogram just computed, a
     * long-poll just resumed), for up to two seconds. */
    for (int i = 0; i < 400 && atomic_load(&svc->http_in_flight) > 0; i++)
      usleep(5000);
    MHD_stop_daemon(svc->mhd);
    svc->mhd = NULL;
  }
}
