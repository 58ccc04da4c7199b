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
 *   byte  7      flags   uint8   VX_NODE_* below.
 *   byte  8..11  normal  uint32  unit plane normal, octahedral, 2 x 16 bits (x low, y high).
 *   byte 12..15  d       float   plane offset in node units: the plane is
 *                                  n . (u - (0.5,0.5,0.5)) + d = 0,  u = (p - node_min) / node_size
 *                                in [0,1]^3, so |d| <= sqrt(3)/2 when the plane meets the box.
 *
 * The plane is the least-squares linear fit f(p) ~ a.p + b of the signed-distance samples at the
 * corners of the surface voxels below the node (see lod.h), normalised so that n = a/|a|.
 *
 * vx_voxel (8 bytes): the signed distance at the voxel's 8 corners, int8 each, corner c at
 * (c&1, c>>1&1, c>>2&1); value q means q * band / 127 finest voxels (band: vx_tree.band), i.e. the
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

/* Index of the child in slot s (which must be set in mask). */
VX_HD uint32_t vx_child_index(uint32_t child, uint32_t mask, uint32_t slot) {
  return child + vx_popcount8(mask & ((1u << slot) - 1u));
}

/* ---- error code: 8 bits, logarithmic, rounded up ---------------------------------------------
 * code 0 = 0; code k >= 1 means 2^((k-1)/10 - 10) finest voxels (about 0.001 .. 40000, 7% steps).
 * Encoding rounds up, so a decoded error is never smaller than the true one. */
VX_HD float vx_err_decode(uint32_t code) {
  return code == 0 ? 0.0f : exp2f((float)(code - 1) * 0.1f - 10.0f);
}
VX_HD uint32_t vx_err_encode(double e) {
  if (!(e > 0.0)) return 0;
  double k = ceil((log2(e) + 10.0) * 10.0 - 1e-9) + 1.0;
  if (k < 1.0) k = 1.0;
  if (k > 255.0) k = 255.0;
  uint32_t c = (uint32_t)k;
  while (c < 255 && (double)vx_err_decode(c) < e) c++; /* float rounding: keep it an upper bound */
  return c;
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

VX_HD void vx_oct_decode(uint32_t code, float n[3]) {
  float u = (float)(code & 0xffffu) * (2.0f / 65535.0f) - 1.0f;
  float v = (float)(code >> 16) * (2.0f / 65535.0f) - 1.0f;
  float z = 1.0f - fabsf(u) - fabsf(v);
  if (z < 0.0f) {
    float ou = u;
    u = (1.0f - fabsf(v)) * vx_sign_nz(ou);
    v = (1.0f - fabsf(ou)) * vx_sign_nz(v);
  }
  float len = sqrtf(u * u + v * v + z * z);
  n[0] = u / len;
  n[1] = v / len;
  n[2] = z / len;
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
