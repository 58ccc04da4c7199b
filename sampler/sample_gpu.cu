/* sample_gpu.cu - the CUDA sampler: a thin kernel around vx_sample_point() (svo/sample_eval.h),
 * reading the tree that marcher/'s vx_gpu_view already holds on the device.
 *
 * Algorithm. One thread per point (a grid-stride loop beyond 2^31 blocks' worth): the point is
 * read as three floats (a warp reads 384 contiguous bytes), sampled by the header shared with the
 * CPU, and its distance, gradient and flags written back. Points that arrive in a coherent order
 * (a surface scan, Morton order) send the lanes of a warp down the same nodes, which the read-only
 * cache then serves; far points (the sign walk) diverge but are rare near a surface.
 * Device pointers are sampled in place on the caller's stream (NULL: the legacy default stream,
 * which orders the kernel after work torch or cupy queued on theirs). Host arrays go through the
 * device in chunks of VX_GPU_CHUNK points on the sampler's own stream.
 * Non-finite points are counted on the device (one atomic per such point, with the smallest
 * index), so the library can fail a call that must not accept them.
 *
 * Errors. Every CUDA call is checked and every launch is followed by cudaGetLastError(); the
 * mapping to vx_status is svo/cuda_status.cuh's. Nothing is printed.
 */
#include <cuda_runtime.h>

#include <stdlib.h>
#include <string.h>

#include "sampler/sampler.h"
#include "svo/cuda_status.cuh"
#include "svo/system.h"

#define VX_GPU_CHUNK ((size_t)1 << 22) /* points per chunk of a host-array call */
#define VX_SAMPLE_BLOCK 256

struct vx_gpu_sampler {
  vx_gpu_view *view; /* borrowed */
  vx_gpu_tree tree;
  cudaStream_t stream;
  cudaEvent_t ev[2];
  int events;
  unsigned long long *count; /* device: invalid points, first invalid index */
  /* chunk buffers for host arrays, grown on demand */
  float *points, *dist, *grad;
  uint8_t *flags;
  int have_grad, have_flags;
};

/* ---- kernel ------------------------------------------------------------------------------------ */

__global__ void __launch_bounds__(VX_SAMPLE_BLOCK)
    vx_sample_kernel(const vx_sample_tree t, const float *__restrict__ points, uint64_t n,
                     float *__restrict__ dist, float *__restrict__ grad,
                     uint8_t *__restrict__ flags, unsigned long long *__restrict__ count) {
  const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
  for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    float w[3], g[3];
    uint32_t fl;
    w[0] = points[3 * i + 0];
    w[1] = points[3 * i + 1];
    w[2] = points[3 * i + 2];
    dist[i] = vx_sample_point(&t, w, g, &fl);
    if (grad) {
      grad[3 * i + 0] = g[0];
      grad[3 * i + 1] = g[1];
      grad[3 * i + 2] = g[2];
    }
    if (flags) flags[i] = (uint8_t)fl;
    if (fl & VX_SAMPLE_INVALID) {
      atomicAdd(&count[0], 1ull);
      atomicMin(&count[1], (unsigned long long)i);
    }
  }
}

static unsigned sample_blocks(uint64_t n) {
  uint64_t b = (n + VX_SAMPLE_BLOCK - 1) / VX_SAMPLE_BLOCK;
  return b > 0x7fffffffull ? 0x7fffffffu : (unsigned)(b ? b : 1);
}

/* Queues one run over device arrays on `stream` (counters reset first). */
static vx_status launch(vx_gpu_sampler *g, const vx_sample_tree *s, cudaStream_t stream,
                        const float *points, uint64_t n, float *dist, float *grad,
                        uint8_t *flags, vx_error *err) {
  vx_status st = VX_OK;
  VX_CU(cudaMemsetAsync(g->count, 0, sizeof(unsigned long long), stream), "resetting counters");
  VX_CU(cudaMemsetAsync(g->count + 1, 0xff, sizeof(unsigned long long), stream),
        "resetting counters");
  if (n) {
    vx_sample_kernel<<<sample_blocks(n), VX_SAMPLE_BLOCK, 0, stream>>>(*s, points, n, dist, grad,
                                                                       flags, g->count);
    VX_CU(cudaGetLastError(), "launching the sampling kernel");
  }
done:
  return st;
}

/* ---- the sampler ------------------------------------------------------------------------------- */

extern "C" void vx_gpu_sampler_free(vx_gpu_sampler *g) {
  if (!g) return;
  /* errors on free are ignored: the status already says what went wrong first */
  if (g->count) cudaFree(g->count);
  if (g->points) cudaFree(g->points);
  if (g->dist) cudaFree(g->dist);
  if (g->grad) cudaFree(g->grad);
  if (g->flags) cudaFree(g->flags);
  if (g->events) {
    cudaEventDestroy(g->ev[0]);
    cudaEventDestroy(g->ev[1]);
  }
  if (g->stream) cudaStreamDestroy(g->stream);
  cudaGetLastError();
  vx_free(g);
}

