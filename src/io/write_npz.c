/*
 * write_npz.c -- a result as a NumPy .npz file, streamed to a FILE (the
 * daemon's GET /v1/jobs/{id}/result with Accept: application/x-npz or
 * ?format=npz, and `sdh --format npz`).
 *
 * An .npz is a zip archive of .npy files, one per array, which numpy.load
 * opens without pickle. Each .npy is a 6-byte magic, a version, a header
 * length and a Python-literal header ({'descr': '<u8', 'fortran_order':
 * False, 'shape': (K,), }) padded to a multiple of 64 bytes, then the raw
 * little-endian values. The entries are the schema's (histd/schema.h):
 * every field the npz output carries and the result has, named as the CSV
 * names it (group.name), in the table's order. Counts are '<u8' (exact
 * 64-bit integers), indices that may be -1 '<i8', the statistics '<f8',
 * flags '|b1', words numpy's fixed unicode strings ('<U8': UTF-32, no
 * pickle); a scalar has shape (), a frames x bins table (F, K).
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
 * sizes (no data descriptors) and any zip reader opens it. An entry or an
 * offset past 4 GiB (a long pair list) takes ZIP64's extra fields and end
 * records, which numpy's zipfile reads. The entries' dates are fixed
 * (1980-01-01), so equal results give equal files.
 */
#include <inttypes.h>
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

/* ---- bytes ---------------------------------------------------------------------------- */

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

/* ---- the arrays --------------------------------------------------------------------- */

/* Feeds field fd's values, little-endian, to sink in chunks. */
typedef void (*sink_fn)(void *user, const unsigned char *p, size_t n);

/* A string's characters as numpy's '<U' wants them: one UTF-32LE code a
 * character (the result's words are ASCII; any other byte becomes '?'). */
static size_t text_len(const char *s) { return strlen(s) ? strlen(s) : 1; }

/* The characters of fd's strings: as many as its longest (at most 2048). */
static size_t text_width(const histd_result *res, const histd_field *fd) {
  histd_fvalue v;
  uint64_t acc = 0;
  size_t n = 1;
  for (uint64_t i = 0, m = histd_field_len(fd, res, NULL, NULL); i < m; i++) {
    fd->get(res, i, &acc, &v);
    n = text_len(v.s) > n ? text_len(v.s) : n;
  }
  return n < 2048 ? n : 2048;
}

static int values(const histd_result *res, const histd_field *fd, sink_fn sink, void *user) {
  unsigned char buf[8 * 1024];
  const size_t width = fd->type == HISTD_FT_STR ? text_width(res, fd) : 0;
  size_t used = 0;
  histd__values it;
  histd__values_open(&it, fd, res);
  histd_fvalue v;
  while (histd__values_next(&it, &v)) {
    size_t w = 8;
    switch (fd->type) {
    case HISTD_FT_U64:
      le64(buf + used, v.u);
      break;
    case HISTD_FT_I64:
      le64(buf + used, (uint64_t)v.i);
      break;
    case HISTD_FT_F64: {
      uint64_t bits;
      memcpy(&bits, &v.d, 8); /* host doubles are IEEE binary64 */
      le64(buf + used, bits);
      break;
    }
    case HISTD_FT_BOOL:
      buf[used] = v.b ? 1 : 0;
      w = 1;
      break;
    case HISTD_FT_STR: { /* `width` characters, padded with zeros */
      const size_t n = strlen(v.s);
      if (used + 4 * width > sizeof buf) {
        sink(user, buf, used);
        used = 0;
      }
      w = 0;
      for (size_t k = 0; k < width && used + w + 4 <= sizeof buf; k++, w += 4) {
        unsigned char c = k < n ? (unsigned char)v.s[k] : 0;
        le32(buf + used + w, c == 0 ? 0 : c < 0x80 ? c : '?');
      }
      break;
    }
    }
    used += w;
    if (used + 8 > sizeof buf) {
      sink(user, buf, used);
      used = 0;
    }
  }
  if (used > 0)
    sink(user, buf, used);
  int err = it.err;
  histd__values_close(&it);
  return err;
}

