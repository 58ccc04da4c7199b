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
 *    algorithm for octree traversal" (2000), in ESVO's PUSH / ADVANCE / POP form: cell boundaries
 *    are integer grid coordinates (exact in float up to 2^24), the entry/exit t of a cell is a max /
 *    min of (plane - o) / d per axis, the first child is chosen by comparing the entry t with the
 *    node's mid-plane t per axis, and ADVANCE steps over every axis whose exit plane is the cell's
 *    exit; when that step leaves the parent, POP. The stack holds (first child, mask | slot << 8)
 *    per level: at most VX_MAX_DEPTH entries, two words each. A popped cell's origin is the child's
 *    origin with its low bits cleared, so no coordinates are stacked.
 * 3. A node at level l is final (not descended) when l reaches s->max_level or the last loaded
 *    level, when it is a pruned leaf (mask 0), or, with auto LOD, when its size 2^(D-l) is below
 *    t_entry * s->pixel_angle (ESVO's pixel-cone rule). A final node with a usable plane
 *    (VX_NODE_PLANE_OK) is drawn as its plane clipped to the node's box: n.(u - 1/2) + d is linear
 *    in t, so the crossing inside [t_entry, t_exit] is one division; no crossing means the ray goes
 *    on to the next cell. A final node without a usable plane (and every cell in blocks mode) is
 *    drawn as its box, so nothing vanishes.
 * 4. At a voxel the trilinear interpolant of the 8 corner values restricted to the ray is a cubic
 *    in t on [t_entry, t_exit] (Parker et al. 1998; Marmitt, Kleer, Wald, Friedrich & Slusallek,
 *    "Fast and accurate ray-voxel intersection techniques for iso-surface ray tracing", 2004). Its
 *    first root is isolated exactly: the roots of the derivative (a quadratic) split the segment
 *    into at most three monotone pieces; the first piece whose end values differ in sign holds the
 *    first root, which bisection refines to float precision. Crossings count in both directions
 *    (+ to - and - to +), so hits are always zeros of the field, also where a mesh's winding
 *    flips the sign or the grid boundary cuts the solid. No fixed step size, so a feature
 *    thinner than any step cannot be tunnelled through: if the cubic changes sign in the voxel the
 *    crossing is found. The normal is the normalised gradient of the trilinear field at the hit.
 * 5. Shading: Lambert with s->light plus ambient, a gamma of 2 to 8 bits; background constant.
 *
 * GPU notes: a node is fetched as one 16-byte struct copy (one 128-bit load), a voxel as one
 * 8-byte copy; no recursion; all small arrays are indexed by constants after unrolling except the
 * traversal stack. */
#ifndef VOXLOD_MARCHER_TRACE_H
#define VOXLOD_MARCHER_TRACE_H

#include "svo/node.h"

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
} vx_trace_scene;

typedef struct vx_pixel {
  uint8_t rgb[3];
  float depth;     /* world units along the ray, INFINITY on a miss */
  uint32_t visits; /* nodes fetched */
} vx_pixel;

/* Renders one pixel (px right, py down from the top-left). */
VX_HD void vx_render_pixel(const vx_trace_scene *s, uint32_t px, uint32_t py, vx_pixel *out);

/* Where the rays of one pixel tile may start (the beam pre-pass, vx_trace_beam below).
 * t: no ray of the tile meets a cell that could be drawn before distance t (grid units along the
 * unit ray); INFINITY: no ray of the tile hits anything. level > 0: node `node` at that level,
 * cell (cell[0..2], real grid coordinates in cells of that level) holds every ray of the tile at
 * distance t (each ray checks) and is descended into by every ray that reaches it, so a ray can
 * start its walk there instead of at the root. level 0: start at the root. */
typedef struct vx_beam {
  float t;
  uint32_t node, level;
  uint32_t cell[3];
} vx_beam;

/* Beam pre-pass for the pixels [x0, x1) x [y0, y1) (ESVO's beam optimization, made exact). */
VX_HD void vx_trace_beam(const vx_trace_scene *s, uint32_t x0, uint32_t y0, uint32_t x1,
                         uint32_t y1, vx_beam *b);

/* vx_render_pixel for a pixel of the tile that b describes (b NULL: the plain walk). The image
 * and the hits are the same as vx_render_pixel's; only the node visits are fewer. */
