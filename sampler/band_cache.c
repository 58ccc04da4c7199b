/* SPDX-License-Identifier: Apache-2.0 */
/* band_cache.c - builds the band cache (sampler/band_cache.h): the sampler's field stored around the
 * surface.
 *
 * 1. A brick with voxels is the subtree of a node three levels above the voxels: the tree is
 *    walked depth first to those nodes, each creating its brick in a hash table of brick keys
 *    (on one thread); then, on the threads, each brick's voxels mark their cells and, unless
 *    re-signed, write their corners into its grid. A grid point written twice with different
 *    values (which the converter does not do) is marked bad: no cell with that corner is cached.
 * 2. Each brick with voxels finds which of its 26 neighbours that lie within K = min(ceil(band),
 *    VX_BC_MAX_REACH) cells of its voxels' bounding box (and inside the root box) are missing
 *    (on the threads); they are added in brick order (their keys on one thread, zeroed on all).
 * 3. Per brick (band_cache_fill.h): the empty cells within K cells of a voxel, the grid points
 *    they have as corners that no voxel gave, and the points where they are checked; the
 *    sampler (without the cache, the tree's transform replaced by the identity, so that grid
 *    points go in exactly and values in voxels come out) runs at those points in batches of
 *    whole bricks, the values quantized into the bricks and the checks compared with the
 *    corners; then which cells answer. On the CPU's threads here, or on a GPU sampler's device
 *    (band_cache_gpu.cu), which keeps the result. A brick is written only by its own step;
 *    what it reads of its neighbours (which cells are voxels) was all written in step 1.
 * The result does not depend on the thread count: every value is a voxel's or the rule's at one
 * grid point.
 */
#include "sampler/sampler.h"
#include "sampler/band_cache_fill.h"
#include "sys/alloc.h"
#include "sys/system.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>

#define VX_BC_BATCH ((uint64_t)1 << 24) /* grid points evaluated at a time (CPU) */
/* bytes a brick takes while it is built: the brick and what the steps keep of it */
#define VX_BC_BUILD_BYTES (sizeof(vx_bc_brick) + sizeof(vx_bc_in) + sizeof(vx_bc_work))

typedef struct bc_build {
  const vx_sample_tree *s; /* the tree, without a cache */
  vx_sample_tree grid;     /* the same with the identity transform: grid points in, voxels out */
  uint32_t reach;          /* K */
  uint64_t *keys;
  uint32_t *values;
  uint64_t cap;
  vx_bc_brick *bricks;
  vx_bc_in *in;     /* per brick: what steps 1 and 2 leave */
  vx_bc_work *work; /* per brick: step 3's (on the CPU) */
  uint64_t count, bcap;
  int nomem;
  uint32_t root_level; /* step 1: the level of the bricks' nodes */
  uint64_t limit; /* bytes the bricks may take (with their build state) */
  vx_bc_job job;  /* step 3 */
  /* a phase runs over bricks [lo, hi) on the threads */
  int phase;
  uint64_t lo, hi;
  float *p;    /* a batch's grid points (xyz) */
  float *v;    /* the rule's values there, voxels */
  uint8_t *fl; /* its flags */
  atomic_uint_fast64_t next; /* the next brick */
} bc_build;

/* Room for n keys in the hash table (at most half full: rehashes every key when it grows) and for
 * m bricks in the arrays: 0, -1 without memory, -2 over the limit. */
static int bc_reserve(bc_build *b, uint64_t n, uint64_t m) {
  if (2u * n > b->cap) {
    uint64_t cap = b->cap ? b->cap : 1024u;
    while (cap < 2u * n) cap *= 2u;
    uint64_t *keys = (uint64_t *)vx_calloc((size_t)cap, sizeof *keys);
    uint32_t *values = (uint32_t *)vx_malloc((size_t)cap * sizeof *values);
    if (!keys || !values) {
      vx_free(keys);
      vx_free(values);
      return -1;
    }
    for (uint64_t i = 0; i < b->cap; i++) {
      if (!b->keys[i]) continue;
      const uint64_t j = vx_bc_probe(keys, cap - 1u, b->keys[i]);
      keys[j] = b->keys[i];
      values[j] = b->values[i];
    }
    vx_free(b->keys);
    vx_free(b->values);
    b->keys = keys;
    b->values = values;
    b->cap = cap;
  }
  if (m > b->bcap) {
    if (m > 0xffffffffu || m * VX_BC_BUILD_BYTES > b->limit) return -2;
    vx_bc_brick *nb = (vx_bc_brick *)vx_realloc(b->bricks, (size_t)m * sizeof *nb);
    if (nb) b->bricks = nb;
    vx_bc_in *ni = (vx_bc_in *)vx_realloc(b->in, (size_t)m * sizeof *ni);
    if (ni) b->in = ni;
    if (!nb || !ni) return -1;
    b->bcap = m;
  }
  return 0;
}

