/* SPDX-License-Identifier: Apache-2.0 */
/* sample_gpu.cu - the CUDA sampler: kernels around the stages of vx_sample_point_run()
 * (sampler/sample_eval.h), reading the tree already resident on the device (svo/gpu_tree.h).
 *
 * Algorithm. Three kernels over a chunk of up to VX_GPU_QUEUE points, one thread per point (grid-
 * stride loops), each running one stage of the rule (vx_sample_point_run, the header shared with
 * the CPU): the first answers the points in a cell with a field and queues the others, the second
 * searches the queued ones for the nearest cells and queues those it finds far, the third walks
 * for their sign. So the lanes of a warp do the same kind of work (see "kernels" below). Points
 * that arrive in a coherent order (a surface scan, Morton order) send the lanes of a warp down the
 * same nodes, which the read-only cache then serves; the queues keep that order within a warp.
 * Order. Shuffled points send the lanes of a warp to unrelated nodes: the search queue of a chunk
 * whose points mostly change bucket from one to the next (vx_se_bucket: cells of 2^(D-9) voxels)
 * is sorted by bucket (CUB's radix sort, stable) before the search, so that the search and the
 * walks see them as coherent points; a coherent queue is searched as it comes. Deciding reads the
 * queue's length and that count back to the host once per chunk.
 * Device pointers are sampled in place on the caller's stream (NULL: the legacy default stream,
 * which orders the kernels after work torch or cupy queued on theirs). Host arrays go through the
 * device in chunks of VX_GPU_CHUNK points, staged in pinned memory (two slots, kept with the
 * sampler) so that one chunk's kernels overlap the next one's copy in and upload and the previous
 * one's download and copy out (sample_host).
 * Non-finite points are counted on the device (one atomic per such point, with the smallest
 * index), so the library can fail a call that must not accept them.
 *
 * Errors. Every CUDA call is checked and every launch is followed by cudaGetLastError(); the
 * mapping to vx_status is svo/cuda_status.cuh's. Nothing is printed.
 */
#include <cub/cub.cuh>
#include <cuda_runtime.h>

#include <stdlib.h>
#include <string.h>

#include "sampler/sampler.h"
#include "svo/cuda_status.cuh"
#include "sys/system.h"

#define VX_GPU_CHUNK ((size_t)1 << 22) /* points per chunk of a host-array call */
#define VX_GPU_SLOTS 2 /* chunks of a host-array call in flight: one runs while the next is staged */
#define VX_STAGE_PIECE ((size_t)1 << 22) /* bytes per piece of a staging copy (threads take them) */
#define VX_STAGE_THREADS 4 /* threads of a staging copy at most */
/* Tuning constants (overridable when compiling, to measure others). */
#ifndef VX_GPU_QUEUE_LOG2
#define VX_GPU_QUEUE_LOG2 24
#endif
#define VX_GPU_QUEUE ((size_t)1 << VX_GPU_QUEUE_LOG2) /* points per launch of the stages */
#ifndef VX_SAMPLE_BLOCK
#define VX_SAMPLE_BLOCK 256
#endif
#ifndef VX_SEARCH_BLOCKS
#define VX_SEARCH_BLOCKS 3 /* blocks of the search kernel per multiprocessor (its registers) */
#endif
/* The queue kernels' grid: blocks per multiprocessor at most. Measured on the H100 (dragon 4096^3,
 * 2e8 points spread 2 voxels): 32 against 16 gave 975 against 959 Mpoints/s in Morton order, 742
 * against 727 shuffled; queues of 2^26 points, +1-2 % for 4x their memory (not kept); blocks of
 * 128 threads (6 per multiprocessor for the search), 4 % slower. Per chunk of 2^24 points the
 * search takes about 83 % of the time, the sign walks 14 %, the first stage 3 %. */
#ifndef VX_QUEUE_GRID
#define VX_QUEUE_GRID 32
#endif
/* Bits per axis of the buckets the search queue is sorted by, at most. H100, dragon 4096^3, 2e8
 * shuffled points spread 2 voxels: 6, 7, 8, 9 bits gave 881, 900, 917, 925 Mpoints/s; 10 bits
 * against 9 in one run: 901 against 898 shuffled, 1,172 against 1,072 in Morton order (with
 * buckets this small a Morton chunk's queue, whose warps append in no global order, changes
 * bucket often enough to be sorted too). */
#ifndef VX_SORT_BITS
#define VX_SORT_BITS 10
#endif

/* One chunk of a host-array call in flight: pinned host memory that the caller's points are copied
 * into and the results come back to (so that the copies to and from the device run at the
 * bus's rate and overlap the kernels), the device's copies, and the events that order them. */
typedef struct vx_gpu_slot {
  float *h_points, *h_dist, *h_grad; /* pinned (cudaHostAlloc) */
  uint8_t *h_flags;
  unsigned long long *h_count; /* pinned: the chunk's counters */
  float *points, *dist, *grad; /* device */
  uint8_t *flags;
  cudaEvent_t up, run0, run1, down; /* points uploaded; kernels begin, end; results downloaded */
  uint64_t at, n; /* the chunk it holds: first point, points */
} vx_gpu_slot;

