/* SPDX-License-Identifier: Apache-2.0 */
/* make_svo_seeds.c - writes small valid .svo files (the fuzz seed corpus, tests/corpus/svo/).
 * Usage: make_svo_seeds OUTDIR */
#include <stdio.h>
#include <stdlib.h>
#include "formats/svo_file.h"
#include "svo/lod.h"

static int write_seed(const char *dir, const char *name, uint32_t depth, const uint64_t *codes,
                      uint64_t n, float prune) {
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
       (prune <= 0 || vx_octree_prune(&t, prune, &e) == VX_OK);
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
  bad |= write_seed(argv[1], "one_voxel_d1.svo", 1, &one, 1, 0);
  bad |= write_seed(argv[1], "plane_d2.svo", 2, codes, (uint64_t)n, 0);
  bad |= write_seed(argv[1], "plane_d3_pruned.svo", 3, codes, (uint64_t)n, 100.0f);
  return bad;
}
