/* SPDX-License-Identifier: Apache-2.0 */
/* band_cache_fill.h - the band cache's per-brick steps after its bricks are known (step 3 of
 * sampler/band_cache.c): which empty cells to cache, the grid points and checks the rule must
 * give them, its values written into the brick, and which cells answer. Host and device
 * (hostdev.h's C11 subset): the CPU build runs them on its threads, the GPU build
 * (sampler/band_cache_gpu.cu) one thread per brick, so both make the same bricks.
 *
 * A job is the hash table of brick keys (band_cache.h), what the earlier steps left per brick
 * (vx_bc_in: its surface voxels' cells and the grid points they gave) and the brick itself
 * (vx_bc_brick: the voxels' mask and grid), and per brick the work of this step (vx_bc_work).
 * Brick i's steps read only the vx_bc_in of its neighbours, and write only brick i.
 */
#ifndef VOXLOD_SAMPLER_BAND_CACHE_FILL_H
#define VOXLOD_SAMPLER_BAND_CACHE_FILL_H

#include "sampler/sample_eval.h"

#define VX_BC_MAX_REACH 4u /* cells around a voxel; the window of 8 + 2K rows fits 16 bits */
#define VX_BC_CHECK_TOL 0.125f /* voxels: the corners' value against the rule's, where checked */
#define VX_BC_SIDE_STEP (1.0f / 64.0f) /* a voxel's corner, seen from the cell: this far inside */
#define VX_BC_POINTS (VX_BC_GRID * VX_BC_GRID * VX_BC_GRID)
#define VX_BC_PWORDS ((VX_BC_POINTS + 63u) / 64u)

/* What steps 1 and 2 leave per brick. */
typedef struct vx_bc_in {
  uint64_t key;
  uint64_t occ[VX_BC_WORDS];  /* the cells that are surface voxels, re-signed ones included */
  uint64_t set[VX_BC_PWORDS]; /* grid points a voxel gave */
  uint64_t bad[VX_BC_PWORDS]; /* ... with two different values */
  uint32_t node;              /* step 1: the node whose subtree the brick is (bricks with voxels) */
  uint32_t missing;           /* step 2: its neighbours (bit n) that step 1 did not make */
} vx_bc_in;

/* This step's, per brick. */
typedef struct vx_bc_work {
  uint64_t want[VX_BC_WORDS];    /* empty cells to cache */
  uint64_t need[VX_BC_PWORDS];   /* their corners that no voxel gave: the rule's */
  uint64_t nosign[VX_BC_PWORDS]; /* ... where it had no sign */
  uint64_t rough[VX_BC_WORDS];   /* empty cells whose checks the corners do not pass */
  uint64_t at;                   /* where its points start in the batch (the CPU's) */
  uint32_t points;               /* how many the rule gives (the bits of need and the checks) */
  uint32_t pad_;
} vx_bc_work;

typedef struct vx_bc_job {
  const uint64_t *keys; /* the table (band_cache.h) */
  const uint32_t *values;
  uint64_t mask;
  const vx_bc_in *in;
  vx_bc_work *work;
  vx_bc_brick *bricks;
  uint32_t depth; /* the tree's */
  uint32_t reach; /* K: cells cached around a voxel */
  float band;     /* voxels */
} vx_bc_job;

VX_HD uint32_t vx_bc_low64(uint64_t x) {
#if defined(__CUDA_ARCH__)
  return (uint32_t)__ffsll((long long)x) - 1u;
#else
  return (uint32_t)__builtin_ctzll(x);
#endif
}

VX_HD uint32_t vx_bc_popc64(uint64_t x) {
#if defined(__CUDA_ARCH__)
  return (uint32_t)__popcll(x);
#else
  return (uint32_t)__builtin_popcountll(x);
#endif
}

/* Visits the set bits of the 512-bit cell mask w in increasing order, as k. */
#define VX_BC_EACH_CELL(w, k)                                                                     \
  for (uint32_t bc_w_ = 0; bc_w_ < VX_BC_WORDS; bc_w_++)                                        \
    for (uint64_t bc_x_ = (w)[bc_w_]; bc_x_; bc_x_ &= bc_x_ - 1u)                                \
      for (uint32_t k = bc_w_ * 64u + vx_bc_low64(bc_x_), bc_once_ = 1; bc_once_; bc_once_ = 0)

VX_HD int vx_bc_bit(const uint64_t *w, uint32_t i) { return (int)(w[i >> 6] >> (i & 63u) & 1u); }
VX_HD void vx_bc_set(uint64_t *w, uint32_t i) { w[i >> 6] |= (uint64_t)1u << (i & 63u); }

