/* SPDX-License-Identifier: Apache-2.0 */
/* resigned.c - the voxels that the thin-feature rule re-signed (resigned.h).
 *
 * The tree is walked depth first, in subtrees of level min(5, D - 3) handed to the threads, each
 * node with the 3 x 3 x 3 nodes of its level around it: the children's neighbourhoods are cut from
 * the 4 x 4 x 4 cells of the next level around the node's children, found once from its own. At a
 * node of level D - 3 the voxels within one voxel of its 8^3 are copied into a dense block of
 * corner values (10^3 voxels: each voxel lands in about 2 blocks), so comparing a voxel's corner
 * with the 7 voxels that share it reads that block alone. A voxel is flagged when one of its negative corners is stored larger by a voxel around
 * it. Then the closure (below) adds the voxels that only share corners with re-signed ones.
 */
#include "sampler/resigned.h"
#include "sys/alloc.h"
#include "svo/node.h"
#include "sys/system.h"

#include <stdatomic.h>
#include <string.h>

#define VX_RS_NONE 0xffffffffu
#define VX_RS_TOP 5u /* level of the subtrees handed out (up to 8^5 tasks: the threads stay busy) */
#define VX_RS_ABSENT INT8_MIN /* no voxel: never larger than a stored corner */

/* A subtree handed out: its root's neighbourhood (index (dx+1) + 3 (dy+1) + 9 (dz+1), VX_RS_NONE
 * where there is no node) and minimum corner, finest voxels. */
typedef struct rs_task {
  uint32_t nbr[27];
  uint32_t min[3];
} rs_task;

/* A voxel found re-signed: its minimum corner and index. */
typedef struct rs_found {
  uint32_t x[3];
  uint32_t idx;
} rs_found;

typedef struct rs_job {
  const vx_octree *t;
  rs_task *tasks;
  uint32_t ntasks, top;
  atomic_uint next;
  _Atomic uint32_t *bits;
  /* the voxels found, for the closure (few: a spin lock is enough) */
  atomic_flag lock;
  rs_found *found;
  size_t nfound, cap;
  int nomem;
} rs_job;

/* Records voxel idx at minimum corner x as re-signed (its bit set by the caller). */
static void record(rs_job *j, const uint32_t x[3], uint32_t idx) {
  while (atomic_flag_test_and_set_explicit(&j->lock, memory_order_acquire)) {
  }
  if (j->nfound == j->cap) {
    const size_t cap = j->cap ? 2 * j->cap : 256;
    rs_found *f = (rs_found *)vx_realloc(j->found, cap * sizeof *f);
    if (f) {
      j->found = f;
      j->cap = cap;
    }
  }
  if (j->nfound < j->cap) {
    memcpy(j->found[j->nfound].x, x, sizeof j->found[j->nfound].x);
    j->found[j->nfound++].idx = idx;
  } else {
    j->nomem = 1;
  }
  atomic_flag_clear_explicit(&j->lock, memory_order_release);
}

/* Child `slot` of node idx (VX_RS_NONE: none, or no node). */
static uint32_t child_of(const vx_octree *t, uint32_t idx, uint32_t slot) {
  if (idx == VX_RS_NONE) return VX_RS_NONE;
  const vx_node *nd = &t->nodes[idx];
  const uint32_t mask = vx_node_mask(nd->info);
  return mask >> slot & 1u ? vx_child_index(nd->child, mask, slot) : VX_RS_NONE;
}

/* The 4 x 4 x 4 cells of the next level around the children of the node whose neighbourhood is
 * nbr: cell (i, j, k) at i + 4 j + 16 k lies at (i, j, k) - 1 from its first child, so that child
 * s's neighbourhood is the cells at s + (0 .. 2) per axis. */
