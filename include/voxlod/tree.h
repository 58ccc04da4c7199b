/* SPDX-License-Identifier: Apache-2.0 */
/* voxlod/tree.h - trees (sparse voxel octrees): load, save, inspect.
 *
 * A tree of depth D has 2^D cells per axis at its finest level. Levels 0 .. D-1 are nodes (16
 * bytes: child index, child mask, errors, flags, a packed plane), level D the surface voxels (8
 * bytes: the signed distance at 8 corners, int8 each, q * band / 127 finest voxels). Grid
 * coordinates (finest voxels, [0, 2^D]^3) map to world coordinates by world = origin + grid *
 * scale. svo/node.h in the source tree documents the node and voxel bytes.
 */
#ifndef VOXLOD_TREE_H
#define VOXLOD_TREE_H

#include "voxlod/base.h"

VX_EXTERN_C_BEGIN

typedef struct vx_tree vx_tree;

typedef struct vx_read_opts {
  uint32_t struct_size; /* sizeof(vx_read_opts), or 0 */
  uint32_t levels;      /* load levels 0 .. levels-1 only (enough to render or inspect a cut);
                           0: the whole tree */
  uint64_t mem_limit;   /* refuse files whose decoded size exceeds this; 0: 80% of physical
                           memory */
} vx_read_opts;

/* Reads a .svo file, checking every byte (sizes before allocation, checksums, structure). A
 * FIFO, device or directory is refused without blocking. opts may be NULL. While the tree lives
 * no library output may replace its file. */
VX_API vx_status vx_tree_load(const char *path, const vx_read_opts *opts, vx_tree **out,
                              vx_error *err);
/* The same from bytes in memory (copied). */
VX_API vx_status vx_tree_load_memory(const void *data, size_t size, const vx_read_opts *opts,
                                     vx_tree **out, vx_error *err);

typedef struct vx_save_opts {
  uint32_t struct_size;    /* sizeof(vx_save_opts), or 0 */
  int zstd_level;          /* 1..22; 0: by size (19 under 8 MiB, 9 under 64 MiB, 3 above) */
  vx_progress_fn progress; /* may be NULL */
  void *user;
} vx_save_opts;

/* Writes the tree (which must be whole: all levels loaded) to path, atomically (see files.h for
 * what an output path may be). opts may be NULL. */
VX_API vx_status vx_tree_save(const vx_tree *t, const char *path, const vx_save_opts *opts,
                              vx_error *err);
/* The file's bytes in memory: *data is released with vx_buffer_free. */
VX_API vx_status vx_tree_encode(const vx_tree *t, const vx_save_opts *opts, void **data,
                                size_t *size, vx_error *err);
VX_API void vx_buffer_free(void *data);

VX_API void vx_tree_free(vx_tree *t);

typedef struct vx_tree_info {
  uint32_t struct_size;    /* sizeof(vx_tree_info), or 0 */
  uint32_t depth;          /* D */
  uint32_t resolution;     /* 2^D */
  uint32_t levels_loaded;  /* levels 0 .. levels_loaded-1 are in memory (D+1: all) */
  uint64_t node_count;     /* nodes loaded (levels < D) */
  uint64_t voxel_count;    /* surface voxels loaded (level D) */
  double origin[3];        /* world = origin + grid * scale */
  double scale;            /* world units per finest voxel */
  float band;              /* the field is truncated at +-band finest voxels */
  float prune_error;       /* 0: full tree; else subtrees within this error (voxels) are pruned */
  uint64_t memory_bytes;   /* nodes * 16 + voxels * 8 */
  uint64_t file_bytes;     /* size of the file it was loaded from (0: not from a file) */
  uint32_t file_version;   /* .svo format version of that file (0: not from a file) */
  uint32_t has_color;      /* 1: nodes and voxels carry RGBA8 colours */
  uint64_t color_bytes;    /* 4 per loaded node and voxel when coloured, else 0 */
  uint32_t tile_depth;     /* read from a tiled file (file_version 3): its tiles' depth (the
                              tree is the tiles and the top tree joined); else 0 */
  uint32_t reserved0;
  uint64_t tile_count;     /* ... and its tiles */
} vx_tree_info;

