/* SPDX-License-Identifier: Apache-2.0 */
/* convert_tiled.c - a mesh to a tiled .svo (formats/svo_tiled.h): grids finer than one tree
 * holds (up to 2^VX_MAX_TILED_DEPTH per axis), or any grid cut into tiles on request.
 *
 * 1. The mesh without its exact duplicates, the grid's transform and the sign tables of the whole
 *    mesh, once (signs need every triangle; the tiles share them).
 * 2. Each triangle goes to every tile its voxel range, grown by the one-voxel halo the corners on
 *    a tile's faces need, touches: (tile, triangle) pairs, sorted (qsort), so each tile has its
 *    triangles in ascending order.
 * 3. Tiles in Morton order, each built by the streaming build restricted to its cell
 *    (vx_voxelize_tile: blocks on all cores, spilling under the memory limit), in the grid's own
 *    coordinates, so a tile is bit for bit the subtree of the untiled build below its cell. Each
 *    finished tile is encoded (in memory, or through a temporary file when it spilled) and
 *    appended to the output; only its root's node and fit are kept.
 * 4. The writer fits the top tree over the roots and commits the file.
 * Nothing depends on where or in which order tiles are built: a tile's bytes are a function of
 * the mesh, the options and its cell.
 */
#define _POSIX_C_SOURCE 200809L
#include "lib/internal.h"
#include "lib/convert_tiled.h"
#include "formats/svo_tiled.h"
#include "svo/stream.h"
#include "sys/system.h"
#include "voxelizer/internal.h"
#include "voxelizer/overlap.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct tile_tri {
  uint64_t code;
  uint32_t tri;
} tile_tri;

static int cmp_tile_tri(const void *a, const void *b) {
  const tile_tri *x = (const tile_tri *)a, *y = (const tile_tri *)b;
  if (x->code != y->code) return x->code < y->code ? -1 : 1;
  return x->tri < y->tri ? -1 : x->tri > y->tri;
}

/* (tile, triangle) pairs of every triangle, sorted. */
static vx_status tile_pairs(const vx_soup *m, const vx_transform *xf, uint32_t D, uint32_t T,
                            uint64_t mem_limit, tile_tri **out, uint64_t *n, vx_error *err) {
  const int64_t R = (int64_t)1 << D, nt = (int64_t)1 << (D - T);
  uint64_t cap = m->tri_count + 1024, k = 0;
  tile_tri *p = (tile_tri *)vx_malloc((size_t)cap * sizeof *p);
  if (!p) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  for (uint64_t t = 0; t < m->tri_count; t++) {
    double g[9];
    int64_t lo[3], hi[3], a[3], b[3];
    vx_grid_tri(m, xf, t, g);
    if (!vx_tri_voxel_range(g, R, lo, hi)) continue;
    for (int i = 0; i < 3; i++) {
      a[i] = lo[i] - 1 < 0 ? 0 : (lo[i] - 1) >> T;
      b[i] = (hi[i] + 1) >> T;
      if (b[i] > nt - 1) b[i] = nt - 1;
    }
    for (int64_t z = a[2]; z <= b[2]; z++)
      for (int64_t y = a[1]; y <= b[1]; y++)
        for (int64_t x = a[0]; x <= b[0]; x++) {
          if (k == cap) {
            if ((double)cap * 2 * sizeof *p > (double)mem_limit / 4) {
              vx_free(p);
              return vx_error_set(err, VX_ERR_LIMIT, "the triangles reach too many tiles (%llu "
                                  "pairs): use larger tiles", (unsigned long long)k);
            }
            tile_tri *q = (tile_tri *)vx_realloc(p, (size_t)cap * 2 * sizeof *p);
            if (!q) {
              vx_free(p);
              return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
            }
            p = q;
            cap *= 2;
          }
          p[k].code = vx_morton_encode((uint32_t)x, (uint32_t)y, (uint32_t)z);
          p[k++].tri = (uint32_t)t;
        }
  }
  qsort(p, (size_t)k, sizeof *p, cmp_tile_tri);
  *out = p;
  *n = k;
  return VX_OK;
}

/* One finished tile into the file: encoded in memory, or through a temporary file when its
 * levels spilled. */
