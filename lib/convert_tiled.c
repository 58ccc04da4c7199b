/* SPDX-License-Identifier: Apache-2.0 */
/* convert_tiled.c - a mesh to a tiled .svo (formats/svo_tiled.h): grids finer than one tree
 * holds (up to 2^VX_MAX_TILED_DEPTH per axis), or any grid cut into tiles on request.
 *
 * 1. The mesh without its exact duplicates, the grid's transform and the sign tables of the whole
 *    mesh, once (signs need every triangle; the tiles share them).
 * 2. Each triangle goes to every tile its voxel range, grown by the one-voxel halo the corners on
 *    a tile's faces need, touches: (tile, triangle) pairs, sorted (on all cores), so each tile
 *    has its triangles in ascending order.
 * 3. Tiles in Morton order, each built whole on the GPU when its tree fits in memory
 *    (vx_voxelize_tile_gpu: surface, octree and planes there), else by the streaming build
 *    restricted to its cell (vx_voxelize_tile: the surface on the GPU or in blocks on all cores,
 *    the octree in blocks, spilling under the memory limit); the same bits every way, in the
 *    grid's own coordinates, so a tile is bit for bit the subtree of the untiled build below its
 *    cell. With a max error, each tile is pruned (on the GPU before its tree comes back,
 *    vx_stream_prune on the stream, the same bits) and nothing above the tiles' roots is: a tile
 *    stays a tree of its own in the file, written before the nodes above it are known. A
 *    coloured build's tile is coloured in the grid's coordinates from the triangles that reach
 *    its cell: block by block in the streaming build, or, built whole on the GPU, with its
 *    triangle parts made there and summed over its tree (color_tile_gpu), the same bytes. Each
 *    finished tile is encoded (in memory, or through a temporary file when it spilled) and
 *    appended to the output; only its root's node and fit are kept.
 * 4. The writer fits the top tree over the roots and commits the file.
 * Nothing depends on where or in which order tiles are built: a tile's bytes are a function of
 * the mesh, the options and its cell. Steps 1 and 2 are the plan (vx_tile_plan_init), step 3 for
 * one tile vx_tile_plan_run: the pool below runs them in one process, tile_tasks.c hands them to
 * other processes (each makes its own plan) and merges their files.
 */
#define _POSIX_C_SOURCE 200809L
#include "lib/convert_tiled.h"
#include "svo/gpu_tree.h"
#include "svo/stream.h"
#include "sys/atomic_file.h"
#include "sys/sort.h"
#include "sys/system.h"
#include "voxelizer/color_block.h"
#include "voxelizer/hash_parts.h"
#include "voxelizer/overlap.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

struct vx_tile_tri {
  uint64_t code;
  uint32_t tri;
  float work; /* the triangle's area in the tile, roughly (its box's share): the tiles' order */
};
typedef vx_tile_tri tile_tri;

static int cmp_tile_tri(const void *a, const void *b) {
  const tile_tri *x = (const tile_tri *)a, *y = (const tile_tri *)b;
  if (x->code != y->code) return x->code < y->code ? -1 : 1;
  return x->tri < y->tri ? -1 : x->tri > y->tri;
}

/* Triangle t's (tile, triangle) pairs into out (NULL: counted only); their number. */
static uint64_t tri_pairs(const vx_soup *m, const vx_transform *xf, uint32_t D, uint32_t T,
                          uint64_t t, tile_tri *out) {
  const int64_t R = (int64_t)1 << D, nt = (int64_t)1 << (D - T);
  double g[9];
  int64_t lo[3], hi[3], a[3], b[3];
  vx_grid_tri(m, xf, t, g);
  if (!vx_tri_voxel_range(g, R, lo, hi)) return 0;
  for (int i = 0; i < 3; i++) {
    a[i] = lo[i] - 1 < 0 ? 0 : (lo[i] - 1) >> T;
    b[i] = (hi[i] + 1) >> T;
    if (b[i] > nt - 1) b[i] = nt - 1;
  }
  if (!out) return (uint64_t)(b[0] - a[0] + 1) * (uint64_t)(b[1] - a[1] + 1) *
                   (uint64_t)(b[2] - a[2] + 1);
  const double area = vx_grid_tri_area(g);
  const double box = (double)(hi[0] - lo[0] + 1) * (double)(hi[1] - lo[1] + 1) *
                     (double)(hi[2] - lo[2] + 1);
  uint64_t k = 0;
  for (int64_t z = a[2]; z <= b[2]; z++)
    for (int64_t y = a[1]; y <= b[1]; y++)
      for (int64_t x = a[0]; x <= b[0]; x++) {
        const int64_t c[3] = {x, y, z};
        double in = 1.0; /* the triangle's box inside the tile */
        for (int i = 0; i < 3; i++) {
          const int64_t a0 = c[i] << T, a1 = ((c[i] + 1) << T) - 1;
          const int64_t l = lo[i] > a0 ? lo[i] : a0, h = hi[i] < a1 ? hi[i] : a1;
          in *= h >= l ? (double)(h - l + 1) : 0.0;
        }
        out[k].code = vx_morton_encode((uint32_t)x, (uint32_t)y, (uint32_t)z);
        out[k].work = (float)(area * in / box);
        out[k++].tri = (uint32_t)t;
      }
  return k;
}

typedef struct pairs_job {
  const vx_soup *m;
  const vx_transform *xf;
  uint32_t D, T;
  uint64_t *at; /* per range of triangles: its pairs, then where they start */
  tile_tri *p;
} pairs_job;

static void count_pairs(void *ctx, uint64_t a, uint64_t b) {
  pairs_job *j = (pairs_job *)ctx;
  uint64_t n = 0;
  for (uint64_t t = a; t < b; t++) n += tri_pairs(j->m, j->xf, j->D, j->T, t, NULL);
  j->at[a / VX_RANGE_CHUNK] = n;
}

