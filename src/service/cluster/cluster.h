/*
 * cluster.h -- many histd nodes, one PostgreSQL (cluster.c): what the
 * rest of histd sees of the cluster. The daemon opens it as its backend
 * (backend.h) when --coordinator is given; `histd migrate` creates or
 * upgrades the coordinator's schema (migrate.c). Everything else (shards,
 * leases, the shared store, S3) stays inside cluster/, behind the backend.
 */
#ifndef HISTD_CLUSTER_H
#define HISTD_CLUSTER_H

#include <stddef.h>

#include "backend.h"

/* A node of the cluster whose coordinator is env->cfg->coordinator. */
int cluster_backend_open(backend *out, const backend_env *env, char *msg, size_t msglen);

/* Creates or upgrades the coordinator's schema. */
int cluster_migrate(const char *conninfo, char *msg, size_t msglen);
/* `histd migrate [--coordinator URL]` (migrate.c): cluster_migrate alone.
 * argv[0] is "migrate"; returns the exit status. */
int migrate_main(int argc, char **argv);

#endif
