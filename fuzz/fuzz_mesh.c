/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_mesh.c - libFuzzer target: arbitrary bytes as an OBJ, PLY, STL or OFF file through
 * assimp (aiImportFileFromMemory) and the triangle filter of vx_soup_append. The first byte picks
 * the format hint. Whatever is kept must be finite, non-degenerate and inside the bbox. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include "formats/mesh_import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char *hints[] = {"obj", "ply", "stl", "off"};
  if (size < 1) return 0;
  const char *hint = hints[data[0] & 3];
  vx_soup m;
  vx_error e;
  if (vx_soup_import_memory(data + 1, size - 1, hint, &m, &e) == VX_OK) {
    if (m.tri_count == 0) abort();
    for (uint64_t k = 0; k < m.tri_count * 9; k++) {
      float v = m.pos[k];
      if (!isfinite(v) || v < m.bbox_min[k % 3] || v > m.bbox_max[k % 3]) abort();
    }
    vx_soup_free(&m);
  }
  return 0;
}
