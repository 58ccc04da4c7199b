/* SPDX-License-Identifier: Apache-2.0 */
/* test_marcher_color.c - rendering coloured trees, against brute-force references in double.
 *
 * The tree is a sphere built from its exact distance (refrender.h) whose cells are coloured by
 * hand by the octant of the grid they lie in (split at the grid's centre, so every cell below
 * the root lies in one octant at every level): voxels from one table, nodes from another, so an
 * image shows which of the two a pixel's colour came from.
 * - Albedo at the finest level, at cuts, with auto LOD and in a pruned tree: every hit pixel
 *   (away from the octant planes) has exactly the stored sRGB colour of the octant its hit point
 *   lies in (the point from the depth buffer and the reference camera ray, in double): voxel
 *   colours at the finest level, node colours above.
 * - Lit (the default) and blocks: each pixel is the albedo (sRGB decoded by the test's own
 *   formula) times one lighting factor in [ambient, 1], gamma 2: the three channels' intervals of
 *   that factor intersect.
 * - Colour changes nothing else: depth and normals are those of the grey tree, bit for bit; a
 *   grey tree's images are those of the renderer before colour existed (a hash of them, where
 *   float arithmetic is reproducible: x86-64 without FMA contraction).
 * - Holes: with one octant's cells at alpha 0 the rays there pass through the front surface and
 *   meet the sphere's back face from inside (analytic depth and that octant's colour), or nothing.
 */
#include "marcher/marcher.h"
#include "marcher/scene.h"
#include "svo/lod.h"
#include "refrender.h"
#include "check.h"

static const double sph[4] = {32.3, 31.6, 32.2, 20.5};
#define D 6
#define C 32.0 /* the grid's centre: the octant planes */

/* sRGB bytes per octant (bit 0: x >= C, bit 1: y >= C, bit 2: z >= C), alpha 255. */
static const uint8_t voxel_rgb[8][3] = {{200, 60, 60},  {60, 200, 60},  {60, 60, 200},
                                        {200, 200, 60}, {200, 60, 200}, {60, 200, 200},
                                        {230, 150, 80}, {120, 90, 220}};
/* nodes: the voxels' table reversed (no octant has the same colour in both) */
static const uint8_t *node_rgb(int oct) { return voxel_rgb[7 - oct]; }

static uint32_t pack(const uint8_t rgb[3], uint32_t alpha) {
  return (uint32_t)rgb[0] | (uint32_t)rgb[1] << 8 | (uint32_t)rgb[2] << 16 | alpha << 24;
}

static int octant_of(const double p[3]) {
  return (p[0] >= C) | (p[1] >= C) << 1 | (p[2] >= C) << 2;
}

/* Distance from p to the nearest octant plane. */
static double border_dist(const double p[3]) {
  double m = INFINITY;
  for (int i = 0; i < 3; i++) m = fmin(m, fabs(p[i] - C));
  return m;
}

/* Colours every cell by the octant of its box (the root: node table's octant 0); cells in
 * octant `hole` get alpha 0 (hole < 0: none). Walks the tree from the root for the cells'
 * positions. */
static void color_cells(vx_octree *t, uint32_t node, uint32_t level, uint32_t x, uint32_t y,
                        uint32_t z, int hole) {
  uint32_t size = 1u << (t->depth - level);
  double c[3] = {x * (double)size + 0.5 * size, y * (double)size + 0.5 * size,
                 z * (double)size + 0.5 * size};
  int oct = level == 0 ? 0 : octant_of(c);
  t->node_color[node] = pack(node_rgb(oct), level > 0 && oct == hole ? 0u : 255u);
  const vx_node *n = &t->nodes[node];
  uint32_t mask = vx_node_mask(n->info);
  if (level + 1 >= t->levels_loaded) return;
  for (uint32_t sl = 0; sl < 8; sl++) {
    if (!(mask >> sl & 1u)) continue;
    uint32_t ci = vx_child_index(n->child, mask, sl);
    uint32_t cx = 2 * x + (sl & 1u), cy = 2 * y + (sl >> 1 & 1u), cz = 2 * z + (sl >> 2 & 1u);
    if (level + 1 == t->depth) {
      double v[3] = {cx + 0.5, cy + 0.5, cz + 0.5};
      int vo = octant_of(v);
      t->voxel_color[ci] = pack(voxel_rgb[vo], vo == hole ? 0u : 255u);
    } else {
      color_cells(t, ci, level + 1, cx, cy, cz, hole);
    }
  }
}

