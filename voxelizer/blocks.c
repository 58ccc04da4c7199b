/* SPDX-License-Identifier: Apache-2.0 */
/* blocks.c - conservative surface voxelization, block by block, on all cores.
 *
 * Algorithm
 * 1. Binning (one thread, two passes: count, then fill): the grid is cut into aligned blocks of
 *    B^3 voxels, B = 2^k (32 by default, larger at high resolutions so that there are at most 128
 *    blocks per axis). A triangle goes to every block that its voxel range, grown by one voxel
 *    (the halo the corners on the block's faces need), touches and whose grown box the triangle
 *    overlaps. Lists are filled in triangle order, so each block's triangles are ascending.
 * 2. Blocks in Morton order, pulled from a shared counter by a pool of pthreads. For each of its
 *    triangles a block tests the voxels of its range clipped to the block and halo, first by
 *    aligned 4^3 tiles (a slightly enlarged tile box, so the tile test never rejects what the
 *    exact voxel test would accept), then voxel by voxel with the closed triangle/box test
 *    (overlap.h, Akenine-Moller 2001). Voxels in the block are surface voxels; every (voxel,
 *    triangle) pair feeds the corner field (field.c).
 * 3. Each block sorts its local Morton codes; an aligned block is a contiguous Morton range, so
 *    concatenating the blocks in Morton order gives the globally sorted list (the partitioning of
 *    Baert, Lagae & Dutre 2013, which the out-of-core build reuses).
 * Every decision is made in global grid coordinates from the same inputs, so the voxels and corner
 * values do not depend on B, on the number of threads, or on the order blocks finish in.
 */
#include "sys/system.h"
#include "voxelizer/internal.h"
#include "voxelizer/overlap.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void vx_surface_free(vx_surface *s) {
  if (!s) return;
  vx_free(s->codes);
  vx_free(s->field);
  memset(s, 0, sizeof *s);
}

static int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

typedef struct job {
  const vx_soup *mesh;
  const vx_transform *xf;
  const vx_sign_data *sign;
  const vx_bins *bins;
  uint32_t blog;
  float band;
  atomic_uint_fast64_t next;
  atomic_int stop;
  uint64_t **out_codes;
  vx_voxel **out_field;
  uint64_t *out_count;
  pthread_mutex_t mu;
  uint64_t done, corners, pair_tests;
  vx_status status;
  vx_error err;
  vx_progress_fn progress;
  void *user;
  vx_pair_pool *pool;
} job;

void vx_block_release(vx_block *b) {
  if (b->pool && b->pool_held) __atomic_fetch_sub(&b->pool->used, b->pool_held, __ATOMIC_RELAXED);
  vx_free(b->tg);
  vx_free(b->surf);
  vx_free(b->list);
  vx_free(b->pair_vox);
  vx_free(b->pair_tri);
  vx_free(b->cneed);
  vx_free(b->cd2);
  vx_free(b->ctri);
  vx_free(b->clast);
  vx_free(b->cval);
  vx_free(b->clist);
  memset(b, 0, sizeof *b);
}

int vx_block_init(vx_block *b, uint32_t B, float band, const vx_sign_data *sign) {
  memset(b, 0, sizeof *b);
  uint64_t v = (uint64_t)B * B * B, c = ((uint64_t)B + 1) * (B + 1) * (B + 1);
  b->B = B;
  b->band = band;
  b->sign = sign;
  b->surf = (uint8_t *)vx_calloc(v, 1);
  b->list = (uint32_t *)vx_malloc(v * sizeof(uint32_t));
  b->cneed = (uint8_t *)vx_calloc(c, 1);
  b->cd2 = (double *)vx_malloc(c * sizeof(double));
  b->ctri = (uint32_t *)vx_malloc(c * sizeof(uint32_t));
  b->clast = (uint32_t *)vx_malloc(c * sizeof(uint32_t));
  b->cval = (int8_t *)vx_malloc(c);
  b->clist = (uint32_t *)vx_malloc(c * sizeof(uint32_t));
  b->list_cap = v;
  b->clist_cap = c;
  return b->surf && b->list && b->cneed && b->cd2 && b->ctri && b->clast && b->cval && b->clist;
}

