/* SPDX-License-Identifier: Apache-2.0 */
/* test_mesher_bound.c - `mesh --error E` keeps its promise: the mesh of the error cut and the
 * full-detail mesh of the same tree are within E finest voxels of each other, both ways (plus
 * the field's quantization step), on analytic shapes and on the scanned bunnies in data/.
 *
 * The reference is independent of the mesher: points sampled on one mesh (every vertex, every
 * edge midpoint, every centroid, and random points on random triangles) are measured against every
 * triangle of the other mesh near them with an exact point-to-triangle distance in double
 * precision written here (the closest point by the triangle's Voronoi regions, Ericson's
 * "Real-Time Collision Detection" 5.1.5). "Near": a uniform grid of triangle lists; a query looks
 * at every triangle whose bounding box meets the cube of half-side L around the point, which
 * holds every triangle closer than L, so distances up to L are exact and larger ones are
 * reported as beyond L.
 */
#include "formats/mesh_import.h"
#include "mesher/mesher.h"
#include "voxelizer/voxelizer.h"
#include "check.h"
#include "meshgen.h"

#include <stdint.h>

/* ---- exact distances -------------------------------------------------------------------------- */

static double dot(const double *a, const double *b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

static double point_triangle2(const double p[3], const double *a, const double *b, const double *c) {
  double ab[3], ac[3], ap[3], bp[3], cp[3], q[3];
  for (int i = 0; i < 3; i++) {
    ab[i] = b[i] - a[i], ac[i] = c[i] - a[i];
    ap[i] = p[i] - a[i], bp[i] = p[i] - b[i], cp[i] = p[i] - c[i];
  }
  double d1 = dot(ab, ap), d2 = dot(ac, ap), d3 = dot(ab, bp), d4 = dot(ac, bp);
  double d5 = dot(ab, cp), d6 = dot(ac, cp);
  double va = d3 * d6 - d5 * d4, vb = d5 * d2 - d1 * d6, vc = d1 * d4 - d3 * d2;
  if (d1 <= 0 && d2 <= 0) { /* vertex a */
    for (int i = 0; i < 3; i++) q[i] = a[i];
  } else if (d3 >= 0 && d4 <= d3) { /* vertex b */
    for (int i = 0; i < 3; i++) q[i] = b[i];
  } else if (d6 >= 0 && d5 <= d6) { /* vertex c */
    for (int i = 0; i < 3; i++) q[i] = c[i];
  } else if (vc <= 0 && d1 >= 0 && d3 <= 0) { /* edge ab */
    double t = d1 / (d1 - d3);
    for (int i = 0; i < 3; i++) q[i] = a[i] + t * ab[i];
  } else if (vb <= 0 && d2 >= 0 && d6 <= 0) { /* edge ac */
    double t = d2 / (d2 - d6);
    for (int i = 0; i < 3; i++) q[i] = a[i] + t * ac[i];
  } else if (va <= 0 && d4 - d3 >= 0 && d5 - d6 >= 0) { /* edge bc */
    double t = (d4 - d3) / ((d4 - d3) + (d5 - d6));
    for (int i = 0; i < 3; i++) q[i] = b[i] + t * (c[i] - b[i]);
  } else { /* inside */
    double s = va + vb + vc, v = s != 0 ? vb / s : 0, w = s != 0 ? vc / s : 0;
    for (int i = 0; i < 3; i++) q[i] = a[i] + v * ab[i] + w * ac[i];
  }
  double d = 0;
  for (int i = 0; i < 3; i++) d += (p[i] - q[i]) * (p[i] - q[i]);
  return d;
}

typedef struct mesh3 {
  double *t; /* 9 per triangle */
  uint64_t n;
} mesh3;

static mesh3 mesh_of(const vx_dc_mesh *m, double scale) {
  mesh3 r;
  r.n = m->triangle_count;
  r.t = (double *)malloc((r.n ? r.n : 1) * 9 * sizeof(double));
  for (uint64_t i = 0; i < r.n; i++)
    for (int k = 0; k < 3; k++)
      for (int c = 0; c < 3; c++)
        r.t[9 * i + 3 * k + c] = (double)m->pos[3 * (uint64_t)m->tri[3 * i + k] + c] / scale;
  return r;
}

/* Triangles binned by their bounding boxes into cubes of side h. */
typedef struct bins {
  double lo[3], h;
  int64_t n[3];
  uint64_t *start;
  uint32_t *list;
} bins;

static int64_t cell(const bins *b, double x, int a) {
  int64_t c = (int64_t)floor((x - b->lo[a]) / b->h);
  return c < 0 ? 0 : c >= b->n[a] ? b->n[a] - 1 : c;
}

static void bins_build(bins *b, const mesh3 *m, double h) {
  for (int a = 0; a < 3; a++) b->lo[a] = INFINITY;
  double hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  for (uint64_t i = 0; i < m->n * 3; i++)
    for (int a = 0; a < 3; a++) {
      b->lo[a] = fmin(b->lo[a], m->t[3 * i + a]);
      hi[a] = fmax(hi[a], m->t[3 * i + a]);
    }
  b->h = h;
  for (int a = 0; a < 3; a++) b->n[a] = (int64_t)((hi[a] - b->lo[a]) / h) + 1;
  uint64_t cells = (uint64_t)(b->n[0] * b->n[1] * b->n[2]);
  b->start = (uint64_t *)calloc(cells + 1, sizeof(uint64_t));
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1) {
      for (uint64_t c = 0; c < cells; c++) b->start[c + 1] += b->start[c];
      b->list = (uint32_t *)malloc((b->start[cells] ? b->start[cells] : 1) * sizeof(uint32_t));
    }
    for (uint64_t i = 0; i < m->n; i++) {
      const double *t = m->t + 9 * i;
      int64_t c0[3], c1[3];
      for (int a = 0; a < 3; a++) {
        c0[a] = cell(b, fmin(t[a], fmin(t[3 + a], t[6 + a])), a);
        c1[a] = cell(b, fmax(t[a], fmax(t[3 + a], t[6 + a])), a);
      }
      for (int64_t z = c0[2]; z <= c1[2]; z++)
        for (int64_t y = c0[1]; y <= c1[1]; y++)
          for (int64_t x = c0[0]; x <= c1[0]; x++) {
            uint64_t c = (uint64_t)((z * b->n[1] + y) * b->n[0] + x);
            if (pass == 0) b->start[c + 1]++;
            else b->list[b->start[c]++] = (uint32_t)i;
          }
    }
    if (pass == 1) /* start[c] moved to the end of cell c: shift back */
      for (uint64_t c = cells; c > 0; c--) b->start[c] = b->start[c - 1];
    if (pass == 1) b->start[0] = 0;
  }
}

