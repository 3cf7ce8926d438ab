/*
 * grid_slabs.c -- "grid" on a GPU for a job too large for the GPU's
 * memory: its points cut into slabs along the grid's third axis and
 * streamed through the device, one or two slabs a run.
 *
 * The cut. The whole job's grid (grid.h) has n2 layers of cells along its
 * third axis -- z for open sets, the fractional coordinate f_c (planes of
 * constant z) for periodic boxes -- each at least reach_eff across. A slab
 * is a run of consecutive layers, a point's layer being its cell's in that
 * grid, computed by the same function (histd__grid_cell). Two points in
 * slabs that are not adjacent (neither the same slab nor next to each
 * other, circularly in a periodic box) are in cells that are not adjacent,
 * so their pair is overflow: grid.h proves it. Every pair that can count
 * lies in one slab or in two adjacent ones.
 *
 * The runs. Self pairs: each slab alone (its pairs i < j), and each slab
 * against the next (A x B of the two): s against s + 1, and in a periodic
 * box of three or more slabs the last against the first too (two slabs are
 * adjacent once, not twice). A x B: each slab of A against the B points of
 * the distinct slabs adjacent to it (at most three). Each pair that can
 * count meets exactly once. A run is an ordinary grid run (grid_engine.c,
 * its A copied for it instead of kept in the context's slots), exact by
 * the contract, so the sums are too: counts and `below` add up, the
 * weighted sums with Neumaier's compensation across runs, and overflow is
 * the total less the rest.
 *
 * The size. Slabs are packed from whole layers, greedily, under caps on
 * their points chosen so that a run's memory (histd__cuda_grid_bytes: its
 * points, their sort, the cells, at the whole job's cell count) fits the
 * room the GPU has: self jobs hold two slabs a run (a slab against the
 * next), A x B one slab of A and up to three of B. A layer that does not
 * fit alone is refused with a sentence.
 *
 * Host memory beyond the points: an index of them by slab (8 bytes a
 * point) and two buffers for the slabs a run uses, copied to the GPU
 * through the context's pinned staging ring (histd__cuda_copy_in), or,
 * with four slabs or more, pinned themselves.
 */
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "engine.h"
#include "gpu_engine.h"
#include "grid.h"

#define MAX_THREADS 64

/* The points of one side (A or B) indexed by slab. The host's work on
 * them (layers, index, gathers) is cut among T threads, thread t taking
 * points (or output positions) [n t / T, n (t + 1) / T). */
typedef struct side {
  const histd_dataset *ds;
  const histd__grid_geom *g;
  unsigned T;
  uint32_t L;      /* layers */
  uint32_t *lay;   /* each point's layer */
  uint64_t *cnt;   /* T x L: thread t's points in layer l */
  const uint32_t *slab_of; /* L: each layer's slab */
  uint32_t m;      /* slabs */
  size_t *base;    /* T x m: where thread t's points of slab s go in order */
  size_t *order;   /* the points' indices, slab by slab (ascending in each) */
  size_t *off;     /* m + 1: slab s is order[off[s] .. off[s+1]) */
} side;

/* Runs fn(arg, t, T) for t in [0, T) on T threads (the caller's among
 * them); a share whose thread cannot start runs here. */
typedef struct fan_job {
  void (*fn)(void *, unsigned, unsigned);
  void *arg;
  unsigned t, T;
} fan_job;

static void *fan_main(void *p) {
  const fan_job *j = p;
  j->fn(j->arg, j->t, j->T);
  return NULL;
}

static void fan_out(void (*fn)(void *, unsigned, unsigned), void *arg, unsigned T) {
  pthread_t tid[MAX_THREADS];
  fan_job jobs[MAX_THREADS];
  bool started[MAX_THREADS] = {false};
  for (unsigned t = 1; t < T; t++) {
    jobs[t] = (fan_job){fn, arg, t, T};
    started[t] = pthread_create(&tid[t], NULL, fan_main, &jobs[t]) == 0;
    if (!started[t])
      fn(arg, t, T);
  }
  fn(arg, 0, T);
  for (unsigned t = 1; t < T; t++)
    if (started[t])
      pthread_join(tid[t], NULL);
}

static size_t share(size_t n, unsigned t, unsigned T) { return n / T * t + n % T * t / T; }

/* Thread t's points: their layers, and its count of points per layer. */
static void layers_part(void *arg, unsigned t, unsigned T) {
  side *sd = arg;
  const histd_dataset *ds = sd->ds;
  const uint32_t plane = sd->g->n[0] * sd->g->n[1];
  uint64_t *cnt = sd->cnt + (size_t)t * sd->L;
  for (size_t i = share(ds->n, t, T); i < share(ds->n, t + 1, T); i++) {
    const uint32_t l = histd__grid_cell(sd->g, ds->x[i], ds->y[i], ds->z[i]) / plane;
    sd->lay[i] = l;
    cnt[l]++;
  }
}

