/*
 * batch.c -- `histd batch`: one job cut into shards that a batch scheduler
 * (a Slurm job array, a Kubernetes Indexed Job) runs as independent tasks,
 * and the merge that adds their partials up.
 *
 *     histd batch plan JOB.json --shards K --out DIR
 *     histd batch run DIR --index I        (I: $SLURM_ARRAY_TASK_ID, or
 *                                            $JOB_COMPLETION_INDEX)
 *     histd batch merge DIR [--format json|csv|text|npz] [--out FILE]
 *
 * Why a directory and not the daemon. On a cluster the unit of work is a
 * process the scheduler starts, kills, requeues and starts again somewhere
 * else, and the only thing the tasks share is a file system. So the whole
 * protocol is files in DIR: plan.json, written once, and partials/I, one a
 * shard, each appearing whole or not at all (a temporary file in the same
 * directory, fsync'd, renamed over the name, and the directory fsync'd).
 * There is no lock and no coordinator: a task that dies leaves no partial
 * (at most a `.I.tmp.PID` file nobody reads), a task that runs twice writes
 * the same bytes' meaning twice or finds its partial there and stops, and
 * the merge is the only step that needs them all.
 *
 * What the plan fixes. A task must compute a piece of the same problem the
 * planner saw, or the sum is quietly wrong. So plan.json records the
 * parameters as the table resolved them (histd/params.h; the same JSON the
 * service's store keeps), each input's absolute path, size and SHA-256 (a
 * task hashes the bytes it parses -- one mapping, hashed then parsed -- and
 * refuses a file that changed since the plan), the bins the shards must
 * report (bit for bit: doubles as %.17g), the shard plan
 * (histd_shard_plan_make with want = K), and each shard's pair count. A
 * task rebinds the problem as sdh does (operands, then problem) and
 * rebuilds the plan; a different plan or different bins stop it. The merge
 * needs no input at all: each partial is sealed (a SHA-256 over plan.json's
 * hash, its index and its bytes, after them), and the merge checks the
 * seal, then the recorded bins and pairs (histd_result_check), before
 * adding it (histd_result_add): a truncated, corrupted or foreign partial
 * is named and refused, where histd_result_check alone would miss a bit
 * flipped in a weighted sum.
 *
 * The worker is what histd_run would pick: a GPU when the kernel runs there
 * (or may, "auto", "grid" and "dm-tree") and one is present, else the CPU engine with
 * every core this process may use, or $SLURM_CPUS_PER_TASK threads when
 * Slurm says how many it gave, unless the job names `threads`.
 *
 * Exit status: 0 done (or already done), 1 a runtime error (an input that
 * changed, a missing or bad partial, a failed run, a write that failed),
 * 2 a usage error (a bad flag, a JOB.json the table refuses, an index out
 * of range).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "histd/io.h"
#include "histd/job.h"
#include "batch.h"
#include "json_util.h"
#include "sha256.h"

#define PLAN_VERSION 1
#define MAX_SHARDS 1000000u

static const char usage_text[] =
    "usage: histd batch plan JOB.json --shards K --out DIR\n"
    "       histd batch run DIR [--index I]\n"
    "       histd batch merge DIR [--format json|csv|text|npz] [--pretty] [--out FILE]\n"
    "\n"
    "A job cut into shards for a batch scheduler (a Slurm job array, a Kubernetes\n"
    "Indexed Job); the tasks share DIR on a common file system.\n"
    "\n"
    "  plan    reads JOB.json (the members of POST /v1/jobs, with \"dataset\",\n"
    "          \"dataset_b\" and \"topology\" file paths relative to JOB.json's folder,\n"
    "          \"format\" and \"format_b\" their formats when their names do not say),\n"
    "          cuts the job into at most K shards and writes DIR/plan.json (the\n"
    "          parameters, the inputs' paths, sizes and SHA-256, the shards) and\n"
    "          DIR/partials/. Prints the number of shards, which may be less than K.\n"
    "  run     computes shard I (default $SLURM_ARRAY_TASK_ID, then\n"
    "          $JOB_COMPLETION_INDEX) into DIR/partials/I, whole or not at all; an\n"
    "          input that changed since the plan is refused; a shard already done\n"
    "          is left as it is. CPU threads: every core, or $SLURM_CPUS_PER_TASK.\n"
    "  merge   checks that every shard is there and sound, adds them up and writes\n"
    "          the result as sdh does (JSON by default) to stdout or --out FILE.\n"
    "\n"
    "Exit status: 0 success, 1 runtime error, 2 usage error.\n";

/* ---- small helpers --------------------------------------------------------------- */

