/* SPDX-License-Identifier: Apache-2.0 */
/* bench.c - `voxlod bench`: what images of a tree cost, through the renderer object.
 *
 * First the first-image cost a user of `render` pays: creating the renderer (on the GPU the CUDA
 * context and the tree's upload) plus one frame into host memory. Then, per requested level, the
 * steady cost over a fixed orbit of views (vx_renderer_bench): every view rendered once to warm up,
 * then N frames timed (on the GPU with CUDA events), and the same frames with the copy of the
 * pixels into host memory; the median is reported with the primary-ray rate, node fetches per ray
 * and GPU memory.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VOXLOD_EXPERIMENTAL /* vx_renderer_bench */
#include "tools/cli.h"

static const char *bench_help =
    "usage: voxlod bench IN.svo [options]\n"
    "\n"
    "Times the ray-marcher through the renderer object: the first image (renderer set-up: CUDA\n"
    "context and upload on the GPU, plus one frame into host memory), then per LOD level the\n"
    "median ms per frame over N frames from a fixed orbit of views (after a warm-up), with and\n"
    "without the copy of the pixels to host memory, primary rays per second, node fetches per ray\n"
    "and GPU memory.\n"
    "\n"
    "options:\n"
    "  --size WxH      frame size (default 1920x1080)\n"
    "  --frames N      timed frames per level (default 50)\n"
    "  --views N       orbit views the frames cycle through (default 8)\n"
    "  --lod LIST      levels to time: 'all' (default: every level from depth-6 to depth, and\n"
    "                  auto), 'auto', a level, or a comma list such as 8,10,12,auto\n"
    "  --zoom Z        move the eye to Z times the framing distance (default 1; 0.4 fills the frame)\n"
    "  --elevation E   orbit elevation in degrees (default 20)\n"
    "  --gpu | --cpu   the renderer (default: the GPU when usable, else the CPU)\n"
    "  --threads N     CPU renderer threads (default: all cores)\n"
    "  --mem-limit SIZE  refuse a file whose decoded size exceeds SIZE (default: 80% of memory)\n"
    "  --budget SIZE   a tiled file drawn tile by tile within SIZE of GPU memory (host memory on\n"
    "                  the CPU): as `render --budget`; files finer than 16384^3 always are. The\n"
    "                  warm-up reads every view's tiles; the table adds what is resident\n"
    "  --json          one JSON document on stdout instead of the table\n"
    "  --sample N      time N distance queries instead (see voxlod bench --sample 1 --help)\n";

/* Levels from "all", "auto", "8" or "8,10,auto": -1 for auto. Returns the count, -1 when bad. */
static int parse_lods(const char *s, uint32_t depth, int *lods, int max) {
  int n = 0;
  if (strcmp(s, "all") == 0) {
    for (int l = (int)depth - 6 < 0 ? 0 : (int)depth - 6; l <= (int)depth && n < max; l++) lods[n++] = l;
    if (n < max) lods[n++] = -1;
    return n;
  }
  char buf[256];
  if (strlen(s) >= sizeof buf) return -1;
  snprintf(buf, sizeof buf, "%s", s);
  for (char *tok = strtok(buf, ","); tok && n < max; tok = strtok(NULL, ",")) {
    if (strcmp(tok, "auto") == 0) {
      lods[n++] = -1;
      continue;
    }
    char *end;
    long l = strtol(tok, &end, 10);
    if (*end || end == tok || tok[0] == '-' || tok[0] == '+' || l > (long)depth) return -1;
    lods[n++] = (int)l;
  }
  return n;
}

