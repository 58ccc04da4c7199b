/* SPDX-License-Identifier: Apache-2.0 */
/* color_query.h - the colour of a coloured tree at world points: the code behind vx_tree_colors
 * (include/voxlod/tree.h states the rule; color_query.c how it is searched).
 *
 * Contract: t is coloured (node_color set, and voxel_color when the voxels are loaded and there
 * are any), t passed vx_octree_validate, level < t->levels_loaded, and points / rgba hold 3n
 * floats / 4n bytes; the caller (lib/tree_color.c) checks these. rgba gets, per point, r g b a
 * (svo/color.h's packed RGBA8 as bytes), 0 0 0 0 where no cell is near or the point is not
 * finite. Large n runs on all cores, in Morton order of the points' cells; any thread count and
 * any order give the same bytes. */
#ifndef VOXLOD_SVO_COLOR_QUERY_H
#define VOXLOD_SVO_COLOR_QUERY_H

#include "svo/svo.h"

VX_EXTERN_C_BEGIN

void vx_octree_colors(const vx_octree *t, uint32_t level, const float *points, uint64_t n,
                      uint8_t *rgba);

/* A tree held as a top tree and subtrees: the top tree t has the whole tree's depth, transform
 * and band, its levels 0 .. `level` loaded (node_color set); each node of that level with
 * children is the root of a subtree of depth t->depth - level (nodes and colours from its root,
 * voxels and theirs at its finest level) that subtree(ctx, cell) gives, cell being the node's
 * coordinates at that level; NULL: none there (its cells are not offered). The caller makes
 * every subtree within reach of the points available; subtree is called from several threads
 * at once. */
typedef struct vx_color_split {
  uint32_t level;
  const vx_octree *(*subtree)(void *ctx, const uint32_t cell[3]);
  void *ctx;
} vx_color_split;

/* vx_octree_colors on such a tree (split NULL, or level at or above split->level: the top tree
 * alone). The same bytes as vx_octree_colors on the tree joined from the top tree and subtrees. */
void vx_octree_colors_split(const vx_octree *t, const vx_color_split *split, uint32_t level,
                            const float *points, uint64_t n, uint8_t *rgba);

VX_EXTERN_C_END

#endif
