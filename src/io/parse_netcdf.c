/*
 * parse_netcdf.c -- an AMBER NetCDF trajectory (.nc, .ncdf), read from the
 * buffer itself through libnetcdf's nc_open_mem:
 *
 *     :Conventions = "AMBER" ;  :ConventionVersion = "1.0" ;
 *     dimensions: frame = UNLIMITED ; atom = N ; spatial = 3 ;
 *                 cell_spatial = 3 ; cell_angular = 3 ;
 *     float  coordinates(frame, atom, spatial) ;  units "angstrom"
 *     double cell_lengths(frame, cell_spatial) ;  units "angstrom"
 *     double cell_angles(frame, cell_angular) ;   units "degree"
 *
 * (https://ambermd.org/netcdf/nctraj.xhtml; MDAnalysis's NCDFReader is the
 * reference for what is checked.) The Conventions attribute must hold the
 * token AMBER and ConventionVersion must be there; coordinates (float or
 * double) are required, cell_lengths and cell_angles together optional
 * (without them the frames are open space). A scale_factor attribute on any
 * of the three multiplies its values. Units, where given, must be the
 * convention's: angstrom for lengths (which stay in Angstrom), degree(s)
 * for angles. A frame's box: lengths a, b, c and angles alpha, beta, gamma
 * become the lower-triangular cell MDAnalysis's triclinic_vectors builds
 * (a along x, b in the xy plane); all angles 90 is an orthorhombic box.
 * Every frame's atoms go back to back, each frame's box in the frame table.
 *
 * Only the classic NetCDF formats are opened (CDF-1, the 64-bit offset
 * CDF-2 that AMBER writes, CDF-5): the buffer's first bytes are checked
 * before libnetcdf sees it, so a NetCDF-4 (HDF5) upload never reaches the
 * HDF5 library. The header's frame and atom counts are checked against the
 * input's size before anything is allocated (uncompressed coordinates take
 * 12 bytes an atom a frame), so a lying header cannot make us allocate.
 * libnetcdf is not thread-safe: one mutex holds every call into it.
 *
 * Built without NetCDF (-Dnetcdf=disabled, or libnetcdf missing), the
 * format still exists and parsing says so.
 */
#include "io_internal.h"

#ifndef HISTD_HAVE_NETCDF

int histd__parse_netcdf(const char *buf, size_t len, size_t max_points, histd_dataset *out,
                        char *msg, size_t msglen) {
  (void)buf, (void)len, (void)max_points, (void)out;
  return histd_fail(msg, msglen, HISTD_EINVAL, "histd was built without NetCDF support");
}

#else

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <netcdf.h>
#include <netcdf_mem.h>

static pthread_mutex_t nc_lock = PTHREAD_MUTEX_INITIALIZER;

/* An open trajectory: the ids parse() found, the message to fill. */
typedef struct traj {
  int nc;
  int coords, lengths, angles; /* variable ids; lengths -1: no box */
  double scale[3];             /* their scale_factor (1 without)   */
  size_t frames, atoms;
  char *msg;
  size_t msglen;
} traj;

enum { V_COORDS, V_LENGTHS, V_ANGLES };
static const char *const var_names[3] = {"coordinates", "cell_lengths", "cell_angles"};

static const char *type_name(nc_type t) {
  static const char *const names[] = {"?",     "byte",   "char",   "short",  "int",
                                      "float", "double", "ubyte",  "ushort", "uint",
                                      "int64", "uint64", "string"};
  return t >= 0 && (size_t)t < sizeof names / sizeof names[0] ? names[t] : "?";
}

static int nc_error(traj *t, int rc, const char *what) {
  return histd_fail(t->msg, t->msglen, HISTD_EPARSE, "%s: %s", what, nc_strerror(rc));
}

/* The text attribute `name` of variable v (NC_GLOBAL: the file), malloc'd
 * into *out: 1 when present, 0 absent, or an error (not text). */
