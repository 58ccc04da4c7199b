/* bench.c - `voxlod bench`: GPU frame times per LOD level over a fixed orbit of views.
 *
 * For each requested level the tree (levels <= L) is uploaded once, every view is rendered once to
 * warm up, then N frames cycling through the views are timed with CUDA events (marcher/gpu_bench.h);
 * the median is reported with the primary-ray rate, node fetches per ray, GPU memory and device.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/svo_file.h"
#include "marcher/gpu_bench.h"
#include "tools/cli.h"

static const char *bench_help =
    "usage: voxlod bench IN.svo [options]\n"
    "\n"
    "Times the CUDA ray-marcher: per LOD level, the median ms per frame over N frames from a fixed\n"
    "orbit of views (after a warm-up), primary rays per second, node fetches per ray, GPU memory\n"
    "and the device.\n"
    "\n"
    "options:\n"
    "  --size WxH      frame size (default 1920x1080)\n"
    "  --frames N      timed frames per level (default 50)\n"
    "  --views N       orbit views the frames cycle through (default 8)\n"
    "  --lod LIST      levels to time: 'all' (default: every level from depth-6 to depth, and\n"
    "                  auto), 'auto', a level, or a comma list such as 8,10,12,auto\n"
    "  --zoom Z        move the eye to Z times the framing distance (default 1; 0.4 fills the frame)\n"
    "  --elevation E   orbit elevation in degrees (default 20)\n"
    "  --mem-limit SIZE    refuse a file whose decoded size exceeds SIZE (default 16G)\n"
    "  --json          one JSON object per level on stdout instead of the table\n";

static int parse_lods(const char *s, uint32_t depth, int *lods, int max) {
  int n = 0;
  if (strcmp(s, "all") == 0) {
    for (int l = (int)depth - 6 < 0 ? 0 : (int)depth - 6; l <= (int)depth && n < max; l++) lods[n++] = l;
    if (n < max) lods[n++] = VX_LOD_AUTO;
    return n;
  }
  char buf[256];
  snprintf(buf, sizeof buf, "%s", s);
  for (char *tok = strtok(buf, ","); tok && n < max; tok = strtok(NULL, ",")) {
    int l;
    if (vx_parse_lod(tok, &l) || (l != VX_LOD_AUTO && l > (int)depth)) return -1;
    lods[n++] = l;
  }
  return n;
}

int vx_cmd_bench(int argc, char **argv) {
  for (int i = 2; i < argc; i++)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(bench_help, stdout);
      return 0;
    }
  const char *in = NULL, *lod_list = "all";
  uint32_t w = 1920, h = 1080, frames = 50, nviews = 8;
  float zoom = 1.0f, elevation = 20.0f;
  int json = 0;
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--json") == 0) {
      json = 1;
      continue;
    }
    if (a[0] == '-' && a[1]) {
      if (!v) return vx_cli_usage_error("bench", "%s needs a value", a);
      i++;
      int bad = 0;
      if (strcmp(a, "--size") == 0) bad = vx_parse_size(v, &w, &h);
      else if (strcmp(a, "--frames") == 0) bad = vx_parse_u32(v, &frames) || frames < 1 || frames > 100000;
      else if (strcmp(a, "--views") == 0) bad = vx_parse_u32(v, &nviews) || nviews < 1 || nviews > 360;
      else if (strcmp(a, "--lod") == 0) lod_list = v;
      else if (strcmp(a, "--zoom") == 0) bad = vx_parse_float(v, &zoom) || !(zoom > 0.01f && zoom <= 100.0f);
      else if (strcmp(a, "--elevation") == 0) bad = vx_parse_float(v, &elevation) || fabsf(elevation) > 89.0f;
      else return vx_cli_usage_error("bench", "unknown option '%s'", a);
      if (bad) return vx_cli_usage_error("bench", "bad value '%s' for %s", v, a);
    } else if (!in) {
      in = a;
    } else {
      return vx_cli_usage_error("bench", "unexpected argument '%s'", a);
    }
  }
  if (!in) return vx_cli_usage_error("bench", "needs IN.svo");
  vx_error e;
  memset(&e, 0, sizeof e);
  vx_octree t;
  memset(&t, 0, sizeof t);
  if (vx_cli_read(in, -1, &t, NULL, &e) != VX_OK) return vx_cli_fail("bench", &e);
  int lods[VX_MAX_DEPTH + 8];
  int nl = parse_lods(lod_list, t.depth, lods, VX_MAX_DEPTH + 8);
  if (nl <= 0) {
    vx_octree_free(&t);
    return vx_cli_usage_error("bench", "bad --lod '%s' (levels 0..%u, auto, all)", lod_list, t.depth);
  }
  vx_camera *views = (vx_camera *)calloc(nviews, sizeof *views);
  if (!views) {
    vx_octree_free(&t);
    vx_error_set(&e, VX_ERR_NOMEM, "out of memory");
    return vx_cli_fail("bench", &e);
  }
  for (uint32_t k = 0; k < nviews; k++) {
    vx_march_orbit(&t, 360.0 * k / nviews, elevation, 40.0, &views[k]);
    for (int i = 0; i < 3; i++)
      views[k].eye[i] = views[k].target[i] + zoom * (views[k].eye[i] - views[k].target[i]);
  }
  int rc = 0;
  for (int k = 0; k < nl; k++) {
    vx_march_opts o;
    memset(&o, 0, sizeof o);
    o.width = w;
    o.height = h;
    o.lod = lods[k];
    o.lod_scale = 1.0f;
    o.shade = VX_SHADE_SMOOTH;
    vx_gpu_bench_result r;
    memset(&r, 0, sizeof r);
    if (vx_gpu_bench(&t, &o, views, (int)nviews, (int)frames, NULL, &r, &e) != VX_OK) {
      rc = vx_cli_fail("bench", &e);
      break;
    }
    char lod[16];
    if (o.lod == VX_LOD_AUTO) snprintf(lod, sizeof lod, "auto");
    else snprintf(lod, sizeof lod, "%d", o.lod);
    if (json) {
      printf("{\"file\": \"%s\", \"device\": \"%s\", \"width\": %u, \"height\": %u, \"lod\": \"%s\", "
             "\"frames\": %d, \"views\": %u, \"zoom\": %g, \"ms_median\": %.4f, \"ms_min\": %.4f, "
             "\"ms_max\": %.4f, \"mrays_per_s\": %.1f, \"visits_per_ray\": %.3f, "
             "\"hit_fraction\": %.4f, \"tree_bytes\": %llu, \"device_used_bytes\": %llu, "
             "\"regs_per_thread\": %d, \"local_bytes\": %d}\n",
             in, r.device, w, h, lod, r.frames, nviews, zoom, r.ms_median, r.ms_min, r.ms_max,
             r.mrays_per_s, r.visits_per_ray, r.hit_fraction, (unsigned long long)r.tree_bytes,
             (unsigned long long)r.device_used_bytes, r.regs_per_thread, r.local_bytes);
    } else {
      if (k == 0)
        printf("device: %s (%d SMs); %s, %ux%u, %d frames over %u views, zoom %g\n"
               "%-5s %10s %10s %10s %10s %8s %12s %12s\n",
               r.device, r.sm_count, in, w, h, r.frames, nviews, zoom, "lod", "ms/frame",
               "min ms", "Mrays/s", "visits/ray", "hit %", "tree MiB", "GPU used MiB");
      printf("%-5s %10.3f %10.3f %10.1f %10.2f %8.1f %12.2f %12.1f\n", lod, r.ms_median, r.ms_min,
             r.mrays_per_s, r.visits_per_ray, 100.0 * r.hit_fraction, r.tree_bytes / 1048576.0,
             r.device_used_bytes / 1048576.0);
    }
    fflush(stdout);
  }
  free(views);
  vx_octree_free(&t);
  return rc;
}
