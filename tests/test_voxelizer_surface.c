/* SPDX-License-Identifier: Apache-2.0 */
/* test_voxelizer_surface.c - surface voxels of small meshes against a brute-force reference, and
 * independence of thread count and block size.
 *
 * Reference: every triangle against every voxel of the grid (R <= 32), or every voxel of the
 * triangle's bounding box computed here from scratch (R = 64), with the closed overlap test that
 * test_voxelizer_overlap checks against sampling. The voxelizer must produce exactly that set.
 */
#include "voxelizer/internal.h"
#include "voxelizer/overlap.h"
#include "formats/mesh_import.h"
#include "meshgen.h"
#include "check.h"

#include <string.h>

#if defined(__GNUC__)
#pragma weak vx_soup_import
#endif

static int build(const vx_soup *m, uint32_t depth, int threads, uint32_t blog, vx_surface *s) {
  vx_transform xf;
  vx_sign_data sg;
  vx_error err;
  vx_surface_opts o;
  memset(&o, 0, sizeof o);
  o.band = 2.0f;
  o.threads = threads;
  o.block_log2 = blog;
  if (vx_voxelize_transform(m, 1u << depth, &xf, &err) != VX_OK) return -1;
  if (vx_sign_build(m, &sg, &err) != VX_OK) return -1;
  vx_status st = vx_surface_build(m, &xf, depth, &sg, &o, s, NULL, &err);
  vx_sign_free(&sg);
  if (st != VX_OK) fprintf(stderr, "surface build: %s\n", err.msg);
  return st == VX_OK ? 0 : -1;
}

/* Brute-force occupancy, R^3 bytes. */
static unsigned char *reference(const vx_soup *m, uint32_t depth, int all_voxels) {
  int64_t R = (int64_t)1 << depth;
  vx_transform xf;
  vx_voxelize_transform(m, (uint32_t)R, &xf, NULL);
  unsigned char *occ = (unsigned char *)calloc((size_t)(R * R * R), 1);
  for (uint64_t t = 0; t < m->tri_count; t++) {
    double g[9];
    vx_grid_tri(m, &xf, t, g);
    int64_t lo[3] = {0, 0, 0}, hi[3] = {R - 1, R - 1, R - 1};
    if (!all_voxels)
      for (int i = 0; i < 3; i++) {
        double mn = fmin(g[i], fmin(g[3 + i], g[6 + i])), mx = fmax(g[i], fmax(g[3 + i], g[6 + i]));
        lo[i] = (int64_t)floor(mn) - 1;
        hi[i] = (int64_t)floor(mx) + 1;
        if (lo[i] < 0) lo[i] = 0;
        if (hi[i] > R - 1) hi[i] = R - 1;
      }
    for (int64_t z = lo[2]; z <= hi[2]; z++)
      for (int64_t y = lo[1]; y <= hi[1]; y++)
        for (int64_t x = lo[0]; x <= hi[0]; x++)
          if (vx_tri_voxel_overlap(g, x, y, z)) occ[(z * R + y) * R + x] = 1;
  }
  return occ;
}

static void compare(const vx_soup *m, uint32_t depth, int all_voxels, const char *name) {
  int64_t R = (int64_t)1 << depth;
  unsigned char *occ = reference(m, depth, all_voxels);
  vx_surface s;
  CHECK(build(m, depth, 2, 0, &s) == 0);
  uint64_t want = 0;
  for (int64_t i = 0; i < R * R * R; i++) want += occ[i];
  CHECK_MSG(s.count == want, "%s at R=%lld: %llu voxels, reference %llu", name, (long long)R,
            (unsigned long long)s.count, (unsigned long long)want);
  int bad = 0;
  for (uint64_t i = 0; i < s.count && bad < 5; i++) {
    uint32_t x, y, z;
    vx_morton_decode(s.codes[i], &x, &y, &z);
    if (i) CHECK(s.codes[i] > s.codes[i - 1]);
    if (x >= R || y >= R || z >= R || !occ[((int64_t)z * R + y) * R + x]) {
      bad++;
      CHECK_MSG(0, "%s: voxel (%u,%u,%u) not in the reference", name, x, y, z);
    }
  }
  free(occ);
  vx_surface_free(&s);
}

static void surface_sphere_matches_brute_force(void) {
  vx_soup m = {0};
  CHECK(meshgen_sphere(&m, 0.1, -0.2, 0.3, 1.0, 24, 12) == 0);
  compare(&m, 4, 1, "sphere");
  compare(&m, 5, 1, "sphere");
  compare(&m, 6, 0, "sphere");
  vx_soup_free(&m);
}

/* A box whose faces land exactly on voxel faces: every face must set the voxels on both sides. */
static void surface_box_on_voxel_faces_matches_brute_force(void) {
  vx_soup m = {0};
  double lo[3] = {0, 0, 0}, hi[3] = {32, 16, 8};
  CHECK(meshgen_box(&m, lo, hi) == 0);
  double lo2[3] = {8, 4, 2}, hi2[3] = {20, 12, 6}; /* inner box: faces at integer grid planes */
  CHECK(meshgen_box(&m, lo2, hi2) == 0);
  compare(&m, 5, 1, "boxes");
  compare(&m, 6, 0, "boxes");
  /* The inner box's x = 8 face covers both x = 7 and x = 8 columns. */
  vx_surface s;
  CHECK(build(&m, 5, 1, 0, &s) == 0);
  int seen7 = 0, seen8 = 0;
  for (uint64_t i = 0; i < s.count; i++) {
    uint32_t x, y, z;
    vx_morton_decode(s.codes[i], &x, &y, &z);
    if (y == 15 && z == 16) seen7 |= x == 7, seen8 |= x == 8;
  }
  CHECK(seen7 && seen8);
  vx_surface_free(&s);
  vx_soup_free(&m);
}

