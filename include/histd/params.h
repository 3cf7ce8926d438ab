/*
 * params.h -- a job's parameters: one table drives them everywhere.
 *
 * Each row of the table (params.c) is one parameter: its JSON name, its
 * command-line flag, its type, one line of help, how to set it from a value
 * and how to write it back. The service's POST /v1/jobs and /v1/histogram
 * bodies, the job documents it renders, the store (which keeps a job's
 * parameters as the JSON this table writes), `sdh`'s flags and its --help,
 * and the test that holds api/openapi.yaml to the table all go through it:
 * a new parameter is one row (plus what it means to the engine).
 *
 * The datasets a job runs on (`dataset`, `dataset_b`; sdh's FILE and
 * --with) are operands, not parameters: the service and the CLI bind them.
 */
#ifndef HISTD_PARAMS_H
#define HISTD_PARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "histd/histd.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct histd_params {
  histd_exec exec;
  histd_box box;        /* "box": kind NONE unless given              */
  double bucket_width;  /* 0: not given                                */
  uint32_t buckets;     /* 0: not given                                */
  double r_max;         /* 0: not given (width = r_max / buckets)      */
  double *edges;        /* owned; edge_count values, or NULL           */
  uint32_t edge_count;
  double log_bins[3];   /* r_min, r_max, K when log                    */
  bool log;
  bool has_within;
  double within;
  bool weights;
  char select_a[256];   /* "": every atom of the dataset (histd_dataset_select) */
  char select_b[256];   /* "": B is dataset_b whole, or no B (self pairs)   */
  bool exclude_molecule; /* "exclude": "molecule"                          */
  bool all_images;       /* "images": "all": every periodic image within r_max */
  bool ordered_pairs;    /* "pairs": "ordered": two selections of one dataset
                          * pair as every (a, b), not each distinct pair once */
  bool has_frames;       /* "frames": "START:STOP:STEP" given            */
  histd_slice frames;
  bool per_frame;        /* a frames x bins table beside the sums        */
  uint32_t blocks;       /* 0, or error bars over this many blocks of frames */
  histd_norm norm;       /* "norm": rdf, density or none (MDAnalysis's); unset */
  char partials[16];     /* "": none; else every species pair of A by this
                          * field: element, type, name or resname         */
  bool per_point;        /* with within: each point's neighbours within it */
  bool per_point_histogram; /* with bins: each point of A's histogram      */
  bool nearest;          /* each point's nearest neighbour (within: at most) */
  bool has_pairs_within; /* the list of the pairs with d <= pairs_within  */
  double pairs_within;
  int binned2;           /* "statistic": 0 the histogram of d (default), else
                          * HISTD_STAT_RP_PI or HISTD_STAT_S_MU           */
  double pi_max;         /* rp_pi: pi's range [0, pi_max); 0 not given   */
  uint32_t pi_bins;      /* rp_pi: its bins; 0 not given                 */
  uint32_t mu_bins;      /* s_mu: mu's bins in [0, mu_max]; 0 not given  */
  double mu_max;         /* s_mu: 0 not given (1)                        */
  bool los_midpoint;     /* "los": "midpoint" (else "z")                 */
  bool ravg;             /* each bin's mean separation (Corrfunc's ravg)  */
  bool jackknife;        /* each jackknife region's counts (the datasets'
                          * region labels): job.c, src/job/regions.c     */
  char topology[4096];   /* "": the dataset's own; else whose atoms to take:
                          * sdh a file, the service a dataset id          */
} histd_params;

typedef enum histd_value_kind {
  HISTD_VALUE_NULL,
  HISTD_VALUE_NUMBER,
  HISTD_VALUE_STRING,
  HISTD_VALUE_BOOL,
  HISTD_VALUE_NUMBERS
} histd_value_kind;

/* A parameter's value as a caller read it (JSON, a flag); borrowed. */
typedef struct histd_value {
  histd_value_kind kind;
  double number;
  bool boolean;
  const char *string;
  const double *numbers;
  size_t count;
} histd_value;

typedef enum histd_param_type {
  HISTD_PARAM_NUMBER,  /* a finite number                          */
  HISTD_PARAM_COUNT,   /* a whole number                           */
  HISTD_PARAM_STRING,
  HISTD_PARAM_BOOL,
  HISTD_PARAM_NUMBERS  /* an array of numbers (a flag: a,b,c)      */
} histd_param_type;

typedef struct histd_param {
  const char *name;  /* JSON member and store key, e.g. "bucket_width" */
  const char *flag;  /* sdh's long option, e.g. "width"; NULL: none   */
  char short_flag;   /* or 0 */
  histd_param_type type;
  const char *help;  /* one line: --help, the OpenAPI description     */
  int (*set)(histd_params *p, const histd_value *v, char *msg, size_t msglen);
  bool (*given)(const histd_params *p);
  void (*write)(FILE *f, const histd_params *p); /* the JSON value */
} histd_param;

size_t histd_param_count(void);
const histd_param *histd_param_at(size_t i);
const histd_param *histd_param_find(const char *name); /* NULL if unknown */

void histd_params_init(histd_params *p);
void histd_params_free(histd_params *p);
int histd_params_copy(histd_params *dst, const histd_params *src, char *msg, size_t msglen);

/* Sets one parameter; a sentence names it when the value is wrong. A null
 * value leaves the default. */
int histd_param_set(histd_params *p, const histd_param *row, const histd_value *v, char *msg,
                    size_t msglen);
/* The same from a command-line argument (arg NULL for a BOOL flag). */
int histd_param_set_text(histd_params *p, const histd_param *row, const char *arg, char *msg,
                         size_t msglen);

