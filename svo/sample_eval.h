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
 *    surface seen from outside) or too far. The smallest candidate below the band wins.
 * 4. Far. No candidate below the band: the value is +-band (no surface voxel lies within band
 *    voxels, the voxelization being conservative, so this bounds |d| from below), its sign from
 *    the walk of step 5.
 * 5. Sign walk. From the missing cell, along an axis towards the nearer root face, from one
 *    maximal empty cell to the next (each a descent by integer coordinates), to the first cell
 *    with a field; the field's sign where the line enters it is p's (the segment crosses no
 *    surface). Leaving the box means outside. At most VX_SE_WALK_MAX steps. The sign is the
 *    majority of the walks along the three axes (an open mesh's hole can mislead one).
 * Grid space: world = origin + grid * scale; the grid is [0, 2^D]^3 and the mesh lies inside.
 * Distances come out in world units; gradients are dimensionless.
 */
#ifndef VOXLOD_SVO_SAMPLE_EVAL_H
#define VOXLOD_SVO_SAMPLE_EVAL_H

#include <math.h>
#include <stdint.h>
#include "svo/hostdev.h"
#include "svo/node.h"
#include "svo/fetch.h"
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
} vx_sample_tree;

#define VX_SE_STACK (8 * (VX_MAX_DEPTH + 1))
/* Instrumentation hooks for experiments (nothing by default). */
#ifndef VX_SE_COUNT_POP
#define VX_SE_COUNT_POP()
#define VX_SE_COUNT_CAND()
#define VX_SE_COUNT_PUSH()
#endif
/* Loops over 3 axes or 8 corners are unrolled on the GPU, so their arrays stay in registers. */
#if defined(__CUDACC__)
#define VX_SE_UNROLL _Pragma("unroll")
#else
#define VX_SE_UNROLL
#endif
#define VX_SE_WALK_MAX (8 * VX_MAX_DEPTH + 8)

/* The final cell holding a point. */
enum { VX_SE_MISSING = 0, VX_SE_VOXEL = 1, VX_SE_NODE = 2 };

typedef struct vx_se_cell {
  int kind;
  uint32_t level;  /* of the cell (a missing cell: the level of the absent child) */
  uint32_t index;  /* voxels[] (VX_SE_VOXEL) or nodes[] (VX_SE_NODE) */
  uint32_t min[3]; /* minimum corner, finest voxels */
} vx_se_cell;

VX_HD float vx_se_clamp(float v, float lo, float hi) { return v < lo ? lo : (v > hi ? hi : v); }

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

/* The final cell holding finest voxel x (each coordinate < 2^D). */
VX_HD void vx_se_find(const vx_sample_tree *t, const uint32_t x[3], vx_se_cell *c) {
  const uint32_t D = t->depth;
  uint32_t idx = 0;
  for (uint32_t l = 0;; l++) {
    vx_node nd = vx_fetch_node(&t->nodes[idx]);
    uint32_t mask = vx_node_mask(nd.info);
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
      break;
    }
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
    float a = (float)lo[i], b = a + size;
    float d = p[i] < a ? a - p[i] : (p[i] > b ? p[i] - b : 0.0f);
    s += d * d;
  }
  return s;
}

/* Step 3's candidate from final cell c: *dist = sqrt(e^2 + delta^2) with e's sign, n the unit
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
  *dist = e < 0.0f ? -d : d;
  return 1;
}

/* The squared lower bound of the distance from p to the zeros in child `slot`: its box distance,
 * or the plane bound when larger. dl/dh: p's squared distances to the lower/upper half per axis,
 * fl/fh the same for the foot, pa2 = (|P(p)| - Z)^2 (0 when negative), Z the slab's half width
 * (INFINITY: no plane). */
VX_HD float vx_se_child_bound(uint32_t slot, const float dl[3], const float dh[3],
                              const float fl[3], const float fh[3], float pa2, float Z,
                              float best2) {
  float d2 = (slot & 1u ? dh[0] : dl[0]) + (slot & 2u ? dh[1] : dl[1]) + (slot & 4u ? dh[2] : dl[2]);
  if (d2 < best2 && Z < INFINITY) { /* the box alone does not exclude it: try the plane */
    float f = sqrtf((slot & 1u ? fh[0] : fl[0]) + (slot & 2u ? fh[1] : fl[1]) +
                    (slot & 4u ? fh[2] : fl[2])) - Z;
    float b = pa2 + (f > 0.0f ? f * f : 0.0f);
    d2 = b > d2 ? b : d2;
  }
  return d2;
}

/* Step 3: the best candidate strictly closer than `radius` voxels: returns 1 with *dist (signed)
 * and n, or 0 when no cell with a field lies that close. The search starts at the deepest cell
 * that holds the whole query box [p - radius, p + radius] (clamped to the root box): none of its
 * ancestors' other children can be that close. */
