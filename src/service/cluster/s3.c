/*
 * s3.c -- the shared store's S3 backend: a small S3 client on libcurl
 * (HEAD, GET with Range, PUT, DELETE; path-style; Signature V4 from
 * sigv4.c) and the node-local block cache that ranged GETs fill.
 *
 * Objects, for an id under s3://BUCKET/PREFIX:
 *
 *     PREFIX/<id>.f64        the payload, byte for byte
 *     PREFIX/<id>.manifest   written after the payload, so its presence
 *                            means the payload is whole:
 *                              histd-manifest 1
 *                              size <bytes>
 *                              block <bytes>
 *                              sha256 <the whole payload's>
 *                              <one SHA-256 per block, in order>
 *
 * The cache, in cache_dir:
 *
 *     <id>.f64     a file of the object's size; a block is pwritten there
 *                  once its bytes match the manifest's hash; holes elsewhere
 *     <id>.blocks  a 64-byte header (block size, size), then one byte per
 *                  block: 1 once the block's bytes are in <id>.f64
 *
 * The cache is not fsynced: a marker that outlived its block in a crash
 * is harmless, because each process hashes a marked block again the first
 * time it uses it, and a block that no longer matches is fetched again.
 * (Only bytes that came from S3 are ever refused: a cached block is a
 * copy, and a bad copy is replaced.) A block's states in memory: absent,
 * busy (one thread is fetching or checking it; others wait on the store's
 * condition variable) and ready (checked by this process). Two processes
 * sharing a cache dir can both write a block, but both write the bytes the
 * manifest names, so the file stays right.
 *
 * Requests that fail on the way (a connection error, a 5xx such as S3's
 * 503 SlowDown) are tried three times in all. A single PUT carries at most
 * 5 GiB; larger payloads would need a multipart upload, which this client
 * does not do (HISTD_ETOOBIG says so).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "s3.h"
#include "histd/histd.h"
#include "sha256.h"
#include "shared_store.h"

#define S3_MAX_PUT (5ull << 30)
#define S3_ATTEMPTS 3
#define S3_IDLE_HANDLES 16
#define BLOCKS_HEADER 64
#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

enum { BLOCK_ABSENT = 0, BLOCK_BUSY, BLOCK_READY };

/* One object this store has opened for fetching: its manifest and cache. */
typedef struct s3_object {
  struct s3_object *next;
  char id[65];
  int refs;      /* the store's list holds one; each fetch in progress one */
  uint64_t size;
  uint32_t block;
  uint64_t nblocks;
  unsigned char *hashes; /* 32 bytes a block */
  unsigned char *state;  /* BLOCK_* a block */
  int data_fd, marks_fd;
} s3_object;

