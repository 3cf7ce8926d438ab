/*
 * io.h -- the io layer of histd: point-set parsers and histogram writers.
 *
 * Parsers turn a whole buffer (or file) in one of twelve formats into a new
 * dataset (histd.h), allocated with histd_dataset_alloc and finished (bounds
 * set). Writers turn a result into text, CSV or JSON on a FILE. The service
 * and the CLI use this header; the engine knows nothing of it.
 *
 * Conventions are the engine's: 0 or a negative HISTD_E* code, out-params
 * filled only on success, one sentence in (msg, msglen) on failure.
 *
 * ## Input formats
 *
 * Every parser reads exactly `len` bytes (the buffer need not be
 * NUL-terminated), accepts an optional UTF-8 byte-order mark in the text
 * formats, parses numbers in the C locale whatever the process's locale is,
 * and rejects: an empty input or one with no points ("no points"),
 * non-finite coordinates ("nan", "inf", and numbers such as 1e400 that
 * overflow a double), and more than max_points points (HISTD_ETOOBIG;
 * max_points 0 means unlimited). Malformed input returns HISTD_EPARSE with
 * a sentence that says where: "line 17: expected 3 numbers, found 2",
 * "points[17]: expected 3 numbers, found 2". Numbers are correctly rounded
 * (strtod, or an exact fast path for short decimals); values below the
 * smallest double round to 0 or a subnormal. Peak memory beyond the input
 * is about the float64 payload (24 bytes a point) for every format: the
 * parsers bound the point count from the input's size, allocate once, and
 * shrink at the end; no per-line or per-number allocation.
 *
 * json  One object, either {"points": [[x, y, z], ...]} or
 *       {"x": [...], "y": [...], "z": [...]} (keys in any order, arrays of
 *       equal length). Weights: a "w" array beside either shape (one per
 *       point), or a fourth number in every point ([x, y, z, w]; the first
 *       point says which). Strict JSON numbers (RFC 8259). Unknown, duplicate
 *       and missing keys, a mix of the two shapes, wrong nesting, and any
 *       non-number where a coordinate belongs are errors naming the path.
 * csv   One point per line. Fields are separated by commas or by blanks
 *       (spaces, tabs), with optional blanks around commas; LF or CRLF line
 *       ends; the last line may lack its newline. Blank lines and lines
 *       whose first non-blank character is '#' are skipped. The first
 *       non-blank, non-comment line is a header when none of its fields is a
 *       number. A header of exactly 3 fields names the columns in order; a
 *       longer header must name columns "x", "y" and "z" (case-insensitive,
 *       quotes allowed), which are then read and the other columns ignored
 *       (every line must then have as many fields as the header). Without
 *       such a header each line holds exactly 3 numbers, or 4 when the
 *       first data line has 4: x, y, z and a weight. A header naming a
 *       column "w" or "weight" (or x,y,z,w) carries weights too (ds.w).
 *       Decimal numbers only ("1", "-2.5", ".5", "5.", "1e-3"); no hex, no
 *       quotes.
 * xyz   The molecular format and extended XYZ, one frame or several one
 *       after another: a line with the atom count N, a comment line, then N
 *       lines "element x y z" (the element is any token). One more field
 *       (on the frame's first atom line) is a weight; two or more are
 *       ignored. Extended XYZ's keys in the comment line: Lattice="ax ay az
 *       bx by bz cx cy cz" (lower-triangular) gives the frame a periodic
 *       box, unless pbc="F F F"; Properties=species:S:1:pos:R:3[:w:R:1...]
 *       names the columns (pos the coordinates; w, weight or weights the
 *       weight; species, name:S:1, resname:S:1, resid:I:1 and mol:I:1 the
 *       topology, kept when every frame agrees). Fewer atom lines than N is
 *       an error; after them come blank lines or the next frame (ds.frames,
 *       each with its box).
 * f64   Raw little-endian IEEE-754 binary64 triples x0 y0 z0 x1 y1 z1 ...;
 *       the length must be a multiple of 24 bytes. Correct on big-endian
 *       hosts too.
 * f32   The same with binary32 (12 bytes per point), widened exactly.
 * lammps  A LAMMPS dump file (dump atom/custom), one frame or several:
 *       x y z, xu yu zu or xs ys zs columns found by name (a "w" column is
 *       a weight); "pp pp pp" bounds give the frame a periodic box
 *       (triclinic with xy xz yz), which a job uses when it names none. Extensions
 *       .lammpstrj .dump .lammpsdump; type text/x-lammps-dump.
 * dcd   A CHARMM / NAMD / X-PLOR DCD trajectory (binary: Fortran records
 *       with 4- or 8-byte markers, either byte order), every frame's NATOM
 *       float32 coordinates in the file's units, each frame's unit cell
 *       (when the header says there is one) its periodic box, orthorhombic
 *       or triclinic; angles as cosines, degrees or a box matrix, read as
 *       MDAnalysis reads them (src/io/parse_dcd.c). Fixed atoms are
 *       refused. Errors name the frame and the byte offset. Extension .dcd;
 *       type application/x-dcd.
 * xtc   A GROMACS XTC trajectory (XDR, big-endian; magic 1995, or 2023 with
 *       a 64-bit block length): every frame's coordinates, decompressed
 *       exactly as GROMACS does (frames of 9 atoms or fewer are stored as
 *       plain floats), kept in nm as float32 values widened. Every frame
 *       has the first one's atom count. The box matrix (vectors a, b, c)
 *       gives the frame a periodic box, orthorhombic or triclinic (lower-
 *       triangular, as GROMACS writes it); all zeros means none. Extension
 *       .xtc; type application/x-xtc.
 * trr   A GROMACS TRR trajectory (full precision, float or double, found
 *       from the header's sizes): each frame's x and box (as for xtc);
 *       velocities, forces, virial and pressure are skipped, and so are
 *       frames that hold no x. Extension .trr; type application/x-trr.
 *       Errors in xtc and trr name the frame and the byte offset (from 0):
 *       "frame 3, byte 4812: ...". A last frame cut short is an error.
 * netcdf  An AMBER NetCDF trajectory (Conventions "AMBER"; the classic
 *       formats CDF-1, CDF-2, CDF-5, not NetCDF-4/HDF5), read with libnetcdf:
 *       coordinates(frame, atom, spatial) in Angstrom (scale_factor
 *       honoured), every frame; cell_lengths and cell_angles (degrees), when
 *       present, give each frame its box (triclinic unless the angles are
 *       90). Malformed files name the missing variable or dimension, the
 *       wrong shape, the frame and atom of a non-finite coordinate, or
 *       libnetcdf's error. Name nc too; extensions .nc .ncdf; type
 *       application/x-netcdf. Built without libnetcdf (-Dnetcdf=disabled)
 *       it fails with "histd was built without NetCDF support".
 * gro   GROMACS's GRO, one frame or several (src/io/parse_gro.c): fixed
 *       columns (the coordinates' width from the decimal points, as GROMACS
 *       reads them; velocities ignored), nm; the box line's 3 or 9 numbers
 *       give each frame its box. Atom names, residues, a molecule a residue
 *       and elements guessed from the names make the topology; every frame
 *       must list the same atoms. Extension .gro; type application/x-gro.
 * pdb   PDB ATOM/HETATM records, frames as MODEL ... ENDMDL (or END), boxes
 *       from CRYST1, Angstrom (src/io/parse_pdb.c); the topology as for gro,
 *       elements from columns 77-78 when given. Extensions .pdb .ent; type
 *       chemical/x-pdb.
 *
 * Sky catalogues (src/io/parse_sky.c, parse_fits.c, sky.c): right ascension
 * and declination in degrees with a comoving distance or a redshift, one
 * point a galaxy, as survey catalogues ship them. Columns are found by
 * name, case-insensitive: `ra`, `dec`, and exactly one of `dist` (the
 * comoving distance, Mpc/h) or `z` (the redshift); optional `w` (or
 * `weight`), a weight a point, and `region`, a jackknife region a point (a
 * whole number from 0 to HISTD_MAX_REGIONS - 1). Other columns are
 * ignored. Every value is checked: dec within [-90, 90], dist and z at
 * least 0, every number finite; ra may be any finite number and is
 * wrapped into [0, 360) (ra - 360 * floor(ra / 360), computed as fmod; 360
 * itself is 0). Points: x = D * u, u = histd_sky_unit(ra, dec) (histd.h),
 * D the distance given, or made from z by histd_comoving_distance below
 * with the options' Omega_m. The dataset keeps ra (wrapped), dec and D in
 * ds.sky, the labels in ds.region (ds.regions = the largest + 1), the
 * Omega_m in ds.omega_m (0 for distances given). One frame, no box, no unit.
 * sky-csv  As csv, but the header line is required and names the columns
 *       above (comma- or blank-separated, quotes allowed, '#' comments and
 *       blank lines skipped); every line has the header's fields. No media
 *       type of its own: ?format=sky-csv (or --input-format).
 * sky-json One object of arrays of equal length, {"ra": [...], "dec":
 *       [...], "z": [...]} (or "dist"), optional "w" and "region"; no other
 *       keys. Strict JSON numbers; errors name the key and index
 *       ("dec[3]: 95 is outside [-90, 90]"). No media type of its own.
 * fits  A FITS file's first binary table (BINTABLE) extension, read with
 *       cfitsio: the columns above, scalar (repeat 1), any numeric type
 *       (TSCAL/TZERO honoured); a null or NaN is an error naming the row (from
 *       1). Extensions .fits .fit .fts; type application/fits (image/fits
 *       too). Built without cfitsio (-Dcfitsio=disabled) it fails with
 *       "histd was built without FITS support".
 *
 * Content types (histd_format_from_content_type, case-insensitive,
 * parameters such as "; charset=utf-8" ignored):
 *   application/json, anything/...+json        -> json
 *   text/csv, application/csv, text/plain,
 *   text/tab-separated-values                  -> csv  (whitespace columns
 *                                                 are plain text)
 *   chemical/x-xyz, application/x-xyz, text/x-xyz -> xyz
 *   application/octet-stream, application/x-float64 -> f64
 *   application/x-float32                      -> f32
 *   text/x-lammps-dump                         -> lammps
 *   application/x-dcd                          -> dcd
 *   application/x-xtc                          -> xtc
 *   application/x-trr                          -> trr
 *   application/x-netcdf                       -> netcdf
 *   application/x-gro                          -> gro
 *   chemical/x-pdb                             -> pdb
 *   application/fits, image/fits               -> fits
 */
