/* SPDX-License-Identifier: Apache-2.0 */
/* render_gpu.cu - the CUDA ray-marcher: a thin loop around vx_render_pixel() (trace.h).
 *
 * Algorithm. Every loaded level of the tree is uploaded once (vx_gpu_view_create, through
 * svo/gpu_tree.h) as the same pointer-free arrays the host holds (node.h: nodes[] breadth first,
 * voxels[] Morton order, and their colours when the tree has them) and stays there for any number
 * of frames; the scene (camera in grid space, cut, shading) travels as a kernel parameter, so a
 * frame at another camera, cut or shading costs one launch and the copy of its pixels back to
 * host memory. One thread renders one pixel with the traversal shared with the CPU renderer, so
 * the two images agree up to float contraction (see tests/test_gpu_render.c).
 *
 * Schedules (vx_gpu_config, measured in docs/MARCHER.md):
 *   persistent  (default) a grid that just fills the machine; each warp takes 8x4 tiles from a
 *               global atomic counter until none is left (Aila & Laine 2009, "Understanding the
 *               efficiency of ray traversal on GPUs", persistent threads at warp granularity:
 *               vx_render_pixel is not restartable, so lanes cannot refill one by one). With
 *               plane-bound culling and the warp rejoin it beats the tiled grid by 6-8 % on
 *               views the model fills (a warp that finishes early takes the next tile instead
 *               of idling in its block) and matches it on framed views;
 *   tiled       one thread per pixel, 2D blocks (16x8 by default: a warp is a 16x2 pixel tile).
 *   reg_cap     __launch_bounds__(256, MINB) instances cap registers at 65536 / (256 * MINB).
 *
 * Node fetches. trace.h reads a node with one 16-byte load through the read-only path
 * (const __restrict__ + __ldg of a uint4 under __CUDA_ARCH__). Checked in this file's PTX
 * (nvcc -keep: ld.global.nc.v4.u32 for every node fetch) and SASS on the H100 (cuobjdump
 * --dump-sass: LDG.E.128.CONSTANT); scripts/device_gpu_tests.sh repeats the SASS check and
 * docs/MARCHER.md records the result and the register / stack report of ptxas.
 *
 * Errors. Every CUDA call is checked and every launch is followed by cudaGetLastError(); the
 * mapping to vx_status is svo/cuda_status.cuh's. Nothing is printed.
 */
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include "marcher/marcher.h"
#include "marcher/gpu_render.h"
#include "marcher/scene.h"
#include "marcher/trace.h"
#include "svo/cuda_status.cuh"
#include "svo/gpu_tree.h"
#include "sys/system.h"

/* ---- a view: the resident tree (svo/gpu_tree.h) and what frames need --------------------- */

struct vx_gpu_view {
  vx_gpu_resident *res; /* the tree on the device */
  vx_gpu_tree tree;     /* its arrays */
  /* frame buffers, grown to the largest frame drawn */
  uint8_t *rgb;
  float *depth;
  uint32_t *visits;
  unsigned int *counter; /* persistent schedule's tile counter */
  /* a tiled tree's tables (trace_tiled.h) and the host copies they were made from */
  vx_tile_ref *tiles;
  int32_t *cells;
  size_t tiles_cap, cells_cap, tiles_n, cells_n;
  vx_tile_ref *tiles_host;
  size_t pixels_cap, visits_cap;
  cudaStream_t stream;
  cudaEvent_t ev[2];
  int events;
};

static const void *kernel_fn(int persistent, int minb);

static vx_status gpu_open(vx_gpu_view *c, const vx_octree *t, vx_error *err) {
  vx_status st = vx_cuda_usable(kernel_fn(1, 1), err);
  if (st != VX_OK) return st;
  st = vx_gpu_resident_create(t, &c->res, err);
  if (st != VX_OK) return st;
  vx_gpu_resident_tree(c->res, &c->tree);
  VX_CU(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking), "creating a stream");
  VX_CU(cudaEventCreate(&c->ev[0]), "cudaEventCreate");
  VX_CU(cudaEventCreate(&c->ev[1]), "cudaEventCreate");
  c->events = 1;
  VX_CU(cudaMalloc((void **)&c->counter, sizeof(unsigned int)), "allocating the tile counter");
