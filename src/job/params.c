/*
 * params.c -- the table of a job's parameters (include/histd/params.h), the
 * job layer's (src/job): what a job asks for, before job.c binds it.
 *
 * One row a parameter, after redis's static_configs[]: its JSON name, its
 * sdh flag, its type, its help line, and three small functions: set it from
 * a value, say whether it was given, write it back as JSON. Everything that
 * reads or writes parameters walks this table: the service's request
 * bodies and job documents, the store (a job's parameters are the JSON
 * histd_params_write_json writes), sdh's flags, and the OpenAPI test.
 *
 * Boxes are written the way people have them: [L] a cube, [Lx, Ly, Lz],
 * LAMMPS's [lx, ly, lz, xy, xz, yz], or GROMACS's nine numbers (the box
 * vectors a, b, c one after another, lower-triangular: ay = az = bz = 0).
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "histd/params.h"
#include "histd/io.h"

/* ---- values --------------------------------------------------------------- */

static int want(const histd_value *v, histd_value_kind kind, const char *name, const char *what,
                char *msg, size_t msglen) {
  if (v->kind == kind)
    return 0;
  return histd_fail(msg, msglen, HISTD_EINVAL, "%s must be %s", name, what);
}

static int want_number(const histd_value *v, const char *name, char *msg, size_t msglen) {
  int rc = want(v, HISTD_VALUE_NUMBER, name, "a number", msg, msglen);
  if (rc == 0 && !isfinite(v->number))
    rc = histd_fail(msg, msglen, HISTD_EINVAL, "%s must be a finite number", name);
  return rc;
}

static int want_count(const histd_value *v, const char *name, double hi, uint32_t *out,
                      char *msg, size_t msglen) {
  int rc = want(v, HISTD_VALUE_NUMBER, name, "a whole number", msg, msglen);
  if (rc != 0)
    return rc;
  if (!isfinite(v->number) || floor(v->number) != v->number)
    return histd_fail(msg, msglen, HISTD_EINVAL, "%s must be a whole number, got %g", name,
                      v->number);
  if (v->number < 0 || v->number > hi)
    return histd_fail(msg, msglen, HISTD_EINVAL, "%s must be from 0 to %.0f, got %.0f", name,
                      hi, v->number);
  *out = (uint32_t)v->number;
  return 0;
}

static int want_numbers(const histd_value *v, const char *name, char *msg, size_t msglen) {
  int rc = want(v, HISTD_VALUE_NUMBERS, name, "an array of numbers", msg, msglen);
  for (size_t i = 0; rc == 0 && i < v->count; i++)
    if (!isfinite(v->numbers[i]))
      rc = histd_fail(msg, msglen, HISTD_EINVAL, "%s[%zu] must be a finite number", name, i);
  return rc;
}

static void write_double(FILE *f, double v) {
  char buf[40];
  histd_format_double(buf, sizeof buf, v);
  fputs(buf, f);
}

static void write_doubles(FILE *f, const double *v, size_t n) {
  fputc('[', f);
  for (size_t i = 0; i < n; i++) {
    if (i)
      fputc(',', f);
    write_double(f, v[i]);
  }
  fputc(']', f);
}

/* ---- the rows --------------------------------------------------------------- */

static int set_bucket_width(histd_params *p, const histd_value *v, char *msg, size_t msglen) {
  int rc = want_number(v, "bucket_width", msg, msglen);
  if (rc == 0 && !(v->number > 0))
    rc = histd_fail(msg, msglen, HISTD_EINVAL, "bucket_width must be > 0, got %g", v->number);
  if (rc == 0)
    p->bucket_width = v->number;
  return rc;
}
static bool given_bucket_width(const histd_params *p) { return p->bucket_width > 0; }
static void write_bucket_width(FILE *f, const histd_params *p) { write_double(f, p->bucket_width); }

static int set_buckets(histd_params *p, const histd_value *v, char *msg, size_t msglen) {
  if (v->kind == HISTD_VALUE_NUMBER && isfinite(v->number) && floor(v->number) == v->number &&
      v->number > HISTD_MAX_BUCKETS)
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "buckets must be at most %u (%u MiB of counts), got %.0f",
                      HISTD_MAX_BUCKETS, HISTD_MAX_BUCKETS / (1u << 17), v->number);
  return want_count(v, "buckets", HISTD_MAX_BUCKETS, &p->buckets, msg, msglen);
}
static bool given_buckets(const histd_params *p) { return p->buckets > 0; }
static void write_buckets(FILE *f, const histd_params *p) { fprintf(f, "%" PRIu32, p->buckets); }

static int set_r_max(histd_params *p, const histd_value *v, char *msg, size_t msglen) {
  int rc = want_number(v, "r_max", msg, msglen);
  if (rc == 0 && !(v->number > 0))
    rc = histd_fail(msg, msglen, HISTD_EINVAL, "r_max must be > 0, got %g", v->number);
  if (rc == 0)
    p->r_max = v->number;
  return rc;
}
static bool given_r_max(const histd_params *p) { return p->r_max > 0; }
static void write_r_max(FILE *f, const histd_params *p) { write_double(f, p->r_max); }

static int set_edges(histd_params *p, const histd_value *v, char *msg, size_t msglen) {
  int rc = want_numbers(v, "edges", msg, msglen);
  if (rc != 0)
    return rc;
  if (v->count < 2 || v->count > (size_t)HISTD_MAX_BUCKETS + 1)
    return histd_fail(msg, msglen, HISTD_EINVAL, "edges must hold 2 to %u values, got %zu",
                      HISTD_MAX_BUCKETS + 1, v->count);
  for (size_t i = 1; i < v->count; i++)
    if (!(v->numbers[i - 1] < v->numbers[i]))
      return histd_fail(msg, msglen, HISTD_EINVAL,
                        "edges must ascend strictly: edges[%zu] = %.17g is not above "
                        "edges[%zu] = %.17g", i, v->numbers[i], i - 1, v->numbers[i - 1]);
  double *e = malloc(v->count * sizeof *e);
  if (e == NULL)
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %zu edges", v->count);
  memcpy(e, v->numbers, v->count * sizeof *e);
  free(p->edges);
  p->edges = e;
  p->edge_count = (uint32_t)v->count;
  return 0;
}
static bool given_edges(const histd_params *p) { return p->edges != NULL; }
static void write_edges(FILE *f, const histd_params *p) {
  write_doubles(f, p->edges, p->edge_count);
}

static int set_log_bins(histd_params *p, const histd_value *v, char *msg, size_t msglen) {
  int rc = want_numbers(v, "log_bins", msg, msglen);
  if (rc == 0 && v->count != 3)
    rc = histd_fail(msg, msglen, HISTD_EINVAL,
                    "log_bins must be [r_min, r_max, buckets], got %zu numbers", v->count);
  if (rc != 0)
    return rc;
  double k = v->numbers[2];
  if (floor(k) != k || k < 1 || k > HISTD_MAX_BUCKETS)
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "log_bins' bucket count must be a whole number from 1 to %u, got %g",
                      HISTD_MAX_BUCKETS, k);
  if (!(v->numbers[0] > 0) || !(v->numbers[0] < v->numbers[1]))
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "log_bins needs 0 < r_min < r_max, got r_min %g and r_max %g",
                      v->numbers[0], v->numbers[1]);
  memcpy(p->log_bins, v->numbers, sizeof p->log_bins);
  p->log = true;
  return 0;
}
static bool given_log_bins(const histd_params *p) { return p->log; }
static void write_log_bins(FILE *f, const histd_params *p) { write_doubles(f, p->log_bins, 3); }

