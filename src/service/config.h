/*
 * config.h -- the daemon's settings: flags and environment variables read
 * once at startup into struct config (by daemon/config.c). Plain data, so
 * every part of the service can read the settings it needs (the backends
 * their own) without knowing where they came from.
 */
#ifndef HISTD_CONFIG_H
#define HISTD_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct config {
  char listen_host[256];
  uint16_t listen_port;        /* 0: any free port (printed at startup) */
  char data_dir[4096];
  int workers;                 /* 0: one per GPU, else one CPU worker */
  size_t max_upload_bytes;
  size_t max_points;
  size_t max_sync_points;      /* POST /v1/histogram */
  size_t queue_limit;
  char cors_origin[1024];      /* "" (off), "*", or "a,b,c" */
  char token[256];             /* "" (off) */
  bool allow_anonymous;        /* listen beyond loopback without a token */
  char allowed_hosts[1024];    /* more Host names, "a,b", or "*" */
  char static_dir[4096];
  char import_dir[4096];       /* "" (off): POST /v1/datasets?path= reads under it */
  int http_threads;
  int histogram_threads;       /* POST /v1/histogram's pool; 0: one per core */
  unsigned connection_timeout; /* seconds */
  double header_timeout;       /* seconds to send a request head; 0 = none */
  double body_timeout;         /* seconds to send a request body; 0 = none */
  size_t min_body_rate;        /* bytes per second; 0 = none */
  unsigned connection_limit;
  unsigned per_ip_connection_limit;
  size_t connection_memory_limit;
  int max_wait;                /* cap of ?wait= in seconds */
  double job_retention;        /* seconds a finished job is kept; 0 = for ever */
  int max_job_attempts;        /* runs of a job the daemon died during, at most */
  size_t max_data_bytes;       /* the data dir's disk budget; 0 = none */
  size_t max_result_bytes;     /* one job's stored result, at most; 0 = any */
  size_t max_pairs_bytes;      /* one job's pair list, at most; 0 = any      */
  size_t max_buffered_bytes;   /* request bodies and large answers held at once */
  bool print_routes;
  bool access_log;             /* one line per request on stderr */
  char coordinator[1024];      /* "" (one host), else PostgreSQL's conninfo */
  char shared_store[1024];     /* cluster: a directory or s3://BUCKET/PREFIX */
  double lease;                /* cluster: seconds a shard's claim lasts (0: 30) */
  char node_name[256];         /* cluster: "" -> host:port */
  size_t shard_pairs;          /* cluster: pairs per shard (0: 20G) */
} config;

/* Fills cfg from defaults, then the environment, then argv (daemon/config.c). Returns 0, 1 for
 * --help/--version/--print-routes handled (exit 0), or -1 with msg. */
int config_load(config *cfg, int argc, char **argv, char *msg, size_t msglen);
/* A duration, "90", "90s", "15m", "12h", "30d", into seconds: 0, or -1 when
 * malformed or out of range (0 to 100 years' worth of seconds). */
int config_parse_seconds(const char *s, double *out);

#endif