VX_HD void vx_render_pixel_beam(const vx_trace_scene *s, uint32_t px, uint32_t py,
                                const vx_beam *b, vx_pixel *out);

/* ==== implementation ========================================================================= */

#if defined(__CUDACC__)
#define VX_UNROLL _Pragma("unroll")
#else
#define VX_UNROLL
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

/* First root of the cubic k on [0, smax], or a negative number when it has none there.
 * The derivative's roots split [0, smax] into monotone pieces; the first piece whose ends differ
 * in sign (or touch zero) holds the first root, refined by bisection. Exact up to float rounding
 * of the coefficients: a sign change, however narrow, is never stepped over. */
VX_HD float vx_cubic_first_root(const float k[4], float smax) {
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
  if (fa == 0.0f) return 0.0f;
  VX_UNROLL
  for (int piece = 0; piece < 3; piece++) {
    float sb = piece == 0 ? r0 : (piece == 1 ? r1 : smax);
    if (sb <= sa) continue;
    float fb = vx_cubic_eval(k, sb);
    if (fb == 0.0f) return sb;
    if ((fa < 0.0f) != (fb < 0.0f)) {
      /* bisection on a monotone piece: 24 halvings reach float precision on a voxel's segment */
      float lo = sa, hi = sb, flo = fa;
      for (int it = 0; it < 24; it++) {
        float mid = 0.5f * (lo + hi);
        float fm = vx_cubic_eval(k, mid);
        if (fm == 0.0f) return mid;
        if ((fm < 0.0f) == (flo < 0.0f)) { lo = mid; flo = fm; } else { hi = mid; }
      }
      return 0.5f * (lo + hi);
    }
    sa = sb;
    fa = fb;
  }
  return -1.0f;
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
 * node. cmin: the cell's real minimum corner (grid units), size: its edge. Returns 1 on a hit. */
VX_HD int vx_trace_cell(const vx_trace_scene *s, const float o[3], const float d[3], uint32_t level,
                        const float cmin[3], float size, float tc0, float tc1, const float tx0[3],
                        const vx_node *node, const vx_voxel *vox, int crack, float *exit_val,
                        vx_trace_hit *h) {
  if (s->shade == 1 /* VX_SHADE_BLOCKS */ ||
      (level < s->depth && !(vx_node_flags(node->info) & VX_NODE_PLANE_OK))) {
    h->t = tc0;
    vx_box_entry_normal(tx0, tc0, d, h->n);
    return 1;
  }
  float a[3];
  VX_UNROLL
  for (int i = 0; i < 3; i++) a[i] = (o[i] + tc0 * d[i] - cmin[i]) / size;
  if (level < s->depth) {
    /* plane n.(u - 1/2) + dd = 0 in node units u = (p - cmin) / size */
    float n[3];
    vx_oct_decode(node->normal, n);
    float g0 = n[0] * (a[0] - 0.5f) + n[1] * (a[1] - 0.5f) + n[2] * (a[2] - 0.5f) + node->d;
    float slope = (n[0] * d[0] + n[1] * d[1] + n[2] * d[2]) / size;
    *exit_val = g0 + slope * (tc1 - tc0);
    float sr;
    if (g0 == 0.0f || (crack && g0 < 0.0f)) sr = 0.0f;
    else if (slope == 0.0f) return 0;
    else sr = -g0 / slope;
    if (!(sr >= 0.0f) || tc0 + sr > tc1) return 0;
    h->t = tc0 + sr;
    h->n[0] = n[0];
    h->n[1] = n[1];
    h->n[2] = n[2];
    return 1;
  }
  /* voxel: first zero of the trilinear field along the segment */
  float c[8];
  float scl = s->band * (1.0f / 127.0f);
  VX_UNROLL
  for (int i = 0; i < 8; i++) c[i] = (float)vox->c[i] * scl;
  float k[4];
  vx_trilinear_cubic(c, a, d, k); /* size is 1 for voxels: s is in grid units */
  *exit_val = vx_cubic_eval(k, tc1 - tc0);
  float sr = (crack && k[0] < 0.0f) ? 0.0f : vx_cubic_first_root(k, tc1 - tc0);
  if (sr < 0.0f) return 0;
  float x[3];
  VX_UNROLL
  for (int i = 0; i < 3; i++) x[i] = vx_tr_min(vx_tr_max(a[i] + sr * d[i], 0.0f), 1.0f);
  float g[3];
  vx_trilinear_grad(c, x, g);
  float len = sqrtf(g[0] * g[0] + g[1] * g[1] + g[2] * g[2]);
  if (len > 0.0f) {
    h->n[0] = g[0] / len;
    h->n[1] = g[1] / len;
    h->n[2] = g[2] / len;
  } else {
    h->n[0] = -d[0];
    h->n[1] = -d[1];
    h->n[2] = -d[2];
  }
  h->t = tc0 + sr;
  return 1;
}

/* Traces a ray in grid space: origin o, unit direction d, starting as the tile start b says
 * (NULL: from the root at the root box's entry). Fills h; returns h->hit.
 * With b: cells that end before b->t are skipped (the first child of a pushed cell is the one
 * holding the point at max(its entry, tmin) instead of its entry; with tmin = the root's entry
 * that is the plain walk, bit for bit), and the walk may start at b's node N. Leaving N (a POP
 * at N's level) restarts the walk from the root at N's exit (tmin = that exit), Foley &
 * Sugerman's kd-restart: the cells after N are the ones the plain walk would have visited, in
 * the same order with the same entry and exit values, so hits and crack state carry over. */
VX_HD int vx_trace_ray_start(const vx_trace_scene *s, const float o[3], const float d[3],
                             const vx_beam *b, vx_trace_hit *h) {
  const uint32_t D = s->depth;
  const uint32_t R = 1u << D;
  const float Rf = (float)R;
  h->hit = 0;
  h->t = INFINITY;
  h->n[0] = h->n[1] = h->n[2] = 0.0f;
  h->visits = 0;

  /* mirror into the positive octant */
  uint32_t mirror = 0;
  float om[3], inv[3];
  VX_UNROLL
  for (int i = 0; i < 3; i++) {
    float di = d[i], oi = o[i];
    if (di < 0.0f) {
      mirror |= 1u << i;
      di = -di;
      oi = Rf - oi;
    }
    if (di < 1e-12f) di = 1e-12f;
    inv[i] = 1.0f / di;
    om[i] = oi;
  }

  /* root box */
  float tx0[3], tx1[3];
  VX_UNROLL
  for (int i = 0; i < 3; i++) {
    tx0[i] = (0.0f - om[i]) * inv[i];
    tx1[i] = (Rf - om[i]) * inv[i];
  }
  float t0 = vx_tr_max(vx_tr_max(vx_tr_max(tx0[0], tx0[1]), tx0[2]), 0.0f);
  float t1 = vx_tr_min(vx_tr_min(tx1[0], tx1[1]), tx1[2]);
  if (!(t0 <= t1)) return 0;
  float tmin = t0; /* cells ending before tmin are skipped */
  if (b) {
    if (!(b->t <= t1)) return 0; /* the beam saw nothing that could be drawn on this ray */
    tmin = vx_tr_max(t0, b->t);
  }

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
      float v1;
      h->hit = vx_trace_cell(s, o, d, 0, cmin, Rf, t0, t1, rtx0, &node, 0, 0, &v1, h);
      if (!h->hit) h->t = INFINITY;
      return h->hit;
    }
  }

  /* State: the node at level l whose children we walk (child, mask), the current child's
   * mirrored slot idx, origin pos (mirrored grid units) and size S = 2^(D-l-1). */
  uint32_t stk_child[VX_MAX_DEPTH], stk_info[VX_MAX_DEPTH];
  uint32_t child = node.child, mask = vx_node_mask(node.info);
  uint32_t l = 0, lbase = 0; /* lbase: the level the walk started at (POP above it: restart) */
  uint32_t S = R >> 1;
  uint32_t pos[3] = {0u, 0u, 0u}, idx = 0;
  stk_child[0] = child; /* the root, for a restart (the slot is rewritten before a PUSH reads it) */
  stk_info[0] = mask;
  if (b && b->level > 0) {
    /* start node N: the ray must be inside N's box at tmin (else: from the root) */
    uint32_t SN = R >> b->level;
    float SNf = (float)SN, tn0 = 0.0f, tn1 = INFINITY;
    uint32_t npos[3];
    VX_UNROLL
    for (int i = 0; i < 3; i++) {
      uint32_t lo = b->cell[i] * SN;
      npos[i] = (mirror >> i & 1u) ? R - lo - SN : lo;
      tn0 = vx_tr_max(tn0, ((float)npos[i] - om[i]) * inv[i]);
      tn1 = vx_tr_min(tn1, ((float)npos[i] + SNf - om[i]) * inv[i]);
    }
    if (tn0 <= tmin && tmin <= tn1) {
      node = vx_fetch_node(&s->nodes[b->node]);
      h->visits++;
      child = node.child;
      mask = vx_node_mask(node.info);
      l = lbase = b->level;
      S = SN >> 1;
      VX_UNROLL
      for (int i = 0; i < 3; i++) pos[i] = npos[i];
    }
  }
  VX_UNROLL
  for (int i = 0; i < 3; i++) {
    float tm = ((float)(pos[i] + S) - om[i]) * inv[i];
    uint32_t bit = tm <= tmin ? 1u : 0u;
    idx |= bit << i;
    pos[i] += bit * S;
  }

  float prev_t1 = -1.0f, prev_v1 = 0.0f; /* exit of the last final cell, and the field there */
  for (uint32_t iter = 0; iter < (1u << 26); iter++) {
    float Sf = (float)S;
    float tc0 = 0.0f, tc1 = INFINITY;
    VX_UNROLL
    for (int i = 0; i < 3; i++) {
      tx0[i] = ((float)pos[i] - om[i]) * inv[i];
      tx1[i] = ((float)pos[i] + Sf - om[i]) * inv[i];
      tc0 = vx_tr_max(tc0, tx0[i]);
      tc1 = vx_tr_min(tc1, tx1[i]);
    }
    uint32_t slot = idx ^ mirror;
    if ((mask >> slot & 1u) && tc0 <= tc1) {
      uint32_t ci = vx_child_index(child, mask, slot);
      uint32_t cl = l + 1; /* the cell's level */
      int final_cell = 1;
      if (cl < D) {
        node = vx_fetch_node(&s->nodes[ci]); /* one 16-byte load */
        h->visits++;
        uint32_t cmask = vx_node_mask(node.info);
        final_cell = cmask == 0 || (int)cl >= lmax || (s->auto_lod && Sf < tc0 * s->pixel_angle);
        if (!final_cell) {
          // PUSH: descend into the cell; its first child is the one holding the entry point.
          stk_child[l] = child;
          stk_info[l] = mask | idx << 8;
          child = node.child;
          mask = cmask;
          l = cl;
          S >>= 1;
          idx = 0;
          float tp = vx_tr_max(tc0, tmin); /* == tc0 on the plain walk */
          VX_UNROLL
          for (int i = 0; i < 3; i++) {
            float tm = ((float)(pos[i] + S) - om[i]) * inv[i];
            uint32_t bit = tm <= tp ? 1u : 0u;
            idx |= bit << i;
            pos[i] += bit * S;
          }
          continue;
        }
      }
      /* a final cell: plane, box or voxel */
      float cmin[3], rtx0[3];
      VX_UNROLL
      for (int i = 0; i < 3; i++) {
        cmin[i] = (mirror >> i & 1u) ? Rf - (float)pos[i] - Sf : (float)pos[i];
        rtx0[i] = tx0[i];
      }
      vx_voxel vox;
      if (cl == D) {
        vox = vx_fetch_voxel(&s->voxels[ci]); /* one 8-byte load */
        h->visits++;
      }
      /* Crack filling: two adjacent final cells approximated by different planes (LOD cuts,
       * pruned leaves) need not meet on their common face. A ray that leaves one cell outside
       * (field > 0) and enters the adjacent one inside (< 0) passed through such a crack: it hits
       * the entry face. Finest voxels share corner values, so there the field is continuous and
       * this never fires between two voxels. */
      int crack = prev_v1 > 0.0f && tc0 - prev_t1 <= 1e-5f * (1.0f + tc0);
      float v1 = 0.0f;
      if (vx_trace_cell(s, o, d, cl, cmin, Sf, tc0, tc1, rtx0, &node, &vox, crack, &v1, h)) {
        h->hit = 1;
        return 1;
      }
      prev_t1 = tc1;
      prev_v1 = v1;
    }
    // ADVANCE: step over the cell's exit planes; when that leaves the parent, POP first.
    for (;;) {
      float te = vx_tr_min(vx_tr_min(tx1[0], tx1[1]), tx1[2]);
      uint32_t step = (tx1[0] <= te ? 1u : 0u) | (tx1[1] <= te ? 2u : 0u) | (tx1[2] <= te ? 4u : 0u);
      if (!(idx & step)) {
        idx |= step;
        VX_UNROLL
        for (int i = 0; i < 3; i++) pos[i] += (step >> i & 1u) * S;
        break;
      }
      // POP: the current cell becomes the parent's cell; its exit is re-examined.
      if (l == lbase) {
        if (l == 0) return 0;
        // RESTART: leaving the start node N; walk on from the root at N's exit.
        tmin = te;
        l = lbase = 0;
        S = R >> 1;
        child = stk_child[0];
        mask = stk_info[0] & 0xffu;
        idx = 0;
        VX_UNROLL
        for (int i = 0; i < 3; i++) {
          float tm = ((float)S - om[i]) * inv[i];
          uint32_t bit = tm <= tmin ? 1u : 0u;
          idx |= bit << i;
          pos[i] = bit * S;
        }
        break;
      }
      l--;
      S <<= 1;
      child = stk_child[l];
      mask = stk_info[l] & 0xffu;
      idx = stk_info[l] >> 8;
      VX_UNROLL
      for (int i = 0; i < 3; i++) {
        pos[i] &= ~(S - 1u);
        tx1[i] = ((float)pos[i] + (float)S - om[i]) * inv[i];
      }
    }
  }
  return 0;
}

