/*
 * routes_jobs.c -- /v1/jobs (submit, list, get, long-poll, cancel, result)
 * and /v1/histogram (one request, one histogram).
 *
 * Job parameters are checked strictly, in this order, so the client hears
 * about the first real problem: the body is JSON (400), an object (400),
 * with no unknown fields (400) and fields of the right types (400); the
 * dataset exists (404) and is intact (422); then the values make sense
 * (422: histd_spec_validate's sentences, the default bucket count fitting
 * the limit, a CUDA kernel only where there is a GPU). Only then is the job
 * stored and queued (202), or refused because the queue is full (503 with
 * Retry-After).
 *
 * Status codes: 400 = the request is malformed; 404 = a named thing does
 * not exist; 422 = well-formed but impossible values; 409 = the job is not
 * in a state for that (a result before it succeeded).
 *
 * Reading a finished job's whole result (GET of the job or of its result)
 * holds its blobs and the arrays they decode into: that memory is taken
 * from --max-buffered-bytes before the read (get_whole_job), as request
 * bodies and large answers are. Lists and ?summary=true read no blob and
 * leave out every array, an explicit edges list of the parameters too.
 *
 * "follow": true (beside the parameters) asks a job on a growing dataset
 * to keep its result current as frames are appended (jobs_local.c): the
 * job runs until the dataset is sealed, its result (GET
 * /v1/jobs/{id}/result, and the job document) the frames counted so far,
 * always a whole result of frames 0..k. Statistics whose frames do not
 * add up (follow.c) are refused with a sentence.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/random.h>

#include "histd/schema.h"
#include "backend.h"
#include "budget.h"
#include "defer.h"
#include "follow.h"
#include "http.h"
#include "jobs.h"
#include "json_util.h"
#include "routes.h"
#include "service.h"
#include "store.h"
#include "sync_pool.h"
#include "util.h"

/* ---- JSON shapes ---------------------------------------------------------------------- */

static void add_time(cJSON *o, const char *key, double t) {
  if (t <= 0) {
    cJSON_AddNullToObject(o, key);
    return;
  }
  char ts[40];
  format_rfc3339(t, ts, sizeof ts);
  cJSON_AddStringToObject(o, key, ts);
}

/* The parameters' JSON as the table writes it (histd/params.h), as the
 * store keeps it: malloc'd, or NULL when out of memory. */
static char *params_text(const histd_params *p, size_t *len) {
  char *text = NULL;
  FILE *f = open_memstream(&text, len);
  int rc = f ? histd_params_write_json(f, p) : HISTD_ENOMEM;
  if (f)
    fclose(f);
  if (rc != 0) {
    free(text);
    return NULL;
  }
  return text;
}

/* The parameters in a job document; without `arrays`, an explicit edges
 * list (up to 16 Mi numbers) is left out: the document's edges_count says
 * how long it is. */
static cJSON *params_to_json(const histd_params *p, bool arrays) {
  histd_params shown = *p; /* (shallow: nothing here is freed) */
  if (!arrays) {
    shown.edges = NULL;
    shown.edge_count = 0;
  }
  size_t len;
  char *text = params_text(&shown, &len);
  cJSON *o = text ? cJSON_CreateRaw(text) : NULL;
  free(text);
  return o ? o : cJSON_CreateObject();
}

/* Whether a result's documents are written to a file rather than memory
 * (and so held against --max-buffered-bytes): its cells, a per-frame
 * table's too. */
static bool large_result(const histd_result *res) {
  return histd_result_shown_values(res) > 65536;
}

/* The job document; with `summary`, without arrays: a succeeded job's
 * result without its edges and counts, its parameters without an explicit
 * edges list (lists, ?summary=true and the answers to POST and DELETE).
 * GET on one job adds the whole result (respond_job). */
/* Whether the job's document shows its result: a succeeded job's, or a
 * following job's latest while it runs. */
static bool shows_result(const job_record *j) {
  return j->has_result &&
         (j->status == JOB_SUCCEEDED ||
          (j->follow && (j->status == JOB_RUNNING || j->status == JOB_QUEUED)));
}

cJSON *job_to_json(const job_record *j, bool summary) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "id", j->id);
  cJSON_AddStringToObject(o, "status", job_status_name(j->status));
  cJSON_AddStringToObject(o, "dataset", j->dataset);
  cJSON_AddNumberToObject(o, "n", (double)j->n);
  if (j->dataset_b[0]) {
    cJSON_AddStringToObject(o, "dataset_b", j->dataset_b);
    cJSON_AddNumberToObject(o, "n_b", (double)j->n_b);
  }
  cJSON_AddItemToObject(o, "params", params_to_json(&j->params, !summary));
  if (summary && j->params.edges != NULL)
    cJSON_AddNumberToObject(o, "edges_count", j->params.edge_count);
  cJSON_AddNumberToObject(o, "progress", j->progress);
  if (j->follow)
    cJSON_AddBoolToObject(o, "follow", true);
  if (j->status == JOB_RUNNING && j->follow) { /* the frames its result counts, of those so far */
    cJSON *f = cJSON_AddObjectToObject(o, "frames");
    cJSON_AddNumberToObject(f, "done", j->has_result ? (double)j->result.frames : 0);
    cJSON_AddNumberToObject(f, "total", (double)j->frames);
  } else if (j->status == JOB_RUNNING && j->frames > 1) { /* a trajectory: the frames done */
    double done = j->progress * (double)j->frames;
    cJSON *f = cJSON_AddObjectToObject(o, "frames");
    cJSON_AddNumberToObject(f, "done", done < (double)j->frames ? (double)(size_t)done
                                                                : (double)j->frames);
    cJSON_AddNumberToObject(f, "total", (double)j->frames);
  }
  add_time(o, "created_at", j->created_at);
  add_time(o, "started_at", j->started_at);
  add_time(o, "finished_at", j->finished_at);
  cJSON *t = cJSON_AddObjectToObject(o, "timing_ms");
  cJSON_AddNumberToObject(t, "queue", j->timing.queue_ms);
  cJSON_AddNumberToObject(t, "parse", j->timing.parse_ms);
  cJSON_AddNumberToObject(t, "transfer", j->timing.transfer_ms);
  cJSON_AddNumberToObject(t, "kernel", j->timing.kernel_ms);
  cJSON_AddNumberToObject(t, "total", j->timing.total_ms);
  if (j->device[0])
    cJSON_AddStringToObject(o, "device", j->device);
  else
    cJSON_AddNullToObject(o, "device");
  if (j->error[0] && (j->status == JOB_FAILED || j->status == JOB_CANCELLED))
    cJSON_AddStringToObject(o, "error", j->error);
  if (j->result_deleted_at > 0)
    add_time(o, "result_deleted_at", j->result_deleted_at);
  if (summary && shows_result(j)) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    int rc = f ? histd_write_json(f, &j->result, HISTD_JSON_SUMMARY) : HISTD_ENOMEM;
    if (f)
      fclose(f);
    cJSON *res = rc == 0 && text ? cJSON_CreateRaw(text) : NULL;
    free(text);
    if (res)
      cJSON_AddItemToObject(o, "result", res);
  }
  return o;
}

