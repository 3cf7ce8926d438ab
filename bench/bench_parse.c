/*
 * bench_parse.c -- parse throughput and peak memory of every input format.
 *
 *     ninja -C build bench/bench_parse && build/bench/bench_parse [N] [runs]
 *     build/bench/bench_parse --file FORMAT FILE [runs]   (--xtc FILE: --file xtc FILE)
 *
 * N points (default 1,000,000) uniform in [0, 23000)^3 are written in each
 * format, numbers with 17 significant digits (what a program dumping doubles
 * writes; the worst case for the text parsers), and once more as CSV with 3
 * decimals (what MD tools write; the number fast path), then parsed `runs` times
 * (default 5) from memory. Prints the median MB/s (input bytes / wall time),
 * million points/s, MB per second of the thread's CPU time (the parser's
 * own speed when the machine is shared), and the parser's peak memory beyond its input (measured
 * in a child process as the growth of the peak RSS during one parse; -1 if
 * the kernel cannot reset that mark) as a multiple of the float64 payload
 * (24 bytes a point).
 *
 * --file FORMAT FILE: the same measures for a real file of any format (a
 * trajectory: bench/bench_xtc_mda.py and bench/bench_formats.py write them
 * with MDAnalysis and time MDAnalysis reading them in the same run), plus
 * frames/s; the last line is "FORMAT: MB/s frames/s Mpoints/s" for the
 * scripts to read.
 */
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "histd/io.h"

typedef struct input {
  const char *name;
  histd_format fmt;
  char *buf;
  size_t len;
} input;

/* This thread's CPU time in ms: on a shared machine, the parser's own speed. */
static double cpu_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static uint64_t splitmix64(uint64_t *s) {
  uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return z ^ (z >> 31);
}

static char *text_of(size_t n, const double *p, int kind, size_t *len) {
  size_t cap = n * 80 + 64, o = 0;
  char *b = malloc(cap);
  if (kind == 0) { /* json points */
    o += (size_t)sprintf(b + o, "{\"points\":[");
    for (size_t i = 0; i < n; i++)
      o += (size_t)sprintf(b + o, "%s[%.17g,%.17g,%.17g]", i ? "," : "", p[3 * i], p[3 * i + 1],
                           p[3 * i + 2]);
    o += (size_t)sprintf(b + o, "]}\n");
  } else if (kind == 1) { /* json x/y/z */
    for (int a = 0; a < 3; a++) {
      o += (size_t)sprintf(b + o, "%s\"%c\":[", a ? "," : "{", 'x' + a);
      for (size_t i = 0; i < n; i++)
        o += (size_t)sprintf(b + o, "%s%.17g", i ? "," : "", p[3 * i + a]);
      o += (size_t)sprintf(b + o, "]");
    }
    o += (size_t)sprintf(b + o, "}\n");
  } else if (kind == 2) { /* csv */
    o += (size_t)sprintf(b + o, "x,y,z\n");
    for (size_t i = 0; i < n; i++)
      o += (size_t)sprintf(b + o, "%.17g,%.17g,%.17g\n", p[3 * i], p[3 * i + 1], p[3 * i + 2]);
  } else if (kind == 4) { /* csv, 3 decimals: what MD tools often write */
    for (size_t i = 0; i < n; i++)
      o += (size_t)sprintf(b + o, "%.3f,%.3f,%.3f\n", p[3 * i], p[3 * i + 1], p[3 * i + 2]);
  } else { /* xyz */
    o += (size_t)sprintf(b + o, "%zu\nbench\n", n);
    for (size_t i = 0; i < n; i++)
      o += (size_t)sprintf(b + o, "Ar %.17g %.17g %.17g\n", p[3 * i], p[3 * i + 1], p[3 * i + 2]);
  }
  *len = o;
  return b;
}

/* A "VmRSS:"-style line of /proc/self/status, in bytes (-1 if absent). */
static double status_bytes(const char *key) {
  FILE *f = fopen("/proc/self/status", "r");
  if (f == NULL)
    return -1;
  char line[256];
  double v = -1;
  size_t kl = strlen(key);
  while (fgets(line, sizeof line, f))
    if (strncmp(line, key, kl) == 0)
      v = strtod(line + kl, NULL) * 1024.0;
  fclose(f);
  return v;
}

