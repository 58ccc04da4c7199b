/* SPDX-License-Identifier: Apache-2.0 */
/* refrender.h - brute-force references for the marcher tests, in double precision.
 *
 * - ref_camera_ray(): the pinhole camera model of marcher.h, derived independently: a ray from the
 *   eye through the centre of pixel (px, py), vertical field of view, right = forward x up.
 * - ref_ray_triangles(): the nearest hit over every triangle (Moller-Trumbore), no acceleration.
 * - ref_ray_sphere(), ref_ray_box(): analytic hits.
 * - ref_sdf_tree(): a tree built straight from an analytic signed-distance function: the voxels
 *   whose centre lies within 0.87 voxel of the surface or whose corners change sign, with the
 *   exact distance at each corner quantized as node.h says.
 * Test-only code: simple, slow, obviously right.
 */
#ifndef VOXLOD_TESTS_REFRENDER_H
#define VOXLOD_TESTS_REFRENDER_H

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "svo/svo.h"
#include "marcher/marcher.h"

static inline void ref_normalize(double v[3]) {
  double l = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
  v[0] /= l;
  v[1] /= l;
  v[2] /= l;
}

/* World-space ray of pixel (px, py) of a w x h image: origin o, unit direction d. */
static inline void ref_camera_ray(const vx_camera *c, uint32_t w, uint32_t h, uint32_t px,
                                  uint32_t py, double o[3], double d[3]) {
  double f[3], r[3], u[3];
  for (int i = 0; i < 3; i++) f[i] = c->target[i] - c->eye[i];
  ref_normalize(f);
  r[0] = f[1] * c->up[2] - f[2] * c->up[1];
  r[1] = f[2] * c->up[0] - f[0] * c->up[2];
  r[2] = f[0] * c->up[1] - f[1] * c->up[0];
  ref_normalize(r);
  u[0] = r[1] * f[2] - r[2] * f[1];
  u[1] = r[2] * f[0] - r[0] * f[2];
  u[2] = r[0] * f[1] - r[1] * f[0];
  double half = tan(c->fov_y_deg * M_PI / 360.0);
  double x = ((px + 0.5) / w * 2.0 - 1.0) * half * ((double)w / h);
  double y = (1.0 - (py + 0.5) / h * 2.0) * half;
  for (int i = 0; i < 3; i++) {
    o[i] = c->eye[i];
    d[i] = f[i] + x * r[i] + y * u[i];
  }
  ref_normalize(d);
}

/* Nearest t > 0 over all triangles (9 floats each), INFINITY when none. */
static inline double ref_ray_triangles(const double o[3], const double d[3], const float *pos,
                                       uint64_t ntri) {
  double best = INFINITY;
  for (uint64_t k = 0; k < ntri; k++) {
    const float *p = pos + 9 * k;
    double e1[3], e2[3], s[3], pv[3], qv[3];
    for (int i = 0; i < 3; i++) {
      e1[i] = (double)p[3 + i] - p[i];
      e2[i] = (double)p[6 + i] - p[i];
      s[i] = o[i] - p[i];
    }
    pv[0] = d[1] * e2[2] - d[2] * e2[1];
    pv[1] = d[2] * e2[0] - d[0] * e2[2];
    pv[2] = d[0] * e2[1] - d[1] * e2[0];
    double det = e1[0] * pv[0] + e1[1] * pv[1] + e1[2] * pv[2];
    if (det == 0.0) continue;
    double inv = 1.0 / det;
    double u = (s[0] * pv[0] + s[1] * pv[1] + s[2] * pv[2]) * inv;
    if (u < 0.0 || u > 1.0) continue;
    qv[0] = s[1] * e1[2] - s[2] * e1[1];
    qv[1] = s[2] * e1[0] - s[0] * e1[2];
    qv[2] = s[0] * e1[1] - s[1] * e1[0];
    double v = (d[0] * qv[0] + d[1] * qv[1] + d[2] * qv[2]) * inv;
    if (v < 0.0 || u + v > 1.0) continue;
    double t = (e2[0] * qv[0] + e2[1] * qv[1] + e2[2] * qv[2]) * inv;
    if (t > 0.0 && t < best) best = t;
  }
  return best;
}