/* GET /v1/jobs/{id}: the job document with its whole result, which is
 * streamed into the body after the other members (it may be large). The
 * `held` bytes of --max-buffered-bytes are given back once the result is
 * written out. */
/* A pair list's result reads its records from the job's file (the
 * writers stream them): *fd the file to close after writing, or -1. False
 * once answered (the file is missing: 500). */
static bool open_pairs(request *r, const char *job, histd_result *res, int *fd) {
  *fd = -1;
  if (histd_statistic_about(res->statistic)->answer != HISTD_ANSWER_PAIRS)
    return true;
  if ((*fd = store_pairs_open(r->svc->store, job)) < 0) {
    respond_problem(r, 500, "the pair list of job %s is missing from the data dir", job);
    return false;
  }
  res->pairs_fd = *fd;
  res->has_pairs_fd = true;
  return true;
}

static void respond_job(request *r, const job_record *j, uint64_t held) {
  if (!shows_result(j)) {
    budget_give(&r->svc->buffered, held);
    respond_json(r, 200, job_to_json(j, false)); /* no result to add */
    return;
  }
  histd_result res = j->result; /* (shallow: its pair list's file set) */
  int fd;
  if (!open_pairs(r, j->id, &res, &fd)) {
    budget_give(&r->svc->buffered, held);
    return;
  }
  cJSON *o = job_to_json(j, false);
  char *head = o ? cJSON_PrintUnformatted(o) : NULL;
  cJSON_Delete(o);
  body_writer b;
  if (head == NULL || !body_open(&b, r->svc, large_result(&j->result))) {
    free(head);
    if (fd >= 0)
      close(fd);
    budget_give(&r->svc->buffered, held);
    respond_problem(r, 503, "out of memory while writing the job; try again shortly");
    return;
  }
  fwrite(head, 1, strlen(head) - 1, b.f); /* all but the closing brace */
  fputs(",\"result\":", b.f);
  int rc = histd_write_json(b.f, &res, 0);
  if (fd >= 0)
    close(fd);
  fputc('}', b.f);
  free(head);
  budget_give(&r->svc->buffered, held); /* the answer's file takes its own */
  respond_body(r, 200, "application/json", &b, rc);
}

/* ---- parameters ---------------------------------------------------------------------- */

/* The fields a route accepts beyond the parameters, for the sentence that
 * lists them. */
static void list_fields(char *buf, size_t len, const char *const *extra) {
  size_t used = 0;
  buf[0] = '\0';
  for (const char *const *k = extra; *k && used < len; k++)
    used += (size_t)snprintf(buf + used, len - used, "%s, ", *k);
  for (size_t i = 0; i < histd_param_count() && used < len; i++)
    used += (size_t)snprintf(buf + used, len - used, "%s%s", histd_param_at(i)->name,
                             i + 1 < histd_param_count() ? ", " : "");
}

/* Reads the parameters in o through the table (histd/params.h): an unknown
 * member or a value of the wrong JSON type answers 400, a value the
 * parameter refuses 422. extra: the other members the route accepts. */
static bool parse_params(request *r, const cJSON *o, const char *const *extra,
                         histd_params *p) {
  histd_params_init(p);
  if (!cJSON_IsObject(o)) {
    respond_problem(r, 400, "the body must be a JSON object");
    return false;
  }
  for (const cJSON *f = o->child; f != NULL; f = f->next) {
    bool ok = false;
    for (const char *const *k = extra; *k && !ok; k++)
      ok = strcmp(f->string, *k) == 0;
    if (ok)
      continue;
    const histd_param *row = histd_param_find(f->string);
    if (row == NULL) {
      char fields[1024];
      list_fields(fields, sizeof fields, extra);
      respond_problem(r, 400, "unknown field \"%.64s\"; the fields are %s", f->string, fields);
      goto fail;
    }
    histd_value v;
    double *numbers;
    const char *want = param_value_from_json(row, f, &v, &numbers);
    if (want != NULL) {
      free(numbers);
      respond_problem(r, 400, "%s must be %s", row->name, want);
      goto fail;
    }
    char msg[256];
    int rc = histd_param_set(p, row, &v, msg, sizeof msg);
    free(numbers);
    if (rc != 0) {
      respond_problem(r, rc == HISTD_ENOMEM ? 503 : 422, "%s", msg);
      goto fail;
    }
  }
  for (int g = 0; g < 64; g++) {
    if (!(p->exec.devices & (UINT64_C(1) << g)))
      continue;
    bool present = false;
    for (int i = 0; i < r->svc->gpu_count; i++)
      present |= r->svc->gpus[i].index == g;
    if (present)
      continue;
    if (r->svc->gpu_count == 0)
      respond_problem(r, 422, "devices names GPU %d, but this daemon has no GPU: %s", g,
                      r->svc->gpu_reason);
    else
      respond_problem(r, 422, "devices names GPU %d, which this daemon does not have "
                              "(see GET /v1/devices)", g);
    goto fail;
  }
  char msg[256];
  if (histd_exec_validate(&p->exec, NULL, msg, sizeof msg) != 0) {
    respond_problem(r, 422, "%s", msg);
    goto fail;
  }
  const histd_kernel *kern = histd_kernel_find(p->exec.kernel);
  if (kern != NULL && kern->engine == HISTD_ENGINE_CUDA && r->svc->gpu_count == 0) {
    respond_problem(r, 422, "kernel \"%s\" needs a GPU, and this daemon has none (%s); use "
                            "\"cpu\", \"cpu-reference\" or \"auto\"",
                    p->exec.kernel, r->svc->gpu_reason);
    goto fail;
  }
  return true;
fail:
  histd_params_free(p);
  return false;
}

