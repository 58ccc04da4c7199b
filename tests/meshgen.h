/* SPDX-License-Identifier: Apache-2.0 */
/* meshgen.h - analytic test meshes: sphere, box, torus, a thin sheet, a sphere with a hole.
 *
 *   vx_soup m = {0};
 *   meshgen_sphere(&m, 0, 0, 0, 1.0, 48, 24);   // centre, radius, segments around, rings
 *   ...
 *   vx_soup_free(&m);
 *
 * Shared vertices are computed once and reused, so they are bitwise equal (the voxelizer welds
 * by exact position). Closed shapes are wound counter-clockwise seen from outside (outward
 * normals). Each generator appends to the mesh, so shapes can be combined. Returns 0 on success.
 */
#ifndef VOXLOD_TESTS_MESHGEN_H
#define VOXLOD_TESTS_MESHGEN_H

#include <math.h>
#include <stdlib.h>
#include "svo/soup.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* Appends triangle (a, b, c) from vertex array v (3 floats each), flipped when its normal points
 * against `out` (a direction that is outward there); out == NULL keeps the given order. */
static inline int meshgen_tri(vx_soup *m, const float *v, int a, int b, int c, const double *out) {
  float t[9];
  for (int i = 0; i < 3; i++) {
    t[i] = v[a * 3 + i];
    t[3 + i] = v[b * 3 + i];
    t[6 + i] = v[c * 3 + i];
  }
  if (out) {
    double e0[3], e1[3];
    for (int i = 0; i < 3; i++) {
      e0[i] = (double)t[3 + i] - t[i];
      e1[i] = (double)t[6 + i] - t[i];
    }
    double n[3] = {e0[1] * e1[2] - e0[2] * e1[1], e0[2] * e1[0] - e0[0] * e1[2],
                   e0[0] * e1[1] - e0[1] * e1[0]};
    if (n[0] * out[0] + n[1] * out[1] + n[2] * out[2] < 0.0)
      for (int i = 0; i < 3; i++) {
        float s = t[3 + i];
        t[3 + i] = t[6 + i];
        t[6 + i] = s;
      }
  }
  return vx_soup_append(m, t, 1, NULL) == VX_OK ? 0 : -1;
}

/* UV sphere: nu segments around z, nv rings pole to pole. When hole_z < 1, the rings whose upper
 * edge lies above z = cz + r * hole_z are left out: a sphere with a round hole at the +z pole. */
static inline int meshgen_sphere_ex(vx_soup *m, double cx, double cy, double cz, double r, int nu,
                                    int nv, double hole_z) {
  int nvert = 2 + nu * (nv - 1);
  float *v = (float *)malloc((size_t)nvert * 3 * sizeof(float));
  if (!v) return -1;
  v[0] = (float)cx, v[1] = (float)cy, v[2] = (float)(cz + r);
  v[3] = (float)cx, v[4] = (float)cy, v[5] = (float)(cz - r);
  for (int i = 1; i < nv; i++)
    for (int j = 0; j < nu; j++) {
      double th = M_PI * i / nv, ph = 2.0 * M_PI * j / nu;
      float *p = v + (2 + (i - 1) * nu + j) * 3;
      p[0] = (float)(cx + r * sin(th) * cos(ph));
      p[1] = (float)(cy + r * sin(th) * sin(ph));
      p[2] = (float)(cz + r * cos(th));
    }
#define MG_RING(i, j) ((i) == 0 ? 0 : (i) == nv ? 1 : 2 + ((i) - 1) * nu + ((j) % nu))
  int rc = 0;
  for (int i = 0; i < nv && !rc; i++)
    for (int j = 0; j < nu && !rc; j++) {
      int a = MG_RING(i, j), b = MG_RING(i, j + 1), c = MG_RING(i + 1, j), d = MG_RING(i + 1, j + 1);
      double th = M_PI * (i + 0.5) / nv, ph = 2.0 * M_PI * (j + 0.5) / nu;
      double out[3] = {sin(th) * cos(ph), sin(th) * sin(ph), cos(th)};
      if (hole_z < 1.0 && cos(M_PI * i / nv) > hole_z) continue;
      if (i > 0) rc |= meshgen_tri(m, v, a, b, d, out);
      if (i < nv - 1) rc |= meshgen_tri(m, v, a, d, c, out);
    }
#undef MG_RING
  free(v);
  return rc;
}