done:
  return st;
}

/* Frame buffers for n pixels (visit counts when asked), kept for later frames. */
static vx_status gpu_frame(vx_gpu_view *c, size_t n, int with_visits, vx_error *err) {
  vx_status st = VX_OK;
  if (n > c->pixels_cap) {
    if (c->rgb) cudaFree(c->rgb);
    if (c->depth) cudaFree(c->depth);
    c->rgb = NULL;
    c->depth = NULL;
    c->pixels_cap = 0;
    VX_CU(cudaMalloc((void **)&c->rgb, n * 3), "allocating the image");
    VX_CU(cudaMalloc((void **)&c->depth, n * sizeof(float)), "allocating the depth buffer");
    c->pixels_cap = n;
  }
  if (with_visits && n > c->visits_cap) {
    if (c->visits) cudaFree(c->visits);
    c->visits = NULL;
    c->visits_cap = 0;
    VX_CU(cudaMalloc((void **)&c->visits, n * sizeof(uint32_t)), "allocating the visit counts");
    c->visits_cap = n;
  }
  /* NaN everywhere, so a pixel the kernel missed is visible (tests check none is left). */
  VX_CU(cudaMemsetAsync(c->depth, 0xff, n * sizeof(float), c->stream), "clearing the depth buffer");
done:
  return st;
}

/* The scene for the device: the host scene with device pointers and the uploaded levels. */
static vx_status gpu_scene(const vx_gpu_view *c, const vx_octree *t, const vx_march_opts *o,
                           vx_trace_scene *s, vx_error *err) {
  vx_status st = vx_render_check(t, o, err);
  if (st != VX_OK) return st;
  if ((st = vx_trace_scene_init(s, t, o)) != VX_OK)
    return vx_error_set(err, st, "GPU: cannot set up the scene");
  s->nodes = c->tree.nodes;
  s->voxels = c->tree.voxels;
  s->node_color = c->tree.node_color;
  s->voxel_color = c->tree.voxel_color;
  s->holes = c->tree.holes;
  s->levels_loaded = c->tree.levels;
  if (s->max_level > (int)c->tree.levels - 1) s->max_level = (int)c->tree.levels - 1;
  return VX_OK;
}

/* ---- kernels -------------------------------------------------------------------------------- */

/* The two kinds of scene a kernel draws: a tree's (trace.h) and a tiled tree's (trace_tiled.h). */
__device__ __forceinline__ void pixel_of(const vx_trace_scene &s, uint32_t px, uint32_t py,
                                         vx_pixel *p) {
  vx_render_pixel(&s, px, py, p);
}
__device__ __forceinline__ void pixel_of(const vx_tiled_scene &s, uint32_t px, uint32_t py,
                                         vx_pixel *p) {
  vx_render_pixel_tiled(&s, px, py, p);
}
__host__ __device__ __forceinline__ const vx_trace_scene &frame_of(const vx_trace_scene &s) {
  return s;
}
__host__ __device__ __forceinline__ const vx_trace_scene &frame_of(const vx_tiled_scene &s) {
  return s.tile; /* the image size and camera (the top scene's are the same) */
}

template <typename S>
__device__ __forceinline__ void store_pixel(const S &s, uint32_t px, uint32_t py,
                                            uint8_t *__restrict__ rgb, float *__restrict__ depth,
                                            uint32_t *__restrict__ visits) {
  vx_pixel p;
  pixel_of(s, px, py, &p);
  size_t i = (size_t)py * frame_of(s).width + px;
  rgb[3 * i + 0] = p.rgb[0];
  rgb[3 * i + 1] = p.rgb[1];
  rgb[3 * i + 2] = p.rgb[2];
  depth[i] = p.depth;
  if (visits) visits[i] = p.visits;
}

