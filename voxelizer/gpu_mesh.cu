/* SPDX-License-Identifier: Apache-2.0 */
/* gpu_mesh.cu - the mesh's grid triangles and sign tables in GPU memory (gpu_mesh.cuh), and
 * vx_gpu_meshes: one copy per device shared by every build of the same mesh.
 *
 * Why shared. A tiled build runs one surface build per tile, each over the whole mesh (the corner
 * signs need every triangle): uploading the mesh and its tables for each tile cost the 10^8-
 * triangle city 48.8 s of 96.4 s building (8 tiles on 2 GPUs), and two workers on one GPU held
 * two copies. Kept per device, the upload is paid once per GPU and the copy is shared by the
 * builds side by side on it (kernels only read it). */
#include "voxelizer/gpu_mesh.cuh"
#include "sys/system.h"

#include <atomic>
#include <mutex>
#include <new>

namespace vxgpu {

template <typename T>
static vx_status upload(T **d, const T *h, uint64_t count, vx_error *err) {
  *d = NULL;
  if (!h || count == 0) return VX_OK;
  CK(cudaMalloc((void **)d, count * sizeof(T)));
  CK(copy_up(*d, h, count * sizeof(T)));
  return VX_OK;
}

/* A piece of the mesh's grid triangles, computed on every core (vx_parallel) in runs of 4096. */
struct grid_piece {
  const vx_soup *mesh;
  const vx_transform *xf;
  double *tg;               /* the piece's triangles: triangle a + i at tg + 9 i */
  uint64_t a, n;
  std::atomic<uint64_t> next;
};

static void *grid_piece_worker(void *arg) {
  grid_piece *g = (grid_piece *)arg;
  const uint64_t run = 4096;
  for (uint64_t i; (i = g->next.fetch_add(run)) < g->n;) {
    const uint64_t z = i + run < g->n ? i + run : g->n;
    for (uint64_t t = i; t < z; t++) vx_grid_tri(g->mesh, g->xf, g->a + t, g->tg + t * 9);
  }
  return NULL;
}

/* The grid triangles are made on the host a chunk at a time, in the pinned buffers of copy_up:
 * the host never holds a second copy of the mesh in doubles (72 B a triangle, 7.2 GB at 10^8
 * triangles, at the peak of a tiled build's plan). */
vx_status upload_grid_tris(const vx_soup *mesh, const vx_transform *xf, device_inputs *in,
                           vx_error *err) {
  const uint64_t T = mesh->tri_count;
  const size_t item = 9 * sizeof(double);
  in->tg = NULL;
  if (T == 0) return VX_OK;
  CK(cudaMalloc((void **)&in->tg, T * item));
  CK(copy_up(in->tg, NULL, T * item, item, [&](char *stage, size_t off, size_t len) {
    grid_piece g;
    g.mesh = mesh;
    g.xf = xf;
    g.tg = (double *)stage;
    g.a = off / item;
    g.n = len / item;
    g.next = 0;
    vx_parallel(g.n < 65536 ? 1 : 0, grid_piece_worker, &g);
  }));
  return VX_OK;
}

/* Thread i maps tree triangle i (w.tri on the device). */
__global__ void k_wind_grid(vx_wind_tree w, uint64_t n, double *grid) {
  uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) vx_wind_leaf_tri(&w, i, grid + i * 9);
}

/* The floats go over the bus (half the doubles' bytes) and are mapped there. */
vx_status upload_wind_grid(const vx_wind_tree *w, double **grid, vx_error *err) {
  *grid = NULL;
  const uint64_t T = w->tri_count;
  if (T == 0) return VX_OK;
  float *tri = NULL;
  auto body = [&]() -> vx_status {
    CK(cudaMalloc((void **)grid, T * 9 * sizeof(double)));
    CK(cudaMalloc((void **)&tri, T * 9 * sizeof(float)));
    CK(copy_up(tri, w->tri, T * 9 * sizeof(float)));
    vx_wind_tree d = *w;
    d.nodes = NULL;
    d.tri = tri;
    d.grid = NULL;
    d.order = NULL;
    const unsigned B = 256;
    k_wind_grid<<<grid_of(T, B), B>>>(d, T, *grid);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    return VX_OK;
  };
  vx_status r = body();
  cudaFree(tri);
  if (r != VX_OK) {
    cudaFree(*grid);
    *grid = NULL;
  }
  return r;
}

