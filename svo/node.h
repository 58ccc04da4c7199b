/* SPDX-License-Identifier: Apache-2.0 */
/* node.h - the octree's bytes: node and voxel layout, Morton codes, packed planes and errors.
 *
 * Compiled as host and device code (see hostdev.h): the CPU renderer, the CUDA kernel, the builder
 * and the file codec all decode nodes through these functions.
 *
 * Levels. A tree of depth D has resolution R = 2^D cells per axis at its finest level. Level l
 * (0 <= l <= D) has 2^l cells per axis; a cell of level l spans 2^(D-l) finest voxels. Levels
 * 0 .. D-1 are *nodes* (vx_node, 16 bytes); level D are *voxels* (vx_voxel, 8 bytes), which carry
 * the scalar field and nothing else.
 *
 * Buffer map (one pointer-free array per kind; file bytes, host bytes and GPU bytes agree):
 *
 *   nodes[]  | level 0 (root) | level 1 ...          | level D-1                     |
 *            |  1 node        |  sorted by Morton    |  children of a node contiguous|
 *   voxels[] | level D: the surface voxels, sorted by Morton code                    |
 *
 * Nodes are stored breadth first: level by level, each level in Morton order. So the children of
 * one node are contiguous, in slot order, and a renderer that stops at level L needs only the
 * prefix of nodes[] up to level L (the file is written the same way, level by level).
 *
 * vx_node (16 bytes, 16-byte aligned, fetched with one 128-bit load):
 *
 *   byte  0..3   child   uint32  index of the first child. For a node at level l < D-1 an index
 *                                into nodes[]; at level D-1 an index into voxels[]. Child in slot
 *                                s lives at child + popcount(mask & ((1<<s)-1)). Unused when
 *                                mask == 0.
 *   byte  4      mask    uint8   child mask: bit s set when the child in slot s exists;
 *                                slot s = x | y<<1 | z<<2 (x, y, z in {0,1}: the child's half).
 *   byte  5      errmax  uint8   bound on the plane's max |error| over the subtree's corner
 *                                samples, in finest voxels, coded by vx_err_encode (rounded up).
 *   byte  6      errrms  uint8   the plane's RMS error over the same samples, same code.
 *   byte  7      flags   uint8   VX_NODE_* below (bits 0, 1) and the drawn-plane bound code
 *                                (bits 2..7, vx_node_bound_code).
 *   byte  8..11  normal  uint32  unit plane normal, octahedral, 2 x 16 bits (x low, y high).
 *   byte 12..15  d       float   plane offset in node units: the plane is
 *                                  n . (u - (0.5,0.5,0.5)) + d = 0,  u = (p - node_min) / node_size
 *                                in [0,1]^3, so |d| <= sqrt(3)/2 when the plane meets the box.
 *
 * The plane is the least-squares linear fit f(p) ~ a.p + b of the signed-distance samples at the
 * corners of the surface voxels below the node (see lod.h), normalised so that n = a/|a|.
 *
 * vx_voxel (8 bytes): the signed distance at the voxel's 8 corners, int8 each, corner c at
 * (c&1, c>>1&1, c>>2&1); value q means q * band / 127 finest voxels (band: vx_octree.band), i.e. the
 * field is truncated at +-band and the quantization step is band/127. Negative is inside.
 */
#ifndef VOXLOD_SVO_NODE_H
#define VOXLOD_SVO_NODE_H

#include <stdint.h>
#include <math.h>
#include "svo/hostdev.h"

#if defined(__cplusplus)
#define VX_ALIGN(n) alignas(n)
#else
#define VX_ALIGN(n) _Alignas(n)
#endif

#define VX_MAX_DEPTH 14 /* 16384^3: Morton codes use 42 bits, levels fit a uint8 */
#define VX_MIN_DEPTH 1
/* A tiled tree (formats/svo_tiled.h) reaches 2^20 per axis: a top tree over tiles of at most
 * VX_MAX_DEPTH levels, each in its own index space. */
#define VX_MAX_TILED_DEPTH 20

