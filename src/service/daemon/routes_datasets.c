/*
 * routes_datasets.c -- POST, GET and DELETE /v1/datasets[/{id}].
 *
 * An upload is parsed by the io layer (every format it knows; the format
 * comes from ?format= or the Content-Type), checked (finite coordinates,
 * --max-points), and handed to the store, which writes the payload file
 * durably before the row. Nothing is stored unless all of that succeeded,
 * so a bad upload leaves no trace. The body buffer is freed as soon as the
 * points are parsed, so an upload's peak memory is its body plus its points
 * (about 2x the float64 payload for binary, and body + 24 bytes/point for
 * text).
 *
 * Ids are content hashes: the same points uploaded again answer 200 (not
 * 201) with the dataset that already exists.
 *
 * With --max-data-bytes, an upload whose payload (24 bytes a point) would
 * take the data dir past the budget is refused with 507: at its headers
 * when it streams, once parsed otherwise. (Uploads in flight at the same
 * moment are each checked against what is stored, so together they can
 * pass the budget by what they hold.)
 *
 * DELETE refuses (409) while queued or running jobs use the dataset (as
 * their dataset, dataset_b or topology): cancel them first. Finished jobs
 * keep their results after their dataset is deleted; their "dataset" field
 * then names an id that answers 404.
 *
 * ?expires=SECONDS (or 90m, 12h, 30d) makes an upload temporary: the
 * daemon deletes the dataset that long after it is stored (daemon.c's
 * sweep, through datasets_delete_unused: a dataset that jobs still use
 * goes once they end). The same points uploaded again keep the later
 * time, and stay for ever when either upload had none (store.h), so that
 * a temporary upload never shortens another's dataset. Checked at the
 * headers, before a body is read.
 *
 * ?growing=true makes a dataset that frames are appended to (a simulation
 * still running): POST /v1/datasets/{id}/frames takes frames in any format
 * an upload takes, each frame the dataset's atoms in the same order (their
 * count, weights, open or periodic box, length unit and, where both name
 * them, the atoms' names checked), until POST /v1/datasets/{id}/seal.
 * Such a dataset's id is its own, not the hash of its points: an identical
 * upload never shares it (nor does it share the identical upload's), so
 * no one's dataset grows but the one its uploader appends to. Its
 * ?expires= counts from the upload, appends do not move it. An append is
 * durable and whole (store.h) and wakes the jobs that follow the dataset;
 * ?at=K (the frame the body starts at, the dataset's frame count) makes
 * a retry of an append that was stored but not answered harmless.
 *
 * Sky catalogues (?format=sky-csv, sky-json or fits; io.h) take ?omega_m=
 * (flat LambdaCDM's Omega_m for redshifts, 0.01 to 1; 0.315 without it)
 * and ?regions=K (K jackknife regions assigned on the sky by k-means,
 * histd.h); the dataset's document says "sky" and "regions". Either with
 * another format is a 400, as is a sky catalogue with ?growing=true.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <sys/stat.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <linux/openat2.h>

#include "backend.h"
#include "datasets.h"
#include "http.h"
#include "jobs.h"
#include "routes.h"
#include "service.h"
#include "store.h"
#include "upload_stream.h"
#include "util.h"

static bool valid_dataset_id(const char *id) {
  if (strlen(id) != 64)
    return false;
  for (const char *p = id; *p; p++)
    if (!isxdigit((unsigned char)*p) || isupper((unsigned char)*p))
      return false;
  return true;
}

static cJSON *triple(const double v[3]) {
  return cJSON_CreateDoubleArray(v, 3);
}

cJSON *dataset_to_json(const dataset_meta *m) {
  cJSON *o = cJSON_CreateObject();
  char ts[40];
  cJSON_AddStringToObject(o, "id", m->id);
  cJSON_AddNumberToObject(o, "n", (double)m->n);
  cJSON_AddNumberToObject(o, "bytes", (double)dataset_payload_bytes(m));
  cJSON_AddStringToObject(o, "format", m->format);
  cJSON_AddNumberToObject(o, "frames", (double)(m->frames > 1 ? m->frames : 1));
  cJSON_AddBoolToObject(o, "weighted", m->weighted);
  if (m->unit[0] != '\0')
    cJSON_AddStringToObject(o, "unit", m->unit);
  if (m->box.kind == HISTD_BOX_NONE) {
    cJSON_AddNullToObject(o, "box");
  } else { /* the job parameter's form: [Lx, Ly, Lz] or LAMMPS's six numbers */
    const histd_box *b = &m->box;
    const double v[6] = {b->ax, b->by, b->cz, b->bx, b->cx, b->cy};
    cJSON_AddItemToObject(o, "box",
                          cJSON_CreateDoubleArray(v, b->kind == HISTD_BOX_TRICLINIC ? 6 : 3));
  }
  cJSON *atoms = m->atoms[0] ? cJSON_Parse(m->atoms) : NULL;
  if (atoms != NULL)
    cJSON_AddItemToObject(o, "atoms", atoms);
  cJSON *b = cJSON_AddObjectToObject(o, "bounds");
  cJSON_AddItemToObject(b, "min", triple(m->min));
  cJSON_AddItemToObject(b, "max", triple(m->max));
  format_rfc3339(m->created_at, ts, sizeof ts);
  cJSON_AddStringToObject(o, "created_at", ts);
  if (m->name[0] != '\0')
    cJSON_AddStringToObject(o, "name", m->name);
  if (m->error[0] != '\0')
    cJSON_AddStringToObject(o, "error", m->error);
  if (m->expires_at > 0) {
    format_rfc3339(m->expires_at, ts, sizeof ts);
    cJSON_AddStringToObject(o, "expires_at", ts);
  } else {
    cJSON_AddNullToObject(o, "expires_at");
  }
  cJSON_AddBoolToObject(o, "growing", m->growing);
  if (m->growing)
    cJSON_AddBoolToObject(o, "sealed", m->sealed);
  if (m->sky) { /* what made its points: the distances given, or Omega_m's from redshifts */
    cJSON *sky = cJSON_AddObjectToObject(o, "sky");
    cJSON_AddStringToObject(sky, "distance", m->omega_m > 0 ? "z" : "dist");
    if (m->omega_m > 0)
      cJSON_AddNumberToObject(sky, "omega_m", m->omega_m);
    else
      cJSON_AddNullToObject(sky, "omega_m");
  }
  cJSON_AddNumberToObject(o, "regions", (double)m->regions);
  return o;
}

