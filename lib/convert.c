/* SPDX-License-Identifier: Apache-2.0 */
/* convert.c - vx_convert: the whole pipeline `voxlod convert` runs, as one library call.
 *
 * vx_convert keeps the tree in memory, vx_convert_to_file writes it; both run convert_mesh.
 *
 * Policy, in order:
 * 1. Options are checked and the output path too (atomic_file.h: its directory, its kind, not an
 *    input), before any work.
 * 2. Device. With the GPU (VX_DEVICE_GPU, or AUTO when one is usable) the whole build runs there
 *    when the tree fits host memory (vx_voxelize_gpu); when it does not (VX_ERR_LIMIT), or GPU
 *    memory runs out, the surface is built on the GPU and the octree on the CPU, out of core;
 *    when no GPU can run it, AUTO falls back to the CPU (with a note) and GPU fails. Every path
 *    gives the same bytes (voxelizer.h).
 * 3. The CPU build is the streaming one (vx_voxelize_stream): its levels stay in memory while
 *    they and the later write fit the memory limit, else they spill to temporary files beside
 *    the output (or opts->temp_dir); a limit too small even for that is refused at once.
 * 4. Pruning on the tree in memory, or level by level on a spilled stream.
 * 5. Colour (when the mesh has it and opts.color allows): the streaming build colours its blocks
 *    as it goes (voxelizer/color_block.c), whether its levels stay in memory or spill, and pruning
 *    keeps the colours; a tree built whole on the GPU is coloured by vx_color_tree (its parts made
 *    on the GPU); either stays grey (a note) when its colour does not fit the memory limit (the
 *    streaming build is then run again without colour). Every path gives the same bytes.
 * 6. The .svo file through the one writer (svo_write.c), from the tree or the spilled stream.
 */
#include "lib/internal.h"
#include "lib/convert_split.h"
#include "lib/convert_tiled.h"
#include "svo/lod.h"
#include "svo/stream.h"
#include "sys/system.h"
#include "voxelizer/voxelizer.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

void vx_notes_add(vx_notes *n, const char *fmt, ...) {
  size_t at = strlen(n->text);
  if (at + 2 >= sizeof n->text) return;
  if (at) n->text[at++] = '\n';
  char raw[sizeof n->text];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(raw, sizeof raw, fmt, ap);
  va_end(ap);
  vx_text_escape(n->text + at, sizeof n->text - at, raw); /* one line, no terminal controls */
}

void vx_conversion_free(vx_conversion *c) {
  if (!c) return;
  vx_tree_free(c->tree);
  vx_free(c);
}

const vx_tree *vx_conversion_tree(const vx_conversion *c) { return c ? c->tree : NULL; }

vx_tree *vx_conversion_take_tree(vx_conversion *c) {
  if (!c) return NULL;
  vx_tree *t = c->tree;
  c->tree = NULL;
  return t;
}

const char *vx_conversion_notes(const vx_conversion *c) { return c ? c->notes.text : ""; }

vx_status vx_conversion_get_stats(const vx_conversion *c, vx_conversion_stats *st) {
  if (!c || !st) return VX_ERR_INVALID_ARG;
  VX_STATS_OUT(st, c->stats);
  return VX_OK;
}

static int is_pow2_res(uint32_t r, uint32_t max_depth) {
  return r >= 2 && r <= (1u << max_depth) && (r & (r - 1)) == 0;
}

