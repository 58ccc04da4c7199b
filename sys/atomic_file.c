/* SPDX-License-Identifier: Apache-2.0 */
/* atomic_file.c - outputs: temporary file + fsync + rename (the write-then-rename idiom of POSIX
 * rename(2): rename replaces the target atomically within one file system), direct writes to
 * devices and FIFOs, and the checks that keep an output from destroying what it must not.
 * atomic_file.h has the contract.
 */
#define _GNU_SOURCE /* copy_file_range */
#include "sys/atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif
#define VX_NAME_MAX 255  /* bytes of one path component on the usual file systems */
#define TMP_TAG ".voxlod-tmp-"

/* ---- inputs held by live objects ------------------------------------------------------------ */

typedef struct held {
  vx_file_id id;
  uint64_t count;
} held;

static pthread_mutex_t held_mu = PTHREAD_MUTEX_INITIALIZER;
static held *held_list;
static size_t held_n, held_cap;

int vx_file_id_of(const char *path, vx_file_id *id) {
  struct stat st;
  if (!path || stat(path, &st) != 0) return 0;
  id->dev = (uint64_t)st.st_dev;
  id->ino = (uint64_t)st.st_ino;
  return 1;
}

void vx_input_hold(const vx_file_id *id) {
  pthread_mutex_lock(&held_mu);
  size_t i = 0;
  while (i < held_n && !(held_list[i].id.dev == id->dev && held_list[i].id.ino == id->ino)) i++;
  if (i < held_n) {
    held_list[i].count++;
  } else {
    if (held_n == held_cap) {
      size_t cap = held_cap ? 2 * held_cap : 8;
      held *g = (held *)vx_realloc(held_list, cap * sizeof(held));
      if (g) {
        held_list = g;
        held_cap = cap;
      }
    }
    if (held_n < held_cap) { /* out of memory: not held, the caller's named inputs still count */
      held_list[held_n].id = *id;
      held_list[held_n].count = 1;
      held_n++;
    }
  }
  pthread_mutex_unlock(&held_mu);
}

void vx_input_release(const vx_file_id *id) {
  pthread_mutex_lock(&held_mu);
  for (size_t i = 0; i < held_n; i++)
    if (held_list[i].id.dev == id->dev && held_list[i].id.ino == id->ino) {
      if (--held_list[i].count == 0) held_list[i] = held_list[--held_n];
      break;
    }
  if (held_n == 0) {
    vx_free(held_list);
    held_list = NULL;
    held_cap = 0;
  }
  pthread_mutex_unlock(&held_mu);
}

static int is_held(const vx_file_id *id) {
  int found = 0;
  pthread_mutex_lock(&held_mu);
  for (size_t i = 0; i < held_n && !found; i++)
    found = held_list[i].id.dev == id->dev && held_list[i].id.ino == id->ino;
  pthread_mutex_unlock(&held_mu);
  return found;
}

/* ---- temporaries in progress (for a fatal signal's handler) ----------------------------------- */

#define TMP_SLOTS 32
static char tmp_table[TMP_SLOTS][PATH_MAX];
static volatile sig_atomic_t tmp_used[TMP_SLOTS];
static pthread_mutex_t tmp_mu = PTHREAD_MUTEX_INITIALIZER;

static int tmp_register(const char *path) {
  if (strlen(path) >= PATH_MAX) return -1;
  pthread_mutex_lock(&tmp_mu);
  int slot = -1;
  for (int i = 0; i < TMP_SLOTS && slot < 0; i++)
    if (!tmp_used[i]) slot = i;
  if (slot >= 0) {
    memcpy(tmp_table[slot], path, strlen(path) + 1);
    __atomic_store_n(&tmp_used[slot], 1, __ATOMIC_SEQ_CST);
  }
  pthread_mutex_unlock(&tmp_mu);
  return slot;
}

static void tmp_unregister(int slot) {
  if (slot < 0) return;
  pthread_mutex_lock(&tmp_mu);
  __atomic_store_n(&tmp_used[slot], 0, __ATOMIC_SEQ_CST);
  pthread_mutex_unlock(&tmp_mu);
}

void vx_atomic_remove_temporaries(void) {
  for (int i = 0; i < TMP_SLOTS; i++)
    if (__atomic_load_n(&tmp_used[i], __ATOMIC_SEQ_CST)) unlink(tmp_table[i]);
}

