/* SPDX-License-Identifier: Apache-2.0 */
/* test_gpu_render.c - the CUDA renderer against the CPU renderer, and kernel variants against
 * each other (ctest label gpu; exits 77 where no GPU is usable).
 *
 * Both renderers run vx_render_pixel() (trace.h), so the images must agree; they are not
 * bit-identical because nvcc contracts a*b+c into FMAs (one rounding) where the host C code does
 * not (two roundings). That moves a hit by ~1e-7 relative, which flips a pixel's colour by more
 * than 2/255 only on grazing rays at silhouettes: the bound, <= 0.1% of pixels, is checked.
 * Kernel variants (schedules, block shapes, register caps) run the same device code and must give
 * the same bytes. Coloured trees (per-cell colours, with and without holes) are held to the same
 * bound, lit, unlit and as blocks.
 */
#include "marcher/marcher.h"
#include "marcher/gpu_render.h"
#include "check.h"
#include "test_gpu_sdf.h"

#define W 256
#define H 192

static vx_octree tree;
static int have_tree = 0;

static void poison(vx_march_image *img) {
  memset(img->rgb, 0xab, (size_t)img->width * img->height * 3);
  for (size_t i = 0; i < (size_t)img->width * img->height; i++) img->depth[i] = NAN;
}

static vx_status gpu_render(const vx_march_opts *o, const vx_gpu_config *cfg, vx_march_image *img) {
  vx_error e;
  poison(img);
  vx_status s = vx_render_gpu_config(&tree, o, cfg, img, &e);
  if (s == VX_ERR_NO_GPU) CHECK_SKIP("%s", e.msg);
  CHECK_MSG(s == VX_OK, "%s", e.msg);
  return s;
}

static void opts_for(vx_march_opts *o, uint32_t w, uint32_t h, int lod, double az, double el) {
  memset(o, 0, sizeof *o);
  o->width = w;
  o->height = h;
  o->lod = lod;
  o->shade = VX_SHADE_SMOOTH;
  vx_march_orbit(&tree, az, el, 40.0, &o->cam);
}

/* Pixels whose colour differs by more than 2/255 in some channel. */
static size_t count_diff(const vx_march_image *a, const vx_march_image *b) {
  size_t d = 0, n = (size_t)a->width * a->height;
  for (size_t i = 0; i < n; i++)
    for (int c = 0; c < 3; c++)
      if (abs((int)a->rgb[3 * i + c] - (int)b->rgb[3 * i + c]) > 2) {
        d++;
        break;
      }
  return d;
}

static void gpu_render_writes_every_pixel(void) {
  vx_march_opts o;
  vx_march_image img;
  opts_for(&o, 203, 97, (int)tree.depth, 30.0, 20.0); /* sizes that no block shape divides */
  CHECK(vx_march_image_alloc(&img, o.width, o.height, 1, NULL) == VX_OK);
  vx_gpu_config cfg[4]; /* the default, persistent 64, tiled 16x8, tiled 32x4 */
  memset(cfg, 0, sizeof cfg);
  cfg[1].schedule = VX_GPU_PERSISTENT;
  cfg[1].block_w = 64;
  cfg[1].block_h = 1;
  cfg[2].schedule = VX_GPU_TILED;
  cfg[3].schedule = VX_GPU_TILED;
  cfg[3].block_w = 32;
  cfg[3].block_h = 4;
  for (int k = 0; k < 4; k++) {
    if (gpu_render(&o, &cfg[k], &img) != VX_OK) continue;
    size_t unwritten = 0, hits = 0;
    for (size_t i = 0; i < (size_t)o.width * o.height; i++) {
      if (isnan(img.depth[i])) unwritten++;
      if (isfinite(img.depth[i])) hits++;
    }
    CHECK_MSG(unwritten == 0, "variant %d left %zu pixels unwritten", k, unwritten);
    CHECK_MSG(hits > (size_t)o.width * o.height / 40, "variant %d: only %zu hits", k, hits);
  }
  vx_march_image_free(&img);
}

