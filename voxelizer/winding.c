/* SPDX-License-Identifier: Apache-2.0 */
/* winding.c - the generalized winding number, evaluated hierarchically: the voxelizer's sign.
 *
 * Rule (A. Jacobson, L. Kavan, O. Sorkine-Hornung, "Robust Inside-Outside Segmentation using
 * Generalized Winding Numbers", SIGGRAPH 2013): w(p) = (1/4pi) sum_t Omega_t(p), the signed solid
 * angles of all triangles seen from p. A corner is inside (negative distance) when |w(p)| > 1/2
 * (the absolute value makes the rule blind to a shell's global orientation).
 * For a closed, outward-wound mesh w is exactly 1 inside and 0 outside; for anything else it is a
 * harmonic function away from the surface that jumps by +-1 across each sheet, so the rule
 * degrades gracefully instead of following whichever triangle happens to be closest:
 * - Holes: w is smooth across the opening and ~1/2 in it, so the inside/outside boundary
 *   continues over the hole as a smooth minimal-surface-like membrane spanning the rim; corners
 *   on either side of that membrane get opposite signs although no triangle lies between them.
 *   Far from the hole the signs are those of the closed shape (messy/sphereWithHole.stl).
 * - Duplicate faces with both windings (messy/degenerated.obj): their solid angles cancel, w ~ 0
 *   on both sides, so everything near them is outside (positive): a double-sided sheet encloses
 *   nothing. One-sided open sheets get w in (-1/2, 1/2) and are outside on both sides too, except
 *   close behind a sheet with a large solid angle (|w| > 1/2 there).
 * - Self-intersecting unions (messy/two-boxes-bad-self-union.ply): w ~ 2 inside the overlap and
 *   1 in the rest of either shell, so the whole union is inside, including next to the faces
 *   that lie inside the other shell (the pseudo-normal rule calls those outside).
 * - Folds and locally flipped patches (messy/cube_with_fold.ply): a flipped patch contributes
 *   with the wrong sign but the rest of the shell outweighs a small one; a large one shifts w by
 *   up to its solid angle.
 * - Inverted meshes (every triangle wound inward): w ~ -1 inside and 0 outside; |w| > 1/2 still
 *   calls the inside inside, so an inverted shell gives the same field as a correct one (the
 *   pseudo-normal rule, VX_SIGN_PSEUDO_NORMAL, inverts every sign instead). Only a shell inside
 *   an oppositely wound one cancels (w ~ 0 where they overlap: outside).
 *
 * Evaluation (G. Barill, N. Dickson, R. Schmidt, D. Levin, A. Jacobson, "Fast Winding Numbers for
 * Soups and Clouds", SIGGRAPH 2018): a binary bounding-volume hierarchy over the triangles; each
 * node stores its area-weighted centroid c, the radius r of a ball around c holding its
 * triangles, the sum N of area-weighted normals and the second-order tensor M = sum_t a_t n_t
 * (c_t - c)^T. A node whose ball is far from p (|p - c| > beta r, beta = VX_WIND_BETA) adds the
 * Taylor expansion of the solid-angle kernel K(x) = (x - p)/|x - p|^3 about c:
 * K(c).N + sum_ij dK_i/dx_j(c) M_ij, which is exact up to third order for triangles (a
 * triangle's first moment about its own centroid vanishes, so M is the exact second-order term).
 * Other nodes recurse; leaves near p sum their triangles' exact solid angles (A. van Oosterom and
 * J. Strackee, "The Solid Angle of a Plane Triangle", IEEE TBME 1983):
 * tan(Omega/2) = a.(b x c) / (|a||b||c| + (a.b)|c| + (b.c)|a| + (c.a)|b|).
 * Accuracy: the truncation error of a node is O((r/|p-c|)^3) times its solid angle, and near the
 * surface the errors of the nodes around p add up with one sign. Measured max |fast - exact| on
 * points within one voxel of the bunny at 512^3: beta = 2: 0.024 (0.031 without the second-order
 * term), beta = 3: 0.010-0.012; so beta = VX_WIND_BETA = 3 and the documented bound VX_WIND_TOL
 * = 0.02 (tests/test_voxelizer_sign.c checks it on analytic meshes, a holed sphere and the
 * bunny). That is far below what a sign needs except within a hair of a membrane, where either
 * side is an acceptable answer. beta = 1 (error <= 0.15, about 5 times fewer nodes) serves the
 * coarse per-triangle tests of sign.c.
 *
 * Build: triangles are sorted by the 63-bit Morton code of their centroids (ties by index); a
 * node covering a sorted range splits where the highest differing code bit changes (an implicit
 * octree, Lauterbach et al. 2009), or in the middle when all codes are equal; ranges of at most
 * LEAF triangles are leaves. Moments are accumulated bottom-up (double arithmetic, stored as
 * floats). The build runs on all cores (the sort, the triangles' grid coordinates, subtrees as
 * tasks; "the build on several threads" below) and gives the one-thread tree node for node.
 * Each query walks the tree from the root with a fixed stack order (left child first), so its
 * value depends only on the point and the mesh: not on blocks, threads or query order.
 */
