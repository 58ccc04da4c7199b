/* SPDX-License-Identifier: Apache-2.0 */
/* test_voxelizer_overlap.c - closed triangle/box overlap and closest point against dense sampling.
 *
 * Reference: points sampled on the triangle (a barycentric lattice) tested inside the closed box,
 * and points sampled in the box measured against the triangle. Sampling proves overlap (a sample
 * inside) and bounds how close a non-overlapping pair can be; so the test's "yes" must come with a
 * sampled distance within the lattice spacing, and its "no" with no sample inside. Vertices on a
 * 1/4 lattice keep the samples dyadic, so triangles on voxel faces, edges and corners are decided
 * exactly by the reference too.
 */
#include "voxelizer/overlap.h"
#include "voxelizer/distance.h"
#include "check.h"

static uint64_t rng_state = 12345;
static double rnd(void) { /* uniform [0,1), xorshift64* */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return (double)((rng_state * 2685821657736338717ull) >> 11) * (1.0 / 9007199254740992.0);
}

/* Distance from p to the closed unit box [0,1]^3. */
static double box_dist(const double *p) {
  double s = 0.0;
  for (int i = 0; i < 3; i++) {
    double d = p[i] < 0.0 ? -p[i] : p[i] > 1.0 ? p[i] - 1.0 : 0.0;
    s += d * d;
  }
  return sqrt(s);
}

static double max_edge(const double *t) {
  double m = 0.0;
  for (int k = 0; k < 3; k++) {
    const double *a = t + 3 * k, *b = t + 3 * ((k + 1) % 3);
    double d = sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) +
                    (a[2] - b[2]) * (a[2] - b[2]));
    if (d > m) m = d;
  }
  return m;
}

/* Minimum over a barycentric lattice of N steps of the distance to the unit box. */
static double sampled_tri_box_dist(const double *t, int N) {
  double best = INFINITY;
  for (int i = 0; i <= N; i++)
    for (int j = 0; j <= N - i; j++) {
      double a = (double)i / N, b = (double)j / N, c = 1.0 - a - b, p[3];
      for (int k = 0; k < 3; k++) p[k] = c * t[k] + a * t[3 + k] + b * t[6 + k];
      double d = box_dist(p);
      if (d < best) best = d;
    }
  return best;
}

/* Does any point of an M^3 lattice in the box lie on the triangle (exact distance 0)? */
static int box_point_on_tri(const double *t, int M) {
  for (int z = 0; z <= M; z++)
    for (int y = 0; y <= M; y++)
      for (int x = 0; x <= M; x++) {
        double p[3] = {(double)x / M, (double)y / M, (double)z / M};
        if (vx_tri_dist2(p, t, NULL) == 0.0) return 1;
      }
  return 0;
}

static int check_against_sampling(const double *t) {
  const int N = 64;
  double c[3] = {0.5, 0.5, 0.5}, h[3] = {0.5, 0.5, 0.5};
  int got = vx_tri_box_overlap(t, c, h);
  double d = sampled_tri_box_dist(t, N);
  double tol = max_edge(t) / N * 1.0000001;
  if (got) {
    CHECK_MSG(d <= tol, "overlap reported but sampled distance %g > %g", d, tol);
    return d <= tol;
  }
  CHECK_MSG(d > 0.0, "no overlap reported but a triangle sample lies in the box");
  int on = box_point_on_tri(t, 8);
  CHECK_MSG(!on, "no overlap reported but a box sample lies on the triangle");
  return d > 0.0 && !on;
}

static void random_vertex(double *v, double lo, double hi, int snap) {
  for (int i = 0; i < 3; i++) {
    double x = lo + (hi - lo) * rnd();
    v[i] = snap ? floor(x * 4.0 + 0.5) / 4.0 : x;
  }
}

static void overlap_random_triangles_match_sampling(void) {
  int bad = 0;
  for (int n = 0; n < 3000 && bad < 5; n++) {
    double t[9];
    for (int k = 0; k < 3; k++) random_vertex(t + 3 * k, -1.0, 2.0, 0);
    bad += !check_against_sampling(t);
  }
}

/* Triangles in the planes of the box's faces, through its edges and corners: dyadic vertices with
 * one or two coordinates pinned to 0 or 1. */
static void overlap_triangles_on_faces_edges_corners(void) {
  int bad = 0, hits = 0;
  for (int n = 0; n < 4000 && bad < 5; n++) {
    double t[9];
    for (int k = 0; k < 3; k++) random_vertex(t + 3 * k, -1.0, 2.0, 1);
    int axis = (int)(rnd() * 3), mode = (int)(rnd() * 3);
    double val = rnd() < 0.5 ? 0.0 : 1.0, val2 = rnd() < 0.5 ? 0.0 : 1.0;
    for (int k = 0; k < 3; k++) {
      t[3 * k + axis] = val;                             /* in a face plane */
      if (mode == 1) t[3 * k + (axis + 1) % 3] = val2;   /* along an edge line (degenerate) */
    }
    if (mode == 2) { /* one vertex on a box corner */
      t[0] = val, t[1] = val2, t[2] = rnd() < 0.5 ? 0.0 : 1.0;
    }
    if (mode == 1) continue; /* collinear: not a triangle the importer keeps */
    double c[3] = {0.5, 0.5, 0.5}, h[3] = {0.5, 0.5, 0.5};
    hits += vx_tri_box_overlap(t, c, h);
    bad += !check_against_sampling(t);
  }
  CHECK(hits > 100);
}

