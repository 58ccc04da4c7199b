/* SPDX-License-Identifier: Apache-2.0 */
/* tiled_color.c - vx_tiled_file_colors (include/voxlod/sample.h): vx_tree_colors' rule on a
 * tiled file of any depth, without joining it.
 *
 * At a level at or above the tiles' roots the top tree alone answers. Below it, the points are
 * sorted into groups by the tile cell they lie in (points outside the grid: the nearest cell):
 * the cells a point may take lie within r cells of level L of its own cell (r = ceil(band / s),
 * s the cell's size in finest voxels), so within ceil(r s / 2^T) tile cells of its tile.
 * Consecutive groups (Morton order, so neighbours) are batched while their tiles fit half the
 * cache's budget and their points 2^20, and each batch is searched at once on all cores
 * (svo/color_query.h, split at the tiles' level) with its tiles held in the cache, which the
 * handle keeps between calls. The search offers the very cells of the joined tree in the same
 * coordinates, so the bytes are vx_tree_colors' on the tree vx_tree_load joins (depth <= 14),
 * and past 16384^3 those of the same rule on the whole tree.
 */
#include "lib/tiled_arena.h"
#include "svo/color_query.h"
#include "sys/alloc.h"
#include "sys/sort.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>

typedef struct tc_key {
  uint64_t key; /* the tile cell's Morton code */
  uint64_t i;   /* the point */
} tc_key;

/* The tiles one group holds, ascending (so by cell code). */
typedef struct tc_group {
  const vx_tiled *t;
  const uint64_t *tiles;
  const vx_octree **trees;
  size_t n;
} tc_group;

static const vx_octree *group_subtree(void *ctx, const uint32_t cell[3]) {
  const tc_group *g = (const tc_group *)ctx;
  const uint64_t code = vx_morton_encode(cell[0], cell[1], cell[2]);
  size_t lo = 0, hi = g->n;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    const uint64_t m = vx_tiled_tile(g->t, g->tiles[mid])->code;
    if (m == code) return g->trees[mid];
    if (m < code) lo = mid + 1;
    else hi = mid;
  }
  return NULL;
}

/* A batch of groups searched at once: the tiles within reach of any of them, held together. */
typedef struct tc_batch {
  uint64_t *tiles; /* with repeats until flushed */
  size_t n, cap;
  uint64_t bytes;  /* their decoded size, repeats counted */
  uint64_t p0, p1; /* its points: sorted keys [p0, p1) */
} tc_batch;

#define TC_BATCH_POINTS ((uint64_t)1 << 20)

/* The decoded size of tile i (nodes, voxels and their colours). */
static uint64_t tile_bytes(const vx_tiled *t, uint64_t i) {
  const vx_tile_entry *e = vx_tiled_tile(t, i);
  return e->nodes * (sizeof(vx_node) + 4u) + e->voxels * (sizeof(vx_voxel) + 4u);
}

