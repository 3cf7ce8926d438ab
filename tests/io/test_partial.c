/*
 * test_partial.c -- partials round-trip bit for bit, and bytes that are not
 * a whole partial are refused with a sentence.
 *
 * Results are made here field by field (random counts, sums whose low bits
 * matter, a volume and density that are not round numbers, edges, per-frame
 * tables, a count within a radius), encoded, decoded and compared member
 * by member (test_schema checks every other field the schema keeps); every prefix of
 * an encoding and a byte too many are refused; a flipped magic is refused.
 */
#include <string.h>

#include "../check.h"
#include "histd/histd.h"
#include "histd/io.h"

static uint64_t seed = 7;
static uint64_t rnd(void) {
  uint64_t z = (seed += 0x9E3779B97F4A7C15u);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
  return z ^ (z >> 31);
}

static void make(histd_result *r, bool edges, bool weighted, uint64_t frames, bool within) {
  double e[6] = {0.5, 1, 1.5, 2.25, 3.125, 7};
  histd_bins bins = edges ? (histd_bins){HISTD_BINS_EDGES, 5, 0, e, 0, 0}
                          : (histd_bins){HISTD_BINS_WIDTH, 7, 0.1 + 0x1p-50, NULL, 0, 0};
  CHECK(histd_result_init(r, &bins, weighted, NULL, 0) == 0, "init");
  for (uint32_t k = 0; k < bins.count; k++) {
    r->counts[k] = rnd();
    if (weighted)
      r->weighted[k] = (double)(int64_t)rnd() * 0x1p-70;
  }
  if (frames > 0) {
    CHECK(histd_result_per_frame(r, frames) == 0, "per frame");
    r->frames = frames;
    for (uint64_t f = 0; f < frames; f++) {
      for (uint32_t k = 0; k < bins.count; k++)
        r->frame_counts[f * bins.count + k] = rnd() >> 8;
      r->frame_total[f] = rnd() >> 4;
      r->frame_volume[f] = 1000.0 / 3 + (double)f;
    }
  }
  r->below = rnd(), r->overflow = rnd(), r->total = rnd(), r->excluded = rnd() >> 3;
  r->exclude_molecule = true;
  r->volume = 1.0 / 3, r->density = 2.0 / 7, r->n = 12345, r->n_b = 678;
  r->cross = true, r->exact = true;
  if (within) { /* a count within a radius: its one bin's count */
    r->statistic = HISTD_STAT_WITHIN;
    r->within = r->counts[0];
    r->radius = 0.7;
  }
  r->refined_pairs = 5, r->threads = 3, r->timing.kernel_ms = 1.25;
  strcpy(r->kernel, "cpu");
  strcpy(r->device, "cpu: 3 threads");
  strcpy(r->unit, "nm");
  strcpy(r->select_a, "element:O");
}

static void same(const histd_result *a, const histd_result *b, const char *what) {
  CHECK(a->bins.kind == b->bins.kind && a->bins.count == b->bins.count &&
            memcmp(&a->bins.width, &b->bins.width, sizeof a->bins.width) == 0,
        "%s: bins", what);
  if (a->bins.kind == HISTD_BINS_EDGES)
    CHECK(memcmp(a->bins.edges, b->bins.edges, (a->bins.count + 1) * sizeof(double)) == 0,
          "%s: edges", what);
  CHECK(memcmp(a->counts, b->counts, a->bins.count * sizeof *a->counts) == 0, "%s: counts",
        what);
  CHECK((a->weighted == NULL) == (b->weighted == NULL), "%s: weighted or not", what);
  if (a->weighted)
    CHECK(memcmp(a->weighted, b->weighted, a->bins.count * sizeof(double)) == 0,
          "%s: weighted sums bit for bit", what);
  CHECK((a->frame_counts == NULL) == (b->frame_counts == NULL), "%s: per frame or not", what);
  if (a->frame_counts) {
    CHECK(memcmp(a->frame_counts, b->frame_counts, a->frames * a->bins.count * 8) == 0,
          "%s: frame counts", what);
    CHECK(memcmp(a->frame_total, b->frame_total, a->frames * 8) == 0, "%s: frame totals", what);
    CHECK(memcmp(a->frame_volume, b->frame_volume, a->frames * 8) == 0, "%s: frame volumes",
          what);
  }
  CHECK_EQ_U64(a->below, b->below, what);
  CHECK_EQ_U64(a->overflow, b->overflow, what);
  CHECK_EQ_U64(a->total, b->total, what);
  CHECK_EQ_U64(a->excluded, b->excluded, what);
  CHECK_EQ_U64(a->frames, b->frames, what);
  CHECK_EQ_U64(a->within, b->within, what);
  CHECK(a->volume == b->volume && a->density == b->density && a->radius == b->radius,
        "%s: volume, density, radius", what);
  CHECK(a->cross == b->cross && a->exact == b->exact && a->n == b->n && a->n_b == b->n_b,
        "%s: flags and sizes", what);
  CHECK(a->statistic == b->statistic && a->exclude_molecule == b->exclude_molecule,
        "%s: statistic", what);
  CHECK(strcmp(a->kernel, b->kernel) == 0 && strcmp(a->device, b->device) == 0 &&
            strcmp(a->unit, b->unit) == 0 && strcmp(a->select_a, b->select_a) == 0,
        "%s: names", what);
}

int main(void) {
  for (int v = 0; v < 16; v++) {
    histd_result r, back;
    make(&r, v & 1, v & 2, v & 4 ? 3 : 0, v & 8);
    unsigned char *bytes;
    size_t len;
    char msg[256] = "";
    CHECK(histd_partial_encode(&r, &bytes, &len, msg, sizeof msg) == 0, "encode: %s", msg);
    int rc = histd_partial_decode(bytes, len, &back, msg, sizeof msg);
    CHECK(rc == 0, "decode variant %d: %s", v, msg);
    if (rc == 0) {
      same(&r, &back, "round trip");
      histd_result_free(&back);
    }
    int taken = 0;
    for (size_t cut = 0; cut < len; cut++)
      if (histd_partial_decode(bytes, cut, &back, msg, sizeof msg) == 0) {
        taken++;
        histd_result_free(&back);
      }
    CHECK(taken == 0, "variant %d: %d truncated encodings taken", v, taken);
    unsigned char *longer = malloc(len + 1);
    memcpy(longer, bytes, len);
    longer[len] = 0;
    CHECK(histd_partial_decode(longer, len + 1, &back, msg, sizeof msg) == HISTD_EIO &&
              strstr(msg, "longer") != NULL,
          "a byte too many refused (%s)", msg);
    longer[0] = 'X';
    CHECK(histd_partial_decode(longer, len, &back, msg, sizeof msg) == HISTD_EIO &&
              strstr(msg, "not a histd partial") != NULL,
          "a wrong magic refused (%s)", msg);
    free(longer);
    free(bytes);
    histd_result_free(&r);
  }
  return check_finish("test_partial");
}
