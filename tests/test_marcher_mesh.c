/* SPDX-License-Identifier: Apache-2.0 */
/* test_marcher_mesh.c - rendered meshes against a brute-force ray/triangle reference renderer.
 *
 * The mesh is voxelized (voxelizer.h) and rendered by the CPU marcher; the reference intersects
 * every pixel's ray with every triangle in double precision (refrender.h). Hit/miss must agree on
 * >= 99% of pixels and depth must be within one voxel where both hit (on >= 99% of those pixels:
 * a ray grazing the silhouette can meet the field's surface and the mesh at different places).
 * Also a tessellated sphere against the analytic sphere (depth, normals) and thin features.
 * Meshes: an analytic closed torus, the bundled full Stanford bunny (data/bunny.ply, 69k
 * triangles, open at the bottom), Spot (data/spot.obj, closed) and the COLLADA test scene
 * (tests/data/meshes/scene.dae: a torus placed twice through nodes, a box with degenerate faces).
 * Stanford's crude decimation bun_zipper_res4.ply (duplicate, non-manifold and open faces) is held
 * to the hit/miss criterion only: where a face is duplicated with both windings its winding number
 * cancels, so the field has no inside there and the depth can differ from the triangles'.
 */
#include "marcher/marcher.h"
#include "formats/mesh_import.h"
#include "voxelizer/voxelizer.h"
#include "refrender.h"
#include "check.h"
#include "meshgen.h"

/* Renders t at full detail from an orbit view (azimuth, elevation, 35 degree field of view) on
 * the CPU into a freshly allocated img; o receives the options used (its camera for the rays). */
static int render_view(const vx_octree *t, double az, double el, uint32_t W, uint32_t H, vx_shade shade,
                       vx_march_opts *o, vx_march_image *img) {
  memset(o, 0, sizeof *o);
  o->width = W;
  o->height = H;
  o->lod = (int)t->depth;
  o->shade = shade;
  vx_march_orbit(t, az, el, 35.0, &o->cam);
  vx_error e;
  if (vx_march_image_alloc(img, W, H, 0, &e) != VX_OK || vx_render_cpu(t, o, img, 2, &e) != VX_OK) {
    CHECK_MSG(0, "render: %s", e.msg);
    vx_march_image_free(img);
    return 0;
  }
  return 1;
}

static void compare_views_opt(const vx_soup *m, uint32_t res, const char *name, int check_depth) {
  vx_voxelize_opts bo;
  memset(&bo, 0, sizeof bo);
  bo.resolution = res;
  bo.threads = 2;
  vx_octree t;
  vx_error e;
  vx_status st = vx_voxelize(m, &bo, &t, NULL, &e);
  CHECK_MSG(st == VX_OK, "%s: %s", name, e.msg);
  if (st != VX_OK) return;
  CHECK_MSG(vx_octree_validate(&t, &e) == VX_OK, "%s: %s", name, e.msg);
  const double views[4][2] = {{30.0, 20.0}, {150.0, 10.0}, {-100.0, 45.0}, {0.0, -30.0}};
  const uint32_t W = 96, H = 80;
  for (int v = 0; v < 4; v++) {
    vx_march_opts o;
    vx_march_image img;
    if (!render_view(&t, views[v][0], views[v][1], W, H, VX_SHADE_SMOOTH, &o, &img)) continue;
    uint64_t agree = 0, both = 0, close = 0, ref_hits = 0;
    for (uint32_t y = 0; y < H; y++)
      for (uint32_t x = 0; x < W; x++) {
        double ro[3], rd[3];
        ref_camera_ray(&o.cam, W, H, x, y, ro, rd);
        double tr = ref_ray_triangles(ro, rd, m->pos, m->tri_count);
        double tm = img.depth[(size_t)y * W + x];
        int hr = isfinite(tr), hm = isfinite(tm);
        ref_hits += hr;
        agree += hr == hm;
        if (hr && hm) {
          both++;
          if (fabs(tr - tm) <= t.xf.scale) close++;
        }
      }
    CHECK(ref_hits > W * H / 20);
    CHECK_MSG(agree >= 0.99 * W * H, "%s view %d: hit/miss agree on %llu of %u pixels", name, v,
              (unsigned long long)agree, W * H);
    /* rays grazing a silhouette may meet the field's surface and the mesh at different places */
    CHECK_MSG(!check_depth || close >= 0.99 * both, "%s view %d: depth within one voxel on %llu of %llu", name, v,
              (unsigned long long)close, (unsigned long long)both);
    vx_march_image_free(&img);
  }
  vx_octree_free(&t);
}

static void compare_views(const vx_soup *m, uint32_t res, const char *name) {
  compare_views_opt(m, res, name, 1);
}

