/*
 * problem.c -- what to compute and how: the problem (pairs, metric, bins,
 * statistic, weights), the execution (kernel, block size, threads,
 * devices, precision), their defaults and validation, and the helpers
 * every layer shares (box geometry, bin edges, the number of pairs).
 *
 * Validation speaks to people: each refusal is one sentence naming the
 * value and the rule, because the service passes it on as a 422 and the
 * CLI prints it.
 */
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "engine.h"
#include "histd/pair.h"

/* ---- the box ------------------------------------------------------------ */

double histd_box_volume(const histd_box *box) {
  return box->kind == HISTD_BOX_NONE ? 0 : box->ax * box->by * box->cz;
}

void histd__box_widths(const histd_box *box, double w[3]) {
  /* perpendicular widths V / |b x c|, V / |c x a|, V / |a x b| of the cell
   * a = (ax,0,0), b = (bx,by,0), c = (cx,cy,cz) */
  double v = histd_box_volume(box);
  double bc = sqrt(box->by * box->cz * box->by * box->cz + box->bx * box->cz * box->bx * box->cz +
                   (box->bx * box->cy - box->by * box->cx) * (box->bx * box->cy - box->by * box->cx));
  double ca = box->ax * sqrt(box->cz * box->cz + box->cy * box->cy);
  double ab = box->ax * box->by;
  w[0] = v / bc;
  w[1] = v / ca;
  w[2] = v / ab;
}

double histd_box_half_width(const histd_box *box) {
  if (box->kind == HISTD_BOX_NONE)
    return INFINITY;
  double w[3];
  histd__box_widths(box, w);
  return fmin(w[0], fmin(w[1], w[2])) / 2;
}

/* The range (histd.h): the components first, so that the widths computed
 * from them are finite numbers (each width is at most its length: ax >=
 * V / |b x c|, by >= V / |c x a|, cz = V / |a x b|); then the widths, whose
 * products of four components stay within [2^-1000, 2^1004] once the
 * components and the widths do. */
int histd_box_check(const histd_box *b, char *msg, size_t msglen) {
  if (b->kind == HISTD_BOX_NONE)
    return 0;
  if (b->kind != HISTD_BOX_ORTHO && b->kind != HISTD_BOX_TRICLINIC)
    return histd_fail(msg, msglen, HISTD_EINVAL, "unknown box kind %d", (int)b->kind);
  const double len[3] = {b->ax, b->by, b->cz};
  const char *names[3] = {"x", "y", "z"};
  for (int i = 0; i < 3; i++)
    if (!isfinite(len[i]) || !(len[i] > 0))
      return histd_fail(msg, msglen, HISTD_EINVAL,
                        "the box's %s length must be a finite number > 0, got %g", names[i],
                        len[i]);
  if (!isfinite(b->bx) || !isfinite(b->cx) || !isfinite(b->cy))
    return histd_fail(msg, msglen, HISTD_EINVAL, "the box's tilts must be finite numbers");
  if (b->kind == HISTD_BOX_ORTHO && (b->bx != 0 || b->cx != 0 || b->cy != 0))
    return histd_fail(msg, msglen, HISTD_EINVAL, "an orthorhombic box has no tilts");
  const double top = ldexp(1, HISTD_BOX_EXP_MAX), bottom = ldexp(1, -HISTD_BOX_EXP_MAX);
  const double comp[6] = {b->ax, b->by, b->cz, fabs(b->bx), fabs(b->cx), fabs(b->cy)};
  const char *cname[6] = {"x length", "y length", "z length", "tilt bx", "tilt cx", "tilt cy"};
  double largest = 0;
  for (int i = 0; i < 6; i++) {
    if (comp[i] > top)
      return histd_fail(msg, msglen, HISTD_EINVAL,
                        "the box's %s, %g, is beyond 2^%d (about %.2g), the largest a periodic "
                        "box may have: its volume and widths would overflow binary64",
                        cname[i], comp[i], HISTD_BOX_EXP_MAX, top);
    if (i < 3 && comp[i] < bottom) /* a length is no narrower than its width */
      return histd_fail(msg, msglen, HISTD_EINVAL,
                        "the box's %s, %g, is below 2^-%d (about %.2g), the smallest a periodic "
                        "box may have: its volume and widths would underflow binary64",
                        cname[i], comp[i], HISTD_BOX_EXP_MAX, bottom);
    largest = fmax(largest, comp[i]);
  }
  double w[3];
  histd__box_widths(b, w);
  const double thin = ldexp(largest, -HISTD_BOX_ASPECT_EXP);
  for (int i = 0; i < 3; i++) {
    if (!(w[i] >= bottom))
      return histd_fail(msg, msglen, HISTD_EINVAL,
                        "the box's perpendicular width %d, %g, is below 2^-%d (about %.2g), the "
                        "smallest a periodic box may have: its volume and widths would "
                        "underflow binary64",
                        i + 1, w[i], HISTD_BOX_EXP_MAX, bottom);
    if (!(w[i] >= thin))
      return histd_fail(msg, msglen, HISTD_EINVAL,
                        "the box is a sliver: its perpendicular width %d, %g, is less than "
                        "2^-%d times its largest length or tilt, %g",
                        i + 1, w[i], HISTD_BOX_ASPECT_EXP, largest);
  }
  return 0;
}

/* A periodic job's points within 2^40 smallest widths of the origin
 * (histd.h), a and b's bounds against the box. */
static int points_near(const histd_shape *ds, const char *name, const histd_box *box,
                       const char *whose, char *msg, size_t msglen) {
  if (ds == NULL || ds->n == 0 || box->kind == HISTD_BOX_NONE)
    return 0;
  const double limit = ldexp(2 * histd_box_half_width(box), HISTD_BOX_ASPECT_EXP);
  double far = 0;
  for (int k = 0; k < 3; k++)
    far = fmax(far, fmax(fabs(ds->min[k]), fabs(ds->max[k])));
  if (!(far <= limit))
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "the points (%s) reach %g from the origin, and a periodic job needs them "
                      "within 2^%d times the periodic box's smallest width (%g%s), %g: wrap "
                      "them into the box",
                      name, far, HISTD_BOX_ASPECT_EXP, 2 * histd_box_half_width(box), whose, limit);
  return 0;
}

