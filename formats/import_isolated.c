/* SPDX-License-Identifier: Apache-2.0 */
/* import_isolated.c - mesh import in a child process with a time and a memory limit.
 *
 * The parent forks; the child runs vx_soup_import() and streams the result through a pipe: a
 * fixed record (status, message, counts, bounding box, how far the child's address space grew;
 * explicit little-endian fields; the summary of the colour: color_record.h) followed by the
 * positions, 9 floats per triangle, then the colour (materials, textures, the attributes of every
 * triangle, the warnings: color_record.h). The parent
 * reads with poll() against a deadline. When the deadline passes it kills the child (SIGKILL) and
 * reports a time-out; when the pipe ends early it reports how the child died. Every count read
 * from the pipe is checked before it is used: the child is running code that just parsed a
 * hostile file.
 *
 * A large binary STL or PLY that the streaming pass takes (vx_soup_stream_candidate,
 * formats/tri_stream.h) is read in this process instead, within the same limits: that pass is our
 * own, checks every count and index before use and is fuzzed, and copying 10^8 triangles from a
 * child through the pipe doubled the import's time.
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
 * are checked against the limit before they are allocated, with their colour (the sizes of its
 * tables and textures, from the summary, which the colour stream must then match).
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* wait4: the child's peak memory */
#include "sys/system.h"
#include "formats/mesh_import.h"
#include "formats/color_record.h"
#include "sys/isolate.h"
#include "formats/mesh_precheck.h"
#include "formats/svo_codec.h"
#include "formats/tri_stream.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { REC_BASE = 4 + 512 + 8 * 4 + 4 + 6 * 8 + 8, REC = REC_BASE + VX_COLOR_SUMMARY_BYTES };

static int write_fd(void *ctx, const void *p, size_t n) {
  return vx_isolate_write(*(const int *)ctx, p, n) ? 2 : 0;
}

typedef struct pipe_in {
  int fd;
  double deadline;
} pipe_in;

static int read_fd(void *ctx, void *p, size_t n) {
  const pipe_in *in = (const pipe_in *)ctx;
  return vx_isolate_read(in->fd, p, n, in->deadline);
}

/* The least address space a child gets under a limit, whatever the parent holds already: enough
 * for assimp to read a small mesh and fail cleanly on a large one. */
#define MIN_BUDGET ((uint64_t)16 << 20)

static void child(int fd, const char *path, uint64_t budget) {
  const uint64_t vm0 = budget ? vx_isolate_limit_memory(budget) : 0;
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
  vx_put_u64(q + 84, vx_isolate_growth(vm0));
  vx_color_summary_put(s == VX_OK ? m.color : NULL, rec + REC_BASE);
  int bad = vx_isolate_write(fd, rec, sizeof rec);
  if (!bad && s == VX_OK)
    bad = vx_isolate_write(fd, m.pos, (size_t)m.tri_count * 9 * sizeof(float));
  if (!bad && s == VX_OK) bad = vx_soup_color_write(m.color, m.tri_count, write_fd, &fd);
  _exit(bad ? 1 : 0);
}


static vx_status over_limit(const char *path, uint64_t mem_limit, vx_error *err) {
  char lim[32];
  return vx_error_set(err, VX_ERR_LIMIT,
                      "cannot read '%s': the import needs more than the memory limit (%s)", path,
                      vx_bytes_text((double)mem_limit, lim, sizeof lim));
}

/* The child ended without a complete answer: why. */
static vx_status died(const char *path, pid_t pid, uint64_t mem_limit, uint64_t rss0,
                      uint64_t budget, vx_error *err) {
  int sig = 0;
  switch (vx_isolate_reap(pid, 0, rss0, budget, &sig)) {
  case VX_ISOLATE_INTERRUPTED:
    return vx_error_set(err, VX_ERR_INTERRUPTED, "interrupted while reading '%s'", path);
  case VX_ISOLATE_NEAR_LIMIT:
    if (mem_limit) return over_limit(path, mem_limit, err);
    /* fall through */
  case VX_ISOLATE_CRASHED:
    return vx_error_set(err, VX_ERR_FORMAT,
                        "cannot read '%s': the importer crashed on it (signal %d)", path, sig);
  default:
    return vx_error_set(err, VX_ERR_FORMAT, "cannot read '%s': the importer stopped early", path);
  }
}

