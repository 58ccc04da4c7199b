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
 *    (on the threads); they are added in brick order (on one thread).
 * 3. The bricks are handed to the threads. Each marks the empty cells within K cells (L-infinity)
 *    of a voxel: the voxels of its 27-brick neighbourhood in a window of (8 + 2K)^3 cells, one
 *    bit row per line, dilated by K along x (shifts), then y, then z (ORs of rows), and the grid
 *    points those cells have as corners that no voxel gave. The sampler (without the cache,
 *    the tree's transform replaced by the identity, so that grid points go in exactly and
 *    values in voxels come out) runs at those points in batches of whole bricks, on the CPU's
 *    threads or through an evaluator given (the GPU sampler), the values quantized into the
 *    bricks; then at the centres of those cells and just inside them from each corner a voxel
 *    gave. A cell is kept when its corners all have a sign and lie on one side, and give the
 *    rule's value at those points (bc_rough). A brick is
 *    written only by its thread; what it reads of its neighbours (which cells are voxels) was
 *    all written in step 1.
 * The result does not depend on the thread count: every value is a voxel's or the rule's at one
 * grid point.
 */
#include "sampler/sampler.h"
#include "sys/alloc.h"
#include "sys/system.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>

#define VX_BC_MAX_REACH 4u /* cells around a voxel; the window of 8 + 2K rows fits 16 bits */
#define VX_BC_BATCH ((uint64_t)1 << 24) /* grid points evaluated at a time */
#define VX_BC_CHECK_TOL 0.125f /* voxels: the corners' value against the rule's, where checked */
#define VX_BC_SIDE_STEP (1.0f / 64.0f) /* a voxel's corner, seen from the cell: this far inside */
#define VX_BC_POINTS (VX_BC_GRID * VX_BC_GRID * VX_BC_GRID)
#define VX_BC_PWORDS ((VX_BC_POINTS + 63u) / 64u)

/* What step 1 leaves per brick for step 3. */
typedef struct bc_state {
  uint64_t key;
  uint32_t node;    /* step 1: the node whose subtree the brick is (bricks with voxels) */
  uint32_t missing; /* step 2: its neighbours (bit n, as bc_needed) that step 1 did not make */
  uint64_t occ[VX_BC_WORDS];  /* the cells that are surface voxels, re-signed ones included */
  uint64_t set[VX_BC_PWORDS]; /* grid points a voxel gave */
  uint64_t bad[VX_BC_PWORDS]; /* ... with two different values */
  /* step 3 */
  uint64_t want[VX_BC_WORDS];    /* empty cells to cache */
  uint64_t need[VX_BC_PWORDS];   /* their corners that no voxel gave: the rule's */
  uint64_t nosign[VX_BC_PWORDS]; /* ... where it had no sign */
  uint64_t rough[VX_BC_WORDS];   /* empty cells whose centre the corners do not give */
  uint32_t points;               /* how many the rule gives (the bits of need and of want) */
  uint64_t at;                   /* where its points start in the batch */
} bc_state;

typedef struct bc_build {
  const vx_sample_tree *s; /* the tree, without a cache */
  vx_sample_tree grid;     /* the same with the identity transform: grid points in, voxels out */
  uint32_t reach;          /* K */
  uint64_t *keys;
  uint32_t *values;
  uint64_t cap;
  vx_bc_brick *bricks;
  bc_state *state; /* per brick */
  uint64_t count, bcap;
  int nomem;
  uint32_t root_level; /* step 1: the level of the bricks' nodes */
  uint64_t limit; /* bytes the bricks may take (with their build state) */
  /* step 3: a phase runs over bricks [lo, hi) on the threads */
  int phase;
  uint64_t lo, hi;
  float *p;    /* a batch's grid points (xyz) */
  float *v;    /* the rule's values there, voxels */
  uint8_t *fl; /* its flags */
  atomic_uint_fast64_t next; /* step 3: the next brick */
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
    if (m > 0xffffffffu || m * (sizeof(vx_bc_brick) + sizeof(bc_state)) > b->limit) return -2;
    vx_bc_brick *nb = (vx_bc_brick *)vx_realloc(b->bricks, (size_t)m * sizeof *nb);
    if (nb) b->bricks = nb;
    bc_state *ns = (bc_state *)vx_realloc(b->state, (size_t)m * sizeof *ns);
    if (ns) b->state = ns;
    if (!nb || !ns) return -1;
    b->bcap = m;
  }
  return 0;
}

