/* SPDX-License-Identifier: Apache-2.0 */
/* tiled_arena.c - the tile cache and the arenas of lib/tiled_arena.h. */
#include "lib/tiled_arena.h"
#include "sampler/resigned.h"
#include "sys/alloc.h"
#include "sys/system.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

typedef struct cache_entry {
  uint64_t tile;
  vx_octree oct;
  uint64_t bytes;
  uint64_t used; /* the clock when last asked for */
  uint64_t gen;  /* the arena that asked last */
} cache_entry;

/* A window kept for the next calls (vx_tile_cache_window). */
#define CACHE_WINDOWS 64
typedef struct cached_window {
  vx_arena a;
  uint32_t W, level; /* its depth, the level below which it keeps a part (W: all) */
  uint64_t key, used, bytes;
  vx_gpu_resident *gpu; /* its copy on the GPU (vx_tile_cache_window_gpu), or NULL */
} cached_window;

struct vx_tile_cache {
  vx_tiled *t;
  vx_svo_read_opts ro;
  uint64_t budget, bytes, clock, gen;
  uint64_t asked; /* the budget last set (budget: raised to what a window held); 0: auto */
  cached_window win[CACHE_WINDOWS];
  int nwin;
  uint64_t win_bytes, win_most; /* the windows' bytes, the largest window's */
  cache_entry *e;
  size_t n, cap;
  uint32_t *slot; /* per tile of the file: its entry + 1, 0: not held */
  vx_rs_store *rs; /* the re-signed voxels found so far (the file handle's) */
  uint64_t gpu_budget; /* bytes of windows on the GPU at most (0: as its free memory allows) */
  int window_colors; /* windows copy the tiles' colours too */
};

/* A window's re-signed voxels. */
typedef struct rs_window {
  uint64_t key;
  uint32_t level; /* the level below which it keeps a part (its depth: all) */
  uint32_t *bits;
} rs_window;

struct vx_rs_store {
  uint64_t tiles;
  uint32_t **bits; /* per tile (whole-tree arenas), found once with its neighbours loaded */
  uint8_t *have;
  rs_window *win;  /* per window */
  size_t nwin, capwin;
};

vx_status vx_rs_store_new(uint64_t tiles, vx_rs_store **out, vx_error *err) {
  vx_rs_store *r = (vx_rs_store *)vx_calloc(1, sizeof *r);
  if (r) {
    r->tiles = tiles;
    r->bits = (uint32_t **)vx_calloc((size_t)(tiles ? tiles : 1), sizeof *r->bits);
    r->have = (uint8_t *)vx_calloc((size_t)(tiles ? tiles : 1), 1);
  }
  if (!r || !r->bits || !r->have) {
    vx_rs_store_free(r);
    *out = NULL;
    return vx_error_set(err, VX_ERR_NOMEM, "out of memory for %llu tiles",
                        (unsigned long long)tiles);
  }
  *out = r;
  return VX_OK;
}

void vx_rs_store_free(vx_rs_store *r) {
  if (!r) return;
  if (r->bits)
    for (uint64_t i = 0; i < r->tiles; i++) vx_free(r->bits[i]);
  for (size_t i = 0; i < r->nwin; i++) vx_free(r->win[i].bits);
  vx_free(r->bits);
  vx_free(r->have);
  vx_free(r->win);
  vx_free(r);
}

vx_status vx_tile_cache_new(vx_tiled *t, const vx_svo_read_opts *ro, uint64_t budget,
                            vx_rs_store *rs, vx_tile_cache **out, vx_error *err) {
  vx_tile_cache *c = (vx_tile_cache *)vx_calloc(1, sizeof *c);
  *out = c;
  if (!c) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  c->t = t;
  c->ro = *ro;
  c->ro.max_level = -1;
  vx_tile_cache_set_budget(c, budget);
  c->rs = rs;
  const uint64_t n = vx_tiled_tile_count(t);
  c->slot = n <= UINT32_MAX ? (uint32_t *)vx_calloc((size_t)(n ? n : 1), sizeof *c->slot) : NULL;
  if (!c->slot) {
    vx_tile_cache_free(c);
    *out = NULL;
    return vx_error_set(err, VX_ERR_NOMEM, "out of memory for the index of %llu tiles",
                        (unsigned long long)n);
  }
  return VX_OK;
}

void vx_tile_cache_free(vx_tile_cache *c) {
  if (!c) return;
  for (int i = 0; i < c->nwin; i++) {
    vx_gpu_resident_free(c->win[i].gpu);
    vx_arena_free(&c->win[i].a);
  }
  for (size_t i = 0; i < c->n; i++) vx_octree_free(&c->e[i].oct);
  vx_free(c->e);
  vx_free(c->slot);
  vx_free(c);
}

void vx_tile_cache_window_colors(vx_tile_cache *c, int on) { c->window_colors = on; }

void vx_tile_cache_set_budget(vx_tile_cache *c, uint64_t budget) {
  c->asked = budget;
  c->budget = budget ? budget : VX_TILE_CACHE_DEFAULT;
}

static int cmp_used(const void *a, const void *b) {
  const cache_entry *x = *(const cache_entry *const *)a, *y = *(const cache_entry *const *)b;
  return x->used < y->used ? -1 : x->used > y->used;
}

/* Over the budget: drops the least recently used tiles that the current arena does not hold, down
 * to 3/4 of the budget (so that the next trim waits for a quarter of it to be loaded). */
