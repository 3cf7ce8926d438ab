/*
 * sdh.c -- the one-shot command-line front end: read (or generate) a point
 * set, compute its spatial distance histogram with a kernel from the
 * registry, print it as text, JSON or CSV.
 *
 *     sdh points.csv --width 500
 *     sdh --random 100000 --width 500 --seed 7 --format json
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

#define DEFAULT_BOX 23000.0
#define DEFAULT_SEED UINT64_C(1)

static const char usage_text[] =
    "usage: sdh FILE --width W [options]\n"
    "       sdh --random N --width W [--box S] [--seed S] [options]\n"
    "       sdh --list-kernels\n"
    "\n"
    "Computes the spatial distance histogram of a 3-D point set: the counts of\n"
    "all N(N-1)/2 pairwise distances in buckets of width W.\n"
    "\n"
    "Input:\n"
    "  FILE                  points as .json .csv (.tsv .txt) .xyz, or raw\n"
    "                        little-endian triples .f64 (.bin) / .f32; '-' reads\n"
    "                        standard input (needs --input-format)\n"
    "  -i, --input-format F  json, csv, xyz, f64 (or bin), f32: overrides the\n"
    "                        file's extension\n"
    "  --random N            N points uniform in [0, S)^3 instead of a file\n"
    "  --box S               side of the random cube (default 23000)\n"
    "  --seed S              seed of the random points (default 1); the\n"
    "                        generator is splitmix64, each coordinate\n"
    "                        (x, y, z of point 0, then of point 1, ...) being\n"
    "                        S * (next() >> 11) * 2^-53\n"
    "\n"
    "Histogram:\n"
    "  -w, --width W         bucket width (required, > 0)\n"
    "  -b, --buckets K       bucket count; default: cover the data's bounding-box\n"
    "                        diagonal, or floor(S*sqrt(3)/W)+1 with --random\n"
    "  -k, --kernel NAME     a kernel from --list-kernels (default auto)\n"
    "  --block-size B        GPU threads per block, multiple of 32, 32..1024\n"
    "  --precision P         exact (default: counts follow the contract) or fast\n"
    "  -t, --threads T       CPU threads (default: every core)\n"
    "  --device D            GPU index to run on (default: the first)\n"
    "\n"
    "Output:\n"
    "  -f, --format F        text (default: the seed reports' layout, five\n"
    "                        buckets a row, then T:<total pairs>), json, csv\n"
    "  --pretty              indent the JSON output\n"
    "  --list-kernels        list the kernels: name, engine, summary\n"
    "  -h, --help            this text\n"
    "  --version             the version\n"
    "\n"
    "Exit status: 0 success, 1 runtime error, 2 usage error.\n";

enum output_format { OUT_TEXT, OUT_JSON, OUT_CSV };

typedef struct options {
  const char *file;
  bool have_input_format;
  histd_format input_format;
  bool random;
  uint64_t random_n;
  double box;
  uint64_t seed;
  double width;
  bool have_width, have_buckets;
  histd_spec spec;
  enum output_format out;
  bool pretty;
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

static bool parse_u64(const char *s, uint64_t *out) {
  if (s == NULL || *s < '0' || *s > '9')
    return false;
  errno = 0;
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno != 0 || *end != '\0')
    return false;
  *out = (uint64_t)v;
  return true;
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
    printf("%-*s  %-4s  %s\n", (int)w, k->name, k->engine == HISTD_ENGINE_CUDA ? "cuda" : "cpu",
           k->summary);
  }
  return fflush(stdout) == 0 ? 0 : 1;
}

/* Parses argv into o; returns -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, options *o) {
  enum { O_RANDOM = 256, O_BOX, O_SEED, O_BLOCK, O_PREC, O_DEVICE, O_PRETTY, O_LIST, O_VERSION };
  static const struct option longopts[] = {
      {"width", required_argument, NULL, 'w'},
      {"buckets", required_argument, NULL, 'b'},
      {"kernel", required_argument, NULL, 'k'},
      {"block-size", required_argument, NULL, O_BLOCK},
      {"precision", required_argument, NULL, O_PREC},
      {"format", required_argument, NULL, 'f'},
      {"input-format", required_argument, NULL, 'i'},
      {"threads", required_argument, NULL, 't'},
      {"device", required_argument, NULL, O_DEVICE},
      {"random", required_argument, NULL, O_RANDOM},
      {"box", required_argument, NULL, O_BOX},
      {"seed", required_argument, NULL, O_SEED},
      {"pretty", no_argument, NULL, O_PRETTY},
      {"list-kernels", no_argument, NULL, O_LIST},
      {"help", no_argument, NULL, 'h'},
      {"version", no_argument, NULL, O_VERSION},
      {NULL, 0, NULL, 0},
  };
  bool have_box = false, have_seed = false;
  uint64_t u;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":w:b:k:f:i:t:h", longopts, NULL)) != -1) {
    switch (c) {
    case 'w':
      if (!parse_positive(optarg, &o->width))
        return usage_error("--width must be a positive number, got '%s'", optarg);
      o->have_width = true;
      break;
    case 'b':
      if (!parse_u64(optarg, &u) || u == 0 || u > HISTD_MAX_BUCKETS)
        return usage_error("--buckets must be a whole number from 1 to %u, got '%s'",
                           HISTD_MAX_BUCKETS, optarg);
      o->spec.buckets = (uint32_t)u;
      o->have_buckets = true;
      break;
    case 'k':
      if (histd_kernel_find(optarg) == NULL || optarg[0] == '\0')
        return usage_error("unknown kernel '%s' ('sdh --list-kernels' lists them)", optarg);
      snprintf(o->spec.kernel, sizeof o->spec.kernel, "%s", optarg);
      break;
    case O_BLOCK:
      if (!parse_u64(optarg, &u) || u < HISTD_MIN_BLOCK_SIZE || u > HISTD_MAX_BLOCK_SIZE ||
          u % 32 != 0)
        return usage_error("--block-size must be a multiple of 32 from %u to %u, got '%s'",
                           HISTD_MIN_BLOCK_SIZE, HISTD_MAX_BLOCK_SIZE, optarg);
      o->spec.block_size = (uint32_t)u;
      break;
    case O_PREC:
      if (histd_precision_parse(optarg, &o->spec.precision) != 0)
        return usage_error("--precision must be exact or fast, got '%s'", optarg);
      break;
    case 'f':
      if (strcmp(optarg, "text") == 0)
        o->out = OUT_TEXT;
      else if (strcmp(optarg, "json") == 0)
        o->out = OUT_JSON;
      else if (strcmp(optarg, "csv") == 0)
        o->out = OUT_CSV;
      else
        return usage_error("--format must be text, json or csv, got '%s'", optarg);
      break;
    case 'i':
      if (histd_format_parse(optarg, &o->input_format) != 0)
        return usage_error("--input-format must be json, csv, xyz, f64 (or bin) or f32, got '%s'",
                           optarg);
      o->have_input_format = true;
      break;
    case 't':
      if (!parse_u64(optarg, &u) || u == 0 || u > 65536)
        return usage_error("--threads must be a whole number from 1 to 65536, got '%s'", optarg);
      o->spec.threads = (uint32_t)u;
      break;
    case O_DEVICE:
      if (!parse_u64(optarg, &u) || u > 63)
        return usage_error("--device must be a GPU index from 0 to 63, got '%s'", optarg);
      o->spec.devices = UINT64_C(1) << u;
      break;
    case O_RANDOM:
      if (!parse_u64(optarg, &o->random_n) || o->random_n == 0 ||
          o->random_n > (uint64_t)(SIZE_MAX / 24))
        return usage_error("--random must be a positive whole number of points, got '%s'",
                           optarg);
      o->random = true;
      break;
    case O_BOX:
      if (!parse_positive(optarg, &o->box))
        return usage_error("--box must be a positive number, got '%s'", optarg);
      have_box = true;
      break;
    case O_SEED:
      if (!parse_u64(optarg, &o->seed))
        return usage_error("--seed must be a whole number from 0 to 2^64-1, got '%s'", optarg);
      have_seed = true;
      break;
    case O_PRETTY:
      o->pretty = true;
      break;
    case O_LIST:
      return list_kernels();
    case 'h':
      fputs(usage_text, stdout);
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
    return usage_error("one input file at a time, got also '%s'", argv[optind]);
  if (o->file != NULL && o->random)
    return usage_error("give either FILE or --random N, not both");
  if (o->file == NULL && !o->random)
    return usage_error("no input: give a FILE or --random N");
  if ((have_box || have_seed) && !o->random)
    return usage_error("--box and --seed go with --random");
  if (o->random && o->have_input_format)
    return usage_error("--input-format goes with a FILE, not --random");
  if (!o->have_width)
    return usage_error("--width W is required");
  o->spec.bucket_width = o->width;
  if (o->file != NULL && !o->have_input_format &&
      histd_format_from_path(o->file, &o->input_format) != 0)
    return usage_error("cannot tell the format of '%s' from its name; use --input-format "
                       "json|csv|xyz|f64|f32",
                       o->file);
  if (o->random && !o->have_buckets) {
    double q = floor(o->box * sqrt(3.0) / o->width);
    if (!(q < HISTD_MAX_BUCKETS))
      return usage_error("--width %g is too small for --box %g: it needs more than %u buckets",
                         o->width, o->box, HISTD_MAX_BUCKETS);
    o->spec.buckets = (uint32_t)q + 1;
  }
  char msg[256];
  if (histd_spec_validate(&o->spec, msg, sizeof msg) != 0)
    return usage_error("%s", msg);
  return -1;
}

static int load(const options *o, histd_dataset *ds) {
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
  int rc = histd_parse_file(o->file, o->input_format, 0, ds, msg, sizeof msg);
  if (rc != 0) {
    if (rc == HISTD_ENOENT || rc == HISTD_EIO)
      fprintf(stderr, "sdh: %s\n", msg);
    else
      fprintf(stderr, "sdh: %s (%s): %s\n", o->file, histd_format_name(o->input_format), msg);
    return 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  options o = {.box = DEFAULT_BOX, .seed = DEFAULT_SEED, .out = OUT_TEXT};
  histd_spec_init(&o.spec);
  int status = parse_args(argc, argv, &o);
  if (status >= 0)
    return status;

  histd_dataset ds;
  double t0 = histd_now_ms();
  if (load(&o, &ds) != 0)
    return 1;
  double parse_ms = histd_now_ms() - t0;

  histd_result res;
  char msg[512];
  int rc = histd_run(&ds, &o.spec, NULL, &res, msg, sizeof msg);
  if (rc != 0) {
    fprintf(stderr, "sdh: %s\n", msg);
    histd_dataset_free(&ds);
    return 1;
  }
  res.timing.parse_ms = parse_ms;
  size_t n = ds.n;
  histd_dataset_free(&ds);

  status = 0;
  if (o.out == OUT_JSON) {
    if (histd_write_json(stdout, &res, n, o.pretty ? HISTD_JSON_PRETTY : 0) != 0)
      status = 1;
    else
      fputc('\n', stdout);
  } else if (o.out == OUT_CSV) {
    if (histd_write_csv(stdout, &res) != 0)
      status = 1;
  } else {
    if (histd_write_text(stdout, &res) != 0)
      status = 1;
  }
  histd_result_free(&res);
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, "sdh: cannot write the output: %s\n", strerror(errno));
    status = 1;
  }
  return status;
}
