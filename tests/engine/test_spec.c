/*
 * test_spec.c -- validation of a plain job's problem and execution (a
 * sentence for every bad value), default bucket counts, the registry, and
 * dataset checks.
 */
#include <math.h>

#include "../check.h"
#include "histd/histd.h"
#include "../plain.h"

/* The problem and the execution a plain job makes, validated. */
static int validate(const plain_job *j, char *msg, size_t msglen) {
  histd_dataset none;
  memset(&none, 0, sizeof none);
  histd_problem p = plain_problem(&none, j);
  histd_exec ex = plain_exec(j);
  int rc = histd_problem_validate(&p, msg, msglen);
  return rc != 0 ? rc : histd_exec_validate(&ex, &p, msg, msglen);
}

static void expect_invalid(plain_job s, const char *needle) {
  char msg[256] = "";
  int rc = validate(&s, msg, sizeof msg);
  CHECK(rc < 0, "spec should be rejected (%s)", needle);
  CHECK_STR_CONTAINS(msg, needle);
}

int main(void) {
  plain_job s;
  plain_init(&s);
  CHECK(strcmp(s.kernel, "auto") == 0 && s.precision == HISTD_PRECISION_EXACT,
        "defaults: auto, exact");
  expect_invalid(s, "bucket_width");
  s.bucket_width = -1;
  expect_invalid(s, "bucket_width must be > 0");
  s.bucket_width = NAN;
  expect_invalid(s, "finite");
  s.bucket_width = INFINITY;
  expect_invalid(s, "finite");
  s.bucket_width = 1;
  char msg[256];
  CHECK(validate(&s, msg, sizeof msg) == 0, "valid spec: %s", msg);
  plain_job t = s;
  t.buckets = HISTD_MAX_BUCKETS + 1;
  expect_invalid(t, "buckets must be at most");
  t = s;
  t.block_size = 16;
  expect_invalid(t, "block_size");
  t.block_size = 2048;
  expect_invalid(t, "block_size");
  t.block_size = 100;
  expect_invalid(t, "multiple of 32");
  t = s; /* tensor-core runs blocks of 256 only: 0 and 256 are valid */
  snprintf(t.kernel, sizeof t.kernel, "tensor-core");
  t.block_size = 64;
  expect_invalid(t, "kernel \"tensor-core\" runs blocks of 256 threads: block_size must be 0 or "
                    "256, got 64");
  t.block_size = 256;
  CHECK(validate(&t, msg, sizeof msg) == 0, "tensor-core with block 256: %s", msg);
  t.block_size = 0;
  CHECK(validate(&t, msg, sizeof msg) == 0, "tensor-core with block 0: %s", msg);
  t = s;
  snprintf(t.kernel, sizeof t.kernel, "no-such-kernel");
  expect_invalid(t, "unknown kernel \"no-such-kernel\"");
  t = s;
  t.precision = (histd_precision)7;
  expect_invalid(t, "precision");

  histd_precision p;
  CHECK(histd_precision_parse("fast", &p) == 0 && p == HISTD_PRECISION_FAST, "parse fast");
  CHECK(histd_precision_parse("Exact", &p) < 0, "precision names are lower case");

  /* The registry holds the CPU kernels by name, and names are unique. */
  CHECK(histd_kernel_find("cpu-reference") != NULL, "cpu-reference registered");
  CHECK(histd_kernel_find("cpu") != NULL, "cpu registered");
  CHECK(histd_kernel_find("auto") != NULL, "auto registered");
  CHECK(histd_kernel_find("nope") == NULL, "unknown name");
  for (size_t i = 0; i < histd_kernel_count(); i++)
    for (size_t j = i + 1; j < histd_kernel_count(); j++)
      CHECK(strcmp(histd_kernel_at(i)->name, histd_kernel_at(j)->name) != 0,
            "duplicate kernel name %s", histd_kernel_at(i)->name);

  /* Default buckets: floor(diagonal / w) + 1; the seed reports' box. */
  histd_dataset ds;
  histd_dataset_alloc(&ds, 2, NULL, 0);
  ds.x[0] = ds.y[0] = ds.z[0] = 0;
  ds.x[1] = ds.y[1] = ds.z[1] = 23000;
  CHECK(histd_dataset_finish(&ds, msg, sizeof msg) == 0, "finish: %s", msg);
  uint32_t nb = 0;
  CHECK(histd_default_buckets(&ds, 500, &nb, msg, sizeof msg) == 0, "%s", msg);
  CHECK(nb == 80, "23000*sqrt(3)/500 = 79.67: 80 buckets, got %u", nb);
  CHECK(histd_default_buckets(&ds, 10, &nb, msg, sizeof msg) == 0, "%s", msg);
  CHECK(nb == 3984, "23000*sqrt(3)/10 = 3983.7: 3984 buckets, got %u", nb);
  CHECK(histd_default_buckets(&ds, 1e-9, &nb, msg, sizeof msg) < 0,
        "a width too small for the bucket limit is refused");
  CHECK_STR_CONTAINS(msg, "too small");
  ds.y[1] = NAN;
  CHECK(histd_dataset_finish(&ds, msg, sizeof msg) < 0, "NaN refused");
  CHECK_STR_CONTAINS(msg, "point 2: y is not a finite number");
  histd_dataset_free(&ds);

  /* A CUDA-only kernel on a CPU worker is refused with a sentence. */
  for (size_t i = 0; i < histd_kernel_count(); i++) {
    const histd_kernel *k = histd_kernel_at(i);
    if (k->engine != HISTD_ENGINE_CUDA)
      continue;
    histd_worker *w;
    CHECK(histd_worker_create(&w, -1, msg, sizeof msg) == 0, "%s", msg);
    histd_dataset_alloc(&ds, 2, NULL, 0);
    memset(ds.x, 0, 6 * sizeof(double));
    histd_dataset_finish(&ds, NULL, 0);
    plain_job g;
    plain_init(&g);
    g.bucket_width = 1;
    snprintf(g.kernel, sizeof g.kernel, "%s", k->name);
    histd_result r;
    CHECK(plain_worker_run(w, &ds, &g, NULL, &r, msg, sizeof msg) == HISTD_ENODEV,
          "GPU kernel on a CPU worker");
    CHECK_STR_CONTAINS(msg, "needs a GPU");
    histd_dataset_free(&ds);
    histd_worker_destroy(w);
    break;
  }
  return check_finish("test_spec");
}