/* ---- bins ----------------------------------------------------------------- */

double histd_bins_edge(const histd_bins *bins, uint32_t k) {
  return bins->kind == HISTD_BINS_EDGES ? bins->edges[k] : (double)k * bins->width;
}

double histd_bins_shell(const histd_bins *bins, uint32_t k) {
  const double pi = 3.14159265358979323846;
  const double lo = histd_bins_edge(bins, k), hi = histd_bins_edge(bins, k + 1);
  return 4.0 / 3.0 * pi * (hi * hi * hi - lo * lo * lo);
}

int histd_log_edges(double r_min, double r_max, uint32_t count, double *edges, char *msg,
                    size_t msglen) {
  if (!isfinite(r_min) || !isfinite(r_max) || !(r_min > 0) || !(r_min < r_max))
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "log bins need 0 < r_min < r_max (finite), got r_min %g and r_max %g",
                      r_min, r_max);
  if (count < 1 || count > HISTD_MAX_BUCKETS)
    return histd_fail(msg, msglen, HISTD_EINVAL, "log bins need 1 to %u buckets, got %u",
                      HISTD_MAX_BUCKETS, count);
  const double l0 = log(r_min), step = (log(r_max) - l0) / count;
  edges[0] = r_min;
  for (uint32_t k = 1; k < count; k++)
    edges[k] = exp(l0 + k * step);
  edges[count] = r_max;
  for (uint32_t k = 0; k < count; k++)
    if (!(edges[k] < edges[k + 1]))
      return histd_fail(msg, msglen, HISTD_EINVAL,
                        "%u log bins from %g to %g are too narrow for float64 (edges %u "
                        "and %u are equal)", count, r_min, r_max, k, k + 1);
  return 0;
}

uint64_t histd_bins_slots(const histd_bins *bins) {
  return (uint64_t)bins->count * (bins->count2 ? bins->count2 : 1);
}

double histd_bins_edge2(const histd_bins *bins, uint32_t k) {
  return k >= bins->count2 ? bins->max2 : (double)k * (bins->max2 / bins->count2);
}

double histd_problem_reach(const histd_problem *p) {
  const double e = histd_bins_edge(&p->bins, p->bins.count);
  if (p->statistic != HISTD_STAT_RP_PI)
    return e;
  return sqrt(e * e + p->bins.max2 * p->bins.max2) * (1 + 0x1p-40);
}

/* The second axis of RP_PI and S_MU (what the pair's pi or mu is binned
 * by); the axis-2 bins of any other statistic are none. */
static int axis2_validate(const histd_problem *p, char *msg, size_t msglen) {
  const histd_bins *b = &p->bins;
  const bool two = p->statistic == HISTD_STAT_RP_PI || p->statistic == HISTD_STAT_S_MU;
  if (!two)
    return b->count2 == 0 ? 0
                          : histd_fail(msg, msglen, HISTD_EINVAL,
                                       "pi or mu bins go with statistic rp_pi or s_mu only");
  const char *what = p->statistic == HISTD_STAT_RP_PI ? "pi" : "mu";
  if (b->count2 < 1 || b->count2 > HISTD_MAX_BUCKETS)
    return histd_fail(msg, msglen, HISTD_EINVAL, "%s_bins must be from 1 to %u, got %u", what,
                      HISTD_MAX_BUCKETS, b->count2);
  if (!isfinite(b->max2) || !(b->max2 > 0) ||
      (p->statistic == HISTD_STAT_S_MU && !(b->max2 <= 1)))
    return histd_fail(msg, msglen, HISTD_EINVAL, "%s must be %s, got %g",
                      p->statistic == HISTD_STAT_RP_PI ? "pi_max" : "mu_max",
                      p->statistic == HISTD_STAT_RP_PI ? "a finite distance > 0"
                                                       : "in (0, 1]",
                      b->max2);
  if (!(b->max2 / b->count2 > 0))
    return histd_fail(msg, msglen, HISTD_EINVAL, "%s_max / %s_bins is too small to be a width",
                      what, what);
  if ((uint64_t)b->count * b->count2 > HISTD_MAX_BUCKETS)
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "the bins of the two axes come to %llu (%u x %u), more than the %u "
                      "a histogram may hold", (unsigned long long)b->count * b->count2,
                      b->count, b->count2, HISTD_MAX_BUCKETS);
  if (b->kind == HISTD_BINS_WIDTH && b->count == 0)
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "statistic %s needs the first axis's bins: edges, log_bins, or "
                      "bucket_width with buckets", p->statistic == HISTD_STAT_RP_PI ? "rp_pi"
                                                                                  : "s_mu");
  if (p->per_frame || p->exclude_molecule || p->species != NULL || p->all_images)
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "statistic %s counts every frame's pairs together, of the whole sets: "
                      "per_frame, exclude, partials and images \"all\" are for the histogram "
                      "of d", p->statistic == HISTD_STAT_RP_PI ? "rp_pi" : "s_mu");
  if (p->los_midpoint && p->box.kind != HISTD_BOX_NONE)
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "los \"midpoint\" measures sky catalogues in open space; a periodic box "
                      "takes los \"z\"");
  return 0;
}

static int bins_validate(const histd_bins *b, char *msg, size_t msglen) {
  if (b->kind == HISTD_BINS_WIDTH) {
    if (!isfinite(b->width))
      return histd_fail(msg, msglen, HISTD_EINVAL, "bucket_width must be a finite number");
    if (!(b->width > 0))
      return histd_fail(msg, msglen, HISTD_EINVAL, "bucket_width must be > 0, got %g",
                        b->width);
    if (b->count > HISTD_MAX_BUCKETS)
      return histd_fail(msg, msglen, HISTD_EINVAL, "buckets must be at most %u, got %u",
                        HISTD_MAX_BUCKETS, b->count);
    return 0;
  }
  if (b->kind != HISTD_BINS_EDGES)
    return histd_fail(msg, msglen, HISTD_EINVAL, "unknown kind of bins %d", (int)b->kind);
  if (b->count < 1 || b->count > HISTD_MAX_BUCKETS || b->edges == NULL)
    return histd_fail(msg, msglen, HISTD_EINVAL, "edges must hold 2 to %u values, got %u",
                      HISTD_MAX_BUCKETS + 1, b->edges ? b->count + 1 : 0);
  for (uint32_t k = 0; k <= b->count; k++) {
    if (!isfinite(b->edges[k]))
      return histd_fail(msg, msglen, HISTD_EINVAL, "edges[%u] must be a finite number", k);
    if (k > 0 && !(b->edges[k - 1] < b->edges[k]))
      return histd_fail(msg, msglen, HISTD_EINVAL,
                        "edges must ascend strictly: edges[%u] = %.17g is not above "
                        "edges[%u] = %.17g", k, b->edges[k], k - 1, b->edges[k - 1]);
  }
  return 0;
}