static void cache_trim(vx_tile_cache *c) {
  if (c->bytes <= c->budget) return;
  cache_entry **old = (cache_entry **)vx_malloc((c->n ? c->n : 1) * sizeof *old);
  if (!old) return; /* kept: memory over the budget rather than a failure */
  size_t m = 0;
  for (size_t i = 0; i < c->n; i++)
    if (c->e[i].gen != c->gen) old[m++] = &c->e[i];
  qsort(old, m, sizeof *old, cmp_used);
  const uint64_t target = c->budget / 4 * 3;
  for (size_t k = 0; k < m && c->bytes > target; k++) {
    c->bytes -= old[k]->bytes;
    vx_octree_free(&old[k]->oct);
    c->slot[old[k]->tile] = 0;
    old[k]->tile = UINT64_MAX; /* gone: compacted below */
  }
  vx_free(old);
  size_t w = 0;
  for (size_t i = 0; i < c->n; i++) {
    if (c->e[i].tile == UINT64_MAX) continue;
    c->e[w] = c->e[i];
    c->slot[c->e[w].tile] = (uint32_t)w + 1u;
    w++;
  }
  for (size_t i = w; i < c->n; i++) c->e[i].tile = UINT64_MAX;
  c->n = w;
}

/* Tile i, decoded into o, added to the cache (o's arrays taken; freed on failure), held for the
 * current arena. */
static vx_status cache_put(vx_tile_cache *c, uint64_t i, vx_octree *o, vx_error *err) {
  if (c->n == c->cap) {
    size_t cap = c->cap ? 2 * c->cap : 32;
    cache_entry *e = (cache_entry *)vx_realloc(c->e, cap * sizeof *e);
    if (!e) {
      vx_octree_free(o);
      return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
    }
    c->e = e;
    c->cap = cap;
  }
  cache_entry *e = &c->e[c->n];
  memset(e, 0, sizeof *e);
  e->oct = *o;
  e->tile = i;
  e->bytes = o->node_count * sizeof(vx_node) + o->voxel_count * sizeof(vx_voxel) +
             (o->node_color ? o->node_count * sizeof(uint32_t) : 0) +
             (o->voxel_color ? o->voxel_count * sizeof(uint32_t) : 0);
  e->used = ++c->clock;
  e->gen = c->gen;
  c->slot[i] = (uint32_t)++c->n;
  c->bytes += e->bytes;
  return VX_OK;
}

/* Tile i, decoded (from the cache, else read), held for the current arena. The pointer stays
 * valid until the next call that reads a tile. */
static vx_status cache_get(vx_tile_cache *c, uint64_t i, const vx_octree **out, vx_error *err) {
  const uint32_t at = c->slot[i];
  if (at) {
    cache_entry *e = &c->e[at - 1u];
    e->used = ++c->clock;
    e->gen = c->gen;
    *out = &e->oct;
    return VX_OK;
  }
  vx_octree o;
  vx_status s = vx_tiled_read_tile(c->t, i, &c->ro, &o, err);
  if (s == VX_OK) s = cache_put(c, i, &o, err);
  if (s != VX_OK) return s;
  cache_trim(c); /* moves entries: i's slot says where it went */
  *out = &c->e[c->slot[i] - 1u].oct;
  return VX_OK;
}

/* Tiles decoded side by side, each thread with a reader of its own on the file. */
typedef struct prefetch_job {
  const char *path;
  const vx_tiled *t; /* the cache's reader: the other readers must see the same file */
  vx_svo_read_opts ro;
  const uint64_t *tiles;
  vx_octree *out;
  uint64_t n;
  atomic_uint_fast64_t next;
  atomic_int failed;
  pthread_mutex_t lock;
  vx_status status;
  vx_error err;
} prefetch_job;

static void *prefetch_worker(void *arg) {
  prefetch_job *j = (prefetch_job *)arg;
  vx_error e;
  memset(&e, 0, sizeof e);
  vx_tiled *t = NULL;
  vx_status s = vx_tiled_open(j->path, &j->ro, &t, &e);
  if (s == VX_OK && vx_tiled_tile_count(t) != vx_tiled_tile_count(j->t))
    s = vx_error_set(&e, VX_ERR_IO, "%s: the file changed since it was opened", j->path);
  while (s == VX_OK && !atomic_load(&j->failed)) {
    const uint64_t k = atomic_fetch_add(&j->next, 1);
    if (k >= j->n) break;
    const vx_tile_entry *a = vx_tiled_tile(t, j->tiles[k]), *b = vx_tiled_tile(j->t, j->tiles[k]);
    if (a->code != b->code || a->offset != b->offset || a->length != b->length ||
        a->check != b->check)
      s = vx_error_set(&e, VX_ERR_IO, "%s: the file changed since it was opened", j->path);
    else
      s = vx_tiled_read_tile(t, j->tiles[k], &j->ro, &j->out[k], &e);
  }
  if (s != VX_OK) {
    atomic_store(&j->failed, 1);
    pthread_mutex_lock(&j->lock);
    if (j->status == VX_OK) {
      j->status = s;
      j->err = e;
    }
    pthread_mutex_unlock(&j->lock);
  }
  vx_tiled_close(t);
  return NULL;
}

