/*
 * test_fast_bins.c -- the float32 bins' tables (src/engine/fast_bins.h),
 * which let the GPU grid bin a pair from float32 values, held to the
 * contract without a GPU.
 *
 * Pairs are placed on and beside every boundary of d, r_p, pi and mu (off
 * by 0, an ulp, and 1e-13 to 1e-4 relative) and at random, with
 * coordinates up to 1000; each pair's slot comes from the definition
 * (definition.h). A kernel's float32 values for the pair may be any that
 * the error model of grid_kernels.cu allows: the vector within E of the
 * exact difference (E the sum of per-component bounds), its square
 * rounded by up to 3.01 2^-24 relative, |dz| within e_z, and rsqrtf off
 * by up to 2 ulp. Wherever some value in that range would be binned by
 * the tables (whatever the first guess), the slot must be the
 * definition's. For mu, whose margin depends on the pair, the extremes of
 * each range are tried. The tables must also decide most random pairs.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../check.h"
#include "../definition.h"
#include "fast_bins.h"

static uint64_t rng = 0x2611290001ull;
static double rnd(void) { return test_rand01(&rng); }

/* The model's bounds, the per-component error of the float32 vector and
 * the contract's own (ed, as the engine sets it for coordinates up to
 * 1000: 2^-44 (M + B)(1 + rho)) */
static const double EC = 2e-5, ED = 0x1p-44 * 1000 * 2, TAU = 3.01 * 0x1p-24;

typedef struct cfg {
  const char *name;
  int axes; /* DEF_D, DEF_RP_PI, DEF_S_MU */
  const double *edges;
  double width;
  uint32_t n1, n2;
  double max2;
} cfg;

static float up(float f) { return nextafterf(f, INFINITY); }
static float down(float f) { return nextafterf(f, -INFINITY); }

/* The least float at or above x, the greatest at or below. */
static float ceil_f(long double x) {
  const float f = (float)x;
  return (long double)f < x ? up(f) : f;
}
static float floor_f(long double x) {
  const float f = (float)x;
  return (long double)f > x ? down(f) : f;
}

/* Whether some float a in [amin, amax] has lo < a < hi: the narrowed
 * range in *a0, *a1. */
static int meets(float lo, float hi, float amin, float amax, float *a0, float *a1) {
  if (!(lo < hi)) /* (as the kernel's a > lo && a < hi: none where either is NaN) */
    return 0;
  *a0 = fmaxf(up(lo), amin);
  *a1 = fminf(down(hi), amax);
  return *a0 <= *a1;
}

static uint64_t decided, tried;

/* One pair (p, q) under c's tables t against the definition. */
static void pair(const cfg *c, const float *t, float fcmu, float famu, float fsmin,
                 const double p[3], const double q[3]) {
  const def_box open = {0, 0, 0, 0, 0, 0, 0};
  double u;
  const uint32_t n2 = c->axes == DEF_D ? 1 : c->n2;
  const uint32_t want = definition_slot2(c->axes, 0, &open, c->width, c->edges, c->n1, c->max2,
                                         n2, p[0], p[1], p[2], q[0], q[1], q[2], &u);
  const uint32_t below = c->n1 * n2, over = below + 1;
  long double dx = (long double)p[0] - q[0], dy = (long double)p[1] - q[1],
              dz = (long double)p[2] - q[2];
  const long double len1 = sqrtl(dx * dx + dy * dy + (c->axes == DEF_RP_PI ? 0 : dz * dz));
  const double e1 = (c->axes == DEF_RP_PI ? 2 : 3) * EC;
  const long double l0 = len1 > e1 ? len1 - e1 : 0, l1 = len1 + e1;
  const float amin = ceil_f(l0 * l0 * (1 - TAU)), amax = floor_f(l1 * l1 * (1 + TAU));
  const long double pz = fabsl(dz);
  const float pmin = ceil_f(pz > EC ? pz - EC : 0), pmax = floor_f(pz + EC);
  tried++;
  int any = 0;
  for (uint32_t k = 0; k <= c->n1 + 1; k++) { /* axis 1 at position k: bin k - 1 */
    float a0, a1;
    if (!meets(t[2 * k], t[2 * k + 1], amin, amax, &a0, &a1))
      continue;
    if (k == c->n1 + 1) { /* overflow, whatever axis 2 */
      CHECK(want == over, "%s: a in [%a, %a] binned as overflow, the definition's slot %u",
            c->name, a0, a1, want);
      any = 1;
      continue;
    }
    if (c->axes == DEF_D) {
      const uint32_t slot = k == 0 ? below : k - 1;
      CHECK(want == slot, "%s: a in [%a, %a] binned in %u, the definition's %u", c->name, a0,
            a1, slot, want);
      any = 1;
      continue;
    }
    const float *t2 = t + 2 * ((size_t)c->n1 + 2);
    for (uint32_t k2 = 0; k2 <= c->n2; k2++) {
      const float lo = t2[2 * k2], hi = t2[2 * k2 + 1];
      int hit = 0;
      if (c->axes == DEF_RP_PI) { /* the margins are in the table */
        float v0, v1;
        hit = meets(lo, hi, pmin, pmax, &v0, &v1);
      } else { /* mu = pz rsqrtf(a), at the extremes of a, pz and rsqrtf's error */
        const float as[2] = {a0, a1}, ps[2] = {pmin, pmax};
        const double es[3] = {-0x1p-22, 0, 0x1p-22};
        for (int i = 0; i < 4 && !hit; i++)
          for (int j = 0; j < 3 && !hit; j++) {
            const float a = as[i & 1], pzf = ps[i >> 1 & 1];
            if (!(a > fsmin))
              continue;
            const float r = (float)(1 / sqrt((double)a) * (1 + es[j]));
            const float v = pzf * r, mg = fmaf(fcmu, r, famu);
            hit = v - lo > mg && hi - v > mg;
          }
      }
      if (!hit)
        continue;
      const uint32_t slot = k2 == c->n2 ? over : k == 0 ? below : (k - 1) * c->n2 + k2;
      CHECK(want == slot, "%s: binned in slot %u (axis 1 at %u, axis 2 at %u), the "
            "definition's %u", c->name, slot, k, k2, want);
      any = 1;
    }
  }
  decided += any;
}