/* Blocks of 256 per multiprocessor asked of ptxas: Turing (sm_75) holds at most 1024 threads
 * per multiprocessor, so there the 48 and 40 register caps (5 and 6 blocks) act as 64. */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#define VX_MINB(m) ((m) > 4 ? 4 : (m))
#else
#define VX_MINB(m) (m)
#endif

/* One thread per pixel. The scene is a kernel parameter (constant bank, no local copy). */
template <int MINB, typename S>
__global__ void __launch_bounds__(256, VX_MINB(MINB))
    vx_kernel_tiled(const S s, uint8_t *__restrict__ rgb, float *__restrict__ depth,
                    uint32_t *__restrict__ visits) {
  uint32_t px = blockIdx.x * blockDim.x + threadIdx.x;
  uint32_t py = blockIdx.y * blockDim.y + threadIdx.y;
  if (px >= frame_of(s).width || py >= frame_of(s).height) return;
  store_pixel(s, px, py, rgb, depth, visits);
}

/* Persistent warps: each warp takes the next 8x4 tile until the counter passes the last one. */
template <int MINB, typename S>
__global__ void __launch_bounds__(256, VX_MINB(MINB))
    vx_kernel_persistent(const S s, uint8_t *__restrict__ rgb, float *__restrict__ depth,
                         uint32_t *__restrict__ visits, unsigned int *__restrict__ counter) {
  const uint32_t lane = threadIdx.x & 31u;
  const uint32_t W = frame_of(s).width, H = frame_of(s).height;
  const uint32_t tiles_x = (W + 7u) / 8u, tiles = tiles_x * ((H + 3u) / 4u);
  for (;;) {
    unsigned int tile = 0;
    if (lane == 0) tile = atomicAdd(counter, 1u);
    tile = __shfl_sync(0xffffffffu, tile, 0);
    if (tile >= tiles) return;
    uint32_t px = (tile % tiles_x) * 8u + (lane & 7u);
    uint32_t py = (tile / tiles_x) * 4u + (lane >> 3);
    if (px < W && py < H) store_pixel(s, px, py, rgb, depth, visits);
  }
}

typedef struct launch_plan {
  dim3 grid, block;
  int persistent;
  const void *fn; /* for cudaFuncGetAttributes */
  int minb;
} launch_plan;

static int minb_for_cap(int cap) {
  if (cap <= 0) return 1;
  if (cap >= 128) return 2;
  if (cap >= 85) return 3;
  if (cap >= 64) return 4;
  if (cap >= 48) return 5;
  return 6;
}

template <int MINB, typename S> static const void *tiled_fn(void) {
  return (const void *)vx_kernel_tiled<MINB, S>;
}
template <int MINB, typename S> static const void *persistent_fn(void) {
  return (const void *)vx_kernel_persistent<MINB, S>;
}

template <typename S> static const void *kernel_fn_of(int persistent, int minb) {
  switch (minb) {
  case 2: return persistent ? persistent_fn<2, S>() : tiled_fn<2, S>();
  case 3: return persistent ? persistent_fn<3, S>() : tiled_fn<3, S>();
  case 4: return persistent ? persistent_fn<4, S>() : tiled_fn<4, S>();
  case 5: return persistent ? persistent_fn<5, S>() : tiled_fn<5, S>();
  case 6: return persistent ? persistent_fn<6, S>() : tiled_fn<6, S>();
  default: return persistent ? persistent_fn<1, S>() : tiled_fn<1, S>();
  }
}

static const void *kernel_fn(int persistent, int minb) {
  return kernel_fn_of<vx_trace_scene>(persistent, minb);
}

