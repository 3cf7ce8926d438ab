/*
 * molfile.c -- what the GRO and PDB parsers share (molfile.h): whole
 * numbers and names out of fixed columns, elements guessed from atom
 * names with a small table, and frame 1's atoms, kept as the topology and
 * held against every later frame's, atom by atom, as they are read.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "molfile.h"

bool histd__whole(const char *s, const char *e, int64_t *out) {
  bool neg = false;
  if (s < e && (*s == '-' || *s == '+'))
    neg = *s++ == '-';
  if (s == e || e - s > 18)
    return false;
  int64_t v = 0;
  for (; s < e; s++) {
    if (*s < '0' || *s > '9')
      return false;
    v = v * 10 + (*s - '0');
  }
  *out = neg ? -v : v;
  return true;
}

void histd__atom_str(char dst[HISTD_ATOM_STR], const char *s, const char *e) {
  size_t n = (size_t)(e - s);
  if (n > HISTD_ATOM_STR - 1)
    n = HISTD_ATOM_STR - 1;
  memset(dst, 0, HISTD_ATOM_STR);
  memcpy(dst, s, n);
}

static char upper(char c) { return c >= 'a' && c <= 'z' ? (char)(c - 'a' + 'A') : c; }
static bool letter(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }

/* The table's symbol for the letters c1 (c2: 0 for one letter), or NULL. */
static const char *symbol(char c1, char c2) {
  static const char *const one[] = {"H", "C", "N", "O", "P", "S", "F", "I", "K"};
  static const char *const two[] = {"Cl", "Br", "Na", "Mg", "Ca", "Fe", "Zn", "Cu", "Li"};
  const char *const *table = c2 ? two : one;
  const size_t count = c2 ? sizeof two / sizeof two[0] : sizeof one / sizeof one[0];
  for (size_t k = 0; k < count; k++)
    if (upper(table[k][0]) == upper(c1) && (c2 == 0 || upper(table[k][1]) == upper(c2)))
      return table[k];
  return NULL;
}

/* CHARMM's ions, named as their residue. */
static const char *charmm_ion(const char *s, size_t n, const char *resname) {
  static const char *const ions[][2] = {{"SOD", "Na"}, {"POT", "K"}, {"CLA", "Cl"},
                                        {"CAL", "Ca"}};
  if (n != 3 || strlen(resname) != 3 || memcmp(s, resname, 3) != 0)
    return NULL;
  for (size_t k = 0; k < sizeof ions / sizeof ions[0]; k++)
    if (memcmp(s, ions[k][0], 3) == 0)
      return ions[k][1];
  return NULL;
}

void histd__guess_element(const char *name, size_t len, const char *resname, bool pdb,
                          char out[HISTD_ATOM_STR]) {
  memset(out, 0, HISTD_ATOM_STR);
  const char *s = name, *e = name + len;
  const bool col13 = pdb && len > 0 && letter(name[0]); /* the name starts in column 13 */
  while (s < e && (histd__is_blank(*s) || (*s >= '0' && *s <= '9')))
    s++;
  while (e > s && histd__is_blank(e[-1]))
    e--;
  const char *el = charmm_ion(s, (size_t)(e - s), resname);
  size_t letters = 0;
  while (s + letters < e && letter(s[letters]))
    letters++;
  if (el == NULL && letters >= 2 && (el = symbol(s[0], s[1])) != NULL) {
    const bool own = (size_t)(e - s) == strlen(resname) && memcmp(s, resname, (size_t)(e - s)) == 0;
    const bool two = pdb ? col13 : letters == 2 && (strcmp(el, "Ca") != 0 || own);
    if (!two)
      el = NULL;
  }
  if (el == NULL && letters >= 1)
    el = symbol(s[0], 0);
  if (el != NULL)
    memcpy(out, el, strlen(el));
}

bool histd__element_column(const char *s, const char *e, char out[HISTD_ATOM_STR]) {
  const size_t n = (size_t)(e - s);
  if (n < 1 || n > 2 || !letter(s[0]) || (n == 2 && !letter(s[1])))
    return false;
  memset(out, 0, HISTD_ATOM_STR);
  out[0] = upper(s[0]);
  if (n == 2)
    out[1] = (char)(s[1] >= 'A' && s[1] <= 'Z' ? s[1] - 'A' + 'a' : s[1]);
  return true;
}

static bool same_atom(const histd__atom *a, const histd__atom *b) {
  return strcmp(a->name, b->name) == 0 && strcmp(a->resname, b->resname) == 0 &&
         strcmp(a->element, b->element) == 0 && a->resid == b->resid && a->mol == b->mol &&
         a->chain == b->chain;
}

