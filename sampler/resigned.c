/* SPDX-License-Identifier: Apache-2.0 */
/* resigned.c - the voxels that the thin-feature rule re-signed (resigned.h).
 *
 * The tree is walked depth first, in subtrees of level min(5, D - 1) handed to the threads. At
 * each node of level D - 1 (a brick of 2^3 voxels) the 26 bricks around it are found by descending
 * from the deepest ancestor each shares with it (the walk keeps the path), so that every voxel
 * around a corner of the brick's voxels is a child of one of 27 known nodes. A voxel is flagged
 * when one of its negative corners is stored larger by a voxel around it. Then the closure
 * (below) adds the voxels that only share corners with re-signed ones.
 */
#include "sampler/resigned.h"
#include "sys/alloc.h"
#include "svo/node.h"
#include "sys/system.h"

#include <stdatomic.h>
#include <string.h>

#define VX_RS_NONE 0xffffffffu
#define VX_RS_TOP 5u /* level of the subtrees handed out (up to 8^5 tasks: the threads stay busy) */

typedef struct rs_task {
  uint32_t path[VX_RS_TOP + 1];
  uint32_t min[3];
} rs_task;

/* A voxel found re-signed: its minimum corner and index. */
typedef struct rs_found {
  uint32_t x[3];
  uint32_t idx;
} rs_found;

typedef struct rs_job {
  const vx_octree *t;
  const rs_task *tasks;
  uint32_t ntasks, top;
  atomic_uint next;
  _Atomic uint32_t *bits;
  /* where[s][c][o]: the voxel whose corner o is corner c of the brick's voxel in slot s, as its
   * brick (k: 0 .. 26, offset (k % 3, k / 3 % 3, k / 9) - 1 in bricks) * 8 + its slot */
  uint8_t where[8][8][8];
  /* the voxels found, for the closure (few: a spin lock is enough) */
  atomic_flag lock;
  rs_found *found;
  size_t nfound, cap;
  int nomem;
} rs_job;

static void fill_where(rs_job *j) {
  for (uint32_t s = 0; s < 8; s++)
    for (uint32_t c = 0; c < 8; c++)
      for (uint32_t o = 0; o < 8; o++) {
        uint32_t k = 0, slot = 0;
        for (uint32_t i = 0, w = 1; i < 3; i++, w *= 3) {
          /* v - 2: the voxel's coordinate relative to the brick's minimum corner, -1 .. 2 (the
           * grid point s + c less o); its brick offset v / 2 - 1, its slot bit the parity */
          const uint32_t v = (s >> i & 1u) + (c >> i & 1u) + 2u - (o >> i & 1u);
          k += v / 2u * w;
          slot |= (v & 1u) << i;
        }
        j->where[s][c][o] = (uint8_t)(k << 3 | slot);
      }
}

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

