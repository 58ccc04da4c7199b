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
  /* a region (boxed): the parts of voxels lo..hi only, records kept when their code's prefix
   * (code >> sh) is bcode, their codes masked to the cell; tri_id: each triangle's index in the
   * soup (NULL: its own) */
  int boxed;
  int64_t lo[3], hi[3];
  uint32_t sh;
  uint64_t bcode, mask;
  const uint32_t *tri_id;
};

/* The box the clip walks for a triangle on plane `plane` (or -1): the region's, one voxel further
 * on that axis (a part above the plane also gives the voxel below it), slab x only. */
__device__ void walk_box(const cargs &a, int plane, int64_t x, int64_t lo[3], int64_t hi[3]) {
  for (int k = 0; k < 3; k++) {
    lo[k] = a.lo[k];
    hi[k] = a.hi[k] + (k == plane);
  }
  lo[0] = hi[0] = x;
}

/* Whether record code `code` belongs to the region; *local: its code within it. */
__device__ bool in_region(const cargs &a, uint64_t code, uint64_t *local) {
  return cpart_in_cell(code, a.sh, a.bcode, a.mask, local);
}

struct count_ctx {
  const cargs *a;
  int plane;
  uint64_t n;
};

/* Counts the records of a part that belong to the region (cpart_records's codes). */
__device__ void count_part(void *vctx, const clip_poly *P, double area, uint32_t x, uint32_t y,
                           uint32_t z) {
  (void)P;
  (void)area;
  count_ctx *c = (count_ctx *)vctx;
  uint64_t code[2], local;
  const int copies = cpart_codes(x, y, z, c->plane, code);
  for (int i = 0; i < copies; i++) c->n += in_region(*c->a, code[i], &local);
}

__device__ void tri_grid(const cargs &a, uint64_t t, double g[9], double *min_area, int *plane) {
  vx_soup s;
  memset(&s, 0, sizeof s);
  s.pos = (float *)a.pos;
  vx_grid_tri(&s, &a.xf, t, g);
  /* parts below this share of the triangle are round-off (an edge on a grid plane) */
  *min_area = vx_grid_tri_area(g) * 1e-12;
  *plane = clip_on_plane(g, a.R);
}

/* Triangles whose slabs may hold this many rows (y) have them counted by a warp each. */
#define ROWS_WIDE 32

/* Each triangle's slabs: the first (x0) and how many (cnt); wide: whether its slabs are
 * ROWS_WIDE rows or more (by its bounds within the region's). */
__global__ void k_slabs(cargs a, uint32_t *x0, uint64_t *cnt, uint8_t *wide) {
  uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= a.ntri) return;
  double g[9], min_area;
  int plane;
  tri_grid(a, t, g, &min_area, &plane);
  int64_t f, l;
  clip_x_range(g, a.R, &f, &l);
  if (a.boxed) { /* the slabs within the region's (one further above a plane x = i) */
    const int64_t lo = a.lo[0], hi = a.hi[0] + (plane == 0);
    f = f > lo ? f : lo;
    l = l < hi ? l : hi;
  }
  x0[t] = (uint32_t)f;
  cnt[t] = l >= f ? (uint64_t)(l - f + 1) : 0;
  double y0 = fmin(g[1], fmin(g[4], g[7])), y1 = fmax(g[1], fmax(g[4], g[7]));
  if (a.boxed) {
    y0 = fmax(y0, (double)a.lo[1]);
    y1 = fmin(y1, (double)a.hi[1] + 2.0);
  }
  wide[t] = ceil(y1) - floor(y0) >= (double)ROWS_WIDE;
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

/* Records per work item (a triangle's slab), one thread per item; the items of wide triangles
 * are left to k_count_rows. */
__global__ void k_count(cargs a, const uint64_t *start, const uint32_t *x0, const uint8_t *wide,
                        uint64_t items, uint64_t *cnt) {
  uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= items) return;
  uint64_t t;
  int64_t x;
  double g[9], min_area;
  int plane;
  item_of(a, start, x0, i, &t, &x, g, &min_area, &plane);
  if (wide[t]) return;
  if (!a.boxed) {
    cnt[i] = clip_triangle(g, a.R, min_area, x, NULL, NULL) * (plane >= 0 ? 2u : 1u);
    return;
  }
  int64_t lo[3], hi[3];
  walk_box(a, plane, x, lo, hi);
  count_ctx c = {&a, plane, 0};
  clip_triangle_box(g, a.R, min_area, lo, hi, count_part, &c);
  cnt[i] = c.n;
}