/* Moves the block's share of the pool from `old` to `now` bytes: 0 when the pool has no room
 * (nothing charged then). */
static int pool_charge(vx_block *b, uint64_t old, uint64_t now) {
  if (!b->pool || now <= old) {
    if (b->pool && now < old) {
      __atomic_fetch_sub(&b->pool->used, old - now, __ATOMIC_RELAXED);
      b->pool_held -= old - now;
    }
    return 1;
  }
  uint64_t d = now - old, u = __atomic_fetch_add(&b->pool->used, d, __ATOMIC_RELAXED);
  if (b->pool->cap && u + d > b->pool->cap) {
    __atomic_fetch_sub(&b->pool->used, d, __ATOMIC_RELAXED);
    return 0;
  }
  b->pool_held += d;
  return 1;
}

/* 1: grown; 0: out of memory; -1: over the pool. */
static int push_pair(vx_block *b, uint32_t vox, uint32_t tri) {
  if (b->npairs == b->pair_cap) {
    uint64_t cap = b->pair_cap ? b->pair_cap * 2 : 4096;
    if (!pool_charge(b, b->pair_cap * 8, cap * 8)) return -1;
    uint32_t *pv = (uint32_t *)vx_realloc(b->pair_vox, cap * sizeof(uint32_t));
    if (!pv) return 0;
    b->pair_vox = pv;
    uint32_t *pt = (uint32_t *)vx_realloc(b->pair_tri, cap * sizeof(uint32_t));
    if (!pt) return 0;
    b->pair_tri = pt;
    b->pair_cap = cap;
  }
  b->pair_vox[b->npairs] = vox;
  b->pair_tri[b->npairs] = tri;
  b->npairs++;
  return 1;
}

/* Records an overlap of local triangle t with global voxel (x, y, z), which lies in the block or
 * its halo. */
static int record(vx_block *b, uint32_t t, int64_t x, int64_t y, int64_t z) {
  int64_t B = b->B, H = B + 2;
  int64_t lx = x - b->org[0], ly = y - b->org[1], lz = z - b->org[2];
  int r = push_pair(b, (uint32_t)((lx + 1) + (ly + 1) * H + (lz + 1) * H * H), t);
  if (r != 1) return r;
  if (lx >= 0 && ly >= 0 && lz >= 0 && lx < B && ly < B && lz < B) {
    uint32_t m = (uint32_t)vx_morton_encode((uint32_t)lx, (uint32_t)ly, (uint32_t)lz);
    if (!b->surf[m]) {
      b->surf[m] = 1;
      b->list[b->nlist++] = m;
    }
  }
  return 1;
}

/* Tests triangle t against the voxels [lo, hi]; returns 1, or record's failure (0, -1). */
static int scan_range(vx_block *b, uint32_t t, const double *g, const int64_t lo[3],
                      const int64_t hi[3]) {
  for (int64_t z = lo[2]; z <= hi[2]; z++)
    for (int64_t y = lo[1]; y <= hi[1]; y++)
      for (int64_t x = lo[0]; x <= hi[0]; x++) {
        b->pair_tests++;
        if (vx_tri_voxel_overlap(g, x, y, z)) {
          int r = record(b, t, x, y, z);
          if (r != 1) return r;
        }
      }
  return 1;
}

vx_status vx_block_error(const vx_block *b, vx_status st, uint64_t k, uint64_t nwork,
                         vx_error *err) {
  if (st != VX_ERR_LIMIT)
    return vx_error_set(err, st, "out of memory voxelizing block %llu of %llu",
                        (unsigned long long)k, (unsigned long long)nwork);
  if (b->wind_over)
    return vx_wind_limit_error(__atomic_load_n(&b->pool->wind_excess, __ATOMIC_RELAXED),
                               b->pool->limit, err);
  char a[32], c[32];
  return vx_error_set(err, VX_ERR_LIMIT,
                      "the %u^3 block at voxel (%lld, %lld, %lld) holds %llu triangles and %llu "
                      "(voxel, triangle) overlaps so far: their coordinates and overlaps, with the "
                      "other blocks', would pass the %s that the memory limit of %s leaves for "
                      "them (triangles stacked on one another?)",
                      b->B, (long long)b->org[0], (long long)b->org[1], (long long)b->org[2],
                      (unsigned long long)b->ntris, (unsigned long long)b->npairs,
                      vx_bytes_text(b->pool ? (double)b->pool->cap : 0.0, a, sizeof a),
                      vx_bytes_text(b->pool ? (double)b->pool->limit : 0.0, c, sizeof c));
}

