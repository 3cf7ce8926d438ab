/*
 * test_f32_pair.c -- the float32 difference of src/engine/f32_pair.h
 * (tiled-stats' float32 pairs on the GPU) held on the CPU to the bounds
 * histd__f32_bounds gives, against the contract's own minimum image
 * (histd/pair.h): for every pair, each component's magnitude within e[k]
 * of the contract's (plus ed, for the contract's own rounding of the exact
 * image), and |D32| within e_x + e_y + e_z + 4 ed of the contract's d. The
 * float32 arithmetic is the kernel's source text, rounded here as the GPU
 * rounds it (-ffp-contract=off; fmaf and rintf as the device's), less the
 * device's flushed subnormals, which the bounds add apart.
 *
 * Pairs, 100,000 a case: uniform in the box; a partner whose components
 * lie on or beside half the box on one to three axes (exact halves are
 * ties, which the two images break in their own ways); points moved by up
 * to 3 boxes (unwrapped); lattice points on sixteenths of the box, off by
 * an ulp or 1e-12. Cases: a cube and a rectangular box, a box of 1e-3 and
 * one of 1e6, and open sets far from the origin and about it. Each case
 * must also come within 1/64 of its bound somewhere, so that an error
 * several times the bound could not pass unseen.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../check.h"
#include "f32_pair.h"
#include "histd/pair.h"

static uint64_t rng = 0x2611290002ull;
static double rnd(void) { return test_rand01(&rng); }

typedef struct box_case {
  const char *name;
  int kind;        /* 0 open, 1 orthorhombic, 2 triclinic */
  double len[3];   /* the box's ax, by, cz, or (open) the extent of the points */
  double origin;   /* the points' lowest corner */
  double bx, cx, cy; /* triclinic */
} box_case;

enum { PAIRS = 100000 };

/* Pair i of a case: points a and b (3 coordinates each). */
static void make_pair(const box_case *bc, size_t i, double a[3], double b[3]) {
  static const double offs[] = {0, 0x1p-52, 1e-13, 1e-10, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4};
  const size_t no = sizeof offs / sizeof offs[0];
  const double *L = bc->len;
  const double off = offs[(size_t)(rnd() * no)] * (rnd() < 0.5 ? -1 : 1);
  for (int k = 0; k < 3; k++)
    a[k] = bc->origin + L[k] * rnd();
  switch (i % 4) {
  case 0: /* uniform */
    for (int k = 0; k < 3; k++)
      b[k] = bc->origin + L[k] * rnd();
    break;
  case 1: { /* on or beside half the box, one to three axes */
    const int first = (int)(rnd() * 3), many = 1 + (int)(rnd() * 3);
    for (int k = 0; k < 3; k++) {
      const bool at = (k - first + 3) % 3 < many;
      const double v = at ? 0.5 * L[k] * (1 + off) : offs[(size_t)(rnd() * no)] * L[k];
      b[k] = a[k] + (rnd() < 0.5 ? -v : v);
    }
    break;
  }
  case 2: /* unwrapped: either point up to 3 boxes away */
    for (int k = 0; k < 3; k++) {
      b[k] = bc->origin + L[k] * rnd() + (double)((int)(rnd() * 7) - 3) * L[k];
      if (rnd() < 0.5)
        a[k] += (double)((int)(rnd() * 7) - 3) * L[k];
    }
    break;
  default: /* sixteenths of the box, off by an ulp or 1e-12 */
    for (int k = 0; k < 3; k++) {
      a[k] = bc->origin + L[k] * floor(rnd() * 16) / 16;
      b[k] = bc->origin + L[k] * floor(rnd() * 16) / 16;
      const double hair = rnd() < 0.3 ? 0 : rnd() < 0.5 ? 0x1p-52 : 1e-12;
      b[k] *= 1 + (rnd() < 0.5 ? -hair : hair);
    }
  }
}

