/* SPDX-License-Identifier: Apache-2.0 */
/* test_marcher_cull.c - plane-bound culling (trace.h) never changes an image.
 *
 * The walk steps over a node when its plane and max-error bound prove that the field has no zero
 * on the ray's segment in it. That must be invisible: every pixel (colour and depth) equal to the
 * plain walk's (vx_march_opts.no_cull), while the walk fetches fewer nodes. Meshes that exercise
 * the corners of the rule: the bundled bunny (open at the bottom), a torus wound inward, a sheet
 * and a slab thinner than a voxel (the thin-feature rule re-signs voxels there, so the field is
 * discontinuous and the crack rule fires between voxels, which culling has to reproduce), seen
 * framed and from close up, at full detail and with auto LOD at several pixel-cone scales.
 */
#include "marcher/marcher.h"
#include "formats/mesh_import.h"
#include "voxelizer/voxelizer.h"
#include "check.h"
#include "meshgen.h"

#include <string.h>

typedef struct counts {
  uint64_t renders, visits_cull, visits_plain;
} counts;

/* Renders t with and without culling and compares the two images byte for byte. */
static void same_image(const vx_octree *t, const char *name, double az, double el, double zoom,
                       int lod, float lod_scale, counts *c) {
  const uint32_t W = 120, H = 90;
  vx_march_opts o;
  memset(&o, 0, sizeof o);
  o.width = W;
  o.height = H;
  o.lod = lod;
  o.lod_scale = lod_scale;
  vx_march_orbit(t, az, el, 40.0, &o.cam);
  for (int i = 0; i < 3; i++) o.cam.eye[i] = o.cam.target[i] + zoom * (o.cam.eye[i] - o.cam.target[i]);
  vx_march_image a, b;
  vx_error e;
  CHECK(vx_march_image_alloc(&a, W, H, 1, NULL) == VX_OK);
  CHECK(vx_march_image_alloc(&b, W, H, 1, NULL) == VX_OK);
  CHECK_MSG(vx_render_cpu(t, &o, &a, 2, &e) == VX_OK, "%s: %s", name, e.msg);
  o.no_cull = 1;
  CHECK_MSG(vx_render_cpu(t, &o, &b, 2, &e) == VX_OK, "%s: %s", name, e.msg);
  size_t n = (size_t)W * H, rgb_diff = 0, depth_diff = 0, hits = 0;
  for (size_t i = 0; i < n; i++) {
    rgb_diff += memcmp(a.rgb + 3 * i, b.rgb + 3 * i, 3) != 0;
    depth_diff += memcmp(&a.depth[i], &b.depth[i], sizeof(float)) != 0;
    hits += isfinite(b.depth[i]) != 0;
    c->visits_cull += a.visits[i];
    c->visits_plain += b.visits[i];
  }
  c->renders++;
  CHECK_MSG(hits > 0, "%s az %.0f zoom %.2f lod %d: nothing hit", name, az, zoom, lod);
  CHECK_MSG(rgb_diff == 0 && depth_diff == 0,
            "%s az %.0f el %.0f zoom %.2f lod %d scale %.1f: %zu colours, %zu depths differ", name,
            az, el, zoom, lod, (double)lod_scale, rgb_diff, depth_diff);
  vx_march_image_free(&a);
  vx_march_image_free(&b);
}

static void check_tree(const vx_octree *t, const char *name) {
  const double views[5][2] = {{30.0, 20.0}, {120.0, -15.0}, {210.0, 40.0}, {300.0, 5.0}, {75.0, 80.0}};
  const double zooms[3] = {1.0, 0.55, 0.3};
  const float scales[2] = {1.0f, 6.0f};
  counts full = {0, 0, 0}, lod = {0, 0, 0};
  for (int v = 0; v < 5; v++)
    for (int z = 0; z < 3; z++) {
      same_image(t, name, views[v][0], views[v][1], zooms[z], (int)t->depth, 0.0f, &full);
      for (int k = 0; k < 2; k++)
        same_image(t, name, views[v][0], views[v][1], zooms[z], VX_LOD_AUTO, scales[k], &lod);
      same_image(t, name, views[v][0], views[v][1], zooms[z], (int)t->depth - 1, 0.0f, &lod);
    }
  CHECK_MSG(full.visits_cull < full.visits_plain, "%s: culling saved nothing (%llu vs %llu)", name,
            (unsigned long long)full.visits_cull, (unsigned long long)full.visits_plain);
  CHECK(lod.visits_cull <= lod.visits_plain);
  fprintf(stderr, "  %s: node fetches with culling %.1f%% of the plain walk (full detail), %.1f%% (LOD)\n",
          name, 100.0 * (double)full.visits_cull / (double)full.visits_plain,
          100.0 * (double)lod.visits_cull / (double)lod.visits_plain);
}

static int voxelize(const vx_soup *m, uint32_t res, const char *name, vx_octree *t) {
  vx_voxelize_opts bo;
  memset(&bo, 0, sizeof bo);
  bo.resolution = res;
  bo.threads = 2;
  vx_error e;
  vx_status st = vx_voxelize(m, &bo, t, NULL, &e);
  CHECK_MSG(st == VX_OK, "%s: %s", name, e.msg);
  return st == VX_OK;
}

static void cull_bunny_is_invisible(void) {
  vx_soup m;
  memset(&m, 0, sizeof m);
  vx_error e;
  if (vx_soup_import(VX_DATA_DIR "/bunny.ply", &m, &e) != VX_OK) {
    CHECK_MSG(0, "bunny: %s", e.msg);
    return;
  }
  vx_octree t;
  if (voxelize(&m, 128, "bunny 128", &t)) {
    check_tree(&t, "bunny 128");
    vx_octree_free(&t);
  }
  vx_soup_free(&m);
}

static void cull_thin_and_inverted_meshes_are_invisible(void) {
  vx_soup m;
  memset(&m, 0, sizeof m);
  /* a sheet (open, zero thickness) and a slab of 0.3 voxels at 64^3, tilted */
  const double p0[3] = {-1.0, -0.9, -0.2}, u[3] = {2.0, 0.3, 0.4}, v[3] = {-0.2, 1.8, 0.5};
  CHECK(meshgen_sheet(&m, p0, u, v) == 0);
  const double lo[3] = {-1.0, -1.0, 0.5}, hi[3] = {1.0, 1.0, 0.5 + 0.3 * 2.0 / 64.0};
  CHECK(meshgen_box(&m, lo, hi) == 0);
  vx_octree t;
  if (voxelize(&m, 64, "sheet and slab 64", &t)) {
    check_tree(&t, "sheet and slab 64");
    vx_octree_free(&t);
  }
  vx_soup_free(&m);
  memset(&m, 0, sizeof m);
  /* a torus whose triangles face inward */
  CHECK(meshgen_torus(&m, 0.0, 0.0, 0.0, 1.0, 0.35, 48, 24) == 0);
  for (uint64_t k = 0; k < m.tri_count; k++)
    for (int i = 0; i < 3; i++) {
      float tmp = m.pos[9 * k + 3 + i];
      m.pos[9 * k + 3 + i] = m.pos[9 * k + 6 + i];
      m.pos[9 * k + 6 + i] = tmp;
    }
  if (voxelize(&m, 128, "inward torus 128", &t)) {
    check_tree(&t, "inward torus 128");
    vx_octree_free(&t);
  }
  vx_soup_free(&m);
}

int main(void) {
  RUN(cull_bunny_is_invisible);
  RUN(cull_thin_and_inverted_meshes_are_invisible);
  return check_summary();
}
