/*
 * guard.c -- what every request must satisfy before a route sees it.
 *
 * Five checks, each one a reason a request is refused whatever its route:
 *
 *   - NULs: libmicrohttpd hands the path and the query parameters over as
 *     C strings, so a %00 in the request target would cut them short
 *     ("/v1/x%00y" read as "/v1/x"): such a request is refused (400). (A raw
 *     NUL byte inside a header line is cut there by libmicrohttpd itself,
 *     before histd can see it.)
 *   - the head (request smuggling): every field name a token (RFC 9110
 *     5.1), with no blank before its colon and no line folded onto the
 *     next (obs-fold; RFC 9112 5.1, 5.2); Host, Content-Length,
 *     Transfer-Encoding, Content-Type, Authorization and Origin once at
 *     most; never Content-Length beside Transfer-Encoding, whose only
 *     accepted value is "chunked". libmicrohttpd reads a body with the
 *     first Content-Length it sees, takes the first of two Hosts, and
 *     drops "Content-Length : 9" and folded lines without a word (its
 *     strict mode, MHD_OPTION_STRICT_FOR_CLIENT, in Debian 12's 0.9.75
 *     refuses a blank before the colon only at -1, and folds never); each
 *     would serve the rest of the body as a second request, or check one
 *     value where a proxy checked another. So such a request is refused
 *     (400) and its connection closed;
 *   - Host (DNS rebinding): a page on evil.example whose name is made to
 *     point at 127.0.0.1 reaches the daemon with "Host: evil.example". The
 *     Host must be a loopback name (localhost, *.localhost, 127.0.0.0/8,
 *     ::1), the --listen host, an IP address when the daemon listens on a
 *     wildcard address (rebinding needs a name), or a name in
 *     --allowed-hosts ("*" turns the check off). The port is not compared:
 *     proxies and port mappings change it;
 *   - Origin (cross-site writes): a browser sends Origin with every request
 *     that is not a GET or HEAD. A state-changing request from a page whose
 *     origin is neither the daemon's own (Origin's host:port = Host) nor
 *     allowed by --cors-origin is refused (403), token or not. Clients that
 *     are not browsers send no Origin and are not affected;
 *   - Content-Type (simple requests): a body must say it is JSON
 *     (application/json) where a route reads JSON, or one of the upload
 *     types where POST /v1/datasets reads points; a form's types
 *     (application/x-www-form-urlencoded, multipart/form-data), which any
 *     page may send anywhere without a preflight, never are.
 *
 * Each check returns 0, or a negative HISTD_E* code with the HTTP status in
 * *status and a sentence in msg.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <microhttpd.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "histd/histd.h"
#include "histd/io.h"
#include "config.h"
#include "guard.h"
#include "util.h"

/* ---- the head ----------------------------------------------------------------------- */

/* Fields histd reads as one value: a second line of any of them is a request
 * that two parsers (a proxy's, libmicrohttpd's) may read differently. */
static const char *const single_fields[] = {"Host",         "Content-Length", "Transfer-Encoding",
                                            "Content-Type", "Authorization",  "Origin"};
#define SINGLE_FIELDS (sizeof single_fields / sizeof single_fields[0])