static void fill_pairs(void *ctx, uint64_t a, uint64_t b) {
  pairs_job *j = (pairs_job *)ctx;
  tile_tri *out = j->p + j->at[a / VX_RANGE_CHUNK];
  for (uint64_t t = a; t < b; t++) out += tri_pairs(j->m, j->xf, j->D, j->T, t, out);
}

/* (tile, triangle) pairs of every triangle, sorted, on `threads` threads: counted by ranges of
 * triangles, written where each range's start, sorted by tile on all of them. */
static vx_status tile_pairs(const vx_soup *m, const vx_transform *xf, uint32_t D, uint32_t T,
                            uint64_t mem_limit, int threads, tile_tri **out, uint64_t *n,
                            vx_error *err) {
  const uint64_t ranges = (m->tri_count + VX_RANGE_CHUNK - 1) / VX_RANGE_CHUNK;
  pairs_job j = {m, xf, D, T, NULL, NULL};
  j.at = (uint64_t *)vx_malloc((size_t)(ranges ? ranges : 1) * sizeof *j.at);
  if (!j.at) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  vx_ranges_run(threads, m->tri_count, count_pairs, &j);
  const uint64_t k = vx_exclusive_sum(j.at, ranges);
  if ((double)k * sizeof *j.p > (double)mem_limit / 4) {
    vx_free(j.at);
    return vx_error_set(err, VX_ERR_LIMIT, "the triangles reach too many tiles (%llu pairs): use "
                        "larger tiles", (unsigned long long)k);
  }
  j.p = (tile_tri *)vx_malloc((size_t)(k ? k : 1) * sizeof *j.p);
  if (!j.p) {
    vx_free(j.at);
    return vx_error_set(err, VX_ERR_NOMEM, "out of memory for %llu (tile, triangle) pairs",
                        (unsigned long long)k);
  }
  vx_ranges_run(threads, m->tri_count, fill_pairs, &j);
  vx_free(j.at);
  /* written in triangle order: sorted by the tile's code, in (tile, triangle) order */
  void *p = j.p;
  vx_sort_records(&p, (size_t)k, sizeof *j.p, offsetof(tile_tri, code), 3 * (D - T),
                  cmp_tile_tri, threads);
  j.p = (tile_tri *)p;
  *out = j.p;
  *n = k;
  return VX_OK;
}

void vx_tile_out_free(vx_tile_out *r) {
  vx_free(r->bytes);
  if (r->path) unlink(r->path);
  vx_free(r->path);
  memset(r, 0, sizeof *r);
}

void vx_tile_plan_release(vx_tile_plan *p) {
  if (!p) return;
  if (p->source_free) p->source_free(p->source.ctx);
  vx_free(p->pairs);
  vx_free(p->cpairs);
  if (p->color) color_source_close(p->color);
  vx_free(p->color);
  vx_free(p->start);
  vx_free(p->work);
  vx_gpu_meshes_free(p->resident);
  vx_sign_free(&p->sign);
  vx_soup_free(&p->store);
  vx_free(p->tmp_dir);
  pthread_mutex_destroy(&p->mu);
  memset(p, 0, sizeof *p);
}

/* The plan holds the whole mesh's sign tables and its tile lists (at least one entry a triangle)
 * while every tile is built: refused before the work when their low estimate (the tables at the
 * peak of their construction, vx_sign_peak_bytes) does not fit beside what the process holds. */
static vx_status plan_fits(const vx_soup *m, const vx_convert_opts *o, vx_error *err) {
  if (!o->mem_limit) return VX_OK;
  const double held = (double)vx_resident_bytes(),
               plan = (double)m->tri_count * (vx_sign_peak_bytes(o->sign_rule) + 16.0);
  if (held + plan <= (double)o->mem_limit) return VX_OK;
  char a[32], b[32], c[32], d[32];
  return vx_error_set(err, VX_ERR_LIMIT,
                      "a tiled build of %llu triangles needs at least about %s before its first "
                      "tile (%s in use, %s for the whole mesh's sign tables and tile lists), over "
                      "the memory limit of %s", (unsigned long long)m->tri_count,
                      vx_bytes_text(held + plan, a, sizeof a), vx_bytes_text(held, b, sizeof b),
                      vx_bytes_text(plan, c, sizeof c),
                      vx_bytes_text((double)o->mem_limit, d, sizeof d));
}

vx_status vx_tile_plan_init(vx_tile_plan *p, const vx_soup *soup, const vx_convert_opts *o,
                            const char *tmp_dir, vx_error *err) {
  return vx_tile_plan_init_fixed(p, soup, o, tmp_dir, NULL, err);
}

vx_status vx_tile_plan_shell(vx_tile_plan *p, const vx_convert_opts *o, const char *tmp_dir,
                             vx_error *err) {
  memset(p, 0, sizeof *p);
  pthread_mutex_init(&p->mu, NULL);
  vx_voxelize_opts *bo = &p->bo;
  bo->resolution = o->resolution;
  bo->band = o->band;
  bo->threads = o->threads;
  bo->mem_limit = o->mem_limit;
  bo->sign_rule = o->sign_rule;
  bo->tile_depth = o->tile_depth;
  bo->max_error = o->max_error > 0.0f ? o->max_error : 0.0f; /* a GPU tile is pruned there */
  bo->gpu = o->device != VX_DEVICE_CPU; /* auto: the GPU while it works, then the CPU */
  p->auto_dev = o->device == VX_DEVICE_AUTO;
  /* tiles are compressed at zstd level 3 unless asked otherwise: the levels the one-tree writer
   * picks for small files (19 under 8 MiB, 9 under 64 MiB) cost most of a build of many tiles
   * (the dragon at 32768^3 in 129 tiles: 69 s compressing against 51 s building) */
  p->zstd_level = o->zstd_level ? o->zstd_level : 3;
  p->tmp_dir = vx_strdup(tmp_dir);
  if (!p->tmp_dir) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  return VX_OK;
}

uint64_t vx_tile_plan_code(const vx_tile_plan *p, uint64_t k) { return p->pairs[p->start[k]].code; }

