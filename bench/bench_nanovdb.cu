/* SPDX-License-Identifier: Apache-2.0 */
/* bench_nanovdb.cu - the GPU benchmark: voxlod's marcher against NanoVDB's HDDA on the same
 * surface, the same rays, the same GPU, in the same run.
 *
 *   bench_nanovdb IN.svo [--size WxH] [--frames N] [--views K] [--out DIR] [--sweep] [--lods]
 *                 [--zoom Z] [--no-nanovdb] [--json FILE]
 *
 * Both marchers render K views of an orbit (azimuth 30 + 360 i / K degrees, elevation 20, fov
 * 40, at the distance that frames the model's bounding sphere, times --zoom) at full detail; each is warmed up on every view, then N frames are timed one by one with
 * CUDA events and the median is reported, with Mrays/s (primary rays) and the ratio. View 0 of
 * both is saved as DIR/voxlod.png and DIR/nanovdb.png, and their hit masks are compared.
 * --sweep also times kernel variants (block shape, persistent warps, register caps); --lods
 * times every LOD cut from D down to D-6 and auto. Prints; the library code it calls does not.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include "marcher/marcher.h"
#include "marcher/gpu_render.h"
#include "formats/svo_file.h"
#include "formats/png.h"
#include "bench/nvdb_compare.h"

static void usage(void) {
  fprintf(stderr,
          "usage: bench_nanovdb IN.svo [--size WxH] [--frames N] [--views K] [--out DIR]\n"
          "                     [--zoom Z] [--sweep] [--lods] [--no-nanovdb] [--json FILE]\n");
}

static int fail(const char *what, const vx_error *e) {
  fprintf(stderr, "bench_nanovdb: %s: %s\n", what, e->msg);
  return e->status == VX_ERR_NO_GPU ? 77 : 1;
}

static void print_result(const char *name, const vx_gpu_bench_result *r) {
  printf("%-28s L=%-4d %8.3f ms  (min %.3f)  %8.0f Mrays/s  %6.2f visits/ray  hits %5.1f%%  "
         "%3d regs %4d B local  tree %.1f MiB\n",
         name, r->level, r->ms_median, r->ms_min, r->mrays_per_s, r->visits_per_ray,
         100.0 * r->hit_fraction, r->regs_per_thread, r->local_bytes,
         (double)r->tree_bytes / 1048576.0);
  fflush(stdout);
}

int main(int argc, char **argv) {
  const char *in = NULL, *outdir = ".", *json = NULL;
  uint32_t w = 1920, h = 1080;
  int frames = 50, nviews = 8, sweep = 0, lods = 0, nanovdb = 1;
  double zoom = 1.0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--size") && i + 1 < argc) {
      if (sscanf(argv[++i], "%ux%u", &w, &h) != 2 || w == 0 || h == 0) return usage(), 2;
    } else if (!strcmp(argv[i], "--frames") && i + 1 < argc) {
      frames = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--zoom") && i + 1 < argc) {
      zoom = atof(argv[++i]);
      if (!(zoom > 0.0)) return usage(), 2;
    } else if (!strcmp(argv[i], "--views") && i + 1 < argc) {
      nviews = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--out") && i + 1 < argc) {
      outdir = argv[++i];
    } else if (!strcmp(argv[i], "--json") && i + 1 < argc) {
      json = argv[++i];
    } else if (!strcmp(argv[i], "--sweep")) {
      sweep = 1;
    } else if (!strcmp(argv[i], "--lods")) {
      lods = 1;
    } else if (!strcmp(argv[i], "--no-nanovdb")) {
      nanovdb = 0;
    } else if (argv[i][0] != '-' && !in) {
      in = argv[i];
    } else {
      return usage(), 2;
    }
  }
  if (!in || frames < 1 || nviews < 1) return usage(), 2;

  vx_error e;
  vx_octree t;
  memset(&t, 0, sizeof t);
  if (vx_svo_read(in, NULL, &t, NULL, &e) != VX_OK) return fail(in, &e);
  const char *dev = vx_cuda_device_name();
  if (!dev) {
    fprintf(stderr, "bench_nanovdb: no usable CUDA device\n");
    vx_octree_free(&t);
    return 77;
  }
  printf("device: %s\nzoom %.2f (eye distance factor)\ntree: %s, depth %u (%u^3), %llu nodes, %llu voxels, %ux%u, %d frames, "
         "%d views\n",
         dev, zoom, in, t.depth, 1u << t.depth, (unsigned long long)t.node_count,
         (unsigned long long)t.voxel_count, w, h, frames, nviews);

  vx_camera *views = (vx_camera *)calloc((size_t)nviews, sizeof *views);
  for (int v = 0; v < nviews; v++) {
    vx_march_orbit(&t, 30.0 + 360.0 * v / nviews, 20.0, 40.0, &views[v]);
    for (int i = 0; i < 3; i++) /* --zoom: the eye moves towards the target */
      views[v].eye[i] = views[v].target[i] + zoom * (views[v].eye[i] - views[v].target[i]);
  }
  vx_march_opts o;
  memset(&o, 0, sizeof o);
  o.width = w;
  o.height = h;
  o.lod = (int)t.depth;
  o.shade = VX_SHADE_SMOOTH;
  o.cam = views[0];

  int rc = 0;
  vx_gpu_bench_result ours;
  if (vx_gpu_bench(&t, &o, views, nviews, frames, NULL, &ours, &e) != VX_OK) {
    rc = fail("voxlod GPU bench", &e);
    goto done;
  }
  print_result("voxlod default (persistent)", &ours);

  if (sweep) {
    struct { const char *name; uint32_t bw, bh; int sched, cap, no_cull; } vs[] = {
        {"default, no culling", 0, 0, VX_GPU_DEFAULT, 0, 1},
        {"tiled 16x8", 16, 8, VX_GPU_TILED, 0, 0},
        {"tiled 8x8", 8, 8, VX_GPU_TILED, 0, 0},   {"tiled 32x4", 32, 4, VX_GPU_TILED, 0, 0},
        {"tiled 8x4", 8, 4, VX_GPU_TILED, 0, 0},     {"tiled 16x16", 16, 16, VX_GPU_TILED, 0, 0},
        {"tiled 16x8 cap 64", 16, 8, VX_GPU_TILED, 64, 0},
        {"tiled 16x8 cap 48", 16, 8, VX_GPU_TILED, 48, 0},
        {"tiled 16x8 cap 40", 16, 8, VX_GPU_TILED, 40, 0},
        {"persistent 128", 128, 1, VX_GPU_PERSISTENT, 0, 0},
        {"persistent 128 cap 64", 128, 1, VX_GPU_PERSISTENT, 64, 0},
        {"default again (spread)", 0, 0, VX_GPU_DEFAULT, 0, 0}};
    for (size_t k = 0; k < sizeof vs / sizeof vs[0]; k++) {
      vx_gpu_config cfg;
      memset(&cfg, 0, sizeof cfg);
      cfg.block_w = vs[k].bw;
      cfg.block_h = vs[k].bh;
      cfg.schedule = vs[k].sched;
      cfg.reg_cap = vs[k].cap;
      vx_march_opts ov = o;
      ov.no_cull = vs[k].no_cull;
      vx_gpu_bench_result r;
      if (vx_gpu_bench(&t, &ov, views, nviews, frames, &cfg, &r, &e) != VX_OK) {
        fprintf(stderr, "%s: %s\n", vs[k].name, e.msg);
        continue;
      }
      print_result(vs[k].name, &r);
    }
  }

  if (lods) {
    int cuts[9], ncuts = 0;
    for (int L = (int)t.depth; L >= 0 && L >= (int)t.depth - 6; L--) cuts[ncuts++] = L;
    cuts[ncuts++] = VX_LOD_AUTO;
    for (int k = 0; k < ncuts; k++) {
      vx_march_opts ol = o;
      ol.lod = cuts[k];
      vx_gpu_bench_result r;
      if (vx_gpu_bench(&t, &ol, views, nviews, frames, NULL, &r, &e) != VX_OK) {
        fprintf(stderr, "lod %d: %s\n", ol.lod, e.msg);
        continue;
      }
      print_result(ol.lod == VX_LOD_AUTO ? "lod auto" : "lod cut", &r);
    }
  }

  {
    vx_march_image a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    char path[4096];
    if (vx_march_image_alloc(&a, w, h, 0, &e) != VX_OK || vx_march_image_alloc(&b, w, h, 0, &e) != VX_OK) {
      rc = fail("images", &e);
      goto images_done;
    }
    if (vx_render_gpu(&t, &o, &a, &e) != VX_OK) {
      rc = fail("voxlod render", &e);
      goto images_done;
    }
    snprintf(path, sizeof path, "%s/voxlod.png", outdir);
    if (vx_png_write(path, a.rgb, w, h, &e) != VX_OK) fprintf(stderr, "%s\n", e.msg);
    if (nanovdb) {
      vx_nvdb *g = NULL;
      vx_nvdb_stats ns;
      double nv_ms = 0.0, nv_hits = 0.0;
      if (vx_nvdb_create(&t, &g, &ns, &e) != VX_OK) {
        rc = fail("NanoVDB grid", &e);
        goto images_done;
      }
      printf("nanovdb grid: %llu voxels, %llu active values, %.1f MiB, built in %.1f s\n",
             (unsigned long long)ns.voxels_written, (unsigned long long)ns.active_values,
             (double)ns.grid_bytes / 1048576.0, ns.build_seconds);
      if (vx_nvdb_bench(g, &t, &o, views, nviews, frames, &nv_ms, &nv_hits, &e) != VX_OK ||
          vx_nvdb_render_gpu(g, &t, &o, &b, &e) != VX_OK) {
        rc = fail("NanoVDB", &e);
        vx_nvdb_free(g);
        goto images_done;
      }
      snprintf(path, sizeof path, "%s/nanovdb.png", outdir);
      if (vx_png_write(path, b.rgb, w, h, &e) != VX_OK) fprintf(stderr, "%s\n", e.msg);
      size_t n = (size_t)w * h, both = 0, only_ours = 0, only_nv = 0, near = 0;
      for (size_t i = 0; i < n; i++) {
        int ha = isfinite(a.depth[i]), hb = isfinite(b.depth[i]);
        both += ha && hb;
        only_ours += ha && !hb;
        only_nv += !ha && hb;
        if (ha && hb && fabs(a.depth[i] - b.depth[i]) <= 2.0 * t.xf.scale) near++;
      }
      double nv_mrays = (double)n / (nv_ms * 1e3);
      printf("nanovdb HDDA zero crossing    %8.3f ms            %8.0f Mrays/s  hits %5.1f%%\n",
             nv_ms, nv_mrays, 100.0 * nv_hits);
      printf("view 0 hit masks: %zu both, %zu voxlod only, %zu nanovdb only (%.3f%% of pixels "
             "differ); depth within 2 voxels on %.2f%% of common hits\n",
             both, only_ours, only_nv, 100.0 * (double)(only_ours + only_nv) / (double)n,
             both ? 100.0 * (double)near / (double)both : 0.0);
      printf("RESULT device=\"%s\" size=%ux%u depth=%u voxlod_ms=%.4f voxlod_mrays=%.1f "
             "visits_per_ray=%.2f nanovdb_ms=%.4f nanovdb_mrays=%.1f ratio=%.2f\n",
             ours.device, w, h, t.depth, ours.ms_median, ours.mrays_per_s, ours.visits_per_ray,
             nv_ms, nv_mrays, ours.mrays_per_s / nv_mrays);
      if (json) {
        FILE *f = fopen(json, "w");
        if (f) {
          fprintf(f,
                  "{\"device\": \"%s\", \"input\": \"%s\", \"width\": %u, \"height\": %u, "
                  "\"depth\": %u, \"frames\": %d, \"views\": %d,\n \"voxlod\": {\"ms_median\": "
                  "%.5f, \"mrays_per_s\": %.2f, \"visits_per_ray\": %.3f, \"hit_fraction\": "
                  "%.4f, \"tree_bytes\": %llu, \"device_used_bytes\": %llu},\n \"nanovdb\": "
                  "{\"ms_median\": %.5f, \"mrays_per_s\": %.2f, \"hit_fraction\": %.4f, "
                  "\"grid_bytes\": %llu, \"build_seconds\": %.2f},\n \"ratio\": %.3f, "
                  "\"hit_mask_differ_fraction\": %.6f}\n",
                  ours.device, in, w, h, t.depth, frames, nviews, ours.ms_median,
                  ours.mrays_per_s, ours.visits_per_ray, ours.hit_fraction,
                  (unsigned long long)ours.tree_bytes, (unsigned long long)ours.device_used_bytes,
                  nv_ms, nv_mrays, nv_hits, (unsigned long long)ns.grid_bytes, ns.build_seconds,
                  ours.mrays_per_s / nv_mrays, (double)(only_ours + only_nv) / (double)n);
          fclose(f);
        }
      }
      vx_nvdb_free(g);
    }
  images_done:
    vx_march_image_free(&a);
    vx_march_image_free(&b);
  }
done:
  free(views);
  vx_octree_free(&t);
  return rc;
}
