/* SPDX-License-Identifier: Apache-2.0 */
/* trace.h - the per-ray function shared by the CPU renderer and the CUDA kernel.
 *
 * The interface is fixed here; the implementation lives in the parts included at the end of this
 * header, one concern each. Everything is host+device code (hostdev.h): C11 that nvcc also
 * accepts. Include this header, never a part on its own.
 *
 * Coordinates: all tracing happens in grid space (finest voxels, the tree spans [0, 2^depth]^3).
 * vx_trace_scene_init() (marcher/scene.c, host only) converts a world camera into grid space.
 *
 * Per-ray algorithm (vx_trace_ray)
 * 1. The ray is clipped to the root box [0, 2^D]^3 and mirrored into the positive octant, as in
 *    Laine & Karras, "Efficient Sparse Voxel Octrees" (ESVO, 2010), so front-to-back order is
 *    always "low half first" (trace_walk.h).
 * 2. Traversal is the parametric octree walk of Revelles, Urena & Lastra (2000) in ESVO's
 *    PUSH / ADVANCE / POP form, with a short stack of (first child, mask) per level
 *    (trace_walk.h).
 * 2b. Culling: before descending into a node, its packed plane and error bounds are evaluated at
 *    the ends of the ray's segment in the node; if nothing drawable below can cross zero there,
 *    the walk steps over the node (trace_cull.h). The image does not change
 *    (tests/test_marcher_cull.c): the crack state such a node would have left is reproduced.
 * 3. A node is final (not descended) at the LOD cut or the last loaded level, when it is a pruned
 *    leaf, or, with auto LOD, when it is smaller than its distance times the pixel angle (ESVO's
 *    pixel-cone rule). A final node is drawn as its plane clipped to its box, or as its box when
 *    it has no usable plane (and every cell in blocks mode); a voxel as the zero set of its
 *    trilinear field (trace_cell.h). Adjacent final cells whose surfaces do not meet leave a crack
 *    that the crack rule closes: a ray that leaves one cell outside and enters the next inside
 *    hits the entry face.
 * 4. At a voxel the trilinear field along the ray is a cubic whose first root is isolated exactly
 *    (Parker et al. 1998; Marmitt et al. 2004), so no feature is tunnelled through
 *    (trace_root.h). Inside the walk a voxel is only asked whether it holds a root; the
 *    refinement and the normal are computed once after the walk, where the GPU rejoins the
 *    warp's lanes.
 * 5. Colour: a tree with colour arrays (svo/color.h) gives the hit the colour of the final cell
 *    the surface was found in (a voxel's, or a final node's: its subtree's mean), read once per
 *    pixel after the walk from the cell index the walk leaves in the hit. A cell of alpha 0 (a
 *    hole: only cut-out surface) is not drawn: the walk goes on past it as past a cell without a
 *    hit (one colour read per hit cell, only when the tree has holes).
 * 6. Shading: Lambert with s->light plus ambient on the cell's albedo (sRGB decoded to linear;
 *    a constant for a grey tree), a gamma of 2 to 8 bits; or the unlit albedo; background
 *    constant (trace_shade.h).
 *
 * Parts, in include order: trace_root.h (the cubic), trace_cull.h (plane-bound culling),
 * trace_cell.h (one final cell), trace_walk.h (the octree walk), trace_shade.h (the pixel).
 *
 * GPU notes: a node is fetched as one 16-byte struct copy (one 128-bit load), a voxel as one
 * 8-byte copy, a colour as one 4-byte load (read-only path); no recursion; all small arrays are
 * indexed by constants after unrolling except the traversal stack. */
#ifndef VOXLOD_MARCHER_TRACE_H
#define VOXLOD_MARCHER_TRACE_H

