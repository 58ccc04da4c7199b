/* SPDX-License-Identifier: Apache-2.0 */
/* color_query.c - the colour of a tree at world points (color_query.h).
 *
 * For each point: the cell of level L that contains it, a pruned leaf above L standing for every
 * cell of its subtree; else the nearest existing cell of level L whose Chebyshev distance from
 * the point's cell is at most r = ceil(band / s) cells (s: a level-L cell's size in finest
 * voxels, so r cells span at least the band), nearest by the Euclidean distance between the cell
 * centres, ties to the smaller Morton code; else 0 0 0 0. Containment is the distance-0 case of
 * the same search.
 *
 * The search is a branch and bound over the tree: a node's box (in level-L cells) is skipped when
 * it lies farther than r (Chebyshev) or farther than the best cell found so far (Euclidean), so
 * a point costs a few root-to-leaf descents whatever the band. Within a pruned leaf's box the
 * nearest level-L cell is the point's cell clamped into the box (unique: the distance is minimal
 * per axis), and that cell takes the leaf's colour.
 *
 * A split tree (a tiled file's top tree, whose cells of one level are the roots of subtrees read
 * on their own) is searched the same way: at that level the search goes on in the cell's
 * subtree, its cells still in the whole tree's coordinates, so the cells offered and their order
 * are those of the tree joined from the same parts.
 *
 * Points are independent: large batches run on the cores in chunks (the result does not depend
 * on how many threads run), in Morton order of their cells so that neighbouring points search
 * the same nodes one after the other (it does not depend on the order either).
 */
#include "svo/color_query.h"
#include "sys/alloc.h"
#include "sys/sort.h"
#include "sys/system.h"

#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define CHUNK 4096u /* points a thread takes at a time */
#define ORDER_MIN 16384u           /* from this many points on, they run in the order of their cells */
#define ORDER_WINDOW (1u << 22)    /* ... sorted that many at a time */
#define ORDER_LEVEL 8u             /* ... the cells of this level (or L, when coarser) */

typedef struct order_key { /* a point's place in the order */
  uint64_t key;            /* Morton code of its cell */
  uint64_t i;              /* the point */
} order_key;

typedef struct search {
  const vx_octree *o;        /* the tree searched from its root (the top tree of a split one) */
  const vx_color_split *sp;  /* NULL: o is whole */
  uint32_t L;                /* the level searched */
  int64_t c[3];              /* the point's cell at level L (may lie outside the grid) */
  int64_t r;                 /* Chebyshev radius in level-L cells */
  uint64_t best_d2, best_m;  /* squared distance and Morton code of the best cell so far */
  uint32_t best_color;
  int found;
} search;

/* Distance from coordinate c to the interval [lo, hi]. */
static int64_t axis_gap(int64_t c, int64_t lo, int64_t hi) {
  return c < lo ? lo - c : c > hi ? c - hi : 0;
}

static int64_t clamp64(int64_t c, int64_t lo, int64_t hi) { return c < lo ? lo : c > hi ? hi : c; }

/* A cell of level L at q (a candidate): keep it when it beats the best. */
static void offer(search *s, const int64_t q[3], uint32_t color) {
  uint64_t d2 = 0;
  for (int a = 0; a < 3; a++) {
    int64_t d = q[a] - s->c[a];
    d2 += (uint64_t)(d * d);
  }
  uint64_t m = vx_morton_encode((uint32_t)q[0], (uint32_t)q[1], (uint32_t)q[2]);
  if (!s->found || d2 < s->best_d2 || (d2 == s->best_d2 && m < s->best_m)) {
    s->found = 1;
    s->best_d2 = d2;
    s->best_m = m;
    s->best_color = color;
  }
}

/* Node `idx` of tree o, whose root is a cell of level k0 of the whole tree: the node of level k
 * (nodes[] above o's depth, voxels[] at it) at cell p (level-k coordinates of the whole tree). */
