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
 *
 * A growing dataset (store.c) is its segments, each a payload of its own,
 * mapped and checked as any other. A job on all of it gets them joined
 * into one dataset in memory (the frames so far, kept while their count
 * holds: an append makes the join stale, and the next acquire joins
 * anew); a following job reads the segments one at a time
 * (dataset_acquire_segment).
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
  size_t frames; /* a growing dataset's frames joined here (0: a payload's mapping) */
  bool stale;    /* a growing dataset's older join: found no more, freed at its last release */
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

/* The entry of id that is not stale (c->mu held), or NULL. */
static loaded_dataset *find_locked(dataset_cache *c, const char *id) {
  for (loaded_dataset *d = c->head; d != NULL; d = d->next)
    if (!d->stale && strcmp(d->id, id) == 0)
      return d;
  return NULL;
}

static int join_growing(dataset_cache *c, const dataset_meta *meta, loaded_dataset **out,
                        char *msg, size_t msglen);

int dataset_acquire(dataset_cache *c, const char *id, loaded_dataset **out, char *msg,
                    size_t msglen) {
  pthread_mutex_lock(&c->mu);
  loaded_dataset *d = find_locked(c, id);
  if (d != NULL && d->frames == 0) { /* a payload's mapping: it never changes */
    d->refs++;
    pthread_mutex_unlock(&c->mu);
    *out = d;
    return 0;
  }
  pthread_mutex_unlock(&c->mu);

  dataset_meta meta;
  if (store_get_dataset(c->store, id, &meta) != 0)
    return histd_fail(msg, msglen, HISTD_ENOENT, "dataset %s no longer exists", id);
  if (meta.growing)
    return join_growing(c, &meta, out, msg, msglen);
  char path[4400];
  store_payload_path(c->store, id, path, sizeof path);
  return load(c, &meta, path, false, out, msg, msglen);
}

/* A segment of a growing dataset, as the dataset of its own it is. */
static int acquire_segment_meta(dataset_cache *c, const dataset_meta *m, loaded_dataset **out,
                                char *msg, size_t msglen) {
  pthread_mutex_lock(&c->mu);
  loaded_dataset *d = find_locked(c, m->id);
  if (d != NULL) {
    d->refs++;
    pthread_mutex_unlock(&c->mu);
    *out = d;
    return 0;
  }
  pthread_mutex_unlock(&c->mu);
  char path[4400];
  store_payload_path(c->store, m->id, path, sizeof path);
  return load(c, m, path, false, out, msg, msglen);
}

int dataset_acquire_segment(dataset_cache *c, const char *id, uint64_t first_frame,
                            loaded_dataset **out, char *msg, size_t msglen) {
  dataset_segment *segs;
  size_t count;
  if (store_dataset_segments(c->store, id, &segs, &count) != 0)
    return histd_fail(msg, msglen, HISTD_EIO, "the segments of dataset %s cannot be read", id);
  int rc = histd_fail(msg, msglen, HISTD_ENOENT,
                      "dataset %s has no frames stored from frame %llu on", id,
                      (unsigned long long)first_frame);
  for (size_t i = 0; i < count; i++)
    if (segs[i].first_frame == first_frame) {
      rc = acquire_segment_meta(c, &segs[i].meta, out, msg, msglen);
      break;
    }
  free(segs);
  return rc;
}

/* The topology t's arrays (fields) into ds's, which has room for them. */
static void topology_copy_into(histd_topology *to, const histd_topology *t) {
  const size_t bytes = t->atoms * 8;
  if (t->name && to->name)
    memcpy(to->name, t->name, bytes);
  if (t->element && to->element)
    memcpy(to->element, t->element, bytes);
  if (t->resname && to->resname)
    memcpy(to->resname, t->resname, bytes);
  if (t->resid && to->resid)
    memcpy(to->resid, t->resid, bytes);
  if (t->type && to->type)
    memcpy(to->type, t->type, bytes);
  if (t->mol && to->mol)
    memcpy(to->mol, t->mol, bytes);
}

int dataset_copy_topology(histd_dataset *ds, const histd_topology *t, char *msg,
                          size_t msglen) {
  int rc = histd_topology_alloc(ds, t->atoms, histd_topology_fields(t), msg, msglen);
  if (rc == 0)
    topology_copy_into(ds->top, t);
  return rc;
}

/* A growing dataset's segments joined into one dataset in memory (one
 * segment: its mapping as it is). */
