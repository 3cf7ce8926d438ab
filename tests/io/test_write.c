/*
 * test_write.c -- the histogram writers: the text layout (row prefixes, five
 * counts a row, T: line, overflow), the CSV rows and the JSON object
 * (every key, exact 64-bit counts above 2^53, read back by cJSON; a large
 * one streamed without a heap of its own), the .npz (zip records, CRCs,
 * exact uint64 counts), on hand-made results; and
 * the number format: the shortest of %.15g, %.16g and %.17g that reads
 * back as the same double.
 */
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "../../src/io/io_internal.h"
#include "histd/io.h"

#include <cjson/cJSON.h>

/* Runs a writer into a memory buffer; returns the text (free it). */
static char *capture(int (*writer)(FILE *, const histd_result *), const histd_result *res) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  int rc = writer(f, res);
  fclose(f);
  CHECK(rc == 0, "writer rc %d", rc);
  return buf;
}

/* A result of equal-width bins, as the engine's result_init makes them. */
static int init_width(histd_result *res, uint32_t buckets, double w) {
  histd_bins bins = {HISTD_BINS_WIDTH, buckets, w, NULL, 0, 0};
  return histd_result_init(res, &bins, false, NULL, 0);
}

static void make(histd_result *res, uint32_t buckets, double w) {
  CHECK(init_width(res, buckets, w) == 0, "result_init");
  uint64_t total = 0;
  for (uint32_t b = 0; b < buckets; b++) {
    res->counts[b] = (uint64_t)b * b * 1000 + 7;
    total += res->counts[b];
  }
  res->overflow = 0;
  res->total = total;
  res->exact = true;
  strcpy(res->kernel, "cpu");
  strcpy(res->device, "cpu: 2 threads");
  res->threads = 2;
  res->timing.kernel_ms = 1.5;
  res->timing.total_ms = 2.25;
}

/* Splits text into lines (modifies it); returns the count. */
static size_t lines_of(char *text, char **lines, size_t max) {
  size_t n = 0;
  for (char *save = NULL, *l = strtok_r(text, "\n", &save); l && n < max;
       l = strtok_r(NULL, "\n", &save))
    lines[n++] = l;
  return n;
}

/* The line of text that starts with `prefix`, or NULL. */
static const char *line_with(char **lines, size_t n, const char *prefix) {
  for (size_t i = 0; i < n; i++)
    if (strncmp(lines[i], prefix, strlen(prefix)) == 0)
      return lines[i];
  return NULL;
}

