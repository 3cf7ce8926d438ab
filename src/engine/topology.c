/*
 * topology.c -- what a file says of its atoms, and selections over it.
 *
 * A topology describes the atoms of one frame; every frame of a dataset
 * lists the same atoms in the same order (the readers make it so: a LAMMPS
 * dump is sorted by atom id). A selection is a predicate over those atoms,
 * KIND:LIST, and selecting copies the chosen atoms of every frame into a
 * new dataset, so the engine never learns that selections exist: A x B
 * between two selections of one dataset is A x B of two datasets.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "engine.h"

void histd_topology_free(histd_topology *top) {
  if (top == NULL)
    return;
  free(top->name);
  free(top->element);
  free(top->resname);
  free(top->resid);
  free(top->type);
  free(top->mol);
  free(top);
}

unsigned histd_topology_fields(const histd_topology *top) {
  if (top == NULL)
    return 0;
  return (top->name ? HISTD_TOP_NAME : 0u) | (top->element ? HISTD_TOP_ELEMENT : 0u) |
         (top->resname ? HISTD_TOP_RESNAME : 0u) | (top->resid ? HISTD_TOP_RESID : 0u) |
         (top->type ? HISTD_TOP_TYPE : 0u) | (top->mol ? HISTD_TOP_MOL : 0u);
}

int histd_topology_alloc(histd_dataset *ds, size_t atoms, unsigned fields, char *msg,
                         size_t msglen) {
  histd_topology *t = calloc(1, sizeof *t);
  if (t == NULL)
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for a topology");
  t->atoms = atoms;
  const size_t n = atoms ? atoms : 1, s = n * HISTD_ATOM_STR;
  bool ok = true;
#define TOP_ARRAY(bit, field, bytes)                                                      \
  if (fields & (bit))                                                                    \
    ok = ok && (t->field = calloc(1, (bytes))) != NULL;
  TOP_ARRAY(HISTD_TOP_NAME, name, s)
  TOP_ARRAY(HISTD_TOP_ELEMENT, element, s)
  TOP_ARRAY(HISTD_TOP_RESNAME, resname, s)
  TOP_ARRAY(HISTD_TOP_RESID, resid, n * sizeof(int64_t))
  TOP_ARRAY(HISTD_TOP_TYPE, type, n * sizeof(int64_t))
  TOP_ARRAY(HISTD_TOP_MOL, mol, n * sizeof(int64_t))
#undef TOP_ARRAY
  if (!ok) {
    histd_topology_free(t);
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for a topology of %zu atoms",
                      atoms);
  }
  histd_topology_free(ds->top);
  ds->top = t;
  return 0;
}

/* ---- selections --------------------------------------------------------- */

typedef enum sel_kind { SEL_ALL, SEL_ELEMENT, SEL_NAME, SEL_RESNAME, SEL_TYPE, SEL_RESID,
                        SEL_MOL, SEL_INDEX } sel_kind;

static const struct {
  const char *word;
  sel_kind kind;
  unsigned field; /* the topology array it needs (0: none) */
} sel_kinds[] = {
    {"element", SEL_ELEMENT, HISTD_TOP_ELEMENT}, {"name", SEL_NAME, HISTD_TOP_NAME},
    {"resname", SEL_RESNAME, HISTD_TOP_RESNAME}, {"type", SEL_TYPE, HISTD_TOP_TYPE},
    {"resid", SEL_RESID, HISTD_TOP_RESID},       {"mol", SEL_MOL, HISTD_TOP_MOL},
    {"index", SEL_INDEX, 0},
};

/* One item of a LIST: a string (element, name, resname) or a range. */
typedef struct sel_item {
  char str[HISTD_ATOM_STR];
  int64_t lo, hi;
} sel_item;

typedef struct selection {
  sel_kind kind;
  sel_item *items;
  size_t count;
} selection;

static bool is_string_kind(sel_kind k) {
  return k == SEL_ELEMENT || k == SEL_NAME || k == SEL_RESNAME;
}

/* A whole number (at most 18 digits, optional minus) at *p; advances. */
static bool read_int(const char **p, const char *end, int64_t *out) {
  const char *s = *p;
  bool neg = s < end && *s == '-';
  if (neg)
    s++;
  int64_t v = 0;
  const char *digits = s;
  while (s < end && isdigit((unsigned char)*s) && s - digits < 18)
    v = v * 10 + (*s++ - '0');
  if (s == digits || (s < end && isdigit((unsigned char)*s)))
    return false;
  *out = neg ? -v : v;
  *p = s;
  return true;
}