static int set_box(histd_params *p, const histd_value *v, char *msg, size_t msglen) {
  int rc = want_numbers(v, "box", msg, msglen);
  if (rc != 0)
    return rc;
  const double *n = v->numbers;
  histd_box b = {HISTD_BOX_ORTHO, 0, 0, 0, 0, 0, 0};
  switch (v->count) {
  case 1:
    b.ax = b.by = b.cz = n[0];
    break;
  case 3:
    b.ax = n[0], b.by = n[1], b.cz = n[2];
    break;
  case 6: /* LAMMPS: lx ly lz xy xz yz */
    b.ax = n[0], b.by = n[1], b.cz = n[2], b.bx = n[3], b.cx = n[4], b.cy = n[5];
    break;
  case 9: /* GROMACS: a, b, c */
    if (n[1] != 0 || n[2] != 0 || n[5] != 0)
      return histd_fail(msg, msglen, HISTD_EINVAL,
                        "a box of nine numbers is the vectors a, b, c with ay = az = bz = 0 "
                        "(GROMACS's form); got ay %g, az %g, bz %g", n[1], n[2], n[5]);
    b.ax = n[0], b.bx = n[3], b.by = n[4], b.cx = n[6], b.cy = n[7], b.cz = n[8];
    break;
  default:
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "box must hold 1 (a cube), 3 (Lx, Ly, Lz), 6 (LAMMPS: lx, ly, lz, xy, "
                      "xz, yz) or 9 (GROMACS: the vectors a, b, c) numbers, got %zu", v->count);
  }
  if (b.bx != 0 || b.cx != 0 || b.cy != 0)
    b.kind = HISTD_BOX_TRICLINIC;
  if ((rc = histd_box_check(&b, msg, msglen)) != 0) /* the range histd.h states */
    return rc;
  p->box = b;
  return 0;
}
static bool given_box(const histd_params *p) { return p->box.kind != HISTD_BOX_NONE; }
static void write_box(FILE *f, const histd_params *p) {
  const histd_box *b = &p->box;
  double v[6] = {b->ax, b->by, b->cz, b->bx, b->cx, b->cy};
  write_doubles(f, v, b->kind == HISTD_BOX_TRICLINIC ? 6 : 3);
}

static int set_within(histd_params *p, const histd_value *v, char *msg, size_t msglen) {
  int rc = want_number(v, "within", msg, msglen);
  if (rc == 0 && !(v->number >= 0))
    rc = histd_fail(msg, msglen, HISTD_EINVAL, "within must be a distance >= 0, got %g",
                    v->number);
  if (rc == 0) {
    p->within = v->number;
    p->has_within = true;
  }
  return rc;
}
static bool given_within(const histd_params *p) { return p->has_within; }
static void write_within(FILE *f, const histd_params *p) { write_double(f, p->within); }

/* A flag: true or false, given when true (written as true). */
#define FLAG_PARAM(name)                                                                   \
  static int set_##name(histd_params *p, const histd_value *v, char *msg, size_t msglen) { \
    int rc = want(v, HISTD_VALUE_BOOL, #name, "true or false", msg, msglen);               \
    if (rc == 0)                                                                           \
      p->name = v->boolean;                                                                \
    return rc;                                                                             \
  }                                                                                        \
  static bool given_##name(const histd_params *p) { return p->name; }                      \
  static void write_##name(FILE *f, const histd_params *p) {                               \
    (void)p;                                                                               \
    fputs("true", f);                                                                      \
  }
FLAG_PARAM(weights)
FLAG_PARAM(per_frame)
FLAG_PARAM(per_point)
FLAG_PARAM(per_point_histogram)
FLAG_PARAM(nearest)
FLAG_PARAM(ravg)
FLAG_PARAM(jackknife)

static int set_kernel(histd_params *p, const histd_value *v, char *msg, size_t msglen) {
  int rc = want(v, HISTD_VALUE_STRING, "kernel", "a string (see the list of kernels)", msg,
                msglen);
  if (rc != 0)
    return rc;
  const char *name = v->string[0] ? v->string : "auto";
  if (strlen(name) >= sizeof p->exec.kernel || histd_kernel_find(name) == NULL)
    return histd_fail(msg, msglen, HISTD_ENOENT,
                      "unknown kernel \"%.40s\" (see the list of kernels)", v->string);
  snprintf(p->exec.kernel, sizeof p->exec.kernel, "%s", name);
  return 0;
}
static bool given_always(const histd_params *p) { (void)p; return true; }
static void write_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++)
    fprintf(f, (*s == '"' || *s == '\\') ? "\\%c" : "%c", *s);
  fputc('"', f);
}
static void write_kernel(FILE *f, const histd_params *p) { write_string(f, p->exec.kernel); }

static int set_block_size(histd_params *p, const histd_value *v, char *msg, size_t msglen) {
  return want_count(v, "block_size", 1e9, &p->exec.block_size, msg, msglen);
}
static bool given_block_size(const histd_params *p) { return p->exec.block_size > 0; }
static void write_block_size(FILE *f, const histd_params *p) {
  fprintf(f, "%" PRIu32, p->exec.block_size);
}

static int set_precision(histd_params *p, const histd_value *v, char *msg, size_t msglen) {
  int rc = want(v, HISTD_VALUE_STRING, "precision", "a string, \"exact\" or \"fast\"", msg,
                msglen);
  if (rc == 0 && histd_precision_parse(v->string, &p->exec.precision) != 0)
    rc = histd_fail(msg, msglen, HISTD_EINVAL, "precision must be \"exact\" or \"fast\", got "
                    "\"%.40s\"", v->string);
  return rc;
}
static void write_precision(FILE *f, const histd_params *p) {
  write_string(f, histd_precision_name(p->exec.precision));
}

static int set_threads(histd_params *p, const histd_value *v, char *msg, size_t msglen) {
  return want_count(v, "threads", 1024, &p->exec.threads, msg, msglen);
}
static bool given_threads(const histd_params *p) { return p->exec.threads > 0; }
static void write_threads(FILE *f, const histd_params *p) { fprintf(f, "%" PRIu32, p->exec.threads); }

static int set_devices(histd_params *p, const histd_value *v, char *msg, size_t msglen) {
  int rc = want_numbers(v, "devices", msg, msglen);
  uint64_t mask = 0;
  for (size_t i = 0; rc == 0 && i < v->count; i++) {
    double d = v->numbers[i];
    if (floor(d) != d || d < 0 || d > 63)
      rc = histd_fail(msg, msglen, HISTD_EINVAL, "devices must hold GPU indices from 0 to 63");
    else
      mask |= UINT64_C(1) << (int)d;
  }
  if (rc == 0)
    p->exec.devices = mask;
  return rc;
}
static bool given_devices(const histd_params *p) { return p->exec.devices != 0; }
static void write_devices(FILE *f, const histd_params *p) {
  fputc('[', f);
  for (int i = 0, first = 1; i < 64; i++)
    if (p->exec.devices & (UINT64_C(1) << i)) {
      fprintf(f, first ? "%d" : ",%d", i);
      first = 0;
    }
  fputc(']', f);
}