vx_status upload_sign(const vx_sign_data *sign, uint64_t T, device_inputs *in, vx_sign_data *dev,
                      vx_error *err) {
  vx_status r = upload(&in->face_n, sign->face_n, T * 3, err);
  if (r == VX_OK) r = upload(&in->edge_n, sign->edge_n, T * 9, err);
  if (r == VX_OK) r = upload(&in->vid, sign->vid, T * 3, err);
  if (r == VX_OK) r = upload(&in->vert_n, sign->vert_n, sign->vert_count * 3, err);
  if (r == VX_OK && sign->clean) r = upload(&in->clean, sign->clean, T, err);
  if (r == VX_OK && sign->vclean) r = upload(&in->vclean, sign->vclean, sign->vert_count, err);
  if (r == VX_OK && sign->wind.node_count) {
    r = upload(&in->nodes, sign->wind.nodes, sign->wind.node_count, err);
    if (r == VX_OK) r = upload_wind_grid(&sign->wind, &in->wgrid, err);
  }
  if (r != VX_OK) return r;
  *dev = *sign;
  dev->face_n = in->face_n;
  dev->edge_n = in->edge_n;
  dev->vid = in->vid;
  dev->vert_n = in->vert_n;
  dev->clean = in->clean;
  dev->vclean = in->vclean;
  dev->wind.nodes = in->nodes;
  dev->wind.tri = NULL;
  dev->wind.grid = in->wgrid;
  dev->wind.order = NULL;
  dev->eid = NULL;
  return VX_OK;
}

void free_inputs(device_inputs *in) {
  cudaFree(in->tg);
  cudaFree(in->face_n);
  cudaFree(in->edge_n);
  cudaFree(in->vert_n);
  cudaFree(in->vid);
  cudaFree(in->clean);
  cudaFree(in->vclean);
  cudaFree(in->nodes);
  cudaFree(in->wgrid);
  memset(in, 0, sizeof *in);
}

} /* namespace vxgpu */

enum { MAX_DEVICES = 64 };

struct vx_gpu_meshes {
  const vx_soup *mesh;
  vx_transform xf;
  const vx_sign_data *sign;
  struct slot {
    std::mutex mu; /* held while the device's copy is uploaded */
    int ready;
    vxgpu::device_inputs in;
    vx_sign_data dev;
  } d[MAX_DEVICES];
  std::mutex stat_mu;
  int uploads;
  double seconds;
};

extern "C" vx_status vx_gpu_meshes_create(const vx_soup *mesh, const vx_transform *xf,
                                          const vx_sign_data *sign, vx_gpu_meshes **out,
                                          vx_error *err) {
  *out = NULL;
  if (!mesh || !xf || !sign)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "GPU meshes: a mesh, transform and sign tables");
  vx_gpu_meshes *m = new (std::nothrow) vx_gpu_meshes();
  if (!m) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  m->mesh = mesh;
  m->xf = *xf;
  m->sign = sign;
  *out = m;
  return VX_OK;
}

extern "C" void vx_gpu_meshes_stats(vx_gpu_meshes *m, int *uploads, double *seconds) {
  std::lock_guard<std::mutex> g(m->stat_mu);
  *uploads = m->uploads;
  *seconds = m->seconds;
}

extern "C" void vx_gpu_meshes_free(vx_gpu_meshes *m) {
  if (!m) return;
  int prev = 0;
  const bool have_prev = cudaGetDevice(&prev) == cudaSuccess;
  for (int k = 0; k < MAX_DEVICES; k++) {
    if (m->d[k].ready && cudaSetDevice(k) == cudaSuccess) vxgpu::free_inputs(&m->d[k].in);
  }
  if (have_prev) cudaSetDevice(prev);
  cudaGetLastError(); /* nothing of the above is the caller's error */
  delete m;
}

namespace vxgpu {

vx_status resident_inputs(vx_gpu_meshes *m, const vx_soup *mesh, const vx_transform *xf,
                          const vx_sign_data *sign, const device_inputs **in,
                          const vx_sign_data **dev, vx_error *err) {
  *in = NULL;
  *dev = NULL;
  if (mesh != m->mesh || (sign && sign != m->sign) || memcmp(xf, &m->xf, sizeof *xf) != 0)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "GPU build: the resident mesh is another "
                        "mesh's (or another grid's)");
  int d = 0;
  CK(cudaGetDevice(&d));
  if (d < 0 || d >= MAX_DEVICES) return VX_OK;
  vx_gpu_meshes::slot &s = m->d[d];
  std::lock_guard<std::mutex> g(s.mu);
  if (!s.ready) {
    const double t0 = now_s();
    vx_status r = upload_grid_tris(mesh, xf, &s.in, err);
    if (r == VX_OK) r = upload_sign(m->sign, mesh->tri_count, &s.in, &s.dev, err);
    if (r != VX_OK) {
      free_inputs(&s.in); /* a later build tries again */
      return r;
    }
    s.ready = 1;
    std::lock_guard<std::mutex> gs(m->stat_mu);
    m->uploads++;
    m->seconds += now_s() - t0;
  }
  *in = &s.in;
  *dev = &s.dev;
  return VX_OK;
}

} /* namespace vxgpu */