/* RFC 9110 5.6.2: tchar. */
static bool is_tchar(unsigned char c) {
  return isalnum(c) || (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* Longest run of blanks between a field's colon and its value that is taken
 * as such (the bound keeps the look between them short). */
#define MAX_VALUE_INDENT 256

typedef struct head_lines {
  int count[SINGLE_FIELDS];
  const char *te;
  const char *bad_name; /* the first field name that is not a token */
  size_t bad_name_len;
  const char *folded; /* the first field whose line was folded */
} head_lines;

/* libmicrohttpd 0.9.75 parses a head in place: a field's name is its line's
 * first bytes, its colon becomes the name's NUL, and its value follows after
 * blanks. A folded line is glued to the previous line's *name* in a new block
 * (a folded "X: a\r\n Content-Length: 9" becomes the field "XContent-Length:
 * 9" = "a", and "Content-Length:\r\n 9" the field "Content-Length9" = ""), so
 * whatever it says is lost. Such a field's value no longer follows its name:
 * that is how the fold shows (the name alone need not: "Content-Length9" is
 * a token). The two pointers are compared as integers, and the bytes between
 * them read only when they are a short run inside one line. */
static bool value_follows_name(const char *key, size_t key_len, const char *value) {
  uintptr_t from = (uintptr_t)key + key_len + 1, at = (uintptr_t)value;
  if (at < from || at - from > MAX_VALUE_INDENT)
    return false;
  for (const char *p = key + key_len + 1; p < value; p++)
    if (*p != ' ' && *p != '\t')
      return false;
  return true;
}

static enum MHD_Result walk_head(void *cls, enum MHD_ValueKind kind, const char *key,
                                 size_t key_len, const char *value, size_t value_len) {
  (void)kind;
  (void)value_len;
  head_lines *h = cls;
  bool token = key_len > 0;
  for (size_t i = 0; i < key_len && token; i++)
    token = is_tchar((unsigned char)key[i]);
  if (!token && h->bad_name == NULL) {
    h->bad_name = key;
    h->bad_name_len = key_len;
  }
  if (h->folded == NULL && !value_follows_name(key, key_len, value))
    h->folded = key;
  for (size_t i = 0; i < SINGLE_FIELDS; i++)
    if (strcasecmp(key, single_fields[i]) == 0) {
      h->count[i]++;
      if (i == 2)
        h->te = value;
    }
  return MHD_YES;
}

/* A field name as a sentence may show it: printable ASCII, quotes and
 * backslashes as '?', at most 40 characters. */
static void show_name(const char *name, size_t len, char *out, size_t outlen) {
  size_t o = 0;
  for (size_t i = 0; i < len && i < 40 && o + 1 < outlen; i++) {
    unsigned char c = (unsigned char)name[i];
    out[o++] = c > 0x20 && c < 0x7f && c != '"' && c != '\\' ? (char)c : '?';
  }
  out[o] = '\0';
}

int guard_head(struct MHD_Connection *conn, unsigned *status, char *msg, size_t msglen) {
  head_lines h;
  memset(&h, 0, sizeof h);
  MHD_get_connection_values_n(conn, MHD_HEADER_KIND, walk_head, &h);
  *status = 400;
  if (h.folded != NULL)
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "a header line is folded onto the next one (a line that starts with a "
                      "blank; or its value follows more than %d blanks); send each field on "
                      "one line (RFC 9112 5.2)",
                      MAX_VALUE_INDENT);
  if (h.bad_name != NULL) {
    char shown[48];
    show_name(h.bad_name, h.bad_name_len, shown, sizeof shown);
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "the header line named \"%s\" is malformed: a field name is letters, "
                      "digits and !#$%%&'*+-.^_`|~ only, with no blank before its colon "
                      "(RFC 9112 5.1)", shown);
  }
  for (size_t i = 0; i < SINGLE_FIELDS; i++)
    if (h.count[i] > 1)
      return histd_fail(msg, msglen, HISTD_EINVAL,
                        "the request has %d %s headers; send one at most", h.count[i],
                        single_fields[i]);
  if (h.count[1] > 0 && h.count[2] > 0)
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "the request has both Content-Length and Transfer-Encoding; send one");
  if (h.count[2] == 1 && strcasecmp(h.te, "chunked") != 0) {
    *status = 501;
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "Transfer-Encoding \"%.60s\" is not supported; send \"chunked\" or a "
                      "Content-Length", h.te);
  }
  return 0;
}

/* ---- NULs ----------------------------------------------------------------------------- */

int guard_nul(bool nul_in_url, unsigned *status, char *msg, size_t msglen) {
  *status = 400;
  if (nul_in_url)
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "the request target holds %%00 (a NUL character), which no path or "
                      "parameter of this API may contain");
  return 0;
}

/* ---- hosts ---------------------------------------------------------------------------- */