static void visit(search *s, const vx_octree *o, uint32_t k0, uint64_t idx, uint32_t k,
                  const uint32_t p[3]) {
  const uint32_t shift = s->L - k;
  int64_t lo[3], hi[3], gap2 = 0, cheb = 0;
  for (int a = 0; a < 3; a++) {
    lo[a] = (int64_t)p[a] << shift;
    hi[a] = lo[a] + ((int64_t)1 << shift) - 1;
    int64_t g = axis_gap(s->c[a], lo[a], hi[a]);
    if (g > cheb) cheb = g;
    gap2 += g * g;
  }
  if (cheb > s->r || (s->found && (uint64_t)gap2 > s->best_d2)) return;
  if (k == s->L) {
    int64_t q[3] = {lo[0], lo[1], lo[2]};
    offer(s, q, k - k0 < o->depth ? o->node_color[idx] : o->voxel_color[idx]);
    return;
  }
  const vx_node *nd = &o->nodes[idx];
  uint32_t mask = vx_node_mask(nd->info);
  if (mask == 0) { /* a pruned leaf: every cell of its box has its colour; the nearest is unique */
    int64_t q[3];
    for (int a = 0; a < 3; a++) q[a] = clamp64(s->c[a], lo[a], hi[a]);
    offer(s, q, o->node_color[idx]);
    return;
  }
  if (s->sp && k0 == 0 && k == s->sp->level) { /* a subtree's root: on in the subtree */
    const vx_octree *sub = s->sp->subtree(s->sp->ctx, p);
    if (sub) visit(s, sub, k, 0, k, p);
    return;
  }
  /* Children nearest first (by their box's distance), so that the bound tightens early. */
  uint32_t order[8], n = 0;
  int64_t key[8];
  const int64_t half = (int64_t)1 << (shift - 1);
  for (uint32_t slot = 0; slot < 8; slot++) {
    if (!(mask >> slot & 1u)) continue;
    int64_t g2 = 0, gmax = 0;
    for (int a = 0; a < 3; a++) {
      int64_t l0 = lo[a] + ((slot >> a & 1u) ? half : 0);
      int64_t g = axis_gap(s->c[a], l0, l0 + half - 1);
      g2 += g * g;
      if (g > gmax) gmax = g;
    }
    if (gmax > s->r) continue; /* beyond the radius */
    uint32_t j = n++;
    for (; j > 0 && key[j - 1] > g2; j--) {
      key[j] = key[j - 1];
      order[j] = order[j - 1];
    }
    key[j] = g2;
    order[j] = slot;
  }
  for (uint32_t i = 0; i < n; i++) {
    if (s->found && (uint64_t)key[i] > s->best_d2) break; /* this and the rest are farther */
    uint32_t slot = order[i];
    uint32_t q[3] = {2 * p[0] + (slot & 1u), 2 * p[1] + (slot >> 1 & 1u), 2 * p[2] + (slot >> 2 & 1u)};
    uint64_t child = (uint64_t)nd->child + vx_popcount8(mask & ((1u << slot) - 1u));
    visit(s, o, k0, child, k + 1, q);
  }
}

/* The colours of points [lo, hi) (order: of order[lo .. hi)'s points, NULL: of those points). */
static void colors_of(search s, const float *points, const order_key *order, uint64_t lo,
                      uint64_t hi, uint8_t *rgba) {
  const vx_octree *o = s.o;
  const double cell = o->xf.scale * (double)((uint64_t)1 << (o->depth - s.L)); /* world units */
  const double cells = (double)((uint64_t)1 << s.L);
  for (uint64_t k = lo; k < hi; k++) {
    const uint64_t i = order ? order[k].i : k;
    uint32_t color = 0;
    int ok = 1;
    for (int a = 0; a < 3 && ok; a++) {
      double g = floor(((double)points[3 * i + a] - o->xf.origin[a]) / cell);
      ok = g == g && g >= -(double)s.r - 1.0 && g <= cells + (double)s.r;
      if (ok) s.c[a] = (int64_t)g;
    }
    if (ok) {
      s.found = 0;
      const uint32_t root[3] = {0, 0, 0};
      visit(&s, o, 0, 0, 0, root);
      if (s.found) color = s.best_color;
    }
    for (int b = 0; b < 4; b++) rgba[4 * i + (uint64_t)b] = (uint8_t)(color >> (8 * b));
  }
}

typedef struct color_job {
  search s;
  const float *points;
  const order_key *order; /* NULL: the points' own order */
  uint8_t *rgba;
  uint64_t n, next;
  pthread_mutex_t mu;
} color_job;

