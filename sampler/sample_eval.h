/* SPDX-License-Identifier: Apache-2.0 */
/* sample_eval.h - the signed distance and its gradient at one point, from the tree: the per-point
 * function of the CPU sampler and the CUDA kernel (host+device, hostdev.h's C11 subset).
 *
 * The rule (include/voxlod/sample.h states it for users):
 * 1. Descent. The point, in grid coordinates, selects one cell per level from the root down
 *    (integer coordinates: slot = the level's bit of x | y << 1 | z << 2, child index = first
 *    child + popcount of the mask below the slot, node.h). The walk stops at the final cell: a
 *    surface voxel, a node at the cut level or a pruned leaf (each with a usable plane), or a
 *    missing child (a cell no triangle touches).
 * 2. Field. A voxel answers with the trilinear interpolation of its corners and its gradient; a
 *    node with its plane n.(p - centre) + d * size (node.h's packing, in voxels) and n.
 * 3. Near search. A point in a missing cell (or outside the root box) has no field of its own.
 *    Every final cell within `band` voxels of it (L-infinity: the Euclidean lower bound of the
 *    cell's box distance below the best so far) is visited depth first, nearest child first, with
 *    a fixed stack. Each cell's field is linearised at its point q nearest to p (q = p clamped to
 *    the box): the plane f(q) + g.(x - q) = 0 of unit normal g/|g|. The candidate distance is
 *    sqrt(e^2 + delta^2): e the signed distance from p to that plane, delta how far the foot
 *    p - e g/|g| lies outside the cell (the plane's patch inside the cell is what the cell
 *    vouches for). This is exact for planar surfaces, and on curved ones it picks the cell that
 *    holds the closest point, where tangent planes of other cells would come too close (a convex
 *    surface seen from outside) or too far. The smallest candidate below the band wins. Its sign
 *    is the field's at q: a surface between q and p would lie in a cell nearer to p, so none
 *    does, and p is on q's side; the plane's side (e's sign) differs where the plane's zero lies
 *    outside the cell, beside a cell whose field does not change sign (a thin part's inside).
 *    A voxel that the thin-feature rule re-signed (sampler/resigned.h: a part thinner than a voxel,
 *    an open sheet) had all its corners outside before the rule, so a point it wins for is
 *    outside: its field is taken with the opposite sign where negative (the sheet seen from p).
 * 4. Far. No candidate below the band: the value is +-band. Either the cells within the band
 *    all extrapolate to the band or beyond (|d| is then near the band), and the sign is that of
 *    the nearest candidate (the side of the surface it sees); or no cell with a field lies within
 *    band voxels (the voxelization being conservative, the band then bounds |d| from below), and
 *    the sign comes from the walks of step 5.
 * 5. Sign walk. From the missing cell, along an axis towards the nearer root face, from one
 *    maximal empty cell to the next (each a descent by integer coordinates), to the first cell
 *    with a field; the field's sign where the line enters it is p's (the segment crosses no
 *    surface; a re-signed voxel: outside). Leaving the box means outside. At most
 *    VX_SE_WALK_MAX steps. The sign is the majority of the walks along the three axes (an open
 *    mesh's hole can mislead one).
 * Grid space: world = origin + grid * scale; the grid is [0, 2^D]^3 and the mesh lies inside.
 * Distances come out in world units; gradients are dimensionless.
 */
#ifndef VOXLOD_SVO_SAMPLE_EVAL_H
#define VOXLOD_SVO_SAMPLE_EVAL_H

#include <float.h>
#include <math.h>
#include <stdint.h>
#include "svo/hostdev.h"
#include "svo/node.h"
#include "svo/fetch.h"
#include "sampler/band_cache.h"
#include "voxlod/sample.h"

/* What the per-point function reads: the arrays (host or device), the cut and the transform. */
typedef struct vx_sample_tree {
  const vx_node *nodes;   /* levels 0 .. min(levels, D) - 1 */
  const vx_voxel *voxels; /* level D; NULL when not loaded */
  uint32_t depth;         /* D */
  uint32_t levels;        /* levels loaded (D + 1: all) */
  uint32_t cut;           /* final level, <= levels - 1 (D: full detail) */
  float band;             /* corner value q means q * band / 127 voxels; the far value */
  float origin[3];        /* world = origin + grid * scale */
  float scale, inv_scale;
  const uint32_t *resigned; /* a bit per voxel: re-signed by the thin rule (sampler/resigned.h); NULL */
  const vx_band_cache *cache; /* the field near the surface, stored (sampler/band_cache.h); NULL.
                                 Only at full detail (cut = D) with every level loaded. */
} vx_sample_tree;

/* Loops over 3 axes, 8 corners or 8 children are unrolled (on the GPU so that their arrays stay
 * in registers; everywhere so that selections by the loop index are resolved when compiling). */
#if defined(__CUDACC__) || defined(__clang__)
#define VX_SE_UNROLL _Pragma("unroll")
#elif defined(__GNUC__)
#define VX_SE_UNROLL _Pragma("GCC unroll 8")
#else
#define VX_SE_UNROLL
#endif
#define VX_SE_WALK_MAX (8 * VX_MAX_DEPTH + 8)

/* The final cell holding a point. */
enum { VX_SE_MISSING = 0, VX_SE_VOXEL = 1, VX_SE_NODE = 2 };

typedef struct vx_se_cell {
  int kind;
  uint32_t level;  /* of the cell (a missing cell: the level of the absent child) */
  uint32_t index;  /* voxels[] (VX_SE_VOXEL) or nodes[] (VX_SE_NODE); a missing cell: its parent */
  uint32_t min[3]; /* minimum corner, finest voxels */
} vx_se_cell;

/* Branch-free helpers (minss/maxss on x86, one instruction on the GPU): the search's bounds are
 * compared at random, which costs mispredicted branches on a CPU. */
VX_HD float vx_se_max(float a, float b) { return a > b ? a : b; }
VX_HD float vx_se_min(float a, float b) { return a < b ? a : b; }
/* max(x, 0): one expression for host and device (maxss, FMNMX), +0 for -0 and NaN. */
VX_HD float vx_se_pos(float x) { return x > 0.0f ? x : 0.0f; }
VX_HD float vx_se_clamp(float v, float lo, float hi) { return vx_se_min(vx_se_max(v, lo), hi); }
/* The distance from v to the interval [lo, hi], 0 inside. */
VX_HD float vx_se_gap(float v, float lo, float hi) { return vx_se_pos(vx_se_max(lo - v, v - hi)); }

