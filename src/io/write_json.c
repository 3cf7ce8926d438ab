/*
 * write_json.c -- a result as one JSON object, streamed to a FILE (the
 * daemon's results and job documents, `sdh --format json`).
 *
 * Streamed rather than built as a tree: a result may hold HISTD_MAX_BUCKETS
 * counts, and a cJSON node per number was ~3.4 GB for a ~240 MB document;
 * even one string per array, printed into a second string, was ~0.6 GB.
 * Here memory does not grow with the bucket count at all: the caller picks
 * where the text goes (memory for small results, a file for large ones).
 *
 * Numbers are exact: 64-bit integers as their decimal digits (JSON has no
 * limit; a reader with doubles rounds above 2^53, a reader with integers
 * gets them right), doubles as the shortest of %.15g/%.16g/%.17g that reads
 * back as the same double, non-finite ones as null.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "io_internal.h"

typedef struct out {
  FILE *f;
  locale_t loc;
  bool pretty;
  int depth;
  bool first; /* no member written yet at this depth */
} out;

static void newline(out *o) {
  if (!o->pretty)
    return;
  fputc('\n', o->f);
  for (int i = 0; i < o->depth; i++)
    fputs("  ", o->f);
}

static void key(out *o, const char *k) {
  if (!o->first)
    fputc(',', o->f);
  o->first = false;
  newline(o);
  fprintf(o->f, o->pretty ? "\"%s\": " : "\"%s\":", k);
}

static void open_object(out *o) {
  fputc('{', o->f);
  o->depth++;
  o->first = true;
}

static void close_object(out *o) {
  o->depth--;
  newline(o);
  fputc('}', o->f);
  o->first = false;
}

static void u64(out *o, const char *k, uint64_t v) {
  key(o, k);
  fprintf(o->f, "%" PRIu64, v);
}

static void dbl_text(out *o, double v) {
  char buf[40];
  if (!isfinite(v))
    fputs("null", o->f);
  else {
    histd__format_double(buf, sizeof buf, v, o->loc);
    fputs(buf, o->f);
  }
}

static void dbl(out *o, const char *k, double v) {
  key(o, k);
  dbl_text(o, v);
}

static void str(out *o, const char *k, const char *s) {
  key(o, k);
  fputc('"', o->f);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\')
      fprintf(o->f, "\\%c", *p);
    else if (*p < 0x20)
      fprintf(o->f, "\\u%04x", *p);
    else
      fputc(*p, o->f);
  }
  fputc('"', o->f);
}

int histd_write_json(FILE *f, const histd_result *res, size_t n, unsigned flags) {
  locale_t loc, old;
  if (histd__c_locale(&loc, NULL, 0) != 0)
    return HISTD_ENOMEM;
  old = uselocale(loc);
  out o = {f, loc, (flags & HISTD_JSON_PRETTY) != 0, 0, true};
  open_object(&o);
  u64(&o, "n", (uint64_t)n);
  dbl(&o, "bucket_width", res->bucket_width);
  u64(&o, "buckets", res->buckets);
  if (!(flags & HISTD_JSON_SUMMARY)) {
    key(&o, "edges");
    fputc('[', f);
    for (uint32_t b = 0; b <= res->buckets; b++) {
      if (b > 0)
        fputc(',', f);
      dbl_text(&o, (double)b * res->bucket_width);
    }
    fputc(']', f);
    key(&o, "counts");
    fputc('[', f);
    for (uint32_t b = 0; b < res->buckets; b++) {
      char digits[24], *d = digits + sizeof digits;
      uint64_t v = res->counts[b];
      do /* the digits by hand: no printf call per count */
        *--d = (char)('0' + v % 10);
      while ((v /= 10) != 0);
      if (b > 0)
        *--d = ',';
      fwrite(d, 1, (size_t)(digits + sizeof digits - d), f);
    }
    fputc(']', f);
  }
  u64(&o, "overflow", res->overflow);
  u64(&o, "total", res->total);
  str(&o, "kernel", res->kernel);
  u64(&o, "block_size", res->block_size);
  str(&o, "precision", histd_precision_name(res->precision));
  key(&o, "exact");
  fputs(res->exact ? "true" : "false", f);
  str(&o, "device", res->device);
  key(&o, "timing_ms");
  open_object(&o);
  dbl(&o, "queue", res->timing.queue_ms);
  dbl(&o, "parse", res->timing.parse_ms);
  dbl(&o, "transfer", res->timing.transfer_ms);
  dbl(&o, "kernel", res->timing.kernel_ms);
  dbl(&o, "total", res->timing.total_ms);
  close_object(&o);
  close_object(&o);
  uselocale(old);
  freelocale(loc);
  return ferror(f) ? HISTD_EIO : 0;
}