struct vx_gpu_sampler {
  const vx_gpu_resident *res; /* borrowed */
  vx_gpu_tree tree;
  uint32_t *resigned; /* device: a bit per voxel (sampler/resigned.h), NULL: none */
  uint32_t *resigned_room; /* the device array resigned points into when there are some */
  size_t resigned_bytes;   /* its size */
  /* the band cache (sampler/band_cache.h), uploaded when first asked for: its arrays and the struct
   * that points to them, all device memory */
  uint64_t *cache_keys;
  uint32_t *cache_values;
  vx_bc_brick *cache_bricks;
  vx_band_cache *cache;
  cudaStream_t stream;
  cudaEvent_t ev[2];
  int events;
  unsigned long long *count; /* device: invalid points, first invalid index */
  /* the stages' queues: two of queue_cap point indices (into a chunk of a launch: to search, to
   * walk) and their lengths (device), allocated when first needed */
  uint32_t *queue;
  unsigned *queued; /* [0] to search, [1] to walk, [2] bucket changes along the search queue */
  size_t queue_cap; /* points each queue holds */
  /* sorting the search queue: keys (two arrays of queue_cap), the sorted queue, CUB's storage,
   * and the host's copy of the length and the changes */
  uint32_t *keys, *sorted;
  void *sort_tmp;
  size_t sort_tmp_bytes;
  unsigned *host_len; /* pinned, 2 */
  int sms; /* multiprocessors: the grid of the queue kernels */
  int walks_off; /* 1: stage 3 left to the caller (vx_gpu_sampler_set_walks) */
  /* host-array calls: streams for the uploads and the downloads (the kernels run on `stream`),
   * and the staging slots, allocated by the first such call */
  cudaStream_t up, down;
  vx_gpu_slot slot[VX_GPU_SLOTS];
  size_t slot_cap; /* points each slot holds (up to VX_GPU_CHUNK) */
  int slot_events;
};

/* ---- kernels ----------------------------------------------------------------------------------- */

/* Stages (sampler/sample_eval.h, vx_sample_point_run): the first kernel answers the points in a cell
 * with a field and those of the plane shortcut, the cheap bulk near a surface, and queues the
 * others; the second runs the near search on those, queuing the far ones; the third walks for
 * their sign. A warp then does one kind of work: mixed, the lanes that search or walk held up
 * the others (on the H100 the mixed kernel took 2.3 times the sum of the stages' times, dragon
 * 4096^3, points spread 2 voxels). Each stage computes the rule from the start (the same
 * function as on the CPU), so the results are the same as in one pass. A warp appends its
 * queued lanes at once (one atomic), in lane order, so the queues keep the points' coherence
 * within a warp. */

/* Appends idx to the queue when `want`; all lanes of the warp that are in the loop call it. */
__device__ void vx_enqueue(uint32_t *queue, unsigned *len, int want, uint32_t idx) {
  const unsigned active = __activemask();
  const unsigned mask = __ballot_sync(active, want);
  if (!mask) return;
  const unsigned lane = threadIdx.x & 31u;
  const int leader = __ffs((int)mask) - 1;
  unsigned base = 0u;
  if ((int)lane == leader) base = atomicAdd(len, (unsigned)__popc(mask));
  base = __shfl_sync(active, base, leader);
  if (want) queue[base + (unsigned)__popc(mask & ((1u << lane) - 1u))] = idx;
}

__device__ void vx_store(uint64_t i, float d, const float g[3], uint32_t fl, float *dist,
                         float *grad, uint8_t *flags) {
  dist[i] = d;
  if (grad) {
    grad[3 * i + 0] = g[0];
    grad[3 * i + 1] = g[1];
    grad[3 * i + 2] = g[2];
  }
  if (flags) flags[i] = (uint8_t)fl;
}

__device__ void vx_load(const float *points, uint64_t i, float w[3]) {
  w[0] = points[3 * i + 0];
  w[1] = points[3 * i + 1];
  w[2] = points[3 * i + 2];
}

/* Stage 1 over points[0, n) (a chunk starting at point `first` of the call, for the counts). */
__global__ void __launch_bounds__(VX_SAMPLE_BLOCK)
    vx_sample_quick(const vx_sample_tree t, const float *__restrict__ points, uint32_t n,
                    float *__restrict__ dist, float *__restrict__ grad,
                    uint8_t *__restrict__ flags, unsigned long long *__restrict__ count,
                    uint64_t first, uint32_t *__restrict__ queue, unsigned *__restrict__ queued) {
  const uint32_t stride = gridDim.x * blockDim.x;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    float w[3], g[3];
    uint32_t fl;
    vx_load(points, i, w);
    float d = vx_sample_point_run(&t, w, g, &fl, VX_SE_RUN_QUICK);
    vx_enqueue(queue, queued, fl == VX_SE_PENDING, i);
    if (fl == VX_SE_PENDING) continue;
    vx_store(i, d, g, fl, dist, grad, flags);
    if (fl & VX_SAMPLE_INVALID) {
      atomicAdd(&count[0], 1ull);
      atomicMin(&count[1], (unsigned long long)(first + i));
    }
  }
}

/* Stage 2 over the points of queue `in`, queuing the far ones into `out`. Three blocks of 256
 * threads per multiprocessor: 80 registers, no spills (unbounded, nvcc 13 takes 88 and two blocks
 * fit: 20 % slower on the H100; capped at 64 registers for four blocks it spills, no faster). */
__global__ void __launch_bounds__(VX_SAMPLE_BLOCK, VX_SEARCH_BLOCKS)
    vx_sample_search(const vx_sample_tree t, const float *__restrict__ points,
                     float *__restrict__ dist, float *__restrict__ grad,
                     uint8_t *__restrict__ flags, const uint32_t *__restrict__ in,
                     const unsigned *__restrict__ in_len, uint32_t *__restrict__ out,
                     unsigned *__restrict__ out_len) {
  const unsigned n = *in_len, stride = gridDim.x * blockDim.x;
  for (unsigned k = blockIdx.x * blockDim.x + threadIdx.x; k < n; k += stride) {
    const uint32_t i = in[k];
    float w[3], g[3];
    uint32_t fl;
    vx_load(points, i, w);
    float d = vx_sample_point_run(&t, w, g, &fl, VX_SE_RUN_SEARCH);
    vx_enqueue(out, out_len, fl == VX_SE_PENDING, i);
    if (fl != VX_SE_PENDING) vx_store(i, d, g, fl, dist, grad, flags);
  }
}

