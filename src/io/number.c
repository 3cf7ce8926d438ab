/*
 * number.c -- decimal numbers out of unterminated buffers, correctly rounded.
 *
 * The grammar is checked here, byte by byte, so that strtod only ever sees a
 * token it consumes whole: no hex floats, no "inf"/"nan" words, no leading
 * blanks, no locale surprises (strtod_l with the C locale). Tokens are
 * copied into a small stack buffer (heap for absurdly long ones) because
 * strtod wants a NUL-terminated string and the input buffer is not one.
 *
 * Before strtod, Clinger's fast path: when the decimal significand m has at
 * most 19 digits and fits in 53 bits and the exponent e is within +-22,
 * both m and 10^|e| are exact doubles, so the one IEEE multiplication or
 * division m*10^e, m/10^-e is the correctly rounded result (round to
 * nearest, no excess precision: FLT_EVAL_METHOD == 0). Numbers written
 * with a few decimals ("12.345") take it; 17-digit ones go to strtod.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <errno.h>
#include <unistd.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "io_internal.h"

static inline bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* Length of the longest prefix of s[0..len) that is a number in grammar g,
 * or 0 if none; the caller compares it with len. */
static size_t number_syntax(const char *s, size_t len, histd__num_grammar g) {
  size_t i = 0;
  if (i < len && (s[i] == '-' || (g == HISTD__NUM_TEXT && s[i] == '+')))
    i++;
  size_t int_start = i;
  while (i < len && is_digit(s[i]))
    i++;
  size_t int_digits = i - int_start;
  if (g == HISTD__NUM_JSON) {
    if (int_digits == 0 || (int_digits > 1 && s[int_start] == '0'))
      return 0;
  }
  size_t frac_digits = 0;
  if (i < len && s[i] == '.') {
    i++;
    size_t f = i;
    while (i < len && is_digit(s[i]))
      i++;
    frac_digits = i - f;
    if (g == HISTD__NUM_JSON && frac_digits == 0)
      return 0;
  }
  if (int_digits == 0 && frac_digits == 0)
    return 0;
  if (i < len && (s[i] == 'e' || s[i] == 'E')) {
    i++;
    if (i < len && (s[i] == '+' || s[i] == '-'))
      i++;
    size_t e = i;
    while (i < len && is_digit(s[i]))
      i++;
    if (i == e)
      return 0;
  }
  return i;
}

static bool word_ieq(const char *s, size_t len, const char *word) {
  size_t wl = strlen(word);
  if (len != wl)
    return false;
  for (size_t i = 0; i < len; i++) {
    char c = s[i];
    if (c >= 'A' && c <= 'Z')
      c = (char)(c - 'A' + 'a');
    if (c != word[i])
      return false;
  }
  return true;
}

static bool nonfinite_word(const char *s, size_t len) {
  if (len > 0 && (s[0] == '+' || s[0] == '-')) {
    s++;
    len--;
  }
  return word_ieq(s, len, "nan") || word_ieq(s, len, "inf") ||
         word_ieq(s, len, "infinity");
}

bool histd_parse_u64(const char *s, uint64_t *out) {
  if (s == NULL || *s < '0' || *s > '9')
    return false;
  errno = 0;
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno != 0 || *end != '\0')
    return false;
  *out = (uint64_t)v;
  return true;
}

bool histd__looks_numeric(const char *tok, size_t len) {
  return (len > 0 && number_syntax(tok, len, HISTD__NUM_TEXT) == len) ||
         nonfinite_word(tok, len);
}

#if FLT_EVAL_METHOD == 0
/* Clinger's fast path on a token whose syntax is already checked; false
 * when it does not apply. */
static bool fast_path(const char *s, size_t len, double *out) {
  static const double pow10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                   1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                   1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  size_t i = 0;
  bool neg = false;
  if (s[i] == '-' || s[i] == '+')
    neg = s[i++] == '-';
  uint64_t m = 0;
  int digits = 0;
  long e10 = 0;
  for (; i < len && is_digit(s[i]); i++) {
    if (m == 0 && s[i] == '0')
      continue;
    if (++digits > 19)
      return false;
    m = m * 10 + (uint64_t)(s[i] - '0');
  }
  if (i < len && s[i] == '.') {
    for (i++; i < len && is_digit(s[i]); i++) {
      e10--;
      if (m == 0 && s[i] == '0')
        continue;
      if (++digits > 19)
        return false;
      m = m * 10 + (uint64_t)(s[i] - '0');
    }
  }
  if (i < len && (s[i] == 'e' || s[i] == 'E')) {
    i++;
    bool eneg = false;
    if (s[i] == '-' || s[i] == '+')
      eneg = s[i++] == '-';
    long e = 0;
    for (; i < len; i++)
      if (e < 100000)
        e = e * 10 + (s[i] - '0');
    e10 += eneg ? -e : e;
  }
  double v;
  if (m == 0)
    v = 0.0;
  else if (m > (UINT64_C(1) << 53) || e10 < -22 || e10 > 22)
    return false;
  else
    v = e10 < 0 ? (double)m / pow10[-e10] : (double)m * pow10[e10];
  *out = neg ? -v : v;
  return true;
}
#endif