/* A text parameter for a field of `size` bytes: a string, shorter than the
 * field, with no control character (nor, when ascii, any past 0x7e). */
static int want_text(const histd_value *v, const char *name, const char *what, size_t size,
                     bool ascii, char *msg, size_t msglen) {
  int rc = want(v, HISTD_VALUE_STRING, name, what, msg, msglen);
  if (rc != 0)
    return rc;
  if (strlen(v->string) >= size)
    return histd_fail(msg, msglen, HISTD_EINVAL, "%s is longer than %zu characters", name,
                      size - 1);
  for (const char *c = v->string; *c; c++)
    if ((unsigned char)*c < 0x20 || (ascii && (unsigned char)*c >= 0x7f))
      return histd_fail(msg, msglen, HISTD_EINVAL, "%s holds a control%s character", name,
                        ascii ? " or non-ASCII" : "");
  return 0;
}

static int set_selection(char *dst, const histd_value *v, const char *name, char *msg,
                         size_t msglen) {
  int rc = want_text(v, name, "a string such as element:O or index:0-99", 256, true, msg,
                     msglen);
  if (rc == 0)
    rc = histd_selection_check(v->string, ~0u, msg, msglen);
  if (rc == 0)
    snprintf(dst, 256, "%s", v->string);
  return rc;
}
static int set_select_a(histd_params *p, const histd_value *v, char *msg, size_t msglen) {
  return set_selection(p->select_a, v, "select_a", msg, msglen);
}
static bool given_select_a(const histd_params *p) { return p->select_a[0] != '\0'; }
static void write_select_a(FILE *f, const histd_params *p) { write_string(f, p->select_a); }
static int set_select_b(histd_params *p, const histd_value *v, char *msg, size_t msglen) {
  return set_selection(p->select_b, v, "select_b", msg, msglen);
}
static bool given_select_b(const histd_params *p) { return p->select_b[0] != '\0'; }
static void write_select_b(FILE *f, const histd_params *p) { write_string(f, p->select_b); }

static int set_exclude(histd_params *p, const histd_value *v, char *msg, size_t msglen) {
  int rc = want(v, HISTD_VALUE_STRING, "exclude", "the string \"molecule\"", msg, msglen);
  if (rc == 0 && strcmp(v->string, "molecule") != 0 && v->string[0] != '\0')
    rc = histd_fail(msg, msglen, HISTD_EINVAL,
                    "exclude must be \"molecule\" (leave out the pairs within a molecule)");
  if (rc == 0)
    p->exclude_molecule = v->string[0] != '\0';
  return rc;
}
static bool given_exclude(const histd_params *p) { return p->exclude_molecule; }
static void write_exclude(FILE *f, const histd_params *p) { (void)p; write_string(f, "molecule"); }

static int set_pairs(histd_params *p, const histd_value *v, char *msg, size_t msglen) {
  int rc = want(v, HISTD_VALUE_STRING, "pairs", "\"distinct\" or \"ordered\"", msg, msglen);
  if (rc == 0 && strcmp(v->string, "distinct") != 0 && strcmp(v->string, "ordered") != 0)
    rc = histd_fail(msg, msglen, HISTD_EINVAL,
                    "pairs must be \"distinct\" (each pair of distinct atoms once, the default) "
                    "or \"ordered\" (every (a, b) of two selections, an atom in both meeting "
                    "itself)");
  if (rc == 0)
    p->ordered_pairs = strcmp(v->string, "ordered") == 0;
  return rc;
}
static bool given_pairs(const histd_params *p) { return p->ordered_pairs; }
static void write_pairs(FILE *f, const histd_params *p) { (void)p; write_string(f, "ordered"); }

static int set_images(histd_params *p, const histd_value *v, char *msg, size_t msglen) {
  int rc = want(v, HISTD_VALUE_STRING, "images", "\"nearest\" or \"all\"", msg, msglen);
  if (rc == 0 && strcmp(v->string, "nearest") != 0 && strcmp(v->string, "all") != 0)
    rc = histd_fail(msg, msglen, HISTD_EINVAL,
                    "images must be \"nearest\" (each pair's minimum image, the default) or "
                    "\"all\" (every periodic image within r_max, past half the box too)");
  if (rc == 0)
    p->all_images = strcmp(v->string, "all") == 0;
  return rc;
}
static bool given_images(const histd_params *p) { return p->all_images; }
static void write_images(FILE *f, const histd_params *p) { (void)p; write_string(f, "all"); }

/* The statistics of two axes; the histogram of d is the default. Both
 * spellings: the API's rp_pi, the command line's rp-pi. */
static int set_statistic(histd_params *p, const histd_value *v, char *msg, size_t msglen) {
  int rc = want(v, HISTD_VALUE_STRING, "statistic",
                "\"histogram\", \"rp_pi\", \"s_mu\" or \"theta\"", msg, msglen);
  if (rc != 0)
    return rc;
  const char *t = v->string;
  if (strcmp(t, "histogram") == 0)
    p->binned2 = 0;
  else if (strcmp(t, "rp_pi") == 0 || strcmp(t, "rp-pi") == 0)
    p->binned2 = HISTD_STAT_RP_PI;
  else if (strcmp(t, "s_mu") == 0 || strcmp(t, "s-mu") == 0)
    p->binned2 = HISTD_STAT_S_MU;
  else if (strcmp(t, "theta") == 0)
    p->binned2 = HISTD_STAT_THETA;
  else
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "statistic must be \"histogram\" (of d, the default), \"rp_pi\" (counts "
                      "in (r_p, pi)), \"s_mu\" (counts in (s, mu)) or \"theta\" (angles on the "
                      "sky), got \"%.40s\"", t);
  return 0;
}
static bool given_statistic(const histd_params *p) { return p->binned2 != 0; }
static void write_statistic(FILE *f, const histd_params *p) {
  write_string(f, histd_statistic_about((histd_statistic)p->binned2)->name);
}

static int set_pi_max(histd_params *p, const histd_value *v, char *msg, size_t msglen) {
  int rc = want_number(v, "pi_max", msg, msglen);
  if (rc == 0 && !(v->number > 0))
    rc = histd_fail(msg, msglen, HISTD_EINVAL, "pi_max must be a distance > 0, got %g",
                    v->number);
  if (rc == 0)
    p->pi_max = v->number;
  return rc;
}
static bool given_pi_max(const histd_params *p) { return p->pi_max > 0; }
static void write_pi_max(FILE *f, const histd_params *p) { write_double(f, p->pi_max); }