/* The bucket of each point of queue `in` (keys[k]), and how often it changes from one entry to
 * the next (*changes, one atomic per warp). */
__global__ void __launch_bounds__(VX_SAMPLE_BLOCK)
    vx_sample_keys(const vx_sample_tree t, const float *__restrict__ points,
                   const uint32_t *__restrict__ in, const unsigned *__restrict__ in_len,
                   uint32_t bits, uint32_t *__restrict__ keys, unsigned *__restrict__ changes) {
  const unsigned n = *in_len, stride = gridDim.x * blockDim.x;
  for (unsigned k = blockIdx.x * blockDim.x + threadIdx.x; k < n; k += stride) {
    float w[3];
    vx_load(points, in[k], w);
    const uint32_t key = vx_se_bucket(&t, w, bits);
    keys[k] = key;
    int changed = 0;
    if (k > 0) {
      vx_load(points, in[k - 1], w);
      changed = vx_se_bucket(&t, w, bits) != key;
    }
    const unsigned mask = __ballot_sync(__activemask(), changed);
    if ((threadIdx.x & 31u) == (unsigned)(__ffs((int)__activemask()) - 1))
      atomicAdd(changes, (unsigned)__popc(mask));
  }
}

/* Stage 3 over the points of queue `in`: the sign walks. */
__global__ void __launch_bounds__(VX_SAMPLE_BLOCK)
    vx_sample_walk(const vx_sample_tree t, const float *__restrict__ points,
                   float *__restrict__ dist, float *__restrict__ grad, uint8_t *__restrict__ flags,
                   const uint32_t *__restrict__ in, const unsigned *__restrict__ in_len) {
  const unsigned n = *in_len, stride = gridDim.x * blockDim.x;
  for (unsigned k = blockIdx.x * blockDim.x + threadIdx.x; k < n; k += stride) {
    const uint32_t i = in[k];
    float w[3], g[3];
    uint32_t fl;
    vx_load(points, i, w);
    float d = vx_sample_point_far(&t, w, g, &fl);
    vx_store(i, d, g, fl, dist, grad, flags);
  }
}

/* Stage 3 left to the caller: the points of queue `in` get flags VX_SE_PENDING. */
__global__ void __launch_bounds__(VX_SAMPLE_BLOCK)
    vx_sample_pend(uint8_t *__restrict__ flags, const uint32_t *__restrict__ in,
                   const unsigned *__restrict__ in_len) {
  const unsigned n = *in_len, stride = gridDim.x * blockDim.x;
  for (unsigned k = blockIdx.x * blockDim.x + threadIdx.x; k < n; k += stride)
    flags[in[k]] = (uint8_t)VX_SE_PENDING;
}

static unsigned sample_blocks(uint64_t n) {
  uint64_t b = (n + VX_SAMPLE_BLOCK - 1) / VX_SAMPLE_BLOCK;
  return b > 0x7fffffffull ? 0x7fffffffu : (unsigned)(b ? b : 1);
}

/* Queues one run over device arrays on `stream` (counters reset first), up to VX_GPU_QUEUE
 * points at a time: the queues (grown on demand) hold one such chunk; fewer, larger chunks leave
 * the multiprocessors idle less often at the end of a stage. The queue kernels' grids cover what
 * a chunk could queue, capped at 16 blocks per multiprocessor (their threads loop over the
 * queue's length, which stays on the device). */
