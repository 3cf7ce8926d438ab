/*
 * sha256.h -- content hashes (sha256.c): SHA-256 and the dataset ids made
 * of it. The daemon's store, batch's plans and seals, and the S3 client's
 * signatures and block checks share it.
 */
#ifndef HISTD_SHA256_H
#define HISTD_SHA256_H

#include <stddef.h>

typedef struct sha256_ctx sha256_ctx;
sha256_ctx *sha256_new(void);
void sha256_update(sha256_ctx *c, const void *data, size_t len);
void sha256_final_hex(sha256_ctx *c, char hex[65]); /* frees c */
void sha256_final_raw(sha256_ctx *c, unsigned char d[32]); /* frees c */
void sha256_hex(const void *data, size_t len, char hex[65]);

/* Dataset ids: SHA-256(SHA-256(x) || SHA-256(y) || SHA-256(z)) over the
 * float64 arrays; at once (the three leaves in parallel), or streaming. */
void dataset_id_hex(const double *x, const double *y, const double *z, size_t n,
                    char hex[65]);
/* The same for a payload with a tail (weights, the frame table: tail_len
 * doubles after z): SHA-256(H(x) || H(y) || H(z) || H(tail)); no tail is
 * dataset_id_hex, so a dataset of points only keeps its id. */
void dataset_id_hex_tail(const double *x, const double *y, const double *z, size_t n,
                         const double *tail, size_t tail_len, char hex[65]);
typedef struct dataset_hasher dataset_hasher;
dataset_hasher *dataset_hasher_new(void);
void dataset_hasher_update(dataset_hasher *h, int axis, const void *data, size_t len);
void dataset_hasher_final_hex(dataset_hasher *h, char hex[65]); /* frees h */
void dataset_hasher_free(dataset_hasher *h);

#endif