template <typename S>
static vx_status plan_launch(const vx_gpu_view *c, const vx_gpu_config *cfg, uint32_t width,
                             uint32_t height, launch_plan *p, vx_error *err) {
  vx_status st = VX_OK;
  vx_gpu_config d;
  memset(&d, 0, sizeof d);
  if (cfg) d = *cfg;
  p->persistent = d.schedule == VX_GPU_PERSISTENT || d.schedule == VX_GPU_DEFAULT;
  if (d.block_w == 0 || d.block_h == 0) {
    d.block_w = p->persistent ? 128 : 16;
    d.block_h = p->persistent ? 1 : 8;
  }
  uint32_t threads = d.block_w * d.block_h;
  if (threads > 256 || (p->persistent && threads % 32 != 0))
    return vx_error_set(err, VX_ERR_INVALID_ARG,
                        "GPU: block %ux%u: at most 256 threads (a multiple of 32 when persistent)",
                        d.block_w, d.block_h);
  p->minb = minb_for_cap(d.reg_cap);
  p->fn = kernel_fn_of<S>(p->persistent, p->minb);
  if (p->persistent) {
    int per_sm = 0;
    VX_CU(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, p->fn, (int)threads, 0),
          "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
    if (per_sm < 1) per_sm = 1;
    p->block = dim3(threads, 1, 1);
    p->grid = dim3((unsigned)(per_sm * vx_gpu_resident_sm_count(c->res)), 1, 1);
  } else {
    p->block = dim3(d.block_w, d.block_h, 1);
    p->grid = dim3((width + d.block_w - 1) / d.block_w, (height + d.block_h - 1) / d.block_h, 1);
  }
done:
  return st;
}

template <int MINB, typename S>
static void launch_minb(const launch_plan *p, const S &s, const vx_gpu_view *c, uint32_t *visits,
                        cudaStream_t stream) {
  if (p->persistent)
    vx_kernel_persistent<MINB, S><<<p->grid, p->block, 0, stream>>>(s, c->rgb, c->depth, visits,
                                                                    c->counter);
  else
    vx_kernel_tiled<MINB, S><<<p->grid, p->block, 0, stream>>>(s, c->rgb, c->depth, visits);
}

/* Launches one frame (asynchronously) and checks the launch. */
template <typename S>
static vx_status gpu_launch(const vx_gpu_view *c, const launch_plan *p, const S *s,
                            int with_visits, cudaStream_t stream, vx_error *err) {
  vx_status st = VX_OK;
  uint32_t *visits = with_visits ? c->visits : NULL;
  if (p->persistent)
    VX_CU(cudaMemsetAsync(c->counter, 0, sizeof(unsigned int), stream), "resetting the tile counter");
  switch (p->minb) {
  case 2: launch_minb<2, S>(p, *s, c, visits, stream); break;
  case 3: launch_minb<3, S>(p, *s, c, visits, stream); break;
  case 4: launch_minb<4, S>(p, *s, c, visits, stream); break;
  case 5: launch_minb<5, S>(p, *s, c, visits, stream); break;
  case 6: launch_minb<6, S>(p, *s, c, visits, stream); break;
  default: launch_minb<1, S>(p, *s, c, visits, stream); break;
  }
  VX_CU(cudaGetLastError(), "launching the ray-marching kernel");
done:
  return st;
}

/* Copies `bytes` of device memory into host memory `dst` after the work queued on the stream,
 * straight into the caller's pageable memory. (Staging it through pinned memory in pieces, the
 * DMA of one piece overlapping the host copy of the last, measured slower on the H100 host:
 * docs/MARCHER.md.) */
static vx_status copy_out(vx_gpu_view *c, void *dst, const void *src, size_t bytes,
                          vx_error *err) {
  vx_status st = VX_OK;
  VX_CU(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, c->stream), "copying back");
  VX_CU(cudaStreamSynchronize(c->stream), "copying back");
done:
  return st;
}

/* ---- public --------------------------------------------------------------------------------- */

