/* SPDX-License-Identifier: Apache-2.0 */
/* voxlod.h - libvoxlod: triangle meshes to sparse voxel octrees with a signed-distance field and
 * per-node level-of-detail planes, ray-marched on the GPU (CUDA) or the CPU.
 *
 * WHAT IT DOES
 *   mesh (vx_mesh: a file assimp reads, or your vertex and index arrays)           mesh.h
 *     -> vx_convert / vx_convert_to_file: surface voxels with the signed distance at their 8
 *        corners, a tree (sparse voxel octree) whose inner nodes carry a least-squares plane and
 *        its error, optional pruning                                                convert.h
 *     -> a tree in memory (vx_tree) or a .svo file (zstd, checksummed, atomic)      tree.h
 *   vx_tree -> vx_renderer: images at any level of detail, many frames from one upload  render.h
 *   vx_tree -> signed distances and gradients at points (vx_tree_sample, vx_sampler)  sample.h
 *   vx_tree -> the mesher: a triangle mesh at any level of detail                   mesher.h
 *   vx_tree -> grids and voxel files (.nvdb, .vdb, .binvox, .vox, .ply)             export.h
 *   vx_tree -> statistics per level (memory per resolution), raw node and voxel arrays.
 *
 * STABLE AND EXPERIMENTAL
 *   Everything this header declares is the stable API: from 1.0 on, names, signatures, enum
 *   values and struct layouts stay for all of 1.x (structs only grow at their end, see VERSIONS).
 *   voxlod/experimental.h holds what is not frozen (the renderer's and sampler's benchmarks); it is
 *   declared only when the program defines VOXLOD_EXPERIMENTAL before including this header, and
 *   may change in any release. docs/API.md lists every name and which part it belongs to.
 *
 * OWNERSHIP
 *   Objects are opaque handles created by vx_*_create / vx_*_load / vx_convert* and released by
 *   the matching vx_*_free; every free accepts NULL. A handle owns all its memory; pointers it
 *   hands out (vx_tree_nodes, vx_conversion_notes, ...) stay valid until it is freed. Buffers
 *   you pass in (vertex arrays, image memory) stay yours: the library copies what it keeps. A
 *   renderer refers to its tree: free the renderer before the tree.
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
 *   API and ABI may change between minor versions (0.1 -> 0.2: rebuild; docs/API.md lists the
 *   renames), never within one. Option and statistics structs start with `struct_size`: set it
 *   to sizeof the struct, or leave it 0, which means the struct's first published layout (the
 *   one of version 0.1, whatever the header in use). The library reads an option struct only up
 *   to that size (fields beyond it take their defaults) and writes a statistics struct only up to
 *   it, setting struct_size to the bytes it wrote; an option struct whose struct_size is below
 *   its first layout's size is refused (VX_ERR_INVALID_ARG). New fields are only ever added at a
 *   struct's end, so a program built against an older header keeps working with a newer library.
 *   A zeroed option struct means "all defaults" everywhere.
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
#include "voxlod/mesher.h"

#ifdef VOXLOD_EXPERIMENTAL
#include "voxlod/experimental.h"
#endif

#endif
