/*
 * write_text.c -- a result for people, from the schema (histd/schema.h):
 * the seed reports' layout for a plain histogram,
 *
 *     00:   1234   5678   9012   3456   7890
 *     05:    123     45
 *     T:27538
 *     n: 235
 *     frames: 1
 *     ...
 *
 * five counts a row, the row's first bucket index zero-padded to at least
 * two digits (every prefix the same width), counts right-aligned two
 * spaces apart, then "T:<total pairs>", the bins being k x bucket_width.
 * A histogram with more than a count per bin (weights, g(r)) or explicit
 * edges is a table instead, a row a bin with its edges; a per-point result a row a point, a pair list a row a pair; a
 * count within a radius one line, "within R: <count>". Then every other
 * scalar the result has, "name: value", in the schema's order, and the
 * per-frame table when there is one.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "io_internal.h"

static int digits_u64(uint64_t v) {
  int d = 1;
  while (v >= 10) {
    v /= 10;
    d++;
  }
  return d;
}

static void cell(FILE *f, locale_t loc, histd_ftype type, const histd_fvalue *v, int width) {
  char buf[40];
  switch (type) {
  case HISTD_FT_U64:
    fprintf(f, "%*" PRIu64, width, v->u);
    break;
  case HISTD_FT_I64:
    fprintf(f, "%*" PRId64, width, v->i);
    break;
  case HISTD_FT_F64:
    histd__format_double(buf, sizeof buf, v->d, loc);
    fprintf(f, "%*s", width, buf);
    break;
  case HISTD_FT_STR:
    fprintf(f, "%*s", width, v->s);
    break;
  case HISTD_FT_BOOL:
    fprintf(f, "%*s", width, v->b ? "true" : "false");
    break;
  }
}

typedef struct text_out {
  FILE *f;
  locale_t loc;
} text_out;

static void put_cell(void *user, histd_ftype type, const histd_fvalue *v) {
  const text_out *o = user;
  cell(o->f, o->loc, type, v, 1);
}

static int width_of(histd_ftype t) { return t == HISTD_FT_F64 ? 24 : 14; }

static void header(FILE *f, const histd__table *c) {
  for (size_t k = 0; k < c->n; k++) {
    char name[64];
    histd__field_column(c->f[k], name, sizeof name);
    fprintf(f, " %*s", width_of(c->f[k]->type), name);
  }
  fputc('\n', f);
}

static void row(FILE *f, locale_t loc, histd__table *c) {
  histd_fvalue v;
  for (size_t k = 0; k < c->n; k++) {
    fputc(' ', f);
    if (histd__values_next(&c->it[k], &v))
      cell(f, loc, c->f[k]->type, &v, width_of(c->f[k]->type));
  }
  fputc('\n', f);
}

static void edges(FILE *f, locale_t loc, const histd_result *r, uint32_t b) {
  char lo[32], hi[32];
  histd__format_double(lo, sizeof lo, histd_bins_edge(&r->bins, b), loc);
  histd__format_double(hi, sizeof hi, histd_bins_edge(&r->bins, b + 1), loc);
  fprintf(f, " %14s %14s", lo, hi);
}

/* The columns that name a bin (two axes: both's), and slot s's cells
 * (axis 2's within axis 1's). */
static void bin_heads(FILE *f, const histd_result *r) {
  fprintf(f, " %8s %14s %14s", "bucket", "lower", "upper");
  if (r->bins.count2 > 0)
    fprintf(f, " %8s %14s %14s", "bucket2", "lower2", "upper2");
}
static void bin_cells(FILE *f, locale_t loc, const histd_result *r, uint64_t s) {
  const uint32_t n2 = r->bins.count2, b = n2 ? (uint32_t)(s / n2) : (uint32_t)s;
  fprintf(f, " %8" PRIu32, b);
  edges(f, loc, r, b);
  if (n2 == 0)
    return;
  char lo[32], hi[32];
  const uint32_t b2 = (uint32_t)(s % n2);
  histd__format_double(lo, sizeof lo, histd_bins_edge2(&r->bins, b2), loc);
  histd__format_double(hi, sizeof hi, histd_bins_edge2(&r->bins, b2 + 1), loc);
  fprintf(f, " %8" PRIu32 " %14s %14s", b2, lo, hi);
}

