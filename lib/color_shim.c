/* SPDX-License-Identifier: Apache-2.0 */
/* color_shim.c - TEMPORARY stand-ins for the colour entry points of mesh.h and tree.h, so that the
 * Python package builds and its tests run before the real implementations are merged. DELETE THIS
 * FILE when they are: python/CMakeLists.txt compiles it only while it exists, and nothing else
 * references it. It keeps no colour (vx_mesh_set_vertex_colors validates and drops them), so every
 * tree stays grey; python/tests/test_color.py skips the checks that need a coloured tree while
 * this file exists. */
#include "lib/internal.h"

vx_status vx_mesh_set_vertex_colors(vx_mesh *m, const uint8_t *colors, uint64_t vertex_count,
                                    uint32_t channels, vx_error *err) {
  if (!m) return vx_error_set(err, VX_ERR_INVALID_ARG, "no mesh");
  if (channels != 3 && channels != 4)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "vertex colours have 3 or 4 channels, not %u",
                        channels);
  if (!colors && vertex_count) return vx_error_set(err, VX_ERR_INVALID_ARG, "no colours");
  return VX_OK;
}

const char *vx_mesh_notes(const vx_mesh *m) {
  return m && m->soup.color && m->soup.color->warnings ? m->soup.color->warnings : "";
}

const uint32_t *vx_tree_node_colors(const vx_tree *t, uint64_t *count) {
  if (count) *count = t && t->oct.node_color ? t->oct.node_count : 0;
  return t ? t->oct.node_color : NULL;
}

const uint32_t *vx_tree_voxel_colors(const vx_tree *t, uint64_t *count) {
  if (count) *count = t && t->oct.voxel_color ? t->oct.voxel_count : 0;
  return t ? t->oct.voxel_color : NULL;
}

vx_status vx_tree_colors(const vx_tree *t, const float *points, uint64_t n, int level,
                         uint8_t *rgba, vx_error *err) {
  (void)points, (void)n, (void)level, (void)rgba;
  if (!t) return vx_error_set(err, VX_ERR_INVALID_ARG, "no tree");
  if (!t->oct.node_color) return vx_error_set(err, VX_ERR_INVALID_ARG, "the tree has no colour");
  return vx_error_set(err, VX_ERR_INVALID_ARG, "colour lookup is not in this build");
}
