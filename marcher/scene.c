/* SPDX-License-Identifier: Apache-2.0 */
/* scene.c - camera set-up in grid space, orbit cameras that frame a model, image buffers.
 *
 * A world camera (eye, target, up, vertical fov) becomes a grid-space eye and three vectors:
 * the direction through the centre of pixel (0,0) and its change per pixel right and down, so a
 * pixel's ray is dir00 + px du + py dv (pinhole model, square pixels, rays through pixel centres).
 * The grid transform is a uniform scale plus a translation, so directions keep their angles and a
 * grid distance times xf.scale is a world distance.
 */
#include "marcher/scene.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

static double dot3(const double a[3], const double b[3]) {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}
static void cross3(const double a[3], const double b[3], double r[3]) {
  r[0] = a[1] * b[2] - a[2] * b[1];
  r[1] = a[2] * b[0] - a[0] * b[2];
  r[2] = a[0] * b[1] - a[1] * b[0];
}
/* Scaled by the largest component first, so that vectors of any finite size (1e-300 .. 1e300)
 * normalise without overflow or underflow. */
static int normalize3(double v[3]) {
  double m = fmax(fabs(v[0]), fmax(fabs(v[1]), fabs(v[2])));
  if (!(m > 0.0) || !isfinite(m)) return 0;
  for (int i = 0; i < 3; i++) v[i] /= m;
  double l = sqrt(dot3(v, v));
  v[0] /= l;
  v[1] /= l;
  v[2] /= l;
  return 1;
}

/* Orthonormal camera frame: forward, right, up (right = forward x up). 0 when degenerate. */
static int camera_frame(const vx_camera *c, double f[3], double r[3], double u[3]) {
  for (int i = 0; i < 3; i++) f[i] = c->target[i] - c->eye[i];
  if (!normalize3(f)) return 0;
  double up[3] = {c->up[0], c->up[1], c->up[2]};
  if (!normalize3(up)) return 0;
  cross3(f, up, r);
  if (!normalize3(r) || sqrt(dot3(r, r)) < 0.5) return 0;
  if (fabs(dot3(f, up)) > 0.999999) return 0;
  cross3(r, f, u);
  return normalize3(u);
}

vx_status vx_render_check(const vx_octree *t, const vx_march_opts *o, vx_error *err) {
  if (!t || !o) return vx_error_set(err, VX_ERR_INVALID_ARG, "render: no tree or no options");
  if (o->width < 1 || o->height < 1 || o->width > 32768 || o->height > 32768)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "image size %ux%u outside 1x1 .. 32768x32768",
                        o->width, o->height);
  if (t->depth < VX_MIN_DEPTH || t->depth > VX_MAX_DEPTH || !t->nodes || t->levels_loaded < 1)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "render: the tree is empty or not loaded");
  if (o->lod != VX_LOD_AUTO && (o->lod < 0 || o->lod > (int)t->depth))
    return vx_error_set(err, VX_ERR_INVALID_ARG,
                        "level of detail %d outside 0..%u (the tree's depth) or auto", o->lod,
                        t->depth);
  if (!(o->lod_scale >= 0.0f) || !isfinite(o->lod_scale))
    return vx_error_set(err, VX_ERR_INVALID_ARG, "LOD scale %g is not a non-negative number",
                        (double)o->lod_scale);
  if ((unsigned)o->shade > VX_SHADE_ALBEDO)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "unknown shading mode %d", (int)o->shade);
  const vx_camera *c = &o->cam;
  for (int i = 0; i < 3; i++)
    if (!isfinite(c->eye[i]) || !isfinite(c->target[i]) || !isfinite(c->up[i]))
      return vx_error_set(err, VX_ERR_INVALID_ARG, "camera coordinates must be finite numbers");
  if (!(c->fov_y_deg > 0.0 && c->fov_y_deg < 180.0))
    return vx_error_set(err, VX_ERR_INVALID_ARG, "field of view %g outside (0, 180) degrees",
                        c->fov_y_deg);
  double f[3], r[3], u[3];
  if (!camera_frame(c, f, r, u))
    return vx_error_set(err, VX_ERR_INVALID_ARG,
                        "camera: eye equals target, or up is zero or parallel to the view");
  if (!(t->xf.scale > 0.0) || !isfinite(t->xf.scale))
    return vx_error_set(err, VX_ERR_INVALID_ARG, "render: the tree's transform scale is invalid");
  /* Rays are traced in float grid coordinates: an eye beyond 2^40 voxels (a thousand billion
   * times the model's size at 1024^3) would lose every bit of the model's detail. */
  for (int i = 0; i < 3; i++) {
    double g = (c->eye[i] - t->xf.origin[i]) / t->xf.scale;
    if (!(fabs(g) < 1099511627776.0))
      return vx_error_set(err, VX_ERR_INVALID_ARG,
                          "camera: the eye is %.3g voxels from the model, too far to trace (at "
                          "most 2^40)", fabs(g));
  }
  return VX_OK;
}

