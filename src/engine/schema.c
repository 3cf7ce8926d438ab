/*
 * schema.c -- the table of a result's fields (include/histd/schema.h).
 *
 * One row a field, in the order the JSON document lists them. Each row
 * says when a result has the field (present), how to read element i
 * (get), and for the fields the store keeps, which member of histd_result
 * holds it. The predicates and getters are one-liners, generated below so
 * that a row reads as what it is.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "histd/schema.h"

/* ---- when a result has a field ------------------------------------------ */

static bool always(const histd_result *r) { (void)r; return true; }
static bool is_cross(const histd_result *r) { return r->cross; }
static bool has_select_a(const histd_result *r) { return r->select_a[0] != '\0'; }
static bool has_select_b(const histd_result *r) { return r->select_b[0] != '\0'; }
static bool excludes(const histd_result *r) { return r->exclude_molecule; }
static bool has_unit(const histd_result *r) { return r->unit[0] != '\0'; }
static bool periodic(const histd_result *r) { return r->volume > 0; }
static bool all_images(const histd_result *r) { return r->all_images; }
static bool is_within(const histd_result *r) { return r->statistic == HISTD_STAT_WITHIN; }
static bool within_weighted(const histd_result *r) {
  return r->statistic == HISTD_STAT_WITHIN && r->weighted != NULL;
}
/* its answer has the job's bins: a histogram, or per point a histogram */
static bool is_histogram(const histd_result *r) {
  const histd_statistic_info *in = histd_statistic_about(r->statistic);
  return in != NULL && in->binned;
}
static bool has_bins(const histd_result *r) {
  return is_histogram(r) || r->statistic == HISTD_STAT_WITHIN;
}
static bool has_radius(const histd_result *r) { return !is_histogram(r); }
static bool width_bins(const histd_result *r) {
  return is_histogram(r) && r->bins.kind == HISTD_BINS_WIDTH;
}
static bool explicit_edges(const histd_result *r) {
  return has_bins(r) && r->bins.kind == HISTD_BINS_EDGES;
}
static bool hist_weighted(const histd_result *r) { return is_histogram(r) && r->weighted; }
static bool kept_weighted(const histd_result *r) { return has_bins(r) && r->weighted; }
static bool hist_periodic(const histd_result *r) {
  return is_histogram(r) && r->volume > 0 && r->bins.count2 == 0; /* g(r): of d */
}
static bool two_axes(const histd_result *r) { return is_histogram(r) && r->bins.count2 > 0; }
static bool has_ravg(const histd_result *r) { return is_histogram(r) && r->rsum != NULL; }
static bool is_theta(const histd_result *r) {
  return r->statistic == HISTD_STAT_THETA && r->theta_edges != NULL;
}
static bool per_frame(const histd_result *r) { return has_bins(r) && r->frame_counts != NULL; }
static bool per_frame_periodic(const histd_result *r) { return per_frame(r) && r->volume > 0; }
static bool has_blocks(const histd_result *r) { return per_frame_periodic(r) && r->blocks > 1; }
static bool per_frame_below(const histd_result *r) { return per_frame(r) && r->frame_below; }
static bool has_partials(const histd_result *r) { return is_histogram(r) && r->partials > 0; }
static bool has_norm(const histd_result *r) {
  return is_histogram(r) && r->norm != HISTD_NORM_UNSET && (r->norm != HISTD_NORM_RDF ||
                                                            r->volume > 0);
}
static bool partials_periodic(const histd_result *r) { return has_partials(r) && r->volume > 0; }
static bool has_regions(const histd_result *r) { return is_histogram(r) && r->regions > 0; }
static bool regions_weighted(const histd_result *r) {
  return has_regions(r) && r->region_weighted != NULL;
}
static bool regions_cross(const histd_result *r) { return has_regions(r) && r->cross; }
static bool regions_cross_weighted(const histd_result *r) {
  return regions_weighted(r) && r->cross;
}
static bool per_point(const histd_result *r) { return histd_statistic_per_point(r->statistic); }
static bool has_point_index(const histd_result *r) { return r->point_index != NULL; }
static bool point_counts(const histd_result *r) {
  return r->statistic == HISTD_STAT_POINT_COUNTS;
}
static bool point_weighted(const histd_result *r) { return r->point_weighted != NULL; }
static bool nearest(const histd_result *r) { return r->statistic == HISTD_STAT_NEAREST; }
static bool point_hist(const histd_result *r) {
  return r->statistic == HISTD_STAT_POINT_HISTOGRAM;
}
static bool point_hist_periodic(const histd_result *r) { return point_hist(r) && r->volume > 0; }
static bool pair_list(const histd_result *r) {
  const histd_statistic_info *in = histd_statistic_about(r->statistic);
  return in != NULL && in->answer == HISTD_ANSWER_PAIRS;
}
static bool pair_frames(const histd_result *r) { return pair_list(r) && r->frames > 1; }
static bool has_reason(const histd_result *r) { return r->reason[0] != '\0'; }

/* ---- element i of a field ----------------------------------------------- */

#define GET(fn, member, expr)                                                    \
  static void fn(const histd_result *r, uint64_t i, uint64_t *acc, histd_fvalue *v) { \
    (void)r, (void)i, (void)acc;                                                 \
    v->member = (expr);                                                          \
  }
GET(get_n, u, r->n)
GET(get_n_b, u, r->n_b)
GET(get_cross, b, r->cross)
GET(get_pairing, s,
    r->pairing == HISTD_PAIRING_DISTINCT  ? "distinct"
    : r->pairing == HISTD_PAIRING_ORDERED ? "ordered"
    : r->cross                            ? "cross"
                                          : "self")
