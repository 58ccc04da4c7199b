/* SPDX-License-Identifier: Apache-2.0 */
/* test_gpu_sdf.h - trees from analytic signed-distance functions, for the GPU tests.
 *
 * A voxel is a surface voxel when |f(centre)| <= half its diagonal (the exact SDF's zero set can
 * only meet the box then); its corners get f quantized with the tree's band. World = grid / R
 * (the unit cube). Planes are left empty: the GPU tests render at full detail and at cuts, where
 * nodes without VX_NODE_PLANE_OK are drawn as boxes by the shared traversal.
 */
#ifndef VOXLOD_TESTS_GPU_SDF_H
#define VOXLOD_TESTS_GPU_SDF_H

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "svo/svo.h"

/* Two spheres and a torus: silhouettes, concavities and thin parts, in grid units of a 2^D grid. */
static double gpu_sdf_shape(double x, double y, double z, double R) {
  double a = sqrt((x - 0.42 * R) * (x - 0.42 * R) + (y - 0.5 * R) * (y - 0.5 * R) +
                  (z - 0.5 * R) * (z - 0.5 * R)) - 0.27 * R;
  double b = sqrt((x - 0.70 * R) * (x - 0.70 * R) + (y - 0.62 * R) * (y - 0.62 * R) +
                  (z - 0.45 * R) * (z - 0.45 * R)) - 0.16 * R;
  double qx = sqrt((x - 0.5 * R) * (x - 0.5 * R) + (z - 0.5 * R) * (z - 0.5 * R)) - 0.33 * R;
  double qy = y - 0.22 * R;
  double c = sqrt(qx * qx + qy * qy) - 0.05 * R;
  double m = a < b ? a : b;
  return m < c ? m : c;
}

/* Builds the tree of gpu_sdf_shape at depth D (D <= 8 keeps it under a second). */
static vx_status gpu_sdf_tree(uint32_t depth, vx_octree *t) {
  const uint32_t R = 1u << depth;
  const double half_diag = 0.5 * sqrt(3.0), band = 2.0;
  uint64_t total = (uint64_t)R * R * R, n = 0, cap = 1 << 16;
  uint64_t *codes = (uint64_t *)malloc(cap * sizeof *codes);
  vx_voxel *field = (vx_voxel *)malloc(cap * sizeof *field);
  vx_status st = VX_ERR_NOMEM;
  memset(t, 0, sizeof *t);
  if (!codes || !field) goto done;
  for (uint64_t m = 0; m < total; m++) {
    uint32_t x, y, z;
    vx_morton_decode(m, &x, &y, &z);
    if (fabs(gpu_sdf_shape(x + 0.5, y + 0.5, z + 0.5, R)) > half_diag) continue;
    if (n == cap) {
      cap *= 2;
      uint64_t *c2 = (uint64_t *)realloc(codes, cap * sizeof *codes);
      vx_voxel *f2 = (vx_voxel *)realloc(field, cap * sizeof *field);
      if (c2) codes = c2;
      if (f2) field = f2;
      if (!c2 || !f2) goto done;
    }
    for (int c = 0; c < 8; c++)
      field[n].c[c] = vx_corner_quantize(
          gpu_sdf_shape(x + (c & 1), y + (c >> 1 & 1), z + (c >> 2 & 1), R), (float)band);
    codes[n++] = m;
  }
  st = vx_octree_build(depth, codes, field, n, t, NULL);
  if (st == VX_OK) {
    t->band = (float)band;
    t->xf.origin[0] = t->xf.origin[1] = t->xf.origin[2] = 0.0;
    t->xf.scale = 1.0 / R;
  }
done:
  free(codes);
  free(field);
  return st;
}

#endif