#include "voxelizer/winding.h"
#include "voxelizer/internal.h"

#include "sys/sort.h"
#include "sys/system.h"

#include <math.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define LEAF 4

void vx_wind_free(vx_wind_tree *t) {
  if (!t) return;
  vx_free(t->nodes);
  vx_free(t->tri);
  vx_free(t->order);
  memset(t, 0, sizeof *t);
}

double vx_wind_triangle(const double *a, const double *b, const double *c, const double p[3]) {
  return vx_wind_solid(a, b, c, p);
}

/* ---- build ----------------------------------------------------------------------------------- */

static uint64_t spread21(uint64_t v) { /* 21 bits -> every third bit of 63 */
  v &= 0x1fffff;
  v = (v | v << 32) & 0x1f00000000ffffull;
  v = (v | v << 16) & 0x1f0000ff0000ffull;
  v = (v | v << 8) & 0x100f00f00f00f00full;
  v = (v | v << 4) & 0x10c30c30c30c30c3ull;
  v = (v | v << 2) & 0x1249249249249249ull;
  return v;
}

typedef struct keyed {
  uint64_t code;
  uint32_t tri;
} keyed;

static int keyed_cmp(const void *pa, const void *pb) {
  const keyed *a = (const keyed *)pa, *b = (const keyed *)pb;
  if (a->code != b->code) return a->code < b->code ? -1 : 1;
  return a->tri < b->tri ? -1 : a->tri > b->tri;
}

typedef struct builder {
  vx_wind_tree *t;
  const keyed *keys;
  double *area;   /* per node, during the build */
  double *cen;    /* 3 per node, double centroids */
  uint64_t used;  /* nodes allocated */
} builder;

