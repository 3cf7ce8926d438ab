/*
 * parse_xtc.c -- GROMACS XTC trajectories: lossy-compressed coordinates in
 * nm, one frame after another, all in XDR (big-endian 4-byte items):
 *
 *     magic 1995 (2023: the block's length below is 8 bytes), natoms,
 *     step, time (float), the box (9 floats: vectors a, b, c), natoms again;
 *     natoms <= 9: 3 natoms floats, the coordinates as they are;
 *     else: precision (float), minint[3], maxint[3], smallidx, the block's
 *     byte length, the block (padded to a multiple of 4 bytes).
 *
 * The block (xdr3dfcoord by Frans van Hoesel, as GROMACS and xdrfile write
 * it) is a bit stream, most significant bit first, of integer coordinates
 * round(x * precision). Each step reads one atom in full, relative to
 * minint: three fields of bitsize(sizeint[a]) bits when a range
 * sizeint = maxint - minint + 1 exceeds 2^24, else the three packed into
 * one number of bitlength(sizeint0 * sizeint1 * sizeint2) bits (its bytes
 * least significant first; the number is (n0 * s1 + n1) * s2 + n2). A flag
 * bit; when set, 5 bits say the run (0, 3, ..., 24 small integers: up to 8
 * atoms) and whether smallidx goes up or down by one after the step; when
 * clear, the previous run length holds. The run's atoms are packed three
 * integers to smallidx bits with sizes magicints[smallidx], each the
 * previous atom plus (n - magicints[smallidx] / 2); the first of them comes
 * out before the full atom (the writer swaps an atom with the next one when
 * they are close, which compresses water better).
 * Coordinates are (float)integer * (float)(1.0 / precision), in float as
 * GROMACS computes them, then widened: exactly what GROMACS and MDAnalysis
 * read.
 *
 * Hostile input: every read is checked against the input's end and every
 * bit against the block's; smallidx must index magicints when a run uses
 * it; a range must be 1 .. 2^32 - 1; a packed number's first integer must
 * be below its size; every coordinate must fall within minint .. maxint (as
 * it does in any file a compressor wrote), so no integer overflows and
 * every value is finite (the precision is checked for that too); a block
 * must have at least 2 bits an atom before anything is allocated, and the
 * dataset grows only by what a frame's bytes can hold. The frames' points
 * are reserved at once after a walk over their headers and lengths.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io_internal.h"
#include "xdr.h"

enum { XTC_MAGIC = 1995, XTC_MAGIC_2023 = 2023, XTC_UNCOMPRESSED_MAX = 9 };

/* The sizes of the small integers, by smallidx (FIRSTIDX .. LASTIDX). */
static const uint32_t magicints[] = {
    0,       0,       0,       0,       0,       0,        0,        0,        0,
    8,       10,      12,      16,      20,      25,       32,       40,       50,
    64,      80,      101,     128,     161,     203,      256,      322,      406,
    512,     645,     812,     1024,    1290,    1625,     2048,     2580,     3250,
    4096,    5060,    6501,    8192,    10321,   13003,    16384,    20642,    26007,
    32768,   41285,   52015,   65536,   82570,   104031,   131072,   165140,   208063,
    262144,  330280,  416127,  524287,  660561,  832255,   1048576,  1321122,  1664510,
    2097152, 2642245, 3329021, 4194304, 5284491, 6658042,  8388607,  10568983, 13316085,
    16777216};
enum { FIRSTIDX = 9, LASTIDX = (int)(sizeof magicints / sizeof magicints[0]) - 1 };

/* ---- the bit stream ---------------------------------------------------- */

typedef struct bitreader {
  const unsigned char *p;
  size_t n;          /* the block's bytes */
  uint64_t pos, end; /* in bits           */
} bitreader;

/* The next k (0..32) bits, most significant first; false past the end. */
static inline bool getbits(bitreader *b, unsigned k, uint32_t *out) {
  if (k > b->end - b->pos)
    return false;
  if (k == 0) {
    *out = 0;
    return true;
  }
  size_t byte = (size_t)(b->pos >> 3);
  uint64_t w = 0;
  if (b->n - byte >= 8)
    w = histd__be64(b->p + byte);
  else
    for (size_t j = 0; j < 8; j++)
      w = w << 8 | (byte + j < b->n ? b->p[byte + j] : 0);
  *out = (uint32_t)((w << (b->pos & 7)) >> (64 - k));
  b->pos += k;
  return true;
}

