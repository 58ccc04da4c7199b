/* SPDX-License-Identifier: Apache-2.0 */
/* test_gpu_render_tiled.c - tiled trees drawn on the GPU (vx_renderer_create_tiled): the CPU
 * renderer's images (the same per-ray code, up to float contraction) at every kind of cut, the
 * joined tree's GPU images at 1024^3 in tiles of 128^3, and within a budget that forces
 * eviction: what is resident on the device stays within it, the same tiles are detailed as on
 * the CPU, streaming ends in the waiting frame's image. Exits 77 (skipped) where no CUDA device
 * is usable. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <time.h>
#include <unistd.h>

#include "lib/internal.h"
#include "lib/tiled_render.h"
#define W 320 /* the images (tiled_view.h) */
#define H 240
#include "tiled_view.h"
#include "voxlod/render.h"


static char dir[64];


/* Pixels differing by more than 2/255, hit/miss mismatches; both at most 1 in 1000. */
static void agree(const image *a, const image *b, const char *what, int level) {
  size_t d = 0, h = 0, hits = 0;
  for (int i = 0; i < W * H; i++) {
    int m = 0;
    for (int k = 0; k < 3; k++) m |= abs((int)a->rgb[3 * i + k] - (int)b->rgb[3 * i + k]) > 2;
    d += m;
    h += (a->depth[i] < INFINITY) != (b->depth[i] < INFINITY);
    hits += a->depth[i] < INFINITY;
  }
  CHECK_MSG(d * 1000 <= (size_t)W * H && h * 1000 <= (size_t)W * H,
            "%s level %d: %zu pixels differ, %zu hit/miss", what, level, d, h);
  CHECK_MSG(hits > (size_t)W * H / 20, "%s level %d: %zu hits", what, level, hits);
}


static void gpu_draws_tiles(void) {
  char tp[128], up[128];
  vx_tiled_file *f;
  vx_tree *u;
  tv_files(dir, 1024, 7, tp, up, &f, &u);
  vx_error e;
  if (!tv_gpu_usable(f, &e)) {
    tv_done(NULL, NULL, f, u, tp, up);
    CHECK_SKIP("%s", e.msg);
  }
  vx_renderer *g = tv_renderer(f, NULL, VX_DEVICE_GPU, 0, 0);
  vx_renderer *c = tv_renderer(f, NULL, VX_DEVICE_CPU, 0, 0);
  vx_renderer *gu = tv_renderer(NULL, u, VX_DEVICE_GPU, 0, 0);
  vx_camera cams[3];
  tv_camera(&cams[0], 2.6, 1.5, 2.2, 0.0, 0.0, 0.1);
  tv_camera(&cams[1], 0.55, 0.3, 0.5, -0.5, -0.2, 0.0);
  tv_camera(&cams[2], 0.9, 0.5, 0.9, 0.5, 0.1, 0.2);
  static image a, b, j;
  const int levels[] = {2, 3, 5, 8, 10};
  for (int v = 0; v < 3; v++) {
    render(g, &cams[v], VX_LOD_FINEST, 0, &a, NULL);
    render(c, &cams[v], VX_LOD_FINEST, 0, &b, NULL);
    render(gu, &cams[v], VX_LOD_FINEST, 0, &j, NULL);
    agree(&a, &b, "GPU vs CPU tiles", 10);
    agree(&a, &j, "GPU tiles vs GPU joined", 10);
    for (int k = 0; k < 5; k++) {
      render(g, &cams[v], VX_LOD_LEVEL, levels[k], &a, NULL);
      render(c, &cams[v], VX_LOD_LEVEL, levels[k], &b, NULL);
      render(gu, &cams[v], VX_LOD_LEVEL, levels[k], &j, NULL);
      agree(&a, &b, "GPU vs CPU tiles", levels[k]);
      agree(&a, &j, "GPU tiles vs GPU joined", levels[k]);
    }
    render(g, &cams[v], VX_LOD_PIXEL, 0, &a, NULL);
    render(c, &cams[v], VX_LOD_PIXEL, 0, &b, NULL);
    agree(&a, &b, "GPU vs CPU tiles, auto", -1);
  }
  vx_renderer_free(g);
  vx_renderer_free(c);
  vx_renderer_free(gu);

  /* a budget that forces eviction, the same on both: the same tiles detailed, the same image */
  vx_tree_info ti;
  memset(&ti, 0, sizeof ti);
  ti.struct_size = sizeof ti;
  vx_tiled_file_get_info(f, &ti);
  const uint32_t mib = (uint32_t)(ti.memory_bytes / 5 >> 20) + 1;
  g = tv_renderer(f, NULL, VX_DEVICE_GPU, mib, 0);
  c = tv_renderer(f, NULL, VX_DEVICE_CPU, mib, 0);
  vx_frame_stats fg, fc;
  render(g, &cams[2], VX_LOD_FINEST, 0, &a, &fg);
  render(c, &cams[2], VX_LOD_FINEST, 0, &b, &fc);
  agree(&a, &b, "GPU vs CPU within a budget", 10);
  vx_renderer_info ig, ic;
  memset(&ig, 0, sizeof ig);
  ig.struct_size = sizeof ig;
  ic = ig;
  vx_renderer_get_info(g, &ig);
  vx_renderer_get_info(c, &ic);
  fprintf(stderr, "  budget %u MiB of %.1f MiB: coarse level %u, %llu of %llu tiles detailed, "
          "%llu bytes resident on %s\n", mib, ti.memory_bytes / 1048576.0, ig.coarse_level,
          (unsigned long long)ig.tiles_detailed, (unsigned long long)ig.tiles,
          (unsigned long long)ig.resident_bytes, ig.device);
  CHECK(ig.used_gpu && ig.resident_bytes <= ig.budget_bytes && ig.budget_bytes == (uint64_t)mib << 20);
  CHECK(ig.tiles_detailed > 0 && ig.tiles_detailed < ig.tiles && ig.coarse_level < 10);
  CHECK(ig.tiles_detailed == ic.tiles_detailed && ig.resident_bytes == ic.resident_bytes);
  vx_renderer_free(c);

  /* streaming on the GPU ends in the waiting frame's image */
  vx_renderer *gs = tv_renderer(f, NULL, VX_DEVICE_GPU, mib, 1);
  static image st;
  vx_frame_stats fs;
  int frames = 0;
  for (;; frames++) {
    render(gs, &cams[2], VX_LOD_FINEST, 0, &st, &fs);
    if (fs.tiles_pending == 0 || frames > 5000) break;
    struct timespec ts = {0, 1000000L};
    nanosleep(&ts, NULL);
  }
  fprintf(stderr, "  streaming: %d frames until the view's tiles were resident\n", frames + 1);
  CHECK(fs.tiles_pending == 0 && memcmp(st.rgb, a.rgb, sizeof st.rgb) == 0);
  vx_renderer_free(gs);
  vx_renderer_free(g);
  vx_tiled_file_close(f);
  vx_tree_free(u);
  unlink(tp);
  unlink(up);
}