/* ?growing= into *growing (false without it); false, answered, when it is
 * not "true" or "false", or in cluster mode. */
static bool upload_growing(request *r, bool *growing) {
  const char *g = request_query(r, "growing");
  *growing = false;
  if (g == NULL || strcmp(g, "false") == 0)
    return true;
  if (strcmp(g, "true") != 0) {
    respond_problem(r, 400, "growing must be \"true\" or \"false\", got \"%.100s\"", g);
    return false;
  }
  if (r->svc->cfg.coordinator[0] != '\0') {
    respond_problem(r, 501, "growing datasets are not available in cluster mode "
                            "(--coordinator) yet: upload the whole trajectory");
    return false;
  }
  *growing = true;
  return true;
}

/* Whether ds's frames all hold the same number of points (a growing
 * dataset's must: each frame is its atoms); else answered 422. */
static bool frames_alike(request *r, const histd_dataset *ds, const char *what) {
  const size_t frames = histd_dataset_frames(ds);
  const size_t atoms = ds->frame != NULL ? ds->frame[0].n : ds->n;
  for (size_t f = 1; f < frames; f++)
    if (ds->frame[f].n != atoms) {
      respond_problem(r, 422, "frame %zu of %s holds %zu points and frame 1 %zu: the frames of "
                              "a growing dataset are its atoms, the same in each",
                      f + 1, what, ds->frame[f].n, atoms);
      return false;
    }
  if (atoms == 0) {
    respond_problem(r, 422, "%s holds no points: a growing dataset's frames hold its atoms",
                    what);
    return false;
  }
  return true;
}

/* ?expires= as seconds into *seconds (0 without it); false, answered with
 * a sentence, when it is not a duration the daemon keeps. */
static bool upload_expiry(request *r, double *seconds) {
  const char *e = request_query(r, "expires");
  *seconds = 0;
  if (e == NULL)
    return true;
  if (r->svc->cfg.coordinator[0] != '\0') {
    respond_problem(r, 501, "expires is not available in cluster mode (--coordinator) yet; "
                            "delete the dataset when done (DELETE /v1/datasets/{id})");
    return false;
  }
  if (config_parse_seconds(e, seconds) != 0 || !(*seconds > 0)) {
    respond_problem(r, 400, "expires must be how long the daemon keeps the dataset, more than "
                            "0 and at most 100 years: seconds (3600) or a duration such as "
                            "90m, 12h or 30d; got \"%.100s\"", e);
    return false;
  }
  return true;
}

/* When a dataset stored now with the request's (checked) ?expires= goes. */
static double upload_expires_at(request *r) {
  double seconds;
  return upload_expiry(r, &seconds) && seconds > 0 ? wall_now() + seconds : 0;
}

static bool is_sky(histd_format f) {
  return f == HISTD_FORMAT_SKY_CSV || f == HISTD_FORMAT_SKY_JSON || f == HISTD_FORMAT_FITS;
}

/* ?regions_like=ID: the centres of dataset ID's regions into o (false,
 * answered 4xx with a sentence, when it has none or is not there). */
static bool regions_like(request *r, const char *id, histd_sky_options *o) {
  service *svc = r->svc;
  loaded_dataset *d = NULL;
  char msg[512];
  int rc = dataset_acquire(svc->cache, id, &d, msg, sizeof msg);
  if (rc == 0) {
    rc = histd_sky_region_centres(loaded_dataset_points(d), &o->centres, &o->centre_count, msg,
                                  sizeof msg);
    dataset_release(svc->cache, d);
  }
  if (rc != 0)
    respond_problem(r, rc == HISTD_ENOENT ? 404 : rc == HISTD_ENOMEM ? 503 : 400,
                    "regions_like \"%.80s\": %s", id, msg);
  return rc == 0;
}

/* ?omega_m=, ?regions= and ?regions_like= of an upload in format fmt into
 * *o (zero without them; its centres freed by upload_sky_free); false,
 * answered 4xx with a sentence, when one is not a value a sky catalogue
 * takes, is given with a format that is not one, or a sky catalogue is to
 * grow. */
static void upload_sky_free(histd_sky_options *o) {
  free(o->centres);
  o->centres = NULL;
}
static bool upload_sky(request *r, histd_format fmt, bool growing, histd_sky_options *o) {
  const char *om = request_query(r, "omega_m"), *k = request_query(r, "regions"),
             *like = request_query(r, "regions_like");
  memset(o, 0, sizeof *o);
  if ((om != NULL || k != NULL || like != NULL) && !is_sky(fmt)) {
    respond_problem(r, 400, "%s goes with a sky catalogue (format sky-csv, sky-json or fits), "
                            "and this upload's format is %s",
                    om ? "omega_m" : k ? "regions" : "regions_like", histd_format_name(fmt));
    return false;
  }
  if (k != NULL && like != NULL) {
    respond_problem(r, 400, "regions (make K regions) and regions_like (take another "
                            "catalogue's) go one without the other");
    return false;
  }
  if (growing && is_sky(fmt)) {
    respond_problem(r, 400, "a sky catalogue (format %s) cannot be a growing dataset: upload "
                            "it whole, without ?growing=true", histd_format_name(fmt));
    return false;
  }
  char *end;
  if (om != NULL) {
    errno = 0;
    o->omega_m = strtod(om, &end);
    if (end == om || *end != '\0' || errno != 0 || !(o->omega_m >= 0.01 && o->omega_m <= 1)) {
      respond_problem(r, 400, "omega_m must be a number from 0.01 to 1 (the flat LambdaCDM "
                              "universe's Omega_m), got \"%.100s\"", om);
      return false;
    }
  }
  if (k != NULL) {
    errno = 0;
    unsigned long v = strtoul(k, &end, 10);
    if (end == k || *end != '\0' || errno != 0 || k[0] == '-' || k[0] == '+' || v < 1 ||
        v > HISTD_MAX_REGIONS) {
      respond_problem(r, 400, "regions must be a whole number from 1 to %u (the jackknife "
                              "regions to make on the sky), got \"%.100s\"", HISTD_MAX_REGIONS, k);
      return false;
    }
    o->regions = (uint32_t)v;
  }
  return like == NULL || regions_like(r, like, o);
}