/* The parameters as one JSON object, the given ones only (kernel and
 * precision always). */
int histd_params_write_json(FILE *f, const histd_params *p);

/*
 * What the parameters ask for, before any operand: the problem without
 * its points (a, b NULL; frame_boxes when the job names no box: each
 * frame's own), its bins resolved (log edges computed into *edges, which
 * the caller frees). A missing or conflicting way of binning is
 * HISTD_EPARSE (a malformed request), a bad value HISTD_EINVAL.
 */
int histd_params_spec(const histd_params *p, histd_problem *out, double **edges, char *msg,
                      size_t msglen);

/*
 * Binds the parameters to their operands: the problem (a, b: b NULL for
 * self pairs) with its bins resolved (log edges computed into *edges, which
 * the caller frees), validated. Exactly one way of binning: bucket_width
 * [+ buckets], r_max + buckets, edges, or log_bins; or within. A missing or
 * conflicting way is HISTD_EPARSE (a malformed request), a bad value
 * HISTD_EINVAL.
 */
int histd_params_problem(const histd_params *p, const histd_dataset *a, const histd_dataset *b,
                         histd_problem *out, double **edges, char *msg, size_t msglen);

/* The statistic the parameters ask for (histd_params_spec checks that they
 * ask for one). */
histd_statistic histd_params_statistic(const histd_params *p);

/* statistic "theta": the chord of each angle edge deg[0..k] (degrees, 0 to
 * 180), c = 2 sin(h), h = (deg fl(pi / 180)) / 2, into chord[0..k]; a
 * sentence where they are out of range or two give one chord. The job's
 * edges in degrees (its theta_edges, or log bins computed once), malloc'd:
 * what its result publishes beside the chords. */
int histd_theta_chords(const double *deg, uint32_t k, double *chord, char *msg, size_t msglen);
int histd_params_theta_edges(const histd_params *p, double **deg, uint32_t *count, char *msg,
                             size_t msglen);


/* The most blocks a job may cut its frames into. */
#define HISTD_MAX_BLOCKS 1000

/*
 * The operands a job's selections make: A is select_a of a (a whole when
 * none); B is select_b of b, or b whole, or, with no b, select_b of a (A x B
 * between two selections of one dataset), or none. `frames` keeps a slice
 * of A's frames (and of B's, when B has several). The selections are
 * copies, owned here until histd_operands_free. Two selections of one
 * dataset pair by the contract's rule: an atom never pairs with itself
 * (histd_operands_pair).
 */
typedef struct histd_operands {
  const histd_dataset *a, *b; /* what histd_params_problem takes */
  histd_dataset sel_a, sel_b;
  /* two selections of one dataset, paired by the rule (pairing.c): the
   * same atoms make b NULL (self pairs); atoms in both, unless the job
   * asks for ordered pairs, are moved out of sel_a and sel_b into sel_o,
   * which `shared` then points to */
  histd_dataset sel_o;
  const histd_dataset *shared;
  histd_pairing pairing;
  /* "partials": A's atoms by species (partials.c), species_count sets,
   * owned here, and their names, comma-separated */
  histd_dataset *species;
  uint32_t species_count;
  char species_names[256];
  /* "jackknife": A's points by region (regions.c), region_count sets, and
   * B's (NULL for self pairs), owned here */
  histd_dataset *regions_a, *regions_b;
  uint32_t region_count;
} histd_operands;
int histd_params_operands(const histd_params *p, const histd_dataset *a, const histd_dataset *b,
                          histd_operands *out, char *msg, size_t msglen);
void histd_operands_free(histd_operands *o);
/* Applies the rule to operands that are two selections of one dataset
 * (called by histd_params_operands): the same atoms become a self job
 * (b NULL); atoms both hold, for a statistic in bins, go to sel_o, each
 * pair of distinct atoms counted once; a pair list of selections that share
 * some atoms is refused. With "pairs": "ordered", nothing changes but the
 * label. */
int histd_operands_pair(const histd_params *p, histd_statistic statistic, histd_operands *o,
                        char *msg, size_t msglen);
/* Every species pair of A's atoms by the field p->partials names, as
 * species_count sets of o (called by histd_params_operands when partials
 * are asked for); at most HISTD_MAX_SPECIES species. */
int histd_operands_species(const histd_params *p, histd_operands *o, char *msg,
                           size_t msglen);
/* Whether partials can be asked of a set whose topology has these arrays
 * (HISTD_TOP_* bits) and with (has_b) or without a B: 0, or the sentence. */
int histd_partials_check(const histd_params *p, unsigned topology, bool has_b, char *msg,
                         size_t msglen);
/* Jackknife regions (regions.c): whether shapes a and b (NULL: self pairs)
 * can give each region's counts, and their number R (2 .. HISTD_MAX_JACKKNIFE,
 * the larger label count of the two); 0, or the sentence. */
int histd_regions_check(const histd_shape *a, const histd_shape *b, uint32_t *count, char *msg,
                        size_t msglen);
/* The points of pa (and pb: the operands as the problem takes them, o's or
 * their unit vectors) by region, as o's regions_a (regions_b) sets (called
 * by histd_job_bind when jackknife is asked for). */
int histd_operands_regions(histd_operands *o, const histd_dataset *pa, const histd_dataset *pb,
                           char *msg, size_t msglen);
void histd_operands_regions_free(histd_operands *o);
#define HISTD_MAX_JACKKNIFE 1000
/* The field partials names (0..3), or -1. */
int histd_params_partials_field(const char *v);
#define HISTD_MAX_SPECIES 16

#ifdef __cplusplus
}
#endif
#endif /* HISTD_PARAMS_H */
