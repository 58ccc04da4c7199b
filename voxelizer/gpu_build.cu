/* SPDX-License-Identifier: Apache-2.0 */
/* gpu_build.cu - surface voxels and corner values on the GPU (`voxlod convert --gpu`).
 *
 * Same result as the CPU build (blocks.c + field.c), bit for bit: the same overlap test
 * (overlap.h), the same candidate triangles per corner, the same winner (lowest squared distance,
 * ties to the lowest triangle index), the same value and sign code (field_eval.h, sign_eval.h,
 * winding.h), all in double precision. This file is compiled with --fmad=false: without fused
 * multiply-adds every double operation rounds as the host's does, so distances and plane tests
 * agree to the bit. The one function that may differ is atan2 (the winding number's solid
 * angles; CUDA's is within 2 ulp): it can change a sign only when |w| lies within about 1e-15
 * of 1/2, where either answer is as good. The GPU tests compare both builds byte for byte.
 *
 * Space is cut into aligned cubes of 2^k voxels ("partitions", one contiguous Morton range each),
 * processed in Morton order; the whole grid is one partition unless the work would not fit in GPU
 * memory, then a partition splits into its 8 octants (or when a test asks for small ones).
 * Per partition, with G = the partition grown by one voxel (the halo that corners on its faces
 * need), all sort/scan/run-length steps from CUB:
 *  1. per triangle: its voxel range (vx_tri_voxel_range) clipped to G, its dominant normal axis a
 *     and the number of columns along a that the range covers;
 *  2. per column (one thread each, found by binary search in the scanned column counts): the
 *     voxels along a that the triangle's plane can reach inside the column (the plane's extent
 *     over the column's square plus a margin; all of the column for a sliver), each tested with
 *     the exact closed test: counted, scanned, then emitted as (Morton code, triangle) pairs in
 *     triangle order;
 *  3. a stable radix sort by code gives every voxel's triangles in ascending order; run-length
 *     encoding gives the voxels of G (U) and their pair ranges; a hash table maps code -> index;
 *  4. per surface voxel of the partition (a contiguous index range of U): its 26 neighbours from
 *     the hash; each of its 8 corners is computed by the lowest-indexed partition voxel that shares
 *     it (so once), from the pairs of all (<= 8) voxels around it, and written into the field of
 *     every partition voxel that shares it;
 *  5. per voxel: the thin-feature rule (field_eval.h) with the voxel's own triangles;
 *  6. codes and fields are copied to the host and appended (the Morton order is global).
 * Memory per partition is estimated from the pair count before anything large is allocated.
 */
#include <cub/cub.cuh>
#include <cuda_runtime.h>

#include <stdio.h>
#include <new>
#include <thread>
#include <vector>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "voxelizer/internal.h"
#include "voxelizer/overlap.h"
#include "voxelizer/field_eval.h"
#include "voxelizer/gpu_mesh.cuh"

namespace {

using vxgpu::copy_back;
using vxgpu::device_inputs;
using vxgpu::free_inputs;
using vxgpu::grid_of;
using vxgpu::now_s;

struct tri_box {
  int32_t lo[3], hi[3]; /* voxel range of the triangle clipped to G (lo > hi: none) */
  int32_t axis;         /* dominant normal axis; +3 when every column takes its whole range */
};

struct part_ctx {
  /* whole-build inputs (device) */
  const double *tg; /* 9 per triangle, grid coordinates */
  uint64_t ntri;
  vx_sign_data sign; /* table pointers on the device */
  int64_t R;
  uint32_t depth;
  float band;
  uint64_t mem_limit, wind_cap; /* the winding work's charge (internal.h); wind_cap 0: none */
  /* the partition: G = [glo, ghi] voxels, Morton range [pbase, pend) */
  int64_t glo[3], ghi[3];
  uint64_t pbase, pend;
};

/* ---- step 1: ranges and columns --------------------------------------------------------------- */

__device__ void tri_normal(const double *g, double n[3], double *e2prod) {
  double e0[3], e1[3];
  for (int i = 0; i < 3; i++) {
    e0[i] = g[3 + i] - g[i];
    e1[i] = g[6 + i] - g[i];
  }
  n[0] = e0[1] * e1[2] - e0[2] * e1[1];
  n[1] = e0[2] * e1[0] - e0[0] * e1[2];
  n[2] = e0[0] * e1[1] - e0[1] * e1[0];
  *e2prod = (e0[0] * e0[0] + e0[1] * e0[1] + e0[2] * e0[2]) *
            (e1[0] * e1[0] + e1[1] * e1[1] + e1[2] * e1[2]);
}

__global__ void k_columns(part_ctx c, tri_box *box, uint64_t *ncols) {
  uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= c.ntri) return;
  const double *g = c.tg + t * 9;
  int64_t lo[3], hi[3];
  tri_box b;
  uint64_t cols = 0;
  if (vx_tri_voxel_range(g, c.R, lo, hi)) {
    cols = 1;
    for (int i = 0; i < 3; i++) {
      if (lo[i] < c.glo[i]) lo[i] = c.glo[i];
      if (hi[i] > c.ghi[i]) hi[i] = c.ghi[i];
      if (lo[i] > hi[i]) cols = 0;
    }
  }
  if (cols) {
    double n[3], e2;
    tri_normal(g, n, &e2);
    int a = 0;
    for (int i = 1; i < 3; i++)
      if (fabs(n[i]) > fabs(n[a])) a = i;
    int u = (a + 1) % 3, w = (a + 2) % 3;
    cols = (uint64_t)(hi[u] - lo[u] + 1) * (uint64_t)(hi[w] - lo[w] + 1);
    /* A sliver (normal tiny against its edges) has no reliable plane: whole columns. */
    b.axis = n[a] * n[a] < 1e-12 * e2 ? a + 3 : a;
    for (int i = 0; i < 3; i++) {
      b.lo[i] = (int32_t)lo[i];
      b.hi[i] = (int32_t)hi[i];
    }
  } else {
    for (int i = 0; i < 3; i++) {
      b.lo[i] = 0;
      b.hi[i] = -1;
    }
    b.axis = 0;
  }
  box[t] = b;
  ncols[t] = cols;
}