static void test_text(void) {
  histd_result res;
  make(&res, 12, 500);
  char *t = capture(histd_write_text, &res);
  char *lines[64];
  size_t n = lines_of(t, lines, 64);
  static const char *const prefixes[] = {"00:", "05:", "10:"};
  for (int r = 0; r < 3 && r < (int)n; r++) {
    CHECK(strncmp(lines[r], prefixes[r], 3) == 0, "row %d prefix: %s", r, lines[r]);
    /* the counts of the row, in order */
    char *p = lines[r] + 3;
    int k = 0;
    for (char *end; *p; p = end, k++) {
      uint64_t v = strtoull(p, &end, 10);
      if (end == p)
        break;
      CHECK_EQ_U64(v, res.counts[5 * r + k], "row count");
    }
    CHECK(k == (r < 2 ? 5 : 2), "row %d has %d counts", r, k);
  }
  /* the counts are right-aligned: every row's first count ends at one column */
  CHECK(strlen(lines[0]) == strlen(lines[1]), "aligned rows: '%s' / '%s'", lines[0], lines[1]);
  char want[64];
  snprintf(want, sizeof want, "T:%" PRIu64, res.total);
  CHECK(n > 3 && strcmp(lines[3], want) == 0, "T line: %s", n > 3 ? lines[3] : "");
  /* then a line a scalar of the schema's text output */
  const char *l = line_with(lines, n, "kernel: ");
  CHECK(l && strcmp(l, "kernel: cpu") == 0, "kernel line: %s", l ? l : "");
  l = line_with(lines, n, "device: ");
  CHECK(l && strcmp(l, "device: cpu: 2 threads") == 0, "device line: %s", l ? l : "");
  l = line_with(lines, n, "precision: ");
  CHECK(l && strcmp(l, "precision: exact") == 0, "precision line: %s", l ? l : "");
  l = line_with(lines, n, "total_ms: ");
  CHECK(l && strcmp(l, "total_ms: 2.25") == 0, "time line: %s", l ? l : "");
  l = line_with(lines, n, "kernel_ms: ");
  CHECK(l && strcmp(l, "kernel_ms: 1.5") == 0, "kernel time line: %s", l ? l : "");
  l = line_with(lines, n, "overflow: ");
  CHECK(l && strcmp(l, "overflow: 0") == 0, "overflow line: %s", l ? l : "");
  free(t);

  /* Overflow and the GPU's device. */
  res.overflow = 42;
  res.total += 42;
  res.block_size = 256;
  res.threads = 0;
  strcpy(res.kernel, "tiled");
  strcpy(res.device, "NVIDIA H100");
  t = capture(histd_write_text, &res);
  CHECK_STR_CONTAINS(t, "\noverflow: 42\n");
  CHECK_STR_CONTAINS(t, "\nkernel: tiled\n");
  CHECK_STR_CONTAINS(t, "\ndevice: NVIDIA H100\n");
  free(t);
  histd_result_free(&res);

  /* 120 buckets: prefixes all three digits wide; 1 bucket: "00:". */
  make(&res, 120, 1);
  t = capture(histd_write_text, &res);
  n = lines_of(t, lines, 64);
  CHECK(n > 24 && strcmp(lines[24], "T:") > 0, "120 buckets: 24 rows then T: %zu lines", n);
  CHECK(strncmp(lines[0], "000:", 4) == 0 && strncmp(lines[1], "005:", 4) == 0 &&
            strncmp(lines[23], "115:", 4) == 0,
        "3-digit prefixes: %s / %s / %s", lines[0], lines[1], lines[23]);
  free(t);
  histd_result_free(&res);
  make(&res, 1, 1);
  t = capture(histd_write_text, &res);
  CHECK(strncmp(t, "00:", 3) == 0, "1 bucket: %s", t);
  CHECK_STR_CONTAINS(t, "\nT:7\n");
  free(t);
  histd_result_free(&res);
}

/* The CSV after its "# name: value" lines, which must hold `comments`. */
static const char *csv_table(const char *t, const char *comments) {
  CHECK_STR_CONTAINS(t, comments);
  while (strncmp(t, "# ", 2) == 0 && strchr(t, '\n') != NULL)
    t = strchr(t, '\n') + 1;
  return t;
}

static void test_csv(void) {
  histd_result res;
  make(&res, 3, 0.1);
  res.overflow = 5;
  char *t = capture(histd_write_csv, &res);
  const char *want = "bucket,lower,upper,count\n"
                     "0,0,0.1,7\n"
                     "1,0.1,0.2,1007\n"
                     "2,0.2,0.30000000000000004,4007\n"
                     "overflow,0.30000000000000004,,5\n";
  const char *table = csv_table(t, "# n: 0\n# frames: 1\n# statistic: histogram\n");
  CHECK(strcmp(table, want) == 0, "csv:\n%s\nwant:\n%s", t, want);
  CHECK_STR_CONTAINS(t, "# overflow: 5\n# total: 5021\n# kernel: cpu\n");
  CHECK_STR_CONTAINS(t, "# device: cpu: 2 threads\n");
  free(t);
  histd_result_free(&res);
  make(&res, 2, 500);
  t = capture(histd_write_csv, &res);
  table = csv_table(t, "# bucket_width: 500\n# buckets: 2\n");
  CHECK(strcmp(table, "bucket,lower,upper,count\n0,0,500,7\n1,500,1000,1007\noverflow,1000,,0\n") == 0,
        "csv w=500: %s", t);
  free(t);
  histd_result_free(&res);
}

