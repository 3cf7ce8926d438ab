/*
 * collide.c -- pair counts within radius 0: collisions, in O(n).
 *
 * Two points collide when their three coordinates are exactly equal (as
 * numbers: -0 equals +0). In a periodic box each point is first reduced by
 * the box's minimum-image rule applied to its own coordinates
 * (histd_min_image on (x, y, z)), so x and x + Lx collide when both reduce
 * to the same number.
 *
 * After the seed's "sequential linear" idea, made general: points are
 * hashed on their coordinates' bits into an open-addressing table; each
 * slot keeps its key, its count and the chain of its points. Self pairs
 * are sum c (c - 1) / 2 over the slots; cross pairs hash B and look every
 * point of A up. With weights, the pairs of each group are visited (a
 * group of g equal points has g(g-1)/2 pairs; the counts stay O(n)).
 */
#include <stdlib.h>
#include <string.h>

#include "engine.h"

typedef struct slot {
  double key[3];
  uint64_t count;
  size_t head; /* first point of the chain, SIZE_MAX: empty slot */
} slot;

typedef struct table {
  slot *slots;
  size_t *next; /* chain links, one per point of the hashed set */
  size_t mask;
} table;

static void point_key(const histd_metric *m, const histd_dataset *ds, size_t i, double k[3]) {
  double x = ds->x[i], y = ds->y[i], z = ds->z[i];
  histd_min_image(m, &x, &y, &z);
  k[0] = x + 0.0; /* -0 + 0 = +0: equal numbers, equal bits */
  k[1] = y + 0.0;
  k[2] = z + 0.0;
}

static size_t hash_key(const double k[3]) {
  uint64_t h = 0x9e3779b97f4a7c15u, b;
  for (int i = 0; i < 3; i++) {
    memcpy(&b, &k[i], sizeof b);
    h ^= b + 0x9e3779b97f4a7c15u + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdu;
    h ^= h >> 33;
  }
  return (size_t)h;
}

static slot *find(table *t, const double k[3], bool insert) {
  for (size_t s = hash_key(k) & t->mask;; s = (s + 1) & t->mask) {
    slot *e = &t->slots[s];
    if (e->head == SIZE_MAX)
      return insert ? e : NULL;
    if (memcmp(e->key, k, sizeof e->key) == 0)
      return e;
  }
}

static int table_build(table *t, const histd_metric *m, const histd_dataset *ds, char *msg,
                       size_t msglen) {
  size_t cap = 16;
  while (cap < 2 * ds->n)
    cap *= 2;
  t->mask = cap - 1;
  t->slots = malloc(cap * sizeof *t->slots);
  t->next = malloc((ds->n ? ds->n : 1) * sizeof *t->next);
  if (t->slots == NULL || t->next == NULL) {
    free(t->slots);
    free(t->next);
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for a table of %zu points",
                      ds->n);
  }
  for (size_t s = 0; s < cap; s++)
    t->slots[s].head = SIZE_MAX;
  for (size_t i = 0; i < ds->n; i++) {
    double k[3];
    point_key(m, ds, i, k);
    slot *e = find(t, k, true);
    if (e->head == SIZE_MAX) {
      memcpy(e->key, k, sizeof e->key);
      e->count = 0;
      t->next[i] = SIZE_MAX;
    } else {
      t->next[i] = e->head;
    }
    e->head = i;
    e->count++;
  }
  return 0;
}

int histd__collisions(const histd_problem *p, uint64_t *pairs, double *weighted, char *msg,
                      size_t msglen) {
  const histd_metric m = histd__metric(&p->box);
  const histd_dataset *hashed = p->b != NULL ? p->b : p->a;
  table t;
  int rc = table_build(&t, &m, hashed, msg, msglen);
  if (rc != 0)
    return rc;
  uint64_t total = 0;
  double sum = 0, err = 0;
  const bool w = p->weighted;
  if (p->b == NULL) {
    for (size_t s = 0; s <= t.mask; s++) {
      const slot *e = &t.slots[s];
      if (e->head == SIZE_MAX)
        continue;
      total += e->count * (e->count - 1) / 2;
      for (size_t i = e->head; w && i != SIZE_MAX; i = t.next[i])
        for (size_t j = t.next[i]; j != SIZE_MAX; j = t.next[j])
          histd_ev_neumaier(&sum, &err, hashed->w[i] * hashed->w[j]);
    }
  } else {
    for (size_t i = 0; i < p->a->n; i++) {
      double k[3];
      point_key(&m, p->a, i, k);
      const slot *e = find(&t, k, false);
      if (e == NULL)
        continue;
      total += e->count;
      for (size_t j = e->head; w && j != SIZE_MAX; j = t.next[j])
        histd_ev_neumaier(&sum, &err, p->a->w[i] * hashed->w[j]);
    }
  }
  free(t.slots);
  free(t.next);
  *pairs = total;
  if (weighted != NULL)
    *weighted = sum + err;
  return 0;
}
