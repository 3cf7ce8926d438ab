/*
 * values.c -- a result's fields as the writers walk them: which fields an
 * output shows (the schema's flags and the result's own), their names as
 * columns, and each field's values in order, whatever holds them (the
 * result's arrays, a getter's arithmetic, a pair list's file).
 */
#include <stdio.h>
#include <stdlib.h>

#include "io_internal.h"

#define PAIR_BATCH 8192

bool histd__field_shown(const histd_field *f, const histd_result *r, unsigned out) {
  return (f->outputs & out) != 0 && f->present(r);
}

void histd__field_column(const histd_field *f, char *buf, size_t len) {
  if (f->column != NULL)
    snprintf(buf, len, "%s", f->column);
  else if (f->group != NULL)
    snprintf(buf, len, "%s.%s", f->group, f->name);
  else
    snprintf(buf, len, "%s", f->name);
}

void histd__values_open(histd__values *it, const histd_field *f, const histd_result *r) {
  *it = (histd__values){f, r, 0, histd_field_len(f, r, NULL, NULL), 0, NULL, 0, 0, 0};
  if (f->shape == HISTD_FS_PAIRS && it->n > 0 &&
      (it->batch = malloc(PAIR_BATCH * sizeof *it->batch)) == NULL)
    it->err = HISTD_ENOMEM;
}

bool histd__values_next(histd__values *it, histd_fvalue *v) {
  if (it->err != 0 || it->i >= it->n)
    return false;
  if (it->f->shape != HISTD_FS_PAIRS) {
    it->f->get(it->r, it->i++, &it->acc, v);
    return true;
  }
  if (it->i >= it->first + it->have) {
    int64_t got = histd_pairs_read(it->r, it->i, it->batch, PAIR_BATCH);
    if (got <= 0) {
      it->err = HISTD_EIO;
      return false;
    }
    it->first = it->i;
    it->have = (size_t)got;
  }
  it->f->get_pair(&it->batch[it->i - it->first], v);
  it->i++;
  return true;
}

void histd__values_close(histd__values *it) {
  free(it->batch);
  it->batch = NULL;
}

void histd__table_open(histd__table *c, const histd_result *r, unsigned out,
                         histd_fshape s1, histd_fshape s2) {
  c->n = 0;
  for (size_t i = 0; i < histd_schema_count() && c->n < HISTD__MAX_TABLE; i++) {
    const histd_field *fd = histd_schema_at(i);
    if ((fd->shape == s1 || fd->shape == s2) && histd__field_shown(fd, r, out)) {
      c->f[c->n] = fd;
      histd__values_open(&c->it[c->n++], fd, r);
    }
  }
}

int histd__table_close(histd__table *c) {
  int err = 0;
  for (size_t k = 0; k < c->n; k++) {
    if (c->it[k].err != 0)
      err = c->it[k].err;
    histd__values_close(&c->it[k]);
  }
  return err;
}

void histd__scalar_lines(FILE *f, const histd_result *r, unsigned out, const char *prefix,
                         const histd_field *skip, histd__put_value put, void *user) {
  for (size_t i = 0; i < histd_schema_count(); i++) {
    const histd_field *fd = histd_schema_at(i);
    if (fd == skip || fd->shape != HISTD_FS_SCALAR || !histd__field_shown(fd, r, out))
      continue;
    char name[64];
    histd_fvalue v;
    uint64_t acc = 0;
    histd__field_column(fd, name, sizeof name);
    fd->get(r, 0, &acc, &v);
    fprintf(f, "%s%s: ", prefix, name);
    put(user, fd->type, &v);
    fputc('\n', f);
  }
}
