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
 * apart, then "T:<total pairs>", "below:" and "overflow:<count>" when
 * nonzero, "excluded:" and the selections when the job had them, the
 * kernel and the timings. A result with weights or a periodic
 * box has more than a count per bin; it is a table instead, a row a bin:
 *
 *     bucket      lower      upper   count   weighted   g   coordination
 *
 * and a count within a radius is one line, "within R: <count>".
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
  const uint32_t count = res->bins.count;
  char lo[32], hi[32], v1[32], v2[32];
  if (res->statistic == HISTD_STAT_WITHIN) {
    histd__format_double(lo, sizeof lo, res->radius, loc);
    fprintf(f, "within %s: %" PRIu64 "\n", lo, res->within);
    if (res->weighted != NULL) {
      histd__format_double(v1, sizeof v1, res->weighted[0], loc);
      fprintf(f, "weighted within %s: %s\n", lo, v1);
    }
  } else if (res->weighted != NULL || res->volume > 0) {
    fprintf(f, "%8s %14s %14s %14s", "bucket", "lower", "upper", "count");
    if (res->weighted != NULL)
      fprintf(f, " %24s", "weighted");
    if (res->volume > 0)
      fprintf(f, " %24s %24s", "g", "coordination");
    fputc('\n', f);
    uint64_t cumulative = 0;
    for (uint32_t b = 0; b < count; b++) {
      histd__format_double(lo, sizeof lo, histd_bins_edge(&res->bins, b), loc);
      histd__format_double(hi, sizeof hi, histd_bins_edge(&res->bins, b + 1), loc);
      fprintf(f, "%8" PRIu32 " %14s %14s %14" PRIu64, b, lo, hi, res->counts[b]);
      if (res->weighted != NULL) {
        histd__format_double(v1, sizeof v1, res->weighted[b], loc);
        fprintf(f, " %24s", v1);
      }
      if (res->volume > 0) {
        double g, n;
        histd_result_rdf_bin(res, b, &cumulative, &g, &n);
        histd__format_double(v1, sizeof v1, g, loc);
        histd__format_double(v2, sizeof v2, n, loc);
        fprintf(f, " %24s %24s", v1, v2);
      }
      fputc('\n', f);
    }
  } else {
    uint32_t last_row = count == 0 ? 0 : (count - 1) / 5 * 5;
    int iw = digits_u64(last_row);
    if (iw < 2)
      iw = 2;
    int cw = 1;
    for (uint32_t b = 0; b < count; b++) {
      int d = digits_u64(res->counts[b]);
      if (d > cw)
        cw = d;
    }
    cw += 2;
    for (uint32_t b = 0; b < count; b++) {
      if (b % 5 == 0)
        fprintf(f, "%0*" PRIu32 ":", iw, b);
      fprintf(f, "%*" PRIu64, cw, res->counts[b]);
      if (b % 5 == 4 || b + 1 == count)
        fputc('\n', f);
    }
  }
  fprintf(f, "T:%" PRIu64 "\n", res->total);
  if (res->below != 0) {
    histd__format_double(lo, sizeof lo, histd_bins_edge(&res->bins, 0), loc);
    fprintf(f, "below:%" PRIu64 " (distances < %s)\n", res->below, lo);
  }
  if (res->overflow != 0 && res->statistic != HISTD_STAT_WITHIN) {
    histd__format_double(lo, sizeof lo, histd_bins_edge(&res->bins, count), loc);
    fprintf(f, "overflow:%" PRIu64 " (distances >= %s)\n", res->overflow, lo);
  }
  if (res->unit[0] != '\0')
    fprintf(f, "unit: %s (the file's own; distances and edges are in it)\n", res->unit);
  if (res->exclude_molecule)
    fprintf(f, "excluded:%" PRIu64 " (pairs within a molecule, not in T)\n", res->excluded);
  if (res->select_a[0] != '\0' || res->select_b[0] != '\0')
    fprintf(f, "selections: A %s (%" PRIu64 " atoms), B %s (%" PRIu64 " atoms)\n",
            res->select_a[0] ? res->select_a : "all", res->n,
            res->cross ? res->select_b[0] ? res->select_b : "all" : "= A",
            res->cross ? res->n_b : res->n);
  if (res->frames > 1 || res->volume > 0) {
    fprintf(f, "frames: %" PRIu64, res->frames > 0 ? res->frames : 1);
    if (res->volume > 0)
      fprintf(f, "; periodic box from the %s", res->box_from_dataset ? "file" : "job");
    fputc('\n', f);
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
  if (res->reason[0] != '\0')
    fprintf(f, "chosen: %s\n", res->reason);
  const histd_timing *t = &res->timing;
  fprintf(f, "time: %.3f ms (kernel %.3f, transfer %.3f, parse %.3f, queue %.3f)\n",
          t->total_ms, t->kernel_ms, t->transfer_ms, t->parse_ms, t->queue_ms);
  uselocale(old);
  freelocale(loc);
  return ferror(f) ? HISTD_EIO : 0;
}
