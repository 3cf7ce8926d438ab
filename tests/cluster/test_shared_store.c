/*
 * test_shared_store.c -- the cluster's shared store (src/service/cluster/shared_store.h).
 *
 *   test_shared_store dir                 the directory backend, in a temp dir
 *   test_shared_store sigv4 [SIGNATURE]   the request signer: the AWS docs' example,
 *                                         and SIGNATURE, test_s3.py's own (Python
 *                                         hmac) signature of a second request
 *   test_shared_store s3 PHASE WORKDIR    the S3 backend against the server that
 *                                         test_s3.py started (AWS_* and
 *                                         HISTD_TEST_S3_URL set by it); PHASE is
 *                                         "put" (then test_s3.py overwrites the
 *                                         object on the server) or "served-wrong"
 *
 * The payload is SIZE bytes of random data, five 1 MiB blocks and a
 * partial one, so every range below is not block-aligned somewhere.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../check.h"
#include "histd/histd.h"
#include "s3.h"
#include "sha256.h"
#include "shared_store.h"

#define BLOCK (1u << 20)
#define SIZE (5ull * BLOCK + 12345)

static unsigned char *data; /* the payload, SIZE bytes */
static char id[65];
static char src[4200];

static void make_payload(const char *dir) {
  data = malloc(SIZE);
  uint64_t seed = 0x5eed5eedull;
  for (uint64_t i = 0; i < SIZE; i += 8) {
    uint64_t r = test_rand_u64(&seed);
    memcpy(data + i, &r, SIZE - i < 8 ? SIZE - i : 8);
  }
  sha256_hex(data, SIZE, id);
  snprintf(src, sizeof src, "%s/src.f64", dir);
  FILE *f = fopen(src, "wb");
  CHECK(f != NULL && fwrite(data, 1, SIZE, f) == SIZE && fclose(f) == 0, "writing %s", src);
}

/* The bytes [off, off+len) of the file at path equal the payload's (or,
 * want_same false, differ somewhere). */
static bool range_is(const char *path, uint64_t off, uint64_t len, bool want_same) {
  int fd = open(path, O_RDONLY);
  if (fd < 0)
    return false;
  unsigned char *buf = malloc(len + 1);
  bool same = pread(fd, buf, len, (off_t)off) == (ssize_t)len &&
              memcmp(buf, data + off, len) == 0;
  free(buf);
  close(fd);
  return same == want_same;
}

static void flip_byte(const char *path, uint64_t off) {
  int fd = open(path, O_RDWR);
  unsigned char b = 0;
  CHECK(fd >= 0 && pread(fd, &b, 1, (off_t)off) == 1, "reading %s", path);
  b ^= 0x5a;
  CHECK(pwrite(fd, &b, 1, (off_t)off) == 1, "writing %s", path);
  close(fd);
}

static int only_one_entry(const char *dir) {
  char cmd[4300];
  snprintf(cmd, sizeof cmd, "test $(ls -A '%s' | wc -l) -eq 1", dir);
  return system(cmd) == 0 ? 1 : 0;
}

/* The ranges every backend must serve: {off, len}. */
static const uint64_t ranges[][2] = {
    {0, SIZE},                          /* whole */
    {BLOCK - 1000, 3000},               /* across the first block boundary */
    {BLOCK + BLOCK / 2, BLOCK},         /* the middle of blocks 1 and 2 */
    {5ull * BLOCK, 12345},              /* the last, partial block */
    {SIZE - 1, 1},                      /* the last byte */
    {SIZE, 0},                          /* nothing, at the end */
    {12345, 0},                         /* nothing, inside */
};

/* ---- the directory backend -------------------------------------------------------- */

typedef struct put_arg {
  shared_store *s;
  int rc;
} put_arg;

static void *put_main(void *u) {
  put_arg *a = u;
  char msg[512];
  a->rc = shared_store_put(a->s, id, src, msg, sizeof msg);
  if (a->rc != 0)
    fprintf(stderr, "concurrent put: %s\n", msg);
  return NULL;
}