static void leaf_moments(builder *b, uint64_t id, uint64_t lo, uint64_t hi) {
  double A = 0.0, c[3] = {0, 0, 0}, mean[3] = {0, 0, 0}, mo[12];
  memset(mo, 0, sizeof mo);
  for (uint64_t k = lo; k < hi; k++) {
    double g[9], u[3], v[3], x[3];
    vx_wind_leaf_tri(b->t, k, g);
    for (int i = 0; i < 3; i++) {
      u[i] = g[3 + i] - g[i];
      v[i] = g[6 + i] - g[i];
    }
    x[0] = 0.5 * (u[1] * v[2] - u[2] * v[1]);
    x[1] = 0.5 * (u[2] * v[0] - u[0] * v[2]);
    x[2] = 0.5 * (u[0] * v[1] - u[1] * v[0]);
    double a = sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2]);
    A += a;
    for (int i = 0; i < 3; i++) {
      double ct = (g[i] + g[3 + i] + g[6 + i]) / 3.0;
      c[i] += a * ct;
      mean[i] += ct;
      mo[i] += x[i];
    }
  }
  for (int i = 0; i < 3; i++) c[i] = A > 0.0 ? c[i] / A : mean[i] / (double)(hi - lo);
  double r2 = 0.0;
  for (uint64_t k = lo; k < hi; k++) {
    double g[9], u[3], v[3], x[3], ct[3];
    vx_wind_leaf_tri(b->t, k, g);
    for (int i = 0; i < 3; i++) {
      u[i] = g[3 + i] - g[i];
      v[i] = g[6 + i] - g[i];
      ct[i] = (g[i] + g[3 + i] + g[6 + i]) / 3.0 - c[i];
    }
    x[0] = 0.5 * (u[1] * v[2] - u[2] * v[1]);
    x[1] = 0.5 * (u[2] * v[0] - u[0] * v[2]);
    x[2] = 0.5 * (u[0] * v[1] - u[1] * v[0]);
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++) mo[3 + i * 3 + j] += x[i] * ct[j];
    for (int q = 0; q < 3; q++) {
      double d2 = 0.0;
      for (int i = 0; i < 3; i++) d2 += (g[q * 3 + i] - c[i]) * (g[q * 3 + i] - c[i]);
      if (d2 > r2) r2 = d2;
    }
  }
  b->area[id] = A;
  memcpy(b->cen + id * 3, c, sizeof c);
  vx_wind_node *nd = b->t->nodes + id;
  nd->r = (float)sqrt(r2);
  for (int i = 0; i < 3; i++) nd->n[i] = (float)mo[i];
  for (int i = 0; i < 9; i++) nd->m[i] = (float)mo[3 + i];
}

/* Where node [lo, hi) of more than LEAF triangles splits: at the first index whose code has the
 * highest differing bit set, or in the middle when all codes are equal. */
static uint64_t split_at(const keyed *keys, uint64_t lo, uint64_t hi) {
  uint64_t a = keys[lo].code, z = keys[hi - 1].code;
  if (a == z) return lo + (hi - lo) / 2;
  int bit = 63;
  while (!((a ^ z) >> bit & 1)) bit--;
  uint64_t l = lo, h = hi - 1; /* code[l] has it clear, code[h] set */
  while (h - l > 1) {
    uint64_t m = l + (h - l) / 2;
    if (keys[m].code >> bit & 1) h = m;
    else l = m;
  }
  return h;
}

/* Inner node `id` from its two children (nodes left and left + 1, built). */
static void combine(builder *b, uint64_t id, uint64_t left) {
  vx_wind_node *nd = b->t->nodes + id;
  double A = b->area[left] + b->area[left + 1], c[3];
  for (int i = 0; i < 3; i++)
    c[i] = A > 0.0 ? (b->area[left] * b->cen[left * 3 + i] +
                      b->area[left + 1] * b->cen[(left + 1) * 3 + i]) / A
                   : 0.5 * (b->cen[left * 3 + i] + b->cen[(left + 1) * 3 + i]);
  double mo[12], r = 0.0;
  memset(mo, 0, sizeof mo);
  for (uint64_t ch = left; ch < left + 2; ch++) {
    const vx_wind_node *cn = b->t->nodes + ch;
    const double *cc = b->cen + ch * 3;
    double s[3], l2 = 0.0;
    for (int i = 0; i < 3; i++) {
      s[i] = cc[i] - c[i];
      l2 += s[i] * s[i];
    }
    for (int i = 0; i < 3; i++) {
      mo[i] += cn->n[i];
      for (int j = 0; j < 3; j++) mo[3 + i * 3 + j] += (double)cn->m[i * 3 + j] + cn->n[i] * s[j];
    }
    double rc = sqrt(l2) + (double)cn->r;
    if (rc > r) r = rc;
  }
  b->area[id] = A;
  memcpy(b->cen + id * 3, c, sizeof c);
  nd->r = (float)r;
  for (int i = 0; i < 3; i++) nd->n[i] = (float)mo[i];
  for (int i = 0; i < 9; i++) nd->m[i] = (float)mo[3 + i];
}

