/*
 * s3.h -- the shared store's S3 backend (s3.c) and its request signer
 * (sigv4.c); shared_store.c is their only caller besides the tests.
 */
#ifndef HISTD_S3_H
#define HISTD_S3_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- AWS Signature Version 4 (sigv4.c) ------------------------------------ */

typedef struct sigv4_header {
  const char *name;  /* lowercase, as sent */
  const char *value; /* as sent (no surrounding blanks) */
} sigv4_header;

typedef struct sigv4_request {
  const char *method;       /* "GET" */
  const char *uri;          /* the canonical (URI-encoded) path: "/bucket/key" */
  const char *query;        /* the canonical query string, or NULL */
  const sigv4_header *headers; /* the headers to sign (host among them), any order */
  size_t nheaders;          /* at most 8 */
  const char *payload_hash; /* hex SHA-256 of the body, or "UNSIGNED-PAYLOAD" */
  const char *amz_date;     /* "20130524T000000Z" (also sent as x-amz-date) */
  const char *region;
  const char *access_key;
  const char *secret_key;
} sigv4_request;

/* The Authorization header's value for r; also the string to sign when
 * string_to_sign is not NULL. 0, or HISTD_EINVAL when something is too long. */
int sigv4_sign(const sigv4_request *r, char *authorization, size_t len,
               char *string_to_sign, size_t stslen);

/* ---- the backend (s3.c) ----------------------------------------------------- */

typedef struct s3_store s3_store;

int s3_store_open(s3_store **out, const char *url, const char *cache_dir, char *msg,
                  size_t msglen);
void s3_store_close(s3_store *s);
void s3_store_set_block_bytes(s3_store *s, uint32_t bytes);
int s3_store_put(s3_store *s, const char *id, const char *local_path, char *msg,
                 size_t msglen);
int s3_store_size(s3_store *s, const char *id, uint64_t *size, char *msg, size_t msglen);
int s3_store_fetch(s3_store *s, const char *id, uint64_t off, uint64_t len, char *path,
                   size_t pathlen, char *msg, size_t msglen);
int s3_store_delete(s3_store *s, const char *id, char *msg, size_t msglen);
uint64_t s3_store_bytes_fetched(const s3_store *s);

#endif