static vx_status check_opts(const vx_convert_opts *o, vx_error *err) {
  if (o->gpus < -1 || o->gpus > 64)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "GPU count %d outside -1 (all) .. 64", o->gpus);
  if (o->gpus != 0 && (o->device == VX_DEVICE_CPU || o->tile_depth == 0))
    return vx_error_set(err, VX_ERR_INVALID_ARG, "several GPUs build a tiled tree on the GPU: "
                        "set the tile depth and the device to auto or GPU");
  if (o->tile_depth > VX_MAX_DEPTH)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "tile depth %u outside 1..%d (0: one tree)",
                        o->tile_depth, VX_MAX_DEPTH);
  if (!is_pow2_res(o->resolution, o->tile_depth ? VX_MAX_TILED_DEPTH : VX_MAX_DEPTH))
    return vx_error_set(err, VX_ERR_INVALID_ARG,
                        "resolution %u is not a power of two from 2 to %u%s", o->resolution,
                        o->tile_depth ? 1u << VX_MAX_TILED_DEPTH : 1u << VX_MAX_DEPTH,
                        o->tile_depth ? "" : " (finer grids are built in tiles)");
  if (!(o->max_error >= 0.0f) || !(o->max_error < 1e30f))
    return vx_error_set(err, VX_ERR_INVALID_ARG, "max error %g is not a number >= 0",
                        (double)o->max_error);
  if (!(o->band >= 1.0f && o->band <= 64.0f))
    return vx_error_set(err, VX_ERR_INVALID_ARG, "band %g outside 1..64 voxels", (double)o->band);
  if (o->threads < 0 || o->threads > 1024)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "thread count %d outside 0..1024", o->threads);
  if (o->device != VX_DEVICE_AUTO && o->device != VX_DEVICE_CPU && o->device != VX_DEVICE_GPU)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "unknown device %d", (int)o->device);
  if (o->sign_rule != VX_SIGN_WINDING && o->sign_rule != VX_SIGN_PSEUDO_NORMAL)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "unknown sign rule %d", o->sign_rule);
  if (o->color != VX_COLOR_AUTO && o->color != VX_COLOR_OFF)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "unknown colour mode %d", (int)o->color);
  if (o->color_filter != VX_COLOR_FILTER_MEAN && o->color_filter != VX_COLOR_FILTER_DOMINANT)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "unknown colour filter %d", (int)o->color_filter);
  if (o->zstd_level < 0 || o->zstd_level > 22)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "zstd level %d outside 1..22 (0: by size)",
                        o->zstd_level);
  return VX_OK;
}

vx_status vx_convert_opts_ready(const vx_convert_opts *opts, vx_convert_opts *o, vx_error *err) {
  vx_status s = VX_OPTS_IN(*o, opts, err);
  if (s != VX_OK) return s;
  if (o->resolution == 0) o->resolution = 256;
  if (o->band == 0.0f) o->band = 2.0f;
  if (o->mem_limit == 0) o->mem_limit = vx_default_mem_limit();
  if (o->tile_depth == 0 && o->resolution > (1u << VX_MAX_DEPTH)) o->tile_depth = VX_MAX_DEPTH;
  return check_opts(o, err);
}

char *vx_convert_spill_dir(const vx_convert_opts *o, char *out_dir) {
  if (o->temp_dir) {
    vx_free(out_dir);
    return vx_strdup(o->temp_dir);
  }
  if (out_dir) return out_dir;
  const char *env = getenv("TMPDIR");
  return vx_strdup(env && *env ? env : "/tmp");
}

/* Runs the build on the chosen device; *tree or *stream (spilled, or not when *tree is set)
 * receives the result. */
static vx_status build(const vx_soup *mesh, vx_voxelize_opts *bo, vx_device device,
                       const char *tmp_dir, vx_octree *tree, vx_stream *stream, int *gpu_tree,
                       vx_voxelize_stats *bs, vx_notes *notes, vx_error *err) {
  *gpu_tree = 0;
  vx_status s = VX_ERR_NO_GPU;
  vx_error ge;
  memset(&ge, 0, sizeof ge);
  if (device != VX_DEVICE_CPU) {
    bo->gpu = 1;
    s = vx_voxelize_gpu(mesh, bo, tree, bs, &ge);
    *gpu_tree = s == VX_OK;
    if ((s == VX_ERR_LIMIT && !vx_voxelize_refused_overlap(&ge)) || s == VX_ERR_NOMEM) {
      /* the surface on the GPU, the octree here (triangles refused for their overlap are
       * refused by every build: not retried) */
      vx_notes_add(notes, "%s; building the tree on the CPU, out of core", ge.msg);
      s = vx_voxelize_stream(mesh, bo, tmp_dir, stream, bs, &ge);
    }
    if (s == VX_ERR_NO_GPU || s == VX_ERR_CUDA || s == VX_ERR_NOMEM) {
      if (device == VX_DEVICE_GPU) {
        if (err) *err = ge;
        return s;
      }
      vx_notes_add(notes, "GPU build unavailable (%s); building on the CPU", ge.msg);
      bo->gpu = 0;
      s = VX_ERR_NO_GPU; /* go on below */
    } else if (s != VX_OK) {
      if (err) *err = ge;
      return s;
    } else {
      return VX_OK;
    }
  }
  bo->gpu = 0;
  return vx_voxelize_stream(mesh, bo, tmp_dir, stream, bs, err);
}