/* A vector of length s (line of sight z: mu the cosine to z), or with
 * r_p and pi (mu < 0). */
static void place(double p[3], double q[3], double s, double mu, double rp, double pi) {
  const double phi = 6.283185307179586 * rnd(), zs = rnd() < 0.5 ? -1 : 1;
  double v[3];
  if (mu >= 0) {
    const double sn = sqrt(1 - mu * mu);
    v[0] = s * sn * cos(phi), v[1] = s * sn * sin(phi), v[2] = zs * s * mu;
  } else {
    v[0] = rp * cos(phi), v[1] = rp * sin(phi), v[2] = zs * pi;
  }
  for (int k = 0; k < 3; k++) {
    p[k] = 2000 * rnd() - 1000;
    q[k] = p[k] + v[k];
  }
}

static void run(const cfg *c) {
  histd__fast_axes x = {c->edges, c->width, c->n1, 3 * EC + 4 * ED + 0x1p-400, HISTD_FAST_NONE,
                        c->axes == DEF_D ? 0 : c->n2, 0, c->max2,
                        (EC + 4 * ED) * (1 + 0x1p-20) + 0x1p-400};
  if (c->axes == DEF_RP_PI)
    x.e1 = 2 * EC + 4 * ED + 0x1p-400, x.axis2 = HISTD_FAST_PI;
  if (c->axes == DEF_S_MU)
    x.axis2 = HISTD_FAST_MU;
  if (c->axes != DEF_D)
    x.width2 = c->max2 / c->n2;
  float *t = malloc(histd__fast_entries(x.count1, x.count2) * 2 * sizeof(float));
  histd__fast_tables(&x, t);
  float fcmu, famu, fsmin;
  histd__fast_mu(EC, 3 * EC, ED, &fcmu, &famu, &fsmin);
  static const double offs[] = {0,    0x1p-52, 1e-13, 1e-10, 1e-8, 1e-7,
                                3e-7, 1e-6,    3e-6,  1e-5,  3e-5, 1e-4};
  const int no = (int)(sizeof offs / sizeof offs[0]);
  double p[3], q[3];
  const uint64_t f0 = (uint64_t)check_failures;
  for (int i = 0; i < 60000; i++) { /* on and beside the boundaries */
    const double d1 = offs[(int)(rnd() * no)] * (rnd() < 0.5 ? -1 : 1);
    const double d2 = offs[(int)(rnd() * no)] * (rnd() < 0.5 ? -1 : 1);
    const uint32_t j = (uint32_t)(rnd() * (c->n1 + 1));
    const double b = (c->edges != NULL ? c->edges[j] : j * c->width) * (1 + d1);
    if (c->axes == DEF_RP_PI) {
      place(p, q, 0, -1, b, (uint32_t)(rnd() * (c->n2 + 1)) * (c->max2 / c->n2) * (1 + d2));
    } else {
      const double mu = fmin(1, (uint32_t)(rnd() * (c->n2 + 1)) * (c->max2 / c->n2) * (1 + d2));
      place(p, q, b, c->axes == DEF_S_MU ? fmax(mu, 0) : rnd(), 0, 0);
    }
    pair(c, t, fcmu, famu, fsmin, p, q);
  }
  decided = tried = 0;
  const double top = c->edges != NULL ? c->edges[c->n1] : c->n1 * c->width;
  for (int i = 0; i < 20000; i++) { /* at random within reach */
    if (c->axes == DEF_RP_PI)
      place(p, q, 0, -1, top * rnd(), c->max2 * rnd());
    else
      place(p, q, top * rnd(), rnd(), 0, 0);
    pair(c, t, fcmu, famu, fsmin, p, q);
  }
  printf("%s: %llu checks failed; %.1f%% of random pairs decided\n", c->name,
         (unsigned long long)(check_failures - f0), 100.0 * decided / tried);
  CHECK(decided > 0.9 * tried, "%s: the tables decide %llu of %llu random pairs", c->name,
        (unsigned long long)decided, (unsigned long long)tried);
  free(t);
}

int main(void) {
  double edges[26];
  for (int k = 0; k <= 25; k++)
    edges[k] = 0.1 * pow(190, k / 25.0);
  const cfg cs[] = {
      {"d, log edges", DEF_D, edges, 0, 25, 0, 0},
      {"d, width bins", DEF_D, NULL, 0.76, 25, 0, 0},
      {"rp_pi, log edges, pi bins of 1", DEF_RP_PI, edges, 0, 25, 8, 8},
      {"rp_pi, width bins", DEF_RP_PI, NULL, 0.76, 25, 8, 8},
      {"s_mu, log edges, mu bins of 1/10", DEF_S_MU, edges, 0, 25, 10, 1},
      {"s_mu, width bins, mu_max 1/2", DEF_S_MU, NULL, 0.76, 25, 5, 0.5},
  };
  for (size_t c = 0; c < sizeof cs / sizeof cs[0]; c++)
    run(&cs[c]);
  return check_finish("test_fast_bins");
}
