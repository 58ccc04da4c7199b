/* SPDX-License-Identifier: Apache-2.0 */
/* test_voxelizer_sign.c - the winding-number sign rule (winding.c) against brute force.
 *
 * The reference winding number sums every triangle's solid angle in long double by the spherical
 * excess (Girard's theorem), a different formula from the code's Van Oosterom-Strackee one.
 * - Closed analytic meshes (sphere, box, torus): at random points the reference is 0 or 1 and
 *   equals the analytic inside test wherever the point is clear of the surface; the hierarchical
 *   value is within VX_WIND_TOL of the reference, near the surface and far from it.
 * - The bunny and a sphere with a hole: hierarchical within VX_WIND_TOL of the reference.
 * - Voxelized fields: on analytic shapes every corner clear of the surface has the analytic sign;
 *   on the four messy meshes each corner's sign is |w| > 1/2 of the reference wherever |w| is not
 *   within 0.05 of 1/2 (corners within 0.1 voxel of the mesh among them: clean pseudo-normals
 *   decide those from 0.01 voxel on), and the documented behaviour shows: duplicates with both windings give no
 *   negative corner, the hole has a membrane (corners with w near 1/2), an inverted sphere has
 *   the same signs as a correct one (the pseudo-normal rule inverts them instead); two
 *   overlapping boxes are inside throughout, the overlap (w = 2) included.
 * - The field does not depend on threads or block size.
 * - Two points evaluated in one walk of the tree (vx_wind_eval2) get one walk's bits each.
 *
 * `test_voxelizer_sign MESH [N]` times N (default 200000) hierarchical queries near the surface.
 */
#include "voxelizer/internal.h"
#include "voxelizer/winding.h"
#include "sys/system.h"
#include "formats/mesh_import.h"
#include "meshgen.h"
#include "check.h"

#include <string.h>
#include <time.h>

#if defined(__GNUC__)
#pragma weak vx_soup_import
#endif

/* ---- reference ------------------------------------------------------------------------------- */

static long double angle_between(const long double *u, const long double *v) {
  long double c[3] = {u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]};
  return atan2l(sqrtl(c[0] * c[0] + c[1] * c[1] + c[2] * c[2]), u[0] * v[0] + u[1] * v[1] + u[2] * v[2]);
}

static void cross_l(const long double *a, const long double *b, long double *c) {
  c[0] = a[1] * b[2] - a[2] * b[1];
  c[1] = a[2] * b[0] - a[0] * b[2];
  c[2] = a[0] * b[1] - a[1] * b[0];
}

/* Solid angle / 4pi of triangle g (9 doubles) from p: spherical excess, signed by orientation. */
static long double ref_triangle(const double *g, const double *p) {
  long double v[3][3];
  for (int k = 0; k < 3; k++) {
    long double l = 0;
    for (int i = 0; i < 3; i++) {
      v[k][i] = (long double)g[k * 3 + i] - p[i];
      l += v[k][i] * v[k][i];
    }
    l = sqrtl(l);
    if (l == 0) return 0;
    for (int i = 0; i < 3; i++) v[k][i] /= l;
  }
  long double n[3];
  cross_l(v[1], v[2], n);
  long double det = v[0][0] * n[0] + v[0][1] * n[1] + v[0][2] * n[2];
  if (det == 0) return 0;
  long double ex = -(long double)M_PI;
  for (int k = 0; k < 3; k++) { /* angle at vertex k between the great arcs to the other two */
    long double a[3], b[3];
    cross_l(v[k], v[(k + 1) % 3], a);
    cross_l(v[k], v[(k + 2) % 3], b);
    ex += angle_between(a, b);
  }
  return (det > 0 ? ex : -ex) / (4.0L * (long double)M_PI);
}