static void test_dir(void) {
  char base[] = "/tmp/histd-shared-XXXXXX", shared[4200], path[4400], msg[512];
  CHECK(mkdtemp(base) != NULL, "mkdtemp");
  make_payload(base);
  snprintf(shared, sizeof shared, "%s/shared", base);

  shared_store *s = NULL;
  int rc = shared_store_open(&s, shared, NULL, msg, sizeof msg);
  CHECK(rc == HISTD_EINVAL && strstr(msg, shared) != NULL, "missing dir: %d %s", rc, msg);
  CHECK(mkdir(shared, 0755) == 0, "mkdir");
  rc = shared_store_open(&s, shared, NULL, msg, sizeof msg);
  CHECK(rc == 0, "open: %s", msg);
  if (rc != 0)
    return;
  CHECK(strcmp(shared_store_kind(s), "dir") == 0, "kind %s", shared_store_kind(s));

  uint64_t size = 0;
  rc = shared_store_size(s, id, &size, msg, sizeof msg);
  CHECK(rc == HISTD_ENOENT && strstr(msg, id) != NULL, "size before put: %d %s", rc, msg);
  rc = shared_store_put(s, "not-an-id", src, msg, sizeof msg);
  CHECK(rc == HISTD_EINVAL && strstr(msg, "content address"), "bad id: %d %s", rc, msg);

  CHECK((rc = shared_store_put(s, id, src, msg, sizeof msg)) == 0, "put: %s", msg);
  CHECK(shared_store_size(s, id, &size, msg, sizeof msg) == 0, "size: %s", msg);
  CHECK_EQ_U64(size, SIZE, "size");
  CHECK(only_one_entry(shared), "temp files left in %s", shared);

  for (size_t i = 0; i < sizeof ranges / sizeof *ranges; i++) {
    rc = shared_store_fetch(s, id, ranges[i][0], ranges[i][1], path, sizeof path, msg,
                            sizeof msg);
    CHECK(rc == 0, "fetch %zu: %s", i, msg);
    CHECK(rc == 0 && range_is(path, ranges[i][0], ranges[i][1], true),
          "fetch %zu: bytes %llu+%llu differ", i, (unsigned long long)ranges[i][0],
          (unsigned long long)ranges[i][1]);
  }
  rc = shared_store_fetch(s, id, SIZE - 10, 11, path, sizeof path, msg, sizeof msg);
  CHECK(rc == HISTD_EINVAL && strstr(msg, "past the end"), "past the end: %d %s", rc, msg);
  CHECK_EQ_U64(shared_store_bytes_fetched(s), 0, "the dir backend downloads nothing");

  /* idempotent: the published file is left alone */
  struct stat a, b;
  snprintf(path, sizeof path, "%s/%s.f64", shared, id);
  CHECK(stat(path, &a) == 0, "stat");
  CHECK(shared_store_put(s, id, src, msg, sizeof msg) == 0, "put again: %s", msg);
  CHECK(stat(path, &b) == 0 && a.st_ino == b.st_ino, "put again replaced the file");

  /* several writers at once (several hosts, or threads): all succeed, one file */
  put_arg args[4];
  pthread_t th[4];
  CHECK(unlink(path) == 0, "unlink");
  for (int i = 0; i < 4; i++) {
    args[i] = (put_arg){s, -1};
    pthread_create(&th[i], NULL, put_main, &args[i]);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(th[i], NULL);
    CHECK(args[i].rc == 0, "concurrent put %d", i);
  }
  CHECK(range_is(path, 0, SIZE, true), "after concurrent puts");
  CHECK(only_one_entry(shared), "temp files left after concurrent puts");

  /* No per-block hashes in the directory backend: a shared file damaged in
   * place (same size) is served as it is; hashing it again tells. */
  flip_byte(path, BLOCK + 7);
  rc = shared_store_fetch(s, id, BLOCK, 100, path, sizeof path, msg, sizeof msg);
  CHECK(rc == 0 && range_is(path, BLOCK, 100, false), "damage in place goes unnoticed");
  CHECK(shared_store_put(s, id, src, msg, sizeof msg) == 0, "put over damage: %s", msg);
  CHECK(range_is(path, BLOCK, 100, false), "same size: the put left the damaged file alone");
  /* a torn copy (wrong size) is replaced by the next put */
  CHECK(truncate(path, SIZE / 2) == 0, "truncate");
  CHECK(shared_store_put(s, id, src, msg, sizeof msg) == 0, "put over a torn copy: %s", msg);
  CHECK(range_is(path, 0, SIZE, true), "the torn copy was replaced");

  CHECK(shared_store_delete(s, id, msg, sizeof msg) == 0, "delete: %s", msg);
  CHECK(shared_store_size(s, id, &size, msg, sizeof msg) == HISTD_ENOENT, "size after delete");
  rc = shared_store_fetch(s, id, 0, 1, path, sizeof path, msg, sizeof msg);
  CHECK(rc == HISTD_ENOENT, "fetch after delete: %d %s", rc, msg);
  CHECK(shared_store_delete(s, id, msg, sizeof msg) == 0, "delete again: %s", msg);
  shared_store_close(s);

  char cmd[4300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
  CHECK(system(cmd) == 0, "cleanup");
}

/* ---- the signer ------------------------------------------------------------------------ */

static void test_sigv4(const char *cross) {
  /* AWS S3 API Reference, "Signature Calculations for the Authorization
   * Header", Example: GET Object (the first 10 bytes of test.txt) */
  const sigv4_header h[] = {
      {"x-amz-date", "20130524T000000Z"},
      {"range", "bytes=0-9"},
      {"x-amz-content-sha256", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
      {"host", "examplebucket.s3.amazonaws.com"},
  };
  sigv4_request r = {.method = "GET", .uri = "/test.txt", .query = "", .headers = h,
                     .nheaders = 4, .payload_hash = h[2].value, .amz_date = h[0].value,
                     .region = "us-east-1", .access_key = "AKIAIOSFODNN7EXAMPLE",
                     .secret_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"};
  char auth[1024], sts[1024];
  CHECK(sigv4_sign(&r, auth, sizeof auth, sts, sizeof sts) == 0, "sign");
  CHECK_STR_CONTAINS(sts, "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972");
  CHECK(strcmp(auth,
               "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/"
               "aws4_request,SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
               "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41") ==
            0,
        "the AWS example: %s", auth);
  if (cross == NULL)
    return;
  /* test_s3.py's request: a PUT with a session token, an odd port and an
   * encoded key, signed there with Python's hmac and hashlib */
  const sigv4_header h2[] = {
      {"host", "127.0.0.1:9000"},
      {"x-amz-content-sha256", "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"},
      {"x-amz-date", "20240229T235959Z"},
      {"x-amz-security-token", "FwoGZXIvYXdzEXAMPLE+token/=="},
  };
  sigv4_request r2 = {.method = "PUT", .uri = "/histd/a%20dir/x.f64", .query = "",
                      .headers = h2, .nheaders = 4, .payload_hash = h2[1].value,
                      .amz_date = h2[2].value, .region = "eu-west-1", .access_key = "AKID",
                      .secret_key = "s3cr3t/+key"};
  CHECK(sigv4_sign(&r2, auth, sizeof auth, NULL, 0) == 0, "sign 2");
  const char *sig = strstr(auth, "Signature=");
  CHECK(sig != NULL && strcmp(sig + 10, cross) == 0, "Python's signature %s, ours %s", cross,
        auth);
}

/* ---- the S3 backend ---------------------------------------------------------------------- */

static shared_store *open_s3(const char *work, const char *cache) {
  char dir[4300], msg[512];
  snprintf(dir, sizeof dir, "%s/%s", work, cache);
  shared_store *s = NULL;
  int rc = shared_store_open(&s, getenv("HISTD_TEST_S3_URL"), dir, msg, sizeof msg);
  CHECK(rc == 0, "open s3: %s", msg);
  if (rc != 0)
    exit(check_finish("test_shared_store"));
  CHECK(strcmp(shared_store_kind(s), "s3") == 0, "kind");
  shared_store_set_block_bytes(s, BLOCK);
  return s;
}

/* The marks of the cache side file: which of the 6 blocks are there. */
static void marks(const char *work, const char *cache, char out[7]) {
  char path[4400];
  snprintf(path, sizeof path, "%s/%s/%s.blocks", work, cache, id);
  int fd = open(path, O_RDONLY);
  unsigned char m[6] = {0};
  CHECK(fd >= 0 && pread(fd, m, 6, 64) == 6, "reading %s", path);
  close(fd);
  for (int i = 0; i < 6; i++)
    out[i] = m[i] ? '1' : '0';
  out[6] = '\0';
}

typedef struct fetch_arg {
  shared_store *s;
  int rc;
  char path[4400];
} fetch_arg;

static void *fetch_main(void *u) {
  fetch_arg *a = u;
  char msg[512];
  a->rc = shared_store_fetch(a->s, id, 0, SIZE, a->path, sizeof a->path, msg, sizeof msg);
  if (a->rc != 0)
    fprintf(stderr, "concurrent fetch: %s\n", msg);
  return NULL;
}

static void s3_put_phase(const char *work) {
  char msg[512], path[4400], m[7];
  uint64_t size = 0;
  int rc;

  /* a key the server does not know (s3rver checks the access key id, but
   * not V4 signatures: a wrong secret passes there, so the signer is
   * checked by known answers instead, test_shared_store sigv4) */
  char *good = strdup(getenv("AWS_ACCESS_KEY_ID"));
  setenv("AWS_ACCESS_KEY_ID", "NOT-A-KEY", 1);
  shared_store *bad = open_s3(work, "cache-bad");
  rc = shared_store_size(bad, id, &size, msg, sizeof msg);
  CHECK(rc == HISTD_EIO && strstr(msg, "403") && strstr(msg, "InvalidAccessKeyId"),
        "wrong key: %d %s", rc, msg);
  printf("wrong key: %s\n", msg);
  shared_store_close(bad);
  setenv("AWS_ACCESS_KEY_ID", good, 1);
  free(good);

  shared_store *s = open_s3(work, "cache");
  rc = shared_store_size(s, id, &size, msg, sizeof msg);
  CHECK(rc == HISTD_ENOENT && strstr(msg, id), "size before put: %d %s", rc, msg);
  CHECK(shared_store_put(s, id, src, msg, sizeof msg) == 0, "put: %s", msg);
  CHECK(shared_store_put(s, id, src, msg, sizeof msg) == 0, "put again: %s", msg);
  CHECK(shared_store_size(s, id, &size, msg, sizeof msg) == 0, "size: %s", msg);
  CHECK_EQ_U64(size, SIZE, "size");
  CHECK_EQ_U64(shared_store_bytes_fetched(s), 0, "nothing fetched yet");

  /* the middle range: blocks 1 and 2, and only those */
  rc = shared_store_fetch(s, id, BLOCK + BLOCK / 2, BLOCK, path, sizeof path, msg, sizeof msg);
  CHECK(rc == 0, "fetch middle: %s", msg);
  CHECK_EQ_U64(shared_store_bytes_fetched(s), 2 * BLOCK, "the middle range's blocks");
  CHECK(range_is(path, BLOCK + BLOCK / 2, BLOCK, true), "middle bytes");
  CHECK(range_is(path, BLOCK, 2 * BLOCK, true), "blocks 1 and 2 whole in the cache");
  struct stat st;
  CHECK(stat(path, &st) == 0 && (uint64_t)st.st_size == SIZE, "cache file of full size");
  CHECK((uint64_t)st.st_blocks * 512 < 3ull * BLOCK, "cache file sparse: %lld bytes allocated",
        (long long)st.st_blocks * 512);
  marks(work, "cache", m);
  CHECK(strcmp(m, "011000") == 0, "marks %s", m);
  printf("middle range: fetched %llu bytes of %llu, marks %s\n",
         (unsigned long long)shared_store_bytes_fetched(s), (unsigned long long)SIZE, m);

  rc = shared_store_fetch(s, id, BLOCK + BLOCK / 2, BLOCK, path, sizeof path, msg, sizeof msg);
  CHECK(rc == 0, "fetch middle again: %s", msg);
  CHECK_EQ_U64(shared_store_bytes_fetched(s), 2 * BLOCK, "the same range again");
  rc = shared_store_fetch(s, id, 5ull * BLOCK, 12345, path, sizeof path, msg, sizeof msg);
  CHECK(rc == 0 && range_is(path, 5ull * BLOCK, 12345, true), "last block: %s", msg);
  CHECK_EQ_U64(shared_store_bytes_fetched(s), 2 * BLOCK + 12345, "the last, partial block");
  rc = shared_store_fetch(s, id, SIZE, 0, path, sizeof path, msg, sizeof msg);
  CHECK(rc == 0, "len 0: %s", msg);
  CHECK_EQ_U64(shared_store_bytes_fetched(s), 2 * BLOCK + 12345, "len 0 fetches nothing");
  rc = shared_store_fetch(s, id, SIZE - 10, 11, path, sizeof path, msg, sizeof msg);
  CHECK(rc == HISTD_EINVAL && strstr(msg, "past the end"), "past the end: %d %s", rc, msg);
  shared_store_close(s);

  /* a restart reuses the cache; a cached block damaged meanwhile is hashed
   * on its first use, found out and fetched again (block 1), the good one
   * (block 2) is not */
  snprintf(path, sizeof path, "%s/cache/%s.f64", work, id);
  flip_byte(path, BLOCK + 99);
  s = open_s3(work, "cache");
  rc = shared_store_fetch(s, id, BLOCK + BLOCK / 2, BLOCK, path, sizeof path, msg, sizeof msg);
  CHECK(rc == 0 && range_is(path, BLOCK, 2 * BLOCK, true), "after cache damage: %s", msg);
  CHECK_EQ_U64(shared_store_bytes_fetched(s), BLOCK, "only the damaged block again");
  shared_store_close(s);

  /* a manifest larger than the first read buffer (1 MiB): 20,000 blocks of
   * 16 bytes; and an empty object */
  s = open_s3(work, "cache-small");
  shared_store_set_block_bytes(s, 16);
  const struct { const char *name; uint64_t size; } extra[] = {{"many-blocks.f64", 320000},
                                                               {"empty.f64", 0}};
  for (size_t i = 0; i < 2; i++) {
    char xpath[4400], xid[65];
    snprintf(xpath, sizeof xpath, "%s/%s", work, extra[i].name);
    FILE *f = fopen(xpath, "wb");
    CHECK(f != NULL && fwrite(data, 1, extra[i].size, f) == extra[i].size && fclose(f) == 0,
          "writing %s", xpath);
    sha256_hex(data, extra[i].size, xid);
    CHECK(shared_store_put(s, xid, xpath, msg, sizeof msg) == 0, "put %s: %s", xpath, msg);
    uint64_t got = 1;
    CHECK(shared_store_size(s, xid, &got, msg, sizeof msg) == 0, "size %s: %s", xpath, msg);
    CHECK_EQ_U64(got, extra[i].size, extra[i].name);
    uint64_t before = shared_store_bytes_fetched(s), off = extra[i].size / 2;
    rc = shared_store_fetch(s, xid, off, extra[i].size ? 40 : 0, path, sizeof path, msg,
                            sizeof msg);
    CHECK(rc == 0 && range_is(path, off, extra[i].size ? 40 : 0, true), "fetch %s: %s", xpath,
          msg);
    /* 40 bytes from the start of a 16-byte block: three blocks */
    CHECK_EQ_U64(shared_store_bytes_fetched(s) - before, extra[i].size ? 48 : 0, extra[i].name);
    CHECK(shared_store_delete(s, xid, msg, sizeof msg) == 0, "delete %s: %s", xpath, msg);
  }
  shared_store_close(s);

  /* eight threads read the whole object at once through one store: each
   * block is downloaded once, and the file is right */
  s = open_s3(work, "cache-threads");
  fetch_arg args[8];
  pthread_t th[8];
  for (int i = 0; i < 8; i++) {
    args[i].s = s;
    pthread_create(&th[i], NULL, fetch_main, &args[i]);
  }
  for (int i = 0; i < 8; i++) {
    pthread_join(th[i], NULL);
    CHECK(args[i].rc == 0, "thread %d", i);
  }
  CHECK_EQ_U64(shared_store_bytes_fetched(s), SIZE, "each block once among 8 threads");
  CHECK(range_is(args[0].path, 0, SIZE, true), "the whole object");
  shared_store_close(s);
}

/* test_s3.py has put other bytes of the same size at the object's key. */
static void s3_served_wrong_phase(const char *work) {
  char msg[512], path[4400];
  shared_store *s = open_s3(work, "cache-fresh");
  int rc = shared_store_fetch(s, id, 3ull * BLOCK + 5, 10, path, sizeof path, msg, sizeof msg);
  CHECK(rc == HISTD_EIO && strstr(msg, "block 3 ") && strstr(msg, "does not match"),
        "served wrong: %d %s", rc, msg);
  printf("served wrong: %s\n", msg);
  char m[7];
  marks(work, "cache-fresh", m);
  CHECK(strcmp(m, "000000") == 0, "a refused block is not marked: %s", m);
  shared_store_close(s);

  /* what was checked before is still right (content-addressed: it never changes) */
  s = open_s3(work, "cache");
  rc = shared_store_fetch(s, id, BLOCK, 2 * BLOCK, path, sizeof path, msg, sizeof msg);
  CHECK(rc == 0 && range_is(path, BLOCK, 2 * BLOCK, true), "the good cached blocks: %s", msg);
  CHECK_EQ_U64(shared_store_bytes_fetched(s), 0, "from the cache");

  CHECK(shared_store_delete(s, id, msg, sizeof msg) == 0, "delete: %s", msg);
  uint64_t size;
  rc = shared_store_size(s, id, &size, msg, sizeof msg);
  CHECK(rc == HISTD_ENOENT && strstr(msg, id), "size after delete: %d %s", rc, msg);
  snprintf(path, sizeof path, "%s/cache/%s.f64", work, id);
  CHECK(access(path, F_OK) != 0, "the cached copy is gone");
  CHECK(shared_store_delete(s, id, msg, sizeof msg) == 0, "delete again: %s", msg);
  shared_store_close(s);
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "dir";
  if (strcmp(mode, "dir") == 0) {
    test_dir();
  } else if (strcmp(mode, "sigv4") == 0) {
    test_sigv4(argc > 2 ? argv[2] : NULL);
  } else if (strcmp(mode, "s3") == 0 && argc == 4 && getenv("HISTD_TEST_S3_URL")) {
    make_payload(argv[3]);
    if (strcmp(argv[2], "put") == 0)
      s3_put_phase(argv[3]);
    else
      s3_served_wrong_phase(argv[3]);
  } else {
    fprintf(stderr, "usage: %s dir | sigv4 [SIGNATURE] | s3 put|served-wrong WORKDIR\n",
            argv[0]);
    return 2;
  }
  free(data);
  return check_finish("test_shared_store");
}
