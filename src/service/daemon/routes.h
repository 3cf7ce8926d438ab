/*
 * routes.h -- the handlers of the route table (routes_datasets.c,
 * routes_jobs.c, routes_misc.c).
 */
#ifndef HISTD_ROUTES_H
#define HISTD_ROUTES_H

#include <cjson/cJSON.h>

#include "http.h"
#include "store.h"

/* The handlers (routes_*.c). */
void route_datasets_create(request *r);
/* At the headers of POST /v1/datasets: 1 = the body streams (r->stream)
 * or spools to a temp file (r->spooling), 0 = buffer it, -1 = answered. */
int route_datasets_stream(request *r, unsigned long long content_length);
/* A chunk of a spooled body (route_datasets_stream chose to spool it). */
void route_datasets_spool(request *r, const char *data, size_t len);
void route_datasets_list(request *r);
void route_datasets_get(request *r);
void route_datasets_delete(request *r);
void route_datasets_frames(request *r);
void route_datasets_seal(request *r);
void route_jobs_create(request *r);
void route_jobs_list(request *r);
void route_jobs_get(request *r);
void route_jobs_delete(request *r);
void route_jobs_result(request *r);
void route_jobs_result_delete(request *r);
void route_jobs_events(request *r);
void route_histogram(request *r);
void route_kernels(request *r);
void route_schema(request *r);
void route_devices(request *r);
void route_healthz(request *r);
void route_readyz(request *r);
void route_metrics(request *r);
void route_static(request *r);

/* JSON shapes shared by routes (routes_datasets.c, routes_jobs.c): a
 * dataset's document; a job's (summary: its result without arrays, as
 * lists and events show it). */
cJSON *dataset_to_json(const dataset_meta *m);
cJSON *job_to_json(const job_record *j, bool summary);

/* Deletes a dataset unless queued or running jobs use it (*active: how
 * many do; then nothing is deleted): DELETE /v1/datasets/{id} and the
 * sweep of expired datasets (daemon.c). 0, HISTD_ENOENT, or an error. */
struct service;
int datasets_delete_unused(struct service *svc, const char *id, size_t *active, char *msg,
                           size_t msglen);

#endif