/* Grid point (x, y, z) of a brick. */
VX_HD uint32_t vx_bc_point(uint32_t x, uint32_t y, uint32_t z) {
  return x + VX_BC_GRID * (y + VX_BC_GRID * z);
}

/* The grid point of corner i (as a voxel's) of cell k of a brick. */
VX_HD uint32_t vx_bc_corner_point(uint32_t k, uint32_t i) {
  return vx_bc_point((k & 7u) + (i & 1u), (k >> 3 & 7u) + (i >> 1 & 1u), (k >> 6) + (i >> 2));
}

/* The corners of cell k (bit i: corner i, vx_bc_corner_point) that are points in w. */
VX_HD uint32_t vx_bc_corners_in(const uint64_t *w, uint32_t k) {
  const uint32_t g = vx_bc_corner_point(k, 0);
  uint32_t m = 0;
  for (uint32_t i = 0; i < 8u; i++)
    m |= (uint32_t)vx_bc_bit(w, g + (i & 1u) + VX_BC_GRID * (i >> 1 & 1u) +
                                    VX_BC_GRID * VX_BC_GRID * (i >> 2)) << i;
  return m;
}

/* Brick coordinates of key k, and the key of coordinates c. */
VX_HD void vx_bc_coords(uint64_t k, int64_t c[3]) {
  for (int i = 0; i < 3; i++) c[i] = (int64_t)(k >> (21 * i) & 0x1fffffu);
}
VX_HD uint64_t vx_bc_key_of(const int64_t c[3]) {
  return (uint64_t)c[0] | (uint64_t)c[1] << 21 | (uint64_t)c[2] << 42;
}

/* What the earlier steps left for the brick with key k, or NULL. */
VX_HD const vx_bc_in *vx_bc_lookup(const vx_bc_job *j, uint64_t k) {
  const uint64_t s = vx_bc_probe(j->keys, j->mask, k + 1u);
  return j->keys[s] ? &j->in[j->values[s]] : (const vx_bc_in *)0;
}

/* The empty cells of brick i to cache: those within K cells (L-infinity) of a voxel, inside the
 * root box (want, a bit per cell). The voxels of its 27-brick neighbourhood in a window of
 * (8 + 2K)^3 cells, one bit row per line, dilated by K along x (shifts), then y, then z. */
VX_HD void vx_bc_want(const vx_bc_job *j, uint64_t i, uint64_t want[VX_BC_WORDS]) {
  const vx_bc_in *st = &j->in[i];
  const uint32_t K = j->reach, W = VX_BC_SIDE + 2u * K, R = 1u << j->depth;
  int64_t c[3];
  vx_bc_coords(st->key, c);
  uint32_t occ[16][16]; /* window cell (x, y, z) = brick cell - K */
  for (uint32_t z = 0; z < 16u; z++)
    for (uint32_t y = 0; y < 16u; y++) occ[z][y] = 0;
  for (int n = 0; n < 27; n++) {
    int64_t q[3];
    int d[3];
    for (int a = 0, w = 1; a < 3; a++, w *= 3) {
      d[a] = n / w % 3 - 1;
      q[a] = c[a] + d[a];
    }
    if (q[0] < 0 || q[1] < 0 || q[2] < 0) continue;
    const vx_bc_in *nb = n == 13 ? st : vx_bc_lookup(j, vx_bc_key_of(q));
    if (!nb) continue;
    for (uint32_t z = 0; z < VX_BC_SIDE; z++)
      for (uint32_t y = 0; y < VX_BC_SIDE; y++) {
        const int64_t wz = (int64_t)z + 8 * d[2] + K, wy = (int64_t)y + 8 * d[1] + K;
        if (wz < 0 || wz >= (int64_t)W || wy < 0 || wy >= (int64_t)W) continue;
        const uint32_t row = (uint32_t)(nb->occ[z] >> (8u * y) & 0xffu);
        const int sh = 8 * d[0] + (int)K; /* window x of the row's x = 0 */
        occ[wz][wy] |= (sh >= 0 ? row << sh : row >> -sh) & ((1u << W) - 1u);
      }
  }
  for (uint32_t z = 0; z < W; z++) /* dilate by K: x */
    for (uint32_t y = 0; y < W; y++) {
      uint32_t r = occ[z][y], o = r;
      for (uint32_t k = 1; k <= K; k++) o |= r << k | r >> k;
      occ[z][y] = o;
    }
  uint32_t dy[16][VX_BC_SIDE]; /* y */
  for (uint32_t z = 0; z < W; z++)
    for (uint32_t y = 0; y < VX_BC_SIDE; y++) {
      uint32_t o = 0;
      for (uint32_t k = 0; k <= 2u * K; k++) o |= occ[z][y + k];
      dy[z][y] = o;
    }
  for (uint32_t z = 0; z < VX_BC_SIDE; z++) /* z, less the voxels, inside the root box */
    for (uint32_t y = 0; y < VX_BC_SIDE; y++) {
      uint32_t o = 0;
      for (uint32_t k = 0; k <= 2u * K; k++) o |= dy[z + k][y];
      uint32_t row = (o >> K & 0xffu) & ~(uint32_t)(st->occ[z] >> (8u * y) & 0xffu);
      const int64_t gx = c[0] * 8, gy = c[1] * 8 + y, gz = c[2] * 8 + z;
      if (gy >= (int64_t)R || gz >= (int64_t)R) row = 0;
      if (gx + 8 > (int64_t)R) row &= (1u << (R - (uint32_t)gx)) - 1u;
      want[z] |= (uint64_t)row << (8u * y);
    }
}

