/*
 * test_tc_band.c -- the tensor-core pair's exactness argument
 * (kernels/tc_plan.h), played on the CPU at its worst.
 *
 * The GPU probe (bench/tc_probe.cu) runs the arithmetic on a device, whose
 * tensor cores round kindly; this test plays it where every error reaches
 * its bound. Each pair of a set goes through the same Morton tiles, frames,
 * TF32 splits and float32 steps as on the device (written out again here),
 * then the matrix product's sum is moved by the largest error the bound's
 * tensor-core model allows (2^-18 of its operands' magnitudes, either way)
 * and rsqrtf's result by its own (either way), and the code is formed with
 * a round-down FMA as on the device. The bucket each pair then gets --
 * counted from the code, or refined in binary64 where its tile pair's band
 * says so -- must be the contract's (written out here), in all four
 * corners; the split's error must stay within the bound's share; and the
 * distance's error must stay within its tile pair's E (or, under half a
 * bucket, off every edge). Sets: uniform, clumps, far from the origin,
 * duplicates, integer lattices whose distances fall on edges (also far
 * from the origin), and sets whose tiles are too wide for the path, which
 * the plan must decline.
 */
#include <fenv.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "../definition.h"
#include "../pointsets.h"
#include "../../kernels/tc_plan.h"

#define EPS_R 0x1p-22 /* rsqrtf's error: the CUDA Guide's 2 ulp */

static float tf32(float v) { /* cvt.rna.tf32.f32: nearest, ties away */
  uint32_t u;
  memcpy(&u, &v, 4);
  u = (u + 0x1000u) & ~0x1FFFu;
  memcpy(&v, &u, 4);
  return v;
}

static uint32_t fbits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

/* The contract's q = fl(sqrt(s)) / w of a pair (its bucket is floor(q)). */
static double contract_q(const tc_tiles *t, uint32_t i, uint32_t j, double w) {
  return definition_distance(t->x[i], t->y[i], t->z[i], t->x[j], t->y[j], t->z[j]) / w;
}

typedef struct stats {
  uint64_t pairs, wide, wrong[4], refined, outside, split_over;
  double worst_use; /* the largest |q~ - q_c| / E seen */
} stats;