int histd__atoms_add(histd__atoms *t, histd__atom *a, size_t line, char *msg, size_t msglen) {
  const histd__atom *p = &t->prev;
  if (t->i == 0 || t->brk || a->resid != p->resid || a->chain != p->chain ||
      strcmp(a->resname, p->resname) != 0)
    t->mol++;
  a->mol = t->mol;
  t->prev = *a;
  t->brk = false;
  const size_t i = t->i++;
  if (t->frame == 1) {
    if (t->n == t->cap) {
      size_t cap = t->cap ? 2 * t->cap : 64;
      histd__atom *f = cap > SIZE_MAX / sizeof *f ? NULL : realloc(t->first, cap * sizeof *f);
      if (f == NULL)
        return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %zu atoms", cap);
      t->first = f;
      t->cap = cap;
    }
    t->first[t->n++] = *a;
    return 0;
  }
  if (i >= t->n)
    return histd_fail(msg, msglen, HISTD_EPARSE,
                      "line %zu: frame %zu has more atoms than frame 1's %zu: every frame must "
                      "list the same atoms", line, t->frame, t->n);
  const histd__atom *f = &t->first[i];
  if (!same_atom(a, f))
    return histd_fail(msg, msglen, HISTD_EPARSE,
                      "line %zu: atom %zu of frame %zu (%s of %s %lld) is not frame 1's (%s of "
                      "%s %lld): every frame must list the same atoms (names, residues, "
                      "chains, elements, molecules) in the same order",
                      line, i + 1, t->frame, a->name, a->resname, (long long)a->resid, f->name,
                      f->resname, (long long)f->resid);
  return 0;
}

int histd__mol_open(histd__mol *m, const char *buf, size_t len, const char *unit, char *msg,
                    size_t msglen) {
  memset(m, 0, sizeof *m);
  m->unit = unit;
  m->l = (histd__lines){buf + histd__skip_bom(buf, len), buf + len, 0};
  m->msg = msg;
  m->msglen = msglen;
  m->atoms.frame = 1;
  int rc = histd__c_locale(&m->loc, msg, msglen);
  if (rc == 0 && (rc = histd__ds_reserve(&m->ds, 0, msg, msglen)) != 0)
    freelocale(m->loc);
  return rc;
}

int histd__mol_point(histd__mol *m, const double v[3]) {
  int rc = histd__ds_grow(&m->ds, &m->cap, m->used + 1, NULL, m->msg, m->msglen);
  if (rc != 0)
    return rc;
  m->ds.x[m->used] = v[0];
  m->ds.x[m->cap + m->used] = v[1];
  m->ds.x[2 * m->cap + m->used] = v[2];
  m->used++;
  return 0;
}

int histd__mol_frame(histd__mol *m, size_t line, const histd_box *box) {
  histd__atoms *t = &m->atoms;
  if (t->frame > 1 && t->i != t->n)
    return histd_fail(m->msg, m->msglen, HISTD_EPARSE,
                      "line %zu: frame %zu has %zu atoms, frame 1 has %zu: every frame must "
                      "list the same atoms", line, t->frame, t->i, t->n);
  int rc = histd__frames_add(&m->frames, t->i, box, m->msg, m->msglen);
  t->frame++;
  t->i = 0;
  t->mol = 0;
  t->brk = false;
  return rc;
}

/* Frame 1's atoms as ds's topology. */
static int attach(const histd__atoms *t, histd_dataset *ds, char *msg, size_t msglen) {
  const unsigned fields = HISTD_TOP_NAME | HISTD_TOP_ELEMENT | HISTD_TOP_RESNAME |
                          HISTD_TOP_RESID | HISTD_TOP_MOL;
  int rc = histd_topology_alloc(ds, t->n, fields, msg, msglen);
  for (size_t i = 0; rc == 0 && i < t->n; i++) {
    const histd__atom *a = &t->first[i];
    memcpy(ds->top->name + i * HISTD_ATOM_STR, a->name, HISTD_ATOM_STR);
    memcpy(ds->top->element + i * HISTD_ATOM_STR, a->element, HISTD_ATOM_STR);
    memcpy(ds->top->resname + i * HISTD_ATOM_STR, a->resname, HISTD_ATOM_STR);
    ds->top->resid[i] = a->resid;
    ds->top->mol[i] = a->mol;
  }
  return rc;
}

int histd__mol_close(histd__mol *m, int rc, histd_dataset *out) {
  if (rc == 0)
    rc = histd__ds_complete_all(&m->ds, m->cap, m->used, NULL, m->frames.count,
                                m->frames.counts, m->frames.boxes, m->msg, m->msglen);
  if (rc == 0 && (rc = attach(&m->atoms, &m->ds, m->msg, m->msglen)) == 0) {
    snprintf(m->ds.unit, sizeof m->ds.unit, "%s", m->unit);
    *out = m->ds;
  }
  if (rc != 0)
    histd_dataset_free(&m->ds);
  freelocale(m->loc);
  histd__frames_free(&m->frames);
  free(m->atoms.first);
  memset(m, 0, sizeof *m);
  return rc;
}
