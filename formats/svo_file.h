/* SPDX-License-Identifier: Apache-2.0 */
/* svo_file.h - the .svo file: header + zstd-compressed sections, level by level, then for a
 * coloured tree (vx_octree.node_color/voxel_color set) one colour section per level. The
 * byte-level specification is docs/SVO_FORMAT.md.
 *
 * Writing (svo_write.c): one writer over a source of levels, a tree in memory or a level stream
 * (svo/stream.h) that may live in temporary files; both give the same bytes for the same tree.
 * The file is written atomically (sys/atomic_file.h): readers see the old file or the
 * complete new one, and on any failure no temporary is left and an existing file is untouched.
 * Reading (svo_read.c) distrusts every byte: sizes are checked against the file size and the
 * memory limit before any allocation, each level's masks are checked against the next level's
 * count before that level is allocated, every section's checksum is verified, child indices are
 * rebuilt from masks and the tree is validated before it is returned. Colours are read for the
 * levels loaded (partial reads: node colours of levels 0..max_level, no voxel colours) and count
 * in the memory limit.
 */
#ifndef VOXLOD_FORMATS_SVO_FILE_H
#define VOXLOD_FORMATS_SVO_FILE_H

#include "svo/svo.h"
#include "svo/stream.h"

VX_EXTERN_C_BEGIN

typedef struct vx_svo_read_opts {
  int max_level;      /* read levels 0..max_level only (nodes); < 0 or >= depth: everything */
  uint64_t mem_limit; /* refuse files whose decoded size exceeds this; 0: vx_default_mem_limit() */
  int check_rest;     /* 1: the sections a partial read does not decode are checked too, each
                         against its check32, read in pieces, never decompressed */
  int threads;        /* 0: a tree of 4 MiB decoded or more on every core, its sections side by
                         side, a smaller one level by level; 1: level by level; N > 1: side by
                         side on N threads. The same tree and the same errors every way. */
} vx_svo_read_opts;

typedef struct vx_svo_file_info {
  uint32_t version;
  uint32_t flags; /* prologue flags (VX_SVO_FLAG_COLOR: the file has colour sections) */
  uint64_t file_bytes;
  uint64_t level_disk_bytes[VX_MAX_DEPTH + 1]; /* compressed bytes of each level's section */
  uint64_t level_color_disk_bytes[VX_MAX_DEPTH + 1]; /* ... of each level's colours (0: none) */
  uint64_t header_bytes;
  int side_by_side; /* 0: decoded level by level; 1: the level sections side by side; 2: their
                       colour sections too */
} vx_svo_file_info;

/* Writes tree t to path. zstd_level: 1..22, 0: by size (19 under 8 MiB decoded, 9 under 64 MiB,
 * 3 above). progress (may be NULL) is called as levels compress and the file is written; a
 * nonzero return stops with VX_ERR_INTERRUPTED. */
vx_status vx_svo_write(const char *path, const vx_octree *t, int zstd_level, vx_progress_fn progress,
                       void *user, vx_error *err);

/* vx_svo_write for a tree whose colours are still being made (on another thread): its levels
 * compress meanwhile, and before the first colour section ready(ready_user, &has_color, err) is
 * called, once, and must return when they are done: VX_OK with has_color 1 (t's colour arrays now
 * set; nothing else of t may change) or 0 (the file is written grey); another status ends the
 * write with it, and no file. ready is called on every path, also when the write fails first
 * (its answer then ignored), so a caller can join its thread there. The bytes are those
 * vx_svo_write gives for the finished tree. */
typedef vx_status (*vx_svo_colors_fn)(void *user, int *has_color, vx_error *err);
vx_status vx_svo_write_pending(const char *path, const vx_octree *t, int zstd_level,
                               vx_progress_fn progress, void *user, vx_svo_colors_fn ready,
                               void *ready_user, vx_error *err);

/* The same from a stream: the bytes vx_svo_write gives for the tree the stream holds. Memory: a
 * few MiB of buffers and zstd's contexts, plus the largest packed section when zstd runs without
 * worker threads (files under 64 MiB decoded, one core). The compressed sections are staged in an
 * unlinked temporary file in s->tmp_dir. */
vx_status vx_svo_write_stream(const char *path, vx_stream *s, int zstd_level,
                              vx_progress_fn progress, void *user, vx_error *err);

/* Serializes to memory. *out comes from vx_malloc (sys/alloc.h); the caller vx_frees it. */
vx_status vx_svo_encode(const vx_octree *t, int zstd_level, uint8_t **out, size_t *out_size,
                        vx_error *err);

/* The check32 of an encoded tree's bytes as a whole (what a tiled file's index keeps of a tile). */
vx_status vx_svo_encoded_check(const uint8_t *data, size_t size, uint32_t *check, vx_error *err);
/* The same check32 over bytes that come in pieces: begin, feed each piece in order, end (which
 * frees c and gives 0 when something failed: out of memory). */
typedef struct vx_check32_stream vx_check32_stream;
vx_check32_stream *vx_check32_begin(void);
int vx_check32_feed(vx_check32_stream *c, const void *p, size_t n);
int vx_check32_end(vx_check32_stream *c, uint32_t *check);

/* Reads a file (a regular file: a FIFO, device or directory is refused without blocking).
 * opts and info may be NULL. */
vx_status vx_svo_read(const char *path, const vx_svo_read_opts *opts, vx_octree *out,
                      vx_svo_file_info *info, vx_error *err);

/* Decodes from memory; same checks as vx_svo_read. */
vx_status vx_svo_decode(const uint8_t *data, size_t size, const vx_svo_read_opts *opts,
                        vx_octree *out, vx_svo_file_info *info, vx_error *err);

VX_EXTERN_C_END

#endif
