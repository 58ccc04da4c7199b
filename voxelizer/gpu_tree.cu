/* SPDX-License-Identifier: Apache-2.0 */
/* gpu_tree.cu - the octree and its planes on the GPU: vx_octree_build + vx_octree_fit_planes, bit for
 * bit, from a surface that is already in GPU memory (gpu_build.cu, device_out).
 *
 * Levels, bottom-up (CUB): the parents of level l+1 are the runs of equal code >> 3 in its sorted
 * codes (run-length encoding gives the parent codes and child counts, an exclusive scan the first
 * child of each); a node's mask ORs 1 << (child code & 7) over its children. Nodes are laid out
 * breadth first, as the CPU builder does: child = index of the first child in the next level
 * (into the voxels at level D-1).
 * Planes, bottom-up, one thread per node: level D-1 from its voxels' corner samples
 * (vx_fit_over_voxels), every level above from its children's results (vx_fit_over_nodes), the
 * functions lod.c runs (svo/lod_eval.h). Each node's result (moments, bound, sample box: a
 * vx_fit_root, 176 bytes) is kept only until its parent's level is done. Compiled with
 * --fmad=false like gpu_build.cu, so the arithmetic rounds as on the host: the planes, error codes
 * and flags are the CPU's (test_gpu_build compares whole files).
 * Then nodes and voxels are copied into a host vx_octree.
 */
#include <cub/cub.cuh>
#include <cuda_runtime.h>

#include <stdlib.h>
#include <string.h>

#include "voxelizer/internal.h"
#include "svo/lod_eval.h"
#include "voxelizer/gpu_util.cuh"

namespace {

using vxgpu::grid_of;
using vxgpu::now_s;

__global__ void k_parent_codes(const uint64_t *child, uint64_t n, uint64_t *parent) {
  uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) parent[i] = child[i] >> 3;
}

/* Nodes of one level: mask from the children's codes, child index from the scanned counts. */
__global__ void k_nodes(const uint64_t *child_code, const uint32_t *first, const uint32_t *count,
                        uint64_t n, uint64_t child_base, vx_node *nodes) {
  uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  uint32_t mask = 0;
  for (uint32_t k = 0; k < count[i]; k++) mask |= 1u << (child_code[first[i] + k] & 7u);
  vx_node nd;
  nd.child = (uint32_t)(child_base + first[i]);
  nd.info = vx_node_info(mask, 0, 0, 0);
  nd.normal = 0;
  nd.d = 0.0f;
  nodes[i] = nd;
}

__global__ void k_fit_voxels(vx_node *nodes, uint64_t n, const vx_voxel *voxels, float band,
                             vx_fit_root *res) {
  uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  vx_node nd = nodes[i];
  vx_fit_root r;
  vx_fit_over_voxels(&nd, voxels + nd.child, vx_node_mask(nd.info), band, 2.0, &r);
  nodes[i] = nd;
  res[i] = r;
}

/* Level l: nodes[0 .. n) with their children in the level starting at global index base_next,
 * whose results are res_next (indexed from base_next). */
__global__ void k_fit_nodes(vx_node *all, uint64_t first, uint64_t n, uint64_t base_next,
                            const vx_fit_root *res_next, double size, vx_fit_root *res) {
  uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  vx_node nd = all[first + i];
  vx_fit_root r;
  vx_fit_over_nodes(&nd, all + nd.child, res_next + (nd.child - base_next), vx_node_mask(nd.info),
                    size, &r);
  all[first + i] = nd;
  res[i] = r;
}

/* Pruning, top-down, one level: keep[] says per node (then per voxel, from the nodes' count on)
 * whether it is reached from the root through no pruned leaf; a kept node that the prune rule
 * takes becomes a pruned leaf, and its children are dropped with those of dropped nodes. A
 * node's children lie at keep[child_at + child ..]: child_at 0 above the voxels' level. */