GET(get_select_a, s, r->select_a)
GET(get_select_b, s, r->select_b)
GET(get_exclude, s, "molecule")
GET(get_excluded, u, r->excluded)
GET(get_unit, s, r->unit)
GET(get_frames, u, r->frames > 0 ? r->frames : 1)
GET(get_volume, d, r->volume)
GET(get_box_source, s, r->box_from_dataset ? "dataset" : "job")
GET(get_images, s, "all")
GET(get_density, d, r->density)
GET(get_radius, d, r->radius)
GET(get_within, u, r->within)
GET(get_weighted_within, d, r->weighted[0])
GET(get_bins, s, r->bins.kind == HISTD_BINS_EDGES ? "edges" : "width")
GET(get_bucket_width, d, r->bins.width)
GET(get_buckets, u, r->bins.count)
GET(get_edge, d, histd_bins_edge(&r->bins, (uint32_t)i))
GET(get_buckets2, u, r->bins.count2)
GET(get_max2, d, r->bins.max2)
/* axis 2's edges: k fl(max2 / count2), the last max2 itself */
GET(get_edge2, d, histd_bins_edge2(&r->bins, (uint32_t)i))
GET(get_los, s, r->los_midpoint ? "midpoint" : "z")
GET(get_rsum, d, r->rsum[i])
GET(get_theta_edge, d, r->theta_edges[i])
/* ravg: a bin's sum of (w_i w_j) u over its weight (its count unweighted);
 * NaN (null) for an empty bin */
GET(get_ravg, d,
    r->rsum[i] / (r->weighted != NULL ? r->weighted[i] : (double)r->counts[i]))
GET(get_count, u, r->counts[i])
GET(get_weighted, d, r->weighted[i])
GET(get_frame_total, u, r->frame_total[i])
GET(get_frame_count, u, r->frame_counts[i])
GET(get_frame_volume, d, r->frame_volume[i])
GET(get_frame_g, d, histd_result_frame_g(r, i / r->bins.count, (uint32_t)(i % r->bins.count)))
GET(get_frame_below, u, r->frame_below[i])
GET(get_blocks, u, r->blocks)
GET(get_below, u, r->below)
GET(get_point_n, u, r->point_n)
GET(get_stored_values, u, r->stored_values)
GET(get_index, u, r->point_index != NULL ? r->point_index[i] : i)
GET(get_neighbours, u, r->point_counts[i])
GET(get_neighbour_weights, d, r->point_weighted[i])
GET(get_nearest, i, r->nearest_j[i])
GET(get_nearest_d, d, r->nearest_d[i])
GET(get_point_hist, u, r->point_hist[i])
GET(get_point_below, u, r->point_below[i])
GET(get_point_partners, u, r->point_partners[i])
GET(get_point_g, d, histd_result_point_g(r, i / r->bins.count, (uint32_t)(i % r->bins.count)))
GET(get_pairs, u, r->pairs)
GET(get_frame_pairs, u, r->frame_pairs[i])
GET(get_overflow, u, r->overflow)
GET(get_total, u, r->total)
GET(get_kernel, s, r->kernel)
GET(get_reason, s, r->reason)
GET(get_block_size, u, r->block_size)
GET(get_threads, u, r->threads)
GET(get_precision, s, histd_precision_name(r->precision))
GET(get_exact, b, r->exact)
GET(get_refined, u, r->refined_pairs)
GET(get_device, s, r->device)
GET(get_t_queue, d, r->timing.queue_ms)
GET(get_t_parse, d, r->timing.parse_ms)
GET(get_t_transfer, d, r->timing.transfer_ms)
GET(get_t_kernel, d, r->timing.kernel_ms)
GET(get_t_total, d, r->timing.total_ms)
GET(get_volume_sum, d, r->volume_sum)
GET(get_partials, u, r->partials)
GET(get_species, s, r->species)
GET(get_partial_total, u, r->partial_total[i])
GET(get_partial_below, u, r->partial_below[i])
GET(get_partial_na, u, r->partial_na[i])
GET(get_partial_nb, u, r->partial_nb[i])
GET(get_partial_density, d, r->partial_density[i])
GET(get_partial_count, u, r->partial_counts[i])
GET(get_regions, u, r->regions)
GET(get_region_total, u, r->region_total[i])
GET(get_region_count, u, r->region_counts[i])
GET(get_region_weighted, d, r->region_weighted[i])
GET(get_region_na, u, r->region_na[i])
GET(get_region_nb, u, r->region_nb[i])
GET(get_region_wa, d, r->region_wa[i])
GET(get_region_wa2, d, r->region_wa2[i])
GET(get_region_wb, d, r->region_wb[i])
GET(get_region_wb2, d, r->region_wb2[i])
#undef GET

static void get_statistic(const histd_result *r, uint64_t i, uint64_t *acc, histd_fvalue *v) {
  (void)i;
  (void)acc;
  const histd_statistic_info *in = histd_statistic_about(r->statistic);
  v->s = in != NULL ? in->name : "?";
}

/* g(r) and the coordination number of bin i (histd_result_rdf_bin); the
 * coordination carries the cumulative count in *acc from bin to bin */
static void get_g(const histd_result *r, uint64_t i, uint64_t *acc, histd_fvalue *v) {
  uint64_t cumulative = 0;
  double n;
  (void)acc;
  histd_result_rdf_bin(r, (uint32_t)i, &cumulative, &v->d, &n);
}

static void get_coordination(const histd_result *r, uint64_t i, uint64_t *acc, histd_fvalue *v) {
  double g;
  histd_result_rdf_bin(r, (uint32_t)i, acc, &g, &v->d);
}

/* ---- MDAnalysis's normalisations ------------------------------------------- */

/* Bin i as InterRDF's results.rdf (MDAnalysis 2.4.2): its count of ordered
 * pairs (a self job's pairs twice) over F frames, / F, / (F V_shell), or
 * / (F V_shell N / <V>) with N the ordered pairs a frame and <V> the
 * frames' mean volume: count_i <V> / (V_shell total) in histd's terms. */
static void get_rdf(const histd_result *r, uint64_t i, uint64_t *acc, histd_fvalue *v) {
  (void)acc;
  const double frames = r->frames > 0 ? (double)r->frames : 1;
  const double twice = r->cross ? 1.0 : 2.0;
  const double shell = histd_bins_shell(&r->bins, (uint32_t)i);
  const double count = twice * (double)r->counts[i];
  if (r->norm == HISTD_NORM_COUNTS)
    v->d = count / frames;
  else if (r->norm == HISTD_NORM_DENSITY)
    v->d = count / (frames * shell);
  else
    v->d = r->total > 0 ? (double)r->counts[i] * (r->volume_sum / frames) /
                              (shell * (double)r->total)
                        : 0;
}
static void get_norm(const histd_result *r, uint64_t i, uint64_t *acc, histd_fvalue *v) {
  (void)i, (void)acc;
  v->s = histd_norm_name(r->norm);
}