VX_API vx_status vx_tree_get_info(const vx_tree *t, vx_tree_info *info);

/* One row of the memory-per-resolution table (`voxlod stats`). */
typedef struct vx_level_stats {
  uint32_t struct_size;    /* sizeof(vx_level_stats), or 0 */
  uint32_t level;          /* l: 2^l cells per axis */
  uint64_t cells;          /* nodes (l < D) or surface voxels (l == D) present */
  uint64_t leaves;         /* pruned nodes at this level (drawn as planes) */
  uint64_t topology_bytes; /* child index and mask bytes of this level's nodes */
  uint64_t lod_bytes;      /* plane and error bytes of this level's nodes */
  uint64_t field_bytes;    /* corner values (level D only) */
  uint64_t disk_bytes;     /* compressed bytes of this level in the file (0: not from a file) */
  uint64_t render_bytes;   /* memory of levels 0 .. l: what rendering cut at l uploads */
  uint64_t float8_bytes;   /* a plain octree with 8 float corners per cell at this resolution */
  uint64_t dense_bytes;    /* a dense float grid of (2^l + 1)^3 corner values */
  uint64_t color_bytes;    /* RGBA8 colours of this level's cells (0: a grey tree) */
  uint64_t color_disk_bytes; /* compressed bytes of this level's colours in the file */
} vx_level_stats;

/* Row `level` (0 .. depth) of the table. Levels beyond those loaded report zero cells. */
VX_API vx_status vx_tree_get_level(const vx_tree *t, uint32_t level, vx_level_stats *st);

/* A copy of t with every subtree whose plane approximates it within max_error finest voxels
 * replaced by its root (drawn as that plane). t must be whole. */
VX_API vx_status vx_tree_prune(const vx_tree *t, float max_error, vx_tree **out, vx_error *err);

/* The raw arrays, read-only, valid while t lives: nodes breadth first (level 0 first, each level
 * in Morton order, 16 bytes each, 16-byte aligned), voxels in Morton order (8 bytes each); NULL
 * when none are loaded. Counts are those of the loaded levels. vx_tree_level_count gives a level's
 * cells (0 beyond the loaded levels), vx_tree_level_first the index of a node level's first node
 * in the node array. */
VX_API const void *vx_tree_nodes(const vx_tree *t, uint64_t *count);
VX_API const void *vx_tree_voxels(const vx_tree *t, uint64_t *count);
VX_API uint64_t vx_tree_level_count(const vx_tree *t, uint32_t level);
VX_API uint64_t vx_tree_level_first(const vx_tree *t, uint32_t level);

/* The colours, read-only, in the order of vx_tree_nodes / vx_tree_voxels (packed RGBA8: r in the
 * low byte; see base.h); NULL for a grey tree or when that level is not loaded. */
VX_API const uint32_t *vx_tree_node_colors(const vx_tree *t, uint64_t *count);
VX_API const uint32_t *vx_tree_voxel_colors(const vx_tree *t, uint64_t *count);

/* The colour at n world points (xyz float32 triples): for each, RGBA8 (4 bytes: sRGB r g b,
 * alpha) of the cell at `level` (-1: the finest loaded; a pruned leaf above it stands for its
 * subtree) containing the point, else of the nearest such cell within the band (Chebyshev
 * distance from the point's cell up to ceil(band / cell size) cells of that level: ceil(band) at
 * the finest; nearest by the distance between cell centres, ties to the smaller Morton code),
 * else 0 0 0 0 (also for non-finite points). A grey tree gives VX_ERR_INVALID_ARG ("the tree has
 * no colour"); so does a level that is not loaded. Large n runs on all cores, the points in
 * Morton order of their cells (sorted 2^22 at a time: 32 bytes a point, up to 128 MiB), which
 * does not change the result. */