static vx_status launch(vx_gpu_sampler *g, const vx_sample_tree *s, cudaStream_t stream,
                        const float *points, uint64_t n, float *dist, float *grad,
                        uint8_t *flags, vx_error *err) {
  vx_status st = VX_OK;
  const size_t want = n < VX_GPU_QUEUE ? (size_t)n : VX_GPU_QUEUE;
  VX_CU(cudaMemsetAsync(g->count, 0, sizeof(unsigned long long), stream), "resetting counters");
  VX_CU(cudaMemsetAsync(g->count + 1, 0xff, sizeof(unsigned long long), stream),
        "resetting counters");
  if (n && g->queue_cap < want) {
    /* after the work queued on the old queues (a chunk of an earlier call may still run) */
    VX_CU(cudaStreamSynchronize(stream), "growing the sampling queues");
    if (g->queue) cudaFree(g->queue);
    g->queue = NULL;
    g->queue_cap = 0;
    if (g->keys) cudaFree(g->keys);
    if (g->sorted) cudaFree(g->sorted);
    if (g->sort_tmp) cudaFree(g->sort_tmp);
    g->keys = g->sorted = NULL;
    g->sort_tmp = NULL;
    VX_CU(cudaMalloc((void **)&g->queue, 2 * want * sizeof(uint32_t)),
          "allocating the sampling queues");
    VX_CU(cudaMalloc((void **)&g->keys, 2 * want * sizeof(uint32_t)),
          "allocating the sampling queues");
    VX_CU(cudaMalloc((void **)&g->sorted, want * sizeof(uint32_t)),
          "allocating the sampling queues");
    g->sort_tmp_bytes = 0;
    VX_CU(cub::DeviceRadixSort::SortPairs(NULL, g->sort_tmp_bytes, g->keys, g->keys + want,
                                          g->queue, g->sorted, (int)want, 0, 3 * VX_SORT_BITS,
                                          stream),
          "sizing the queue sort");
    VX_CU(cudaMalloc(&g->sort_tmp, g->sort_tmp_bytes), "allocating the sampling queues");
    g->queue_cap = want;
  }
  if (n && !g->queued)
    VX_CU(cudaMalloc((void **)&g->queued, 3 * sizeof(unsigned)), "allocating the sampling queues");
  if (n && !g->host_len)
    VX_CU(cudaMallocHost((void **)&g->host_len, 2 * sizeof(unsigned)),
          "allocating the sampling queues");
  for (uint64_t at = 0; at < n; at += g->queue_cap) {
    const uint32_t k = (uint32_t)(n - at < g->queue_cap ? n - at : g->queue_cap);
    unsigned qb = sample_blocks(k), cap = (unsigned)(g->sms > 0 ? g->sms : 1) * VX_QUEUE_GRID;
    qb = qb < cap ? qb : cap;
    const float *pc = points + 3 * at;
    float *dc = dist + at, *gc = grad ? grad + 3 * at : NULL;
    uint8_t *fc = flags ? flags + at : NULL;
    uint32_t *q1 = g->queue, *q2 = g->queue + g->queue_cap;
    const uint32_t bits = s->depth < VX_SORT_BITS ? s->depth : VX_SORT_BITS;
    VX_CU(cudaMemsetAsync(g->queued, 0, 3 * sizeof(unsigned), stream), "resetting the queues");
    vx_sample_quick<<<sample_blocks(k), VX_SAMPLE_BLOCK, 0, stream>>>(*s, pc, k, dc, gc, fc,
                                                                     g->count, at, q1, g->queued);
    VX_CU(cudaGetLastError(), "launching the sampling kernel");
    /* shuffled points: the search queue in bucket order */
    vx_sample_keys<<<qb, VX_SAMPLE_BLOCK, 0, stream>>>(*s, pc, q1, g->queued, bits, g->keys,
                                                      g->queued + 2);
    VX_CU(cudaGetLastError(), "launching the sampling kernel");
    VX_CU(cudaMemcpyAsync(g->host_len, g->queued, sizeof(unsigned), cudaMemcpyDeviceToHost,
                          stream), "reading the queue's length");
    VX_CU(cudaMemcpyAsync(g->host_len + 1, g->queued + 2, sizeof(unsigned),
                          cudaMemcpyDeviceToHost, stream), "reading the queue's length");
    VX_CU(cudaStreamSynchronize(stream), "running the sampling kernel");
    if ((uint64_t)g->host_len[1] * 8u >= g->host_len[0] && g->host_len[0] > 1u) {
      size_t tb = g->sort_tmp_bytes;
      VX_CU(cub::DeviceRadixSort::SortPairs(g->sort_tmp, tb, g->keys, g->keys + g->queue_cap, q1,
                                            g->sorted, (int)g->host_len[0], 0, 3 * (int)bits,
                                            stream),
            "sorting the search queue");
      q1 = g->sorted;
    }
    vx_sample_search<<<qb, VX_SAMPLE_BLOCK, 0, stream>>>(*s, pc, dc, gc, fc, q1, g->queued, q2,
                                                        g->queued + 1);
    VX_CU(cudaGetLastError(), "launching the sampling kernel");
    if (g->walks_off && fc)
      vx_sample_pend<<<qb, VX_SAMPLE_BLOCK, 0, stream>>>(fc, q2, g->queued + 1);
    else
      vx_sample_walk<<<qb, VX_SAMPLE_BLOCK, 0, stream>>>(*s, pc, dc, gc, fc, q2, g->queued + 1);
    VX_CU(cudaGetLastError(), "launching the sampling kernel");
  }
done:
  return st;
}

/* ---- the sampler ------------------------------------------------------------------------------- */

void vx_gpu_sampler_set_walks(vx_gpu_sampler *g, int on) { g->walks_off = !on; }

/* Frees the staging slots' memory (nothing of theirs in flight: a call finishes its chunks). */
static void slot_release(vx_gpu_sampler *g) {
  for (int i = 0; i < VX_GPU_SLOTS; i++) {
    vx_gpu_slot *sl = &g->slot[i];
    if (sl->h_points) cudaFreeHost(sl->h_points);
    if (sl->h_dist) cudaFreeHost(sl->h_dist);
    if (sl->h_grad) cudaFreeHost(sl->h_grad);
    if (sl->h_flags) cudaFreeHost(sl->h_flags);
    if (sl->h_count) cudaFreeHost(sl->h_count);
    if (sl->points) cudaFree(sl->points);
    if (sl->dist) cudaFree(sl->dist);
    if (sl->grad) cudaFree(sl->grad);
    if (sl->flags) cudaFree(sl->flags);
    sl->h_points = sl->h_dist = sl->h_grad = NULL;
    sl->h_flags = NULL;
    sl->h_count = NULL;
    sl->points = sl->dist = sl->grad = NULL;
    sl->flags = NULL;
    sl->n = 0;
  }
  g->slot_cap = 0;
}

extern "C" void vx_gpu_sampler_free(vx_gpu_sampler *g) {
  if (!g) return;
  /* errors on free are ignored: the status already says what went wrong first */
  if (g->count) cudaFree(g->count);
  if (g->resigned_room) cudaFree(g->resigned_room);
  if (g->cache_keys) cudaFree(g->cache_keys);
  if (g->cache_values) cudaFree(g->cache_values);
  if (g->cache_bricks) cudaFree(g->cache_bricks);
  if (g->cache) cudaFree(g->cache);
  if (g->queue) cudaFree(g->queue);
  if (g->queued) cudaFree(g->queued);
  if (g->keys) cudaFree(g->keys);
  if (g->sorted) cudaFree(g->sorted);
  if (g->sort_tmp) cudaFree(g->sort_tmp);
  if (g->host_len) cudaFreeHost(g->host_len);
  slot_release(g);
  for (int e = 0; e < g->slot_events; e++) {
    vx_gpu_slot *sl = &g->slot[e / 4];
    cudaEventDestroy(e % 4 == 0 ? sl->up : e % 4 == 1 ? sl->run0 : e % 4 == 2 ? sl->run1 : sl->down);
  }
  if (g->up) cudaStreamDestroy(g->up);
  if (g->down) cudaStreamDestroy(g->down);
  if (g->events) {
    cudaEventDestroy(g->ev[0]);
    cudaEventDestroy(g->ev[1]);
  }
  if (g->stream) cudaStreamDestroy(g->stream);
  cudaGetLastError();
  vx_free(g);
}