static int parse_item(selection *sel, const char *s, const char *e, const char *whole,
                      char *msg, size_t msglen) {
  sel_item *it = &sel->items[sel->count++];
  memset(it, 0, sizeof *it);
  if (e == s)
    return histd_fail(msg, msglen, HISTD_EINVAL, "selection \"%s\" has an empty item", whole);
  if (is_string_kind(sel->kind)) {
    if (e - s >= HISTD_ATOM_STR)
      return histd_fail(msg, msglen, HISTD_EINVAL,
                        "selection \"%s\": \"%.*s\" is longer than %d characters", whole,
                        (int)(e - s), s, HISTD_ATOM_STR - 1);
    memcpy(it->str, s, (size_t)(e - s));
    return 0;
  }
  const char *p = s;
  bool ok = read_int(&p, e, &it->lo);
  it->hi = it->lo;
  if (ok && p < e && *p == '-') {
    p++;
    ok = read_int(&p, e, &it->hi);
  }
  if (!ok || p != e)
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "selection \"%s\": \"%.*s\" is not a whole number or a range a-b", whole,
                      (int)(e - s), s);
  if (it->hi < it->lo)
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "selection \"%s\": the range %" PRId64 "-%" PRId64 " is empty", whole,
                      it->lo, it->hi);
  return 0;
}

static int parse_selection(const char *text, unsigned fields, selection *sel, char *msg,
                           size_t msglen) {
  memset(sel, 0, sizeof *sel);
  if (text == NULL || strcasecmp(text, "all") == 0)
    return 0;
  const char *colon = strchr(text, ':');
  size_t k = 0, nk = sizeof sel_kinds / sizeof sel_kinds[0];
  while (colon != NULL && k < nk &&
         !(strlen(sel_kinds[k].word) == (size_t)(colon - text) &&
           strncasecmp(sel_kinds[k].word, text, (size_t)(colon - text)) == 0))
    k++;
  if (colon == NULL || k == nk)
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "selection \"%s\" is not all or KIND:LIST with KIND one of element, "
                      "name, resname, type, resid, mol, index (e.g. element:O, index:0-99)",
                      text);
  sel->kind = sel_kinds[k].kind;
  if (sel_kinds[k].field && !(fields & sel_kinds[k].field))
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "selection \"%s\": the dataset's file gives its atoms no %s (select by "
                      "index, or upload a format that carries %s)",
                      text, sel_kinds[k].word, sel_kinds[k].word);
  size_t items = 1;
  for (const char *c = colon + 1; *c; c++)
    items += *c == ',';
  if ((sel->items = calloc(items, sizeof *sel->items)) == NULL)
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for a selection");
  for (const char *s = colon + 1;;) {
    const char *e = strchr(s, ',');
    int rc = parse_item(sel, s, e ? e : s + strlen(s), text, msg, msglen);
    if (rc != 0)
      return rc;
    if (e == NULL)
      return 0;
    s = e + 1;
  }
}

static bool in_ranges(const selection *sel, int64_t v) {
  for (size_t i = 0; i < sel->count; i++)
    if (v >= sel->items[i].lo && v <= sel->items[i].hi)
      return true;
  return false;
}

static bool matches(const selection *sel, const histd_topology *top, size_t i) {
  const char *field = NULL;
  switch (sel->kind) {
  case SEL_ALL:
    return true;
  case SEL_INDEX:
    return in_ranges(sel, (int64_t)i);
  case SEL_TYPE:
    return in_ranges(sel, top->type[i]);
  case SEL_RESID:
    return in_ranges(sel, top->resid[i]);
  case SEL_MOL:
    return in_ranges(sel, top->mol[i]);
  case SEL_ELEMENT:
    field = top->element;
    break;
  case SEL_NAME:
    field = top->name;
    break;
  case SEL_RESNAME:
    field = top->resname;
    break;
  }
  const char *v = field + i * HISTD_ATOM_STR;
  for (size_t k = 0; k < sel->count; k++)
    if (sel->kind == SEL_ELEMENT ? strncasecmp(v, sel->items[k].str, HISTD_ATOM_STR) == 0
                                 : strncmp(v, sel->items[k].str, HISTD_ATOM_STR) == 0)
      return true;
  return false;
}

int histd_selection_check(const char *text, unsigned fields, char *msg, size_t msglen) {
  selection sel;
  int rc = parse_selection(text, fields, &sel, msg, msglen);
  free(sel.items);
  return rc;
}

/* The atoms of a frame: the topology's, all frames alike. */
static int frame_atoms(const histd_dataset *ds, size_t *atoms, char *msg, size_t msglen) {
  const size_t frames = histd_dataset_frames(ds);
  *atoms = ds->top != NULL ? ds->top->atoms : frames == 1 ? ds->n : ds->frame[0].n;
  for (size_t f = 0; f < frames; f++) {
    size_t n = frames == 1 ? ds->n : ds->frame[f].n;
    if (n != *atoms)
      return histd_fail(msg, msglen, HISTD_EINVAL,
                        "frame %zu has %zu points and the %s %zu: a selection needs every frame "
                        "to hold the same atoms", f + 1, n,
                        ds->top != NULL ? "file's atoms are" : "first frame", *atoms);
  }
  return 0;
}

