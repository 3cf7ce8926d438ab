/*
 * pairing.c -- two selections of one dataset, and the rule that an atom
 * never pairs with itself.
 *
 * MDAnalysis users write the O-O g(r) as one selection against itself
 * (select_a "name:OW", select_b "name:OW"). Counted as A x B that is every
 * atom with itself, at d = 0, and every other pair twice: a spike at r = 0
 * and a g(r) normalised by N^2 where the pairs are N(N - 1)/2. The
 * contract (DESIGN.md, "the contract for the wave-3 statistics") says
 * instead: two selections of the same atoms are a self job, i < j; two
 * that share some atoms pair each unordered pair of distinct atoms once;
 * "pairs": "ordered" asks for every (a, b), as MDAnalysis counts them;
 * two datasets keep every pair.
 *
 * Here the rule becomes operands the engine already knows how to count,
 * so every kernel, CPU or GPU, keeps its speed and its exactness. The same
 * atoms: B goes, and the job is a self job. Atoms shared by A and B (the
 * set S; A' = A - S, B' = B - S): the unordered pairs of distinct atoms,
 * one of A and one of B, are A' x B', A' x S, S x B' and S's own self
 * pairs, no pair twice and none missed (a pair with an atom of A' meets
 * its other atom in B, and A' holds no atom of B; likewise for B'; a pair
 * within S is counted once, i < j). The worker runs the four as pieces
 * and adds them as it adds shards (histd_problem_pieces). Statistics of a
 * value per point need none of this ("other than itself" is theirs
 * already: same_atoms); a pair list of selections that share atoms is
 * refused for now, with a sentence that says what works.
 *
 * An atom is known by its origin: its index in a frame of the dataset the
 * selections came from (histd_dataset_select); a whole dataset's atoms
 * are their own indices.
 */
#include <stdlib.h>
#include <string.h>

#include "histd/job.h"

/* A frame's atoms of operand d. */
static size_t frame_atoms(const histd_dataset *d) {
  return histd_dataset_frames(d) > 1 ? d->frame[0].n : d->n;
}

/* The origin of atom i of operand d. */
static uint64_t origin(const histd_dataset *d, size_t i) {
  return d->origin != NULL ? d->origin[i] : i;
}

/* Whether A and B are the same atoms in the same order, every frame. */
static bool same_atoms(const histd_dataset *a, const histd_dataset *b) {
  if (a->n != b->n || histd_dataset_frames(a) != histd_dataset_frames(b))
    return false;
  if (a->origin == NULL && b->origin == NULL)
    return true; /* both every atom of the same frames */
  const size_t n = frame_atoms(a);
  for (size_t i = 0; i < n; i++)
    if (origin(a, i) != origin(b, i))
      return false;
  return true;
}

/* in[o] for each origin o of d's atoms, in a table of `size` entries. */
static void mark(const histd_dataset *d, bool *in) {
  for (size_t i = 0, n = frame_atoms(d); i < n; i++)
    in[origin(d, i)] = true;
}

/* The positions in d of the atoms whose mark in `other` is `want`. */
static size_t positions(const histd_dataset *d, const bool *other, bool want, size_t *out) {
  size_t m = 0;
  for (size_t i = 0, n = frame_atoms(d); i < n; i++)
    if (other[origin(d, i)] == want)
      out[m++] = i;
  return m;
}

static uint64_t most_origin(const histd_dataset *d) {
  uint64_t most = 0;
  for (size_t i = 0, n = frame_atoms(d); i < n; i++)
    most = origin(d, i) > most ? origin(d, i) : most;
  return most;
}

int histd_operands_pair(const histd_params *p, histd_statistic statistic, histd_operands *o,
                        char *msg, size_t msglen) {
  o->pairing = HISTD_PAIRING_PLAIN;
  if (o->b == NULL)
    return 0;
  if (p->ordered_pairs) { /* every (a, b), as asked: only the label says so */
    o->pairing = HISTD_PAIRING_ORDERED;
    return 0;
  }
  if (same_atoms(o->a, o->b)) { /* a self job */
    o->b = NULL;
    histd_dataset_free(&o->sel_b);
    return 0;
  }
  const size_t na = frame_atoms(o->a), nb = frame_atoms(o->b);
  const uint64_t most_a = most_origin(o->a), most_b = most_origin(o->b);
  const size_t size = (size_t)(most_a > most_b ? most_a : most_b) + 1;
  bool *in_a = calloc(size, sizeof *in_a), *in_b = calloc(size, sizeof *in_b);
  size_t *pick = malloc((na + nb + 1) * sizeof *pick);
  int rc = 0;
  if (in_a == NULL || in_b == NULL || pick == NULL) {
    rc = histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for the selections' atoms");
    goto done;
  }
  mark(o->a, in_a);
  mark(o->b, in_b);
  size_t shared = 0;
  for (size_t i = 0; i < na; i++)
    shared += in_b[origin(o->a, i)];
  if (shared == 0) /* no atom in both: every (a, b) is a pair of distinct atoms */
    goto done;
  const histd_answer answer = histd_statistic_about(statistic)->answer;
  if (answer == HISTD_ANSWER_POINTS) /* "other than itself" is the statistic's own */
    goto done;
  if (answer == HISTD_ANSWER_PAIRS) {
    rc = histd_fail(msg, msglen, HISTD_EINVAL,
                    "select_a and select_b share %zu atoms but are not the same atoms: a pair "
                    "list of such selections is not supported; give the same selection twice "
                    "(the pairs i < j), selections that share no atom, or \"pairs\": "
                    "\"ordered\" (every (a, b), both orders)",
                    shared);
    goto done;
  }
  /* A' = A - S, S (as A holds them), B' = B - S */
  histd_dataset a_only, s, b_only;
  memset(&s, 0, sizeof s);
  memset(&b_only, 0, sizeof b_only);
  size_t m = positions(o->a, in_b, false, pick);
  rc = histd_dataset_pick(o->a, pick, m, &a_only, msg, msglen);
  if (rc == 0) {
    m = positions(o->a, in_b, true, pick);
    rc = histd_dataset_pick(o->a, pick, m, &s, msg, msglen);
  }
  if (rc == 0) {
    m = positions(o->b, in_a, false, pick);
    rc = histd_dataset_pick(o->b, pick, m, &b_only, msg, msglen);
  }
  if (rc != 0) {
    histd_dataset_free(&a_only);
    histd_dataset_free(&s);
    histd_dataset_free(&b_only);
    goto done;
  }
  histd_dataset_free(&o->sel_a);
  histd_dataset_free(&o->sel_b);
  o->sel_a = a_only;
  o->sel_b = b_only;
  o->sel_o = s;
  o->a = &o->sel_a;
  o->b = &o->sel_b;
  o->shared = &o->sel_o;
  o->pairing = HISTD_PAIRING_DISTINCT;
done:
  free(in_a);
  free(in_b);
  free(pick);
  return rc;
}
