/* SPDX-License-Identifier: Apache-2.0 */
/* export.c - vx_tree_export (include/voxlod/export.h): options and output checked before any
 * work, the cut at the chosen level (formats/grid_cut.h), then the format's writer
 * (formats/grid_export.h). Grids take the cut's points; the voxel formats and PLY its cells. */
#include "lib/internal.h"
#include "formats/grid_export.h"
#include "lib/tiled_arena.h"
#include "lib/tiled_cut.h"
#include "sys/system.h"

#include <ctype.h>
#include <string.h>

static int ends_with(const char *s, const char *ext) {
  size_t n = strlen(s), m = strlen(ext);
  if (n < m) return 0;
  for (size_t i = 0; i < m; i++)
    if (tolower((unsigned char)s[n - m + i]) != ext[i]) return 0;
  return 1;
}

vx_export_format vx_export_format_of(const char *path) {
  if (!path) return VX_EXPORT_AUTO;
  if (ends_with(path, ".nvdb")) return VX_EXPORT_NVDB;
  if (ends_with(path, ".vdb")) return VX_EXPORT_VDB;
  if (ends_with(path, ".binvox")) return VX_EXPORT_BINVOX;
  if (ends_with(path, ".vox")) return VX_EXPORT_VOX;
  if (ends_with(path, ".ply")) return VX_EXPORT_PLY;
  return VX_EXPORT_AUTO;
}

int vx_export_available(vx_export_format f) {
  switch (f) {
  case VX_EXPORT_NVDB: return vx_nvdb_write_available();
  case VX_EXPORT_VDB: return vx_vdb_write_available();
  case VX_EXPORT_BINVOX:
  case VX_EXPORT_VOX:
  case VX_EXPORT_PLY: return 1;
  default: return 0;
  }
}

/* A grid name: 1..255 bytes, printable ASCII (NanoVDB keeps 255 in its header). */
static int good_name(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > 255) return 0;
  for (size_t i = 0; i < n; i++)
    if (s[i] < 0x20 || s[i] > 0x7e) return 0;
  return 1;
}

/* The options against the tree's shape (depth, band, transform: a tiled file's whole tree) and
 * the path; what is left to defaults filled in. */
static vx_status check(const vx_octree *oc, const char *path, vx_export_opts *o, vx_error *err) {
  if (!path || !*path) return vx_error_set(err, VX_ERR_INVALID_ARG, "empty output path");
  vx_status ws = vx_octree_check_world(oc, VX_WORLD_FLOAT, err);
  if (ws != VX_OK) return ws;
  if (o->format == VX_EXPORT_AUTO) o->format = vx_export_format_of(path);
  if (o->format == VX_EXPORT_AUTO)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "'%s': unknown output format (the extension must "
                        "be .nvdb, .vdb, .binvox, .vox or .ply)", path);
  if (o->format < VX_EXPORT_NVDB || o->format > VX_EXPORT_PLY)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "unknown export format %d", (int)o->format);
  /* options of other formats are refused, not ignored */
  int grid = o->format == VX_EXPORT_NVDB || o->format == VX_EXPORT_VDB;
  int voxels = o->format == VX_EXPORT_BINVOX || o->format == VX_EXPORT_VOX;
  if ((o->band != 0.0f || o->grid_name) && !grid)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "'%s': a band and a grid name are for .nvdb and "
                        ".vdb grids", path);
  if (o->solid && !voxels)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "'%s': solid is for .binvox and .vox", path);
  if (o->surface_points && o->format != VX_EXPORT_PLY)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "'%s': surface points are for .ply", path);
  if (o->levels > oc->depth + 1)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "level %u is beyond the tree's depth %u (levels "
                        "0..%u)", o->levels - 1, oc->depth, oc->depth);
  /* what a format cannot hold is refused before any work */
  uint32_t res = 1u << (o->levels ? o->levels - 1 : oc->depth);
  if (o->format == VX_EXPORT_VOX && res > VX_VOX_MAX_RES)
    return vx_error_set(err, VX_ERR_LIMIT, "a %u^3 grid is too large for .vox (MagicaVoxel's "
                        "world is %u voxels wide): export a coarser level with --lod", res,
                        VX_VOX_MAX_RES);
  if (o->format == VX_EXPORT_BINVOX && res > VX_BINVOX_MAX_RES)
    return vx_error_set(err, VX_ERR_LIMIT, "a %u^3 grid is too large for .binvox (readers hold it "
                        "densely; at most %u^3): export a coarser level with --lod", res,
                        VX_BINVOX_MAX_RES);
  /* The tree's band by default, brought into the range a level set needs (a tree built with a
   * band under a voxel still exports, at +-1 voxel). */
  if (o->band == 0.0f) o->band = oc->band < 1.0f ? 1.0f : oc->band > 64.0f ? 64.0f : oc->band;
  if (!(o->band >= 1.0f && o->band <= 64.0f))
    return vx_error_set(err, VX_ERR_INVALID_ARG, "band %g outside 1..64 voxels", (double)o->band);
  if (!o->grid_name) o->grid_name = "surface";
  if (!good_name(o->grid_name))
    return vx_error_set(err, VX_ERR_INVALID_ARG, "grid name '%.64s' must be 1 to 255 printable "
                        "ASCII characters", o->grid_name);
  if (!vx_export_available(o->format))
    return vx_error_set(err, VX_ERR_FORMAT, "this voxlod was built without %s: '%s' cannot be "
                        "written", o->format == VX_EXPORT_VDB ? "OpenVDB (libopenvdb-dev)"
                                                              : "the NanoVDB headers",
                        path);
  return VX_OK;
}

