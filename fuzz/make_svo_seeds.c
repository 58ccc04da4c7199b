/* SPDX-License-Identifier: Apache-2.0 */
/* make_svo_seeds.c - writes small valid .svo files (the fuzz seed corpus, tests/corpus/svo/).
 * Usage: make_svo_seeds OUTDIR */
#include <stdio.h>
#include <stdlib.h>
#include "formats/svo_file.h"
#include "svo/lod.h"

/* Colours for every node and voxel (a gradient over the array index, some alpha), so that the
 * coloured seed carries colour sections. */
static int paint(vx_octree *t) {
  t->node_color = (uint32_t *)vx_malloc((size_t)t->node_count * sizeof(uint32_t));
  t->voxel_color = (uint32_t *)vx_malloc((size_t)(t->voxel_count ? t->voxel_count : 1) * sizeof(uint32_t));
  if (!t->node_color || !t->voxel_color) return 0;
  for (uint64_t i = 0; i < t->node_count; i++)
    t->node_color[i] = (uint32_t)(40 + 20 * i) | (uint32_t)(200 - 9 * i) << 8 | 128u << 16 | 255u << 24;
  for (uint64_t i = 0; i < t->voxel_count; i++)
    t->voxel_color[i] = (uint32_t)(16 * i) | 64u << 8 | (uint32_t)(255 - 16 * i) << 16 |
                        (i % 5 == 0 ? 0u : 255u) << 24;
  return 1;
}

static int write_seed(const char *dir, const char *name, uint32_t depth, const uint64_t *codes,
                      uint64_t n, float prune, int color) {
  vx_voxel *f = (vx_voxel *)calloc(n, sizeof *f);
  for (uint64_t i = 0; i < n; i++)
    for (int k = 0; k < 8; k++) f[i].c[k] = (int8_t)((k & 1) * 40 - 20 + (int)(i % 7));
  vx_octree t;
  vx_error e;
  int ok = vx_octree_build(depth, codes, f, n, &t, &e) == VX_OK;
  free(f);
  if (!ok) return fprintf(stderr, "%s: %s\n", name, e.msg), 1;
  t.band = 2.0f;
  t.xf.scale = 0.5;
  ok = vx_octree_fit_planes(&t, NULL, NULL, &e) == VX_OK &&
       (!color || paint(&t)) && (prune <= 0 || vx_octree_prune(&t, prune, &e) == VX_OK);
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  if (ok) ok = vx_svo_write(path, &t, 19, NULL, NULL, &e) == VX_OK;
  vx_octree_free(&t);
  if (!ok) return fprintf(stderr, "%s: %s\n", name, e.msg), 1;
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 2) return fprintf(stderr, "usage: make_svo_seeds OUTDIR\n"), 2;
  uint64_t one = vx_morton_encode(1, 0, 1) & 7;
  uint64_t codes[64];
  int n = 0;
  for (uint32_t z = 0; z < 4; z++)
    for (uint32_t x = 0; x < 4; x++) codes[n++] = vx_morton_encode(x, 1, z); /* a plane y = 1 */
  for (int i = 1; i < n; i++) /* insertion sort by Morton code */
    for (int j = i; j > 0 && codes[j] < codes[j - 1]; j--) {
      uint64_t t = codes[j];
      codes[j] = codes[j - 1];
      codes[j - 1] = t;
    }
  int bad = 0;
  bad |= write_seed(argv[1], "one_voxel_d1.svo", 1, &one, 1, 0, 0);
  bad |= write_seed(argv[1], "plane_d2.svo", 2, codes, (uint64_t)n, 0, 0);
  bad |= write_seed(argv[1], "plane_d3_pruned.svo", 3, codes, (uint64_t)n, 100.0f, 0);
  bad |= write_seed(argv[1], "plane_d3_color.svo", 3, codes, (uint64_t)n, 0, 1);
  bad |= write_seed(argv[1], "plane_d3_color_pruned.svo", 3, codes, (uint64_t)n, 100.0f, 1);
  return bad;
}