struct s3_store {
  char scheme[8];      /* "http" or "https" */
  char host[256];      /* the endpoint's authority, sent as Host */
  char base_uri[1024]; /* "/[endpoint path/]BUCKET", encoded */
  char bucket[256];
  char prefix[1024];   /* "" or "dir/sub/" (with the slash) */
  char region[64];
  char access_key[256], secret_key[256], token[4096];
  char cache_dir[4096];
  uint32_t block_bytes;
  atomic_uint_fast64_t fetched;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  s3_object *objects;
  CURL *idle[S3_IDLE_HANDLES];
  int nidle;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;
static void curl_init(void) { curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

/* ---- names ------------------------------------------------------------------ */

/* S3's URI encoding: everything but A-Z a-z 0-9 - _ . ~ (and '/' when
 * keep_slash) as %XX. False when out is too small. */
static bool uri_encode(const char *in, bool keep_slash, char *out, size_t len) {
  static const char hex[] = "0123456789ABCDEF";
  size_t o = 0;
  for (const unsigned char *p = (const unsigned char *)in; *p; p++) {
    bool plain = isalnum(*p) || *p == '-' || *p == '_' || *p == '.' || *p == '~' ||
                 (keep_slash && *p == '/');
    if (o + (plain ? 1 : 3) >= len)
      return false;
    if (plain) {
      out[o++] = (char)*p;
    } else {
      out[o++] = '%';
      out[o++] = hex[*p >> 4];
      out[o++] = hex[*p & 15];
    }
  }
  out[o] = '\0';
  return true;
}

static const char *env2(const char *a, const char *b) {
  const char *v = getenv(a);
  if ((v == NULL || *v == '\0') && b != NULL)
    v = getenv(b);
  return v != NULL && *v != '\0' ? v : NULL;
}

static int parse_endpoint(s3_store *s, const char *endpoint, char *msg, size_t msglen) {
  const char *p = strstr(endpoint, "://");
  size_t sl = p ? (size_t)(p - endpoint) : 0;
  if (p == NULL || !((sl == 4 && strncasecmp(endpoint, "http", 4) == 0) ||
                     (sl == 5 && strncasecmp(endpoint, "https", 5) == 0))) {
    snprintf(msg, msglen, "the S3 endpoint '%s' is not an http:// or https:// URL", endpoint);
    return HISTD_EINVAL;
  }
  for (size_t i = 0; i < sl; i++)
    s->scheme[i] = (char)tolower((unsigned char)endpoint[i]);
  s->scheme[sl] = '\0';
  const char *h = p + 3, *slash = strchr(h, '/');
  size_t hl = slash ? (size_t)(slash - h) : strlen(h);
  if (hl == 0 || hl >= sizeof s->host || memchr(h, '@', hl) != NULL) {
    snprintf(msg, msglen, "the S3 endpoint '%s' has no usable host", endpoint);
    return HISTD_EINVAL;
  }
  for (size_t i = 0; i < hl; i++)
    s->host[i] = (char)tolower((unsigned char)h[i]);
  s->host[hl] = '\0';
  char path[512] = "", enc_path[1024], enc_bucket[768];
  if (slash != NULL)
    snprintf(path, sizeof path, "%s", slash);
  size_t pl = strlen(path);
  while (pl > 0 && path[pl - 1] == '/')
    path[--pl] = '\0';
  if (!uri_encode(path, true, enc_path, sizeof enc_path) ||
      !uri_encode(s->bucket, false, enc_bucket, sizeof enc_bucket) ||
      snprintf(s->base_uri, sizeof s->base_uri, "%s/%s", enc_path, enc_bucket) >=
          (int)sizeof s->base_uri) {
    snprintf(msg, msglen, "the S3 endpoint's path and the bucket name are too long");
    return HISTD_EINVAL;
  }
  return 0;
}

int s3_store_open(s3_store **out, const char *url, const char *cache_dir, char *msg,
                  size_t msglen) {
  *out = NULL;
  if (strncmp(url, "s3://", 5) != 0) {
    snprintf(msg, msglen, "'%s' is not an s3:// URL", url);
    return HISTD_EINVAL;
  }
  if (cache_dir == NULL || *cache_dir == '\0') {
    snprintf(msg, msglen, "an S3 store needs a node-local cache directory");
    return HISTD_EINVAL;
  }
  pthread_once(&curl_once, curl_init);
  if (curl_init_rc != CURLE_OK) {
    snprintf(msg, msglen, "libcurl could not start: %s", curl_easy_strerror(curl_init_rc));
    return HISTD_EIO;
  }
  s3_store *s = calloc(1, sizeof *s);
  if (s == NULL) {
    snprintf(msg, msglen, "out of memory opening the S3 store");
    return HISTD_ENOMEM;
  }
  s->block_bytes = SHARED_STORE_BLOCK_BYTES;
  const char *b = url + 5, *slash = strchr(b, '/');
  size_t bl = slash ? (size_t)(slash - b) : strlen(b);
  const char *prefix = slash ? slash + 1 : "";
  size_t pl = strlen(prefix);
  while (pl > 0 && prefix[pl - 1] == '/')
    pl--;
  int rc = HISTD_EINVAL;
  if (bl == 0 || bl >= sizeof s->bucket || pl + 2 > sizeof s->prefix) {
    snprintf(msg, msglen, "'%s' does not name a bucket as s3://BUCKET/PREFIX", url);
    goto fail;
  }
  memcpy(s->bucket, b, bl);
  snprintf(s->prefix, sizeof s->prefix, "%.*s%s", (int)pl, prefix, pl ? "/" : "");

  const char *region = env2("AWS_REGION", "AWS_DEFAULT_REGION");
  snprintf(s->region, sizeof s->region, "%s", region ? region : "us-east-1");
  char endpoint[1024];
  const char *ep = env2("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL");
  if (ep != NULL)
    snprintf(endpoint, sizeof endpoint, "%s", ep);
  else
    snprintf(endpoint, sizeof endpoint, "https://s3.%s.amazonaws.com", s->region);
  if ((rc = parse_endpoint(s, endpoint, msg, msglen)) != 0)
    goto fail;
  const char *ak = env2("AWS_ACCESS_KEY_ID", NULL), *sk = env2("AWS_SECRET_ACCESS_KEY", NULL);
  const char *tok = env2("AWS_SESSION_TOKEN", NULL);
  rc = HISTD_EINVAL;
  if (ak == NULL || sk == NULL) {
    snprintf(msg, msglen,
             "an S3 store needs credentials in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY");
    goto fail;
  }
  if (strlen(ak) >= sizeof s->access_key || strlen(sk) >= sizeof s->secret_key ||
      (tok != NULL && strlen(tok) >= sizeof s->token)) {
    snprintf(msg, msglen, "the AWS credentials in the environment are too long");
    goto fail;
  }
  snprintf(s->access_key, sizeof s->access_key, "%s", ak);
  snprintf(s->secret_key, sizeof s->secret_key, "%s", sk);
  snprintf(s->token, sizeof s->token, "%s", tok ? tok : "");
  if (snprintf(s->cache_dir, sizeof s->cache_dir, "%s", cache_dir) >=
          (int)sizeof s->cache_dir - 80 ||
      (mkdir(cache_dir, 0755) != 0 && errno != EEXIST)) {
    snprintf(msg, msglen, "the cache directory %s cannot be made: %s", cache_dir,
             strerror(errno));
    rc = HISTD_EIO;
    goto fail;
  }
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv, NULL);
  atomic_init(&s->fetched, 0);
  *out = s;
  return 0;
fail:
  free(s);
  return rc;
}

static void object_free(s3_object *o) {
  if (o->data_fd >= 0)
    close(o->data_fd);
  if (o->marks_fd >= 0)
    close(o->marks_fd);
  free(o->hashes);
  free(o->state);
  free(o);
}

void s3_store_close(s3_store *s) {
  if (s == NULL)
    return;
  for (s3_object *o = s->objects, *next; o != NULL; o = next) {
    next = o->next;
    object_free(o);
  }
  for (int i = 0; i < s->nidle; i++)
    curl_easy_cleanup(s->idle[i]);
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->cv);
  free(s);
}