/* ---- what an output path names ---------------------------------------------------------------- */

enum { OUT_STDOUT, OUT_DIRECT, OUT_REPLACE };

/* The directory part of path ("." when none), vx_malloc'ed. */
static char *dir_of(const char *path) {
  const char *slash = strrchr(path, '/');
  size_t n = slash ? (size_t)(slash - path) : 1;
  if (slash == path) n = 1; /* "/x" */
  char *d = (char *)vx_malloc(n + 1);
  if (!d) return NULL;
  memcpy(d, slash ? path : ".", n);
  d[n] = 0;
  return d;
}

/* Follows symbolic links from path to the file that will really be written (which may not exist
 * yet: a dangling link names where to create it). vx_malloc'ed, NULL with err set. */
static char *follow_links(const char *path, vx_error *err) {
  char *cur = vx_strdup(path);
  if (!cur) {
    vx_error_set(err, VX_ERR_NOMEM, "out of memory");
    return NULL;
  }
  for (int hops = 0; hops < 40; hops++) {
    struct stat st;
    if (lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode)) return cur;
    char target[PATH_MAX];
    ssize_t n = readlink(cur, target, sizeof target - 1);
    if (n < 0) {
      vx_error_set(err, VX_ERR_IO, "cannot write '%s': cannot read the link '%s': %s", path, cur,
                   strerror(errno));
      vx_free(cur);
      return NULL;
    }
    target[n] = 0;
    char *next;
    if (target[0] == '/') {
      next = vx_strdup(target);
    } else {
      char *d = dir_of(cur);
      size_t len = d ? strlen(d) + 1 + (size_t)n + 1 : 0;
      next = d ? (char *)vx_malloc(len) : NULL;
      if (next) snprintf(next, len, "%s/%s", d, target);
      vx_free(d);
    }
    vx_free(cur);
    if (!next) {
      vx_error_set(err, VX_ERR_NOMEM, "out of memory");
      return NULL;
    }
    cur = next;
  }
  vx_error_set(err, VX_ERR_IO, "cannot write '%s': too many levels of symbolic links", path);
  vx_free(cur);
  return NULL;
}

/* Classifies path; for OUT_REPLACE, *target receives the file to replace (links followed). */
static vx_status classify(const char *path, int *kind, char **target, vx_error *err) {
  *target = NULL;
  if (!path || !*path) return vx_error_set(err, VX_ERR_INVALID_ARG, "empty output path");
  if (strcmp(path, "-") == 0) {
    *kind = OUT_STDOUT;
    return VX_OK;
  }
  struct stat st;
  if (stat(path, &st) == 0) {
    if (S_ISDIR(st.st_mode))
      return vx_error_set(err, VX_ERR_IO, "cannot write '%s': it is a directory", path);
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
      *kind = OUT_DIRECT;
      return VX_OK;
    }
    if (!S_ISREG(st.st_mode))
      return vx_error_set(err, VX_ERR_IO,
                          "cannot write '%s': not a regular file, character device or FIFO "
                          "(refusing to replace it)", path);
  } else if (errno != ENOENT) {
    return vx_error_set(err, VX_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
  }
  *kind = OUT_REPLACE;
  *target = follow_links(path, err);
  return *target ? VX_OK : (err ? err->status : VX_ERR_IO);
}

