/*
 * parse_dcd.c -- a CHARMM / NAMD / X-PLOR DCD trajectory: Fortran
 * unformatted records, each its payload between two equal byte counts
 * (record markers of 4 bytes, or of 8 as old 64-bit compilers wrote them),
 * in either byte order:
 *
 *     [84] "CORD" NSET ISTART NSAVC ... NAMNF DELTA CELL 4D ... VERSION [84]
 *     [4 + 80 NTITLE] NTITLE title lines of 80 bytes [...]
 *     [4] NATOM [4]
 *     then per frame:
 *     [48] A gamma B beta alpha C (6 doubles) [48]   when the header's CELL
 *     [4 NATOM] x of every atom (float32) [...]
 *     [4 NATOM] y ... [...]   [4 NATOM] z ... [...]
 *     [...] a fourth coordinate (skipped)              when the header's 4D
 *
 * The byte order and the marker width come from the first marker, which is
 * 84 (followed by "CORD"). As MDAnalysis's DCD reader (readdcd.h, after
 * VMD's plugin) does: a nonzero VERSION (the header's last int) marks a
 * CHARMM file, whose CELL and 4D ints say whether the frames have a unit
 * cell and a fourth coordinate; an X-PLOR file (VERSION 0) has neither.
 * Files with fixed atoms (NAMNF != 0: later frames hold only the free ones)
 * are refused. NSET is not trusted (a run that stopped leaves it stale):
 * the frames are the records that follow, up to the end of the input.
 *
 * The unit cell, as MDAnalysis's DCDReader reads it: when all three angle
 * slots lie in [-1, 1] they are cosines (CHARMM, NAMD >= 2.5, VMD and
 * MDTraj write these); else when any of the six is negative or an angle is
 * above 180 they are a symmetric box matrix H11 H12 H22 H13 H23 H33 whose
 * rows are the cell vectors (lengths and angles taken from those, the
 * coordinates left as they are); else the angles are degrees (NAMD 2.5,
 * MDAnalysis's own writer). The cell becomes histd's lower-triangular box
 * (a = (A, 0, 0), b = (B cos gamma, B sin gamma, 0), c = (C cos beta,
 * C (cos alpha - cos beta cos gamma) / sin gamma, cz)), orthorhombic when
 * the three angles are 90 degrees (a cosine below 1e-12 in magnitude counts
 * as 0: cos(pi/2) is 6e-17). A zeroed cell (A = B = C = 0, what writers put
 * in a frame without one) is open space, like a file without cells.
 *
 * Coordinates are float32, widened exactly, in the file's units (Angstrom).
 * Every malformed file gets a sentence naming the frame and the byte offset;
 * a frame cut short by the end of the input is an error, never dropped.
 * Memory: a frame's points are added once its three records are known to
 * lie inside the input, so a lying NATOM cannot make us allocate.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io_internal.h"

typedef struct reader {
  const unsigned char *b;
  size_t len, pos;
  bool big;     /* the file is big-endian                           */
  size_t mk;    /* record marker bytes: 4 or 8                      */
  size_t frame; /* the frame being read (1-based), 0 in the header  */
  char *msg;
  size_t msglen;
} reader;

/* Loads in the file's byte order, whatever the host's. */
static uint64_t load(const reader *r, size_t at, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++)
    v |= (uint64_t)r->b[at + i] << (8 * (r->big ? n - 1 - i : i));
  return v;
}

static int32_t load_i32(const reader *r, size_t at) {
  uint32_t u = (uint32_t)load(r, at, 4);
  int32_t v;
  memcpy(&v, &u, sizeof v);
  return v;
}

static double load_f64(const reader *r, size_t at) {
  uint64_t u = load(r, at, 8);
  double d;
  memcpy(&d, &u, sizeof d);
  return d;
}

/* "frame 3, byte 1234" or, in the header, "byte 1234". */
static const char *where(const reader *r, size_t at, char *buf, size_t buflen) {
  if (r->frame > 0)
    snprintf(buf, buflen, "frame %zu, byte %zu", r->frame, at);
  else
    snprintf(buf, buflen, "byte %zu", at);
  return buf;
}

/* The input ended inside a frame or the header: the error naming it. */
static int cut_short(const reader *r, const char *what, size_t need) {
  if (r->frame > 0)
    return histd_fail(r->msg, r->msglen, HISTD_EPARSE,
                      "frame %zu is cut short: its %s record at byte %zu needs %zu bytes, but "
                      "the input ends after %zu (a truncated last frame)",
                      r->frame, what, r->pos, need, r->len - r->pos);
  return histd_fail(r->msg, r->msglen, HISTD_EPARSE,
                    "byte %zu: the input ends inside the DCD header: its %s record needs %zu "
                    "bytes, %zu are left", r->pos, what, need, r->len - r->pos);
}