static void new_job_id(char id[33]) {
  unsigned char raw[16];
  if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw) {
    double t = histd_now_ms();
    memcpy(raw, &t, sizeof t);
    uintptr_t addr = (uintptr_t)id;
    memcpy(raw + 8, &addr, sizeof addr < 8 ? sizeof addr : 8);
  }
  static const char digits[] = "0123456789abcdef";
  for (int i = 0; i < 16; i++) {
    id[2 * i] = digits[raw[i] >> 4];
    id[2 * i + 1] = digits[raw[i] & 15];
  }
  id[32] = '\0';
}

/* A handler's step that waits on the disk (a row's fsync), on a defer.c
 * thread: true when the connection is suspended (the handler runs again
 * with r->resumed and its ctx in r->deferred); false when the pool is
 * stopping and the step ran here and now. */
static bool defer_step(request *r, void (*step)(void *ctx), void *ctx) {
  if (defer_submit(r->svc->defer, r->conn, step, ctx)) {
    r->deferred = ctx;
    r->suspended = true;
    return true;
  }
  step(ctx);
  return false;
}

static cJSON *parse_body(request *r) {
  cJSON *o = NULL;
  char msg[256];
  int rc = json_body_parse(r->body, r->body_len, &o, msg, sizeof msg);
  if (rc != 0) {
    respond_problem(r, rc == HISTD_ENOMEM ? 503 : 400, "%s", msg);
    return NULL;
  }
  return o;
}

/* ---- POST /v1/jobs ----------------------------------------------------------------------- */

/* What POST /v1/jobs decides once its body is parsed; filled by create_job
 * on a defer.c thread (it waits for the row's fsync), answered by
 * answer_create on the HTTP thread. */
typedef struct create_ctx {
  service *svc;
  job_record j;
  char id_a[80], id_b[80]; /* as the client sent them ("" for no B) */
  unsigned status;         /* 202, or the problem's status */
  char msg[512];
} create_ctx;

/* Looks a dataset up for a job (under datasets_lock): 404 when it does not
 * exist, 422 when its payload is damaged. */
static bool job_dataset(create_ctx *c, const char *field, const char *id, dataset_meta *m) {
  if (strlen(id) != 64 || backend_dataset_find(&c->svc->backend, id, m) != 0) {
    c->status = 404;
    snprintf(c->msg, sizeof c->msg,
             "no dataset has the id \"%.80s\" (%s; upload it with POST /v1/datasets)", id, field);
    return false;
  }
  if (m->error[0] != '\0') {
    c->status = 422;
    snprintf(c->msg, sizeof c->msg, "dataset %s cannot be used: %s; upload it again", m->id,
             m->error);
    return false;
  }
  return true;
}

/* Whether the job may follow its dataset (A; B when cross): a growing
 * dataset, and a statistic whose frames add up (follow.c); else c says
 * why (422, or 501 in cluster mode). */
static bool follow_allowed(create_ctx *c, const dataset_meta *m, const dataset_meta *mb) {
  const job_record *j = &c->j;
  c->status = 422;
  if (c->svc->cfg.coordinator[0] != '\0') {
    c->status = 501;
    snprintf(c->msg, sizeof c->msg, "follow is not available in cluster mode (--coordinator) "
                                    "yet: submit the job once the trajectory is uploaded");
    return false;
  }
  if (!m->growing) {
    snprintf(c->msg, sizeof c->msg,
             "follow keeps a result current as frames are appended, and dataset %s takes no "
             "frames: upload it with POST /v1/datasets?growing=true, or submit without follow",
             m->id);
    return false;
  }
  if (mb != NULL && mb->growing && !mb->sealed) {
    snprintf(c->msg, sizeof c->msg,
             "follow adds frames of the dataset as they arrive, and dataset_b %s grows too: "
             "seal it first (POST /v1/datasets/{id}/seal)", mb->id);
    return false;
  }
  const char *why = follow_refusal(&j->params, histd_params_statistic(&j->params), mb != NULL,
                                   mb != NULL ? mb->frames : 0);
  if (why != NULL) {
    snprintf(c->msg, sizeof c->msg, "%s", why);
    return false;
  }
  return true;
}

/* A job whose result could take more than --max-result-bytes stored is
 * refused (422) before it runs: the bound is result_codec.c's, from the
 * bins, the frames and the pairs of the datasets' shape (the whole sets,
 * before selections and exclusions take some away; frames of equal
 * shares, the one guess: a job whose frames differ more than that and
 * whose result then passes the limit fails with the store's sentence). */