static int fail(int status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static int fail(int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("histd batch: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return status;
}

static int usage_error(const char *fmt, const char *arg) {
  fputs("histd batch: ", stderr);
  fprintf(stderr, fmt, arg);
  fputs("\nTry 'histd batch --help'.\n", stderr);
  return 2;
}

/* Writes path whole or not at all: fill() writes a temporary file beside
 * it (.NAME.tmp.PID), which is flushed, fsync'd and renamed over path; the
 * directory is fsync'd so that the rename survives a crash. */
static int write_atomic(const char *path, int (*fill)(FILE *f, void *arg), void *arg, char *msg,
                        size_t msglen) {
  char dir[PATH_MAX], tmp[PATH_MAX + 64];
  const char *slash = strrchr(path, '/');
  const char *base = slash ? slash + 1 : path;
  if (slash == NULL)
    snprintf(dir, sizeof dir, ".");
  else
    snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
  if (snprintf(tmp, sizeof tmp, "%s/.%s.tmp.%ld", dir, base, (long)getpid()) >= (int)sizeof tmp)
    return histd_fail(msg, msglen, HISTD_EINVAL, "the path %s is too long", path);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return histd_fail(msg, msglen, HISTD_EIO, "cannot create %s: %s", tmp, strerror(errno));
  FILE *f = fdopen(fd, "wb");
  if (f == NULL) {
    close(fd);
    unlink(tmp);
    return histd_fail(msg, msglen, HISTD_EIO, "cannot write %s: %s", tmp, strerror(errno));
  }
  int rc = fill(f, arg);
  if (rc == 0 && (fflush(f) != 0 || ferror(f) || fsync(fd) != 0))
    rc = HISTD_EIO;
  int err = errno;
  if (fclose(f) != 0 && rc == 0) {
    rc = HISTD_EIO;
    err = errno;
  }
  if (rc == 0 && rename(tmp, path) != 0) {
    rc = HISTD_EIO;
    err = errno;
  }
  if (rc != 0) {
    unlink(tmp);
    return histd_fail(msg, msglen, rc, "cannot write %s: %s", path, strerror(err));
  }
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd);
    close(dfd);
  }
  return 0;
}

/* ---- inputs: a file mapped, hashed and parsed from the same bytes ----------------- */

enum { IN_A, IN_B, IN_TOP, IN_COUNT };
static const char *const in_member[IN_COUNT] = {"dataset", "dataset_b", "topology"};
static const char *const in_format_member[IN_COUNT] = {"format", "format_b", NULL};

typedef struct input {
  bool given;
  char path[PATH_MAX]; /* absolute */
  histd_format fmt;
  uint64_t size;
  char sha256[65];
} input;

/* Maps in->path, hashes it into in->size / in->sha256 (or, with `expect`,
 * refuses bytes that are not the ones recorded) and parses the same
 * mapping, so what is hashed is what is computed. */