static void gpu_matches_cpu_at_every_lod(void) {
  vx_march_image gi, ci;
  CHECK(vx_march_image_alloc(&gi, W, H, 1, NULL) == VX_OK);
  CHECK(vx_march_image_alloc(&ci, W, H, 1, NULL) == VX_OK);
  const double views[3][2] = {{30.0, 20.0}, {150.0, -10.0}, {270.0, 60.0}};
  int lods[5] = {VX_LOD_AUTO, (int)tree.depth, (int)tree.depth - 1, 4, 1};
  for (int v = 0; v < 3; v++)
    for (int k = 0; k < 5; k++) {
      vx_march_opts o;
      vx_error e;
      opts_for(&o, W, H, lods[k], views[v][0], views[v][1]);
      if (gpu_render(&o, NULL, &gi) != VX_OK) continue;
      vx_status s = vx_render_cpu(&tree, &o, &ci, 2, &e);
      CHECK_MSG(s == VX_OK, "%s", e.msg);
      size_t diff = count_diff(&gi, &ci), hit_mismatch = 0, hits = 0, far = 0;
      for (size_t i = 0; i < (size_t)W * H; i++) {
        int gh = isfinite(gi.depth[i]), ch = isfinite(ci.depth[i]);
        hits += ch;
        if (gh != ch) hit_mismatch++;
        else if (gh && fabs(gi.depth[i] - ci.depth[i]) > 1e-3 * ci.depth[i]) far++;
      }
      CHECK_MSG(diff * 1000 <= (size_t)W * H, "view %d lod %d: %zu pixels differ by > 2/255", v,
                lods[k], diff);
      CHECK_MSG(hit_mismatch * 1000 <= (size_t)W * H, "view %d lod %d: %zu hit/miss mismatches",
                v, lods[k], hit_mismatch);
      CHECK_MSG(far * 1000 <= (size_t)W * H, "view %d lod %d: %zu depths differ", v, lods[k], far);
      CHECK_MSG(hits > (size_t)W * H / 20, "view %d lod %d: the object is missing (%zu hits)", v,
                lods[k], hits);
      fprintf(stderr, "  view %d lod %2d: %6zu hits, %4zu colour diffs, %3zu hit mismatches\n", v,
              lods[k], hits, diff, hit_mismatch);
    }
  vx_march_image_free(&gi);
  vx_march_image_free(&ci);
}

static void gpu_variants_give_identical_images(void) {
  vx_march_image ref, img;
  CHECK(vx_march_image_alloc(&ref, W, H, 1, NULL) == VX_OK);
  CHECK(vx_march_image_alloc(&img, W, H, 1, NULL) == VX_OK);
  vx_march_opts o;
  opts_for(&o, W, H, VX_LOD_AUTO, 60.0, 25.0);
  if (gpu_render(&o, NULL, &ref) == VX_OK) {
    const int sched[6] = {VX_GPU_TILED, VX_GPU_TILED, VX_GPU_TILED, VX_GPU_PERSISTENT,
                          VX_GPU_PERSISTENT, VX_GPU_TILED};
    const uint32_t bw[6] = {16, 32, 8, 128, 64, 8}, bh[6] = {8, 4, 4, 1, 1, 8};
    const int cap[6] = {0, 0, 0, 0, 64, 42};
    for (int k = 0; k < 6; k++) {
      vx_gpu_config cfg;
      memset(&cfg, 0, sizeof cfg);
      cfg.schedule = sched[k];
      cfg.block_w = bw[k];
      cfg.block_h = bh[k];
      cfg.reg_cap = cap[k];
      if (gpu_render(&o, &cfg, &img) != VX_OK) continue;
      CHECK_MSG(memcmp(ref.rgb, img.rgb, (size_t)W * H * 3) == 0, "variant %d: image differs", k);
      CHECK_MSG(memcmp(ref.visits, img.visits, (size_t)W * H * 4) == 0,
                "variant %d: visit counts differ", k);
    }
    /* the plain walk (no plane-bound culling): the same image, more node fetches */
    vx_march_opts op = o;
    op.no_cull = 1;
    if (gpu_render(&op, NULL, &img) == VX_OK) {
      CHECK_MSG(memcmp(ref.rgb, img.rgb, (size_t)W * H * 3) == 0, "no culling: image differs");
      CHECK_MSG(memcmp(ref.depth, img.depth, (size_t)W * H * 4) == 0, "no culling: depth differs");
      uint64_t vc = 0, vp = 0;
      for (size_t i = 0; i < (size_t)W * H; i++) {
        vc += ref.visits[i];
        vp += img.visits[i];
      }
      CHECK_MSG(vc <= vp, "culling fetched more nodes (%llu) than the plain walk (%llu)",
                (unsigned long long)vc, (unsigned long long)vp);
    }
  }
  vx_march_image_free(&ref);
  vx_march_image_free(&img);
}

