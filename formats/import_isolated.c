/* import_isolated.c - mesh import in a child process with a time limit.
 *
 * The parent forks; the child runs vx_soup_import() and streams the result through a pipe: a
 * fixed record (status, message, counts, bounding box; explicit little-endian fields) followed by
 * the positions, 9 floats per triangle. The parent reads with poll() against a deadline. When the
 * deadline passes it kills the child (SIGKILL) and reports a time-out; when the pipe ends early it
 * reports how the child died. Every count read from the pipe is checked before it is used: the
 * child is running code that just parsed a hostile file.
 */
#define _POSIX_C_SOURCE 200809L
#include "svo/system.h"
#include "formats/mesh_import.h"
#include "formats/svo_codec.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { REC = 4 + 512 + 8 * 4 + 4 + 6 * 8 };

static int write_all(int fd, const void *p, size_t n) {
  const uint8_t *b = (const uint8_t *)p;
  while (n) {
    ssize_t w = write(fd, b, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    b += w;
    n -= (size_t)w;
  }
  return 0;
}

static void child(int fd, const char *path) {
  vx_soup m;
  vx_error e;
  memset(&e, 0, sizeof e);
  vx_status s = vx_soup_import(path, &m, &e);
  uint8_t rec[REC];
  memset(rec, 0, sizeof rec);
  vx_put_u32(rec, (uint32_t)s);
  memcpy(rec + 4, e.msg, sizeof e.msg);
  uint8_t *q = rec + 4 + 512;
  vx_put_u64(q, s == VX_OK ? m.tri_count : 0);
  vx_put_u64(q + 8, m.skipped_degenerate);
  vx_put_u64(q + 16, m.skipped_nonfinite);
  vx_put_u64(q + 24, m.skipped_nontriangle);
  vx_put_u32(q + 32, m.mesh_count);
  for (int i = 0; i < 3; i++) {
    vx_put_f64(q + 36 + 8 * i, m.bbox_min[i]);
    vx_put_f64(q + 60 + 8 * i, m.bbox_max[i]);
  }
  int bad = write_all(fd, rec, sizeof rec);
  if (!bad && s == VX_OK) bad = write_all(fd, m.pos, (size_t)m.tri_count * 9 * sizeof(float));
  _exit(bad ? 1 : 0);
}


/* Reads n bytes before the deadline: 0 done, 1 time out, 2 end of pipe or error. */
static int read_until(int fd, void *p, size_t n, double deadline) {
  uint8_t *b = (uint8_t *)p;
  while (n) {
    int ms = -1;
    if (deadline > 0) {
      double left = deadline - vx_clock_seconds();
      if (left <= 0) return 1;
      ms = left > 3600.0 ? 3600000 : (int)(left * 1000.0) + 1;
    }
    struct pollfd pf;
    pf.fd = fd;
    pf.events = POLLIN;
    int r = poll(&pf, 1, ms);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return 2;
    if (r == 0) continue; /* the loop re-checks the deadline */
    ssize_t got = read(fd, b, n);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return 2;
    b += got;
    n -= (size_t)got;
  }
  return 0;
}

static vx_status died(const char *path, pid_t pid, vx_error *err) {
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(st) && (WTERMSIG(st) == SIGINT || WTERMSIG(st) == SIGTERM))
    return vx_error_set(err, VX_ERR_INTERRUPTED, "interrupted while reading '%s'", path);
  if (WIFSIGNALED(st))
    return vx_error_set(err, VX_ERR_FORMAT,
                        "cannot read '%s': the importer crashed on it (signal %d)", path,
                        WTERMSIG(st));
  return vx_error_set(err, VX_ERR_FORMAT, "cannot read '%s': the importer stopped early", path);
}

vx_status vx_soup_import_isolated(const char *path, double timeout_s, vx_soup *out,
                                  vx_error *err) {
  memset(out, 0, sizeof *out);
  int fds[2];
  if (pipe(fds) != 0)
    return vx_error_set(err, VX_ERR_IO, "cannot start the importer: %s", strerror(errno));
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return vx_error_set(err, VX_ERR_IO, "cannot start the importer: %s", strerror(errno));
  }
  if (pid == 0) {
    /* Ctrl-C reaches the whole process group: the child stops at once, the parent reports it. */
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    close(fds[0]);
    child(fds[1], path);
  }
  close(fds[1]);
  double deadline = timeout_s > 0 ? vx_clock_seconds() + timeout_s : 0.0;
  uint8_t rec[REC];
  vx_status s = VX_OK;
  int r = read_until(fds[0], rec, sizeof rec, deadline);
  if (r == 0) {
    const uint8_t *q = rec + 4 + 512;
    uint32_t cs = vx_get_u32(rec);
    uint64_t n = vx_get_u64(q);
    if (cs > VX_ERR_INTERRUPTED || n > (UINT64_C(1) << 32) || (cs != VX_OK && n != 0)) {
      s = vx_error_set(err, VX_ERR_FORMAT, "cannot read '%s': the importer answered nonsense", path);
    } else if (cs != VX_OK) {
      s = (vx_status)cs;
      if (err) {
        err->status = s;
        memcpy(err->msg, rec + 4, sizeof err->msg);
        err->msg[sizeof err->msg - 1] = 0;
      }
    } else {
      out->tri_count = n;
      out->skipped_degenerate = vx_get_u64(q + 8);
      out->skipped_nonfinite = vx_get_u64(q + 16);
      out->skipped_nontriangle = vx_get_u64(q + 24);
      out->mesh_count = vx_get_u32(q + 32);
      for (int i = 0; i < 3; i++) {
        out->bbox_min[i] = vx_get_f64(q + 36 + 8 * i);
        out->bbox_max[i] = vx_get_f64(q + 60 + 8 * i);
      }
      out->pos = (float *)vx_malloc(n ? (size_t)n * 9 * sizeof(float) : 1);
      if (!out->pos)
        s = vx_error_set(err, VX_ERR_NOMEM, "cannot hold %llu triangles in memory",
                         (unsigned long long)n);
      else
        r = read_until(fds[0], out->pos, (size_t)n * 9 * sizeof(float), deadline);
    }
  }
  close(fds[0]);
  if (s == VX_OK && r == 1) {
    kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
    }
    s = vx_error_set(err, VX_ERR_FORMAT,
                     "cannot read '%s': the import did not finish within %g s (the importer may "
                     "loop on this file)", path, timeout_s);
  } else if (s == VX_OK && r == 2) {
    s = died(path, pid, err);
  } else {
    if (s != VX_OK) kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
    }
  }
  if (s != VX_OK) vx_soup_free(out);
  return s;
}