/* Each point's layer (its cell's index on the third axis of g), counted. */
static int side_layers(side *sd, const histd_dataset *ds, const histd__grid_geom *g, unsigned T,
                       char *msg, size_t msglen) {
  sd->ds = ds;
  sd->g = g;
  sd->T = T;
  sd->L = g->n[2];
  sd->lay = malloc((ds->n ? ds->n : 1) * sizeof *sd->lay);
  sd->cnt = calloc((size_t)T * sd->L, sizeof *sd->cnt);
  if (sd->lay == NULL || sd->cnt == NULL)
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for the grid's slabs");
  fan_out(layers_part, sd, T);
  return 0;
}

/* The points in layer l (all threads'). */
static uint64_t layer_points(const side *sd, uint32_t l) {
  uint64_t n = 0;
  for (unsigned t = 0; t < sd->T; t++)
    n += sd->cnt[(size_t)t * sd->L + l];
  return n;
}

/* Device bytes of a run with na points of A and nb of its own B (0: self),
 * on a stand-in of the job with the whole's bounds and cells. */
static int run_bytes(gpu_ctx *ctx, const histd_problem *p, const histd_exec *ex,
                     uint64_t max_cells, size_t na, size_t nb, size_t *bytes, char *msg,
                     size_t msglen) {
  histd_dataset a = *p->a, b = *(p->b != NULL ? p->b : p->a);
  a.n = na;
  b.n = nb;
  histd_problem q = *p;
  q.a = &a;
  q.b = nb > 0 ? &b : NULL;
  return histd__cuda_grid_bytes(ctx, &q, ex, max_cells, bytes, msg, msglen);
}

/* The largest t in [0, 1] (to 1/4096) such that a run of t*na points of A
 * and t*nb of its own B fits `room`; 0 when none does. */
static int largest_share(gpu_ctx *ctx, const histd_problem *p, const histd_exec *ex,
                         uint64_t max_cells, double na, double nb, size_t room, double *t,
                         char *msg, size_t msglen) {
  double lo = 0, hi = 1;
  for (int it = 0; it < 12; it++) {
    double mid = (lo + hi) / 2;
    size_t bytes = 0;
    int rc = run_bytes(ctx, p, ex, max_cells, (size_t)ceil(mid * na), (size_t)ceil(mid * nb),
                       &bytes, msg, msglen);
    if (rc != 0)
      return rc;
    if (bytes <= room)
      lo = mid;
    else
      hi = mid;
  }
  *t = lo;
  return 0;
}

/* A gather: slabs slab[0..k) (distinct) of a side into out, output
 * positions cut among the threads; each thread's bounds in lo/hi. */
typedef struct gather_job {
  const side *sd;
  const uint32_t *slab;
  uint32_t k;
  histd_dataset *out;
  double lo[MAX_THREADS][3], hi[MAX_THREADS][3];
} gather_job;

static void gather_part(void *arg, unsigned t, unsigned T) {
  gather_job *gj = arg;
  const histd_dataset *ds = gj->sd->ds;
  histd_dataset *out = gj->out;
  const size_t p0 = share(out->n, t, T), p1 = share(out->n, t + 1, T);
  double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  size_t first = 0; /* output position of the current slab's first point */
  for (uint32_t i = 0; i < gj->k && first < p1; i++) {
    const size_t o0 = gj->sd->off[gj->slab[i]], len = gj->sd->off[gj->slab[i] + 1] - o0;
    const size_t a = p0 > first ? p0 - first : 0, b = p1 - first < len ? p1 - first : len;
    for (size_t q = a; q < b; q++) {
      const size_t j = gj->sd->order[o0 + q], at = first + q;
      const double v[3] = {ds->x[j], ds->y[j], ds->z[j]};
      out->x[at] = v[0];
      out->y[at] = v[1];
      out->z[at] = v[2];
      if (out->w != NULL)
        out->w[at] = ds->w[j];
      for (int c = 0; c < 3; c++) {
        lo[c] = v[c] < lo[c] ? v[c] : lo[c];
        hi[c] = v[c] > hi[c] ? v[c] : hi[c];
      }
    }
    first += len;
  }
  memcpy(gj->lo[t], lo, sizeof lo);
  memcpy(gj->hi[t], hi, sizeof hi);
}

/* Slabs slab[0..k) (distinct) of one side copied into out, whose arrays
 * hold at least that many points, and their bounds (the points were
 * checked when the set was made). */