/* The scene of tree t (any depth: checked by the caller) for options o. */
static void scene_fill(vx_trace_scene *s, const vx_octree *t, const vx_march_opts *o) {
  memset(s, 0, sizeof *s);
  const vx_camera *c = &o->cam;
  double f[3], r[3], u[3];
  camera_frame(c, f, r, u);
  s->nodes = t->nodes;
  s->voxels = t->levels_loaded > t->depth ? t->voxels : NULL;
  /* Colour where the tree has it; whether a cell is a hole is then asked per hit cell (a
   * resident GPU tree knows whether any is: svo/gpu_tree.h). */
  s->node_color = t->node_color;
  s->voxel_color = s->voxels ? t->voxel_color : NULL;
  s->holes = s->node_color || s->voxel_color;
  s->depth = t->depth;
  s->levels_loaded = t->levels_loaded;
  s->band = t->band;
  s->auto_lod = o->lod == VX_LOD_AUTO;
  s->max_level = s->auto_lod ? (int)t->depth : o->lod;
  double fov = c->fov_y_deg * M_PI / 180.0;
  double lod_scale = o->lod_scale > 0.0f ? o->lod_scale : 1.0;
  s->pixel_angle = (float)(fov / o->height * lod_scale);
  s->shade = (int)o->shade;
  s->width = o->width;
  s->height = o->height;
  /* pixel pitch on the image plane at distance 1 */
  double h = 2.0 * tan(0.5 * fov) / o->height;
  double cx = 0.5 - 0.5 * o->width, cy = 0.5 - 0.5 * o->height;
  for (int i = 0; i < 3; i++) {
    s->eye[i] = (float)((c->eye[i] - t->xf.origin[i]) / t->xf.scale);
    s->dir00[i] = (float)(f[i] + cx * h * r[i] - cy * h * u[i]);
    s->du[i] = (float)(h * r[i]);
    s->dv[i] = (float)(-h * u[i]);
  }
  double l[3];
  for (int i = 0; i < 3; i++) l[i] = -0.75 * f[i] + 0.6 * u[i] - 0.45 * r[i];
  normalize3(l);
  for (int i = 0; i < 3; i++) s->light[i] = (float)l[i];
  s->world_per_grid = (float)t->xf.scale;
  /* Plane-bound culling (trace.h): wherever cells are drawn as the zero set of the field or of
   * a plane (not as boxes). eps: the float round-off of the plane test and of the voxel test's own evaluation point,
   * both ~2^-24 times the coordinates' magnitude M (eye, grid, ray parameter), the latter
   * times the field's steepest gradient (2 band per voxel, across a diagonal); taken 4x larger. */
  s->cull = !o->no_cull && o->shade != VX_SHADE_BLOCKS;
  s->pruned = t->prune_error != 0.0f;
  double M = 2.0 * (double)(1u << t->depth);
  for (int i = 0; i < 3; i++) M += fabs((double)s->eye[i]);
  s->cull_eps = (float)(ldexp(M, -19) * (1.0 + 2.0 * (double)t->band));
}

vx_status vx_trace_scene_init(vx_trace_scene *s, const vx_octree *t, const vx_march_opts *o) {
  memset(s, 0, sizeof *s);
  if (vx_render_check(t, o, NULL) != VX_OK) return VX_ERR_INVALID_ARG;
  scene_fill(s, t, o);
  return VX_OK;
}