static int text_att(traj *t, int v, const char *owner, const char *name, char **out) {
  nc_type type;
  size_t n;
  *out = NULL;
  int rc = nc_inq_att(t->nc, v, name, &type, &n);
  if (rc == NC_ENOTATT)
    return 0;
  if (rc != NC_NOERR)
    return nc_error(t, rc, name);
  if (type != NC_CHAR)
    return histd_fail(t->msg, t->msglen, HISTD_EPARSE, "%s's %s attribute is of type %s, not "
                      "text", owner, name, type_name(type));
  if ((*out = malloc(n + 1)) == NULL)
    return histd_fail(t->msg, t->msglen, HISTD_ENOMEM, "out of memory for an attribute");
  if (n > 0 && (rc = nc_get_att_text(t->nc, v, name, *out)) != NC_NOERR) {
    free(*out);
    *out = NULL;
    return nc_error(t, rc, name);
  }
  (*out)[n] = '\0';
  return 1;
}

/* True when the blank- or comma-separated list s holds the token word. */
static bool has_token(const char *s, const char *word) {
  size_t wl = strlen(word);
  for (const char *p = s; *p;) {
    size_t tl = strcspn(p, " ,\t");
    if (tl == wl && memcmp(p, word, wl) == 0)
      return true;
    p += tl;
    p += *p != '\0';
  }
  return false;
}

static int conventions(traj *t) {
  char *conv, *version, q[64];
  int rc = text_att(t, NC_GLOBAL, "the file", "Conventions", &conv);
  if (rc < 0)
    return rc;
  if (rc == 0)
    return histd_fail(t->msg, t->msglen, HISTD_EPARSE, "not an AMBER trajectory: the NetCDF "
                      "file has no Conventions attribute (histd reads the AMBER trajectory "
                      "convention, Conventions = \"AMBER\")");
  if (!has_token(conv, "AMBER")) {
    histd__quote(q, sizeof q, conv, strlen(conv));
    free(conv);
    return histd_fail(t->msg, t->msglen, HISTD_EPARSE, "not an AMBER trajectory: its "
                      "Conventions attribute is \"%s\" (histd reads the AMBER trajectory "
                      "convention, Conventions = \"AMBER\")", q);
  }
  free(conv);
  if ((rc = text_att(t, NC_GLOBAL, "the file", "ConventionVersion", &version)) <= 0)
    return rc < 0 ? rc : histd_fail(t->msg, t->msglen, HISTD_EPARSE, "the AMBER trajectory "
                                    "has no ConventionVersion attribute (\"1.0\")");
  free(version);
  return 0;
}

/* The length of dimension `name` into *n and its id into *id. */
static int dimension(traj *t, const char *name, int *id, size_t *n) {
  int rc = nc_inq_dimid(t->nc, name, id);
  if (rc == NC_EBADDIM)
    return histd_fail(t->msg, t->msglen, HISTD_EPARSE, "the AMBER trajectory has no '%s' "
                      "dimension", name);
  if (rc != NC_NOERR || (rc = nc_inq_dimlen(t->nc, *id, n)) != NC_NOERR)
    return nc_error(t, rc, name);
  return 0;
}

/* Variable k of var_names, its id into *id: float or double, of exactly
 * the dimensions dims[0..nd) (named in `shape`). */