static inline uint32_t bswap32(uint32_t w) {
  return (w & 0xffu) << 24 | (w & 0xff00u) << 8 | (w >> 8 & 0xff00u) | w >> 24;
}

/* limb[0..3) (least significant first) /= s; returns the remainder. */
static uint32_t divmod_limbs(uint32_t limb[3], uint32_t s) {
  uint64_t rem = 0;
  for (int j = 2; j >= 0; j--) {
    uint64_t cur = rem << 32 | limb[j];
    limb[j] = (uint32_t)(cur / s);
    rem = cur % s;
  }
  return (uint32_t)rem;
}

/* Three integers packed into nbits (1..72) bits with sizes s (each >= 1):
 * false when the bits run out or the first is not below s[0]. */
static inline bool unpack3(bitreader *b, unsigned nbits, const uint32_t s[3], uint32_t out[3]) {
  unsigned full = (nbits - 1) / 8, last = nbits - 8 * full;
  uint64_t lo = 0;
  uint32_t hi = 0, w;
  for (unsigned k = 0; k < full; k += 4) { /* whole bytes, 4 at a time */
    unsigned c = full - k < 4 ? full - k : 4;
    if (!getbits(b, 8 * c, &w))
      return false;
    lo |= (uint64_t)(bswap32(w) >> (32 - 8 * c)) << (8 * k);
  }
  if (!getbits(b, last, &w))
    return false;
  if (full < 8)
    lo |= (uint64_t)w << (8 * full);
  else
    hi = w;
  if (hi == 0) {
    out[2] = (uint32_t)(lo % s[2]);
    lo /= s[2];
    out[1] = (uint32_t)(lo % s[1]);
    lo /= s[1];
    out[0] = (uint32_t)lo;
    return lo < s[0];
  }
  uint32_t limb[3] = {(uint32_t)lo, (uint32_t)(lo >> 32), hi};
  out[2] = divmod_limbs(limb, s[2]);
  out[1] = divmod_limbs(limb, s[1]);
  out[0] = limb[0];
  return limb[2] == 0 && limb[1] == 0 && limb[0] < s[0];
}

/* The bits a number needs (1..33 for 1 .. 2^32). */
static unsigned bitlength(uint64_t v) {
  unsigned n = 0;
  for (; v != 0; v >>= 1)
    n++;
  return n;
}

/* ---- one compressed block ---------------------------------------------- */

typedef struct block {
  bitreader b;
  int64_t minint[3], maxint[3];
  uint32_t sizeint[3];
  unsigned bitsizeint[3]; /* the three fields' widths, when bitsize is 0 */
  unsigned bitsize;       /* the packed full atom's width, or 0         */
  int64_t smallidx; /* moves by one a step: cannot overflow */
  float inv;        /* 1 / precision                        */
} block;

/* Where decoding stopped, for the message. */
typedef struct stop {
  size_t atom;
  const char *why;
} stop;

static inline void emit(const block *k, const int64_t c[3], double *x, double *y, double *z,
                        size_t i) {
  x[i] = (double)((float)c[0] * k->inv);
  y[i] = (double)((float)c[1] * k->inv);
  z[i] = (double)((float)c[2] * k->inv);
}

static inline bool inside(const block *k, const int64_t c[3]) {
  return c[0] >= k->minint[0] && c[0] <= k->maxint[0] && c[1] >= k->minint[1] &&
         c[1] <= k->maxint[1] && c[2] >= k->minint[2] && c[2] <= k->maxint[2];
}

/* A full atom, relative to minint. */
static inline bool full_atom(block *k, int64_t c[3]) {
  uint32_t v[3];
  if (k->bitsize == 0) {
    for (int a = 0; a < 3; a++)
      if (!getbits(&k->b, k->bitsizeint[a], &v[a]))
        return false;
  } else if (!unpack3(&k->b, k->bitsize, k->sizeint, v)) {
    return false;
  }
  for (int a = 0; a < 3; a++)
    c[a] = k->minint[a] + v[a];
  return true;
}

