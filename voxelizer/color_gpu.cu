/* SPDX-License-Identifier: Apache-2.0 */
/* color_gpu.cu - the colour pass's triangle parts made on the GPU (color_records_gpu,
 * color_internal.h); color.c sorts and sums them as it does its own.
 *
 * The CPU's code (color_clip.h, color_part.h) runs here compiled without fused multiply-adds.
 * Work items are the slabs (x) of each triangle: a first kernel counts each triangle's slabs, a
 * second each slab's records (one thread per slab, splitting its triangle as the CPU's walk does
 * up to its slab); scans give each slab its offset, so the records land in the CPU's order
 * (triangle by triangle, x, y, z). A third kernel writes them, one warp per slab with the
 * slab's rows spread over the lanes (k_emit_rows). When every record fits the device at once
 * they are sorted there by voxel (CUB's stable radix sort: the order color_sort gives) and copied
 * back sorted; else they are written in batches of slabs whose records fit the device buffer,
 * each batch copied back, and the CPU sorts them. The textures go to the device with every mip
 * level (the CPU builds levels lazily; both use the same levels when they exist).
 */
#include <cub/cub.cuh>
#include <cuda_runtime.h>
#include <string.h>
#include <algorithm>
#include <atomic>
#include <vector>

#include "sys/alloc.h"
#include "sys/system.h"
#include "voxelizer/internal.h"
#include "voxelizer/color_internal.h"
#include "voxelizer/gpu_util.cuh"
#define CPART_LEVEL(view, level) (level)
#include "voxelizer/color_part.h"

namespace {

struct cargs { /* what both kernels read, device memory */
  cpart_src src;
  const float *pos;
  uint64_t ntri;
  vx_transform xf;
  uint32_t R;
};

__device__ void tri_grid(const cargs &a, uint64_t t, double g[9], double *min_area, int *plane) {
  vx_soup s;
  memset(&s, 0, sizeof s);
  s.pos = (float *)a.pos;
  vx_grid_tri(&s, &a.xf, t, g);
  /* parts below this share of the triangle are round-off (an edge on a grid plane) */
  *min_area = vx_grid_tri_area(g) * 1e-12;
  *plane = clip_on_plane(g, a.R);
}

/* Each triangle's slabs: the first (x0) and how many (cnt). */
__global__ void k_slabs(cargs a, uint32_t *x0, uint64_t *cnt) {
  uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= a.ntri) return;
  double g[9], min_area;
  int plane;
  tri_grid(a, t, g, &min_area, &plane);
  int64_t f, l;
  clip_x_range(g, a.R, &f, &l);
  x0[t] = (uint32_t)f;
  cnt[t] = (uint64_t)(l - f + 1);
}

/* Work item i: triangle *t (the last whose first item, start[t], is <= i), slab *x, and the
 * triangle as tri_grid gives it. */
__device__ void item_of(const cargs &a, const uint64_t *start, const uint32_t *x0, uint64_t i,
                        uint64_t *t, int64_t *x, double g[9], double *min_area, int *plane) {
  uint64_t lo = 0, hi = a.ntri; /* start[lo] <= i < start[hi] */
  while (hi - lo > 1) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (start[mid] <= i) lo = mid;
    else hi = mid;
  }
  *t = lo;
  *x = (int64_t)x0[lo] + (int64_t)(i - start[lo]);
  tri_grid(a, lo, g, min_area, plane);
}

/* Records per work item (a triangle's slab). */
__global__ void k_count(cargs a, const uint64_t *start, const uint32_t *x0, uint64_t items,
                        uint64_t *cnt) {
  uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= items) return;
  uint64_t t;
  int64_t x;
  double g[9], min_area;
  int plane;
  item_of(a, start, x0, i, &t, &x, g, &min_area, &plane);
  cnt[i] = clip_triangle(g, a.R, min_area, x, NULL, NULL) * (plane >= 0 ? 2u : 1u);
}

struct emit_ctx {
  const float *lut;
  const ctri *ti;
  crec *out;
  uint32_t tri;
  int plane;
};