static void gpu_bench_reports_sane_numbers(void) {
  vx_march_opts o;
  opts_for(&o, W, H, VX_LOD_AUTO, 0.0, 0.0);
  vx_camera views[4];
  for (int v = 0; v < 4; v++) vx_march_orbit(&tree, 90.0 * v, 15.0, 40.0, &views[v]);
  vx_gpu_bench_result r;
  vx_error e;
  vx_status s = vx_gpu_bench(&tree, &o, views, 4, 8, NULL, &r, &e);
  if (s == VX_ERR_NO_GPU) CHECK_SKIP("%s", e.msg);
  CHECK_MSG(s == VX_OK, "%s", e.msg);
  CHECK(r.ms_median > 0.0 && r.ms_min <= r.ms_median && r.ms_median <= r.ms_max);
  CHECK(r.mrays_per_s > 0.0);
  CHECK(r.visits_per_ray >= 1.0);
  CHECK(r.hit_fraction > 0.05 && r.hit_fraction < 1.0);
  CHECK(r.tree_bytes == tree.node_count * 16 + tree.voxel_count * 8);
  CHECK(r.device[0] != '\0');
  CHECK(r.local_bytes >= 0 && r.regs_per_thread > 0);
  fprintf(stderr, "  %s: %.3f ms/frame, %.0f Mrays/s, %.1f visits/ray, %d regs, %d B local\n",
          r.device, r.ms_median, r.mrays_per_s, r.visits_per_ray, r.regs_per_thread, r.local_bytes);
}

/* Colour per cell from its index (alpha 255), and holes (alpha 0) in about one cell of 12
 * when `holes`. */
static uint32_t cell_color(uint64_t i, uint32_t salt, int holes) {
  uint32_t h = (uint32_t)(i * 2654435761u) ^ salt;
  h ^= h >> 15;
  h *= 2246822519u;
  h ^= h >> 13;
  uint32_t a = holes && h % 12u == 5u ? 0u : 255u;
  return (h & 0xffffffu) | a << 24;
}

static void set_colors(int holes) {
  vx_free(tree.node_color);
  vx_free(tree.voxel_color);
  tree.node_color = (uint32_t *)vx_malloc(tree.node_count * sizeof(uint32_t));
  tree.voxel_color = (uint32_t *)vx_malloc(tree.voxel_count * sizeof(uint32_t));
  CHECK(tree.node_color && tree.voxel_color);
  for (uint64_t i = 0; i < tree.node_count; i++) tree.node_color[i] = cell_color(i, 0x51u, holes);
  for (uint64_t i = 0; i < tree.voxel_count; i++)
    tree.voxel_color[i] = cell_color(i, 0x9e3u, holes);
}

static void drop_colors(void) {
  vx_free(tree.node_color);
  vx_free(tree.voxel_color);
  tree.node_color = tree.voxel_color = NULL;
}

/* Coloured trees, with and without holes: the GPU's image is the CPU's (the same bound as the
 * grey tree's), lit, unlit (albedo) and blocks, at every cut; the colour arrays are uploaded. */
