/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_tree.h - what the fuzz targets that build trees from their bytes share (fuzz_sample,
 * fuzz_color): little-endian reads and the surface voxels of a run of fixed-size records, each
 * record's first 3 bytes a cell (masked to the grid) and its next 8 the voxel's corners. */
#ifndef VOXLOD_FUZZ_TREE_H
#define VOXLOD_FUZZ_TREE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "svo/svo.h"

static uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* The voxels of n (< 2^20) records of `rec` bytes at data, in Morton order, each cell's first
 * record kept: codes, field and src (the record each came from) get m entries; returns m, or 0
 * when out of memory. */
static size_t fuzz_voxels(const uint8_t *data, size_t n, size_t rec, uint32_t mask,
                          uint64_t *codes, vx_voxel *field, size_t *src) {
  uint64_t *key = (uint64_t *)malloc((n ? n : 1) * sizeof *key);
  if (!key) return 0;
  for (size_t i = 0; i < n; i++) {
    const uint8_t *r = data + rec * i;
    key[i] = vx_morton_encode(r[0] & mask, r[1] & mask, r[2] & mask) << 20 | i;
  }
  qsort(key, n, sizeof *key, cmp_u64);
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t code = key[i] >> 20;
    if (m && codes[m - 1] == code) continue;
    codes[m] = code;
    src[m] = (size_t)(key[i] & 0xfffff);
    memcpy(field[m].c, data + rec * src[m] + 3, 8);
    m++;
  }
  free(key);
  return m;
}

#endif
