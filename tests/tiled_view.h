/* SPDX-License-Identifier: Apache-2.0 */
/* tiled_view.h - what the tiled-render tests share (CPU and GPU): the files, cameras, renderers
 * of a tiled file or of a tree, one frame. Define W and H (the image size) before including it. */
#ifndef VOXLOD_TESTS_TILED_VIEW_H
#define VOXLOD_TESTS_TILED_VIEW_H

#include <math.h>
#include <stdio.h>
#include <string.h>
#include "check.h"
#include "tiled_scene.h"
#include "voxlod.h"

/* tiled_scene() (color: tiled_colored_scene(), coloured) at res^3 into dir/t.svo (tiles of 2^T,
 * built on the CPU) and dir/u.svo (one tree); *f: the tiled file opened, *u: the untiled tree
 * loaded. */
static inline void tv_files_ex(const char *dir, uint32_t res, uint32_t T, int color, char tp[128],
                               char up[128], vx_tiled_file **f, vx_tree **u) {
  vx_mesh *m = color ? tiled_colored_scene() : tiled_scene();
  snprintf(tp, 128, "%s/t.svo", dir);
  snprintf(up, 128, "%s/u.svo", dir);
  vx_error e;
  vx_convert_opts o = tiled_opts(res, T, VX_DEVICE_CPU, 0, 2);
  if (color) o.color = VX_COLOR_AUTO;
  CHECK_MSG(vx_convert_to_file(m, &o, tp, NULL, &e) == VX_OK, "%s", e.msg);
  o.tile_depth = 0;
  CHECK_MSG(vx_convert_to_file(m, &o, up, NULL, &e) == VX_OK, "%s", e.msg);
  vx_mesh_free(m);
  *u = NULL;
  *f = NULL;
  CHECK_MSG(vx_tree_load(up, NULL, u, &e) == VX_OK, "%s", e.msg);
  CHECK_MSG(vx_tiled_file_open(tp, NULL, f, &e) == VX_OK, "%s", e.msg);
}

static inline void tv_files(const char *dir, uint32_t res, uint32_t T, char tp[128], char up[128],
                            vx_tiled_file **f, vx_tree **u) {
  tv_files_ex(dir, res, T, 0, tp, up, f, u);
}

/* Of the n pixels of an image that hit the surface (finite depth), the share that is not grey
 * (r, g, b not all equal). */
static inline double tv_colored_share(const uint8_t *rgb, const float *depth, int n) {
  int c = 0, hit = 0;
  for (int i = 0; i < n; i++)
    if (depth[i] < INFINITY) {
      hit++;
      c += rgb[3 * i] != rgb[3 * i + 1] || rgb[3 * i + 1] != rgb[3 * i + 2];
    }
  return hit ? (double)c / hit : 0.0;
}

static void tv_camera(vx_camera *c, double ex, double ey, double ez, double tx, double ty,
                      double tz) {
  memset(c, 0, sizeof *c);
  c->eye[0] = ex;
  c->eye[1] = ey;
  c->eye[2] = ez;
  c->target[0] = tx;
  c->target[1] = ty;
  c->target[2] = tz;
  c->up[1] = 1.0;
  c->fov_y_deg = 45.0;
}

/* A renderer of tiled file f (or, f NULL, of tree t) on dev within budget_mib (0: default). */
static vx_renderer *tv_renderer(vx_tiled_file *f, vx_tree *t, vx_device dev, uint32_t budget_mib,
                                int stream) {
  vx_renderer_opts ro;
  memset(&ro, 0, sizeof ro);
  ro.struct_size = sizeof ro;
  ro.device = dev;
  ro.threads = dev == VX_DEVICE_CPU ? 2 : 0;
  ro.memory_budget_mib = budget_mib;
  ro.stream_tiles = stream;
  vx_renderer *r = NULL;
  vx_error e;
  vx_status s = f ? vx_renderer_create_tiled(f, &ro, &r, &e) : vx_renderer_create(t, &ro, &r, &e);
  CHECK_MSG(s == VX_OK, "%s", e.msg);
  return r;
}

/* 1 when a renderer of f can be made on the GPU; else 0 with the reason in e. */
static inline int tv_gpu_usable(vx_tiled_file *f, vx_error *e) {
  vx_renderer_opts ro;
  memset(&ro, 0, sizeof ro);
  ro.struct_size = sizeof ro;
  ro.device = VX_DEVICE_GPU;
  vx_renderer *probe = NULL;
  const vx_status s = vx_renderer_create_tiled(f, &ro, &probe, e);
  vx_renderer_free(probe);
  return s != VX_ERR_NO_GPU;
}

/* Frees two renderers, the tiled file and the tree, and removes the files tv_files wrote. */
static inline void tv_done(vx_renderer *a, vx_renderer *b, vx_tiled_file *f, vx_tree *u,
                           const char *tp, const char *up) {
  vx_renderer_free(a);
  vx_renderer_free(b);
  vx_tiled_file_close(f);
  vx_tree_free(u);
  remove(tp);
  remove(up);
}

/* The shading of the frames tv_render draws (0: the default). */
static vx_shade tv_shade;

/* One w x h frame at cut (lod, level) into rgb and depth; its stats into fs (may be NULL). */
static void tv_render(vx_renderer *r, const vx_camera *cam, vx_lod_mode lod, int level, uint32_t w,
                      uint32_t h, uint8_t *rgb, float *depth, vx_frame_stats *fs) {
  vx_render_opts o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.shade = tv_shade;
  o.width = w;
  o.height = h;
  o.lod = lod;
  o.level = level;
  o.camera = *cam;
  vx_frame_stats st;
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  vx_error e;
  CHECK_MSG(vx_render(r, &o, rgb, depth, &st, &e) == VX_OK, "%s", e.msg);
  if (fs) *fs = st;
}

/* A W x H frame and its depth. */
typedef struct image {
  uint8_t rgb[W * H * 3];
  float depth[W * H];
} image;

static void render(vx_renderer *r, const vx_camera *cam, vx_lod_mode lod, int level, image *im,
                   vx_frame_stats *fs) {
  tv_render(r, cam, lod, level, W, H, im->rgb, im->depth, fs);
}

#endif