static void *color_worker(void *arg) {
  color_job *j = (color_job *)arg;
  for (;;) {
    pthread_mutex_lock(&j->mu);
    uint64_t lo = j->next;
    j->next = lo + CHUNK < j->n ? lo + CHUNK : j->n;
    pthread_mutex_unlock(&j->mu);
    if (lo >= j->n) return NULL;
    colors_of(j->s, j->points, j->order, lo, lo + CHUNK < j->n ? lo + CHUNK : j->n, j->rgba);
  }
}

typedef struct order_job {
  const vx_octree *o;
  uint32_t c;
  const float *points;
  uint64_t n;
  order_key *keys;
} order_job;

#define ORDER_PARTS 64u

/* The keys of part p of the points. */
static void order_part(void *ctx, uint64_t p) {
  const order_job *j = (const order_job *)ctx;
  const vx_octree *o = j->o;
  const double inv = 1.0 / (o->xf.scale * ldexp(1.0, (int)(o->depth - j->c)));
  const double top = ldexp(1.0, (int)j->c) - 1.0;
  const uint64_t lo = j->n * p / ORDER_PARTS, hi = j->n * (p + 1) / ORDER_PARTS;
  for (uint64_t i = lo; i < hi; i++) {
    uint32_t q[3] = {0, 0, 0};
    for (int a = 0; a < 3; a++) {
      const double g = ((double)j->points[3 * i + a] - o->xf.origin[a]) * inv;
      q[a] = g > 0.0 ? (g < top ? (uint32_t)g : (uint32_t)top) : 0u; /* NaN: 0 */
    }
    j->keys[i].key = vx_morton_encode(q[0], q[1], q[2]);
    j->keys[i].i = i;
  }
}

/* Points [0, n) in Morton order of their cells of level c (those outside the grid clamped into
 * it, non-finite ones to cell 0) into keys (tmp: scratch of n); the sorted array, or NULL when
 * the sort's memory cannot be had. Any order gives the same results: the cells need not be
 * exact. */
static order_key *order_points(const vx_octree *o, uint32_t c, const float *points, uint64_t n,
                               order_key *keys, order_key *tmp) {
  order_job j = {o, c, points, n, keys};
  vx_items_run(0, ORDER_PARTS, order_part, &j);
  return (order_key *)vx_radix_sort(keys, tmp, (size_t)n, sizeof *keys,
                                    offsetof(order_key, key), 3 * c, 0);
}

/* The job's points on every core (order: the order they run in, NULL: their own). */
static void run_job(color_job *j, const order_key *order) {
  j->order = order;
  j->next = 0;
  if (j->n <= CHUNK) {
    colors_of(j->s, j->points, order, 0, j->n, j->rgba);
    return;
  }
  pthread_mutex_init(&j->mu, NULL);
  vx_parallel(vx_thread_count(0, 64), color_worker, j);
  pthread_mutex_destroy(&j->mu);
}

void vx_octree_colors_split(const vx_octree *t, const vx_color_split *split, uint32_t level,
                            const float *points, uint64_t n, uint8_t *rgba) {
  color_job j;
  memset(&j, 0, sizeof j);
  j.s.o = t;
  j.s.sp = split && split->level < level ? split : NULL;
  j.s.L = level;
  j.s.r = (int64_t)ceil((double)t->band / (double)((uint64_t)1 << (t->depth - level)));
  /* Many points run in Morton order of their cells, a window at a time, so that neighbours
   * search the same nodes one after the other (the results do not depend on the order). */
  const uint64_t w = n < ORDER_WINDOW ? n : ORDER_WINDOW;
  order_key *keys = n >= ORDER_MIN ? (order_key *)vx_malloc((size_t)w * sizeof *keys) : NULL;
  order_key *tmp = keys ? (order_key *)vx_malloc((size_t)w * sizeof *tmp) : NULL;
  for (uint64_t at = 0; at < n; at += w) {
    j.points = points + 3 * at;
    j.rgba = rgba + 4 * at;
    j.n = n - at < w ? n - at : w;
    run_job(&j, tmp ? order_points(t, level < ORDER_LEVEL ? level : ORDER_LEVEL, j.points, j.n,
                                   keys, tmp)
                    : NULL);
  }
  vx_free(keys);
  vx_free(tmp);
}

void vx_octree_colors(const vx_octree *t, uint32_t level, const float *points, uint64_t n,
                      uint8_t *rgba) {
  vx_octree_colors_split(t, NULL, level, points, n, rgba);
}
