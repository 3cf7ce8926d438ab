/*
 * sha256.c -- content hashes for dataset ids.
 *
 * A dataset's id is the SHA-256 of its float64 structure-of-arrays payload
 * (x[0..n), y[0..n), z[0..n), little-endian), so the same points uploaded
 * twice, in any format, get the same id and one file. SHA-256 rather than a
 * faster non-cryptographic hash because ids are shared between users: two
 * different point sets must never be made to collide on purpose.
 *
 * With OpenSSL's libcrypto (SHA-NI or AVX2 code paths, ~1.5-2 GB/s) when the
 * build finds it; otherwise the portable FIPS 180-4 code below (~300 MB/s).
 * Both give the same digest, so a data dir moves freely between builds.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service.h"

static void to_hex(const unsigned char d[32], char hex[65]) {
  static const char digits[] = "0123456789abcdef";
  for (int i = 0; i < 32; i++) {
    hex[2 * i] = digits[d[i] >> 4];
    hex[2 * i + 1] = digits[d[i] & 15];
  }
  hex[64] = '\0';
}

#ifdef HISTD_HAVE_OPENSSL
#include <openssl/evp.h>

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

void sha256_final_hex(sha256_ctx *c, char hex[65]) {
  unsigned char d[32];
  unsigned int dl = 32;
  EVP_DigestFinal_ex(c->md, d, &dl);
  EVP_MD_CTX_free(c->md);
  free(c);
  to_hex(d, hex);
}

#else /* portable SHA-256 */

struct sha256_ctx {
  uint32_t h[8];
  uint64_t bytes;
  unsigned char buf[64];
  size_t fill;
};

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
    0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
    0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
    0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
    0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
    0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
    0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void block(uint32_t h[8], const unsigned char *p) {
  uint32_t w[64];
  for (int i = 0; i < 16; i++)
    w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
           (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
  for (int i = 16; i < 64; i++) {
    uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
  for (int i = 0; i < 64; i++) {
    uint32_t t1 = hh + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
    uint32_t t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    hh = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
  }
  h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
}

sha256_ctx *sha256_new(void) {
  sha256_ctx *c = calloc(1, sizeof *c);
  if (c == NULL)
    return NULL;
  static const uint32_t init[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  memcpy(c->h, init, sizeof init);
  return c;
}

void sha256_update(sha256_ctx *c, const void *data, size_t len) {
  const unsigned char *p = data;
  c->bytes += len;
  if (c->fill) {
    size_t take = 64 - c->fill < len ? 64 - c->fill : len;
    memcpy(c->buf + c->fill, p, take);
    c->fill += take; p += take; len -= take;
    if (c->fill < 64)
      return;
    block(c->h, c->buf);
    c->fill = 0;
  }
  for (; len >= 64; p += 64, len -= 64)
    block(c->h, p);
  memcpy(c->buf, p, len);
  c->fill = len;
}

void sha256_final_hex(sha256_ctx *c, char hex[65]) {
  uint64_t bits = c->bytes * 8;
  unsigned char pad = 0x80, zero = 0, len[8];
  sha256_update(c, &pad, 1);
  while (c->fill != 56)
    sha256_update(c, &zero, 1);
  for (int i = 0; i < 8; i++)
    len[i] = (unsigned char)(bits >> (56 - 8 * i));
  sha256_update(c, len, 8);
  unsigned char d[32];
  for (int i = 0; i < 8; i++) {
    d[4 * i] = (unsigned char)(c->h[i] >> 24);
    d[4 * i + 1] = (unsigned char)(c->h[i] >> 16);
    d[4 * i + 2] = (unsigned char)(c->h[i] >> 8);
    d[4 * i + 3] = (unsigned char)c->h[i];
  }
  free(c);
  to_hex(d, hex);
}
#endif

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
