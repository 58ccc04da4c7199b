/* SPDX-License-Identifier: Apache-2.0 */
/* stats.c - `voxlod stats`: memory per resolution, from the coarsest level to the finest.
 *
 * For each level l (resolution 2^l) the table shows what rendering with the tree cut at l costs:
 * the nodes (or, at the finest level, the surface voxels) present there, their topology, LOD and
 * field bytes, the compressed bytes of that level's file section, the cumulative memory of levels
 * 0..l (what `render --lod l` uploads) and that memory per cell of level l. For comparison it
 * gives a plain scalar-field SVO with 8 float corners per cell at that resolution (8-byte nodes
 * above, 32 bytes per cell) and a dense float grid of (2^l + 1)^3 corner values. A coloured tree
 * adds two columns: the RGBA8 colours of the level's cells in memory and their compressed bytes
 * on disk (the colour sections of the file), and the plot adds rendering memory with colour.
 * The rows come from vx_tree_get_level, or for a tiled file from vx_tiled_file_get_level (the
 * top tree and the tiles' headers, at any depth up to 2^20, without loading a tile).
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"
#include "tools/quality.h"

static const char *stats_help =
    "usage: voxlod stats IN.svo [options]\n"
    "\n"
    "Prints a row per level (resolution 2^l, coarsest first): cells, pruned leaves, bytes for\n"
    "topology, LOD planes and the scalar field in memory, bytes on disk (zstd), the memory needed\n"
    "to render at that level, bytes per cell, and for comparison a scalar-field SVO with 8 float\n"
    "corners per cell and a dense float grid. A coloured tree also gets its colours' bytes in\n"
    "memory (4 per cell) and on disk, per level.\n"
    "\n"
    "options:\n"
    "  --plot FILE.svg   also draw memory against resolution\n"
    "  --error E         also prune a copy at max error E (finest voxels) and report its memory and\n"
    "                    its image error against the full tree (PSNR, depth > 1 voxel)\n"
    "  --views N         views for --error's image comparison (default 4)\n"
    "  --json            one JSON document on stdout instead of the table\n"
    "  --tiles           a tiled file: also a line per tile (cell, voxels, nodes, bytes)\n"
    "A tiled file (any resolution up to 1048576^3) is read tile by tile: its levels are the top\n"
    "tree's and the sums of its tiles' headers; no tile is loaded.\n"
    "with --error, the view options of 'voxlod render' apply to the comparison:\n";

typedef struct rows {
  uint32_t depth;
  int color;
  vx_level_stats r[21]; /* up to 2^20: a tiled tree */
} rows;

static void make_rows(const vx_tree *t, rows *rs) {
  vx_tree_info ti;
  memset(&ti, 0, sizeof ti);
  ti.struct_size = sizeof ti;
  vx_tree_get_info(t, &ti);
  rs->depth = ti.depth;
  rs->color = ti.has_color != 0;
  for (uint32_t l = 0; l <= ti.depth; l++) {
    memset(&rs->r[l], 0, sizeof rs->r[l]);
    rs->r[l].struct_size = sizeof rs->r[l];
    vx_tree_get_level(t, l, &rs->r[l]);
  }
}

/* The rows of a tiled file, from its top tree and its tiles' headers (no tile is loaded). */
static vx_status tiled_rows(vx_tiled_file *f, rows *rs, vx_tree_info *ti, vx_error *e) {
  memset(ti, 0, sizeof *ti);
  ti->struct_size = sizeof *ti;
  vx_tiled_file_get_info(f, ti);
  rs->depth = ti->depth;
  rs->color = ti->has_color != 0;
  for (uint32_t l = 0; l <= ti->depth; l++) {
    memset(&rs->r[l], 0, sizeof rs->r[l]);
    rs->r[l].struct_size = sizeof rs->r[l];
    vx_status s = vx_tiled_file_get_level(f, l, &rs->r[l], e);
    if (s != VX_OK) return s;
  }
  return VX_OK;
}