vx_status vx_output_check(const char *path, const char *const *inputs, size_t n, char **tmp_dir,
                          vx_error *err) {
  if (tmp_dir) *tmp_dir = NULL;
  int kind;
  char *target;
  vx_status st = classify(path, &kind, &target, err);
  if (st != VX_OK) return st;
  vx_file_id out;
  if (kind != OUT_STDOUT && vx_file_id_of(path, &out)) {
    int same = is_held(&out);
    for (size_t i = 0; i < n && !same; i++) {
      vx_file_id in;
      same = inputs[i] && vx_file_id_of(inputs[i], &in) && in.dev == out.dev && in.ino == out.ino;
    }
    if (same) {
      vx_free(target);
      return vx_error_set(err, VX_ERR_INVALID_ARG,
                          "refusing to write '%s': it is an input of this run (the same file)",
                          path);
    }
  }
  if (kind == OUT_REPLACE) {
    char *d = dir_of(target);
    if (!d) st = vx_error_set(err, VX_ERR_NOMEM, "out of memory");
    struct stat ds;
    int e = st == VX_OK && stat(d, &ds) != 0 ? errno : 0;
    if (st == VX_OK && (e || !S_ISDIR(ds.st_mode)))
      st = vx_error_set(err, VX_ERR_IO, "cannot write '%s': %s '%s' %s", path,
                        e == ENOENT || !e ? "the directory" : "", d,
                        e == ENOENT || !e ? "does not exist" : strerror(e));
    else if (st == VX_OK && access(d, W_OK | X_OK) != 0)
      st = vx_error_set(err, VX_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
    if (st == VX_OK && tmp_dir)
      *tmp_dir = d;
    else
      vx_free(d);
  }
  vx_free(target);
  return st;
}

/* ---- writing ------------------------------------------------------------------------------------ */

static void af_reset(vx_atomic_file *af) {
  tmp_unregister(af->slot);
  vx_free(af->path);
  vx_free(af->tmp_path);
  af->path = NULL;
  af->tmp_path = NULL;
  af->fd = -1;
  af->direct = 0;
  af->slot = -1;
}

/* "<dir>/<name>.voxlod-tmp-XXXXXX", the name shortened so that the component fits 255 bytes. */
static char *tmp_name(const char *target) {
  const char *slash = strrchr(target, '/');
  const char *base = slash ? slash + 1 : target;
  size_t dir_len = (size_t)(base - target), base_len = strlen(base);
  size_t room = VX_NAME_MAX - (sizeof TMP_TAG - 1) - 6;
  if (base_len > room) base_len = room;
  char *t = (char *)vx_malloc(dir_len + base_len + sizeof TMP_TAG + 6 + 1);
  if (!t) return NULL;
  memcpy(t, target, dir_len);
  memcpy(t + dir_len, base, base_len);
  memcpy(t + dir_len + base_len, TMP_TAG "XXXXXX", sizeof TMP_TAG - 1 + 6 + 1);
  return t;
}

vx_status vx_atomic_open(vx_atomic_file *af, const char *path, vx_error *err) {
  af->fd = -1;
  af->direct = 0;
  af->path = NULL;
  af->tmp_path = NULL;
  af->slot = -1;
  vx_status st = vx_output_check(path, NULL, 0, NULL, err);
  if (st != VX_OK) return st;
  int kind;
  char *target;
  if ((st = classify(path, &kind, &target, err)) != VX_OK) return st;
  if (kind != OUT_REPLACE) {
    af->direct = 1;
    af->path = vx_strdup(path);
    if (!af->path) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
    af->fd = kind == OUT_STDOUT ? dup(STDOUT_FILENO) : open(path, O_WRONLY | O_CLOEXEC);
    if (af->fd < 0) {
      int e = errno;
      af_reset(af);
      return vx_error_set(err, VX_ERR_IO, "cannot write '%s': %s", path, strerror(e));
    }
    return VX_OK;
  }
  af->path = target;
  af->tmp_path = tmp_name(target);
  if (!af->tmp_path) {
    af_reset(af);
    return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  }
  af->fd = mkstemp(af->tmp_path);
  if (af->fd < 0) {
    int e = errno;
    af_reset(af);
    return vx_error_set(err, VX_ERR_IO, "cannot write '%s': %s", path, strerror(e));
  }
  af->slot = tmp_register(af->tmp_path);
  return VX_OK;
}

vx_status vx_atomic_write(vx_atomic_file *af, const void *data, size_t n, vx_error *err) {
  if (af->fd < 0) return vx_error_set(err, VX_ERR_INVALID_ARG, "file is not open");
  const unsigned char *p = (const unsigned char *)data;
  while (n > 0) {
    size_t chunk = n > ((size_t)1 << 30) ? ((size_t)1 << 30) : n;
    ssize_t w = write(af->fd, p, chunk);
    if (w < 0) {
      if (errno == EINTR) continue;
      return vx_error_set(err, VX_ERR_IO, "cannot write '%s': %s", af->path, strerror(errno));
    }
    if (w == 0)
      return vx_error_set(err, VX_ERR_IO, "cannot write '%s': no space written", af->path);
    p += w;
    n -= (size_t)w;
  }
  return VX_OK;
}

vx_status vx_atomic_write_from(vx_atomic_file *af, int fd, uint64_t at, uint64_t n,
                               const char *name, vx_error *err) {
  if (af->fd < 0) return vx_error_set(err, VX_ERR_INVALID_ARG, "file is not open");
  loff_t in = (loff_t)at;
  int kernel = 1; /* copy_file_range until it is refused (another file system, a pipe) */
  while (n > 0) {
    const size_t chunk = n > ((uint64_t)1 << 30) ? ((size_t)1 << 30) : (size_t)n;
    ssize_t w = -1;
    if (kernel) {
      w = copy_file_range(fd, &in, af->fd, NULL, chunk, 0);
      if (w < 0 && errno != EINTR && errno != EIO && errno != ENOSPC && errno != EFBIG) {
        kernel = 0;
        continue;
      }
    } else {
      unsigned char buf[1 << 16];
      ssize_t r = pread(fd, buf, chunk < sizeof buf ? chunk : sizeof buf, (off_t)in);
      if (r > 0) {
        vx_status s = vx_atomic_write(af, buf, (size_t)r, err);
        if (s != VX_OK) return s;
        in += r;
      }
      w = r;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0)
      return vx_error_set(err, VX_ERR_IO, "cannot copy '%s' into '%s': %s", name, af->path,
                          strerror(errno));
    if (w == 0) return vx_error_set(err, VX_ERR_IO, "cannot copy '%s': it shrank", name);
    n -= (uint64_t)w;
  }
  return VX_OK;
}

void vx_atomic_abort(vx_atomic_file *af) {
  if (af->fd >= 0) close(af->fd);
  if (af->tmp_path) unlink(af->tmp_path);
  af_reset(af);
}

/* Mode a plain open(O_CREAT, 0666) would give, or the replaced file's mode. */
static mode_t target_mode(const char *path) {
  struct stat st;
  if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) return st.st_mode & 07777;
  mode_t m = umask(022);
  umask(m);
  return 0666 & ~m;
}