static void children_block(const vx_octree *t, const uint32_t nbr[27], uint32_t blk[64]) {
  for (uint32_t k = 0; k < 4; k++)
    for (uint32_t jj = 0; jj < 4; jj++)
      for (uint32_t i = 0; i < 4; i++) {
        /* cell i of the children lies in node (i + 1) / 2 - 1 around, in its slot (i + 1) & 1 */
        const uint32_t q = (i + 1u) / 2u + 3u * ((jj + 1u) / 2u) + 9u * ((k + 1u) / 2u);
        const uint32_t slot = ((i + 1u) & 1u) | ((jj + 1u) & 1u) << 1 | ((k + 1u) & 1u) << 2;
        blk[i + 4u * jj + 16u * k] = child_of(t, nbr[q], slot);
      }
}

/* Child s's neighbourhood, cut from its parent's children_block. */
static void child_nbr(const uint32_t blk[64], uint32_t s, uint32_t cn[27]) {
  const uint32_t sx = s & 1u, sy = s >> 1 & 1u, sz = s >> 2 & 1u;
  for (uint32_t k = 0; k < 27; k++)
    cn[k] = blk[(sx + k % 3u) + 4u * (sy + k / 3u % 3u) + 16u * (sz + k / 9u)];
}

/* Corner values of the voxels within one voxel of a node of level D - 3 (8^3 voxels): voxel u - 1
 * from its minimum (u in 0 .. 9 per axis) at VX_RS_AT(u), corners in order; VX_RS_ABSENT where
 * none. They come from the bricks (nodes of level D - 1) b - 1 from its first (b in 0 .. 5 per
 * axis: brick 0 and 5 hold the margin's voxels, 1 .. 4 its own), VX_RS_BRICKS of them. */
#define VX_RS_B 10u
#define VX_RS_AT(x, y, z) ((((z) * VX_RS_B + (y)) * VX_RS_B + (x)) * 8u)
#define VX_RS_NB 6u
#define VX_RS_BRICKS (VX_RS_NB * VX_RS_NB * VX_RS_NB)

/* Where the voxel whose corner o is corner c of a voxel keeps that corner, from the voxel's own
 * values in the block (a constant once the loops over c and o are unrolled). */
#define VX_RS_D(c, o, a) ((int32_t)((c) >> (a) & 1u) - (int32_t)((o) >> (a) & 1u))
#define VX_RS_OFF(c, o)                                                                          \
  (((VX_RS_D(c, o, 2) * (int32_t)VX_RS_B + VX_RS_D(c, o, 1)) * (int32_t)VX_RS_B +                  \
    VX_RS_D(c, o, 0)) * 8 + (int32_t)(o))

/* The slots of brick b (0 .. 5 along an axis) whose voxels lie in the block: along each axis the
 * upper slot of brick 0 (voxel -1), the lower one of brick 5 (voxel 8), both of the others. */
static uint32_t brick_keep(uint32_t bx, uint32_t by, uint32_t bz) {
  return (bx == 0 ? 0xaau : bx == 5 ? 0x55u : 0xffu) & (by == 0 ? 0xccu : by == 5 ? 0x33u : 0xffu) &
         (bz == 0 ? 0xf0u : bz == 5 ? 0x0fu : 0xffu);
}