/* Copies the topology entries of the chosen atoms (pick; NULL: all m) into out. */
static int select_topology(const histd_topology *top, const size_t *pick, size_t m,
                           histd_dataset *out, char *msg, size_t msglen) {
  int rc = histd_topology_alloc(out, m, histd_topology_fields(top), msg, msglen);
  for (size_t i = 0; rc == 0 && i < m; i++) {
    const size_t a = pick != NULL ? pick[i] : i;
#define COPY_STR(f)                                                                       \
  if (top->f)                                                                            \
    memcpy(out->top->f + i * HISTD_ATOM_STR, top->f + a * HISTD_ATOM_STR, HISTD_ATOM_STR);
#define COPY_INT(f)                                                                       \
  if (top->f)                                                                            \
    out->top->f[i] = top->f[a];
    COPY_STR(name) COPY_STR(element) COPY_STR(resname)
    COPY_INT(resid) COPY_INT(type) COPY_INT(mol)
#undef COPY_STR
#undef COPY_INT
  }
  return rc;
}

int histd_dataset_adopt_topology(histd_dataset *ds, const histd_dataset *from, char *msg,
                                 size_t msglen) {
  if (from->top == NULL)
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "the topology's file names no atoms (give a GRO, PDB, XYZ or a LAMMPS "
                      "dump with type or element columns)");
  const size_t atoms = from->top->atoms, frames = histd_dataset_frames(ds);
  for (size_t f = 0; f < frames; f++) {
    const size_t n = frames == 1 ? ds->n : ds->frame[f].n;
    if (n != atoms)
      return histd_fail(msg, msglen, HISTD_EINVAL,
                        "frame %zu of the trajectory holds %zu atoms and the topology %zu: "
                        "they must describe the same system", f + 1, n, atoms);
  }
  return select_topology(from->top, NULL, atoms, ds, msg, msglen);
}

/* The frames a slice keeps: first, how many, every step. */
static int slice_frames(const histd_dataset *ds, const histd_slice *sl, size_t *first,
                        size_t *count, size_t *step, char *msg, size_t msglen) {
  const size_t frames = histd_dataset_frames(ds);
  *first = 0;
  *step = 1;
  *count = frames;
  if (sl == NULL)
    return 0;
  size_t stop = sl->stop == 0 || sl->stop > frames ? frames : sl->stop;
  if (sl->step == 0)
    return histd_fail(msg, msglen, HISTD_EINVAL, "frames: the step must be at least 1");
  if (sl->start >= stop)
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "frames %zu:%zu keep no frame of the %zu the dataset has (frames count "
                      "from 0)", sl->start, sl->stop, frames);
  *first = sl->start;
  *step = sl->step;
  *count = (stop - sl->start + sl->step - 1) / sl->step;
  return 0;
}

/* The atoms pick[0..m) (NULL: every frame whole) of frames first, first +
 * step, ... (`frames` of them) of ds, as a new dataset into out: points,
 * weights, frames and boxes, topology entries, and each atom's origin (its
 * index in a frame of the dataset ds was selected from, through ds's own
 * origins). `atoms` is a frame's atoms (when pick is given, or ds has
 * origins). Frees what it made when it fails. */
