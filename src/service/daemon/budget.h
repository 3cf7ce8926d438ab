/*
 * budget.h -- byte budgets (budget.c): --max-buffered-bytes, the request
 * bodies and large answers the daemon holds at once.
 */
#ifndef HISTD_BUDGET_H
#define HISTD_BUDGET_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* Bytes held at once against a limit (0: no limit), thread-safe. */
typedef struct budget {
  atomic_uint_fast64_t used;
  uint64_t limit;
} budget;
/* Takes `bytes` if they fit under the limit; false (nothing taken) if not. */
bool budget_take(budget *b, uint64_t bytes);
/* The same, but also takes bytes beyond the limit when nothing else is
 * held: one thing larger than the whole budget can still be served. */
bool budget_take_or_alone(budget *b, uint64_t bytes);
void budget_give(budget *b, uint64_t bytes);

#endif
