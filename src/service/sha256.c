/*
 * sha256.c -- content hashes for dataset ids.
 *
 * A dataset's id is a SHA-256 tree hash of its float64 structure-of-arrays
 * payload: SHA-256(SHA-256(x bytes) || SHA-256(y bytes) || SHA-256(z bytes)),
 * the arrays as stored (little-endian float64), so the same points uploaded
 * twice, in any format, get the same id and one file. Three leaves rather
 * than one stream so that the three arrays hash in parallel, and so that a
 * raw float64 upload, whose x, y and z arrive interleaved, can be hashed
 * while it streams in. SHA-256 rather than a faster non-cryptographic hash
 * because ids are shared between users: two different point sets must
 * never be made to collide on purpose.
 *
 * The digests come from OpenSSL's libcrypto (SHA-NI or AVX2 code paths,
 * ~1.5-2 GB/s): a well-kept library beats a hand-written SHA-256.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "sha256.h"

static void to_hex(const unsigned char d[32], char hex[65]) {
  static const char digits[] = "0123456789abcdef";
  for (int i = 0; i < 32; i++) {
    hex[2 * i] = digits[d[i] >> 4];
    hex[2 * i + 1] = digits[d[i] & 15];
  }
  hex[64] = '\0';
}

struct sha256_ctx {
  EVP_MD_CTX *md;
};

sha256_ctx *sha256_new(void) {
  sha256_ctx *c = malloc(sizeof *c);
  if (c == NULL)
    return NULL;
  c->md = EVP_MD_CTX_new();
  if (c->md == NULL || EVP_DigestInit_ex(c->md, EVP_sha256(), NULL) != 1) {
    EVP_MD_CTX_free(c->md);
    free(c);
    return NULL;
  }
  return c;
}

void sha256_update(sha256_ctx *c, const void *data, size_t len) {
  EVP_DigestUpdate(c->md, data, len);
}

void sha256_final_raw(sha256_ctx *c, unsigned char d[32]) {
  unsigned int dl = 32;
  EVP_DigestFinal_ex(c->md, d, &dl);
  EVP_MD_CTX_free(c->md);
  free(c);
}


void sha256_final_hex(sha256_ctx *c, char hex[65]) {
  unsigned char d[32];
  sha256_final_raw(c, d);
  to_hex(d, hex);
}

void sha256_hex(const void *data, size_t len, char hex[65]) {
  sha256_ctx *c = sha256_new();
  if (c == NULL) {
    memset(hex, '0', 64);
    hex[64] = '\0';
    return;
  }
  sha256_update(c, data, len);
  sha256_final_hex(c, hex);
}

/* ---- dataset ids ------------------------------------------------------------- */

struct dataset_hasher {
  sha256_ctx *axis[3];
};

dataset_hasher *dataset_hasher_new(void) {
  dataset_hasher *h = calloc(1, sizeof *h);
  if (h == NULL)
    return NULL;
  for (int a = 0; a < 3; a++)
    if ((h->axis[a] = sha256_new()) == NULL) {
      dataset_hasher_free(h);
      return NULL;
    }
  return h;
}

void dataset_hasher_update(dataset_hasher *h, int axis, const void *data, size_t len) {
  sha256_update(h->axis[axis], data, len);
}

void dataset_hasher_final_hex(dataset_hasher *h, char hex[65]) {
  unsigned char leaves[96];
  for (int a = 0; a < 3; a++) {
    sha256_final_raw(h->axis[a], leaves + 32 * a);
    h->axis[a] = NULL;
  }
  free(h);
  sha256_hex(leaves, sizeof leaves, hex);
}

void dataset_hasher_free(dataset_hasher *h) {
  if (h == NULL)
    return;
  for (int a = 0; a < 3; a++)
    if (h->axis[a] != NULL) {
      unsigned char d[32];
      sha256_final_raw(h->axis[a], d);
    }
  free(h);
}

typedef struct leaf_job {
  const double *data;
  size_t n;
  unsigned char digest[32];
} leaf_job;

static void *leaf_main(void *arg) {
  leaf_job *j = arg;
  sha256_ctx *c = sha256_new();
  if (c == NULL) {
    memset(j->digest, 0, 32);
    return NULL;
  }
  sha256_update(c, j->data, j->n * sizeof(double));
  sha256_final_raw(c, j->digest);
  return NULL;
}

void dataset_id_hex(const double *x, const double *y, const double *z, size_t n,
                    char hex[65]) {
  dataset_id_hex_tail(x, y, z, n, NULL, 0, hex);
}

void dataset_id_hex_tail(const double *x, const double *y, const double *z, size_t n,
                         const double *tail, size_t tail_len, char hex[65]) {
  leaf_job j[3] = {{x, n, {0}}, {y, n, {0}}, {z, n, {0}}};
  pthread_t t[2];
  bool threaded[2] = {false, false};
  for (int a = 1; a < 3; a++) /* y and z beside us on big sets; x here */
    threaded[a - 1] = n * sizeof(double) >= ((size_t)1 << 20) &&
                      pthread_create(&t[a - 1], NULL, leaf_main, &j[a]) == 0;
  leaf_main(&j[0]);
  for (int a = 1; a < 3; a++) {
    if (threaded[a - 1])
      pthread_join(t[a - 1], NULL);
    else
      leaf_main(&j[a]);
  }
  unsigned char leaves[128];
  for (int a = 0; a < 3; a++)
    memcpy(leaves + 32 * a, j[a].digest, 32);
  if (tail_len == 0) {
    sha256_hex(leaves, 96, hex);
    return;
  }
  leaf_job tj = {tail, tail_len, {0}};
  leaf_main(&tj);
  memcpy(leaves + 96, tj.digest, 32);
  sha256_hex(leaves, sizeof leaves, hex);
}
