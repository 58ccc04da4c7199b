/* SPDX-License-Identifier: Apache-2.0 */
/* internal.h - the voxelizer's internal interfaces (not installed; tests may include it).
 *
 * Pipeline (voxelize.c): grid transform -> sign data for the whole mesh (sign.c) -> surface voxels
 * and corner values block by block (blocks.c for binning, overlap and the work queue; field.c for
 * the corner distances and signs) -> vx_octree_build -> planes -> pruning. The streaming build
 * (ooc.c, vx_voxelize_stream) runs the same blocks but turns each into its own fitted subtree and
 * appends it to a level-by-level stream (svo/stream.h) that can spill to disk.
 *
 * Blocks. The grid is cut into aligned blocks of B^3 voxels (B a power of two). An aligned block
 * is one contiguous range of Morton codes, so processing blocks in Morton order and concatenating
 * their sorted codes gives the globally sorted list the tree builder wants. Every triangle is
 * binned to each block whose voxels, grown by one voxel on every side (the "halo"), its bounding
 * box touches: the halo's triangles are the ones the corners on the block's faces need. Each
 * value a block produces depends only on global geometry (which triangles overlap which voxels,
 * compared in global grid coordinates, ties broken by triangle index), never on B or on which
 * thread ran it.
 */
#ifndef VOXLOD_VOXELIZER_INTERNAL_H
#define VOXLOD_VOXELIZER_INTERNAL_H

#include <math.h>
#include <stdint.h>
#include "svo/soup.h"
#include "svo/svo.h"
#include "svo/lod.h"
#include "svo/stream.h"
#include "svo/gpu_tree.h"
#include "voxelizer/voxelizer.h"
#include "voxelizer/winding.h"
#include "voxelizer/sign_eval.h"

VX_EXTERN_C_BEGIN

/* A 64-bit mixing function for the hash tables (sign.c on the CPU, gpu_build.cu on the GPU). */
VX_HD uint64_t vx_mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

/* ---- grid coordinates ------------------------------------------------------------------------ */

/* Triangle t of the mesh in grid coordinates (finest voxels), double. Every module maps through
 * this one function, so the same triangle has the same bits everywhere. */
VX_HD void vx_grid_tri(const vx_soup *m, const vx_transform *xf, uint64_t t, double g[9]) {
  const float *p = m->pos + t * 9;
  for (int v = 0; v < 3; v++)
    for (int i = 0; i < 3; i++) g[v * 3 + i] = ((double)p[v * 3 + i] - xf->origin[i]) / xf->scale;
}

/* voxelize.c: checks the build options and derives the grid (transform, depth, band); every
 * build path starts here. It also runs vx_overlap_check, except for one tile of a tiled build
 * (opts->tile_depth): the tiled build runs that check once for the whole mesh. */
vx_status vx_voxelize_setup(const vx_soup *mesh, const vx_voxelize_opts *opts, vx_transform *xf,
                            uint32_t *depth, float *band, vx_error *err);
/* voxelize.c: what every build runs on: `mesh` without its exact duplicates (*use is mesh or
 * store; vx_soup_free(store) afterwards; *dropped counts the copies). */
vx_status vx_voxelize_unique(const vx_soup *mesh, const vx_voxelize_opts *opts, vx_soup *store,
                             const vx_soup **use, uint64_t *dropped, vx_error *err);

/* ---- duplicates and overlaps (dedup.c) ------------------------------------------------------ */

/* Exact duplicate triangles (same positions, same cyclic order) dropped, the first copy kept, the
 * others in order. When none is found out->pos stays NULL (use `in`); else `out` is a new soup
 * (vx_soup_free) and *dropped counts the copies. When its scratch (vx_dedup_bytes) would pass
 * mem_limit (0: none) nothing is dropped: the build's estimate, larger per triangle, refuses.
 * threads: as vx_thread_count's (0: all cores); the result does not depend on it. */