/* "text/csv; charset=utf-8" -> "text/csv" */
static void media_type(const char *ct, char *out, size_t len) {
  size_t i = 0;
  while (ct[i] && ct[i] != ';' && i + 1 < len) {
    out[i] = (char)tolower((unsigned char)ct[i]);
    i++;
  }
  while (i > 0 && out[i - 1] == ' ')
    i--;
  out[i] = '\0';
}

/* The upload's format from ?format= or Content-Type; answers and returns
 * false when neither says. */
static bool upload_format(request *r, histd_format *fmt) {
  const char *fq = request_query(r, "format");
  const char *ct = request_header(r, "Content-Type");
  char names[256], types[512];
  histd_format_names(names, sizeof names, ", ");
  if (fq != NULL) {
    if (histd_format_parse(fq, fmt) != 0) {
      respond_problem(r, 400, "format \"%s\" is not one of %s", fq, names);
      return false;
    }
    return true;
  }
  char mt[128];
  media_type(ct ? ct : "", mt, sizeof mt);
  if (mt[0] == '\0' || histd_format_from_content_type(mt, fmt) != 0) {
    histd_format_types(types, sizeof types);
    histd_format_names(names, sizeof names, "|");
    respond_problem(r, 415,
                    "cannot tell the format from Content-Type \"%s\": send one of %s, or add "
                    "?format=%s", ct ? ct : "", types, names);
    return false;
  }
  return true;
}

/* False (answered 507) when a payload of `bytes` would take the data dir
 * past --max-data-bytes. */
static bool disk_room(request *r, unsigned long long bytes) {
  size_t max = r->svc->cfg.max_data_bytes;
  if (max == 0)
    return true;
  uint64_t held = store_data_bytes(r->svc->store);
  if (held + bytes <= max)
    return true;
  respond_problem(r, 507, "the dataset's %llu bytes would take the data dir past its budget "
                          "of %zu bytes (--max-data-bytes; %llu are in use); delete datasets "
                          "or old jobs first", bytes, max, (unsigned long long)held);
  return false;
}

static void store_parsed(request *r, int rc, histd_dataset *ds, histd_format fmt,
                         const char *name, const char *what, size_t bytes, const char *tmp,
                         int tmp_fd, char *msg, size_t msglen);

/* A dataset stored: 201 (new) or 200 with its document and Location; the
 * upload counted in the metrics (bytes of input). */
static void answer_stored(request *r, const dataset_meta *meta, bool created, size_t bytes) {
  char msg[512];
  if (backend_dataset_publish(&r->svc->backend, meta, msg, sizeof msg) != 0) {
    respond_problem(r, 503, "the dataset is stored on this node but could not be shared with "
                    "the cluster (upload it again): %s", msg);
    return;
  }
  service *svc = r->svc;
  dataset_cache_forget(svc->cache, meta->id); /* a rewritten file is verified anew */
  atomic_fetch_add(&svc->metrics.upload_bytes, bytes);
  atomic_fetch_add(&svc->metrics.uploads, 1);
  respond_json(r, created ? 201 : 200, dataset_to_json(meta));
  char loc[128];
  snprintf(loc, sizeof loc, "/v1/datasets/%s", meta->id);
  response_add_header(r, "Location", loc);
}

/* Bodies this large (other than raw float64, which streams) go to a temp
 * file as they arrive and are parsed from its mapping into another file:
 * the daemon holds neither the body nor the points in its own memory. */
#define SPOOL_MIN_BYTES ((unsigned long long)32 << 20)

static int start_spool(request *r, unsigned long long content_length) {
  if (!disk_room(r, content_length))
    return -1;
  char msg[256] = "";
  if (store_temp_payload(r->svc->store, r->spool_path, sizeof r->spool_path, &r->spool_fd, msg,
                         sizeof msg) != 0) {
    respond_problem(r, 500, "%s", msg);
    return -1;
  }
  r->spooling = true;
  r->spool_errno = 0;
  return 1;
}

void route_datasets_spool(request *r, const char *data, size_t len) {
  while (len > 0 && r->spool_errno == 0) {
    ssize_t w = write(r->spool_fd, data, len);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      r->spool_errno = w < 0 ? errno : EIO;
      break;
    }
    data += w;
    len -= (size_t)w;
  }
}

/* A sentence about an imported file without the file's own bytes: the
 * parsers quote what they could not read ("line 3: 'TOKEN=...' is not a
 * number"), which is the client's own text for a body but may be anything
 * for a file on the daemon's disk. Every quoted run ('...' or "...", a quote
 * that opens after a non-alphanumeric character, so that "atom 3's" stays)
 * is cut to "...". */
static void unquote_input(char *msg, size_t msglen) {
  char out[512];
  size_t o = 0;
  for (const char *p = msg; *p != '\0' && o + 6 < sizeof out;) {
    char q = *p;
    bool opens = (q == '\'' || q == '"') && (p == msg || !isalnum((unsigned char)p[-1]));
    const char *close = opens ? strchr(p + 1, q) : NULL;
    if (close == NULL) {
      out[o++] = *p++;
      continue;
    }
    o += (size_t)snprintf(out + o, sizeof out - o, "%c...%c", q, q);
    p = close + 1;
  }
  out[o] = '\0';
  snprintf(msg, msglen, "%s", out);
}

/* A whole body (or an imported file's copy) in the file fd at path: parsed
 * from its mapping into a payload file, and stored from there; fd is closed
 * and path removed. `what` names it in a 400; `unquote` keeps the file's
 * bytes out of the sentences (an import). */