static void run_case(const box_case *bc) {
  double(*pa)[3] = malloc(PAIRS * sizeof *pa), (*pb)[3] = malloc(PAIRS * sizeof *pb);
  double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  for (size_t i = 0; i < PAIRS; i++) {
    make_pair(bc, i, pa[i], pb[i]);
    for (int k = 0; k < 3; k++) {
      lo[k] = fmin(lo[k], fmin(pa[i][k], pb[i][k]));
      hi[k] = fmax(hi[k], fmax(pa[i][k], pb[i][k]));
    }
  }
  histd_metric m = {bc->kind, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  if (bc->kind != 0) {
    m.ax = bc->len[0], m.by = bc->len[1], m.cz = bc->len[2];
    m.bx = bc->bx, m.cx = bc->cx, m.cy = bc->cy;
    m.iax = 1 / m.ax, m.iby = 1 / m.by, m.icz = 1 / m.cz;
  }
  double c[3], e[3], ed;
  histd__f32_box B;
  const bool ok = histd__f32_bounds(&m, lo, hi, c, e, &ed, &B);
  CHECK(ok, "%s: the bounds apply", bc->name);
  if (!ok) {
    free(pa);
    free(pb);
    return;
  }
  size_t bad = 0, unsure = 0;
  double worst = 0; /* the largest component error over its bound */
  for (size_t i = 0; i < PAIRS; i++) {
    double d[3] = {HISTD_SUB(pa[i][0], pb[i][0]), HISTD_SUB(pa[i][1], pb[i][1]),
                   HISTD_SUB(pa[i][2], pb[i][2])};
    histd_min_image(&m, &d[0], &d[1], &d[2]);
    const double d64 =
        histd_pair_d(&m, pa[i][0], pa[i][1], pa[i][2], pb[i][0], pb[i][1], pb[i][2]);
    float fa[3], fb[3], f32[3];
    for (int k = 0; k < 3; k++)
      fa[k] = (float)(pa[i][k] - c[k]), fb[k] = (float)(pb[i][k] - c[k]);
    if (!histd__f32_diff(bc->kind, &B, fa[0], fa[1], fa[2], fb[0], fb[1], fb[2], f32)) {
      unsure++; /* (the contract's to take) */
      continue;
    }
    double s32 = 0, sum_e = 0;
    for (int k = 0; k < 3; k++) {
      const float f = f32[k];
      const double err = fabs(fabs((double)f) - fabs(d[k]));
      worst = fmax(worst, err / e[k]);
      if (!(err <= e[k] + ed) && bad++ < 5)
        CHECK(false, "%s: pair %zu axis %d: |%.9g| against the contract's |%.17g|, off %.3g, "
                     "bound %.3g", bc->name, i, k, (double)f, d[k], err, e[k]);
      s32 += (double)f * (double)f;
      sum_e += e[k];
    }
    const double dv = fabs(sqrt(s32) - d64);
    if (!(dv <= sum_e + 4 * ed) && bad++ < 5)
      CHECK(false, "%s: pair %zu: |D32| %.9g against the contract's d %.17g, bound %.3g",
            bc->name, i, sqrt(s32), d64, sum_e + 4 * ed);
  }
  CHECK(bad == 0, "%s: %zu pairs outside their bounds", bc->name, bad);
  CHECK(worst >= 1.0 / 64, "%s: the errors came within %.3g of the bound at most (want 1/64)",
        bc->name, worst);
  /* only triclinic steps may leave a pair to the contract: those within
   * the margin of a half-integer, far fewer than half even here, where a
   * quarter of the pairs sit on half the box by construction */
  CHECK(bc->kind == 2 ? unsure < PAIRS / 2 : unsure == 0, "%s: %zu pairs not sure", bc->name,
        unsure);
  printf("%-40s bounds %.3g %.3g %.3g; the largest error %.3f of its bound; %zu to the "
         "contract\n",
         bc->name, e[0], e[1], e[2], worst, unsure);
  free(pa);
  free(pb);
}

int main(void) {
  const box_case cs[] = {
      {"cube 10", 1, {10, 10, 10}, 0, 0, 0, 0},
      {"box 10 x 12 x 9", 1, {10, 12, 9}, 0, 0, 0, 0},
      {"cube 1e-3", 1, {1e-3, 1e-3, 1e-3}, 0, 0, 0, 0},
      {"cube 1e6, offset by 3e6", 1, {1e6, 1e6, 1e6}, 3e6, 0, 0, 0},
      {"open, 100 wide at 1e6", 0, {100, 100, 100}, 1e6, 0, 0, 0},
      {"open, 2000 wide about 0", 0, {2000, 2000, 2000}, -1000, 0, 0, 0},
      {"triclinic 10 x 11 x 9, tilts 3, -2, 4", 2, {10, 11, 9}, 0, 3, -2, 4},
      {"triclinic 1e-3, tilts of half", 2, {1e-3, 1e-3, 1e-3}, 0, 5e-4, 5e-4, -5e-4},
      {"triclinic 1e6 at 3e6, small tilts", 2, {1e6, 1.2e6, 0.9e6}, 3e6, 1e5, -2e5, 3e5},
  };
  for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++)
    run_case(&cs[i]);
  return check_finish("test_f32_pair");
}