enum {
  VX_NODE_PLANE_OK = 1u << 0, /* the fit was well-conditioned: n and d are meaningful */
  VX_NODE_PRUNED = 1u << 1    /* subtree replaced by this node's plane (mask == 0 above level D) */
};

typedef struct vx_node {
  VX_ALIGN(16) uint32_t child; /* first child index (nodes[] or voxels[], see above) */
  uint32_t info;               /* mask | errmax << 8 | errrms << 16 | flags << 24 */
  uint32_t normal;             /* octahedral unit normal, 2 x unorm16 */
  float d;                     /* plane offset, node units, from the node's centre */
} vx_node;

typedef struct vx_voxel {
  VX_ALIGN(8) int8_t c[8]; /* corner distances, quantized: q * band / 127 voxels */
} vx_voxel;

#if defined(__cplusplus)
static_assert(sizeof(vx_node) == 16 && alignof(vx_node) == 16, "vx_node is 16 bytes");
static_assert(sizeof(vx_voxel) == 8, "vx_voxel is 8 bytes");
#else
_Static_assert(sizeof(vx_node) == 16 && _Alignof(vx_node) == 16, "vx_node is 16 bytes");
_Static_assert(sizeof(vx_voxel) == 8, "vx_voxel is 8 bytes");
#endif

/* ---- node fields ---------------------------------------------------------------------------- */

VX_HD uint32_t vx_node_mask(uint32_t info) { return info & 0xffu; }
VX_HD uint32_t vx_node_errmax_code(uint32_t info) { return (info >> 8) & 0xffu; }
VX_HD uint32_t vx_node_errrms_code(uint32_t info) { return (info >> 16) & 0xffu; }
VX_HD uint32_t vx_node_flags(uint32_t info) { return info >> 24; }
VX_HD uint32_t vx_node_info(uint32_t mask, uint32_t errmax, uint32_t errrms, uint32_t flags) {
  return (mask & 0xffu) | (errmax & 0xffu) << 8 | (errrms & 0xffu) << 16 | (flags & 0xffu) << 24;
}

VX_HD uint32_t vx_popcount8(uint32_t v) {
  v = v - ((v >> 1) & 0x55u);
  v = (v & 0x33u) + ((v >> 2) & 0x33u);
  return (v + (v >> 4)) & 0x0fu;
}

/* What a node must be besides its child index (vx_octree_validate): a pruned leaf exactly when it
 * has no children, with a finite plane offset. */
VX_HD int vx_node_sound(uint32_t info, float d) {
  return (vx_node_mask(info) == 0) == ((vx_node_flags(info) & VX_NODE_PRUNED) != 0) && d == d &&
         d <= 1e6f && d >= -1e6f;
}

/* Index of the child in slot s (which must be set in mask). */
VX_HD uint32_t vx_child_index(uint32_t child, uint32_t mask, uint32_t slot) {
  return child + vx_popcount8(mask & ((1u << slot) - 1u));
}

/* ---- error code: 8 bits, logarithmic, rounded up ---------------------------------------------
 * code 0 = 0; code k >= 1 means 2^((k-1)/10 - 10) finest voxels (about 0.001 .. 40000, 7% steps).
 * The decoded values are a table (the float exp2f(...) of each code, written out), so that every
 * platform, CPU or GPU, decodes and encodes the same bits without calling a math library.
 * Encoding rounds up: the smallest code whose decoded value is >= e (255 beyond the table), so a
 * decoded error is never smaller than the true one. */
