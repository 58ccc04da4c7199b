/* SPDX-License-Identifier: Apache-2.0 */
/* bench_sample.c - `voxlod bench IN.svo --sample N`: what distance queries cost, through the
 * sampler object.
 *
 * The points are the library's points near the surface (vx_tree_surface_points: surface voxels'
 * centres moved by up to --spread voxels per axis, stratified over the surface), in Morton order
 * (as a scan or a training set sorted by position gives them) or shuffled. On the GPU the points
 * and outputs stay in device memory and each run is timed with CUDA events around the kernel
 * (vx_sampler_bench), then the same runs through host arrays (copies included, wall time); on the
 * CPU each run is wall time on all cores. The median of --reps runs after a warm-up is reported.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VOXLOD_EXPERIMENTAL /* vx_sampler_bench */
#include "tools/cli.h"

static const char *sample_help =
    "usage: voxlod bench IN.svo --sample N [options]\n"
    "\n"
    "Times signed-distance queries through the sampler object: N points near the surface\n"
    "(surface voxels' centres moved by up to --spread voxels per axis), the median of --reps runs\n"
    "after a warm-up, in points per second. On the GPU the points live in device memory and the\n"
    "kernel is timed with CUDA events; the rate through host arrays (copies included) follows.\n"
    "\n"
    "options:\n"
    "  --sample N      points (e.g. 1e8)\n"
    "  --reps R        timed runs (default 10)\n"
    "  --spread S      offset of the points from the voxel centres, voxels (default: the band)\n"
    "  --order O       morton (default: coherent, as a scan gives them) or random\n"
    "  --level L       cut the tree at level L (default: full detail)\n"
    "  --seed S        the points' random sequence (default 1)\n"
    "  --gpu | --cpu   the sampler (default: the GPU when usable, else the CPU)\n"
    "  --threads N     CPU threads (default: all cores)\n"
    "  --band-cache    answer points within the band from the band cache (built first, by the\n"
    "                  device that samples; its time and size shown; voxlod/sample.h)\n"
    "  --mem-limit SIZE  refuse a file whose decoded size exceeds SIZE (default: 80% of memory)\n"
    "  --json          one JSON document on stdout instead of the table\n"
    "\n"
    "A tiled file finer than 16384^3 (or any tiled file with --tiles) is sampled tile by tile\n"
    "(vx_tiled_file_sample; up to 16384^3 the same bits as the joined tree), on the CPU, or\n"
    "with --gpu the search near the surface on the GPU (the far points' sign walks on the CPU),\n"
    "wall time of whole calls: the points are spread over the tiles' surface voxels, and the\n"
    "first call (which also finds the tiles' re-signed voxels) is timed apart.\n"
    "  --tiles         a tiled file of up to 16384^3: tile by tile instead of joined\n"
    "  --cache SIZE    decoded tiles and windows kept between groups of points and calls\n"
    "                  (default: 1G of tiles, windows while memory allows)\n";