vx_status vx_tile_plan_init_fixed(vx_tile_plan *p, const vx_soup *soup, const vx_convert_opts *o,
                                  const char *tmp_dir, const vx_tile_fixed *fx, vx_error *err) {
  const double t0 = vx_clock_seconds();
  vx_status s = vx_tile_plan_shell(p, o, tmp_dir, err);
  if (s != VX_OK) return s;
  vx_voxelize_opts *bo = &p->bo;
  if (fx) { /* the part of a mesh split by tile: the whole mesh's grid */
    p->grid = fx->xf;
    bo->grid = &p->grid;
  }
  if (fx && fx->unique) /* its duplicates already dropped */
    p->m = soup;
  else
    s = vx_voxelize_unique(soup, bo, &p->store, &p->m, &p->dropped, err);
  if (s != VX_OK) return s;
  const double tu = vx_clock_seconds();
  p->sec_unique = tu - t0;
  const vx_soup *m = p->m;
  vx_transform xf;
  uint32_t D = 0;
  float band = 0.0f;
  s = vx_voxelize_setup(m, bo, &xf, &D, &band, err);
  if (s == VX_OK) /* once, not per tile */
    s = vx_overlap_check(m, &xf, D, bo->mem_limit, bo->threads, NULL, err);
  p->sec_overlap = vx_clock_seconds() - tu;
  if (s == VX_OK) s = plan_fits(m, o, err);
  const uint32_t T = o->tile_depth;
  if (s == VX_OK && (T >= D || D - T > VX_MAX_DEPTH - 1))
    s = vx_error_set(err, VX_ERR_INVALID_ARG, "tiles of %u^3 in a %u^3 grid: a tile is smaller "
                     "than the grid and leaves at most %d levels above it", 1u << T, 1u << D,
                     VX_MAX_DEPTH - 1);
  const double ts = vx_clock_seconds();
  /* the sign tables' centroid test runs on the GPU of a GPU build (the CPU's flags, faster) */
  if (s == VX_OK)
    s = vx_sign_build_rule_ex(m, &xf, o->sign_rule, bo->gpu, o->threads, &p->sign, err);
  p->sec_sign = vx_clock_seconds() - ts;
  /* a GPU build uploads the mesh and tables once per device, for all its tiles; without the
   * shared copy (no CUDA) each build uploads its own */
  vx_error ignored;
  if (s == VX_OK && bo->gpu && vx_gpu_meshes_create(m, &xf, &p->sign, &p->resident, &ignored))
    p->resident = NULL;
  uint64_t npairs = 0;
  const double tp = vx_clock_seconds();
  if (s == VX_OK) s = tile_pairs(m, &xf, D, T, o->mem_limit, o->threads, &p->pairs, &npairs, err);
  p->sec_pairs = vx_clock_seconds() - tp;
  p->held = vx_resident_bytes();
  if (s != VX_OK) return s;
  /* the tiles: where each one's triangles start */
  uint64_t ntiles = 0;
  for (uint64_t i = 0; i < npairs; i++)
    ntiles += i == 0 || p->pairs[i].code != p->pairs[i - 1].code;
  p->start = (uint64_t *)vx_malloc((size_t)(ntiles + 1) * sizeof *p->start);
  p->work = (double *)vx_calloc((size_t)(ntiles ? ntiles : 1), sizeof *p->work);
  if (!p->start || !p->work) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  for (uint64_t i = 0, k = 0; i <= npairs; i++) {
    if (i == npairs || i == 0 || p->pairs[i].code != p->pairs[i - 1].code) {
      p->start[k] = i;
      if (k > 0 && p->start[k] - p->start[k - 1] > p->max_tris)
        p->max_tris = p->start[k] - p->start[k - 1];
      k++;
    }
    if (i < npairs) p->work[k - 1] += p->pairs[i].work;
  }
  p->ntiles = ntiles;
  vx_tiled_header *h = &p->h;
  h->depth = D;
  h->tile_depth = T;
  h->band = band;
  h->prune_error = bo->max_error; /* each tile pruned by it */
  h->xf = xf;
  /* the loaded triangles, copies included, as a split build hashes them while it reads */
  h->build_id = fx ? fx->build_id
                   : vx_tiled_build_id(soup->pos, (size_t)soup->tri_count * 9 * sizeof(float), D,
                                       T, band, o->sign_rule, h->prune_error);
  p->sec_plan = vx_clock_seconds() - t0;
  return VX_OK;
}

vx_status vx_tile_plan_color(vx_tile_plan *p, const vx_soup *soup, const vx_convert_opts *o,
                             vx_error *err) {
  if (!soup->color || o->color == VX_COLOR_OFF || soup->tri_count == 0) return VX_OK;
  if (soup->tri_count > UINT32_MAX)
    return vx_error_set(err, VX_ERR_LIMIT, "colour: more than 2^32 triangles");
  const double t0 = vx_clock_seconds();
  p->color = (color_source *)vx_calloc(1, sizeof *p->color);
  if (!p->color) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  vx_status s = color_source_open(p->color, soup, o->color_filter, err);
  if (s != VX_OK) {
    vx_free(p->color);
    p->color = NULL;
    return s;
  }
  /* the pyramids and the pairs (16 B each, at least one a triangle) beside what is held */
  const double need = (double)vx_resident_bytes() + (double)p->color->mip_bytes +
                      16.0 * (double)soup->tri_count;
  if (o->mem_limit && need > (double)o->mem_limit) {
    char a[32], b[32];
    return vx_error_set(err, VX_ERR_LIMIT, "the colours of a tiled build need at least about %s "
                        "beside the plan, over the memory limit of %s",
                        vx_bytes_text(need, a, sizeof a),
                        vx_bytes_text((double)o->mem_limit, b, sizeof b));
  }
  color_source_start(p->color);
  s = tile_pairs(soup, &p->h.xf, p->h.depth, p->h.tile_depth, o->mem_limit, o->threads,
                 &p->cpairs, &p->ncpairs, err);
  if (s != VX_OK) return s;
  p->h.color = 1;
  /* a coloured build's bytes differ from the grey one's: so does its id */
  const uint8_t tag[8] = {'c', 'o', 'l', 'o', 'r', (uint8_t)o->color_filter, 0, 0};
  uint32_t c = 0;
  if (vx_svo_encoded_check(tag, sizeof tag, &c, err) != VX_OK) return VX_ERR_NOMEM;
  p->h.build_id ^= (uint64_t)c << 16 | 0xc01u;
  p->sec_plan += vx_clock_seconds() - t0;
  return VX_OK;
}