vx_status vx_tiled_scene_init(vx_tiled_scene *ts, const vx_octree *top, uint32_t tile_depth,
                              const vx_march_opts *o, vx_error *err) {
  memset(ts, 0, sizeof *ts);
  const uint32_t D = top->depth, T = tile_depth, K = D - T;
  if (T < VX_MIN_DEPTH || T > VX_MAX_DEPTH || T >= D || K > VX_TILED_MAX_GRID_BITS ||
      top->levels_loaded != K + 1 || !top->nodes)
    return vx_error_set(err, VX_ERR_INVALID_ARG,
                        "render: a tiled tree of %u levels in tiles of %u: at most 2^%d tiles per "
                        "axis are drawn", D, T, VX_TILED_MAX_GRID_BITS);
  if (o->lod != VX_LOD_AUTO && (o->lod < 0 || o->lod > (int)D))
    return vx_error_set(err, VX_ERR_INVALID_ARG,
                        "level of detail %d outside 0..%u (the tree's depth) or auto", o->lod, D);
  /* a tile's shape in the whole tree's grid: the camera, size and shading checks of any tree */
  vx_octree shape = *top;
  shape.depth = T;
  shape.levels_loaded = T + 1;
  vx_march_opts ot = *o;
  if (ot.lod != VX_LOD_AUTO) ot.lod = o->lod > (int)K ? o->lod - (int)K : 0;
  vx_status st = vx_render_check(&shape, &ot, err);
  if (st != VX_OK) return st;
  scene_fill(&ts->tile, &shape, &ot);
  scene_fill(&ts->top, top, o);
  ts->top.voxels = NULL;
  ts->tile.nodes = NULL;
  ts->tile.voxels = NULL;
  ts->tile.node_color = ts->tile.voxel_color = ts->top.voxel_color = NULL; /* each tile's own */
  ts->tile.holes = 0;
  /* culling's round-off: coordinates as large as the whole grid's (the eye is in it) */
  ts->tile.cull_eps = ts->top.cull_eps;
  ts->grid_bits = K;
  ts->use_top = o->lod != VX_LOD_AUTO && o->lod <= (int)K;
  return VX_OK;
}

/* Bounding box (grid units) of the cells occupied at level 2 (cells of a quarter of the grid): a
 * walk of at most 64 nodes. A fixed coarse level keeps the framing identical whatever levels
 * are loaded (--lod L reads only levels <= L) and however the tree is pruned below it. */
static void occupied_box(const vx_octree *t, double lo[3], double hi[3]) {
  double R = (double)(1u << t->depth);
  for (int i = 0; i < 3; i++) {
    lo[i] = 0.0;
    hi[i] = R;
  }
  if (!t->nodes || t->levels_loaded < 1) return;
  uint32_t L = t->levels_loaded - 1 < 4 ? t->levels_loaded - 1 : 4;
  if (L >= t->depth) L = t->depth - 1;
  double blo[3] = {R, R, R}, bhi[3] = {0, 0, 0};
  /* explicit stack: (node index, level, x, y, z) */
  struct item { uint32_t node, level, x, y, z; } stack[8 * 5 + 1];
  int sp = 0;
  stack[sp].node = 0;
  stack[sp].level = 0;
  stack[sp].x = stack[sp].y = stack[sp].z = 0;
  sp++;
  while (sp > 0) {
    struct item it = stack[--sp];
    const vx_node *n = &t->nodes[it.node];
    uint32_t mask = vx_node_mask(n->info);
    if (it.level == L || mask == 0) {
      double size = (double)(1u << (t->depth - it.level));
      double p[3] = {it.x * size, it.y * size, it.z * size};
      for (int i = 0; i < 3; i++) {
        if (p[i] < blo[i]) blo[i] = p[i];
        if (p[i] + size > bhi[i]) bhi[i] = p[i] + size;
      }
      continue;
    }
    for (uint32_t sl = 0; sl < 8; sl++) {
      if (!(mask >> sl & 1u)) continue;
      stack[sp].node = vx_child_index(n->child, mask, sl);
      stack[sp].level = it.level + 1;
      stack[sp].x = it.x * 2 + (sl & 1u);
      stack[sp].y = it.y * 2 + (sl >> 1 & 1u);
      stack[sp].z = it.z * 2 + (sl >> 2 & 1u);
      sp++;
    }
  }
  if (bhi[0] > blo[0])
    for (int i = 0; i < 3; i++) {
      lo[i] = blo[i];
      hi[i] = bhi[i];
    }
}