/* What a writer holds beyond its input, per value (grid point or PLY point), measured on a
 * 16384^3 sphere of 3.4M grid points (1.4M cells) and rounded up: NanoVDB's GridBuilder with its
 * tree, the finished grid and the stream it is copied through, 78 B; OpenVDB's tree and the
 * serialized file twice, 40 B; assimp's PLY exporter (our vertex and normal arrays, its scene
 * and blob), 113 B. Checked against what the limit leaves before the writer starts. A coloured
 * tree adds the Cd grid beside the level set (a Vec3f value is 3 floats: NanoVDB 3/4 more,
 * OpenVDB as much again) and to PLY points a colour (assimp's 16 B aiColor4D, 4 B in the file). */
static vx_status writer_fits(vx_export_format f, uint64_t values, int colored, uint64_t limit,
                             vx_error *err) {
  double per = f == VX_EXPORT_NVDB ? 96.0 : f == VX_EXPORT_VDB ? 56.0 : 128.0;
  if (colored) per += f == VX_EXPORT_NVDB ? 72.0 : f == VX_EXPORT_VDB ? 56.0 : 24.0;
  const double need = per * (double)values + 4.0 * 1048576.0, rss = (double)vx_resident_bytes();
  if (rss + need <= (double)limit) return VX_OK;
  char a[32], b[32];
  return vx_error_set(err, VX_ERR_LIMIT, "writing %llu %s needs about %s more, over the memory "
                      "limit of %s", (unsigned long long)values,
                      f == VX_EXPORT_PLY ? "points" : "grid values",
                      vx_bytes_text(need, a, sizeof a),
                      vx_bytes_text((double)limit, b, sizeof b));
}

