/*
 * write_json.c -- a result as a cJSON object (the daemon's job result and
 * `sdh --format json`).
 *
 * cJSON keeps numbers as doubles and prints them with "%1.15g", falling back
 * to "%1.17g" only when an approximate comparison fails, so it can print a
 * large integer or a double a digit off. Hence: 64-bit integers below 10^15
 * (exact in 15 digits) are plain numbers, larger ones raw items holding
 * their exact decimal digits; the bucket width and edges are raw items in
 * the shortest decimal that reads back as the same double.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io_internal.h"

#define EXACT_15_DIGITS UINT64_C(1000000000000000)

static cJSON *u64_item(uint64_t v) {
  if (v < EXACT_15_DIGITS)
    return cJSON_CreateNumber((double)v);
  char digits[24];
  snprintf(digits, sizeof digits, "%" PRIu64, v);
  return cJSON_CreateRaw(digits);
}

static cJSON *double_item(double v, locale_t loc) {
  if (!isfinite(v))
    return cJSON_CreateNull();
  char buf[40];
  histd__format_double(buf, sizeof buf, v, loc);
  return cJSON_CreateRaw(buf);
}

/* The counts and edges arrays are raw items holding their JSON text: one
 * string rather than a cJSON node per number, which for HISTD_MAX_BUCKETS
 * buckets was ~3.4 GB of nodes for a ~240 MB document. */
typedef struct text {
  char *p;
  size_t len, cap;
} text;

static bool text_put(text *t, const char *s) {
  size_t n = strlen(s);
  if (t->len + n + 1 > t->cap) {
    size_t cap = t->cap ? t->cap : 256;
    while (cap < t->len + n + 1)
      cap *= 2;
    char *p = realloc(t->p, cap);
    if (p == NULL)
      return false;
    t->p = p;
    t->cap = cap;
  }
  memcpy(t->p + t->len, s, n + 1);
  t->len += n;
  return true;
}

static void u64_text(char *buf, size_t len, uint64_t v) { snprintf(buf, len, "%" PRIu64, v); }

static void double_text(char *buf, size_t len, double v, locale_t loc) {
  if (!isfinite(v))
    snprintf(buf, len, "null");
  else
    histd__format_double(buf, len, v, loc);
}

/* [e(0), e(1), ... e(count-1)] as one raw item. */
static cJSON *raw_array(const histd_result *res, uint32_t count, bool edges, locale_t loc) {
  text t = {NULL, 0, 0};
  bool ok = text_put(&t, "[");
  char buf[40];
  for (uint32_t b = 0; ok && b < count; b++) {
    if (edges)
      double_text(buf, sizeof buf, (double)b * res->bucket_width, loc);
    else
      u64_text(buf, sizeof buf, res->counts[b]);
    ok = (b == 0 || text_put(&t, ",")) && text_put(&t, buf);
  }
  ok = ok && text_put(&t, "]");
  cJSON *item = ok ? cJSON_CreateRaw(t.p) : NULL;
  free(t.p);
  return item;
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

cJSON *histd_result_to_json(const histd_result *res, size_t n) {
  locale_t loc, old;
  if (histd__c_locale(&loc, NULL, 0) != 0)
    return NULL;
  old = uselocale(loc);
  cJSON *o = cJSON_CreateObject();
  bool ok = o != NULL && add(o, "n", u64_item((uint64_t)n)) &&
            add(o, "bucket_width", double_item(res->bucket_width, loc)) &&
            add(o, "buckets", cJSON_CreateNumber(res->buckets));
  ok = ok && add(o, "edges", raw_array(res, res->buckets + 1, true, loc));
  ok = ok && add(o, "counts", raw_array(res, res->buckets, false, loc));
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
  uselocale(old);
  freelocale(loc);
  if (!ok) {
    cJSON_Delete(o);
    return NULL;
  }
  return o;
}
