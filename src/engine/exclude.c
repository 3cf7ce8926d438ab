/*
 * exclude.c -- leaving out the pairs within a molecule.
 *
 * MDAnalysis's exclusion_block and freud's issue 396 give the reason: in a
 * g(r) between the O and H of water, the bonded O-H pairs of each molecule
 * make a spike that says nothing about the liquid. A kernel counts every
 * pair; the worker then takes out the pairs whose atoms share a molecule
 * id, counted here by the contract's own arithmetic, so the difference is
 * exact, and it works with every kernel, CPU or GPU, unchanged. The pairs
 * are few (a molecule's atoms squared, per molecule), found once by
 * sorting each operand's atoms by molecule id: a frame's pairs are then
 * the runs of equal ids (self pairs) or the runs of one id in both (A x B,
 * where an atom in both A and B pairs with itself, as every (a, b) does).
 */
#include <stdlib.h>
#include <string.h>

#include "engine.h"

/* Indices 0..n-1 sorted by mol, equal ids in index order (a bottom-up merge
 * sort: stable, no shared state). NULL when out of memory. */
static size_t *sorted(const int64_t *mol, size_t n) {
  size_t *idx = malloc((n ? n : 1) * sizeof *idx), *tmp = malloc((n ? n : 1) * sizeof *tmp);
  if (idx == NULL || tmp == NULL) {
    free(idx);
    free(tmp);
    return NULL;
  }
  for (size_t i = 0; i < n; i++)
    idx[i] = i;
  for (size_t w = 1; w < n; w *= 2) {
    for (size_t lo = 0; lo < n; lo += 2 * w) {
      size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
      size_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi)
        tmp[k++] = mol[idx[j]] < mol[idx[i]] ? idx[j++] : idx[i++];
      while (i < mid)
        tmp[k++] = idx[i++];
      while (j < hi)
        tmp[k++] = idx[j++];
    }
    size_t *t = idx;
    idx = tmp;
    tmp = t;
  }
  free(tmp);
  return idx;
}

int histd__exclusions_init(histd__exclusions *x, const histd_problem *p, char *msg,
                           size_t msglen) {
  memset(x, 0, sizeof *x);
  x->mol_a = p->a->top->mol;
  x->n_a = p->a->top->atoms;
  x->a = sorted(x->mol_a, x->n_a);
  if (p->b != NULL) {
    x->mol_b = p->b->top->mol;
    x->n_b = p->b->top->atoms;
    x->b = sorted(x->mol_b, x->n_b);
  }
  if (x->a == NULL || (p->b != NULL && x->b == NULL)) {
    histd__exclusions_free(x);
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for the molecules' atoms");
  }
  return 0;
}

void histd__exclusions_free(histd__exclusions *x) {
  free(x->a);
  free(x->b);
  memset(x, 0, sizeof *x);
}

/* The end of the run of equal ids that starts at s. */
static size_t run_end(const size_t *idx, const int64_t *mol, size_t s, size_t n) {
  size_t e = s + 1;
  while (e < n && mol[idx[e]] == mol[idx[s]])
    e++;
  return e;
}

/* Whether pair (i of A, j of B; or i, j of A for self pairs) is shard sh's. */
static bool in_shard(const histd_shard *sh, bool self, size_t i, size_t j) {
  if (sh == NULL)
    return true;
  if (self && i > j) {
    size_t t = i;
    i = j;
    j = t;
  }
  return i >= sh->i0 && i < sh->i1 && j >= sh->j0 && j < sh->j1;
}

uint64_t histd__exclusions_count(const histd__exclusions *x, const histd_problem *pf,
                                 const histd_shard *sh, histd__sink *s) {
  const histd_metric m = histd__metric(&pf->box);
  const histd_ev_bin ev = histd__ev_bin(pf);
  double u; /* (unused: exclusions count pairs only) */
  memset(s->counts, 0, ((size_t)pf->bins.count + 2) * sizeof *s->counts);
  uint64_t n = 0;
  if (x->b == NULL) { /* self: i < j within each molecule */
    for (size_t r = 0, e; r < x->n_a; r = e) {
      e = run_end(x->a, x->mol_a, r, x->n_a);
      for (size_t i = r; i < e; i++)
        for (size_t j = i + 1; j < e; j++)
          if (in_shard(sh, true, x->a[i], x->a[j])) {
            s->counts[histd__pair_slot(pf, &m, &ev, x->a[i], x->a[j], &u)]++;
            n++;
          }
    }
    return n;
  }
  for (size_t ra = 0, rb = 0, ea, eb; ra < x->n_a && rb < x->n_b;) { /* A x B: merge */
    const int64_t ma = x->mol_a[x->a[ra]], mb = x->mol_b[x->b[rb]];
    ea = run_end(x->a, x->mol_a, ra, x->n_a);
    eb = run_end(x->b, x->mol_b, rb, x->n_b);
    if (ma == mb)
      for (size_t i = ra; i < ea; i++)
        for (size_t j = rb; j < eb; j++)
          if (in_shard(sh, false, x->a[i], x->b[j])) {
            s->counts[histd__pair_slot(pf, &m, &ev, x->a[i], x->b[j], &u)]++;
            n++;
          }
    if (ma <= mb)
      ra = ea;
    if (mb <= ma)
      rb = eb;
  }
  return n;
}
