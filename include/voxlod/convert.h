/* SPDX-License-Identifier: Apache-2.0 */
/* voxlod/convert.h - a mesh (or an OpenVDB level set) -> a tree, in memory or in a .svo file:
 * what `voxlod convert` does.
 *
 *   vx_convert               mesh  -> tree in memory (vx_conversion_tree)
 *   vx_convert_to_file       mesh  -> .svo file (out of core when the tree does not fit memory)
 *   vx_convert_file          mesh file -> .svo file (a tiled tree's mesh split by tile on disk)
 *   vx_convert_grid          .vdb  -> tree in memory
 *   vx_convert_grid_to_file  .vdb  -> .svo file
 *
 * Every call hands out a vx_conversion: the tree (in-memory calls), notes for the user and the
 * statistics. Files are written atomically, and the output path is checked before any work (see
 * files.h).
 */
#ifndef VOXLOD_CONVERT_H
#define VOXLOD_CONVERT_H

#include "voxlod/base.h"
#include "voxlod/mesh.h"
#include "voxlod/tree.h"

VX_EXTERN_C_BEGIN

/* sign_rule takes a vx_sign_rule (base.h): VX_SIGN_WINDING (default) or VX_SIGN_PSEUDO_NORMAL. */
typedef struct vx_convert_opts {
  uint32_t struct_size;    /* sizeof(vx_convert_opts), or 0 */
  uint32_t resolution;     /* cells per axis, a power of two from 2 to 16384 (to 2^20 tiled,
                              see tile_depth); 0: 256 */
  float max_error;         /* prune subtrees whose plane is within this many finest voxels; 0: keep
                              the full tree */
  float band;              /* truncate the distance field at +-band voxels (1..64); 0: 2 */
  int threads;             /* CPU threads; 0: all cores */
  uint64_t mem_limit;      /* peak bytes of the whole conversion; 0: 80% of physical memory. Past
                              what fits in memory the tree's levels spill to temporary files
                              (then only vx_convert_to_file can succeed) */
  vx_device device;        /* VX_DEVICE_AUTO: the GPU when usable, else the CPU (the same bytes
                              either way); VX_DEVICE_GPU: fail without one; VX_DEVICE_CPU */
  vx_sign_rule sign_rule;  /* VX_SIGN_WINDING (0) or VX_SIGN_PSEUDO_NORMAL */
  int zstd_level;          /* of the .svo file, 1..22; 0: by size */
  const char *temp_dir;    /* where spill files go; NULL: beside the output file, else $TMPDIR */
  vx_progress_fn progress; /* may be NULL; a nonzero return cancels (VX_ERR_INTERRUPTED) */
  void *user;
  vx_color_mode color;     /* VX_COLOR_AUTO (0): colour when the mesh has it; VX_COLOR_OFF */
  vx_color_filter color_filter; /* VX_COLOR_FILTER_MEAN (0) or VX_COLOR_FILTER_DOMINANT */
  uint32_t tile_depth;     /* 0: one tree (resolution up to 16384), or tiles of 16384^3 above
                              that; T in 1..14: a tiled file (vx_convert_to_file only) of tiles of
                              2^T voxels per axis under at most 13 top levels, resolution up to
                              2^20. A coloured mesh gives coloured tiles (the untiled tree's
                              colours); max_error prunes inside each
                              tile, never above the tiles' roots */
  int gpus;                /* a tiled build on the GPU (device GPU or AUTO): 0 the current device,
                              -1 every GPU of the machine, N the first N; each builds tiles of its
                              own (one tile stream per GPU), the same bytes whichever builds one */
} vx_convert_opts;

/* The result of a conversion: the tree (in-memory calls), notes, statistics. */
typedef struct vx_conversion vx_conversion;

/* Converts mesh to a tree in memory: *out holds it (vx_conversion_tree, vx_conversion_take_tree).
 * A tree that does not fit opts->mem_limit is refused (VX_ERR_LIMIT; vx_convert_to_file can
 * still write it). opts may be NULL (all defaults). On failure *out is NULL. */