static int variable(traj *t, int k, const int *dims, int nd, const char *shape, int *id) {
  const char *name = var_names[k];
  int rc = nc_inq_varid(t->nc, name, id);
  if (rc == NC_ENOTVAR)
    return histd_fail(t->msg, t->msglen, HISTD_EPARSE, "the AMBER trajectory has no '%s' "
                      "variable", name);
  nc_type type;
  int n, got[NC_MAX_VAR_DIMS];
  if (rc != NC_NOERR || (rc = nc_inq_varndims(t->nc, *id, &n)) != NC_NOERR)
    return nc_error(t, rc, name);
  if (n < 0 || n > NC_MAX_VAR_DIMS)
    return histd_fail(t->msg, t->msglen, HISTD_EPARSE, "'%s' has %d dimensions; it must be "
                      "(%s)", name, n, shape);
  if ((rc = nc_inq_var(t->nc, *id, NULL, &type, &n, got, NULL)) != NC_NOERR)
    return nc_error(t, rc, name);
  bool same = n == nd;
  for (int i = 0; same && i < nd; i++)
    same = got[i] == dims[i];
  if (!same || (type != NC_FLOAT && type != NC_DOUBLE)) {
    char have[160] = "", dn[NC_MAX_NAME + 1];
    for (int i = 0; i < n && i < 4; i++) {
      if (nc_inq_dimname(t->nc, got[i], dn) != NC_NOERR)
        snprintf(dn, sizeof dn, "?");
      size_t l = strlen(have);
      snprintf(have + l, sizeof have - l, "%s%.40s", i ? ", " : "", dn);
    }
    return histd_fail(t->msg, t->msglen, HISTD_EPARSE, "'%s' must be float or double (%s); it "
                      "is %s (%s%s)", name, shape, type_name(type), have, n > 4 ? ", ..." : "");
  }
  return 0;
}

/* Variable k's units (when given: one of ok, a '|'-separated list) and its
 * scale_factor (1 without one) into t->scale[k]. */
static int units_and_scale(traj *t, int k, int id, const char *ok) {
  const char *name = var_names[k];
  char *units, q[64];
  int rc = text_att(t, id, name, "units", &units);
  if (rc < 0)
    return rc;
  if (rc > 0) {
    bool good = false;
    for (const char *p = ok; *p && !good; p += strcspn(p, "|"), p += *p == '|') {
      size_t l = strcspn(p, "|");
      good = strlen(units) == l && memcmp(units, p, l) == 0;
    }
    histd__quote(q, sizeof q, units, strlen(units));
    free(units);
    if (!good)
      return histd_fail(t->msg, t->msglen, HISTD_EPARSE, "'%s' is in \"%s\"; the AMBER "
                        "convention has %s", name, q, k == V_ANGLES ? "degree" : "angstrom");
  }
  nc_type type;
  size_t n;
  t->scale[k] = 1;
  rc = nc_inq_att(t->nc, id, "scale_factor", &type, &n);
  if (rc == NC_ENOTATT)
    return 0;
  if (rc == NC_NOERR && (type == NC_CHAR || n != 1))
    return histd_fail(t->msg, t->msglen, HISTD_EPARSE, "'%s' has a scale_factor of %zu values "
                      "of type %s; it must be one number", name, n, type_name(type));
  if (rc != NC_NOERR || (rc = nc_get_att_double(t->nc, id, "scale_factor", &t->scale[k])) !=
                            NC_NOERR)
    return nc_error(t, rc, "scale_factor");
  if (!isfinite(t->scale[k]) || t->scale[k] == 0)
    return histd_fail(t->msg, t->msglen, HISTD_EPARSE, "'%s' has scale_factor %g; it must be a "
                      "finite number other than 0", name, t->scale[k]);
  return 0;
}

