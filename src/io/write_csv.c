/*
 * write_csv.c -- a result as CSV, from the schema (histd/schema.h):
 *
 *     # n: 1000
 *     # frames: 1
 *     # statistic: histogram
 *     ...                            every scalar the result has, "# name: value"
 *     bucket,lower,upper,count[,weighted][,g,coordination]
 *     below,,0.5,3                   (explicit edges only: d < E[0])
 *     0,0,500,1234
 *     ...
 *     overflow,40000,,17
 *
 * The table is the result's main axis: a row a bin (its edges in the
 * shortest decimals that read back as the same doubles, then every field
 * of that shape), a row a point (frame, when there are several, then
 * every per-point field), or a row a listed pair (frame, i, j, d). Tables
 * of another axis follow as sections, each under a "# [group]" line with
 * its own header: per_frame's rows are (frame, bucket, lower, upper,
 * count[, g], total[, volume]). Readers skip the '#' lines (pandas
 * comment='#', numpy comments='#'). A result of scalars only (a count
 * within a radius) is one row of them under a header instead.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "io_internal.h"

typedef struct out {
  FILE *f;
  locale_t loc;
} out;

static void cell(out *o, histd_ftype type, const histd_fvalue *v) {
  char buf[40];
  switch (type) {
  case HISTD_FT_U64:
    fprintf(o->f, "%" PRIu64, v->u);
    break;
  case HISTD_FT_I64:
    fprintf(o->f, "%" PRId64, v->i);
    break;
  case HISTD_FT_F64:
    histd__format_double(buf, sizeof buf, v->d, o->loc);
    fputs(buf, o->f);
    break;
  case HISTD_FT_STR: /* quoted when it holds a separator, a quote or a line end */
    if (strpbrk(v->s, ",\"\r\n") == NULL) {
      fputs(v->s, o->f);
      break;
    }
    fputc('"', o->f);
    for (const char *c = v->s; *c; c++)
      fprintf(o->f, *c == '"' ? "\"\"" : "%c", *c);
    fputc('"', o->f);
    break;
  case HISTD_FT_BOOL:
    fputs(v->b ? "true" : "false", o->f);
    break;
  }
}

static void put_cell(void *user, histd_ftype type, const histd_fvalue *v) { cell(user, type, v); }

static void edge(out *o, const histd_result *r, uint32_t k) {
  char buf[40];
  histd__format_double(buf, sizeof buf, histd_bins_edge(&r->bins, k), o->loc);
  fputs(buf, o->f);
}

/* Each column's name, after `first` (its own leading columns). */
static void header(out *o, const char *first, const histd__table *c) {
  fputs(first, o->f);
  for (size_t k = 0; k < c->n; k++) {
    char name[64];
    histd__field_column(c->f[k], name, sizeof name);
    fprintf(o->f, "%s%s", first[0] ? "," : k ? "," : "", name);
  }
  fputc('\n', o->f);
}

/* The next value of every column, comma-separated (each after a comma
 * when `lead`). */
static void row_values(out *o, histd__table *c, bool lead) {
  histd_fvalue v;
  for (size_t k = 0; k < c->n; k++) {
    if (lead || k)
      fputc(',', o->f);
    if (histd__values_next(&c->it[k], &v))
      cell(o, c->f[k]->type, &v);
  }
}

static void empties(out *o, size_t n) {
  for (size_t k = 0; k < n; k++)
    fputc(',', o->f);
}

static void edge2(out *o, const histd_result *r, uint32_t k) {
  char buf[40];
  histd__format_double(buf, sizeof buf, histd_bins_edge2(&r->bins, k), o->loc);
  fputs(buf, o->f);
}

/* The columns that name a bin: bucket, lower, upper (two axes: and
 * bucket2, lower2, upper2), and the cells of slot s (axis 2's within axis
 * 1's). */