/* One line per tile (or a JSON array of them). */
static void print_tiles(vx_tiled_file *f, uint64_t n, int json) {
  char b[2][24];
  if (json) printf(",\n  \"tiles\": [\n");
  else printf("\n%-7s %-17s %14s %14s %11s %8s\n", "tile", "cell", "voxels", "nodes", "disk",
              "B/voxel");
  for (uint64_t i = 0; i < n; i++) {
    vx_tile_info t;
    memset(&t, 0, sizeof t);
    t.struct_size = sizeof t;
    vx_tiled_file_get_tile(f, i, &t);
    if (json) {
      printf("    {\"tile\": %llu, \"cell\": [%u, %u, %u], \"voxels\": %llu, \"nodes\": %llu, "
             "\"disk_bytes\": %llu}%s\n", (unsigned long long)i, t.cell[0], t.cell[1], t.cell[2],
             (unsigned long long)t.voxel_count, (unsigned long long)t.node_count,
             (unsigned long long)t.file_bytes, i + 1 == n ? "" : ",");
    } else {
      snprintf(b[0], sizeof b[0], "%u,%u,%u", t.cell[0], t.cell[1], t.cell[2]);
      vx_format_bytes((double)t.file_bytes, b[1], 24);
      printf("%-7llu %-17s %14llu %14llu %11s %8.2f\n", (unsigned long long)i, b[0],
             (unsigned long long)t.voxel_count, (unsigned long long)t.node_count, b[1],
             t.voxel_count ? (double)t.file_bytes / (double)t.voxel_count : 0.0);
    }
  }
  if (json) printf("  ]");
}

static void print_table(const vx_tree_info *tip, const rows *rs) {
  char b[8][24];
  const vx_tree_info ti = *tip;
  printf("%-5s %7s %12s %10s %11s %11s %11s %11s %12s %8s %12s %12s", "level", "res", "cells",
         "leaves", "topology", "lod", "field", "disk", "render<=l", "B/cell", "float8-svo",
         "dense-f32");
  if (rs->color) printf(" %11s %11s", "colour", "colour-disk");
  printf("\n");
  for (uint32_t l = 0; l <= rs->depth; l++) {
    const vx_level_stats *r = &rs->r[l];
    vx_format_bytes((double)r->topology_bytes, b[0], 24);
    vx_format_bytes((double)r->lod_bytes, b[1], 24);
    vx_format_bytes((double)r->field_bytes, b[2], 24);
    vx_format_bytes((double)r->disk_bytes, b[3], 24);
    vx_format_bytes((double)r->render_bytes, b[4], 24);
    vx_format_bytes((double)r->float8_bytes, b[5], 24);
    vx_format_bytes((double)r->dense_bytes, b[6], 24);
    printf("%-5u %6llu^3 %12llu %10llu %11s %11s %11s %11s %12s %8.2f %12s %12s", l,
           (unsigned long long)1 << l, (unsigned long long)r->cells,
           (unsigned long long)r->leaves, b[0], b[1], b[2], b[3], b[4],
           r->cells ? (double)r->render_bytes / (double)r->cells : 0.0, b[5], b[6]);
    if (rs->color) {
      vx_format_bytes((double)r->color_bytes, b[0], 24);
      vx_format_bytes((double)r->color_disk_bytes, b[1], 24);
      printf(" %11s %11s", b[0], b[1]);
    }
    printf("\n");
  }
  const vx_level_stats *f = &rs->r[rs->depth];
  uint64_t node_bytes = ti.node_count * 16;
  vx_format_bytes((double)ti.memory_bytes, b[0], 24);
  vx_format_bytes((double)ti.file_bytes, b[1], 24);
  printf("total: %s in memory (%llu nodes x 16 B + %llu voxels x 8 B), %s on disk\n", b[0],
         (unsigned long long)ti.node_count, (unsigned long long)ti.voxel_count, b[1]);
  if (ti.voxel_count) {
    double nv = (double)ti.voxel_count;
    printf("per surface voxel: %.2f B topology+LOD (nodes), %.2f B field, %.2f B in memory, "
           "%.2f B on disk (float8 SVO: %.2f B)\n",
           (double)node_bytes / nv, (double)f->field_bytes / nv, (double)ti.memory_bytes / nv,
           (double)ti.file_bytes / nv, (double)f->float8_bytes / nv);
  }
  if (rs->color) {
    uint64_t disk = 0;
    for (uint32_t l = 0; l <= rs->depth; l++) disk += rs->r[l].color_disk_bytes;
    vx_format_bytes((double)ti.color_bytes, b[0], 24);
    vx_format_bytes((double)disk, b[1], 24);
    printf("colour: %s in memory (4 B per node and voxel), %s on disk", b[0], b[1]);
    if (ti.voxel_count)
      printf(" (%.2f B per surface voxel)", (double)disk / (double)ti.voxel_count);
    printf("\n");
  }
  if (ti.prune_error > 0) printf("pruned at max error %g voxels\n", ti.prune_error);
  if (ti.tile_depth)
    printf("tiled: %llu tiles of %u^3 under %u top levels (the top levels' bytes on disk are the "
           "directory's)\n", (unsigned long long)ti.tile_count, 1u << ti.tile_depth,
           ti.depth - ti.tile_depth);
}