/* fd's .npy header: dtype and shape. */
static size_t npy_header(const histd_result *res, const histd_field *fd, unsigned char *h,
                         size_t cap, uint64_t *bytes) {
  char dict[160], shape[64], descr[16];
  uint64_t rows, cols, each = 8;
  histd_field_len(fd, res, &rows, &cols);
  if (fd->shape == HISTD_FS_SCALAR)
    snprintf(shape, sizeof shape, "()");
  else if (cols)
    snprintf(shape, sizeof shape, "(%" PRIu64 ", %" PRIu64 ")", rows, cols);
  else
    snprintf(shape, sizeof shape, "(%" PRIu64 ",)", rows);
  switch (fd->type) {
  case HISTD_FT_U64:
    snprintf(descr, sizeof descr, "<u8");
    break;
  case HISTD_FT_I64:
    snprintf(descr, sizeof descr, "<i8");
    break;
  case HISTD_FT_F64:
    snprintf(descr, sizeof descr, "<f8");
    break;
  case HISTD_FT_BOOL:
    snprintf(descr, sizeof descr, "|b1");
    each = 1;
    break;
  case HISTD_FT_STR: { /* as wide as the longest (an array's elements differ) */
    const size_t n = text_width(res, fd);
    snprintf(descr, sizeof descr, "<U%zu", n);
    each = 4 * (uint64_t)n;
    break;
  }
  }
  int len = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                     descr, shape);
  size_t total = 10 + (size_t)len + 1; /* the dict ends with '\n' */
  total = (total + 63) / 64 * 64;
  if (total > cap)
    return 0;
  memcpy(h, "\x93NUMPY\x01\x00", 8);
  le16(h + 8, (uint32_t)(total - 10));
  memcpy(h + 10, dict, (size_t)len);
  memset(h + 10 + len, ' ', total - 10 - (size_t)len - 1);
  h[total - 1] = '\n';
  *bytes = total + (rows * (cols ? cols : 1)) * each;
  return total;
}

static void crc_sink(void *user, const unsigned char *p, size_t n) {
  uint32_t *crc = user;
  *crc = crc_update(*crc, p, n);
}

static void write_sink(void *user, const unsigned char *p, size_t n) { put(user, p, n); }

/* ---- the zip records ---------------------------------------------------------------- */

typedef struct entry {
  char name[80];
  uint32_t crc;
  uint64_t size, offset;
} entry;

#define ZIP32_MAX 0xFFFFFFFFu
enum { ZIP_DATE_1980_01_01 = (0 << 9) | (1 << 5) | 1 };

static bool entry_zip64(const entry *e) { return e->size >= ZIP32_MAX || e->offset >= ZIP32_MAX; }

/* The fields a local header and a central directory entry share, from
 * "version needed" to the name's length. */
static void common(unsigned char *p, const entry *e) {
  const bool z64 = entry_zip64(e);
  le16(p, z64 ? 45 : 20); /* version needed: 2.0, or 4.5 for ZIP64 */
  le16(p + 2, 0);         /* flags */
  le16(p + 4, 0);         /* method: stored */
  le16(p + 6, 0);         /* time */
  le16(p + 8, ZIP_DATE_1980_01_01);
  le32(p + 10, e->crc);
  le32(p + 14, z64 ? ZIP32_MAX : (uint32_t)e->size); /* compressed */
  le32(p + 18, z64 ? ZIP32_MAX : (uint32_t)e->size); /* uncompressed */
  le16(p + 22, (uint32_t)strlen(e->name));
}

static void local_header(out *o, const entry *e) {
  unsigned char h[30], x[20];
  const bool z64 = entry_zip64(e);
  le32(h, 0x04034b50);
  common(h + 4, e);
  le16(h + 28, z64 ? 20 : 0); /* extra length */
  put(o, h, sizeof h);
  put(o, e->name, strlen(e->name));
  if (z64) { /* ZIP64 extra: both sizes */
    le16(x, 0x0001);
    le16(x + 2, 16);
    le64(x + 4, e->size);
    le64(x + 12, e->size);
    put(o, x, sizeof x);
  }
}

