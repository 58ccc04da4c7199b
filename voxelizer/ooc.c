/* SPDX-License-Identifier: Apache-2.0 */
/* ooc.c - the streaming build: blocks voxelized on all cores, fed in Morton order into a
 * level-by-level octree that stays in memory or spills to disk under a memory limit.
 *
 * Algorithm (after Baert, Lagae & Dutre, "Out-of-core construction of sparse voxel octrees",
 * HPG 2013, with the field and the LOD planes computed on the way):
 * 1. Sign tables and triangle bins for aligned blocks of B^3 voxels (blocks.c), B = 2^b. An aligned
 *    block is one contiguous range of Morton codes, and it is the cell of one node at level
 *    S = D - b: the block's surface voxels and their ancestors down from that node form a
 *    self-contained subtree of levels S .. D.
 * 2. A pool of threads takes blocks in Morton order (a shared counter). Each voxelizes its block
 *    (surface voxels and corner values, exactly as vx_surface_build), builds the block's subtree
 *    (vx_octree_build on the local codes) and fits its planes (vx_octree_fit_subtree): every node's
 *    plane and errors depend only on its own subtree, in its own frame, so they are the bits a
 *    whole-tree vx_octree_fit_planes gives.
 * 3. Blocks finish out of order; a reorder window of W slots holds finished blocks until all
 *    earlier ones are in, and a thread may not start block k >= (next to emit) + W, which bounds
 *    the memory in flight. Whichever thread completes the block that is next in line emits it and
 *    every ready successor: the subtree's level S+i nodes are appended to level S+i of the result
 *    and its voxels to level D. Concatenating blocks in Morton order gives each level in
 *    breadth-first (Morton) order, so nothing is ever sorted or merged.
 * 4. Only each block root's fit results (moments, error bound, sample box) are kept. At the end
 *    the levels 0 .. S-1 are built from the root codes and fitted above them (vx_octree_fit_top).
 * 5. Colour (opts->color, a coloured mesh): each block also colours its subtree from the parts of
 *    the triangles of its bin (color_block.c; the mesh as given, duplicates included, as
 *    vx_color_tree counts them), appended beside the levels. Only the roots' colour sums are
 *    kept; the top levels are coloured from them at the end, and the blocks whose cells take
 *    their rgb from above level S (no opaque area in the block) get it written in then.
 * Memory: the appended levels stay in memory while they fit the budget derived from the limit
 * (including what writing the file in memory will cost later); past it every level moves to one
 * temporary file (svo/stream.c), and formats/svo_write.c later streams those files into the .svo.
 * The limit is checked before work starts, from the resident memory already in use and what the
 * build will hold whatever happens (bins, per-thread scratch, the window, the writer's buffers,
 * with colour the mip pyramids and each thread's parts; a block's parts are charged as they grow),
 * each sized from the model: its triangles, and the surface voxels its area gives at this
 * resolution, so that a small model converts under a small limit.
 */
#define _POSIX_C_SOURCE 200809L
#include "sys/system.h"
#include "voxelizer/internal.h"
#include "svo/lod.h"
#include "svo/stream.h"
#include "voxelizer/color_block.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct blk_result {
  int ready;
  vx_octree sub;        /* the block's subtree (depth b); sub.nodes == NULL: no surface voxels */
  vx_fit_root root;
  color_block_out col;  /* its colours (colour builds) */
} blk_result;

/* A block whose colours take their rgb from above level S: where they lie in the levels. */
typedef struct col_patch {
  uint64_t root;        /* its root's index among the roots */
  uint64_t first[9], count[9]; /* per level S + i (the voxels last; blog <= 8, as the bins
                                  check): its colours */
} col_patch;

typedef struct ooc_job {
  const vx_soup *mesh;
  const vx_transform *xf;
  const vx_sign_data *sign;
  const vx_bins *bins;        /* CPU build: blocks with triangles (work = bins->work) */
  const vx_surface *surf;     /* GPU build: the surface computed already; block k is
                                 surf[soff[k] .. soff[k+1]) */
  const uint64_t *work;       /* block Morton codes, ascending */
  const uint64_t *soff;
  uint64_t nwork;
  uint32_t depth, blog, split;
  float band;
  uint64_t window;
  blk_result *slot;           /* window slots: block k lives in slot k % window */
  uint64_t next_claim, next_emit;
  int emitting, stop;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  vx_status status;
  vx_error err;
  vx_stream *out;
  uint64_t nroots;            /* block roots, in emit (Morton) order */
  uint64_t *root_code;
  vx_node *root_node;
  vx_fit_root *root_fit;
  uint64_t corners, pair_tests;
  uint64_t fail_block;        /* test hook: block fail_block - 1 fails */
  vx_progress_fn progress;
  void *user;
  vx_pair_pool pool;          /* the blocks' overlap pairs against the limit */
  /* colour (color 0: a grey tree) */
  const color_source *cs;     /* while the blocks run */
  int color;
  vx_color_filter cfilter;
  const vx_bins *cbins;       /* the coloured soup's triangles per block (indexed by code) */
  csum *root_sum;             /* sums of every block with parts, in Morton order */
  uint64_t nroot_sum;
  col_patch *patch;
  uint64_t npatch, patch_cap;
  uint32_t *root_color;       /* final colour of each root (build_top) */
  uint32_t cdepth;            /* the colour pass's grid: the whole grid's depth, and a tile's */
  uint64_t cbase;             /* first block code in it (blocks' codes are the tile's own) */
  csum *tile_sum;             /* a coloured tile: its root's sums, and whether it has any */
  int *tile_has;
  vx_fit_root *tile_root;     /* a tile's build: where its root's fit goes (else NULL) */
  double color_sec;           /* the threads' seconds in color_block */
} ooc_job;