VX_API vx_status vx_convert(const vx_mesh *mesh, const vx_convert_opts *opts, vx_conversion **out,
                            vx_error *err);

/* Converts mesh and writes the tree to path as a .svo file (atomically; past the memory limit its
 * levels spill to temporary files, out of core). out may be NULL; else *out receives the notes
 * and statistics (vx_conversion_tree gives NULL). On failure *out is NULL. */
VX_API vx_status vx_convert_to_file(const vx_mesh *mesh, const vx_convert_opts *opts,
                                    const char *path, vx_conversion **out, vx_error *err);

/* vx_mesh_load(mesh_path, load_opts) then vx_convert_to_file, the same bytes, except that the
 * mesh is never held whole where it need not be: a tiled tree (tile_depth set, or a resolution
 * above 16384) with VX_SIGN_PSEUDO_NORMAL from a binary STL or PLY of plain triangles (the files
 * vx_mesh_load reads with its own streaming reader, of any size here) is read in streaming passes
 * and split by tile into a temporary file, each tile built from the triangles near it: memory
 * holds a few tiles' triangles, not the mesh's. (The winding number's sign, VX_SIGN_WINDING,
 * needs every triangle at every corner: such a conversion loads the mesh.) load_opts apply where
 * the mesh is loaded (the split's passes read the file in this process, as vx_mesh_load's
 * streaming reader does, each a linear pass that checks every byte). info may be NULL, else it
 * receives what vx_mesh_get_info would give for the mesh (struct_size set by the caller). */
VX_API vx_status vx_convert_file(const char *mesh_path, const vx_mesh_load_opts *load_opts,
                                 const vx_convert_opts *opts, const char *path,
                                 vx_mesh_info *info, vx_conversion **out, vx_error *err);

typedef struct vx_grid_opts {
  uint32_t struct_size; /* sizeof(vx_grid_opts), or 0 */
  const char *grid;     /* the grid to read; NULL: the first float level set of the file */
  double timeout_s;     /* give up after this many seconds (0: 300; < 0: never) */
} vx_grid_opts;

/* Converts the float level set of an OpenVDB file (a .vdb from Houdini, Blender, OpenVDB's tools)
 * to a tree, as vx_convert does a mesh (same options and result). The surface is the grid's cells
 * whose corners straddle zero. opts->resolution 0 keeps the grid's own voxels (the resolution is
 * the smallest power of two holding the surface's cells, at most 16384; values copied); a
 * resolution N maps the surface's bounding box into N^3 as a mesh's box is mapped, and the field
 * is sampled trilinearly there (its narrow band widened first where it is too thin for the new
 * voxels). sign_rule does not apply (a nonzero one is refused); the conversion runs on the CPU,
 * so device must be VX_DEVICE_AUTO or VX_DEVICE_CPU (VX_DEVICE_GPU is refused). The file is distrusted: its header, metadata and
 * grid list are checked here, and OpenVDB parses it in a child process with a time and a memory
 * limit, so a hostile file costs an error message, not a crash or a hang. gopts may be NULL.
 * Errors: VX_ERR_FORMAT for a file without a float level set (the message lists its grids) or a
 * library built without OpenVDB, VX_ERR_CORRUPT for a damaged file. */
VX_API vx_status vx_convert_grid(const char *vdb_path, const vx_grid_opts *gopts,
                                 const vx_convert_opts *opts, vx_conversion **out, vx_error *err);

/* vx_convert_grid, the tree written to path as a .svo file (out may be NULL). */
VX_API vx_status vx_convert_grid_to_file(const char *vdb_path, const vx_grid_opts *gopts,
                                         const vx_convert_opts *opts, const char *path,
                                         vx_conversion **out, vx_error *err);