vx_status vx_tile_cache_prefetch(vx_tile_cache *c, const char *path, const uint64_t *tiles,
                                 size_t n, int threads, vx_error *err) {
  uint64_t *miss = (uint64_t *)vx_malloc((n ? n : 1) * sizeof *miss);
  if (!miss) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (!c->slot[tiles[i]]) miss[m++] = tiles[i];
  const int nt = vx_thread_count(threads, m < 256 ? (int)m : 256);
  if (m < 2 || nt < 2 || !path) { /* nothing to share out: read when asked for */
    vx_free(miss);
    return VX_OK;
  }
  prefetch_job j;
  memset(&j, 0, sizeof j);
  j.path = path;
  j.t = c->t;
  j.ro = c->ro;
  j.tiles = miss;
  j.n = m;
  j.out = (vx_octree *)vx_calloc(m, sizeof *j.out);
  atomic_init(&j.next, 0);
  atomic_init(&j.failed, 0);
  pthread_mutex_init(&j.lock, NULL);
  vx_status s = j.out ? VX_OK : vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  if (s == VX_OK) {
    vx_parallel(nt, prefetch_worker, &j);
    if ((s = j.status) != VX_OK) *err = j.err;
  }
  c->gen++;
  for (size_t k = 0; k < m && j.out; k++) {
    if (s == VX_OK) s = cache_put(c, miss[k], &j.out[k], err);
    else vx_octree_free(&j.out[k]);
  }
  if (s == VX_OK && c->bytes > c->budget) c->budget = c->bytes; /* kept for the arenas to come */
  pthread_mutex_destroy(&j.lock);
  vx_free(j.out);
  vx_free(miss);
  return s;
}

vx_status vx_tile_cache_hold(vx_tile_cache *c, const uint64_t *tiles, size_t n,
                             const vx_octree **out, vx_error *err) {
  c->gen++;
  vx_status s = VX_OK;
  for (size_t i = 0; i < n && s == VX_OK; i++) s = cache_get(c, tiles[i], &out[i], err);
  /* later loads may have moved earlier entries: look them up again */
  for (size_t i = 0; i < n && s == VX_OK; i++) s = cache_get(c, tiles[i], &out[i], err);
  return s;
}

uint64_t vx_tiled_find_tile(const vx_tiled *t, uint32_t x, uint32_t y, uint32_t z) {
  const uint64_t code = vx_morton_encode(x, y, z);
  uint64_t lo = 0, hi = vx_tiled_tile_count(t);
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    const uint64_t m = vx_tiled_tile(t, mid)->code;
    if (m == code) return mid;
    if (m < code) lo = mid + 1;
    else hi = mid;
  }
  return UINT64_MAX;
}

void vx_arena_free(vx_arena *a) {
  if (!a) return;
  vx_octree_free(&a->oct);
  vx_free(a->resigned);
  memset(a, 0, sizeof *a);
}

/* A tile's root standing for a tile not loaded: a leaf with its plane where the cut stops there
 * (as the joined tree does), else a node with no children and no plane. */
static uint32_t root_absent(uint32_t info, uint32_t cut, uint32_t K) {
  return cut <= K && (vx_node_flags(info) & VX_NODE_PLANE_OK) ? info & ~0xffu : 0u;
}

/* Sets bits dst[at .. at + n - 1] from src[0 .. n - 1] (dst zeroed; src NULL: none set). */
static void copy_bits(uint32_t *dst, uint64_t at, const uint32_t *src, uint64_t n) {
  if (!src) return;
  for (uint64_t w = 0; w < (n + 31) / 32; w++) {
    uint32_t v = src[w];
    if (!v) continue;
    for (uint32_t b = 0; b < 32; b++)
      if (v >> b & 1u) {
        const uint64_t k = at + w * 32 + b;
        dst[k >> 5] |= 1u << (k & 31u);
      }
  }
}

/* Links the arena, finds its re-signed voxels. */
static vx_status arena_finish(vx_arena *a, int threads, vx_error *err) {
  vx_status s = vx_octree_link(&a->oct, err);
  if (s == VX_OK) s = vx_octree_resigned(&a->oct, threads, &a->resigned, err);
  if (s != VX_OK) vx_arena_free(a);
  return s;
}

/* Copies planned, then made on all threads (an arena past 16384^3 copies GBs), in pieces. */
typedef struct copy_job {
  void *dst;
  const void *src;
  size_t bytes;
} copy_job;

typedef struct copy_plan {
  copy_job *j;
  size_t n, cap;
} copy_plan;

#define COPY_PIECE ((size_t)4 << 20)

/* Plans a copy of `bytes` from src to dst; 0: out of memory. */
static int plan_copy(copy_plan *p, void *dst, const void *src, size_t bytes) {
  while (bytes) {
    const size_t b = bytes < COPY_PIECE ? bytes : COPY_PIECE;
    if (p->n == p->cap) {
      const size_t cap = p->cap ? 2 * p->cap : 256;
      copy_job *j = (copy_job *)vx_realloc(p->j, cap * sizeof *j);
      if (!j) return 0;
      p->j = j;
      p->cap = cap;
    }
    p->j[p->n].dst = dst;
    p->j[p->n].src = src;
    p->j[p->n++].bytes = b;
    dst = (char *)dst + b;
    src = (const char *)src + b;
    bytes -= b;
  }
  return 1;
}

static void copy_item(void *ctx, uint64_t i) {
  const copy_job *j = &((const copy_plan *)ctx)->j[i];
  memcpy(j->dst, j->src, j->bytes);
}

/* Makes the copies planned on `threads` threads (0: all cores) when ok (every plan_copy
 * succeeded), and frees the plan; returns ok. */
static int plan_finish(copy_plan *p, int ok, int threads) {
  if (ok) vx_items_run(threads, p->n, copy_item, p);
  vx_free(p->j);
  memset(p, 0, sizeof *p);
  return ok;
}

/* The whole-tree arena of tiles[0 .. n-1]; `own` 1: its re-signed voxels found in it, 0: assembled
 * from the tiles' (found before). */
