/* SPDX-License-Identifier: Apache-2.0 */
/* band_cache.h - the band cache: the sampled field stored in bricks of 8^3 cells around the
 * surface, so that a point near the surface costs one lookup instead of a descent and a search
 * (sampler/band_cache.c builds it; sampler/sample_eval.h reads it; host+device).
 *
 * Every finest cell within ceil(band) cells (L-infinity, at most 4) of a surface voxel, inside the
 * root box, lies in a brick of 8^3 cells found through a hash of its brick coordinates. A brick
 * holds the values at its 9^3 grid points, quantized as voxel corners are (q * band / 127
 * voxels): a surface voxel's corner values where a voxel has that corner (they agree, the
 * converter storing each grid point's distance in every voxel that has it), else the sampler's
 * rule evaluated at the point. A cell is
 * - a surface voxel whose corners are the grid's (not one the thin rule re-signed, whose corners
 *   differ): a point in it gets the tree's own bits;
 * - an empty cell whose 8 corners all have a sign and all lie on one side (no surface crosses an
 *   empty cell), whose corners give the rule within 1/8 voxel, with the rule's sign, at its
 *   centre and, just inside the cell, at each corner a voxel gave (the rule is not smooth
 *   everywhere: where the winning cell changes, beside thin parts, where it turns far; nor
 *   continuous at a voxel's faces): a point in it gets the trilinear interpolation of its
 *   corners (near, or far where it reaches the band: the rule may call a point within 1/8
 *   voxel of the band the other);
 * - neither (re-signed voxels, other cells): the rule answers.
 */
#ifndef VOXLOD_SVO_BAND_CACHE_H
#define VOXLOD_SVO_BAND_CACHE_H

#include <stdint.h>
#include "svo/hostdev.h"
#include "svo/node.h"

#define VX_BC_SHIFT 3u                       /* 8 cells per brick side */
#define VX_BC_CELLS (1u << (3 * VX_BC_SHIFT)) /* 512 */
#define VX_BC_WORDS (VX_BC_CELLS / 64u)

#define VX_BC_SIDE (1u << VX_BC_SHIFT)
#define VX_BC_GRID (VX_BC_SIDE + 1u) /* grid points per brick side */

/* Cell (x, y, z) of a brick is bit x | y << 3 | z << 6 of the masks; grid point (x, y, z) is
 * grid[x + 9 y + 81 z]. */
typedef struct vx_bc_brick {
  uint64_t voxel[VX_BC_WORDS]; /* a surface voxel, answered from the grid */
  uint64_t empty[VX_BC_WORDS]; /* an empty cell, answered from the grid */
  int8_t grid[VX_BC_GRID * VX_BC_GRID * VX_BC_GRID];
} vx_bc_brick;

/* Open addressing, linear probing: keys[i] = the brick key + 1 (0: a free slot), value the
 * brick's index. capacity is a power of two, at least twice the bricks. */
typedef struct vx_band_cache {
  const uint64_t *keys;
  const uint32_t *values;
  uint64_t mask; /* capacity - 1 */
  const vx_bc_brick *bricks;
  uint64_t brick_count;
} vx_band_cache;

/* The key of the brick holding finest cell x (each coordinate < 2^VX_MAX_DEPTH). */
VX_HD uint64_t vx_bc_key(const uint32_t x[3]) {
  return (uint64_t)(x[0] >> VX_BC_SHIFT) | (uint64_t)(x[1] >> VX_BC_SHIFT) << 21 |
         (uint64_t)(x[2] >> VX_BC_SHIFT) << 42;
}

/* The hash table's first slot for key k. */
VX_HD uint64_t vx_bc_slot(uint64_t k, uint64_t mask) {
  return (k * 0x9e3779b97f4a7c15ull) >> 20 & mask;
}

/* The slot of stored key k1 (a brick key + 1) in a table of mask + 1 slots, or the free slot
 * where it would go (keys[slot] == 0). */
VX_HD uint64_t vx_bc_probe(const uint64_t *keys, uint64_t mask, uint64_t k1) {
  uint64_t i = vx_bc_slot(k1, mask);
  while (keys[i] != 0u && keys[i] != k1) i = (i + 1u) & mask;
  return i;
}

/* The brick holding finest cell x, or NULL. */
VX_HD const vx_bc_brick *vx_bc_find(const vx_band_cache *c, const uint32_t x[3]) {
  const uint64_t i = vx_bc_probe(c->keys, c->mask, vx_bc_key(x) + 1u);
  return c->keys[i] ? &c->bricks[c->values[i]] : (const vx_bc_brick *)0;
}

/* The index of finest cell x within its brick. */
VX_HD uint32_t vx_bc_cell(const uint32_t x[3]) {
  const uint32_t m = VX_BC_SIDE - 1u;
  return (x[0] & m) | (x[1] & m) << VX_BC_SHIFT | (x[2] & m) << (2 * VX_BC_SHIFT);
}

/* The corners of cell k of brick b, as a voxel's (corner i at x + (i & 1), y + (i >> 1 & 1),
 * z + (i >> 2)). */
VX_HD vx_voxel vx_bc_corners(const vx_bc_brick *b, uint32_t k) {
  const uint32_t G = VX_BC_GRID, m = VX_BC_SIDE - 1u;
  const int8_t *g =
      b->grid + (k & m) + G * (k >> VX_BC_SHIFT & m) + G * G * (k >> (2 * VX_BC_SHIFT));
  vx_voxel v;
  v.c[0] = g[0];
  v.c[1] = g[1];
  v.c[2] = g[G];
  v.c[3] = g[G + 1];
  v.c[4] = g[G * G];
  v.c[5] = g[G * G + 1];
  v.c[6] = g[G * G + G];
  v.c[7] = g[G * G + G + 1];
  return v;
}

#endif
