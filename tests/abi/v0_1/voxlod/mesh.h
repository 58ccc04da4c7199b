/* SPDX-License-Identifier: Apache-2.0 */
/* voxlod/mesh.h - triangle meshes: loaded from any file assimp reads, or made from your arrays. */
#ifndef VOXLOD_MESH_H
#define VOXLOD_MESH_H

#include "voxlod/base.h"

VX_EXTERN_C_BEGIN

typedef struct vx_mesh vx_mesh;

typedef struct vx_mesh_load_opts {
  uint32_t struct_size; /* sizeof(vx_mesh_load_opts), or 0 */
  double timeout_s;     /* give up after this many seconds; 0: 300; < 0: never */
  uint64_t mem_limit;   /* bytes the import may use; 0: 80% of physical memory */
} vx_mesh_load_opts;

/* Reads every mesh of a scene file (OBJ, PLY, STL, glTF/GLB, FBX, DAE, 3DS, OFF, 3MF, ...) with its
 * node transforms, polygons triangulated. Points, lines, zero-area and non-finite triangles are
 * dropped and counted (vx_mesh_info). The importer runs in a child process under the time and
 * memory limits, so a file that makes it loop, crash or balloon costs an error, not the caller.
 * Errors: VX_ERR_IO (missing, unreadable), VX_ERR_FORMAT (not a mesh assimp reads),
 * VX_ERR_CORRUPT (a header that promises more than the file holds), VX_ERR_EMPTY (no triangle
 * left), VX_ERR_LIMIT (over the memory limit). */
VX_API vx_status vx_mesh_load(const char *path, const vx_mesh_load_opts *opts, vx_mesh **out,
                              vx_error *err);

/* A mesh from arrays: vertex_count xyz triples (float32) and triangle_count index triples.
 * indices may be NULL: then the vertices are a triangle soup, 3 per triangle (vertex_count =
 * 3 * triangle_count). Indices >= vertex_count give VX_ERR_INVALID_ARG; degenerate and
 * non-finite triangles are dropped and counted. The arrays are copied. */
VX_API vx_status vx_mesh_from_arrays(const float *vertices, uint64_t vertex_count,
                                     const uint32_t *indices, uint64_t triangle_count,
                                     vx_mesh **out, vx_error *err);

VX_API void vx_mesh_free(vx_mesh *m);

typedef struct vx_mesh_info {
  uint32_t struct_size;          /* sizeof(vx_mesh_info), or 0 */
  uint64_t triangles;            /* triangles kept */
  uint32_t meshes;               /* meshes in the scene (instances counted) */
  double bbox_min[3], bbox_max[3];
  uint64_t skipped_degenerate;   /* zero-area triangles dropped */
  uint64_t skipped_nonfinite;    /* triangles with a NaN or infinite coordinate dropped */
  uint64_t skipped_nontriangle;  /* points and lines dropped */
  double load_seconds;           /* vx_mesh_load's wall time */
} vx_mesh_info;

VX_API vx_status vx_mesh_get_info(const vx_mesh *m, vx_mesh_info *info);

VX_EXTERN_C_END

#endif
