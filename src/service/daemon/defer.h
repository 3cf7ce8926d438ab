/*
 * defer.h -- handler steps that wait on the disk (defer.c), run on a
 * pool's threads while their connection is suspended.
 */
#ifndef HISTD_DEFER_H
#define HISTD_DEFER_H

#include <stdbool.h>
#include <stddef.h>

typedef struct defer_pool defer_pool;
int defer_pool_start(defer_pool **out, char *msg, size_t msglen);
/* Suspends conn and runs fn(arg) on a pool thread, then resumes conn (the
 * handler runs again with r->resumed). False when stopping or out of
 * memory: then the caller runs fn itself. */
struct MHD_Connection;
bool defer_submit(defer_pool *p, struct MHD_Connection *conn, void (*fn)(void *arg),
                  void *arg);
void defer_pool_stop(defer_pool *p); /* runs what is queued, joins */
void defer_pool_destroy(defer_pool *p);

#endif
