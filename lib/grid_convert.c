/* SPDX-License-Identifier: Apache-2.0 */
/* grid_convert.c - vx_convert_grid and vx_convert_grid_to_file (include/voxlod/convert.h): an
 * OpenVDB level set -> tree, the mesh pipeline's later half.
 *
 * Policy, in order:
 * 1. Options and the output are checked before any work, as vx_convert does.
 * 2. The file's outer structure is parsed here (formats/vdb_scan.c) and the grid chosen; a file
 *    without a float level set is refused with the list of its grids, without running OpenVDB.
 * 3. OpenVDB reads and resamples the grid in a child process (formats/vdb_isolated.c) under the
 *    time and memory limits; the surface voxels it sends back are checked again.
 * 4. The octree is built from them (vx_octree_build), its planes fitted, optionally pruned, and
 *    written by the one .svo writer: the same steps and bytes a mesh's voxels get.
 */
#include "lib/internal.h"
#include "formats/vdb_read.h"
#include "svo/lod.h"
#include "sys/system.h"

#include <math.h>
#include <stdio.h>
#include <sys/stat.h>

/* The conversion: the tree to out_path (when not NULL) and kept in the result (keep_tree). */
static vx_status convert_grid(const char *path, const vx_grid_opts *gopts,
                              const vx_convert_opts *opts, const char *out_path, int keep_tree,
                              vx_conversion **out, vx_error *err) {
  if (out) *out = NULL;
  if (!path || !*path) return vx_error_set(err, VX_ERR_INVALID_ARG, "empty .vdb path");
  vx_grid_opts g;
  vx_convert_opts o;
  vx_status s = VX_OPTS_IN(g, gopts, err);
  if (s != VX_OK || (s = VX_OPTS_IN(o, opts, err)) != VX_OK) return s;
  if (o.band == 0.0f) o.band = 2.0f;
  if (o.mem_limit == 0) o.mem_limit = vx_default_mem_limit();
  uint32_t r = o.resolution;
  if (r && (r < 2 || r > (1u << VX_MAX_DEPTH) || (r & (r - 1))))
    return vx_error_set(err, VX_ERR_INVALID_ARG, "resolution %u is not a power of two from 2 to "
                        "%u (0: the grid's own voxel size)", r, 1u << VX_MAX_DEPTH);
  if (!(o.max_error >= 0.0f) || !(o.max_error < 1e30f))
    return vx_error_set(err, VX_ERR_INVALID_ARG, "max error %g is not a number >= 0",
                        (double)o.max_error);
  if (!(o.band >= 1.0f && o.band <= 64.0f))
    return vx_error_set(err, VX_ERR_INVALID_ARG, "band %g outside 1..64 voxels", (double)o.band);
  if (o.threads < 0 || o.threads > 1024)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "thread count %d outside 0..1024", o.threads);
  if (o.device == VX_DEVICE_GPU)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "a level set is converted on the CPU: the GPU "
                        "does not apply (ask for the CPU or for either device)");
  if (o.zstd_level < 0 || o.zstd_level > 22)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "zstd level %d outside 1..22 (0: by size)",
                        o.zstd_level);
  if (!(g.timeout_s == g.timeout_s)) return vx_error_set(err, VX_ERR_INVALID_ARG, "bad time-out");
  double timeout = g.timeout_s == 0.0 ? 300.0 : g.timeout_s;
  if (out_path && (s = vx_output_check(out_path, &path, 1, NULL, err)) != VX_OK) return s;
  double t0 = vx_clock_seconds();
  if (o.progress && o.progress(o.user, "reading", 0.0))
    return vx_error_set(err, VX_ERR_INTERRUPTED, "interrupted");

  vx_vdb_listing *l = (vx_vdb_listing *)vx_malloc(sizeof *l);
  if (!l) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  uint32_t pick = 0;
  char name[sizeof l->grids[0].name];
  s = vx_vdb_scan(path, l, err);
  if (s == VX_OK) s = vx_vdb_pick(l, path, g.grid, &pick, err);
  if (s == VX_OK) snprintf(name, sizeof name, "%s", pick < l->listed ? l->grids[pick].name : g.grid);
  vx_free(l);
  if (s != VX_OK) return s;

  vx_vdb_surface surf;
  s = vx_vdb_surface_read_isolated(path, name, r, o.band, o.threads, timeout, o.mem_limit, &surf,
                                   err);
  if (s != VX_OK) return s;
  vx_conversion *b = (vx_conversion *)vx_calloc(1, sizeof *b);
  vx_octree tree;
  memset(&tree, 0, sizeof tree);
  if (!b) s = vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  if (s == VX_OK && o.progress && o.progress(o.user, "tree", 0.0))
    s = vx_error_set(err, VX_ERR_INTERRUPTED, "interrupted");
  /* the tree beside the surface it is built from (held already): its voxels (8 B), nodes (16 B,
   * about one per three voxels) and the plane fit's scratch; then the writer's buffers and zstd
   * contexts. Measured: 12 B a voxel more than the surface at the peak (a 1024^3 sphere, 4.9M
   * voxels); 24 B and 32 MiB leave room for the writer */
  double need = (double)vx_resident_bytes() + (double)surf.count * 24.0 + 32.0 * 1048576.0;
  if (s == VX_OK && o.mem_limit && need > (double)o.mem_limit) {
    char a[32], lim[32];
    s = vx_error_set(err, VX_ERR_LIMIT, "the tree of %llu surface voxels needs about %s, over the "
                     "memory limit of %s", (unsigned long long)surf.count,
                     vx_bytes_text(need, a, sizeof a),
                     vx_bytes_text((double)o.mem_limit, lim, sizeof lim));
  }
  if (s == VX_OK) s = vx_octree_build(surf.depth, surf.codes, surf.voxels, surf.count, &tree, err);
  uint64_t voxels = surf.count;
  uint32_t res = 1u << surf.depth;
  if (b) {
    if (surf.resampled)
      vx_notes_add(&b->notes, "resampled: the level set was sampled at voxel size %g (the file's: "
                   "%g%s)", surf.scale, surf.src_voxel,
                   surf.widened ? ", its narrow band widened first" : "");
  }
  if (s == VX_OK) {
    for (int k = 0; k < 3; k++) tree.xf.origin[k] = surf.origin[k];
    tree.xf.scale = surf.scale;
    tree.band = o.band;
  }
  vx_vdb_surface_free(&surf);
  if (s == VX_OK) s = vx_octree_fit_planes(&tree, o.progress, o.user, err);
  if (s == VX_OK && o.max_error > 0.0f) {
    s = vx_octree_prune(&tree, o.max_error, err);
    tree.prune_error = o.max_error;
  }
  if (s == VX_OK) s = vx_octree_validate(&tree, err);
  double t1 = vx_clock_seconds();
  if (s == VX_OK && out_path) s = vx_svo_write(out_path, &tree, o.zstd_level, o.progress, o.user, err);
  double t2 = vx_clock_seconds();
  if (s == VX_OK) {
    vx_conversion_stats *st = &b->stats;
    st->struct_size = sizeof *st;
    st->resolution = res;
    st->surface_voxels = voxels;
    st->nodes = tree.node_count;
    st->sec_build = t1 - t0;
    st->sec_write = out_path ? t2 - t1 : 0.0;
    st->sec_total = t2 - t0;
    st->sec_voxels = t1 - t0;
  }
  return vx_conversion_finish(s, b, &tree, out_path, keep_tree, out, err);
}

vx_status vx_convert_grid(const char *vdb_path, const vx_grid_opts *gopts,
                          const vx_convert_opts *opts, vx_conversion **out, vx_error *err) {
  if (!out) return vx_error_set(err, VX_ERR_INVALID_ARG, "no place for the result");
  return convert_grid(vdb_path, gopts, opts, NULL, 1, out, err);
}

vx_status vx_convert_grid_to_file(const char *vdb_path, const vx_grid_opts *gopts,
                                  const vx_convert_opts *opts, const char *path,
                                  vx_conversion **out, vx_error *err) {
  if (out) *out = NULL;
  if (!path || !*path) return vx_error_set(err, VX_ERR_INVALID_ARG, "empty output path");
  return convert_grid(vdb_path, gopts, opts, path, 0, out, err);
}