void s3_store_set_block_bytes(s3_store *s, uint32_t bytes) {
  if (bytes > 0)
    s->block_bytes = bytes;
}

uint64_t s3_store_bytes_fetched(const s3_store *s) {
  return atomic_load(&((s3_store *)s)->fetched);
}

/* ---- requests ------------------------------------------------------------------ */

typedef struct s3_call {
  const char *method;       /* "GET", "HEAD", "PUT", "DELETE" */
  const char *key;          /* under the bucket, prefix included, not encoded */
  const char *range;        /* "bytes=A-B", or NULL */
  const char *payload_hash; /* NULL: the empty body's */
  int in_fd;                /* PUT body: a file's [0, in_len) ... */
  const char *in_mem;       /* ... or memory (in_fd < 0) */
  uint64_t in_len, in_off;
  char *out;                /* the response body (an error's XML too) */
  size_t out_cap, out_len;
  bool overflow;            /* more body than out_cap */
  atomic_uint_fast64_t *counter; /* bytes of 2xx bodies added here */
  CURL *curl;
  long status;
  uint64_t content_length;  /* HEAD / GET: the Content-Length, when sent */
} s3_call;

static size_t on_body(char *data, size_t size, size_t n, void *u) {
  s3_call *c = u;
  size_t len = size * n;
  if (c->out_len + len > c->out_cap) {
    c->overflow = true;
    return 0; /* stops the transfer: nothing we asked for is this long */
  }
  memcpy(c->out + c->out_len, data, len);
  c->out_len += len;
  long st = 0;
  curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &st);
  if (c->counter != NULL && st / 100 == 2)
    atomic_fetch_add(c->counter, len);
  return len;
}

static size_t on_read(char *buf, size_t size, size_t n, void *u) {
  s3_call *c = u;
  size_t want = size * n;
  if (want > c->in_len - c->in_off)
    want = (size_t)(c->in_len - c->in_off);
  if (want == 0)
    return 0;
  if (c->in_fd < 0) {
    memcpy(buf, c->in_mem + c->in_off, want);
  } else {
    ssize_t r = pread(c->in_fd, buf, want, (off_t)c->in_off);
    if (r <= 0)
      return CURL_READFUNC_ABORT;
    want = (size_t)r;
  }
  c->in_off += want;
  return want;
}

static CURL *take_handle(s3_store *s) {
  pthread_mutex_lock(&s->mu);
  CURL *h = s->nidle > 0 ? s->idle[--s->nidle] : NULL;
  pthread_mutex_unlock(&s->mu);
  if (h != NULL)
    curl_easy_reset(h); /* keeps the connection cache */
  else
    h = curl_easy_init();
  return h;
}

static void give_handle(s3_store *s, CURL *h) {
  pthread_mutex_lock(&s->mu);
  if (s->nidle < S3_IDLE_HANDLES) {
    s->idle[s->nidle++] = h;
    h = NULL;
  }
  pthread_mutex_unlock(&s->mu);
  if (h != NULL)
    curl_easy_cleanup(h);
}

/* One attempt: signs and sends c. 0 when a response came back (c->status
 * says which), else HISTD_EIO with curl's reason. */
