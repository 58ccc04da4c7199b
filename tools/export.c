/* SPDX-License-Identifier: Apache-2.0 */
/* export.c - `voxlod export IN.svo OUT.{nvdb,vdb,binvox,vox,ply}`: a tree's field at one level to
 * a grid or voxel format, and `voxlod convert IN.vdb OUT.svo`: an OpenVDB level set to a tree
 * (include/voxlod/export.h). */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "tools/cli.h"

static const char *export_help =
    "usage: voxlod export IN.svo OUT [options]\n"
    "\n"
    "Writes the tree's field at the finest level (or --lod L: level L's planes, as a render at\n"
    "that level draws them) in the format OUT's extension names:\n"
    "  .nvdb    NanoVDB float grid, class level set (uncompressed)\n"
    "  .vdb     OpenVDB FloatGrid, class level set (vdb_print, pyopenvdb, Houdini, Blender)\n"
    "  .binvox  occupancy grid, run-length encoded, with translate and scale (at most 4096^3)\n"
    "  .vox     MagicaVoxel: models of at most 256^3 placed by the scene graph (at most 2048^3)\n"
    "  .ply     binary point cloud: a point per surface cell with the field's gradient as normal\n"
    "Grids hold the corners of the surface cells (the narrow band) as world distances, negative\n"
    "inside, clamped at +-B voxels; voxel size = the tree's voxel size * 2^(depth - L). OUT is\n"
    "written atomically: an existing file is replaced only by a complete new one. OUT may be '-'\n"
    "(standard output) or a device or FIFO, with --format naming the format.\n"
    "A tiled file (any depth, up to 1048576^3) is read tile by tile, one tile decoded at a time:\n"
    "the same bytes as its joined tree. What the level's cells and the format's writer hold must\n"
    "fit --mem-limit: past 16384^3 a coarser --lod is usually the one that does.\n"
    "\n"
    "options:\n"
    "  --lod L          export level L (0 .. the tree's depth; default: the finest)\n"
    "  --format F       nvdb, vdb, binvox, vox or ply (default: OUT's extension)\n"
    "  --band B         .nvdb/.vdb: clamp the values at +-B voxels, 1..64 (default: the tree's\n"
    "                   band, raised to 1 when it is narrower)\n"
    "  --grid NAME      .nvdb/.vdb: the grid's name (default 'surface')\n"
    "  --solid          .binvox/.vox: fill the inside too (by the field's sign)\n"
    "  --surface-points .ply: points on the zero set instead of cell centres\n"
    "An option that does not apply to the format is refused.\n"
    "  --mem-limit SIZE bytes the export may hold (default: 80% of physical memory)\n"
    "  -q, --quiet      no report line\n";

/* The --format word of f. */
static const char *argv_format_name(vx_export_format f) {
  switch (f) {
  case VX_EXPORT_NVDB: return "nvdb";
  case VX_EXPORT_VDB: return "vdb";
  case VX_EXPORT_BINVOX: return "binvox";
  case VX_EXPORT_VOX: return "vox";
  case VX_EXPORT_PLY: return "ply";
  default: return "?";
  }
}

static const char *format_name(vx_export_format f) {
  switch (f) {
  case VX_EXPORT_NVDB: return "NanoVDB level set";
  case VX_EXPORT_VDB: return "OpenVDB level set";
  case VX_EXPORT_BINVOX: return "binvox";
  case VX_EXPORT_VOX: return "MagicaVoxel";
  case VX_EXPORT_PLY: return "PLY point cloud";
  default: return "?";
  }
}

