/* SPDX-License-Identifier: Apache-2.0 */
/* render_gpu_stub.c - the GPU entry points of a build without CUDA: no GPU, say so. */
#include "marcher/marcher.h"
#include "marcher/gpu_render.h"

#define NO_CUDA "this voxlod was built without CUDA: GPU rendering is not available"

vx_status vx_render_gpu(const vx_octree *t, const vx_march_opts *o, vx_march_image *img,
                        vx_error *err) {
  (void)t;
  (void)o;
  (void)img;
  return vx_error_set(err, VX_ERR_NO_GPU, NO_CUDA);
}

const char *vx_cuda_device_name(void) { return NULL; }

vx_status vx_render_gpu_config(const vx_octree *t, const vx_march_opts *o, const vx_gpu_config *cfg,
                               vx_march_image *img, vx_error *err) {
  (void)cfg;
  return vx_render_gpu(t, o, img, err);
}

vx_status vx_gpu_bench(const vx_octree *t, const vx_march_opts *o, const vx_camera *views,
                       int nviews, int frames, const vx_gpu_config *cfg, vx_gpu_bench_result *r,
                       vx_error *err) {
  (void)t;
  (void)o;
  (void)views;
  (void)nviews;
  (void)frames;
  (void)cfg;
  (void)r;
  return vx_error_set(err, VX_ERR_NO_GPU, NO_CUDA);
}

vx_status vx_gpu_view_create(const vx_octree *t, vx_gpu_view **out, vx_error *err) {
  (void)t;
  *out = NULL;
  return vx_error_set(err, VX_ERR_NO_GPU, NO_CUDA);
}

void vx_gpu_view_free(vx_gpu_view *g) { (void)g; }

const char *vx_gpu_view_device(const vx_gpu_view *g) {
  (void)g;
  return "";
}

uint64_t vx_gpu_view_tree_bytes(const vx_gpu_view *g) {
  (void)g;
  return 0;
}

const vx_gpu_resident *vx_gpu_view_resident(const vx_gpu_view *g) {
  (void)g;
  return NULL;
}

vx_status vx_gpu_view_draw(vx_gpu_view *g, const vx_octree *t, const vx_march_opts *o,
                           const vx_gpu_config *cfg, uint8_t *rgb, float *depth, uint32_t *visits,
                           vx_gpu_frame_times *times, vx_error *err) {
  (void)g;
  (void)t;
  (void)o;
  (void)cfg;
  (void)rgb;
  (void)depth;
  (void)visits;
  (void)times;
  return vx_error_set(err, VX_ERR_NO_GPU, NO_CUDA);
}

vx_status vx_gpu_view_bench(vx_gpu_view *g, const vx_octree *t, const vx_march_opts *o,
                            const vx_camera *views, int nviews, int frames,
                            const vx_gpu_config *cfg, vx_gpu_bench_result *r, vx_error *err) {
  (void)g;
  return vx_gpu_bench(t, o, views, nviews, frames, cfg, r, err);
}

vx_status vx_gpu_view_set_tiles(vx_gpu_view *g, const vx_tile_ref *tiles, size_t n,
                                const int32_t *cells, size_t ncells, vx_error *err) {
  (void)g;
  (void)tiles;
  (void)n;
  (void)cells;
  (void)ncells;
  return vx_error_set(err, VX_ERR_NO_GPU, NO_CUDA);
}

vx_status vx_gpu_view_draw_tiled(vx_gpu_view *g, const vx_tiled_scene *ts, uint8_t *rgb,
                                 float *depth, vx_gpu_frame_times *times, vx_error *err) {
  (void)g;
  (void)ts;
  (void)rgb;
  (void)depth;
  (void)times;
  return vx_error_set(err, VX_ERR_NO_GPU, NO_CUDA);
}
