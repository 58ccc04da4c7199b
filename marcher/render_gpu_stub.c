/* render_gpu_stub.c - the GPU entry points of a build without CUDA: no GPU, say so. */
#include "marcher/marcher.h"

vx_status vx_render_gpu(const vx_tree *t, const vx_render_opts *o, vx_image *img, vx_error *err) {
  (void)t;
  (void)o;
  (void)img;
  return vx_error_set(err, VX_ERR_NO_GPU,
                      "this voxlod was built without CUDA: GPU rendering is not available");
}

const char *vx_gpu_name(void) { return NULL; }