int vx_cmd_export(int argc, char **argv) {
  vx_export_opts eo;
  memset(&eo, 0, sizeof eo);
  eo.struct_size = sizeof eo;
  int lod = 0, have_lod = 0, fmt = 0, have_fmt = 0, have_band = 0;
  vx_opt o[12];
  int n = 0;
  o[n] = vx_cli_opt("--lod", VX_OPT_INT, &lod, 0, 20, "a level of the tree");
  o[n++].seen = &have_lod;
  o[n] = vx_cli_opt("--format", VX_OPT_CHOICE, &fmt, 0, 0, "nvdb, vdb, binvox, vox or ply");
  o[n].choices = "nvdb|vdb|binvox|vox|ply";
  o[n++].seen = &have_fmt;
  o[n] = vx_cli_opt("--band", VX_OPT_FLOAT, &eo.band, 1, 64, "voxels");
  o[n++].seen = &have_band;
  o[n++] = vx_cli_opt("--grid", VX_OPT_STRING, &eo.grid_name, 0, 0, "a grid name");
  o[n++] = vx_cli_opt("--solid", VX_OPT_FLAG, &eo.solid, 0, 0, NULL);
  o[n++] = vx_cli_opt("--surface-points", VX_OPT_FLAG, &eo.surface_points, 0, 0, NULL);
  o[n++] = vx_cli_opt("--mem-limit", VX_OPT_BYTES, &eo.mem_limit, 1048576.0, 9.2e18, "a size such as 8G");
  o[n] = vx_cli_opt("--quiet", VX_OPT_FLAG, &vx_cli_quiet, 0, 0, NULL);
  o[n++].alias = "-q";
  memset(&o[n], 0, sizeof o[n]);
  const char *pos[2];
  int npos;
  int r = vx_cli_parse("export", argc, argv, o, pos, 2, &npos, export_help, NULL);
  if (r) return r < 0 ? 0 : r;
  if (npos < 2) return vx_cli_usage_error("export", "needs IN.svo and OUT");
  const char *in = pos[0], *out = pos[1];
  eo.format = vx_export_format_of(out);
  if (have_fmt) {
    vx_export_format want = (vx_export_format)(VX_EXPORT_NVDB + fmt);
    if (eo.format != VX_EXPORT_AUTO && eo.format != want)
      return vx_cli_usage_error("export", "--format %s contradicts the extension of '%s'",
                                argv_format_name(want), out);
    eo.format = want;
  }
  if (eo.format == VX_EXPORT_AUTO && strcmp(out, "-") == 0)
    return vx_cli_usage_error("export", "standard output ('-') has no extension: name the format "
                              "with --format");
  if (eo.format == VX_EXPORT_AUTO)
    return vx_cli_usage_error("export", "'%s': unknown format (the extension must be .nvdb, .vdb, "
                              ".binvox, .vox or .ply, or name it with --format)", out);
  /* Options that do not apply to the format are refused, not ignored. */
  int grid = eo.format == VX_EXPORT_NVDB || eo.format == VX_EXPORT_VDB;
  int voxels = eo.format == VX_EXPORT_BINVOX || eo.format == VX_EXPORT_VOX;
  const char *misfit = (have_band && !grid) ? "--band" : (eo.grid_name && !grid) ? "--grid"
                       : (eo.solid && !voxels) ? "--solid"
                       : (eo.surface_points && eo.format != VX_EXPORT_PLY) ? "--surface-points"
                                                                           : NULL;
  if (misfit)
    return vx_cli_usage_error("export", "%s does not apply to .%s output (it is for %s)", misfit,
                              argv_format_name(eo.format),
                              misfit[2] == 'b' || misfit[2] == 'g' ? ".nvdb and .vdb"
                              : misfit[3] == 'o' ? ".binvox and .vox" : ".ply");
  if (!vx_export_available(eo.format))
    return vx_cli_usage_error("export", "this voxlod was built without %s: '%s' cannot be written",
                              eo.format == VX_EXPORT_VDB ? "OpenVDB" : "the NanoVDB headers", out);
  vx_error e;
  memset(&e, 0, sizeof e);
  if (vx_check_output(out, &in, 1, &e) != VX_OK) return vx_cli_fail("export", &e);
  vx_cli_install_signals();
  /* A tiled file is read tile by tile (any depth, one tile decoded at a time), else whole. */
  vx_tree *t = NULL;
  vx_tiled_file *tf = NULL;
  vx_tree_info ti;
  int rc = vx_cli_open_any("export", in, -1, eo.mem_limit, VX_CLI_TILED_PREFER, &t, &tf, &ti);
  if (rc != 0) return rc;
  if (have_lod && lod > (int)ti.depth) {
    vx_tree_free(t);
    vx_tiled_file_close(tf);
    return vx_cli_usage_error("export", "--lod %d is beyond %s's depth %u (levels 0..%u)", lod,
                              in, ti.depth, ti.depth);
  }
  eo.levels = have_lod ? (uint32_t)lod + 1 : 0;
  eo.progress = vx_cli_progress;
  vx_export_stats st;
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  vx_status s = tf ? vx_tiled_file_export(tf, out, &eo, &st, &e)
                   : vx_tree_export(t, out, &eo, &st, &e);
  vx_tree_free(t);
  vx_tiled_file_close(tf);
  vx_cli_progress_done();
  if (s != VX_OK) {
    if (s == VX_ERR_INTERRUPTED) snprintf(e.msg, sizeof e.msg, "interrupted; %s was not written", out);
    return vx_cli_fail("export", &e);
  }
  if (vx_cli_quiet) return 0;
  char sz[32];
  vx_format_bytes((double)st.file_bytes, sz, sizeof sz);
  fprintf(stderr, "%s: %s, level %u (%u^3), %llu surface cells", out, format_name(eo.format),
          st.level, st.resolution, (unsigned long long)st.cells);
  if (st.plane_cells) fprintf(stderr, " (%llu from planes)", (unsigned long long)st.plane_cells);
  const char *what = eo.format == VX_EXPORT_PLY ? "points"
                     : (eo.format == VX_EXPORT_NVDB || eo.format == VX_EXPORT_VDB) ? "active values"
                                                                                 : "voxels";
  fprintf(stderr, ", %llu %s", (unsigned long long)st.values, what);
  if (!have_band && st.band > 0.0f && st.band != ti.band)
    fprintf(stderr, " within +-%g voxels (the tree's band %g is outside 1..64)", (double)st.band,
            (double)ti.band);
  if (eo.format == VX_EXPORT_VOX) fprintf(stderr, " in %u model(s)", st.models);
  fprintf(stderr, ", %s, %.2fs\n", sz, st.seconds);
  return 0;
}