vx_status vx_soup_dedup(const vx_soup *in, uint64_t mem_limit, int threads, vx_soup *out,
                        uint64_t *dropped, vx_error *err);
/* The same marks alone: drop[t] (tri_count bytes, the caller's) 1 for each copy of an earlier
 * triangle, *dropped their number. */
vx_status vx_soup_dedup_marks(const vx_soup *in, int threads, uint8_t *drop, uint64_t *dropped,
                              vx_error *err);
/* Bytes vx_soup_dedup may hold for n triangles. */
double vx_dedup_bytes(uint64_t tri_count);

/* Bytes of one (voxel, triangle) overlap pair in a block (blocks.c) */
#define VX_PAIR_BYTES 8.0
/* What vx_overlap_check charges an overlap beyond the surface's against the limit: its 8 bytes and
 * its work (8 corner distances, as much as a block's 56 bytes of scratch per surface voxel), so
 * the time a hostile file can take stays in proportion to the limit */
#define VX_PAIR_CHARGE 64.0
/* Overlaps per expected surface voxel an ordinary surface stays under */
#define VX_PAIRS_PER_VOXEL 16.0

/* A lower bound of the build's (voxel, triangle) overlaps (*pairs, may be NULL) and, with a limit,
 * VX_ERR_LIMIT when the overlaps beyond VX_PAIRS_PER_VOXEL per expected surface voxel (the area
 * twice, at most the grid) would not fit the limit at VX_PAIR_CHARGE each. Every build (CPU, GPU,
 * streaming) runs it from vx_voxelize_setup: the same refusal whatever the device. Summed by ranges
 * of triangles on `threads` threads (0: all cores), the ranges in order: the same for any count. */
vx_status vx_overlap_check(const vx_soup *m, const vx_transform *xf, uint32_t depth,
                           uint64_t mem_limit, int threads, double *pairs, vx_error *err);

/* Bytes the blocks of a build may hold for their overlap pairs and triangle coordinates beyond
 * their fixed scratch, shared by the threads; cap 0: no bound. */
typedef struct vx_pair_pool {
  uint64_t used; /* updated with __atomic builtins */
  uint64_t cap;
  uint64_t limit; /* the memory limit, for the message */
  uint64_t wind_excess; /* exact winding triangles beyond VX_WIND_EXACT_FREE a query (__atomic) */
  uint64_t wind_cap;    /* at most this many (vx_wind_excess_cap); 0: no bound */
} vx_pair_pool;

/* The winding number's work. A corner query sums exactly the triangles whose bounding ball it is
 * near (winding.h): on the shared scans a few dozen to a few hundred a query (at most 562 on the
 * shared meshes at 512^3), on CAD models with long fan triangles and unwelded facets up to a few
 * thousand (2CylinderEngine.glb: 3,022 on average, 4,592 at most). Triangles stacked on one
 * another, long slivers above all, make every query near the stack sum all of them, and the time
 * grows with the queries times the stack whatever the memory (2,000 slivers along the diagonal at
 * 4096^3: about 37e9 solid angles, half an hour). No per-query count tells such a stack from a CAD
 * model, so the work is bounded in proportion to the limit instead: each query's exact triangles
 * beyond VX_WIND_EXACT_FREE are charged VX_WIND_CHARGE bytes of the memory limit (1 GiB: 4.3e9
 * of them, a few minutes of two cores), and a build whose charge passes the limit stops with
 * VX_ERR_LIMIT ("the triangles overlap too much ..."), on the CPU and the GPU alike (each counts
 * the queries it runs: the CPU evaluates a corner on a block face once per block that holds it,
 * so near the bound the two may differ by those copies). Queries under the free count cost
 * nothing: the scans and the messy meshes never reach it, so their output and time do not
 * change; the engine at 512^3 is charged about 2.5e9 and passes from a limit of 0.6 GiB. */
