/* SPDX-License-Identifier: Apache-2.0 */
/* test_marcher_sphere.c - the smooth surface of a sphere's field against the analytic sphere.
 *
 * The tree is built straight from the exact signed distance (refrender.h), so every difference
 * from the analytic sphere is the marcher's (plus the trilinear model and 8-bit quantization,
 * both far below the tolerances): depth within 0.25 voxel on >= 99% of pixels where both hit,
 * normals within a few degrees, hit/miss agreeing except at the silhouette.
 * VX_PERF=1 in the environment also prints CPU render times of 512x512 images at 64^3 and 256^3.
 */
#include <time.h>
#include "marcher/marcher.h"
#include "marcher/scene.h"
#include "refrender.h"
#include "check.h"

static const double sphere64[4] = {32.3, 31.6, 32.2, 20.5};

static void check_sphere_view(const vx_octree *t, const double *sph, double az, double el,
                              uint32_t W, uint32_t H) {
  vx_march_opts o;
  memset(&o, 0, sizeof o);
  o.width = W;
  o.height = H;
  o.lod = (int)t->depth;
  o.shade = VX_SHADE_SMOOTH;
  vx_march_orbit(t, az, el, 40.0, &o.cam);
  vx_march_image img;
  CHECK(vx_march_image_alloc(&img, W, H, 1, NULL) == VX_OK);
  vx_error e;
  CHECK_MSG(vx_render_cpu(t, &o, &img, 2, &e) == VX_OK, "%s", e.msg);
  vx_trace_scene s;
  CHECK(vx_trace_scene_init(&s, t, &o) == VX_OK);
  uint64_t both = 0, depth_ok = 0, normal_ok = 0, disagree = 0, ref_hits = 0;
  double worst_normal = 0.0;
  for (uint32_t y = 0; y < H; y++)
    for (uint32_t x = 0; x < W; x++) {
      double ro[3], rd[3];
      ref_camera_ray(&o.cam, W, H, x, y, ro, rd);
      double tr = ref_ray_sphere(ro, rd, sph, sph[3]);
      float tm = img.depth[(size_t)y * W + x];
      int hr = isfinite(tr), hm = isfinite(tm);
      ref_hits += hr;
      if (hr != hm) disagree++;
      if (!hr || !hm) continue;
      both++;
      if (fabs(tm - tr) <= 0.25) depth_ok++;
      /* the marcher's normal for the same pixel, through the per-ray function */
      float d[3];
      for (int i = 0; i < 3; i++) d[i] = s.dir00[i] + x * s.du[i] + y * s.dv[i];
      float len = sqrtf(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
      for (int i = 0; i < 3; i++) d[i] /= len;
      vx_trace_hit h;
      vx_trace_ray(&s, s.eye, d, &h);
      double p[3], n[3];
      for (int i = 0; i < 3; i++) p[i] = ro[i] + tr * rd[i];
      for (int i = 0; i < 3; i++) n[i] = (p[i] - sph[i]) / sph[3];
      double c = n[0] * h.n[0] + n[1] * h.n[1] + n[2] * h.n[2];
      double ang = acos(c > 1.0 ? 1.0 : c) * 180.0 / M_PI;
      if (ang > worst_normal) worst_normal = ang;
      if (ang <= 3.0) normal_ok++;
    }
  CHECK(ref_hits > W * H / 20);
  CHECK_MSG(depth_ok >= 0.99 * both, "depth within 0.25 voxel on %llu of %llu",
            (unsigned long long)depth_ok, (unsigned long long)both);
  CHECK_MSG(normal_ok >= 0.99 * both, "normal within 3 degrees on %llu of %llu (worst %.2f)",
            (unsigned long long)normal_ok, (unsigned long long)both, worst_normal);
  CHECK_MSG(disagree <= 0.01 * ref_hits, "hit/miss differs on %llu pixels of %llu hits",
            (unsigned long long)disagree, (unsigned long long)ref_hits);
  vx_march_image_free(&img);
}

static void marcher_sphere_depth_and_normals_match_analytic(void) {
  vx_octree t;
  CHECK(ref_sdf_tree(6, 2.0f, ref_sphere_sdf, sphere64, &t) == VX_OK);
  CHECK(vx_octree_validate(&t, NULL) == VX_OK);
  check_sphere_view(&t, sphere64, 30.0, 20.0, 128, 128);
  check_sphere_view(&t, sphere64, 200.0, -35.0, 96, 128);
  check_sphere_view(&t, sphere64, 90.0, 0.0, 128, 80); /* axis-aligned rays: zero components */
  vx_octree_free(&t);
}

/* A camera inside the grid (outside the sphere) still sees the sphere correctly. */
static void marcher_sphere_camera_inside_grid(void) {
  vx_octree t;
  CHECK(ref_sdf_tree(6, 2.0f, ref_sphere_sdf, sphere64, &t) == VX_OK);
  vx_march_opts o;
  memset(&o, 0, sizeof o);
  o.width = o.height = 64;
  o.lod = 6;
  o.cam.eye[0] = 60.0;
  o.cam.eye[1] = 35.0;
  o.cam.eye[2] = 58.0;
  for (int i = 0; i < 3; i++) o.cam.target[i] = sphere64[i];
  o.cam.up[1] = 1.0;
  o.cam.fov_y_deg = 70.0;
  vx_march_image img;
  CHECK(vx_march_image_alloc(&img, 64, 64, 0, NULL) == VX_OK);
  CHECK(vx_render_cpu(&t, &o, &img, 1, NULL) == VX_OK);
  uint64_t bad = 0, hits = 0;
  for (uint32_t y = 0; y < 64; y++)
    for (uint32_t x = 0; x < 64; x++) {
      double ro[3], rd[3];
      ref_camera_ray(&o.cam, 64, 64, x, y, ro, rd);
      double tr = ref_ray_sphere(ro, rd, sphere64, sphere64[3]);
      float tm = img.depth[y * 64 + x];
      if (isfinite(tr)) hits++;
      if (isfinite(tr) != isfinite(tm) || (isfinite(tr) && fabs(tr - tm) > 0.25)) bad++;
    }
  CHECK(hits > 1000);
  CHECK_MSG(bad <= hits / 100, "%llu bad of %llu", (unsigned long long)bad,
            (unsigned long long)hits);
  vx_march_image_free(&img);
  vx_octree_free(&t);
}

/* The image does not depend on the number of threads. */
static void marcher_render_is_thread_count_independent(void) {
  vx_octree t;
  CHECK(ref_sdf_tree(5, 2.0f, ref_sphere_sdf, (const double[4]){16.2, 15.7, 16.1, 9.3}, &t) ==
        VX_OK);
  vx_march_opts o;
  memset(&o, 0, sizeof o);
  o.width = 50;
  o.height = 37;
  o.lod = 5;
  vx_march_orbit(&t, 10.0, 30.0, 45.0, &o.cam);
  vx_march_image a, b;
  CHECK(vx_march_image_alloc(&a, 50, 37, 1, NULL) == VX_OK);
  CHECK(vx_march_image_alloc(&b, 50, 37, 1, NULL) == VX_OK);
  CHECK(vx_render_cpu(&t, &o, &a, 1, NULL) == VX_OK);
  CHECK(vx_render_cpu(&t, &o, &b, 3, NULL) == VX_OK);
  CHECK(memcmp(a.rgb, b.rgb, 50 * 37 * 3) == 0);
  CHECK(memcmp(a.depth, b.depth, 50 * 37 * sizeof(float)) == 0);
  CHECK(memcmp(a.visits, b.visits, 50 * 37 * sizeof(uint32_t)) == 0);
  vx_march_image_free(&a);
  vx_march_image_free(&b);
  vx_octree_free(&t);
}

static void marcher_rejects_bad_options(void) {
  vx_octree t;
  CHECK(ref_sdf_tree(4, 2.0f, ref_sphere_sdf, (const double[4]){8, 8, 8, 5}, &t) == VX_OK);
  vx_march_opts o;
  memset(&o, 0, sizeof o);
  o.width = o.height = 8;
  vx_march_orbit(&t, 0, 0, 40, &o.cam);
  vx_march_image img;
  CHECK(vx_march_image_alloc(&img, 8, 8, 0, NULL) == VX_OK);
  vx_error e;
  o.lod = 5;
  CHECK(vx_render_cpu(&t, &o, &img, 1, &e) == VX_ERR_INVALID_ARG && strstr(e.msg, "level"));
  o.lod = -2;
  CHECK(vx_render_cpu(&t, &o, &img, 1, &e) == VX_ERR_INVALID_ARG);
  o.lod = 4;
  o.cam.target[0] = o.cam.eye[0];
  o.cam.target[1] = o.cam.eye[1];
  o.cam.target[2] = o.cam.eye[2];
  CHECK(vx_render_cpu(&t, &o, &img, 1, &e) == VX_ERR_INVALID_ARG && strstr(e.msg, "camera"));
  vx_march_orbit(&t, 0, 0, 40, &o.cam);
  o.cam.fov_y_deg = 180.0;
  CHECK(vx_render_cpu(&t, &o, &img, 1, &e) == VX_ERR_INVALID_ARG);
  o.cam.fov_y_deg = 40.0;
  o.width = 9; /* image buffer does not match */
  CHECK(vx_render_cpu(&t, &o, &img, 1, &e) == VX_ERR_INVALID_ARG);
  o.width = 8;
  CHECK(vx_render_cpu(&t, &o, &img, 1, &e) == VX_OK);
  CHECK(vx_render_gpu(&t, &o, &img, &e) == VX_OK || e.status == VX_ERR_NO_GPU ||
        e.status == VX_ERR_CUDA);
  vx_march_image_free(&img);
  vx_octree_free(&t);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void perf(uint32_t depth) {
  double R = (double)(1u << depth);
  double sph[4] = {R * 0.503, R * 0.494, R * 0.5031, R * 0.32};
  vx_octree t;
  double t0 = now_s();
  CHECK(ref_sdf_tree(depth, 2.0f, ref_sphere_sdf, sph, &t) == VX_OK);
  double t1 = now_s();
  vx_march_opts o;
  memset(&o, 0, sizeof o);
  o.width = o.height = 512;
  o.lod = (int)depth;
  vx_march_orbit(&t, 30.0, 20.0, 40.0, &o.cam);
  vx_march_image img;
  CHECK(vx_march_image_alloc(&img, 512, 512, 1, NULL) == VX_OK);
  vx_render_cpu(&t, &o, &img, 0, NULL); /* warm-up */
  double best = 1e30;
  for (int k = 0; k < 3; k++) {
    double a = now_s();
    CHECK(vx_render_cpu(&t, &o, &img, 0, NULL) == VX_OK);
    double b = now_s() - a;
    if (b < best) best = b;
  }
  uint64_t visits = 0, hits = 0;
  for (size_t i = 0; i < 512 * 512; i++) {
    visits += img.visits[i];
    hits += isfinite(img.depth[i]);
  }
  fprintf(stderr,
          "perf: sphere %u^3 (%llu voxels, built in %.2f s): 512x512 CPU render %.1f ms "
          "(%.2f Mrays/s, %.1f visits/ray, %llu hits)\n",
          1u << depth, (unsigned long long)t.voxel_count, t1 - t0, best * 1e3,
          512.0 * 512.0 / best * 1e-6, (double)visits / (512.0 * 512.0),
          (unsigned long long)hits);
  vx_march_image_free(&img);
  vx_octree_free(&t);
}

static void marcher_perf(void) {
  perf(6);
  perf(8);
}

int main(void) {
  RUN(marcher_sphere_depth_and_normals_match_analytic);
  RUN(marcher_sphere_camera_inside_grid);
  RUN(marcher_render_is_thread_count_independent);
  RUN(marcher_rejects_bad_options);
  if (getenv("VX_PERF")) RUN(marcher_perf);
  return check_summary();
}
