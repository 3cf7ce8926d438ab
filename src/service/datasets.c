/*
 * datasets.c -- loaded datasets, shared by reference count.
 *
 * A job never copies its dataset. The payload file already is the engine's
 * layout (float64 x[], y[], z[]), so loading is an mmap, and every job on
 * the same dataset shares that one mapping through a refcounted entry: the
 * first acquire maps, the last release unmaps. The page cache does the
 * rest: a dataset used again soon is still in memory, and memory pressure
 * can drop its pages without anyone copying them to swap.
 *
 * The first time a process maps a payload it hashes it and compares with
 * its name (the id is the hash of the bytes, sha256.c). A mismatch or a missing
 * file is not fatal: the job fails with a sentence, and the dataset's row
 * records the error so GET /v1/datasets/{id} shows it. A verified file is
 * remembered (by inode, size and mtime) so repeated jobs do not hash again.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "datasets.h"
#include "sha256.h"
#include "store.h"

struct loaded_dataset {
  char id[65];
  histd_dataset ds;
  void *map;
  size_t len;
  int refs;
  loaded_dataset *next;
};

typedef struct verified {
  char id[65];
  dev_t dev;
  ino_t ino;
  off_t size;
  struct timespec mtime;
} verified;

struct dataset_cache {
  pthread_mutex_t mu;
  store *store;
  loaded_dataset *head;
  verified *ok;
  size_t nok, capok;
};

static double empty_payload[3];

/* Unmaps and frees one entry (its frame table too). */
static void loaded_free(loaded_dataset *d) {
  if (d->map != NULL)
    munmap(d->map, d->len);
  histd_dataset_free(&d->ds); /* borrowed points: only the frame table */
  free(d);
}

int dataset_cache_create(dataset_cache **out, store *s) {
  dataset_cache *c = calloc(1, sizeof *c);
  if (c == NULL)
    return HISTD_ENOMEM;
  pthread_mutex_init(&c->mu, NULL);
  c->store = s;
  *out = c;
  return 0;
}

void dataset_cache_destroy(dataset_cache *c) {
  if (c == NULL)
    return;
  while (c->head != NULL) {
    loaded_dataset *d = c->head;
    c->head = d->next;
    loaded_free(d);
  }
  free(c->ok);
  pthread_mutex_destroy(&c->mu);
  free(c);
}

static bool is_verified(dataset_cache *c, const char *id, const struct stat *sb) {
  for (size_t i = 0; i < c->nok; i++) {
    verified *v = &c->ok[i];
    if (strcmp(v->id, id) == 0)
      return v->dev == sb->st_dev && v->ino == sb->st_ino && v->size == sb->st_size &&
             v->mtime.tv_sec == sb->st_mtim.tv_sec && v->mtime.tv_nsec == sb->st_mtim.tv_nsec;
  }
  return false;
}

static void remember_verified(dataset_cache *c, const char *id, const struct stat *sb) {
  verified *v = NULL;
  for (size_t i = 0; i < c->nok && v == NULL; i++)
    if (strcmp(c->ok[i].id, id) == 0)
      v = &c->ok[i];
  if (v == NULL) {
    if (c->nok == c->capok) {
      size_t cap = c->capok ? 2 * c->capok : 16;
      verified *bigger = realloc(c->ok, cap * sizeof *bigger);
      if (bigger == NULL)
        return;
      c->ok = bigger;
      c->capok = cap;
    }
    v = &c->ok[c->nok++];
  }
  snprintf(v->id, sizeof v->id, "%s", id);
  v->dev = sb->st_dev;
  v->ino = sb->st_ino;
  v->size = sb->st_size;
  v->mtime = sb->st_mtim;
}

void dataset_cache_forget(dataset_cache *c, const char *id) {
  pthread_mutex_lock(&c->mu);
  for (size_t i = 0; i < c->nok; i++)
    if (strcmp(c->ok[i].id, id) == 0) {
      c->ok[i] = c->ok[--c->nok];
      break;
    }
  pthread_mutex_unlock(&c->mu);
}

static int corrupt(dataset_cache *c, const char *id, char *msg, size_t msglen,
                   const char *fmt, const char *detail) {
  char sentence[256];
  snprintf(sentence, sizeof sentence, fmt, detail);
  store_set_dataset_error(c->store, id, sentence);
  return histd_fail(msg, msglen, HISTD_EIO, "dataset %.16s...: %s", id, sentence);
}

static int load(dataset_cache *c, const dataset_meta *m, const char *path, bool shared,
                loaded_dataset **out, char *msg, size_t msglen);

int dataset_acquire(dataset_cache *c, const char *id, loaded_dataset **out, char *msg,
                    size_t msglen) {
  pthread_mutex_lock(&c->mu);
  for (loaded_dataset *d = c->head; d != NULL; d = d->next) {
    if (strcmp(d->id, id) == 0) {
      d->refs++;
      pthread_mutex_unlock(&c->mu);
      *out = d;
      return 0;
    }
  }
  pthread_mutex_unlock(&c->mu);

  dataset_meta meta;
  if (store_get_dataset(c->store, id, &meta) != 0)
    return histd_fail(msg, msglen, HISTD_ENOENT, "dataset %s no longer exists", id);
  char path[4400];
  store_payload_path(c->store, id, path, sizeof path);
  return load(c, &meta, path, false, out, msg, msglen);
}

int dataset_acquire_file(dataset_cache *c, const dataset_meta *meta, const char *path,
                         loaded_dataset **out, char *msg, size_t msglen) {
  pthread_mutex_lock(&c->mu);
  for (loaded_dataset *d = c->head; d != NULL; d = d->next) {
    if (strcmp(d->id, meta->id) == 0) {
      d->refs++;
      pthread_mutex_unlock(&c->mu);
      *out = d;
      return 0;
    }
  }
  pthread_mutex_unlock(&c->mu);
  return load(c, meta, path, true, out, msg, msglen);
}

