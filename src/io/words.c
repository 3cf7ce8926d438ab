/*
 * words.c -- a result's arrays as the store keeps them (result_codec.c's
 * array part; before schema 8, the jobs table's r_counts, r_weighted and
 * r_per_frame blobs), and back.
 *
 * Most cells of a histogram with many buckets are zero: 2 points in
 * 16,777,216 buckets are one 1 and 16,777,215 zeros, 128 MiB as raw
 * uint64s, and as much again for their weighted sums, or for each frame of
 * a per-frame table. So every blob is a run-length code of 8-byte words:
 *
 *     version 1 or 2:  the version byte, varint(words),
 *                      then until `words` words are told:
 *                        varint(zeros), varint(k), k x value   (k >= 0)
 *                      and one 0x00 pad byte when the length would
 *                      otherwise be a multiple of 8
 *
 * (a varint: 7 bits a byte, low first, the high bit set on all but the
 * last). A value is a varint in version 1 (counts: 1-3 bytes for small
 * ones) and the word's 8 bytes, little-endian, in version 2 (the bits of
 * float64 sums, which make poor varints; a zero word is +0.0). 2 points in
 * 16 Mi buckets take a dozen bytes either way.
 *
 * The words of each blob, which a caller hands over as parts (arrays of
 * words, one after another), so that neither side builds a copy:
 *
 *     r_counts     counts[0..buckets)                               version 1
 *     r_weighted   the weighted sums' bits [0..buckets)             version 2
 *     r_per_frame  for each frame: its pairs, its volume's bits,    version 1
 *                  its counts[0..buckets)
 *
 * Version 0 is what histd wrote before: the words raw, 8 bytes each in
 * host (little-endian) order, no header (counts before this file,
 * weighted sums and per-frame tables before schema 6). A version-1 or -2
 * blob never has a length that is a multiple of 8 (hence the pad byte), so
 * the length alone tells them apart: exactly words x 8 bytes is version 0,
 * anything else starts with its version byte. Any other length, or a blob
 * that does not decode to exactly `words` words, is an error with a
 * sentence, never a histogram of zeros.
 *
 * words_bound gives the most bytes a blob can take from what is
 * known before a job runs (how many words, how many of them at most are
 * not zero, how long their values can be), so that a job whose result
 * could pass --max-result-bytes is refused when it is submitted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io_internal.h"

enum { CODEC_RAW = 0, CODEC_VARINTS = 1, CODEC_FIXED = 2 };

/* Writes v at p (NULL: only counts); the bytes it takes. */
static size_t put_varint(unsigned char *p, uint64_t v) {
  size_t n = 0;
  while (v >= 0x80) {
    if (p != NULL)
      p[n] = (unsigned char)(v | 0x80);
    n++;
    v >>= 7;
  }
  if (p != NULL)
    p[n] = (unsigned char)v;
  return n + 1;
}

static uint64_t varint_bytes(uint64_t v) { return put_varint(NULL, v); }

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

/* Word i of the parts (i below their total), read or written through
 * memcpy: a part may hold uint64s or doubles. */
typedef struct cursor {
  const histd_words *parts;
  size_t part;
  uint64_t at; /* within parts[part] */
} cursor;

static unsigned char *word_at(cursor *c) {
  while (c->at >= c->parts[c->part].count) {
    c->part++;
    c->at = 0;
  }
  return (unsigned char *)c->parts[c->part].words + 8 * c->at++;
}

static uint64_t next_word(cursor *c) {
  uint64_t w;
  memcpy(&w, word_at(c), 8);
  return w;
}

static uint64_t total_words(const histd_words *parts, size_t nparts) {
  uint64_t n = 0;
  for (size_t k = 0; k < nparts; k++)
    n += parts[k].count;
  return n;
}

/* The blob into p (NULL: only its length, returned). */
static size_t encode_into(unsigned char *p, const histd_words *parts, uint64_t words,
                          bool fixed) {
  size_t n = 0;
  if (p != NULL)
    p[0] = fixed ? CODEC_FIXED : CODEC_VARINTS;
  n++;
  n += put_varint(p ? p + n : NULL, words);
  cursor c = {parts, 0, 0};
  for (uint64_t b = 0; b < words;) {
    cursor look = c; /* the run's length first: its header comes before it */
    uint64_t zeros = 0, k = 0;
    while (b + zeros < words && next_word(&look) == 0)
      zeros++;
    if (b + zeros < words)
      for (k = 1; b + zeros + k < words && next_word(&look) != 0;)
        k++;
    n += put_varint(p ? p + n : NULL, zeros);
    n += put_varint(p ? p + n : NULL, k);
    for (uint64_t i = 0; i < zeros; i++)
      (void)word_at(&c);
    for (uint64_t i = 0; i < k; i++) {
      uint64_t v = next_word(&c);
      if (!fixed) {
        n += put_varint(p ? p + n : NULL, v);
        continue;
      }
      if (p != NULL)
        memcpy(p + n, &v, 8);
      n += 8;
    }
    b += zeros + k;
  }
  if (n % 8 == 0) {
    if (p != NULL)
      p[n] = 0;
    n++;
  }
  return n;
}

