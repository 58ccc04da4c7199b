/* SPDX-License-Identifier: Apache-2.0 */
/* sample.c - `voxlod sample IN.svo POINTS OUT`: signed distances (or colours) at the points of a
 * file, through include/voxlod/sample.h: a sampler for a tree, tile by tile for a tiled file. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"

static const char *sample_help =
    "usage: voxlod sample IN.svo POINTS OUT [options]\n"
    "\n"
    "The tree's signed distance (world units, negative inside) at each point of POINTS, in its\n"
    "order, written to OUT: the rule of include/voxlod/sample.h (the trilinear field of the\n"
    "surface voxels, the nearest field's extrapolation beside them, +-band beyond it with the\n"
    "side found by walks; NaN for a point with a NaN or infinite coordinate).\n"
    "\n"
    "POINTS: numpy's .npy (float32 or float64, shape (N, 3)) or text: one point per line, x y z\n"
    "separated by spaces, tabs or commas (more columns are ignored when every line has them;\n"
    "'#' starts a comment line). '-' reads standard input.\n"
    "OUT: .npy (float32, shape (N,), or (N, 4) with --gradient; uint8 (N, 4) with --color), any\n"
    "other name text (a row per line). Written atomically; '-' is standard output.\n"
    "\n"
    "options:\n"
    "  --lod L          cut the tree at level L: nodes there answer with their planes (default:\n"
    "                   full detail)\n"
    "  --gradient       four columns: the distance and its gradient (d gx gy gz)\n"
    "  --color          the RGBA colour of the nearest cell instead (a coloured tree; at --lod L,\n"
    "                   the cells of level L); four uint8 columns\n"
    "  --gpu | --cpu    where distances are computed (default: the GPU when usable; a tiled file\n"
    "                   read tile by tile: the CPU unless --gpu). Colours are computed on the\n"
    "                   CPU.\n"
    "  --tiles          read a tiled file tile by tile even when it could be joined (up to\n"
    "                   16384^3 the same results; less memory). Finer files always are.\n"
    "  --cache SIZE     decoded tiles (and past 16384^3 windows) kept while reading tile by\n"
    "                   tile (default: 1G of tiles, windows while memory allows)\n"
    "  --threads N      CPU threads (default: all cores)\n"
    "  --mem-limit SIZE refuse trees (and point files) larger than SIZE (default: 80% of memory)\n"
    "  -q, --quiet      no report\n";

typedef struct sample_args {
  int lod, have_lod, gradient, color, gpu, cpu, tiles, cache_seen;
  uint32_t threads;
  uint64_t mem_limit, cache;
} sample_args;

static vx_status distances(vx_tree *t, vx_tiled_file *tf, const sample_args *a, const float *pts,
                           uint64_t n, float *dist, float *grad, uint8_t *flags,
                           vx_sample_stats *st, char *notes, size_t notes_cap, vx_error *e) {
  vx_sample_opts so;
  memset(&so, 0, sizeof so);
  so.struct_size = sizeof so;
  so.threads = (int)a->threads;
  so.lod = a->have_lod ? VX_LOD_LEVEL : VX_LOD_FINEST;
  so.level = a->lod;
  if (tf) {
    so.device = a->gpu ? VX_DEVICE_GPU : VX_DEVICE_CPU;
    vx_tiled_sample_opts to;
    memset(&to, 0, sizeof to);
    to.struct_size = sizeof to;
    to.cache_bytes = a->cache;
    return vx_tiled_file_sample(tf, &so, &to, pts, n, dist, grad, flags, st, e);
  }
  vx_sampler_opts sm;
  memset(&sm, 0, sizeof sm);
  sm.struct_size = sizeof sm;
  sm.device = a->gpu ? VX_DEVICE_GPU : a->cpu ? VX_DEVICE_CPU : VX_DEVICE_AUTO;
  sm.threads = (int)a->threads;
  vx_sampler *s = NULL;
  vx_status r = vx_sampler_create(t, &sm, &s, e);
  if (r != VX_OK) return r;
  snprintf(notes, notes_cap, "%s", vx_sampler_notes(s));
  r = vx_sampler_sample(s, &so, pts, n, dist, grad, flags, st, e);
  vx_sampler_free(s);
  return r;
}

static vx_status colors(vx_tree *t, vx_tiled_file *tf, const sample_args *a, const float *pts,
                        uint64_t n, uint8_t *rgba, vx_error *e) {
  const int level = a->have_lod ? a->lod : -1;
  if (!tf) return vx_tree_colors(t, pts, n, level, rgba, e);
  vx_tiled_sample_opts to;
  memset(&to, 0, sizeof to);
  to.struct_size = sizeof to;
  to.cache_bytes = a->cache;
  return vx_tiled_file_colors(tf, &to, pts, n, level, rgba, e);
}

static int parse(int argc, char **argv, sample_args *a, const char **pos) {
  memset(a, 0, sizeof *a);
  vx_opt o[12];
  int n = 0, npos;
  o[n] = vx_cli_opt("--lod", VX_OPT_INT, &a->lod, 0, 20, "a level of the tree");
  o[n++].seen = &a->have_lod;
  o[n++] = vx_cli_opt("--gradient", VX_OPT_FLAG, &a->gradient, 0, 0, NULL);
  o[n++] = vx_cli_opt("--color", VX_OPT_FLAG, &a->color, 0, 0, NULL);
  o[n++] = vx_cli_opt("--gpu", VX_OPT_FLAG, &a->gpu, 0, 0, NULL);
  o[n++] = vx_cli_opt("--cpu", VX_OPT_FLAG, &a->cpu, 0, 0, NULL);
  o[n++] = vx_cli_opt("--tiles", VX_OPT_FLAG, &a->tiles, 0, 0, NULL);
  o[n] = vx_cli_opt("--cache", VX_OPT_BYTES, &a->cache, 1, 9.2e18, "a size such as 512M");
  o[n++].seen = &a->cache_seen;
  o[n++] =
      vx_cli_opt("--threads", VX_OPT_U32, &a->threads, 0, 1024, "a thread count, 0: all cores");
  o[n++] = vx_cli_opt("--mem-limit", VX_OPT_BYTES, &a->mem_limit, 1048576.0, 9.2e18,
                      "a size such as 8G");
  o[n] = vx_cli_opt("--quiet", VX_OPT_FLAG, &vx_cli_quiet, 0, 0, NULL);
  o[n++].alias = "-q";
  memset(&o[n], 0, sizeof o[n]);
  int r = vx_cli_parse("sample", argc, argv, o, pos, 3, &npos, sample_help, NULL);
  if (r) return r < 0 ? -1 : r;
  if (npos < 3) return vx_cli_usage_error("sample", "needs IN.svo, POINTS and OUT");
  if (a->gpu && a->cpu) return vx_cli_usage_error("sample", "--gpu and --cpu exclude each other");
  if (a->color && (a->gradient || a->gpu))
    return vx_cli_usage_error("sample", "--color gives colours (on the CPU): not with %s",
                              a->gradient ? "--gradient" : "--gpu");
  return 0;
}

/* The report on stderr: what was written, where the time went, the points the rule flags. */
static void report(const char *out, const sample_args *a, const vx_tree_info *ti, int tiled,
                   uint64_t n, const uint8_t *flags, const vx_sample_stats *st, const double *t) {
  const char *what = a->color ? "colours" : a->gradient ? "distances and gradients" : "distances";
  char cut[48];
  if (a->have_lod) snprintf(cut, sizeof cut, "level %d of %u", a->lod, ti->depth);
  else snprintf(cut, sizeof cut, "the finest level (%u^3)", ti->resolution);
  fprintf(stderr, "%s: %s at %llu points, %s%s", out, what, (unsigned long long)n, cut,
          tiled ? ", tile by tile" : "");
  if (!a->color) fprintf(stderr, " on the %s", st->used_gpu ? "GPU" : "CPU");
  fprintf(stderr, "; read %.2fs, open %.2fs, %s %.2fs, write %.2fs\n", t[1] - t[0], t[2] - t[1],
          a->color ? "search" : "sample", t[3] - t[2], t[4] - t[3]);
  if (!flags) return;
  uint64_t far = 0, no_sign = 0, invalid = 0;
  for (uint64_t i = 0; i < n; i++) {
    far += (flags[i] & VX_SAMPLE_FAR) != 0;
    no_sign += (flags[i] & VX_SAMPLE_NO_SIGN) != 0;
    invalid += (flags[i] & VX_SAMPLE_INVALID) != 0;
  }
  if (far || invalid)
    fprintf(stderr, "%s: %llu points beyond the band (|d| a bound: band or distance to the box; "
            "%llu with an assumed sign), %llu with a NaN or infinite coordinate (NaN out)\n", out,
            (unsigned long long)far, (unsigned long long)no_sign, (unsigned long long)invalid);
}