static void add_colors(vx_octree *t, int hole) {
  vx_free(t->node_color);
  vx_free(t->voxel_color);
  t->node_color = (uint32_t *)vx_malloc(t->node_count * sizeof(uint32_t));
  t->voxel_color = (uint32_t *)vx_malloc((t->voxel_count ? t->voxel_count : 1) * sizeof(uint32_t));
  CHECK(t->node_color && t->voxel_color);
  memset(t->voxel_color, 0xee, (t->voxel_count ? t->voxel_count : 1) * sizeof(uint32_t));
  color_cells(t, 0, 0, 0, 0, 0, hole);
}

static void drop_colors(vx_octree *t) {
  vx_free(t->node_color);
  vx_free(t->voxel_color);
  t->node_color = t->voxel_color = NULL;
}

static void sphere_tree(vx_octree *t) {
  CHECK(ref_sdf_tree(D, 2.0f, ref_sphere_sdf, sph, t) == VX_OK);
  vx_error e;
  CHECK_MSG(vx_octree_fit_planes(t, NULL, NULL, &e) == VX_OK, "%s", e.msg);
  CHECK_MSG(vx_octree_validate(t, &e) == VX_OK, "%s", e.msg);
}

static void render(const vx_octree *t, int lod, vx_shade shade, const vx_camera *cam, uint32_t W,
                   uint32_t H, vx_march_opts *o, vx_march_image *img) {
  memset(o, 0, sizeof *o);
  o->width = W;
  o->height = H;
  o->lod = lod;
  o->shade = shade;
  o->cam = *cam;
  CHECK(vx_march_image_alloc(img, W, H, 0, NULL) == VX_OK);
  vx_error e;
  CHECK_MSG(vx_render_cpu(t, o, img, 2, &e) == VX_OK, "%s", e.msg);
}

/* The hit point of pixel (x, y) from the depth buffer, in grid units (identity transform). */
static void hit_point(const vx_march_opts *o, const vx_march_image *img, uint32_t x, uint32_t y,
                      double p[3]) {
  double ro[3], rd[3];
  ref_camera_ray(&o->cam, o->width, o->height, x, y, ro, rd);
  double t = img->depth[(size_t)y * o->width + x];
  for (int i = 0; i < 3; i++) p[i] = ro[i] + t * rd[i];
}

/* sRGB -> linear, IEC 61966-2-1, in double. */
static double srgb_to_linear(double c) {
  return c <= 0.04045 ? c / 12.92 : pow((c + 0.055) / 1.055, 2.4);
}

/* Checks an albedo image: every hit pixel away from the octant planes carries the colour of
 * its hit point's octant from `table` (0: voxels, 1: nodes), exactly. Returns the pixels
 * checked; *octants gets a bit per octant seen. */
static uint64_t check_albedo(const vx_march_opts *o, const vx_march_image *img, int table,
                             const char *what, unsigned *octants) {
  uint64_t checked = 0, bad = 0;
  for (uint32_t y = 0; y < o->height; y++)
    for (uint32_t x = 0; x < o->width; x++) {
      size_t i = (size_t)y * o->width + x;
      const uint8_t *px = img->rgb + 3 * i;
      if (!isfinite(img->depth[i])) {
        if (px[0] != 34 || px[1] != 38 || px[2] != 46) bad++;
        continue;
      }
      double p[3];
      hit_point(o, img, x, y, p);
      if (border_dist(p) < 0.02) continue;
      int oct = octant_of(p);
      const uint8_t *want = table ? node_rgb(oct) : voxel_rgb[oct];
      checked++;
      *octants |= 1u << oct;
      if (px[0] != want[0] || px[1] != want[1] || px[2] != want[2]) {
        if (bad < 5)
          fprintf(stderr, "%s: pixel %u,%u at %.3f,%.3f,%.3f (octant %d): %d,%d,%d, want %d,%d,%d\n",
                  what, x, y, p[0], p[1], p[2], oct, px[0], px[1], px[2], want[0], want[1],
                  want[2]);
        bad++;
      }
    }
  CHECK_MSG(bad == 0, "%s: %llu of %llu pixels have another colour", what,
            (unsigned long long)bad, (unsigned long long)checked);
  return checked;
}

