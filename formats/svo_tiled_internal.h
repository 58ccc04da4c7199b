/* SPDX-License-Identifier: Apache-2.0 */
/* svo_tiled_internal.h - what the tiled file's writer (svo_tiled.c) and reader
 * (svo_tiled_read.c) share: the layout's constants and the checks both make. */
#ifndef VOXLOD_FORMATS_SVO_TILED_INTERNAL_H
#define VOXLOD_FORMATS_SVO_TILED_INTERNAL_H

#include "formats/svo_tiled.h"

#define TL_PROLOGUE 32u
#define TL_TRAILER 32u
#define TL_TRAILER_MAGIC "VXTILES\n"
#define TL_HEADER_FIXED 112u
#define TL_INDEX_RECORD 48u
#define TL_TILE_MIN 64u /* no version-2 file is shorter: a tile index claims at most this many */
#define TL_FLAG_COLOR 1u /* prologue flag: the tiles are coloured, the directory has colours */

static inline uint64_t tl_header_size(uint32_t K) { return TL_HEADER_FIXED + 8ull * (K + 1); }
/* The directory's decoded bytes: the top tree's nodes, the index, the top tree's colours. */
static inline uint64_t tl_directory_size(uint64_t top_nodes, uint64_t tiles, int color) {
  return top_nodes * (12u + (color ? 4u : 0u)) + tiles * TL_INDEX_RECORD;
}
int tl_same_f32(float a, float b);
/* A tile's header (a partial decode: levels 0 only) against the tiled header: depth, band, prune
 * error and its cell's transform, coloured exactly when the tiled file is. */
vx_status tl_tile_matches(const vx_tiled_header *h, uint64_t code, const vx_octree *t,
                          const vx_svo_file_info *fi, const char *name, vx_error *err);
uint64_t tl_tree_nodes(const vx_octree *t);
/* The top tree's levels 0 .. K (n tiles at level K) linked and validated. */
vx_status tl_link_top(vx_octree *top, uint32_t K, uint64_t n, vx_error *err);

#endif
