/* render_gpu_stub.c - the GPU entry points of a build without CUDA: no GPU, say so. */
#include "marcher/marcher.h"
#include "marcher/gpu_bench.h"

vx_status vx_render_gpu(const vx_octree *t, const vx_march_opts *o, vx_march_image *img, vx_error *err) {
  (void)t;
  (void)o;
  (void)img;
  return vx_error_set(err, VX_ERR_NO_GPU,
                      "this voxlod was built without CUDA: GPU rendering is not available");
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
  return vx_error_set(err, VX_ERR_NO_GPU,
                      "this voxlod was built without CUDA: the GPU benchmark is not available");
}
