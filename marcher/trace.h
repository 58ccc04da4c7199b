/* trace.h - the per-ray function shared by the CPU renderer and the CUDA kernel.
 *
 * INTERFACE FIXED HERE; the implementation (traversal, zero crossing, plane LOD, shading) is
 * filled in below the declarations. Everything in this header is host+device code (hostdev.h):
 * C11 that nvcc also accepts.
 *
 * Coordinates: all tracing happens in grid space (finest voxels, the tree spans [0, 2^depth]^3).
 * vx_trace_scene_init() (marcher/scene.c, host only) converts a world camera into grid space.
 *
 * Per-ray algorithm (vx_trace_ray)
 * 1. The ray is taken into grid space by vx_trace_scene_init() and clipped to the root box
 *    [0, 2^D]^3 (slab test). It is then mirrored into the positive octant, as in Laine & Karras,
 *    "Efficient Sparse Voxel Octrees" (ESVO, 2010): every axis with a negative direction is flipped
 *    (o -> 2^D - o, d -> -d) and remembered in a 3-bit mask, so a cell's slot in the real tree is
 *    its slot in the mirrored tree xor that mask, and front-to-back order is always "low half first".
 * 2. Traversal is the parametric octree walk of Revelles, Urena & Lastra, "An efficient parametric
 *    algorithm for octree traversal" (2000), in ESVO's PUSH / ADVANCE / POP form: cell boundaries are
 *    integer grid coordinates (exact in float up to 2^24), the entry/exit t of a cell is a max / min
 *    of plane * (1/d) - o * (1/d) per axis (one FMA per plane on the GPU), the first child is chosen
 *    by comparing the entry t with the node's mid-plane t per axis, and ADVANCE steps over every axis
 *    whose exit plane is the cell's exit; when that step leaves the parent, POP straight to the
 *    ancestor named by the highest position bit the step changes (ESVO), whose walk resumes at
 *    the cell holding the new position. The stack holds (first child, mask) per level: at most
 *    VX_MAX_DEPTH entries, two words each; slots and origins follow from the position.
 * 2b. Culling: before descending into a node, its packed plane and error bounds (the max error E
 *    for voxels, the drawn-plane bound of node.h for the planes a cut or auto LOD draws) are
 *    evaluated at the ends of the ray's segment in the node; if they keep every drawable cell
 *    below from crossing zero there, the walk steps over the node (vx_node_excludes_zero). The
 *    image does not change (tests/test_marcher_cull.c): the crack state such a node would have
 *    left is reproduced, with a descent to the point in the rare case it matters.
 * 3. A node at level l is final (not descended) when l reaches s->max_level or the last loaded
 *    level, when it is a pruned leaf (mask 0), or, with auto LOD, when its size 2^(D-l) is below
 *    t_entry * s->pixel_angle (ESVO's pixel-cone rule). A final node with a usable plane
 *    (VX_NODE_PLANE_OK) is drawn as its plane clipped to the node's box: n.(u - 1/2) + d is linear
 *    in t, so the crossing inside [t_entry, t_exit] is one division; no crossing means the ray goes
 *    on to the next cell. A final node without a usable plane (and every cell in blocks mode) is
 *    drawn as its box, so nothing vanishes.
 * 4. At a voxel the trilinear interpolant of the 8 corner values restricted to the ray is a cubic in
 *    t on [t_entry, t_exit] (Parker et al. 1998; Marmitt, Kleer, Wald, Friedrich & Slusallek, "Fast
 *    and accurate ray-voxel intersection techniques for iso-surface ray tracing", 2004). Its first
 *    root is isolated exactly: the roots of the derivative (a quadratic) split the segment into at
 *    most three monotone pieces; the first piece whose end values differ in sign holds the first
 *    root, which bisection and a final secant step refine to float precision. Before that, the
 *    cubic's Bernstein coefficients on the segment reject the voxels it has no zero in. Crossings
 *    count in both directions (+ to - and - to +), so hits are always zeros of the field, also where
 *    a mesh's winding flips the sign or the grid boundary cuts the solid. No fixed step size, so a
 *    feature thinner than any step cannot be tunnelled through: if the cubic changes sign in the
 *    voxel the crossing is found. The normal is the normalised gradient of the trilinear field at the
 *    hit.
 *    Inside the walk a voxel is only asked whether it holds a root (vx_cubic_first_bracket); the
 *    refinement and the normal run once after the walk, where the GPU rejoins the warp's lanes
 *    (VX_WARP_JOIN), instead of a few lanes at a time inside it.
 * 5. Shading: Lambert with s->light plus ambient, a gamma of 2 to 8 bits; background constant.
 *
 * GPU notes: a node is fetched as one 16-byte struct copy (one 128-bit load), a voxel as one
 * 8-byte copy; no recursion; all small arrays are indexed by constants after unrolling except the
 * traversal stack. */
#ifndef VOXLOD_MARCHER_TRACE_H
#define VOXLOD_MARCHER_TRACE_H

#include "svo/node.h"

#include <string.h> /* memcpy: float <-> bits */