static int perform(s3_store *s, s3_call *c, char *msg, size_t msglen) {
  char key_enc[3200], uri[4400], url[4800];
  if (!uri_encode(c->key, true, key_enc, sizeof key_enc) ||
      snprintf(uri, sizeof uri, "%s/%s", s->base_uri, key_enc) >= (int)sizeof uri ||
      snprintf(url, sizeof url, "%s://%s%s", s->scheme, s->host, uri) >= (int)sizeof url) {
    snprintf(msg, msglen, "the S3 key %s is too long", c->key);
    return HISTD_EINVAL;
  }
  char amz_date[17];
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(amz_date, sizeof amz_date, "%Y%m%dT%H%M%SZ", &tm);
  const char *payload = c->payload_hash ? c->payload_hash : EMPTY_SHA256;
  sigv4_header h[5] = {{"host", s->host},
                       {"x-amz-content-sha256", payload},
                       {"x-amz-date", amz_date}};
  size_t nh = 3;
  if (c->range != NULL)
    h[nh++] = (sigv4_header){"range", c->range};
  if (s->token[0] != '\0')
    h[nh++] = (sigv4_header){"x-amz-security-token", s->token};
  sigv4_request sr = {.method = c->method, .uri = uri, .query = "", .headers = h,
                      .nheaders = nh, .payload_hash = payload, .amz_date = amz_date,
                      .region = s->region, .access_key = s->access_key,
                      .secret_key = s->secret_key};
  char auth[1024];
  if (sigv4_sign(&sr, auth, sizeof auth, NULL, 0) != 0) {
    snprintf(msg, msglen, "the S3 request for %s could not be signed", c->key);
    return HISTD_EINVAL;
  }
  struct curl_slist *hl = NULL;
  char line[4200];
  for (size_t i = 0; i < nh; i++) {
    snprintf(line, sizeof line, "%s: %s", h[i].name, h[i].value);
    hl = curl_slist_append(hl, line);
  }
  snprintf(line, sizeof line, "Authorization: %s", auth);
  hl = curl_slist_append(hl, line);
  hl = curl_slist_append(hl, "Expect:"); /* no 100-continue round trip */

  CURL *e = c->curl;
  curl_easy_setopt(e, CURLOPT_URL, url);
  curl_easy_setopt(e, CURLOPT_PATH_AS_IS, 1L);
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, hl);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, 10L);
  curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L); /* stalled for a minute: give up */
  curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, 60L);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, c);
  if (strcmp(c->method, "HEAD") == 0) {
    curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
  } else if (strcmp(c->method, "PUT") == 0) {
    c->in_off = 0;
    curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(e, CURLOPT_READFUNCTION, on_read);
    curl_easy_setopt(e, CURLOPT_READDATA, c);
    curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, (curl_off_t)c->in_len);
  } else if (strcmp(c->method, "GET") != 0) {
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, c->method);
  }
  c->out_len = 0;
  c->overflow = false;
  CURLcode rc = curl_easy_perform(e);
  curl_slist_free_all(hl);
  c->status = 0;
  curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &c->status);
  curl_off_t cl = -1;
  curl_easy_getinfo(e, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
  c->content_length = cl >= 0 ? (uint64_t)cl : 0;
  if (rc == CURLE_WRITE_ERROR && c->overflow) {
    snprintf(msg, msglen, "S3 sent more than %zu bytes for %s %s", c->out_cap, c->method,
             c->key);
    return HISTD_ETOOBIG; /* not worth trying again */
  }
  if (rc != CURLE_OK) {
    snprintf(msg, msglen, "the S3 request %s %s to %s failed: %s", c->method, c->key,
             s->host, curl_easy_strerror(rc));
    return HISTD_EIO;
  }
  return 0;
}

/* The text of <tag>...</tag> in an S3 error document, or "". */
static void xml_field(const char *xml, size_t len, const char *tag, char *out, size_t olen) {
  char open[64], close_[64];
  snprintf(open, sizeof open, "<%s>", tag);
  snprintf(close_, sizeof close_, "</%s>", tag);
  out[0] = '\0';
  char *copy = strndup(xml, len);
  if (copy == NULL)
    return;
  char *a = strstr(copy, open), *b = a ? strstr(a, close_) : NULL;
  if (a != NULL && b != NULL)
    snprintf(out, olen, "%.*s", (int)(b - a - strlen(open)), a + strlen(open));
  free(copy);
}

/* Sends c, trying again after a failure on the way or a 5xx. 0 for a 2xx;
 * HISTD_ENOENT for a 404; HISTD_ETOOBIG when the body would not fit
 * c->out; else HISTD_EIO with S3's code and message. */