#ifndef HISTD_IO_H
#define HISTD_IO_H

#include <stddef.h>
#include <stdio.h>

#include "histd/histd.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum histd_format {
  HISTD_FORMAT_JSON,
  HISTD_FORMAT_CSV,
  HISTD_FORMAT_XYZ,
  HISTD_FORMAT_F64,
  HISTD_FORMAT_F32,
  HISTD_FORMAT_LAMMPS,
  HISTD_FORMAT_DCD,
  HISTD_FORMAT_XTC,
  HISTD_FORMAT_TRR,
  HISTD_FORMAT_NETCDF,
  HISTD_FORMAT_GRO,
  HISTD_FORMAT_PDB,
  HISTD_FORMAT_SKY_CSV,
  HISTD_FORMAT_SKY_JSON,
  HISTD_FORMAT_FITS
} histd_format;

#define HISTD_FORMAT_COUNT 15

/* "json", "csv", "xyz", "f64", "f32", "lammps", "dcd", "xtc", "trr",
 * "netcdf", "gro", "pdb", "sky-csv", "sky-json", "fits"; "?" for a value
 * out of range. */
const char *histd_format_name(histd_format f);

/* Every format's name, sep between them ("json|csv|..."), and every
 * format's own media type ("application/json, text/csv, ..."), for
 * messages; cut to len. */