/* The index of the brick with key k, made when missing (only its key set: the threads zero the
 * rest, bc_phase); -1 without memory, -2 over the limit. */
static int64_t bc_brick(bc_build *b, uint64_t k) {
  const uint64_t grow = b->count < b->bcap ? 0u : (b->bcap ? 2u * b->bcap : 64u);
  const int r = bc_reserve(b, b->count + 1u, grow);
  if (r) return r;
  const uint64_t j = vx_bc_probe(b->keys, b->cap - 1u, k + 1u);
  if (b->keys[j]) return (int64_t)b->values[j];
  b->in[b->count].key = k;
  b->keys[j] = k + 1u;
  b->values[j] = (uint32_t)b->count;
  return (int64_t)b->count++;
}

/* Is there a brick with key k? (steps 2 and 3: the table no longer changes) */
static int bc_has(const bc_build *b, uint64_t k) {
  return b->keys[vx_bc_probe(b->keys, b->cap - 1u, k + 1u)] != 0u;
}

/* Step 1, first the bricks: a brick with voxels is the subtree of a node of level depth - 3 (the
 * root in shallower trees). Below node idx (level l, minimum corner m), each such node gets its
 * brick, in depth-first order (serial: the hash table grows). */
static void bc_roots(bc_build *b, uint32_t idx, uint32_t l, const uint32_t m[3]) {
  if (l == b->root_level) {
    const int64_t bi = bc_brick(b, vx_bc_key(m));
    if (bi < 0) b->nomem = (int)-bi;
    else b->in[bi].node = idx;
    return;
  }
  const vx_node *nd = &b->s->nodes[idx];
  const uint32_t mask = vx_node_mask(nd->info), h = 1u << (b->s->depth - l - 1u);
  for (uint32_t slot = 0; slot < 8u && !b->nomem; slot++) {
    if (!(mask >> slot & 1u)) continue;
    uint32_t cm[3];
    for (int i = 0; i < 3; i++) cm[i] = m[i] + (slot >> i & 1u) * h;
    bc_roots(b, vx_child_index(nd->child, mask, slot), l + 1u, cm);
  }
}

/* How many nodes of level lb lie below node idx (level l). */
static uint64_t bc_count_roots(const vx_sample_tree *s, uint32_t idx, uint32_t l, uint32_t lb) {
  if (l == lb) return 1u;
  const vx_node *nd = &s->nodes[idx];
  const uint32_t mask = vx_node_mask(nd->info);
  uint64_t n = 0;
  for (uint32_t slot = 0; slot < 8u; slot++)
    if (mask >> slot & 1u)
      n += bc_count_roots(s, vx_child_index(nd->child, mask, slot), l + 1u, lb);
  return n;
}

/* ... then the voxels of brick bi below node idx (level l, minimum corner m), on the threads:
 * each marks its cell and, unless re-signed, writes its corners into the brick's grid. */
static void bc_voxels(const bc_build *b, uint64_t bi, uint32_t idx, uint32_t l,
                      const uint32_t m[3]) {
  const vx_sample_tree *s = b->s;
  const vx_node *nd = &s->nodes[idx];
  const uint32_t mask = vx_node_mask(nd->info), h = 1u << (s->depth - l - 1u);
  vx_bc_brick *br = &b->bricks[bi];
  vx_bc_in *st = &b->in[bi];
  for (uint32_t slot = 0; slot < 8u; slot++) {
    if (!(mask >> slot & 1u)) continue;
    const uint32_t ci = vx_child_index(nd->child, mask, slot);
    uint32_t cm[3];
    for (int i = 0; i < 3; i++) cm[i] = m[i] + (slot >> i & 1u) * h;
    if (l + 1u < s->depth) {
      bc_voxels(b, bi, ci, l + 1u, cm);
      continue;
    }
    const uint32_t k = vx_bc_cell(cm);
    vx_bc_set(st->occ, k);
    if (s->resigned && (s->resigned[ci >> 5] >> (ci & 31u) & 1u)) continue; /* not cached */
    vx_bc_set(br->voxel, k);
    const vx_voxel v = s->voxels[ci];
    for (uint32_t i = 0; i < 8u; i++) {
      const uint32_t g = vx_bc_corner_point(k, i);
      if (vx_bc_bit(st->set, g) && br->grid[g] != v.c[i]) vx_bc_set(st->bad, g);
      vx_bc_set(st->set, g);
      br->grid[g] = v.c[i];
    }
  }
}

