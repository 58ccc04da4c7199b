/* SPDX-License-Identifier: Apache-2.0 */
/* lod_eval.h - the plane fit's arithmetic, host and device: moments, the least-squares plane,
 * its packed form, and one node's fit from its children (lod.c documents the method).
 *
 * lod.c (the CPU fit, depth first) and the GPU build (level by level, one thread per node) call
 * the same functions, written in the C subset nvcc accepts (hostdev.h). The arithmetic is double
 * (float only where the node stores float), with no call into a math library beyond sqrt, floor,
 * ceil, fabs and ldexp, which are exact on every platform; compiled without fused multiply-adds,
 * both give the same bits.
 */
#ifndef VOXLOD_SVO_LOD_EVAL_H
#define VOXLOD_SVO_LOD_EVAL_H

#include <math.h>
#include <stdint.h>
#include "svo/hostdev.h"
#include "svo/node.h"
#include "svo/lod.h"

VX_HD void vx_mom_clear(vx_moments *m) {
  int i;
  m->n = m->f = m->ff = 0.0;
  for (i = 0; i < 3; i++) m->s[i] = m->fs[i] = 0.0;
  for (i = 0; i < 6; i++) m->ss[i] = 0.0;
}

/* ---- moments --------------------------------------------------------------------------------- */

VX_HD void vx_mom_add(vx_moments *m, double x, double y, double z, double f) {
  m->n += 1.0;
  m->s[0] += x;
  m->s[1] += y;
  m->s[2] += z;
  m->ss[0] += x * x;
  m->ss[1] += x * y;
  m->ss[2] += x * z;
  m->ss[3] += y * y;
  m->ss[4] += y * z;
  m->ss[5] += z * z;
  m->f += f;
  m->fs[0] += f * x;
  m->fs[1] += f * y;
  m->fs[2] += f * z;
  m->ff += f * f;
}

/* Index of (i, j) in the packed symmetric 3x3: xx xy xz yy yz zz. */
VX_HD int vx_mom_sym(int i, int j) {
  int a = i < j ? i : j, b = i < j ? j : i;
  return a * 3 - a * (a + 1) / 2 + b;
}

VX_HD void vx_mom_merge(vx_moments *dst, const vx_moments *src, const double t[3]) {
  const double n = src->n;
  int i, j;
  for (i = 0; i < 3; i++)
    for (j = i; j < 3; j++)
      dst->ss[vx_mom_sym(i, j)] += src->ss[vx_mom_sym(i, j)] + src->s[i] * t[j] + t[i] * src->s[j] + n * t[i] * t[j];
  for (i = 0; i < 3; i++) {
    dst->s[i] += src->s[i] + n * t[i];
    dst->fs[i] += src->fs[i] + src->f * t[i];
  }
  dst->n += n;
  dst->f += src->f;
  dst->ff += src->ff;
}

/* Means and centred second moments (see the top of the file). Requires m->n > 0. */
typedef struct vx_centred {
  double m[3], mf; /* means of p and f */
  double C[3][3];  /* covariance of p */
  double c[3];     /* covariance of p and f */
  double vf;       /* variance of f */
  double scale;    /* trace(Q/N): the size of the terms that cancel in C */
} vx_centred;

VX_HD void vx_mom_centre(const vx_moments *mo, vx_centred *z) {
  const double inv = 1.0 / mo->n;
  for (int i = 0; i < 3; i++) z->m[i] = mo->s[i] * inv;
  z->mf = mo->f * inv;
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) z->C[i][j] = mo->ss[vx_mom_sym(i, j)] * inv - z->m[i] * z->m[j];
  for (int i = 0; i < 3; i++) z->c[i] = mo->fs[i] * inv - z->mf * z->m[i];
  z->vf = mo->ff * inv - z->mf * z->mf;
  z->scale = (mo->ss[0] + mo->ss[3] + mo->ss[5]) * inv;
}

/* Mean squared residual of q(p) = a.p + b over the samples, from the centred moments. */
VX_HD double vx_mom_msr(const vx_centred *z, const double a[3], double b) {
  double aCa = 0.0, ac = 0.0, am = 0.0;
  for (int i = 0; i < 3; i++) {
    for (int j = 0; j < 3; j++) aCa += a[i] * z->C[i][j] * a[j];
    ac += a[i] * z->c[i];
    am += a[i] * z->m[i];
  }
  double off = am + b - z->mf;
  double e = aCa - 2.0 * ac + z->vf + off * off;
  return e > 0.0 ? e : 0.0;
}