/* Column item i -> its triangle (the last t with start[t] <= i) and the voxel range along the axis
 * that the triangle's plane can reach in that column. */
__device__ uint64_t column_of(const uint64_t *start, uint64_t ntri, uint64_t i) {
  uint64_t lo = 0, hi = ntri; /* start[lo] <= i < start[hi] */
  while (hi - lo > 1) {
    uint64_t mid = (lo + hi) / 2;
    if (start[mid] <= i) lo = mid;
    else hi = mid;
  }
  return lo;
}

__device__ void column_range(const part_ctx &c, const tri_box &b, const double *g, uint64_t j,
                             int64_t xyz[3], int *a, int64_t *k0, int64_t *k1) {
  int ax = b.axis % 3, u = (ax + 1) % 3, w = (ax + 2) % 3;
  uint64_t nu = (uint64_t)(b.hi[u] - b.lo[u] + 1);
  xyz[u] = b.lo[u] + (int64_t)(j % nu);
  xyz[w] = b.lo[w] + (int64_t)(j / nu);
  *a = ax;
  *k0 = b.lo[ax];
  *k1 = b.hi[ax];
  if (b.axis >= 3) return;
  double n[3], e2;
  tri_normal(g, n, &e2);
  double mn = 1e300, mx = -1e300;
  for (int s = 0; s < 4; s++) {
    double pu = (double)(xyz[u] + (s & 1)) - g[u], pw = (double)(xyz[w] + (s >> 1)) - g[w];
    double h = g[ax] - (n[u] * pu + n[w] * pw) / n[ax];
    mn = h < mn ? h : mn;
    mx = h > mx ? h : mx;
  }
  /* Voxel k touches height h when k <= h <= k + 1; the margin covers rounding of the plane
   * (far above it for any triangle that is not a sliver). */
  int64_t f0 = (int64_t)floor(mn - 1e-3) - 1, f1 = (int64_t)floor(mx + 1e-3);
  if (f0 > *k0) *k0 = f0;
  if (f1 < *k1) *k1 = f1;
}

/* Pairs per column: counted (keys == NULL: cnt[i] = overlaps of column i), or emitted at off[i]
 * as (Morton code, triangle); both passes walk the same candidates. */
__global__ void k_pairs(part_ctx c, const tri_box *box, const uint64_t *start, uint64_t ncols,
                        uint32_t *cnt, const uint64_t *off, uint64_t *keys, uint32_t *tris) {
  uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= ncols) return;
  uint64_t t = column_of(start, c.ntri, i);
  const double *g = c.tg + t * 9;
  int64_t xyz[3], k0, k1;
  int a;
  column_range(c, box[t], g, i - start[t], xyz, &a, &k0, &k1);
  uint64_t o = keys ? off[i] : 0;
  uint32_t n = 0;
  for (int64_t k = k0; k <= k1; k++) {
    xyz[a] = k;
    if (!vx_tri_voxel_overlap(g, xyz[0], xyz[1], xyz[2])) continue;
    if (keys) {
      keys[o + n] = vx_morton_encode((uint32_t)xyz[0], (uint32_t)xyz[1], (uint32_t)xyz[2]);
      tris[o + n] = (uint32_t)t;
    }
    n++;
  }
  if (!keys) cnt[i] = n;
}

/* ---- step 3: code -> index hash (open addressing, linear probing) ----------------------------- */

#define EMPTY_KEY (~0ull)

__global__ void k_hash_insert(const uint64_t *codes, uint64_t n, unsigned long long *hkey,
                              uint32_t *hval, uint64_t mask) {
  uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  uint64_t h = vx_mix64(codes[i]) & mask;
  for (;;) {
    unsigned long long prev = atomicCAS(hkey + h, EMPTY_KEY, (unsigned long long)codes[i]);
    if (prev == EMPTY_KEY || prev == codes[i]) break;
    h = (h + 1) & mask;
  }
  hval[h] = (uint32_t)i;
}

__device__ uint32_t hash_find(const unsigned long long *hkey, const uint32_t *hval,
                              uint64_t mask, uint64_t code) {
  uint64_t h = vx_mix64(code) & mask;
  for (;;) {
    unsigned long long k = hkey[h];
    if (k == code) return hval[h];
    if (k == EMPTY_KEY) return UINT32_MAX;
    h = (h + 1) & mask;
  }
}

/* ---- steps 4 and 5: corner values, thin voxels ------------------------------------------------- */

struct voxel_set {
  const uint64_t *code;   /* U: the voxels of G that some triangle overlaps, ascending */
  const uint64_t *start;  /* pair range of U[i]: [start[i], start[i + 1]) */
  const uint32_t *tri;    /* the sorted pairs' triangles */
  const unsigned long long *hkey;
  const uint32_t *hval;
  uint64_t mask;
  uint32_t first, last;   /* the partition's voxels: U[first .. last) */
};

/* The 8 voxels around corner (cx, cy, cz) of a voxel whose 3x3x3 neighbourhood is nb (index
 * (dz+1)*9 + (dy+1)*3 + dx+1): entry s is the voxel at offset (cx-1 + (s&1), cy-1 + (s>>1&1),
 * cz-1 + (s>>2)); seen from it the corner is its corner 7 - s. */
