/* SPDX-License-Identifier: Apache-2.0 */
/* mesh_export.h - triangle meshes written to files through assimp's exporter (the only file
 * besides the importer that includes assimp): the format follows the file's extension.
 *
 * .obj  Wavefront OBJ without a material file (assimp "objnomtl"): v, vn, f lines (with colours
 *       `v x y z r g b`, sRGB in 0..1: the common extension MeshLab, Blender and trimesh read)
 * .ply  binary little-endian PLY ("plyb"): vertex x y z nx ny nz (uchar red green blue alpha
 *       with colours), face lists
 * .stl  binary STL ("stlb"): one normal per triangle (the format holds no vertex normals)
 * .glb  binary glTF 2 ("glb2"): positions, normals, 32-bit indices, one default material
 *       (with colours COLOR_0, float VEC4, linear as glTF defines it)
 * and nothing else: every format offered is read back by an independent reader in the tests;
 * assimp's other exporters are refused (some crash or fail on a plain triangle mesh, others write
 * several files). What a format cannot hold is refused before anything is written, with the
 * reason: a .glb over 4 GiB (its sizes are 32-bit), an empty mesh.
 * The whole file is produced in memory, then written by the atomic writer (atomic_file.h): a
 * failed export leaves no file and an existing one untouched.
 */
#ifndef VOXLOD_FORMATS_MESH_EXPORT_H
#define VOXLOD_FORMATS_MESH_EXPORT_H

#include <stdint.h>
#include "svo/svo.h"

VX_EXTERN_C_BEGIN

typedef struct vx_mesh_data {
  const float *pos;       /* vertex_count * 3, world coordinates */
  const float *nrm;       /* vertex_count * 3 unit normals, or NULL */
  uint64_t vertex_count;
  const uint32_t *tri;    /* triangle_count * 3 indices; NULL: a soup, vertices 3k..3k+2 form
                             triangle k (identical vertices are then merged by assimp) */
  uint64_t triangle_count;
  const uint8_t *rgba;    /* vertex_count * 4 (sRGB r, g, b, linear alpha) vertex colours, or
                             NULL */
} vx_mesh_data;

/* The assimp exporter id ("plyb") and the format's extension ("ply") for format ("ply", ".PLY";
 * NULL or "": path's extension), or VX_ERR_INVALID_ARG naming the formats that are written. ext
 * may be NULL. */
vx_status vx_mesh_export_format(const char *path, const char *format, const char **id,
                                const char **ext, vx_error *err);

/* Writes m to path (see above) in format (NULL: by path's extension; needed for "-", standard
 * output). *bytes (may be NULL) receives the file's size. */
vx_status vx_mesh_write_as(const char *path, const char *format, const vx_mesh_data *m,
                           uint64_t *bytes, vx_error *err);
/* vx_mesh_write_as by path's extension. */
vx_status vx_mesh_write(const char *path, const vx_mesh_data *m, uint64_t *bytes, vx_error *err);

VX_EXTERN_C_END

#ifdef __cplusplus
#include <string>
/* A binary PLY from assimp's "plyb" exporter with colours (nv vertices of x y z, nx ny nz when
 * `normals`, then the colour; nf triangles) made to hold the uchar red green blue alpha its header
 * declares: assimp up to 5.4 writes them as floats. False when the body has neither layout. */
bool vx_ply_colors_to_bytes(std::string &ply, uint64_t nv, uint64_t nf, bool normals);
#endif

#endif