/* Block k's colours (j->cs) from its subtree r->sub (none when it has no voxels). */
static vx_status color_of_block(ooc_job *j, uint64_t k, blk_result *r, color_block_scratch *cs,
                                vx_error *err) {
  const uint64_t bc = j->work[k];
  const vx_bins *cb = j->cbins;
  if (bc >= cb->nblocks) return vx_error_set(err, VX_ERR_INVALID_ARG, "block %llu out of range",
                                            (unsigned long long)bc);
  const double t0 = vx_clock_seconds();
  /* in the whole grid's coordinates, so that a tile's parts are the untiled build's bit for bit */
  vx_status st = color_block(j->cs, j->xf, j->cdepth, j->blog, j->cbase | bc,
                             cb->tris + cb->off[bc], cb->off[bc + 1] - cb->off[bc],
                             r->sub.nodes ? &r->sub : NULL, cs, &r->col, err);
  if (st == VX_OK) r->col.root.code = bc;
  cs->sec += vx_clock_seconds() - t0;
  return st;
}

/* Voxelizes block k and builds and fits its subtree, and colours it (j->cs). codes/field/cscr are
 * per-thread scratch. */
static vx_status run_block(ooc_job *j, vx_block *b, uint64_t k, blk_result *r, uint64_t **codes,
                           vx_voxel **field, uint64_t *cap, color_block_scratch *cscr,
                           vx_error *err) {
  memset(r, 0, sizeof *r);
  if (j->fail_block && k + 1 == j->fail_block)
    return vx_error_set(err, VX_ERR_IO, "injected failure in block %llu", (unsigned long long)k);
  uint64_t corners = 0, n;
  vx_status st = VX_OK;
  if (j->surf) { /* GPU build: the block's slice of the surface */
    n = j->soff[k + 1] - j->soff[k];
  } else {
    st = vx_block_run(b, j->mesh, j->xf, j->bins, j->work[k], &corners);
    n = b->nlist;
  }
  if (st == VX_OK && n > *cap) {
    uint64_t c = n + n / 2;
    uint64_t *nc = (uint64_t *)vx_realloc(*codes, c * sizeof(uint64_t));
    if (nc) *codes = nc;
    vx_voxel *nf = (vx_voxel *)vx_realloc(*field, c * sizeof(vx_voxel));
    if (nf) *field = nf;
    if (nc && nf)
      *cap = c;
    else
      st = VX_ERR_NOMEM;
  }
  if (st != VX_OK) {
    vx_block_error(b, st, k, j->nwork, err);
    if (!j->surf) vx_block_take(b, NULL);
    return st;
  }
  if (j->surf) {
    const uint64_t mask = ((uint64_t)1 << (3 * j->blog)) - 1, *src = j->surf->codes + j->soff[k];
    for (uint64_t i = 0; i < n; i++) (*codes)[i] = src[i] & mask;
    memcpy(*field, j->surf->field + j->soff[k], n * sizeof(vx_voxel));
  } else {
    for (uint64_t i = 0; i < n; i++) (*codes)[i] = b->list[i];
    vx_block_take(b, *field);
  }
  pthread_mutex_lock(&j->mu);
  j->corners += corners;
  j->pair_tests += b->pair_tests;
  pthread_mutex_unlock(&j->mu);
  b->pair_tests = 0;
  if (n == 0) /* triangles only in the halo: nothing to emit (their parts' sums, if any) */
    return j->cs ? color_of_block(j, k, r, cscr, err) : VX_OK;
  st = vx_octree_build(j->blog, *codes, *field, n, &r->sub, err);
  if (st != VX_OK) return st;
  r->sub.band = j->band;
  st = vx_octree_fit_subtree(&r->sub, &r->root, NULL, NULL, err);
  if (st == VX_OK && j->cs) st = color_of_block(j, k, r, cscr, err);
  if (st != VX_OK) vx_octree_free(&r->sub);
  return st;
}

/* Appends a finished block to the result (only the emitting thread runs this). */
static vx_status emit(ooc_job *j, blk_result *r, uint64_t k, vx_error *err) {
  vx_status st = VX_OK;
  if (r->col.has_root) j->root_sum[j->nroot_sum++] = r->col.root;
  if (!r->sub.nodes) return VX_OK;
  const vx_octree *t = &r->sub;
  if (j->cs) { /* the colours beside the records; those taking their rgb from above: noted */
    vx_stream *o = j->out;
    if (!r->col.self && j->split > 0) {
      if (j->npatch == j->patch_cap) {
        uint64_t c = j->patch_cap * 2 + 64;
        col_patch *p = (col_patch *)vx_realloc(j->patch, (size_t)c * sizeof(col_patch));
        if (!p) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
        j->patch = p;
        j->patch_cap = c;
      }
      col_patch *p = &j->patch[j->npatch++];
      p->root = j->nroots;
      for (uint32_t i = 0; i <= j->blog; i++) {
        uint32_t l = i < j->blog ? j->split + i : j->depth;
        p->first[i] = o->color_count[l];
        p->count[i] = i < j->blog ? t->level_count[i] : t->voxel_count;
      }
    }
    for (uint32_t i = 0; i < j->blog && st == VX_OK; i++)
      st = vx_stream_append_color(o, j->split + i, r->col.ncol + t->level_first[i],
                                  t->level_count[i], err);
    if (st == VX_OK) st = vx_stream_append_color(o, j->depth, r->col.vcol, t->voxel_count, err);
  }
  for (uint32_t i = 0; i < j->blog && st == VX_OK; i++)
    st = vx_stream_append(j->out, j->split + i, t->nodes + t->level_first[i], t->level_count[i],
                          err);
  if (st == VX_OK) st = vx_stream_append(j->out, j->depth, t->voxels, t->voxel_count, err);
  if (st != VX_OK) return st;
  j->root_code[j->nroots] = j->work[k];
  j->root_node[j->nroots] = t->nodes[0];
  j->root_fit[j->nroots] = r->root;
  j->nroots++;
  return VX_OK;
}