void histd_format_names(char *buf, size_t len, const char *sep);
void histd_format_types(char *buf, size_t len);

/* The names above (case-insensitive), plus "bin" for f64 and "nc" for
 * netcdf. HISTD_EINVAL for anything else. */
int histd_format_parse(const char *name, histd_format *out);

/* From the file name's extension: .json .csv .tsv .txt(csv) .xyz .extxyz .f64 .bin
 * .f32 .lammpstrj .dump .lammpsdump .dcd .xtc .trr .nc .ncdf .gro .pdb .ent
 * .fits .fit .fts (case-insensitive). HISTD_EINVAL when there is none or it
 * is unknown. */
int histd_format_from_path(const char *path, histd_format *out);

/* From an HTTP Content-Type (see the table above). HISTD_EINVAL otherwise. */
int histd_format_from_content_type(const char *ct, histd_format *out);

/*
 * Parses buf[0..len) into a new dataset *out (free it with
 * histd_dataset_free). max_points: 0 = unlimited. On failure *out is left
 * zeroed and nothing is allocated.
 */
int histd_parse(histd_format fmt, const char *buf, size_t len, size_t max_points,
                histd_dataset *out, char *msg, size_t msglen);

/*
 * What a sky catalogue's parse needs beyond its bytes (the formats that are
 * not sky catalogues ignore it; NULL: the defaults):
 *   omega_m  flat LambdaCDM's Omega_m (Omega_Lambda = 1 - Omega_m), from
 *            0.01 to 1, for catalogues with redshifts; 0: HISTD_OMEGA_M.
 *            Distances come out in Mpc/h (c / H0 = 2997.92458 Mpc/h), so
 *            the Hubble parameter h does not enter: multiply by 1/h for Mpc.
 *   regions  > 0: assign this many jackknife regions on the sky
 *            (histd_dataset_assign_regions); a catalogue with a region
 *            column and regions > 0 is an error (one or the other).
 *   centres  not NULL: centre_count regions' centres (another catalogue's,
 *            histd_sky_region_centres) whose regions the points take
 *            (histd_dataset_label_regions); not with a region column nor
 *            with regions > 0.
 * Either out of range is HISTD_EINVAL with a sentence.
 */