/* Step 2 for a brick with voxels: which of its 27 neighbours (bit n: offsets n % 3 - 1,
 * n / 3 % 3 - 1, n / 9 - 1) inside the root box lie within K cells of its voxels' bounding box. */
static uint32_t bc_needed(const bc_build *b, uint64_t key, const uint64_t occ[VX_BC_WORDS]) {
  uint32_t lo[3] = {VX_BC_SIDE, VX_BC_SIDE, VX_BC_SIDE}, hi[3] = {0, 0, 0};
  VX_BC_EACH_CELL(occ, k) {
    for (int i = 0; i < 3; i++) {
      const uint32_t x = k >> (VX_BC_SHIFT * (uint32_t)i) & (VX_BC_SIDE - 1u);
      lo[i] = x < lo[i] ? x : lo[i];
      hi[i] = x > hi[i] ? x : hi[i];
    }
  }
  const int64_t bricks = (int64_t)1 << (b->s->depth > VX_BC_SHIFT ? b->s->depth - VX_BC_SHIFT : 0);
  int64_t c[3];
  vx_bc_coords(key, c);
  uint32_t out = 0;
  for (int n = 0; n < 27; n++) {
    int need = n != 13; /* not the brick itself */
    for (int i = 0, w = 1; i < 3; i++, w *= 3) {
      const int d = n / w % 3 - 1;
      const int64_t q = c[i] + d;
      need &= q >= 0 && q < bricks;
      if (d < 0) need &= lo[i] < b->reach;
      if (d > 0) need &= hi[i] + b->reach >= VX_BC_SIDE;
    }
    out |= (uint32_t)need << n;
  }
  return out;
}

/* The key of neighbour n (as bc_needed) of the brick with key k. */
static uint64_t bc_neighbour_key(uint64_t k, int n) {
  int64_t c[3];
  vx_bc_coords(k, c);
  for (int i = 0, w = 1; i < 3; i++, w *= 3) c[i] += n / w % 3 - 1;
  return vx_bc_key_of(c);
}

/* The phases run on the threads for brick bi: steps 1 and 2's, then step 3's
 * (band_cache_fill.h). */
enum { BC_VOXELS, BC_MISSING, BC_ZERO, BC_NEED, BC_GATHER, BC_SCATTER, BC_FINISH };

/* Brick bi zeroed, but for its key and node. */
static void bc_zero(const bc_build *b, uint64_t bi) {
  vx_bc_in *st = &b->in[bi];
  const uint64_t key = st->key;
  const uint32_t node = st->node;
  memset(st, 0, sizeof *st);
  memset(&b->bricks[bi], 0, sizeof b->bricks[bi]);
  st->key = key;
  st->node = node;
}

static void bc_phase(const bc_build *b, uint64_t bi) {
  vx_bc_in *st = &b->in[bi];
  switch (b->phase) {
  case BC_VOXELS: {
    bc_zero(b, bi);
    int64_t c[3];
    vx_bc_coords(st->key, c);
    const uint32_t m[3] = {(uint32_t)c[0] * VX_BC_SIDE, (uint32_t)c[1] * VX_BC_SIDE,
                           (uint32_t)c[2] * VX_BC_SIDE};
    bc_voxels(b, bi, st->node, b->root_level, m);
    break;
  }
  case BC_ZERO: bc_zero(b, bi); break;
  case BC_MISSING: {
    const uint32_t need = bc_needed(b, st->key, st->occ);
    for (int n = 0; n < 27; n++)
      if (need >> n & 1u && !bc_has(b, bc_neighbour_key(st->key, n))) st->missing |= 1u << n;
    break;
  }
  case BC_NEED: vx_bc_need(&b->job, bi); break;
  case BC_GATHER: vx_bc_gather(&b->job, bi, b->work[bi].at, b->p); break;
  case BC_SCATTER: vx_bc_scatter(&b->job, bi, b->work[bi].at, b->v, b->fl); break;
  default: vx_bc_finish(&b->job, bi); break;
  }
}

