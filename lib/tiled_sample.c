/* SPDX-License-Identifier: Apache-2.0 */
/* tiled_sample.c - vx_tiled_file_sample (include/voxlod/sample.h, TILED SAMPLING): the sampler's
 * rule (sampler/sample_eval.h) on a tiled file, group of points by group of points, each in an
 * arena of the tiles within its reach (lib/tiled_arena.h).
 *
 * How the result stays the joined tree's (depth <= 14). The arena is the joined tree wherever it
 * has its tiles, in the same grid coordinates, so every step of the rule that reads only loaded
 * tiles gives the same bits. Steps 1 to 4 read the cells within the band of the point (the
 * descent, the near search: every cell they open lies within `band` of it); the arena of a group
 * holds every tile within band + 2 voxels of its points. The re-signed voxels of a tile are found
 * once, with its neighbours loaded (lib/tiled_arena.c), so every arena has them as the joined
 * tree has. Step 5's walks read cells along a line to the box's face, any number of tiles away: a
 * walk runs in the arena until it meets a tile that is not loaded (a root cut off from its
 * children, vx_se_walk_go's VX_SE_WALK_AWAIT), then waits and goes on in a later round, in an
 * arena of that tile, from the very cell and step count where it stopped. The walks of one point
 * run axis after axis and vote as vx_se_walk_sign does.
 * Past 16384^3 the arenas are windows of 2 x 2 x 2 tiles, each point in the one whose middle it
 * lies in; a walk that leaves a window (VX_SE_WALK_EXIT) goes on in the next one. A window of
 * 4096^3 or more keeps below cells of 256^3 only those near its middle (window_keep): each voxel
 * lies in the middles of 8 windows' boxes but near the middle of about one, so the windows copy
 * the tree about once, not 8 times. The search for a point of the middle stays within the band of
 * it; a walk that meets a cell not kept (VX_SE_WALK_AWAIT a level under them) goes on in the
 * window whose middle holds that cell, as from a window's face.
 */
#include "lib/tiled_arena.h"
#include "marcher/gpu_render.h"
#include "sampler/sampler.h"
#include "sampler/sample_span.h"
#include "sys/alloc.h"
#include "sys/sort.h"
#include "sys/system.h"

#include <math.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdlib.h>

#define TS_CHUNK 4096   /* points or walks a thread takes at a time, at most */
#define TS_CHUNK_MIN 64 /* ... and at least */

/* A walk of step 5 waiting for its arena. */
typedef struct ts_walk {
  uint64_t i;     /* the point */
  uint64_t need;  /* the tile (whole tree) or window it waits for */
  uint32_t x[3];  /* where it stands: a finest voxel of the whole tree */
  int32_t steps;
  int8_t axis, up, gave_up, fresh; /* fresh: the axis' walk starts at the point */
  float sum;
} ts_walk;

typedef struct ts_ctx {
  vx_tiled *t;
  const vx_tiled_header *h;
  uint32_t D, T, K, W; /* W: the windows' depth (0: whole-tree arenas) */
  uint32_t P;          /* windows keep below their level P only the cells near their middle */
  uint32_t cut;
  int threads;
  vx_tile_cache *cache;
  const float *points;
  float *dist, *grad;
  uint8_t *flags;
  vx_sample_tree whole; /* the whole tree's transform, for grid coordinates */
  vx_sample_span_fn span; /* the sampler's loop for this processor */
  int gpu;                /* steps 1 to 4 on the GPU, an arena at a time (walks on the CPU) */
  vx_gpu_sampler **gs;    /* gpu: the sampler moved from arena to arena (made by the first) */
  double origin[3], inv_scale;
} ts_ctx;

static void put(const ts_ctx *c, uint64_t i, float d, const float g[3], uint32_t fl) {
  c->dist[i] = d;
  if (c->grad) {
    c->grad[3 * i] = g[0];
    c->grad[3 * i + 1] = g[1];
    c->grad[3 * i + 2] = g[2];
  }
  if (c->flags) c->flags[i] = (uint8_t)fl;
}

/* ---- grouping --------------------------------------------------------------------------------- */

typedef struct ts_key {
  uint64_t key, i;
} ts_key;

/* The window (per axis index) whose middle half holds voxel coordinate v. */
static uint32_t window_of(const ts_ctx *c, double v) {
  const double half = (double)(1u << (c->W - 1));
  const double last = (double)(((uint64_t)1 << (c->D - c->W + 1)) - 2u);
  double k = floor((v - 0.5 * half) / half);
  k = k < 0.0 ? 0.0 : (k > last ? last : k);
  return (uint32_t)k;
}

/* Grid coordinates of point i in the whole tree, double (for grouping). */
static void grid_d(const ts_ctx *c, uint64_t i, double g[3]) {
  for (int k = 0; k < 3; k++)
    g[k] = ((double)c->points[3 * i + k] - c->origin[k]) * c->inv_scale;
}

