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
 * Layout: "HSDP" and a version byte, then fixed-size little-endian fields
 * in the order of the tables below, then the arrays. No alignment, no
 * padding. The decoder checks every length against the bytes it was given
 * and answers a sentence, never reads past the end.
 */
#include <stdlib.h>
#include <string.h>

#include "histd/io.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "partial.c writes host-order fields: little-endian hosts only"
#endif

#define MAGIC "HSDP"
#define VERSION 1

typedef struct buf {
  unsigned char *p;
  size_t len, cap;
  const unsigned char *in; /* decoding: the bytes, and how many are left */
  size_t left;
  bool bad;
} buf;

static void put(buf *b, const void *v, size_t n) {
  if (b->bad)
    return;
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 4096;
    while (cap < b->len + n)
      cap *= 2;
    unsigned char *p = realloc(b->p, cap);
    if (p == NULL) {
      b->bad = true;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->len, v, n);
  b->len += n;
}

static void get(buf *b, void *v, size_t n) {
  if (b->bad || b->left < n) {
    b->bad = true;
    memset(v, 0, n);
    return;
  }
  memcpy(v, b->in, n);
  b->in += n;
  b->left -= n;
}

/* The scalar fields, each encoded and decoded by one row. */
#define FIELDS(X)                                                                              \
  X(below) X(overflow) X(total) X(excluded) X(exclude_molecule) X(unit) X(select_a)           \
  X(select_b) X(n) X(n_b) X(cross) X(volume) X(density) X(frames) X(box_from_dataset)         \
  X(statistic) X(radius) X(within) X(precision) X(exact) X(refined_pairs) X(kernel) X(reason) \
  X(block_size) X(threads) X(device) X(timing)

static void fields(buf *b, histd_result *r, bool out) {
#define FIELD(f) (out ? put(b, &r->f, sizeof r->f) : get(b, &r->f, sizeof r->f));
  FIELDS(FIELD)
#undef FIELD
}

int histd_partial_encode(const histd_result *r, unsigned char **out, size_t *len, char *msg,
                         size_t msglen) {
  buf b = {0};
  const uint8_t version = VERSION, weighted = r->weighted != NULL,
                per_frame = r->frame_counts != NULL;
  const uint32_t count = r->bins.count;
  put(&b, MAGIC, 4);
  put(&b, &version, 1);
  put(&b, &r->bins.kind, sizeof r->bins.kind);
  put(&b, &count, sizeof count);
  put(&b, &r->bins.width, sizeof r->bins.width);
  if (r->bins.kind == HISTD_BINS_EDGES)
    put(&b, r->bins.edges, ((size_t)count + 1) * sizeof *r->bins.edges);
  put(&b, &weighted, 1);
  put(&b, &per_frame, 1);
  fields(&b, (histd_result *)r, true);
  put(&b, r->counts, count * sizeof *r->counts);
  if (weighted)
    put(&b, r->weighted, count * sizeof *r->weighted);
  if (per_frame) {
    put(&b, r->frame_counts, r->frames * count * sizeof *r->frame_counts);
    put(&b, r->frame_total, r->frames * sizeof *r->frame_total);
    put(&b, r->frame_volume, r->frames * sizeof *r->frame_volume);
  }
  if (b.bad) {
    free(b.p);
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for a partial of %u bins",
                      count);
  }
  *out = b.p;
  *len = b.len;
  return 0;
}

int histd_partial_decode(const void *bytes, size_t len, histd_result *r, char *msg,
                         size_t msglen) {
  buf b = {.in = bytes, .left = len};
  char magic[4];
  uint8_t version = 0, weighted = 0, per_frame = 0;
  histd_bins bins = {0};
  memset(r, 0, sizeof *r);
  get(&b, magic, 4);
  get(&b, &version, 1);
  if (b.bad || memcmp(magic, MAGIC, 4) != 0 || version != VERSION)
    return histd_fail(msg, msglen, HISTD_EIO, "not a histd partial of version %d", VERSION);
  get(&b, &bins.kind, sizeof bins.kind);
  get(&b, &bins.count, sizeof bins.count);
  get(&b, &bins.width, sizeof bins.width);
  if (b.bad || bins.count == 0 || bins.count > HISTD_MAX_BUCKETS ||
      (bins.kind != HISTD_BINS_WIDTH && bins.kind != HISTD_BINS_EDGES))
    return histd_fail(msg, msglen, HISTD_EIO, "the partial's bins are malformed");
  double *edges = NULL;
  if (bins.kind == HISTD_BINS_EDGES) {
    if (b.left / sizeof *edges < (size_t)bins.count + 1)
      return histd_fail(msg, msglen, HISTD_EIO, "the partial ends inside its edges");
    edges = malloc(((size_t)bins.count + 1) * sizeof *edges);
    if (edges == NULL)
      return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for a partial's edges");
    get(&b, edges, ((size_t)bins.count + 1) * sizeof *edges);
    bins.edges = edges;
  }
  get(&b, &weighted, 1);
  get(&b, &per_frame, 1);
  int rc = histd_result_init(r, &bins, weighted != 0, msg, msglen);
  free(edges);
  if (rc != 0)
    return rc;
  histd_bins kept = r->bins;
  double *kept_weighted = r->weighted;
  uint64_t *kept_counts = r->counts;
  fields(&b, r, false);
  r->bins = kept;
  r->counts = kept_counts;
  r->weighted = kept_weighted;
  r->frame_counts = NULL;
  r->frame_total = NULL;
  r->frame_volume = NULL;
  r->unit[sizeof r->unit - 1] = r->select_a[sizeof r->select_a - 1] = 0;
  r->select_b[sizeof r->select_b - 1] = r->kernel[sizeof r->kernel - 1] = 0;
  r->reason[sizeof r->reason - 1] = r->device[sizeof r->device - 1] = 0;
  get(&b, r->counts, bins.count * sizeof *r->counts);
  if (weighted)
    get(&b, r->weighted, bins.count * sizeof *r->weighted);
  if (!b.bad && per_frame) {
    if (r->frames == 0 || r->frames > HISTD_PER_FRAME_MAX / bins.count ||
        b.left / (bins.count + 2) / 8 < r->frames) {
      histd_result_free(r);
      return histd_fail(msg, msglen, HISTD_EIO, "the partial's per-frame table is malformed");
    }
    if (histd_result_per_frame(r, r->frames) != 0) {
      histd_result_free(r);
      return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for a partial's frames");
    }
    get(&b, r->frame_counts, r->frames * bins.count * sizeof *r->frame_counts);
    get(&b, r->frame_total, r->frames * sizeof *r->frame_total);
    get(&b, r->frame_volume, r->frames * sizeof *r->frame_volume);
  }
  if (b.bad || b.left != 0) {
    histd_result_free(r);
    return histd_fail(msg, msglen, HISTD_EIO, "the partial is %s (%zu bytes)",
                      b.bad ? "truncated" : "longer than its fields", len);
  }
  return 0;
}
