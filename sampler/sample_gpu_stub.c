/* SPDX-License-Identifier: Apache-2.0 */
/* sample_gpu_stub.c - the GPU sampler of a build without CUDA: no GPU, say so. */
#include "sampler/sampler.h"

#define NO_CUDA "this voxlod was built without CUDA: GPU sampling is not available"

vx_status vx_gpu_sampler_create(const vx_gpu_resident *res, const uint32_t *resigned,
                                uint64_t voxel_count, vx_gpu_sampler **out, vx_error *err) {
  (void)res;
  (void)resigned;
  (void)voxel_count;
  *out = NULL;
  return vx_error_set(err, VX_ERR_NO_GPU, NO_CUDA);
}

void vx_gpu_sampler_free(vx_gpu_sampler *g) { (void)g; }

vx_status vx_gpu_sampler_rebind(vx_gpu_sampler *g, const vx_gpu_resident *res,
                                const uint32_t *resigned, uint64_t voxel_count, vx_error *err) {
  (void)g, (void)res, (void)resigned, (void)voxel_count;
  return vx_error_set(err, VX_ERR_NO_GPU, NO_CUDA);
}

void vx_gpu_sampler_set_walks(vx_gpu_sampler *g, int on) { (void)g, (void)on; }

int vx_gpu_pointer_kind(const vx_gpu_sampler *g, const void *p) {
  (void)g;
  (void)p;
  return 0;
}

vx_status vx_gpu_sample(vx_gpu_sampler *g, const vx_sample_tree *s, int device, void *stream,
                        const float *points, uint64_t n, float *dist, float *grad, uint8_t *flags,
                        vx_sample_count *count, vx_gpu_sample_times *times, vx_error *err) {
  (void)g, (void)s, (void)device, (void)stream, (void)points, (void)n, (void)dist, (void)grad;
  (void)flags, (void)count, (void)times;
  return vx_error_set(err, VX_ERR_NO_GPU, NO_CUDA);
}

vx_status vx_gpu_sample_bench(vx_gpu_sampler *g, const vx_sample_tree *s, const float *points,
                              uint64_t n, int reps, double *ms, uint64_t flag_counts[8], int *regs,
                              vx_error *err) {
  (void)g, (void)s, (void)points, (void)n, (void)reps, (void)ms, (void)flag_counts, (void)regs;
  return vx_error_set(err, VX_ERR_NO_GPU, NO_CUDA);
}

vx_status vx_gpu_band_cache_fill(vx_gpu_sampler *g, const vx_sample_tree *s,
                                 const struct vx_bc_job *job, uint64_t count, vx_error *err) {
  (void)g, (void)s, (void)job, (void)count;
  return vx_error_set(err, VX_ERR_NO_GPU, NO_CUDA);
}