static int check_result_size(service *svc, const histd_job_plan *plan, const job_record *j,
                             char *msg, size_t msglen) {
  const uint64_t cap = svc->cfg.max_result_bytes;
  const histd_answer answer = histd_statistic_about(plan->statistic)->answer;
  if (answer == HISTD_ANSWER_POINTS) { /* its rows: 10 bytes a value at most */
    const uint64_t bound = plan->result_bytes / 8 * 10 + 1024;
    if (cap == 0 || bound <= cap)
      return 0;
    if (histd_statistic_about(plan->statistic)->binned)
      return histd_fail(msg, msglen, HISTD_EINVAL,
                        "the per-point histogram could take up to %llu bytes stored (%zu "
                        "points x %u bins), more than the %llu bytes a result may take "
                        "(--max-result-bytes); select fewer points or give fewer bins",
                        (unsigned long long)bound, j->n / (plan->frames ? plan->frames : 1),
                        plan->buckets, (unsigned long long)cap);
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "the per-point result could take up to %llu bytes stored (%llu frame%s of "
                      "%zu points), more than the %llu bytes a result may take "
                      "(--max-result-bytes); select fewer points or frames",
                      (unsigned long long)bound, (unsigned long long)plan->frames,
                      plan->frames == 1 ? "" : "s", j->n / (plan->frames ? plan->frames : 1),
                      (unsigned long long)cap);
  }
  if (answer == HISTD_ANSWER_PAIRS) /* a file, capped as it runs */
    return 0;
  const uint32_t buckets = plan->statistic == HISTD_STAT_WITHIN ? 1 : plan->buckets;
  const uint64_t frames = plan->frames;
  const uint64_t bound = histd_result_stored_bound(buckets, frames, plan->pairs,
                                                   j->params.weights, j->params.per_frame);
  if (cap == 0 || bound <= cap)
    return 0;
  return histd_fail(msg, msglen, HISTD_EINVAL,
                    "the result could take up to %llu bytes stored (%u bins%s%s, %llu frame%s), "
                    "more than the %llu bytes a result may take (--max-result-bytes); ask for "
                    "fewer bins%s",
                    (unsigned long long)bound, buckets, j->params.weights ? ", weighted" : "",
                    j->params.per_frame ? ", per frame" : "", (unsigned long long)frames,
                    frames == 1 ? "" : "s", (unsigned long long)cap,
                    j->params.per_frame ? " or frames" : "");
}

static void create_job(void *arg) {
  create_ctx *c = arg;
  service *svc = c->svc;
  job_record *j = &c->j;
  c->status = 500;
  pthread_rwlock_rdlock(&svc->datasets_lock);
  dataset_meta m, mb;
  const bool cross = c->id_b[0] != '\0';
  if (!job_dataset(c, "dataset", c->id_a, &m) || (cross && !job_dataset(c, "dataset_b", c->id_b, &mb))) {
    pthread_rwlock_unlock(&svc->datasets_lock);
    return;
  }
  dataset_meta mt; /* topology: the atoms of the dataset are another's */
  const bool named = j->params.topology[0] != '\0';
  if (named && !job_dataset(c, "topology", j->params.topology, &mt)) {
    pthread_rwlock_unlock(&svc->datasets_lock);
    return;
  }
  if (j->follow && !follow_allowed(c, &m, cross ? &mb : NULL)) {
    pthread_rwlock_unlock(&svc->datasets_lock);
    return;
  }
  j->n = m.n;
  j->n_b = cross ? mb.n : j->params.select_b[0] ? m.n : 0; /* the run tells the selections' */
  /* the job against the datasets' shapes (the job layer): validated, and
   * equal-width bins counted now, so the job says how many it has */
  histd_shape sa, sb, st;
  dataset_shape(&m, &sa);
  if (j->follow && sa.frames < j->params.blocks) /* blocks come once there are frames enough */
    sa.frames = j->params.blocks;
  if (cross)
    dataset_shape(&mb, &sb);
  if (named)
    dataset_shape(&mt, &st);
  histd_job_plan plan;
  char msg[256];
  int rc = histd_job_check(&j->params, &sa, cross ? &sb : NULL, named ? &st : NULL, &plan, msg,
                           sizeof msg);
  if (rc == 0) {
    if (plan.counted)
      j->params.buckets = plan.buckets;
    rc = check_result_size(svc, &plan, j, msg, sizeof msg);
  }
  if (rc != 0) {
    pthread_rwlock_unlock(&svc->datasets_lock);
    c->status = rc == HISTD_EPARSE ? 400 : 422;
    snprintf(c->msg, sizeof c->msg, "%s", msg);
    return;
  }
  uint64_t held = store_data_bytes(svc->store);
  size_t row = 0;
  char *text = params_text(&j->params, &row);
  free(text);
  if (svc->cfg.max_data_bytes != 0 && held >= svc->cfg.max_data_bytes) {
    pthread_rwlock_unlock(&svc->datasets_lock);
    c->status = 507;
    snprintf(c->msg, sizeof c->msg,
             "the data dir holds %llu bytes, its budget is %zu (--max-data-bytes): there is "
             "no room for another result; delete datasets or wait for old jobs to expire",
             (unsigned long long)held, svc->cfg.max_data_bytes);
    return;
  }
  if (store_room(svc->store, "the job's parameters", row, msg, sizeof msg) != 0) {
    pthread_rwlock_unlock(&svc->datasets_lock);
    c->status = 507;
    snprintf(c->msg, sizeof c->msg, "%s", msg);
    return;
  }
  new_job_id(j->id);
  j->created_at = wall_now();
  j->status = JOB_QUEUED;
  rc = jobs_submit(svc->jobs, j, msg, sizeof msg);
  pthread_rwlock_unlock(&svc->datasets_lock);
  if (rc == HISTD_ETOOBIG) {
    c->status = 503;
    snprintf(c->msg, sizeof c->msg, "%s", msg);
  } else if (rc != 0) {
    snprintf(c->msg, sizeof c->msg, "the job could not be stored: %s", msg);
  } else {
    c->status = 202;
  }
}

