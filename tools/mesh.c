/* SPDX-License-Identifier: Apache-2.0 */
/* mesh.c - `voxlod mesh IN.svo OUT.{obj,ply,stl,glb} [--lod L | --error E] [--format F]`: a
 * triangle mesh out of a tree at any level of detail (include/voxlod/mesher.h), written through
 * assimp. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <math.h>

#include "tools/cli.h"

static const char *mesh_help =
    "usage: voxlod mesh IN.svo OUT.{obj,ply,stl,glb} [--lod L | --error E] [options]\n"
    "\n"
    "Dual-contours the tree (Ju et al. 2002): one vertex per cell of the cut, placed by the "
    "cell's\n"
    "quadric error function (its surface crossings with the field's gradient, and above the\n"
    "voxels the node's least-squares plane), clamped to the cell; one quad per edge of the cut\n"
    "whose ends differ in sign. Cells of different sizes share their edges, so the mesh has no\n"
    "cracks; from a closed mesh it is watertight and edge-manifold at every cut. Vertices are in\n"
    "world coordinates, normals come from the field's gradient.\n"
    "\n"
    "The cut (default: every surface voxel, full detail):\n"
    "  --lod L          the nodes of level L (0 .. the tree's depth: 2^L cells per axis)\n"
    "  --error E        adaptive: within E finest voxels of the full-detail mesh, both ways;\n"
    "                   flat parts get few large triangles, detail keeps small ones\n"
    "\n"
    "OUT's extension (or --format) chooses the format, written through assimp's exporter: .obj\n"
    "(no material file), .ply (binary), .stl (binary) or .glb (binary glTF 2); other extensions\n"
    "are refused. OUT is written atomically: an existing file is replaced only by a complete\n"
    "new one; '-' (standard output), a device or a FIFO is written directly (with --format).\n"
    "IN.svo must be a whole tree (not converted with --error): the topology of every cut comes\n"
    "from its surface voxels.\n"
    "A tiled file finer than 16384^3 is meshed without joining it: at full detail window by\n"
    "window (2 x 2 x 2 tiles each, the seams welded; the mesh must fit in memory: about 200\n"
    "bytes a triangle while it is written); with --lod L (1..14) or --error E from one of its\n"
    "levels, read tile by tile as a tree of its own (its cells the voxels, the planes of a\n"
    "coarser level at their corners): that level, or level 14's adaptive cut within E finest\n"
    "voxels.\n"
    "\n"
    "options:\n"
    "  --format F       obj, ply, stl or glb (default: OUT's extension)\n"
    "  --windows        a tiled file of up to 16384^3 at full detail window by window too,\n"
    "                   without joining its tiles into one tree (less memory; the same mesh\n"
    "                   where each window's margin decides its corner field, mesher.h)\n"
    "  --threads N      worker threads (default: all cores)\n"
    "  --mem-limit SIZE refuse trees whose decoded size exceeds SIZE (default: 80% of memory)\n"
    "  -q, --quiet      no report\n";

/* A tiled file finer than 16384^3 (f, info ti) at --lod L or --error E is meshed from one of its
 * levels as a tree of its own (vx_tiled_file_level_tree): that level, or level 14 within E of
 * the finest (E / 2^(depth - 14) of its voxels). Closes f. */
static int open_deep(const char *in, vx_tiled_file *f, const vx_tree_info *ti, uint64_t mem_limit,
                     vx_mesher_opts *mo, vx_tree **t) {
  uint32_t level = 14;
  if (mo->cut == VX_MESHER_LEVEL) {
    if (mo->level < 1 || mo->level > 14) {
      vx_tiled_file_close(f);
      return vx_cli_usage_error("mesh", "--lod %u: %s is %u levels deep; a mesh is made from "
                                "one of its levels 1..14", mo->level, in, ti->depth);
    }
    level = mo->level;
    mo->cut = VX_MESHER_FINEST;
  } else {
    mo->max_error = (float)ldexp((double)mo->max_error, -(int)(ti->depth - level));
  }
  vx_read_opts ro;
  memset(&ro, 0, sizeof ro);
  ro.struct_size = sizeof ro;
  ro.mem_limit = mem_limit;
  vx_error e;
  memset(&e, 0, sizeof e);
  vx_status s = vx_tiled_file_level_tree(f, level, &ro, t, &e);
  vx_tiled_file_close(f);
  return s == VX_OK ? 0 : vx_cli_fail("mesh", &e);
}

