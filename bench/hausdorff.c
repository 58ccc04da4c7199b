/* SPDX-License-Identifier: Apache-2.0 */
/* hausdorff.c - exact point-to-mesh distances over a uniform grid, and Hausdorff estimates from
 * sampled points (hausdorff.h).
 *
 * Grid: about one cell per triangle over the query box; each triangle is listed in every cell its
 * bounding box touches. A query visits rings of cells around the point's cell (Chebyshev distance
 * r = 0, 1, 2, ...) and stops after ring r once the best distance is <= r * h: every cell of a
 * later ring lies farther than that from a point inside the first cell.
 */
#define _POSIX_C_SOURCE 200809L
#include "bench/hausdorff.h"
#include "sys/system.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct vx_hd_grid {
  double lo[3], h;
  int n[3];
  uint64_t *start; /* cells + 1 */
  uint32_t *list;
  double *tri;     /* 9 per triangle */
  uint64_t tri_count;
};

static double dot3(const double *a, const double *b) {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

double vx_hd_point_tri_dist2(const double p[3], const double a[3], const double b[3],
                             const double c[3]) {
  double ab[3], ac[3], ap[3], q[3];
  for (int i = 0; i < 3; i++) ab[i] = b[i] - a[i], ac[i] = c[i] - a[i], ap[i] = p[i] - a[i];
  double d1 = dot3(ab, ap), d2 = dot3(ac, ap);
  if (d1 <= 0 && d2 <= 0) {
    memcpy(q, a, sizeof q);
  } else {
    double bp[3], cp[3];
    for (int i = 0; i < 3; i++) bp[i] = p[i] - b[i], cp[i] = p[i] - c[i];
    double d3 = dot3(ab, bp), d4 = dot3(ac, bp), d5 = dot3(ab, cp), d6 = dot3(ac, cp);
    double vc = d1 * d4 - d3 * d2, vb = d5 * d2 - d1 * d6, va = d3 * d6 - d5 * d4;
    if (d3 >= 0 && d4 <= d3) {
      memcpy(q, b, sizeof q);
    } else if (vc <= 0 && d1 >= 0 && d3 <= 0) {
      double v = d1 / (d1 - d3);
      for (int i = 0; i < 3; i++) q[i] = a[i] + v * ab[i];
    } else if (d6 >= 0 && d5 <= d6) {
      memcpy(q, c, sizeof q);
    } else if (vb <= 0 && d2 >= 0 && d6 <= 0) {
      double w = d2 / (d2 - d6);
      for (int i = 0; i < 3; i++) q[i] = a[i] + w * ac[i];
    } else if (va <= 0 && (d4 - d3) >= 0 && (d5 - d6) >= 0) {
      double w = (d4 - d3) / ((d4 - d3) + (d5 - d6));
      for (int i = 0; i < 3; i++) q[i] = b[i] + w * (c[i] - b[i]);
    } else {
      double den = va + vb + vc;
      double v = den != 0.0 ? vb / den : 0.0, w = den != 0.0 ? vc / den : 0.0;
      for (int i = 0; i < 3; i++) q[i] = a[i] + ab[i] * v + ac[i] * w;
    }
  }
  double d = 0.0;
  for (int i = 0; i < 3; i++) d += (p[i] - q[i]) * (p[i] - q[i]);
  return d;
}

static void corner(const vx_hd_mesh *m, uint64_t t, int k, double out[3]) {
  uint64_t v = m->tri ? m->tri[3 * t + (uint64_t)k] : 3 * t + (uint64_t)k;
  for (int i = 0; i < 3; i++) out[i] = m->pos[3 * v + (uint64_t)i];
}

void vx_hd_bbox(const vx_hd_mesh *m, double lo[3], double hi[3]) {
  for (int i = 0; i < 3; i++) lo[i] = INFINITY, hi[i] = -INFINITY;
  for (uint64_t t = 0; t < m->tri_count; t++)
    for (int k = 0; k < 3; k++) {
      double p[3];
      corner(m, t, k, p);
      for (int i = 0; i < 3; i++) {
        if (p[i] < lo[i]) lo[i] = p[i];
        if (p[i] > hi[i]) hi[i] = p[i];
      }
    }
}

static int cell_of(const vx_hd_grid *g, double x, int axis) {
  int c = (int)floor((x - g->lo[axis]) / g->h);
  return c < 0 ? 0 : c >= g->n[axis] ? g->n[axis] - 1 : c;
}

vx_hd_grid *vx_hd_grid_build(const vx_hd_mesh *m, const double lo[3], const double hi[3]) {
  vx_hd_grid *g = (vx_hd_grid *)calloc(1, sizeof *g);
  if (!g) return NULL;
  double ext[3], vol = 1.0;
  for (int i = 0; i < 3; i++) {
    ext[i] = hi[i] - lo[i];
    if (!(ext[i] > 0)) ext[i] = 1e-9;
    vol *= ext[i];
  }
  double target = m->tri_count > 64 ? (double)m->tri_count : 64.0;
  g->h = cbrt(vol / target);
  for (int i = 0; i < 3; i++) {
    g->lo[i] = lo[i];
    double n = ceil(ext[i] / g->h);
    g->n[i] = n < 1 ? 1 : n > 2048 ? 2048 : (int)n;
  }
  double hmax = 0;
  for (int i = 0; i < 3; i++) hmax = fmax(hmax, ext[i] / g->n[i]);
  g->h = hmax * (1.0 + 1e-9);
  uint64_t cells = (uint64_t)g->n[0] * g->n[1] * g->n[2];
  g->start = (uint64_t *)calloc(cells + 1, sizeof *g->start);
  g->tri = (double *)malloc((m->tri_count ? m->tri_count : 1) * 9 * sizeof(double));
  g->tri_count = m->tri_count;
  if (!g->start || !g->tri) {
    vx_hd_grid_free(g);
    return NULL;
  }
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1) {
      uint64_t run = 0;
      for (uint64_t c = 0; c <= cells; c++) {
        uint64_t k = g->start[c];
        g->start[c] = run;
        run += k;
      }
      g->list = (uint32_t *)malloc((run ? run : 1) * sizeof *g->list);
      if (!g->list) {
        vx_hd_grid_free(g);
        return NULL;
      }
    }
    for (uint64_t t = 0; t < m->tri_count; t++) {
      double p[3][3], a[3], b[3];
      for (int k = 0; k < 3; k++) corner(m, t, k, p[k]);
      if (pass == 0) memcpy(g->tri + 9 * t, p, sizeof p);
      int c0[3], c1[3];
      for (int i = 0; i < 3; i++) {
        a[i] = fmin(p[0][i], fmin(p[1][i], p[2][i]));
        b[i] = fmax(p[0][i], fmax(p[1][i], p[2][i]));
        c0[i] = cell_of(g, a[i], i);
        c1[i] = cell_of(g, b[i], i);
      }
      for (int z = c0[2]; z <= c1[2]; z++)
        for (int y = c0[1]; y <= c1[1]; y++)
          for (int x = c0[0]; x <= c1[0]; x++) {
            uint64_t c = ((uint64_t)z * g->n[1] + y) * g->n[0] + x;
            if (pass == 0) g->start[c]++;
            else g->list[g->start[c]++] = (uint32_t)t;
          }
    }
  }
  /* start[c] is now the end of cell c: shift back. */
  for (uint64_t c = cells; c > 0; c--) g->start[c] = g->start[c - 1];
  g->start[0] = 0;
  return g;
}

