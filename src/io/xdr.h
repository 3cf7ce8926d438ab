/*
 * xdr.h -- what the GROMACS trajectory readers (parse_xtc.c, parse_trr.c)
 * share: XDR's big-endian items read from a buffer, every read checked
 * against its end, and a trajectory under construction.
 *
 * XDR (RFC 4506) stores 4-byte integers and IEEE-754 binary32, 8-byte
 * hypers and binary64, all big-endian, and pads opaque data to a multiple
 * of 4 bytes. A reader is a buffer and an offset; a read that does not fit
 * returns false and moves nothing, so the caller names the frame and byte.
 *
 * A trajectory: every frame has the first frame's atom count; its points go
 * into one dataset back to back (histd__ds_grow, as the text parsers do,
 * after one reservation for all the frames a first walk over the headers
 * finds), its box into the frame table. Messages read "frame F, byte B: ..." with F
 * from 1 and B the offset from the start of the input.
 */
#ifndef HISTD_IO_XDR_H
#define HISTD_IO_XDR_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "io_internal.h"

typedef struct histd__xdr {
  const unsigned char *p;
  size_t len, off;
} histd__xdr;

static inline bool histd__xdr_has(const histd__xdr *x, size_t n) {
  return n <= x->len - x->off;
}

static inline uint32_t histd__be32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static inline uint64_t histd__be64(const unsigned char *p) {
  return (uint64_t)histd__be32(p) << 32 | histd__be32(p + 4);
}

static inline bool histd__xdr_u32(histd__xdr *x, uint32_t *v) {
  if (!histd__xdr_has(x, 4))
    return false;
  *v = histd__be32(x->p + x->off);
  x->off += 4;
  return true;
}

/* Two's complement without implementation-defined conversions. */
static inline bool histd__xdr_i32(histd__xdr *x, int32_t *v) {
  uint32_t u;
  if (!histd__xdr_u32(x, &u))
    return false;
  *v = u <= INT32_MAX ? (int32_t)u : (int32_t)(u - 0x80000000u) + INT32_MIN;
  return true;
}

static inline bool histd__xdr_u64(histd__xdr *x, uint64_t *v) {
  if (!histd__xdr_has(x, 8))
    return false;
  *v = histd__be64(x->p + x->off);
  x->off += 8;
  return true;
}

static inline bool histd__xdr_f32(histd__xdr *x, float *v) {
  uint32_t u;
  if (!histd__xdr_u32(x, &u))
    return false;
  memcpy(v, &u, sizeof *v);
  return true;
}

static inline bool histd__xdr_f64(histd__xdr *x, double *v) {
  uint64_t u;
  if (!histd__xdr_u64(x, &u))
    return false;
  memcpy(v, &u, sizeof *v);
  return true;
}

/* A real of 4 (float) or 8 (double) bytes, widened to double. */
static inline bool histd__xdr_real(histd__xdr *x, size_t size, double *v) {
  float f;
  if (size == 8)
    return histd__xdr_f64(x, v);
  if (!histd__xdr_f32(x, &f))
    return false;
  *v = f;
  return true;
}

/* ---- a trajectory under construction ----------------------------------- */

typedef struct histd__traj {
  const char *what; /* "XTC" or "TRR", for messages */
  histd_dataset ds;
  histd__frames frames;
  size_t cap, used;   /* points reserved and filled                 */
  size_t natoms;      /* every frame's, from the first (0 before it) */
  size_t max_points;  /* 0: unlimited                                */
  char *msg;
  size_t msglen;
} histd__traj;

static inline int histd__traj_begin(histd__traj *t, const char *what, size_t len,
                                    size_t max_points, char *msg, size_t msglen) {
  memset(t, 0, sizeof *t);
  t->what = what;
  t->max_points = max_points;
  t->msg = msg;
  t->msglen = msglen;
  if (len == 0)
    return histd_fail(msg, msglen, HISTD_EPARSE, "empty input: no points");
  return histd__ds_reserve(&t->ds, 0, msg, msglen);
}

/* The atom count of frame fno, read at byte `at`: at least 1, and the
 * first frame's. */
static inline int histd__traj_natoms(histd__traj *t, int64_t natoms, size_t fno, size_t at) {
  if (natoms < 1)
    return histd_fail(t->msg, t->msglen, HISTD_EPARSE,
                      "frame %zu, byte %zu: the atom count is %lld: no points", fno, at,
                      (long long)natoms);
  if (t->natoms != 0 && (uint64_t)natoms != t->natoms)
    return histd_fail(t->msg, t->msglen, HISTD_EPARSE,
                      "frame %zu, byte %zu: %lld atoms, but the first frame has %zu: every "
                      "frame of the %s trajectory must have as many", fno, at,
                      (long long)natoms, t->natoms, t->what);
  t->natoms = (size_t)natoms;
  return 0;
}