/* A closed torus, major radius 1, minor 0.35, n x m quads split into triangles. */
static void torus_mesh(vx_soup *m, int n, int k) {
  memset(m, 0, sizeof *m);
  float *pos = (float *)malloc(sizeof(float) * 18 * n * k);
  int c = 0;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < k; j++) {
      double p[4][3];
      for (int q = 0; q < 4; q++) {
        double u = 2 * M_PI * (i + (q == 1 || q == 2)) / n, v = 2 * M_PI * (j + (q >= 2)) / k;
        double r = 1.0 + 0.35 * cos(v);
        p[q][0] = r * cos(u) + 0.13;
        p[q][1] = 0.35 * sin(v) * 1.1 - 0.05;
        p[q][2] = r * sin(u);
      }
      const int tri[6] = {0, 1, 2, 0, 2, 3};
      for (int a = 0; a < 6; a++)
        for (int b = 0; b < 3; b++) pos[c++] = (float)p[tri[a]][b];
    }
  CHECK(vx_soup_append(m, pos, (uint64_t)2 * n * k, NULL) == VX_OK);
  free(pos);
}

static void marcher_torus_matches_reference(void) {
  vx_soup m;
  torus_mesh(&m, 48, 24);
  compare_views(&m, 64, "torus");
  vx_soup_free(&m);
}

/* Features thinner than a voxel are not lost: an open, tilted sheet (zero thickness: its
 * corners are all outside by the winding number) and a closed slab 0.3 voxel thick, voxelized and
 * rendered: every pixel whose reference ray meets the triangles must hit. */
static void marcher_thin_features_survive_voxelization(void) {
  vx_soup sheet, slab;
  memset(&sheet, 0, sizeof sheet);
  memset(&slab, 0, sizeof slab);
  const double p0[3] = {0.1, 0.2, 0.15}, u[3] = {0.8, 0.1, 0.05}, w[3] = {0.05, 0.6, 0.55};
  CHECK(meshgen_sheet(&sheet, p0, u, w) == 0);
  /* 0.3 voxel thick at 32^3 when the box's largest extent (1) maps to 32 voxels */
  const double lo[3] = {0.0, 0.0, 0.5}, hi[3] = {1.0, 0.7, 0.5 + 0.3 / 32.0};
  CHECK(meshgen_box(&slab, lo, hi) == 0);
  const vx_soup *ms[2] = {&sheet, &slab};
  const char *names[2] = {"open sheet", "thin slab"};
  for (int k = 0; k < 2; k++) {
    vx_voxelize_opts bo;
    memset(&bo, 0, sizeof bo);
    bo.resolution = 32;
    vx_octree t;
    vx_error e;
    if (vx_voxelize(ms[k], &bo, &t, NULL, &e) != VX_OK) {
      CHECK_MSG(0, "%s: %s", names[k], e.msg);
      continue;
    }
    const uint32_t W = 64, H = 48;
    const double views[3][2] = {{20.0, 30.0}, {200.0, -25.0}, {75.0, 60.0}};
    for (int v = 0; v < 3; v++) {
      vx_march_opts o;
      vx_march_image img;
      if (!render_view(&t, views[v][0], views[v][1], W, H, VX_SHADE_SMOOTH, &o, &img)) continue;
      uint64_t ref = 0, lost = 0;
      for (uint32_t y = 0; y < H; y++)
        for (uint32_t x = 0; x < W; x++) {
          double ro[3], rd[3];
          ref_camera_ray(&o.cam, W, H, x, y, ro, rd);
          if (!isfinite(ref_ray_triangles(ro, rd, ms[k]->pos, ms[k]->tri_count))) continue;
          ref++;
          lost += !isfinite(img.depth[(size_t)y * W + x]);
        }
      CHECK(ref > 50);
      /* a pixel at the rim may see the rim's sub-voxel rounding (the field is sampled at
       * voxel corners, so an edge moves by up to a fraction of a voxel): 5% of a small image */
      CHECK_MSG(lost <= ref / 20, "%s view %d: %llu of %llu pixels over the feature see through it",
                names[k], v, (unsigned long long)lost, (unsigned long long)ref);
      vx_march_image_free(&img);
    }
    vx_octree_free(&t);
  }
  vx_soup_free(&sheet);
  vx_soup_free(&slab);
}

/* The analytic sphere through the whole path: a finely tessellated sphere mesh is voxelized
 * (field from the triangles) and rendered; depth must be within 0.25 voxel of the analytic sphere
 * on >= 99% of the pixels both hit, and the shading normal (read back from VX_SHADE_NORMALS, which
 * encodes the viewer-facing normal as colour, +-0.5 degree) within 3 degrees on >= 99%. The
 * tessellation (256 x 128) deviates from the sphere by < 0.003 voxel at 64^3. */