static vx_status check_opts(const vx_octree *t, const vx_march_opts *o, vx_error *err) {
  if (!t || !o || !t->nodes) return vx_error_set(err, VX_ERR_INVALID_ARG, "GPU: no tree or options");
  if (o->width == 0 || o->height == 0 || (uint64_t)o->width * o->height > ((uint64_t)1 << 31))
    return vx_error_set(err, VX_ERR_INVALID_ARG, "GPU: image size %ux%u out of range", o->width,
                        o->height);
  return VX_OK;
}

extern "C" void vx_gpu_view_free(vx_gpu_view *c) {
  if (!c) return;
  /* Errors on free are ignored: nothing can be done about them and the status already says
   * what went wrong first. */
  if (c->rgb) cudaFree(c->rgb);
  if (c->depth) cudaFree(c->depth);
  if (c->visits) cudaFree(c->visits);
  if (c->counter) cudaFree(c->counter);
  if (c->tiles) cudaFree(c->tiles);
  if (c->cells) cudaFree(c->cells);
  vx_free(c->tiles_host);
  if (c->events) {
    cudaEventDestroy(c->ev[0]);
    cudaEventDestroy(c->ev[1]);
  }
  if (c->stream) cudaStreamDestroy(c->stream);
  cudaGetLastError();
  vx_gpu_resident_free(c->res);
  vx_free(c);
}

extern "C" vx_status vx_gpu_view_create(const vx_octree *t, vx_gpu_view **out, vx_error *err) {
  *out = NULL;
  if (!t || !t->nodes) return vx_error_set(err, VX_ERR_INVALID_ARG, "GPU: no tree");
  vx_gpu_view *c = (vx_gpu_view *)vx_calloc(1, sizeof *c);
  if (!c) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  vx_status st = gpu_open(c, t, err);
  if (st != VX_OK) {
    vx_gpu_view_free(c);
    return st;
  }
  *out = c;
  return VX_OK;
}

extern "C" const char *vx_gpu_view_device(const vx_gpu_view *g) {
  return vx_gpu_resident_device(g->res);
}

extern "C" uint64_t vx_gpu_view_tree_bytes(const vx_gpu_view *g) {
  return vx_gpu_resident_bytes(g->res);
}

extern "C" const vx_gpu_resident *vx_gpu_view_resident(const vx_gpu_view *g) { return g->res; }

/* One frame of scene s (device pointers) of width x height: the launch timed by a pair of CUDA
 * events, then the pixels (and, when not NULL, depth and visits) copied into host memory. */
template <typename S>
static vx_status draw_frame(vx_gpu_view *c, const S *s, const vx_gpu_config *cfg, uint32_t width,
                            uint32_t height, uint8_t *rgb, float *depth, uint32_t *visits,
                            vx_gpu_frame_times *times, vx_error *err) {
  vx_status st = VX_OK;
  size_t n = (size_t)width * height;
  launch_plan p;
  float ms = 0.0f;
  double t0 = 0.0;
  if ((st = gpu_frame(c, n, visits != NULL, err)) != VX_OK) goto done;
  if ((st = plan_launch<S>(c, cfg, width, height, &p, err)) != VX_OK) goto done;
  VX_CU(cudaEventRecord(c->ev[0], c->stream), "cudaEventRecord");
  if ((st = gpu_launch(c, &p, s, visits != NULL, c->stream, err)) != VX_OK) goto done;
  VX_CU(cudaEventRecord(c->ev[1], c->stream), "cudaEventRecord");
  VX_CU(cudaEventSynchronize(c->ev[1]), "running the ray-marching kernel");
  VX_CU(cudaEventElapsedTime(&ms, c->ev[0], c->ev[1]), "cudaEventElapsedTime");
  t0 = vx_clock_seconds();
  if ((st = copy_out(c, rgb, c->rgb, n * 3, err)) != VX_OK) goto done;
  if (depth && (st = copy_out(c, depth, c->depth, n * sizeof(float), err)) != VX_OK) goto done;
  if (visits && (st = copy_out(c, visits, c->visits, n * sizeof(uint32_t), err)) != VX_OK)
    goto done;
  if (times) {
    times->ms_kernel = ms;
    times->ms_copy = (vx_clock_seconds() - t0) * 1e3;
  }
done:
  return st;
}

