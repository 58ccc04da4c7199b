/* SPDX-License-Identifier: Apache-2.0 */
/* color_query.h - the colour of a coloured tree at world points: the code behind vx_tree_colors
 * (include/voxlod/tree.h states the rule; color_query.c how it is searched).
 *
 * Contract: t is coloured (node_color set, and voxel_color when the voxels are loaded and there
 * are any), t passed vx_octree_validate, level < t->levels_loaded, and points / rgba hold 3n
 * floats / 4n bytes; the caller (lib/tree_color.c) checks these. rgba gets, per point, r g b a
 * (svo/color.h's packed RGBA8 as bytes), 0 0 0 0 where no cell is near or the point is not
 * finite. Large n runs on all cores; any thread count gives the same bytes. */
#ifndef VOXLOD_SVO_COLOR_QUERY_H
#define VOXLOD_SVO_COLOR_QUERY_H

#include "svo/svo.h"

VX_EXTERN_C_BEGIN

void vx_octree_colors(const vx_octree *t, uint32_t level, const float *points, uint64_t n,
                      uint8_t *rgba);

VX_EXTERN_C_END

#endif
