/*
 * deadline.c -- slow clients: time limits that libmicrohttpd's idle timeout
 * does not give.
 *
 * --connection-timeout is an idle timeout: every byte restarts it, so a
 * client that sends one byte a second holds a connection (and a slot of
 * --per-ip-connection-limit) for ever; a few hundred such clients hold
 * them all (slowloris). Here every connection is watched from its opening
 * (MHD_OPTION_NOTIFY_CONNECTION) to its closing:
 *
 *   - a request head must be complete --header-timeout after the
 *     connection opened or its previous request ended (a kept-alive
 *     connection that sends nothing more thus closes after it too);
 *   - a body must arrive at --min-body-rate bytes per second on average,
 *     counted from the end of the head, after a first second of grace.
 *
 * The libuv loop sweeps the watches ten times a second and closes an
 * offender with shutdown(2) on its socket: libmicrohttpd's thread then sees
 * the end of the stream and closes the connection as usual. A slow head
 * that had begun (the request line arrived, or it is the connection's
 * first) counts in histd_http_slow_clients_total{reason="header"}, a slow
 * body in {reason="body"}; an idle kept-alive connection is closed without
 * being counted.
 *
 * One address may hold --per-ip-connection-limit connections (histd
 * counts them here, in place of libmicrohttpd). When a new connection would
 * pass the limit, the address's oldest connection still waiting for a
 * request head makes room for it, so that one slow client cannot lock out
 * the honest requests coming from the same address (a NAT, a proxy, the
 * machine itself); when none waits, the new connection is closed.
 *
 * The socket is shut down under the same mutex that the close notification
 * takes before libmicrohttpd closes the descriptor, so it is never a
 * descriptor that has been reused.
 */
#include <microhttpd.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include "service.h"

#define BODY_GRACE_MS 1000.0

typedef struct conn_watch {
  struct conn_watch *prev, *next;
  int fd;
  struct sockaddr_storage addr; /* the client's address, port zeroed */
  double opened;     /* ms */
  double head_due;   /* ms; 0 = no head awaited */
  bool head_begun;   /* the awaited head is the connection's first, or has begun */
  double body_from;  /* ms; 0 = no body arriving */
  uint64_t body_bytes;
  bool closing;      /* shut down; waiting for libmicrohttpd to close it */
} conn_watch;

struct deadlines {
  service *svc;
  pthread_mutex_t mu;
  conn_watch list; /* sentinel of a circular list */
  double header_ms;
  double min_rate; /* bytes per second */
  unsigned per_ip;
};

int deadlines_create(deadlines **out, service *svc, char *msg, size_t msglen) {
  deadlines *d = calloc(1, sizeof *d);
  if (d == NULL)
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for the connection watches");
  d->svc = svc;
  pthread_mutex_init(&d->mu, NULL);
  d->list.prev = d->list.next = &d->list;
  d->header_ms = svc->cfg.header_timeout * 1000.0;
  d->min_rate = (double)svc->cfg.min_body_rate;
  d->per_ip = svc->cfg.per_ip_connection_limit;
  *out = d;
  return 0;
}

void deadlines_destroy(deadlines *d) {
  if (d == NULL)
    return;
  /* libmicrohttpd has stopped: every connection was closed and unlinked. */
  pthread_mutex_destroy(&d->mu);
  free(d);
}

static conn_watch *watch_of(struct MHD_Connection *conn) {
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return ci ? ci->socket_context : NULL;
}

static bool same_address(const struct sockaddr_storage *a, const struct sockaddr_storage *b) {
  if (a->ss_family != b->ss_family)
    return false;
  if (a->ss_family == AF_INET)
    return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
           ((const struct sockaddr_in *)b)->sin_addr.s_addr;
  if (a->ss_family == AF_INET6)
    return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
                  &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr)) == 0;
  return false;
}

/* Under d->mu. */
static void shut(conn_watch *w) {
  if (!w->closing) {
    w->closing = true;
    w->head_due = 0;
    w->body_from = 0;
    shutdown(w->fd, SHUT_RDWR);
  }
}