static void answer_create(request *r, create_ctx *c) {
  if (c->status != 202) {
    respond_problem(r, c->status, "%s", c->msg);
    if (c->status == 503)
      response_add_header(r, "Retry-After", "5");
    return;
  }
  respond_json(r, 202, job_to_json(&c->j, true));
  char loc[64];
  snprintf(loc, sizeof loc, "/v1/jobs/%s", c->j.id);
  response_add_header(r, "Location", loc);
}

static void create_free(create_ctx *c) {
  job_record_free(&c->j);
  free(c);
}

void route_jobs_create(request *r) {
  service *svc = r->svc;
  if (r->resumed && r->deferred != NULL) {
    create_ctx *c = r->deferred;
    r->deferred = NULL;
    answer_create(r, c);
    create_free(c);
    return;
  }
  cJSON *o = parse_body(r);
  if (o == NULL)
    return;
  create_ctx *c = calloc(1, sizeof *c);
  if (c == NULL) {
    cJSON_Delete(o);
    respond_problem(r, 503, "out of memory; try again shortly");
    return;
  }
  static const char *const extra[] = {"dataset", "dataset_b", "follow", NULL};
  if (!parse_params(r, o, extra, &c->j.params)) {
    cJSON_Delete(o);
    free(c);
    return;
  }
  const cJSON *fo = cJSON_GetObjectItemCaseSensitive(o, "follow");
  if (fo != NULL && !cJSON_IsBool(fo)) {
    respond_problem(r, 400, "follow must be true or false");
    cJSON_Delete(o);
    create_free(c);
    return;
  }
  c->j.follow = cJSON_IsTrue(fo);
  const cJSON *ds = cJSON_GetObjectItemCaseSensitive(o, "dataset");
  const cJSON *ds_b = cJSON_GetObjectItemCaseSensitive(o, "dataset_b");
  if (ds == NULL || !cJSON_IsString(ds) || (ds_b != NULL && !cJSON_IsString(ds_b))) {
    respond_problem(r, 400, ds == NULL          ? "dataset is required: the id POST /v1/datasets returned"
                            : !cJSON_IsString(ds) ? "dataset must be a string: a dataset id"
                                                  : "dataset_b must be a string: a dataset id");
    cJSON_Delete(o);
    create_free(c);
    return;
  }
  c->svc = svc;
  snprintf(c->id_a, sizeof c->id_a, "%.79s", ds->valuestring);
  if (ds_b != NULL)
    snprintf(c->id_b, sizeof c->id_b, "%.79s", ds_b->valuestring);
  snprintf(c->j.dataset, sizeof c->j.dataset, "%.64s", c->id_a);
  snprintf(c->j.dataset_b, sizeof c->j.dataset_b, "%.64s", c->id_b);
  cJSON_Delete(o);
  if (defer_step(r, create_job, c))
    return;
  answer_create(r, c);
  create_free(c);
}

/* ---- GET /v1/jobs ----------------------------------------------------------------------- */

typedef struct list_ctx {
  cJSON *arr;
  jobs *jobs;
} list_ctx;

static bool add_job(const job_record *rec, void *u) {
  list_ctx *c = u;
  if (rec->status == JOB_QUEUED || rec->status == JOB_RUNNING) {
    job_record live; /* the store does not see progress: ask the queue */
    if (jobs_get(c->jobs, rec->id, &live, false) == 0) {
      cJSON_AddItemToArray(c->arr, job_to_json(&live, true));
      job_record_free(&live);
      return true;
    }
  }
  cJSON_AddItemToArray(c->arr, job_to_json(rec, true));
  return true;
}

void route_jobs_list(request *r) {
  const char *l = request_query(r, "limit");
  size_t limit = 100;
  if (l != NULL) {
    char *end;
    long v = strtol(l, &end, 10);
    if (end == l || *end != '\0' || v < 1 || v > 10000) {
      respond_problem(r, 400, "limit must be a whole number from 1 to 10000, got \"%s\"", l);
      return;
    }
    limit = (size_t)v;
  }
  cJSON *o = cJSON_CreateObject();
  list_ctx c = {cJSON_AddArrayToObject(o, "jobs"), r->svc->jobs};
  if (jobs_list(r->svc->jobs, limit, add_job, &c) != 0) {
    cJSON_Delete(o);
    respond_problem(r, 500, "the jobs could not be listed");
    return;
  }
  respond_json(r, 200, o);
}

/* What reading a finished job's whole result holds in memory: its blobs,
 * as SQLite reads them, and the arrays they decode into. */
static uint64_t result_memory(const job_record *j) {
  if (!j->has_result)
    return 0;
  return j->stored_bytes + 8 * histd_result_kept_values(&j->result);
}

static bool get_job(request *r, job_record *j, bool arrays);

/* The job named in the path with its whole result, or false once
 * answered. The memory the read holds (result_memory, from a summary
 * read first) is taken from --max-buffered-bytes, like request bodies and
 * large answers: while others hold it, 503 with Retry-After (one read
 * larger than all of it still goes, alone). *held: what was taken, for
 * the caller to give back. */
static bool get_whole_job(request *r, job_record *j, uint64_t *held) {
  *held = 0;
  if (!get_job(r, j, false))
    return false;
  const uint64_t need = result_memory(j);
  if (need == 0)
    return true; /* nothing more to read */
  job_record_free(j);
  budget *bud = &r->svc->buffered;
  if (!budget_take_or_alone(bud, need)) {
    respond_problem(r, 503, "reading job %s's result takes %llu bytes of memory, and other "
                            "requests hold the daemon's limit of %llu bytes "
                            "(--max-buffered-bytes); try again shortly",
                    r->path_id, (unsigned long long)need, (unsigned long long)bud->limit);
    response_add_header(r, "Retry-After", "5");
    return false;
  }
  if (!get_job(r, j, true)) {
    budget_give(bud, need);
    return false;
  }
  *held = need;
  return true;
}