/* Colours the final tree (vx_color_tree_ex), its triangle parts made on the GPU when `gpu` is set
 * (*on_gpu set) and on the CPU otherwise or when the GPU cannot (a note): the same bytes either
 * way. A tree the streaming build coloured already (tree NULL when spilled) is left as it is; one
 * whose colour does not fit the memory limit stays grey: a note, not a failed conversion. */
static void color_notes(const vx_soup *soup, const vx_convert_opts *o, vx_notes *notes) {
  if (!soup->color || o->color == VX_COLOR_OFF) return;
  for (const char *w = soup->color->warnings; w && *w;) { /* the import's, one note a line */
    const char *end = strchr(w, '\n');
    size_t len = end ? (size_t)(end - w) : strlen(w);
    if (len) vx_notes_add(notes, "%.*s", (int)(len < 400 ? len : 400), w);
    w += len + (end != NULL);
  }
}

/* Whether tree still needs the whole colour pass (a whole tree from the GPU build). */
static int needs_color_pass(const vx_soup *soup, const vx_convert_opts *o, const vx_octree *tree) {
  return soup->color && o->color != VX_COLOR_OFF && tree && !tree->node_color;
}

/* The whole pass over tree (needs_color_pass): *limited set when the memory limit left it grey. */
static vx_status color_run(const vx_soup *soup, const vx_convert_opts *o, int gpu,
                           vx_octree *tree, int *on_gpu, int *limited, vx_notes *notes,
                           vx_error *err) {
  if (limited) *limited = 0;
  if (!needs_color_pass(soup, o, tree)) return VX_OK;
  if (o->progress && o->progress(o->user, "colouring", 0.0))
    return vx_error_set(err, VX_ERR_INTERRUPTED, "interrupted before colouring");
  vx_error ce, gn;
  memset(&ce, 0, sizeof ce);
  memset(&gn, 0, sizeof gn);
  vx_status s = vx_color_tree_ex(soup, tree, o->color_filter, o->threads, o->mem_limit, gpu,
                                 on_gpu, &gn, &ce);
  if (gpu && gn.msg[0]) vx_notes_add(notes, "colour computed on the CPU (%s)", gn.msg);
  if (s == VX_ERR_LIMIT || s == VX_ERR_NOMEM) {
    if (limited) *limited = 1;
    vx_notes_add(notes, "colour not computed (%s): a grey tree", ce.msg);
    return VX_OK;
  }
  if (s != VX_OK) {
    if (err) *err = ce;
    return s;
  }
  if (o->progress && o->progress(o->user, "colouring", 1.0))
    return vx_error_set(err, VX_ERR_INTERRUPTED, "interrupted after colouring");
  return VX_OK;
}

static vx_status color_pass(const vx_soup *soup, const vx_convert_opts *o, int gpu,
                            vx_octree *tree, int *on_gpu, vx_notes *notes, vx_error *err) {
  color_notes(soup, o, notes);
  return color_run(soup, o, gpu, tree, on_gpu, NULL, notes, err);
}

/* The whole colour pass on a thread of its own while the file's levels compress
 * (vx_svo_write_pending): a GPU-built tree's colour then costs the conversion only what it takes
 * beyond the levels' compression. It runs without progress calls (they stay on the caller's
 * thread) and within the memory limit less what the writer may take meanwhile (writer_room);
 * when that leaves it grey for memory, the write is abandoned (`retry`) and the caller colours
 * and writes one after the other, as without the overlap. It is joined in color_ready, which the
 * writer calls on every path; its notes are the conversion's after that. */
typedef struct color_job {
  const vx_soup *soup;
  vx_convert_opts o;
  int gpu, on_gpu, limited, joined, retry;
  vx_octree *tree;
  vx_notes notes;
  vx_status st;
  vx_error err;
  double sec;
  pthread_t th;
} color_job;

static void *color_thread(void *arg) {
  color_job *j = (color_job *)arg;
  double t0 = vx_clock_seconds();
  j->st = color_run(j->soup, &j->o, j->gpu, j->tree, &j->on_gpu, &j->limited, &j->notes, &j->err);
  j->sec = vx_clock_seconds() - t0;
  return NULL;
}

static vx_status color_ready(void *user, int *has_color, vx_error *err) {
  color_job *j = (color_job *)user;
  if (!j->joined) pthread_join(j->th, NULL);
  j->joined = 1;
  *has_color = j->tree->node_color != NULL;
  if (j->st != VX_OK) {
    if (err) *err = j->err;
    return j->st;
  }
  if (j->limited) {
    j->retry = 1;
    return vx_error_set(err, VX_ERR_LIMIT, "colour did not fit beside the write");
  }
  return VX_OK;
}

