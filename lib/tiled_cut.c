/* SPDX-License-Identifier: Apache-2.0 */
/* tiled_cut.c - one level of a tiled tree, read tile by tile: the cut that `export` writes
 * (vx_tiled_cut, lib/tiled_cut.h) and the ordinary tree of that level that `mesh` and every
 * other tree call take (vx_tiled_file_level_tree, include/voxlod/tree.h).
 *
 * The cut at level L comes from the top tree alone when L is at or above the tiles' roots (level
 * K = D - T), else from each tile's levels 0 .. L - K (a partial read: the sections it decodes,
 * nothing more), tiles in index order, which is the Morton order of their cells: several at once
 * where the tiles' headers say where each one's cells go, one after the other in a pruned file
 * (a pruned leaf's plane gives cells no header counts). So its cells
 * are those vx_cut_build gives on the joined tree, bit for bit, at any depth up to 2^20, and
 * only one tile is decoded at a time.
 *
 * The level tree is built from the cut's cells as the converter builds a tree from its surface
 * voxels (vx_octree_build, vx_octree_fit_planes): at the finest level of a file of up to
 * 16384^3 that is the joined tree itself; at a coarser level from the nodes' planes, made
 * single-valued and closed (below), quantized at a band of 2 cells (or the tree's band in
 * cells, when wider). A coloured file's level tree is coloured: its cells the file's colours
 * there, its nodes the means of their children (level_colors).
 */
#include "lib/tiled_cut.h"
#include "lib/tiled_arena.h"
#include "formats/grid_closed.h"
#include "svo/color.h"
#include "svo/lod.h"
#include "sys/system.h"

#include <math.h>
#include <pthread.h>

/* Tiles cut side by side: each thread with a reader of its own on the file writes its tiles'
 * cells at their place in the cut (offsets from the tiles' headers: a tile of an unpruned tree
 * has one cell per node of the level). */
typedef struct cut_job {
  const char *path;
  vx_svo_read_opts ro;
  vx_cut *c;
  const uint64_t *first; /* tile i's first cell; first[n]: all */
  uint32_t K;
  uint64_t n, limit;
  uint64_t next, done;   /* tiles taken, finished (atomic) */
  vx_progress_fn progress;
  void *user;
  pthread_mutex_t lock;
  vx_status status;      /* the first failure */
  vx_error err;
} cut_job;

static void *cut_tiles(void *arg) {
  cut_job *j = (cut_job *)arg;
  vx_error e;
  memset(&e, 0, sizeof e);
  vx_tiled *t = NULL;
  vx_status s = vx_tiled_open(j->path, &j->ro, &t, &e);
  const vx_svo_read_opts part = {j->c->level == j->c->depth ? -1 : (int)(j->c->level - j->K),
                                 j->limit, 0, 0};
  for (;;) {
    const uint64_t i = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED);
    if (i >= j->n || __atomic_load_n(&j->status, __ATOMIC_RELAXED) != VX_OK) break;
    vx_octree tile;
    if (s == VX_OK) s = vx_tiled_read_tile(t, i, &part, &tile, &e);
    if (s == VX_OK) {
      vx_cut mine = *j->c; /* this tile's cells, at their place */
      mine.codes = j->c->codes + j->first[i];
      mine.field = j->c->field + j->first[i];
      mine.rgba = j->c->rgba ? j->c->rgba + j->first[i] : NULL;
      mine.count = 0;
      mine.cap = j->first[i + 1] - j->first[i];
      mine.plane_cells = 0;
      mine.fixed = 1;
      uint32_t root[3];
      vx_morton_decode(vx_tiled_tile(t, i)->code, &root[0], &root[1], &root[2]);
      s = vx_cut_add(&mine, &tile, j->K, root, j->limit, NULL, NULL, &e);
      vx_octree_free(&tile);
      if (s == VX_OK && mine.count != mine.cap)
        s = vx_error_set(&e, VX_ERR_CORRUPT, "tile %llu has %llu cells at level %u, not the %llu "
                         "its header counts", (unsigned long long)i,
                         (unsigned long long)mine.count, j->c->level,
                         (unsigned long long)mine.cap);
      if (s == VX_OK) __atomic_fetch_add(&j->c->plane_cells, mine.plane_cells, __ATOMIC_RELAXED);
    }
    pthread_mutex_lock(&j->lock);
    if (s != VX_OK && j->status == VX_OK) {
      j->status = s;
      j->err = e;
    }
    const uint64_t done = ++j->done;
    if (s == VX_OK && j->status == VX_OK && j->progress &&
        j->progress(j->user, "field", (double)done / (double)j->n)) {
      j->status = VX_ERR_INTERRUPTED;
      vx_error_set(&j->err, VX_ERR_INTERRUPTED, "interrupted");
    }
    pthread_mutex_unlock(&j->lock);
    if (s != VX_OK) break;
  }
  vx_tiled_close(t);
  return NULL;
}

