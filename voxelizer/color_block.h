/* SPDX-License-Identifier: Apache-2.0 */
/* color_block.h - the colour pass block by block, for the streaming build (color_block.c tells
 * how it gives the whole pass's bytes). */
#ifndef VOXLOD_VOXELIZER_COLOR_BLOCK_H
#define VOXLOD_VOXELIZER_COLOR_BLOCK_H

#include "voxelizer/color_internal.h"

VX_EXTERN_C_BEGIN

struct vx_pair_pool;

/* One thread's records, reused from block to block; their bytes are charged to pool (may be NULL)
 * while held, and a block whose parts pass the pool's cap fails with VX_ERR_LIMIT. */
typedef struct color_block_scratch {
  crec *recs, *tmp;
  uint64_t n, cap, tmp_cap;
  struct vx_pair_pool *pool;
  uint64_t held;  /* bytes charged to pool */
  double sec;     /* seconds spent in color_block */
} color_block_scratch;

typedef struct color_block_out {
  uint32_t *ncol, *vcol; /* the subtree's colours (node_count, voxel_count), NULL without one */
  csum root;             /* the block root's sums, code = the block's code at level S */
  int has_root;          /* some part lies in the block */
  int self;              /* the colours are final; else their rgb is the root's ancestors' */
} color_block_out;

/* The colours of block bcode (its Morton code at level depth - blog) of the build of grid
 * transform xf, from the triangles tris[0 .. ntris) (ascending: every triangle with a part in
 * the block) and the block's subtree sub (depth blog, block-local codes; NULL or no nodes: no
 * surface voxels, only the root's sums are made). cs started (color_source_start). */
vx_status color_block(const color_source *cs, const vx_transform *xf, uint32_t depth,
                      uint32_t blog, uint64_t bcode, const uint32_t *tris, uint64_t ntris,
                      const vx_octree *sub, color_block_scratch *s, color_block_out *out,
                      vx_error *err);
void color_block_free(color_block_out *o);
void color_block_scratch_free(color_block_scratch *s);

/* The colours of tile bcode (its code at level depth - blog of the grid of transform xf) built
 * whole: sub, its tree in memory (depth blog, tile-local codes), coloured as the blocks of the
 * streaming build would colour it (the same bytes), its triangle parts made on the GPU from
 * tris[0 .. ntris) (ascending: every triangle with a part in the tile; cs started) and summed on
 * `threads` threads: sets sub's node_color and voxel_color, *root its root's sums (code 0) and
 * *has_root whether any part lies in it. More than max_recs parts: VX_ERR_LIMIT; VX_ERR_NO_GPU,
 * VX_ERR_CUDA or VX_ERR_NOMEM when the GPU cannot: the caller colours it another way. stage (may
 * be NULL): the worker's host memory the parts come back through (color_sink). sec (may
 * be NULL): color_records_gpu's three times, then the seconds of the sums and the walk. */
vx_status color_tile_gpu(const color_source *cs, const vx_transform *xf, uint32_t depth,
                         uint32_t blog, uint64_t bcode, const uint32_t *tris, uint64_t ntris,
                         vx_octree *sub, int threads, uint64_t max_recs, vx_host_stage *stage,
                         csum *root, int *has_root, double sec[4], vx_error *err);

/* The colours of the levels above the blocks: t holds levels 0 .. split (split >= 1) linked, its
 * level split the blocks' roots (t->depth is the whole tree's); roots[0 .. nroots) the sums of
 * every block with parts, in code order. *top_color: a colour per node of t (levels < split
 * meaningful, vx_malloc'd), root_color: one per node of level split, its final colour.
 * top_sum (may be NULL): the sums of t's root (area 0 when no part reached it). */
vx_status color_top(vx_octree *t, uint32_t split, const csum *roots, uint64_t nroots,
                    vx_color_filter f, uint32_t **top_color, uint32_t *root_color,
                    csum *top_sum, vx_error *err);

VX_EXTERN_C_END

#endif
