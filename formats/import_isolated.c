/* import_isolated.c - mesh import in a child process with a time and a memory limit.
 *
 * The parent forks; the child runs vx_soup_import() and streams the result through a pipe: a
 * fixed record (status, message, counts, bounding box, how far the child's address space grew;
 * explicit little-endian fields) followed by the positions, 9 floats per triangle. The parent
 * reads with poll() against a deadline. When the deadline passes it kills the child (SIGKILL) and
 * reports a time-out; when the pipe ends early it reports how the child died. Every count read
 * from the pipe is checked before it is used: the child is running code that just parsed a
 * hostile file.
 *
 * Memory. Under a limit the child lowers its own address-space limit (RLIMIT_AS) to its size at
 * the fork plus the budget: what the process may still use, the limit less the parent's resident
 * bytes. A child's new pages are its only cost (the pages it shares with the parent are counted
 * there), so parent and child together stay near the limit. Past it allocations fail: assimp
 * turns std::bad_alloc into an import error that mesh_import.c reports as VX_ERR_NOMEM, and the
 * parent reports that as the limit being too small. Some importers swallow the exception and
 * fail later for another reason, and a C allocation left unchecked can kill the child, so any
 * failure of a child that had grown by half its budget or more (its VmPeak, or its peak RSS when
 * it died) is reported the same way. Header counts are checked before the fork
 * (mesh_precheck.c), so a header bomb never starts a child. The triangles the parent receives
 * are checked against the limit before they are allocated.
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* wait4: the child's peak memory */
#include "svo/system.h"
#include "formats/mesh_import.h"
#include "formats/mesh_precheck.h"
#include "formats/svo_codec.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { REC = 4 + 512 + 8 * 4 + 4 + 6 * 8 + 8 };

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

/* The least address space a child gets under a limit, whatever the parent holds already: enough
 * for assimp to read a small mesh and fail cleanly on a large one. */
#define MIN_BUDGET ((uint64_t)16 << 20)

/* Lowers this process's address-space limit to vm (its current size) plus budget bytes. */
static void limit_address_space(uint64_t vm, uint64_t budget) {
  struct rlimit r;
  if (!vm || getrlimit(RLIMIT_AS, &r) != 0) return;
  rlim_t want = vm > (uint64_t)RLIM_INFINITY - budget ? RLIM_INFINITY : (rlim_t)(vm + budget);
  if (r.rlim_max != RLIM_INFINITY && want > r.rlim_max) want = r.rlim_max;
  if (r.rlim_cur != RLIM_INFINITY && want > r.rlim_cur) return; /* tighter already */
  r.rlim_cur = want;
  (void)setrlimit(RLIMIT_AS, &r);
}

/* This process's largest address space so far (VmPeak), 0 when unknown. */
static uint64_t vm_peak_bytes(void) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  unsigned long long kib = 0;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, "VmPeak:", 7) == 0 && sscanf(line + 7, "%llu", &kib) == 1) break;
  fclose(f);
  return (uint64_t)kib * 1024;
}