/* The distance from p to m when it is <= L, else a value > L. */
static double dist_within(const bins *b, const mesh3 *m, const double p[3], double L) {
  double best = (L + 1.0) * (L + 1.0);
  int64_t c0[3], c1[3];
  for (int a = 0; a < 3; a++) c0[a] = cell(b, p[a] - L, a), c1[a] = cell(b, p[a] + L, a);
  for (int64_t z = c0[2]; z <= c1[2]; z++)
    for (int64_t y = c0[1]; y <= c1[1]; y++)
      for (int64_t x = c0[0]; x <= c1[0]; x++) {
        uint64_t c = (uint64_t)((z * b->n[1] + y) * b->n[0] + x);
        for (uint64_t k = b->start[c]; k < b->start[c + 1]; k++) {
          const double *t = m->t + 9 * (uint64_t)b->list[k];
          double d = point_triangle2(p, t, t + 3, t + 6);
          if (d < best) best = d;
        }
      }
  return sqrt(best);
}

static uint64_t rng = 0x2545f4914f6cdd1dull;
static double urand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (double)(rng >> 11) * (1.0 / 9007199254740992.0);
}

/* The largest distance from a's sample points to b (capped just above L). */
static double one_sided(const mesh3 *a, const mesh3 *b, double L, uint64_t random) {
  bins g;
  bins_build(&g, b, 2.0);
  double worst = 0.0;
  for (uint64_t i = 0; i < a->n; i++) {
    const double *t = a->t + 9 * i;
    double p[7][3];
    for (int c = 0; c < 3; c++) {
      p[0][c] = t[c], p[1][c] = t[3 + c], p[2][c] = t[6 + c];
      p[3][c] = 0.5 * (t[c] + t[3 + c]), p[4][c] = 0.5 * (t[3 + c] + t[6 + c]);
      p[5][c] = 0.5 * (t[6 + c] + t[c]), p[6][c] = (t[c] + t[3 + c] + t[6 + c]) / 3.0;
    }
    for (int k = 0; k < 7; k++) worst = fmax(worst, dist_within(&g, b, p[k], L));
  }
  for (uint64_t s = 0; s < random && a->n; s++) {
    uint64_t i = (uint64_t)(urand() * (double)a->n);
    if (i >= a->n) i = a->n - 1;
    const double *t = a->t + 9 * i;
    double u = urand(), v = urand(), q[3];
    if (u + v > 1.0) u = 1.0 - u, v = 1.0 - v;
    for (int c = 0; c < 3; c++) q[c] = t[c] + u * (t[3 + c] - t[c]) + v * (t[6 + c] - t[c]);
    worst = fmax(worst, dist_within(&g, b, q, L));
  }
  free(g.start);
  free(g.list);
  return worst;
}

/* ---- the bound ---------------------------------------------------------------------------------- */

static int extract(const vx_octree *t, int cut, float err, vx_dc_mesh *m, vx_dc_stats *st) {
  vx_dc_opts o;
  memset(&o, 0, sizeof o);
  o.cut = cut;
  o.max_error = err;
  o.threads = 2;
  vx_error e;
  vx_status s = vx_dc_extract(t, &o, m, st, &e);
  CHECK_MSG(s == VX_OK, "extract: %s", e.msg);
  return s == VX_OK;
}