/* What writing tree t may hold at most: each section packed and compressed in memory (twice
 * its raw bytes with the margins), the colours included, and zstd's contexts. */
static double writer_room(const vx_octree *t) {
  double raw = (double)t->node_count * 12.0 + (double)t->voxel_count * 8.0 +
               4.0 * (double)(t->node_count + t->voxel_count);
  return 2.0 * raw + 64.0 * 1048576.0;
}

/* The conversion: the tree to out_path (when not NULL) and kept in the result (keep_tree). */
static vx_status convert_mesh(const vx_mesh *mesh, const vx_convert_opts *opts,
                              const char *out_path, int keep_tree, vx_conversion **out,
                              vx_error *err) {
  if (out) *out = NULL;
  if (!mesh) return vx_error_set(err, VX_ERR_INVALID_ARG, "no mesh to convert");
  vx_convert_opts o;
  vx_status s = vx_convert_opts_ready(opts, &o, err);
  if (s != VX_OK) return s;
  if (o.tile_depth && !out_path)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "a tiled tree is written to a file "
                        "(vx_convert_to_file), not kept in memory");
  double t0 = vx_clock_seconds();
  char *out_dir = NULL;
  if (out_path && (s = vx_output_check(out_path, NULL, 0, &out_dir, err)) != VX_OK) return s;
  char *tmp_dir = vx_convert_spill_dir(&o, out_dir);
  vx_conversion *b = (vx_conversion *)vx_calloc(1, sizeof *b);
  if (!tmp_dir || !b) {
    vx_free(tmp_dir);
    vx_free(b);
    return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  }
  if (o.tile_depth) {
    s = vx_convert_tiled(&mesh->soup, &o, out_path, tmp_dir, b, err);
    vx_free(tmp_dir);
    vx_octree none;
    memset(&none, 0, sizeof none);
    return vx_conversion_finish(s, b, &none, out_path, 0, out, err);
  }
  vx_voxelize_opts bo;
  memset(&bo, 0, sizeof bo);
  bo.resolution = o.resolution;
  bo.band = o.band;
  bo.max_error = o.max_error;
  bo.threads = o.threads;
  bo.mem_limit = o.mem_limit;
  bo.progress = o.progress;
  bo.user = o.user;
  bo.sign_rule = o.sign_rule;
  bo.color = mesh->soup.color && o.color != VX_COLOR_OFF; /* the streaming build's colour */
  bo.color_filter = o.color_filter;
  vx_voxelize_stats bs;
  memset(&bs, 0, sizeof bs);
  vx_octree tree;
  memset(&tree, 0, sizeof tree);
  vx_stream stream;
  memset(&stream, 0, sizeof stream);
  int gpu_tree = 0;
  vx_error be;
  memset(&be, 0, sizeof be);
  s = build(&mesh->soup, &bo, o.device, tmp_dir, &tree, &stream, &gpu_tree, &bs, &b->notes, &be);
  int grey = 0; /* the colour did not fit: the tree is built grey (a note), as the pass's would */
  if (s == VX_ERR_LIMIT && bo.color && !vx_voxelize_refused_overlap(&be)) {
    vx_error ce = be;
    bo.color = 0;
    s = build(&mesh->soup, &bo, o.device, tmp_dir, &tree, &stream, &gpu_tree, &bs, &b->notes,
              &be);
    if (s == VX_OK) {
      vx_notes_add(&b->notes, "colour not computed (%s): a grey tree", ce.msg);
      grey = 1;
    }
  }
  if (s != VX_OK && err) *err = be;
  vx_free(tmp_dir);
  if (bs.duplicates)
    vx_notes_add(&b->notes, "%llu exact duplicate triangle%s dropped (the same vertices in the "
                 "same order as an earlier triangle)", (unsigned long long)bs.duplicates,
                 bs.duplicates == 1 ? "" : "s");
  int spilled = s == VX_OK && !gpu_tree && stream.spilled;
  if (s == VX_OK && gpu_tree) {
    /* vx_voxelize_gpu built and pruned the tree */
  } else if (s == VX_OK && !spilled) {
    s = vx_stream_take_tree(&stream, &tree, err);
    if (s == VX_OK && o.max_error > 0.0f) {
      s = vx_octree_prune(&tree, o.max_error, err);
      tree.prune_error = o.max_error;
    }
    vx_stream_free(&stream);
  } else if (s == VX_OK && o.max_error > 0.0f) {
    vx_stream pruned;
    s = vx_stream_prune(&stream, o.max_error, &pruned, err);
    vx_stream_free(&stream);
    if (s == VX_OK) stream = pruned;
  }
  const double tc = vx_clock_seconds();
  /* the colour pass's parts on the device that built the tree */
  int color_gpu = 0;
  color_job cj;
  memset(&cj, 0, sizeof cj);
  int overlap = 0;
  if (s == VX_OK && !grey && out_path && !spilled &&
      needs_color_pass(&mesh->soup, &o, &tree)) {
    const double room = writer_room(&tree), rss = (double)vx_resident_bytes();
    if ((double)o.mem_limit > rss + 2.0 * room) {
      cj.soup = &mesh->soup;
      cj.o = o;
      cj.o.progress = NULL;
      cj.o.mem_limit = (uint64_t)((double)o.mem_limit - room);
      cj.gpu = bo.gpu;
      cj.tree = &tree;
      color_notes(&mesh->soup, &o, &b->notes);
      overlap = pthread_create(&cj.th, NULL, color_thread, &cj) == 0;
    }
  }
  if (s == VX_OK && !grey && !overlap)
    s = color_pass(&mesh->soup, &o, bo.gpu, spilled ? NULL : &tree, &color_gpu, &b->notes, err);
  double sec_color = mesh->soup.color && o.color != VX_COLOR_OFF && !grey
                         ? vx_clock_seconds() - tc + bs.sec_color
                         : 0.0;
  if (s == VX_OK && spilled && keep_tree) {
    char lim[32];
    s = vx_error_set(err, VX_ERR_LIMIT, "the tree does not fit the memory limit (%s) in memory: "
                     "it can only be written to a file",
                     vx_bytes_text((double)o.mem_limit, lim, sizeof lim));
  }
  if (s == VX_OK && o.progress && o.progress(o.user, "writing", 0.0))
    s = vx_error_set(err, VX_ERR_INTERRUPTED, "interrupted before writing");
  double t1 = vx_clock_seconds();
  if (overlap) {
    /* the colour thread is joined in color_ready on every path of the write */
    if (s == VX_OK)
      s = vx_svo_write_pending(out_path, &tree, o.zstd_level, o.progress, o.user, color_ready,
                               &cj, err);
    if (!cj.joined) pthread_join(cj.th, NULL);
    color_gpu = cj.on_gpu;
    sec_color = cj.sec;
    if (cj.retry) { /* grey for want of memory beside the write: colour, then write */
      const double tr = vx_clock_seconds();
      s = color_run(&mesh->soup, &o, bo.gpu, &tree, &color_gpu, NULL, &b->notes, err);
      sec_color += vx_clock_seconds() - tr;
      if (s == VX_OK) s = vx_svo_write(out_path, &tree, o.zstd_level, o.progress, o.user, err);
    } else {
      for (const char *l = cj.notes.text; *l;) {
        const char *end = strchr(l, '\n');
        size_t len = end ? (size_t)(end - l) : strlen(l);
        vx_notes_add(&b->notes, "%.*s", (int)len, l);
        l += len + (end != NULL);
      }
    }
  } else if (s == VX_OK && out_path) {
    s = spilled ? vx_svo_write_stream(out_path, &stream, o.zstd_level, o.progress, o.user, err)
                : vx_svo_write(out_path, &tree, o.zstd_level, o.progress, o.user, err);
  }
  double t2 = vx_clock_seconds();
  vx_conversion_stats *st = &b->stats;
  st->struct_size = sizeof *st;
  st->resolution = o.resolution;
  st->triangles = bs.triangles;
  st->surface_voxels = spilled ? stream.level_count[stream.depth] : tree.voxel_count;
  if (spilled)
    for (uint32_t l = 0; l < stream.depth; l++) st->nodes += stream.level_count[l];
  else
    st->nodes = tree.node_count;
  st->corners = bs.corners;
  st->used_gpu = bo.gpu;
  st->gpu_tree = gpu_tree;
  st->spilled = spilled;
  st->color_gpu = color_gpu;
  st->sec_build = t1 - t0;
  st->sec_write = out_path ? t2 - t1 : 0.0;
  st->sec_total = t2 - t0;
  st->sec_sign = bs.sec_sign;
  st->sec_voxels = bs.sec_voxels;
  st->sec_tree = bs.sec_tree;
  for (int k = 0; k < 5; k++) st->sec_gpu[k] = bs.sec_gpu[k];
  for (int k = 0; k < 3; k++) st->sec_gpu_tree[k] = bs.sec_gpu_tree[k];
  st->sec_color = sec_color;
  if (spilled) vx_stream_free(&stream);
  return vx_conversion_finish(s, b, &tree, out_path, keep_tree, out, err);
}