/* ---- the problem ------------------------------------------------------------ */

unsigned histd_problem_needs(const histd_problem *p) {
  histd_shape a, b;
  histd_dataset_shape(p->a, &a);
  if (p->b != NULL)
    histd_dataset_shape(p->b, &b);
  return histd_problem_needs_of(p, &a, p->b ? &b : NULL);
}

unsigned histd_problem_needs_of(const histd_problem *p, const histd_shape *a,
                                const histd_shape *b) {
  unsigned needs = 0;
  if ((p->frame_boxes ? a->box.kind : p->box.kind) != HISTD_BOX_NONE)
    needs |= HISTD_CAN_PERIODIC;
  if (b != NULL)
    needs |= HISTD_CAN_CROSS;
  if (p->weighted)
    needs |= HISTD_CAN_WEIGHTS;
  const histd_statistic_info *in = histd_statistic_about(p->statistic);
  if (in != NULL)
    needs |= in->needs;
  if ((p->statistic == HISTD_STAT_HISTOGRAM || (in != NULL && (in->needs & HISTD_CAN_BINS2))) &&
      p->bins.kind == HISTD_BINS_EDGES)
    needs |= HISTD_CAN_EDGES;
  if (p->ravg)
    needs |= HISTD_CAN_RAVG;
  if (p->all_images) /* open-space problems, A against B moved */
    needs = (needs & ~(unsigned)HISTD_CAN_PERIODIC) | HISTD_CAN_CROSS;
  return needs;
}

/* ---- frames --------------------------------------------------------------------- */

size_t histd_problem_frames(const histd_problem *p) {
  size_t fa = histd_dataset_frames(p->a), fb = p->b ? histd_dataset_frames(p->b) : 1;
  return fa > fb ? fa : fb;
}

/* Frame f of ds, as the problem pairs it: a one-frame set serves every frame. */
static size_t frame_of(const histd_dataset *ds, size_t f) {
  return histd_dataset_frames(ds) == 1 ? 0 : f;
}

static size_t frame_n(const histd_dataset *ds, size_t f) {
  return histd_dataset_frames(ds) == 1 ? ds->n : ds->frame[f].n;
}

void histd_problem_frame(const histd_problem *p, size_t f, histd_dataset *a, histd_dataset *b,
                         histd_problem *out) {
  *out = *p;
  histd_dataset_frame(p->a, frame_of(p->a, f), a);
  out->a = a;
  if (p->b != NULL) {
    histd_dataset_frame(p->b, frame_of(p->b, f), b);
    out->b = b;
  }
  if (p->frame_boxes)
    out->box = a->box;
  out->frame_boxes = false;
}

bool histd_problem_in_pieces(const histd_problem *p) {
  return p->shared != NULL || p->species != NULL || p->regions_a != NULL;
}

uint32_t histd_problem_pieces(const histd_problem *p) {
  const uint32_t r = p->region_count;
  return p->shared != NULL    ? 4
         : p->species != NULL ? p->species_count * (p->species_count + 1) / 2
         : p->regions_a == NULL ? 1
         : p->regions_b != NULL ? r * r
                                : r * (r + 1) / 2;
}

void histd_problem_piece_regions(const histd_problem *p, uint32_t k, uint32_t *s, uint32_t *t) {
  if (p->regions_b != NULL) {
    *s = k / p->region_count;
    *t = k % p->region_count;
  } else {
    histd_species_pair(p->region_count, k, s, t); /* (s, t >= s) row by row */
  }
}

void histd_problem_piece(const histd_problem *p, uint32_t k, histd_problem *out) {
  *out = *p;
  out->shared = NULL;
  out->species = NULL;
  out->species_count = 0;
  out->regions_a = out->regions_b = NULL;
  out->region_count = 0;
  if (p->regions_a != NULL) {
    uint32_t s, t;
    histd_problem_piece_regions(p, k, &s, &t);
    out->a = &p->regions_a[s];
    out->b = p->regions_b != NULL ? &p->regions_b[t] : s == t ? NULL : &p->regions_a[t];
  } else if (p->shared != NULL) {
    /* A' x B', A' x S, S x B', S's self pairs (src/job/pairing.c says why) */
    const histd_dataset *const ops[4][2] = {
        {p->a, p->b}, {p->a, p->shared}, {p->shared, p->b}, {p->shared, NULL}};
    out->a = ops[k][0];
    out->b = ops[k][1];
  } else if (p->species != NULL) {
    uint32_t s, t; /* species pairs (s, t >= s) row by row */
    histd_species_pair(p->species_count, k, &s, &t);
    out->a = &p->species[s];
    out->b = s == t ? NULL : &p->species[t];
  }
}

unsigned histd_problem_sums(const histd_problem *p) {
  return (p->weighted ? 1u << HISTD_SUM_W : 0) | (p->ravg ? 1u << HISTD_SUM_WU : 0);
}

uint64_t histd_problem_pairs(const histd_problem *p) {
  if (histd_problem_in_pieces(p)) {
    histd_problem piece;
    uint64_t sum = 0;
    for (uint32_t k = 0, n = histd_problem_pieces(p); k < n; k++) {
      histd_problem_piece(p, k, &piece);
      sum += histd_problem_pairs(&piece);
    }
    return sum;
  }
  uint64_t sum = 0;
  for (size_t f = 0, frames = histd_problem_frames(p); f < frames; f++) {
    uint64_t na = frame_n(p->a, frame_of(p->a, f));
    if (p->b != NULL)
      sum += na * frame_n(p->b, frame_of(p->b, f));
    else
      sum += na < 2 ? 0 : na * (na - 1) / 2;
  }
  return sum;
}

