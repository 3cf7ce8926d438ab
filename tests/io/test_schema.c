/*
 * test_schema.c -- every output carries every field the result schema
 * (histd/schema.h) lists for it. Results of every shape are computed on
 * small sets (a plain histogram; with weights, a periodic box, several
 * frames and their per-frame table, selections and exclusions; a count
 * within a radius; per-point counts with weights; nearest neighbours; a
 * pair list over frames), written as JSON, CSV, text and npz, and read
 * back here with readers of their own (cJSON; the CSV's "# name:" lines
 * and table headers; the text's "name:" lines and headers; the npz's zip
 * entries and .npy headers). A field the schema says an output carries,
 * which the result has, must be there -- with the schema's shape where
 * the output shows one (a JSON array's length and rows, an .npy's shape,
 * a CSV table's rows) -- and no output may carry a field the result does
 * not have. So a new row of the table that a writer forgets fails here.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "../check.h"
#include "histd/io.h"
#include "histd/schema.h"

static char *capture(int (*writer)(FILE *, const histd_result *), const histd_result *res,
                     size_t *len) {
  char *buf = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&buf, &n);
  int rc = writer(f, res);
  fclose(f);
  CHECK(rc == 0, "writer rc %d", rc);
  if (len != NULL)
    *len = n;
  return buf;
}

static int json_writer(FILE *f, const histd_result *r) { return histd_write_json(f, r, 0); }

static void column_of(const histd_field *f, char *buf, size_t len) {
  if (f->column != NULL)
    snprintf(buf, len, "%s", f->column);
  else if (f->group != NULL)
    snprintf(buf, len, "%s.%s", f->group, f->name);
  else
    snprintf(buf, len, "%s", f->name);
}

/* ---- JSON ---------------------------------------------------------------- */

static void check_json(const histd_result *r, const char *what) {
  char *s = capture(json_writer, r, NULL);
  cJSON *doc = cJSON_Parse(s);
  CHECK(doc != NULL, "%s: the JSON parses", what);
  for (size_t i = 0; doc != NULL && i < histd_schema_count(); i++) {
    const histd_field *f = histd_schema_at(i);
    const cJSON *parent = f->group ? cJSON_GetObjectItem(doc, f->group) : doc;
    const cJSON *item = parent ? cJSON_GetObjectItem(parent, f->name) : NULL;
    const bool want = (f->outputs & HISTD_OUT_JSON) && f->present(r);
    CHECK(want == (item != NULL), "%s: JSON %s %s.%s", what, want ? "lacks" : "has a stray",
          f->group ? f->group : "", f->name);
    if (!want || item == NULL || f->shape == HISTD_FS_SCALAR)
      continue;
    uint64_t rows, cols;
    histd_field_len(f, r, &rows, &cols);
    CHECK(cJSON_IsArray(item) && (uint64_t)cJSON_GetArraySize(item) == rows,
          "%s: JSON %s has %d rows, want %" PRIu64, what, f->name, cJSON_GetArraySize(item),
          rows);
    if (cols && cJSON_GetArraySize(item) > 0)
      CHECK((uint64_t)cJSON_GetArraySize(cJSON_GetArrayItem(item, 0)) == cols,
            "%s: JSON %s's rows hold %" PRIu64, what, f->name, cols);
  }
  cJSON_Delete(doc);
  free(s);
}

/* ---- CSV and text: the names in lines and headers ------------------------- */

/* Whether `line` lists `name` among its words (separated by sep or blanks). */
static bool has_word(const char *line, size_t len, const char *name, char sep) {
  const size_t n = strlen(name);
  for (size_t i = 0; i + n <= len; i++)
    if (memcmp(line + i, name, n) == 0 && (i == 0 || line[i - 1] == sep || line[i - 1] == ' ') &&
        (i + n == len || line[i + n] == sep || line[i + n] == ' '))
      return true;
  return false;
}

/* The text's lines that begin with `prefix` and a column name followed by
 * ':' (CSV "# n: 5", text "n: 5"), or the table headers holding it. */
static bool mentions(const char *text, const char *prefix, const char *name, char sep,
                     bool scalar) {
  char want[128];
  snprintf(want, sizeof want, "%s%s: ", prefix, name);
  for (const char *l = text; *l;) {
    const char *e = strchr(l, '\n');
    size_t len = e ? (size_t)(e - l) : strlen(l);
    if (scalar && strncmp(l, want, strlen(want)) == 0)
      return true;
    /* a header line: the first line of a table (no digits first) */
    const bool header = len > 0 && l[0] != '#' && !(l[0] >= '0' && l[0] <= '9') &&
                        memchr(l, ':', len) == NULL;
    if (header && has_word(l, len, name, sep))
      return true; /* a table's header (for a scalar: a one-row table of scalars) */
    l += len + (e != NULL);
  }
  return false;
}