/* Stored as floats; the radius is widened by the centre's rounding. */
static void round_centre(builder *b, uint64_t id) {
  vx_wind_node *nd = b->t->nodes + id;
  const double *c = b->cen + id * 3;
  double err = 0.0;
  for (int i = 0; i < 3; i++) {
    nd->c[i] = (float)c[i];
    err += fabs((double)nd->c[i] - c[i]);
  }
  nd->r = (float)(((double)nd->r + err) * (1.0 + 1e-6));
}

/* Builds node `id` over sorted range [lo, hi); children are allocated as a pair at b->used, so
 * the nodes are numbered depth first, left before right. */
static void build_node(builder *b, uint64_t id, uint64_t lo, uint64_t hi) {
  vx_wind_node *nd = b->t->nodes + id;
  if (hi - lo <= LEAF) {
    nd->first = (uint32_t)lo;
    nd->count = (uint32_t)(hi - lo);
    leaf_moments(b, id, lo, hi);
  } else {
    const uint64_t mid = split_at(b->keys, lo, hi), left = b->used;
    b->used += 2;
    nd->first = (uint32_t)left;
    nd->count = 0;
    build_node(b, left, lo, mid);
    build_node(b, left + 1, mid, hi);
    combine(b, id, left);
  }
  round_centre(b, id);
}

/* Inner nodes of the subtree over [lo, hi): the node ids it allocates are twice that. */
static uint64_t inner_count(const keyed *keys, uint64_t lo, uint64_t hi) {
  if (hi - lo <= LEAF) return 0;
  const uint64_t mid = split_at(keys, lo, hi);
  return 1 + inner_count(keys, lo, mid) + inner_count(keys, mid, hi);
}

/* ---- the build on several threads --------------------------------------------------------------
 * The tree is the serial build's, node for node: ranges of at most `grain` triangles are subtrees
 * built as tasks; the nodes above them (the top) are split on the calling thread. A subtree's
 * first child pair is numbered after every node the serial build allocates before it, which is
 * known once the subtrees to its left have counted their inner nodes (inner_count, as tasks). The
 * top's moments are then combined from their children in the serial order. */

typedef struct subtree {
  uint64_t lo, hi, id, used, inner;
} subtree;

typedef struct wind_job {
  const vx_soup *m;
  const vx_transform *xf;
  keyed *keys;
  double (*box)[6]; /* per chunk: centroid min, max */
  double lo[3], q;
  builder *b;
  subtree *sub;
  uint64_t T, nsub, chunks;
  int stage;
  atomic_uint_fast64_t next;
} wind_job;

#define CHUNK 16384u

/* Triangle k of the mesh in the tree's frame (vx_wind_leaf_tri's map: vx_grid_tri's bits),
 * computed where it is needed rather than kept: a copy in input order was 72 B a triangle at
 * the peak of the plan of a tiled build. */
static void tree_tri(const wind_job *j, uint64_t k, double g[9]) {
  vx_wind_frame(j->b->t, j->m->pos + k * 9, g);
}

static void *wind_worker(void *arg) {
  wind_job *j = (wind_job *)arg;
  const uint64_t n = j->stage < 3 ? j->chunks : j->nsub;
  for (uint64_t c; (c = atomic_fetch_add(&j->next, 1)) < n;) {
    const uint64_t a = c * CHUNK, z = a + CHUNK < j->T ? a + CHUNK : j->T;
    if (j->stage == 0) { /* the centroids' box in the tree's frame */
      double *bx = j->box[c];
      for (int i = 0; i < 3; i++) bx[i] = INFINITY, bx[3 + i] = -INFINITY;
      for (uint64_t k = a; k < z; k++) {
        double g[9];
        tree_tri(j, k, g);
        for (int i = 0; i < 3; i++) {
          double ct = (g[i] + g[3 + i] + g[6 + i]) / 3.0;
          if (ct < bx[i]) bx[i] = ct;
          if (ct > bx[3 + i]) bx[3 + i] = ct;
        }
      }
    } else if (j->stage == 1) { /* Morton codes of the centroids over that box */
      for (uint64_t k = a; k < z; k++) {
        double g[9];
        tree_tri(j, k, g);
        uint64_t code = 0;
        for (int i = 0; i < 3; i++) {
          double ct = (g[i] + g[3 + i] + g[6 + i]) / 3.0;
          double f = (ct - j->lo[i]) * j->q;
          uint64_t u = f > 0.0 ? (uint64_t)f : 0;
          if (u > 2097151) u = 2097151;
          code |= spread21(u) << i;
        }
        j->keys[k].code = code;
        j->keys[k].tri = (uint32_t)k;
      }
    } else if (j->stage == 2) { /* the triangles in tree order */
      for (uint64_t k = a; k < z; k++) {
        memcpy(j->b->t->tri + k * 9, j->m->pos + (uint64_t)j->keys[k].tri * 9, 9 * sizeof(float));
        j->b->t->order[k] = j->keys[k].tri;
      }
    } else if (j->stage == 3) {
      j->sub[c].inner = inner_count(j->keys, j->sub[c].lo, j->sub[c].hi);
    } else {
      builder b = *j->b;
      b.used = j->sub[c].used;
      build_node(&b, j->sub[c].id, j->sub[c].lo, j->sub[c].hi);
    }
  }
  return NULL;
}

