/*
 * pair_file.c -- a pair list's records on their way to a file (io.h): the
 * control's pairs callback of a PAIRS run appends them through one
 * buffer, so a list of any length takes that buffer's memory and no more.
 * The file holds a record of 16 bytes a pair (io.h), frame after frame as
 * the engine hands them out, which the writers read back in batches
 * (histd_pairs_read).
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "io_internal.h"

void histd_pair_file_init(histd_pair_file *pf, int fd, uint64_t max_bytes) {
  pf->fd = fd;
  pf->records = 0;
  pf->frame = 0;
  pf->max_bytes = max_bytes;
  pf->used = 0;
}

static int drain(histd_pair_file *pf, char *msg, size_t msglen) {
  size_t off = 0;
  while (off < pf->used) {
    ssize_t k = write(pf->fd, pf->buf + off, pf->used - off);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return histd_fail(msg, msglen, HISTD_EIO, "cannot write the pair list: %s",
                        k < 0 ? strerror(errno) : "no room");
    off += (size_t)k;
  }
  pf->used = 0;
  return 0;
}

int histd_pair_file_put(void *pair_file, const histd_pair_record *r, size_t n, char *msg,
                        size_t msglen) {
  histd_pair_file *pf = pair_file;
  if (pf->max_bytes != 0 && (pf->records + n) * HISTD_PAIR_BYTES > pf->max_bytes)
    return histd_fail(msg, msglen, HISTD_ETOOBIG,
                      "the pair list passed %llu bytes, the most a result may take",
                      (unsigned long long)pf->max_bytes);
  for (size_t k = 0; k < n; k++) {
    if (r[k].frame < pf->frame || r[k].i > UINT32_MAX || r[k].j > UINT32_MAX)
      return histd_fail(msg, msglen, HISTD_EINVAL,
                        "a pair record out of order or past 32-bit indices (frame %llu, i %llu, "
                        "j %llu)", (unsigned long long)r[k].frame, (unsigned long long)r[k].i,
                        (unsigned long long)r[k].j);
    pf->frame = r[k].frame;
    if (pf->used + HISTD_PAIR_BYTES > sizeof pf->buf) {
      int rc = drain(pf, msg, msglen);
      if (rc != 0)
        return rc;
    }
    const uint32_t i = (uint32_t)r[k].i, j = (uint32_t)r[k].j;
    memcpy(pf->buf + pf->used, &i, 4);
    memcpy(pf->buf + pf->used + 4, &j, 4);
    memcpy(pf->buf + pf->used + 8, &r[k].d, 8);
    pf->used += HISTD_PAIR_BYTES;
  }
  pf->records += n;
  return 0;
}

int histd_pair_file_flush(histd_pair_file *pf, bool sync, char *msg, size_t msglen) {
  int rc = drain(pf, msg, msglen);
  if (rc == 0 && sync && fsync(pf->fd) != 0)
    rc = histd_fail(msg, msglen, HISTD_EIO, "cannot sync the pair list: %s", strerror(errno));
  return rc;
}