histd__num_status histd__parse_number(const char *tok, size_t len, histd__num_grammar g,
                                      locale_t loc, double *out) {
  if (len == 0 || number_syntax(tok, len, g) != len)
    return nonfinite_word(tok, len) ? HISTD__NUM_NONFINITE : HISTD__NUM_SYNTAX;
#if FLT_EVAL_METHOD == 0
  if (fast_path(tok, len, out))
    return HISTD__NUM_OK;
#endif
  char small[128];
  char *s = small;
  if (len >= sizeof small) {
    s = malloc(len + 1);
    if (s == NULL)
      return HISTD__NUM_NOMEM;
  }
  memcpy(s, tok, len);
  s[len] = '\0';
  char *end;
  double v = strtod_l(s, &end, loc);
  bool whole = (size_t)(end - s) == len;
  if (s != small)
    free(s);
  if (!whole)
    return HISTD__NUM_SYNTAX; /* cannot happen: the grammar is strtod's subset */
  if (!isfinite(v))
    return HISTD__NUM_RANGE;
  *out = v;
  return HISTD__NUM_OK;
}

void histd__quote(char *dst, size_t dstlen, const char *tok, size_t len) {
  if (dstlen == 0)
    return;
  size_t max = 40, o = 0;
  for (size_t i = 0; i < len && i < max && o + 1 < dstlen; i++) {
    unsigned char c = (unsigned char)tok[i];
    dst[o++] = (c >= 0x20 && c < 0x7f && c != '\'' && c != '"' && c != '\\') ? (char)c : '?';
  }
  if (len > max) {
    for (int k = 0; k < 3 && o + 1 < dstlen; k++)
      dst[o++] = '.';
  }
  dst[o] = '\0';
}

int histd__c_locale(locale_t *out, char *msg, size_t msglen) {
  locale_t loc = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
  if (loc == (locale_t)0)
    return histd_fail(msg, msglen, HISTD_ENOMEM, "cannot create the C locale for parsing numbers");
  *out = loc;
  return 0;
}

size_t histd__skip_bom(const char *buf, size_t len) {
  return (len >= 3 && (unsigned char)buf[0] == 0xEF && (unsigned char)buf[1] == 0xBB &&
          (unsigned char)buf[2] == 0xBF)
             ? 3
             : 0;
}

/* ---- datasets under construction --------------------------------------- */

/*
 * The arena: while histd_parse_to_fd runs on this thread, a dataset under
 * construction keeps its 3 * cap doubles in a shared mapping of that file
 * (grown with ftruncate and mremap) instead of the heap, so that a big
 * trajectory's points go to disk through the page cache and the parse's
 * own memory stays what its format needs beside them.
 */
static _Thread_local int arena_fd = -1;
static _Thread_local void *arena_map; /* the mapping now, to drop it if the parse fails */
static _Thread_local size_t arena_bytes;

/* The arena's file and mapping at old (old_bytes; NULL: none) resized to
 * bytes. */
static double *arena_resize(double *old, size_t old_bytes, size_t bytes) {
  if (ftruncate(arena_fd, (off_t)bytes) != 0)
    return NULL;
  void *p = old == NULL ? mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, arena_fd, 0)
                        : mremap(old, old_bytes, bytes, MREMAP_MAYMOVE);
  if (p == MAP_FAILED)
    return NULL;
  arena_map = p;
  arena_bytes = bytes;
  return p;
}

/* The block of 3 * cap doubles at old (3 * old_cap of them; NULL: none),
 * resized to 3 * cap: realloc, or the arena's file and mapping. */
static double *block_resize(double *old, size_t old_cap, size_t cap) {
  const size_t bytes = (cap ? cap : 1) * 3 * sizeof(double);
  if (arena_fd < 0)
    return realloc(old, bytes);
  return arena_resize(old, (old_cap ? old_cap : 1) * 3 * sizeof(double), bytes);
}