static void check_lines(const histd_result *r, unsigned out, const char *what) {
  const bool csv = out == HISTD_OUT_CSV;
  char *s = capture(csv ? histd_write_csv : histd_write_text, r, NULL);
  for (size_t i = 0; i < histd_schema_count(); i++) {
    const histd_field *f = histd_schema_at(i);
    if (!csv && f == histd_schema_find(NULL, "total"))
      continue; /* the seed layout's "T:" line */
    char col[64];
    column_of(f, col, sizeof col);
    const bool want = (f->outputs & out) && f->present(r);
    bool seen = mentions(s, csv ? "# " : "", col, csv ? ',' : ' ', f->shape == HISTD_FS_SCALAR);
    if (f == histd_schema_find(NULL, "edges")) /* a bin table's edges: lower and upper */
      seen = mentions(s, "", "lower", csv ? ',' : ' ', false) &&
             mentions(s, "", "upper", csv ? ',' : ' ', false);
    if (f->shape == HISTD_FS_EDGES2) /* the second axis's: lower2 and upper2 */
      seen = mentions(s, "", "lower2", csv ? ',' : ' ', false) &&
             mentions(s, "", "upper2", csv ? ',' : ' ', false);
    /* a table of frames (per frame, per point over frames) has its own frame column */
    if (!want && seen && f == histd_schema_find(NULL, "frame") && r->frames > 1)
      continue;
    /* the plain histogram's text is the seed's rows of counts, no header,
     * its edges k x bucket_width */
    const bool seed = !csv && r->statistic == HISTD_STAT_HISTOGRAM &&
                      r->bins.kind == HISTD_BINS_WIDTH && r->weighted == NULL && r->volume <= 0;
    if (seed && want && !seen &&
        (f == histd_schema_find(NULL, "counts") || f == histd_schema_find(NULL, "edges"))) {
      CHECK(mentions(s, "", "bucket_width", ' ', true), "%s: the seed text's width", what);
      continue;
    }
    CHECK(want == seen, "%s: %s %s %s", what, csv ? "CSV" : "text",
          want ? "lacks" : "has a stray", col);
  }
  CHECK_STR_CONTAINS(s, csv ? "" : "T:");
  free(s);
}

/* ---- npz ---------------------------------------------------------------- */

static uint64_t rd(const unsigned char *p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}

static void check_npz(const histd_result *r, const char *what) {
  size_t len = 0;
  unsigned char *s = (unsigned char *)capture(histd_write_npz, r, &len);
  for (size_t i = 0; i < histd_schema_count(); i++) {
    const histd_field *f = histd_schema_at(i);
    char name[80];
    if (f->group)
      snprintf(name, sizeof name, "%s.%s.npy", f->group, f->name);
    else
      snprintf(name, sizeof name, "%s.npy", f->name);
    const bool want = (f->outputs & HISTD_OUT_NPZ) && f->present(r);
    bool seen = false;
    for (size_t at = 0; at + 30 <= len && rd(s + at, 4) == 0x04034b50;) {
      size_t name_len = rd(s + at + 26, 2), extra = rd(s + at + 28, 2), size = rd(s + at + 18, 4);
      const unsigned char *data = s + at + 30 + name_len + extra;
      if (name_len == strlen(name) && memcmp(s + at + 30, name, name_len) == 0) {
        seen = true;
        uint64_t rows, cols;
        histd_field_len(f, r, &rows, &cols);
        char shape[64];
        if (f->shape == HISTD_FS_SCALAR)
          snprintf(shape, sizeof shape, "'shape': ()");
        else if (cols)
          snprintf(shape, sizeof shape, "'shape': (%" PRIu64 ", %" PRIu64 ")", rows, cols);
        else
          snprintf(shape, sizeof shape, "'shape': (%" PRIu64 ",)", rows);
        CHECK(memmem(data, 10 + rd(data + 8, 2), shape, strlen(shape)) != NULL,
              "%s: npz %s wants %s", what, name, shape);
      }
      at = (size_t)(data - s) + size;
    }
    CHECK(want == seen, "%s: npz %s %s", what, want ? "lacks" : "has a stray", name);
  }
  free(s);
}

