/* SPDX-License-Identifier: Apache-2.0 */
/* stream.c - level-by-level octree storage, in memory or in one temporary file per level.
 *
 * The out-of-core build of Baert, Lagae & Dutre ("Out-of-core construction of sparse voxel
 * octrees", 2013) writes one file per partition and merges them; at 65536^3 its users ended up
 * with millions of files. Here the partitions (blocks) are finished in Morton order, and the nodes
 * of a level, concatenated over blocks in that order, are already the level's breadth-first order.
 * So each level is one append-only sequence: a growing array while the budget allows, else one
 * file per level (at most VX_MAX_DEPTH + 1 files whatever the resolution).
 *
 * Spill files are created with mkstemp in the chosen directory and unlinked immediately: they live
 * as long as their open FILE, so no exit path (error, Ctrl-C, SIGKILL) can leave one behind.
 * Records are written in the process's own byte order: the files never outlive the process.
 */
#define _FILE_OFFSET_BITS 64
#define _POSIX_C_SOURCE 200809L
#include "svo/stream.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

uint64_t vx_stream_record_size(const vx_stream *s, uint32_t level) {
  return level < s->depth ? sizeof(vx_node) : sizeof(vx_voxel);
}

vx_status vx_stream_init(vx_stream *s, uint32_t depth, uint32_t split, const char *tmp_dir,
                         uint64_t mem_budget, vx_error *err) {
  memset(s, 0, sizeof *s);
  if (depth < VX_MIN_DEPTH || depth > VX_MAX_DEPTH || split > depth)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "stream depth %u / split %u out of range", depth,
                        split);
  const char *dir = tmp_dir && tmp_dir[0] ? tmp_dir : getenv("TMPDIR");
  if (!dir || !dir[0]) dir = "/tmp";
  s->tmp_dir = (char *)vx_malloc(strlen(dir) + 1);
  if (!s->tmp_dir) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  strcpy(s->tmp_dir, dir);
  s->depth = depth;
  s->split = split;
  s->mem_budget = mem_budget;
  return VX_OK;
}

static vx_status open_spill(vx_stream *s, uint32_t level, const char *what, FILE **out,
                            vx_error *err) {
  size_t n = strlen(s->tmp_dir) + 40;
  char *name = (char *)vx_malloc(n);
  if (!name) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  snprintf(name, n, "%s/.voxlod-spill-%s%02u-XXXXXX", s->tmp_dir, what, level);
  int fd = mkstemp(name);
  if (fd < 0) {
    vx_status st = vx_error_set(err, VX_ERR_IO, "cannot create a temporary file in '%s': %s",
                                s->tmp_dir, strerror(errno));
    vx_free(name);
    return st;
  }
  unlink(name); /* nameless from now on: closing it (or dying) frees its blocks */
  vx_free(name);
  *out = fdopen(fd, "w+b");
  if (!*out) {
    close(fd);
    return vx_error_set(err, VX_ERR_IO, "cannot open a temporary file: %s", strerror(errno));
  }
  setvbuf(*out, NULL, _IOFBF, 1 << 20);
  return VX_OK;
}

static vx_status file_write(vx_stream *s, FILE *f, const void *p, uint64_t bytes, vx_error *err) {
  if (bytes && fwrite(p, 1, (size_t)bytes, f) != bytes)
    return vx_error_set(err, VX_ERR_IO, "cannot write %.1f MiB to a temporary file in '%s': %s",
                        (double)bytes / 1048576.0, s->tmp_dir, strerror(errno));
  s->spilled_bytes += bytes;
  return VX_OK;
}

/* Moves a level's bytes (used of them) from memory to its file. */
static vx_status level_spill(vx_stream *s, vx_stream_level *L, uint64_t used, vx_error *err) {
  vx_status st = file_write(s, L->f, L->mem, used, err);
  vx_free(L->mem);
  L->mem = NULL;
  L->cap = 0;
  return st;
}

