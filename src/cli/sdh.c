/*
 * sdh.c -- the one-shot command-line front end: read (or generate) a point
 * set, compute its spatial distance histogram with a kernel from the
 * registry, print it as text, JSON or CSV.
 *
 *     sdh points.csv --width 500
 *     sdh --random 100000 --width 500 --seed 7 --format json
 *     sdh snapshot.xyz --periodic 20 --r-max 10 --buckets 200   (g(r))
 *     sdh run.dcd --r-max 10 --buckets 200        (g(r) in each frame's box)
 *     sdh water.gro --select-a name:OW --r-max 0.8 --buckets 80  (O-O g(r))
 *     sdh galaxies.csv --with randoms.csv --log-bins 0.1,100,80 --weighted
 *     sdh --list-kernels
 *
 * Exit status: 0 done, 1 a runtime error (unreadable or malformed input, a
 * kernel that fails), 2 a usage error (bad flag or value).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "histd/histd.h"
#include "histd/io.h"
#include "histd/job.h"
#include "histd/params.h"

#define DEFAULT_BOX 23000.0
#define DEFAULT_SEED UINT64_C(1)

static const char usage_head[] =
    "usage: sdh FILE (--width W | --r-max R --buckets K | --edges E | --log-bins A,B,K |\n"
    "                 --within R) [options]\n"
    "       sdh --random N --width W [--box S] [--seed S] [options]\n"
    "       sdh --list-kernels\n"
    "\n"
    "Computes 2-body statistics of a 3-D point set: the histogram of all N(N-1)/2\n"
    "pairwise distances (or of every pair of FILE x FILE2 with --with), in equal,\n"
    "explicit or log bins, in open space or a periodic box (then with g(r) and the\n"
    "coordination number), optionally weighted; or the pairs within a radius.\n"
    "\n"
    "Input:\n"
    "  FILE                  points as .json .csv (.tsv .txt) .xyz (.extxyz), a\n"
    "                        LAMMPS dump (.lammpstrj .dump .lammpsdump), a\n"
    "                        trajectory: DCD (.dcd), GROMACS (.xtc .trr: in nm),\n"
    "                        AMBER NetCDF (.nc .ncdf), GROMACS .gro (nm) or .pdb\n"
    "                        (.ent: Angstrom), these two with their atoms' names\n"
    "                        and residues, or raw little-endian triples .f64\n"
    "                        (.bin) / .f32; '-' reads standard input (needs\n"
    "                        --input-format)\n"
    "  --with FILE2          count the pairs of FILE x FILE2 (same formats)\n"
    "  -i, --input-format F  json, csv, xyz, lammps, dcd, xtc, trr, netcdf (or nc),\n"
    "                        gro, pdb, f64 (or bin), f32, sky-csv, sky-json, fits:\n"
    "                        overrides the file's extension (for FILE and FILE2)\n"
    "  --omega-m X           a sky catalogue's flat LambdaCDM Omega_m for its\n"
    "                        redshifts, 0.01 to 1 (default 0.315; distances in\n"
    "                        Mpc/h); sky catalogues (sky-csv, sky-json, .fits) are\n"
    "                        RA, Dec in degrees and dist or z, made into x, y, z\n"
    "  --random N            N points uniform in [0, S)^3 instead of a file\n"
    "  --box S               side of the random cube (default 23000)\n"
    "  --seed S              seed of the random points (default 1); the\n"
    "                        generator is splitmix64, each coordinate\n"
    "                        (x, y, z of point 0, then of point 1, ...) being\n"
    "                        S * (next() >> 11) * 2^-53\n"
    "\n"
    "Parameters (the same as the service's job fields; lists are a,b,c):\n";

static const char usage_tail[] =
    "\n"
    "Output:\n"
    "  -f, --format F        text (default: the seed reports' layout, five\n"
    "                        buckets a row, then T:<total pairs>; a table when\n"
    "                        there are weights or g(r)), json, csv, npz\n"
    "                        (a NumPy .npz: binary, redirect it to a file)\n"
    "  --pretty              indent the JSON output\n"
    "  --list-kernels        list the kernels: name, engine, summary\n"
    "  --list-params         list the parameters: name, flag, type, help\n"
    "  --list-fields         the result schema: every field a result may hold, as JSON\n"
    "  -h, --help            this text\n"
    "  --version             the version\n"
    "\n"
    "Exit status: 0 success, 1 runtime error, 2 usage error.\n";

static void usage(void) {
  fputs(usage_head, stdout);
  for (size_t i = 0; i < histd_param_count(); i++) {
    const histd_param *row = histd_param_at(i);
    if (row->flag == NULL)
      continue;
    char left[64];
    const char *arg = row->type == HISTD_PARAM_BOOL      ? ""
                      : row->type == HISTD_PARAM_NUMBERS ? " LIST"
                      : row->type == HISTD_PARAM_STRING  ? " NAME"
                                                         : " X";
    if (row->short_flag)
      snprintf(left, sizeof left, "-%c, --%s%s", row->short_flag, row->flag, arg);
    else
      snprintf(left, sizeof left, "--%s%s", row->flag, arg);
    printf("  %-20s  %s\n", left, row->help);
  }
  fputs(usage_tail, stdout);
}

enum output_format { OUT_TEXT, OUT_JSON, OUT_CSV, OUT_NPZ };

typedef struct options {
  const char *file, *file_b;
  bool have_input_format;
  histd_format input_format;
  bool random;
  uint64_t random_n;
  double box;
  uint64_t seed;
  histd_params params;
  enum output_format out;
  bool pretty;
  histd_sky_options sky;
} options;

static int usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("sdh: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputs("\nTry 'sdh --help'.\n", stderr);
  va_end(ap);
  return 2;
}

/* The format names, for messages. */
static const char *format_list(void) {
  static char names[256];
  if (names[0] == '\0')
    histd_format_names(names, sizeof names, ", ");
  return names;
}