VX_HD float vx_err_decode(uint32_t code) {
  static const float t[256] = {
      0x0p+0f, 0x1p-10f, 0x1.125fc4p-10f, 0x1.261116p-10f,
      0x1.3b2c4ap-10f, 0x1.51cb4p-10f, 0x1.6a09e6p-10f, 0x1.840606p-10f,
      0x1.9fdf88p-10f, 0x1.bdb8d2p-10f, 0x1.ddb678p-10f, 0x1p-9f,
      0x1.125fc4p-9f, 0x1.261116p-9f, 0x1.3b2c4ap-9f, 0x1.51cb4p-9f,
      0x1.6a09e6p-9f, 0x1.840606p-9f, 0x1.9fdf88p-9f, 0x1.bdb8d2p-9f,
      0x1.ddb678p-9f, 0x1p-8f, 0x1.125fc4p-8f, 0x1.261116p-8f,
      0x1.3b2c4ap-8f, 0x1.51cb46p-8f, 0x1.6a09e6p-8f, 0x1.840606p-8f,
      0x1.9fdf88p-8f, 0x1.bdb8d2p-8f, 0x1.ddb682p-8f, 0x1p-7f,
      0x1.125fc4p-7f, 0x1.261116p-7f, 0x1.3b2c4ap-7f, 0x1.51cb46p-7f,
      0x1.6a09e6p-7f, 0x1.840606p-7f, 0x1.9fdf88p-7f, 0x1.bdb8d2p-7f,
      0x1.ddb682p-7f, 0x1p-6f, 0x1.125fbep-6f, 0x1.26111cp-6f,
      0x1.3b2c4ap-6f, 0x1.51cb46p-6f, 0x1.6a09e6p-6f, 0x1.8405fep-6f,
      0x1.9fdf92p-6f, 0x1.bdb8d2p-6f, 0x1.ddb682p-6f, 0x1p-5f,
      0x1.125fbep-5f, 0x1.26111cp-5f, 0x1.3b2c4ap-5f, 0x1.51cb46p-5f,
      0x1.6a09e6p-5f, 0x1.8405fep-5f, 0x1.9fdf92p-5f, 0x1.bdb8d2p-5f,
      0x1.ddb682p-5f, 0x1p-4f, 0x1.125fbep-4f, 0x1.26111cp-4f,
      0x1.3b2c4ap-4f, 0x1.51cb46p-4f, 0x1.6a09e6p-4f, 0x1.8405fep-4f,
      0x1.9fdf92p-4f, 0x1.bdb8d2p-4f, 0x1.ddb682p-4f, 0x1p-3f,
      0x1.125fbep-3f, 0x1.26111cp-3f, 0x1.3b2c4ap-3f, 0x1.51cb46p-3f,
      0x1.6a09e6p-3f, 0x1.8405fep-3f, 0x1.9fdf92p-3f, 0x1.bdb8d2p-3f,
      0x1.ddb682p-3f, 0x1p-2f, 0x1.125fc4p-2f, 0x1.261116p-2f,
      0x1.3b2c4ap-2f, 0x1.51cb4ep-2f, 0x1.6a09e6p-2f, 0x1.840606p-2f,
      0x1.9fdf88p-2f, 0x1.bdb8d2p-2f, 0x1.ddb68cp-2f, 0x1p-1f,
      0x1.125fc4p-1f, 0x1.261116p-1f, 0x1.3b2c4ap-1f, 0x1.51cb4ep-1f,
      0x1.6a09e6p-1f, 0x1.840606p-1f, 0x1.9fdf88p-1f, 0x1.bdb8d2p-1f,
      0x1.ddb68cp-1f, 0x1p+0f, 0x1.125fc4p+0f, 0x1.261116p+0f,
      0x1.3b2c4ap+0f, 0x1.51cb4ep+0f, 0x1.6a09e6p+0f, 0x1.840606p+0f,
      0x1.9fdf88p+0f, 0x1.bdb8d2p+0f, 0x1.ddb68cp+0f, 0x1p+1f,
      0x1.125fc4p+1f, 0x1.261116p+1f, 0x1.3b2c4ap+1f, 0x1.51cb4ep+1f,
      0x1.6a09e6p+1f, 0x1.840606p+1f, 0x1.9fdf88p+1f, 0x1.bdb8d2p+1f,
      0x1.ddb68cp+1f, 0x1p+2f, 0x1.125fc4p+2f, 0x1.261116p+2f,
      0x1.3b2c4ap+2f, 0x1.51cb4ep+2f, 0x1.6a09e6p+2f, 0x1.840606p+2f,
      0x1.9fdf88p+2f, 0x1.bdb8d2p+2f, 0x1.ddb68cp+2f, 0x1p+3f,
      0x1.125fc4p+3f, 0x1.261116p+3f, 0x1.3b2c4ap+3f, 0x1.51cb4ep+3f,
      0x1.6a09e6p+3f, 0x1.840606p+3f, 0x1.9fdf88p+3f, 0x1.bdb8d2p+3f,
      0x1.ddb68cp+3f, 0x1p+4f, 0x1.125fc4p+4f, 0x1.261116p+4f,
      0x1.3b2c4ap+4f, 0x1.51cb4ep+4f, 0x1.6a09e6p+4f, 0x1.840606p+4f,
      0x1.9fdf88p+4f, 0x1.bdb8d2p+4f, 0x1.ddb68cp+4f, 0x1p+5f,
      0x1.125fc4p+5f, 0x1.261116p+5f, 0x1.3b2c4ap+5f, 0x1.51cb4ep+5f,
      0x1.6a09e6p+5f, 0x1.840606p+5f, 0x1.9fdf88p+5f, 0x1.bdb8d2p+5f,
      0x1.ddb68cp+5f, 0x1p+6f, 0x1.125fc4p+6f, 0x1.261122p+6f,
      0x1.3b2c58p+6f, 0x1.51cb4p+6f, 0x1.6a09e6p+6f, 0x1.840606p+6f,
      0x1.9fdf9ap+6f, 0x1.bdb8e4p+6f, 0x1.ddb678p+6f, 0x1p+7f,
      0x1.125fc4p+7f, 0x1.261122p+7f, 0x1.3b2c58p+7f, 0x1.51cb4p+7f,
      0x1.6a09e6p+7f, 0x1.840606p+7f, 0x1.9fdf9ap+7f, 0x1.bdb8e4p+7f,
      0x1.ddb678p+7f, 0x1p+8f, 0x1.125fc4p+8f, 0x1.261122p+8f,
      0x1.3b2c58p+8f, 0x1.51cb4p+8f, 0x1.6a09e6p+8f, 0x1.840606p+8f,
      0x1.9fdf9ap+8f, 0x1.bdb8e4p+8f, 0x1.ddb678p+8f, 0x1p+9f,
      0x1.125fc4p+9f, 0x1.261122p+9f, 0x1.3b2c58p+9f, 0x1.51cb4p+9f,
      0x1.6a09e6p+9f, 0x1.840606p+9f, 0x1.9fdf9ap+9f, 0x1.bdb8e4p+9f,
      0x1.ddb678p+9f, 0x1p+10f, 0x1.125fc4p+10f, 0x1.261122p+10f,
      0x1.3b2c58p+10f, 0x1.51cb4p+10f, 0x1.6a09e6p+10f, 0x1.840606p+10f,
      0x1.9fdf9ap+10f, 0x1.bdb8e4p+10f, 0x1.ddb678p+10f, 0x1p+11f,
      0x1.125fc4p+11f, 0x1.261122p+11f, 0x1.3b2c58p+11f, 0x1.51cb4p+11f,
      0x1.6a09e6p+11f, 0x1.840606p+11f, 0x1.9fdf9ap+11f, 0x1.bdb8e4p+11f,
      0x1.ddb678p+11f, 0x1p+12f, 0x1.125fc4p+12f, 0x1.261122p+12f,
      0x1.3b2c58p+12f, 0x1.51cb4p+12f, 0x1.6a09e6p+12f, 0x1.840606p+12f,
      0x1.9fdf9ap+12f, 0x1.bdb8e4p+12f, 0x1.ddb678p+12f, 0x1p+13f,
      0x1.125fc4p+13f, 0x1.261122p+13f, 0x1.3b2c58p+13f, 0x1.51cb4p+13f,
      0x1.6a09e6p+13f, 0x1.840606p+13f, 0x1.9fdf9ap+13f, 0x1.bdb8e4p+13f,
      0x1.ddb678p+13f, 0x1p+14f, 0x1.125fc4p+14f, 0x1.261122p+14f,
      0x1.3b2c58p+14f, 0x1.51cb4p+14f, 0x1.6a09e6p+14f, 0x1.840606p+14f,
      0x1.9fdf9ap+14f, 0x1.bdb8e4p+14f, 0x1.ddb678p+14f, 0x1p+15f,
      0x1.125fc4p+15f, 0x1.261122p+15f, 0x1.3b2c58p+15f, 0x1.51cb4p+15f,
  };
  return t[code & 0xffu];
}
/* The prune rule (svo/lod.c on the host, voxelizer/gpu_tree.cu on the GPU): a node with children
 * whose plane is valid and whose max error bound is at most max_error stands for its subtree. */
