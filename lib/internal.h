/* internal.h - what the public handles of libvoxlod hold (include/voxlod.h is their contract),
 * and the helpers the lib/ sources share. The handles wrap the core's types: a vx_tree owns a
 * vx_octree, a vx_mesh a vx_soup.
 */
#ifndef VOXLOD_LIB_INTERNAL_H
#define VOXLOD_LIB_INTERNAL_H

#include <string.h>

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
  /* The indexed form, for meshes that have one (vx_mesh_from_tree, lib/meshing.c); the soup
   * holds the same triangles, for converting. NULL / 0 otherwise. */
  float *vertices;    /* vertex_count * 3 */
  float *normals;     /* vertex_count * 3 */
  uint64_t vertex_count;
  uint32_t *indices;  /* triangle_count * 3 */
  uint64_t triangle_count;
  int has_mesh_stats;
  vx_mesh_stats mesh_stats;
};

struct vx_tree {
  vx_octree oct;
  vx_svo_file_info file; /* of the file it was read from (file.version 0: none) */
  int has_source;
  vx_file_id source;
  /* the voxels the thin rule re-signed (sampler/resigned.h), found when first sampled (lib/sample.c;
   * atomic: samplers of one tree may start on several threads); NULL until then, and for a tree
   * without voxels loaded (for which finding them returns at once) */
  uint32_t *resigned;
  /* the band cache (sampler/band_cache.h), built by the first call that asks for it (atomic too) */
  struct vx_band_cache *band_cache;
};

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
struct vx_build {
  vx_tree *tree;
  vx_notes notes;
  vx_build_stats stats;
};

/* The end of every conversion: the file's size into b's statistics, the tree into b (keep_tree)
 * or freed, and b handed out (*out) when s is VX_OK, else freed. Returns s (or VX_ERR_NOMEM). */
vx_status vx_build_finish(vx_status s, vx_build *b, vx_octree *tree, const char *out_path,
                          int keep_tree, vx_build **out, vx_error *err);

/* Copies a caller's option struct that starts with `uint32_t struct_size` into a zeroed local of
 * this library's size: the fields a caller compiled against an older header does not know stay
 * zero (their defaults). struct_size 0 means the first published layout (this version's). A
 * larger struct_size (a newer header) copies only the fields this version knows. */
static inline void vx_opts_copy(void *dst, size_t dst_size, const void *src) {
  memset(dst, 0, dst_size);
  if (!src) return;
  uint32_t n;
  memcpy(&n, src, sizeof n);
  size_t take = n == 0 || n > dst_size ? dst_size : n;
  memcpy(dst, src, take);
}
#define VX_OPTS(dst, src) vx_opts_copy(&(dst), sizeof(dst), (src))

/* Fills a caller's statistics struct (which starts with struct_size) from a full local one:
 * copies at most the caller's size (0: this version's), and sets its struct_size to what it got. */
static inline void vx_stats_out(void *dst, const void *src, size_t src_size) {
  uint32_t n;
  memcpy(&n, dst, sizeof n);
  size_t take = n == 0 || n > src_size ? src_size : n;
  memcpy(dst, src, take);
  uint32_t got = (uint32_t)take;
  memcpy(dst, &got, sizeof got);
}
#define VX_STATS_OUT(dst, src) vx_stats_out((dst), &(src), sizeof(src))

#endif
