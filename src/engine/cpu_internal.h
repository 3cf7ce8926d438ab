/*
 * cpu_internal.h -- the kernel "cpu" shared between cpu.c (planning,
 * threads, tasks, the portable loops) and cpu_simd.c (the AVX2 and AVX-512
 * loops, compiled for their ISA with target attributes and chosen at run
 * time). Nothing outside src/engine and tests/engine includes it.
 */
#ifndef HISTD_CPU_INTERNAL_H
#define HISTD_CPU_INTERNAL_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"

/* Which instruction set the inner loops use. */
typedef enum cpu_isa {
  CPU_ISA_AUTO = 0, /* the best this machine supports               */
  CPU_ISA_GENERIC,  /* portable C, any CPU                            */
  CPU_ISA_AVX2,     /* x86-64 with AVX2 and FMA                        */
  CPU_ISA_AVX512    /* x86-64 with AVX-512 F/DQ/VL                     */
} cpu_isa;

/* Which arithmetic the pairs take. */
typedef enum cpu_path {
  CPU_PATH_AUTO = 0, /* float32 with the near-edge redo when the bound allows */
  CPU_PATH_F32,      /* float32 estimate (+ float64 redo of near-edge pairs)  */
  CPU_PATH_F64       /* the contract's float64 arithmetic on every pair       */
} cpu_path;

/* The most memory a run's private per-thread histograms may take together:
 * a run gets fewer threads than it asked for rather than more (each thread
 * holds about 4 bytes per bucket; 16 Mi buckets are 64 MiB a thread). */
#define CPU_HIST_BUDGET_BYTES ((size_t)1 << 30)

/* Knobs for tests; histd__cpu_run uses all-AUTO. */
typedef struct cpu_options {
  cpu_isa isa;
  cpu_path path; /* F32 is only honoured when the error bound allows it */
  uint32_t tile; /* points per tile, 0 = default                         */
  uint32_t copies; /* histogram copies (power of two <= lanes), 0 = default */
  int pairs;       /* bucket-pair table: 0 = when it fits, -1 = never, 1 = force */
} cpu_options;

/* What the kernel decided and what it saw, for tests and the benchmark. */
typedef struct cpu_report {
  cpu_isa isa;
  cpu_path path;
  double delta; /* the near-edge half-width, in buckets (F32 path) */
} cpu_report;

/* What a statistics problem adds to the float32 loops (cpu_ctx.kind). */
enum {
  CPU_K_PERIODIC = 1u, /* orthorhombic minimum image in float32 (cpu.c)  */
  CPU_K_EDGES = 2u,    /* explicit edges through the cell table (cpu.c)  */
  CPU_K_WEIGHTS = 4u,  /* fl(w_i w_j) into per-slot accumulators, folded  */
  CPU_K_LOG = 8u,      /* with CPU_K_EDGES: log-spaced edges, the slot from
                        * an estimate of log2 q instead of the table      */
  CPU_K_GROUPS = 16u   /* with CPU_K_WEIGHTS, open: the points in Morton
                        * order, pairs of groups of 16 against thresholds
                        * in s (cpu.c's "Groups")                         */
};
#define CPU_EDGE_AMBIG 0x80000000u /* a table cell holding two edges or more */

