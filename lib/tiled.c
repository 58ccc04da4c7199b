/* SPDX-License-Identifier: Apache-2.0 */
/* tiled.c - vx_tiled_file: a tiled .svo read tile by tile (include/voxlod/tree.h), over the
 * reader of formats/svo_tiled.h. */
#include "lib/internal.h"
#include "formats/svo_tiled.h"
#include "lib/tiled_arena.h"
#include "marcher/marcher.h"

struct vx_tiled_file {
  vx_tiled *t;
  char *path; /* as opened: readers of their own (a tiled renderer's loaders) open it again */
  vx_svo_read_opts ro;
  int has_source;
  vx_file_id source;
  int scanned;                               /* the tiles' headers summed */
  uint64_t count[VX_MAX_TILED_DEPTH + 1];    /* cells per level of the whole tree */
  uint64_t disk[VX_MAX_TILED_DEPTH + 1];     /* compressed bytes per level (tile levels) */
  uint64_t cdisk[VX_MAX_TILED_DEPTH + 1];    /* ... of their colours */
  vx_rs_store *rs; /* the re-signed voxels found while sampling (lib/tiled_arena.h) */
  vx_tile_cache *tiles; /* tiles decoded for samples and colour queries, kept between calls */
};

vx_status vx_tiled_file_open(const char *path, const vx_read_opts *opts, vx_tiled_file **out,
                             vx_error *err) {
  if (!out) return vx_error_set(err, VX_ERR_INVALID_ARG, "no place for the tiled file");
  *out = NULL;
  if (!path || !*path) return vx_error_set(err, VX_ERR_INVALID_ARG, "empty .svo path");
  vx_tiled_file *f = (vx_tiled_file *)vx_calloc(1, sizeof *f);
  if (!f) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  vx_status s = vx_read_opts_in(opts, &f->ro, err);
  if (s == VX_OK && !vx_svo_path_is_tiled(path))
    s = vx_error_set(err, VX_ERR_FORMAT, "%s: not a tiled .svo file", path);
  if (s == VX_OK) s = vx_tiled_open(path, &f->ro, &f->t, err);
  if (s == VX_OK && !(f->path = (char *)vx_malloc(strlen(path) + 1)))
    s = vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  if (s != VX_OK) {
    vx_tiled_close(f->t);
    vx_free(f);
    return s;
  }
  memcpy(f->path, path, strlen(path) + 1);
  if (vx_file_id_of(path, &f->source)) {
    f->has_source = 1;
    vx_input_hold(&f->source);
  }
  *out = f;
  return VX_OK;
}

void vx_tiled_file_close(vx_tiled_file *f) {
  if (!f) return;
  if (f->has_source) vx_input_release(&f->source);
  vx_tile_cache_free(f->tiles);
  vx_rs_store_free(f->rs);
  vx_tiled_close(f->t);
  vx_free(f->path);
  vx_free(f);
}

vx_status vx_tiled_file_get_info(const vx_tiled_file *f, vx_tree_info *info) {
  if (!f || !info) return VX_ERR_INVALID_ARG;
  const vx_tiled_header *h = vx_tiled_get_header(f->t);
  vx_tree_info i;
  memset(&i, 0, sizeof i);
  i.struct_size = sizeof i;
  i.depth = h->depth;
  i.resolution = 1u << h->depth;
  vx_tiled_totals(f->t, &i.node_count, &i.voxel_count, &i.file_bytes);
  for (int k = 0; k < 3; k++) i.origin[k] = h->xf.origin[k];
  i.scale = h->xf.scale;
  i.band = h->band;
  i.prune_error = h->prune_error;
  i.memory_bytes = i.node_count * sizeof(vx_node) + i.voxel_count * sizeof(vx_voxel);
  i.has_color = h->color != 0;
  i.color_bytes = i.has_color ? (i.node_count + i.voxel_count) * sizeof(uint32_t) : 0;
  i.file_version = VX_SVO_TILED_VERSION;
  i.tile_depth = h->tile_depth;
  i.tile_count = vx_tiled_tile_count(f->t);
  VX_STATS_OUT(info, i);
  return VX_OK;
}

/* The cells and compressed bytes of every level: the top tree's, then the tiles' headers. */
static vx_status scan(vx_tiled_file *f, vx_error *err) {
  if (f->scanned) return VX_OK;
  const vx_tiled_header *h = vx_tiled_get_header(f->t);
  const uint32_t K = h->depth - h->tile_depth;
  memset(f->count, 0, sizeof f->count);
  memset(f->disk, 0, sizeof f->disk);
  memset(f->cdisk, 0, sizeof f->cdisk);
  const vx_octree *top = vx_tiled_top(f->t);
  for (uint32_t l = 0; l < K; l++) f->count[l] = top->level_count[l];
  for (uint64_t i = 0; i < vx_tiled_tile_count(f->t); i++) {
    vx_octree t;
    vx_svo_file_info fi;
    vx_status s = vx_tiled_tile_header(f->t, i, &t, &fi, err);
    if (s != VX_OK) return s;
    for (uint32_t l = 0; l <= h->tile_depth; l++) {
      f->count[K + l] += t.level_count[l];
      f->disk[K + l] += fi.level_disk_bytes[l];
      f->cdisk[K + l] += fi.level_color_disk_bytes[l];
    }
  }
  f->scanned = 1;
  return VX_OK;
}

