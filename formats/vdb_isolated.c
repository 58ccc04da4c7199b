/* SPDX-License-Identifier: Apache-2.0 */
/* vdb_isolated.c - vx_vdb_surface_read in a child process, with a time and a memory limit
 * (vdb_read.h). The same scheme as the mesh importer's (import_isolated.c): fork; the child lowers
 * its address-space limit (RLIMIT_AS) to its size at the fork plus the budget (the memory limit
 * less the parent's resident bytes; under 32 MiB the read is refused at once), uses one malloc
 * arena (per-thread arenas reserve address space they do not use), runs OpenVDB and the
 * resampling, and writes
 * one answer to a pipe:
 *
 *   uint32 status | 512 bytes message | uint32 depth | float64 origin[3], scale, source voxel |
 *   uint32 resampled (bit 0) and band widening (bits 1..) | uint64 count | uint64 address-space
 *   growth |
 *   count x uint64 Morton codes | count x 8 corner bytes          (little-endian)
 *
 * The parent reads with poll() against the deadline and checks everything (vx_vdb_answer_read):
 * a child that parsed a hostile file may answer anything. A time-out kills the child; a child
 * that died near its budget is reported as the memory limit, otherwise as a crash of the reader.
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* wait4 */
#include "formats/vdb_read.h"
#include "sys/isolate.h"
#include "formats/svo_codec.h"
#include "sys/system.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

enum { REC = 4 + 512 + 4 + 5 * 8 + 4 + 8 + 8 };
/* Below this much room under the limit the reader is not started (OpenVDB's own start needs
 * about as much); the child never gets more than the limit leaves. */
#define MIN_BUDGET ((uint64_t)32 << 20)
#define BATCH 8192 /* records read from the pipe at a time */

void vx_vdb_surface_free(vx_vdb_surface *s) {
  if (!s) return;
  vx_free(s->codes);
  vx_free(s->voxels);
  memset(s, 0, sizeof *s);
}

static void child(int fd, const char *path, const char *name, uint32_t res, float band,
                  int threads, uint64_t budget) {
  /* one malloc arena: each thread's own would reserve 64 MiB of the address space the budget
   * bounds without using it, failing reads that fit */
  mallopt(M_ARENA_MAX, 1);
  /* OpenVDB, Blosc and the C++ runtime print to stderr on failures the answer reports already */
  int devnull = open("/dev/null", O_WRONLY);
  if (devnull >= 0) {
    dup2(devnull, 1);
    dup2(devnull, 2);
    close(devnull);
  }
  const uint64_t vm0 = vx_isolate_limit_memory(budget);
  vx_vdb_surface s;
  vx_error e;
  memset(&e, 0, sizeof e);
  vx_status st = vx_vdb_surface_read(path, name, res, band, threads, budget, &s, &e);
  uint8_t rec[REC];
  memset(rec, 0, sizeof rec);
  vx_put_u32(rec, (uint32_t)st);
  memcpy(rec + 4, e.msg, sizeof e.msg);
  uint8_t *q = rec + 4 + 512;
  vx_put_u32(q, s.depth);
  for (int i = 0; i < 3; i++) vx_put_f64(q + 4 + 8 * i, s.origin[i]);
  vx_put_f64(q + 28, s.scale);
  vx_put_f64(q + 36, s.src_voxel);
  vx_put_u32(q + 44, (uint32_t)s.resampled | s.widened << 1);
  vx_put_u64(q + 48, st == VX_OK ? s.count : 0);
  vx_put_u64(q + 56, vx_isolate_growth(vm0));
  int bad = vx_isolate_write(fd, rec, sizeof rec);
  if (!bad && st == VX_OK) {
    uint8_t buf[8 * BATCH];
    for (uint64_t i = 0; i < s.count && !bad; i += BATCH) {
      uint64_t n = s.count - i < BATCH ? s.count - i : BATCH;
      for (uint64_t k = 0; k < n; k++) vx_put_u64(buf + 8 * k, s.codes[i + k]);
      bad = vx_isolate_write(fd, buf, (size_t)n * 8);
    }
    if (!bad) bad = vx_isolate_write(fd, s.voxels, (size_t)s.count * sizeof(vx_voxel));
  }
  _exit(bad ? 1 : 0);
}

