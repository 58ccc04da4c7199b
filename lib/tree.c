/* SPDX-License-Identifier: Apache-2.0 */
/* tree.c - vx_tree: load, save, inspect, prune, raw arrays. */
#include "lib/internal.h"
#include "formats/svo_tiled.h"
#include "sampler/sampler.h"
#include "svo/lod.h"

#include <stdlib.h>

vx_tree *vx_tree_new(void) { return (vx_tree *)vx_calloc(1, sizeof(vx_tree)); }

void vx_tree_free(vx_tree *t) {
  if (!t) return;
  if (t->has_source) vx_input_release(&t->source);
  vx_octree_free(&t->oct);
  vx_free(t->resigned);
  vx_band_cache_free(t->band_cache);
  vx_free(t);
}

vx_status vx_read_opts_in(const vx_read_opts *opts, vx_svo_read_opts *ro, vx_error *err) {
  vx_read_opts o;
  vx_status s = VX_OPTS_IN(o, opts, err);
  if (s != VX_OK) return s;
  ro->max_level = o.levels == 0 ? -1 : (int)(o.levels > VX_MAX_DEPTH + 1 ? VX_MAX_DEPTH : o.levels - 1);
  ro->mem_limit = o.mem_limit;
  ro->check_rest = 0;
  return VX_OK;
}

/* A tiled file as one tree (vx_tiled_stitch: depth <= VX_MAX_DEPTH), its file info filled. */
static vx_status stitch(vx_tiled *tl, vx_status st, const vx_svo_read_opts *ro, vx_tree *t,
                        vx_error *err) {
  if (st != VX_OK) return st;
  st = vx_tiled_stitch(tl, ro, &t->oct, err);
  memset(&t->file, 0, sizeof t->file);
  t->file.version = VX_SVO_TILED_VERSION;
  vx_tiled_totals(tl, NULL, NULL, &t->file.file_bytes);
  t->tiles = vx_tiled_tile_count(tl);
  t->tile_depth = vx_tiled_get_header(tl)->tile_depth;
  vx_tiled_close(tl);
  return st;
}

vx_status vx_tree_load(const char *path, const vx_read_opts *opts, vx_tree **out, vx_error *err) {
  if (!out) return vx_error_set(err, VX_ERR_INVALID_ARG, "no place for the tree");
  *out = NULL;
  if (!path || !*path) return vx_error_set(err, VX_ERR_INVALID_ARG, "empty .svo path");
  vx_svo_read_opts ro;
  vx_status os = vx_read_opts_in(opts, &ro, err);
  if (os != VX_OK) return os;
  vx_tree *t = vx_tree_new();
  if (!t) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  vx_status st;
  if (vx_svo_path_is_tiled(path)) {
    vx_tiled *tl = NULL;
    st = vx_tiled_open(path, &ro, &tl, err);
    st = stitch(tl, st, &ro, t, err);
  } else {
    st = vx_svo_read(path, &ro, &t->oct, &t->file, err);
  }
  if (st != VX_OK) {
    vx_free(t);
    return st;
  }
  if (vx_file_id_of(path, &t->source)) {
    t->has_source = 1;
    vx_input_hold(&t->source);
  }
  *out = t;
  return VX_OK;
}

vx_status vx_tree_load_memory(const void *data, size_t size, const vx_read_opts *opts,
                              vx_tree **out, vx_error *err) {
  if (!out) return vx_error_set(err, VX_ERR_INVALID_ARG, "no place for the tree");
  *out = NULL;
  if (!data && size) return vx_error_set(err, VX_ERR_INVALID_ARG, "no data");
  vx_svo_read_opts ro;
  vx_status os = vx_read_opts_in(opts, &ro, err);
  if (os != VX_OK) return os;
  vx_tree *t = vx_tree_new();
  if (!t) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  vx_status st;
  if (vx_svo_is_tiled((const uint8_t *)data, size)) {
    vx_tiled *tl = NULL;
    st = vx_tiled_open_memory((const uint8_t *)data, size, &ro, &tl, err);
    st = stitch(tl, st, &ro, t, err);
  } else {
    st = vx_svo_decode((const uint8_t *)data, size, &ro, &t->oct, &t->file, err);
  }
  if (st != VX_OK) {
    vx_free(t);
    return st;
  }
  *out = t;
  return VX_OK;
}