/*
 * Peak memory of one parse beyond what is resident before it, in a child
 * process: the peak-RSS mark is reset (clear_refs 5, Linux >= 4.0) and read
 * back after the parse, which keeps its dataset until then.
 */
static double peak_bytes(const input *in) {
  int fd[2];
  if (pipe(fd) != 0)
    return -1;
  pid_t pid = fork();
  if (pid == 0) {
    FILE *cr = fopen("/proc/self/clear_refs", "w");
    bool reset = cr != NULL && fputs("5", cr) >= 0;
    if (cr != NULL && fclose(cr) != 0)
      reset = false;
    double before = status_bytes("VmRSS:");
    histd_dataset ds;
    char msg[256];
    int rc = histd_parse(in->fmt, in->buf, in->len, 0, &ds, msg, sizeof msg);
    double peak = status_bytes("VmHWM:");
    double grow = rc == 0 && reset && before >= 0 && peak >= 0 ? peak - before : -1;
    if (write(fd[1], &grow, sizeof grow) != sizeof grow)
      _exit(1);
    _exit(0);
  }
  double grow = -1;
  if (read(fd[0], &grow, sizeof grow) != sizeof grow)
    grow = -1;
  waitpid(pid, NULL, 0);
  close(fd[0]);
  close(fd[1]);
  return grow;
}

/* Parses `in` runs times: the median wall and thread-CPU ms into *ms, *cms
 * (and every run's wall ms, sorted, into all[0..runs) when not NULL), and
 * the points and frames of the last parse; false (said) on an error. */
static bool measure(const input *in, int runs, double *ms, double *cms, double *all, size_t *n,
                    size_t *frames) {
  double *t = malloc((size_t)runs * sizeof *t), *c = malloc((size_t)runs * sizeof *c);
  bool ok = true;
  for (int r = 0; r < runs && ok; r++) {
    histd_dataset ds;
    char msg[256];
    double t0 = histd_now_ms(), c0 = cpu_ms();
    int rc = histd_parse(in->fmt, in->buf, in->len, 0, &ds, msg, sizeof msg);
    t[r] = histd_now_ms() - t0;
    c[r] = cpu_ms() - c0;
    if (rc != 0) {
      fprintf(stderr, "%s: %s\n", in->name, msg);
      ok = false;
      break;
    }
    *n = ds.n;
    *frames = histd_dataset_frames(&ds);
    histd_dataset_free(&ds);
  }
  qsort(t, (size_t)runs, sizeof *t, cmp_double);
  qsort(c, (size_t)runs, sizeof *c, cmp_double);
  *ms = t[runs / 2];
  *cms = c[runs / 2];
  if (all != NULL)
    memcpy(all, t, (size_t)runs * sizeof *t);
  free(t);
  free(c);
  return ok;
}

/* --file FORMAT FILE [runs]: a real file, read whole into memory first. */
static int bench_file(histd_format fmt, const char *path, int runs) {
  input in = {histd_format_name(fmt), fmt, NULL, 0};
  FILE *f = fopen(path, "rb");
  if (f == NULL || fseek(f, 0, SEEK_END) != 0) {
    fprintf(stderr, "bench_parse: cannot read %s\n", path);
    return 1;
  }
  in.len = (size_t)ftell(f);
  rewind(f);
  in.buf = malloc(in.len ? in.len : 1);
  if (fread(in.buf, 1, in.len, f) != in.len) {
    fprintf(stderr, "bench_parse: cannot read %s\n", path);
    return 1;
  }
  fclose(f);
  double ms, cms, *all = malloc((size_t)runs * sizeof *all);
  size_t n = 0, frames = 0;
  if (!measure(&in, runs, &ms, &cms, all, &n, &frames))
    return 1;
  double peak = peak_bytes(&in), payload = 24.0 * (double)n;
  printf("# bench_parse --file %s %s: %zu frames, %zu points, median of %d runs, payload %.1f "
         "MB (float64)\n", in.name, path, frames, n, runs, payload / 1e6);
  printf("%-12s %10s %10s %10s %10s %12s %12s\n", "format", "input MB", "MB/s", "frames/s",
         "Mpoints/s", "MB/cpu-s", "peak/payload");
  printf("%-12s %10.1f %10.0f %10.0f %10.2f %12.0f %12.2f\n", in.name, (double)in.len / 1e6,
         (double)in.len / 1e3 / ms, (double)frames * 1e3 / ms, (double)n / 1e3 / ms,
         (double)in.len / 1e3 / cms, peak / payload);
  printf("# wall ms of each run, sorted (a fresh process's first run faults its dataset in):");
  for (int r = 0; r < runs; r++)
    printf(" %.1f", all[r]);
  printf("\n%s: %.1f %.1f %.3f\n", in.name, (double)in.len / 1e3 / ms,
         (double)frames * 1e3 / ms, (double)n / 1e3 / ms);
  free(all);
  free(in.buf);
  return 0;
}

