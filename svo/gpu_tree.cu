/* SPDX-License-Identifier: Apache-2.0 */
/* gpu_tree.cu - a tree resident on the GPU (gpu_tree.h): the context, the upload, the arrays. */
#include <cuda_runtime.h>
#include <string.h>

#include "svo/gpu_tree.h"
#include "svo/cuda_status.cuh"
#include "sys/alloc.h"

struct vx_gpu_resident {
  int device;
  cudaDeviceProp prop;
  vx_node *nodes;   /* device */
  vx_voxel *voxels; /* device, NULL when level D is not loaded */
  uint32_t *node_color, *voxel_color; /* device, NULL for a grey tree */
  int holes;        /* some uploaded colour has alpha 0 */
  uint64_t node_count, voxel_count;
  uint32_t levels;  /* levels uploaded: 0 .. levels-1 */
};

int vx_gpu_device_count(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError(); /* clear */
    return 0;
  }
  return n;
}

vx_status vx_gpu_memory(uint64_t *free_bytes, uint64_t *total_bytes, vx_error *err) {
  vx_status st = VX_OK;
  size_t f = 0, t = 0;
  if (vx_gpu_device_count() <= 0) return vx_error_set(err, VX_ERR_NO_GPU, "GPU: no CUDA device");
  VX_CU(cudaMemGetInfo(&f, &t), "cudaMemGetInfo");
  *free_bytes = f;
  *total_bytes = t;
done:
  return st;
}

vx_status vx_gpu_use_device(int device, vx_error *err) {
  const int n = vx_gpu_device_count();
  if (device < 0 || device >= n)
    return vx_error_set(err, VX_ERR_NO_GPU, "GPU %d: the machine has %d CUDA device%s", device, n,
                        n == 1 ? "" : "s");
  vx_status st = VX_OK;
  VX_CU(cudaSetDevice(device), "cudaSetDevice");
done:
  return st;
}

int vx_host_stage_reserve(vx_host_stage *s, size_t bytes) {
  if (s->p && s->bytes >= bytes) return 1;
  vx_host_stage_free(s);
  if (!bytes) bytes = 1;
  if (cudaMallocHost(&s->p, bytes) == cudaSuccess) {
    s->pinned = 1;
  } else { /* refused (no device, or the driver's limit): ordinary memory still works */
    cudaGetLastError();
    s->p = vx_malloc(bytes);
  }
  s->bytes = s->p ? bytes : 0;
  return s->p != NULL;
}

void vx_host_stage_free(vx_host_stage *s) {
  if (s->pinned) cudaFreeHost(s->p);
  else vx_free(s->p);
  memset(s, 0, sizeof *s);
}

static vx_status gpu_open(vx_gpu_resident *c, vx_error *err) {
  vx_status st = VX_OK;
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n <= 0) {
    cudaGetLastError(); /* clear */
    return vx_error_set(err, VX_ERR_NO_GPU, "GPU: no usable CUDA device (%s)",
                        e != cudaSuccess ? cudaGetErrorString(e) : "none found");
  }
  VX_CU(cudaGetDevice(&c->device), "cudaGetDevice");
  VX_CU(cudaGetDeviceProperties(&c->prop, c->device), "cudaGetDeviceProperties");
  VX_CU(cudaFree(0), "creating the CUDA context");
done:
  return st;
}

/* Whether a colour of c[0 .. n-1] has alpha 0 (a hole): the renderer then checks hit cells.
 * In chunks without an early exit inside, which the compiler vectorizes (100M colours: 300 ms
 * one by one, 40-80 ms so, on a shared 2-core host). */
static int has_hole(const uint32_t *c, uint64_t n) {
  for (uint64_t i = 0; i < n; i += 4096) {
    uint64_t e = n - i < 4096 ? n - i : 4096;
    uint32_t any = 0;
    for (uint64_t j = 0; j < e; j++) any |= c[i + j] < 0x01000000u ? 1u : 0u;
    if (any) return 1;
  }
  return 0;
}