/* Tile `code`'s triangles of the coloured soup: the span of p->cpairs (*n of them). */
static const tile_tri *color_span(const vx_tile_plan *p, uint64_t code, uint64_t *n) {
  uint64_t lo = 0, hi = p->ncpairs;
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (p->cpairs[mid].code < code) lo = mid + 1;
    else hi = mid;
  }
  uint64_t e = lo;
  while (e < p->ncpairs && p->cpairs[e].code == code) e++;
  *n = e - lo;
  return p->cpairs + lo;
}

/* The tree's arrays back into the worker's spare ones (pre), the larger kept: the next tile's
 * tree reuses pages already touched instead of faulting in fresh ones. */
static void keep_arrays(vx_octree *t, vx_octree_prealloc *pre) {
  if (!t->nodes || !t->voxels || !pre) return;
  if (!pre->nodes) { /* the tree took the spare arrays (pre keeps their sizes), or had none */
    if (pre->node_cap < t->node_count) pre->node_cap = t->node_count;
    if (pre->voxel_cap < t->voxel_count) pre->voxel_cap = t->voxel_count;
  } else { /* the spare ones were too small: the tree's own replace them */
    vx_free(pre->nodes);
    vx_free(pre->voxels);
    pre->node_cap = t->node_count;
    pre->voxel_cap = t->voxel_count;
  }
  pre->nodes = t->nodes;
  pre->voxels = t->voxels;
  t->nodes = NULL;
  t->voxels = NULL;
}

static uint64_t inner_nodes(const uint64_t *level_count, uint32_t depth) {
  uint64_t n = 0;
  for (uint32_t l = 0; l < depth; l++) n += level_count[l];
  return n;
}

/* A tree in memory to out_path (atomically), or into r->bytes. */
static vx_status put_tree(const vx_tile_plan *p, const vx_octree *t, const char *out_path,
                          vx_tile_out *r, vx_error *err) {
  vx_status s = vx_svo_encode(t, p->zstd_level, &r->bytes, &r->n, err);
  if (s == VX_OK && !out_path) /* here, beside the other workers, not in the writer's turn */
    s = vx_svo_encoded_check(r->bytes, r->n, &r->check, err);
  if (s != VX_OK || !out_path) return s;
  vx_atomic_file af;
  s = vx_atomic_open(&af, out_path, err);
  if (s == VX_OK) s = vx_atomic_write(&af, r->bytes, r->n, err);
  if (s == VX_OK) s = vx_atomic_commit(&af, err);
  else vx_atomic_abort(&af);
  vx_free(r->bytes);
  r->bytes = NULL;
  return s;
}

/* A temporary file for a finished tile in the plan's spill folder: r->path. */
static vx_status temp_tile(const vx_tile_plan *p, vx_tile_out *r, vx_error *err) {
  char path[4096];
  snprintf(path, sizeof path, "%s/voxlod-tile-XXXXXX", p->tmp_dir);
  int fd = mkstemp(path);
  if (fd < 0) return vx_error_set(err, VX_ERR_IO, "cannot create a temporary tile in %s", p->tmp_dir);
  close(fd);
  r->path = vx_strdup(path);
  if (!r->path) {
    unlink(path);
    return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  }
  return VX_OK;
}

static vx_status tile_build(vx_tile_plan *p, vx_voxelize_opts *bo,
                            const vx_stream_build_opts *xo, const char *out_path, vx_tile_out *r,
                            vx_error *err);

vx_status vx_tile_plan_run(vx_tile_plan *p, vx_voxelize_opts *bo, uint64_t k, uint32_t *tris,
                           vx_octree_prealloc *pre, const char *out_path, vx_tile_out *r,
                           vx_error *err) {
  memset(r, 0, sizeof *r);
  const uint64_t a = p->start[k], e = p->start[k + 1];
  for (uint64_t i = a; i < e; i++) tris[i - a] = p->pairs[i].tri;
  r->code = p->pairs[a].code;
  vx_stream_build_opts xo;
  memset(&xo, 0, sizeof xo);
  xo.sign = &p->sign;
  xo.tile_root = &r->fit;
  xo.tile_tris = tris;
  xo.tile_ntris = e - a;
  xo.tile_pre = pre;
  xo.gpu.resident = p->resident;
  bo->tile_code = r->code;
  uint32_t *ctris = NULL;
  if (p->color) { /* coloured: the triangles whose parts colour the tile */
    uint64_t nc = 0;
    const tile_tri *cs = color_span(p, r->code, &nc);
    ctris = (uint32_t *)vx_malloc((size_t)(nc ? nc : 1) * sizeof *ctris);
    if (!ctris) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
    for (uint64_t i = 0; i < nc; i++) ctris[i] = cs[i].tri;
    xo.tile_color = p->color;
    xo.tile_color_tris = ctris;
    xo.tile_color_ntris = nc;
    xo.tile_color_root = &r->color_root;
    xo.tile_color_has = &r->color_has;
  }
  vx_status s = tile_build(p, bo, &xo, out_path, r, err);
  vx_free(ctris);
  return s;
}

/* The colours of tile r->code built whole in t, its triangle parts made on the GPU (the bytes
 * of the streaming build's blocks). On failure t is freed; when the GPU cannot (or the parts
 * pass an eighth of the memory limit), VX_ERR_LIMIT sends the tile to the streaming build. */