__device__ uint32_t around(const uint32_t *nb, int cx, int cy, int cz, int s) {
  return nb[(cz + (s >> 2)) * 9 + (cy + (s >> 1 & 1)) * 3 + cx + (s & 1)];
}

/* The nearest candidate of corner p among the pairs of the voxels around it (any of them, halo
 * included): lowest squared distance, ties to the lowest triangle index. */
__device__ void corner_best(const part_ctx &c, const voxel_set &u, const uint32_t *vox,
                            const double p[3], double *best, uint32_t *bt) {
  *best = INFINITY;
  *bt = UINT32_MAX;
  for (int s = 0; s < 8; s++) {
    uint32_t n = vox[s];
    if (n == UINT32_MAX) continue;
    for (uint64_t q = u.start[n]; q < u.start[n + 1]; q++) {
      uint32_t t = u.tri[q];
      double d2 = vx_tri_dist2(p, c.tg + (uint64_t)t * 9, NULL);
      if (d2 < *best || (d2 == *best && t < *bt)) {
        *best = d2;
        *bt = t;
      }
    }
  }
}

/* Writes value v of the corner into the field of every partition voxel around it. */
__device__ void corner_store(const voxel_set &u, const uint32_t *vox, int8_t v, vx_voxel *field) {
  for (int s = 0; s < 8; s++) {
    uint32_t n = vox[s];
    if (n == UINT32_MAX || n < u.first || n >= u.last) continue;
    field[n - u.first].c[7 - s] = v;
  }
}

#define WOUND_MARK (-128) /* never a quantized value (they lie in [-127, 127]) */

/* Step 4a: per partition voxel, the corners it owns (it is the lowest-indexed partition voxel
 * around them). A corner whose sign needs the winding number is only marked (WOUND_MARK in the
 * owner's own slot) and finished by k_wound, so that those costly queries run side by side. */
__global__ void k_field(part_ctx c, voxel_set u, vx_voxel *field, unsigned long long *corners) {
  uint64_t me = u.first + (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
  uint32_t computed = 0;
  if (me < u.last) {
    uint32_t x, y, z;
    vx_morton_decode(u.code[me], &x, &y, &z);
    uint32_t nb[27];
    for (int k = 0; k < 27; k++) {
      int64_t nx = (int64_t)x + k % 3 - 1, ny = (int64_t)y + k / 3 % 3 - 1,
              nz = (int64_t)z + k / 9 - 1;
      nb[k] = (nx < 0 || ny < 0 || nz < 0 || nx >= c.R || ny >= c.R || nz >= c.R)
                  ? UINT32_MAX
                  : k == 13 ? (uint32_t)me
                            : hash_find(u.hkey, u.hval, u.mask,
                                        vx_morton_encode((uint32_t)nx, (uint32_t)ny, (uint32_t)nz));
    }
    for (int cc = 0; cc < 8; cc++) {
      int cx = cc & 1, cy = cc >> 1 & 1, cz = cc >> 2 & 1;
      uint32_t vox[8], owner = UINT32_MAX;
      for (int s = 0; s < 8; s++) {
        uint32_t n = vox[s] = around(nb, cx, cy, cz, s);
        if (n != UINT32_MAX && n >= u.first && n < u.last && n < owner) owner = n;
      }
      if (owner != (uint32_t)me) continue;
      double p[3] = {(double)(x + cx), (double)(y + cy), (double)(z + cz)};
      double best;
      uint32_t bt;
      corner_best(c, u, vox, p, &best, &bt);
      computed++;
      int8_t v = 127; /* no candidate: cannot happen (a surface voxel's triangle is one) */
      if (bt != UINT32_MAX &&
          !vx_corner_eval_fast(&c.sign, bt, c.tg + (uint64_t)bt * 9, p, best, c.band, &v)) {
        field[me - u.first].c[cc] = (int8_t)WOUND_MARK;
        continue;
      }
      corner_store(u, vox, v, field);
    }
  }
  /* the warp's sum (every lane of the block gets here): one instruction from sm_80 on, five
   * shuffles before; the same integer either way */
#if __CUDA_ARCH__ >= 800
  unsigned sum = __reduce_add_sync(0xffffffffu, computed);
#else
  unsigned sum = computed;
  for (int d = 16; d > 0; d >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, d);
#endif
  if ((threadIdx.x & 31) == 0 && sum) atomicAdd(corners, (unsigned long long)sum);
}

/* Step 4b: the marked corners, listed (count, scan, emit) as (voxel index << 3 | corner). */
__global__ void k_marks(voxel_set u, const vx_voxel *field, uint32_t *cnt, const uint64_t *off,
                        uint64_t *list) {
  uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (uint64_t)(u.last - u.first)) return;
  uint32_t n = 0;
  for (int cc = 0; cc < 8; cc++)
    if (field[i].c[cc] == (int8_t)WOUND_MARK) {
      if (list) list[off[i] + n] = (u.first + i) << 3 | (uint64_t)cc;
      n++;
    }
  if (cnt) cnt[i] = n;
}

/* Step 4c: one marked corner per thread: its candidates again, the winding number, the value;
 * the exact triangles beyond VX_WIND_EXACT_FREE added to *excess, as the CPU charges them. */