#define HISTD_OMEGA_M 0.315
typedef struct histd_sky_options {
  double omega_m;
  uint32_t regions;
  double *centres; /* (owned by the caller) */
  uint32_t centre_count;
} histd_sky_options;
int histd_parse_with(histd_format fmt, const char *buf, size_t len, size_t max_points,
                     const histd_sky_options *sky, histd_dataset *out, char *msg,
                     size_t msglen);

/*
 * The comoving distance of redshift z >= 0 in a flat LambdaCDM universe,
 * in Mpc/h (src/io/sky.c):
 *     D(z) = (c/H0) * integral from 0 to z of dz' / E(z'),
 *     E(z) = sqrt(Omega_m (1 + z)^3 + 1 - Omega_m),  c/H0 = 2997.92458 Mpc/h,
 * computed in the variable u = (1 + z)^(-1/2), where it is
 *     D = 2 (c/H0) * integral from u to 1 of du / sqrt(Omega_m + (1 - Omega_m) u^6)
 * (a smooth integrand on [0, 1], so every finite z is the same work), by
 * composite 16-point Gauss-Legendre quadrature on HISTD_DISTANCE_PANELS
 * equal panels of [0, 1] (the whole panels summed once into a table, the
 * panel holding u integrated by the same rule on [u, its top], the last
 * panel's length 1 - u computed as z / (s (1 + s)), s = sqrt(1 + z), so
 * small redshifts keep their relative precision). Its error: for 0.01 <=
 * Omega_m <= 1 the integrand's singularities (the zeros of Omega_m +
 * (1 - Omega_m) u^6) lie at least 0.23 from [0, 1], 30 half-panels, so
 * Gauss-Legendre's bound for analytic integrands (Trefethen, 2008: at
 * most 64 M / (15 (rho^2 - 1) rho^32) a panel with rho >= 30) puts the
 * quadrature error below 1e-40 relative; rounding leaves D within 1e-13
 * relative (the tests hold it to 1e-12 against independent integrations
 * and Einstein-de Sitter's closed form). z = 0 is 0 exactly.
 */