static double ref_winding(const vx_soup *m, const vx_transform *xf, const double *p) {
  long double w = 0;
  for (uint64_t t = 0; t < m->tri_count; t++) {
    double g[9];
    if (xf) vx_grid_tri(m, xf, t, g);
    else
      for (int i = 0; i < 9; i++) g[i] = m->pos[t * 9 + i];
    w += ref_triangle(g, p);
  }
  return (double)w;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double rnd(void) { /* uniform in [0, 1) */
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(rng_state >> 11) * (1.0 / 9007199254740992.0);
}

/* A random point: near the surface (on a random triangle, pushed along its normal by up to
 * `near` world units), or uniform in the bounding box grown by half its size. */
static void random_point(const vx_soup *m, int is_near, double near, double *p) {
  if (is_near) {
    uint64_t t = (uint64_t)(rnd() * (double)m->tri_count);
    const float *v = m->pos + t * 9;
    double a = rnd(), b = rnd();
    if (a + b > 1) a = 1 - a, b = 1 - b;
    double u[3], w[3], n[3];
    for (int i = 0; i < 3; i++) {
      u[i] = (double)v[3 + i] - v[i];
      w[i] = (double)v[6 + i] - v[i];
    }
    n[0] = u[1] * w[2] - u[2] * w[1], n[1] = u[2] * w[0] - u[0] * w[2], n[2] = u[0] * w[1] - u[1] * w[0];
    double l = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
    double s = (2 * rnd() - 1) * near / (l > 0 ? l : 1);
    for (int i = 0; i < 3; i++) p[i] = v[i] + a * u[i] + b * w[i] + s * n[i];
  } else {
    for (int i = 0; i < 3; i++) {
      double e = m->bbox_max[i] - m->bbox_min[i];
      p[i] = m->bbox_min[i] - 0.5 * e + 2.0 * e * rnd();
    }
  }
}

/* ---- hierarchical against reference ---------------------------------------------------------- */

typedef int (*inside_fn)(const double *p); /* world coordinates: the winding number of the
                                              closed shape(s); -1 when too close to tell */

static int in_sphere(const double *p) { /* unit sphere, polygon within 1% of it */
  double r = sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2]);
  return r < 0.985 ? 1 : r > 1.005 ? 0 : -1;
}
static int in_sphere_coarse(const double *p) { /* unit sphere as a 24 x 12 polygon */
  double r = sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2]);
  return r < 0.96 ? 1 : r > 1.005 ? 0 : -1;
}
static int in_box(const double *p) { /* [-1, 1] x [-0.5, 0.5] x [-0.25, 0.75] */
  const double lo[3] = {-1, -0.5, -0.25}, hi[3] = {1, 0.5, 0.75};
  double d = -INFINITY;
  for (int i = 0; i < 3; i++) d = fmax(d, fmax(lo[i] - p[i], p[i] - hi[i]));
  return d < -1e-4 ? 1 : d > 1e-4 ? 0 : -1;
}
static int in_torus(const double *p) { /* R = 1, r = 0.3 around z */
  double q = sqrt(p[0] * p[0] + p[1] * p[1]) - 1.0, d = sqrt(q * q + p[2] * p[2]) - 0.3;
  return d < -0.01 ? 1 : d > 0.002 ? 0 : -1;
}

/* Two overlapping boxes, each closed and outward-wound: a self-intersecting union. */
static const double ua_lo[3] = {-1, -0.5, -0.5}, ua_hi[3] = {0.3, 0.5, 0.5};
static const double ub_lo[3] = {-0.3, -0.4, -0.6}, ub_hi[3] = {1, 0.6, 0.4};
static double box_sd(const double *p, const double *lo, const double *hi) {
  double d = -INFINITY;
  for (int i = 0; i < 3; i++) d = fmax(d, fmax(lo[i] - p[i], p[i] - hi[i]));
  return d;
}
static int in_union(const double *p) { /* the exact winding number: 0, 1 or 2 */
  double a = box_sd(p, ua_lo, ua_hi), b = box_sd(p, ub_lo, ub_hi);
  if (fabs(a) < 1e-3 || fabs(b) < 1e-3) return -1;
  return (a < 0) + (b < 0);
}