/* ---- species partials ------------------------------------------------------ */

/* Species s of r's list (its name, in buf). */
static const char *species_name(const histd_result *r, uint32_t s, char *buf, size_t len) {
  const char *p = r->species;
  for (uint32_t k = 0; k < s && p != NULL; k++)
    if ((p = strchr(p, ',')) != NULL)
      p++;
  size_t n = p == NULL ? 0 : strcspn(p, ",");
  snprintf(buf, len, "%.*s", (int)(n < len ? n : len - 1), p == NULL ? "" : p);
  return buf;
}
/* Element i's species pair: partial k (and its bin) from i. */
static void partial_species(const histd_result *r, uint64_t i, int which, histd_fvalue *v) {
  static _Thread_local char buf[2][64];
  uint32_t s, t;
  histd_species_pair(histd_species_of(r->partials), (uint32_t)i, &s, &t);
  v->s = species_name(r, which ? t : s, buf[which], sizeof buf[which]);
}
static void get_partial_a(const histd_result *r, uint64_t i, uint64_t *acc, histd_fvalue *v) {
  (void)acc;
  partial_species(r, i, 0, v);
}
static void get_partial_b(const histd_result *r, uint64_t i, uint64_t *acc, histd_fvalue *v) {
  (void)acc;
  partial_species(r, i, 1, v);
}
/* Partial i / bins, bin i % bins: g, or a coordination (which 1: ab, 2: ba).
 * The cumulative count runs in acc: callers walk i in order. */
static void partial_bin(const histd_result *r, uint64_t i, uint64_t *acc, int which, double *out) {
  const uint32_t bins = r->bins.count, k = (uint32_t)(i / bins), bin = (uint32_t)(i % bins);
  if (bin == 0)
    *acc = r->partial_below[k];
  *acc += r->partial_counts[i];
  double g, ab, ba;
  histd_result_partial_bin(r, k, bin, *acc, &g, &ab, &ba);
  *out = which == 0 ? g : which == 1 ? ab : ba;
}
static void get_partial_g(const histd_result *r, uint64_t i, uint64_t *acc, histd_fvalue *v) {
  partial_bin(r, i, acc, 0, &v->d);
}
static void get_partial_ab(const histd_result *r, uint64_t i, uint64_t *acc, histd_fvalue *v) {
  partial_bin(r, i, acc, 1, &v->d);
}
static void get_partial_ba(const histd_result *r, uint64_t i, uint64_t *acc, histd_fvalue *v) {
  partial_bin(r, i, acc, 2, &v->d);
}

/* ---- the blocks: g and coordination of each, their mean and error -------- */

static void get_block_g(const histd_result *r, uint64_t i, uint64_t *acc, histd_fvalue *v) {
  (void)acc;
  double n;
  histd_result_block_bin(r, (uint32_t)(i / r->bins.count), (uint32_t)(i % r->bins.count), &v->d,
                         &n);
}
static void get_block_coordination(const histd_result *r, uint64_t i, uint64_t *acc,
                                   histd_fvalue *v) {
  (void)acc;
  double g;
  histd_result_block_bin(r, (uint32_t)(i / r->bins.count), (uint32_t)(i % r->bins.count), &g,
                         &v->d);
}
/* Bin k's mean over the blocks of g (which 0) or coordination (1), and the
 * standard error of that mean: the blocks' sample deviation / sqrt(K). */
static void block_stats(const histd_result *r, uint64_t k, int which, double *mean, double *sem) {
  const uint32_t K = r->blocks;
  double sum = 0, sq = 0, x[2];
  for (uint32_t b = 0; b < K; b++) {
    histd_result_block_bin(r, b, (uint32_t)k, &x[0], &x[1]);
    sum += x[which];
  }
  *mean = sum / K;
  for (uint32_t b = 0; b < K; b++) {
    histd_result_block_bin(r, b, (uint32_t)k, &x[0], &x[1]);
    sq += (x[which] - *mean) * (x[which] - *mean);
  }
  *sem = sqrt(sq / (K - 1) / K);
}
#define BLOCK_STAT(fn, which, out)                                                      \
  static void fn(const histd_result *r, uint64_t i, uint64_t *acc, histd_fvalue *v) { \
    (void)acc;                                                                          \
    double mean, sem;                                                                   \
    block_stats(r, i, which, &mean, &sem);                                              \
    v->d = out;                                                                         \
  }
BLOCK_STAT(get_g_mean, 0, mean)
BLOCK_STAT(get_g_sem, 0, sem)
BLOCK_STAT(get_coordination_mean, 1, mean)
BLOCK_STAT(get_coordination_sem, 1, sem)

static void pair_frame(const histd_pair_record *p, histd_fvalue *v) { v->u = p->frame; }
static void pair_i(const histd_pair_record *p, histd_fvalue *v) { v->u = p->i; }
static void pair_j(const histd_pair_record *p, histd_fvalue *v) { v->u = p->j; }
static void pair_d(const histd_pair_record *p, histd_fvalue *v) { v->d = p->d; }

/* ---- the table ---------------------------------------------------------- */

#define OFF(m) offsetof(histd_result, m)
#define SZ(m) sizeof(((histd_result *)0)->m)
/* a scalar kept as its member's bytes; a string kept in its char array;
 * an array kept through its pointer member */
#define KEEP(m) OFF(m), SZ(m), 0
#define KEEP_STR(m) OFF(m), 0, SZ(m)
#define KEEP_ARRAY(m) OFF(m), 8, 0
#define SHOWN HISTD_OUT_SHOWN
#define ALL HISTD_OUT_ALL
/* kept and shown, but not in the text output (its layout says it already, or it is
 * a detail) */