void vx_hd_grid_free(vx_hd_grid *g) {
  if (!g) return;
  free(g->start);
  free(g->list);
  free(g->tri);
  free(g);
}

double vx_hd_grid_dist(const vx_hd_grid *g, const double p[3]) {
  int c[3];
  for (int i = 0; i < 3; i++) c[i] = cell_of(g, p[i], i);
  double best = INFINITY;
  int rmax = g->n[0] > g->n[1] ? g->n[0] : g->n[1];
  if (g->n[2] > rmax) rmax = g->n[2];
  for (int r = 0; r <= rmax; r++) {
    for (int z = c[2] - r; z <= c[2] + r; z++) {
      if (z < 0 || z >= g->n[2]) continue;
      for (int y = c[1] - r; y <= c[1] + r; y++) {
        if (y < 0 || y >= g->n[1]) continue;
        int shell = z == c[2] - r || z == c[2] + r || y == c[1] - r || y == c[1] + r;
        for (int x = c[0] - r; x <= c[0] + r; x += shell ? 1 : 2 * r) {
          if (x >= 0 && x < g->n[0]) {
            uint64_t cell = ((uint64_t)z * g->n[1] + y) * g->n[0] + x;
            for (uint64_t k = g->start[cell]; k < g->start[cell + 1]; k++) {
              const double *t = g->tri + 9 * (uint64_t)g->list[k];
              double d = vx_hd_point_tri_dist2(p, t, t + 3, t + 6);
              if (d < best) best = d;
            }
          }
          if (r == 0) break;
        }
      }
    }
    double reach = r * g->h;
    if (best <= reach * reach) break;
  }
  return sqrt(best);
}

/* ---- sampling ------------------------------------------------------------------------------ */

typedef struct hd_job {
  const vx_hd_mesh *a;
  const vx_hd_grid *g;
  const double *cdf;
  double total;
  uint64_t nv, nrand, seed;
  double *d;
  atomic_ulong next;
} hd_job;

static uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}
static double unit(uint64_t x) { return (double)(mix(x) >> 11) * (1.0 / 9007199254740992.0); }