/* The index of the brick with key k (created, zeroed, when missing); -1 without memory, -2 over
 * the limit. */
static int64_t bc_brick(bc_build *b, uint64_t k) {
  const uint64_t grow = b->count < b->bcap ? 0u : (b->bcap ? 2u * b->bcap : 64u);
  const int r = bc_reserve(b, b->count + 1u, grow);
  if (r) return r;
  const uint64_t j = vx_bc_probe(b->keys, b->cap - 1u, k + 1u);
  if (b->keys[j]) return (int64_t)b->values[j];
  memset(&b->bricks[b->count], 0, sizeof b->bricks[b->count]);
  memset(&b->state[b->count], 0, sizeof b->state[b->count]);
  b->state[b->count].key = k;
  b->keys[j] = k + 1u;
  b->values[j] = (uint32_t)b->count;
  return (int64_t)b->count++;
}

/* The state of the brick with key k, or NULL (step 3: the table no longer changes). */
static const bc_state *bc_lookup(const bc_build *b, uint64_t k) {
  const uint64_t j = vx_bc_probe(b->keys, b->cap - 1u, k + 1u);
  return b->keys[j] ? &b->state[b->values[j]] : NULL;
}

static int bc_bit(const uint64_t *w, uint32_t i) { return (int)(w[i >> 6] >> (i & 63u) & 1u); }
static void bc_set(uint64_t *w, uint32_t i) { w[i >> 6] |= (uint64_t)1u << (i & 63u); }

/* Grid point (x, y, z) of a brick. */
static uint32_t bc_point(uint32_t x, uint32_t y, uint32_t z) {
  return x + VX_BC_GRID * (y + VX_BC_GRID * z);
}

/* The grid point of corner i (as a voxel's) of cell k of a brick. */
static uint32_t bc_corner_point(uint32_t k, uint32_t i) {
  return bc_point((k & 7u) + (i & 1u), (k >> 3 & 7u) + (i >> 1 & 1u), (k >> 6) + (i >> 2));
}

/* The corners of cell k (bit i: corner i, bc_corner_point) that are points in w. */
static uint32_t bc_corners_in(const uint64_t *w, uint32_t k) {
  const uint32_t g = bc_corner_point(k, 0);
  uint32_t m = 0;
  for (uint32_t i = 0; i < 8u; i++)
    m |= (uint32_t)bc_bit(w, g + (i & 1u) + VX_BC_GRID * (i >> 1 & 1u) +
                                 VX_BC_GRID * VX_BC_GRID * (i >> 2)) << i;
  return m;
}

/* Visits the set bits of the 512-bit cell mask w in increasing order, as k. */
#define BC_EACH_CELL(w, k)                                                                        \
  for (uint32_t bc_w_ = 0; bc_w_ < VX_BC_WORDS; bc_w_++)                                        \
    for (uint64_t bc_x_ = (w)[bc_w_]; bc_x_; bc_x_ &= bc_x_ - 1u)                                \
      for (uint32_t k = bc_w_ * 64u + (uint32_t)__builtin_ctzll(bc_x_), bc_once_ = 1; bc_once_;  \
           bc_once_ = 0)

/* Step 1, first the bricks: a brick with voxels is the subtree of a node of level depth - 3 (the
 * root in shallower trees). Below node idx (level l, minimum corner m), each such node gets its
 * brick, in depth-first order (serial: the hash table grows). */
static void bc_roots(bc_build *b, uint32_t idx, uint32_t l, const uint32_t m[3]) {
  if (l == b->root_level) {
    const int64_t bi = bc_brick(b, vx_bc_key(m));
    if (bi < 0) b->nomem = (int)-bi;
    else b->state[bi].node = idx;
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
  bc_state *st = &b->state[bi];
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
    bc_set(st->occ, k);
    if (s->resigned && (s->resigned[ci >> 5] >> (ci & 31u) & 1u)) continue; /* not cached */
    bc_set(br->voxel, k);
    const vx_voxel v = s->voxels[ci];
    for (uint32_t i = 0; i < 8u; i++) {
      const uint32_t g = bc_corner_point(k, i);
      if (bc_bit(st->set, g) && br->grid[g] != v.c[i]) bc_set(st->bad, g);
      bc_set(st->set, g);
      br->grid[g] = v.c[i];
    }
  }
}

/* Brick coordinates of key k. */
static void bc_coords(uint64_t k, int64_t c[3]) {
  for (int i = 0; i < 3; i++) c[i] = (int64_t)(k >> (21 * i) & 0x1fffffu);
}