/* The cut written in the chosen format (o checked), then freed; st's counts filled. */
static vx_status write_cut(vx_cut *cut, const char *path, const vx_export_opts *o, uint64_t limit,
                           vx_export_stats *st, vx_error *err) {
  st->level = cut->level;
  st->resolution = cut->res;
  st->cells = cut->count;
  st->plane_cells = cut->plane_cells;
  st->band = o->format == VX_EXPORT_NVDB || o->format == VX_EXPORT_VDB ? o->band : 0.0f;
  if (o->progress && o->progress(o->user, "writing", 0.0)) {
    vx_cut_free(cut);
    return vx_error_set(err, VX_ERR_INTERRUPTED, "interrupted before writing");
  }
  vx_status s;
  switch (o->format) {
  case VX_EXPORT_NVDB:
  case VX_EXPORT_VDB: {
    vx_grid_points g;
    memset(&g, 0, sizeof g);
    uint64_t *keys = NULL;
    float *values = NULL;
    for (int k = 0; k < 3; k++) g.origin[k] = cut->origin[k];
    g.h = cut->h;
    float *rgb = NULL;
    s = vx_cut_points(cut, o->band, limit, &keys, &values, &g.count, &g.pad, err);
    if (s == VX_OK && cut->rgba)
      s = vx_cut_point_colors(cut, keys, g.count, g.pad, limit, &rgb, err);
    vx_cut_free(cut); /* the writers need only the points */
    if (s == VX_OK) s = writer_fits(o->format, g.count, rgb != NULL, limit, err);
    if (s != VX_OK) {
      vx_free(keys);
      vx_free(values);
      vx_free(rgb);
      break;
    }
    g.rgb = rgb;
    g.keys = keys;
    g.values = values;
    g.band = o->band;
    g.name = o->grid_name;
    st->values = g.count;
    s = o->format == VX_EXPORT_NVDB ? vx_nvdb_write(path, &g, &st->file_bytes, err)
                                    : vx_vdb_write(path, &g, &st->file_bytes, err);
    vx_free(keys);
    vx_free(values);
    vx_free(rgb);
    break;
  }
  case VX_EXPORT_BINVOX:
    s = vx_binvox_write(path, cut, o->solid, limit, &st->values, &st->file_bytes, err);
    break;
  case VX_EXPORT_VOX:
    s = vx_vox_write(path, cut, o->solid, limit, &st->values, &st->models, &st->file_bytes, err);
    break;
  default:
    s = writer_fits(o->format, cut->count, cut->rgba != NULL, limit, err);
    if (s == VX_OK) s = vx_ply_points_write(path, cut, o->surface_points, &st->file_bytes, err);
    st->values = cut->count;
    break;
  }
  vx_cut_free(cut);
  if (s == VX_OK && o->progress) o->progress(o->user, "writing", 1.0);
  return s;
}

/* The export of a whole tree (oc) or of a tiled file (f, its shape in oc): checks, the cut, the
 * writer. */
static vx_status export_any(const vx_octree *oc, vx_tiled_file *f, const char *path,
                            const vx_export_opts *opts, vx_export_stats *stats, vx_error *err) {
  vx_export_opts o;
  vx_status s = VX_OPTS_IN(o, opts, err);
  if (s == VX_OK) s = check(oc, path, &o, err);
  if (s == VX_OK) s = vx_output_check(path, NULL, 0, NULL, err);
  if (s != VX_OK) return s;
  double t0 = vx_clock_seconds();
  uint32_t level = o.levels ? o.levels - 1 : oc->depth;
  uint64_t limit = o.mem_limit ? o.mem_limit : vx_default_mem_limit();
  vx_cut cut;
  s = f ? vx_tiled_cut(f, level, limit, o.progress, o.user, &cut, err)
        : vx_cut_build(oc, level, limit, o.progress, o.user, &cut, err);
  if (s != VX_OK) return s;
  vx_export_stats st;
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  if ((s = write_cut(&cut, path, &o, limit, &st, err)) != VX_OK) return s;
  st.seconds = vx_clock_seconds() - t0;
  if (stats) VX_STATS_OUT(stats, st);
  return VX_OK;
}

vx_status vx_tree_export(const vx_tree *t, const char *path, const vx_export_opts *opts,
                         vx_export_stats *stats, vx_error *err) {
  if (!t) return vx_error_set(err, VX_ERR_INVALID_ARG, "no tree to export");
  const vx_octree *oc = &t->oct;
  if (oc->levels_loaded != oc->depth + 1)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "cannot export a partially loaded tree (levels "
                        "%u of %u)", oc->levels_loaded, oc->depth + 1);
  return export_any(oc, NULL, path, opts, stats, err);
}

vx_status vx_tiled_file_export(vx_tiled_file *f, const char *path, const vx_export_opts *opts,
                               vx_export_stats *stats, vx_error *err) {
  if (!f) return vx_error_set(err, VX_ERR_INVALID_ARG, "no tiled file to export");
  vx_octree shape;
  vx_tiled_file_shape(f, &shape);
  return export_any(&shape, f, path, opts, stats, err);
}