static void compare_points(const vx_soup *m, const char *name, int n, double near,
                           inside_fn inside) {
  vx_wind_tree t;
  vx_error err;
  CHECK_MSG(vx_wind_build(m, NULL, 0, &t, &err) == VX_OK, "%s: %s", name, err.msg);
  double worst = 0.0;
  int bad = 0, clear = 0;
  for (int k = 0; k < n && bad < 5; k++) {
    double p[3];
    random_point(m, k % 2 == 0, near, p);
    double ref = ref_winding(m, NULL, p), w = vx_wind_at(&t, p), e = fabs(w - ref);
    if (e > worst) worst = e;
    if (!(e <= VX_WIND_TOL)) {
      bad++;
      CHECK_MSG(0, "%s: at (%g,%g,%g) hierarchical %.6f, exact %.6f", name, p[0], p[1], p[2], w,
                ref);
    }
    int in = inside ? inside(p) : -1;
    if (in >= 0) {
      clear++;
      if (!(fabs(ref - in) < 1e-9 && (w > 0.5) == (in > 0))) {
        bad++;
        CHECK_MSG(0, "%s: at (%g,%g,%g) exact %.12f, hierarchical %.6f, inside %d", name, p[0],
                  p[1], p[2], ref, w, in);
      }
    }
  }
  CHECK(!inside || clear > n / 3);
  fprintf(stderr, "  %s: %llu triangles, %llu nodes, %d points, max |fast - exact| %.2e\n", name,
          (unsigned long long)t.tri_count, (unsigned long long)t.node_count, n, worst);
  vx_wind_free(&t);
}

static void winding_closed_meshes_are_indicators(void) {
  vx_soup m = {0};
  CHECK(meshgen_sphere(&m, 0, 0, 0, 1.0, 96, 48) == 0);
  compare_points(&m, "sphere", 400, 0.05, in_sphere);
  vx_soup_free(&m);
  const double lo[3] = {-1, -0.5, -0.25}, hi[3] = {1, 0.5, 0.75};
  CHECK(meshgen_box(&m, lo, hi) == 0);
  compare_points(&m, "box", 600, 0.05, in_box);
  vx_soup_free(&m);
  CHECK(meshgen_torus(&m, 0, 0, 0, 1.0, 0.3, 128, 48) == 0);
  compare_points(&m, "torus", 400, 0.05, in_torus);
  vx_soup_free(&m);
}

static void winding_fast_matches_exact_on_open_meshes(void) {
  vx_soup m = {0};
  CHECK(meshgen_sphere_ex(&m, 0, 0, 0, 1.0, 64, 32, 0.6) == 0);
  compare_points(&m, "sphere with hole", 600, 0.05, NULL);
  vx_soup_free(&m);
  const char *names[] = {"bunny_res4.ply", "bunny.ply"};
  const int counts[] = {1000, 160};
  for (int i = 0; i < 2; i++) {
    char buf[1024];
    const char *path = check_data_mesh(names[i], buf, sizeof buf);
    vx_error err;
    memset(&m, 0, sizeof m);
    CHECK_MSG(vx_soup_import != NULL, "no mesh importer linked");
    if (!vx_soup_import) return;
    vx_status is = vx_soup_import(path, &m, &err);
    CHECK_MSG(is == VX_OK, "%s: %s", names[i], err.msg);
    if (is != VX_OK) continue;
    compare_points(&m, names[i], counts[i], 0.002, NULL);
    vx_soup_free(&m);
  }
}

/* vx_wind_eval2 (two points, one walk: the clean test's two sides of a face) gives each point's
 * vx_wind_eval bits, for pairs as close as that test's and for pairs far apart. */
