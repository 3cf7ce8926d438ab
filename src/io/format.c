/*
 * format.c -- format names, detection (extension, Content-Type), and the
 * histd_parse / histd_parse_file front doors that dispatch to the parsers.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io_internal.h"

static const char *const format_names[HISTD_FORMAT_COUNT] = {"json", "csv", "xyz", "f64",
                                                              "f32", "lammps", "dcd", "xtc",
                                                              "trr", "netcdf", "gro", "pdb",
                                                              "sky-csv", "sky-json", "fits"};

const char *histd_format_name(histd_format f) {
  return (unsigned)f < HISTD_FORMAT_COUNT ? format_names[f] : "?";
}

int histd_format_parse(const char *name, histd_format *out) {
  if (name == NULL)
    return HISTD_EINVAL;
  for (int i = 0; i < HISTD_FORMAT_COUNT; i++) {
    if (strcasecmp(name, format_names[i]) == 0) {
      *out = (histd_format)i;
      return 0;
    }
  }
  static const struct {
    const char *name;
    histd_format f;
  } aliases[] = {{"bin", HISTD_FORMAT_F64}, {"nc", HISTD_FORMAT_NETCDF}};
  for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++) {
    if (strcasecmp(name, aliases[i].name) == 0) {
      *out = aliases[i].f;
      return 0;
    }
  }
  return HISTD_EINVAL;
}

int histd_format_from_path(const char *path, histd_format *out) {
  static const struct {
    const char *ext;
    histd_format f;
  } exts[] = {
      {"json", HISTD_FORMAT_JSON}, {"csv", HISTD_FORMAT_CSV}, {"tsv", HISTD_FORMAT_CSV},
      {"txt", HISTD_FORMAT_CSV},   {"xyz", HISTD_FORMAT_XYZ}, {"extxyz", HISTD_FORMAT_XYZ},
      {"f64", HISTD_FORMAT_F64},
      {"bin", HISTD_FORMAT_F64},   {"f32", HISTD_FORMAT_F32},
      {"lammpstrj", HISTD_FORMAT_LAMMPS}, {"dump", HISTD_FORMAT_LAMMPS},
      {"lammpsdump", HISTD_FORMAT_LAMMPS}, {"dcd", HISTD_FORMAT_DCD},
      {"xtc", HISTD_FORMAT_XTC},          {"trr", HISTD_FORMAT_TRR},
      {"nc", HISTD_FORMAT_NETCDF},        {"ncdf", HISTD_FORMAT_NETCDF},
      {"gro", HISTD_FORMAT_GRO},          {"pdb", HISTD_FORMAT_PDB},
      {"ent", HISTD_FORMAT_PDB},          {"fits", HISTD_FORMAT_FITS},
      {"fit", HISTD_FORMAT_FITS},         {"fts", HISTD_FORMAT_FITS},
  };
  if (path == NULL)
    return HISTD_EINVAL;
  const char *slash = strrchr(path, '/');
  const char *base = slash ? slash + 1 : path;
  const char *dot = strrchr(base, '.');
  if (dot == NULL || dot == base)
    return HISTD_EINVAL;
  for (size_t i = 0; i < sizeof exts / sizeof exts[0]; i++) {
    if (strcasecmp(dot + 1, exts[i].ext) == 0) {
      *out = exts[i].f;
      return 0;
    }
  }
  return HISTD_EINVAL;
}

/* Media types, a format's own first (the one messages name). */
static const struct {
  const char *type;
  histd_format f;
} types[] = {
    {"application/json", HISTD_FORMAT_JSON},
    {"text/csv", HISTD_FORMAT_CSV},
      {"application/csv", HISTD_FORMAT_CSV},
      {"text/plain", HISTD_FORMAT_CSV},
      {"text/tab-separated-values", HISTD_FORMAT_CSV},
      {"chemical/x-xyz", HISTD_FORMAT_XYZ},
      {"application/x-xyz", HISTD_FORMAT_XYZ},
      {"text/x-xyz", HISTD_FORMAT_XYZ},
        {"application/x-float64", HISTD_FORMAT_F64},
      {"application/octet-stream", HISTD_FORMAT_F64},
      {"application/x-float32", HISTD_FORMAT_F32},
      {"text/x-lammps-dump", HISTD_FORMAT_LAMMPS},
      {"application/x-xtc", HISTD_FORMAT_XTC},
      {"application/x-trr", HISTD_FORMAT_TRR},
      {"application/x-dcd", HISTD_FORMAT_DCD},
      {"application/x-netcdf", HISTD_FORMAT_NETCDF},
      {"application/x-gro", HISTD_FORMAT_GRO},
      {"chemical/x-pdb", HISTD_FORMAT_PDB},
      {"application/fits", HISTD_FORMAT_FITS},
      {"image/fits", HISTD_FORMAT_FITS},
};