static void parse_spooled(request *r, int fd, const char *path, int write_errno,
                          histd_format fmt, const histd_sky_options *sky, const char *name,
                          const char *what, size_t bytes, bool unquote) {
  service *svc = r->svc;
  char msg[512] = "", tmp[4400];
  struct stat sb;
  void *map = NULL;
  int rc = 0;
  if (write_errno != 0)
    rc = histd_fail(msg, sizeof msg, HISTD_EIO, "the body could not be written to disk: %s",
                    strerror(write_errno));
  else if (fstat(fd, &sb) != 0 ||
           (sb.st_size > 0 &&
            (map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0)) == MAP_FAILED))
    rc = histd_fail(msg, sizeof msg, HISTD_EIO, "the spooled body cannot be read: %s",
                    strerror(errno));
  if (map == MAP_FAILED)
    map = NULL;
  int pfd = -1;
  if (rc == 0)
    rc = store_temp_payload(svc->store, tmp, sizeof tmp, &pfd, msg, sizeof msg);
  histd_dataset ds;
  memset(&ds, 0, sizeof ds);
  if (rc == 0) {
    if (map != NULL)
      madvise(map, (size_t)sb.st_size, MADV_SEQUENTIAL);
    rc = histd_parse_to_fd_with(fmt, map ? map : "", map ? (size_t)sb.st_size : 0,
                                svc->cfg.max_points, sky, pfd, &ds, msg, sizeof msg);
  }
  if (map != NULL)
    munmap(map, (size_t)sb.st_size);
  close(fd);
  unlink(path);
  if (pfd < 0) { /* the spool or the payload's temp file failed */
    respond_problem(r, 500, "%s", msg);
    return;
  }
  if (rc == HISTD_EIO) { /* the payload file could not be mapped */
    close(pfd);
    unlink(tmp);
    respond_problem(r, 500, "%s", msg);
    return;
  }
  if (unquote)
    unquote_input(msg, sizeof msg);
  store_parsed(r, rc, &ds, fmt, name, what, bytes, tmp, pfd, msg, sizeof msg);
  close(pfd);
}

/* The end of a spooled body. */
static void finish_spool(request *r, histd_format fmt, const char *name) {
  char what[64];
  snprintf(what, sizeof what, "the %s body", histd_format_name(fmt));
  r->spooling = false;
  histd_sky_options sky;
  bool growing;
  (void)upload_growing(r, &growing); /* (both checked at the headers) */
  if (!upload_sky(r, fmt, growing, &sky)) { /* (checked at the headers; the dataset it
                                            * follows may have gone since) */
    close(r->spool_fd);
    unlink(r->spool_path);
    return;
  }
  parse_spooled(r, r->spool_fd, r->spool_path, r->spool_errno, fmt, &sky, name, what,
                r->content_length, false);
  upload_sky_free(&sky);
}

int route_datasets_stream(request *r, unsigned long long content_length) {
  histd_format fmt;
  if (request_query(r, "path") != NULL)
    return 0; /* an import: route_datasets_create answers */
  double expires;
  bool growing;
  histd_sky_options sky;
  if (!upload_format(r, &fmt) || !upload_expiry(r, &expires) || !upload_growing(r, &growing) ||
      !upload_sky(r, fmt, growing, &sky))
    return -1;
  upload_sky_free(&sky); /* (checked; the parse asks again) */
  const char *name = request_query(r, "name");
  if (name != NULL && (strlen(name) > 255 || !utf8_valid(name)))
    return 0; /* the buffered path says what is wrong */
  if (content_length >= SPOOL_MIN_BYTES &&
      (fmt != HISTD_FORMAT_F64 || content_length % 24 != 0))
    return start_spool(r, content_length);
  if (fmt != HISTD_FORMAT_F64 || content_length == 0 || content_length % 24 != 0)
    return 0; /* the buffered path says what is wrong, if anything */
  unsigned long long n = content_length / 24;
  if (n > r->svc->cfg.max_points) {
    respond_problem(r, 413, "the body holds %llu points, more than the limit of %zu points "
                            "(--max-points)", n, r->svc->cfg.max_points);
    return -1;
  }
  if (!disk_room(r, n * 24))
    return -1;
  char msg[256] = "";
  r->stream = upload_stream_open(r->svc, (size_t)n, msg, sizeof msg);
  if (r->stream == NULL && msg[0] != '\0') {
    respond_problem(r, 500, "%s", msg);
    return -1;
  }
  return r->stream != NULL;
}

static void finish_stream(request *r) {
  upload_stream *u = r->stream;
  r->stream = NULL;
  dataset_meta meta;
  bool created = false;
  char msg[512] = "";
  bool growing;
  (void)upload_growing(r, &growing); /* (checked at the headers) */
  unsigned status = upload_stream_finish(u, request_query(r, "name"), upload_expires_at(r),
                                         growing, &meta, &created, msg, sizeof msg);
  if (status != 0) {
    if (status == 400)
      respond_problem(r, 400, "the f64 body could not be read: %s", msg);
    else
      respond_problem(r, status, "the dataset could not be stored: %s", msg);
    return;
  }
  answer_stored(r, &meta, created, r->content_length);
}

/* The end of every way in (a body, a spooled body, an import): the parse's
 * outcome answered, or the dataset stored and answered. `what` names the
 * input in a 400 ("the csv body", "the file run1/a.dcd"); bytes count in
 * the metrics. tmp (NULL: none) is the payload file a spooled body was
 * parsed into (histd_parse_to_fd, open as tmp_fd): ds's points are its, it
 * is stored from there, and removed when it is not. Releases ds. */
