/* SPDX-License-Identifier: Apache-2.0 */
/* mesher.h - triangle meshes out of an octree at any level of detail, by dual contouring.
 *
 * Contract
 * - Input: a whole vx_octree (every level loaded, not pruned): its surface voxels carry the
 *   signed distance at their corners, its nodes a least-squares plane and its error (node.h,
 *   lod.h). Output: an indexed triangle mesh in world coordinates with one unit normal per
 *   vertex, wound counter-clockwise seen from outside (normals point to positive values).
 * - The cut: every surface voxel (finest), every node of one level, or the adaptive cut (the
 *   coarsest nodes whose stored max-error bound is <= E finest voxels, with a usable plane, and
 *   whose emitted geometry is checked to lie within E of the full-detail mesh and it within E of
 *   that geometry, dc_bound.c; nodes that fail are split until it holds).
 *   Each cell of the cut gets one vertex (two or more only where a contact between two cells
 *   would otherwise be shared by four triangles: see "Manifold" in dc_mesh.c).
 * - Topology comes from the finest level whatever the cut: a cut cell's corner signs are the
 *   finest field's at those grid points, so meshes at different cuts of one tree are
 *   consistent, and adjacent cells of different sizes share their edges (no cracks).
 * - Shared corners: a grid point shared by several voxels may carry different values in them
 *   (the thin-feature rule re-signs single voxels, voxelizer/field.c). The mesher uses one value
 *   per grid point (dc_field.c): the largest stored there ("outside wins"), re-signed voxels
 *   undone as a whole, and signs that change next to empty space made to agree with their
 *   neighbours there, so every grid edge has one crossing and one sign pair for every cell that
 *   shares it, and every sign change has all four cells around it in the tree.
 * - Guarantees: on closed input the mesh is watertight and edge-manifold at every cut: every
 *   edge is shared by exactly two triangles that traverse it in opposite directions. Where the
 *   field's sign changes next to a cell that is not in the tree (open input: the winding
 *   number's membrane over a hole runs outside the surface voxels), that crossing has no
 *   face: the mesh is open there, and vx_dc_stats.open_edges counts such crossings.
 * - Colour: on a coloured tree (node_color / voxel_color set) every vertex carries the colour of
 *   the cut cell it was placed in (a node's colour at a coarse cut: its subtree's mean), a vertex
 *   that splits a contact the mean in linear light of the two cells'. Faces around a cell whose
 *   alpha is 0 (its surface is entirely cut out) are dropped: such cells are not meshed, and the
 *   mesh is open around them. A grey tree gives exactly the mesh it gave before colour existed.
 * - Never prints; uses all cores through vx_parallel; every allocation through vx_malloc.
 *   Deterministic: the same tree and options give the same mesh for any number of threads.
 */
#ifndef VOXLOD_MESHER_H
#define VOXLOD_MESHER_H

#include <stdint.h>
#include "svo/svo.h"

VX_EXTERN_C_BEGIN

#define VX_DC_FINEST 0 /* one vertex per surface voxel */
#define VX_DC_LEVEL 1  /* one vertex per node of `level` (level == depth: the finest) */
#define VX_DC_ERROR 2  /* the adaptive cut within `max_error` finest voxels of the finest */

typedef struct vx_dc_opts {
  int cut;                 /* VX_DC_FINEST, VX_DC_LEVEL or VX_DC_ERROR */
  uint32_t level;          /* VX_DC_LEVEL: 0 .. depth */
  float max_error;         /* VX_DC_ERROR: > 0, finest voxels */
  int threads;             /* 0: all cores */
  vx_progress_fn progress; /* may be NULL; a nonzero return cancels (VX_ERR_INTERRUPTED) */
  void *user;
  /* A part of a larger tree (a window of a tiled one, lib/tiled_mesh.c), finest cut only: the
   * faces whose minimal edge's lower end lies in [own_lo, own_hi) (grid points of the tree) are
   * kept, with the vertices they use, each given a key (vx_dc_mesh.key); nodes without
   * children (parts of the window not copied) count as empty space. */
  int part;
  uint32_t own_lo[3], own_hi[3];
} vx_dc_opts;