void histd_format_names(char *buf, size_t len, const char *sep) {
  size_t at = 0;
  buf[0] = '\0';
  for (int i = 0; i < HISTD_FORMAT_COUNT && at < len; i++)
    at += (size_t)snprintf(buf + at, len - at, "%s%s", i ? sep : "", format_names[i]);
}

void histd_format_types(char *buf, size_t len) {
  size_t at = 0;
  buf[0] = '\0';
  for (int f = 0; f < HISTD_FORMAT_COUNT && at < len; f++)
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
      if (types[i].f == (histd_format)f) {
        at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? ", " : "", types[i].type);
        break;
      }
}

int histd_format_from_content_type(const char *ct, histd_format *out) {
  if (ct == NULL)
    return HISTD_EINVAL;
  while (*ct == ' ' || *ct == '\t')
    ct++;
  size_t len = strcspn(ct, ";");
  while (len > 0 && (ct[len - 1] == ' ' || ct[len - 1] == '\t'))
    len--;
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
    if (strlen(types[i].type) == len && strncasecmp(ct, types[i].type, len) == 0) {
      *out = types[i].f;
      return 0;
    }
  }
  /* Structured syntax suffix: application/vnd.example+json. */
  const char *slash = memchr(ct, '/', len);
  if (slash != NULL && len >= 5 && (size_t)(ct + len - slash) > 5 &&
      strncasecmp(ct + len - 5, "+json", 5) == 0) {
    *out = HISTD_FORMAT_JSON;
    return 0;
  }
  return HISTD_EINVAL;
}

int histd_parse(histd_format fmt, const char *buf, size_t len, size_t max_points,
                histd_dataset *out, char *msg, size_t msglen) {
  return histd_parse_with(fmt, buf, len, max_points, NULL, out, msg, msglen);
}

int histd_parse_with(histd_format fmt, const char *buf, size_t len, size_t max_points,
                     const histd_sky_options *sky, histd_dataset *out, char *msg,
                     size_t msglen) {
  if (out == NULL)
    return histd_fail(msg, msglen, HISTD_EINVAL, "no dataset to parse into");
  memset(out, 0, sizeof *out);
  if (buf == NULL && len > 0)
    return histd_fail(msg, msglen, HISTD_EINVAL, "no input buffer");
  static const char empty[1] = "";
  if (buf == NULL)
    buf = empty;
  switch (fmt) {
  case HISTD_FORMAT_JSON:
    return histd__parse_json(buf, len, max_points, out, msg, msglen);
  case HISTD_FORMAT_CSV:
    return histd__parse_csv(buf, len, max_points, out, msg, msglen);
  case HISTD_FORMAT_XYZ:
    return histd__parse_xyz(buf, len, max_points, out, msg, msglen);
  case HISTD_FORMAT_F64:
    return histd__parse_raw(buf, len, false, max_points, out, msg, msglen);
  case HISTD_FORMAT_F32:
    return histd__parse_raw(buf, len, true, max_points, out, msg, msglen);
  case HISTD_FORMAT_LAMMPS:
    return histd__parse_lammps(buf, len, max_points, out, msg, msglen);
  case HISTD_FORMAT_DCD:
    return histd__parse_dcd(buf, len, max_points, out, msg, msglen);
  case HISTD_FORMAT_XTC:
    return histd__parse_xtc(buf, len, max_points, out, msg, msglen);
  case HISTD_FORMAT_TRR:
    return histd__parse_trr(buf, len, max_points, out, msg, msglen);
  case HISTD_FORMAT_NETCDF:
    return histd__parse_netcdf(buf, len, max_points, out, msg, msglen);
  case HISTD_FORMAT_GRO:
    return histd__parse_gro(buf, len, max_points, out, msg, msglen);
  case HISTD_FORMAT_PDB:
    return histd__parse_pdb(buf, len, max_points, out, msg, msglen);
  case HISTD_FORMAT_SKY_CSV:
    return histd__parse_sky_csv(buf, len, max_points, sky, out, msg, msglen);
  case HISTD_FORMAT_SKY_JSON:
    return histd__parse_sky_json(buf, len, max_points, sky, out, msg, msglen);
  case HISTD_FORMAT_FITS:
    return histd__parse_fits(buf, len, max_points, sky, out, msg, msglen);
  }
  return histd_fail(msg, msglen, HISTD_EINVAL, "unknown input format %d", (int)fmt);
}

