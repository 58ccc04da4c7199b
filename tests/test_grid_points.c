/* SPDX-License-Identifier: Apache-2.0 */
/* test_grid_points.c - a cut's grid points (vx_cut_points, formats/grid_points.c), made block by
 * block on all cores, against a dense grid made here point by point in one pass per layer:
 * - a point's value is the running mean m += (v - m) / k of its cells' corner values, cells in
 *   ascending order and corners 0..7 in each, clamped to +-band;
 * - layer by layer, a point not yet made next to the front (the points made in the last layer, at
 *   first every point, with |v| + 1 < band) takes v -+ 1 of its front neighbour of least |v| (ties:
 *   least Morton code), clamped; a point of an earlier layer's extension takes it when it is less;
 * bit for bit, for bands from 1 to 20 voxels (blocks of 64^3 to 256^3 with halos of 3 to 22
 * points) on two spheres, one touching the box's corner, whose cells carry an offset each (so the
 * means are real means).
 */
#include "formats/grid_cut.h"
#include "sys/alloc.h"
#include "check.h"

#include <stdint.h>

#define RES 128u

/* Signed distance in cells to the nearer of two spheres. */
static double dist(double x, double y, double z) {
  const double a =
      sqrt((x - 60.5) * (x - 60.5) + (y - 66.0) * (y - 66.0) + (z - 63.2) * (z - 63.2)) - 41.3;
  const double b =
      sqrt((x - 122.0) * (x - 122.0) + (y - 3.0) * (y - 3.0) + (z - 124.5) * (z - 124.5)) - 9.7;
  return a < b ? a : b;
}

typedef struct cellv {
  uint64_t code;
  float f[8];
} cellv;

static int by_code(const void *a, const void *b) {
  const uint64_t x = ((const cellv *)a)->code, y = ((const cellv *)b)->code;
  return x < y ? -1 : x > y;
}

/* The cut: every cell whose corners' distances come within a cell of zero, in Morton order. */
static void make_cut(vx_cut *c) {
  vx_transform xf;
  memset(&xf, 0, sizeof xf);
  xf.scale = 1.0;
  vx_cut_begin(7, 7, &xf, c);
  cellv *cells = (cellv *)malloc(sizeof(cellv) * RES * RES * RES / 4);
  uint64_t n = 0;
  for (uint32_t z = 0; z < RES; z++)
    for (uint32_t y = 0; y < RES; y++)
      for (uint32_t x = 0; x < RES; x++) {
        const double d = dist(x + 0.5, y + 0.5, z + 0.5);
        if (fabs(d) > 1.0) continue;
        cellv *e = &cells[n++];
        e->code = check_morton(x, y, z);
        const double off = 0.25 * sin(0.7 * x + 1.3 * y + 2.9 * z); /* the cell's own plane */
        for (int k = 0; k < 8; k++)
          e->f[k] = (float)(dist(x + (k & 1), y + (k >> 1 & 1), z + (k >> 2 & 1)) + off);
      }
  qsort(cells, n, sizeof *cells, by_code);
  c->count = c->cap = n;
  c->codes = (uint64_t *)vx_malloc(n * sizeof *c->codes);
  c->field = (float(*)[8])vx_malloc(n * sizeof *c->field);
  for (uint64_t i = 0; i < n; i++) {
    c->codes[i] = cells[i].code;
    memcpy(c->field[i], cells[i].f, sizeof cells[i].f);
  }
  free(cells);
}

/* The dense reference. G points per axis; made[i]: 0 not made, 1 a cell's corner, 2 extension. */
typedef struct grid {
  uint32_t G;
  float *v;
  uint8_t *made;
} grid;

static uint64_t at(const grid *g, uint32_t x, uint32_t y, uint32_t z) {
  return ((uint64_t)z * g->G + y) * g->G + x;
}

