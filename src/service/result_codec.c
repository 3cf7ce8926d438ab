/*
 * result_codec.c -- a result's counts as the store keeps them (the jobs
 * table's r_counts blob), and back.
 *
 * Most counts of a histogram with many buckets are zero: 2 points in
 * 16,777,216 buckets are one 1 and 16,777,215 zeros, 128 MiB as raw
 * uint64s. So the blob is a run-length code of varints:
 *
 *     version 1:  0x01, varint(buckets),
 *                 then until `buckets` counts are told:
 *                   varint(zeros), varint(k), k x varint(count)   (k >= 0)
 *                 and one 0x00 pad byte when the length would otherwise
 *                 be a multiple of 8
 *
 * (a varint: 7 bits a byte, low first, the high bit set on all but the
 * last). 2 points in 16 Mi buckets take a dozen bytes; a dense histogram
 * of small counts takes 1-3 bytes a bucket instead of 8.
 *
 * Version 0 is what histd wrote before this file: buckets x 8 bytes, the
 * raw uint64s in host (little-endian) order, no header. A version-1 blob
 * never has a length that is a multiple of 8 (hence the pad byte), so the
 * length alone tells the two apart: exactly buckets x 8 bytes is version 0,
 * anything else starts with its version byte. Any other length, or a blob
 * that does not decode to exactly `buckets` counts, is an error with a
 * sentence, never a histogram of zeros.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service.h"

#define CODEC_VERSION 1

static size_t put_varint(unsigned char *p, uint64_t v) {
  size_t n = 0;
  while (v >= 0x80) {
    p[n++] = (unsigned char)(v | 0x80);
    v >>= 7;
  }
  p[n++] = (unsigned char)v;
  return n;
}

/* 0, or -1 when the varint is cut off or longer than 64 bits. */
static int get_varint(const unsigned char *p, size_t len, size_t *at, uint64_t *out) {
  uint64_t v = 0;
  for (unsigned shift = 0; shift < 64; shift += 7) {
    if (*at >= len)
      return -1;
    unsigned char b = p[(*at)++];
    if (shift == 63 && (b & 0x7e) != 0)
      return -1;
    v |= (uint64_t)(b & 0x7f) << shift;
    if ((b & 0x80) == 0) {
      *out = v;
      return 0;
    }
  }
  return -1;
}

int result_counts_encode(const uint64_t *counts, uint32_t buckets, unsigned char **blob,
                         size_t *len, char *msg, size_t msglen) {
  /* at worst a run header per bucket: 2 + 10 bytes */
  size_t cap = 1 + 10 + (size_t)buckets * 12 + 1;
  unsigned char *p = malloc(cap);
  if (p == NULL)
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory to encode a result of %u "
                                                 "buckets", buckets);
  size_t n = 0;
  p[n++] = CODEC_VERSION;
  n += put_varint(p + n, buckets);
  uint32_t b = 0;
  while (b < buckets) {
    uint32_t z = b;
    while (z < buckets && counts[z] == 0)
      z++;
    uint32_t e = z;
    while (e < buckets && counts[e] != 0)
      e++;
    n += put_varint(p + n, z - b);
    n += put_varint(p + n, e - z);
    for (uint32_t i = z; i < e; i++)
      n += put_varint(p + n, counts[i]);
    b = e;
  }
  if (n % 8 == 0)
    p[n++] = 0;
  unsigned char *shrunk = realloc(p, n);
  *blob = shrunk ? shrunk : p;
  *len = n;
  return 0;
}

static int corrupt(char *msg, size_t msglen, size_t len, uint32_t buckets, const char *why) {
  return histd_fail(msg, msglen, HISTD_EIO,
                    "the stored result is corrupt (%zu bytes for %u buckets: %s)", len, buckets,
                    why);
}

int result_counts_decode(const void *blob, size_t len, uint32_t buckets, uint64_t **out,
                         char *msg, size_t msglen) {
  const unsigned char *p = blob;
  *out = NULL;
  if (p == NULL)
    len = 0;
  if (len != (size_t)buckets * 8 && (len == 0 || len % 8 == 0))
    return corrupt(msg, msglen, len, buckets, "neither the raw nor the encoded form");
  uint64_t *c = calloc(buckets ? buckets : 1, sizeof *c);
  if (c == NULL)
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for a result of %u buckets",
                      buckets);
  if (len == (size_t)buckets * 8) { /* version 0: raw */
    memcpy(c, p, len);
    *out = c;
    return 0;
  }
  if (p[0] != CODEC_VERSION) {
    free(c);
    char why[64];
    snprintf(why, sizeof why, "unknown encoding version %u", p[0]);
    return corrupt(msg, msglen, len, buckets, why);
  }
  size_t at = 1;
  uint64_t stated;
  const char *why = NULL;
  if (get_varint(p, len, &at, &stated) != 0 || stated != buckets)
    why = "its bucket count differs from the job's";
  uint64_t b = 0;
  while (why == NULL && b < buckets) {
    uint64_t zeros, k;
    if (get_varint(p, len, &at, &zeros) != 0 || get_varint(p, len, &at, &k) != 0) {
      why = "it ends early";
      break;
    }
    if (zeros > buckets - b || k > buckets - b - zeros || (zeros == 0 && k == 0)) {
      why = "a run goes past the last bucket";
      break;
    }
    b += zeros;
    for (uint64_t i = 0; i < k; i++)
      if (get_varint(p, len, &at, &c[b++]) != 0) {
        why = "it ends early";
        break;
      }
  }
  /* what is left: nothing, or the one pad byte */
  if (why == NULL && !(at == len || (at + 1 == len && p[at] == 0 && at % 8 == 0)))
    why = "bytes follow the last bucket";
  if (why != NULL) {
    free(c);
    return corrupt(msg, msglen, len, buckets, why);
  }
  *out = c;
  return 0;
}
