/* SPDX-License-Identifier: Apache-2.0 */
/* voxlod/mesher.h - the mesher: triangle meshes out of a tree at any level of detail, what
 * `voxlod mesh` does (saving a mesh to a file: vx_mesh_save, mesh.h).
 *
 * vx_mesher_extract dual-contours the tree (Ju et al., "Dual Contouring of Hermite Data", 2002):
 * one vertex per cell of the chosen cut, placed by the cell's quadric error function (its
 * surface crossings with the field's gradient, and at coarser levels the node's least-squares
 * plane), one quad per edge of the cut whose ends differ in sign. The result is an ordinary
 * vx_mesh (mesh.h): it can be saved, read through its accessors, or converted again.
 *
 * Guarantees. On a closed input (a field whose signs are those of a closed surface) every cut
 * gives a watertight, edge-manifold mesh: each edge belongs to exactly two triangles, which
 * traverse it in opposite directions, also where cells of different sizes meet. Triangles are
 * counter-clockwise seen from outside; normals come from the field's gradient and point out.
 * On open input (holes, single sheets) the mesh is open where the field's sign changes next to a
 * cell that is not in the tree (vx_mesher_stats.open_edges counts those places). The whole tree
 * must be in memory (every level loaded, not pruned): the topology of every cut comes from the
 * surface voxels; a tiled file is meshed window by window instead (vx_tiled_file_mesh). Meshes
 * are in world coordinates.
 */
#ifndef VOXLOD_API_MESHER_H
#define VOXLOD_API_MESHER_H

#include "voxlod/base.h"
#include "voxlod/mesh.h"
#include "voxlod/tree.h"

VX_EXTERN_C_BEGIN

typedef enum vx_mesher_cut {
  VX_MESHER_FINEST = 0, /* one vertex per surface voxel: full detail */
  VX_MESHER_LEVEL = 1,  /* one vertex per node of `level` (0 = root .. depth; depth = finest) */
  VX_MESHER_ERROR = 2   /* adaptive: the coarsest nodes whose stored max-error bound is <=
                         max_error finest voxels (and whose plane is usable), voxels elsewhere:
                         flat parts get few large cells, detail keeps small ones */
} vx_mesher_cut;

typedef struct vx_mesher_opts {
  uint32_t struct_size;    /* sizeof(vx_mesher_opts), or 0 */
  vx_mesher_cut cut;       /* zero: VX_MESHER_FINEST */
  uint32_t level;          /* VX_MESHER_LEVEL: 0 .. depth */
  float max_error;         /* VX_MESHER_ERROR: finest voxels, > 0 */
  int threads;             /* 0: all cores */
  vx_progress_fn progress; /* may be NULL; a nonzero return cancels (VX_ERR_INTERRUPTED) */
  void *user;
} vx_mesher_opts;

/* Meshes tree t at the cut in opts (NULL: full detail). A level beyond the tree's depth, a
 * pruned or partially loaded tree give VX_ERR_INVALID_ARG; a cut without any surface crossing
 * (level 0 is a single cell) gives VX_ERR_EMPTY. On failure *out is NULL. */
VX_API vx_status vx_mesher_extract(const vx_tree *t, const vx_mesher_opts *opts, vx_mesh **out,
                                   vx_error *err);

typedef struct vx_mesher_stats {
  uint32_t struct_size;      /* sizeof(vx_mesher_stats), or 0 */
  uint64_t vertices, triangles;
  uint64_t cells;            /* cells of the cut that carry a vertex */
  uint32_t level_min, level_max; /* tree levels of those cells */
  uint64_t corners_shared;   /* grid points stored by two or more surface voxels */
  uint64_t corners_disputed; /* ... with different values in different voxels (the larger wins) */
  uint64_t corners_repaired; /* grid points whose sign was changed so that no sign change lies
                                next to a cell outside the tree */
  uint64_t contacts_split;   /* contacts that four triangles would have shared, split in two */
  uint64_t open_edges;       /* sign changes next to a cell outside the tree: holes (open input) */
  double sec_field, sec_vertices, sec_faces, sec_assemble, sec_total;
} vx_mesher_stats;

/* The full-detail mesh of a tiled file (tree.h) of any depth, without joining it: window by
 * window (cubes of 2 x 2 x 2 tiles, at most 16384^3, each meshing its middle half with a margin of
 * 128 voxels around it, the tiles it needs decoded and kept within 1 GiB), the vertices on the
 * windows' seams welded. opts as for vx_mesher_extract, whose cut must be VX_MESHER_FINEST (a
 * coarser cut of a tiled tree: mesh vx_tiled_file_level_tree's tree). The mesh is the one
 * vx_mesher_extract makes of the tree vx_tree_load joins (up to 16384^3), except that each window
 * decides the single-valued corner field and its sign repairs (mesher.h) from what lies within
 * its margin (the closure of the thin rule's re-signed voxels can run further along a thin part),
 * and that vertex positions near the seams come from one window's grid (float rounding); on
 * closed input it is watertight across the seams. Its statistics count each window's own grid
 * points and edges and the mesh's cells and split contacts: the joined tree's counts.
 * Memory: the mesh (about 60 bytes a triangle, its soup included), one window and its tiles.
 * Refused before the work (VX_ERR_LIMIT) when the mesh would take more than the file's read
 * mem_limit (vx_tiled_file_open; 0: 80% of physical memory) at 2 triangles a surface voxel, or
 * more than 2^32 triangles; and when it ends up with more than 2^32 vertices or triangles. Tiles
 * narrower than 16 voxels give VX_ERR_INVALID_ARG. One handle is used by one thread at a time. */
VX_API vx_status vx_tiled_file_mesh(vx_tiled_file *f, const vx_mesher_opts *opts, vx_mesh **out,
                                    vx_error *err);

/* Statistics of a mesh made by vx_mesher_extract (VX_ERR_INVALID_ARG for other meshes). */
VX_API vx_status vx_mesher_get_stats(const vx_mesh *m, vx_mesher_stats *st);

VX_EXTERN_C_END

#endif
