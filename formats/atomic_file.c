/* atomic_file.c - temporary file + fsync + rename (the write-then-rename idiom of POSIX rename(2):
 * rename replaces the target atomically within one file system, so a reader or a crash sees
 * either the old file or the complete new one). See atomic_file.h for the contract.
 */
#define _POSIX_C_SOURCE 200809L
#include "formats/atomic_file.h"

#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void af_reset(vx_atomic_file *af) {
  vx_free(af->path);
  vx_free(af->tmp_path);
  af->path = NULL;
  af->tmp_path = NULL;
  af->fd = -1;
}

vx_status vx_atomic_open(vx_atomic_file *af, const char *path, vx_error *err) {
  af->fd = -1;
  af->path = NULL;
  af->tmp_path = NULL;
  if (!path || !*path) return vx_error_set(err, VX_ERR_INVALID_ARG, "empty output path");
  struct stat st;
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
    return vx_error_set(err, VX_ERR_IO, "cannot write '%s': it is a directory", path);
  size_t n = strlen(path);
  af->path = (char *)vx_malloc(n + 1);
  af->tmp_path = (char *)vx_malloc(n + 12);
  if (!af->path || !af->tmp_path) {
    af_reset(af);
    return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  }
  memcpy(af->path, path, n + 1);
  memcpy(af->tmp_path, path, n);
  memcpy(af->tmp_path + n, ".tmp.XXXXXX", 12);
  af->fd = mkstemp(af->tmp_path);
  if (af->fd < 0) {
    int e = errno;
    af_reset(af);
    return vx_error_set(err, VX_ERR_IO, "cannot write '%s': %s", path, strerror(e));
  }
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
  char *copy = vx_strdup(path);
  if (!copy) return;
  int fd = open(dirname(copy), O_RDONLY);
  if (fd >= 0) {
    fsync(fd); /* best effort: some file systems refuse fsync on directories */
    close(fd);
  }
  vx_free(copy);
}

vx_status vx_atomic_commit(vx_atomic_file *af, vx_error *err) {
  if (af->fd < 0) return vx_error_set(err, VX_ERR_INVALID_ARG, "file is not open");
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