__global__ void k_wound(part_ctx c, voxel_set u, const uint64_t *list, uint64_t n,
                        vx_voxel *field, unsigned long long *excess) {
  uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  uint64_t me = list[i] >> 3;
  int cc = (int)(list[i] & 7), cx = cc & 1, cy = cc >> 1 & 1, cz = cc >> 2 & 1;
  uint32_t x, y, z, vox[8];
  vx_morton_decode(u.code[me], &x, &y, &z);
  for (int s = 0; s < 8; s++) {
    int64_t nx = (int64_t)x + cx - 1 + (s & 1), ny = (int64_t)y + cy - 1 + (s >> 1 & 1),
            nz = (int64_t)z + cz - 1 + (s >> 2);
    vox[s] = (nx < 0 || ny < 0 || nz < 0 || nx >= c.R || ny >= c.R || nz >= c.R)
                 ? UINT32_MAX
                 : hash_find(u.hkey, u.hval, u.mask,
                             vx_morton_encode((uint32_t)nx, (uint32_t)ny, (uint32_t)nz));
  }
  double p[3] = {(double)(x + cx), (double)(y + cy), (double)(z + cz)}, best;
  uint32_t bt;
  corner_best(c, u, vox, p, &best, &bt);
  uint64_t exact = 0;
  corner_store(u, vox, vx_corner_eval_wound_n(&c.sign, p, best, c.band, &exact), field);
  if (exact > VX_WIND_EXACT_FREE)
    atomicAdd(excess, (unsigned long long)(exact - VX_WIND_EXACT_FREE));
}