static void central_entry(out *o, const entry *e) {
  unsigned char h[46], x[28];
  const bool z64 = entry_zip64(e);
  le32(h, 0x02014b50);
  le16(h + 4, z64 ? 45 : 20); /* made by: MS-DOS attributes */
  common(h + 6, e);
  le16(h + 30, z64 ? 28 : 0); /* extra */
  le16(h + 32, 0); /* comment */
  le16(h + 34, 0); /* disk */
  le16(h + 36, 0); /* internal attributes */
  le32(h + 38, 0); /* external attributes */
  le32(h + 42, z64 ? ZIP32_MAX : (uint32_t)e->offset);
  put(o, h, sizeof h);
  put(o, e->name, strlen(e->name));
  if (z64) { /* ZIP64 extra: sizes and the local header's offset */
    le16(x, 0x0001);
    le16(x + 2, 24);
    le64(x + 4, e->size);
    le64(x + 12, e->size);
    le64(x + 20, e->offset);
    put(o, x, sizeof x);
  }
}

static void end_records(out *o, unsigned entries, uint64_t cd_offset, uint64_t cd_size) {
  const bool z64 = cd_offset >= ZIP32_MAX || cd_size >= ZIP32_MAX;
  if (z64) {
    const uint64_t at = o->at;
    unsigned char e[56], l[20];
    le32(e, 0x06064b50); /* ZIP64 end of central directory */
    le64(e + 4, 44);
    le16(e + 12, 45);
    le16(e + 14, 45);
    le32(e + 16, 0);
    le32(e + 20, 0);
    le64(e + 24, entries);
    le64(e + 32, entries);
    le64(e + 40, cd_size);
    le64(e + 48, cd_offset);
    put(o, e, sizeof e);
    le32(l, 0x07064b50); /* its locator */
    le32(l + 4, 0);
    le64(l + 8, at);
    le32(l + 16, 1);
    put(o, l, sizeof l);
  }
  unsigned char h[22];
  le32(h, 0x06054b50);
  le16(h + 4, 0);
  le16(h + 6, 0);
  le16(h + 8, entries);
  le16(h + 10, entries);
  le32(h + 12, z64 ? ZIP32_MAX : (uint32_t)cd_size);
  le32(h + 16, z64 ? ZIP32_MAX : (uint32_t)cd_offset);
  le16(h + 20, 0);
  put(o, h, sizeof h);
}

/* ---- the file ------------------------------------------------------------------------- */

#define MAX_ENTRIES 96

int histd_write_npz(FILE *f, const histd_result *res) {
  crc_init();
  entry entries[MAX_ENTRIES];
  size_t count = 0;
  out o = {f, 0};
  int err = 0;
  for (size_t i = 0; i < histd_schema_count() && err == 0; i++) {
    const histd_field *fd = histd_schema_at(i);
    if (!histd__field_shown(fd, res, HISTD_OUT_NPZ) || count == MAX_ENTRIES)
      continue;
    entry *e = &entries[count++];
    unsigned char h[256];
    char name[64];
    histd__field_column(fd, name, sizeof name);
    if (fd->group != NULL) /* the npz keeps the group's name, not the CSV column's */
      snprintf(name, sizeof name, "%s.%s", fd->group, fd->name);
    else
      snprintf(name, sizeof name, "%s", fd->name);
    size_t hlen = npy_header(res, fd, h, sizeof h, &e->size);
    if (hlen == 0)
      return HISTD_EIO;
    snprintf(e->name, sizeof e->name, "%s.npy", name);
    e->crc = crc_update(0, h, hlen);
    if ((err = values(res, fd, crc_sink, &e->crc)) != 0)
      break;
    e->offset = o.at;
    local_header(&o, e);
    put(&o, h, hlen);
    err = values(res, fd, write_sink, &o);
  }
  if (err != 0)
    return err;
  uint64_t cd_offset = o.at;
  for (size_t i = 0; i < count; i++)
    central_entry(&o, &entries[i]);
  end_records(&o, (unsigned)count, cd_offset, o.at - cd_offset);
  return ferror(f) ? HISTD_EIO : 0;
}
