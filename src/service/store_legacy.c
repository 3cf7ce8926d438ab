/*
 * store_legacy.c -- results stored before schema 8, brought to it.
 *
 * Until schema 7 the store kept a result as a row of columns of its own
 * (r_kernel, r_total, r_below, r_volume, ..., and the blobs r_counts,
 * r_weighted and r_per_frame), written and read field by field; from
 * schema 8 a result is what the result codec makes of it by the result
 * schema (io's result_codec.c: r_head, its scalars, and r_arrays). The
 * migration to 8 reads each stored result of the old columns the way
 * histd 7 read them, encodes it, writes r_head and r_arrays and frees the
 * old blobs, all in the migration's transaction. This file is the only
 * reader of the old columns; it runs once a data dir.
 */
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "store.h"

/* The columns the old results were read from (schema 2 to 7). */
#define LEGACY_COLUMNS                                                                       \
  "id, params, dataset_b, n, n_b, device, t_queue, t_parse, t_transfer, t_kernel, t_total, "  \
  "r_kernel, r_block_size, r_threads, r_exact, r_refined, r_overflow, r_total, r_below, "     \
  "r_frames, r_volume, r_box_source, r_reason, r_excluded, r_n, r_n_b, r_unit, r_counts, "    \
  "r_weighted, r_per_frame"
enum {
  L_ID, L_PARAMS, L_DATASET_B, L_N, L_N_B, L_DEVICE, L_TIMING, L_KERNEL = 11, L_BLOCK, L_THREADS,
  L_EXACT, L_REFINED, L_OVERFLOW, L_TOTAL, L_BELOW, L_FRAMES, L_VOLUME, L_BOX_SOURCE, L_REASON,
  L_EXCLUDED, L_RN, L_RN_B, L_UNIT, L_COUNTS, L_WEIGHTED, L_PER_FRAME
};

static const char *text_of(sqlite3_stmt *st, int col) {
  const char *t = (const char *)sqlite3_column_text(st, col);
  return t ? t : "";
}

/* A stored result's bins, from the job's parameters (log edges are the
 * same function of the same numbers, so they come out the same). */
static int legacy_bins(const histd_params *params, histd_bins *bins, double **edges) {
  histd_problem prob;
  int rc = histd_params_spec(params, &prob, edges, NULL, 0);
  if (rc == 0 && prob.statistic == HISTD_STAT_WITHIN) {
    static const double within_bin[2] = {0, 0}; /* one bin; its edges are not read */
    prob.bins = (histd_bins){HISTD_BINS_EDGES, 1, 0, within_bin, 0, 0};
  }
  *bins = prob.bins;
  return rc;
}

/* The words of r_per_frame: for each frame its pairs, its volume and its counts. */
static histd_words *per_frame_parts(const histd_result *r, size_t *n) {
  const uint64_t frames = r->frames > 0 ? r->frames : 1;
  histd_words *parts = malloc(frames * 3 * sizeof *parts);
  for (uint64_t f = 0; parts != NULL && f < frames; f++) {
    parts[3 * f] = (histd_words){&r->frame_total[f], 1};
    parts[3 * f + 1] = (histd_words){&r->frame_volume[f], 1};
    parts[3 * f + 2] = (histd_words){r->frame_counts + f * r->bins.count, r->bins.count};
  }
  *n = (size_t)frames * 3;
  return parts;
}

