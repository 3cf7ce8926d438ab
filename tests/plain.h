/*
 * plain.h -- the plain histogram (self pairs, open space, equal-width bins)
 * as the tests and benchmarks of the original statistic state it: one
 * struct of width, bucket count and how to run, turned into the engine's
 * problem and execution. Nothing here computes a count.
 */
#ifndef HISTD_TESTS_PLAIN_H
#define HISTD_TESTS_PLAIN_H

#include <stdio.h>
#include <string.h>

#include "histd/histd.h"

typedef struct plain_job {
  double bucket_width;
  uint32_t buckets; /* 0: cover the data */
  char kernel[HISTD_NAME_MAX];
  uint32_t block_size, threads;
  uint64_t devices;
  histd_precision precision;
} plain_job;

static inline void plain_init(plain_job *j) {
  memset(j, 0, sizeof *j);
  strcpy(j->kernel, "auto");
}

static inline histd_problem plain_problem(const histd_dataset *ds, const plain_job *j) {
  histd_problem p;
  memset(&p, 0, sizeof p);
  p.a = ds;
  p.bins = (histd_bins){HISTD_BINS_WIDTH, j->buckets, j->bucket_width, NULL, 0, 0};
  return p;
}

static inline histd_exec plain_exec(const plain_job *j) {
  histd_exec ex;
  histd_exec_init(&ex);
  snprintf(ex.kernel, sizeof ex.kernel, "%s", j->kernel);
  ex.block_size = j->block_size;
  ex.threads = j->threads;
  ex.devices = j->devices;
  ex.precision = j->precision;
  return ex;
}

static inline int plain_run(const histd_dataset *ds, const plain_job *j, const histd_control *ctl,
                            histd_result *res, char *msg, size_t msglen) {
  histd_problem p = plain_problem(ds, j);
  histd_exec ex = plain_exec(j);
  return histd_run(&p, &ex, ctl, res, msg, msglen);
}

static inline int plain_worker_run(histd_worker *w, const histd_dataset *ds, const plain_job *j,
                                   const histd_control *ctl, histd_result *res, char *msg,
                                   size_t msglen) {
  histd_problem p = plain_problem(ds, j);
  histd_exec ex = plain_exec(j);
  return histd_worker_run(w, &p, &ex, ctl, res, msg, msglen);
}

#endif
