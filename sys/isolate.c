/* SPDX-License-Identifier: Apache-2.0 */
/* isolate.c - child-process plumbing for the isolated readers (isolate.h). */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* wait4 */
#include "sys/isolate.h"
#include "sys/system.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

uint64_t vx_isolate_budget(uint64_t mem_limit, uint64_t min_budget) {
  uint64_t rss = vx_resident_bytes();
  uint64_t b = mem_limit > rss ? mem_limit - rss : 0;
  return b < min_budget ? min_budget : b;
}

uint64_t vx_isolate_limit_memory(uint64_t budget) {
  uint64_t vm = vx_virtual_bytes();
  struct rlimit r;
  if (!vm || !budget || getrlimit(RLIMIT_AS, &r) != 0) return vm;
  rlim_t want = vm > (uint64_t)RLIM_INFINITY - budget ? RLIM_INFINITY : (rlim_t)(vm + budget);
  if (r.rlim_max != RLIM_INFINITY && want > r.rlim_max) want = r.rlim_max;
  if (r.rlim_cur != RLIM_INFINITY && want > r.rlim_cur) return vm; /* tighter already */
  r.rlim_cur = want;
  (void)setrlimit(RLIMIT_AS, &r);
  return vm;
}

uint64_t vx_isolate_growth(uint64_t start) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  unsigned long long kib = 0;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, "VmPeak:", 7) == 0 && sscanf(line + 7, "%llu", &kib) == 1) break;
  fclose(f);
  uint64_t peak = (uint64_t)kib * 1024;
  return start && peak > start ? peak - start : 0;
}

pid_t vx_isolate_fork(int *fd, const char *what, vx_error *err) {
  int fds[2];
  if (pipe(fds) != 0) {
    vx_error_set(err, VX_ERR_IO, "cannot start %s: %s", what, strerror(errno));
    return -1;
  }
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(fds[0]);
    close(fds[1]);
    vx_error_set(err, VX_ERR_IO, "cannot start %s: %s", what, strerror(e));
    return -1;
  }
  if (pid == 0) {
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    close(fds[0]);
    *fd = fds[1];
    return 0;
  }
  close(fds[1]);
  *fd = fds[0];
  return pid;
}

int vx_isolate_write(int fd, const void *p, size_t n) {
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

int vx_isolate_read(int fd, void *p, size_t n, double deadline) {
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

vx_isolate_end vx_isolate_reap(pid_t pid, int kill_first, uint64_t rss0, uint64_t budget,
                               int *sig) {
  if (kill_first) kill(pid, SIGKILL);
  int st = 0;
  struct rusage ru;
  memset(&ru, 0, sizeof ru);
  while (wait4(pid, &st, 0, &ru) < 0 && errno == EINTR) {
  }
  *sig = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
  if (!WIFSIGNALED(st) && WIFEXITED(st) && WEXITSTATUS(st) == 0) return VX_ISOLATE_EXITED;
  if (*sig == SIGINT || *sig == SIGTERM) return VX_ISOLATE_INTERRUPTED;
  /* Died, or exited with a failure (a sanitizer's allocator exits instead of raising), after
   * growing by half its budget or more: out of memory. */
  uint64_t peak = ru.ru_maxrss > 0 ? (uint64_t)ru.ru_maxrss * 1024 : 0;
  if (budget && peak > rss0 && peak - rss0 >= budget / 2) return VX_ISOLATE_NEAR_LIMIT;
  if (!WIFSIGNALED(st)) return VX_ISOLATE_EXITED;
  return VX_ISOLATE_CRASHED;
}
