/* SPDX-License-Identifier: Apache-2.0 */
/* voxelizer.h - triangles -> surface voxels with signed distances at their corners -> octree.
 *
 * Contract
 * - Input: a vx_soup (world coordinates). Output: a vx_octree with every level built, planes fitted
 *   (lod.h) and, when opts->max_error > 0, pruned.
 * - Grid mapping: the mesh's bounding box is mapped into [0, R]^3 with one uniform scale (aspect
 *   kept): scale = largest extent / R, the box centred on the other axes. vx_voxelize_transform()
 *   computes it; the tree stores it (tree->xf) so world coordinates can be recovered.
 * - Surface voxels: voxel v is set exactly when the closed triangle overlaps v's closed box
 *   (separating-axis test, overlap.h), triangles lying on voxel faces included (they set the
 *   voxels on both sides).
 * - Field: the corner value is the Euclidean distance (finest voxels) from the corner to the
 *   nearest triangle among those overlapping the <= 8 voxels that share the corner; that is the
 *   exact distance to the mesh whenever the exact one is <= 1 voxel, an upper bound otherwise,
 *   then truncated at +-band and quantized (node.h). Its sign follows opts->sign_rule: by default
 *   the generalized winding number (inside where |w| > 1/2; winding.c documents what it does on
 *   holes, duplicate faces, overlaps and inverted meshes), or the pseudo-normal rule (sign.c). The result
 *   does not depend on how space is partitioned or how many threads run.
 * - Duplicates: exact copies of a triangle (same positions in the same cyclic order) are dropped
 *   first (stats->duplicates), so copies never change the tree; the reversed triangle is kept.
 * - Memory: with opts->mem_limit, a build whose triangles overlap far more than a surface does
 *   (stacked, jittered copies) fails at once with VX_ERR_LIMIT, and each block's overlap pairs are
 *   checked against the limit as they grow (dedup.c, blocks.c).
 * - Never prints; progress goes through opts->progress.
 */
#ifndef VOXLOD_VOXELIZER_H
#define VOXLOD_VOXELIZER_H

#include "svo/svo.h"

#include <string.h>
#include "svo/soup.h"
#include "svo/stream.h"

VX_EXTERN_C_BEGIN

#define VX_DEFAULT_BAND 2.0f

/* vx_voxelize_opts.sign_rule: VX_SIGN_WINDING (the generalized winding number, Jacobson et al.
 * 2013) or VX_SIGN_PSEUDO_NORMAL (the closest feature's angle-weighted pseudo-normal, Baerentzen &
 * Aanaes 2005): enum vx_sign_rule of include/voxlod/base.h. */

typedef struct vx_voxelize_opts {
  uint32_t resolution;     /* R, a power of two in [2, 2^VX_MAX_DEPTH] */
  float band;              /* truncation of the field in voxels; 0: VX_DEFAULT_BAND */
  float max_error;         /* prune subtrees whose plane error <= this (voxels); 0: keep all */
  int threads;             /* worker threads; 0: all cores */
  uint64_t mem_limit;      /* bytes the build may hold; 0: no limit */
  vx_progress_fn progress; /* may be NULL */
  void *user;
  int sign_rule;           /* VX_SIGN_WINDING (0, default) or VX_SIGN_PSEUDO_NORMAL */
  int gpu;                 /* vx_voxelize_stream: 1 = surface voxels and field on the GPU (the same
                              bits; VX_ERR_NO_GPU / VX_ERR_CUDA when it cannot run) */
  int color;               /* vx_voxelize_stream: 1 = colours too, when the mesh has them (the
                              bytes of vx_color_tree on the tree, with color_filter) */
  vx_color_filter color_filter;
  /* One tile of a tiled build (vx_voxelize_tile): the cell tile_code (Morton code) of level
   * depth - tile_depth, built as a tree of tile_depth levels (<= VX_MAX_DEPTH) rooted there;
   * resolution may then reach 2^VX_MAX_TILED_DEPTH. 0: the whole grid (resolution <=
   * 2^VX_MAX_DEPTH). */
  uint32_t tile_depth;
  uint64_t tile_code;
  /* A mesh split by tile (the triangles near one tile, not the whole mesh): the whole mesh's grid,
   * used instead of the one the given triangles' bounding box would give. */
  const vx_transform *grid;
} vx_voxelize_opts;

typedef struct vx_voxelize_stats {
  uint64_t triangles;      /* triangles voxelized */
  uint64_t surface_voxels; /* voxels set */
  uint64_t corners;        /* distinct corners whose distance was computed */
  uint64_t pair_tests;     /* triangle/voxel overlap tests run */
  uint64_t corners_wound;  /* GPU build: corners whose sign needed the winding number */
  uint64_t nodes;          /* nodes in the final tree */
  uint64_t duplicates;     /* exact duplicate triangles dropped before the build (dedup.c) */
  double sec_sign;         /* the build's stages, wall seconds: sign tables (vx_voxelize_gpu:
                              built beside the GPU's first steps, so inside sec_voxels), */
  double sec_voxels;       /* surface voxels and field (the CPU build: with the octree), */
  double sec_tree;         /* octree and planes (the GPU build's CPU part) */
  double sec_gpu[5];       /* the GPU build's surface stage: upload, overlap pairs, sort and
                              voxel index, corner field, copy back to the host */
  double sec_gpu_tree[3];  /* vx_voxelize_gpu's octree on the GPU: levels, planes, copy to host */
  double sec_color;        /* vx_voxelize_stream with colour: the blocks' colour work (inside
                              sec_voxels / sec_tree), thread seconds over the thread count */
} vx_voxelize_stats;