/* One pair (i in anchor tile I, j in partner tile J) in the four corners. */
static void play_pair(const tc_tiles *t, const tc_job *jb, const tc_unit *u, uint32_t i,
                      uint32_t j, const float dl[3], double w, stats *st) {
  const double E = u->e;
  const float *la = t->loc + 4 * (size_t)i, *lb = t->loc + 4 * (size_t)j;
  float A[3] = {la[0], la[1], la[2]}, B[3];
  for (int a = 0; a < 3; a++)
    B[a] = lb[a] + dl[a]; /* one float32 rounding */
  /* the operands, as the device forms them */
  long double S = 0, M = 0;
  double qa = (double)A[0] * A[0] + (double)A[1] * A[1] + (double)A[2] * A[2];
  float qah = tf32((float)qa), qal = tf32((float)(qa - (double)qah));
  float X = B[0], Y = B[1], Z = B[2];
  float qb = fmaf(X, X, fmaf(Y, Y, Z * Z));
  float qbh = tf32(qb), qbl = tf32(qb - qbh);
  long double ops[13];
  int no = 0;
  for (int a = 0; a < 3; a++) {
    float ah = tf32(A[a]), al = tf32(A[a] - ah);
    float b = -2.f * B[a], bh = tf32(b), bl = tf32(b - bh);
    ops[no++] = (long double)ah * bh;
    ops[no++] = (long double)al * bh;
    ops[no++] = (long double)ah * bl;
  }
  ops[no++] = qah;
  ops[no++] = qal;
  ops[no++] = qbh;
  ops[no++] = qbl;
  for (int k = 0; k < no; k++) {
    S += ops[k];
    M += fabsl(ops[k]);
  }
  /* the split's share of the bound: 3.003 * 2^-22 (|A'| + |B'|)^2 */
  long double sp = 0, na = 0, nb = 0;
  for (int a = 0; a < 3; a++) {
    long double d = (long double)A[a] - B[a];
    sp += d * d;
    na += (long double)A[a] * A[a];
    nb += (long double)B[a] * B[a];
  }
  long double nsum = sqrtl(na) + sqrtl(nb);
  if (fabsl(S - sp) > 3.003L * 0x1p-22L * nsum * nsum)
    st->split_over++;
  const double C = u->bias;
  const double qc = contract_q(t, i, j, w);
  const uint32_t want = (uint32_t)floor(qc);
  const double x = sqrt((double)sp);
  for (int corner = 0; corner < 4; corner++) {
    double sgn_s = corner & 1 ? 1 : -1, sgn_r = corner & 2 ? 1 : -1;
    /* the sum, off by 98% of the model's bound (the float32 rounding of
     * the result is inside the other 2%) */
    long double bound = (long double)0x1p-18 * (M + C);
    float v = (float)((long double)C + S + sgn_s * 0.98L * bound);
    CHECK(v >= FLT_MIN, "the sum %g of pair (%u, %u) is not a positive normal float", v, i, j);
    if (!(v >= FLT_MIN))
      continue;
    /* rsqrtf, off by 70% of its bound (plus at most 25% by its rounding) */
    float r = (float)((1.0L / sqrtl((long double)v)) * (1 + sgn_r * 0.7L * EPS_R));
    uint32_t G = u->g;
    float magic = (float)(ldexp(1.0, 23 - (int)jb->k) + G * ldexp(1.0, -(int)jb->k));
    fesetround(FE_DOWNWARD);
    float code = fmaf(v, r, magic);
    fesetround(FE_TONEAREST);
    uint32_t c = fbits(code), row = c >> jb->k, thresh = 2 * G + 1;
    uint32_t got;
    if ((c & jb->mask) < thresh && row != jb->rowbase) {
      got = want; /* refined: the contract itself */
      if (corner == 0)
        st->refined++;
    } else {
      got = row - jb->rowbase;
    }
    if (got != want)
      st->wrong[corner]++;
    /* the bound itself */
    double qt = (double)v * (double)r;
    if (x >= 0.5) {
      double use = fabs(qt - qc) / E;
      if (use > st->worst_use)
        st->worst_use = use;
      if (use > 1)
        st->outside++;
    } else if (!(qt < 0.75 && qc < 1)) {
      st->outside++;
    }
  }
  st->pairs++;
}

/* Every pair of ds, tile pair by tile pair as the kernel meets them;
 * min_tc: the least share of the pairs the tensor-core path must take. */
static void play_set(const char *name, histd_dataset *ds, double w, double min_tc) {
  tc_tiles t;
  CHECK(tc_tiles_build(ds, w, &t) == 0, "%s: tiles", name);
  tc_job jb = tc_job_plan(histd_dataset_diagonal(ds) / w, EPS_R, 1);
  CHECK(jb.ok, "%s: the plan declined", name);
  stats st;
  memset(&st, 0, sizeof st);
  const double iw = 1.0 / w;
  double rmax = 0;
  for (uint32_t I = 0; jb.ok && I < t.tiles; I++)
    for (uint32_t J = I; J < t.tiles; J++) {
      float dl[3];
      tc_unit u = tc_unit_plan(&jb, tc_unit_gap(t.cen, I, J, iw, dl), t.rad[I], t.rad[J]);
      rmax = t.rad[I] > rmax ? t.rad[I] : rmax;
      uint32_t i1 = (I + 1) * TC_TILE < t.n ? (I + 1) * TC_TILE : t.n;
      uint32_t j1 = (J + 1) * TC_TILE < t.n ? (J + 1) * TC_TILE : t.n;
      for (uint32_t i = I * TC_TILE; i < i1; i++)
        for (uint32_t j = (I == J ? i + 1 : J * TC_TILE); j < j1; j++) {
          if (u.tc) {
            play_pair(&t, &jb, &u, i, j, dl, w, &st);
          } else { /* binary64: the contract itself */
            st.wide++;
            st.pairs++;
          }
        }
    }
  uint64_t pairs = (uint64_t)t.n * (t.n - 1) / 2;
  CHECK_EQ_U64(st.pairs, pairs, "pairs met");
  for (int c = 0; c < 4; c++)
    CHECK(st.wrong[c] == 0, "%s: %llu pairs in the wrong bucket (corner %d)", name,
          (unsigned long long)st.wrong[c], c);
  CHECK(st.outside == 0, "%s: %llu pair errors outside their tile pair's bound", name,
        (unsigned long long)st.outside);
  CHECK(st.split_over == 0, "%s: %llu pairs whose splits lose more than the bound's share",
        name, (unsigned long long)st.split_over);
  double tc = pairs ? 1.0 - (double)st.wide / (double)pairs : 1;
  CHECK(tc >= min_tc, "%s: the tensor cores took %.3f of the pairs, want >= %.3f", name, tc,
        min_tc);
  uint64_t met = st.pairs - st.wide;
  printf("  %-20s n=%-5u w=%-7g radius<=%-6.2f k=%u: tensor cores %.3f of %llu pairs, "
         "refined %.2e of theirs, worst error %.2f of E\n",
         name, t.n, w, rmax, jb.k, tc, (unsigned long long)pairs,
         (double)st.refined / (double)(met ? met : 1), st.worst_use);
  tc_tiles_free(&t);
}