static void winding_two_points_in_one_walk(void) {
  vx_soup m = {0};
  CHECK(meshgen_sphere_ex(&m, 0, 0, 0, 1.0, 64, 32, 0.6) == 0);
  vx_wind_tree t;
  vx_error err;
  CHECK_MSG(vx_wind_build(&m, NULL, 0, &t, &err) == VX_OK, "%s", err.msg);
  int bad = 0;
  for (int k = 0; k < 3000 && bad < 5; k++) {
    double p[2][3], w0, w1;
    random_point(&m, k % 3 != 0, 0.01, p[0]);
    if (k % 2) {
      random_point(&m, 1, 0.05, p[1]);
    } else {
      for (int i = 0; i < 3; i++) p[1][i] = p[0][i] + 2e-3 * (rnd() - 0.5);
    }
    for (int beta = 1; beta <= 3; beta += 2) {
      vx_wind_eval2(&t, (const double(*)[3])p, beta, &w0, &w1);
      double s0 = vx_wind_eval(&t, p[0], beta),
             s1 = vx_wind_eval(&t, p[1], beta);
      if (memcmp(&w0, &s0, sizeof w0) || memcmp(&w1, &s1, sizeof w1)) {
        bad++;
        CHECK_MSG(0, "beta %d: two in one walk %.17g %.17g, one walk each %.17g %.17g", beta, w0,
                  w1, s0, s1);
      }
    }
  }
  vx_wind_free(&t);
  vx_soup_free(&m);
}

/* ---- voxelized fields ------------------------------------------------------------------------ */

typedef struct census {
  uint64_t corners, neg, checked, membrane, high, high_neg;
  uint64_t checked_near; /* checked corners within 0.1 voxel of the mesh (|value| <= 0.1) */
} census;

/* Builds the surface of `m` at R^3 with `rule`; every corner with a nonzero value must have the
 * sign of the reference winding number (|w| > 1/2 inside, where ||w| - 1/2| > 0.05) and, when `inside` is given, the analytic
 * sign where the shape is clear of the corner. */
static census check_rule(const vx_soup *m, uint32_t R, int rule, inside_fn inside, int with_ref,
                         const char *name) {
  census c;
  memset(&c, 0, sizeof c);
  vx_transform xf;
  vx_sign_data sg;
  vx_surface t;
  vx_surface_opts o;
  memset(&o, 0, sizeof o);
  o.band = VX_DEFAULT_BAND;
  o.threads = 2;
  vx_error err;
  uint32_t depth = 0;
  while ((1u << depth) < R) depth++;
  CHECK(vx_voxelize_transform(m, R, &xf, NULL) == VX_OK);
  vx_status st = vx_sign_build_rule(m, &xf, rule, &sg, &err);
  if (st == VX_OK) st = vx_surface_build(m, &xf, depth, &sg, &o, &t, NULL, &err);
  vx_sign_free(&sg);
  CHECK_MSG(st == VX_OK, "%s: %s", name, err.msg);
  if (st != VX_OK) return c;
  int bad = 0;
  for (uint64_t v = 0; v < t.count && bad < 5; v++) {
    uint32_t x, y, z;
    vx_morton_decode(t.codes[v], &x, &y, &z);
    for (int k = 0; k < 8; k++) {
      int q = t.field[v].c[k];
      c.corners++;
      c.neg += q < 0;
      if (q == 0) continue;
      double p[3] = {(double)(x + (k & 1)), (double)(y + (k >> 1 & 1)), (double)(z + (k >> 2 & 1))};
      double w = with_ref ? ref_winding(m, &xf, p) : 0.5;
      c.membrane += fabs(w - 0.5) < 0.4;
      c.high += w > 1.5;
      c.high_neg += w > 1.5 && q < 0;
      if (with_ref && rule == VX_SIGN_WINDING && fabs(fabs(w) - 0.5) > 0.05) {
        c.checked++;
        c.checked_near += fabs((double)q) * VX_DEFAULT_BAND / 127.0 <= 0.1;
        if ((q < 0) != (fabs(w) > 0.5)) {
          bad++;
          CHECK_MSG(0, "%s: corner (%g,%g,%g) value %d, exact winding number %.4f", name, p[0],
                    p[1], p[2], q, w);
        }
      }
      if (inside) {
        double wp[3];
        for (int i = 0; i < 3; i++) wp[i] = xf.origin[i] + p[i] * xf.scale;
        int in = inside(wp);
        if (in >= 0 && (q < 0) != (in > 0)) {
          bad++;
          CHECK_MSG(0, "%s: corner (%g,%g,%g) value %d but analytic inside = %d", name, p[0],
                    p[1], p[2], q, in);
        }
      }
    }
  }
  vx_surface_free(&t);
  return c;
}

