/* SPDX-License-Identifier: Apache-2.0 */
/* tree_from_arrays.c - build a tree from vertex and index arrays in memory (an octahedron) and
 * print its memory per level.
 *
 * Builds against an installed libvoxlod (see CMakeLists.txt here, or
 * cc tree_from_arrays.c $(pkg-config --cflags --libs voxlod)).
 */
#include <stdio.h>
#include <voxlod.h>

int main(void) {
  const float v[6 * 3] = {1, 0, 0, -1, 0, 0, 0, 1, 0, 0, -1, 0, 0, 0, 1, 0, 0, -1};
  const uint32_t f[8 * 3] = {0, 2, 4, 2, 1, 4, 1, 3, 4, 3, 0, 4,
                             2, 0, 5, 1, 2, 5, 3, 1, 5, 0, 3, 5};
  vx_error err;
  vx_mesh *mesh = NULL;
  if (vx_mesh_from_arrays(v, 6, f, 8, &mesh, &err) != VX_OK) {
    fprintf(stderr, "mesh: %s\n", err.msg);
    return 1;
  }
  vx_convert_opts co = {0};
  co.struct_size = sizeof co;
  co.resolution = 64;
  co.device = VX_DEVICE_CPU;
  vx_conversion *b = NULL;
  vx_status s = vx_convert(mesh, &co, &b, &err); /* in memory only */
  vx_mesh_free(mesh);
  if (s != VX_OK) {
    fprintf(stderr, "convert: %s\n", err.msg);
    return 1;
  }
  vx_tree *t = vx_conversion_take_tree(b);
  vx_conversion_free(b);
  vx_tree_info info = {0};
  info.struct_size = sizeof info;
  vx_tree_get_info(t, &info);
  printf("libvoxlod %s: %u^3, %llu nodes, %llu surface voxels, %llu bytes\n", vx_version(),
         info.resolution, (unsigned long long)info.node_count,
         (unsigned long long)info.voxel_count, (unsigned long long)info.memory_bytes);
  for (uint32_t l = 0; l <= info.depth; l++) {
    vx_level_stats ls = {0};
    ls.struct_size = sizeof ls;
    vx_tree_get_level(t, l, &ls);
    printf("level %2u: %8llu cells, %10llu bytes to render at this level\n", l,
           (unsigned long long)ls.cells, (unsigned long long)ls.render_bytes);
  }
  vx_tree_free(t);
  return info.voxel_count > 0 ? 0 : 1;
}
