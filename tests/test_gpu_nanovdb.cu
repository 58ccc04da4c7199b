/* SPDX-License-Identifier: Apache-2.0 */
/* test_gpu_nanovdb.cu - voxlod's marcher and NanoVDB's HDDA zero crossing see the same surface
 * (ctest label gpu). The host half runs everywhere; the GPU half exits 77 without a device.
 *
 * The two methods differ by design: voxlod finds the first root of the trilinear field inside each
 * voxel; NanoVDB's ZeroCrossing looks for a sign change between successive grid samples along its
 * DDA and reports the entry of that voxel. So depths differ by up to about a voxel, and rays that
 * graze the silhouette (a sub-voxel dip below zero between samples) can hit in one and miss in the
 * other: a one-pixel ring around each silhouette when a pixel is about a voxel, as here. Bounds:
 * hit masks differ on <= 8% of the hit pixels (measured 2-4%), >= 99% of those differences lie on
 * a silhouette (3x3 neighbourhood with hits and misses), common hits off the silhouettes agree
 * within 2 voxels on >= 98% of them (measured 98.8-99.8%; the rest are grazing rays on the
 * torus and in the crease between the spheres), and NanoVDB on host and GPU agree on >= 99.9% of pixels.
 */
#include "marcher/marcher.h"
#include "bench/nvdb_compare.h"
#include "check.h"
#include "test_gpu_sdf.h"

#define W 240
#define H 180

static vx_octree tree;
static vx_nvdb *g = NULL;

static void opts_for(vx_march_opts *o, double az, double el) {
  memset(o, 0, sizeof *o);
  o->width = W;
  o->height = H;
  o->lod = (int)tree.depth;
  o->shade = VX_SHADE_SMOOTH;
  vx_march_orbit(&tree, az, el, 40.0, &o->cam);
}

/* 1 when the 3x3 neighbourhood of (x, y) holds both hits and misses in img: a silhouette pixel. */
static int on_silhouette(const vx_march_image *img, int x, int y) {
  int hit = 0, miss = 0;
  for (int dy = -1; dy <= 1; dy++)
    for (int dx = -1; dx <= 1; dx++) {
      int u = x + dx, v = y + dy;
      if (u < 0 || v < 0 || u >= W || v >= H) continue;
      if (isfinite(img->depth[(size_t)v * W + u])) hit = 1;
      else miss = 1;
    }
  return hit && miss;
}

/* Compares hit masks and depths of a (voxlod) and b (NanoVDB). */
static void compare(const vx_march_image *a, const vx_march_image *b, const char *what, int view) {
  size_t n = (size_t)W * H, hits = 0, differ = 0, inner = 0, both = 0, near = 0;
  double voxel = tree.xf.scale; /* world units per voxel */
  for (size_t i = 0; i < n; i++) {
    int ha = isfinite(a->depth[i]), hb = isfinite(b->depth[i]);
    hits += ha;
    if (ha != hb) {
      differ++;
      int x = (int)(i % W), y = (int)(i / W);
      if (!on_silhouette(a, x, y) && !on_silhouette(b, x, y)) inner++;
    }
    if (ha && hb && !on_silhouette(a, (int)(i % W), (int)(i / W))) {
      both++; /* grazing rays at silhouettes may step several voxels before a sign change */
      if (fabs((double)a->depth[i] - (double)b->depth[i]) <= 2.0 * voxel) near++;
    }
  }
  fprintf(stderr, "  %s view %d: %zu hits, %zu differ (%zu off the silhouettes), %zu/%zu inner depths "
          "within 2 voxels\n", what, view, hits, differ, inner, near, both);
  CHECK_MSG(hits > n / 20, "%s view %d: the object is missing", what, view);
  CHECK_MSG(differ * 100 <= hits * 8, "%s view %d: %zu of %zu hit pixels differ", what, view,
            differ, hits);
  CHECK_MSG(inner * 100 <= differ, "%s view %d: %zu differences off the silhouettes", what, view,
            inner);
  CHECK_MSG(near * 50 >= both * 49, "%s view %d: only %zu of %zu depths agree", what, view, near, both);
}

static const double views[3][2] = {{30.0, 20.0}, {150.0, -10.0}, {270.0, 60.0}};

static void nanovdb_host_sees_the_same_surface(void) {
  vx_march_image a, b;
  CHECK(vx_march_image_alloc(&a, W, H, 0, NULL) == VX_OK);
  CHECK(vx_march_image_alloc(&b, W, H, 0, NULL) == VX_OK);
  for (int v = 0; v < 3; v++) {
    vx_march_opts o;
    vx_error e;
    opts_for(&o, views[v][0], views[v][1]);
    CHECK_MSG(vx_render_cpu(&tree, &o, &a, 2, &e) == VX_OK, "%s", e.msg);
    CHECK_MSG(vx_nvdb_render_cpu(g, &tree, &o, &b, &e) == VX_OK, "%s", e.msg);
    compare(&a, &b, "host", v);
  }
  vx_march_image_free(&a);
  vx_march_image_free(&b);
}

static void nanovdb_gpu_sees_the_same_surface(void) {
  vx_march_image a, b, c;
  CHECK(vx_march_image_alloc(&a, W, H, 0, NULL) == VX_OK);
  CHECK(vx_march_image_alloc(&b, W, H, 0, NULL) == VX_OK);
  CHECK(vx_march_image_alloc(&c, W, H, 0, NULL) == VX_OK);
  for (int v = 0; v < 3; v++) {
    vx_march_opts o;
    vx_error e;
    opts_for(&o, views[v][0], views[v][1]);
    vx_status s = vx_render_gpu(&tree, &o, &a, &e);
    if (s == VX_ERR_NO_GPU) CHECK_SKIP("%s", e.msg);
    CHECK_MSG(s == VX_OK, "%s", e.msg);
    CHECK_MSG(vx_nvdb_render_gpu(g, &tree, &o, &b, &e) == VX_OK, "%s", e.msg);
    compare(&a, &b, "gpu", v);
    /* NanoVDB on host and device: same hits (same code; FMA contraction may move a depth). */
    CHECK(vx_nvdb_render_cpu(g, &tree, &o, &c, &e) == VX_OK);
    size_t mism = 0;
    for (size_t i = 0; i < (size_t)W * H; i++) mism += isfinite(b.depth[i]) != isfinite(c.depth[i]);
    CHECK_MSG(mism * 1000 <= (size_t)W * H, "view %d: NanoVDB host/GPU hit masks differ on %zu", v, mism);
  }
  vx_march_image_free(&a);
  vx_march_image_free(&b);
  vx_march_image_free(&c);
}

int main(void) {
  CHECK(gpu_sdf_tree(7, &tree) == VX_OK);
  CHECK(vx_octree_validate(&tree, NULL) == VX_OK);
  vx_nvdb_stats ns;
  vx_error e;
  vx_status s = vx_nvdb_create(&tree, &g, &ns, &e);
  CHECK_MSG(s == VX_OK, "%s", e.msg);
  if (s != VX_OK) return check_summary();
  CHECK(ns.voxels_written == tree.voxel_count);
  CHECK(ns.active_values > 0 && ns.active_values <= 8 * tree.voxel_count);
  RUN(nanovdb_host_sees_the_same_surface);
  if (vx_cuda_device_name() == NULL) {
    vx_nvdb_free(g);
    if (check_summary() != 0) return 1;
    CHECK_SKIP("no usable CUDA device (the host comparison ran)");
  }
  RUN(nanovdb_gpu_sees_the_same_surface);
  vx_nvdb_free(g);
  vx_octree_free(&tree);
  return check_summary();
}