/*
 * The record at r->pos, named `what` in errors: its payload [*at, *at +
 * *size), of exactly `want` bytes unless want is SIZE_MAX; `unit` says
 * what want is made of ("6 doubles"). Moves r->pos past it.
 */
static int record(reader *r, const char *what, size_t want, const char *unit, size_t *at,
                  size_t *size) {
  char w[64];
  size_t left = r->len - r->pos;
  if (left < r->mk)
    return cut_short(r, what, want == SIZE_MAX ? 2 * r->mk : want + 2 * r->mk);
  uint64_t n = load(r, r->pos, r->mk);
  if (want != SIZE_MAX && n != want)
    return histd_fail(r->msg, r->msglen, HISTD_EPARSE,
                      "%s: bad record marker: the %s record says it holds %" PRIu64 " bytes, "
                      "expected %zu (%s)", where(r, r->pos, w, sizeof w), what, n, want, unit);
  if (n > left - r->mk || left - r->mk - n < r->mk)
    return cut_short(r, what, n > SIZE_MAX - 2 * r->mk ? SIZE_MAX : (size_t)n + 2 * r->mk);
  uint64_t end = load(r, r->pos + r->mk + (size_t)n, r->mk);
  if (end != n)
    return histd_fail(r->msg, r->msglen, HISTD_EPARSE,
                      "%s: bad record marker: the %s record's end marker says %" PRIu64
                      " bytes, its start (byte %zu) says %" PRIu64,
                      where(r, r->pos + r->mk + (size_t)n, w, sizeof w), what, end, r->pos, n);
  *at = r->pos + r->mk;
  *size = (size_t)n;
  r->pos += (size_t)n + 2 * r->mk;
  return 0;
}

/* The byte order and the marker width: the first marker is 84 and "CORD"
 * follows it. */
static int detect(reader *r) {
  for (size_t mk = 4; mk <= 8; mk += 4)
    for (int big = 0; big < 2; big++) {
      r->mk = mk;
      r->big = big;
      if (r->len >= mk + 4 && load(r, 0, mk) == 84 && memcmp(r->b + mk, "CORD", 4) == 0)
        return 0;
    }
  r->mk = 4;
  for (int big = 0; big < 2 && r->len >= 8; big++) {
    r->big = big;
    if (load(r, 0, 4) == 84) {
      char q[64];
      histd__quote(q, sizeof q, (const char *)r->b + 4, 4);
      return histd_fail(r->msg, r->msglen, HISTD_EPARSE,
                        "byte 4: not a DCD file: the header record starts with '%s', not CORD",
                        q);
    }
  }
  r->big = false;
  if (r->len < 8)
    return histd_fail(r->msg, r->msglen, HISTD_EPARSE,
                      "byte 0: not a DCD file: %zu bytes is too short for its header", r->len);
  return histd_fail(r->msg, r->msglen, HISTD_EPARSE,
                    "byte 0: not a DCD file: the first record marker is %" PRIu32 " (0x%08" PRIx32
                    "), not 84 in either byte order", (uint32_t)load(r, 0, 4),
                    (uint32_t)load(r, 0, 4));
}

typedef struct header {
  size_t natom;
  bool cell, four;
} header;

