/*
 * cpu_internal.h -- the kernel "cpu" shared between cpu.c (planning,
 * threads, tasks, the portable loops) and cpu_simd.c (the AVX2 and AVX-512
 * loops, compiled for their ISA with target attributes and chosen at run
 * time). Nothing outside src/engine and tests/engine includes it.
 */
#ifndef HISTD_CPU_INTERNAL_H
#define HISTD_CPU_INTERNAL_H

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

/* The plan every inner loop reads. */
typedef struct cpu_ctx {
  /* F32 path: coordinates centred on the bounding-box centre and divided by
   * the bucket width, so the distance is the bucket coordinate q itself. */
  const float *px, *py, *pz;
  /* The dataset's own coordinates, for the float64 path and the redo. */
  const double *x, *y, *z;
  double width;
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

/* The contract for one pair, clamped to `buckets` (= overflow). */
static inline uint32_t cpu_exact_index(const cpu_ctx *c, size_t i, size_t j) {
  double dx = c->x[i] - c->x[j];
  double dy = c->y[i] - c->y[j];
  double dz = c->z[i] - c->z[j];
  double sxx = dx * dx;
  double syy = dy * dy;
  double szz = dz * dz;
  double s = sxx + syy;
  s = s + szz;
  double q = __builtin_sqrt(s) / c->width;
  double b = __builtin_floor(q);
  return b < (double)c->buckets ? (uint32_t)b : c->buckets;
}

/* The ISA loops (cpu_simd.c); NULL where the compiler or CPU lacks them. */
/* pairs: the AVX-512 float32 loop that counts bucket pairs (pair_stride). */
cpu_block_fn histd__cpu_simd_block(cpu_isa isa, cpu_path path, bool exact, bool pairs);
bool histd__cpu_isa_supported(cpu_isa isa);

/* The kernel with test knobs; report may be NULL. */
int histd__cpu_run_opts(const histd_problem *p, const histd_exec *ex,
                        const histd_control *ctl, const cpu_options *opt,
                        histd_result *res, cpu_report *report, char *msg,
                        size_t msglen);

const char *histd__cpu_isa_name(cpu_isa isa);

#endif
