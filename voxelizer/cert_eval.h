/* SPDX-License-Identifier: Apache-2.0 */
/* cert_eval.h - whether a triangle is "clean" for the winding rule's shortcut (sign.c explains
 * the rule), host and device: sign.c certifies every triangle on all cores, the GPU build on the
 * GPU (gpu_sign.cu), with these functions. Double precision; the winding numbers use atan2, the
 * one function whose last bit may differ between the host's library and CUDA's, which could only
 * matter for a winding number within an ulp of a 0.35 threshold.
 */
#ifndef VOXLOD_VOXELIZER_CERT_EVAL_H
#define VOXLOD_VOXELIZER_CERT_EVAL_H

#include <math.h>
#include <stdint.h>
#include "svo/hostdev.h"
#include "voxelizer/winding.h"

VX_HD double vx_orient3(const double *a, const double *b, const double *c, const double *d) {
  double u[3], v[3], w[3];
  for (int i = 0; i < 3; i++) {
    u[i] = b[i] - a[i];
    v[i] = c[i] - a[i];
    w[i] = d[i] - a[i];
  }
  return u[0] * (v[1] * w[2] - v[2] * w[1]) + u[1] * (v[2] * w[0] - v[0] * w[2]) +
         u[2] * (v[0] * w[1] - v[1] * w[0]);
}

/* Segment ab crosses triangle g properly (ends strictly on both sides, line strictly inside),
 * da and db being vx_orient3(g, g + 3, g + 6, a) and (.., b): the ends against g's plane. */
VX_HD int vx_segment_crosses(const double *a, const double *b, double da, double db,
                             const double *g) {
  if (!((da > 0 && db < 0) || (da < 0 && db > 0))) return 0;
  double s0 = vx_orient3(a, b, g, g + 3), s1 = vx_orient3(a, b, g + 3, g + 6), s2 = vx_orient3(a, b, g + 6, g);
  return (s0 > 0 && s1 > 0 && s2 > 0) || (s0 < 0 && s1 < 0 && s2 < 0);
}

/* Does an edge of triangle g properly cross triangle h, or one of h's cross g? Each vertex is
 * placed against the other triangle's plane once (most pairs end there: no edge has its ends on
 * both sides). */
VX_HD int vx_triangles_cross(const double *g, const double *h) {
  double dg[3], dh[3]; /* h's vertices against g's plane, g's against h's */
  for (int k = 0; k < 3; k++) {
    dg[k] = vx_orient3(g, g + 3, g + 6, h + 3 * k);
    dh[k] = vx_orient3(h, h + 3, h + 6, g + 3 * k);
  }
  for (int e = 0; e < 3; e++) {
    const int f = (e + 1) % 3;
    if (vx_segment_crosses(g + e * 3, g + f * 3, dh[e], dh[f], h) ||
        vx_segment_crosses(h + e * 3, h + f * 3, dg[e], dg[f], g))
      return 1;
  }
  return 0;
}

VX_HD int vx_shares_vertex(const double *g, const double *h) {
  for (int a = 0; a < 3; a++)
    for (int b = 0; b < 3; b++)
      if (g[a * 3] == h[b * 3] && g[a * 3 + 1] == h[b * 3 + 1] && g[a * 3 + 2] == h[b * 3 + 2])
        return 1;
  return 0;
}

/* Does triangle g cut through another triangle of the tree (one sharing no vertex with it)? */
VX_HD int vx_crosses_other(const vx_wind_tree *t, const double *g) {
  const vx_wind_node *nodes = t->nodes;
  double c[3], r = 0.0, lo[3], hi[3];
  for (int i = 0; i < 3; i++) {
    c[i] = (g[i] + g[3 + i] + g[6 + i]) / 3.0;
    lo[i] = fmin(fmin(g[i], g[3 + i]), g[6 + i]);
    hi[i] = fmax(fmax(g[i], g[3 + i]), g[6 + i]);
  }
  for (int k = 0; k < 3; k++) {
    double d2 = 0.0;
    for (int i = 0; i < 3; i++) d2 += (g[k * 3 + i] - c[i]) * (g[k * 3 + i] - c[i]);
    if (d2 > r * r) r = sqrt(d2);
  }
  uint32_t stack[VX_WIND_STACK];
  int sp = 0;
  stack[sp++] = 0;
  while (sp > 0) {
    const vx_wind_node *nd = nodes + stack[--sp];
    double x = nd->c[0] - c[0], y = nd->c[1] - c[1], z = nd->c[2] - c[2], R = nd->r + r;
    if (x * x + y * y + z * z > R * R * (1.0 + 1e-9) + 1e-12) continue;
    if (!nd->count) {
      if (sp + 2 > VX_WIND_STACK) continue;
      stack[sp++] = nd->first + 1;
      stack[sp++] = nd->first;
      continue;
    }
    for (uint32_t k = 0; k < nd->count; k++) {
      double h[9];
      vx_wind_leaf_tri(t, (uint64_t)nd->first + k, h);
      int apart = 0; /* bounding boxes apart: no crossing */
      for (int i = 0; i < 3; i++)
        apart |= (h[i] > hi[i] && h[3 + i] > hi[i] && h[6 + i] > hi[i]) ||
                 (h[i] < lo[i] && h[3 + i] < lo[i] && h[6 + i] < lo[i]);
      if (apart || vx_shares_vertex(g, h)) continue; /* or itself, or a neighbour */
      if (vx_triangles_cross(g, h)) return 1;
    }
  }
  return 0;
}

/* The clean code of grid triangle g (9 doubles) of a mesh whose winding tree is t:
 * 1 clean, 2 clean but inverted, 0 not (it crosses another triangle, or the winding number just
 * behind and in front of its centroid is not that of a face of a closed shell). Call it only for
 * triangles whose edges already passed the manifold test. */
VX_HD uint8_t vx_cert_triangle(const vx_wind_tree *t, const double *g) {
  double n[3], u[3], v[3], io[2][3], wi, wo;
  int i;
  for (i = 0; i < 3; i++) {
    u[i] = g[3 + i] - g[i];
    v[i] = g[6 + i] - g[i];
  }
  n[0] = u[1] * v[2] - u[2] * v[1];
  n[1] = u[2] * v[0] - u[0] * v[2];
  n[2] = u[0] * v[1] - u[1] * v[0];
  /* a step of 1/1000 of the triangle's size, along its unit normal */
  double l = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]), e = l > 0.0 ? 1e-3 * sqrt(l) / l : 0.0;
  for (i = 0; i < 3; i++) {
    double c = (g[i] + g[3 + i] + g[6 + i]) / 3.0;
    io[0][i] = c - e * n[i]; /* behind */
    io[1][i] = c + e * n[i]; /* in front */
  }
  if (vx_crosses_other(t, g)) return 0;
  vx_wind_eval2(t, (const double(*)[3])io, 1.0, &wi, &wo); /* two walks in one */
  if (fabs(wi - 1.0) < 0.35 && fabs(wo) < 0.35) return 1; /* beta = 1: errors <= 0.15 */
  if (fabs(wi) < 0.35 && fabs(wo + 1.0) < 0.35) return 2; /* inverted */
  return 0;
}

#endif