static int finite_pos(double v) { return v > 0.0 && v < 1e300; }

int vx_vdb_answer_read(int fd, double deadline, uint64_t mem_limit, vx_vdb_surface *out,
                       vx_status *st, vx_error *err) {
  memset(out, 0, sizeof *out);
  *st = VX_OK;
  uint8_t rec[REC];
  int r = vx_isolate_read(fd, rec, sizeof rec, deadline);
  if (r) return r;
  const uint8_t *q = rec + 4 + 512;
  uint32_t cs = vx_get_u32(rec);
  uint32_t depth = vx_get_u32(q);
  uint64_t n = vx_get_u64(q + 48);
  if (cs > VX_ERR_INTERRUPTED || (cs != VX_OK && n != 0)) {
    *st = vx_error_set(err, VX_ERR_FORMAT, "the OpenVDB reader answered nonsense");
    return 0;
  }
  if (cs != VX_OK) {
    *st = (vx_status)cs;
    if (err) {
      err->status = *st;
      char m[sizeof err->msg];
      memcpy(m, rec + 4, sizeof m);
      m[sizeof m - 1] = 0;
      vx_text_escape(err->msg, sizeof err->msg, m); /* bytes from another process */
    }
    return 0;
  }
  out->depth = depth;
  for (int i = 0; i < 3; i++) out->origin[i] = vx_get_f64(q + 4 + 8 * i);
  out->scale = vx_get_f64(q + 28);
  out->src_voxel = vx_get_f64(q + 36);
  uint32_t rs = vx_get_u32(q + 44);
  out->resampled = rs & 1;
  out->widened = rs >> 1;
  int ok = out->widened <= 32 && depth >= VX_MIN_DEPTH && depth <= VX_MAX_DEPTH && finite_pos(out->scale) &&
           finite_pos(out->src_voxel) && n >= 1 && n <= (UINT64_C(1) << (3 * depth));
  for (int i = 0; i < 3; i++) ok = ok && fabs(out->origin[i]) < 1e300;
  if (!ok) {
    memset(out, 0, sizeof *out);
    *st = vx_error_set(err, VX_ERR_FORMAT, "the OpenVDB reader answered nonsense (depth %u, "
                       "%llu voxels)", depth, (unsigned long long)n);
    return 0;
  }
  /* both copies (the child's and ours) live while this one fills */
  uint64_t need = n * (sizeof(uint64_t) + sizeof(vx_voxel));
  if (mem_limit && (double)vx_resident_bytes() + 2.0 * (double)need > (double)mem_limit) {
    char lim[32];
    memset(out, 0, sizeof *out);
    *st = vx_error_set(err, VX_ERR_LIMIT, "%llu surface voxels (%.1f MiB) do not fit the memory "
                       "limit (%s)", (unsigned long long)n, (double)need / 1048576.0,
                       vx_bytes_text((double)mem_limit, lim, sizeof lim));
    return 0;
  }
  out->codes = (uint64_t *)vx_malloc((size_t)n * sizeof(uint64_t));
  out->voxels = (vx_voxel *)vx_malloc((size_t)n * sizeof(vx_voxel));
  if (!out->codes || !out->voxels) {
    vx_vdb_surface_free(out);
    *st = vx_error_set(err, VX_ERR_NOMEM, "out of memory for %llu surface voxels",
                       (unsigned long long)n);
    return 0;
  }
  const uint64_t end = UINT64_C(1) << (3 * depth);
  uint8_t buf[8 * BATCH];
  for (uint64_t i = 0; i < n; i += BATCH) {
    uint64_t m = n - i < BATCH ? n - i : BATCH;
    if ((r = vx_isolate_read(fd, buf, (size_t)m * 8, deadline)) != 0) {
      vx_vdb_surface_free(out);
      return r;
    }
    for (uint64_t k = 0; k < m; k++) {
      uint64_t c = vx_get_u64(buf + 8 * k);
      if (c >= end || (i + k > 0 && c <= out->codes[i + k - 1])) {
        vx_vdb_surface_free(out);
        *st = vx_error_set(err, VX_ERR_FORMAT, "the OpenVDB reader answered nonsense (voxel %llu "
                           "out of order or outside the grid)", (unsigned long long)(i + k));
        return 0;
      }
      out->codes[i + k] = c;
    }
  }
  if ((r = vx_isolate_read(fd, out->voxels, (size_t)n * sizeof(vx_voxel), deadline)) != 0) {
    vx_vdb_surface_free(out);
    return r;
  }
  for (uint64_t i = 0; i < n; i++)
    for (int k = 0; k < 8; k++)
      if (out->voxels[i].c[k] == INT8_MIN) {
        vx_vdb_surface_free(out);
        *st = vx_error_set(err, VX_ERR_FORMAT, "the OpenVDB reader answered nonsense (corner "
                           "value -128)");
        return 0;
      }
  out->count = n;
  return 0;
}

