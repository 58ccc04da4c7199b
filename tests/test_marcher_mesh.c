/* test_marcher_mesh.c - rendered meshes against a brute-force ray/triangle reference renderer.
 *
 * The mesh is voxelized (voxelizer.h) and rendered by the CPU marcher; the reference intersects
 * every pixel's ray with every triangle in double precision (refrender.h). Hit/miss must agree on
 * >= 99% of pixels and depth must be within one voxel where both hit (on >= 99% of those pixels:
 * a ray grazing the silhouette can meet the field's surface and the mesh at different places). Meshes: an analytic closed
 * torus (always) and the Stanford bunny from ../shared (skipped when absent).
 */
#include "marcher/marcher.h"
#include "formats/mesh_import.h"
#include "voxelizer/voxelizer.h"
#include "refrender.h"
#include "check.h"

static void compare_views(const vx_mesh *m, uint32_t res, const char *name) {
  vx_build_opts bo;
  memset(&bo, 0, sizeof bo);
  bo.resolution = res;
  bo.threads = 2;
  vx_tree t;
  vx_error e;
  vx_status st = vx_voxelize(m, &bo, &t, NULL, &e);
  CHECK_MSG(st == VX_OK, "%s: %s", name, e.msg);
  if (st != VX_OK) return;
  CHECK_MSG(vx_tree_validate(&t, &e) == VX_OK, "%s: %s", name, e.msg);
  const double views[4][2] = {{30.0, 20.0}, {150.0, 10.0}, {-100.0, 45.0}, {0.0, -30.0}};
  const uint32_t W = 96, H = 80;
  for (int v = 0; v < 4; v++) {
    vx_render_opts o;
    memset(&o, 0, sizeof o);
    o.width = W;
    o.height = H;
    o.lod = (int)t.depth;
    vx_camera_orbit(&t, views[v][0], views[v][1], 35.0, &o.cam);
    vx_image img;
    CHECK(vx_image_alloc(&img, W, H, 0, NULL) == VX_OK);
    CHECK_MSG(vx_render_cpu(&t, &o, &img, 2, &e) == VX_OK, "%s", e.msg);
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
    CHECK_MSG(close >= 0.99 * both, "%s view %d: depth within one voxel on %llu of %llu", name, v,
              (unsigned long long)close, (unsigned long long)both);
    vx_image_free(&img);
  }
  vx_tree_free(&t);
}

/* A closed torus, major radius 1, minor 0.35, n x m quads split into triangles. */
static void torus_mesh(vx_mesh *m, int n, int k) {
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
  CHECK(vx_mesh_append(m, pos, (uint64_t)2 * n * k, NULL) == VX_OK);
  free(pos);
}

static void marcher_torus_matches_reference(void) {
  vx_mesh m;
  torus_mesh(&m, 48, 24);
  compare_views(&m, 64, "torus");
  vx_mesh_free(&m);
}

static void marcher_bunny_matches_reference(void) {
  char buf[1024];
  const char *path = check_shared_mesh("stanford_bunny/bun_zipper_res4.ply", buf, sizeof buf);
  if (!path) CHECK_SKIP("../shared/data/meshes is absent");
  vx_mesh m;
  memset(&m, 0, sizeof m);
  vx_error e;
  CHECK_MSG(vx_mesh_import(path, &m, &e) == VX_OK, "%s", e.msg);
  compare_views(&m, 64, "bunny");
  compare_views(&m, 128, "bunny");
  vx_mesh_free(&m);
}

int main(void) {
  RUN(marcher_torus_matches_reference);
  RUN(marcher_bunny_matches_reference);
  return check_summary();
}
