/*
 * routes_misc.c -- the small routes: /v1/kernels, /v1/devices, /healthz,
 * /readyz, /metrics, and the dashboard's static files at /.
 *
 * /healthz says the process answers (liveness: no auth, no store access).
 * /readyz says it can take work: the store answers, the daemon is not
 * shutting down, no GPU has lost its context (the process is ending), and
 * the data dir can take writes: its disk has more than READY_MIN_FREE
 * bytes free and it is under --max-data-bytes (readiness: 503 otherwise,
 * with the reason, so a load balancer drains it).
 *
 * Static files are served from --static-dir with a fixed table of
 * Content-Types; paths with ".." or hidden segments are refused, "/" is
 * index.html. They need no token (they are public code; the API calls the
 * page makes carry the token).
 */
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* Less free space than this on the data dir's disk is a full disk: SQLite
 * and the payloads could not count on finishing a write. */
#define READY_MIN_FREE ((uint64_t)16 << 20)

#include "http.h"
#include "jobs.h"
#include "metrics.h"
#include "routes.h"
#include "service.h"
#include "store.h"

void route_kernels(request *r) {
  cJSON *o = cJSON_CreateObject();
  cJSON *arr = cJSON_AddArrayToObject(o, "kernels");
  for (size_t i = 0; i < histd_kernel_count(); i++) {
    const histd_kernel *k = histd_kernel_at(i);
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "name", k->name);
    cJSON_AddStringToObject(e, "summary", k->summary ? k->summary : "");
    cJSON_AddStringToObject(e, "engine", k->engine == HISTD_ENGINE_CUDA ? "cuda" : k->engine == HISTD_ENGINE_ANY ? "any" : "cpu");
    cJSON_AddBoolToObject(e, "available",
                          k->engine != HISTD_ENGINE_CUDA || r->svc->gpu_count > 0);
    cJSON_AddItemToArray(arr, e);
  }
  respond_json(r, 200, o);
}

/* GET /v1/schema: the fields a result may hold (histd/schema.h), what the
 * Python client and the dashboard read results by. */
void route_schema(request *r) {
  body_writer b;
  if (!body_open(&b, r->svc, false)) {
    respond_problem(r, 503, "no memory for the schema's answer; try again");
    return;
  }
  respond_body(r, 200, "application/json", &b, histd_write_schema(b.f));
}

void route_devices(request *r) {
  histd_device_info dev[16];
  int count = 0;
  char why[256] = "";
  histd_devices(dev, 16, &count, why, sizeof why);
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "engine", count > 0 ? "cuda" : "cpu");
  cJSON *arr = cJSON_AddArrayToObject(o, "devices");
  for (int i = 0; i < count && i < 16; i++) {
    cJSON *e = cJSON_CreateObject();
    char cc[16];
    snprintf(cc, sizeof cc, "%d.%d", dev[i].cc_major, dev[i].cc_minor);
    cJSON_AddNumberToObject(e, "index", dev[i].index);
    cJSON_AddStringToObject(e, "name", dev[i].name);
    cJSON_AddStringToObject(e, "compute_capability", cc);
    cJSON_AddNumberToObject(e, "multiprocessors", dev[i].multiprocessors);
    cJSON_AddNumberToObject(e, "memory_total", (double)dev[i].memory_total);
    cJSON_AddNumberToObject(e, "memory_free", (double)dev[i].memory_free);
    cJSON_AddItemToArray(arr, e);
  }
  cJSON *cpu = cJSON_AddObjectToObject(o, "cpu");
  cJSON_AddNumberToObject(cpu, "threads", histd_cpu_count());
  if (count == 0)
    cJSON_AddStringToObject(o, "gpu_unavailable_reason",
                            why[0] ? why : "no usable GPU was found");
  respond_json(r, 200, o);
}

void route_healthz(request *r) {
  if (atomic_load(&r->svc->lost)) { /* the process is ending: a new one is needed */
    respond_problem(r, 503, "%s; the daemon is stopping so that a new process can use the GPU",
                    r->svc->lost_reason);
    return;
  }
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "status", "ok");
  cJSON_AddStringToObject(o, "version", HISTD_VERSION);
  respond_json(r, 200, o);
}

