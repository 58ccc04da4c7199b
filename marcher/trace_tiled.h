/* SPDX-License-Identifier: Apache-2.0 */
/* trace_tiled.h - rays through a tiled tree (formats/svo_tiled.h): a grid of 2^K tiles per axis,
 * each an ordinary tree of depth T with its own index space, any number of its levels loaded.
 * Host and device code (hostdev.h), like trace.h, whose walk it runs inside each tile.
 *
 * Per-ray algorithm (vx_trace_tiled_ray)
 * 1. A cut at or above the tiles' roots (level <= K of the whole tree) is drawn from the top tree
 *    alone: its nodes are the whole tree's levels 0..K, so the walk of trace.h draws it as any
 *    tree cut there (s->top, depth D = K + T, K + 1 levels loaded).
 * 2. Otherwise the ray is clipped to the whole grid [0, 2^D]^3 and walks the tile grid front to
 *    back with a 3D DDA (Amanatides & Woo, "A fast voxel traversal algorithm for ray tracing",
 *    1987): cells whose tile is absent are stepped over; in a cell with a tile the walk of trace.h
 *    runs in the tile's own grid (the ray's origin moved by the cell's corner, the same ray
 *    parameter t), down to the levels of the tile that are loaded, and the first tile that is hit
 *    ends the ray. A tile with only its coarse levels loaded is drawn as the tree cut there: its
 *    nodes' planes (trace.h step 3).
 * 3. The pixel is shaded as trace.h's (vx_shade_hit), with the colours of the tile it hit (or the
 *    top tree's, step 1) where the tree is coloured.
 * Inside a tile the voxels, their fields and the walk are those of the whole tree, so at the
 * finest level the image is the whole tree's up to float rounding of the moved origin. The crack
 * rule (trace.h step 3) carries across a tile's face (vx_trace_ray_cs), except after a culled
 * node whose cells' values were unknown (settled in the joined tree by a descent in the tile just
 * left); with the pixel-cone rule nothing coarser than a tile's root is drawn.
 */
#ifndef VOXLOD_MARCHER_TRACE_TILED_H
#define VOXLOD_MARCHER_TRACE_TILED_H

#include "marcher/trace.h"

/* One tile's loaded levels (host or device pointers, as the scene's). levels 0: no tile. */
typedef struct vx_tile_ref {
  const vx_node *nodes;   /* levels 0 .. levels-1 (those < T) */
  const vx_voxel *voxels; /* NULL unless levels == T + 1 */
  const uint32_t *node_color, *voxel_color; /* parallel to them; NULL: grey */
  uint32_t levels;
  int holes;              /* some colour is a hole (alpha 0): the walk skips those cells */
} vx_tile_ref;

/* The largest tile grid drawn: 2^7 tiles per axis (a dense cell table of 2^21 entries). */
#define VX_TILED_MAX_GRID_BITS 7

typedef struct vx_tiled_scene {
  vx_trace_scene tile;      /* camera (eye in the whole grid), cut, shading of the tiles: depth T */
  vx_trace_scene top;       /* the top tree as a tree of depth D with K + 1 levels (step 1) */
  const vx_tile_ref *tiles; /* by tile index */
  const int32_t *cells;     /* per grid cell x + G (y + G z): its tile's index, -1: none */
  uint32_t grid_bits;       /* K */
  int use_top;              /* the cut is at or above the tiles' roots: draw s->top */
} vx_tiled_scene;

/* The tile cell holding coordinate x (grid units / cell edge), clamped to [0, G). */
VX_HD int vx_tiled_cell_of(float x, int G) {
  int c = (int)floorf(x);
  return c < 0 ? 0 : (c >= G ? G - 1 : c);
}

/* The scene of tile r within ts: its arrays in the tile scene's camera and cut. */
VX_HD vx_trace_scene vx_tiled_tile_scene(const vx_tiled_scene *ts, const vx_tile_ref *r) {
  vx_trace_scene ls = ts->tile;
  ls.nodes = r->nodes;
  ls.voxels = r->levels > ls.depth ? r->voxels : (const vx_voxel *)0;
  ls.node_color = r->node_color;
  ls.voxel_color = r->levels > ls.depth ? r->voxel_color : (const uint32_t *)0;
  ls.holes = r->holes;
  ls.levels_loaded = r->levels;
  return ls;
}

