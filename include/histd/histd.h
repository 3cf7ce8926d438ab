/*
 * histd.h -- the one public header of the histd engine.
 *
 * The engine computes the spatial distance histogram (SDH) of a 3-D point
 * set: the counts of all N(N-1)/2 pairwise distances in equal-width buckets.
 * It knows nothing of HTTP or JSON; the service (src/service) and the CLI
 * (src/cli) drive it through this header and nothing else.
 *
 * Conventions, after libuv:
 *   - public names start with histd_, private ones with histd__;
 *   - every call that can fail returns 0 or a negative HISTD_E* code, fills
 *     its out-parameters only on success, and writes one human sentence into
 *     the caller's message buffer (msg, msglen) when it fails;
 *   - no global mutable state: everything lives in the objects below.
 *
 * The exactness contract (shared/DESIGN.md) is the definition of a pair's
 * bucket, in IEEE-754 binary64, round-to-nearest, no fused multiply-add:
 *
 *     dx = xi - xj;  dy = yi - yj;  dz = zi - zj
 *     s  = (dx*dx + dy*dy) + dz*dz
 *     d  = sqrt(s)
 *     b  = floor(d / w)          -> counts[b] if b < buckets, else overflow
 *
 * histd_pair_bucket() below is that definition, literally; every kernel in
 * precision "exact" must agree with it on every pair.
 */
#ifndef HISTD_HISTD_H
#define HISTD_HISTD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HISTD_VERSION "0.1.0"

/* ---- errors ------------------------------------------------------------ */

enum {
  HISTD_OK = 0,
  HISTD_EINVAL = -22,     /* a bad argument: the message says which       */
  HISTD_ENOMEM = -12,     /* host memory exhausted                          */
  HISTD_EIO = -5,         /* a file could not be read or written           */
  HISTD_ENOENT = -2,      /* no such kernel, file or device                */
  HISTD_ENODEV = -19,     /* the kernel needs a GPU and none is usable     */
  HISTD_ECANCELED = -125, /* the caller's cancel flag stopped the run      */
  HISTD_EPARSE = -1001,   /* malformed input data                          */
  HISTD_EDEVICE = -1002,  /* a CUDA call failed: the message has CUDA's text */
  HISTD_ETOOBIG = -1003,  /* the job does not fit the device or a limit    */
  HISTD_EGPULOST = -1004  /* a CUDA error that ruins the GPU's context for
                           * this process (illegal address, hardware fault):
                           * only a new process can use that GPU again      */
};

/* A short name for an error code ("EINVAL", ...); never NULL. */
const char *histd_strerror(int err);