static int set_mu_max(histd_params *p, const histd_value *v, char *msg, size_t msglen) {
  int rc = want_number(v, "mu_max", msg, msglen);
  if (rc == 0 && !(v->number > 0 && v->number <= 1))
    rc = histd_fail(msg, msglen, HISTD_EINVAL, "mu_max must be in (0, 1], got %g", v->number);
  if (rc == 0)
    p->mu_max = v->number;
  return rc;
}
static bool given_mu_max(const histd_params *p) { return p->mu_max > 0; }
static void write_mu_max(FILE *f, const histd_params *p) { write_double(f, p->mu_max); }

/* A whole number of bins, 1 and up. */
#define BINS_PARAM(name)                                                                   \
  static int set_##name(histd_params *p, const histd_value *v, char *msg, size_t msglen) { \
    uint32_t k = 0;                                                                        \
    int rc = want_count(v, #name, HISTD_MAX_BUCKETS, &k, msg, msglen);                     \
    if (rc == 0 && k == 0)                                                                 \
      rc = histd_fail(msg, msglen, HISTD_EINVAL, #name " must be at least 1");             \
    if (rc == 0)                                                                           \
      p->name = k;                                                                         \
    return rc;                                                                             \
  }                                                                                        \
  static bool given_##name(const histd_params *p) { return p->name > 0; }                  \
  static void write_##name(FILE *f, const histd_params *p) { fprintf(f, "%" PRIu32, p->name); }
BINS_PARAM(pi_bins)
BINS_PARAM(mu_bins)

static int set_los(histd_params *p, const histd_value *v, char *msg, size_t msglen) {
  int rc = want(v, HISTD_VALUE_STRING, "los", "\"z\" or \"midpoint\"", msg, msglen);
  if (rc == 0 && strcmp(v->string, "z") != 0 && strcmp(v->string, "midpoint") != 0)
    rc = histd_fail(msg, msglen, HISTD_EINVAL,
                    "los (the line of sight) must be \"z\" (boxes: pi = |dz|, the default) or "
                    "\"midpoint\" (sky catalogues: along the pair's midpoint)");
  if (rc == 0)
    p->los_midpoint = strcmp(v->string, "midpoint") == 0;
  return rc;
}
static bool given_los(const histd_params *p) { return p->los_midpoint; }
static void write_los(FILE *f, const histd_params *p) { (void)p; write_string(f, "midpoint"); }

/* The first axis's bins under the names of the statistic's axis (rp_edges,
 * theta_log_bins, ...) set the job's edges and log_bins (theta's in degrees)
 * and are written back as them: their rows never say they were given. */
static bool given_never(const histd_params *p) {
  (void)p;
  return false;
}
static void write_nothing(FILE *f, const histd_params *p) {
  (void)f;
  (void)p;
}

/* "START:STOP:STEP", each part optional (STOP empty: the end; STEP 1). */
static int set_frames(histd_params *p, const histd_value *v, char *msg, size_t msglen) {
  int rc = want(v, HISTD_VALUE_STRING, "frames", "a string START:STOP:STEP such as 0:100:10",
                msg, msglen);
  if (rc != 0)
    return rc;
  unsigned long long part[3] = {0, 0, 1};
  const char *c = v->string;
  for (int k = 0; k < 3; k++) {
    if (isdigit((unsigned char)*c)) {
      char *end;
      errno = 0;
      part[k] = strtoull(c, &end, 10);
      if (errno != 0 || part[k] > (1ull << 40))
        return histd_fail(msg, msglen, HISTD_EINVAL, "frames: %.20s is too large", c);
      c = end;
    }
    if (*c == '\0')
      break;
    if (*c != ':' || k == 2)
      return histd_fail(msg, msglen, HISTD_EINVAL,
                        "frames must be START:STOP:STEP (whole numbers, each optional: 100:, "
                        "::10, 0:1000:5), got \"%.40s\"", v->string);
    c++;
  }
  if (part[2] == 0)
    return histd_fail(msg, msglen, HISTD_EINVAL, "frames: the step must be at least 1");
  if (part[1] != 0 && part[1] <= part[0])
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "frames: STOP (%llu) must be above START (%llu), or empty for the end",
                      part[1], part[0]);
  p->has_frames = true;
  p->frames = (histd_slice){(size_t)part[0], (size_t)part[1], (size_t)part[2]};
  return 0;
}
static bool given_frames(const histd_params *p) { return p->has_frames; }
static void write_frames(FILE *f, const histd_params *p) {
  char buf[80];
  if (p->frames.stop)
    snprintf(buf, sizeof buf, "%zu:%zu:%zu", p->frames.start, p->frames.stop, p->frames.step);
  else
    snprintf(buf, sizeof buf, "%zu::%zu", p->frames.start, p->frames.step);
  write_string(f, buf);
}

static int set_topology(histd_params *p, const histd_value *v, char *msg, size_t msglen) {
  int rc = want_text(v, "topology", "a string (a dataset id, or for sdh a file)",
                     sizeof p->topology, false, msg, msglen);
  if (rc == 0)
    snprintf(p->topology, sizeof p->topology, "%s", v->string);
  return rc;
}
static bool given_topology(const histd_params *p) { return p->topology[0] != '\0'; }
static void write_topology(FILE *f, const histd_params *p) { write_string(f, p->topology); }

static int set_blocks(histd_params *p, const histd_value *v, char *msg, size_t msglen) {
  int rc = want_count(v, "blocks", HISTD_MAX_BLOCKS, &p->blocks, msg, msglen);
  if (rc == 0 && p->blocks < 2)
    rc = histd_fail(msg, msglen, HISTD_EINVAL,
                    "blocks must be at least 2 (a standard error needs two blocks), got %u",
                    p->blocks);
  return rc;
}
static bool given_blocks(const histd_params *p) { return p->blocks > 0; }
static void write_blocks(FILE *f, const histd_params *p) { fprintf(f, "%" PRIu32, p->blocks); }

static int set_norm(histd_params *p, const histd_value *v, char *msg, size_t msglen) {
  int rc = want(v, HISTD_VALUE_STRING, "norm", "rdf, density or none", msg, msglen);
  for (int k = HISTD_NORM_RDF; rc == 0 && k <= HISTD_NORM_COUNTS; k++)
    if (strcmp(v->string, histd_norm_name((histd_norm)k)) == 0) {
      p->norm = (histd_norm)k;
      return 0;
    }
  return rc != 0 ? rc
                 : histd_fail(msg, msglen, HISTD_EINVAL,
                              "norm must be rdf, density or none (MDAnalysis's InterRDF "
                              "normalisations), got \"%.32s\"",
                              v->string);
}
static bool given_norm(const histd_params *p) { return p->norm != HISTD_NORM_UNSET; }
static void write_norm(FILE *f, const histd_params *p) {
  write_string(f, histd_norm_name(p->norm));
}

static int set_partials(histd_params *p, const histd_value *v, char *msg, size_t msglen) {
  int rc = want(v, HISTD_VALUE_STRING, "partials", "element, type, name or resname", msg,
                msglen);
  if (rc == 0 && v->string[0] != '\0' && histd_params_partials_field(v->string) < 0)
    rc = histd_fail(msg, msglen, HISTD_EINVAL,
                    "partials must be element, type, name or resname (every species pair "
                    "by that field), got \"%.32s\"",
                    v->string);
  if (rc == 0)
    snprintf(p->partials, sizeof p->partials, "%s", v->string);
  return rc;
}
static bool given_partials(const histd_params *p) { return p->partials[0] != '\0'; }
static void write_partials(FILE *f, const histd_params *p) { write_string(f, p->partials); }

