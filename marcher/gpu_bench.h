/* gpu_bench.h - timing the CUDA ray-marcher: `voxlod bench` and the NanoVDB comparison call this.
 *
 * Contract
 * - vx_gpu_bench() uploads the tree once (levels <= o->lod, or all loaded levels for VX_LOD_AUTO),
 *   renders every view once to warm up, then renders `frames` frames cycling through `views`,
 *   each frame timed on the device with a pair of CUDA events around its launch. It then renders
 *   every view once more with node-visit counting on (untimed) to fill visits_per_ray.
 * - The frame size, LOD mode, shading and lod_scale come from `o`; o->cam is ignored (views).
 * - Never prints. VX_ERR_NO_GPU when built without CUDA, when no device is usable or when the tree
 *   does not fit in GPU memory (the message says how much was needed and free); VX_ERR_CUDA for any
 *   other CUDA failure. A zeroed vx_gpu_config (or NULL) is the default kernel.
 */
#ifndef VOXLOD_MARCHER_GPU_BENCH_H
#define VOXLOD_MARCHER_GPU_BENCH_H

#include "marcher/marcher.h"

VX_EXTERN_C_BEGIN

typedef enum vx_gpu_schedule {
  VX_GPU_DEFAULT = 0,    /* persistent, 128-thread blocks (docs/GPU_NOTES.md: fastest, session 6) */
  VX_GPU_TILED = 1,      /* one thread per pixel, a 2D grid of block_w x block_h blocks */
  VX_GPU_PERSISTENT = 2  /* one block per SM slot; each warp takes 8x4 pixel tiles from an atomic
                            counter until the frame is done */
} vx_gpu_schedule;

/* Kernel variant. Zero = default (persistent, 128-thread blocks, no register cap). */
typedef struct vx_gpu_config {
  uint32_t block_w, block_h; /* threads per block in x and y; block_w * block_h <= 256 */
  int schedule;              /* vx_gpu_schedule */
  int reg_cap;               /* 0: the compiler's choice; else registers per thread are capped to
                                about this (one of 128, 85, 64, 48, 40 through __launch_bounds__) */
} vx_gpu_config;

typedef struct vx_gpu_bench_result {
  char device[256];          /* GPU name */
  int sm_count;              /* multiprocessors */
  uint32_t width, height;
  int frames;                /* timed frames */
  int level;                 /* o->lod as rendered (VX_LOD_AUTO for auto) */
  uint32_t levels_uploaded;  /* levels of the tree on the GPU */
  double ms_median, ms_min, ms_max; /* kernel time per frame */
  double mrays_per_s;        /* width * height / ms_median, in millions of primary rays per second */
  double visits_per_ray;     /* node + voxel fetches per primary ray, mean over the views */
  double hit_fraction;       /* fraction of pixels that hit the surface, over the views */
  uint64_t tree_bytes;       /* nodes + voxels uploaded */
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

VX_EXTERN_C_END

#endif
