/* SPDX-License-Identifier: Apache-2.0 */
/* tiled_damage.h - what the tiled-file damage tests share: a file read whole from memory (open,
 * then joined), and the sweep of every single-byte change and every truncation. */
#ifndef VOXLOD_TESTS_TILED_DAMAGE_H
#define VOXLOD_TESTS_TILED_DAMAGE_H

#include "formats/svo_tiled.h"

/* The tiled file in d[0 .. n) opened and joined into one tree (64 MiB at most). */
static inline vx_status tiled_open_all(const uint8_t *d, size_t n, vx_error *e) {
  vx_tiled *t = NULL;
  vx_svo_read_opts ro = {-1, 64u << 20, 0, 0};
  vx_status s = vx_tiled_open_memory(d, n, &ro, &t, e);
  vx_octree o;
  if (s == VX_OK) s = vx_tiled_stitch(t, &ro, &o, e);
  if (s == VX_OK) vx_octree_free(&o);
  vx_tiled_close(t);
  return s;
}

/* Of the single-byte changes (each byte xor 0x21) and the truncations of the file d[0 .. n), how
 * many tiled_open_all takes (0: every one refused). d is restored. */
static inline uint64_t tiled_damage_missed(uint8_t *d, size_t n) {
  vx_error e;
  uint64_t missed = 0;
  for (size_t i = 0; i < n; i++) {
    const uint8_t keep = d[i];
    d[i] ^= 0x21;
    missed += tiled_open_all(d, n, &e) == VX_OK;
    d[i] = keep;
  }
  for (size_t k = 0; k < n; k++) missed += tiled_open_all(d, k, &e) == VX_OK;
  return missed;
}

#endif