static int s3_request(s3_store *s, s3_call *c, char *msg, size_t msglen) {
  char errbody[2048];
  if (c->out == NULL) {
    c->out = errbody;
    c->out_cap = sizeof errbody;
  }
  c->curl = take_handle(s);
  if (c->curl == NULL) {
    snprintf(msg, msglen, "libcurl could not make a handle");
    return HISTD_ENOMEM;
  }
  int rc = 0;
  for (int attempt = 1; attempt <= S3_ATTEMPTS; attempt++) {
    rc = perform(s, c, msg, msglen);
    if (rc == HISTD_EINVAL || rc == HISTD_ETOOBIG || (rc == 0 && c->status < 500) ||
        attempt == S3_ATTEMPTS)
      break;
    struct timespec ts = {0, 200000000L * attempt};
    nanosleep(&ts, NULL);
  }
  give_handle(s, c->curl);
  c->curl = NULL;
  if (rc != 0)
    goto out;
  if (c->status / 100 == 2)
    goto out;
  rc = c->status == 404 ? HISTD_ENOENT : HISTD_EIO;
  char code[128], text[512];
  xml_field(c->out, c->out_len, "Code", code, sizeof code);
  xml_field(c->out, c->out_len, "Message", text, sizeof text);
  snprintf(msg, msglen, "S3 answered %s s3://%s/%s with %ld%s%s%s%s", c->method, s->bucket,
           c->key, c->status, code[0] ? " " : "", code, text[0] ? ": " : "", text);
out:
  if (c->out == errbody)
    c->out = NULL;
  return rc;
}

/* ---- objects ------------------------------------------------------------------- */

static void key_of(const s3_store *s, const char *id, const char *ext, char *key, size_t len) {
  snprintf(key, len, "%s%s.%s", s->prefix, id, ext);
}

static int hex_byte(const char *p) {
  int v = 0;
  for (int i = 0; i < 2; i++) {
    char ch = p[i];
    int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
    if (d < 0)
      return -1;
    v = v * 16 + d;
  }
  return v;
}

/* The manifest's text -> o's size, block and hashes. */
static int parse_manifest(s3_object *o, const char *text, size_t len, char *msg,
                          size_t msglen) {
  char whole[65];
  unsigned long long size = 0, block = 0;
  int used = 0;
  char *t = strndup(text, len);
  if (t == NULL) {
    snprintf(msg, msglen, "out of memory reading a manifest");
    return HISTD_ENOMEM;
  }
  int rc = HISTD_EIO;
  if (sscanf(t, "histd-manifest 1\nsize %llu\nblock %llu\nsha256 %64s\n%n", &size, &block,
             whole, &used) != 3 ||
      used == 0 || block == 0 || block > (1u << 30)) {
    snprintf(msg, msglen, "the manifest of %s is not a histd manifest", o->id);
    goto done;
  }
  o->size = size;
  o->block = (uint32_t)block;
  o->nblocks = (size + block - 1) / block;
  if (len - (size_t)used != o->nblocks * 65) {
    snprintf(msg, msglen, "the manifest of %s lists %zu bytes of hashes for %llu blocks",
             o->id, len - (size_t)used, (unsigned long long)o->nblocks);
    goto done;
  }
  o->hashes = malloc(o->nblocks * 32 + 1);
  o->state = calloc(o->nblocks + 1, 1);
  if (o->hashes == NULL || o->state == NULL) {
    snprintf(msg, msglen, "out of memory reading the manifest of %s", o->id);
    rc = HISTD_ENOMEM;
    goto done;
  }
  const char *p = t + used;
  for (uint64_t b = 0; b < o->nblocks; b++, p += 65) {
    for (int i = 0; i < 32; i++) {
      int v = hex_byte(p + 2 * i);
      if (v < 0 || p[64] != '\n') {
        snprintf(msg, msglen, "the manifest of %s has a bad hash for block %llu", o->id,
                 (unsigned long long)b);
        goto done;
      }
      o->hashes[b * 32 + i] = (unsigned char)v;
    }
  }
  rc = 0;
done:
  free(t);
  return rc;
}

static int get_manifest(s3_store *s, s3_object *o, char *msg, size_t msglen) {
  char key[1200];
  key_of(s, o->id, "manifest", key, sizeof key);
  size_t cap = 1u << 20; /* 16 Ki blocks; grown for larger objects */
  char *buf = NULL;
  for (;;) {
    buf = malloc(cap);
    if (buf == NULL) {
      snprintf(msg, msglen, "out of memory reading the manifest of %s", o->id);
      return HISTD_ENOMEM;
    }
    s3_call c = {.method = "GET", .key = key, .in_fd = -1, .out = buf, .out_cap = cap};
    int rc = s3_request(s, &c, msg, msglen);
    if (rc == HISTD_ETOOBIG && cap < (256u << 20)) {
      free(buf);
      cap *= 16;
      continue;
    }
    if (rc == HISTD_ENOENT)
      snprintf(msg, msglen, "there is no object %s in s3://%s/%s", o->id, s->bucket,
               s->prefix);
    if (rc == 0)
      rc = parse_manifest(o, buf, c.out_len, msg, msglen);
    free(buf);
    return rc;
  }
}

