/* SPDX-License-Identifier: Apache-2.0 */
/* nvdb_compare.cu - the NanoVDB reference marcher (see nvdb_compare.h).
 *
 * Algorithm. The tree is walked depth first from the root; at level D-1 each child voxel's 8
 * corner values are written into a nanovdb::GridBuilder<float> (background +band, level-set
 * class) at the corner's grid point. GridBuilder::getHandle() turns that into one pointer-free
 * NanoVDB buffer (root, internal 32^3 and 16^3 nodes, 8^3 leaves), which is uploaded with one
 * copy. Each pixel's ray is the vx_trace_scene's, and nanovdb::ZeroCrossing (Museth's
 * hierarchical DDA, "Hierarchical digital differential analyzer for efficient ray-marching in
 * OpenVDB", SIGGRAPH 2014 talks) finds the first voxel whose value has the opposite sign of the
 * ray's first sample. NanoVDB is OpenVDB 10.0.1's (Debian's libnanovdb-dev), headers only.
 */
#include <cuda_runtime.h>
#include "svo/cuda_status.cuh"

#include <nanovdb/util/GridBuilder.h>
#include <nanovdb/util/HDDA.h>
#include <nanovdb/util/Ray.h>

#include <chrono>
#include <algorithm>
#include <vector>

#include "bench/nvdb_compare.h"
#include "marcher/scene.h"
#include "marcher/trace.h"

struct vx_nvdb {
  nanovdb::GridHandle<nanovdb::HostBuffer> handle;
  void *dgrid = nullptr; /* device copy of handle's buffer */
  uint64_t bytes = 0;
};

/* ---- building the grid ---------------------------------------------------------------------- */

extern "C" vx_status vx_nvdb_create(const vx_octree *t, vx_nvdb **out, vx_nvdb_stats *stats,
                                    vx_error *err) {
  *out = nullptr;
  if (!t || !t->nodes || t->levels_loaded < t->depth + 1 || !t->voxels)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "NanoVDB: the tree's voxels are not loaded");
  auto t0 = std::chrono::steady_clock::now();
  const float band = t->band;
  vx_nvdb *g = new (std::nothrow) vx_nvdb;
  if (!g) return vx_error_set(err, VX_ERR_NOMEM, "NanoVDB: out of memory");
  uint64_t written = 0;
  try {
    nanovdb::GridBuilder<float> builder(band, nanovdb::GridClass::LevelSet);
    auto acc = builder.getAccessor();
    struct item { uint32_t node, level, x, y, z; };
    std::vector<item> stack;
    stack.push_back(item{0, 0, 0, 0, 0});
    while (!stack.empty()) {
      item it = stack.back();
      stack.pop_back();
      const vx_node &n = t->nodes[it.node];
      uint32_t mask = vx_node_mask(n.info);
      for (int s = 7; s >= 0; s--) { /* reversed: the stack pops slot 0 first (Morton order) */
        if (!(mask >> s & 1u)) continue;
        uint32_t ci = vx_child_index(n.child, mask, (uint32_t)s);
        uint32_t x = 2 * it.x + (s & 1), y = 2 * it.y + (s >> 1 & 1), z = 2 * it.z + (s >> 2 & 1);
        if (it.level + 1 < t->depth) {
          stack.push_back(item{ci, it.level + 1, x, y, z});
          continue;
        }
        const vx_voxel &v = t->voxels[ci];
        for (int c = 0; c < 8; c++)
          acc.setValue(nanovdb::Coord((int)(x + (c & 1)), (int)(y + (c >> 1 & 1)), (int)(z + (c >> 2 & 1))),
                       vx_corner_value(v.c[c], band));
        written++;
      }
    }
    g->handle = builder.getHandle(1.0, nanovdb::Vec3d(0.0), "voxlod");
  } catch (const std::exception &e) {
    delete g;
    return vx_error_set(err, VX_ERR_NOMEM, "NanoVDB: building the grid failed: %s", e.what());
  }
  const nanovdb::NanoGrid<float> *grid = g->handle.grid<float>();
  if (!grid) {
    delete g;
    return vx_error_set(err, VX_ERR_INVALID_ARG, "NanoVDB: the builder gave no float grid");
  }
  g->bytes = g->handle.size();
  if (stats) {
    stats->voxels_written = written;
    stats->active_values = grid->activeVoxelCount();
    stats->grid_bytes = g->bytes;
    stats->build_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  *out = g;
  return VX_OK;
}

extern "C" void vx_nvdb_free(vx_nvdb *g) {
  if (!g) return;
  if (g->dgrid) cudaFree(g->dgrid);
  delete g;
}

/* ---- one pixel: host and device ------------------------------------------------------------ */