/* The three header records: CORD, the title, NATOM. */
static int read_header(reader *r, header *h) {
  size_t at, size;
  char w[64];
  int rc;
  if ((rc = detect(r)) != 0 || (rc = record(r, "CORD", 84, "CORD and 20 ints", &at, &size)) != 0)
    return rc;
  int32_t namnf = load_i32(r, at + 36), version = load_i32(r, at + 80);
  h->cell = version != 0 && load_i32(r, at + 44) != 0;
  h->four = version != 0 && load_i32(r, at + 48) == 1;
  if (namnf != 0)
    return histd_fail(r->msg, r->msglen, HISTD_EPARSE,
                      "byte %zu: the file has %" PRId32 " fixed atoms (NAMNF); histd does not "
                      "read DCD files with fixed atoms", at + 36, namnf);
  size_t title_at = r->pos;
  if ((rc = record(r, "title", SIZE_MAX, "", &at, &size)) != 0)
    return rc;
  if (size < 4 || (size - 4) % 80 != 0)
    return histd_fail(r->msg, r->msglen, HISTD_EPARSE,
                      "%s: the title record holds %zu bytes, not 4 + 80 x NTITLE",
                      where(r, title_at, w, sizeof w), size);
  if ((rc = record(r, "NATOM", 4, "one int", &at, &size)) != 0)
    return rc;
  int32_t natom = load_i32(r, at);
  if (natom <= 0)
    return histd_fail(r->msg, r->msglen, HISTD_EPARSE, "byte %zu: NATOM is %" PRId32 ": no points",
                      at, natom);
  if ((uint64_t)natom > SIZE_MAX / 12) /* 32-bit hosts: 4 NATOM must fit */
    return histd_fail(r->msg, r->msglen, HISTD_ETOOBIG,
                      "byte %zu: NATOM %" PRId32 " is more atoms than this machine can address",
                      at, natom);
  h->natom = (size_t)natom;
  if (r->pos == r->len)
    return histd_fail(r->msg, r->msglen, HISTD_EPARSE,
                      "byte %zu: the DCD file has a header but no frames: no points", r->pos);
  return 0;
}

/* The cosine of an angle in degrees, exactly 0 at 90. */
static double cos_deg(double d) { return d == 90 ? 0 : cos(d * (3.14159265358979323846 / 180)); }

