/*
 * shared_store.c -- the cluster's shared store: how a dataset's payload
 * gets from the host that took the upload to the hosts that compute on it.
 * This file is the interface and the directory backend; s3.c is the S3
 * backend.
 *
 * What is stored is the payload file store.c writes, byte for byte, under
 * the dataset's content address: "<id>.f64". A content-addressed object
 * never changes, which is what makes a shared store simple: a put is
 * idempotent (whoever gets there first wins, and both write the same
 * bytes), readers never see an object change under them, and a cached
 * copy never goes stale -- it can only be incomplete or damaged, and both
 * are things a reader can check. Publishing is one-way: a put becomes
 * visible all at once or not at all, and a delete is the only thing that
 * takes it away.
 *
 * The directory backend is for a file system every node mounts (NFS,
 * Lustre, GPFS). A put is store.c's classic atomic write across the
 * mount: a temp file named for this host, this process and a counter (two
 * hosts never share a temp name), the bytes, fsync, rename onto
 * <dir>/<id>.f64 (atomic within one directory on all three), fsync of the
 * directory. A fetch hands back the shared file itself: the page cache of
 * the node and the file system's own client caching do what a block cache
 * would. There are no per-block hashes: a shared file damaged in place
 * keeps its size and is served as it is; a caller that needs to know
 * hashes the file against the id, as store.c does for local payloads.
 * A file of the wrong size (a copy torn by a client that lost its mount)
 * is replaced by the next put. Temp files left by a crashed host are not
 * swept: from another host nobody can tell a dead writer from a slow one.
 *
 * The S3 backend is for object storage, where a file system is not to be
 * had, or is the bottleneck: nodes fetch only the blocks they read, with
 * ranged GETs, into a node-local sparse file that mmaps like a payload,
 * and each block is checked against a manifest of block hashes that the
 * put wrote after the object (so a manifest also means "the object is
 * whole"). s3.c says how.
 *
 * Ids are checked here once for both backends (64 lowercase hex digits:
 * nothing else can be a name in a directory or a key under a prefix), but
 * not recomputed: a dataset id is a tree hash over the payload's arrays
 * (sha256.c), not the hash of the file, and the caller has it already.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "histd/histd.h"
#include "s3.h"
#include "shared_store.h"

struct shared_store {
  s3_store *s3; /* NULL: the directory backend */
  char dir[4096];
  char host[64];
  atomic_uint tmp_seq;
};

int shared_store_open(shared_store **out, const char *url, const char *cache_dir, char *msg,
                      size_t msglen) {
  *out = NULL;
  if (url == NULL || *url == '\0') {
    snprintf(msg, msglen, "no shared store was given (a directory or s3://BUCKET/PREFIX)");
    return HISTD_EINVAL;
  }
  shared_store *s = calloc(1, sizeof *s);
  if (s == NULL) {
    snprintf(msg, msglen, "out of memory opening the shared store");
    return HISTD_ENOMEM;
  }
  atomic_init(&s->tmp_seq, 0);
  if (strncmp(url, "s3://", 5) == 0) {
    int rc = s3_store_open(&s->s3, url, cache_dir, msg, msglen);
    if (rc != 0) {
      free(s);
      return rc;
    }
    *out = s;
    return 0;
  }
  const char *dir = strncmp(url, "file://", 7) == 0 ? url + 7 : url;
  struct stat st;
  errno = ENAMETOOLONG;
  if (strlen(dir) >= sizeof s->dir - 100 || stat(dir, &st) != 0 ||
      (!S_ISDIR(st.st_mode) && (errno = ENOTDIR))) {
    snprintf(msg, msglen, "the shared store %s cannot be used: %s", dir, strerror(errno));
    free(s);
    return HISTD_EINVAL;
  }
  snprintf(s->dir, sizeof s->dir, "%s", dir);
  if (gethostname(s->host, sizeof s->host) != 0)
    snprintf(s->host, sizeof s->host, "host");
  s->host[sizeof s->host - 1] = '\0';
  for (char *p = s->host; *p; p++)
    if (*p == '/' || *p == '.')
      *p = '_';
  *out = s;
  return 0;
}