static void *bc_worker(void *arg) {
  bc_build *b = (bc_build *)arg;
  for (;;) {
    const uint64_t i = b->lo + atomic_fetch_add(&b->next, 1u);
    if (i >= b->hi) break;
    bc_phase(b, i);
  }
  return NULL;
}

static void bc_run(bc_build *b, int threads, int phase, uint64_t lo, uint64_t hi) {
  b->phase = phase;
  b->lo = lo;
  b->hi = hi;
  atomic_init(&b->next, 0);
  const uint64_t n = hi - lo;
  if (n) vx_parallel(vx_thread_count(threads, (int)(n < 1024 ? n : 1024)), bc_worker, b);
}

/* Step 3 on the CPU: the cells to cache, their corners and checks evaluated by the sampler's
 * loop on the threads in batches of at most VX_BC_BATCH points (bricks whole), then which cells
 * answer. */
static vx_status bc_fill(bc_build *b, int threads, vx_error *err) {
  b->work = (vx_bc_work *)vx_calloc((size_t)b->count, sizeof *b->work);
  if (!b->work)
    return vx_error_set(err, VX_ERR_NOMEM, "no memory for the band cache's %llu bricks",
                        (unsigned long long)b->count);
  b->job.work = b->work;
  bc_run(b, threads, BC_NEED, 0, b->count);
  uint64_t total = 0, most = 0;
  for (uint64_t i = 0; i < b->count; i++) {
    const uint64_t k = b->work[i].points;
    total += k;
    most = k > most ? k : most;
  }
  const uint64_t cap = total < VX_BC_BATCH ? total : (VX_BC_BATCH > most ? VX_BC_BATCH : most);
  b->p = (float *)vx_malloc((size_t)(cap ? cap : 1) * 3 * sizeof(float));
  b->v = (float *)vx_malloc((size_t)(cap ? cap : 1) * sizeof(float));
  b->fl = (uint8_t *)vx_malloc((size_t)(cap ? cap : 1));
  vx_status st = VX_OK;
  if (!b->p || !b->v || !b->fl)
    st = vx_error_set(err, VX_ERR_NOMEM, "no memory for the band cache's %llu grid points",
                      (unsigned long long)cap);
  for (uint64_t lo = 0; lo < b->count && st == VX_OK;) {
    uint64_t hi = lo, m = 0;
    for (; hi < b->count; hi++) {
      const uint64_t k = b->work[hi].points;
      if (m + k > cap) break;
      b->work[hi].at = m;
      m += k;
    }
    bc_run(b, threads, BC_GATHER, lo, hi);
    if (m) vx_sample_cpu(&b->grid, b->p, m, b->v, NULL, b->fl, threads, NULL);
    bc_run(b, threads, BC_SCATTER, lo, hi);
    lo = hi;
  }
  if (st == VX_OK) bc_run(b, threads, BC_FINISH, 0, b->count);
  vx_free(b->p);
  vx_free(b->v);
  vx_free(b->fl);
  vx_free(b->work);
  b->work = NULL;
  return st;
}

void vx_band_cache_free(vx_band_cache *c) {
  if (!c) return;
  vx_free((void *)c->keys);
  vx_free((void *)c->values);
  vx_free((void *)c->bricks);
  vx_free(c);
}

uint64_t vx_band_cache_bytes(const vx_band_cache *c) {
  if (!c) return 0;
  return (c->mask + 1u) * (sizeof *c->keys + sizeof *c->values) +
         c->brick_count * sizeof *c->bricks + sizeof *c;
}

vx_status vx_band_cache_build(const vx_sample_tree *tree, int threads, vx_band_cache **out,
                              vx_error *err) {
  return vx_band_cache_build_on(tree, threads, NULL, out, err);
}

static void bc_free(bc_build *b) {
  vx_free(b->keys);
  vx_free(b->values);
  vx_free(b->bricks);
  vx_free(b->in);
}

/* Steps 1 and 2: the bricks, made in one order whatever the thread count (the hash table is
 * filled on one thread, the rest on all). */
