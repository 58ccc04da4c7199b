/* SPDX-License-Identifier: Apache-2.0 */
/* vdb_read.h - OpenVDB level sets in: a .vdb file's float level set -> the surface voxels of a
 * power-of-two grid (Morton codes and quantized corners), ready for vx_octree_build.
 *
 * Three layers, from the most to the least trusted:
 * - vx_vdb_scan (vdb_scan.c, C): our own parse of the file's header, metadata and grid list
 *   (names, tree types, classes, positions), every count and length checked against the bytes
 *   there are. It names the grid to read and refuses files without a float level set with a
 *   message that lists the grids, without running OpenVDB at all.
 * - vx_vdb_surface_read (vdb_io.cpp, C++): OpenVDB reads the chosen grid, its type, class,
 *   transform and bounds are checked, the field is resampled (see below) and the cells whose
 *   corners straddle zero are collected. Every OpenVDB call is inside try/catch.
 * - vx_vdb_surface_read_isolated (vdb_isolated.c): the same in a child process with a time and a
 *   memory limit (OpenVDB trusts its input: a length field can ask for gigabytes, a count can
 *   loop for minutes); the answer comes back through a pipe and is checked again here: depth,
 *   transform, counts against the memory limit before allocation, codes ascending and inside the
 *   grid, corner bytes in the quantized range.
 *
 * Resampling. The surface is the set of the file's cells whose 8 corners straddle zero (some < 0,
 * some >= 0, one within a voxel of zero: a sign flip between clamped values far from zero is not a
 * surface), found leaf by leaf; its bounding box plays the part of a mesh's. resolution 0: the
 * grid's own voxels, when its transform is a uniform scale and a translation: the tree's
 * resolution is the smallest power of two that holds the surface's cells, centred, and the values
 * are copied exactly. Otherwise (a resolution N, or a rotated or non-uniform transform) the
 * surface box's world bounds are mapped into N^3 (N: the power of two holding the box at the
 * grid's smallest voxel size when 0) with one uniform scale, centred, and the field is sampled:
 * candidates are our cells that the world box of a straddling cell of the file touches, and each
 * candidate's corners are sampled trilinearly (tools::BoxSampler) and kept when they straddle
 * zero. When our corners lie beyond the file's narrow band (sqrt(3) of our voxels from the
 * surface, when downsampling), the band is first widened by fast sweeping (tools::dilateSdf, which
 * keeps the signs), by at most 32 of the file's voxels. Unlike a rebuild through a mesh this needs
 * no closed surface: level sets of open meshes (holes filled by the sign) resample as they are.
 * Values are world distances; they become finest voxels (/ scale), are truncated at +-band and
 * quantized as the voxelizer's (node.h).
 */
#ifndef VOXLOD_FORMATS_VDB_READ_H
#define VOXLOD_FORMATS_VDB_READ_H

#include <stddef.h>
#include <stdint.h>
#include "svo/svo.h"

VX_EXTERN_C_BEGIN

#define VX_VDB_MAX_LISTED 32 /* grids the scan keeps (a file may hold more) */

typedef struct vx_vdb_grid_desc {
  char name[128];   /* the unique name (truncated for display past 127 bytes) */
  char type[48];    /* tree type, "Tree_float_5_4_3" */
  char cls[24];     /* "level set", "fog volume", "staggered", "unknown" (metadata "class") */
  int is_float;     /* a FloatGrid (saved as float or half) */
  int is_level_set; /* class "level set" */
  int name_fits;    /* the name is whole in `name` */
} vx_vdb_grid_desc;

typedef struct vx_vdb_listing {
  uint32_t file_version;
  uint32_t lib_major, lib_minor;
  int has_offsets;   /* 0: a stream (grids only after the first could not be listed) */
  uint32_t grid_count;
  uint32_t listed;
  vx_vdb_grid_desc grids[VX_VDB_MAX_LISTED];
} vx_vdb_listing;

/* Parses the header, file metadata, grid descriptors and each listed grid's metadata of the .vdb
 * file at path (or of size bytes in memory). VX_ERR_FORMAT: not a VDB file; VX_ERR_VERSION: a
 * newer file version than 224; VX_ERR_CORRUPT: a count, length or position that the file cannot
 * hold. */
vx_status vx_vdb_scan(const char *path, vx_vdb_listing *out, vx_error *err);
vx_status vx_vdb_scan_memory(const uint8_t *data, size_t size, vx_vdb_listing *out, vx_error *err);

/* The grid to read: the one called name, else (name NULL) the first float level set. Fails with
 * VX_ERR_FORMAT and a message listing the grids ("... has grids: density (float fog volume),
 * vel (vec3s)") when there is no such grid or it is not a float level set. */
vx_status vx_vdb_pick(const vx_vdb_listing *l, const char *path, const char *name, uint32_t *index,
                      vx_error *err);

/* What a read gives: the surface voxels of a 2^depth grid, Morton order, and its transform. */
typedef struct vx_vdb_surface {
  uint32_t depth;
  double origin[3];
  double scale;        /* world units per voxel */
  double src_voxel;    /* the file grid's voxel size */
  int resampled;       /* 1: the field was sampled at `scale` (not copied) */
  uint32_t widened;    /* the file's band was widened by this many of its voxels first */
  uint64_t count;
  uint64_t *codes;     /* vx_malloc'ed, ascending */
  vx_voxel *voxels;    /* vx_malloc'ed */
} vx_vdb_surface;

void vx_vdb_surface_free(vx_vdb_surface *s);

/* 1 when libopenvdb was found at build time (else the readers fail with VX_ERR_FORMAT). */
int vx_vdb_read_available(void);

/* Reads grid `name` (exact unique name) of the file in this process (see above). resolution 0 or
 * a power of two <= 2^VX_MAX_DEPTH; band in voxels (1..64); threads 0: all cores. */
vx_status vx_vdb_surface_read(const char *path, const char *name, uint32_t resolution, float band,
                              int threads, uint64_t mem_limit, vx_vdb_surface *out, vx_error *err);

/* The same in a child process: timeout_s <= 0 means none; mem_limit bounds the whole process
 * (the child may grow by what the caller does not use; under 32 MiB the read is refused). The
 * caller must not hold threads the child would need (fork copies the calling thread only). */
vx_status vx_vdb_surface_read_isolated(const char *path, const char *name, uint32_t resolution,
                                       float band, int threads, double timeout_s,
                                       uint64_t mem_limit, vx_vdb_surface *out, vx_error *err);

/* The parent's side of the pipe: reads a child's answer from fd before the deadline (0: none)
 * and checks it (see above). Returns 1 when the pipe timed out, 2 when it ended early (the child
 * died), 0 when an answer was read (*st then holds its status, with err filled). Exposed for the
 * fuzz target. */
int vx_vdb_answer_read(int fd, double deadline, uint64_t mem_limit, vx_vdb_surface *out,
                       vx_status *st, vx_error *err);

VX_EXTERN_C_END

#endif