typedef struct vx_trace_scene {
  const vx_node *nodes;   /* host or device pointer: levels 0 .. levels_loaded-1 (l < depth) */
  const vx_voxel *voxels; /* NULL when levels_loaded <= depth */
  uint32_t depth;         /* finest level D */
  uint32_t levels_loaded;
  float band;             /* corner value scale: value = q * band / 127 voxels */
  int max_level;          /* cut: never descend below this level (0..depth) */
  int auto_lod;           /* 1: stop where a node's size < its distance * pixel_angle */
  float pixel_angle;      /* radians per pixel (vertical fov / height) * lod_scale */
  int shade;              /* vx_shade */
  uint32_t width, height;
  float eye[3];           /* grid space */
  float dir00[3];         /* ray direction (unnormalized) through the centre of pixel (0,0) */
  float du[3], dv[3];     /* change of direction per pixel in x (right) and y (down) */
  float light[3];         /* unit direction towards the light, grid space */
  float world_per_grid;   /* multiply a grid distance by this for world units */
  int cull;               /* 1: skip nodes whose plane bounds exclude a zero (trace.h) */
  int pruned;             /* the tree has pruned leaves (drawn as planes at any level) */
  float cull_eps;         /* float round-off allowance of that test, field units (voxels) */
} vx_trace_scene;

typedef struct vx_pixel {
  uint8_t rgb[3];
  float depth;     /* world units along the ray, INFINITY on a miss */
  uint32_t visits; /* nodes fetched */
} vx_pixel;

/* Renders one pixel (px right, py down from the top-left). */
VX_HD void vx_render_pixel(const vx_trace_scene *s, uint32_t px, uint32_t py, vx_pixel *out);

/* ==== implementation ========================================================================= */

#if defined(__CUDACC__)
#define VX_UNROLL _Pragma("unroll")
#else
#define VX_UNROLL
#endif

/* Warp convergence on the GPU (nothing on the CPU): VX_WARP_LANES() names the lanes that are
 * here together, VX_WARP_JOIN(m) waits until all of them have arrived. */
#if defined(__CUDA_ARCH__)
#define VX_WARP_LANES() __activemask()
#define VX_WARP_JOIN(m) __syncwarp(m)
#else
#define VX_WARP_LANES() 0u
#define VX_WARP_JOIN(m) ((void)(m))
#endif

/* One node: one 16-byte load; on the GPU through the read-only data path (PTX
 * ld.global.nc.v4.u32, SASS LDG.E.128.CONSTANT; a plain struct copy gave ld.global.v4.u32). */
VX_HD vx_node vx_fetch_node(const vx_node *p) {
#if defined(__CUDA_ARCH__)
  uint4 v = __ldg((const uint4 *)p);
  vx_node n;
  n.child = v.x;
  n.info = v.y;
  n.normal = v.z;
  n.d = __uint_as_float(v.w);
  return n;
#else
  return *p;
#endif
}

/* One voxel: one 8-byte load (read-only path on the GPU). */
VX_HD vx_voxel vx_fetch_voxel(const vx_voxel *p) {
#if defined(__CUDA_ARCH__)
  uint2 v = __ldg((const uint2 *)p);
  vx_voxel x;
  memcpy(&x, &v, sizeof x);
  return x;
#else
  return *p;
#endif
}

/* The first surface point along a ray. */
typedef struct vx_trace_hit {
  int hit;         /* 1 when the ray hit something */
  float t;         /* grid units along the unit ray direction */
  float n[3];      /* unit surface normal (field gradient, plane or box face), not flipped */
  uint32_t visits; /* nodes and voxels fetched */
} vx_trace_hit;

/* Background colour (8-bit RGB) and surface albedo (linear). */
#define VX_BG_R 34
#define VX_BG_G 38
#define VX_BG_B 46
#define VX_ALBEDO_R 0.86f
#define VX_ALBEDO_G 0.80f
#define VX_ALBEDO_B 0.72f
#define VX_AMBIENT 0.18f

VX_HD float vx_tr_min(float a, float b) { return a < b ? a : b; }
VX_HD float vx_tr_max(float a, float b) { return a > b ? a : b; }

/* 1/sqrt(x): the hardware approximation on the GPU (relative error ~1e-7); only used where a
 * margin covers it, so CPU and GPU may differ in the last bits. */
VX_HD float vx_rsqrt_approx(float x) {
#if defined(__CUDA_ARCH__)
  return rsqrtf(x);
#else
  return 1.0f / sqrtf(x);
#endif
}

/* Plane-bound culling. A node's packed plane P and its max-error bound E hold |f - P| <= E at
 * every corner sample below it (svo/lod.h), and inside a voxel f - P is the trilinear
 * interpolation of its corner differences (P is affine), so |f - P| <= E in every voxel of the
 * subtree. The planes that a render may draw below it instead (a --lod cut, auto LOD, pruned
 * leaves), each across its whole box, are within the node's drawn-plane bound B of P (node.h).
 * P is affine along the ray, so if P > m + eps at both ends of the ray's segment in the node's
 * box (or < -(m + eps) at both), m = E for voxels, B for planes, the larger when either can be
 * drawn, nothing below has a zero on that segment and the walk steps over the node. eps covers
 * the float evaluation (scene.c).
 * P along the ray: with c the node's centre and tm_i = (tx0_i + tx1_i) / 2 the t at which the ray
 * crosses the centre plane of axis i, o_i - c_i = -tm_i d_i, so
 *   P(t) = n . (o + t d - c) + d_node size = sum_i n_i d_i (t - tm_i) + d_node size,
 * from the slab t's the walk already has (d: the direction those t's describe).
 * Returns 1 for "no zero possible"; *neg is set when P is negative at the entry. */