/* The seed layout: five counts a row. */
static void seed_rows(FILE *f, const histd_result *r) {
  const uint32_t count = r->bins.count;
  uint32_t last_row = count == 0 ? 0 : (count - 1) / 5 * 5;
  int iw = digits_u64(last_row);
  if (iw < 2)
    iw = 2;
  int cw = 1;
  for (uint32_t b = 0; b < count; b++) {
    int d = digits_u64(r->counts[b]);
    if (d > cw)
      cw = d;
  }
  cw += 2;
  for (uint32_t b = 0; b < count; b++) {
    if (b % 5 == 0)
      fprintf(f, "%0*" PRIu32 ":", iw, b);
    fprintf(f, "%*" PRIu64, cw, r->counts[b]);
    if (b % 5 == 4 || b + 1 == count)
      fputc('\n', f);
  }
}

static int main_table(FILE *f, locale_t loc, const histd_result *r) {
  histd__table c;
  int err = 0;
  if (histd_statistic_about(r->statistic)->binned) {
    histd__table_open(&c, r, HISTD_OUT_TEXT, HISTD_FS_BINS, HISTD_FS_BINS);
    if (r->bins.count2 > 0) { /* two axes: a row a bin of each */
      bin_heads(f, r);
      header(f, &c);
      for (uint64_t s = 0; s < histd_bins_slots(&r->bins); s++) {
        bin_cells(f, loc, r, s);
        row(f, loc, &c);
      }
      return histd__table_close(&c);
    }
    if (c.n <= 1 && r->bins.kind == HISTD_BINS_WIDTH) { /* the seed's rows: k x width */
      histd__table_close(&c);
      seed_rows(f, r);
      return 0;
    }
    fprintf(f, "%8s %14s %14s", "bucket", "lower", "upper");
    header(f, &c);
    for (uint32_t b = 0; b < r->bins.count; b++) {
      fprintf(f, "%8" PRIu32, b);
      edges(f, loc, r, b);
      row(f, loc, &c);
    }
    return histd__table_close(&c);
  }
  if (histd_statistic_per_point(r->statistic)) { /* a value per point and frame */
    histd__table_open(&c, r, HISTD_OUT_TEXT, HISTD_FS_FRAME_POINTS, HISTD_FS_FRAME_POINTS);
    const histd_field *index = histd_schema_find(NULL, "index");
    const uint64_t frames = r->frames > 1 ? r->frames : 1;
    fprintf(f, "%8s %14s", "frame", "index");
    header(f, &c);
    for (uint64_t fr = 0; fr < frames; fr++) {
      histd__values idx;
      histd__values_open(&idx, index, r);
      histd_fvalue v;
      for (uint64_t i = 0; i < r->point_n && histd__values_next(&idx, &v); i++) {
        fprintf(f, "%8" PRIu64 " %14" PRIu64, fr, v.u);
        row(f, loc, &c);
      }
      histd__values_close(&idx);
    }
    return histd__table_close(&c);
  }
  if (histd_statistic_about(r->statistic)->answer == HISTD_ANSWER_PAIRS) {
    histd__table_open(&c, r, HISTD_OUT_TEXT, HISTD_FS_PAIRS, HISTD_FS_PAIRS);
    header(f, &c);
    for (uint64_t p = 0; p < r->pairs; p++)
      row(f, loc, &c);
    return histd__table_close(&c);
  }
  char rad[32];
  histd__format_double(rad, sizeof rad, r->radius, loc);
  fprintf(f, "within %s: %" PRIu64 "\n", rad, r->within);
  return err;
}

/* A table of rows x bins (per frame: a row a frame; blocks: a row a
 * block), each row's own fields (shape `own`, when has_own) repeated; a
 * pair list's, a line a frame. */
