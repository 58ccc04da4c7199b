/* SPDX-License-Identifier: Apache-2.0 */
/* render.c - vx_renderer: a tree prepared once (uploaded to the GPU, or the CPU renderer's
 * threads), then any number of frames into the caller's memory. */
#include "lib/internal.h"
#include "lib/tiled_render.h"
#include "marcher/gpu_render.h"
#include "marcher/marcher.h"
#include "marcher/scene.h"
#include "sys/system.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

struct vx_renderer {
  const vx_tree *tree;      /* NULL for a tiled tree */
  vx_tiled_render *tiled;   /* a tiled tree's renderer (lib/tiled_render.h), or NULL */
  const vx_octree *shape;   /* the tree, or the tiled tree's top as a tree of its whole depth */
  vx_gpu_view *gpu;  /* NULL: the CPU renderer */
  int used_gpu;      /* a tiled tree drawn on the GPU */
  int threads;
  vx_notes notes;
  double ms_create;
  float *scratch;    /* depth for the CPU renderer when the caller wants none */
  size_t scratch_cap;
};

int vx_gpu_available(void) { return vx_cuda_device_name() != NULL; }

const char *vx_gpu_name(void) { return vx_cuda_device_name(); }

void vx_camera_orbit(const vx_tree *t, double azimuth_deg, double elevation_deg, double fov_y_deg,
                     vx_camera *cam) {
  if (!t || !cam) return;
  vx_march_orbit(&t->oct, azimuth_deg, elevation_deg, fov_y_deg, cam);
}

void vx_renderer_free(vx_renderer *r) {
  if (!r) return;
  vx_gpu_view_free(r->gpu);
  vx_tiled_render_free(r->tiled);
  vx_free(r->scratch);
  vx_free(r);
}

vx_status vx_renderer_create(const vx_tree *t, const vx_renderer_opts *opts, vx_renderer **out,
                             vx_error *err) {
  if (!out) return vx_error_set(err, VX_ERR_INVALID_ARG, "no place for the renderer");
  *out = NULL;
  if (!t || !t->oct.nodes) return vx_error_set(err, VX_ERR_INVALID_ARG, "no tree to render");
  vx_status ws = vx_octree_check_world(&t->oct, VX_WORLD_DOUBLE, err);
  if (ws != VX_OK) return ws;
  vx_renderer_opts o;
  vx_status os = VX_OPTS_IN(o, opts, err);
  if (os != VX_OK) return os;
  if (o.device != VX_DEVICE_AUTO && o.device != VX_DEVICE_CPU && o.device != VX_DEVICE_GPU)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "unknown device %d", (int)o.device);
  if (o.threads < 0 || o.threads > 1024)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "thread count %d outside 0..1024", o.threads);
  vx_renderer *r = (vx_renderer *)vx_calloc(1, sizeof *r);
  if (!r) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  r->tree = t;
  r->shape = &t->oct;
  r->threads = o.threads;
  double t0 = vx_clock_seconds();
  if (o.device != VX_DEVICE_CPU) {
    vx_error ge;
    memset(&ge, 0, sizeof ge);
    vx_status s = vx_gpu_view_create(&t->oct, &r->gpu, &ge);
    if (s != VX_OK) {
      if (o.device == VX_DEVICE_GPU) {
        if (err) *err = ge;
        vx_renderer_free(r);
        return s;
      }
      vx_notes_add(&r->notes, "GPU render unavailable (%s); using the CPU", ge.msg);
      r->gpu = NULL;
    }
  }
  r->ms_create = (vx_clock_seconds() - t0) * 1e3;
  *out = r;
  return VX_OK;
}

