/* SPDX-License-Identifier: Apache-2.0 */
/* mesh_import.h - any mesh file assimp reads -> vx_soup (the only file that includes assimp).
 *
 * All meshes of the scene are taken with their node transforms applied (instances expanded),
 * polygons triangulated; points and lines are dropped and counted, as are zero-area triangles and
 * triangles with NaN/Inf coordinates. A scene with no triangle left is VX_ERR_EMPTY.
 *
 * Colour (svo/soup.h vx_soup_color, formats/mesh_material.c): per triangle the base-colour or
 * diffuse texture through UV channel 0 (external files beside the mesh, or embedded in a GLB/FBX;
 * decoded here, under the memory the process has left), else vertex colours, else the material's
 * colour; soup.color stays NULL for a scene with none of these. A texture that cannot be found or
 * read is a line in soup.color->warnings, never an error; more than 65536 distinct materials is
 * VX_ERR_LIMIT.
 */
#ifndef VOXLOD_FORMATS_MESH_IMPORT_H
#define VOXLOD_FORMATS_MESH_IMPORT_H

#include <stddef.h>
#include <stdint.h>
#include "svo/soup.h"

VX_EXTERN_C_BEGIN

/* Reads a mesh file. Errors: VX_ERR_IO (missing, unreadable, a directory), VX_ERR_FORMAT (assimp
 * cannot read it; a gzip file), VX_ERR_CORRUPT (its header declares more elements than the file
 * holds: formats/mesh_precheck.h), VX_ERR_NOMEM (assimp ran out of memory), VX_ERR_EMPTY (no
 * triangle left). *out is zeroed on failure. */
vx_status vx_soup_import(const char *path, vx_soup *out, vx_error *err);

/* The same from bytes in memory; hint is the format's file extension ("obj", "ply", "stl", ...)
 * or NULL. Used by the fuzz target. Files the format references (an OBJ's .mtl) are not read. */
vx_status vx_soup_import_memory(const void *data, size_t size, const char *hint, vx_soup *out,
                                vx_error *err);

/* vx_soup_import in a child process (fork) with a time and a memory limit, so that an importer
 * that loops, aborts or balloons on a hostile file (assimp 5.2 does all three on some inputs)
 * costs the caller an error message, not a hang, a crash or the machine's memory. The triangles
 * come back through a pipe, bit for bit what vx_soup_import gives.
 * timeout_s <= 0: no time limit. mem_limit (bytes, 0: none) bounds the whole process: the child's
 * address space may grow by what the caller does not use yet (mem_limit less its resident bytes
 * at the fork, at least 16 MiB), and the triangles must fit beside what the caller holds.
 * The header counts are checked (vx_mesh_precheck_file) before any child is started.
 * Errors: as vx_soup_import, plus VX_ERR_LIMIT when the import or its result needs more memory
 * than mem_limit allows ("... the import needs more than the memory limit (500.0 MiB)"),
 * VX_ERR_FORMAT when the import ran out of time or the child died, VX_ERR_IO when no child
 * process can be started. The caller must not hold other threads that the child would need
 * (fork copies only the calling thread). */
vx_status vx_soup_import_isolated(const char *path, double timeout_s, uint64_t mem_limit,
                                  vx_soup *out, vx_error *err);

/* Whether vx_soup_import reads a file of this name and size with the streaming pass first (a
 * binary STL or PLY of 64 MiB or more; formats/tri_stream.h, which says VX_ERR_FORMAT for one it
 * does not take). vx_soup_import_isolated reads such a file in its own process, as that pass
 * checks every byte itself: the child's copy through a pipe doubled a 10^8-triangle import. */
int vx_soup_stream_candidate(const char *path, uint64_t size);

VX_EXTERN_C_END

#endif