/* ---- the store and the partials: every kept field back as it was --------- */

static void check_store(const histd_result *r, const char *what) {
  unsigned char *head, *arrays;
  size_t hl, al;
  char msg[256];
  CHECK(histd_result_encode(r, &head, &hl, &arrays, &al, msg, sizeof msg) == 0, "%s: %s", what,
        msg);
  histd_result back, summary;
  CHECK(histd_result_decode(head, hl, arrays, al, &back, msg, sizeof msg) == 0, "%s: %s", what,
        msg);
  CHECK(histd_result_decode(head, hl, NULL, 0, &summary, msg, sizeof msg) == 0, "%s: %s", what,
        msg);
  /* arrays present but none of them: a result that lacks what its fields
   * need is refused, never read as zeros */
  if (histd_result_kept_values(r) > 0) {
    histd_result bare;
    CHECK(histd_result_decode(head, hl, "HRA1", 4, &bare, msg, sizeof msg) == HISTD_EIO &&
              strstr(msg, "lack") != NULL,
          "%s: a result without its arrays was read: %s", what, msg);
  }
  for (size_t i = 0; i < histd_schema_count(); i++) {
    const histd_field *f = histd_schema_at(i);
    const bool kept =
        (f->outputs & HISTD_OUT_STORE) && (f->kept != NULL ? f->kept(r) : f->present(r));
    if (!kept)
      continue;
    const char *a = (const char *)r + f->offset, *b = (const char *)&back + f->offset;
    const char *c = (const char *)&summary + f->offset;
    if (f == histd_schema_find(NULL, "stored_values")) { /* set as it is stored */
      CHECK(back.stored_values == histd_result_kept_values(r) &&
                summary.stored_values == back.stored_values &&
                histd_result_kept_values(&summary) == back.stored_values,
            "%s: the stored values, %" PRIu64, what, back.stored_values);
      continue;
    }
    if (f->shape == HISTD_FS_SCALAR && f->size) {
      CHECK(memcmp(a, b, f->size) == 0 && memcmp(a, c, f->size) == 0, "%s: %s back", what,
            f->name);
    } else if (f->shape == HISTD_FS_SCALAR) {
      CHECK(strcmp(a, b) == 0 && strcmp(a, c) == 0, "%s: %s back", what, f->name);
    } else {
      const void *va, *vb, *vc;
      memcpy(&va, a, sizeof va);
      memcpy(&vb, b, sizeof vb);
      memcpy(&vc, c, sizeof vc);
      const uint64_t n = histd_field_len(f, r, NULL, NULL);
      CHECK(vb != NULL && memcmp(va, vb, n * 8) == 0, "%s: %s's %" PRIu64 " values back", what,
            f->name, n);
      CHECK(vc == NULL, "%s: a summary holds no %s", what, f->name);
    }
  }
  /* and the outputs of what came back are the original's */
  back.pairs_fd = r->pairs_fd;
  back.has_pairs_fd = r->has_pairs_fd;
  char *j1 = capture(json_writer, r, NULL), *j2 = capture(json_writer, &back, NULL);
  CHECK(strcmp(j1, j2) == 0, "%s: the JSON of the result read back differs", what);
  size_t n1, n2;
  char *z1 = capture(histd_write_npz, r, &n1), *z2 = capture(histd_write_npz, &back, &n2);
  CHECK(n1 == n2 && memcmp(z1, z2, n1) == 0, "%s: the npz of the result read back differs", what);
  /* a partial, whole, and refused when cut */
  unsigned char *part;
  size_t plen;
  CHECK(histd_partial_encode(r, &part, &plen, msg, sizeof msg) == 0, "%s: %s", what, msg);
  histd_result p2;
  CHECK(histd_partial_decode(part, plen, &p2, msg, sizeof msg) == 0, "%s: %s", what, msg);
  histd_result_free(&p2);
  CHECK(histd_partial_decode(part, plen - 1, &p2, msg, sizeof msg) == HISTD_EIO, "%s: cut", what);
  free(part);
  free(j1), free(j2), free(z1), free(z2);
  histd_result_free(&back);
  histd_result_free(&summary);
  free(head);
  free(arrays);
}

static void check_all(const histd_result *r, const char *what) {
  check_store(r, what);
  check_json(r, what);
  check_lines(r, HISTD_OUT_CSV, what);
  check_lines(r, HISTD_OUT_TEXT, what);
  check_npz(r, what);
}

/* ---- results of every shape ----------------------------------------------- */