#include "svo/node.h"
#include "svo/color.h"

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
  int cull;               /* 1: skip nodes whose plane bounds exclude a zero (trace_cull.h) */
  int pruned;             /* the tree has pruned leaves (drawn as planes at any level) */
  float cull_eps;         /* float round-off allowance of that test, field units (voxels) */
  /* colour (svo/color.h, packed RGBA8), parallel to nodes and voxels; NULL: grey */
  const uint32_t *node_color;
  const uint32_t *voxel_color; /* NULL also when voxels is NULL */
  int holes;              /* 1: some cell may have alpha 0 (checked per hit cell); 0: none has */
} vx_trace_scene;

typedef struct vx_pixel {
  uint8_t rgb[3];
  float depth;     /* world units along the ray, INFINITY on a miss */
  uint32_t visits; /* nodes fetched */
} vx_pixel;

/* The first surface point along a ray. */
typedef struct vx_trace_hit {
  int hit;         /* 1 when the ray hit something */
  float t;         /* grid units along the unit ray direction */
  float n[3];      /* unit surface normal (field gradient, plane or box face), not flipped */
  uint32_t visits; /* nodes and voxels fetched */
  uint32_t cell;   /* the hit's final cell: its index in nodes[] (level < depth) or voxels[] */
  uint32_t level;  /* that cell's level (depth: a voxel) */
} vx_trace_hit;

/* Traces a ray in grid space: origin o, unit direction d. Fills h; returns h->hit. */
VX_HD int vx_trace_ray(const vx_trace_scene *s, const float o[3], const float d_in[3],
                       vx_trace_hit *h);
/* The same continuing a walk that crossed other trees before (a tiled tree's tiles, along the
 * same ray parameter t): *cs (trace_cull.h) is the crack state the last one left, {-1, 0, 0}
 * before any, and on a miss the state this one leaves. */
struct vx_crack_state;
VX_HD int vx_trace_ray_cs(const vx_trace_scene *s, const float o[3], const float d_in[3],
                          vx_trace_hit *h, struct vx_crack_state *cs);

/* Renders one pixel (px right, py down from the top-left): vx_pixel_ray, vx_trace_ray from the
 * eye, vx_shade_hit. */
VX_HD void vx_render_pixel(const vx_trace_scene *s, uint32_t px, uint32_t py, vx_pixel *out);
/* The unit direction (grid space) of pixel (px, py)'s ray from s->eye. */
VX_HD void vx_pixel_ray(const vx_trace_scene *s, uint32_t px, uint32_t py, float d[3]);
/* The pixel of a traced ray of direction d: shading, depth and visits (step 6 above). */
VX_HD void vx_shade_hit(const vx_trace_scene *s, const float d[3], const vx_trace_hit *h,
                        vx_pixel *out);

/* ==== implementation ========================================================================= */

/* Loops over the 3 axes, 4 coefficients or 8 corners are unrolled on the GPU, so the small
 * arrays they index stay in registers. */
#if defined(__CUDACC__)
#define VX_UNROLL _Pragma("unroll")
#else
#define VX_UNROLL
#endif

VX_HD float vx_tr_min(float a, float b) { return a < b ? a : b; }
VX_HD float vx_tr_max(float a, float b) { return a > b ? a : b; }

/* One packed colour (read-only path on the GPU). */
VX_HD uint32_t vx_tr_fetch_color(const uint32_t *p) {
#if defined(__CUDA_ARCH__)
  return __ldg(p);
#else
  return *p;
#endif
}

/* The colour array of a final cell at `level`: node or voxel colours, NULL for a grey tree. */
VX_HD const uint32_t *vx_tr_colors(const vx_trace_scene *s, uint32_t level) {
  return level < s->depth ? s->node_color : s->voxel_color;
}

/* Whether the final cell (level, index) is a hole: alpha 0, not drawn. Only where s->holes. */
VX_HD int vx_tr_is_hole(const vx_trace_scene *s, uint32_t level, uint32_t index) {
  const uint32_t *c = vx_tr_colors(s, level);
  return c && vx_tr_fetch_color(&c[index]) >> 24 == 0u;
}

#include "marcher/trace_root.h"
#include "marcher/trace_cull.h"
#include "marcher/trace_cell.h"
#include "marcher/trace_walk.h"
#include "marcher/trace_shade.h"

#endif