int vx_cmd_sample(int argc, char **argv) {
  sample_args a;
  const char *pos[3];
  int rc = parse(argc, argv, &a, pos);
  if (rc) return rc < 0 ? 0 : rc;
  const char *in = pos[0], *points = pos[1], *out = pos[2];
  vx_error e;
  memset(&e, 0, sizeof e);
  const char *inputs[2] = {in, points};
  if (vx_check_output(out, inputs, 2, &e) != VX_OK) return vx_cli_fail("sample", &e);
  vx_cli_install_signals();
  double t[5];
  t[0] = vx_cli_now();
  float *pts = NULL;
  uint64_t n = 0;
  if (vx_points_read(points, a.mem_limit, &pts, &n, &e) != VX_OK) return vx_cli_fail("sample", &e);
  t[1] = vx_cli_now();
  vx_tree *tree = NULL;
  vx_tiled_file *tf = NULL;
  vx_tree_info ti;
  /* the whole tree, cut at --lod by the sampler: a tree loaded only down to a level lacks what
   * the rule reads below it (the children of a node without a usable plane, the voxels that
   * the thin rule re-signed), so its answers there are not the cut's */
  rc = vx_cli_open_any("sample", in, -1, a.mem_limit, a.tiles ? VX_CLI_TILED_PREFER : 0, &tree,
                       &tf, &ti);
  if (rc == 0 && a.have_lod && a.lod > (int)ti.depth)
    rc = vx_cli_usage_error("sample", "--lod %d is beyond %s's depth %u (levels 0..%u)", a.lod,
                            in, ti.depth, ti.depth);
  else if (rc == 0 && !tf && (a.tiles || a.cache_seen))
    rc = vx_cli_usage_error("sample", "%s applies to a tiled file read tile by tile",
                            a.tiles ? "--tiles" : "--cache");
  const uint32_t columns = a.color || a.gradient ? 4 : 1;
  float *vals = NULL, *grad = NULL;
  uint8_t *flags = NULL, *rgba = NULL;
  if (rc == 0) {
    if (a.color) rgba = (uint8_t *)malloc(n ? (size_t)n * 4 : 1);
    else {
      vals = (float *)malloc(n ? (size_t)n * columns * sizeof(float) : 4);
      grad = a.gradient ? (float *)malloc(n ? (size_t)n * 3 * sizeof(float) : 4) : NULL;
      flags = (uint8_t *)malloc(n ? (size_t)n : 1);
    }
    if (a.color ? !rgba : !vals || !flags || (a.gradient && !grad)) {
      e.status = VX_ERR_NOMEM;
      snprintf(e.msg, sizeof e.msg, "out of memory for the values of %llu points",
               (unsigned long long)n);
      rc = vx_cli_fail("sample", &e);
    }
  }
  vx_sample_stats st;
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  char notes[512] = "";
  t[2] = vx_cli_now();
  if (rc == 0) {
    vx_status s = a.color ? colors(tree, tf, &a, pts, n, rgba, &e)
                          : distances(tree, tf, &a, pts, n, vals, grad, flags, &st, notes,
                                      sizeof notes, &e);
    if (s != VX_OK) rc = vx_cli_fail("sample", &e);
  }
  t[3] = vx_cli_now();
  if (rc == 0 && grad) /* rows of d gx gy gz, in place from the back */
    for (uint64_t i = n; i-- > 0;) {
      const float d = vals[i];
      for (int k = 3; k >= 1; k--) vals[i * 4 + (uint64_t)k] = grad[i * 3 + (uint64_t)k - 1];
      vals[i * 4] = d;
    }
  if (rc == 0 && vx_values_write(out, vals, rgba, n, columns, &e) != VX_OK)
    rc = vx_cli_fail("sample", &e);
  t[4] = vx_cli_now();
  if (rc == 0 && !vx_cli_quiet) {
    vx_cli_notes("sample", notes);
    report(out, &a, &ti, tf != NULL, n, flags, &st, t);
  }
  vx_buffer_free(pts);
  free(vals);
  free(grad);
  free(flags);
  free(rgba);
  vx_tree_free(tree);
  if (tf) vx_tiled_file_close(tf);
  return rc;
}