extern "C" vx_status vx_gpu_view_draw(vx_gpu_view *c, const vx_octree *t, const vx_march_opts *o,
                                      const vx_gpu_config *cfg, uint8_t *rgb, float *depth,
                                      uint32_t *visits, vx_gpu_frame_times *times,
                                      vx_error *err) {
  vx_status st = check_opts(t, o, err);
  if (st != VX_OK) return st;
  if (!rgb) return vx_error_set(err, VX_ERR_INVALID_ARG, "GPU: no image memory");
  vx_trace_scene s;
  if ((st = gpu_scene(c, t, o, &s, err)) != VX_OK) return st;
  return draw_frame(c, &s, cfg, o->width, o->height, rgb, depth, visits, times, err);
}

extern "C" vx_status vx_gpu_view_set_tiles(vx_gpu_view *c, const vx_tile_ref *tiles, size_t n,
                                          const int32_t *cells, size_t ncells, vx_error *err) {
  vx_status st = VX_OK;
  if (n > c->tiles_cap) {
    if (c->tiles) cudaFree(c->tiles);
    vx_free(c->tiles_host);
    c->tiles = NULL;
    c->tiles_cap = 0;
    c->tiles_n = 0;
    c->tiles_host = (vx_tile_ref *)vx_malloc(n * sizeof *tiles);
    if (!c->tiles_host) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
    VX_CU(cudaMalloc((void **)&c->tiles, n * sizeof *tiles), "allocating the tile table");
    c->tiles_cap = n;
  }
  if (ncells > c->cells_cap) {
    if (c->cells) cudaFree(c->cells);
    c->cells = NULL;
    c->cells_cap = 0;
    VX_CU(cudaMalloc((void **)&c->cells, ncells * sizeof *cells), "allocating the cell table");
    c->cells_cap = ncells;
    c->cells_n = 0;
  }
  if (n != c->tiles_n || memcmp(c->tiles_host, tiles, n * sizeof *tiles) != 0) {
    VX_CU(cudaMemcpy(c->tiles, tiles, n * sizeof *tiles, cudaMemcpyHostToDevice),
          "uploading the tile table");
    memcpy(c->tiles_host, tiles, n * sizeof *tiles);
    c->tiles_n = n;
  }
  if (ncells != c->cells_n) { /* the cells of one file never change */
    VX_CU(cudaMemcpy(c->cells, cells, ncells * sizeof *cells, cudaMemcpyHostToDevice),
          "uploading the cell table");
    c->cells_n = ncells;
  }
done:
  return st;
}

extern "C" vx_status vx_gpu_view_draw_tiled(vx_gpu_view *c, const vx_tiled_scene *ts,
                                            uint8_t *rgb, float *depth,
                                            vx_gpu_frame_times *times, vx_error *err) {
  if (!rgb) return vx_error_set(err, VX_ERR_INVALID_ARG, "GPU: no image memory");
  if (!c->tiles || !c->cells)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "GPU: the tiled tree's tables are not set");
  vx_tiled_scene s = *ts;
  s.tiles = c->tiles;
  s.cells = c->cells;
  s.top.nodes = c->tree.nodes;
  s.top.node_color = c->tree.node_color;
  s.top.holes = c->tree.holes;
  s.top.levels_loaded = c->tree.levels;
  return draw_frame(c, &s, NULL, ts->tile.width, ts->tile.height, rgb, depth, NULL, times, err);
}

extern "C" vx_status vx_render_gpu_config(const vx_octree *t, const vx_march_opts *o,
                                          const vx_gpu_config *cfg, vx_march_image *img,
                                          vx_error *err) {
  vx_status st = check_opts(t, o, err);
  if (st != VX_OK) return st;
  if (!img || !img->rgb || !img->depth || img->width != o->width || img->height != o->height)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "GPU: the image does not match the options");
  vx_gpu_view *c;
  if ((st = vx_gpu_view_create(t, &c, err)) != VX_OK) return st;
  st = vx_gpu_view_draw(c, t, o, cfg, img->rgb, img->depth, img->visits, NULL, err);
  vx_gpu_view_free(c);
  return st;
}

