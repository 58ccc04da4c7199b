/* SPDX-License-Identifier: Apache-2.0 */
/* grid_points.c - a cut's grid points: the cells' values merged, the band extended (grid_cut.h).
 *
 * The points are made block by block, on all cores. The grid of points is cut into aligned
 * blocks of B^3 points (B a power of two: each block is one run of Morton codes, so the blocks'
 * points, each block sorted, joined in block order are sorted). A block's points are made in a
 * hash table of its own that also holds a halo of pad points around the block:
 * - every cell with a corner in the block or its halo adds its corners there, cells in ascending
 *   order and corners 0..7 in each (such cells lie in a few aligned blocks of cells, each a run of
 *   the sorted codes), so a point's running mean m += (v - m) / k sees its values in the order a
 *   single table over the whole cut sees them: the same bits, and m stays exactly v while every
 *   value equals v (the voxels' shared corners keep their dequantized value);
 * - the band's extension runs layer by layer as it would over the whole grid. A point's value
 *   after layer t depends only on points within t steps of it, and there are fewer than pad - 1
 *   layers (a layer's front lies below band - 1), so the block's own points come out as the whole
 *   grid's would.
 * The result does not depend on the thread count.
 */
#include "formats/grid_cut.h"
#include "sys/system.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef struct point {
  uint64_t key; /* Morton code + 1; 0: empty slot */
  float v;      /* running mean of the cells' values; an extension point's value */
  uint32_t n;   /* cells that gave a value; 0: a point of the band's extension */
} point;

/* The points of one block and its halo: an open-addressing hash table (linear probing). */
typedef struct table {
  point *p;
  uint64_t cap, used;
} table;

/* A block of 4 x 4 x 4 points (64 consecutive Morton codes) is hashed as one, its points in
 * consecutive slots: the cells come in Morton order, so their corners fall in the blocks just
 * used, in cache, instead of one miss each. */
static uint64_t slot_of(uint64_t key, uint64_t mask) {
  return ((((key >> 6) * UINT64_C(0x9E3779B97F4A7C15)) >> 20) << 6 | (key & 63)) & mask;
}

static point *find(table *t, uint64_t key) {
  const uint64_t mask = t->cap - 1;
  for (uint64_t i = slot_of(key, mask);; i = (i + 1) & mask)
    if (t->p[i].key == key || t->p[i].key == 0) return &t->p[i];
}

/* The point of `key`, made with value v and count n when it is new (*made set). */
static point *insert(table *t, uint64_t key, float v, uint32_t n, int *made) {
  point *e = find(t, key);
  *made = e->key == 0;
  if (*made) {
    e->key = key;
    e->v = v;
    e->n = n;
    t->used++;
  }
  return e;
}

/* The whole job: the cut, the blocks, what each block made, the memory it may take. */
typedef struct job {
  const vx_cut *c;
  float band;
  uint32_t pad, bits; /* B = 2^bits points per block side */
  uint64_t hi;        /* the last grid point on each axis: res + 2 pad */
  const point *blocks; /* the blocks made: keys their Morton codes, ascending */
  uint64_t **keys;    /* per block: its points' keys (Morton codes), ascending, and values */
  float **vals;
  uint64_t *count;
  uint64_t room;      /* bytes the points may take */
  _Atomic uint64_t used;
  atomic_int failed;  /* a vx_status */
} job;

/* Takes `bytes` of the job's room, or fails it with VX_ERR_LIMIT. */
static int take(job *j, uint64_t bytes) {
  const uint64_t before = atomic_fetch_add(&j->used, bytes);
  if (before + bytes <= j->room) return 1;
  int none = VX_OK;
  atomic_compare_exchange_strong(&j->failed, &none, VX_ERR_LIMIT);
  return 0;
}

static void give(job *j, uint64_t bytes) { atomic_fetch_sub(&j->used, bytes); }

static int fail(job *j, int status) {
  int none = VX_OK;
  atomic_compare_exchange_strong(&j->failed, &none, status);
  return 0;
}