int main(int argc, char **argv) {
  /* A fixed mmap threshold: big blocks always come from (and go back to)
   * the kernel, so one parse's freed dataset cannot hide the next one's
   * memory in the peak-RSS measurement. */
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  if (argc > 2 && strcmp(argv[1], "--xtc") == 0) {
    int runs = argc > 3 ? atoi(argv[3]) : 5;
    if (runs < 1) {
      fprintf(stderr, "usage: bench_parse --xtc FILE [runs]\n");
      return 2;
    }
    return bench_file(HISTD_FORMAT_XTC, argv[2], runs);
  }
  if (argc > 3 && strcmp(argv[1], "--file") == 0) {
    histd_format fmt;
    int runs = argc > 4 ? atoi(argv[4]) : 5;
    if (histd_format_parse(argv[2], &fmt) != 0 || runs < 1) {
      fprintf(stderr, "usage: bench_parse --file FORMAT FILE [runs]\n");
      return 2;
    }
    return bench_file(fmt, argv[3], runs);
  }
  size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000000;
  int runs = argc > 2 ? atoi(argv[2]) : 5;
  if (n == 0 || runs < 1) {
    fprintf(stderr, "usage: bench_parse [N] [runs] | --file FORMAT FILE [runs]\n");
    return 2;
  }
  double *p = malloc(3 * n * sizeof *p);
  uint64_t s = 1;
  for (size_t i = 0; i < 3 * n; i++)
    p[i] = 23000.0 * ((double)(splitmix64(&s) >> 11) * 0x1p-53);

  enum { NIN = 7 };
  input in[NIN] = {{"json points", HISTD_FORMAT_JSON, NULL, 0},
                   {"json x/y/z", HISTD_FORMAT_JSON, NULL, 0},
                   {"csv", HISTD_FORMAT_CSV, NULL, 0},
                   {"xyz", HISTD_FORMAT_XYZ, NULL, 0},
                   {"csv %.3f", HISTD_FORMAT_CSV, NULL, 0},
                   {"f64", HISTD_FORMAT_F64, NULL, 0},
                   {"f32", HISTD_FORMAT_F32, NULL, 0}};
  for (int k = 0; k < 5; k++)
    in[k].buf = text_of(n, p, k == 4 ? 4 : k, &in[k].len);
  in[5].len = n * 24;
  in[5].buf = malloc(in[5].len);
  in[6].len = n * 12;
  in[6].buf = malloc(in[6].len);
  for (size_t i = 0; i < 3 * n; i++) { /* little-endian host assumed here */
    memcpy(in[5].buf + 8 * i, &p[i], 8);
    float f = (float)p[i];
    memcpy(in[6].buf + 4 * i, &f, 4);
  }

  double payload = 24.0 * (double)n;
  printf("# bench_parse: %zu points, median of %d runs, payload %.1f MB (float64)\n", n, runs,
         payload / 1e6);
  printf("%-12s %10s %10s %10s %12s %12s\n", "format", "input MB", "MB/s", "Mpoints/s",
         "MB/cpu-s", "peak/payload");
  for (int k = 0; k < NIN; k++) {
    double ms, cms;
    size_t got = 0, frames;
    if (!measure(&in[k], runs, &ms, &cms, NULL, &got, &frames))
      return 1;
    if (got != n) {
      fprintf(stderr, "%s: %zu points, want %zu\n", in[k].name, got, n);
      return 1;
    }
    double peak = peak_bytes(&in[k]);
    printf("%-12s %10.1f %10.0f %10.2f %12.0f %12.2f\n", in[k].name, (double)in[k].len / 1e6,
           (double)in[k].len / 1e3 / ms, (double)n / 1e3 / ms, (double)in[k].len / 1e3 / cms,
           peak / payload);
  }
  for (int k = 0; k < NIN; k++)
    free(in[k].buf);
  free(p);
  return 0;
}
