/* SPDX-License-Identifier: Apache-2.0 */
/* nvdb_compare.h - the same surface as a NanoVDB float grid, ray-marched with NanoVDB's HDDA
 * zero crossing: the reference that bench/bench_nanovdb and tests/test_gpu_nanovdb measure and
 * check the voxlod marcher against.
 *
 * Contract
 * - The grid holds, at integer grid point (i,j,k), the dequantized corner value that the tree's
 *   surface voxels give that point (corner c of voxel (x,y,z) is point (x+(c&1), y+(c>>1&1),
 *   z+(c>>2&1)); adjacent voxels agree on shared corners). Every other point reads the
 *   background, +band. Voxel size 1, origin 0: NanoVDB's index space is our grid space, so the
 *   rays of a vx_trace_scene are used as they are. Pruned subtrees (planes) have no voxels and are
 *   left out: compare on unpruned trees.
 * - Rendering: nanovdb::ZeroCrossing (HDDA over the tree's levels, then voxel by voxel through the
 *   narrow band until the value changes sign), normal from central differences at the hit voxel,
 *   the same Lambert shading and background as trace.h. The depth is the HDDA's entry time of the
 *   voxel where the sign changed (no sub-voxel refinement: that is NanoVDB's own method).
 * - Never prints. GPU functions return VX_ERR_NO_GPU where no device is usable.
 */
#ifndef VOXLOD_TOOLS_NVDB_COMPARE_H
#define VOXLOD_TOOLS_NVDB_COMPARE_H

#include "marcher/marcher.h"

VX_EXTERN_C_BEGIN

typedef struct vx_nvdb vx_nvdb;

typedef struct vx_nvdb_stats {
  uint64_t voxels_written; /* surface voxels copied from the tree */
  uint64_t active_values;  /* active grid points */
  uint64_t grid_bytes;     /* the NanoVDB buffer (host and device) */
  double build_seconds;    /* GridBuilder + handle, host */
} vx_nvdb_stats;

/* Builds the grid on the host from a full tree (all levels loaded). stats may be NULL. */
vx_status vx_nvdb_create(const vx_octree *t, vx_nvdb **out, vx_nvdb_stats *stats, vx_error *err);
void vx_nvdb_free(vx_nvdb *g);

/* Renders one view on the host (same per-pixel code as the kernel; for tests and debugging). */
vx_status vx_nvdb_render_cpu(const vx_nvdb *g, const vx_octree *t, const vx_march_opts *o,
                             vx_march_image *img, vx_error *err);

/* Uploads the grid (once) and renders one view on the GPU. */
vx_status vx_nvdb_render_gpu(vx_nvdb *g, const vx_octree *t, const vx_march_opts *o, vx_march_image *img,
                             vx_error *err);

/* Warm-up (every view once), then `frames` frames cycling through views, each timed with CUDA
 * events; *ms_median receives the median kernel time per frame. Same rules as vx_gpu_bench. */
vx_status vx_nvdb_bench(vx_nvdb *g, const vx_octree *t, const vx_march_opts *o,
                        const vx_camera *views, int nviews, int frames, double *ms_median,
                        double *hit_fraction, vx_error *err);

VX_EXTERN_C_END

#endif
