/* SPDX-License-Identifier: Apache-2.0 */
/* svo.h - the sparse voxel octree core: the tree, its builder and validator.
 *
 * Contract
 * - This module depends on nothing but the C library, sys/ (allocation, status messages) and the
 *   public vocabulary header (include/voxlod/base.h). It never prints, never exits.
 * - Fallible functions return vx_status; when `err` is non-NULL they also leave a one-line message
 *   for the user in it (sys/error.h). vx_status_str() names a status.
 * - A vx_octree owns its arrays; vx_octree_free() releases them (free of a zeroed tree is a no-op).
 * - Functions are thread-compatible: distinct trees may be used from distinct threads.
 *
 * Data flow: voxelizer/ produces sorted Morton codes with corner values -> vx_octree_build() ->
 * vx_octree_fit_planes() (lod.h) -> vx_octree_prune() -> formats/ writes it; marcher/ renders it.
 * Node and voxel bytes are described in node.h.
 */
#ifndef VOXLOD_SVO_H
#define VOXLOD_SVO_H

#include <stddef.h>
#include <stdint.h>
#include "voxlod/base.h"
#include "svo/node.h"
#include "sys/alloc.h"
#include "sys/error.h"

VX_EXTERN_C_BEGIN

/* Grid <-> world: world = origin + grid * scale, grid in finest voxels, [0, 2^depth]^3. */
typedef struct vx_transform {
  double origin[3];
  double scale;
} vx_transform;

/* The transform of the cell `code` (Morton code) of a grid cut into cells of 2^cell_log2 voxels
 * per axis: the grid's, its origin moved to the cell's minimum corner (a tile's own grid). Every
 * tile builder and reader computes it here, so the bits agree. */
void vx_transform_cell(const vx_transform *grid, uint64_t code, uint32_t cell_log2,
                       vx_transform *out);

typedef struct vx_octree {
  uint32_t depth;         /* D: finest resolution 2^D */
  uint32_t levels_loaded; /* levels 0..levels_loaded-1 are present (D+1 = everything) */
  uint64_t level_count[VX_MAX_DEPTH + 1]; /* nodes at level l < D; voxels at l == D */
  uint64_t level_first[VX_MAX_DEPTH + 1]; /* index in nodes[] of level l's first node (l < D) */
  vx_node *nodes;          /* levels 0..D-1, breadth first (node.h); 16-byte aligned */
  uint64_t node_count;
  vx_voxel *voxels;        /* level D, Morton order; NULL when levels_loaded <= D */
  uint64_t voxel_count;
  vx_transform xf;         /* grid -> world */
  float band;              /* corner values are truncated at +-band finest voxels */
  float prune_error;       /* E of vx_octree_prune (0: full tree) */
  /* Colour (svo/color.h: packed RGBA8, sRGB rgb, linear alpha), or both NULL: a grey tree.
   * node_color[i] belongs to nodes[i]: the coverage-weighted mean colour of the node's subtree
   * (for a pruned leaf, of the subtree it replaced); voxel_color[i] to voxels[i]. Allocated and
   * freed with the tree; a partial read (levels_loaded <= D) leaves voxel_color NULL. */
  uint32_t *node_color;
  uint32_t *voxel_color;
} vx_octree;

void vx_octree_free(vx_octree *t);

/* Fills level_first, node_count and voxel_count from depth, levels_loaded (0: all) and
 * level_count, checking the bounds (VX_ERR_LIMIT past 2^32 nodes or voxels); allocates nothing. */
vx_status vx_octree_layout(vx_octree *t, vx_error *err);

/* Allocates nodes/voxels for the counts in t->level_count (16-byte aligned nodes) and fills
 * level_first, node_count and voxel_count; frees any colour arrays (they belonged to the old
 * arrays: the caller allocates colours for the new ones). Used by the builder and the file
 * reader. The nodes are zeroed, the voxels not. */
vx_status vx_octree_alloc(vx_octree *t, vx_error *err);
/* The same with the nodes left unset too, for a caller that writes every one (the arenas of
 * lib/tiled_arena.c, GBs that a single-threaded memset would fault in one page at a time). */
vx_status vx_octree_alloc_unset(vx_octree *t, vx_error *err);

/* Builds the tree bottom-up from n sorted, unique Morton codes of level-`depth` voxels with their
 * corner values (field[i] belongs to codes[i]). Planes are left empty: call vx_octree_fit_planes().
 * n == 0 gives VX_ERR_EMPTY. Unsorted or duplicate codes give VX_ERR_INVALID_ARG. */
vx_status vx_octree_build(uint32_t depth, const uint64_t *codes, const vx_voxel *field, uint64_t n,
                        vx_octree *out, vx_error *err);

/* Checks every invariant a traversal relies on, for the levels loaded: counts and level offsets
 * consistent, each child index in range and equal to the running sum of child counts (so children
 * are contiguous and every node has exactly one parent), masks non-zero below nodes that are not
 * pruned leaves, flags known, depth bounded, finite plane offsets. Returns VX_ERR_CORRUPT with the
 * first violation. Runs in O(nodes). */
vx_status vx_octree_validate(const vx_octree *t, vx_error *err);
/* vx_octree_validate without the pass over the nodes: depth, levels, counts, level offsets, band
 * and transform. For a tree whose decoder linked its nodes as it made them and checked each
 * with vx_node_sound (node.h). */
vx_status vx_octree_validate_shape(const vx_octree *t, vx_error *err);

/* Whether t's world coordinates can be computed in the precision a use needs. The reader and
 * the converter accept any finite transform; every command that computes in world units checks
 * with this first, so that a finite but extreme transform is refused rather than giving NaN,
 * infinity or every vertex in one place.
 * VX_WORLD_FLOAT: outputs in float32 world units (mesh vertices, grid values and voxel sizes,
 *   point clouds, samples): the scale at least 1e-30 (finer collapses onto a few floats), the root
 *   box's world coordinates and the band in world units below FLT_MAX / 4 (sums of such stay
 *   finite), and the box within 2^21 voxels of the world origin (a float there still resolves a
 *   quarter voxel).
 * VX_WORLD_DOUBLE: rendering (a double camera, rays in float grid coordinates): the scale at
 *   least 1e-150 and the coordinates below 1e150 (squared distances stay finite), the box within
 *   2^40 voxels of the world origin.
 * VX_ERR_INVALID_ARG with a message naming the transform, or VX_OK. */
typedef enum vx_world_use { VX_WORLD_FLOAT = 0, VX_WORLD_DOUBLE = 1 } vx_world_use;
vx_status vx_octree_check_world(const vx_octree *t, vx_world_use use, vx_error *err);

/* Rebuilds every child index from the masks (the file stores masks only). Fails with
 * VX_ERR_CORRUPT when the masks of a level do not add up to the next level's count. */
vx_status vx_octree_link(vx_octree *t, vx_error *err);

/* Per-level memory report (one of the tool's three jobs). */
typedef struct vx_level_bytes {
  uint64_t cells;          /* nodes (l < D) or voxels (l == D) present at this level */
  uint64_t leaves;         /* pruned nodes at this level (drawn as planes) */
  uint64_t topology_bytes; /* child + mask bytes of this level's nodes */
  uint64_t lod_bytes;      /* plane + error bytes of this level's nodes */
  uint64_t field_bytes;    /* corner values (level D only) */
} vx_level_bytes;

/* Fills stats[0..depth] for the tree. */
void vx_octree_level_stats(const vx_octree *t, vx_level_bytes *stats);

VX_EXTERN_C_END

#endif
