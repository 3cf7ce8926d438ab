/*
 * main.c -- `histd`: one binary, three programs.
 *
 *   histd [flags]          the daemon (daemon/): the HTTP API on this host,
 *                          or a node of a cluster with --coordinator
 *   histd batch ...        a job cut into shards for a batch scheduler
 *                          (batch/): plan, run, merge, no daemon
 *   histd migrate ...      the cluster's schema, created or upgraded
 *                          (cluster/migrate.c)
 *
 * They share one binary so that a cluster, a batch array and a laptop run
 * the same build, and they share the layer below them in this folder: the
 * store, loaded datasets, binding a job to them, content hashes, JSON
 * helpers, and the jobs backend interface (backend.h) with its one-host
 * backend. Each program keeps its own files and private headers in its
 * folder; main.c knows each only by its entry point, and picks one by
 * argv[1] and nothing else.
 */
#include <string.h>

#include "batch/batch.h"
#include "cluster/cluster.h"
#include "daemon/daemon.h"

/* Subcommands: `histd NAME ...` runs one and exits; anything else is the daemon. */
static const struct {
  const char *name;
  int (*main)(int argc, char **argv);
} subcommands[] = {
    {"batch", batch_main},
    {"migrate", migrate_main},
};

int main(int argc, char **argv) {
  for (size_t i = 0; argc > 1 && i < sizeof subcommands / sizeof *subcommands; i++)
    if (strcmp(argv[1], subcommands[i].name) == 0)
      return subcommands[i].main(argc - 1, argv + 1);
  return daemon_main(argc, argv);
}
