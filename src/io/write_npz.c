/*
 * write_npz.c -- a result as a NumPy .npz file, streamed to a FILE (the
 * daemon's GET /v1/jobs/{id}/result with Accept: application/x-npz or
 * ?format=npz, and `sdh --format npz`).
 *
 * An .npz is a zip archive of .npy files, one per array, which numpy.load
 * opens without pickle. Each .npy is a 6-byte magic, a version, a header
 * length and a Python-literal header ({'descr': '<u8', 'fortran_order':
 * False, 'shape': (K,), }) padded to a multiple of 64 bytes, then the raw
 * little-endian values. Counts are '<u8' (exact 64-bit integers), edges
 * and the statistics '<f8'.
 *
 * The zip container is written here rather than through libzip or minizip
 * (both in Debian): the entries are stored, not compressed, so a stored
 * zip is three fixed-layout records (a local header before each entry, a
 * central directory entry for each, one end record) and a CRC-32; libzip
 * writes an archive to a path on zip_close with every entry's bytes held
 * as a zip_source, where this file streams into the caller's FILE (the
 * daemon's budgeted answer file) with memory that does not grow with the
 * bucket count. Each array is generated twice, chunk by chunk: once for its
 * CRC-32, once to write it, so the local header holds the real CRC and
 * sizes (no data descriptors) and any zip reader opens it. The largest
 * result (HISTD_MAX_BUCKETS) is ~1 GiB of entries at most: no ZIP64. The
 * entries' dates are fixed (1980-01-01), so equal results give equal files.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "io_internal.h"

/* ---- CRC-32 (the zip polynomial, 0xEDB88320 reflected) ------------------------------ */

static uint32_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_fill(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++)
      c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    crc_table[i] = c;
  }
}

static void crc_init(void) { pthread_once(&crc_once, crc_fill); }

static uint32_t crc_update(uint32_t crc, const unsigned char *p, size_t n) {
  crc = ~crc;
  while (n--)
    crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
  return ~crc;
}

/* ---- the arrays --------------------------------------------------------------------- */

/* One array of the result: what = 'e' edges, 'c' counts, 'w' weighted,
 * 'g' g(r), 'n' coordination; or a scalar (count 0: shape ()). */
typedef struct array {
  const char *name;
  char what;
  bool is_u64;
  uint32_t count; /* values; 0 for a scalar */
  uint64_t u;     /* a scalar's value */
  double d;
} array;

typedef struct out {
  FILE *f;
  uint64_t at; /* bytes written so far */
} out;

static void put(out *o, const void *p, size_t n) {
  fwrite(p, 1, n, o->f);
  o->at += n;
}

static void le16(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)v;
  p[1] = (unsigned char)(v >> 8);
}

static void le32(unsigned char *p, uint32_t v) {
  le16(p, v);
  le16(p + 2, v >> 16);
}

static void le64(unsigned char *p, uint64_t v) {
  le32(p, (uint32_t)v);
  le32(p + 4, (uint32_t)(v >> 32));
}

/* The .npy header of a: magic, version 1.0, length, dict, padding to 64. */
static size_t npy_header(const array *a, unsigned char *h, size_t cap) {
  char dict[128], shape[32];
  if (a->count == 0)
    snprintf(shape, sizeof shape, "()");
  else
    snprintf(shape, sizeof shape, "(%u,)", a->count);
  int len = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                     a->is_u64 ? "<u8" : "<f8", shape);
  size_t total = 10 + (size_t)len + 1; /* the dict ends with '\n' */
  total = (total + 63) / 64 * 64;
  if (total > cap)
    return 0;
  memcpy(h, "\x93NUMPY\x01\x00", 8);
  le16(h + 8, (uint32_t)(total - 10));
  memcpy(h + 10, dict, (size_t)len);
  memset(h + 10 + len, ' ', total - 10 - (size_t)len - 1);
  h[total - 1] = '\n';
  return total;
}

/* Feeds a's values, 8 bytes each in little-endian order, to sink in
 * chunks. */
typedef void (*sink_fn)(void *user, const unsigned char *p, size_t n);

static void values(const histd_result *res, const array *a, sink_fn sink, void *user) {
  unsigned char buf[8 * 1024];
  size_t used = 0;
  uint64_t cumulative = 0;
  uint32_t n = a->count == 0 ? 1 : a->count;
  for (uint32_t b = 0; b < n; b++) {
    if (a->count == 0) {
      if (a->is_u64)
        le64(buf + used, a->u);
      else
        memcpy(buf + used, &a->d, 8);
    } else if (a->what == 'c') {
      le64(buf + used, res->counts[b]);
    } else {
      double g = 0, c = 0, v;
      if (a->what == 'g' || a->what == 'n')
        histd_result_rdf_bin(res, b, &cumulative, &g, &c);
      v = a->what == 'e' ? histd_bins_edge(&res->bins, b)
          : a->what == 'w' ? res->weighted[b]
          : a->what == 'g' ? g
                           : c;
      uint64_t bits;
      memcpy(&bits, &v, 8);
      le64(buf + used, bits); /* host doubles are IEEE binary64 */
    }
    used += 8;
    if (used == sizeof buf || b + 1 == n) {
      sink(user, buf, used);
      used = 0;
    }
  }
}