static void run_stage(wind_job *j, int stage, int threads) {
  j->stage = stage;
  atomic_store(&j->next, 0);
  vx_parallel(threads, wind_worker, j);
}

/* The top, depth first. mode 0: list the subtrees (j->sub NULL: count them); 1: number the top's
 * nodes and the subtrees' first pairs; 2: combine the top's moments, children first. */
static void top_walk(wind_job *j, uint64_t grain, int mode, uint64_t id, uint64_t lo, uint64_t hi,
                     uint64_t *used) {
  if (hi - lo <= grain) {
    subtree *s = j->sub ? j->sub + j->nsub : NULL;
    if (mode == 0 && s) s->lo = lo, s->hi = hi;
    if (mode == 1) {
      s->id = id;
      s->used = *used;
      *used += 2 * s->inner;
    }
    j->nsub++;
    return;
  }
  const uint64_t mid = split_at(j->keys, lo, hi);
  vx_wind_node *nd = j->b->t->nodes + id;
  if (mode == 1) {
    nd->first = (uint32_t)*used;
    nd->count = 0;
    *used += 2;
  }
  const uint64_t left = mode == 0 ? 0 : nd->first; /* mode 0 needs no ids */
  top_walk(j, grain, mode, left, lo, mid, used);
  top_walk(j, grain, mode, left + 1, mid, hi, used);
  if (mode == 2) {
    combine(j->b, id, left);
    round_centre(j->b, id);
  }
}

/* The nodes over the sorted triangles (b->keys, t->tri), on `threads` threads. */
static vx_status wind_tree(wind_job *j, int threads) {
  builder *b = j->b;
  const uint64_t T = j->T;
  /* subtrees of about T / (16 threads) triangles: enough tasks to balance uneven ones */
  uint64_t grain = T / ((uint64_t)threads * 16), used = 1;
  if (grain < 4096) grain = 4096;
  if (threads <= 1 || T <= grain) {
    b->used = 1;
    build_node(b, 0, 0, T);
    return VX_OK;
  }
  j->nsub = 0;
  j->sub = NULL;
  top_walk(j, grain, 0, 0, 0, T, &used);
  j->sub = (subtree *)vx_calloc((size_t)j->nsub, sizeof *j->sub);
  if (!j->sub) return VX_ERR_NOMEM;
  j->nsub = 0;
  top_walk(j, grain, 0, 0, 0, T, &used);
  run_stage(j, 3, threads);
  j->nsub = 0;
  top_walk(j, grain, 1, 0, 0, T, &used);
  run_stage(j, 4, threads);
  j->nsub = 0;
  top_walk(j, grain, 2, 0, 0, T, &used);
  b->used = used;
  vx_free(j->sub);
  j->sub = NULL;
  return VX_OK;
}

static int no_memory(wind_job *j, vx_wind_tree *t, vx_error *err) {
  vx_free(j->keys);
  vx_free(j->box);
  vx_free(j->b->area);
  vx_free(j->b->cen);
  vx_wind_free(t);
  return vx_error_set(err, VX_ERR_NOMEM, "cannot allocate the winding tree for %llu triangles",
                      (unsigned long long)j->T);
}

