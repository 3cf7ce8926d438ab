/*
 * atoms.c -- what a dataset's file said of its atoms, summed up once at
 * upload for GET /v1/datasets/{id}, so that a dashboard can offer the
 * selections without reading the points: the atoms a frame, the arrays the
 * file carried, the count of each element, atom name, residue name and
 * type (the first 32 distinct values of each, then "...": a count of the
 * rest), the number of molecules, and the last frame's box beside the
 * first's. The text is JSON, kept in the datasets table.
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "store.h"

#define DISTINCT_MAX 32

typedef struct tally {
  char key[DISTINCT_MAX][24];
  double count[DISTINCT_MAX];
  size_t used;
  double rest;
} tally;

static void tally_add(tally *t, const char *key) {
  for (size_t i = 0; i < t->used; i++)
    if (strcmp(t->key[i], key) == 0) {
      t->count[i]++;
      return;
    }
  if (t->used == DISTINCT_MAX) {
    t->rest++;
    return;
  }
  snprintf(t->key[t->used], sizeof t->key[0], "%s", key);
  t->count[t->used++] = 1;
}

static void tally_to(cJSON *o, const char *name, const tally *t) {
  cJSON *m = cJSON_AddObjectToObject(o, name);
  for (size_t i = 0; i < t->used; i++)
    cJSON_AddNumberToObject(m, t->key[i], t->count[i]);
  if (t->rest > 0)
    cJSON_AddNumberToObject(m, "...", t->rest);
}

/* The string slots of one array, or the whole numbers of another. */
static void tally_array(cJSON *o, const char *name, const char *strs, const int64_t *ints,
                        size_t atoms) {
  tally *t = calloc(1, sizeof *t);
  if (t == NULL)
    return;
  char buf[24];
  for (size_t i = 0; i < atoms; i++) {
    if (strs != NULL)
      snprintf(buf, sizeof buf, "%.*s", HISTD_ATOM_STR, strs + i * HISTD_ATOM_STR);
    else
      snprintf(buf, sizeof buf, "%lld", (long long)ints[i]);
    tally_add(t, buf);
  }
  tally_to(o, name, t);
  free(t);
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

void dataset_atoms_summary(const histd_dataset *ds, char *out, size_t len) {
  out[0] = '\0';
  const size_t frames = histd_dataset_frames(ds);
  const histd_topology *t = ds->top;
  if (t == NULL && frames <= 1)
    return;
  cJSON *o = cJSON_CreateObject();
  if (o == NULL)
    return;
  if (frames > 1) {
    const histd_box *b = &ds->frame[frames - 1].box;
    if (b->kind == HISTD_BOX_NONE)
      cJSON_AddNullToObject(o, "box_last");
    else {
      const double v[6] = {b->ax, b->by, b->cz, b->bx, b->cx, b->cy};
      cJSON_AddItemToObject(o, "box_last",
                            cJSON_CreateDoubleArray(v, b->kind == HISTD_BOX_TRICLINIC ? 6 : 3));
    }
  }
  if (t != NULL) {
    cJSON_AddNumberToObject(o, "per_frame", (double)t->atoms);
    if (t->element)
      tally_array(o, "elements", t->element, NULL, t->atoms);
    if (t->name)
      tally_array(o, "names", t->name, NULL, t->atoms);
    if (t->resname)
      tally_array(o, "resnames", t->resname, NULL, t->atoms);
    if (t->type)
      tally_array(o, "types", NULL, t->type, t->atoms);
    int64_t *mols = t->mol ? malloc((t->atoms ? t->atoms : 1) * sizeof *mols) : NULL;
    if (mols != NULL) {
      memcpy(mols, t->mol, t->atoms * sizeof *mols);
      qsort(mols, t->atoms, sizeof *mols, cmp_i64);
      size_t distinct = 0;
      for (size_t i = 0; i < t->atoms; i++)
        distinct += i == 0 || mols[i] != mols[i - 1];
      cJSON_AddNumberToObject(o, "molecules", (double)distinct);
      free(mols);
    }
  }
  char *text = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  if (text != NULL && strlen(text) < len) /* else nothing: a summary cut short is not JSON */
    memcpy(out, text, strlen(text) + 1);
  free(text);
}
