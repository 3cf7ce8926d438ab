/*
 * deadline.h -- slow clients (deadline.c): head and body deadlines,
 * connection limits.
 */
#ifndef HISTD_DEADLINE_H
#define HISTD_DEADLINE_H

#include <stdbool.h>
#include <stddef.h>

/* Watches every connection: a request head must arrive within
 * --header-timeout, a body at --min-body-rate and within --body-timeout;
 * one address holds at most --per-ip-connection-limit connections, all of
 * them --connection-limit, the least busy one making room at either limit.
 * The hooks run on libmicrohttpd's threads, the sweep on the loop. */
typedef struct deadlines deadlines;
struct MHD_Connection;
struct service;
int deadlines_create(deadlines **out, struct service *svc, char *msg, size_t msglen);
void deadlines_destroy(deadlines *d); /* after libmicrohttpd has stopped */
void deadlines_opened(deadlines *d, struct MHD_Connection *conn, void **socket_context);
void deadlines_closed(deadlines *d, void **socket_context);
void deadlines_request_line(deadlines *d, struct MHD_Connection *conn);
void deadlines_head_done(deadlines *d, struct MHD_Connection *conn, bool body_coming);
void deadlines_body(deadlines *d, struct MHD_Connection *conn, size_t bytes);
void deadlines_body_done(deadlines *d, struct MHD_Connection *conn);
void deadlines_request_done(deadlines *d, struct MHD_Connection *conn);
void deadlines_sweep(deadlines *d); /* closes the offenders */

#endif