void histd_dataset_shape(const histd_dataset *ds, histd_shape *out) {
  memset(out, 0, sizeof *out);
  out->n = ds->n;
  out->frames = histd_dataset_frames(ds);
  out->weighted = ds->w != NULL;
  out->box = ds->box;
  memcpy(out->min, ds->min, sizeof out->min);
  memcpy(out->max, ds->max, sizeof out->max);
  out->topology = histd_topology_fields(ds->top);
  out->sky = ds->sky != NULL;
  out->regions = ds->region != NULL ? ds->regions : 0;
}

/* A frame's points by the shape: equal shares (the last takes the rest). */
static uint64_t shape_frame_n(const histd_shape *s, uint64_t f) {
  const uint64_t frames = s->frames > 0 ? s->frames : 1;
  return s->n / frames + (f + 1 == frames ? s->n % frames : 0);
}

static uint64_t shape_frames(const histd_shape *a, const histd_shape *b) {
  const uint64_t fa = a->frames > 0 ? a->frames : 1, fb = b && b->frames > 0 ? b->frames : 1;
  return fa > fb ? fa : fb;
}

uint64_t histd_shape_pairs(const histd_shape *a, const histd_shape *b) {
  uint64_t sum = 0;
  for (uint64_t f = 0, frames = shape_frames(a, b); f < frames; f++) {
    const uint64_t na = shape_frame_n(a, a->frames > 1 ? f : 0);
    if (b != NULL)
      sum += na * (b->frames > 1 ? shape_frame_n(b, f) : b->n);
    else
      sum += na < 2 ? 0 : na * (na - 1) / 2;
  }
  return sum;
}

/* The frames pair up: A's several with as many of B's, or with B's one. */
static int frames_validate(const histd_shape *a, const histd_shape *b, char *msg, size_t msglen) {
  uint64_t fa = a->frames > 0 ? a->frames : 1, fb = b && b->frames > 0 ? b->frames : 1;
  if (fb > 1 && fa == 1)
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "the second point set (B) has %llu frames and the first (A) one; give the "
                      "set of several frames as A (dataset) and the one-frame set as B",
                      (unsigned long long)fb);
  if (fb > 1 && fa != fb)
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "A has %llu frames and B %llu: frame f of A pairs with frame f of B, so "
                      "they need as many frames (or B one frame, met by every frame of A)",
                      (unsigned long long)fa, (unsigned long long)fb);
  return 0;
}

/* exclude_molecule: molecule ids on every operand, no weights (the shapes);
 * each frame the atoms its topology lists (the points). */
static int exclusions_check(const histd_problem *p, const histd_shape *a, const histd_shape *b,
                            char *msg, size_t msglen) {
  if (p->weighted)
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "exclude molecule cannot be combined with weights (the weighted sums "
                      "would lose their precision bound); run it unweighted");
  const histd_shape *ops[2] = {a, b};
  const char *names[2] = {"A", "B"};
  for (int o = 0; o < 2 && ops[o] != NULL; o++)
    if (!(ops[o]->topology & HISTD_TOP_MOL))
      return histd_fail(msg, msglen, HISTD_EINVAL,
                        "exclude molecule needs molecule ids, and the points (%s) have none "
                        "(a LAMMPS dump's mol column, the residues of a GRO or PDB file, a "
                        "CSV's mol column or an extended XYZ's mol:I:1)",
                        names[o]);
  return 0;
}

static int exclusions_validate(const histd_problem *p, char *msg, size_t msglen) {
  const histd_dataset *ops[2] = {p->a, p->b};
  const char *names[2] = {"A", "B"};
  for (int o = 0; o < 2 && ops[o] != NULL; o++) {
    const histd_dataset *ds = ops[o];
    for (size_t f = 0, frames = histd_dataset_frames(ds); f < frames; f++)
      if ((frames == 1 ? ds->n : ds->frame[f].n) != ds->top->atoms)
        return histd_fail(msg, msglen, HISTD_EINVAL,
                          "frame %zu of the points (%s) holds %zu points and its topology "
                          "%zu atoms", f + 1, names[o], frames == 1 ? ds->n : ds->frame[f].n,
                          ds->top->atoms);
  }
  return 0;
}

/* The statistics of a value per point and a record per pair: a radius,
 * what they can be combined with, frames of one size, the result limit. */
static int points_validate(const histd_problem *p, const histd_shape *a, const histd_shape *b,
                           char *msg, size_t msglen) {
  const histd_statistic_info *in = histd_statistic_about(p->statistic);
  if (in == NULL || in->answer == HISTD_ANSWER_BINS)
    return histd_fail(msg, msglen, HISTD_EINVAL, "unknown statistic %d", (int)p->statistic);
  const char *name = in->asked_by;
  if (in->binned) { /* its bins, checked as a histogram's; no radius */
  } else if (in->anywhere ? !(p->radius > 0) || isnan(p->radius)
                   : !(p->radius > 0) || !isfinite(p->radius))
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "%s needs a radius > 0%s, got %g%s", name,
                      in->anywhere ? " (or none: anywhere)" : " and finite", p->radius,
                      in->anywhere ? "" : " (within 0, the exact collisions, is "
                                          "the plain within statistic)");
  if (p->weighted && !in->weights)
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "%s does not take weights (only per_point sums the weights of each "
                      "point's neighbours)", name);
  if (p->per_frame)
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "per_frame is for histograms: %s keeps every frame's values already",
                      name);
  if (p->exclude_molecule)
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "exclude molecule is not available with %s: it applies to histograms "
                      "and counts within a radius", name);
  const uint64_t frames = shape_frames(a, b);
  if (in->answer == HISTD_ANSWER_PAIRS && (a->n > UINT32_MAX || (b && b->n > UINT32_MAX)))
    return histd_fail(msg, msglen, HISTD_ETOOBIG,
                      "a pair list names its points by 32-bit indices: at most %u points a set",
                      UINT32_MAX);
  if (in->answer != HISTD_ANSWER_POINTS)
    return 0;
  const uint64_t bytes = histd_shape_result_bytes(p, a, b);
  if (p->result_limit != 0 && bytes > p->result_limit && in->binned)
    return histd_fail(msg, msglen, HISTD_ETOOBIG,
                      "the %s result would hold %llu points x %u bins, %llu bytes, more than "
                      "the %llu bytes a result may take; select fewer points or give fewer "
                      "bins",
                      name, (unsigned long long)shape_frame_n(a, 0), p->bins.count,
                      (unsigned long long)bytes, (unsigned long long)p->result_limit);
  if (p->result_limit != 0 && bytes > p->result_limit)
    return histd_fail(msg, msglen, HISTD_ETOOBIG,
                      "the %s result would hold %llu frames x %llu points, %llu bytes, more "
                      "than the %llu bytes a result may take; select fewer points or frames",
                      name, (unsigned long long)frames, (unsigned long long)shape_frame_n(a, 0),
                      (unsigned long long)bytes, (unsigned long long)p->result_limit);
  return 0;
}

