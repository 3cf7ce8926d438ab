/*
 * shards.h -- a problem run cut into at most `want` shards on the CPU
 * engine (2 threads), each shard on its own, checked and added up, as a
 * cluster's nodes and its merger do. The caller compares the sum with its
 * own definition. Needs check.h first.
 */
#ifndef HISTD_TEST_SHARDS_H
#define HISTD_TEST_SHARDS_H

#include <stdlib.h>
#include <string.h>

#include "histd/histd.h"

static inline int run_sharded(const histd_problem *p, const char *kernel, uint64_t want,
                       histd_result *r, const char *what) {
  histd_exec ex;
  histd_exec_init(&ex);
  snprintf(ex.kernel, sizeof ex.kernel, "%s", kernel);
  ex.threads = 2;
  histd_shard_plan plan;
  histd_shard_plan_make(p, kernel, want, &plan);
  char msg[256] = "";
  histd_worker *w;
  int rc = histd_worker_create(&w, -1, msg, sizeof msg);
  double *err = NULL;
  memset(r, 0, sizeof *r);
  for (uint64_t s = 0; rc == 0 && s < plan.count; s++) {
    histd_shard sh;
    histd_shard_get(&plan, s, &sh);
    histd_result part;
    rc = histd_worker_run_shard(w, p, &ex, &sh, NULL, &part, msg, sizeof msg);
    if (rc != 0)
      break;
    rc = histd_result_check(&part, &part.bins, histd_shard_pairs(p, &sh), msg, sizeof msg);
    if (rc == 0 && s == 0) {
      rc = histd_result_copy(r, &part);
      err = histd_result_add_errs(&part.bins);
    } else if (rc == 0) {
      rc = histd_result_add(r, err, &part, msg, sizeof msg);
    }
    histd_result_free(&part);
  }
  if (rc == 0)
    histd_result_add_done(r, err);
  else
    histd_result_free(r);
  free(err);
  histd_worker_destroy(w);
  CHECK(rc == 0, "%s, %s in %llu shards: %s", what, kernel, (unsigned long long)plan.count,
        msg);
  return rc;
}

#endif