static uint64_t bc_key_of(const int64_t c[3]) {
  return (uint64_t)c[0] | (uint64_t)c[1] << 21 | (uint64_t)c[2] << 42;
}

/* Step 2 for a brick with voxels: which of its 27 neighbours (bit n: offsets n % 3 - 1,
 * n / 3 % 3 - 1, n / 9 - 1) inside the root box lie within K cells of its voxels' bounding box. */
static uint32_t bc_needed(const bc_build *b, uint64_t key, const uint64_t occ[VX_BC_WORDS]) {
  uint32_t lo[3] = {VX_BC_SIDE, VX_BC_SIDE, VX_BC_SIDE}, hi[3] = {0, 0, 0};
  for (uint32_t k = 0; k < VX_BC_CELLS; k++) {
    if (!bc_bit(occ, k)) continue;
    for (int i = 0; i < 3; i++) {
      const uint32_t x = k >> (VX_BC_SHIFT * (uint32_t)i) & (VX_BC_SIDE - 1u);
      lo[i] = x < lo[i] ? x : lo[i];
      hi[i] = x > hi[i] ? x : hi[i];
    }
  }
  const int64_t bricks = (int64_t)1 << (b->s->depth > VX_BC_SHIFT ? b->s->depth - VX_BC_SHIFT : 0);
  int64_t c[3];
  bc_coords(key, c);
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
  bc_coords(k, c);
  for (int i = 0, w = 1; i < 3; i++, w *= 3) c[i] += n / w % 3 - 1;
  return bc_key_of(c);
}

/* The rule's value v (voxels) at a grid point, quantized as a voxel corner. */
static int8_t bc_quantize(const vx_sample_tree *s, float v) {
  float r = roundf(v * (127.0f / s->band));
  r = r > 127.0f ? 127.0f : (r < -127.0f ? -127.0f : r);
  if (v < 0.0f && r == 0.0f) r = -1.0f; /* keep the side */
  return (int8_t)r;
}

/* Does the rule's value v (voxels, flags fl) at point u (in [0,1]^3) of cell k of brick br differ
 * from what the cache would answer there (sample_eval.h's vx_se_cached: the corners' trilinear
 * value, the band where it reaches the band) by more than VX_BC_CHECK_TOL, or in sign? The rule
 * is not smooth everywhere (where the winning cell changes, beside thin parts, where it turns far)
 * nor continuous at a voxel's faces (inside, the voxel's field; outside, the nearest cell's
 * extrapolation, which differs where the field's gradient is not of unit length): there the
 * corners do not stand for the cell, and the rule answers. Being far or not may differ (a value
 * within the tolerance of the band either way: on the bunny at 512^3, requiring the same left a
 * fifth of the cells to the rule). Corners not yet valid (bad, no sign) leave the cell out
 * anyway. */
static int bc_rough(const vx_sample_tree *s, const vx_bc_brick *br, uint32_t k, const float u[3],
                    float v, uint8_t fl) {
  if ((fl & (VX_SAMPLE_NO_SIGN | VX_SAMPLE_INVALID)) || v != v) return 1;
  const vx_voxel c = vx_bc_corners(br, k);
  float g[3];
  float f = vx_se_trilinear(&c, s->band, u, g);
  if (fabsf(f) > s->band * (1.0f - 0.5f / 127.0f)) f = f < 0.0f ? -s->band : s->band;
  if ((f < 0.0f) != (v < 0.0f)) return 1;
  return !(fabsf(f - v) <= VX_BC_CHECK_TOL);
}

/* Grid point g of brick c, in grid coordinates. */
static void bc_grid_point(const int64_t c[3], uint32_t g, float p[3]) {
  p[0] = (float)(c[0] * 8 + g % VX_BC_GRID);
  p[1] = (float)(c[1] * 8 + g / VX_BC_GRID % VX_BC_GRID);
  p[2] = (float)(c[2] * 8 + g / (VX_BC_GRID * VX_BC_GRID));
}