/* Dimensions, variables and attributes: everything but the data. */
static int header(traj *t) {
  int rc, frame, atom, spatial, cs, ca;
  size_t n;
  if ((rc = conventions(t)) != 0 || (rc = dimension(t, "frame", &frame, &t->frames)) != 0 ||
      (rc = dimension(t, "atom", &atom, &t->atoms)) != 0 ||
      (rc = dimension(t, "spatial", &spatial, &n)) != 0)
    return rc;
  if (n != 3)
    return histd_fail(t->msg, t->msglen, HISTD_EPARSE, "the 'spatial' dimension is %zu; an "
                      "AMBER trajectory has 3 (x, y, z)", n);
  const int cdims[3] = {frame, atom, spatial};
  if ((rc = variable(t, V_COORDS, cdims, 3, "frame, atom, spatial", &t->coords)) != 0 ||
      (rc = units_and_scale(t, V_COORDS, t->coords, "angstrom")) != 0)
    return rc;
  if (nc_inq_varid(t->nc, "cell_lengths", &t->lengths) == NC_ENOTVAR) {
    t->lengths = -1; /* no box: open space */
    return 0;
  }
  static const char *const cell_dims[2] = {"cell_spatial", "cell_angular"};
  int *ids[2] = {&cs, &ca};
  for (int i = 0; i < 2; i++) {
    if ((rc = dimension(t, cell_dims[i], ids[i], &n)) != 0)
      return rc;
    if (n != 3)
      return histd_fail(t->msg, t->msglen, HISTD_EPARSE, "the '%s' dimension is %zu; an AMBER "
                        "trajectory has 3", cell_dims[i], n);
  }
  const int ldims[2] = {frame, cs}, adims[2] = {frame, ca};
  if ((rc = variable(t, V_LENGTHS, ldims, 2, "frame, cell_spatial", &t->lengths)) != 0 ||
      (rc = units_and_scale(t, V_LENGTHS, t->lengths, "angstrom")) != 0 ||
      (rc = variable(t, V_ANGLES, adims, 2, "frame, cell_angular", &t->angles)) != 0 ||
      (rc = units_and_scale(t, V_ANGLES, t->angles, "degree|degrees")) != 0)
    return rc;
  return 0;
}

/* The lower-triangular cell of lengths l and angles g (degrees), as
 * MDAnalysis's triclinic_vectors builds it. */
static int cell_box(traj *t, size_t f, const double l[3], const double g[3], histd_box *box) {
  bool good = true;
  for (int i = 0; i < 3; i++)
    good = good && l[i] > 0 && l[i] < INFINITY && g[i] > 0 && g[i] < 180;
  if (!good)
    return histd_fail(t->msg, t->msglen, HISTD_EPARSE, "frame %zu: the cell's lengths (%g, %g, "
                      "%g) must be > 0 and finite and its angles (%g, %g, %g) between 0 and 180 "
                      "degrees", f + 1, l[0], l[1], l[2], g[0], g[1], g[2]);
  if (g[0] == 90 && g[1] == 90 && g[2] == 90) {
    *box = (histd_box){HISTD_BOX_ORTHO, l[0], 0, l[1], 0, 0, l[2]};
    return 0;
  }
  const double rad = M_PI / 180;
  double cos_a = g[0] == 90 ? 0 : cos(g[0] * rad), cos_b = g[1] == 90 ? 0 : cos(g[1] * rad);
  double cos_g = g[2] == 90 ? 0 : cos(g[2] * rad), sin_g = g[2] == 90 ? 1 : sin(g[2] * rad);
  double cx = l[2] * cos_b, cy = l[2] * (cos_a - cos_b * cos_g) / sin_g;
  double cz = sqrt(l[2] * l[2] - cx * cx - cy * cy);
  if (!(cz > 0))
    return histd_fail(t->msg, t->msglen, HISTD_EPARSE, "frame %zu: the cell's angles (%g, %g, "
                      "%g) make no cell (one is at least the sum of the other two)", f + 1,
                      g[0], g[1], g[2]);
  *box = (histd_box){HISTD_BOX_TRICLINIC, l[0], l[1] * cos_g, l[1] * sin_g, cx, cy, cz};
  return 0;
}