struct emit_ctx {
  const cargs *a;
  const ctri *ti;
  crec *out;
  uint32_t tri;
  int plane;
};

__device__ void emit_part(void *vctx, const clip_poly *P, double area, uint32_t x, uint32_t y,
                          uint32_t z) {
  emit_ctx *e = (emit_ctx *)vctx;
  const float *lut = e->a->src.lut;
  if (!e->a->boxed) {
    e->out += cpart_records(lut, e->ti, P, area, x, y, z, e->plane, e->tri, e->out);
    return;
  }
  crec r[2];
  const int k = cpart_records(lut, e->ti, P, area, x, y, z, e->plane, e->tri, r);
  for (int i = 0; i < k; i++)
    if (in_region(*e->a, r[i].code, &r[i].code)) *e->out++ = r[i];
}

/* The index records carry for triangle t of the launch. */
__device__ uint32_t tri_index(const cargs &a, uint64_t t) {
  return a.tri_id ? a.tri_id[t] : (uint32_t)t;
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
  e.a = &a;
  e.ti = &ti;
  e.out = buf + (off[i] - base);
  e.tri = tri_index(a, t);
  e.plane = plane;
  int64_t lo[3], hi[3];
  walk_box(a, plane, x, lo, hi);
  if (!a.boxed) lo[1] = lo[2] = 0, hi[1] = hi[2] = INT64_MAX;
  clip_triangle_box(g, a.R, min_area, lo, hi, emit_part, &e);
}

/* The records of work item i (a slab), one warp: the slab's rows go to the lanes 32 at a time,
 * each lane counting its row's records, a scan over the lanes placing them (rows in order: the
 * order of clip_triangle's walk), then each lane writing its row at out (NULL: counted only).
 * Returns their number (on every lane). A slab's rows vary widely in number, and the colour of
 * a part costs most, so this spreads it over the lanes where a thread per slab would leave most
 * threads idle. Every lane walks the same chain of splits (identical bits), keeping only its
 * row's piece. */
__device__ uint64_t warp_slab(const cargs &a, const uint64_t *start, const uint32_t *x0, uint64_t i,
                              unsigned lane, crec *out) {
  uint64_t t;
  int64_t x, at;
  double g[9], min_area;
  int plane;
  item_of(a, start, x0, i, &t, &x, g, &min_area, &plane);
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
  if (!found) return 0;
  mine = *P;
  const uint32_t mult = plane >= 0 ? 2u : 1u;
  ctri ti;
  emit_ctx e;
  if (out) {
    cpart_tri(&a.src, t, &ti);
    e.a = &a;
    e.ti = &ti;
    e.tri = tri_index(a, t);
    e.plane = plane;
  }
  int64_t lo[3], hi[3];
  walk_box(a, plane, x, lo, hi);
  if (!a.boxed) lo[1] = lo[2] = 0, hi[1] = hi[2] = INT64_MAX;
  uint64_t sum = 0;
  clip_chain_init(&ch, &mine, 1, a.R);
  for (int more = 1; more;) {
    clip_poly row;
    int64_t y = -1;
    /* the next 32 rows: lane k keeps the k-th */
    for (unsigned k = 0; k < 32; k++) {
      int64_t yy;
      if (ch.next > hi[1] || !clip_chain_next(&ch, &buf_poly, &P, &yy)) {
        more = 0;
        break;
      }
      if (k == lane) {
        row = *P;
        y = yy;
      }
    }
    uint64_t n = 0;
    if (y >= lo[1] && row.n >= 3) {
      if (a.boxed) {
        count_ctx c = {&a, plane, 0};
        clip_row(&row, a.R, min_area, x, y, lo[2], hi[2], count_part, &c);
        n = c.n;
      } else {
        n = clip_row(&row, a.R, min_area, x, y, 0, INT64_MAX, NULL, NULL) * mult;
      }
    }
    uint64_t incl = n;
    for (unsigned d = 1; d < 32; d <<= 1) {
      uint64_t v = __shfl_up_sync(0xffffffffu, incl, d);
      if (lane >= d) incl += v;
    }
    const uint64_t total = __shfl_sync(0xffffffffu, incl, 31);
    if (out && n) {
      e.out = out + (incl - n);
      clip_row(&row, a.R, min_area, x, y, lo[2], hi[2], emit_part, &e);
    }
    if (out) out += total;
    sum += total;
  }
  return sum;
}