static void test_json(void) {
  histd_result res;
  make(&res, 4, 2.5);
  res.counts[3] = UINT64_MAX - 1; /* far above 2^53 */
  res.counts[2] = (UINT64_C(1) << 53) + 1;
  res.counts[1] = 999999999999999ull;
  res.counts[0] = 1234567890123456789ull;
  res.overflow = UINT64_C(1) << 53;
  res.bins.width = 0.1;
  res.n = 777;
  res.total = 123456789012345678ull;
  res.block_size = 0;
  res.precision = HISTD_PRECISION_FAST;
  res.exact = false;
  res.timing.queue_ms = 0.25;
  res.timing.parse_ms = 3;
  res.timing.transfer_ms = 0.5;
  strcpy(res.device, "GPU \"0\"\\\n"); /* quotes, a backslash, a newline */
  for (unsigned flags = 0; flags < 4; flags++) {
    char *s = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&s, &len);
    CHECK(histd_write_json(f, &res, flags) == 0, "write_json");
    fclose(f);
    bool summary = flags & HISTD_JSON_SUMMARY, pretty = flags & HISTD_JSON_PRETTY;
    CHECK(pretty == (strchr(s, '\n') != NULL), "flags %u: pretty is multi-line", flags);
    if (!pretty) {
      CHECK_STR_CONTAINS(s, "\"overflow\":9007199254740992");
      CHECK_STR_CONTAINS(s, "\"total\":123456789012345678");
      CHECK_STR_CONTAINS(s, "\"n\":777,\"frames\":1,\"statistic\":\"histogram\",\"bins\":\"width\",\"bucket_width\":0.1,\"buckets\":4");
      CHECK_STR_CONTAINS(s, "\"precision\":\"fast\",\"exact\":false");
      if (!summary) {
        CHECK_STR_CONTAINS(s, "\"counts\":[1234567890123456789,999999999999999,"
                              "9007199254740993,18446744073709551614]");
        CHECK_STR_CONTAINS(s, "\"edges\":[0,0.1,0.2,0.30000000000000004,0.4]");
      }
    }
    /* cJSON, an independent reader, sees every member with its value */
    cJSON *back = cJSON_Parse(s);
    CHECK(back != NULL, "flags %u: the output parses: %s", flags, s);
    if (back == NULL) {
      free(s);
      continue;
    }
    static const char *const keys[] = {"n",          "bucket_width", "buckets", "overflow",
                                       "total",      "kernel",       "block_size",
                                       "precision",  "exact",        "device", "timing_ms",
                                       "threads",    "refined_pairs"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
      CHECK(cJSON_HasObjectItem(back, keys[i]), "key %s", keys[i]);
    CHECK(cJSON_GetArraySize(back) == 17 + (summary ? 0 : 2), "flags %u: member count", flags);
    CHECK(summary != cJSON_HasObjectItem(back, "counts"), "counts only in full results");
    if (!summary)
      CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(back, "edges")) == 5, "edges: buckets+1");
    CHECK(strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(back, "kernel")), "cpu") == 0,
          "kernel");
    CHECK(strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(back, "device")), res.device) == 0,
          "device, escaped and read back");
    cJSON *t = cJSON_GetObjectItem(back, "timing_ms");
    static const char *const tk[] = {"queue", "parse", "transfer", "kernel", "total"};
    static const double tv[] = {0.25, 3, 0.5, 1.5, 2.25};
    for (int i = 0; i < 5; i++)
      CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(t, tk[i])) == tv[i], "timing %s", tk[i]);
    cJSON_Delete(back);
    free(s);
  }
  histd_result_free(&res);
}

/* The .npz: a zip whose entries a reader walks by their local headers; each
 * entry's CRC-32 (computed here bit by bit, independently of the writer's
 * table) and sizes agree with its bytes; "counts" holds the exact uint64s
 * (2^53 + 1 and 2^64 - 2 included) after an .npy header aligned to 64
 * bytes; the central directory names every entry. */
static uint32_t crc_bitwise(const unsigned char *p, size_t n) {
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++)
      c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1)));
  }
  return ~c;
}

static uint64_t rd(const unsigned char *p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}

/* The arrays an .npz of res holds, by name, comma-separated in order. */
static void npz_names(const histd_result *res, char *names, size_t cap) {
  unsigned char *s = NULL;
  size_t len = 0, at = 0, used = 0;
  FILE *f = open_memstream((char **)&s, &len);
  CHECK(histd_write_npz(f, res) == 0, "write_npz");
  fclose(f);
  names[0] = '\0';
  while (at + 30 <= len && rd(s + at, 4) == 0x04034b50) {
    size_t name_len = rd(s + at + 26, 2), size = rd(s + at + 18, 4);
    used += (size_t)snprintf(names + used, cap - used, "%s%.*s", used ? "," : "",
                             (int)name_len - 4, (const char *)s + at + 30);
    at += 30 + name_len + size;
  }
  free(s);
}