__global__ void k_thin(part_ctx c, voxel_set u, vx_voxel *field) {
  uint64_t me = u.first + (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (me >= u.last) return;
  vx_voxel v = field[me - u.first];
  int kind = vx_thin_kind(&v);
  if (!kind) return;
  uint32_t x, y, z;
  vx_morton_decode(u.code[me], &x, &y, &z);
  double p[3];
  vx_voxel_centre(x, y, z, p);
  double best = INFINITY;
  uint32_t bt = UINT32_MAX;
  for (uint64_t q = u.start[me]; q < u.start[me + 1]; q++) { /* ascending triangles */
    uint32_t t = u.tri[q];
    double d2 = vx_tri_dist2(p, c.tg + (uint64_t)t * 9, NULL);
    if (d2 < best) {
      best = d2;
      bt = t;
    }
  }
  if (bt != UINT32_MAX && vx_thin_resign(c.tg + (uint64_t)bt * 9, best, kind, x, y, z, &v))
    field[me - u.first] = v;
}

__global__ void k_bounds(const uint64_t *code, uint64_t n, uint64_t lo, uint64_t hi,
                         uint64_t *out) {
  /* first index with code >= lo and first with code >= hi (one thread; two binary searches) */
  uint64_t b[2] = {lo, hi};
  for (int k = 0; k < 2; k++) {
    uint64_t a = 0, e = n;
    while (a < e) {
      uint64_t m = (a + e) / 2;
      if (code[m] < b[k]) a = m + 1;
      else e = m;
    }
    out[k] = a;
  }
}

/* ---- host side ------------------------------------------------------------------------------ */

template <typename T> vx_status dev_alloc(T **p, uint64_t count, cudaStream_t s, vx_error *err) {
  CK(cudaMallocAsync((void **)p, (count ? count : 1) * sizeof(T), s));
  return VX_OK;
}

/* Bytes a partition with P pairs and C columns may hold at its peak (worst case: every pair its
 * own voxel): sort buffers and CUB scratch, U with its ranges, the hash, the field. */
double part_bytes(double P, double C) {
  return C * 12.0 + P * (24.0 + 8.0) + P * (8.0 + 8.0 + 8.0) + P * 2.0 * 12.0 * 2.0 + P * 8.0 +
         64.0 * 1048576.0;
}

struct host_out {
  vx_surface *s;
  uint64_t cap;
  int device; /* the surface stays on the GPU (vx_gpu_build_opts.device_out) */
  cudaStream_t st;
};

vx_status append(host_out *o, const uint64_t *dcode, const vx_voxel *dfield, uint64_t n,
                 vx_error *err) {
  if (o->device) { /* grow the device arrays (once, for a single partition) and copy there */
    if (o->s->count + n > o->cap) {
      uint64_t cap = o->s->count + n, *c = NULL;
      vx_voxel *f = NULL;
      CK(cudaMallocAsync((void **)&c, cap * sizeof(uint64_t), o->st));
      cudaError_t e = cudaMallocAsync((void **)&f, cap * sizeof(vx_voxel), o->st);
      if (e != cudaSuccess) {
        cudaFreeAsync(c, o->st);
        CK(e);
      }
      if (o->s->count) {
        CK(cudaMemcpyAsync(c, o->s->codes, o->s->count * sizeof(uint64_t),
                           cudaMemcpyDeviceToDevice, o->st));
        CK(cudaMemcpyAsync(f, o->s->field, o->s->count * sizeof(vx_voxel),
                           cudaMemcpyDeviceToDevice, o->st));
      }
      if (o->s->codes) cudaFreeAsync(o->s->codes, o->st);
      if (o->s->field) cudaFreeAsync(o->s->field, o->st);
      o->s->codes = c;
      o->s->field = f;
      o->cap = cap;
    }
    CK(cudaMemcpyAsync(o->s->codes + o->s->count, dcode, n * sizeof(uint64_t),
                       cudaMemcpyDeviceToDevice, o->st));
    CK(cudaMemcpyAsync(o->s->field + o->s->count, dfield, n * sizeof(vx_voxel),
                       cudaMemcpyDeviceToDevice, o->st));
    CK(cudaStreamSynchronize(o->st));
    o->s->count += n;
    return VX_OK;
  }
  if (o->s->count + n > o->cap) {
    uint64_t cap = (o->s->count + n) + (o->s->count + n) / 2;
    uint64_t *c = (uint64_t *)vx_realloc(o->s->codes, cap * sizeof(uint64_t));
    if (c) o->s->codes = c;
    vx_voxel *f = (vx_voxel *)vx_realloc(o->s->field, cap * sizeof(vx_voxel));
    if (f) o->s->field = f;
    if (!c || !f)
      return vx_error_set(err, VX_ERR_NOMEM, "out of host memory for %llu surface voxels",
                          (unsigned long long)cap);
    o->cap = cap;
  }
  CK(copy_back(o->s->codes + o->s->count, dcode, n * sizeof(uint64_t)));
  CK(copy_back(o->s->field + o->s->count, dfield, n * sizeof(vx_voxel)));
  o->s->count += n;
  return VX_OK;
}

struct scratch { /* one partition's device arrays, freed together */
  tri_box *box;
  uint64_t *colstart, *pairoff, *keys[2], *ucode, *ustart, *bounds;
  uint32_t *cnt, *tris[2], *hval, *wcnt;
  uint64_t *woff, *wlist;
  unsigned long long *hkey;
  int *nruns;
  vx_voxel *field;
  void *tmp;
  size_t tmp_bytes;
};

void scratch_free(scratch *s, cudaStream_t st) {
  void *p[] = {s->box, s->colstart, s->pairoff, s->keys[0], s->keys[1], s->ucode, s->ustart,
               s->bounds, s->cnt, s->tris[0], s->tris[1], s->hval, s->hkey, s->nruns, s->field,
               s->tmp, s->wcnt, s->woff, s->wlist};
  for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
    if (p[i]) cudaFreeAsync(p[i], st);
  memset(s, 0, sizeof *s);
}

/* CUB scratch of at least `bytes`. */
vx_status need_tmp(scratch *s, size_t bytes, cudaStream_t st, vx_error *err) {
  if (bytes <= s->tmp_bytes) return VX_OK;
  if (s->tmp) cudaFreeAsync(s->tmp, st);
  s->tmp = NULL;
  s->tmp_bytes = 0;
  CK(cudaMallocAsync(&s->tmp, bytes, st));
  s->tmp_bytes = bytes;
  return VX_OK;
}

/* The sign tables: given, or still being built on another thread (vx_gpu_build_opts.sign_wait);
 * uploaded the first time a partition needs them, so the overlap and sort steps of the first
 * partition run meanwhile. */
struct sign_source {
  const vx_sign_data *ready;
  const vx_sign_data *(*wait)(void *ctx, vx_error *err);
  void *ctx;
  void (*on_count)(void *ctx, uint64_t voxels); /* vx_gpu_build_opts' */
  void *count_ctx;
  uint64_t ntri;
  device_inputs *in;
  vx_sign_data dev; /* table pointers on the device, once uploaded */
  int uploaded;
};

vx_status sign_upload(sign_source *ss, vx_error *err) {
  if (ss->uploaded) return VX_OK;
  const vx_sign_data *sign = ss->ready ? ss->ready : ss->wait(ss->ctx, err);
  if (!sign) return err && err->status != VX_OK ? err->status : VX_ERR_INVALID_ARG;
  vx_status r = vxgpu::upload_sign(sign, ss->ntri, ss->in, &ss->dev, err);
  if (r != VX_OK) return r;
  ss->uploaded = 1;
  return VX_OK;
}

enum part_result { PART_DONE, PART_SPLIT };

/* Adds the time since *t to sec[k] (after the stream's work is done) and restarts *t. */
vx_status lap(cudaStream_t st, double *sec, int k, double *t, vx_error *err) {
  CK(cudaStreamSynchronize(st));
  double n = now_s();
  sec[k] += n - *t;
  *t = n;
  return VX_OK;
}

/* One partition: appends its voxels to `o`, or asks for a split when it would not fit. */
vx_status run_partition(part_ctx c, sign_source *ss, uint32_t plog, double budget,
                        cudaStream_t st, scratch *s, host_out *o, unsigned long long *dcorners,
                        part_result *res, uint64_t *pairs_total, double *sec, uint64_t *wound,
                        vx_error *err) {
  const unsigned TB = 256;
  vx_status r;
  double t = now_s();
  *res = PART_DONE;
  /* 1. columns per triangle */
  if ((r = dev_alloc(&s->box, c.ntri, st, err)) != VX_OK) return r;
  if ((r = dev_alloc(&s->colstart, c.ntri + 1, st, err)) != VX_OK) return r;
  k_columns<<<grid_of(c.ntri, TB), TB, 0, st>>>(c, s->box, s->colstart);
  CK(cudaGetLastError());
  CK(cudaMemsetAsync(s->colstart + c.ntri, 0, sizeof(uint64_t), st));
  size_t tb = 0;
  CK(cub::DeviceScan::ExclusiveSum(NULL, tb, s->colstart, s->colstart, c.ntri + 1, st));
  if ((r = need_tmp(s, tb, st, err)) != VX_OK) return r;
  CK(cub::DeviceScan::ExclusiveSum(s->tmp, tb, s->colstart, s->colstart, c.ntri + 1, st));
  uint64_t C = 0;
  CK(cudaMemcpyAsync(&C, s->colstart + c.ntri, sizeof C, cudaMemcpyDeviceToHost, st));
  CK(cudaStreamSynchronize(st));
  if (C == 0) return VX_OK;
  if (C >= (1ull << 31) || part_bytes((double)C * 2.0, (double)C) > budget) {
    *res = PART_SPLIT;
    return VX_OK;
  }
  /* 2. overlaps per column, their offsets, the pairs */
  if ((r = dev_alloc(&s->cnt, C, st, err)) != VX_OK) return r;
  if ((r = dev_alloc(&s->pairoff, C + 1, st, err)) != VX_OK) return r;
  k_pairs<<<grid_of(C, TB), TB, 0, st>>>(c, s->box, s->colstart, C, s->cnt, NULL, NULL, NULL);
  CK(cudaGetLastError());
  CK(cudaMemsetAsync(s->pairoff + C, 0, sizeof(uint64_t), st));
  CK(cub::DeviceScan::ExclusiveSum(NULL, tb, s->cnt, s->pairoff, C, st));
  if ((r = need_tmp(s, tb, st, err)) != VX_OK) return r;
  CK(cub::DeviceScan::ExclusiveSum(s->tmp, tb, s->cnt, s->pairoff, C, st));
  uint64_t last[2] = {0, 0};
  uint32_t lastc = 0;
  CK(cudaMemcpyAsync(&last[0], s->pairoff + C - 1, sizeof(uint64_t), cudaMemcpyDeviceToHost, st));
  CK(cudaMemcpyAsync(&lastc, s->cnt + C - 1, sizeof(uint32_t), cudaMemcpyDeviceToHost, st));
  CK(cudaStreamSynchronize(st));
  const uint64_t P = last[0] + lastc;
  if (P == 0) return VX_OK;
  if (P >= (1ull << 31) - 1 || part_bytes((double)P, (double)C) > budget) {
    if (plog > 1) {
      *res = PART_SPLIT;
      return VX_OK;
    }
    return vx_error_set(err, VX_ERR_NOMEM, "GPU build: %llu overlaps in one 2^3 partition",
                        (unsigned long long)P);
  }
  *pairs_total += P;
  cudaFreeAsync(s->cnt, st);
  s->cnt = NULL;
  for (int k = 0; k < 2; k++) {
    if ((r = dev_alloc(&s->keys[k], P, st, err)) != VX_OK) return r;
    if ((r = dev_alloc(&s->tris[k], P, st, err)) != VX_OK) return r;
  }
  k_pairs<<<grid_of(C, TB), TB, 0, st>>>(c, s->box, s->colstart, C, NULL, s->pairoff, s->keys[0],
                                         s->tris[0]);
  CK(cudaGetLastError());
  cudaFreeAsync(s->pairoff, st);
  s->pairoff = NULL;
  if ((r = lap(st, sec, 1, &t, err)) != VX_OK) return r;
  /* 3. sort by code (stable: triangles stay ascending per voxel), voxels and their ranges */
  const int bits = 3 * (int)c.depth;
  cub::DoubleBuffer<uint64_t> kb(s->keys[0], s->keys[1]);
  cub::DoubleBuffer<uint32_t> vb(s->tris[0], s->tris[1]);
  CK(cub::DeviceRadixSort::SortPairs(NULL, tb, kb, vb, (int64_t)P, 0, bits, st));
  if ((r = need_tmp(s, tb, st, err)) != VX_OK) return r;
  CK(cub::DeviceRadixSort::SortPairs(s->tmp, tb, kb, vb, (int64_t)P, 0, bits, st));
  uint64_t *skeys = kb.Current(), *other = kb.Alternate();
  uint32_t *stris = vb.Current();
  if ((r = dev_alloc(&s->ucode, P, st, err)) != VX_OK) return r;
  if ((r = dev_alloc(&s->ustart, P + 1, st, err)) != VX_OK) return r;
  if ((r = dev_alloc(&s->nruns, 1, st, err)) != VX_OK) return r;
  uint32_t *ucount = (uint32_t *)other; /* the free half of the key buffers */
  CK(cub::DeviceRunLengthEncode::Encode(NULL, tb, skeys, s->ucode, ucount, s->nruns, (int)P, st));
  if ((r = need_tmp(s, tb, st, err)) != VX_OK) return r;
  CK(cub::DeviceRunLengthEncode::Encode(s->tmp, tb, skeys, s->ucode, ucount, s->nruns, (int)P,
                                        st));
  int nU = 0;
  CK(cudaMemcpyAsync(&nU, s->nruns, sizeof nU, cudaMemcpyDeviceToHost, st));
  CK(cudaStreamSynchronize(st));
  CK(cudaMemsetAsync(ucount + nU, 0, sizeof(uint32_t), st));
  CK(cub::DeviceScan::ExclusiveSum(NULL, tb, ucount, s->ustart, (int64_t)nU + 1, st));
  if ((r = need_tmp(s, tb, st, err)) != VX_OK) return r;
  CK(cub::DeviceScan::ExclusiveSum(s->tmp, tb, ucount, s->ustart, (int64_t)nU + 1, st));
  uint64_t hsize = 1;
  while (hsize < 2 * (uint64_t)nU) hsize <<= 1;
  if ((r = dev_alloc(&s->hkey, hsize, st, err)) != VX_OK) return r;
  if ((r = dev_alloc(&s->hval, hsize, st, err)) != VX_OK) return r;
  CK(cudaMemsetAsync(s->hkey, 0xff, hsize * sizeof(unsigned long long), st));
  k_hash_insert<<<grid_of((uint64_t)nU, TB), TB, 0, st>>>(s->ucode, (uint64_t)nU, s->hkey, s->hval,
                                                          hsize - 1);
  CK(cudaGetLastError());
  if ((r = dev_alloc(&s->bounds, 2, st, err)) != VX_OK) return r;
  k_bounds<<<1, 1, 0, st>>>(s->ucode, (uint64_t)nU, c.pbase, c.pend, s->bounds);
  CK(cudaGetLastError());
  uint64_t bnd[2];
  CK(cudaMemcpyAsync(bnd, s->bounds, sizeof bnd, cudaMemcpyDeviceToHost, st));
  CK(cudaStreamSynchronize(st));
  const uint64_t nS = bnd[1] - bnd[0];
  if ((r = lap(st, sec, 2, &t, err)) != VX_OK) return r;
  if (ss->on_count && c.pbase == 0 && plog == c.depth) ss->on_count(ss->count_ctx, nS);
  if (nS == 0) return VX_OK; /* triangles only in the halo */
  /* 4, 5. corners, thin voxels: they need the sign tables */
  if ((r = sign_upload(ss, err)) != VX_OK) return r;
  c.sign = ss->dev;
  voxel_set u;
  u.code = s->ucode;
  u.start = s->ustart;
  u.tri = stris;
  u.hkey = s->hkey;
  u.hval = s->hval;
  u.mask = hsize - 1;
  u.first = (uint32_t)bnd[0];
  u.last = (uint32_t)bnd[1];
  if ((r = dev_alloc(&s->field, nS, st, err)) != VX_OK) return r;
  CK(cudaMemsetAsync(s->field, 0, nS * sizeof(vx_voxel), st)); /* no stray WOUND_MARK */
  const unsigned FB = 128;
  k_field<<<grid_of(nS, FB), FB, 0, st>>>(c, u, s->field, dcorners);
  CK(cudaGetLastError());
  if (c.sign.wind.node_count) { /* corners that need the winding number, all at once */
    if ((r = dev_alloc(&s->wcnt, nS + 1, st, err)) != VX_OK) return r;
    if ((r = dev_alloc(&s->woff, nS + 1, st, err)) != VX_OK) return r;
    k_marks<<<grid_of(nS, TB), TB, 0, st>>>(u, s->field, s->wcnt, NULL, NULL);
    CK(cudaGetLastError());
    CK(cudaMemsetAsync(s->wcnt + nS, 0, sizeof(uint32_t), st));
    CK(cub::DeviceScan::ExclusiveSum(NULL, tb, s->wcnt, s->woff, nS + 1, st));
    if ((r = need_tmp(s, tb, st, err)) != VX_OK) return r;
    CK(cub::DeviceScan::ExclusiveSum(s->tmp, tb, s->wcnt, s->woff, nS + 1, st));
    uint64_t nw = 0;
    CK(cudaMemcpyAsync(&nw, s->woff + nS, sizeof nw, cudaMemcpyDeviceToHost, st));
    CK(cudaStreamSynchronize(st));
    if (nw) {
      if ((r = dev_alloc(&s->wlist, nw, st, err)) != VX_OK) return r;
      k_marks<<<grid_of(nS, TB), TB, 0, st>>>(u, s->field, NULL, s->woff, s->wlist);
      CK(cudaGetLastError());
      /* under a limit in pieces, the work so far checked after each as the CPU build checks
       * it, so that a stack of slivers stops early (each corner is independent: the same values) */
      const uint64_t piece = c.wind_cap ? (uint64_t)1 << 20 : nw;
      for (uint64_t at = 0; at < nw; at += piece) {
        uint64_t m = nw - at < piece ? nw - at : piece;
        k_wound<<<grid_of(m, FB), FB, 0, st>>>(c, u, s->wlist + at, m, s->field, dcorners + 1);
        CK(cudaGetLastError());
        if (c.wind_cap) {
          unsigned long long ex = 0;
          CK(cudaMemcpyAsync(&ex, dcorners + 1, sizeof ex, cudaMemcpyDeviceToHost, st));
          CK(cudaStreamSynchronize(st));
          if (ex > c.wind_cap) return vx_wind_limit_error(ex, c.mem_limit, err);
        }
      }
    }
    *wound += nw;
  }
  k_thin<<<grid_of(nS, FB), FB, 0, st>>>(c, u, s->field);
  CK(cudaGetLastError());
  if ((r = lap(st, sec, 3, &t, err)) != VX_OK) return r;
  /* 6. to the host */
  r = append(o, s->ucode + bnd[0], s->field, nS, err);
  sec[4] += now_s() - t;
  return r;
}

} /* namespace */