extern "C" vx_status vx_gpu_sampler_create(vx_gpu_view *view, vx_gpu_sampler **out,
                                           vx_error *err) {
  *out = NULL;
  if (!view) return vx_error_set(err, VX_ERR_INVALID_ARG, "GPU sampler: no tree on the GPU");
  vx_gpu_sampler *g = (vx_gpu_sampler *)vx_calloc(1, sizeof *g);
  if (!g) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  vx_status st = VX_OK;
  g->view = view;
  vx_gpu_view_tree(view, &g->tree);
  VX_CU(cudaSetDevice(g->tree.device), "cudaSetDevice");
  VX_CU(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking), "creating a stream");
  VX_CU(cudaEventCreate(&g->ev[0]), "cudaEventCreate");
  VX_CU(cudaEventCreate(&g->ev[1]), "cudaEventCreate");
  g->events = 1;
  VX_CU(cudaMalloc((void **)&g->count, 2 * sizeof(unsigned long long)), "allocating counters");
done:
  if (st != VX_OK) {
    vx_gpu_sampler_free(g);
    return st;
  }
  *out = g;
  return VX_OK;
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

/* The view's arrays in s's copy. */
static void device_tree(const vx_gpu_sampler *g, const vx_sample_tree *s, vx_sample_tree *d) {
  *d = *s;
  d->nodes = g->tree.nodes;
  d->voxels = g->tree.voxels;
  if (d->levels > g->tree.levels) d->levels = g->tree.levels;
  if (d->cut > d->levels - 1) d->cut = d->levels - 1;
}

/* Chunk buffers for host-array calls. */
static vx_status chunk_buffers(vx_gpu_sampler *g, int grad, int flags, vx_error *err) {
  vx_status st = VX_OK;
  if (!g->points) {
    VX_CU(cudaMalloc((void **)&g->points, VX_GPU_CHUNK * 3 * sizeof(float)), "allocating points");
    VX_CU(cudaMalloc((void **)&g->dist, VX_GPU_CHUNK * sizeof(float)), "allocating distances");
  }
  if (grad && !g->grad)
    VX_CU(cudaMalloc((void **)&g->grad, VX_GPU_CHUNK * 3 * sizeof(float)), "allocating gradients");
  if (flags && !g->flags)
    VX_CU(cudaMalloc((void **)&g->flags, VX_GPU_CHUNK), "allocating flags");
done:
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
  } else {
    if ((st = chunk_buffers(g, grad != NULL, flags != NULL, err)) != VX_OK) goto done;
    for (uint64_t at = 0; at < n; at += VX_GPU_CHUNK) {
      uint64_t k = n - at < VX_GPU_CHUNK ? n - at : VX_GPU_CHUNK;
      unsigned long long cc[2];
      VX_CU(cudaMemcpyAsync(g->points, points + 3 * at, k * 3 * sizeof(float),
                            cudaMemcpyHostToDevice, g->stream), "uploading points");
      VX_CU(cudaEventRecord(g->ev[0], g->stream), "cudaEventRecord");
      if ((st = launch(g, &d, g->stream, g->points, k, g->dist, grad ? g->grad : NULL,
                       flags ? g->flags : NULL, err)) != VX_OK)
        goto done;
      VX_CU(cudaEventRecord(g->ev[1], g->stream), "cudaEventRecord");
      VX_CU(cudaMemcpyAsync(dist + at, g->dist, k * sizeof(float), cudaMemcpyDeviceToHost,
                            g->stream), "downloading distances");
      if (grad)
        VX_CU(cudaMemcpyAsync(grad + 3 * at, g->grad, k * 3 * sizeof(float),
                              cudaMemcpyDeviceToHost, g->stream), "downloading gradients");
      if (flags)
        VX_CU(cudaMemcpyAsync(flags + at, g->flags, k, cudaMemcpyDeviceToHost, g->stream),
              "downloading flags");
      VX_CU(cudaMemcpyAsync(cc, g->count, sizeof cc, cudaMemcpyDeviceToHost, g->stream),
            "reading counters");
      VX_CU(cudaStreamSynchronize(g->stream), "running the sampling kernel");
      VX_CU(cudaEventElapsedTime(&ms, g->ev[0], g->ev[1]), "cudaEventElapsedTime");
      kernel_ms += ms;
      c[0] += cc[0];
      if (cc[0] && c[1] == ~0ull) c[1] = cc[1] + at;
    }
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
  VX_CU(cudaFuncGetAttributes(&fa, vx_sample_kernel), "cudaFuncGetAttributes");
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