/* Where a cell is checked against the rule (u in [0,1]^3): i = 8, its centre, always; i < 8, just
 * inside its corner i (VX_BC_SIDE_STEP along each axis) when a voxel gave that corner (the rule
 * jumps at a voxel's faces). Checking the centres of the edges and faces a voxel has as well
 * kept no more points within the bound on the scans of tests/test_sample_agree.c. */
VX_HD void vx_bc_check_u(uint32_t i, float u[3]) {
  for (uint32_t a = 0; a < 3u; a++)
    u[a] = i == 8u ? 0.5f : (i >> a & 1u ? 1.0f - VX_BC_SIDE_STEP : VX_BC_SIDE_STEP);
}

/* The points where cell k is checked: bit i as vx_bc_check_u. */
VX_HD uint32_t vx_bc_checks(const vx_bc_in *st, uint32_t k) {
  return vx_bc_corners_in(st->set, k) | 1u << 8;
}

/* Brick i's cells to cache, the corners the rule gives them, and how many points it evaluates
 * (work zeroed before). */
VX_HD void vx_bc_need(const vx_bc_job *j, uint64_t i) {
  const vx_bc_in *st = &j->in[i];
  vx_bc_work *w = &j->work[i];
  vx_bc_want(j, i, w->want);
  uint32_t points = 0;
  VX_BC_EACH_CELL(w->want, k) {
    const uint32_t given = vx_bc_corners_in(st->set, k);
    for (uint32_t c = 0; c < 8u; c++)
      if (!(given >> c & 1u)) vx_bc_set(w->need, vx_bc_corner_point(k, c));
    points += vx_bc_popc64(vx_bc_checks(st, k));
  }
  for (uint32_t a = 0; a < VX_BC_PWORDS; a++) points += vx_bc_popc64(w->need[a]);
  w->points = points;
}

/* Brick i's points (grid coordinates) into p[at, at + points): its corners the rule gives, then
 * where its cells are checked. */
VX_HD void vx_bc_gather(const vx_bc_job *j, uint64_t i, uint64_t at, float *p) {
  const vx_bc_in *st = &j->in[i];
  const vx_bc_work *w = &j->work[i];
  int64_t c[3];
  vx_bc_coords(st->key, c);
  for (uint32_t a = 0; a < VX_BC_PWORDS; a++)
    for (uint64_t x = w->need[a]; x; x &= x - 1u) {
      const uint32_t g = a * 64u + vx_bc_low64(x);
      float *q = &p[3 * at++];
      q[0] = (float)(c[0] * 8 + g % VX_BC_GRID);
      q[1] = (float)(c[1] * 8 + g / VX_BC_GRID % VX_BC_GRID);
      q[2] = (float)(c[2] * 8 + g / (VX_BC_GRID * VX_BC_GRID));
    }
  VX_BC_EACH_CELL(w->want, k) {
    for (uint32_t m = vx_bc_checks(st, k); m; m &= m - 1u) {
      float u[3];
      vx_bc_check_u(vx_se_low_bit(m), u);
      float *q = &p[3 * at++];
      q[0] = (float)(c[0] * 8 + (k & 7u)) + u[0];
      q[1] = (float)(c[1] * 8 + (k >> 3 & 7u)) + u[1];
      q[2] = (float)(c[2] * 8 + (k >> 6)) + u[2];
    }
  }
}