extern "C" vx_status vx_render_gpu(const vx_octree *t, const vx_march_opts *o, vx_march_image *img,
                                   vx_error *err) {
  return vx_render_gpu_config(t, o, NULL, img, err);
}

extern "C" const char *vx_cuda_device_name(void) {
  static char name[256];
  int dev = 0;
  cudaDeviceProp prop;
  if (vx_cuda_usable(kernel_fn(1, 1), NULL) != VX_OK || cudaGetDevice(&dev) != cudaSuccess ||
      cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
    cudaGetLastError();
    return NULL;
  }
  snprintf(name, sizeof name, "%s", prop.name);
  return name;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

extern "C" vx_status vx_gpu_view_bench(vx_gpu_view *c, const vx_octree *t, const vx_march_opts *o,
                                       const vx_camera *views, int nviews, int frames,
                                       const vx_gpu_config *cfg, vx_gpu_bench_result *r,
                                       vx_error *err) {
  vx_status st = check_opts(t, o, err);
  if (st != VX_OK) return st;
  if (!views || nviews < 1 || frames < 1 || !r)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "GPU bench: need >= 1 view and >= 1 frame");
  memset(r, 0, sizeof *r);
  size_t n = (size_t)o->width * o->height;
  vx_trace_scene *scenes = (vx_trace_scene *)vx_calloc((size_t)nviews, sizeof *scenes);
  cudaEvent_t *ev = (cudaEvent_t *)vx_calloc((size_t)frames * 2, sizeof *ev);
  double *ms = (double *)vx_calloc((size_t)frames, sizeof *ms);
  double *ms_copy = (double *)vx_calloc((size_t)frames, sizeof *ms_copy);
  uint32_t *visits = (uint32_t *)vx_malloc(n * sizeof *visits);
  float *depth = (float *)vx_malloc(n * sizeof *depth);
  uint8_t *rgb = (uint8_t *)vx_malloc(n * 3);
  int events = 0;
  launch_plan p;
  cudaFuncAttributes fa;
  size_t free_b = 0, total_b = 0;
  double vsum = 0.0, hits = 0.0;
  if (!scenes || !ev || !ms || !ms_copy || !visits || !depth || !rgb) {
    st = vx_error_set(err, VX_ERR_NOMEM, "GPU bench: out of host memory");
    goto done;
  }
  if ((st = gpu_frame(c, n, 1, err)) != VX_OK) goto done;
  for (int v = 0; v < nviews; v++) {
    vx_march_opts ov = *o;
    ov.cam = views[v];
    if ((st = gpu_scene(c, t, &ov, &scenes[v], err)) != VX_OK) goto done;
  }
  if ((st = plan_launch<vx_trace_scene>(c, cfg, o->width, o->height, &p, err)) != VX_OK) goto done;
  VX_CU(cudaFuncGetAttributes(&fa, p.fn), "cudaFuncGetAttributes");

  /* Warm-up: every view once (module load, caches, clocks). */
  for (int v = 0; v < nviews; v++)
    if ((st = gpu_launch(c, &p, &scenes[v], 0, c->stream, err)) != VX_OK) goto done;
  VX_CU(cudaStreamSynchronize(c->stream), "warm-up frames");

  for (int f = 0; f < frames * 2; f++, events++) VX_CU(cudaEventCreate(&ev[f]), "cudaEventCreate");
  for (int f = 0; f < frames; f++) {
    VX_CU(cudaEventRecord(ev[2 * f], c->stream), "cudaEventRecord");
    if ((st = gpu_launch(c, &p, &scenes[f % nviews], 0, c->stream, err)) != VX_OK) goto done;
    VX_CU(cudaEventRecord(ev[2 * f + 1], c->stream), "cudaEventRecord");
  }
  VX_CU(cudaEventSynchronize(ev[2 * frames - 1]), "timed frames");
  for (int f = 0; f < frames; f++) {
    float m = 0.0f;
    VX_CU(cudaEventElapsedTime(&m, ev[2 * f], ev[2 * f + 1]), "cudaEventElapsedTime");
    ms[f] = m;
  }
  VX_CU(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");

  /* The same frames as a user of the renderer gets them: launch, wait, pixels into host memory. */
  for (int f = 0; f < frames; f++) {
    double t0 = vx_clock_seconds();
    if ((st = gpu_launch(c, &p, &scenes[f % nviews], 0, c->stream, err)) != VX_OK) goto done;
    if ((st = copy_out(c, rgb, c->rgb, n * 3, err)) != VX_OK) goto done;
    ms_copy[f] = (vx_clock_seconds() - t0) * 1e3;
  }
  r->ms_copy_median = median(ms_copy, frames);

  /* Untimed: node visits and hits per view. */
  for (int v = 0; v < nviews; v++) {
    if ((st = gpu_launch(c, &p, &scenes[v], 1, c->stream, err)) != VX_OK) goto done;
    VX_CU(cudaMemcpyAsync(visits, c->visits, n * sizeof *visits, cudaMemcpyDeviceToHost, c->stream),
          "downloading the visit counts");
    VX_CU(cudaMemcpyAsync(depth, c->depth, n * sizeof *depth, cudaMemcpyDeviceToHost, c->stream),
          "downloading the depth");
    VX_CU(cudaStreamSynchronize(c->stream), "counting visits");
    for (size_t i = 0; i < n; i++) {
      vsum += visits[i];
      hits += depth[i] == depth[i] && depth[i] != INFINITY ? 1.0 : 0.0;
    }
  }

  snprintf(r->device, sizeof r->device, "%s", vx_gpu_resident_device(c->res));
  r->sm_count = vx_gpu_resident_sm_count(c->res);
  r->width = o->width;
  r->height = o->height;
  r->frames = frames;
  r->level = o->lod;
  r->levels_uploaded = c->tree.levels;
  r->ms_median = median(ms, frames); /* sorts ms */
  r->ms_min = ms[0];
  r->ms_max = ms[frames - 1];
  r->mrays_per_s = r->ms_median > 0.0 ? (double)n / (r->ms_median * 1e3) : 0.0;
  r->visits_per_ray = vsum / ((double)n * nviews);
  r->hit_fraction = hits / ((double)n * nviews);
  r->tree_bytes = vx_gpu_view_tree_bytes(c);
  r->frame_bytes = (uint64_t)n * (3 + sizeof(float) + sizeof(uint32_t)) + sizeof(unsigned int);
  r->device_used_bytes = (uint64_t)(total_b - free_b);
  r->regs_per_thread = fa.numRegs;
  r->local_bytes = (int)fa.localSizeBytes;
done:
  for (int f = 0; f < events; f++) cudaEventDestroy(ev[f]);
  vx_free(scenes);
  vx_free(ev);
  vx_free(ms);
  vx_free(ms_copy);
  vx_free(visits);
  vx_free(depth);
  vx_free(rgb);
  return st;
}

extern "C" vx_status vx_gpu_bench(const vx_octree *t, const vx_march_opts *o,
                                  const vx_camera *views, int nviews, int frames,
                                  const vx_gpu_config *cfg, vx_gpu_bench_result *r,
                                  vx_error *err) {
  vx_status st = check_opts(t, o, err);
  if (st != VX_OK) return st;
  vx_gpu_view *c;
  if ((st = vx_gpu_view_create(t, &c, err)) != VX_OK) return st;
  st = vx_gpu_view_bench(c, t, o, views, nviews, frames, cfg, r, err);
  vx_gpu_view_free(c);
  return st;
}