/* ---- passes over points (threads) ------------------------------------------------------------- */

typedef struct ts_pass {
  const ts_ctx *c;
  const vx_arena *a;
  const vx_sample_tree *s;
  vx_sample_span span; /* search: the group's points gathered (sampler/sample_span.h) */
  vx_sample_span_fn fn;
  ts_walk *walks;      /* walks: the records */
  uint8_t *done;       /* walks: 1 finished, 0 waiting */
  uint64_t n, chunk;
  atomic_uint_fast64_t next;
} ts_pass;

static void *search_worker(void *arg) {
  ts_pass *ps = (ts_pass *)arg;
  uint64_t first = UINT64_MAX;
  for (;;) {
    const uint64_t k0 = atomic_fetch_add(&ps->next, ps->chunk);
    if (k0 >= ps->n) break;
    ps->fn(&ps->span, k0, k0 + ps->chunk < ps->n ? k0 + ps->chunk : ps->n, &first);
  }
  return NULL;
}

/* The window origin (finest voxels) holding finest voxel x. */
static void window_origin(const ts_ctx *c, const uint32_t x[3], uint32_t o[3]) {
  for (int k = 0; k < 3; k++) o[k] = window_of(c, (double)x[k] + 0.5) << (c->W - 1);
}

static uint64_t window_key(const uint32_t o[3], uint32_t W) {
  return vx_morton_encode(o[0] >> (W - 1), o[1] >> (W - 1), o[2] >> (W - 1));
}

/* The window whose middle holds point i (past 16384^3), where its walks start. */
static uint64_t home_of(const ts_ctx *c, uint64_t i) {
  double g[3];
  grid_d(c, i, g);
  uint32_t o[3];
  for (int k = 0; k < 3; k++) o[k] = window_of(c, g[k]) << (c->W - 1);
  return window_key(o, c->W);
}

/* The group of point i at grid point p (the whole tree's floats): its window, or its cell of the
 * grid of tiles (p clamped into the box). */
static uint64_t home_key(const ts_ctx *c, uint64_t i, const float p[3]) {
  if (c->W) return home_of(c, i);
  const float Rm = (float)((1u << c->D) - 1u);
  uint32_t x[3];
  for (int k = 0; k < 3; k++) x[k] = (uint32_t)vx_se_clamp(p[k], 0.0f, Rm) >> c->T;
  return vx_morton_encode(x[0], x[1], x[2]);
}

/* Carries walk r on in arena a (tree s): 1 when the point is answered, 0 when it waits (r->need
 * set). */
static int walk_on(const ts_ctx *c, const vx_arena *a, const vx_sample_tree *s, ts_walk *r) {
  const float *w = c->points + 3 * r->i;
  float p[3];
  vx_se_grid(s, w, p);
  uint32_t path[VX_MAX_DEPTH + 1];
  const uint32_t Rw = 1u << a->oct.depth;
  uint32_t open = 0;
  if (a->window)
    for (int k = 0; k < 3; k++) {
      open |= (a->origin[k] > 0u ? 1u : 0u) << (2 * k);
      open |= ((uint64_t)a->origin[k] + Rw < ((uint64_t)1 << c->D) ? 1u : 0u) << (2 * k + 1);
    }
  const uint32_t await = !a->window ? c->K + 1u : c->P ? c->P + 1u : 0xffffffffu;
  for (;;) {
    vx_se_walk wk;
    if (r->fresh) {
      if (a->window && home_of(c, r->i) != window_key(a->origin, c->W)) {
        r->need = home_of(c, r->i);
        return 0;
      }
      vx_se_walk_start(s, p, path, &wk);
    } else {
      for (int k = 0; k < 3; k++) wk.x[k] = r->x[k] - a->origin[k];
      path[0] = 0u;
      vx_se_find_from(s, wk.x, 0u, path, &wk.c);
      wk.steps = r->steps;
    }
    float sign = 1.0f;
    int unknown = 0;
    const int st = vx_se_walk_go(s, p, r->axis, r->up, path, &wk, await, open, &sign, &unknown);
    if (st != VX_SE_WALK_DONE) {
      r->fresh = 0;
      for (int k = 0; k < 3; k++) r->x[k] = wk.x[k] + a->origin[k]; /* wraps to origin - 1 */
      r->steps = wk.steps;
      if (st == VX_SE_WALK_AWAIT && !a->window) {
        r->need = wk.c.index - (uint32_t)a->oct.level_first[c->K];
      } else { /* out of the window, or into a part it did not keep: the window of that middle */
        uint32_t o[3];
        window_origin(c, r->x, o);
        r->need = window_key(o, c->W);
      }
      return 0;
    }
    r->gave_up += (int8_t)unknown;
    r->sum += unknown ? 0.0f : sign;
    if (vx_se_walk_decided(r->sum, r->axis)) {
      float g[3];
      uint32_t fl = 0;
      const float d = vx_se_far_value(s, r->sum < 0.0f ? -1.0f : 1.0f, r->gave_up == 3, g, &fl);
      put(c, r->i, d, g, fl);
      return 1;
    }
    r->axis++;
    if (a->window) {
      double gd[3];
      grid_d(c, r->i, gd);
      const double R = (double)((uint64_t)1 << c->D);
      r->up = (int8_t)(R - gd[r->axis] < gd[r->axis]);
    } else {
      r->up = (int8_t)vx_se_walk_up((float)(1u << c->D), p, r->axis);
    }
    r->fresh = 1;
  }
}

