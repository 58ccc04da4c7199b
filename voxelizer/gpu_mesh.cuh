/* SPDX-License-Identifier: Apache-2.0 */
/* gpu_mesh.cuh - a mesh in GPU memory for the surface build (gpu_build.cu): its triangles in grid
 * coordinates and its sign tables, uploaded by one build for itself or kept on each device for
 * every build of the same mesh (vx_gpu_meshes, gpu_mesh.cu). C++ (CUDA) only. */
#ifndef VOXLOD_VOXELIZER_GPU_MESH_CUH
#define VOXLOD_VOXELIZER_GPU_MESH_CUH

#include "voxelizer/internal.h"
#include "voxelizer/gpu_util.cuh"

namespace vxgpu {

/* Device arrays (NULL: not uploaded, or empty on the host). */
struct device_inputs {
  double *tg; /* 9 doubles a triangle, vx_grid_tri's bits */
  float *face_n, *edge_n, *vert_n;
  uint32_t *vid;
  uint8_t *clean, *vclean;
  vx_wind_node *nodes;
  double *wgrid; /* the winding tree's triangles mapped (vx_wind_tree.grid) */
};

/* The mesh's grid triangles into in->tg (computed on the host's cores, then copied). */
vx_status upload_grid_tris(const vx_soup *mesh, const vx_transform *xf, device_inputs *in,
                           vx_error *err);

/* sign's tables (of ntri triangles) into in; *dev: sign with its pointers on the device. */
vx_status upload_sign(const vx_sign_data *sign, uint64_t ntri, device_inputs *in,
                      vx_sign_data *dev, vx_error *err);

void free_inputs(device_inputs *in);

/* The winding tree's triangles on the device, mapped into its frame once (*grid, 9 doubles each:
 * vx_wind_leaf_tri's bits); cudaFree it. */
vx_status upload_wind_grid(const vx_wind_tree *w, double **grid, vx_error *err);

/* The copy of m's mesh on the current device, uploaded now when this is the first build there:
 * *in and *dev point into m (valid until vx_gpu_meshes_free). *in NULL: the device has no slot
 * (the build uploads its own). mesh, xf and sign must be m's (VX_ERR_INVALID_ARG). */
vx_status resident_inputs(vx_gpu_meshes *m, const vx_soup *mesh, const vx_transform *xf,
                          const vx_sign_data *sign, const device_inputs **in,
                          const vx_sign_data **dev, vx_error *err);

} /* namespace vxgpu */

#endif