static void child(int fd, const char *path, uint64_t budget) {
  const uint64_t vm0 = vx_virtual_bytes();
  if (budget && vm0) limit_address_space(vm0, budget);
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
  /* how far the import grew the address space: how near it came to the limit */
  uint64_t peak = vm_peak_bytes();
  vx_put_u64(q + 84, vm0 && peak > vm0 ? peak - vm0 : 0);
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

/* "500.0 MiB", "2.0 GiB". */
static void fmt_limit(uint64_t b, char *out, size_t cap) {
  if (b >= ((uint64_t)1 << 30))
    snprintf(out, cap, "%.1f GiB", (double)b / 1073741824.0);
  else
    snprintf(out, cap, "%.1f MiB", (double)b / 1048576.0);
}

static vx_status over_limit(const char *path, uint64_t mem_limit, vx_error *err) {
  char lim[32];
  fmt_limit(mem_limit, lim, sizeof lim);
  return vx_error_set(err, VX_ERR_LIMIT,
                      "cannot read '%s': the import needs more than the memory limit (%s)", path,
                      lim);
}

/* Reaps the child, which ended without a complete answer, and says why. Near its memory budget
 * (half of it or more in new pages) a child that died is taken to have run out of memory. */
static vx_status died(const char *path, pid_t pid, uint64_t mem_limit, uint64_t rss0,
                      uint64_t budget, vx_error *err) {
  int st = 0;
  struct rusage ru;
  memset(&ru, 0, sizeof ru);
  while (wait4(pid, &st, 0, &ru) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(st) && (WTERMSIG(st) == SIGINT || WTERMSIG(st) == SIGTERM))
    return vx_error_set(err, VX_ERR_INTERRUPTED, "interrupted while reading '%s'", path);
  uint64_t peak = ru.ru_maxrss > 0 ? (uint64_t)ru.ru_maxrss * 1024 : 0;
  if (mem_limit && peak > rss0 && peak - rss0 >= budget / 2)
    return over_limit(path, mem_limit, err);
  if (WIFSIGNALED(st))
    return vx_error_set(err, VX_ERR_FORMAT,
                        "cannot read '%s': the importer crashed on it (signal %d)", path,
                        WTERMSIG(st));
  return vx_error_set(err, VX_ERR_FORMAT, "cannot read '%s': the importer stopped early", path);
}

vx_status vx_soup_import_isolated(const char *path, double timeout_s, uint64_t mem_limit,
                                  vx_soup *out, vx_error *err) {
  memset(out, 0, sizeof *out);
  /* A header that claims more than its file holds is refused here, without a child. */
  vx_status s = vx_mesh_precheck_file(path, err);
  if (s != VX_OK) return s;
  uint64_t rss0 = 0, budget = 0;
  if (mem_limit) {
    rss0 = vx_resident_bytes();
    budget = mem_limit > rss0 ? mem_limit - rss0 : 0;
    if (budget < MIN_BUDGET) budget = MIN_BUDGET;
  }
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
    child(fds[1], path, budget);
  }
  close(fds[1]);
  double deadline = timeout_s > 0 ? vx_clock_seconds() + timeout_s : 0.0;
  uint8_t rec[REC];
  int r = read_until(fds[0], rec, sizeof rec, deadline);
  if (r == 0) {
    const uint8_t *q = rec + 4 + 512;
    uint32_t cs = vx_get_u32(rec);
    uint64_t n = vx_get_u64(q);
    if (cs > VX_ERR_INTERRUPTED || n > (UINT64_C(1) << 32) || (cs != VX_OK && n != 0)) {
      s = vx_error_set(err, VX_ERR_FORMAT, "cannot read '%s': the importer answered nonsense", path);
    } else if (mem_limit && cs != VX_OK &&
               (cs == VX_ERR_NOMEM || vx_get_u64(q + 84) >= budget / 2)) {
      /* Out of memory, or a failure after using half the budget or more: assimp does not always
       * pass std::bad_alloc on (its 3MF reader can swallow one and leave a broken scene that
       * fails validation instead), so a failure that near the limit is taken to be the limit. */
      s = over_limit(path, mem_limit, err);
    } else if (cs != VX_OK) {
      s = (vx_status)cs;
      if (err) {
        err->status = s;
        memcpy(err->msg, rec + 4, sizeof err->msg);
        err->msg[sizeof err->msg - 1] = 0;
      }
    } else if (mem_limit &&
               (double)vx_resident_bytes() + 2.0 * 36.0 * (double)n > (double)mem_limit) {
      /* twice 36 bytes a triangle: the child's copy stays alive while this one fills */
      char lim[32];
      fmt_limit(mem_limit, lim, sizeof lim);
      s = vx_error_set(err, VX_ERR_LIMIT,
                       "cannot read '%s': its %llu triangles (%.1f MiB) do not fit under the "
                       "memory limit (%s)",
                       path, (unsigned long long)n, (double)n * 36.0 / 1048576.0, lim);
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
    s = died(path, pid, mem_limit, rss0, budget, err);
  } else {
    if (s != VX_OK) kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
    }
  }
  if (s != VX_OK) vx_soup_free(out);
  return s;
}
