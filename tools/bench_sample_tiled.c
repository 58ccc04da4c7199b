/* SPDX-License-Identifier: Apache-2.0 */
/* bench_sample_tiled.c - `voxlod bench IN.svo --sample N` on a tiled file read tile by tile
 * (vx_tiled_file_sample): a file finer than 16384^3, or any tiled file with --tiles.
 *
 * The points are spread over the tiles by their surface voxels (each tile loaded once, in turn,
 * for vx_tree_surface_points), in Morton order of the tiles or shuffled. The first call (which
 * also finds the tiles' re-signed voxels, kept with the file handle) is a warm-up; the median of
 * --reps calls after it is reported (wall time). On the CPU, or with --gpu the search near the
 * surface on the GPU (each group's tiles uploaded; the far points' walks on the CPU).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* np points near the surface of f's tiles into pts (world coordinates). */
static vx_status tiled_points(vx_tiled_file *f, const vx_tree_info *ti, uint64_t np, float spread,
                              uint32_t seed, int shuffle, float *pts, vx_error *e) {
  uint64_t at = 0, seen = 0;
  for (uint64_t i = 0; i < ti->tile_count && at < np; i++) {
    vx_tile_info tile;
    memset(&tile, 0, sizeof tile);
    tile.struct_size = sizeof tile;
    vx_tiled_file_get_tile(f, i, &tile);
    seen += tile.voxel_count;
    /* this tile's share: the points due by the voxels so far, less those given */
    uint64_t want = (uint64_t)((double)np * (double)seen / (double)ti->voxel_count) - at;
    if (i + 1 == ti->tile_count) want = np - at;
    if (!want) continue;
    vx_tree *t = NULL;
    vx_status s = vx_tiled_file_load_tile(f, i, NULL, &t, e);
    if (s != VX_OK) return s;
    vx_surface_points_opts po;
    memset(&po, 0, sizeof po);
    po.struct_size = sizeof po;
    po.spread = spread;
    po.seed = (uint64_t)seed * 1000003u + i;
    s = vx_tree_surface_points(t, &po, want, pts + 3 * at, e);
    vx_tree_free(t);
    if (s != VX_OK) return s;
    at += want;
  }
  if (shuffle) { /* Fisher-Yates, xorshift64 from the seed */
    uint64_t x = 0x9e3779b97f4a7c15ull ^ seed;
    for (uint64_t i = np; i > 1; i--) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      const uint64_t j = x % i;
      for (int k = 0; k < 3; k++) {
        float v = pts[3 * (i - 1) + k];
        pts[3 * (i - 1) + k] = pts[3 * j + k];
        pts[3 * j + k] = v;
      }
    }
  }
  return VX_OK;
}