/* The voxels of the node of level D - 3 (minimum corner m) whose bricks around are bricks. */
static void block(rs_job *j, const uint32_t bricks[VX_RS_BRICKS], const uint32_t m[3]) {
  const vx_octree *t = j->t;
  int8_t v[VX_RS_B * VX_RS_B * VX_RS_B * 8];
  memset(v, (unsigned char)VX_RS_ABSENT, sizeof v);
  for (uint32_t b = 0; b < VX_RS_BRICKS; b++) {
    if (bricks[b] == VX_RS_NONE) continue;
    const vx_node *nd = &t->nodes[bricks[b]];
    const uint32_t mask = vx_node_mask(nd->info);
    const uint32_t bx = b % VX_RS_NB, by = b / VX_RS_NB % VX_RS_NB, bz = b / (VX_RS_NB * VX_RS_NB);
    for (uint32_t in = mask & brick_keep(bx, by, bz); in; in &= in - 1u) {
      const uint32_t s = (uint32_t)__builtin_ctz(in);
      /* voxel 2 (b - 1) + s, at block position 2 b + s - 1 */
      memcpy(v + VX_RS_AT(2u * bx + (s & 1u) - 1u, 2u * by + (s >> 1 & 1u) - 1u,
                          2u * bz + (s >> 2 & 1u) - 1u),
             t->voxels[vx_child_index(nd->child, mask, s)].c, 8);
    }
  }
  for (uint32_t b = 0; b < 64; b++) { /* the node's own bricks, 1 .. 4 per axis */
    const uint32_t bx = 1u + (b & 3u), by = 1u + (b >> 2 & 3u), bz = 1u + (b >> 4);
    const uint32_t bi = bx + VX_RS_NB * (by + VX_RS_NB * bz);
    if (bricks[bi] == VX_RS_NONE) continue;
    const vx_node *nd = &t->nodes[bricks[bi]];
    const uint32_t mask = vx_node_mask(nd->info);
    for (uint32_t in = mask; in; in &= in - 1u) {
      const uint32_t s = (uint32_t)__builtin_ctz(in);
      const uint32_t u[3] = {2u * bx + (s & 1u) - 1u, 2u * by + (s >> 1 & 1u) - 1u,
                             2u * bz + (s >> 2 & 1u) - 1u};
      const int8_t *cv = v + VX_RS_AT(u[0], u[1], u[2]);
      int resigned = 0;
#pragma GCC unroll 8
      for (uint32_t c = 0; c < 8; c++) {
        if (cv[c] >= 0) continue;
        int8_t most = VX_RS_ABSENT; /* the largest value stored at this corner, its own included */
#pragma GCC unroll 8
        for (uint32_t o = 0; o < 8; o++) {
          const int8_t x = cv[VX_RS_OFF(c, o)];
          most = x > most ? x : most;
        }
        resigned |= most > cv[c];
      }
      if (resigned) {
        const uint32_t vi = vx_child_index(nd->child, mask, s);
        const uint32_t x[3] = {m[0] + u[0] - 1u, m[1] + u[1] - 1u, m[2] + u[2] - 1u};
        atomic_fetch_or(&j->bits[vi >> 5], 1u << (vi & 31u));
        record(j, x, vi);
      }
    }
  }
}

/* The bricks around a node of level D - 3 from blk, the 4 x 4 x 4 cells of level D - 2 around its
 * children (children_block): cell c (0 .. 3 along an axis, c - 1 from the first child) holds
 * bricks 2 c + s - 1, of which 0 .. 5 are kept (the upper slot of cell 0, the lower of cell 3). */
static void bricks_of(const vx_octree *t, const uint32_t blk[64], uint32_t bricks[VX_RS_BRICKS]) {
  for (uint32_t b = 0; b < VX_RS_BRICKS; b++) bricks[b] = VX_RS_NONE;
  for (uint32_t c = 0; c < 64; c++) {
    if (blk[c] == VX_RS_NONE) continue;
    const vx_node *nd = &t->nodes[blk[c]];
    const uint32_t mask = vx_node_mask(nd->info);
    const uint32_t cx = c & 3u, cy = c >> 2 & 3u, cz = c >> 4;
    const uint32_t keep = (cx == 0 ? 0xaau : cx == 3 ? 0x55u : 0xffu) &
                          (cy == 0 ? 0xccu : cy == 3 ? 0x33u : 0xffu) &
                          (cz == 0 ? 0xf0u : cz == 3 ? 0x0fu : 0xffu);
    for (uint32_t in = mask & keep; in; in &= in - 1u) {
      const uint32_t s = (uint32_t)__builtin_ctz(in);
      const uint32_t u = (2u * cx + (s & 1u) - 1u) +
                         VX_RS_NB * ((2u * cy + (s >> 1 & 1u) - 1u) +
                                     VX_RS_NB * (2u * cz + (s >> 2 & 1u) - 1u));
      bricks[u] = vx_child_index(nd->child, mask, s);
    }
  }
}

/* The subtree of the node of level l whose neighbourhood is nbr (minimum corner m): visit(ctx,
 * nbr, m) at each node of level `stop` in it, in index order. */