/* The re-signed voxels' bits (NULL: none) to the device, into the room kept from a last tree
 * when it is large enough. */
static vx_status put_resigned(vx_gpu_sampler *g, const uint32_t *resigned, uint64_t voxel_count,
                              vx_error *err) {
  vx_status st = VX_OK;
  const size_t bytes = (size_t)((voxel_count + 31u) / 32u) * sizeof(uint32_t);
  g->resigned = NULL;
  if (!resigned) return VX_OK;
  if (g->resigned_bytes < bytes) {
    if (g->resigned_room) cudaFree(g->resigned_room);
    g->resigned_room = NULL;
    g->resigned_bytes = 0;
    VX_CU(cudaMalloc((void **)&g->resigned_room, bytes ? bytes : 4),
          "allocating the re-signed voxels");
    g->resigned_bytes = bytes;
  }
  VX_CU(cudaMemcpy(g->resigned_room, resigned, bytes, cudaMemcpyHostToDevice),
        "uploading the re-signed voxels");
  g->resigned = g->resigned_room;
done:
  return st;
}

extern "C" vx_status vx_gpu_sampler_create(const vx_gpu_resident *res, const uint32_t *resigned,
                                           uint64_t voxel_count, vx_gpu_sampler **out,
                                           vx_error *err) {
  *out = NULL;
  if (!res) return vx_error_set(err, VX_ERR_INVALID_ARG, "GPU sampler: no tree on the GPU");
  vx_gpu_sampler *g = (vx_gpu_sampler *)vx_calloc(1, sizeof *g);
  if (!g) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  vx_status st = VX_OK;
  g->res = res;
  vx_gpu_resident_tree(res, &g->tree);
  VX_CU(cudaSetDevice(g->tree.device), "cudaSetDevice");
  if ((st = vx_cuda_usable((const void *)vx_sample_search, err)) != VX_OK) goto done;
  VX_CU(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking), "creating a stream");
  VX_CU(cudaEventCreate(&g->ev[0]), "cudaEventCreate");
  VX_CU(cudaEventCreate(&g->ev[1]), "cudaEventCreate");
  g->events = 1;
  VX_CU(cudaMalloc((void **)&g->count, 2 * sizeof(unsigned long long)), "allocating counters");
  if ((st = put_resigned(g, resigned, voxel_count, err)) != VX_OK) goto done;
  VX_CU(cudaDeviceGetAttribute(&g->sms, cudaDevAttrMultiProcessorCount, g->tree.device),
        "cudaDeviceGetAttribute");
done:
  if (st != VX_OK) {
    vx_gpu_sampler_free(g);
    return st;
  }
  *out = g;
  return VX_OK;
}

extern "C" vx_status vx_gpu_sampler_rebind(vx_gpu_sampler *g, const vx_gpu_resident *res,
                                           const uint32_t *resigned, uint64_t voxel_count,
                                           vx_error *err) {
  if (!g || !res) return vx_error_set(err, VX_ERR_INVALID_ARG, "GPU sampler: no tree on the GPU");
  vx_gpu_tree t;
  vx_gpu_resident_tree(res, &t);
  if (t.device != g->tree.device)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "GPU sampler: the tree is on GPU %d, the "
                        "sampler on GPU %d", t.device, g->tree.device);
  vx_status st = VX_OK;
  VX_CU(cudaSetDevice(t.device), "cudaSetDevice");
  /* the last tree's band cache is not this one's */
  if (g->cache_keys) cudaFree(g->cache_keys);
  if (g->cache_values) cudaFree(g->cache_values);
  if (g->cache_bricks) cudaFree(g->cache_bricks);
  if (g->cache) cudaFree(g->cache);
  g->cache_keys = NULL;
  g->cache_values = NULL;
  g->cache_bricks = NULL;
  g->cache = NULL;
  g->res = res;
  g->tree = t;
  st = put_resigned(g, resigned, voxel_count, err);
done:
  return st;
}

extern "C" int vx_gpu_pointer_kind(const vx_gpu_sampler *g, const void *p) {
  if (!p) return 0;
  cudaPointerAttributes a;
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError(); /* an unknown pointer: host memory */
    return 0;
  }
  if (a.type != cudaMemoryTypeDevice && a.type != cudaMemoryTypeManaged) return 0;
  return a.device == g->tree.device ? 1 : -1;
}

extern "C" int vx_gpu_sampler_device(const vx_gpu_sampler *g) { return g->tree.device; }

extern "C" vx_status vx_gpu_sampler_adopt_cache(vx_gpu_sampler *g, uint64_t *keys,
                                                uint32_t *values, vx_bc_brick *bricks,
                                                uint64_t mask, uint64_t count, vx_error *err) {
  vx_status st = VX_OK;
  vx_band_cache h;
  memset(&h, 0, sizeof h);
  if (g->cache) goto done; /* the first stays */
  VX_CU(cudaSetDevice(g->tree.device), "cudaSetDevice");
  h.keys = keys;
  h.values = values;
  h.mask = mask;
  h.bricks = bricks;
  h.brick_count = count;
  VX_CU(cudaMalloc((void **)&g->cache, sizeof h), "allocating the band cache");
  VX_CU(cudaMemcpy(g->cache, &h, sizeof h, cudaMemcpyHostToDevice), "uploading the band cache");
  g->cache_keys = keys;
  g->cache_values = values;
  g->cache_bricks = bricks;
  return VX_OK;
done:
  if (g->cache && !g->cache_keys) { /* its struct failed to upload: leave none */
    cudaFree(g->cache);
    g->cache = NULL;
  }
  cudaFree(keys);
  cudaFree(values);
  cudaFree(bricks);
  return st;
}

