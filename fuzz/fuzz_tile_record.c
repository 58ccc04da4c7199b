/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_tile_record.c - libFuzzer target: what a merge receives from a task, arbitrary: the first
 * VX_TILE_PART_BYTES bytes as a tile record, the rest as the tile's .svo file. The record is
 * decoded (every field checked; for half the inputs after its own check is set right, so that
 * forged fields get past the check), and one that passes heads a tiled file: the writer opens with
 * its build, takes the file checked against the record's length and check, fits the top tree
 * and commits; the result must then open, and its tile read back valid or refused as damaged
 * (the merge checks every section's check32 but decompresses only the root: a file forged with
 * consistent checks can still hold levels that do not decode). Seeds:
 * tests/corpus/tile_record (a record followed by its tile, as tasks write them). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "formats/tile_part.h"

/* A coloured build's top tree: one opaque grey (the merge makes it from the records' colour sums
 * in lib/; a tile whose root is not opaque is then refused, as the merge refuses disagreement). */
static vx_status grey_top(void *ctx, vx_octree *top, uint32_t K, uint32_t *colors, vx_error *err) {
  (void)ctx, (void)K, (void)err;
  for (uint64_t i = 0; i < top->node_count; i++) colors[i] = 0xff7f7f7fu;
  return VX_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < VX_TILE_PART_BYTES) return 0;
  vx_tile_part_rec r;
  vx_error e;
  uint8_t rec[VX_TILE_PART_BYTES];
  memcpy(rec, data, sizeof rec);
  /* half the inputs as forgeries whose own check is right: the fields themselves are tested */
  if ((data[size - 1] & 1) && vx_tile_part_seal(rec, &e) != VX_OK) return 0;
  if (vx_tile_part_decode(rec, &r, &e) != VX_OK || r.empty) return 0;
  char tile[64], out[64];
  snprintf(tile, sizeof tile, "/tmp/fuzz-tile-%d.svo", (int)getpid());
  snprintf(out, sizeof out, "/tmp/fuzz-tiled-%d.svo", (int)getpid());
  FILE *f = fopen(tile, "wb");
  if (!f) return 0;
  fwrite(data + VX_TILE_PART_BYTES, 1, size - VX_TILE_PART_BYTES, f);
  fclose(f);
  vx_tiled_writer *w = NULL;
  vx_status s = vx_tiled_writer_open(out, &r.h, &w, &e);
  if (s == VX_OK && r.h.color) vx_tiled_writer_set_color(w, grey_top, NULL);
  if (s == VX_OK)
    s = vx_tiled_writer_add_checked(w, r.code, r.h.build_id, tile, &r.fit, r.length, r.check, &e);
  if (s == VX_OK) {
    s = vx_tiled_writer_finish(w, NULL, NULL, &e);
    w = NULL;
  }
  vx_tiled_writer_abort(w);
  if (s == VX_OK) {
    vx_svo_read_opts o = {-1, (uint64_t)64 << 20, 0, 0};
    vx_tiled *t = NULL;
    if (vx_tiled_open(out, &o, &t, &e) != VX_OK) { /* the writer wrote a bad file */
      fprintf(stderr, "%s\n", e.msg);
      abort();
    }
    /* The tile the writer took: its length, check32, header, root and every section's check32
     * match, but a forged section with consistent checks may still not decode (the merge does
     * not decompress whole tiles); reading it then refuses it as damaged. */
    vx_octree tr;
    vx_status rs = vx_tiled_read_tile(t, 0, &o, &tr, &e);
    if (rs != VX_OK && rs != VX_ERR_CORRUPT) {
      fprintf(stderr, "%s\n", e.msg);
      abort();
    }
    if (rs == VX_OK && vx_octree_validate(&tr, &e) != VX_OK) abort();
    if (rs == VX_OK) vx_octree_free(&tr);
    vx_tiled_close(t);
    unlink(out);
  }
  unlink(tile);
  return 0;
}