static vx_status build_whole(vx_tile_cache *c, const uint64_t *tiles, size_t n, uint32_t cut,
                             int threads, int own, vx_arena *a, vx_error *err) {
  memset(a, 0, sizeof *a);
  const vx_tiled_header *h = vx_tiled_get_header(c->t);
  const uint32_t D = h->depth, T = h->tile_depth, K = D - T;
  const vx_octree *top = vx_tiled_top(c->t);
  const vx_octree **tl = (const vx_octree **)vx_calloc(n ? n : 1, sizeof *tl);
  if (!tl) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  vx_status s = vx_tile_cache_hold(c, tiles, n, tl, err);
  vx_octree *o = &a->oct;
  o->depth = D;
  o->levels_loaded = D + 1;
  o->band = h->band;
  o->prune_error = h->prune_error;
  o->xf = h->xf;
  for (uint32_t l = 0; l <= K; l++) o->level_count[l] = top->level_count[l];
  for (uint32_t l = 1; l <= T && s == VX_OK; l++)
    for (size_t i = 0; i < n; i++) o->level_count[K + l] += tl[i]->level_count[l];
  if (s == VX_OK) s = vx_octree_alloc_unset(o, err); /* every node copied below */
  if (s == VX_OK) {
    memcpy(o->nodes, top->nodes,
           (size_t)(top->level_first[K - 1] + top->level_count[K - 1]) * sizeof(vx_node));
    vx_node *lk = o->nodes + o->level_first[K];
    const vx_node *tk = top->nodes + top->level_first[K];
    size_t j = 0;
    for (uint64_t i = 0; i < top->level_count[K]; i++) {
      lk[i] = tk[i];
      if (j < n && tiles[j] == i) j++;
      else lk[i].info = root_absent(lk[i].info, cut, K);
    }
    copy_plan plan;
    memset(&plan, 0, sizeof plan);
    int ok = 1;
    for (uint32_t l = 1; l <= T && ok; l++) {
      uint64_t at = 0;
      for (size_t i = 0; i < n && ok; i++) {
        const uint64_t cnt = tl[i]->level_count[l];
        if (cnt == 0) /* a pruned tile's levels may be empty */
          continue;
        if (l < T)
          ok = plan_copy(&plan, o->nodes + o->level_first[K + l] + at,
                         tl[i]->nodes + tl[i]->level_first[l], (size_t)cnt * sizeof(vx_node));
        else
          ok = plan_copy(&plan, o->voxels + at, tl[i]->voxels, (size_t)cnt * sizeof(vx_voxel));
        at += cnt;
      }
    }
    if (!plan_finish(&plan, ok, threads)) s = vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  }
  vx_free((void *)tl);
  if (s != VX_OK) {
    vx_arena_free(a);
    return s;
  }
  if (own) return arena_finish(a, threads, err);
  if ((s = vx_octree_link(o, err)) != VX_OK) {
    vx_arena_free(a);
    return s;
  }
  if (o->voxel_count) {
    a->resigned = (uint32_t *)vx_calloc((size_t)((o->voxel_count + 31) / 32), sizeof(uint32_t));
    if (!a->resigned) {
      vx_arena_free(a);
      return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
    }
  }
  uint64_t at = 0;
  for (size_t i = 0; i < n; i++) {
    const uint64_t cnt = vx_tiled_tile(c->t, tiles[i])->voxels;
    copy_bits(a->resigned, at, c->rs->bits[tiles[i]], cnt);
    at += cnt;
  }
  return VX_OK;
}

/* Tile i's re-signed voxels, found once in an arena of the tiles around it: those of the block of
 * 2 x 2 x 2 cells that holds it (each with its 26 neighbours) from the 4 x 4 x 4 cells around the
 * block. */
static vx_status tile_bits(vx_tile_cache *c, uint64_t i, int threads, vx_error *err) {
  if (c->rs->have[i]) return VX_OK;
  const vx_tiled_header *h = vx_tiled_get_header(c->t);
  const uint32_t K = h->depth - h->tile_depth;
  const int64_t G = (int64_t)1 << K;
  uint32_t cell[3];
  vx_morton_decode(vx_tiled_tile(c->t, i)->code, &cell[0], &cell[1], &cell[2]);
  int64_t lo[3], hi[3];
  for (int k = 0; k < 3; k++) {
    lo[k] = (int64_t)(cell[k] >> 1 << 1) - 1;
    hi[k] = lo[k] + 3;
    lo[k] = lo[k] < 0 ? 0 : lo[k];
    hi[k] = hi[k] >= G ? G - 1 : hi[k];
  }
  uint64_t around[64] = {0};
  size_t n = 0;
  for (int64_t z = lo[2]; z <= hi[2]; z++)
    for (int64_t y = lo[1]; y <= hi[1]; y++)
      for (int64_t x = lo[0]; x <= hi[0]; x++) {
        const uint64_t t = vx_tiled_find_tile(c->t, (uint32_t)x, (uint32_t)y, (uint32_t)z);
        if (t != UINT64_MAX) around[n++] = t;
      }
  for (size_t k = 1; k < n; k++) /* ascending */
    for (size_t j = k; j > 0 && around[j - 1] > around[j]; j--) {
      const uint64_t x = around[j];
      around[j] = around[j - 1];
      around[j - 1] = x;
    }
  vx_arena a;
  vx_status s = build_whole(c, around, n, h->depth, threads, 1, &a, err);
  if (s != VX_OK) return s;
  uint64_t at = 0;
  for (size_t k = 0; k < n && s == VX_OK; k++) {
    const uint64_t t = around[k], cnt = vx_tiled_tile(c->t, t)->voxels;
    uint32_t q[3];
    vx_morton_decode(vx_tiled_tile(c->t, t)->code, &q[0], &q[1], &q[2]);
    const int inner = q[0] >> 1 == cell[0] >> 1 && q[1] >> 1 == cell[1] >> 1 &&
                      q[2] >> 1 == cell[2] >> 1;
    if (inner && !c->rs->have[t]) {
      uint32_t *b = NULL;
      if (a.resigned && cnt) {
        b = (uint32_t *)vx_calloc((size_t)((cnt + 31) / 32), sizeof *b);
        if (!b) s = vx_error_set(err, VX_ERR_NOMEM, "out of memory");
        else
          for (uint64_t v = 0; v < cnt; v++)
            if (a.resigned[(at + v) >> 5] >> ((at + v) & 31u) & 1u) b[v >> 5] |= 1u << (v & 31u);
      }
      if (s == VX_OK) {
        c->rs->bits[t] = b;
        c->rs->have[t] = 1;
      }
    }
    at += cnt;
  }
  vx_arena_free(&a);
  return s;
}

