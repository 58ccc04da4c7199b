/* SPDX-License-Identifier: Apache-2.0 */
/* distance.h - closest point on a triangle with the feature it lies on (host and device).
 *
 * Follows C. Ericson, "Real-Time Collision Detection" (2005), 5.1.5: the Voronoi regions of the
 * triangle's vertices, then edges, then the face are tested with dot products of the edge vectors
 * and the point, so the closest point and the feature that holds it (vertex, edge or interior)
 * come out of one pass. The feature selects the pseudo-normal used for the sign (sign.c,
 * Baerentzen & Aanaes 2005).
 *
 * Double precision. A near-degenerate triangle (whose barycentric denominators vanish) falls back
 * to the closest of its three edges, which is then exact up to rounding.
 *
 * Written in the C subset that nvcc also accepts (hostdev.h): the GPU build reuses it.
 */
#ifndef VOXLOD_VOXELIZER_DISTANCE_H
#define VOXLOD_VOXELIZER_DISTANCE_H

#include "svo/hostdev.h"

/* Feature codes: the face, vertex k (1 + k), edge k from vertex k to vertex (k+1)%3 (4 + k). */
enum {
  VX_FEAT_FACE = 0,
  VX_FEAT_V0 = 1,
  VX_FEAT_V1 = 2,
  VX_FEAT_V2 = 3,
  VX_FEAT_E01 = 4,
  VX_FEAT_E12 = 5,
  VX_FEAT_E20 = 6
};

VX_HD double vx_dot3d(const double *a, const double *b) {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

/* Closest point q on segment a + s (b - a), s in [0,1]; returns the feature: 0 interior, 1 at a,
 * 2 at b. */
VX_HD int vx_closest_on_segment(const double *p, const double *a, const double *b, double *q) {
  double ab[3], ap[3], len2, s;
  int i;
  for (i = 0; i < 3; i++) {
    ab[i] = b[i] - a[i];
    ap[i] = p[i] - a[i];
  }
  len2 = vx_dot3d(ab, ab);
  s = len2 > 0.0 ? vx_dot3d(ap, ab) / len2 : 0.0;
  if (s <= 0.0) {
    for (i = 0; i < 3; i++) q[i] = a[i];
    return 1;
  }
  if (s >= 1.0) {
    for (i = 0; i < 3; i++) q[i] = b[i];
    return 2;
  }
  for (i = 0; i < 3; i++) q[i] = a[i] + s * ab[i];
  return 0;
}

/* Closest point q to p on the closed triangle t (9 doubles); returns its VX_FEAT_* code. */
VX_HD int vx_closest_on_triangle(const double *p, const double *t, double *q) {
  const double *a = t, *b = t + 3, *c = t + 6;
  double ab[3], ac[3], ap[3], bp[3], cp[3];
  double d1, d2, d3, d4, d5, d6, va, vb, vc, denom, v, w;
  int i;
  for (i = 0; i < 3; i++) {
    ab[i] = b[i] - a[i];
    ac[i] = c[i] - a[i];
    ap[i] = p[i] - a[i];
    bp[i] = p[i] - b[i];
    cp[i] = p[i] - c[i];
  }
  d1 = vx_dot3d(ab, ap);
  d2 = vx_dot3d(ac, ap);
  if (d1 <= 0.0 && d2 <= 0.0) {
    for (i = 0; i < 3; i++) q[i] = a[i];
    return VX_FEAT_V0;
  }
  d3 = vx_dot3d(ab, bp);
  d4 = vx_dot3d(ac, bp);
  if (d3 >= 0.0 && d4 <= d3) {
    for (i = 0; i < 3; i++) q[i] = b[i];
    return VX_FEAT_V1;
  }
  vc = d1 * d4 - d3 * d2;
  if (vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0 && d1 - d3 > 0.0) {
    v = d1 / (d1 - d3);
    for (i = 0; i < 3; i++) q[i] = a[i] + v * ab[i];
    return VX_FEAT_E01;
  }
  d5 = vx_dot3d(ab, cp);
  d6 = vx_dot3d(ac, cp);
  if (d6 >= 0.0 && d5 <= d6) {
    for (i = 0; i < 3; i++) q[i] = c[i];
    return VX_FEAT_V2;
  }
  vb = d5 * d2 - d1 * d6;
  if (vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0 && d2 - d6 > 0.0) {
    w = d2 / (d2 - d6);
    for (i = 0; i < 3; i++) q[i] = a[i] + w * ac[i];
    return VX_FEAT_E20;
  }
  va = d3 * d6 - d5 * d4;
  if (va <= 0.0 && d4 - d3 >= 0.0 && d5 - d6 >= 0.0 && (d4 - d3) + (d5 - d6) > 0.0) {
    w = (d4 - d3) / ((d4 - d3) + (d5 - d6));
    for (i = 0; i < 3; i++) q[i] = b[i] + w * (c[i] - b[i]);
    return VX_FEAT_E12;
  }
  denom = va + vb + vc;
  if (denom > 0.0 && va >= 0.0 && vb >= 0.0 && vc >= 0.0) {
    v = vb / denom;
    w = vc / denom;
    for (i = 0; i < 3; i++) q[i] = a[i] + ab[i] * v + ac[i] * w;
    return VX_FEAT_FACE;
  }
  /* Rounding in a sliver: take the nearest of the three edges. */
  {
    double qe[3], best = -1.0, d;
    int k, f, feat = VX_FEAT_V0;
    for (i = 0; i < 3; i++) q[i] = a[i];
    for (k = 0; k < 3; k++) {
      const double *s0 = t + 3 * k, *s1 = t + 3 * ((k + 1) % 3);
      f = vx_closest_on_segment(p, s0, s1, qe);
      d = (p[0] - qe[0]) * (p[0] - qe[0]) + (p[1] - qe[1]) * (p[1] - qe[1]) +
          (p[2] - qe[2]) * (p[2] - qe[2]);
      if (best < 0.0 || d < best) {
        best = d;
        for (i = 0; i < 3; i++) q[i] = qe[i];
        feat = f == 0 ? VX_FEAT_E01 + k : f == 1 ? VX_FEAT_V0 + k : VX_FEAT_V0 + (k + 1) % 3;
      }
    }
    return feat;
  }
}

/* Squared distance from p to the closed triangle t; *feat (may be NULL) receives the feature. */
VX_HD double vx_tri_dist2(const double *p, const double *t, int *feat) {
  double q[3], d[3];
  int f = vx_closest_on_triangle(p, t, q);
  d[0] = p[0] - q[0];
  d[1] = p[1] - q[1];
  d[2] = p[2] - q[2];
  if (feat) *feat = f;
  return vx_dot3d(d, d);
}

#endif
