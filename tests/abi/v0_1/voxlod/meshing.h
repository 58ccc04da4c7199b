/* SPDX-License-Identifier: Apache-2.0 */
/* voxlod/meshing.h - triangle meshes out of a tree at any level of detail, and meshes written to
 * files: what `voxlod mesh` does.
 *
 * vx_mesh_from_tree dual-contours the tree (Ju et al., "Dual Contouring of Hermite Data", 2002):
 * one vertex per cell of the chosen cut, placed by the cell's quadric error function (its
 * surface crossings with the field's gradient, and at coarser levels the node's least-squares
 * plane), one quad per edge of the cut whose ends differ in sign. The result is an ordinary
 * vx_mesh: it can be saved, read through the accessors below, or converted again.
 *
 * Guarantees. On a closed input (a field whose signs are those of a closed surface) every cut
 * gives a watertight, edge-manifold mesh: each edge belongs to exactly two triangles, which
 * traverse it in opposite directions, also where cells of different sizes meet. Triangles are
 * counter-clockwise seen from outside; normals come from the field's gradient and point out.
 * On open input (holes, single sheets) the mesh is open where the field's sign changes next to a
 * cell that is not in the tree (vx_mesh_stats.open_edges counts those places). The whole tree
 * must be in memory (every level loaded, not pruned): the topology of every cut comes from the
 * surface voxels. Meshes are in world coordinates.
 */
#ifndef VOXLOD_MESHING_H
#define VOXLOD_MESHING_H

#include "voxlod/base.h"
#include "voxlod/mesh.h"
#include "voxlod/tree.h"

VX_EXTERN_C_BEGIN

typedef enum vx_mesh_cut {
  VX_MESH_FINEST = 0, /* one vertex per surface voxel: full detail */
  VX_MESH_LEVEL = 1,  /* one vertex per node of `level` (0 = root .. depth; depth = finest) */
  VX_MESH_ERROR = 2   /* adaptive: the mesh stays within max_error finest voxels of the
                         full-detail mesh (VX_MESH_FINEST), both ways: the coarsest nodes whose
                         stored max-error bound is <= max_error (and whose plane is usable),
                         kept only where the triangles they produce are checked to lie within
                         max_error of the full-detail surface and it within max_error of them
                         (else split, down to voxels). Flat parts get few large cells, detail,
                         sharp edges, thin parts and holes keep small ones */
} vx_mesh_cut;

typedef struct vx_mesh_opts {
  uint32_t struct_size;    /* sizeof(vx_mesh_opts), or 0 */
  vx_mesh_cut cut;         /* zero: VX_MESH_FINEST */
  uint32_t level;          /* VX_MESH_LEVEL: 0 .. depth */
  float max_error;         /* VX_MESH_ERROR: finest voxels, > 0: the largest distance allowed
                              between this mesh and the full-detail one */
  int threads;             /* 0: all cores */
  vx_progress_fn progress; /* may be NULL; a nonzero return cancels (VX_ERR_INTERRUPTED) */
  void *user;
} vx_mesh_opts;

/* Meshes tree t at the cut in opts (NULL: full detail). A level beyond the tree's depth, a
 * pruned or partially loaded tree give VX_ERR_INVALID_ARG; a cut without any surface crossing
 * (level 0 is a single cell) gives VX_ERR_EMPTY. On failure *out is NULL. */
VX_API vx_status vx_mesh_from_tree(const vx_tree *t, const vx_mesh_opts *opts, vx_mesh **out,
                                   vx_error *err);

typedef struct vx_mesh_stats {
  uint32_t struct_size;      /* sizeof(vx_mesh_stats), or 0 */
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
} vx_mesh_stats;

/* Statistics of a mesh made by vx_mesh_from_tree (VX_ERR_INVALID_ARG for other meshes). */
VX_API vx_status vx_mesh_get_stats(const vx_mesh *m, vx_mesh_stats *st);

/* Read-only arrays, valid while m lives. Meshes from vx_mesh_from_tree are indexed: *count
 * vertices (xyz float triples, world coordinates), as many unit normals, and *count triangles
 * (index triples). Meshes loaded from files or made from arrays are triangle soups: the vertices
 * are 3 per triangle, vx_mesh_indices returns NULL (with *count the triangle count) and
 * vx_mesh_normals NULL. */
VX_API const float *vx_mesh_vertices(const vx_mesh *m, uint64_t *count);
VX_API const float *vx_mesh_normals(const vx_mesh *m, uint64_t *count);
VX_API const uint32_t *vx_mesh_indices(const vx_mesh *m, uint64_t *count);

/* Writes m to path through assimp's exporter, the format chosen by the extension: .obj (no
 * material file), .ply (binary), .stl (binary), .glb (binary glTF 2), or another single-file
 * format assimp writes (.dae, .x3d, .3mf, .fbx, ...). Atomic, by the rules of files.h. Refused
 * with a message: an unknown extension or .gltf (two files), what a format cannot hold (.glb
 * over 4 GiB, .3ds over 65,535 vertices), an empty mesh (VX_ERR_EMPTY). */
VX_API vx_status vx_mesh_save(const vx_mesh *m, const char *path, vx_error *err);

/* Checks, before any work, that vx_mesh_save can write path: its extension names a format it
 * writes, and the output rules of files.h hold (none of the n input paths, a writable place). */
VX_API vx_status vx_mesh_check_path(const char *path, const char *const *inputs, size_t n,
                                    vx_error *err);

VX_EXTERN_C_END

#endif