/* ---- a tiled conversion as tasks --------------------------------------------------------------
 * The tiled build cut into tasks for processes that share files but not memory (the workers of
 * a Dask cluster: `python -m voxlod convert --scheduler`). Each process makes the same plan from
 * the same mesh and options (vx_tile_plan_create: the grid, the sign tables of the whole mesh,
 * each tile's triangles); tasks build tiles by index into files of their own
 * (vx_tile_plan_build: the tile's .svo and a record of it); one process merges the files, given
 * their records, into the tiled file (vx_tile_merge). The file is byte for byte the one
 * vx_convert_to_file writes with the same mesh and options, wherever each tile was built. */
typedef struct vx_tile_plan vx_tile_plan;

#define VX_TILE_RECORD_BYTES 360
/* What a task hands back with its tile's file (send it as bytes; the merge checks each byte): the
 * build it belongs to, the tile's cell, the length and check of its file, its root's fit and,
 * in a coloured build, its root's colour sums. */
typedef struct vx_tile_record {
  uint8_t bytes[VX_TILE_RECORD_BYTES];
} vx_tile_record;

typedef struct vx_tile_plan_info {
  uint32_t struct_size;  /* sizeof(vx_tile_plan_info), or 0 */
  uint32_t depth;        /* the whole grid: 2^depth cells per axis */
  uint32_t tile_depth;
  uint32_t reserved;
  uint64_t tiles;        /* tiles reached by triangles: tasks 0 .. tiles - 1 (some may come out
                            empty: triangles only in their halo) */
  uint64_t build_id;     /* a hash of the triangles and of the options that change the bytes */
  uint64_t triangles;    /* after dropping exact duplicates */
  double sec_plan;       /* making the plan, sign tables included */
} vx_tile_plan_info;

/* The plan of mesh's tiled build with opts (as vx_convert_to_file takes them; tile_depth 0 at a
 * resolution up to 16384 is refused: that is one tree). mesh must outlive the plan. Spill files
 * go to opts->temp_dir, else $TMPDIR or /tmp. */
VX_API vx_status vx_tile_plan_create(const vx_mesh *mesh, const vx_convert_opts *opts,
                                     vx_tile_plan **out, vx_error *err);
VX_API void vx_tile_plan_free(vx_tile_plan *p);
VX_API vx_status vx_tile_plan_get_info(const vx_tile_plan *p, vx_tile_plan_info *info);
/* Builds tile k (0 .. tiles - 1) into a .svo file at path (atomically; none when the tile comes
 * out empty) and its record. Several threads may build tiles of one plan at once. On the GPU the
 * first tile built on a device leaves the mesh and sign tables there for the plan's other tiles
 * (freed by vx_tile_plan_free). */
VX_API vx_status vx_tile_plan_build(vx_tile_plan *p, uint64_t k, const char *path,
                                    vx_tile_record *rec, vx_error *err);
/* GPU fallbacks of the builds so far ("" when none). Owned by p; valid until the next build. */
VX_API const char *vx_tile_plan_notes(vx_tile_plan *p);

/* The same tasks without any process holding the mesh, where vx_convert_file would split it (a
 * tiled build with the pseudo-normal rule from a binary STL or PLY): one process splits the mesh
 * file by tile into a parts file (vx_tile_split: every tile's triangles, and the build id), and
 * each process opens a plan on that file (vx_tile_plan_open_parts) whose tasks read only their
 * own tile's part. The file is the one vx_convert_file writes, byte for byte.
 * vx_tile_split writes parts_path atomically (a regular file the other processes can read;
 * about 40 bytes a triangle and tile it reaches); info (may be NULL) receives the plan's summary.
 * VX_ERR_FORMAT when the streaming reader leaves the file to assimp (then load it and use
 * vx_tile_plan_create), VX_ERR_INVALID_ARG for options that are not split (the winding rule). */
VX_API vx_status vx_tile_split(const char *mesh_path, const vx_convert_opts *opts,
                               const char *parts_path, vx_tile_plan_info *info, vx_error *err);