/* The job named in the path (with its result's arrays, or a summary), or
 * false once answered: 404 when there is no such job, 500 when the
 * database cannot be read or the job's stored result cannot be decoded
 * (never a result of zeros). */
static bool get_job(request *r, job_record *j, bool arrays) {
  memset(j, 0, sizeof *j);
  int rc = jobs_get(r->svc->jobs, r->path_id, j, arrays);
  if (rc == 0)
    return true;
  if (rc == HISTD_ENOENT)
    respond_problem(r, 404, "no job has the id \"%s\"", r->path_id);
  else if (j->id[0] != '\0' && j->error[0] != '\0')
    respond_problem(r, 500, "job %s cannot be served: %s", r->path_id, j->error);
  else
    respond_problem(r, 500, "job %s could not be read from the database", r->path_id);
  job_record_free(j);
  return false;
}

/* ---- GET / DELETE /v1/jobs/{id} ----------------------------------------------------------- */

void route_jobs_get(request *r) {
  service *svc = r->svc;
  /* ?summary=true: the result without its arrays (a client that fetches
   * them from /result, as an .npz, polls without the whole JSON) */
  const char *sm = request_query(r, "summary");
  if (sm != NULL && strcmp(sm, "true") != 0 && strcmp(sm, "false") != 0) {
    respond_problem(r, 400, "summary must be \"true\" or \"false\", got \"%s\"", sm);
    return;
  }
  if (!r->resumed) {
    const char *w = request_query(r, "wait");
    if (w != NULL) {
      char *end;
      double secs = strtod(w, &end);
      if (end == w || *end != '\0' || !(secs >= 0) || !isfinite(secs)) {
        respond_problem(r, 400, "wait must be a number of seconds from 0 to %d, got \"%s\"",
                        svc->cfg.max_wait, w);
        return;
      }
      if (secs > svc->cfg.max_wait)
        secs = svc->cfg.max_wait;
      if (secs > 0 &&
          jobs_wait(svc->jobs, r->path_id, r->conn, histd_now_ms() + secs * 1000.0)) {
        r->suspended = true; /* jobs.c resumes us; we run again with r->resumed */
        return;
      }
    }
  }
  const bool summary = sm != NULL && strcmp(sm, "true") == 0;
  job_record j;
  uint64_t held = 0;
  if (summary ? !get_job(r, &j, false) : !get_whole_job(r, &j, &held))
    return;
  if (summary)
    respond_json(r, 200, job_to_json(&j, true));
  else
    respond_job(r, &j, held);
  job_record_free(&j);
}

/* A DELETE's step on the job in the path (a cancellation, or a result's
 * deletion), which waits for its row's fsync on a defer.c thread. */
typedef struct job_step {
  service *svc;
  char id[128];
  job_record j;
  int rc;
  unsigned status;
  char msg[512];
} job_step;

/* The step for the job in the path, or NULL once answered (503). */
static job_step *job_step_new(request *r) {
  job_step *c = calloc(1, sizeof *c);
  if (c == NULL) {
    respond_problem(r, 503, "out of memory; try again shortly");
    return NULL;
  }
  c->svc = r->svc;
  snprintf(c->id, sizeof c->id, "%s", r->path_id);
  return c;
}

static void cancel_job(void *arg) {
  job_step *c = arg;
  c->rc = jobs_cancel(c->svc->jobs, c->id, &c->j, c->msg, sizeof c->msg);
}

static void answer_cancel(request *r, job_step *c);

void route_jobs_delete(request *r) {
  job_step *c = r->deferred;
  if (!(r->resumed && c != NULL) &&
      ((c = job_step_new(r)) == NULL || defer_step(r, cancel_job, c)))
    return;
  r->deferred = NULL;
  answer_cancel(r, c);
  free(c);
}

static void answer_cancel(request *r, job_step *c) {
  job_record j = c->j;
  char *msg = c->msg;
  int rc = c->rc;
  if (rc == HISTD_ENOENT) {
    respond_problem(r, 404, "no job has the id \"%s\"", r->path_id);
    return;
  }
  if (rc < 0) {
    respond_problem(r, 500, "the cancellation could not be recorded, so the job is still "
                            "queued: %s", msg[0] ? msg : histd_strerror(rc));
    return;
  }
  /* 202: a running job was asked to stop (it stops within a second);
   * 200: it was queued and is cancelled, or had already ended. */
  respond_json(r, rc == 1 ? 202 : 200, job_to_json(&j, true));
  job_record_free(&j);
}

/* ---- GET /v1/jobs/{id}/result -------------------------------------------------------------- */

/* How the client wants a result. */
enum { RESULT_JSON, RESULT_CSV, RESULT_NPZ };
static const char *const format_names[] = {"json", "csv", "npz"};

/* The format a ?format= or an Accept header asks for: ?format= wins; else
 * negotiate() weighs Accept (JSON when it says nothing). -1 when answered
 * 400 (a bad ?format=) or 406 (Accept takes none of the three). */
static int result_format(request *r) {
  static const char *const types[] = {"application/json", "text/csv", "application/x-npz"};
  const char *f = request_query(r, "format");
  if (f != NULL) {
    for (int k = 0; k < 3; k++)
      if (strcmp(f, format_names[k]) == 0)
        return k;
    respond_problem(r, 400, "format must be \"json\", \"csv\" or \"npz\", got \"%s\"", f);
    return -1;
  }
  return negotiate(r, types, 3);
}

