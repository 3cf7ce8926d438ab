/*
 * sigv4.c -- AWS Signature Version 4 for the S3 backend of the shared
 * store (s3.c), written here rather than taken from an SDK: it is one
 * canonical string, one string to sign and five HMAC-SHA256 steps, and
 * OpenSSL (already linked for dataset ids) has the HMAC.
 *
 *   canonical request = METHOD \n URI \n QUERY \n
 *                       name:value \n ... (signed headers, sorted) \n
 *                       name;name;... \n PAYLOAD-HASH
 *   string to sign    = AWS4-HMAC-SHA256 \n DATE-TIME \n
 *                       DATE/REGION/s3/aws4_request \n hex(SHA-256(canonical))
 *   signing key       = HMAC(HMAC(HMAC(HMAC("AWS4" SECRET, DATE), REGION), "s3"),
 *                       "aws4_request")
 *   signature         = hex(HMAC(signing key, string to sign))
 *
 * The caller gives the URI and query already in canonical form (s3.c
 * builds keys from hex ids and a prefix it encodes once) and the headers
 * it will send with lowercase names; this file sorts them and trims
 * nothing, so what is signed is exactly what goes on the wire. The
 * known-answer test is the AWS documentation's "GET /test.txt" example
 * (tests/cluster/test_shared_store.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/hmac.h>

#include "s3.h"
#include "histd/histd.h"
#include "sha256.h"

static void hmac256(const void *key, size_t keylen, const char *msg, unsigned char out[32]) {
  unsigned int len = 32;
  HMAC(EVP_sha256(), key, (int)keylen, (const unsigned char *)msg, strlen(msg), out, &len);
}

static int cmp_header(const void *a, const void *b) {
  return strcmp(((const sigv4_header *)a)->name, ((const sigv4_header *)b)->name);
}

/* Appends to buf[*pos..cap); false when it would not fit. */
static bool put(char *buf, size_t cap, size_t *pos, const char *fmt, const char *a,
                const char *b) {
  int n = snprintf(buf + *pos, cap - *pos, fmt, a, b);
  if (n < 0 || (size_t)n >= cap - *pos)
    return false;
  *pos += (size_t)n;
  return true;
}

int sigv4_sign(const sigv4_request *r, char *authorization, size_t len,
               char *string_to_sign, size_t stslen) {
  enum { MAXH = 8 };
  if (r->nheaders > MAXH)
    return HISTD_EINVAL;
  sigv4_header h[MAXH];
  memcpy(h, r->headers, r->nheaders * sizeof *h);
  qsort(h, r->nheaders, sizeof *h, cmp_header);

  char canon[8192], names[512];
  size_t cp = 0, np = 0;
  bool ok = put(canon, sizeof canon, &cp, "%s\n%s\n", r->method, r->uri) &&
            put(canon, sizeof canon, &cp, "%s\n%s", r->query ? r->query : "", "");
  names[0] = '\0';
  for (size_t i = 0; ok && i < r->nheaders; i++)
    ok = put(canon, sizeof canon, &cp, "%s:%s\n", h[i].name, h[i].value) &&
         put(names, sizeof names, &np, i ? ";%s%s" : "%s%s", h[i].name, "");
  ok = ok && put(canon, sizeof canon, &cp, "\n%s\n%s", names, r->payload_hash);
  if (!ok || strlen(r->amz_date) != 16)
    return HISTD_EINVAL;

  char date[9], scope[256], canon_hash[65], sts[512];
  memcpy(date, r->amz_date, 8);
  date[8] = '\0';
  sha256_hex(canon, cp, canon_hash);
  if (snprintf(scope, sizeof scope, "%s/%s/s3/aws4_request", date, r->region) >=
          (int)sizeof scope ||
      snprintf(sts, sizeof sts, "AWS4-HMAC-SHA256\n%s\n%s\n%s", r->amz_date, scope,
               canon_hash) >= (int)sizeof sts)
    return HISTD_EINVAL;

  char ksecret[512];
  if (snprintf(ksecret, sizeof ksecret, "AWS4%s", r->secret_key) >= (int)sizeof ksecret)
    return HISTD_EINVAL;
  unsigned char k[32], sig[32];
  hmac256(ksecret, strlen(ksecret), date, k);
  hmac256(k, 32, r->region, k);
  hmac256(k, 32, "s3", k);
  hmac256(k, 32, "aws4_request", k);
  hmac256(k, 32, sts, sig);

  char hex[65];
  for (int i = 0; i < 32; i++)
    snprintf(hex + 2 * i, 3, "%02x", sig[i]);
  if (string_to_sign != NULL && (size_t)snprintf(string_to_sign, stslen, "%s", sts) >= stslen)
    return HISTD_EINVAL;
  int n = snprintf(authorization, len,
                   "AWS4-HMAC-SHA256 Credential=%s/%s,SignedHeaders=%s,Signature=%s",
                   r->access_key, scope, names, hex);
  return n < 0 || (size_t)n >= len ? HISTD_EINVAL : 0;
}