/* Step 3, the empty cells to cache: those within K cells of a voxel (want, a bit per cell). */
static void bc_want(const bc_build *b, const bc_state *st, const int64_t c[3],
                    uint64_t want[VX_BC_WORDS]) {
  const uint32_t K = b->reach, W = VX_BC_SIDE + 2u * K, R = 1u << b->s->depth;
  /* the voxels of the neighbourhood, window cell (x, y, z) = brick cell - K */
  uint32_t occ[16][16];
  memset(occ, 0, sizeof occ);
  for (int n = 0; n < 27; n++) {
    int64_t q[3];
    int d[3];
    for (int i = 0, w = 1; i < 3; i++, w *= 3) {
      d[i] = n / w % 3 - 1;
      q[i] = c[i] + d[i];
    }
    if (q[0] < 0 || q[1] < 0 || q[2] < 0) continue;
    const bc_state *nb = n == 13 ? st : bc_lookup(b, bc_key_of(q));
    if (!nb) continue;
    for (uint32_t z = 0; z < VX_BC_SIDE; z++)
      for (uint32_t y = 0; y < VX_BC_SIDE; y++) {
        const int64_t wz = (int64_t)z + 8 * d[2] + K, wy = (int64_t)y + 8 * d[1] + K;
        if (wz < 0 || wz >= (int64_t)W || wy < 0 || wy >= (int64_t)W) continue;
        const uint32_t row = (uint32_t)(nb->occ[z] >> (8u * y) & 0xffu);
        const int sh = 8 * d[0] + (int)K; /* window x of the row's x = 0 */
        occ[wz][wy] |= (sh >= 0 ? row << sh : row >> -sh) & ((1u << W) - 1u);
      }
  }
  /* dilate by K: x, then y, then z */
  for (uint32_t z = 0; z < W; z++)
    for (uint32_t y = 0; y < W; y++) {
      uint32_t r = occ[z][y], o = r;
      for (uint32_t k = 1; k <= K; k++) o |= r << k | r >> k;
      occ[z][y] = o;
    }
  uint32_t dy[16][VX_BC_SIDE];
  for (uint32_t z = 0; z < W; z++)
    for (uint32_t y = 0; y < VX_BC_SIDE; y++) {
      uint32_t o = 0;
      for (uint32_t k = 0; k <= 2u * K; k++) o |= occ[z][y + k];
      dy[z][y] = o;
    }
  for (uint32_t z = 0; z < VX_BC_SIDE; z++)
    for (uint32_t y = 0; y < VX_BC_SIDE; y++) {
      uint32_t o = 0;
      for (uint32_t k = 0; k <= 2u * K; k++) o |= dy[z + k][y];
      uint32_t row = (o >> K & 0xffu) & ~(uint32_t)(st->occ[z] >> (8u * y) & 0xffu);
      /* cells inside the root box only */
      const int64_t gx = c[0] * 8, gy = c[1] * 8 + y, gz = c[2] * 8 + z;
      if (gy >= (int64_t)R || gz >= (int64_t)R) row = 0;
      if (gx + 8 > (int64_t)R) row &= (1u << (R - (uint32_t)gx)) - 1u;
      want[z] |= (uint64_t)row << (8u * y);
    }
}

static uint32_t bc_count(const uint64_t *w, uint32_t words) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < words; i++) n += (uint32_t)__builtin_popcountll(w[i]);
  return n;
}

/* Where a cell is checked against the rule (u in [0,1]^3): i = 8, its centre, always; i < 8, just
 * inside its corner i (VX_BC_SIDE_STEP along each axis) when a voxel gave that corner (the rule
 * jumps at a voxel's faces). Checking the centres of the edges and faces a voxel has as well
 * kept no more points within the bound on the scans of tests/test_sample_agree.c. */
static void bc_check_u(uint32_t i, float u[3]) {
  for (uint32_t a = 0; a < 3u; a++)
    u[a] = i == 8u ? 0.5f : (i >> a & 1u ? 1.0f - VX_BC_SIDE_STEP : VX_BC_SIDE_STEP);
}

/* The points where cell k is checked: bit i as bc_check_u. */
static uint32_t bc_checks(const bc_state *st, uint32_t k) {
  return bc_corners_in(st->set, k) | 1u << 8;
}

/* The phases run on the threads for brick bi: steps 1 and 2's, then step 3's. */
enum { BC_VOXELS = 0, BC_MISSING = 1, BC_NEED = 2, BC_GATHER = 3, BC_SCATTER = 4, BC_FINISH = 5 };

