/* SPDX-License-Identifier: Apache-2.0 */
/* voxlod.c - the command line: convert, render, stats, bench, compare, view.
 *
 * Each command parses its arguments (cli.c), calls the library (voxlod.h) and prints. Failures
 * give one clear line on stderr and a non-zero exit (1: the work failed, 2: bad usage, 130:
 * interrupted).
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"

static const char *main_help =
    "voxlod - triangle meshes to sparse voxel octrees with a signed-distance field and per-node\n"
    "         level-of-detail planes, ray-marched on the GPU or the CPU.\n"
    "\n"
    "usage: voxlod COMMAND [ARGS]\n"
    "\n"
    "commands:\n"
    "  convert MESH OUT.svo --res N   voxelize a mesh (any format assimp reads) into a .svo file\n"
    "  render IN.svo OUT.png          ray-march images at any level of detail\n"
    "  stats IN.svo                   memory per resolution, coarsest to finest\n"
    "  bench IN.svo                   frame times per LOD level (GPU, or the CPU)\n"
    "  compare FULL.svo OTHER.svo     image error of OTHER against FULL (PSNR, depth)\n"
    "  export IN.svo OUT.{nvdb,vdb,binvox,vox,ply}  the field as a grid, voxels or points\n"
    "  mesh IN.svo OUT.{obj,ply,stl,glb}  a triangle mesh at any level of detail (--lod, --error)\n"
    "  sample IN.svo POINTS OUT       signed distances (or colours) at the points of a file\n"
#ifdef VOXLOD_HAVE_VIEWER
    "  view IN.svo                    a web page that flies through the tree (frames drawn here)\n"
#else
    "  view IN.svo                    (not built: needs civetweb and libturbojpeg)\n"
#endif
    "\n"
    "'voxlod COMMAND --help' explains each command's options. 'voxlod --version' prints the\n"
    "library's version.\n";

static const char *convert_help =
    "usage: voxlod convert MESH OUT.svo --res N [options]\n"
    "       voxlod convert IN.vdb OUT.svo [--grid NAME] [--res N] [options]\n"
    "\n"
    "Loads MESH (OBJ, PLY, STL, glTF/GLB, FBX, DAE, 3DS, OFF, ... all meshes of the scene with\n"
    "their node transforms), maps its bounding box into an N^3 grid with one uniform scale, sets\n"
    "every voxel the closed triangles overlap, stores the signed distance at the 8 corners of each\n"
    "surface voxel and a least-squares plane per inner node, and writes OUT.svo (zstd sections,\n"
    "written atomically: an existing OUT.svo is replaced only when the new one is complete).\n"
    "\n"
    "options:\n"
    "  --res N          grid resolution, a power of two from 2 to 16384, or to 1048576 in tiles\n"
    "                   (required)\n"
    "  --tile-depth T   write a tiled tree: tiles of 2^T voxels per axis (T in 1..14, at most 13\n"
    "                   levels above them), each its own compressed, checksummed tree; the default\n"
    "                   above 16384 is 14. A coloured mesh gives coloured tiles (the untiled\n"
    "                   tree's colours); --error prunes inside the tiles, never above their roots\n"
    "  --gpus all|N     build the tiles on every GPU of the machine, or the first N, one tile\n"
    "                   stream per GPU (implies --gpu; the same file)\n"
    "  --error E        prune every subtree whose plane approximates it within E finest voxels\n"
    "                   (max error bound); 0 keeps the full tree (default 0)\n"
    "  --band B         truncate the distance field at +-B voxels (default 2)\n"
    "  --threads N      worker threads (default: all cores)\n"
    "  --gpu            voxelize, compute the field and cut the colour's triangle parts on the\n"
    "                   GPU (CUDA): the same file, bit for bit; falls back to the CPU with a\n"
    "                   notice when no GPU can run it\n"
    "  --cpu            voxelize on the CPU (default)\n"
    "  --mem-limit SIZE keep the whole process, mesh import included, under SIZE (e.g. 8G): the\n"
    "                   tree's levels spill to temporary files beside OUT.svo when they would\n"
    "                   not fit (removed on exit, also on failure or Ctrl-C); a limit too small\n"
    "                   even for that is refused at once with an estimate (default: 80% of\n"
    "                   physical memory). It also bounds the work of triangles stacked on one\n"
    "                   another (overlap tests, exact winding sums): past it, an error\n"
    "  --import-timeout S  give up reading MESH after S seconds (default 300; 0: never). The\n"
    "                   import runs in a child process, so an importer that loops or crashes on\n"
    "                   a damaged file gives an error instead of a hang\n"
    "  --sign RULE      inside/outside rule: winding (generalized winding number, default) or\n"
    "                   pseudo-normal (faster; exact on closed manifold meshes); meshes only.\n"
    "                   A tiled tree with pseudo-normal from a binary STL or PLY of plain\n"
    "                   triangles never holds the mesh: it is split by tile into a temporary\n"
    "                   file in streaming passes and each tile built from its own part\n"
    "  --no-split       load the whole mesh even then: the same file, faster when the mesh\n"
    "                   fits in memory (each part is planned for its own tile)\n"
    "  --zstd-level L   compression level 1..22 (default by decoded size: 19 under 8 MiB, 9 under\n"
    "                   64 MiB, 3 above)\n"
    "  --color-filter F how a coloured mesh (textures, vertex or material colours) colours a\n"
    "                   cell: mean (default: the area-weighted mean in linear light of the\n"
    "                   surface in it, textures filtered over each part's footprint) or dominant\n"
    "                   (a colour of the surface itself, from its largest part: a texel, a\n"
    "                   vertex colour or a material colour, never a mix)\n"
    "  --no-color       a grey tree whatever colour the mesh has\n"
    "  --grid NAME      MESH may be an OpenVDB file (.vdb): its float level set NAME (default: the\n"
    "                   first) becomes the tree; without --res its own voxel size is kept, with\n"
    "                   --res N its active box is mapped into N^3 and the level set rebuilt there\n"
    "                   (on the CPU: --gpu and --sign do not apply and are refused)\n"
    "  -q, --quiet      no progress output\n";

static const char *render_help =
    "usage: voxlod render IN.svo OUT.png [options]\n"
    "\n"
    "Ray-marches the octree (no dense grid): at the finest level the first zero crossing of each\n"
    "voxel's trilinear field, shaded by the field's gradient; above it (--lod L, pruned leaves or\n"
    "--lod auto) each node's plane clipped to its box. Reads only levels <= L from the file.\n"
    "OUT.png may be '-' (standard output) or a device such as /dev/null.\n"
    "\n"
    "options:\n"
    "  --views N           an orbit of N images around the model from one upload, written as\n"
    "                      OUT_000.png, OUT_001.png, ... (default 1: OUT.png)\n"
    "  --budget SIZE       a tiled file: draw it tile by tile keeping at most SIZE of tiles in\n"
    "                      GPU memory (host memory with --cpu); tiles that do not fit are drawn\n"
    "                      from coarser levels. Default for files finer than 16384^3 (which are\n"
    "                      always drawn so): 3/4 of the free GPU memory\n"
    "  -q, --quiet         no report line\n";

static int is_pow2_res(uint32_t r) { return r >= 2 && r <= 1048576 && (r & (r - 1)) == 0; }

int vx_cmd_convert(int argc, char **argv) {
  vx_convert_opts co;
  memset(&co, 0, sizeof co);
  co.struct_size = sizeof co;
  int gpu = 0, cpu = 0, have_res = 0, sign = 0, have_sign = 0;
  int color_filter = 0, have_filter = 0, no_color = 0, no_split = 0;
  const char *grid = NULL;
  double timeout = 300.0;
  vx_opt o[23];
  const char *gpus_arg = NULL;
  int have_gpus = 0;
  int n = 0;
  o[n] = vx_cli_opt("--res", VX_OPT_U32, &co.resolution, 0, 4294967295.0, "a power of two");
  o[n++].seen = &have_res;
  o[n++] = vx_cli_opt("--error", VX_OPT_FLOAT, &co.max_error, 0, 1e6, "voxels");
  o[n++] = vx_cli_opt("--tile-depth", VX_OPT_U32, &co.tile_depth, 1, 14, "1..14");
  o[n] = vx_cli_opt("--gpus", VX_OPT_STRING, &gpus_arg, 0, 0, "all or a GPU count");
  o[n++].seen = &have_gpus;
  o[n++] = vx_cli_opt("--band", VX_OPT_FLOAT, &co.band, 1, 64, "voxels");
  o[n++] = vx_cli_opt("--threads", VX_OPT_INT, &co.threads, 0, 1024, "a thread count, 0: all cores");
  o[n++] = vx_cli_opt("--gpu", VX_OPT_FLAG, &gpu, 0, 0, NULL);
  o[n++] = vx_cli_opt("--cpu", VX_OPT_FLAG, &cpu, 0, 0, NULL);
  o[n++] = vx_cli_opt("--mem-limit", VX_OPT_BYTES, &co.mem_limit, 1048576.0, 9.2e18, "a size such as 8G");
  o[n++] = vx_cli_opt("--import-timeout", VX_OPT_DOUBLE, &timeout, 0, 1e7, "seconds, 0: none");
  o[n] = vx_cli_opt("--sign", VX_OPT_CHOICE, &sign, 0, 0, "winding or pseudo-normal");
  o[n].choices = "winding|pseudo-normal";
  o[n++].seen = &have_sign;
  o[n++] = vx_cli_opt("--no-split", VX_OPT_FLAG, &no_split, 0, 0, NULL);
  o[n++] = vx_cli_opt("--zstd-level", VX_OPT_INT, &co.zstd_level, 1, 22, "a zstd level");
  o[n] = vx_cli_opt("--color-filter", VX_OPT_CHOICE, &color_filter, 0, 0, "mean or dominant");
  o[n].choices = "mean|dominant";
  o[n++].seen = &have_filter;
  o[n++] = vx_cli_opt("--no-color", VX_OPT_FLAG, &no_color, 0, 0, NULL);
  o[n++] = vx_cli_opt("--grid", VX_OPT_STRING, &grid, 0, 0, "a grid name of the .vdb input");
  o[n] = vx_cli_opt("--quiet", VX_OPT_FLAG, &vx_cli_quiet, 0, 0, NULL);
  o[n++].alias = "-q";
  memset(&o[n], 0, sizeof o[n]);
  const char *pos[2];
  int npos;
  int r = vx_cli_parse("convert", argc, argv, o, pos, 2, &npos, convert_help, NULL);
  if (r) return r < 0 ? 0 : r;
  if (npos < 2) return vx_cli_usage_error("convert", "needs MESH and OUT.svo");
  int vdb = vx_cli_is_vdb(pos[0]);
  if (grid && !vdb) return vx_cli_usage_error("convert", "--grid needs an OpenVDB (.vdb) input");
  /* A level set is read and rebuilt on the CPU and carries its own sign: refused, not ignored. */
  if (vdb && gpu)
    return vx_cli_usage_error("convert", "--gpu does not apply to an OpenVDB (.vdb) input (it "
                              "is converted on the CPU)");
  if (vdb && have_sign)
    return vx_cli_usage_error("convert", "--sign does not apply to an OpenVDB (.vdb) input (the "
                              "level set's values give the sign)");
  if (!have_res && !vdb) return vx_cli_usage_error("convert", "--res N is required");
  if (have_res && !is_pow2_res(co.resolution))
    return vx_cli_usage_error("convert", "--res must be a power of two from 2 to 16384, or to "
                              "1048576 in tiles (got %u)", co.resolution);
  if (have_gpus) {
    char *end = NULL;
    long g = strcmp(gpus_arg, "all") == 0 ? -1 : strtol(gpus_arg, &end, 10);
    if (g == 0 || g < -1 || g > 64 || (g != -1 && (!end || *end)))
      return vx_cli_usage_error("convert", "--gpus takes all or a count from 1 to 64 (got %s)",
                                gpus_arg);
    if (cpu) return vx_cli_usage_error("convert", "--gpus and --cpu exclude each other");
    co.gpus = (int)g;
    gpu = 1;
  }
  if (gpu && cpu) return vx_cli_usage_error("convert", "--gpu and --cpu exclude each other");
  if (no_color && have_filter)
    return vx_cli_usage_error("convert", "--color-filter and --no-color exclude each other");
  if (no_split && (!sign || (!co.tile_depth && co.resolution <= 16384)))
    return vx_cli_usage_error("convert", "--no-split applies to a tiled tree (--tile-depth, or "
                              "--res above 16384) with --sign pseudo-normal, the one split");
  const char *in = pos[0], *out = pos[1];
  co.color = no_color ? VX_COLOR_OFF : VX_COLOR_AUTO;
  co.color_filter = color_filter ? VX_COLOR_FILTER_DOMINANT : VX_COLOR_FILTER_MEAN;
  co.device = gpu ? VX_DEVICE_AUTO : VX_DEVICE_CPU;
  co.sign_rule = sign ? VX_SIGN_PSEUDO_NORMAL : VX_SIGN_WINDING;
  co.progress = vx_cli_progress;

  vx_error e;
  memset(&e, 0, sizeof e);
  /* The output is checked before any work: its directory, its kind, not the input. */
  if (vx_check_output(out, &in, 1, &e) != VX_OK) return vx_cli_fail("convert", &e);
  vx_cli_install_signals();
  if (vdb) return vx_cmd_convert_grid(in, out, &co, grid, timeout);
  vx_mesh_load_opts lo;
  memset(&lo, 0, sizeof lo);
  lo.struct_size = sizeof lo;
  lo.timeout_s = timeout > 0 ? timeout : -1.0;
  lo.mem_limit = co.mem_limit;
  /* loaded, or split by tile without holding it (vx_convert_file says when) */
  vx_mesh_info mi;
  memset(&mi, 0, sizeof mi);
  mi.struct_size = sizeof mi;
  vx_conversion *b = NULL;
  vx_status s;
  if (no_split) {
    vx_mesh *mesh = NULL;
    s = vx_mesh_load(in, &lo, &mesh, &e);
    if (s == VX_OK) s = vx_mesh_get_info(mesh, &mi);
    if (s == VX_OK) s = vx_convert_to_file(mesh, &co, out, &b, &e);
    vx_mesh_free(mesh);
  } else {
    s = vx_convert_file(in, &lo, &co, out, &mi, &b, &e);
  }
  if (s == VX_OK && !vx_cli_quiet) {
    vx_cli_progress_done();
    fprintf(stderr, "%s: %llu triangles from %u mesh(es) in %.2fs", in,
            (unsigned long long)mi.triangles, mi.meshes, mi.load_seconds);
    if (mi.skipped_degenerate || mi.skipped_nonfinite || mi.skipped_nontriangle)
      fprintf(stderr, "; skipped %llu degenerate, %llu non-finite, %llu points/lines",
              (unsigned long long)mi.skipped_degenerate,
              (unsigned long long)mi.skipped_nonfinite,
              (unsigned long long)mi.skipped_nontriangle);
    fputc('\n', stderr);
  }
  vx_conversion_stats st;
  if ((r = vx_cli_finish_build("convert", out, s, b, &e, &st)) != 0) return r;
  if (vx_cli_quiet) return 0;
  if (st.spilled) fprintf(stderr, "%s: built out of core (levels spilled to temporary files)\n", out);
  char sz[32];
  vx_format_bytes((double)st.file_bytes, sz, sizeof sz);
  fprintf(stderr,
          "%s: %u^3, %llu surface voxels, %llu nodes, %s on disk (%.2f B/surface voxel); "
          "import %.2fs, build %.2fs, write %.2fs, total %.2fs\n",
          out, st.resolution, (unsigned long long)st.surface_voxels,
          (unsigned long long)st.nodes, sz,
          st.surface_voxels ? (double)st.file_bytes / (double)st.surface_voxels : 0.0,
          mi.load_seconds, st.sec_build, st.sec_write, mi.load_seconds + st.sec_total);
  fprintf(stderr, "%s: build on the %s: sign tables %.2fs%s, surface voxels and field %.2fs%s",
          out, st.used_gpu ? "GPU" : "CPU", st.sec_sign,
          st.gpu_tree ? " (on a CPU thread meanwhile)" : "", st.sec_voxels,
          st.used_gpu ? "" : " (with the octree)\n");
  if (st.used_gpu)
    fprintf(stderr,
            ", octree and planes %.2fs%s\n%s: GPU stages: upload %.2fs, overlaps %.2fs, sort and "
            "index %.2fs, corner field %.2fs, copy back %.2fs",
            st.sec_tree, st.gpu_tree ? " (GPU)" : " (CPU)", out, st.sec_gpu[0], st.sec_gpu[1],
            st.sec_gpu[2], st.sec_gpu[3], st.sec_gpu[4]);
  if (st.gpu_tree)
    fprintf(stderr, "; octree levels %.2fs, planes %.2fs, copy back %.2fs", st.sec_gpu_tree[0],
            st.sec_gpu_tree[1], st.sec_gpu_tree[2]);
  if (st.used_gpu) fputc('\n', stderr);
  if (st.sec_color > 0.0)
    fprintf(stderr, "%s: colour %.2fs (%s)\n", out, st.sec_color,
            st.color_gpu ? "triangle parts on the GPU" : "CPU");
  return 0;
}

