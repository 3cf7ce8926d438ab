/*
 * partial.c -- a shard's result as bytes, and back.
 *
 * A partial travels between machines: a batch task writes it to
 * DIR/partials/<shard>, a cluster node commits it to PostgreSQL, and the
 * merger reads it back (histd_result_add). So it must round-trip every
 * field that adding needs bit for bit: counts and per-frame counts as
 * uint64, weighted sums, the volume and density as binary64 (their bits,
 * not a decimal rendering), the bins with their edges, so the merger can
 * refuse a partial of other bins.
 *
 * Layout: "HSDP" and a version byte (2), then the result as the store
 * keeps it (result_codec.c, by the result schema: every kept field, by
 * name): its head's length (8 bytes, little-endian) and the head, its
 * arrays' length and the arrays. The decoder checks every length against
 * the bytes it was given and answers a sentence, never reads past the end.
 */
#include <stdlib.h>
#include <string.h>

#include "histd/io.h"
#include "io_internal.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "partial.c writes host-order fields: little-endian hosts only"
#endif

#define MAGIC "HSDP"
#define VERSION 2

static void le64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t rd64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}

int histd_partial_encode(const histd_result *r, unsigned char **out, size_t *len, char *msg,
                         size_t msglen) {
  unsigned char *head, *arrays;
  size_t hl, al;
  int rc = histd_result_encode(r, &head, &hl, &arrays, &al, msg, msglen);
  if (rc != 0)
    return rc;
  const size_t n = 5 + 8 + hl + 8 + al;
  unsigned char *p = malloc(n);
  if (p == NULL) {
    free(head);
    free(arrays);
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for a partial of %zu bytes", n);
  }
  memcpy(p, MAGIC, 4);
  p[4] = VERSION;
  le64(p + 5, hl);
  memcpy(p + 13, head, hl);
  le64(p + 13 + hl, al);
  memcpy(p + 21 + hl, arrays, al);
  free(head);
  free(arrays);
  *out = p;
  *len = n;
  return 0;
}

int histd_partial_decode(const void *bytes, size_t len, histd_result *r, char *msg,
                         size_t msglen) {
  const unsigned char *p = bytes;
  memset(r, 0, sizeof *r);
  if (len < 13 || memcmp(p, MAGIC, 4) != 0 || p[4] != VERSION)
    return histd_fail(msg, msglen, HISTD_EIO, "not a histd partial of version %d", VERSION);
  const uint64_t hl = rd64(p + 5);
  if (hl > len - 13 || len - 13 - hl < 8)
    return histd_fail(msg, msglen, HISTD_EIO, "the partial is truncated (%zu bytes)", len);
  const uint64_t al = rd64(p + 13 + hl);
  if (al != len - 21 - hl)
    return histd_fail(msg, msglen, HISTD_EIO, "the partial is %s (%zu bytes)",
                      al > len - 21 - hl ? "truncated" : "longer than its fields", len);
  return histd_result_decode(p + 13, (size_t)hl, p + 21 + hl, (size_t)al, r, msg, msglen);
}