/* The rule's value v (voxels) at a grid point, quantized as a voxel corner. */
VX_HD int8_t vx_bc_quantize(float band, float v) {
  float r = roundf(v * (127.0f / band));
  r = r > 127.0f ? 127.0f : (r < -127.0f ? -127.0f : r);
  if (v < 0.0f && r == 0.0f) r = -1.0f; /* keep the side */
  return (int8_t)r;
}

/* Does the rule's value v (voxels, flags fl) at point u (in [0,1]^3) of cell k of brick br differ
 * from what the cache would answer there (sample_eval.h's vx_se_cached: the corners' trilinear
 * value, the band where it reaches the band) by more than VX_BC_CHECK_TOL, or in sign? The rule
 * is not smooth everywhere (where the winning cell changes, beside thin parts, where it turns far)
 * nor continuous at a voxel's faces (inside, the voxel's field; outside, the nearest cell's
 * extrapolation, which differs where the field's gradient is not of unit length): there the
 * corners do not stand for the cell, and the rule answers. Being far or not may differ (a value
 * within the tolerance of the band either way: on the bunny at 512^3, requiring the same left a
 * fifth of the cells to the rule). Corners not yet valid (bad, no sign) leave the cell out
 * anyway. */
VX_HD int vx_bc_rough(float band, const vx_bc_brick *br, uint32_t k, const float u[3], float v,
                      uint32_t fl) {
  if ((fl & (VX_SAMPLE_NO_SIGN | VX_SAMPLE_INVALID)) || v != v) return 1;
  const vx_voxel c = vx_bc_corners(br, k);
  float g[3];
  float f = vx_se_trilinear(&c, band, u, g);
  if (fabsf(f) > band * (1.0f - 0.5f / 127.0f)) f = f < 0.0f ? -band : band;
  if ((f < 0.0f) != (v < 0.0f)) return 1;
  return !(fabsf(f - v) <= VX_BC_CHECK_TOL);
}

/* The rule's values v[at, ...) and flags fl at brick i's points (as vx_bc_gather) into it: its
 * corners quantized into the grid (or marked without a sign), then its checks. */
VX_HD void vx_bc_scatter(const vx_bc_job *j, uint64_t i, uint64_t at, const float *v,
                         const uint8_t *fl) {
  const vx_bc_in *st = &j->in[i];
  vx_bc_work *w = &j->work[i];
  vx_bc_brick *br = &j->bricks[i];
  for (uint32_t a = 0; a < VX_BC_PWORDS; a++)
    for (uint64_t x = w->need[a]; x; x &= x - 1u, at++) {
      const uint32_t g = a * 64u + vx_bc_low64(x);
      if (!(fl[at] & (VX_SAMPLE_NO_SIGN | VX_SAMPLE_INVALID)) && v[at] == v[at])
        br->grid[g] = vx_bc_quantize(j->band, v[at]);
      else
        vx_bc_set(w->nosign, g);
    }
  VX_BC_EACH_CELL(w->want, k) { /* every corner is in the grid now */
    for (uint32_t m = vx_bc_checks(st, k); m; m &= m - 1u, at++) {
      float u[3];
      vx_bc_check_u(vx_se_low_bit(m), u);
      if (vx_bc_rough(j->band, br, k, u, v[at], fl[at])) vx_bc_set(w->rough, k);
    }
  }
}

/* Which of brick i's cells answer: its voxels whose corners no other voxel contradicts, and the
 * empty cells to cache whose corners all have a sign, lie on one side (no surface crosses an
 * empty cell) and passed their checks. */
VX_HD void vx_bc_finish(const vx_bc_job *j, uint64_t i) {
  const vx_bc_in *st = &j->in[i];
  const vx_bc_work *w = &j->work[i];
  vx_bc_brick *br = &j->bricks[i];
  uint64_t voxel[VX_BC_WORDS];
  for (uint32_t a = 0; a < VX_BC_WORDS; a++) voxel[a] = br->voxel[a];
  VX_BC_EACH_CELL(voxel, k)
    if (vx_bc_corners_in(st->bad, k)) br->voxel[k >> 6] &= ~((uint64_t)1u << (k & 63u));
  VX_BC_EACH_CELL(w->want, k) {
    if (vx_bc_bit(w->rough, k) || vx_bc_corners_in(st->bad, k) || vx_bc_corners_in(w->nosign, k))
      continue;
    const vx_voxel v = vx_bc_corners(br, k);
    int neg = 0;
    for (uint32_t c = 0; c < 8u; c++) neg += v.c[c] < 0;
    if (neg != 0 && neg != 8) continue;
    vx_bc_set(br->empty, k);
  }
}

#endif