__device__ void emit_part(void *vctx, const clip_poly *P, double area, uint32_t x, uint32_t y,
                          uint32_t z) {
  emit_ctx *e = (emit_ctx *)vctx;
  e->out += cpart_records(e->lut, e->ti, P, area, x, y, z, e->plane, e->tri, e->out);
}

/* The sort's input: each record's code, and its index. */
__global__ void k_keys(const crec *r, uint64_t n, uint64_t *key, uint32_t *idx) {
  uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  key[i] = r[i].code;
  idx[i] = (uint32_t)i;
}

/* out[i] = in[idx[i]]: the records in sorted order. */
__global__ void k_gather(const crec *in, const uint32_t *idx, uint64_t n, crec *out) {
  uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[idx[i]];
}

/* Host memory touched page by page on every core while the device works, so that the copy
 * back does not fault its pages in one at a time (a fresh buffer: about a third of the copy). */
struct touch_job {
  char *p;
  size_t bytes;
  std::atomic<size_t> next;
};

void *touch_worker(void *arg) {
  touch_job *j = (touch_job *)arg;
  const size_t CH = (size_t)4 << 20;
  for (;;) {
    size_t at = j->next.fetch_add(CH);
    if (at >= j->bytes) return NULL;
    memset(j->p + at, 0, std::min(CH, j->bytes - at));
  }
}

void touch_pages(void *p, size_t bytes) {
  touch_job j;
  j.p = (char *)p;
  j.bytes = bytes;
  j.next = 0;
  vx_parallel(vx_thread_count(0, 16), touch_worker, &j);
}

/* Slabs with at least this many records get a warp each (k_emit_rows), the others a thread. */
#define ROWS_MIN 64

/* Work item j of a launch: list[j], or i0 + j without a list. */
__device__ uint64_t item_at(const uint64_t *list, uint64_t i0, uint64_t j) {
  return list ? list[j] : i0 + j;
}

/* The records of work items j < count (item_at), at off[i] - base in buf, one thread per item:
 * for slabs with few records. */
__global__ void k_emit(cargs a, const uint64_t *start, const uint32_t *x0, const uint64_t *off,
                       const uint64_t *list, uint64_t i0, uint64_t count, uint64_t base, crec *buf) {
  uint64_t j = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= count) return;
  const uint64_t i = item_at(list, i0, j);
  uint64_t t;
  int64_t x;
  double g[9], min_area;
  int plane;
  item_of(a, start, x0, i, &t, &x, g, &min_area, &plane);
  ctri ti;
  cpart_tri(&a.src, t, &ti);
  emit_ctx e;
  e.lut = a.src.lut;
  e.ti = &ti;
  e.out = buf + (off[i] - base);
  e.tri = (uint32_t)t;
  e.plane = plane;
  clip_triangle(g, a.R, min_area, x, emit_part, &e);
}

/* The records of work items j < count (item_at), at off[i] - base in buf, one warp per item:
 * the slab's rows go to the lanes 32 at a time, each lane counting its row's records, a scan
 * over the lanes placing them (rows in order: the order of clip_triangle's walk), then each lane
 * writing its row. A slab's rows vary widely in number, and the colour of a part costs most, so
 * this spreads it over the lanes where a thread per slab would leave most threads idle. Every
 * lane walks the same chain of splits (identical bits), keeping only its row's piece. */