static vx_status color_gpu_tile(vx_tile_plan *p, const vx_voxelize_opts *bo,
                                const vx_stream_build_opts *xo, vx_octree *t, vx_tile_out *r,
                                vx_error *err) {
  const double t0 = vx_clock_seconds();
  const uint64_t max_recs = bo->mem_limit ? bo->mem_limit / 8 / (2 * sizeof(crec)) : UINT64_MAX;
  vx_error ce;
  memset(&ce, 0, sizeof ce);
  vx_status s = color_tile_gpu(p->color, &p->h.xf, p->h.depth, p->h.tile_depth, r->code,
                               xo->tile_color_tris, xo->tile_color_ntris, t, bo->threads,
                               max_recs, xo->tile_pre ? &xo->tile_pre->stage : NULL,
                               xo->tile_color_root, xo->tile_color_has,
                               r->sec_color_parts, &ce);
  if (s == VX_OK) {
    r->color_gpu = 1;
    r->sec_color = vx_clock_seconds() - t0;
    return VX_OK;
  }
  vx_octree_free(t);
  if (s != VX_ERR_NO_GPU && s != VX_ERR_CUDA && s != VX_ERR_NOMEM && s != VX_ERR_LIMIT) {
    if (err) *err = ce;
    return s;
  }
  return vx_error_set(err, VX_ERR_LIMIT, "its colour on the GPU: %s", ce.msg);
}

/* vx_tile_plan_run once the tile's triangles are in xo. */
static vx_status tile_build(vx_tile_plan *p, vx_voxelize_opts *bo,
                            const vx_stream_build_opts *xo, const char *out_path, vx_tile_out *r,
                            vx_error *err) {
  vx_octree_prealloc *pre = xo->tile_pre;
  vx_stream st;
  vx_voxelize_stats bs;
  vx_status s = VX_ERR_LIMIT;
  const double t0 = vx_clock_seconds();
  if (bo->gpu) { /* the whole tile on the GPU when its tree fits in memory */
    vx_octree t;
    s = vx_voxelize_tile_gpu(p->m, bo, xo, &t, &bs, err); /* pruned there (bo->max_error) */
    if (s == VX_OK && p->color) s = color_gpu_tile(p, bo, xo, &t, r, err);
    if (s == VX_OK) {
      r->voxels = t.voxel_count;
      r->nodes = inner_nodes(t.level_count, t.depth);
      r->corners = bs.corners;
      r->gpu_tree = 1;
      for (int q = 0; q < 5; q++) r->sec_gpu[q] = bs.sec_gpu[q];
      for (int q = 0; q < 3; q++) r->sec_gpu_tree[q] = bs.sec_gpu_tree[q];
      const double t1 = vx_clock_seconds();
      r->sec_build = t1 - t0;
      s = put_tree(p, &t, out_path, r, err);
      r->sec_encode = vx_clock_seconds() - t1;
      keep_arrays(&t, pre);
      vx_octree_free(&t);
      return s;
    }
    if (s == VX_ERR_EMPTY) {
      r->empty = 1;
      return VX_OK;
    }
    if (s == VX_ERR_LIMIT || s == VX_ERR_NOMEM) { /* why, for the notes */
      pthread_mutex_lock(&p->mu);
      if (!p->streamed++ && err) p->stream_note = *err;
      pthread_mutex_unlock(&p->mu);
    }
  }
  if (s == VX_ERR_LIMIT || s == VX_ERR_NOMEM) /* out of core, the surface from the GPU or CPU */
    s = vx_voxelize_tile(p->m, bo, p->tmp_dir, xo, &st, &bs, err);
  if ((s == VX_ERR_NO_GPU || s == VX_ERR_CUDA) && bo->gpu && p->auto_dev) {
    pthread_mutex_lock(&p->mu);
    if (!p->fell_back) p->note = *err;
    p->fell_back = 1;
    pthread_mutex_unlock(&p->mu);
    bo->gpu = 0; /* the same bytes */
    s = vx_voxelize_tile(p->m, bo, p->tmp_dir, xo, &st, &bs, err);
  }
  if (s == VX_ERR_EMPTY) { /* triangles only in its halo */
    r->empty = 1;
    return VX_OK;
  }
  if (s == VX_OK && p->h.prune_error > 0.0f) { /* pruned as the tree in memory would be */
    vx_stream pruned;
    s = vx_stream_prune(&st, p->h.prune_error, &pruned, err);
    vx_stream_free(&st);
    if (s == VX_OK) st = pruned;
  }
  if (s != VX_OK) return s;
  r->voxels = st.level_count[st.depth];
  r->nodes = inner_nodes(st.level_count, st.depth);
  r->corners = bs.corners;
  for (int q = 0; q < 5; q++) r->sec_gpu[q] = bs.sec_gpu[q];
  const double t1 = vx_clock_seconds();
  r->sec_build = t1 - t0;
  if (!st.spilled) {
    vx_octree t;
    s = vx_stream_take_tree(&st, &t, err);
    if (s == VX_OK) s = put_tree(p, &t, out_path, r, err);
    vx_octree_free(&t);
  } else if (out_path) {
    s = vx_svo_write_stream(out_path, &st, p->zstd_level, NULL, NULL, err);
  } else {
    s = temp_tile(p, r, err);
    if (s == VX_OK) s = vx_svo_write_stream(r->path, &st, p->zstd_level, NULL, NULL, err);
  }
  vx_stream_free(&st);
  r->sec_encode = vx_clock_seconds() - t1;
  return s;
}

/* The tiles as work: a pool of workers (two per GPU, or one for the CPU: a CPU tile already uses
 * every core) claims them from a shared counter, largest first (the plan's estimate) so that no
 * large tile is left alone at the end; the file takes them in Morton order. A finished tile waits
 * until every earlier one is written, in memory while the waiting tiles take at most `hold`
 * bytes, else in a temporary file; whichever worker finishes the next in line appends it and
 * every ready successor, so the file is written as tiles finish. */
