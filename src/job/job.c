/*
 * job.c -- the job layer's two steps (include/histd/job.h): a job checked
 * against its datasets' shapes, and bound to their points.
 *
 * Both follow one order, the order a job's parts depend on each other:
 * the topology names A's atoms; the selections pick A and B from the
 * named atoms (B from A's dataset when the job gives no dataset_b); the
 * parameters make the problem (params.c: histd_params_spec); the engine
 * checks the problem (on shapes, or on the points) and the kernel's
 * abilities (histd_exec_check). A check's shapes stand for the points
 * the bind will have: the topology's names are A's, and a selection's
 * shape is its dataset's (at most as many atoms).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "histd/job.h"

/* ---- on shapes ------------------------------------------------------------ */

int histd_job_check(const histd_params *p, const histd_shape *a_in, const histd_shape *b_in,
                    const histd_shape *topology, histd_job_plan *plan, char *msg,
                    size_t msglen) {
  histd_shape a = *a_in;
  if (p->topology[0] != '\0') {
    if (topology == NULL)
      return histd_fail(msg, msglen, HISTD_ENOENT, "the topology \"%.64s\" was not found",
                        p->topology);
    const uint64_t tf = topology->frames > 0 ? topology->frames : 1;
    const uint64_t atoms = topology->topology ? topology->n / tf : 0;
    if (topology->topology == 0)
      return histd_fail(msg, msglen, HISTD_EINVAL,
                        "the topology names no atoms (upload a GRO, PDB, XYZ or a LAMMPS dump "
                        "with type or element columns)");
    const uint64_t af = a.frames > 0 ? a.frames : 1;
    if (a.n != atoms * af)
      return histd_fail(msg, msglen, HISTD_EINVAL,
                        "the dataset has %llu points in %llu frames, and its topology %llu "
                        "atoms a frame: they must describe the same system",
                        (unsigned long long)a.n, (unsigned long long)af,
                        (unsigned long long)atoms);
    a.topology = topology->topology; /* what the selections will find */
  }
  /* select_b picks from dataset_b, else from the dataset itself (A x B of
   * two selections of one dataset) */
  const histd_shape *b = b_in != NULL ? b_in : p->select_b[0] != '\0' ? &a : NULL;
  int rc = 0;
  if (p->select_a[0] != '\0')
    rc = histd_selection_check(p->select_a, a.topology, msg, msglen);
  if (rc == 0 && p->select_b[0] != '\0')
    rc = histd_selection_check(p->select_b, b->topology, msg, msglen);
  if (rc == 0 && p->partials[0] != '\0') /* what histd_operands_species will need */
    rc = histd_partials_check(p, a.topology, b != NULL, msg, msglen);
  uint32_t regions = 0; /* and histd_operands_regions */
  if (rc == 0 && p->jackknife)
    rc = histd_regions_check(&a, b, &regions, msg, msglen);
  if (rc != 0)
    return rc;
  /* theta: the angles between sky points, measured on their unit vectors */
  if (p->binned2 == HISTD_STAT_THETA && (!a.sky || (b_in != NULL && !b_in->sky)))
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "statistic theta measures angles between sky points: upload %s as a "
                      "sky catalogue (sky-csv, sky-json or fits)",
                      !a.sky ? "the dataset" : "dataset_b");
  histd_problem spec;
  double *edges = NULL;
  if ((rc = histd_params_spec(p, &spec, &edges, msg, msglen)) == 0)
    rc = histd_problem_check(&spec, &a, b, msg, msglen);
  uint32_t buckets = spec.bins.count;
  const bool counted = rc == 0 && spec.statistic == HISTD_STAT_HISTOGRAM &&
                       spec.bins.kind == HISTD_BINS_WIDTH && buckets == 0;
  if (counted && (rc = histd_default_bins_shape(&spec, &a, b, &buckets, msg, msglen)) != 0) {
    const size_t len = strlen(msg);
    snprintf(msg + len, msglen > len ? msglen - len : 0,
             "; give a larger bucket_width or an explicit buckets");
  }
  spec.bins.count = buckets;
  if (rc == 0)
    rc = histd_exec_check(&p->exec, histd_problem_needs_of(&spec, &a, b), msg, msglen);
  if (rc == 0) {
    plan->statistic = spec.statistic;
    plan->buckets = buckets;
    plan->counted = counted;
    plan->frames = a.frames > 1 ? a.frames : b != NULL && b->frames > 1 ? b->frames : 1;
    plan->pairs = histd_shape_pairs(&a, b);
    spec.region_count = regions;
    plan->result_bytes = histd_shape_result_bytes(&spec, &a, b);
  }
  free(edges);
  return rc;
}

