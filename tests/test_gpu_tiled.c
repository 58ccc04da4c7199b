/* SPDX-License-Identifier: Apache-2.0 */
/* test_gpu_tiled.c - tiles built on the GPU (the surface of each tile's cell on the device, its
 * octree on the CPU) give the bytes of the CPU's tiles, and the joined tree is the untiled one.
 * Exits 77 (skipped) where no CUDA device is usable. */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include "lib/internal.h"
#include "tiled_scene.h"
#include "formats/svo_tiled.h"
#include "svo/gpu_tree.h"
#include "lib/convert_tiled.h"
#include "color_soup.h"
#include "voxelizer/color_internal.h"

#include <unistd.h>

static char dir[256];
static int skipped;


static vx_status convert(const vx_mesh *m, uint32_t res, uint32_t T, vx_device dev,
                         const char *path, vx_error *err) {
  return tiled_convert(m, res, T, dev, 0, 0, path, err);
}


static void case_(uint32_t res, uint32_t T) {
  vx_mesh *m = tiled_scene();
  char c[300], g[300], u[300];
  snprintf(c, sizeof c, "%s/c.svo", dir);
  snprintf(g, sizeof g, "%s/g.svo", dir);
  snprintf(u, sizeof u, "%s/u.svo", dir);
  vx_error e;
  vx_status s = convert(m, res, T, VX_DEVICE_GPU, g, &e);
  if (s == VX_ERR_NO_GPU) {
    skipped = 1;
    vx_mesh_free(m);
    return;
  }
  CHECK_MSG(s == VX_OK, "%s", e.msg);
  CHECK(convert(m, res, T, VX_DEVICE_CPU, c, &e) == VX_OK);
  CHECK(convert(m, res, 0, VX_DEVICE_CPU, u, &e) == VX_OK);
  size_t cn = 0, gn = 0;
  uint8_t *cb = tiled_slurp(c, &cn), *gb = tiled_slurp(g, &gn);
  CHECK(cn == gn && cn > 0 && memcmp(cb, gb, cn) == 0);
  free(cb);
  free(gb);
  if (vx_gpu_device_count() >= 2) { /* every GPU building tiles side by side: the same bytes */
    char mg[300];
    snprintf(mg, sizeof mg, "%s/mg.svo", dir);
    CHECK(tiled_convert(m, res, T, VX_DEVICE_GPU, -1, 0, mg, &e) == VX_OK);
    size_t mn = 0, cn2 = 0;
    uint8_t *mb = tiled_slurp(mg, &mn), *cb2 = tiled_slurp(c, &cn2);
    CHECK(mn == cn2 && mn > 0 && memcmp(mb, cb2, mn) == 0);
    printf("%u^3: tiles on %d GPUs = CPU tiles\n", res, vx_gpu_device_count());
    free(mb);
    free(cb2);
  }
  vx_tree *a = NULL, *b = NULL;
  CHECK(vx_tree_load(u, NULL, &a, &e) == VX_OK);
  CHECK(vx_tree_load(g, NULL, &b, &e) == VX_OK);
  void *p = NULL, *q = NULL;
  size_t pn = 0, qn = 0;
  CHECK(a && b && vx_tree_encode(a, NULL, &p, &pn, &e) == VX_OK &&
        vx_tree_encode(b, NULL, &q, &qn, &e) == VX_OK);
  CHECK(pn == qn && pn > 0 && memcmp(p, q, pn) == 0);
  printf("%u^3 in tiles of %u^3: GPU tiles = CPU tiles (%zu bytes); joined = untiled\n", res,
         1u << T, cn);
  vx_buffer_free(p);
  vx_buffer_free(q);
  vx_tree_free(a);
  vx_tree_free(b);
  vx_mesh_free(m);
}

static void gpu_tiles_are_cpu_tiles(void) {
  case_(256, 6);
  case_(1024, 8); /* 4^3 tiles */
}

/* Pruned tiles: each GPU tile's tree pruned in memory, each CPU tile's stream pruned; the same
 * bytes (on every GPU too). */