vx_status vx_convert(const vx_mesh *mesh, const vx_convert_opts *opts, vx_conversion **out,
                     vx_error *err) {
  if (!out) return vx_error_set(err, VX_ERR_INVALID_ARG, "no place for the result");
  return convert_mesh(mesh, opts, NULL, 1, out, err);
}

vx_status vx_convert_to_file(const vx_mesh *mesh, const vx_convert_opts *opts, const char *path,
                             vx_conversion **out, vx_error *err) {
  if (out) *out = NULL;
  if (!path || !*path) return vx_error_set(err, VX_ERR_INVALID_ARG, "empty output path");
  return convert_mesh(mesh, opts, path, 0, out, err);
}

/* The split conversion of mesh_path when it applies: VX_ERR_FORMAT when the file is assimp's. */
static vx_status convert_split(const char *mesh_path, const vx_convert_opts *o, const char *path,
                               vx_mesh_info *info, vx_conversion **out, vx_error *err) {
  char *out_dir = NULL;
  vx_status s = vx_output_check(path, &mesh_path, 1, &out_dir, err);
  if (s != VX_OK) return s;
  char *tmp_dir = vx_convert_spill_dir(o, out_dir);
  vx_conversion *b = (vx_conversion *)vx_calloc(1, sizeof *b);
  if (!tmp_dir || !b) {
    vx_free(tmp_dir);
    vx_free(b);
    return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  }
  vx_mesh_info mi;
  memset(&mi, 0, sizeof mi);
  mi.struct_size = sizeof mi;
  s = vx_convert_split(mesh_path, o, path, tmp_dir, &mi, b, err);
  vx_free(tmp_dir);
  if (s == VX_ERR_FORMAT) {
    vx_conversion_free(b);
    return s;
  }
  if (info) VX_STATS_OUT(info, mi);
  vx_octree none;
  memset(&none, 0, sizeof none);
  return vx_conversion_finish(s, b, &none, path, 0, out, err);
}

