/* mesh_import.h - any mesh file assimp reads -> vx_mesh (the only file that includes assimp).
 *
 * All meshes of the scene are taken with their node transforms applied (instances expanded),
 * polygons triangulated; points and lines are dropped and counted, as are zero-area triangles and
 * triangles with NaN/Inf coordinates. A scene with no triangle left is VX_ERR_EMPTY.
 */
#ifndef VOXLOD_FORMATS_MESH_IMPORT_H
#define VOXLOD_FORMATS_MESH_IMPORT_H

#include "svo/mesh.h"

VX_EXTERN_C_BEGIN

vx_status vx_mesh_import(const char *path, vx_mesh *out, vx_error *err);

VX_EXTERN_C_END

#endif
