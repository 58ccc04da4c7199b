/* SPDX-License-Identifier: Apache-2.0 */
/* grid_cut.h - a tree's field at one level as a plain list of cells and grid points: what every
 * grid and voxel writer (NanoVDB, OpenVDB, binvox, MagicaVoxel, PLY) takes.
 *
 * The cut at level L is what a render at `--lod L` draws, as cells of 2^L per axis:
 * - L = D (the finest level): every surface voxel, its 8 corners dequantized (node.h);
 * - L < D: every node of level L, its 8 corners evaluated on its least-squares plane;
 * - at any L, a pruned leaf above L (a subtree replaced by its plane) gives the level-L cells of
 *   its box that its plane crosses (some corner <= 0 and some >= 0), corners on that plane.
 * Values are signed distances in cells of the cut (finest voxels / 2^(D-L)), negative inside,
 * untruncated (planes) or truncated at the tree's band (voxels). Cells are in Morton order.
 * Grid point (i, j, k), 0 <= i, j, k <= 2^L, is corner (i, j, k) of the cut and lies at world
 * origin + (i, j, k) * h, h = tree scale * 2^(D-L).
 *
 * Points: each corner of a cut cell is one grid point; a point shared by several cells takes the
 * mean of their values (voxels agree on shared corners, so there the value is the voxel's, bit for
 * bit; planes of neighbouring nodes differ and are averaged), clamped to +-band cells. Around them
 * the band is extended to +-band: layer by layer, a point next to the band takes the sign and the
 * magnitude + 1 of the neighbour with the least magnitude as the layer began (a chamfer distance;
 * ties: the neighbour of least Morton code), clamped at the band.
 *
 * Solid runs: a column of cells along y (x and z fixed), surface cells and the gaps between them;
 * a gap is inside when the faces of the two surface cells that bound it are both inside (the sum of
 * the 4 corner values of each face < 0). Outside the first and last surface cells of a column is
 * outside: the tree's box holds the whole surface.
 *
 * Colour: on a coloured tree every cell carries the colour of the voxel or node it comes from
 * (vx_cut.rgba); vx_cut_point_colors gives the grid points a colour (grid_color.c).
 *
 * Memory: 40 bytes per cell (44 coloured); points 12 bytes per point, made block by block on all
 * cores (grid_points.c: a hash table per block being made, the blocks' points joined at the end).
 * Every count is checked before it is allocated against what mem_limit leaves beside the
 * process's resident memory at that step (the tree, the cut). Never prints.
 */
#ifndef VOXLOD_FORMATS_GRID_CUT_H
#define VOXLOD_FORMATS_GRID_CUT_H

#include <stddef.h>
#include <stdint.h>
#include "svo/svo.h"

VX_EXTERN_C_BEGIN

typedef struct vx_cut {
  uint32_t depth;      /* D: the tree's depth (up to VX_MAX_TILED_DEPTH for a tiled tree) */
  uint32_t level;      /* L */
  uint32_t res;        /* 2^L cells per axis */
  double origin[3];    /* world position of grid point (0, 0, 0) */
  double h;            /* world units per cell */
  uint64_t count;      /* cells */
  uint64_t *codes;     /* Morton codes of the cells (level L), ascending */
  float (*field)[8];   /* corner values per cell, cells of the cut; corner c at (c&1, c>>1&1, c>>2&1) */
  uint64_t plane_cells; /* cells whose values come from planes */
  uint64_t cap;
  uint32_t *rgba;      /* per cell, a coloured tree's colour of it (svo/color.h: the voxel's, the
                          node's at level L, a pruned leaf's for the cells of its plane); NULL for
                          a grey tree */
  int fixed;           /* the arrays are the caller's, cap cells long: never grown (a part
                          with more cells fails with VX_ERR_CORRUPT) */
} vx_cut;

/* Builds the cut of a whole tree (all levels loaded) at level `level` (0 .. depth). Fails with
 * VX_ERR_LIMIT when its cells would need more than mem_limit bytes (0: the default limit),
 * VX_ERR_INTERRUPTED when progress asks to stop. */
vx_status vx_cut_build(const vx_octree *t, uint32_t level, uint64_t mem_limit,
                       vx_progress_fn progress, void *user, vx_cut *out, vx_error *err);
void vx_cut_free(vx_cut *c);

/* The same cut made of parts (a tiled tree's top tree or tiles, formats/svo_tiled.h): begin an
 * empty cut at `level` of a tree of depth `depth` (up to VX_MAX_TILED_DEPTH) and transform xf;
 * add parts in the Morton order of their roots, each a tree whose root is the level-root_level
 * cell `root` of the whole tree (root_level <= level, its depth depth - root_level, levels 0 ..
 * level - root_level loaded); end (VX_ERR_EMPTY: no cell). Cells come out as vx_cut_build's over
 * the joined tree, bit for bit. vx_cut_free frees the cut on any failure. */
void vx_cut_begin(uint32_t depth, uint32_t level, const vx_transform *xf, vx_cut *out);
vx_status vx_cut_add(vx_cut *c, const vx_octree *part, uint32_t root_level, const uint32_t root[3],
                     uint64_t mem_limit, vx_progress_fn progress, void *user, vx_error *err);
vx_status vx_cut_end(vx_cut *c, vx_error *err);

/* The grid points of a cut with their merged values (see above), values in cells clamped to
 * +-band. The band reaches past the tree's box, so points are shifted by *pad (ceil(band) + 1) on
 * each axis: keys = Morton codes of (i + pad, j + pad, k + pad), ascending. *keys and *values come
 * from vx_malloc. */
vx_status vx_cut_points(const vx_cut *c, float band, uint64_t mem_limit, uint64_t **keys,
                        float **values, uint64_t *n, uint32_t *pad, vx_error *err);

/* The colour of each of n grid points (keys and pad as vx_cut_points gives them) of a coloured
 * cut, linear r, g, b (3 floats a point, from vx_malloc): the mean in linear light of the cells
 * the point is a corner of, leaving out holes (alpha 0) unless all are; a point of the band's
 * extension the mean of its 6-neighbours' that have one, layer by layer outwards. */
vx_status vx_cut_point_colors(const vx_cut *c, const uint64_t *keys, uint64_t n, uint32_t pad,
                              uint64_t mem_limit, float **rgb, vx_error *err);

/* The index of the cell with Morton code `code` in c (binary search), or UINT64_MAX. */
uint64_t vx_cut_find(const vx_cut *c, uint64_t code);

/* The index of the first a[i] >= key in sorted a[0..n), searched outward from *hint, which it
 * becomes (galloping: a few probes when keys come in about the order of a). */
uint64_t vx_gallop(const uint64_t *a, uint64_t n, uint64_t key, uint64_t *hint);

/* A run of filled cells in one column: x, z fixed, y0 <= y < y1. */
typedef vx_status (*vx_run_fn)(void *user, uint32_t x, uint32_t z, uint32_t y0, uint32_t y1,
                               vx_error *err);

/* Calls fn for every run of filled cells, ordered by x, then z, then y (binvox's order): the
 * surface cells, and with `solid` also the inside gaps between them. Stops at the first status
 * fn returns that is not VX_OK and returns it. */
vx_status vx_cut_runs(const vx_cut *c, int solid, uint64_t mem_limit, vx_run_fn fn, void *user,
                      vx_error *err);

/* The field of cell i at its local point (u, v, w) in [0, 1]^3 (trilinear) and its gradient
 * (cells of the cut per cell). */
float vx_cut_sample(const vx_cut *c, uint64_t i, const double u[3], double grad[3]);

VX_EXTERN_C_END

#endif
