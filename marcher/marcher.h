/* SPDX-License-Identifier: Apache-2.0 */
/* marcher.h - rendering a vx_octree: camera, options, CPU and GPU renderers.
 *
 * Both renderers are thin loops around vx_render_pixel() in trace.h, which is compiled for host
 * and device; a CPU test of an image therefore checks the GPU's per-ray logic too.
 *
 * Contract
 * - The tree must have passed vx_octree_validate() (the file reader does this).
 * - Images are row-major, top row first, 8-bit RGB; depth is the distance along the ray in world
 *   units to the first hit (INFINITY on a miss).
 * - Never prints. vx_render_gpu() returns VX_ERR_NO_GPU when built without CUDA or when no device
 *   is usable, so a caller can fall back to vx_render_cpu().
 */
#ifndef VOXLOD_MARCHER_H
#define VOXLOD_MARCHER_H

#include "svo/svo.h"

VX_EXTERN_C_BEGIN

/* vx_shade and vx_camera are the public ones (include/voxlod/base.h). */

#define VX_LOD_AUTO (-1)

typedef struct vx_march_opts {
  uint32_t width, height;
  int lod;          /* level to cut the tree at, 0..depth; VX_LOD_AUTO: pixel-cone rule */
  float lod_scale;  /* auto LOD: a node is fine enough when its projection < lod_scale pixels; 0: 1 */
  vx_shade shade;
  vx_camera cam;
  int no_cull;      /* 1: walk every cell the ray crosses, without plane-bound culling (trace.h);
                       the image is the same, for measuring what culling saves */
} vx_march_opts;

typedef struct vx_march_image {
  uint32_t width, height;
  uint8_t *rgb;     /* width*height*3 */
  float *depth;     /* width*height, world units along the ray; INFINITY on miss */
  uint32_t *visits; /* width*height node visits per ray; may be NULL (not filled) */
} vx_march_image;

/* An image over the caller's buffers (rgb, depth; no visit counts). */
vx_march_image vx_march_image_of(uint32_t width, uint32_t height, uint8_t *rgb, float *depth);

vx_status vx_march_image_alloc(vx_march_image *img, uint32_t width, uint32_t height, int with_visits,
                         vx_error *err);
void vx_march_image_free(vx_march_image *img);

/* A camera that frames the whole model, looking from the given azimuth/elevation (degrees). */
void vx_march_orbit(const vx_octree *t, double azimuth_deg, double elevation_deg, double fov_y_deg,
                     vx_camera *cam);

vx_status vx_render_cpu(const vx_octree *t, const vx_march_opts *o, vx_march_image *img, int threads,
                        vx_error *err);

/* A tiled tree's frame (scene.h: vx_tiled_scene_init, its tile and cell tables host memory). */
struct vx_tiled_scene;
vx_status vx_render_cpu_tiled(const struct vx_tiled_scene *ts, vx_march_image *img, int threads,
                              vx_error *err);

/* GPU render (marcher/render_gpu.cu). VX_ERR_NO_GPU when no CUDA device is usable. */
vx_status vx_render_gpu(const vx_octree *t, const vx_march_opts *o, vx_march_image *img, vx_error *err);

/* Name of the GPU vx_render_gpu would use, or NULL. */
const char *vx_cuda_device_name(void);

VX_EXTERN_C_END

#endif