static void store_parsed(request *r, int rc, histd_dataset *ds, histd_format fmt,
                         const char *name, const char *what, size_t bytes, const char *tmp,
                         int tmp_fd, char *msg, size_t msglen) {
  service *svc = r->svc;
  void (*release)(histd_dataset *) = tmp ? histd_parse_unmap : histd_dataset_free;
  if (rc == HISTD_ETOOBIG) { /* (the io layer has checked the points and set the bounds) */
    respond_problem(r, 413, "%s (the limit is %zu points, --max-points)", msg,
                    svc->cfg.max_points);
    goto drop;
  }
  if (rc == HISTD_ENOMEM) {
    respond_problem(r, 503, "%s", msg);
    goto drop;
  }
  if (rc != 0) {
    respond_problem(r, 400, "%s could not be read: %s", what, msg[0] ? msg : histd_strerror(rc));
    goto drop;
  }
  if (ds->n > svc->cfg.max_points) {
    respond_problem(r, 413, "%s has more than the limit of %zu points (--max-points)", what,
                    svc->cfg.max_points);
    goto drop;
  }
  bool growing;
  if (!upload_growing(r, &growing) || (growing && !frames_alike(r, ds, what)))
    goto drop;
  dataset_meta shape;
  size_t tail_len;
  dataset_tail(ds, &shape, NULL, &tail_len, NULL, 0);
  if (!disk_room(r, dataset_payload_bytes(&shape))) /* (it answered 507) */
    goto drop;
  dataset_meta meta;
  bool created = false;
  const double expires_at = upload_expires_at(r);
  rc = tmp != NULL ? store_put_parsed_file(svc->store, tmp, tmp_fd, ds, histd_format_name(fmt),
                                           name, expires_at, growing, &meta, &created, msg,
                                           msglen)
                   : store_put_dataset(svc->store, ds, histd_format_name(fmt), name, expires_at,
                                       growing, &meta, &created, msg, msglen);
  release(ds);
  if (rc != 0) {
    respond_problem(r, 500, "the dataset could not be stored: %s", msg);
    return;
  }
  answer_stored(r, &meta, created, bytes);
  return;
drop:
  release(ds);
  if (tmp != NULL)
    unlink(tmp);
}

/*
 * An import by reference: ?path=REL names a file under --import-dir (and
 * nowhere else). Whoever can write in the import dir may change it while
 * histd reads it: swap a directory on the path for a symlink that leads out
 * (renameat2), a regular file for a FIFO, or truncate the file under a
 * mapping. So the file is opened once, by the kernel, beneath the directory
 * (open_beneath), its type checked on that descriptor (regular files only),
 * and its bytes copied from that descriptor into a temp file in the data
 * dir, which is parsed and stored like a spooled body: the daemon never
 * opens a path twice, never blocks on a FIFO, and never maps a file that
 * another user can shorten (a mapping past a file's end is SIGBUS). The
 * copy costs the file's size in the data dir while it is parsed (a reflink,
 * free, where the filesystem can); its format comes from ?format= or its
 * name. A 400 about its contents never quotes them (unquote_input).
 */

/* rel opened for reading beneath the directory dir, in one step: the kernel
 * resolves every component under dir (openat2's RESOLVE_BENEATH: no
 * absolute path, no ".." above dir, no symlink that leads out of it, no
 * /proc magic link), so no component can be swapped between a check and
 * the open. O_NONBLOCK: a FIFO or a device opens at once, to be refused by
 * its type. Where openat2 is missing (Linux before 5.6: ENOSYS; a seccomp
 * filter that does not know it: EPERM), one openat per component, each
 * O_NOFOLLOW, so a symlink anywhere on the path is refused (ELOOP). The
 * descriptor, or -errno. */
static int open_beneath(int dir, const char *rel) {
  const int flags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
  struct open_how how = {.flags = (uint64_t)flags,
                         .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS};
  long got;
  int tries = 0; /* EAGAIN: a rename raced with a ".." in a symlink; the kernel asks to retry */
  while ((got = syscall(SYS_openat2, dir, rel, &how, sizeof how)) < 0 && errno == EAGAIN &&
         ++tries < 8)
    ;
  if (got >= 0)
    return (int)got;
  if (errno != ENOSYS && errno != EPERM)
    return -errno;
  char path[1100];
  if (strlen(rel) >= sizeof path)
    return -ENAMETOOLONG;
  strcpy(path, rel);
  int cur = dir, err = 0;
  char *save = NULL;
  for (char *comp = strtok_r(path, "/", &save); comp != NULL && err == 0;) {
    char *next = strtok_r(NULL, "/", &save);
    int fd = strcmp(comp, "..") == 0 ? (errno = EXDEV, -1)
             : next != NULL          ? openat(cur, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC)
                                     : openat(cur, comp, flags | O_NOFOLLOW);
    err = fd < 0 ? errno : 0;
    struct stat st;
    if (fd >= 0 && next != NULL && (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode))) {
      err = S_ISLNK(st.st_mode) ? ELOOP : ENOTDIR; /* a directory on the path, or nothing */
      close(fd);
    }
    if (cur != dir)
      close(cur);
    cur = err == 0 ? fd : dir;
    comp = next;
  }
  return err != 0 ? -err : cur == dir ? -EISDIR : cur;
}

/* The first len bytes of src (read from its start) into dst: in the kernel
 * (copy_file_range, a reflink where the filesystem can), else through a
 * buffer. 0, an errno, or ENODATA when src ends early (it shrank). */
static int copy_file(int src, int dst, off_t len) {
  bool kernel = true;
  char buf[1 << 16];
  while (len > 0) {
    size_t want = kernel || len < (off_t)sizeof buf ? (size_t)len : sizeof buf;
    ssize_t n = kernel ? copy_file_range(src, NULL, dst, NULL, want, 0) : read(src, buf, want);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && kernel && (errno == EXDEV || errno == EINVAL || errno == ENOSYS ||
                            errno == EOPNOTSUPP || errno == EPERM)) {
      kernel = false; /* (nothing was copied by the failed call) */
      continue;
    }
    if (n < 0)
      return errno;
    if (n == 0)
      return ENODATA;
    for (ssize_t w = 0; !kernel && w < n;) {
      ssize_t k = write(dst, buf + w, (size_t)(n - w));
      if (k < 0 && errno != EINTR)
        return errno;
      w += k > 0 ? k : 0;
    }
    len -= n;
  }
  return 0;
}

