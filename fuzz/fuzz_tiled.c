/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_tiled.c - libFuzzer target: arbitrary bytes through the tiled .svo reader: the prologue,
 * trailer, header, top tree and tile index, each tile read alone, and the joined tree, whole and
 * in part. Any input must be refused or give trees that validate, within a small memory limit;
 * ASan/UBSan catch the rest. Seeds: tests/corpus/tiled (small tiled files). */
#include <stdint.h>
#include <stdlib.h>
#include "formats/svo_tiled.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  vx_svo_read_opts o = {-1, (uint64_t)64 << 20};
  vx_tiled *t = NULL;
  vx_error e;
  if (vx_tiled_open_memory(data, size, &o, &t, &e) != VX_OK) return 0;
  if (vx_octree_validate(vx_tiled_top(t), &e) != VX_OK) abort();
  const uint64_t n = vx_tiled_tile_count(t);
  for (uint64_t i = 0; i < n && i < 64; i++) {
    vx_octree tile;
    if (vx_tiled_read_tile(t, i, &o, &tile, &e) == VX_OK) {
      if (vx_octree_validate(&tile, &e) != VX_OK) abort();
      vx_octree_free(&tile);
    }
  }
  vx_octree all;
  if (vx_tiled_stitch(t, &o, &all, &e) == VX_OK) {
    if (vx_octree_validate(&all, &e) != VX_OK) abort();
    vx_octree_free(&all);
  }
  o.max_level = data[size - 1] % 6; /* a partial read: the top tree alone, or some tile levels */
  if (vx_tiled_stitch(t, &o, &all, &e) == VX_OK) {
    if (vx_octree_validate(&all, &e) != VX_OK) abort();
    vx_octree_free(&all);
  }
  vx_tiled_close(t);
  return 0;
}