static void *walk_worker(void *arg) {
  ts_pass *ps = (ts_pass *)arg;
  for (;;) {
    const uint64_t k0 = atomic_fetch_add(&ps->next, ps->chunk);
    if (k0 >= ps->n) break;
    const uint64_t k1 = k0 + ps->chunk < ps->n ? k0 + ps->chunk : ps->n;
    for (uint64_t k = k0; k < k1; k++)
      ps->done[k] = (uint8_t)walk_on(ps->c, ps->a, ps->s, &ps->walks[k]);
  }
  return NULL;
}

/* fn over items [0, n) on the threads, in chunks small enough for a few per thread. */
static void run_pass(ts_pass *ps, int threads, void *(*fn)(void *)) {
  atomic_init(&ps->next, 0);
  const int nt = vx_thread_count(threads, 256);
  uint64_t chunk = ps->n / (8u * (uint64_t)nt);
  ps->chunk = chunk < TS_CHUNK_MIN ? TS_CHUNK_MIN : (chunk > TS_CHUNK ? TS_CHUNK : chunk);
  const uint64_t chunks = (ps->n + ps->chunk - 1) / ps->chunk;
  vx_parallel(chunks < (uint64_t)nt ? (int)(chunks ? chunks : 1) : nt, fn, ps);
}

/* The sampler's view of arena a cut at c->cut (every level counted as loaded, voxels or not). */
static void arena_tree(const ts_ctx *c, const vx_arena *a, vx_sample_tree *s) {
  const uint32_t depth = a->oct.depth;
  const uint32_t cut = a->window ? c->cut - (c->D - depth) : c->cut;
  vx_sample_tree_init(s, &a->oct, cut);
  s->levels = depth + 1u;
  s->cut = cut;
  s->resigned = a->resigned;
}

/* ---- the walk queue --------------------------------------------------------------------------- */

typedef struct ts_queue {
  ts_walk *w;
  size_t n, cap;
} ts_queue;

static vx_status queue_add(ts_queue *q, const ts_walk *w, vx_error *err) {
  if (q->n == q->cap) {
    size_t cap = q->cap ? 2 * q->cap : 1024;
    ts_walk *nw = (ts_walk *)vx_realloc(q->w, cap * sizeof *nw);
    if (!nw) return vx_error_set(err, VX_ERR_NOMEM, "out of memory for the sign walks");
    q->w = nw;
    q->cap = cap;
  }
  q->w[q->n++] = *w;
  return VX_OK;
}

/* Runs walks w[0 .. n-1] in arena a; those left waiting go to q. */
static vx_status walk_group(const ts_ctx *c, const vx_arena *a, ts_walk *w, uint64_t n,
                            ts_queue *q, vx_error *err) {
  if (!n) return VX_OK;
  vx_sample_tree s;
  arena_tree(c, a, &s);
  uint8_t *done = (uint8_t *)vx_malloc((size_t)n);
  if (!done) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  ts_pass ps;
  memset(&ps, 0, sizeof ps);
  ps.c = c;
  ps.a = a;
  ps.s = &s;
  ps.walks = w;
  ps.done = done;
  ps.n = n;
  run_pass(&ps, c->threads, walk_worker);
  vx_status st = VX_OK;
  for (uint64_t k = 0; k < n && st == VX_OK; k++)
    if (!done[k]) st = queue_add(q, &w[k], err);
  vx_free(done);
  return st;
}

/* ---- arenas ----------------------------------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b) {
  const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* The tiles an arena over the box of tile cells [lo, hi] (inclusive) loads: every tile there, but
 * at a cut at or above the tiles only those whose root has no plane (the others end there). */
