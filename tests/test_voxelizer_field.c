/* SPDX-License-Identifier: Apache-2.0 */
/* test_voxelizer_field.c - corner distances and signs against brute force and analytic shapes.
 *
 * Distances: every corner of every surface voxel against all triangles in double (the closest
 * point function is itself checked against sampling in test_voxelizer_overlap). Where the exact
 * distance is <= 1 voxel the stored value must equal it within one quantization step (band/127);
 * beyond, the stored value is an upper bound (clamped at the band). Corners shared by several
 * voxels must carry one value.
 * Signs: on a sphere, a box and a torus, every corner farther than 0.3 voxel from the mesh is
 * negative exactly when the analytic shape contains it; on a sphere with a hole, the same holds
 * away from the hole (sign.c documents the rule).
 */
#include "voxelizer/internal.h"
#include "voxelizer/distance.h"
#include "formats/mesh_import.h"
#include "meshgen.h"
#include "check.h"

#include <string.h>

#if defined(__GNUC__)
#pragma weak vx_soup_import
#endif

typedef int (*inside_fn)(const double *p, const double *prm); /* grid coordinates */

typedef struct run {
  vx_transform xf;
  vx_surface s;
  uint64_t checked_near, checked_sign;
  double max_err;
} run;

static int build(const vx_soup *m, uint32_t depth, run *r) {
  vx_sign_data sg;
  vx_error err;
  vx_surface_opts o;
  memset(&o, 0, sizeof o);
  memset(r, 0, sizeof *r);
  o.band = VX_DEFAULT_BAND;
  o.threads = 2;
  if (vx_voxelize_transform(m, 1u << depth, &r->xf, &err) != VX_OK) return -1;
  if (vx_sign_build(m, &sg, &err) != VX_OK) return -1;
  vx_status st = vx_surface_build(m, &r->xf, depth, &sg, &o, &r->s, NULL, &err);
  vx_sign_free(&sg);
  return st == VX_OK ? 0 : -1;
}

static double exact_dist(const vx_soup *m, const vx_transform *xf, const double *p) {
  double best = INFINITY;
  for (uint64_t t = 0; t < m->tri_count; t++) {
    double g[9];
    vx_grid_tri(m, xf, t, g);
    double d = vx_tri_dist2(p, g, NULL);
    if (d < best) best = d;
  }
  return sqrt(best);
}

/* Checks every corner; `inside` may be NULL (distances only); `skip` (may be NULL) excludes
 * corners from the sign check. */
