/* SPDX-License-Identifier: Apache-2.0 */
/* test_resigned.c - the voxels found re-signed (vx_octree_resigned, sampler/resigned.c) against a
 * dense grid checked here voxel by voxel:
 * - a voxel is flagged when one of its negative corners is stored larger by one of the 7 other
 *   voxels that have that grid point as a corner;
 * - then, until nothing changes, a voxel is flagged when it stores a negative value at a grid
 *   point where a flagged voxel stores a negative value (the closure);
 * bit for bit, on trees of depth 1 to 7 whose voxels and values are random (dense and sparse, so
 * that voxels touch the box's faces and sit alone and in clusters; some re-signed as the
 * converter does), on 1 and 3 threads, and on the tree of a smooth field where none is, then
 * with a sheet of it re-signed.
 */
#include "sampler/resigned.h"
#include "sys/alloc.h"
#include "check.h"

#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void) { return check_xorshift(&rng_state); }

typedef struct grid {
  uint32_t R;
  int32_t *idx;   /* per voxel (x + R (y + R z)): its index in the tree's voxels, -1: none */
  int8_t *val;    /* its 8 corner values */
  uint8_t *flag;  /* the reference */
} grid;

static int32_t at(const grid *g, int64_t x, int64_t y, int64_t z) {
  if (x < 0 || y < 0 || z < 0 || x >= g->R || y >= g->R || z >= g->R) return -1;
  return (int32_t)(x + (int64_t)g->R * (y + (int64_t)g->R * z));
}

/* The reference: the rule, then the closure to its fixed point. */
static void reference(grid *g) {
  const uint32_t R = g->R;
  const int64_t n = (int64_t)R * R * R;
  for (int64_t v = 0; v < n; v++) {
    g->flag[v] = 0;
    if (g->idx[v] < 0) continue;
    const int64_t x = v % R, y = v / R % R, z = v / ((int64_t)R * R);
    for (int c = 0; c < 8 && !g->flag[v]; c++) {
      const int8_t mine = g->val[8 * v + c];
      if (mine >= 0) continue;
      for (int o = 0; o < 8; o++) {
        const int32_t w = at(g, x + (c & 1) - (o & 1), y + (c >> 1 & 1) - (o >> 1 & 1),
                             z + (c >> 2 & 1) - (o >> 2 & 1));
        if (w >= 0 && g->idx[w] >= 0 && g->val[8 * (int64_t)w + o] > mine) g->flag[v] = 1;
      }
    }
  }
  int64_t *todo = (int64_t *)malloc(sizeof *todo * (size_t)n), nt = 0; /* flagged, to spread */
  for (int64_t v = 0; v < n; v++)
    if (g->flag[v]) todo[nt++] = v;
  while (nt) {
    const int64_t v = todo[--nt];
    const int64_t x = v % R, y = v / R % R, z = v / ((int64_t)R * R);
    for (int c = 0; c < 8; c++) {
      if (g->val[8 * v + c] >= 0) continue;
      for (int o = 0; o < 8; o++) {
        const int32_t w = at(g, x + (c & 1) - (o & 1), y + (c >> 1 & 1) - (o >> 1 & 1),
                             z + (c >> 2 & 1) - (o >> 2 & 1));
        if (w < 0 || g->idx[w] < 0 || g->flag[w] || g->val[8 * (int64_t)w + o] >= 0) continue;
        g->flag[w] = 1;
        todo[nt++] = w;
      }
    }
  }
  free(todo);
}

typedef struct entry {
  uint64_t code;
  int32_t v;
} entry;

static int by_code(const void *a, const void *b) {
  const uint64_t x = ((const entry *)a)->code, y = ((const entry *)b)->code;
  return x < y ? -1 : x > y;
}

/* The tree of the grid's voxels (idx >= 0), their tree indices written back into idx, then the
 * bits found against the reference on `threads` threads. Returns the voxels flagged. */