/* First t >= 0 where the ray meets the sphere (c, r) from outside, INFINITY when none. */
static inline double ref_ray_sphere(const double o[3], const double d[3], const double c[3],
                                    double r) {
  double oc[3] = {o[0] - c[0], o[1] - c[1], o[2] - c[2]};
  double b = oc[0] * d[0] + oc[1] * d[1] + oc[2] * d[2];
  double cc = oc[0] * oc[0] + oc[1] * oc[1] + oc[2] * oc[2] - r * r;
  double disc = b * b - cc;
  if (disc < 0.0) return INFINITY;
  double t = -b - sqrt(disc);
  return t >= 0.0 ? t : INFINITY;
}

/* Entry t (>= 0) of the ray into box [lo, hi], INFINITY when it misses. */
static inline double ref_ray_box(const double o[3], const double d[3], const double lo[3],
                                 const double hi[3]) {
  double t0 = 0.0, t1 = INFINITY;
  for (int i = 0; i < 3; i++) {
    if (d[i] == 0.0) {
      if (o[i] < lo[i] || o[i] > hi[i]) return INFINITY;
      continue;
    }
    double a = (lo[i] - o[i]) / d[i], b = (hi[i] - o[i]) / d[i];
    if (a > b) { double tmp = a; a = b; b = tmp; }
    if (a > t0) t0 = a;
    if (b < t1) t1 = b;
  }
  return t0 <= t1 ? t0 : INFINITY;
}

typedef double (*ref_sdf_fn)(const double p[3], const void *user);

/* The voxel set of an analytic SDF (grid units) at depth `depth`: the voxels whose centre lies
 * within 0.87 voxel of the surface or whose corners change sign, in Morton order, with the exact
 * distance at each corner quantized (node.h). *codes and *field are malloc'ed; returns the count. */
static inline uint64_t ref_sdf_voxels(uint32_t depth, float band, ref_sdf_fn sdf, const void *user,
                                      uint64_t **codes_out, vx_voxel **field_out) {
  uint32_t R = 1u << depth;
  uint64_t total = (uint64_t)R * R * R, n = 0, cap = 1024;
  uint64_t *codes = (uint64_t *)malloc(cap * sizeof *codes);
  vx_voxel *field = (vx_voxel *)malloc(cap * sizeof *field);
  for (uint64_t m = 0; m < total; m++) {
    uint32_t x, y, z;
    vx_morton_decode(m, &x, &y, &z);
    double pc[3] = {x + 0.5, y + 0.5, z + 0.5};
    double dc = sdf(pc, user);
    if (fabs(dc) > 1.8) continue; /* no corner can change sign: all within sqrt(3)/2 */
    double cv[8];
    int neg = 0;
    for (int c = 0; c < 8; c++) {
      double p[3] = {x + (double)(c & 1), y + (double)(c >> 1 & 1), z + (double)(c >> 2 & 1)};
      cv[c] = sdf(p, user);
      neg += cv[c] < 0.0;
    }
    if (!(fabs(dc) <= 0.87 || (neg > 0 && neg < 8))) continue;
    if (n == cap) {
      cap *= 2;
      codes = (uint64_t *)realloc(codes, cap * sizeof *codes);
      field = (vx_voxel *)realloc(field, cap * sizeof *field);
    }
    codes[n] = m;
    for (int c = 0; c < 8; c++) field[n].c[c] = vx_corner_quantize(cv[c], band);
    n++;
  }
  *codes_out = codes;
  *field_out = field;
  return n;
}

/* Builds a depth-`depth` tree (band `band`, identity transform) from an analytic SDF in grid
 * units (ref_sdf_voxels). Planes are not fitted. Returns the vx_octree_build status. */
static inline vx_status ref_sdf_tree(uint32_t depth, float band, ref_sdf_fn sdf, const void *user,
                                     vx_octree *t) {
  uint64_t *codes;
  vx_voxel *field;
  uint64_t n = ref_sdf_voxels(depth, band, sdf, user, &codes, &field);
  vx_status s = vx_octree_build(depth, codes, field, n, t, NULL);
  free(codes);
  free(field);
  t->band = band;
  t->xf.scale = 1.0;
  t->xf.origin[0] = t->xf.origin[1] = t->xf.origin[2] = 0.0;
  return s;
}

/* The sphere SDF: user = {cx, cy, cz, r}. */
static inline double ref_sphere_sdf(const double p[3], const void *user) {
  const double *s = (const double *)user;
  double dx = p[0] - s[0], dy = p[1] - s[1], dz = p[2] - s[2];
  return sqrt(dx * dx + dy * dy + dz * dz) - s[3];
}

#endif