/* Frame f's box (kind NONE without cell variables). */
static int frame_box(traj *t, size_t f, histd_box *box) {
  *box = (histd_box){HISTD_BOX_NONE, 0, 0, 0, 0, 0, 0};
  if (t->lengths < 0)
    return 0;
  const size_t start[2] = {f, 0}, count[2] = {1, 3};
  double l[3], g[3];
  int rc = nc_get_vara_double(t->nc, t->lengths, start, count, l);
  if (rc == NC_NOERR)
    rc = nc_get_vara_double(t->nc, t->angles, start, count, g);
  if (rc != NC_NOERR) {
    char what[64];
    snprintf(what, sizeof what, "frame %zu: the cell cannot be read", f + 1);
    return nc_error(t, rc, what);
  }
  for (int i = 0; i < 3; i++) {
    l[i] *= t->scale[V_LENGTHS];
    g[i] *= t->scale[V_ANGLES];
  }
  return cell_box(t, f, l, g, box);
}

/* Frame f's atoms into ds (reserved for cap points) from point `at`, by way
 * of tmp (3 * atoms doubles). */
static int frame_atoms(traj *t, size_t f, double *tmp, histd_dataset *ds, size_t cap,
                       size_t at) {
  const size_t start[3] = {f, 0, 0}, count[3] = {1, t->atoms, 3};
  int rc = nc_get_vara_double(t->nc, t->coords, start, count, tmp);
  if (rc != NC_NOERR) {
    char what[64];
    snprintf(what, sizeof what, "frame %zu: the coordinates cannot be read", f + 1);
    return nc_error(t, rc, what);
  }
  const double s = t->scale[V_COORDS];
  for (size_t i = 0; i < t->atoms; i++)
    for (int a = 0; a < 3; a++) {
      double v = tmp[3 * i + (size_t)a] * s;
      if (!isfinite(v))
        return histd_fail(t->msg, t->msglen, HISTD_EPARSE, "frame %zu, atom %zu: %c is %g, not "
                          "a finite number", f + 1, i + 1, "xyz"[a], v);
      ds->x[(size_t)a * cap + at + i] = v;
    }
  return 0;
}

/* The counts against the limit and against what the input can hold. */
static int check_size(traj *t, size_t len, size_t max_points, nc_type type) {
  size_t bytes = type == NC_DOUBLE ? 24 : 12;
  if (t->frames == 0 || t->atoms == 0)
    return histd_fail(t->msg, t->msglen, HISTD_EPARSE, "the trajectory has %zu frames of %zu "
                      "atoms: no points", t->frames, t->atoms);
  if (t->atoms > SIZE_MAX / bytes / t->frames || t->atoms * t->frames * bytes > len)
    return histd_fail(t->msg, t->msglen, HISTD_EPARSE, "the header announces %zu frames of %zu "
                      "atoms, more coordinates than the file's %zu bytes hold (is it "
                      "truncated?)", t->frames, t->atoms, len);
  size_t n = t->atoms * t->frames;
  if (max_points != 0 && n > max_points)
    return histd_fail(t->msg, t->msglen, HISTD_ETOOBIG, "%zu frames of %zu atoms are %zu "
                      "points, more than %zu, the limit for this input", t->frames, t->atoms,
                      n, max_points);
  return 0;
}

/* Everything after nc_open_mem, under the lock. */
static int read_open(traj *t, size_t len, size_t max_points, histd_dataset *ds,
                     histd__frames *frames) {
  nc_type type;
  int rc = header(t);
  if (rc == 0 && (rc = nc_inq_vartype(t->nc, t->coords, &type)) != NC_NOERR)
    rc = nc_error(t, rc, "coordinates");
  if (rc != 0 || (rc = check_size(t, len, max_points, type)) != 0)
    return rc;
  size_t cap = t->atoms * t->frames;
  double *tmp = malloc(3 * t->atoms * sizeof *tmp);
  if (tmp == NULL)
    return histd_fail(t->msg, t->msglen, HISTD_ENOMEM, "out of memory for %zu atoms", t->atoms);
  if ((rc = histd__ds_reserve(ds, cap, t->msg, t->msglen)) != 0) {
    free(tmp);
    return rc;
  }
  for (size_t f = 0; f < t->frames && rc == 0; f++) {
    histd_box box;
    if ((rc = frame_atoms(t, f, tmp, ds, cap, f * t->atoms)) == 0 &&
        (rc = frame_box(t, f, &box)) == 0)
      rc = histd__frames_add(frames, t->atoms, &box, t->msg, t->msglen);
  }
  free(tmp);
  return rc;
}