/* Eigen-decomposition of a symmetric 3x3 matrix by cyclic Jacobi rotations:
 * A = V diag(lam) V^T, eigenvectors in the columns of V. A is destroyed. */
VX_HD void vx_eigen_sym3(double A[3][3], double lam[3], double V[3][3]) {
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) V[i][j] = i == j ? 1.0 : 0.0;
  for (int sweep = 0; sweep < 50; sweep++) {
    double off = A[0][1] * A[0][1] + A[0][2] * A[0][2] + A[1][2] * A[1][2];
    double diag = A[0][0] * A[0][0] + A[1][1] * A[1][1] + A[2][2] * A[2][2];
    if (off == 0.0 || off <= 1e-34 * diag) break;
    for (int p = 0; p < 2; p++)
      for (int q = p + 1; q < 3; q++) {
        if (A[p][q] == 0.0) continue;
        double theta = (A[q][q] - A[p][p]) / (2.0 * A[p][q]);
        double t = fabs(theta) > 1e150 ? 0.5 / theta
                                       : (theta >= 0.0 ? 1.0 : -1.0) /
                                             (fabs(theta) + sqrt(theta * theta + 1.0));
        double c = 1.0 / sqrt(t * t + 1.0), s = t * c;
        for (int k = 0; k < 3; k++) { /* A <- A J */
          double akp = A[k][p], akq = A[k][q];
          A[k][p] = c * akp - s * akq;
          A[k][q] = s * akp + c * akq;
        }
        for (int k = 0; k < 3; k++) { /* A <- J^T A */
          double apk = A[p][k], aqk = A[q][k];
          A[p][k] = c * apk - s * aqk;
          A[q][k] = s * apk + c * aqk;
        }
        for (int k = 0; k < 3; k++) { /* V <- V J */
          double vkp = V[k][p], vkq = V[k][q];
          V[k][p] = c * vkp - s * vkq;
          V[k][q] = s * vkp + c * vkq;
        }
      }
  }
  for (int i = 0; i < 3; i++) lam[i] = A[i][i];
}

/* Solves C a = c by the pseudo-inverse of C; returns 1 when every direction was determined. */
VX_HD int vx_mom_solve(const vx_centred *z, double a[3]) {
  double A[3][3], lam[3], V[3][3];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) A[i][j] = z->C[i][j];
  vx_eigen_sym3(A, lam, V);
  double lmax = 0.0;
  for (int k = 0; k < 3; k++)
    if (lam[k] > lmax) lmax = lam[k];
  /* Below this an eigenvalue is indistinguishable from 0: relative to the largest, or to the
   * round-off of Q/N - m m^T (terms of size `scale` cancel). */
  double tol = 1e-10 * lmax + 1e-13 * z->scale;
  int ok = lmax > 0.0;
  a[0] = a[1] = a[2] = 0.0;
  for (int k = 0; k < 3; k++) {
    if (!(lam[k] > tol)) {
      ok = 0;
      continue;
    }
    double w = (V[0][k] * z->c[0] + V[1][k] * z->c[1] + V[2][k] * z->c[2]) / lam[k];
    for (int i = 0; i < 3; i++) a[i] += w * V[i][k];
  }
  return ok;
}

VX_HD int vx_mom_fit(const vx_moments *m, double a[3], double *b, double *rms) {
  a[0] = a[1] = a[2] = 0.0;
  *b = 0.0;
  *rms = 0.0;
  if (!(m->n > 0.0)) return 0;
  vx_centred z;
  vx_mom_centre(m, &z);
  int ok = vx_mom_solve(&z, a);
  *b = z.mf - (a[0] * z.m[0] + a[1] * z.m[1] + a[2] * z.m[2]);
  *rms = sqrt(vx_mom_msr(&z, a, *b));
  return ok;
}

VX_HD void vx_mom_zero_centred(vx_centred *z) {
  int i, j;
  for (i = 0; i < 3; i++) {
    z->m[i] = z->c[i] = 0.0;
    for (j = 0; j < 3; j++) z->C[i][j] = 0.0;
  }
  z->mf = z->vf = z->scale = 0.0;
}

/* ---- packed planes ----------------------------------------------------------------------------- */

