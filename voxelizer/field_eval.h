/* SPDX-License-Identifier: Apache-2.0 */
/* field_eval.h - one corner's value and one thin voxel's re-signing, host and device.
 *
 * field.c (the CPU build, block by block) and gpu_build.cu (the GPU build) choose the candidate
 * triangles and the winner the same way (lowest squared distance, ties to the lowest triangle
 * index); these functions turn the winner into the stored value, so both builds write the same
 * bits. The reasoning behind each rule is documented in field.c.
 */
#ifndef VOXLOD_VOXELIZER_FIELD_EVAL_H
#define VOXLOD_VOXELIZER_FIELD_EVAL_H

#include <math.h>
#include <stdint.h>
#include "svo/hostdev.h"
#include "svo/node.h"
#include "voxelizer/distance.h"
#include "voxelizer/sign_eval.h"

/* The quantized signed value at grid point p whose nearest candidate is triangle `tri` (global
 * index; tg its grid coordinates) at squared distance d2: the distance, signed by the rule of
 * `sign` (winding when it holds a tree, else pseudo-normals), truncated at +-band and quantized.
 * A magnitude that quantizes to 0 needs no sign. Split in two so that the GPU can gather the
 * corners that need the (expensive) winding number and evaluate them together:
 * vx_corner_eval_fast returns 1 with *val set, or 0 when the sign needs the winding number at p;
 * then vx_corner_eval_wound gives the value. vx_corner_eval does both. */
VX_HD int vx_corner_eval_fast(const vx_sign_data *sign, uint64_t tri, const double *tg,
                              const double p[3], double d2, float band, int8_t *val) {
  double d = sqrt(d2), s, q[3];
  int feat, clean;
  if (vx_corner_quantize(d, band) == 0) {
    *val = 0;
    return 1;
  }
  feat = vx_closest_on_triangle(p, tg, q);
  if (!sign->wind.node_count) {
    s = vx_sign_of(sign, tri, feat, p, q);
  } else {
    clean = vx_sign_clean(sign, tri, feat, d);
    if (!clean) return 0;
    s = clean == 1 ? vx_sign_of(sign, tri, feat, p, q) : -vx_sign_of(sign, tri, feat, p, q);
  }
  *val = vx_corner_quantize(s * d, band);
  return 1;
}

/* *exact: the triangles the winding number summed exactly (its cost, vx_wind_eval_n). */
VX_HD int8_t vx_corner_eval_wound_n(const vx_sign_data *sign, const double p[3], double d2,
                                    float band, uint64_t *exact) {
  return vx_corner_quantize(vx_sign_by_winding_n(sign, p, exact) * sqrt(d2), band);
}

VX_HD int8_t vx_corner_eval_wound(const vx_sign_data *sign, const double p[3], double d2,
                                  float band) {
  uint64_t n;
  return vx_corner_eval_wound_n(sign, p, d2, band, &n);
}

VX_HD int8_t vx_corner_eval(const vx_sign_data *sign, uint64_t tri, const double *tg,
                            const double p[3], double d2, float band) {
  int8_t v;
  if (vx_corner_eval_fast(sign, tri, tg, p, d2, band, &v)) return v;
  return vx_corner_eval_wound(sign, p, d2, band);
}

/* Is the voxel's field all outside (no corner negative, one positive at least)? 0: no; 1: yes;
 * 2: yes, with a zero corner (then it is re-signed only when its nearest triangle passes within
 * half a voxel of the centre). */
VX_HD int vx_thin_kind(const vx_voxel *v) {
  int pos = 0, neg = 0, c;
  for (c = 0; c < 8; c++) {
    pos += v->c[c] > 0;
    neg += v->c[c] < 0;
  }
  if (!(neg == 0 && pos > 0)) return 0; /* a sign change, all zero, or all inside */
  return pos + neg < 8 ? 2 : 1;
}

/* Re-signs a thin voxel (x, y, z) by the side of the plane of its nearest triangle t (grid
 * coordinates) whose squared distance from the centre is d2; kind from vx_thin_kind. Returns 1
 * when the values changed (the plane cuts the voxel), else 0. */
VX_HD int vx_thin_resign(const double *t, double d2, int kind, int64_t x, int64_t y, int64_t z,
                         vx_voxel *v) {
  double e1[3], e2[3], nrm[3], side[8];
  int above = 0, below = 0, a, c;
  if (kind == 2 && !(d2 < 0.25)) return 0;
  for (a = 0; a < 3; a++) {
    e1[a] = t[3 + a] - t[a];
    e2[a] = t[6 + a] - t[a];
  }
  nrm[0] = e1[1] * e2[2] - e1[2] * e2[1];
  nrm[1] = e1[2] * e2[0] - e1[0] * e2[2];
  nrm[2] = e1[0] * e2[1] - e1[1] * e2[0];
  for (c = 0; c < 8; c++) {
    double q[3];
    q[0] = (double)(x + (c & 1)) - t[0];
    q[1] = (double)(y + (c >> 1 & 1)) - t[1];
    q[2] = (double)(z + (c >> 2 & 1)) - t[2];
    side[c] = nrm[0] * q[0] + nrm[1] * q[1] + nrm[2] * q[2];
    above += side[c] > 0.0;
    below += side[c] < 0.0;
  }
  if (above == 0 || below == 0) return 0; /* the plane does not cut the voxel */
  for (c = 0; c < 8; c++) {
    int mag = v->c[c] < 0 ? -v->c[c] : v->c[c];
    v->c[c] = (int8_t)(side[c] < 0.0 ? -mag : mag);
  }
  return 1;
}

/* The centre of voxel (x, y, z), where the thin rule measures its nearest triangle. */
VX_HD void vx_voxel_centre(int64_t x, int64_t y, int64_t z, double p[3]) {
  p[0] = (double)x + 0.5;
  p[1] = (double)y + 0.5;
  p[2] = (double)z + 0.5;
}

#endif
