/* voxlod.c - the command line: convert, render, stats, bench, compare.
 *
 * Every command validates its arguments, runs library calls that return a status, and prints one
 * clear line on failure with a non-zero exit (1: the work failed, 2: bad usage, 130: interrupted).
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/mesh_import.h"
#include "formats/png.h"
#include "formats/svo_file.h"
#include "svo/lod.h"
#include "tools/cli.h"
#include "voxelizer/voxelizer.h"

static const char *main_help =
    "voxlod - triangle meshes to sparse voxel octrees with a signed-distance field and per-node\n"
    "         level-of-detail planes, ray-marched on the GPU or the CPU.\n"
    "\n"
    "usage: voxlod COMMAND [ARGS]\n"
    "\n"
    "commands:\n"
    "  convert MESH OUT.svo --res N   voxelize a mesh (any format assimp reads) into a .svo file\n"
    "  render IN.svo OUT.png          ray-march an image at any level of detail\n"
    "  stats IN.svo                   memory per resolution, coarsest to finest\n"
    "  bench IN.svo                   GPU frame times per LOD level\n"
    "  compare FULL.svo OTHER.svo     image error of OTHER against FULL (PSNR, depth)\n"
    "\n"
    "'voxlod COMMAND --help' explains each command's options.\n";

static const char *convert_help =
    "usage: voxlod convert MESH OUT.svo --res N [options]\n"
    "\n"
    "Loads MESH (OBJ, PLY, STL, glTF/GLB, FBX, DAE, 3DS, OFF, ... all meshes of the scene with\n"
    "their node transforms), maps its bounding box into an N^3 grid with one uniform scale, sets\n"
    "every voxel the closed triangles overlap, stores the signed distance at the 8 corners of each\n"
    "surface voxel and a least-squares plane per inner node, and writes OUT.svo (zstd sections,\n"
    "written atomically: an existing OUT.svo is replaced only when the new one is complete).\n"
    "\n"
    "options:\n"
    "  --res N          grid resolution, a power of two from 2 to 16384 (required)\n"
    "  --error E        prune every subtree whose plane approximates it within E finest voxels\n"
    "                   (max error bound); 0 keeps the full tree (default 0)\n"
    "  --band B         truncate the distance field at +-B voxels (default 2)\n"
    "  --threads N      worker threads (default: all cores)\n"
    "  --gpu            voxelize and compute the field on the GPU (CUDA): the same file, bit for\n"
    "                   bit; falls back to the CPU with a notice when no GPU can run it\n"
    "  --cpu            voxelize on the CPU (default)\n"
    "  --mem-limit SIZE keep the peak memory under SIZE (e.g. 8G): the octree's levels spill to\n"
    "                   temporary files beside OUT.svo when they would not fit (removed on exit,\n"
    "                   also on failure or Ctrl-C); a limit too small even for that is refused\n"
    "                   at once with an estimate (default: 80% of physical memory)\n"
    "  --import-timeout S  give up reading MESH after S seconds (default 300; 0: never). The\n"
    "                   import runs in a child process, so an importer that loops or crashes on\n"
    "                   a damaged file gives an error instead of a hang\n"
    "  --sign RULE      inside/outside rule: winding (generalized winding number, default) or\n"
    "                   pseudo-normal (faster; exact on closed manifold meshes)\n"
    "  --zstd-level L   compression level 1..22 (default by decoded size: 19 under 8 MiB, 9 under\n"
    "                   64 MiB, 3 above)\n"
    "  -q, --quiet      no progress output\n";

static const char *render_help_head =
    "usage: voxlod render IN.svo OUT.png [options]\n"
    "\n"
    "Ray-marches the octree (no dense grid): at the finest level the first zero crossing of each\n"
    "voxel's trilinear field, shaded by the field's gradient; above it (--lod L, pruned leaves or\n"
    "--lod auto) each node's plane clipped to its box. Reads only levels <= L from the file.\n"
    "\n"
    "options:\n";

static int check_help(int argc, char **argv, const char *help, const char *extra) {
  for (int i = 2; i < argc; i++)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(help, stdout);
      if (extra) fputs(extra, stdout);
      return 1;
    }
  return 0;
}

/* The directory part of path ("." when none), malloc'ed. */
static char *vx_cli_dirname(const char *path) {
  const char *slash = strrchr(path, '/');
  size_t n = slash ? (size_t)(slash - path) : 1;
  if (slash == path) n = 1; /* "/x" */
  char *d = (char *)malloc(n + 1);
  if (!d) return NULL;
  memcpy(d, slash ? path : ".", n);
  d[n] = 0;
  return d;
}

