/* util.c -- small helpers shared by the engine's backends. */
#define _POSIX_C_SOURCE 200809L
#include <time.h>
#include <unistd.h>

#include "engine.h"

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

unsigned histd__cpu_count(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1u : (unsigned)n;
}