static void gpu_matches_cpu_in_colour(void) {
  vx_march_image gi, ci;
  CHECK(vx_march_image_alloc(&gi, W, H, 1, NULL) == VX_OK);
  CHECK(vx_march_image_alloc(&ci, W, H, 1, NULL) == VX_OK);
  const vx_shade shades[3] = {VX_SHADE_SMOOTH, VX_SHADE_ALBEDO, VX_SHADE_BLOCKS};
  int lods[4] = {VX_LOD_AUTO, (int)tree.depth, (int)tree.depth - 2, 3};
  for (int holes = 0; holes < 2; holes++) {
    set_colors(holes);
    vx_gpu_view *g;
    vx_error e;
    vx_status s = vx_gpu_view_create(&tree, &g, &e);
    if (s == VX_ERR_NO_GPU) CHECK_SKIP("%s", e.msg);
    CHECK_MSG(s == VX_OK, "%s", e.msg);
    if (s == VX_OK) {
      CHECK(vx_gpu_view_tree_bytes(g) == tree.node_count * 20 + tree.voxel_count * 12);
      vx_gpu_view_free(g);
    }
    for (int sh = 0; sh < 3; sh++)
      for (int k = 0; k < 4; k++) {
        vx_march_opts o;
        opts_for(&o, W, H, lods[k], 40.0 + 100.0 * k, 25.0 - 20.0 * sh);
        o.shade = shades[sh];
        if (gpu_render(&o, NULL, &gi) != VX_OK) continue;
        s = vx_render_cpu(&tree, &o, &ci, 2, &e);
        CHECK_MSG(s == VX_OK, "%s", e.msg);
        size_t diff = count_diff(&gi, &ci), hit_mismatch = 0, hits = 0, unwritten = 0;
        for (size_t i = 0; i < (size_t)W * H; i++) {
          unwritten += isnan(gi.depth[i]);
          hits += isfinite(ci.depth[i]);
          hit_mismatch += isfinite(gi.depth[i]) != isfinite(ci.depth[i]);
        }
        CHECK(unwritten == 0);
        CHECK_MSG(diff * 1000 <= (size_t)W * H && hit_mismatch * 1000 <= (size_t)W * H,
                  "holes %d shade %d lod %d: %zu colour diffs, %zu hit mismatches", holes,
                  (int)shades[sh], lods[k], diff, hit_mismatch);
        CHECK_MSG(hits > (size_t)W * H / 20, "holes %d shade %d lod %d: %zu hits", holes,
                  (int)shades[sh], lods[k], hits);
        fprintf(stderr, "  colour holes %d shade %d lod %2d: %6zu hits, %4zu colour diffs, %3zu "
                "hit mismatches\n", holes, (int)shades[sh], lods[k], hits, diff, hit_mismatch);
      }
  }
  drop_colors();
  vx_march_image_free(&gi);
  vx_march_image_free(&ci);
}

static void gpu_rejects_bad_config(void) {
  vx_march_opts o;
  vx_march_image img;
  opts_for(&o, 64, 48, VX_LOD_AUTO, 0.0, 0.0);
  CHECK(vx_march_image_alloc(&img, 64, 48, 0, NULL) == VX_OK);
  vx_gpu_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.block_w = 32;
  cfg.block_h = 16; /* 512 threads */
  CHECK(vx_render_gpu_config(&tree, &o, &cfg, &img, NULL) == VX_ERR_INVALID_ARG);
  vx_march_image_free(&img);
}

int main(void) {
  if (vx_cuda_device_name() == NULL) CHECK_SKIP("no usable CUDA device");
  CHECK(gpu_sdf_tree(7, &tree) == VX_OK);
  have_tree = vx_octree_validate(&tree, NULL) == VX_OK;
  CHECK(have_tree);
  if (!have_tree) return check_summary();
  fprintf(stderr, "device: %s\n", vx_cuda_device_name());
  RUN(gpu_render_writes_every_pixel);
  RUN(gpu_matches_cpu_at_every_lod);
  RUN(gpu_variants_give_identical_images);
  RUN(gpu_matches_cpu_in_colour);
  RUN(gpu_bench_reports_sane_numbers);
  RUN(gpu_rejects_bad_config);
  vx_octree_free(&tree);
  return check_summary();
}
