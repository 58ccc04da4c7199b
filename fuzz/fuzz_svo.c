/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_svo.c - libFuzzer target: arbitrary bytes through the .svo decoder and the validator.
 * Any input must either be rejected or give a tree that validates; ASan/UBSan catch the rest.
 * Also exercises partial reads and a small memory limit (no allocation beyond it). */
#include <stdint.h>
#include <stdlib.h>
#include "formats/svo_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  vx_svo_read_opts o = {-1, (uint64_t)64 << 20};
  vx_octree t;
  vx_error e;
  if (vx_svo_decode(data, size, &o, &t, NULL, &e) == VX_OK) {
    if (vx_octree_validate(&t, &e) != VX_OK) abort();
    vx_octree_free(&t);
  }
  o.max_level = size ? data[size - 1] % 4 : 0;
  if (vx_svo_decode(data, size, &o, &t, NULL, &e) == VX_OK) {
    if (vx_octree_validate(&t, &e) != VX_OK) abort();
    vx_octree_free(&t);
  }
  return 0;
}
