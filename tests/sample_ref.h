/* SPDX-License-Identifier: Apache-2.0 */
/* sample_ref.h - the sampler tests' reference, sharing no code with the sampler: the exact
 * distance to every triangle and the exact generalized winding number, in double precision. */
#ifndef VOXLOD_TESTS_SAMPLE_REF_H
#define VOXLOD_TESTS_SAMPLE_REF_H

#include <float.h>
#include <math.h>
#include <stdint.h>
#include "svo/soup.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

static double dot3(const double a[3], const double b[3]) {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

/* Squared distance from p to triangle abc (Ericson, Real-Time Collision Detection, 5.1.5). */
static double tri_dist2(const double p[3], const double a[3], const double b[3],
                        const double c[3]) {
  double ab[3], ac[3], ap[3], q[3];
  for (int i = 0; i < 3; i++) ab[i] = b[i] - a[i], ac[i] = c[i] - a[i], ap[i] = p[i] - a[i];
  double d1 = dot3(ab, ap), d2 = dot3(ac, ap);
  if (d1 <= 0 && d2 <= 0) {
    for (int i = 0; i < 3; i++) q[i] = a[i];
  } else {
    double bp[3], cp[3];
    for (int i = 0; i < 3; i++) bp[i] = p[i] - b[i], cp[i] = p[i] - c[i];
    double d3 = dot3(ab, bp), d4 = dot3(ac, bp), d5 = dot3(ab, cp), d6 = dot3(ac, cp);
    double vc = d1 * d4 - d3 * d2, vb = d5 * d2 - d1 * d6, va = d3 * d6 - d5 * d4;
    if (d3 >= 0 && d4 <= d3) {
      for (int i = 0; i < 3; i++) q[i] = b[i];
    } else if (d6 >= 0 && d5 <= d6) {
      for (int i = 0; i < 3; i++) q[i] = c[i];
    } else if (vc <= 0 && d1 >= 0 && d3 <= 0) {
      double v = d1 / (d1 - d3);
      for (int i = 0; i < 3; i++) q[i] = a[i] + v * ab[i];
    } else if (vb <= 0 && d2 >= 0 && d6 <= 0) {
      double w = d2 / (d2 - d6);
      for (int i = 0; i < 3; i++) q[i] = a[i] + w * ac[i];
    } else if (va <= 0 && d4 - d3 >= 0 && d5 - d6 >= 0) {
      double w = (d4 - d3) / ((d4 - d3) + (d5 - d6));
      for (int i = 0; i < 3; i++) q[i] = b[i] + w * (c[i] - b[i]);
    } else {
      double den = 1.0 / (va + vb + vc), v = vb * den, w = vc * den;
      for (int i = 0; i < 3; i++) q[i] = a[i] + ab[i] * v + ac[i] * w;
    }
  }
  double s = 0;
  for (int i = 0; i < 3; i++) s += (p[i] - q[i]) * (p[i] - q[i]);
  return s;
}

/* Signed distance (world units) to the soup: nearest triangle, inside where the generalized
 * winding number (the solid angles' sum, Van Oosterom & Strackee) exceeds 1/2. */
static double ref_sdf(const vx_soup *m, const float w[3]) {
  double p[3] = {w[0], w[1], w[2]}, best = DBL_MAX, wind = 0.0;
  for (uint64_t t = 0; t < m->tri_count; t++) {
    double v[3][3];
    for (int k = 0; k < 3; k++)
      for (int i = 0; i < 3; i++) v[k][i] = m->pos[t * 9 + k * 3 + i];
    double d2 = tri_dist2(p, v[0], v[1], v[2]);
    if (d2 < best) best = d2;
    double a[3], b[3], c[3];
    for (int i = 0; i < 3; i++) a[i] = v[0][i] - p[i], b[i] = v[1][i] - p[i], c[i] = v[2][i] - p[i];
    double la = sqrt(dot3(a, a)), lb = sqrt(dot3(b, b)), lc = sqrt(dot3(c, c));
    double det = a[0] * (b[1] * c[2] - b[2] * c[1]) - a[1] * (b[0] * c[2] - b[2] * c[0]) +
                 a[2] * (b[0] * c[1] - b[1] * c[0]);
    double den = la * lb * lc + dot3(a, b) * lc + dot3(a, c) * lb + dot3(b, c) * la;
    wind += 2.0 * atan2(det, den);
  }
  wind /= 4.0 * M_PI;
  return fabs(wind) > 0.5 ? -sqrt(best) : sqrt(best);
}

#endif