#define HISTD_DISTANCE_PANELS 64
#define HISTD_C_OVER_H0 2997.92458
typedef struct histd_distance_table {
  double omega_m;
  double node[16], weight[16];                 /* Gauss-Legendre on [-1, 1] */
  double above[HISTD_DISTANCE_PANELS + 1];     /* integral from k / PANELS to 1 */
} histd_distance_table;
/* HISTD_EINVAL when omega_m is not within [0.01, 1]. */
int histd_distance_table_init(histd_distance_table *t, double omega_m, char *msg,
                              size_t msglen);
/* D(z) for a finite z >= 0 (NaN otherwise). */
double histd_comoving_distance(const histd_distance_table *t, double z);

/*
 * histd_parse, with the points written to the file fd instead of the heap:
 * on success out's x, y and z are a shared mapping of fd's first 3 * n
 * doubles (x[n] y[n] z[n], the payload's layout; the file is that long),
 * and out->borrowed is set. Release it with histd_parse_unmap (never
 * histd_dataset_free). The parse's other memory (a frame table, weights,
 * a topology, a frame's scratch) stays on the heap.
 */
int histd_parse_to_fd(histd_format fmt, const char *buf, size_t len, size_t max_points, int fd,
                      histd_dataset *out, char *msg, size_t msglen);
int histd_parse_to_fd_with(histd_format fmt, const char *buf, size_t len, size_t max_points,
                           const histd_sky_options *sky, int fd, histd_dataset *out,
                           char *msg, size_t msglen);
void histd_parse_unmap(histd_dataset *ds);

/* Reads a whole file and parses it. "-" reads standard input. Regular
 * files are memory-mapped (so the parser's peak memory is its dataset);
 * they must not shrink while being parsed. HISTD_ENOENT / HISTD_EIO name
 * the path; parse errors are histd_parse's, without the path. */
int histd_parse_file(const char *path, histd_format fmt, size_t max_points,
                     histd_dataset *out, char *msg, size_t msglen);
int histd_parse_file_with(const char *path, histd_format fmt, size_t max_points,
                          const histd_sky_options *sky, histd_dataset *out, char *msg,
                          size_t msglen);

/*
 * Writers.
 *
 * histd_write_text: the seed reports' layout. Rows of five counts, each row
 * prefixed by the index of its first bucket, zero-padded to at least two
 * digits ("00:", "05:", ...; all prefixes the same width), counts
 * right-aligned in columns; then "T:<total pairs>"; then "below:<count>"
 * and "overflow:<count>" when nonzero, then for several frames or a
 * periodic box "frames: F[; periodic box from the file|job]", then a line naming the kernel,
 * precision, block size or threads and device, and a line of timings in ms.
 * A result with weights or a periodic box is a table, a row per bin:
 * bucket, lower, upper, count[, weighted][, g, coordination]; a count within
 * a radius is the line "within R: <count>".
 *
 * histd_write_csv: the header "bucket,lower,upper,count" (plus weighted,
 * g, coordination as above), one row per bucket with its edges (shortest
 * round-trip decimals), a "below,,E0,<count>" row for explicit edges, then
 * "overflow,<last edge>,,<count>"; within a radius: "radius,within,total".
 *
 * Both return 0, or HISTD_EIO if the stream reports an error.
 */