/* Every error cut of s at res^3 within E (+ the quantization step) of the full-detail mesh; at
 * E = 2 at most max_ratio of the full-detail triangles (the cut must coarsen, not only hold). */
static void check_bound(const vx_soup *s, uint32_t res, const char *name, double max_ratio) {
  vx_voxelize_opts vo;
  memset(&vo, 0, sizeof vo);
  vo.resolution = res;
  vo.threads = 2;
  vx_octree t;
  vx_error e;
  vx_status st = vx_voxelize(s, &vo, &t, NULL, &e);
  CHECK_MSG(st == VX_OK, "%s: voxelize: %s", name, e.msg);
  if (st != VX_OK) return;
  const double q = (double)t.band / 127.0; /* quantization step, finest voxels */
  vx_dc_mesh full;
  if (!extract(&t, VX_DC_FINEST, 0.0f, &full, NULL)) {
    vx_octree_free(&t);
    return;
  }
  mesh3 F = mesh_of(&full, t.xf.scale);
  const float errs[4] = {0.5f, 1.0f, 2.0f, 4.0f};
  for (int k = 0; k < 4; k++) {
    vx_dc_mesh m;
    vx_dc_stats ds;
    if (!extract(&t, VX_DC_ERROR, errs[k], &m, &ds)) continue;
    mesh3 M = mesh_of(&m, t.xf.scale);
    /* Positions are floats in world units: allow their rounding too. */
    const double tol = errs[k] + q + 1e-3, L = tol + 0.5;
    double ab = one_sided(&M, &F, L, 20000), ba = one_sided(&F, &M, L, 20000);
    fprintf(stderr, "  %s %u^3 --error %g: %llu of %llu triangles, levels %u..%u, %u passes; "
            "mesh->full %.3f, full->mesh %.3f voxels (bound %.3f)\n", name, res, (double)errs[k],
            (unsigned long long)m.triangle_count, (unsigned long long)full.triangle_count,
            ds.level_min, ds.level_max, ds.passes, ab, ba, tol);
    CHECK_MSG(ab <= tol && ba <= tol, "%s --error %g: %.3f / %.3f voxels from full detail > %.3f",
              name, (double)errs[k], ab, ba, tol);
    if (errs[k] == 2.0f)
      CHECK_MSG((double)m.triangle_count <= max_ratio * (double)full.triangle_count,
                "%s --error 2: %llu triangles, full detail %llu: the cut did not coarsen", name,
                (unsigned long long)m.triangle_count, (unsigned long long)full.triangle_count);
    free(M.t);
    vx_dc_mesh_free(&m);
  }
  free(F.t);
  vx_dc_mesh_free(&full);
  vx_octree_free(&t);
}

static void bound_sphere(void) {
  vx_soup s;
  memset(&s, 0, sizeof s);
  meshgen_sphere(&s, 0.1, -0.2, 0.05, 1.0, 96, 48);
  check_bound(&s, 64, "sphere", 0.25);
  vx_soup_free(&s);
}

static void bound_torus(void) {
  vx_soup s;
  memset(&s, 0, sizeof s);
  meshgen_torus(&s, 0.0, 0.0, 0.0, 1.0, 0.35, 96, 48);
  check_bound(&s, 64, "torus", 0.35);
  vx_soup_free(&s);
}

/* Sharp edges and corners, turned off the grid's axes. */
static void bound_box(void) {
  vx_soup s;
  memset(&s, 0, sizeof s);
  const double lo[3] = {-0.8, -0.6, -0.5}, hi[3] = {0.7, 0.5, 0.6};
  meshgen_box(&s, lo, hi);
  const double axis[3] = {0.48, 0.6, 0.64};
  meshgen_rotate(&s, axis, 0.5);
  check_bound(&s, 64, "box", 0.35);
  vx_soup_free(&s);
}

/* A plate about two voxels thick: two sheets close together in every coarse cell. */
static void bound_plate(void) {
  vx_soup s;
  memset(&s, 0, sizeof s);
  const double lo[3] = {-1.0, -0.8, -0.035}, hi[3] = {1.0, 0.8, 0.035};
  meshgen_box(&s, lo, hi);
  const double axis[3] = {0.6, 0.0, 0.8};
  meshgen_rotate(&s, axis, 0.3);
  check_bound(&s, 64, "plate", 0.5);
  vx_soup_free(&s);
}

static void bound_bunnies(void) {
  const char *files[2] = {"bunny_res4.ply", "bunny.ply"};
  const uint32_t res[2] = {64, 128};
  for (int k = 0; k < 2; k++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", VX_DATA_DIR, files[k]);
    vx_soup s;
    vx_error e;
    vx_status st = vx_soup_import(path, &s, &e);
    CHECK_MSG(st == VX_OK, "%s: %s", path, e.msg);
    if (st != VX_OK) continue;
    check_bound(&s, res[k], files[k], 0.5);
    vx_soup_free(&s);
  }
}

int main(void) {
  RUN(bound_sphere);
  RUN(bound_torus);
  RUN(bound_box);
  RUN(bound_plate);
  RUN(bound_bunnies);
  return check_summary();
}