/* A plan on the parts file (opts: those it was split with; device, threads, memory limit and
 * temporary folder may differ). Every byte read from it is checked (VX_ERR_CORRUPT). */
VX_API vx_status vx_tile_plan_open_parts(const char *parts_path, const vx_convert_opts *opts,
                                         vx_tile_plan **out, vx_error *err);

typedef struct vx_tile_record_info {
  uint32_t struct_size;  /* sizeof(vx_tile_record_info), or 0 */
  int empty;             /* 1: no surface, no file */
  uint64_t code;         /* its cell: Morton code in the grid of tiles */
  uint64_t build_id;
  uint64_t voxels;       /* surface voxels */
  uint64_t file_bytes;
  int gpu;               /* 1: built whole on the GPU */
  int reserved;
  double sec_build, sec_encode;
} vx_tile_record_info;

/* The record's contents, checked (VX_ERR_CORRUPT for damaged or forged bytes). */
VX_API vx_status vx_tile_record_get_info(const vx_tile_record *rec, vx_tile_record_info *info,
                                         vx_error *err);
/* Writes the tiled file at out_path (atomically) from n records in any order and the files their
 * tasks wrote (paths[i] for recs[i]; ignored for an empty tile): every record must come from one
 * build, each tile once, each file be the one its record describes (length and check); then the
 * top tree is fitted over them. out may be NULL; else *out receives notes and statistics. */
VX_API vx_status vx_tile_merge(const char *out_path, const vx_tile_record *recs,
                               const char *const *paths, uint64_t n, vx_conversion **out,
                               vx_error *err);

VX_API void vx_conversion_free(vx_conversion *c);

/* The tree, owned by c (NULL after a *_to_file call, or once taken). */
VX_API const vx_tree *vx_conversion_tree(const vx_conversion *c);
/* Moves the tree out of c: the caller frees it with vx_tree_free; later calls give NULL. */
VX_API vx_tree *vx_conversion_take_tree(vx_conversion *c);
/* What the caller should know but that is not an error, one line each ("" when nothing), e.g.
 * "GPU build unavailable (...); built on the CPU". Owned by c. */
VX_API const char *vx_conversion_notes(const vx_conversion *c);

typedef struct vx_conversion_stats {
  uint32_t struct_size;     /* sizeof(vx_conversion_stats), or 0 */
  uint32_t resolution;
  uint64_t triangles;       /* triangles voxelized */
  uint64_t surface_voxels;
  uint64_t nodes;           /* nodes in the final tree (after pruning) */
  uint64_t corners;         /* distinct corners whose distance was computed */
  uint64_t file_bytes;      /* size of the .svo written (0: none) */
  int used_gpu;             /* 1: the surface and field were computed on the GPU */
  int gpu_tree;             /* 1: the tree and planes too (else on the CPU) */
  int spilled;              /* 1: levels went to temporary files (out of core) */
  int color_gpu;            /* 1: the colour pass's triangle parts were made on the GPU */
  double sec_build;         /* voxels, field, tree, planes, pruning */
  double sec_write;         /* compressing and writing the file */
  double sec_total;
  double sec_sign;          /* the build's stages: sign tables, */
  double sec_voxels;        /* surface voxels and field (the CPU build: with the tree), */
  double sec_tree;          /* tree and planes (the GPU build's CPU part) */
  double sec_gpu[5];        /* GPU surface stage: upload, overlap pairs, sort and index, corner
                               field, copy back */
  double sec_gpu_tree[3];   /* GPU tree: levels, planes, copy to host */
  double sec_color;         /* the colour pass: after a GPU build, in sec_build, or in
                               sec_write when it ran beside the file's compression; within
                               the streaming build, its share of the blocks' work */
} vx_conversion_stats;

VX_API vx_status vx_conversion_get_stats(const vx_conversion *c, vx_conversion_stats *st);

VX_EXTERN_C_END

#endif