/* Decodes natoms atoms into x, y, z; false with *st saying why. */
static bool decode(block *k, size_t natoms, double *x, double *y, double *z, stop *st) {
  unsigned run = 0;
  size_t i = 0;
  while (i < natoms) {
    int64_t c[3], prev[3];
    uint32_t flag = 0, code = 0;
    int is_smaller = 0;
    st->atom = i + 1;
    if (!full_atom(k, c) || !getbits(&k->b, 1, &flag) || (flag && !getbits(&k->b, 5, &code))) {
      st->why = "its bits end before the frame's atoms do";
      return false;
    }
    if (!inside(k, c)) {
      st->why = "a coordinate falls outside the block's minint .. maxint";
      return false;
    }
    if (flag) {
      is_smaller = (int)(code % 3) - 1;
      run = code - code % 3;
    }
    if (run == 0) {
      emit(k, c, x, y, z, i++);
    } else {
      if (run / 3 > natoms - i - 1) {
        st->why = "a run of small steps goes past the frame's last atom";
        return false;
      }
      if (k->smallidx < FIRSTIDX || k->smallidx > LASTIDX) {
        st->why = "smallidx leaves the table of small sizes";
        return false;
      }
      const uint32_t size = magicints[k->smallidx], sizes[3] = {size, size, size};
      const int64_t half = size / 2;
      memcpy(prev, c, sizeof prev);
      for (unsigned r = 0; r < run; r += 3) {
        uint32_t v[3];
        int64_t t[3];
        st->atom = i + 1;
        if (!unpack3(&k->b, (unsigned)k->smallidx, sizes, v)) {
          st->why = "a small step is out of range or its bits end early";
          return false;
        }
        for (int a = 0; a < 3; a++)
          t[a] = prev[a] + v[a] - half;
        if (!inside(k, t)) {
          st->why = "a coordinate falls outside the block's minint .. maxint";
          return false;
        }
        emit(k, t, x, y, z, i++);
        if (r == 0) /* the full atom comes after the first small one */
          emit(k, c, x, y, z, i++);
        memcpy(prev, t, sizeof prev);
      }
    }
    k->smallidx += is_smaller;
  }
  return true;
}

/* ---- frames ------------------------------------------------------------- */

typedef struct reader {
  histd__xdr x;
  histd__traj t;
} reader;

static int corrupt(reader *r, size_t fno, size_t at, const char *what) {
  return histd_fail(r->t.msg, r->t.msglen, HISTD_EPARSE,
                    "frame %zu, byte %zu: corrupt compressed block: %s", fno, at, what);
}

/* natoms <= 9: the coordinates as floats. */
static int plain_coords(reader *r, size_t fno, size_t frame_at) {
  size_t n = r->t.natoms;
  double *x = NULL, *y = NULL, *z = NULL;
  if (!histd__xdr_has(&r->x, 12 * n))
    return histd__traj_cut(&r->t, fno, frame_at, r->x.len, "coordinates");
  int rc = histd__traj_room(&r->t, fno, frame_at + 4, &x, &y, &z);
  if (rc != 0)
    return rc;
  for (size_t i = 0; i < n; i++) {
    double *dst[3] = {x + i, y + i, z + i};
    for (int a = 0; a < 3; a++) {
      float f = 0; /* (GCC 13 cannot see that the check above leaves 12 n bytes) */
      size_t at = r->x.off;
      histd__xdr_f32(&r->x, &f);
      if (!isfinite(f))
        return histd_fail(r->t.msg, r->t.msglen, HISTD_EPARSE,
                          "frame %zu, byte %zu: atom %zu's %c is not a finite number", fno, at,
                          i + 1, 'x' + a);
      *dst[a] = f;
    }
  }
  return 0;
}