#define NOTEXT (HISTD_OUT_ALL & ~HISTD_OUT_TEXT)
#define U64 HISTD_FT_U64
#define I64 HISTD_FT_I64
#define F64 HISTD_FT_F64
#define STR HISTD_FT_STR
#define BOOL HISTD_FT_BOOL
#define SCALAR HISTD_FS_SCALAR

static const histd_field table[] = {
    {"n", NULL, NULL, U64, SCALAR, "points", ALL, "the points of A, every frame's together",
     always, get_n, NULL, KEEP(n), NULL},
    {"n_b", NULL, NULL, U64, SCALAR, "points", ALL, "the points of B (A x B)", is_cross,
     get_n_b, NULL, KEEP(n_b), NULL},
    {"cross", NULL, NULL, BOOL, SCALAR, "", HISTD_OUT_STORE, "the pairs were A x B", always,
     get_cross, NULL, KEEP(cross), NULL},
    {"select_a", NULL, NULL, STR, SCALAR, "", ALL, "the atoms of A (a selection)",
     has_select_a, get_select_a, NULL, KEEP_STR(select_a), NULL},
    {"select_b", NULL, NULL, STR, SCALAR, "", ALL, "the atoms of B (a selection)",
     has_select_b, get_select_b, NULL, KEEP_STR(select_b), NULL},
    {"pairing", NULL, NULL, STR, SCALAR, "", ALL,
     "how the two selections of one dataset paired: self (the same atoms: i < j), distinct "
     "(atoms in both: each pair of distinct atoms once), cross (no atom in both) or ordered "
     "(every (a, b), as asked)",
     has_select_b, get_pairing, NULL, KEEP(pairing), NULL},
    {"exclude", NULL, NULL, STR, SCALAR, "", ALL,
     "molecule: the pairs within one molecule were left out", excludes, get_exclude, NULL,
     KEEP(exclude_molecule), NULL},
    {"excluded", NULL, NULL, U64, SCALAR, "pairs", ALL,
     "the pairs left out (within a molecule), not in total", excludes, get_excluded, NULL,
     KEEP(excluded), NULL},
    {"unit", NULL, NULL, STR, SCALAR, "", ALL,
     "the length unit the points' file implies; distances and edges are in it", has_unit,
     get_unit, NULL, KEEP_STR(unit), NULL},
    {"frames", NULL, NULL, U64, SCALAR, "", ALL, "the frames counted", always, get_frames,
     NULL, KEEP(frames), NULL},
    {"volume", NULL, NULL, F64, SCALAR, "length^3", ALL,
     "the periodic box's volume (over several frames, the one that normalises g(r): total / "
     "density)",
     periodic, get_volume, NULL, KEEP(volume), NULL},
    {"box_source", NULL, NULL, STR, SCALAR, "", ALL,
     "whose periodic box: the job's, or the dataset's own (its file's)", periodic,
     get_box_source, NULL, KEEP(box_from_dataset), NULL},
    {"images", NULL, NULL, STR, SCALAR, "", ALL,
     "all: every periodic image within the last edge was counted, an atom's own too "
     "(overflow is not counted; total is the pairs of distinct atoms g(r) is normalised by)",
     all_images, get_images, NULL, KEEP(all_images), NULL},
    {"density", NULL, NULL, F64, SCALAR, "pairs/length^3", NOTEXT,
     "the pair density: the sum over frames of each frame's pairs / its volume", periodic,
     get_density, NULL, KEEP(density), NULL},
    {"statistic", NULL, NULL, STR, SCALAR, "", NOTEXT,
     "histogram, within, per_point, nearest, pairs, per_point_histogram, rp_pi, s_mu or theta", always, get_statistic, NULL,
     KEEP(statistic), NULL},
    {"radius", NULL, NULL, F64, SCALAR, "length", ALL,
     "the radius R: pairs with d <= R (nearest: null for anywhere)", has_radius, get_radius,
     NULL, KEEP(radius), NULL},
    {"within", NULL, NULL, U64, SCALAR, "pairs", ALL, "the pairs with d <= radius", is_within,
     get_within, NULL, KEEP(within), NULL},
    {"weighted_within", NULL, NULL, F64, SCALAR, "", SHOWN,
     "the sum of w_i w_j over the pairs within the radius", within_weighted,
     get_weighted_within, NULL, 0, 0, 0, NULL},
    {"bins", NULL, NULL, STR, SCALAR, "", NOTEXT,
     "width: bin k holds floor(d / bucket_width) = k; edges: E[k] <= d < E[k+1]", is_histogram,
     get_bins, NULL, KEEP(bins.kind), has_bins},
    {"bucket_width", NULL, NULL, F64, SCALAR, "length", ALL, "the width of equal bins",
     width_bins, get_bucket_width, NULL, KEEP(bins.width), has_bins},
    {"buckets", NULL, NULL, U64, SCALAR, "", ALL, "the number of bins", is_histogram,
     get_buckets, NULL, KEEP(bins.count), has_bins},
    {"edges", NULL, NULL, F64, HISTD_FS_EDGES, "length", ALL,
     "the bins' edges, buckets + 1 of them", is_histogram, get_edge, NULL,
     KEEP_ARRAY(bins.edges), explicit_edges},
    {"buckets2", NULL, NULL, U64, SCALAR, "", ALL,
     "rp_pi, s_mu: the second axis's bins (pi's, or mu's), equal, from 0", two_axes,
     get_buckets2, NULL, KEEP(bins.count2), NULL},
    {"max2", NULL, NULL, F64, SCALAR, "", ALL,
     "rp_pi: pi_max (pi < pi_max counts); s_mu: mu_max (mu <= mu_max counts)", two_axes,
     get_max2, NULL, KEEP(bins.max2), NULL},
    {"edges2", NULL, NULL, F64, HISTD_FS_EDGES2, "", SHOWN,
     "the second axis's edges, buckets2 + 1 of them: k * (max2 / buckets2) (pi: a length; "
     "mu: a number)",
     two_axes, get_edge2, NULL, 0, 0, 0, NULL},
    {"los", NULL, NULL, STR, SCALAR, "", ALL,
     "rp_pi, s_mu: the line of sight, z (pi = |dz|) or midpoint (the pair's)", two_axes,
     get_los, NULL, KEEP(los_midpoint), NULL},
    {"theta_edges", NULL, NULL, F64, HISTD_FS_EDGES, "degrees",
     HISTD_OUT_JSON | HISTD_OUT_NPZ | HISTD_OUT_STORE,
     "theta: the angles' edges in degrees; edges are their chords 2 sin(theta / 2), which the "
     "unit vectors' chords are binned by (CSV and text show the chords)",
     is_theta, get_theta_edge, NULL, KEEP_ARRAY(theta_edges), NULL},
    {"counts", NULL, "count", U64, HISTD_FS_BINS, "pairs", ALL,
     "the pairs in each bin (rp_pi, s_mu: buckets x buckets2, a row of axis 2's bins for each "
     "of axis 1's)",
     is_histogram, get_count, NULL, KEEP_ARRAY(counts), has_bins},
    {"weighted", NULL, NULL, F64, HISTD_FS_BINS, "", ALL,
     "each bin's sum of w_i w_j (Neumaier-compensated)", hist_weighted, get_weighted, NULL,
     KEEP_ARRAY(weighted), kept_weighted},
    {"rsum", NULL, NULL, F64, HISTD_FS_BINS, "length", HISTD_OUT_STORE,
     "ravg: each bin's sum of (w_i w_j) u, u the separation its first axis bins", has_ravg,
     get_rsum, NULL, KEEP_ARRAY(rsum), NULL},
    {"ravg", NULL, NULL, F64, HISTD_FS_BINS, "length", SHOWN,
     "each bin's mean separation (d, r_p or s) over its pairs, weighted by w_i w_j with "
     "weights (Corrfunc's ravg); null for an empty bin",
     has_ravg, get_ravg, NULL, 0, 0, 0, NULL},
    {"g", NULL, NULL, F64, HISTD_FS_BINS, "", SHOWN,
     "g(r) in LAMMPS's convention: counts / (total V_shell / volume)", hist_periodic, get_g,
     NULL, 0, 0, 0, NULL},
    {"coordination", NULL, NULL, F64, HISTD_FS_BINS, "", SHOWN,
     "the cumulative count to each bin's upper edge per atom of A", hist_periodic,
     get_coordination, NULL, 0, 0, 0, NULL},
    {"total", "per_frame", "frame_total", U64, HISTD_FS_FRAMES, "pairs", ALL,
     "each frame's pairs", per_frame, get_frame_total, NULL, KEEP_ARRAY(frame_total), NULL},
    {"counts", "per_frame", "frame_count", U64, HISTD_FS_FRAME_BINS, "pairs", ALL,
     "each frame's counts in each bin", per_frame, get_frame_count, NULL,
     KEEP_ARRAY(frame_counts), NULL},
    {"volume", "per_frame", "frame_volume", F64, HISTD_FS_FRAMES, "length^3", ALL,
     "each frame's box volume", per_frame_periodic, get_frame_volume, NULL,
     KEEP_ARRAY(frame_volume), per_frame},
    {"g", "per_frame", "frame_g", F64, HISTD_FS_FRAME_BINS, "", SHOWN, "each frame's own g(r)",
     per_frame_periodic, get_frame_g, NULL, 0, 0, 0, NULL},
    {"below", "per_frame", "frame_below", U64, HISTD_FS_FRAMES, "pairs", ALL,
     "each frame's pairs below the first edge", per_frame_below, get_frame_below, NULL,
     KEEP_ARRAY(frame_below), NULL},
    {"norm", NULL, NULL, STR, SCALAR, "", ALL,
     "the normalisation of rdf: MDAnalysis's InterRDF norm (rdf, density or none)", has_norm,
     get_norm, NULL, KEEP(norm), NULL},
    {"rdf", NULL, NULL, F64, HISTD_FS_BINS, "", SHOWN,
     "InterRDF's results.rdf in that norm, from ordered pairs (a self job's twice): rdf "
     "count <V> / (V_shell total), density count / (F V_shell), none count / F",
     has_norm, get_rdf, NULL, 0, 0, 0, NULL},
    {"volume_sum", NULL, NULL, F64, SCALAR, "length^3", HISTD_OUT_STORE,
     "the frames' volumes summed (their mean is InterRDF's box volume)", periodic,
     get_volume_sum, NULL, KEEP(volume_sum), NULL},
    {"partials", NULL, NULL, U64, SCALAR, "", ALL,
     "species partials: the species pairs (s <= t), S(S+1)/2 of S species", has_partials,
     get_partials, NULL, KEEP(partials), NULL},
    {"species", NULL, NULL, STR, SCALAR, "", ALL, "the species, comma-separated, in order",
     has_partials, get_species, NULL, KEEP_STR(species), NULL},
    {"a", "partial", "species_a", STR, HISTD_FS_PARTIALS, "", SHOWN, "each partial's species s",
     has_partials, get_partial_a, NULL, 0, 0, 0, NULL},
    {"b", "partial", "species_b", STR, HISTD_FS_PARTIALS, "", SHOWN,
     "and t (s <= t in the species' order)", has_partials, get_partial_b, NULL, 0, 0, 0, NULL},
    {"total", "partial", "partial_total", U64, HISTD_FS_PARTIALS, "pairs", ALL,
     "each partial's pairs: N_s(N_s - 1)/2 or N_s N_t a frame, less the excluded", has_partials,
     get_partial_total, NULL, KEEP_ARRAY(partial_total), NULL},
    {"below", "partial", "partial_below", U64, HISTD_FS_PARTIALS, "pairs", ALL,
     "each partial's pairs below the first edge", has_partials, get_partial_below, NULL,
     KEEP_ARRAY(partial_below), NULL},
    {"n_a", "partial", "partial_n_a", U64, HISTD_FS_PARTIALS, "points", ALL,
     "the atoms of s, every frame's together", has_partials, get_partial_na, NULL,
     KEEP_ARRAY(partial_na), NULL},
    {"n_b", "partial", "partial_n_b", U64, HISTD_FS_PARTIALS, "points", ALL,
     "the atoms of t, every frame's together", has_partials, get_partial_nb, NULL,
     KEEP_ARRAY(partial_nb), NULL},
    {"density", "partial", "partial_density", F64, HISTD_FS_PARTIALS, "pairs/length^3",
     NOTEXT, "each partial's pair density: sum over frames of its pairs / the volume",
     partials_periodic, get_partial_density, NULL, KEEP_ARRAY(partial_density), has_partials},
    {"counts", "partial", "partial_count", U64, HISTD_FS_PARTIAL_BINS, "pairs", ALL,
     "each partial's counts in each bin", has_partials, get_partial_count, NULL,
     KEEP_ARRAY(partial_counts), NULL},
    {"g", "partial", "partial_g", F64, HISTD_FS_PARTIAL_BINS, "", SHOWN,
     "each partial's g(r): counts / (its pairs x V_shell / V)", partials_periodic,
     get_partial_g, NULL, 0, 0, 0, NULL},
    {"coordination_ab", "partial", "coordination_ab", F64, HISTD_FS_PARTIAL_BINS, "", SHOWN,
     "the atoms of t around an atom of s, to each bin's upper edge", has_partials,
     get_partial_ab, NULL, 0, 0, 0, NULL},
    {"coordination_ba", "partial", "coordination_ba", F64, HISTD_FS_PARTIAL_BINS, "", SHOWN,
     "the atoms of s around an atom of t", has_partials, get_partial_ba, NULL, 0, 0, 0, NULL},
    {"regions", NULL, NULL, U64, SCALAR, "", ALL,
     "jackknife: the regions R whose counts follow (the datasets' region labels 0 .. R-1)",
     has_regions, get_regions, NULL, KEEP(regions), NULL},
    {"total", "jackknife", "region_total", U64, HISTD_FS_REGIONS, "pairs", ALL,
     "each region's pairs: those with a point in it (a pair of regions a and b in a's and, if "
     "b != a, in b's); without region k's points the pairs are total less its",
     has_regions, get_region_total, NULL, KEEP_ARRAY(region_total), NULL},
    {"counts", "jackknife", "region_count", U64, HISTD_FS_REGION_BINS, "pairs", ALL,
     "each region's counts in each bin by the same rule (a row a region; rp_pi, s_mu: its "
     "bins as counts' rows, axis 2's within axis 1's); without region k the counts are "
     "counts less its row",
     has_regions, get_region_count, NULL, KEEP_ARRAY(region_counts), NULL},
    {"weighted", "jackknife", "region_weighted", F64, HISTD_FS_REGION_BINS, "", ALL,
     "each region's sums of w_i w_j in each bin by the same rule", regions_weighted,
     get_region_weighted, NULL, KEEP_ARRAY(region_weighted), NULL},
    {"n_a", "jackknife", "region_n_a", U64, HISTD_FS_REGIONS, "points", ALL,
     "each region's points of A", has_regions, get_region_na, NULL, KEEP_ARRAY(region_na),
     NULL},
    {"w_a", "jackknife", "region_w_a", F64, HISTD_FS_REGIONS, "", ALL,
     "the sum of their weights (Neumaier-compensated)", regions_weighted, get_region_wa, NULL,
     KEEP_ARRAY(region_wa), NULL},
    {"ww_a", "jackknife", "region_ww_a", F64, HISTD_FS_REGIONS, "", ALL,
     "the sum of their weights' squares: with w_a, each region's share of the pairs' sum of "
     "w_i w_j", regions_weighted, get_region_wa2, NULL, KEEP_ARRAY(region_wa2), NULL},
    {"n_b", "jackknife", "region_n_b", U64, HISTD_FS_REGIONS, "points", ALL,
     "A x B: each region's points of B", regions_cross, get_region_nb, NULL,
     KEEP_ARRAY(region_nb), NULL},
    {"w_b", "jackknife", "region_w_b", F64, HISTD_FS_REGIONS, "", ALL,
     "the sum of their weights", regions_cross_weighted, get_region_wb, NULL,
     KEEP_ARRAY(region_wb), NULL},
    {"ww_b", "jackknife", "region_ww_b", F64, HISTD_FS_REGIONS, "", ALL,
     "the sum of their weights' squares", regions_cross_weighted, get_region_wb2, NULL,
     KEEP_ARRAY(region_wb2), NULL},
    {"blocks", NULL, NULL, U64, SCALAR, "", ALL,
     "error bars: the frames cut into this many consecutive blocks (frame f in block f * "
     "blocks / frames)",
     has_blocks, get_blocks, NULL, KEEP(blocks), NULL},
    {"g", "block", "block_g", F64, HISTD_FS_BLOCK_BINS, "", SHOWN,
     "each block's g(r), by the rule of g over its frames", has_blocks, get_block_g, NULL, 0,
     0, 0, NULL},
    {"coordination", "block", "block_coordination", F64, HISTD_FS_BLOCK_BINS, "", SHOWN,
     "each block's coordination", has_blocks, get_block_coordination, NULL, 0, 0, 0, NULL},
    {"g_mean", "block", "g_mean", F64, HISTD_FS_BINS, "", SHOWN, "the blocks' mean g(r)",
     has_blocks, get_g_mean, NULL, 0, 0, 0, NULL},
    {"g_sem", "block", "g_sem", F64, HISTD_FS_BINS, "", SHOWN,
     "the standard error of that mean: the blocks' sample standard deviation / sqrt(blocks)",
     has_blocks, get_g_sem, NULL, 0, 0, 0, NULL},
    {"coordination_mean", "block", "coordination_mean", F64, HISTD_FS_BINS, "", SHOWN,
     "the blocks' mean coordination", has_blocks, get_coordination_mean, NULL, 0, 0, 0, NULL},
    {"coordination_sem", "block", "coordination_sem", F64, HISTD_FS_BINS, "", SHOWN,
     "its standard error", has_blocks, get_coordination_sem, NULL, 0, 0, 0, NULL},
    {"below", NULL, NULL, U64, SCALAR, "pairs", ALL, "the pairs with d below the first edge",
     is_histogram, get_below, NULL, KEEP(below), has_bins},
    {"stored_values", NULL, NULL, U64, SCALAR, "", HISTD_OUT_STORE,
     "the values of the arrays stored beside the head", always, get_stored_values, NULL,
     KEEP(stored_values), NULL},
    {"point_n", NULL, NULL, U64, SCALAR, "points", HISTD_OUT_STORE, "A's points a frame",
     per_point, get_point_n, NULL, KEEP(point_n), NULL},
    {"index", NULL, NULL, U64, HISTD_FS_POINTS, "", ALL,
     "each row's point: its index in the dataset (a selection's atoms)", per_point, get_index,
     NULL, KEEP_ARRAY(point_index), has_point_index},
    {"neighbours", NULL, NULL, U64, HISTD_FS_FRAME_POINTS, "points", ALL,
     "each point's neighbours within the radius (other than itself)", point_counts,
     get_neighbours, NULL, KEEP_ARRAY(point_counts), NULL},
    {"neighbour_weights", NULL, NULL, F64, HISTD_FS_FRAME_POINTS, "", ALL,
     "the sum of those neighbours' weights", point_weighted, get_neighbour_weights, NULL,
     KEEP_ARRAY(point_weighted), NULL},
    {"nearest", NULL, NULL, I64, HISTD_FS_FRAME_POINTS, "", ALL,
     "each point's nearest other point: its index in B's dataset, -1 where none is within "
     "the radius",
     nearest, get_nearest, NULL, KEEP_ARRAY(nearest_j), NULL},
    {"nearest_d", NULL, NULL, F64, HISTD_FS_FRAME_POINTS, "length", ALL,
     "the distance d to it (null where none)", nearest, get_nearest_d, NULL,
     KEEP_ARRAY(nearest_d), NULL},
    {"counts", "point", "point_count", U64, HISTD_FS_POINT_BINS, "pairs", ALL,
     "each point of A's counts in each bin: its partners in B (other than itself), every "
     "frame's",
     point_hist, get_point_hist, NULL, KEEP_ARRAY(point_hist), NULL},
    {"g", "point", "point_g", F64, HISTD_FS_POINT_BINS, "", SHOWN,
     "each point's own g(r): its counts / (its partners x V_shell / volume)",
     point_hist_periodic, get_point_g, NULL, 0, 0, 0, NULL},
    {"below", "point", "point_below", U64, HISTD_FS_POINTS, "pairs", ALL,
     "each point's partners below the first edge", point_hist, get_point_below, NULL,
     KEEP_ARRAY(point_below), NULL},
    {"partners", "point", "point_partners", U64, HISTD_FS_POINTS, "pairs", ALL,
     "each point's partners: B's points a frame (less itself, where it is in B), every "
     "frame's; its overflow is partners - below - its counts",
     point_hist, get_point_partners, NULL, KEEP_ARRAY(point_partners), NULL},
    {"pairs", NULL, NULL, U64, SCALAR, "pairs", ALL, "the pairs in the list", pair_list,
     get_pairs, NULL, KEEP(pairs), NULL},
    {"pairs", "per_frame", "frame_pairs", U64, HISTD_FS_FRAMES, "pairs", ALL,
     "each frame's pairs in the list (they come frame after frame)", pair_list,
     get_frame_pairs, NULL, KEEP_ARRAY(frame_pairs), NULL},
    {"frame", NULL, NULL, U64, HISTD_FS_PAIRS, "", SHOWN, "each listed pair's frame",
     pair_frames, NULL, pair_frame, 0, 0, 0, NULL},
    {"i", NULL, NULL, U64, HISTD_FS_PAIRS, "", SHOWN,
     "each listed pair's point of A: its index in the dataset (self pairs: i < j)", pair_list,
     NULL, pair_i, 0, 0, 0, NULL},
    {"j", NULL, NULL, U64, HISTD_FS_PAIRS, "", SHOWN, "its point of B: its index in B's dataset",
     pair_list, NULL, pair_j, 0, 0, 0, NULL},
    {"d", NULL, NULL, F64, HISTD_FS_PAIRS, "length", SHOWN, "the pair's distance d",
     pair_list, NULL, pair_d, 0, 0, 0, NULL},
    {"overflow", NULL, NULL, U64, SCALAR, "pairs", ALL,
     "the pairs at or beyond the last edge (within: beyond the radius)", has_bins,
     get_overflow, NULL, KEEP(overflow), NULL},
    {"total", NULL, NULL, U64, SCALAR, "pairs", ALL,
     "the pairs the job counts (less the excluded ones)", always, get_total, NULL,
     KEEP(total), NULL},
    {"kernel", NULL, NULL, STR, SCALAR, "", ALL, "the kernel that ran", always, get_kernel,
     NULL, KEEP_STR(kernel), NULL},
    {"kernel_reason", NULL, NULL, STR, SCALAR, "", ALL, "why auto chose it", has_reason,
     get_reason, NULL, KEEP_STR(reason), NULL},
    {"block_size", NULL, NULL, U64, SCALAR, "", NOTEXT, "GPU threads a block (0 on the CPU)",
     always, get_block_size, NULL, KEEP(block_size), NULL},
    {"threads", NULL, NULL, U64, SCALAR, "", NOTEXT, "CPU threads (0 on a GPU)", always,
     get_threads, NULL, KEEP(threads), NULL},
    {"precision", NULL, NULL, STR, SCALAR, "", ALL, "exact or fast", always, get_precision,
     NULL, KEEP(precision), NULL},
    {"exact", NULL, NULL, BOOL, SCALAR, "", ALL, "the values follow the contract", always,
     get_exact, NULL, KEEP(exact), NULL},
    {"refined_pairs", NULL, NULL, U64, SCALAR, "pairs", NOTEXT,
     "pairs a float32 kernel redid in float64 (diagnostics)", always, get_refined, NULL,
     KEEP(refined_pairs), NULL},
    {"device", NULL, NULL, STR, SCALAR, "", ALL, "where it ran", always, get_device, NULL,
     KEEP_STR(device), NULL},
    {"queue", "timing_ms", "queue_ms", F64, SCALAR, "ms", NOTEXT, "waiting for a worker", always,
     get_t_queue, NULL, KEEP(timing.queue_ms), NULL},
    {"parse", "timing_ms", "parse_ms", F64, SCALAR, "ms", NOTEXT, "reading the points", always,
     get_t_parse, NULL, KEEP(timing.parse_ms), NULL},
    {"transfer", "timing_ms", "transfer_ms", F64, SCALAR, "ms", NOTEXT, "host-device copies",
     always, get_t_transfer, NULL, KEEP(timing.transfer_ms), NULL},
    {"kernel", "timing_ms", "kernel_ms", F64, SCALAR, "ms", ALL, "the computation", always,
     get_t_kernel, NULL, KEEP(timing.kernel_ms), NULL},
    {"total", "timing_ms", "total_ms", F64, SCALAR, "ms", ALL, "the whole run", always,
     get_t_total, NULL, KEEP(timing.total_ms), NULL},
};

