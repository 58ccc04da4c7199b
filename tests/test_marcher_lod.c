/* SPDX-License-Identifier: Apache-2.0 */
/* test_marcher_lod.c - rendering at every level of detail, blocks mode, partial loads, auto LOD.
 *
 * - Blocks mode at every level L draws exactly the occupied cells of level L: depth against a
 *   brute-force ray/box test over every occupied cell (double), which checks the traversal itself
 *   (front-to-back order, mirroring, PUSH/ADVANCE/POP) at every depth.
 * - Smooth rendering at every L from 0 to D works and never misses the object entirely, and its
 *   hits lie inside the occupied cells of level L (planes are clipped to their node's box).
 * - A tree loaded only down to level L renders as the full tree cut at L.
 * - Auto LOD: two stored resolutions of the same sphere agree at a distant view.
 */
#include "marcher/marcher.h"
#include "marcher/scene.h"
#include "svo/lod.h"
#include "refrender.h"
#include "check.h"

static const double sph[4] = {16.3, 15.6, 16.2, 10.4};

/* A two-part model: a sphere and a tilted thick plate, so levels have several cells. */
static double model_sdf(const double p[3], const void *user) {
  (void)user;
  double a = ref_sphere_sdf(p, sph);
  double n[3] = {0.3, 1.0, -0.2};
  double l = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
  double b = fabs((n[0] * p[0] + n[1] * p[1] + n[2] * p[2]) / l - 6.0) - 1.5;
  return a < b ? a : b;
}

typedef struct cells {
  uint64_t n;
  double (*lo)[3];
  double size;
} cells;

/* The occupied cells of level L, from the voxel set (not from the tree). */
static cells level_cells(const uint64_t *codes, uint64_t n, uint32_t depth, uint32_t L) {
  cells c;
  c.lo = malloc(sizeof *c.lo * n);
  c.n = 0;
  c.size = (double)(1u << (depth - L));
  uint64_t prev = ~0ull;
  for (uint64_t i = 0; i < n; i++) {
    uint64_t p = codes[i] >> (3 * (depth - L));
    if (p == prev) continue;
    prev = p;
    uint32_t x, y, z;
    vx_morton_decode(p, &x, &y, &z);
    c.lo[c.n][0] = x * c.size;
    c.lo[c.n][1] = y * c.size;
    c.lo[c.n][2] = z * c.size;
    c.n++;
  }
  return c;
}

/* Renders t; the camera is o->cam when `keep_cam`, else an orbit camera framing t. */
static void render_cam(const vx_octree *t, int lod, vx_shade shade, double az, double el,
                       uint32_t W, int keep_cam, vx_march_opts *o, vx_march_image *img) {
  vx_camera cam = o->cam;
  memset(o, 0, sizeof *o);
  o->width = o->height = W;
  o->lod = lod;
  o->shade = shade;
  if (keep_cam) o->cam = cam;
  else vx_march_orbit(t, az, el, 40.0, &o->cam);
  CHECK(vx_march_image_alloc(img, W, W, 1, NULL) == VX_OK);
  vx_error e;
  CHECK_MSG(vx_render_cpu(t, o, img, 2, &e) == VX_OK, "%s", e.msg);
}

static void render(const vx_octree *t, int lod, vx_shade shade, double az, double el,
                   uint32_t W, vx_march_opts *o, vx_march_image *img) {
  render_cam(t, lod, shade, az, el, W, 0, o, img);
}

static void build(uint32_t depth, vx_octree *t, uint64_t **codes, uint64_t *n) {
  vx_voxel *field;
  *n = ref_sdf_voxels(depth, 2.0f, model_sdf, NULL, codes, &field);
  CHECK(vx_octree_build(depth, *codes, field, *n, t, NULL) == VX_OK);
  free(field);
  t->band = 2.0f;
  t->xf.scale = 1.0;
  vx_error e;
  CHECK_MSG(vx_octree_fit_planes(t, NULL, NULL, &e) == VX_OK, "%s", e.msg);
  CHECK_MSG(vx_octree_validate(t, &e) == VX_OK, "%s", e.msg);
}