vx_status vx_renderer_create_tiled(vx_tiled_file *f, const vx_renderer_opts *opts,
                                   vx_renderer **out, vx_error *err) {
  if (!out) return vx_error_set(err, VX_ERR_INVALID_ARG, "no place for the renderer");
  *out = NULL;
  if (!f) return vx_error_set(err, VX_ERR_INVALID_ARG, "no tiled tree to render");
  vx_renderer_opts o;
  vx_status s = VX_OPTS_IN(o, opts, err);
  if (s != VX_OK) return s;
  if (o.device != VX_DEVICE_AUTO && o.device != VX_DEVICE_CPU && o.device != VX_DEVICE_GPU)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "unknown device %d", (int)o.device);
  if (o.threads < 0 || o.threads > 1024)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "thread count %d outside 0..1024", o.threads);
  if (o.stream_tiles != 0 && o.stream_tiles != 1)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "stream_tiles %d is not 0 or 1", o.stream_tiles);
  vx_renderer *r = (vx_renderer *)vx_calloc(1, sizeof *r);
  if (!r) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  r->threads = o.threads;
  const uint64_t budget = (uint64_t)o.memory_budget_mib << 20;
  double t0 = vx_clock_seconds();
  s = VX_ERR_NO_GPU;
  if (o.device != VX_DEVICE_CPU) {
    vx_error ge;
    memset(&ge, 0, sizeof ge);
    s = vx_tiled_render_create(f, 1, o.threads, budget, o.stream_tiles, &r->tiled, &ge);
    if (s == VX_OK) {
      r->used_gpu = 1;
    } else if (o.device == VX_DEVICE_GPU || s == VX_ERR_LIMIT) {
      if (err) *err = ge;
      vx_renderer_free(r);
      return s;
    } else {
      vx_notes_add(&r->notes, "GPU render unavailable (%s); using the CPU", ge.msg);
    }
  }
  if (s != VX_OK)
    s = vx_tiled_render_create(f, 0, o.threads, budget, o.stream_tiles, &r->tiled, err);
  if (s != VX_OK) {
    vx_renderer_free(r);
    return s;
  }
  r->shape = vx_tiled_render_shape(r->tiled);
  r->ms_create = (vx_clock_seconds() - t0) * 1e3;
  *out = r;
  return VX_OK;
}

const char *vx_renderer_notes(const vx_renderer *r) { return r ? r->notes.text : ""; }

vx_status vx_renderer_get_info(const vx_renderer *r, vx_renderer_info *info) {
  if (!r || !info) return VX_ERR_INVALID_ARG;
  vx_renderer_info i;
  memset(&i, 0, sizeof i);
  i.struct_size = sizeof i;
  i.used_gpu = r->gpu != NULL || r->used_gpu;
  if (r->tiled) {
    vx_tiled_residency res;
    vx_tiled_render_residency(r->tiled, &res);
    snprintf(i.device, sizeof i.device, "%s", vx_tiled_render_device(r->tiled));
    i.tree_bytes = r->used_gpu ? res.resident_bytes : 0;
    i.budget_bytes = res.budget_bytes;
    i.resident_bytes = res.resident_bytes;
    i.tiles = res.tiles;
    i.tiles_detailed = res.tiles_detailed;
    i.coarse_level = res.coarse_level;
  } else if (r->gpu)
    snprintf(i.device, sizeof i.device, "%s", vx_gpu_view_device(r->gpu));
  else
    snprintf(i.device, sizeof i.device, "CPU (%d threads)", vx_thread_count(r->threads, 1024));
  if (!r->tiled) i.tree_bytes = r->gpu ? vx_gpu_view_tree_bytes(r->gpu) : 0;
  i.ms_create = r->ms_create;
  VX_STATS_OUT(info, i);
  return VX_OK;
}

/* The march options of a public render option struct, for the renderer's tree (a tiled tree's
 * are checked by vx_tiled_scene_init). */