static vx_status tiles_in(const ts_ctx *c, const uint32_t lo[3], const uint32_t hi[3],
                          uint64_t **out, size_t *n, vx_error *err) {
  const uint64_t cnt = (uint64_t)(hi[0] - lo[0] + 1) * (hi[1] - lo[1] + 1) * (hi[2] - lo[2] + 1);
  uint64_t *v = (uint64_t *)vx_malloc((size_t)cnt * sizeof *v);
  *out = v;
  *n = 0;
  if (!v) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  const vx_octree *top = vx_tiled_top(c->t);
  size_t m = 0;
  for (uint32_t z = lo[2]; z <= hi[2]; z++)
    for (uint32_t y = lo[1]; y <= hi[1]; y++)
      for (uint32_t x = lo[0]; x <= hi[0]; x++) {
        const uint64_t ti = vx_tiled_find_tile(c->t, x, y, z);
        if (ti == UINT64_MAX) continue;
        const uint32_t info = top->nodes[top->level_first[c->K] + ti].info;
        if (c->cut <= c->K && (vx_node_flags(info) & VX_NODE_PLANE_OK)) continue;
        v[m++] = ti;
      }
  qsort(v, m, sizeof *v, cmp_u64);
  *n = m;
  return VX_OK;
}

/* The tile cells within r voxels of grid point p (clamped to the grid), per axis. */
static void reach_cells(const ts_ctx *c, const float p[3], float r, uint32_t lo[3], uint32_t hi[3]) {
  const float Rm = (float)((1u << c->D) - 1u);
  for (int k = 0; k < 3; k++) {
    lo[k] = (uint32_t)vx_se_clamp(p[k] - r, 0.0f, Rm) >> c->T;
    hi[k] = (uint32_t)vx_se_clamp(p[k] + r, 0.0f, Rm) >> c->T;
  }
}

/* Steps 1 to 4 of n points (gathered) in arena a on the GPU: the arena on the device (a window's
 * copy kept with it in the tile cache, for the next groups and calls; a whole-tree arena, made
 * for this group, uploaded and freed), the call's sampler moved onto it (its streams, queues and
 * staging made once per call), which leaves the far points' walks (flags VX_SE_PENDING). */
static vx_status search_gpu(const ts_ctx *c, const vx_arena *a, const vx_sample_tree *s,
                            const float *pts, uint64_t n, float *d, float *g, uint8_t *f,
                            vx_error *err) {
  vx_gpu_resident *own = NULL;
  const vx_gpu_resident *res = NULL;
  vx_status st = a->window ? vx_tile_cache_window_gpu(c->cache, a, &res, err)
                           : vx_gpu_resident_create(&a->oct, &own, err);
  if (own) res = own;
  if (st == VX_OK)
    st = *c->gs ? vx_gpu_sampler_rebind(*c->gs, res, a->resigned, a->oct.voxel_count, err)
                : vx_gpu_sampler_create(res, a->resigned, a->oct.voxel_count, c->gs, err);
  if (st == VX_OK) {
    vx_gpu_sampler_set_walks(*c->gs, 0);
    st = vx_gpu_sample(*c->gs, s, 0, NULL, pts, n, d, g, f, NULL, NULL, err);
  }
  vx_gpu_resident_free(own); /* the sampler holds it no more: the next arena rebinds it */
  return st;
}

/* Samples the group's points keys[0 .. n-1] in arena a (tree s) up to their sign walks: the points
 * answered are written out, the others (far ones inside the box) become walks into *walks
 * (*nw of them, vx_calloc'ed), starting along x (up: towards the nearer face). */
static vx_status search_group(const ts_ctx *c, const vx_arena *a, const vx_sample_tree *s,
                              const ts_key *keys, uint64_t n, ts_walk **walks, uint64_t *nw,
                              vx_error *err) {
  *walks = NULL;
  *nw = 0;
  float *pts = (float *)vx_malloc((size_t)n * 3 * sizeof(float));
  float *d = (float *)vx_malloc((size_t)n * sizeof(float));
  float *g = c->grad ? (float *)vx_malloc((size_t)n * 3 * sizeof(float)) : NULL;
  uint8_t *f = (uint8_t *)vx_malloc((size_t)n);
  vx_status st = VX_OK;
  if (!pts || !d || !f || (c->grad && !g))
    st = vx_error_set(err, VX_ERR_NOMEM, "out of memory for %llu points",
                      (unsigned long long)n);
  if (st == VX_OK)
    for (uint64_t k = 0; k < n; k++) memcpy(pts + 3 * k, c->points + 3 * keys[k].i, 12);
  if (st == VX_OK && c->gpu) /* the arena uploaded, the rule to the walks on the device */
    st = search_gpu(c, a, s, pts, n, d, g, f, err);
  else if (st == VX_OK) {
    ts_pass ps;
    memset(&ps, 0, sizeof ps);
    ps.c = c;
    ps.s = s;
    ps.span.s = s;
    ps.span.points = pts;
    ps.span.dist = d;
    ps.span.grad = g;
    ps.span.flags = f;
    ps.span.run = VX_SE_RUN_SEARCH;
    ps.fn = c->span;
    ps.n = n;
    run_pass(&ps, c->threads, search_worker);
  }
  if (st == VX_OK) {
    uint64_t m = 0;
    for (uint64_t k = 0; k < n; k++) m += f[k] == VX_SE_PENDING;
    ts_walk *w = m ? (ts_walk *)vx_calloc((size_t)m, sizeof *w) : NULL;
    if (m && !w) st = vx_error_set(err, VX_ERR_NOMEM, "out of memory for the sign walks");
    const float zero[3] = {0.0f, 0.0f, 0.0f};
    const double R = (double)((uint64_t)1 << c->D);
    for (uint64_t k = 0, j = 0; k < n && st == VX_OK; k++) {
      const uint64_t i = keys[k].i;
      if (f[k] != VX_SE_PENDING) {
        put(c, i, d[k], g ? g + 3 * k : zero, f[k]);
        continue;
      }
      w[j].i = i;
      w[j].fresh = 1;
      if (c->W) {
        double gd[3];
        grid_d(c, i, gd);
        w[j].up = (int8_t)(R - gd[0] < gd[0]);
      } else {
        float p[3];
        vx_se_grid(s, c->points + 3 * i, p);
        w[j].up = (int8_t)vx_se_walk_up((float)R, p, 0);
      }
      j++;
    }
    if (st == VX_OK) {
      *walks = w;
      *nw = m;
    } else {
      vx_free(w);
    }
  }
  vx_free(pts);
  vx_free(d);
  vx_free(g);
  vx_free(f);
  return st;
}