/* Thin slivers: the third vertex a tiny distance off the first edge. */
static void overlap_near_degenerate_slivers(void) {
  int bad = 0;
  for (int n = 0; n < 2000 && bad < 5; n++) {
    double t[9];
    random_vertex(t, -1.0, 2.0, 0);
    random_vertex(t + 3, -1.0, 2.0, 0);
    double s = rnd(), eps = pow(10.0, -3.0 - 6.0 * rnd());
    for (int i = 0; i < 3; i++) t[6 + i] = t[i] + s * (t[3 + i] - t[i]) + eps * (rnd() - 0.5);
    bad += !check_against_sampling(t);
  }
}

/* An axis-aligned quad in the plane x = k sets the voxels on both sides, and nothing further. */
static void overlap_axis_aligned_face_sets_both_sides(void) {
  for (int k = -3; k <= 5; k++) {
    double q[2][9] = {{k, 1.0, 1.0, k, 4.0, 1.0, k, 4.0, 4.0}, {k, 1.0, 1.0, k, 4.0, 4.0, k, 1.0, 4.0}};
    for (int y = -1; y <= 5; y++) /* the closed quad [1,4]^2 meets voxels 0..4 */
      for (int z = -1; z <= 5; z++)
        for (int x = k - 2; x <= k + 1; x++) {
          int want = (x == k - 1 || x == k) && y >= 0 && y <= 4 && z >= 0 && z <= 4;
          int got = vx_tri_voxel_overlap(q[0], x, y, z) || vx_tri_voxel_overlap(q[1], x, y, z);
          CHECK_MSG(got == want, "quad x=%d voxel (%d,%d,%d): got %d want %d", k, x, y, z, got, want);
        }
    /* y = k and z = k planes too. */
    double qy[9] = {1.0, k, 1.0, 4.0, k, 1.0, 4.0, k, 4.0}, qz[9] = {1.0, 1.0, k, 4.0, 1.0, k, 4.0, 4.0, k};
    CHECK(vx_tri_voxel_overlap(qy, 3, k - 1, 3) && vx_tri_voxel_overlap(qy, 3, k, 3));
    CHECK(vx_tri_voxel_overlap(qz, 3, 3, k - 1) && vx_tri_voxel_overlap(qz, 3, 3, k));
    CHECK(!vx_tri_voxel_overlap(qy, 3, k + 1, 3) && !vx_tri_voxel_overlap(qz, 3, 3, k - 2));
  }
  /* A triangle touching a voxel at one corner point only. */
  double c[9] = {1.0, 1.0, 1.0, 2.0, 1.5, 1.25, 1.5, 2.0, 1.75};
  CHECK(vx_tri_voxel_overlap(c, 0, 0, 0));
  CHECK(vx_tri_voxel_overlap(c, 1, 1, 1));
  CHECK(!vx_tri_voxel_overlap(c, -1, 0, 0));
}

/* Grown tiles (blocks.c) never reject a voxel the exact test accepts. */
static void overlap_tile_test_is_conservative(void) {
  for (int n = 0; n < 2000; n++) {
    double t[9];
    for (int k = 0; k < 3; k++) random_vertex(t + 3 * k, -2.0, 10.0, n & 1);
    double c[3] = {6.0, 2.0, 2.0}, h[3] = {2.001, 2.001, 2.001};
    int tile = vx_tri_box_overlap(t, c, h), any = 0;
    for (int z = 0; z < 4; z++)
      for (int y = 0; y < 4; y++)
        for (int x = 4; x < 8; x++) any |= vx_tri_voxel_overlap(t, x, y, z);
    CHECK(!any || tile);
  }
}

/* Closest point: never farther than the nearest lattice sample, never nearer than the sampled
 * minimum minus the lattice spacing, and the feature matches where the point lies. */
static void distance_closest_point_matches_sampling(void) {
  const int N = 96;
  for (int n = 0; n < 600; n++) {
    double t[9], p[3], q[3];
    for (int k = 0; k < 3; k++) random_vertex(t + 3 * k, -1.0, 1.0, 0);
    if (n % 3 == 0) /* sliver */
      for (int i = 0; i < 3; i++) t[6 + i] = 0.5 * (t[i] + t[3 + i]) + 1e-7 * (rnd() - 0.5);
    random_vertex(p, -2.0, 2.0, 0);
    int feat = vx_closest_on_triangle(p, t, q);
    double d = sqrt(vx_tri_dist2(p, t, NULL)), best = INFINITY;
    for (int i = 0; i <= N; i++)
      for (int j = 0; j <= N - i; j++) {
        double a = (double)i / N, b = (double)j / N, c = 1.0 - a - b, s[3];
        for (int k = 0; k < 3; k++) s[k] = c * t[k] + a * t[3 + k] + b * t[6 + k];
        double e = sqrt((p[0] - s[0]) * (p[0] - s[0]) + (p[1] - s[1]) * (p[1] - s[1]) +
                        (p[2] - s[2]) * (p[2] - s[2]));
        if (e < best) best = e;
      }
    CHECK_MSG(d <= best + 1e-12, "closest %g > sampled %g", d, best);
    CHECK_MSG(d >= best - max_edge(t) / N, "closest %g << sampled %g", d, best);
    if (feat >= VX_FEAT_V0 && feat <= VX_FEAT_V2) {
      const double *v = t + 3 * (feat - VX_FEAT_V0);
      CHECK(q[0] == v[0] && q[1] == v[1] && q[2] == v[2]);
    }
  }
}

int main(void) {
  RUN(overlap_axis_aligned_face_sets_both_sides);
  RUN(overlap_random_triangles_match_sampling);
  RUN(overlap_triangles_on_faces_edges_corners);
  RUN(overlap_near_degenerate_slivers);
  RUN(overlap_tile_test_is_conservative);
  RUN(distance_closest_point_matches_sampling);
  return check_summary();
}