static int load_input(input *in, bool expect, histd_dataset *ds, char *msg, size_t msglen) {
  memset(ds, 0, sizeof *ds);
  int fd = open(in->path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return histd_fail(msg, msglen, errno == ENOENT ? HISTD_ENOENT : HISTD_EIO,
                      "cannot open %s: %s", in->path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return histd_fail(msg, msglen, HISTD_EIO, "%s is not a regular file", in->path);
  }
  size_t len = (size_t)st.st_size;
  void *map = len > 0 ? mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
  close(fd);
  if (len > 0 && map == MAP_FAILED)
    return histd_fail(msg, msglen, HISTD_EIO, "cannot map %s: %s", in->path, strerror(errno));
  char hex[65];
  sha256_hex(map != NULL ? map : "", len, hex);
  int rc = 0;
  if (expect && ((uint64_t)len != in->size || strcmp(hex, in->sha256) != 0)) {
    rc = histd_fail(msg, msglen, HISTD_EIO,
                    "%s changed since the plan (%" PRIu64 " bytes, SHA-256 %.12s... then; "
                    "%zu bytes, %.12s... now): plan the job again",
                    in->path, in->size, in->sha256, len, hex);
  } else {
    in->size = (uint64_t)len;
    memcpy(in->sha256, hex, sizeof hex);
    rc = histd_parse(in->fmt, map != NULL ? map : "", len, 0, ds, msg, msglen);
    if (rc != 0) {
      char why[512];
      if (snprintf(why, sizeof why, "%s", msg) >= (int)sizeof why)
        why[sizeof why - 1] = '\0';
      histd_fail(msg, msglen, rc, "%s (%s): %s", in->path, histd_format_name(in->fmt), why);
    }
  }
  if (map != NULL)
    munmap(map, len);
  return rc;
}

/* ---- the bound job: inputs -> operands -> problem, as sdh does ------------------- */

typedef struct bound {
  histd_dataset ds[IN_COUNT];
  histd_job job; /* the job layer's binding: prob is job.problem */
  histd_problem prob;
  histd_bins bins; /* the bins a shard reports: count resolved, within as [0, R] */
  double within_edges[2];
} bound;

static void bound_free(bound *b) {
  histd_job_free(&b->job);
  for (int i = 0; i < IN_COUNT; i++)
    histd_dataset_free(&b->ds[i]);
  memset(b, 0, sizeof *b);
}

/* Loads the inputs (checking them against the plan when `expect`) and binds
 * the problem. Returns 0, or an exit status (1 runtime, 2 usage). */
static int bind_job(input *in, bool expect, const histd_params *params, bound *b) {
  char msg[1024];
  memset(b, 0, sizeof *b);
  for (int i = 0; i < IN_COUNT; i++) {
    if (!in[i].given)
      continue;
    int rc = load_input(&in[i], expect, &b->ds[i], msg, sizeof msg);
    if (rc != 0) {
      bound_free(b);
      return fail(rc == HISTD_EPARSE || rc == HISTD_EINVAL ? 2 : 1, "%s: %s", in_member[i], msg);
    }
  }
  int rc = histd_job_bind(&b->job, params, &b->ds[IN_A], in[IN_B].given ? &b->ds[IN_B] : NULL,
                          in[IN_TOP].given ? &b->ds[IN_TOP] : NULL, msg, sizeof msg);
  b->prob = b->job.problem;
  if (rc == 0)
    rc = histd_exec_validate(&params->exec, &b->prob, msg, sizeof msg);
  b->bins = b->prob.bins;
  if (rc == 0 && b->prob.statistic == HISTD_STAT_WITHIN) { /* as the worker counts it */
    b->within_edges[1] = nextafter(b->prob.radius, INFINITY);
    b->bins = (histd_bins){HISTD_BINS_EDGES, 1, 0, b->within_edges, 0, 0};
  } else if (rc == 0 && b->bins.kind == HISTD_BINS_WIDTH && b->bins.count == 0) {
    rc = histd_default_bins(&b->prob, &b->bins.count, msg, sizeof msg);
  }
  if (rc != 0) {
    bound_free(b);
    return fail(rc == HISTD_EINVAL || rc == HISTD_EPARSE ? 2 : 1, "%s", msg);
  }
  return 0;
}

/* ---- JOB.json and plan.json ----------------------------------------------------- */

/* Sets one parameter from a JSON member through the table. 0 or 2. */
static int set_param(histd_params *p, const histd_param *row, const cJSON *f, const char *where) {
  histd_value v;
  double *numbers;
  const char *want = param_value_from_json(row, f, &v, &numbers);
  if (want != NULL) {
    free(numbers);
    return fail(2, "%s: %s must be %s", where, row->name, want);
  }
  char msg[256];
  int rc = histd_param_set(p, row, &v, msg, sizeof msg);
  free(numbers);
  return rc == 0 ? 0 : fail(2, "%s: %s", where, msg);
}

/* A JSON object from a file; sha256 (NULL: not wanted) gets the bytes' hash. */
static int parse_json_file(const char *path, cJSON **out, char sha256[65]) {
  char *text, msg[512];
  size_t len;
  int rc = histd_read_file(path, &text, &len, msg, sizeof msg);
  if (rc != 0)
    return fail(rc == HISTD_ENOENT ? 2 : 1, "%s", msg);
  if (sha256 != NULL)
    sha256_hex(text, len, sha256);
  rc = json_body_parse(text, len, out, msg, sizeof msg);
  free(text);
  if (rc == 0 && !cJSON_IsObject(*out)) {
    cJSON_Delete(*out);
    return fail(2, "%s: not a JSON object", path);
  }
  return rc == 0 ? 0 : fail(2, "%s: %s", path, msg);
}

/* JOB.json: the parameters through the table, the inputs' paths resolved
 * against its folder. 0 or an exit status. */
static int read_job(const char *path, histd_params *params, input *in) {
  cJSON *o;
  int st = parse_json_file(path, &o, NULL);
  if (st != 0)
    return st;
  char real[PATH_MAX], dir[PATH_MAX];
  if (realpath(path, real) == NULL) {
    cJSON_Delete(o);
    return fail(1, "%s: %s", path, strerror(errno));
  }
  snprintf(dir, sizeof dir, "%.*s", (int)(strrchr(real, '/') - real), real);
  const char *fmt_name[IN_COUNT] = {NULL, NULL, NULL};
  char fmt_buf[IN_COUNT][32]; /* the names outlive the tree */
  for (const cJSON *f = o->child; f != NULL && st == 0; f = f->next) {
    int role = -1;
    for (int i = 0; i < IN_COUNT; i++) {
      if (strcmp(f->string, in_member[i]) == 0)
        role = i;
      else if (in_format_member[i] && strcmp(f->string, in_format_member[i]) == 0)
        role = IN_COUNT + i;
    }
    if (role >= 0) {
      if (!cJSON_IsString(f) || f->valuestring[0] == '\0') {
        st = fail(2, "%s: %s must be a %s", path, f->string,
                  role < IN_COUNT ? "file path (relative to the JOB.json's folder)"
                                  : "format name");
      } else if (role >= IN_COUNT) {
        snprintf(fmt_buf[role - IN_COUNT], sizeof fmt_buf[0], "%.31s", f->valuestring);
        fmt_name[role - IN_COUNT] = fmt_buf[role - IN_COUNT];
      } else {
        char joined[2 * PATH_MAX];
        input *x = &in[role];
        snprintf(joined, sizeof joined, "%s/%s", f->valuestring[0] == '/' ? "" : dir,
                 f->valuestring);
        if (realpath(joined, x->path) == NULL)
          st = fail(2, "%s: %s \"%s\": %s", path, f->string, f->valuestring, strerror(errno));
        x->given = true;
      }
      continue;
    }
    const histd_param *row = histd_param_find(f->string);
    if (row == NULL) {
      char names[1024] = "dataset, dataset_b, format, format_b";
      for (size_t i = 0; i < histd_param_count(); i++)
        if (strcmp(histd_param_at(i)->name, "topology") != 0)
          snprintf(names + strlen(names), sizeof names - strlen(names), ", %s",
                   histd_param_at(i)->name);
      st = fail(2, "%s: unknown member \"%.64s\"; the members are %s, topology", path,
                f->string, names);
      continue;
    }
    st = set_param(params, row, f, path);
  }
  cJSON_Delete(o);
  if (st != 0)
    return st;
  if (!in[IN_A].given)
    return fail(2, "%s: \"dataset\" is required: the path of the points' file", path);
  for (int i = 0; i < IN_COUNT; i++) {
    if (fmt_name[i] != NULL && !in[i].given)
      return fail(2, "%s: %s names the format of %s, which is not given", path,
                  in_format_member[i], in_member[i]);
    if (!in[i].given)
      continue;
    if (fmt_name[i] != NULL ? histd_format_parse(fmt_name[i], &in[i].fmt) != 0
                            : histd_format_from_path(in[i].path, &in[i].fmt) != 0) {
      char names[256];
      histd_format_names(names, sizeof names, ", ");
      return fail(2, fmt_name[i] ? "%s: %s \"%s\" is not a format (%s)"
                                 : "%s: cannot tell the format of %s from its name; give "
                                   "\"%s\" (one of %s)",
                  path, fmt_name[i] ? in_format_member[i] : in[i].path,
                  fmt_name[i] ? fmt_name[i] : in_format_member[i], names);
    }
  }
  /* the topology parameter is now the file's absolute path */
  if (in[IN_TOP].given)
    snprintf(params->topology, sizeof params->topology, "%s", in[IN_TOP].path);
  return 0;
}

typedef struct plan_doc {
  histd_params params;
  input in[IN_COUNT];
  histd_bins bins;
  double *edges; /* owned: bins.edges */
  uint64_t want;
  histd_shard_plan plan;
  uint64_t *pairs; /* plan.count */
  char sha256[65]; /* of plan.json's bytes: partials are sealed with it */
} plan_doc;

static void plan_doc_free(plan_doc *d) {
  histd_params_free(&d->params);
  free(d->edges);
  free(d->pairs);
}

typedef struct plan_write {
  const plan_doc *d;
} plan_write;

static int fill_plan(FILE *f, void *arg) {
  const plan_doc *d = ((plan_write *)arg)->d;
  fprintf(f, "{\n  \"histd_batch\": %d,\n  \"version\": \"%s\",\n  \"params\": ", PLAN_VERSION,
          HISTD_VERSION);
  histd_params_write_json(f, &d->params);
  fputs(",\n  \"inputs\": {", f);
  bool first = true;
  for (int i = 0; i < IN_COUNT; i++) {
    const input *x = &d->in[i];
    if (!x->given)
      continue;
    fprintf(f, "%s\n    \"%s\": {\"path\": ", first ? "" : ",", in_member[i]);
    cJSON *s = cJSON_CreateString(x->path); /* escaped as JSON */
    char *q = s ? cJSON_PrintUnformatted(s) : NULL;
    fputs(q ? q : "null", f);
    cJSON_free(q);
    cJSON_Delete(s);
    fprintf(f, ", \"format\": \"%s\", \"size\": %" PRIu64 ", \"sha256\": \"%s\"}",
            histd_format_name(x->fmt), x->size, x->sha256);
    first = false;
  }
  const histd_bins *b = &d->bins;
  fprintf(f, "\n  },\n  \"bins\": {\"kind\": \"%s\", \"count\": %" PRIu32,
          b->kind == HISTD_BINS_EDGES ? "edges" : "width", b->count);
  if (b->kind == HISTD_BINS_EDGES) {
    fputs(", \"edges\": [", f);
    for (uint32_t k = 0; k <= b->count; k++)
      fprintf(f, "%s%.17g", k ? ", " : "", b->edges[k]);
    fputc(']', f);
  } else {
    fprintf(f, ", \"width\": %.17g", b->width);
  }
  const histd_shard_plan *p = &d->plan;
  fprintf(f, "},\n  \"shards\": {\"want\": %" PRIu64 ", \"count\": %" PRIu64
             ", \"self\": %s, \"n_a\": %" PRIu64 ", \"n_b\": %" PRIu64 ", \"block\": %" PRIu64
             ", \"rows\": %" PRIu64 ", \"cols\": %" PRIu64 ",\n    \"pairs\": [",
          d->want, p->count, p->self ? "true" : "false", p->n_a, p->n_b, p->block, p->rows,
          p->cols);
  for (uint64_t s = 0; s < p->count; s++)
    fprintf(f, "%s%s\"%" PRIu64 "\"", s ? "," : "", s % 8 ? " " : "\n      ", d->pairs[s]);
  fputs("]}\n}\n", f);
  return ferror(f) ? HISTD_EIO : 0;
}

/* Members of a plan.json object, exact or refused. */
static bool get_u64(const cJSON *o, const char *name, uint64_t *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
  if (cJSON_IsString(v))
    return histd_parse_u64(v->valuestring, out);
  if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) || v->valuedouble > 9007199254740992.0 ||
      v->valuedouble != floor(v->valuedouble))
    return false;
  *out = (uint64_t)v->valuedouble;
  return true;
}