vx_status vx_arena_whole(vx_tile_cache *c, const uint64_t *tiles, size_t n, uint32_t cut,
                         int threads, vx_arena *a, vx_error *err) {
  memset(a, 0, sizeof *a);
  for (size_t i = 0; i < n; i++) {
    vx_status s = tile_bits(c, tiles[i], threads, err);
    if (s != VX_OK) return s;
  }
  return build_whole(c, tiles, n, cut, threads, 0, a, err);
}



/* Children of the nodes [lo, hi) of one level of tree o (breadth first): the range they fill on
 * the next level (lo == hi: none). */
static void child_range(const vx_octree *o, uint64_t *lo, uint64_t *hi) {
  uint64_t first = 0, cnt = 0;
  int any = 0;
  for (uint64_t k = *lo; k < *hi; k++) {
    const uint32_t m = vx_node_mask(o->nodes[k].info);
    if (!m) continue;
    if (!any) first = o->nodes[k].child;
    any = 1;
    cnt += vx_popcount8(m);
  }
  *lo = any ? first : 0;
  *hi = any ? first + cnt : 0;
}

/* Runs [r[i][0], r[i][1]) of node indices of one level of a tile, ascending, not touching. */
typedef struct run_list {
  uint64_t (*r)[2];
  size_t n, cap;
} run_list;

static int run_add(run_list *l, uint64_t lo, uint64_t hi) {
  if (l->n && l->r[l->n - 1][1] == lo) {
    l->r[l->n - 1][1] = hi;
    return 1;
  }
  if (l->n == l->cap) {
    const size_t cap = l->cap ? 2 * l->cap : 64;
    uint64_t(*r)[2] = (uint64_t(*)[2])vx_realloc(l->r, cap * sizeof *r);
    if (!r) return 0;
    l->r = r;
    l->cap = cap;
  }
  l->r[l->n][0] = lo;
  l->r[l->n][1] = hi;
  l->n++;
  return 1;
}

/* dst = src (runs); 0: out of memory. */
static int runs_copy(run_list *dst, const run_list *src) {
  if (dst->cap < src->n) {
    uint64_t(*r)[2] = (uint64_t(*)[2])vx_realloc(dst->r, src->n * sizeof *r);
    if (!r) return 0;
    dst->r = r;
    dst->cap = src->n;
  }
  if (src->n) memcpy(dst->r, src->r, src->n * sizeof *src->r);
  dst->n = src->n;
  return 1;
}

/* The nodes of window level k->level under node idx of tile o (window level l, minimum corner m
 * in finest voxels of the whole tree, edge `size`), in index order: those meeting k's box, as
 * runs into r. 0: out of memory. */
static int kept_runs(const vx_octree *o, uint32_t l, uint32_t idx, const uint64_t m[3],
                     uint64_t size, const vx_window_keep *k, run_list *r) {
  if (l == k->level) {
    for (int i = 0; i < 3; i++)
      if (m[i] >= k->hi[i] || m[i] + size <= k->lo[i]) return 1;
    return run_add(r, idx, idx + 1u);
  }
  const uint32_t mask = vx_node_mask(o->nodes[idx].info);
  const uint64_t h = size / 2u;
  for (uint32_t cs = 0; cs < 8u; cs++) {
    if (!(mask >> cs & 1u)) continue;
    const uint64_t cm[3] = {m[0] + (cs & 1u) * h, m[1] + (cs >> 1 & 1u) * h,
                            m[2] + (cs >> 2 & 1u) * h};
    if (!kept_runs(o, l + 1u, vx_child_index(o->nodes[idx].child, mask, cs), cm, h, k, r))
      return 0;
  }
  return 1;
}

/* The runs of the next level under runs r, in place. */
static void runs_down(const vx_octree *o, run_list *r) {
  size_t w = 0;
  for (size_t i = 0; i < r->n; i++) {
    uint64_t lo = r->r[i][0], hi = r->r[i][1];
    child_range(o, &lo, &hi);
    if (lo == hi) continue;
    if (w && r->r[w - 1][1] == lo) {
      r->r[w - 1][1] = hi;
    } else {
      r->r[w][0] = lo;
      r->r[w][1] = hi;
      w++;
    }
  }
  r->n = w;
}

