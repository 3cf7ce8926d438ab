/*
 * write_csv.c -- one row per bucket:
 *
 *     bucket,lower,upper,count
 *     0,0,500,1234
 *     ...
 *     overflow,40000,,17
 *
 * lower = b*w and upper = (b+1)*w as doubles, in the shortest decimal that
 * reads back as the same double.
 */
#include <inttypes.h>
#include <stdio.h>

#include "io_internal.h"

int histd_write_csv(FILE *f, const histd_result *res) {
  locale_t loc, old;
  if (histd__c_locale(&loc, NULL, 0) != 0)
    return HISTD_ENOMEM;
  old = uselocale(loc);
  char lo[32], hi[32];
  fputs("bucket,lower,upper,count\n", f);
  double w = res->bucket_width;
  for (uint32_t b = 0; b < res->buckets; b++) {
    histd__format_double(lo, sizeof lo, (double)b * w, loc);
    histd__format_double(hi, sizeof hi, (double)(b + 1) * w, loc);
    fprintf(f, "%" PRIu32 ",%s,%s,%" PRIu64 "\n", b, lo, hi, res->counts[b]);
  }
  histd__format_double(lo, sizeof lo, (double)res->buckets * w, loc);
  fprintf(f, "overflow,%s,,%" PRIu64 "\n", lo, res->overflow);
  uselocale(old);
  freelocale(loc);
  return ferror(f) ? HISTD_EIO : 0;
}