static int set_pairs_within(histd_params *p, const histd_value *v, char *msg, size_t msglen) {
  int rc = want_number(v, "pairs_within", msg, msglen);
  if (rc == 0 && !(v->number > 0))
    rc = histd_fail(msg, msglen, HISTD_EINVAL, "pairs_within must be a distance > 0, got %g",
                    v->number);
  if (rc == 0) {
    p->pairs_within = v->number;
    p->has_pairs_within = true;
  }
  return rc;
}
static bool given_pairs_within(const histd_params *p) { return p->has_pairs_within; }
static void write_pairs_within(FILE *f, const histd_params *p) { write_double(f, p->pairs_within); }

#define ROW(name, flag, sf, type, help) \
  {#name, flag, sf, HISTD_PARAM_##type, help, set_##name, given_##name, write_##name}

static const histd_param table[] = {
    ROW(bucket_width, "width", 'w', NUMBER,
        "bucket width: bin k holds the distances d with floor(d / width) = k"),
    ROW(buckets, "buckets", 'b', COUNT,
        "the number of buckets (default: cover every pair, or half a periodic box)"),
    ROW(r_max, "r-max", 0, NUMBER, "the last edge; with buckets, width = r_max / buckets"),
    ROW(edges, "edges", 0, NUMBERS,
        "explicit ascending bin edges: bin k holds E[k] <= d < E[k+1]"),
    ROW(log_bins, "log-bins", 0, NUMBERS,
        "[r_min, r_max, buckets]: log-spaced edges, computed once and published"),
    ROW(box, "periodic", 0, NUMBERS,
        "a periodic box: [L], [Lx, Ly, Lz], LAMMPS [lx, ly, lz, xy, xz, yz] or GROMACS' 9 numbers"),
    ROW(within, "within", 0, NUMBER,
        "count the pairs with d <= within instead of a histogram (0: exact collisions)"),
    ROW(weights, "weighted", 0, BOOL, "each pair also adds w_i * w_j to its bin's weighted sum"),
    ROW(select_a, "select-a", 0, STRING,
        "the dataset's atoms for A: all, element:O, name:OW, type:2, resname:SOL, resid:1-9, "
        "mol:3, index:0-99 (comma lists)"),
    ROW(select_b, "select-b", 0, STRING,
        "the atoms for B: of dataset_b, or of the dataset itself (A x B of two selections)"),
    ROW(exclude, "exclude-same", 0, STRING,
        "molecule: leave out the pairs within one molecule (g(r) counts the others)"),
    ROW(pairs, "pairs", 0, STRING,
        "two selections of one dataset: distinct (default: each pair of distinct atoms once) or "
        "ordered (every (a, b), an atom in both meeting itself, as MDAnalysis counts)"),
    ROW(images, "images", 0, STRING,
        "periodic: nearest (each pair's minimum image, r_max at most half the box) or all "
        "(every image within r_max, an atom's own images too; sdh --all-images)"),
    ROW(frames, "frames", 0, STRING,
        "START:STOP:STEP: the frames of a trajectory to count (from 0; each part optional)"),
    ROW(per_frame, "per-frame", 0, BOOL, "also a frames x bins table of counts (and g(r))"),
    ROW(blocks, "blocks", 0, COUNT,
        "error bars: the frames cut into K consecutive blocks, g(r) and the coordination of "
        "each, their mean and standard error (keeps the per-frame table)"),
    ROW(norm, "norm", 0, STRING,
        "also the result's rdf in MDAnalysis's normalisation: rdf, density or none"),
    ROW(partials, "partials", 0, STRING,
        "element, type, name or resname: every species pair's histogram, g(r) and both "
        "coordination numbers in one pass (a set's own pairs: no dataset_b or select_b)"),
    ROW(per_point, "per-point", 0, BOOL,
        "with within R: each point of A's neighbours in B within R (and their weights' sum)"),
    ROW(per_point_histogram, "per-atom", 0, BOOL,
        "each point of A's histogram, in the bins, of its distances to B (InterRDF_s's site "
        "g(r)): a row of bins a point, every frame's summed"),
    ROW(nearest, "nearest", 0, BOOL,
        "each point of A's nearest other point of B and its distance (within R: at most R)"),
    ROW(pairs_within, "pairs-within", 0, NUMBER,
        "the list of every pair with d <= this distance, as (i, j, d) with dataset indices"),
    ROW(statistic, "statistic", 0, STRING,
        "histogram (of d, the default), rp_pi (counts in r_p x pi: the bins are r_p's, with "
        "pi_max and pi_bins), s_mu (counts in s x mu: the bins are s's, with mu_bins) or theta "
        "(angles between sky points: theta_edges or theta_log_bins, in degrees)"),
    {"rp_edges", "rp-edges", 0, HISTD_PARAM_NUMBERS, "rp_pi: r_p's edges (the same as edges)",
     set_edges, given_never, write_nothing},
    {"rp_log_bins", "rp-log-bins", 0, HISTD_PARAM_NUMBERS,
     "rp_pi: [r_min, r_max, bins], r_p's log bins (the same as log_bins)", set_log_bins,
     given_never, write_nothing},
    {"theta_edges", "theta-edges", 0, HISTD_PARAM_NUMBERS,
     "theta: the angles' edges in degrees, 0 to 180 (the same as edges)", set_edges,
     given_never, write_nothing},
    {"theta_log_bins", "theta-log-bins", 0, HISTD_PARAM_NUMBERS,
     "theta: [min, max, bins] in degrees, log-spaced (the same as log_bins)", set_log_bins,
     given_never, write_nothing},
    ROW(pi_max, "pi-max", 0, NUMBER, "rp_pi: pi's range [0, pi_max)"),
    ROW(pi_bins, "pi-bins", 0, COUNT, "rp_pi: pi's equal bins of width pi_max / pi_bins"),
    ROW(mu_bins, "mu-bins", 0, COUNT,
        "s_mu: mu's equal bins in [0, mu_max] (mu = pi / s; mu = mu_max in the last)"),
    ROW(mu_max, "mu-max", 0, NUMBER, "s_mu: mu's range [0, mu_max], at most 1 (default 1)"),
    ROW(ravg, "ravg", 0, BOOL,
        "each bin's mean separation (d, r_p or s), weighted by w_i w_j with weights: "
        "Corrfunc's ravg"),
    ROW(jackknife, "jackknife", 0, BOOL,
        "also each jackknife region's counts (the datasets' region labels: a sky catalogue's "
        "region column, ?regions=K or ?regions_like=ID): a pair in regions a and b adds to a's "
        "and, if b != a, to b's, so that the counts without region k are the total less "
        "region k's"),
    ROW(los, "los", 0, STRING,
        "rp_pi, s_mu: the line of sight, z (pi = |dz|, default) or midpoint (open space: "
        "along the pair's midpoint, for sky catalogues)"),
    ROW(topology, "topology", 0, STRING,
        "the atoms' names for a trajectory without them: a GRO or PDB of the same system (the "
        "API: its dataset id; sdh: its file)"),
    {"kernel", "kernel", 'k', HISTD_PARAM_STRING, "a kernel from the list (default auto)",
     set_kernel, given_always, write_kernel},
    ROW(block_size, "block-size", 0, COUNT, "GPU threads per block, a multiple of 32, 32..1024"),
    {"precision", "precision", 0, HISTD_PARAM_STRING,
     "exact (default: counts follow the contract) or fast", set_precision, given_always,
     write_precision},
    ROW(threads, "threads", 't', COUNT, "CPU threads (default: every core)"),
    ROW(devices, "devices", 0, NUMBERS, "GPU indices to run on (default: every GPU)"),
};

#define PARAM_COUNT (sizeof table / sizeof table[0])

size_t histd_param_count(void) { return PARAM_COUNT; }
const histd_param *histd_param_at(size_t i) { return i < PARAM_COUNT ? &table[i] : NULL; }
const histd_param *histd_param_find(const char *name) {
  for (size_t i = 0; i < PARAM_COUNT; i++)
    if (strcmp(table[i].name, name) == 0)
      return &table[i];
  return NULL;
}

/* ---- the whole set -------------------------------------------------------------- */

void histd_params_init(histd_params *p) {
  memset(p, 0, sizeof *p);
  histd_exec_init(&p->exec);
}

void histd_params_free(histd_params *p) {
  free(p->edges);
  p->edges = NULL;
  p->edge_count = 0;
}

int histd_params_copy(histd_params *dst, const histd_params *src, char *msg, size_t msglen) {
  *dst = *src;
  dst->edges = NULL;
  if (src->edges == NULL)
    return 0;
  dst->edges = malloc(src->edge_count * sizeof *dst->edges);
  if (dst->edges == NULL)
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %u edges", src->edge_count);
  memcpy(dst->edges, src->edges, src->edge_count * sizeof *dst->edges);
  return 0;
}

int histd_param_set(histd_params *p, const histd_param *row, const histd_value *v, char *msg,
                    size_t msglen) {
  return v->kind == HISTD_VALUE_NULL ? 0 : row->set(p, v, msg, msglen);
}

/* Numbers from "a,b,c" or, for edges, a file of numbers (any blanks,
 * commas or newlines between them). */
static int numbers_from_text(const char *name, const char *arg, double **out, size_t *count,
                             char *msg, size_t msglen) {
  char *text = NULL;
  const bool file = strcmp(name, "edges") == 0 && arg[0] != '\0' && strchr("+-.0123456789", arg[0]) == NULL;
  if (file) {
    size_t len;
    int rc = histd_read_file(arg, &text, &len, msg, msglen);
    if (rc != 0)
      return rc;
    if (len == 0) {
      free(text);
      return histd_fail(msg, msglen, HISTD_EINVAL, "%s holds no numbers", arg);
    }
  }
  const char *s = file ? text : arg;
  size_t cap = 16, n = 0;
  double *v = malloc(cap * sizeof *v);
  int rc = v ? 0 : HISTD_ENOMEM;
  while (rc == 0) {
    while (*s == ',' || *s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
      s++;
    if (*s == '\0')
      break;
    char *end;
    double d = strtod(s, &end);
    if (end == s) {
      rc = histd_fail(msg, msglen, HISTD_EINVAL, "%s: '%.20s' is not a number", name, s);
      break;
    }
    if (n == cap) {
      double *t = realloc(v, (cap *= 2) * sizeof *v);
      if (t == NULL) {
        rc = HISTD_ENOMEM;
        break;
      }
      v = t;
    }
    v[n++] = d;
    s = end;
  }
  free(text);
  if (rc != 0) {
    free(v);
    return rc == HISTD_ENOMEM ? histd_fail(msg, msglen, rc, "out of memory") : rc;
  }
  *out = v;
  *count = n;
  return 0;
}

int histd_param_set_text(histd_params *p, const histd_param *row, const char *arg, char *msg,
                         size_t msglen) {
  histd_value v = {HISTD_VALUE_NULL, 0, false, NULL, NULL, 0};
  double *numbers = NULL;
  char *end = NULL;
  switch (row->type) {
  case HISTD_PARAM_BOOL:
    v.kind = HISTD_VALUE_BOOL;
    v.boolean = true;
    break;
  case HISTD_PARAM_STRING:
    v.kind = HISTD_VALUE_STRING;
    v.string = arg;
    break;
  case HISTD_PARAM_NUMBER:
  case HISTD_PARAM_COUNT:
    v.kind = HISTD_VALUE_NUMBER;
    errno = 0;
    v.number = strtod(arg, &end);
    if (end == arg || *end != '\0' || errno == ERANGE)
      return histd_fail(msg, msglen, HISTD_EINVAL, "--%s must be a number, got '%s'", row->flag,
                        arg);
    break;
  case HISTD_PARAM_NUMBERS: {
    int rc = numbers_from_text(row->name, arg, &numbers, &v.count, msg, msglen);
    if (rc != 0)
      return rc;
    v.kind = HISTD_VALUE_NUMBERS;
    v.numbers = numbers;
    break;
  }
  }
  int rc = row->set(p, &v, msg, msglen);
  free(numbers);
  return rc;
}

int histd_params_write_json(FILE *f, const histd_params *p) {
  fputc('{', f);
  bool first = true;
  for (size_t i = 0; i < PARAM_COUNT; i++) {
    if (!table[i].given(p))
      continue;
    fprintf(f, first ? "\"%s\":" : ",\"%s\":", table[i].name);
    table[i].write(f, p);
    first = false;
  }
  fputc('}', f);
  return ferror(f) ? HISTD_EIO : 0;
}

/* ---- binding ----------------------------------------------------------------------- */

int histd_params_spec(const histd_params *p, histd_problem *out, double **edges, char *msg,
                      size_t msglen) {
  *edges = NULL;
  histd_problem pr;
  memset(&pr, 0, sizeof pr);
  pr.box = p->box; /* the job's box, else the file's: each frame of A in its own */
  pr.frame_boxes = pr.box.kind == HISTD_BOX_NONE;
  pr.weighted = p->weights;
  pr.exclude_molecule = p->exclude_molecule;
  pr.all_images = p->all_images;
  pr.per_frame = p->per_frame || p->blocks > 0; /* the blocks are read from its table */
  pr.blocks = p->blocks;
  /* the other shapes of an answer: a value per point, a record per pair */
  if (p->per_point_histogram && (p->per_point || p->nearest || p->has_pairs_within ||
                                 p->has_within))
    return histd_fail(msg, msglen, HISTD_EPARSE,
                      "per_point_histogram is each point's histogram in the bins: it cannot be "
                      "combined with %s",
                      p->has_pairs_within ? "pairs_within" : p->nearest ? "nearest"
                      : p->per_point      ? "per_point" : "within");
  if (p->per_point || p->nearest || p->has_pairs_within) {
    const char *what = p->has_pairs_within ? "pairs_within" : p->nearest ? "nearest" : "per_point";
    const int binned = given_bucket_width(p) + given_r_max(p) + given_edges(p) +
                       given_log_bins(p) + (p->buckets > 0) + (p->binned2 != 0);
    if (binned > 0 || p->per_point + p->nearest + p->has_pairs_within > 1 ||
        (p->has_pairs_within && p->has_within))
      return histd_fail(msg, msglen, HISTD_EPARSE,
                        "%s asks for %s, and cannot be combined with bins%s", what,
                        p->has_pairs_within ? "a pair list" : "a value per point",
                        p->has_pairs_within ? ", within, per_point or nearest"
                                            : " or another per-point statistic");
    if (p->per_point && !p->has_within)
      return histd_fail(msg, msglen, HISTD_EPARSE,
                        "per_point counts each point's neighbours within a radius: give within");
    pr.statistic = histd_params_statistic(p);
    pr.radius = p->has_pairs_within ? p->pairs_within : p->has_within ? p->within : INFINITY;
    *out = pr;
    return 0;
  }
  const int ways = given_bucket_width(p) + given_r_max(p) + given_edges(p) + given_log_bins(p) +
                   p->has_within;
  if (ways == 0)
    return histd_fail(msg, msglen, HISTD_EPARSE,
                      "bucket_width is required (a positive number, in the points' distance "
                      "units), or r_max and buckets, edges, log_bins, or within");
  if (ways > 1)
    return histd_fail(msg, msglen, HISTD_EPARSE,
                      "give one way of binning: bucket_width, r_max with buckets, edges, "
                      "log_bins, or within; got %d of them", ways);
  if (p->buckets > 0 && (given_edges(p) || given_log_bins(p) || p->has_within))
    return histd_fail(msg, msglen, HISTD_EPARSE,
                      "buckets goes with bucket_width or r_max, not with %s",
                      given_edges(p) ? "edges" : given_log_bins(p) ? "log_bins" : "within");
  if (p->partials[0] != '\0' &&
      (p->has_within || p->per_point || p->nearest || p->has_pairs_within))
    return histd_fail(msg, msglen, HISTD_EPARSE,
                      "partials are every species pair's histogram: they go with bins, not "
                      "with within, a per-point statistic or a pair list");
  if (p->blocks > 0 && (p->has_within || p->per_point || p->nearest || p->has_pairs_within))
    return histd_fail(msg, msglen, HISTD_EPARSE,
                      "blocks cuts a histogram's frames into blocks for error bars: it goes "
                      "with bins, not with %s",
                      p->has_within && !p->per_point ? "within" : "a per-point statistic or a "
                                                                  "pair list");
  if (p->per_point_histogram) {
    const char *other = p->partials[0] != '\0'        ? "partials"
                        : p->blocks > 0               ? "blocks"
                        : p->per_frame                ? "per_frame"
                        : p->norm != HISTD_NORM_UNSET ? "norm"
                                                      : NULL;
    if (other != NULL)
      return histd_fail(msg, msglen, HISTD_EPARSE,
                        "per_point_histogram keeps a row of bins a point, summed over the "
                        "frames: it does not go with %s", other);
    if (given_bucket_width(p) && p->buckets == 0)
      return histd_fail(msg, msglen, HISTD_EPARSE,
                        "per_point_histogram needs the number of bins (its rows are sized by "
                        "it): give buckets with bucket_width, or r_max and buckets, edges or "
                        "log_bins");
  }
  if (p->per_frame && p->has_within)
    return histd_fail(msg, msglen, HISTD_EPARSE,
                      "per_frame goes with a histogram's bins, not with within (a count within "
                      "a radius keeps no table of frames); leave one out");
  pr.statistic = histd_params_statistic(p);
  const bool two = p->binned2 == HISTD_STAT_RP_PI || p->binned2 == HISTD_STAT_S_MU;
  const bool theta = p->binned2 == HISTD_STAT_THETA;
  if (theta) {
    const char *other = p->has_within                 ? "within"
                        : given_bucket_width(p)       ? "bucket_width"
                        : given_r_max(p)              ? "r_max"
                        : p->box.kind != HISTD_BOX_NONE ? "box"
                        : p->per_point_histogram      ? "per_point_histogram"
                        : p->partials[0] != '\0'      ? "partials"
                        : p->per_frame                ? "per_frame"
                        : p->blocks > 0               ? "blocks"
                        : p->norm != HISTD_NORM_UNSET ? "norm"
                        : p->exclude_molecule         ? "exclude"
                                                      : NULL;
    if (other != NULL)
      return histd_fail(msg, msglen, HISTD_EPARSE,
                        "statistic theta bins the angles between sky points, by theta_edges or "
                        "theta_log_bins in degrees: it does not go with %s", other);
  }
  if (!two && (given_pi_max(p) || p->pi_bins || p->mu_bins || given_mu_max(p) || p->los_midpoint))
    return histd_fail(msg, msglen, HISTD_EPARSE,
                      "%s goes with statistic rp_pi or s_mu",
                      given_pi_max(p) ? "pi_max" : p->pi_bins ? "pi_bins" : p->mu_bins ? "mu_bins"
                      : given_mu_max(p) ? "mu_max" : "los");
  if (two) {
    const bool rp = p->binned2 == HISTD_STAT_RP_PI;
    const char *other = p->has_within             ? "within"
                        : p->per_point_histogram  ? "per_point_histogram"
                        : p->partials[0] != '\0'  ? "partials"
                        : p->blocks > 0           ? "blocks"
                        : p->norm != HISTD_NORM_UNSET ? "norm"
                        : rp && (p->mu_bins || given_mu_max(p)) ? "mu_bins or mu_max"
                        : !rp && (given_pi_max(p) || p->pi_bins) ? "pi_max or pi_bins"
                                                                : NULL;
    if (other != NULL)
      return histd_fail(msg, msglen, HISTD_EPARSE, "statistic %s does not go with %s",
                        rp ? "rp_pi" : "s_mu", other);
    if (rp && (!given_pi_max(p) || p->pi_bins == 0))
      return histd_fail(msg, msglen, HISTD_EPARSE,
                        "statistic rp_pi needs pi_max and pi_bins (pi's bins: [0, pi_max) in "
                        "pi_bins equal parts)");
    if (!rp && p->mu_bins == 0)
      return histd_fail(msg, msglen, HISTD_EPARSE,
                        "statistic s_mu needs mu_bins (mu's bins: [0, mu_max] in mu_bins equal "
                        "parts, mu_max 1 unless given)");
    pr.statistic = (histd_statistic)p->binned2;
    pr.los_midpoint = p->los_midpoint;
  }
  pr.ravg = p->ravg;
  if (p->ravg && (p->partials[0] != '\0' || p->blocks > 0))
    return histd_fail(msg, msglen, HISTD_EPARSE,
                      "ravg averages the whole histogram's bins: it does not go with %s",
                      p->partials[0] != '\0' ? "partials" : "blocks");
  if (p->jackknife) {
    const char *other = p->has_within || p->per_point || p->nearest || p->has_pairs_within
                            ? "within, a per-point statistic or a pair list"
                        : p->partials[0] != '\0'  ? "partials"
                        : p->per_point_histogram ? "per_point_histogram"
                        : p->per_frame           ? "per_frame"
                        : p->blocks > 0          ? "blocks"
                                                 : NULL;
    if (other != NULL)
      return histd_fail(msg, msglen, HISTD_EPARSE,
                        "jackknife keeps each region's counts of a histogram's bins: it does "
                        "not go with %s", other);
  }
  if (p->has_within) {
    pr.radius = p->within;
  } else if (given_bucket_width(p)) {
    pr.bins = (histd_bins){HISTD_BINS_WIDTH, p->buckets, p->bucket_width, NULL, 0, 0};
  } else if (given_r_max(p)) {
    if (p->buckets == 0)
      return histd_fail(msg, msglen, HISTD_EPARSE, "r_max needs buckets (width = r_max / buckets)");
    pr.bins = (histd_bins){HISTD_BINS_WIDTH, p->buckets, p->r_max / p->buckets, NULL, 0, 0};
  } else if (given_edges(p)) {
    pr.bins = (histd_bins){HISTD_BINS_EDGES, p->edge_count - 1, 0, p->edges, 0, 0};
  } else {
    uint32_t k = (uint32_t)p->log_bins[2];
    double *e = malloc(((size_t)k + 1) * sizeof *e);
    if (e == NULL)
      return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %u edges", k + 1);
    int rc = histd_log_edges(p->log_bins[0], p->log_bins[1], k, e, msg, msglen);
    if (rc != 0) {
      free(e);
      return rc;
    }
    pr.bins = (histd_bins){HISTD_BINS_EDGES, k, 0, e, 0, 0};
    *edges = e;
  }
  if (two) {
    const bool rp = p->binned2 == HISTD_STAT_RP_PI;
    pr.bins.count2 = rp ? p->pi_bins : p->mu_bins;
    pr.bins.max2 = rp ? p->pi_max : given_mu_max(p) ? p->mu_max : 1;
  }
  if (theta) { /* the engine counts the chords of the unit vectors */
    const uint32_t k = pr.bins.count;
    double *c = malloc(((size_t)k + 1) * sizeof *c);
    int rc = c == NULL ? histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %u edges", k + 1)
                       : histd_theta_chords(pr.bins.edges, k, c, msg, msglen);
    free(*edges);
    *edges = c;
    if (rc != 0)
      return rc;
    pr.bins.edges = c;
  }
  *out = pr;
  return 0;
}

int histd_theta_chords(const double *deg, uint32_t k, double *chord, char *msg, size_t msglen) {
  if (!(deg[0] >= 0) || !(deg[k] <= 180))
    return histd_fail(msg, msglen, HISTD_EINVAL,
                      "theta's edges are angles from 0 to 180 degrees, got %.17g to %.17g",
                      deg[0], deg[k]);
  const double rad = 3.141592653589793 / 180; /* the double nearest pi, over 180 */
  for (uint32_t i = 0; i <= k; i++) {
    double half = deg[i] * rad;
    half = half * 0.5;
    chord[i] = 2 * sin(half);
    if (i > 0 && !(chord[i - 1] < chord[i]))
      return histd_fail(msg, msglen, HISTD_EINVAL,
                        "theta's edges %.17g and %.17g degrees give one chord, %.17g: give "
                        "edges farther apart", deg[i - 1], deg[i], chord[i]);
  }
  return 0;
}

int histd_params_theta_edges(const histd_params *p, double **deg, uint32_t *count, char *msg,
                             size_t msglen) {
  *deg = NULL;
  *count = 0;
  const uint32_t k = given_edges(p) ? p->edge_count - 1 : (uint32_t)p->log_bins[2];
  double *e = malloc(((size_t)k + 1) * sizeof *e);
  if (e == NULL)
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %u edges", k + 1);
  int rc = 0;
  if (given_edges(p))
    memcpy(e, p->edges, ((size_t)k + 1) * sizeof *e);
  else
    rc = histd_log_edges(p->log_bins[0], p->log_bins[1], k, e, msg, msglen);
  if (rc != 0) {
    free(e);
    return rc;
  }
  *deg = e;
  *count = k;
  return 0;
}

int histd_params_problem(const histd_params *p, const histd_dataset *a, const histd_dataset *b,
                         histd_problem *out, double **edges, char *msg, size_t msglen) {
  histd_problem pr;
  int rc = histd_params_spec(p, &pr, edges, msg, msglen);
  if (rc != 0)
    return rc;
  pr.a = a;
  pr.b = b;
  if (pr.frame_boxes)
    pr.box = a->box;
  if ((rc = histd_problem_validate(&pr, msg, msglen)) != 0) {
    free(*edges);
    *edges = NULL;
    return rc;
  }
  *out = pr;
  return 0;
}

/* ---- selections ---------------------------------------------------------------- */

int histd_params_operands(const histd_params *p, const histd_dataset *a, const histd_dataset *b,
                          histd_operands *out, char *msg, size_t msglen) {
  memset(out, 0, sizeof *out);
  out->a = a;
  out->b = b;
  const histd_slice *sl = p->has_frames ? &p->frames : NULL;
  const histd_dataset *bsrc = b != NULL ? b : a;
  const histd_slice *sl_b = histd_dataset_frames(bsrc) > 1 ? sl : NULL;
  int rc = 0;
  if ((p->select_a[0] != '\0' || sl != NULL) &&
      (rc = histd_dataset_select(a, p->select_a, sl, &out->sel_a, msg, msglen)) == 0)
    out->a = &out->sel_a;
  if (rc == 0 && (p->select_b[0] != '\0' || (b != NULL && sl_b != NULL)) &&
      (rc = histd_dataset_select(bsrc, p->select_b, sl_b, &out->sel_b, msg, msglen)) == 0)
    out->b = &out->sel_b;
  if (rc == 0 && b == NULL && p->select_b[0] != '\0')
    rc = histd_operands_pair(p, histd_params_statistic(p), out, msg, msglen);
  if (rc == 0 && p->partials[0] != '\0')
    rc = histd_operands_species(p, out, msg, msglen);
  if (rc != 0)
    histd_operands_free(out);
  return rc;
}

void histd_operands_free(histd_operands *o) {
  histd_dataset_free(&o->sel_a);
  histd_dataset_free(&o->sel_b);
  histd_dataset_free(&o->sel_o);
  for (uint32_t s = 0; s < o->species_count; s++)
    histd_dataset_free(&o->species[s]);
  free(o->species);
  o->species = NULL;
  o->species_count = 0;
  histd_operands_regions_free(o);
  o->a = o->b = o->shared = NULL;
}

histd_statistic histd_params_statistic(const histd_params *p) {
  return p->has_pairs_within ? HISTD_STAT_PAIRS
         : p->nearest        ? HISTD_STAT_NEAREST
         : p->per_point      ? HISTD_STAT_POINT_COUNTS
         : p->per_point_histogram ? HISTD_STAT_POINT_HISTOGRAM
         : p->has_within     ? HISTD_STAT_WITHIN
                             : HISTD_STAT_HISTOGRAM;
}