VX_HD int vx_se_near(const vx_sample_tree *t, const float p[3], float radius, float *dist,
                     float n[3]) {
  const uint32_t D = t->depth;
  const float Rm = (float)(1u << D) - 1.0f;
  uint32_t lo[3], diff = 0u;
  VX_SE_UNROLL
  for (int i = 0; i < 3; i++) {
    lo[i] = (uint32_t)vx_se_clamp(p[i] - radius, 0.0f, Rm);
    diff |= lo[i] ^ (uint32_t)vx_se_clamp(p[i] + radius, 0.0f, Rm);
  }
  uint32_t top = diff ? D - 1u - vx_se_high_bit(diff) : D; /* the deepest common level */
  uint32_t idx = 0u, l = 0u;
  while (l < top && l < D) {
    vx_node nd = vx_fetch_node(&t->nodes[idx]);
    uint32_t mask = vx_node_mask(nd.info);
    if (vx_se_node_final(t, &nd, l)) break;
    uint32_t sh = D - 1u - l;
    uint32_t slot = (lo[0] >> sh & 1u) | (lo[1] >> sh & 1u) << 1 | (lo[2] >> sh & 1u) << 2;
    if (!(mask >> slot & 1u) || l + 1u >= t->levels) return 0; /* no field in the box */
    idx = vx_child_index(nd.child, mask, slot);
    l++;
  }
  /* the stack: node index, corner (x | y << 16, z | level << 16), squared box distance */
  uint32_t s_idx[VX_SE_STACK], s_xy[VX_SE_STACK], s_zl[VX_SE_STACK];
  float s_d2[VX_SE_STACK];
  float best = radius, best2 = radius * radius;
  int found = 0, sp = 1;
  {
    uint32_t sh = D - l;
    uint32_t m[3] = {lo[0] >> sh << sh, lo[1] >> sh << sh, lo[2] >> sh << sh};
    s_idx[0] = idx;
    s_xy[0] = m[0] | m[1] << 16;
    s_zl[0] = m[2] | l << 16;
    s_d2[0] = vx_se_box_d2(p, m, (float)(1u << (D - l)));
  }
  while (sp > 0) {
    sp--;
    VX_SE_COUNT_POP();
    if (!(s_d2[sp] < best2)) continue; /* pruned since it was pushed */
    vx_se_cell c;
    c.index = s_idx[sp];
    c.min[0] = s_xy[sp] & 0xffffu;
    c.min[1] = s_xy[sp] >> 16;
    c.min[2] = s_zl[sp] & 0xffffu;
    c.level = s_zl[sp] >> 16;
    float d, g[3];
    if (c.level == D) { /* a voxel (the start of a search inside one voxel) */
      c.kind = VX_SE_VOXEL;
      VX_SE_COUNT_CAND();
      if (vx_se_candidate(t, &c, p, &d, g) && fabsf(d) < best) {
        best = fabsf(d);
        best2 = best * best;
        *dist = d;
        n[0] = g[0], n[1] = g[1], n[2] = g[2];
        found = 1;
      }
      continue;
    }
    vx_node nd = vx_fetch_node(&t->nodes[c.index]);
    uint32_t mask = vx_node_mask(nd.info);
    if (vx_se_node_final(t, &nd, c.level)) {
      c.kind = VX_SE_NODE;
      VX_SE_COUNT_CAND();
      if (vx_se_candidate(t, &c, p, &d, g) && fabsf(d) < best) {
        best = fabsf(d);
        best2 = best * best;
        *dist = d;
        n[0] = g[0], n[1] = g[1], n[2] = g[2];
        found = 1;
      }
      continue;
    }
    if (mask == 0u || c.level + 1u >= t->levels) continue;
    /* squared distances from p to the lower and upper halves, per axis: a child's box distance
     * is the sum of its three halves' */
    const uint32_t h = 1u << (D - c.level - 1u);
    float dl[3], dh[3], fl[3], fh[3];
    uint32_t near = 0u;
    /* The plane bound (vx_se_zero_bound): every zero below lies in the slab |P| <= Z, so for
     * any such x, |p - x|^2 >= (|P(p)| - Z)^2 + (dist(foot, box) - Z)^2, foot the projection of
     * p on P (normal and tangential parts of p - x). Far tighter than the box distance where
     * the surface runs past p: cells beside the foot drop out. */
    float pa2 = 0.0f, Z = INFINITY, foot[3] = {p[0], p[1], p[2]};
    if (vx_node_flags(nd.info) & VX_NODE_PLANE_OK) {
      float nn[3];
      float pv = vx_se_plane(&nd, D, c.level, c.min, p, nn);
      Z = vx_se_zero_bound(t, nd.info);
      VX_SE_UNROLL
      for (int i = 0; i < 3; i++) foot[i] = p[i] - pv * nn[i];
      float a = fabsf(pv) - Z;
      pa2 = a > 0.0f ? a * a : 0.0f;
      if (pa2 >= best2) continue; /* the whole slab is farther than the best */
    }
    VX_SE_UNROLL
    for (int i = 0; i < 3; i++) {
      float a = (float)c.min[i], m = a + (float)h, b = m + (float)h;
      float el = p[i] < a ? a - p[i] : (p[i] > m ? p[i] - m : 0.0f);
      float eh = p[i] < m ? m - p[i] : (p[i] > b ? p[i] - b : 0.0f);
      dl[i] = el * el;
      dh[i] = eh * eh;
      el = foot[i] < a ? a - foot[i] : (foot[i] > m ? foot[i] - m : 0.0f);
      eh = foot[i] < m ? m - foot[i] : (foot[i] > b ? foot[i] - b : 0.0f);
      fl[i] = el * el;
      fh[i] = eh * eh;
      near |= (p[i] >= m ? 1u : 0u) << i;
    }
    if (c.level + 1u == D) {
      /* voxels: evaluated here, nearest octant first, so that the bound tightens early */
      for (uint32_t k = 0; k < 8u; k++) {
        uint32_t slot = near ^ k;
        if (!(mask >> slot & 1u)) continue;
        float d2 = vx_se_child_bound(slot, dl, dh, fl, fh, pa2, Z, best2);
        if (!(d2 < best2)) continue;
        vx_se_cell v;
        v.kind = VX_SE_VOXEL;
        v.level = D;
        v.index = vx_child_index(nd.child, mask, slot);
        v.min[0] = c.min[0] + (slot & 1u);
        v.min[1] = c.min[1] + (slot >> 1 & 1u);
        v.min[2] = c.min[2] + (slot >> 2 & 1u);
        VX_SE_COUNT_CAND();
        if (vx_se_candidate(t, &v, p, &d, g) && fabsf(d) < best) {
          best = fabsf(d);
          best2 = best * best;
          *dist = d;
          n[0] = g[0], n[1] = g[1], n[2] = g[2];
          found = 1;
        }
      }
      continue;
    }
    /* nodes: pushed farthest octant first, so that the nearest pops first */
    for (int k = 7; k >= 0; k--) {
      uint32_t slot = near ^ (uint32_t)k;
      if (!(mask >> slot & 1u)) continue;
      float d2 = vx_se_child_bound(slot, dl, dh, fl, fh, pa2, Z, best2);
      if (!(d2 < best2) || sp >= VX_SE_STACK) continue;
      VX_SE_COUNT_PUSH();
      s_idx[sp] = vx_child_index(nd.child, mask, slot);
      s_xy[sp] = (c.min[0] + (slot & 1u) * h) | (c.min[1] + (slot >> 1 & 1u) * h) << 16;
      s_zl[sp] = (c.min[2] + (slot >> 2 & 1u) * h) | (c.level + 1u) << 16;
      s_d2[sp] = d2;
      sp++;
    }
  }
  return found;
}