#define VX_WIND_EXACT_FREE 1024
#define VX_WIND_CHARGE 0.25
/* A block adds its excess to the pool in pieces of at least this many triangles */
#define VX_WIND_FLUSH 65536
/* The excess a build may spend under mem_limit (0: no bound) */
static inline uint64_t vx_wind_excess_cap(uint64_t mem_limit) {
  return mem_limit ? (uint64_t)((double)mem_limit / VX_WIND_CHARGE) + 1 : 0;
}
/* The message of a build stopped by it (the excess so far, the limit) */
vx_status vx_wind_limit_error(uint64_t excess, uint64_t mem_limit, vx_error *err);

/* ---- sign (sign.c) --------------------------------------------------------------------------- */

/* Pseudo-normal tables only (the winding tree stays empty): the VX_SIGN_PSEUDO_NORMAL rule.
 * The winding rule builds them too, plus the tree and the clean flags. */
vx_status vx_sign_build(const vx_soup *m, vx_sign_data *s, vx_error *err);
/* The same on `threads` threads (0: all cores); the tables do not depend on how many. */
vx_status vx_sign_build_threads(const vx_soup *m, int threads, vx_sign_data *s, vx_error *err);
/* The tables of `rule` (VX_SIGN_*) for a surface build in the grid of `xf` (uses all cores; the
 * result does not depend on how many). */
vx_status vx_sign_build_rule(const vx_soup *m, const vx_transform *xf, int rule, vx_sign_data *s,
                             vx_error *err);
/* The same, certifying the clean triangles on the GPU when gpu != 0 and one can (else on the CPU;
 * the flags are the same either way), on `threads` threads (0: all cores; 1: the caller's only). */
vx_status vx_sign_build_rule_ex(const vx_soup *m, const vx_transform *xf, int rule, int gpu,
                                int threads, vx_sign_data *s, vx_error *err);
/* gpu_sign.cu: vx_cert_triangle (cert_eval.h) on the GPU for every triangle with clean[t] != 0,
 * in place, the triangles taken from the tree (w->order needed). Any failure (no GPU, no memory) leaves clean untouched and returns its status. */
vx_status vx_sign_cert_gpu(const vx_wind_tree *w, uint8_t *clean, vx_error *err);
void vx_sign_free(vx_sign_data *s);
/* Bytes per triangle the tables of `rule` take at the peak of their construction (measured: 180
 * to 200 B for the pseudo-normals, 300 to 490 B with the winding number's tree, from the 871k
 * dragon to a soup of a million small triangles with three vertices each); every build's memory
 * estimate uses it. */
double vx_sign_peak_bytes(int rule);

/* The rules themselves (vx_sign_clean, vx_sign_by_winding, vx_sign_of, vx_sign_normal) are in
 * sign_eval.h, host and device; field_eval.h combines them per corner. */

/* ---- surface voxels and field (blocks.c, field.c) -------------------------------------------- */

typedef struct vx_surface_opts {
  float band;            /* truncation, voxels (> 0) */
  int threads;           /* 0: all cores */
  uint32_t block_log2;   /* log2 B; 0: automatic */
  vx_progress_fn progress;
  void *user;
  uint64_t mem_limit;    /* bytes; 0: none (the blocks' overlap pairs are checked against it) */
} vx_surface_opts;

typedef struct vx_surface {
  uint64_t *codes;   /* sorted, unique Morton codes of the surface voxels */
  vx_voxel *field;   /* their quantized corner values */
  uint64_t count;
} vx_surface;

void vx_surface_free(vx_surface *s);

/* Surface voxels and corner values of `mesh` in a grid of 2^depth voxels per axis under `xf`.
 * `sign` must come from vx_sign_build on the same mesh. Stats fields triangles, surface_voxels,
 * corners and pair_tests are filled when `stats` is non-NULL. */
vx_status vx_surface_build(const vx_soup *mesh, const vx_transform *xf, uint32_t depth,
                           const vx_sign_data *sign, const vx_surface_opts *opts, vx_surface *out,
                           vx_voxelize_stats *stats, vx_error *err);