extern "C" void vx_gpu_surface_free(vx_surface *s) {
  cudaFree(s->codes);
  cudaFree(s->field);
  memset(s, 0, sizeof *s);
}

/* CUDA's context creation (~0.3 s) on a thread of its own, while the CPU builds the sign tables. */
extern "C" void *vx_gpu_warmup_start(void) {
  return new (std::nothrow) std::thread([] { cudaFree(0); });
}

extern "C" void vx_gpu_warmup_join(void *h) {
  std::thread *t = (std::thread *)h;
  if (!t) return;
  t->join();
  delete t;
}

extern "C" vx_status vx_surface_build_gpu(const vx_soup *mesh, const vx_transform *xf,
                                          uint32_t depth, const vx_sign_data *sign, float band,
                                          const vx_gpu_build_opts *go, vx_progress_fn progress,
                                          void *user, vx_surface *out, vx_voxelize_stats *stats,
                                          vx_error *err) {
  memset(out, 0, sizeof *out);
  if (mesh->tri_count >= UINT32_MAX)
    return vx_error_set(err, VX_ERR_LIMIT, "GPU build: %llu triangles (at most 2^32 - 1)",
                        (unsigned long long)mesh->tri_count);
  vx_status r = vx_cuda_usable((const void *)k_field, err);
  if (r != VX_OK) return r;
  cudaError_t ce = cudaSuccess;
  device_inputs in;
  memset(&in, 0, sizeof in);
  part_ctx c;
  memset(&c, 0, sizeof c);
  cudaStream_t st = NULL;
  unsigned long long *dcorners = NULL;
  scratch s;
  memset(&s, 0, sizeof s);
  host_out o;
  o.s = out;
  o.cap = 0;
  o.device = go && go->device_out;
  o.st = NULL;
  uint64_t pairs = 0, wound = 0;
  double sec[5] = {0, 0, 0, 0, 0}, t_up = now_s();
  /* inputs: grid triangles (the host's bits, vx_grid_tri) and the sign tables: the device's
   * resident copy (go->resident, uploaded by the first build there), else this build's own */
  const device_inputs *rin = NULL;
  const vx_sign_data *rdev = NULL;
  if (go && go->resident)
    r = vxgpu::resident_inputs(go->resident, mesh, xf, sign, &rin, &rdev, err);
  if (r == VX_OK && !rin) r = vxgpu::upload_grid_tris(mesh, xf, &in, err);
  if (r != VX_OK) {
    free_inputs(&in);
    return r;
  }
  sign_source ss;
  memset(&ss, 0, sizeof ss);
  ss.ready = sign;
  ss.wait = go ? go->sign_wait : NULL;
  ss.ctx = go ? go->sign_ctx : NULL;
  ss.on_count = go ? go->on_count : NULL;
  ss.count_ctx = go ? go->count_ctx : NULL;
  ss.ntri = mesh->tri_count;
  ss.in = &in;
  if (rin) {
    ss.dev = *rdev;
    ss.uploaded = 1;
  }
  if (!sign && !ss.wait && !rin)
    r = vx_error_set(err, VX_ERR_INVALID_ARG, "GPU build: no sign tables");
  c.tg = rin ? rin->tg : in.tg;
  c.ntri = mesh->tri_count;
  c.R = (int64_t)1 << depth;
  c.depth = depth;
  c.band = band;
  c.mem_limit = go ? go->mem_limit : 0;
  c.wind_cap = vx_wind_excess_cap(c.mem_limit);
  if (r == VX_OK) {
    ce = cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
    o.st = st;
    /* [0]: corners computed, [1]: the winding work's excess (k_wound) */
    if (ce == cudaSuccess) ce = cudaMalloc((void **)&dcorners, 2 * sizeof *dcorners);
    /* on the stream the kernels run on: a non-blocking stream does not wait for the default
     * stream, so a cudaMemset there could land after the first atomicAdd */
    if (ce == cudaSuccess) ce = cudaMemsetAsync(dcorners, 0, 2 * sizeof *dcorners, st);
    if (ce != cudaSuccess) r = VX_CUDA_ERROR(err, ce, "stream set-up");
  }
  sec[0] = now_s() - t_up;
  double budget = 0.0;
  if (r == VX_OK) {
    size_t fr = 0, tot = 0;
    ce = cudaMemGetInfo(&fr, &tot);
    if (ce != cudaSuccess) r = VX_CUDA_ERROR(err, ce, "cudaMemGetInfo");
    budget = go && go->mem_budget ? (double)go->mem_budget : 0.85 * (double)fr;
  }
  /* partitions: a stack of (Morton prefix, log2 edge), popped in Morton order */
  uint64_t stk_code[8 * (VX_MAX_DEPTH + 1)];
  uint32_t stk_log[8 * (VX_MAX_DEPTH + 1)];
  int sp = 0;
  const uint32_t top_log = go && go->region_log2 ? go->region_log2 : depth;
  if (r == VX_OK && (top_log > depth || top_log > VX_MAX_DEPTH ||
                     (depth - top_log < 21 && go && go->region_log2 &&
                      (go->region_code >> 3 * (depth - top_log)) != 0)))
    r = vx_error_set(err, VX_ERR_INVALID_ARG, "GPU build: region %llu of 2^%u voxels outside a "
                     "2^%u grid", (unsigned long long)(go ? go->region_code : 0), top_log, depth);
  stk_code[sp] = go && go->region_log2 ? go->region_code : 0;
  stk_log[sp++] = top_log;
  double done = 0.0;
  while (r == VX_OK && sp > 0) {
    uint64_t pc = stk_code[--sp];
    uint32_t pl = stk_log[sp];
    part_result res = PART_DONE;
    if (go && go->part_log2 && pl > go->part_log2) {
      res = PART_SPLIT;
    } else {
      uint32_t px, py, pz;
      vx_morton_decode(pc, &px, &py, &pz);
      const int64_t S = (int64_t)1 << pl, org[3] = {(int64_t)px * S, (int64_t)py * S,
                                                   (int64_t)pz * S};
      for (int i = 0; i < 3; i++) {
        c.glo[i] = org[i] > 0 ? org[i] - 1 : 0;
        c.ghi[i] = org[i] + S < c.R ? org[i] + S : c.R - 1;
      }
      c.pbase = pc << (3 * pl);
      c.pend = (pc + 1) << (3 * pl);
      r = run_partition(c, &ss, pl, budget, st, &s, &o, dcorners, &res, &pairs, sec, &wound, err);
      scratch_free(&s, st);
    }
    if (r != VX_OK) break;
    if (res == PART_SPLIT) {
      for (int k = 7; k >= 0; k--) {
        stk_code[sp] = pc << 3 | (uint64_t)k;
        stk_log[sp++] = pl - 1;
      }
      continue;
    }
    done += 1.0 / (double)((uint64_t)1 << (3 * (top_log - pl)));
    if (progress && progress(user, "voxelize (GPU)", done))
      r = vx_error_set(err, VX_ERR_INTERRUPTED, "voxelization cancelled");
  }
  unsigned long long corners = 0;
  if (dcorners && r == VX_OK) {
    ce = cudaMemcpyAsync(&corners, dcorners, sizeof corners, cudaMemcpyDeviceToHost, st);
    if (ce == cudaSuccess) ce = cudaStreamSynchronize(st);
    if (ce != cudaSuccess) r = VX_CUDA_ERROR(err, ce, "cudaMemcpy");
  }
  scratch_free(&s, st);
  if (st) {
    cudaStreamSynchronize(st);
    cudaStreamDestroy(st);
  }
  cudaFree(dcorners);
  free_inputs(&in);
  if (r != VX_OK) {
    if (o.device) vx_gpu_surface_free(out);
    else vx_surface_free(out);
    return r;
  }
  if (stats) {
    stats->triangles = mesh->tri_count;
    stats->surface_voxels = out->count;
    stats->corners = corners;
    stats->pair_tests = pairs; /* overlaps found (the GPU does not count its rejected tests) */
    for (int k = 0; k < 5; k++) stats->sec_gpu[k] = sec[k];
    stats->corners_wound = wound;
  }
  return VX_OK;
}