/* Index of the lowest set bit of x (x != 0). */
VX_HD uint32_t vx_se_low_bit(uint32_t x) {
#if defined(__CUDA_ARCH__)
  return (uint32_t)__ffs((int)x) - 1u;
#elif defined(__GNUC__)
  return (uint32_t)__builtin_ctz(x);
#else
  uint32_t b = 0;
  while (!(x >> b & 1u)) b++;
  return b;
#endif
}

/* The 8 bits of m reordered so that bit k is m's bit (k ^ x): a node's child mask by visiting
 * order k (slot = x ^ k, x the octant nearest the point: k = 0 that octant, 1, 2, 4 its face
 * neighbours, 3, 5, 6 the edge ones, 7 the opposite one). */
VX_HD uint32_t vx_se_xor_order(uint32_t m, uint32_t x) {
  m = x & 1u ? (m & 0x55u) << 1 | (m >> 1 & 0x55u) : m;
  m = x & 2u ? (m & 0x33u) << 2 | (m >> 2 & 0x33u) : m;
  return x & 4u ? (m & 0x0fu) << 4 | (m >> 4 & 0x0fu) : m;
}

/* Index of the highest set bit of x (x != 0). */
VX_HD uint32_t vx_se_high_bit(uint32_t x) {
#if defined(__CUDA_ARCH__)
  return 31u - (uint32_t)__clz(x);
#elif defined(__GNUC__)
  return 31u - (uint32_t)__builtin_clz(x);
#else
  uint32_t b = 0;
  while (x >>= 1) b++;
  return b;
#endif
}

/* ---- field of one cell ------------------------------------------------------------------------ */

/* Trilinear value and gradient of voxel v at local u in [0,1]^3, in voxels. */
VX_HD float vx_se_trilinear(const vx_voxel *v, float band, const float u[3], float g[3]) {
  float c[8];
  const float k = band * (1.0f / 127.0f);
  VX_SE_UNROLL
  for (int i = 0; i < 8; i++) c[i] = (float)v->c[i] * k;
  float x1 = u[0], y1 = u[1], z1 = u[2];
  float x0 = 1.0f - x1, y0 = 1.0f - y1, z0 = 1.0f - z1;
  /* along x: the four edges (y, z) */
  float e00 = x0 * c[0] + x1 * c[1], e10 = x0 * c[2] + x1 * c[3];
  float e01 = x0 * c[4] + x1 * c[5], e11 = x0 * c[6] + x1 * c[7];
  float d00 = c[1] - c[0], d10 = c[3] - c[2], d01 = c[5] - c[4], d11 = c[7] - c[6];
  /* along y: two lines (z) */
  float f0 = y0 * e00 + y1 * e10, f1 = y0 * e01 + y1 * e11;
  g[0] = z0 * (y0 * d00 + y1 * d10) + z1 * (y0 * d01 + y1 * d11);
  g[1] = z0 * (e10 - e00) + z1 * (e11 - e01);
  g[2] = f1 - f0;
  return z0 * f0 + z1 * f1;
}

