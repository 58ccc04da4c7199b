/* stats.c - `voxlod stats`: memory per resolution, from the coarsest level to the finest.
 *
 * For each level l (resolution 2^l) the table shows what rendering with the tree cut at l costs:
 * the nodes (or, at the finest level, the surface voxels) present there, their topology, LOD and
 * field bytes, the compressed bytes of that level's file section, the cumulative memory of levels
 * 0..l (what `render --lod l` uploads) and that memory per cell of level l. For comparison it
 * gives a plain scalar-field SVO with 8 float corners per cell at that resolution (8-byte nodes
 * above, 32 bytes per cell) and a dense float grid of (2^l + 1)^3 corner values.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/svo_file.h"
#include "svo/lod.h"
#include "tools/cli.h"

static const char *stats_help =
    "usage: voxlod stats IN.svo [options]\n"
    "\n"
    "Prints a row per level (resolution 2^l, coarsest first): cells, pruned leaves, bytes for\n"
    "topology, LOD planes and the scalar field in memory, bytes on disk (zstd), the memory needed\n"
    "to render at that level, bytes per cell, and for comparison a scalar-field SVO with 8 float\n"
    "corners per cell and a dense float grid.\n"
    "\n"
    "options:\n"
    "  --plot FILE.svg   also draw memory against resolution\n"
    "  --error E         also prune a copy at max error E (finest voxels) and report its memory and\n"
    "                    its image error against the full tree (PSNR, depth > 1 voxel)\n"
    "  --views N         views for --error's image comparison (default 4)\n"
    "  --mem-limit SIZE    refuse a file whose decoded size exceeds SIZE (default 16G)\n"
    "  --json            machine-readable output\n";

typedef struct row {
  uint32_t level;
  uint64_t cells, leaves, topo, lod, field, disk, cum_mem, float8, dense;
} row;

static void make_rows(const vx_octree *t, const vx_svo_file_info *fi, row *rows) {
  vx_level_bytes ls[VX_MAX_DEPTH + 1];
  vx_octree_level_stats(t, ls);
  uint64_t cum = 0, plain_nodes = 0;
  for (uint32_t l = 0; l <= t->depth; l++) {
    row *r = &rows[l];
    r->level = l;
    r->cells = ls[l].cells;
    r->leaves = ls[l].leaves;
    r->topo = ls[l].topology_bytes;
    r->lod = ls[l].lod_bytes;
    r->field = ls[l].field_bytes;
    r->disk = fi ? fi->level_disk_bytes[l] : 0;
    uint64_t mem = l < t->depth ? r->cells * sizeof(vx_node) : r->field;
    cum += mem;
    r->cum_mem = cum;
    r->float8 = plain_nodes * 8 + r->cells * 32;
    plain_nodes += r->cells;
    double side = (double)((uint64_t)1 << l) + 1.0;
    r->dense = (uint64_t)(side * side * side * 4.0);
  }
}

static void print_table(const vx_octree *t, const row *rows, uint64_t file_bytes) {
  char b[8][24];
  printf("%-5s %7s %12s %10s %11s %11s %11s %11s %12s %8s %12s %12s\n", "level", "res", "cells",
         "leaves", "topology", "lod", "field", "disk", "render<=l", "B/cell", "float8-svo",
         "dense-f32");
  for (uint32_t l = 0; l <= t->depth; l++) {
    const row *r = &rows[l];
    vx_format_bytes((double)r->topo, b[0], 24);
    vx_format_bytes((double)r->lod, b[1], 24);
    vx_format_bytes((double)r->field, b[2], 24);
    vx_format_bytes((double)r->disk, b[3], 24);
    vx_format_bytes((double)r->cum_mem, b[4], 24);
    vx_format_bytes((double)r->float8, b[5], 24);
    vx_format_bytes((double)r->dense, b[6], 24);
    printf("%-5u %6llu^3 %12llu %10llu %11s %11s %11s %11s %12s %8.2f %12s %12s\n", l,
           (unsigned long long)1 << l, (unsigned long long)r->cells,
           (unsigned long long)r->leaves, b[0], b[1], b[2], b[3], b[4],
           r->cells ? (double)r->cum_mem / (double)r->cells : 0.0, b[5], b[6]);
  }
  const row *f = &rows[t->depth];
  uint64_t node_bytes = t->node_count * sizeof(vx_node);
  vx_format_bytes((double)(node_bytes + f->field), b[0], 24);
  vx_format_bytes((double)file_bytes, b[1], 24);
  printf("total: %s in memory (%llu nodes x 16 B + %llu voxels x 8 B), %s on disk\n", b[0],
         (unsigned long long)t->node_count, (unsigned long long)t->voxel_count, b[1]);
  if (t->voxel_count) {
    double nv = (double)t->voxel_count;
    printf("per surface voxel: %.2f B topology+LOD (nodes), %.2f B field, %.2f B in memory, "
           "%.2f B on disk (float8 SVO: %.2f B)\n",
           (double)node_bytes / nv, (double)f->field / nv, (double)(node_bytes + f->field) / nv,
           (double)file_bytes / nv, (double)f->float8 / nv);
  }
  if (t->prune_error > 0) printf("pruned at max error %g voxels\n", t->prune_error);
}

static void print_json(const vx_octree *t, const row *rows, uint64_t file_bytes) {
  printf("{\"depth\": %u, \"file_bytes\": %llu, \"prune_error\": %g, \"levels\": [\n", t->depth,
         (unsigned long long)file_bytes, t->prune_error);
  for (uint32_t l = 0; l <= t->depth; l++) {
    const row *r = &rows[l];
    printf("  {\"level\": %u, \"res\": %llu, \"cells\": %llu, \"leaves\": %llu, "
           "\"topology_bytes\": %llu, \"lod_bytes\": %llu, \"field_bytes\": %llu, "
           "\"disk_bytes\": %llu, \"render_bytes\": %llu, \"float8_svo_bytes\": %llu, "
           "\"dense_bytes\": %llu}%s\n",
           l, (unsigned long long)1 << l, (unsigned long long)r->cells,
           (unsigned long long)r->leaves, (unsigned long long)r->topo,
           (unsigned long long)r->lod, (unsigned long long)r->field, (unsigned long long)r->disk,
           (unsigned long long)r->cum_mem, (unsigned long long)r->float8,
           (unsigned long long)r->dense, l == t->depth ? "" : ",");
  }
  printf("]}\n");
}

/* A log-log line chart of memory against resolution, written to a temporary and renamed. */
static int write_plot(const char *path, const vx_octree *t, const row *rows, const row *pruned) {
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
  FILE *f = fopen(tmp, "w");
  if (!f) {
    perror(path);
    return 1;
  }
  const double W = 860, H = 480, L = 80, R = 250, T = 30, B = 50;
  double ymin = 1e300, ymax = 0;
  for (uint32_t l = 0; l <= t->depth; l++) {
    double v[4] = {(double)rows[l].cum_mem, (double)rows[l].float8, (double)rows[l].dense,
                   pruned ? (double)pruned[l].cum_mem : 1.0};
    for (int k = 0; k < 4; k++)
      if (v[k] > 0) {
        ymin = fmin(ymin, v[k]);
        ymax = fmax(ymax, v[k]);
      }
  }
  double y0 = floor(log10(ymin)), y1 = ceil(log10(ymax));
  if (y1 <= y0) y1 = y0 + 1;
#define PX(l) (L + (W - L - R) * (double)(l) / (double)(t->depth ? t->depth : 1))
#define PY(v) (H - B - (H - T - B) * (log10(v) - y0) / (y1 - y0))
  fprintf(f, "<svg xmlns='http://www.w3.org/2000/svg' width='%.0f' height='%.0f' "
             "font-family='sans-serif' font-size='12'>\n<rect width='100%%' height='100%%' fill='white'/>\n",
          W, H);
  for (double y = y0; y <= y1; y += 1) {
    fprintf(f, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#ddd'/>\n", L, PY(pow(10, y)),
            W - R, PY(pow(10, y)));
    fprintf(f, "<text x='%.1f' y='%.1f' text-anchor='end'>1e%.0f B</text>\n", L - 6,
            PY(pow(10, y)) + 4, y);
  }
  for (uint32_t l = 0; l <= t->depth; l++)
    fprintf(f, "<text x='%.1f' y='%.1f' text-anchor='middle'>%llu</text>\n", PX(l), H - B + 18,
            (unsigned long long)1 << l);
  fprintf(f, "<text x='%.1f' y='%.1f' text-anchor='middle'>resolution (cells per axis)</text>\n",
          (L + W - R) / 2, H - 12);
  const char *names[4] = {"voxlod (render at this level)", "SVO, 8 float corners", "dense float grid",
                          "voxlod pruned"};
  const char *colors[4] = {"#1f77b4", "#ff7f0e", "#7f7f7f", "#2ca02c"};
  for (int s = 0; s < (pruned ? 4 : 3); s++) {
    fprintf(f, "<polyline fill='none' stroke='%s' stroke-width='2' points='", colors[s]);
    for (uint32_t l = 0; l <= t->depth; l++) {
      double v = s == 0 ? (double)rows[l].cum_mem
                 : s == 1 ? (double)rows[l].float8
                 : s == 2 ? (double)rows[l].dense
                          : (double)pruned[l].cum_mem;
      if (v > 0) fprintf(f, "%.1f,%.1f ", PX(l), PY(v));
    }
    fprintf(f, "'/>\n<text x='%.1f' y='%.1f' fill='%s'>%s</text>\n", W - R + 8, T + 16.0 * s,
            colors[s], names[s]);
  }
  fprintf(f, "</svg>\n");
#undef PX
#undef PY
  if (fclose(f) != 0 || rename(tmp, path) != 0) {
    perror(path);
    unlink(tmp);
    return 1;
  }
  return 0;
}