static void lattice(histd_dataset *ds, uint32_t m, double ox, double oy, double oz) {
  size_t k = 0;
  for (uint32_t a = 0; a < m; a++)
    for (uint32_t b = 0; b < m; b++)
      for (uint32_t c = 0; c < m; c++, k++) {
        ds->x[k] = ox + a;
        ds->y[k] = oy + b;
        ds->z[k] = oz + c;
      }
  histd_dataset_finish(ds, NULL, 0);
}

int main(void) {
  histd_dataset ds;
  const size_t n = 2100; /* 9 tiles, the last one partial */
  /* w against the set's extent: tiles of 256 of 2,100 points span half of
   * it, so only wide buckets keep tiles within a few bucket widths */
  const struct {
    shape_kind shape;
    double side, w, min_tc;
  } sets[] = {
      {SHAPE_UNIFORM, 23000, 4000, 0.99},   {SHAPE_UNIFORM, 23000, 2000, 0.5},
      {SHAPE_UNIFORM, 23000, 500, 0},       {SHAPE_CLUSTERED, 23000, 300, 0.5},
      {SHAPE_FAR, 1000, 200, 0.99},         {SHAPE_DUPLICATES, 50, 7, 0.99},
      {SHAPE_LATTICE, 0, 1, 0.3},           {SHAPE_LATTICE, 0, 2.5, 0.99},
  };
  for (size_t s = 0; s < sizeof sets / sizeof sets[0]; s++) {
    CHECK(histd_dataset_alloc(&ds, n, NULL, 0) == 0, "alloc");
    pointset_fill(&ds, sets[s].shape, sets[s].side, 7 + s);
    play_set(shape_names[sets[s].shape], &ds, sets[s].w, sets[s].min_tc);
    histd_dataset_free(&ds);
  }
  /* an integer lattice far from the origin: every distance sqrt(integer),
   * many exactly on an edge */
  CHECK(histd_dataset_alloc(&ds, 13 * 13 * 13, NULL, 0) == 0, "alloc");
  lattice(&ds, 13, 1e5, -3e4, 7);
  play_set("lattice far, w=1", &ds, 1, 0);
  play_set("lattice far, w=2", &ds, 2, 0.5);
  play_set("lattice far, w=3", &ds, 3, 0.99);
  play_set("lattice far, w=sqrt8", &ds, sqrt(8.0), 0.99);
  histd_dataset_free(&ds);
  /* a dense uniform set with one point far out: its tile is wide, the rest
   * stay on the tensor cores */
  CHECK(histd_dataset_alloc(&ds, n, NULL, 0) == 0, "alloc");
  pointset_fill(&ds, SHAPE_UNIFORM, 1000, 99);
  ds.x[17] = 9e4;
  histd_dataset_finish(&ds, NULL, 0);
  play_set("uniform, one far out", &ds, 150, 0.8);
  histd_dataset_free(&ds);
  return check_finish("test_tc_band");
}