vx_status vx_tree_save(const vx_tree *t, const char *path, const vx_save_opts *opts,
                       vx_error *err) {
  if (!t) return vx_error_set(err, VX_ERR_INVALID_ARG, "no tree to save");
  vx_save_opts o;
  vx_status s = VX_OPTS_IN(o, opts, err);
  if (s != VX_OK) return s;
  if (o.zstd_level < 0 || o.zstd_level > 22)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "zstd level %d outside 1..22 (0: by size)",
                        o.zstd_level);
  return vx_svo_write(path, &t->oct, o.zstd_level, o.progress, o.user, err);
}

vx_status vx_tree_encode(const vx_tree *t, const vx_save_opts *opts, void **data, size_t *size,
                         vx_error *err) {
  if (!t || !data || !size) return vx_error_set(err, VX_ERR_INVALID_ARG, "no tree or no output");
  vx_save_opts o;
  vx_status os = VX_OPTS_IN(o, opts, err);
  if (os != VX_OK) return os;
  uint8_t *buf = NULL;
  vx_status st = vx_svo_encode(&t->oct, o.zstd_level, &buf, size, err);
  *data = buf;
  return st;
}

void vx_buffer_free(void *data) { vx_free(data); }

vx_status vx_tree_get_info(const vx_tree *t, vx_tree_info *info) {
  if (!t || !info) return VX_ERR_INVALID_ARG;
  const vx_octree *o = &t->oct;
  vx_tree_info i;
  memset(&i, 0, sizeof i);
  i.struct_size = sizeof i;
  i.depth = o->depth;
  i.resolution = 1u << o->depth;
  i.levels_loaded = o->levels_loaded;
  i.node_count = o->node_count;
  i.voxel_count = o->voxel_count;
  for (int k = 0; k < 3; k++) i.origin[k] = o->xf.origin[k];
  i.scale = o->xf.scale;
  i.band = o->band;
  i.prune_error = o->prune_error;
  i.memory_bytes = o->node_count * sizeof(vx_node) + o->voxel_count * sizeof(vx_voxel);
  i.file_bytes = t->file.file_bytes;
  i.file_version = t->file.version;
  i.tile_depth = t->tile_depth;
  i.tile_count = t->tiles;
  i.has_color = o->node_color != NULL || o->voxel_color != NULL;
  i.color_bytes = i.has_color ? (o->node_count + o->voxel_count) * sizeof(uint32_t) : 0;
  VX_STATS_OUT(info, i);
  return VX_OK;
}

vx_status vx_tree_get_level(const vx_tree *t, uint32_t level, vx_level_stats *st) {
  if (!t || !st || level > t->oct.depth) return VX_ERR_INVALID_ARG;
  const vx_octree *o = &t->oct;
  vx_level_bytes lb[VX_MAX_DEPTH + 1];
  vx_octree_level_stats(o, lb);
  vx_level_stats r;
  memset(&r, 0, sizeof r);
  r.struct_size = sizeof r;
  r.level = level;
  r.cells = lb[level].cells;
  r.leaves = lb[level].leaves;
  r.topology_bytes = lb[level].topology_bytes;
  r.lod_bytes = lb[level].lod_bytes;
  r.field_bytes = lb[level].field_bytes;
  r.disk_bytes = t->file.level_disk_bytes[level];
  if ((o->node_color || o->voxel_color) && level < o->levels_loaded)
    r.color_bytes = lb[level].cells * sizeof(uint32_t);
  r.color_disk_bytes = t->file.level_color_disk_bytes[level];
  uint64_t plain_nodes = 0;
  for (uint32_t l = 0; l <= level; l++) {
    r.render_bytes += l < o->depth ? lb[l].cells * sizeof(vx_node) : lb[l].field_bytes;
    if (l < level) plain_nodes += lb[l].cells;
  }
  r.float8_bytes = plain_nodes * 8 + r.cells * 32;
  double side = (double)((uint64_t)1 << level) + 1.0;
  r.dense_bytes = (uint64_t)(side * side * side * 4.0);
  VX_STATS_OUT(st, r);
  return VX_OK;
}