/* Every refusal for triangles that overlap too much (the overlap floor of dedup.c, the winding
 * work of field.c and the GPU build) says this. No other build (out of core, on the CPU) avoids
 * that work, so a caller that falls back on another build after VX_ERR_LIMIT does not for these. */
#define VX_OVERLAP_REFUSAL "the triangles overlap too much"
static inline int vx_voxelize_refused_overlap(const vx_error *e) {
  return e && strstr(e->msg, VX_OVERLAP_REFUSAL) != NULL;
}

/* The grid transform used for a mesh at resolution R (see above). */
vx_status vx_voxelize_transform(const vx_soup *mesh, uint32_t resolution, vx_transform *xf,
                                vx_error *err);

/* Whole build: voxels, field, tree, planes, pruning. `stats` may be NULL. */
vx_status vx_voxelize(const vx_soup *mesh, const vx_voxelize_opts *opts, vx_octree *out,
                      vx_voxelize_stats *stats, vx_error *err);

/* vx_voxelize on the GPU (CUDA): surface voxels, field, octree and planes computed there, the
 * same tree bit for bit (voxelizer/gpu_build.cu). The tree must fit host memory (opts->mem_limit:
 * VX_ERR_LIMIT, then vx_voxelize_stream with opts->gpu builds the surface on the GPU and the
 * octree on the CPU, out of core). VX_ERR_NO_GPU or VX_ERR_CUDA when no GPU can run it,
 * VX_ERR_NOMEM when GPU memory is short. */
vx_status vx_voxelize_gpu(const vx_soup *mesh, const vx_voxelize_opts *opts, vx_octree *out,
                          vx_voxelize_stats *stats, vx_error *err);

/* The same build, block by block in Morton order on all cores, into a level-by-level stream
 * (svo/stream.h) instead of a tree: the voxels, field and planes are bit for bit vx_voxelize's
 * (before pruning: opts->max_error is not applied). Peak memory stays under opts->mem_limit
 * (0: no limit; the levels then stay in memory): the levels stay in memory while they and a later
 * in-memory write fit, else they spill to one temporary file per level in tmp_dir (NULL: $TMPDIR
 * or /tmp), which vanish with the stream. With opts->color and a coloured mesh, the stream keeps
 * a colour per node and voxel (out->color), made block by block (color_block.c): the bytes
 * vx_color_tree gives on the same tree with opts->color_filter, their memory within the limit. A limit too small even for that fails at once with
 * VX_ERR_LIMIT and an estimate of what it would take. On failure nothing is left behind. */
vx_status vx_voxelize_stream(const vx_soup *mesh, const vx_voxelize_opts *opts, const char *tmp_dir,
                             vx_stream *out, vx_voxelize_stats *stats, vx_error *err);

/* The colour pass (color.c): node_color and voxel_color of the built tree t (every level in
 * memory, pruned or not) from the coloured soup it was built from (soup->color; NULL: nothing to
 * do, VX_OK). Each triangle is cut into its parts in the finest voxels; a part's colour is the
 * area-weighted mean in linear light of the surface over it, textures filtered over the part's
 * footprint at the texel rate (mip levels), alpha by the material's mode; a cell's colour is the
 * coverage-weighted mean of the parts below it (VX_COLOR_FILTER_MEAN), or the colour of its part
 * / child with the largest opaque area (VX_COLOR_FILTER_DOMINANT, where a part's colour is that
 * of one point of it: the texel under its centre, never a mean); cells no part reached take
 * their parent's colour with alpha 255; cells whose parts are all cut out have alpha 0. Pruned
 * leaves get the colour of the subtree they replaced, so colouring then pruning (vx_octree_prune
 * carries the colours) and pruning then colouring give the same bytes. The result does not
 * depend on `threads` (0: all cores). mem_limit (0: none) is the whole process's: what the pass
 * holds is charged against what the limit leaves above the resident memory, the parts' records
 * as they are made; past it, VX_ERR_LIMIT (VX_ERR_NOMEM when an allocation fails), the tree left
 * as it was (grey). Exact duplicate triangles, which the build drops, count as often as they
 * appear in the means. */
vx_status vx_color_tree(const vx_soup *soup, vx_octree *t, vx_color_filter filter, int threads,
                        uint64_t mem_limit, vx_error *err);
/* vx_color_tree, the parts made on the GPU when `gpu` is set (the same bytes): when the GPU
 * cannot (no CUDA device, too little device memory, a CUDA error) the CPU makes them and
 * *gpu_note (when not NULL) says why; *on_gpu (when not NULL) is 1 when the GPU made them. */
vx_status vx_color_tree_ex(const vx_soup *soup, vx_octree *t, vx_color_filter filter, int threads,
                           uint64_t mem_limit, int gpu, int *on_gpu, vx_error *gpu_note,
                           vx_error *err);

VX_EXTERN_C_END

#endif