static vx_status march_opts(const vx_renderer *r, const vx_render_opts *opts, vx_march_opts *m,
                            vx_error *err) {
  const vx_octree *t = r->shape;
  vx_render_opts o;
  memset(m, 0, sizeof *m);
  vx_status os = VX_OPTS_IN(o, opts, err);
  if (os != VX_OK) return os;
  m->width = o.width ? o.width : 800;
  m->height = o.height ? o.height : 600;
  if (m->width > 32768 || m->height > 32768)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "image size %ux%u outside 1x1 .. 32768x32768",
                        m->width, m->height);
  switch (o.lod) {
  case VX_LOD_FINEST:
    m->lod = (int)t->depth;
    break;
  case VX_LOD_LEVEL:
    if (o.level < 0 || o.level > (int)t->depth)
      return vx_error_set(err, VX_ERR_INVALID_ARG,
                          "level of detail %d outside 0..%u (the tree's depth)", o.level,
                          t->depth);
    m->lod = o.level;
    break;
  case VX_LOD_PIXEL:
    m->lod = VX_LOD_AUTO;
    break;
  default:
    return vx_error_set(err, VX_ERR_INVALID_ARG, "unknown level-of-detail mode %d", (int)o.lod);
  }
  if (!(o.lod_scale >= 0.0f) || !(o.lod_scale < 1e6f))
    return vx_error_set(err, VX_ERR_INVALID_ARG, "LOD scale %g is not a number >= 0",
                        (double)o.lod_scale);
  m->lod_scale = o.lod_scale > 0.0f ? o.lod_scale : 1.0f;
  m->shade = o.shade;
  const vx_camera *c = &o.camera;
  int zero = c->fov_y_deg == 0.0;
  for (int i = 0; i < 3 && zero; i++) zero = c->eye[i] == 0.0 && c->target[i] == 0.0 && c->up[i] == 0.0;
  if (zero) {
    vx_march_orbit(t, 30.0, 20.0, 40.0, &m->cam);
  } else {
    m->cam = *c;
    if (m->cam.up[0] == 0.0 && m->cam.up[1] == 0.0 && m->cam.up[2] == 0.0) m->cam.up[1] = 1.0;
    if (m->cam.fov_y_deg == 0.0) m->cam.fov_y_deg = 40.0;
  }
  return r->tiled ? VX_OK : vx_render_check(t, m, err);
}

static vx_status scratch_depth(vx_renderer *r, size_t n, vx_error *err) {
  if (n <= r->scratch_cap) return VX_OK;
  float *d = (float *)vx_realloc(r->scratch, n * sizeof(float));
  if (!d) return vx_error_set(err, VX_ERR_NOMEM, "cannot allocate a %zu-pixel depth buffer", n);
  r->scratch = d;
  r->scratch_cap = n;
  return VX_OK;
}

/* One frame into rgb/depth (depth may be NULL); *ms_render and *ms_copy get its timings. */
static vx_status draw(vx_renderer *r, const vx_march_opts *m, uint8_t *rgb, float *depth,
                      double *ms_render, double *ms_copy, vx_error *err) {
  size_t n = (size_t)m->width * m->height;
  if (r->tiled) {
    if (!depth) {
      vx_status s = scratch_depth(r, n, err);
      if (s != VX_OK) return s;
    }
    return vx_tiled_render_frame(r->tiled, m, rgb, depth ? depth : r->scratch, ms_render,
                                 ms_copy, err);
  }
  if (r->gpu) {
    vx_gpu_frame_times tm;
    vx_status s = vx_gpu_view_draw(r->gpu, &r->tree->oct, m, NULL, rgb, depth, NULL, &tm, err);
    *ms_render = tm.ms_kernel;
    *ms_copy = tm.ms_copy;
    return s;
  }
  if (!depth) {
    vx_status s = scratch_depth(r, n, err);
    if (s != VX_OK) return s;
  }
  vx_march_image img = vx_march_image_of(m->width, m->height, rgb, depth ? depth : r->scratch);
  double t0 = vx_clock_seconds();
  vx_status s = vx_render_cpu(&r->tree->oct, m, &img, r->threads, err);
  *ms_render = (vx_clock_seconds() - t0) * 1e3;
  *ms_copy = 0.0;
  return s;
}