static const char *get_str(const cJSON *o, const char *name) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* DIR/plan.json into d. 0 or an exit status. */
static int read_plan(const char *dir, plan_doc *d) {
  memset(d, 0, sizeof *d);
  histd_params_init(&d->params);
  char path[PATH_MAX + 16];
  snprintf(path, sizeof path, "%s/plan.json", dir);
  cJSON *o;
  int st = parse_json_file(path, &o, d->sha256);
  if (st != 0)
    return st;
  const cJSON *ver = cJSON_GetObjectItemCaseSensitive(o, "histd_batch");
  const cJSON *params = cJSON_GetObjectItemCaseSensitive(o, "params");
  const cJSON *inputs = cJSON_GetObjectItemCaseSensitive(o, "inputs");
  const cJSON *bins = cJSON_GetObjectItemCaseSensitive(o, "bins");
  const cJSON *shards = cJSON_GetObjectItemCaseSensitive(o, "shards");
  const cJSON *pairs = cJSON_GetObjectItemCaseSensitive(shards, "pairs");
  uint64_t count = 0, block = 0, n_a = 0, n_b = 0, rows = 0, cols = 0, bcount = 0;
  const char *bkind = get_str(bins, "kind");
  if (!cJSON_IsNumber(ver) || ver->valueint != PLAN_VERSION || !cJSON_IsObject(params) ||
      !cJSON_IsObject(inputs) || !get_u64(shards, "want", &d->want) ||
      !get_u64(shards, "count", &count) || !get_u64(shards, "block", &block) ||
      !get_u64(shards, "n_a", &n_a) || !get_u64(shards, "n_b", &n_b) ||
      !get_u64(shards, "rows", &rows) || !get_u64(shards, "cols", &cols) ||
      !cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(shards, "self")) || count == 0 ||
      count > MAX_SHARDS || !cJSON_IsArray(pairs) || (uint64_t)cJSON_GetArraySize(pairs) != count ||
      !get_u64(bins, "count", &bcount) || bcount == 0 || bcount > HISTD_MAX_BUCKETS ||
      bkind == NULL) {
    cJSON_Delete(o);
    return fail(1, "%s is not a plan of this histd (histd batch plan writes it)", path);
  }
  d->plan = (histd_shard_plan){cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(shards, "self")),
                               n_a, n_b, block, rows, cols, count};
  d->pairs = calloc(count, sizeof *d->pairs);
  st = d->pairs == NULL ? fail(1, "out of memory") : 0;
  int s = 0;
  for (const cJSON *e = pairs->child; e != NULL && st == 0; e = e->next, s++)
    if (!cJSON_IsString(e) || !histd_parse_u64(e->valuestring, &d->pairs[s]))
      st = fail(1, "%s: shards.pairs[%d] is not a count", path, s);
  d->bins.count = (uint32_t)bcount;
  if (st == 0 && strcmp(bkind, "width") == 0) {
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(bins, "width");
    d->bins.kind = HISTD_BINS_WIDTH;
    d->bins.width = cJSON_IsNumber(w) ? w->valuedouble : 0;
    if (!(d->bins.width > 0))
      st = fail(1, "%s: bins.width is not a width", path);
  } else if (st == 0) {
    const cJSON *ed = cJSON_GetObjectItemCaseSensitive(bins, "edges");
    d->bins.kind = HISTD_BINS_EDGES;
    d->edges = malloc((bcount + 1) * sizeof *d->edges);
    d->bins.edges = d->edges;
    if (strcmp(bkind, "edges") != 0 || !cJSON_IsArray(ed) ||
        (uint64_t)cJSON_GetArraySize(ed) != bcount + 1 || d->edges == NULL)
      st = fail(1, "%s: bins.edges is not %" PRIu64 " edges", path, bcount + 1);
    int k = 0;
    for (const cJSON *e = st == 0 ? ed->child : NULL; e != NULL; e = e->next)
      d->edges[k++] = cJSON_IsNumber(e) ? e->valuedouble : NAN;
  }
  for (const cJSON *f = params->child; f != NULL && st == 0; f = f->next) {
    const histd_param *row = histd_param_find(f->string);
    st = row == NULL ? fail(1, "%s: params.%s is not a parameter of this histd", path, f->string)
                     : set_param(&d->params, row, f, path);
  }
  for (int i = 0; i < IN_COUNT && st == 0; i++) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(inputs, in_member[i]);
    if (x == NULL)
      continue;
    input *in = &d->in[i];
    const char *p = get_str(x, "path"), *fmt = get_str(x, "format"), *h = get_str(x, "sha256");
    in->given = true;
    if (p == NULL || fmt == NULL || h == NULL || strlen(h) != 64 ||
        histd_format_parse(fmt, &in->fmt) != 0 || !get_u64(x, "size", &in->size) ||
        strlen(p) >= sizeof in->path)
      st = fail(1, "%s: inputs.%s is not a path, format, size and sha256", path, in_member[i]);
    else {
      snprintf(in->path, sizeof in->path, "%s", p);
      memcpy(in->sha256, h, 65);
    }
  }
  if (st == 0 && !d->in[IN_A].given)
    st = fail(1, "%s: no inputs.dataset", path);
  cJSON_Delete(o);
  if (st != 0)
    plan_doc_free(d);
  return st;
}