/* Samples group keys[0 .. n-1] (whole tree) and starts its points' walks; walks left waiting go
 * to q. */
static vx_status group_whole(const ts_ctx *c, const ts_key *keys, uint64_t n, ts_queue *q,
                             vx_error *err) {
  const float r = ceilf(c->h->band) + 2.0f;
  uint32_t lo[3] = {UINT32_MAX, UINT32_MAX, UINT32_MAX}, hi[3] = {0, 0, 0};
  for (uint64_t k = 0; k < n; k++) {
    float p[3];
    uint32_t a[3], b[3];
    vx_se_grid(&c->whole, c->points + 3 * keys[k].i, p);
    reach_cells(c, p, r, a, b);
    for (int d = 0; d < 3; d++) {
      lo[d] = a[d] < lo[d] ? a[d] : lo[d];
      hi[d] = b[d] > hi[d] ? b[d] : hi[d];
    }
  }
  uint64_t *tiles = NULL;
  size_t nt = 0;
  vx_status st = tiles_in(c, lo, hi, &tiles, &nt, err);
  vx_arena a;
  memset(&a, 0, sizeof a);
  if (st == VX_OK) st = vx_arena_whole(c->cache, tiles, nt, c->cut, c->threads, &a, err);
  ts_walk *w = NULL;
  uint64_t nw = 0;
  if (st == VX_OK) {
    vx_sample_tree s;
    arena_tree(c, &a, &s);
    st = search_group(c, &a, &s, keys, n, &w, &nw, err);
  }
  if (st == VX_OK) st = walk_group(c, &a, w, nw, q, err);
  vx_free(w);
  vx_free(tiles);
  vx_arena_free(&a);
  return st;
}

/* What window (x, y, z) (its index per axis) keeps: below level P, the cells within
 * WINDOW_MARGIN voxels of its middle (where window_of puts its points), band included. */
#define WINDOW_MARGIN 128u
static void window_keep(const ts_ctx *c, const uint32_t k[3], vx_window_keep *keep) {
  const uint64_t m = WINDOW_MARGIN + (uint64_t)ceilf(c->h->band);
  keep->level = c->P;
  for (int i = 0; i < 3; i++) {
    uint64_t lo, hi;
    vx_window_middle(c->D, c->W, k[i], &lo, &hi);
    keep->lo[i] = lo > m ? lo - m : 0;
    keep->hi[i] = hi + m;
  }
}

/* Window `key` (its arena built, or kept with the file's tile cache from before: the walks come
 * back to the windows they left, the next call to the same windows); valid until the next call. */
static vx_status window_get(const ts_ctx *c, uint64_t key, const vx_arena **out, vx_error *err) {
  uint32_t o[3];
  vx_morton_decode(key, &o[0], &o[1], &o[2]);
  vx_window_keep keep;
  window_keep(c, o, &keep);
  for (int k = 0; k < 3; k++) o[k] <<= c->W - 1;
  return vx_tile_cache_window(c->cache, c->W, o, c->P ? &keep : NULL, c->threads, out, err);
}

/* Decoded bytes of tile i, from the index. */
static uint64_t tile_bytes(const ts_ctx *c, uint64_t i) {
  const vx_tile_entry *e = vx_tiled_tile(c->t, i);
  return e->nodes * sizeof(vx_node) + e->voxels * sizeof(vx_voxel);
}

static int cmp_desc_u64(const void *a, const void *b) {
  const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x > y ? -1 : x < y;
}