static void fsync_dir(const char *path) {
  char *d = dir_of(path);
  if (!d) return;
  int fd = open(d, O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    fsync(fd); /* best effort: some file systems refuse fsync on directories */
    close(fd);
  }
  vx_free(d);
}

vx_status vx_atomic_commit(vx_atomic_file *af, vx_error *err) {
  if (af->fd < 0) return vx_error_set(err, VX_ERR_INVALID_ARG, "file is not open");
  if (af->direct) {
    int rc = close(af->fd);
    af->fd = -1;
    vx_status st = rc == 0 ? VX_OK
                           : vx_error_set(err, VX_ERR_IO, "cannot write '%s': %s", af->path,
                                          strerror(errno));
    af_reset(af);
    return st;
  }
  if (fchmod(af->fd, target_mode(af->path)) != 0 || fsync(af->fd) != 0) {
    int e = errno;
    vx_error_set(err, VX_ERR_IO, "cannot write '%s': %s", af->path, strerror(e));
    vx_atomic_abort(af);
    return VX_ERR_IO;
  }
  int rc = close(af->fd);
  af->fd = -1;
  if (rc != 0) {
    int e = errno;
    vx_error_set(err, VX_ERR_IO, "cannot write '%s': %s", af->path, strerror(e));
    vx_atomic_abort(af);
    return VX_ERR_IO;
  }
  if (rename(af->tmp_path, af->path) != 0) {
    int e = errno;
    vx_error_set(err, VX_ERR_IO, "cannot replace '%s': %s", af->path, strerror(e));
    vx_atomic_abort(af);
    return VX_ERR_IO;
  }
  fsync_dir(af->path);
  vx_free(af->tmp_path); /* renamed: nothing to remove any more */
  af->tmp_path = NULL;
  af_reset(af);
  return VX_OK;
}

vx_status vx_atomic_write_file(const char *path, const void *data, size_t n, vx_error *err) {
  vx_atomic_file af;
  vx_status s = vx_atomic_open(&af, path, err);
  if (s != VX_OK) return s;
  s = vx_atomic_write(&af, data, n, err);
  if (s != VX_OK) {
    vx_atomic_abort(&af);
    return s;
  }
  return vx_atomic_commit(&af, err);
}
