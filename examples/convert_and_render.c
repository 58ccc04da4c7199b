/* SPDX-License-Identifier: Apache-2.0 */
/* convert_and_render.c - convert a mesh file to a tree (saved as .svo) and render an image of it.
 *
 *   convert_and_render MESH OUT.svo OUT.png [RES]
 *
 * Builds against an installed libvoxlod (see CMakeLists.txt here, or
 * cc convert_and_render.c $(pkg-config --cflags --libs voxlod)).
 */
#include <stdio.h>
#include <stdlib.h>
#include <voxlod.h>

static int fail(const char *what, const vx_error *e) {
  fprintf(stderr, "%s: %s\n", what, e->msg);
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s MESH OUT.svo OUT.png [RES]\n", argv[0]);
    return 2;
  }
  printf("libvoxlod %s (header %s)\n", vx_version(), VOXLOD_VERSION_STRING);
  vx_error err;
  vx_mesh *mesh = NULL;
  if (vx_mesh_load(argv[1], NULL, &mesh, &err) != VX_OK) return fail("load", &err);

  vx_convert_opts co = {0};
  co.struct_size = sizeof co;
  co.resolution = argc > 4 ? (uint32_t)atoi(argv[4]) : 128;
  vx_conversion *build = NULL;
  vx_status s = vx_convert(mesh, &co, &build, &err); /* the tree in memory */
  vx_mesh_free(mesh);
  if (s != VX_OK) return fail("convert", &err);
  const vx_tree *tree = vx_conversion_tree(build);
  if (vx_tree_save(tree, argv[2], NULL, &err) != VX_OK) return fail("save", &err);

  vx_renderer *r = NULL;
  if (vx_renderer_create(tree, NULL, &r, &err) != VX_OK) return fail("renderer", &err);
  vx_render_opts ro = {0};
  ro.struct_size = sizeof ro;
  ro.width = 640;
  ro.height = 480; /* finest level, default camera */
  uint8_t *rgb = malloc((size_t)ro.width * ro.height * 3);
  vx_frame_stats fs = {0};
  fs.struct_size = sizeof fs;
  if (!rgb || vx_render(r, &ro, rgb, NULL, &fs, &err) != VX_OK) return fail("render", &err);
  if (vx_write_png(argv[3], rgb, ro.width, ro.height, &err) != VX_OK) return fail("png", &err);
  printf("%s: %ux%u on the %s in %.1f ms\n", argv[3], ro.width, ro.height,
         fs.used_gpu ? "GPU" : "CPU", fs.ms_total);
  free(rgb);
  vx_renderer_free(r);
  vx_conversion_free(build);
  return 0;
}
