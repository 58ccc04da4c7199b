/* SPDX-License-Identifier: Apache-2.0 */
/* grid_export.h - the writers of `voxlod export`: a cut (grid_cut.h) to NanoVDB, OpenVDB, binvox,
 * MagicaVoxel and PLY files. Each writer is the only file that touches its third-party library
 * (NanoVDB's headers: nvdb_write.cpp; libopenvdb: vdb_io.cpp); binvox, .vox and PLY are written
 * here byte by byte in little-endian (their formats are small and public).
 *
 * Contract: the output path has been checked (vx_output_check); every writer goes through
 * atomic_file.h, so on any failure nothing is left and an existing file is untouched. *bytes
 * receives the size written. Limits of a format are checked before anything is written
 * (VX_ERR_LIMIT with what the format allows). Never prints.
 */
#ifndef VOXLOD_FORMATS_GRID_EXPORT_H
#define VOXLOD_FORMATS_GRID_EXPORT_H

#include "formats/grid_cut.h"

VX_EXTERN_C_BEGIN

/* The level-set grid both VDB writers take: points of a cut (vx_cut_points), values in cells,
 * world = origin + index * h, values written as world distances (value * h), background
 * band * h, a signed flood fill for the inside. With rgb (a coloured tree), a second grid "Cd"
 * beside it on exactly the same points: linear r, g, b (Houdini's convention for Cd), background
 * 0; OpenVDB: a Vec3SGrid, NanoVDB: a Vec3f grid (vx_cut_point_colors). */
typedef struct vx_grid_points {
  const uint64_t *keys; /* Morton codes of (i + pad, j + pad, k + pad), ascending */
  uint32_t pad;         /* vx_cut_points' shift */
  const float *values;  /* cells of the cut, clamped to +-band */
  uint64_t count;
  double origin[3];
  double h;
  float band;           /* cells */
  const char *name;
  const float *rgb;     /* count * 3 linear colours, or NULL: the level set alone */
} vx_grid_points;

/* 1 when the writer was built (NanoVDB headers, libopenvdb found at build time). */
int vx_nvdb_write_available(void);
int vx_vdb_write_available(void);

vx_status vx_nvdb_write(const char *path, const vx_grid_points *g, uint64_t *bytes, vx_error *err);
vx_status vx_vdb_write(const char *path, const vx_grid_points *g, uint64_t *bytes, vx_error *err);

/* binvox (run-length occupancy, translate and scale): the surface cells, or with solid the
 * inside too. *filled receives the cells set. Readers hold the grid densely (a byte or a bit per
 * cell), so grids beyond VX_BINVOX_MAX_RES per axis are refused (4096^3: a 0.5 GB file of mostly
 * empty runs). */
#define VX_BINVOX_MAX_RES 4096u
vx_status vx_binvox_write(const char *path, const vx_cut *c, int solid, uint64_t mem_limit,
                          uint64_t *filled, uint64_t *bytes, vx_error *err);

/* MagicaVoxel .vox (version 150): models of at most 256^3 cells placed by a scene graph, a
 * coloured cut with its palette (formats/palette.h; holes left out, *filled counts what was
 * written); grids
 * beyond VX_VOX_MAX_RES per axis (MagicaVoxel's world is 2048 voxels wide) and files of 2 GiB or
 * more (int32 chunk sizes) are refused. */
#define VX_VOX_MODEL 256u
#define VX_VOX_MAX_RES 2048u
vx_status vx_vox_write(const char *path, const vx_cut *c, int solid, uint64_t mem_limit,
                       uint64_t *filled, uint32_t *models, uint64_t *bytes, vx_error *err);

/* Binary little-endian PLY: x y z nx ny nz (float) per cell: its centre, or with surface the
 * centre moved onto the zero set along the gradient (one Newton step, kept inside the cell).
 * A coloured cut adds uchar red green blue alpha and leaves out the holes (alpha 0). */
vx_status vx_ply_points_write(const char *path, const vx_cut *c, int surface, uint64_t *bytes,
                              vx_error *err);

VX_EXTERN_C_END

#endif
