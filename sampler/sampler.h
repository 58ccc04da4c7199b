/* SPDX-License-Identifier: Apache-2.0 */
/* sampler.h - the tree's signed-distance field at points: the CPU loop and the CUDA kernel around
 * vx_sample_point() (sampler/sample_eval.h, host and device), and points near the surface.
 *
 * Layer: depends on svo/ (the GPU kernel reads svo/gpu_tree.h's resident tree, shared with the
 * renderer, instead of uploading the tree a second time).
 *
 * Contract
 * - The tree must have passed vx_octree_validate() (the reader and the builder do this).
 * - Points are xyz float triples (world coordinates); outputs are dist[n], and when not NULL
 *   grad[3n] and flags[n] (VX_SAMPLE_* of include/voxlod/sample.h). Results do not depend on the
 *   thread count or the device: the same bits (no contraction into fused multiply-adds on either
 *   side, sampler/CMakeLists.txt), with the band cache too.
 * - Never prints. GPU functions return VX_ERR_NO_GPU when built without CUDA or without a usable
 *   device; CUDA failures map through svo/cuda_status.cuh.
 */
#ifndef VOXLOD_SAMPLER_H
#define VOXLOD_SAMPLER_H

#include "svo/svo.h"
#include "sampler/sample_eval.h"
#include "svo/gpu_tree.h"

VX_EXTERN_C_BEGIN

/* 1 when t's transform and band fit the sampler's single precision (vx_octree_check_world, the
 * check every command in world units makes), so that grid coordinates, distances and their sums
 * stay finite floats. 0 for a tree whose transform only a double holds. */
int vx_sample_tree_fits(const vx_octree *t);

/* What vx_sample_point reads, for tree t cut at `cut` (clamped to the loaded levels), with t's
 * host arrays. */
void vx_sample_tree_init(vx_sample_tree *s, const vx_octree *t, uint32_t cut);

/* Counts of one run: points with a non-finite coordinate and the index of the first one
 * (UINT64_MAX: none). */
typedef struct vx_sample_count {
  uint64_t invalid;
  uint64_t first_invalid;
} vx_sample_count;

/* Samples n host points on `threads` CPU threads (0: all cores). */
void vx_sample_cpu(const vx_sample_tree *s, const float *points, uint64_t n, float *dist,
                   float *grad, uint8_t *flags, int threads, vx_sample_count *count);

/* The band cache of tree s (sampler/band_cache.h) into *out (free it with vx_band_cache_free),
 * built on `threads` threads (0: all cores; the result does not depend on it). *out is NULL for a
 * tree without surface voxels, cut above full detail, or not fully loaded. s->cache is ignored. */
vx_status vx_band_cache_build(const vx_sample_tree *s, int threads, vx_band_cache **out,
                              vx_error *err);
/* The same on a GPU sampler's device when `gpu` is not NULL: steps 1 and 2 on the CPU's threads,
 * the rest by the device (vx_gpu_band_cache_fill), which keeps the cache as the sampler's own
 * (vx_gpu_sampler_adopt_cache); *out then holds only its sizes (no arrays). The same bricks as the
 * CPU's: the rule gives the same bits on both. */
typedef struct vx_gpu_sampler vx_gpu_sampler;
vx_status vx_band_cache_build_on(const vx_sample_tree *s, int threads, vx_gpu_sampler *gpu,
                                 vx_band_cache **out, vx_error *err);
void vx_band_cache_free(vx_band_cache *c);
/* Bytes it holds. */
uint64_t vx_band_cache_bytes(const vx_band_cache *c);

/* ---- GPU -------------------------------------------------------------------------------------- */

/* A sampler over the tree resident in `res` (borrowed: it must outlive the sampler), with the
 * re-signed voxels' bits (sampler/resigned.h; NULL: none) of its voxel_count voxels, uploaded. */
vx_status vx_gpu_sampler_create(const vx_gpu_resident *res, const uint32_t *resigned,
                                uint64_t voxel_count, vx_gpu_sampler **out, vx_error *err);
void vx_gpu_sampler_free(vx_gpu_sampler *g);
/* g moved onto the tree resident in `res` (on g's device; borrowed), with that tree's re-signed
 * voxels, keeping what is not the tree's (streams, queues, staging memory): a caller that samples
 * tree after tree pays for those once. A band cache of the last tree is dropped. On failure g
 * holds no tree until a rebind succeeds (it may only be freed or rebound). */