/* A node's plane as stored, decoded to double, in the node's frame (origin at its min corner). */
typedef struct vx_plane {
  double n[3]; /* decoded unit normal */
  double e;    /* value = n.p + e */
} vx_plane;

VX_HD double vx_plane_at(const vx_plane *P, double x, double y, double z) {
  return P->n[0] * x + P->n[1] * y + P->n[2] * z + P->e;
}

VX_HD void vx_plane_decode(const vx_node *nd, double size, vx_plane *P) {
  float n[3];
  vx_oct_decode(nd->normal, n);
  double h = 0.5 * size;
  for (int i = 0; i < 3; i++) P->n[i] = (double)n[i];
  P->e = (double)nd->d * size - h * (P->n[0] + P->n[1] + P->n[2]);
}

/* Fits the moments, writes normal and d into nd, returns the decoded plane in P, the RMS of the
 * packed plane in *rms, and VX_NODE_PLANE_OK or 0. */
VX_HD uint32_t vx_pack_plane(const vx_moments *m, double size, vx_node *nd, vx_plane *P,
                             double *rms) {
  double a[3], b, rls;
  int ok = vx_mom_fit(m, a, &b, &rls);
  double g = sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]);
  uint32_t code = g > 0.0 ? vx_oct_encode(a[0] / g, a[1] / g, a[2] / g) : vx_oct_encode(0, 0, 1);
  nd->normal = code;
  vx_centred z;
  if (m->n > 0.0) {
    vx_mom_centre(m, &z);
  } else {
    vx_mom_zero_centred(&z);
  }
  float n[3];
  vx_oct_decode(code, n);
  double h = 0.5 * size;
  double e = z.mf - ((double)n[0] * z.m[0] + (double)n[1] * z.m[1] + (double)n[2] * z.m[2]);
  double d = (e + h * ((double)n[0] + (double)n[1] + (double)n[2])) / size;
  nd->d = (float)d;
  vx_plane_decode(nd, size, P);
  *rms = m->n > 0.0 ? sqrt(vx_mom_msr(&z, P->n, P->e)) : 0.0;
  return ok && g > 0.05 ? VX_NODE_PLANE_OK : 0u;
}

/* A computed bound, made safe against the round-off of its own double evaluation. */
VX_HD double vx_fit_pad(double e, double size) { return e * (1.0 + 1e-12) + 1e-12 * size; }


/* An empty result for a node of edge `size`: no moments, an inverted sample box. */
VX_HD void vx_fit_begin(vx_fit_root *r, double size) {
  int i;
  vx_mom_clear(&r->m);
  r->bound = 0.0;
  for (i = 0; i < 3; i++) {
    r->lo[i] = size;
    r->hi[i] = 0.0;
  }
}

/* One node whose children are voxels (level D-1): v holds its children's fields in slot order
 * (mask), size is the node's edge in finest voxels. Fits and packs the plane into nd (normal, d,
 * info with mask, error codes and flags) and returns what the parent needs in r: the moments of
 * the corner samples (node frame), the exact max error padded into a bound, the samples' box. */
VX_HD void vx_fit_over_voxels(vx_node *nd, const vx_voxel *v, uint32_t mask, float band,
                              double size, vx_fit_root *r) {
  vx_moments *out = &r->m;
  vx_plane P;
  double rms, emax = 0.0;
  uint32_t flags, s, k;
  int i, c;
  vx_fit_begin(r, size);
  for (s = 0, k = 0; s < 8; s++) {
    if (!(mask >> s & 1u)) continue;
    const vx_voxel *vox = &v[k++];
    for (i = 0; i < 3; i++) {
      double o = (double)(s >> i & 1);
      if (o < r->lo[i]) r->lo[i] = o;
      if (o + 1.0 > r->hi[i]) r->hi[i] = o + 1.0;
    }
    for (c = 0; c < 8; c++)
      vx_mom_add(out, (double)((s & 1) + (c & 1)), (double)((s >> 1 & 1) + (c >> 1 & 1)),
                 (double)((s >> 2 & 1) + (c >> 2 & 1)), (double)vx_corner_value(vox->c[c], band));
  }
  flags = vx_pack_plane(out, size, nd, &P, &rms);
  for (s = 0, k = 0; s < 8; s++) {
    if (!(mask >> s & 1u)) continue;
    const vx_voxel *vox = &v[k++];
    for (c = 0; c < 8; c++) {
      double q = vx_plane_at(&P, (double)((s & 1) + (c & 1)), (double)((s >> 1 & 1) + (c >> 1 & 1)),
                             (double)((s >> 2 & 1) + (c >> 2 & 1)));
      double e = fabs(q - (double)vx_corner_value(vox->c[c], band));
      if (e > emax) emax = e;
    }
  }
  r->bound = vx_fit_pad(emax, size);
  flags |= 1u << 2; /* drawn-plane bound 0: only voxels below (node.h) */
  nd->info = vx_node_info(mask, vx_err_encode(r->bound), vx_err_encode(rms), flags);
}