static uint64_t check_grid(grid *g, uint32_t depth, int threads, const char *what) {
  const int64_t n = (int64_t)g->R * g->R * g->R;
  entry *e = (entry *)malloc(sizeof *e * (size_t)n);
  uint64_t m = 0;
  for (int64_t v = 0; v < n; v++)
    if (g->idx[v] >= 0) {
      e[m].code = check_morton((uint32_t)(v % g->R), (uint32_t)(v / g->R % g->R),
                         (uint32_t)(v / ((int64_t)g->R * g->R)));
      e[m++].v = (int32_t)v;
    }
  qsort(e, (size_t)m, sizeof *e, by_code);
  uint64_t *codes = (uint64_t *)malloc(sizeof *codes * (m ? m : 1));
  vx_voxel *field = (vx_voxel *)malloc(sizeof *field * (m ? m : 1));
  for (uint64_t i = 0; i < m; i++) {
    codes[i] = e[i].code;
    memcpy(field[i].c, g->val + 8 * (int64_t)e[i].v, 8);
  }
  vx_octree t;
  vx_error err;
  memset(&err, 0, sizeof err);
  uint64_t flagged = 0;
  if (m == 0) { /* nothing to build */
    free(codes);
    free(field);
    free(e);
    return 0;
  }
  CHECK(vx_octree_build(depth, codes, field, m, &t, &err) == VX_OK);
  if (t.voxel_count == m) {
    /* the builder keeps the voxels in Morton order: voxel i is e[i]'s (checked by its values) */
    for (uint64_t i = 0; i < m; i++) {
      CHECK(memcmp(t.voxels[i].c, field[i].c, 8) == 0);
      g->idx[e[i].v] = (int32_t)i;
    }
    reference(g);
    uint32_t *bits = NULL;
    CHECK(vx_octree_resigned(&t, threads, &bits, &err) == VX_OK);
    uint64_t wrong = 0;
    for (uint64_t i = 0; i < m; i++) {
      const int got = bits ? (int)(bits[i >> 5] >> (i & 31u) & 1u) : 0;
      flagged += g->flag[e[i].v];
      wrong += got != g->flag[e[i].v];
    }
    if (wrong) fprintf(stderr, "%s: %llu of %llu voxels differ\n", what, (unsigned long long)wrong,
                       (unsigned long long)m);
    CHECK(wrong == 0);
    vx_free(bits);
    vx_octree_free(&t);
  }
  free(codes);
  free(field);
  free(e);
  return flagged;
}

static void grid_new(grid *g, uint32_t depth) {
  g->R = 1u << depth;
  const size_t n = (size_t)g->R * g->R * g->R;
  g->idx = (int32_t *)malloc(n * sizeof *g->idx);
  g->val = (int8_t *)malloc(n * 8);
  g->flag = (uint8_t *)malloc(n);
}

static void grid_free(grid *g) {
  free(g->idx);
  free(g->val);
  free(g->flag);
}

/* Random voxels (each present with probability fill / 1024) whose corners take the value of their
 * grid point (shared by the voxels there, as a field's are: a random magnitude, negative in
 * random blocks of 4^3 points), of which 1 in 4 with all corners positive is then re-signed as
 * the converter does (some corners negated, as by the side of a plane): ordinary voxels,
 * re-signed ones next to ordinary ones and clusters of them that only the closure reaches,
 * voxels alone and at the box's faces. */