void shared_store_close(shared_store *s) {
  if (s == NULL)
    return;
  s3_store_close(s->s3);
  free(s);
}

const char *shared_store_kind(const shared_store *s) { return s->s3 ? "s3" : "dir"; }

void shared_store_set_block_bytes(shared_store *s, uint32_t bytes) {
  if (s->s3)
    s3_store_set_block_bytes(s->s3, bytes);
}

uint64_t shared_store_bytes_fetched(const shared_store *s) {
  return s->s3 ? s3_store_bytes_fetched(s->s3) : 0;
}

static bool check_id(const char *id, char *msg, size_t msglen) {
  size_t i = 0;
  for (; id[i] && i < 64; i++)
    if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
      break;
  if (i == 64 && id[i] == '\0')
    return true;
  snprintf(msg, msglen, "'%.80s' is not a content address (64 lowercase hex digits)", id);
  return false;
}

/* ---- the directory backend ------------------------------------------------------ */

static void object_path(const shared_store *s, const char *id, char *path, size_t len) {
  snprintf(path, len, "%s/%s.f64", s->dir, id);
}

static int sync_dir(const shared_store *s) {
  int fd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  int rc = fsync(fd);
  close(fd);
  return rc;
}

/* Copies in to out whole; -1 with errno on failure. */
static int copy_fd(int in, int out, uint64_t size) {
  uint64_t done = 0;
  while (done < size) {
    ssize_t n = copy_file_range(in, NULL, out, NULL, (size_t)(size - done), 0);
    if (n > 0) {
      done += (uint64_t)n;
      continue;
    }
    if (n == 0) {
      errno = EIO; /* the file shrank under us */
      return -1;
    }
    if (errno != EXDEV && errno != ENOSYS && errno != EOPNOTSUPP && errno != EINVAL)
      return -1;
    break; /* across file systems on old kernels: copy by hand */
  }
  static const size_t chunk = 1u << 20;
  char *buf = done < size ? malloc(chunk) : NULL;
  if (done < size && buf == NULL)
    return -1;
  while (done < size) {
    ssize_t r = pread(in, buf, chunk, (off_t)done);
    if (r <= 0) {
      if (r == 0)
        errno = EIO;
      free(buf);
      return -1;
    }
    if (pwrite(out, buf, (size_t)r, (off_t)done) != r) {
      free(buf);
      return -1;
    }
    done += (uint64_t)r;
  }
  free(buf);
  return 0;
}

static int dir_put(shared_store *s, const char *id, const char *local_path, char *msg,
                   size_t msglen) {
  char path[4200], tmp[4400];
  object_path(s, id, path, sizeof path);
  int in = open(local_path, O_RDONLY | O_CLOEXEC);
  struct stat st, there;
  if (in < 0 || fstat(in, &st) != 0) {
    snprintf(msg, msglen, "%s cannot be read: %s", local_path, strerror(errno));
    if (in >= 0)
      close(in);
    return HISTD_EIO;
  }
  if (stat(path, &there) == 0 && there.st_size == st.st_size) {
    close(in); /* published already (same address, same size: the same bytes) */
    return 0;
  }
  snprintf(tmp, sizeof tmp, "%s/.tmp-%s.%s.%ld.%u", s->dir, id, s->host, (long)getpid(),
           atomic_fetch_add(&s->tmp_seq, 1));
  int out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (out < 0) {
    snprintf(msg, msglen, "%s cannot be created: %s", tmp, strerror(errno));
    close(in);
    return HISTD_EIO;
  }
  const char *step = "written";
  int ok = copy_fd(in, out, (uint64_t)st.st_size) == 0;
  if (ok && !(ok = fsync(out) == 0))
    step = "synced";
  if (close(out) != 0 && ok) {
    ok = 0;
    step = "closed";
  }
  if (ok && !(ok = rename(tmp, path) == 0))
    step = "renamed into place";
  if (ok && !(ok = sync_dir(s) == 0))
    step = "made durable (fsync of the directory)";
  int err = errno;
  close(in);
  if (!ok) {
    unlink(tmp);
    snprintf(msg, msglen, "%s could not be %s in the shared store %s: %s", id, step, s->dir,
             strerror(err));
    return HISTD_EIO;
  }
  return 0;
}

