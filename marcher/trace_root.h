/* SPDX-License-Identifier: Apache-2.0 */
/* trace_root.h - the first zero of the trilinear field along a ray inside one voxel (part of
 * trace.h; include that).
 *
 * Algorithm. Inside a voxel the trilinear interpolant of the 8 corner values, restricted to the
 * ray, is a cubic in t on [t_entry, t_exit] (Parker et al. 1998; Marmitt, Kleer, Wald, Friedrich
 * & Slusallek, "Fast and accurate ray-voxel intersection techniques for iso-surface ray tracing",
 * 2004). Its first root is isolated exactly: the roots of the derivative (a quadratic) split the
 * segment into at most three monotone pieces; the first piece whose end values differ in sign
 * holds the first root, which bisection and a final secant step refine to float precision.
 * Crossings count in both directions (+ to - and - to +), so hits are always zeros of the field,
 * also where a mesh's winding flips the sign or the grid boundary cuts the solid. There is no
 * fixed step size, so a feature thinner than any step cannot be tunnelled through: if the cubic
 * changes sign in the voxel the crossing is found. The normal is the normalised gradient of the
 * trilinear field at the hit.
 * Isolation (vx_cubic_first_bracket) and refinement (vx_cubic_refine) are separate: the walk
 * only asks each voxel whether it holds a root, and refines once, for the voxel that is hit. */
#ifndef VOXLOD_MARCHER_TRACE_ROOT_H
#define VOXLOD_MARCHER_TRACE_ROOT_H

#ifndef VOXLOD_MARCHER_TRACE_H
#error "marcher/trace_root.h is a part of marcher/trace.h: include that"
#endif

/* Value of the cubic k[0] + k[1] s + k[2] s^2 + k[3] s^3 (Horner). */
VX_HD float vx_cubic_eval(const float k[4], float s) {
  return ((k[3] * s + k[2]) * s + k[1]) * s + k[0];
}

/* The trilinear field of corner values c (corner i at (i&1, i>>1&1, i>>2&1)) along the local ray
 * a + s d, as a cubic in s: f(s) = k0 + k1 s + k2 s^2 + k3 s^3. Interpolating along x, then y,
 * then z: each step maps polynomials P0, P1 to (1-a) P0 + a P1 + s d (P1 - P0). */
VX_HD void vx_trilinear_cubic(const float c[8], const float a[3], const float d[3], float k[4]) {
  float p[4][2]; /* along x: 4 lines (y,z), linear in s */
  VX_UNROLL
  for (int j = 0; j < 4; j++) {
    float c0 = c[2 * j], c1 = c[2 * j + 1];
    p[j][0] = c0 + a[0] * (c1 - c0);
    p[j][1] = d[0] * (c1 - c0);
  }
  float q[2][3]; /* along y: 2 lines (z), quadratic */
  VX_UNROLL
  for (int z = 0; z < 2; z++) {
    const float *l0 = p[2 * z], *l1 = p[2 * z + 1];
    q[z][0] = l0[0] + a[1] * (l1[0] - l0[0]);
    q[z][1] = l0[1] + a[1] * (l1[1] - l0[1]) + d[1] * (l1[0] - l0[0]);
    q[z][2] = d[1] * (l1[1] - l0[1]);
  }
  k[0] = q[0][0] + a[2] * (q[1][0] - q[0][0]);
  k[1] = q[0][1] + a[2] * (q[1][1] - q[0][1]) + d[2] * (q[1][0] - q[0][0]);
  k[2] = q[0][2] + a[2] * (q[1][2] - q[0][2]) + d[2] * (q[1][1] - q[0][1]);
  k[3] = d[2] * (q[1][2] - q[0][2]);
}

/* Gradient of the trilinear field at local point x in [0,1]^3. */
VX_HD void vx_trilinear_grad(const float c[8], const float x[3], float g[3]) {
  float wx1 = x[0], wy1 = x[1], wz1 = x[2];
  float wx0 = 1.0f - wx1, wy0 = 1.0f - wy1, wz0 = 1.0f - wz1;
  g[0] = wy0 * wz0 * (c[1] - c[0]) + wy1 * wz0 * (c[3] - c[2]) + wy0 * wz1 * (c[5] - c[4]) +
         wy1 * wz1 * (c[7] - c[6]);
  g[1] = wx0 * wz0 * (c[2] - c[0]) + wx1 * wz0 * (c[3] - c[1]) + wx0 * wz1 * (c[6] - c[4]) +
         wx1 * wz1 * (c[7] - c[5]);
  g[2] = wx0 * wy0 * (c[4] - c[0]) + wx1 * wy0 * (c[5] - c[1]) + wx0 * wy1 * (c[6] - c[2]) +
         wx1 * wy1 * (c[7] - c[3]);
}

