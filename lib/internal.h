/* SPDX-License-Identifier: Apache-2.0 */
/* internal.h - what the public handles of libvoxlod hold (include/voxlod.h is their contract),
 * and the helpers the lib/ sources share. The handles wrap the core's types: a vx_tree owns a
 * vx_octree, a vx_mesh a vx_soup.
 */
#ifndef VOXLOD_LIB_INTERNAL_H
#define VOXLOD_LIB_INTERNAL_H

#include <string.h>

#include "lib/abi.h"
#include "voxlod.h"
#include "sys/atomic_file.h"
#include "formats/svo_file.h"
#include "svo/soup.h"
#include "svo/svo.h"

struct vx_mesh {
  vx_soup soup;       /* the triangles, world coordinates, 9 floats each */
  double load_seconds;
  int has_source;     /* read from a file: `source` is held (atomic_file.h) */
  vx_file_id source;
  /* The indexed form, for meshes that have one (vx_mesher_extract, lib/mesher.c); the soup
   * holds the same triangles, for converting. NULL / 0 otherwise. */
  float *vertices;    /* vertex_count * 3 */
  float *normals;     /* vertex_count * 3 */
  uint64_t vertex_count;
  uint32_t *indices;  /* triangle_count * 3 */
  uint64_t triangle_count;
  uint8_t *colors;    /* vertex_count * 4 RGBA8 of the indexed form (a coloured tree's mesh), or
                         NULL */
  int has_mesher_stats;
  vx_mesher_stats mesher_stats;
  /* Made by vx_mesh_from_arrays: where each kept triangle's corners came from, for
   * vx_mesh_set_vertex_colors: src_idx (3 per triangle) the input indices, else src_tri the input
   * triangle (its vertices 3t..3t+2; NULL: none was dropped). */
  int from_arrays;
  uint64_t src_vertex_count;
  uint32_t *src_idx;
  uint32_t *src_tri;
};

struct vx_tree {
  vx_octree oct;
  vx_svo_file_info file; /* of the file it was read from (file.version 0: none) */
  uint32_t tile_depth;   /* read from a tiled file (stitched): its tiles' depth and count */
  uint64_t tiles;
  int has_source;
  vx_file_id source;
  /* the voxels the thin rule re-signed (sampler/resigned.h), found when first sampled (lib/sample.c;
   * atomic: samplers of one tree may start on several threads); NULL until then, and for a tree
   * without voxels loaded (for which finding them returns at once) */
  uint32_t *resigned;
  /* the band cache (sampler/band_cache.h), built by the first call that asks for it (atomic too) */
  struct vx_band_cache *band_cache;
};

/* A mesh made of the mesher's arrays (mesher/mesher.h), which it takes (dm is emptied, also on
 * failure), with its statistics, its soup made on `threads` threads (lib/mesher.c). */
struct vx_dc_mesh;
struct vx_dc_stats;
vx_status vx_mesh_of_dc(struct vx_dc_mesh *dm, const struct vx_dc_stats *ds, int threads,
                        vx_mesh **out, vx_error *err);

/* vx_tiled_file_mesh with windows that keep `margin` voxels around their middles (it uses 128:
 * lib/tiled_mesh.c); for tests of windows that keep less than all of themselves. */
vx_status vx_tiled_file_mesh_margin(vx_tiled_file *f, const vx_mesher_opts *opts, uint32_t margin,
                                    vx_mesh **out, vx_error *err);

/* The public read options as the .svo reader's (tree.c). */
vx_status vx_read_opts_in(const vx_read_opts *opts, vx_svo_read_opts *ro, vx_error *err);

/* A new, empty tree handle (vx_calloc'ed). */
vx_tree *vx_tree_new(void);

/* The GPU copy of t that renderer r draws from, or NULL (a CPU renderer, another tree): a sampler
 * reads it instead of uploading the tree again (lib/sample.c). */
struct vx_gpu_view *vx_renderer_gpu_view(const vx_renderer *r, const vx_tree *t);

/* Notes collected while a call runs: lines for the user that are not errors. */
typedef struct vx_notes {
  char text[1024];
} vx_notes;
void vx_notes_add(vx_notes *n, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* The result of a conversion (convert.h), from a mesh (convert.c) or a grid (grid_convert.c). */
struct vx_conversion {
  vx_tree *tree;
  vx_notes notes;
  vx_conversion_stats stats;
};

/* A sample call's options (copied in) checked for a tree of `depth` levels: the lod mode and
 * level (*cut: the level the rule cuts at), device, threads, nonfinite policy, band_cache 0 or 1
 * (sample.c; the tiled sampler's too). */
vx_status vx_sample_opts_check(const vx_sample_opts *o, uint32_t depth, uint32_t *cut,
                               vx_error *err);

/* The caller's options (may be NULL) with the defaults filled in, checked. */
vx_status vx_convert_opts_ready(const vx_convert_opts *opts, vx_convert_opts *o, vx_error *err);

/* The directory for spill files: o->temp_dir, else out_dir (taken: freed or returned), else
 * $TMPDIR or /tmp; NULL when out of memory. */
char *vx_convert_spill_dir(const vx_convert_opts *o, char *out_dir);

/* The end of every conversion: the file's size into c's statistics, the tree into c (keep_tree)
 * or freed, and c handed out (*out, when out is not NULL) when s is VX_OK, else freed. Returns s
 * (or VX_ERR_NOMEM). */
vx_status vx_conversion_finish(vx_status s, vx_conversion *c, vx_octree *tree,
                               const char *out_path, int keep_tree, vx_conversion **out,
                               vx_error *err);

#endif