/* ---- plan ------------------------------------------------------------------------ */

static int cmd_plan(int argc, char **argv) {
  const char *job = NULL, *out = NULL;
  uint64_t want = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--shards") == 0 && i + 1 < argc) {
      if (!histd_parse_u64(argv[++i], &want) || want == 0 || want > MAX_SHARDS)
        return usage_error("--shards must be a whole number from 1 to 1000000, got '%s'",
                           argv[i]);
    } else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc) {
      out = argv[++i];
    } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
      return usage_error("plan: unknown option or a missing value: '%s'", argv[i]);
    } else if (job == NULL) {
      job = argv[i];
    } else {
      return usage_error("plan: one JOB.json at a time, got also '%s'", argv[i]);
    }
  }
  if (job == NULL || want == 0 || out == NULL)
    return usage_error("%s", "plan needs JOB.json, --shards K and --out DIR");

  plan_doc d;
  memset(&d, 0, sizeof d);
  histd_params_init(&d.params);
  int st = read_job(job, &d.params, d.in);
  bound b;
  if (st == 0)
    st = bind_job(d.in, false, &d.params, &b);
  if (st != 0) {
    histd_params_free(&d.params);
    return st;
  }
  d.want = want;
  d.bins = b.bins;
  histd_shard_plan_make(&b.prob, d.params.exec.kernel, want, &d.plan);
  d.pairs = calloc(d.plan.count, sizeof *d.pairs);
  for (uint64_t s = 0; d.pairs != NULL && s < d.plan.count; s++) {
    histd_shard sh;
    histd_shard_get(&d.plan, s, &sh);
    d.pairs[s] = histd_shard_pairs(&b.prob, &sh);
  }
  char path[PATH_MAX + 16], msg[PATH_MAX + 256];
  snprintf(path, sizeof path, "%s/plan.json", out);
  struct stat stt;
  if (d.pairs == NULL)
    st = fail(1, "out of memory");
  else if (mkdir(out, 0755) != 0 && errno != EEXIST)
    st = fail(1, "cannot create %s: %s", out, strerror(errno));
  else if (stat(path, &stt) == 0)
    st = fail(1, "%s already holds a plan; remove it (and its partials) or plan into another "
                 "--out DIR", out);
  if (st == 0) {
    snprintf(path, sizeof path, "%s/partials", out);
    if (mkdir(path, 0755) != 0 && errno != EEXIST)
      st = fail(1, "cannot create %s: %s", path, strerror(errno));
  }
  if (st == 0) {
    snprintf(path, sizeof path, "%s/plan.json", out);
    plan_write pw = {&d};
    if (write_atomic(path, fill_plan, &pw, msg, sizeof msg) != 0)
      st = fail(1, "%s", msg);
  }
  if (st == 0) {
    printf("%" PRIu64 "\n", d.plan.count);
    fprintf(stderr,
            "histd batch: %" PRIu64 " shard(s) (%" PRIu64 " asked), blocks of %" PRIu64
            " points, in %s; run `histd batch run %s --index I` for I in 0..%" PRIu64
            ", then `histd batch merge %s`\n",
            d.plan.count, want, d.plan.block, out, out, d.plan.count - 1, out);
    if (fflush(stdout) != 0)
      st = 1;
  }
  d.bins.edges = NULL; /* b's */
  bound_free(&b);
  plan_doc_free(&d);
  return st;
}