VX_HD int vx_node_excludes_zero(const vx_node *nd, const float d[3], const float tx0[3],
                                const float tx1[3], float size, float tc0, float tc1, float eps,
                                int voxels, int planes, int *neg) {
  uint32_t code = vx_node_errmax_code(nd->info);
  /* the decoded bounds (node.h: E = 2^((code-1)/10 - 10)), E rounded up generously; code 0 (no
   * samples) and 255 (a bound beyond the code range) never cull, nor does B's code 0 (none) */
  float m = voxels ? exp2f((float)code * 0.1f - 10.1f) * 1.001f : 0.0f;
  if (planes) {
    /* node.h's drawn-plane bound, rounded up, by arithmetic (its table would be a second load) */
    uint32_t b = vx_node_bound_code(nd->info);
    float bm = b == 0u ? INFINITY : (b == 1u ? 0.0f : exp2f((float)b * 0.25f - 6.5f) * 1.001f);
    m = vx_tr_max(m, bm);
  }
  m += eps + 1e-5f * size;
  float n[3];
  vx_oct_unfold(nd->normal, n);
  float il = vx_rsqrt_approx(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
  float w0 = n[0] * il * d[0], w1 = n[1] * il * d[1], w2 = n[2] * il * d[2];
  float g0 = w0 * (tc0 - 0.5f * (tx0[0] + tx1[0])) + w1 * (tc0 - 0.5f * (tx0[1] + tx1[1])) +
             w2 * (tc0 - 0.5f * (tx0[2] + tx1[2])) + nd->d * size;
  float g1 = g0 + (w0 + w1 + w2) * (tc1 - tc0);
  *neg = g0 < 0.0f;
  return code - 1u < 254u && ((g0 > m && g1 > m) || (g0 < -m && g1 < -m));
}

/* Value of the cubic k[0] + k[1] s + k[2] s^2 + k[3] s^3 (Horner). */
VX_HD float vx_cubic_eval(const float k[4], float s) {
  return ((k[3] * s + k[2]) * s + k[1]) * s + k[0];
}

/* The trilinear field of corner values c (corner i at (i&1, i>>1&1, i>>2&1)) along the local ray
 * a + s d, as a cubic in s: f(s) = k0 + k1 s + k2 s^2 + k3 s^3. Interpolating along x, then y,
 * then z: each step maps polynomials P0, P1 to (1-a) P0 + a P1 + s d (P1 - P0). */
VX_HD void vx_trilinear_cubic(const float c[8], const float a[3], const float d[3], float k[4]) {
  float p[4][2]; /* along x: 4 lines (y,z), linear in s */
  VX_UNROLL
  for (int j = 0; j < 4; j++) {
    float c0 = c[2 * j], c1 = c[2 * j + 1];
    p[j][0] = c0 + a[0] * (c1 - c0);
    p[j][1] = d[0] * (c1 - c0);
  }
  float q[2][3]; /* along y: 2 lines (z), quadratic */
  VX_UNROLL
  for (int z = 0; z < 2; z++) {
    const float *l0 = p[2 * z], *l1 = p[2 * z + 1];
    q[z][0] = l0[0] + a[1] * (l1[0] - l0[0]);
    q[z][1] = l0[1] + a[1] * (l1[1] - l0[1]) + d[1] * (l1[0] - l0[0]);
    q[z][2] = d[1] * (l1[1] - l0[1]);
  }
  k[0] = q[0][0] + a[2] * (q[1][0] - q[0][0]);
  k[1] = q[0][1] + a[2] * (q[1][1] - q[0][1]) + d[2] * (q[1][0] - q[0][0]);
  k[2] = q[0][2] + a[2] * (q[1][2] - q[0][2]) + d[2] * (q[1][1] - q[0][1]);
  k[3] = d[2] * (q[1][2] - q[0][2]);
}

/* Gradient of the trilinear field at local point x in [0,1]^3. */
VX_HD void vx_trilinear_grad(const float c[8], const float x[3], float g[3]) {
  float wx1 = x[0], wy1 = x[1], wz1 = x[2];
  float wx0 = 1.0f - wx1, wy0 = 1.0f - wy1, wz0 = 1.0f - wz1;
  g[0] = wy0 * wz0 * (c[1] - c[0]) + wy1 * wz0 * (c[3] - c[2]) + wy0 * wz1 * (c[5] - c[4]) +
         wy1 * wz1 * (c[7] - c[6]);
  g[1] = wx0 * wz0 * (c[2] - c[0]) + wx1 * wz0 * (c[3] - c[1]) + wx0 * wz1 * (c[6] - c[4]) +
         wx1 * wz1 * (c[7] - c[5]);
  g[2] = wx0 * wy0 * (c[4] - c[0]) + wx1 * wy0 * (c[5] - c[1]) + wx0 * wy1 * (c[6] - c[2]) +
         wx1 * wy1 * (c[7] - c[3]);
}

/* The first root of the cubic k on [0, smax], isolated: returns 1 with br = {lo, hi, f(lo),
 * f(hi)}, a bracket on a monotone piece whose ends differ in sign (lo == hi: an exact zero there),
 * or 0 when the cubic has no zero on [0, smax]. The derivative's roots split [0, smax] into
 * monotone pieces; the first piece whose ends differ in sign (or touch zero) holds the first
 * root. Exact up to float rounding of the coefficients: a sign change, however narrow, is never
 * stepped over. The walk calls this per voxel; the refinement runs once per ray (below). */
VX_HD int vx_cubic_first_bracket(const float k[4], float smax, float br[4]) {
  /* derivative 3 k3 s^2 + 2 k2 s + k1 */
  float A = 3.0f * k[3], B = 2.0f * k[2], C = k[1];
  float r0 = smax, r1 = smax; /* split points in (0, smax), sorted; smax = none */
  float scale = fabsf(A) * smax * smax + fabsf(B) * smax + fabsf(C);
  if (fabsf(A) * smax * smax > 1e-7f * scale) {
    float disc = B * B - 4.0f * A * C;
    if (disc > 0.0f) {
      float sq = sqrtf(disc);
      float qq = -0.5f * (B + (B >= 0.0f ? sq : -sq));
      float x0 = qq / A, x1 = qq != 0.0f ? C / qq : x0;
      if (x0 > x1) { float tmp = x0; x0 = x1; x1 = tmp; }
      if (x0 > 0.0f && x0 < smax) r0 = x0;
      if (x1 > 0.0f && x1 < smax) { if (r0 < smax) r1 = x1; else r0 = x1; }
    }
  } else if (fabsf(B) * smax > 1e-7f * scale) {
    float x0 = -C / B;
    if (x0 > 0.0f && x0 < smax) r0 = x0;
  }
  float sa = 0.0f, fa = k[0];
  /* Any sign change counts, either way: a ray that enters the solid without crossing a stored
   * zero (through the grid boundary, or where a scan's sign is flipped) still stops at the next
   * zero of the field, never at a voxel face. */
  br[0] = br[1] = 0.0f;
  br[2] = br[3] = 0.0f;
  if (fa == 0.0f) return 1;
  VX_UNROLL
  for (int piece = 0; piece < 3; piece++) {
    float sb = piece == 0 ? r0 : (piece == 1 ? r1 : smax);
    if (sb <= sa) continue;
    float fb = vx_cubic_eval(k, sb);
    if (fb == 0.0f || (fa < 0.0f) != (fb < 0.0f)) {
      br[0] = fb == 0.0f ? sb : sa;
      br[1] = sb;
      br[2] = fb == 0.0f ? 0.0f : fa;
      br[3] = fb;
      return 1;
    }
    sa = sb;
    fa = fb;
  }
  return 0;
}

/* The root inside a bracket of vx_cubic_first_bracket: bisection on the monotone piece, 12
 * halvings leave <= 2^-12 of a voxel's segment (<= 4.3e-4 voxel), then one secant step inside
 * it: on a monotone piece the cubic is nearly linear there, so the result is within float noise
 * of the root (24 halvings before: the same to ~1e-6 voxel, twice the serial chain). */
VX_HD float vx_cubic_refine(const float k[4], const float br[4]) {
  float lo = br[0], hi = br[1], flo = br[2], fhi = br[3];
  if (lo == hi) return lo;
  for (int it = 0; it < 12; it++) {
    float mid = 0.5f * (lo + hi);
    float fm = vx_cubic_eval(k, mid);
    if (fm == 0.0f) return mid;
    if ((fm < 0.0f) == (flo < 0.0f)) { lo = mid; flo = fm; } else { hi = mid; fhi = fm; }
  }
  return lo + (hi - lo) * (flo / (flo - fhi));
}

/* First root of the cubic k on [0, smax], or a negative number when it has none there. */
VX_HD float vx_cubic_first_root(const float k[4], float smax) {
  float br[4];
  return vx_cubic_first_bracket(k, smax, br) ? vx_cubic_refine(k, br) : -1.0f;
}

/* Box face normal at the entry of a cell: the axis whose entry plane is the last one crossed.
 * tx0: entry t per axis; d: real ray direction. Inside the box at t = 0: facing the ray. */
VX_HD void vx_box_entry_normal(const float tx0[3], float tc0, const float d[3], float n[3]) {
  /* selects, not indexing: a run-time index would put tx0, d and n in GPU local memory */
  float t01 = vx_tr_max(tx0[0], tx0[1]);
  int ax1 = tx0[1] > tx0[0], ax2 = tx0[2] > t01;
  float tmax = ax2 ? tx0[2] : t01;
  if (!(tmax >= tc0)) { /* started inside: face the viewer */
    n[0] = -d[0];
    n[1] = -d[1];
    n[2] = -d[2];
    return;
  }
  int axis = ax2 ? 2 : ax1;
  n[0] = axis == 0 ? (d[0] > 0.0f ? -1.0f : 1.0f) : 0.0f;
  n[1] = axis == 1 ? (d[1] > 0.0f ? -1.0f : 1.0f) : 0.0f;
  n[2] = axis == 2 ? (d[2] > 0.0f ? -1.0f : 1.0f) : 0.0f;
}

/* Intersects a final cell with the ray on [tc0, tc1]. The cell is a voxel (level == depth) or a
 * node. cmin: the cell's real minimum corner (grid units), size: its edge. Returns 1 on a hit.
 * refine 0: only decides whether the cell is hit and sets *exit_val and *entry_val (the field
 * where the ray leaves and enters it, for the crack rule; a box's entry is +1: the rule does not
 * change a box); h is not written. refine 1: also the hit's t and normal in h.
 * The walk calls it with 0 per cell and, for the one cell that is hit, with 1 after its loop,
 * where the warp's lanes have converged (the root refinement is the longest serial chain). The
 * two calls take the same branches, so they agree on the hit. */
VX_HD int vx_trace_cell(const vx_trace_scene *s, const float o[3], const float d[3], uint32_t level,
                        const float cmin[3], float size, float tc0, float tc1, const float tx0[3],
                        const vx_node *node, const vx_voxel *vox, int crack, int refine,
                        float *exit_val, float *entry_val, vx_trace_hit *h) {
  *entry_val = 1.0f;
  if (s->shade == 1 /* VX_SHADE_BLOCKS */ ||
      (level < s->depth && !(vx_node_flags(node->info) & VX_NODE_PLANE_OK))) {
    if (refine) {
      h->t = tc0;
      vx_box_entry_normal(tx0, tc0, d, h->n);
    }
    return 1;
  }
  /* 1/size exactly: size is a power of two, so its reciprocal's exponent is the negated one
   * (bits 0x7f000000 - bits(size)); products by it are the quotients bit for bit. */
  float inv_size;
  {
    uint32_t b;
    memcpy(&b, &size, sizeof b);
    b = 0x7f000000u - b;
    memcpy(&inv_size, &b, sizeof b);
  }
  float a[3];
  VX_UNROLL
  for (int i = 0; i < 3; i++) a[i] = (o[i] + tc0 * d[i] - cmin[i]) * inv_size;
  if (level < s->depth) {
    /* plane n.(u - 1/2) + dd = 0 in node units u = (p - cmin) / size */
    float n[3];
    vx_oct_decode(node->normal, n);
    float g0 = n[0] * (a[0] - 0.5f) + n[1] * (a[1] - 0.5f) + n[2] * (a[2] - 0.5f) + node->d;
    float slope = (n[0] * d[0] + n[1] * d[1] + n[2] * d[2]) * inv_size;
    *exit_val = g0 + slope * (tc1 - tc0);
    *entry_val = g0;
    float sr;
    if (g0 == 0.0f || (crack && g0 < 0.0f)) sr = 0.0f;
    else if (slope == 0.0f) return 0;
    else sr = -g0 / slope;
    if (!(sr >= 0.0f) || tc0 + sr > tc1) return 0;
    if (!refine) return 1;
    h->t = tc0 + sr;
    h->n[0] = n[0];
    h->n[1] = n[1];
    h->n[2] = n[2];
    return 1;
  }
  /* voxel: first zero of the trilinear field along the segment. The corner values are used as
   * stored (q, not q * band / 127): the root, the normalised gradient and the sign of the exit
   * value (all the crack rule reads) do not depend on a positive scale. */
  float c[8];
  VX_UNROLL
  for (int i = 0; i < 8; i++) c[i] = (float)vox->c[i];
  float k[4];
  vx_trilinear_cubic(c, a, d, k); /* size is 1 for voxels: s is in grid units */
  float smax = tc1 - tc0;
  *entry_val = k[0];
  {
    /* Exact early out: on [0, smax] the cubic is a convex combination of its Bernstein
     * coefficients b0..b3 (convex-hull property), so if all four have one sign it has no zero
     * on the segment. Rejects ~60 % of the voxels a ray visits (those it passes without a hit)
     * before the derivative's roots. The corners' own convex hull (all 8 of one sign) never
     * fires: the voxelizer stores only voxels whose corners change sign. b3 = f(smax) is the
     * exit value. A negative segment still hits at its entry when the crack rule says so. */
    float a1 = k[1] * smax, a2 = k[2] * smax * smax, a3 = k[3] * smax * smax * smax;
    float b1 = k[0] + a1 * (1.0f / 3.0f);
    float b2 = b1 + (a1 + a2) * (1.0f / 3.0f);
    float b3 = k[0] + a1 + a2 + a3;
    int pos = k[0] > 0.0f && b1 > 0.0f && b2 > 0.0f && b3 > 0.0f;
    int neg = k[0] < 0.0f && b1 < 0.0f && b2 < 0.0f && b3 < 0.0f;
    if (pos || (neg && !crack)) {
      *exit_val = b3;
      return 0;
    }
  }
  *exit_val = vx_cubic_eval(k, smax);
  float sr = 0.0f, br[4];
  if (!(crack && k[0] < 0.0f)) {
    if (!vx_cubic_first_bracket(k, smax, br)) return 0;
    if (!refine) return 1;
    sr = vx_cubic_refine(k, br);
  }
  if (!refine) return 1;
  float x[3];
  VX_UNROLL
  for (int i = 0; i < 3; i++) x[i] = vx_tr_min(vx_tr_max(a[i] + sr * d[i], 0.0f), 1.0f);
  float g[3];
  vx_trilinear_grad(c, x, g);
  float len = sqrtf(g[0] * g[0] + g[1] * g[1] + g[2] * g[2]);
  if (len > 0.0f) {
    float il = 1.0f / len;
    h->n[0] = g[0] * il;
    h->n[1] = g[1] * il;
    h->n[2] = g[2] * il;
  } else {
    h->n[0] = -d[0];
    h->n[1] = -d[1];
    h->n[2] = -d[2];
  }
  h->t = tc0 + sr;
  return 1;
}

/* The slab t's of the mirrored cell at pos with edge S: entry and exit per axis, and the cell's
 * entry tc0 (not before 0) and exit tc1. */
VX_HD void vx_cell_slabs(const uint32_t pos[3], uint32_t S, const float inv[3], const float ob[3],
                         float tx0[3], float tx1[3], float *tc0, float *tc1) {
  float t0 = 0.0f, t1 = INFINITY;
  VX_UNROLL
  for (int i = 0; i < 3; i++) {
    tx0[i] = (float)pos[i] * inv[i] - ob[i];
    tx1[i] = (float)(pos[i] + S) * inv[i] - ob[i];
    t0 = vx_tr_max(t0, tx0[i]);
    t1 = vx_tr_min(t1, tx1[i]);
  }
  *tc0 = t0;
  *tc1 = t1;
}

/* Index of the highest set bit of x (x != 0). */
VX_HD uint32_t vx_highest_bit(uint32_t x) {
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

/* Does a cell that the walk of vx_trace_ray would draw (a final cell) hold the ray's points just
 * before t (after = 0) or just after t (after = 1)? A descent from the root along that point with
 * the walk's slab t's and final-cell rules (lmax: the deepest level drawn). Used only to settle
 * the crack rule after culling. */
VX_HD int vx_final_cell_at(const vx_trace_scene *s, const float inv[3], const float ob[3],
                           uint32_t mirror, int lmax, float t, int after, uint32_t *visits) {
  const uint32_t D = s->depth;
  uint32_t S = 1u << D, pos[3] = {0u, 0u, 0u};
  vx_node node = vx_fetch_node(&s->nodes[0]);
  (*visits)++;
  for (uint32_t cl = 1; cl <= D; cl++) {
    uint32_t mask = vx_node_mask(node.info), idx = 0;
    S >>= 1;
    float tc0 = 0.0f;
    VX_UNROLL
    for (int i = 0; i < 3; i++) {
      float tm = (float)(pos[i] + S) * inv[i] - ob[i];
      uint32_t bit = (after ? tm <= t : tm < t) ? 1u : 0u;
      idx |= bit << i;
      pos[i] += bit * S;
      tc0 = vx_tr_max(tc0, (float)pos[i] * inv[i] - ob[i]);
    }
    uint32_t slot = idx ^ mirror;
    if (!(mask >> slot & 1u)) return 0;
    if (cl == D) return 1; /* a voxel */
    node = vx_fetch_node(&s->nodes[vx_child_index(node.child, mask, slot)]);
    (*visits)++;
    if (vx_node_mask(node.info) == 0 || (int)cl >= lmax ||
        (s->auto_lod && (float)S < tc0 * s->pixel_angle))
      return 1;
  }
  return 0;
}

/* Traces a ray in grid space: origin o, unit direction d. Fills h; returns h->hit. */
VX_HD int vx_trace_ray(const vx_trace_scene *s, const float o[3], const float d_in[3],
                       vx_trace_hit *h) {
  const uint32_t D = s->depth;
  const uint32_t R = 1u << D;
  const float Rf = (float)R;
  h->hit = 0;
  h->t = INFINITY;
  h->n[0] = h->n[1] = h->n[2] = 0.0f;
  h->visits = 0;

  /* mirror into the positive octant; d: the direction with components under 1e-12 raised to
   * +-1e-12, the ray the slab t's below describe */
  uint32_t mirror = 0;
  float d[3], inv[3], ob[3]; /* a plane P of the mirrored grid is crossed at t = P * inv - ob */
  VX_UNROLL
  for (int i = 0; i < 3; i++) {
    float di = d_in[i], oi = o[i];
    if (di < 0.0f) {
      mirror |= 1u << i;
      di = -di;
      oi = Rf - oi;
    }
    if (di < 1e-12f) di = 1e-12f;
    d[i] = (mirror >> i & 1u) ? -di : di;
    inv[i] = 1.0f / di;
    ob[i] = oi * inv[i];
  }

  /* root box */
  float tx0[3], tx1[3];
  VX_UNROLL
  for (int i = 0; i < 3; i++) {
    tx0[i] = -ob[i];
    tx1[i] = Rf * inv[i] - ob[i];
  }
  float t0 = vx_tr_max(vx_tr_max(vx_tr_max(tx0[0], tx0[1]), tx0[2]), 0.0f);
  float t1 = vx_tr_min(vx_tr_min(tx1[0], tx1[1]), tx1[2]);
  if (!(t0 <= t1)) return 0;

  /* last level to descend to */
  int lmax = s->max_level;
  if (lmax > (int)s->levels_loaded - 1) lmax = (int)s->levels_loaded - 1;
  if (lmax > (int)D) lmax = (int)D;
  if (lmax == (int)D && !s->voxels) lmax = (int)D - 1;

  vx_node node = vx_fetch_node(&s->nodes[0]);
  h->visits++;
  {
    uint32_t mask = vx_node_mask(node.info);
    if (mask == 0 || lmax <= 0 || (s->auto_lod && Rf < t0 * s->pixel_angle)) {
      float cmin[3] = {0.0f, 0.0f, 0.0f};
      float rtx0[3];
      VX_UNROLL
      for (int i = 0; i < 3; i++) rtx0[i] = tx0[i];
      float v0, v1;
      h->hit = vx_trace_cell(s, o, d, 0, cmin, Rf, t0, t1, rtx0, &node, 0, 0, 1, &v1, &v0, h);
      if (!h->hit) h->t = INFINITY;
      return h->hit;
    }
  }
  /* what a culled node could have drawn below it: voxels (full detail, auto LOD), planes (a
   * cut, auto LOD, pruned leaves) */
  const int voxels_drawn = lmax == (int)D;
  const int planes_drawn = lmax < (int)D || s->auto_lod || s->pruned;

  /* State: the node at level l whose children we walk (child, mask), the current child's
   * mirrored slot idx, origin pos (mirrored grid units) and size S = 2^(D-l-1). The stack holds
   * the (child, mask) of the nodes above; a popped cell's slot and origin follow from pos. */
  uint32_t stk_child[VX_MAX_DEPTH], stk_mask[VX_MAX_DEPTH];
  uint32_t child = node.child, mask = vx_node_mask(node.info);
  uint32_t l = 0;
  uint32_t S = R >> 1;
  uint32_t pos[3], idx = 0;
  VX_UNROLL
  for (int i = 0; i < 3; i++) {
    float tm = (float)S * inv[i] - ob[i];
    uint32_t bit = tm <= t0 ? 1u : 0u;
    idx |= bit << i;
    pos[i] = bit * S;
  }

  /* exit of the last final cell and the field there; +INFINITY: the exit of a node culled as
   * positive, whose cells' exit values are unknown but positive */
  float prev_t1 = -1.0f, prev_v1 = 0.0f;
  int hit = 0, hit_crack = 0; /* the cell being visited is hit (crack rule or not) */
  const uint32_t lanes = VX_WARP_LANES();
  for (uint32_t iter = 0; iter < (1u << 26); iter++) {
    float Sf = (float)S, tc0, tc1;
    vx_cell_slabs(pos, S, inv, ob, tx0, tx1, &tc0, &tc1);
    uint32_t slot = idx ^ mirror;
    if ((mask >> slot & 1u) && tc0 <= tc1) {
      uint32_t ci = vx_child_index(child, mask, slot);
      uint32_t cl = l + 1; /* the cell's level */
      int final_cell = 1, culled = 0;
      if (cl < D) {
        node = vx_fetch_node(&s->nodes[ci]); /* one 16-byte load */
        h->visits++;
        uint32_t cmask = vx_node_mask(node.info);
        final_cell = cmask == 0 || (int)cl >= lmax || (s->auto_lod && Sf < tc0 * s->pixel_angle);
        if (!final_cell && s->cull) {
          /* Plane-bound culling: nothing drawn below has a zero on this segment, so step over
           * the node. Kept when the crack rule could fire at its entry (a negative node right
           * after a final cell left positive). With auto LOD a node below is drawn as a plane
           * when its size < t * pixel_angle, and t <= tc1 below this node: no planes while
           * tc1 * pixel_angle <= 2 in a tree without pruned leaves. */
          int planes = planes_drawn && !(s->auto_lod && !s->pruned && voxels_drawn &&
                                         tc1 * s->pixel_angle <= 2.0f);
          int neg = 0;
          if (vx_node_excludes_zero(&node, d, tx0, tx1, Sf, tc0, tc1, s->cull_eps, voxels_drawn,
                                    planes, &neg) &&
              !(neg && prev_v1 > 0.0f && tc0 - prev_t1 <= 1e-5f * (1.0f + tc0))) {
            culled = 1;
            /* the crack state its cells would leave: the field's sign up to the node's exit */
            prev_t1 = tc1;
            prev_v1 = neg ? -1.0f : INFINITY;
          }
        }
        if (!final_cell && !culled) {
          // PUSH: descend into the cell; its first child is the one holding the entry point.
          stk_child[l] = child;
          stk_mask[l] = mask;
          child = node.child;
          mask = cmask;
          l = cl;
          S >>= 1;
          idx = 0;
          VX_UNROLL
          for (int i = 0; i < 3; i++) {
            float tm = (float)(pos[i] + S) * inv[i] - ob[i];
            uint32_t bit = tm <= tc0 ? 1u : 0u;
            idx |= bit << i;
            pos[i] += bit * S;
          }
          continue;
        }
      }
      if (!culled) {
        /* a final cell: plane, box or voxel */
        float cmin[3];
        VX_UNROLL
        for (int i = 0; i < 3; i++)
          cmin[i] = (mirror >> i & 1u) ? Rf - (float)pos[i] - Sf : (float)pos[i];
        vx_voxel vox = {{0}};
        if (cl == D) {
          vox = vx_fetch_voxel(&s->voxels[ci]); /* one 8-byte load */
          h->visits++;
        }
        /* Crack filling: two adjacent final cells approximated by different planes (LOD cuts,
         * pruned leaves) need not meet on their common face. A ray that leaves one cell outside
         * (field > 0) and enters the adjacent one inside (< 0) passed through such a crack: it
         * hits the entry face. Finest voxels share corner values, so between two voxels this
         * fires only where the thin-feature rule re-signed one of them (voxelizer). */
        int crack = prev_v1 > 0.0f && tc0 - prev_t1 <= 1e-5f * (1.0f + tc0);
        /* After a culled node that is positive to its exit, whether a final cell of it ended
         * within the tolerance before this one (the plain walk's crack state) is unknown; it
         * only matters when this cell starts negative, rare (a sign discontinuity), and then
         * descents to the ends of that window tell (the cells there are positive: the node's
         * bound). Not seen: a final cell lying wholly inside the window, between the two. */
        int unsure = crack && prev_v1 == INFINITY;
        float v0 = 0.0f, v1 = 0.0f;
        int hc = vx_trace_cell(s, o, d, cl, cmin, Sf, tc0, tc1, tx0, &node, &vox, crack && !unsure,
                               0, &v1, &v0, h);
        if (unsure) {
          crack = v0 < 0.0f &&
                  (vx_final_cell_at(s, inv, ob, mirror, lmax, tc0, 0, &h->visits) ||
                   vx_final_cell_at(s, inv, ob, mirror, lmax, tc0 - 1e-5f * (1.0f + tc0), 1,
                                    &h->visits));
          hc |= crack; /* the crack rule hits at the entry */
        }
        if (hc) {
          hit = 1;
          hit_crack = crack;
          break;
        }
        prev_t1 = tc1;
        prev_v1 = v1;
      }
    }
    // ADVANCE: step over the cell's exit planes, within the parent when they are inside it.
    float te = vx_tr_min(vx_tr_min(tx1[0], tx1[1]), tx1[2]);
    uint32_t step = (tx1[0] <= te ? 1u : 0u) | (tx1[1] <= te ? 2u : 0u) | (tx1[2] <= te ? 4u : 0u);
    if (!(idx & step)) {
      idx |= step;
      VX_UNROLL
      for (int i = 0; i < 3; i++) pos[i] += (step >> i & 1u) * S;
      continue;
    }
    // POP (ESVO): the highest bit that the step changes in pos names the level of the first
    // ancestor whose cell the ray stays in; its walk resumes at the cell holding the new pos
    // (the chain of one-level pops reaches the same cell: a parent exits through the same planes).
    uint32_t diff = 0;
    VX_UNROLL
    for (int i = 0; i < 3; i++) {
      uint32_t np = pos[i] + (step >> i & 1u) * S;
      diff |= pos[i] ^ np;
      pos[i] = np;
    }
    uint32_t hb = vx_highest_bit(diff); /* the new cell's size is 2^hb */
    if (hb >= D) break;                  /* left the root */
    l = D - 1u - hb;
    S = 1u << hb;
    child = stk_child[l];
    mask = stk_mask[l];
    idx = 0;
    VX_UNROLL
    for (int i = 0; i < 3; i++) {
      pos[i] &= ~(S - 1u);
      idx |= (pos[i] >> hb & 1u) << i;
    }
  }
  /* The lanes that walked together leave the loop together: the compiler does not reconverge
   * them at its exit by itself (measured: the refinement below ran with 4 of 32 lanes). */
  VX_WARP_JOIN(lanes);
  if (!hit) return 0;

  /* The hit cell, once more with the root refinement and the normal: the loop's state still
   * describes it (the break left it as it was), and every lane of a warp that hits runs this
   * together after the loop instead of alone inside it. Its node or voxel is read again (a cache
   * hit, not counted in visits) rather than kept in registers through the loop. */
  {
    uint32_t ci = vx_child_index(child, mask, idx ^ mirror);
    vx_voxel vox = {{0}};
    if (l + 1 < D) node = vx_fetch_node(&s->nodes[ci]);
    else vox = vx_fetch_voxel(&s->voxels[ci]);
    float Sf = (float)S, tc0, tc1, cmin[3];
    vx_cell_slabs(pos, S, inv, ob, tx0, tx1, &tc0, &tc1);
    VX_UNROLL
    for (int i = 0; i < 3; i++) cmin[i] = (mirror >> i & 1u) ? Rf - (float)pos[i] - Sf : (float)pos[i];
    float v0, v1;
    h->hit = vx_trace_cell(s, o, d, l + 1, cmin, Sf, tc0, tc1, tx0, &node, &vox, hit_crack, 1, &v1,
                           &v0, h);
    if (!h->hit) h->t = INFINITY; /* cannot happen: the same branches as in the loop */
  }
  return h->hit;
}

/* 8-bit channel from a linear value: gamma 2 (sqrt), clamped. */
VX_HD uint8_t vx_to_srgb8(float v) {
  v = vx_tr_min(vx_tr_max(v, 0.0f), 1.0f);
  return (uint8_t)(sqrtf(v) * 255.0f + 0.5f);
}

VX_HD void vx_render_pixel(const vx_trace_scene *s, uint32_t px, uint32_t py, vx_pixel *out) {
  float d[3];
  VX_UNROLL
  for (int i = 0; i < 3; i++) d[i] = s->dir00[i] + (float)px * s->du[i] + (float)py * s->dv[i];
  float il = 1.0f / sqrtf(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
  VX_UNROLL
  for (int i = 0; i < 3; i++) d[i] *= il;
  vx_trace_hit h;
  vx_trace_ray(s, s->eye, d, &h);
  out->visits = h.visits;
  if (!h.hit) {
    out->rgb[0] = VX_BG_R;
    out->rgb[1] = VX_BG_G;
    out->rgb[2] = VX_BG_B;
    out->depth = INFINITY;
    return;
  }
  out->depth = h.t * s->world_per_grid;
  float n[3] = {h.n[0], h.n[1], h.n[2]};
  if (n[0] * d[0] + n[1] * d[1] + n[2] * d[2] > 0.0f) { /* face the viewer */
    n[0] = -n[0];
    n[1] = -n[1];
    n[2] = -n[2];
  }
  if (s->shade == 2 /* VX_SHADE_NORMALS */) {
    out->rgb[0] = (uint8_t)((n[0] * 0.5f + 0.5f) * 255.0f + 0.5f);
    out->rgb[1] = (uint8_t)((n[1] * 0.5f + 0.5f) * 255.0f + 0.5f);
    out->rgb[2] = (uint8_t)((n[2] * 0.5f + 0.5f) * 255.0f + 0.5f);
    return;
  }
  float diff = vx_tr_max(n[0] * s->light[0] + n[1] * s->light[1] + n[2] * s->light[2], 0.0f);
  float lum = VX_AMBIENT + (1.0f - VX_AMBIENT) * diff;
  out->rgb[0] = vx_to_srgb8(VX_ALBEDO_R * lum);
  out->rgb[1] = vx_to_srgb8(VX_ALBEDO_G * lum);
  out->rgb[2] = vx_to_srgb8(VX_ALBEDO_B * lum);
}

#endif