static uint64_t seed = 7;
static double rnd(void) {
  uint64_t z = (seed += 0x9E3779B97F4A7C15u);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
  return (double)((z ^ (z >> 31)) >> 11) * 0x1p-53;
}

/* Three frames of 40 atoms in a box of 6, weights, molecules of two atoms. */
static histd_dataset trajectory(void) {
  histd_dataset ds;
  histd_dataset_alloc(&ds, 120, NULL, 0);
  histd_dataset_alloc_weights(&ds, NULL, 0);
  for (size_t i = 0; i < ds.n; i++) {
    ds.x[i] = rnd() * 6, ds.y[i] = rnd() * 6, ds.z[i] = rnd() * 6;
    ds.w[i] = rnd() + 0.5;
  }
  histd_dataset_finish(&ds, NULL, 0);
  size_t counts[3] = {40, 40, 40};
  histd_box boxes[3];
  for (int f = 0; f < 3; f++)
    boxes[f] = (histd_box){HISTD_BOX_ORTHO, 6, 0, 6, 0, 0, 6};
  histd_dataset_set_frames(&ds, 3, counts, boxes, NULL, 0);
  histd_topology_alloc(&ds, 40, HISTD_TOP_MOL | HISTD_TOP_NAME, NULL, 0);
  for (size_t i = 0; i < 40; i++) {
    ds.top->mol[i] = (int64_t)(i / 2);
    memcpy(ds.top->name + i * HISTD_ATOM_STR, i % 2 ? "H" : "O", 2);
  }
  snprintf(ds.unit, sizeof ds.unit, "nm");
  return ds;
}

static void run(const histd_problem *p, histd_result *r, histd_control *ctl, const char *what) {
  histd_exec ex;
  histd_exec_init(&ex);
  char msg[256];
  CHECK(histd_run(p, &ex, ctl, r, msg, sizeof msg) == 0, "%s: %s", what, msg);
}