/* One node whose children are nodes: kids are the children (packed planes already set) and cr
 * their fit results, both in slot order (mask). Merges the moments, fits and packs the plane, and
 * bounds the max error through the children's planes over their sample boxes (lod.c). */
VX_HD void vx_fit_over_nodes(vx_node *nd, const vx_node *kids, const vx_fit_root *cr,
                             uint32_t mask, double size, vx_fit_root *r) {
  const double half = 0.5 * size;
  vx_moments *out = &r->m;
  vx_plane P;
  double rms, emax = 0.0;
  uint32_t flags, s, k;
  int i, c;
  vx_fit_begin(r, size);
  for (s = 0, k = 0; s < 8; s++) {
    if (!(mask >> s & 1u)) continue;
    double off[3];
    off[0] = (s & 1) * half;
    off[1] = (s >> 1 & 1) * half;
    off[2] = (s >> 2 & 1) * half;
    vx_mom_merge(out, &cr[k].m, off);
    for (i = 0; i < 3; i++) {
      if (cr[k].lo[i] + off[i] < r->lo[i]) r->lo[i] = cr[k].lo[i] + off[i];
      if (cr[k].hi[i] + off[i] > r->hi[i]) r->hi[i] = cr[k].hi[i] + off[i];
    }
    k++;
  }
  flags = vx_pack_plane(out, size, nd, &P, &rms);
  double drawn = 0.0; /* drawn-plane bound (node.h); negative: none */
  for (s = 0, k = 0; s < 8; s++) {
    if (!(mask >> s & 1u)) continue;
    vx_plane Pc;
    vx_plane_decode(&kids[k], half, &Pc);
    double off[3];
    off[0] = (s & 1) * half;
    off[1] = (s >> 1 & 1) * half;
    off[2] = (s >> 2 & 1) * half;
    double worst = 0.0; /* over the corners of the child's sample box (child frame) */
    double wbox = 0.0;  /* over the corners of the child's whole box */
    for (c = 0; c < 8; c++) {
      double lx = (c & 1) ? cr[k].hi[0] : cr[k].lo[0], ly = (c >> 1 & 1) ? cr[k].hi[1] : cr[k].lo[1],
             lz = (c >> 2 & 1) ? cr[k].hi[2] : cr[k].lo[2];
      double diff = fabs(vx_plane_at(&P, off[0] + lx, off[1] + ly, off[2] + lz) -
                         vx_plane_at(&Pc, lx, ly, lz));
      if (diff > worst) worst = diff;
      double bx = (c & 1) * half, by = (c >> 1 & 1) * half, bz = (c >> 2 & 1) * half;
      diff = fabs(vx_plane_at(&P, off[0] + bx, off[1] + by, off[2] + bz) - vx_plane_at(&Pc, bx, by, bz));
      if (diff > wbox) wbox = diff;
    }
    double e = cr[k].bound + worst;
    if (e > emax) emax = e;
    uint32_t kid_code = vx_node_bound_code(kids[k].info);
    if (!(vx_node_flags(kids[k].info) & VX_NODE_PLANE_OK) || kid_code == 0u) drawn = -1.0;
    else if (drawn >= 0.0 && wbox + (double)vx_bound_decode(kid_code) > drawn)
      drawn = wbox + (double)vx_bound_decode(kid_code);
    k++;
  }
  r->bound = vx_fit_pad(emax, size);
  flags |= (drawn < 0.0 ? 0u : vx_bound_encode(vx_fit_pad(drawn, size))) << 2;
  nd->info = vx_node_info(mask, vx_err_encode(r->bound), vx_err_encode(rms), flags);
}

#endif
