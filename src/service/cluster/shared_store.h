/*
 * shared_store.h -- the cluster's shared store: where a dataset's payload
 * file goes so that other hosts can read it (shared_store.c says why it
 * looks the way it does). One interface, two backends:
 *
 *   a directory    "/mnt/histd-shared" (NFS, Lustre, GPFS): <dir>/<id>.f64
 *   S3             "s3://BUCKET/PREFIX": <PREFIX>/<id>.f64 and
 *                  <PREFIX>/<id>.manifest, read block by block into a
 *                  node-local cache
 *
 * Every call returns 0 or a negative HISTD_E* code (histd/histd.h) and
 * then writes one sentence into msg. Every call is thread-safe.
 */
#ifndef HISTD_SHARED_STORE_H
#define HISTD_SHARED_STORE_H

#include <stddef.h>
#include <stdint.h>

typedef struct shared_store shared_store;

/* The S3 backend's default block: the unit of a ranged GET, of a hash in
 * the manifest, and of the local cache. */
#define SHARED_STORE_BLOCK_BYTES (4u << 20)

/* url: a directory path (or file://PATH), or "s3://BUCKET/PREFIX". For S3:
 * the endpoint is AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL, else
 * https://s3.<region>.amazonaws.com; the region AWS_REGION or
 * AWS_DEFAULT_REGION, else us-east-1; the credentials AWS_ACCESS_KEY_ID,
 * AWS_SECRET_ACCESS_KEY and, optionally, AWS_SESSION_TOKEN; addressing is
 * path-style, ENDPOINT/BUCKET/KEY. cache_dir: a node-local directory for
 * fetched blocks (created if missing; unused by the directory backend, may
 * be NULL there). */
int shared_store_open(shared_store **out, const char *url, const char *cache_dir, char *msg,
                      size_t msglen);
void shared_store_close(shared_store *s);
const char *shared_store_kind(const shared_store *s); /* "dir" or "s3" */

/* The block size the S3 backend writes into the manifests of later puts
 * (default SHARED_STORE_BLOCK_BYTES; a fetch uses the size its object's
 * manifest says). Set it before the store is shared between threads. No
 * effect on the directory backend. */
void shared_store_set_block_bytes(shared_store *s, uint32_t bytes);

/* Publishes the local file at local_path under the content address id
 * (64 lowercase hex digits, computed by the caller; the store does not
 * recompute it) as "<id>.f64". Idempotent: an object of that id already
 * there is left alone (the directory backend replaces one whose size
 * differs from the file's: a torn copy). */
int shared_store_put(shared_store *s, const char *id, const char *local_path, char *msg,
                     size_t msglen);

/* The object's size in bytes; HISTD_ENOENT when there is none. */
int shared_store_size(shared_store *s, const char *id, uint64_t *size, char *msg,
                      size_t msglen);

/* Makes bytes [off, off + len) of object id readable in a local file and
 * gives its path (off + len past the size: HISTD_EINVAL). The directory
 * backend gives the shared file itself (no per-block hashes there: the
 * caller can hash the whole file against the id). The S3 backend gives
 * <cache_dir>/<id>.f64, a file of the object's full size, sparse where
 * nothing was fetched: each block overlapping the range that is not in the
 * cache is fetched with one ranged GET, checked against its SHA-256 in the
 * manifest (a mismatch is HISTD_EIO, naming the block), and written in;
 * <cache_dir>/<id>.blocks records which blocks are there, so a restart
 * reuses them (each is hashed again on its first use by a process). */
int shared_store_fetch(shared_store *s, const char *id, uint64_t off, uint64_t len,
                       char *path, size_t pathlen, char *msg, size_t msglen);

/* Removes the object (and, for S3, this node's cached copy). Deleting an
 * object that is not there is not an error: other nodes may race. */
int shared_store_delete(shared_store *s, const char *id, char *msg, size_t msglen);

/* Bytes of blocks this store has downloaded (S3 ranged GETs; 0 for the
 * directory backend), manifests not counted. */
uint64_t shared_store_bytes_fetched(const shared_store *s);

#endif