/* Maps the payload at path as dataset meta: a local one checked by its hash
 * (once per file), or a shared one (`shared`: the shared store's file or
 * its sparse cache, mapped shared so blocks fetched later show, and never
 * hashed whole: the S3 backend checks each block it fetches). */
static int load(dataset_cache *c, const dataset_meta *m, const char *path, bool shared,
                loaded_dataset **out, char *msg, size_t msglen) {
  const char *id = m->id;
  const dataset_meta meta = *m;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return corrupt(c, id, msg, msglen, "the payload file is missing (%s)", strerror(errno));
  struct stat sb;
  const uint64_t bytes = dataset_payload_bytes(&meta);
  if (fstat(fd, &sb) != 0 || (uint64_t)sb.st_size != bytes) {
    close(fd);
    return corrupt(c, id, msg, msglen, "the payload file is corrupt (%s)",
                   "its size does not match the number of points");
  }
  loaded_dataset *d = calloc(1, sizeof *d);
  if (d == NULL) {
    close(fd);
    return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory");
  }
  snprintf(d->id, sizeof d->id, "%s", id);
  d->refs = 1;
  if (meta.n > 0) {
    d->len = (size_t)bytes;
    d->map = mmap(NULL, d->len, PROT_READ, shared ? MAP_SHARED : MAP_PRIVATE, fd, 0);
    if (d->map == MAP_FAILED) {
      int e = errno;
      close(fd);
      free(d);
      return histd_fail(msg, msglen, HISTD_EIO, "cannot map dataset %s: %s", id, strerror(e));
    }
    histd_dataset_borrow(&d->ds, d->map, meta.n);
  } else {
    histd_dataset_borrow(&d->ds, empty_payload, 0);
  }
  close(fd);
  memcpy(d->ds.unit, meta.unit, sizeof d->ds.unit);
  memcpy(d->ds.min, meta.min, sizeof meta.min);
  memcpy(d->ds.max, meta.max, sizeof meta.max);
  /* the tail: weights, then the frame table (service.h) */
  const double *tail = meta.n > 0 ? (const double *)d->map + 3 * meta.n : NULL;
  const size_t tail_len = meta.n > 0 ? (size_t)(bytes / 8 - 3 * meta.n) : 0;
  if (meta.weighted)
    d->ds.w = (double *)tail;
  int rc = 0;
  if (dataset_has_table(&meta) && meta.n > 0) {
    char why[160];
    rc = dataset_frames_from_table(&d->ds, tail + (meta.weighted ? meta.n : 0), meta.frames,
                                   why, sizeof why);
    if (rc == HISTD_ENOMEM) {
      loaded_free(d);
      return histd_fail(msg, msglen, rc, "%s", why);
    }
  }
  if (rc == 0 && meta.topology && meta.n > 0) { /* after the weights and the frame table */
    const double *top = tail + (meta.weighted ? meta.n : 0) +
                        (dataset_has_table(&meta) ? meta.frames * DATASET_FRAME_RECORD : 0);
    if ((rc = dataset_topology_from_tail(&d->ds, &meta, top, msg, msglen)) != 0) {
      loaded_free(d);
      return rc;
    }
  }

  pthread_mutex_lock(&c->mu);
  bool need_hash = !shared && !is_verified(c, id, &sb);
  pthread_mutex_unlock(&c->mu);
  if (need_hash) {
    char hex[65];
    dataset_id_hex_tail(d->ds.x, d->ds.y, d->ds.z, d->ds.n, tail, tail_len, hex);
    if (strcmp(hex, id) != 0) {
      loaded_free(d);
      return corrupt(c, id, msg, msglen, "the payload file is corrupt (%s)",
                     "its hash does not match the dataset id");
    }
  }
  if (rc != 0) { /* a frame table that does not add up, though its hash does */
    loaded_free(d);
    return corrupt(c, id, msg, msglen, "the payload file is corrupt (%s)",
                   "its frames do not add up to its points");
  }

  pthread_mutex_lock(&c->mu);
  if (need_hash)
    remember_verified(c, id, &sb);
  for (loaded_dataset *o = c->head; o != NULL; o = o->next) {
    if (strcmp(o->id, id) == 0) { /* someone mapped it meanwhile: share theirs */
      o->refs++;
      pthread_mutex_unlock(&c->mu);
      loaded_free(d);
      *out = o;
      return 0;
    }
  }
  d->next = c->head;
  c->head = d;
  pthread_mutex_unlock(&c->mu);
  *out = d;
  return 0;
}

const histd_dataset *loaded_dataset_points(const loaded_dataset *d) { return &d->ds; }

void dataset_release(dataset_cache *c, loaded_dataset *d) {
  if (d == NULL)
    return;
  pthread_mutex_lock(&c->mu);
  if (--d->refs > 0) {
    pthread_mutex_unlock(&c->mu);
    return;
  }
  for (loaded_dataset **p = &c->head; *p != NULL; p = &(*p)->next)
    if (*p == d) {
      *p = d->next;
      break;
    }
  pthread_mutex_unlock(&c->mu);
  loaded_free(d);
}

void dataset_shape(const dataset_meta *m, histd_shape *out) {
  memset(out, 0, sizeof *out);
  out->n = m->n;
  out->frames = m->frames > 0 ? m->frames : 1;
  out->weighted = m->weighted;
  out->box = m->box;
  memcpy(out->min, m->min, sizeof out->min);
  memcpy(out->max, m->max, sizeof out->max);
  out->topology = m->topology;
}