/* Traces a ray in grid space from the root: origin o, unit direction d. */
VX_HD int vx_trace_ray(const vx_trace_scene *s, const float o[3], const float d[3],
                       vx_trace_hit *h) {
  return vx_trace_ray_start(s, o, d, (const vx_beam *)0, h);
}

/* ---- beam pre-pass ----------------------------------------------------------------------------
 * ESVO's beam optimization (Laine & Karras 2010, section 4.4), made conservative so that no ray
 * loses or changes its hit. All rays of a tile leave the eye; the central ray c goes through the
 * tile's centre and every tile ray is within the angle th of it (th: the largest angle to the
 * rays through the tile's corner pixels). A point P on a tile ray at distance t is then within
 * 2 t sin(th/2) <= t th of c(t), the central ray's point at the same distance. So if P lies in a
 * box B, c(t) lies in B grown by rho = th * maxdist(eye, B) on every side, and c enters that
 * grown box at some t' <= t. The pass walks the existing nodes depth first, nearest child first,
 * keeps the smallest entry t' of a grown box it stops at, and skips any node whose grown box is
 * entered after that (a child's grown box lies inside its parent's). It stops at a node that a
 * tile ray might draw (mask 0, the --lod cut, auto LOD at any distance up to maxdist), at level
 * D-1 (a node's box holds its voxels), or where the node is smaller than the cone (size <= rho:
 * going deeper would not give a much later start). The smallest t' is a lower bound of every
 * tile ray's first drawable cell, hence of its hit and of the crack-filling state (which only
 * final cells change): the rays may skip every cell that ends before it.
 * Start node: the tile rays' points at t lie in a ball of radius t th about c(t); the pass then
 * descends from the root while one child holds that ball and the ball of c(t + ahead) (the part
 * of the rays where the surface is expected), down to the deepest node that every tile ray
 * pushes into (existing, mask != 0, above the cut, not final by auto LOD at distance t). A ray
 * then checks that it is inside that node at t and starts there (vx_trace_ray_start). */