vx_status vx_tiled_cut(vx_tiled_file *f, uint32_t level, uint64_t mem_limit,
                       vx_progress_fn progress, void *user, vx_cut *out, vx_error *err) {
  vx_svo_read_opts ro;
  vx_tiled *t = vx_tiled_file_reader(f, &ro);
  const vx_tiled_header *h = vx_tiled_get_header(t);
  const uint32_t D = h->depth, T = h->tile_depth, K = D - T;
  memset(out, 0, sizeof *out);
  if (level > D)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "level %u is beyond the tree's depth %u (levels "
                        "0..%u)", level, D, D);
  const uint64_t limit = mem_limit ? mem_limit : ro.mem_limit ? ro.mem_limit
                                                               : vx_default_mem_limit();
  vx_cut_begin(D, level, &h->xf, out);
  vx_status s = VX_OK;
  if (level <= K) { /* the top tree holds it */
    vx_octree top;
    vx_tiled_file_shape(f, &top);
    top.levels_loaded = K + 1;
    const uint32_t root[3] = {0, 0, 0};
    s = vx_cut_add(out, &top, 0, root, limit, progress, user, err);
    if (s == VX_OK) s = vx_cut_end(out, err);
    if (s != VX_OK) vx_cut_free(out);
    return s;
  }
  if (h->prune_error > 0.0f) { /* a pruned leaf's plane gives cells no header counts */
    const vx_svo_read_opts part = {level == D ? -1 : (int)(level - K), limit, 0, 0};
    const uint64_t n = vx_tiled_tile_count(t);
    for (uint64_t i = 0; i < n && s == VX_OK; i++) {
      vx_octree tile;
      s = vx_tiled_read_tile(t, i, &part, &tile, err);
      if (s != VX_OK) break;
      uint32_t root[3];
      vx_morton_decode(vx_tiled_tile(t, i)->code, &root[0], &root[1], &root[2]);
      s = vx_cut_add(out, &tile, K, root, limit, NULL, NULL, err);
      vx_octree_free(&tile);
      if (s == VX_OK && progress && progress(user, "field", (double)(i + 1) / (double)n))
        s = vx_error_set(err, VX_ERR_INTERRUPTED, "interrupted");
    }
    if (s == VX_OK) s = vx_cut_end(out, err);
    if (s != VX_OK) vx_cut_free(out);
    return s;
  }
  /* each tile's cells at the level, from its header */
  const uint64_t n = vx_tiled_tile_count(t);
  uint64_t *first = (uint64_t *)vx_malloc((size_t)(n + 1) * sizeof *first);
  if (!first) return vx_error_set(err, VX_ERR_NOMEM, "out of memory for %llu tiles",
                                  (unsigned long long)n);
  first[0] = 0;
  for (uint64_t i = 0; i < n && s == VX_OK; i++) {
    vx_octree hd;
    vx_svo_file_info fi;
    s = vx_tiled_tile_header(t, i, &hd, &fi, err);
    first[i + 1] = first[i] + (s == VX_OK ? hd.level_count[level - K] : 0);
  }
  const uint64_t cells = s == VX_OK ? first[n] : 0;
  const double need = (double)vx_resident_bytes() +
                      (double)cells * (sizeof(uint64_t) + 32.0 + (h->color ? 4.0 : 0.0));
  if (s == VX_OK && need > (double)limit) {
    char a[32], b[32];
    s = vx_error_set(err, VX_ERR_LIMIT, "the level-%u field of %llu cells needs about %s, over "
                     "the memory limit of %s", level, (unsigned long long)cells,
                     vx_bytes_text(need, a, sizeof a), vx_bytes_text((double)limit, b, sizeof b));
  }
  if (s == VX_OK) {
    out->codes = (uint64_t *)vx_malloc((size_t)(cells ? cells : 1) * sizeof *out->codes);
    out->field = (float(*)[8])vx_malloc((size_t)(cells ? cells : 1) * sizeof *out->field);
    if (h->color) /* a coloured file's tiles give each cell its colour */
      out->rgba = (uint32_t *)vx_malloc((size_t)(cells ? cells : 1) * sizeof *out->rgba);
    if (!out->codes || !out->field || (h->color && !out->rgba))
      s = vx_error_set(err, VX_ERR_NOMEM, "out of memory for %llu cells",
                       (unsigned long long)cells);
  }
  if (s == VX_OK && n) {
    cut_job j;
    memset(&j, 0, sizeof j);
    j.path = vx_tiled_file_path(f);
    j.ro = ro;
    j.c = out;
    j.first = first;
    j.K = K;
    j.n = n;
    j.limit = limit;
    j.progress = progress;
    j.user = user;
    pthread_mutex_init(&j.lock, NULL);
    /* each thread holds one decoded tile: no more of them than the limit leaves room for */
    vx_parallel(vx_thread_count(0, n < 64 ? (int)n : 64), cut_tiles, &j);
    pthread_mutex_destroy(&j.lock);
    if ((s = j.status) != VX_OK && err) *err = j.err;
    if (s == VX_OK && progress) progress(user, "field", 1.0);
  }
  out->count = out->cap = cells;
  vx_free(first);
  if (s == VX_OK) s = vx_cut_end(out, err);
  if (s != VX_OK) vx_cut_free(out);
  return s;
}