int vx_cmd_bench(int argc, char **argv) {
  for (int i = 2; i < argc; i++) /* distance queries: their own options (bench_sample.c) */
    if (strcmp(argv[i], "--sample") == 0) return vx_cmd_bench_sample(argc, argv);
  const char *lod_list = "all";
  uint32_t size[2] = {1920, 1080}, frames = 50, nviews = 8, threads = 0;
  double zoom = 1.0, elevation = 20.0;
  uint64_t mem_limit = 0;
  int json = 0, gpu = 0, cpu = 0;
  vx_opt o[14];
  uint64_t budget = 0;
  int have_budget = 0;
  int n = 0;
  o[n++] = vx_cli_opt("--size", VX_OPT_SIZE, size, 1, 32768, "WxH");
  o[n++] = vx_cli_opt("--frames", VX_OPT_U32, &frames, 1, 100000, "a count");
  o[n++] = vx_cli_opt("--views", VX_OPT_U32, &nviews, 1, 360, "a count");
  o[n++] = vx_cli_opt("--lod", VX_OPT_STRING, (void *)&lod_list, 0, 0, NULL);
  o[n++] = vx_cli_opt("--zoom", VX_OPT_DOUBLE, &zoom, 0.01, 100, "a factor");
  o[n++] = vx_cli_opt("--elevation", VX_OPT_DOUBLE, &elevation, -89, 89, "degrees");
  o[n++] = vx_cli_opt("--gpu", VX_OPT_FLAG, &gpu, 0, 0, NULL);
  o[n++] = vx_cli_opt("--cpu", VX_OPT_FLAG, &cpu, 0, 0, NULL);
  o[n++] = vx_cli_opt("--threads", VX_OPT_U32, &threads, 0, 1024, "a thread count, 0: all cores");
  o[n++] = vx_cli_opt("--mem-limit", VX_OPT_BYTES, &mem_limit, 1, 9.2e18, "a size such as 8G");
  o[n++] = vx_cli_opt("--json", VX_OPT_FLAG, &json, 0, 0, NULL);
  o[n] = vx_cli_opt("--budget", VX_OPT_BYTES, &budget, 1048576.0, 1.8e16, "a size such as 2G");
  o[n++].seen = &have_budget;
  memset(&o[n], 0, sizeof o[n]);
  const char *pos[1];
  int npos;
  int r = vx_cli_parse("bench", argc, argv, o, pos, 1, &npos, bench_help, NULL);
  if (r) return r < 0 ? 0 : r;
  if (npos < 1) return vx_cli_usage_error("bench", "needs IN.svo");
  if (gpu && cpu) return vx_cli_usage_error("bench", "--gpu and --cpu exclude each other");
  if (gpu && threads)
    return vx_cli_usage_error("bench", "--threads applies to the CPU renderer, not with --gpu");
  const char *in = pos[0];
  vx_error e;
  memset(&e, 0, sizeof e);
  vx_tree *t = NULL;
  vx_tiled_file *tf = NULL;
  vx_tree_info ti;
  if ((r = vx_cli_open_any("bench", in, -1, mem_limit, have_budget, &t, &tf, &ti)) != 0) return r;
  int lods[32];
  int nl = parse_lods(lod_list, ti.depth, lods, 32);
  if (nl <= 0) {
    vx_tree_free(t);
    vx_tiled_file_close(tf);
    return vx_cli_usage_error("bench", "bad --lod '%s' (levels 0..%u, auto, all)", lod_list,
                              ti.depth);
  }
  vx_render_opts *views = (vx_render_opts *)calloc(nviews, sizeof *views);
  size_t px = (size_t)size[0] * size[1];
  uint8_t *rgb = (uint8_t *)malloc(px * 3);
  if (!views || !rgb) {
    free(views);
    free(rgb);
    vx_tree_free(t);
    vx_tiled_file_close(tf);
    e.status = VX_ERR_NOMEM;
    snprintf(e.msg, sizeof e.msg, "out of memory");
    return vx_cli_fail("bench", &e);
  }
  /* The first image, as `voxlod render` pays it. */
  vx_renderer_opts rop;
  memset(&rop, 0, sizeof rop);
  rop.struct_size = sizeof rop;
  rop.device = gpu ? VX_DEVICE_GPU : cpu ? VX_DEVICE_CPU : VX_DEVICE_AUTO;
  rop.threads = (int)threads;
  rop.memory_budget_mib = (uint32_t)(budget >> 20);
  double t0 = vx_cli_now();
  vx_renderer *rd = NULL;
  vx_status s = tf ? vx_renderer_create_tiled(tf, &rop, &rd, &e)
                   : vx_renderer_create(t, &rop, &rd, &e);
  vx_renderer_info ri;
  memset(&ri, 0, sizeof ri);
  ri.struct_size = sizeof ri;
  double first_ms = 0.0;
  if (s == VX_OK) {
    vx_cli_notes("bench", vx_renderer_notes(rd));
    vx_renderer_get_info(rd, &ri);
    vx_render_opts fo;
    memset(&fo, 0, sizeof fo);
    fo.struct_size = sizeof fo;
    fo.width = size[0];
    fo.height = size[1];
    s = vx_render(rd, &fo, rgb, NULL, NULL, &e);
    first_ms = (vx_cli_now() - t0) * 1e3;
  }
  int rc = s == VX_OK ? 0 : vx_cli_fail("bench", &e);
  if (rc == 0 && json)
    printf("{\"file\": \"%s\", \"device\": \"%s\", \"gpu\": %s, \"width\": %u, \"height\": %u, "
           "\"frames\": %u, \"views\": %u, \"zoom\": %g, \"renderer_create_ms\": %.3f, "
           "\"first_image_ms\": %.3f, \"tree_bytes\": %llu, \"levels\": [",
           in, ri.device, ri.used_gpu ? "true" : "false", size[0], size[1], frames, nviews, zoom,
           ri.ms_create, first_ms, (unsigned long long)ri.tree_bytes);
  else if (rc == 0)
    printf("device: %s; %s, %ux%u, %u frames over %u views, zoom %g\n"
           "first image: %.1f ms (renderer set-up %.1f ms: %s, then one frame into host memory)\n"
           "%-5s %10s %10s %12s %10s %10s %8s %12s\n",
           ri.device, in, size[0], size[1], frames, nviews, zoom, first_ms, ri.ms_create,
           ri.used_gpu ? "CUDA context and upload" : "nothing to upload", "lod", "ms/frame",
           "min ms", "ms +copy", "Mrays/s", "visits/ray", "hit %", "GPU used MiB");
  for (int k = 0; k < nl && rc == 0; k++) {
    for (uint32_t v = 0; v < nviews; v++) {
      vx_render_opts *vo = &views[v];
      memset(vo, 0, sizeof *vo);
      vo->struct_size = sizeof *vo;
      vo->width = size[0];
      vo->height = size[1];
      vo->lod = lods[k] < 0 ? VX_LOD_PIXEL : VX_LOD_LEVEL;
      vo->level = lods[k];
      if (tf)
        vx_tiled_camera_orbit(tf, 360.0 * v / nviews, elevation, 40.0, &vo->camera);
      else
        vx_camera_orbit(t, 360.0 * v / nviews, elevation, 40.0, &vo->camera);
      for (int i = 0; i < 3; i++)
        vo->camera.eye[i] = vo->camera.target[i] + zoom * (vo->camera.eye[i] - vo->camera.target[i]);
    }
    vx_renderer_bench_stats b;
    memset(&b, 0, sizeof b);
    b.struct_size = sizeof b;
    if (vx_renderer_bench(rd, views, (int)nviews, (int)frames, &b, &e) != VX_OK) {
      rc = vx_cli_fail("bench", &e);
      break;
    }
    char lod[16];
    if (lods[k] < 0) snprintf(lod, sizeof lod, "auto");
    else snprintf(lod, sizeof lod, "%d", lods[k]);
    if (json)
      printf("%s\n  {\"lod\": \"%s\", \"ms_median\": %.4f, \"ms_min\": %.4f, \"ms_max\": %.4f, "
             "\"ms_with_copy_median\": %.4f, \"mrays_per_s\": %.1f, \"visits_per_ray\": %.3f, "
             "\"hit_fraction\": %.4f, \"device_used_bytes\": %llu, \"regs_per_thread\": %d}",
             k ? "," : "", lod, b.ms_median, b.ms_min, b.ms_max, b.ms_copy_median, b.mrays_per_s,
             b.visits_per_ray, b.hit_fraction, (unsigned long long)b.device_used_bytes,
             b.regs_per_thread);
    else
      printf("%-5s %10.3f %10.3f %12.3f %10.1f %10.2f %8.1f %12.1f\n", lod, b.ms_median,
             b.ms_min, b.ms_copy_median, b.mrays_per_s, b.visits_per_ray, 100.0 * b.hit_fraction,
             b.device_used_bytes / 1048576.0);
    if (tf && !json) {
      vx_renderer_get_info(rd, &ri);
      printf("      tiles: %llu of %llu finer than level %u, %.1f MiB resident of %.1f MiB\n",
             (unsigned long long)ri.tiles_detailed, (unsigned long long)ri.tiles, ri.coarse_level,
             ri.resident_bytes / 1048576.0, ri.budget_bytes / 1048576.0);
    }
    fflush(stdout);
  }
  if (rc == 0 && json) printf("\n]}\n");
  vx_renderer_free(rd);
  free(views);
  free(rgb);
  vx_tree_free(t);
  vx_tiled_file_close(tf);
  return rc;
}