/* The tiles of the windows of keys[0 .. m-1] (sorted) decoded side by side before the first of
 * them is built, when they fit in the budget or in what one window may hold at once anyway (the 8
 * largest): else each is read when a window first needs it. */
static vx_status prefetch_windows(const ts_ctx *c, const char *path, const ts_key *keys,
                                  uint64_t m, uint64_t budget, vx_error *err) {
  uint64_t nw = 0;
  for (uint64_t k = 0; k < m; k++) nw += k == 0 || keys[k].key != keys[k - 1].key;
  if (nw > ((uint64_t)1 << 24)) return VX_OK; /* too many to list: read as needed */
  uint64_t *tiles = (uint64_t *)vx_malloc((size_t)(8 * nw + 1) * sizeof *tiles);
  if (!tiles) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  const uint64_t half = (uint64_t)1 << (c->W - 1), R = (uint64_t)1 << c->D;
  size_t n = 0;
  for (uint64_t k = 0; k < m; k++) {
    if (k && keys[k].key == keys[k - 1].key) continue;
    uint32_t o[3];
    vx_morton_decode(keys[k].key, &o[0], &o[1], &o[2]);
    for (uint32_t slot = 0; slot < 8; slot++) {
      uint64_t g[3];
      int inside = 1;
      for (int i = 0; i < 3; i++) {
        g[i] = (uint64_t)o[i] * half + (uint64_t)(slot >> i & 1u) * half;
        inside &= g[i] < R;
      }
      const uint64_t ti = inside ? vx_tiled_find_tile(c->t, (uint32_t)(g[0] >> c->T),
                                                      (uint32_t)(g[1] >> c->T),
                                                      (uint32_t)(g[2] >> c->T))
                                 : UINT64_MAX;
      if (ti != UINT64_MAX) tiles[n++] = ti;
    }
  }
  qsort(tiles, n, sizeof *tiles, cmp_u64);
  size_t u = 0;
  for (size_t i = 0; i < n; i++)
    if (!u || tiles[i] != tiles[u - 1]) tiles[u++] = tiles[i];
  uint64_t *bytes = (uint64_t *)vx_malloc((u ? u : 1) * sizeof *bytes);
  vx_status st = bytes ? VX_OK : vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  if (st == VX_OK) {
    uint64_t all = 0, most = 0;
    for (size_t i = 0; i < u; i++) all += bytes[i] = tile_bytes(c, tiles[i]);
    qsort(bytes, u, sizeof *bytes, cmp_desc_u64);
    for (size_t i = 0; i < u && i < 8; i++) most += bytes[i];
    if (all <= (budget > most ? budget : most))
      st = vx_tile_cache_prefetch(c->cache, path, tiles, u, c->threads, err);
  }
  vx_free(bytes);
  vx_free(tiles);
  return st;
}

/* The same for group keys[0 .. n-1] of one window. */
static vx_status group_window(const ts_ctx *c, const ts_key *keys, uint64_t n, ts_queue *q,
                              vx_error *err) {
  const vx_arena *a = NULL;
  vx_status st = window_get(c, keys[0].key, &a, err);
  if (st != VX_OK) return st;
  ts_walk *w = NULL;
  uint64_t nw = 0;
  vx_sample_tree s;
  arena_tree(c, a, &s);
  st = search_group(c, a, &s, keys, n, &w, &nw, err);
  if (st == VX_OK) st = walk_group(c, a, w, nw, q, err);
  vx_free(w);
  return st;
}

/* The walks that wait, round after round, each group in the arena it waits for. */
static vx_status walk_rounds(const ts_ctx *c, ts_queue *q, vx_error *err) {
  vx_status st = VX_OK;
  while (q->n && st == VX_OK) {
    ts_queue cur = *q;
    memset(q, 0, sizeof *q);
    uint64_t top = 0;
    for (size_t k = 0; k < cur.n; k++) top = cur.w[k].need > top ? cur.w[k].need : top;
    ts_walk *tmp = (ts_walk *)vx_malloc(cur.n * sizeof *tmp);
    if (!tmp) {
      vx_free(cur.w);
      return vx_error_set(err, VX_ERR_NOMEM, "out of memory for the sign walks");
    }
    ts_walk *sorted = (ts_walk *)vx_radix_sort(cur.w, tmp, cur.n, sizeof *tmp,
                                               offsetof(ts_walk, need), vx_radix_bits(top), 1);
    vx_free(sorted == tmp ? cur.w : tmp);
    cur.w = sorted;
    for (size_t g0 = 0; g0 < cur.n && st == VX_OK;) {
      size_t g1 = g0 + 1;
      while (g1 < cur.n && cur.w[g1].need == cur.w[g0].need) g1++;
      vx_arena a;
      memset(&a, 0, sizeof a);
      const uint64_t need = cur.w[g0].need;
      if (c->W) {
        const vx_arena *wa = NULL;
        st = window_get(c, need, &wa, err);
        if (st == VX_OK) st = walk_group(c, wa, cur.w + g0, g1 - g0, q, err);
        g0 = g1;
        continue;
      } else {
        /* the tile alone (its re-signed voxels are the store's, found with its neighbours) */
        st = vx_arena_whole(c->cache, &need, 1, c->cut, c->threads, &a, err);
      }
      if (st == VX_OK) st = walk_group(c, &a, cur.w + g0, g1 - g0, q, err);
      vx_arena_free(&a);
      g0 = g1;
    }
    vx_free(cur.w);
  }
  return st;
}