int vx_cmd_bench_sample(int argc, char **argv) {
  double count = 0.0, spread = 0.0;
  uint32_t reps = 10, threads = 0, seed = 1;
  int level = -1, order = 0, json = 0, gpu = 0, cpu = 0, band_cache = 0, tiles = 0;
  int cache_seen = 0;
  uint64_t mem_limit = 0, cache = 0;
  vx_opt o[17];
  int n = 0;
  o[n++] = vx_cli_opt("--sample", VX_OPT_DOUBLE, &count, 1, 4e9, "a point count such as 1e8");
  o[n++] = vx_cli_opt("--reps", VX_OPT_U32, &reps, 1, 100000, "a count");
  o[n++] = vx_cli_opt("--spread", VX_OPT_DOUBLE, &spread, 0, 1e6, "voxels");
  o[n] = vx_cli_opt("--order", VX_OPT_CHOICE, &order, 0, 0, NULL);
  o[n++].choices = "morton|random";
  o[n++] = vx_cli_opt("--level", VX_OPT_INT, &level, 0, 20, "a level of the tree");
  o[n++] = vx_cli_opt("--seed", VX_OPT_U32, &seed, 0, 4294967295.0, "a number");
  o[n++] = vx_cli_opt("--gpu", VX_OPT_FLAG, &gpu, 0, 0, NULL);
  o[n++] = vx_cli_opt("--cpu", VX_OPT_FLAG, &cpu, 0, 0, NULL);
  o[n++] = vx_cli_opt("--threads", VX_OPT_U32, &threads, 0, 1024, "a thread count, 0: all cores");
  o[n++] = vx_cli_opt("--mem-limit", VX_OPT_BYTES, &mem_limit, 1, 9.2e18, "a size such as 8G");
  o[n++] = vx_cli_opt("--band-cache", VX_OPT_FLAG, &band_cache, 0, 0, NULL);
  o[n++] = vx_cli_opt("--json", VX_OPT_FLAG, &json, 0, 0, NULL);
  o[n++] = vx_cli_opt("--tiles", VX_OPT_FLAG, &tiles, 0, 0, NULL);
  o[n] = vx_cli_opt("--cache", VX_OPT_BYTES, &cache, 1, 9.2e18, "a size such as 512M");
  o[n++].seen = &cache_seen;
  memset(&o[n], 0, sizeof o[n]);
  const char *pos[1];
  int npos;
  int r = vx_cli_parse("bench", argc, argv, o, pos, 1, &npos, sample_help, NULL);
  if (r) return r < 0 ? 0 : r;
  if (npos < 1) return vx_cli_usage_error("bench", "needs IN.svo");
  if (gpu && cpu) return vx_cli_usage_error("bench", "--gpu and --cpu exclude each other");
  uint64_t np = (uint64_t)count;
  vx_error e;
  memset(&e, 0, sizeof e);
  vx_tiled_file *tf = NULL;
  vx_read_opts ro;
  memset(&ro, 0, sizeof ro);
  ro.struct_size = sizeof ro;
  ro.mem_limit = mem_limit;
  if (vx_tiled_file_open(pos[0], &ro, &tf, NULL) == VX_OK) {
    vx_tree_info fi;
    memset(&fi, 0, sizeof fi);
    fi.struct_size = sizeof fi;
    vx_tiled_file_get_info(tf, &fi);
    if (fi.depth > 14 || tiles) { /* tile by tile */
      if (band_cache)
        r = vx_cli_usage_error("bench", "--band-cache: not for a tiled file read tile by tile");
      else
        r = vx_cmd_bench_sample_tiled(tf, pos[0], np, reps, spread, order, level, seed, threads,
                                      cache, gpu, json);
      vx_tiled_file_close(tf);
      return r;
    }
    vx_tiled_file_close(tf);
  }
  if (tiles) return vx_cli_usage_error("bench", "--tiles applies to a tiled file");
  if (cache_seen)
    return vx_cli_usage_error("bench", "--cache applies to a tiled file read tile by tile");
  vx_tree *t = NULL;
  vx_tree_info ti;
  if ((r = vx_cli_open_tree("bench", pos[0], 0, mem_limit, -1, &t, &ti)) != 0) return r;
  if (level > (int)ti.depth) {
    vx_tree_free(t);
    return vx_cli_usage_error("bench", "--level %d: the tree's depth is %u", level, ti.depth);
  }
  float *pts = (float *)malloc((size_t)np * 3 * sizeof(float));
  if (!pts) {
    vx_tree_free(t);
    e.status = VX_ERR_NOMEM;
    snprintf(e.msg, sizeof e.msg, "out of memory for %llu points", (unsigned long long)np);
    return vx_cli_fail("bench", &e);
  }
  vx_surface_points_opts po;
  memset(&po, 0, sizeof po);
  po.struct_size = sizeof po;
  po.spread = (float)spread;
  po.seed = seed;
  po.shuffle = order;
  vx_status s = vx_tree_surface_points(t, &po, np, pts, &e);
  vx_sampler *sm = NULL;
  double t0 = vx_cli_now(), create_ms = 0.0;
  if (s == VX_OK) {
    vx_sampler_opts so;
    memset(&so, 0, sizeof so);
    so.struct_size = sizeof so;
    so.device = gpu ? VX_DEVICE_GPU : cpu ? VX_DEVICE_CPU : VX_DEVICE_AUTO;
    so.threads = (int)threads;
    s = vx_sampler_create(t, &so, &sm, &e);
    create_ms = (vx_cli_now() - t0) * 1e3;
  }
  vx_sampler_bench_stats b;
  memset(&b, 0, sizeof b);
  b.struct_size = sizeof b;
  if (s == VX_OK) {
    vx_cli_notes("bench", vx_sampler_notes(sm));
    vx_sample_opts op;
    memset(&op, 0, sizeof op);
    op.struct_size = sizeof op;
    op.lod = level < 0 ? VX_LOD_FINEST : VX_LOD_LEVEL;
    op.level = level;
    op.band_cache = band_cache;
    s = vx_sampler_bench(sm, &op, pts, np, (int)reps, &b, &e);
  }
  int rc = s == VX_OK ? 0 : vx_cli_fail("bench", &e);
  if (rc == 0) {
    const char *dev = b.used_gpu ? vx_gpu_name() : "CPU";
    double pn = (double)np, in_voxel = pn - (double)(b.flag_counts[0] + b.flag_counts[1] +
                                                     b.flag_counts[2] + b.flag_counts[5]);
    double copy_rate = b.ms_copy_median > 0.0 ? pn / (b.ms_copy_median * 1e-3) : 0.0;
    char lv[16];
    if (level < 0) snprintf(lv, sizeof lv, "%u", ti.depth);
    else snprintf(lv, sizeof lv, "%d", level);
    if (json)
      printf("{\"file\": \"%s\", \"device\": \"%s\", \"gpu\": %s, \"resolution\": %u, "
             "\"level\": %s, \"points\": %llu, \"order\": \"%s\", \"spread\": %g, \"reps\": %u, "
             "\"sampler_create_ms\": %.3f, \"ms_median\": %.4f, \"ms_min\": %.4f, "
             "\"points_per_s\": %.1f, \"points_per_s_with_copies\": %.1f, "
             "\"fraction_in_voxel\": %.4f, \"fraction_plane\": %.4f, \"fraction_near\": %.4f, "
             "\"fraction_far\": %.4f, \"regs_per_thread\": %d, \"band_cache_ms\": %.3f, "
             "\"band_cache_bytes\": %llu}\n",
             pos[0], dev, b.used_gpu ? "true" : "false", ti.resolution, lv,
             (unsigned long long)np, order ? "random" : "morton", spread > 0 ? spread : ti.band,
             reps, create_ms, b.ms_median, b.ms_min, b.points_per_s, copy_rate, in_voxel / pn,
             b.flag_counts[0] / pn, b.flag_counts[1] / pn, b.flag_counts[2] / pn,
             b.regs_per_thread, b.ms_setup, (unsigned long long)b.cache_bytes);
    else
      printf("device: %s; %s (%u^3), level %s, %llu points near the surface (spread %g voxels, "
             "%s order), sampler set-up %.1f ms\n"
             "%12s %12s %14s %16s %10s %8s %8s %8s\n"
             "%12.3f %12.3f %14.1f %16.1f %9.1f%% %7.1f%% %7.1f%% %7.1f%%\n",
             dev, pos[0], ti.resolution, lv, (unsigned long long)np, spread > 0 ? spread : ti.band,
             order ? "random" : "Morton", create_ms, "ms/run", "min ms", "Mpoints/s",
             b.used_gpu ? "Mpts/s +copies" : "", "in voxel", "plane", "near", "far",
             b.ms_median, b.ms_min, b.points_per_s * 1e-6, b.used_gpu ? copy_rate * 1e-6 : 0.0,
             100.0 * in_voxel / pn, 100.0 * b.flag_counts[0] / pn, 100.0 * b.flag_counts[1] / pn,
             100.0 * b.flag_counts[2] / pn);
  if (rc == 0 && !json && b.cache_bytes)
    printf("band cache: built in %.1f ms, %.2f MiB\n", b.ms_setup,
           (double)b.cache_bytes / (1024.0 * 1024.0));
  }
  vx_sampler_free(sm);
  free(pts);
  vx_tree_free(t);
  return rc;
}