vx_status vx_tiled_file_get_level(vx_tiled_file *f, uint32_t level, vx_level_stats *st,
                                  vx_error *err) {
  if (!f || !st) return vx_error_set(err, VX_ERR_INVALID_ARG, "no tiled file or no place");
  const vx_tiled_header *h = vx_tiled_get_header(f->t);
  const uint32_t D = h->depth;
  if (level > D)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "level %u of a %u-level tree", level, D);
  vx_status s = scan(f, err);
  if (s != VX_OK) return s;
  vx_level_stats r;
  memset(&r, 0, sizeof r);
  r.struct_size = sizeof r;
  r.level = level;
  r.cells = f->count[level];
  if (level < D) { /* as vx_octree_level_stats counts a node: child + mask, and its plane */
    r.topology_bytes = r.cells * 5;
    r.lod_bytes = r.cells * 11;
  } else {
    r.field_bytes = r.cells * sizeof(vx_voxel);
  }
  r.disk_bytes = f->disk[level];
  if (h->color) r.color_bytes = r.cells * sizeof(uint32_t);
  r.color_disk_bytes = f->cdisk[level];
  uint64_t plain_nodes = 0;
  for (uint32_t l = 0; l <= level; l++) {
    r.render_bytes += l < D ? f->count[l] * sizeof(vx_node) : f->count[l] * sizeof(vx_voxel);
    if (l < level) plain_nodes += f->count[l];
  }
  r.float8_bytes = plain_nodes * 8 + r.cells * 32;
  const double side = (double)((uint64_t)1 << level) + 1.0;
  r.dense_bytes = (uint64_t)(side * side * side * 4.0);
  VX_STATS_OUT(st, r);
  return VX_OK;
}

vx_status vx_tiled_file_get_tile(const vx_tiled_file *f, uint64_t i, vx_tile_info *info) {
  if (!f || !info || i >= vx_tiled_tile_count(f->t)) return VX_ERR_INVALID_ARG;
  const vx_tiled_header *h = vx_tiled_get_header(f->t);
  const vx_tile_entry *e = vx_tiled_tile(f->t, i);
  vx_tile_info r;
  memset(&r, 0, sizeof r);
  r.struct_size = sizeof r;
  r.code = e->code;
  vx_morton_decode(e->code, &r.cell[0], &r.cell[1], &r.cell[2]);
  r.voxel_count = e->voxels;
  r.node_count = e->nodes;
  r.file_bytes = e->length;
  vx_transform xf;
  vx_tile_transform(h, e->code, &xf);
  for (int k = 0; k < 3; k++) r.origin[k] = xf.origin[k];
  r.edge = ldexp(h->xf.scale, (int)h->tile_depth);
  VX_STATS_OUT(info, r);
  return VX_OK;
}

vx_status vx_tiled_file_load_tile(vx_tiled_file *f, uint64_t i, const vx_read_opts *opts,
                                  vx_tree **out, vx_error *err) {
  if (!out) return vx_error_set(err, VX_ERR_INVALID_ARG, "no place for the tile");
  *out = NULL;
  if (!f) return vx_error_set(err, VX_ERR_INVALID_ARG, "no tiled file");
  vx_svo_read_opts ro;
  vx_status s = vx_read_opts_in(opts, &ro, err);
  if (s != VX_OK) return s;
  vx_tree *t = vx_tree_new();
  if (!t) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  s = vx_tiled_read_tile(f->t, i, &ro, &t->oct, err);
  if (s != VX_OK) {
    vx_free(t);
    return s;
  }
  t->file.version = 2;
  t->file.file_bytes = vx_tiled_tile(f->t, i)->length;
  *out = t;
  return VX_OK;
}

vx_tiled *vx_tiled_file_reader(vx_tiled_file *f, vx_svo_read_opts *ro) {
  if (ro) *ro = f->ro;
  return f->t;
}

const char *vx_tiled_file_path(const vx_tiled_file *f) { return f->path; }

void vx_tiled_file_shape(const vx_tiled_file *f, vx_octree *out) {
  const vx_tiled_header *h = vx_tiled_get_header(f->t);
  *out = *vx_tiled_top(f->t);
  out->depth = h->depth;
  out->xf = h->xf;
  out->band = h->band;
  out->prune_error = h->prune_error;
}

void vx_tiled_camera_orbit(const vx_tiled_file *f, double azimuth_deg, double elevation_deg,
                           double fov_y_deg, vx_camera *cam) {
  if (!f || !cam) return;
  vx_octree shape;
  vx_tiled_file_shape(f, &shape);
  vx_march_orbit(&shape, azimuth_deg, elevation_deg, fov_y_deg, cam);
}

vx_status vx_tiled_file_store(vx_tiled_file *f, vx_rs_store **out, vx_error *err) {
  if (!f->rs) {
    vx_status s = vx_rs_store_new(vx_tiled_tile_count(f->t), &f->rs, err);
    if (s != VX_OK) return s;
  }
  *out = f->rs;
  return VX_OK;
}

vx_status vx_tiled_file_cache(vx_tiled_file *f, uint64_t budget, vx_tile_cache **out,
                              vx_error *err) {
  if (!f->tiles) {
    vx_rs_store *rs = NULL;
    vx_status s = vx_tiled_file_store(f, &rs, err);
    if (s == VX_OK) s = vx_tile_cache_new(f->t, &f->ro, budget, rs, &f->tiles, err);
    if (s != VX_OK) return s;
  }
  vx_tile_cache_set_budget(f->tiles, budget);
  *out = f->tiles;
  return VX_OK;
}