static int scan_triangle(vx_block *b, uint32_t t, int64_t R) {
  const double *g = b->tg + (uint64_t)t * 9;
  int64_t lo[3], hi[3];
  if (!vx_tri_voxel_range(g, R, lo, hi)) return 1;
  uint64_t vol = 1;
  for (int i = 0; i < 3; i++) {
    int64_t a = b->org[i] - 1, e = b->org[i] + b->B;
    if (lo[i] < a) lo[i] = a;
    if (hi[i] > e) hi[i] = e;
    if (lo[i] > hi[i]) return 1;
    vol *= (uint64_t)(hi[i] - lo[i] + 1);
  }
  if (vol <= 64) return scan_range(b, t, g, lo, hi);
  /* Large triangle: aligned 4^3 tiles first. The tile box is grown by 1e-3 voxel so that rounding
   * in its axis tests can never reject a voxel the exact test accepts. */
  int64_t tlo[3], thi[3];
  for (int i = 0; i < 3; i++) {
    tlo[i] = floor_div(lo[i], 4);
    thi[i] = floor_div(hi[i], 4);
  }
  /* Aligned 16^3 groups of tiles first (their box, grown by 1e-3 voxel, holds every grown tile
   * box in it): a sliver through a large block tests the groups it crosses, not all its tiles.
   * The order of a triangle's pairs does not matter to the field (field.c). */
  int64_t slo[3], shi[3];
  for (int i = 0; i < 3; i++) {
    slo[i] = floor_div(lo[i], 16);
    shi[i] = floor_div(hi[i], 16);
  }
  const double h[3] = {2.001, 2.001, 2.001}, hs[3] = {8.001, 8.001, 8.001};
  for (int64_t sz = slo[2]; sz <= shi[2]; sz++)
    for (int64_t sy = slo[1]; sy <= shi[1]; sy++)
      for (int64_t sx = slo[0]; sx <= shi[0]; sx++) {
        const int64_t so[3] = {sx * 4, sy * 4, sz * 4}; /* its first tile */
        if (vol > 4096) {
          double cs[3] = {(double)(sx * 16 + 8), (double)(sy * 16 + 8), (double)(sz * 16 + 8)};
          b->pair_tests++;
          if (!vx_tri_box_overlap(g, cs, hs)) continue;
        }
        int64_t ta[3], te[3];
        for (int i = 0; i < 3; i++) {
          ta[i] = so[i] > tlo[i] ? so[i] : tlo[i];
          te[i] = so[i] + 3 < thi[i] ? so[i] + 3 : thi[i];
        }
        for (int64_t tz = ta[2]; tz <= te[2]; tz++)
          for (int64_t ty = ta[1]; ty <= te[1]; ty++)
            for (int64_t tx = ta[0]; tx <= te[0]; tx++) {
              double c[3] = {(double)(tx * 4 + 2), (double)(ty * 4 + 2), (double)(tz * 4 + 2)};
              b->pair_tests++;
              if (!vx_tri_box_overlap(g, c, h)) continue;
              int64_t a[3] = {tx * 4, ty * 4, tz * 4}, e[3] = {tx * 4 + 3, ty * 4 + 3, tz * 4 + 3};
              for (int i = 0; i < 3; i++) {
                if (a[i] < lo[i]) a[i] = lo[i];
                if (e[i] > hi[i]) e[i] = hi[i];
              }
              int r = scan_range(b, t, g, a, e);
              if (r != 1) return r;
            }
      }
  return 1;
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

/* Processes work item k into j->out_*[k]. Returns VX_OK or VX_ERR_NOMEM. */
vx_status vx_block_run(vx_block *b, const vx_soup *mesh, const vx_transform *xf,
                       const vx_bins *bins, uint64_t bm, uint64_t *corners) {
  const int64_t B = (int64_t)1 << bins->blog, R = (int64_t)1 << bins->grid_depth;
  uint32_t bx, by, bz;
  vx_morton_decode(bm, &bx, &by, &bz);
  b->org[0] = bins->org[0] + (int64_t)bx * B;
  b->org[1] = bins->org[1] + (int64_t)by * B;
  b->org[2] = bins->org[2] + (int64_t)bz * B;
  b->tris = bins->tris + bins->off[bm];
  b->ntris = bins->off[bm + 1] - bins->off[bm];
  if (corners) *corners = 0;
  if (b->ntris * 9 > b->tg_cap) {
    if (!pool_charge(b, b->tg_cap * sizeof(double), b->ntris * 9 * sizeof(double)))
      return VX_ERR_LIMIT;
    double *tg = (double *)vx_realloc(b->tg, b->ntris * 9 * sizeof(double));
    if (!tg) return VX_ERR_NOMEM;
    b->tg = tg;
    b->tg_cap = b->ntris * 9;
  }
  for (uint64_t t = 0; t < b->ntris; t++) vx_grid_tri(mesh, xf, b->tris[t], b->tg + t * 9);
  for (uint64_t t = 0; t < b->ntris; t++) {
    int r = scan_triangle(b, (uint32_t)t, R);
    if (r != 1) return r < 0 ? VX_ERR_LIMIT : VX_ERR_NOMEM;
  }
  uint64_t c = vx_block_field(b);
  if (corners) *corners = c;
  if (!vx_block_wind_flush(b)) return VX_ERR_LIMIT;
  qsort(b->list, b->nlist, sizeof(uint32_t), cmp_u32);
  return VX_OK;
}

void vx_block_take(vx_block *b, vx_voxel *field) {
  const uint64_t C = (uint64_t)b->B + 1;
  if (field)
    for (uint64_t i = 0; i < b->nlist; i++) {
      uint32_t x, y, z;
      vx_morton_decode(b->list[i], &x, &y, &z);
      for (int c = 0; c < 8; c++)
        field[i].c[c] = b->cval[(x + (c & 1)) + (y + (c >> 1 & 1)) * C + (z + (c >> 2 & 1)) * C * C];
    }
  if (field) vx_block_thin_fix(b, field);
  for (uint64_t i = 0; i < b->nlist; i++) b->surf[b->list[i]] = 0;
  for (uint64_t i = 0; i < b->nclist; i++) b->cneed[b->clist[i]] = 0;
  b->nlist = b->nclist = b->npairs = 0;
}

/* Processes work item k into j->out_*[k]. Returns VX_OK or VX_ERR_NOMEM. */
static vx_status process_block(job *j, vx_block *b, uint64_t k) {
  uint64_t bm = j->bins->work[k], corners = 0;
  vx_status st = vx_block_run(b, j->mesh, j->xf, j->bins, bm, &corners);
  uint64_t n = b->nlist;
  uint64_t *codes = NULL;
  vx_voxel *field = NULL;
  if (st == VX_OK) {
    codes = (uint64_t *)vx_malloc((n ? n : 1) * sizeof(uint64_t));
    field = (vx_voxel *)vx_malloc((n ? n : 1) * sizeof(vx_voxel));
    if (!codes || !field) st = VX_ERR_NOMEM;
  }
  if (st == VX_OK) {
    for (uint64_t i = 0; i < n; i++) codes[i] = bm << (3 * j->blog) | b->list[i];
    j->out_codes[k] = codes;
    j->out_field[k] = field;
    j->out_count[k] = n;
    pthread_mutex_lock(&j->mu);
    j->corners += corners;
    pthread_mutex_unlock(&j->mu);
  } else {
    vx_free(codes);
    vx_free(field);
    field = NULL;
  }
  if (st != VX_OK) {
    pthread_mutex_lock(&j->mu);
    if (j->status == VX_OK) j->status = vx_block_error(b, st, k, j->bins->nwork, &j->err);
    pthread_mutex_unlock(&j->mu);
  }
  vx_block_take(b, field);
  return st;
}

static void *worker(void *arg) {
  job *j = (job *)arg;
  vx_block b;
  int ok = vx_block_init(&b, 1u << j->blog, j->band, j->sign);
  b.pool = j->pool;
  if (!ok) {
    vx_block_release(&b);
    pthread_mutex_lock(&j->mu);
    if (j->status == VX_OK)
      j->status = vx_error_set(&j->err, VX_ERR_NOMEM, "cannot allocate a %u^3 block's scratch",
                               1u << j->blog);
    pthread_mutex_unlock(&j->mu);
    atomic_store(&j->stop, 1);
    return NULL;
  }
  for (;;) {
    if (atomic_load(&j->stop)) break;
    uint64_t k = atomic_fetch_add(&j->next, 1);
    if (k >= j->bins->nwork) break;
    vx_status st = process_block(j, &b, k);
    pthread_mutex_lock(&j->mu);
    j->pair_tests += b.pair_tests;
    b.pair_tests = 0;
    if (st != VX_OK) atomic_store(&j->stop, 1); /* process_block set the status */
    j->done++;
    if (st == VX_OK && j->progress &&
        j->progress(j->user, "voxelize", (double)j->done / (double)j->bins->nwork)) {
      if (j->status == VX_OK)
        j->status = vx_error_set(&j->err, VX_ERR_INTERRUPTED, "voxelization cancelled");
      atomic_store(&j->stop, 1);
    }
    pthread_mutex_unlock(&j->mu);
  }
  vx_block_release(&b);
  return NULL;
}

/* One triangle's bins within the blocks [bl, bh]. */
typedef struct bin_walk {
  const double *g;
  int64_t B, bl[3], bh[3];
  double org[3]; /* the region's minimum voxel (block (0,0,0) starts there) */
  int many, pass;
  uint32_t t;
  uint64_t *off;
  uint32_t *tris;
} bin_walk;

/* The blocks of the aligned cube of `size` blocks at block (x, y, z) that the triangle's plane
 * reaches: a cube its plane misses (the cube of blocks with their halos, grown by 2e-3 voxel, holds
 * every block's test box below) is skipped whole, so a long sliver costs the blocks it crosses, not
 * its bounding box of blocks. The blocks kept are the ones the per-block test keeps. */
static void bin_cube(const bin_walk *w, int64_t x, int64_t y, int64_t z, int64_t size) {
  const int64_t c0[3] = {x, y, z};
  for (int i = 0; i < 3; i++)
    if (c0[i] > w->bh[i] || c0[i] + size - 1 < w->bl[i]) return;
  const double B = (double)w->B;
  if (size > 1) {
    double hh = 0.5 * (double)size * B + 1.002;
    double c[3] = {((double)x + 0.5 * (double)size) * B + w->org[0],
                   ((double)y + 0.5 * (double)size) * B + w->org[1],
                   ((double)z + 0.5 * (double)size) * B + w->org[2]};
    double h[3] = {hh, hh, hh};
    if (!vx_tri_box_overlap(w->g, c, h)) return;
    const int64_t s2 = size / 2;
    for (int k = 0; k < 8; k++)
      bin_cube(w, x + (k & 1) * s2, y + (k >> 1 & 1) * s2, z + (k >> 2 & 1) * s2, s2);
    return;
  }
  /* A large triangle skips the blocks its plane misses: the block with its halo, grown by 1e-3
   * voxel so that rounding never drops a block the voxel test would use. */
  double c[3] = {((double)x + 0.5) * B + w->org[0], ((double)y + 0.5) * B + w->org[1],
                 ((double)z + 0.5) * B + w->org[2]};
  double h[3] = {0.5 * B + 1.001, 0.5 * B + 1.001, 0.5 * B + 1.001};
  if (w->many && !vx_tri_box_overlap(w->g, c, h)) return;
  uint64_t bm = vx_morton_encode((uint32_t)x, (uint32_t)y, (uint32_t)z);
  if (w->pass == 0)
    w->off[bm]++;
  else
    w->tris[w->off[bm]++] = w->t;
}

/* Fills the bins of the region whose minimum voxel is org (nb blocks per axis) in a grid of R
 * voxels per axis: counts (pass 0) or triangle lists (pass 1). */
static void bin_pass(const vx_soup *m, const vx_transform *xf, int64_t R, const int64_t org[3],
                     int64_t nb, uint32_t blog, const uint32_t *cand, uint64_t ncand, int pass,
                     uint64_t *off, uint32_t *tris) {
  const int64_t B = (int64_t)1 << blog;
  bin_walk w;
  memset(&w, 0, sizeof w);
  w.B = B;
  w.pass = pass;
  w.off = off;
  w.tris = tris;
  for (int i = 0; i < 3; i++) w.org[i] = (double)org[i];
  const uint64_t n = cand ? ncand : m->tri_count;
  for (uint64_t c = 0; c < n; c++) {
    const uint64_t t = cand ? cand[c] : c;
    double g[9];
    int64_t lo[3], hi[3];
    vx_grid_tri(m, xf, t, g);
    if (!vx_tri_voxel_range(g, R, lo, hi)) continue;
    int64_t ext = 1;
    int outside = 0;
    for (int i = 0; i < 3; i++) {
      w.bl[i] = floor_div(lo[i] - 1 - org[i], B);
      w.bh[i] = floor_div(hi[i] + 1 - org[i], B);
      if (w.bh[i] < 0 || w.bl[i] > nb - 1) outside = 1;
      if (w.bl[i] < 0) w.bl[i] = 0;
      if (w.bh[i] > nb - 1) w.bh[i] = nb - 1;
      while (ext < nb && (w.bl[i] / ext != w.bh[i] / ext)) ext *= 2;
    }
    if (outside) continue; /* another tile's triangle */
    w.g = g;
    w.t = (uint32_t)t;
    w.many = w.bl[0] != w.bh[0] || w.bl[1] != w.bh[1] || w.bl[2] != w.bh[2];
    /* the smallest aligned cube of blocks holding [bl, bh] */
    bin_cube(&w, w.bl[0] / ext * ext, w.bl[1] / ext * ext, w.bl[2] / ext * ext, ext);
  }
}

uint32_t vx_block_log2(uint32_t depth, uint32_t requested) {
  uint32_t blog = requested;
  if (blog == 0) {
    blog = 5;
    while (depth > blog && depth - blog > 7) blog++; /* at most 128 blocks per axis */
  }
  return blog > depth ? depth : blog;
}

void vx_bins_free(vx_bins *b) {
  if (!b) return;
  vx_free(b->off);
  vx_free(b->tris);
  vx_free(b->work);
  memset(b, 0, sizeof *b);
}

vx_status vx_bins_build(const vx_soup *mesh, const vx_transform *xf, uint32_t depth,
                        uint32_t blog, uint64_t mem_limit, vx_bins *out, vx_error *err) {
  return vx_bins_build_region(mesh, xf, depth, depth, 0, NULL, 0, blog, mem_limit, out, err);
}

vx_status vx_bins_build_region(const vx_soup *mesh, const vx_transform *xf, uint32_t grid_depth,
                               uint32_t depth, uint64_t region, const uint32_t *cand,
                               uint64_t ncand, uint32_t blog, uint64_t mem_limit, vx_bins *out,
                               vx_error *err) {
  memset(out, 0, sizeof *out);
  for (uint64_t i = 0; cand && i < ncand; i++)
    if (cand[i] >= mesh->tri_count || (i > 0 && cand[i] <= cand[i - 1]))
      return vx_error_set(err, VX_ERR_INVALID_ARG, "candidate triangle %llu out of order or range",
                          (unsigned long long)i);
  if (depth < VX_MIN_DEPTH || depth > VX_MAX_DEPTH)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "grid depth %u outside [%d, %d]", depth,
                        VX_MIN_DEPTH, VX_MAX_DEPTH);
  if (grid_depth < depth || grid_depth > VX_MAX_TILED_DEPTH ||
      (grid_depth - depth < 21 && (region >> 3 * (grid_depth - depth)) != 0))
    return vx_error_set(err, VX_ERR_INVALID_ARG, "region %llu of level %u outside a 2^%u grid",
                        (unsigned long long)region, grid_depth - depth, grid_depth);
  if (mesh->tri_count == 0) return vx_error_set(err, VX_ERR_EMPTY, "the mesh has no triangles");
  if (mesh->tri_count > UINT32_MAX)
    return vx_error_set(err, VX_ERR_LIMIT, "more than 2^32 - 1 triangles");
  if (blog > depth) blog = depth;
  if (blog > 8)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "block size 2^%u too large (at most 256)", blog);
  const int64_t R = (int64_t)1 << depth, nb = R >> blog;
  const uint64_t nblocks = (uint64_t)(nb * nb * nb);
  if (nblocks > (UINT64_C(1) << 27))
    return vx_error_set(err, VX_ERR_LIMIT, "%llu blocks of 2^%u voxels: too many",
                        (unsigned long long)nblocks, blog);
  uint32_t rx, ry, rz;
  vx_morton_decode(region, &rx, &ry, &rz);
  out->grid_depth = grid_depth;
  out->org[0] = (int64_t)rx << depth;
  out->org[1] = (int64_t)ry << depth;
  out->org[2] = (int64_t)rz << depth;
  out->depth = depth;
  out->blog = blog;
  out->nblocks = nblocks;
  uint64_t *off = (uint64_t *)vx_calloc(nblocks + 1, sizeof(uint64_t));
  if (!off)
    return vx_error_set(err, VX_ERR_NOMEM, "cannot allocate %llu block bins",
                        (unsigned long long)nblocks);
  out->off = off;
  const int64_t RG = (int64_t)1 << grid_depth;
  bin_pass(mesh, xf, RG, out->org, nb, blog, cand, ncand, 0, off, NULL);
  uint64_t total = 0, nwork = 0;
  for (uint64_t i = 0; i < nblocks; i++) {
    uint64_t c = off[i];
    off[i] = total;
    total += c;
    nwork += c != 0;
  }
  off[nblocks] = total;
  /* the entries (4 B) and the work list (8 B a block) against what the limit leaves */
  double need = (double)total * 4.0 + (double)nwork * 8.0, rss = (double)vx_resident_bytes();
  if (mem_limit && rss + need > (double)mem_limit) {
    char a[32], b[32];
    vx_bins_free(out);
    return vx_error_set(err, VX_ERR_LIMIT, "binning %llu triangles into %llu blocks takes %llu "
                        "entries (%s), over what the memory limit of %s leaves (triangles stacked "
                        "on one another?)", (unsigned long long)mesh->tri_count,
                        (unsigned long long)nwork, (unsigned long long)total,
                        vx_bytes_text(need, a, sizeof a),
                        vx_bytes_text((double)mem_limit, b, sizeof b));
  }
  out->tris = (uint32_t *)vx_malloc((total ? total : 1) * sizeof(uint32_t));
  out->work = (uint64_t *)vx_malloc((nwork ? nwork : 1) * sizeof(uint64_t));
  if (!out->tris || !out->work) {
    vx_bins_free(out);
    return vx_error_set(err, VX_ERR_NOMEM, "cannot allocate %llu triangle bin entries",
                        (unsigned long long)total);
  }
  bin_pass(mesh, xf, RG, out->org, nb, blog, cand, ncand, 1, off, out->tris); /* off[b] now ends bin b: shift back */
  memmove(off + 1, off, nblocks * sizeof(uint64_t));
  off[0] = 0;
  for (uint64_t i = 0; i < nblocks; i++)
    if (off[i + 1] > off[i]) out->work[out->nwork++] = i;
  out->entries = total;
  return VX_OK;
}