vx_status vx_stream_spill(vx_stream *s, vx_error *err) {
  if (s->spilled) return VX_OK;
  for (uint32_t l = s->split; l <= s->depth; l++) {
    vx_status st = open_spill(s, l, "", &s->lv[l].f, err);
    if (st == VX_OK && s->color) st = open_spill(s, l, "rgba", &s->clv[l].f, err);
    if (st != VX_OK) return st;
  }
  s->spilled = 1;
  for (uint32_t l = s->split; l <= s->depth; l++) {
    vx_status st = level_spill(s, &s->lv[l], s->level_count[l] * vx_stream_record_size(s, l), err);
    if (st == VX_OK && s->color) st = level_spill(s, &s->clv[l], s->color_count[l] * 4, err);
    if (st != VX_OK) return st;
  }
  s->mem_bytes = 0;
  return VX_OK;
}

/* Appends bytes to level storage L holding `used` bytes: its file once spilled, else its array
 * (spilling first when the budget is passed). */
static vx_status level_append(vx_stream *s, vx_stream_level *L, uint32_t level, uint64_t used,
                              const void *p, uint64_t bytes, vx_error *err) {
  if (!s->spilled && s->mem_budget && s->mem_bytes + bytes > s->mem_budget) {
    vx_status st = vx_stream_spill(s, err);
    if (st != VX_OK) return st;
  }
  if (s->spilled) return file_write(s, L->f, p, bytes, err);
  if (used + bytes > L->cap) {
    uint64_t cap = L->cap ? L->cap : 4096;
    while (cap < used + bytes) cap += cap / 2 + 4096;
    uint8_t *m = (uint8_t *)vx_realloc(L->mem, (size_t)cap);
    if (!m)
      return vx_error_set(err, VX_ERR_NOMEM, "cannot grow level %u to %.1f MiB", level,
                          (double)cap / 1048576.0);
    L->mem = m;
    L->cap = cap;
  }
  if (bytes) memcpy(L->mem + used, p, (size_t)bytes);
  s->mem_bytes += bytes;
  return VX_OK;
}

vx_status vx_stream_append(vx_stream *s, uint32_t level, const void *records, uint64_t n,
                           vx_error *err) {
  if (level < s->split || level > s->depth)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "append to level %u of a stream holding %u..%u",
                        level, s->split, s->depth);
  const uint64_t rs = vx_stream_record_size(s, level);
  vx_status st = level_append(s, &s->lv[level], level, s->level_count[level] * rs, records, n * rs,
                              err);
  if (st == VX_OK) s->level_count[level] += n;
  return st;
}

void vx_stream_init_color(vx_stream *s) { s->color = 1; }

vx_status vx_stream_append_color(vx_stream *s, uint32_t level, const uint32_t *colors, uint64_t n,
                                 vx_error *err) {
  if (!s->color || level < s->split || level > s->depth)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "colours appended to level %u of a stream "
                        "holding %u..%u%s", level, s->split, s->depth,
                        s->color ? "" : " without colour");
  vx_status st = level_append(s, &s->clv[level], level, s->color_count[level] * 4, colors, n * 4,
                              err);
  if (st == VX_OK) s->color_count[level] += n;
  return st;
}

void vx_stream_set_top_color(vx_stream *s, uint32_t *colors) {
  vx_free(s->top_color);
  s->top_color = colors;
  for (uint32_t l = 0; l < s->split; l++) s->color_count[l] = s->level_count[l];
}

vx_status vx_stream_set_top(vx_stream *s, vx_node *top, const uint64_t *counts, vx_error *err) {
  (void)err;
  vx_free(s->top);
  s->top = top;
  for (uint32_t l = 0; l < s->split; l++) s->level_count[l] = counts[l];
  return VX_OK;
}

vx_status vx_stream_finish(vx_stream *s, vx_error *err) {
  if (!s->spilled) return VX_OK;
  for (uint32_t l = s->split; l <= s->depth; l++)
    if (fflush(s->lv[l].f) != 0 || (s->color && fflush(s->clv[l].f) != 0))
      return vx_error_set(err, VX_ERR_IO, "cannot write a temporary file in '%s': %s",
                          s->tmp_dir, strerror(errno));
  return VX_OK;
}

/* Bytes [off, off + n) of a spilled level's file into dst. */
static vx_status file_read(FILE *f, uint64_t off, uint64_t n, void *dst, vx_error *err) {
  uint8_t *p = (uint8_t *)dst;
  int fd = fileno(f);
  while (n) {
    ssize_t r = pread(fd, p, n > (1u << 30) ? (1u << 30) : (size_t)n, (off_t)off);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0)
      return vx_error_set(err, VX_ERR_IO, "cannot read back a temporary file: %s",
                          r < 0 ? strerror(errno) : "short file");
    p += r;
    off += (uint64_t)r;
    n -= (uint64_t)r;
  }
  return VX_OK;
}