static void surface_torus_and_sheet_match_brute_force(void) {
  vx_soup m = {0};
  CHECK(meshgen_torus(&m, 0, 0, 0, 1.0, 0.35, 32, 12) == 0);
  double p0[3] = {-1.2, -0.9, -0.3}, u[3] = {2.1, 0.4, 0.2}, w[3] = {0.3, 1.7, 0.5};
  CHECK(meshgen_sheet(&m, p0, u, w) == 0);
  compare(&m, 5, 1, "torus+sheet");
  compare(&m, 6, 0, "torus+sheet");
  vx_soup_free(&m);
}

static void surface_bunny_res4_matches_brute_force(void) {
  char buf[1024];
  const char *path = check_data_mesh("bunny_res4.ply", buf, sizeof buf);
  CHECK_MSG(vx_soup_import != NULL, "no mesh importer linked");
  if (!vx_soup_import) return;
  vx_soup m = {0};
  vx_error err;
  vx_status is = vx_soup_import(path, &m, &err);
  CHECK_MSG(is == VX_OK, "%s: %s", path, err.msg);
  if (is != VX_OK) return;
  compare(&m, 5, 1, "bunny_res4");
  compare(&m, 6, 0, "bunny_res4");
  vx_soup_free(&m);
}

/* Same codes and the same field bytes for any thread count and block size. */
static void surface_independent_of_threads_and_blocks(void) {
  vx_soup m = {0};
  CHECK(meshgen_sphere(&m, 0, 0, 0, 1.0, 40, 20) == 0);
  CHECK(meshgen_torus(&m, 0.2, 0.1, 0.0, 0.6, 0.2, 40, 16) == 0);
  double p0[3] = {-0.9, -0.8, 0.35}, u[3] = {1.8, 0.1, 0.0}, w[3] = {0.0, 1.6, 0.02};
  CHECK(meshgen_sheet(&m, p0, u, w) == 0);
  vx_surface ref;
  CHECK(build(&m, 6, 1, 6, &ref) == 0); /* one block */
  const int threads[] = {1, 2, 3, 5};
  const uint32_t blogs[] = {1, 2, 3, 4, 5};
  for (int ti = 0; ti < 4; ti++)
    for (int bi = 0; bi < 5; bi++) {
      vx_surface s;
      CHECK(build(&m, 6, threads[ti], blogs[bi], &s) == 0);
      CHECK_MSG(s.count == ref.count && !memcmp(s.codes, ref.codes, s.count * 8) &&
                    !memcmp(s.field, ref.field, s.count * sizeof(vx_voxel)),
                "threads %d, block 2^%u differs from one block", threads[ti], blogs[bi]);
      vx_surface_free(&s);
    }
  vx_surface_free(&ref);
  vx_soup_free(&m);
}

static int cancel_after(void *user, const char *phase, double f) {
  (void)phase;
  return ++*(int *)user >= 3 && f < 1.0;
}

static void surface_progress_cancels(void) {
  vx_soup m = {0};
  CHECK(meshgen_sphere(&m, 0, 0, 0, 1.0, 40, 20) == 0);
  vx_transform xf;
  vx_sign_data sg;
  vx_surface s;
  vx_error err;
  vx_surface_opts o;
  memset(&o, 0, sizeof o);
  int calls = 0;
  o.band = 2.0f;
  o.threads = 2;
  o.block_log2 = 3;
  o.progress = cancel_after;
  o.user = &calls;
  CHECK(vx_voxelize_transform(&m, 64, &xf, NULL) == VX_OK);
  CHECK(vx_sign_build(&m, &sg, NULL) == VX_OK);
  CHECK(vx_surface_build(&m, &xf, 6, &sg, &o, &s, NULL, &err) == VX_ERR_INTERRUPTED);
  CHECK(s.codes == NULL && s.count == 0);
  vx_sign_free(&sg);
  vx_soup_free(&m);
}

static void surface_transform_keeps_aspect(void) {
  vx_soup m = {0};
  double lo[3] = {-1, 2, 10}, hi[3] = {3, 4, 11};
  CHECK(meshgen_box(&m, lo, hi) == 0);
  vx_transform xf;
  CHECK(vx_voxelize_transform(&m, 16, &xf, NULL) == VX_OK);
  CHECK_NEAR(xf.scale, 4.0 / 16, 1e-15);
  CHECK_NEAR(xf.origin[0], -1.0, 1e-12);
  CHECK_NEAR(xf.origin[1] + 8 * xf.scale, 3.0, 1e-12); /* centred */
  CHECK_NEAR(xf.origin[2] + 8 * xf.scale, 10.5, 1e-12);
  CHECK(vx_voxelize_transform(&m, 12, &xf, NULL) == VX_ERR_INVALID_ARG);
  CHECK(vx_voxelize_transform(&m, 1, &xf, NULL) == VX_ERR_INVALID_ARG);
  vx_soup_free(&m);
}

int main(void) {
  RUN(surface_transform_keeps_aspect);
  RUN(surface_sphere_matches_brute_force);
  RUN(surface_box_on_voxel_faces_matches_brute_force);
  RUN(surface_torus_and_sheet_match_brute_force);
  RUN(surface_bunny_res4_matches_brute_force);
  RUN(surface_independent_of_threads_and_blocks);
  RUN(surface_progress_cancels);
  return check_summary();
}