static void check_field(const vx_soup *m, uint32_t depth, inside_fn inside, const double *prm,
                        inside_fn skip, const char *name) {
  run r;
  CHECK(build(m, depth, &r) == 0);
  const int64_t C = ((int64_t)1 << depth) + 1;
  double *memo = (double *)malloc((size_t)(C * C * C) * sizeof(double));
  int *seen = (int *)malloc((size_t)(C * C * C) * sizeof(int));
  for (int64_t i = 0; i < C * C * C; i++) memo[i] = -1.0, seen[i] = 1000;
  const float band = VX_DEFAULT_BAND, step = band / 127.0f;
  int bad = 0;
  uint64_t near = 0, signs = 0;
  for (uint64_t i = 0; i < r.s.count && bad < 10; i++) {
    uint32_t x, y, z;
    vx_morton_decode(r.s.codes[i], &x, &y, &z);
    for (int c = 0; c < 8; c++) {
      int64_t cx = x + (c & 1), cy = y + (c >> 1 & 1), cz = z + (c >> 2 & 1);
      int64_t k = (cz * C + cy) * C + cx;
      double p[3] = {(double)cx, (double)cy, (double)cz};
      int q = r.s.field[i].c[c];
      /* one magnitude per corner; the sign may differ in a voxel re-signed as a feature thinner
       * than a voxel (field.c, vx_block_thin_fix) */
      if (seen[k] != 1000 && abs(seen[k]) != abs(q)) {
        bad++;
        CHECK_MSG(0, "%s: corner (%lld,%lld,%lld) has two values %d and %d", name, (long long)cx,
                  (long long)cy, (long long)cz, seen[k], q);
      }
      seen[k] = q;
      if (memo[k] < 0.0) memo[k] = exact_dist(m, &r.xf, p);
      double e = memo[k], v = vx_corner_value((int8_t)q, band);
      if (e <= 1.0) {
        near++;
        if (!(fabs(fabs(v) - e) <= step)) {
          bad++;
          CHECK_MSG(0, "%s: corner (%g,%g,%g): stored %g, exact %g", name, p[0], p[1], p[2], v, e);
        }
      } else if (!(fabs(v) >= fmin(e, band) - step)) {
        bad++;
        CHECK_MSG(0, "%s: corner (%g,%g,%g): stored %g below exact %g", name, p[0], p[1], p[2], v, e);
      }
      if (inside && e > 0.3 && !(skip && skip(p, prm))) {
        signs++;
        int want = inside(p, prm);
        if ((v < 0.0) != want) {
          bad++;
          CHECK_MSG(0, "%s: corner (%g,%g,%g) at distance %g: value %g but %s", name, p[0], p[1],
                    p[2], e, v, want ? "inside" : "outside");
        }
      }
    }
  }
  /* Sign flips between neighbouring corners need the surface between them: |a| + |b| <= 1 for a
   * distance field, up to two quantization steps. Count the flips that break this. */
  uint64_t flips = 0, bad_flips = 0;
  for (int64_t z = 0; z < C; z++)
    for (int64_t y = 0; y < C; y++)
      for (int64_t x = 0; x < C; x++) {
        int64_t k = (z * C + y) * C + x, nb[3] = {k + 1, k + C, k + C * C};
        int ok[3] = {x + 1 < C, y + 1 < C, z + 1 < C};
        for (int a = 0; a < 3; a++) {
          if (!ok[a] || seen[k] == 1000 || seen[nb[a]] == 1000) continue;
          if ((seen[k] < 0 && seen[nb[a]] > 0) || (seen[k] > 0 && seen[nb[a]] < 0)) {
            flips++;
            double sum = fabs(vx_corner_value((int8_t)seen[k], band)) +
                         fabs(vx_corner_value((int8_t)seen[nb[a]], band));
            bad_flips += sum > 1.0 + 2.0 * step;
          }
        }
      }
  if (inside && !skip) CHECK_MSG(bad_flips == 0, "%s: %llu sign flips without a surface between",
                                 name, (unsigned long long)bad_flips);
  fprintf(stderr, "  %s: %llu sign changes between neighbouring corners, %llu too far apart\n",
          name, (unsigned long long)flips, (unsigned long long)bad_flips);
  CHECK(near > 100);
  CHECK(!inside || signs > 100);
  fprintf(stderr, "  %s R=%d: %llu voxels, %llu near corners, %llu signs checked\n", name,
          1 << depth, (unsigned long long)r.s.count, (unsigned long long)near,
          (unsigned long long)signs);
  free(memo);
  free(seen);
  vx_surface_free(&r.s);
}

/* prm for the sphere: centre (3), radius, in grid coordinates. */
static int in_sphere(const double *p, const double *s) {
  double d2 = (p[0] - s[0]) * (p[0] - s[0]) + (p[1] - s[1]) * (p[1] - s[1]) + (p[2] - s[2]) * (p[2] - s[2]);
  return d2 < s[3] * s[3];
}
/* prm for the box: lo (3), hi (3). */
static int in_box(const double *p, const double *b) {
  return p[0] > b[0] && p[1] > b[1] && p[2] > b[2] && p[0] < b[3] && p[1] < b[4] && p[2] < b[5];
}
/* prm for the torus: centre (3), R, r. */
static int in_torus(const double *p, const double *t) {
  double x = p[0] - t[0], y = p[1] - t[1], z = p[2] - t[2];
  double a = sqrt(x * x + y * y) - t[3];
  return a * a + z * z < t[4] * t[4];
}
/* Sphere with a hole: prm[4] is the grid z above which corners are near the hole. */
static int near_hole(const double *p, const double *s) { return p[2] > s[4]; }

static void to_grid(const vx_transform *xf, const double *w, double *g) {
  for (int i = 0; i < 3; i++) g[i] = (w[i] - xf->origin[i]) / xf->scale;
}

