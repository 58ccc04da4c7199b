/* SPDX-License-Identifier: Apache-2.0 */
/* tree_color.c - vx_tree_colors: the checks of its arguments, then svo/color_query.h. */
#include "lib/internal.h"
#include "svo/color_query.h"

vx_status vx_tree_colors(const vx_tree *t, const float *points, uint64_t n, int level,
                         uint8_t *rgba, vx_error *err) {
  if (!t) return vx_error_set(err, VX_ERR_INVALID_ARG, "no tree");
  const vx_octree *o = &t->oct;
  if (!o->node_color || (o->levels_loaded == o->depth + 1 && o->voxel_count && !o->voxel_color))
    return vx_error_set(err, VX_ERR_INVALID_ARG, "the tree has no colour");
  if (n > SIZE_MAX / (3 * sizeof(float)))
    return vx_error_set(err, VX_ERR_INVALID_ARG, "%llu points are too many",
                        (unsigned long long)n);
  if (n && (!points || !rgba)) return vx_error_set(err, VX_ERR_INVALID_ARG, "no points or no output");
  const int finest = (int)o->levels_loaded - 1;
  if (level < -1 || level > finest)
    return vx_error_set(err, VX_ERR_INVALID_ARG,
                        "level %d is not loaded (levels 0 .. %d are; -1: the finest)", level,
                        finest);
  vx_octree_colors(o, level < 0 ? (uint32_t)finest : (uint32_t)level, points, n, rgba);
  return VX_OK;
}