static bool parse_positive(const char *s, double *out) {
  if (s == NULL || *s == '\0')
    return false;
  errno = 0;
  char *end;
  double v = strtod(s, &end);
  if (errno != 0 || *end != '\0' || !isfinite(v) || !(v > 0))
    return false;
  *out = v;
  return true;
}

static uint64_t splitmix64(uint64_t *state) {
  uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return z ^ (z >> 31);
}

static int list_kernels(void) {
  size_t count = histd_kernel_count(), w = 4;
  for (size_t i = 0; i < count; i++) {
    size_t l = strlen(histd_kernel_at(i)->name);
    if (l > w)
      w = l;
  }
  for (size_t i = 0; i < count; i++) {
    const histd_kernel *k = histd_kernel_at(i);
    printf("%-*s  %-4s  %s\n", (int)w, k->name, k->engine == HISTD_ENGINE_CUDA ? "cuda" : k->engine == HISTD_ENGINE_ANY ? "any" : "cpu",
           k->summary);
  }
  return fflush(stdout) == 0 ? 0 : 1;
}

/* The parameter table: name, flag, type, help, tab-separated (the
 * OpenAPI test holds api/openapi.yaml to it). */
static int list_params(void) {
  static const char *const types[] = {"number", "count", "string", "bool", "numbers"};
  for (size_t i = 0; i < histd_param_count(); i++) {
    const histd_param *row = histd_param_at(i);
    printf("%s\t--%s\t%s\t%s\n", row->name, row->flag ? row->flag : "", types[row->type],
           row->help);
  }
  return fflush(stdout) == 0 ? 0 : 1;
}

/* Parses argv into o; returns -1 to go on, else the exit status. The
 * parameters' flags come from the table (histd/params.h), after the CLI's
 * own. */