/* The winding tree built on several threads is the one-thread build node for node (the subtree
 * tasks, their numbering and the top's moments), on a mesh of many tasks with repeated
 * triangles (equal Morton codes, ties by index) and on one smaller than a task. */
static void winding_tree_same_on_threads(void) {
  vx_soup big = {0}, small = {0};
  /* 36k triangles: subtrees of 4096 (meshgen appends one triangle at a time, slow under ASan) */
  CHECK(meshgen_sphere(&big, 0, 0, 0, 1.0, 120, 60) == 0);
  CHECK(meshgen_sphere(&big, 0, 0, 0, 1.0, 120, 60) == 0); /* every triangle twice */
  CHECK(meshgen_torus(&big, 0.5, 0.0, 0.2, 0.6, 0.2, 100, 40) == 0);
  CHECK(meshgen_sphere(&small, 0, 0, 0, 1.0, 40, 20) == 0);
  const vx_soup *meshes[2] = {&big, &small};
  for (int k = 0; k < 2; k++) {
    vx_wind_tree ref, t;
    vx_error err;
    CHECK_MSG(vx_wind_build(meshes[k], NULL, 1, &ref, &err) == VX_OK, "%s", err.msg);
    const int threads[] = {2, 3, 8, 0};
    for (int i = 0; i < 4; i++) {
      CHECK_MSG(vx_wind_build(meshes[k], NULL, threads[i], &t, &err) == VX_OK, "%s", err.msg);
      CHECK_MSG(t.node_count == ref.node_count && t.tri_count == ref.tri_count &&
                    memcmp(t.nodes, ref.nodes, ref.node_count * sizeof *t.nodes) == 0 &&
                    memcmp(t.tri, ref.tri, ref.tri_count * 9 * sizeof(float)) == 0,
                "mesh %d, %d threads: %llu nodes against %llu", k, threads[i],
                (unsigned long long)t.node_count, (unsigned long long)ref.node_count);
      vx_wind_free(&t);
    }
    vx_wind_free(&ref);
  }
  vx_soup_free(&big);
  vx_soup_free(&small);
}

static void field_sign_on_analytic_shapes(void) {
  vx_soup m = {0};
  CHECK(meshgen_sphere(&m, 0, 0, 0, 1.0, 96, 48) == 0);
  census c = check_rule(&m, 32, VX_SIGN_WINDING, in_sphere, 0, "sphere");
  CHECK(c.neg > 100);
  vx_soup_free(&m);
  const double lo[3] = {-1, -0.5, -0.25}, hi[3] = {1, 0.5, 0.75};
  CHECK(meshgen_box(&m, lo, hi) == 0);
  c = check_rule(&m, 32, VX_SIGN_WINDING, in_box, 0, "box");
  CHECK(c.neg > 100);
  vx_soup_free(&m);
  CHECK(meshgen_torus(&m, 0, 0, 0, 1.0, 0.3, 128, 48) == 0);
  c = check_rule(&m, 32, VX_SIGN_WINDING, in_torus, 0, "torus");
  CHECK(c.neg > 100);
  vx_soup_free(&m);
  /* The union is inside throughout, next to the faces inside the other box too (w = 1 or 2). */
  CHECK(meshgen_box(&m, ua_lo, ua_hi) == 0 && meshgen_box(&m, ub_lo, ub_hi) == 0);
  compare_points(&m, "self-intersecting union", 400, 0.05, in_union);
  c = check_rule(&m, 32, VX_SIGN_WINDING, in_union, 1, "self-intersecting union");
  CHECK(c.high > 50 && c.high_neg == c.high);
  vx_soup_free(&m);
}

/* An inverted sphere (every triangle wound inward) keeps its signs by the winding rule and is
 * inside-out by the pseudo-normal rule. */