typedef void (*rs_visit)(void *ctx, const uint32_t nbr[27], const uint32_t m[3]);
static void walk(const vx_octree *t, uint32_t l, uint32_t stop, const uint32_t nbr[27],
                 const uint32_t m[3], rs_visit visit, void *ctx) {
  if (l == stop) {
    visit(ctx, nbr, m);
    return;
  }
  uint32_t blk[64];
  children_block(t, nbr, blk);
  const vx_node *nd = &t->nodes[nbr[13]];
  const uint32_t mask = vx_node_mask(nd->info), h = 1u << (t->depth - l - 1u);
  for (uint32_t s = 0; s < 8; s++) {
    if (!(mask >> s & 1u)) continue;
    uint32_t cn[27];
    child_nbr(blk, s, cn);
    const uint32_t c[3] = {m[0] + (s & 1u) * h, m[1] + (s >> 1 & 1u) * h, m[2] + (s >> 2 & 1u) * h};
    walk(t, l + 1u, stop, cn, c, visit, ctx);
  }
}

/* A node of level D - 3: its voxels checked. */
static void visit_block(void *ctx, const uint32_t nbr[27], const uint32_t m[3]) {
  rs_job *j = (rs_job *)ctx;
  uint32_t blk[64], bricks[VX_RS_BRICKS];
  children_block(j->t, nbr, blk);
  bricks_of(j->t, blk, bricks);
  block(j, bricks, m);
}

static void *rs_worker(void *arg) {
  rs_job *j = (rs_job *)arg;
  for (;;) {
    const uint32_t k = atomic_fetch_add(&j->next, 1u);
    if (k >= j->ntasks) break;
    walk(j->t, j->top, j->t->depth - 3u, j->tasks[k].nbr, j->tasks[k].min, visit_block, j);
  }
  return NULL;
}

/* A node of level `top`: a task. */
static void visit_task(void *ctx, const uint32_t nbr[27], const uint32_t m[3]) {
  rs_job *j = (rs_job *)ctx;
  rs_task *task = &j->tasks[j->ntasks++];
  memcpy(task->nbr, nbr, sizeof task->nbr);
  memcpy(task->min, m, sizeof task->min);
}

/* The cell of level `to` that holds finest voxel x, descending from node idx at level l (an
 * ancestor of it); VX_RS_NONE where there is none (no child, a pruned leaf). Level D: a voxel. */
static uint32_t descend(const vx_octree *t, uint32_t idx, uint32_t l, uint32_t to,
                        const uint32_t x[3]) {
  const uint32_t D = t->depth;
  for (; l < to; l++) {
    const vx_node *nd = &t->nodes[idx];
    const uint32_t mask = vx_node_mask(nd->info), sh = D - 1u - l;
    const uint32_t slot = (x[0] >> sh & 1u) | (x[1] >> sh & 1u) << 1 | (x[2] >> sh & 1u) << 2;
    if (!(mask >> slot & 1u)) return VX_RS_NONE;
    idx = vx_child_index(nd->child, mask, slot);
  }
  return idx;
}

/* Finest voxel x (int64 coordinates) inside the root box: 1, and x as uint32 in u. */
static int in_box(const vx_octree *t, const int64_t x[3], uint32_t u[3]) {
  for (int i = 0; i < 3; i++) {
    if (x[i] < 0 || x[i] >= ((int64_t)1 << t->depth)) return 0;
    u[i] = (uint32_t)x[i];
  }
  return 1;
}

/* The index of the voxel at minimum corner x, or VX_RS_NONE. */
static uint32_t voxel_at(const vx_octree *t, const int64_t x[3]) {
  uint32_t u[3];
  return in_box(t, x, u) ? descend(t, 0u, 0u, t->depth, u) : VX_RS_NONE;
}

/* The closure: a negative corner of a re-signed voxel lies outside (all its corners did), so
 * every other voxel storing a negative value there was re-signed too; this reaches the voxels of
 * a thin part whose negative corners are shared only with other re-signed voxels, from one that
 * borders an ordinary voxel. One thread: the voxels found are few. */