static vx_status clone_tree(const vx_octree *a, vx_octree *b, vx_error *e) {
  *b = *a;
  b->nodes = NULL;
  b->voxels = NULL;
  vx_status s = vx_octree_alloc(b, e);
  if (s != VX_OK) return s;
  if (a->node_count) memcpy(b->nodes, a->nodes, a->node_count * sizeof(vx_node));
  if (a->voxel_count) memcpy(b->voxels, a->voxels, a->voxel_count * sizeof(vx_voxel));
  return VX_OK;
}

int vx_cmd_stats(int argc, char **argv) {
  for (int i = 2; i < argc; i++)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(stats_help, stdout);
      return 0;
    }
  const char *in = NULL, *plot = NULL;
  int json = 0;
  float error = -1;
  uint32_t views = 4;
  vx_view_args va;
  vx_view_args_init(&va);
  va.ro.width = 400;
  va.ro.height = 300;
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--json") == 0) {
      json = 1;
    } else if (strcmp(a, "--plot") == 0 || strcmp(a, "--error") == 0 || strcmp(a, "--views") == 0) {
      if (!v) return vx_cli_usage_error("stats", "%s needs a value", a);
      i++;
      if (strcmp(a, "--plot") == 0) plot = v;
      else if (strcmp(a, "--error") == 0) {
        if (vx_parse_float(v, &error) || error < 0)
          return vx_cli_usage_error("stats", "--error must be a number >= 0 (got '%s')", v);
      } else if (vx_parse_u32(v, &views) || views < 1 || views > 64)
        return vx_cli_usage_error("stats", "--views must be 1..64 (got '%s')", v);
    } else if (a[0] == '-' && a[1]) {
      int r = vx_view_args_parse(&va, argc, argv, &i, "stats");
      if (r < 0) return 2;
      if (r == 0) return vx_cli_usage_error("stats", "unknown option '%s'", a);
    } else if (!in) {
      in = a;
    } else {
      return vx_cli_usage_error("stats", "unexpected argument '%s'", a);
    }
  }
  if (!in) return vx_cli_usage_error("stats", "needs IN.svo");
  vx_error e;
  memset(&e, 0, sizeof e);
  vx_octree t;
  memset(&t, 0, sizeof t);
  vx_svo_file_info fi;
  memset(&fi, 0, sizeof fi);
  if (vx_cli_read(in, -1, &t, &fi, &e) != VX_OK) return vx_cli_fail("stats", &e);
  row rows[VX_MAX_DEPTH + 1], prow[VX_MAX_DEPTH + 1];
  make_rows(&t, &fi, rows);
  if (json) print_json(&t, rows, fi.file_bytes);
  else {
    printf("%s: depth %u (%u^3), field band +-%g voxels (step %.4f voxel)\n", in, t.depth,
           1u << t.depth, t.band, t.band / 127.0);
    print_table(&t, rows, fi.file_bytes);
  }
  int rc = 0;
  vx_octree p;
  memset(&p, 0, sizeof p);
  if (error >= 0) {
    vx_quality q;
    if (clone_tree(&t, &p, &e) != VX_OK || vx_octree_prune(&p, error, &e) != VX_OK) {
      rc = vx_cli_fail("stats", &e);
    } else {
      make_rows(&p, NULL, prow);
      uint64_t full = t.node_count * 16 + t.voxel_count * 8, pr = p.node_count * 16 + p.voxel_count * 8;
      if (!json) {
        printf("\npruned at --error %g:\n", error);
        print_table(&p, prow, 0);
      }
      vx_status s = vx_cli_quality(&t, &p, &va, (int)views, &q, &e);
      if (s != VX_OK) rc = vx_cli_fail("stats", &e);
      else
        printf("%s{\"error\": %g, \"full_bytes\": %llu, \"pruned_bytes\": %llu, \"ratio\": %.3f, "
               "\"psnr_db\": %.2f, \"depth_bad_frac\": %.5f, \"hit_mismatch_frac\": %.5f}\n",
               json ? "" : "image error: ", error, (unsigned long long)full,
               (unsigned long long)pr, (double)full / (double)(pr ? pr : 1), q.psnr_db,
               q.depth_bad_frac, q.hit_mismatch_frac);
    }
  }
  if (plot && rc == 0) rc = write_plot(plot, &t, rows, error >= 0 ? prow : NULL);
  vx_octree_free(&p);
  vx_octree_free(&t);
  return rc;
}