/* Which arrays a result has: weighted sums; a count within a radius. */
static void test_npz_names(void) {
  histd_result res;
  histd_bins bins = {HISTD_BINS_WIDTH, 3, 1.0, NULL, 0, 0};
  CHECK(histd_result_init(&res, &bins, true, NULL, 0) == 0, "result_init weighted");
  char names[256];
  npz_names(&res, names, sizeof names);
  static const char *const tail =
      "below,overflow,total,kernel,block_size,threads,precision,exact,refined_pairs,device,"
      "timing_ms.queue,timing_ms.parse,timing_ms.transfer,timing_ms.kernel,timing_ms.total";
  char want[512];
  snprintf(want, sizeof want, "n,frames,statistic,bins,bucket_width,buckets,edges,counts,weighted,%s",
           tail);
  CHECK(strcmp(names, want) == 0, "weighted: %s", names);
  res.statistic = HISTD_STAT_WITHIN;
  res.cross = true;
  npz_names(&res, names, sizeof names);
  snprintf(want, sizeof want, "n,n_b,frames,statistic,radius,within,weighted_within,%s",
           strstr(tail, "overflow"));
  CHECK(strcmp(names, want) == 0, "within: %s", names);
  histd_result_free(&res);
}

static void test_npz(void) {
  histd_result res;
  make(&res, 4, 2.5);
  res.counts[3] = UINT64_MAX - 1;
  res.counts[2] = (UINT64_C(1) << 53) + 1;
  res.overflow = UINT64_C(1) << 53;
  res.n = 777;
  res.volume = 1000; /* adds g and coordination */
  unsigned char *s = NULL;
  size_t len = 0;
  FILE *f = open_memstream((char **)&s, &len);
  CHECK(histd_write_npz(f, &res) == 0, "write_npz");
  fclose(f);
  static const char *const want[] = {
      "n.npy",          "frames.npy",        "volume.npy",          "box_source.npy",
      "density.npy",    "statistic.npy",     "bins.npy",            "bucket_width.npy",
      "buckets.npy",    "edges.npy",         "counts.npy",          "g.npy",
      "coordination.npy", "below.npy",       "overflow.npy",        "total.npy",
      "kernel.npy",     "block_size.npy",    "threads.npy",         "precision.npy",
      "exact.npy",      "refined_pairs.npy", "device.npy",          "timing_ms.queue.npy",
      "timing_ms.parse.npy", "timing_ms.transfer.npy", "timing_ms.kernel.npy",
      "timing_ms.total.npy"};
  const size_t nwant = sizeof want / sizeof want[0];
  size_t at = 0, entries = 0;
  while (at + 30 <= len && rd(s + at, 4) == 0x04034b50) {
    uint32_t crc = (uint32_t)rd(s + at + 14, 4), size = (uint32_t)rd(s + at + 18, 4);
    size_t name_len = rd(s + at + 26, 2), extra = rd(s + at + 28, 2);
    const char *name = (const char *)s + at + 30;
    const unsigned char *data = s + at + 30 + name_len + extra;
    CHECK(rd(s + at + 8, 2) == 0 && rd(s + at + 22, 4) == size, "entry stored, not packed");
    CHECK(entries < nwant && name_len == strlen(want[entries]) &&
              memcmp(name, want[entries], name_len) == 0,
          "entry %zu is %.*s, want %s", entries, (int)name_len, name,
          entries < nwant ? want[entries] : "?");
    CHECK(data + size <= s + len && crc_bitwise(data, size) == crc, "entry %zu's CRC", entries);
    CHECK(memcmp(data, "\x93NUMPY\x01\x00", 8) == 0, "an .npy");
    size_t header = 10 + rd(data + 8, 2);
    CHECK(header % 64 == 0 && data[header - 1] == '\n', "the .npy header is aligned");
    if (name_len == 10 && memcmp(name, "counts.npy", 10) == 0) {
      CHECK(strstr((const char *)data + 10, "'descr': '<u8', 'fortran_order': False, 'shape': (4,)") != NULL,
            "counts are 4 uint64s");
      CHECK(size == header + 32, "counts' size");
      for (int b = 0; b < 4; b++)
        CHECK(rd(data + header + 8 * b, 8) == res.counts[b], "counts[%d] exact", b);
    }
    if (name_len == 10 && memcmp(name, "kernel.npy", 10) == 0)
      CHECK(strstr((const char *)data + 10, "'descr': '<U3'") != NULL &&
                memcmp(data + header, "c\0\0\0p\0\0\0u\0\0\0", 12) == 0,
            "the kernel is a unicode string");
    if (name_len == 12 && memcmp(name, "overflow.npy", 12) == 0)
      CHECK(strstr((const char *)data + 10, "'shape': ()") != NULL &&
                rd(data + header, 8) == (UINT64_C(1) << 53),
            "overflow is a uint64 scalar");
    at = (size_t)(data - s) + size;
    entries++;
  }
  CHECK(entries == nwant, "%zu entries, got %zu", nwant, entries);
  CHECK(len >= 22 && rd(s + len - 22, 4) == 0x06054b50 && rd(s + len - 12, 2) == nwant,
        "the end record counts every entry");
  CHECK(rd(s + len - 6, 4) == at && rd(s + at, 4) == 0x02014b50,
        "the central directory follows the entries");
  free(s);
  histd_result_free(&res);
  test_npz_names();
}