/* The view's arrays in s's copy. */
static void device_tree(const vx_gpu_sampler *g, const vx_sample_tree *s, vx_sample_tree *d) {
  *d = *s;
  d->nodes = g->tree.nodes;
  d->voxels = g->tree.voxels;
  d->resigned = g->resigned;
  d->cache = s->cache ? g->cache : NULL;
  if (d->levels > g->tree.levels) d->levels = g->tree.levels;
  if (d->cut > d->levels - 1) d->cut = d->levels - 1;
}

/* The staging slots of host-array calls: pinned and device memory for `want` points each (at
 * most VX_GPU_CHUNK; a call with more points than the slots hold, up to a chunk, makes them
 * anew, at least 2^16 points and a power of two), gradients and flags when a call first asks
 * for them; kept until the sampler is freed. */
static vx_status slot_buffers(vx_gpu_sampler *g, size_t want, int grad, int flags,
                              vx_error *err) {
  vx_status st = VX_OK;
  if (g->slot_cap < want) {
    size_t cap = (size_t)1 << 16;
    while (cap < want && cap < VX_GPU_CHUNK) cap <<= 1;
    slot_release(g);
    g->slot_cap = cap;
  }
  const size_t C = g->slot_cap;
  if (!g->up) VX_CU(cudaStreamCreateWithFlags(&g->up, cudaStreamNonBlocking), "creating a stream");
  if (!g->down)
    VX_CU(cudaStreamCreateWithFlags(&g->down, cudaStreamNonBlocking), "creating a stream");
  for (; g->slot_events < 4 * VX_GPU_SLOTS; g->slot_events++) {
    vx_gpu_slot *sl = &g->slot[g->slot_events / 4];
    const int k = g->slot_events % 4, timed = k == 1 || k == 2;
    cudaEvent_t *ev = k == 0 ? &sl->up : k == 1 ? &sl->run0 : k == 2 ? &sl->run1 : &sl->down;
    VX_CU(cudaEventCreateWithFlags(ev, timed ? cudaEventDefault : cudaEventDisableTiming),
          "cudaEventCreate");
  }
  for (int i = 0; i < VX_GPU_SLOTS; i++) {
    vx_gpu_slot *sl = &g->slot[i];
    /* each on its own, so that a call after a failed one allocates what is missing */
    if (!sl->h_points)
      VX_CU(cudaHostAlloc((void **)&sl->h_points, C * 3 * sizeof(float), cudaHostAllocDefault),
            "allocating pinned staging memory");
    if (!sl->h_dist)
      VX_CU(cudaHostAlloc((void **)&sl->h_dist, C * sizeof(float), cudaHostAllocDefault),
            "allocating pinned staging memory");
    if (!sl->h_count)
      VX_CU(cudaHostAlloc((void **)&sl->h_count, 2 * sizeof(unsigned long long),
                          cudaHostAllocDefault), "allocating pinned staging memory");
    if (!sl->points)
      VX_CU(cudaMalloc((void **)&sl->points, C * 3 * sizeof(float)), "allocating points");
    if (!sl->dist) VX_CU(cudaMalloc((void **)&sl->dist, C * sizeof(float)), "allocating distances");
    if (grad && !sl->h_grad)
      VX_CU(cudaHostAlloc((void **)&sl->h_grad, C * 3 * sizeof(float), cudaHostAllocDefault),
            "allocating pinned staging memory");
    if (grad && !sl->grad)
      VX_CU(cudaMalloc((void **)&sl->grad, C * 3 * sizeof(float)), "allocating gradients");
    if (flags && !sl->h_flags)
      VX_CU(cudaHostAlloc((void **)&sl->h_flags, C, cudaHostAllocDefault),
            "allocating pinned staging memory");
    if (flags && !sl->flags) VX_CU(cudaMalloc((void **)&sl->flags, C), "allocating flags");
  }
done:
  return st;
}

/* A host copy of up to 3 arrays between the caller's memory and a slot's pinned memory, in
 * pieces of VX_STAGE_PIECE bytes that up to VX_STAGE_THREADS threads take in turn (one core's
 * memcpy does not reach the bus's rate). */
typedef struct stage_copy {
  unsigned char *dst[3];
  const unsigned char *src[3];
  size_t bytes[3], pieces[3];
  int m;
  unsigned long long next;
} stage_copy;

static void stage_add(stage_copy *c, void *dst, const void *src, size_t bytes) {
  if (!bytes) return;
  c->dst[c->m] = (unsigned char *)dst;
  c->src[c->m] = (const unsigned char *)src;
  c->bytes[c->m] = bytes;
  c->pieces[c->m] = (bytes + VX_STAGE_PIECE - 1) / VX_STAGE_PIECE;
  c->m++;
}

static void *stage_worker(void *arg) {
  stage_copy *c = (stage_copy *)arg;
  for (;;) {
    size_t k = (size_t)__atomic_fetch_add(&c->next, 1ull, __ATOMIC_RELAXED);
    int a = 0;
    while (a < c->m && k >= c->pieces[a]) k -= c->pieces[a++];
    if (a == c->m) break;
    const size_t off = k * VX_STAGE_PIECE, len = c->bytes[a] - off < VX_STAGE_PIECE
                                                     ? c->bytes[a] - off
                                                     : VX_STAGE_PIECE;
    memcpy(c->dst[a] + off, c->src[a] + off, len);
  }
  return NULL;
}

static void stage_run(stage_copy *c) {
  size_t pieces = 0;
  for (int a = 0; a < c->m; a++) pieces += c->pieces[a];
  c->next = 0;
  const int cap = pieces < VX_STAGE_THREADS ? (int)(pieces ? pieces : 1) : VX_STAGE_THREADS;
  if (cap > 1) vx_parallel(vx_thread_count(0, cap), stage_worker, c);
  else stage_worker(c);
}