static vx_status gpu_upload(vx_gpu_resident *c, const vx_octree *t, vx_error *err) {
  vx_status st = VX_OK;
  uint32_t levels = t->levels_loaded < t->depth + 1 ? t->levels_loaded : t->depth + 1;
  if (levels == 0 || !t->nodes)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "GPU: the tree has no levels");
  uint32_t node_levels = levels < t->depth ? levels : t->depth;
  uint64_t nodes = t->level_first[node_levels - 1] + t->level_count[node_levels - 1];
  uint64_t voxels = levels > t->depth ? t->voxel_count : 0;
  size_t nb = (size_t)nodes * sizeof(vx_node), vb = (size_t)voxels * sizeof(vx_voxel);
  /* colour arrays, parallel to the uploaded nodes and voxels */
  size_t ncb = t->node_color ? (size_t)nodes * sizeof(uint32_t) : 0;
  size_t vcb = t->voxel_color && vb ? (size_t)voxels * sizeof(uint32_t) : 0;
  size_t all = nb + vb + ncb + vcb;
  size_t free_b = 0, total_b = 0;
  VX_CU(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
  if ((uint64_t)all + ((uint64_t)64 << 20) > free_b)
    return vx_error_set(err, VX_ERR_NO_GPU,
                        "GPU: not enough device memory: the tree needs %.1f MiB, %.1f MiB free",
                        (double)all / 1048576.0, (double)free_b / 1048576.0);
  VX_CU(cudaMalloc((void **)&c->nodes, nb), "allocating the nodes");
  VX_CU(cudaMemcpy(c->nodes, t->nodes, nb, cudaMemcpyHostToDevice), "uploading the nodes");
  if (vb) {
    VX_CU(cudaMalloc((void **)&c->voxels, vb), "allocating the voxels");
    VX_CU(cudaMemcpy(c->voxels, t->voxels, vb, cudaMemcpyHostToDevice), "uploading the voxels");
  }
  if (ncb) {
    VX_CU(cudaMalloc((void **)&c->node_color, ncb), "allocating the node colours");
    VX_CU(cudaMemcpy(c->node_color, t->node_color, ncb, cudaMemcpyHostToDevice),
          "uploading the node colours");
    c->holes |= has_hole(t->node_color, nodes);
  }
  if (vcb) {
    VX_CU(cudaMalloc((void **)&c->voxel_color, vcb), "allocating the voxel colours");
    VX_CU(cudaMemcpy(c->voxel_color, t->voxel_color, vcb, cudaMemcpyHostToDevice),
          "uploading the voxel colours");
    c->holes |= has_hole(t->voxel_color, voxels);
  }
  c->node_count = nodes;
  c->voxel_count = voxels;
  c->levels = levels;
done:
  return st;
}

extern "C" void vx_gpu_resident_free(vx_gpu_resident *c) {
  if (!c) return;
  /* Errors on free are ignored: nothing can be done about them. */
  if (c->nodes) cudaFree(c->nodes);
  if (c->voxels) cudaFree(c->voxels);
  if (c->node_color) cudaFree(c->node_color);
  if (c->voxel_color) cudaFree(c->voxel_color);
  cudaGetLastError();
  vx_free(c);
}

extern "C" vx_status vx_gpu_resident_create(const vx_octree *t, vx_gpu_resident **out,
                                            vx_error *err) {
  *out = NULL;
  if (!t || !t->nodes) return vx_error_set(err, VX_ERR_INVALID_ARG, "GPU: no tree");
  vx_gpu_resident *c = (vx_gpu_resident *)vx_calloc(1, sizeof *c);
  if (!c) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  vx_status st = gpu_open(c, err);
  if (st == VX_OK) st = gpu_upload(c, t, err);
  if (st != VX_OK) {
    vx_gpu_resident_free(c);
    return st;
  }
  *out = c;
  return VX_OK;
}

extern "C" const char *vx_gpu_resident_device(const vx_gpu_resident *g) { return g->prop.name; }

extern "C" int vx_gpu_resident_sm_count(const vx_gpu_resident *g) {
  return g->prop.multiProcessorCount;
}

extern "C" uint64_t vx_gpu_resident_bytes(const vx_gpu_resident *g) {
  return g->node_count * (sizeof(vx_node) + (g->node_color ? sizeof(uint32_t) : 0)) +
         g->voxel_count * (sizeof(vx_voxel) + (g->voxel_color ? sizeof(uint32_t) : 0));
}

extern "C" void vx_gpu_resident_tree(const vx_gpu_resident *g, vx_gpu_tree *out) {
  out->nodes = g->nodes;
  out->voxels = g->voxels;
  out->levels = g->levels;
  out->device = g->device;
  out->node_color = g->node_color;
  out->voxel_color = g->voxel_color;
  out->holes = g->holes;
}