vx_status vx_surface_build(const vx_soup *mesh, const vx_transform *xf, uint32_t depth,
                           const vx_sign_data *sign, const vx_surface_opts *opts, vx_surface *out,
                           vx_voxelize_stats *stats, vx_error *err) {
  memset(out, 0, sizeof *out);
  if (!(opts->band > 0.0f))
    return vx_error_set(err, VX_ERR_INVALID_ARG, "field band must be positive");
  vx_bins bins;
  vx_status st = vx_bins_build(mesh, xf, depth, vx_block_log2(depth, opts->block_log2),
                                opts->mem_limit, &bins, err);
  if (st != VX_OK) return st;
  const uint64_t nwork = bins.nwork;
  job j;
  memset(&j, 0, sizeof j);
  j.mesh = mesh;
  j.xf = xf;
  j.sign = sign;
  j.bins = &bins;
  j.blog = bins.blog;
  j.band = opts->band;
  atomic_init(&j.next, 0);
  atomic_init(&j.stop, 0);
  j.progress = opts->progress;
  j.user = opts->user;
  j.status = VX_OK;
  /* the pairs may take half of what the limit leaves now (the blocks' results take the rest) */
  vx_pair_pool pool;
  memset(&pool, 0, sizeof pool);
  if (opts->mem_limit) {
    double rss = (double)vx_resident_bytes(), lim = (double)opts->mem_limit;
    pool.cap = rss < lim ? (uint64_t)((lim - rss) / 2) : 1;
    pool.limit = opts->mem_limit;
    pool.wind_cap = vx_wind_excess_cap(opts->mem_limit);
  }
  j.pool = &pool;
  j.out_codes = (uint64_t **)vx_calloc(nwork ? nwork : 1, sizeof(uint64_t *));
  j.out_field = (vx_voxel **)vx_calloc(nwork ? nwork : 1, sizeof(vx_voxel *));
  j.out_count = (uint64_t *)vx_calloc(nwork ? nwork : 1, sizeof(uint64_t));
  if (!j.out_codes || !j.out_field || !j.out_count) {
    st = vx_error_set(err, VX_ERR_NOMEM, "cannot allocate %llu block results",
                      (unsigned long long)nwork);
    goto done;
  }
  pthread_mutex_init(&j.mu, NULL);
  vx_parallel(vx_thread_count(opts->threads, nwork < 256 ? (int)(nwork ? nwork : 1) : 256), worker,
              &j);
  pthread_mutex_destroy(&j.mu);
  if (j.status != VX_OK) {
    st = j.status;
    if (err) *err = j.err;
    goto done;
  }
  {
    uint64_t n = 0;
    for (uint64_t k = 0; k < nwork; k++) n += j.out_count[k];
    out->codes = (uint64_t *)vx_malloc((n ? n : 1) * sizeof(uint64_t));
    out->field = (vx_voxel *)vx_malloc((n ? n : 1) * sizeof(vx_voxel));
    if (!out->codes || !out->field) {
      vx_surface_free(out);
      st = vx_error_set(err, VX_ERR_NOMEM, "cannot allocate %llu surface voxels",
                        (unsigned long long)n);
      goto done;
    }
    uint64_t at = 0;
    for (uint64_t k = 0; k < nwork; k++) {
      memcpy(out->codes + at, j.out_codes[k], j.out_count[k] * sizeof(uint64_t));
      memcpy(out->field + at, j.out_field[k], j.out_count[k] * sizeof(vx_voxel));
      at += j.out_count[k];
    }
    out->count = n;
  }
  if (stats) {
    stats->triangles = mesh->tri_count;
    stats->surface_voxels = out->count;
    stats->corners = j.corners;
    stats->pair_tests = j.pair_tests;
  }
done:
  if (j.out_codes)
    for (uint64_t k = 0; k < nwork; k++) {
      vx_free(j.out_codes[k]);
      vx_free(j.out_field[k]);
    }
  vx_free(j.out_codes);
  vx_free(j.out_field);
  vx_free(j.out_count);
  vx_bins_free(&bins);
  return st;
}
