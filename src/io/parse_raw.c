/*
 * parse_raw.c -- raw little-endian float64 or float32 triples x0 y0 z0 x1 ...
 *
 * A straight transpose into the dataset's structure of arrays. Every value
 * is read with memcpy (the buffer may have any alignment) and byte-swapped
 * on big-endian hosts; on little-endian ones the compiler turns this into
 * plain loads.
 */
#include <string.h>

#include "io_internal.h"

#if defined(__BYTE_ORDER__) && defined(__ORDER_BIG_ENDIAN__) && \
    __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define HOST_BIG_ENDIAN 1
#else
#define HOST_BIG_ENDIAN 0
#endif

static inline double load_f64le(const char *p) {
  uint64_t u;
  memcpy(&u, p, sizeof u);
#if HOST_BIG_ENDIAN
  u = __builtin_bswap64(u);
#endif
  double d;
  memcpy(&d, &u, sizeof d);
  return d;
}

static inline double load_f32le(const char *p) {
  uint32_t u;
  memcpy(&u, p, sizeof u);
#if HOST_BIG_ENDIAN
  u = __builtin_bswap32(u);
#endif
  float f;
  memcpy(&f, &u, sizeof f);
  return (double)f;
}

int histd__parse_raw(const char *buf, size_t len, bool f32, size_t max_points,
                     histd_dataset *out, char *msg, size_t msglen) {
  const char *name = f32 ? "f32" : "f64";
  size_t width = f32 ? 4 : 8, rec = 3 * width;
  if (len == 0)
    return histd_fail(msg, msglen, HISTD_EPARSE, "empty input: no points");
  if (len % rec != 0)
    return histd_fail(msg, msglen, HISTD_EPARSE,
                      "%s input: %zu bytes is not a multiple of %zu (3 little-endian "
                      "%s values per point); the last point is cut short after %zu bytes",
                      name, len, rec, f32 ? "float32" : "float64", len % rec);
  size_t n = len / rec;
  if (max_points != 0 && n > max_points)
    return histd_fail(msg, msglen, HISTD_ETOOBIG,
                      "%s input: %zu points is more than %zu, the limit for this input", name,
                      n, max_points);
  histd_dataset ds;
  int rc = histd__ds_reserve(&ds, n, msg, msglen);
  if (rc != 0)
    return rc;
  double *x = ds.x, *y = ds.y, *z = ds.z;
  if (f32) {
    for (size_t i = 0; i < n; i++) {
      const char *p = buf + i * 12;
      x[i] = load_f32le(p);
      y[i] = load_f32le(p + 4);
      z[i] = load_f32le(p + 8);
    }
  } else {
    for (size_t i = 0; i < n; i++) {
      const char *p = buf + i * 24;
      x[i] = load_f64le(p);
      y[i] = load_f64le(p + 8);
      z[i] = load_f64le(p + 16);
    }
  }
  rc = histd__ds_complete(&ds, n, n, msg, msglen);
  if (rc != 0)
    return rc;
  *out = ds;
  return 0;
}