static int table_alloc(job *j, table *t, uint64_t cap) {
  if (!take(j, cap * sizeof(point))) return 0;
  t->p = (point *)vx_calloc((size_t)cap, sizeof(point));
  if (!t->p) {
    give(j, cap * sizeof(point));
    return fail(j, VX_ERR_NOMEM);
  }
  t->cap = cap;
  t->used = 0;
  return 1;
}

static void table_free(job *j, table *t) {
  give(j, t->cap * sizeof(point));
  vx_free(t->p);
  memset(t, 0, sizeof *t);
}

/* Keeps the load under 0.7: doubles the table when the next insertion would pass it. */
static int room(job *j, table *t) {
  if ((t->used + 1) * 10 < t->cap * 7) return 1;
  table g;
  if (!table_alloc(j, &g, t->cap * 2)) return 0;
  for (uint64_t i = 0; i < t->cap; i++)
    if (t->p[i].key) *find(&g, t->p[i].key) = t->p[i];
  g.used = t->used;
  table_free(j, t);
  *t = g;
  return 1;
}

static int by_key(const void *a, const void *b) {
  const uint64_t x = ((const point *)a)->key, y = ((const point *)b)->key;
  return x < y ? -1 : x > y;
}

/* A box of grid points, lo <= p <= hi on every axis. */
typedef struct box {
  int64_t lo[3], hi[3];
} box;

static int inside(const box *b, const int64_t p[3]) {
  return p[0] >= b->lo[0] && p[1] >= b->lo[1] && p[2] >= b->lo[2] && p[0] <= b->hi[0] &&
         p[1] <= b->hi[1] && p[2] <= b->hi[2];
}

/* A run [a, b) of the cut's cells. */
typedef struct run {
  uint64_t a, b;
} run;

static int by_start(const void *x, const void *y) {
  const uint64_t a = ((const run *)x)->a, b = ((const run *)y)->a;
  return a < b ? -1 : a > b;
}

/* Every cell with a corner in region r adds its corners there: the cells' runs (the aligned
 * blocks of cells their box meets) in ascending order. */
static int merge_cells(job *j, table *t, const box *r) {
  const vx_cut *c = j->c;
  const int64_t P = j->pad, B = (int64_t)1 << j->bits;
  /* cell x has corners x + pad .. x + pad + 1 */
  int64_t lo[3], hi[3];
  for (int a = 0; a < 3; a++) {
    lo[a] = r->lo[a] - P - 1 < 0 ? 0 : r->lo[a] - P - 1;
    hi[a] = r->hi[a] - P > (int64_t)c->res - 1 ? (int64_t)c->res - 1 : r->hi[a] - P;
    if (lo[a] > hi[a]) return 1;
  }
  run runs[64];
  int nr = 0;
  uint64_t cells = 0;
  for (int64_t z = lo[2] / B; z <= hi[2] / B; z++)
    for (int64_t y = lo[1] / B; y <= hi[1] / B; y++)
      for (int64_t x = lo[0] / B; x <= hi[0] / B; x++) {
        const uint64_t first = vx_morton_encode((uint32_t)(x * B), (uint32_t)(y * B),
                                                (uint32_t)(z * B));
        uint64_t h = 0;
        const uint64_t a = vx_gallop(c->codes, c->count, first, &h);
        const uint64_t b = vx_gallop(c->codes, c->count, first + (uint64_t)(B * B * B), &h);
        if (a < b) {
          runs[nr].a = a;
          runs[nr++].b = b;
          cells += b - a;
        }
      }
  qsort(runs, (size_t)nr, sizeof *runs, by_start);
  uint64_t cap = 1024;
  while (cap < 4 * cells) cap *= 2;
  if (!table_alloc(j, t, cap)) return 0;
  for (int k = 0; k < nr; k++)
    for (uint64_t i = runs[k].a; i < runs[k].b; i++) {
      uint32_t x, y, z;
      vx_morton_decode(c->codes[i], &x, &y, &z);
      if (x < lo[0] || y < lo[1] || z < lo[2] || x > hi[0] || y > hi[1] || z > hi[2]) continue;
      for (int q = 0; q < 8; q++) {
        const int64_t p[3] = {x + P + (q & 1), y + P + (q >> 1 & 1), z + P + (q >> 2 & 1)};
        if (!inside(r, p)) continue;
        if (!room(j, t)) return 0;
        const uint64_t key = vx_morton_encode((uint32_t)p[0], (uint32_t)p[1], (uint32_t)p[2]) + 1;
        const float v = c->field[i][q];
        int made;
        point *e = insert(t, key, v, 1, &made);
        if (!made) {
          e->n++;
          e->v += (v - e->v) / (float)e->n;
        }
      }
    }
  /* the cells' values clamped to the band */
  const float band = j->band;
  for (uint64_t i = 0; i < t->cap; i++) {
    const float x = t->p[i].v;
    t->p[i].v = x > band ? band : x < -band ? -band : x;
  }
  return 1;
}