static int is_pow2_res(uint32_t r) {
  return r >= 2 && r <= (1u << VX_MAX_DEPTH) && (r & (r - 1)) == 0;
}

int vx_cmd_convert(int argc, char **argv) {
  if (check_help(argc, argv, convert_help, NULL)) return 0;
  const char *in = NULL, *out = NULL;
  vx_voxelize_opts bo;
  memset(&bo, 0, sizeof bo);
  int zlevel = 0, have_res = 0, want_cpu = 0;
  double import_timeout = 300.0;
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
      vx_cli_quiet = 1;
    } else if (strcmp(a, "--gpu") == 0 || strcmp(a, "--cpu") == 0) {
      if (want_cpu + bo.gpu && (a[2] == 'g') != bo.gpu)
        return vx_cli_usage_error("convert", "--gpu and --cpu exclude each other");
      bo.gpu = a[2] == 'g';
      want_cpu = !bo.gpu;
    } else if (a[0] == '-' && a[1] == '-') {
      if (!v) return vx_cli_usage_error("convert", "%s needs a value", a);
      i++;
      uint32_t u;
      if (strcmp(a, "--res") == 0) {
        if (vx_parse_u32(v, &u) || !is_pow2_res(u))
          return vx_cli_usage_error("convert",
                                    "--res must be a power of two from 2 to %u (got '%s')",
                                    1u << VX_MAX_DEPTH, v);
        bo.resolution = u;
        have_res = 1;
      } else if (strcmp(a, "--error") == 0) {
        if (vx_parse_float(v, &bo.max_error) || bo.max_error < 0)
          return vx_cli_usage_error("convert", "--error must be a number >= 0 (got '%s')", v);
      } else if (strcmp(a, "--band") == 0) {
        if (vx_parse_float(v, &bo.band) || !(bo.band >= 1.0f && bo.band <= 64.0f))
          return vx_cli_usage_error("convert", "--band must be from 1 to 64 voxels (got '%s')", v);
      } else if (strcmp(a, "--threads") == 0) {
        if (vx_parse_u32(v, &u) || u > 1024)
          return vx_cli_usage_error("convert", "bad --threads '%s'", v);
        bo.threads = (int)u;
      } else if (strcmp(a, "--mem-limit") == 0) {
        if (vx_parse_bytes(v, &bo.mem_limit))
          return vx_cli_usage_error("convert", "bad --mem-limit '%s' (use e.g. 8G or 512M)", v);
      } else if (strcmp(a, "--import-timeout") == 0) {
        float secs;
        if (vx_parse_float(v, &secs) || !(secs >= 0.0f))
          return vx_cli_usage_error("convert", "bad --import-timeout '%s' (seconds, 0: none)", v);
        import_timeout = secs;
      } else if (strcmp(a, "--sign") == 0) {
        if (strcmp(v, "winding") == 0)
          bo.sign_rule = VX_SIGN_WINDING;
        else if (strcmp(v, "pseudo-normal") == 0)
          bo.sign_rule = VX_SIGN_PSEUDO_NORMAL;
        else
          return vx_cli_usage_error("convert", "--sign must be winding or pseudo-normal (got '%s')", v);
      } else if (strcmp(a, "--zstd-level") == 0) {
        if (vx_parse_u32(v, &u) || u < 1 || u > 22)
          return vx_cli_usage_error("convert", "--zstd-level must be 1..22 (got '%s')", v);
        zlevel = (int)u;
      } else {
        return vx_cli_usage_error("convert", "unknown option '%s'", a);
      }
    } else if (!in) {
      in = a;
    } else if (!out) {
      out = a;
    } else {
      return vx_cli_usage_error("convert", "unexpected argument '%s'", a);
    }
  }
  if (!in || !out) return vx_cli_usage_error("convert", "needs MESH and OUT.svo");
  if (!have_res) return vx_cli_usage_error("convert", "--res N is required");

  if (bo.mem_limit == 0) { /* default: stay within 80% of the machine's physical memory */
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    if (pages > 0 && page > 0) bo.mem_limit = (uint64_t)((double)pages * (double)page * 0.8);
  }
  vx_cli_install_signals();
  double t0 = vx_now_seconds();
  vx_error e;
  memset(&e, 0, sizeof e);
  vx_soup mesh;
  memset(&mesh, 0, sizeof mesh);
  if (vx_soup_import_isolated(in, import_timeout, &mesh, &e) != VX_OK)
    return vx_cli_fail("convert", &e);
  double t_import = vx_now_seconds() - t0;
  if (!vx_cli_quiet) {
    fprintf(stderr, "%s: %llu triangles from %u mesh(es) in %.2fs", in,
            (unsigned long long)mesh.tri_count, mesh.mesh_count, t_import);
    if (mesh.skipped_degenerate || mesh.skipped_nonfinite || mesh.skipped_nontriangle)
      fprintf(stderr, "; skipped %llu degenerate, %llu non-finite, %llu points/lines",
              (unsigned long long)mesh.skipped_degenerate,
              (unsigned long long)mesh.skipped_nonfinite,
              (unsigned long long)mesh.skipped_nontriangle);
    fputc('\n', stderr);
  }
  bo.progress = vx_cli_progress;
  vx_octree tree;
  memset(&tree, 0, sizeof tree);
  vx_voxelize_stats bs;
  memset(&bs, 0, sizeof bs);
  double t1 = vx_now_seconds();
  /* The streaming build keeps the peak under --mem-limit; its temporary files (if it spills) go
   * beside the output, on the file system that will hold the result. */
  char *tmp_dir = vx_cli_dirname(out);
  vx_stream stream;
  memset(&stream, 0, sizeof stream);
  vx_status s = tmp_dir ? VX_OK : vx_error_set(&e, VX_ERR_NOMEM, "out of memory");
  int gpu_tree = 0; /* the whole build ran on the GPU: `tree` holds the result */
  if (s == VX_OK && bo.gpu) {
    s = vx_voxelize_gpu(&mesh, &bo, &tree, &bs, &e);
    gpu_tree = s == VX_OK;
    if (s == VX_ERR_LIMIT || s == VX_ERR_NOMEM) { /* the surface on the GPU, the octree here */
      vx_cli_progress_done();
      if (!vx_cli_quiet)
        fprintf(stderr, "voxlod convert: %s; building the octree on the CPU, out of core\n",
                e.msg);
      s = vx_voxelize_stream(&mesh, &bo, tmp_dir, &stream, &bs, &e);
    }
    if (s == VX_ERR_NO_GPU || s == VX_ERR_CUDA || s == VX_ERR_NOMEM) {
      vx_cli_progress_done();
      fprintf(stderr, "voxlod convert: GPU build unavailable (%s); building on the CPU\n", e.msg);
      bo.gpu = 0;
      s = vx_voxelize_stream(&mesh, &bo, tmp_dir, &stream, &bs, &e);
    }
  } else if (s == VX_OK) {
    s = vx_voxelize_stream(&mesh, &bo, tmp_dir, &stream, &bs, &e);
  }
  free(tmp_dir);
  vx_soup_free(&mesh);
  int spilled = s == VX_OK && !gpu_tree && stream.spilled;
  if (s == VX_OK && gpu_tree) {
    /* vx_voxelize_gpu built (and pruned) the tree */
  } else if (s == VX_OK && !spilled) {
    s = vx_stream_take_tree(&stream, &tree, &e);
    if (s == VX_OK && bo.max_error > 0.0f) s = vx_octree_prune(&tree, bo.max_error, &e);
    vx_stream_free(&stream);
  } else if (s == VX_OK && bo.max_error > 0.0f) {
    vx_stream pruned;
    s = vx_stream_prune(&stream, bo.max_error, &pruned, &e);
    vx_stream_free(&stream);
    if (s == VX_OK) stream = pruned;
    else spilled = 0;
  }
  vx_cli_progress_done();
  if (s != VX_OK) {
    if (spilled) vx_stream_free(&stream);
    return vx_cli_fail("convert", &e);
  }
  double t_build = vx_now_seconds() - t1;
  if (vx_cli_interrupted) {
    if (spilled) vx_stream_free(&stream);
    vx_octree_free(&tree);
    e.status = VX_ERR_INTERRUPTED;
    snprintf(e.msg, sizeof e.msg, "interrupted; %s was not written", out);
    return vx_cli_fail("convert", &e);
  }
  double t2 = vx_now_seconds();
  if (spilled) {
    /* Long: Ctrl-C is seen through the progress callback, and the write cleans up after itself. */
    s = vx_svo_write_stream(out, &stream, zlevel, vx_cli_progress, NULL, &e);
    vx_cli_progress_done();
    tree.voxel_count = stream.level_count[stream.depth];
    tree.node_count = 0;
    for (uint32_t l = 0; l < stream.depth; l++) tree.node_count += stream.level_count[l];
    vx_stream_free(&stream);
  } else {
    /* The write is atomic; hold SIGINT/SIGTERM during it so an interrupt leaves either the old
     * file or the complete new one, never a temporary. */
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigprocmask(SIG_BLOCK, &block, &old);
    s = vx_svo_write(out, &tree, zlevel, NULL, NULL, &e);
    sigprocmask(SIG_SETMASK, &old, NULL);
  }
  double t_write = vx_now_seconds() - t2;
  if (s != VX_OK) {
    vx_octree_free(&tree);
    return vx_cli_fail("convert", &e);
  }
  if (!vx_cli_quiet) {
    if (spilled) fprintf(stderr, "%s: built out of core (levels spilled to temporary files)\n", out);
    FILE *f = fopen(out, "rb");
    long size = 0;
    if (f) {
      fseek(f, 0, SEEK_END);
      size = ftell(f);
      fclose(f);
    }
    char b[32];
    vx_format_bytes((double)size, b, sizeof b);
    fprintf(stderr,
            "%s: %u^3, %llu surface voxels, %llu nodes, %s on disk (%.2f B/surface voxel); "
            "import %.2fs, build %.2fs, write %.2fs, total %.2fs\n",
            out, bo.resolution, (unsigned long long)tree.voxel_count,
            (unsigned long long)tree.node_count, b,
            tree.voxel_count ? (double)size / (double)tree.voxel_count : 0.0, t_import, t_build,
            t_write, vx_now_seconds() - t0);
    fprintf(stderr, "%s: build on the %s: sign tables %.2fs%s, surface voxels and field %.2fs%s",
            out, bo.gpu ? "GPU" : "CPU", bs.sec_sign, gpu_tree ? " (on a CPU thread meanwhile)" : "",
            bs.sec_voxels, bo.gpu ? "" : " (with the octree)\n");
    if (bo.gpu)
      fprintf(stderr,
              ", octree and planes %.2fs%s\n%s: GPU stages: upload %.2fs, overlaps %.2fs, sort and "
              "index %.2fs, corner field %.2fs, copy back %.2fs",
              bs.sec_tree, gpu_tree ? " (GPU)" : " (CPU)", out, bs.sec_gpu[0], bs.sec_gpu[1],
              bs.sec_gpu[2], bs.sec_gpu[3], bs.sec_gpu[4]);
    if (gpu_tree)
      fprintf(stderr, "; octree levels %.2fs, planes %.2fs, copy back %.2fs", bs.sec_gpu_tree[0],
              bs.sec_gpu_tree[1], bs.sec_gpu_tree[2]);
    if (bo.gpu) fputc('\n', stderr);
  }
  vx_octree_free(&tree);
  return 0;
}