static double dot3(const double a[3], const double b[3]) {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

/* A unit cell record u = A gamma B beta alpha C into a box (see the top);
 * false when it is not one. */
static bool cell_box(const double u[6], histd_box *box) {
  *box = (histd_box){HISTD_BOX_NONE, 0, 0, 0, 0, 0, 0};
  for (int i = 0; i < 6; i++)
    if (!isfinite(u[i]))
      return false;
  double len[3] = {u[0], u[2], u[5]}, c[3] = {u[4], u[3], u[1]}; /* alpha beta gamma */
  if (len[0] == 0 && len[1] == 0 && len[2] == 0)
    return true; /* a zeroed cell: no box */
  bool cosines = true, matrix = false;
  for (int i = 0; i < 3; i++) {
    cosines = cosines && c[i] >= -1 && c[i] <= 1;
    matrix = matrix || len[i] < 0 || c[i] < 0 || c[i] > 180;
  }
  if (!cosines && matrix) { /* the rows of a symmetric matrix */
    const double e[3][3] = {{u[0], u[1], u[3]}, {u[1], u[2], u[4]}, {u[3], u[4], u[5]}};
    for (int i = 0; i < 3; i++)
      len[i] = sqrt(dot3(e[i], e[i]));
    if (!(len[0] > 0 && len[1] > 0 && len[2] > 0))
      return false;
    c[0] = dot3(e[1], e[2]) / (len[1] * len[2]);
    c[1] = dot3(e[0], e[2]) / (len[0] * len[2]);
    c[2] = dot3(e[0], e[1]) / (len[0] * len[1]);
  } else if (!cosines) {
    for (int i = 0; i < 3; i++)
      c[i] = cos_deg(c[i]);
  }
  for (int i = 0; i < 3; i++) {
    if (fabs(c[i]) < 1e-12)
      c[i] = 0;
    if (!(len[i] > 0 && c[i] > -1 && c[i] < 1))
      return false;
  }
  double sg = sqrt(1 - c[2] * c[2]);
  double bx = len[1] * c[2], by = len[1] * sg, cx = len[2] * c[1];
  double cy = len[2] * (c[0] - c[1] * c[2]) / sg, cz2 = len[2] * len[2] - cx * cx - cy * cy;
  if (!(cz2 > 0 && by > 0))
    return false;
  *box = (histd_box){bx == 0 && cx == 0 && cy == 0 ? HISTD_BOX_ORTHO : HISTD_BOX_TRICLINIC,
                     len[0], bx, by, cx, cy, sqrt(cz2)};
  return true;
}

/* One frame: its unit cell (when the header says), x, y, z (and a fourth
 * coordinate, skipped); the points appended to ds (reserved for *cap,
 * *used filled), the count and box to frames. */
static int frame(reader *r, const header *h, size_t max_points, histd_dataset *ds, size_t *cap,
                 size_t *used, histd__frames *frames) {
  char w[64];
  const size_t n = h->natom, start = r->pos;
  r->frame = frames->count + 1;
  if (max_points != 0 && (n > max_points || *used > max_points - n))
    return histd_fail(r->msg, r->msglen, HISTD_ETOOBIG,
                      "%s: %zu atoms is more than %zu points, the limit for this input",
                      where(r, start, w, sizeof w), *used + n, max_points);
  histd_box box = {HISTD_BOX_NONE, 0, 0, 0, 0, 0, 0};
  size_t at, size, xyz[3];
  int rc;
  if (h->cell) {
    if ((rc = record(r, "unit cell", 48, "6 doubles", &at, &size)) != 0)
      return rc;
    double u[6];
    for (int i = 0; i < 6; i++)
      u[i] = load_f64(r, at + 8 * (size_t)i);
    if (!cell_box(u, &box))
      return histd_fail(r->msg, r->msglen, HISTD_EPARSE,
                        "%s: the unit cell [A, gamma, B, beta, alpha, C] = [%g, %g, %g, %g, %g, "
                        "%g] is not a periodic box", where(r, at, w, sizeof w), u[0], u[1], u[2],
                        u[3], u[4], u[5]);
  }
  char unit[64];
  snprintf(unit, sizeof unit, "4 bytes x NATOM %zu", n);
  static const char *const names[3] = {"x", "y", "z"};
  for (int a = 0; a < 3; a++)
    if ((rc = record(r, names[a], 4 * n, unit, &xyz[a], &size)) != 0)
      return rc;
  if (h->four && (rc = record(r, "fourth coordinate", SIZE_MAX, "", &at, &size)) != 0)
    return rc;
  if ((rc = histd__ds_grow(ds, cap, *used + n, NULL, r->msg, r->msglen)) != 0)
    return rc;
  /* the coordinates: whole words, swapped when the file's byte order is not
   * the host's (a byte-at-a-time assembly was most of a parse) */
  const uint16_t probe = 1;
  unsigned char host_little;
  memcpy(&host_little, &probe, 1);
  const bool swap = r->big == (host_little == 1);
  for (int a = 0; a < 3; a++) {
    double *dst = ds->x + (size_t)a * *cap + *used;
    const unsigned char *src = r->b + xyz[a];
    for (size_t i = 0; i < n; i++) {
      uint32_t u;
      memcpy(&u, src + 4 * i, 4);
      if (swap)
        u = __builtin_bswap32(u);
      float f;
      memcpy(&f, &u, 4);
      double v = f;
      if (!isfinite(v))
        return histd_fail(r->msg, r->msglen, HISTD_EPARSE,
                          "%s: atom %zu's %s is not a finite number (%g)",
                          where(r, xyz[a] + 4 * i, w, sizeof w), i + 1, names[a], v);
      dst[i] = v;
    }
  }
  *used += n;
  return histd__frames_add(frames, n, &box, r->msg, r->msglen);
}

int histd__parse_dcd(const char *buf, size_t len, size_t max_points, histd_dataset *out,
                     char *msg, size_t msglen) {
  if (len == 0)
    return histd_fail(msg, msglen, HISTD_EPARSE, "empty input: no points");
  reader r = {(const unsigned char *)buf, len, 0, false, 4, 0, msg, msglen};
  header h = {0, false, false};
  int rc = read_header(&r, &h);
  if (rc != 0)
    return rc;
  histd_dataset ds;
  histd__frames frames = {0, 0, NULL, NULL};
  size_t cap = 0, used = 0;
  /* every frame has the same records: reserve the frames the rest of the
   * file can hold at once (growing frame by frame spent most of a big
   * parse copying y and z up); the file's length bounds it, whatever the
   * header says */
  const size_t per_frame = (h.cell ? 48 + 2 * r.mk : 0) + 3 * (4 * h.natom + 2 * r.mk);
  size_t fit = per_frame > 0 ? (r.len - r.pos) / per_frame * h.natom : 0;
  if (max_points != 0 && fit > max_points)
    fit = max_points;
  if ((rc = histd__ds_reserve(&ds, fit, msg, msglen)) != 0)
    return rc;
  cap = fit;
  while (r.pos < r.len)
    if ((rc = frame(&r, &h, max_points, &ds, &cap, &used, &frames)) != 0) {
      histd__frames_free(&frames);
      histd_dataset_free(&ds);
      return rc;
    }
  rc = histd__ds_complete_all(&ds, cap, used, NULL, frames.count, frames.counts, frames.boxes,
                              msg, msglen);
  histd__frames_free(&frames);
  if (rc != 0)
    return rc;
  snprintf(ds.unit, sizeof ds.unit, "Angstrom"); /* CHARMM's, NAMD's and LAMMPS's real units */
  *out = ds;
  return 0;
}