static void marcher_blocks_match_brute_force_boxes_at_every_level(void) {
  const uint32_t D = 5, W = 64;
  vx_octree t;
  uint64_t *codes, n;
  build(D, &t, &codes, &n);
  const double views[3][2] = {{30.0, 20.0}, {-140.0, -30.0}, {90.0, 0.0}};
  for (uint32_t L = 0; L <= D; L++) {
    cells c = level_cells(codes, n, D, L);
    for (int v = 0; v < 3; v++) {
      vx_march_opts o;
      vx_march_image img;
      render(&t, (int)L, VX_SHADE_BLOCKS, views[v][0], views[v][1], W, &o, &img);
      uint64_t bad = 0, hits = 0;
      for (uint32_t y = 0; y < W; y++)
        for (uint32_t x = 0; x < W; x++) {
          double ro[3], rd[3];
          ref_camera_ray(&o.cam, W, W, x, y, ro, rd);
          double best = INFINITY;
          for (uint64_t k = 0; k < c.n; k++) {
            double hi[3] = {c.lo[k][0] + c.size, c.lo[k][1] + c.size, c.lo[k][2] + c.size};
            double tt = ref_ray_box(ro, rd, c.lo[k], hi);
            if (tt < best) best = tt;
          }
          float tm = img.depth[y * W + x];
          hits += isfinite(best);
          if (isfinite(best) != isfinite(tm) || (isfinite(best) && fabs(best - tm) > 1e-3))
            bad++;
        }
      /* rays through a box's edge or corner may go either way: a few pixels */
      CHECK_MSG(bad <= W * W / 500, "level %u view %d: %llu of %u pixels differ", L, v,
                (unsigned long long)bad, W * W);
      CHECK(hits > 0);
      vx_march_image_free(&img);
    }
    free(c.lo);
  }
  free(codes);
  vx_octree_free(&t);
}

static void marcher_every_level_hits_inside_its_cells(void) {
  const uint32_t D = 5, W = 64;
  vx_octree t;
  uint64_t *codes, n;
  build(D, &t, &codes, &n);
  for (uint32_t L = 0; L <= D; L++) {
    cells c = level_cells(codes, n, D, L);
    vx_march_opts o;
    vx_march_image img;
    render(&t, (int)L, VX_SHADE_SMOOTH, 40.0, 25.0, W, &o, &img);
    uint64_t hits = 0, outside = 0;
    for (uint32_t y = 0; y < W; y++)
      for (uint32_t x = 0; x < W; x++) {
        float tm = img.depth[y * W + x];
        if (!isfinite(tm)) continue;
        hits++;
        double ro[3], rd[3], p[3];
        ref_camera_ray(&o.cam, W, W, x, y, ro, rd);
        for (int i = 0; i < 3; i++) p[i] = ro[i] + tm * rd[i];
        int in = 0;
        for (uint64_t k = 0; k < c.n && !in; k++) {
          int ok = 1;
          for (int i = 0; i < 3; i++)
            ok &= p[i] >= c.lo[k][i] - 1e-3 && p[i] <= c.lo[k][i] + c.size + 1e-3;
          in = ok;
        }
        if (!in) outside++;
      }
    CHECK_MSG(hits >= W * W / 20, "level %u: only %llu hits", L, (unsigned long long)hits);
    CHECK_MSG(outside == 0, "level %u: %llu hits outside the level's cells", L,
              (unsigned long long)outside);
    vx_march_image_free(&img);
    free(c.lo);
  }
  free(codes);
  vx_octree_free(&t);
}

/* A tree holding only levels 0..L (as the file reader leaves it) renders like the cut at L. */
static void marcher_partial_load_renders_like_the_cut(void) {
  const uint32_t D = 5, W = 48;
  vx_octree t;
  uint64_t *codes, n;
  build(D, &t, &codes, &n);
  for (uint32_t L = 0; L < D; L++) {
    vx_octree part = t;
    part.levels_loaded = L + 1;
    part.node_count = t.level_first[L] + t.level_count[L];
    part.voxels = NULL;
    part.voxel_count = 0;
    CHECK(vx_octree_validate(&part, NULL) == VX_OK);
    for (int shade = 0; shade < 2; shade++) {
      vx_march_opts o;
      vx_march_image a, b;
      render(&t, (int)L, (vx_shade)shade, 120.0, 35.0, W, &o, &a);
      render_cam(&part, (int)D, (vx_shade)shade, 0, 0, W, 1, &o, &b); /* same camera */
      CHECK(memcmp(a.depth, b.depth, W * W * sizeof(float)) == 0);
      CHECK(memcmp(a.rgb, b.rgb, W * W * 3) == 0);
      vx_march_image_free(&a);
      vx_march_image_free(&b);
    }
  }
  free(codes);
  vx_octree_free(&t);
}

/* The same world sphere stored at 32^3 (scale 2) and 64^3 (scale 1): at a distant view auto
 * LOD stops both at cells of the same world size, so the images agree. */