vx_status vx_stream_read(vx_stream *s, uint32_t level, uint64_t first, uint64_t n, void *dst,
                         vx_error *err) {
  if (level > s->depth || first > s->level_count[level] || n > s->level_count[level] - first)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "read past level %u of a stream", level);
  const uint64_t rs = vx_stream_record_size(s, level);
  if (level < s->split) {
    uint64_t base = 0;
    for (uint32_t l = 0; l < level; l++) base += s->level_count[l];
    memcpy(dst, s->top + base + first, (size_t)(n * rs));
    return VX_OK;
  }
  if (!s->spilled) {
    memcpy(dst, s->lv[level].mem + first * rs, (size_t)(n * rs));
    return VX_OK;
  }
  return file_read(s->lv[level].f, first * rs, n * rs, dst, err);
}

vx_status vx_stream_read_color(vx_stream *s, uint32_t level, uint64_t first, uint64_t n,
                               uint32_t *dst, vx_error *err) {
  if (!s->color || level > s->depth || first > s->color_count[level] ||
      n > s->color_count[level] - first)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "colour read past level %u of a stream", level);
  if (level < s->split) {
    uint64_t base = 0;
    for (uint32_t l = 0; l < level; l++) base += s->level_count[l];
    memcpy(dst, s->top_color + base + first, (size_t)(n * 4));
    return VX_OK;
  }
  if (!s->spilled) {
    memcpy(dst, s->clv[level].mem + first * 4, (size_t)(n * 4));
    return VX_OK;
  }
  return file_read(s->clv[level].f, first * 4, n * 4, dst, err);
}

vx_status vx_stream_patch_rgb(vx_stream *s, uint32_t level, uint64_t first, uint64_t n,
                              uint32_t rgb, vx_error *err) {
  if (!s->color || level < s->split || level > s->depth || first > s->color_count[level] ||
      n > s->color_count[level] - first)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "colour patch past level %u of a stream", level);
  rgb &= 0xffffffu;
  if (!s->spilled) {
    uint32_t *c = (uint32_t *)(void *)s->clv[level].mem + first;
    for (uint64_t i = 0; i < n; i++) c[i] = (c[i] & 0xff000000u) | rgb;
    return VX_OK;
  }
  uint32_t buf[4096];
  int fd = fileno(s->clv[level].f);
  for (uint64_t at = 0; at < n;) {
    uint64_t k = n - at < 4096 ? n - at : 4096;
    vx_status st = file_read(s->clv[level].f, (first + at) * 4, k * 4, buf, err);
    if (st != VX_OK) return st;
    for (uint64_t i = 0; i < k; i++) buf[i] = (buf[i] & 0xff000000u) | rgb;
    const uint8_t *p = (const uint8_t *)buf;
    uint64_t left = k * 4, off = (first + at) * 4;
    while (left) {
      ssize_t w = pwrite(fd, p, (size_t)left, (off_t)off);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0)
        return vx_error_set(err, VX_ERR_IO, "cannot write a temporary file in '%s': %s",
                            s->tmp_dir, w < 0 ? strerror(errno) : "no space");
      p += w;
      off += (uint64_t)w;
      left -= (uint64_t)w;
    }
    at += k;
  }
  return VX_OK;
}