static void closure(rs_job *j) {
  const vx_octree *t = j->t;
  _Atomic uint32_t *bits = j->bits;
  for (size_t k = 0; k < j->nfound && !j->nomem; k++) {
    const rs_found f = j->found[k];
    const int8_t *cv = t->voxels[f.idx].c;
    for (uint32_t c = 0; c < 8; c++) {
      if (cv[c] >= 0) continue;
      for (uint32_t o = 0; o < 8; o++) {
        if (o == c) continue;
        const int64_t w[3] = {(int64_t)f.x[0] + (c & 1u) - (o & 1u),
                              (int64_t)f.x[1] + (c >> 1 & 1u) - (o >> 1 & 1u),
                              (int64_t)f.x[2] + (c >> 2 & 1u) - (o >> 2 & 1u)};
        const uint32_t wi = voxel_at(t, w);
        if (wi == VX_RS_NONE || t->voxels[wi].c[o] >= 0 ||
            (atomic_load(&bits[wi >> 5]) >> (wi & 31u) & 1u))
          continue;
        atomic_fetch_or(&bits[wi >> 5], 1u << (wi & 31u));
        const uint32_t x[3] = {(uint32_t)w[0], (uint32_t)w[1], (uint32_t)w[2]};
        record(j, x, wi);
      }
    }
  }
}

vx_status vx_octree_resigned(const vx_octree *t, int threads, uint32_t **bits, vx_error *err) {
  *bits = NULL;
  if (!t->voxels || t->voxel_count == 0 || t->depth < 1u || t->levels_loaded <= t->depth)
    return VX_OK;
  const uint32_t D = t->depth;
  const uint32_t top = D < 3u ? 0u : (D - 3u < VX_RS_TOP ? D - 3u : VX_RS_TOP);
  const size_t words = (size_t)((t->voxel_count + 31u) / 32u);
  rs_task *tasks = (rs_task *)vx_malloc(((size_t)1 << (3u * top)) * sizeof *tasks);
  _Atomic uint32_t *b = (_Atomic uint32_t *)vx_calloc(words, sizeof(uint32_t));
  if (!tasks || !b) {
    vx_free(tasks);
    vx_free((void *)b);
    return vx_error_set(err, VX_ERR_NOMEM, "out of memory for the re-signed voxels (%llu)",
                        (unsigned long long)t->voxel_count);
  }
  rs_job j;
  uint32_t root[27];
  for (uint32_t k = 0; k < 27; k++) root[k] = VX_RS_NONE;
  root[13] = 0u;
  const uint32_t zero[3] = {0, 0, 0};
  j.t = t;
  j.tasks = tasks;
  j.top = top;
  atomic_init(&j.next, 0u);
  j.bits = b;
  atomic_flag_clear(&j.lock);
  j.found = NULL;
  j.nfound = j.cap = 0;
  j.nomem = 0;
  if (D < 3u) { /* the root's bricks (itself at D 1, its children at D 2) around a node of level
                   D - 3 at the origin */
    uint32_t bricks[VX_RS_BRICKS];
    for (uint32_t k = 0; k < VX_RS_BRICKS; k++) bricks[k] = VX_RS_NONE;
    if (D == 1u) bricks[1u + VX_RS_NB * (1u + VX_RS_NB)] = 0u;
    for (uint32_t s = 0; D == 2u && s < 8; s++)
      bricks[(1u + (s & 1u)) + VX_RS_NB * ((1u + (s >> 1 & 1u)) + VX_RS_NB * (1u + (s >> 2)))] =
          child_of(t, 0u, s);
    j.ntasks = 0;
    block(&j, bricks, zero);
  } else {
    j.ntasks = 0; /* the nodes of level `top`, in index order (8^top at most) */
    walk(t, 0u, top, root, zero, visit_task, &j);
    vx_parallel(vx_thread_count(threads, 1024), rs_worker, &j);
  }
  vx_free(tasks);
  closure(&j);
  vx_free(j.found);
  if (j.nomem) {
    vx_free((void *)b);
    return vx_error_set(err, VX_ERR_NOMEM, "out of memory for the re-signed voxels");
  }
  *bits = (uint32_t *)b;
  return VX_OK;
}
