/* SPDX-License-Identifier: Apache-2.0 */
/* stream.h - an octree produced level by level in Morton order, held in memory or spilled to
 * temporary files (the out-of-core build's result; Baert, Lagae & Dutre 2013).
 *
 * Contract
 * - Levels 0 .. split-1 (the "top", few nodes) are handed over at the end as one breadth-first
 *   node array (vx_stream_set_top). Levels split .. depth are appended with vx_stream_append,
 *   each level's records in Morton order, appends to different levels freely interleaved (the
 *   builder appends one block's subtree at a time). Node records are vx_node (child indices are
 *   ignored: they are rebuilt from the masks), level `depth` records are vx_voxel.
 * - While the appended bytes stay under mem_budget (0: no budget) they are kept in memory; past it
 *   every appended level moves to its own temporary file (one per level, never one per block),
 *   created in tmp_dir and unlinked at once, so the kernel removes them whatever happens to the
 *   process (failure, Ctrl-C, kill). vx_stream_free releases everything.
 * - A stream still in memory becomes an ordinary vx_octree with vx_stream_take_tree; a spilled one
 *   is read back level by level with vx_stream_read (formats/ streams it into a .svo file).
 * - Colour (optional, vx_stream_init_color): a packed RGBA8 (svo/color.h) per record of every
 *   level, appended beside the levels (vx_stream_append_color, the same counts at the end), the
 *   top's with vx_stream_set_top_color. Colour bytes count against mem_budget with the records,
 *   and spill with them to files of their own. vx_stream_patch_rgb rewrites the rgb of a range of
 *   colours in place (the builder learns some of them only at the end).
 * - Thread-compatible: one thread appends (the builder serialises its blocks).
 */
#ifndef VOXLOD_SVO_STREAM_H
#define VOXLOD_SVO_STREAM_H

#include <stdio.h>
#include "svo/svo.h"

VX_EXTERN_C_BEGIN

typedef struct vx_stream_level {
  uint8_t *mem;  /* records while in memory */
  uint64_t cap;  /* bytes allocated at mem */
  FILE *f;       /* the level's (unlinked) file once spilled */
} vx_stream_level;

typedef struct vx_stream {
  uint32_t depth;                          /* D */
  uint32_t split;                          /* levels < split come from top[] */
  uint64_t level_count[VX_MAX_DEPTH + 1];  /* records per level (top levels once set) */
  vx_node *top;                            /* levels 0 .. split-1, breadth first */
  vx_transform xf;
  float band;
  float prune_error;
  uint64_t mem_budget;   /* spill when the appended bytes exceed this; 0: never */
  uint64_t mem_bytes;    /* appended bytes held in memory now */
  uint64_t spilled_bytes;/* bytes written to the level files */
  int spilled;
  char *tmp_dir;
  vx_stream_level lv[VX_MAX_DEPTH + 1];
  int color;                               /* colours are kept (vx_stream_init_color) */
  uint64_t color_count[VX_MAX_DEPTH + 1];  /* colours appended per level (top levels once set) */
  uint32_t *top_color;                     /* levels 0 .. split-1, parallel to top */
  vx_stream_level clv[VX_MAX_DEPTH + 1];   /* the appended levels' colours */
} vx_stream;

/* Bytes of one record of `level`: 16 (nodes) or 8 (voxels). */
uint64_t vx_stream_record_size(const vx_stream *s, uint32_t level);

/* An empty stream for a tree of `depth` levels whose levels >= split are appended. tmp_dir: where
 * spill files go (NULL: $TMPDIR or /tmp). */
vx_status vx_stream_init(vx_stream *s, uint32_t depth, uint32_t split, const char *tmp_dir,
                         uint64_t mem_budget, vx_error *err);

/* Makes the stream keep colours (before the first append). */
void vx_stream_init_color(vx_stream *s);

/* Appends n colours to level (split <= level <= depth), spilling first when over the budget. */
vx_status vx_stream_append_color(vx_stream *s, uint32_t level, const uint32_t *colors, uint64_t n,
                                 vx_error *err);

/* Hands over the colours of levels 0 .. split-1 (parallel to top; the stream owns them after,
 * even on failure). */
void vx_stream_set_top_color(vx_stream *s, uint32_t *colors);

/* Copies colours first .. first+n-1 of `level` to dst. */
vx_status vx_stream_read_color(vx_stream *s, uint32_t level, uint64_t first, uint64_t n,
                               uint32_t *dst, vx_error *err);

/* Sets the rgb bytes of colours first .. first+n-1 of an appended level to those of `rgb`, alpha
 * kept (memory or file; after vx_stream_finish). */
vx_status vx_stream_patch_rgb(vx_stream *s, uint32_t level, uint64_t first, uint64_t n,
                              uint32_t rgb, vx_error *err);

/* Appends n records to level (split <= level <= depth); spills first when the budget is passed. */
vx_status vx_stream_append(vx_stream *s, uint32_t level, const void *records, uint64_t n,
                           vx_error *err);

/* Moves every appended level to its file now (no-op when already spilled). */
vx_status vx_stream_spill(vx_stream *s, vx_error *err);

/* Hands over levels 0 .. split-1 (node_count = sum of counts[l], breadth first; the stream owns
 * `top` afterwards, even on failure). */
vx_status vx_stream_set_top(vx_stream *s, vx_node *top, const uint64_t *counts, vx_error *err);

/* Flushes the level files; call once after the last append. */
vx_status vx_stream_finish(vx_stream *s, vx_error *err);

/* Copies records first .. first+n-1 of `level` to dst (any level, memory or file). */
vx_status vx_stream_read(vx_stream *s, uint32_t level, uint64_t first, uint64_t n, void *dst,
                         vx_error *err);

/* Turns a stream that never spilled into a linked vx_octree (xf, band and prune_error copied,
 * colours into node_color / voxel_color when kept), moving its buffers: s keeps nothing.
 * VX_ERR_INVALID_ARG when spilled. */
vx_status vx_stream_take_tree(vx_stream *s, vx_octree *out, vx_error *err);

/* Releases memory and closes (hence deletes) the level files. free of a zeroed stream is a no-op. */
void vx_stream_free(vx_stream *s);

VX_EXTERN_C_END

#endif
