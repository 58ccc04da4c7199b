/* SPDX-License-Identifier: Apache-2.0 */
/* gpu_sign.cu - the winding rule's clean-triangle certificate (cert_eval.h) on the GPU.
 *
 * On the CPU this is most of the sign tables' time (two coarse winding numbers and a crossing
 * search per triangle: 1.5 s for the 871k-triangle dragon on 16 cores). One thread per candidate
 * triangle runs vx_cert_triangle, the function sign.c runs, on the same grid triangles and the same
 * winding tree; compiled with --fmad=false, so the flags are the CPU's (atan2 aside, see
 * cert_eval.h). A failure leaves the flags alone and the caller certifies on the CPU.
 */
#include <cuda_runtime.h>

#include <stdlib.h>
#include <string.h>

#include "voxelizer/internal.h"
#include "voxelizer/cert_eval.h"
#include "voxelizer/gpu_mesh.cuh"
#include "voxelizer/gpu_util.cuh"

namespace {

/* Thread i certifies the tree's triangle i (triangle order[i] of the mesh): the warps walk
 * neighbouring triangles, so their walks share nodes and diverge little. */
__global__ void k_cert(vx_wind_tree w, const uint32_t *order, uint64_t n, uint8_t *clean) {
  uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const uint32_t t = order[i];
  if (!clean[t]) return;
  double g[9];
  vx_wind_leaf_tri(&w, i, g);
  clean[t] = vx_cert_triangle(&w, g);
}

} /* namespace */

extern "C" vx_status vx_sign_cert_gpu(const vx_wind_tree *w, uint8_t *clean, vx_error *err) {
  const uint64_t T = w->tri_count;
  if (T == 0 || w->node_count == 0) return VX_OK;
  if (!w->order) return vx_error_set(err, VX_ERR_INVALID_ARG, "the winding tree has no order");
  vx_status u = vx_cuda_usable((const void *)k_cert, err);
  if (u != VX_OK) return u;
  double *dwg = NULL;
  uint32_t *dord = NULL;
  vx_wind_node *dn = NULL;
  uint8_t *dc = NULL;
  auto body = [&]() -> vx_status {
    vx_status g = vxgpu::upload_wind_grid(w, &dwg, err);
    if (g != VX_OK) return g;
    CK(cudaMalloc((void **)&dord, T * sizeof(uint32_t)));
    CK(cudaMalloc((void **)&dn, w->node_count * sizeof(vx_wind_node)));
    CK(cudaMalloc((void **)&dc, T));
    CK(cudaMemcpy(dord, w->order, T * sizeof(uint32_t), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dn, w->nodes, w->node_count * sizeof(vx_wind_node), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dc, clean, T, cudaMemcpyHostToDevice));
    const unsigned B = 128;
    vx_wind_tree dw = *w; /* its arrays on the device */
    dw.nodes = dn;
    dw.tri = NULL;
    dw.grid = dwg;
    dw.order = NULL;
    k_cert<<<vxgpu::grid_of(T, B), B>>>(dw, dord, T, dc);
    CK(cudaGetLastError());
    CK(cudaMemcpy(clean, dc, T, cudaMemcpyDeviceToHost)); /* waits for the kernel */
    return VX_OK;
  };
  vx_status r = body();
  cudaFree(dwg);
  cudaFree(dord);
  cudaFree(dn);
  cudaFree(dc);
  return r;
}
