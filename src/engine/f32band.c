/*
 * f32band.c -- thresholds in s for the float32 estimate of a distance, the
 * one place both of its users (the cpu kernel's weighted groups, cpu.c;
 * dm-tree's leaf pairs on the GPU, kernels/dmtree_kernels.cu) take them
 * from.
 *
 * cpu.c's header derives the bound: for points p = fl32(fl64(fl64(x - c)
 * * fl64(1 / w))) of an open set whose coordinates satisfy |x - c| / w <= M,
 * and q = fl32(sqrt(s)) with s their float32 sum of squares (the sums may
 * be fused), |q - q_ref| <= A q + B with A = 6u (1 + 2^-20) and B = P +
 * 2^-50, P = 2 sqrt(3) ((u + 3.01 ud) M + 2^-149), q_ref the contract's
 * distance over w. So for a threshold thr:
 *   q >= Q+ = (thr + B) / (1 - A) gives q_ref >= q - A q - B >= thr, and
 *   q <  Q- = (thr - B) / (1 + A) gives q_ref <= q + A q + B < thr.
 * Q+ is rounded up and Q- down to float32 (with a 2^-40 margin over the
 * float64 evaluation), and each becomes the least float32 s with
 * fl32(sqrt(s)) >= Q (a bisection over bit patterns: sqrtf is correctly
 * rounded, so monotone). A loop then compares s and never takes a root:
 * s >= sp proves q >= Q+, s < sm proves q < Q-, and anything between is
 * redone in float64.
 *
 * The frame (histd__f32_frame) is the same for both users: c the centre
 * of A's and B's joint bounding box, M from its corners.
 */
#include <math.h>
#include <string.h>

#include "engine.h"
#include "fast_bins.h"

static float f32_of_bits(uint32_t bits) {
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

/* The least float32 s >= 0 with fl32(sqrt s) >= q (+inf if none). */
static float s_of_q(float q) {
  uint32_t lo = 0, hi = 0x7F800000u; /* the answer's bits lie in [lo, hi] */
  while (lo < hi) {
    const uint32_t mid = lo + (hi - lo) / 2;
    if (sqrtf(f32_of_bits(mid)) >= q)
      hi = mid;
    else
      lo = mid + 1;
  }
  return f32_of_bits(lo);
}

bool histd__f32_frame(const histd_dataset *a, const histd_dataset *b, double w,
                      double centre[3], double *m) {
  const double iw = 1.0 / w;
  double span = 0, mm = 0;
  for (int ax = 0; ax < 3; ax++) {
    const double lo = a->min[ax] < b->min[ax] ? a->min[ax] : b->min[ax];
    const double hi = a->max[ax] > b->max[ax] ? a->max[ax] : b->max[ax];
    centre[ax] = 0.5 * lo + 0.5 * hi;
    span = hi - lo > span ? hi - lo : span;
    const double l = fabs((lo - centre[ax]) * iw), h = fabs((hi - centre[ax]) * iw);
    mm = l > mm ? l : mm;
    mm = h > mm ? h : mm;
  }
  *m = mm * (1 + 0x1p-50); /* M: the exact |x - c| / w from the rounded ones */
  return w >= 0x1p-480 && w <= 0x1p1000 && span <= 0x1p500 && isfinite(span);
}

double histd__f32_open_pnt(double m) {
  const double u = 0x1p-24, ud = 0x1p-53, r3 = 1.7320508075688774; /* > sqrt(3) */
  return 2 * r3 * ((u + 3.01 * ud) * m + 0x1p-149);
}

void histd__f32_band(double thr, double pnt, float *sp, float *sm) {
  const double a = 6 * 0x1p-24 * (1 + 0x1p-20), b = pnt + 0x1p-50;
  const double qp = (thr + b) / (1 - a) * (1 + 0x1p-40), qm = (thr - b) / (1 + a) * (1 - 0x1p-40);
  const float fp = histd__float_up(qp), fm = histd__float_down(qm);
  *sp = s_of_q(fp);
  *sm = qm > 0 ? s_of_q(fm) : 0;
}