static void pruned_gpu_tiles_are_cpu_tiles(void) {
  vx_mesh *m = tiled_scene();
  const float E[2] = {0.5f, 3.0f};
  for (int i = 0; i < 2 && !skipped; i++) {
    char c[300], g[300];
    snprintf(c, sizeof c, "%s/pc.svo", dir);
    snprintf(g, sizeof g, "%s/pg.svo", dir);
    vx_error e;
    vx_convert_opts o = tiled_opts(512, 5, VX_DEVICE_GPU, vx_gpu_device_count() >= 2 ? -1 : 0, 0);
    o.max_error = E[i];
    vx_status s = vx_convert_to_file(m, &o, g, NULL, &e);
    if (s == VX_ERR_NO_GPU) {
      skipped = 1;
      break;
    }
    CHECK_MSG(s == VX_OK, "%s", e.msg);
    o.device = VX_DEVICE_CPU;
    o.gpus = 0;
    CHECK_MSG(vx_convert_to_file(m, &o, c, NULL, &e) == VX_OK, "%s", e.msg);
    size_t cn = 0, gn = 0;
    uint8_t *cb = tiled_slurp(c, &cn), *gb = tiled_slurp(g, &gn);
    CHECK(cn == gn && cn > 0 && memcmp(cb, gb, cn) == 0);
    printf("512^3 in tiles of 32^3, pruned at %g: GPU tiles = CPU tiles (%zu bytes)\n",
           (double)E[i], cn);
    free(cb);
    free(gb);
  }
  vx_mesh_free(m);
}

/* A binary STL split by tile without holding it (vx_convert_file), its tiles on the GPU (every
 * GPU where there are several): the bytes of the mesh loaded and built on the CPU. */
static void split_gpu_tiles_are_loaded_cpu_tiles(void) {
  vx_soup sc;
  memset(&sc, 0, sizeof sc);
  meshgen_sphere(&sc, 0.2, 0.1, 0.0, 0.6, 40, 20);
  meshgen_torus(&sc, 0.0, 0.0, 0.1, 1.0, 0.25, 48, 16);
  char stl[300], c[300], g[300];
  snprintf(stl, sizeof stl, "%s/scene.stl", dir);
  snprintf(c, sizeof c, "%s/sc.svo", dir);
  snprintf(g, sizeof g, "%s/sg.svo", dir);
  tiled_write_stl(stl, sc.pos, sc.tri_count);
  vx_soup_free(&sc);
  vx_convert_opts o = tiled_opts(512, 5, VX_DEVICE_GPU, vx_gpu_device_count() >= 2 ? -1 : 0, 0);
  o.sign_rule = VX_SIGN_PSEUDO_NORMAL;
  vx_error e;
  vx_conversion *b = NULL;
  vx_status s = vx_convert_file(stl, NULL, &o, g, NULL, &b, &e);
  if (s == VX_ERR_NO_GPU) {
    skipped = 1;
    return;
  }
  CHECK_MSG(s == VX_OK, "%s", e.msg);
  CHECK(s != VX_OK || strstr(vx_conversion_notes(b), "split by tile") != NULL);
  vx_conversion_stats st;
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  vx_conversion_get_stats(b, &st);
  CHECK_MSG(st.used_gpu, "the split tiles were not built on the GPU");
  vx_conversion_free(b);
  vx_mesh *m = NULL;
  CHECK(vx_mesh_load(stl, NULL, &m, &e) == VX_OK);
  o.device = VX_DEVICE_CPU;
  o.gpus = 0;
  CHECK_MSG(vx_convert_to_file(m, &o, c, NULL, &e) == VX_OK, "%s", e.msg);
  vx_mesh_free(m);
  CHECK_MSG(tiled_same_file(c, g), "split GPU tiles differ from the loaded mesh's CPU tiles");
  printf("512^3 in tiles of 32^3 split from an STL, GPU tiles = loaded CPU tiles\n");
}

/* A coloured mesh's tiles built and coloured on the GPU: the CPU's coloured tiles, byte for byte,
 * on one GPU and on every GPU. */
static void colored_gpu_tiles_are_cpu_tiles(void) {
  vx_mesh *m = tiled_colored_scene();
  char c[300], g[300], mg[300];
  snprintf(c, sizeof c, "%s/cc.svo", dir);
  snprintf(g, sizeof g, "%s/cg.svo", dir);
  snprintf(mg, sizeof mg, "%s/cmg.svo", dir);
  vx_error e;
  vx_convert_opts o = tiled_opts(256, 5, VX_DEVICE_GPU, 0, 0);
  o.color = VX_COLOR_AUTO;
  vx_status s = vx_convert_to_file(m, &o, g, NULL, &e);
  if (s == VX_ERR_NO_GPU) {
    skipped = 1;
    vx_mesh_free(m);
    return;
  }
  CHECK_MSG(s == VX_OK, "%s", e.msg);
  o.device = VX_DEVICE_CPU;
  CHECK(vx_convert_to_file(m, &o, c, NULL, &e) == VX_OK);
  CHECK_MSG(tiled_same_file(c, g), "coloured GPU tiles differ from the CPU's");
  if (vx_gpu_device_count() >= 2) {
    o.device = VX_DEVICE_GPU;
    o.gpus = -1;
    CHECK(vx_convert_to_file(m, &o, mg, NULL, &e) == VX_OK);
    CHECK_MSG(tiled_same_file(c, mg), "coloured tiles on every GPU differ from the CPU's");
  }
  vx_tiled *t = NULL;
  CHECK(vx_tiled_open(g, NULL, &t, &e) == VX_OK && vx_tiled_get_header(t)->color == 1);
  vx_tiled_close(t);
  printf("256^3 in tiles of 32^3, coloured: GPU tiles = CPU tiles\n");
  vx_mesh_free(m);
}

