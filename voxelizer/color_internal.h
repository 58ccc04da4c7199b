/* SPDX-License-Identifier: Apache-2.0 */
/* color_internal.h - what the colour pass's two files share: color.c makes the records of the
 * triangles' parts, color_sum.c sorts them, sums them per cell and colours the tree. */
#ifndef VOXLOD_VOXELIZER_COLOR_INTERNAL_H
#define VOXLOD_VOXELIZER_COLOR_INTERNAL_H

#include <stdint.h>
#include "svo/soup.h"
#include "svo/svo.h"
#include "svo/gpu_tree.h"
#include "voxelizer/color_texview.h"

VX_EXTERN_C_BEGIN

typedef struct crec { /* one part of one triangle in one voxel: 32 bytes */
  uint64_t code;      /* the voxel's Morton code */
  uint32_t tri;
  float area;         /* A, grid units squared */
  float rgb[3];       /* A * mean(alpha * rgb), linear */
  float a;            /* A * mean(alpha) */
} crec;

typedef struct csum { /* a cell's sums */
  uint64_t code;
  double area, a;
  double rgb[3];      /* mean: sum of A alpha rgb; dominant: the chosen colour (linear) */
} csum;

/* What the parts of a coloured soup read, in memory the side making them can address. */
typedef struct cpart_src {
  const uint32_t *material;   /* per triangle, or NULL: material 0 */
  const vx_material *materials;
  uint32_t material_count;
  uint32_t texture_count;
  const float *uv;            /* 6 per triangle, or NULL */
  const uint32_t *corner_rgba;/* 3 per triangle, or NULL */
  const ctex_view *tex;       /* texture_count entries (levels 0: unusable or unused) */
  const float *lut;           /* the 256 sRGB codes in linear light */
  int dominant;               /* VX_COLOR_FILTER_DOMINANT: parts take a colour of the texture */
} cpart_src;

/* A coloured soup's colour as the parts read it: the textures some triangle uses (their mip
 * pyramids built on first use), the sRGB table, the cpart_src over them (color.c). Open sizes
 * the pyramids (mip_bytes) without building anything; start sets up the textures and src (the
 * struct must not move after it); close frees everything (also after a failed open). */
struct ctex;
typedef struct color_source {
  const vx_soup *soup;
  vx_color_filter filter;
  struct ctex *tex;
  ctex_view *views;
  uint8_t *used;       /* per texture: 0 unused, bit 0 opaque use, bit 1 alpha use */
  uint64_t mip_bytes;  /* what the used textures' levels 1.. take */
  int started;
  float lut[256];
  cpart_src src;
} color_source;
vx_status color_source_open(color_source *cs, const vx_soup *soup, vx_color_filter filter,
                            vx_error *err);
void color_source_start(color_source *cs);
void color_source_close(color_source *cs);

/* A cell of the grid whose parts alone are wanted: the cell of code bcode at level depth - blog
 * (B = 2^blog voxels a side), its records' codes within the cell (code mod 8^blog), from the
 * soup's triangles tris[0 .. ntris) (ascending: those that reach the cell). */
typedef struct color_region {
  const uint32_t *tris;
  uint64_t ntris;
  uint32_t blog;
  uint64_t bcode;
} color_region;

/* Where color_records_gpu may hand sorted records over piece by piece instead of returning them:
 * take(ctx, r, n) gets records of whole cells (a cell's records never span two calls), in
 * color_sort's order, each call continuing the last; r is valid for the call only. The pieces
 * come through stage (two pieces' room, kept there for the caller's next call; NULL: room of
 * the call's own), the next piece's copy running while take has the last. */
typedef struct color_sink {
  vx_status (*take)(void *ctx, const crec *r, uint64_t n, vx_error *err);
  void *ctx;
  vx_host_stage *stage;
} color_sink;

/* The records of a piece handed to a sink (2^18; tests make it small so that cells straddle
 * pieces); n = 0 only reads it. Returns the previous value. */
uint64_t color_gpu_piece_records(uint64_t n);

