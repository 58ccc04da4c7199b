/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_tile_split.c - libFuzzer target: a parts file of a mesh split by tile (what a task reads
 * from the shared folder, formats/tile_split.h), arbitrary bytes: the header decoded against the
 * input's size, then the index, then every run's records, each with their checks. For half the
 * inputs every check (header, index, runs) is set right first, so that forged fields and records
 * get past them and their ranges are tested. Whatever decodes must hold what the checks promise:
 * runs inside the records, indices below the mesh's count and rising within a part, finite
 * coordinates. Seeds: tests/corpus/tile_split (parts files of small meshes). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "formats/svo_codec.h"
#include "formats/tile_split.h"

static void reseal(uint8_t *b, size_t size) {
  vx_split_head h;
  vx_error e;
  /* the header's fields as they stand, its check set right; then the index's and the runs' */
  memset(&h, 0, sizeof h);
  h.sign_rule = vx_get_u32(b + 12);
  vx_tiled_header_get(b + 16, &h.h);
  h.triangles = vx_get_u64(b + 72);
  h.copies = vx_get_u64(b + 80);
  h.records = vx_get_u64(b + 88);
  h.runs = vx_get_u64(b + 96);
  h.tiles = vx_get_u64(b + 104);
  h.max_part = vx_get_u64(b + 112);
  h.index_at = vx_get_u64(b + 120);
  if (h.index_at <= size && h.runs <= (size - h.index_at) / VX_SPLIT_RUN) {
    uint8_t *ix = b + h.index_at;
    for (uint64_t i = 0; i < h.runs; i++) {
      const uint64_t at = vx_get_u64(ix + i * VX_SPLIT_RUN + 8),
                     n = vx_get_u64(ix + i * VX_SPLIT_RUN + 16);
      uint32_t c = 0;
      if (at <= size && n <= (size - at) / VX_SPLIT_RECORD &&
          vx_svo_encoded_check(b + at, (size_t)(n * VX_SPLIT_RECORD), &c, &e) == VX_OK)
        vx_put_u32(ix + i * VX_SPLIT_RUN + 24, c);
    }
    (void)vx_svo_encoded_check(ix, (size_t)(h.runs * VX_SPLIT_RUN), &h.index_check, &e);
  }
  vx_split_head_encode(&h, b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < VX_SPLIT_HEADER) return 0;
  uint8_t *b = (uint8_t *)malloc(size);
  if (!b) return 0;
  memcpy(b, data, size);
  if (data[size - 1] & 1) reseal(b, size);
  vx_split_head h;
  vx_error e;
  vx_split_run *runs = NULL;
  if (vx_split_head_decode(b, size, "fuzz", &h, &e) != VX_OK) goto done;
  runs = (vx_split_run *)malloc((size_t)h.runs * sizeof *runs);
  if (!runs || vx_split_runs_decode(b + h.index_at, &h, "fuzz", runs, &e) != VX_OK) goto done;
  int64_t last = -1;
  for (uint64_t i = 0; i < h.runs; i++) {
    if (runs[i].at + runs[i].n * VX_SPLIT_RECORD > h.index_at) abort(); /* past the records */
    if (i == 0 || runs[i].code != runs[i - 1].code) last = -1;
    uint32_t *idx = (uint32_t *)malloc((size_t)runs[i].n * 4);
    float *pos = (float *)malloc((size_t)runs[i].n * 36);
    const int64_t before = last;
    if (idx && pos &&
        vx_split_run_decode(b + runs[i].at, &runs[i], &h, "fuzz", 1, &last, idx, pos, &e) ==
            VX_OK) {
      for (uint64_t t = 0; t < runs[i].n; t++) {
        if (idx[t] >= h.triangles || (int64_t)idx[t] <= (t ? (int64_t)idx[t - 1] : before))
          abort();
        for (int k = 0; k < 9; k++)
          if (!isfinite(pos[9 * t + k])) abort();
      }
    }
    free(idx);
    free(pos);
  }
done:
  free(runs);
  free(b);
  return 0;
}
