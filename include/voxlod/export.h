/* SPDX-License-Identifier: Apache-2.0 */
/* voxlod/export.h - trees out to grid and voxel formats: what `voxlod export` does (OpenVDB level
 * sets in: vx_convert_grid, convert.h).
 *
 *   vx_tree_export writes the tree's field at one level (the finest, or --lod L: the planes of
 *   level L, as a render at that level draws them) as
 *   - .nvdb  a NanoVDB float grid, class level set (NanoVDB's own file layout, uncompressed);
 *   - .vdb   an OpenVDB FloatGrid, class level set (libopenvdb; see vx_export_available);
 *   - .binvox the cells as a run-length encoded occupancy grid (surface, or solid);
 *   - .vox   MagicaVoxel: the cells as models of at most 256^3, placed by the scene graph;
 *   - .ply   a binary PLY point cloud: a point per cell (its centre, or the nearest point of the
 *            field's zero set) with the field's gradient as its normal.
 *   Grids: the active values are the corners of the surface cells (the narrow band), world
 *   distances (negative inside) clamped at +-band voxels of the exported grid; the background is
 *   +band voxels, inside regions read -band (signed flood fill). Voxel size = the tree's scale *
 *   2^(depth - level), index (0,0,0) at the tree's origin. docs/GRIDS.md gives the details.
 *   Every output is written atomically (files.h); what a format cannot hold is refused before
 *   anything is written (VX_ERR_LIMIT), and so are options of another format (band or grid_name
 *   but not a grid, solid but not .binvox/.vox, surface_points but not .ply: VX_ERR_INVALID_ARG).
 *
 * Thread safety: as the rest of the library (a tree is read-only; distinct calls may run at once).
 */
#ifndef VOXLOD_EXPORT_H
#define VOXLOD_EXPORT_H

#include "voxlod/base.h"
#include "voxlod/tree.h"

VX_EXTERN_C_BEGIN

typedef enum vx_export_format {
  VX_EXPORT_AUTO = 0, /* from the output path's extension */
  VX_EXPORT_NVDB = 1, /* .nvdb */
  VX_EXPORT_VDB = 2,  /* .vdb */
  VX_EXPORT_BINVOX = 3,
  VX_EXPORT_VOX = 4,
  VX_EXPORT_PLY = 5
} vx_export_format;

typedef struct vx_export_opts {
  uint32_t struct_size;    /* sizeof(vx_export_opts), or 0 */
  vx_export_format format; /* VX_EXPORT_AUTO: by the extension (case-insensitive) */
  uint32_t levels;         /* export level levels-1 (1 .. depth+1); 0: the finest (the voxels) */
  float band;              /* grids: clamp values at +-band voxels of the exported grid (1..64);
                              0: the tree's band, raised to 1 or lowered to 64 when outside */
  int solid;               /* .binvox/.vox: also the cells inside the surface (by the field's
                              sign); 0: surface cells only */
  int surface_points;      /* .ply: points moved onto the zero set (one Newton step along the
                              gradient); 0: cell centres */
  const char *grid_name;   /* .nvdb/.vdb grid name; NULL: "surface" */
  uint64_t mem_limit;      /* bytes the export may hold; 0: 80% of physical memory */
  vx_progress_fn progress; /* may be NULL; a nonzero return cancels (VX_ERR_INTERRUPTED) */
  void *user;
} vx_export_opts;

typedef struct vx_export_stats {
  uint32_t struct_size;  /* sizeof(vx_export_stats), or 0 */
  uint32_t level;        /* the level exported */
  uint32_t resolution;   /* its cells per axis */
  uint64_t cells;        /* surface cells of that level */
  uint64_t plane_cells;  /* of those, with values from planes (a coarser level, pruned leaves) */
  uint64_t values;       /* grid values (.nvdb/.vdb), filled voxels (.binvox/.vox), points (.ply) */
  uint32_t models;       /* .vox: models written */
  uint64_t file_bytes;   /* bytes written */
  double seconds;        /* the whole export */
  float band;            /* .nvdb/.vdb: the band written, voxels (0 for the other formats) */
} vx_export_stats;

/* The format a path names by its extension (.nvdb, .vdb, .binvox, .vox, .ply; any case), or
 * VX_EXPORT_AUTO when none. */
VX_API vx_export_format vx_export_format_of(const char *path);

/* 1 when this library can write format f: .nvdb needs the NanoVDB headers and .vdb libopenvdb at
 * build time; the others are always there. */
VX_API int vx_export_available(vx_export_format f);

/* Writes the whole tree t (all levels loaded) to path in the chosen format (see above), after
 * checking the output (files.h) and the options. opts and stats may be NULL. */
VX_API vx_status vx_tree_export(const vx_tree *t, const char *path, const vx_export_opts *opts,
                                vx_export_stats *stats, vx_error *err);
/* The same for a tiled file (tree.h) of any depth, read tile by tile (one decoded at a time; a
 * level above the finest reads only the tiles' levels down to it): the bytes vx_tree_export
 * writes for the tree vx_tree_load joins of it. What the cut of the level, its grid points and the
 * format's writer hold must fit mem_limit (past 16384^3 the finest level of a large surface
 * rarely does: export a coarser level with levels). */
VX_API vx_status vx_tiled_file_export(vx_tiled_file *f, const char *path,
                                      const vx_export_opts *opts, vx_export_stats *stats,
                                      vx_error *err);

VX_EXTERN_C_END

#endif