static void color_albedo_is_the_hit_cells_colour(void) {
  vx_octree t;
  sphere_tree(&t);
  add_colors(&t, -1);
  const double views[3][2] = {{30.0, 20.0}, {-130.0, -35.0}, {90.0, 0.0}};
  for (int v = 0; v < 3; v++) {
    vx_camera cam;
    vx_march_orbit(&t, views[v][0], views[v][1], 40.0, &cam);
    int lods[4] = {D, 4, 2, 1};
    for (int k = 0; k < 4; k++) {
      vx_march_opts o;
      vx_march_image img;
      render(&t, lods[k], VX_SHADE_ALBEDO, &cam, 96, 80, &o, &img);
      char what[64];
      snprintf(what, sizeof what, "view %d lod %d", v, lods[k]);
      unsigned seen = 0;
      uint64_t n = check_albedo(&o, &img, lods[k] < D, what, &seen);
      CHECK_MSG(n > 96 * 80 / 10, "%s: only %llu pixels checked", what, (unsigned long long)n);
      CHECK_MSG(__builtin_popcount(seen) >= 3, "%s: octants seen %#x", what, seen);
      vx_march_image_free(&img);
    }
  }
  /* auto LOD from far enough that a pixel spans more than 2 voxels: node colours only */
  {
    vx_camera cam;
    vx_march_orbit(&t, 20.0, 10.0, 40.0, &cam);
    for (int i = 0; i < 3; i++) cam.eye[i] = cam.target[i] + 6.0 * (cam.eye[i] - cam.target[i]);
    vx_march_opts o;
    vx_march_image img;
    render(&t, VX_LOD_AUTO, VX_SHADE_ALBEDO, &cam, 128, 128, &o, &img);
    unsigned seen = 0;
    uint64_t n = check_albedo(&o, &img, 1, "auto far", &seen);
    CHECK_MSG(n > 60, "auto far: %llu pixels", (unsigned long long)n);
    vx_march_image_free(&img);
  }
  /* a pruned tree: its leaves are drawn at any cut with their own (node) colour */
  {
    drop_colors(&t);
    vx_error e;
    CHECK_MSG(vx_octree_prune(&t, 0.6f, &e) == VX_OK, "%s", e.msg);
    CHECK(t.prune_error > 0.0f);
    add_colors(&t, -1);
    uint64_t leaves = 0;
    for (uint64_t i = 0; i < t.node_count; i++) leaves += vx_node_mask(t.nodes[i].info) == 0;
    CHECK_MSG(leaves > 0, "pruning left no leaf: the test needs some");
    vx_camera cam;
    vx_march_orbit(&t, 30.0, 20.0, 40.0, &cam);
    vx_march_opts o;
    vx_march_image img;
    render(&t, D, VX_SHADE_ALBEDO, &cam, 96, 96, &o, &img);
    /* a pixel is a voxel's or a leaf's colour: the octant's entry in one of the two tables */
    uint64_t voxel_px = 0, node_px = 0, bad = 0;
    for (uint32_t y = 0; y < 96; y++)
      for (uint32_t x = 0; x < 96; x++) {
        size_t i = (size_t)y * 96 + x;
        if (!isfinite(img.depth[i])) continue;
        double p[3];
        hit_point(&o, &img, x, y, p);
        if (border_dist(p) < 0.02) continue;
        int oct = octant_of(p);
        const uint8_t *px = img.rgb + 3 * i;
        if (!memcmp(px, voxel_rgb[oct], 3)) voxel_px++;
        else if (!memcmp(px, node_rgb(oct), 3)) node_px++;
        else bad++;
      }
    CHECK_MSG(bad == 0 && node_px > 0, "pruned: %llu voxel, %llu leaf, %llu wrong pixels",
              (unsigned long long)voxel_px, (unsigned long long)node_px, (unsigned long long)bad);
    vx_march_image_free(&img);
  }
  vx_octree_free(&t);
}

/* Each hit pixel (away from octant planes) is albedo * lum, gamma 2, for one lum in
 * [ambient, 1]: the intervals of lum that each channel's byte allows intersect. */