/* Plane of node nd (level l, minimum corner m) at grid point p, in voxels; n receives the normal. */
VX_HD float vx_se_plane(const vx_node *nd, uint32_t D, uint32_t l, const uint32_t m[3],
                        const float p[3], float n[3]) {
  float size = (float)(1u << (D - l));
  vx_oct_unfold(nd->normal, n); /* vx_oct_decode with one division */
  float il = 1.0f / sqrtf(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
  n[0] *= il;
  n[1] *= il;
  n[2] *= il;
  float h = 0.5f * size;
  return n[0] * (p[0] - ((float)m[0] + h)) + n[1] * (p[1] - ((float)m[1] + h)) +
         n[2] * (p[2] - ((float)m[2] + h)) + nd->d * size;
}

/* Is node nd at level l where the walk stops (the cut, or a pruned leaf), with a plane to give? */
VX_HD int vx_se_node_final(const vx_sample_tree *t, const vx_node *nd, uint32_t l) {
  uint32_t info = nd->info;
  return (l >= t->cut || vx_node_mask(info) == 0u) && (vx_node_flags(info) & VX_NODE_PLANE_OK);
}

/* ---- descent ---------------------------------------------------------------------------------- */

/* The final cell holding finest voxel x (each coordinate < 2^D), descending from node path[l0]
 * at level l0 (an ancestor of x's cell that is not final; l0 = 0, path NULL: from the root).
 * path (NULL: not kept) receives the index of each node on the way, path[l] at level l. */
VX_HD void vx_se_find_from(const vx_sample_tree *t, const uint32_t x[3], uint32_t l0,
                           uint32_t *path, vx_se_cell *c) {
  const uint32_t D = t->depth;
  uint32_t idx = path ? path[l0] : 0u, parent = idx;
  for (uint32_t l = l0;; l++) {
    vx_node nd = vx_fetch_node(&t->nodes[idx]);
    uint32_t mask = vx_node_mask(nd.info);
    if (path) path[l] = idx;
    if (vx_se_node_final(t, &nd, l)) {
      c->kind = VX_SE_NODE;
      c->level = l;
      c->index = idx;
      break;
    }
    uint32_t sh = D - 1u - l;
    uint32_t slot = (x[0] >> sh & 1u) | (x[1] >> sh & 1u) << 1 | (x[2] >> sh & 1u) << 2;
    /* no child there, a pruned leaf without a plane, or the next level not loaded: no field */
    if (!(mask >> slot & 1u) || l + 1u >= t->levels) {
      c->kind = VX_SE_MISSING;
      c->level = mask >> slot & 1u ? l : l + 1u;
      c->index = mask >> slot & 1u ? parent : idx; /* the parent of the missing cell */
      break;
    }
    parent = idx;
    idx = vx_child_index(nd.child, mask, slot);
    if (l + 1u == D) {
      c->kind = VX_SE_VOXEL;
      c->level = D;
      c->index = idx;
      break;
    }
  }
  uint32_t sh = D - c->level;
  VX_SE_UNROLL
  for (int i = 0; i < 3; i++) c->min[i] = (x[i] >> sh) << sh;
}

VX_HD void vx_se_find(const vx_sample_tree *t, const uint32_t x[3], vx_se_cell *c) {
  vx_se_find_from(t, x, 0u, NULL, c);
}

/* Is voxel i one that the thin-feature rule re-signed (sampler/resigned.h)? It holds a part thinner
 * than a voxel as a sheet with no inside at this resolution: all its corners were outside, so
 * every sign taken from its field is "outside", and a negative value of it is read as its
 * magnitude (the distance to the sheet) with the gradient facing away from the sheet. i:
 * VX_SE_NO_VOXEL for a cell that is not a voxel. Read once per point, for the cell that gives
 * the point its value (the search's winner), not per candidate: the GPU's search has no
 * registers to spare. */
#define VX_SE_NO_VOXEL 0xffffffffu
VX_HD int vx_se_resigned(const vx_sample_tree *t, uint32_t i) {
  return t->resigned && i != VX_SE_NO_VOXEL && (t->resigned[i >> 5] >> (i & 31u) & 1u);
}

/* The voxel index of final cell c, or VX_SE_NO_VOXEL. */
VX_HD uint32_t vx_se_voxel_of(const vx_se_cell *c) {
  return c->kind == VX_SE_VOXEL ? c->index : VX_SE_NO_VOXEL;
}

/* Field and gradient (voxels) of a final cell c at grid point p; the point is clamped into a
 * voxel first (a voxel's trilinear field is only defined inside it). */
VX_HD float vx_se_cell_field(const vx_sample_tree *t, const vx_se_cell *c, const float p[3],
                             float g[3]) {
  if (c->kind == VX_SE_VOXEL) {
    vx_voxel v = vx_fetch_voxel(&t->voxels[c->index]);
    float u[3];
    VX_SE_UNROLL
    for (int i = 0; i < 3; i++) u[i] = vx_se_clamp(p[i] - (float)c->min[i], 0.0f, 1.0f);
    return vx_se_trilinear(&v, t->band, u, g);
  }
  vx_node nd = vx_fetch_node(&t->nodes[c->index]);
  return vx_se_plane(&nd, t->depth, c->level, c->min, p, g);
}

/* ---- near search ------------------------------------------------------------------------------ */

/* How far from node nd's plane P (voxels) the zero set of any final cell below it can lie, inside
 * the node. A voxel's field minus P is the trilinear interpolation of P's error at its corners
 * (trilinear interpolation reproduces a linear function), so at a zero of the field |P| <= the
 * node's max corner error (errmax, rounded up when stored); a plane below (a cut, a pruned leaf)
 * stays within the drawn-plane bound B of P over its box (node.h). At full detail both kinds can
 * be below, at a cut only planes. A small allowance covers float round-off. INFINITY: no bound. */
VX_HD float vx_se_zero_bound(const vx_sample_tree *t, uint32_t info) {
  /* vx_bound_decode's value, the power of two made from its exponent bits (no ldexpf call) */
  const uint32_t code = vx_node_bound_code(info);
  float b = 0.0f;
  if (code == 0u) return INFINITY;
  if (code >= 2u) {
    const float m[4] = {0x1p+0f, 0x1.306fep+0f, 0x1.6a09e6p+0f, 0x1.ae89fap+0f};
    uint32_t bits = (uint32_t)(127 + (int)((code - 2u) >> 2) - 6) << 23;
    float pow2;
    memcpy(&pow2, &bits, sizeof pow2);
    b = m[(code - 2u) & 3u] * pow2;
  }
  if (t->cut >= t->depth) {
    float e = vx_err_decode(vx_node_errmax_code(info));
    b = b > e ? b : e;
  }
  return b + 1e-3f;
}

/* Squared distance from p to the box [lo, lo + size]^3. */
VX_HD float vx_se_box_d2(const float p[3], const uint32_t lo[3], float size) {
  float s = 0.0f;
  VX_SE_UNROLL
  for (int i = 0; i < 3; i++) {
    float a = (float)lo[i];
    float d = vx_se_gap(p[i], a, a + size);
    s += d * d;
  }
  return s;
}

/* Step 3's candidate from final cell c: *dist = sqrt(e^2 + delta^2) with the sign of the field at
 * q (not e's: where the plane's zero lies between q and p the cell does not hold it), n the unit
 * normal. Returns 0 when the cell's field has no direction (a flat voxel). */
VX_HD int vx_se_candidate(const vx_sample_tree *t, const vx_se_cell *c, const float p[3],
                          float *dist, float n[3]) {
  float size = (float)(1u << (t->depth - c->level));
  float q[3], g[3];
  VX_SE_UNROLL
  for (int i = 0; i < 3; i++) {
    float a = (float)c->min[i];
    q[i] = vx_se_clamp(p[i], a, a + size);
  }
  float f = vx_se_cell_field(t, c, q, g);
  float gl = sqrtf(g[0] * g[0] + g[1] * g[1] + g[2] * g[2]);
  if (!(gl > 1e-6f)) return 0;
  float ig = 1.0f / gl;
  VX_SE_UNROLL
  for (int i = 0; i < 3; i++) n[i] = g[i] * ig;
  float e = (f + g[0] * (p[0] - q[0]) + g[1] * (p[1] - q[1]) + g[2] * (p[2] - q[2])) * ig;
  float s[3];
  VX_SE_UNROLL
  for (int i = 0; i < 3; i++) s[i] = p[i] - e * n[i];
  float d = sqrtf(e * e + vx_se_box_d2(s, c->min, size));
  *dist = f < 0.0f ? -d : d;
  return 1;
}

/* The best candidate so far: |dist| = best (the radius until one is found), n its normal; and the
 * nearest candidate of any distance, which gives a far point its sign when every cell within the
 * band extrapolates to the band or beyond. */
typedef struct vx_se_best {
  float best, best2, dist;
  float n[3];
  int found;
  float hint;     /* the nearest candidate of any distance (signed; INFINITY: none) */
  uint32_t voxel; /* its cell's voxel index (VX_SE_NO_VOXEL: a node) */
} vx_se_best;

VX_HD void vx_se_offer(const vx_sample_tree *t, const vx_se_cell *c, const float p[3],
                       vx_se_best *b) {
  float d, g[3];
  if (!vx_se_candidate(t, c, p, &d, g)) return;
  if (fabsf(d) < fabsf(b->hint)) {
    b->hint = d;
    b->voxel = vx_se_voxel_of(c);
  }
  if (fabsf(d) < b->best) {
    b->best = fabsf(d);
    b->best2 = b->best * b->best;
    b->dist = d;
    b->n[0] = g[0], b->n[1] = g[1], b->n[2] = g[2];
    b->found = 1;
  }
}

/* Which children of node nd (level l < D - 1 or D - 1, minimum corner m) can hold a candidate
 * closer than the best: a bit per child in visiting order k (vx_se_xor_order), *near receiving
 * the octant nearest p. A child passes when its box is closer than the best and, where the node
 * has a plane P, when the plane bound does not exclude it: every zero below lies in the slab
 * |P| <= Z (vx_se_zero_bound), so for any such x, |p - x|^2 >= (|P(p)| - Z)^2 +
 * (dist(foot, box) - Z)^2, foot the projection of p on P (normal and tangential parts of p - x):
 * far tighter than the box distance where the surface runs past p, cells beside the foot drop
 * out. With a = |P(p)| - Z (0 when negative) that is dist(foot, box) < Z + sqrt(best^2 - a^2):
 * one square root per node. The box distances are sums of one term per axis, the distance to
 * the near or the far half of the node, picked by k's bits when compiling. */
VX_HD uint32_t vx_se_children(const vx_sample_tree *t, const vx_node *nd, uint32_t l,
                              const uint32_t m[3], const float p[3], float best2,
                              uint32_t *near) {
  const uint32_t D = t->depth;
  const float h = (float)(1u << (D - l - 1u));
  float foot[3] = {p[0], p[1], p[2]}, thr2 = INFINITY;
  if (vx_node_flags(nd->info) & VX_NODE_PLANE_OK) {
    float nn[3];
    float pv = vx_se_plane(nd, D, l, m, p, nn);
    float Z = vx_se_zero_bound(t, nd->info);
    float a = vx_se_pos(fabsf(pv) - Z), r2 = best2 - a * a;
    if (!(r2 > 0.0f)) return 0u; /* the whole slab is farther than the best */
    float tz = Z + sqrtf(r2);
    thr2 = tz * tz; /* INFINITY when Z is */
    VX_SE_UNROLL
    for (int i = 0; i < 3; i++) foot[i] = p[i] - pv * nn[i];
  }
  float bn[3], bf[3], fn[3], ff[3];
  uint32_t x = 0u;
  VX_SE_UNROLL
  for (int i = 0; i < 3; i++) {
    /* the near half [nl, nl + h] and the far one [fl, fl + h] (exact: integers below 2^24) */
    float a = (float)m[i];
    uint32_t up = p[i] >= a + h;
    x |= up << i;
    float nl = a + (float)up * h, fl = a + (float)(1u - up) * h, nh = nl + h, fh = fl + h;
    float g = vx_se_gap(p[i], nl, nh);
    bn[i] = g * g;
    g = vx_se_gap(p[i], fl, fh);
    bf[i] = g * g;
    g = vx_se_gap(foot[i], nl, nh);
    fn[i] = g * g;
    g = vx_se_gap(foot[i], fl, fh);
    ff[i] = g * g;
  }
  uint32_t keep = 0u;
  VX_SE_UNROLL
  for (uint32_t k = 0; k < 8u; k++) {
    float d2 = (k & 1u ? bf[0] : bn[0]) + (k & 2u ? bf[1] : bn[1]) + (k & 4u ? bf[2] : bn[2]);
    float f2 = (k & 1u ? ff[0] : fn[0]) + (k & 2u ? ff[1] : fn[1]) + (k & 4u ? ff[2] : fn[2]);
    keep |= ((uint32_t)(d2 < best2) & (uint32_t)(f2 < thr2)) << k;
  }
  *near = x;
  return keep & vx_se_xor_order(vx_node_mask(nd->info), x);
}

/* Depth-first search below node path[l0] (level l0 < D, not final, minimum corner m0) for the
 * best candidate, nearest child first, pruned against the best so far; the subtree of node
 * `skip` (an index into nodes[]) is left out. No stack of cells: per level the children still to
 * visit (8 bits in visiting order, in two 64-bit words) and the node's index in path[]; a child
 * is checked against the best again (its box) when its turn comes. Voxel children are evaluated
 * at once, nearest first. */
VX_HD void vx_se_search(const vx_sample_tree *t, const float p[3], uint32_t l0,
                        const uint32_t m0[3], uint32_t skip, uint32_t *path, vx_se_best *b) {
  const uint32_t D = t->depth;
  uint64_t pend_lo = 0u, pend_hi = 0u; /* children to visit: 8 bits per level l - l0 */
  uint32_t cm[3] = {m0[0], m0[1], m0[2]};
  uint32_t l = l0;
  for (;;) {
    /* expand node path[l] (level l, minimum corner cm) */
    vx_node nd = vx_fetch_node(&t->nodes[path[l]]);
    uint32_t keep = 0u, x = 0u;
    if (l + 1u < t->levels) keep = vx_se_children(t, &nd, l, cm, p, b->best2, &x);
    if (l + 1u == D) {
      /* voxels, nearest first, so that the bound tightens early */
      while (keep) {
        uint32_t k = vx_se_low_bit(keep), slot = x ^ k;
        keep &= keep - 1u;
        vx_se_cell v;
        v.kind = VX_SE_VOXEL;
        v.level = D;
        v.min[0] = cm[0] + (slot & 1u);
        v.min[1] = cm[1] + (slot >> 1 & 1u);
        v.min[2] = cm[2] + (slot >> 2 & 1u);
        if (!(vx_se_box_d2(p, v.min, 1.0f) < b->best2)) continue;
        v.index = vx_child_index(nd.child, vx_node_mask(nd.info), slot);
        vx_se_offer(t, &v, p, b);
      }
    } else {
      uint32_t r = l - l0;
      if (r < 8u) pend_lo |= (uint64_t)keep << (8u * r);
      else pend_hi |= (uint64_t)keep << (8u * (r - 8u));
    }
    /* the next child to visit: at this level, else at the levels above */
    for (;;) {
      uint32_t r = l - l0;
      uint32_t pend = (uint32_t)((r < 8u ? pend_lo >> (8u * r) : pend_hi >> (8u * (r - 8u))) & 0xffu);
      if (pend == 0u) {
        if (l == l0) return;
        l--;
        uint32_t sh = D - l;
        VX_SE_UNROLL
        for (int i = 0; i < 3; i++) cm[i] = cm[i] >> sh << sh;
        continue;
      }
      uint32_t k = vx_se_low_bit(pend);
      if (r < 8u) pend_lo &= ~((uint64_t)1u << (8u * r + k));
      else pend_hi &= ~((uint64_t)1u << (8u * (r - 8u) + k));
      const uint32_t h = 1u << (D - l - 1u);
      uint32_t x = 0u;
      VX_SE_UNROLL
      for (int i = 0; i < 3; i++) x |= (uint32_t)(p[i] >= (float)(cm[i] + h)) << i;
      uint32_t slot = x ^ k;
      vx_se_cell c;
      c.level = l + 1u;
      c.min[0] = cm[0] + (slot & 1u) * h;
      c.min[1] = cm[1] + (slot >> 1 & 1u) * h;
      c.min[2] = cm[2] + (slot >> 2 & 1u) * h;
      if (!(vx_se_box_d2(p, c.min, (float)h) < b->best2)) continue; /* pruned since */
      vx_node pn = vx_fetch_node(&t->nodes[path[l]]);
      c.index = vx_child_index(pn.child, vx_node_mask(pn.info), slot);
      if (c.index == skip) continue;
      vx_node cn = vx_fetch_node(&t->nodes[c.index]);
      if (vx_se_node_final(t, &cn, c.level)) {
        c.kind = VX_SE_NODE;
        vx_se_offer(t, &c, p, b);
        continue;
      }
      l++;
      path[l] = c.index;
      cm[0] = c.min[0], cm[1] = c.min[1], cm[2] = c.min[2];
      break;
    }
  }
}

/* Offers the cell of level L with minimum corner m (finest voxels), reached from node path[l]
 * (an ancestor at level l < L, or the cell itself at l = L), or what holds it: nothing when it is
 * missing, a final node's candidate, else a search below it (skipping node `skip`), which sets
 * path[L ..]; path[.. L - 1] is left as it was. */
VX_HD void vx_se_visit(const vx_sample_tree *t, const float p[3], uint32_t l, uint32_t L,
                       const uint32_t m[3], uint32_t skip, uint32_t *path, vx_se_best *b) {
  const uint32_t D = t->depth;
  uint32_t idx = path[l];
  for (;; l++) {
    if (idx == skip) return;
    vx_node nd = vx_fetch_node(&t->nodes[idx]);
    if (vx_se_node_final(t, &nd, l)) {
      vx_se_cell s;
      uint32_t sh = D - l;
      s.kind = VX_SE_NODE;
      s.level = l;
      s.index = idx;
      VX_SE_UNROLL
      for (int i = 0; i < 3; i++) s.min[i] = m[i] >> sh << sh;
      vx_se_offer(t, &s, p, b);
      return;
    }
    if (l == L) break;
    uint32_t mask = vx_node_mask(nd.info);
    uint32_t sh = D - 1u - l;
    uint32_t slot = (m[0] >> sh & 1u) | (m[1] >> sh & 1u) << 1 | (m[2] >> sh & 1u) << 2;
    if (!(mask >> slot & 1u) || l + 1u >= t->levels) return;
    idx = vx_child_index(nd.child, mask, slot);
  }
  path[L] = idx;
  vx_se_search(t, p, L, m, skip, path, b);
}

/* Step 3: the best candidate strictly closer than `radius` voxels: returns 1 with *dist (signed)
 * and n, or 0 when none is; *hint gets the sign of the nearest candidate of any distance among
 * the cells visited (0: no cell with a field lies within `radius` of p). c: p's cell (missing)
 * when p is inside the root box, path[0 .. c->level - 1] the nodes above it; else NULL.
 * Inside: first the subtree of the missing cell's parent A (its siblings, where the surface
 * usually is); then, r the best so far, the cells of level L around p, L the finest level above
 * the voxels whose cells are at least 2 r wide: at most two per axis overlap the query box
 * [p - r, p + r], p's own first, then its face, edge and corner neighbours. Each is reached
 * from the deepest ancestor it shares with p's cell (a missing cell on the way: nothing there),
 * and searched unless its box lies farther than the best or it lies in A (searched already: A
 * itself when L is A's level or coarser, A's descendants when finer). Where A is coarse, a level
 * finer than A's keeps the search to the cells beside p instead of whole neighbours of A.
 * Outside: from the deepest cell that holds the whole query box (clamped to the root box). */
VX_HD int vx_se_near(const vx_sample_tree *t, const float p[3], float radius, const vx_se_cell *c,
                     uint32_t *path, float *dist, float n[3], float *hint) {
  const uint32_t D = t->depth;
  vx_se_best b;
  b.best = radius;
  b.best2 = radius * radius;
  b.dist = 0.0f;
  b.n[0] = b.n[1] = b.n[2] = 0.0f;
  b.found = 0;
  b.hint = INFINITY;
  b.voxel = VX_SE_NO_VOXEL;
  if (c && c->level >= 1u) {
    const uint32_t la = c->level - 1u, A = c->index;
    uint32_t sh = D - la;
    uint32_t m[3] = {c->min[0] >> sh << sh, c->min[1] >> sh << sh, c->min[2] >> sh << sh};
    vx_se_search(t, p, la, m, 0xffffffffu, path, &b);
    uint32_t L = D - 1u;
    while (L > 0u && (float)(1u << (D - L)) < 2.0f * b.best) L--;
    sh = D - L;
    const uint32_t size = 1u << sh, cells = 1u << L;
    const uint32_t ash = L > la ? L - la : 0u; /* a cell q of level L lies in A: q >> ash = pa */
    uint32_t pc[3], pa[3], has = 0u, up = 0u;
    VX_SE_UNROLL
    for (int i = 0; i < 3; i++) {
      pc[i] = (uint32_t)vx_se_clamp(p[i], 0.0f, (float)(1u << D) - 1.0f) >> sh;
      pa[i] = pc[i] >> ash;
      float a = (float)(pc[i] << sh);
      if (p[i] - b.best < a && pc[i] > 0u) has |= 1u << i;
      else if (p[i] + b.best > a + (float)size && pc[i] + 1u < cells)
        has |= 1u << i, up |= 1u << i;
    }
    for (uint32_t k = 0; k < 8u; k++) {
      if (k & ~has) continue;
      uint32_t q[3], diff = 0u, out = 0u;
      VX_SE_UNROLL
      for (int i = 0; i < 3; i++) {
        q[i] = pc[i] + (k >> i & 1u) * (2u * (up >> i & 1u) - 1u); /* pc, pc - 1 or pc + 1 */
        m[i] = q[i] << sh;
        diff |= q[i] ^ pc[i];
        out |= (q[i] >> ash) ^ pa[i];
      }
      if (ash && !out) continue; /* in A */
      if (!(vx_se_box_d2(p, m, (float)size) < b.best2)) continue;
      /* from the deepest level where the cell and p's share an ancestor */
      vx_se_visit(t, p, diff ? L - 1u - vx_se_high_bit(diff) : L, L, m, A, path, &b);
    }
  } else {
    const float Rm = (float)(1u << D) - 1.0f;
    uint32_t lo[3], diff = 0u;
    VX_SE_UNROLL
    for (int i = 0; i < 3; i++) {
      lo[i] = (uint32_t)vx_se_clamp(p[i] - radius, 0.0f, Rm);
      diff |= lo[i] ^ (uint32_t)vx_se_clamp(p[i] + radius, 0.0f, Rm);
    }
    uint32_t top = diff ? D - 1u - vx_se_high_bit(diff) : D; /* the deepest common level */
    if (top == D) { /* the box inside one finest cell: a voxel, or what holds it */
      vx_se_cell s;
      vx_se_find(t, lo, &s);
      if (s.kind != VX_SE_MISSING) vx_se_offer(t, &s, p, &b);
    } else {
      uint32_t sh = D - top;
      uint32_t m[3] = {lo[0] >> sh << sh, lo[1] >> sh << sh, lo[2] >> sh << sh};
      path[0] = 0u;
      vx_se_visit(t, p, 0u, top, m, 0xffffffffu, path, &b);
    }
  }
  /* the nearest candidate (the winner when one was found) from a re-signed voxel: outside */
  const float side = b.hint < 0.0f && vx_se_resigned(t, b.voxel) ? -1.0f : 1.0f;
  if (b.found) {
    *dist = side * b.dist;
    n[0] = side * b.n[0], n[1] = side * b.n[1], n[2] = side * b.n[2];
  }
  *hint = b.hint == INFINITY ? 0.0f : (side * b.hint < 0.0f ? -1.0f : 1.0f);
  return b.found;
}

/* ---- sign walk -------------------------------------------------------------------------------- */

/* A walk of step 5 in progress: the finest voxel x on the line where it stands, the cell c
 * holding it, the cells found so far. */
typedef struct vx_se_walk {
  uint32_t x[3];
  vx_se_cell c;
  int steps;
} vx_se_walk;

/* What vx_se_walk_go ends with. */
enum {
  VX_SE_WALK_DONE = 0,  /* *sign set (and *unknown when it gave up) */
  VX_SE_WALK_AWAIT = 1, /* paused at a missing cell of level `await` under a node without
                           children or plane: a part of a larger tree not loaded here */
  VX_SE_WALK_EXIT = 2   /* paused leaving the box through a face that `open` names (bit
                           2 axis + up): the tree is a window of a larger one */
};

/* The walk's start: the cell holding p (clamped into the box). */
VX_HD void vx_se_walk_start(const vx_sample_tree *t, const float p[3], uint32_t *path,
                            vx_se_walk *w) {
  const float Rf = (float)(1u << t->depth);
  VX_SE_UNROLL
  for (int i = 0; i < 3; i++) w->x[i] = (uint32_t)vx_se_clamp(p[i], 0.0f, Rf - 1.0f);
  path[0] = 0u;
  vx_se_find_from(t, w->x, 0u, path, &w->c);
  w->steps = 0;
}

/* Walks on from w (its cell c found in this tree; path[] the nodes above it) along `axis` (up:
 * towards +) from one maximal empty cell to the next, to the first cell with a field: its sign
 * where the line enters it (a re-signed voxel: +1); +1 when it leaves the box; *unknown set when
 * it gave up after VX_SE_WALK_MAX cells. `await` and `open` (VX_SE_WALK_AWAIT, VX_SE_WALK_EXIT;
 * 0xffffffff and 0: never) let a caller that holds part of a tree carry the walk on elsewhere:
 * w then stands on the cell to find there (EXIT: w->x already past the face). */
VX_HD int vx_se_walk_go(const vx_sample_tree *t, const float p[3], int axis, int up,
                        uint32_t *path, vx_se_walk *w, uint32_t await, uint32_t open,
                        float *sign, int *unknown) {
  const uint32_t D = t->depth, R = 1u << D;
  *unknown = 0;
  for (;;) {
    if (w->c.kind != VX_SE_MISSING) {
      /* where the axis line enters the cell: p moved onto the cell's entry face */
      float q[3], g[3];
      q[0] = p[0];
      q[1] = p[1];
      q[2] = p[2];
      const uint32_t na = axis == 0 ? w->x[0] : (axis == 1 ? w->x[1] : w->x[2]);
      float face = (float)(up ? na : na + 1u);
      if (axis == 0) q[0] = face;
      else if (axis == 1) q[1] = face;
      else q[2] = face;
      *sign = vx_se_cell_field(t, &w->c, q, g) < 0.0f &&
                      !vx_se_resigned(t, vx_se_voxel_of(&w->c))
                  ? -1.0f
                  : 1.0f;
      return VX_SE_WALK_DONE;
    }
    if (w->c.level == await && vx_fetch_node(&t->nodes[w->c.index]).info == 0u)
      return VX_SE_WALK_AWAIT;
    if (w->steps >= VX_SE_WALK_MAX) {
      *unknown = 1;
      *sign = 1.0f;
      return VX_SE_WALK_DONE;
    }
    /* the next cell along the axis, past the current empty one */
    uint32_t size = 1u << (D - w->c.level);
    uint32_t a = axis == 0 ? w->c.min[0] : (axis == 1 ? w->c.min[1] : w->c.min[2]);
    uint32_t na = up ? a + size : a - 1u;
    uint32_t xa = axis == 0 ? w->x[0] : (axis == 1 ? w->x[1] : w->x[2]);
    if (up ? a + size >= R : a == 0u) { /* left the box */
      if (open >> (2 * axis + (up ? 1 : 0)) & 1u) {
        if (axis == 0) w->x[0] = na;
        else if (axis == 1) w->x[1] = na;
        else w->x[2] = na;
        w->steps++;
        return VX_SE_WALK_EXIT;
      }
      *sign = 1.0f; /* outside */
      return VX_SE_WALK_DONE;
    }
    if (axis == 0) w->x[0] = na;
    else if (axis == 1) w->x[1] = na;
    else w->x[2] = na;
    vx_se_find_from(t, w->x, D - 1u - vx_se_high_bit(xa ^ na), path, &w->c);
    w->steps++;
  }
}

/* One walk of step 5: from the empty cell holding p along `axis` (up: towards +), the sign of
 * the field where the line enters the first cell that has one; +1 when it leaves the box.
 * *unknown is set when it gave up after VX_SE_WALK_MAX steps. Each step descends from the
 * deepest ancestor that the next cell shares with the current one (path[], rebuilt first). */
VX_HD float vx_se_walk_axis(const vx_sample_tree *t, const float p[3], int axis, int up,
                            uint32_t *path, int *unknown) {
  vx_se_walk w;
  float sign = 1.0f;
  vx_se_walk_start(t, p, path, &w);
  vx_se_walk_go(t, p, axis, up, path, &w, 0xffffffffu, 0u, &sign, unknown);
  return sign;
}

/* The direction of step 5's walk along `axis`: 1 towards +, to the nearer face of the root box
 * (R: its edge in finest voxels). */
VX_HD int vx_se_walk_up(float R, const float p[3], int axis) {
  float pa = axis == 0 ? p[0] : (axis == 1 ? p[1] : p[2]);
  return R - pa < pa;
}

/* 1 when the walks of axes 0 .. axis (their signs summed in sum) decide step 5's majority. */
VX_HD int vx_se_walk_decided(float sum, int axis) {
  return axis >= 2 || (axis == 1 && (sum >= 2.0f || sum <= -2.0f));
}

/* Step 5: the sign (+1 or -1) of grid point p (inside the root box) whose cell c has no field:
 * the majority of the walks along the three axes, each towards its nearer face of the root box
 * (a third walk only when the first two disagree). One walk could leave through a hole of an
 * open mesh, where the winding-number sign changes with no triangle to mark it; two of three
 * rarely do. *unknown is set when no walk found a cell. */
VX_HD float vx_se_walk_sign(const vx_sample_tree *t, const float p[3], uint32_t *path,
                            int *unknown) {
  const float Rf = (float)(1u << t->depth);
  float sum = 0.0f;
  int gave_up = 0;
  for (int axis = 0; axis < 3; axis++) {
    int u = 0;
    float s = vx_se_walk_axis(t, p, axis, vx_se_walk_up(Rf, p, axis), path, &u);
    gave_up += u;
    sum += u ? 0.0f : s;
    if (vx_se_walk_decided(sum, axis)) break; /* two agree: the majority */
  }
  *unknown = gave_up == 3;
  return sum < 0.0f ? -1.0f : 1.0f;
}

/* ---- one point -------------------------------------------------------------------------------- */

/* Step 4's value inside the root box, +-band, from step 5's sign (unknown: the walks gave up). */
VX_HD float vx_se_far_value(const vx_sample_tree *t, float sign, int unknown, float grad[3],
                            uint32_t *flags) {
  grad[0] = grad[1] = grad[2] = 0.0f;
  *flags = VX_SAMPLE_FAR | (unknown ? VX_SAMPLE_NO_SIGN : 0u);
  return sign * t->band * t->scale;
}

/* Step 4 inside the root box: +-band, the sign from step 5's walks. */
VX_HD float vx_se_far_inside(const vx_sample_tree *t, const float p[3], float grad[3],
                             uint32_t *flags) {
  uint32_t path[VX_MAX_DEPTH + 1];
  int unknown = 0;
  float sign = vx_se_walk_sign(t, p, path, &unknown);
  return vx_se_far_value(t, sign, unknown, grad, flags);
}

/* Step 4 beyond the root box for a grid point so far away that the squared distance overflows:
 * the distance from the largest gap scaled down (at most FLT_MAX in world units), the gradient
 * the unit vector away from the box. */
VX_HD float vx_se_far_beyond(const vx_sample_tree *t, const float p[3], float grad[3]) {
  const float Rf = (float)(1u << t->depth);
  float g[3], m = 0.0f, s = 0.0f;
  VX_SE_UNROLL
  for (int i = 0; i < 3; i++) {
    g[i] = vx_se_max(vx_se_max(-p[i], p[i] - Rf), 0.0f); /* vx_se_gap's 2x would overflow */
    m = vx_se_max(m, g[i]);
  }
  VX_SE_UNROLL
  for (int i = 0; i < 3; i++) {
    g[i] /= m;
    s += g[i] * g[i];
  }
  const float r = sqrtf(s), d = m * t->scale * r;
  VX_SE_UNROLL
  for (int i = 0; i < 3; i++) grad[i] = (p[i] < 0.0f ? -g[i] : g[i]) / r;
  return vx_se_min(d, FLT_MAX);
}

/* How far vx_sample_point_run goes. The GPU runs the stages as separate kernels over the points
 * each one leaves (so that the lanes of a warp do the same work); every stage computes the rule
 * from the start, so a point gets the same result whichever stage finishes it. */
enum {
  VX_SE_RUN_ALL = 0,    /* the whole rule */
  VX_SE_RUN_QUICK = 1,  /* steps 1 and 2; others are left pending */
  VX_SE_RUN_SEARCH = 2  /* all but step 5 (points inside the box that are far: pending) */
};
#define VX_SE_PENDING 0x80u /* flags of a point a stage left (outputs not written) */

/* ---- visiting order ---------------------------------------------------------------------------- */

/* The bits of x (< 2^10) spread to every third bit. */
VX_HD uint32_t vx_se_spread3(uint32_t x) {
  x = (x | x << 16) & 0x030000ffu;
  x = (x | x << 8) & 0x0300f00fu;
  x = (x | x << 4) & 0x030c30c3u;
  return (x | x << 2) & 0x09249249u;
}

/* The bucket of world point w for visiting points in a coherent order: the Morton code of its
 * cell in a grid of 2^bits cells per axis (bits <= 10) over the root box (a point outside it:
 * the nearest cell; not finite: any). Shuffled points visited bucket by bucket share the tree's
 * cache lines, as coherent ones do (the CPU and the GPU samplers order their points so). */
VX_HD uint32_t vx_se_bucket(const vx_sample_tree *t, const float w[3], uint32_t bits) {
  const float cells = (float)(1u << bits), k = cells / (float)(1u << t->depth);
  uint32_t c[3];
  VX_SE_UNROLL
  for (int i = 0; i < 3; i++) {
    float g = (w[i] - t->origin[i]) * t->inv_scale * k;
    g = g > 0.0f ? g : 0.0f; /* NaN: 0 */
    c[i] = g < cells - 1.0f ? (uint32_t)g : (1u << bits) - 1u;
  }
  return vx_se_spread3(c[0]) | vx_se_spread3(c[1]) << 1 | vx_se_spread3(c[2]) << 2;
}

/* Grid coordinates of world point w; 0 when a coordinate is not finite. */
VX_HD int vx_se_grid(const vx_sample_tree *t, const float w[3], float p[3]) {
  int finite = 1;
  VX_SE_UNROLL
  for (int i = 0; i < 3; i++) {
    finite &= isfinite(w[i]) ? 1 : 0;
    p[i] = (w[i] - t->origin[i]) * t->inv_scale;
  }
  return finite && isfinite(p[0]) && isfinite(p[1]) && isfinite(p[2]);
}

/* The band cache's answer at grid point p in finest cell x (sampler/band_cache.h): 1 with the value
 * (voxels), gradient and flags, 0 where the cell is not cached. A surface voxel answers as in
 * the tree (the same corners); an empty cell with the trilinear interpolation of the rule's values at its corners,
 * flagged near, or far (+-band, gradient 0) where it reaches the band within half a step. */
VX_HD int vx_se_cached(const vx_sample_tree *t, const float p[3], const uint32_t x[3], float *v,
                       float g[3], uint32_t *flags) {
  const vx_bc_brick *b = vx_bc_find(t->cache, x);
  if (!b) return 0;
  const uint32_t k = vx_bc_cell(x), w = k >> 6;
  const uint64_t bit = (uint64_t)1u << (k & 63u);
  const int voxel = (b->voxel[w] & bit) != 0u;
  if (!voxel && !(b->empty[w] & bit)) return 0;
  float u[3];
  VX_SE_UNROLL
  for (int i = 0; i < 3; i++) u[i] = vx_se_clamp(p[i] - (float)x[i], 0.0f, 1.0f);
  vx_voxel c = vx_bc_corners(b, k);
  float f = vx_se_trilinear(&c, t->band, u, g);
  if (voxel) {
    *flags = 0u; /* not re-signed (those are not cached) */
  } else if (fabsf(f) > t->band * (1.0f - 0.5f / 127.0f)) {
    f = f < 0.0f ? -t->band : t->band;
    g[0] = g[1] = g[2] = 0.0f;
    *flags = VX_SAMPLE_FAR;
  } else {
    *flags = VX_SAMPLE_NEAR;
  }
  *v = f;
  return 1;
}

/* The signed distance (world units), gradient and VX_SAMPLE_* flags at grid point p (finite), or,
 * when `run` stops before the point's step, VX_SE_PENDING. */
VX_HD float vx_sample_grid_run(const vx_sample_tree *t, const float p[3], float grad[3],
                               uint32_t *flags, int run) {
  const uint32_t D = t->depth;
  const float Rf = (float)(1u << D);
  int inside = 1;
  VX_SE_UNROLL
  for (int i = 0; i < 3; i++) inside &= p[i] >= 0.0f && p[i] <= Rf;
  vx_se_cell c;
  c.kind = VX_SE_MISSING;
  c.level = 0;
  c.index = 0;
  c.min[0] = c.min[1] = c.min[2] = 0u;
  float g[3];
  /* node indices by level for the search: kept on the way down where it costs nothing (the CPU)
   * or where every point searches (the GPU's search stage); found again otherwise (on the GPU,
   * cheaper than keeping them for every point) */
  uint32_t path[VX_MAX_DEPTH + 1];
  path[0] = 0u;
#if defined(__CUDA_ARCH__)
  const int keep_path = run == VX_SE_RUN_SEARCH;
#else
  const int keep_path = 1;
#endif
  if (inside) {
    uint32_t x[3];
    VX_SE_UNROLL
    for (int i = 0; i < 3; i++) x[i] = (uint32_t)vx_se_clamp(p[i], 0.0f, Rf - 1.0f);
    float v;
    if (t->cache && vx_se_cached(t, p, x, &v, grad, flags)) return v * t->scale;
    vx_se_find_from(t, x, 0u, keep_path ? path : NULL, &c);
    if (c.kind != VX_SE_MISSING) {
      float v = vx_se_cell_field(t, &c, p, g);
      const float side = v < 0.0f && vx_se_resigned(t, vx_se_voxel_of(&c)) ? -1.0f : 1.0f;
      v *= side;
      grad[0] = side * g[0];
      grad[1] = side * g[1];
      grad[2] = side * g[2];
      *flags = c.kind == VX_SE_NODE ? VX_SAMPLE_PLANE : 0u;
      return v * t->scale;
    }
  }
  /* no field here: the nearest cells within the band, unless none can be that close */
  const float band = t->band;
  float out2 = 0.0f; /* squared distance to the root box */
  VX_SE_UNROLL
  for (int i = 0; i < 3; i++) {
    float d = vx_se_gap(p[i], 0.0f, Rf);
    out2 += d * d;
  }
  int searched;
  if (inside) {
    /* the band's box inside the empty cell: nothing within the band */
    float size = (float)(1u << (D - c.level));
    int within = 1;
    VX_SE_UNROLL
    for (int i = 0; i < 3; i++)
      within &= p[i] - band >= (float)c.min[i] && p[i] + band <= (float)c.min[i] + size;
    searched = !within;
  } else {
    searched = out2 < band * band;
  }
  if (searched) {
    if (run == VX_SE_RUN_QUICK) {
      *flags = VX_SE_PENDING;
      return 0.0f;
    }
    if (inside && !keep_path) {
      uint32_t x[3] = {c.min[0], c.min[1], c.min[2]};
      vx_se_find_from(t, x, 0u, path, &c);
    }
    float d = 0.0f, hint = 0.0f;
    if (vx_se_near(t, p, band, inside ? &c : NULL, path, &d, g, &hint) && fabsf(d) < band) {
      grad[0] = g[0];
      grad[1] = g[1];
      grad[2] = g[2];
      *flags = VX_SAMPLE_NEAR | (inside ? 0u : VX_SAMPLE_OUTSIDE);
      return d * t->scale;
    }
    if (inside && hint != 0.0f) { /* far, the sign from the nearest cell's side */
      grad[0] = grad[1] = grad[2] = 0.0f;
      *flags = VX_SAMPLE_FAR;
      return hint * band * t->scale;
    }
  }
  /* far */
  if (!inside) {
    float od = sqrtf(out2);
    grad[0] = grad[1] = grad[2] = 0.0f;
    *flags = VX_SAMPLE_FAR | VX_SAMPLE_OUTSIDE;
    if (!(out2 < INFINITY)) return vx_se_far_beyond(t, p, grad);
    if (od > band) {
      VX_SE_UNROLL
      for (int i = 0; i < 3; i++) grad[i] = (p[i] < 0.0f ? p[i] : vx_se_pos(p[i] - Rf)) / od;
    }
    return vx_se_min((od > band ? od : band) * t->scale, FLT_MAX);
  }
  if (run != VX_SE_RUN_ALL) {
    *flags = VX_SE_PENDING;
    return 0.0f;
  }
  return vx_se_far_inside(t, p, grad, flags);
}

/* The signed distance (world units), gradient and VX_SAMPLE_* flags at world point w, or, when
 * `run` stops before the point's step, VX_SE_PENDING. */
VX_HD float vx_sample_point_run(const vx_sample_tree *t, const float w[3], float grad[3],
                                uint32_t *flags, int run) {
  float p[3];
  if (!vx_se_grid(t, w, p)) {
    grad[0] = grad[1] = grad[2] = NAN;
    *flags = VX_SAMPLE_INVALID;
    return NAN;
  }
  return vx_sample_grid_run(t, p, grad, flags, run);
}

/* The signed distance (world units), gradient and VX_SAMPLE_* flags at world point w. */
VX_HD float vx_sample_point(const vx_sample_tree *t, const float w[3], float grad[3],
                           uint32_t *flags) {
  return vx_sample_point_run(t, w, grad, flags, VX_SE_RUN_ALL);
}

/* What vx_sample_point gives at a point that VX_SE_RUN_SEARCH left pending (inside, far). */
VX_HD float vx_sample_point_far(const vx_sample_tree *t, const float w[3], float grad[3],
                                uint32_t *flags) {
  float p[3];
  vx_se_grid(t, w, p);
  return vx_se_far_inside(t, p, grad, flags);
}

#endif
