/* SPDX-License-Identifier: Apache-2.0 */
/* test_voxelizer_build.c - the whole build (voxels, field, tree, planes, pruning) and its errors.
 *
 * Also a tiny benchmark driver: `test_voxelizer_build MESH RES [THREADS]` converts one mesh and
 * prints the time and the surface-voxel count (needs the mesh importer).
 */
#include "voxelizer/voxelizer.h"
#include "voxelizer/internal.h"
#include "voxelizer/overlap.h"
#include "formats/mesh_import.h"
#include "meshgen.h"
#include "check.h"

#include <string.h>
#include <time.h>

#if defined(__GNUC__)
#pragma weak vx_soup_import
#endif

static void build_sphere_gives_valid_tree(void) {
  vx_soup m = {0};
  CHECK(meshgen_sphere(&m, 0, 0, 0, 1.0, 48, 24) == 0);
  vx_voxelize_opts o;
  memset(&o, 0, sizeof o);
  o.resolution = 32;
  vx_octree t;
  vx_voxelize_stats st;
  vx_error err;
  vx_status s = vx_voxelize(&m, &o, &t, &st, &err);
  CHECK_MSG(s == VX_OK, "%s", err.msg);
  if (s == VX_OK) {
    CHECK(vx_octree_validate(&t, &err) == VX_OK);
    CHECK(t.depth == 5 && t.band == VX_DEFAULT_BAND && t.prune_error == 0.0f);
    CHECK(t.voxel_count == st.surface_voxels && st.nodes == t.node_count);
    CHECK(st.triangles == m.tri_count && st.corners >= st.surface_voxels && st.pair_tests > 0);
    CHECK_NEAR(t.xf.scale, 2.0 / 32, 1e-12);
  }
  /* Same voxels as the lower-level surface build. */
  vx_transform xf;
  vx_sign_data sg;
  vx_surface surf;
  vx_surface_opts so;
  memset(&so, 0, sizeof so);
  so.band = VX_DEFAULT_BAND;
  CHECK(vx_voxelize_transform(&m, 32, &xf, NULL) == VX_OK);
  CHECK(vx_sign_build(&m, &sg, NULL) == VX_OK);
  CHECK(vx_surface_build(&m, &xf, 5, &sg, &so, &surf, NULL, NULL) == VX_OK);
  CHECK(s == VX_OK && surf.count == t.voxel_count &&
        !memcmp(surf.field, t.voxels, surf.count * sizeof(vx_voxel)));
  vx_surface_free(&surf);
  vx_sign_free(&sg);
  vx_octree_free(&t);
  /* Pruning makes the tree no larger and keeps it valid. */
  o.max_error = 0.5f;
  vx_octree p;
  s = vx_voxelize(&m, &o, &p, NULL, &err);
  CHECK_MSG(s == VX_OK, "%s", err.msg);
  if (s == VX_OK) {
    CHECK(vx_octree_validate(&p, &err) == VX_OK);
    CHECK(p.prune_error == 0.5f);
    CHECK(p.node_count + p.voxel_count <= st.nodes + st.surface_voxels);
  }
  vx_octree_free(&p);
  vx_soup_free(&m);
}

static void build_rejects_bad_options(void) {
  vx_soup m = {0}, empty = {0};
  CHECK(meshgen_sphere(&m, 0, 0, 0, 1.0, 16, 8) == 0);
  vx_voxelize_opts o;
  memset(&o, 0, sizeof o);
  vx_octree t;
  vx_error err;
  o.resolution = 48;
  CHECK(vx_voxelize(&m, &o, &t, NULL, &err) == VX_ERR_INVALID_ARG && strstr(err.msg, "48"));
  o.resolution = 1u << 15;
  CHECK(vx_voxelize(&m, &o, &t, NULL, &err) == VX_ERR_INVALID_ARG);
  o.resolution = 16;
  CHECK(vx_voxelize(&empty, &o, &t, NULL, &err) == VX_ERR_EMPTY);
  o.max_error = -1.0f;
  CHECK(vx_voxelize(&m, &o, &t, NULL, &err) == VX_ERR_INVALID_ARG);
  o.max_error = 0.0f;
  /* A 16384^3 sphere needs far more than 1 MiB: refused early with an estimate. */
  o.resolution = 16384;
  o.mem_limit = 1u << 20;
  CHECK(vx_voxelize(&m, &o, &t, NULL, &err) == VX_ERR_LIMIT && strstr(err.msg, "GiB"));
  CHECK(t.nodes == NULL && t.voxels == NULL);
  vx_soup_free(&m);
}

