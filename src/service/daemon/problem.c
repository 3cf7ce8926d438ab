/*
 * problem.c -- responses: JSON bodies, plain bodies, and errors as
 * application/problem+json (RFC 9457):
 *
 *     {"type":"about:blank","title":"Bad Request","status":400,
 *      "detail":"bucket_width must be > 0, got -1"}
 *
 * The detail is always a sentence a person can act on; the title is the
 * status's reason phrase, as "about:blank" problems require.
 *
 * Large answers (results with many buckets) are written to an unnamed file
 * in the data dir and sent from it. Each such file counts against
 * --max-buffered-bytes from the moment it is written until libmicrohttpd
 * frees the response (sent, or the client gone or timed out); past the
 * budget the answer is 503 with Retry-After, so clients that ask and never
 * read cannot pile up unbounded temp files. (An answer larger than the
 * whole budget is sent when nothing else is held.)
 */
#include <fcntl.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "budget.h"
#include "http.h"
#include "service.h"

const char *http_status_title(unsigned status) {
  switch (status) {
  case 200: return "OK";
  case 201: return "Created";
  case 202: return "Accepted";
  case 204: return "No Content";
  case 400: return "Bad Request";
  case 401: return "Unauthorized";
  case 403: return "Forbidden";
  case 404: return "Not Found";
  case 405: return "Method Not Allowed";
  case 406: return "Not Acceptable";
  case 409: return "Conflict";
  case 410: return "Gone";
  case 413: return "Content Too Large";
  case 415: return "Unsupported Media Type";
  case 421: return "Misdirected Request";
  case 422: return "Unprocessable Content";
  case 500: return "Internal Server Error";
  case 501: return "Not Implemented";
  case 503: return "Service Unavailable";
  case 507: return "Insufficient Storage";
  default: return "Error";
  }
}

static void set_response(request *r, unsigned status, struct MHD_Response *resp,
                         const char *content_type) {
  if (r->response != NULL)
    MHD_destroy_response(r->response);
  r->response = resp;
  r->status = status;
  if (resp != NULL && content_type != NULL)
    MHD_add_response_header(resp, "Content-Type", content_type);
}

void respond_text(request *r, unsigned status, const char *content_type, char *data,
                  size_t len) {
  struct MHD_Response *resp =
      MHD_create_response_from_buffer_with_free_callback(len, data, free);
  if (resp == NULL)
    free(data);
  set_response(r, status, resp, content_type);
}

void respond_json(request *r, unsigned status, cJSON *body) {
  char *text = body ? cJSON_PrintUnformatted(body) : NULL;
  cJSON_Delete(body);
  if (text == NULL) {
    respond_problem(r, 500, "out of memory while writing the response");
    return;
  }
  size_t len = strlen(text);
  /* cJSON allocates with malloc (the default hooks), so free() releases it. */
  respond_text(r, status, "application/json", text, len);
}