/* OUT.png, or OUT_007.png for view 7 of several. */
static void view_name(const char *out, int k, int views, char *buf, size_t n) {
  if (views <= 1) {
    snprintf(buf, n, "%s", out);
    return;
  }
  const char *slash = strrchr(out, '/'), *dot = strrchr(out, '.');
  size_t stem = dot && (!slash || dot > slash) ? (size_t)(dot - out) : strlen(out);
  snprintf(buf, n, "%.*s_%03d%s", (int)stem, out, k, out + stem);
}

int vx_cmd_render(int argc, char **argv) {
  vx_view_args va;
  vx_view_args_init(&va);
  uint32_t views = 1;
  vx_opt o[VX_VIEW_OPTS + 5];
  int n = vx_view_opts(&va, o, 0);
  o[n++] = vx_cli_opt("--views", VX_OPT_U32, &views, 1, 3600, "a count");
  uint64_t budget = 0;
  int have_budget = 0;
  o[n] = vx_cli_opt("--budget", VX_OPT_BYTES, &budget, 1048576.0, 1.8e16, "a size such as 2G");
  o[n++].seen = &have_budget;
  o[n] = vx_cli_opt("--quiet", VX_OPT_FLAG, &vx_cli_quiet, 0, 0, NULL);
  o[n++].alias = "-q";
  memset(&o[n], 0, sizeof o[n]);
  const char *pos[2];
  int npos;
  int r = vx_cli_parse("render", argc, argv, o, pos, 2, &npos, render_help, vx_view_args_help);
  if (r) return r < 0 ? 0 : r;
  if (npos < 2) return vx_cli_usage_error("render", "needs IN.svo and OUT.png");
  if ((r = vx_view_args_check(&va, "render")) != 0) return r;
  const char *in = pos[0], *out = pos[1];
  if (views > 1 && strcmp(out, "-") == 0)
    return vx_cli_usage_error("render", "--views needs a file name, not '-'");
  vx_error e;
  memset(&e, 0, sizeof e);
  char name[4096];
  for (uint32_t k = 0; k < views; k++) {
    view_name(out, (int)k, (int)views, name, sizeof name);
    if (vx_check_output(name, &in, 1, &e) != VX_OK) return vx_cli_fail("render", &e);
  }
  vx_tree *t = NULL;
  vx_tiled_file *tf = NULL;
  vx_tree_info ti;
  if ((r = vx_cli_open_any("render", in, va.lod, va.mem_limit, have_budget, &t, &tf, &ti)) != 0)
    return r;
  vx_renderer_opts ropts;
  memset(&ropts, 0, sizeof ropts);
  ropts.struct_size = sizeof ropts;
  ropts.device = vx_view_args_device(&va);
  ropts.threads = (int)va.threads;
  ropts.memory_budget_mib = (uint32_t)(budget >> 20);
  double t0 = vx_cli_now();
  vx_renderer *rd = NULL;
  if ((tf ? vx_renderer_create_tiled(tf, &ropts, &rd, &e)
          : vx_renderer_create(t, &ropts, &rd, &e)) != VX_OK) {
    vx_tree_free(t);
    vx_tiled_file_close(tf);
    return vx_cli_fail("render", &e);
  }
  vx_cli_notes("render", vx_renderer_notes(rd));
  size_t px = (size_t)va.size[0] * va.size[1];
  uint8_t *rgb = (uint8_t *)malloc(px * 3);
  float *depth = (float *)malloc(px * sizeof(float));
  vx_status s = rgb && depth ? VX_OK : VX_ERR_NOMEM;
  if (s != VX_OK) snprintf(e.msg, sizeof e.msg, "cannot allocate a %ux%u image", va.size[0], va.size[1]);
  e.status = s;
  double first_ms = 0.0, rest_ms = 0.0;
  for (uint32_t k = 0; k < views && s == VX_OK; k++) {
    vx_render_opts ro;
    vx_view_args_render(&va, t, tf, 360.0 * k / views, &ro);
    vx_frame_stats fs;
    memset(&fs, 0, sizeof fs);
    fs.struct_size = sizeof fs;
    s = vx_render(rd, &ro, rgb, depth, &fs, &e);
    double now = vx_cli_now();
    if (k == 0) first_ms = (now - t0) * 1e3;
    else rest_ms += fs.ms_total;
    view_name(out, (int)k, (int)views, name, sizeof name);
    if (s == VX_OK) s = vx_write_png(name, rgb, va.size[0], va.size[1], &e);
    if (s == VX_OK && !vx_cli_quiet) {
      char lod[32];
      if (va.lod == -1) snprintf(lod, sizeof lod, "auto");
      else snprintf(lod, sizeof lod, "%d/%u", va.lod >= 0 ? va.lod : (int)ti.levels_loaded - 1, ti.depth);
      fprintf(stderr, "%s: %ux%u, lod %s, %s, %.2f ms, %.1f%% of pixels hit\n", name, va.size[0],
              va.size[1], lod, fs.used_gpu ? "GPU" : "CPU", fs.ms_total,
              100.0 * (double)fs.pixels_hit / (double)px);
      if (tf) vx_cli_tiles_line("render", rd, &fs);
    }
    if (vx_cli_interrupted && s == VX_OK) {
      s = VX_ERR_INTERRUPTED;
      snprintf(e.msg, sizeof e.msg, "interrupted after %u of %u images", k + 1, views);
    }
  }
  if (s == VX_OK && !vx_cli_quiet && views > 1)
    fprintf(stderr, "%u images: the first %.1f ms (renderer set-up included), then %.2f ms per "
            "image\n", views, first_ms, rest_ms / (views - 1));
  free(rgb);
  free(depth);
  vx_renderer_free(rd);
  vx_tree_free(t);
  vx_tiled_file_close(tf);
  return s == VX_OK ? 0 : vx_cli_fail("render", &e);
}