static void gather(const side *sd, const uint32_t *slab, uint32_t k, histd_dataset *out) {
  gather_job gj;
  size_t n = 0;
  for (uint32_t i = 0; i < k; i++)
    n += sd->off[slab[i] + 1] - sd->off[slab[i]];
  out->n = n;
  out->box = sd->ds->box;
  gj.sd = sd;
  gj.slab = slab;
  gj.k = k;
  gj.out = out;
  fan_out(gather_part, &gj, sd->T);
  for (int c = 0; c < 3; c++) {
    double lo = INFINITY, hi = -INFINITY;
    for (unsigned t = 0; t < sd->T; t++) {
      lo = gj.lo[t][c] < lo ? gj.lo[t][c] : lo;
      hi = gj.hi[t][c] > hi ? gj.hi[t][c] : hi;
    }
    out->min[c] = n ? lo : 0;
    out->max[c] = n ? hi : 0;
  }
}

/* Room for n points (and weights if the side has them). */
static int slab_buffer(const side *sd, size_t n, histd_dataset *out, char *msg, size_t msglen) {
  int rc = histd_dataset_alloc(out, n, msg, msglen);
  if (rc == 0 && sd->ds->w != NULL)
    rc = histd_dataset_alloc_weights(out, msg, msglen);
  return rc;
}

/* Pins a slab buffer of cap points where that pays (see the caller);
 * returns the pinned block, or NULL (not pinned: its copies go through the
 * context's staging ring). */
static double *pin(const histd_dataset *d, size_t cap) {
  const size_t bytes = (d->w != NULL ? 4 : 3) * (cap ? cap : 1) * sizeof(double);
  if (cudaHostRegister(d->x, bytes, cudaHostRegisterPortable) == cudaSuccess)
    return d->x;
  cudaGetLastError();
  return NULL;
}

/* The most points any k adjacent slabs (k = 1: any slab) of a side hold. */
static size_t most_points(const side *sd, uint32_t m, bool wrap, uint32_t k) {
  size_t most = 0;
  for (uint32_t s = 0; s < m; s++) {
    size_t n = 0;
    for (uint32_t i = 0; i < k && i < m; i++) {
      uint32_t t = s + i;
      if (t >= m) {
        if (!wrap)
          break;
        t -= m;
      }
      n += sd->off[t + 1] - sd->off[t];
    }
    most = n > most ? n : most;
  }
  return most;
}

/* Thread t's points into order, each at its slab's next place. */
static void index_part(void *arg, unsigned t, unsigned T) {
  side *sd = arg;
  size_t *at = sd->base + (size_t)t * sd->m;
  for (size_t i = share(sd->ds->n, t, T); i < share(sd->ds->n, t + 1, T); i++)
    sd->order[at[sd->slab_of[sd->lay[i]]]++] = i;
}

/* Sorts a side's points by slab (a counting sort, stable: each slab's
 * points in ascending order), given each layer's slab. */
static int index_side(side *sd, const uint32_t *slab_of, uint32_t m, char *msg, size_t msglen) {
  const size_t n = sd->ds->n;
  const unsigned T = sd->T;
  sd->slab_of = slab_of;
  sd->m = m;
  sd->order = malloc((n ? n : 1) * sizeof *sd->order);
  sd->off = calloc((size_t)m + 1, sizeof *sd->off);
  sd->base = calloc((size_t)T * m, sizeof *sd->base);
  if (sd->order == NULL || sd->off == NULL || sd->base == NULL)
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for the slabs' index");
  /* base[t][s]: the slab's start plus the earlier threads' points in it */
  for (uint32_t l = 0; l < sd->L; l++)
    for (unsigned t = 0; t < T; t++)
      sd->base[(size_t)t * m + slab_of[l]] += sd->cnt[(size_t)t * sd->L + l];
  size_t at = 0;
  for (uint32_t s = 0; s < m; s++) {
    sd->off[s] = at;
    for (unsigned t = 0; t < T; t++) {
      const size_t c = sd->base[(size_t)t * m + s];
      sd->base[(size_t)t * m + s] = at;
      at += c;
    }
  }
  sd->off[m] = at;
  fan_out(index_part, sd, T);
  free(sd->lay);
  sd->lay = NULL;
  return 0;
}

static void side_free(side *sd) {
  free(sd->lay);
  free(sd->cnt);
  free(sd->base);
  free(sd->order);
  free(sd->off);
}