/* A cell of the level's closure (not in the cut): the colour of the first of its 26 neighbours
 * the cut holds, else an opaque grey. */
static uint32_t closure_color(const vx_cut *c, uint64_t code) {
  uint32_t x, y, z;
  vx_morton_decode(code, &x, &y, &z);
  const int64_t R = (int64_t)c->res;
  for (int dz = -1; dz <= 1; dz++)
    for (int dy = -1; dy <= 1; dy++)
      for (int dx = -1; dx <= 1; dx++) {
        const int64_t a = (int64_t)x + dx, b = (int64_t)y + dy, d = (int64_t)z + dz;
        if ((dx | dy | dz) == 0 || a < 0 || b < 0 || d < 0 || a >= R || b >= R || d >= R) continue;
        const uint64_t k = vx_cut_find(c, vx_morton_encode((uint32_t)a, (uint32_t)b, (uint32_t)d));
        if (k != UINT64_MAX) return c->rgba[k];
      }
  return 0xff808080u;
}

/* The colours of a level tree t built from cut c's coloured cells (codes: its voxels' codes):
 * each voxel the colour of its cell (a cell the closure added, its neighbour's), each node the
 * mean of its children in linear light, weighted by their alpha (a hole adds no rgb). The
 * nodes' colours are so an approximation of the file's (which come from the surface's sums). */
static vx_status level_colors(const vx_cut *c, const uint64_t *codes, vx_octree *t,
                              vx_error *err) {
  t->node_color = (uint32_t *)vx_malloc((size_t)(t->node_count ? t->node_count : 1) * 4);
  t->voxel_color = (uint32_t *)vx_malloc((size_t)(t->voxel_count ? t->voxel_count : 1) * 4);
  if (!t->node_color || !t->voxel_color)
    return vx_error_set(err, VX_ERR_NOMEM, "out of memory for the level tree's colours");
  for (uint64_t i = 0; i < t->voxel_count; i++) {
    const uint64_t k = vx_cut_find(c, codes[i]);
    t->voxel_color[i] = k != UINT64_MAX ? c->rgba[k] : closure_color(c, codes[i]);
  }
  for (uint32_t l = t->depth; l-- > 0;) {
    const uint32_t *below = l + 1 == t->depth ? t->voxel_color : t->node_color;
    for (uint64_t k = 0; k < t->level_count[l]; k++) {
      const vx_node *nd = &t->nodes[t->level_first[l] + k];
      const uint32_t m = vx_popcount8(vx_node_mask(nd->info));
      float s[4] = {0, 0, 0, 0}, w = 0.0f;
      for (uint32_t q = 0; q < m; q++) {
        float f[4];
        vx_rgba_unpack_linear(below[nd->child + q], f);
        const float a = f[3] + 1e-6f;
        for (int r = 0; r < 3; r++) s[r] += a * f[r];
        s[3] += f[3];
        w += a;
      }
      t->node_color[t->level_first[l] + k] =
          m ? vx_rgba_pack_linear(s[0] / w, s[1] / w, s[2] / w, s[3] / (float)m) : 0xff808080u;
    }
  }
  return VX_OK;
}

