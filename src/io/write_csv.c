/*
 * write_csv.c -- one row per bucket:
 *
 *     bucket,lower,upper,count[,weighted][,g,coordination]
 *     below,,0.5,3            (explicit edges only: d < E[0])
 *     0,0,500,1234
 *     ...
 *     overflow,40000,,17
 *
 * lower and upper are the bin's edges (b*w and (b+1)*w for equal widths)
 * in the shortest decimal that reads back as the same double; `weighted`
 * is there when the job had weights, g and coordination when it had a
 * periodic box. A count within a radius is one row:
 *
 *     radius,within,total[,weighted]
 */
#include <inttypes.h>
#include <stdio.h>

#include "io_internal.h"

int histd_write_csv(FILE *f, const histd_result *res) {
  locale_t loc, old;
  if (histd__c_locale(&loc, NULL, 0) != 0)
    return HISTD_ENOMEM;
  old = uselocale(loc);
  char lo[32], hi[32], v1[32], v2[32];
  const bool weighted = res->weighted != NULL, rdf = res->volume > 0;
  if (res->statistic == HISTD_STAT_WITHIN) {
    histd__format_double(lo, sizeof lo, res->radius, loc);
    fprintf(f, "radius,within,total%s\n%s,%" PRIu64 ",%" PRIu64, weighted ? ",weighted" : "", lo,
            res->within, res->total);
    if (weighted) {
      histd__format_double(v1, sizeof v1, res->weighted[0], loc);
      fprintf(f, ",%s", v1);
    }
    fputc('\n', f);
  } else {
    const uint32_t count = res->bins.count;
    fprintf(f, "bucket,lower,upper,count%s%s\n", weighted ? ",weighted" : "",
            rdf ? ",g,coordination" : "");
    if (res->bins.kind == HISTD_BINS_EDGES) {
      histd__format_double(hi, sizeof hi, histd_bins_edge(&res->bins, 0), loc);
      fprintf(f, "below,,%s,%" PRIu64 "%s%s\n", hi, res->below, weighted ? "," : "",
              rdf ? ",," : "");
    }
    uint64_t cumulative = 0;
    for (uint32_t b = 0; b < count; b++) {
      histd__format_double(lo, sizeof lo, histd_bins_edge(&res->bins, b), loc);
      histd__format_double(hi, sizeof hi, histd_bins_edge(&res->bins, b + 1), loc);
      fprintf(f, "%" PRIu32 ",%s,%s,%" PRIu64, b, lo, hi, res->counts[b]);
      if (weighted) {
        histd__format_double(v1, sizeof v1, res->weighted[b], loc);
        fprintf(f, ",%s", v1);
      }
      if (rdf) {
        double g, n;
        histd_result_rdf_bin(res, b, &cumulative, &g, &n);
        histd__format_double(v1, sizeof v1, g, loc);
        histd__format_double(v2, sizeof v2, n, loc);
        fprintf(f, ",%s,%s", v1, v2);
      }
      fputc('\n', f);
    }
    histd__format_double(lo, sizeof lo, histd_bins_edge(&res->bins, count), loc);
    fprintf(f, "overflow,%s,,%" PRIu64 "%s%s\n", lo, res->overflow, weighted ? "," : "",
            rdf ? ",," : "");
  }
  uselocale(old);
  freelocale(loc);
  return ferror(f) ? HISTD_EIO : 0;
}