void deadlines_opened(deadlines *d, struct MHD_Connection *conn, void **socket_context) {
  conn_watch *w = calloc(1, sizeof *w);
  if (w == NULL)
    return; /* unwatched: only libmicrohttpd's idle timeout applies */
  const union MHD_ConnectionInfo *fd = MHD_get_connection_info(conn,
                                                               MHD_CONNECTION_INFO_CONNECTION_FD);
  const union MHD_ConnectionInfo *ca = MHD_get_connection_info(conn,
                                                               MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  w->fd = fd ? fd->connect_fd : -1;
  if (ca != NULL && ca->client_addr != NULL) {
    size_t len = ca->client_addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                                          : sizeof(struct sockaddr_in);
    memcpy(&w->addr, ca->client_addr, len);
  }
  w->opened = histd_now_ms();
  w->head_due = d->header_ms > 0 ? w->opened + d->header_ms : 0;
  w->head_begun = true;
  pthread_mutex_lock(&d->mu);
  /* The address's connections: at the limit, its oldest one still waiting
   * for a head makes room (an honest request would have sent its head). */
  unsigned count = 0;
  conn_watch *oldest = NULL;
  for (conn_watch *p = d->list.next; p != &d->list; p = p->next) {
    if (p->closing || !same_address(&p->addr, &w->addr))
      continue;
    count++;
    if (p->head_due > 0 && (oldest == NULL || p->head_due < oldest->head_due))
      oldest = p;
  }
  if (d->per_ip > 0 && count >= d->per_ip) {
    if (oldest != NULL) {
      if (oldest->head_begun)
        atomic_fetch_add(&d->svc->metrics.http_slow_headers, 1);
      shut(oldest);
    } else {
      shut(w); /* every slot of this address is busy with a real request */
    }
  }
  w->next = &d->list;
  w->prev = d->list.prev;
  d->list.prev->next = w;
  d->list.prev = w;
  pthread_mutex_unlock(&d->mu);
  *socket_context = w;
}

void deadlines_closed(deadlines *d, void **socket_context) {
  conn_watch *w = *socket_context;
  if (w == NULL)
    return;
  pthread_mutex_lock(&d->mu);
  w->prev->next = w->next;
  w->next->prev = w->prev;
  pthread_mutex_unlock(&d->mu);
  free(w);
  *socket_context = NULL;
}

void deadlines_request_line(deadlines *d, struct MHD_Connection *conn) {
  conn_watch *w = watch_of(conn);
  if (w == NULL)
    return;
  pthread_mutex_lock(&d->mu);
  w->head_begun = true;
  pthread_mutex_unlock(&d->mu);
}

void deadlines_head_done(deadlines *d, struct MHD_Connection *conn, bool body_coming) {
  conn_watch *w = watch_of(conn);
  if (w == NULL)
    return;
  pthread_mutex_lock(&d->mu);
  w->head_due = 0;
  w->body_bytes = 0;
  w->body_from = body_coming && d->min_rate > 0 ? histd_now_ms() : 0;
  pthread_mutex_unlock(&d->mu);
}

void deadlines_body(deadlines *d, struct MHD_Connection *conn, size_t bytes) {
  conn_watch *w = watch_of(conn);
  if (w == NULL)
    return;
  pthread_mutex_lock(&d->mu);
  w->body_bytes += bytes;
  pthread_mutex_unlock(&d->mu);
}

void deadlines_body_done(deadlines *d, struct MHD_Connection *conn) {
  conn_watch *w = watch_of(conn);
  if (w == NULL)
    return;
  pthread_mutex_lock(&d->mu);
  w->body_from = 0;
  pthread_mutex_unlock(&d->mu);
}

void deadlines_request_done(deadlines *d, struct MHD_Connection *conn) {
  conn_watch *w = watch_of(conn);
  if (w == NULL)
    return;
  pthread_mutex_lock(&d->mu);
  w->body_from = 0;
  w->head_begun = false;
  w->head_due = d->header_ms > 0 && !w->closing ? histd_now_ms() + d->header_ms : 0;
  pthread_mutex_unlock(&d->mu);
}

void deadlines_sweep(deadlines *d) {
  if (d == NULL)
    return;
  double now = histd_now_ms();
  pthread_mutex_lock(&d->mu);
  for (conn_watch *w = d->list.next; w != &d->list; w = w->next) {
    if (w->closing)
      continue;
    if (w->head_due > 0 && now > w->head_due) {
      if (w->head_begun)
        atomic_fetch_add(&d->svc->metrics.http_slow_headers, 1);
      shut(w);
    } else if (w->body_from > 0 && now - w->body_from > BODY_GRACE_MS &&
               (double)w->body_bytes < d->min_rate * (now - w->body_from - BODY_GRACE_MS) / 1000.0) {
      atomic_fetch_add(&d->svc->metrics.http_slow_bodies, 1);
      shut(w);
    }
  }
  pthread_mutex_unlock(&d->mu);
}
