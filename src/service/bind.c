/*
 * bind.c -- a stored job bound to its loaded operands, for either backend.
 *
 * A job record names its datasets by id; the job layer (histd_job_bind)
 * wants their points. Both backends bind the same way -- A is the caller's
 * (already mapped, perhaps prefetched), B and the topology's dataset come
 * through a getter -- and differ only in where a dataset comes from: this
 * host's store (dataset_acquire, the default), or, on a cluster node, a
 * view of the shared store that fetches only the blocks a shard reads.
 * So the getter is the one thing a backend passes in, and the binding
 * holds what must be released after the run (B; the topology's dataset is
 * released at once, the job keeping a copy of its atoms).
 */
#include <string.h>

#include "bind.h"

static int from_store(void *u, const char *id, loaded_dataset **out, char *msg, size_t msglen) {
  return dataset_acquire(u, id, out, msg, msglen);
}

int job_bind(dataset_cache *cache, const job_record *rec, loaded_dataset *d, dataset_getter get,
             void *u, job_binding *b, char *msg, size_t msglen) {
  memset(b, 0, sizeof *b);
  int rc = 0;
  if (get == NULL) {
    get = from_store;
    u = cache;
  }
  loaded_dataset *dt = NULL;
  if (rec->dataset_b[0])
    rc = get(u, rec->dataset_b, &b->d_b, msg, msglen);
  if (rc == 0 && rec->params.topology[0] != '\0')
    rc = get(u, rec->params.topology, &dt, msg, msglen);
  if (rc == 0)
    rc = histd_job_bind(&b->job, &rec->params, loaded_dataset_points(d),
                        b->d_b ? loaded_dataset_points(b->d_b) : NULL,
                        dt ? loaded_dataset_points(dt) : NULL, msg, msglen);
  dataset_release(cache, dt); /* (the job keeps a copy of its atoms) */
  if (rc != 0) {
    dataset_release(cache, b->d_b);
    memset(b, 0, sizeof *b);
    return rc;
  }
  b->prob = b->job.problem;
  return 0;
}

void job_unbind(dataset_cache *cache, job_binding *b) {
  histd_job_free(&b->job);
  dataset_release(cache, b->d_b);
  memset(b, 0, sizeof *b);
}
