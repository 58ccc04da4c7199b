/* SPDX-License-Identifier: Apache-2.0 */
/* voxlod/mesh.h - triangle meshes: loaded from any file assimp reads, made from your arrays or
 * by the mesher (mesher.h); read through accessors, saved to files. */
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
 * memory limits, so a file that makes it loop, crash or balloon costs an error, not the caller
 * (a binary STL or PLY of 64 MiB or more of plain triangles is read by voxlod's own streaming
 * reader instead, in this process, within the same limits).
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

/* Per-vertex colours for a mesh made by vx_mesh_from_arrays: vertex_count entries (the count the
 * mesh was made with) of `channels` bytes each (3: RGB, 4: RGBA; sRGB-encoded colour, linear
 * alpha). They replace any colour the mesh had; a conversion then gives a coloured tree. */
VX_API vx_status vx_mesh_set_vertex_colors(vx_mesh *m, const uint8_t *colors, uint64_t vertex_count,
                                           uint32_t channels, vx_error *err);

/* What the load had to tell the user without failing (a texture that could not be read and the
 * material colour used instead, ...), one line each; "" when nothing. Valid while m lives. */
VX_API const char *vx_mesh_notes(const vx_mesh *m);

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
  uint32_t has_color;            /* 1: the triangles carry colour (textures, vertex or material
                                    colours) */
  uint32_t materials;            /* materials in the colour table */
  uint32_t textures;             /* textures decoded */
} vx_mesh_info;

VX_API vx_status vx_mesh_get_info(const vx_mesh *m, vx_mesh_info *info);

/* Read-only arrays, valid while m lives. Meshes from vx_mesher_extract (mesher.h) are indexed:
 * *count vertices (xyz float triples, world coordinates), as many unit normals, and *count
 * triangles (index triples). Meshes loaded from files or made from arrays are triangle soups:
 * the vertices are 3 per triangle, vx_mesh_indices returns NULL (with *count the triangle count)
 * and vx_mesh_normals NULL. */
VX_API const float *vx_mesh_vertices(const vx_mesh *m, uint64_t *count);
VX_API const float *vx_mesh_normals(const vx_mesh *m, uint64_t *count);
VX_API const uint32_t *vx_mesh_indices(const vx_mesh *m, uint64_t *count);
/* Per-vertex colours of a mesh made by vx_mesher_extract from a coloured tree: *count vertices
 * (as vx_mesh_vertices) of 4 bytes, sRGB r, g, b and linear alpha, the colour of the tree's cell
 * the vertex was placed in. NULL (with *count 0) for other meshes. vx_mesh_save writes them
 * (PLY, GLB and OBJ; STL holds no colour). */
VX_API const uint8_t *vx_mesh_colors(const vx_mesh *m, uint64_t *count);

/* Writes m to path through assimp's exporter, the format chosen by the extension (any case):
 * .obj (no material file), .ply (binary), .stl (binary) or .glb (binary glTF 2); every other
 * extension is refused with a message naming these (each is read back by an independent reader
 * in the tests; .gltf would write a second file). Atomic, by the rules of files.h. Also refused:
 * a .glb over 4 GiB (VX_ERR_LIMIT), an empty mesh (VX_ERR_EMPTY). */
VX_API vx_status vx_mesh_save(const vx_mesh *m, const char *path, vx_error *err);

/* vx_mesh_save with the format named ("obj", "ply", "stl", "glb"; NULL: by the extension), for
 * outputs without one: "-" (standard output), a device, a FIFO. */
VX_API vx_status vx_mesh_save_as(const vx_mesh *m, const char *path, const char *format,
                                 vx_error *err);

/* Checks, before any work, that vx_mesh_save can write path: its extension names a format it
 * writes, and the output rules of files.h hold (none of the n input paths, a writable place). */
VX_API vx_status vx_mesh_check_path(const char *path, const char *const *inputs, size_t n,
                                    vx_error *err);
/* The same for vx_mesh_save_as (format NULL: by the extension). */
VX_API vx_status vx_mesh_check_path_as(const char *path, const char *format,
                                       const char *const *inputs, size_t n, vx_error *err);

VX_EXTERN_C_END

#endif
