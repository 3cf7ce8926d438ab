/*
 * parse_trr.c -- GROMACS TRR trajectories: full-precision frames, each in
 * XDR (big-endian):
 *
 *     magic 1993, 13 (the version string's length + 1), the XDR string
 *     "GMX_trn_file" (its length 12, then its 12 bytes);
 *     13 ints: ir_size, e_size, box_size, vir_size, pres_size, top_size,
 *     sym_size, x_size, v_size, f_size, natoms, step, nre;
 *     time and lambda (reals);
 *     then each block whose size is not 0, in this order: the box (9 reals:
 *     vectors a, b, c), the virial (9), the pressure (9), x, v, f (natoms
 *     x 3 reals each).
 *
 * A real is a float or a double, as the sizes say (box_size / 9, else
 * x_size, v_size or f_size / (3 natoms): GROMACS's rule); every size must
 * then be 0 or exactly its block's bytes. ir, e, top and sym sizes are
 * ignored (GROMACS writes 0 and reads no block for them). We keep x,
 * widened exactly, and the box (xdr.h makes histd's box of it); the virial,
 * the pressure, v and f are skipped, and so are frames that hold no x (a
 * run that wrote velocities or forces more often than coordinates). Every
 * frame has the same natoms. The points of the frames with x are reserved
 * at once after a walk over the headers, each frame's bytes known to be in
 * the input.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io_internal.h"
#include "xdr.h"

enum { TRR_MAGIC = 1993 };

static const char version[] = "GMX_trn_file";

/* The header's ints, by name. */
enum { IR, E, BOX, VIR, PRES, TOP, SYM, X, V, F, NATOMS, STEP, NRE, NINTS };
static const char *const size_names[NINTS] = {
    "ir_size", "e_size", "box_size", "vir_size", "pres_size", "top_size", "sym_size",
    "x_size",  "v_size", "f_size",   "natoms",   "step",      "nre"};

typedef struct reader {
  histd__xdr x;
  histd__traj t;
  size_t fno; /* frames read, with or without x */
} reader;

/* Magic, version string and the 13 ints, from byte `at`. */
static int header_ints(reader *r, size_t at, int32_t h[NINTS]) {
  histd__xdr *x = &r->x;
  int32_t magic = 0, slen = 0;
  uint32_t len = 0;
  if (!histd__xdr_i32(x, &magic))
    return histd__traj_cut(&r->t, r->fno, at, x->len, "header");
  if (magic != TRR_MAGIC)
    return histd_fail(r->t.msg, r->t.msglen, HISTD_EPARSE,
                      "frame %zu, byte %zu: bad magic number %d: a TRR frame starts with 1993%s",
                      r->fno, at, magic,
                      magic == 1995 || magic == 2023 ? "; 1995 or 2023 starts an XTC file" : "");
  if (!histd__xdr_i32(x, &slen) || !histd__xdr_u32(x, &len) || !histd__xdr_has(x, 12))
    return histd__traj_cut(&r->t, r->fno, at, x->len, "header");
  if (slen != 13 || len != 12 || memcmp(x->p + x->off, version, 12) != 0)
    return histd_fail(r->t.msg, r->t.msglen, HISTD_EPARSE,
                      "frame %zu, byte %zu: the version string is not \"GMX_trn_file\"",
                      r->fno, at + 4);
  x->off += 12;
  for (int k = 0; k < NINTS; k++)
    if (!histd__xdr_i32(x, &h[k]))
      return histd__traj_cut(&r->t, r->fno, at, x->len, "header");
  return 0;
}

/* GROMACS's rule: the reals' size from the first of box, x, v, f that is
 * there (natoms >= 1); 4 and 8 are the sizes that make sense. */
static int64_t real_of(const int32_t h[NINTS]) {
  int from = h[BOX] != 0 ? BOX : h[X] != 0 ? X : h[V] != 0 ? V : F;
  return from == BOX ? h[BOX] / 9 : h[from] / (3 * (int64_t)h[NATOMS]);
}

/* The blocks a frame may have, and each one's bytes when it is there. */
static const int blocks[] = {BOX, VIR, PRES, X, V, F};
static int64_t block_bytes(int k, const int32_t h[NINTS], int64_t real) {
  return (k <= PRES ? 9 : 3 * (int64_t)h[NATOMS]) * real;
}

/* The first block whose size is neither 0 nor its bytes, or -1. */
static int bad_block(const int32_t h[NINTS], int64_t real) {
  for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++)
    if (h[blocks[b]] != 0 && h[blocks[b]] != block_bytes(blocks[b], h, real))
      return blocks[b];
  return -1;
}

/* float (4) or double (8) from the sizes, and every size checked. */
static int real_size(reader *r, size_t at, const int32_t h[NINTS], size_t *size) {
  int64_t real = real_of(h);
  if (real != 4 && real != 8)
    return histd_fail(r->t.msg, r->t.msglen, HISTD_EPARSE,
                      "frame %zu, byte %zu: the sizes of the box, x, v and f say neither float "
                      "nor double", r->fno, at);
  int k = bad_block(h, real);
  if (k >= 0)
    return histd_fail(r->t.msg, r->t.msglen, HISTD_EPARSE,
                      "frame %zu, byte %zu: %s is %d, neither 0 nor %lld (%s)", r->fno,
                      at + 24 + 4 * (size_t)k, size_names[k], h[k],
                      (long long)block_bytes(k, h, real), real == 4 ? "float" : "double");
  *size = (size_t)real;
  return 0;
}