static void import_dataset(request *r, const char *path, const char *name) {
  service *svc = r->svc;
  if (svc->cfg.import_dir[0] == '\0') {
    respond_problem(r, 403, "imports by path are off: start histd with --import-dir DIR to "
                            "let it read the files under DIR");
    return;
  }
  if (r->body_len > 0) {
    respond_problem(r, 400, "an import by path takes no body (send the file, or its path)");
    return;
  }
  bool dotdot = strcmp(path, "..") == 0 || strncmp(path, "../", 3) == 0 ||
                strstr(path, "/../") != NULL ||
                (strlen(path) >= 3 && strcmp(path + strlen(path) - 3, "/..") == 0);
  if (path[0] == '\0' || path[0] == '/' || dotdot || strlen(path) > 1024) {
    respond_problem(r, 403, "path must be relative to the import dir, without \"..\": got "
                            "\"%.200s\"", path);
    return;
  }
  int dir = open(svc->cfg.import_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) {
    respond_problem(r, 500, "the import dir %s cannot be opened: %s", svc->cfg.import_dir,
                    strerror(errno));
    return;
  }
  int fd = open_beneath(dir, path);
  close(dir);
  if (fd < 0) {
    int e = -fd;
    if (e == ENOENT || e == ENOTDIR)
      respond_problem(r, 404, "no file \"%.200s\" under the import dir (%s)", path, strerror(e));
    else if (e == EXDEV || e == ELOOP)
      respond_problem(r, 403, "\"%.200s\" leads out of the import dir, or through a symbolic "
                              "link histd does not follow", path);
    else if (e == EACCES)
      respond_problem(r, 403, "\"%.200s\" cannot be read by the daemon (%s)", path, strerror(e));
    else if (e == EAGAIN)
      respond_problem(r, 409, "the import dir kept changing while \"%.200s\" was opened; try "
                              "again", path);
    else if (e == ENXIO || e == EISDIR)
      respond_problem(r, 400, "\"%.200s\" is not a regular file", path);
    else
      respond_problem(r, 400, "\"%.200s\" cannot be opened: %s", path, strerror(e));
    return;
  }
  struct stat sb;
  histd_format fmt;
  histd_sky_options sky;
  memset(&sky, 0, sizeof sky);
  bool growing;
  (void)upload_growing(r, &growing); /* (checked by the caller) */
  const char *fq = request_query(r, "format");
  char msg[512] = "", what[300], tmp[4400];
  int tfd = -1;
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    respond_problem(r, 400, "\"%.200s\" is not a regular file", path);
  } else if (fq != NULL ? histd_format_parse(fq, &fmt) != 0
                        : histd_format_from_path(path, &fmt) != 0) {
    respond_problem(r, 400, "cannot tell the format of \"%.200s\": name it with ?format=", path);
  } else if (!upload_sky(r, fmt, growing, &sky)) {
    /* (answered) */
  } else if (disk_room(r, (unsigned long long)sb.st_size) && /* (else it answered 507) */
             store_temp_payload(svc->store, tmp, sizeof tmp, &tfd, msg, sizeof msg) != 0) {
    respond_problem(r, 500, "%s", msg);
  } else if (tfd >= 0) {
    int e = copy_file(fd, tfd, sb.st_size);
    if (e != 0) {
      respond_problem(r, e == ENODATA ? 409 : 500, "\"%.200s\" could not be read: %s", path,
                      e == ENODATA ? "it grew shorter while it was read" : strerror(e));
      close(tfd);
      unlink(tmp);
      tfd = -1;
    }
  }
  close(fd);
  if (tfd < 0) {
    upload_sky_free(&sky); /* (zeroed where upload_sky did not run) */
    return;
  }
  snprintf(what, sizeof what, "the file %.200s", path);
  parse_spooled(r, tfd, tmp, 0, fmt, &sky, name ? name : path, what, (size_t)sb.st_size, true);
  upload_sky_free(&sky);
}

/* What a buffered body holds: its format (?format= or Content-Type), and
 * its points parsed into ds, rc the io layer's answer (msg its sentence),
 * the body's memory given back before anything is written; `what` names
 * it ("the csv body"). False when answered (no format). */
typedef struct body_points {
  histd_format fmt;
  histd_dataset ds;
  int rc;
  size_t bytes;
  char what[64];
  char msg[512];
} body_points;

static bool parse_body(request *r, body_points *b) {
  memset(b, 0, sizeof *b);
  if (!upload_format(r, &b->fmt))
    return false;
  b->bytes = r->body_len;
  snprintf(b->what, sizeof b->what, "the %s body", histd_format_name(b->fmt));
  histd_sky_options sky;
  bool growing;
  (void)upload_growing(r, &growing); /* (checked by the caller) */
  if (!upload_sky(r, b->fmt, growing, &sky))
    return false;
  b->rc = histd_parse_with(b->fmt, r->body ? r->body : "", r->body_len, r->svc->cfg.max_points,
                           &sky, &b->ds, b->msg, sizeof b->msg);
  upload_sky_free(&sky);
  free(r->body);
  r->body = NULL;
  r->body_len = 0;
  return true;
}

void route_datasets_create(request *r) {
  if (r->stream != NULL) {
    finish_stream(r);
    return;
  }
  if (r->spooling) {
    histd_format fmt;
    if (upload_format(r, &fmt))
      finish_spool(r, fmt, request_query(r, "name"));
    else {
      close(r->spool_fd);
      unlink(r->spool_path);
      r->spooling = false;
    }
    return;
  }
  const char *name = request_query(r, "name");
  double expires;
  bool growing;
  if (!upload_expiry(r, &expires) || !upload_growing(r, &growing))
    return;
  if (name != NULL && strlen(name) > 255) {
    respond_problem(r, 400, "name is longer than 255 bytes");
    return;
  }
  if (name != NULL && !utf8_valid(name)) {
    respond_problem(r, 400, "name is not valid UTF-8");
    return;
  }
  const char *path = request_query(r, "path");
  if (path != NULL) {
    import_dataset(r, path, name);
    return;
  }
  body_points b;
  if (parse_body(r, &b))
    store_parsed(r, b.rc, &b.ds, b.fmt, name, b.what, b.bytes, NULL, -1, b.msg, sizeof b.msg);
}