/* ---- sign walk -------------------------------------------------------------------------------- */

/* One walk of step 5: from the empty cell c holding p along `axis` (up: towards +), the sign of
 * the field where the line enters the first cell that has one; +1 when it leaves the box.
 * *unknown is set when it gave up after VX_SE_WALK_MAX steps. */
VX_HD float vx_se_walk_axis(const vx_sample_tree *t, const float p[3], vx_se_cell c, int axis,
                            int up, int *unknown) {
  const uint32_t D = t->depth, R = 1u << D;
  const float Rf = (float)R;
  uint32_t x[3];
  VX_SE_UNROLL
  for (int i = 0; i < 3; i++) x[i] = (uint32_t)vx_se_clamp(p[i], 0.0f, Rf - 1.0f);
  *unknown = 0;
  for (int step = 0; step < VX_SE_WALK_MAX; step++) {
    /* the next cell along the axis, past the current empty one */
    uint32_t size = 1u << (D - c.level);
    uint32_t a = axis == 0 ? c.min[0] : (axis == 1 ? c.min[1] : c.min[2]);
    if (up ? a + size >= R : a == 0u) return 1.0f; /* left the box: outside */
    uint32_t na = up ? a + size : a - 1u;
    if (axis == 0) x[0] = na;
    else if (axis == 1) x[1] = na;
    else x[2] = na;
    vx_se_find(t, x, &c);
    if (c.kind == VX_SE_MISSING) continue;
    /* where the axis line enters the cell: p moved onto the cell's entry face */
    float q[3], g[3];
    q[0] = p[0];
    q[1] = p[1];
    q[2] = p[2];
    float face = (float)(up ? na : na + 1u);
    if (axis == 0) q[0] = face;
    else if (axis == 1) q[1] = face;
    else q[2] = face;
    return vx_se_cell_field(t, &c, q, g) < 0.0f ? -1.0f : 1.0f;
  }
  *unknown = 1;
  return 1.0f;
}