/* ---- the call --------------------------------------------------------------------------------- */

static vx_status check_opts(const vx_tiled_header *h, const vx_sample_opts *o, uint32_t *cut,
                            vx_error *err) {
  vx_status s = vx_sample_opts_check(o, h->depth, cut, err);
  if (s == VX_OK && o->band_cache != 0)
    s = vx_error_set(err, VX_ERR_INVALID_ARG,
                     "the band cache is not available for a tiled file (band_cache must be 0)");
  return s;
}

/* Past 16384^3 at a cut at or above the tiles: the top tree alone, as a tree of depth K + 1 whose
 * finest cells are half tiles (on the CPU, or the GPU). */
static vx_status sample_top(const ts_ctx *c, const float *points, uint64_t n,
                            vx_sample_count *cnt, vx_error *err) {
  vx_octree v = *vx_tiled_top(c->t);
  const double k = ldexp(1.0, (int)c->T - 1);
  v.xf.scale = c->h->xf.scale * k;
  v.band = (float)((double)c->h->band / k);
  vx_sample_tree s;
  vx_sample_tree_init(&s, &v, c->cut);
  if (!c->gpu) {
    vx_sample_cpu(&s, points, n, c->dist, c->grad, c->flags, c->threads, cnt);
    return VX_OK;
  }
  vx_gpu_view *view = NULL;
  vx_gpu_sampler *gs = NULL;
  vx_status st = vx_gpu_view_create(&v, &view, err);
  if (st == VX_OK) st = vx_gpu_sampler_create(vx_gpu_view_resident(view), NULL, 0, &gs, err);
  if (st == VX_OK)
    st = vx_gpu_sample(gs, &s, 0, NULL, points, n, c->dist, c->grad, c->flags, cnt, NULL, err);
  vx_gpu_sampler_free(gs);
  vx_gpu_view_free(view);
  return st;
}