#define FIELD_COUNT (sizeof table / sizeof table[0])

size_t histd_schema_count(void) { return FIELD_COUNT; }

const histd_field *histd_schema_at(size_t i) { return i < FIELD_COUNT ? &table[i] : NULL; }

const histd_field *histd_schema_find(const char *group, const char *name) {
  for (size_t i = 0; i < FIELD_COUNT; i++) {
    const histd_field *f = &table[i];
    if (strcmp(f->name, name) == 0 &&
        (group == NULL ? f->group == NULL : f->group != NULL && strcmp(f->group, group) == 0))
      return f;
  }
  return NULL;
}

uint64_t histd_field_len(const histd_field *f, const histd_result *r, uint64_t *rows,
                         uint64_t *cols) {
  const uint64_t frames = r->frames > 0 ? r->frames : 1, bins = r->bins.count;
  uint64_t a = 1, b = 0;
  switch (f->shape) {
  case HISTD_FS_SCALAR:
    break;
  case HISTD_FS_BINS: /* two axes: a row of axis 2's bins for each of axis 1's */
    a = bins;
    b = r->bins.count2;
    break;
  case HISTD_FS_EDGES2:
    a = (uint64_t)r->bins.count2 + 1;
    break;
  case HISTD_FS_EDGES:
    a = bins + 1;
    break;
  case HISTD_FS_FRAMES:
    a = frames;
    break;
  case HISTD_FS_FRAME_BINS:
    a = frames, b = bins;
    break;
  case HISTD_FS_BLOCK_BINS:
    a = r->blocks, b = bins;
    break;
  case HISTD_FS_PARTIALS:
    a = r->partials;
    break;
  case HISTD_FS_PARTIAL_BINS:
    a = r->partials, b = bins;
    break;
  case HISTD_FS_REGIONS:
    a = r->regions;
    break;
  case HISTD_FS_REGION_BINS:
    a = r->regions, b = histd_bins_slots(&r->bins);
    break;
  case HISTD_FS_POINTS:
    a = r->point_n;
    break;
  case HISTD_FS_POINT_BINS:
    a = r->point_n, b = bins;
    break;
  case HISTD_FS_FRAME_POINTS:
    if (frames > 1)
      a = frames, b = r->point_n;
    else
      a = r->point_n;
    break;
  case HISTD_FS_PAIRS:
    a = r->pairs;
    break;
  }
  if (rows != NULL)
    *rows = a;
  if (cols != NULL)
    *cols = b;
  return b ? a * b : a;
}