static void marcher_auto_lod_agrees_across_resolutions(void) {
  const uint32_t W = 64;
  const double world[4] = {32.3, 31.6, 32.2, 20.5};
  const double half[4] = {world[0] / 2, world[1] / 2, world[2] / 2, world[3] / 2};
  vx_octree a, b;
  CHECK(ref_sdf_tree(5, 2.0f, ref_sphere_sdf, half, &a) == VX_OK);
  a.xf.scale = 2.0;
  CHECK(ref_sdf_tree(6, 2.0f, ref_sphere_sdf, world, &b) == VX_OK);
  CHECK(vx_octree_fit_planes(&a, NULL, NULL, NULL) == VX_OK);
  CHECK(vx_octree_fit_planes(&b, NULL, NULL, NULL) == VX_OK);
  vx_march_opts o;
  memset(&o, 0, sizeof o);
  o.width = o.height = W;
  o.lod = VX_LOD_AUTO;
  for (int i = 0; i < 3; i++) {
    o.cam.target[i] = world[i];
    o.cam.eye[i] = world[i];
  }
  o.cam.eye[0] += 180.0;
  o.cam.eye[1] += 120.0;
  o.cam.eye[2] += 200.0;
  o.cam.up[1] = 1.0;
  o.cam.fov_y_deg = 30.0;
  vx_march_image ia, ib, full;
  CHECK(vx_march_image_alloc(&ia, W, W, 1, NULL) == VX_OK);
  CHECK(vx_march_image_alloc(&ib, W, W, 1, NULL) == VX_OK);
  CHECK(vx_march_image_alloc(&full, W, W, 1, NULL) == VX_OK);
  CHECK(vx_render_cpu(&a, &o, &ia, 2, NULL) == VX_OK);
  CHECK(vx_render_cpu(&b, &o, &ib, 2, NULL) == VX_OK);
  o.lod = 6;
  o.no_cull = 1; /* the plain walk: auto LOD is to save on it */
  CHECK(vx_render_cpu(&b, &o, &full, 2, NULL) == VX_OK);
  uint64_t hits = 0, differ = 0, far = 0, va = 0, vb = 0, vfull = 0;
  for (uint32_t i = 0; i < W * W; i++) {
    va += ia.visits[i];
    vb += ib.visits[i];
    vfull += full.visits[i];
    int ha = isfinite(ia.depth[i]), hb = isfinite(ib.depth[i]);
    hits += ha;
    if (ha != hb) differ++;
    else if (ha && fabs(ia.depth[i] - ib.depth[i]) > 2.0) far++;
  }
  CHECK(hits > W * W / 20);
  CHECK_MSG(differ <= hits / 20, "hit/miss differs on %llu of %llu", (unsigned long long)differ,
            (unsigned long long)hits);
  CHECK_MSG(far <= hits / 20, "depth differs by > 2 world units on %llu of %llu",
            (unsigned long long)far, (unsigned long long)hits);
  CHECK_MSG(vb < vfull, "auto LOD visits %llu, full %llu", (unsigned long long)vb,
            (unsigned long long)vfull);
  vx_march_image_free(&ia);
  vx_march_image_free(&ib);
  vx_march_image_free(&full);
  vx_octree_free(&a);
  vx_octree_free(&b);
}

/* Pruned trees: leaves at many depths are drawn as planes, nothing vanishes. */
static void marcher_pruned_tree_renders(void) {
  const uint32_t W = 64;
  vx_octree t;
  CHECK(ref_sdf_tree(6, 2.0f, ref_sphere_sdf, (const double[4]){32.3, 31.6, 32.2, 20.5}, &t) ==
        VX_OK);
  CHECK(vx_octree_fit_planes(&t, NULL, NULL, NULL) == VX_OK);
  vx_march_opts o;
  vx_march_image full, pr;
  render(&t, 6, VX_SHADE_SMOOTH, 25.0, 20.0, W, &o, &full);
  vx_error e;
  CHECK_MSG(vx_octree_prune(&t, 0.5f, &e) == VX_OK, "%s", e.msg);
  CHECK_MSG(vx_octree_validate(&t, &e) == VX_OK, "%s", e.msg);
  render_cam(&t, 6, VX_SHADE_SMOOTH, 0, 0, W, 1, &o, &pr); /* same camera */
  uint64_t hits = 0, differ = 0, far = 0;
  for (uint32_t i = 0; i < W * W; i++) {
    int a = isfinite(full.depth[i]), b = isfinite(pr.depth[i]);
    hits += a;
    if (a != b) differ++;
    else if (a && fabs(full.depth[i] - pr.depth[i]) > 1.5) far++;
  }
  CHECK(hits > W * W / 20);
  CHECK_MSG(differ <= hits / 50, "hit/miss differs on %llu of %llu", (unsigned long long)differ,
            (unsigned long long)hits);
  CHECK_MSG(far <= hits / 50, "depth differs by > 1.5 voxel on %llu of %llu",
            (unsigned long long)far, (unsigned long long)hits);
  vx_march_image_free(&full);
  vx_march_image_free(&pr);
  vx_octree_free(&t);
}

int main(void) {
  RUN(marcher_blocks_match_brute_force_boxes_at_every_level);
  RUN(marcher_every_level_hits_inside_its_cells);
  RUN(marcher_partial_load_renders_like_the_cut);
  RUN(marcher_auto_lod_agrees_across_resolutions);
  RUN(marcher_pruned_tree_renders);
  return check_summary();
}