/* A result as JSON, CSV or NPZ (the last two downloads named after
 * `name`); the `held` bytes of --max-buffered-bytes are given back once it
 * is written out. */
static void respond_result(request *r, const histd_result *res, int format, const char *name,
                           uint64_t held) {
  body_writer b;
  if (!body_open(&b, r->svc, large_result(res))) {
    budget_give(&r->svc->buffered, held);
    respond_problem(r, 503, "out of memory while writing the result; try again shortly");
    return;
  }
  static const char *const types[] = {"application/json", "text/csv; charset=utf-8",
                                      "application/x-npz"};
  int rc = format == RESULT_JSON  ? histd_write_json(b.f, res, 0)
           : format == RESULT_CSV ? histd_write_csv(b.f, res)
                                  : histd_write_npz(b.f, res);
  budget_give(&r->svc->buffered, held); /* the answer's file takes its own */
  respond_body(r, 200, types[format], &b, rc);
  if (format == RESULT_JSON || r->status != 200)
    return;
  char disp[128];
  snprintf(disp, sizeof disp, "attachment; filename=\"histd-%s.%s\"", name, format_names[format]);
  response_add_header(r, "Content-Disposition", disp);
}

void route_jobs_result(request *r) {
  int format = result_format(r);
  if (format < 0)
    return;
  job_record j;
  uint64_t held;
  if (!get_whole_job(r, &j, &held))
    return;
  if (j.result_deleted_at > 0) {
    char at[40];
    format_rfc3339(j.result_deleted_at, at, sizeof at);
    budget_give(&r->svc->buffered, held);
    respond_problem(r, 410, "job %s's result was deleted at %s (DELETE /v1/jobs/{id}/result)",
                    j.id, at);
    job_record_free(&j);
    return;
  }
  if (!shows_result(&j)) {
    budget_give(&r->svc->buffered, held);
    respond_problem(r, 409, "job %s is %s, so it has no result%s%s", j.id,
                    job_status_name(j.status),
                    j.status == JOB_FAILED || j.status == JOB_CANCELLED ? ": " : "",
                    j.status == JOB_FAILED || j.status == JOB_CANCELLED ? j.error : "");
    job_record_free(&j);
    return;
  }
  int fd;
  if (open_pairs(r, j.id, &j.result, &fd))
    respond_result(r, &j.result, format, j.id, held);
  else
    budget_give(&r->svc->buffered, held);
  if (fd >= 0)
    close(fd);
  job_record_free(&j);
}

/* ---- DELETE /v1/jobs/{id}/result ----------------------------------------------------------- */

static void forget_result(void *arg) {
  job_step *c = arg;
  c->status = 500;
  int rc = jobs_get(c->svc->jobs, c->id, &c->j, false);
  const job_record *j = &c->j;
  if (rc == HISTD_ENOENT) {
    c->status = 404;
    snprintf(c->msg, sizeof c->msg, "no job has the id \"%.64s\"", c->id);
  } else if (rc != 0) {
    snprintf(c->msg, sizeof c->msg, "job %.64s could not be read from the database", c->id);
  } else if (j->result_deleted_at > 0) {
    char at[40];
    format_rfc3339(j->result_deleted_at, at, sizeof at);
    c->status = 410;
    snprintf(c->msg, sizeof c->msg, "job %s's result was deleted already, at %s", j->id, at);
  } else if (j->status != JOB_SUCCEEDED || !j->has_result) {
    c->status = 409;
    snprintf(c->msg, sizeof c->msg, "job %s is %s, so it has no result to delete%s", j->id,
             job_status_name(j->status),
             j->status == JOB_QUEUED || j->status == JOB_RUNNING
                 ? " (DELETE /v1/jobs/{id} cancels it)"
                 : "");
  } else if ((rc = jobs_delete_result(c->svc->jobs, j->id, wall_now(), c->msg,
                                      sizeof c->msg)) == 0) {
    c->status = 204;
  } else if (rc == HISTD_ENOENT) { /* expired or deleted meanwhile */
    c->status = 410;
    snprintf(c->msg, sizeof c->msg, "job %s's result is gone already", j->id);
  }
}

void route_jobs_result_delete(request *r) {
  job_step *c = r->deferred;
  if (!(r->resumed && c != NULL)) {
    if (!jobs_deletes_results(r->svc->jobs)) {
      respond_problem(r, 501, "deleting a result is not available in cluster mode "
                              "(--coordinator) yet; --job-retention expires old jobs");
      return;
    }
    if ((c = job_step_new(r)) == NULL || defer_step(r, forget_result, c))
      return;
  }
  r->deferred = NULL;
  if (c->status == 204)
    respond_empty(r, 204);
  else
    respond_problem(r, c->status, "%s", c->msg);
  job_record_free(&c->j);
  free(c);
}

/* ---- POST /v1/histogram ------------------------------------------------------------------ */

/*
 * The body's points go to the io layer's JSON parser, the same code (and the
 * same sentences) as an uploaded JSON dataset, without a cJSON node per
 * number; the other members go to cJSON with the point values blanked out.
 * Fills *o and ds and returns true, or answers with a problem and returns
 * false.
 */
