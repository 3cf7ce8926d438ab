/*
 * migrate.c -- `histd migrate`: the coordinator's schema, created or
 * upgraded, without starting a node.
 *
 * A node migrates the schema as it starts (cluster_open), which is enough
 * for one node; a fleet rolled out by a deployment wants the schema
 * current before any node of the new version takes work, so the upgrade
 * is also a step of its own: an init container or a job before the
 * rollout runs this and exits. It only connects and runs the migration
 * (cluster.c's, the same statements under the same lock), so a second
 * run, or a node starting at the same time, finds the schema current.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"

/* `histd migrate [--coordinator URL]`: the coordinator's schema, created or
 * upgraded (the daemon also does it as it starts). */
int migrate_main(int argc, char **argv) {
  const char *url = getenv("HISTD_COORDINATOR");
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--coordinator") == 0 && i + 1 < argc)
      url = argv[++i];
    else if (strncmp(argv[i], "--coordinator=", 14) == 0)
      url = argv[i] + 14;
    else {
      fprintf(stderr, "usage: histd migrate --coordinator URL (or HISTD_COORDINATOR)\n");
      return 2;
    }
  }
  if (url == NULL || !*url) {
    fprintf(stderr, "histd migrate: name the coordinator: --coordinator URL\n");
    return 2;
  }
  char msg[512];
  if (cluster_migrate(url, msg, sizeof msg) != 0) {
    fprintf(stderr, "histd migrate: %s\n", msg);
    return 1;
  }
  printf("histd migrate: the coordinator's schema is current\n");
  return 0;
}