static void fail_locked(ooc_job *j, vx_status st, const vx_error *e) {
  if (j->status == VX_OK) {
    j->status = st;
    j->err = *e;
    j->err.status = st;
  }
  j->stop = 1;
  pthread_cond_broadcast(&j->cv);
}

static void *worker(void *arg) {
  ooc_job *j = (ooc_job *)arg;
  const uint64_t nwork = j->nwork;
  vx_block b;
  vx_error e;
  memset(&e, 0, sizeof e);
  memset(&b, 0, sizeof b);
  uint64_t *codes = NULL, cap = 0;
  vx_voxel *field = NULL;
  color_block_scratch cscr;
  memset(&cscr, 0, sizeof cscr);
  cscr.pool = &j->pool;
  int ok = j->surf ? 1 : vx_block_init(&b, 1u << j->blog, j->band, j->sign);
  b.pool = &j->pool;
  pthread_mutex_lock(&j->mu);
  if (!ok) {
    vx_error_set(&e, VX_ERR_NOMEM, "cannot allocate a %u^3 block's scratch", 1u << j->blog);
    fail_locked(j, VX_ERR_NOMEM, &e);
  }
  for (;;) {
    while (!j->stop && j->next_claim < nwork && j->next_claim >= j->next_emit + j->window)
      pthread_cond_wait(&j->cv, &j->mu);
    if (j->stop || j->next_claim >= nwork) break;
    uint64_t k = j->next_claim++;
    pthread_mutex_unlock(&j->mu);
    blk_result r;
    vx_status st = run_block(j, &b, k, &r, &codes, &field, &cap, &cscr, &e);
    pthread_mutex_lock(&j->mu);
    if (st != VX_OK) {
      fail_locked(j, st, &e);
      break;
    }
    r.ready = 1;
    j->slot[k % j->window] = r;
    if (j->emitting) continue; /* the emitting thread will pick it up */
    j->emitting = 1;
    while (!j->stop && j->next_emit < nwork && j->slot[j->next_emit % j->window].ready) {
      blk_result *s = &j->slot[j->next_emit % j->window];
      blk_result done = *s;
      s->ready = 0;
      memset(&s->sub, 0, sizeof s->sub);
      memset(&s->col, 0, sizeof s->col);
      uint64_t ke = j->next_emit;
      pthread_mutex_unlock(&j->mu);
      st = emit(j, &done, ke, &e);
      vx_octree_free(&done.sub);
      color_block_free(&done.col);
      pthread_mutex_lock(&j->mu);
      if (st != VX_OK) {
        fail_locked(j, st, &e);
        break;
      }
      j->next_emit++;
      pthread_cond_broadcast(&j->cv);
      if (j->progress && j->progress(j->user, "voxelize", (double)j->next_emit / (double)nwork)) {
        vx_error_set(&e, VX_ERR_INTERRUPTED, "voxelization cancelled");
        fail_locked(j, VX_ERR_INTERRUPTED, &e);
      }
    }
    j->emitting = 0;
  }
  pthread_mutex_unlock(&j->mu);
  vx_free(codes);
  vx_free(field);
  pthread_mutex_lock(&j->mu);
  j->color_sec += cscr.sec;
  pthread_mutex_unlock(&j->mu);
  color_block_scratch_free(&cscr);
  vx_block_release(&b);
  return NULL;
}

/* Levels 0 .. split-1 above the block roots: masks from the root codes, planes fitted from the
 * roots' results. The stream takes the node array. */
static vx_status build_top(ooc_job *j, vx_error *err) {
  const uint32_t S = j->split, D = j->depth;
  uint64_t counts[VX_MAX_DEPTH + 1] = {0};
  if (S == 0) { /* one block is the whole grid: its root is the tree's root */
    if (j->nroots != 1)
      return vx_error_set(err, VX_ERR_INVALID_ARG, "%llu roots for a one-block grid",
                          (unsigned long long)j->nroots);
    if (j->tile_root) *j->tile_root = j->root_fit[0];
    if (j->tile_sum && j->nroot_sum) {
      *j->tile_sum = j->root_sum[0];
      j->tile_sum->code = 0;
      *j->tile_has = 1;
    }
    return vx_stream_set_top(j->out, NULL, counts, err); /* its colours are final */
  }
  vx_octree t;
  vx_status st = vx_octree_top_build(j->root_code, j->root_node, j->root_fit, j->nroots, S, D,
                                     j->band, &t, j->tile_root, err);
  if (st != VX_OK) return st;
  uint32_t *top_color = NULL;
  if (st == VX_OK && j->color) { /* the top's colours and the roots' final ones */
    j->root_color = (uint32_t *)vx_malloc((size_t)(j->nroots ? j->nroots : 1) * 4);
    st = j->root_color ? color_top(&t, S, j->root_sum, j->nroot_sum, j->cfilter, &top_color,
                                   j->root_color, j->tile_sum, err)
                       : vx_error_set(err, VX_ERR_NOMEM, "out of memory");
    if (st == VX_OK && j->tile_has) *j->tile_has = j->nroot_sum > 0;
  }
  if (st == VX_OK) {
    for (uint32_t l = 0; l < S; l++) counts[l] = t.level_count[l];
    st = vx_stream_set_top(j->out, t.nodes, counts, err); /* the nodes of level S ride along */
    if (j->color) vx_stream_set_top_color(j->out, top_color); /* the stream owns them now */
    top_color = NULL;
    t.nodes = NULL;
  }
  vx_free(top_color);
  vx_octree_free(&t);
  return st;
}