static vx_status bc_bricks(bc_build *b, int threads, vx_error *err) {
  const vx_sample_tree *s = b->s;
  const uint32_t zero[3] = {0, 0, 0};
  b->root_level = s->depth > VX_BC_SHIFT ? s->depth - VX_BC_SHIFT : 0u;
  const uint64_t roots = bc_count_roots(s, 0u, 0u, b->root_level);
  b->nomem = -bc_reserve(b, roots, roots);
  if (!b->nomem) bc_roots(b, 0u, 0u, zero);
  const uint64_t with_voxels = b->count;
  if (!b->nomem) bc_run(b, threads, BC_VOXELS, 0, with_voxels);
  if (!b->nomem) bc_run(b, threads, BC_MISSING, 0, with_voxels);
  uint64_t most = with_voxels; /* the table's room for the neighbours */
  for (uint64_t i = 0; i < with_voxels && !b->nomem; i++)
    most += (uint64_t)__builtin_popcount(b->in[i].missing);
  /* the bricks' room for all of them unless that is over the limit (then it grows as needed:
   * neighbours are shared, most is an upper bound); the pages untouched stay unused */
  if (!b->nomem)
    b->nomem = -bc_reserve(b, most, most * VX_BC_BUILD_BYTES > b->limit ? b->count : most);
  for (uint64_t i = 0; i < with_voxels && !b->nomem; i++) {
    const uint32_t missing = b->in[i].missing;
    const uint64_t key = b->in[i].key;
    for (int n = 0; n < 27 && !b->nomem; n++) {
      if (!(missing >> n & 1u)) continue;
      const int64_t bi = bc_brick(b, bc_neighbour_key(key, n));
      if (bi < 0) b->nomem = (int)-bi;
    }
  }
  if (!b->nomem) bc_run(b, threads, BC_ZERO, with_voxels, b->count);
  if (b->nomem == 2)
    return vx_error_set(err, VX_ERR_LIMIT,
                        "the band cache of this tree would take more than %.1f GiB (80%% of "
                        "memory): sample without it", (double)b->limit / 1073741824.0);
  if (b->nomem)
    return vx_error_set(err, VX_ERR_NOMEM, "no memory for the band cache (%llu bricks of %u B)",
                        (unsigned long long)b->count, (unsigned)sizeof(vx_bc_brick));
  return VX_OK;
}

vx_status vx_band_cache_build_on(const vx_sample_tree *tree, int threads, vx_gpu_sampler *gpu,
                                 vx_band_cache **out, vx_error *err) {
  *out = NULL;
  vx_sample_tree s = *tree;
  s.cache = NULL;
  if (s.depth == 0 || s.levels < s.depth + 1u || !s.voxels || s.cut < s.depth) return VX_OK;
  bc_build b;
  memset(&b, 0, sizeof b);
  b.s = &s;
  b.grid = s;
  b.grid.origin[0] = b.grid.origin[1] = b.grid.origin[2] = 0.0f;
  b.grid.scale = b.grid.inv_scale = 1.0f;
  b.limit = vx_default_mem_limit();
  const float k = ceilf(s.band);
  b.reach = k < 1.0f ? 1u : (k > (float)VX_BC_MAX_REACH ? VX_BC_MAX_REACH : (uint32_t)k);
  vx_status st = bc_bricks(&b, threads, err);
  vx_band_cache *c = NULL;
  if (st == VX_OK && b.count) {
    b.job.keys = b.keys;
    b.job.values = b.values;
    b.job.mask = b.cap - 1u;
    b.job.in = b.in;
    b.job.bricks = b.bricks;
    b.job.depth = s.depth;
    b.job.reach = b.reach;
    b.job.band = s.band;
    /* on a GPU the cache is made and kept on its device: the host keeps its sizes */
    st = gpu ? vx_gpu_band_cache_fill(gpu, &b.grid, &b.job, b.count, err)
             : bc_fill(&b, threads, err);
    c = st == VX_OK ? (vx_band_cache *)vx_calloc(1, sizeof *c) : NULL;
    if (st == VX_OK && !c) st = vx_error_set(err, VX_ERR_NOMEM, "no memory for the band cache");
  }
  if (!c) {
    bc_free(&b);
    return st;
  }
  vx_free(b.in);
  c->mask = b.cap - 1u;
  c->brick_count = b.count;
  if (gpu) {
    vx_free(b.keys);
    vx_free(b.values);
    vx_free(b.bricks);
  } else {
    c->keys = b.keys;
    c->values = b.values;
    c->bricks = b.bricks;
  }
  *out = c;
  return VX_OK;
}
