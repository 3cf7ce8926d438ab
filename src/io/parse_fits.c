/*
 * parse_fits.c -- a sky catalogue in a FITS file (.fits), as surveys ship
 * them: the first table extension (BINTABLE, or an ASCII TABLE), read from
 * the buffer itself with cfitsio (fits_open_memfile, read-only). The
 * columns are found by name (io.h: ra, dec, dist or z, w, region; case-
 * insensitive), each must be a number a row (repeat 1; cfitsio converts
 * every numeric type and applies TSCAL/TZERO), and each value passes the
 * checks of every sky catalogue (sky.c), with a null (TNULL, or a float's
 * NaN) an error naming the row. The header's row count is checked against
 * the input's size before anything is allocated. One mutex holds every
 * call into cfitsio (whether it was built reentrant or not).
 *
 * Built without cfitsio (-Dcfitsio=disabled, or libcfitsio missing), the
 * format still exists and parsing says so.
 */
#include "io_internal.h"

#ifndef HISTD_HAVE_CFITSIO

int histd__parse_fits(const char *buf, size_t len, size_t max_points,
                      const histd_sky_options *opt, histd_dataset *out, char *msg,
                      size_t msglen) {
  (void)buf, (void)len, (void)max_points, (void)opt, (void)out;
  return histd_fail(msg, msglen, HISTD_EINVAL, "histd was built without FITS support");
}

#else

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fitsio.h>

static pthread_mutex_t fits_lock = PTHREAD_MUTEX_INITIALIZER;

/* cfitsio's sentence for status, its message stack cleared. */
static int fits_error(int status, const char *what, char *msg, size_t msglen) {
  char text[FLEN_STATUS];
  fits_get_errstatus(status, text);
  fits_clear_errmsg();
  return histd_fail(msg, msglen, HISTD_EPARSE, "%s: %s (cfitsio status %d)", what, text,
                    status);
}

/* Moves f to the first table extension. */
static int first_table(fitsfile *f, char *msg, size_t msglen) {
  int type = IMAGE_HDU, status = 0;
  for (int hdu = 1; type != BINARY_TBL && type != ASCII_TBL; hdu++) {
    if (fits_movrel_hdu(f, 1, &type, &status) != 0) {
      if (status == END_OF_FILE) {
        fits_clear_errmsg();
        return histd_fail(msg, msglen, HISTD_EPARSE, "the FITS file has no table extension "
                          "(a sky catalogue is a BINTABLE with ra, dec, and dist or z)");
      }
      char what[48];
      snprintf(what, sizeof what, "FITS HDU %d", hdu + 1);
      return fits_error(status, what, msg, msglen);
    }
  }
  return 0;
}

/* The columns of the table into col[] (their numbers from 1; 0 absent). */
static int find_columns(fitsfile *f, int col[HISTD__SKY_COLUMNS], char *msg, size_t msglen) {
  size_t found[HISTD__SKY_COLUMNS];
  for (int c = 0; c < HISTD__SKY_COLUMNS; c++) {
    col[c] = 0;
    found[c] = SIZE_MAX;
    const char *names[2] = {histd__sky_column_name(c), c == HISTD__SKY_W ? "weight" : NULL};
    for (int k = 0; k < 2 && names[k] != NULL; k++) {
      int status = 0, num = 0;
      char name[16];
      snprintf(name, sizeof name, "%s", names[k]);
      fits_get_colnum(f, CASEINSEN, name, &num, &status);
      if (status == COL_NOT_FOUND) {
        fits_clear_errmsg();
        continue;
      }
      if (status == COL_NOT_UNIQUE || (status == 0 && col[c] != 0)) {
        fits_clear_errmsg();
        return histd_fail(msg, msglen, HISTD_EPARSE, "the FITS table has more than one column "
                          "named %s%s", histd__sky_column_name(c),
                          c == HISTD__SKY_W ? " (w and weight are the same column)" : "");
      }
      if (status != 0)
        return fits_error(status, "the FITS table's columns", msg, msglen);
      col[c] = num;
      found[c] = (size_t)num;
    }
  }
  int rc = histd__sky_header_check(found, "the FITS table", msg, msglen);
  for (int c = 0; rc == 0 && c < HISTD__SKY_COLUMNS; c++) {
    if (col[c] == 0)
      continue;
    int type = 0, status = 0;
    long repeat = 0, width = 0;
    if (fits_get_coltype(f, col[c], &type, &repeat, &width, &status) != 0)
      return fits_error(status, "the FITS table's columns", msg, msglen);
    if (type == TSTRING || type == TLOGICAL || type == TBIT || type == TCOMPLEX ||
        type == TDBLCOMPLEX || type < 0)
      rc = histd_fail(msg, msglen, HISTD_EPARSE, "the FITS column %s does not hold real numbers "
                      "(its type code is %d)", histd__sky_column_name(c), type);
    else if (repeat != 1)
      rc = histd_fail(msg, msglen, HISTD_EPARSE, "the FITS column %s holds %ld values a row: a "
                      "sky catalogue's columns hold one", histd__sky_column_name(c), repeat);
  }
  return rc;
}