/* per point: every frame of A as many points (its rows are frames x them) */
static int point_frames_validate(const histd_problem *p, char *msg, size_t msglen) {
  if (!histd_statistic_per_point(p->statistic))
    return 0;
  const char *name = histd_statistic_about(p->statistic)->asked_by;
  const size_t frames = histd_dataset_frames(p->a);
  const size_t n = frames > 1 ? p->a->frame[0].n : p->a->n;
  for (size_t f = 1; f < frames; f++)
    if (p->a->frame[f].n != n)
      return histd_fail(msg, msglen, HISTD_EINVAL,
                        "%s keeps a row of values per frame, so every frame of A must hold "
                        "as many points: frame 1 holds %zu and frame %zu %zu", name, n, f + 1,
                        p->a->frame[f].n);
  return 0;
}

uint64_t histd_problem_result_bytes(const histd_problem *p) {
  histd_shape a, b;
  histd_dataset_shape(p->a, &a);
  if (p->b != NULL)
    histd_dataset_shape(p->b, &b);
  return histd_shape_result_bytes(p, &a, p->b ? &b : NULL);
}

uint64_t histd_shape_result_bytes(const histd_problem *p, const histd_shape *sa,
                                  const histd_shape *sb) {
  const uint64_t frames = shape_frames(sa, sb);
  const histd_statistic_info *in = histd_statistic_about(p->statistic);
  if (in != NULL && in->answer == HISTD_ANSWER_POINTS && in->binned) /* once over the frames */
    return shape_frame_n(sa, 0) * ((uint64_t)p->bins.count * 8 + in->row_bytes[0]) +
           (uint64_t)p->bins.count * 8;
  if (in != NULL && in->answer == HISTD_ANSWER_POINTS)
    return frames * shape_frame_n(sa, 0) * in->row_bytes[p->weighted];
  if (in != NULL && in->answer == HISTD_ANSWER_PAIRS)
    return 0; /* known once counted: histd_pairs_bytes */
  const uint64_t count = p->statistic == HISTD_STAT_WITHIN ? 1 : histd_bins_slots(&p->bins);
  uint64_t bytes = count * (p->weighted ? 16 : 8);
  bytes += (uint64_t)p->region_count * (count * (p->weighted ? 16 : 8) + 8); /* jackknife */
  if (p->per_frame)
    bytes += frames * (count + 2) * 8;
  return bytes;
}

/* r_max (or the radius) within half the box's shortest width; whose says
 * which box in the sentence. */
static int box_fits(const histd_problem *p, const histd_box *box, const char *whose, char *msg,
                    size_t msglen) {
  if (box->kind == HISTD_BOX_NONE || p->all_images) /* images: as far as r_max reaches */
    return 0;
  double half = histd_box_half_width(box), r_max;
  const char *what;
  if (!histd_statistic_about(p->statistic)->binned) {
    if (isinf(p->radius)) /* NEAREST anywhere: every point of B, past the grid */
      return 0;
    r_max = p->radius;
    what = "the radius";
  } else if (p->statistic == HISTD_STAT_RP_PI) {
    /* each axis's minimum image: r_p within half of x's and y's widths,
     * pi within half of z's (a cylinder's other images lie outside it) */
    if (box->kind == HISTD_BOX_TRICLINIC)
      return histd_fail(msg, msglen, HISTD_EINVAL,
                        "statistic rp_pi measures r_p and pi along the box's axes: the box "
                        "must be orthorhombic%s", whose);
    const double rp = histd_bins_edge(&p->bins, p->bins.count), hxy = fmin(box->ax, box->by) / 2;
    if (rp > hxy * (1 + 0x1p-50) || p->bins.max2 > box->cz / 2)
      return histd_fail(msg, msglen, HISTD_EINVAL,
                        "r_p's last edge %.17g and pi_max %.17g must stay within half the "
                        "periodic box's widths across and along the line of sight, %.17g and "
                        "%.17g%s",
                        rp, p->bins.max2, hxy, box->cz / 2, whose);
    return 0;
  } else if (p->bins.kind == HISTD_BINS_EDGES || p->bins.count != 0) {
    r_max = histd_bins_edge(&p->bins, p->bins.count);
    what = "the last bin edge (r_max)";
  } else {
    return 0; /* the default count stops at the half width (histd_default_bins) */
  }
  /* equal widths: r_max = width * count, which may round one ulp above
   * the r_max a client gave (width = r_max / buckets) */
  if (r_max > (p->bins.kind == HISTD_BINS_WIDTH ? half * (1 + 0x1p-50) : half))
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "%s, %.17g, exceeds half the periodic box's shortest perpendicular "
                      "width, %.17g%s: beyond it a pair has more than one image (images "
                      "\"all\" counts every one)",
                      what, r_max, half, whose);
  return 0;
}

/* Every periodic image: a histogram's, in a periodic box, without
 * exclusions, and no more translations than HISTD_MAX_IMAGES (for the first
 * frame's box; a later frame's is checked as it runs). */
