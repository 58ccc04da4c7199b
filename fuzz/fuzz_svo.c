/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_svo.c - libFuzzer target: arbitrary bytes through the .svo decoder and the validator.
 * Any input must either be rejected or give a tree that validates; ASan/UBSan catch the rest.
 * Also exercises partial reads and a small memory limit (no allocation beyond it), and reads
 * every colour of a coloured file (seeds with colour sections: tests/corpus/svo/plane_d3_color*),
 * which must come with its arrays whole: node colours for every node loaded, voxel colours for
 * every voxel loaded. */
#include <stdint.h>
#include <stdlib.h>
#include "formats/svo_file.h"

static volatile uint32_t sink;

static void check_colors(const vx_octree *t) {
  if (!t->node_color && !t->voxel_color) return;
  if (!t->node_color || (t->voxel_count && !t->voxel_color)) abort();
  uint32_t x = 0;
  for (uint64_t i = 0; i < t->node_count; i++) x ^= t->node_color[i];
  for (uint64_t i = 0; i < t->voxel_count; i++) x ^= t->voxel_color[i];
  sink = x;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  vx_svo_read_opts o = {-1, (uint64_t)64 << 20, 0};
  vx_octree t;
  vx_error e;
  if (vx_svo_decode(data, size, &o, &t, NULL, &e) == VX_OK) {
    if (vx_octree_validate(&t, &e) != VX_OK) abort();
    check_colors(&t);
    vx_octree_free(&t);
  }
  o.max_level = size ? data[size - 1] % 4 : 0;
  if (vx_svo_decode(data, size, &o, &t, NULL, &e) == VX_OK) {
    if (vx_octree_validate(&t, &e) != VX_OK) abort();
    check_colors(&t);
    vx_octree_free(&t);
  }
  /* the same partial read, the sections it does not decode checked too */
  o.check_rest = 1;
  if (vx_svo_decode(data, size, &o, &t, NULL, &e) == VX_OK) {
    if (vx_octree_validate(&t, &e) != VX_OK) abort();
    vx_octree_free(&t);
  }
  return 0;
}