/* Traces a ray (origin o in the whole grid, unit direction d) through the tiles: step 2. *tile:
 * the index of the tile hit. */
VX_HD int vx_trace_tiled_ray(const vx_tiled_scene *ts, const float o[3], const float d[3],
                             vx_trace_hit *h, int32_t *tile) {
  const int G = 1 << ts->grid_bits;
  const float C = (float)(1u << ts->tile.depth); /* a tile's edge in voxels */
  const float W = C * (float)G;
  h->hit = 0;
  h->t = INFINITY;
  h->visits = 0;
  float inv[3], t0 = 0.0f, t1 = INFINITY;
  VX_UNROLL
  for (int i = 0; i < 3; i++) {
    inv[i] = d[i] != 0.0f ? 1.0f / d[i] : INFINITY;
    float a = (0.0f - o[i]) * inv[i], b = (W - o[i]) * inv[i];
    if (d[i] == 0.0f) { /* parallel: inside the slab or never */
      a = o[i] >= 0.0f && o[i] <= W ? -INFINITY : INFINITY;
      b = -a;
    }
    t0 = vx_tr_max(t0, vx_tr_min(a, b));
    t1 = vx_tr_min(t1, vx_tr_max(a, b));
  }
  if (!(t0 <= t1)) return 0;
  int cell[3], step[3];
  float tmax[3], tdelta[3];
  VX_UNROLL
  for (int i = 0; i < 3; i++) {
    float p = (o[i] + d[i] * t0) / C;
    cell[i] = vx_tiled_cell_of(p, G);
    step[i] = d[i] > 0.0f ? 1 : (d[i] < 0.0f ? -1 : 0);
    float next = (float)(cell[i] + (step[i] > 0 ? 1 : 0)) * C;
    tmax[i] = step[i] ? (next - o[i]) * inv[i] : INFINITY;
    tdelta[i] = step[i] ? C * fabsf(inv[i]) : INFINITY;
  }
  uint32_t visits = 0;
  vx_crack_state cs = {-1.0f, 0.0f, 0}; /* carried from tile to tile */
  for (int guard = 0; guard < 3 * G + 3; guard++) {
    int32_t k = ts->cells[cell[0] + G * (cell[1] + G * cell[2])];
    if (k >= 0) {
      vx_tile_ref r = ts->tiles[k];
      if (r.levels > 0) {
        vx_trace_scene ls = vx_tiled_tile_scene(ts, &r);
        float ol[3];
        VX_UNROLL
        for (int i = 0; i < 3; i++) ol[i] = o[i] - (float)cell[i] * C;
        /* a culled node left the field positive but its cells' values unknown: settling that
         * needs a descent in the last tile (trace_walk.h), so the crack rule stays unarmed */
        if (cs.v1 == INFINITY) cs.v1 = -1.0f;
        int hit = vx_trace_ray_cs(&ls, ol, d, h, &cs);
        visits += h->visits;
        if (hit) {
          h->visits = visits;
          *tile = k;
          return 1;
        }
      }
    }
    int a = tmax[0] < tmax[1] ? (tmax[0] < tmax[2] ? 0 : 2) : (tmax[1] < tmax[2] ? 1 : 2);
    if (!(tmax[a] <= t1)) break;
    cell[a] += step[a];
    if (cell[a] < 0 || cell[a] >= G) break;
    tmax[a] += tdelta[a];
  }
  h->hit = 0;
  h->t = INFINITY;
  h->visits = visits;
  return 0;
}

/* One pixel of a tiled tree (px right, py down from the top-left). */
VX_HD void vx_render_pixel_tiled(const vx_tiled_scene *ts, uint32_t px, uint32_t py,
                                 vx_pixel *out) {
  const vx_trace_scene *s = ts->use_top ? &ts->top : &ts->tile;
  float d[3];
  vx_pixel_ray(s, px, py, d);
  vx_trace_hit h;
  int32_t k = -1;
  if (ts->use_top)
    vx_trace_ray(&ts->top, ts->top.eye, d, &h);
  else
    vx_trace_tiled_ray(ts, ts->tile.eye, d, &h, &k);
  if (k < 0 || !ts->tiles[k].node_color) {
    vx_shade_hit(s, d, &h, out);
  } else { /* the hit tile's colours */
    const vx_trace_scene ls = vx_tiled_tile_scene(ts, &ts->tiles[k]);
    vx_shade_hit(&ls, d, &h, out);
  }
}

#endif