static inline int meshgen_sphere(vx_soup *m, double cx, double cy, double cz, double r, int nu,
                                 int nv) {
  return meshgen_sphere_ex(m, cx, cy, cz, r, nu, nv, 2.0);
}

/* Axis-aligned box [lo, hi], 12 triangles. */
static inline int meshgen_box(vx_soup *m, const double lo[3], const double hi[3]) {
  float v[24];
  for (int k = 0; k < 8; k++) {
    v[k * 3 + 0] = (float)(k & 1 ? hi[0] : lo[0]);
    v[k * 3 + 1] = (float)(k & 2 ? hi[1] : lo[1]);
    v[k * 3 + 2] = (float)(k & 4 ? hi[2] : lo[2]);
  }
  static const int f[6][4] = {{0, 2, 6, 4}, {1, 3, 7, 5}, {0, 1, 5, 4},
                              {2, 3, 7, 6}, {0, 1, 3, 2}, {4, 5, 7, 6}};
  static const double n[6][3] = {{-1, 0, 0}, {1, 0, 0}, {0, -1, 0}, {0, 1, 0}, {0, 0, -1}, {0, 0, 1}};
  int rc = 0;
  for (int i = 0; i < 6; i++) {
    rc |= meshgen_tri(m, v, f[i][0], f[i][1], f[i][2], n[i]);
    rc |= meshgen_tri(m, v, f[i][0], f[i][2], f[i][3], n[i]);
  }
  return rc;
}

/* Torus around the z axis: major radius R, tube radius r, nu segments around z, nv around the
 * tube. */
static inline int meshgen_torus(vx_soup *m, double cx, double cy, double cz, double R, double r,
                                int nu, int nv) {
  float *v = (float *)malloc((size_t)nu * nv * 3 * sizeof(float));
  if (!v) return -1;
  for (int i = 0; i < nu; i++)
    for (int j = 0; j < nv; j++) {
      double u = 2.0 * M_PI * i / nu, w = 2.0 * M_PI * j / nv;
      float *p = v + (i * nv + j) * 3;
      p[0] = (float)(cx + (R + r * cos(w)) * cos(u));
      p[1] = (float)(cy + (R + r * cos(w)) * sin(u));
      p[2] = (float)(cz + r * sin(w));
    }
  int rc = 0;
  for (int i = 0; i < nu; i++)
    for (int j = 0; j < nv; j++) {
      int a = i * nv + j, b = ((i + 1) % nu) * nv + j, c = i * nv + (j + 1) % nv,
          d = ((i + 1) % nu) * nv + (j + 1) % nv;
      double u = 2.0 * M_PI * (i + 0.5) / nu, w = 2.0 * M_PI * (j + 0.5) / nv;
      double out[3] = {cos(w) * cos(u), cos(w) * sin(u), sin(w)};
      rc |= meshgen_tri(m, v, a, b, d, out);
      rc |= meshgen_tri(m, v, a, d, c, out);
    }
  free(v);
  return rc;
}

/* A single planar quad (two triangles) p0, p0 + u, p0 + u + w, p0 + w: a thin sheet. */
static inline int meshgen_sheet(vx_soup *m, const double p0[3], const double u[3],
                                const double w[3]) {
  float v[12];
  for (int i = 0; i < 3; i++) {
    v[i] = (float)p0[i];
    v[3 + i] = (float)(p0[i] + u[i]);
    v[6 + i] = (float)(p0[i] + u[i] + w[i]);
    v[9 + i] = (float)(p0[i] + w[i]);
  }
  return meshgen_tri(m, v, 0, 1, 2, NULL) | meshgen_tri(m, v, 0, 2, 3, NULL);
}

/* Rotates the soup's vertices about unit axis a by angle r (Rodrigues' formula). */
static inline void meshgen_rotate(vx_soup *m, const double a[3], double r) {
  const double c = cos(r), s = sin(r);
  for (uint64_t k = 0; k < m->tri_count * 3; k++) {
    float *v = m->pos + 3 * k;
    const double p[3] = {v[0], v[1], v[2]}, d = a[0] * p[0] + a[1] * p[1] + a[2] * p[2];
    const double x[3] = {a[1] * p[2] - a[2] * p[1], a[2] * p[0] - a[0] * p[2],
                         a[0] * p[1] - a[1] * p[0]};
    for (int i = 0; i < 3; i++) v[i] = (float)(p[i] * c + x[i] * s + a[i] * d * (1.0 - c));
  }
}

#endif