/* Sets to 0 the info of the nodes dst[0 .. hi - lo - 1], tile nodes [lo, hi), outside runs r. */
static void clear_unkept(vx_node *dst, uint64_t lo, uint64_t hi, const run_list *r) {
  uint64_t k = lo;
  for (size_t i = 0; i <= r->n; i++) {
    const uint64_t end = i < r->n ? r->r[i][0] : hi;
    for (; k < end; k++) dst[k - lo].info = 0u;
    if (i < r->n) k = r->r[i][1];
  }
}

/* The tile cache's bytes held by the current arena. */
static uint64_t held_bytes(const vx_tile_cache *c) {
  uint64_t b = 0;
  for (size_t i = 0; i < c->n; i++) b += c->e[i].gen == c->gen ? c->e[i].bytes : 0u;
  return b;
}

/* The level below which a window of depth W keeps a part: keep's, or W (all of it). */
static uint32_t keep_level(const vx_window_keep *keep, uint32_t W) {
  return keep && keep->level >= 1u && keep->level < W ? keep->level : W;
}

/* The window's re-signed voxels kept from an earlier arena of it (its key and kept level), or
 * NULL. */
static rs_window *window_bits(vx_rs_store *r, uint64_t key, uint32_t level) {
  for (size_t i = 0; i < r->nwin; i++)
    if (r->win[i].key == key && r->win[i].level == level) return &r->win[i];
  return NULL;
}