static int parse_args(int argc, char **argv, options *o) {
  enum { O_RANDOM = 256, O_BOX, O_SEED, O_PRETTY, O_LIST, O_LIST_PARAMS, O_LIST_FIELDS,
         O_VERSION, O_WITH, O_ALL_IMAGES, O_OMEGA_M, O_PARAM };
  static const struct option own[] = {
      {"format", required_argument, NULL, 'f'},
      {"input-format", required_argument, NULL, 'i'},
      {"random", required_argument, NULL, O_RANDOM},
      {"box", required_argument, NULL, O_BOX},
      {"seed", required_argument, NULL, O_SEED},
      {"with", required_argument, NULL, O_WITH},
      {"omega-m", required_argument, NULL, O_OMEGA_M},
      {"all-images", no_argument, NULL, O_ALL_IMAGES}, /* --images all */
      {"pretty", no_argument, NULL, O_PRETTY},
      {"list-kernels", no_argument, NULL, O_LIST},
      {"list-params", no_argument, NULL, O_LIST_PARAMS},
      {"list-fields", no_argument, NULL, O_LIST_FIELDS},
      {"help", no_argument, NULL, 'h'},
      {"version", no_argument, NULL, O_VERSION},
  };
  const size_t n_own = sizeof own / sizeof own[0];
  struct option longopts[64];
  char shortopts[64] = ":f:i:h";
  size_t n = 0;
  for (; n < n_own; n++)
    longopts[n] = own[n];
  for (size_t i = 0; i < histd_param_count() && n + 1 < 64; i++) {
    const histd_param *row = histd_param_at(i);
    if (row->flag == NULL)
      continue;
    longopts[n++] = (struct option){row->flag,
                                    row->type == HISTD_PARAM_BOOL ? no_argument : required_argument,
                                    NULL, O_PARAM + (int)i};
    if (row->short_flag) {
      size_t l = strlen(shortopts);
      shortopts[l] = row->short_flag;
      shortopts[l + 1] = ':';
      shortopts[l + 2] = '\0';
    }
  }
  longopts[n] = (struct option){NULL, 0, NULL, 0};
  bool have_box = false, have_seed = false;
  char msg[512];
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
    const histd_param *row = NULL;
    if (c >= O_PARAM) {
      row = histd_param_at((size_t)(c - O_PARAM));
    } else if (c < 128) {
      for (size_t i = 0; i < histd_param_count() && row == NULL; i++)
        if (histd_param_at(i)->short_flag == c && c != 0)
          row = histd_param_at(i);
    }
    if (row != NULL) {
      if (histd_param_set_text(&o->params, row, optarg, msg, sizeof msg) != 0)
        return usage_error("--%s: %s", row->flag, msg);
      continue;
    }
    uint64_t u;
    switch (c) {
    case 'f':
      if (strcmp(optarg, "text") == 0)
        o->out = OUT_TEXT;
      else if (strcmp(optarg, "json") == 0)
        o->out = OUT_JSON;
      else if (strcmp(optarg, "csv") == 0)
        o->out = OUT_CSV;
      else if (strcmp(optarg, "npz") == 0)
        o->out = OUT_NPZ;
      else
        return usage_error("--format must be text, json, csv or npz, got '%s'", optarg);
      break;
    case 'i':
      if (histd_format_parse(optarg, &o->input_format) != 0)
        return usage_error("--input-format must be one of %s (or bin for f64), got '%s'",
                           format_list(), optarg);
      o->have_input_format = true;
      break;
    case O_WITH:
      o->file_b = optarg;
      break;
    case O_OMEGA_M:
      if (!parse_positive(optarg, &o->sky.omega_m) || o->sky.omega_m < 0.01 ||
          o->sky.omega_m > 1)
        return usage_error("--omega-m must be a number from 0.01 to 1, got '%s'", optarg);
      break;
    case O_ALL_IMAGES:
      if (histd_param_set_text(&o->params, histd_param_find("images"), "all", msg, sizeof msg) != 0)
        return usage_error("--all-images: %s", msg);
      break;
    case O_RANDOM:
      if (!histd_parse_u64(optarg, &u) || u == 0 || u > (uint64_t)(SIZE_MAX / 24))
        return usage_error("--random must be a positive whole number of points, got '%s'",
                           optarg);
      o->random_n = u;
      o->random = true;
      break;
    case O_BOX:
      if (!parse_positive(optarg, &o->box))
        return usage_error("--box must be a positive number, got '%s'", optarg);
      have_box = true;
      break;
    case O_SEED:
      if (!histd_parse_u64(optarg, &o->seed))
        return usage_error("--seed must be a whole number from 0 to 2^64-1, got '%s'", optarg);
      have_seed = true;
      break;
    case O_PRETTY:
      o->pretty = true;
      break;
    case O_LIST:
      return list_kernels();
    case O_LIST_PARAMS:
      return list_params();
    case O_LIST_FIELDS:
      return histd_write_schema(stdout) == 0 && fputc('\n', stdout) != EOF && fflush(stdout) == 0
                 ? 0
                 : 1;
    case 'h':
      usage();
      return 0;
    case O_VERSION:
      printf("sdh (histd) %s\n", HISTD_VERSION);
      return 0;
    case ':':
      return usage_error("%s needs a value", argv[optind - 1]);
    default:
      if (optopt != 0)
        return usage_error("unknown option '-%c'", optopt);
      return usage_error("unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind < argc)
    o->file = argv[optind++];
  if (optind < argc)
    return usage_error("one input file at a time, got also '%s' (--with FILE2 for A x B)",
                       argv[optind]);
  if (o->file != NULL && o->random)
    return usage_error("give either FILE or --random N, not both");
  if (o->file == NULL && !o->random)
    return usage_error("no input: give a FILE or --random N");
  if ((have_box || have_seed) && !o->random)
    return usage_error("--box and --seed go with --random");
  if (o->random && (o->have_input_format || o->file_b != NULL))
    return usage_error("--input-format and --with go with a FILE, not --random");
  if (o->file != NULL && !o->have_input_format &&
      histd_format_from_path(o->file, &o->input_format) != 0)
    return usage_error("cannot tell the format of '%s' from its name; use --input-format "
                       "(one of %s)", o->file, format_list());
  const histd_params *p = &o->params;
  if (p->bucket_width <= 0 && p->r_max <= 0 && p->edges == NULL && !p->log &&
      histd_params_statistic(p) == HISTD_STAT_HISTOGRAM) /* the others say what they need */
    return usage_error("--width W is required (or --r-max with --buckets, --edges, --log-bins, "
                       "or --within)");
  if (o->random && p->bucket_width > 0 && p->buckets == 0 && p->box.kind == HISTD_BOX_NONE) {
    double q = floor(o->box * sqrt(3.0) / p->bucket_width);
    if (!(q < HISTD_MAX_BUCKETS))
      return usage_error("--width %g is too small for --box %g: it needs more than %u buckets",
                         p->bucket_width, o->box, HISTD_MAX_BUCKETS);
    o->params.buckets = (uint32_t)q + 1;
  }
  if (histd_exec_validate(&p->exec, NULL, msg, sizeof msg) != 0)
    return usage_error("%s", msg);
  return -1;
}

static int load(const options *o, const char *file, histd_dataset *ds) {
  char msg[512];
  if (o->random) {
    size_t n = (size_t)o->random_n;
    if (histd_dataset_alloc(ds, n, msg, sizeof msg) != 0) {
      fprintf(stderr, "sdh: %s\n", msg);
      return 1;
    }
    uint64_t state = o->seed;
    for (size_t i = 0; i < n; i++) {
      ds->x[i] = o->box * ((double)(splitmix64(&state) >> 11) * 0x1p-53);
      ds->y[i] = o->box * ((double)(splitmix64(&state) >> 11) * 0x1p-53);
      ds->z[i] = o->box * ((double)(splitmix64(&state) >> 11) * 0x1p-53);
    }
    if (histd_dataset_finish(ds, msg, sizeof msg) != 0) {
      fprintf(stderr, "sdh: %s\n", msg);
      histd_dataset_free(ds);
      return 1;
    }
    return 0;
  }
  histd_format fmt = o->input_format;
  if (!o->have_input_format && histd_format_from_path(file, &fmt) != 0) {
    fprintf(stderr, "sdh: cannot tell the format of '%s' from its name; use --input-format\n",
            file);
    return 1;
  }
  int rc = histd_parse_file_with(file, fmt, 0, &o->sky, ds, msg, sizeof msg);
  if (rc != 0) {
    if (rc == HISTD_ENOENT || rc == HISTD_EIO)
      fprintf(stderr, "sdh: %s\n", msg);
    else
      fprintf(stderr, "sdh: %s (%s): %s\n", file, histd_format_name(fmt), msg);
    return 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  options o = {.box = DEFAULT_BOX, .seed = DEFAULT_SEED, .out = OUT_TEXT};
  histd_params_init(&o.params);
  int status = parse_args(argc, argv, &o);
  if (status >= 0) {
    histd_params_free(&o.params);
    return status;
  }

  histd_dataset ds, ds_b;
  memset(&ds_b, 0, sizeof ds_b);
  double t0 = histd_now_ms();
  if (load(&o, o.file, &ds) != 0 || (o.file_b != NULL && load(&o, o.file_b, &ds_b) != 0)) {
    histd_params_free(&o.params);
    return 1;
  }
  histd_dataset top; /* the atoms' names from another file (--topology) */
  memset(&top, 0, sizeof top);
  if (o.params.topology[0] != '\0') {
    options to = o;
    to.have_input_format = false; /* the topology's format comes from its name */
    int rc = load(&to, o.params.topology, &top);
    if (rc != 0) {
      histd_params_free(&o.params);
      histd_dataset_free(&ds);
      histd_dataset_free(&ds_b);
      return rc == 1 ? 1 : 2;
    }
  }
  double parse_ms = histd_now_ms() - t0;

  histd_result res;
  char msg[512];
  histd_job job;
  /* a pair list goes to an unnamed temporary file, then out in the format */
  static histd_pair_file pairs;
  FILE *pairs_tmp = o.params.has_pairs_within ? tmpfile() : NULL;
  if (pairs_tmp != NULL)
    histd_pair_file_init(&pairs, fileno(pairs_tmp), 0);
  histd_control ctl = {NULL, NULL, &pairs, pairs_tmp ? histd_pair_file_put : NULL};
  int rc = histd_job_bind(&job, &o.params, &ds, o.file_b ? &ds_b : NULL,
                          o.params.topology[0] ? &top : NULL, msg, sizeof msg);
  if (rc == 0) {
    if ((rc = histd_run(&job.problem, &o.params.exec, &ctl, &res, msg, sizeof msg)) == 0 &&
        pairs_tmp != NULL && (rc = histd_pair_file_flush(&pairs, false, msg, sizeof msg)) == 0) {
      res.pairs_fd = fileno(pairs_tmp);
      res.has_pairs_fd = true;
    }
    if (rc == 0)
      histd_job_label(&o.params, &res);
    histd_job_free(&job);
  }
  histd_dataset_free(&top);
  histd_params_free(&o.params);
  histd_dataset_free(&ds);
  histd_dataset_free(&ds_b);
  if (rc != 0) {
    fprintf(stderr, "sdh: %s\n", msg);
    return rc == HISTD_EINVAL || rc == HISTD_EPARSE ? 2 : 1; /* a usage error, or a run that failed */
  }
  res.timing.parse_ms = parse_ms;

  status = 0;
  if (o.out == OUT_JSON) {
    if (histd_write_json(stdout, &res, o.pretty ? HISTD_JSON_PRETTY : 0) != 0)
      status = 1;
    else
      fputc('\n', stdout);
  } else if (o.out == OUT_CSV) {
    if (histd_write_csv(stdout, &res) != 0)
      status = 1;
  } else if (o.out == OUT_NPZ) {
    if (histd_write_npz(stdout, &res) != 0)
      status = 1;
  } else {
    if (histd_write_text(stdout, &res) != 0)
      status = 1;
  }
  histd_result_free(&res);
  if (pairs_tmp != NULL)
    fclose(pairs_tmp);
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, "sdh: cannot write the output: %s\n", strerror(errno));
    status = 1;
  }
  return status;
}