__global__ void k_prune_level(vx_node *all, uint64_t first, uint64_t n, uint64_t child_at,
                              float max_error, uint8_t *keep) {
  uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  vx_node nd = all[first + i];
  const int kept = keep[first + i], leaf = kept && vx_node_prunable(nd.info, max_error);
  for (uint32_t c = 0, k = vx_popcount8(vx_node_mask(nd.info)); c < k; c++)
    keep[child_at + nd.child + c] = (uint8_t)(kept && !leaf);
  if (leaf) {
    vx_node_make_pruned(&nd);
    all[first + i] = nd;
  }
}

/* In place: the items of data[0 .. n) whose flag is set, in their order; how many into *kept (on
 * the device). *tmp (*tmp_bytes) is CUB's scratch, grown when needed. */
template <typename T>
cudaError_t compact(T *data, const uint8_t *flags, int64_t *kept, uint64_t n, void **tmp,
                    size_t *tmp_bytes, cudaStream_t st) {
  size_t tb = 0;
  cudaError_t e = cub::DeviceSelect::Flagged(NULL, tb, data, flags, kept, (int64_t)n, st);
  if (e == cudaSuccess && tb > *tmp_bytes) {
    if (*tmp) cudaFreeAsync(*tmp, st);
    *tmp = NULL;
    *tmp_bytes = 0;
    e = cudaMallocAsync(tmp, tb, st);
    if (e == cudaSuccess) *tmp_bytes = tb;
  }
  if (e == cudaSuccess) e = cub::DeviceSelect::Flagged(*tmp, tb, data, flags, kept, (int64_t)n, st);
  return e;
}

struct level_arrays {
  uint64_t *code[VX_MAX_DEPTH + 1]; /* level codes (level D: the surface's) */
  uint32_t *first[VX_MAX_DEPTH + 1], *count[VX_MAX_DEPTH + 1];
};

} /* namespace */