/* Opens (or creates) the cache files of o; a side file from another block
 * size or object size starts over. */
static int open_cache(s3_store *s, s3_object *o, char *msg, size_t msglen) {
  char path[4200], header[BLOCKS_HEADER], want[BLOCKS_HEADER];
  snprintf(path, sizeof path, "%s/%s.f64", s->cache_dir, o->id);
  o->data_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  struct stat st;
  if (o->data_fd < 0 || fstat(o->data_fd, &st) != 0 ||
      ((uint64_t)st.st_size != o->size && ftruncate(o->data_fd, (off_t)o->size) != 0))
    goto io;
  snprintf(path, sizeof path, "%s/%s.blocks", s->cache_dir, o->id);
  o->marks_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (o->marks_fd < 0)
    goto io;
  memset(want, ' ', sizeof want);
  int n = snprintf(want, sizeof want, "histd-blocks 1 block %u size %llu", o->block,
                   (unsigned long long)o->size);
  want[n] = ' ';
  want[BLOCKS_HEADER - 1] = '\n';
  ssize_t r = pread(o->marks_fd, header, sizeof header, 0);
  if (r != (ssize_t)sizeof header || memcmp(header, want, sizeof want) != 0 ||
      (uint64_t)st.st_size != o->size) {
    if (ftruncate(o->marks_fd, 0) != 0 ||
        pwrite(o->marks_fd, want, sizeof want, 0) != (ssize_t)sizeof want)
      goto io;
  }
  if (ftruncate(o->marks_fd, (off_t)(BLOCKS_HEADER + o->nblocks)) != 0)
    goto io;
  return 0;
io:
  snprintf(msg, msglen, "the cache file %s cannot be opened: %s", path, strerror(errno));
  return HISTD_EIO;
}

/* The object id, its manifest read and its cache open, with a reference
 * for the caller (object_release). */
static int object_get(s3_store *s, const char *id, s3_object **out, char *msg,
                      size_t msglen) {
  pthread_mutex_lock(&s->mu);
  for (s3_object *o = s->objects; o != NULL; o = o->next)
    if (strcmp(o->id, id) == 0) {
      o->refs++;
      *out = o;
      pthread_mutex_unlock(&s->mu);
      return 0;
    }
  pthread_mutex_unlock(&s->mu);

  s3_object *o = calloc(1, sizeof *o);
  if (o == NULL) {
    snprintf(msg, msglen, "out of memory opening object %s", id);
    return HISTD_ENOMEM;
  }
  snprintf(o->id, sizeof o->id, "%s", id);
  o->data_fd = o->marks_fd = -1;
  int rc = get_manifest(s, o, msg, msglen);
  if (rc == 0)
    rc = open_cache(s, o, msg, msglen);
  if (rc != 0) {
    object_free(o);
    return rc;
  }
  pthread_mutex_lock(&s->mu);
  for (s3_object *x = s->objects; x != NULL; x = x->next)
    if (strcmp(x->id, id) == 0) { /* another thread was quicker: use its */
      x->refs++;
      pthread_mutex_unlock(&s->mu);
      object_free(o);
      *out = x;
      return 0;
    }
  o->refs = 2;
  o->next = s->objects;
  s->objects = o;
  pthread_mutex_unlock(&s->mu);
  *out = o;
  return 0;
}

static void object_release(s3_store *s, s3_object *o) {
  pthread_mutex_lock(&s->mu);
  bool last = --o->refs == 0;
  pthread_mutex_unlock(&s->mu);
  if (last)
    object_free(o);
}

/* ---- the API (ids checked by shared_store.c) ----------------------------------- */

