/* SPDX-License-Identifier: Apache-2.0 */
/* gpu_tree.h - a tree resident on the GPU: every loaded level uploaded once, as the same
 * pointer-free arrays the host holds (node.h: nodes[] breadth first, voxels[] Morton order; the
 * colour arrays beside them when the tree has colour). The
 * renderer (marcher/gpu_render.h) draws from it and the sampler (sampler/sampler.h) reads it, so a
 * tree both render and sample is on the device once.
 *
 * Contract
 * - vx_gpu_resident_create() creates the CUDA context (once per process) on the current device and
 *   uploads the tree; vx_gpu_resident_free() releases it (NULL is a no-op).
 * - Never prints. VX_ERR_NO_GPU when built without CUDA, when no device is usable or when the tree
 *   does not fit in GPU memory (the message says how much was needed and free); VX_ERR_NOMEM when
 *   GPU memory runs out; VX_ERR_CUDA for any other CUDA failure (svo/cuda_status.cuh).
 */
#ifndef VOXLOD_SVO_GPU_TREE_H
#define VOXLOD_SVO_GPU_TREE_H

#include "svo/svo.h"

VX_EXTERN_C_BEGIN

typedef struct vx_gpu_resident vx_gpu_resident;

vx_status vx_gpu_resident_create(const vx_octree *t, vx_gpu_resident **out, vx_error *err);
void vx_gpu_resident_free(vx_gpu_resident *g);

/* GPU name, its multiprocessors, and bytes of the tree uploaded (colour included). */
const char *vx_gpu_resident_device(const vx_gpu_resident *g);
int vx_gpu_resident_sm_count(const vx_gpu_resident *g);
uint64_t vx_gpu_resident_bytes(const vx_gpu_resident *g);

/* The resident arrays (device pointers, valid while g lives), the levels uploaded and the CUDA
 * device that holds them. */
typedef struct vx_gpu_tree {
  const vx_node *nodes;
  const vx_voxel *voxels; /* NULL when level D is not uploaded */
  uint32_t levels;
  int device;
  /* colour (svo/color.h) parallel to nodes and voxels, NULL for a grey tree (voxel_color also
   * when voxels is NULL); holes: 1 when some uploaded colour has alpha 0 (found at upload) */
  const uint32_t *node_color;
  const uint32_t *voxel_color;
  int holes;
} vx_gpu_tree;
void vx_gpu_resident_tree(const vx_gpu_resident *g, vx_gpu_tree *out);

/* The CUDA devices of the machine (0 without CUDA or without one), and the device the calling
 * thread's CUDA work goes to from now on (VX_ERR_NO_GPU without it). A build that spreads work
 * over several GPUs gives each of its threads one. */
int vx_gpu_device_count(void);
/* Free and total memory of the current device (VX_ERR_NO_GPU without one). */
vx_status vx_gpu_memory(uint64_t *free_bytes, uint64_t *total_bytes, vx_error *err);
vx_status vx_gpu_use_device(int device, vx_error *err);

/* Host memory that copies between the host and a GPU go through, kept by its owner (a worker)
 * from one use to the next: page-locked when the driver gives it (the copies then run at full
 * speed and asynchronously), else ordinary memory. Allocating and freeing page-locked memory is
 * slow and waits for the device's other work, so it is done once, not per copy.
 * vx_host_stage_reserve makes s hold at least `bytes` (growing it loses its contents): 0 when no
 * memory could be had (s is then empty). vx_host_stage_free releases it (s all zero again). */
typedef struct vx_host_stage {
  void *p;
  size_t bytes;
  int pinned; /* 1: page-locked */
} vx_host_stage;
int vx_host_stage_reserve(vx_host_stage *s, size_t bytes);
void vx_host_stage_free(vx_host_stage *s);

VX_EXTERN_C_END

#endif