/* ---- run ------------------------------------------------------------------------- */

static bool same_bins(const histd_bins *x, const histd_bins *y) {
  if (x->kind != y->kind || x->count != y->count)
    return false;
  if (x->kind == HISTD_BINS_WIDTH)
    return x->width == y->width;
  return memcmp(x->edges, y->edges, (x->count + 1) * sizeof *x->edges) == 0;
}

/* A partial's file is its bytes (histd_partial_encode) and a seal:
 * "HSDS" and SHA-256(plan.json's hash, the shard's index, the bytes), so
 * that a flipped bit anywhere, a partial of another shard or of another
 * plan is refused, not added. */
#define SEAL_MAGIC "HSDS"
#define SEAL_LEN (4 + 32)

static void seal(const plan_doc *d, uint64_t s, const unsigned char *bytes, size_t len,
                 unsigned char out[SEAL_LEN]) {
  char index[24];
  snprintf(index, sizeof index, "/%" PRIu64 "/", s);
  sha256_ctx *c = sha256_new();
  sha256_update(c, d->sha256, 64);
  sha256_update(c, index, strlen(index));
  sha256_update(c, bytes, len);
  memcpy(out, SEAL_MAGIC, 4);
  sha256_final_raw(c, out + 4);
}

/* DIR/partials/s unsealed, decoded and checked against the plan: 0,
 * HISTD_ENOENT when there is none, else HISTD_EIO with a sentence. */
static int load_partial(const char *dir, const plan_doc *d, uint64_t s, histd_result *r,
                        char *msg, size_t msglen) {
  char path[PATH_MAX + 64], *bytes;
  size_t len;
  snprintf(path, sizeof path, "%s/partials/%" PRIu64, dir, s);
  int rc = histd_read_file(path, &bytes, &len, msg, msglen);
  if (rc != 0)
    return rc;
  char why[512] = "";
  unsigned char want[SEAL_LEN];
  if (len >= SEAL_LEN)
    seal(d, s, (unsigned char *)bytes, len - SEAL_LEN, want);
  if (len < SEAL_LEN || memcmp(bytes + len - SEAL_LEN, want, SEAL_LEN) != 0)
    rc = histd_fail(why, sizeof why, HISTD_EIO, "its seal does not match its bytes, this "
                    "shard and this plan (damaged, cut short, or another plan's)");
  else
    rc = histd_partial_decode(bytes, len - SEAL_LEN, r, why, sizeof why);
  free(bytes);
  if (rc == 0 && (rc = histd_result_check(r, &d->bins, d->pairs[s], why, sizeof why)) != 0)
    histd_result_free(r);
  if (rc != 0)
    return histd_fail(msg, msglen, HISTD_EIO, "%s is not shard %" PRIu64 "'s partial: %s", path,
                      s, why);
  return 0;
}

typedef struct bytes_arg {
  const unsigned char *p;
  size_t len;
  unsigned char seal[SEAL_LEN];
} bytes_arg;