static void marcher_voxelized_sphere_matches_analytic(void) {
  vx_soup m;
  memset(&m, 0, sizeof m);
  CHECK(meshgen_sphere(&m, 0.0, 0.0, 0.0, 1.0, 256, 128) == 0);
  vx_voxelize_opts bo;
  memset(&bo, 0, sizeof bo);
  bo.resolution = 64;
  vx_octree t;
  vx_error e;
  if (vx_voxelize(&m, &bo, &t, NULL, &e) != VX_OK) {
    CHECK_MSG(0, "%s", e.msg);
    vx_soup_free(&m);
    return;
  }
  const double c[3] = {0.0, 0.0, 0.0}, voxel = t.xf.scale;
  const uint32_t W = 128, H = 128;
  const double views[3][2] = {{30.0, 20.0}, {160.0, -35.0}, {-80.0, 70.0}};
  for (int v = 0; v < 3; v++) {
    vx_march_opts o;
    vx_march_image img;
    if (!render_view(&t, views[v][0], views[v][1], W, H, VX_SHADE_NORMALS, &o, &img)) continue;
    uint64_t both = 0, depth_ok = 0, normal_ok = 0;
    double worst = 0.0;
    for (uint32_t y = 0; y < H; y++)
      for (uint32_t x = 0; x < W; x++) {
        double ro[3], rd[3];
        ref_camera_ray(&o.cam, W, H, x, y, ro, rd);
        double tr = ref_ray_sphere(ro, rd, c, 1.0);
        double tm = img.depth[(size_t)y * W + x];
        if (!isfinite(tr) || !isfinite(tm)) continue;
        both++;
        depth_ok += fabs(tm - tr) <= 0.25 * voxel;
        double n[3], q[3], ql = 0.0, dot = 0.0;
        for (int i = 0; i < 3; i++) n[i] = ro[i] + tr * rd[i] - c[i]; /* unit: radius 1 */
        for (int i = 0; i < 3; i++) {
          q[i] = img.rgb[((size_t)y * W + x) * 3 + i] / 255.0 * 2.0 - 1.0;
          ql += q[i] * q[i];
        }
        for (int i = 0; i < 3; i++) dot += n[i] * q[i] / sqrt(ql);
        double ang = acos(dot > 1.0 ? 1.0 : dot) * 180.0 / M_PI;
        if (ang > worst) worst = ang;
        normal_ok += ang <= 3.0;
      }
    CHECK(both > W * H / 10);
    CHECK_MSG(depth_ok >= 0.99 * both, "view %d: depth within 0.25 voxel on %llu of %llu", v,
              (unsigned long long)depth_ok, (unsigned long long)both);
    CHECK_MSG(normal_ok >= 0.99 * both, "view %d: normal within 3 degrees on %llu of %llu (worst %.2f)",
              v, (unsigned long long)normal_ok, (unsigned long long)both, worst);
    vx_march_image_free(&img);
  }
  vx_octree_free(&t);
  vx_soup_free(&m);
}

static int load(const char *path, vx_soup *m) {
  memset(m, 0, sizeof *m);
  vx_error e;
  vx_status st = vx_soup_import(path, m, &e);
  CHECK_MSG(st == VX_OK, "%s: %s", path, e.msg);
  return st == VX_OK;
}

static void marcher_bunny_matches_reference(void) {
  vx_soup m;
  if (!load(VX_DATA_DIR "/bunny.ply", &m)) return;
  compare_views(&m, 64, "bunny");
  vx_soup_free(&m);
}

static void marcher_more_meshes_match_reference(void) {
  char buf[1024];
  const char *names[2] = {"spot.obj", "scene.dae"};
  for (int k = 0; k < 2; k++) {
    const char *path = k == 0 ? check_data_mesh(names[k], buf, sizeof buf)
                              : check_test_mesh(names[k], buf, sizeof buf);
    vx_soup m;
    if (!load(path, &m)) continue;
    compare_views(&m, 64, names[k]);
    compare_views(&m, 128, names[k]);
    vx_soup_free(&m);
  }
  const char *path = check_data_mesh("bunny_res4.ply", buf, sizeof buf);
  vx_soup m;
  if (load(path, &m)) {
    compare_views_opt(&m, 64, "bunny_res4", 0);
    compare_views_opt(&m, 128, "bunny_res4", 0);
    vx_soup_free(&m);
  }
}

int main(void) {
  RUN(marcher_torus_matches_reference);
  RUN(marcher_voxelized_sphere_matches_analytic);
  RUN(marcher_thin_features_survive_voxelization);
  RUN(marcher_bunny_matches_reference);
  RUN(marcher_more_meshes_match_reference);
  return check_summary();
}