/* A growable list of points: a layer's front, each point with its value as the layer began. */
typedef struct list {
  point *v;
  uint64_t n, cap;
} list;

static int list_push(job *j, list *l, uint64_t key, float v) {
  if (l->n == l->cap) {
    const uint64_t cap = l->cap ? 2 * l->cap : 1024;
    if (!take(j, (cap - l->cap) * sizeof *l->v)) return 0;
    point *e = (point *)vx_realloc(l->v, (size_t)cap * sizeof *e);
    if (!e) return fail(j, VX_ERR_NOMEM);
    l->v = e;
    l->cap = cap;
  }
  l->v[l->n].key = key;
  l->v[l->n++].v = v;
  return 1;
}

static void list_free(job *j, list *l) {
  give(j, l->cap * sizeof *l->v);
  vx_free(l->v);
  memset(l, 0, sizeof *l);
}

/* The band's extension within region r, one layer of 6-neighbours at a time: a point next to the
 * band takes the sign of its band neighbour q and the magnitude min over them of |v_q| + 1 (a
 * distance grows by at most one voxel per step; no edge from a band point to a point outside it
 * crosses zero, since every cell the surface passes through is a cut cell whose corners are all
 * in the band), until the magnitudes reach the band, also beyond the tree's box (a surface
 * touching the box's side gets its outer band too). Then the grids' inactive regions need only
 * their sign. A layer reads the front's values as the layer began and takes the front in key
 * order (ties: the first), so a point after layer t depends only on points within t steps. */
static int extend(job *j, table *t, const box *r) {
  const float band = j->band;
  list front = {0}, next = {0};
  int ok = 1;
  for (uint64_t i = 0; i < t->cap && ok; i++)
    if (t->p[i].key && fabsf(t->p[i].v) + 1.0f < band)
      ok = list_push(j, &front, t->p[i].key, t->p[i].v);
  while (ok && front.n) {
    qsort(front.v, (size_t)front.n, sizeof *front.v, by_key);
    next.n = 0;
    for (uint64_t i = 0; i < front.n && ok; i++) {
      const float v = front.v[i].v;
      float w = v < 0.0f ? v - 1.0f : v + 1.0f;
      if (w > band) w = band;
      if (w < -band) w = -band;
      uint32_t x, y, z;
      vx_morton_decode(front.v[i].key - 1, &x, &y, &z);
      for (int d = 0; d < 6 && ok; d++) {
        int64_t q[3] = {x, y, z};
        q[d >> 1] += (d & 1) ? 1 : -1;
        if (!inside(r, q)) continue;
        if (!(ok = room(j, t))) break;
        const uint64_t key = vx_morton_encode((uint32_t)q[0], (uint32_t)q[1], (uint32_t)q[2]) + 1;
        int made;
        point *p = insert(t, key, w, 0, &made);
        if (made) {
          ok = list_push(j, &next, key, 0.0f);
        } else if (p->n == 0 && fabsf(w) < fabsf(p->v)) {
          p->v = w;
        }
      }
    }
    /* the next front: the points this layer made that lie within the band less a voxel, with
     * their values as the next layer begins */
    uint64_t m = 0;
    for (uint64_t i = 0; i < next.n; i++) {
      const float v = find(t, next.v[i].key)->v;
      if (fabsf(v) + 1.0f < band) {
        next.v[m].key = next.v[i].key;
        next.v[m++].v = v;
      }
    }
    next.n = m;
    const list swap = front;
    front = next;
    next = swap;
  }
  list_free(j, &front);
  list_free(j, &next);
  return ok;
}