VX_HD int vx_node_prunable(uint32_t info, float max_error) {
  const uint32_t code = vx_node_errmax_code(info);
  return vx_node_mask(info) && (vx_node_flags(info) & VX_NODE_PLANE_OK) && code < 255 &&
         vx_err_decode(code) <= max_error;
}
/* A node made a pruned leaf: no children, flag VX_NODE_PRUNED, its plane and errors kept. */
VX_HD void vx_node_make_pruned(vx_node *nd) {
  nd->info = vx_node_info(0, vx_node_errmax_code(nd->info), vx_node_errrms_code(nd->info),
                          vx_node_flags(nd->info) | VX_NODE_PRUNED);
  nd->child = 0;
}
VX_HD uint32_t vx_err_encode(double e) {
  uint32_t lo = 1, hi = 255; /* the answer lies in [lo, hi] */
  if (!(e > 0.0)) return 0;
  if (!(e <= (double)vx_err_decode(255))) return 255;
  while (lo < hi) {
    uint32_t mid = (lo + hi) / 2;
    if ((double)vx_err_decode(mid) >= e) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/* ---- drawn-plane bound: flags bits 2..7 (info bits 26..31) ------------------------------------
 * B bounds |Pc(x) - P(x)| over every node c below this one (any level) and every point x of c's
 * box, P and Pc the packed planes, in finest voxels. A render that stops below this node at
 * planes (a --lod cut, auto LOD, pruned leaves) draws them across their boxes, so where this
 * node's plane exceeds B none of them has a zero (marcher/trace.h culls on it). Computed by the
 * fit bottom-up (svo/lod_eval.h): B = max over children c of (B_c + max over c's box corners of
 * |Pc - P|), 0 above voxels only.
 * code 0: no bound (a node below has no usable plane, B > 609 voxels, or a version-1 file);
 * code 1: B = 0 (only voxels below: level D-1);
 * code k >= 2: m[(k-2) & 3] * 2^((k-2)/4 - 6) voxels, m = 2^(j/4) written out, so 0.0156 .. 609
 * in 19% steps, exact floats on every platform. Encoding rounds up. */
VX_HD uint32_t vx_node_bound_code(uint32_t info) { return info >> 26; }
VX_HD float vx_bound_decode(uint32_t code) {
  static const float m[4] = {0x1p+0f, 0x1.306fep+0f, 0x1.6a09e6p+0f, 0x1.ae89fap+0f};
  code &= 63u;
  if (code == 0u) return INFINITY;
  if (code == 1u) return 0.0f;
  return ldexpf(m[(code - 2u) & 3u], (int)((code - 2u) >> 2) - 6);
}
VX_HD uint32_t vx_bound_encode(double b) {
  uint32_t lo = 2, hi = 63; /* the answer lies in [lo, hi] */
  if (!(b <= (double)vx_bound_decode(63))) return 0; /* NaN or beyond the range */
  if (b <= 0.0) return 1;
  while (lo < hi) {
    uint32_t mid = (lo + hi) / 2;
    if ((double)vx_bound_decode(mid) >= b) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/* ---- octahedral normal, 2 x 16 bits --------------------------------------------------------- */

VX_HD float vx_sign_nz(float v) { return v >= 0.0f ? 1.0f : -1.0f; }

VX_HD uint32_t vx_oct_encode(double nx, double ny, double nz) {
  double s = fabs(nx) + fabs(ny) + fabs(nz);
  if (!(s > 0.0)) return 0x80008000u; /* +z, arbitrary but valid */
  double u = nx / s, v = ny / s;
  if (nz < 0.0) {
    double ou = u, ov = v;
    u = (1.0 - fabs(ov)) * (ou >= 0.0 ? 1.0 : -1.0);
    v = (1.0 - fabs(ou)) * (ov >= 0.0 ? 1.0 : -1.0);
  }
  double qu = floor((u * 0.5 + 0.5) * 65535.0 + 0.5), qv = floor((v * 0.5 + 0.5) * 65535.0 + 0.5);
  if (qu < 0.0) qu = 0.0;
  if (qu > 65535.0) qu = 65535.0;
  if (qv < 0.0) qv = 0.0;
  if (qv > 65535.0) qv = 65535.0;
  return (uint32_t)qu | (uint32_t)qv << 16;
}

/* The octahedral code unfolded to a vector of the normal's direction, not yet unit length
 * (|u| + |v| + |z| = 1, so its length is in [1/sqrt(3), 1]). */
VX_HD void vx_oct_unfold(uint32_t code, float m[3]) {
  float u = (float)(code & 0xffffu) * (2.0f / 65535.0f) - 1.0f;
  float v = (float)(code >> 16) * (2.0f / 65535.0f) - 1.0f;
  float z = 1.0f - fabsf(u) - fabsf(v);
  if (z < 0.0f) {
    float ou = u;
    u = (1.0f - fabsf(v)) * vx_sign_nz(ou);
    v = (1.0f - fabsf(ou)) * vx_sign_nz(v);
  }
  m[0] = u;
  m[1] = v;
  m[2] = z;
}

VX_HD void vx_oct_decode(uint32_t code, float n[3]) {
  float m[3];
  vx_oct_unfold(code, m);
  float len = sqrtf(m[0] * m[0] + m[1] * m[1] + m[2] * m[2]);
  n[0] = m[0] / len;
  n[1] = m[1] / len;
  n[2] = m[2] / len;
}

/* ---- Morton codes: x in bit 0, y in bit 1, z in bit 2 of each 3-bit group ------------------- */

VX_HD uint64_t vx_morton_spread(uint32_t v) {
  uint64_t x = v & 0x1fffffu;
  x = (x | x << 32) & 0x1f00000000ffffull;
  x = (x | x << 16) & 0x1f0000ff0000ffull;
  x = (x | x << 8) & 0x100f00f00f00f00full;
  x = (x | x << 4) & 0x10c30c30c30c30c3ull;
  x = (x | x << 2) & 0x1249249249249249ull;
  return x;
}
VX_HD uint32_t vx_morton_compact(uint64_t x) {
  x &= 0x1249249249249249ull;
  x = (x ^ (x >> 2)) & 0x10c30c30c30c30c3ull;
  x = (x ^ (x >> 4)) & 0x100f00f00f00f00full;
  x = (x ^ (x >> 8)) & 0x1f0000ff0000ffull;
  x = (x ^ (x >> 16)) & 0x1f00000000ffffull;
  x = (x ^ (x >> 32)) & 0x1fffffull;
  return (uint32_t)x;
}
VX_HD uint64_t vx_morton_encode(uint32_t x, uint32_t y, uint32_t z) {
  return vx_morton_spread(x) | vx_morton_spread(y) << 1 | vx_morton_spread(z) << 2;
}
VX_HD void vx_morton_decode(uint64_t m, uint32_t *x, uint32_t *y, uint32_t *z) {
  *x = vx_morton_compact(m);
  *y = vx_morton_compact(m >> 1);
  *z = vx_morton_compact(m >> 2);
}

/* ---- corner values ------------------------------------------------------------------------ */

VX_HD int8_t vx_corner_quantize(double d, float band) {
  double q = d * 127.0 / (double)band;
  if (q > 127.0) q = 127.0;
  if (q < -127.0) q = -127.0;
  if (q != q) q = 127.0; /* NaN: far and outside */
  return (int8_t)(q >= 0.0 ? floor(q + 0.5) : -floor(-q + 0.5));
}
VX_HD float vx_corner_value(int8_t q, float band) { return (float)q * (band / 127.0f); }

#endif