/* One block's working state (blocks.c owns it; field.c fills the corners). */
typedef struct vx_block {
  /* geometry of the block */
  uint32_t B;              /* edge in voxels */
  int64_t org[3];          /* its minimum voxel */
  float band;
  const vx_sign_data *sign;
  /* its triangles: global indices (ascending) and grid coordinates, 9 doubles each */
  const uint32_t *tris;
  uint64_t ntris;
  double *tg;
  uint64_t tg_cap;
  /* surface voxels: flags by local Morton code, and the list of set codes */
  uint8_t *surf;           /* B^3 */
  uint32_t *list;
  uint64_t nlist, list_cap;
  /* (halo voxel, triangle) overlap pairs, grouped by triangle in ascending order. A halo voxel
   * (x, y, z) in [-1, B]^3 (block-local) is stored as (x+1) + (y+1)(B+2) + (z+1)(B+2)^2. */
  uint32_t *pair_vox, *pair_tri;
  uint64_t npairs, pair_cap;
  /* corners (x, y, z) in [0, B]^3, index x + y(B+1) + z(B+1)^2 */
  uint8_t *cneed;          /* corner of a surface voxel of this block */
  double *cd2;             /* best squared distance so far */
  uint32_t *ctri;          /* its triangle (local index into tris) */
  uint32_t *clast;         /* last triangle tried (local index + 1; 0: none) */
  int8_t *cval;            /* quantized signed value */
  uint32_t *clist;         /* needed corners, for reset */
  uint64_t nclist, clist_cap;
  uint64_t pair_tests;
  vx_pair_pool *pool;      /* may be NULL: no bound */
  uint64_t pool_held;      /* bytes this block holds in the pool */
  uint64_t wind_excess;    /* exact winding triangles beyond the free count, not yet in the pool */
  uint64_t wind_max;       /* the most exact triangles one query of this block summed */
  int wind_over;           /* the pool's wind_cap was passed: the block stopped */
} vx_block;

/* field.c: adds b->wind_excess to the pool; 0 (and b->wind_over set) when it passes the cap. */
int vx_block_wind_flush(vx_block *b);

/* field.c: fills cval for every needed corner from the pairs and the surface list; returns the
 * number of corners computed. */
uint64_t vx_block_field(vx_block *b);

/* field.c: re-signs the surface voxels whose 8 corners never change sign (features thinner
 * than a voxel) by the side of the plane of their nearest triangle; field[i] belongs to the
 * block's sorted list[i]. Returns the number of voxels changed. */
uint64_t vx_block_thin_fix(vx_block *b, vx_voxel *field);

/* ---- blocks as units of work (blocks.c; used by vx_surface_build and the streaming build) ---- */

/* Triangles binned to aligned blocks of 2^blog voxels per axis. */
typedef struct vx_bins {
  uint32_t depth, blog;   /* the region binned: 2^depth voxels per axis, blocks of 2^blog */
  uint32_t grid_depth;    /* the whole grid's depth (>= depth; larger for a tile) */
  int64_t org[3];         /* the region's minimum voxel in the grid (0 for the whole grid) */
  uint64_t nblocks;  /* (2^(depth-blog))^3 */
  uint64_t *off;     /* bin b is tris[off[b] .. off[b+1]) */
  uint32_t *tris;    /* triangle indices, ascending within a bin */
  uint64_t *work;    /* Morton codes of the blocks with triangles, ascending */
  uint64_t nwork;
  uint64_t entries;  /* off[nblocks] */
} vx_bins;

/* log2 of the block edge: `requested` when nonzero, else 5, grown so that there are at most 128
 * blocks per axis; never above depth. */
uint32_t vx_block_log2(uint32_t depth, uint32_t requested);

/* Bins every triangle of `mesh` (see blocks.c). Checks depth, blog, the block count and, with a
 * mem_limit (0: none), the entries against it before they are allocated (VX_ERR_LIMIT). */