/* Step 5: the sign (+1 or -1) of grid point p (inside the root box) whose cell c has no field:
 * the majority of the walks along the three axes, each towards its nearer face of the root box
 * (a third walk only when the first two disagree). One walk could leave through a hole of an
 * open mesh, where the winding-number sign changes with no triangle to mark it; two of three
 * rarely do. *unknown is set when no walk found a cell. */
VX_HD float vx_se_walk_sign(const vx_sample_tree *t, const float p[3], vx_se_cell c,
                            int *unknown) {
  const float Rf = (float)(1u << t->depth);
  float sum = 0.0f;
  int gave_up = 0;
  for (int axis = 0; axis < 3; axis++) {
    float pa = axis == 0 ? p[0] : (axis == 1 ? p[1] : p[2]);
    int u = 0;
    float s = vx_se_walk_axis(t, p, c, axis, Rf - pa < pa, &u);
    gave_up += u;
    sum += u ? 0.0f : s;
    if (axis == 1 && (sum >= 2.0f || sum <= -2.0f)) break; /* two agree: the majority */
  }
  *unknown = gave_up == 3;
  return sum < 0.0f ? -1.0f : 1.0f;
}

/* ---- one point -------------------------------------------------------------------------------- */

/* The signed distance (world units), gradient and VX_SAMPLE_* flags at world point w. */
VX_HD float vx_sample_point(const vx_sample_tree *t, const float w[3], float grad[3],
                           uint32_t *flags) {
  const uint32_t D = t->depth;
  const float Rf = (float)(1u << D);
  float p[3];
  int finite = 1, inside = 1;
  VX_SE_UNROLL
  for (int i = 0; i < 3; i++) {
    finite &= isfinite(w[i]) ? 1 : 0;
    p[i] = (w[i] - t->origin[i]) * t->inv_scale;
    inside &= p[i] >= 0.0f && p[i] <= Rf;
  }
  if (!finite || !(isfinite(p[0]) && isfinite(p[1]) && isfinite(p[2]))) {
    grad[0] = grad[1] = grad[2] = NAN;
    *flags = VX_SAMPLE_INVALID;
    return NAN;
  }
  vx_se_cell c;
  c.kind = VX_SE_MISSING;
  c.level = 0;
  c.min[0] = c.min[1] = c.min[2] = 0u;
  float g[3];
  if (inside) {
    uint32_t x[3];
    VX_SE_UNROLL
    for (int i = 0; i < 3; i++) x[i] = (uint32_t)vx_se_clamp(p[i], 0.0f, Rf - 1.0f);
    vx_se_find(t, x, &c);
    if (c.kind != VX_SE_MISSING) {
      float v = vx_se_cell_field(t, &c, p, g);
      grad[0] = g[0];
      grad[1] = g[1];
      grad[2] = g[2];
      *flags = c.kind == VX_SE_NODE ? VX_SAMPLE_PLANE : 0u;
      return v * t->scale;
    }
  }
  /* no field here: the nearest cells within the band, unless none can be that close */
  const float band = t->band;
  float out2 = 0.0f; /* squared distance to the root box */
  VX_SE_UNROLL
  for (int i = 0; i < 3; i++) {
    float d = p[i] < 0.0f ? -p[i] : (p[i] > Rf ? p[i] - Rf : 0.0f);
    out2 += d * d;
  }
  int searched = 0, found = 0;
  float d = 0.0f;
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
  if (searched) found = vx_se_near(t, p, band, &d, g);
  if (found && fabsf(d) < band) {
    grad[0] = g[0];
    grad[1] = g[1];
    grad[2] = g[2];
    *flags = VX_SAMPLE_NEAR | (inside ? 0u : VX_SAMPLE_OUTSIDE);
    return d * t->scale;
  }
  /* far */
  grad[0] = grad[1] = grad[2] = 0.0f;
  if (!inside) {
    float od = sqrtf(out2);
    if (od > band) {
      VX_SE_UNROLL
      for (int i = 0; i < 3; i++) {
        float e = p[i] < 0.0f ? p[i] : (p[i] > Rf ? p[i] - Rf : 0.0f);
        grad[i] = e / od;
      }
    }
    *flags = VX_SAMPLE_FAR | VX_SAMPLE_OUTSIDE;
    return (od > band ? od : band) * t->scale;
  }
  int unknown = 0;
  float sign = vx_se_walk_sign(t, p, c, &unknown);
  *flags = VX_SAMPLE_FAR | (unknown ? VX_SAMPLE_NO_SIGN : 0u);
  return sign * band * t->scale;
}

#endif