/* The values of the array fields of r that `out` carries (kept: of the
 * arrays r holds, none in a summary). */
static uint64_t values(const histd_result *r, unsigned out) {
  uint64_t n = 0;
  for (size_t i = 0; i < FIELD_COUNT; i++) {
    const histd_field *f = &table[i];
    if (f->shape == HISTD_FS_SCALAR || !(f->outputs & out))
      continue;
    if (out == HISTD_OUT_STORE) { /* the arrays the result holds now */
      const void *p;
      memcpy(&p, (const char *)r + f->offset, sizeof p);
      if (p != NULL && (f->kept != NULL ? f->kept(r) : f->present(r)))
        n += histd_field_len(f, r, NULL, NULL);
    } else if (f->present(r)) {
      n += histd_field_len(f, r, NULL, NULL);
    }
  }
  return n;
}

uint64_t histd_result_kept_values(const histd_result *r) {
  const uint64_t n = values(r, HISTD_OUT_STORE);
  return n > 0 ? n : r->stored_values; /* a summary: what its head says */
}

uint64_t histd_result_shown_values(const histd_result *r) { return values(r, HISTD_OUT_JSON); }

int64_t histd_pairs_read(const histd_result *r, uint64_t first, histd_pair_record *out,
                         size_t n) {
  if (!r->has_pairs_fd || first >= r->pairs)
    return r->has_pairs_fd ? 0 : HISTD_EIO;
  if (n > r->pairs - first)
    n = (size_t)(r->pairs - first);
  /* the file's records: i and j as 32-bit indices, then d (histd_pair_file) */
  unsigned char raw[4096 * 16];
  const uint64_t frames = r->frames > 0 ? r->frames : 1;
  uint64_t f = 0, end = r->frame_pairs ? r->frame_pairs[0] : r->pairs;
  while (f + 1 < frames && first >= end) /* the frame of the first record */
    end += r->frame_pairs[++f];
  size_t done = 0;
  while (done < n) {
    const size_t batch = n - done < 4096 ? n - done : 4096;
    size_t got = 0;
    while (got < batch * 16 && got < sizeof raw) { /* (the bound for GCC 13's eyes) */
      ssize_t k = pread(r->pairs_fd, raw + got, batch * 16 - got,
                        (off_t)((first + done) * 16 + got));
      if (k <= 0)
        return HISTD_EIO;
      got += (size_t)k;
    }
    for (size_t k = 0; k < batch; k++) {
      const uint64_t at = first + done + k;
      while (f + 1 < frames && at >= end)
        end += r->frame_pairs[++f];
      uint32_t i, j;
      memcpy(&i, raw + 16 * k, 4);
      memcpy(&j, raw + 16 * k + 4, 4);
      out[done + k].frame = f;
      out[done + k].i = i;
      out[done + k].j = j;
      memcpy(&out[done + k].d, raw + 16 * k + 8, 8);
    }
    done += batch;
  }
  return (int64_t)n;
}