/* ---- on the points ------------------------------------------------------------- */

int histd_job_bind(histd_job *job, const histd_params *p, const histd_dataset *a,
                   const histd_dataset *b, const histd_dataset *topology, char *msg,
                   size_t msglen) {
  memset(job, 0, sizeof *job);
  int rc = 0;
  if (p->topology[0] != '\0') { /* A with another dataset's atoms (a view of A's points) */
    if (topology == NULL)
      return histd_fail(msg, msglen, HISTD_ENOENT, "the topology \"%.64s\" was not found",
                        p->topology);
    job->named = *a; /* its points, frames and origins borrowed; its topology its own */
    job->named.top = NULL;
    job->named.borrowed = true;
    if ((rc = histd_dataset_adopt_topology(&job->named, topology, msg, msglen)) != 0) {
      histd_job_free(job);
      return rc;
    }
    a = &job->named;
  }
  if ((rc = histd_params_operands(p, a, b, &job->ops, msg, msglen)) != 0) {
    histd_job_free(job);
    return rc;
  }
  const histd_dataset *pa = job->ops.a, *pb = job->ops.b;
  if (p->binned2 == HISTD_STAT_THETA) { /* the points become their directions */
    if (job->ops.shared != NULL) { /* its pieces would keep the Cartesian points */
      histd_job_free(job);
      return histd_fail(msg, msglen, HISTD_EINVAL,
                        "statistic theta takes A and B as whole catalogues, or selections "
                        "that share no galaxy: give dataset_b for the second set");
    }
    if ((rc = histd_dataset_unit_vectors(pa, &job->units[0], msg, msglen)) != 0 ||
        (pb != NULL && (rc = histd_dataset_unit_vectors(pb, &job->units[1], msg, msglen)) != 0)) {
      histd_job_free(job);
      return rc;
    }
    pa = &job->units[0];
    pb = pb != NULL ? &job->units[1] : NULL;
  }
  if (p->jackknife && (rc = histd_operands_regions(&job->ops, pa, pb, msg, msglen)) != 0) {
    histd_job_free(job);
    return rc;
  }
  if ((rc = histd_params_problem(p, pa, pb, &job->problem, &job->edges, msg, msglen)) != 0) {
    histd_job_free(job);
    return rc;
  }
  /* select_b without dataset_b: A and B are selections of one dataset, and
   * a point of A never meets itself among B's (histd.h's "other than
   * itself": the per-point statistics and the pair list); their shared
   * atoms, if any, pair once per pair of distinct atoms (pairing.c) */
  job->problem.same_atoms = b == NULL && job->ops.b != NULL;
  job->problem.shared = job->ops.shared;
  job->problem.pairing = job->ops.pairing;
  job->problem.species = job->ops.species;
  job->problem.species_count = job->ops.species_count;
  job->problem.species_names = job->ops.species_names;
  job->problem.regions_a = job->ops.regions_a;
  job->problem.regions_b = job->ops.regions_b;
  job->problem.region_count = job->ops.region_count;
  return 0;
}

void histd_job_label(const histd_params *p, histd_result *res) {
  snprintf(res->select_a, sizeof res->select_a, "%s", p->select_a);
  snprintf(res->select_b, sizeof res->select_b, "%s", p->select_b);
  res->norm = p->norm;
  if (p->binned2 == HISTD_STAT_THETA && res->statistic == HISTD_STAT_HISTOGRAM) {
    /* the chords' histogram, shown as the angles' (their edges beside) */
    double *deg;
    uint32_t k;
    char msg[256];
    if (histd_params_theta_edges(p, &deg, &k, msg, sizeof msg) == 0 && k == res->bins.count) {
      free(res->theta_edges);
      res->theta_edges = deg;
      res->statistic = HISTD_STAT_THETA;
    } else {
      free(deg); /* (NULL when it failed) */
    }
  }
}

void histd_job_free(histd_job *job) {
  histd_operands_free(&job->ops);
  histd_dataset_free(&job->units[0]);
  histd_dataset_free(&job->units[1]);
  histd_topology_free(job->named.top); /* (the rest of the view is A's) */
  free(job->edges);
  memset(job, 0, sizeof *job);
}