static void reference(const vx_cut *c, float band, uint32_t pad, grid *g) {
  g->G = RES + 2 * pad + 1;
  const uint64_t N = (uint64_t)g->G * g->G * g->G;
  g->v = (float *)calloc(N, sizeof *g->v);
  g->made = (uint8_t *)calloc(N, 1);
  uint32_t *cnt = (uint32_t *)calloc(N, sizeof *cnt);
  for (uint64_t i = 0; i < c->count; i++) {
    uint32_t x = 0, y = 0, z = 0;
    for (int b = 0; b < 21; b++) {
      x |= (uint32_t)(c->codes[i] >> (3 * b) & 1u) << b;
      y |= (uint32_t)(c->codes[i] >> (3 * b + 1) & 1u) << b;
      z |= (uint32_t)(c->codes[i] >> (3 * b + 2) & 1u) << b;
    }
    for (int k = 0; k < 8; k++) {
      const uint64_t p = at(g, x + pad + (k & 1), y + pad + (k >> 1 & 1), z + pad + (k >> 2 & 1));
      const float v = c->field[i][k];
      if (!g->made[p]) {
        g->made[p] = 1;
        g->v[p] = v;
        cnt[p] = 1;
      } else {
        cnt[p]++;
        g->v[p] += (v - g->v[p]) / (float)cnt[p];
      }
    }
  }
  free(cnt);
  uint8_t *front = (uint8_t *)calloc(N, 1), *next = (uint8_t *)calloc(N, 1);
  float *snap = (float *)calloc(N, sizeof *snap);
  for (uint64_t p = 0; p < N; p++) {
    if (!g->made[p]) continue;
    g->v[p] = g->v[p] > band ? band : g->v[p] < -band ? -band : g->v[p];
    front[p] = fabsf(g->v[p]) + 1.0f < band;
  }
  for (int any = 1; any;) {
    any = 0;
    memcpy(snap, g->v, N * sizeof *snap);
    memset(next, 0, N);
    for (uint32_t z = 0; z < g->G; z++)
      for (uint32_t y = 0; y < g->G; y++)
        for (uint32_t x = 0; x < g->G; x++) {
          const uint64_t p = at(g, x, y, z);
          if (g->made[p] == 1) continue;
          int found = 0;
          float best = 0.0f;
          uint64_t best_code = 0;
          for (int d = 0; d < 6; d++) {
            int64_t q[3] = {x, y, z};
            q[d >> 1] += (d & 1) ? 1 : -1;
            if (q[0] < 0 || q[1] < 0 || q[2] < 0 || q[0] >= g->G || q[1] >= g->G || q[2] >= g->G)
              continue;
            const uint64_t qi = at(g, (uint32_t)q[0], (uint32_t)q[1], (uint32_t)q[2]);
            if (!front[qi]) continue;
            float w = snap[qi] < 0.0f ? snap[qi] - 1.0f : snap[qi] + 1.0f;
            w = w > band ? band : w < -band ? -band : w;
            const uint64_t code = check_morton((uint32_t)q[0], (uint32_t)q[1], (uint32_t)q[2]);
            if (!found || fabsf(w) < fabsf(best) || (fabsf(w) == fabsf(best) && code < best_code)) {
              found = 1;
              best = w;
              best_code = code;
            }
          }
          if (!found) continue;
          if (!g->made[p]) {
            g->made[p] = 2;
            g->v[p] = best;
            next[p] = 1;
          } else if (fabsf(best) < fabsf(g->v[p])) {
            g->v[p] = best;
          }
        }
    for (uint64_t p = 0; p < N; p++) {
      front[p] = next[p] && fabsf(g->v[p]) + 1.0f < band;
      any |= front[p];
    }
  }
  free(front);
  free(next);
  free(snap);
}

static void points_match_dense_reference(void) {
  vx_cut c;
  make_cut(&c);
  CHECK(c.count > 10000);
  const float bands[] = {1.0f, 2.5f, 3.0f, 7.5f, 20.0f};
  for (size_t b = 0; b < sizeof bands / sizeof *bands; b++) {
    uint64_t *keys = NULL, n = 0;
    float *vals = NULL;
    uint32_t pad = 0;
    vx_error e;
    CHECK_MSG(vx_cut_points(&c, bands[b], 0, &keys, &vals, &n, &pad, &e) == VX_OK, "%s", e.msg);
    CHECK(pad == (uint32_t)ceilf(bands[b]) + 1);
    grid g;
    reference(&c, bands[b], pad, &g);
    uint64_t want = 0, wrong = 0, missing = 0, sorted = 1, ext = 0;
    for (uint32_t z = 0; z < g.G; z++)
      for (uint32_t y = 0; y < g.G; y++)
        for (uint32_t x = 0; x < g.G; x++) {
          const uint64_t p = at(&g, x, y, z);
          if (!g.made[p]) continue;
          want++;
          ext += g.made[p] == 2;
          /* the point in the sorted keys */
          const uint64_t code = check_morton(x, y, z);
          uint64_t lo = 0, hi = n;
          while (lo < hi) {
            const uint64_t mid = (lo + hi) / 2;
            if (keys[mid] < code) lo = mid + 1;
            else hi = mid;
          }
          if (lo == n || keys[lo] != code) missing++;
          else if (memcmp(&vals[lo], &g.v[p], sizeof(float)) != 0) wrong++;
        }
    for (uint64_t i = 1; i < n; i++) sorted &= keys[i - 1] < keys[i];
    CHECK_MSG(n == want && missing == 0 && wrong == 0 && sorted,
              "band %g: %llu points, the reference %llu (%llu of the extension); %llu missing, "
              "%llu differ", (double)bands[b], (unsigned long long)n, (unsigned long long)want,
              (unsigned long long)ext, (unsigned long long)missing, (unsigned long long)wrong);
    CHECK(bands[b] <= 1.0f || ext > 0);
    free(g.v);
    free(g.made);
    vx_free(keys);
    vx_free(vals);
  }
  vx_cut_free(&c);
}

/* A memory limit below what the points take fails with VX_ERR_LIMIT and gives nothing. */
static void points_refuse_past_the_limit(void) {
  vx_cut c;
  make_cut(&c);
  uint64_t *keys = (uint64_t *)1, n = 7;
  float *vals = (float *)1;
  uint32_t pad = 0;
  vx_error e;
  CHECK(vx_cut_points(&c, 3.0f, 1, &keys, &vals, &n, &pad, &e) == VX_ERR_LIMIT);
  CHECK(keys == NULL && vals == NULL && n == 0);
  CHECK(strstr(e.msg, "memory limit") != NULL);
  vx_cut_free(&c);
}

int main(void) {
  RUN(points_match_dense_reference);
  RUN(points_refuse_past_the_limit);
  return check_summary();
}