int main(void) {
  histd_dataset t = trajectory(), sel;
  histd_result r;
  char msg[256];
  /* a plain histogram of one frame */
  histd_dataset one;
  histd_dataset_frame(&t, 0, &one);
  one.frame = NULL, one.frames = 0, one.top = NULL, one.box.kind = HISTD_BOX_NONE;
  histd_problem p = {&one, NULL, {0}, {HISTD_BINS_WIDTH, 10, 1.0, NULL, 0, 0}, 0, 0, false, false,
                     false, false, false, 0, NULL, HISTD_PAIRING_PLAIN, 0, NULL, 0, NULL, false, false, false, NULL, NULL, 0};
  run(&p, &r, NULL, "plain");
  check_all(&r, "plain histogram");
  histd_result_free(&r);
  /* periodic, weighted, frames, per-frame, explicit edges, selections, exclusions */
  CHECK(histd_dataset_select(&t, "name:O,H", NULL, &sel, msg, sizeof msg) == 0, "%s", msg);
  const double edges[4] = {0.5, 1, 2, 2.9};
  p = (histd_problem){&sel, NULL, {0}, {HISTD_BINS_EDGES, 3, 0, edges, 0, 0}, 0, 0, true, true,
                      false, true, false, 0, NULL, HISTD_PAIRING_PLAIN, 0, NULL, 0, NULL, false, false, false, NULL, NULL, 0};
  run(&p, &r, NULL, "trajectory");
  snprintf(r.select_a, sizeof r.select_a, "name:O,H");
  check_all(&r, "weighted periodic frames, per frame");
  histd_result_free(&r);
  p.weighted = false;
  p.exclude_molecule = true;
  run(&p, &r, NULL, "exclusions");
  check_all(&r, "exclusions");
  histd_result_free(&r);
  /* counts in two axes (r_p, pi), weighted, A x B */
  p = (histd_problem){&sel, &one, {0}, {HISTD_BINS_EDGES, 3, 0, edges, 4, 2}, HISTD_STAT_RP_PI, 0,
                      false, false, false, false, false, 0, NULL, HISTD_PAIRING_PLAIN, 0, NULL, 0,
                      NULL, false, false, true, NULL, NULL, 0};
  run(&p, &r, NULL, "rp_pi");
  check_all(&r, "rp_pi with ravg, A x B");
  histd_result_free(&r);
  /* jackknife regions of (r_p, pi), weighted, self pairs: its group of
   * regions x slots in every output (the regions' sets as regions.c makes
   * them: each region's points by histd_dataset_pick) */
  {
    histd_dataset lab = one, sets[3];
    int32_t *label = malloc(one.n * sizeof *label);
    size_t *pick = malloc(one.n * sizeof *pick);
    CHECK(label != NULL && pick != NULL, "out of memory");
    for (size_t i = 0; i < one.n; i++)
      label[i] = (int32_t)(i % 3);
    lab.region = label, lab.regions = 3;
    for (uint32_t k = 0; k < 3; k++) {
      size_t m = 0;
      for (size_t i = 0; i < one.n; i++)
        if (label[i] == (int32_t)k)
          pick[m++] = i;
      CHECK(histd_dataset_pick(&lab, pick, m, &sets[k], msg, sizeof msg) == 0, "%s", msg);
    }
    p = (histd_problem){&lab, NULL, {0}, {HISTD_BINS_EDGES, 3, 0, edges, 4, 2}, HISTD_STAT_RP_PI,
                        0, true, false, false, false, false, 0, NULL, HISTD_PAIRING_PLAIN, 0, NULL,
                        0, NULL, false, false, false, sets, NULL, 3};
    run(&p, &r, NULL, "jackknife");
    CHECK(r.regions == 3 && r.region_counts != NULL && r.region_weighted != NULL,
          "a jackknife result has its regions' counts and weighted sums");
    check_all(&r, "jackknife regions of rp_pi, weighted");
    histd_result_free(&r);
    p.b = &lab, p.regions_b = sets; /* A x B: B's regions' points too */
    run(&p, &r, NULL, "jackknife A x B");
    CHECK(r.cross && r.region_nb != NULL && r.region_wb2 != NULL, "B's regions' points");
    check_all(&r, "jackknife regions of rp_pi, weighted, A x B");
    histd_result_free(&r);
    for (uint32_t k = 0; k < 3; k++)
      histd_dataset_free(&sets[k]);
    free(pick);
    free(label);
  }
  /* within a radius; A x B */
  p = (histd_problem){&one, &one, {0}, {0}, HISTD_STAT_WITHIN, 1.5, true, false, false, false,
                      false, 0, NULL, HISTD_PAIRING_PLAIN, 0, NULL, 0, NULL, false, false, false, NULL, NULL, 0};
  run(&p, &r, NULL, "within");
  check_all(&r, "within, A x B, weighted");
  histd_result_free(&r);
  /* per point, weighted, over frames */
  p = (histd_problem){&t, NULL, {0}, {0}, HISTD_STAT_POINT_COUNTS, 1.5, true, true, false,
                      false, false, 0, NULL, HISTD_PAIRING_PLAIN, 0, NULL, 0, NULL, false, false, false, NULL, NULL, 0};
  run(&p, &r, NULL, "per point");
  check_all(&r, "per point, weighted, frames");
  histd_result_free(&r);
  /* nearest, one frame, a selection (rows name their atoms) */
  histd_dataset ox;
  CHECK(histd_dataset_select(&t, "name:O", NULL, &ox, msg, sizeof msg) == 0, "%s", msg);
  p = (histd_problem){&ox, NULL, {0}, {0}, HISTD_STAT_NEAREST, 2, false, true, false, false,
                      false, 0, NULL, HISTD_PAIRING_PLAIN, 0, NULL, 0, NULL, false, false, false, NULL, NULL, 0};
  run(&p, &r, NULL, "nearest");
  check_all(&r, "nearest of a selection, frames");
  histd_result_free(&r);
  /* a pair list over frames, from its file */
  FILE *tmp = tmpfile();
  static histd_pair_file pf;
  histd_pair_file_init(&pf, fileno(tmp), 0);
  histd_control ctl = {NULL, NULL, &pf, histd_pair_file_put};
  p = (histd_problem){&t, NULL, {0}, {0}, HISTD_STAT_PAIRS, 1.2, false, true, false, false,
                      false, 0, NULL, HISTD_PAIRING_PLAIN, 0, NULL, 0, NULL, false, false, false, NULL, NULL, 0};
  run(&p, &r, &ctl, "pairs");
  CHECK(histd_pair_file_flush(&pf, false, msg, sizeof msg) == 0, "%s", msg);
  CHECK(r.pairs > 0 && r.pairs == pf.records, "%" PRIu64 " pairs", r.pairs);
  r.pairs_fd = fileno(tmp);
  r.has_pairs_fd = true;
  check_all(&r, "pairs over frames");
  histd_result_free(&r);
  fclose(tmp);
  histd_dataset_free(&ox);
  histd_dataset_free(&sel);
  histd_dataset_free(&t);
  return check_finish("test_schema");
}