/* b (a copy of a's arrays) gets copies of a's colours too. */
static vx_status copy_colors(const vx_octree *a, vx_octree *b, vx_error *err) {
  if (a->node_color && a->node_count) {
    b->node_color = (uint32_t *)vx_malloc((size_t)a->node_count * sizeof(uint32_t));
    if (!b->node_color) return vx_error_set(err, VX_ERR_NOMEM, "out of memory for colours");
    memcpy(b->node_color, a->node_color, (size_t)a->node_count * sizeof(uint32_t));
  }
  if (a->voxel_color && a->voxel_count) {
    b->voxel_color = (uint32_t *)vx_malloc((size_t)a->voxel_count * sizeof(uint32_t));
    if (!b->voxel_color) return vx_error_set(err, VX_ERR_NOMEM, "out of memory for colours");
    memcpy(b->voxel_color, a->voxel_color, (size_t)a->voxel_count * sizeof(uint32_t));
  }
  return VX_OK;
}

vx_status vx_tree_prune(const vx_tree *t, float max_error, vx_tree **out, vx_error *err) {
  if (!out) return vx_error_set(err, VX_ERR_INVALID_ARG, "no place for the tree");
  *out = NULL;
  if (!t) return vx_error_set(err, VX_ERR_INVALID_ARG, "no tree to prune");
  const vx_octree *a = &t->oct;
  if (a->levels_loaded != a->depth + 1)
    return vx_error_set(err, VX_ERR_INVALID_ARG,
                        "cannot prune a partially loaded tree (levels %u of %u)",
                        a->levels_loaded, a->depth + 1);
  if (!(max_error >= 0.0f) || !(max_error < 1e30f))
    return vx_error_set(err, VX_ERR_INVALID_ARG, "max error %g is not a number >= 0",
                        (double)max_error);
  vx_tree *p = vx_tree_new();
  if (!p) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  vx_octree *b = &p->oct;
  *b = *a;
  b->nodes = NULL;
  b->voxels = NULL;
  b->node_color = NULL;
  b->voxel_color = NULL;
  vx_status st = vx_octree_alloc(b, err);
  if (st == VX_OK) {
    if (a->node_count) memcpy(b->nodes, a->nodes, a->node_count * sizeof(vx_node));
    if (a->voxel_count) memcpy(b->voxels, a->voxels, a->voxel_count * sizeof(vx_voxel));
    st = copy_colors(a, b, err);
  }
  if (st == VX_OK) {
    st = vx_octree_prune(b, max_error, err);
    if (st == VX_OK && max_error > b->prune_error) b->prune_error = max_error;
  }
  if (st != VX_OK) {
    vx_tree_free(p);
    return st;
  }
  *out = p;
  return VX_OK;
}

const void *vx_tree_nodes(const vx_tree *t, uint64_t *count) {
  if (count) *count = t ? t->oct.node_count : 0;
  return t ? (const void *)t->oct.nodes : NULL;
}

const void *vx_tree_voxels(const vx_tree *t, uint64_t *count) {
  if (count) *count = t ? t->oct.voxel_count : 0;
  return t ? (const void *)t->oct.voxels : NULL;
}

uint64_t vx_tree_level_count(const vx_tree *t, uint32_t level) {
  if (!t || level > t->oct.depth || level >= t->oct.levels_loaded) return 0;
  return t->oct.level_count[level];
}

uint64_t vx_tree_level_first(const vx_tree *t, uint32_t level) {
  if (!t || level >= t->oct.depth || level >= t->oct.levels_loaded) return 0;
  return t->oct.level_first[level];
}

const uint32_t *vx_tree_node_colors(const vx_tree *t, uint64_t *count) {
  const uint32_t *c = t && t->oct.node_count ? t->oct.node_color : NULL;
  if (count) *count = c ? t->oct.node_count : 0;
  return c;
}

const uint32_t *vx_tree_voxel_colors(const vx_tree *t, uint64_t *count) {
  const uint32_t *c = t && t->oct.voxel_count ? t->oct.voxel_color : NULL;
  if (count) *count = c ? t->oct.voxel_count : 0;
  return c;
}