/* The points of block k: made with its halo, its own kept, sorted. */
static void make_block(void *ctx, uint64_t k) {
  job *j = (job *)ctx;
  if (atomic_load(&j->failed) != VX_OK) return;
  const int64_t B = (int64_t)1 << j->bits, H = j->pad;
  uint32_t bx, by, bz;
  vx_morton_decode(j->blocks[k].key, &bx, &by, &bz);
  const int64_t base[3] = {bx * B, by * B, bz * B};
  box own, r;
  for (int a = 0; a < 3; a++) {
    own.lo[a] = base[a];
    own.hi[a] = base[a] + B - 1;
    r.lo[a] = base[a] - H < 0 ? 0 : base[a] - H;
    r.hi[a] = base[a] + B - 1 + H > (int64_t)j->hi ? (int64_t)j->hi : base[a] + B - 1 + H;
  }
  table t = {0};
  if (!merge_cells(j, &t, &r) || (t.p && !extend(j, &t, &r))) {
    if (t.p) table_free(j, &t);
    return;
  }
  /* the block's own points, compacted to the table's front and sorted */
  uint64_t m = 0;
  for (uint64_t i = 0; i < t.cap; i++) {
    if (!t.p[i].key) continue;
    uint32_t x, y, z;
    vx_morton_decode(t.p[i].key - 1, &x, &y, &z);
    const int64_t p[3] = {x, y, z};
    if (inside(&own, p)) t.p[m++] = t.p[i];
  }
  qsort(t.p, (size_t)m, sizeof *t.p, by_key);
  if (m && take(j, m * (sizeof(uint64_t) + sizeof(float)))) {
    j->keys[k] = (uint64_t *)vx_malloc((size_t)m * sizeof(uint64_t));
    j->vals[k] = (float *)vx_malloc((size_t)m * sizeof(float));
    if (j->keys[k] && j->vals[k]) {
      for (uint64_t i = 0; i < m; i++) {
        j->keys[k][i] = t.p[i].key - 1;
        j->vals[k][i] = t.p[i].v;
      }
      j->count[k] = m;
    } else {
      fail(j, VX_ERR_NOMEM);
    }
  }
  table_free(j, &t);
}

/* The blocks that can hold points: around each aligned block of cells (a run of the sorted
 * codes), those its corners and their band reach. Sorted, without repeats. */
static int list_blocks(job *j, list *out) {
  const vx_cut *c = j->c;
  const uint32_t b = j->bits;
  const int64_t B = (int64_t)1 << b, P = j->pad;
  for (uint64_t i = 0; i < c->count;) {
    const uint64_t cb = c->codes[i] >> (3 * b);
    while (i < c->count && c->codes[i] >> (3 * b) == cb) i++;
    uint32_t x, y, z;
    vx_morton_decode(cb, &x, &y, &z);
    const int64_t cell[3] = {x * B, y * B, z * B};
    int64_t lo[3], hi[3];
    for (int a = 0; a < 3; a++) {
      lo[a] = (cell[a] + 1) / B; /* points from cell[a] + pad - (pad - 1) */
      const int64_t top = cell[a] + B + 2 * P; /* to points cell[a] + B + pad + (pad - 1) */
      hi[a] = (top > (int64_t)j->hi ? (int64_t)j->hi : top) / B;
    }
    for (int64_t pz = lo[2]; pz <= hi[2]; pz++)
      for (int64_t py = lo[1]; py <= hi[1]; py++)
        for (int64_t px = lo[0]; px <= hi[0]; px++)
          if (!list_push(j, out, vx_morton_encode((uint32_t)px, (uint32_t)py, (uint32_t)pz), 0.0f))
            return 0;
  }
  qsort(out->v, (size_t)out->n, sizeof *out->v, by_key);
  uint64_t m = 0;
  for (uint64_t i = 0; i < out->n; i++)
    if (!m || out->v[m - 1].key != out->v[i].key) out->v[m++] = out->v[i];
  out->n = m;
  return 1;
}

