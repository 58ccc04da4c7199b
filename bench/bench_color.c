/* SPDX-License-Identifier: Apache-2.0 */
/* bench_color.c - what colour costs the GPU ray-marcher per frame (docs/BENCHMARKS.md).
 *
 *   bench_color IN.svo [--size WxH] [--frames N] [--views N] [--lod L|auto] [--rounds R]
 *
 * The same tree and orbit views, rendered grey (colour arrays dropped), coloured (the file's
 * colours, or one per cell from a hash of its index when the file is grey), coloured with holes
 * (one cell in 64 at alpha 0: the walk then reads the colour of every hit cell) and as albedo.
 * Each variant is a vx_gpu_bench (kernel time by CUDA events, median over the frames); the
 * variants alternate for R rounds so that clock drift falls on all of them, and the report gives
 * each one's median over the rounds and its ratio to grey. Exits 77 without a usable GPU.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "marcher/marcher.h"
#include "marcher/gpu_render.h"
#include "formats/svo_file.h"

static uint32_t hash_color(uint64_t i, uint32_t salt, int holes) {
  uint32_t h = (uint32_t)(i * 2654435761u) ^ salt;
  h ^= h >> 15;
  h *= 2246822519u;
  h ^= h >> 13;
  return (h & 0xffffffu) | (holes && h % 64u == 7u ? 0u : 255u) << 24;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static int usage(void) {
  fprintf(stderr, "usage: bench_color IN.svo [--size WxH] [--frames N] [--views N] "
                  "[--lod L|auto] [--rounds R]\n");
  return 2;
}

int main(int argc, char **argv) {
  const char *in = NULL;
  uint32_t w = 1920, h = 1080;
  int frames = 30, nviews = 8, rounds = 3, lod = -2;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--size") && i + 1 < argc) {
      if (sscanf(argv[++i], "%ux%u", &w, &h) != 2 || w == 0 || h == 0) return usage();
    } else if (!strcmp(argv[i], "--frames") && i + 1 < argc) {
      frames = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--views") && i + 1 < argc) {
      nviews = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) {
      rounds = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--lod") && i + 1 < argc) {
      i++;
      lod = !strcmp(argv[i], "auto") ? VX_LOD_AUTO : atoi(argv[i]);
    } else if (argv[i][0] != '-' && !in) {
      in = argv[i];
    } else {
      return usage();
    }
  }
  if (!in || frames < 1 || nviews < 1 || rounds < 1 || rounds > 64) return usage();
  vx_error e;
  vx_octree t;
  memset(&t, 0, sizeof t);
  if (vx_svo_read(in, NULL, &t, NULL, &e) != VX_OK) {
    fprintf(stderr, "bench_color: %s\n", e.msg);
    return 1;
  }
  const char *dev = vx_cuda_device_name();
  if (!dev) {
    fprintf(stderr, "bench_color: no usable CUDA device\n");
    vx_octree_free(&t);
    return 77;
  }
  if (lod == -2) lod = (int)t.depth;
  if (lod != VX_LOD_AUTO && (lod < 0 || lod > (int)t.depth)) {
    vx_octree_free(&t);
    return usage();
  }
  int own = t.node_color != NULL;
  /* the file's colours (or hashed ones), and the same with holes */
  uint32_t *nc[2], *vc[2];
  for (int k = 0; k < 2; k++) {
    nc[k] = (uint32_t *)malloc((t.node_count ? t.node_count : 1) * sizeof(uint32_t));
    vc[k] = (uint32_t *)malloc((t.voxel_count ? t.voxel_count : 1) * sizeof(uint32_t));
    if (!nc[k] || !vc[k]) {
      fprintf(stderr, "bench_color: out of memory\n");
      return 1;
    }
    for (uint64_t i = 0; i < t.node_count; i++)
      nc[k][i] = own && !k ? t.node_color[i] : hash_color(i, 0x51u, k);
    for (uint64_t i = 0; i < t.voxel_count; i++)
      vc[k][i] = own && !k && t.voxel_color ? t.voxel_color[i] : hash_color(i, 0x9e3u, k);
  }
  uint32_t *file_nc = t.node_color, *file_vc = t.voxel_color;
  printf("device: %s\ntree: %s, depth %u, %llu nodes, %llu voxels, colour: %s; %ux%u, lod %d, "
         "%d views, %d frames, %d rounds\n",
         dev, in, t.depth, (unsigned long long)t.node_count, (unsigned long long)t.voxel_count,
         own ? "the file's" : "hashed per cell", w, h, lod, nviews, frames, rounds);

  vx_camera *views = (vx_camera *)calloc((size_t)nviews, sizeof *views);
  for (int v = 0; v < nviews; v++)
    vx_march_orbit(&t, 30.0 + 360.0 * v / nviews, 20.0, 40.0, &views[v]);
  static const char *const names[4] = {"grey", "colour", "colour, 1/64 holes", "albedo"};
  double *ms = (double *)calloc((size_t)rounds * 4, sizeof *ms);
  int rc = 0;
  for (int r = 0; r < rounds && !rc; r++)
    for (int k = 0; k < 4 && !rc; k++) {
      t.node_color = k == 0 ? NULL : nc[k == 2];
      t.voxel_color = k == 0 ? NULL : vc[k == 2];
      vx_march_opts o;
      memset(&o, 0, sizeof o);
      o.width = w;
      o.height = h;
      o.lod = lod;
      o.shade = k == 3 ? VX_SHADE_ALBEDO : VX_SHADE_SMOOTH;
      o.cam = views[0];
      vx_gpu_bench_result res;
      if (vx_gpu_bench(&t, &o, views, nviews, frames, NULL, &res, &e) != VX_OK) {
        fprintf(stderr, "bench_color: %s: %s\n", names[k], e.msg);
        rc = 1;
        break;
      }
      ms[k * rounds + r] = res.ms_median;
      if (r == 0)
        printf("  %-20s regs %d, local %d B, %.1f visits/ray, %.1f %% hits, tree %.1f MiB\n",
               names[k], res.regs_per_thread, res.local_bytes, res.visits_per_ray,
               100.0 * res.hit_fraction, (double)res.tree_bytes / 1048576.0);
    }
  if (!rc) {
    double base = 0.0;
    for (int k = 0; k < 4; k++) {
      qsort(ms + k * rounds, (size_t)rounds, sizeof *ms, cmp_double);
      double m = ms[k * rounds + rounds / 2];
      if (k == 0) base = m;
      printf("%-20s %8.3f ms/frame (median of %d rounds, min %.3f, max %.3f)  %+.1f %%\n",
             names[k], m, rounds, ms[k * rounds], ms[k * rounds + rounds - 1],
             base > 0.0 ? 100.0 * (m / base - 1.0) : 0.0);
    }
  }
  t.node_color = file_nc;
  t.voxel_color = file_vc;
  for (int k = 0; k < 2; k++) {
    free(nc[k]);
    free(vc[k]);
  }
  free(ms);
  free(views);
  vx_octree_free(&t);
  return rc;
}