/* Whether host is "name", "name:port", "[v6]" or "[v6]:port" (port: digits). */
static bool host_syntax_ok(const char *host) {
  const char *port = NULL;
  if (host[0] == '[') {
    const char *close = strchr(host, ']');
    if (close == NULL || close == host + 1)
      return false;
    if (close[1] != '\0' && close[1] != ':')
      return false;
    port = close[1] == ':' ? close + 2 : NULL;
  } else {
    const char *colon = strchr(host, ':');
    if (colon != NULL && strchr(colon + 1, ':') != NULL)
      return false; /* a bare IPv6 address: it must be in brackets */
    if (colon == host)
      return false;
    for (const char *p = host; p != colon && *p; p++)
      if (!isalnum((unsigned char)*p) && *p != '-' && *p != '.' && *p != '_')
        return false;
    port = colon ? colon + 1 : NULL;
  }
  if (port != NULL) {
    if (*port == '\0' || strlen(port) > 5)
      return false;
    for (const char *p = port; *p; p++)
      if (!isdigit((unsigned char)*p))
        return false;
  }
  return true;
}

/* host[0..len) without its port and IPv6 brackets, into out. */
static void host_name(const char *host, size_t len, char *out, size_t outlen) {
  const char *end = host + len;
  if (len > 0 && host[0] == '[') {
    const char *close = memchr(host, ']', len);
    host++;
    end = close ? close : end;
  } else {
    const char *colon = memchr(host, ':', len);
    if (colon != NULL && memchr(colon + 1, ':', (size_t)(end - colon - 1)) == NULL)
      end = colon; /* one colon: a port; more: a bare IPv6 address */
  }
  size_t n = (size_t)(end - host);
  if (n >= outlen)
    n = outlen - 1;
  for (size_t i = 0; i < n; i++)
    out[i] = (char)tolower((unsigned char)host[i]);
  out[n] = '\0';
  if (n > 0 && out[n - 1] == '.') /* "localhost." is localhost */
    out[n - 1] = '\0';
}

static bool is_ip_literal(const char *name) {
  unsigned char a[16];
  return inet_pton(AF_INET, name, a) == 1 || inet_pton(AF_INET6, name, a) == 1;
}

static bool loopback_address(const struct sockaddr *sa) {
  if (sa->sa_family == AF_INET)
    return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
  if (sa->sa_family == AF_INET6) {
    const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(a))
      return true;
    return IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127;
  }
  return false;
}

/* A loopback name or address, without resolving anything. */
static bool loopback_literal(const char *name) {
  size_t n = strlen(name);
  if (strcmp(name, "localhost") == 0 || (n > 10 && strcmp(name + n - 10, ".localhost") == 0))
    return true;
  struct in_addr a4;
  struct in6_addr a6;
  if (inet_pton(AF_INET, name, &a4) == 1)
    return (ntohl(a4.s_addr) >> 24) == 127;
  if (inet_pton(AF_INET6, name, &a6) == 1)
    return IN6_IS_ADDR_LOOPBACK(&a6) || (IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127);
  return false;
}

bool host_is_loopback(const char *host) {
  if (loopback_literal(host))
    return true;
  if (is_ip_literal(host))
    return false;
  /* A name: loopback when everything it resolves to is. */
  struct addrinfo hints = {0}, *ai = NULL;
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(host, NULL, &hints, &ai) != 0)
    return false;
  bool all = ai != NULL;
  for (struct addrinfo *p = ai; p != NULL; p = p->ai_next)
    all = all && loopback_address(p->ai_addr);
  freeaddrinfo(ai);
  return all;
}

static bool wildcard_listen(const char *listen_host) {
  return strcmp(listen_host, "0.0.0.0") == 0 || strcmp(listen_host, "::") == 0 ||
         strcmp(listen_host, "*") == 0;
}

/* Whether name is one of the comma-separated entries of list (or list is "*"). */
static bool in_list(const char *list, const char *name) {
  const char *p = list, *s;
  size_t len;
  while (list_next(&p, &s, &len)) {
    char entry[256];
    host_name(s, len, entry, sizeof entry);
    if ((len == 1 && *s == '*') || (entry[0] != '\0' && strcmp(entry, name) == 0))
      return true;
  }
  return false;
}