/* Runs q (a run of the job) and adds its result into res. */
static int run_one(histd_worker *w, const histd_problem *q, const histd_exec *ex,
                   const histd_control *ctl, uint64_t max_cells, double k, double runs,
                   histd_result *res, double *err, char *msg, size_t msglen) {
  histd_result part;
  int rc = histd_result_for(&part, q, msg, msglen);
  if (rc != 0)
    return rc;
  histd__part pc = {ctl, k, runs};
  histd_control sub = histd__part_control(&pc);
  rc = histd__cuda_grid_part(w, q, ex, &sub, max_cells, true, &part, msg, msglen);
  if (rc == 0) {
    histd_result_add_bins(res, err, &part);
    res->block_size = part.block_size;
    res->timing.transfer_ms += part.timing.transfer_ms;
    res->timing.kernel_ms += part.timing.kernel_ms;
  }
  histd_result_free(&part);
  return rc;
}

int histd__cuda_grid_slabs(histd_worker *w, const histd_problem *p, const histd_exec *ex,
                           const histd_control *ctl, histd_result *res, char *msg,
                           size_t msglen) {
  gpu_ctx *ctx = w->gpu;
  const bool cross = p->b != NULL;
  const uint64_t max_cells = histd__grid_max_cells(p, true);
  histd__grid_geom g;
  int rc = histd__grid_plan(p, max_cells, &g, msg, msglen);
  if (rc != 0)
    return rc;
  histd__cuda_drop_slots(ctx); /* no run here uses them: their room is the slabs' */
  const size_t room = histd__cuda_mem_room(ctx);
  double t_start = histd_now_ms(), t_cut = 0, t_gather = 0, t_runs = 0, tg;
  const double na = (double)p->a->n, nb = cross ? (double)p->b->n : na;

  /* caps on a slab's points: a self run holds a slab and the next, an
   * A x B run a slab of A and three of B */
  double t = 0;
  rc = largest_share(ctx, p, ex, g.cells, na, cross ? 3 * nb : na, room, &t, msg, msglen);
  if (rc != 0)
    return rc;
  const double cap_a = t * na, cap_b = t * nb;

  uint32_t *slab_of = NULL;
  side sa, sb;
  memset(&sa, 0, sizeof sa);
  memset(&sb, 0, sizeof sb);
  double *err = NULL;
  histd_dataset d0, d1;
  double *pinned[2] = {NULL, NULL};
  memset(&d0, 0, sizeof d0);
  memset(&d1, 0, sizeof d1);
  unsigned T = histd_cpu_count();
  T = T < 1 ? 1 : T > MAX_THREADS ? MAX_THREADS : T;
  const uint32_t L = g.n[2];
  slab_of = malloc((size_t)L * sizeof *slab_of);
  err = histd_result_add_errs(&res->bins);
  if (slab_of == NULL || err == NULL) {
    rc = histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for the grid's slabs");
    goto out;
  }
  if ((rc = side_layers(&sa, p->a, &g, T, msg, msglen)) != 0 ||
      (cross && (rc = side_layers(&sb, p->b, &g, T, msg, msglen)) != 0))
    goto out;
  const side *sbl = cross ? &sb : &sa; /* B's layers (A's for self pairs) */

  /* the slabs: whole layers, greedily under the caps */
  uint32_t m = 0;
  double in_a = 0, in_b = 0;
  for (uint32_t l = 0; l < L; l++) {
    const double ca = (double)layer_points(&sa, l), cb = (double)layer_points(sbl, l);
    if (ca > cap_a || cb > cap_b) {
      rc = histd_fail(msg, msglen, HISTD_ETOOBIG,
                      "the job is too large for %s even in slabs of z: a layer of cells "
                      "one r_max (%.6g) thick holds %.0f points of A and %.0f of B, where "
                      "%.1f MiB of free memory holds runs over slabs of at most %.0f and %.0f",
                      histd__cuda_context_name(ctx), g.r_max, ca, cb,
                      (double)room / 1048576.0, cap_a, cap_b);
      goto out;
    }
    if (m == 0 || in_a + ca > cap_a || in_b + cb > cap_b) {
      m++;
      in_a = in_b = 0;
    }
    in_a += ca;
    in_b += cb;
    slab_of[l] = m - 1;
  }
  if ((rc = index_side(&sa, slab_of, m, msg, msglen)) != 0 ||
      (cross && (rc = index_side(&sb, slab_of, m, msg, msglen)) != 0))
    goto out;
  t_cut = histd_now_ms() - t_start;

  /* the runs */
  const bool wrap = g.periodic != 0;
  memset(res->counts, 0, res->bins.count * sizeof *res->counts);
  res->below = 0;
  res->timing.transfer_ms = res->timing.kernel_ms = 0;
  histd_problem q = *p;
  const size_t cap0 = most_points(&sa, m, wrap, 1);
  const size_t cap1 = most_points(cross ? &sb : &sa, m, wrap, cross ? 3 : 1);
  if ((rc = slab_buffer(&sa, cap0, &d0, msg, msglen)) != 0 ||
      (rc = slab_buffer(cross ? &sb : &sa, cap1, &d1, msg, msglen)) != 0)
    goto out;
  /* Pinning costs about 1.4 GB/s once (an H100's host), a copy through
   * the staging ring about 5 GB/s each time, from pinned memory 25: with
   * four slabs or more each buffer serves enough copies to pay for its
   * pinning (bench/RESULTS.md, 2026-11-24: SG2 in 10 slabs 1.65 s pinned,
   * 2.09 s staged; 1e9 points in 2 slabs 28.6 s pinned, 18.4 s staged). */
  if (m >= 4) {
    pinned[0] = pin(&d0, cap0);
    pinned[1] = pin(&d1, cap1);
  }
  if (!cross) {
    /* slab s alone, then s against the next (which the next step keeps) */
    const uint32_t nexts = wrap && m >= 3 ? m : m - 1;
    const double runs = (double)m + nexts;
    double k = 0;
    uint32_t have = UINT32_MAX; /* the slab in d0 */
    for (uint32_t s = 0; s < m; s++) {
      if (have != s) {
        tg = histd_now_ms();
        gather(&sa, &s, 1, &d0);
        t_gather += histd_now_ms() - tg;
        have = s;
      }
      q.a = &d0;
      q.b = NULL;
      if ((rc = run_one(w, &q, ex, ctl, max_cells, k++, runs, res, err, msg, msglen)) != 0)
        goto out;
      if (s < nexts) {
        uint32_t nx = (s + 1) % m;
        tg = histd_now_ms();
        gather(&sa, &nx, 1, &d1);
        t_gather += histd_now_ms() - tg;
        q.b = &d1;
        if ((rc = run_one(w, &q, ex, ctl, max_cells, k++, runs, res, err, msg, msglen)) != 0)
          goto out;
        const histd_dataset t = d0; /* the next slab is d1's: swap the buffers */
        d0 = d1;
        d1 = t;
        have = nx;
      }
    }
  } else {
    for (uint32_t s = 0; s < m; s++) {
      uint32_t adj[3], k = 0;
      for (int o = -1; o <= 1; o++) {
        int64_t t2 = (int64_t)s + o;
        if (wrap)
          t2 = ((t2 % m) + m) % m;
        else if (t2 < 0 || t2 >= (int64_t)m)
          continue;
        bool seen = false;
        for (uint32_t i = 0; i < k; i++)
          seen = seen || adj[i] == (uint32_t)t2;
        if (!seen)
          adj[k++] = (uint32_t)t2;
      }
      uint32_t one = s;
      tg = histd_now_ms();
      gather(&sa, &one, 1, &d0);
      gather(&sb, adj, k, &d1);
      t_gather += histd_now_ms() - tg;
      q.a = &d0;
      q.b = &d1;
      if ((rc = run_one(w, &q, ex, ctl, max_cells, s, m, res, err, msg, msglen)) != 0)
        goto out;
    }
  }
  uint64_t sum = res->below; /* every slot: (r_p, pi) and (s, mu) bins have two axes */
  for (uint64_t i = 0; i < histd_bins_slots(&res->bins); i++)
    sum += res->counts[i];
  histd_result_add_done(res, err);
  res->overflow = histd_problem_pairs(p) - sum;
  t_runs = histd_now_ms() - t_start - t_cut - t_gather;
  if (getenv("HISTD_SLAB_TRACE") != NULL)
    fprintf(stderr, "slabs: %u, cut %.1f ms, gathers %.1f ms, runs %.1f ms (kernels %.1f, "
            "copies %.1f)\n", m, t_cut, t_gather, t_runs, res->timing.kernel_ms,
            res->timing.transfer_ms);
  res->exact = true;
  res->refined_pairs = 0;
  res->threads = 0;
  snprintf(res->device, sizeof res->device,
           "%s, grid %ux%ux%u cells, streamed in %u slabs of z (%.0f MiB free)",
           histd__cuda_context_name(ctx), g.n[0], g.n[1], g.n[2], m, (double)room / 1048576.0);
out:
  for (int i = 0; i < 2; i++)
    if (pinned[i] != NULL)
      cudaHostUnregister(pinned[i]);
  histd_dataset_free(&d0);
  histd_dataset_free(&d1);
  side_free(&sa);
  side_free(&sb);
  free(slab_of);
  free(err);
  return rc;
}