/* The first root of the cubic k on [0, smax], isolated: returns 1 with br = {lo, hi, f(lo),
 * f(hi)}, a bracket on a monotone piece whose ends differ in sign (lo == hi: an exact zero there),
 * or 0 when the cubic has no zero on [0, smax]. The derivative's roots split [0, smax] into
 * monotone pieces; the first piece whose ends differ in sign (or touch zero) holds the first
 * root. Exact up to float rounding of the coefficients: a sign change, however narrow, is never
 * stepped over. The walk calls this per voxel; the refinement (vx_cubic_refine) is done once per
 * ray. */
VX_HD int vx_cubic_first_bracket(const float k[4], float smax, float br[4]) {
  /* derivative 3 k3 s^2 + 2 k2 s + k1 */
  float A = 3.0f * k[3], B = 2.0f * k[2], C = k[1];
  float r0 = smax, r1 = smax; /* split points in (0, smax), sorted; smax = none */
  float scale = fabsf(A) * smax * smax + fabsf(B) * smax + fabsf(C);
  if (fabsf(A) * smax * smax > 1e-7f * scale) {
    float disc = B * B - 4.0f * A * C;
    if (disc > 0.0f) {
      float sq = sqrtf(disc);
      float qq = -0.5f * (B + (B >= 0.0f ? sq : -sq));
      float x0 = qq / A, x1 = qq != 0.0f ? C / qq : x0;
      if (x0 > x1) { float tmp = x0; x0 = x1; x1 = tmp; }
      if (x0 > 0.0f && x0 < smax) r0 = x0;
      if (x1 > 0.0f && x1 < smax) { if (r0 < smax) r1 = x1; else r0 = x1; }
    }
  } else if (fabsf(B) * smax > 1e-7f * scale) {
    float x0 = -C / B;
    if (x0 > 0.0f && x0 < smax) r0 = x0;
  }
  float sa = 0.0f, fa = k[0];
  /* Any sign change counts, either way: a ray that enters the solid without crossing a stored
   * zero (through the grid boundary, or where a scan's sign is flipped) still stops at the next
   * zero of the field, never at a voxel face. */
  br[0] = br[1] = 0.0f;
  br[2] = br[3] = 0.0f;
  if (fa == 0.0f) return 1;
  VX_UNROLL
  for (int piece = 0; piece < 3; piece++) {
    float sb = piece == 0 ? r0 : (piece == 1 ? r1 : smax);
    if (sb <= sa) continue;
    float fb = vx_cubic_eval(k, sb);
    if (fb == 0.0f || (fa < 0.0f) != (fb < 0.0f)) {
      br[0] = fb == 0.0f ? sb : sa;
      br[1] = sb;
      br[2] = fb == 0.0f ? 0.0f : fa;
      br[3] = fb;
      return 1;
    }
    sa = sb;
    fa = fb;
  }
  return 0;
}

/* The root inside a bracket of vx_cubic_first_bracket: bisection on the monotone piece, 12
 * halvings leave <= 2^-12 of a voxel's segment (<= 4.3e-4 voxel), then one secant step inside
 * it: on a monotone piece the cubic is nearly linear there, so the result is within float noise
 * of the root (24 halvings before: the same to ~1e-6 voxel, twice the serial chain). */
VX_HD float vx_cubic_refine(const float k[4], const float br[4]) {
  float lo = br[0], hi = br[1], flo = br[2], fhi = br[3];
  if (lo == hi) return lo;
  for (int it = 0; it < 12; it++) {
    float mid = 0.5f * (lo + hi);
    float fm = vx_cubic_eval(k, mid);
    if (fm == 0.0f) return mid;
    if ((fm < 0.0f) == (flo < 0.0f)) { lo = mid; flo = fm; } else { hi = mid; fhi = fm; }
  }
  return lo + (hi - lo) * (flo / (flo - fhi));
}

/* First root of the cubic k on [0, smax], or a negative number when it has none there. */
VX_HD float vx_cubic_first_root(const float k[4], float smax) {
  float br[4];
  return vx_cubic_first_bracket(k, smax, br) ? vx_cubic_refine(k, br) : -1.0f;
}

#endif