/* ---- the header's sizes, before libnetcdf reads it ------------------------
 *
 * libnetcdf 4.9's header reader allocates what a count or a length in the
 * header says before it checks that the bytes are there (a 1 KB upload can
 * ask it for 4 GB: a name's length, a variable's dimension count), and it
 * takes a variable of a type it has no size for (NC_STRING in a classic
 * file) and then divides by that size, 0 (SIGFPE). Both found by
 * tests/io/fuzz_netcdf.c. So the header is walked here first, by the
 * classic format's grammar (magic, numrecs, dimensions, global attributes,
 * variables): every count and length checked against the bytes left, every
 * type one the format has; libnetcdf then checks the rest. */

typedef struct hdr {
  const unsigned char *p, *start, *end;
  size_t word;   /* counts and lengths: 4 bytes, 8 in CDF-5     */
  size_t offset; /* a variable's begin: 4 bytes in CDF-1, else 8 */
  const char *what; /* what was being read, for the message     */
} hdr;

static size_t left(const hdr *h) { return (size_t)(h->end - h->p); }

/* An n-byte big-endian number. */
static bool get(hdr *h, size_t n, uint64_t *v) {
  if (left(h) < n)
    return false;
  *v = 0;
  for (size_t i = 0; i < n; i++)
    *v = *v << 8 | h->p[i];
  h->p += n;
  return true;
}

/* n items of `size` bytes, padded to 4. */
static bool skip(hdr *h, uint64_t n, size_t size) {
  if (n > left(h) / size)
    return false;
  size_t bytes = (size_t)n * size;
  bytes += (4 - bytes % 4) % 4;
  if (bytes > left(h))
    return false;
  h->p += bytes;
  return true;
}

/* A count of items that take at least `least` bytes each. */
static bool count(hdr *h, size_t least, uint64_t *n) {
  return get(h, h->word, n) && *n <= left(h) / least;
}

static bool name(hdr *h) {
  uint64_t n;
  return get(h, h->word, &n) && skip(h, n, 1);
}

/* An attribute list (absent: two zero words). */
static bool attributes(hdr *h) {
  static const size_t type_size[12] = {0, 1, 1, 2, 4, 4, 8, 1, 2, 4, 8, 8};
  uint64_t tag, n, type, values;
  h->what = "an attribute list";
  if (!get(h, 4, &tag) || !count(h, 12, &n) || (tag != 0x0c && !(tag == 0 && n == 0)))
    return false;
  for (uint64_t i = 0; i < n; i++) {
    h->what = "an attribute";
    if (!name(h) || !get(h, 4, &type) || type == 0 || type > (h->word == 8 ? 11u : 6u) ||
        !get(h, h->word, &values) || !skip(h, values, type_size[type]))
      return false;
  }
  return true;
}

static bool walk_header(hdr *h) {
  uint64_t numrecs, tag, n, v;
  h->what = "the dimension list";
  if (!get(h, h->word, &numrecs) || !get(h, 4, &tag) || !count(h, 2 * h->word, &n) ||
      (tag != 0x0a && !(tag == 0 && n == 0)))
    return false;
  for (uint64_t i = 0; i < n; i++)
    if (!name(h) || !get(h, h->word, &v))
      return false;
  if (!attributes(h))
    return false;
  h->what = "the variable list";
  if (!get(h, 4, &tag) || !count(h, 5 * h->word, &n) || (tag != 0x0b && !(tag == 0 && n == 0)))
    return false;
  for (uint64_t i = 0; i < n; i++) {
    h->what = "a variable";
    if (!name(h) || !count(h, h->word, &v) || !skip(h, v, h->word) || !attributes(h))
      return false;
    h->what = "a variable's type"; /* (libnetcdf 4.9.0 divides by the size of any) */
    if (!get(h, 4, &v) || v == 0 || v > (h->word == 8 ? 11u : 6u) || !get(h, h->word, &v) ||
        !get(h, h->offset, &v))
      return false;
  }
  return true;
}