static void sample_point(const hd_job *j, uint64_t i, double p[3]) {
  const vx_hd_mesh *a = j->a;
  if (i < j->nv) {
    for (int k = 0; k < 3; k++) p[k] = a->pos[3 * i + (uint64_t)k];
    return;
  }
  uint64_t s = j->seed * 0x9e3779b97f4a7c15ull + i * 3;
  double r = unit(s) * j->total;
  uint64_t lo = 0, hi = a->tri_count - 1;
  while (lo < hi) {
    uint64_t mid = (lo + hi) / 2;
    if (j->cdf[mid] < r) lo = mid + 1;
    else hi = mid;
  }
  double u = unit(s + 1), v = unit(s + 2);
  if (u + v > 1.0) u = 1.0 - u, v = 1.0 - v;
  double t[3][3];
  for (int k = 0; k < 3; k++) corner(a, lo, k, t[k]);
  for (int k = 0; k < 3; k++) p[k] = t[0][k] + u * (t[1][k] - t[0][k]) + v * (t[2][k] - t[0][k]);
}

static void *hd_worker(void *arg) {
  hd_job *j = (hd_job *)arg;
  const uint64_t n = j->nv + j->nrand, chunk = 4096;
  for (;;) {
    uint64_t b = atomic_fetch_add(&j->next, chunk);
    if (b >= n) break;
    uint64_t e = b + chunk < n ? b + chunk : n;
    for (uint64_t i = b; i < e; i++) {
      double p[3];
      sample_point(j, i, p);
      j->d[i] = vx_hd_grid_dist(j->g, p);
    }
  }
  return NULL;
}

static int cmp_d(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return a < b ? -1 : a > b;
}

int vx_hd_one_sided(const vx_hd_mesh *a, const vx_hd_grid *g, uint64_t random, uint64_t seed,
                    int threads, vx_hd_result *r) {
  memset(r, 0, sizeof *r);
  if (!a->tri_count) return 1;
  hd_job j;
  memset(&j, 0, sizeof j);
  j.a = a;
  j.g = g;
  j.nv = a->tri ? a->vertex_count : 3 * a->tri_count;
  j.nrand = random;
  j.seed = seed;
  double *cdf = (double *)malloc(a->tri_count * sizeof *cdf);
  j.d = (double *)malloc((j.nv + j.nrand) * sizeof *j.d);
  if (!cdf || !j.d) {
    free(cdf);
    free(j.d);
    return 0;
  }
  double total = 0.0;
  for (uint64_t t = 0; t < a->tri_count; t++) {
    double p[3][3], e1[3], e2[3];
    for (int k = 0; k < 3; k++) corner(a, t, k, p[k]);
    for (int i = 0; i < 3; i++) e1[i] = p[1][i] - p[0][i], e2[i] = p[2][i] - p[0][i];
    double x = e1[1] * e2[2] - e1[2] * e2[1], y = e1[2] * e2[0] - e1[0] * e2[2],
           z = e1[0] * e2[1] - e1[1] * e2[0];
    total += 0.5 * sqrt(x * x + y * y + z * z);
    cdf[t] = total;
  }
  j.cdf = cdf;
  j.total = total;
  vx_parallel(threads, hd_worker, &j);
  uint64_t n = j.nv + j.nrand, arg = 0;
  for (uint64_t i = 0; i < n; i++)
    if (j.d[i] > r->max) r->max = j.d[i], arg = i;
  sample_point(&j, arg, r->at);
  /* Mean and percentiles over the points uniform by area (all points when there are none):
   * vertices crowd where the mesh is fine and would weight those places more. */
  uint64_t first = j.nrand ? j.nv : 0, m = n - first;
  double sum = 0.0;
  for (uint64_t i = first; i < n; i++) sum += j.d[i];
  qsort(j.d + first, m, sizeof *j.d, cmp_d);
  r->p99 = j.d[first + (uint64_t)(0.99 * (double)(m - 1))];
  r->p999 = j.d[first + (uint64_t)(0.999 * (double)(m - 1))];
  r->mean = sum / (double)m;
  r->samples = n;
  free(cdf);
  free(j.d);
  return 1;
}

int vx_hd_two_sided(const vx_hd_mesh *a, const vx_hd_mesh *b, const double lo[3],
                    const double hi[3], uint64_t random, int threads, vx_hd_result *r) {
  vx_hd_result ab, ba;
  vx_hd_grid *gb = vx_hd_grid_build(b, lo, hi);
  if (!gb) return 0;
  int ok = vx_hd_one_sided(a, gb, random, 1, threads, &ab);
  vx_hd_grid_free(gb);
  vx_hd_grid *ga = ok ? vx_hd_grid_build(a, lo, hi) : NULL;
  if (!ga) return 0;
  ok = vx_hd_one_sided(b, ga, random, 2, threads, &ba);
  vx_hd_grid_free(ga);
  r->max = fmax(ab.max, ba.max);
  r->max_ab = ab.max;
  r->max_ba = ba.max;
  memcpy(r->at, ab.max >= ba.max ? ab.at : ba.at, sizeof r->at);
  r->mean = fmax(ab.mean, ba.mean);
  r->p99 = fmax(ab.p99, ba.p99);
  r->p999 = fmax(ab.p999, ba.p999);
  r->samples = ab.samples + ba.samples;
  return ok;
}