extern "C" vx_status vx_octree_build_gpu(const vx_surface *dev, uint32_t depth, float band,
                                       float max_error, vx_octree_prealloc *pre, vx_octree *out,
                                       double sec[3], vx_fit_root *root, vx_error *err) {
  memset(out, 0, sizeof *out);
  if (dev->count == 0) return vx_error_set(err, VX_ERR_EMPTY, "no surface voxels");
  if (dev->count >= (1ull << 31))
    return vx_error_set(err, VX_ERR_LIMIT, "GPU octree: %llu voxels (at most 2^31 - 1)",
                        (unsigned long long)dev->count);
  const unsigned TB = 256;
  double t = now_s();
  level_arrays L;
  memset(&L, 0, sizeof L);
  vx_node *dnodes = NULL;
  vx_fit_root *res[2] = {NULL, NULL};
  void *tmp = NULL;
  size_t tmp_bytes = 0;
  int *dnum = NULL;
  uint8_t *keep = NULL;
  int64_t *dkept = NULL;
  vx_status r = VX_OK;
  cudaStream_t st = NULL;
  auto body = [&]() -> vx_status {
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    CK(cudaMallocAsync((void **)&dnum, sizeof(int), st));
    /* levels, bottom-up */
    L.code[depth] = dev->codes;
    out->depth = depth;
    out->levels_loaded = depth + 1;
    out->level_count[depth] = dev->count;
    for (int l = (int)depth - 1; l >= 0; l--) {
      const uint64_t nc = out->level_count[l + 1];
      uint64_t *pc = NULL;
      CK(cudaMallocAsync((void **)&pc, nc * sizeof(uint64_t), st));
      k_parent_codes<<<grid_of(nc, TB), TB, 0, st>>>(L.code[l + 1], nc, pc);
      CK(cudaGetLastError());
      CK(cudaMallocAsync((void **)&L.code[l], nc * sizeof(uint64_t), st));
      CK(cudaMallocAsync((void **)&L.count[l], (nc + 1) * sizeof(uint32_t), st));
      CK(cudaMallocAsync((void **)&L.first[l], (nc + 1) * sizeof(uint32_t), st));
      size_t tb = 0;
      CK(cub::DeviceRunLengthEncode::Encode(NULL, tb, pc, L.code[l], L.count[l], dnum, (int)nc, st));
      if (tb > tmp_bytes) {
        if (tmp) cudaFreeAsync(tmp, st);
        tmp = NULL;
        CK(cudaMallocAsync(&tmp, tb, st));
        tmp_bytes = tb;
      }
      CK(cub::DeviceRunLengthEncode::Encode(tmp, tb, pc, L.code[l], L.count[l], dnum, (int)nc, st));
      int nu = 0;
      CK(cudaMemcpyAsync(&nu, dnum, sizeof nu, cudaMemcpyDeviceToHost, st));
      CK(cudaStreamSynchronize(st));
      cudaFreeAsync(pc, st);
      CK(cub::DeviceScan::ExclusiveSum(NULL, tb, L.count[l], L.first[l], nu, st));
      if (tb > tmp_bytes) {
        cudaFreeAsync(tmp, st);
        tmp = NULL;
        CK(cudaMallocAsync(&tmp, tb, st));
        tmp_bytes = tb;
      }
      CK(cub::DeviceScan::ExclusiveSum(tmp, tb, L.count[l], L.first[l], nu, st));
      out->level_count[l] = (uint64_t)nu;
    }
    if (out->level_count[0] != 1)
      return vx_error_set(err, VX_ERR_INVALID_ARG, "GPU octree: %llu roots",
                          (unsigned long long)out->level_count[0]);
    uint64_t nodes = 0;
    for (uint32_t l = 0; l < depth; l++) {
      out->level_first[l] = nodes;
      nodes += out->level_count[l];
    }
    out->node_count = nodes;
    out->voxel_count = dev->count;
    CK(cudaMallocAsync((void **)&dnodes, nodes * sizeof(vx_node), st));
    for (uint32_t l = 0; l < depth; l++) {
      uint64_t n = out->level_count[l];
      uint64_t base = l + 1 < depth ? out->level_first[l + 1] : 0;
      k_nodes<<<grid_of(n, TB), TB, 0, st>>>(L.code[l + 1], L.first[l], L.count[l], n, base,
                                             dnodes + out->level_first[l]);
      CK(cudaGetLastError());
    }
    CK(cudaStreamSynchronize(st));
    for (uint32_t l = 0; l < depth; l++) { /* the level arrays are done with */
      cudaFreeAsync(L.code[l], st);
      cudaFreeAsync(L.first[l], st);
      cudaFreeAsync(L.count[l], st);
      L.code[l] = NULL;
      L.first[l] = L.count[l] = NULL;
    }
    if (sec) sec[0] = now_s() - t;
    t = now_s();
    /* planes, bottom-up; res[(l) & 1] holds level l's results */
    const unsigned FB = 128;
    {
      uint32_t l = depth - 1;
      uint64_t n = out->level_count[l];
      CK(cudaMallocAsync((void **)&res[l & 1], n * sizeof(vx_fit_root), st));
      k_fit_voxels<<<grid_of(n, FB), FB, 0, st>>>(dnodes + out->level_first[l], n, dev->field,
                                                  band, res[l & 1]);
      CK(cudaGetLastError());
    }
    for (int l = (int)depth - 2; l >= 0; l--) {
      uint64_t n = out->level_count[l];
      CK(cudaMallocAsync((void **)&res[l & 1], n * sizeof(vx_fit_root), st));
      k_fit_nodes<<<grid_of(n, FB), FB, 0, st>>>(dnodes, out->level_first[l], n,
                                                 out->level_first[l + 1], res[(l + 1) & 1],
                                                 ldexp(1.0, (int)depth - l), res[l & 1]);
      CK(cudaGetLastError());
      cudaFreeAsync(res[(l + 1) & 1], st);
      res[(l + 1) & 1] = NULL;
    }
    if (root) CK(cudaMemcpyAsync(root, res[0], sizeof *root, cudaMemcpyDeviceToHost, st));
    CK(cudaStreamSynchronize(st));
    if (sec) sec[1] = now_s() - t;
    t = now_s();
    /* pruned here: what is kept, top-down, then each level compacted where it lies */
    uint64_t at[VX_MAX_DEPTH + 1]; /* where each level's kept nodes lie on the device */
    for (uint32_t l = 0; l < depth; l++) at[l] = out->level_first[l];
    if (max_error > 0.0f) {
      CK(cudaMallocAsync((void **)&keep, nodes + dev->count, st));
      CK(cudaMallocAsync((void **)&dkept, (depth + 1) * sizeof(int64_t), st));
      CK(cudaMemsetAsync(keep, 1, 1, st)); /* the root */
      for (uint32_t l = 0; l < depth; l++) {
        const uint64_t n = out->level_count[l];
        k_prune_level<<<grid_of(n, TB), TB, 0, st>>>(dnodes, at[l], n, l + 1 < depth ? 0 : nodes,
                                                     max_error, keep);
        CK(cudaGetLastError());
      }
      for (uint32_t l = 0; l < depth; l++)
        CK(compact(dnodes + at[l], keep + at[l], dkept + l, out->level_count[l], &tmp, &tmp_bytes,
                   st));
      CK(compact(dev->field, keep + nodes, dkept + depth, dev->count, &tmp, &tmp_bytes, st));
      int64_t kept[VX_MAX_DEPTH + 1];
      CK(cudaMemcpyAsync(kept, dkept, (depth + 1) * sizeof(int64_t), cudaMemcpyDeviceToHost, st));
      CK(cudaStreamSynchronize(st));
      uint64_t w = 0;
      for (uint32_t l = 0; l < depth; l++) {
        out->level_count[l] = (uint64_t)kept[l];
        out->level_first[l] = w;
        w += (uint64_t)kept[l];
      }
      out->level_count[depth] = (uint64_t)kept[depth];
      out->node_count = w;
      out->voxel_count = (uint64_t)kept[depth];
      out->prune_error = max_error;
    }
    /* to the host */
    if (pre && pre->nodes && pre->voxels && pre->node_cap >= out->node_count &&
        pre->voxel_cap >= out->voxel_count) { /* memory the caller prepared (level_first set) */
      out->nodes = pre->nodes;
      out->voxels = pre->voxels;
      pre->nodes = NULL;
      pre->voxels = NULL;
    } else {
      vx_status s = vx_octree_alloc(out, err);
      if (s != VX_OK) return s;
    }
    if (max_error > 0.0f) { /* level by level, then linked as the host's pruning links */
      for (uint32_t l = 0; l < depth; l++)
        CK(vxgpu::copy_back(out->nodes + out->level_first[l], dnodes + at[l],
                            out->level_count[l] * sizeof(vx_node)));
    } else {
      CK(vxgpu::copy_back(out->nodes, dnodes, nodes * sizeof(vx_node)));
    }
    CK(vxgpu::copy_back(out->voxels, dev->field, out->voxel_count * sizeof(vx_voxel)));
    if (max_error > 0.0f) {
      vx_status s = vx_octree_link(out, err);
      if (s != VX_OK) return s;
    }
    if (sec) sec[2] = now_s() - t;
    return VX_OK;
  };
  r = body();
  if (st) cudaStreamSynchronize(st);
  for (uint32_t l = 0; l < depth; l++) {
    cudaFree(L.code[l]);
    cudaFree(L.first[l]);
    cudaFree(L.count[l]);
  }
  cudaFree(dnodes);
  cudaFree(res[0]);
  cudaFree(res[1]);
  cudaFree(tmp);
  cudaFree(dnum);
  cudaFree(keep);
  cudaFree(dkept);
  if (st) cudaStreamDestroy(st);
  if (r != VX_OK) vx_octree_free(out);
  return r;
}