/* The plan every inner loop reads. */
typedef struct cpu_ctx {
  /* F32 path: coordinates centred on the bounding-box centre (periodic:
   * wrapped into the box) and divided by the scale `width`, so the
   * distance is the bucket coordinate q itself. px.. are A's (the i
   * points), qx.. B's (the j points; the same arrays for self pairs). */
  const float *px, *py, *pz;
  const float *qx, *qy, *qz;
  /* The datasets' own coordinates, for the float64 path and the redo. */
  const double *x, *y, *z;
  const double *xb, *yb, *zb;
  histd_metric metric; /* the contract's metric, for the redo            */
  double width;        /* WIDTH: the bucket width; EDGES: the scale w_e  */
  double inv_width;    /* fl(1 / width), for histd_bin_width's shortcut   */
  unsigned kind;       /* CPU_K_* bits; 0 for the plain histogram        */
  float lx, ly, lz;    /* CPU_K_PERIODIC: the box lengths / width        */
  /* CPU_K_EDGES: slot 0 is `below`, bin k is slot k + 1 (so `buckets` is
   * count + 1); etab[cell] holds in its low half a slot (| CPU_EDGE_AMBIG),
   * in its high half the float32 bits of the one edge / w_e inside the
   * cell's reach, or of +inf (one 64-bit gather brings both). cell =
   * (bits(q) >> eshift) - ebase, clamped below at 0; q is clamped above at
   * etop. */
  const double *edges;
  const uint64_t *etab;
  uint32_t eshift, ebase;
  float etop, erel, eabs; /* near an edge: |q - thr| < (q + thr) erel + eabs */
  /* CPU_K_LOG (cpu.c's bound): from the sum of squares s, P = ((getexp(s)
   * - lg0) + (L - lf0)) lc1, L = cpu_log2_1p(getmant(s) - 1), estimates
   * the edge coordinate of sqrt s (edge k at P = k); a lane is redone when
   * |P - rint(P)| < ltau, or when lsbelow < s < lsmin; s <= lsbelow is below. */
  float lg0, lf0, lc1, ltau, lsmin, lsbelow;
  /* CPU_K_WEIGHTS: A's and B's weights (B's followed by 16 zeros, for a whole
   * vector). At byte offset wsum_off in h sit the thread's records of
   * {pairs, weights} (cpu_wacc, below), then the Neumaier sums and
   * compensations, `stride` doubles each. */
  const double *wa, *wb;
  /* CPU_K_GROUPS: gn thresholds in s, ascending: a lane with s >= gsp[t]
   * is at or past threshold t for the contract, one with s < gsm[t] below
   * it, one in between is redone; the slot is the number passed. */
  const float *gsp, *gsm;
  uint32_t gn;
  size_t wsum_off;
  uint32_t wshift, wfold; /* wfold: vector steps between two folds      */
  uint32_t buckets;   /* index `buckets` is overflow, `buckets + 1` trash */
  uint32_t stride;    /* uint32 counters per histogram copy (>= buckets+2) */
  uint32_t copies;    /* histogram copies, a power of two <= 16           */
  /* pair mode (AVX-512 F32, few buckets): h is a pair_stride^2 table of
   * bucket pairs, then a 1-D histogram at redo_base for the redone pairs.
   * Otherwise pair_stride = 0 and redo_base = 0 (copy 0). */
  uint32_t pair_stride;
  uint32_t redo_base;
  uint32_t hist_size; /* uint32 counters in h                          */
  float clamp;        /* q is clamped to this half-integer before floor    */
  float delta;        /* |q - rint(q)| < delta and q >= 0.5: redo in f64   */
  bool exact;         /* false: precision "fast", no redo                 */
} cpu_ctx;

/*
 * One block of pairs: i in [i0, i1), j in [j0, j1), and j > i when diag.
 * Counts into h (copies x stride uint32 counters) and adds the number of
 * pairs redone in float64 to *refined.
 */
typedef void (*cpu_block_fn)(const cpu_ctx *c, size_t i0, size_t i1, size_t j0,
                             size_t j1, bool diag, uint32_t *h, uint64_t *refined);

/* The contract for one pair (histd/pair.h), as a slot: the bucket clamped
 * to `buckets` (= overflow); with edges, 0 below, k + 1 for bin k. */
static inline uint32_t cpu_exact_index(const cpu_ctx *c, size_t i, size_t j) {
  double d = histd_pair_d(&c->metric, c->x[i], c->y[i], c->z[i], c->xb[j], c->yb[j], c->zb[j]);
  if (c->kind & CPU_K_EDGES) {
    uint32_t k = histd_bin_edges(d, c->edges, c->buckets - 1);
    return k == HISTD_BIN_BELOW ? 0 : k == HISTD_BIN_OVER ? c->buckets : k + 1;
  }
  uint32_t b = histd_bin_width(d, c->width, c->inv_width, c->buckets);
  return b == HISTD_BIN_OVER ? c->buckets : b;
}

/*
 * log2(1 + t) for t in [0, 1) in float32: a degree-6 polynomial (a
 * Chebyshev fit) by Horner's rule with fused multiply-adds, the same
 * operations in this order in cpu_simd.c's vector loop. Within
 * CPU_LOG2_ERR of log2(1 + t) for every float32 t in [0, 1) (t = m - 1 for
 * a mantissa m in [1, 2): 2^23 values, all checked by tests/engine's
 * test_cpu_paths against libm's log2 in float64).
 */