/* The band of the level tree: the tree's band in cells of the level, at least 2 (the corners of
 * a cell its plane crosses lie within sqrt(3) cells of it); at the finest level the tree's own. */
static float level_band(float band, uint32_t D, uint32_t L) {
  if (L == D) return band;
  float b = (float)ldexp((double)band, -(int)(D - L));
  return b > 2.0f ? b : 2.0f;
}

vx_status vx_tiled_file_level_tree(vx_tiled_file *f, uint32_t level, const vx_read_opts *opts,
                                   vx_tree **out, vx_error *err) {
  if (!out) return vx_error_set(err, VX_ERR_INVALID_ARG, "no place for the tree");
  *out = NULL;
  if (!f) return vx_error_set(err, VX_ERR_INVALID_ARG, "no tiled file");
  vx_svo_read_opts ro;
  vx_status s = vx_read_opts_in(opts, &ro, err);
  if (s != VX_OK) return s;
  const vx_tiled_header *h = vx_tiled_get_header(vx_tiled_file_reader(f, NULL));
  if (level < VX_MIN_DEPTH || level > VX_MAX_DEPTH || level > h->depth)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "level %u: a tree of one level is %u to %u "
                        "levels deep (this file's levels: 0..%u)", level, VX_MIN_DEPTH,
                        VX_MAX_DEPTH, h->depth);
  const uint64_t limit = ro.mem_limit ? ro.mem_limit : vx_default_mem_limit();
  vx_cut c;
  s = vx_tiled_cut(f, level, limit, NULL, NULL, &c, err);
  if (s != VX_OK) return s;
  /* beside the cut: its cells as voxels (8 B), the tree (about a node per three voxels, 16 B)
   * and the plane fit's scratch: 24 B a cell, as a level set's conversion measures it */
  const double need = (double)vx_resident_bytes() + 24.0 * (double)c.count;
  if (need > (double)limit) {
    char a[32], b[32];
    s = vx_error_set(err, VX_ERR_LIMIT, "the level-%u tree of %llu cells needs about %s, over the "
                     "memory limit of %s", level, (unsigned long long)c.count,
                     vx_bytes_text(need, a, sizeof a), vx_bytes_text((double)limit, b, sizeof b));
    vx_cut_free(&c);
    return s;
  }
  const float band = level_band(h->band, h->depth, level);
  vx_tree *tr = vx_tree_new();
  vx_voxel *vox = NULL;
  uint64_t *codes = NULL, n = 0;
  if (!tr) s = vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  if (s == VX_OK && level < h->depth) {
    s = vx_cut_closed(&c, band, limit, &codes, &vox, &n, err);
  } else if (s == VX_OK) { /* the surface voxels as they are */
    n = c.count;
    if (!(vox = (vx_voxel *)vx_malloc((size_t)n * sizeof *vox)))
      s = vx_error_set(err, VX_ERR_NOMEM, "out of memory for %llu cells", (unsigned long long)n);
    for (uint64_t i = 0; s == VX_OK && i < n; i++)
      for (int k = 0; k < 8; k++) vox[i].c[k] = vx_corner_quantize(c.field[i][k], band);
  }
  if (s == VX_OK) s = vx_octree_build(level, codes ? codes : c.codes, vox, n, &tr->oct, err);
  if (s == VX_OK && c.rgba) s = level_colors(&c, codes ? codes : c.codes, &tr->oct, err);
  vx_free(vox);
  vx_free(codes);
  if (s == VX_OK) {
    tr->oct.xf = h->xf;
    tr->oct.xf.scale = c.h;
    tr->oct.band = band;
    s = vx_octree_fit_planes(&tr->oct, NULL, NULL, err);
  }
  vx_cut_free(&c);
  if (s == VX_OK) s = vx_octree_validate(&tr->oct, err);
  if (s != VX_OK) {
    vx_tree_free(tr);
    return s;
  }
  *out = tr;
  return VX_OK;
}
