/*
 * budget.c -- bytes held at once against a limit.
 *
 * The daemon holds things on behalf of requests in flight: buffered request
 * bodies (memory) and large answers written to unnamed files before they
 * are sent (--max-buffered-bytes). A budget is one atomic count and its
 * limit: take() adds only if the sum stays under the limit (a CAS loop, so
 * two takers cannot both squeeze into the last room), give() subtracts.
 * A limit of 0 means no limit; the count is still kept.
 */
#include "budget.h"

bool budget_take(budget *b, uint64_t bytes) {
  uint_fast64_t used = atomic_load(&b->used);
  do {
    if (b->limit != 0 && (bytes > b->limit || used > b->limit - bytes))
      return false;
  } while (!atomic_compare_exchange_weak(&b->used, &used, used + bytes));
  return true;
}

bool budget_take_or_alone(budget *b, uint64_t bytes) {
  uint_fast64_t none = 0;
  return budget_take(b, bytes) || atomic_compare_exchange_strong(&b->used, &none, bytes);
}

void budget_give(budget *b, uint64_t bytes) { atomic_fetch_sub(&b->used, bytes); }
