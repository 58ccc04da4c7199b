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
#include "voxelizer/gpu_util.cuh"

namespace {

__global__ void k_cert(const vx_wind_node *nodes, const double *wtri, const double *tg, uint64_t n,
                       uint8_t *clean) {
  uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n || !clean[t]) return;
  clean[t] = vx_cert_triangle(nodes, wtri, tg + t * 9);
}

} /* namespace */

extern "C" vx_status vx_sign_cert_gpu(const vx_soup *m, const vx_transform *xf,
                                      const vx_wind_tree *w, uint8_t *clean, vx_error *err) {
  const uint64_t T = m->tri_count;
  if (T == 0 || w->node_count == 0) return VX_OK;
  vx_status u = vx_cuda_usable((const void *)k_cert, err);
  if (u != VX_OK) return u;
  double *tg = (double *)vx_malloc(T * 9 * sizeof(double));
  if (!tg) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  for (uint64_t t = 0; t < T; t++) vx_grid_tri(m, xf, t, tg + t * 9);
  double *dtg = NULL, *dwt = NULL;
  vx_wind_node *dn = NULL;
  uint8_t *dc = NULL;
  auto body = [&]() -> vx_status {
    CK(cudaMalloc((void **)&dtg, T * 9 * sizeof(double)));
    CK(cudaMalloc((void **)&dwt, w->tri_count * 9 * sizeof(double)));
    CK(cudaMalloc((void **)&dn, w->node_count * sizeof(vx_wind_node)));
    CK(cudaMalloc((void **)&dc, T));
    CK(cudaMemcpy(dtg, tg, T * 9 * sizeof(double), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dwt, w->tri, w->tri_count * 9 * sizeof(double), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dn, w->nodes, w->node_count * sizeof(vx_wind_node), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dc, clean, T, cudaMemcpyHostToDevice));
    const unsigned B = 128;
    k_cert<<<vxgpu::grid_of(T, B), B>>>(dn, dwt, dtg, T, dc);
    CK(cudaGetLastError());
    CK(cudaMemcpy(clean, dc, T, cudaMemcpyDeviceToHost)); /* waits for the kernel */
    return VX_OK;
  };
  vx_status r = body();
  cudaFree(dtg);
  cudaFree(dwt);
  cudaFree(dn);
  cudaFree(dc);
  vx_free(tg);
  return r;
}
