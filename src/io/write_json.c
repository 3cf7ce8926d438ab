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

static void u64_digits(FILE *f, uint64_t v, bool comma) {
  char digits[24], *d = digits + sizeof digits;
  do /* the digits by hand: no printf call per count */
    *--d = (char)('0' + v % 10);
  while ((v /= 10) != 0);
  if (comma)
    *--d = ',';
  fwrite(d, 1, (size_t)(digits + sizeof digits - d), f);
}

/* An array of the bins' values: what = 'e' edges (count + 1 of them),
 * 'c' counts, 'w' weighted sums, 'g' g(r), 'n' coordination. */
static void array(out *o, const char *k, const histd_result *res, char what) {
  key(o, k);
  fputc('[', o->f);
  const uint32_t count = res->bins.count;
  uint64_t cumulative = 0;
  for (uint32_t b = 0; b < count + (what == 'e'); b++) {
    if (what == 'c') {
      u64_digits(o->f, res->counts[b], b > 0);
      continue;
    }
    if (b > 0)
      fputc(',', o->f);
    double g, n;
    if (what == 'g' || what == 'n')
      histd_result_rdf_bin(res, b, &cumulative, &g, &n);
    dbl_text(o, what == 'e'   ? histd_bins_edge(&res->bins, b)
                : what == 'w' ? res->weighted[b]
                : what == 'g' ? g
                              : n);
  }
  fputc(']', o->f);
}

/* per_frame: each frame's pairs, volume, counts and (periodic) g. */
static void per_frame(out *o, const histd_result *res) {
  const uint64_t frames = res->frames > 0 ? res->frames : 1;
  const uint32_t count = res->bins.count;
  const bool periodic = res->volume > 0;
  key(o, "per_frame");
  open_object(o);
  for (int part = 0; part < (periodic ? 4 : 2); part++) {
    static const char *const names[4] = {"total", "counts", "volume", "g"};
    key(o, names[part]);
    fputc('[', o->f);
    for (uint64_t f = 0; f < frames; f++) {
      if (f > 0)
        fputc(',', o->f);
      if (part == 0)
        u64_digits(o->f, res->frame_total[f], false);
      else if (part == 2)
        dbl_text(o, res->frame_volume[f]);
      else {
        fputc('[', o->f);
        for (uint32_t b = 0; b < count; b++) {
          if (part == 1) {
            u64_digits(o->f, res->frame_counts[f * count + b], b > 0);
            continue;
          }
          if (b > 0)
            fputc(',', o->f);
          dbl_text(o, histd_result_frame_g(res, f, b));
        }
        fputc(']', o->f);
      }
    }
    fputc(']', o->f);
  }
  close_object(o);
}

int histd_write_json(FILE *f, const histd_result *res, unsigned flags) {
  locale_t loc, old;
  if (histd__c_locale(&loc, NULL, 0) != 0)
    return HISTD_ENOMEM;
  old = uselocale(loc);
  out o = {f, loc, (flags & HISTD_JSON_PRETTY) != 0, 0, true};
  const bool whole = !(flags & HISTD_JSON_SUMMARY);
  open_object(&o);
  u64(&o, "n", res->n);
  if (res->cross)
    u64(&o, "n_b", res->n_b);
  if (res->select_a[0] != '\0')
    str(&o, "select_a", res->select_a);
  if (res->select_b[0] != '\0')
    str(&o, "select_b", res->select_b);
  if (res->exclude_molecule) {
    str(&o, "exclude", "molecule");
    u64(&o, "excluded", res->excluded);
  }
  if (res->unit[0] != '\0')
    str(&o, "unit", res->unit);
  u64(&o, "frames", res->frames > 0 ? res->frames : 1);
  if (res->volume > 0) {
    dbl(&o, "volume", res->volume);
    str(&o, "box_source", res->box_from_dataset ? "dataset" : "job");
  }
  if (res->statistic == HISTD_STAT_WITHIN) {
    str(&o, "statistic", "within");
    dbl(&o, "radius", res->radius);
    u64(&o, "within", res->within);
    if (res->weighted != NULL) {
      key(&o, "weighted_within");
      dbl_text(&o, res->weighted[0]);
    }
  } else {
    str(&o, "statistic", "histogram");
    str(&o, "bins", res->bins.kind == HISTD_BINS_EDGES ? "edges" : "width");
    if (res->bins.kind == HISTD_BINS_WIDTH)
      dbl(&o, "bucket_width", res->bins.width);
    u64(&o, "buckets", res->bins.count);
    if (whole) {
      array(&o, "edges", res, 'e');
      array(&o, "counts", res, 'c');
      if (res->weighted != NULL)
        array(&o, "weighted", res, 'w');
      if (res->volume > 0) {
        array(&o, "g", res, 'g');
        array(&o, "coordination", res, 'n');
      }
    }
    if (whole && res->frame_counts != NULL)
      per_frame(&o, res);
    u64(&o, "below", res->below);
  }
  u64(&o, "overflow", res->overflow);
  u64(&o, "total", res->total);
  str(&o, "kernel", res->kernel);
  if (res->reason[0] != '\0')
    str(&o, "kernel_reason", res->reason);
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