static void check_lit(const vx_march_opts *o, const vx_march_image *img, int table,
                      const char *what) {
  uint64_t checked = 0, bad = 0;
  double lum_min = INFINITY, lum_max = 0.0;
  for (uint32_t y = 0; y < o->height; y++)
    for (uint32_t x = 0; x < o->width; x++) {
      size_t i = (size_t)y * o->width + x;
      if (!isfinite(img->depth[i])) continue;
      double p[3];
      hit_point(o, img, x, y, p);
      if (border_dist(p) < 0.02) continue;
      int oct = octant_of(p);
      const uint8_t *want = table ? node_rgb(oct) : voxel_rgb[oct];
      double lo = 0.18 - 1e-4, hi = 1.0 + 1e-4;
      for (int c = 0; c < 3; c++) {
        double alb = srgb_to_linear(want[c] / 255.0), v = img->rgb[3 * i + c];
        double a = (v - 0.501) / 255.0, b = (v + 0.501) / 255.0;
        lo = fmax(lo, (a > 0 ? a * a : 0.0) / alb);
        hi = fmin(hi, b * b / alb);
      }
      checked++;
      if (lo > hi) {
        if (bad < 5)
          fprintf(stderr, "%s: pixel %u,%u (octant %d) %d,%d,%d is not %d,%d,%d lit\n", what, x,
                  y, oct, img->rgb[3 * i], img->rgb[3 * i + 1], img->rgb[3 * i + 2], want[0],
                  want[1], want[2]);
        bad++;
      } else {
        lum_min = fmin(lum_min, 0.5 * (lo + hi));
        lum_max = fmax(lum_max, 0.5 * (lo + hi));
      }
    }
  CHECK_MSG(checked > 500, "%s: %llu pixels", what, (unsigned long long)checked);
  CHECK_MSG(bad == 0, "%s: %llu of %llu pixels are not the albedo times one light factor", what,
            (unsigned long long)bad, (unsigned long long)checked);
  /* the lighting varies over a sphere: from near ambient to near full */
  CHECK_MSG(lum_max - lum_min > 0.4, "%s: light factor only from %.3f to %.3f", what, lum_min,
            lum_max);
}

static void color_lit_is_albedo_times_light(void) {
  vx_octree t;
  sphere_tree(&t);
  add_colors(&t, -1);
  vx_camera cam;
  vx_march_orbit(&t, 30.0, 20.0, 40.0, &cam);
  vx_march_opts o;
  vx_march_image img;
  render(&t, D, VX_SHADE_SMOOTH, &cam, 96, 96, &o, &img);
  check_lit(&o, &img, 0, "smooth finest");
  vx_march_image_free(&img);
  render(&t, 3, VX_SHADE_SMOOTH, &cam, 96, 96, &o, &img);
  check_lit(&o, &img, 1, "smooth lod 3");
  vx_march_image_free(&img);
  render(&t, 3, VX_SHADE_BLOCKS, &cam, 96, 96, &o, &img);
  check_lit(&o, &img, 1, "blocks lod 3");
  vx_march_image_free(&img);
  render(&t, D, VX_SHADE_BLOCKS, &cam, 96, 96, &o, &img);
  check_lit(&o, &img, 0, "blocks finest");
  vx_march_image_free(&img);
  vx_octree_free(&t);
}