static int join_growing(dataset_cache *c, const dataset_meta *meta, loaded_dataset **out,
                        char *msg, size_t msglen) {
  dataset_segment *segs;
  size_t count;
  if (store_dataset_segments(c->store, meta->id, &segs, &count) != 0 || count == 0) {
    free(segs);
    return histd_fail(msg, msglen, HISTD_EIO, "the segments of dataset %s cannot be read",
                      meta->id);
  }
  if (count == 1) {
    int rc = acquire_segment_meta(c, &segs[0].meta, out, msg, msglen);
    free(segs);
    return rc;
  }
  size_t n = 0, frames = 0;
  for (size_t i = 0; i < count; i++) {
    n += segs[i].meta.n;
    frames += segs[i].meta.frames;
  }
  pthread_mutex_lock(&c->mu);
  loaded_dataset *d = find_locked(c, meta->id);
  if (d != NULL && d->frames == frames) {
    d->refs++;
    pthread_mutex_unlock(&c->mu);
    free(segs);
    *out = d;
    return 0;
  }
  pthread_mutex_unlock(&c->mu);
  d = calloc(1, sizeof *d);
  size_t *counts = malloc(frames * sizeof *counts);
  histd_box *boxes = malloc(frames * sizeof *boxes);
  int rc = d && counts && boxes ? 0 : histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory");
  if (rc == 0)
    rc = histd_dataset_alloc(&d->ds, n, msg, msglen);
  if (rc == 0 && segs[0].meta.weighted)
    rc = histd_dataset_alloc_weights(&d->ds, msg, msglen);
  size_t at = 0, f = 0;
  for (size_t i = 0; rc == 0 && i < count; i++) {
    loaded_dataset *g;
    if ((rc = acquire_segment_meta(c, &segs[i].meta, &g, msg, msglen)) != 0)
      break;
    const histd_dataset *p = &g->ds;
    if ((p->w != NULL) != (d->ds.w != NULL)) {
      rc = histd_fail(msg, msglen, HISTD_EIO, "dataset %s's segments differ in weights",
                      meta->id);
    } else {
      memcpy(d->ds.x + at, p->x, p->n * sizeof *p->x);
      memcpy(d->ds.y + at, p->y, p->n * sizeof *p->y);
      memcpy(d->ds.z + at, p->z, p->n * sizeof *p->z);
      if (p->w != NULL)
        memcpy(d->ds.w + at, p->w, p->n * sizeof *p->w);
      for (size_t k = 0; k < histd_dataset_frames(p); k++, f++) {
        counts[f] = p->frame != NULL ? p->frame[k].n : p->n;
        boxes[f] = p->frame != NULL ? p->frame[k].box : p->box;
      }
      at += p->n;
      if (i == 0 && p->top != NULL)
        rc = dataset_copy_topology(&d->ds, p->top, msg, msglen);
      for (int a = 0; a < 3; a++) {
        d->ds.min[a] = i == 0 || p->min[a] < d->ds.min[a] ? p->min[a] : d->ds.min[a];
        d->ds.max[a] = i == 0 || p->max[a] > d->ds.max[a] ? p->max[a] : d->ds.max[a];
      }
      if (i == 0)
        memcpy(d->ds.unit, p->unit, sizeof d->ds.unit);
    }
    dataset_release(c, g);
  }
  if (rc == 0 && (at != n || f != frames))
    rc = histd_fail(msg, msglen, HISTD_EIO, "dataset %s's segments changed while read",
                    meta->id);
  if (rc == 0)
    rc = histd_dataset_set_frames(&d->ds, frames, counts, boxes, msg, msglen);
  free(counts);
  free(boxes);
  free(segs);
  if (rc != 0) {
    if (d != NULL)
      loaded_free(d);
    return rc;
  }
  snprintf(d->id, sizeof d->id, "%s", meta->id);
  d->refs = 1;
  d->frames = frames;
  pthread_mutex_lock(&c->mu);
  for (loaded_dataset *o = c->head; o != NULL; o = o->next)
    if (!o->stale && strcmp(o->id, d->id) == 0)
      o->stale = true; /* an older join: its jobs keep it, no one else gets it */
  d->next = c->head;
  c->head = d;
  pthread_mutex_unlock(&c->mu);
  *out = d;
  return 0;
}

int dataset_acquire_file(dataset_cache *c, const dataset_meta *meta, const char *path,
                         loaded_dataset **out, char *msg, size_t msglen) {
  pthread_mutex_lock(&c->mu);
  for (loaded_dataset *d = c->head; d != NULL; d = d->next) {
    if (!d->stale && strcmp(d->id, meta->id) == 0) {
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

  /* a sky catalogue's columns (in the mapping) and region labels (copied) */
  if (rc == 0 && meta.sky && meta.n > 0)
    d->ds.sky = (double *)d->map + dataset_sky_offset(&meta);
  d->ds.omega_m = meta.omega_m;
  if (rc == 0 && meta.regions > 0 && meta.n > 0) {
    const double *labels = (const double *)d->map + dataset_sky_offset(&meta) +
                           (meta.sky ? 3 * meta.n : 0);
    if ((d->ds.region = malloc(meta.n * sizeof *d->ds.region)) == NULL) {
      loaded_free(d);
      return histd_fail(msg, msglen, HISTD_ENOMEM, "out of memory for %zu regions", meta.n);
    }
    memcpy(d->ds.region, labels, meta.n * sizeof *d->ds.region);
    d->ds.regions = meta.regions;
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
    if (!o->stale && strcmp(o->id, id) == 0) { /* someone mapped it meanwhile: share theirs */
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
  out->sky = m->sky;
  out->regions = m->regions;
}
