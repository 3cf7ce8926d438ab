/* spec.c -- the histogram spec: defaults, validation, the contract. */
#include <math.h>
#include <string.h>

#include "histd/histd.h"

void histd_spec_init(histd_spec *spec) {
  memset(spec, 0, sizeof *spec);
  spec->precision = HISTD_PRECISION_EXACT;
  strcpy(spec->kernel, "auto");
}

int histd_spec_validate(const histd_spec *spec, char *msg, size_t msglen) {
  double w = spec->bucket_width;
  if (!isfinite(w))
    return histd_fail(msg, msglen, HISTD_EINVAL, "bucket_width must be a finite number");
  if (!(w > 0))
    return histd_fail(msg, msglen, HISTD_EINVAL, "bucket_width must be > 0, got %g", w);
  if (spec->buckets > HISTD_MAX_BUCKETS)
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "buckets must be at most %u, got %u", HISTD_MAX_BUCKETS,
                      spec->buckets);
  if (spec->precision != HISTD_PRECISION_EXACT && spec->precision != HISTD_PRECISION_FAST)
    return histd_fail(msg, msglen, HISTD_EINVAL, "precision must be \"exact\" or \"fast\"");
  if (spec->block_size != 0 &&
      (spec->block_size < HISTD_MIN_BLOCK_SIZE || spec->block_size > HISTD_MAX_BLOCK_SIZE ||
       spec->block_size % 32 != 0))
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "block_size must be a multiple of 32 from %u to %u, got %u",
                      HISTD_MIN_BLOCK_SIZE, HISTD_MAX_BLOCK_SIZE, spec->block_size);
  if (memchr(spec->kernel, '\0', sizeof spec->kernel) == NULL)
    return histd_fail(msg, msglen, HISTD_EINVAL, "kernel name is too long");
  if (spec->kernel[0] != '\0' && histd_kernel_find(spec->kernel) == NULL)
    return histd_fail(msg, msglen, HISTD_ENOENT,
                      "unknown kernel \"%s\" (see the list of kernels)", spec->kernel);
  return 0;
}

int histd_default_buckets(const histd_dataset *ds, double width,
                          uint32_t *buckets, char *msg, size_t msglen) {
  if (!(width > 0) || !isfinite(width))
    return histd_fail(msg, msglen, HISTD_EINVAL, "bucket_width must be > 0, got %g", width);
  double q = floor(histd_dataset_diagonal(ds) / width);
  if (!(q < HISTD_MAX_BUCKETS))
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "bucket_width %g is too small: covering the data's diagonal "
                      "(%g) would need more than %u buckets",
                      width, histd_dataset_diagonal(ds), HISTD_MAX_BUCKETS);
  *buckets = (uint32_t)q + 1;
  return 0;
}

const char *histd_precision_name(histd_precision p) {
  return p == HISTD_PRECISION_FAST ? "fast" : "exact";
}

int histd_precision_parse(const char *s, histd_precision *out) {
  if (strcmp(s, "exact") == 0)
    *out = HISTD_PRECISION_EXACT;
  else if (strcmp(s, "fast") == 0)
    *out = HISTD_PRECISION_FAST;
  else
    return HISTD_EINVAL;
  return 0;
}

uint64_t histd_pair_bucket(double xi, double yi, double zi, double xj,
                           double yj, double zj, double width) {
  double dx = xi - xj, dy = yi - yj, dz = zi - zj;
  double s = (dx * dx + dy * dy) + dz * dz;
  double b = floor(sqrt(s) / width);
  return b < 18446744073709551616.0 ? (uint64_t)b : UINT64_MAX;
}