static int trees_equal(const vx_octree *a, const vx_octree *b) {
  return a->node_count == b->node_count && a->voxel_count == b->voxel_count &&
         !memcmp(a->nodes, b->nodes, a->node_count * sizeof(vx_node)) &&
         !memcmp(a->voxels, b->voxels, a->voxel_count * sizeof(vx_voxel));
}

/* Exact copies (any rotation of the vertex order) change nothing and are counted; a reversed copy
 * is another triangle. The in-core, streaming builds agree. */
static void build_drops_duplicates(void) {
  vx_soup m = {0}, d = {0}, r = {0};
  CHECK(meshgen_sphere(&m, 0, 0, 0, 1.0, 24, 12) == 0);
  for (uint64_t t = 0; t < m.tri_count; t++) {
    const float *p = m.pos + t * 9;
    float q[27];
    for (int k = 0; k < 3; k++) /* the triangle, then its two rotations */
      for (int v = 0; v < 3; v++)
        memcpy(q + 9 * k + 3 * v, p + 3 * ((v + k) % 3), 3 * sizeof(float));
    CHECK(vx_soup_append(&d, q, 3, NULL) == VX_OK);
    float w[9]; /* reversed: v0 v2 v1 */
    memcpy(w, p, 3 * sizeof(float));
    memcpy(w + 3, p + 6, 3 * sizeof(float));
    memcpy(w + 6, p + 3, 3 * sizeof(float));
    CHECK(vx_soup_append(&r, p, 1, NULL) == VX_OK);
    if (t % 2 == 0) CHECK(vx_soup_append(&r, w, 1, NULL) == VX_OK);
  }
  vx_voxelize_opts o;
  memset(&o, 0, sizeof o);
  o.resolution = 32;
  vx_octree a, b, c;
  vx_voxelize_stats sa, sb, sc;
  vx_error err;
  CHECK(vx_voxelize(&m, &o, &a, &sa, &err) == VX_OK);
  CHECK(vx_voxelize(&d, &o, &b, &sb, &err) == VX_OK);
  CHECK(sa.duplicates == 0 && sb.duplicates == 2 * m.tri_count);
  CHECK(sb.triangles == m.tri_count);
  CHECK_MSG(trees_equal(&a, &b), "3 copies of each triangle changed the tree");
  CHECK(vx_voxelize(&r, &o, &c, &sc, &err) == VX_OK);
  CHECK(sc.duplicates == 0 && sc.triangles == r.tri_count);
  vx_stream st;
  vx_voxelize_stats ss;
  vx_octree e;
  CHECK(vx_voxelize_stream(&d, &o, NULL, &st, &ss, &err) == VX_OK);
  CHECK(ss.duplicates == 2 * m.tri_count);
  CHECK(vx_stream_take_tree(&st, &e, &err) == VX_OK);
  CHECK_MSG(trees_equal(&a, &e), "the streaming build of the copies differs");
  vx_stream_free(&st);
  vx_octree_free(&a);
  vx_octree_free(&b);
  vx_octree_free(&c);
  vx_octree_free(&e);
  vx_soup_free(&m);
  vx_soup_free(&d);
  vx_soup_free(&r);
}

/* The overlap floor never exceeds the overlaps a brute-force count finds (random triangles of
 * every size, slivers included); stacked triangles are refused under a limit and build without. */
