/* voxlod.h - libvoxlod: triangle meshes to sparse voxel octrees with a signed-distance field and
 * per-node level-of-detail planes, ray-marched on the GPU (CUDA) or the CPU.
 *
 * WHAT IT DOES
 *   mesh (a file assimp reads, or your vertex and index arrays)
 *     -> vx_convert: surface voxels with the signed distance at their 8 corners, an octree whose
 *        inner nodes carry a least-squares plane and its error, optional pruning
 *     -> a tree in memory (vx_tree) and/or a .svo file (zstd, checksummed, written atomically)
 *   vx_tree -> vx_renderer: images at any level of detail, many frames from one upload
 *   vx_tree -> statistics per level (memory per resolution), raw node and voxel arrays.
 *
 * OWNERSHIP
 *   Objects are opaque handles created by vx_*_create / vx_*_load / vx_convert and released by
 *   the matching vx_*_free; every free accepts NULL. A handle owns all its memory; pointers it
 *   hands out (vx_tree_nodes, vx_build_notes, ...) stay valid until it is freed. Buffers you pass
 *   in (vertex arrays, image memory) stay yours: the library copies what it keeps. A renderer
 *   refers to its tree: free the renderer before the tree.
 *
 * THREADS
 *   Distinct objects may be used from distinct threads at once. A vx_tree or vx_mesh is read-only
 *   after creation, so any number of threads may read, save, convert from or render one at the
 *   same time (each with its own renderer). One vx_renderer is used by one thread at a time.
 *   vx_set_allocator must be called before anything else. Calls use all cores unless told
 *   otherwise (convert's threads option).
 *
 * ERRORS
 *   Every fallible call returns a vx_status (VX_OK = 0) and fills an optional vx_error with one
 *   line for the user, ending with the library source location. Nothing is printed, nothing
 *   exits, and a failed call leaves no object, no temporary file and no half-written output: an
 *   existing output file is replaced only by a complete new one. Bytes from outside (files,
 *   arrays) are validated; a hostile file gives an error, not a crash.
 *
 * VERSIONS
 *   VOXLOD_VERSION_* describe this header; vx_version() the library at run time. Before 1.0 the
 *   ABI may change between minor versions (0.1 -> 0.2: rebuild), never within one; the API
 *   changes only by addition. Option and statistics structs start with `struct_size`: set it to
 *   sizeof the struct (or leave it 0: the 0.1 layout), so that fields added later keep old callers
 *   working. A zeroed option struct means "all defaults" everywhere.
 *
 * The file format is docs/SVO_FORMAT.md in the source tree; examples/ shows complete programs.
 */
#ifndef VOXLOD_H
#define VOXLOD_H

#include "voxlod/base.h"
#include "voxlod/mesh.h"
#include "voxlod/tree.h"
#include "voxlod/convert.h"
#include "voxlod/render.h"
#include "voxlod/files.h"
#include "voxlod/sample.h"
#include "voxlod/image.h"
#include "voxlod/export.h"
#include "voxlod/meshing.h"

#endif