static bool add_dataset(const dataset_meta *m, void *u) {
  cJSON_AddItemToArray(u, dataset_to_json(m));
  return true;
}

static bool parse_limit(request *r, size_t *limit, size_t dflt, size_t max) {
  const char *l = request_query(r, "limit");
  *limit = dflt;
  if (l == NULL)
    return true;
  char *end;
  errno = 0;
  long v = strtol(l, &end, 10);
  if (end == l || *end != '\0' || errno != 0 || v < 1 || (unsigned long)v > max) {
    respond_problem(r, 400, "limit must be a whole number from 1 to %zu, got \"%s\"", max, l);
    return false;
  }
  *limit = (size_t)v;
  return true;
}

void route_datasets_list(request *r) {
  size_t limit;
  if (!parse_limit(r, &limit, 1000, 100000))
    return;
  cJSON *o = cJSON_CreateObject();
  cJSON *arr = cJSON_AddArrayToObject(o, "datasets");
  if (backend_dataset_list(&r->svc->backend, limit, add_dataset, arr) != 0) {
    cJSON_Delete(o);
    respond_problem(r, 500, "the datasets could not be listed");
    return;
  }
  respond_json(r, 200, o);
}

void route_datasets_get(request *r) {
  dataset_meta m;
  if (!valid_dataset_id(r->path_id) ||
      backend_dataset_find(&r->svc->backend, r->path_id, &m) != 0) {
    respond_problem(r, 404, "no dataset has the id \"%s\"", r->path_id);
    return;
  }
  respond_json(r, 200, dataset_to_json(&m));
}

int datasets_delete_unused(service *svc, const char *id, size_t *active, char *msg,
                           size_t msglen) {
  pthread_rwlock_wrlock(&svc->datasets_lock);
  *active = jobs_active_on(svc->jobs, id);
  int rc = *active > 0 ? HISTD_EINVAL : backend_dataset_delete(&svc->backend, id, msg, msglen);
  pthread_rwlock_unlock(&svc->datasets_lock);
  if (rc == 0)
    dataset_cache_forget(svc->cache, id);
  return rc;
}

void route_datasets_delete(request *r) {
  service *svc = r->svc;
  if (!valid_dataset_id(r->path_id)) {
    respond_problem(r, 404, "no dataset has the id \"%s\"", r->path_id);
    return;
  }
  char msg[256];
  size_t active;
  int rc = datasets_delete_unused(svc, r->path_id, &active, msg, sizeof msg);
  if (active > 0) {
    respond_problem(r, 409, "%zu queued or running job(s) use this dataset (as dataset, "
                            "dataset_b or topology); cancel them (DELETE /v1/jobs/{id}) before "
                            "deleting it", active);
    return;
  }
  if (rc == HISTD_ENOENT) {
    respond_problem(r, 404, "no dataset has the id \"%s\"", r->path_id);
    return;
  }
  if (rc != 0) {
    respond_problem(r, 500, "the dataset could not be deleted: %s", msg);
    return;
  }
  respond_empty(r, 204);
}

/* ---- a growing dataset: POST /v1/datasets/{id}/frames and /seal ---------------------------- */

/* The growing dataset of the path, or false once answered: 501 in cluster
 * mode, 404, 409 when it does not grow or is sealed (`sealed_ok`: a seal
 * again is no error). */
static bool growing_dataset(request *r, dataset_meta *m, bool sealed_ok) {
  if (r->svc->cfg.coordinator[0] != '\0') {
    respond_problem(r, 501, "growing datasets are not available in cluster mode "
                            "(--coordinator) yet");
    return false;
  }
  if (!valid_dataset_id(r->path_id) ||
      backend_dataset_find(&r->svc->backend, r->path_id, m) != 0) {
    respond_problem(r, 404, "no dataset has the id \"%s\"", r->path_id);
    return false;
  }
  if (!m->growing) {
    respond_problem(r, 409, "dataset %s was not uploaded with ?growing=true: its id is the "
                            "hash of its points, which an identical upload shares, so it takes "
                            "no frames; upload the first frames with POST "
                            "/v1/datasets?growing=true and append to that", m->id);
    return false;
  }
  if (m->sealed && !sealed_ok) {
    respond_problem(r, 409, "dataset %s is sealed (POST /v1/datasets/{id}/seal): it takes no "
                            "more frames", m->id);
    return false;
  }
  return true;
}

/* Whether the frames of ds fit the growing dataset m: its atoms a frame,
 * weights, open or periodic boxes and unit; its atoms' names, where both
 * the body and the dataset (base, its first frames) name them. Else
 * answered 422. */