static int images_check(const histd_problem *p, const histd_shape *a, const histd_shape *b,
                        char *msg, size_t msglen) {
  if (p->statistic != HISTD_STAT_HISTOGRAM)
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "images \"all\" counts a histogram's pairs at every periodic image; "
                      "it does not go with %s", histd_statistic_about(p->statistic)->asked_by);
  if (p->exclude_molecule)
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "images \"all\" does not go with exclude: an atom's images are not "
                      "its molecule's");
  if (p->bins.kind == HISTD_BINS_WIDTH && p->bins.count == 0)
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "images \"all\" needs the bins' reach: give buckets with bucket_width, "
                      "or r_max and buckets, edges or log_bins");
  const histd_shape *sb = b != NULL ? b : a;
  int32_t(*tr)[3] = NULL;
  size_t n = 0;
  int rc = histd__images_plan(p->frame_boxes ? &a->box : &p->box, a->min, a->max, sb->min,
                              sb->max, b == NULL, histd_bins_edge(&p->bins, p->bins.count), &tr,
                              &n, msg, msglen);
  free(tr);
  return rc;
}

/* A box the problem's pairs are measured in: in range (histd_box_check),
 * the points near enough to it, r_max within half its width; whose says
 * which box in the sentences. */
static int box_suits(const histd_problem *p, const histd_shape *a, const histd_shape *b,
                     const histd_box *box, const char *whose, char *msg, size_t msglen) {
  char why[256];
  int rc = histd_box_check(box, why, sizeof why);
  if (rc != 0)
    return histd_fail(msg, msglen, rc, "%s%s", why, whose);
  if ((rc = points_near(a, "A", box, whose, msg, msglen)) != 0 ||
      (rc = points_near(b, "B", box, whose, msg, msglen)) != 0)
    return rc;
  return box_fits(p, box, whose, msg, msglen);
}

int histd_problem_check(const histd_problem *p, const histd_shape *a, const histd_shape *b,
                        char *msg, size_t msglen) {
  int rc = histd_box_check(&p->box, msg, msglen);
  const histd_statistic_info *in = histd_statistic_about(p->statistic);
  if (rc == 0 && in != NULL && in->binned)
    rc = bins_validate(&p->bins, msg, msglen);
  if (rc == 0)
    rc = axis2_validate(p, msg, msglen);
  if (rc == 0 && p->ravg &&
      (!(p->statistic == HISTD_STAT_HISTOGRAM || p->statistic == HISTD_STAT_RP_PI ||
         p->statistic == HISTD_STAT_S_MU) ||
       p->per_frame || p->exclude_molecule || p->species != NULL || p->all_images))
    rc = histd_fail(msg, msglen, HISTD_EINVAL,
                    "ravg averages each bin's separation over every pair of a histogram, "
                    "rp_pi or s_mu; it does not go with within, a per-point statistic, "
                    "per_frame, exclude, partials or images \"all\"");
  if (rc != 0)
    return rc;
  if (p->statistic == HISTD_STAT_WITHIN) {
    if (!isfinite(p->radius) || !(p->radius >= 0))
      return histd_fail(msg, msglen, HISTD_EINVAL,
                        "within must be a finite distance >= 0, got %g", p->radius);
  } else if (p->statistic != HISTD_STAT_HISTOGRAM && !(in != NULL && in->needs == HISTD_CAN_BINS2) &&
             (rc = points_validate(p, a, b, msg, msglen)) != 0) {
    return rc;
  }
  if (p->weighted && histd_statistic_per_point(p->statistic)) {
    /* the sum of w_j over each point's neighbours: B's weights */
    if (!(b ? b : a)->weighted)
      return histd_fail(msg, msglen, HISTD_EINVAL,
                        "weights were asked for, but the points of %s carry none",
                        b ? "B" : "the dataset");
  } else if (p->weighted) {
    if (!a->weighted)
      return histd_fail(msg, msglen, HISTD_EINVAL,
                        "weights were asked for, but the points (A) carry none");
    if (b != NULL && !b->weighted)
      return histd_fail(msg, msglen, HISTD_EINVAL,
                        "weights were asked for, but the second point set (B) carries none");
  }
  const uint64_t frames = shape_frames(a, b);
  if (p->blocks > 0 && p->statistic != HISTD_STAT_HISTOGRAM)
    return histd_fail(msg, msglen, HISTD_EINVAL, "blocks are for a histogram's frames");
  if (p->blocks > 0 && frames < p->blocks)
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "blocks: %u blocks need at least as many frames, and the job has %llu "
                      "(a trajectory's frames, or frames START:STOP:STEP)",
                      p->blocks, (unsigned long long)frames);
  if (p->per_frame && p->statistic == HISTD_STAT_HISTOGRAM &&
      frames * p->bins.count > HISTD_PER_FRAME_MAX)
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "per_frame keeps %llu frames x %u bins of counts, more than %llu (1 GiB): "
                      "ask for fewer frames (frames START:STOP:STEP) or bins",
                      (unsigned long long)frames, p->bins.count,
                      (unsigned long long)HISTD_PER_FRAME_MAX);
  if ((rc = frames_validate(a, b, msg, msglen)) != 0 ||
      (p->exclude_molecule && (rc = exclusions_check(p, a, b, msg, msglen)) != 0) ||
      (p->all_images && (rc = images_check(p, a, b, msg, msglen)) != 0))
    return rc;
  /* the job's box, or the file's (its first frame's: the others are the
   * points' to tell, histd_problem_validate) */
  return box_suits(p, a, b, p->frame_boxes ? &a->box : &p->box,
                   p->frame_boxes && a->frames > 1 ? " (frame 1's, from the file)" : "", msg,
                   msglen);
}

