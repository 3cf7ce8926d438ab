/*
 * config.c -- flags and environment variables -> struct config.
 *
 * Every setting has a default, an environment variable and a flag, and they
 * apply in that order (a flag beats the environment, which beats the
 * default), the way twelve-factor daemons in containers expect. One table
 * below lists them all; --help prints it, so the documentation cannot drift
 * from the code.
 *
 * Sizes accept k/M/G suffixes (powers of 1024), durations s/m/h/d. The listen address is
 * HOST:PORT, [IPv6]:PORT or just PORT; port 0 picks a free port, which the
 * daemon prints on stdout ("histd: listening on http://HOST:PORT") so tests
 * can find it without racing for a port. A --listen host beyond loopback
 * without --token is refused unless --allow-anonymous says so.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "guard.h"
#include "http.h"

#ifndef HISTD_STATIC_DIR
#define HISTD_STATIC_DIR "/usr/local/share/histd/dashboard"
#endif
#ifndef HISTD_SOURCE_STATIC_DIR
#define HISTD_SOURCE_STATIC_DIR ""
#endif

enum kind { K_STR, K_INT, K_SIZE, K_SECONDS, K_FLAG };

typedef struct setting {
  const char *flag;
  const char *env;
  enum kind kind;
  size_t offset, size;
  const char *help;
} setting;

#define F(field) offsetof(config, field), sizeof(((config *)0)->field)

static const setting settings[] = {
    {"listen", "HISTD_LISTEN", K_STR, 0, 0,
     "address to listen on, HOST:PORT (default 127.0.0.1:8080; port 0 = any)"},
    {"data-dir", "HISTD_DATA_DIR", K_STR, F(data_dir),
     "where datasets, results and the SQLite database live (default ./histd-data)"},
    {"workers", "HISTD_WORKERS", K_INT, F(workers),
     "job workers (default 0: one per GPU, or one CPU worker using every core)"},
    {"max-upload-bytes", "HISTD_MAX_UPLOAD_BYTES", K_SIZE, F(max_upload_bytes),
     "largest request body accepted, at most 1T (default 16G: bodies from 32M spool to disk)"},
    {"max-points", "HISTD_MAX_POINTS", K_SIZE, F(max_points),
     "most points in one dataset, every frame's together (default 20000000)"},
    {"max-sync-points", "HISTD_MAX_SYNC_POINTS", K_SIZE, F(max_sync_points),
     "most points POST /v1/histogram computes while the client waits (default 20000)"},
    {"queue-limit", "HISTD_QUEUE_LIMIT", K_SIZE, F(queue_limit),
     "most queued jobs before POST /v1/jobs answers 503 (default 1024)"},
    {"cors-origin", "HISTD_CORS_ORIGIN", K_STR, F(cors_origin),
     "origins allowed by CORS: comma-separated list, or * (default: none)"},
    {"token", "HISTD_TOKEN", K_STR, F(token),
     "when set, the API needs 'Authorization: Bearer TOKEN' (not /healthz)"},
    {"allow-anonymous", "HISTD_ALLOW_ANONYMOUS", K_FLAG, F(allow_anonymous),
     "allow listening beyond loopback without --token (refused at start otherwise)"},
    {"allowed-hosts", "HISTD_ALLOWED_HOSTS", K_STR, F(allowed_hosts),
     "more names the Host header may carry, comma-separated, beside loopback names and "
     "the --listen host (* = any; default: none)"},
    {"import-dir", "HISTD_IMPORT_DIR", K_STR, F(import_dir),
     "a directory whose files POST /v1/datasets?path=REL reads in place (default: none, "
     "imports off)"},
    {"static-dir", "HISTD_STATIC_DIR", K_STR, F(static_dir),
     "the dashboard's files, served at / (default: the installed copy)"},
    {"histogram-threads", "HISTD_HISTOGRAM_THREADS", K_INT, F(histogram_threads),
     "threads computing POST /v1/histogram (default 0: one per core)"},
    {"http-threads", "HISTD_HTTP_THREADS", K_INT, F(http_threads),
     "libmicrohttpd thread-pool size (default 0: 2 x cores, at least 4)"},
    {"connection-timeout", "HISTD_CONNECTION_TIMEOUT", K_INT, F(connection_timeout),
     "seconds an idle connection stays open (default 60)"},
    {"header-timeout", "HISTD_HEADER_TIMEOUT", K_SECONDS, F(header_timeout),
     "time a client has to send a whole request head, from the connection's opening or "
     "the end of its previous request (default 10s; 0 = no limit)"},
    {"min-body-rate", "HISTD_MIN_BODY_RATE", K_SIZE, F(min_body_rate),
     "slowest average, in bytes per second, at which a request body may arrive after its "
     "first second (default 1k; 0 = no minimum)"},
    {"body-timeout", "HISTD_BODY_TIMEOUT", K_SECONDS, F(body_timeout),
     "time a client has to send a whole request body, from the end of its head, however "
     "fast it comes (default 30m; 0 = no limit)"},
    {"connection-limit", "HISTD_CONNECTION_LIMIT", K_INT, F(connection_limit),
     "most open connections; at the limit a new one takes the place of the oldest waiting "
     "for a request head, else of the body arriving slowest (default 512)"},
    {"per-ip-connection-limit", "HISTD_PER_IP_CONNECTION_LIMIT", K_INT,
     F(per_ip_connection_limit),
     "most open connections from one address, room made the same way among them "
     "(default 128)"},
    {"connection-memory", "HISTD_CONNECTION_MEMORY", K_SIZE, F(connection_memory_limit),
     "per-connection buffer memory (default 128k)"},
    {"max-wait", "HISTD_MAX_WAIT", K_INT, F(max_wait),
     "cap, in seconds, of GET /v1/jobs/{id}?wait= (default 30)"},
    {"job-retention", "HISTD_JOB_RETENTION", K_SECONDS, F(job_retention),
     "how long finished jobs and their results are kept, e.g. 30d or 12h (default 0: for ever)"},
    {"max-job-attempts", "HISTD_MAX_JOB_ATTEMPTS", K_INT, F(max_job_attempts),
     "runs of a job during which the daemon died (a crash, kill -9) before the job fails "
     "instead of running again at the next start (default 3)"},
    {"max-data-bytes", "HISTD_MAX_DATA_BYTES", K_SIZE, F(max_data_bytes),
     "disk budget of the data dir (payloads, database); uploads and results past it are "
     "refused with 507 (default 0: none)"},
    {"max-result-bytes", "HISTD_MAX_RESULT_BYTES", K_SIZE, F(max_result_bytes),
     "most bytes one job's result may take stored; a job whose result could take more is "
     "refused with 422 (default 256M; 0: no limit)"},
    {"max-pairs-bytes", "HISTD_MAX_PAIRS_BYTES", K_SIZE, F(max_pairs_bytes),
     "most bytes one pair list (pairs_within) may take; a larger list fails before a pair is "
     "written, naming both sizes (default 4G; 0: no limit but --max-data-bytes)"},
    {"max-buffered-bytes", "HISTD_MAX_BUFFERED_BYTES", K_SIZE, F(max_buffered_bytes),
     "request bodies (as they arrive), large answers and results being read, held at once "
     "for all clients; beyond it 503 (default 1G; 0: no limit)"},
    {"access-log", "HISTD_ACCESS_LOG", K_FLAG, F(access_log),
     "log every request on stderr (method, path, status, bytes in, milliseconds)"},
    {"coordinator", "HISTD_COORDINATOR", K_STR, F(coordinator),
     "cluster mode: the PostgreSQL that coordinates the nodes, a libpq connection string or "
     "URI (default: none, one host with SQLite)"},
    {"shared-store", "HISTD_SHARED_STORE", K_STR, F(shared_store),
     "cluster mode: where the nodes share datasets, a directory every node mounts or "
     "s3://BUCKET/PREFIX (endpoint and keys from the AWS_ variables)"},
    {"lease", "HISTD_LEASE", K_SECONDS, F(lease),
     "cluster mode: how long a shard's claim lasts unless renewed, e.g. 30s (default 30s)"},
    {"node-name", "HISTD_NODE_NAME", K_STR, F(node_name),
     "cluster mode: this node's name in the coordinator (default host:port)"},
    {"shard-pairs", "HISTD_SHARD_PAIRS", K_SIZE, F(shard_pairs),
     "cluster mode: about how many pairs one shard compares (a grid job: its cells' "
     "neighbours only; default 20G)"},
    {"print-routes", NULL, K_FLAG, F(print_routes), "print the route table and exit"},
};
#define NSETTINGS (sizeof settings / sizeof settings[0])

static int parse_size(const char *s, size_t *out) {
  errno = 0;
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno != 0 || end == s || s[0] == '-')
    return -1;
  unsigned long long mul = 1;
  switch (tolower((unsigned char)*end)) {
  case 'k': mul = 1ull << 10; end++; break;
  case 'm': mul = 1ull << 20; end++; break;
  case 'g': mul = 1ull << 30; end++; break;
  case 't': mul = 1ull << 40; end++; break;
  default: break;
  }
  if (*end == 'b' || *end == 'B')
    end++;
  if (*end != '\0' || (v != 0 && mul > SIZE_MAX / v))
    return -1;
  *out = (size_t)(v * mul);
  return 0;
}

int config_parse_seconds(const char *s, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno != 0 || end == s || !(v >= 0))
    return -1;
  double mul = 1;
  switch (*end) {
  case 's': end++; break;
  case 'm': mul = 60; end++; break;
  case 'h': mul = 3600; end++; break;
  case 'd': mul = 86400; end++; break;
  default: break;
  }
  if (*end != '\0' || v * mul > 100.0 * 365 * 86400)
    return -1;
  *out = v * mul;
  return 0;
}

static int parse_listen(config *cfg, const char *s, char *msg, size_t msglen) {
  const char *colon = strrchr(s, ':');
  const char *host = s, *port = s;
  size_t hostlen = 0;
  if (colon == NULL) {
    host = "127.0.0.1";
    hostlen = strlen(host);
  } else {
    port = colon + 1;
    hostlen = (size_t)(colon - s);
    if (hostlen >= 2 && s[0] == '[' && s[hostlen - 1] == ']') {
      host = s + 1;
      hostlen -= 2;
    }
  }
  char *end;
  errno = 0;
  long p = strtol(port, &end, 10);
  if (errno != 0 || end == port || *end != '\0' || p < 0 || p > 65535)
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "--listen wants HOST:PORT with a port from 0 to 65535, got \"%s\"", s);
  if (hostlen == 0 || hostlen >= sizeof cfg->listen_host)
    return histd_fail(msg, msglen, HISTD_EINVAL, "--listen has no usable host in \"%s\"", s);
  memcpy(cfg->listen_host, host, hostlen);
  cfg->listen_host[hostlen] = '\0';
  cfg->listen_port = (uint16_t)p;
  return 0;
}

static int apply(config *cfg, const setting *st, const char *value, const char *from,
                 char *msg, size_t msglen) {
  char *field = (char *)cfg + st->offset;
  if (st->offset == 0 && st->size == 0)
    return parse_listen(cfg, value, msg, msglen);
  switch (st->kind) {
  case K_STR:
    if (strlen(value) >= st->size)
      return histd_fail(msg, msglen, HISTD_EINVAL, "%s is too long", from);
    strcpy(field, value);
    return 0;
  case K_INT: {
    char *end;
    errno = 0;
    long v = strtol(value, &end, 10);
    if (errno != 0 || end == value || *end != '\0' || v < 0 || v > 1000000)
      return histd_fail(msg, msglen, HISTD_EINVAL,
                        "%s wants a whole number from 0 to 1000000, got \"%s\"", from, value);
    if (st->size == sizeof(int))
      *(int *)field = (int)v;
    else
      *(unsigned *)field = (unsigned)v;
    return 0;
  }
  case K_SIZE: {
    size_t v;
    if (parse_size(value, &v) != 0)
      return histd_fail(msg, msglen, HISTD_EINVAL,
                        "%s wants a size such as 1048576 or 512M, got \"%s\"", from, value);
    *(size_t *)field = v;
    return 0;
  }
  case K_SECONDS: {
    double v;
    if (config_parse_seconds(value, &v) != 0)
      return histd_fail(msg, msglen, HISTD_EINVAL,
                        "%s wants a duration such as 3600, 90m, 12h or 30d, got \"%s\"", from,
                        value);
    *(double *)field = v;
    return 0;
  }
  case K_FLAG:
    *(bool *)field = true;
    return 0;
  }
  return 0;
}

static void usage(FILE *f) {
  fprintf(f, "usage: histd [options]\n\nhistd %s: spatial distance histograms over HTTP.\n\n",
          HISTD_VERSION);
  for (size_t i = 0; i < NSETTINGS; i++) {
    fprintf(f, "  --%-26s %s\n", settings[i].flag, settings[i].help);
    if (settings[i].env)
      fprintf(f, "  %-28s (env %s)\n", "", settings[i].env);
  }
  fprintf(f, "  --%-26s %s\n  --%-26s %s\n", "help", "this text", "version",
          "print the version");
}

int config_load(config *cfg, int argc, char **argv, char *msg, size_t msglen) {
  memset(cfg, 0, sizeof *cfg);
  strcpy(cfg->listen_host, "127.0.0.1");
  cfg->listen_port = 8080;
  strcpy(cfg->data_dir, "histd-data");
  cfg->max_upload_bytes = (size_t)16 << 30; /* trajectories; big bodies spool to disk */
  cfg->max_points = 20000000;
  cfg->max_sync_points = 20000;
  cfg->queue_limit = 1024;
  cfg->connection_timeout = 60;
  cfg->header_timeout = 10;
  cfg->body_timeout = 30 * 60;
  cfg->min_body_rate = 1024;
  cfg->connection_limit = 512;
  cfg->per_ip_connection_limit = 128;
  cfg->connection_memory_limit = 128 * 1024;
  cfg->max_wait = 30;
  cfg->max_job_attempts = 3;
  cfg->max_result_bytes = (size_t)256 << 20;
  cfg->max_pairs_bytes = (size_t)4 << 30;
  cfg->max_buffered_bytes = (size_t)1 << 30;
  /* The installed dashboard, else the source tree's copy (a build dir run). */
  if (access(HISTD_STATIC_DIR "/index.html", R_OK) == 0 || HISTD_SOURCE_STATIC_DIR[0] == '\0')
    snprintf(cfg->static_dir, sizeof cfg->static_dir, "%s", HISTD_STATIC_DIR);
  else
    snprintf(cfg->static_dir, sizeof cfg->static_dir, "%s", HISTD_SOURCE_STATIC_DIR);

  for (size_t i = 0; i < NSETTINGS; i++) {
    const char *v = settings[i].env ? getenv(settings[i].env) : NULL;
    if (settings[i].kind == K_FLAG && v != NULL && strcmp(v, "0") == 0)
      continue;
    if (v != NULL && v[0] != '\0') {
      int rc = apply(cfg, &settings[i], v, settings[i].env, msg, msglen);
      if (rc != 0)
        return -1;
    }
  }

  struct option opts[NSETTINGS + 3];
  for (size_t i = 0; i < NSETTINGS; i++)
    opts[i] = (struct option){settings[i].flag,
                              settings[i].kind == K_FLAG ? no_argument : required_argument,
                              NULL, (int)(1000 + i)};
  opts[NSETTINGS] = (struct option){"help", no_argument, NULL, 'h'};
  opts[NSETTINGS + 1] = (struct option){"version", no_argument, NULL, 'V'};
  opts[NSETTINGS + 2] = (struct option){NULL, 0, NULL, 0};
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "hV", opts, NULL)) != -1) {
    if (c == 'h') {
      usage(stdout);
      return 1;
    }
    if (c == 'V') {
      printf("histd %s\n", HISTD_VERSION);
      return 1;
    }
    if (c < 1000 || c >= 1000 + (int)NSETTINGS) {
      histd_fail(msg, msglen, HISTD_EINVAL, "unknown or incomplete option \"%s\" (see --help)",
                 argv[optind - 1]);
      return -1;
    }
    const setting *st = &settings[c - 1000];
    char from[64];
    snprintf(from, sizeof from, "--%s", st->flag);
    if (apply(cfg, st, optarg ? optarg : "", from, msg, msglen) != 0)
      return -1;
  }
  if (optind < argc) {
    histd_fail(msg, msglen, HISTD_EINVAL, "unexpected argument \"%s\" (see --help)", argv[optind]);
    return -1;
  }
  if (cfg->print_routes) {
    print_routes();
    return 1;
  }
  if (cfg->max_points == 0 || cfg->max_upload_bytes == 0 || cfg->queue_limit == 0 ||
      cfg->max_job_attempts == 0) {
    histd_fail(msg, msglen, HISTD_EINVAL, "--max-points, --max-upload-bytes, --queue-limit "
                                          "and --max-job-attempts must be positive");
    return -1;
  }
  /* Bounds that keep the daemon's size arithmetic (buffer doubling, the
   * drain allowance of twice the limit) far from wrapping. */
  if (cfg->max_upload_bytes > ((size_t)1 << 40)) {
    histd_fail(msg, msglen, HISTD_EINVAL, "--max-upload-bytes must be at most 1T, got %zu",
               cfg->max_upload_bytes);
    return -1;
  }
  /* Anyone who can reach the port could upload, compute and delete: beyond
   * loopback, that takes a token or an explicit choice to go without. */
  if (cfg->token[0] == '\0' && !cfg->allow_anonymous && !host_is_loopback(cfg->listen_host)) {
    histd_fail(msg, msglen, HISTD_EINVAL,
               "the listen host %s (--listen, HISTD_LISTEN) reaches beyond this machine and "
               "no --token is set, so anyone who can reach the port could upload, compute "
               "and delete; set --token (HISTD_TOKEN), listen on 127.0.0.1, or pass "
               "--allow-anonymous (HISTD_ALLOW_ANONYMOUS=1) to serve without one",
               cfg->listen_host);
    return -1;
  }
  /* A short token can be guessed: histd does not count wrong ones (the
   * proxy in front should), so it says so at start. */
  if (cfg->token[0] != '\0' && strlen(cfg->token) < 32)
    fprintf(stderr, "histd: warning: --token has %zu characters; a token of fewer than 32 "
                    "random characters can be guessed (openssl rand -hex 32 makes one)\n",
            strlen(cfg->token));
  if (cfg->connection_timeout == 0)
    cfg->connection_timeout = 60;
  if (cfg->max_wait <= 0)
    cfg->max_wait = 30;
  if (cfg->connection_memory_limit < 8192)
    cfg->connection_memory_limit = 8192;
  return 0;
}