int histd_words_encode(const histd_words *parts, size_t nparts, bool fixed,
                        unsigned char **blob, size_t *len, char *msg, size_t msglen) {
  const uint64_t words = total_words(parts, nparts);
  const size_t n = encode_into(NULL, parts, words, fixed);
  unsigned char *p = malloc(n);
  if (p == NULL)
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory to encode a result (%zu bytes)",
                      n);
  encode_into(p, parts, words, fixed);
  *blob = p;
  *len = n;
  return 0;
}

/* The most bytes histd_words_encode can give for `words` words of which
 * at most `nonzero` are not 0, whose values take at most value_bytes. */
static uint64_t words_bound(uint64_t words, uint64_t nonzero, uint64_t value_bytes) {
  if (nonzero > words)
    nonzero = words;
  /* runs of values are parted by zeros: at most one more than the zeros */
  const uint64_t runs = nonzero < words / 2 + 1 ? nonzero : words / 2 + 1;
  const uint64_t l = varint_bytes(words);
  return 1 + l + (runs + 1) * 2 * l + value_bytes + 1;
}

static int corrupt(char *msg, size_t msglen, size_t len, uint64_t words, const char *why) {
  return histd_fail(msg, msglen, HISTD_EIO, "%zu bytes for %llu values: %s", len,
                    (unsigned long long)words, why);
}

int histd_words_decode(const void *blob, size_t len, const histd_words *parts, size_t nparts,
                        char *msg, size_t msglen) {
  const unsigned char *p = blob;
  const uint64_t words = total_words(parts, nparts);
  if (p == NULL)
    len = 0;
  cursor c = {parts, 0, 0};
  if (len / 8 == words && len % 8 == 0) { /* version 0: raw */
    for (uint64_t i = 0; i < words; i++)
      memcpy(word_at(&c), p + 8 * i, 8);
    return 0;
  }
  if (len == 0 || len % 8 == 0)
    return corrupt(msg, msglen, len, words, "neither the raw nor the encoded form");
  const bool fixed = p[0] == CODEC_FIXED;
  if (p[0] != CODEC_VARINTS && !fixed) {
    char why[64];
    snprintf(why, sizeof why, "unknown encoding version %u", p[0]);
    return corrupt(msg, msglen, len, words, why);
  }
  size_t at = 1;
  uint64_t stated;
  const char *why = NULL;
  if (get_varint(p, len, &at, &stated) != 0 || stated != words)
    why = "its length differs from the job's";
  static const uint64_t zero = 0;
  uint64_t b = 0;
  while (why == NULL && b < words) {
    uint64_t zeros, k;
    if (get_varint(p, len, &at, &zeros) != 0 || get_varint(p, len, &at, &k) != 0) {
      why = "it ends early";
      break;
    }
    if (zeros > words - b || k > words - b - zeros || (zeros == 0 && k == 0)) {
      why = "a run goes past the last word";
      break;
    }
    for (uint64_t i = 0; i < zeros; i++)
      memcpy(word_at(&c), &zero, 8);
    b += zeros + k;
    for (uint64_t i = 0; i < k && why == NULL; i++) {
      uint64_t v;
      if (fixed && len - at >= 8) {
        memcpy(&v, p + at, 8);
        at += 8;
      } else if (fixed || get_varint(p, len, &at, &v) != 0) {
        why = "it ends early";
        break;
      }
      memcpy(word_at(&c), &v, 8);
    }
  }
  /* what is left: nothing, or the one pad byte */
  if (why == NULL && !(at == len || (at + 1 == len && p[at] == 0 && at % 8 == 0)))
    why = "bytes follow the last word";
  return why == NULL ? 0 : corrupt(msg, msglen, len, words, why);
}

uint64_t histd_result_stored_bound(uint32_t buckets, uint64_t frames, uint64_t pairs, bool weighted,
                             bool per_frame) {
  /* a count is at most the pairs, and at most `pairs` cells are not zero */
  const uint64_t count_bytes = varint_bytes(pairs);
  uint64_t nonzero = buckets < pairs ? buckets : pairs;
  uint64_t bound = words_bound(buckets, nonzero, nonzero * count_bytes);
  if (weighted)
    bound += words_bound(buckets, nonzero, nonzero * 8);
  if (per_frame) { /* each frame's pairs and volume, then its counts */
    const uint64_t cells = frames * buckets;
    nonzero = cells < pairs ? cells : pairs;
    bound += words_bound(frames * ((uint64_t)buckets + 2), 2 * frames + nonzero,
                                frames * (count_bytes + 10) + nonzero * count_bytes);
  }
  return bound;
}
