/* SPDX-License-Identifier: Apache-2.0 */
/* overlap.h - closed triangle vs closed axis-aligned box, separating-axis test (host and device).
 *
 * Follows T. Akenine-Moller, "Fast 3D Triangle-Box Overlap Testing", JGT 2001: the triangle and
 * the box overlap unless one of 13 axes separates them: the 3 box normals (the triangle's bounding
 * box against the box), the triangle's normal (the plane against the box's extreme corners), and
 * the 9 cross products of box edges with triangle edges.
 *
 * Closed sets. Both the triangle and the box are closed, so two sets that only touch overlap. An
 * axis separates only when the projections are *strictly* apart (min > r or max < -r); every
 * comparison below is written that way, so a triangle lying exactly on a voxel face, edge or
 * corner overlaps every voxel that shares it (an axis-aligned quad at x = k sets the voxels of
 * both columns x = k-1 and x = k; cuda_voxelizer's users report such faces vanishing, which a
 * strict "touch is not overlap" test causes).
 *
 * Precision: double throughout. Grid coordinates are doubles and voxel boxes have half-integer
 * centres, so translating a vertex into the box frame (v - c) is exact for any grid coordinate
 * below 2^52; the box-normal and plane tests on axis-aligned data are therefore exact, and the
 * cross-product axes round at the 1e-16 relative level.
 *
 * Written in the C subset that nvcc also accepts (hostdev.h): the GPU build reuses it.
 */
#ifndef VOXLOD_VOXELIZER_OVERLAP_H
#define VOXLOD_VOXELIZER_OVERLAP_H

#include <math.h>
#include <stdint.h>
#include "svo/hostdev.h"

VX_HD double vx_min3d(double a, double b, double c) {
  double m = a < b ? a : b;
  return m < c ? m : c;
}
VX_HD double vx_max3d(double a, double b, double c) {
  double m = a > b ? a : b;
  return m > c ? m : c;
}

/* One cross-product axis: p0, p1, p2 the projections of the three vertices, r the box radius.
 * Separating when all three lie strictly on one side beyond r. */
VX_HD int vx_axis_separates(double p0, double p1, double p2, double r) {
  double lo = vx_min3d(p0, p1, p2), hi = vx_max3d(p0, p1, p2);
  return lo > r || hi < -r;
}

/* Does the closed triangle (t: 9 doubles, v0 v1 v2) overlap the closed box with centre c and
 * half extents h (all > 0)? Returns 1 or 0. */
VX_HD int vx_tri_box_overlap(const double *t, const double c[3], const double h[3]) {
  double v0[3], v1[3], v2[3], e0[3], e1[3], e2[3];
  int i;
  for (i = 0; i < 3; i++) {
    v0[i] = t[i] - c[i];
    v1[i] = t[3 + i] - c[i];
    v2[i] = t[6 + i] - c[i];
  }
  /* Box normals: the triangle's bounding box against the box. */
  for (i = 0; i < 3; i++)
    if (vx_min3d(v0[i], v1[i], v2[i]) > h[i] || vx_max3d(v0[i], v1[i], v2[i]) < -h[i]) return 0;
  for (i = 0; i < 3; i++) {
    e0[i] = v1[i] - v0[i];
    e1[i] = v2[i] - v1[i];
    e2[i] = v0[i] - v2[i];
  }
  /* Nine axes a_ij = box axis i x triangle edge j. For axis x cross e = (0, -e.z, e.y):
   * p = -e.z * v.y + e.y * v.z, r = h.y |e.z| + h.z |e.y|; and cyclically for y and z. */
  {
    const double *e[3];
    int j;
    e[0] = e0;
    e[1] = e1;
    e[2] = e2;
    for (j = 0; j < 3; j++) {
      const double *d = e[j];
      double fx = fabs(d[0]), fy = fabs(d[1]), fz = fabs(d[2]);
      /* x axis */
      if (vx_axis_separates(d[1] * v0[2] - d[2] * v0[1], d[1] * v1[2] - d[2] * v1[1],
                            d[1] * v2[2] - d[2] * v2[1], h[1] * fz + h[2] * fy))
        return 0;
      /* y axis: y cross e = (e.z, 0, -e.x) */
      if (vx_axis_separates(d[2] * v0[0] - d[0] * v0[2], d[2] * v1[0] - d[0] * v1[2],
                            d[2] * v2[0] - d[0] * v2[2], h[0] * fz + h[2] * fx))
        return 0;
      /* z axis: z cross e = (-e.y, e.x, 0) */
      if (vx_axis_separates(d[0] * v0[1] - d[1] * v0[0], d[0] * v1[1] - d[1] * v1[0],
                            d[0] * v2[1] - d[1] * v2[0], h[0] * fy + h[1] * fx))
        return 0;
    }
  }
  /* Triangle normal: the plane n.x + d = 0 against the box's extreme corners along n. */
  {
    double n[3], dd, vmin[3], vmax[3];
    n[0] = e0[1] * e1[2] - e0[2] * e1[1];
    n[1] = e0[2] * e1[0] - e0[0] * e1[2];
    n[2] = e0[0] * e1[1] - e0[1] * e1[0];
    dd = -(n[0] * v0[0] + n[1] * v0[1] + n[2] * v0[2]);
    for (i = 0; i < 3; i++) {
      if (n[i] > 0.0) {
        vmin[i] = -h[i];
        vmax[i] = h[i];
      } else {
        vmin[i] = h[i];
        vmax[i] = -h[i];
      }
    }
    if (n[0] * vmin[0] + n[1] * vmin[1] + n[2] * vmin[2] + dd > 0.0) return 0;
    if (n[0] * vmax[0] + n[1] * vmax[1] + n[2] * vmax[2] + dd < 0.0) return 0;
  }
  return 1;
}

/* The closed unit voxel [x, x+1] x [y, y+1] x [z, z+1] (grid coordinates). */
VX_HD int vx_tri_voxel_overlap(const double *t, int64_t x, int64_t y, int64_t z) {
  double c[3], h[3];
  c[0] = (double)x + 0.5;
  c[1] = (double)y + 0.5;
  c[2] = (double)z + 0.5;
  h[0] = h[1] = h[2] = 0.5;
  return vx_tri_box_overlap(t, c, h);
}

/* Voxels [lo, hi] (inclusive, clamped to the grid of R voxels per axis) whose closed boxes meet
 * the triangle's bounding box: voxel k meets [mn, mx] when k <= mx and k + 1 >= mn. Returns 0
 * when the range is empty. */
VX_HD int vx_tri_voxel_range(const double *g, int64_t R, int64_t lo[3], int64_t hi[3]) {
  int i;
  for (i = 0; i < 3; i++) {
    double mn = vx_min3d(g[i], g[3 + i], g[6 + i]), mx = vx_max3d(g[i], g[3 + i], g[6 + i]);
    if (!(mx >= 0.0) || !(mn <= (double)R)) return 0;
    lo[i] = (int64_t)ceil(mn) - 1;
    hi[i] = (int64_t)floor(mx);
    if (lo[i] < 0) lo[i] = 0;
    if (hi[i] > R - 1) hi[i] = R - 1;
    if (lo[i] > hi[i]) return 0;
  }
  return 1;
}

#endif