int s3_store_put(s3_store *s, const char *id, const char *local_path, char *msg,
                 size_t msglen) {
  char key[1200], mkey[1200];
  key_of(s, id, "f64", key, sizeof key);
  key_of(s, id, "manifest", mkey, sizeof mkey);
  s3_call head = {.method = "HEAD", .key = mkey, .in_fd = -1};
  int rc = s3_request(s, &head, msg, msglen);
  if (rc != HISTD_ENOENT)
    return rc; /* 0: there already (the manifest is written last) */

  int fd = open(local_path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    snprintf(msg, msglen, "%s cannot be read: %s", local_path, strerror(errno));
    if (fd >= 0)
      close(fd);
    return HISTD_EIO;
  }
  uint64_t size = (uint64_t)st.st_size, block = s->block_bytes;
  if (size > S3_MAX_PUT) {
    close(fd);
    snprintf(msg, msglen,
             "%s is %llu bytes; S3 takes at most 5 GiB in one PUT and this client does "
             "no multipart uploads",
             local_path, (unsigned long long)size);
    return HISTD_ETOOBIG;
  }
  /* one pass: the whole payload's hash (signed into the PUT) and each block's */
  uint64_t nblocks = (size + block - 1) / block;
  size_t mlen = 256 + nblocks * 65;
  char *manifest = malloc(mlen);
  unsigned char *buf = malloc(1u << 20);
  sha256_ctx *whole = sha256_new(), *blk = NULL;
  char *hashes = NULL, whole_hex[65];
  size_t hp = 0;
  rc = HISTD_ENOMEM;
  if (manifest == NULL || buf == NULL || whole == NULL) {
    snprintf(msg, msglen, "out of memory hashing %s", local_path);
    goto done;
  }
  hashes = manifest + 200; /* the header goes before them once the sizes are known */
  for (uint64_t off = 0; off < size;) {
    uint64_t in_block = block - off % block, want = size - off;
    if (want > in_block)
      want = in_block;
    if (want > (1u << 20))
      want = 1u << 20;
    ssize_t r = pread(fd, buf, (size_t)want, (off_t)off);
    if (r <= 0) {
      snprintf(msg, msglen, "%s cannot be read: %s", local_path,
               r < 0 ? strerror(errno) : "it shrank");
      rc = HISTD_EIO;
      goto done;
    }
    if (blk == NULL && (blk = sha256_new()) == NULL)
      goto done;
    sha256_update(whole, buf, (size_t)r);
    sha256_update(blk, buf, (size_t)r);
    off += (uint64_t)r;
    if (off % block == 0 || off == size) {
      sha256_final_hex(blk, hashes + hp);
      blk = NULL;
      hashes[hp + 64] = '\n';
      hp += 65;
    }
  }
  sha256_final_hex(whole, whole_hex);
  whole = NULL;
  int hl = snprintf(manifest, 200, "histd-manifest 1\nsize %llu\nblock %llu\nsha256 %s\n",
                    (unsigned long long)size, (unsigned long long)block, whole_hex);
  memmove(manifest + hl, hashes, hp);

  s3_call put = {.method = "PUT", .key = key, .payload_hash = whole_hex, .in_fd = fd,
                 .in_len = size};
  if ((rc = s3_request(s, &put, msg, msglen)) != 0)
    goto done;
  char mhash[65];
  sha256_hex(manifest, (size_t)hl + hp, mhash);
  s3_call mput = {.method = "PUT", .key = mkey, .payload_hash = mhash, .in_fd = -1,
                  .in_mem = manifest, .in_len = (size_t)hl + hp};
  rc = s3_request(s, &mput, msg, msglen);
done:
  if (blk != NULL)
    sha256_final_hex(blk, whole_hex);
  if (whole != NULL)
    sha256_final_hex(whole, whole_hex);
  free(manifest);
  free(buf);
  close(fd);
  return rc;
}

int s3_store_size(s3_store *s, const char *id, uint64_t *size, char *msg, size_t msglen) {
  s3_object *o;
  int rc = object_get(s, id, &o, msg, msglen);
  if (rc != 0)
    return rc;
  *size = o->size;
  object_release(s, o);
  return 0;
}

/* Block b of o present in the cache file and checked: from the cache when
 * its mark is there and its bytes match, else with one ranged GET. */
static int load_block(s3_store *s, s3_object *o, uint64_t b, unsigned char *buf, char *msg,
                      size_t msglen) {
  uint64_t off = b * o->block, len = o->size - off;
  if (len > o->block)
    len = o->block;
  unsigned char digest[32], mark = 0;
  if (pread(o->marks_fd, &mark, 1, (off_t)(BLOCKS_HEADER + b)) == 1 && mark == 1 &&
      pread(o->data_fd, buf, (size_t)len, (off_t)off) == (ssize_t)len) {
    sha256_ctx *c = sha256_new();
    if (c != NULL) {
      sha256_update(c, buf, (size_t)len);
      sha256_final_raw(c, digest);
      if (memcmp(digest, o->hashes + 32 * b, 32) == 0)
        return 0; /* a good copy from before */
    }
  }
  char key[1200], range[64];
  key_of(s, o->id, "f64", key, sizeof key);
  snprintf(range, sizeof range, "bytes=%llu-%llu", (unsigned long long)off,
           (unsigned long long)(off + len - 1));
  s3_call c = {.method = "GET", .key = key, .range = range, .in_fd = -1, .out = (char *)buf,
               .out_cap = (size_t)len, .counter = &s->fetched};
  int rc = s3_request(s, &c, msg, msglen);
  if (rc == HISTD_ENOENT)
    snprintf(msg, msglen, "block %llu of %s is gone from s3://%s/%s", (unsigned long long)b,
             o->id, s->bucket, key);
  if (rc == HISTD_ETOOBIG) { /* a server that ignores Range, or another object */
    snprintf(msg, msglen, "block %llu of %s: S3 sent more than its %llu bytes: refused",
             (unsigned long long)b, o->id, (unsigned long long)len);
    rc = HISTD_EIO;
  }
  if (rc != 0)
    return rc;
  sha256_ctx *h = sha256_new();
  if (h == NULL) {
    snprintf(msg, msglen, "out of memory checking block %llu of %s", (unsigned long long)b,
             o->id);
    return HISTD_ENOMEM;
  }
  sha256_update(h, buf, c.out_len);
  sha256_final_raw(h, digest);
  if (c.out_len != len || memcmp(digest, o->hashes + 32 * b, 32) != 0) {
    snprintf(msg, msglen,
             "block %llu of %s (bytes %llu-%llu) as S3 served it does not match the "
             "manifest's SHA-256: refused",
             (unsigned long long)b, o->id, (unsigned long long)off,
             (unsigned long long)(off + len - 1));
    return HISTD_EIO;
  }
  mark = 1;
  if (pwrite(o->data_fd, buf, (size_t)len, (off_t)off) != (ssize_t)len ||
      pwrite(o->marks_fd, &mark, 1, (off_t)(BLOCKS_HEADER + b)) != 1) {
    snprintf(msg, msglen, "block %llu of %s cannot be written to the cache: %s",
             (unsigned long long)b, o->id, strerror(errno));
    return HISTD_EIO;
  }
  return 0;
}