static void field_inverted_mesh(void) {
  vx_soup m = {0};
  CHECK(meshgen_sphere(&m, 0, 0, 0, 1.0, 24, 12) == 0);
  for (uint64_t t = 0; t < m.tri_count; t++)
    for (int i = 0; i < 3; i++) {
      float s = m.pos[t * 9 + 3 + i];
      m.pos[t * 9 + 3 + i] = m.pos[t * 9 + 6 + i];
      m.pos[t * 9 + 6 + i] = s;
    }
  census c = check_rule(&m, 32, VX_SIGN_WINDING, in_sphere_coarse, 1, "inverted sphere");
  CHECK(c.neg > c.corners / 3 && c.checked > 500);
  census p = check_rule(&m, 32, VX_SIGN_PSEUDO_NORMAL, NULL, 0, "inverted sphere, pseudo-normals");
  CHECK(p.neg > p.corners / 3 && p.neg + c.neg <= p.corners); /* inside-out */
  vx_soup_free(&m);
}

static void field_sign_on_messy_meshes(void) {
  static const char *names[] = {"messy/sphere_with_hole.stl", "messy/doubled_cube.obj",
                                "messy/two_boxes.ply", "messy/cube_with_fold.ply"};
  for (int i = 0; i < 4; i++) {
    char buf[1024];
    const char *path = check_test_mesh(names[i], buf, sizeof buf);
    vx_soup m = {0};
    vx_error err;
    CHECK_MSG(vx_soup_import != NULL, "no mesh importer linked");
    if (!vx_soup_import) return;
    vx_status is = vx_soup_import(path, &m, &err);
    CHECK_MSG(is == VX_OK, "%s: %s", names[i], err.msg);
    if (is != VX_OK) continue;
    census c = check_rule(&m, 32, VX_SIGN_WINDING, NULL, 1, names[i]);
    fprintf(stderr, "  %s: %llu corners, %.1f%% negative, %llu checked against the exact rule "
            "(%llu within 0.1 voxel), %llu with 0.1 < w < 0.9, %llu with w > 1.5 (%llu "
            "negative)\n", names[i],
            (unsigned long long)c.corners, 100.0 * (double)c.neg / (double)(c.corners + !c.corners),
            (unsigned long long)c.checked, (unsigned long long)c.checked_near,
            (unsigned long long)c.membrane, (unsigned long long)c.high,
            (unsigned long long)c.high_neg);
    CHECK(c.checked > c.corners / 4);
    if (i == 0) CHECK(c.neg > 0 && c.membrane > 0); /* the hole: a membrane with w ~ 1/2 */
    /* corners this close to clean faces take the pseudo-normal's side from 0.01 voxel on
     * (VX_SIGN_FACE_MIN): they are checked against the exact winding number too (the boxes'
     * faces lie on grid planes: their corners are on them or far) */
    if (i == 0) CHECK(c.checked_near > c.checked / 50);
    if (i == 1) CHECK(c.neg == 0);                  /* both windings: w ~ 0, all outside */
    if (i == 2) CHECK(c.neg > 0 && c.high > 0 && c.high_neg == c.high); /* overlap (w ~ 2): inside */
    if (i == 3) CHECK(c.neg > 0);
    vx_soup_free(&m);
  }
}

