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
} vx_renderer_opts;

/* Prepares to draw t (which must outlive the renderer). opts may be NULL. */
VX_API vx_status vx_renderer_create(const vx_tree *t, const vx_renderer_opts *opts,
                                    vx_renderer **out, vx_error *err);
VX_API void vx_renderer_free(vx_renderer *r);

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
} vx_renderer_info;

VX_API vx_status vx_renderer_get_info(const vx_renderer *r, vx_renderer_info *info);
/* Notes from creation (a GPU fallback), "" when none. Owned by r. */
VX_API const char *vx_renderer_notes(const vx_renderer *r);

typedef struct vx_bench_stats {
  uint32_t struct_size;
  int frames;                    /* timed frames */
  double ms_median, ms_min, ms_max; /* per frame: render only (GPU: CUDA events) */
  double ms_copy_median;         /* per frame: render + copy of the RGB pixels to host memory,
                                    wall time, median (what vx_render costs) */
  double mrays_per_s;            /* width * height / ms_median */
  double visits_per_ray;         /* node and voxel fetches per primary ray, mean over the views */
  double hit_fraction;           /* pixels that hit the surface, over the views */
  uint64_t device_used_bytes;    /* GPU memory in use during the run, all processes included */
  int regs_per_thread;           /* the kernel's registers (GPU) */
} vx_bench_stats;

/* Times `frames` frames cycling through `nviews` views (each an opts with its camera), after
 * rendering every view once to warm up. */
VX_API vx_status vx_renderer_bench(vx_renderer *r, const vx_render_opts *views, int nviews,
                                   int frames, vx_bench_stats *st, vx_error *err);

VX_EXTERN_C_END

#endif