vx_status vx_convert_file(const char *mesh_path, const vx_mesh_load_opts *load_opts,
                          const vx_convert_opts *opts, const char *path, vx_mesh_info *info,
                          vx_conversion **out, vx_error *err) {
  if (out) *out = NULL;
  if (!mesh_path || !*mesh_path) return vx_error_set(err, VX_ERR_INVALID_ARG, "empty mesh path");
  if (!path || !*path) return vx_error_set(err, VX_ERR_INVALID_ARG, "empty output path");
  vx_convert_opts o;
  vx_status s = vx_convert_opts_ready(opts, &o, err);
  if (s != VX_OK) return s;
  if (vx_split_applies(&o)) {
    s = convert_split(mesh_path, &o, path, info, out, err);
    if (s != VX_ERR_FORMAT) return s;
  }
  vx_mesh *mesh = NULL;
  s = vx_mesh_load(mesh_path, load_opts, &mesh, err);
  if (s == VX_OK && info) s = vx_mesh_get_info(mesh, info);
  if (s == VX_OK) s = vx_convert_to_file(mesh, opts, path, out, err);
  vx_mesh_free(mesh);
  return s;
}

vx_status vx_conversion_finish(vx_status s, vx_conversion *b, vx_octree *tree,
                               const char *out_path, int keep_tree, vx_conversion **out,
                               vx_error *err) {
  struct stat fs;
  if (s == VX_OK && out_path && stat(out_path, &fs) == 0 && S_ISREG(fs.st_mode))
    b->stats.file_bytes = (uint64_t)fs.st_size;
  if (s == VX_OK && keep_tree) {
    b->tree = vx_tree_new();
    if (!b->tree) {
      s = vx_error_set(err, VX_ERR_NOMEM, "out of memory");
    } else {
      b->tree->oct = *tree;
      memset(tree, 0, sizeof *tree);
    }
  }
  vx_octree_free(tree);
  if (s != VX_OK || !out) {
    vx_conversion_free(b);
    return s;
  }
  *out = b;
  return VX_OK;
}