static int dir_size(shared_store *s, const char *id, uint64_t *size, char *msg,
                    size_t msglen) {
  char path[4200];
  object_path(s, id, path, sizeof path);
  struct stat st;
  if (stat(path, &st) != 0) {
    snprintf(msg, msglen, "there is no object %s in %s%s%s", id, s->dir,
             errno == ENOENT ? "" : ": ", errno == ENOENT ? "" : strerror(errno));
    return errno == ENOENT ? HISTD_ENOENT : HISTD_EIO;
  }
  *size = (uint64_t)st.st_size;
  return 0;
}

static int dir_fetch(shared_store *s, const char *id, uint64_t off, uint64_t len, char *path,
                     size_t pathlen, char *msg, size_t msglen) {
  uint64_t size;
  int rc = dir_size(s, id, &size, msg, msglen);
  if (rc != 0)
    return rc;
  if (off > size || len > size - off) {
    snprintf(msg, msglen, "bytes %llu+%llu are past the end of %s (%llu bytes)",
             (unsigned long long)off, (unsigned long long)len, id, (unsigned long long)size);
    return HISTD_EINVAL;
  }
  if ((size_t)snprintf(path, pathlen, "%s/%s.f64", s->dir, id) >= pathlen) {
    snprintf(msg, msglen, "the path of %s is too long", id);
    return HISTD_EINVAL;
  }
  return 0;
}

static int dir_delete(shared_store *s, const char *id, char *msg, size_t msglen) {
  char path[4200];
  object_path(s, id, path, sizeof path);
  if (unlink(path) != 0 && errno != ENOENT) {
    snprintf(msg, msglen, "%s cannot be removed: %s", path, strerror(errno));
    return HISTD_EIO;
  }
  sync_dir(s);
  return 0;
}

/* ---- the interface --------------------------------------------------------------- */

int shared_store_put(shared_store *s, const char *id, const char *local_path, char *msg,
                     size_t msglen) {
  if (!check_id(id, msg, msglen))
    return HISTD_EINVAL;
  return s->s3 ? s3_store_put(s->s3, id, local_path, msg, msglen)
               : dir_put(s, id, local_path, msg, msglen);
}

int shared_store_size(shared_store *s, const char *id, uint64_t *size, char *msg,
                      size_t msglen) {
  if (!check_id(id, msg, msglen))
    return HISTD_EINVAL;
  return s->s3 ? s3_store_size(s->s3, id, size, msg, msglen)
               : dir_size(s, id, size, msg, msglen);
}

int shared_store_fetch(shared_store *s, const char *id, uint64_t off, uint64_t len,
                       char *path, size_t pathlen, char *msg, size_t msglen) {
  if (!check_id(id, msg, msglen))
    return HISTD_EINVAL;
  return s->s3 ? s3_store_fetch(s->s3, id, off, len, path, pathlen, msg, msglen)
               : dir_fetch(s, id, off, len, path, pathlen, msg, msglen);
}

int shared_store_delete(shared_store *s, const char *id, char *msg, size_t msglen) {
  if (!check_id(id, msg, msglen))
    return HISTD_EINVAL;
  return s->s3 ? s3_store_delete(s->s3, id, msg, msglen) : dir_delete(s, id, msg, msglen);
}