static int fill_bytes(FILE *f, void *arg) {
  const bytes_arg *b = arg;
  return fwrite(b->p, 1, b->len, f) == b->len && fwrite(b->seal, 1, SEAL_LEN, f) == SEAL_LEN
             ? 0
             : HISTD_EIO;
}

static int cmd_run(int argc, char **argv) {
  const char *dir = NULL, *index_text = NULL, *index_from = "--index";
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--index") == 0 && i + 1 < argc)
      index_text = argv[++i];
    else if (argv[i][0] == '-' && argv[i][1] != '\0')
      return usage_error("run: unknown option or a missing value: '%s'", argv[i]);
    else if (dir == NULL)
      dir = argv[i];
    else
      return usage_error("run: one DIR at a time, got also '%s'", argv[i]);
  }
  if (dir == NULL)
    return usage_error("%s", "run needs the plan's DIR");
  if (index_text == NULL && (index_text = getenv("SLURM_ARRAY_TASK_ID")) != NULL)
    index_from = "$SLURM_ARRAY_TASK_ID";
  else if (index_text == NULL && (index_text = getenv("JOB_COMPLETION_INDEX")) != NULL)
    index_from = "$JOB_COMPLETION_INDEX";
  uint64_t s;
  if (index_text == NULL)
    return usage_error("%s", "run needs --index I (or $SLURM_ARRAY_TASK_ID, or "
                             "$JOB_COMPLETION_INDEX)");
  if (!histd_parse_u64(index_text, &s)) {
    fprintf(stderr, "histd batch: %s must be a shard index (a whole number), got '%s'\n",
            index_from, index_text);
    return 2;
  }
  plan_doc d;
  int st = read_plan(dir, &d);
  if (st != 0)
    return st;
  if (s >= d.plan.count) {
    st = fail(2, "index %" PRIu64 " (%s) is out of range: the plan in %s has %" PRIu64
                 " shard(s), 0..%" PRIu64,
              s, index_from, dir, d.plan.count, d.plan.count - 1);
    plan_doc_free(&d);
    return st;
  }
  char msg[PATH_MAX + 1024];
  histd_result part;
  int rc = load_partial(dir, &d, s, &part, msg, sizeof msg);
  if (rc == 0) {
    histd_result_free(&part);
    fprintf(stderr, "histd batch: shard %" PRIu64 " of %" PRIu64 " is already done (%s/partials/%" PRIu64 ")\n",
            s, d.plan.count, dir, s);
    plan_doc_free(&d);
    return 0;
  }
  if (rc != HISTD_ENOENT) /* a partial that is not one: computed again, replaced */
    fprintf(stderr, "histd batch: %s; computing it again\n", msg);

  bound b;
  if ((st = bind_job(d.in, true, &d.params, &b)) != 0) {
    plan_doc_free(&d);
    return st == 2 ? 1 : st; /* the plan bound it: whatever fails now is the run's */
  }
  histd_shard_plan again;
  histd_shard_plan_make(&b.prob, d.params.exec.kernel, d.want, &again);
  if (again.self != d.plan.self || again.n_a != d.plan.n_a || again.n_b != d.plan.n_b ||
      again.block != d.plan.block || again.rows != d.plan.rows || again.cols != d.plan.cols ||
      again.count != d.plan.count || !same_bins(&b.bins, &d.bins)) {
    st = fail(1, "the job bound here is not the one planned in %s (another histd, or "
                 "another machine's arithmetic?): plan it again", dir);
  } else {
    histd_shard sh;
    histd_shard_get(&d.plan, s, &sh);
    histd_exec ex = d.params.exec;
    const char *cpus = getenv("SLURM_CPUS_PER_TASK");
    uint64_t t;
    if (ex.threads == 0 && cpus != NULL && histd_parse_u64(cpus, &t) && t > 0 && t <= 4096)
      ex.threads = (uint32_t)t;
    histd_worker *w = NULL;
    double t0 = histd_now_ms();
    rc = histd_worker_create(&w, histd_exec_device(&ex), msg, sizeof msg);
    if (rc == 0)
      rc = histd_worker_run_shard(w, &b.prob, &ex, &sh, NULL, &part, msg, sizeof msg);
    histd_worker_destroy(w);
    if (rc == 0 &&
        (rc = histd_result_check(&part, &d.bins, d.pairs[s], msg, sizeof msg)) != 0)
      histd_result_free(&part);
    unsigned char *bytes = NULL;
    size_t len = 0;
    if (rc == 0) {
      rc = histd_partial_encode(&part, &bytes, &len, msg, sizeof msg);
      char path[PATH_MAX + 64];
      snprintf(path, sizeof path, "%s/partials/%" PRIu64, dir, s);
      bytes_arg ba = {bytes, len, {0}};
      if (rc == 0)
        seal(&d, s, bytes, len, ba.seal);
      if (rc == 0)
        rc = write_atomic(path, fill_bytes, &ba, msg, sizeof msg);
      if (rc == 0)
        fprintf(stderr,
                "histd batch: shard %" PRIu64 " of %" PRIu64 " (points %" PRIu64 "..%" PRIu64
                " x %" PRIu64 "..%" PRIu64 ", %" PRIu64 " pairs) on %s, kernel %s, in %.1f s: %s\n",
                s, d.plan.count, sh.i0, sh.i1, sh.j0, sh.j1, d.pairs[s], part.device,
                part.kernel, (histd_now_ms() - t0) / 1000, path);
      free(bytes);
      histd_result_free(&part);
    }
    if (rc != 0)
      st = fail(1, "shard %" PRIu64 ": %s", s, msg);
  }
  bound_free(&b);
  plan_doc_free(&d);
  return st;
}