vx_status vx_arena_window(vx_tile_cache *c, uint32_t W, const uint32_t origin[3],
                          const vx_window_keep *keep, int threads, vx_arena *a, vx_error *err) {
  memset(a, 0, sizeof *a);
  const vx_tiled_header *h = vx_tiled_get_header(c->t);
  const uint32_t D = h->depth, T = h->tile_depth, K = D - T;
  const uint32_t G = D - W + 1, sl = G - K; /* window level 1: level G, level sl of a tile */
  const uint32_t P = keep_level(keep, W);
  const uint32_t half = 1u << (W - 1);
  const uint64_t R = (uint64_t)1 << D;
  c->gen++;
  const vx_octree *src[8] = {0};
  uint64_t lo[8][VX_MAX_DEPTH + 1], hi[8][VX_MAX_DEPTH + 1];
  run_list kept[8], work[8];
  memset(kept, 0, sizeof kept);
  memset(work, 0, sizeof work);
  uint32_t mask = 0;
  vx_status s = VX_OK;
  for (uint32_t slot = 0; slot < 8 && s == VX_OK; slot++) {
    uint64_t g[3];
    int inside = 1;
    for (int i = 0; i < 3; i++) {
      g[i] = (uint64_t)origin[i] + (uint64_t)(slot >> i & 1u) * half;
      inside &= g[i] < R;
    }
    if (!inside) continue;
    const uint64_t ti = vx_tiled_find_tile(c->t, (uint32_t)(g[0] >> T), (uint32_t)(g[1] >> T),
                                           (uint32_t)(g[2] >> T));
    if (ti == UINT64_MAX) continue;
    const vx_octree *o = NULL;
    if ((s = cache_get(c, ti, &o, err)) != VX_OK) break;
    uint32_t idx = 0, ok = 1;
    for (uint32_t l = 0; l < sl && ok; l++) { /* down to level sl, by g's bits in the tile */
      const uint32_t m = vx_node_mask(o->nodes[idx].info), sh = T - 1u - l;
      const uint32_t cs = (uint32_t)(g[0] >> sh & 1u) | (uint32_t)(g[1] >> sh & 1u) << 1 |
                          (uint32_t)(g[2] >> sh & 1u) << 2;
      if (!(m >> cs & 1u)) ok = 0;
      else idx = vx_child_index(o->nodes[idx].child, m, cs);
    }
    if (!ok) continue;
    mask |= 1u << slot;
    lo[slot][1] = idx;
    hi[slot][1] = idx + 1u;
    for (uint32_t wl = 2; wl <= P; wl++) {
      lo[slot][wl] = lo[slot][wl - 1];
      hi[slot][wl] = hi[slot][wl - 1];
      child_range(o, &lo[slot][wl], &hi[slot][wl]);
    }
    if (P < W && !kept_runs(o, 1u, idx, g, half, keep, &kept[slot]))
      s = vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  }
  /* the tiles may have moved in the cache: find them again (all held by this arena) */
  for (uint32_t slot = 0; slot < 8 && s == VX_OK; slot++) {
    if (!(mask >> slot & 1u)) continue;
    uint64_t g[3];
    for (int i = 0; i < 3; i++) g[i] = (uint64_t)origin[i] + (uint64_t)(slot >> i & 1u) * half;
    s = cache_get(c, vx_tiled_find_tile(c->t, (uint32_t)(g[0] >> T), (uint32_t)(g[1] >> T),
                                        (uint32_t)(g[2] >> T)),
                  &src[slot], err);
  }
  /* the next windows find these tiles again: they were in memory at once anyway */
  const uint64_t held = s == VX_OK ? held_bytes(c) : 0;
  if (held > c->budget) c->budget = held;
  vx_octree *o = &a->oct;
  o->depth = W;
  o->levels_loaded = W + 1;
  o->band = h->band;
  o->prune_error = h->prune_error;
  o->xf.scale = h->xf.scale;
  for (int i = 0; i < 3; i++) o->xf.origin[i] = h->xf.origin[i] + (double)origin[i] * h->xf.scale;
  o->level_count[0] = 1;
  for (uint32_t slot = 0; slot < 8 && s == VX_OK; slot++) {
    if (!(mask >> slot & 1u)) continue;
    for (uint32_t wl = 1; wl <= P; wl++) o->level_count[wl] += hi[slot][wl] - lo[slot][wl];
    if (P == W) continue;
    if (!runs_copy(&work[slot], &kept[slot])) {
      s = vx_error_set(err, VX_ERR_NOMEM, "out of memory");
      break;
    }
    for (uint32_t wl = P + 1u; wl <= W; wl++) {
      runs_down(src[slot], &work[slot]);
      for (size_t i = 0; i < work[slot].n; i++)
        o->level_count[wl] += work[slot].r[i][1] - work[slot].r[i][0];
    }
  }
  if (s == VX_OK) s = vx_octree_alloc_unset(o, err); /* every node copied below */
  int colored = c->window_colors && mask != 0;
  for (uint32_t slot = 0; slot < 8 && s == VX_OK; slot++)
    if (mask >> slot & 1u)
      colored &= src[slot]->node_color && (src[slot]->voxel_color || !src[slot]->voxel_count);
  if (s == VX_OK && colored) {
    o->node_color = (uint32_t *)vx_calloc((size_t)o->node_count, sizeof(uint32_t));
    o->voxel_color = (uint32_t *)vx_malloc((size_t)(o->voxel_count ? o->voxel_count : 1) * 4);
    if (!o->node_color || !o->voxel_color) s = vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  }
  if (s == VX_OK) {
    memset(o->nodes, 0, sizeof *o->nodes);
    o->nodes[0].info = mask; /* no plane, no errors: never final */
    for (uint32_t slot = 0; slot < 8 && P < W; slot++) /* the runs again, for the copies */
      runs_copy(&work[slot], &kept[slot]);              /* (fits: it held them before) */
    copy_plan plan;
    memset(&plan, 0, sizeof plan);
    int ok = 1;
    for (uint32_t wl = 1; wl <= W && ok; wl++) {
      uint64_t at = 0;
      for (uint32_t slot = 0; slot < 8 && ok; slot++) {
        if (!(mask >> slot & 1u)) continue;
        uint64_t one[1][2] = {{wl <= P ? lo[slot][wl] : 0u, wl <= P ? hi[slot][wl] : 0u}};
        run_list full = {one, 1, 1};
        const run_list *runs = &full;
        if (wl > P) {
          runs_down(src[slot], &work[slot]);
          runs = &work[slot];
        }
        for (size_t i = 0; i < runs->n && ok; i++) {
          const uint64_t from = runs->r[i][0], cnt = runs->r[i][1] - from;
          if (wl < W)
            ok = plan_copy(&plan, o->nodes + o->level_first[wl] + at, src[slot]->nodes + from,
                           (size_t)cnt * sizeof(vx_node)) &&
                 (!colored || plan_copy(&plan, o->node_color + o->level_first[wl] + at,
                                        src[slot]->node_color + from, (size_t)cnt * 4));
          else
            ok = plan_copy(&plan, o->voxels + at, src[slot]->voxels + from,
                           (size_t)cnt * sizeof(vx_voxel)) &&
                 (!colored || plan_copy(&plan, o->voxel_color + at, src[slot]->voxel_color + from,
                                        (size_t)cnt * 4));
          at += cnt;
        }
      }
    }
    if (!plan_finish(&plan, ok, threads)) s = vx_error_set(err, VX_ERR_NOMEM, "out of memory");
    /* level P, copied whole (one run per tile): cleared where not kept */
    uint64_t at = o->level_first[P];
    for (uint32_t slot = 0; slot < 8 && s == VX_OK && P < W; slot++) {
      if (!(mask >> slot & 1u)) continue;
      clear_unkept(o->nodes + at, lo[slot][P], hi[slot][P], &kept[slot]);
      at += hi[slot][P] - lo[slot][P];
    }
  }
  for (uint32_t slot = 0; slot < 8; slot++) {
    vx_free(kept[slot].r);
    vx_free(work[slot].r);
  }
  if (s != VX_OK) {
    vx_arena_free(a);
    return s;
  }
  a->window = 1;
  for (int i = 0; i < 3; i++) a->origin[i] = origin[i];
  /* the re-signed voxels: found in the first arena of this window, kept */
  const uint64_t key = vx_morton_encode(origin[0] >> (W - 1), origin[1] >> (W - 1),
                                        origin[2] >> (W - 1));
  vx_rs_store *r = c->rs;
  if (!r) { /* a cache without a store: windows without re-signed voxels */
    if ((s = vx_octree_link(o, err)) != VX_OK) vx_arena_free(a);
    return s;
  }
  const rs_window *had = window_bits(r, key, P);
  if (had) {
    if ((s = vx_octree_link(o, err)) != VX_OK) {
      vx_arena_free(a);
      return s;
    }
    const size_t words = (size_t)((o->voxel_count + 31) / 32);
    if (had->bits && words) {
      a->resigned = (uint32_t *)vx_malloc(words * sizeof(uint32_t));
      if (!a->resigned) {
        vx_arena_free(a);
        return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
      }
      memcpy(a->resigned, had->bits, words * sizeof(uint32_t));
    }
    return VX_OK;
  }
  if ((s = arena_finish(a, threads, err)) != VX_OK) return s;
  if (r->nwin == r->capwin) {
    const size_t cap = r->capwin ? 2 * r->capwin : 16;
    rs_window *w = (rs_window *)vx_realloc(r->win, cap * sizeof *w);
    if (!w) {
      vx_arena_free(a);
      return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
    }
    r->win = w;
    r->capwin = cap;
  }
  uint32_t *bits = NULL;
  const size_t words = (size_t)((o->voxel_count + 31) / 32);
  if (a->resigned && words) {
    bits = (uint32_t *)vx_malloc(words * sizeof(uint32_t));
    if (!bits) {
      vx_arena_free(a);
      return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
    }
    memcpy(bits, a->resigned, words * sizeof(uint32_t));
  }
  r->win[r->nwin].key = key;
  r->win[r->nwin].level = P;
  r->win[r->nwin++].bits = bits;
  return VX_OK;
}