/* The input ends inside frame fno (which starts at byte `at`), in `where`. */
static inline int histd__traj_cut(histd__traj *t, size_t fno, size_t at, size_t len,
                                  const char *where) {
  return histd_fail(t->msg, t->msglen, HISTD_EPARSE,
                    "frame %zu, byte %zu: the frame is cut short: the input ends at byte %zu, "
                    "inside its %s", fno, at, len, where);
}

/* Room for `points` at once, before the first frame: what a walk over the
 * frames' headers and lengths found (each frame whole in the input), so
 * that a long trajectory is allocated once, not grown and copied frame by
 * frame. Never more than max_points (a frame beyond it fails later). */
static inline int histd__traj_reserve(histd__traj *t, size_t points) {
  if (t->max_points != 0 && points > t->max_points)
    points = t->max_points;
  return histd__ds_grow(&t->ds, &t->cap, points, NULL, t->msg, t->msglen);
}

/* Room for frame fno's natoms points (within max_points; `at`: where its
 * atom count is); *x, *y, *z: where its coordinates go. Call it once the
 * input is known to hold them. */
static inline int histd__traj_room(histd__traj *t, size_t fno, size_t at, double **x,
                                   double **y, double **z) {
  size_t n = t->natoms;
  if (t->max_points != 0 && (n > t->max_points || t->used > t->max_points - n))
    return histd_fail(t->msg, t->msglen, HISTD_ETOOBIG,
                      "frame %zu, byte %zu: %zu atoms is more than %zu points, the limit for "
                      "this input", fno, at, t->used + n, t->max_points);
  int rc = histd__ds_grow(&t->ds, &t->cap, t->used + n, NULL, t->msg, t->msglen);
  if (rc != 0)
    return rc;
  *x = t->ds.x + t->used;
  *y = t->ds.x + t->cap + t->used;
  *z = t->ds.x + 2 * t->cap + t->used;
  return 0;
}

/* A GROMACS box matrix m (rows a, b, c; reals of `size` bytes read from
 * byte `at`) into histd's box: all zeros is none. */
static inline int histd__traj_box(histd__traj *t, const double m[9], size_t size, size_t fno,
                                  size_t at, histd_box *box) {
  bool zero = true;
  for (int k = 0; k < 9; k++) {
    if (!isfinite(m[k]))
      return histd_fail(t->msg, t->msglen, HISTD_EPARSE,
                        "frame %zu, byte %zu: the box holds a number that is not finite",
                        fno, at + size * (size_t)k);
    zero = zero && m[k] == 0;
  }
  *box = (histd_box){HISTD_BOX_NONE, 0, 0, 0, 0, 0, 0};
  int shape = zero ? 0 : histd__box_from_vectors(m, box);
  if (shape == HISTD__BOX_NOT_LOWER)
    return histd_fail(t->msg, t->msglen, HISTD_EPARSE,
                      "frame %zu, byte %zu: the box's vectors must be lower-triangular (ay = az "
                      "= bz = 0, as GROMACS writes them); got ay %g, az %g, bz %g", fno, at,
                      m[1], m[2], m[5]);
  if (shape == HISTD__BOX_NOT_POSITIVE)
    return histd_fail(t->msg, t->msglen, HISTD_EPARSE,
                      "frame %zu, byte %zu: the box's ax, by and cz must be > 0 (or the whole "
                      "box 0: none), got %g, %g, %g", fno, at, m[0], m[4], m[8]);
  return 0;
}

/* The frame's points are in: counts it with its box. */
static inline int histd__traj_frame_done(histd__traj *t, const histd_box *box) {
  t->used += t->natoms;
  return histd__frames_add(&t->frames, t->natoms, box, t->msg, t->msglen);
}

/* Finishes the dataset into *out, or frees everything when rc != 0. */
static inline int histd__traj_end(histd__traj *t, int rc, histd_dataset *out) {
  if (rc == 0 && t->frames.count == 0)
    rc = histd_fail(t->msg, t->msglen, HISTD_EPARSE, "no frame holds coordinates: no points");
  if (rc == 0) {
    rc = histd__ds_complete_all(&t->ds, t->cap, t->used, NULL, t->frames.count,
                                t->frames.counts, t->frames.boxes, t->msg, t->msglen);
    if (rc == 0) {
      snprintf(t->ds.unit, sizeof t->ds.unit, "nm"); /* GROMACS's length unit */
      *out = t->ds;
    }
  } else {
    histd_dataset_free(&t->ds);
  }
  histd__frames_free(&t->frames);
  return rc;
}

#endif