/* Chunk [at, at + k) of the caller's points into slot sl, and its upload queued on g->up (sl's
 * previous chunk is done with: its results were downloaded). */
static vx_status slot_upload(vx_gpu_sampler *g, vx_gpu_slot *sl, const float *points, uint64_t at,
                             uint64_t k, vx_error *err) {
  vx_status st = VX_OK;
  stage_copy c;
  memset(&c, 0, sizeof c);
  stage_add(&c, sl->h_points, points + 3 * at, (size_t)k * 3 * sizeof(float));
  stage_run(&c);
  sl->at = at;
  sl->n = k;
  VX_CU(cudaMemcpyAsync(sl->points, sl->h_points, (size_t)k * 3 * sizeof(float),
                        cudaMemcpyHostToDevice, g->up), "uploading points");
  VX_CU(cudaEventRecord(sl->up, g->up), "cudaEventRecord");
done:
  return st;
}

/* The chunk of slot sl: waits for its results, copies them to the caller's arrays, adds its
 * counters to c (chunks come in order, so the first invalid point is the first chunk's) and its
 * kernels' time to *ms. */
static vx_status slot_finish(vx_gpu_slot *sl, float *dist, float *grad, uint8_t *flags,
                             unsigned long long c[2], double *ms, vx_error *err) {
  vx_status st = VX_OK;
  float m = 0.0f;
  VX_CU(cudaEventSynchronize(sl->down), "running the sampling kernel");
  VX_CU(cudaEventElapsedTime(&m, sl->run0, sl->run1), "cudaEventElapsedTime");
  *ms += m;
  {
    stage_copy cp;
    memset(&cp, 0, sizeof cp);
    stage_add(&cp, dist + sl->at, sl->h_dist, (size_t)sl->n * sizeof(float));
    if (grad) stage_add(&cp, grad + 3 * sl->at, sl->h_grad, (size_t)sl->n * 3 * sizeof(float));
    if (flags) stage_add(&cp, flags + sl->at, sl->h_flags, (size_t)sl->n);
    stage_run(&cp);
  }
  c[0] += sl->h_count[0];
  if (sl->h_count[0] && c[1] == ~0ull) c[1] = sl->h_count[1] + sl->at;
  sl->n = 0;
done:
  return st;
}

/* Host arrays: chunks of VX_GPU_CHUNK points through the staging slots, so that chunk k+1's copy
 * into pinned memory and its upload, chunk k's kernels and chunk k-1's download and copy out
 * overlap. The kernels of one chunk run on g->stream, uploads on g->up, downloads on g->down,
 * ordered by the slots' events. */
static vx_status sample_host(vx_gpu_sampler *g, const vx_sample_tree *d, const float *points,
                             uint64_t n, float *dist, float *grad, uint8_t *flags,
                             unsigned long long c[2], double *kernel_ms, vx_error *err) {
  vx_status st = VX_OK;
  const uint64_t C = VX_GPU_CHUNK, chunks = (n + C - 1) / C;
  uint64_t out = 0; /* chunks copied out */
  if (!chunks) return VX_OK;
  if ((st = slot_buffers(g, n < C ? (size_t)n : (size_t)C, grad != NULL, flags != NULL, err)) !=
      VX_OK)
    return st;
  if ((st = slot_upload(g, &g->slot[0], points, 0, n < C ? n : C, err)) != VX_OK) goto done;
  for (uint64_t k = 0; k < chunks; k++) {
    vx_gpu_slot *sl = &g->slot[k % VX_GPU_SLOTS];
    VX_CU(cudaStreamWaitEvent(g->stream, sl->up, 0), "cudaStreamWaitEvent");
    VX_CU(cudaEventRecord(sl->run0, g->stream), "cudaEventRecord");
    if ((st = launch(g, d, g->stream, sl->points, sl->n, sl->dist, grad ? sl->grad : NULL,
                     flags ? sl->flags : NULL, err)) != VX_OK)
      goto done;
    VX_CU(cudaMemcpyAsync(sl->h_count, g->count, 2 * sizeof(unsigned long long),
                          cudaMemcpyDeviceToHost, g->stream), "reading counters");
    VX_CU(cudaEventRecord(sl->run1, g->stream), "cudaEventRecord");
    VX_CU(cudaStreamWaitEvent(g->down, sl->run1, 0), "cudaStreamWaitEvent");
    VX_CU(cudaMemcpyAsync(sl->h_dist, sl->dist, (size_t)sl->n * sizeof(float),
                          cudaMemcpyDeviceToHost, g->down), "downloading distances");
    if (grad)
      VX_CU(cudaMemcpyAsync(sl->h_grad, sl->grad, (size_t)sl->n * 3 * sizeof(float),
                            cudaMemcpyDeviceToHost, g->down), "downloading gradients");
    if (flags)
      VX_CU(cudaMemcpyAsync(sl->h_flags, sl->flags, (size_t)sl->n, cudaMemcpyDeviceToHost,
                            g->down), "downloading flags");
    VX_CU(cudaEventRecord(sl->down, g->down), "cudaEventRecord");
    if (k + 1 < chunks) { /* while chunk k runs: chunk k + 1 - SLOTS out, chunk k + 1 in */
      vx_gpu_slot *nx = &g->slot[(k + 1) % VX_GPU_SLOTS];
      if (nx->n) {
        if ((st = slot_finish(nx, dist, grad, flags, c, kernel_ms, err)) != VX_OK) goto done;
        out++;
      }
      const uint64_t at = (k + 1) * C;
      if ((st = slot_upload(g, nx, points, at, n - at < C ? n - at : C, err)) != VX_OK) goto done;
    }
  }
  for (; out < chunks; out++)
    if ((st = slot_finish(&g->slot[out % VX_GPU_SLOTS], dist, grad, flags, c, kernel_ms, err)) !=
        VX_OK)
      goto done;
done:
  if (st != VX_OK) { /* leave nothing in flight */
    cudaStreamSynchronize(g->up);
    cudaStreamSynchronize(g->stream);
    cudaStreamSynchronize(g->down);
    cudaGetLastError();
    for (int i = 0; i < VX_GPU_SLOTS; i++) g->slot[i].n = 0;
  }
  return st;
}