/* A textured soup (opaque, cut-out and blended textures, vertex and flat colours, duplicates,
 * triangles on tile planes) in tiles built whole on the GPU and coloured there (their triangle
 * parts made on the device, in the grid's coordinates, only those in the tile): the CPU's tiles
 * (coloured block by block), byte for byte, for both filters, pruned or not, and every tile's
 * tree made on the GPU (none sent to the streaming build instead). */
static void textured_gpu_tiles_are_cpu_tiles(void) {
  vx_soup m;
  make_soup(&m, 0);
  const vx_color_filter F[2] = {VX_COLOR_FILTER_MEAN, VX_COLOR_FILTER_DOMINANT};
  /* records come back from the device in pieces of whole cells: pieces of the default size (no
   * tile here has that many), 5 (cells straddle pieces) and 1 (every cell outgrows the piece) */
  const uint64_t pieces[3] = {color_gpu_piece_records(0), 5, 1};
  for (int k = 0; k < 3 && !skipped; k++) {
    for (int fi = 0; fi < 2 && !skipped; fi++)
      for (int pi = 0; pi < 2 && !skipped; pi++) {
        if (k && pi) continue; /* the small pieces: unpruned, both filters */
        color_gpu_piece_records(pieces[k]);
        char c[300], g[300];
        snprintf(c, sizeof c, "%s/tc.svo", dir);
        snprintf(g, sizeof g, "%s/tg.svo", dir);
        vx_convert_opts in = tiled_opts(128, 4, VX_DEVICE_GPU, 0, 0), o;
        in.color = VX_COLOR_AUTO;
        in.color_filter = F[fi];
        in.max_error = pi ? 0.25f : 0.0f;
        vx_error e;
        CHECK_MSG(vx_convert_opts_ready(&in, &o, &e) == VX_OK, "%s", e.msg);
        vx_conversion b;
        memset(&b, 0, sizeof b);
        vx_status s = vx_convert_tiled(&m, &o, g, dir, &b, &e);
        if (s == VX_ERR_NO_GPU) {
          skipped = 1;
          break;
        }
        CHECK_MSG(s == VX_OK, "%s", e.msg);
        CHECK_MSG(b.stats.gpu_tree && strstr(b.notes.text, "triangle parts on the GPU"),
                  "tiles not coloured on the GPU: %s", b.notes.text);
        in.device = VX_DEVICE_CPU;
        CHECK(vx_convert_opts_ready(&in, &o, &e) == VX_OK);
        memset(&b, 0, sizeof b);
        CHECK_MSG(vx_convert_tiled(&m, &o, c, dir, &b, &e) == VX_OK, "%s", e.msg);
        CHECK_MSG(tiled_same_file(c, g), "%s filter, max error %g: textured GPU tiles differ from "
                  "the CPU's", fi ? "dominant" : "mean", (double)in.max_error);
        vx_tiled *t = NULL;
        CHECK(vx_tiled_open(g, NULL, &t, &e) == VX_OK && vx_tiled_get_header(t)->color == 1);
        vx_tiled_close(t);
        printf("128^3 in tiles of 16^3, textured, %s filter, max error %g, pieces of %llu "
               "records: GPU-coloured tiles = CPU tiles\n", fi ? "dominant" : "mean",
               (double)in.max_error, (unsigned long long)pieces[k]);
      }
  }
  color_gpu_piece_records(pieces[0]);
  vx_soup_free(&m);
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/voxlod-gtiled-XXXXXX");
  if (!mkdtemp(dir)) return 1;
  RUN(gpu_tiles_are_cpu_tiles);
  RUN(pruned_gpu_tiles_are_cpu_tiles);
  RUN(split_gpu_tiles_are_loaded_cpu_tiles);
  RUN(colored_gpu_tiles_are_cpu_tiles);
  RUN(textured_gpu_tiles_are_cpu_tiles);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) return 1;
  if (skipped) {
    printf("SKIP: no usable CUDA device\n");
    return 77;
  }
  return check_summary();
}