int vx_cmd_bench_sample_tiled(vx_tiled_file *f, const char *path, uint64_t np, uint32_t reps,
                              double spread, int order, int level, uint32_t seed,
                              uint32_t threads, uint64_t cache, int gpu, int json) {
  vx_tree_info ti;
  memset(&ti, 0, sizeof ti);
  ti.struct_size = sizeof ti;
  vx_tiled_file_get_info(f, &ti);
  if (level > (int)ti.depth)
    return vx_cli_usage_error("bench", "--level %d: the tree's depth is %u", level, ti.depth);
  vx_error e;
  memset(&e, 0, sizeof e);
  float *pts = (float *)malloc((size_t)np * 3 * sizeof(float));
  float *dist = (float *)malloc((size_t)np * sizeof(float));
  uint8_t *flags = (uint8_t *)malloc((size_t)np);
  double *ms = (double *)calloc(reps, sizeof *ms);
  vx_status s = VX_OK;
  if (!pts || !dist || !flags || !ms) {
    s = e.status = VX_ERR_NOMEM;
    snprintf(e.msg, sizeof e.msg, "out of memory for %llu points", (unsigned long long)np);
  }
  const float sp = spread > 0 ? (float)spread : ti.band;
  double t0 = vx_cli_now(), points_ms = 0.0, first_ms = 0.0;
  if (s == VX_OK) s = tiled_points(f, &ti, np, sp, seed, order, pts, &e);
  points_ms = (vx_cli_now() - t0) * 1e3;
  vx_sample_opts op;
  memset(&op, 0, sizeof op);
  op.struct_size = sizeof op;
  op.lod = level < 0 ? VX_LOD_FINEST : VX_LOD_LEVEL;
  op.level = level < 0 ? 0 : level;
  op.threads = (int)threads;
  op.device = gpu ? VX_DEVICE_GPU : VX_DEVICE_CPU;
  vx_tiled_sample_opts to;
  memset(&to, 0, sizeof to);
  to.struct_size = sizeof to;
  to.cache_bytes = cache;
  if (s == VX_OK) {
    t0 = vx_cli_now();
    s = vx_tiled_file_sample(f, &op, &to, pts, np, dist, NULL, flags, NULL, &e);
    first_ms = (vx_cli_now() - t0) * 1e3;
  }
  for (uint32_t r = 0; r < reps && s == VX_OK && !vx_cli_interrupted; r++) {
    t0 = vx_cli_now();
    s = vx_tiled_file_sample(f, &op, &to, pts, np, dist, NULL, flags, NULL, &e);
    ms[r] = (vx_cli_now() - t0) * 1e3;
  }
  int rc = s == VX_OK ? 0 : vx_cli_fail("bench", &e);
  if (rc == 0) {
    qsort(ms, reps, sizeof *ms, cmp_double);
    const double med = reps % 2 ? ms[reps / 2] : 0.5 * (ms[reps / 2 - 1] + ms[reps / 2]);
    const double rate = med > 0.0 ? (double)np / (med * 1e-3) : 0.0;
    uint64_t fc[3] = {0, 0, 0};
    for (uint64_t i = 0; i < np; i++) {
      fc[0] += (flags[i] & VX_SAMPLE_PLANE) != 0;
      fc[1] += (flags[i] & VX_SAMPLE_NEAR) != 0;
      fc[2] += (flags[i] & VX_SAMPLE_FAR) != 0;
    }
    const double pn = (double)np;
    char lv[16];
    if (level < 0) snprintf(lv, sizeof lv, "%u", ti.depth);
    else snprintf(lv, sizeof lv, "%d", level);
    if (json)
      printf("{\"file\": \"%s\", \"device\": \"%s\", \"gpu\": %s, \"tiled\": true, "
             "\"resolution\": %u, \"tile_depth\": %u, \"level\": %s, \"points\": %llu, "
             "\"order\": \"%s\", \"spread\": %g, \"reps\": %u, \"points_ms\": %.3f, "
             "\"first_ms\": %.3f, \"ms_median\": %.4f, \"ms_min\": %.4f, \"points_per_s\": %.1f, "
             "\"fraction_plane\": %.4f, \"fraction_near\": %.4f, \"fraction_far\": %.4f}\n",
             path, gpu ? "GPU" : "CPU", gpu ? "true" : "false", ti.resolution, ti.tile_depth, lv,
             (unsigned long long)np,
             order ? "random" : "morton", (double)sp, reps, points_ms, first_ms, med, ms[0], rate,
             fc[0] / pn, fc[1] / pn, fc[2] / pn);
    else
      printf("device: %s; %s (%u^3 in %llu tiles of %u^3, tile by tile), level %s, %llu points "
             "near the surface (spread %g voxels, %s order); first call %.1f ms\n"
             "%12s %12s %14s %8s %8s %8s\n%12.3f %12.3f %14.3f %7.1f%% %7.1f%% %7.1f%%\n",
             gpu ? "GPU (search) + CPU" : "CPU", path, ti.resolution,
             (unsigned long long)ti.tile_count, 1u << ti.tile_depth, lv,
             (unsigned long long)np, (double)sp, order ? "random" : "Morton", first_ms, "ms/run",
             "min ms", "Mpoints/s", "plane", "near", "far", med, ms[0], rate * 1e-6,
             100.0 * fc[0] / pn, 100.0 * fc[1] / pn, 100.0 * fc[2] / pn);
  }
  free(pts);
  free(dist);
  free(flags);
  free(ms);
  return rc;
}