static void build_overlap_floor_and_limit(void) {
  vx_soup m = {0};
  uint64_t seed = 12345;
  for (int t = 0; t < 400; t++) {
    float q[9];
    double s = t % 4 == 0 ? 30.0 : t % 4 == 1 ? 3.0 : t % 4 == 2 ? 0.3 : 60.0;
    for (int i = 0; i < 9; i++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      double u = (double)(seed >> 11) / 9007199254740992.0;
      q[i] = (float)(32.0 + (u - 0.5) * s);
    }
    if (t % 4 == 3) /* a sliver: the third vertex near the middle of the first edge */
      for (int i = 0; i < 3; i++) q[6 + i] = 0.5f * (q[i] + q[3 + i]) + 0.01f;
    vx_soup_append(&m, q, 1, NULL);
  }
  vx_transform xf;
  CHECK(vx_voxelize_transform(&m, 64, &xf, NULL) == VX_OK);
  double floor_pairs = 0.0, brute = 0.0;
  CHECK(vx_overlap_check(&m, &xf, 6, 0, 0, &floor_pairs, NULL) == VX_OK);
  for (uint64_t t = 0; t < m.tri_count; t++) {
    double g[9];
    int64_t lo[3], hi[3];
    vx_grid_tri(&m, &xf, t, g);
    double own = 0.0, fl = 0.0;
    if (vx_tri_voxel_range(g, 64, lo, hi))
      for (int64_t z = lo[2]; z <= hi[2]; z++)
        for (int64_t y = lo[1]; y <= hi[1]; y++)
          for (int64_t x = lo[0]; x <= hi[0]; x++) own += vx_tri_voxel_overlap(g, x, y, z);
    vx_soup one = m;
    one.pos = m.pos + t * 9;
    one.tri_count = 1;
    vx_overlap_check(&one, &xf, 6, 0, 1, &fl, NULL);
    CHECK_MSG(fl <= own, "triangle %llu: floor %.0f over %.0f overlaps", (unsigned long long)t, fl,
              own);
    brute += own;
  }
  CHECK(floor_pairs <= brute && floor_pairs > 0.1 * brute);
  vx_soup_free(&m);
  /* 20,000 jittered copies of a triangle across the grid: refused under 64 MiB, at once */
  vx_soup j = {0};
  for (int t = 0; t < 20000; t++) {
    float q[9] = {0, 0, 0, 1, 0, 0, 0, 1, 0};
    for (int i = 0; i < 9; i++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      q[i] += (float)(((double)(seed >> 11) / 9007199254740992.0 - 0.5) * 2e-4);
    }
    vx_soup_append(&j, q, 1, NULL);
  }
  vx_voxelize_opts o;
  memset(&o, 0, sizeof o);
  o.resolution = 64;
  o.mem_limit = (uint64_t)64 << 20;
  vx_octree tr;
  vx_error err;
  vx_status s = vx_voxelize(&j, &o, &tr, NULL, &err);
  CHECK_MSG(s == VX_ERR_LIMIT && strstr(err.msg, "overlap"), "%d %s", (int)s, err.msg);
  vx_stream st;
  s = vx_voxelize_stream(&j, &o, NULL, &st, NULL, &err);
  CHECK_MSG(s == VX_ERR_LIMIT && strstr(err.msg, "overlap"), "%d %s", (int)s, err.msg);
  vx_soup_free(&j);
}

/* The floor is summed by ranges of triangles on all threads: the same bits for any thread count,
 * and the serial sum of the triangles' own floors up to rounding. */
static void overlap_floor_same_on_threads(void) {
  vx_soup m = {0};
  uint64_t seed = 777;
  for (int t = 0; t < 150000; t++) {
    float q[9];
    for (int i = 0; i < 9; i++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      q[i] = (float)(100.0 * (double)(seed >> 11) / 9007199254740992.0);
      if (i >= 3) q[i] = q[i % 3] + 0.05f * (q[i] - 50.0f);
    }
    vx_soup_append(&m, q, 1, NULL);
  }
  vx_transform xf;
  CHECK(vx_voxelize_transform(&m, 1024, &xf, NULL) == VX_OK);
  double serial = 0.0, p[4];
  for (uint64_t t = 0; t < m.tri_count; t++) {
    vx_soup one = m;
    double fl = 0.0;
    one.pos = m.pos + t * 9;
    one.tri_count = 1;
    vx_overlap_check(&one, &xf, 10, 0, 1, &fl, NULL);
    serial += fl;
  }
  const int threads[4] = {1, 2, 7, 0};
  for (int k = 0; k < 4; k++) CHECK(vx_overlap_check(&m, &xf, 10, 0, threads[k], &p[k], NULL) == VX_OK);
  for (int k = 1; k < 4; k++) CHECK_MSG(memcmp(&p[k], &p[0], sizeof p[0]) == 0, "%d threads: %.17g, "
                                        "one: %.17g", threads[k], p[k], p[0]);
  CHECK_MSG(fabs(p[0] - serial) <= 1e-12 * serial, "%.17g against the serial %.17g", p[0], serial);
  vx_soup_free(&m);
}

static int cancel_now(void *user, const char *phase, double f) {
  (void)user, (void)phase, (void)f;
  return 1;
}

static void build_cancel_is_interrupted(void) {
  vx_soup m = {0};
  CHECK(meshgen_sphere(&m, 0, 0, 0, 1.0, 16, 8) == 0);
  vx_voxelize_opts o;
  memset(&o, 0, sizeof o);
  o.resolution = 64;
  o.progress = cancel_now;
  vx_octree t;
  CHECK(vx_voxelize(&m, &o, &t, NULL, NULL) == VX_ERR_INTERRUPTED);
  CHECK(t.nodes == NULL);
  vx_soup_free(&m);
}