static int thread_count(const vx_voxelize_opts *opts, uint64_t nwork) {
  return vx_thread_count(opts->threads, nwork < 256 ? (int)(nwork ? nwork : 1) : 256);
}

/* Bytes of one thread's block scratch (blocks.c) plus its subtree and output buffers, for a block
 * of edge B holding up to `vox` surface voxels. */
static double thread_bytes(uint32_t B, double vox) {
  double v = (double)B * B * B, c = (double)(B + 1) * (B + 1) * (B + 1);
  return v * 5.0 + c * 22.0 + vox * (16.0 + 8.0 + 8.0 + 40.0 + 16.0) + 4.0 * 1048576.0;
}

#define MiB (1.0 / 1048576.0)
#define MIB_BYTES 1048576.0

/* Surface voxels expected of the mesh: twice its area in voxels (grid units), at most the grid.
 * A plane with unit normal n crosses about |nx| + |ny| + |nz| voxels per unit of area (1.5 on
 * average over directions, at most sqrt 3), and closed triangles also take the voxels they only
 * touch: the bundled bunny has 1.3 to 1.5 times its area from 16^3 to 1024^3. The factor 2
 * leaves a margin for meshes of many small pieces. */
/* tris: a tile's triangles (n of them), NULL for every triangle of m. */
static double expected_voxels(const vx_soup *m, const vx_transform *xf, uint32_t depth,
                              const uint32_t *tris, uint64_t n) {
  double area = 0.0;
  if (!tris) area = vx_soup_grid_area(m, xf);
  for (uint64_t i = 0; tris && i < n; i++) {
    double g[9];
    vx_grid_tri(m, xf, tris[i], g);
    area += vx_grid_tri_area(g);
  }
  double grid = ldexp(1.0, 3 * (int)depth), vox = 2.0 * area + 1.0;
  return vox < grid ? vox : grid;
}

/* Bytes of a level-19 zstd context compressing S bytes in one call: zstd fits the window to the
 * input (w = log2 S rounded up, 10..23) and sizes its two tables from it (chain log w + 1 up to
 * 24, hash log w + 1 up to 22, 4 bytes an entry), plus about 1.2 MiB of other state. Within 8 %
 * of ZSTD_estimateCCtxSize for S from 16 KiB to 8 MiB (zstd 1.5). */
static double zstd19_bytes(double sect) {
  int w = 10;
  while (w < 23 && ldexp(1.0, w) < sect) w++;
  int chain = w + 1 < 24 ? w + 1 : 24, hash = w + 1 < 22 ? w + 1 : 22;
  return 4.0 * (ldexp(1.0, chain) + ldexp(1.0, hash)) + 1.2 * MIB_BYTES;
}

/* What writing the .svo (formats/svo_write.c) holds besides the levels themselves, for a tree of
 * about `vox` surface voxels: raw bytes R = 8 per voxel + 12 per node (about vox / 3 nodes), and
 * 4 per cell with colour, the largest section (the voxels) S = 8 vox. The zstd level and workers
 * follow the writer's default rule (formats/svo_codec.h: level 19 under 8 MiB raw, 9 under
 * 64 MiB, 3 with up to 16 workers above); a level the caller asks the writer for is not known here. Measured with zstd 1.5:
 * - the compression context: zstd19_bytes(S); level 9: 12.5 MiB; level 3 single-threaded:
 *   1.2 MiB; level 3 with w workers streaming a large level: 56 MiB (w = 2), 82 (4), 183 (16),
 *   bounded by 12 MiB * (w + 3);
 * - a streamed write without workers packs and compresses whole levels: 2 S; with workers, 1 MiB
 *   pieces in and out;
 * - 1 MiB of record scratch, and a checksum context per level (a compressed frame, streamed:
 *   its window of at most 512 KiB, a 128 KiB block, small tables). */
static double writer_bytes(double vox, uint32_t depth, int color) {
  const double raw = (color ? 12.0 + 16.0 / 3.0 : 12.0) * vox, sect = 8.0 * vox;
  double zstd, bufs = 2.0 * sect;
  if (raw < 8.0 * MIB_BYTES) {
    zstd = zstd19_bytes(sect);
  } else if (raw < 64.0 * MIB_BYTES) {
    zstd = 13.0 * MIB_BYTES;
  } else {
    int cpus = vx_cpu_count(), w = cpus > 1 ? (cpus > 16 ? 16 : cpus) : 0;
    zstd = w ? 12.0 * MIB_BYTES * (w + 3) : 1.5 * MIB_BYTES;
    if (w) bufs = 2.0 * MIB_BYTES;
  }
  double check = 192.0 * 1024.0 + (sect / 2 < 512.0 * 1024.0 ? sect / 2 : 512.0 * 1024.0);
  /* colour sections from a stream: batches of parents and colours (cdiff), 1.5 MiB */
  return zstd + bufs + MIB_BYTES + (double)(depth + 2) * check + (color ? 1.5 * MIB_BYTES : 0.0);
}

