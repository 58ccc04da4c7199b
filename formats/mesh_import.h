/* mesh_import.h - any mesh file assimp reads -> vx_soup (the only file that includes assimp).
 *
 * All meshes of the scene are taken with their node transforms applied (instances expanded),
 * polygons triangulated; points and lines are dropped and counted, as are zero-area triangles and
 * triangles with NaN/Inf coordinates. A scene with no triangle left is VX_ERR_EMPTY.
 */
#ifndef VOXLOD_FORMATS_MESH_IMPORT_H
#define VOXLOD_FORMATS_MESH_IMPORT_H

#include <stddef.h>
#include "svo/soup.h"

VX_EXTERN_C_BEGIN

/* Reads a mesh file. Errors: VX_ERR_IO (missing, unreadable, a directory), VX_ERR_FORMAT (assimp
 * cannot read it; a gzip file), VX_ERR_EMPTY (no triangle left). *out is zeroed on failure. */
vx_status vx_soup_import(const char *path, vx_soup *out, vx_error *err);

/* The same from bytes in memory; hint is the format's file extension ("obj", "ply", "stl", ...)
 * or NULL. Used by the fuzz target. Files the format references (an OBJ's .mtl) are not read. */
vx_status vx_soup_import_memory(const void *data, size_t size, const char *hint, vx_soup *out,
                                vx_error *err);

/* vx_soup_import in a child process (fork) with a time limit, so that an importer that loops or
 * aborts on a hostile file (assimp 5.2 does both on some inputs) costs the caller an error message,
 * not a hang or a crash. The triangles come back through a pipe, bit for bit what vx_soup_import
 * gives. timeout_s <= 0: no limit. Errors: as vx_soup_import, plus VX_ERR_FORMAT when the import
 * ran out of time or the child died, VX_ERR_IO when no child process can be started. The caller
 * must not hold other threads that the child would need (fork copies only the calling thread). */
vx_status vx_soup_import_isolated(const char *path, double timeout_s, vx_soup *out, vx_error *err);

VX_EXTERN_C_END

#endif