VX_API vx_status vx_tree_colors(const vx_tree *t, const float *points, uint64_t n, int level,
                                uint8_t *rgba, vx_error *err);

/* ---- tiled files, tile by tile ----
 * A tiled .svo (convert --tile-depth, or finer than 16384^3) holds a top tree over tiles, each an
 * ordinary tree of its own. vx_tree_load joins one of up to 16384^3 into one tree; a handle from
 * vx_tiled_file_open reads any of them without joining: its header, top tree and index at open,
 * a tile's header or the whole tile when asked. VX_ERR_FORMAT for a file that is not tiled.
 * vx_tiled_file_sample (sample.h) gives signed distances from one, tile by tile. */
typedef struct vx_tiled_file vx_tiled_file;

VX_API vx_status vx_tiled_file_open(const char *path, const vx_read_opts *opts,
                                    vx_tiled_file **out, vx_error *err);
VX_API void vx_tiled_file_close(vx_tiled_file *f);
/* The whole tree's: depth, resolution, transform, band, nodes and voxels of every tile and level,
 * memory_bytes joined, file_bytes, file_version 3, tile_depth, tile_count (levels_loaded 0). */
VX_API vx_status vx_tiled_file_get_info(const vx_tiled_file *f, vx_tree_info *info);
/* Row `level` (0 .. depth) of the whole tree's table, as vx_tree_get_level gives it for a tree:
 * the top levels from the top tree, the deeper ones summed over the tiles' headers (read once,
 * on the first call below the top; disk_bytes of the top levels 0, their directory being
 * shared). */
VX_API vx_status vx_tiled_file_get_level(vx_tiled_file *f, uint32_t level, vx_level_stats *st,
                                         vx_error *err);

typedef struct vx_tile_info {
  uint32_t struct_size;  /* sizeof(vx_tile_info), or 0 */
  uint32_t reserved0;
  uint64_t code;         /* its cell: Morton code at level depth - tile_depth */
  uint32_t cell[3];      /* the cell's coordinates in the grid of tiles */
  uint32_t reserved1;
  uint64_t voxel_count;  /* surface voxels */
  uint64_t node_count;
  uint64_t file_bytes;   /* its bytes in the file (a version-2 .svo) */
  double origin[3];      /* world position of the tile's minimum corner */
  double edge;           /* world length of its edge */
} vx_tile_info;

/* Tile i (0 .. tile_count - 1, in Morton order of the cells) as the index gives it. */
VX_API vx_status vx_tiled_file_get_tile(const vx_tiled_file *f, uint64_t i, vx_tile_info *info);
/* Tile i as a tree of its own (tile_depth levels, its own transform: world coordinates as the
 * whole tree's): render, sample, mesh or export it like any tree. */
VX_API vx_status vx_tiled_file_load_tile(vx_tiled_file *f, uint64_t i, const vx_read_opts *opts,
                                         vx_tree **out, vx_error *err);
/* Level `level` of the whole tree (1 .. min(depth, 14)) as an ordinary tree of that depth,
 * read tile by tile: its voxels are the level's cells (at the finest level the surface voxels,
 * above it each node's plane at its corners, quantized at the tree's band in cells of the level,
 * at least 2), its planes fitted as a conversion fits them. At the finest level of a file of up
 * to 16384^3 it is the tree vx_tree_load joins, node for node. So any tree call (mesh, export,
 * render, sample) takes one level of a tiled tree of any depth, as a tree of up to 16384^3.
 * opts: mem_limit (the cells, the tree and the fit are checked against it); levels is ignored. */
VX_API vx_status vx_tiled_file_level_tree(vx_tiled_file *f, uint32_t level,
                                          const vx_read_opts *opts, vx_tree **out, vx_error *err);

VX_EXTERN_C_END

#endif
