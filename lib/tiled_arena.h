/* SPDX-License-Identifier: Apache-2.0 */
/* tiled_arena.h - parts of a tiled tree joined in memory, for sampling it tile by tile
 * (lib/tiled_sample.c); the tile cache also serves its colour queries (lib/tiled_color.c).
 *
 * A tile cache keeps decoded tiles (least recently used first out) within a byte budget. An arena
 * is an ordinary tree made of some of them, in one of two shapes:
 * - the whole tree (depth D <= VX_MAX_DEPTH): the top tree's levels 0 .. K, then the levels of
 *   the tiles loaded, in file order: where the tiles it reads are loaded, the tree vx_tree_load
 *   joins, node for node (its indices differ). A tile not loaded keeps its root as a node without
 *   children ("info" 0: no mask, no plane), or, when the cut is at or above the tiles and its root
 *   has a plane, as a leaf with that plane (the joined tree stops there too);
 * - a window (any depth): the cube of 2^W voxels from `origin` (a multiple of 2^(W-1), W <= T + 1)
 *   under a root of its own (no plane), whose 8 children are the tiles' cells of level D - W + 1
 *   there, with everything below them (or a part of it: vx_window_keep). Its grid is the
 *   window's: world = origin' + grid * scale.
 * Each arena comes with the voxels the thin rule re-signed (sampler/resigned.h): in a whole-tree
 * arena those of each tile, found once in an arena of the 4 x 4 x 4 tiles around its block of
 * 2 x 2 x 2 (so with all its neighbours) and kept in the handle's store; in a window those found
 * in it (right for a voxel whose neighbours are all in the window), kept per window.
 */
#ifndef VOXLOD_LIB_TILED_ARENA_H
#define VOXLOD_LIB_TILED_ARENA_H

#include "lib/internal.h"
#include "formats/svo_tiled.h"
#include "svo/gpu_tree.h"

/* The reader behind a tiled file handle (lib/tiled.c), and its read options. */
vx_tiled *vx_tiled_file_reader(vx_tiled_file *f, vx_svo_read_opts *ro);
/* The path it was opened from. */
const char *vx_tiled_file_path(const vx_tiled_file *f);
/* The top tree as a tree of the whole depth D: its K + 1 levels of nodes (arrays borrowed from
 * the reader), the whole grid's transform, band and prune error; for cameras and renders. */
void vx_tiled_file_shape(const vx_tiled_file *f, vx_octree *out);
/* The re-signed voxels found while sampling a tiled file, kept with its handle between calls (a
 * bit per voxel of each tile, and past 16384^3 of each window). */
typedef struct vx_rs_store vx_rs_store;
vx_status vx_rs_store_new(uint64_t tiles, vx_rs_store **out, vx_error *err);
void vx_rs_store_free(vx_rs_store *r);
/* The handle's store, made on the first call and freed when the handle is closed. */
vx_status vx_tiled_file_store(vx_tiled_file *f, vx_rs_store **out, vx_error *err);

typedef struct vx_tile_cache vx_tile_cache;

/* The handle's cache of decoded tiles, for samples (lib/tiled_sample.c; its arenas' re-signed
 * voxels go to the handle's store) and colour queries (lib/tiled_color.c): made on the first call
 * with `budget`, kept until the handle is closed; each later call sets its budget again. So
 * calls that follow each other (batches of points) do not decode their tiles again. */
vx_status vx_tiled_file_cache(vx_tiled_file *f, uint64_t budget, vx_tile_cache **out,
                              vx_error *err);

/* The cache's budget for tiles when the caller gives none (vx_tiled_sample_opts.cache_bytes 0);
 * its windows are then kept while the process stays under vx_default_mem_limit(). */
#define VX_TILE_CACHE_DEFAULT ((uint64_t)1 << 30)

/* A cache over reader t keeping at most `budget` bytes of decoded tiles (those an arena needs at
 * once are kept whatever their size; 0: VX_TILE_CACHE_DEFAULT, windows as memory allows); the
 * re-signed voxels its arenas find go to rs (NULL: no whole-tree arenas, and windows without
 * re-signed voxels: for meshing, which finds its own). */
vx_status vx_tile_cache_new(vx_tiled *t, const vx_svo_read_opts *ro, uint64_t budget,
                            vx_rs_store *rs, vx_tile_cache **out, vx_error *err);
void vx_tile_cache_free(vx_tile_cache *c);
/* on: the cache's windows carry the tiles' colours (node_color, voxel_color; where every tile
 * in them has colours; the window's root gets 0). Off at first: samples need none. */
void vx_tile_cache_window_colors(vx_tile_cache *c, int on);
/* A new budget (0 as for vx_tile_cache_new): tiles past it go when the next tile is read (least
 * recently used first). */