vx_status vx_wind_build(const vx_soup *m, const vx_transform *xf, int threads, vx_wind_tree *t,
                        vx_error *err) {
  memset(t, 0, sizeof *t);
  uint64_t T = m ? m->tri_count : 0;
  if (T == 0) return vx_error_set(err, VX_ERR_EMPTY, "no triangles");
  if (T >= UINT32_MAX / 2)
    return vx_error_set(err, VX_ERR_LIMIT, "too many triangles for the winding tree (%llu)",
                        (unsigned long long)T);
  threads = vx_thread_count(threads, 64);
  uint64_t cap = 2 * T; /* a binary tree over T leaves or fewer has < 2T nodes */
  builder b;
  memset(&b, 0, sizeof b);
  b.t = t;
  wind_job j;
  memset(&j, 0, sizeof j);
  j.m = m;
  j.xf = xf;
  j.T = T;
  j.b = &b;
  j.chunks = (T + CHUNK - 1) / CHUNK;
  j.keys = (keyed *)vx_malloc(T * sizeof *j.keys);
  j.box = (double(*)[6])vx_malloc(j.chunks * sizeof *j.box);
  t->tri = (float *)vx_malloc(T * 9 * sizeof(float));
  for (int i = 0; i < 3; i++) t->origin[i] = xf ? xf->origin[i] : 0.0;
  t->scale = xf ? xf->scale : 1.0;
  t->order = (uint32_t *)vx_malloc(T * sizeof(uint32_t));
  /* every field of nodes 0 .. used-1 is written; pages past them are never touched */
  t->nodes = (vx_wind_node *)vx_malloc(cap * sizeof(vx_wind_node));
  b.area = (double *)vx_malloc(cap * sizeof(double));
  b.cen = (double *)vx_malloc(cap * 3 * sizeof(double));
  if (!j.keys || !j.box || !t->tri || !t->order || !t->nodes || !b.area || !b.cen)
    return no_memory(&j, t, err);
  /* Morton codes of the triangles' centroids (in the tree's frame) over the centroids' box. */
  run_stage(&j, 0, threads);
  double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  for (uint64_t c = 0; c < j.chunks; c++)
    for (int i = 0; i < 3; i++) {
      if (j.box[c][i] < lo[i]) lo[i] = j.box[c][i];
      if (j.box[c][3 + i] > hi[i]) hi[i] = j.box[c][3 + i];
    }
  double ext = 0.0;
  for (int i = 0; i < 3; i++)
    if (hi[i] - lo[i] > ext) ext = hi[i] - lo[i];
  memcpy(j.lo, lo, sizeof lo);
  j.q = ext > 0.0 ? 2097151.0 / ext : 0.0;
  run_stage(&j, 1, threads);
  void *keys = j.keys; /* made in triangle order: sorted by code, in (code, triangle) order */
  vx_sort_records(&keys, (size_t)T, sizeof *j.keys, offsetof(keyed, code), 63, keyed_cmp, threads);
  j.keys = (keyed *)keys;
  run_stage(&j, 2, threads);
  t->tri_count = T;
  b.keys = j.keys;
  if (wind_tree(&j, threads) != VX_OK) return no_memory(&j, t, err);
  t->node_count = b.used;
  vx_free(j.keys);
  vx_free(j.box);
  vx_free(b.area);
  vx_free(b.cen);
  vx_wind_node *shrunk = (vx_wind_node *)vx_realloc(t->nodes, b.used * sizeof(vx_wind_node));
  if (shrunk) t->nodes = shrunk;
  return VX_OK;
}

/* ---- query ----------------------------------------------------------------------------------- */

double vx_wind_at(const vx_wind_tree *t, const double p[3]) {
  return vx_wind_at_beta(t, p, VX_WIND_BETA);
}

double vx_wind_at_beta(const vx_wind_tree *t, const double p[3], double beta) {
  return vx_wind_eval(t, p, beta);
}