static uint32_t high_bit(uint32_t x) {
  uint32_t b = 0;
  while (x >>= 1) b++;
  return b;
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

/* The node of level D - 1 whose brick starts at b (even coordinates), found from the path of the
 * brick at m, from the deepest ancestor the two share; VX_RS_NONE when there is none. */
static uint32_t brick_at(const vx_octree *t, const uint32_t *path, const uint32_t m[3],
                         const int64_t b[3]) {
  const uint32_t D = t->depth;
  uint32_t u[3];
  if (!in_box(t, b, u)) return VX_RS_NONE;
  const uint32_t diff = (u[0] ^ m[0]) | (u[1] ^ m[1]) | (u[2] ^ m[2]);
  const uint32_t l = diff ? D - 1u - high_bit(diff) : D - 1u;
  return descend(t, path[l], l, D - 1u, u);
}

/* The voxels of the brick at node `idx` (minimum corner m), path[0 .. D - 1] its ancestors and
 * itself. */
static void brick(rs_job *j, uint32_t idx, const uint32_t m[3], const uint32_t *path) {
  const vx_octree *t = j->t;
  const vx_node *nd = &t->nodes[idx];
  const uint32_t mask = vx_node_mask(nd->info);
  /* bricks at m + 2 (dx, dy, dz), index (dx+1) + 3 (dy+1) + 9 (dz+1), found when first needed */
  uint32_t around[27];
  uint32_t known = 1u << 13;
  around[13] = idx;
  for (uint32_t s = 0; s < 8; s++) {
    if (!(mask >> s & 1u)) continue;
    const uint32_t vi = vx_child_index(nd->child, mask, s);
    const int8_t *cv = t->voxels[vi].c;
    int resigned = 0;
    for (uint32_t c = 0; c < 8 && !resigned; c++) {
      if (cv[c] >= 0) continue;
      const uint8_t *where = j->where[s][c];
      for (uint32_t o = 0; o < 8 && !resigned; o++) {
        if (o == c) continue; /* the voxel itself */
        const uint32_t k = where[o] >> 3, slot = where[o] & 7u;
        if (!(known >> k & 1u)) {
          const int64_t at[3] = {(int64_t)m[0] + 2 * ((int64_t)(k % 3u) - 1),
                                 (int64_t)m[1] + 2 * ((int64_t)(k / 3u % 3u) - 1),
                                 (int64_t)m[2] + 2 * ((int64_t)(k / 9u) - 1)};
          around[k] = brick_at(t, path, m, at);
          known |= 1u << k;
        }
        const uint32_t b = around[k];
        if (b == VX_RS_NONE) continue;
        const vx_node *nb = &t->nodes[b];
        const uint32_t bm = vx_node_mask(nb->info);
        if (!(bm >> slot & 1u)) continue;
        const uint32_t wi = vx_child_index(nb->child, bm, slot);
        resigned = t->voxels[wi].c[o] > cv[c];
      }
    }
    if (resigned) {
      const uint32_t x[3] = {m[0] + (s & 1u), m[1] + (s >> 1 & 1u), m[2] + (s >> 2 & 1u)};
      atomic_fetch_or(&j->bits[vi >> 5], 1u << (vi & 31u));
      record(j, x, vi);
    }
  }
}

/* The subtree of node idx at level l (minimum corner m); path[0 .. l - 1] set. */
static void subtree(rs_job *j, uint32_t l, uint32_t idx, const uint32_t m[3], uint32_t *path) {
  const vx_octree *t = j->t;
  const uint32_t D = t->depth;
  path[l] = idx;
  if (l + 1u == D) {
    brick(j, idx, m, path);
    return;
  }
  const vx_node *nd = &t->nodes[idx];
  const uint32_t mask = vx_node_mask(nd->info), h = 1u << (D - l - 1u);
  for (uint32_t s = 0; s < 8; s++) {
    if (!(mask >> s & 1u)) continue;
    const uint32_t c[3] = {m[0] + (s & 1u) * h, m[1] + (s >> 1 & 1u) * h,
                           m[2] + (s >> 2 & 1u) * h};
    subtree(j, l + 1u, vx_child_index(nd->child, mask, s), c, path);
  }
}

static void *rs_worker(void *arg) {
  rs_job *j = (rs_job *)arg;
  uint32_t path[VX_MAX_DEPTH + 1];
  for (;;) {
    const uint32_t k = atomic_fetch_add(&j->next, 1u);
    if (k >= j->ntasks) break;
    memcpy(path, j->tasks[k].path, sizeof j->tasks[k].path);
    subtree(j, j->top, j->tasks[k].path[j->top], j->tasks[k].min, path);
  }
  return NULL;
}

/* The nodes of level `top` with their paths, in index order, into tasks (8^top at most). */
static uint32_t collect(const vx_octree *t, uint32_t top, uint32_t l, uint32_t idx,
                        const uint32_t m[3], uint32_t *path, rs_task *tasks, uint32_t n) {
  path[l] = idx;
  if (l == top) {
    memcpy(tasks[n].path, path, sizeof tasks[n].path);
    memcpy(tasks[n].min, m, sizeof tasks[n].min);
    return n + 1u;
  }
  const vx_node *nd = &t->nodes[idx];
  const uint32_t mask = vx_node_mask(nd->info), h = 1u << (t->depth - l - 1u);
  for (uint32_t s = 0; s < 8; s++) {
    if (!(mask >> s & 1u)) continue;
    const uint32_t c[3] = {m[0] + (s & 1u) * h, m[1] + (s >> 1 & 1u) * h,
                           m[2] + (s >> 2 & 1u) * h};
    n = collect(t, top, l + 1u, vx_child_index(nd->child, mask, s), c, path, tasks, n);
  }
  return n;
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
  const uint32_t top = t->depth - 1u < VX_RS_TOP ? t->depth - 1u : VX_RS_TOP;
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
  uint32_t path[VX_RS_TOP + 1] = {0};
  const uint32_t zero[3] = {0, 0, 0};
  j.t = t;
  j.tasks = tasks;
  j.top = top;
  j.ntasks = collect(t, top, 0u, 0u, zero, path, tasks, 0u);
  atomic_init(&j.next, 0u);
  j.bits = b;
  fill_where(&j);
  atomic_flag_clear(&j.lock);
  j.found = NULL;
  j.nfound = j.cap = 0;
  j.nomem = 0;
  vx_parallel(vx_thread_count(threads, 1024), rs_worker, &j);
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
