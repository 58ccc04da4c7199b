/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_vdb.c - libFuzzer target: arbitrary bytes through the two layers of the .vdb reader that
 * are ours (formats/vdb_read.h): the scan of a file's header, metadata and grid list, and the
 * parent's check of a child reader's answer (sent through a pipe, as the child sends it). OpenVDB
 * itself parses files in a child process under time and memory limits, so its own reactions to
 * hostile bytes are contained there; these two layers must never crash, whatever they are given,
 * and an answer they accept must build a tree that validates. Built with or without OpenVDB
 * (neither layer calls it). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/vdb_read.h"
#include "svo/lod.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  vx_vdb_listing l;
  vx_error e;
  uint32_t idx;
  if (vx_vdb_scan_memory(data, size, &l, &e) == VX_OK) {
    if (l.listed > VX_VDB_MAX_LISTED || l.listed > l.grid_count) abort();
    (void)vx_vdb_pick(&l, "fuzz.vdb", NULL, &idx, &e);
    (void)vx_vdb_pick(&l, "fuzz.vdb", "surface", &idx, &e);
  }
  int fds[2];
  if (pipe(fds) != 0) return 0;
  size_t n = size < 65536 ? size : 65536; /* a pipe holds 64 KiB without a reader */
  if (n && write(fds[1], data, n) != (ssize_t)n) abort();
  close(fds[1]);
  vx_vdb_surface s;
  vx_status st = VX_OK;
  int r = vx_vdb_answer_read(fds[0], 0.0, (uint64_t)256 << 20, &s, &st, &e);
  close(fds[0]);
  if (r == 0 && st == VX_OK) {
    vx_octree t;
    /* what vx_convert_grid does with an answer it accepts */
    if (vx_octree_build(s.depth, s.codes, s.voxels, s.count, &t, &e) != VX_OK) abort();
    t.xf.scale = s.scale;
    t.band = 2.0f;
    if (vx_octree_fit_planes(&t, NULL, NULL, &e) != VX_OK) abort();
    if (vx_octree_validate(&t, &e) != VX_OK) abort();
    vx_octree_free(&t);
  }
  vx_vdb_surface_free(&s);
  return 0;
}