static void field_sphere(void) {
  vx_soup m = {0};
  double c[3] = {0.1, -0.2, 0.3};
  CHECK(meshgen_sphere(&m, c[0], c[1], c[2], 1.0, 48, 24) == 0);
  for (uint32_t d = 4; d <= 5; d++) {
    vx_transform xf;
    vx_voxelize_transform(&m, 1u << d, &xf, NULL);
    double prm[4];
    to_grid(&xf, c, prm);
    prm[3] = 1.0 / xf.scale;
    check_field(&m, d, in_sphere, prm, NULL, "sphere");
  }
  vx_soup_free(&m);
}

static void field_box(void) {
  vx_soup m = {0};
  double lo[3] = {-0.37, 0.11, -0.2}, hi[3] = {0.9, 0.8, 0.5};
  CHECK(meshgen_box(&m, lo, hi) == 0);
  for (uint32_t d = 4; d <= 5; d++) {
    vx_transform xf;
    vx_voxelize_transform(&m, 1u << d, &xf, NULL);
    double prm[6];
    to_grid(&xf, lo, prm);
    to_grid(&xf, hi, prm + 3);
    check_field(&m, d, in_box, prm, NULL, "box");
  }
  vx_soup_free(&m);
}

static void field_torus(void) {
  vx_soup m = {0};
  double c[3] = {0.0, 0.05, -0.1};
  CHECK(meshgen_torus(&m, c[0], c[1], c[2], 1.0, 0.4, 96, 32) == 0);
  for (uint32_t d = 4; d <= 5; d++) {
    vx_transform xf;
    vx_voxelize_transform(&m, 1u << d, &xf, NULL);
    double prm[5];
    to_grid(&xf, c, prm);
    prm[3] = 1.0 / xf.scale;
    prm[4] = 0.4 / xf.scale;
    check_field(&m, d, in_torus, prm, NULL, "torus");
  }
  vx_soup_free(&m);
}

/* An open thin sheet: distances exact near it (no sign to check: it has no inside). */
static void field_thin_sheet_distances(void) {
  vx_soup m = {0};
  double p0[3] = {-1.0, -0.8, 0.1}, u[3] = {2.0, 0.3, 0.2}, w[3] = {0.1, 1.5, 0.4};
  CHECK(meshgen_sheet(&m, p0, u, w) == 0);
  check_field(&m, 5, NULL, NULL, NULL, "sheet");
  vx_soup_free(&m);
}

/* Documented behaviour with a hole (sign.c): inside negative, outside positive wherever the
 * closest feature is intact surface, i.e. below the rim by more than two voxels. */
static void field_sphere_with_hole(void) {
  vx_soup m = {0};
  double c[3] = {0.0, 0.0, 0.0};
  CHECK(meshgen_sphere_ex(&m, c[0], c[1], c[2], 1.0, 48, 24, 0.7) == 0);
  double zmax = -INFINITY;
  for (uint64_t i = 0; i < m.tri_count * 3; i++) zmax = fmax(zmax, m.pos[i * 3 + 2]);
  vx_transform xf;
  vx_voxelize_transform(&m, 32, &xf, NULL);
  double prm[5];
  to_grid(&xf, c, prm);
  prm[3] = 1.0 / xf.scale;
  prm[4] = (zmax - xf.origin[2]) / xf.scale - 2.0;
  check_field(&m, 5, in_sphere, prm, near_hole, "sphere with hole");
  vx_soup_free(&m);
}

/* Small real mesh (data/bunny_res4.ply): distances only (it is open at the bottom). */
static void field_bunny_res4_distances(void) {
  char buf[1024];
  const char *path = check_data_mesh("bunny_res4.ply", buf, sizeof buf);
  vx_soup m = {0};
  vx_error err;
  CHECK_MSG(vx_soup_import != NULL, "no mesh importer linked");
  if (!vx_soup_import) return;
  vx_status is = vx_soup_import(path, &m, &err);
  CHECK_MSG(is == VX_OK, "%s: %s", path, err.msg);
  if (is != VX_OK) return;
  check_field(&m, 5, NULL, NULL, NULL, "bunny_res4");
  vx_soup_free(&m);
}

int main(void) {
  RUN(field_sphere);
  RUN(field_box);
  RUN(field_torus);
  RUN(field_thin_sheet_distances);
  RUN(field_sphere_with_hole);
  RUN(field_bunny_res4_distances);
  return check_summary();
}