int histd_write_text(FILE *f, const histd_result *res);
int histd_write_csv(FILE *f, const histd_result *res);

/*
 * histd_write_json: the result as one JSON object:
 *   {"n", ["n_b" for A x B], "frames", ["volume", "box_source": "job" |
 *    "dataset" for periodic boxes],
 *    "statistic": "histogram", "bins": "width"|"edges", ["bucket_width"],
 *    "buckets", "edges": [E0, ..., EK], "counts": [...], ["weighted": [...]],
 *    ["g": [...], "coordination": [...] for periodic boxes], "below",
 *    "overflow", "total", "kernel", "block_size", "precision", "exact",
 *    "device", "timing_ms": {"queue", "parse", "transfer", "kernel", "total"}}
 * or, within a radius, "statistic": "within", "radius", "within",
 * ["weighted_within"] in place of the bins. Streamed to f: its memory does
 * not grow with the bucket count. Integers are exact decimal digits (64-bit
 * counts included), doubles the shortest round-trip decimals, non-finite
 * ones null. HISTD_JSON_PRETTY puts each member on its own indented line;
 * HISTD_JSON_SUMMARY leaves out the arrays. Returns 0, or HISTD_EIO if the
 * stream reports an error.
 */
enum { HISTD_JSON_PRETTY = 1, HISTD_JSON_SUMMARY = 2 };
int histd_write_json(FILE *f, const histd_result *res, unsigned flags);

/* The result schema (histd/schema.h) as JSON, what GET /v1/schema and
 * `sdh --list-fields` answer: {"fields": [{"name", "group" (or null),
 * "column" (the CSV and text name), "npz" (the npz entry), "type" (u64,
 * i64, f64, str, bool), "shape" (scalar, bins, edges, frames,
 * frames x bins, points, frames x points, pairs), "unit", "outputs"
 * (json, csv, text, npz, store), "help"}, ...]}, in the table's order. */
int histd_write_schema(FILE *f);

/*
 * histd_write_npz: the result as a NumPy .npz (a zip of stored .npy
 * entries): "n", ["n_b"], ["volume"], then "edges" (float64, buckets + 1),
 * "counts" (uint64, exact), ["weighted"], ["g", "coordination"] (float64)
 * and "below" (a uint64 scalar), or within a radius "radius", "within",
 * ["weighted_within"]; then "overflow" and "total" (uint64 scalars).
 * Streamed to f in 8 KiB chunks. Returns 0, or HISTD_EIO.
 */
int histd_write_npz(FILE *f, const histd_result *res);

/*
 * A pair list's file: the records a PAIRS run hands to histd_control.pairs
 * (histd_pair_file_put, with the file as its user), appended to fd through
 * a buffer, then read back by the writers (histd_result.pairs_fd). Memory
 * stays one buffer however long the list. A record is 16 bytes: i and j as
 * little-endian 32-bit indices, then d's binary64 bits; its frame is known
 * from the result's frame_pairs (the records come frame after frame, which
 * put checks). flush: the buffer written out and fd synced when `sync`; 0
 * or HISTD_EIO with a sentence.
 */
typedef struct histd_pair_file {
  int fd;
  uint64_t records;  /* put so far */
  uint64_t frame;    /* the last record's frame */
  uint64_t max_bytes; /* 0, or a size the file may not pass (HISTD_ETOOBIG) */
  size_t used;
  unsigned char buf[1 << 16];
} histd_pair_file;

void histd_pair_file_init(histd_pair_file *pf, int fd, uint64_t max_bytes);
int histd_pair_file_put(void *pair_file, const histd_pair_record *r, size_t n, char *msg,
                        size_t msglen);