int s3_store_fetch(s3_store *s, const char *id, uint64_t off, uint64_t len, char *path,
                   size_t pathlen, char *msg, size_t msglen) {
  s3_object *o;
  int rc = object_get(s, id, &o, msg, msglen);
  if (rc != 0)
    return rc;
  if (off > o->size || len > o->size - off) {
    snprintf(msg, msglen, "bytes %llu+%llu are past the end of %s (%llu bytes)",
             (unsigned long long)off, (unsigned long long)len, id,
             (unsigned long long)o->size);
    object_release(s, o);
    return HISTD_EINVAL;
  }
  unsigned char *buf = NULL;
  uint64_t first = off / o->block, last = len ? (off + len - 1) / o->block + 1 : first;
  for (uint64_t b = first; rc == 0 && b < last; b++) {
    pthread_mutex_lock(&s->mu);
    while (o->state[b] == BLOCK_BUSY)
      pthread_cond_wait(&s->cv, &s->mu);
    bool ready = o->state[b] == BLOCK_READY;
    if (!ready)
      o->state[b] = BLOCK_BUSY;
    pthread_mutex_unlock(&s->mu);
    if (ready)
      continue;
    if (buf == NULL && (buf = malloc(o->block)) == NULL) {
      snprintf(msg, msglen, "out of memory fetching %s", id);
      rc = HISTD_ENOMEM;
    } else {
      rc = load_block(s, o, b, buf, msg, msglen);
    }
    pthread_mutex_lock(&s->mu);
    o->state[b] = rc == 0 ? BLOCK_READY : BLOCK_ABSENT;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
  }
  free(buf);
  if (rc == 0 && snprintf(path, pathlen, "%s/%s.f64", s->cache_dir, id) >= (int)pathlen) {
    snprintf(msg, msglen, "the cache path of %s is too long", id);
    rc = HISTD_EINVAL;
  }
  object_release(s, o);
  return rc;
}

int s3_store_delete(s3_store *s, const char *id, char *msg, size_t msglen) {
  char key[1200];
  key_of(s, id, "manifest", key, sizeof key); /* the manifest first: the object's commit mark */
  s3_call c = {.method = "DELETE", .key = key, .in_fd = -1};
  int rc = s3_request(s, &c, msg, msglen);
  if (rc == 0 || rc == HISTD_ENOENT) {
    key_of(s, id, "f64", key, sizeof key);
    s3_call d = {.method = "DELETE", .key = key, .in_fd = -1};
    rc = s3_request(s, &d, msg, msglen);
  }
  if (rc == HISTD_ENOENT)
    rc = 0;
  if (rc != 0)
    return rc;
  /* this node's copy: unlisted now, freed when the last fetch lets go */
  s3_object *gone = NULL;
  pthread_mutex_lock(&s->mu);
  for (s3_object **p = &s->objects; *p != NULL; p = &(*p)->next)
    if (strcmp((*p)->id, id) == 0) {
      gone = *p;
      *p = gone->next;
      break;
    }
  pthread_mutex_unlock(&s->mu);
  if (gone != NULL)
    object_release(s, gone);
  char path[4200];
  snprintf(path, sizeof path, "%s/%s.f64", s->cache_dir, id);
  unlink(path);
  snprintf(path, sizeof path, "%s/%s.blocks", s->cache_dir, id);
  unlink(path);
  return 0;
}
