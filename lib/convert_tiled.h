/* SPDX-License-Identifier: Apache-2.0 */
/* convert_tiled.h - the tiled conversion (convert_tiled.c): a plan (the mesh, its grid, sign
 * tables and the triangles of each tile), the build of one tile from it, and the whole file built
 * by a pool of workers. vx_convert_to_file runs it when opts->tile_depth is set or the resolution
 * is finer than one tree holds; the public task API (tile_tasks.c) hands the plan and the build
 * of single tiles to other processes (a Dask cluster), whose tiles are the same bytes. */
#ifndef VOXLOD_LIB_CONVERT_TILED_H
#define VOXLOD_LIB_CONVERT_TILED_H

#include "lib/internal.h"
#include "formats/svo_tiled.h"
#include "voxelizer/color_internal.h"
#include "voxelizer/internal.h"

#include <pthread.h>

typedef struct vx_tile_tri vx_tile_tri;

/* A finished tile: encoded in memory, or in a file (out_path when given, else a temporary one
 * when its levels spilled). */
typedef struct vx_tile_out {
  int ready, empty;
  uint8_t *bytes;
  size_t n;
  uint32_t check;         /* the bytes' check32 (computed by the worker that encoded them) */
  char *path;             /* a temporary file, removed by vx_tile_out_free */
  vx_fit_root fit;
  csum color_root;        /* a coloured build: the root's colour sums (color_has: it has some) */
  int color_has;
  uint64_t code, voxels, nodes, corners;
  int gpu_tree;           /* built whole on the GPU */
  int color_gpu;          /* coloured there too (its triangle parts; sec_color: the colour's
                             seconds, in sec_build; sec_color_parts: color_tile_gpu's) */
  double sec_color, sec_color_parts[4];
  double sec_build, sec_encode;
  double sec_gpu[5], sec_gpu_tree[3];
} vx_tile_out;

/* Where tile k of a pool comes from when it is not a plan of the whole mesh (a mesh split by
 * tile): run builds it as vx_tile_plan_run would, with the worker's options bo (a GPU build that
 * falls back to the CPU clears bo->gpu and notes why in the pool's plan). */
typedef struct vx_tile_source {
  vx_status (*run)(void *ctx, vx_voxelize_opts *bo, uint64_t k, vx_octree_prealloc *pre,
                   const char *out_path, vx_tile_out *r, vx_error *err);
  /* may be NULL: once every tile is in, before the file is finished (the plan's counts that
   * only the tiles' builds know, such as its dropped copies) */
  void (*tiles_in)(void *ctx);
  void *ctx;
} vx_tile_source;


/* Everything a tile's build needs, shared (read only) by every tile. */
struct vx_tile_plan {
  vx_soup store;          /* the mesh without exact duplicates, when some were dropped */
  const vx_soup *m;       /* the mesh built */
  uint64_t dropped;       /* exact duplicate triangles dropped */
  vx_voxelize_opts bo;    /* each tile's build options (threads: every core) */
  vx_sign_data sign;      /* of the whole mesh */
  vx_gpu_meshes *resident; /* the mesh and sign tables on each GPU a tile is built on */
  vx_tile_tri *pairs;     /* (tile, triangle), sorted */
  color_source *color;    /* a coloured build: the coloured mesh's colour source (started), its
                             (tile, triangle) pairs (duplicates included), sorted; else NULL */
  vx_tile_tri *cpairs;
  uint64_t ncpairs;
  uint64_t *start;        /* tile k's triangles: pairs[start[k] .. start[k + 1]) */
  double *work;           /* tile k's estimated work (its triangles' area in it): the order of a
                             pool's claims, largest first; the bytes do not depend on it */
  uint64_t ntiles, max_tris;
  vx_tiled_header h;
  int zstd_level, auto_dev;
  char *tmp_dir;
  double sec_unique, sec_overlap, sec_sign, sec_pairs, sec_plan; /* its stages, all of it */
  uint64_t held;          /* the process's resident bytes once planned */
  vx_transform grid;      /* a part of a mesh split by tile: the whole mesh's grid (bo.grid) */
  vx_tile_source source;  /* a plan opened on a parts file (vx_tile_plan_open_parts): its tiles
                             come from there, not from a mesh */
  void (*source_free)(void *ctx);
  uint64_t kept;          /* such a plan's triangles, exact copies dropped */
  pthread_mutex_t mu;     /* the fallback notes */
  int fell_back;
  vx_error note;
  uint64_t streamed;      /* tiles meant to be built whole on the GPU that the streaming build
                             made instead (out of memory, or their colour could not be made
                             there), and the first one's reason */
  vx_error stream_note;
};