static void bc_phase(const bc_build *b, uint64_t bi) {
  vx_bc_brick *br = &b->bricks[bi];
  bc_state *st = &b->state[bi];
  int64_t c[3];
  bc_coords(st->key, c);
  if (b->phase == BC_VOXELS) {
    const uint32_t m[3] = {(uint32_t)c[0] * VX_BC_SIDE, (uint32_t)c[1] * VX_BC_SIDE,
                           (uint32_t)c[2] * VX_BC_SIDE};
    bc_voxels(b, bi, st->node, b->root_level, m);
    return;
  }
  if (b->phase == BC_MISSING) { /* the table does not change in this phase */
    const uint32_t need = bc_needed(b, st->key, st->occ);
    for (int n = 0; n < 27; n++)
      if (need >> n & 1u && !bc_lookup(b, bc_neighbour_key(st->key, n))) st->missing |= 1u << n;
    return;
  }
  if (b->phase == BC_NEED) { /* the cells to cache and the corners the rule gives them */
    bc_want(b, st, c, st->want);
    uint32_t checks = 0;
    BC_EACH_CELL(st->want, k) {
      const uint32_t given = bc_corners_in(st->set, k);
      for (uint32_t i = 0; i < 8u; i++)
        if (!(given >> i & 1u)) bc_set(st->need, bc_corner_point(k, i));
      checks += (uint32_t)__builtin_popcount(bc_checks(st, k));
    }
    st->points = bc_count(st->need, VX_BC_PWORDS) + checks;
    return;
  }
  if (b->phase == BC_GATHER || b->phase == BC_SCATTER) {
    uint64_t j = st->at;
    for (uint32_t w = 0; w < VX_BC_PWORDS; w++)
      for (uint64_t x = st->need[w]; x; x &= x - 1u) {
        const uint32_t g = w * 64u + (uint32_t)__builtin_ctzll(x);
        if (b->phase == BC_GATHER)
          bc_grid_point(c, g, &b->p[3 * j]);
        else if (!(b->fl[j] & (VX_SAMPLE_NO_SIGN | VX_SAMPLE_INVALID)) && b->v[j] == b->v[j])
          br->grid[g] = bc_quantize(b->s, b->v[j]);
        else
          bc_set(st->nosign, g);
        j++;
      }
    /* then the points where the cells to cache are checked (their corners all scattered
     * above) */
    BC_EACH_CELL(st->want, k) {
      for (uint32_t m = bc_checks(st, k); m; m &= m - 1u) {
        float u[3];
        bc_check_u((uint32_t)__builtin_ctz(m), u);
        if (b->phase == BC_GATHER) {
          float *q = &b->p[3 * j];
          q[0] = (float)(c[0] * 8 + (k & 7u)) + u[0];
          q[1] = (float)(c[1] * 8 + (k >> 3 & 7u)) + u[1];
          q[2] = (float)(c[2] * 8 + (k >> 6)) + u[2];
        } else if (bc_rough(b->s, br, k, u, b->v[j], b->fl[j])) {
          bc_set(st->rough, k);
        }
        j++;
      }
    }
    return;
  }
  /* BC_FINISH: which cells answer */
  uint64_t voxel[VX_BC_WORDS];
  memcpy(voxel, br->voxel, sizeof voxel);
  BC_EACH_CELL(voxel, k) /* voxels that disagree: the tree's */
    if (bc_corners_in(st->bad, k)) br->voxel[k >> 6] &= ~((uint64_t)1u << (k & 63u));
  BC_EACH_CELL(st->want, k) {
    if (bc_bit(st->rough, k) || bc_corners_in(st->bad, k) || bc_corners_in(st->nosign, k))
      continue;
    const vx_voxel v = vx_bc_corners(br, k);
    int neg = 0;
    for (uint32_t i = 0; i < 8u; i++) neg += v.c[i] < 0;
    if (neg != 0 && neg != 8) continue; /* no surface crosses the cell: the rule's sides differ */
    bc_set(br->empty, k);
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

/* The CPU's evaluator: the sampler's loop on the threads. */
static vx_status bc_cpu_eval(void *ctx, const vx_sample_tree *s, const float *p, uint64_t n,
                             float *v, uint8_t *flags, vx_error *err) {
  (void)err;
  vx_sample_cpu(s, p, n, v, NULL, flags, *(const int *)ctx, NULL);
  return VX_OK;
}

/* Step 3: the cells to cache, their corners evaluated in batches of at most VX_BC_BATCH points
 * (bricks whole), then which cells answer. */
static vx_status bc_fill(bc_build *b, int threads, vx_band_cache_eval eval, void *ctx,
                         vx_error *err) {
  bc_run(b, threads, BC_NEED, 0, b->count);
  uint64_t total = 0, most = 0;
  for (uint64_t i = 0; i < b->count; i++) {
    const uint64_t k = b->state[i].points;
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
      const uint64_t k = b->state[hi].points;
      if (m + k > cap) break;
      b->state[hi].at = m;
      m += k;
    }
    bc_run(b, threads, BC_GATHER, lo, hi);
    if (m) st = eval(ctx, &b->grid, b->p, m, b->v, b->fl, err);
    if (st == VX_OK) bc_run(b, threads, BC_SCATTER, lo, hi);
    lo = hi;
  }
  if (st == VX_OK) bc_run(b, threads, BC_FINISH, 0, b->count);
  vx_free(b->p);
  vx_free(b->v);
  vx_free(b->fl);
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
  return vx_band_cache_build_with(tree, threads, NULL, NULL, out, err);
}

void vx_band_cache_drop_arrays(vx_band_cache *c) {
  if (!c) return;
  vx_free((void *)c->keys);
  vx_free((void *)c->values);
  vx_free((void *)c->bricks);
  c->keys = NULL;
  c->values = NULL;
  c->bricks = NULL;
}

vx_status vx_band_cache_build_with(const vx_sample_tree *tree, int threads,
                                   vx_band_cache_eval eval, void *ctx, vx_band_cache **out,
                                   vx_error *err) {
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
  /* steps 1 and 2: the bricks made in one order whatever the thread count (the hash table is
   * filled on one thread, the rest on all) */
  const uint32_t zero[3] = {0, 0, 0};
  b.root_level = s.depth > VX_BC_SHIFT ? s.depth - VX_BC_SHIFT : 0u;
  const uint64_t roots = bc_count_roots(&s, 0u, 0u, b.root_level);
  b.nomem = -bc_reserve(&b, roots, roots);
  if (!b.nomem) bc_roots(&b, 0u, 0u, zero);
  const uint64_t with_voxels = b.count;
  if (!b.nomem) bc_run(&b, threads, BC_VOXELS, 0, with_voxels);
  if (!b.nomem) bc_run(&b, threads, BC_MISSING, 0, with_voxels);
  uint64_t most = with_voxels; /* the table's room for the neighbours */
  for (uint64_t i = 0; i < with_voxels; i++)
    most += (uint64_t)__builtin_popcount(b.state[i].missing);
  if (!b.nomem) b.nomem = -bc_reserve(&b, most, 0);
  for (uint64_t i = 0; i < with_voxels && !b.nomem; i++) {
    const uint32_t missing = b.state[i].missing;
    const uint64_t key = b.state[i].key; /* bc_brick may move the state array */
    for (int n = 0; n < 27 && !b.nomem; n++) {
      if (!(missing >> n & 1u)) continue;
      const int64_t bi = bc_brick(&b, bc_neighbour_key(key, n));
      if (bi < 0) b.nomem = (int)-bi;
    }
  }
  if (b.nomem || b.count == 0) {
    vx_free(b.keys);
    vx_free(b.values);
    vx_free(b.bricks);
    vx_free(b.state);
    if (!b.nomem) return VX_OK; /* no voxels */
    if (b.nomem == 2)
      return vx_error_set(err, VX_ERR_LIMIT,
                          "the band cache of this tree would take more than %.1f GiB (80%% of "
                          "memory): sample without it", (double)b.limit / 1073741824.0);
    return vx_error_set(err, VX_ERR_NOMEM, "no memory for the band cache (%llu bricks of %u B)",
                        (unsigned long long)b.count, (unsigned)sizeof(vx_bc_brick));
  }
  vx_status st = eval ? bc_fill(&b, threads, eval, ctx, err)
                      : bc_fill(&b, threads, bc_cpu_eval, &threads, err);
  vx_free(b.state);
  vx_band_cache *c = st == VX_OK ? (vx_band_cache *)vx_calloc(1, sizeof *c) : NULL;
  if (!c) {
    if (st != VX_OK) {
      vx_free(b.keys);
      vx_free(b.values);
      vx_free(b.bricks);
      return st;
    }
    vx_free(b.keys);
    vx_free(b.values);
    vx_free(b.bricks);
    return vx_error_set(err, VX_ERR_NOMEM, "no memory for the band cache");
  }
  c->keys = b.keys;
  c->values = b.values;
  c->mask = b.cap ? b.cap - 1u : 0u;
  c->bricks = b.bricks;
  c->brick_count = b.count;
  *out = c;
  return VX_OK;
}