static const char *bin_columns(const histd_result *r) {
  return r->bins.count2 > 0 ? "bucket,lower,upper,bucket2,lower2,upper2" : "bucket,lower,upper";
}
static void bin_cells(out *o, const histd_result *r, uint64_t s) {
  const uint32_t n2 = r->bins.count2, b = n2 ? (uint32_t)(s / n2) : (uint32_t)s;
  fprintf(o->f, "%" PRIu32 ",", b);
  edge(o, r, b);
  fputc(',', o->f);
  edge(o, r, b + 1);
  if (n2 == 0)
    return;
  fprintf(o->f, ",%" PRIu32 ",", (uint32_t)(s % n2));
  edge2(o, r, (uint32_t)(s % n2));
  fputc(',', o->f);
  edge2(o, r, (uint32_t)(s % n2) + 1);
}

/* Two axes (rp_pi, s_mu): a row a bin of each, axis 2's within axis 1's;
 * the pairs outside are the scalars' below and overflow. */
static int bins2_table(out *o, const histd_result *r) {
  histd__table c;
  histd__table_open(&c, r, HISTD_OUT_CSV, HISTD_FS_BINS, HISTD_FS_BINS);
  header(o, bin_columns(r), &c);
  for (uint64_t s = 0; s < histd_bins_slots(&r->bins); s++) {
    bin_cells(o, r, s);
    row_values(o, &c, true);
    fputc('\n', o->f);
  }
  return histd__table_close(&c);
}

/* The bins: below (explicit edges), a row a bin, overflow. */
static int bins_table(out *o, const histd_result *r) {
  if (r->bins.count2 > 0)
    return bins2_table(o, r);
  histd__table c;
  histd__table_open(&c, r, HISTD_OUT_CSV, HISTD_FS_BINS, HISTD_FS_BINS);
  header(o, "bucket,lower,upper", &c);
  const uint32_t count = r->bins.count;
  const size_t rest = c.n ? c.n - 1 : 0; /* the columns after count */
  if (r->bins.kind == HISTD_BINS_EDGES) {
    fputs("below,,", o->f);
    edge(o, r, 0);
    fprintf(o->f, ",%" PRIu64, r->below);
    empties(o, rest);
    fputc('\n', o->f);
  }
  for (uint32_t b = 0; b < count; b++) {
    fprintf(o->f, "%" PRIu32 ",", b);
    edge(o, r, b);
    fputc(',', o->f);
    edge(o, r, b + 1);
    row_values(o, &c, true);
    fputc('\n', o->f);
  }
  fputs("overflow,", o->f);
  edge(o, r, count);
  fprintf(o->f, ",,%" PRIu64, r->overflow);
  empties(o, rest);
  fputc('\n', o->f);
  return histd__table_close(&c);
}

/* A row a point of A (and frame, with several), every per-point field. */
static int points_table(out *o, const histd_result *r) {
  histd__table c;
  histd__table_open(&c, r, HISTD_OUT_CSV, HISTD_FS_FRAME_POINTS, HISTD_FS_FRAME_POINTS);
  const histd_field *index = histd_schema_find(NULL, "index");
  const uint64_t frames = r->frames > 1 ? r->frames : 1;
  header(o, frames > 1 ? "frame,index" : "index", &c);
  int err = 0;
  for (uint64_t f = 0; f < frames; f++) {
    histd__values idx;
    histd__values_open(&idx, index, r);
    histd_fvalue v;
    for (uint64_t i = 0; i < r->point_n && histd__values_next(&idx, &v); i++) {
      if (frames > 1)
        fprintf(o->f, "%" PRIu64 ",", f);
      fprintf(o->f, "%" PRIu64, v.u);
      row_values(o, &c, true);
      fputc('\n', o->f);
    }
    histd__values_close(&idx);
  }
  int cerr = histd__table_close(&c);
  return err ? err : cerr;
}

/* A row a listed pair. */
static int pairs_table(out *o, const histd_result *r) {
  histd__table c;
  histd__table_open(&c, r, HISTD_OUT_CSV, HISTD_FS_PAIRS, HISTD_FS_PAIRS);
  header(o, "", &c);
  for (uint64_t p = 0; p < r->pairs; p++) {
    row_values(o, &c, false);
    fputc('\n', o->f);
  }
  return histd__table_close(&c);
}

/* A table of rows x bins (per_frame: a row a frame; blocks: a row a
 * block), each row's own fields (shape `own`, when has_own) repeated on
 * its bins' lines (a per-point histogram: a row a point); without fields
 * by bin (a pair list's), a line a row. */
