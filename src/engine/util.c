/* util.c -- small helpers shared by the engine's backends. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity */
#endif
#include <sched.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"

double histd__env_number(const char *name, double dflt) {
  const char *s = getenv(name);
  if (s == NULL || *s == '\0')
    return dflt;
  char *end;
  double v = strtod(s, &end);
  return end == s ? dflt : v;
}

double histd_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

bool histd__cancelled(const histd_control *ctl) {
  return ctl != NULL && ctl->cancelled != NULL && ctl->cancelled(ctl->user);
}

void histd__progress(const histd_control *ctl, double fraction) {
  if (ctl != NULL && ctl->progress != NULL)
    ctl->progress(ctl->user, fraction < 0 ? 0 : fraction > 1 ? 1 : fraction);
}

void histd__progress_step(const histd_control *ctl, pthread_mutex_t *lock, double *reported,
                          double fraction) {
  pthread_mutex_lock(lock);
  if (fraction >= *reported + 1e-3 && fraction < 1.0) {
    *reported = fraction;
    histd__progress(ctl, fraction);
  }
  pthread_mutex_unlock(lock);
}

static void part_progress(void *u, double x) {
  const histd__part *pt = u;
  histd__progress(pt->outer, (pt->k + x) / pt->parts);
}

static bool part_cancelled(void *u) { return histd__cancelled(((const histd__part *)u)->outer); }

static int part_pairs(void *u, const histd_pair_record *r, size_t n, char *msg, size_t msglen) {
  const histd_control *outer = ((const histd__part *)u)->outer;
  return histd__emit_pairs(outer, r, n, msg, msglen);
}

histd_control histd__part_control(histd__part *pt) {
  return (histd_control){part_progress, part_cancelled, pt, part_pairs};
}

int histd__emit_pairs(const histd_control *ctl, const histd_pair_record *r, size_t n, char *msg,
                      size_t msglen) {
  if (n == 0)
    return 0;
  if (ctl == NULL || ctl->pairs == NULL)
    return histd_fail(msg, msglen, HISTD_EINVAL, "a pair list needs somewhere to put its pairs");
  return ctl->pairs(ctl->user, r, n, msg, msglen);
}

unsigned histd_cpu_count(void) {
#ifdef CPU_COUNT
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
    return (unsigned)CPU_COUNT(&set);
#endif
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1u : (unsigned)n;
}