int guard_host(const config *cfg, const char *host, bool http11, unsigned *status, char *msg,
               size_t msglen) {
  *status = 400;
  if (host == NULL) {
    if (!http11)
      return 0; /* HTTP/1.0 has no Host to check */
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "an HTTP/1.1 request needs a Host header; this one has none");
  }
  char name[256];
  host_name(host, strlen(host), name, sizeof name);
  if (name[0] == '\0' || !host_syntax_ok(host))
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "the Host header \"%.100s\" is not a host name or address with an "
                      "optional port", host);
  if (loopback_literal(name) || strcmp(name, cfg->listen_host) == 0 ||
      (wildcard_listen(cfg->listen_host) && is_ip_literal(name)) ||
      in_list(cfg->allowed_hosts, name))
    return 0;
  *status = 421;
  return histd_fail(msg, msglen, HISTD_EINVAL,
                    "this daemon does not answer to the host \"%.100s\": add it with "
                    "--allowed-hosts (HISTD_ALLOWED_HOSTS) if it is one of its names",
                    name);
}

/* ---- origins ---------------------------------------------------------------------------- */

/* Origin "scheme://host[:port]"'s host[:port] is the Host header's. */
static bool same_origin(const char *origin, const char *host) {
  const char *sep = strstr(origin, "://");
  if (sep == NULL || host == NULL)
    return false;
  const char *auth = sep + 3;
  size_t scheme = (size_t)(sep - origin);
  bool http = scheme == 4 && strncasecmp(origin, "http", 4) == 0;
  bool https = scheme == 5 && strncasecmp(origin, "https", 5) == 0;
  if (!http && !https)
    return false;
  if (strcasecmp(auth, host) == 0)
    return true;
  /* "http://h" against "h:80", "https://h" against "h:443" */
  size_t alen = strlen(auth), hlen = strlen(host);
  const char *port = http ? ":80" : ":443";
  return hlen == alen + strlen(port) && strncasecmp(auth, host, alen) == 0 &&
         strcmp(host + alen, port) == 0;
}

int guard_origin(const config *cfg, const char *method, const char *origin, const char *host,
                 unsigned *status, char *msg, size_t msglen) {
  if (origin == NULL || strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0 ||
      strcmp(method, "OPTIONS") == 0)
    return 0;
  if (same_origin(origin, host) || cors_allow_origin(cfg, origin) != NULL)
    return 0;
  *status = 403;
  return histd_fail(msg, msglen, HISTD_EINVAL,
                    "%s from a page at %.100s is refused: that origin is not this daemon's and "
                    "not allowed by --cors-origin", method, origin);
}

/* ---- content types ---------------------------------------------------------------------- */

/* "Application/JSON; charset=utf-8" -> "application/json" */
static void media_type(const char *ct, char *out, size_t len) {
  size_t i = 0;
  while (*ct == ' ')
    ct++;
  while (ct[i] && ct[i] != ';' && i + 1 < len) {
    out[i] = (char)tolower((unsigned char)ct[i]);
    i++;
  }
  while (i > 0 && (out[i - 1] == ' ' || out[i - 1] == '\t'))
    i--;
  out[i] = '\0';
}

int guard_content_type(const char *content_type, bool uploads, bool format_given,
                       unsigned *status, char *msg, size_t msglen) {
  char mt[128];
  media_type(content_type ? content_type : "", mt, sizeof mt);
  *status = 415;
  if (!uploads) {
    if (strcmp(mt, "application/json") == 0)
      return 0;
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "the body must be sent as Content-Type: application/json, not \"%.80s\"",
                      content_type ? content_type : "(none)");
  }
  histd_format f;
  if ((mt[0] == '\0' && format_given) ||
      (mt[0] != '\0' && histd_format_from_content_type(mt, &f) == 0))
    return 0;
  char names[256], types[512];
  histd_format_names(names, sizeof names, "|");
  histd_format_types(types, sizeof types);
  if (format_given)
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "Content-Type \"%.80s\" is not a point format; with ?format= send "
                      "the format's type (%s) or no Content-Type",
                      content_type, types);
  return histd_fail(msg, msglen, HISTD_EINVAL,
                    "cannot tell the format from Content-Type \"%.80s\": send one of %s, or "
                    "add ?format=%s (or ?path= for a file under --import-dir)",
                    content_type ? content_type : "", types, names);
}
