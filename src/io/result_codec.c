/*
 * result_codec.c -- a result as bytes and back, by the result schema
 * (histd/schema.h): what the store keeps and what a shard's partial
 * carries between machines, for every shape of result, with no line here
 * per field.
 *
 * Every field the schema keeps (HISTD_OUT_STORE) that the result has goes
 * in, named (group.name), so that a reader finds each by its name and a
 * new field is one row of the table:
 *
 *   head    "HRH1", then per scalar: name length (1 byte), name, kind
 *           (0: the member's bytes as they are; 1: a string), size (2
 *           bytes), the bytes
 *   arrays  "HRA1", then per array: name length, name, its values (8
 *           bytes, little-endian), the coding (0: varints, for counts; 1:
 *           fixed, for the bits of float64s and signed ints), the blob's
 *           length (8 bytes) and the blob (words.c: runs of zeros skipped)
 *
 * Multi-byte lengths are little-endian; the members' own bytes are the
 * host's, which the partials' readers share (little-endian hosts only,
 * as partial.c always required). The head comes first and holds what
 * the arrays' lengths follow from (bins, frames, points, pairs), so a
 * reader checks every array against it; a summary reads the head alone.
 */
#include <stdlib.h>
#include <string.h>

#include "io_internal.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "result_codec.c keeps host-order members: little-endian hosts only"
#endif

#define HEAD_MAGIC "HRH1"
#define ARRAYS_MAGIC "HRA1"
/* the most values one array may claim (2^40: 8 TiB), before allocating */
#define MAX_VALUES ((uint64_t)1 << 40)

typedef struct buf {
  unsigned char *p;
  size_t len, cap;
  bool bad;
} buf;

static void put(buf *b, const void *v, size_t n) {
  if (b->bad)
    return;
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 256;
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

static void put_u(buf *b, uint64_t v, int bytes) {
  unsigned char le[8];
  for (int i = 0; i < bytes; i++)
    le[i] = (unsigned char)(v >> (8 * i));
  put(b, le, (size_t)bytes);
}

static void put_name(buf *b, const histd_field *f) {
  char name[80];
  if (f->group != NULL)
    snprintf(name, sizeof name, "%s.%s", f->group, f->name);
  else
    snprintf(name, sizeof name, "%s", f->name);
  put_u(b, strlen(name), 1);
  put(b, name, strlen(name));
}

/* Whether the result keeps field f now. */
static bool kept(const histd_field *f, const histd_result *r) {
  return (f->outputs & HISTD_OUT_STORE) && (f->kept != NULL ? f->kept(r) : f->present(r));
}

static bool is_array(const histd_field *f) { return f->shape != HISTD_FS_SCALAR; }

int histd_result_encode(const histd_result *result, unsigned char **head, size_t *head_len,
                        unsigned char **arrays, size_t *arrays_len, char *msg, size_t msglen) {
  /* the head says how many values the arrays hold, for a summary */
  histd_result copy = *result;
  copy.stored_values = histd_result_kept_values(result);
  const histd_result *r = &copy;
  buf h = {0}, a = {0};
  int rc = 0;
  put(&h, HEAD_MAGIC, 4);
  put(&a, ARRAYS_MAGIC, 4);
  for (size_t i = 0; i < histd_schema_count() && rc == 0; i++) {
    const histd_field *f = histd_schema_at(i);
    if (!kept(f, r))
      continue;
    const char *member = (const char *)r + f->offset;
    if (!is_array(f)) {
      put_name(&h, f);
      const size_t n = f->size ? f->size : strnlen(member, f->cap);
      put_u(&h, f->size ? 0 : 1, 1);
      put_u(&h, n, 2);
      put(&h, member, n);
      continue;
    }
    void *values;
    memcpy(&values, member, sizeof values);
    const uint64_t count = histd_field_len(f, r, NULL, NULL);
    unsigned char *blob = NULL;
    size_t blob_len = 0;
    const bool fixed = f->type != HISTD_FT_U64;
    const histd_words part = {values, count};
    if (values == NULL && count > 0) {
      rc = histd_fail(msg, msglen, HISTD_EINVAL, "the result's %s has no values", f->name);
      break;
    }
    if ((rc = histd_words_encode(&part, 1, fixed, &blob, &blob_len, msg, msglen)) != 0)
      break;
    put_name(&a, f);
    put_u(&a, count, 8);
    put_u(&a, fixed ? 1 : 0, 1);
    put_u(&a, blob_len, 8);
    put(&a, blob, blob_len);
    free(blob);
  }
  if (rc == 0 && (h.bad || a.bad))
    rc = histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory to encode a result");
  if (rc != 0) {
    free(h.p);
    free(a.p);
    return rc;
  }
  *head = h.p;
  *head_len = h.len;
  *arrays = a.p;
  *arrays_len = a.len;
  return 0;
}

/* ---- decoding ------------------------------------------------------------ */

typedef struct in {
  const unsigned char *p;
  size_t left;
  bool bad;
} in;

static void get(in *b, void *v, size_t n) {
  if (b->bad || b->left < n) {
    b->bad = true;
    memset(v, 0, n);
    return;
  }
  memcpy(v, b->p, n);
  b->p += n;
  b->left -= n;
}

static uint64_t get_u(in *b, int bytes) {
  unsigned char le[8];
  get(b, le, (size_t)bytes);
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; i--)
    v = v << 8 | le[i];
  return v;
}