static vx_status failed(const job *j, int status, vx_error *err, uint64_t mem_limit) {
  char lim[32];
  if (status == VX_ERR_LIMIT)
    return vx_error_set(err, VX_ERR_LIMIT, "the grid points of %llu cells do not fit the memory "
                        "limit (%s)", (unsigned long long)j->c->count,
                        vx_bytes_text((double)mem_limit, lim, sizeof lim));
  return vx_error_set(err, VX_ERR_NOMEM, "out of memory for the grid points");
}

vx_status vx_cut_points(const vx_cut *c, float band, uint64_t mem_limit, uint64_t **keys,
                        float **values, uint64_t *n, uint32_t *pad, vx_error *err) {
  *pad = (uint32_t)ceilf(band) + 1;
  *keys = NULL;
  *values = NULL;
  *n = 0;
  if (!mem_limit) mem_limit = vx_default_mem_limit();
  job j;
  memset(&j, 0, sizeof j);
  j.c = c;
  j.band = band;
  j.pad = *pad;
  j.hi = (uint64_t)c->res + 2u * *pad;
  j.bits = 6; /* blocks of 64^3 points, larger for a wide band: the halo at most 1/8 of the block */
  while (((uint64_t)1 << j.bits) < 8u * j.pad) j.bits++;
  const uint64_t rss = vx_resident_bytes(); /* what the limit leaves beside the process */
  j.room = mem_limit > rss ? mem_limit - rss : 0;
  atomic_init(&j.used, 0);
  atomic_init(&j.failed, VX_OK);
  list blocks = {0};
  if (!list_blocks(&j, &blocks)) {
    const int st = atomic_load(&j.failed);
    list_free(&j, &blocks);
    return failed(&j, st, err, mem_limit);
  }
  j.blocks = blocks.v;
  const size_t nb = (size_t)(blocks.n ? blocks.n : 1);
  j.keys = (uint64_t **)vx_calloc(nb, sizeof *j.keys);
  j.vals = (float **)vx_calloc(nb, sizeof *j.vals);
  j.count = (uint64_t *)vx_calloc(nb, sizeof *j.count);
  if (!j.keys || !j.vals || !j.count) fail(&j, VX_ERR_NOMEM);
  else vx_items_run(0, blocks.n, make_block, &j);
  /* the blocks' points joined in block order */
  uint64_t m = 0;
  for (uint64_t k = 0; j.count && k < blocks.n; k++) m += j.count[k];
  uint64_t *kk = NULL;
  float *vv = NULL;
  if (atomic_load(&j.failed) == VX_OK && take(&j, m * (sizeof *kk + sizeof *vv))) {
    kk = (uint64_t *)vx_malloc((size_t)(m ? m : 1) * sizeof *kk);
    vv = (float *)vx_malloc((size_t)(m ? m : 1) * sizeof *vv);
    if (!kk || !vv) fail(&j, VX_ERR_NOMEM);
  }
  for (uint64_t k = 0, o = 0; k < blocks.n && j.keys && j.vals && j.count; k++) {
    if (atomic_load(&j.failed) == VX_OK && j.count[k]) {
      memcpy(kk + o, j.keys[k], (size_t)j.count[k] * sizeof *kk);
      memcpy(vv + o, j.vals[k], (size_t)j.count[k] * sizeof *vv);
      o += j.count[k];
    }
    vx_free(j.keys[k]);
    vx_free(j.vals[k]);
  }
  vx_free(j.keys);
  vx_free(j.vals);
  vx_free(j.count);
  list_free(&j, &blocks);
  const int st = atomic_load(&j.failed);
  if (st != VX_OK) {
    vx_free(kk);
    vx_free(vv);
    return failed(&j, st, err, mem_limit);
  }
  *keys = kk;
  *values = vv;
  *n = m;
  return VX_OK;
}