/* The records of work items j < count (item_at), at off[i] - base in buf, one warp per item
 * (warp_slab). */
__global__ void k_emit_rows(cargs a, const uint64_t *start, const uint32_t *x0, const uint64_t *off,
                            const uint64_t *list, uint64_t i0, uint64_t count, uint64_t base,
                            crec *buf) {
  const uint64_t w = ((uint64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
  if (w >= count) return; /* the whole warp: blockDim is a multiple of 32 */
  const uint64_t i = item_at(list, i0, w);
  warp_slab(a, start, x0, i, threadIdx.x & 31, buf + (off[i] - base));
}

/* Records per work item list[j], j < count, one warp per item (warp_slab): for the slabs of
 * triangles many rows wide, whose rows would leave a thread per slab running long. */
__global__ void k_count_rows(cargs a, const uint64_t *start, const uint32_t *x0,
                             const uint64_t *list, uint64_t count, uint64_t *cnt) {
  const uint64_t w = ((uint64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
  if (w >= count) return;
  const uint64_t i = list[w];
  const uint64_t n = warp_slab(a, start, x0, i, threadIdx.x & 31, NULL);
  if ((threadIdx.x & 31) == 0) cnt[i] = n;
}

/* Everything below runs on one stream of its own, its memory allocated and freed in stream
 * order: no call waits for the whole device, so tiles built side by side on one GPU (each
 * worker's geometry on streams of its own) overlap with it. src stays valid until the stream is
 * synchronized. */
template <class T> cudaError_t upload(T **dst, const T *src, uint64_t count, cudaStream_t st) {
  *dst = NULL;
  if (!src || !count) return cudaSuccess;
  cudaError_t e = cudaMallocAsync((void **)dst, (size_t)count * sizeof(T), st);
  if (e == cudaSuccess)
    e = cudaMemcpyAsync(*dst, src, (size_t)count * sizeof(T), cudaMemcpyHostToDevice, st);
  return e;
}

template <class T> cudaError_t dev_alloc(T **dst, uint64_t count, cudaStream_t st) {
  return cudaMallocAsync((void **)dst, (size_t)(count ? count : 1) * sizeof(T), st);
}

template <class T> void dev_free(T **p, cudaStream_t st) {
  if (*p) cudaFreeAsync(*p, st);
  *p = NULL;
}

/* Exclusive prefix sums of n counts (in) into out, with the scratch *tmp (grown as needed). */
cudaError_t scan(const uint64_t *in, uint64_t *out, uint64_t n, void **tmp, size_t *tmp_bytes,
                 cudaStream_t st) {
  size_t need = 0;
  cudaError_t e = cub::DeviceScan::ExclusiveSum(NULL, need, in, out, (int64_t)n, st);
  if (e == cudaSuccess && need > *tmp_bytes) {
    if (*tmp) cudaFreeAsync(*tmp, st);
    *tmp = NULL;
    *tmp_bytes = 0;
    e = cudaMallocAsync(tmp, need, st);
    if (e == cudaSuccess) *tmp_bytes = need;
  }
  if (e == cudaSuccess)
    e = cub::DeviceScan::ExclusiveSum(*tmp, *tmp_bytes, in, out, (int64_t)n, st);
  return e;
}

/* count values from device memory src into host memory dst, waiting for them. */
template <class T> cudaError_t fetch(T *dst, const T *src, uint64_t count, cudaStream_t st) {
  cudaError_t e = cudaMemcpyAsync(dst, src, (size_t)count * sizeof(T), cudaMemcpyDeviceToHost, st);
  return e == cudaSuccess ? cudaStreamSynchronize(st) : e;
}

} /* namespace */

/* Host memory for every record (NULL with err set when it cannot be had). */
static crec *host_records(uint64_t total, vx_error *err) {
  crec *h = (crec *)vx_malloc((size_t)(total ? total : 1) * sizeof(crec));
  if (!h)
    vx_error_set(err, VX_ERR_NOMEM, "colour: out of memory for %llu triangle parts",
                 (unsigned long long)total);
  return h;
}

static std::atomic<uint64_t> piece_records((uint64_t)1 << 18);

extern "C" uint64_t color_gpu_piece_records(uint64_t n) {
  return n ? piece_records.exchange(n) : piece_records.load();
}

/* Of len records in a host piece, those of its whole cells: all of them at the end of the
 * records (last), else up to its last cell's first record, where the next piece starts; 0 when
 * one cell fills the piece. */
static uint64_t whole_cells(const crec *h, uint64_t len, int last) {
  if (last) return len;
  uint64_t take = len;
  while (take > 1 && h[take - 2].code == h[len - 1].code) take--;
  return take - 1;
}

/* The sorted records d[0 .. total) to sink, in pieces of whole cells through two host buffers of
 * color_gpu_piece_records each (the sink's stage; grown for a cell that holds more), on the
 * tile's own stream: while the sink takes one piece the next is copied into the other buffer. */
static vx_status hand_over(const color_sink *sink, const crec *d, uint64_t total,
                           cudaStream_t stream, vx_error *err) {
  vx_host_stage own;
  memset(&own, 0, sizeof own);
  vx_host_stage *stage = sink->stage ? sink->stage : &own;
  uint64_t cap = std::max<uint64_t>(1, std::min<uint64_t>(total, piece_records.load()));
  const int bufs = total > cap ? 2 : 1;
  vx_status st = VX_OK;
  crec *buf[2] = {NULL, NULL};
  uint64_t at = 0;
  int cur = 0, pending = 0; /* pending: a copy into buf[cur] was issued */
  cudaError_t e = cudaSuccess;
  while (at < total && st == VX_OK) {
    if (!buf[0]) { /* (re)made room: the piece at `at` into the first buffer */
      if (!vx_host_stage_reserve(stage, (size_t)bufs * cap * sizeof(crec))) {
        st = vx_error_set(err, VX_ERR_NOMEM, "colour: out of memory for the parts");
        break;
      }
      buf[0] = (crec *)stage->p;
      buf[1] = buf[0] + (bufs > 1 ? cap : 0);
      cur = 0;
      pending = 0;
    }
    const uint64_t len = std::min(cap, total - at);
    if (!pending)
      e = cudaMemcpyAsync(buf[cur], d + at, (size_t)len * sizeof(crec), cudaMemcpyDeviceToHost,
                          stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
    pending = 0;
    if (e != cudaSuccess) {
      st = VX_CUDA_ERROR(err, e, "copying the parts back");
      break;
    }
    const uint64_t take = whole_cells(buf[cur], len, at + len == total);
    if (take == 0) { /* one cell fills the piece: larger ones */
      cap = std::min(cap * 2, total);
      buf[0] = NULL;
      continue;
    }
    const uint64_t next = at + take;
    if (next < total) { /* into the other buffer, whose piece the sink has taken */
      e = cudaMemcpyAsync(buf[cur ^ 1], d + next,
                          (size_t)std::min(cap, total - next) * sizeof(crec),
                          cudaMemcpyDeviceToHost, stream);
      if (e != cudaSuccess) {
        st = VX_CUDA_ERROR(err, e, "copying the parts back");
        break;
      }
      pending = 1;
    }
    st = sink->take(sink->ctx, buf[cur], take, err);
    at = next;
    cur ^= 1;
  }
  if (pending) cudaStreamSynchronize(stream); /* nothing may still land in the stage */
  vx_host_stage_free(&own);
  return st;
}

extern "C" vx_status color_records_gpu(const vx_soup *soup, const vx_transform *xf, uint32_t R,
                                       const cpart_src *src, const color_region *reg,
                                       uint64_t max_recs, const color_sink *sink, crec **recs,
                                       uint64_t *n, int *sorted, double sec[3], vx_error *err) {
  double tc = vxgpu::now_s();
  if (sec) sec[0] = sec[1] = sec[2] = 0.0;
  *recs = NULL;
  *n = 0;
  *sorted = 0;
  vx_status st = VX_OK;
  const uint64_t T = reg ? reg->ntris : soup->tri_count;
  const unsigned BLOCK = 128;
  /* a region's triangles gathered (their soup indices ride along), else the soup's arrays */
  std::vector<float> g_pos, g_uv;
  std::vector<uint32_t> g_mat, g_corner;
  const float *pos = soup->pos, *uv = src->uv;
  const uint32_t *mat = src->material, *corner = src->corner_rgba;
  uint32_t *d_tri = NULL;
  cudaStream_t stream = NULL;
  uint8_t *d_wide = NULL;
  uint64_t *d_wlist = NULL;
  std::vector<uint8_t> wide;
  std::vector<uint64_t> starts, wlist;
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
  VX_CU(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "creating a stream");
  if (reg) {
    g_pos.resize((size_t)T * 9);
    if (uv) g_uv.resize((size_t)T * 6);
    if (mat) g_mat.resize((size_t)T);
    if (corner) g_corner.resize((size_t)T * 3);
    for (uint64_t i = 0; i < T; i++) {
      const uint64_t t = reg->tris[i];
      memcpy(&g_pos[i * 9], soup->pos + t * 9, 9 * sizeof(float));
      if (uv) memcpy(&g_uv[i * 6], uv + t * 6, 6 * sizeof(float));
      if (mat) g_mat[i] = mat[t];
      if (corner) memcpy(&g_corner[i * 3], corner + t * 3, 3 * sizeof(uint32_t));
    }
    pos = g_pos.data();
    uv = uv ? g_uv.data() : NULL;
    mat = mat ? g_mat.data() : NULL;
    corner = corner ? g_corner.data() : NULL;
    VX_CU(upload(&d_tri, reg->tris, T, stream), "uploading the triangles");
  }
  /* the soup's colour and geometry */
  VX_CU(upload(&d_pos, pos, T * 9, stream), "uploading the triangles");
  VX_CU(upload(&d_mat, mat, T, stream), "uploading the materials");
  VX_CU(upload(&d_mats, src->materials, src->material_count, stream), "uploading the materials");
  VX_CU(upload(&d_uv, uv, T * 6, stream), "uploading the UVs");
  VX_CU(upload(&d_corner, corner, T * 3, stream), "uploading the vertex colours");
  VX_CU(upload(&d_lut, src->lut, 256, stream), "uploading the sRGB table");
  {
    /* the pyramids in one block, their views pointing into it */
    uint64_t texels = 0;
    for (uint32_t i = 0; i < src->texture_count; i++)
      for (uint32_t k = 0; k < src->tex[i].levels; k++)
        texels += (uint64_t)src->tex[i].w[k] * src->tex[i].h[k];
    if (texels) VX_CU(dev_alloc(&d_texels, texels, stream), "uploading the textures");
    views.assign(src->tex, src->tex + src->texture_count);
    uint64_t at = 0;
    for (uint32_t i = 0; i < src->texture_count; i++) {
      ctex_view *v = &views[i];
      v->host = NULL;
      for (uint32_t k = 0; k < v->levels; k++) {
        const uint64_t len = (uint64_t)v->w[k] * v->h[k];
        VX_CU(cudaMemcpyAsync(d_texels + at, src->tex[i].px[k], (size_t)len * 4,
                              cudaMemcpyHostToDevice, stream), "uploading the textures");
        v->px[k] = d_texels + at;
        at += len;
      }
    }
    VX_CU(upload(&d_views, views.data(), (uint64_t)views.size(), stream), "uploading the textures");
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
  if (reg) {
    const uint32_t B = 1u << reg->blog;
    uint32_t b[3];
    vx_morton_decode(reg->bcode, &b[0], &b[1], &b[2]);
    a.boxed = 1;
    for (int k = 0; k < 3; k++) {
      a.lo[k] = (int64_t)b[k] * B;
      a.hi[k] = a.lo[k] + B - 1;
    }
    a.sh = 3 * reg->blog;
    a.bcode = reg->bcode;
    a.mask = reg->blog ? ((uint64_t)1 << a.sh) - 1 : 0;
    a.tri_id = d_tri;
  }
  /* work items: each triangle's slabs, numbered triangle after triangle */
  VX_CU(dev_alloc(&d_x0, T, stream), "counting the parts");
  VX_CU(dev_alloc(&d_wide, T, stream), "counting the parts");
  VX_CU(dev_alloc(&d_cnt, T + 1, stream), "counting the parts");
  VX_CU(dev_alloc(&d_start, T + 1, stream), "counting the parts");
  VX_CU(cudaMemsetAsync(d_cnt + T, 0, sizeof(uint64_t), stream), "counting the parts");
  if (T) k_slabs<<<vxgpu::grid_of(T, BLOCK), BLOCK, 0, stream>>>(a, d_x0, d_cnt, d_wide);
  VX_CU(cudaGetLastError(), "counting the parts");
  VX_CU(scan(d_cnt, d_start, T + 1, &d_tmp, &tmp_bytes, stream), "counting the parts");
  /* the wide triangles' items: a warp each */
  wide.resize((size_t)T + 1);
  starts.resize((size_t)T + 1);
  VX_CU(fetch(wide.data(), d_wide, T, stream), "counting the parts");
  VX_CU(fetch(starts.data(), d_start, T + 1, stream), "counting the parts");
  items = starts[T];
  for (uint64_t t = 0; t < T; t++)
    if (wide[t])
      for (uint64_t i = starts[t]; i < starts[t + 1]; i++) wlist.push_back(i);
  dev_free(&d_cnt, stream);
  /* each item's records, then its offset (the total after the last) */
  VX_CU(dev_alloc(&d_cnt, items + 1, stream), "counting the parts");
  VX_CU(dev_alloc(&d_off, items + 1, stream), "counting the parts");
  VX_CU(cudaMemsetAsync(d_cnt + items, 0, sizeof(uint64_t), stream), "counting the parts");
  if (items)
    k_count<<<vxgpu::grid_of(items, BLOCK), BLOCK, 0, stream>>>(a, d_start, d_x0, d_wide, items,
                                                                 d_cnt);
  VX_CU(cudaGetLastError(), "counting the parts");
  if (!wlist.empty()) {
    VX_CU(upload(&d_wlist, wlist.data(), (uint64_t)wlist.size(), stream), "counting the parts");
    k_count_rows<<<vxgpu::grid_of((uint64_t)wlist.size() * 32, BLOCK), BLOCK, 0, stream>>>(
        a, d_start, d_x0, d_wlist, (uint64_t)wlist.size(), d_cnt);
    VX_CU(cudaGetLastError(), "counting the parts");
  }
  VX_CU(scan(d_cnt, d_off, items + 1, &d_tmp, &tmp_bytes, stream), "counting the parts");
  dev_free(&d_cnt, stream);
  off.resize((size_t)items + 1);
  VX_CU(fetch(off.data(), d_off, items + 1, stream), "counting the parts");
  total = off[items];
  if (sec) sec[0] = vxgpu::now_s() - tc;
  if (total > max_recs) {
    *n = total;
    st = vx_error_set(err, VX_ERR_LIMIT, "colour: %llu triangle parts are over the limit",
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
    const int bits = reg ? 3 * (int)reg->blog : 3 * __builtin_ctz(R);
    if (total && total <= UINT32_MAX &&
        cub::DeviceRadixSort::SortPairs(NULL, sort_tmp, (const uint64_t *)NULL, (uint64_t *)NULL,
                                        (const uint32_t *)NULL, (uint32_t *)NULL, (uint32_t)total,
                                        0, bits, stream) == cudaSuccess &&
        (double)total * (2 * sizeof(crec) + 2 * 8 + 2 * 4) + (double)sort_tmp < (double)free_b / 2) {
      if (!sink && !(h = host_records(total, err))) {
        st = VX_ERR_NOMEM;
        goto done;
      }
      VX_CU(dev_alloc(&d_buf, total, stream), "writing the parts");
      VX_CU(dev_alloc(&d_sorted, total, stream), "sorting the parts");
      for (int k = 0; k < 2; k++) {
        VX_CU(dev_alloc(&d_key[k], total, stream), "sorting the parts");
        VX_CU(dev_alloc(&d_idx[k], total, stream), "sorting the parts");
      }
      if (sort_tmp > tmp_bytes) {
        dev_free(&d_tmp, stream);
        tmp_bytes = sort_tmp;
        VX_CU(cudaMallocAsync(&d_tmp, tmp_bytes, stream), "sorting the parts");
      }
      tc = vxgpu::now_s();
      /* slabs with many records to a warp each, the rest to a thread each */
      std::vector<uint64_t> lists((size_t)items);
      uint64_t nbig = 0, nsmall = 0;
      for (uint64_t i = 0; i < items; i++)
        if (off[i + 1] - off[i] >= ROWS_MIN) lists[(size_t)nbig++] = i;
      for (uint64_t i = 0; i < items; i++)
        if (off[i + 1] - off[i] < ROWS_MIN) lists[(size_t)(nbig + nsmall++)] = i;
      VX_CU(upload(&d_list, lists.data(), items, stream), "writing the parts");
      if (nbig)
        k_emit_rows<<<vxgpu::grid_of(nbig * 32, BLOCK), BLOCK, 0, stream>>>(a, d_start, d_x0, d_off, d_list,
                                                                 0, nbig, 0, d_buf);
      VX_CU(cudaGetLastError(), "writing the parts");
      if (nsmall)
        k_emit<<<vxgpu::grid_of(nsmall, BLOCK), BLOCK, 0, stream>>>(a, d_start, d_x0, d_off, d_list + nbig,
                                                         0, nsmall, 0, d_buf);
      VX_CU(cudaGetLastError(), "writing the parts");
      k_keys<<<vxgpu::grid_of(total, 256), 256, 0, stream>>>(d_buf, total, d_key[0], d_idx[0]);
      VX_CU(cudaGetLastError(), "sorting the parts");
      VX_CU(cub::DeviceRadixSort::SortPairs(d_tmp, tmp_bytes, d_key[0], d_key[1], d_idx[0],
                                            d_idx[1], (uint32_t)total, 0, bits, stream),
            "sorting the parts");
      k_gather<<<vxgpu::grid_of(total, 256), 256, 0, stream>>>(d_buf, d_idx[1], total, d_sorted);
      VX_CU(cudaGetLastError(), "sorting the parts");
      if (h) touch_pages(h, (size_t)total * sizeof(crec)); /* while the device works */
      VX_CU(cudaStreamSynchronize(stream), "sorting the parts");
      double tb = vxgpu::now_s();
      if (sec) sec[1] = tb - tc;
      if (sink) {
        /* the sink's work counts as the copy's time here: its caller times its own */
        if ((st = hand_over(sink, d_sorted, total, stream, err)) != VX_OK) goto done;
      } else {
        VX_CU(vxgpu::copy_back(h, d_sorted, (size_t)total * sizeof(crec)),
              "copying the parts back");
      }
      if (sec) sec[2] = vxgpu::now_s() - tb;
      *sorted = 1;
      *recs = h;
      *n = total;
      h = NULL;
      goto done;
    }
    /* else the records in batches of items that fit half the free device memory */
    if (!(h = host_records(total, err))) {
      st = VX_ERR_NOMEM;
      goto done;
    }
    uint64_t cap = std::min<uint64_t>(total, free_b / 2 / sizeof(crec));
    if (total && cap == 0) {
      st = vx_error_set(err, VX_ERR_NOMEM, "GPU: no device memory for the colour parts");
      goto done;
    }
    if (total) VX_CU(dev_alloc(&d_buf, cap, stream), "writing the parts");
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
      k_emit<<<vxgpu::grid_of(i1 - i0, BLOCK), BLOCK, 0, stream>>>(a, d_start, d_x0, d_off, NULL, i0, i1 - i0,
                                                         off[i0], d_buf);
      VX_CU(cudaGetLastError(), "writing the parts");
      if (i0 == 0) touch_pages(h, (size_t)total * sizeof(crec)); /* while the device works */
      /* the copy below runs on a stream of its own: the kernel must be done */
      VX_CU(cudaStreamSynchronize(stream), "writing the parts");
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
  dev_free(&d_tri, stream);
  dev_free(&d_pos, stream);
  dev_free(&d_uv, stream);
  dev_free(&d_lut, stream);
  dev_free(&d_mat, stream);
  dev_free(&d_corner, stream);
  dev_free(&d_texels, stream);
  dev_free(&d_mats, stream);
  dev_free(&d_views, stream);
  dev_free(&d_cnt, stream);
  dev_free(&d_off, stream);
  dev_free(&d_start, stream);
  dev_free(&d_x0, stream);
  dev_free(&d_wide, stream);
  dev_free(&d_wlist, stream);
  dev_free(&d_tmp, stream);
  dev_free(&d_buf, stream);
  dev_free(&d_sorted, stream);
  dev_free(&d_list, stream);
  for (int k = 0; k < 2; k++) {
    dev_free(&d_key[k], stream);
    dev_free(&d_idx[k], stream);
  }
  if (stream) {
    cudaStreamSynchronize(stream); /* the host arrays it reads live until here */
    cudaStreamDestroy(stream);
  }
  vx_free(h);
  return st;
}