/* The next name, and the schema's field of that name (NULL: none). */
static const histd_field *get_field(in *b, char *name, size_t cap) {
  const size_t n = (size_t)get_u(b, 1);
  if (n >= cap) {
    b->bad = true;
    return NULL;
  }
  get(b, name, n);
  name[n] = '\0';
  char *dot = strchr(name, '.');
  if (dot == NULL)
    return histd_schema_find(NULL, name);
  *dot = '\0';
  const histd_field *f = histd_schema_find(name, dot + 1);
  *dot = '.';
  return f;
}

static int bad_blob(histd_result *r, char *msg, size_t msglen, const char *what,
                    const char *why) {
  histd_result_free(r);
  return histd_fail(msg, msglen, HISTD_EIO, "the stored result's %s %s", what, why);
}

/* Whether r holds every array the schema keeps for a result like it: each
 * kept array field that r has (its kept rule, or its present one) must be
 * there (a histogram's counts and explicit edges, a statistic's per-point
 * rows, the partials' tables, ...). */
static bool arrays_whole(const histd_result *r) {
  for (size_t i = 0; i < histd_schema_count(); i++) {
    const histd_field *f = histd_schema_at(i);
    if (!is_array(f) || !(f->outputs & HISTD_OUT_STORE) || f->shape == HISTD_FS_PAIRS ||
        !(f->kept != NULL ? f->kept(r) : f->present(r)))
      continue;
    const void *p;
    memcpy(&p, (const char *)r + f->offset, sizeof p);
    if (p == NULL)
      return false;
  }
  return true;
}

int histd_result_decode(const void *head, size_t head_len, const void *arrays, size_t arrays_len,
                        histd_result *r, char *msg, size_t msglen) {
  memset(r, 0, sizeof *r);
  in h = {head, head_len, false};
  char magic[4], name[80];
  get(&h, magic, 4);
  if (h.bad || memcmp(magic, HEAD_MAGIC, 4) != 0)
    return bad_blob(r, msg, msglen, "head", "is not a histd result's (no HRH1)");
  while (h.left > 0) {
    const histd_field *f = get_field(&h, name, sizeof name);
    const unsigned kind = (unsigned)get_u(&h, 1);
    const size_t n = (size_t)get_u(&h, 2);
    if (h.bad)
      return bad_blob(r, msg, msglen, "head", "ends inside a field");
    if (f == NULL || is_array(f) || !(f->outputs & HISTD_OUT_STORE) ||
        kind != (f->size ? 0u : 1u) || (f->size ? n != f->size : n >= f->cap)) {
      char why[160];
      snprintf(why, sizeof why, "holds a field %s this histd does not keep that way "
                                "(written by another version?)", name);
      return bad_blob(r, msg, msglen, "head", why);
    }
    char *member = (char *)r + f->offset;
    get(&h, member, n);
    if (!f->size)
      member[n] = '\0';
  }
  /* what the arrays' lengths follow from */
  const histd_statistic_info *stat = histd_statistic_about(r->statistic);
  const bool bins = stat != NULL && (stat->answer == HISTD_ANSWER_BINS || stat->binned);
  if (stat == NULL ||
      (bins && (r->bins.count == 0 || r->bins.count > HISTD_MAX_BUCKETS ||
                (r->bins.kind != HISTD_BINS_WIDTH && r->bins.kind != HISTD_BINS_EDGES))))
    return bad_blob(r, msg, msglen, "head", "describes no result (its statistic or bins)");
  if (arrays == NULL) /* a summary */
    return 0;
  in a = {arrays, arrays_len, false};
  get(&a, magic, 4);
  if (a.bad || memcmp(magic, ARRAYS_MAGIC, 4) != 0)
    return bad_blob(r, msg, msglen, "arrays", "are not a histd result's (no HRA1)");
  while (a.left > 0) {
    const histd_field *f = get_field(&a, name, sizeof name);
    const uint64_t count = get_u(&a, 8);
    const unsigned fixed = (unsigned)get_u(&a, 1);
    const uint64_t blob_len = get_u(&a, 8);
    if (a.bad || blob_len > a.left)
      return bad_blob(r, msg, msglen, "arrays", "end inside an array");
    char why[200];
    if (f == NULL || !is_array(f) || !(f->outputs & HISTD_OUT_STORE) ||
        fixed != (f->type != HISTD_FT_U64 ? 1u : 0u)) {
      snprintf(why, sizeof why, "hold an array %s this histd does not keep that way", name);
      return bad_blob(r, msg, msglen, "arrays", why);
    }
    const uint64_t want = histd_field_len(f, r, NULL, NULL);
    if (count != want || count > MAX_VALUES) {
      snprintf(why, sizeof why, "hold %llu values of %s, and the head says %llu",
               (unsigned long long)count, name, (unsigned long long)want);
      return bad_blob(r, msg, msglen, "arrays", why);
    }
    void **member = (void **)((char *)r + f->offset);
    if (*member != NULL) {
      snprintf(why, sizeof why, "hold %s twice", name);
      return bad_blob(r, msg, msglen, "arrays", why);
    }
    if ((*member = malloc(count ? count * 8 : 1)) == NULL) {
      histd_result_free(r);
      return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %llu values of %s",
                        (unsigned long long)count, name);
    }
    const histd_words part = {*member, count};
    char codec[100];
    if (histd_words_decode(a.p, (size_t)blob_len, &part, 1, codec, sizeof codec) != 0) {
      snprintf(why, sizeof why, "%.80s: %.100s", name, codec);
      return bad_blob(r, msg, msglen, "arrays are corrupt:", why);
    }
    a.p += blob_len;
    a.left -= (size_t)blob_len;
  }
  if (!arrays_whole(r))
    return bad_blob(r, msg, msglen, "arrays", "lack one the result's fields need");
  return 0;
}
