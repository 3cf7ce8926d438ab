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
 *
 * Its users: the GPU grid's drain and tiled-stats' float32 pairs; both
 * plan with histd__fast_plan and bin with kernels/fast_slot.cuh.
 */
#ifndef HISTD_FAST_BINS_H
#define HISTD_FAST_BINS_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "histd/eval.h"

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
#ifdef __CUDACC__
__host__ __device__ /* (kernels size their staged copy of the tables by it) */
#endif
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

/* What a kernel's histd__fast_slot (kernels/fast_slot.cuh) reads: the
 * tables on the device, the first guesses and mu's margin. */
typedef struct histd__fast_dev {
  const float *tab;   /* histd__fast_entries (lo, hi) pairs, on the device (the caller's) */
  uint32_t count1;    /* axis 1's bins */
  uint32_t count2;    /* axis 2's (0: one axis) */
  uint32_t count;     /* the slots: below is slot count, overflow count + 1 */
  int axis2;          /* HISTD_FAST_* */
  int edges;          /* axis 1's guess: log2(a) ga + gb (edges), else sqrt(a) inv */
  float ga, gb, inv;  /* edges: half histd_edges_guess's ga, and its gb; width: fl(1 / w) */
  float inv2;         /* axis 2's guess: fl(1 / w2) */
  float cmu, amu, smin; /* (s, mu): the margin cmu / |D32| + amu, for a > smin */
} histd__fast_dev;

/* The float32 bins of a job of evaluator ev (its edges on the host), for
 * a float32 vector whose components are within ec[0..2] of the image the
 * contract takes (so |D32| within their sum, r_p's within ec[0] + ec[1],
 * |dz| within ec[2]), with ed the contract's own (2^-44 (M + B) or more,
 * sixteen times its rounding): the tables' axes x (for
 * histd__fast_tables) and the kernel's guesses and margins f (f->tab left
 * to the caller). False where they do not apply: the midpoint line of
 * sight, and explicit edges that are not a geometric row (no first guess). */
static inline bool histd__fast_plan(const histd_ev_bin *ev, const double ec[3], double ed,
                                    histd__fast_axes *x, histd__fast_dev *f) {
  const bool edges = ev->edges != NULL, two = ev->axes != HISTD_EV_D;
  if ((two && ev->midpoint) || (edges && ev->ga == 0))
    return false;
  const double e = ec[0] + ec[1] + ec[2], ez = ec[2];
  const double e1 = ev->axes == HISTD_EV_RP_PI ? ec[0] + ec[1] : e; /* axis 1's value's */
  const int axis2 = !two ? HISTD_FAST_NONE : ev->axes == HISTD_EV_RP_PI ? HISTD_FAST_PI
                                                                        : HISTD_FAST_MU;
  const histd__fast_axes ax = {.edges = ev->edges,
                               .width = ev->width,
                               .count1 = ev->count,
                               .e1 = e1 + 4 * ed + 0x1p-400,
                               .axis2 = axis2,
                               .count2 = ev->count2,
                               .width2 = ev->width2,
                               .max2 = ev->max2,
                               .m2 = (ez + 4 * ed) * (1 + 0x1p-20) + 0x1p-400};
  *x = ax;
  histd__fast_dev fd = {.tab = NULL,
                        .count1 = ev->count,
                        .count2 = two ? ev->count2 : 0,
                        .count = ev->count * (two ? ev->count2 : 1),
                        .axis2 = axis2,
                        .edges = edges,
                        .ga = 0.5f * ev->ga,
                        .gb = ev->gb,
                        .inv = edges ? 0 : (float)(1 / ev->width),
                        .inv2 = two ? (float)ev->inv2 : 0,
                        .cmu = 0,
                        .amu = 0,
                        .smin = 0};
  histd__fast_mu(ez, e, ed, &fd.cmu, &fd.amu, &fd.smin);
  *f = fd;
  return true;
}

#endif /* HISTD_FAST_BINS_H */