vx_status vx_gpu_sampler_rebind(vx_gpu_sampler *g, const vx_gpu_resident *res,
                                const uint32_t *resigned, uint64_t voxel_count, vx_error *err);

/* on 0: vx_gpu_sample leaves stage 3 (the sign walks of far points inside the box) to the
 * caller: such points get flags VX_SE_PENDING (flags must then not be NULL), their other outputs
 * unspecified; 1 (the default): the whole rule. */
void vx_gpu_sampler_set_walks(vx_gpu_sampler *g, int on);

/* Where a pointer lives: 0 host memory, 1 memory the sampler's device can read (device or
 * managed), -1 another device's. NULL counts as host. */
int vx_gpu_pointer_kind(const vx_gpu_sampler *g, const void *p);

/* Timings of one GPU run. */
typedef struct vx_gpu_sample_times {
  double ms_kernel; /* CUDA events around the kernels */
  double ms_copy;   /* host arrays: the copies (wall time less the kernels) */
} vx_gpu_sample_times;

/* Samples n points; `device` 1: the four arrays are device pointers (sampled in place on
 * `stream`, a cudaStream_t, NULL: the legacy default stream); 0: host arrays, sent through the
 * device in chunks staged in pinned memory that the sampler keeps, sized by the largest such call
 * so far (at most 2 x 68 MiB on the host and on the device, 2 x 116 MiB with gradients); the
 * copies of one chunk overlap the kernels of the next. `s` gives the cut and transform (its array pointers are
 * replaced by the view's; its cache, when set, by the sampler's: vx_gpu_sampler_adopt_cache). Returns when
 * the results are written. times may be NULL. */
vx_status vx_gpu_sample(vx_gpu_sampler *g, const vx_sample_tree *s, int device, void *stream,
                        const float *points, uint64_t n, float *dist, float *grad, uint8_t *flags,
                        vx_sample_count *count, vx_gpu_sample_times *times, vx_error *err);

/* Makes keys, values and bricks (device memory, the band cache's arrays: sampler/band_cache.h)
 * the sampler's band cache, which samples whose s->cache is not NULL then read; the sampler owns
 * them from this call, whatever it returns (a sampler that has a cache keeps it and frees
 * these). */
vx_status vx_gpu_sampler_adopt_cache(vx_gpu_sampler *g, uint64_t *keys, uint32_t *values,
                                     vx_bc_brick *bricks, uint64_t mask, uint64_t count,
                                     vx_error *err);
/* The CUDA device the sampler runs on. */
int vx_gpu_sampler_device(const vx_gpu_sampler *g);

/* Step 3 of the band cache's build (band_cache_fill.h) for the `count` bricks of job (host
 * arrays; its work array unused) on the sampler's device, with grid-space tree s (the identity
 * transform, no cache): the bricks are uploaded, filled, and kept as the sampler's cache, which
 * must not have one yet. */
struct vx_bc_job;
vx_status vx_gpu_band_cache_fill(vx_gpu_sampler *g, const vx_sample_tree *s,
                                 const struct vx_bc_job *job, uint64_t count, vx_error *err);

/* Timing for vx_sampler_bench: the host points are copied to the device once, then `reps` runs
 * of the kernel over them are timed with CUDA events (ms[reps]); flag_counts[8] gets the points
 * per flag bit of the last run; *regs the registers of the search kernel (the stage that costs). */
vx_status vx_gpu_sample_bench(vx_gpu_sampler *g, const vx_sample_tree *s, const float *points,
                              uint64_t n, int reps, double *ms, uint64_t flag_counts[8], int *regs,
                              vx_error *err);

/* ---- points near the surface ------------------------------------------------------------------ */

/* n points around the surface voxels of t (world coordinates, xyz into points[3n]). Point i
 * belongs to voxel floor((i + u_i) V / n) of the V voxels (u_i uniform in [0,1): stratified, so
 * every part of the surface gets its share), and is that voxel's centre plus a uniform offset in
 * [-spread, spread]^3 voxels. The generator is seeded by seed; the points come in Morton order of
 * their voxels, or shuffled. VX_ERR_EMPTY without voxels. */
vx_status vx_octree_surface_points(const vx_octree *t, uint64_t n, float spread, uint64_t seed,
                                   int shuffle, float *points, vx_error *err);

VX_EXTERN_C_END

#endif