/* color_gpu.cu: the records of every part of the soup's triangles (grid of xf, R cells a side;
 * reg: only those of the region's triangles in its cell, NULL: all of them, whole grid),
 * in the order the CPU makes them (triangle by triangle), made on the GPU into fresh host memory
 * (*recs, vx_malloc'd, *n of them); *sorted = 1 when they come back already in color_sort's
 * order (sorted on the GPU, when all of them fit it at once), else 0. Sorted, they go to sink
 * when one is given (in pieces of color_gpu_piece_records, more for a cell that has more; *recs
 * stays NULL, *n is their count); unsorted, they come back as without a sink. src's arrays are host
 * memory, its textures with every mip level. sec (may be NULL): seconds counting the parts,
 * making (and sorting) them, copying them back. More than max_recs records: VX_ERR_LIMIT with
 * *n set, nothing allocated. VX_ERR_NO_GPU without a usable device (or CUDA); VX_ERR_NOMEM when
 * the device cannot hold what it needs. */
vx_status color_records_gpu(const vx_soup *soup, const vx_transform *xf, uint32_t R,
                            const cpart_src *src, const color_region *reg, uint64_t max_recs,
                            const color_sink *sink, crec **recs, uint64_t *n, int *sorted,
                            double sec[3], vx_error *err);

/* Sorts n records made in triangle order by (code, triangle): a stable radix sort on the code
 * (bits wide); tmp holds n records. Returns 0 when out of memory. */
int color_sort(crec *r, crec *tmp, uint64_t n, uint32_t bits, int threads);

/* Sorted records -> the voxels' sums; sums of a level -> those of the level above (code >> 3).
 * Return the sums (*count of them, vx_malloc'd, exactly that many), or NULL when they would take
 * more than max_bytes (0: no bound; *over set) or cannot be allocated. */
csum *color_reduce_voxels(const crec *r, uint64_t n, vx_color_filter f, int threads,
                          uint64_t max_bytes, uint64_t *count, int *over);
/* color_reduce_voxels into out (cap sums): 0 when *count (set either way) exceeds cap. */
int color_reduce_voxels_into(const crec *r, uint64_t n, vx_color_filter f, int threads, csum *out,
                             uint64_t cap, uint64_t *count);
csum *color_reduce_up(const csum *c, uint64_t n, vx_color_filter f, int threads,
                      uint64_t max_bytes, uint64_t *count, int *over);

/* A cell's packed colour from its sums (NULL: none); parent: the parent's packed colour. A cell
 * no part reached (no sums, or no area) takes the parent's rgb with alpha 255, a cell whose parts
 * are all cut out (no opaque area) the parent's rgb with alpha 0; any other cell's colour is its
 * own. */
uint32_t color_cell(const csum *s, vx_color_filter f, uint32_t parent);

/* The tree's colours from the sums of every level (sums[l]: nsum[l] entries sorted by code):
 * fills ncol (node_count) and vcol (voxel_count); codes and next_codes hold the widest level. */
vx_status color_walk(const vx_octree *t, csum *const *sums, const uint64_t *nsum,
                     vx_color_filter f, uint32_t *ncol, uint32_t *vcol, uint64_t *codes,
                     uint64_t *next_codes, int threads, vx_error *err);

/* Sorted records of one cell (codes within it, 3 * blog bits) -> the sums of its levels and its
 * root's (*root, code 0; *has_root: some part lies in it) and, given its subtree sub (depth blog,
 * may be NULL or without nodes), the subtree's colours (*ncol: node_count, *vcol: voxel_count,
 * vx_malloc'd; NULL without sub). The tree walked from the cell's root as from the tree's. */
vx_status color_cell_finish(const crec *r, uint64_t n, uint32_t blog, vx_color_filter f,
                            int threads, const vx_octree *sub, csum *root, int *has_root,
                            uint32_t **ncol, uint32_t **vcol, vx_error *err);
/* The same from the cell's voxels' sums (color_reduce_voxels' output, *nvox of them; taken and
 * freed, also on failure). */
vx_status color_cell_finish_sums(csum *vox, uint64_t nvox, uint32_t blog, vx_color_filter f,
                                 int threads, const vx_octree *sub, csum *root, int *has_root,
                                 uint32_t **ncol, uint32_t **vcol, vx_error *err);

VX_EXTERN_C_END

#endif