static int cmp_u64(const void *a, const void *b) {
  const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static vx_status batch_push(tc_batch *b, uint64_t tile, uint64_t bytes, vx_error *err) {
  if (b->n == b->cap) {
    const size_t cap = b->cap ? 2 * b->cap : 64;
    uint64_t *m = (uint64_t *)vx_realloc(b->tiles, cap * sizeof *m);
    if (!m) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
    b->tiles = m;
    b->cap = cap;
  }
  b->tiles[b->n++] = tile;
  b->bytes += bytes;
  return VX_OK;
}

/* Adds the tiles within `ring` tile cells of cell `key` to the batch. */
static vx_status batch_add(const vx_tiled *t, uint64_t key, uint32_t ring, tc_batch *b,
                           vx_error *err) {
  const vx_tiled_header *h = vx_tiled_get_header(t);
  const int64_t G = (int64_t)1 << (h->depth - h->tile_depth);
  uint32_t cell[3];
  vx_morton_decode(key, &cell[0], &cell[1], &cell[2]);
  int64_t lo[3], hi[3];
  for (int a = 0; a < 3; a++) {
    lo[a] = (int64_t)cell[a] - ring < 0 ? 0 : (int64_t)cell[a] - ring;
    hi[a] = (int64_t)cell[a] + ring >= G ? G - 1 : (int64_t)cell[a] + ring;
  }
  for (int64_t z = lo[2]; z <= hi[2]; z++)
    for (int64_t y = lo[1]; y <= hi[1]; y++)
      for (int64_t x = lo[0]; x <= hi[0]; x++) {
        const uint64_t i = vx_tiled_find_tile(t, (uint32_t)x, (uint32_t)y, (uint32_t)z);
        if (i == UINT64_MAX) continue;
        vx_status s = batch_push(b, i, tile_bytes(t, i), err);
        if (s != VX_OK) return s;
      }
  return VX_OK;
}

/* Searches the batch's points (sorted[p0 .. p1)) with its tiles held in cache c, then takes
 * them off it, and its tiles too unless `keep`; pts / out: room for its points. */
static vx_status batch_flush(const vx_tiled *t, vx_tile_cache *c, const vx_octree *shape,
                             uint32_t L, tc_batch *b, int keep, const tc_key *sorted,
                             const float *points, float *pts, uint8_t *out, uint8_t *rgba,
                             vx_error *err) {
  if (b->n > 1) qsort(b->tiles, b->n, sizeof *b->tiles, cmp_u64);
  size_t m = 0;
  for (size_t k = 0; k < b->n; k++)
    if (m == 0 || b->tiles[k] != b->tiles[m - 1]) b->tiles[m++] = b->tiles[k];
  const vx_octree **trees = (const vx_octree **)vx_malloc((m ? m : 1) * sizeof *trees);
  vx_status s = trees ? vx_tile_cache_hold(c, b->tiles, m, trees, err)
                      : vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  for (size_t k = 0; k < m && s == VX_OK; k++)
    if (!trees[k]->node_color || (trees[k]->voxel_count && !trees[k]->voxel_color))
      s = vx_error_set(err, VX_ERR_CORRUPT, "tile %llu has no colour in a coloured file",
                       (unsigned long long)b->tiles[k]);
  if (s == VX_OK) {
    const uint64_t n = b->p1 - b->p0;
    const tc_key *keys = sorted + b->p0;
    for (uint64_t k = 0; k < n; k++) memcpy(pts + 3 * k, points + 3 * keys[k].i, 3 * sizeof(float));
    const vx_tiled_header *h = vx_tiled_get_header(t);
    tc_group g = {t, b->tiles, trees, m};
    const vx_color_split sp = {h->depth - h->tile_depth, group_subtree, &g};
    vx_octree_colors_split(shape, &sp, L, pts, n, out);
    for (uint64_t k = 0; k < n; k++) memcpy(rgba + 4 * keys[k].i, out + 4 * k, 4);
  }
  vx_free((void *)trees);
  b->n = keep ? m : 0;
  b->bytes = keep ? b->bytes : 0;
  b->p0 = b->p1;
  return s;
}

vx_status vx_tiled_file_colors(vx_tiled_file *f, const vx_tiled_sample_opts *tiles,
                               const float *points, uint64_t n, int level, uint8_t *rgba,
                               vx_error *err) {
  if (!f) return vx_error_set(err, VX_ERR_INVALID_ARG, "no tiled file");
  vx_tiled_sample_opts to;
  vx_status s = VX_OPTS_IN(to, tiles, err);
  if (s != VX_OK) return s;
  vx_tiled *t = vx_tiled_file_reader(f, NULL);
  const vx_tiled_header *h = vx_tiled_get_header(t);
  const uint32_t D = h->depth, T = h->tile_depth, K = D - T;
  if (!h->color) return vx_error_set(err, VX_ERR_INVALID_ARG, "the tree has no colour");
  if (n > SIZE_MAX / (3 * sizeof(float)) || n > SIZE_MAX / sizeof(tc_key))
    return vx_error_set(err, VX_ERR_INVALID_ARG, "%llu points are too many",
                        (unsigned long long)n);
  if (n && (!points || !rgba)) return vx_error_set(err, VX_ERR_INVALID_ARG, "no points or no output");
  if (level < -1 || level > (int)D)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "level %d is not in the tree (levels 0 .. %u; "
                        "-1: the finest)", level, D);
  const uint32_t L = level < 0 ? D : (uint32_t)level;
  vx_octree shape;
  vx_tiled_file_shape(f, &shape);
  shape.levels_loaded = K + 1;
  if (L <= K || n == 0) {
    vx_octree_colors(&shape, L, points, n, rgba);
    return VX_OK;
  }
  const double s_cells = ldexp(1.0, (int)(D - L)); /* a level-L cell, in finest voxels */
  const double r = ceil((double)h->band / s_cells);
  const uint32_t ring = (uint32_t)ceil(r * s_cells / ldexp(1.0, (int)T));
  const double tile = h->xf.scale * ldexp(1.0, (int)T), G = ldexp(1.0, (int)K);
  tc_key *keys = (tc_key *)vx_malloc((size_t)n * sizeof *keys);
  if (!keys)
    return vx_error_set(err, VX_ERR_NOMEM, "out of memory for the order of %llu points",
                        (unsigned long long)n);
  uint64_t m = 0, top = 0;
  for (uint64_t i = 0; i < n; i++) {
    uint32_t c[3];
    int ok = 1;
    for (int a = 0; a < 3 && ok; a++) {
      double g = floor(((double)points[3 * i + a] - h->xf.origin[a]) / tile);
      ok = g == g;
      c[a] = !ok || g < 0.0 ? 0u : g >= G ? (uint32_t)(G - 1.0) : (uint32_t)g;
    }
    if (!ok) { /* not finite: no colour (as vx_tree_colors) */
      memset(rgba + 4 * i, 0, 4);
      continue;
    }
    keys[m].key = vx_morton_encode(c[0], c[1], c[2]);
    keys[m].i = i;
    top = keys[m].key > top ? keys[m].key : top;
    m++;
  }
  tc_key *tmp = (tc_key *)vx_malloc((size_t)(m ? m : 1) * sizeof *tmp);
  tc_key *sorted = tmp ? (tc_key *)vx_radix_sort(keys, tmp, (size_t)m, sizeof *keys,
                                                 offsetof(tc_key, key), vx_radix_bits(top), 0)
                       : NULL;
  if (!sorted) s = vx_error_set(err, VX_ERR_NOMEM, "out of memory for the order of %llu points",
                                (unsigned long long)n);
  const uint64_t budget = to.cache_bytes ? to.cache_bytes : VX_TILE_CACHE_DEFAULT;
  const uint64_t most = m < TC_BATCH_POINTS ? m : TC_BATCH_POINTS;
  float *pts = NULL;
  uint8_t *out = NULL;
  if (s == VX_OK && m) {
    pts = (float *)vx_malloc((size_t)most * 3 * sizeof(float));
    out = (uint8_t *)vx_malloc((size_t)most * 4);
    if (!pts || !out) s = vx_error_set(err, VX_ERR_NOMEM, "out of memory for %llu points",
                                      (unsigned long long)most);
  }
  vx_tile_cache *c = NULL;
  if (s == VX_OK && m) s = vx_tiled_file_cache(f, budget, &c, err);
  /* groups in Morton order of their cells, batched while their tiles fit half the budget and
   * their points the buffers (a group alone always goes) */
  tc_batch b;
  memset(&b, 0, sizeof b);
  for (uint64_t g0 = 0, g1; s == VX_OK && g0 < m; g0 = g1) {
    for (g1 = g0 + 1; g1 < m && sorted[g1].key == sorted[g0].key;) g1++;
    tc_batch one;
    memset(&one, 0, sizeof one);
    s = batch_add(t, sorted[g0].key, ring, &one, err);
    if (s == VX_OK && b.p1 > b.p0 &&
        (b.bytes + one.bytes > budget / 2 || b.p1 - b.p0 + (g1 - g0) > most))
      s = batch_flush(t, c, &shape, L, &b, 0, sorted, points, pts, out, rgba, err);
    for (size_t k = 0; k < one.n && s == VX_OK; k++) s = batch_push(&b, one.tiles[k], 0, err);
    b.bytes += one.bytes;
    vx_free(one.tiles);
    while (s == VX_OK && g1 - b.p0 > most) { /* one group past the buffers: in parts */
      b.p1 = b.p0 + most;
      s = batch_flush(t, c, &shape, L, &b, 1, sorted, points, pts, out, rgba, err);
    }
    b.p1 = g1;
  }
  if (s == VX_OK && b.p1 > b.p0)
    s = batch_flush(t, c, &shape, L, &b, 0, sorted, points, pts, out, rgba, err);
  vx_free(b.tiles);
  vx_free(pts);
  vx_free(out);
  vx_free(keys);
  vx_free(tmp);
  return s;
}