/* One row's result as histd 7 read it; 0 or HISTD_EIO (why says why). */
static int legacy_result(sqlite3_stmt *st, histd_result *r, char *why, size_t whylen) {
  histd_params params;
  job_params_from_json(text_of(st, L_PARAMS), &params);
  const bool cross = text_of(st, L_DATASET_B)[0] != '\0' || params.select_b[0] != '\0';
  histd_bins bins;
  double *edges = NULL;
  int rc = legacy_bins(&params, &bins, &edges);
  if (rc != 0) {
    histd_params_free(&params);
    return histd_fail(why, whylen, HISTD_EIO, "the stored result's parameters do not make bins");
  }
  const bool weighted = sqlite3_column_type(st, L_WEIGHTED) == SQLITE_BLOB;
  if ((rc = histd_result_init(r, &bins, weighted, why, whylen)) == 0) {
    const histd_words pc = {r->counts, bins.count}, pw = {r->weighted, bins.count};
    rc = histd_words_decode(sqlite3_column_blob(st, L_COUNTS),
                            (size_t)sqlite3_column_bytes(st, L_COUNTS), &pc, 1, why, whylen);
    if (rc == 0 && weighted)
      rc = histd_words_decode(sqlite3_column_blob(st, L_WEIGHTED),
                              (size_t)sqlite3_column_bytes(st, L_WEIGHTED), &pw, 1, why, whylen);
  }
  free(edges);
  if (rc != 0) {
    histd_params_free(&params);
    histd_result_free(r);
    return rc;
  }
  r->precision = params.exec.precision;
  r->statistic = params.has_within ? HISTD_STAT_WITHIN : HISTD_STAT_HISTOGRAM;
  r->radius = params.has_within ? params.within : 0;
  const uint64_t n = (uint64_t)sqlite3_column_int64(st, L_N);
  const uint64_t n_b = (uint64_t)sqlite3_column_int64(st, L_N_B);
  r->n = sqlite3_column_type(st, L_RN) == SQLITE_NULL ? n : (uint64_t)sqlite3_column_int64(st, L_RN);
  r->n_b = sqlite3_column_type(st, L_RN_B) == SQLITE_NULL ? n_b
                                                        : (uint64_t)sqlite3_column_int64(st, L_RN_B);
  r->excluded = (uint64_t)sqlite3_column_int64(st, L_EXCLUDED);
  snprintf(r->unit, sizeof r->unit, "%s", text_of(st, L_UNIT));
  r->exclude_molecule = params.exclude_molecule;
  snprintf(r->select_a, sizeof r->select_a, "%s", params.select_a);
  snprintf(r->select_b, sizeof r->select_b, "%s", params.select_b);
  r->cross = cross;
  /* schema 2's results (r_volume NULL) ran in their job's box */
  r->volume = sqlite3_column_type(st, L_VOLUME) == SQLITE_NULL ? histd_box_volume(&params.box)
                                                               : sqlite3_column_double(st, L_VOLUME);
  const sqlite3_int64 frames = sqlite3_column_int64(st, L_FRAMES);
  r->frames = frames > 1 ? (uint64_t)frames : 1;
  r->box_from_dataset = strcmp(text_of(st, L_BOX_SOURCE), "dataset") == 0;
  snprintf(r->kernel, sizeof r->kernel, "%s", text_of(st, L_KERNEL));
  snprintf(r->reason, sizeof r->reason, "%s", text_of(st, L_REASON));
  r->block_size = (uint32_t)sqlite3_column_int64(st, L_BLOCK);
  r->threads = (uint32_t)sqlite3_column_int64(st, L_THREADS);
  r->exact = sqlite3_column_int(st, L_EXACT) != 0;
  r->refined_pairs = (uint64_t)sqlite3_column_int64(st, L_REFINED);
  r->overflow = (uint64_t)sqlite3_column_int64(st, L_OVERFLOW);
  r->total = (uint64_t)sqlite3_column_int64(st, L_TOTAL);
  r->below = (uint64_t)sqlite3_column_int64(st, L_BELOW);
  snprintf(r->device, sizeof r->device, "%s", text_of(st, L_DEVICE));
  r->timing.queue_ms = sqlite3_column_double(st, L_TIMING);
  r->timing.parse_ms = sqlite3_column_double(st, L_TIMING + 1);
  r->timing.transfer_ms = sqlite3_column_double(st, L_TIMING + 2);
  r->timing.kernel_ms = sqlite3_column_double(st, L_TIMING + 3);
  r->timing.total_ms = sqlite3_column_double(st, L_TIMING + 4);
  if (r->statistic == HISTD_STAT_WITHIN)
    r->within = r->counts[0];
  if (r->volume > 0 && r->frames == 1)
    r->density = (double)r->total / r->volume; /* what a one-frame run records */
  histd_params_free(&params);
  if (sqlite3_column_type(st, L_PER_FRAME) == SQLITE_BLOB) {
    size_t parts_n = 0;
    histd_words *parts = histd_result_per_frame(r, r->frames) == 0 ? per_frame_parts(r, &parts_n)
                                                                    : NULL;
    rc = parts == NULL ? histd_fail(why, whylen, HISTD_ENOMEM, "out of memory")
                       : histd_words_decode(sqlite3_column_blob(st, L_PER_FRAME),
                                            (size_t)sqlite3_column_bytes(st, L_PER_FRAME), parts,
                                            parts_n, why, whylen);
    free(parts);
    if (rc != 0) {
      histd_result_free(r);
      return rc;
    }
  }
  return 0;
}

int store_legacy_results(sqlite3 *db, char **err) {
  sqlite3_stmt *sel = NULL, *upd = NULL;
  int rc = sqlite3_prepare_v2(db,
                              "SELECT " LEGACY_COLUMNS " FROM jobs "
                              "WHERE has_result = 1 AND r_head IS NULL",
                              -1, &sel, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_prepare_v2(db,
                            "UPDATE jobs SET r_head = ?, r_arrays = ?, r_counts = NULL, "
                            "r_weighted = NULL, r_per_frame = NULL, has_result = ?, error = ? "
                            "WHERE id = ?",
                            -1, &upd, NULL);
  while (rc == SQLITE_OK && sqlite3_step(sel) == SQLITE_ROW) {
    histd_result r;
    char why[400] = "";
    unsigned char *head = NULL, *arrays = NULL;
    size_t hl = 0, al = 0;
    /* a result that does not read keeps its job, without it, and says why */
    bool ok = legacy_result(sel, &r, why, sizeof why) == 0;
    if (ok) {
      ok = histd_result_encode(&r, &head, &hl, &arrays, &al, why, sizeof why) == 0;
      histd_result_free(&r);
    }
    sqlite3_reset(upd);
    if (ok) {
      sqlite3_bind_blob64(upd, 1, head, hl, SQLITE_STATIC);
      sqlite3_bind_blob64(upd, 2, arrays, al, SQLITE_STATIC);
    } else {
      sqlite3_bind_null(upd, 1);
      sqlite3_bind_null(upd, 2);
    }
    sqlite3_bind_int(upd, 3, ok ? 1 : 0);
    char error[512];
    snprintf(error, sizeof error, ok ? "" : "the stored result is corrupt: %s", why);
    sqlite3_bind_text(upd, 4, error, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(upd, 5, (const char *)sqlite3_column_text(sel, L_ID), -1, SQLITE_TRANSIENT);
    if (sqlite3_step(upd) != SQLITE_DONE)
      rc = SQLITE_ERROR;
    free(head);
    free(arrays);
  }
  if (rc != SQLITE_OK)
    *err = sqlite3_mprintf("the migration of stored results to schema 8: %s", sqlite3_errmsg(db));
  sqlite3_finalize(sel);
  sqlite3_finalize(upd);
  return rc;
}