/* The GPU build's surface cut into the blocks the workers take: the blocks holding voxels, in
 * Morton order, and where each one's voxels start. */
typedef struct gpu_input {
  vx_surface surf;
  vx_voxelize_stats stats;
  uint64_t *work, *soff, nwork;
} gpu_input;

static vx_status gpu_blocks(gpu_input *g, uint32_t blog, vx_error *err) {
  const vx_surface *s = &g->surf;
  const uint32_t sh = 3 * blog;
  uint64_t n = 0;
  for (uint64_t i = 0; i < s->count; i++) n += i == 0 || s->codes[i] >> sh != s->codes[i - 1] >> sh;
  g->work = (uint64_t *)vx_malloc((n ? n : 1) * sizeof(uint64_t));
  g->soff = (uint64_t *)vx_malloc((n + 1) * sizeof(uint64_t));
  if (!g->work || !g->soff)
    return vx_error_set(err, VX_ERR_NOMEM, "cannot allocate %llu block records",
                        (unsigned long long)n);
  n = 0;
  for (uint64_t i = 0; i < s->count; i++)
    if (i == 0 || s->codes[i] >> sh != s->codes[i - 1] >> sh) {
      g->work[n] = s->codes[i] >> sh;
      g->soff[n++] = i;
    }
  g->soff[n] = s->count;
  g->nwork = n;
  return VX_OK;
}

/* With colour, the blocks of the coloured soup's bins join the GPU's blocks (without voxels: their
 * parts' sums still count above them), as the CPU build visits every block with triangles. */
static vx_status gpu_merge_bins(gpu_input *g, const vx_bins *cb, vx_error *err) {
  const uint64_t cap = g->nwork + cb->nwork;
  uint64_t *w = (uint64_t *)vx_malloc((cap ? cap : 1) * sizeof(uint64_t));
  uint64_t *o = (uint64_t *)vx_malloc((cap + 1) * sizeof(uint64_t));
  if (!w || !o) {
    vx_free(w);
    vx_free(o);
    return vx_error_set(err, VX_ERR_NOMEM, "cannot allocate %llu block records",
                        (unsigned long long)cap);
  }
  uint64_t a = 0, b = 0, n = 0;
  while (a < g->nwork || b < cb->nwork) {
    if (b >= cb->nwork || (a < g->nwork && g->work[a] <= cb->work[b])) {
      if (b < cb->nwork && cb->work[b] == g->work[a]) b++;
      w[n] = g->work[a];
      o[n++] = g->soff[a++];
    } else {
      w[n] = cb->work[b++];
      o[n++] = g->soff[a]; /* an empty range (soff[nwork] is the end) */
    }
  }
  o[n] = g->soff[g->nwork];
  vx_free(g->work);
  vx_free(g->soff);
  g->work = w;
  g->soff = o;
  g->nwork = n;
  return VX_OK;
}

static void free_inputs(vx_bins *b, gpu_input *g) {
  vx_bins_free(b);
  vx_surface_free(&g->surf);
  vx_free(g->work);
  vx_free(g->soff);
  memset(g, 0, sizeof *g);
}

/* The colours of the blocks that take their rgb from above level S, now that the roots' final
 * colours are known. */
static vx_status apply_patches(ooc_job *j, vx_error *err) {
  vx_status st = VX_OK;
  for (uint64_t p = 0; p < j->npatch && st == VX_OK; p++) {
    const col_patch *c = &j->patch[p];
    for (uint32_t i = 0; i <= j->blog && st == VX_OK; i++)
      st = vx_stream_patch_rgb(j->out, i < j->blog ? j->split + i : j->depth, c->first[i],
                               c->count[i], j->root_color[c->root], err);
  }
  return st;
}

