/* SPDX-License-Identifier: Apache-2.0 */
/* gpu_tree_stub.c - the GPU-resident tree of a build without CUDA: no GPU, say so. */
#include <string.h>

#include "svo/gpu_tree.h"
#include "sys/alloc.h"

vx_status vx_gpu_resident_create(const vx_octree *t, vx_gpu_resident **out, vx_error *err) {
  (void)t;
  *out = NULL;
  return vx_error_set(err, VX_ERR_NO_GPU,
                      "this voxlod was built without CUDA: the GPU is not available");
}

void vx_gpu_resident_free(vx_gpu_resident *g) { (void)g; }

const char *vx_gpu_resident_device(const vx_gpu_resident *g) {
  (void)g;
  return "";
}

int vx_gpu_resident_sm_count(const vx_gpu_resident *g) {
  (void)g;
  return 0;
}

uint64_t vx_gpu_resident_bytes(const vx_gpu_resident *g) {
  (void)g;
  return 0;
}

void vx_gpu_resident_tree(const vx_gpu_resident *g, vx_gpu_tree *out) {
  (void)g;
  memset(out, 0, sizeof *out);
}

int vx_gpu_device_count(void) { return 0; }

vx_status vx_gpu_memory(uint64_t *free_bytes, uint64_t *total_bytes, vx_error *err) {
  *free_bytes = *total_bytes = 0;
  return vx_error_set(err, VX_ERR_NO_GPU, "this voxlod was built without CUDA");
}

vx_status vx_gpu_use_device(int device, vx_error *err) {
  return vx_error_set(err, VX_ERR_NO_GPU, "GPU %d: this voxlod was built without CUDA", device);
}

int vx_host_stage_reserve(vx_host_stage *s, size_t bytes) {
  if (s->p && s->bytes >= bytes) return 1;
  vx_host_stage_free(s);
  s->p = vx_malloc(bytes ? bytes : 1);
  s->bytes = s->p ? bytes : 0;
  return s->p != NULL;
}

void vx_host_stage_free(vx_host_stage *s) {
  vx_free(s->p);
  memset(s, 0, sizeof *s);
}
