/*
 * bench_frames.c -- a trajectory's frames run back to back on one worker,
 * with the next frame's points copied while this frame's kernels run (the
 * default on a GPU) and without (HISTD_FRAME_PREFETCH=0), in turns in the
 * same run.
 *
 *   bench_frames [--n N] [--frames F] [--runs R] [--kernel K] [--gpu]
 *
 * The trajectory: F frames (default 50) of N points (default 32,000)
 * uniform in a periodic cube at a liquid's density (0.8), r_max = 4 (G3's
 * cut-off in sigma), 200 bins, kernel K (default auto: the grid). Prints
 * the median wall time of the whole run per frame, its kernel and
 * transfer time, and checks that both give the same counts.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "histd/histd.h"

static double run_once(histd_worker *w, const histd_problem *p, const char *kernel,
                       bool prefetch, histd_result *r) {
  setenv("HISTD_FRAME_PREFETCH", prefetch ? "1" : "0", 1);
  histd_exec ex;
  histd_exec_init(&ex);
  snprintf(ex.kernel, sizeof ex.kernel, "%s", kernel);
  char msg[256];
  const double t0 = histd_now_ms();
  if (histd_worker_run(w, p, &ex, NULL, r, msg, sizeof msg) != 0) {
    fprintf(stderr, "bench_frames: %s\n", msg);
    exit(1);
  }
  return histd_now_ms() - t0;
}

int main(int argc, char **argv) {
  size_t n = 32000, frames = 50;
  int runs = 5, device = -1;
  const char *kernel = "auto";
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--n") == 0 && i + 1 < argc)
      n = strtoull(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--frames") == 0 && i + 1 < argc)
      frames = strtoull(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
      runs = atoi(argv[++i]);
    else if (strcmp(argv[i], "--kernel") == 0 && i + 1 < argc)
      kernel = argv[++i];
    else if (strcmp(argv[i], "--gpu") == 0)
      device = 0;
    else {
      fprintf(stderr, "usage: bench_frames [--n N] [--frames F] [--runs R] [--kernel K] "
                      "[--gpu]\n");
      return 2;
    }
  }
  if (runs < 1 || runs > 64 || n < 2 || frames < 2 || frames > 100000) {
    fprintf(stderr, "bench_frames: runs 1..64, n >= 2, frames 2..100000\n");
    return 2;
  }
  const double L = cbrt((double)n / 0.8);
  histd_dataset ds = bench_cube(n * frames, L, false);
  size_t *counts = malloc(frames * sizeof *counts);
  histd_box *boxes = malloc(frames * sizeof *boxes);
  for (size_t f = 0; f < frames; f++) {
    counts[f] = n;
    boxes[f] = (histd_box){HISTD_BOX_ORTHO, L, 0, L, 0, 0, L};
  }
  char msg[256];
  if (histd_dataset_set_frames(&ds, frames, counts, boxes, msg, sizeof msg) != 0) {
    fprintf(stderr, "bench_frames: %s\n", msg);
    return 1;
  }
  histd_problem p;
  memset(&p, 0, sizeof p);
  p.a = &ds;
  p.frame_boxes = true;
  p.bins = (histd_bins){HISTD_BINS_WIDTH, 200, 4.0 / 200, NULL, 0, 0};
  histd_worker *w;
  if (histd_worker_create(&w, device, msg, sizeof msg) != 0) {
    fprintf(stderr, "bench_frames: %s\n", msg);
    return 1;
  }
  double t[2][64], k[2][64], x[2][64];
  uint64_t first[2][201];
  char dev[HISTD_DEVICE_NAME_MAX + 64] = "", ran[64] = "";
  for (int r = 0; r < runs; r++)
    for (int v = 0; v < 2; v++) { /* in turns: without, with */
      histd_result res;
      t[v][r] = run_once(w, &p, kernel, v == 1, &res) / (double)frames;
      k[v][r] = res.timing.kernel_ms / (double)frames;
      x[v][r] = res.timing.transfer_ms / (double)frames;
      if (r == 0) {
        memcpy(first[v], res.counts, 200 * sizeof *res.counts);
        first[v][200] = res.overflow;
        snprintf(dev, sizeof dev, "%s", res.device);
        snprintf(ran, sizeof ran, "%s", res.kernel);
      }
      histd_result_free(&res);
    }
  const bool same = memcmp(first[0], first[1], sizeof first[0]) == 0;
  printf("%zu frames of %zu points, periodic cube L = %.4g, r_max = 4, 200 bins, kernel %s "
         "(ran %s) on %s; medians of %d, ms per frame\n", frames, n, L, kernel, ran, dev, runs);
  printf("| frames | wall | kernel | transfer |\n| --- | ---: | ---: | ---: |\n");
  const char *name[2] = {"one after another (HISTD_FRAME_PREFETCH=0)",
                         "next frame's copy overlapping (default)"};
  for (int v = 0; v < 2; v++)
    printf("| %s | %.3f | %.3f | %.3f |\n", name[v], bench_median(t[v], runs),
           bench_median(k[v], runs), bench_median(x[v], runs));
  printf("wall per frame, overlapping / one after another: %.3f\n",
         bench_median(t[1], runs) / bench_median(t[0], runs));
  printf("counts and overflow identical: %s\n", same ? "yes" : "NO");
  histd_worker_destroy(w);
  histd_dataset_free(&ds);
  free(counts);
  free(boxes);
  return same ? 0 : 1;
}