__global__ void k_emit_rows(cargs a, const uint64_t *start, const uint32_t *x0, const uint64_t *off,
                            const uint64_t *list, uint64_t i0, uint64_t count, uint64_t base,
                            crec *buf) {
  const uint64_t w = ((uint64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const unsigned lane = threadIdx.x & 31;
  if (w >= count) return; /* the whole warp: blockDim is a multiple of 32 */
  const uint64_t i = item_at(list, i0, w);
  uint64_t t;
  int64_t x, at;
  double g[9], min_area;
  int plane;
  item_of(a, start, x0, i, &t, &x, g, &min_area, &plane);
  ctri ti;
  cpart_tri(&a.src, t, &ti);
  /* the slab's piece */
  clip_poly tri, buf_poly, mine;
  const clip_poly *P = NULL;
  clip_chain ch;
  clip_tri_poly(g, &tri);
  clip_chain_init(&ch, &tri, 0, a.R);
  int found = 0;
  while (ch.next <= x && clip_chain_next(&ch, &buf_poly, &P, &at))
    if (at == x) {
      found = P->n >= 3;
      break;
    }
  if (!found) return;
  mine = *P;
  const uint32_t mult = plane >= 0 ? 2u : 1u;
  emit_ctx e;
  e.lut = a.src.lut;
  e.ti = &ti;
  e.tri = (uint32_t)t;
  e.plane = plane;
  crec *out = buf + (off[i] - base);
  clip_chain_init(&ch, &mine, 1, a.R);
  for (int more = 1; more;) {
    clip_poly row;
    int64_t y = -1;
    /* the next 32 rows: lane k keeps the k-th */
    for (unsigned k = 0; k < 32; k++) {
      int64_t yy;
      if (!clip_chain_next(&ch, &buf_poly, &P, &yy)) {
        more = 0;
        break;
      }
      if (k == lane) {
        row = *P;
        y = yy;
      }
    }
    const uint64_t n =
        y >= 0 && row.n >= 3 ? clip_row(&row, a.R, min_area, x, y, 0, INT64_MAX, NULL, NULL) * mult
                             : 0;
    uint64_t incl = n;
    for (unsigned d = 1; d < 32; d <<= 1) {
      uint64_t v = __shfl_up_sync(0xffffffffu, incl, d);
      if (lane >= d) incl += v;
    }
    const uint64_t total = __shfl_sync(0xffffffffu, incl, 31);
    if (n) {
      e.out = out + (incl - n);
      clip_row(&row, a.R, min_area, x, y, 0, INT64_MAX, emit_part, &e);
    }
    out += total;
  }
}

template <class T> cudaError_t upload(T **dst, const T *src, uint64_t count) {
  *dst = NULL;
  if (!src || !count) return cudaSuccess;
  cudaError_t e = cudaMalloc((void **)dst, (size_t)count * sizeof(T));
  if (e == cudaSuccess)
    e = cudaMemcpy(*dst, src, (size_t)count * sizeof(T), cudaMemcpyHostToDevice);
  return e;
}

/* Exclusive prefix sums of n counts (in) into out, with the scratch *tmp (grown as needed). */
cudaError_t scan(const uint64_t *in, uint64_t *out, uint64_t n, void **tmp, size_t *tmp_bytes) {
  size_t need = 0;
  cudaError_t e = cub::DeviceScan::ExclusiveSum(NULL, need, in, out, (int64_t)n);
  if (e == cudaSuccess && need > *tmp_bytes) {
    cudaFree(*tmp);
    *tmp = NULL;
    *tmp_bytes = 0;
    e = cudaMalloc(tmp, need);
    if (e == cudaSuccess) *tmp_bytes = need;
  }
  if (e == cudaSuccess) e = cub::DeviceScan::ExclusiveSum(*tmp, *tmp_bytes, in, out, (int64_t)n);
  return e;
}

} /* namespace */

extern "C" vx_status color_records_gpu(const vx_soup *soup, const vx_transform *xf, uint32_t R,
                                       const cpart_src *src, uint64_t max_recs, crec **recs,
                                       uint64_t *n, int *sorted, double sec[3], vx_error *err) {
  double tc = vxgpu::now_s();
  if (sec) sec[0] = sec[1] = sec[2] = 0.0;
  *recs = NULL;
  *n = 0;
  *sorted = 0;
  vx_status st = VX_OK;
  const uint64_t T = soup->tri_count;
  const unsigned BLOCK = 128;
  cargs a;
  memset(&a, 0, sizeof a);
  float *d_pos = NULL, *d_uv = NULL, *d_lut = NULL;
  uint32_t *d_mat = NULL, *d_corner = NULL, *d_texels = NULL;
  vx_material *d_mats = NULL;
  ctex_view *d_views = NULL;
  uint64_t *d_cnt = NULL, *d_off = NULL, *d_start = NULL, items = 0;
  uint32_t *d_x0 = NULL;
  void *d_tmp = NULL;
  crec *d_buf = NULL, *d_sorted = NULL, *h = NULL;
  uint64_t *d_list = NULL;
  uint64_t *d_key[2] = {NULL, NULL};
  uint32_t *d_idx[2] = {NULL, NULL};
  size_t tmp_bytes = 0;
  uint64_t total = 0;
  std::vector<uint64_t> off;
  std::vector<ctex_view> views;
  int devices = 0;
  VX_CU(cudaGetDeviceCount(&devices), "finding a GPU");
  if (devices < 1) {
    st = vx_error_set(err, VX_ERR_NO_GPU, "GPU: no CUDA device");
    goto done;
  }
  /* the soup's colour and geometry */
  VX_CU(upload(&d_pos, soup->pos, T * 9), "uploading the triangles");
  VX_CU(upload(&d_mat, src->material, T), "uploading the materials");
  VX_CU(upload(&d_mats, src->materials, src->material_count), "uploading the materials");
  VX_CU(upload(&d_uv, src->uv, T * 6), "uploading the UVs");
  VX_CU(upload(&d_corner, src->corner_rgba, T * 3), "uploading the vertex colours");
  VX_CU(upload(&d_lut, src->lut, 256), "uploading the sRGB table");
  {
    /* the pyramids in one block, their views pointing into it */
    uint64_t texels = 0;
    for (uint32_t i = 0; i < src->texture_count; i++)
      for (uint32_t k = 0; k < src->tex[i].levels; k++)
        texels += (uint64_t)src->tex[i].w[k] * src->tex[i].h[k];
    if (texels) VX_CU(cudaMalloc((void **)&d_texels, (size_t)texels * 4), "uploading the textures");
    views.assign(src->tex, src->tex + src->texture_count);
    uint64_t at = 0;
    for (uint32_t i = 0; i < src->texture_count; i++) {
      ctex_view *v = &views[i];
      v->host = NULL;
      for (uint32_t k = 0; k < v->levels; k++) {
        const uint64_t len = (uint64_t)v->w[k] * v->h[k];
        VX_CU(cudaMemcpy(d_texels + at, src->tex[i].px[k], (size_t)len * 4, cudaMemcpyHostToDevice),
              "uploading the textures");
        v->px[k] = d_texels + at;
        at += len;
      }
    }
    VX_CU(upload(&d_views, views.data(), (uint64_t)views.size()), "uploading the textures");
  }
  a.src = *src;
  a.src.material = d_mat;
  a.src.materials = d_mats;
  a.src.uv = d_uv;
  a.src.corner_rgba = d_corner;
  a.src.tex = d_views;
  a.src.lut = d_lut;
  a.pos = d_pos;
  a.ntri = T;
  a.xf = *xf;
  a.R = R;
  /* work items: each triangle's slabs, numbered triangle after triangle */
  VX_CU(cudaMalloc((void **)&d_x0, (size_t)(T ? T : 1) * sizeof(uint32_t)), "counting the parts");
  VX_CU(cudaMalloc((void **)&d_cnt, (size_t)(T + 1) * sizeof(uint64_t)), "counting the parts");
  VX_CU(cudaMalloc((void **)&d_start, (size_t)(T + 1) * sizeof(uint64_t)), "counting the parts");
  VX_CU(cudaMemset(d_cnt + T, 0, sizeof(uint64_t)), "counting the parts");
  k_slabs<<<vxgpu::grid_of(T, BLOCK), BLOCK>>>(a, d_x0, d_cnt);
  VX_CU(cudaGetLastError(), "counting the parts");
  VX_CU(scan(d_cnt, d_start, T + 1, &d_tmp, &tmp_bytes), "counting the parts");
  VX_CU(cudaMemcpy(&items, d_start + T, sizeof items, cudaMemcpyDeviceToHost),
        "counting the parts");
  cudaFree(d_cnt);
  d_cnt = NULL;
  /* each item's records, then its offset (the total after the last) */
  VX_CU(cudaMalloc((void **)&d_cnt, (size_t)(items + 1) * sizeof(uint64_t)), "counting the parts");
  VX_CU(cudaMalloc((void **)&d_off, (size_t)(items + 1) * sizeof(uint64_t)), "counting the parts");
  VX_CU(cudaMemset(d_cnt + items, 0, sizeof(uint64_t)), "counting the parts");
  if (items) k_count<<<vxgpu::grid_of(items, BLOCK), BLOCK>>>(a, d_start, d_x0, items, d_cnt);
  VX_CU(cudaGetLastError(), "counting the parts");
  VX_CU(scan(d_cnt, d_off, items + 1, &d_tmp, &tmp_bytes), "counting the parts");
  cudaFree(d_cnt);
  d_cnt = NULL;
  off.resize((size_t)items + 1);
  VX_CU(cudaMemcpy(off.data(), d_off, (size_t)(items + 1) * sizeof(uint64_t),
                   cudaMemcpyDeviceToHost), "counting the parts");
  total = off[items];
  if (sec) sec[0] = vxgpu::now_s() - tc;
  if (total > max_recs) {
    *n = total;
    st = vx_error_set(err, VX_ERR_LIMIT, "colour: %llu triangle parts are over the limit",
                      (unsigned long long)total);
    goto done;
  }
  h = (crec *)vx_malloc((size_t)(total ? total : 1) * sizeof(crec));
  if (!h) {
    st = vx_error_set(err, VX_ERR_NOMEM, "colour: out of memory for %llu triangle parts",
                      (unsigned long long)total);
    goto done;
  }
  {
    size_t free_b = 0, all_b = 0;
    VX_CU(cudaMemGetInfo(&free_b, &all_b), "writing the parts");
    /* All records at once when they, a sorted copy, the keys and the indices (twice each) and
     * the sort's scratch fit half the free memory: made, sorted by code (a stable radix sort:
     * color_sort's order) and copied back sorted. */
    size_t sort_tmp = 0;
    const int bits = 3 * __builtin_ctz(R);
    if (total && total <= UINT32_MAX &&
        cub::DeviceRadixSort::SortPairs(NULL, sort_tmp, (const uint64_t *)NULL, (uint64_t *)NULL,
                                        (const uint32_t *)NULL, (uint32_t *)NULL, (uint32_t)total,
                                        0, bits) == cudaSuccess &&
        (double)total * (2 * sizeof(crec) + 2 * 8 + 2 * 4) + (double)sort_tmp < (double)free_b / 2) {
      VX_CU(cudaMalloc((void **)&d_buf, (size_t)total * sizeof(crec)), "writing the parts");
      VX_CU(cudaMalloc((void **)&d_sorted, (size_t)total * sizeof(crec)), "sorting the parts");
      for (int k = 0; k < 2; k++) {
        VX_CU(cudaMalloc((void **)&d_key[k], (size_t)total * 8), "sorting the parts");
        VX_CU(cudaMalloc((void **)&d_idx[k], (size_t)total * 4), "sorting the parts");
      }
      if (sort_tmp > tmp_bytes) {
        cudaFree(d_tmp);
        d_tmp = NULL;
        tmp_bytes = sort_tmp;
        VX_CU(cudaMalloc(&d_tmp, tmp_bytes), "sorting the parts");
      }
      tc = vxgpu::now_s();
      /* slabs with many records to a warp each, the rest to a thread each */
      std::vector<uint64_t> lists((size_t)items);
      uint64_t nbig = 0, nsmall = 0;
      for (uint64_t i = 0; i < items; i++)
        if (off[i + 1] - off[i] >= ROWS_MIN) lists[(size_t)nbig++] = i;
      for (uint64_t i = 0; i < items; i++)
        if (off[i + 1] - off[i] < ROWS_MIN) lists[(size_t)(nbig + nsmall++)] = i;
      VX_CU(upload(&d_list, lists.data(), items), "writing the parts");
      if (nbig)
        k_emit_rows<<<vxgpu::grid_of(nbig * 32, BLOCK), BLOCK>>>(a, d_start, d_x0, d_off, d_list,
                                                                 0, nbig, 0, d_buf);
      VX_CU(cudaGetLastError(), "writing the parts");
      if (nsmall)
        k_emit<<<vxgpu::grid_of(nsmall, BLOCK), BLOCK>>>(a, d_start, d_x0, d_off, d_list + nbig,
                                                         0, nsmall, 0, d_buf);
      VX_CU(cudaGetLastError(), "writing the parts");
      k_keys<<<vxgpu::grid_of(total, 256), 256>>>(d_buf, total, d_key[0], d_idx[0]);
      VX_CU(cudaGetLastError(), "sorting the parts");
      VX_CU(cub::DeviceRadixSort::SortPairs(d_tmp, tmp_bytes, d_key[0], d_key[1], d_idx[0],
                                            d_idx[1], (uint32_t)total, 0, bits),
            "sorting the parts");
      k_gather<<<vxgpu::grid_of(total, 256), 256>>>(d_buf, d_idx[1], total, d_sorted);
      VX_CU(cudaGetLastError(), "sorting the parts");
      touch_pages(h, (size_t)total * sizeof(crec)); /* while the device works */
      VX_CU(cudaDeviceSynchronize(), "sorting the parts");
      double tb = vxgpu::now_s();
      if (sec) sec[1] = tb - tc;
      VX_CU(vxgpu::copy_back(h, d_sorted, (size_t)total * sizeof(crec)), "copying the parts back");
      if (sec) sec[2] = vxgpu::now_s() - tb;
      *sorted = 1;
      *recs = h;
      *n = total;
      h = NULL;
      goto done;
    }
    /* else the records in batches of items that fit half the free device memory */
    uint64_t cap = std::min<uint64_t>(total, free_b / 2 / sizeof(crec));
    if (total && cap == 0) {
      st = vx_error_set(err, VX_ERR_NOMEM, "GPU: no device memory for the colour parts");
      goto done;
    }
    if (total) VX_CU(cudaMalloc((void **)&d_buf, (size_t)cap * sizeof(crec)), "writing the parts");
    tc = vxgpu::now_s();
    for (uint64_t i0 = 0; i0 < items && total;) {
      /* the first item whose records would not fit after i0's */
      uint64_t i1 = (uint64_t)(std::upper_bound(off.begin() + (ptrdiff_t)i0, off.end(),
                                                off[i0] + cap) - off.begin()) - 1;
      if (i1 > items) i1 = items;
      if (i1 == i0) {
        st = vx_error_set(err, VX_ERR_NOMEM, "GPU: the parts of one triangle's slab do not fit "
                          "the device");
        goto done;
      }
      k_emit<<<vxgpu::grid_of(i1 - i0, BLOCK), BLOCK>>>(a, d_start, d_x0, d_off, NULL, i0, i1 - i0,
                                                         off[i0], d_buf);
      VX_CU(cudaGetLastError(), "writing the parts");
      if (i0 == 0) touch_pages(h, (size_t)total * sizeof(crec)); /* while the device works */
      /* the copy below runs on a stream of its own: the kernel must be done */
      VX_CU(cudaDeviceSynchronize(), "writing the parts");
      double tb = vxgpu::now_s();
      if (sec) sec[1] += tb - tc;
      VX_CU(vxgpu::copy_back(h + off[i0], d_buf, (size_t)(off[i1] - off[i0]) * sizeof(crec)),
            "copying the parts back");
      tc = vxgpu::now_s();
      if (sec) sec[2] += tc - tb;
      i0 = i1;
    }
  }
  *recs = h;
  *n = total;
  h = NULL;
done:
  cudaFree(d_pos);
  cudaFree(d_uv);
  cudaFree(d_lut);
  cudaFree(d_mat);
  cudaFree(d_corner);
  cudaFree(d_texels);
  cudaFree(d_mats);
  cudaFree(d_views);
  cudaFree(d_cnt);
  cudaFree(d_off);
  cudaFree(d_start);
  cudaFree(d_x0);
  cudaFree(d_tmp);
  cudaFree(d_buf);
  cudaFree(d_sorted);
  cudaFree(d_list);
  for (int k = 0; k < 2; k++) {
    cudaFree(d_key[k]);
    cudaFree(d_idx[k]);
  }
  vx_free(h);
  return st;
}