/* The winding rule's field is the same for any block size and thread count. */
static void field_independent_of_blocks_and_threads(void) {
  vx_soup m = {0};
  CHECK(meshgen_sphere_ex(&m, 0, 0, 0, 1.0, 64, 32, 0.6) == 0);
  const double lo[3] = {-0.3, -0.3, -1.2}, hi[3] = {0.4, 0.2, 0.5};
  CHECK(meshgen_box(&m, lo, hi) == 0); /* overlapping the holed sphere */
  vx_transform xf;
  CHECK(vx_voxelize_transform(&m, 64, &xf, NULL) == VX_OK);
  vx_sign_data sg;
  CHECK(vx_sign_build_rule(&m, &xf, VX_SIGN_WINDING, &sg, NULL) == VX_OK);
  vx_surface a, b;
  vx_surface_opts o;
  memset(&o, 0, sizeof o);
  o.band = VX_DEFAULT_BAND;
  o.threads = 1;
  o.block_log2 = 5;
  CHECK(vx_surface_build(&m, &xf, 6, &sg, &o, &a, NULL, NULL) == VX_OK);
  o.threads = 2;
  o.block_log2 = 3;
  CHECK(vx_surface_build(&m, &xf, 6, &sg, &o, &b, NULL, NULL) == VX_OK);
  CHECK(a.count == b.count && a.count > 1000 &&
        !memcmp(a.field, b.field, a.count * sizeof(vx_voxel)));
  /* vx_voxelize's default rule is this one. */
  vx_voxelize_opts bo;
  memset(&bo, 0, sizeof bo);
  bo.resolution = 64;
  vx_octree tr;
  CHECK(vx_voxelize(&m, &bo, &tr, NULL, NULL) == VX_OK);
  CHECK(tr.voxel_count == a.count && !memcmp(tr.voxels, a.field, a.count * sizeof(vx_voxel)));
  vx_octree_free(&tr);
  vx_surface_free(&a);
  vx_surface_free(&b);
  vx_sign_free(&sg);
  vx_soup_free(&m);
}

/* test_voxelizer_sign MESH [QUERIES [THREADS]]: the sign stage's parts timed on a real mesh (at
 * 512^3): the pseudo-normal tables, the winding tree, the whole rule (both and the clean flags,
 * on the CPU), and winding queries near the surface. */
static int bench(const char *path, int n, int threads) {
  vx_soup m = {0};
  vx_error err;
  if (!vx_soup_import || vx_soup_import(path, &m, &err) != VX_OK) return 1;
  vx_transform xf;
  if (vx_voxelize_transform(&m, 512, &xf, &err) != VX_OK) return 1;
  vx_sign_data sd;
  double t0 = vx_clock_seconds();
  if (vx_sign_build_threads(&m, threads, &sd, &err) != VX_OK) return 1;
  const double ttab = vx_clock_seconds() - t0;
  vx_sign_free(&sd);
  vx_wind_tree t;
  t0 = vx_clock_seconds();
  if (vx_wind_build(&m, &xf, threads, &t, &err) != VX_OK) return 1;
  const double ttree = vx_clock_seconds() - t0;
  t0 = vx_clock_seconds();
  if (vx_sign_build_rule_ex(&m, &xf, VX_SIGN_WINDING, 0, threads, &sd, &err) != VX_OK) return 1;
  const double trule = vx_clock_seconds() - t0;
  vx_sign_free(&sd);
  double *pts = (double *)malloc((size_t)n * 3 * sizeof(double)), sum = 0.0;
  for (int k = 0; k < n; k++) {
    double p[3];
    random_point(&m, 1, 2.0 * xf.scale, p);
    for (int i = 0; i < 3; i++) pts[k * 3 + i] = (p[i] - xf.origin[i]) / xf.scale;
  }
  t0 = vx_clock_seconds();
  for (int k = 0; k < n; k++) sum += vx_wind_at(&t, pts + k * 3);
  const double tq = vx_clock_seconds() - t0;
  printf("%s: %llu triangles, %d threads: tables %.3f s, tree %.3f s (%llu nodes), winding rule "
         "%.3f s; %.3f us per query near the surface (mean w %.3f)\n", path,
         (unsigned long long)t.tri_count, threads, ttab, ttree, (unsigned long long)t.node_count,
         trule, 1e6 * tq / n, sum / n);
  free(pts);
  vx_wind_free(&t);
  vx_soup_free(&m);
  return 0;
}

int main(int argc, char **argv) {
  if (argc >= 2)
    return bench(argv[1], argc > 2 ? atoi(argv[2]) : 200000, argc > 3 ? atoi(argv[3]) : 0);
  RUN(winding_closed_meshes_are_indicators);
  RUN(winding_fast_matches_exact_on_open_meshes);
  RUN(winding_two_points_in_one_walk);
  RUN(winding_tree_same_on_threads);
  RUN(field_sign_on_analytic_shapes);
  RUN(field_inverted_mesh);
  RUN(field_sign_on_messy_meshes);
  RUN(field_independent_of_blocks_and_threads);
  return check_summary();
}
