/* mesh_import.h - any mesh file assimp reads -> vx_mesh (the only file that includes assimp).
 *
 * All meshes of the scene are taken with their node transforms applied (instances expanded),
 * polygons triangulated; points and lines are dropped and counted, as are zero-area triangles and
 * triangles with NaN/Inf coordinates. A scene with no triangle left is VX_ERR_EMPTY.
 */
#ifndef VOXLOD_FORMATS_MESH_IMPORT_H
#define VOXLOD_FORMATS_MESH_IMPORT_H

#include <stddef.h>
#include "svo/mesh.h"

VX_EXTERN_C_BEGIN

/* Reads a mesh file. Errors: VX_ERR_IO (missing, unreadable, a directory), VX_ERR_FORMAT (assimp
 * cannot read it; a gzip file), VX_ERR_EMPTY (no triangle left). *out is zeroed on failure. */
vx_status vx_mesh_import(const char *path, vx_mesh *out, vx_error *err);

/* The same from bytes in memory; hint is the format's file extension ("obj", "ply", "stl", ...)
 * or NULL. Used by the fuzz target. Files the format references (an OBJ's .mtl) are not read. */
vx_status vx_mesh_import_memory(const void *data, size_t size, const char *hint, vx_mesh *out,
                                vx_error *err);

VX_EXTERN_C_END

#endif