#define VX_BEAM_STACK (7 * VX_MAX_DEPTH + 1)
#define VX_BEAM_MAX_VISITS 512u
#ifndef VX_BEAM_AHEAD
#define VX_BEAM_AHEAD 1.0f /* the start node holds the rays from t to t + this x (cone radius + 1) */
#endif

/* Unit direction of the ray through pixel coordinates (x, y) (fractional: tile centres). */
VX_HD void vx_pixel_dir(const vx_trace_scene *s, float x, float y, float d[3]) {
  VX_UNROLL
  for (int i = 0; i < 3; i++) d[i] = s->dir00[i] + x * s->du[i] + y * s->dv[i];
  float len = sqrtf(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
  VX_UNROLL
  for (int i = 0; i < 3; i++) d[i] /= len;
}

/* Angle between unit c and the ray through pixel (x, y). */
VX_HD float vx_beam_angle(const vx_trace_scene *s, const float c[3], float x, float y) {
  float d[3];
  vx_pixel_dir(s, x, y, d);
  float cx = c[1] * d[2] - c[2] * d[1], cy = c[2] * d[0] - c[0] * d[2],
        cz = c[0] * d[1] - c[1] * d[0];
  return atan2f(sqrtf(cx * cx + cy * cy + cz * cz), c[0] * d[0] + c[1] * d[1] + c[2] * d[2]);
}

VX_HD void vx_trace_beam(const vx_trace_scene *s, uint32_t x0, uint32_t y0, uint32_t x1,
                         uint32_t y1, vx_beam *b) {
  const uint32_t D = s->depth;
  const uint32_t R = 1u << D;
  b->t = 0.0f; /* the plain start, whenever the pass cannot say more */
  b->node = 0;
  b->level = 0;
  b->cell[0] = b->cell[1] = b->cell[2] = 0;
  int lmax = s->max_level;
  if (lmax > (int)s->levels_loaded - 1) lmax = (int)s->levels_loaded - 1;
  if (lmax > (int)D) lmax = (int)D;
  if (lmax == (int)D && !s->voxels) lmax = (int)D - 1;
  if (lmax <= 0 || x1 <= x0 || y1 <= y0) return;
  float c[3];
  vx_pixel_dir(s, 0.5f * (float)(x0 + x1 - 1), 0.5f * (float)(y0 + y1 - 1), c);
  float th = vx_tr_max(vx_tr_max(vx_beam_angle(s, c, (float)x0, (float)y0),
                                 vx_beam_angle(s, c, (float)(x1 - 1), (float)y0)),
                       vx_tr_max(vx_beam_angle(s, c, (float)x0, (float)(y1 - 1)),
                                 vx_beam_angle(s, c, (float)(x1 - 1), (float)(y1 - 1))));
  /* margins: float rounding of the rays' directions, entries and distances */
  const float k = th * 1.001f + 1e-5f;
  float inv[3];
  VX_UNROLL
  for (int i = 0; i < 3; i++) {
    float ci = fabsf(c[i]) < 1e-12f ? (c[i] < 0.0f ? -1e-12f : 1e-12f) : c[i];
    inv[i] = 1.0f / ci;
  }
  const float *e = s->eye;

  uint32_t stk_node[VX_BEAM_STACK];
  uint64_t stk_key[VX_BEAM_STACK]; /* x | y << 16 | z << 32 | level << 48 */
  int sp = 0;
  stk_node[sp] = 0;
  stk_key[sp++] = 0;
  float best = INFINITY;
  uint32_t visits = 0;
  uint32_t near_slot = (c[0] < 0.0f ? 1u : 0u) | (c[1] < 0.0f ? 2u : 0u) | (c[2] < 0.0f ? 4u : 0u);
  while (sp > 0) {
    sp--;
    uint32_t ni = stk_node[sp];
    uint64_t key = stk_key[sp];
    uint32_t lv = (uint32_t)(key >> 48);
    uint32_t cell[3] = {(uint32_t)key & 0xffffu, (uint32_t)(key >> 16) & 0xffffu,
                        (uint32_t)(key >> 32) & 0xffffu};
    uint32_t S = R >> lv;
    float Sf = (float)S;
    float md2 = 0.0f, bmin[3];
    VX_UNROLL
    for (int i = 0; i < 3; i++) {
      bmin[i] = (float)(cell[i] * S);
      float a = bmin[i] - e[i], z = bmin[i] + Sf - e[i];
      md2 += vx_tr_max(a * a, z * z);
    }
    float maxdist = sqrtf(md2) * 1.0001f;
    float rho = maxdist * k + 1e-3f * Sf + 1e-3f;
    float t0 = 0.0f, t1 = INFINITY;
    VX_UNROLL
    for (int i = 0; i < 3; i++) {
      float ta = (bmin[i] - rho - e[i]) * inv[i], tb = (bmin[i] + Sf + rho - e[i]) * inv[i];
      t0 = vx_tr_max(t0, vx_tr_min(ta, tb));
      t1 = vx_tr_min(t1, vx_tr_max(ta, tb));
    }
    if (!(t0 <= t1) || !(t0 < best)) continue;
    if (++visits > VX_BEAM_MAX_VISITS) return; /* too costly: the plain start */
    vx_node n = vx_fetch_node(&s->nodes[ni]);
    uint32_t mask = vx_node_mask(n.info);
    int stop = mask == 0 || (int)lv >= lmax || lv + 1 >= D || Sf <= rho ||
               (s->auto_lod && Sf < maxdist * s->pixel_angle);
    if (stop) {
      best = t0;
      continue;
    }
    /* children, the far ones first on the stack so the nearest is walked first */
    for (int j = 7; j >= 0; j--) {
      uint32_t slot = (uint32_t)j ^ near_slot;
      if (!(mask >> slot & 1u)) continue;
      stk_node[sp] = vx_child_index(n.child, mask, slot);
      stk_key[sp++] = (uint64_t)(2u * cell[0] + (slot & 1u)) |
                      (uint64_t)(2u * cell[1] + (slot >> 1 & 1u)) << 16 |
                      (uint64_t)(2u * cell[2] + (slot >> 2 & 1u)) << 32 | (uint64_t)(lv + 1) << 48;
    }
  }
  if (!(best < INFINITY)) {
    b->t = INFINITY;
    return;
  }
  float t = best - 1e-4f * best - 1e-2f;
  if (!(t > 0.0f)) return;
  b->t = t;

  /* start node: the deepest node holding the balls about c(t) and c(t + ahead) */
  float ahead = VX_BEAM_AHEAD * (t * k + 1.0f);
  float lo[3], hi[3];
  VX_UNROLL
  for (int i = 0; i < 3; i++) {
    float p0 = e[i] + t * c[i], p1 = e[i] + (t + ahead) * c[i];
    float r0 = t * k * 1.001f + 1e-2f + 1e-4f * t, r1 = (t + ahead) * k * 1.001f + 1e-2f;
    lo[i] = vx_tr_min(p0 - r0, p1 - r1);
    hi[i] = vx_tr_max(p0 + r0, p1 + r1);
    if (!(lo[i] >= 0.0f && hi[i] < (float)R)) return;
  }
  vx_node n = vx_fetch_node(&s->nodes[0]);
  uint32_t ni = 0, lv = 0, cell[3] = {0, 0, 0};
  while ((int)lv + 1 <= lmax - 1 && lv + 1 <= D - 1) {
    uint32_t Sc = R >> (lv + 1), slot = 0, cc[3];
    int same = 1;
    VX_UNROLL
    for (int i = 0; i < 3; i++) {
      uint32_t a = (uint32_t)(lo[i] / (float)Sc), z = (uint32_t)(hi[i] / (float)Sc);
      same &= a == z;
      cc[i] = a;
      slot |= (a & 1u) << i;
    }
    uint32_t mask = vx_node_mask(n.info);
    if (!same || !(mask >> slot & 1u)) break;
    uint32_t ci = vx_child_index(n.child, mask, slot);
    vx_node cn = vx_fetch_node(&s->nodes[ci]);
    if (vx_node_mask(cn.info) == 0) break;
    if (s->auto_lod && !((float)Sc > (t + ahead) * s->pixel_angle * 1.01f)) break;
    n = cn;
    ni = ci;
    lv++;
    cell[0] = cc[0];
    cell[1] = cc[1];
    cell[2] = cc[2];
  }
  b->node = ni;
  b->level = lv;
  b->cell[0] = cell[0];
  b->cell[1] = cell[1];
  b->cell[2] = cell[2];
}

/* 8-bit channel from a linear value: gamma 2 (sqrt), clamped. */
VX_HD uint8_t vx_to_srgb8(float v) {
  v = vx_tr_min(vx_tr_max(v, 0.0f), 1.0f);
  return (uint8_t)(sqrtf(v) * 255.0f + 0.5f);
}

VX_HD void vx_render_pixel_beam(const vx_trace_scene *s, uint32_t px, uint32_t py,
                                const vx_beam *b, vx_pixel *out) {
  float d[3];
  vx_pixel_dir(s, (float)px, (float)py, d);
  vx_trace_hit h;
  vx_trace_ray_start(s, s->eye, d, b, &h);
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

VX_HD void vx_render_pixel(const vx_trace_scene *s, uint32_t px, uint32_t py, vx_pixel *out) {
  vx_render_pixel_beam(s, px, py, (const vx_beam *)0, out);
}

#endif