static void random_trees(void) {
  uint64_t flagged = 0, voxels = 0;
  for (uint32_t depth = 1; depth <= 7; depth++) {
    const uint32_t fills[3] = {1000, 300, 40};
    for (int f = depth == 7 ? 2 : 0; f < 3; f++) {
      grid g;
      grid_new(&g, depth);
      const int64_t R = g.R, n = R * R * R, P = R + 1;
      int8_t *point = (int8_t *)malloc((size_t)(P * P * P));
      const int64_t B = R / 4 + 1; /* inside or outside by blocks of 4^3 points */
      uint8_t *inside = (uint8_t *)malloc((size_t)(B * B * B));
      for (int64_t k = 0; k < B * B * B; k++) inside[k] = rnd() % 10u < 3u;
      for (int64_t k = 0; k < P * P * P; k++) {
        const int64_t b = k % P / 4 + B * (k / P % P / 4 + B * (k / (P * P) / 4));
        const int m = 1 + (int)(rnd() % 30u);
        point[k] = (int8_t)(inside[b] ? -m : m);
      }
      free(inside);
      for (int64_t v = 0; v < n; v++) {
        const int64_t x = v % R, y = v / R % R, z = v / (R * R);
        g.idx[v] = rnd() % 1024u < fills[f] ? 0 : -1;
        voxels += g.idx[v] == 0;
        for (int c = 0; c < 8; c++)
          g.val[8 * v + c] = point[(x + (c & 1)) + P * ((y + (c >> 1 & 1)) + P * (z + (c >> 2 & 1)))];
        const uint32_t r = rnd();
        int out = 1; /* all 8 corners outside: the converter's re-signed voxels were */
        for (int c = 0; c < 8; c++) out &= g.val[8 * v + c] > 0;
        if (out && r % 4u == 0) /* the side of a plane: some corners negated */
          for (int c = 0; c < 8; c++)
            if (r >> (8 + c) & 1u) g.val[8 * v + c] = (int8_t)-g.val[8 * v + c];
      }
      free(point);
      char what[64];
      snprintf(what, sizeof what, "random tree, depth %u, fill %u/1024", depth, fills[f]);
      flagged += check_grid(&g, depth, f == 1 ? 1 : 3, what);
      grid_free(&g);
    }
  }
  fprintf(stderr, "%llu of %llu voxels flagged\n", (unsigned long long)flagged,
          (unsigned long long)voxels);
  CHECK(flagged > voxels / 20 && flagged < voxels / 2); /* both kinds, many of each */
}

/* The corners of a sphere's surface voxels sampled from its distance: equal at every shared
 * corner, so nothing is flagged; then the voxels of one thin slab re-signed by hand (their
 * positive corners made negative), which the rule and the closure must find exactly. */
static void smooth_field(void) {
  const uint32_t depth = 6;
  grid g;
  grid_new(&g, depth);
  const int64_t n = (int64_t)g.R * g.R * g.R;
  for (int64_t v = 0; v < n; v++) {
    const int64_t x = v % g.R, y = v / g.R % g.R, z = v / ((int64_t)g.R * g.R);
    double d[8], lo = 1e9, hi = -1e9;
    for (int c = 0; c < 8; c++) {
      const double px = (double)(x + (c & 1)) - 30.2, py = (double)(y + (c >> 1 & 1)) - 33.7,
                   pz = (double)(z + (c >> 2 & 1)) - 31.1;
      d[c] = sqrt(px * px + py * py + pz * pz) - 21.4;
      lo = d[c] < lo ? d[c] : lo;
      hi = d[c] > hi ? d[c] : hi;
    }
    g.idx[v] = lo < 1.0 && hi > -1.0 ? 0 : -1;
    for (int c = 0; c < 8; c++) g.val[8 * v + c] = vx_corner_quantize(d[c], 2.0f);
  }
  CHECK(check_grid(&g, depth, 0, "sphere") == 0);
  for (int64_t v = 0; v < n; v++) { /* a sheet of voxels at z = 40 under the sphere's top */
    const int64_t z = v / ((int64_t)g.R * g.R);
    if (g.idx[v] < 0 || z != 40) continue;
    for (int c = 0; c < 8; c++)
      if (g.val[8 * v + c] > 0) g.val[8 * v + c] = (int8_t)-g.val[8 * v + c];
  }
  CHECK(check_grid(&g, depth, 0, "sphere with a re-signed sheet") > 0);
  grid_free(&g);
}

int main(void) {
  RUN(random_trees);
  RUN(smooth_field);
  return check_summary();
}