/* A number for JSON: null where it is not finite (JSON has no infinity or NaN). */
static void json_num(char *buf, size_t n, const char *fmt, double v) {
  if (isfinite(v)) snprintf(buf, n, fmt, v);
  else snprintf(buf, n, "null");
}

static void print_json_levels(const rows *rs) {
  printf("[\n");
  for (uint32_t l = 0; l <= rs->depth; l++) {
    const vx_level_stats *r = &rs->r[l];
    printf("    {\"level\": %u, \"res\": %llu, \"cells\": %llu, \"leaves\": %llu, "
           "\"topology_bytes\": %llu, \"lod_bytes\": %llu, \"field_bytes\": %llu, "
           "\"disk_bytes\": %llu, \"render_bytes\": %llu, \"float8_svo_bytes\": %llu, "
           "\"dense_bytes\": %llu, \"color_bytes\": %llu, \"color_disk_bytes\": %llu}%s\n",
           l, (unsigned long long)1 << l, (unsigned long long)r->cells,
           (unsigned long long)r->leaves, (unsigned long long)r->topology_bytes,
           (unsigned long long)r->lod_bytes, (unsigned long long)r->field_bytes,
           (unsigned long long)r->disk_bytes, (unsigned long long)r->render_bytes,
           (unsigned long long)r->float8_bytes, (unsigned long long)r->dense_bytes,
           (unsigned long long)r->color_bytes, (unsigned long long)r->color_disk_bytes,
           l == rs->depth ? "" : ",");
  }
  printf("  ]");
}

/* ---- the plot: an SVG built in memory, written through the library's output rules ---------- */

typedef struct sbuf {
  char *p;
  size_t n, cap;
  int failed;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) {
  if (b->failed) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
    va_end(ap);
    if (k < 0) {
      b->failed = 1;
      return;
    }
    if (b->p && b->n + (size_t)k < b->cap) {
      b->n += (size_t)k;
      return;
    }
    size_t cap = (b->cap ? b->cap * 2 : 16384) + (size_t)k;
    char *g = (char *)realloc(b->p, cap);
    if (!g) {
      b->failed = 1;
      return;
    }
    b->p = g;
    b->cap = cap;
  }
}