int histd_problem_validate(const histd_problem *p, char *msg, size_t msglen) {
  if (p->a == NULL)
    return histd_fail(msg, msglen, HISTD_EINVAL, "a problem needs its points");
  const bool regions = p->regions_a != NULL;
  if (p->shared != NULL || p->species != NULL || regions) { /* its pieces, each a plain problem */
    histd_problem piece;
    int rc = 0;
    if (histd_statistic_about(p->statistic)->answer != HISTD_ANSWER_BINS ||
        (p->shared != NULL && (p->b == NULL || p->species != NULL || regions)) ||
        (p->species != NULL && (p->b != NULL || p->species_count == 0 || regions)) ||
        (regions && (p->region_count == 0 || (p->b != NULL) != (p->regions_b != NULL) ||
                     p->per_frame || p->blocks > 0)))
      return histd_fail(msg, msglen, HISTD_EINVAL,
                        "a problem in pieces is a statistic in bins: two selections that share "
                        "atoms, one set's species, or jackknife regions");
    for (uint32_t k = 0, n = histd_problem_pieces(p); k < n && rc == 0; k++) {
      histd_problem_piece(p, k, &piece);
      if (!regions || histd_problem_pairs(&piece) > 0) /* (a region may be empty) */
        rc = histd_problem_validate(&piece, msg, msglen);
    }
    return rc;
  }
  histd_shape a, b;
  histd_dataset_shape(p->a, &a);
  if (p->b != NULL)
    histd_dataset_shape(p->b, &b);
  int rc = histd_problem_check(p, &a, p->b ? &b : NULL, msg, msglen);
  if (rc == 0)
    rc = point_frames_validate(p, msg, msglen);
  if (rc == 0 && p->exclude_molecule)
    rc = exclusions_validate(p, msg, msglen);
  if (rc != 0 || !p->frame_boxes)
    return rc;
  const size_t frames = histd_dataset_frames(p->a);
  for (size_t f = 1; f < frames; f++) { /* every frame's own box (the first's is checked) */
    const histd_box *box = &p->a->frame[f].box;
    char whose[64];
    snprintf(whose, sizeof whose, " (frame %zu's, from the file)", f + 1);
    if ((rc = box_suits(p, &a, p->b ? &b : NULL, box, whose, msg, msglen)) != 0)
      return rc;
    if ((box->kind == HISTD_BOX_NONE) != (p->a->box.kind == HISTD_BOX_NONE))
      return histd_fail(msg, msglen, HISTD_EINVAL,
                        "frame %zu has %s periodic box and frame 1 has %s: the frames of "
                        "one job must all be periodic or all open", f + 1,
                        box->kind == HISTD_BOX_NONE ? "no" : "a",
                        box->kind == HISTD_BOX_NONE ? "one" : "none");
  }
  return 0;
}

/* The largest |w| of ds, and the smallest nonzero one (+inf: none). */
static void weight_range(const histd_dataset *ds, double *big, double *small) {
  *big = 0;
  *small = INFINITY;
  for (size_t i = 0; i < ds->n; i++) {
    const double v = fabs(ds->w[i]);
    *big = v > *big ? v : *big;
    *small = v > 0 && v < *small ? v : *small;
  }
}

/* The weights' range (engine.h): every bin's sum of |w_i w_j| at most
 * 2^1000, every nonzero product normal. */
int histd__weights_check(const histd_problem *p, char *msg, size_t msglen) {
  if (!p->weighted)
    return 0;
  double big_a, small_a, big_b, small_b;
  if (histd_statistic_per_point(p->statistic)) { /* sums of B's w_j, no products */
    const histd_dataset *src = p->b != NULL ? p->b : p->a;
    weight_range(src, &big_b, &small_b);
    if (!(big_b * (double)src->n <= 0x1p1000))
      return histd_fail(msg, msglen, HISTD_EINVAL,
                        "the per-point weight sums could overflow binary64: the largest |w| of "
                        "%s (%g) times its %zu points exceeds 2^1000 (about 1.1e301); scale the "
                        "weights down",
                        p->b ? "B" : "the dataset", big_b, src->n);
    return 0;
  }
  weight_range(p->a, &big_a, &small_a);
  if (p->b != NULL)
    weight_range(p->b, &big_b, &small_b);
  else
    big_b = big_a, small_b = small_a;
  const double pairs = (double)histd_problem_pairs(p);
  if (!(big_a * big_b * pairs <= 0x1p1000)) /* also when big_a * big_b overflows */
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "the weighted sums could overflow binary64: the largest |w| of A (%g) "
                      "times that of %s (%g) times the %.0f pairs exceeds 2^1000 (about "
                      "1.1e301); scale the weights down",
                      big_a, p->b ? "B" : "A", big_b, pairs);
  /* dm-tree's nodes and the CPU's weighted groups add one side's weights
   * before they multiply: those sums must not overflow either (a tiny w
   * on one side keeps the products finite, not the other side's sum) */
  for (int side = 0; side < (p->b != NULL ? 2 : 1); side++) {
    const histd_dataset *ds = side ? p->b : p->a;
    const double big = side ? big_b : big_a;
    if (!(big * (double)ds->n <= 0x1p1000))
      return histd_fail(msg, msglen, HISTD_EINVAL,
                        "the sums of %s's weights could overflow binary64: its largest |w| (%g) "
                        "times its %zu points exceeds 2^1000 (about 1.1e301); scale the weights "
                        "down",
                        side ? "B" : "A", big, ds->n);
  }
  /* ravg sums (w_i w_j) u, u below axis 1's last edge and, as u * u is
   * finite, below 2^512 (a default count's edge is not known yet) */
  if (p->ravg) {
    const double u_max =
        p->bins.count > 0 ? fmin(histd_bins_edge(&p->bins, p->bins.count), 0x1p512) : 0x1p512;
    if (!(big_a * big_b * pairs * u_max <= 0x1p1000))
      return histd_fail(msg, msglen, HISTD_EINVAL,
                        "ravg's sums could overflow binary64: the largest |w| of A (%g) times "
                        "that of %s (%g) times the %.0f pairs times the largest separation "
                        "binned (%g) exceeds 2^1000 (about 1.1e301); scale the weights or the "
                        "coordinates down",
                        big_a, p->b ? "B" : "A", big_b, pairs, u_max);
  }
  /* scaled by 2^600 each, so that the product of two subnormals is normal */
  if (small_a < INFINITY && small_b < INFINITY &&
      ldexp(small_a, 600) * ldexp(small_b, 600) < 0x1p178)
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "the weights' products could underflow binary64: the smallest nonzero |w| "
                      "of A (%g) times that of %s (%g) is below 2^-1022 (about 2.2e-308), where "
                      "products lose their precision; scale the weights up",
                      small_a, p->b ? "B" : "A", small_b);
  return 0;
}