static int copy_picked(const histd_dataset *ds, const size_t *pick, size_t m, size_t atoms,
                       size_t first, size_t frames, size_t step, histd_dataset *out, char *msg,
                       size_t msglen) {
  const bool all = pick == NULL;
  size_t total = 0;
  for (size_t k = 0; k < frames; k++) {
    histd_dataset view;
    histd_dataset_frame(ds, first + k * step, &view);
    total += all ? view.n : m;
  }
  int rc = histd_dataset_alloc(out, total, msg, msglen);
  if (rc == 0 && ds->w != NULL)
    rc = histd_dataset_alloc_weights(out, msg, msglen);
  /* a sky catalogue's columns and regions go with their points */
  if (rc == 0 && ds->sky != NULL &&
      (out->sky = malloc((total ? total : 1) * 3 * sizeof *out->sky)) == NULL)
    rc = histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %zu points' sky columns", total);
  if (rc == 0 && ds->region != NULL &&
      (out->region = malloc((total ? total : 1) * sizeof *out->region)) == NULL)
    rc = histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %zu points' regions", total);
  out->omega_m = ds->omega_m;
  out->regions = ds->regions;
  size_t *counts = NULL;
  histd_box *boxes = NULL;
  if (rc == 0 && ((counts = malloc((frames ? frames : 1) * sizeof *counts)) == NULL ||
                  (boxes = malloc((frames ? frames : 1) * sizeof *boxes)) == NULL))
    rc = histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %zu frames", frames);
  for (size_t k = 0, at = 0; rc == 0 && k < frames; k++) {
    histd_dataset view;
    histd_dataset_frame(ds, first + k * step, &view);
    const size_t n = all ? view.n : m;
    for (size_t i = 0; i < n; i++, at++) {
      const size_t src = all ? i : pick[i];
      out->x[at] = view.x[src];
      out->y[at] = view.y[src];
      out->z[at] = view.z[src];
      if (ds->w != NULL)
        out->w[at] = view.w[src];
      if (ds->sky != NULL)
        memcpy(out->sky + 3 * at, view.sky + 3 * src, 3 * sizeof *out->sky);
      if (ds->region != NULL)
        out->region[at] = view.region[src];
    }
    counts[k] = n;
    boxes[k] = view.box;
  }
  if (rc == 0)
    rc = histd_dataset_finish(out, msg, msglen);
  if (rc == 0)
    rc = histd_dataset_set_frames(out, frames, counts, boxes, msg, msglen);
  if (rc == 0)
    memcpy(out->unit, ds->unit, sizeof out->unit);
  if (rc == 0 && ds->top != NULL && (!all || atoms > 0))
    rc = select_topology(ds->top, pick, all ? atoms : m, out, msg, msglen);
  /* each chosen atom's index in the source's frame (through the source's
   * own origins, when it is a selection itself) */
  const size_t kept = all ? (ds->origin != NULL ? atoms : 0) : m;
  if (rc == 0 && kept > 0) {
    if ((out->origin = malloc(kept * sizeof *out->origin)) == NULL)
      rc = histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for a selection of %zu atoms",
                      kept);
    for (size_t i = 0; rc == 0 && i < kept; i++) {
      const size_t a = all ? i : pick[i];
      out->origin[i] = ds->origin != NULL ? ds->origin[a] : a;
    }
  }
  free(counts);
  free(boxes);
  if (rc != 0)
    histd_dataset_free(out);
  return rc;
}

int histd_dataset_select(const histd_dataset *ds, const char *text, const histd_slice *sl,
                         histd_dataset *out, char *msg, size_t msglen) {
  memset(out, 0, sizeof *out);
  const bool all = text == NULL || text[0] == '\0' || strcasecmp(text, "all") == 0;
  size_t atoms = 0, first, frames, step;
  selection sel;
  memset(&sel, 0, sizeof sel);
  int rc = slice_frames(ds, sl, &first, &frames, &step, msg, msglen);
  /* a selection of atoms needs every frame to hold the same ones; all of
   * them keeps each frame whole, whatever its size (and its topology and
   * origins need the same atoms in every frame) */
  if (rc == 0 && !all && (rc = frame_atoms(ds, &atoms, msg, msglen)) == 0)
    rc = parse_selection(text, histd_topology_fields(ds->top), &sel, msg, msglen);
  if (rc == 0 && all && (ds->top != NULL || ds->origin != NULL) &&
      frame_atoms(ds, &atoms, NULL, 0) != 0) {
    atoms = 0; /* frames of different sizes: no topology or origins to keep */
  }
  size_t *pick = NULL, m = 0;
  if (rc == 0 && !all && (pick = malloc((atoms ? atoms : 1) * sizeof *pick)) == NULL)
    rc = histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for a selection of %zu atoms",
                    atoms);
  for (size_t i = 0; rc == 0 && !all && i < atoms; i++)
    if (matches(&sel, ds->top, i))
      pick[m++] = i;
  if (rc == 0 && !all && m == 0)
    rc = histd_fail(msg, msglen, HISTD_EINVAL, "selection \"%s\" matches none of the %zu atoms",
                    text, atoms);
  if (rc == 0)
    rc = copy_picked(ds, pick, m, atoms, first, frames, step, out, msg, msglen);
  free(pick);
  free(sel.items);
  return rc;
}

int histd_dataset_pick(const histd_dataset *ds, const size_t *pick, size_t m,
                       histd_dataset *out, char *msg, size_t msglen) {
  memset(out, 0, sizeof *out);
  size_t atoms;
  int rc = frame_atoms(ds, &atoms, msg, msglen);
  for (size_t i = 0; rc == 0 && i < m; i++)
    if (pick[i] >= atoms)
      rc = histd_fail(msg, msglen, HISTD_EINVAL, "atom %zu is not among the %zu of a frame",
                      pick[i], atoms);
  if (rc == 0)
    rc = copy_picked(ds, pick, m, atoms, 0, histd_dataset_frames(ds), 1, out, msg, msglen);
  return rc;
}