static vx_status write_plot(const char *path, const rows *rs, const rows *pruned, vx_error *e) {
  sbuf b;
  memset(&b, 0, sizeof b);
  const double W = 860, H = 480, L = 80, R = 250, T = 30, B = 50;
  const uint32_t D = rs->depth;
  double ymin = 1e300, ymax = 0;
  /* with colour: what rendering at l uploads with the colours of levels 0 .. l */
  double colored[21], color_sum = 0;
  for (uint32_t l = 0; l <= D; l++) {
    color_sum += (double)rs->r[l].color_bytes;
    colored[l] = rs->color ? (double)rs->r[l].render_bytes + color_sum : 0.0;
  }
  for (uint32_t l = 0; l <= D; l++) {
    double v[5] = {(double)rs->r[l].render_bytes, (double)rs->r[l].float8_bytes,
                   (double)rs->r[l].dense_bytes, pruned ? (double)pruned->r[l].render_bytes : 1.0,
                   rs->color ? colored[l] : 1.0};
    for (int k = 0; k < 5; k++)
      if (v[k] > 0) {
        ymin = fmin(ymin, v[k]);
        ymax = fmax(ymax, v[k]);
      }
  }
  double y0 = floor(log10(ymin)), y1 = ceil(log10(ymax));
  if (y1 <= y0) y1 = y0 + 1;
#define PX(l) (L + (W - L - R) * (double)(l) / (double)(D ? D : 1))
#define PY(v) (H - B - (H - T - B) * (log10(v) - y0) / (y1 - y0))
  sb_printf(&b, "<svg xmlns='http://www.w3.org/2000/svg' width='%.0f' height='%.0f' "
                "font-family='sans-serif' font-size='12'>\n<rect width='100%%' height='100%%' "
                "fill='white'/>\n", W, H);
  for (double y = y0; y <= y1; y += 1) {
    sb_printf(&b, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#ddd'/>\n", L,
              PY(pow(10, y)), W - R, PY(pow(10, y)));
    sb_printf(&b, "<text x='%.1f' y='%.1f' text-anchor='end'>1e%.0f B</text>\n", L - 6,
              PY(pow(10, y)) + 4, y);
  }
  for (uint32_t l = 0; l <= D; l++)
    sb_printf(&b, "<text x='%.1f' y='%.1f' text-anchor='middle'>%llu</text>\n", PX(l), H - B + 18,
              (unsigned long long)1 << l);
  sb_printf(&b, "<text x='%.1f' y='%.1f' text-anchor='middle'>resolution (cells per axis)</text>\n",
            (L + W - R) / 2, H - 12);
  const char *names[5] = {"voxlod (render at this level)", "SVO, 8 float corners",
                          "dense float grid", "voxlod pruned", "voxlod with colour (RGBA8)"};
  const char *colors[5] = {"#1f77b4", "#ff7f0e", "#7f7f7f", "#2ca02c", "#9467bd"};
  int row = 0;
  for (int s = 0; s < 5; s++) {
    if ((s == 3 && !pruned) || (s == 4 && !rs->color)) continue;
    sb_printf(&b, "<polyline fill='none' stroke='%s' stroke-width='2' points='", colors[s]);
    for (uint32_t l = 0; l <= D; l++) {
      double v = s == 0   ? (double)rs->r[l].render_bytes
                 : s == 1 ? (double)rs->r[l].float8_bytes
                 : s == 2 ? (double)rs->r[l].dense_bytes
                 : s == 3 ? (double)pruned->r[l].render_bytes
                          : colored[l];
      if (v > 0) sb_printf(&b, "%.1f,%.1f ", PX(l), PY(v));
    }
    sb_printf(&b, "'/>\n<text x='%.1f' y='%.1f' fill='%s'>%s</text>\n", W - R + 8, T + 16.0 * row++,
              colors[s], names[s]);
  }
  sb_printf(&b, "</svg>\n");
#undef PX
#undef PY
  vx_status st = b.failed ? VX_ERR_NOMEM : vx_write_file(path, b.p, b.n, e);
  if (b.failed) snprintf(e->msg, sizeof e->msg, "out of memory drawing %s", path);
  e->status = st == VX_OK ? e->status : st;
  free(b.p);
  return st;
}