/* The messy test meshes (tests/data/meshes/messy) build and validate; prints what the sign rule sees on them. */
static void build_messy_meshes(void) {
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
    vx_sign_data sg;
    CHECK(vx_sign_build(&m, &sg, NULL) == VX_OK);
    vx_voxelize_opts o;
    memset(&o, 0, sizeof o);
    o.resolution = 64;
    vx_octree t;
    vx_status s = vx_voxelize(&m, &o, &t, NULL, &err);
    CHECK_MSG(s == VX_OK, "%s: %s", names[i], err.msg);
    uint64_t neg = 0, pos = 0, zero = 0, far_flips = 0;
    if (s == VX_OK) {
      CHECK(vx_octree_validate(&t, NULL) == VX_OK);
      for (uint64_t v = 0; v < t.voxel_count; v++)
        for (int c = 0; c < 8; c++) {
          int q = t.voxels[v].c[c];
          neg += q < 0, pos += q > 0, zero += q == 0;
          for (int a = 1; a <= 4; a <<= 1) { /* the voxel's edges from corner c */
            if (c & a) continue;
            int r = t.voxels[v].c[c | a];
            /* A sign change along an edge of length 1 needs |q| + |r| <= 1 voxel (+ rounding). */
            if (((q < 0 && r > 0) || (q > 0 && r < 0)) &&
                (fabs(vx_corner_value((int8_t)q, t.band)) + fabs(vx_corner_value((int8_t)r, t.band))) >
                    1.0 + 2.0 * t.band / 127.0)
              far_flips++;
          }
        }
    }
    fprintf(stderr,
            "  %s: %llu triangles, %llu welded vertices, %llu boundary / %llu non-manifold edges, "
            "%llu voxels; corners %.1f%% negative, %.1f%% positive, %.1f%% zero; %llu voxel edges "
            "change sign with no surface between\n",
            names[i], (unsigned long long)m.tri_count, (unsigned long long)sg.vert_count,
            (unsigned long long)sg.boundary_edges, (unsigned long long)sg.nonmanifold_edges,
            (unsigned long long)t.voxel_count, 100.0 * neg / (neg + pos + zero + 1e-9),
            100.0 * pos / (neg + pos + zero + 1e-9), 100.0 * zero / (neg + pos + zero + 1e-9),
            (unsigned long long)far_flips);
    vx_octree_free(&t);
    vx_sign_free(&sg);
    vx_soup_free(&m);
  }
}

static int bench(const char *path, uint32_t res, int threads) {
  if (!vx_soup_import) {
    fprintf(stderr, "no mesh importer linked\n");
    return 1;
  }
  vx_soup m = {0};
  vx_error err;
  struct timespec a, b, c;
  clock_gettime(CLOCK_MONOTONIC, &a);
  if (vx_soup_import(path, &m, &err) != VX_OK) {
    fprintf(stderr, "%s\n", err.msg);
    return 1;
  }
  clock_gettime(CLOCK_MONOTONIC, &b);
  vx_voxelize_opts o;
  memset(&o, 0, sizeof o);
  o.resolution = res;
  o.threads = threads;
  vx_octree t;
  vx_voxelize_stats st;
  vx_status s = vx_voxelize(&m, &o, &t, &st, &err);
  clock_gettime(CLOCK_MONOTONIC, &c);
  if (s != VX_OK) {
    fprintf(stderr, "%s\n", err.msg);
    return 1;
  }
  double ti = (double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec);
  double tv = (double)(c.tv_sec - b.tv_sec) + 1e-9 * (double)(c.tv_nsec - b.tv_nsec);
  printf("%s at %u^3: %llu triangles, import %.2f s, voxelize+field+tree+planes %.2f s, "
         "%llu surface voxels, %llu corners, %llu overlap tests, %llu nodes\n",
         path, res, (unsigned long long)st.triangles, ti, tv,
         (unsigned long long)st.surface_voxels, (unsigned long long)st.corners,
         (unsigned long long)st.pair_tests, (unsigned long long)st.nodes);
  vx_octree_free(&t);
  vx_soup_free(&m);
  return 0;
}

int main(int argc, char **argv) {
  if (argc >= 3) return bench(argv[1], (uint32_t)atoi(argv[2]), argc > 3 ? atoi(argv[3]) : 0);
  RUN(build_sphere_gives_valid_tree);
  RUN(build_rejects_bad_options);
  RUN(build_drops_duplicates);
  RUN(build_overlap_floor_and_limit);
  RUN(overlap_floor_same_on_threads);
  RUN(build_cancel_is_interrupted);
  RUN(build_messy_meshes);
  return check_summary();
}