typedef struct tiles_job {
  vx_tile_plan *p;
  const vx_tile_source *src; /* or NULL: the tiles of plan p */
  vx_voxelize_opts bo;
  int ngpu;
  vx_tiled_writer *w;
  pthread_mutex_t mu;
  uint64_t *order;        /* claims: tile indices, largest first */
  uint64_t next_claim, next_emit;
  uint64_t hold, held;    /* bytes finished tiles may hold in memory, and hold now */
  vx_tile_out *slot;      /* by tile index */
  int emitting, stop, next_worker;
  vx_status status;
  vx_error err;
  uint64_t built, voxels, corners, gpu_tiles, color_gpu_tiles, spilled;
  double sec_color, sec_color_parts[4];
  vx_tile_sums sums;      /* a coloured build: the tiles' roots' colour sums, in file order */
  double sec_build, sec_encode, sec_append; /* summed over the tiles (and so the workers) */
  double sec_gpu[5], sec_gpu_tree[3];
  vx_progress_fn progress;
  void *user;
} tiles_job;

static vx_status append_tile(tiles_job *j, vx_tile_out *r, vx_error *err) {
  if (r->empty) return VX_OK;
  const uint64_t id = j->p->h.build_id;
  const double t0 = vx_clock_seconds();
  vx_status s = r->path ? vx_tiled_writer_add_file(j->w, r->code, id, r->path, &r->fit, err)
                        : vx_tiled_writer_add(j->w, r->code, id, r->bytes, r->n, &r->check,
                                              &r->fit, err);
  if (s == VX_OK) { /* only the emitting worker is here */
    if (j->sums.s && r->color_has) {
      j->sums.s[j->sums.n] = r->color_root;
      j->sums.s[j->sums.n++].code = r->code;
    }
    j->built++;
    j->voxels += r->voxels;
    j->corners += r->corners;
    j->gpu_tiles += r->gpu_tree;
    j->color_gpu_tiles += r->color_gpu;
    j->sec_color += r->sec_color;
    for (int q = 0; q < 4; q++) j->sec_color_parts[q] += r->sec_color_parts[q];
    j->sec_build += r->sec_build;
    j->sec_encode += r->sec_encode;
    j->sec_append += vx_clock_seconds() - t0;
    for (int q = 0; q < 5; q++) j->sec_gpu[q] += r->sec_gpu[q];
    for (int q = 0; q < 3; q++) j->sec_gpu_tree[q] += r->sec_gpu_tree[q];
  }
  return s;
}

static void tiles_fail(tiles_job *j, vx_status st, const vx_error *e) {
  if (j->status == VX_OK) {
    j->status = st;
    j->err = *e;
  }
  j->stop = 1;
}

/* Tile k, finished, into its slot (j->mu held): into a temporary file first when it must wait
 * and the waiting tiles' bytes would pass j->hold. */
static vx_status park_tile(tiles_job *j, uint64_t k, vx_tile_out *r, vx_error *err) {
  vx_status st = VX_OK;
  if (k != j->next_emit && r->bytes && j->held + r->n > j->hold) {
    pthread_mutex_unlock(&j->mu);
    st = temp_tile(j->p, r, err);
    if (st == VX_OK) st = vx_atomic_write_file(r->path, r->bytes, r->n, err);
    vx_free(r->bytes);
    r->bytes = NULL;
    pthread_mutex_lock(&j->mu);
    j->spilled += st == VX_OK;
  }
  if (st != VX_OK) return st; /* r is the caller's to free */
  if (r->bytes) j->held += r->n;
  r->ready = 1;
  j->slot[k] = *r;
  return VX_OK;
}

/* Appends every ready tile in line (j->mu held, released while writing). */
static void emit_ready(tiles_job *j) {
  const uint64_t ntiles = j->p->ntiles;
  vx_error e;
  j->emitting = 1;
  while (!j->stop && j->next_emit < ntiles && j->slot[j->next_emit].ready) {
    vx_tile_out done = j->slot[j->next_emit];
    memset(&j->slot[j->next_emit], 0, sizeof done);
    if (done.bytes) j->held -= done.n;
    pthread_mutex_unlock(&j->mu);
    vx_status st = append_tile(j, &done, &e);
    vx_tile_out_free(&done);
    pthread_mutex_lock(&j->mu);
    if (st != VX_OK) {
      tiles_fail(j, st, &e);
      break;
    }
    j->next_emit++;
    if (j->progress && j->progress(j->user, "tiles", (double)j->next_emit / (double)ntiles)) {
      vx_error_set(&e, VX_ERR_INTERRUPTED, "conversion cancelled");
      tiles_fail(j, VX_ERR_INTERRUPTED, &e);
    }
  }
  j->emitting = 0;
}

static void *tile_worker(void *arg) {
  tiles_job *j = (tiles_job *)arg;
  const uint64_t ntiles = j->p->ntiles;
  vx_voxelize_opts bo = j->bo;
  vx_error e;
  memset(&e, 0, sizeof e);
  /* the tile lists' room (a source's tiles bring their own) */
  uint32_t *tris = (uint32_t *)vx_malloc((size_t)(j->p->max_tris ? j->p->max_tris : 1) * 4);
  vx_octree_prealloc pre; /* the last tile's tree arrays, for the next one */
  memset(&pre, 0, sizeof pre);
  pthread_mutex_lock(&j->mu);
  const int me = j->next_worker++;
  vx_status st = tris ? VX_OK : vx_error_set(&e, VX_ERR_NOMEM, "out of memory");
  if (st == VX_OK && bo.gpu && j->ngpu > 0) st = vx_gpu_use_device(me % j->ngpu, &e);
  if (st != VX_OK) tiles_fail(j, st, &e);
  while (!j->stop && j->next_claim < ntiles) {
    const uint64_t k = j->order ? j->order[j->next_claim] : j->next_claim;
    j->next_claim++;
    pthread_mutex_unlock(&j->mu);
    vx_tile_out r;
    st = j->src ? j->src->run(j->src->ctx, &bo, k, &pre, NULL, &r, &e)
                : vx_tile_plan_run(j->p, &bo, k, tris, &pre, NULL, &r, &e);
    pthread_mutex_lock(&j->mu);
    if (st == VX_OK) st = park_tile(j, k, &r, &e);
    if (st != VX_OK) {
      vx_tile_out_free(&r);
      tiles_fail(j, st, &e);
      break;
    }
    if (!j->emitting) emit_ready(j); /* else the emitting worker takes it */
  }
  pthread_mutex_unlock(&j->mu);
  vx_free(tris);
  vx_free(pre.nodes);
  vx_free(pre.voxels);
  vx_host_stage_free(&pre.stage);
  return NULL;
}

