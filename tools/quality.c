/* SPDX-License-Identifier: Apache-2.0 */
/* quality.c - image error of one tree against another, and the `voxlod compare` command.
 *
 * Both trees are rendered from the same orbit views (framed on the reference) at the same size;
 * the error is the RGB PSNR over all pixels and the fraction of pixels whose depth differs by more
 * than one finest voxel of the reference tree (a pixel that one image hits and the other misses
 * counts as differing).
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/quality.h"

static vx_status renderer(const vx_tree *t, const vx_view_args *va, vx_renderer **r,
                          vx_error *err) {
  vx_renderer_opts o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.device = vx_view_args_device(va);
  o.threads = (int)va->threads;
  vx_status s = vx_renderer_create(t, &o, r, err);
  if (s == VX_OK) vx_cli_notes("compare", vx_renderer_notes(*r));
  return s;
}

vx_status vx_cli_quality(const vx_tree *a, const vx_tree *b, const vx_view_args *va, int views,
                         vx_quality *q, vx_error *err) {
  memset(q, 0, sizeof *q);
  vx_tree_info ai;
  memset(&ai, 0, sizeof ai);
  ai.struct_size = sizeof ai;
  vx_tree_get_info(a, &ai);
  size_t px = (size_t)va->size[0] * va->size[1];
  uint8_t *ra = (uint8_t *)malloc(px * 3), *rb = (uint8_t *)malloc(px * 3);
  float *da = (float *)malloc(px * sizeof(float)), *db = (float *)malloc(px * sizeof(float));
  vx_renderer *ga = NULL, *gb = NULL;
  vx_status s = ra && rb && da && db ? VX_OK : VX_ERR_NOMEM;
  if (s != VX_OK) {
    err->status = s;
    snprintf(err->msg, sizeof err->msg, "cannot allocate two %ux%u images", va->size[0],
             va->size[1]);
  }
  if (s == VX_OK) s = renderer(a, va, &ga, err);
  if (s == VX_OK) s = renderer(b, va, &gb, err);
  double sq = 0, voxel = ai.scale;
  uint64_t bad = 0, mismatch = 0, n = 0;
  for (int v = 0; v < views && s == VX_OK; v++) {
    vx_render_opts o;
    vx_view_args_render(va, a, NULL, 360.0 * v / views, &o);
    s = vx_render(ga, &o, ra, da, NULL, err);
    if (s == VX_OK) s = vx_render(gb, &o, rb, db, NULL, err);
    if (s != VX_OK) break;
    for (size_t p = 0; p < px; p++) {
      for (int c = 0; c < 3; c++) {
        double d = (double)ra[3 * p + c] - (double)rb[3 * p + c];
        sq += d * d;
      }
      int ha = da[p] < INFINITY, hb = db[p] < INFINITY;
      if (ha != hb) mismatch++;
      if (ha != hb || (ha && fabs((double)da[p] - db[p]) > voxel)) bad++;
    }
    n += px;
  }
  vx_renderer_free(ga);
  vx_renderer_free(gb);
  free(ra);
  free(rb);
  free(da);
  free(db);
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
    "Renders both trees from the same orbit views (framed on FULL) and prints OTHER's image error\n"
    "against FULL: RGB PSNR and the fraction of pixels whose depth differs by more than one\n"
    "finest voxel of FULL, with each tree's memory. Each tree is drawn at its own finest level\n"
    "unless --lod is given (which both trees must have).\n"
    "\n"
    "options:\n"
    "  --views N           orbit views (default 4)\n";

int vx_cmd_compare(int argc, char **argv) {
  uint32_t views = 4;
  vx_view_args va;
  vx_view_args_init(&va);
  va.size[0] = 400;
  va.size[1] = 300;
  vx_opt o[VX_VIEW_OPTS + 2];
  int n = vx_view_opts(&va, o, 0);
  o[n++] = vx_cli_opt("--views", VX_OPT_U32, &views, 1, 64, "a count");
  memset(&o[n], 0, sizeof o[n]);
  const char *pos[2];
  int npos;
  int r = vx_cli_parse("compare", argc, argv, o, pos, 2, &npos, compare_help, vx_view_args_help);
  if (r) return r < 0 ? 0 : r;
  if (npos < 2) return vx_cli_usage_error("compare", "needs FULL.svo and OTHER.svo");
  if ((r = vx_view_args_check(&va, "compare")) != 0) return r;
  vx_error e;
  memset(&e, 0, sizeof e);
  vx_tree *a = NULL, *b = NULL;
  if (vx_cli_load(pos[0], &va, &a, &e) != VX_OK) return vx_cli_fail("compare", &e);
  if (vx_cli_load(pos[1], &va, &b, &e) != VX_OK) {
    vx_tree_free(a);
    return vx_cli_fail("compare", &e);
  }
  vx_tree_info ia, ib;
  memset(&ia, 0, sizeof ia);
  memset(&ib, 0, sizeof ib);
  ia.struct_size = ib.struct_size = sizeof ia;
  vx_tree_get_info(a, &ia);
  vx_tree_get_info(b, &ib);
  int rc = 0;
  if (va.lod >= 0 && (va.lod > (int)ia.depth || va.lod > (int)ib.depth)) {
    rc = vx_cli_usage_error("compare", "--lod %d is beyond the depth of %s (%u)", va.lod,
                            va.lod > (int)ia.depth ? pos[0] : pos[1],
                            va.lod > (int)ia.depth ? ia.depth : ib.depth);
  } else {
    vx_quality q;
    if (vx_cli_quality(a, b, &va, (int)views, &q, &e) != VX_OK) {
      rc = vx_cli_fail("compare", &e);
    } else {
      char what[128];
      if (va.lod == -1) snprintf(what, sizeof what, "both at auto LOD");
      else if (va.lod >= 0) snprintf(what, sizeof what, "both at level %d", va.lod);
      else snprintf(what, sizeof what, "each at its finest level (%u and %u)", ia.depth, ib.depth);
      char psnr[48];
      if (isfinite(q.psnr_db)) snprintf(psnr, sizeof psnr, "%.2f dB", q.psnr_db);
      else snprintf(psnr, sizeof psnr, "infinite (identical images)");
      printf("%s: %llu B in memory, %llu B on disk\n", pos[0],
             (unsigned long long)ia.memory_bytes, (unsigned long long)ia.file_bytes);
      printf("%s: %llu B in memory, %llu B on disk (%.2fx less memory)\n", pos[1],
             (unsigned long long)ib.memory_bytes, (unsigned long long)ib.file_bytes,
             (double)ia.memory_bytes / (double)(ib.memory_bytes ? ib.memory_bytes : 1));
      printf("image error over %u views of %ux%u, %s: PSNR %s, depth off by > 1 voxel on "
             "%.3f%% of pixels (hit/miss differs on %.3f%%)\n", views, va.size[0], va.size[1],
             what, psnr, 100.0 * q.depth_bad_frac, 100.0 * q.hit_mismatch_frac);
    }
  }
  vx_tree_free(a);
  vx_tree_free(b);
  return rc;
}
