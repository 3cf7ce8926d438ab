/*
 * write_json.c -- a result as a cJSON object (the daemon's job result and
 * `sdh --format json`). 64-bit integers stay exact: up to 2^53 they are
 * plain numbers, above it raw items holding their decimal digits.
 */
#include <inttypes.h>
#include <stdio.h>

#include "io_internal.h"

#define EXACT_DOUBLE_MAX (UINT64_C(1) << 53)

static cJSON *u64_item(uint64_t v) {
  if (v <= EXACT_DOUBLE_MAX)
    return cJSON_CreateNumber((double)v);
  char digits[24];
  snprintf(digits, sizeof digits, "%" PRIu64, v);
  return cJSON_CreateRaw(digits);
}

static bool add(cJSON *obj, const char *key, cJSON *item) {
  if (item == NULL)
    return false;
  if (!cJSON_AddItemToObject(obj, key, item)) {
    cJSON_Delete(item);
    return false;
  }
  return true;
}

static bool push(cJSON *arr, cJSON *item) {
  if (item == NULL)
    return false;
  if (!cJSON_AddItemToArray(arr, item)) {
    cJSON_Delete(item);
    return false;
  }
  return true;
}

cJSON *histd_result_to_json(const histd_result *res, size_t n) {
  cJSON *o = cJSON_CreateObject();
  if (o == NULL)
    return NULL;
  bool ok = add(o, "n", u64_item((uint64_t)n)) &&
            add(o, "bucket_width", cJSON_CreateNumber(res->bucket_width)) &&
            add(o, "buckets", cJSON_CreateNumber(res->buckets));
  cJSON *edges = ok ? cJSON_CreateArray() : NULL;
  ok = ok && add(o, "edges", edges);
  for (uint32_t b = 0; ok && b <= res->buckets; b++)
    ok = push(edges, cJSON_CreateNumber((double)b * res->bucket_width));
  cJSON *counts = ok ? cJSON_CreateArray() : NULL;
  ok = ok && add(o, "counts", counts);
  for (uint32_t b = 0; ok && b < res->buckets; b++)
    ok = push(counts, u64_item(res->counts[b]));
  ok = ok && add(o, "overflow", u64_item(res->overflow)) &&
       add(o, "total", u64_item(res->total)) &&
       add(o, "kernel", cJSON_CreateString(res->kernel)) &&
       add(o, "block_size", cJSON_CreateNumber(res->block_size)) &&
       add(o, "precision", cJSON_CreateString(histd_precision_name(res->precision))) &&
       add(o, "exact", cJSON_CreateBool(res->exact)) &&
       add(o, "device", cJSON_CreateString(res->device));
  cJSON *t = ok ? cJSON_CreateObject() : NULL;
  ok = ok && add(o, "timing_ms", t) &&
       add(t, "queue", cJSON_CreateNumber(res->timing.queue_ms)) &&
       add(t, "parse", cJSON_CreateNumber(res->timing.parse_ms)) &&
       add(t, "transfer", cJSON_CreateNumber(res->timing.transfer_ms)) &&
       add(t, "kernel", cJSON_CreateNumber(res->timing.kernel_ms)) &&
       add(t, "total", cJSON_CreateNumber(res->timing.total_ms));
  if (!ok) {
    cJSON_Delete(o);
    return NULL;
  }
  return o;
}