/* The top tree's colours from the tiles' roots' sums, as the untiled build colours the levels
 * above its blocks (color_top). */
vx_status vx_tile_sums_colors(void *ctx, vx_octree *top, uint32_t K, uint32_t *colors,
                              vx_error *err) {
  const vx_tile_sums *t = (const vx_tile_sums *)ctx;
  uint32_t *above = NULL;
  vx_status s = color_top(top, K, t->s, t->n, t->filter, &above, colors + top->level_first[K],
                          NULL, err);
  if (s == VX_OK) memcpy(colors, above, (size_t)top->level_first[K] * sizeof *colors);
  vx_free(above);
  return s;
}

/* The claims' order: the tiles by estimated work, largest first (ties: Morton order). */
typedef struct tile_rank {
  double work;
  uint64_t k;
} tile_rank;

static int by_work(const void *a, const void *b) {
  const tile_rank *x = (const tile_rank *)a, *y = (const tile_rank *)b;
  if (x->work != y->work) return x->work > y->work ? -1 : 1;
  return x->k < y->k ? -1 : x->k > y->k;
}

static uint64_t *claim_order(const vx_tile_plan *p) {
  tile_rank *r = (tile_rank *)vx_malloc((size_t)p->ntiles * sizeof *r);
  uint64_t *o = (uint64_t *)vx_malloc((size_t)p->ntiles * sizeof *o);
  if (!r || !o) {
    vx_free(r);
    vx_free(o);
    return NULL;
  }
  for (uint64_t k = 0; k < p->ntiles; k++) {
    r[k].work = p->work[k];
    r[k].k = k;
  }
  qsort(r, (size_t)p->ntiles, sizeof *r, by_work);
  for (uint64_t k = 0; k < p->ntiles; k++) o[k] = r[k].k;
  vx_free(r);
  return o;
}

/* The GPUs used: 0 for one (the current device) or none. */
static vx_status gpu_count(const vx_convert_opts *o, int gpu, int *ngpu, vx_error *err) {
  *ngpu = 0;
  if (!gpu || o->gpus == 0) return VX_OK;
  const int have = vx_gpu_device_count();
  const int n = o->gpus < 0 ? have : o->gpus;
  if (have == 0 && o->device == VX_DEVICE_AUTO) return VX_OK; /* the CPU, noted by the first tile */
  if (n < 1 || n > have)
    return vx_error_set(err, VX_ERR_NO_GPU, "%d GPUs asked for, the machine has %d", o->gpus,
                        have);
  *ngpu = n;
  return VX_OK;
}

vx_status vx_convert_tiled_pool(const vx_soup *soup, const vx_convert_opts *o,
                                const char *out_path, const char *tmp_dir,
                                const vx_tile_pool_opts *po, vx_conversion *b, vx_error *err) {
  const double t0 = vx_clock_seconds();
  vx_tile_plan p;
  vx_status s = vx_tile_plan_init(&p, soup, o, tmp_dir, err);
  if (s == VX_OK) s = vx_tile_plan_color(&p, soup, o, err);
  if (s == VX_OK) {
    char parts[160] = ""; /* the winding rule's parts */
    if (o->sign_rule == VX_SIGN_WINDING)
      snprintf(parts, sizeof parts, " (welding %.2fs, winding tree %.2fs, clean flags %.2fs, "
               "their certificate %.2fs on the %s)", p.sign.sec[0], p.sign.sec[1], p.sign.sec[2],
               p.sign.sec[3], p.sign.cert_gpu ? "GPU" : "CPU");
    char held[32];
    vx_notes_add(&b->notes, "plan: duplicates %.2fs, overlaps %.2fs, sign tables %.2fs%s, tile "
                 "pairs %.2fs; %s held after it (the mesh, its sign tables and tile lists)",
                 p.sec_unique, p.sec_overlap, p.sec_sign, parts, p.sec_pairs,
                 vx_bytes_text((double)p.held, held, sizeof held));
    s = vx_tile_pool_run(&p, NULL, o, out_path, po, soup->tri_count - p.dropped, t0, b, err);
  }
  vx_tile_plan_release(&p);
  return s;
}

