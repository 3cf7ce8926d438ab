/*
 * upload_stream.h -- raw float64 uploads written straight to a payload
 * file as they arrive (upload_stream.c), never held in memory.
 */
#ifndef HISTD_UPLOAD_STREAM_H
#define HISTD_UPLOAD_STREAM_H

#include <stdbool.h>
#include <stddef.h>

#include "store.h"

struct service;
typedef struct upload_stream upload_stream;
/* NULL (and msg empty) when the body should take the buffered path. */
upload_stream *upload_stream_open(struct service *svc, size_t n, char *msg, size_t msglen);
void upload_stream_write(upload_stream *u, const char *data, size_t len);
/* Stores the dataset; 0, or the HTTP status of the failure with msg. Frees u. */
unsigned upload_stream_finish(upload_stream *u, const char *name, double expires_at,
                              bool growing, dataset_meta *meta, bool *created, char *msg,
                              size_t msglen);
void upload_stream_abort(upload_stream *u); /* frees u, removes its temp file */

#endif