int main(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
      strcmp(argv[1], "help") == 0) {
    fputs(main_help, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const char *c = argv[1];
  if (strcmp(c, "--version") == 0) {
    printf("voxlod %s (library %s)%s\n", VOXLOD_VERSION_STRING, vx_version(),
           vx_gpu_available() ? "" : ", no usable GPU");
    return 0;
  }
  if (strcmp(c, "convert") == 0) return vx_cmd_convert(argc, argv);
  if (strcmp(c, "render") == 0) return vx_cmd_render(argc, argv);
  if (strcmp(c, "stats") == 0) return vx_cmd_stats(argc, argv);
  if (strcmp(c, "bench") == 0) return vx_cmd_bench(argc, argv);
  if (strcmp(c, "compare") == 0) return vx_cmd_compare(argc, argv);
  if (strcmp(c, "export") == 0) return vx_cmd_export(argc, argv);
  if (strcmp(c, "mesh") == 0) return vx_cmd_mesh(argc, argv);
  if (strcmp(c, "sample") == 0) return vx_cmd_sample(argc, argv);
#ifdef VOXLOD_HAVE_VIEWER
  if (strcmp(c, "view") == 0) return vx_cmd_view(argc, argv);
#else
  if (strcmp(c, "view") == 0) {
    fprintf(stderr, "voxlod: 'view' is not built here: it needs civetweb and libturbojpeg "
            "(scripts/deps.sh installs them), then a new cmake run\n");
    return 2;
  }
#endif
  fprintf(stderr, "voxlod: unknown command '%s'\n\n%s", c, main_help);
  return 2;
}