int vx_cli_is_vdb(const char *path) {
  size_t n = strlen(path);
  return n >= 4 && path[n - 4] == '.' && tolower((unsigned char)path[n - 3]) == 'v' &&
         tolower((unsigned char)path[n - 2]) == 'd' && tolower((unsigned char)path[n - 1]) == 'b';
}

int vx_cmd_convert_grid(const char *in, const char *out, vx_convert_opts *co, const char *grid,
                        double timeout) {
  vx_grid_opts go;
  memset(&go, 0, sizeof go);
  go.struct_size = sizeof go;
  go.grid = grid;
  go.timeout_s = timeout > 0 ? timeout : -1.0;
  vx_error e;
  memset(&e, 0, sizeof e);
  vx_conversion *b = NULL;
  vx_status s = vx_convert_grid_to_file(in, &go, co, out, &b, &e);
  vx_conversion_stats st;
  int rc = vx_cli_finish_build("convert", out, s, b, &e, &st);
  if (rc != 0) return rc;
  if (vx_cli_quiet) return 0;
  char sz[32];
  vx_format_bytes((double)st.file_bytes, sz, sizeof sz);
  fprintf(stderr, "%s: %u^3 from %s, %llu surface voxels, %llu nodes, %s on disk; read and build "
          "%.2fs, write %.2fs\n", out, st.resolution, in, (unsigned long long)st.surface_voxels,
          (unsigned long long)st.nodes, sz, st.sec_build, st.sec_write);
  return 0;
}