/* Skips a block of `bytes` (whose name is `what`) or reports the cut. */
static int skip(reader *r, size_t frame_at, int32_t bytes, const char *what) {
  if (!histd__xdr_has(&r->x, (size_t)bytes))
    return histd__traj_cut(&r->t, r->fno, frame_at, r->x.len, what);
  r->x.off += (size_t)bytes;
  return 0;
}

/* The frame's x into the dataset. */
static int coords(reader *r, size_t frame_at, size_t real) {
  histd__xdr *x = &r->x;
  size_t n = r->t.natoms;
  double *dst[3] = {NULL, NULL, NULL};
  if (!histd__xdr_has(x, 3 * n * real))
    return histd__traj_cut(&r->t, r->fno, frame_at, x->len, "coordinates");
  int rc = histd__traj_room(&r->t, r->fno, frame_at + 64, &dst[0], &dst[1], &dst[2]);
  if (rc != 0)
    return rc;
  for (size_t i = 0; i < n; i++)
    for (int a = 0; a < 3; a++) {
      size_t at = x->off;
      histd__xdr_real(x, real, &dst[a][i]);
      if (!isfinite(dst[a][i]))
        return histd_fail(r->t.msg, r->t.msglen, HISTD_EPARSE,
                          "frame %zu, byte %zu: atom %zu's %c is not a finite number", r->fno,
                          at, i + 1, 'x' + a);
    }
  return 0;
}

static int frame(reader *r) {
  histd__xdr *x = &r->x;
  const size_t at = x->off;
  int32_t h[NINTS];
  size_t real = 0;
  double skip_reals[2];
  r->fno++;
  int rc = header_ints(r, at, h);
  if (rc == 0)
    rc = histd__traj_natoms(&r->t, h[NATOMS], r->fno, at + 64);
  if (rc == 0)
    rc = real_size(r, at, h, &real);
  if (rc != 0)
    return rc;
  if (!histd__xdr_real(x, real, &skip_reals[0]) || !histd__xdr_real(x, real, &skip_reals[1]))
    return histd__traj_cut(&r->t, r->fno, at, x->len, "header");
  double m[9] = {0};
  histd_box box = {HISTD_BOX_NONE, 0, 0, 0, 0, 0, 0};
  size_t box_at = x->off;
  if (h[BOX] != 0) {
    if (!histd__xdr_has(x, 9 * real))
      return histd__traj_cut(&r->t, r->fno, at, x->len, "box");
    for (int k = 0; k < 9; k++)
      histd__xdr_real(x, real, &m[k]);
  }
  if ((rc = skip(r, at, h[VIR], "virial")) != 0 || (rc = skip(r, at, h[PRES], "pressure")) != 0)
    return rc;
  if (h[X] != 0 && ((rc = histd__traj_box(&r->t, m, real, r->fno, box_at, &box)) != 0 ||
                    (rc = coords(r, at, real)) != 0))
    return rc;
  if ((rc = skip(r, at, h[V], "velocities")) != 0 || (rc = skip(r, at, h[F], "forces")) != 0)
    return rc;
  return h[X] != 0 ? histd__traj_frame_done(&r->t, &box) : 0;
}

/* The points of the frames with x from the start that look whole (magic,
 * natoms, sizes of float or double that fit natoms, every byte there),
 * from their headers alone: what to reserve. */
static size_t count_points(const unsigned char *p, size_t len) {
  size_t total = 0, at = 0;
  while (len - at >= 76 && histd__be32(p + at) == TRR_MAGIC) {
    int32_t h[NINTS];
    for (int k = 0; k < NINTS; k++) {
      uint32_t u = histd__be32(p + at + 24 + 4 * (size_t)k);
      h[k] = u > INT32_MAX ? -1 : (int32_t)u;
    }
    int64_t real = h[NATOMS] >= 1 ? real_of(h) : 0;
    if ((real != 4 && real != 8) || bad_block(h, real) >= 0)
      break;
    uint64_t size = 76 + 2 * (uint64_t)real;
    for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++)
      size += (uint64_t)h[blocks[b]];
    if (size > len - at)
      break;
    total += h[X] != 0 ? (size_t)h[NATOMS] : 0;
    at += (size_t)size;
  }
  return total;
}

int histd__parse_trr(const char *buf, size_t len, size_t max_points, histd_dataset *out,
                     char *msg, size_t msglen) {
  reader r = {{(const unsigned char *)buf, len, 0}, {0}, 0};
  int rc = histd__traj_begin(&r.t, "TRR", len, max_points, msg, msglen);
  if (rc == 0)
    rc = histd__traj_reserve(&r.t, count_points(r.x.p, len));
  while (rc == 0 && r.x.off < len)
    rc = frame(&r);
  return histd__traj_end(&r.t, rc, out);
}