vx_status vx_soup_import_isolated(const char *path, double timeout_s, uint64_t mem_limit,
                                  vx_soup *out, vx_error *err) {
  memset(out, 0, sizeof *out);
  /* A header that claims more than its file holds is refused here, without a child. */
  vx_status s = vx_mesh_precheck_file(path, err);
  if (s != VX_OK) return s;
  struct stat st;
  if (stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
      vx_soup_stream_candidate(path, (uint64_t)st.st_size)) {
    vx_error e2;
    memset(&e2, 0, sizeof e2);
    int taken = 0;
    s = vx_soup_import_stream_limited(path, mem_limit, timeout_s, out, &taken, &e2);
    if (taken) {
      if (s != VX_OK && err) *err = e2;
      return s;
    }
  }
  uint64_t rss0 = mem_limit ? vx_resident_bytes() : 0;
  uint64_t budget = mem_limit ? vx_isolate_budget(mem_limit, MIN_BUDGET) : 0;
  int fd;
  pid_t pid = vx_isolate_fork(&fd, "the importer", err);
  if (pid < 0) return err ? err->status : VX_ERR_IO;
  if (pid == 0) child(fd, path, budget);
  double deadline = timeout_s > 0 ? vx_clock_seconds() + timeout_s : 0.0;
  uint8_t rec[REC];
  int r = vx_isolate_read(fd, rec, sizeof rec, deadline);
  if (r == 0) {
    const uint8_t *q = rec + 4 + 512;
    uint32_t cs = vx_get_u32(rec);
    uint64_t n = vx_get_u64(q);
    vx_color_summary cols;
    vx_error cerr;
    int cbad = vx_color_summary_get(rec + REC_BASE, &cols, &cerr) != VX_OK;
    double cbytes = cbad ? 0.0 : vx_color_summary_bytes(&cols, n);
    if (cs > VX_ERR_INTERRUPTED || n > (UINT64_C(1) << 32) || (cs != VX_OK && n != 0) || cbad ||
        (cs != VX_OK && cols.present)) {
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
        char m[sizeof err->msg];
        memcpy(m, rec + 4, sizeof m);
        m[sizeof m - 1] = 0;
        vx_text_escape(err->msg, sizeof err->msg, m); /* bytes from another process */
      }
    } else if (mem_limit && (double)vx_resident_bytes() + 2.0 * (36.0 * (double)n + cbytes) >
                                (double)mem_limit) {
      /* twice 36 bytes a triangle and the colour: the child's copy stays alive while this one
       * fills */
      char lim[32];
      s = vx_error_set(err, VX_ERR_LIMIT,
                       "cannot read '%s': its %llu triangles (%.1f MiB%s) do not fit under the "
                       "memory limit (%s)",
                       path, (unsigned long long)n, ((double)n * 36.0 + cbytes) / 1048576.0,
                       cols.present ? " with their colours" : "",
                       vx_bytes_text((double)mem_limit, lim, sizeof lim));
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
        r = vx_isolate_read(fd, out->pos, (size_t)n * 9 * sizeof(float), deadline);
      if (s == VX_OK && r == 0 && cols.present) {
        pipe_in in = {fd, deadline};
        uint64_t rss = mem_limit ? vx_resident_bytes() : 0;
        uint64_t avail = !mem_limit ? 0 : rss < mem_limit ? mem_limit - rss : 1;
        s = vx_soup_color_read(&cols, n, avail, read_fd, &in, &out->color, &r, err);
        if (s != VX_OK && r == 0) {
          char pre[600];
          snprintf(pre, sizeof pre, "cannot read the colours of '%s'", path);
          vx_error_prefix(err, pre);
        }
        if (r != 0) s = VX_OK; /* a time-out or a dead child: said below */
      }
    }
  }
  close(fd);
  int sig;
  if (s == VX_OK && r == 1) {
    vx_isolate_reap(pid, 1, 0, 0, &sig);
    s = vx_error_set(err, VX_ERR_FORMAT,
                     "cannot read '%s': the import did not finish within %g s (the importer may "
                     "loop on this file)", path, timeout_s);
  } else if (s == VX_OK && r == 2) {
    s = died(path, pid, mem_limit, rss0, budget, err);
  } else {
    vx_isolate_reap(pid, s != VX_OK, 0, 0, &sig);
  }
  if (s != VX_OK) vx_soup_free(out);
  return s;
}