vx_status vx_stream_take_tree(vx_stream *s, vx_octree *out, vx_error *err) {
  memset(out, 0, sizeof *out);
  if (s->spilled)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "the stream was spilled to files: no tree");
  const uint32_t D = s->depth;
  for (uint32_t l = 0; s->color && l <= D; l++)
    if (s->color_count[l] != s->level_count[l])
      return vx_error_set(err, VX_ERR_INVALID_ARG, "level %u holds %llu colours for %llu cells", l,
                          (unsigned long long)s->color_count[l],
                          (unsigned long long)s->level_count[l]);
  out->depth = D;
  out->levels_loaded = D + 1;
  for (uint32_t l = 0; l <= D; l++) out->level_count[l] = s->level_count[l];
  uint64_t nodes = 0;
  for (uint32_t l = 0; l < D; l++) {
    out->level_first[l] = nodes;
    nodes += s->level_count[l];
  }
  if (nodes > UINT32_MAX || s->level_count[D] > UINT32_MAX)
    return vx_error_set(err, VX_ERR_LIMIT, "more than 2^32 nodes or voxels");
  out->node_count = nodes;
  out->voxel_count = s->level_count[D];
  out->nodes = (vx_node *)vx_malloc((size_t)(nodes ? nodes : 1) * sizeof(vx_node));
  if (!out->nodes)
    return vx_error_set(err, VX_ERR_NOMEM, "cannot allocate %llu nodes (%.1f MiB)",
                        (unsigned long long)nodes, (double)nodes * 16.0 / 1048576.0);
  uint64_t top = 0;
  for (uint32_t l = 0; l < s->split; l++) top += s->level_count[l];
  if (top) memcpy(out->nodes, s->top, (size_t)top * sizeof(vx_node));
  vx_free(s->top);
  s->top = NULL;
  for (uint32_t l = s->split; l < D; l++) { /* one level at a time, freeing as we go */
    if (s->level_count[l]) /* a pruned tree's levels may be empty */
      memcpy(out->nodes + out->level_first[l], s->lv[l].mem,
             (size_t)s->level_count[l] * sizeof(vx_node));
    vx_free(s->lv[l].mem);
    s->lv[l].mem = NULL;
  }
  uint8_t *vox = s->lv[D].mem; /* malloc'ed: 16-byte aligned on the platforms we build for */
  if (((uintptr_t)vox & 15u) != 0) {
    vox = (uint8_t *)vx_malloc(((size_t)out->voxel_count * 8 + 15) & ~(size_t)15);
    if (!vox) {
      vx_octree_free(out);
      return vx_error_set(err, VX_ERR_NOMEM, "cannot allocate %llu voxels",
                          (unsigned long long)out->voxel_count);
    }
    memcpy(vox, s->lv[D].mem, (size_t)out->voxel_count * 8);
    vx_free(s->lv[D].mem);
  }
  s->lv[D].mem = NULL;
  out->voxels = (vx_voxel *)vox;
  if (s->color) { /* colours laid out as the nodes, then the voxels' array moved */
    out->node_color = (uint32_t *)vx_malloc((size_t)(nodes ? nodes : 1) * sizeof(uint32_t));
    if (!out->node_color) {
      vx_octree_free(out);
      return vx_error_set(err, VX_ERR_NOMEM, "cannot allocate %llu node colours",
                          (unsigned long long)nodes);
    }
    if (top) memcpy(out->node_color, s->top_color, (size_t)top * sizeof(uint32_t));
    for (uint32_t l = s->split; l < D; l++) {
      if (s->level_count[l])
        memcpy(out->node_color + out->level_first[l], s->clv[l].mem,
               (size_t)s->level_count[l] * sizeof(uint32_t));
      vx_free(s->clv[l].mem);
      s->clv[l].mem = NULL;
    }
    out->voxel_color = s->clv[D].mem ? (uint32_t *)(void *)s->clv[D].mem
                                     : (uint32_t *)vx_malloc(sizeof(uint32_t));
    s->clv[D].mem = NULL;
    vx_free(s->top_color);
    s->top_color = NULL;
    if (!out->voxel_color) {
      vx_octree_free(out);
      return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
    }
  }
  out->xf = s->xf;
  out->band = s->band;
  out->prune_error = s->prune_error;
  s->mem_bytes = 0;
  vx_status st = vx_octree_link(out, err);
  if (st != VX_OK) vx_octree_free(out);
  return st;
}

void vx_stream_free(vx_stream *s) {
  if (!s) return;
  for (uint32_t l = 0; l <= VX_MAX_DEPTH; l++) {
    vx_free(s->lv[l].mem);
    if (s->lv[l].f) fclose(s->lv[l].f);
    vx_free(s->clv[l].mem);
    if (s->clv[l].f) fclose(s->clv[l].f);
  }
  vx_free(s->top);
  vx_free(s->top_color);
  vx_free(s->tmp_dir);
  memset(s, 0, sizeof *s);
}
