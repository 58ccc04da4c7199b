/* SPDX-License-Identifier: Apache-2.0 */
/* voxlod/render.h - images of a tree at any level of detail, on the GPU or the CPU.
 *
 * A renderer is made once for a tree: on the GPU it uploads the tree (the CUDA context and the
 * upload are the first image's cost) and keeps it there, so every later frame costs the kernel and
 * the copy of the pixels back to host memory. The CPU renderer runs the same per-ray code on all
 * cores. Images are row-major, top row first, 8-bit RGB; depth is the distance along the ray in
 * world units to the first hit (INFINITY on a miss, FLT_MAX when a hit lies beyond float range).
 */
#ifndef VOXLOD_RENDER_H
#define VOXLOD_RENDER_H

#include "voxlod/base.h"
#include "voxlod/tree.h"

VX_EXTERN_C_BEGIN

typedef struct vx_renderer vx_renderer;

typedef struct vx_renderer_opts {
  uint32_t struct_size; /* sizeof(vx_renderer_opts), or 0 */
  vx_device device;     /* AUTO: the GPU when usable (falling back to the CPU, with a note, when it
                           is not or the tree does not fit), GPU: fail without one, CPU */
  int threads;          /* CPU renderer threads; 0: all cores */
  /* a tiled tree's (vx_renderer_create_tiled): */
  uint32_t memory_budget_mib; /* MiB of tiles resident (GPU memory, host memory on the CPU);
                                 0: three quarters of the GPU's free memory, or half the
                                 default memory limit on the CPU (a 4-byte field: the struct's
                                 first layout keeps its size) */
  int stream_tiles;       /* 1: a frame never waits for tiles: detail is read in the background
                             and drawn from coarser levels until it arrives (an interactive
                             viewer); 0: each frame reads what it draws first */
} vx_renderer_opts;

/* Prepares to draw t (which must outlive the renderer). opts may be NULL. */
VX_API vx_status vx_renderer_create(const vx_tree *t, const vx_renderer_opts *opts,
                                    vx_renderer **out, vx_error *err);
VX_API void vx_renderer_free(vx_renderer *r);

/* Prepares to draw a tiled tree of any depth (f must outlive the renderer; its tiles are read by
 * loader threads through readers of their own on the file's path) within
 * opts->memory_budget_mib. Every tile keeps its coarse levels (the deepest at which all of them
 * fit in a quarter of the budget); each frame the visible tiles get the levels the view needs, nearest
 * first, while the budget lasts; the others are drawn from their coarse levels (their nodes'
 * planes). A cut at or above the tiles' roots is drawn from the top tree. The budget, what is
 * resident and the coarse level are in vx_renderer_get_info; each frame's loads in its stats.
 * VX_ERR_LIMIT when the budget cannot hold the tiles' roots, or when the file has more than 2^7
 * tiles per axis. A coloured tiled tree is drawn in colour (each tile's colours, the top tree's
 * above them). */
VX_API vx_status vx_renderer_create_tiled(vx_tiled_file *f, const vx_renderer_opts *opts,
                                          vx_renderer **out, vx_error *err);
/* vx_camera_orbit for a tiled tree. */
VX_API void vx_tiled_camera_orbit(const vx_tiled_file *f, double azimuth_deg,
                                  double elevation_deg, double fov_y_deg, vx_camera *cam);

typedef enum vx_lod_mode {
  VX_LOD_FINEST = 0, /* the finest level loaded */
  VX_LOD_LEVEL = 1,  /* cut the tree at `level` (0 = root .. depth): nodes drawn as their planes */
  VX_LOD_PIXEL = 2   /* per pixel: stop at nodes smaller than lod_scale pixels (auto) */
} vx_lod_mode;

typedef struct vx_render_opts {
  uint32_t struct_size; /* sizeof(vx_render_opts), or 0 */
  uint32_t width, height; /* 0: 800 x 600; at most 32768 each */
  vx_lod_mode lod;
  int level;            /* with VX_LOD_LEVEL */
  float lod_scale;      /* with VX_LOD_PIXEL; 0: 1 pixel */
  vx_shade shade;
  vx_camera camera;     /* all zero: vx_camera_orbit(t, 30, 20, 40) */
} vx_render_opts;

/* A camera that frames the whole model from azimuth / elevation (degrees), with the given
 * vertical field of view, relative to the model's size (any scale works). */
VX_API void vx_camera_orbit(const vx_tree *t, double azimuth_deg, double elevation_deg,
                            double fov_y_deg, vx_camera *cam);

typedef struct vx_frame_stats {
  uint32_t struct_size; /* sizeof(vx_frame_stats), or 0 */
  int used_gpu;
  double ms_total;      /* the whole call, wall time */
  double ms_render;     /* tracing (on the GPU: kernel time from CUDA events) */
  double ms_copy;       /* GPU: copying the pixels back to host memory */
  uint64_t pixels_hit;  /* pixels that hit the surface (counted when depth is requested) */
  /* a tiled tree's: */
  uint32_t tiles_loaded;  /* tiles' levels read (and uploaded) for this frame */
  uint32_t tiles_pending; /* tiles drawn coarser than this view wants, their levels still to be
                             read (stream_tiles) or beyond the budget: 0 */
  uint64_t resident_bytes;/* the tiles' and top tree's bytes resident after this frame */
} vx_frame_stats;

/* Draws one frame into rgb (width * height * 3 bytes) and, when not NULL, depth (width * height
 * floats). opts may be NULL (800 x 600, finest level, default camera); stats may be NULL. */
VX_API vx_status vx_render(vx_renderer *r, const vx_render_opts *opts, uint8_t *rgb, float *depth,
                           vx_frame_stats *stats, vx_error *err);

typedef struct vx_renderer_info {
  uint32_t struct_size; /* sizeof(vx_renderer_info), or 0 */
  int used_gpu;         /* 1: frames are drawn by the CUDA kernel */
  char device[256];     /* GPU name or "CPU (N threads)" */
  uint64_t tree_bytes;  /* bytes uploaded to the GPU (0 on the CPU) */
  double ms_create;     /* the creation's wall time (context, upload) */
  /* a tiled tree's (0 for a tree): */
  uint64_t budget_bytes;   /* the memory budget */
  uint64_t resident_bytes; /* the tiles' and top tree's bytes resident now */
  uint64_t tiles;          /* tiles in the file */
  uint64_t tiles_detailed; /* tiles resident finer than their coarse levels */
  uint32_t coarse_level;   /* the coarse levels' finest, as a level of the whole tree */
} vx_renderer_info;

VX_API vx_status vx_renderer_get_info(const vx_renderer *r, vx_renderer_info *info);
/* Notes from creation (a GPU fallback), "" when none. Owned by r. */
VX_API const char *vx_renderer_notes(const vx_renderer *r);

VX_EXTERN_C_END

#endif