/* Room for ds's weights: beside its points in one block (x, y, z, w), in
 * the arena's file where the points are the arena's -- the payload's
 * layout, whose tail starts with the weights at 3n. */
static int weights_room(histd_dataset *ds, char *msg, size_t msglen) {
  if (!ds->borrowed || arena_fd < 0)
    return histd_dataset_alloc_weights(ds, msg, msglen);
  const size_t n = ds->n ? ds->n : 1;
  double *base = arena_resize(ds->x, 3 * n * sizeof(double), 4 * n * sizeof(double));
  if (base == NULL)
    return histd_fail(msg, msglen, HISTD_EIO, "cannot map the weights of %zu points on disk: %s",
                      ds->n, strerror(errno));
  ds->x = base;
  ds->y = base + ds->n;
  ds->z = base + 2 * ds->n;
  ds->w = base + 3 * ds->n;
  return 0;
}

int histd__ds_reserve(histd_dataset *ds, size_t cap, char *msg, size_t msglen) {
  if (arena_fd < 0)
    return histd_dataset_alloc(ds, cap, msg, msglen);
  memset(ds, 0, sizeof *ds);
  double *base = block_resize(NULL, 0, cap);
  if (base == NULL)
    return histd_fail(msg, msglen, HISTD_EIO, "cannot map %zu points on disk: %s", cap,
                      strerror(errno));
  ds->x = base;
  ds->y = base + cap;
  ds->z = base + 2 * cap;
  ds->n = cap;
  ds->borrowed = true; /* the arena's: histd_parse_to_fd's caller unmaps it */
  return 0;
}

int histd_parse_to_fd(histd_format fmt, const char *buf, size_t len, size_t max_points, int fd,
                      histd_dataset *out, char *msg, size_t msglen) {
  return histd_parse_to_fd_with(fmt, buf, len, max_points, NULL, fd, out, msg, msglen);
}

int histd_parse_to_fd_with(histd_format fmt, const char *buf, size_t len, size_t max_points,
                           const histd_sky_options *sky, int fd, histd_dataset *out,
                           char *msg, size_t msglen) {
  arena_fd = fd;
  arena_map = NULL;
  int rc = histd_parse_with(fmt, buf, len, max_points, sky, out, msg, msglen);
  if (rc != 0 && arena_map != NULL) /* the dataset is gone; its mapping with it */
    munmap(arena_map, arena_bytes);
  arena_fd = -1;
  arena_map = NULL;
  return rc;
}

void histd_parse_unmap(histd_dataset *ds) {
  if (ds->x != NULL && ds->borrowed) /* x, y, z (and w: weights_room) */
    munmap(ds->x, (ds->n ? ds->n : 1) * (ds->w != NULL ? 4 : 3) * sizeof(double));
  ds->x = ds->y = ds->z = NULL;
  ds->borrowed = false;
  histd_dataset_free(ds);
}

int histd__ds_complete(histd_dataset *ds, size_t cap, size_t n, char *msg, size_t msglen) {
  if (n < cap) {
    double *base = ds->x;
    memmove(base + n, base + cap, n * sizeof(double));
    memmove(base + 2 * n, base + 2 * cap, n * sizeof(double));
    double *shrunk = block_resize(base, cap, n);
    if (shrunk != NULL)
      base = shrunk;
    ds->x = base;
    ds->y = base + n;
    ds->z = base + 2 * n;
    ds->n = n;
  }
  int rc = histd_dataset_finish(ds, msg, msglen);
  if (rc != 0) {
    histd_dataset_free(ds);
    return HISTD_EPARSE;
  }
  return 0;
}

/* Asks for transparent huge pages over the whole 2 MB pages of a large
 * block (8 MB or more): a dataset of hundreds of MB is then faulted in 2 MB
 * at a time, not 4 KB (on a VM the first touch of a page costs
 * microseconds: 32 million points of an XTC took 11-16 s to parse on the
 * first run here, 7-9 s with this advice, 1.2 s once the kernel has free
 * huge pages). Advice only: where THP is off or "never", nothing changes. */
static void huge_pages(void *p, size_t bytes) {
#ifdef MADV_HUGEPAGE
  const size_t huge = (size_t)2 << 20;
  if (bytes < 4 * huge)
    return;
  uintptr_t lo = ((uintptr_t)p + huge - 1) & ~(uintptr_t)(huge - 1);
  uintptr_t hi = ((uintptr_t)p + bytes) & ~(uintptr_t)(huge - 1);
  if (hi > lo)
    madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#else
  (void)p;
  (void)bytes;
#endif
}