/* A large result streams: the writer allocates nothing that grows with the
 * bucket count (a cJSON node per count was ~3.4 GB for HISTD_MAX_BUCKETS;
 * a string per array printed into another, ~0.6 GB). The output is read
 * back to check it. */
static void test_json_large(void) {
  const uint32_t buckets = 1u << 20;
  histd_result res;
  CHECK(init_width(&res, buckets, 0.001) == 0, "result_init");
  res.n = 1000;
  for (uint32_t b = 0; b < buckets; b++)
    res.counts[b] = (uint64_t)b * 3;
  FILE *f = tmpfile();
  CHECK(f != NULL, "tmpfile");
  if (f == NULL)
    return;
  struct mallinfo2 before = mallinfo2();
  CHECK(histd_write_json(f, &res, 0) == 0, "write_json of %u buckets", buckets);
  struct mallinfo2 after = mallinfo2();
  long len = ftell(f);
  size_t grew = after.uordblks + after.hblkhd - before.uordblks - before.hblkhd;
  CHECK(grew < (64 << 10), "the heap grew %zu bytes writing a %ld-byte document", grew, len);
  char *s = malloc((size_t)len + 1);
  rewind(f);
  CHECK(s != NULL && fread(s, 1, (size_t)len, f) == (size_t)len, "read back");
  s[len] = '\0';
  fclose(f);
  CHECK_STR_CONTAINS(s, "\"counts\":[0,3,6,9,");
  CHECK_STR_CONTAINS(s, "\"edges\":[0,0.001,0.002,0.003,");
  CHECK_STR_CONTAINS(s, ",3145725],\"below\"");
  cJSON *back = cJSON_Parse(s);
  CHECK(back != NULL && cJSON_GetArraySize(cJSON_GetObjectItem(back, "counts")) == (int)buckets,
        "counts parse back");
  cJSON_Delete(back);
  free(s);
  histd_result_free(&res);
}

/* The format, written out: the first of %.15g, %.16g, %.17g that reads back. */
static void shortest(char *buf, size_t len, double v) {
  for (int prec = 15; prec <= 17; prec++) {
    snprintf(buf, len, "%.*g", prec, v);
    if (strtod(buf, NULL) == v)
      return;
  }
}

static void test_number_format(void) {
  locale_t loc;
  CHECK(histd__c_locale(&loc, NULL, 0) == 0, "locale");
  double v[4096];
  size_t n = 0;
  const double fixed[] = {0.0, -0.0, 1, -1, 500, 0.1, 0.30000000000000004, 1e15 - 1, -(1e15 - 1),
                          1e15, 1e15 + 1, 9007199254740992.0, 123456789012345.0, 1e300,
                          5e-324, 2.5, -7.75, 39837.0, 1e14 + 0.5};
  for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
    v[n++] = fixed[i];
  uint64_t r = 0x243f6a8885a308d3ull;
  while (n < 4096) { /* whole numbers of every size, and multiples of a width */
    r ^= r << 13, r ^= r >> 7, r ^= r << 17;
    double x = (double)(r >> (r % 64)) * ((r & 1) ? -1 : 1);
    v[n] = n % 2 ? x : (double)(r % 100000) * 0.1;
    n++;
  }
  for (size_t i = 0; i < n; i++) {
    char got[40], want[40];
    histd__format_double(got, sizeof got, v[i], loc);
    shortest(want, sizeof want, v[i]);
    CHECK(strcmp(got, want) == 0, "%.17g: \"%s\", want \"%s\"", v[i], got, want);
  }
  freelocale(loc);
}

int main(void) {
  test_number_format();
  test_text();
  test_csv();
  test_json();
  test_json_large();
  test_npz();
  return check_finish("test_write");
}