__hostdev__ static void nvdb_pixel(const nanovdb::NanoGrid<float> *grid, const vx_trace_scene &s,
                                   uint32_t px, uint32_t py, uint8_t *rgb, float *depth) {
  float d[3];
  for (int i = 0; i < 3; i++) d[i] = s.dir00[i] + (float)px * s.du[i] + (float)py * s.dv[i];
  float len = sqrtf(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
  for (int i = 0; i < 3; i++) d[i] /= len;
  /* NanoVDB's HDDA reads the value at index point i for the whole cell [i, i+1); shifting the
   * ray by half a voxel makes that cell [i-1/2, i+1/2), centred on the sample (nearest sample). */
  nanovdb::Ray<float> ray(nanovdb::Vec3f(s.eye[0] + 0.5f, s.eye[1] + 0.5f, s.eye[2] + 0.5f),
                          nanovdb::Vec3f(d[0], d[1], d[2]));
  auto acc = grid->getAccessor();
  nanovdb::Coord ijk;
  float v = 0.0f, t = 0.0f;
  if (!nanovdb::ZeroCrossing(ray, acc, ijk, v, t)) {
    rgb[0] = VX_BG_R;
    rgb[1] = VX_BG_G;
    rgb[2] = VX_BG_B;
    *depth = INFINITY;
    return;
  }
  /* gradient by central differences at the hit voxel */
  float n[3] = {acc.getValue(ijk.offsetBy(1, 0, 0)) - acc.getValue(ijk.offsetBy(-1, 0, 0)),
                acc.getValue(ijk.offsetBy(0, 1, 0)) - acc.getValue(ijk.offsetBy(0, -1, 0)),
                acc.getValue(ijk.offsetBy(0, 0, 1)) - acc.getValue(ijk.offsetBy(0, 0, -1))};
  float nl = sqrtf(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
  if (nl > 0.0f) {
    for (int i = 0; i < 3; i++) n[i] /= nl;
  } else {
    for (int i = 0; i < 3; i++) n[i] = -d[i];
  }
  if (n[0] * d[0] + n[1] * d[1] + n[2] * d[2] > 0.0f)
    for (int i = 0; i < 3; i++) n[i] = -n[i];
  float diff = vx_tr_max(n[0] * s.light[0] + n[1] * s.light[1] + n[2] * s.light[2], 0.0f);
  float lum = VX_AMBIENT + (1.0f - VX_AMBIENT) * diff;
  rgb[0] = vx_to_srgb8(VX_ALBEDO_R * lum);
  rgb[1] = vx_to_srgb8(VX_ALBEDO_G * lum);
  rgb[2] = vx_to_srgb8(VX_ALBEDO_B * lum);
  *depth = t * s.world_per_grid;
}

__global__ void nvdb_kernel(const nanovdb::NanoGrid<float> *__restrict__ grid,
                            const vx_trace_scene s, uint8_t *__restrict__ rgb,
                            float *__restrict__ depth) {
  uint32_t px = blockIdx.x * blockDim.x + threadIdx.x;
  uint32_t py = blockIdx.y * blockDim.y + threadIdx.y;
  if (px >= s.width || py >= s.height) return;
  size_t i = (size_t)py * s.width + px;
  uint8_t c[3];
  nvdb_pixel(grid, s, px, py, c, &depth[i]);
  rgb[3 * i] = c[0];
  rgb[3 * i + 1] = c[1];
  rgb[3 * i + 2] = c[2];
}

static vx_status scene_for(const vx_octree *t, const vx_march_opts *o, vx_trace_scene *s,
                           vx_error *err) {
  vx_status st = vx_render_check(t, o, err);
  if (st != VX_OK) return st;
  if ((st = vx_trace_scene_init(s, t, o)) != VX_OK)
    return vx_error_set(err, st, "NanoVDB: cannot set up the scene");
  return VX_OK;
}

extern "C" vx_status vx_nvdb_render_cpu(const vx_nvdb *g, const vx_octree *t,
                                        const vx_march_opts *o, vx_march_image *img, vx_error *err) {
  vx_trace_scene s;
  vx_status st = scene_for(t, o, &s, err);
  if (st != VX_OK) return st;
  const nanovdb::NanoGrid<float> *grid = g->handle.grid<float>();
  for (uint32_t y = 0; y < o->height; y++)
    for (uint32_t x = 0; x < o->width; x++) {
      size_t i = (size_t)y * o->width + x;
      nvdb_pixel(grid, s, x, y, &img->rgb[3 * i], &img->depth[i]);
    }
  return VX_OK;
}

static vx_status upload(vx_nvdb *g, vx_error *err) {
  vx_status st = VX_OK;
  int n = 0;
  if (g->dgrid) return VX_OK;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n <= 0) {
    cudaGetLastError();
    return vx_error_set(err, VX_ERR_NO_GPU, "NanoVDB GPU: no usable CUDA device");
  }
  VX_CU(cudaMalloc(&g->dgrid, g->bytes), "allocating the grid");
  VX_CU(cudaMemcpy(g->dgrid, g->handle.data(), g->bytes, cudaMemcpyHostToDevice),
        "uploading the grid");
done:
  return st;
}

/* Frame buffers on the device for one run. */
struct frame {
  uint8_t *rgb = nullptr;
  float *depth = nullptr;
  ~frame() {
    if (rgb) cudaFree(rgb);
    if (depth) cudaFree(depth);
  }
};

static vx_status launch(const vx_nvdb *g, const vx_trace_scene &s, frame &f, vx_error *err) {
  vx_status st = VX_OK;
  dim3 block(8, 8), grid((s.width + 7) / 8, (s.height + 7) / 8);
  nvdb_kernel<<<grid, block>>>((const nanovdb::NanoGrid<float> *)g->dgrid, s, f.rgb, f.depth);
  VX_CU(cudaGetLastError(), "launching the NanoVDB kernel");
done:
  return st;
}

extern "C" vx_status vx_nvdb_render_gpu(vx_nvdb *g, const vx_octree *t, const vx_march_opts *o,
                                        vx_march_image *img, vx_error *err) {
  vx_trace_scene s;
  vx_status st = scene_for(t, o, &s, err);
  if (st != VX_OK) return st;
  if ((st = upload(g, err)) != VX_OK) return st;
  size_t n = (size_t)o->width * o->height;
  frame f;
  VX_CU(cudaMalloc((void **)&f.rgb, n * 3), "allocating the image");
  VX_CU(cudaMalloc((void **)&f.depth, n * sizeof(float)), "allocating the depth");
  if ((st = launch(g, s, f, err)) != VX_OK) goto done;
  VX_CU(cudaDeviceSynchronize(), "running the NanoVDB kernel");
  VX_CU(cudaMemcpy(img->rgb, f.rgb, n * 3, cudaMemcpyDeviceToHost), "downloading the image");
  VX_CU(cudaMemcpy(img->depth, f.depth, n * sizeof(float), cudaMemcpyDeviceToHost),
        "downloading the depth");
done:
  return st;
}

extern "C" vx_status vx_nvdb_bench(vx_nvdb *g, const vx_octree *t, const vx_march_opts *o,
                                   const vx_camera *views, int nviews, int frames,
                                   double *ms_median, double *hit_fraction, vx_error *err) {
  vx_status st = VX_OK;
  if (nviews < 1 || frames < 1)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "NanoVDB bench: need >= 1 view and frame");
  std::vector<vx_trace_scene> scenes((size_t)nviews);
  for (int v = 0; v < nviews; v++) {
    vx_march_opts ov = *o;
    ov.cam = views[v];
    if ((st = scene_for(t, &ov, &scenes[(size_t)v], err)) != VX_OK) return st;
  }
  if ((st = upload(g, err)) != VX_OK) return st;
  size_t n = (size_t)o->width * o->height;
  std::vector<cudaEvent_t> ev;
  std::vector<float> ms((size_t)frames);
  std::vector<float> depth(n);
  double hits = 0.0;
  frame f;
  VX_CU(cudaMalloc((void **)&f.rgb, n * 3), "allocating the image");
  VX_CU(cudaMalloc((void **)&f.depth, n * sizeof(float)), "allocating the depth");
  for (int v = 0; v < nviews; v++) /* warm-up */
    if ((st = launch(g, scenes[(size_t)v], f, err)) != VX_OK) goto done;
  VX_CU(cudaDeviceSynchronize(), "NanoVDB warm-up");
  for (int i = 0; i < 2 * frames; i++) {
    cudaEvent_t e;
    VX_CU(cudaEventCreate(&e), "cudaEventCreate");
    ev.push_back(e);
  }
  for (int i = 0; i < frames; i++) {
    VX_CU(cudaEventRecord(ev[2 * (size_t)i], 0), "cudaEventRecord");
    if ((st = launch(g, scenes[(size_t)(i % nviews)], f, err)) != VX_OK) goto done;
    VX_CU(cudaEventRecord(ev[2 * (size_t)i + 1], 0), "cudaEventRecord");
  }
  VX_CU(cudaEventSynchronize(ev.back()), "NanoVDB timed frames");
  for (int i = 0; i < frames; i++)
    VX_CU(cudaEventElapsedTime(&ms[(size_t)i], ev[2 * (size_t)i], ev[2 * (size_t)i + 1]),
          "cudaEventElapsedTime");
  for (int v = 0; v < nviews; v++) {
    if ((st = launch(g, scenes[(size_t)v], f, err)) != VX_OK) goto done;
    VX_CU(cudaMemcpy(depth.data(), f.depth, n * sizeof(float), cudaMemcpyDeviceToHost),
          "downloading the depth");
    for (size_t i = 0; i < n; i++) hits += isfinite(depth[i]) ? 1.0 : 0.0;
  }
  std::sort(ms.begin(), ms.end());
  *ms_median = frames % 2 ? ms[(size_t)frames / 2]
                          : 0.5 * ((double)ms[(size_t)frames / 2 - 1] + ms[(size_t)frames / 2]);
  if (hit_fraction) *hit_fraction = hits / ((double)n * nviews);
done:
  for (cudaEvent_t e : ev) cudaEventDestroy(e);
  return st;
}