extern "C" vx_status vx_gpu_sample(vx_gpu_sampler *g, const vx_sample_tree *s, int device,
                                   void *stream, const float *points, uint64_t n, float *dist,
                                   float *grad, uint8_t *flags, vx_sample_count *count,
                                   vx_gpu_sample_times *times, vx_error *err) {
  vx_status st = VX_OK;
  vx_sample_tree d;
  device_tree(g, s, &d);
  unsigned long long c[2] = {0ull, ~0ull};
  float ms = 0.0f;
  double t0 = vx_clock_seconds(), kernel_ms = 0.0;
  VX_CU(cudaSetDevice(g->tree.device), "cudaSetDevice");
  if (device) {
    cudaStream_t cs = (cudaStream_t)stream;
    VX_CU(cudaEventRecord(g->ev[0], cs), "cudaEventRecord");
    if ((st = launch(g, &d, cs, points, n, dist, grad, flags, err)) != VX_OK) goto done;
    VX_CU(cudaEventRecord(g->ev[1], cs), "cudaEventRecord");
    VX_CU(cudaMemcpyAsync(c, g->count, sizeof c, cudaMemcpyDeviceToHost, cs), "reading counters");
    VX_CU(cudaStreamSynchronize(cs), "running the sampling kernel");
    VX_CU(cudaEventElapsedTime(&ms, g->ev[0], g->ev[1]), "cudaEventElapsedTime");
    kernel_ms = ms;
  } else if ((st = sample_host(g, &d, points, n, dist, grad, flags, c, &kernel_ms, err)) !=
             VX_OK) {
    goto done;
  }
  if (count) {
    count->invalid = c[0];
    count->first_invalid = c[0] ? c[1] : UINT64_MAX;
  }
  if (times) {
    times->ms_kernel = kernel_ms;
    times->ms_copy = device ? 0.0 : (vx_clock_seconds() - t0) * 1e3 - kernel_ms;
  }
done:
  return st;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

extern "C" vx_status vx_gpu_sample_bench(vx_gpu_sampler *g, const vx_sample_tree *s,
                                         const float *points, uint64_t n, int reps, double *ms,
                                         uint64_t flag_counts[8], int *regs, vx_error *err) {
  vx_status st = VX_OK;
  vx_sample_tree d;
  device_tree(g, s, &d);
  float *dp = NULL, *dd = NULL;
  uint8_t *df = NULL, *hf = NULL;
  cudaEvent_t *ev = (cudaEvent_t *)vx_calloc((size_t)reps * 2, sizeof *ev);
  int events = 0;
  cudaFuncAttributes fa;
  hf = (uint8_t *)vx_malloc(n ? n : 1);
  if (!ev || !hf) {
    st = vx_error_set(err, VX_ERR_NOMEM, "GPU sample bench: out of host memory");
    goto done;
  }
  VX_CU(cudaSetDevice(g->tree.device), "cudaSetDevice");
  VX_CU(cudaMalloc((void **)&dp, n * 3 * sizeof(float) + 16), "allocating the points");
  VX_CU(cudaMalloc((void **)&dd, n * sizeof(float) + 16), "allocating the distances");
  VX_CU(cudaMalloc((void **)&df, n + 16), "allocating the flags");
  VX_CU(cudaMemcpy(dp, points, n * 3 * sizeof(float), cudaMemcpyHostToDevice), "uploading points");
  /* warm-up: module load, caches, clocks */
  if ((st = launch(g, &d, g->stream, dp, n, dd, NULL, df, err)) != VX_OK) goto done;
  VX_CU(cudaStreamSynchronize(g->stream), "warm-up run");
  for (; events < reps * 2; events++) VX_CU(cudaEventCreate(&ev[events]), "cudaEventCreate");
  for (int r = 0; r < reps; r++) {
    VX_CU(cudaEventRecord(ev[2 * r], g->stream), "cudaEventRecord");
    if ((st = launch(g, &d, g->stream, dp, n, dd, NULL, df, err)) != VX_OK) goto done;
    VX_CU(cudaEventRecord(ev[2 * r + 1], g->stream), "cudaEventRecord");
  }
  VX_CU(cudaStreamSynchronize(g->stream), "timed runs");
  for (int r = 0; r < reps; r++) {
    float m = 0.0f;
    VX_CU(cudaEventElapsedTime(&m, ev[2 * r], ev[2 * r + 1]), "cudaEventElapsedTime");
    ms[r] = m;
  }
  qsort(ms, (size_t)reps, sizeof *ms, cmp_double);
  VX_CU(cudaMemcpy(hf, df, n, cudaMemcpyDeviceToHost), "downloading flags");
  for (int k = 0; k < 8; k++) flag_counts[k] = 0;
  for (uint64_t i = 0; i < n; i++)
    for (int k = 0; k < 8; k++) flag_counts[k] += hf[i] >> k & 1u;
  VX_CU(cudaFuncGetAttributes(&fa, vx_sample_search), "cudaFuncGetAttributes");
  *regs = fa.numRegs;
done:
  for (int e = 0; e < events; e++) cudaEventDestroy(ev[e]);
  if (dp) cudaFree(dp);
  if (dd) cudaFree(dd);
  if (df) cudaFree(df);
  cudaGetLastError();
  vx_free(ev);
  vx_free(hf);
  return st;
}
