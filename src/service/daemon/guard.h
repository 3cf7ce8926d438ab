/*
 * guard.h -- what every request must be (guard.c: its head, Host,
 * Origin, Content-Type) and which origins get CORS headers (cors.c).
 */
#ifndef HISTD_GUARD_H
#define HISTD_GUARD_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"

/* What every request must satisfy (guard.c); each returns 0, or a negative
 * HISTD_E* code with the HTTP status and a sentence. */
struct MHD_Connection;
int guard_head(struct MHD_Connection *conn, unsigned *status, char *msg, size_t msglen);
int guard_nul(bool nul_in_url, unsigned *status, char *msg, size_t msglen);
int guard_host(const config *cfg, const char *host, bool http11, unsigned *status, char *msg,
               size_t msglen);
int guard_origin(const config *cfg, const char *method, const char *origin, const char *host,
                 unsigned *status, char *msg, size_t msglen);
int guard_content_type(const char *content_type, bool uploads, bool format_given,
                       unsigned *status, char *msg, size_t msglen);
/* localhost, *.localhost, 127.0.0.0/8, ::1, or a name resolving only to them. */
bool host_is_loopback(const char *host);

/* CORS: the Access-Control-Allow-Origin value for this Origin, or NULL. */
const char *cors_allow_origin(const config *cfg, const char *origin);

#endif