/* The block's header: precision, ranges, smallidx, its length. */
static int block_header(reader *r, bool long_len, size_t fno, size_t frame_at, block *k,
                        uint64_t *nbytes) {
  histd__xdr *x = &r->x;
  float prec;
  int32_t mm[6], smallidx;
  size_t at = x->off;
  bool ok = histd__xdr_f32(x, &prec);
  for (int a = 0; a < 6 && ok; a++)
    ok = histd__xdr_i32(x, &mm[a]);
  ok = ok && histd__xdr_i32(x, &smallidx);
  uint32_t len32 = 0;
  ok = ok && (long_len ? histd__xdr_u64(x, nbytes) : histd__xdr_u32(x, &len32));
  if (!ok)
    return histd__traj_cut(&r->t, fno, frame_at, x->len, "compressed block's header");
  if (!long_len)
    *nbytes = len32;
  k->inv = (float)(1.0 / (double)prec);
  float big = 2147483648.0f * k->inv;
  if (!(prec > 0) || !isfinite(prec) || !isfinite(big))
    return histd_fail(r->t.msg, r->t.msglen, HISTD_EPARSE,
                      "frame %zu, byte %zu: the precision %g is not a positive number whose "
                      "inverse keeps coordinates finite", fno, at, (double)prec);
  for (int a = 0; a < 3; a++) {
    k->minint[a] = mm[a];
    k->maxint[a] = mm[3 + a];
    int64_t size = k->maxint[a] - k->minint[a] + 1;
    if (size < 1 || size > (int64_t)UINT32_MAX)
      return corrupt(r, fno, at + 4 + 4 * (size_t)a, "maxint is below minint (or the range "
                                                     "is 2^32 wide)");
    k->sizeint[a] = (uint32_t)size;
    k->bitsizeint[a] = bitlength(k->sizeint[a]);
  }
  if (k->sizeint[0] > 0xffffff || k->sizeint[1] > 0xffffff || k->sizeint[2] > 0xffffff) {
    k->bitsize = 0; /* three fields */
  } else {
    uint64_t p01 = (uint64_t)k->sizeint[0] * k->sizeint[1];
    uint64_t lo = (p01 & 0xffffffffu) * k->sizeint[2], hi = (p01 >> 32) * k->sizeint[2];
    uint64_t top = hi + (lo >> 32); /* the product is top * 2^32 + (lo & 0xffffffff) */
    k->bitsize = top ? 32 + bitlength(top) : bitlength(lo);
  }
  k->smallidx = smallidx;
  if (smallidx < FIRSTIDX || smallidx > LASTIDX)
    return corrupt(r, fno, at + 28, "smallidx is outside 9 .. 72");
  return 0;
}

/* natoms > 9: the compressed block. */
static int packed_coords(reader *r, bool long_len, size_t fno, size_t frame_at) {
  block k;
  uint64_t nbytes = 0;
  memset(&k, 0, sizeof k);
  int rc = block_header(r, long_len, fno, frame_at, &k, &nbytes);
  if (rc != 0)
    return rc;
  histd__xdr *x = &r->x;
  size_t at = x->off, left = x->len - x->off;
  if (nbytes > left || (nbytes + 3) / 4 * 4 > left)
    return histd_fail(r->t.msg, r->t.msglen, HISTD_EPARSE,
                      "frame %zu, byte %zu: the frame is cut short: its compressed block of "
                      "%llu bytes (padded to 4) runs past the end of the input at byte %zu",
                      fno, at, (unsigned long long)nbytes, x->len);
  if (r->t.natoms > 4 * nbytes)
    return corrupt(r, fno, at - (long_len ? 8 : 4), "too few bytes for the frame's atoms (2 "
                                                    "bits an atom at least)");
  double *px = NULL, *py = NULL, *pz = NULL;
  if ((rc = histd__traj_room(&r->t, fno, frame_at + 4, &px, &py, &pz)) != 0)
    return rc;
  k.b = (bitreader){x->p + at, (size_t)nbytes, 0, nbytes * 8};
  stop st = {0, NULL};
  if (!decode(&k, r->t.natoms, px, py, pz, &st))
    return histd_fail(r->t.msg, r->t.msglen, HISTD_EPARSE,
                      "frame %zu, byte %zu: corrupt compressed block at atom %zu of %zu: %s",
                      fno, at + (size_t)(k.b.pos / 8), st.atom, r->t.natoms, st.why);
  x->off += (size_t)(nbytes + 3) / 4 * 4;
  return 0;
}