void vx_march_orbit(const vx_octree *t, double azimuth_deg, double elevation_deg, double fov_y_deg,
                     vx_camera *cam) {
  double lo[3], hi[3];
  occupied_box(t, lo, hi);
  double c[3], rad = 0.0;
  for (int i = 0; i < 3; i++) {
    c[i] = t->xf.origin[i] + 0.5 * (lo[i] + hi[i]) * t->xf.scale;
    double e = 0.5 * (hi[i] - lo[i]) * t->xf.scale;
    rad += e * e;
  }
  rad = sqrt(rad);
  if (!(fov_y_deg > 0.0 && fov_y_deg < 180.0)) fov_y_deg = 40.0;
  if (elevation_deg > 89.0) elevation_deg = 89.0;
  if (elevation_deg < -89.0) elevation_deg = -89.0;
  double az = azimuth_deg * M_PI / 180.0, el = elevation_deg * M_PI / 180.0;
  double dir[3] = {cos(el) * sin(az), sin(el), cos(el) * cos(az)};
  /* The nearest distance at which all 8 corners of the occupied box project inside a square
   * frame of the given field of view (a wider image only adds margin left and right). */
  double tn = tan(0.5 * fov_y_deg * M_PI / 180.0);
  double right[3] = {dir[2], 0.0, -dir[0]}, rl = sqrt(dir[2] * dir[2] + dir[0] * dir[0]);
  for (int i = 0; i < 3; i++) right[i] = rl > 1e-9 ? right[i] / rl : (i == 0);
  double upv[3] = {dir[1] * right[2] - dir[2] * right[1], dir[2] * right[0] - dir[0] * right[2],
                   dir[0] * right[1] - dir[1] * right[0]};
  double dist = 0.0;
  for (int k = 0; k < 8; k++) {
    double q[3];
    for (int i = 0; i < 3; i++)
      q[i] = t->xf.origin[i] + ((k >> i & 1) ? hi[i] : lo[i]) * t->xf.scale - c[i];
    double z = q[0] * dir[0] + q[1] * dir[1] + q[2] * dir[2];
    double x = fabs(q[0] * right[0] + q[1] * right[1] + q[2] * right[2]);
    double y = fabs(q[0] * upv[0] + q[1] * upv[1] + q[2] * upv[2]);
    double need = z + (x > y ? x : y) / tn;
    if (need > dist) dist = need;
  }
  /* Relative margins only: the model may be 1e-10 or 1e30 units across. */
  dist = dist * 1.05;
  if (dist < rad * 1.01) dist = rad * 1.01; /* keep the eye outside the model */
  if (!(dist > 0.0)) dist = t->xf.scale; /* a box of no extent: one voxel away */
  for (int i = 0; i < 3; i++) {
    cam->eye[i] = c[i] + dist * dir[i];
    cam->target[i] = c[i];
  }
  cam->up[0] = 0.0;
  cam->up[1] = 1.0;
  cam->up[2] = 0.0;
  cam->fov_y_deg = fov_y_deg;
}

vx_march_image vx_march_image_of(uint32_t width, uint32_t height, uint8_t *rgb, float *depth) {
  vx_march_image img;
  memset(&img, 0, sizeof img);
  img.width = width;
  img.height = height;
  img.rgb = rgb;
  img.depth = depth;
  return img;
}

vx_status vx_march_image_alloc(vx_march_image *img, uint32_t width, uint32_t height, int with_visits,
                         vx_error *err) {
  memset(img, 0, sizeof *img);
  if (width < 1 || height < 1 || width > 32768 || height > 32768)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "image size %ux%u outside 1x1 .. 32768x32768",
                        width, height);
  size_t n = (size_t)width * height;
  img->rgb = (uint8_t *)vx_malloc(n * 3);
  img->depth = (float *)vx_malloc(n * sizeof(float));
  img->visits = with_visits ? (uint32_t *)vx_malloc(n * sizeof(uint32_t)) : NULL;
  if (!img->rgb || !img->depth || (with_visits && !img->visits)) {
    vx_march_image_free(img);
    return vx_error_set(err, VX_ERR_NOMEM, "cannot allocate a %ux%u image", width, height);
  }
  img->width = width;
  img->height = height;
  return VX_OK;
}

void vx_march_image_free(vx_march_image *img) {
  if (!img) return;
  vx_free(img->rgb);
  vx_free(img->depth);
  vx_free(img->visits);
  memset(img, 0, sizeof *img);
}