static bool frames_fit(request *r, const dataset_meta *m, const histd_dataset *ds,
                       const histd_dataset *base, const char *what) {
  const size_t atoms = m->n / (m->frames ? m->frames : 1);
  const size_t frames = histd_dataset_frames(ds);
  const bool periodic = m->box.kind != HISTD_BOX_NONE;
  for (size_t f = 0; f < frames; f++) {
    const histd_frame one = {0, ds->n, ds->box};
    const histd_frame *fr = ds->frame != NULL ? &ds->frame[f] : &one;
    if (fr->n != atoms) {
      respond_problem(r, 422, "frame %zu of %s holds %zu points, and dataset %s's frames hold "
                              "%zu atoms each: an appended frame is the same atoms",
                      f + 1, what, fr->n, m->id, atoms);
      return false;
    }
    if ((fr->box.kind != HISTD_BOX_NONE) != periodic) {
      respond_problem(r, 422, "frame %zu of %s %s, and dataset %s's frames %s", f + 1, what,
                      periodic ? "has no periodic box" : "has a periodic box", m->id,
                      periodic ? "have one" : "are in open space");
      return false;
    }
  }
  if ((ds->w != NULL) != m->weighted) {
    respond_problem(r, 422, "%s %s weights, and dataset %s %s: an appended frame carries what "
                            "the dataset's frames carry", what, ds->w ? "carries" : "has no",
                    m->id, m->weighted ? "has them" : "has none");
    return false;
  }
  if (ds->unit[0] != '\0' && m->unit[0] != '\0' && strcmp(ds->unit, m->unit) != 0) {
    respond_problem(r, 422, "%s is in %s (its format's unit), and dataset %s in %s: append "
                            "frames in the dataset's unit", what, ds->unit, m->id, m->unit);
    return false;
  }
  const histd_topology *t = ds->top, *b = base ? base->top : NULL;
  if (t != NULL && b != NULL && t->atoms == b->atoms) {
    const struct {
      const void *mine, *theirs;
      const char *name;
    } arrays[] = {{t->name, b->name, "name"}, {t->element, b->element, "element"},
                  {t->resname, b->resname, "residue name"}};
    for (size_t k = 0; k < sizeof arrays / sizeof arrays[0]; k++) {
      if (arrays[k].mine == NULL || arrays[k].theirs == NULL)
        continue;
      for (size_t i = 0; i < t->atoms; i++) {
        const char *x = (const char *)arrays[k].mine + i * HISTD_ATOM_STR;
        const char *y = (const char *)arrays[k].theirs + i * HISTD_ATOM_STR;
        if (memcmp(x, y, HISTD_ATOM_STR) != 0) {
          respond_problem(r, 422, "atom %zu of %s has the %s \"%.8s\", and dataset %s's atom "
                                  "%zu \"%.8s\": an appended frame lists the dataset's atoms "
                                  "in their order", i + 1, what, arrays[k].name, x, m->id, i + 1, y);
          return false;
        }
      }
    }
  }
  return true;
}

/* The store's answer to an append or a seal: 404 (no such dataset), 409
 * (its sentence: not growing, sealed, ?at= off), else 500 after `what`. */
static void respond_store_refusal(request *r, int rc, const char *what, const char *msg) {
  if (rc == HISTD_ENOENT || rc == HISTD_EINVAL)
    respond_problem(r, rc == HISTD_ENOENT ? 404 : 409, "%s", msg);
  else
    respond_problem(r, 500, "%s: %s", what, msg);
}

void route_datasets_frames(request *r) {
  service *svc = r->svc;
  dataset_meta m;
  if (!growing_dataset(r, &m, false))
    return;
  const char *a = request_query(r, "at");
  long long at = -1;
  if (a != NULL) {
    char *end;
    errno = 0;
    at = strtoll(a, &end, 10);
    if (end == a || *end != '\0' || errno != 0 || at < 0) {
      respond_problem(r, 400, "at must be the frame the body's frames start at (the dataset's "
                              "frame count, a whole number from 0), got \"%.100s\"", a);
      return;
    }
  }
  body_points bp;
  if (!parse_body(r, &bp))
    return;
  histd_dataset ds = bp.ds;
  const size_t body_len = bp.bytes;
  const char *what = bp.what;
  char *msg = bp.msg;
  int rc = bp.rc;
  if (rc == HISTD_ETOOBIG || (rc == 0 && m.n + ds.n > svc->cfg.max_points)) {
    respond_problem(r, 413, "dataset %s would hold %zu points and more with these frames, past "
                            "the limit of %zu points (--max-points)", m.id,
                    m.n + (rc == 0 ? ds.n : 0), svc->cfg.max_points);
    histd_dataset_free(&ds);
    return;
  }
  if (rc != 0) {
    respond_problem(r, rc == HISTD_ENOMEM ? 503 : 400, "%s could not be read: %s", what,
                    msg[0] ? msg : histd_strerror(rc));
    histd_dataset_free(&ds);
    return;
  }
  if (ds.sky != NULL) {
    respond_problem(r, 400, "%s is a sky catalogue, and a growing dataset's frames are points: "
                            "append frames in a format of points", what);
    histd_dataset_free(&ds);
    return;
  }
  /* the dataset's first frames: their atoms' names, which every segment keeps */
  loaded_dataset *base = NULL;
  if (m.topology != 0 &&
      dataset_acquire_segment(svc->cache, m.id, 0, &base, msg, sizeof bp.msg) != 0) {
    respond_problem(r, 500, "dataset %s's first frames cannot be read: %s", m.id, msg);
    histd_dataset_free(&ds);
    return;
  }
  const histd_dataset *b = base ? loaded_dataset_points(base) : NULL;
  bool fit = frames_fit(r, &m, &ds, b, what);
  histd_topology_free(ds.top);
  ds.top = NULL;
  if (fit && b != NULL && b->top != NULL &&
      (rc = dataset_copy_topology(&ds, b->top, msg, sizeof bp.msg)) != 0) {
    respond_problem(r, 503, "%s", msg);
    fit = false;
  }
  dataset_release(svc->cache, base);
  dataset_meta shape;
  size_t tail_len;
  if (fit)
    dataset_tail(&ds, &shape, NULL, &tail_len, NULL, 0);
  if (!fit || !disk_room(r, dataset_payload_bytes(&shape))) {
    histd_dataset_free(&ds);
    return;
  }
  bool appended = false;
  rc = store_append_frames(svc->store, m.id, &ds, at, &m, &appended, msg, sizeof bp.msg);
  histd_dataset_free(&ds);
  if (rc != 0) {
    respond_store_refusal(r, rc, "the frames could not be stored", msg);
    return;
  }
  if (appended) {
    atomic_fetch_add(&svc->metrics.upload_bytes, body_len);
    jobs_dataset_grew(svc->jobs, m.id);
  }
  respond_json(r, 200, dataset_to_json(&m));
}

void route_datasets_seal(request *r) {
  service *svc = r->svc;
  dataset_meta m;
  if (!growing_dataset(r, &m, true))
    return;
  char msg[512];
  int rc = store_seal_dataset(svc->store, m.id, &m, msg, sizeof msg);
  if (rc != 0) {
    respond_store_refusal(r, rc, "the dataset could not be sealed", msg);
    return;
  }
  jobs_dataset_grew(svc->jobs, m.id);
  respond_json(r, 200, dataset_to_json(&m));
}