vx_status vx_bins_build(const vx_soup *mesh, const vx_transform *xf, uint32_t depth,
                        uint32_t blog, uint64_t mem_limit, vx_bins *out, vx_error *err);
/* The same for one region of the grid: the cell `region` (Morton code) of level
 * grid_depth - depth, 2^depth voxels per axis (depth <= VX_MAX_DEPTH, grid_depth <=
 * VX_MAX_TILED_DEPTH): only the triangles that reach its blocks, block codes local to it;
 * cand (ascending, may be NULL: every triangle) the ones to look at. Blocks run on such bins
 * (vx_block_run) compute in the grid's coordinates, so their voxels and values are those of the
 * whole grid's blocks over the same voxels. */
vx_status vx_bins_build_region(const vx_soup *mesh, const vx_transform *xf, uint32_t grid_depth,
                               uint32_t depth, uint64_t region, const uint32_t *cand,
                               uint64_t ncand, uint32_t blog, uint64_t mem_limit, vx_bins *out,
                               vx_error *err);
void vx_bins_free(vx_bins *b);

/* Scratch for one block of edge B (one per thread). Returns 0 when out of memory (then call
 * vx_block_release, which also frees a partly allocated block). */
int vx_block_init(vx_block *b, uint32_t B, float band, const vx_sign_data *sign);
void vx_block_release(vx_block *b);

/* Voxelizes block `bm` (Morton code in the block grid): afterwards b->list[0 .. b->nlist) holds
 * its surface voxels' local Morton codes, ascending, and vx_block_take() reads their corner
 * values. *corners (may be NULL) receives the number of corners computed. VX_ERR_NOMEM, or
 * VX_ERR_LIMIT when its pairs would pass b->pool (vx_block_error words both). */
vx_status vx_block_run(vx_block *b, const vx_soup *mesh, const vx_transform *xf,
                       const vx_bins *bins, uint64_t bm, uint64_t *corners);

/* The message for vx_block_run's failure `st` in work item k. */
vx_status vx_block_error(const vx_block *b, vx_status st, uint64_t k, uint64_t nwork,
                         vx_error *err);

/* Writes the corner values of b->list's voxels to field[0 .. nlist), then clears the block for
 * the next vx_block_run. */
void vx_block_take(vx_block *b, vx_voxel *field);

/* ---- the GPU build (gpu_build.cu; gpu_build_stub.c without CUDA) --------------------------- */

/* The mesh's grid triangles and sign tables kept in GPU memory for every surface build of one
 * mesh, grid transform and set of sign tables (the tiles of a tiled build): each device gets its
 * copy from the first build that runs there (vx_gpu_build_opts.resident), which the builds on it
 * then share, instead of each uploading its own. Thread-safe. mesh, xf's values and sign are
 * the builds' own and must outlive it. vx_gpu_meshes_free frees every device's copy. */
typedef struct vx_gpu_meshes vx_gpu_meshes;
vx_status vx_gpu_meshes_create(const vx_soup *mesh, const vx_transform *xf,
                               const vx_sign_data *sign, vx_gpu_meshes **out, vx_error *err);
/* Uploads so far (one per device used) and their wall seconds, summed. */
void vx_gpu_meshes_stats(vx_gpu_meshes *m, int *uploads, double *seconds);
void vx_gpu_meshes_free(vx_gpu_meshes *m);