int vx_cmd_render(int argc, char **argv) {
  if (check_help(argc, argv, render_help_head, vx_view_args_help)) return 0;
  const char *in = NULL, *out = NULL;
  vx_view_args va;
  vx_view_args_init(&va);
  for (int i = 2; i < argc; i++) {
    int r = vx_view_args_parse(&va, argc, argv, &i, "render");
    if (r < 0) return 2;
    if (r > 0) continue;
    if (argv[i][0] == '-' && argv[i][1]) return vx_cli_usage_error("render", "unknown option '%s'", argv[i]);
    if (!in) in = argv[i];
    else if (!out) out = argv[i];
    else return vx_cli_usage_error("render", "unexpected argument '%s'", argv[i]);
  }
  if (!in || !out) return vx_cli_usage_error("render", "needs IN.svo and OUT.png");
  if (va.force_cpu && va.force_gpu) return vx_cli_usage_error("render", "--gpu and --cpu exclude each other");
  vx_error e;
  memset(&e, 0, sizeof e);
  vx_svo_read_opts rd;
  memset(&rd, 0, sizeof rd);
  rd.max_level = va.ro.lod >= 0 ? va.ro.lod : -1;
  vx_octree tree;
  memset(&tree, 0, sizeof tree);
  if (vx_cli_read(in, rd.max_level, &tree, NULL, &e) != VX_OK) return vx_cli_fail("render", &e);
  vx_march_opts ro = va.ro;
  if (ro.lod == -2 || ro.lod > (int)tree.depth) ro.lod = (int)tree.depth;
  vx_view_args_camera(&va, &tree, &ro.cam);
  vx_march_image img;
  if (vx_march_image_alloc(&img, ro.width, ro.height, 0, &e) != VX_OK) {
    vx_octree_free(&tree);
    return vx_cli_fail("render", &e);
  }
  double t0 = vx_now_seconds();
  int used_gpu = 0;
  vx_status s = vx_cli_render(&tree, &ro, &va, &img, &used_gpu, &e);
  double dt = vx_now_seconds() - t0;
  if (s == VX_OK) s = vx_png_write(out, img.rgb, img.width, img.height, &e);
  uint64_t hits = 0;
  for (uint64_t p = 0; p < (uint64_t)img.width * img.height; p++) hits += isfinite(img.depth[p]);
  vx_march_image_free(&img);
  uint32_t depth = tree.depth;
  vx_octree_free(&tree);
  if (s != VX_OK) return vx_cli_fail("render", &e);
  if (!vx_cli_quiet) {
    char lod[16];
    if (ro.lod == VX_LOD_AUTO) snprintf(lod, sizeof lod, "auto");
    else snprintf(lod, sizeof lod, "%d/%u", ro.lod, depth);
    fprintf(stderr, "%s: %ux%u, lod %s, %s, %.1f ms, %.1f%% of pixels hit\n", out, ro.width,
            ro.height, lod, used_gpu ? "GPU" : "CPU", dt * 1e3,
            100.0 * (double)hits / ((double)ro.width * ro.height));
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
      strcmp(argv[1], "help") == 0) {
    fputs(main_help, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const char *c = argv[1];
  if (strcmp(c, "convert") == 0) return vx_cmd_convert(argc, argv);
  if (vx_cli_take_read_limit(&argc, argv, c)) return 2;
  if (strcmp(c, "render") == 0) return vx_cmd_render(argc, argv);
  if (strcmp(c, "stats") == 0) return vx_cmd_stats(argc, argv);
  if (strcmp(c, "bench") == 0) return vx_cmd_bench(argc, argv);
  if (strcmp(c, "compare") == 0) return vx_cmd_compare(argc, argv);
  fprintf(stderr, "voxlod: unknown command '%s'\n\n%s", c, main_help);
  return 2;
}
