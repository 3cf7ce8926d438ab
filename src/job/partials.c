/*
 * partials.c -- every species pair of one set in one job ("partials":
 * "element", "type", "name" or "resname").
 *
 * LAMMPS's compute rdf gives every type pair's g(r) in one run; a liquid
 * of S species has S(S+1)/2 of them. Run as S(S+1)/2 jobs of today's kind
 * each would scan all N(N-1)/2 pairs again. Here A's atoms are sorted into
 * S sets by the field named (the species, in the field's order: names by
 * strcmp, types by number), and the job's pairs become the species pairs'
 * pieces: s's self pairs for s == t, s x t for s < t. Every pair of A lies
 * in exactly one piece, so the job meets each pair once, on any kernel
 * (histd_problem_piece; the worker keeps each piece's counts as its
 * partial and adds them all into the histogram of every pair). A partial
 * is normalised by its own pairs, N_s(N_s - 1)/2 or N_s N_t a frame less
 * the excluded, as shared/DESIGN.md says.
 */
#include <stdlib.h>
#include <string.h>

#include "histd/job.h"

/* The field a species is read from: its topology bit, and atom i's value
 * (a string's slot, or the type). */
typedef struct field {
  const char *name;
  unsigned bit;
} field;

static const field fields[] = {{"element", HISTD_TOP_ELEMENT},
                               {"type", HISTD_TOP_TYPE},
                               {"name", HISTD_TOP_NAME},
                               {"resname", HISTD_TOP_RESNAME}};

static const char *text_of(const histd_topology *t, unsigned bit, size_t i) {
  const char *base = bit == HISTD_TOP_ELEMENT ? t->element
                     : bit == HISTD_TOP_NAME  ? t->name
                                              : t->resname;
  return base + i * HISTD_ATOM_STR;
}

/* Atoms i and j's order by the field: < 0, 0, > 0. */
static int compare(const histd_topology *t, unsigned bit, size_t i, size_t j) {
  if (bit == HISTD_TOP_TYPE)
    return (t->type[i] > t->type[j]) - (t->type[i] < t->type[j]);
  return strcmp(text_of(t, bit, i), text_of(t, bit, j));
}

int histd_params_partials_field(const char *v) {
  for (size_t k = 0; k < sizeof fields / sizeof fields[0]; k++)
    if (strcmp(v, fields[k].name) == 0)
      return (int)k;
  return -1;
}

int histd_partials_check(const histd_params *p, unsigned topology, bool has_b, char *msg,
                         size_t msglen) {
  const int which = histd_params_partials_field(p->partials);
  if (which < 0)
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "partials must be element, type, name or resname, got \"%.32s\"",
                      p->partials);
  const field *fd = &fields[which];
  if (has_b)
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "partials are every species pair of one set: give the dataset (and "
                      "select_a) without dataset_b or select_b");
  if (!(topology & fd->bit))
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "partials by %s need the atoms' %s: the dataset's file does not give "
                      "them (a GRO, PDB, XYZ or LAMMPS dump with %s, or a topology)",
                      fd->name, fd->name, fd->name);
  return 0;
}

int histd_operands_species(const histd_params *p, histd_operands *o, char *msg,
                           size_t msglen) {
  const histd_topology *t = o->a->top;
  int rc = histd_partials_check(p, histd_topology_fields(t), o->b != NULL, msg, msglen);
  if (rc != 0)
    return rc;
  const field *fd = &fields[histd_params_partials_field(p->partials)];
  const size_t atoms = t->atoms;
  size_t rep[HISTD_MAX_SPECIES]; /* an atom of each species, in the species' order */
  size_t *pick = malloc((atoms ? atoms : 1) * sizeof *pick);
  histd_dataset *sets = calloc(HISTD_MAX_SPECIES, sizeof *sets);
  uint32_t species = 0;
  if (pick == NULL || sets == NULL) {
    rc = histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for the species of %zu atoms",
                    atoms);
    goto done;
  }
  for (size_t i = 0; i < atoms; i++) {
    uint32_t s = 0;
    int c = 1;
    while (s < species && (c = compare(t, fd->bit, rep[s], i)) < 0)
      s++;
    if (s < species && c == 0)
      continue;
    if (species == HISTD_MAX_SPECIES) {
      rc = histd_fail(msg, msglen, HISTD_EINVAL,
                      "partials by %s: more than %d species (%d partials) among the atoms; "
                      "select fewer atoms (select_a)",
                      fd->name, HISTD_MAX_SPECIES, HISTD_MAX_SPECIES * (HISTD_MAX_SPECIES + 1) / 2);
      goto done;
    }
    memmove(rep + s + 1, rep + s, (species - s) * sizeof *rep);
    rep[s] = i;
    species++;
  }
  size_t len = 0;
  o->species_names[0] = '\0';
  for (uint32_t s = 0; s < species && rc == 0; s++) {
    char name[32];
    if (fd->bit == HISTD_TOP_TYPE)
      snprintf(name, sizeof name, "%lld", (long long)t->type[rep[s]]);
    else
      snprintf(name, sizeof name, "%s", text_of(t, fd->bit, rep[s]));
    if (strchr(name, ',') != NULL || len + strlen(name) + 2 > sizeof o->species_names) {
      rc = histd_fail(msg, msglen, HISTD_EINVAL,
                      "partials by %s: the species' names (\"%s\", ...) do not fit a list of "
                      "%zu characters without commas",
                      fd->name, name, sizeof o->species_names - 1);
      break;
    }
    len += (size_t)snprintf(o->species_names + len, sizeof o->species_names - len, "%s%s",
                            s ? "," : "", name);
    size_t m = 0; /* the species' atoms, in index order */
    for (size_t i = 0; i < atoms; i++)
      if (compare(t, fd->bit, rep[s], i) == 0)
        pick[m++] = i;
    rc = histd_dataset_pick(o->a, pick, m, &sets[s], msg, msglen);
  }
  if (rc == 0) {
    o->species = sets;
    o->species_count = species;
    sets = NULL;
  }
done:
  for (uint32_t s = 0; sets != NULL && s < HISTD_MAX_SPECIES; s++)
    histd_dataset_free(&sets[s]);
  free(sets);
  free(pick);
  return rc;
}