static int check_header(const char *buf, size_t len, char *msg, size_t msglen) {
  const unsigned char *b = (const unsigned char *)buf;
  hdr h = {b + 4, b, b + len, b[3] == 5 ? 8 : 4, b[3] == 1 ? 4 : 8, "the header"};
  if (!walk_header(&h))
    return histd_fail(msg, msglen, HISTD_EPARSE, "the NetCDF header is cut short or "
                      "malformed at byte %zu, in %s (a count or a length beyond the input's "
                      "%zu bytes, or a type the format does not have)", (size_t)(h.p - h.start),
                      h.what, len);
  return 0;
}

/* The classic formats' signatures: CDF\1, CDF\2 (64-bit offsets), CDF\5. */
static int check_magic(const char *buf, size_t len, char *msg, size_t msglen) {
  if (len == 0)
    return histd_fail(msg, msglen, HISTD_EPARSE, "empty input: no points");
  if (len >= 8 && memcmp(buf, "\211HDF\r\n\032\n", 8) == 0)
    return histd_fail(msg, msglen, HISTD_EPARSE, "a NetCDF-4 (HDF5) file: histd reads AMBER "
                      "trajectories in the classic NetCDF formats (CDF-1, the 64-bit offset "
                      "CDF-2 the convention asks for, CDF-5); convert it with nccopy -k "
                      "'64-bit offset'");
  if (len < 4 || memcmp(buf, "CDF", 3) != 0 || (buf[3] != 1 && buf[3] != 2 && buf[3] != 5))
    return histd_fail(msg, msglen, HISTD_EPARSE, "not a NetCDF file (a classic NetCDF file "
                      "starts with the bytes CDF and the version 1, 2 or 5)");
  return 0;
}

int histd__parse_netcdf(const char *buf, size_t len, size_t max_points, histd_dataset *out,
                        char *msg, size_t msglen) {
  int rc = check_magic(buf, len, msg, msglen);
  if (rc != 0 || (rc = check_header(buf, len, msg, msglen)) != 0)
    return rc;
  traj t = {0, -1, -1, -1, {1, 1, 1}, 0, 0, msg, msglen};
  histd_dataset ds;
  memset(&ds, 0, sizeof ds);
  histd__frames frames = {0, 0, NULL, NULL};
  pthread_mutex_lock(&nc_lock);
  /* NC_NOWRITE: libnetcdf reads the buffer and never writes it */
  rc = nc_open_mem("histd-upload.nc", NC_NOWRITE, len, (void *)(uintptr_t)buf, &t.nc);
  if (rc != NC_NOERR) {
    pthread_mutex_unlock(&nc_lock);
    return histd_fail(msg, msglen, HISTD_EPARSE, "the NetCDF library cannot open it: %s",
                      nc_strerror(rc));
  }
  rc = read_open(&t, len, max_points, &ds, &frames);
  nc_close(t.nc);
  pthread_mutex_unlock(&nc_lock);
  if (rc == 0)
    rc = histd__ds_complete_all(&ds, t.atoms * t.frames, t.atoms * t.frames, NULL,
                                frames.count, frames.counts, frames.boxes, msg, msglen);
  else
    histd_dataset_free(&ds);
  histd__frames_free(&frames);
  if (rc == 0) {
    snprintf(ds.unit, sizeof ds.unit, "Angstrom"); /* the AMBER convention's unit */
    *out = ds;
  }
  return rc;
}

#endif
