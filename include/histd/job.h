/*
 * job.h -- the job layer: a job's parameters (histd/params.h) bound to its
 * datasets, the same way for every front end -- the daemon, a cluster
 * node, `histd batch`, the synchronous route, `sdh`.
 *
 * It sits between io (the parsers and writers) and the front ends, and is
 * two steps, each one function:
 *
 *   histd_job_check  the job against its datasets' shapes (histd_shape:
 *                    sizes, frames, the first frame's box, weights, the
 *                    atoms' names) without their points -- what a daemon
 *                    knows when a job is submitted, from the datasets'
 *                    stored rows: the parameters resolved (bins counted),
 *                    the statistic's checks, the kernel's abilities, and
 *                    the plan (frames, pairs, a bound on the result);
 *   histd_job_bind   the job on the points: another dataset's atoms for a
 *                    trajectory without names (topology), the selections
 *                    and frames (A, B) and the problem the engine runs,
 *                    all owned by the histd_job; after the run,
 *                    histd_job_label writes the fields of the result the
 *                    parameters know.
 *
 * The checks are the engine's (histd_problem_check on shapes,
 * histd_problem_validate on points), so a job that passes the first can
 * fail the second only where the points say more than the shapes (a later
 * frame's narrower box, a selection that matches nothing, frames of
 * different sizes).
 */
#ifndef HISTD_JOB_H
#define HISTD_JOB_H

#include "histd/histd.h"
#include "histd/params.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a check learns of a job before it runs. */
typedef struct histd_job_plan {
  histd_statistic statistic;
  uint32_t buckets;      /* a histogram's bins */
  bool counted;          /* ...counted here (bucket_width without buckets) */
  uint64_t frames;       /* the frames it counts (before a frames slice) */
  uint64_t pairs;        /* the pairs it counts, at most (selections take some) */
  uint64_t result_bytes; /* its result's arrays, at most (histd_shape_result_bytes) */
} histd_job_plan;

/*
 * Checks the job against its operands' shapes: a (its dataset), b (another
 * dataset, dataset_b; NULL: none) and topology (the dataset whose atoms name
 * a's, the topology parameter; NULL when the job names none). HISTD_EPARSE
 * for a malformed job (a missing or conflicting way of binning), else
 * HISTD_EINVAL / HISTD_ETOOBIG / HISTD_ENOENT with a sentence. On success
 * *plan is filled.
 */
int histd_job_check(const histd_params *p, const histd_shape *a, const histd_shape *b,
                    const histd_shape *topology, histd_job_plan *plan, char *msg,
                    size_t msglen);

/* A job bound to its points: `problem` is what histd_worker_run takes; the
 * rest is owned here until histd_job_free. */
typedef struct histd_job {
  histd_problem problem;
  histd_dataset named;  /* A with the topology's atoms (a view of A's points) */
  histd_operands ops;   /* the selections' copies */
  histd_dataset units[2]; /* theta: A's and B's unit vectors */
  double *edges;        /* log bins' edges */
} histd_job;

/* Binds p to a, b (NULL: none) and topology (NULL: a's own atoms); 0, or
 * an error with a sentence (nothing to free then). */
int histd_job_bind(histd_job *job, const histd_params *p, const histd_dataset *a,
                   const histd_dataset *b, const histd_dataset *topology, char *msg,
                   size_t msglen);
/* The fields of a job's result that its parameters say (the selections
 * it came from): a run's, or a merge of its shards'. */
void histd_job_label(const histd_params *p, histd_result *res);
void histd_job_free(histd_job *job);

#ifdef __cplusplus
}
#endif
#endif /* HISTD_JOB_H */