vx_status vx_tile_pool_run(vx_tile_plan *p, const vx_tile_source *src, const vx_convert_opts *o,
                           const char *out_path, const vx_tile_pool_opts *po, uint64_t triangles,
                           double t0, vx_conversion *b, vx_error *err) {
  const double tp = vx_clock_seconds();
  int ngpu = 0;
  vx_status s = gpu_count(o, p->bo.gpu, &ngpu, err);
  /* On the GPU two workers share each GPU: one builds a tile while the other compresses the
   * one it built (the device would otherwise wait for the host's zstd) */
  const int per_gpu = p->bo.gpu ? 2 : 1;
  const int workers = po && po->workers > 0 ? po->workers : (ngpu > 1 ? ngpu : 1) * per_gpu;
  tiles_job j;
  memset(&j, 0, sizeof j);
  j.p = p;
  j.bo = p->bo;
  if (workers > 1) { /* the cores shared between the tiles built side by side */
    const int cores = o->threads ? o->threads : vx_cpu_count();
    j.bo.threads = cores / workers > 1 ? cores / workers : 1;
  }
  if (s == VX_OK) s = vx_tiled_writer_open(out_path, &p->h, &j.w, err);
  if (s == VX_OK && p->color) {
    j.sums.s = (csum *)vx_malloc((size_t)(p->ntiles ? p->ntiles : 1) * sizeof *j.sums.s);
    j.sums.filter = p->color->filter;
    if (!j.sums.s) s = vx_error_set(err, VX_ERR_NOMEM, "out of memory");
    vx_tiled_writer_set_color(j.w, vx_tile_sums_colors, &j.sums);
  }
  j.ngpu = ngpu;
  j.src = src;
  /* finished tiles waiting for their turn: an eighth of the memory limit, then files */
  j.hold = po && po->hold ? po->hold : (o->mem_limit ? o->mem_limit : vx_default_mem_limit()) / 8;
  j.progress = o->progress;
  j.user = o->user;
  j.status = VX_OK;
  if (s == VX_OK && p->ntiles) {
    j.slot = (vx_tile_out *)vx_calloc((size_t)p->ntiles, sizeof(vx_tile_out));
    /* one worker builds in file order; several take the largest tiles first */
    j.order = workers > 1 ? claim_order(p) : NULL;
    if (!j.slot || (workers > 1 && !j.order)) s = vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  }
  if (s == VX_OK && p->ntiles) {
    pthread_mutex_init(&j.mu, NULL);
    vx_parallel(workers, tile_worker, &j);
    pthread_mutex_destroy(&j.mu);
    if (j.status != VX_OK) {
      s = j.status;
      if (err) *err = j.err;
    }
  }
  for (uint64_t i = 0; j.slot && i < p->ntiles; i++) vx_tile_out_free(&j.slot[i]);
  vx_free(j.slot);
  vx_free(j.order);
  if (p->fell_back)
    vx_notes_add(&b->notes, "GPU build unavailable (%s): tiles built on the CPU", p->note.msg);
  const uint64_t built = j.built;
  if (s == VX_OK && built)
    vx_notes_add(&b->notes, "tiles by %d worker%s%s: building %.2fs (%llu of %llu tiles whole "
                 "on the GPU), compressing %.2fs, appending %.2fs (summed over the tiles)",
                 workers, workers > 1 ? "s" : "",
                 per_gpu > 1 && !p->fell_back ? " (two per GPU)" : "", j.sec_build,
                 (unsigned long long)j.gpu_tiles, (unsigned long long)built, j.sec_encode,
                 j.sec_append);
  if (s == VX_OK && j.spilled)
    vx_notes_add(&b->notes, "%llu finished tile%s waited for %s turn in a temporary file",
                 (unsigned long long)j.spilled, j.spilled == 1 ? "" : "s",
                 j.spilled == 1 ? "its" : "their");
  if (s == VX_OK && j.color_gpu_tiles)
    vx_notes_add(&b->notes, "colour of %llu tile%s: %.2fs, triangle parts on the GPU (counting "
                 "%.2fs, making and sorting %.2fs, copying back %.2fs), sums and colours on the "
                 "CPU %.2fs (summed over the tiles, in the building)",
                 (unsigned long long)j.color_gpu_tiles, j.color_gpu_tiles == 1 ? "" : "s",
                 j.sec_color, j.sec_color_parts[0], j.sec_color_parts[1], j.sec_color_parts[2],
                 j.sec_color_parts[3]);
  if (s == VX_OK && p->streamed)
    vx_notes_add(&b->notes, "%llu tile%s built by the streaming build instead of whole on the "
                 "GPU (the first: %s)", (unsigned long long)p->streamed,
                 p->streamed == 1 ? "" : "s", p->stream_note.msg);
  int uploads = 0;
  double sec_up = 0.0;
  if (p->resident) vx_gpu_meshes_stats(p->resident, &uploads, &sec_up);
  if (s == VX_OK && uploads)
    vx_notes_add(&b->notes, "the mesh and sign tables uploaded once to each of %d GPU%s: %.2fs "
                 "(in the building above)", uploads, uploads == 1 ? "" : "s", sec_up);
  const double tb = vx_clock_seconds();
  uint64_t bytes = 0, nodes = 0;
  if (s == VX_OK && src && src->tiles_in) src->tiles_in(src->ctx);
  if (s == VX_OK) {
    s = vx_tiled_writer_finish(j.w, &bytes, &nodes, err);
    j.w = NULL;
  }
  vx_tiled_writer_abort(j.w);
  vx_free(j.sums.s);
  if (s == VX_OK) {
    if (p->dropped)
      vx_notes_add(&b->notes, "%llu exact duplicate triangle%s dropped",
                   (unsigned long long)p->dropped, p->dropped == 1 ? "" : "s");
    vx_notes_add(&b->notes, "tiled: %llu tiles of %u^3 (of %llu reached by triangles) under %u "
                 "top levels", (unsigned long long)built, 1u << p->h.tile_depth,
                 (unsigned long long)p->ntiles, p->h.depth - p->h.tile_depth);
    vx_conversion_stats *st = &b->stats;
    st->struct_size = sizeof *st;
    st->resolution = o->resolution;
    st->triangles = triangles;
    st->surface_voxels = j.voxels;
    st->nodes = nodes;
    st->corners = j.corners;
    st->file_bytes = bytes;
    st->used_gpu = p->bo.gpu && !p->fell_back;
    st->gpu_tree = j.gpu_tiles == built && built > 0; /* every tile's octree on the GPU */
    st->sec_tree = 0.0;
    for (int k = 0; k < 5; k++) st->sec_gpu[k] = j.sec_gpu[k];
    for (int k = 0; k < 3; k++) st->sec_gpu_tree[k] = j.sec_gpu_tree[k];
    st->sec_sign = p->sec_sign;
    st->sec_voxels = tb - tp;
    st->sec_build = tb - t0;
    st->sec_write = vx_clock_seconds() - tb;
    st->sec_total = vx_clock_seconds() - t0;
  }
  return s;
}

vx_status vx_convert_tiled(const vx_soup *soup, const vx_convert_opts *o, const char *out_path,
                           const char *tmp_dir, vx_conversion *b, vx_error *err) {
  return vx_convert_tiled_pool(soup, o, out_path, tmp_dir, NULL, b, err);
}