int vx_cmd_stats(int argc, char **argv) {
  const char *plot = NULL;
  int json = 0, have_error = 0, have_views = 0, tiles = 0;
  float error = 0;
  uint32_t views = 4;
  vx_view_args va;
  vx_view_args_init(&va);
  va.size[0] = 400;
  va.size[1] = 300;
  vx_opt o[VX_VIEW_OPTS + 7];
  int n = vx_view_opts(&va, o, 0);
  o[n++] = vx_cli_opt("--plot", VX_OPT_STRING, (void *)&plot, 0, 0, NULL);
  o[n] = vx_cli_opt("--error", VX_OPT_FLOAT, &error, 0, 1e6, "voxels");
  o[n++].seen = &have_error;
  o[n] = vx_cli_opt("--views", VX_OPT_U32, &views, 1, 64, "a count");
  o[n++].seen = &have_views;
  o[n++] = vx_cli_opt("--json", VX_OPT_FLAG, &json, 0, 0, NULL);
  o[n++] = vx_cli_opt("--tiles", VX_OPT_FLAG, &tiles, 0, 0, NULL);
  memset(&o[n], 0, sizeof o[n]);
  const char *pos[1];
  int npos;
  int r = vx_cli_parse("stats", argc, argv, o, pos, 1, &npos, stats_help, vx_view_args_help);
  if (r) return r < 0 ? 0 : r;
  if (npos < 1) return vx_cli_usage_error("stats", "needs IN.svo");
  if ((r = vx_view_args_check(&va, "stats")) != 0) return r;
  /* the view options and --views serve --error's image comparison only */
  const char *view_opt = have_views ? "--views" : vx_view_args_given(&va);
  if (!have_error && view_opt)
    return vx_cli_usage_error("stats", "%s applies to --error's image comparison only", view_opt);
  const char *in = pos[0];
  vx_error e;
  memset(&e, 0, sizeof e);
  if (plot && vx_check_output(plot, &in, 1, &e) != VX_OK) return vx_cli_fail("stats", &e);
  vx_tiled_file *tf = NULL;
  if (vx_tiled_file_open(in, NULL, &tf, &e) == VX_OK) { /* a tiled file: read tile by tile */
    int rc = 0;
    static rows trs;
    vx_tree_info ti;
    if (have_error)
      rc = vx_cli_usage_error("stats", "--error needs one tree: not a tiled file");
    else if (tiled_rows(tf, &trs, &ti, &e) != VX_OK)
      rc = vx_cli_fail("stats", &e);
    if (rc == 0 && json) {
      printf("{\"file\": \"%s\", \"depth\": %u, \"file_bytes\": %llu, \"prune_error\": %g, "
             "\"color\": %s, \"tile_depth\": %u, \"tile_count\": %llu,\n  \"levels\": ", in,
             ti.depth, (unsigned long long)ti.file_bytes, ti.prune_error,
             ti.has_color ? "true" : "false", ti.tile_depth,
             (unsigned long long)ti.tile_count);
      print_json_levels(&trs);
      if (tiles) print_tiles(tf, ti.tile_count, 1);
      printf("\n}\n");
    } else if (rc == 0) {
      printf("%s: depth %u (%u^3), field band +-%g voxels (step %.4f voxel), colour: %s\n", in,
             ti.depth, 1u << ti.depth, ti.band, ti.band / 127.0, ti.has_color ? "yes" : "no");
      print_table(&ti, &trs);
      if (tiles) print_tiles(tf, ti.tile_count, 0);
    }
    if (rc == 0 && plot && write_plot(plot, &trs, NULL, &e) != VX_OK) rc = vx_cli_fail("stats", &e);
    vx_tiled_file_close(tf);
    return rc;
  }
  if (tiles) return vx_cli_usage_error("stats", "--tiles applies to a tiled file");
  int lod = va.lod;
  va.lod = -2; /* statistics need every level */
  vx_tree *t = NULL;
  if (vx_cli_load(in, &va, &t, &e) != VX_OK) return vx_cli_fail("stats", &e);
  va.lod = lod; /* the comparison's cut, as given */
  static rows rs, prs;
  make_rows(t, &rs);
  vx_tree_info ti;
  memset(&ti, 0, sizeof ti);
  ti.struct_size = sizeof ti;
  vx_tree_get_info(t, &ti);
  int rc = 0;
  vx_tree *p = NULL;
  vx_quality q;
  memset(&q, 0, sizeof q);
  if (have_error) {
    vx_tree_info pi;
    memset(&pi, 0, sizeof pi);
    pi.struct_size = sizeof pi;
    if (vx_tree_prune(t, error, &p, &e) != VX_OK ||
        vx_cli_quality(t, p, &va, (int)views, &q, &e) != VX_OK) {
      rc = vx_cli_fail("stats", &e);
    } else {
      make_rows(p, &prs);
      vx_tree_get_info(p, &pi);
      q.full_bytes = ti.memory_bytes;
      q.pruned_bytes = pi.memory_bytes;
    }
  }
  if (rc == 0 && json) {
    char psnr[32];
    printf("{\"file\": \"%s\", \"depth\": %u, \"file_bytes\": %llu, \"prune_error\": %g, "
           "\"color\": %s,\n  \"levels\": ", in, ti.depth, (unsigned long long)ti.file_bytes,
           ti.prune_error, ti.has_color ? "true" : "false");
    print_json_levels(&rs);
    if (have_error) {
      json_num(psnr, sizeof psnr, "%.2f", q.psnr_db);
      printf(",\n  \"pruned\": {\"error\": %g, \"full_bytes\": %llu, \"pruned_bytes\": %llu, "
             "\"ratio\": %.3f, \"psnr_db\": %s, \"depth_bad_frac\": %.5f, "
             "\"hit_mismatch_frac\": %.5f,\n  \"levels\": ", error,
             (unsigned long long)q.full_bytes, (unsigned long long)q.pruned_bytes,
             (double)q.full_bytes / (double)(q.pruned_bytes ? q.pruned_bytes : 1), psnr,
             q.depth_bad_frac, q.hit_mismatch_frac);
      print_json_levels(&prs);
      printf("}");
    }
    printf("\n}\n");
  } else if (rc == 0) {
    printf("%s: depth %u (%u^3), field band +-%g voxels (step %.4f voxel), colour: %s\n", in,
           ti.depth, 1u << ti.depth, ti.band, ti.band / 127.0, ti.has_color ? "yes" : "no");
    print_table(&ti, &rs);
    if (have_error) {
      vx_tree_info pi;
      memset(&pi, 0, sizeof pi);
      pi.struct_size = sizeof pi;
      vx_tree_get_info(p, &pi);
      printf("\npruned at --error %g:\n", error);
      print_table(&pi, &prs);
      char psnr[48];
      if (isfinite(q.psnr_db)) snprintf(psnr, sizeof psnr, "%.2f dB", q.psnr_db);
      else snprintf(psnr, sizeof psnr, "infinite (identical images)");
      printf("image error over %u views of %ux%u: PSNR %s, depth off by > 1 voxel on %.3f%% of "
             "pixels (hit/miss differs on %.3f%%); %.2fx less memory\n", views, va.size[0],
             va.size[1], psnr, q.depth_bad_frac * 100, q.hit_mismatch_frac * 100,
             (double)q.full_bytes / (double)(q.pruned_bytes ? q.pruned_bytes : 1));
    }
  }
  if (rc == 0 && plot && write_plot(plot, &rs, have_error ? &prs : NULL, &e) != VX_OK)
    rc = vx_cli_fail("stats", &e);
  vx_tree_free(p);
  vx_tree_free(t);
  return rc;
}
