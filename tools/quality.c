/* quality.c - image error of one tree against another (issue 4's quality measure), and the
 * `voxlod compare` command.
 *
 * Both trees are rendered from the same orbit views at the same size; the error is the RGB PSNR
 * over all pixels and the fraction of pixels whose depth differs by more than one finest voxel of
 * the reference tree (a pixel that one image hits and the other misses counts as differing).
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/png.h"
#include "formats/svo_file.h"
#include "tools/cli.h"

vx_status vx_cli_quality(const vx_octree *a, const vx_octree *b, const vx_view_args *va, int views,
                         vx_quality *q, vx_error *err) {
  memset(q, 0, sizeof *q);
  vx_march_image ia, ib;
  memset(&ia, 0, sizeof ia);
  memset(&ib, 0, sizeof ib);
  vx_status s = vx_march_image_alloc(&ia, va->ro.width, va->ro.height, 0, err);
  if (s == VX_OK) s = vx_march_image_alloc(&ib, va->ro.width, va->ro.height, 0, err);
  double sq = 0, voxel = a->xf.scale;
  uint64_t bad = 0, mismatch = 0, n = 0;
  for (int v = 0; v < views && s == VX_OK; v++) {
    vx_view_args w = *va;
    w.azimuth = va->azimuth + 360.0 * v / views;
    vx_march_opts o = va->ro;
    if (o.lod == -2 || o.lod > (int)a->depth) o.lod = (int)a->depth;
    vx_view_args_camera(&w, a, &o.cam);
    int gpu;
    s = vx_cli_render(a, &o, va, &ia, &gpu, err);
    if (s == VX_OK) s = vx_cli_render(b, &o, va, &ib, &gpu, err);
    if (s != VX_OK) break;
    uint64_t px = (uint64_t)o.width * o.height;
    for (uint64_t p = 0; p < px; p++) {
      for (int c = 0; c < 3; c++) {
        double d = (double)ia.rgb[3 * p + c] - (double)ib.rgb[3 * p + c];
        sq += d * d;
      }
      int ha = isfinite(ia.depth[p]), hb = isfinite(ib.depth[p]);
      if (ha != hb) mismatch++;
      if (ha != hb || (ha && fabs((double)ia.depth[p] - ib.depth[p]) > voxel)) bad++;
    }
    n += px;
  }
  vx_march_image_free(&ia);
  vx_march_image_free(&ib);
  if (s != VX_OK) return s;
  double mse = sq / (3.0 * (double)n);
  q->psnr_db = mse > 0 ? 10.0 * log10(255.0 * 255.0 / mse) : INFINITY;
  q->depth_bad_frac = (double)bad / (double)n;
  q->hit_mismatch_frac = (double)mismatch / (double)n;
  q->pixels = n;
  return VX_OK;
}

static const char *compare_help =
    "usage: voxlod compare FULL.svo OTHER.svo [options]\n"
    "\n"
    "Renders both trees from the same orbit views and prints OTHER's image error against FULL:\n"
    "RGB PSNR and the fraction of pixels whose depth differs by more than one finest voxel,\n"
    "with each tree's memory.\n"
    "\n"
    "options:\n"
    "  --views N           orbit views (default 4)\n";

int vx_cmd_compare(int argc, char **argv) {
  for (int i = 2; i < argc; i++)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(compare_help, stdout);
      fputs(vx_view_args_help, stdout);
      return 0;
    }
  const char *pa = NULL, *pb = NULL;
  uint32_t views = 4;
  vx_view_args va;
  vx_view_args_init(&va);
  va.ro.width = 400;
  va.ro.height = 300;
  for (int i = 2; i < argc; i++) {
    if (strcmp(argv[i], "--views") == 0) {
      if (i + 1 >= argc || vx_parse_u32(argv[i + 1], &views) || views < 1 || views > 64)
        return vx_cli_usage_error("compare", "--views must be 1..64");
      i++;
      continue;
    }
    int r = vx_view_args_parse(&va, argc, argv, &i, "compare");
    if (r < 0) return 2;
    if (r > 0) continue;
    if (argv[i][0] == '-' && argv[i][1])
      return vx_cli_usage_error("compare", "unknown option '%s'", argv[i]);
    if (!pa) pa = argv[i];
    else if (!pb) pb = argv[i];
    else return vx_cli_usage_error("compare", "unexpected argument '%s'", argv[i]);
  }
  if (!pa || !pb) return vx_cli_usage_error("compare", "needs FULL.svo and OTHER.svo");
  vx_error e;
  memset(&e, 0, sizeof e);
  vx_octree a, b;
  memset(&a, 0, sizeof a);
  memset(&b, 0, sizeof b);
  vx_svo_file_info fa, fb;
  if (vx_cli_read(pa, -1, &a, &fa, &e) != VX_OK) return vx_cli_fail("compare", &e);
  if (vx_cli_read(pb, -1, &b, &fb, &e) != VX_OK) {
    vx_octree_free(&a);
    return vx_cli_fail("compare", &e);
  }
  vx_quality q;
  int rc = 0;
  if (vx_cli_quality(&a, &b, &va, (int)views, &q, &e) != VX_OK) {
    rc = vx_cli_fail("compare", &e);
  } else {
    uint64_t ma = a.node_count * 16 + a.voxel_count * 8, mb = b.node_count * 16 + b.voxel_count * 8;
    printf("%s: %llu B in memory, %llu B on disk\n", pa, (unsigned long long)ma,
           (unsigned long long)fa.file_bytes);
    printf("%s: %llu B in memory, %llu B on disk (%.2fx less memory)\n", pb, (unsigned long long)mb,
           (unsigned long long)fb.file_bytes, (double)ma / (double)(mb ? mb : 1));
    printf("image error over %u views of %ux%u: PSNR %.2f dB, depth off by > 1 voxel on %.3f%% of "
           "pixels (hit/miss differs on %.3f%%)\n",
           views, va.ro.width, va.ro.height, q.psnr_db, 100.0 * q.depth_bad_frac,
           100.0 * q.hit_mismatch_frac);
  }
  vx_octree_free(&a);
  vx_octree_free(&b);
  return rc;
}