static vx_status over_limit(const char *path, uint64_t mem_limit, vx_error *err) {
  char lim[32];
  return vx_error_set(err, VX_ERR_LIMIT, "cannot read '%s': OpenVDB needs more than the memory "
                      "limit (%s)", path, vx_bytes_text((double)mem_limit, lim, sizeof lim));
}

vx_status vx_vdb_surface_read_isolated(const char *path, const char *name, uint32_t resolution,
                                       float band, int threads, double timeout_s,
                                       uint64_t mem_limit, vx_vdb_surface *out, vx_error *err) {
  memset(out, 0, sizeof *out);
  if (!vx_vdb_read_available())
    return vx_vdb_surface_read(path, name, resolution, band, threads, mem_limit, out, err);
  if (!mem_limit) mem_limit = vx_default_mem_limit();
  uint64_t rss0 = vx_resident_bytes();
  /* the child's peak resident size is what it shares with this process plus what it allocates,
   * at most the budget: the limit less this process's resident bytes */
  uint64_t budget = mem_limit > rss0 ? mem_limit - rss0 : 0;
  if (budget < MIN_BUDGET) {
    char lim[32], used[32];
    return vx_error_set(err, VX_ERR_LIMIT, "cannot read '%s': the memory limit (%s) leaves less "
                        "than 32 MiB for the OpenVDB reader (%s in use)", path,
                        vx_bytes_text((double)mem_limit, lim, sizeof lim),
                        vx_bytes_text((double)rss0, used, sizeof used));
  }
  int fd;
  pid_t pid = vx_isolate_fork(&fd, "the OpenVDB reader", err);
  if (pid < 0) return err ? err->status : VX_ERR_IO;
  if (pid == 0) child(fd, path, name, resolution, band, threads, budget);
  double deadline = timeout_s > 0 ? vx_clock_seconds() + timeout_s : 0.0;
  vx_status s = VX_OK;
  int r = vx_vdb_answer_read(fd, deadline, mem_limit, out, &s, err);
  close(fd);
  if (r == 0 && s == VX_ERR_NOMEM) s = over_limit(path, mem_limit, err);
  int sig = 0;
  if (r == 1) {
    vx_isolate_reap(pid, 1, 0, 0, &sig);
    return vx_error_set(err, VX_ERR_FORMAT, "cannot read '%s': OpenVDB did not finish within %g s",
                        path, timeout_s);
  }
  vx_isolate_end end = vx_isolate_reap(pid, r == 2 || s != VX_OK, rss0, budget, &sig);
  if (r == 2) {
    vx_vdb_surface_free(out);
    if (end == VX_ISOLATE_INTERRUPTED)
      return vx_error_set(err, VX_ERR_INTERRUPTED, "interrupted while reading '%s'", path);
    if (end == VX_ISOLATE_NEAR_LIMIT) return over_limit(path, mem_limit, err);
    if (end == VX_ISOLATE_CRASHED)
      return vx_error_set(err, VX_ERR_CORRUPT, "cannot read '%s': OpenVDB crashed on it (signal "
                          "%d)", path, sig);
    return vx_error_set(err, VX_ERR_CORRUPT, "cannot read '%s': the OpenVDB reader stopped early",
                        path);
  }
  if (s != VX_OK) vx_vdb_surface_free(out);
  return s;
}
