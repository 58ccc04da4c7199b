/* SPDX-License-Identifier: Apache-2.0 */
/* band_cache_gpu.cu - step 3 of the band cache's build on a GPU sampler's device
 * (sampler/band_cache.c does steps 1 and 2 on the CPU).
 *
 * The table, what steps 1 and 2 left per brick and the bricks go up once (about 1.1 KB a brick);
 * each kernel runs one of band_cache_fill.h's per-brick steps, one thread per brick: the cells
 * to cache and how many points each brick evaluates; then, in batches of whole bricks, their
 * points written on the device, the sampler's kernels on them (device arrays), and their values
 * written into the bricks; then which cells answer. The bricks stay on the device as the
 * sampler's cache: nothing comes back but the points per brick (4 bytes each, to cut the
 * batches). Made on the host, the points would cross the bus twice (the 4096^3 dragon's 719
 * million: 8.6 GB up, 3.6 GB of values and flags down) and the host would write, read and check
 * each one (docs/BENCHMARKS.md, the band cache).
 */
#include <cuda_runtime.h>

#include <string.h>

#include "sampler/band_cache_fill.h"
#include "sampler/sampler.h"
#include "svo/cuda_status.cuh"
#include "sys/alloc.h"

#define VX_BC_GPU_BLOCK 128
/* Points evaluated at a time: 2^26 of them take 1.1 GiB with their values and flags. */
#define VX_BC_GPU_BATCH ((uint64_t)1 << 26)

static unsigned bc_blocks(uint64_t n) {
  const uint64_t b = (n + VX_BC_GPU_BLOCK - 1) / VX_BC_GPU_BLOCK;
  return b > 0x7fffffffull ? 0x7fffffffu : (unsigned)(b ? b : 1);
}

