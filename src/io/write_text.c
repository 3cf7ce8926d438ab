/*
 * write_text.c -- the seed reports' histogram layout:
 *
 *     00:   1234   5678   9012   3456   7890
 *     05:    123     45
 *     T:27538
 *     kernel: cpu (exact), on cpu: 2 threads
 *     time: 12.345 ms (kernel 11.000, transfer 0.000, parse 1.200, queue 0.000)
 *
 * Five counts a row, the row's first bucket index zero-padded to at least two
 * digits (every prefix the same width), counts right-aligned two spaces
 * apart, then "T:<total pairs>", "overflow:<count>" when nonzero, the kernel
 * and the timings.
 */
#include <inttypes.h>
#include <stdio.h>

#include "io_internal.h"

static int digits_u64(uint64_t v) {
  int d = 1;
  while (v >= 10) {
    v /= 10;
    d++;
  }
  return d;
}

int histd_write_text(FILE *f, const histd_result *res) {
  locale_t loc, old;
  if (histd__c_locale(&loc, NULL, 0) != 0)
    return HISTD_ENOMEM;
  old = uselocale(loc);
  uint32_t last_row = res->buckets == 0 ? 0 : (res->buckets - 1) / 5 * 5;
  int iw = digits_u64(last_row);
  if (iw < 2)
    iw = 2;
  int cw = 1;
  for (uint32_t b = 0; b < res->buckets; b++) {
    int d = digits_u64(res->counts[b]);
    if (d > cw)
      cw = d;
  }
  cw += 2;
  for (uint32_t b = 0; b < res->buckets; b++) {
    if (b % 5 == 0)
      fprintf(f, "%0*" PRIu32 ":", iw, b);
    fprintf(f, "%*" PRIu64, cw, res->counts[b]);
    if (b % 5 == 4 || b + 1 == res->buckets)
      fputc('\n', f);
  }
  fprintf(f, "T:%" PRIu64 "\n", res->total);
  if (res->overflow != 0) {
    char lo[32];
    histd__format_double(lo, sizeof lo, (double)res->buckets * res->bucket_width, loc);
    fprintf(f, "overflow:%" PRIu64 " (distances >= %s)\n", res->overflow, lo);
  }
  fprintf(f, "kernel: %s (%s%s)", res->kernel, histd_precision_name(res->precision),
          res->precision == HISTD_PRECISION_FAST && res->exact ? ", counts exact" : "");
  if (res->block_size != 0)
    fprintf(f, ", block size %" PRIu32, res->block_size);
  if (res->threads != 0 && res->device[0] == '\0')
    fprintf(f, ", %" PRIu32 " thread%s", res->threads, res->threads == 1 ? "" : "s");
  if (res->device[0] != '\0')
    fprintf(f, ", on %s", res->device);
  fputc('\n', f);
  const histd_timing *t = &res->timing;
  fprintf(f, "time: %.3f ms (kernel %.3f, transfer %.3f, parse %.3f, queue %.3f)\n",
          t->total_ms, t->kernel_ms, t->transfer_ms, t->parse_ms, t->queue_ms);
  uselocale(old);
  freelocale(loc);
  return ferror(f) ? HISTD_EIO : 0;
}
