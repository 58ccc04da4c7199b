/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_svo.c - libFuzzer target: arbitrary bytes through the .svo decoder and the validator.
 * Any input must either be rejected or give a tree that validates; ASan/UBSan catch the rest.
 * Also exercises partial reads and a small memory limit (no allocation beyond it), and reads
 * every colour of a coloured file (seeds with colour sections: tests/corpus/svo/plane_d3_color*),
 * which must come with its arrays whole: node colours for every node loaded, voxel colours for
 * every voxel loaded. Whole reads go both ways, level by level and side by side, which must give
 * the same status, message and tree. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
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

static int same(const void *a, const void *b, uint64_t n) { return n == 0 || memcmp(a, b, n) == 0; }

/* Level by level and side by side (formats/svo_read_levels.c): the same status, message, tree. */
static void both_ways(const uint8_t *data, size_t size, vx_svo_read_opts o) {
  vx_octree a, b;
  vx_error ea, eb;
  memset(&ea, 0, sizeof ea);
  memset(&eb, 0, sizeof eb);
  o.threads = 1;
  vx_status sa = vx_svo_decode(data, size, &o, &a, NULL, &ea);
  o.threads = 2;
  vx_status sb = vx_svo_decode(data, size, &o, &b, NULL, &eb);
  if (sa != sb || strcmp(ea.msg, eb.msg) != 0) abort();
  if (sa != VX_OK) return;
  if (vx_octree_validate(&b, &eb) != VX_OK) abort();
  if (a.node_count != b.node_count || a.voxel_count != b.voxel_count ||
      !same(a.nodes, b.nodes, a.node_count * sizeof(vx_node)) ||
      !same(a.voxels, b.voxels, a.voxel_count * sizeof(vx_voxel)) ||
      !a.node_color != !b.node_color || !a.voxel_color != !b.voxel_color ||
      (a.node_color && !same(a.node_color, b.node_color, a.node_count * 4)) ||
      (a.voxel_color && !same(a.voxel_color, b.voxel_color, a.voxel_count * 4)))
    abort();
  check_colors(&b);
  vx_octree_free(&a);
  vx_octree_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  vx_svo_read_opts o = {-1, (uint64_t)64 << 20, 0, 0};
  vx_octree t;
  vx_error e;
  both_ways(data, size, o);
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