static int frame(reader *r) {
  histd__xdr *x = &r->x;
  const size_t fno = r->t.frames.count + 1, at = x->off;
  int32_t magic = 0, natoms = 0, step, natoms2 = 0;
  float time, b32[9];
  if (!histd__xdr_i32(x, &magic))
    return histd__traj_cut(&r->t, fno, at, x->len, "header");
  if (magic != XTC_MAGIC && magic != XTC_MAGIC_2023)
    return histd_fail(r->t.msg, r->t.msglen, HISTD_EPARSE,
                      "frame %zu, byte %zu: bad magic number %d: an XTC frame starts with "
                      "1995 (or 2023)%s", fno, at, magic,
                      magic == 1993 ? "; 1993 starts a TRR file" : "");
  bool ok = histd__xdr_i32(x, &natoms) && histd__xdr_i32(x, &step) && histd__xdr_f32(x, &time);
  for (int k = 0; k < 9 && ok; k++)
    ok = histd__xdr_f32(x, &b32[k]);
  ok = ok && histd__xdr_i32(x, &natoms2);
  if (!ok)
    return histd__traj_cut(&r->t, fno, at, x->len, "header");
  int rc = histd__traj_natoms(&r->t, natoms, fno, at + 4);
  if (rc != 0)
    return rc;
  if (natoms2 != natoms)
    return histd_fail(r->t.msg, r->t.msglen, HISTD_EPARSE,
                      "frame %zu, byte %zu: the coordinates are of %d atoms, the header says %d",
                      fno, at + 52, natoms2, natoms);
  double m[9];
  histd_box box;
  for (int k = 0; k < 9; k++)
    m[k] = b32[k];
  if ((rc = histd__traj_box(&r->t, m, 4, fno, at + 16, &box)) != 0)
    return rc;
  rc = natoms <= XTC_UNCOMPRESSED_MAX ? plain_coords(r, fno, at)
                                      : packed_coords(r, magic == XTC_MAGIC_2023, fno, at);
  return rc != 0 ? rc : histd__traj_frame_done(&r->t, &box);
}

/* The points of the frames from the start that look whole (magic, the
 * first frame's natoms, every byte there, 2 bits an atom in a block),
 * from their headers and lengths alone: what to reserve. */
static size_t count_points(const unsigned char *p, size_t len) {
  size_t total = 0, at = 0;
  uint32_t natoms = 0;
  while (len - at >= 56) {
    const unsigned char *f = p + at;
    uint32_t magic = histd__be32(f), n = histd__be32(f + 4);
    if ((magic != XTC_MAGIC && magic != XTC_MAGIC_2023) || n < 1 || n > INT32_MAX ||
        (natoms != 0 && n != natoms))
      break;
    natoms = n;
    uint64_t size = 56 + 12 * (uint64_t)n;
    if (n > XTC_UNCOMPRESSED_MAX) {
      bool long_len = magic == XTC_MAGIC_2023;
      size_t head = long_len ? 96 : 92;
      if (len - at < head)
        break;
      uint64_t nbytes = long_len ? histd__be64(f + 88) : histd__be32(f + 88);
      if (nbytes > len - at - head || n > 4 * nbytes)
        break;
      size = head + (nbytes + 3) / 4 * 4;
    }
    if (size > len - at)
      break;
    total += n;
    at += (size_t)size;
  }
  return total;
}

int histd__parse_xtc(const char *buf, size_t len, size_t max_points, histd_dataset *out,
                     char *msg, size_t msglen) {
  reader r = {{(const unsigned char *)buf, len, 0}, {0}};
  int rc = histd__traj_begin(&r.t, "XTC", len, max_points, msg, msglen);
  if (rc == 0)
    rc = histd__traj_reserve(&r.t, count_points(r.x.p, len));
  while (rc == 0 && r.x.off < len)
    rc = frame(&r);
  return histd__traj_end(&r.t, rc, out);
}