static vx_status add_tile(vx_tiled_writer *w, uint64_t code, uint64_t id, vx_stream *s,
                          const vx_fit_root *fit, int zstd_level, const char *tmp_dir,
                          vx_error *err) {
  vx_status st;
  if (!s->spilled) {
    vx_octree t;
    st = vx_stream_take_tree(s, &t, err);
    uint8_t *bytes = NULL;
    size_t n = 0;
    if (st == VX_OK) st = vx_svo_encode(&t, zstd_level, &bytes, &n, err);
    vx_octree_free(&t);
    if (st == VX_OK) st = vx_tiled_writer_add(w, code, id, bytes, n, fit, err);
    vx_free(bytes);
    return st;
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/voxlod-tile-XXXXXX", tmp_dir);
  int fd = mkstemp(path);
  if (fd < 0) return vx_error_set(err, VX_ERR_IO, "cannot create a temporary tile in %s", tmp_dir);
  close(fd);
  st = vx_svo_write_stream(path, s, zstd_level, NULL, NULL, err);
  if (st == VX_OK) st = vx_tiled_writer_add_file(w, code, id, path, fit, err);
  unlink(path);
  return st;
}

vx_status vx_convert_tiled(const vx_soup *soup, const vx_convert_opts *o, const char *out_path,
                           const char *tmp_dir, vx_conversion *b, vx_error *err) {
  const double t0 = vx_clock_seconds();
  if (o->max_error > 0.0f)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "pruning (max error %g) is not available for "
                        "tiled trees yet", (double)o->max_error);
  if (o->device == VX_DEVICE_GPU)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "tiled trees are built on the CPU so far: leave "
                        "the device to auto or CPU");
  if (soup->color && o->color != VX_COLOR_OFF)
    vx_notes_add(&b->notes, "tiled trees are grey so far: the mesh's colours are not kept");
  vx_voxelize_opts bo;
  memset(&bo, 0, sizeof bo);
  bo.resolution = o->resolution;
  bo.band = o->band;
  bo.threads = o->threads;
  bo.mem_limit = o->mem_limit;
  bo.progress = NULL;
  bo.sign_rule = o->sign_rule;
  bo.tile_depth = o->tile_depth;
  vx_soup store;
  const vx_soup *m;
  uint64_t dropped = 0;
  vx_status s = vx_voxelize_unique(soup, &bo, &store, &m, &dropped, err);
  if (s != VX_OK) return s;
  vx_transform xf;
  uint32_t D = 0;
  float band = 0.0f;
  vx_sign_data sign;
  memset(&sign, 0, sizeof sign);
  tile_tri *pairs = NULL;
  uint64_t npairs = 0;
  uint32_t *tris = NULL;
  vx_tiled_writer *w = NULL;
  s = vx_voxelize_setup(m, &bo, &xf, &D, &band, err);
  const uint32_t T = o->tile_depth;
  if (s == VX_OK && (T >= D || D - T > VX_MAX_DEPTH - 1))
    s = vx_error_set(err, VX_ERR_INVALID_ARG, "tiles of %u^3 in a %u^3 grid: a tile is smaller "
                     "than the grid and leaves at most %d levels above it", 1u << T, 1u << D,
                     VX_MAX_DEPTH - 1);
  const double ts = vx_clock_seconds();
  if (s == VX_OK)
    s = vx_sign_build_rule_ex(m, &xf, o->sign_rule, 0, o->threads, &sign, err);
  const double tp = vx_clock_seconds();
  if (s == VX_OK) s = tile_pairs(m, &xf, D, T, o->mem_limit, &pairs, &npairs, err);
  if (s == VX_OK && !(tris = (uint32_t *)vx_malloc((size_t)(npairs ? npairs : 1) * 4)))
    s = vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  vx_tiled_header h;
  memset(&h, 0, sizeof h);
  h.depth = D;
  h.tile_depth = T;
  h.band = band;
  h.prune_error = 0.0f;
  h.xf = xf;
  h.build_id = s == VX_OK ? vx_tiled_build_id(m->pos, (size_t)m->tri_count * 9 * sizeof(float),
                                              D, T, band, o->sign_rule)
                         : 0;
  if (s == VX_OK) s = vx_tiled_writer_open(out_path, &h, &w, err);
  uint64_t built = 0, voxels = 0, corners = 0, pair_tests = 0, ntiles = 0;
  for (uint64_t i = 0; i < npairs; i++) ntiles += i == 0 || pairs[i].code != pairs[i - 1].code;
  for (uint64_t i = 0; s == VX_OK && i < npairs;) {
    uint64_t j = i;
    while (j < npairs && pairs[j].code == pairs[i].code) {
      tris[j - i] = pairs[j].tri;
      j++;
    }
    vx_stream_build_opts xo;
    memset(&xo, 0, sizeof xo);
    vx_fit_root fit;
    xo.sign = &sign;
    xo.tile_root = &fit;
    xo.tile_tris = tris;
    xo.tile_ntris = j - i;
    bo.tile_code = pairs[i].code;
    vx_stream st;
    vx_voxelize_stats bs;
    s = vx_voxelize_tile(m, &bo, tmp_dir, &xo, &st, &bs, err);
    if (s == VX_ERR_EMPTY) { /* triangles only in its halo */
      s = VX_OK;
    } else if (s == VX_OK) {
      voxels += st.level_count[st.depth];
      corners += bs.corners;
      pair_tests += bs.pair_tests;
      s = add_tile(w, pairs[i].code, h.build_id, &st, &fit, o->zstd_level, tmp_dir, err);
      vx_stream_free(&st);
      built++;
    }
    i = j;
    if (s == VX_OK && o->progress &&
        o->progress(o->user, "tiles", (double)(built + 1) / (double)(ntiles + 1)))
      s = vx_error_set(err, VX_ERR_INTERRUPTED, "conversion cancelled");
  }
  const double tb = vx_clock_seconds();
  uint64_t bytes = 0, nodes = 0;
  if (s == VX_OK) {
    s = vx_tiled_writer_finish(w, &bytes, &nodes, err);
    w = NULL;
  }
  vx_tiled_writer_abort(w);
  vx_free(pairs);
  vx_free(tris);
  vx_sign_free(&sign);
  vx_soup_free(&store);
  if (s != VX_OK) return s;
  if (dropped)
    vx_notes_add(&b->notes, "%llu exact duplicate triangle%s dropped", (unsigned long long)dropped,
                 dropped == 1 ? "" : "s");
  vx_notes_add(&b->notes, "tiled: %llu tiles of %u^3 (of %llu reached by triangles) under %u top "
               "levels", (unsigned long long)built, 1u << T, (unsigned long long)ntiles, D - T);
  vx_conversion_stats *st = &b->stats;
  st->struct_size = sizeof *st;
  st->resolution = o->resolution;
  st->triangles = m == soup ? soup->tri_count : soup->tri_count - dropped;
  st->surface_voxels = voxels;
  st->nodes = nodes;
  st->corners = corners;
  st->file_bytes = bytes;
  st->sec_sign = tp - ts;
  st->sec_voxels = tb - tp;
  st->sec_build = tb - t0;
  st->sec_write = vx_clock_seconds() - tb;
  st->sec_total = vx_clock_seconds() - t0;
  (void)pair_tests;
  return VX_OK;
}
