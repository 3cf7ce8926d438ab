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
 *     counted from the end of the head, after a first second of grace;
 *   - a body must be complete --body-timeout after the end of its head,
 *     however fast it comes (just above the minimum rate, a 1 GB body
 *     would hold its connection, and its buffer, for ten days).
 *
 * The libuv loop sweeps the watches ten times a second and closes an
 * offender with shutdown(2) on its socket: libmicrohttpd's thread then sees
 * the end of the stream and closes the connection as usual. A slow head
 * that had begun (the request line arrived, or it is the connection's
 * first) counts in histd_http_slow_clients_total{reason="header"}, a slow
 * or late body in {reason="body"}; an idle kept-alive connection is closed
 * without being counted.
 *
 * Connections are counted here, in place of libmicrohttpd: at most
 * --per-ip-connection-limit from one address, --connection-limit in all.
 * When a new connection would pass either limit, the connection that does
 * least with its slot makes room for it (least_busy): the oldest one still
 * waiting for a request head, else the body arriving slowest (fewest bytes
 * a second since its head, once past its first second), among the
 * address's connections for the address's limit and among every address's
 * for the whole limit. So neither one slow client behind a shared address
 * (a NAT, a proxy, the machine itself) nor slow bodies from a few
 * addresses lock the others out; a new connection is closed only when
 * every slot is busy with a request being answered (or a body in its
 * first second). libmicrohttpd's own limit is set above --connection-limit
 * (http.c), so that it hands histd the connection that asks for a place.
 *
 * A long-lived answer -- an events stream (events.c), a long-poll -- has
 * its head in and no body: neither deadline watches it and it never makes
 * room, so events.c caps the streams below these limits itself.
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

#include "deadline.h"
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
  double body_due;   /* ms; 0 = no deadline for the body */
  uint64_t body_bytes;
  bool closing;      /* shut down; waiting for libmicrohttpd to close it */
} conn_watch;

struct deadlines {
  service *svc;
  pthread_mutex_t mu;
  conn_watch list; /* sentinel of a circular list */
  double header_ms;
  double body_ms;  /* 0: no deadline */
  double min_rate; /* bytes per second */
  unsigned per_ip, limit;
};

int deadlines_create(deadlines **out, service *svc, char *msg, size_t msglen) {
  deadlines *d = calloc(1, sizeof *d);
  if (d == NULL)
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for the connection watches");
  d->svc = svc;
  pthread_mutex_init(&d->mu, NULL);
  d->list.prev = d->list.next = &d->list;
  d->header_ms = svc->cfg.header_timeout * 1000.0;
  d->body_ms = svc->cfg.body_timeout * 1000.0;
  d->min_rate = (double)svc->cfg.min_body_rate;
  d->per_ip = svc->cfg.per_ip_connection_limit;
  d->limit = svc->cfg.connection_limit;
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
    w->body_due = 0;
    shutdown(w->fd, SHUT_RDWR);
  }
}

/* Under d->mu. Whether w's body has run past --body-timeout, or arrives
 * slower than --min-body-rate after its grace. */
static bool body_late(const deadlines *d, const conn_watch *w, double now) {
  if (w->body_from <= 0)
    return false;
  if (w->body_due > 0 && now > w->body_due)
    return true;
  double t = now - w->body_from - BODY_GRACE_MS;
  return d->min_rate > 0 && t > 0 && (double)w->body_bytes < d->min_rate * t / 1000.0;
}

/* Under d->mu. The connection that does least with its slot, among addr's
 * (NULL: every address's): the oldest one waiting for a request head, else
 * the body arriving slowest once past its grace; NULL when there is none. */
static conn_watch *least_busy(deadlines *d, const struct sockaddr_storage *addr, double now) {
  conn_watch *head = NULL, *body = NULL;
  double slowest = 0;
  for (conn_watch *p = d->list.next; p != &d->list; p = p->next) {
    if (p->closing || (addr != NULL && !same_address(&p->addr, addr)))
      continue;
    if (p->head_due > 0 && (head == NULL || p->head_due < head->head_due))
      head = p;
    double t = now - p->body_from;
    if (p->body_from > 0 && t > BODY_GRACE_MS &&
        (body == NULL || (double)p->body_bytes / t < slowest)) {
      body = p;
      slowest = (double)p->body_bytes / t;
    }
  }
  return head != NULL ? head : body;
}

/* Under d->mu: closes w to make room, counting it as a slow client unless
 * it was an idle kept-alive connection. */
static void evict(deadlines *d, conn_watch *w) {
  if (w->body_from > 0)
    atomic_fetch_add(&d->svc->metrics.http_slow_bodies, 1);
  else if (w->head_begun)
    atomic_fetch_add(&d->svc->metrics.http_slow_headers, 1);
  shut(w);
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
  /* At a limit, the least busy connection makes room (an honest request
   * would have sent its head, and its body faster). */
  unsigned all = 0, mine = 0;
  for (conn_watch *p = d->list.next; p != &d->list; p = p->next) {
    if (p->closing)
      continue;
    all++;
    mine += same_address(&p->addr, &w->addr);
  }
  bool address_full = d->per_ip > 0 && mine >= d->per_ip;
  if (address_full || (d->limit > 0 && all >= d->limit)) {
    conn_watch *room = least_busy(d, address_full ? &w->addr : NULL, w->opened);
    if (room != NULL)
      evict(d, room);
    else
      shut(w); /* every slot is busy with a request */
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
  double now = histd_now_ms();
  w->head_due = 0;
  w->body_bytes = 0;
  w->body_from = body_coming ? now : 0;
  w->body_due = body_coming && d->body_ms > 0 ? now + d->body_ms : 0;
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
  w->body_due = 0;
  pthread_mutex_unlock(&d->mu);
}

void deadlines_request_done(deadlines *d, struct MHD_Connection *conn) {
  conn_watch *w = watch_of(conn);
  if (w == NULL)
    return;
  pthread_mutex_lock(&d->mu);
  w->body_from = 0;
  w->body_due = 0;
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
    } else if (body_late(d, w, now)) {
      atomic_fetch_add(&d->svc->metrics.http_slow_bodies, 1);
      shut(w);
    }
  }
  pthread_mutex_unlock(&d->mu);
}