static int rows_table(out *o, const histd_result *r, const char *title, const char *row_name,
                      histd_fshape by_bin_shape, bool has_own, histd_fshape own, uint64_t nf) {
  histd__table bins, frames;
  histd__table_open(&bins, r, HISTD_OUT_CSV, by_bin_shape, by_bin_shape);
  frames.n = 0;
  if (has_own)
    histd__table_open(&frames, r, HISTD_OUT_CSV, own, own);
  if (bins.n == 0 && frames.n == 0)
    return 0;
  const bool by_bin = bins.n > 0;
  fprintf(o->f, "# [%s]\n%s%s%s", title, row_name, by_bin ? "," : "", by_bin ? bin_columns(r) : "");
  for (size_t k = 0; k < bins.n + frames.n; k++) {
    const histd_field *fd = k < bins.n ? bins.f[k] : frames.f[k - bins.n];
    char name[64];
    histd__field_column(fd, name, sizeof name);
    fprintf(o->f, ",%s", name);
  }
  fputc('\n', o->f);
  for (uint64_t f = 0; f < nf; f++) {
    /* the frame's own values, read once and repeated on its rows */
    histd_fvalue fv[HISTD__MAX_TABLE];
    for (size_t k = 0; k < frames.n; k++)
      if (!histd__values_next(&frames.it[k], &fv[k]))
        memset(&fv[k], 0, sizeof fv[k]);
    for (uint64_t b = 0; b < (by_bin ? histd_bins_slots(&r->bins) : 1); b++) {
      fprintf(o->f, "%" PRIu64, f);
      if (by_bin) {
        fputc(',', o->f);
        bin_cells(o, r, b);
        row_values(o, &bins, true);
      }
      for (size_t k = 0; k < frames.n; k++) {
        fputc(',', o->f);
        cell(o, frames.f[k]->type, &fv[k]);
      }
      fputc('\n', o->f);
    }
  }
  int e1 = histd__table_close(&bins), e2 = histd__table_close(&frames);
  return e1 ? e1 : e2;
}

int histd_write_csv(FILE *f, const histd_result *res) {
  locale_t loc, old;
  if (histd__c_locale(&loc, NULL, 0) != 0)
    return HISTD_ENOMEM;
  old = uselocale(loc);
  out o = {f, loc};
  const histd_statistic_info *in = histd_statistic_about(res->statistic);
  const bool bins = in != NULL && in->binned;
  const bool points = histd_statistic_per_point(res->statistic);
  const bool pairs = in != NULL && in->answer == HISTD_ANSWER_PAIRS;
  int err = 0;
  if (bins || points || pairs) {
    histd__scalar_lines(f, res, HISTD_OUT_CSV, "# ", NULL, put_cell, &o);
    err = bins ? bins_table(&o, res) : points ? points_table(&o, res) : pairs_table(&o, res);
    if (err == 0)
      err = rows_table(&o, res, "per_frame", "frame", HISTD_FS_FRAME_BINS, true, HISTD_FS_FRAMES,
                       res->frames > 0 ? res->frames : 1);
    if (err == 0)
      err = rows_table(&o, res, "block", "block", HISTD_FS_BLOCK_BINS, false, HISTD_FS_SCALAR,
                       res->blocks);
    if (err == 0)
      err = rows_table(&o, res, "partial", "partial", HISTD_FS_PARTIAL_BINS, true,
                       HISTD_FS_PARTIALS, res->partials);
    if (err == 0)
      err = rows_table(&o, res, "jackknife", "region", HISTD_FS_REGION_BINS, true,
                       HISTD_FS_REGIONS, res->regions);
    if (err == 0 && bins && points)
      err = rows_table(&o, res, "point", "point", HISTD_FS_POINT_BINS, true, HISTD_FS_POINTS,
                       res->point_n);
  } else { /* scalars only: one row */
    histd__table c;
    histd__table_open(&c, res, HISTD_OUT_CSV, HISTD_FS_SCALAR, HISTD_FS_SCALAR);
    header(&o, "", &c);
    row_values(&o, &c, false);
    fputc('\n', f);
    err = histd__table_close(&c);
  }
  uselocale(old);
  freelocale(loc);
  return err != 0 ? err : ferror(f) ? HISTD_EIO : 0;
}