int histd_pair_file_flush(histd_pair_file *pf, bool sync, char *msg, size_t msglen);

/* v as the shortest of %.15g, %.16g, %.17g that reads back as v, in the C
 * locale whatever the process's ("nan", "inf" as printf writes them). */
void histd_format_double(char *buf, size_t len, double v);

/* The whole stream fd into a malloc'd buffer with a NUL after its len
 * bytes; `what` names it in a failure's sentence (HISTD_EIO, HISTD_ENOMEM). */
int histd_read_fd(int fd, const char *what, char **out, size_t *len, char *msg, size_t msglen);
/* The whole file at path, likewise (HISTD_ENOENT where it does not exist). */
int histd_read_file(const char *path, char **out, size_t *len, char *msg, size_t msglen);

/* A whole decimal number (digits only, no sign, no blanks, within 64
 * bits): a command-line count or index. */
bool histd_parse_u64(const char *s, uint64_t *out);

/*
 * Stored arrays (words.c): runs of 8-byte words coded compactly, the
 * codec of every stored result's arrays. A part is `count` words at
 * `words` (uint64 counts, or the bits of float64 sums); a blob codes
 * parts one after another.
 */
typedef struct histd_words {
  void *words;
  uint64_t count;
} histd_words;
/* The parts' words -> a malloc'd blob (version byte first; runs of zeros
 * skipped; values as varints, or as their 8 bytes when fixed). 0 or
 * HISTD_ENOMEM. */
int histd_words_encode(const histd_words *parts, size_t nparts, bool fixed, unsigned char **blob,
                       size_t *len, char *msg, size_t msglen);
/* A blob (any version, or the raw words histd wrote before) into the
 * parts, which the caller allocated. 0, or HISTD_EIO with the words why
 * ("12 bytes for 100 values: it ends early") when the blob does not hold
 * exactly that many words. */
int histd_words_decode(const void *blob, size_t len, const histd_words *parts, size_t nparts,
                       char *msg, size_t msglen);
/* The most bytes a histogram's stored arrays can take, from its shape
 * before it runs: its buckets and frames, and at most `pairs` pairs. */
uint64_t histd_result_stored_bound(uint32_t buckets, uint64_t frames, uint64_t pairs,
                                   bool weighted, bool per_frame);

/*
 * A result as bytes, by the result schema (histd/schema.h; result_codec.c):
 * every field the schema keeps (HISTD_OUT_STORE) that the result has, in
 * two parts -- its head (the scalars: a few hundred bytes, what a summary
 * needs) and its arrays (coded by histd_words_*). The store keeps the two
 * in two columns, a shard's partial one after the other. decode: arrays
 * NULL reads the head alone (a summary: no arrays); a field the schema does
 * not know, a size that differs, an array of another length than the head
 * says, are HISTD_EIO with a sentence, never a result of zeros.
 */
int histd_result_encode(const histd_result *r, unsigned char **head, size_t *head_len,
                        unsigned char **arrays, size_t *arrays_len, char *msg, size_t msglen);
int histd_result_decode(const void *head, size_t head_len, const void *arrays, size_t arrays_len,
                        histd_result *r, char *msg, size_t msglen);

/*
 * A shard's result (a partial, histd_worker_run_shard) as bytes, for a
 * batch task's file or a cluster's database, and back: every field that
 * histd_result_add needs, bit for bit (little-endian hosts). encode: a
 * malloc'd buffer, 0 or HISTD_ENOMEM. decode: a result to free with
 * histd_result_free, or HISTD_EIO with a sentence on bytes that are not a
 * whole partial.
 */
int histd_partial_encode(const histd_result *r, unsigned char **out, size_t *len, char *msg,
                         size_t msglen);
int histd_partial_decode(const void *bytes, size_t len, histd_result *r, char *msg,
                         size_t msglen);

#ifdef __cplusplus
}
#endif
#endif /* HISTD_IO_H */