vx_status vx_tiled_file_sample(vx_tiled_file *f, const vx_sample_opts *opts,
                               const vx_tiled_sample_opts *tiles, const float *points,
                               uint64_t n, float *dist, float *grad, uint8_t *flags,
                               vx_sample_stats *stats, vx_error *err) {
  const double t0 = vx_clock_seconds();
  if (!f) return vx_error_set(err, VX_ERR_INVALID_ARG, "no tiled file");
  vx_sample_opts o;
  vx_tiled_sample_opts to;
  vx_status st = VX_OPTS_IN(o, opts, err);
  if (st == VX_OK) st = VX_OPTS_IN(to, tiles, err);
  if (st != VX_OK) return st;
  ts_ctx c;
  memset(&c, 0, sizeof c);
  vx_svo_read_opts ro;
  c.t = vx_tiled_file_reader(f, &ro);
  c.h = vx_tiled_get_header(c.t);
  c.D = c.h->depth;
  c.T = c.h->tile_depth;
  c.K = c.D - c.T;
  if ((st = check_opts(c.h, &o, &c.cut, err)) != VX_OK) return st;
  if (n > (uint64_t)SIZE_MAX / (3 * sizeof(float)) || n > (uint64_t)SIZE_MAX / sizeof(ts_key))
    return vx_error_set(err, VX_ERR_LIMIT, "%llu points do not fit in memory",
                        (unsigned long long)n);
  if (n && (!points || !dist))
    return vx_error_set(err, VX_ERR_INVALID_ARG, "no points or no memory for the distances");
  vx_octree whole;
  memset(&whole, 0, sizeof whole);
  whole.depth = c.D;
  whole.xf = c.h->xf;
  whole.band = c.h->band;
  if ((st = vx_octree_check_world(&whole, VX_WORLD_FLOAT, err)) != VX_OK) return st;
  if (c.D > VX_MAX_DEPTH) {
    c.W = c.T + 1u < VX_MAX_DEPTH ? c.T + 1u : VX_MAX_DEPTH;
    if ((float)(1u << (c.W - 2u)) < ceilf(c.h->band) + 2.0f)
      return vx_error_set(err, VX_ERR_INVALID_ARG,
                          "tiles of %u^3 are too small to sample a %u^3 tiled tree with a band of "
                          "%g voxels tile by tile (they must be at least %g voxels wide)",
                          1u << c.T, 1u << c.D, (double)c.h->band,
                          2.0 * (double)(ceilf(c.h->band) + 2.0f));
  }
  /* Windows of 4096^3 or more keep below cells of 256^3 only those near their middle, when the
   * cut reaches below them (a sign walk pauses a level under them). */
  if (c.W >= 12u && c.cut > c.D - c.W + (c.W - 8u)) c.P = c.W - 8u;
  c.threads = o.threads;
  c.gpu = o.device == VX_DEVICE_GPU;
  vx_gpu_sampler *gs = NULL;
  c.gs = &gs;
  c.span = vx_sample_span_pick();
  c.points = points;
  c.dist = dist;
  c.grad = grad;
  c.flags = flags;
  c.whole.depth = c.D;
  for (int k = 0; k < 3; k++) {
    c.whole.origin[k] = (float)c.h->xf.origin[k];
    c.origin[k] = c.h->xf.origin[k];
  }
  c.whole.scale = (float)c.h->xf.scale;
  c.whole.inv_scale = (float)(1.0 / c.h->xf.scale);
  c.inv_scale = 1.0 / c.h->xf.scale;
  vx_sample_count cnt;
  memset(&cnt, 0, sizeof cnt);
  cnt.first_invalid = UINT64_MAX;
  const double tk = vx_clock_seconds();
  if (c.W && c.cut <= c.K) {
    st = sample_top(&c, points, n, &cnt, err);
  } else if (n) {
    st = vx_tiled_file_cache(f, to.cache_bytes, &c.cache, err); /* 0: auto (tiled_arena.h) */
    ts_key *keys = st == VX_OK ? (ts_key *)vx_malloc((size_t)n * sizeof *keys) : NULL;
    if (st == VX_OK && !keys) st = vx_error_set(err, VX_ERR_NOMEM, "out of memory for the "
                                                "order of %llu points", (unsigned long long)n);
    uint64_t m = 0;
    for (uint64_t i = 0; i < n && st == VX_OK; i++) {
      float p[3];
      if (!vx_se_grid(&c.whole, points + 3 * i, p)) {
        const float g[3] = {NAN, NAN, NAN};
        put(&c, i, NAN, g, VX_SAMPLE_INVALID);
        if (!cnt.invalid) cnt.first_invalid = i;
        cnt.invalid++;
        continue;
      }
      keys[m].i = i;
      keys[m].key = home_key(&c, i, p);
      m++;
    }
    ts_key *sorted = keys, *tmp = NULL;
    if (st == VX_OK && m > 1) { /* by group, in the points' order within one */
      tmp = (ts_key *)vx_malloc((size_t)m * sizeof *tmp);
      if (!tmp) {
        st = vx_error_set(err, VX_ERR_NOMEM, "out of memory for the order of %llu points",
                          (unsigned long long)m);
      } else {
        uint64_t top = 0;
        for (uint64_t k = 0; k < m; k++) top = keys[k].key > top ? keys[k].key : top;
        sorted = (ts_key *)vx_radix_sort(keys, tmp, m, sizeof *keys, offsetof(ts_key, key),
                                         vx_radix_bits(top), 1);
      }
    }
    if (st == VX_OK && c.W)
      st = prefetch_windows(&c, vx_tiled_file_path(f), sorted, m,
                            to.cache_bytes ? to.cache_bytes : VX_TILE_CACHE_DEFAULT, err);
    ts_queue q;
    memset(&q, 0, sizeof q);
    for (uint64_t g0 = 0; g0 < m && st == VX_OK;) {
      uint64_t g1 = g0 + 1;
      while (g1 < m && sorted[g1].key == sorted[g0].key) g1++;
      st = c.W ? group_window(&c, sorted + g0, g1 - g0, &q, err)
               : group_whole(&c, sorted + g0, g1 - g0, &q, err);
      g0 = g1;
    }
    vx_free(tmp == sorted ? keys : tmp);
    if (st == VX_OK) st = walk_rounds(&c, &q, err);
    vx_free(q.w);
    vx_free(sorted);
    vx_gpu_sampler_free(gs);
  }
  if (st != VX_OK) return st;
  if (stats) {
    vx_sample_stats s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    s.used_gpu = c.gpu;
    s.points = n;
    s.invalid = cnt.invalid;
    s.ms_total = (vx_clock_seconds() - t0) * 1e3;
    s.ms_kernel = (vx_clock_seconds() - tk) * 1e3;
    VX_STATS_OUT(stats, s);
  }
  if (o.nonfinite == VX_NONFINITE_FAIL && cnt.invalid)
    return vx_error_set(err, VX_ERR_INVALID_ARG,
                        "point %llu has a NaN or infinite coordinate, or one so far out that its "
                        "grid coordinate overflows single precision (%llu such points)",
                        (unsigned long long)cnt.first_invalid, (unsigned long long)cnt.invalid);
  return VX_OK;
}