typedef struct vx_gpu_build_opts {
  uint32_t part_log2;  /* partitions of at most 2^part_log2 voxels per axis (tests); 0: the whole
                          grid, split only when GPU memory requires it */
  uint64_t mem_budget; /* GPU bytes a partition may use; 0: 85% of the free memory */
  uint64_t mem_limit;  /* the build's memory limit, for the winding work's charge
                          (VX_WIND_CHARGE, as on the CPU); 0: no bound */
  int device_out;      /* 1: the surface stays in GPU memory (out's arrays are device pointers,
                          freed with vx_gpu_surface_free) for vx_octree_build_gpu */
  /* With sign == NULL: called (once) when the sign tables are first needed, after the first
   * partition's overlaps are sorted; returns them (kept by the caller) or NULL with *err set. */
  const vx_sign_data *(*sign_wait)(void *ctx, vx_error *err);
  void *sign_ctx;
  /* Called (may be NULL) with the number of surface voxels as soon as it is known, when the whole
   * grid is one partition: the caller can prepare host memory while the GPU computes the field. */
  void (*on_count)(void *ctx, uint64_t voxels);
  void *count_ctx;
  /* One region of the grid only (a tile): the cell region_code (Morton code) of level
   * depth - region_log2; its voxels come out with their codes in the whole grid. region_log2 0:
   * the whole grid. */
  uint32_t region_log2;
  uint64_t region_code;
  /* The mesh and sign tables already on the device, or put there once for every build that
   * shares it (NULL: this build uploads its own). mesh, xf and sign must be its own. */
  vx_gpu_meshes *resident;
} vx_gpu_build_opts;

/* Host arrays for vx_octree_build_gpu's result, allocated (and their pages touched) ahead of time;
 * used when large enough, else the tree allocates its own. The tree takes the ones it uses. */
typedef struct vx_octree_prealloc {
  vx_node *nodes;   /* 16-byte aligned, vx_free()-able */
  uint64_t node_cap;
  vx_voxel *voxels;
  uint64_t voxel_cap;
  vx_host_stage stage; /* what the tile's copies back go through, kept for the next tile */
} vx_octree_prealloc;

void vx_gpu_surface_free(vx_surface *s);

/* vx_octree_build + vx_octree_fit_planes on the GPU (gpu_tree.cu), bit for bit: from a surface in GPU
 * memory (vx_gpu_build_opts.device_out) to a host tree with every level, child index and plane
 * (xf and band are left to the caller). The codes may carry a common prefix above `depth`
 * levels (a tile's, in the whole grid): the tree is the one below it. max_error > 0: the tree is
 * pruned there before the copy (vx_octree_prune's tree, prune_error set). sec (may be NULL)
 * receives the seconds of the levels, the fit and the copy to the host (pruning included);
 * root (may be NULL) the root's fit (vx_octree_fit_subtree's, of the whole tree). */
vx_status vx_octree_build_gpu(const vx_surface *dev, uint32_t depth, float band, float max_error,
                              vx_octree_prealloc *pre, vx_octree *out, double sec[3],
                              vx_fit_root *root, vx_error *err);

/* Creates the CUDA context on a background thread (call before CPU work that precedes
 * vx_surface_build_gpu, join before it); NULL and a no-op without CUDA. */
void *vx_gpu_warmup_start(void);
void vx_gpu_warmup_join(void *handle);

/* vx_surface_build's result computed on the GPU, bit for bit the same (gpu_build.cu explains
 * the one exception). `go` may be NULL; `sign` may be NULL when go->sign_wait supplies it. VX_ERR_NO_GPU without a usable device or without CUDA. */
vx_status vx_surface_build_gpu(const vx_soup *mesh, const vx_transform *xf, uint32_t depth,
                               const vx_sign_data *sign, float band, const vx_gpu_build_opts *go,
                               vx_progress_fn progress, void *user, vx_surface *out,
                               vx_voxelize_stats *stats, vx_error *err);

/* ---- the streaming build (ooc.c) ------------------------------------------------------------ */