static vx_status stream_unique(const vx_soup *mesh, const vx_soup *color_soup,
                               const vx_voxelize_opts *opts, const char *tmp_dir,
                               const vx_stream_build_opts *xo, vx_stream *out,
                               vx_voxelize_stats *stats, vx_error *err) {
  memset(out, 0, sizeof *out);
  if (stats) memset(stats, 0, sizeof *stats);
  vx_transform xf;
  uint32_t gdepth, depth;
  float band;
  vx_status st = vx_voxelize_setup(mesh, opts, &xf, &gdepth, &band, err);
  if (st != VX_OK) return st;
  /* a tile: its cell's levels only, with the sign tables given, coloured from the colour
   * source given (already started, shared by the tiles) */
  const int tile = opts->tile_depth != 0;
  depth = tile ? opts->tile_depth : gdepth;
  if (tile && (depth > VX_MAX_DEPTH || depth > gdepth || !xo || !xo->sign || !xo->tile_root ||
               (color_soup && (!xo->tile_color || !xo->tile_color_root || !xo->tile_color_has)) ||
               (gdepth - depth < 21 && opts->tile_code >> 3 * (gdepth - depth) != 0)))
    return vx_error_set(err, VX_ERR_INVALID_ARG,
                        "tile %llu of depth %u in a %u^3 grid: not a build of one cell with "
                        "the sign tables (and colour source) given",
                        (unsigned long long)opts->tile_code, opts->tile_depth, opts->resolution);
  const color_source *shared_cs = tile && color_soup ? xo->tile_color : NULL;
  const uint32_t blog = vx_block_log2(depth, xo ? xo->block_log2 : 0);
  const uint32_t B = 1u << blog;
  const uint64_t limit = opts->mem_limit;
  /* What the build holds whatever happens, before the expensive steps: the process as it is, the
   * sign tables at the peak of their construction (vx_sign_peak_bytes; a tile's are the plan's,
   * already held), the bins (at least one entry per triangle), every thread's scratch and the
   * writer. A tile counts its own triangles and the voxels their area can reach. */
  const double tris = tile ? (double)xo->tile_ntris : (double)mesh->tri_count;
  const double sign_bytes = tile ? 0.0 : vx_sign_peak_bytes(opts->sign_rule);
  const double base0 = (double)vx_resident_bytes();
  /* no more threads than blocks in the grid, no more voxels in a block than in the model */
  const int nt_max = thread_count(opts, (uint64_t)1 << 3 * (depth - blog));
  const double vox = !limit ? 0.0
                     : tile ? expected_voxels(mesh, &xf, depth, xo->tile_tris, xo->tile_ntris)
                            : expected_voxels(mesh, &xf, depth, NULL, 0);
  const double blk_vox = 0.25 * B * B * B < vox ? 0.25 * B * B * B : vox;
  const double writer = writer_bytes(vox, depth, color_soup != NULL);
  /* the GPU build's surface comes back to host memory whole (codes and corners, 16 B a voxel) */
  const double gpu_surface = opts->gpu ? 16.0 * vox : 0.0;
  /* colour: the mip pyramids, a second set of bins when the build's cannot serve (its triangles
   * deduplicated, or none on the GPU), each thread's parts (about 2 a voxel, 32 B, twice while
   * sorted), sums (48 B) and colours; the colours of the levels count with them (the budget) */
  color_source csrc; /* a tile's is shared (its pyramids already held): this one stays empty */
  memset(&csrc, 0, sizeof csrc);
  if (color_soup && !shared_cs) {
    st = color_source_open(&csrc, color_soup, opts->color_filter, err);
    if (st != VX_OK) return st;
  }
  const int own_cbins = color_soup && (opts->gpu || color_soup != mesh);
  const double ctris = !color_soup ? 0.0
                      : tile      ? (double)xo->tile_color_ntris
                                  : (double)color_soup->tri_count;
  const double color_fixed =
      color_soup ? (double)csrc.mip_bytes + (own_cbins ? ctris * 4.0 : 0.0) : 0.0;
  const double color_thread = color_soup ? blk_vox * (2.0 * 64.0 + 2.0 * 48.0 + 4.0) : 0.0;
  double fixed = tris * sign_bytes + tris * 4.0 +
                 (double)nt_max * (thread_bytes(B, blk_vox) + color_thread) + writer +
                 gpu_surface + color_fixed;
  char gpu_note[96] = "";
  if (opts->gpu)
    snprintf(gpu_note, sizeof gpu_note, ", %.0f for the GPU's surface", gpu_surface * MiB);
  if (color_soup)
    snprintf(gpu_note + strlen(gpu_note), sizeof gpu_note - strlen(gpu_note),
             ", %.0f for colour", (color_fixed + nt_max * color_thread) * MiB);
  if (limit && base0 + fixed > (double)limit) {
    color_source_close(&csrc);
    return vx_error_set(err, VX_ERR_LIMIT,
                        "a %u^3 build of this mesh needs at least about %.0f MiB even out of core "
                        "(%.0f in use, %.0f for %s, %.0f for %d threads' "
                        "scratch, %.0f for the file writer%s), over the memory limit of %.0f MiB",
                        opts->resolution, (base0 + fixed) * MiB, base0 * MiB,
                        tris * (sign_bytes + 4.0) * MiB,
                        tile ? "the tile's bins" : "sign tables and bins",
                        nt_max * thread_bytes(B, blk_vox) * MiB,
                        nt_max, writer * MiB, gpu_note, (double)limit * MiB);
  }

  double t0 = vx_clock_seconds();
  void *warm = opts->gpu ? vx_gpu_warmup_start() : NULL;
  vx_sign_data sign; /* a tile's are given: this one stays empty */
  memset(&sign, 0, sizeof sign);
  st = tile ? VX_OK
            : vx_sign_build_rule_ex(mesh, &xf, opts->sign_rule, opts->gpu, opts->threads, &sign,
                                    err); /* as vx_voxelize */
  const vx_sign_data *sg = tile ? xo->sign : &sign;
  vx_gpu_warmup_join(warm);
  if (st != VX_OK) {
    color_source_close(&csrc);
    return st;
  }
  const double t1 = vx_clock_seconds();
  vx_bins bins, cbins;
  gpu_input gi;
  memset(&bins, 0, sizeof bins);
  memset(&cbins, 0, sizeof cbins);
  memset(&gi, 0, sizeof gi);
  if (opts->gpu) { /* the surface from the GPU now; the sign tables are not needed after it */
    vx_gpu_build_opts go;
    if (xo) go = xo->gpu;
    else memset(&go, 0, sizeof go);
    go.mem_limit = limit;
    if (tile) {
      go.region_log2 = depth;
      go.region_code = opts->tile_code;
    }
    st = vx_surface_build_gpu(mesh, &xf, gdepth, sg, band, &go, opts->progress, opts->user,
                              &gi.surf, &gi.stats, err);
    vx_sign_free(&sign);
    if (st == VX_OK && tile) { /* codes in the tile's own index space */
      const uint64_t base = opts->tile_code << 3 * depth;
      for (uint64_t i = 0; i < gi.surf.count; i++) gi.surf.codes[i] -= base;
    }
    if (st == VX_OK) st = gpu_blocks(&gi, blog, err);
  } else {
    st = vx_bins_build_region(mesh, &xf, gdepth, depth, tile ? opts->tile_code : 0,
                              tile ? xo->tile_tris : NULL, tile ? xo->tile_ntris : 0, blog, limit,
                              &bins, err);
  }
  if (st == VX_OK && own_cbins) /* the coloured soup's triangles, duplicates included */
    st = tile ? vx_bins_build_region(color_soup, &xf, gdepth, depth, opts->tile_code,
                                     xo->tile_color_tris, xo->tile_color_ntris, blog, limit,
                                     &cbins, err)
              : vx_bins_build(color_soup, &xf, depth, blog, limit, &cbins, err);
  if (st == VX_OK && opts->gpu && color_soup) st = gpu_merge_bins(&gi, &cbins, err);
  if (st != VX_OK) {
    vx_sign_free(&sign);
    free_inputs(&bins, &gi);
    vx_bins_free(&cbins);
    color_source_close(&csrc);
    return st;
  }
  const double t2 = vx_clock_seconds();
  const vx_voxelize_stats gstats = gi.stats; /* gi is freed before the stats are filled */
  ooc_job j;
  memset(&j, 0, sizeof j);
  const uint64_t nwork = opts->gpu ? gi.nwork : bins.nwork;
  const int nt = thread_count(opts, nwork);
  j.window = (uint64_t)nt * 4;
  /* The budget for the levels held in memory: what is left once the process, the threads, the
   * window, the roots and the writer are paid for, divided by 2.5 because writing a tree from
   * memory holds the tree, its largest packed level and the compressed sections together. */
  double base1 = (double)vx_resident_bytes();
  double roots = (double)nwork * (double)(8 + sizeof(vx_node) + sizeof(vx_fit_root) +
                                          (color_soup ? sizeof(csum) + 4 : 0));
  double win_vox = (double)j.window * blk_vox < vox ? (double)j.window * blk_vox : vox;
  double hold = (double)nt * (thread_bytes(B, blk_vox) + color_thread) +
                win_vox * (color_soup ? 44.0 : 40.0) + roots + writer;
  uint64_t budget = 0;
  if (limit) {
    if (base1 + hold > (double)limit) {
      free_inputs(&bins, &gi);
      vx_bins_free(&cbins);
      color_source_close(&csrc);
      vx_sign_free(&sign);
      return vx_error_set(err, VX_ERR_LIMIT,
                          "a %u^3 build of this mesh needs at least about %.0f MiB even out of "
                          "core (%.0f in use after binning, %.0f for threads, window and block "
                          "roots), over the memory limit of %.0f MiB",
                          opts->resolution, (base1 + hold) * MiB, base1 * MiB, hold * MiB,
                          (double)limit * MiB);
    }
    /* the blocks' overlap pairs and triangle coordinates: what thread_bytes allows each thread
     * for them, and a third of what is left (stacked triangles fail there, not past the limit) */
    double left = (double)limit - base1 - hold;
    j.pool.cap = (uint64_t)((double)nt * (blk_vox * 16.0 + 4.0 * MIB_BYTES) + left / 3.0);
    j.pool.limit = limit;
    j.pool.wind_cap = vx_wind_excess_cap(limit);
    double b = (2.0 / 3.0) * left / 2.5;
    budget = b > 1.0 ? (uint64_t)b : 1;
  }
  if (xo && xo->spill_budget) budget = xo->spill_budget;
  st = vx_stream_init(out, depth, depth - blog, tmp_dir, budget, err);
  if (st != VX_OK) {
    free_inputs(&bins, &gi);
    vx_bins_free(&cbins);
    color_source_close(&csrc);
    vx_sign_free(&sign);
    return st;
  }
  if (color_soup) {
    vx_stream_init_color(out);
    if (!shared_cs) color_source_start(&csrc);
    j.cs = shared_cs ? shared_cs : &csrc;
    j.cdepth = gdepth;
    j.cbase = tile ? opts->tile_code << 3 * (depth - blog) : 0;
    j.tile_sum = tile ? xo->tile_color_root : NULL;
    j.tile_has = tile ? xo->tile_color_has : NULL;
    if (j.tile_sum) memset(j.tile_sum, 0, sizeof *j.tile_sum);
    if (j.tile_has) *j.tile_has = 0;
    j.color = 1;
    j.cfilter = opts->color_filter;
    j.cbins = own_cbins ? &cbins : &bins;
  }
  out->xf = xf;
  if (tile) vx_transform_cell(&xf, opts->tile_code, depth, &out->xf); /* the tile's own grid */
  out->band = band;
  out->prune_error = 0.0f;
  j.mesh = mesh;
  j.xf = &xf;
  j.sign = sg;
  j.tile_root = tile ? xo->tile_root : NULL;
  j.bins = &bins;
  j.surf = opts->gpu ? &gi.surf : NULL;
  j.work = opts->gpu ? gi.work : bins.work;
  j.soff = gi.soff;
  j.nwork = nwork;
  j.depth = depth;
  j.blog = blog;
  j.split = depth - blog;
  j.band = band;
  j.out = out;
  j.status = VX_OK;
  j.fail_block = xo ? xo->fail_block : 0;
  j.progress = opts->progress;
  j.user = opts->user;
  j.slot = (blk_result *)vx_calloc(j.window, sizeof(blk_result));
  j.root_code = (uint64_t *)vx_malloc((nwork ? nwork : 1) * sizeof(uint64_t));
  j.root_node = (vx_node *)vx_malloc((nwork ? nwork : 1) * sizeof(vx_node));
  j.root_fit = (vx_fit_root *)vx_malloc((nwork ? nwork : 1) * sizeof(vx_fit_root));
  if (color_soup) j.root_sum = (csum *)vx_malloc((nwork ? nwork : 1) * sizeof(csum));
  if (!j.slot || !j.root_code || !j.root_node || !j.root_fit || (color_soup && !j.root_sum)) {
    st = vx_error_set(err, VX_ERR_NOMEM, "cannot allocate %llu block records",
                      (unsigned long long)nwork);
  } else {
    pthread_mutex_init(&j.mu, NULL);
    pthread_cond_init(&j.cv, NULL);
    vx_parallel(nt, worker, &j);
    pthread_cond_destroy(&j.cv);
    pthread_mutex_destroy(&j.mu);
    if (j.status != VX_OK) {
      st = j.status;
      if (err) *err = j.err;
    } else if (j.nroots == 0) {
      st = vx_error_set(err, VX_ERR_EMPTY, "no surface voxels: nothing to build");
    }
  }
  for (uint64_t i = 0; j.slot && i < j.window; i++) {
    vx_octree_free(&j.slot[i].sub);
    color_block_free(&j.slot[i].col);
  }
  vx_free(j.slot);
  free_inputs(&bins, &gi);
  vx_bins_free(&cbins);
  color_source_close(&csrc);
  j.cs = NULL;
  vx_sign_free(&sign);
  if (st == VX_OK) st = build_top(&j, err);
  if (st == VX_OK) st = vx_stream_finish(out, err);
  if (st == VX_OK && j.color) st = apply_patches(&j, err);
  if (st == VX_OK && (out->level_count[depth] > UINT32_MAX))
    st = vx_error_set(err, VX_ERR_LIMIT, "%llu surface voxels: more than the 2^32 a tree holds",
                      (unsigned long long)out->level_count[depth]);
  if (st == VX_OK && stats) {
    stats->triangles = mesh->tri_count;
    stats->surface_voxels = out->level_count[depth];
    stats->sec_sign = t1 - t0;
    stats->sec_voxels = opts->gpu ? t2 - t1 : vx_clock_seconds() - t1;
    stats->sec_tree = opts->gpu ? vx_clock_seconds() - t2 : 0.0;
    for (int k = 0; k < 5; k++) stats->sec_gpu[k] = gstats.sec_gpu[k];
    stats->corners = opts->gpu ? gstats.corners : j.corners;
    stats->corners_wound = gstats.corners_wound;
    stats->pair_tests = opts->gpu ? gstats.pair_tests : j.pair_tests;
    stats->sec_color = j.color_sec / (nt > 0 ? nt : 1);
    for (uint32_t l = 0; l < depth; l++) stats->nodes += out->level_count[l];
  }
  vx_free(j.root_code);
  vx_free(j.root_node);
  vx_free(j.root_fit);
  vx_free(j.root_sum);
  vx_free(j.patch);
  vx_free(j.root_color);
  if (st != VX_OK) vx_stream_free(out);
  return st;
}