static uint64_t arena_bytes(const vx_arena *a) {
  return a->oct.node_count * sizeof(vx_node) + a->oct.voxel_count * sizeof(vx_voxel) +
         (a->oct.voxel_count + 31) / 32 * 4;
}

/* 1 when the windows kept pass the budget asked for, or without one, when the next window (as
 * large as the largest so far) would take the process past the default memory limit (where the
 * process's memory cannot be read: past VX_TILE_CACHE_DEFAULT). */
static int windows_over(const vx_tile_cache *c) {
  if (c->asked) return c->win_bytes > c->asked;
  const uint64_t rss = vx_resident_bytes();
  if (!rss) return c->win_bytes > VX_TILE_CACHE_DEFAULT;
  return rss + c->win_most > vx_default_mem_limit();
}

vx_status vx_tile_cache_window(vx_tile_cache *c, uint32_t W, const uint32_t origin[3],
                               const vx_window_keep *keep, int threads, const vx_arena **out,
                               vx_error *err) {
  const uint32_t level = keep_level(keep, W);
  const uint64_t key = vx_morton_encode(origin[0] >> (W - 1), origin[1] >> (W - 1),
                                        origin[2] >> (W - 1));
  for (int i = 0; i < c->nwin; i++)
    if (c->win[i].key == key && c->win[i].W == W && c->win[i].level == level) {
      c->win[i].used = ++c->clock;
      *out = &c->win[i].a;
      return VX_OK;
    }
  /* the least recently used out, down to 63 windows within the budget asked for */
  while (c->nwin == CACHE_WINDOWS || (c->nwin && windows_over(c))) {
    int v = 0;
    for (int i = 1; i < c->nwin; i++)
      if (c->win[i].used < c->win[v].used) v = i;
    c->win_bytes -= c->win[v].bytes;
    vx_gpu_resident_free(c->win[v].gpu);
    vx_arena_free(&c->win[v].a);
    c->win[v] = c->win[--c->nwin];
  }
  cached_window *w = &c->win[c->nwin];
  vx_status s = vx_arena_window(c, W, origin, keep, threads, &w->a, err);
  if (s != VX_OK) return s;
  w->gpu = NULL;
  w->W = W;
  w->level = level;
  w->key = key;
  w->used = ++c->clock;
  w->bytes = arena_bytes(&w->a);
  c->win_bytes += w->bytes;
  if (w->bytes > c->win_most) c->win_most = w->bytes;
  c->nwin++;
  *out = &w->a;
  return VX_OK;
}

/* Device memory left free by the windows kept on the GPU: a quarter of it, for the sampler's
 * buffers and whatever else the process or others run there. */
static uint64_t gpu_reserve(uint64_t total) { return total / 4u; }

void vx_tile_cache_set_gpu_budget(vx_tile_cache *c, uint64_t bytes) { c->gpu_budget = bytes; }

/* Bytes window a takes on the GPU (svo/gpu_tree.h: its nodes, voxels and colours). */
static uint64_t gpu_bytes(const vx_arena *a) {
  const vx_octree *o = &a->oct;
  return o->node_count * (sizeof(vx_node) + (o->node_color ? 4u : 0u)) +
         o->voxel_count * (sizeof(vx_voxel) + (o->voxel_color ? 4u : 0u));
}

vx_status vx_tile_cache_window_gpu(vx_tile_cache *c, const vx_arena *a,
                                   const vx_gpu_resident **out, vx_error *err) {
  *out = NULL;
  int i = 0;
  while (i < c->nwin && &c->win[i].a != a) i++;
  if (i == c->nwin)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "the arena is not a window of this tile cache");
  cached_window *w = &c->win[i];
  if (!w->gpu) {
    /* the least recently used windows leave the GPU while this one would pass the budget or eat
     * into the reserve */
    const uint64_t need = gpu_bytes(a);
    for (;;) {
      uint64_t free_b = 0, total_b = 0, held = 0;
      vx_status st = vx_gpu_memory(&free_b, &total_b, err);
      if (st != VX_OK) return st;
      for (int j = 0; j < c->nwin; j++) held += c->win[j].gpu ? gpu_bytes(&c->win[j].a) : 0;
      if (free_b >= need + gpu_reserve(total_b) && (!c->gpu_budget || held + need <= c->gpu_budget))
        break;
      int v = -1;
      for (int j = 0; j < c->nwin; j++)
        if (j != i && c->win[j].gpu && (v < 0 || c->win[j].used < c->win[v].used)) v = j;
      if (v < 0) break; /* none left to drop: the upload says whether it fits at all */
      vx_gpu_resident_free(c->win[v].gpu);
      c->win[v].gpu = NULL;
    }
    vx_status st = vx_gpu_resident_create(&a->oct, &w->gpu, err);
    if (st != VX_OK) return st;
  }
  *out = w->gpu;
  return VX_OK;
}

int vx_tile_cache_windows_on_gpu(const vx_tile_cache *c) {
  int n = 0;
  for (int i = 0; i < c->nwin; i++) n += c->win[i].gpu != NULL;
  return n;
}