/* Knobs for tests (zeroed: what vx_voxelize_stream does). */
typedef struct vx_stream_build_opts {
  uint64_t spill_budget; /* bytes held in memory before spilling, overriding the limit's (1: spill
                            from the first block) */
  uint32_t block_log2;   /* log2 of the block edge; 0: vx_block_log2's choice */
  uint64_t fail_block;   /* k > 0: block k-1 fails with VX_ERR_IO (cleanup tests) */
  vx_gpu_build_opts gpu; /* GPU build (opts->gpu): partition size and memory budget */
  /* A tile (opts->tile_depth): the whole mesh's sign tables, made once for every tile
   * (vx_sign_build_rule on the deduplicated mesh in the grid's transform), and where the tile
   * root's fit goes (the tiled build fits its top tree from them). */
  const vx_sign_data *sign;
  vx_fit_root *tile_root;
  const uint32_t *tile_tris; /* the triangles that may reach the tile (ascending; NULL: all) */
  uint64_t tile_ntris;
  /* vx_voxelize_tile_gpu: host arrays for the tile's tree, used when large enough (the tree
   * takes them), so that a worker building tile after tile reuses pages already touched */
  vx_octree_prealloc *tile_pre;
  /* A coloured tile: the colour source of the whole coloured mesh (color_source_open and
   * color_source_start, shared by the tiles; NULL: a grey tile), the triangles of its soup that
   * may reach the tile (ascending) and where the tile root's colour sums go. */
  const struct color_source *tile_color;
  const uint32_t *tile_color_tris;
  uint64_t tile_color_ntris;
  struct csum *tile_color_root;
  int *tile_color_has;       /* 1: some part reached the tile (its root has sums), else 0 */
} vx_stream_build_opts;

vx_status vx_voxelize_stream_ex(const vx_soup *mesh, const vx_voxelize_opts *opts,
                                const char *tmp_dir, const vx_stream_build_opts *xo,
                                vx_stream *out, vx_voxelize_stats *stats, vx_error *err);

/* One tile of a tiled build (opts->tile_depth, opts->tile_code; xo->sign and xo->tile_root
 * required): the streaming build of the tile's cell alone, from `mesh` already without its exact
 * duplicates (vx_voxelize_unique), coloured when xo->tile_color is given. *out is a stream of tile_depth levels,
 * rooted at the tile's cell, its transform that of the tile (the grid's, moved to the cell's
 * corner); its levels are bit for bit the subtree below that cell of the whole grid's build.
 * VX_ERR_EMPTY when the tile has no surface voxels. */
vx_status vx_voxelize_tile(const vx_soup *mesh, const vx_voxelize_opts *opts, const char *tmp_dir,
                           const vx_stream_build_opts *xo, vx_stream *out,
                           vx_voxelize_stats *stats, vx_error *err);

/* One tile of a tiled build made whole on the GPU (as vx_voxelize_tile, the same bits): its
 * cell's surface, then its octree and planes there, into a tree of opts->tile_depth levels in
 * host memory, the root's fit into *xo->tile_root. VX_ERR_LIMIT (nothing held) when the tile's
 * tree and its encoding would not fit opts->mem_limit: vx_voxelize_tile then builds it out of
 * core; VX_ERR_EMPTY for a tile without surface voxels. */
vx_status vx_voxelize_tile_gpu(const vx_soup *mesh, const vx_voxelize_opts *opts,
                               const vx_stream_build_opts *xo, vx_octree *out,
                               vx_voxelize_stats *stats, vx_error *err);

/* The mesh's surface area in grid units (finest voxels squared) under transform xf. */
double vx_soup_grid_area(const vx_soup *m, const vx_transform *xf);
/* The area of one triangle in grid coordinates (9 doubles, as vx_grid_tri gives them). */
VX_HD double vx_grid_tri_area(const double g[9]) {
  double u[3], v[3];
  for (int i = 0; i < 3; i++) {
    u[i] = g[3 + i] - g[i];
    v[i] = g[6 + i] - g[i];
  }
  double cx = u[1] * v[2] - u[2] * v[1], cy = u[2] * v[0] - u[0] * v[2],
         cz = u[0] * v[1] - u[1] * v[0];
  return 0.5 * sqrt(cx * cx + cy * cy + cz * cz);
}

VX_EXTERN_C_END

#endif
