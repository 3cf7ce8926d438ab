/*
 * datasets.h -- loaded datasets (datasets.c): payloads mapped once and
 * shared by refcount between the jobs, shards and requests that read
 * them.
 */
#ifndef HISTD_DATASETS_H
#define HISTD_DATASETS_H

#include <stddef.h>
#include <stdint.h>

#include "histd/histd.h"
#include "store.h"

typedef struct loaded_dataset loaded_dataset;
typedef struct dataset_cache dataset_cache;

int dataset_cache_create(dataset_cache **out, store *s);
void dataset_cache_destroy(dataset_cache *c);
/* Maps the payload (once; later callers share it) and checks its size and
 * hash. The histd_dataset is borrowed from the mapping. */
int dataset_acquire(dataset_cache *c, const char *id, loaded_dataset **out,
                    char *msg, size_t msglen);
/* A payload that is not in the store: another node's, at path in the
 * cluster's shared store (or its sparse cache), as meta describes it;
 * mapped shared and not hashed whole (the S3 backend checks each block it
 * fetches). The caller makes the bytes it reads present first. */
int dataset_acquire_file(dataset_cache *c, const dataset_meta *meta, const char *path,
                         loaded_dataset **out, char *msg, size_t msglen);
/* A growing dataset's segment whose frames start at first_frame (a
 * following job reads the frames that came since its last update):
 * HISTD_ENOENT when no segment starts there. */
int dataset_acquire_segment(dataset_cache *c, const char *id, uint64_t first_frame,
                            loaded_dataset **out, char *msg, size_t msglen);
const histd_dataset *loaded_dataset_points(const loaded_dataset *d);
/* Gives ds (which has none) a copy of the topology t. */
int dataset_copy_topology(histd_dataset *ds, const histd_topology *t, char *msg,
                          size_t msglen);
void dataset_release(dataset_cache *c, loaded_dataset *d);
/* Forgets a deleted dataset's verification. */
void dataset_cache_forget(dataset_cache *c, const char *id);

#endif