/* ---- merge ----------------------------------------------------------------------- */

enum out_format { OUT_JSON, OUT_CSV, OUT_TEXT, OUT_NPZ };

typedef struct merged_out {
  const histd_result *res;
  enum out_format fmt;
  bool pretty;
} merged_out;

static int fill_result(FILE *f, void *arg) {
  const merged_out *m = arg;
  switch (m->fmt) {
  case OUT_JSON:
    if (histd_write_json(f, m->res, m->pretty ? HISTD_JSON_PRETTY : 0) != 0)
      return HISTD_EIO;
    return fputc('\n', f) == EOF ? HISTD_EIO : 0;
  case OUT_CSV:
    return histd_write_csv(f, m->res);
  case OUT_TEXT:
    return histd_write_text(f, m->res);
  case OUT_NPZ:
    return histd_write_npz(f, m->res);
  }
  return HISTD_EINVAL;
}

static int cmd_merge(int argc, char **argv) {
  const char *dir = NULL, *out = NULL;
  merged_out mo = {NULL, OUT_JSON, false};
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--format") == 0 && i + 1 < argc) {
      static const char *const names[] = {"json", "csv", "text", "npz"};
      const char *v = argv[++i];
      int k = 0;
      while (k < 4 && strcmp(v, names[k]) != 0)
        k++;
      if (k == 4)
        return usage_error("--format must be json, csv, text or npz, got '%s'", v);
      mo.fmt = (enum out_format)k;
    } else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc) {
      out = argv[++i];
    } else if (strcmp(argv[i], "--pretty") == 0) {
      mo.pretty = true;
    } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
      return usage_error("merge: unknown option or a missing value: '%s'", argv[i]);
    } else if (dir == NULL) {
      dir = argv[i];
    } else {
      return usage_error("merge: one DIR at a time, got also '%s'", argv[i]);
    }
  }
  if (dir == NULL)
    return usage_error("%s", "merge needs the plan's DIR");
  plan_doc d;
  int st = read_plan(dir, &d);
  if (st != 0)
    return st;
  /* every shard there first: the missing ones named, none read */
  char missing[512] = "";
  uint64_t n_missing = 0;
  for (uint64_t s = 0; s < d.plan.count; s++) {
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/partials/%" PRIu64, dir, s);
    if (access(path, F_OK) == 0)
      continue;
    size_t l = strlen(missing);
    if (l + 32 < sizeof missing)
      snprintf(missing + l, sizeof missing - l, "%s%" PRIu64, n_missing ? ", " : "", s);
    else if (l + 5 < sizeof missing && missing[l - 1] != '.')
      snprintf(missing + l, sizeof missing - l, ", ...");
    n_missing++;
  }
  if (n_missing > 0) {
    st = fail(1, "%" PRIu64 " of %" PRIu64 " shard(s) missing in %s/partials: %s (run `histd "
                 "batch run %s --index I` for each)",
              n_missing, d.plan.count, dir, missing, dir);
    plan_doc_free(&d);
    return st;
  }
  histd_result sum, part;
  double *err = histd_result_add_errs(&d.bins);
  char msg[PATH_MAX + 1024];
  int rc = err == NULL ? histd_fail(msg, sizeof msg, HISTD_ENOMEM, "out of memory") : 0;
  double t0 = histd_now_ms();
  memset(&sum, 0, sizeof sum);
  for (uint64_t s = 0; rc == 0 && s < d.plan.count; s++) {
    if ((rc = load_partial(dir, &d, s, &part, msg, sizeof msg)) != 0)
      break;
    if (s == 0)
      rc = histd_result_copy(&sum, &part);
    else if ((rc = histd_result_add(&sum, err, &part, msg, sizeof msg)) != 0)
      histd_fail(msg, sizeof msg, rc, "shard %" PRIu64 " does not add up with shard 0: %.400s",
                 s, msg);
    histd_result_free(&part);
  }
  if (rc == 0) {
    histd_result_add_done(&sum, err);
    histd_job_label(&d.params, &sum);
    sum.timing.total_ms = histd_now_ms() - t0;
    mo.res = &sum;
    if (out != NULL) {
      rc = write_atomic(out, fill_result, &mo, msg, sizeof msg);
    } else if (fill_result(stdout, &mo) != 0 || fflush(stdout) != 0) {
      rc = histd_fail(msg, sizeof msg, HISTD_EIO, "cannot write the output: %s",
                      strerror(errno));
    }
    histd_result_free(&sum);
  }
  if (rc != 0)
    st = fail(1, "%s", msg);
  free(err);
  plan_doc_free(&d);
  return st;
}

/* ---- entry ---------------------------------------------------------------------- */

int batch_main(int argc, char **argv) {
  static const struct {
    const char *name;
    int (*run)(int, char **);
  } cmds[] = {{"plan", cmd_plan}, {"run", cmd_run}, {"merge", cmd_merge}};
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
      strcmp(argv[1], "help") == 0) {
    fputs(usage_text, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  for (int i = 2; i < argc; i++)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(usage_text, stdout);
      return 0;
    }
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
    if (strcmp(argv[1], cmds[i].name) == 0)
      return cmds[i].run(argc - 1, argv + 1);
  return usage_error("unknown command '%s': plan, run or merge", argv[1]);
}