int vx_cmd_mesh(int argc, char **argv) {
  vx_mesher_opts mo;
  memset(&mo, 0, sizeof mo);
  mo.struct_size = sizeof mo;
  int lod = 0, have_lod = 0, have_error = 0, fmt = 0, have_fmt = 0, by_windows = 0;
  static const char *const fmts[] = {"obj", "ply", "stl", "glb"};
  uint64_t mem_limit = 0;
  vx_opt o[10];
  int n = 0;
  o[n] = vx_cli_opt("--format", VX_OPT_CHOICE, &fmt, 0, 0, "obj, ply, stl or glb");
  o[n].choices = "obj|ply|stl|glb";
  o[n++].seen = &have_fmt;
  o[n] = vx_cli_opt("--lod", VX_OPT_INT, &lod, 0, 14, "a level of the tree");
  o[n++].seen = &have_lod;
  o[n] = vx_cli_opt("--error", VX_OPT_FLOAT, &mo.max_error, 1e-6, 1e6, "finest voxels, > 0");
  o[n++].seen = &have_error;
  o[n++] =
      vx_cli_opt("--threads", VX_OPT_INT, &mo.threads, 0, 1024, "a thread count, 0: all cores");
  o[n++] =
      vx_cli_opt("--mem-limit", VX_OPT_BYTES, &mem_limit, 1048576.0, 9.2e18, "a size such as 8G");
  o[n++] = vx_cli_opt("--windows", VX_OPT_FLAG, &by_windows, 0, 0, NULL);
  o[n] = vx_cli_opt("--quiet", VX_OPT_FLAG, &vx_cli_quiet, 0, 0, NULL);
  o[n++].alias = "-q";
  memset(&o[n], 0, sizeof o[n]);
  const char *pos[2];
  int npos;
  int r = vx_cli_parse("mesh", argc, argv, o, pos, 2, &npos, mesh_help, NULL);
  if (r) return r < 0 ? 0 : r;
  if (npos < 2) return vx_cli_usage_error("mesh", "needs IN.svo and OUT.{obj,ply,stl,glb}");
  if (have_lod && have_error)
    return vx_cli_usage_error("mesh", "--lod and --error exclude each other");
  const char *in = pos[0], *out = pos[1];
  mo.cut = have_lod ? VX_MESHER_LEVEL : have_error ? VX_MESHER_ERROR : VX_MESHER_FINEST;
  mo.level = (uint32_t)lod;
  mo.progress = vx_cli_progress;

  vx_error e;
  memset(&e, 0, sizeof e);
  /* The output before any work: its format, its directory, its kind, not the input. */
  const char *format = have_fmt ? fmts[fmt] : NULL;
  if (!format && strcmp(out, "-") == 0)
    return vx_cli_usage_error("mesh", "standard output ('-') has no extension: name the format "
                              "with --format");
  if (format) {
    /* a named format must agree with a mesh format's extension the path has */
    const char *slash = strrchr(out, '/'), *dot = strrchr(out, '.');
    int other = 0;
    for (int k = 0; k < 4 && dot && (!slash || dot > slash); k++)
      other |= k != fmt && strcasecmp(dot + 1, fmts[k]) == 0;
    if (other)
      return vx_cli_usage_error("mesh", "--format %s contradicts the extension of '%s'", format,
                                out);
  }
  if (vx_mesh_check_path_as(out, format, &in, 1, &e) != VX_OK) return vx_cli_fail("mesh", &e);
  vx_cli_install_signals();
  double t0 = vx_cli_now();
  vx_tree *t = NULL;
  vx_tiled_file *tf = NULL;
  vx_tree_info ti;
  if (by_windows && mo.cut != VX_MESHER_FINEST)
    return vx_cli_usage_error("mesh", "--windows meshes at full detail: not with --lod or "
                              "--error");
  int rc = vx_cli_open_any("mesh", in, -1, mem_limit, by_windows ? VX_CLI_TILED_PREFER : 0, &t,
                           &tf, &ti);
  if (rc != 0) return rc;
  const uint32_t deep = tf ? ti.depth : 0; /* a tiled file finer than 16384^3 */
  const int windows = tf && mo.cut == VX_MESHER_FINEST; /* at full detail: window by window */
  if (tf && !windows && (rc = open_deep(in, tf, &ti, mem_limit, &mo, &t)) != 0) return rc;
  if (!tf && have_lod && lod > (int)ti.depth) {
    vx_tree_free(t);
    return vx_cli_usage_error("mesh", "--lod %d is beyond %s's depth %u (levels 0..%u)", lod, in,
                              ti.depth, ti.depth);
  }
  double t1 = vx_cli_now();
  vx_mesh *m = NULL;
  vx_status s = windows ? vx_tiled_file_mesh(tf, &mo, &m, &e) : vx_mesher_extract(t, &mo, &m, &e);
  vx_tiled_file_close(windows ? tf : NULL);
  vx_tree_free(t);
  vx_cli_progress_done();
  if (s != VX_OK) {
    if (s == VX_ERR_INTERRUPTED)
      snprintf(e.msg, sizeof e.msg, "interrupted; %s was not written", out);
    return vx_cli_fail("mesh", &e);
  }
  double t2 = vx_cli_now();
  s = vx_mesh_save_as(m, out, format, &e);
  double t3 = vx_cli_now();
  if (s != VX_OK) {
    vx_mesh_free(m);
    return vx_cli_fail("mesh", &e);
  }
  vx_mesher_stats ms;
  memset(&ms, 0, sizeof ms);
  ms.struct_size = sizeof ms;
  vx_mesher_get_stats(m, &ms);
  const int colored = vx_mesh_colors(m, NULL) != NULL;
  vx_mesh_free(m);
  if (vx_cli_quiet) return 0;
  char cut[64];
  if (windows)
    snprintf(cut, sizeof cut, "finest (%u^3, window by window)", ti.resolution);
  else if (deep && have_lod)
    snprintf(cut, sizeof cut, "level %d (%u^3) of %u", lod, 1u << lod, deep);
  else if (deep)
    snprintf(cut, sizeof cut, "error %g finest voxels (level 14's levels %u..%u)",
             (double)ldexp((double)mo.max_error, (int)(deep - 14)), ms.level_min, ms.level_max);
  else if (mo.cut == VX_MESHER_LEVEL) snprintf(cut, sizeof cut, "level %d (%u^3)", lod, 1u << lod);
  else if (mo.cut == VX_MESHER_ERROR)
    snprintf(cut, sizeof cut, "error %g (levels %u..%u)", (double)mo.max_error, ms.level_min,
             ms.level_max);
  else snprintf(cut, sizeof cut, "finest (%u^3)", ti.resolution);
  const char *ext = format ? format : strrchr(out, '.') ? strrchr(out, '.') + 1 : "";
  const char *col = !colored ? ""
                    : strcasecmp(ext, "stl") == 0 ? " (no colours: .stl holds none)"
                                                  : " with colours";
  fprintf(stderr,
          "%s: %llu triangles, %llu vertices%s, cut %s; load %.2fs, mesh %.2fs, write %.2fs\n",
          out, (unsigned long long)ms.triangles, (unsigned long long)ms.vertices, col, cut,
          t1 - t0, t2 - t1, t3 - t2);
  fprintf(stderr, "%s: corner field: %llu shared grid points, %llu with different values (the "
          "larger kept), %llu re-signed; %llu contacts split", out,
          (unsigned long long)ms.corners_shared, (unsigned long long)ms.corners_disputed,
          (unsigned long long)ms.corners_repaired, (unsigned long long)ms.contacts_split);
  if (ms.open_edges)
    fprintf(stderr, "; %llu sign changes next to empty cells left open (open input)",
            (unsigned long long)ms.open_edges);
  fputc('\n', stderr);
  return 0;
}