static int read_table(fitsfile *f, size_t len, size_t max_points, histd__sky_cols *cols,
                      char *msg, size_t msglen) {
  int col[HISTD__SKY_COLUMNS], status = 0;
  int rc = find_columns(f, col, msg, msglen);
  if (rc != 0)
    return rc;
  LONGLONG rows = 0, width = 0, head = 0, data = 0, end = 0;
  if (fits_get_num_rowsll(f, &rows, &status) != 0 ||
      fits_read_key(f, TLONGLONG, "NAXIS1", &width, NULL, &status) != 0 ||
      fits_get_hduaddrll(f, &head, &data, &end, &status) != 0)
    return fits_error(status, "the FITS table's size", msg, msglen);
  /* the rows must lie within the input: cfitsio reads a memory file as far
   * as its header says */
  if (rows < 0 || width < 1 || data < 0 || (unsigned long long)data > len ||
      (unsigned long long)rows > (len - (unsigned long long)data) / (unsigned long long)width)
    return histd_fail(msg, msglen, HISTD_EPARSE, "the FITS table says it has %lld rows of %lld "
                      "bytes, more than the %zu bytes of the file hold", rows, width, len);
  if (max_points != 0 && (unsigned long long)rows > max_points)
    return histd_fail(msg, msglen, HISTD_ETOOBIG, "the FITS table has %lld rows, more than %zu "
                      "points, the limit for this input", rows, max_points);
  const size_t n = (size_t)rows;
  bool want[HISTD__SKY_COLUMNS];
  for (int c = 0; c < HISTD__SKY_COLUMNS; c++)
    want[c] = col[c] != 0;
  if ((rc = histd__sky_cols_alloc(cols, n, want, msg, msglen)) != 0)
    return rc;
  char *nulls = malloc(n ? n : 1);
  if (nulls == NULL)
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %zu rows", n);
  for (int c = 0; rc == 0 && c < HISTD__SKY_COLUMNS; c++) {
    if (col[c] == 0 || n == 0)
      continue;
    int anynul = 0;
    if (fits_read_colnull(f, TDOUBLE, col[c], 1, 1, (LONGLONG)n, cols->v[c], nulls, &anynul,
                          &status) != 0) {
      char what[48];
      snprintf(what, sizeof what, "the FITS column %s", histd__sky_column_name(c));
      rc = fits_error(status, what, msg, msglen);
      break;
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
      const char *why = histd__sky_bad_value(c, cols->v[c][i]);
      if (nulls[i])
        rc = histd_fail(msg, msglen, HISTD_EPARSE, "row %zu: %s is null (undefined, or NaN)",
                        i + 1, histd__sky_column_name(c));
      else if (why != NULL)
        rc = histd_fail(msg, msglen, HISTD_EPARSE, "row %zu: %s %.15g %s", i + 1,
                        histd__sky_column_name(c), cols->v[c][i], why);
    }
  }
  free(nulls);
  cols->n = n;
  return rc;
}

int histd__parse_fits(const char *buf, size_t len, size_t max_points,
                      const histd_sky_options *opt, histd_dataset *out, char *msg,
                      size_t msglen) {
  memset(out, 0, sizeof *out);
  if (len < 2880 || memcmp(buf, "SIMPLE  =", 9) != 0)
    return histd_fail(msg, msglen, HISTD_EPARSE, "not a FITS file: it does not begin with a "
                      "2880-byte header whose first card is SIMPLE =");
  histd__sky_cols cols;
  memset(&cols, 0, sizeof cols);
  pthread_mutex_lock(&fits_lock);
  fitsfile *f = NULL;
  int status = 0, rc;
  void *mem = (void *)buf; /* read-only: cfitsio does not write it */
  size_t size = len;
  if (fits_open_memfile(&f, "upload.fits", READONLY, &mem, &size, 0, NULL, &status) != 0) {
    rc = fits_error(status, "the FITS file cannot be opened", msg, msglen);
  } else {
    rc = first_table(f, msg, msglen);
    if (rc == 0)
      rc = read_table(f, len, max_points, &cols, msg, msglen);
    status = 0;
    fits_close_file(f, &status);
    fits_clear_errmsg();
  }
  pthread_mutex_unlock(&fits_lock);
  if (rc != 0) {
    histd__sky_cols_free(&cols);
    return rc;
  }
  return histd__sky_finish(&cols, opt, out, msg, msglen);
}

#endif
