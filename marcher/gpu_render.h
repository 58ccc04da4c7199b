/* SPDX-License-Identifier: Apache-2.0 */
/* gpu_render.h - the CUDA ray-marcher: a tree resident on the GPU, frames drawn from it, and the
 * timing that `voxlod bench` and the NanoVDB comparison use.
 *
 * Contract
 * - vx_gpu_view_create() uploads every loaded level of the tree once (svo/gpu_tree.h, which also
 *   creates the CUDA context); vx_gpu_view_draw() then renders frames of any size, camera, cut and
 *   shading from it, copying the pixels into host memory; vx_gpu_view_free() releases it.
 * - vx_gpu_view_bench() renders every view once to warm up, then `frames` frames cycling through
 *   the views, each timed on the device with a pair of CUDA events around its launch; it then
 *   times the same frames with the copy of the RGB pixels back to host memory (wall clock), and
 *   renders every view once more with node-visit counting on (untimed) for visits_per_ray.
 * - vx_render_gpu_config() and vx_gpu_bench() do the same for one call (create, draw or bench,
 *   free).
 * - Never prints. VX_ERR_NO_GPU when built without CUDA, when no device is usable or when the tree
 *   does not fit in GPU memory (the message says how much was needed and free); VX_ERR_NOMEM when
 *   GPU memory runs out; VX_ERR_CUDA for any other CUDA failure (svo/cuda_status.cuh). A zeroed
 *   vx_gpu_config (or NULL) is the default kernel.
 */
#ifndef VOXLOD_MARCHER_GPU_RENDER_H
#define VOXLOD_MARCHER_GPU_RENDER_H

#include "marcher/marcher.h"
#include "svo/gpu_tree.h"
#include "marcher/trace_tiled.h"

VX_EXTERN_C_BEGIN

typedef enum vx_gpu_schedule {
  VX_GPU_DEFAULT = 0,    /* persistent, 128-thread blocks (the fastest: docs/MARCHER.md) */
  VX_GPU_TILED = 1,      /* one thread per pixel, a 2D grid of block_w x block_h blocks */
  VX_GPU_PERSISTENT = 2  /* one block per SM slot; each warp takes 8x4 pixel tiles from an atomic
                            counter until the frame is done */
} vx_gpu_schedule;

/* Kernel variant. Zero = default (persistent, 128-thread blocks, no register cap). */
typedef struct vx_gpu_config {
  uint32_t block_w, block_h; /* threads per block in x and y; block_w * block_h <= 256 */
  int schedule;              /* vx_gpu_schedule */
  int reg_cap;               /* 0: the compiler's choice; else registers per thread are capped to
                                about this (one of 128, 85, 64, 48, 40 through __launch_bounds__;
                                48 and 40 act as 64 on sm_75) */
} vx_gpu_config;

typedef struct vx_gpu_bench_result {
  char device[256];          /* GPU name */
  int sm_count;              /* multiprocessors */
  uint32_t width, height;
  int frames;                /* timed frames */
  int level;                 /* o->lod as rendered (VX_LOD_AUTO for auto) */
  uint32_t levels_uploaded;  /* levels of the tree on the GPU */
  double ms_median, ms_min, ms_max; /* kernel time per frame */
  double ms_copy_median;     /* kernel + copy of the RGB pixels to host memory, wall time */
  double mrays_per_s;        /* width * height / ms_median, in millions of primary rays per second */
  double visits_per_ray;     /* node + voxel fetches per primary ray, mean over the views */
  double hit_fraction;       /* fraction of pixels that hit the surface, over the views */
  uint64_t tree_bytes;       /* nodes + voxels uploaded, their colours included */
  uint64_t frame_bytes;      /* framebuffers on the GPU */
  uint64_t device_used_bytes;/* device memory in use during the run (cudaMemGetInfo), all
                                processes and the CUDA context included */
  int regs_per_thread;       /* of the kernel that ran (cudaFuncGetAttributes) */
  int local_bytes;           /* its local memory (stack/spills) per thread */
} vx_gpu_bench_result;

/* Renders frames and times them (see the contract above). cfg may be NULL. nviews >= 1,
 * frames >= 1. */
vx_status vx_gpu_bench(const vx_octree *t, const vx_march_opts *o, const vx_camera *views,
                       int nviews, int frames, const vx_gpu_config *cfg, vx_gpu_bench_result *r,
                       vx_error *err);

/* vx_render_gpu with a chosen kernel variant (tests compare variants pixel for pixel). */
vx_status vx_render_gpu_config(const vx_octree *t, const vx_march_opts *o, const vx_gpu_config *cfg,
                               vx_march_image *img, vx_error *err);

/* ---- a view: the tree resident on the GPU, frame buffers, a stream ------------------------ */

typedef struct vx_gpu_view vx_gpu_view;

vx_status vx_gpu_view_create(const vx_octree *t, vx_gpu_view **out, vx_error *err);
void vx_gpu_view_free(vx_gpu_view *g);

/* GPU name and bytes of the tree uploaded. */
const char *vx_gpu_view_device(const vx_gpu_view *g);
uint64_t vx_gpu_view_tree_bytes(const vx_gpu_view *g);

/* The tree the view holds on the device (svo/gpu_tree.h), valid while g lives: other kernels that
 * read the tree (sampler/) use it instead of uploading the tree again. */
const vx_gpu_resident *vx_gpu_view_resident(const vx_gpu_view *g);

/* Timings of one frame: the kernel (CUDA events) and the copy back (wall clock). */
typedef struct vx_gpu_frame_times {
  double ms_kernel, ms_copy;
} vx_gpu_frame_times;

/* One frame of t (the tree the view was made from) into host memory: rgb (width*height*3) and,
 * when not NULL, depth and visits. times may be NULL. */
vx_status vx_gpu_view_draw(vx_gpu_view *g, const vx_octree *t, const vx_march_opts *o,
                           const vx_gpu_config *cfg, uint8_t *rgb, float *depth, uint32_t *visits,
                           vx_gpu_frame_times *times, vx_error *err);

/* ---- tiled trees (trace_tiled.h): the view made from the top tree (vx_tiled_top) ----------- */

/* The tile table (n entries: device pointers of the tiles' resident arrays) and the cell table
 * (ncells entries) on the device, uploaded again only when they changed. */
vx_status vx_gpu_view_set_tiles(vx_gpu_view *g, const vx_tile_ref *tiles, size_t n,
                                const int32_t *cells, size_t ncells, vx_error *err);

/* One frame of a tiled tree: ts (vx_tiled_scene_init) with the view's top tree and tables. */
vx_status vx_gpu_view_draw_tiled(vx_gpu_view *g, const vx_tiled_scene *ts, uint8_t *rgb,
                                 float *depth, vx_gpu_frame_times *times, vx_error *err);

vx_status vx_gpu_view_bench(vx_gpu_view *g, const vx_octree *t, const vx_march_opts *o,
                            const vx_camera *views, int nviews, int frames,
                            const vx_gpu_config *cfg, vx_gpu_bench_result *r, vx_error *err);

VX_EXTERN_C_END

#endif