/* A vertex's key in a part (vx_dc_opts.part): the cell it belongs to, the same in every part
 * that holds it. Bits 0..59: the minimum corner of its voxel (x, y, z: 20 bits each, grid
 * coordinates of the part); bits 60..63: 0, or for the vertex that splits a contact between two
 * voxels (mesher.h, "Manifold" in dc_mesh.c) 1 + 4 * axis + c, the corner there being the lower
 * voxel, the contact's normal axis and c which of the contact square's corners is the negative
 * one (bit 0: + along the first other axis, bit 1: along the second). */
#define VX_DC_KEY_COORD(x, y, z) \
  ((uint64_t)(x) | (uint64_t)(y) << 20 | (uint64_t)(z) << 40)

typedef struct vx_dc_stats {
  uint64_t cells;            /* cells of the cut that carry a vertex */
  uint64_t vertices;         /* vertices of the mesh (cells plus split vertices) */
  uint64_t triangles;
  uint64_t corners_shared;   /* grid points shared by two or more surface voxels */
  uint64_t corners_disputed; /* ... whose voxels store different values there */
  uint64_t corners_repaired; /* grid points whose sign the mesher changed so that no sign change
                                borders a cell outside the tree (dc_field.c) */
  uint64_t contacts_split;   /* contacts between two cells that four triangles would share,
                                split into two manifold sheets */
  uint64_t open_edges;       /* sign changes of the cut next to a cell outside the tree: holes */
  uint64_t faces_cut_out;    /* coloured trees: faces dropped because a cell of theirs has
                                alpha 0 (only cut-out surface: not meshed) */
  uint32_t level_min, level_max; /* levels of the cells that carry vertices */
  uint64_t cells_refined;    /* VX_DC_ERROR: nodes within the stored bound whose geometry was not
                                within max_error of the full-detail surface, split */
  uint32_t passes;           /* vertex and face passes (the error cut repeats them after splits) */
  double sec_field, sec_vertices, sec_faces, sec_assemble, sec_total;
} vx_dc_stats;

typedef struct vx_dc_mesh {
  float *pos;            /* vertex_count * 3, world coordinates */
  float *nrm;            /* vertex_count * 3, unit normals from the field's gradient */
  uint64_t vertex_count;
  uint32_t *tri;         /* triangle_count * 3 vertex indices */
  uint64_t triangle_count;
  uint8_t *rgba;         /* vertex_count * 4 (sRGB r, g, b, linear alpha): the colour of the cut
                            cell each vertex was placed in; NULL for a grey tree */
  uint64_t *key;         /* a part (vx_dc_opts.part): vertex_count keys (VX_DC_KEY_COORD), else
                            NULL */
} vx_dc_mesh;

/* Meshes tree t at the cut in o. stats may be NULL. On failure *out is zeroed. A cut without
 * any surface crossing (level 0: a single cell) gives an empty mesh and VX_OK. */
vx_status vx_dc_extract(const vx_octree *t, const vx_dc_opts *o, vx_dc_mesh *out,
                        vx_dc_stats *stats, vx_error *err);

void vx_dc_mesh_free(vx_dc_mesh *m);

/* The single-valued corner field the mesher uses: a copy of t's voxels (t->voxel_count of them,
 * in out) in which every grid point carries the same value in each voxel that shares it (the
 * rule above). *shared and *disputed (may be NULL) count the grid points shared by two or more
 * voxels and those whose stored values differed. t must have its voxels loaded. */
vx_status vx_dc_corner_field(const vx_octree *t, int threads, vx_voxel *out, uint64_t *shared,
                             uint64_t *disputed, vx_error *err);

VX_EXTERN_C_END

#endif