int histd_read_fd(int fd, const char *what, char **out, size_t *outlen, char *msg,
                  size_t msglen) {
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap + 1);
  if (buf == NULL)
    return histd_fail(msg, msglen, HISTD_ENOMEM, "%s: out of memory", what);
  for (;;) {
    if (len == cap) {
      char *b = cap > SIZE_MAX / 2 - 1 ? NULL : realloc(buf, cap * 2 + 1);
      if (b == NULL) {
        free(buf);
        return histd_fail(msg, msglen, HISTD_ENOMEM, "%s: out of memory", what);
      }
      buf = b;
      cap *= 2;
    }
    ssize_t r = read(fd, buf + len, cap - len);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      int e = errno;
      free(buf);
      return histd_fail(msg, msglen, HISTD_EIO, "cannot read %s: %s", what, strerror(e));
    }
    if (r == 0)
      break;
    len += (size_t)r;
  }
  buf[len] = '\0';
  *out = buf;
  *outlen = len;
  return 0;
}

int histd_read_file(const char *path, char **out, size_t *len, char *msg, size_t msglen) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    return histd_fail(msg, msglen, e == ENOENT ? HISTD_ENOENT : HISTD_EIO, "cannot open %s: %s",
                      path, strerror(e));
  }
  int rc = histd_read_fd(fd, path, out, len, msg, msglen);
  close(fd);
  return rc;
}

int histd_parse_file(const char *path, histd_format fmt, size_t max_points,
                     histd_dataset *out, char *msg, size_t msglen) {
  return histd_parse_file_with(path, fmt, max_points, NULL, out, msg, msglen);
}

int histd_parse_file_with(const char *path, histd_format fmt, size_t max_points,
                          const histd_sky_options *sky, histd_dataset *out, char *msg,
                          size_t msglen) {
  if (out == NULL || path == NULL)
    return histd_fail(msg, msglen, HISTD_EINVAL, "no file or dataset given");
  memset(out, 0, sizeof *out);
  bool is_stdin = strcmp(path, "-") == 0;
  int fd = is_stdin ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    return histd_fail(msg, msglen, e == ENOENT ? HISTD_ENOENT : HISTD_EIO,
                      "cannot open '%s': %s", path, strerror(e));
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    if (!is_stdin)
      close(fd);
    return histd_fail(msg, msglen, HISTD_EIO, "cannot stat '%s': %s", path, strerror(e));
  }
  if (S_ISDIR(st.st_mode)) {
    if (!is_stdin)
      close(fd);
    return histd_fail(msg, msglen, HISTD_EIO, "'%s' is a directory, not a file", path);
  }
  int rc;
  if (S_ISREG(st.st_mode) && st.st_size > 0) {
    /* Mapped: the file's pages are the page cache's, not our heap, so the
     * parser's peak memory is its dataset. */
    size_t len = (size_t)st.st_size;
    void *map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map != MAP_FAILED) {
      madvise(map, len, MADV_SEQUENTIAL);
      rc = histd_parse_with(fmt, map, len, max_points, sky, out, msg, msglen);
      munmap(map, len);
      if (!is_stdin)
        close(fd);
      return rc;
    }
  }
  char *buf = NULL;
  size_t len = 0;
  rc = histd_read_fd(fd, is_stdin ? "standard input" : path, &buf, &len, msg, msglen);
  if (!is_stdin)
    close(fd);
  if (rc != 0)
    return rc;
  rc = histd_parse_with(fmt, buf, len, max_points, sky, out, msg, msglen);
  free(buf);
  return rc;
}