#define VX_BC_EACH_BRICK(i, lo, hi)                                                               \
  for (uint64_t i = (lo) + (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (hi);             \
       i += (uint64_t)gridDim.x * blockDim.x)

__global__ void vx_bc_need_kernel(vx_bc_job j, uint64_t n, uint32_t *points) {
  VX_BC_EACH_BRICK(i, 0, n) {
    vx_bc_need(&j, i);
    points[i] = j.work[i].points;
  }
}

/* Bricks [lo, hi): at[i] - at[lo] is where brick i's points start in the batch. */
__global__ void vx_bc_gather_kernel(vx_bc_job j, uint64_t lo, uint64_t hi, const uint64_t *at,
                                    float *p) {
  VX_BC_EACH_BRICK(i, lo, hi) vx_bc_gather(&j, i, at[i] - at[lo], p);
}

__global__ void vx_bc_scatter_kernel(vx_bc_job j, uint64_t lo, uint64_t hi, const uint64_t *at,
                                     const float *v, const uint8_t *fl) {
  VX_BC_EACH_BRICK(i, lo, hi) vx_bc_scatter(&j, i, at[i] - at[lo], v, fl);
}

__global__ void vx_bc_finish_kernel(vx_bc_job j, uint64_t n) {
  VX_BC_EACH_BRICK(i, 0, n) vx_bc_finish(&j, i);
}

extern "C" vx_status vx_gpu_band_cache_fill(vx_gpu_sampler *g, const vx_sample_tree *s,
                                            const vx_bc_job *job, uint64_t count, vx_error *err) {
  vx_status st = VX_OK;
  const size_t slots = (size_t)job->mask + 1u;
  vx_bc_job d = *job;
  uint64_t *keys = NULL, *at = NULL, *at_h = NULL;
  uint32_t *values = NULL, *points = NULL, *points_h = NULL;
  vx_bc_in *in = NULL;
  vx_bc_brick *bricks = NULL;
  float *p = NULL, *v = NULL;
  uint8_t *fl = NULL;
  uint64_t total = 0, most = 0, cap = 0;
  VX_CU(cudaSetDevice(vx_gpu_sampler_device(g)), "cudaSetDevice");
  VX_CU(cudaMalloc((void **)&keys, slots * sizeof *keys), "allocating the band cache");
  VX_CU(cudaMalloc((void **)&values, slots * sizeof *values), "allocating the band cache");
  VX_CU(cudaMalloc((void **)&in, count * sizeof *in), "allocating the band cache's build");
  VX_CU(cudaMalloc((void **)&d.work, count * sizeof *d.work), "allocating the band cache's build");
  VX_CU(cudaMalloc((void **)&bricks, count * sizeof *bricks), "allocating the band cache");
  VX_CU(cudaMalloc((void **)&points, count * sizeof *points), "allocating the band cache's build");
  VX_CU(cudaMalloc((void **)&at, (count + 1u) * sizeof *at), "allocating the band cache's build");
  VX_CU(cudaMemcpy(keys, job->keys, slots * sizeof *keys, cudaMemcpyHostToDevice),
        "uploading the band cache's bricks");
  VX_CU(cudaMemcpy(values, job->values, slots * sizeof *values, cudaMemcpyHostToDevice),
        "uploading the band cache's bricks");
  VX_CU(cudaMemcpy(in, job->in, count * sizeof *in, cudaMemcpyHostToDevice),
        "uploading the band cache's bricks");
  VX_CU(cudaMemcpy(bricks, job->bricks, count * sizeof *bricks, cudaMemcpyHostToDevice),
        "uploading the band cache's bricks");
  VX_CU(cudaMemset(d.work, 0, count * sizeof *d.work), "clearing the band cache's build");
  d.keys = keys;
  d.values = values;
  d.in = in;
  d.bricks = bricks;

  /* the cells to cache; the batches cut on the host from the points per brick */
  vx_bc_need_kernel<<<bc_blocks(count), VX_BC_GPU_BLOCK>>>(d, count, points);
  VX_CU(cudaGetLastError(), "launching the band cache's build");
  points_h = (uint32_t *)vx_malloc(count * sizeof *points_h);
  at_h = (uint64_t *)vx_malloc((count + 1u) * sizeof *at_h);
  if (!points_h || !at_h) {
    st = vx_error_set(err, VX_ERR_NOMEM, "no memory for the band cache's %llu bricks",
                      (unsigned long long)count);
    goto done;
  }
  VX_CU(cudaMemcpy(points_h, points, count * sizeof *points, cudaMemcpyDeviceToHost),
        "building the band cache");
  for (uint64_t i = 0; i < count; i++) {
    at_h[i] = total;
    total += points_h[i];
    most = points_h[i] > most ? points_h[i] : most;
  }
  at_h[count] = total;
  VX_CU(cudaMemcpy(at, at_h, (count + 1u) * sizeof *at, cudaMemcpyHostToDevice),
        "building the band cache");
  cap = total < VX_BC_GPU_BATCH ? total : (VX_BC_GPU_BATCH > most ? VX_BC_GPU_BATCH : most);
  if (cap) {
    VX_CU(cudaMalloc((void **)&p, cap * 3 * sizeof *p), "allocating the band cache's points");
    VX_CU(cudaMalloc((void **)&v, cap * sizeof *v), "allocating the band cache's points");
    VX_CU(cudaMalloc((void **)&fl, cap), "allocating the band cache's points");
  }
  for (uint64_t lo = 0; lo < count;) {
    uint64_t hi = lo;
    while (hi < count && at_h[hi + 1] - at_h[lo] <= cap) hi++;
    const uint64_t m = at_h[hi] - at_h[lo];
    vx_bc_gather_kernel<<<bc_blocks(hi - lo), VX_BC_GPU_BLOCK>>>(d, lo, hi, at, p);
    VX_CU(cudaGetLastError(), "launching the band cache's build");
    /* the sampler's kernels on the legacy stream, after the gather */
    if (m && (st = vx_gpu_sample(g, s, 1, NULL, p, m, v, NULL, fl, NULL, NULL, err)) != VX_OK)
      goto done;
    vx_bc_scatter_kernel<<<bc_blocks(hi - lo), VX_BC_GPU_BLOCK>>>(d, lo, hi, at, v, fl);
    VX_CU(cudaGetLastError(), "launching the band cache's build");
    lo = hi;
  }
  vx_bc_finish_kernel<<<bc_blocks(count), VX_BC_GPU_BLOCK>>>(d, count);
  VX_CU(cudaGetLastError(), "launching the band cache's build");
  VX_CU(cudaDeviceSynchronize(), "building the band cache");
  st = vx_gpu_sampler_adopt_cache(g, keys, values, bricks, job->mask, count, err);
  keys = NULL, values = NULL, bricks = NULL; /* the sampler's now */
done:
  cudaFree(keys);
  cudaFree(values);
  cudaFree(bricks);
  cudaFree(in);
  cudaFree(d.work);
  cudaFree(points);
  cudaFree(at);
  cudaFree(p);
  cudaFree(v);
  cudaFree(fl);
  vx_free(points_h);
  vx_free(at_h);
  return st;
}