/* A coloured tiled tree on the GPU, lit and unlit: the CPU's tiled images and the GPU joined
 * tree's, also within a budget that forces eviction (the colours count in it). */
static void gpu_draws_colored_tiles(void) {
  char tp[128], up[128];
  vx_tiled_file *f;
  vx_tree *u;
  tv_files_ex(dir, 512, 6, 1, tp, up, &f, &u);
  vx_error e;
  if (!tv_gpu_usable(f, &e)) {
    tv_done(NULL, NULL, f, u, tp, up);
    CHECK_SKIP("%s", e.msg);
  }
  vx_tree_info ti;
  memset(&ti, 0, sizeof ti);
  ti.struct_size = sizeof ti;
  vx_tiled_file_get_info(f, &ti);
  CHECK(ti.has_color == 1);
  const uint32_t mib = (uint32_t)(ti.memory_bytes / 4 >> 20) + 1;
  vx_renderer *g = tv_renderer(f, NULL, VX_DEVICE_GPU, 0, 0);
  vx_renderer *c = tv_renderer(f, NULL, VX_DEVICE_CPU, 0, 0);
  vx_renderer *gu = tv_renderer(NULL, u, VX_DEVICE_GPU, 0, 0);
  vx_renderer *gb = tv_renderer(f, NULL, VX_DEVICE_GPU, mib, 0);
  vx_renderer *cb = tv_renderer(f, NULL, VX_DEVICE_CPU, mib, 0);
  vx_camera cams[2];
  tv_camera(&cams[0], 2.6, 1.5, 2.2, 0.0, 0.0, 0.1);
  tv_camera(&cams[1], 0.9, 0.5, 0.9, 0.5, 0.1, 0.2);
  static image a, b, j;
  const vx_shade shades[2] = {VX_SHADE_SMOOTH, VX_SHADE_ALBEDO};
  for (int sh = 0; sh < 2; sh++) {
    tv_shade = shades[sh];
    for (int v = 0; v < 2; v++) {
      render(g, &cams[v], VX_LOD_FINEST, 0, &a, NULL);
      render(c, &cams[v], VX_LOD_FINEST, 0, &b, NULL);
      render(gu, &cams[v], VX_LOD_FINEST, 0, &j, NULL);
      agree(&a, &b, "coloured: GPU vs CPU tiles", 9);
      agree(&a, &j, "coloured: GPU tiles vs GPU joined", 9);
      if (shades[sh] == VX_SHADE_ALBEDO)
        CHECK(tv_colored_share(a.rgb, a.depth, W * H) > 0.5);
      render(g, &cams[v], VX_LOD_LEVEL, 2, &a, NULL);
      render(gu, &cams[v], VX_LOD_LEVEL, 2, &j, NULL);
      agree(&a, &j, "coloured: GPU top tree vs GPU joined", 2);
      render(gb, &cams[v], VX_LOD_FINEST, 0, &a, NULL);
      render(cb, &cams[v], VX_LOD_FINEST, 0, &b, NULL);
      agree(&a, &b, "coloured: GPU vs CPU within a budget", 9);
    }
  }
  tv_shade = VX_SHADE_SMOOTH;
  vx_renderer_info ig;
  memset(&ig, 0, sizeof ig);
  ig.struct_size = sizeof ig;
  vx_renderer_get_info(gb, &ig);
  CHECK(ig.resident_bytes <= ig.budget_bytes && ig.tiles_detailed < ig.tiles);
  fprintf(stderr, "  coloured 512^3 in tiles of 64^3: GPU = CPU = joined, lit and unlit; budget "
          "%u MiB: %llu of %llu tiles detailed\n", mib, (unsigned long long)ig.tiles_detailed,
          (unsigned long long)ig.tiles);
  vx_renderer_free(g);
  vx_renderer_free(c);
  vx_renderer_free(gu);
  tv_done(gb, cb, f, u, tp, up);
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/vx_gpu_rtiled_XXXXXX");
  CHECK(mkdtemp(dir) != NULL);
  (void)tiled_slurp;
  RUN(gpu_draws_tiles);
  RUN(gpu_draws_colored_tiles);
  rmdir(dir);
  return check_summary();
}