void vx_tile_cache_set_budget(vx_tile_cache *c, uint64_t budget);

/* Tiles tiles[0 .. n-1] (distinct) that are not in the cache decoded side by side on `threads`
 * threads (0: all cores), each with a reader of its own on the file at `path` (the one c reads:
 * its index must agree), and added to the cache, whose budget rises to hold them all: for a
 * caller that knows which tiles its next arenas need, and that they fit. */
vx_status vx_tile_cache_prefetch(vx_tile_cache *c, const char *path, const uint64_t *tiles,
                                 size_t n, int threads, vx_error *err);

/* Tiles tiles[0 .. n-1] decoded (read, or from the cache) and held together: out[i] stays valid
 * until the next call on c (tiles of one call are never dropped by it, whatever the budget). */
vx_status vx_tile_cache_hold(vx_tile_cache *c, const uint64_t *tiles, size_t n,
                             const vx_octree **out, vx_error *err);

/* The index of the tile at cell (x, y, z) of the grid of tiles, or UINT64_MAX: none there. */
uint64_t vx_tiled_find_tile(const vx_tiled *t, uint32_t x, uint32_t y, uint32_t z);

typedef struct vx_arena {
  vx_octree oct;      /* the tree (depth D, or W for a window) */
  uint32_t *resigned; /* a bit per voxel (NULL: none) */
  uint32_t window;    /* 1: a window */
  uint32_t origin[3]; /* a window's minimum corner, finest voxels of the whole tree */
} vx_arena;

/* The whole tree with tiles tiles[0 .. n-1] (ascending indices) loaded, for sampling cut at
 * `cut`. `threads` find the re-signed voxels of tiles not yet in the store. */
vx_status vx_arena_whole(vx_tile_cache *c, const uint64_t *tiles, size_t n, uint32_t cut,
                         int threads, vx_arena *a, vx_error *err);
/* What a window keeps below its level `level` (1 .. W - 1): the cells of that level that meet
 * the box [lo, hi) (finest voxels of the whole tree) with everything below them; the others stay
 * as nodes without children or plane, where a sign walk pauses (VX_SE_WALK_AWAIT at level + 1).
 * So a window built for the points of its middle copies little more than that middle. */
typedef struct vx_window_keep {
  uint32_t level;
  uint64_t lo[3], hi[3];
} vx_window_keep;

/* The middle of window k (its index along one axis; windows of depth W in a tree of depth D, at
 * k * 2^(W-1)): [lo, hi), finest voxels, the window's central half, the outer windows' reaching
 * the tree's faces. The middles tile the tree. */
static inline void vx_window_middle(uint32_t D, uint32_t W, uint64_t k, uint64_t *lo,
                                    uint64_t *hi) {
  const uint64_t half = (uint64_t)1 << (W - 1), last = ((uint64_t)1 << (D - W + 1)) - 2u;
  *lo = k == 0 ? 0 : k * half + half / 2u;
  *hi = k >= last ? (uint64_t)1 << D : k * half + half + half / 2u;
}

/* The window of depth W at `origin` (see above), all of it (keep NULL) or only the part keep
 * names. The cache's budget rises to the bytes of the tiles it held, so that the next windows
 * find them (they were in memory at once anyway). */
vx_status vx_arena_window(vx_tile_cache *c, uint32_t W, const uint32_t origin[3],
                          const vx_window_keep *keep, int threads, vx_arena *a, vx_error *err);
/* The same window kept in c (at most 64, least recently used out, within the budget last set, or
 * without one while the next window would leave the process under vx_default_mem_limit()), for
 * the walks that come back to it and the next calls: *out is valid until the next call on c. */
vx_status vx_tile_cache_window(vx_tile_cache *c, uint32_t W, const uint32_t origin[3],
                               const vx_window_keep *keep, int threads, const vx_arena **out,
                               vx_error *err);
void vx_arena_free(vx_arena *a);

/* Window a (as given by vx_tile_cache_window, before any other call on c) uploaded to the current
 * GPU, or its copy there from before: kept with the window until it leaves the cache, so later
 * calls on the same windows upload nothing. Before an upload, the least recently used windows'
 * copies leave the GPU while it would have less than a quarter of its memory free. *out is valid
 * until the next call on c. VX_ERR_NO_GPU without a GPU or where the window alone does not fit. */
vx_status vx_tile_cache_window_gpu(vx_tile_cache *c, const vx_arena *a,
                                   const vx_gpu_resident **out, vx_error *err);
/* At most `bytes` of windows on the GPU (0, the default: as above); for tests. */
void vx_tile_cache_set_gpu_budget(vx_tile_cache *c, uint64_t bytes);
/* The windows that have a copy on the GPU now. */
int vx_tile_cache_windows_on_gpu(const vx_tile_cache *c);

#endif