static int rows_table(FILE *f, locale_t loc, const histd_result *r, const char *title,
                      const char *row_name, histd_fshape by_bin_shape, bool has_own,
                      histd_fshape own, uint64_t nf) {
  histd__table bins, fr;
  histd__table_open(&bins, r, HISTD_OUT_TEXT, by_bin_shape, by_bin_shape);
  fr.n = 0;
  if (has_own)
    histd__table_open(&fr, r, HISTD_OUT_TEXT, own, own);
  const bool by_bin = bins.n > 0;
  if (bins.n > 0 || fr.n > 0) {
    fprintf(f, "%s:\n%8s", title, row_name);
    if (by_bin)
      bin_heads(f, r);
    for (size_t k = 0; k < bins.n + fr.n; k++) {
      const histd_field *fd = k < bins.n ? bins.f[k] : fr.f[k - bins.n];
      char name[64];
      histd__field_column(fd, name, sizeof name);
      fprintf(f, " %*s", width_of(fd->type), name);
    }
    fputc('\n', f);
    for (uint64_t k = 0; k < nf; k++) {
      histd_fvalue fv[HISTD__MAX_TABLE];
      for (size_t c = 0; c < fr.n; c++)
        if (!histd__values_next(&fr.it[c], &fv[c]))
          memset(&fv[c], 0, sizeof fv[c]);
      for (uint64_t b = 0; b < (by_bin ? histd_bins_slots(&r->bins) : 1); b++) {
        fprintf(f, "%8" PRIu64, k);
        if (by_bin)
          bin_cells(f, loc, r, b);
        histd_fvalue v;
        for (size_t c = 0; c < bins.n; c++) {
          fputc(' ', f);
          if (histd__values_next(&bins.it[c], &v))
            cell(f, loc, bins.f[c]->type, &v, width_of(bins.f[c]->type));
        }
        for (size_t c = 0; c < fr.n; c++) {
          fputc(' ', f);
          cell(f, loc, fr.f[c]->type, &fv[c], width_of(fr.f[c]->type));
        }
        fputc('\n', f);
      }
    }
  }
  int e1 = histd__table_close(&bins), e2 = histd__table_close(&fr);
  return e1 ? e1 : e2;
}

int histd_write_text(FILE *f, const histd_result *res) {
  locale_t loc, old;
  if (histd__c_locale(&loc, NULL, 0) != 0)
    return HISTD_ENOMEM;
  old = uselocale(loc);
  int err = main_table(f, loc, res);
  fprintf(f, "T:%" PRIu64 "\n", res->total);
  text_out o = {f, loc};
  histd__scalar_lines(f, res, HISTD_OUT_TEXT, "", histd_schema_find(NULL, "total"), put_cell,
                      &o);
  if (err == 0)
    err = rows_table(f, loc, res, "per frame", "frame", HISTD_FS_FRAME_BINS, true,
                     HISTD_FS_FRAMES, res->frames > 0 ? res->frames : 1);
  if (err == 0)
    err = rows_table(f, loc, res, "blocks", "block", HISTD_FS_BLOCK_BINS, false,
                     HISTD_FS_SCALAR, res->blocks);
  if (err == 0)
    err = rows_table(f, loc, res, "partials", "partial", HISTD_FS_PARTIAL_BINS, true,
                     HISTD_FS_PARTIALS, res->partials);
  if (err == 0)
    err = rows_table(f, loc, res, "jackknife", "region", HISTD_FS_REGION_BINS, true,
                     HISTD_FS_REGIONS, res->regions);
  if (err == 0 && res->statistic == HISTD_STAT_POINT_HISTOGRAM)
    err = rows_table(f, loc, res, "points", "point", HISTD_FS_POINT_BINS, true, HISTD_FS_POINTS,
                     res->point_n);
  uselocale(old);
  freelocale(loc);
  return err != 0 ? err : ferror(f) ? HISTD_EIO : 0;
}