static uint64_t fnv1a(uint64_t h, const void *p, size_t n) {
  const uint8_t *b = (const uint8_t *)p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

/* Colour changes neither depth nor normals; a grey tree's albedo is grey 0.8; a grey tree's
 * images are those of the renderer before colour. */
static void color_leaves_geometry_and_grey_trees_alone(void) {
  vx_octree t;
  sphere_tree(&t);
  /* explicit cameras (no orbit framing): the hash below depends on nothing but trace.h */
  vx_camera cams[2];
  memset(cams, 0, sizeof cams);
  const double eyes[2][3] = {{70.0, 58.0, 95.0}, {-20.0, 10.0, 5.0}};
  for (int v = 0; v < 2; v++) {
    for (int i = 0; i < 3; i++) {
      cams[v].eye[i] = eyes[v][i];
      cams[v].target[i] = 32.0;
    }
    cams[v].up[1] = 1.0;
    cams[v].fov_y_deg = 45.0;
  }
  const vx_shade shades[3] = {VX_SHADE_SMOOTH, VX_SHADE_BLOCKS, VX_SHADE_NORMALS};
  const int lods[3] = {D, 3, VX_LOD_AUTO};
  uint64_t h = 1469598103934665603ull;
  for (int v = 0; v < 2; v++)
    for (int s = 0; s < 3; s++)
      for (int l = 0; l < 3; l++) {
        vx_march_opts o;
        vx_march_image grey, col;
        drop_colors(&t);
        render(&t, lods[l], shades[s], &cams[v], 80, 64, &o, &grey);
        h = fnv1a(h, grey.rgb, (size_t)80 * 64 * 3);
        h = fnv1a(h, grey.depth, (size_t)80 * 64 * sizeof(float));
        add_colors(&t, -1);
        render(&t, lods[l], shades[s], &cams[v], 80, 64, &o, &col);
        CHECK_MSG(!memcmp(grey.depth, col.depth, (size_t)80 * 64 * sizeof(float)),
                  "view %d shade %d lod %d: colour moved the surface", v, (int)shades[s], lods[l]);
        if (shades[s] == VX_SHADE_NORMALS)
          CHECK_MSG(!memcmp(grey.rgb, col.rgb, (size_t)80 * 64 * 3),
                    "view %d lod %d: colour changed the normals image", v, lods[l]);
        else
          CHECK_MSG(memcmp(grey.rgb, col.rgb, (size_t)80 * 64 * 3) != 0,
                    "view %d shade %d lod %d: the coloured tree rendered grey", v,
                    (int)shades[s], lods[l]);
        vx_march_image_free(&grey);
        vx_march_image_free(&col);
      }
  /* The renderer's grey images before colour existed (x86-64 without FMA contraction, where C
   * float arithmetic is IEEE single precision operation by operation). Change the value only
   * when the grey images are meant to change. */
#if defined(__x86_64__) && !defined(__FMA__)
  CHECK_MSG(h == 0x4963d110a2916357ull, "grey images changed: hash %#llx", (unsigned long long)h);
#else
  (void)h;
#endif
  /* albedo of a grey tree: linear 0.8, sRGB-encoded */
  drop_colors(&t);
  double g = 0.8 <= 0.0031308 ? 0.8 * 12.92 : 1.055 * pow(0.8, 1.0 / 2.4) - 0.055;
  int grey8 = (int)floor(g * 255.0 + 0.5);
  vx_march_opts o;
  vx_march_image img;
  render(&t, D, VX_SHADE_ALBEDO, &cams[0], 80, 64, &o, &img);
  uint64_t hits = 0, bad = 0;
  for (size_t i = 0; i < (size_t)80 * 64; i++) {
    if (!isfinite(img.depth[i])) continue;
    hits++;
    for (int c = 0; c < 3; c++) bad += img.rgb[3 * i + c] != grey8;
  }
  CHECK(hits > 500);
  CHECK_MSG(bad == 0, "grey albedo: %llu channels differ from %d", (unsigned long long)bad, grey8);
  vx_march_image_free(&img);
  vx_octree_free(&t);
}

/* One octant's cells are holes (alpha 0): rays whose front hit lies there go on to the back
 * face (seen from inside) or miss. Finest level against the analytic sphere; cuts and blocks:
 * behind the front surface. */
static void color_holes_are_not_drawn(void) {
  vx_octree t;
  sphere_tree(&t);
  vx_camera cam;
  vx_march_orbit(&t, 30.0, 20.0, 40.0, &cam); /* looks at octant 7 (+x +y +z) */
  const int hole = 7;
  add_colors(&t, hole);
  const uint32_t W = 128, H = 128;
  vx_march_opts o;
  vx_march_image img;
  render(&t, D, VX_SHADE_ALBEDO, &cam, W, H, &o, &img);
  uint64_t front = 0, back = 0, through = 0, bad = 0;
  for (uint32_t y = 0; y < H; y++)
    for (uint32_t x = 0; x < W; x++) {
      size_t i = (size_t)y * W + x;
      double ro[3], rd[3];
      ref_camera_ray(&o.cam, W, H, x, y, ro, rd);
      double oc[3] = {ro[0] - sph[0], ro[1] - sph[1], ro[2] - sph[2]};
      double b = oc[0] * rd[0] + oc[1] * rd[1] + oc[2] * rd[2];
      double disc = b * b - (oc[0] * oc[0] + oc[1] * oc[1] + oc[2] * oc[2] - sph[3] * sph[3]);
      if (disc < 4.0 * sph[3]) continue; /* misses, and grazing rays near the silhouette */
      double tf = -b - sqrt(disc), tb = -b + sqrt(disc), pf[3], pb[3];
      for (int k = 0; k < 3; k++) {
        pf[k] = ro[k] + tf * rd[k];
        pb[k] = ro[k] + tb * rd[k];
      }
      if (border_dist(pf) < 1.5) continue; /* voxels across an octant plane */
      double want_t = tf;
      int want_oct = octant_of(pf);
      if (want_oct == hole) {
        if (border_dist(pb) < 1.5) continue;
        want_oct = octant_of(pb);
        want_t = want_oct == hole ? INFINITY : tb;
      }
      float tm = img.depth[i];
      const uint8_t *px = img.rgb + 3 * i;
      int ok;
      if (want_t == INFINITY) {
        through++;
        ok = !isfinite(tm) && px[0] == 34 && px[1] == 38 && px[2] == 46;
      } else {
        if (want_t == tf) front++;
        else back++;
        ok = isfinite(tm) && fabs(tm - want_t) <= 0.3 && !memcmp(px, voxel_rgb[want_oct], 3);
      }
      if (!ok) {
        if (bad < 5)
          fprintf(stderr, "hole: pixel %u,%u depth %g want %g (octant %d) colour %d,%d,%d\n", x,
                  y, (double)tm, want_t, want_oct, px[0], px[1], px[2]);
        bad++;
      }
    }
  CHECK_MSG(back > 300 && front > 300, "front %llu back %llu through %llu",
            (unsigned long long)front, (unsigned long long)back, (unsigned long long)through);
  CHECK_MSG(bad <= (front + back + through) / 200, "%llu of %llu pixels wrong",
            (unsigned long long)bad, (unsigned long long)(front + back + through));
  vx_march_image_free(&img);

  /* cuts (planes), auto LOD and blocks, against the same tree without holes: a pixel whose
   * hit lies outside the hole's octant is the same, bit for bit (the walk differs only after a
   * hit in a hole); one whose hit lies in it goes on, to a later hit outside it or none */
  const int lods[3] = {3, 2, VX_LOD_AUTO};
  for (int k = 0; k < 5; k++) {
    vx_shade sh = k >= 3 ? VX_SHADE_BLOCKS : VX_SHADE_SMOOTH;
    int lod = k == 3 ? 3 : k == 4 ? D : lods[k];
    vx_march_opts of;
    vx_march_image full;
    add_colors(&t, -1);
    render(&t, lod, sh, &cam, W, H, &of, &full);
    add_colors(&t, hole);
    render(&t, lod, sh, &cam, W, H, &o, &img);
    uint64_t passed = 0, kept = 0, wrong = 0;
    for (uint32_t y = 0; y < H; y++)
      for (uint32_t x = 0; x < W; x++) {
        size_t i = (size_t)y * W + x;
        if (!isfinite(full.depth[i])) {
          wrong += isfinite(img.depth[i]);
          continue;
        }
        double pf[3];
        hit_point(&of, &full, x, y, pf);
        if (border_dist(pf) < 0.02) continue;
        if (octant_of(pf) != hole) {
          kept++;
          wrong += img.depth[i] != full.depth[i] || memcmp(img.rgb + 3 * i, full.rgb + 3 * i, 3);
          continue;
        }
        passed++;
        if (!isfinite(img.depth[i])) continue;
        double p[3];
        hit_point(&o, &img, x, y, p);
        wrong += !(img.depth[i] > full.depth[i]) || (octant_of(p) == hole && border_dist(p) > 0.02);
      }
    CHECK_MSG(passed > 100 && kept > 100 && wrong == 0,
              "holes at lod %d shade %d: %llu passed, %llu kept, %llu wrong", lod, (int)sh,
              (unsigned long long)passed, (unsigned long long)kept, (unsigned long long)wrong);
    vx_march_image_free(&img);
    vx_march_image_free(&full);
  }
  vx_octree_free(&t);
}

static void color_shade_modes_checked(void) {
  vx_octree t;
  sphere_tree(&t);
  vx_march_opts o;
  memset(&o, 0, sizeof o);
  o.width = o.height = 8;
  o.lod = D;
  vx_march_orbit(&t, 0.0, 0.0, 40.0, &o.cam);
  o.shade = VX_SHADE_ALBEDO;
  CHECK(vx_render_check(&t, &o, NULL) == VX_OK);
  o.shade = (vx_shade)4;
  vx_error e;
  CHECK(vx_render_check(&t, &o, &e) == VX_ERR_INVALID_ARG);
  CHECK(strstr(e.msg, "shading") != NULL);
  vx_octree_free(&t);
}

int main(void) {
  RUN(color_albedo_is_the_hit_cells_colour);
  RUN(color_lit_is_albedo_times_light);
  RUN(color_leaves_geometry_and_grey_trees_alone);
  RUN(color_holes_are_not_drawn);
  RUN(color_shade_modes_checked);
  return check_summary();
}