/* The plan of soup's tiled build with the checked options o (tile_depth set); spill files in
 * tmp_dir. */
vx_status vx_tile_plan_init(vx_tile_plan *p, const vx_soup *soup, const vx_convert_opts *o,
                            const char *tmp_dir, vx_error *err);
void vx_tile_plan_release(vx_tile_plan *p);

/* The plan of a part of a mesh split by tile (convert_split.c: the triangles near one tile): the
 * whole mesh's grid and build id instead of those the part's own bounds and triangles give. */
typedef struct vx_tile_fixed {
  vx_transform xf;
  uint64_t build_id;
  int unique;             /* the soup has no exact duplicates (they were dropped): not checked */
} vx_tile_fixed;
vx_status vx_tile_plan_init_fixed(vx_tile_plan *p, const vx_soup *soup, const vx_convert_opts *o,
                                  const char *tmp_dir, const vx_tile_fixed *fx, vx_error *err);
/* A plan without a mesh: the options of o, its spill folder; tiles, work and header are the
 * caller's to fill (a pool over tiles from a vx_tile_source). Released by vx_tile_plan_release. */
vx_status vx_tile_plan_shell(vx_tile_plan *p, const vx_convert_opts *o, const char *tmp_dir,
                             vx_error *err);
/* Makes p's build coloured when soup has colour and o allows it. */
vx_status vx_tile_plan_color(vx_tile_plan *p, const vx_soup *soup, const vx_convert_opts *o,
                             vx_error *err);
/* The roots' colour sums of a coloured build's tiles, in file order (codes at level K, only
 * the tiles that have some), and the filter: vx_tile_sums_colors, a vx_tiled_color_fn over them,
 * gives the top tree's colours. */
typedef struct vx_tile_sums {
  csum *s;
  uint64_t n;
  vx_color_filter filter;
} vx_tile_sums;
vx_status vx_tile_sums_colors(void *ctx, vx_octree *top, uint32_t K, uint32_t *colors,
                              vx_error *err);
/* Tile k's cell (Morton code). */
uint64_t vx_tile_plan_code(const vx_tile_plan *p, uint64_t k);

/* Builds tile k (0 .. ntiles - 1) with options bo (a copy of p->bo: its threads and GPU may
 * differ, the bytes do not). tris: room for max_tris indices; pre: the worker's spare tree arrays
 * (may be NULL). out_path NULL: the tile stays in memory (or a temporary file); else it is
 * written to out_path (atomically) and r->bytes stays NULL. */
vx_status vx_tile_plan_run(vx_tile_plan *p, vx_voxelize_opts *bo, uint64_t k, uint32_t *tris,
                           vx_octree_prealloc *pre, const char *out_path, vx_tile_out *r,
                           vx_error *err);
void vx_tile_out_free(vx_tile_out *r);

/* soup to a tiled .svo at out_path with the checked options o; notes and statistics into b. */
vx_status vx_convert_tiled(const vx_soup *soup, const vx_convert_opts *o, const char *out_path,
                           const char *tmp_dir, vx_conversion *b, vx_error *err);
/* The same with the pool's knobs (tests): `workers` building side by side (0: two per GPU, one
 * on the CPU); finished tiles waiting for their turn kept in memory up to `hold` bytes (0: an
 * eighth of the memory limit; 1: every waiting tile goes to a temporary file). */
typedef struct vx_tile_pool_opts {
  int workers;
  uint64_t hold;
} vx_tile_pool_opts;
vx_status vx_convert_tiled_pool(const vx_soup *soup, const vx_convert_opts *o,
                                const char *out_path, const char *tmp_dir,
                                const vx_tile_pool_opts *po, vx_conversion *b, vx_error *err);

/* The pool over plan p's tiles (p->ntiles, their work, p->h for the file's header): each built
 * by vx_tile_plan_run, or by src when given; the file at out_path, statistics and notes into b
 * (triangles: the mesh's, t0: when the conversion began). */
vx_status vx_tile_pool_run(vx_tile_plan *p, const vx_tile_source *src, const vx_convert_opts *o,
                           const char *out_path, const vx_tile_pool_opts *po, uint64_t triangles,
                           double t0, vx_conversion *b, vx_error *err);

#endif