/* Why the daemon cannot take work now, into why; false when it can. */
static bool not_ready(service *svc, char *why, size_t len) {
  uint64_t counts[JOB_STATUS_COUNT];
  bool lost = atomic_load(&svc->lost);
  if (atomic_load(&svc->stopping))
    snprintf(why, len, "the daemon is shutting down%s%s", lost ? ": " : "",
             lost ? svc->lost_reason : "");
  else if (lost)
    snprintf(why, len, "%s; the daemon is stopping so that a new process can use the GPU",
             svc->lost_reason);
  else if (store_count_jobs(svc->store, counts) != 0)
    snprintf(why, len, "the database does not answer");
  else {
    struct statvfs vfs;
    uint64_t held = store_data_bytes(svc->store);
    if (statvfs(svc->cfg.data_dir, &vfs) == 0 &&
        (uint64_t)vfs.f_bavail * vfs.f_frsize < READY_MIN_FREE)
      snprintf(why, len, "the disk of the data dir %.512s is full (%llu bytes free)",
               svc->cfg.data_dir, (unsigned long long)vfs.f_bavail * vfs.f_frsize);
    else if (svc->cfg.max_data_bytes != 0 && held >= svc->cfg.max_data_bytes)
      snprintf(why, len, "the data dir holds %llu bytes, its budget is %zu (--max-data-bytes)",
               (unsigned long long)held, svc->cfg.max_data_bytes);
    else
      return false;
  }
  return true;
}

void route_readyz(request *r) {
  service *svc = r->svc;
  char why[1200];
  if (not_ready(svc, why, sizeof why)) {
    respond_problem(r, 503, "%s", why);
    response_add_header(r, "Retry-After", "5");
    return;
  }
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "status", "ready");
  cJSON_AddNumberToObject(o, "workers", jobs_worker_count(svc->jobs));
  cJSON_AddStringToObject(o, "engine", svc->gpu_count > 0 ? "cuda" : "cpu");
  cJSON_AddNumberToObject(o, "queue_depth", (double)jobs_queue_depth(svc->jobs));
  respond_json(r, 200, o);
}

void route_metrics(request *r) {
  size_t len = 0;
  char *text = metrics_render(r->svc, &len);
  if (text == NULL) {
    respond_problem(r, 500, "out of memory while writing metrics");
    return;
  }
  respond_text(r, 200, "text/plain; version=0.0.4; charset=utf-8", text, len);
}

static const char *content_type_for(const char *path) {
  static const struct {
    const char *ext, *type;
  } types[] = {
      {".html", "text/html; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"},
      {".mjs", "text/javascript; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      {".json", "application/json"},
      {".svg", "image/svg+xml"},
      {".png", "image/png"},
      {".ico", "image/x-icon"},
      {".txt", "text/plain; charset=utf-8"},
      {".map", "application/json"},
      {".woff2", "font/woff2"},
      {".yaml", "application/yaml"},
  };
  const char *dot = strrchr(path, '.');
  if (dot != NULL)
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
      if (strcasecmp(dot, types[i].ext) == 0)
        return types[i].type;
  return "application/octet-stream";
}

void route_static(request *r) {
  const char *path = r->url;
  const char *rel = strcmp(path, "/") == 0 ? "index.html" : path + 1;
  /* No "..", no hidden files, no backslashes, no empty segments. */
  if (strstr(rel, "..") != NULL || strstr(rel, "/.") != NULL || rel[0] == '.' ||
      strchr(rel, '\\') != NULL || strstr(rel, "//") != NULL || strlen(rel) > 512) {
    respond_problem(r, 404, "there is no file %s", path);
    return;
  }
  char full[4700];
  snprintf(full, sizeof full, "%s/%s", r->svc->cfg.static_dir, rel);
  int fd = open(full, O_RDONLY | O_CLOEXEC);
  struct stat sb;
  if (fd < 0 || fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    if (fd >= 0)
      close(fd);
    if (strcmp(path, "/") == 0)
      respond_problem(r, 404, "the dashboard is not installed (looked in %s; set --static-dir)",
                      r->svc->cfg.static_dir);
    else
      respond_problem(r, 404, "there is no route or file %s", path);
    return;
  }
  struct MHD_Response *resp = MHD_create_response_from_fd((size_t)sb.st_size, fd);
  if (resp == NULL) {
    close(fd);
    respond_problem(r, 500, "cannot send %s", path);
    return;
  }
  r->response = resp;
  r->status = 200;
  MHD_add_response_header(resp, "Content-Type", content_type_for(rel));
  MHD_add_response_header(resp, "Cache-Control", "no-cache");
  MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
}