int histd_default_buckets(const histd_dataset *ds, double width, uint32_t *buckets, char *msg,
                          size_t msglen) {
  if (!(width > 0) || !isfinite(width))
    return histd_fail(msg, msglen, HISTD_EINVAL, "bucket_width must be > 0, got %g", width);
  if (isinf(histd_dataset_diagonal(ds)))
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "the data's diagonal overflows binary64 (the points span more than about "
                      "1e308): no number of buckets covers every pair; give buckets");
  double q = floor(histd_dataset_diagonal(ds) / width);
  if (!(q < HISTD_MAX_BUCKETS))
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "bucket_width %g is too small: covering the data's diagonal "
                      "(%g) would need more than %u buckets",
                      width, histd_dataset_diagonal(ds), HISTD_MAX_BUCKETS);
  *buckets = (uint32_t)q + 1;
  return 0;
}

/* The bin count a WIDTH problem gets when it names none, in `box` (the
 * job's, or the narrowest frame's) over points of bounds a (and b). */
static int default_bins(const histd_problem *p, const histd_box *box, const histd_shape *a,
                        const histd_shape *b, uint32_t *count, char *msg, size_t msglen) {
  const double w = p->bins.width;
  if (box->kind != HISTD_BOX_NONE) {
    double half = histd_box_half_width(box), q = floor(half / w);
    if (q * w > half) /* the product rounded up */
      q -= 1;
    if (!(q >= 1))
      return histd_fail(msg, msglen, HISTD_EINVAL,
                        "bucket_width %g is wider than half the periodic box (%g): no bin fits",
                        w, half);
    if (!(q <= HISTD_MAX_BUCKETS))
      return histd_fail(msg, msglen, HISTD_EINVAL,
                        "bucket_width %g is too small: half the box (%g) would need more "
                        "than %u buckets; give buckets", w, half, HISTD_MAX_BUCKETS);
    *count = (uint32_t)q;
    return 0;
  }
  histd_dataset hull;
  memset(&hull, 0, sizeof hull);
  hull.n = a->n;
  memcpy(hull.min, a->min, sizeof hull.min);
  memcpy(hull.max, a->max, sizeof hull.max);
  if (b != NULL && b->n > 0) {
    for (int i = 0; i < 3; i++) {
      hull.min[i] = a->n ? fmin(a->min[i], b->min[i]) : b->min[i];
      hull.max[i] = a->n ? fmax(a->max[i], b->max[i]) : b->max[i];
    }
    hull.n = a->n + b->n;
  }
  return histd_default_buckets(&hull, w, count, msg, msglen);
}

int histd_default_bins_shape(const histd_problem *p, const histd_shape *a, const histd_shape *b,
                             uint32_t *count, char *msg, size_t msglen) {
  return default_bins(p, p->frame_boxes ? &a->box : &p->box, a, b, count, msg, msglen);
}

/* The bin count a WIDTH problem gets when it names none: every pair of an
 * open box (the diagonal of A, or of A and B together), or in a periodic box
 * the bins that fit within its half width (the narrowest frame's). */
int histd_default_bins(const histd_problem *p, uint32_t *count, char *msg, size_t msglen) {
  const histd_box *box = &p->box;
  size_t frames = p->frame_boxes ? histd_dataset_frames(p->a) : 1;
  for (size_t f = 0; p->frame_boxes && f < frames; f++) { /* the narrowest frame's */
    const histd_box *fb = frames == 1 ? &p->a->box : &p->a->frame[f].box;
    if (f == 0 || histd_box_half_width(fb) < histd_box_half_width(box))
      box = fb;
  }
  histd_shape a, b;
  histd_dataset_shape(p->a, &a);
  if (p->b != NULL)
    histd_dataset_shape(p->b, &b);
  return default_bins(p, box, &a, p->b ? &b : NULL, count, msg, msglen);
}

/* ---- the execution ------------------------------------------------------------ */

void histd_exec_init(histd_exec *ex) {
  memset(ex, 0, sizeof *ex);
  ex->precision = HISTD_PRECISION_EXACT;
  strcpy(ex->kernel, "auto");
}

int histd_exec_validate(const histd_exec *ex, const histd_problem *p, char *msg,
                        size_t msglen) {
  return histd_exec_check(ex, p != NULL ? histd_problem_needs(p) : 0, msg, msglen);
}

int histd_exec_check(const histd_exec *ex, unsigned needs, char *msg, size_t msglen) {
  if (ex->precision != HISTD_PRECISION_EXACT && ex->precision != HISTD_PRECISION_FAST)
    return histd_fail(msg, msglen, HISTD_EINVAL, "precision must be \"exact\" or \"fast\"");
  if (ex->block_size != 0 &&
      (ex->block_size < HISTD_MIN_BLOCK_SIZE || ex->block_size > HISTD_MAX_BLOCK_SIZE ||
       ex->block_size % 32 != 0))
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "block_size must be a multiple of 32 from %u to %u, got %u",
                      HISTD_MIN_BLOCK_SIZE, HISTD_MAX_BLOCK_SIZE, ex->block_size);
  if (memchr(ex->kernel, '\0', sizeof ex->kernel) == NULL)
    return histd_fail(msg, msglen, HISTD_EINVAL, "kernel name is too long");
  const histd_kernel *k = histd_kernel_find(ex->kernel);
  if (k == NULL)
    return histd_fail(msg, msglen, HISTD_ENOENT,
                      "unknown kernel \"%s\" (see the list of kernels)", ex->kernel);
  if (k->block != 0 && ex->block_size != 0 && ex->block_size != k->block)
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "kernel \"%s\" runs blocks of %u threads: block_size must be 0 or %u, got %u",
                      k->name, k->block, k->block, ex->block_size);
  if (!histd_kernel_can_do(k, needs, msg, msglen))
    return HISTD_EINVAL;
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

uint64_t histd_pair_bucket(double xi, double yi, double zi, double xj, double yj, double zj,
                           double width) {
  const histd_metric open = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  double b = floor(histd_pair_d(&open, xi, yi, zi, xj, yj, zj) / width);
  return b < 18446744073709551616.0 ? (uint64_t)b : UINT64_MAX;
}