/* Writes printf-style text into msg (if msg and msglen) and returns err. */
int histd_fail(char *msg, size_t msglen, int err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* ---- limits ------------------------------------------------------------ */

#define HISTD_MAX_BUCKETS (1u << 24)     /* 16 Mi buckets: 128 MiB of counts */
#define HISTD_MIN_BLOCK_SIZE 32u
#define HISTD_MAX_BLOCK_SIZE 1024u
#define HISTD_NAME_MAX 32                /* kernel names, with the NUL      */
#define HISTD_DEVICE_NAME_MAX 128
#define HISTD_REASON_MAX 192             /* why "auto" chose its kernel      */

/* ---- periodic boxes ---------------------------------------------------- */

/*
 * A periodic box, as the three vectors of a lower-triangular cell:
 * a = (ax, 0, 0), b = (bx, by, 0), c = (cx, cy, cz), with ax, by, cz > 0.
 * This is LAMMPS's restricted triclinic (lx = ax, ly = by, lz = cz,
 * xy = bx, xz = cx, yz = cy) and GROMACS's box matrix. ORTHO is the case
 * bx = cx = cy = 0. Coordinates need not be wrapped into the box; the
 * minimum-image rule is histd_pair_d in histd/pair.h.
 */
typedef enum histd_box_kind {
  HISTD_BOX_NONE = 0,  /* open space: no periodic images */
  HISTD_BOX_ORTHO = 1, /* a rectangular box ax x by x cz  */
  HISTD_BOX_TRICLINIC = 2
} histd_box_kind;

typedef struct histd_box {
  histd_box_kind kind;
  double ax, bx, by, cx, cy, cz;
} histd_box;

/* ---- datasets ---------------------------------------------------------- */

/*
 * N points in float64, structure of arrays. x, y and z point into one block
 * of 3*n doubles (x first), owned by the dataset unless `borrowed` is set,
 * in which case someone else (a file mapping, say) keeps it alive and
 * histd_dataset_free() leaves it alone.
 */
/*
 * Frames: a dataset may hold several snapshots of a system (a trajectory),
 * one after another in its arrays. Frame f is the points [start, start + n)
 * of x, y, z (and w), with its own periodic box (kind NONE: open space).
 * The table is offsets and boxes only, so that a later reader can stream
 * frames from disk one at a time without changing the engine's side.
 */
typedef struct histd_frame {
  size_t start, n;
  histd_box box;
} histd_frame;

/*
 * What a file says of its atoms, for selections and exclusions: one entry
 * an atom of a frame (every frame lists the same atoms in the same order).
 * Each array is NULL when the file does not carry it. Strings are
 * NUL-padded in fixed slots: name i is name + i * HISTD_ATOM_STR.
 */
#define HISTD_ATOM_STR 8
typedef struct histd_topology {
  size_t atoms;   /* atoms a frame                                              */
  char *name;     /* atom names ("OW", "HW1"), HISTD_ATOM_STR bytes each        */
  char *element;  /* element symbols ("O"), the same slots                      */
  char *resname;  /* residue names ("SOL"), the same slots                      */
  int64_t *resid; /* residue numbers as the file wrote them                     */
  int64_t *type;  /* LAMMPS atom types                                          */
  int64_t *mol;   /* molecule ids: LAMMPS's `mol`; GRO and PDB: one a residue  */
} histd_topology;

/* Which arrays a topology has (histd_topology_alloc, histd_topology_fields). */
enum {
  HISTD_TOP_NAME = 1u << 0,
  HISTD_TOP_ELEMENT = 1u << 1,
  HISTD_TOP_RESNAME = 1u << 2,
  HISTD_TOP_RESID = 1u << 3,
  HISTD_TOP_TYPE = 1u << 4,
  HISTD_TOP_MOL = 1u << 5
};

typedef struct histd_dataset {
  size_t n;              /* all the points, every frame's together    */
  double *x, *y, *z;
  double *w;             /* NULL, or n per-point weights (finite)  */
  histd_box box;         /* the periodic box a file gave (its first frame's), or kind NONE */
  double min[3], max[3]; /* bounding box; all zero when n == 0 */
  bool borrowed;         /* x, y, z (and w) belong to someone else */
  size_t frames;         /* 0 or 1: one frame, the whole set with `box`  */
  histd_frame *frame;    /* NULL for one frame, else `frames` of them, back to back
                          * over [0, n); always owned (malloc'd) by the dataset,
                          * borrowed or not                                   */
  histd_topology *top;   /* NULL, or the atoms of a frame; owned like `frame` */
  char unit[12];         /* the length unit the file's format implies ("nm",
                          * "Angstrom"), "" when it does not say       */
  uint64_t *origin;      /* NULL, or for each point of a frame its index in a
                          * frame of the dataset it was selected from
                          * (histd_dataset_select); owned like `frame` */
  double *sky;           /* NULL, or a sky catalogue's own columns, three a point:
                          * sky[3i] ra (degrees, wrapped into [0, 360)),
                          * sky[3i + 1] dec (degrees), sky[3i + 2] the comoving
                          * distance (Mpc/h) that made x, y, z; owned like x
                          * (left alone when `borrowed`) */
  double omega_m;        /* the flat LambdaCDM Omega_m that made the distances
                          * from redshifts; 0 when the catalogue gave them */
  int32_t *region;       /* NULL, or a jackknife region a point, 0 <= region[i] <
                          * regions; owned like `frame` */
  uint32_t regions;      /* the number of regions K (labels 0 .. K-1); 0 without */
} histd_dataset;

/* The most jackknife regions a dataset may have (labels 0 .. 65535). */
#define HISTD_MAX_REGIONS 65536u

/* Allocates room for n points (coordinates uninitialised, bounds zeroed). */
int histd_dataset_alloc(histd_dataset *ds, size_t n, char *msg, size_t msglen);

/* Wraps 3*n doubles laid out x[0..n), y[0..n), z[0..n) without copying. */
void histd_dataset_borrow(histd_dataset *ds, double *xyz, size_t n);

/* Adds room for n weights (uninitialised) to an allocated dataset. */
int histd_dataset_alloc_weights(histd_dataset *ds, char *msg, size_t msglen);

/* Releases what alloc made; safe on a zeroed or already-freed dataset. */
void histd_dataset_free(histd_dataset *ds);

/*
 * Checks every coordinate (and weight) is finite and computes the bounds. Call it once
 * the coordinates are filled in; HISTD_EINVAL names the first bad point.
 */
int histd_dataset_finish(histd_dataset *ds, char *msg, size_t msglen);

/* The bounding box's diagonal, computed with the contract's arithmetic, so
 * that no pair's distance (computed the same way) exceeds it. */
double histd_dataset_diagonal(const histd_dataset *ds);

/* The number of frames: at least 1. */
size_t histd_dataset_frames(const histd_dataset *ds);

/* Frame f (0 <= f < histd_dataset_frames) as a borrowed one-frame dataset:
 * the arrays from its start, its box, its own bounds. Nothing to free. */
void histd_dataset_frame(const histd_dataset *ds, size_t f, histd_dataset *view);

/* Splits ds into frames of counts[0..frames) points (summing to ds->n) with
 * boxes[0..frames) (NULL: every frame open); ds->box becomes the first
 * frame's. One frame is stored as no table. The table is copied. */
int histd_dataset_set_frames(histd_dataset *ds, size_t frames, const size_t *counts,
                             const histd_box *boxes, char *msg, size_t msglen);

/* Gives ds a topology of `atoms` atoms with the arrays in `fields`
 * (HISTD_TOP_* bits), zeroed. */
int histd_topology_alloc(histd_dataset *ds, size_t atoms, unsigned fields, char *msg,
                         size_t msglen);
void histd_topology_free(histd_topology *top);
/* The HISTD_TOP_* bits of the arrays a topology has (0 for NULL). */
unsigned histd_topology_fields(const histd_topology *top);

/*
 * A selection: the atoms of ds that `sel` names, every frame, as a new
 * dataset (coordinates, weights, a sky catalogue's columns and regions,
 * frames and boxes, and its topology's entries, copied). sel is "all" or KIND:LIST, LIST comma-separated:
 *   element:O,H   name:OW   resname:SOL   (element ignores case)
 *   type:2  resid:1-10  mol:5  index:0-99   (whole numbers and ranges a-b,
 *                                             inclusive; index counts from 0)
 * The kinds but index need the file to carry them; every frame must hold the
 * same atoms ("all" keeps each frame whole, whatever its size). frames
 * (NULL: every frame) keeps a slice of the frames. A selection that
 * matches nothing is an error, as is a bad one (a sentence says why).
 */
/* Frames start, start + step, ... below stop (0: the end), counted from 0. */
typedef struct histd_slice {
  size_t start, stop, step;
} histd_slice;
int histd_dataset_select(const histd_dataset *ds, const char *sel, const histd_slice *frames,
                         histd_dataset *out, char *msg, size_t msglen);
/* The atoms pick[0..m) of every frame of ds (every frame must hold the same
 * atoms; each pick below their count), as a new dataset, as a selection
 * makes it (origins through ds's own). */
int histd_dataset_pick(const histd_dataset *ds, const size_t *pick, size_t m,
                       histd_dataset *out, char *msg, size_t msglen);
/* Gives ds (a trajectory without names: XTC, TRR, DCD, NetCDF) a copy of
 * the topology of `from` (a GRO or PDB of the same system): every frame of
 * ds must hold as many points as `from` has atoms a frame, or a sentence
 * says they don't. ds's own topology, if any, is replaced. */
int histd_dataset_adopt_topology(histd_dataset *ds, const histd_dataset *from, char *msg,
                                 size_t msglen);

/*
 * Sky catalogues (io.h's sky-csv, sky-json and fits formats).
 *
 * histd_sky_unit: the unit vector of the direction (ra, dec), in degrees,
 * in binary64 with no fused multiply-add: r = ra * (pi / 180) and
 * d = dec * (pi / 180) (pi / 180 the double nearest it), then
 *     u = (cos(d) * cos(r), cos(d) * sin(r), sin(d))
 * with libm's cos and sin. A catalogue's point is x = dist * u[0],
 * y = dist * u[1], z = dist * u[2].
 *
 * histd_dataset_unit_vectors: those unit vectors, one a point of ds (which
 * must have sky columns), as a new dataset with ds's weights, regions and
 * sky columns copied: the points that an angular statistic compares.
 *
 * histd_dataset_assign_regions: k jackknife regions (1 <= k <= min(n,
 * HISTD_MAX_REGIONS)) on the sky, replacing ds's labels, by this
 * deterministic rule (k-means, Lloyd's algorithm, on the unit vectors):
 *   1. the sample: the points i with i % s == 0, s = ceil(n / 100000);
 *   2. seeding (k-means++): a splitmix64 generator with state
 *      HISTD_REGIONS_SEED; the first centre is sample point
 *      next() % m (m the sample's size); each next one is the first
 *      sample point j at which the running sum of D(j) reaches
 *      t = ((next() >> 11) * 2^-53) * sum D, where D(j) is 1 - max over the
 *      centres c of u_j . c (the cosine distance, 0 for chosen points);
 *      fewer than k distinct directions is an error;
 *   3. Lloyd: each sample point takes the centre of the largest u . c (the
 *      lowest index on ties); each centre becomes the normalised sum of its
 *      points' unit vectors (a centre without points stays); until no
 *      point changes its centre, or 100 rounds;
 *   4. every point of ds takes its nearest centre by step 3's rule.
 * Dot products are (a0*b0 + a1*b1) + a2*b2; sums go in index order.
 * Needs sky columns. The labels are ds's own (freed with it), whoever owns
 * its points.
 */
void histd_sky_unit(double ra, double dec, double u[3]);
int histd_dataset_unit_vectors(const histd_dataset *ds, histd_dataset *out, char *msg,
                               size_t msglen);
#define HISTD_REGIONS_SEED UINT64_C(0x5EED5EED5EED5EED)
int histd_dataset_assign_regions(histd_dataset *ds, uint32_t k, char *msg, size_t msglen);
/* Regions that follow another catalogue's (?regions_like=): the centre of
 * each of ds's regions, the normalised sum of its points' unit vectors (in
 * index order; NaN for a region without points), k = ds->regions of them,
 * into *centres (the caller frees); and each point of ds in
 * histd_dataset_label_regions taking the region of the centre nearest it
 * (the largest u . c, the lowest index on ties), replacing its labels. */
int histd_sky_region_centres(const histd_dataset *ds, double **centres, uint32_t *k, char *msg,
                             size_t msglen);
int histd_dataset_label_regions(histd_dataset *ds, const double *centres, uint32_t k, char *msg,
                                size_t msglen);

/* Whether sel is a selection that a topology with these arrays (HISTD_TOP_*
 * bits; ~0u: any) can answer; the sentence of histd_dataset_select if not. */
int histd_selection_check(const char *sel, unsigned fields, char *msg, size_t msglen);

/* ---- the problem: what to compute --------------------------------------- */


/* The box's volume ax*by*cz, and half its shortest perpendicular width:
 * the largest distance a periodic job may ask for. */
double histd_box_volume(const histd_box *box);
double histd_box_half_width(const histd_box *box);

/*
 * The range of a periodic box. Its lengths ax, by, cz (> 0) and tilts bx,
 * cx, cy are finite with magnitudes at most 2^250 (about 1.8e75); its three
 * perpendicular widths are at least 2^-250 (about 5.5e-76) and at least
 * 2^-40 (about 9.1e-13) times the largest of those six magnitudes (no
 * sliver). Then no product of four components, as the widths take them,
 * leaves the normal range of binary64, the volume lies in [2^-750, 2^750],
 * and the minimum image of two points within 2^40 smallest widths of the
 * origin (what histd_problem_validate asks of a periodic job's points) is a
 * finite number at every step of histd/pair.h's rule.
 */
/* components at most 2^250, widths at least 2^-250 */
#define HISTD_BOX_EXP_MAX 250
/* widths at least 2^-40 of the largest component; points within 2^40
 * smallest widths of the origin */
#define HISTD_BOX_ASPECT_EXP 40

/* Whether box (any kind; NONE passes) lies in that range: 0, or HISTD_EINVAL
 * with a sentence saying which component or width is out of it. Every box
 * passes here where it enters: a job's parameters, a file's frames, and
 * histd_problem_validate. */
int histd_box_check(const histd_box *box, char *msg, size_t msglen);

/*
 * The bins a distance falls into.
 *   WIDTH  bin k = floor(d / width) (the original contract); count bins.
 *   EDGES  count + 1 ascending finite edges: bin k when E[k] <= d < E[k+1],
 *          d < E[0] is `below`, d >= E[count] is `overflow`. Log bins are
 *          explicit edges (histd_log_edges), computed once and published.
 */
typedef enum histd_bins_kind { HISTD_BINS_WIDTH = 0, HISTD_BINS_EDGES = 1 } histd_bins_kind;

typedef struct histd_bins {
  histd_bins_kind kind;
  uint32_t count;      /* 1..HISTD_MAX_BUCKETS; WIDTH may say 0: cover the data */
  double width;        /* WIDTH: > 0 and finite                              */
  const double *edges; /* EDGES: count + 1 of them (borrowed)                */
  /* A second axis (the statistics RP_PI and S_MU; 0 for the others):
   * count2 equal bins of width fl(max2 / count2) from 0, pi in [0, max2)
   * or mu in [0, max2]. The counts are count x count2, row k of axis 1's
   * bin k (histd_bins_slots values). */
  uint32_t count2;
  double max2;
} histd_bins;

/* The counts a result of these bins holds: count, or count x count2. */
uint64_t histd_bins_slots(const histd_bins *bins);
/* Axis 2's edge k (0..count2): k * fl(max2 / count2), the last max2. */
double histd_bins_edge2(const histd_bins *bins, uint32_t k);

/* Edge k (0..count): k * width, or edges[k]. For WIDTH bins the rule is
 * floor(d / width), which these nominal edges only describe. */
double histd_bins_edge(const histd_bins *bins, uint32_t k);
/* Bin k's shell volume, 4/3 pi (E[k+1]^3 - E[k]^3), the V_k of g(r). */
double histd_bins_shell(const histd_bins *bins, uint32_t k);

/* count + 1 log-spaced edges from r_min to r_max (both > 0, r_min < r_max):
 * E[0] = r_min, E[count] = r_max, E[k] = exp(log r_min + k (log r_max -
 * log r_min) / count) in float64 between. Fails if they are not ascending. */
int histd_log_edges(double r_min, double r_max, uint32_t count, double *edges,
                    char *msg, size_t msglen);

/*
 * What the pairs make. The first two are small outputs (bins); the rest
 * are the other two shapes of a 2-body statistic: a value per point of A
 * (POINT_COUNTS, NEAREST) and a record per pair (PAIRS). "Other than
 * itself": in a self problem a point never meets itself; where A and B
 * are selections of one dataset (same_atoms), a point of A never meets
 * the point of B with the same origin.
 */
typedef enum histd_statistic {
  HISTD_STAT_HISTOGRAM = 0, /* counts per bin (and weighted sums)            */
  HISTD_STAT_WITHIN = 1,    /* the number of pairs with d <= radius; radius 0:
                             * collisions, exact equality of x, y and z       */
  HISTD_STAT_POINT_COUNTS = 2, /* per point of A, each frame: the points of B
                                * (other than itself) with d <= radius (> 0),
                                * and with weights the sum of their w_j      */
  HISTD_STAT_NEAREST = 3,   /* per point of A, each frame: the contract's d to
                             * the nearest other point of B and its index
                             * (ties: the lowest index); within radius, or
                             * anywhere when radius is INFINITY              */
  HISTD_STAT_PAIRS = 4,     /* every pair with d <= radius (> 0), as records
                             * (frame, i, j, d) handed to histd_control.pairs
                             * as they are found; i < j for self pairs      */
  HISTD_STAT_POINT_HISTOGRAM = 5, /* per point of A, over every frame: the
                             * histogram in the job's bins of its distances
                             * to the points of B (other than itself); the
                             * result's counts are their sums, ordered pairs */
  HISTD_STAT_RP_PI = 6,     /* counts (and weighted sums) in bins of the
                             * pair's (r_p, pi): axis 1 r_p by the bins,
                             * axis 2 pi = |dz| (line of sight z) or the
                             * midpoint's, in count2 bins of [0, max2)      */
  HISTD_STAT_S_MU = 7,      /* likewise in (s, mu): s the contract's d by the
                             * bins, mu = pi / s in count2 bins of [0, max2] */
  HISTD_STAT_THETA = 8      /* a result's name only: the histogram of the chord
                             * c = |u_i - u_j| of sky points' unit vectors in
                             * chord edges 2 sin(theta_k / 2) (the job layer
                             * binds it: src/job/job.c); its theta_edges      */
} histd_statistic;

/* How a job's pairs were made, as its result tells it: PLAIN is self
 * pairs i < j (one set, or two selections of the same atoms) or every
 * (a, b) of two datasets (or of two selections sharing no atom); DISTINCT
 * is two selections of one dataset that share atoms, each unordered pair
 * of distinct atoms once; ORDERED is every (a, b) of two selections of
 * one dataset as asked ("pairs": "ordered"), an atom in both meeting
 * itself at d = 0 (MDAnalysis's InterRDF without exclusion_block). */
typedef enum histd_pairing {
  HISTD_PAIRING_PLAIN = 0,
  HISTD_PAIRING_DISTINCT = 1,
  HISTD_PAIRING_ORDERED = 2
} histd_pairing;

/* The normalisations of MDAnalysis's InterRDF (2.4.2, Debian 12), shown as
 * the result's `rdf` beside histd's own g: NONE asked (no `rdf`), RDF (its
 * g: count / (F V_shell N / <V>)), DENSITY (count / (F V_shell)), COUNTS
 * ("none": count / F); counts of ordered pairs, as MDAnalysis sees them. */
typedef enum histd_norm {
  HISTD_NORM_UNSET = 0,
  HISTD_NORM_RDF = 1,
  HISTD_NORM_DENSITY = 2,
  HISTD_NORM_COUNTS = 3
} histd_norm;
/* The job's and the result's word for n: "rdf", "density", "none" ("" unset). */
const char *histd_norm_name(histd_norm n);

/* The shape of a statistic's answer (the seed paper's three): a small
 * output of bins, a value per point of A, a record per pair. */
typedef enum histd_answer {
  HISTD_ANSWER_BINS = 0,
  HISTD_ANSWER_POINTS = 1,
  HISTD_ANSWER_PAIRS = 2
} histd_answer;

/* What the layers above the drivers know of a statistic: one row each
 * (statistic.c), read where a rule depends on the statistic instead of
 * naming it. */
typedef struct histd_statistic_info {
  const char *name;     /* the result's "statistic"                          */
  const char *asked_by; /* the job parameter that asks for it, for sentences */
  histd_answer answer;
  unsigned needs;       /* HISTD_CAN_* bits a kernel must have for it        */
  bool anywhere;        /* its radius may be INFINITY: no limit (NEAREST)    */
  bool weights;         /* it takes weights                                  */
  bool binned;          /* its answer has the job's bins (a histogram's)     */
  uint8_t row_bytes[2]; /* POINTS: a point's stored bytes a frame, [weighted];
                         * binned: a point's bytes besides its bins, which
                         * it keeps once over every frame                */
} histd_statistic_info;

/* Statistic s's row; NULL for a value that names none. */
const histd_statistic_info *histd_statistic_about(histd_statistic s);
/* Whether a statistic's answer is a value per point (POINT_COUNTS, NEAREST,
 * POINT_HISTOGRAM). */
bool histd_statistic_per_point(histd_statistic s);

/*
 * A problem: the pairs, how their distance is measured, where it is
 * counted. It borrows its datasets and edges.
 *   pairs:   b == NULL: self pairs i < j of a, n(n-1)/2 of them;
 *            else every (i in a, j in b), n_a * n_b of them (a may be b).
 *   metric:  box.kind NONE: open space; else the minimum image in the box.
 *   weights: when weighted, a pair also adds w_i * w_j to its bin's float64
 *            sum (the datasets' w; b's, or a's for self pairs).
 */
typedef struct histd_problem {
  const histd_dataset *a, *b;
  histd_box box;
  histd_bins bins;
  histd_statistic statistic;
  double radius; /* WITHIN: >= 0 and finite */
  bool weighted;
  bool frame_boxes; /* the metric is the file's: each frame of a in its own box
                     * (a->frame[f].box, or a->box for one frame); `box` is
                     * ignored. False: `box` (the job's) for every frame. */
  bool exclude_molecule; /* leave out the pairs whose atoms share a molecule
                          * id (a's and b's topology `mol`; unweighted) */
  bool per_frame;        /* the result also keeps each frame's counts     */
  bool same_atoms;       /* a and b are selections of one dataset: a point
                          * never meets the point of b with its origin    */
  uint64_t result_limit; /* bytes: a result (its per-point arrays, its pair
                          * records) larger than this is refused before it
                          * is computed (HISTD_ETOOBIG); 0: no limit      */
  const histd_dataset *shared; /* NULL, or the atoms two overlapping
                          * selections share, each pair of distinct atoms
                          * once: then a and b are the atoms only A and only
                          * B hold, and the pairs are a x b, a x shared,
                          * shared x b and shared's self pairs (bins only;
                          * histd_problem_pieces)                         */
  histd_pairing pairing; /* the rule the operands were paired by (shown)  */
  uint32_t blocks;       /* 0, or the frames cut into this many consecutive
                          * blocks for error bars (keeps per_frame's table,
                          * which the blocks are read from)               */
  const histd_dataset *species; /* NULL, or species_count sets: a's atoms by
                          * species (b NULL), counted as partials, one piece
                          * a species pair, each its own histogram        */
  uint32_t species_count;
  const char *species_names; /* their names, comma-separated (the result's) */
  bool all_images;       /* periodic: every image within the last edge, not
                          * the minimum image: each pair (i, j + n H) for
                          * every lattice translation n, measured in open
                          * space from j's image x_j + n H (images.c);
                          * a self problem's pairs once: n = 0 with i < j,
                          * else n in the positive half (its first nonzero
                          * component > 0), i = j included (an atom and
                          * its own images); histogram bins only          */
  bool los_midpoint;     /* RP_PI, S_MU: the line of sight is the pair's
                          * midpoint (open space; sky catalogues), not z  */
  bool ravg;             /* binned: each bin also sums (w_i w_j) u, u the
                          * value its first axis bins (d, r_p, s), whose
                          * mean is Corrfunc's ravg (result rsum)         */
  const histd_dataset *regions_a, *regions_b; /* NULL, or region_count sets:
                          * a's points by jackknife region (and b's; NULL
                          * for self pairs), counted one piece a region
                          * pair, each piece's counts added to its two
                          * regions' (src/job/regions.c)                  */
  uint32_t region_count;
} histd_problem;

/* The farthest a pair may be (its contract d) and still count in p's
 * bins: the last edge; for RP_PI sqrt(E^2 + max2^2) raised by 2^-40 (a
 * pair with r_p < E and pi < max2 has d below it, every rounding
 * counted). The grid's r_max, and what half a periodic box must hold. */
double histd_problem_reach(const histd_problem *p);

/* per_frame keeps frames x bins counts: at most this many (1 GiB). */
#define HISTD_PER_FRAME_MAX ((uint64_t)1 << 27)

/* What a kernel can do beyond the plain self histogram in WIDTH bins of an
 * open box; the registry chooses and validates by these. */
enum {
  HISTD_CAN_PERIODIC = 1u << 0,
  HISTD_CAN_CROSS = 1u << 1,
  HISTD_CAN_WEIGHTS = 1u << 2,
  HISTD_CAN_EDGES = 1u << 3,
  HISTD_CAN_WITHIN = 1u << 4,
  HISTD_CAN_POINTS = 1u << 5, /* POINT_COUNTS and NEAREST              */
  HISTD_CAN_PAIRS = 1u << 6,  /* PAIRS                                 */
  HISTD_CAN_BINS2 = 1u << 7,  /* RP_PI and S_MU: bins of two axes       */
  HISTD_CAN_RAVG = 1u << 8    /* ravg: each bin's sum of (w_i w_j) u    */
};

/* The capabilities a problem needs (HISTD_CAN_* bits); _of: by its
 * operands' shapes (histd_shape, below; b NULL: self pairs). */
unsigned histd_problem_needs(const histd_problem *p);
struct histd_shape;
unsigned histd_problem_needs_of(const histd_problem *p, const struct histd_shape *a,
                                const struct histd_shape *b);

/*
 * Several frames. A problem whose a (or b) holds several frames is run
 * frame by frame (histd_worker_run) and the counts, below, overflow and
 * weighted sums summed: frame f of a pairs with itself (self pairs), or
 * with frame f of b when b has as many frames, or with b's only frame when
 * b has one (b's points are then met by every frame of a). Other frame
 * counts are refused. The pairs of a frame never meet another frame's.
 */
size_t histd_problem_frames(const histd_problem *p);
/* Frame f of the problem: a one-frame problem on views of a (and b), in
 * frame f's box when frame_boxes (else `box`). */
void histd_problem_frame(const histd_problem *p, size_t f, histd_dataset *a,
                         histd_dataset *b, histd_problem *out);

/* The pieces a problem's pairs are counted in, each a plain problem: the
 * problem itself; for two selections that share atoms (shared) four, a x b,
 * a x shared, shared x b and shared's self pairs; for species partials one
 * a species pair (s <= t; s's self pairs when s == t), row by row; for
 * jackknife regions one a region pair, (s <= t) as species' for self pairs,
 * A's s x B's t (k = s R + t) for A x B; histd_problem_piece_regions says
 * which two.
 * histd_problem_piece gives piece k (0 <= k < histd_problem_pieces). */
uint32_t histd_problem_pieces(const histd_problem *p);
void histd_problem_piece(const histd_problem *p, uint32_t k, histd_problem *out);
/* Whether p is counted in pieces (shared, species or regions): then whole,
 * never cut into shards. */
bool histd_problem_in_pieces(const histd_problem *p);
/* Piece k's two jackknife regions (s == t: one region's own pairs). */
void histd_problem_piece_regions(const histd_problem *p, uint32_t k, uint32_t *s, uint32_t *t);

/* The sums (histd_sum) p's binned result carries, bit c for channel c:
 * HISTD_SUM_W when weighted, HISTD_SUM_WU with ravg. */
unsigned histd_problem_sums(const histd_problem *p);

/* The number of pairs the problem counts (n(n-1)/2 or n_a * n_b, summed
 * over its frames and pieces). */
uint64_t histd_problem_pairs(const histd_problem *p);

/* The bytes of the problem's result that grow with it: its bins (and
 * weighted sums, per-frame counts), or its per-point rows; 0 for PAIRS,
 * whose size is known once counted (histd_pairs_bytes). */
uint64_t histd_problem_result_bytes(const histd_problem *p);
/* The bytes a pair list takes kept, a pair: i and j as 32-bit indices and
 * d (io.h's histd_pair_file), and of `pairs` pairs. */
#define HISTD_PAIR_BYTES 16
#define histd_pairs_bytes(pairs) ((uint64_t)(pairs) * HISTD_PAIR_BYTES)

/*
 * A dataset's shape: what a job can be checked against without its points
 * (a daemon knows it from the dataset's stored row): its size and frames
 * (each frame an equal share, the last the rest), whether it carries
 * weights, its first frame's box, its bounds, which atoms' arrays its
 * topology has.
 */
typedef struct histd_shape histd_shape;
struct histd_shape {
  uint64_t n, frames;
  bool weighted;
  histd_box box;
  double min[3], max[3];
  unsigned topology; /* HISTD_TOP_* bits */
  bool sky;          /* a sky catalogue's columns (ra, dec, distance) */
  uint32_t regions;  /* its jackknife regions (labels 0 .. regions-1); 0 none */
};
void histd_dataset_shape(const histd_dataset *ds, histd_shape *out);
/* The pairs a problem of these shapes counts (b NULL: self pairs). */
uint64_t histd_shape_pairs(const histd_shape *a, const histd_shape *b);
/* histd_problem_result_bytes by the shapes. */
uint64_t histd_shape_result_bytes(const histd_problem *p, const histd_shape *a,
                                  const histd_shape *b);
/* histd_problem_validate's checks that shapes can answer (p->a and p->b
 * are not read; b NULL: self pairs): everything but what needs each
 * frame's own box and atoms, which histd_problem_validate adds. */
int histd_problem_check(const histd_problem *p, const histd_shape *a, const histd_shape *b,
                        char *msg, size_t msglen);
/* histd_default_bins by the shapes (the first frame's box for a file's). */
int histd_default_bins_shape(const histd_problem *p, const histd_shape *a, const histd_shape *b,
                             uint32_t *count, char *msg, size_t msglen);

/* Every bad value gets a sentence: "bucket_width must be > 0", "the last
 * edge (12) exceeds half the box's shortest width (5)", a box outside the
 * range above (the job's, or any frame's), a periodic job's points beyond
 * 2^40 smallest widths of the origin, ... It looks at the problem's shape
 * only (sizes, bounds, boxes, bins), never at every point or weight. */
int histd_problem_validate(const histd_problem *p, char *msg, size_t msglen);

/* ---- the execution: how to run it ---------------------------------------- */

typedef enum histd_precision {
  HISTD_PRECISION_EXACT = 0, /* identical to the contract, on every input */
  HISTD_PRECISION_FAST = 1   /* may differ for pairs near a bucket edge   */
} histd_precision;

typedef struct histd_exec {
  char kernel[HISTD_NAME_MAX]; /* a registered name; "" means "auto"       */
  uint32_t block_size;       /* GPU threads per block, 32..1024; 0 = kernel's choice */
  uint32_t threads;          /* CPU threads; 0 = every core                */
  uint64_t devices;          /* GPU bit mask; 0 = every GPU                 */
  histd_precision precision; /* default exact                               */
} histd_exec;

/* Defaults: kernel "auto", exact, everything else 0. */
void histd_exec_init(histd_exec *ex);

/* Block size, precision and kernel name; a known kernel that cannot run the
 * problem (when p is not NULL) is refused with a sentence saying why and
 * which kernels can. */
int histd_exec_validate(const histd_exec *ex, const histd_problem *p, char *msg,
                        size_t msglen);
/* The same for a problem of these needs (HISTD_CAN_* bits). */
int histd_exec_check(const histd_exec *ex, unsigned needs, char *msg, size_t msglen);

/* The bin count an equal-width problem that names none gets: every pair of
 * an open box (the diagonal of A, or of A and B together), or in a periodic
 * box the bins that fit within its half width. */
int histd_default_bins(const histd_problem *p, uint32_t *count, char *msg, size_t msglen);

/* floor(diagonal / width) + 1: the bucket count that covers every pair. */
int histd_default_buckets(const histd_dataset *ds, double width,
                          uint32_t *buckets, char *msg, size_t msglen);

/* "exact" / "fast" <-> enum; parse returns HISTD_EINVAL on anything else. */
const char *histd_precision_name(histd_precision p);
int histd_precision_parse(const char *s, histd_precision *out);

/* The contract, literally: the bucket of one open-box pair in WIDTH bins
 * (may be >= buckets). histd/pair.h has the whole family. */
uint64_t histd_pair_bucket(double xi, double yi, double zi, double xj,
                           double yj, double zj, double width);

/* ---- results ----------------------------------------------------------- */

typedef struct histd_timing {
  double queue_ms;    /* waiting for a worker (service only)     */
  double parse_ms;    /* reading the points (service, CLI)       */
  double transfer_ms; /* host <-> device copies                  */
  double kernel_ms;   /* the computation                          */
  double total_ms;    /* wall time of the whole run               */
} histd_timing;

/* The sums a pair may add to its slot beside the count, one channel each:
 * a row here, its value in histd/eval.h's histd_ev_sum, its fields in
 * schema.c, and the problem's wish in histd_problem_sums. Each is a
 * float64 per slot, summed with Neumaier's compensation wherever partial
 * results meet (histd_result_add_bins). */
typedef enum histd_sum {
  HISTD_SUM_W = 0,  /* weighted: w_i w_j                              */
  HISTD_SUM_WU = 1, /* ravg: (w_i w_j) u, u the value axis 1 bins      */
  HISTD_SUMS = 2
} histd_sum;

/*
 * A result: its bins (a WIDTH description, or EDGES it owns), the counts,
 * below + overflow, and with weights the per-bin float64 sums. For every
 * statistic sum(counts) + below + overflow = total, the number of pairs.
 * WITHIN results have one bin, [0, radius] (count it from `within`).
 */
typedef struct histd_result {
  histd_bins bins;   /* bins.edges, when EDGES, is owned by the result */
  uint64_t *counts;  /* bins.count entries                        */
  uint64_t below;    /* pairs with d < E[0] (EDGES only)           */
  uint64_t overflow; /* pairs at or beyond the last edge           */
  uint64_t total;    /* the number of pairs (less the excluded ones)  */
  uint64_t excluded; /* exclude_molecule: the pairs left out          */
  bool exclude_molecule;
  /* per_frame: frame f's counts are frame_counts[f * bins.count ...], its
   * pairs (less the excluded) frame_total[f], its box's volume
   * frame_volume[f] (0 in open space); NULL otherwise */
  uint64_t *frame_counts, *frame_total;
  double *frame_volume;
  uint64_t *frame_below;  /* each frame's pairs below the first edge; NULL in
                           * a result stored before it was kept (read as 0) */
  bool los_midpoint;      /* RP_PI, S_MU: the midpoint line of sight, not z */
  bool all_images;        /* every periodic image counted ("images": "all"):
                           * overflow is not counted (0), total is the
                           * pairs of distinct atoms g(r) is normalised by */
  uint32_t blocks;        /* 0, or the per-frame table read as this many
                           * consecutive blocks of frames (histd_result_block) */
  /* species partials: `partials` species pairs (s <= t, row by row) of the
   * species named in `species` (comma-separated); pair k's counts are
   * partial_counts[k * bins.count ...], its pairs (less the excluded)
   * partial_total[k], below the first edge partial_below[k], its pair
   * density sum_f P_f / V_f partial_density[k] (0 in open space), its
   * atoms of s and of t, every frame's, partial_na[k] and partial_nb[k] */
  histd_norm norm;        /* the normalisation `rdf` is shown in (job's "norm") */
  double volume_sum;      /* periodic: the frames' volumes summed (their mean
                           * is MDAnalysis's box volume for norm rdf)     */
  uint32_t partials;
  char species[256];
  uint64_t *partial_counts, *partial_total, *partial_below, *partial_na, *partial_nb;
  double *partial_density;
  /* jackknife: `regions` regions; region k's counts (and weighted sums) are
   * region_counts[k * slots ...] (slots: histd_bins_slots), its pairs
   * region_total[k]: the pairs with a point in region k, a pair of regions
   * a and b counted in a's and, if b != a, in b's; without region k's
   * points a count is the total less region k's */
  uint32_t regions;
  uint64_t *region_counts, *region_total;
  double *region_weighted;
  /* and each region's points of A (B: A x B), and with weights their sums
   * of w and of w^2, from which a leave-one-out normalisation follows */
  uint64_t *region_na, *region_nb;
  double *region_wa, *region_wa2, *region_wb, *region_wb2;
  char unit[12];     /* A's length unit as its file implies it, or ""  */
  /* the selections the operands came from ("" for a whole dataset): the
   * caller that made them (sdh, the service) fills these in to be shown */
  char select_a[256], select_b[256];
  /* The sums a binned result carries beside its counts (histd_sum), a
   * float64 a slot each, NULL where the job asks none: by channel in
   * sums[] where every sum is handled alike (allocated, added, copied),
   * by name where a sum's meaning matters. */
  union {
    double *sums[HISTD_SUMS];
    struct {
      double *weighted; /* HISTD_SUM_W: each slot's sum of w_i w_j */
      double *rsum;     /* HISTD_SUM_WU, ravg: each slot's sum of (w_i w_j) u
                         * (u: d, r_p or s), Neumaier-compensated   */
    };
  };
  double *theta_edges; /* THETA: the angle's edges in degrees (bins.count + 1),
                        * whose chords are bins.edges                 */
  uint64_t n, n_b;   /* points of A, and of B (0 for self pairs)     */
  bool cross;        /* the pairs were A x B                         */
  histd_pairing pairing; /* the rule they were paired by               */
  double volume;     /* periodic: the box volume; 0 in open space. With
                      * several frames, the volume that normalises g(r) by
                      * the frames' total: total / sum_f (P_f / V_f)     */
  double density;    /* periodic: sum over frames of total_f / V_f, which
                      * partials add up (histd_result_add); 0 in open space */
  uint64_t frames;   /* the frames counted (1 for a one-frame dataset)  */
  bool box_from_dataset; /* periodic: the box was the file's, not the job's */
  histd_statistic statistic;
  double radius;     /* WITHIN                                       */
  uint64_t within;   /* WITHIN: pairs with d <= radius               */
  /* per point (POINT_COUNTS, NEAREST): frames x point_n values, row f the
   * points of A in frame f in A's order; point_index (NULL: 0, 1, ...) the
   * points' indices in their dataset (a selection's origins) */
  uint64_t point_n;        /* A's points a frame                      */
  uint64_t *point_index;   /* point_n, or NULL                         */
  uint64_t *point_counts;  /* POINT_COUNTS                             */
  double *point_weighted;  /* POINT_COUNTS with weights: sum of w_j    */
  double *nearest_d;       /* NEAREST: d, NaN where none within radius  */
  int64_t *nearest_j;      /* NEAREST: B's index (its origin), -1: none */
  /* POINT_HISTOGRAM: point_n rows of bins.count counts, every frame's
   * summed (row i the point of A at point_index[i]), each row's pairs
   * below the first edge, and its partners: the points of B it was
   * measured against, every frame's (B's points, less itself where it is
   * in B); a row's overflow is partners - below - its counts */
  uint64_t *point_hist, *point_below, *point_partners;
  uint64_t pairs;          /* PAIRS: the records handed out             */
  uint64_t stored_values;  /* the values of the arrays a stored result holds
                            * (set when encoded), which a summary read
                            * without them knows by                     */
  uint64_t *frame_pairs;   /* PAIRS: frames of them, each frame's records
                            * (the records come frame after frame)      */
  int pairs_fd;            /* PAIRS, has_pairs_fd: the file the front end
                            * put the records in (io.h's histd_pair_file),
                            * for the writers; not owned by the result   */
  bool has_pairs_fd;
  histd_precision precision;
  bool exact;              /* counts follow the contract            */
  uint64_t refined_pairs;  /* pairs redone in float64 (diagnostics)  */
  char kernel[HISTD_NAME_MAX]; /* the kernel that ran ("auto" resolved) */
  char reason[HISTD_REASON_MAX]; /* why "auto" chose it ("" for a named kernel) */
  uint32_t block_size;     /* GPU block size that ran; 0 on the CPU  */
  uint32_t threads;        /* CPU threads that ran; 0 on the GPU     */
  char device[HISTD_DEVICE_NAME_MAX]; /* "cpu: 2 threads", "NVIDIA H100 ..." */
  histd_timing timing;
} histd_result;

/* Allocates zeroed counts (and weighted sums when `weighted`) for the bins
 * (count resolved, never 0), copying explicit edges. */
int histd_result_init(histd_result *res, const histd_bins *bins, bool weighted,
                      char *msg, size_t msglen);
/* A result of p's bins: zeroed counts and the sums p asks
 * (histd_problem_sums). 0, or an error with a sentence. */
int histd_result_for(histd_result *res, const histd_problem *p, char *msg, size_t msglen);
/* A result of these bins owning counts and weighted (NULL when unweighted),
 * which the caller allocated with malloc (bins.count of each); explicit
 * edges are copied. On failure both are freed. */
int histd_result_adopt(histd_result *res, const histd_bins *bins, uint64_t *counts,
                       double *weighted, char *msg, size_t msglen);
void histd_result_free(histd_result *res);
/* A per-point result (POINT_COUNTS or NEAREST; weighted: the sums too) of
 * frames x n values, zeroed (nearest: NaN and -1); POINT_HISTOGRAM: n rows
 * of `bins` (count resolved) and the whole result's counts. 0, or
 * HISTD_ENOMEM / HISTD_ETOOBIG. */
int histd_result_init_points(histd_result *res, histd_statistic s, const histd_bins *bins,
                             uint64_t frames, uint64_t n, bool weighted, char *msg,
                             size_t msglen);
/* Allocates zeroed per-frame arrays for `frames` frames of res's bins;
 * 0 or HISTD_ENOMEM. */
int histd_result_per_frame(histd_result *res, uint64_t frames);
/* Species pair k of `species` species, row by row: (0,0) (0,1) .. (0,S-1)
 * (1,1) ..; and the species S(S+1)/2 partials come from. */
void histd_species_pair(uint32_t species, uint32_t k, uint32_t *s, uint32_t *t);
uint32_t histd_species_of(uint32_t partials);
/* Zeroed room for `count` partials of res's bins; 0 or HISTD_ENOMEM. */
int histd_result_partials(histd_result *res, uint32_t count);
/* Zeroed room for `count` jackknife regions of res's slots (weighted sums
 * too when res has them), and their points of A (and of B when cross);
 * 0 or HISTD_ENOMEM. */
int histd_result_regions(histd_result *res, uint32_t count, bool cross);
/* Partial k's g in bin k2 (periodic; else 0) and coordination of t's atoms
 * around an atom of s (ab) and of s's around one of t (ba) to bin k2's upper
 * edge, given the cumulative count to it (below included). */
void histd_result_partial_bin(const histd_result *res, uint32_t k, uint32_t bin,
                              uint64_t cumulative, double *g, double *ab, double *ba);
/* A deep copy (counts, weighted sums, edges); 0 or HISTD_ENOMEM. */
int histd_result_copy(histd_result *dst, const histd_result *src);

/* g(r) in LAMMPS's `compute rdf` convention for a periodic result
 * (volume > 0): g_k = counts_k / (P * V_k / V) with P the pairs, V_k = 4/3
 * pi (E[k+1]^3 - E[k]^3) and V the volume; coordination n_k = the
 * cumulative count to E[k+1] (below included) per atom of A (self pairs:
 * 2 * cumulative / n). Bin k's values; call k in order from 0, carrying
 * *cumulative (start it at 0). Over several frames P and n are the frames'
 * sums and V the `volume` above, so g_k = sum_f counts_f,k /
 * sum_f (P_f V_k / V_f) and n_k = sum_f cumulative_f / sum_f N_f. */
void histd_result_rdf_bin(const histd_result *res, uint32_t k, uint64_t *cumulative, double *g,
                          double *coordination);
/* Block b of a result's blocks (0 <= b < blocks): its frames [f0, f1), as
 * even as the count allows (frame f is in block f * blocks / frames), and
 * its g in bin k (periodic; 0 in open space) and coordination up to bin k,
 * by the rules of the whole result's g and coordination applied to the
 * block's frames: their counts, below and pairs summed, their pair density
 * sum_f (P_f / V_f), and A's points n * (f1 - f0) / frames. */
void histd_result_block_frames(const histd_result *res, uint32_t b, uint64_t *f0,
                               uint64_t *f1);
void histd_result_block_bin(const histd_result *res, uint32_t b, uint32_t k, double *g,
                            double *coordination);

/* per_frame, periodic: frame f's own g in bin k, counts_f,k / (P_f V_k / V_f). */
double histd_result_frame_g(const histd_result *res, uint64_t f, uint32_t k);
/* POINT_HISTOGRAM, periodic: point i's own g in bin k, its counts over its
 * partners' expectation: count_i,k / (partners_i V_k / V), V the result's
 * volume (the frames' total pairs over their pair density). */
double histd_result_point_g(const histd_result *res, uint64_t i, uint32_t k);

/* ---- progress and cancellation ----------------------------------------- */

/*
 * Backends call progress() and cancelled() between chunks of work, from any
 * of their threads (so both must be thread-safe), at least a few times a
 * second. A run whose cancelled() returns true stops and returns
 * HISTD_ECANCELED. Either pointer may be NULL; so may the whole control.
 */
/* One pair of a PAIRS result: its frame, the points' indices in their
 * datasets (origins), the contract's d. */
typedef struct histd_pair_record {
  uint64_t frame, i, j;
  double d;
} histd_pair_record;

typedef struct histd_control {
  void (*progress)(void *user, double fraction); /* 0..1, non-decreasing */
  bool (*cancelled)(void *user);
  void *user;
  /* PAIRS: n records as they are found, from one thread at a time; a
   * nonzero return stops the run with that code (the caller's sentence in
   * msg). Required for PAIRS. */
  int (*pairs)(void *user, const histd_pair_record *r, size_t n, char *msg, size_t msglen);
} histd_control;

/* ---- kernels and the registry ------------------------------------------ */

/* Where a kernel runs: the CPU, a GPU, or (ANY) whichever the worker owns. */
typedef enum histd_engine {
  HISTD_ENGINE_CPU = 0,
  HISTD_ENGINE_CUDA = 1,
  HISTD_ENGINE_ANY = 2
} histd_engine;

typedef struct histd_worker histd_worker;

/*
 * One entry of the registry. run() computes into `res`, already initialised
 * with the problem's bins (count resolved, never 0) and total; it fills
 * counts, below, overflow, weighted, within, exact, refined_pairs,
 * block_size/threads, device and timing.transfer_ms/kernel_ms. The caller
 * fills the rest. `caps` (HISTD_CAN_*) says which problems it can run; it
 * is never handed one that needs more. `worker` is the calling worker's
 * context (see histd_worker_*), never NULL.
 */
typedef struct histd_kernel {
  const char *name;
  const char *summary; /* one line for --list-kernels and /v1/kernels */
  histd_engine engine;
  unsigned caps;
  int (*run)(histd_worker *worker, const histd_problem *p, const histd_exec *ex,
             const histd_control *ctl, histd_result *res, char *msg, size_t msglen);
  uint32_t block; /* the one block size it runs (0: any of 32..1024) */
  /* how the row launches where it is one of the GPU's brute-force kernels
   * of the seeds' family (the engine's private src/engine/gpu_launch.h);
   * NULL for every other row */
  const struct histd__gpu_launch *gpu;
} histd_kernel;

/* Whether the kernel can run the problem (or a problem of these needs,
 * HISTD_CAN_* bits); if not, a sentence saying why. */
bool histd_kernel_can(const histd_kernel *k, const histd_problem *p, char *msg,
                      size_t msglen);
bool histd_kernel_can_do(const histd_kernel *k, unsigned needs, char *msg, size_t msglen);

/* The registry: the one table of kernels, in a fixed order. */
size_t histd_kernel_count(void);
const histd_kernel *histd_kernel_at(size_t i);
const histd_kernel *histd_kernel_find(const char *name); /* NULL if unknown */

/* ---- devices ----------------------------------------------------------- */

typedef struct histd_device_info {
  int index;
  char name[HISTD_DEVICE_NAME_MAX];
  int cc_major, cc_minor;
  int multiprocessors;
  size_t memory_total, memory_free; /* bytes */
} histd_device_info;

/*
 * Lists usable GPUs into out[0..max). *count gets how many there are. With
 * no GPU (no CUDA build, no driver, a driver too old, no device) it returns
 * 0 with *count = 0 and a sentence in msg saying why.
 */
int histd_devices(histd_device_info *out, int max, int *count, char *msg,
                  size_t msglen);

/* ---- workers ----------------------------------------------------------- */

/*
 * A worker is the context one thread runs jobs in: the CPU engine, or one
 * GPU with its streams and device buffers. Workers keep what they can
 * between jobs (a GPU worker keeps the last dataset's points on the device,
 * and histd_worker_prefetch() starts copying the next job's points while the
 * current one computes). A worker is used by one thread at a time.
 *
 * device: -1 for the CPU engine, else a GPU index from histd_devices().
 */
int histd_worker_create(histd_worker **out, int device, char *msg,
                        size_t msglen);
void histd_worker_destroy(histd_worker *w);
int histd_worker_device(const histd_worker *w); /* -1 for the CPU */

/* A hint: the next run will be on ds (its operand a). The dataset must stay alive until that
 * run (or the worker) ends. A no-op on the CPU. */
int histd_worker_prefetch(histd_worker *w, const histd_dataset *ds,
                          char *msg, size_t msglen);

/*
 * Validates the problem and the execution, and a weighted problem's weights
 * (the largest |w| of A times that of B times the pairs at most 2^1000, the
 * smallest nonzero product at least 2^-1022: else HISTD_EINVAL with a
 * sentence, as no sum could keep its precision), resolves the default
 * bucket count and "auto" (the fastest kernel able to run the problem on
 * this worker), runs the kernel and fills `res` (which it initialises; free it with
 * histd_result_free on success). On failure res is left empty.
 */
int histd_worker_run(histd_worker *w, const histd_problem *p, const histd_exec *ex,
                     const histd_control *ctl, histd_result *res, char *msg,
                     size_t msglen);

/* ---- shards: one job's pairs cut into independent pieces ---------------- */

/*
 * A shard is a block pair: the pairs between rows [i0, i1) of A and columns
 * [j0, j1) of B (of A again for self pairs), in every frame. Self pairs are
 * cut into the blocks (bi, bj) with bj >= bi: a diagonal block is the self
 * pairs of its points, any other the cross pairs of two disjoint blocks;
 * A x B into every (bi, bj). The shards of a plan count every pair of the
 * problem exactly once, so their results, added (histd_result_add), are
 * the problem's (counts identical; weighted sums to rounding). A cluster
 * node or a batch task runs one shard; the merger adds them up.
 */
typedef struct histd_shard {
  uint64_t index;  /* 0 .. plan count - 1 */
  uint64_t i0, i1; /* A's points, each frame's */
  uint64_t j0, j1; /* B's points (A's for self pairs) */
} histd_shard;

typedef struct histd_shard_plan {
  bool self;         /* self pairs: blocks (bi, bj >= bi) of A */
  uint64_t n_a, n_b; /* the operands' points (a frame's most); n_b 0 for self */
  uint64_t block;    /* points per block (the last may be shorter) */
  uint64_t rows, cols; /* blocks of A and of B (cols == rows for self) */
  uint64_t count;    /* shards */
} histd_shard_plan;

/* A plan of at most `want` shards (at least 1) for problem p: blocks as
 * even as the count allows. A problem that cannot be cut (collisions,
 * counted by hashing in O(n); a kernel that cannot run A x B blocks) gets
 * one shard, the whole problem. */
void histd_shard_plan_make(const histd_problem *p, const char *kernel, uint64_t want,
                           histd_shard_plan *plan);
/* Shard s of the plan (s < count). */
void histd_shard_get(const histd_shard_plan *plan, uint64_t s, histd_shard *out);
/* The pairs shard sh holds over every frame of p, before exclusions. */
uint64_t histd_shard_pairs(const histd_problem *p, const histd_shard *sh);
/* The pairs a run of p by `kernel` compares: all of them, or where the grid
 * runs it (`grid`, or `auto` where the grid pays on the CPU's model) the
 * grid's estimate, its share of the pairs. What a cluster sizes its shards
 * by: a shard's blocks meet the same share. */
uint64_t histd_shard_work(const histd_problem *p, const char *kernel);

/* histd_worker_run on the pairs of shard sh only (NULL: all of them). The
 * result is a partial: add partials with histd_result_add. */
int histd_worker_run_shard(histd_worker *w, const histd_problem *p, const histd_exec *ex,
                           const histd_shard *sh, const histd_control *ctl,
                           histd_result *res, char *msg, size_t msglen);

/* A partial's bookkeeping holds: sum(counts) + below + overflow = total and
 * total + excluded = `pairs` (histd_shard_pairs), with the same bins as
 * `bins`; else HISTD_EIO with a sentence saying what is off. */
int histd_result_check(const histd_result *part, const histd_bins *bins, uint64_t pairs,
                       char *msg, size_t msglen);
/* Adds partial `part` into `sum` (a copy of the first partial, by
 * histd_result_copy; its kernel, device and flags stand for all): counts, below, overflow, total, excluded, per-frame tables,
 * weighted sums and ravg's (with their compensations in err, from
 * histd_result_add_errs) and the g(r) volume. Finish with
 * histd_result_add_done. */
int histd_result_add(histd_result *sum, double *err, const histd_result *part, char *msg,
                     size_t msglen);
/* Its first part, which every sum of runs in the same bins shares (a
 * frame's, a translation's, a slab's, a partial's): part's counts, below and
 * sums (Neumaier's step, compensations in err; NULL: the counts alone)
 * added to sum's. The sums sum has must be part's too. */
void histd_result_add_bins(histd_result *sum, double *err, const histd_result *part);
/* Adds the compensations in err (NULL: none) into sum's sums, and rebuilds a
 * volume the parts did not share. */
void histd_result_add_done(histd_result *sum, double *err);
/* The compensations histd_result_add keeps for results of these bins,
 * zeroed (HISTD_SUMS a slot); NULL: out of memory. */
double *histd_result_add_errs(const histd_bins *bins);

/* The device a worker for ex runs on, as histd_run picks it: a GPU (the
 * first of ex->devices, else 0, else the first usable one) for a CUDA
 * kernel, or for an "any" kernel ("auto", "grid") when there is one; else
 * -1, the CPU. */
int histd_exec_device(const histd_exec *ex);

/* One-shot convenience: a CPU-or-GPU worker made, used and destroyed. */
int histd_run(const histd_problem *p, const histd_exec *ex, const histd_control *ctl,
              histd_result *res, char *msg, size_t msglen);

/* Milliseconds from a monotonic clock. */
double histd_now_ms(void);

/* The cores this process may run on: its CPU affinity (taskset, a
 * container's cpuset), else the online count; at least 1. */
unsigned histd_cpu_count(void);

#ifdef __cplusplus
}
#endif
#endif /* HISTD_HISTD_H */
