/*
 * fast_bins.h -- float32 bins: tables that let a kernel bin a pair from
 * the float32 square of its distance (and a float32 pi or mu) wherever
 * that value's error bound leaves no doubt, and send it to the contract
 * otherwise. Written once, in binary64 on the host; the GPU grid's drain
 * reads them (kernels/grid_kernels.cu, "Float32 bins", has the proof and
 * the error bounds its float32 values carry); tests/engine/test_fast_bins.c
 * holds them to the contract on pairs beside every boundary.
 *
 * Axis 1 (d, or r_p), at position k + 1 for k = -1 (below), 0 to count1 -
 * 1 (a bin), count1 (overflow): the two float squares (lo, hi) between
 * which a float32 square a puts the contract's value in bin k. Its
 * boundaries b_j (the edges, or j w) are moved out by e1 (the float32
 * vector's error bound plus the contract's own), by 2^-40 relative (a
 * width bin's fl(d / w) moves by 2u), and by a's own rounding (2^-21
 * relative; flushed subnormals, 2^-100): a > lo gives d >= b_k, a < hi
 * gives d < b_(k+1). Axis 2 at count1 + 2 + k2 (k2 = count2: overflow),
 * the interval [c_k2, c_(k2+1)) with c_j = j w2 and c_count2 = max2: pi's
 * moved in by its margin m2 (and 2^-40 relative), mu's as they are, its
 * margin taken per pair (histd__fast_mu).
 */
#ifndef HISTD_FAST_BINS_H
#define HISTD_FAST_BINS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

/* A float rounded up (down) from x: at least (at most) x. */
static inline float histd__float_up(double x) {
  float f = (float)x;
  return (double)f < x ? nextafterf(f, INFINITY) : f;
}

static inline float histd__float_down(double x) {
  float f = (float)x;
  return (double)f > x ? nextafterf(f, -INFINITY) : f;
}

enum { HISTD_FAST_NONE = 0, HISTD_FAST_PI = 1, HISTD_FAST_MU = 2 };

/* A job's bins and error bounds, as the tables need them. */
typedef struct histd__fast_axes {
  const double *edges; /* axis 1's count1 + 1 edges, or NULL: width bins */
  double width;        /* axis 1's width bins */
  uint32_t count1;
  double e1;           /* axis 1's float32 error bound plus the contract's */
  int axis2;           /* HISTD_FAST_*: no axis 2, pi or mu */
  uint32_t count2;
  double width2, max2; /* axis 2's bins of width2 up to max2 */
  double m2;           /* pi: its float32 error bound plus the contract's */
} histd__fast_axes;

/* The tables' entries (float pairs): count2 0 without axis 2. */
static inline size_t histd__fast_entries(uint32_t count1, uint32_t count2) {
  return (size_t)count1 + 2 + (count2 ? (size_t)count2 + 1 : 0);
}

/* The tables of x into t (histd__fast_entries pairs of floats). */
static inline void histd__fast_tables(const histd__fast_axes *x, float *t) {
  const uint32_t n1 = x->count1;
  for (uint32_t k = 0; k <= n1 + 1; k++) { /* position k: bin k - 1 */
    double lo = -INFINITY, hi = INFINITY;
    if (k >= 1) {
      const double b = x->edges != NULL ? x->edges[k - 1] : (k - 1) * x->width;
      const double r = b * (1 + 0x1p-40) + x->e1;
      lo = b <= 0 ? -1 : r * r * (1 + 0x1p-21) * (1 + 0x1p-40) + 0x1p-100;
    }
    if (k <= n1) {
      const double b = x->edges != NULL ? x->edges[k] : k * x->width;
      const double r = b * (1 - 0x1p-40) - x->e1;
      hi = r <= 0 ? -1 : (r * r - 0x1p-100) * (1 - 0x1p-21) * (1 - 0x1p-40);
      hi = hi > 0 ? hi : -1;
    }
    t[2 * k] = histd__float_up(lo);
    t[2 * k + 1] = histd__float_down(hi);
  }
  if (x->axis2 == HISTD_FAST_NONE)
    return;
  const uint32_t n2 = x->count2;
  float *t2 = t + 2 * ((size_t)n1 + 2);
  for (uint32_t k = 0; k <= n2; k++) { /* bin k (n2: overflow) between c_k and c_(k+1) */
    const double c0 = k == 0 ? -INFINITY : k == n2 ? x->max2 : k * x->width2;
    const double c1 = k >= n2 - 1 ? (k == n2 ? INFINITY : x->max2) : (k + 1) * x->width2;
    if (x->axis2 == HISTD_FAST_PI) { /* (the infinite ends as they are) */
      t2[2 * k] = k == 0 ? -INFINITY : histd__float_up(c0 + x->m2 + 0x1p-40 * c0);
      t2[2 * k + 1] = k == n2 ? INFINITY : histd__float_down(c1 - x->m2 - 0x1p-40 * c1);
    } else {
      t2[2 * k] = (float)c0;
      t2[2 * k + 1] = (float)c1;
    }
  }
}

/* mu's margin, fcmu r + famu with r = rsqrtf(a), for pairs with a > fsmin
 * (|D32| > 4E): ez and e the float32 error bounds of dz and of the vector,
 * ed the contract's (grid_kernels.cu's "Float32 bins" says why these).
 * famu (2^-19) covers the float boundaries, the differences' roundings and
 * mu's own relative error for mu up to 1 (mu_max <= 1). */
static inline void histd__fast_mu(double ez, double e, double ed, float *fcmu, float *famu,
                                  float *fsmin) {
  *fcmu = histd__float_up((ez + e + 8 * ed) * (1 + 0x1p-18));
  *famu = 0x1p-19f;
  *fsmin = histd__float_up(fmax(16 * e * e * (1 + 0x1p-20), 0x1p-100));
}

#endif /* HISTD_FAST_BINS_H */