vx_status vx_voxelize_stream_ex(const vx_soup *mesh, const vx_voxelize_opts *opts,
                                const char *tmp_dir, const vx_stream_build_opts *xo,
                                vx_stream *out, vx_voxelize_stats *stats, vx_error *err) {
  vx_soup uniq;
  const vx_soup *m;
  uint64_t dropped;
  memset(out, 0, sizeof *out);
  if (stats) memset(stats, 0, sizeof *stats);
  vx_status st = vx_voxelize_unique(mesh, opts, &uniq, &m, &dropped, err);
  if (st != VX_OK) return st;
  const vx_soup *cs = opts && opts->color && mesh && mesh->color && mesh->tri_count ? mesh : NULL;
  if (cs && cs->tri_count > UINT32_MAX)
    st = vx_error_set(err, VX_ERR_LIMIT, "colour: more than 2^32 triangles");
  if (cs && opts->color_filter != VX_COLOR_FILTER_MEAN &&
      opts->color_filter != VX_COLOR_FILTER_DOMINANT)
    st = vx_error_set(err, VX_ERR_INVALID_ARG, "unknown colour filter %d", (int)opts->color_filter);
  if (st == VX_OK) st = stream_unique(m, cs, opts, tmp_dir, xo, out, stats, err);
  vx_soup_free(&uniq);
  if (stats) stats->duplicates = dropped;
  return st;
}

vx_status vx_voxelize_stream(const vx_soup *mesh, const vx_voxelize_opts *opts, const char *tmp_dir,
                             vx_stream *out, vx_voxelize_stats *stats, vx_error *err) {
  return vx_voxelize_stream_ex(mesh, opts, tmp_dir, NULL, out, stats, err);
}

vx_status vx_voxelize_tile(const vx_soup *mesh, const vx_voxelize_opts *opts, const char *tmp_dir,
                           const vx_stream_build_opts *xo, vx_stream *out,
                           vx_voxelize_stats *stats, vx_error *err) {
  memset(out, 0, sizeof *out);
  if (stats) memset(stats, 0, sizeof *stats);
  if (!opts || opts->tile_depth == 0)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "a tile build needs opts->tile_depth");
  return stream_unique(mesh, xo && xo->tile_color ? xo->tile_color->soup : NULL, opts, tmp_dir,
                       xo, out, stats, err);
}
