/*
 * http.h -- requests and responses as the handlers see them (http.c,
 * problem.c, accept.c), and the route table.
 */
#ifndef HISTD_HTTP_H
#define HISTD_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "service.h"

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

#endif