#define CPU_LOG2_ERR 0x1p-17
static const float cpu_log2_coef[7] = {5.065611276222626e-06f, 1.4423954486846924f,
                                       -0.7169868350028992f,   0.45385614037513733f,
                                       -0.27235302329063416f,  0.11790508776903152f,
                                       -0.02482558600604534f};
static inline float cpu_log2_1p(float t) {
  float v = cpu_log2_coef[6];
  for (int k = 5; k >= 0; k--)
    v = fmaf(v, t, cpu_log2_coef[k]);
  return v;
}

/* The thread's weight arrays in h (CPU_K_WEIGHTS): the records, then the
 * Neumaier sums and their compensations (`stride` doubles each). A record
 * is two doubles, {pairs, sum of fl(w_i w_j)}: a lane counts its pair and
 * adds its weight in one 16-byte read-modify-write, and the fold adds the
 * pairs (whole numbers below 2^53) to the counts. Slot s, lane l adds into
 * record (s << wshift) + (l & (2^wshift - 1)), and a lane not counted here
 * (past the end, or redone) into the lane's spare (stride << wshift) + l,
 * so that no two lanes of a vector form a chain of dependent adds through
 * memory. cpu_wacc is the records' size in doubles. (Measured: the counts
 * and the weights in two tables, two read-modify-writes a lane, cost 2.5x
 * the lane's count alone; two accumulators a cell of the bucket-pair
 * table, one RMW for two lanes, were slower still: a table of 80 bins is
 * 107 KB, beyond L1.) */
static inline size_t cpu_wacc(const cpu_ctx *c) {
  return 2 * (((size_t)c->stride << c->wshift) + 16);
}
static inline double *cpu_wsums(const cpu_ctx *c, uint32_t *h) {
  return (double *)(void *)((char *)h + c->wsum_off);
}
/* CPU_K_GROUPS: the groups' sums a slot's (stride doubles), after the
 * Neumaier sums and compensations; folded with the records. */
static inline double *cpu_gsums(const cpu_ctx *c, uint32_t *h) {
  return cpu_wsums(c, h) + cpu_wacc(c) + 2 * (size_t)c->stride;
}
/* The bytes of h with weights: the counts, the records, the Neumaier sums
 * and compensations, the groups' sums. */
static inline size_t cpu_wbytes(const cpu_ctx *c) {
  return c->wsum_off + (cpu_wacc(c) + 3 * (size_t)c->stride) * sizeof(double);
}

/*
 * The weights' bound. The loops add each pair's fl(w_i w_j) to a record
 * and fold the records into Neumaier sums (a slot's) every wfold vector
 * steps and at the end of each block, so a record's sum is a plain float64
 * sum of at most n = 4096 products: a step adds at most one to a lane's
 * copy (wfold 4096), 16 to the one copy (wfold 256); its pair count, a
 * whole number at most 4096, is exact. The redone pairs go straight into
 * the Neumaier sums. The recursive sum of n
 * terms is within (n - 1) ud
 * of their sum of magnitudes and each product within ud of w_i w_j
 * (ud = 2^-53), so each fold adds within n ud of its sum of |w_i w_j|;
 * Neumaier's sum over folds (and the threads' merge) adds 2 ud of the total
 * plus second-order terms. A bin's sum is thus within 4.6e-13 of the exact
 * one relative to its sum of |w_i w_j|. The groups (CPU_K_GROUPS) do
 * better: a lane's register sums at most GA = 16 products, a tree of depth
 * 4 reduces the 16 lanes, and a slot's groups' sum takes at most GFOLD =
 * 256 of those before the fold: within (16 + 4 + 256) ud.
 */

/* The ISA loops (cpu_simd.c); NULL where the compiler or CPU lacks them. */
/* pairs: the AVX-512 float32 loop that counts bucket pairs (pair_stride). */
/* kind (CPU_K_*): the statistics loops (AVX-512 float32 only; NULL elsewhere). */
cpu_block_fn histd__cpu_simd_block(cpu_isa isa, cpu_path path, bool exact, bool pairs,
                                   unsigned kind);
bool histd__cpu_isa_supported(cpu_isa isa);

/* The kernel with test knobs; report may be NULL. */
int histd__cpu_run_opts(const histd_problem *p, const histd_exec *ex,
                        const histd_control *ctl, const cpu_options *opt,
                        histd_result *res, cpu_report *report, char *msg,
                        size_t msglen);

const char *histd__cpu_isa_name(cpu_isa isa);

#endif
