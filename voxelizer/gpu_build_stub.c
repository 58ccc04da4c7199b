/* SPDX-License-Identifier: Apache-2.0 */
/* gpu_build_stub.c - the voxelizer's GPU entry points in a build without CUDA: say so. */
#include "voxelizer/internal.h"
#include "voxelizer/color_internal.h"

#include <string.h>

vx_status vx_surface_build_gpu(const vx_soup *mesh, const vx_transform *xf, uint32_t depth,
                               const vx_sign_data *sign, float band, const vx_gpu_build_opts *go,
                               vx_progress_fn progress, void *user, vx_surface *out,
                               vx_voxelize_stats *stats, vx_error *err) {
  memset(out, 0, sizeof *out);
  return vx_error_set(err, VX_ERR_NO_GPU, "this voxlod was built without CUDA");
}

vx_status vx_gpu_meshes_create(const vx_soup *mesh, const vx_transform *xf,
                               const vx_sign_data *sign, vx_gpu_meshes **out, vx_error *err) {
  *out = NULL;
  return vx_error_set(err, VX_ERR_NO_GPU, "this voxlod was built without CUDA");
}

void vx_gpu_meshes_stats(vx_gpu_meshes *m, int *uploads, double *seconds) {
  (void)m;
  *uploads = 0;
  *seconds = 0.0;
}

void vx_gpu_meshes_free(vx_gpu_meshes *m) { (void)m; }

void *vx_gpu_warmup_start(void) { return NULL; }
void vx_gpu_warmup_join(void *h) { (void)h; }

void vx_gpu_surface_free(vx_surface *s) { memset(s, 0, sizeof *s); }

vx_status vx_octree_build_gpu(const vx_surface *dev, uint32_t depth, float band, float max_error,
                              vx_octree_prealloc *pre, vx_octree *out, double sec[3],
                              vx_fit_root *root, vx_error *err) {
  (void)root;
  (void)max_error;
  memset(out, 0, sizeof *out);
  return vx_error_set(err, VX_ERR_NO_GPU, "this voxlod was built without CUDA");
}

vx_status vx_sign_cert_gpu(const vx_wind_tree *w, uint8_t *clean, vx_error *err) {
  return vx_error_set(err, VX_ERR_NO_GPU, "this voxlod was built without CUDA");
}

vx_status color_records_gpu(const vx_soup *soup, const vx_transform *xf, uint32_t R,
                            const cpart_src *src, const color_region *reg, uint64_t max_recs,
                            const color_sink *sink, crec **recs, uint64_t *n, int *sorted,
                            double sec[3], vx_error *err) {
  (void)sink;
  *recs = NULL;
  *n = 0;
  *sorted = 0;
  if (sec) sec[0] = sec[1] = sec[2] = 0.0;
  return vx_error_set(err, VX_ERR_NO_GPU, "this voxlod was built without CUDA");
}

uint64_t color_gpu_piece_records(uint64_t n) {
  (void)n;
  return 0;
}
