/*
 * schema.h -- the fields of a result: one table, after redis's
 * static_configs[], drives every output.
 *
 * A row is one field of histd_result as the world sees it: its name (the
 * JSON member, the npz entry, the CSV column), the JSON object it sits in
 * (group), its type, its shape (a scalar, a value per bin, per frame, per
 * point, per pair), its unit, which outputs carry it, one line of help,
 * when a result has it, and how to read element i. The JSON, CSV, text
 * and npz writers (src/io), the store and the cluster's partial codec
 * (histd_result_encode), GET /v1/schema (which the Python client and the
 * dashboard read) and the test that holds every output to the table all
 * walk it; a new field is one row.
 *
 * Fields the store keeps (HISTD_OUT_STORE) also say where they live in
 * histd_result (offset, size), so that the codec writes and reads them
 * without a line of its own per field; derived fields (g(r), the nominal
 * edges of equal-width bins, a box's source as a word) are computed from
 * the kept ones and never stored.
 */
#ifndef HISTD_SCHEMA_H
#define HISTD_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "histd/histd.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum histd_ftype {
  HISTD_FT_U64,
  HISTD_FT_I64,
  HISTD_FT_F64,
  HISTD_FT_STR,
  HISTD_FT_BOOL
} histd_ftype;

typedef enum histd_fshape {
  HISTD_FS_SCALAR,
  HISTD_FS_BINS,         /* bins.count values; two axes: count x count2   */
  HISTD_FS_EDGES,        /* bins.count + 1                                */
  HISTD_FS_EDGES2,       /* bins.count2 + 1: the second axis's edges      */
  HISTD_FS_FRAMES,       /* frames                                        */
  HISTD_FS_FRAME_BINS,   /* frames x bins.count                           */
  HISTD_FS_BLOCK_BINS,   /* blocks x bins.count                           */
  HISTD_FS_PARTIALS,     /* partials (species pairs)                      */
  HISTD_FS_PARTIAL_BINS, /* partials x bins.count                         */
  HISTD_FS_REGIONS,      /* regions (jackknife)                           */
  HISTD_FS_REGION_BINS,  /* regions x slots (both axes' bins, a row)       */
  HISTD_FS_POINTS,       /* point_n                                       */
  HISTD_FS_FRAME_POINTS, /* frames x point_n (one frame: point_n)          */
  HISTD_FS_POINT_BINS,   /* point_n x bins.count                          */
  HISTD_FS_PAIRS         /* one a pair record (read from the pair source) */
} histd_fshape;

/* The outputs a field reaches. */
enum {
  HISTD_OUT_JSON = 1u << 0,   /* the JSON document (arrays left out of summaries) */
  HISTD_OUT_CSV = 1u << 1,
  HISTD_OUT_TEXT = 1u << 2,
  HISTD_OUT_NPZ = 1u << 3,
  HISTD_OUT_STORE = 1u << 4,  /* kept: the store and the partial codec */
  HISTD_OUT_SHOWN = HISTD_OUT_JSON | HISTD_OUT_CSV | HISTD_OUT_TEXT | HISTD_OUT_NPZ,
  HISTD_OUT_ALL = HISTD_OUT_SHOWN | HISTD_OUT_STORE
};

typedef union histd_fvalue {
  uint64_t u;
  int64_t i;
  double d;
  const char *s;
  bool b;
} histd_fvalue;

typedef struct histd_field {
  const char *name;   /* JSON member within group; npz / CSV: group.name   */
  const char *group;  /* NULL, or the JSON object it sits in               */
  const char *column; /* the CSV and text column, when not the name        */
  histd_ftype type;
  histd_fshape shape;
  const char *unit;   /* "length" (the result's unit), "length^3", "pairs",
                       * "points", "ms", or "" (a number, a word)          */
  unsigned outputs;   /* HISTD_OUT_* */
  const char *help;
  bool (*present)(const histd_result *r);
  /* element i; callers walk i = 0, 1, ... in order with *acc zeroed before
   * the first (a running sum, for the cumulative fields) */
  void (*get)(const histd_result *r, uint64_t i, uint64_t *acc, histd_fvalue *v);
  /* PAIRS shape: the value of one record (get is not used) */
  void (*get_pair)(const histd_pair_record *rec, histd_fvalue *v);
  /* HISTD_OUT_STORE: the member kept, at offset: a scalar of `size` bytes
   * copied as it is (size 0: a string, a char array of `cap` bytes), or
   * for array shapes a pointer to the values (8 bytes each). kept(r): when
   * it is kept (NULL: when present). */
  size_t offset, size, cap;
  bool (*kept)(const histd_result *r);
} histd_field;

size_t histd_schema_count(void);
const histd_field *histd_schema_at(size_t i);
/* By name; group NULL matches a field outside any group. */
const histd_field *histd_schema_find(const char *group, const char *name);

/* The number of values of field f in r: 1 for a scalar, else its shape's
 * (frames x bins, ...; PAIRS: r->pairs). rows and cols give the 2-D
 * shapes' dimensions (cols 0 for 1-D ones; FRAME_POINTS with one frame is
 * 1-D). */
uint64_t histd_field_len(const histd_field *f, const histd_result *r, uint64_t *rows,
                         uint64_t *cols);

/* The values of r's arrays that the store keeps (from its head alone: the
 * arrays' lengths follow from its scalars): what reading it whole holds in
 * memory, 8 bytes each. A pair list's records, kept beside, not counted. */
uint64_t histd_result_kept_values(const histd_result *r);
/* The values of r's arrays the JSON output shows (pair lists' columns
 * included): what writing it out takes, about. */
uint64_t histd_result_shown_values(const histd_result *r);

/* Records [first, first + n) of a PAIRS result's list (r->pairs_fd, a
 * file of histd_pair_record as histd_control.pairs handed them out): how
 * many were read (fewer at the end), or HISTD_EIO. */
int64_t histd_pairs_read(const histd_result *r, uint64_t first, histd_pair_record *out,
                         size_t n);

#ifdef __cplusplus
}
#endif
#endif /* HISTD_SCHEMA_H */
