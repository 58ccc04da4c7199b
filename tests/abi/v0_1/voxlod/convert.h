/* SPDX-License-Identifier: Apache-2.0 */
/* voxlod/convert.h - mesh -> tree (in memory) and/or .svo file: what `voxlod convert` does. */
#ifndef VOXLOD_CONVERT_H
#define VOXLOD_CONVERT_H

#include "voxlod/base.h"
#include "voxlod/mesh.h"
#include "voxlod/tree.h"

VX_EXTERN_C_BEGIN

/* vx_convert_opts.sign_rule: how a corner is judged inside (negative) or outside. */
#define VX_SIGN_WINDING 0       /* |generalized winding number| > 1/2: robust to holes, soups,
                                   duplicates and overlaps (default) */
#define VX_SIGN_PSEUDO_NORMAL 1 /* angle-weighted pseudo-normal: faster, exact on closed manifolds */

typedef struct vx_convert_opts {
  uint32_t struct_size;    /* sizeof(vx_convert_opts), or 0 */
  uint32_t resolution;     /* cells per axis, a power of two from 2 to 16384; 0: 256 */
  float max_error;         /* prune subtrees whose plane is within this many finest voxels; 0: keep
                              the full tree */
  float band;              /* truncate the distance field at +-band voxels (1..64); 0: 2 */
  int threads;             /* CPU threads; 0: all cores */
  uint64_t mem_limit;      /* peak bytes of the whole conversion; 0: 80% of physical memory. Past
                              what fits in memory the octree's levels spill to temporary files
                              (then only a file can be written: keep_tree is refused) */
  vx_device device;        /* VX_DEVICE_AUTO: the GPU when usable, else the CPU (the same bytes
                              either way); VX_DEVICE_GPU: fail without one; VX_DEVICE_CPU */
  int sign_rule;           /* VX_SIGN_WINDING (0) or VX_SIGN_PSEUDO_NORMAL */
  int zstd_level;          /* of the .svo file, 1..22; 0: by size */
  const char *temp_dir;    /* where spill files go; NULL: beside the output file, else $TMPDIR */
  vx_progress_fn progress; /* may be NULL; a nonzero return cancels (VX_ERR_INTERRUPTED) */
  void *user;
} vx_convert_opts;

/* The result of a conversion. */
typedef struct vx_build vx_build;

/* Converts mesh. With out_path (may be NULL) the .svo file is written there (atomically; the
 * output is checked before any work: see files.h); with keep_tree the tree stays in the result
 * (vx_build_tree). At least one of the two is needed. opts may be NULL (all defaults). On
 * failure *out is NULL. */
VX_API vx_status vx_convert(const vx_mesh *mesh, const vx_convert_opts *opts, const char *out_path,
                            int keep_tree, vx_build **out, vx_error *err);

VX_API void vx_build_free(vx_build *b);

/* The tree, owned by b (NULL without keep_tree). */
VX_API const vx_tree *vx_build_tree(const vx_build *b);
/* Moves the tree out of b: the caller frees it with vx_tree_free; later calls give NULL. */
VX_API vx_tree *vx_build_take_tree(vx_build *b);
/* What the caller should know but that is not an error, one line each ("" when nothing), e.g.
 * "GPU build unavailable (...); built on the CPU". Owned by b. */
VX_API const char *vx_build_notes(const vx_build *b);

typedef struct vx_build_stats {
  uint32_t struct_size;     /* sizeof(vx_build_stats), or 0 */
  uint32_t resolution;
  uint64_t triangles;       /* triangles voxelized */
  uint64_t surface_voxels;
  uint64_t nodes;           /* nodes in the final tree (after pruning) */
  uint64_t corners;         /* distinct corners whose distance was computed */
  uint64_t file_bytes;      /* size of the .svo written (0: none) */
  int used_gpu;             /* 1: the surface and field were computed on the GPU */
  int gpu_tree;             /* 1: the octree and planes too (else on the CPU) */
  int spilled;              /* 1: levels went to temporary files (out of core) */
  double sec_build;         /* voxels, field, octree, planes, pruning */
  double sec_write;         /* compressing and writing the file */
  double sec_total;
  double sec_sign;          /* the build's stages: sign tables, */
  double sec_voxels;        /* surface voxels and field (the CPU build: with the octree), */
  double sec_tree;          /* octree and planes (the GPU build's CPU part) */
  double sec_gpu[5];        /* GPU surface stage: upload, overlap pairs, sort and index, corner
                               field, copy back */
  double sec_gpu_tree[3];   /* GPU octree: levels, planes, copy to host */
} vx_build_stats;

VX_API vx_status vx_build_get_stats(const vx_build *b, vx_build_stats *st);

VX_EXTERN_C_END

#endif