vx_status vx_render(vx_renderer *r, const vx_render_opts *opts, uint8_t *rgb, float *depth,
                    vx_frame_stats *stats, vx_error *err) {
  if (!r) return vx_error_set(err, VX_ERR_INVALID_ARG, "no renderer");
  if (!rgb) return vx_error_set(err, VX_ERR_INVALID_ARG, "no image memory");
  double t0 = vx_clock_seconds();
  vx_march_opts m;
  vx_status s = march_opts(r, opts, &m, err);
  double ms_render = 0.0, ms_copy = 0.0;
  if (s == VX_OK) s = draw(r, &m, rgb, depth, &ms_render, &ms_copy, err);
  if (s != VX_OK || !stats) return s;
  vx_frame_stats fs;
  memset(&fs, 0, sizeof fs);
  fs.struct_size = sizeof fs;
  fs.used_gpu = r->gpu != NULL || r->used_gpu;
  if (r->tiled) {
    vx_tiled_residency res;
    vx_tiled_render_residency(r->tiled, &res);
    fs.tiles_loaded = res.loaded;
    fs.tiles_pending = res.pending;
    fs.resident_bytes = res.resident_bytes;
  }
  fs.ms_render = ms_render;
  fs.ms_copy = ms_copy;
  if (depth)
    for (size_t i = 0, n = (size_t)m.width * m.height; i < n; i++)
      fs.pixels_hit += depth[i] < INFINITY;
  fs.ms_total = (vx_clock_seconds() - t0) * 1e3;
  VX_STATS_OUT(stats, fs);
  return VX_OK;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The CPU renderer's timings: wall clock per frame (no copy: it draws into host memory). */
static vx_status bench_cpu(vx_renderer *r, const vx_march_opts *m, const vx_camera *cams,
                           int nviews, int frames, vx_renderer_bench_stats *st, vx_error *err) {
  size_t n = (size_t)m->width * m->height;
  uint8_t *rgb = (uint8_t *)vx_malloc(n * 3);
  float *depth = (float *)vx_malloc(n * sizeof(float));
  uint32_t *visits = (uint32_t *)vx_malloc(n * sizeof(uint32_t));
  double *ms = (double *)vx_calloc((size_t)frames, sizeof(double));
  vx_status s = rgb && depth && visits && ms ? VX_OK : vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  vx_march_image img = vx_march_image_of(m->width, m->height, rgb, depth);
  double vsum = 0.0, hits = 0.0;
  for (int v = 0; v < nviews && s == VX_OK; v++) { /* warm-up, with visit counts */
    vx_march_opts o = *m;
    o.cam = cams[v];
    img.visits = visits;
    s = vx_render_cpu(&r->tree->oct, &o, &img, r->threads, err);
    for (size_t i = 0; i < n && s == VX_OK; i++) {
      vsum += visits[i];
      hits += depth[i] < INFINITY;
    }
  }
  img.visits = NULL;
  for (int f = 0; f < frames && s == VX_OK; f++) {
    vx_march_opts o = *m;
    o.cam = cams[f % nviews];
    double t0 = vx_clock_seconds();
    s = vx_render_cpu(&r->tree->oct, &o, &img, r->threads, err);
    ms[f] = (vx_clock_seconds() - t0) * 1e3;
  }
  if (s == VX_OK) {
    qsort(ms, (size_t)frames, sizeof *ms, cmp_double);
    st->frames = frames;
    st->ms_min = ms[0];
    st->ms_max = ms[frames - 1];
    st->ms_median = frames % 2 ? ms[frames / 2] : 0.5 * (ms[frames / 2 - 1] + ms[frames / 2]);
    st->ms_copy_median = st->ms_median;
    st->mrays_per_s = st->ms_median > 0.0 ? (double)n / (st->ms_median * 1e3) : 0.0;
    st->visits_per_ray = vsum / ((double)n * nviews);
    st->hit_fraction = hits / ((double)n * nviews);
  }
  vx_free(rgb);
  vx_free(depth);
  vx_free(visits);
  vx_free(ms);
  return s;
}

/* A tiled tree's frames: every view once (its tiles read), then `frames` frames, each timed as
 * vx_render times it (on the GPU the kernel by CUDA events, then the copy); no visit counts. */
static vx_status bench_tiled(vx_renderer *r, const vx_march_opts *m, const vx_camera *cams,
                             int nviews, int frames, vx_renderer_bench_stats *st, vx_error *err) {
  size_t n = (size_t)m->width * m->height;
  uint8_t *rgb = (uint8_t *)vx_malloc(n * 3);
  float *depth = (float *)vx_malloc(n * sizeof(float));
  double *ms = (double *)vx_calloc((size_t)frames * 2, sizeof(double));
  vx_status s = rgb && depth && ms ? VX_OK : vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  double hits = 0.0, mr = 0.0, mc = 0.0;
  for (int v = 0; v < nviews && s == VX_OK; v++) {
    vx_march_opts o = *m;
    o.cam = cams[v];
    s = draw(r, &o, rgb, depth, &mr, &mc, err);
    for (size_t i = 0; i < n && s == VX_OK; i++) hits += depth[i] < INFINITY;
  }
  for (int f = 0; f < frames && s == VX_OK; f++) {
    vx_march_opts o = *m;
    o.cam = cams[f % nviews];
    s = draw(r, &o, rgb, depth, &mr, &mc, err);
    ms[f] = mr;
    ms[frames + f] = mr + mc;
  }
  if (s == VX_OK) {
    qsort(ms, (size_t)frames, sizeof *ms, cmp_double);
    qsort(ms + frames, (size_t)frames, sizeof *ms, cmp_double);
    st->frames = frames;
    st->ms_min = ms[0];
    st->ms_max = ms[frames - 1];
    st->ms_median = frames % 2 ? ms[frames / 2] : 0.5 * (ms[frames / 2 - 1] + ms[frames / 2]);
    const double *c = ms + frames;
    st->ms_copy_median = frames % 2 ? c[frames / 2] : 0.5 * (c[frames / 2 - 1] + c[frames / 2]);
    st->mrays_per_s = st->ms_median > 0.0 ? (double)n / (st->ms_median * 1e3) : 0.0;
    st->hit_fraction = hits / ((double)n * nviews);
    uint64_t fr = 0, tot = 0;
    if (r->used_gpu && vx_gpu_memory(&fr, &tot, NULL) == VX_OK) st->device_used_bytes = tot - fr;
  }
  vx_free(rgb);
  vx_free(depth);
  vx_free(ms);
  return s;
}

vx_status vx_renderer_bench(vx_renderer *r, const vx_render_opts *views, int nviews, int frames,
                            vx_renderer_bench_stats *stats, vx_error *err) {
  if (!r || !views || !stats || nviews < 1 || frames < 1)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "bench: need a renderer, >= 1 view, >= 1 frame");
  vx_march_opts m;
  /* the views are an array of a caller's structs, which may be an older (smaller) layout: they
   * lie views[0].struct_size bytes apart (0: the first layout's size) */
  vx_render_opts first;
  vx_status s = VX_OPTS_IN(first, views, err);
  if (s != VX_OK) return s;
  size_t stride = views->struct_size ? views->struct_size : VX_ABI_FIRST_SIZE(first);
  if (stride % _Alignof(vx_render_opts))
    return vx_error_set(err, VX_ERR_INVALID_ARG, "bench: views[0].struct_size %zu is not the "
                        "size of a vx_render_opts", stride);
  s = march_opts(r, views, &m, err);
  vx_camera *cams = (vx_camera *)vx_calloc((size_t)nviews, sizeof *cams);
  if (!cams) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  for (int v = 0; v < nviews && s == VX_OK; v++) {
    vx_march_opts mv;
    const vx_render_opts *view = (const vx_render_opts *)((const char *)views + stride * (size_t)v);
    s = march_opts(r, view, &mv, err);
    if (s == VX_OK && (mv.width != m.width || mv.height != m.height || mv.lod != m.lod ||
                       mv.shade != m.shade || mv.lod_scale != m.lod_scale))
      s = vx_error_set(err, VX_ERR_INVALID_ARG,
                       "bench: every view needs the same size, level of detail and shading");
    cams[v] = mv.cam;
  }
  vx_renderer_bench_stats b;
  memset(&b, 0, sizeof b);
  b.struct_size = sizeof b;
  if (s == VX_OK && r->gpu) {
    vx_gpu_bench_result g;
    s = vx_gpu_view_bench(r->gpu, &r->tree->oct, &m, cams, nviews, frames, NULL, &g, err);
    if (s == VX_OK) {
      b.frames = g.frames;
      b.ms_median = g.ms_median;
      b.ms_min = g.ms_min;
      b.ms_max = g.ms_max;
      b.ms_copy_median = g.ms_copy_median;
      b.mrays_per_s = g.mrays_per_s;
      b.visits_per_ray = g.visits_per_ray;
      b.hit_fraction = g.hit_fraction;
      b.device_used_bytes = g.device_used_bytes;
      b.regs_per_thread = g.regs_per_thread;
    }
  } else if (s == VX_OK && r->tiled) {
    s = bench_tiled(r, &m, cams, nviews, frames, &b, err);
  } else if (s == VX_OK) {
    s = bench_cpu(r, &m, cams, nviews, frames, &b, err);
  }
  vx_free(cams);
  if (s == VX_OK) VX_STATS_OUT(stats, b);
  return s;
}

struct vx_gpu_view *vx_renderer_gpu_view(const vx_renderer *r, const vx_tree *t) {
  return r && r->tree == t ? r->gpu : NULL;
}
