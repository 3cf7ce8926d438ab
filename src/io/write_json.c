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
 *
 * What is written is the schema's (histd/schema.h): every field the JSON
 * output carries and the result has, in the table's order, a field of a
 * group inside that group's object; arrays of two dimensions (frames x
 * bins, frames x points) as arrays of rows. A summary leaves every array
 * out.
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

static void dbl_text(out *o, double v) {
  char buf[40];
  if (!isfinite(v))
    fputs("null", o->f);
  else {
    histd__format_double(buf, sizeof buf, v, o->loc);
    fputs(buf, o->f);
  }
}

static void str_text(out *o, const char *s) {
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

static void u64_digits(FILE *f, uint64_t v) {
  char digits[24], *d = digits + sizeof digits;
  do /* the digits by hand: no printf call per count */
    *--d = (char)('0' + v % 10);
  while ((v /= 10) != 0);
  fwrite(d, 1, (size_t)(digits + sizeof digits - d), f);
}

static void value(out *o, histd_ftype type, const histd_fvalue *v) {
  switch (type) {
  case HISTD_FT_U64:
    u64_digits(o->f, v->u);
    break;
  case HISTD_FT_I64:
    if (v->i < 0) {
      fputc('-', o->f);
      u64_digits(o->f, (uint64_t)0 - (uint64_t)v->i);
    } else {
      u64_digits(o->f, (uint64_t)v->i);
    }
    break;
  case HISTD_FT_F64:
    dbl_text(o, v->d);
    break;
  case HISTD_FT_STR:
    str_text(o, v->s);
    break;
  case HISTD_FT_BOOL:
    fputs(v->b ? "true" : "false", o->f);
    break;
  }
}

/* A field's values: a scalar, an array, or an array of rows. */
static int field(out *o, const histd_field *fd, const histd_result *res) {
  uint64_t rows, cols;
  histd_field_len(fd, res, &rows, &cols);
  histd__values it;
  histd__values_open(&it, fd, res);
  histd_fvalue v;
  if (fd->shape == HISTD_FS_SCALAR) {
    if (histd__values_next(&it, &v))
      value(o, fd->type, &v);
  } else {
    fputc('[', o->f);
    for (uint64_t r = 0; r < (cols ? rows : 1); r++) {
      if (cols) {
        if (r > 0)
          fputc(',', o->f);
        fputc('[', o->f);
      }
      const uint64_t n = cols ? cols : rows;
      for (uint64_t c = 0; c < n && histd__values_next(&it, &v); c++) {
        if (c > 0)
          fputc(',', o->f);
        value(o, fd->type, &v);
      }
      if (cols)
        fputc(']', o->f);
    }
    fputc(']', o->f);
  }
  int err = it.err;
  histd__values_close(&it);
  return err;
}

int histd_write_json(FILE *f, const histd_result *res, unsigned flags) {
  locale_t loc, old;
  if (histd__c_locale(&loc, NULL, 0) != 0)
    return HISTD_ENOMEM;
  old = uselocale(loc);
  out o = {f, loc, (flags & HISTD_JSON_PRETTY) != 0, 0, true};
  const bool whole = !(flags & HISTD_JSON_SUMMARY);
  const char *group = NULL; /* the group object open now */
  int err = 0;
  open_object(&o);
  for (size_t i = 0; i < histd_schema_count() && err == 0; i++) {
    const histd_field *fd = histd_schema_at(i);
    if (!histd__field_shown(fd, res, HISTD_OUT_JSON) ||
        (!whole && fd->shape != HISTD_FS_SCALAR))
      continue;
    if (group != NULL && (fd->group == NULL || strcmp(group, fd->group) != 0)) {
      close_object(&o);
      group = NULL;
    }
    if (fd->group != NULL && group == NULL) {
      key(&o, fd->group);
      open_object(&o);
      group = fd->group;
    }
    key(&o, fd->name);
    err = field(&o, fd, res);
  }
  if (group != NULL)
    close_object(&o);
  close_object(&o);
  uselocale(old);
  freelocale(loc);
  return err != 0 ? err : ferror(f) ? HISTD_EIO : 0;
}

int histd_write_schema(FILE *f) {
  static const char *const types[] = {"u64", "i64", "f64", "str", "bool"};
  static const char *const shapes[] = {
      [HISTD_FS_SCALAR] = "scalar",
      [HISTD_FS_BINS] = "bins",
      [HISTD_FS_EDGES] = "edges",
      [HISTD_FS_EDGES2] = "edges2",
      [HISTD_FS_FRAMES] = "frames",
      [HISTD_FS_FRAME_BINS] = "frames x bins",
      [HISTD_FS_BLOCK_BINS] = "blocks x bins",
      [HISTD_FS_PARTIALS] = "partials",
      [HISTD_FS_PARTIAL_BINS] = "partials x bins",
      [HISTD_FS_REGIONS] = "regions",
      [HISTD_FS_REGION_BINS] = "regions x bins",
      [HISTD_FS_POINTS] = "points",
      [HISTD_FS_FRAME_POINTS] = "frames x points",
      [HISTD_FS_POINT_BINS] = "points x bins",
      [HISTD_FS_PAIRS] = "pairs"};
  _Static_assert(sizeof shapes / sizeof shapes[0] == HISTD_FS_PAIRS + 1,
                 "a name for every shape of histd/schema.h");
  static const char *const outs[] = {"json", "csv", "text", "npz", "store"};
  out o = {f, (locale_t)0, false, 0, true};
  fputs("{\"fields\":[", f);
  for (size_t i = 0; i < histd_schema_count(); i++) {
    const histd_field *fd = histd_schema_at(i);
    char column[64], npz[80];
    histd__field_column(fd, column, sizeof column);
    if (fd->group != NULL)
      snprintf(npz, sizeof npz, "%s.%s", fd->group, fd->name);
    else
      snprintf(npz, sizeof npz, "%s", fd->name);
    fputs(i ? ",{" : "{", f);
    o.first = true;
    key(&o, "name");
    str_text(&o, fd->name);
    key(&o, "group");
    if (fd->group != NULL)
      str_text(&o, fd->group);
    else
      fputs("null", f);
    key(&o, "column");
    str_text(&o, column);
    key(&o, "npz");
    str_text(&o, (fd->outputs & HISTD_OUT_NPZ) ? npz : "");
    key(&o, "type");
    str_text(&o, types[fd->type]);
    key(&o, "shape");
    str_text(&o, shapes[fd->shape]);
    key(&o, "unit");
    str_text(&o, fd->unit);
    key(&o, "outputs");
    fputc('[', f);
    for (unsigned k = 0, n = 0; k < 5; k++)
      if (fd->outputs & (1u << k))
        fprintf(f, n++ ? ",\"%s\"" : "\"%s\"", outs[k]);
    fputc(']', f);
    key(&o, "help");
    str_text(&o, fd->help);
    fputc('}', f);
  }
  fputs("]}", f);
  return ferror(f) ? HISTD_EIO : 0;
}