int histd__ds_grow(histd_dataset *ds, size_t *cap, size_t need, double **ws, char *msg,
                   size_t msglen) {
  if (need <= *cap)
    return 0;
  size_t old = *cap, want = old > SIZE_MAX / 2 ? need : 2 * old;
  if (want < need)
    want = need;
  if (want > SIZE_MAX / (3 * sizeof(double)))
    return histd_fail(msg, msglen, HISTD_ETOOBIG, "%zu points do not fit in memory", want);
  double *base = block_resize(ds->x, old, want);
  if (base == NULL)
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %zu points", want);
  if (arena_fd < 0)
    huge_pages(base, 3 * want * sizeof(double));
  memmove(base + 2 * want, base + 2 * old, old * sizeof(double)); /* z, then y */
  memmove(base + want, base + old, old * sizeof(double));
  ds->x = base;
  ds->y = base + want;
  ds->z = base + 2 * want;
  ds->n = want;
  if (ws != NULL && *ws != NULL) {
    double *w = realloc(*ws, want * sizeof(double));
    if (w == NULL)
      return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %zu weights", want);
    *ws = w;
  }
  *cap = want;
  return 0;
}

int histd__ds_complete_all(histd_dataset *ds, size_t cap, size_t n, const double *ws,
                           size_t frames, const size_t *counts, const histd_box *boxes,
                           char *msg, size_t msglen) {
  int rc = histd__ds_complete(ds, cap, n, msg, msglen);
  if (rc == 0 && ws != NULL && (rc = weights_room(ds, msg, msglen)) == 0)
    memcpy(ds->w, ws, n * sizeof *ws);
  if (rc == 0 && frames > 0)
    rc = histd_dataset_set_frames(ds, frames, counts, boxes, msg, msglen);
  if (rc != 0)
    histd_dataset_free(ds);
  return rc;
}

int histd__frames_add(histd__frames *t, size_t n, const histd_box *box, char *msg,
                      size_t msglen) {
  char why[256];
  if (histd_box_check(box, why, sizeof why) != 0)
    return histd_fail(msg, msglen, HISTD_EPARSE, "frame %zu: %s", t->count + 1, why);
  if (t->count == t->cap) {
    size_t cap = t->cap ? 2 * t->cap : 4;
    size_t *c = realloc(t->counts, cap * sizeof *c);
    if (c != NULL)
      t->counts = c;
    histd_box *b = c ? realloc(t->boxes, cap * sizeof *b) : NULL;
    if (b == NULL)
      return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %zu frames", cap);
    t->boxes = b;
    t->cap = cap;
  }
  t->counts[t->count] = n;
  t->boxes[t->count++] = *box;
  return 0;
}

void histd__frames_free(histd__frames *t) {
  free(t->counts);
  free(t->boxes);
  memset(t, 0, sizeof *t);
}

int histd__box_from_vectors(const double v[9], histd_box *box) {
  if (v[1] != 0 || v[2] != 0 || v[5] != 0)
    return HISTD__BOX_NOT_LOWER;
  if (!(v[0] > 0 && v[4] > 0 && v[8] > 0))
    return HISTD__BOX_NOT_POSITIVE;
  *box = (histd_box){v[3] != 0 || v[6] != 0 || v[7] != 0 ? HISTD_BOX_TRICLINIC : HISTD_BOX_ORTHO,
                     v[0], v[3], v[4], v[6], v[7], v[8]};
  return 0;
}

void histd__format_double(char *buf, size_t buflen, double v, locale_t loc) {
  if (buf == NULL || buflen == 0)
    return;
  /* Whole numbers below 10^15 (bucket edges of a whole width, say) print
   * as "%.15g" would, without the float formatting and the round trip. */
  if (v == floor(v) && fabs(v) < 1e15 && !(v == 0 && signbit(v))) {
    snprintf(buf, buflen, "%lld", (long long)v);
    return;
  }
  for (int prec = 15; prec <= 17; prec++) {
    snprintf(buf, buflen, "%.*g", prec, v);
    if (prec == 17 || strtod_l(buf, NULL, loc) == v)
      return;
  }
}

void histd_format_double(char *buf, size_t len, double v) {
  locale_t loc;
  if (histd__c_locale(&loc, NULL, 0) != 0) {
    snprintf(buf, len, "%.17g", v);
    return;
  }
  histd__format_double(buf, len, v, loc);
  freelocale(loc);
}