bool body_open(body_writer *b, const service *svc, bool large) {
  memset(b, 0, sizeof *b);
  if (large) {
    int fd = open(svc->cfg.data_dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    b->f = fd >= 0 ? fdopen(fd, "w+") : tmpfile();
    if (b->f == NULL && fd >= 0)
      close(fd);
    b->file = b->f != NULL;
  }
  if (b->f == NULL)
    b->f = open_memstream(&b->mem, &b->len);
  return b->f != NULL;
}

/* A large answer's file, sent by libmicrohttpd through read_answer. */
typedef struct answer_file {
  int fd;
  uint64_t size;
  budget *budget;
} answer_file;

static ssize_t read_answer(void *cls, uint64_t pos, char *buf, size_t max) {
  answer_file *a = cls;
  if (pos >= a->size)
    return MHD_CONTENT_READER_END_OF_STREAM;
  ssize_t n = pread(a->fd, buf, max, (off_t)pos);
  return n > 0 ? n : MHD_CONTENT_READER_END_WITH_ERROR;
}

static void free_answer(void *cls) {
  answer_file *a = cls;
  close(a->fd);
  budget_give(a->budget, a->size);
  free(a);
}

void respond_body(request *r, unsigned status, const char *content_type, body_writer *b,
                  int rc) {
  bool ok = fflush(b->f) == 0 && !ferror(b->f) && rc == 0;
  if (b->file) {
    off_t size = ftello(b->f);
    int fd = ok && size >= 0 ? dup(fileno(b->f)) : -1;
    fclose(b->f);
    if (fd < 0) {
      respond_problem(r, 500, "the response could not be written");
      return;
    }
    budget *bud = &r->svc->buffered;
    if (!budget_take_or_alone(bud, (uint64_t)size)) {
      close(fd);
      respond_problem(r, 503, "the answer has %lld bytes, and large answers not yet read by "
                              "their clients hold the daemon's limit of %llu bytes "
                              "(--max-buffered-bytes); try again shortly",
                      (long long)size, (unsigned long long)bud->limit);
      response_add_header(r, "Retry-After", "5");
      return;
    }
    answer_file *a = malloc(sizeof *a);
    struct MHD_Response *resp =
        a ? MHD_create_response_from_callback((uint64_t)size, 256 * 1024, read_answer, a,
                                              free_answer)
          : NULL;
    if (resp == NULL) {
      free(a);
      close(fd);
      budget_give(bud, (uint64_t)size);
      respond_problem(r, 500, "the response could not be written");
      return;
    }
    *a = (answer_file){fd, (uint64_t)size, bud};
    set_response(r, status, resp, content_type); /* free_answer closes fd, gives back */
    return;
  }
  fclose(b->f); /* mem and len are final now */
  if (!ok || b->mem == NULL) {
    free(b->mem);
    respond_problem(r, 500, "out of memory while writing the response");
    return;
  }
  respond_text(r, status, content_type, b->mem, b->len);
}

void respond_empty(request *r, unsigned status) {
  struct MHD_Response *resp = MHD_create_response_from_buffer(0, "", MHD_RESPMEM_PERSISTENT);
  set_response(r, status, resp, NULL);
}

/* Length of the valid UTF-8 sequence at p (1 to 4), or 0. */
static size_t utf8_len(const unsigned char *p) {
  if (p[0] < 0x80)
    return 1;
  size_t n = (p[0] & 0xe0) == 0xc0 ? 2 : (p[0] & 0xf0) == 0xe0 ? 3 : (p[0] & 0xf8) == 0xf0 ? 4 : 0;
  if (n == 0 || (n == 2 && p[0] < 0xc2) || (n == 4 && p[0] > 0xf4))
    return 0;
  for (size_t i = 1; i < n; i++)
    if ((p[i] & 0xc0) != 0x80)
      return 0;
  if ((n == 3 && p[0] == 0xe0 && p[1] < 0xa0) || (n == 3 && p[0] == 0xed && p[1] > 0x9f) ||
      (n == 4 && p[0] == 0xf0 && p[1] < 0x90) || (n == 4 && p[0] == 0xf4 && p[1] > 0x8f))
    return 0;
  return n;
}

bool utf8_valid(const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    size_t n = utf8_len(p);
    if (n == 0)
      return false;
    p += n;
  }
  return true;
}

/* Details quote what the client sent; keep them valid UTF-8 text. */
static void sanitize(char *s) {
  unsigned char *p = (unsigned char *)s;
  while (*p) {
    size_t n = utf8_len(p);
    if (n == 0 || (n == 1 && *p < 0x20)) {
      *p++ = '?';
      continue;
    }
    p += n;
  }
}

void respond_problem(request *r, unsigned status, const char *fmt, ...) {
  char detail[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(detail, sizeof detail, fmt, ap);
  va_end(ap);
  sanitize(detail);
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "type", "about:blank");
  cJSON_AddStringToObject(o, "title", http_status_title(status));
  cJSON_AddNumberToObject(o, "status", status);
  cJSON_AddStringToObject(o, "detail", detail);
  char *text = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  if (text == NULL) {
    static const char oom[] = "{\"type\":\"about:blank\",\"title\":\"Internal Server Error\","
                              "\"status\":500,\"detail\":\"out of memory\"}";
    set_response(r, 500,
                 MHD_create_response_from_buffer(sizeof oom - 1, (void *)oom,
                                                 MHD_RESPMEM_PERSISTENT),
                 "application/problem+json");
    return;
  }
  struct MHD_Response *resp =
      MHD_create_response_from_buffer_with_free_callback(strlen(text), text, free);
  if (resp == NULL)
    free(text);
  set_response(r, status, resp, "application/problem+json");
}