static bool split_points(request *r, cJSON **o, histd_dataset *ds) {
  json_span spans[16];
  size_t count;
  if (r->body == NULL || r->body_len == 0 ||
      json_object_spans(r->body, r->body_len, spans, 16, &count) != 0) {
    cJSON *whole = parse_body(r); /* words a syntax error precisely */
    if (whole != NULL) {
      cJSON_Delete(whole);
      respond_problem(r, 400, "the body must be a JSON object: points (or x, y and z) and "
                              "the histogram's parameters");
    }
    return false;
  }
  const json_span *pt[5] = {NULL, NULL, NULL, NULL, NULL};
  static const char *const names[5] = {"points", "x", "y", "z", "w"}; /* w: the weights */
  for (size_t i = 0; i < count; i++)
    for (int k = 0; k < 5; k++)
      if (json_span_key_is(&spans[i], names[k])) {
        if (pt[k] != NULL) {
          respond_problem(r, 400, "the body names \"%s\" twice", names[k]);
          return false;
        }
        pt[k] = &spans[i];
      }
  bool soa = pt[1] || pt[2] || pt[3];
  if (pt[0] != NULL && soa) {
    respond_problem(r, 400, "give either points or x, y and z, not both");
    return false;
  }
  if (pt[0] == NULL && !soa) {
    respond_problem(r, 400, "the body needs points ([[x, y, z], ...]) or x, y and z arrays");
    return false;
  }
  /* The points, alone, in the io layer's JSON shape. */
  size_t cap = 64;
  for (int k = 0; k < 5; k++)
    cap += pt[k] ? pt[k]->value_len : 0;
  char *doc = malloc(cap);
  if (doc == NULL) {
    respond_problem(r, 503, "out of memory; try again shortly");
    return false;
  }
  size_t len = 0;
  doc[len++] = '{';
  for (int k = 0; k < 5; k++) {
    if (pt[k] == NULL)
      continue;
    len += (size_t)sprintf(doc + len, "%s\"%s\":", len > 1 ? "," : "", names[k]);
    memcpy(doc + len, pt[k]->value, pt[k]->value_len);
    len += pt[k]->value_len;
  }
  doc[len++] = '}';
  char msg[512];
  int rc = histd_parse(HISTD_FORMAT_JSON, doc, len, r->svc->cfg.max_sync_points, ds, msg,
                       sizeof msg);
  free(doc);
  if (rc == HISTD_ETOOBIG) {
    respond_problem(r, 413, "POST /v1/histogram takes at most %zu points (--max-sync-points); "
                            "upload them with POST /v1/datasets and submit a job",
                    r->svc->cfg.max_sync_points);
    return false;
  }
  if (rc != 0) {
    respond_problem(r, 400, "%s", msg);
    return false;
  }
  /* The parameters: the body with the point values blanked to 0. */
  for (int k = 0; k < 5; k++)
    if (pt[k] != NULL) {
      char *v = r->body + (pt[k]->value - r->body);
      v[0] = '0';
      memset(v + 1, ' ', pt[k]->value_len - 1);
    }
  *o = parse_body(r);
  if (*o == NULL) {
    histd_dataset_free(ds);
    return false;
  }
  return true;
}

static void histogram_answer(request *r);

void route_histogram(request *r) {
  service *svc = r->svc;
  if (r->resumed && r->sync_task != NULL) {
    histogram_answer(r);
    return;
  }
  if (result_format(r) < 0)
    return;
  double t0 = histd_now_ms();
  static const char *const extra[] = {"points", "x", "y", "z", "w", NULL};
  histd_params pp;
  histd_dataset ds;
  memset(&ds, 0, sizeof ds);
  cJSON *o = NULL;
  if (!split_points(r, &o, &ds))
    return;
  bool ok = parse_params(r, o, extra, &pp);
  cJSON_Delete(o);
  if (ok && pp.topology[0] != '\0') {
    respond_problem(r, 400, "topology names a stored dataset's atoms, and the points of "
                            "/v1/histogram are not stored: upload both with POST /v1/datasets "
                            "and submit a job");
    histd_params_free(&pp);
    ok = false;
  } else if (ok && pp.has_pairs_within) {
    respond_problem(r, 400, "pairs_within makes a pair list, which is written to the data dir "
                            "as it is found: submit it as a job (POST /v1/jobs) and read it "
                            "from GET /v1/jobs/{id}/result");
    histd_params_free(&pp);
    ok = false;
  }
  if (!ok) {
    histd_dataset_free(&ds);
    return;
  }
  sync_task *t = calloc(1, sizeof *t);
  if (t == NULL) {
    histd_dataset_free(&ds);
    histd_params_free(&pp);
    respond_problem(r, 503, "out of memory; try again shortly");
    return;
  }
  t->conn = r->conn;
  t->ds = ds;
  t->params = pp;
  if (t->params.exec.threads == 0)
    t->params.exec.threads = 1; /* concurrency comes from concurrent requests */
  t->parse_ms = histd_now_ms() - t0;
  r->sync_task = t;
  if (sync_pool_submit(svc->sync, t) != 0) {
    r->sync_task = NULL;
    sync_task_free(t);
    respond_problem(r, 503, "too many histograms are waiting to be computed; try again shortly");
    response_add_header(r, "Retry-After", "1");
    return;
  }
  r->suspended = true; /* a pool thread computes it and resumes us */
}

/* The second call, once the pool is done: answer. */
static void histogram_answer(request *r) {
  sync_task *t = r->sync_task;
  r->sync_task = NULL;
  if (t->rc != 0) {
    unsigned status = t->rc == HISTD_ENOMEM || t->rc == HISTD_ECANCELED ||
                              t->rc == HISTD_EGPULOST
                          ? 503
                      : t->rc == HISTD_EDEVICE ? 500
                      : t->rc == HISTD_EPARSE  ? 400
                                               : 422;
    respond_problem(r, status, "%s", t->msg);
    sync_task_free(t);
    return;
  }
  histd_result *res = &t->res;
  res->timing.parse_ms = t->parse_ms;
  res->timing.queue_ms = t->started_ms - t->queued_ms;
  res->timing.total_ms += t->parse_ms + res->timing.queue_ms;
  atomic_fetch_add(&r->svc->metrics.pairs_computed, res->total);
  atomic_fetch_add(&r->svc->metrics.sync_histograms, 1);
  respond_result(r, res, result_format(r), "histogram", 0);
  sync_task_free(t);
}