static void crc_sink(void *user, const unsigned char *p, size_t n) {
  uint32_t *crc = user;
  *crc = crc_update(*crc, p, n);
}

static void write_sink(void *user, const unsigned char *p, size_t n) { put(user, p, n); }

/* ---- the zip records ---------------------------------------------------------------- */

typedef struct entry {
  char name[32];
  uint32_t crc, size;
  uint32_t offset;
} entry;

enum { ZIP_DATE_1980_01_01 = (0 << 9) | (1 << 5) | 1 };

/* The fields a local header and a central directory entry share, from
 * "version needed" to the name's length. */
static void common(unsigned char *p, const entry *e) {
  le16(p, 20);     /* version needed: 2.0 */
  le16(p + 2, 0);  /* flags */
  le16(p + 4, 0);  /* method: stored */
  le16(p + 6, 0);  /* time */
  le16(p + 8, ZIP_DATE_1980_01_01);
  le32(p + 10, e->crc);
  le32(p + 14, e->size); /* compressed */
  le32(p + 18, e->size); /* uncompressed */
  le16(p + 22, (uint32_t)strlen(e->name));
}

static void local_header(out *o, const entry *e) {
  unsigned char h[30];
  le32(h, 0x04034b50);
  common(h + 4, e);
  le16(h + 28, 0); /* extra length */
  put(o, h, sizeof h);
  put(o, e->name, strlen(e->name));
}

static void central_entry(out *o, const entry *e) {
  unsigned char h[46];
  le32(h, 0x02014b50);
  le16(h + 4, 20); /* made by: 2.0, MS-DOS attributes */
  common(h + 6, e);
  le16(h + 30, 0); /* extra */
  le16(h + 32, 0); /* comment */
  le16(h + 34, 0); /* disk */
  le16(h + 36, 0); /* internal attributes */
  le32(h + 38, 0); /* external attributes */
  le32(h + 42, e->offset);
  put(o, h, sizeof h);
  put(o, e->name, strlen(e->name));
}

static void end_record(out *o, unsigned entries, uint32_t cd_offset, uint32_t cd_size) {
  unsigned char h[22];
  le32(h, 0x06054b50);
  le16(h + 4, 0);
  le16(h + 6, 0);
  le16(h + 8, entries);
  le16(h + 10, entries);
  le32(h + 12, cd_size);
  le32(h + 16, cd_offset);
  le16(h + 20, 0);
  put(o, h, sizeof h);
}

/* ---- the result's arrays, and the file -------------------------------------------- */

static size_t result_arrays(const histd_result *res, array *a) {
  size_t k = 0;
  const uint32_t count = res->bins.count;
#define VEC(nm, w, u64, cnt) a[k++] = (array){nm, w, u64, cnt, 0, 0}
#define U64(nm, v) a[k++] = (array){nm, 0, true, 0, v, 0}
#define F64(nm, v) a[k++] = (array){nm, 0, false, 0, 0, v}
  U64("n", res->n);
  if (res->cross)
    U64("n_b", res->n_b);
  if (res->volume > 0)
    F64("volume", res->volume);
  if (res->statistic == HISTD_STAT_WITHIN) {
    F64("radius", res->radius);
    U64("within", res->within);
    if (res->weighted != NULL)
      F64("weighted_within", res->weighted[0]);
  } else {
    VEC("edges", 'e', false, count + 1);
    VEC("counts", 'c', true, count);
    if (res->weighted != NULL)
      VEC("weighted", 'w', false, count);
    if (res->volume > 0) {
      VEC("g", 'g', false, count);
      VEC("coordination", 'n', false, count);
    }
    U64("below", res->below);
  }
  U64("overflow", res->overflow);
  U64("total", res->total);
#undef VEC
#undef U64
#undef F64
  return k;
}

int histd_write_npz(FILE *f, const histd_result *res) {
  crc_init();
  array arrays[16];
  entry entries[16];
  size_t count = result_arrays(res, arrays);
  out o = {f, 0};
  for (size_t i = 0; i < count; i++) {
    const array *a = &arrays[i];
    entry *e = &entries[i];
    unsigned char h[256];
    size_t hlen = npy_header(a, h, sizeof h);
    if (hlen == 0)
      return HISTD_EIO;
    snprintf(e->name, sizeof e->name, "%s.npy", a->name);
    e->crc = crc_update(0, h, hlen);
    values(res, a, crc_sink, &e->crc);
    e->size = (uint32_t)(hlen + (a->count == 0 ? 1 : (uint64_t)a->count) * 8);
    e->offset = (uint32_t)o.at;
    local_header(&o, e);
    put(&o, h, hlen);
    values(res, a, write_sink, &o);
  }
  uint64_t cd_offset = o.at;
  for (size_t i = 0; i < count; i++)
    central_entry(&o, &entries[i]);
  end_record(&o, (unsigned)count, (uint32_t)cd_offset, (uint32_t)(o.at - cd_offset));
  return ferror(f) || o.at > UINT32_MAX ? HISTD_EIO : 0;
}
