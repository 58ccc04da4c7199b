/* SPDX-License-Identifier: Apache-2.0 */
/* sign_eval.h - the sign rules' per-corner decision, host and device.
 *
 * sign.c builds the tables (welded vertices, pseudo-normals, clean flags, the winding tree) and
 * documents both rules; this header holds only what a corner query runs, in the C subset nvcc
 * also accepts (hostdev.h), so the CPU build (field.c) and the GPU build (gpu_build.cu) decide
 * every sign with the same code. On the GPU the table pointers of vx_sign_data point to device
 * copies of the same arrays.
 */
#ifndef VOXLOD_VOXELIZER_SIGN_EVAL_H
#define VOXLOD_VOXELIZER_SIGN_EVAL_H

#include <math.h>
#include <stdint.h>
#include "svo/hostdev.h"
#include "voxelizer/distance.h"
#include "voxelizer/winding.h"

/* What decides a corner's sign, built once for the whole mesh: either the winding-number tree
 * (winding.c; used whenever wind.node_count > 0) or pseudo-normals (Baerentzen & Aanaes 2005).
 * Pseudo-normals are directions only: the same in world and grid coordinates (the grid map is a
 * uniform scale and a shift); the winding tree lives in the grid frame of the surface build. */
typedef struct vx_sign_data {
  vx_wind_tree wind;   /* winding rule: hierarchy over the grid triangles; empty otherwise */
  float *face_n;       /* 3 per triangle: unit face normal (0 for a numerically flat triangle) */
  float *edge_n;       /* 9 per triangle: edge k (vertex k -> k+1): mean of the unit normals of
                          every triangle sharing the welded edge (short when they cancel) */
  uint32_t *vid;       /* 3 per triangle: welded vertex id (exact position match) */
  float *vert_n;       /* 3 per welded vertex: angle-weighted mean of incident unit face normals */
  uint64_t vert_count;
  uint64_t boundary_edges;    /* edges with one incident triangle (holes) */
  uint64_t nonmanifold_edges; /* edges with more than two */
  uint8_t *clean;      /* winding rule: 1 per triangle whose pseudo-normals may decide (sign.c) */
  uint8_t *vclean;     /* winding rule: 1 per welded vertex whose triangles are all clean */
  uint64_t clean_count;
  uint32_t *eid;       /* during the build only: welded edge id of each triangle edge (3 per
                          triangle), for the winding rule's clean test; NULL afterwards */
  uint64_t edge_count;
  uint32_t *ecount;    /* during the build only: corners of each welded edge, then NULL */
  int32_t *eorient;    /* during the build only: each edge's orientation sum (sign.c), then NULL */
  double sec[4];       /* winding rule, seconds: the tables, the tree, the clean flags' passes and
                          the certificate (below) */
  int cert_gpu;        /* the certificate ran on the GPU */
} vx_sign_data;

/* Pseudo-normals decide only beyond this distance (voxels); nearer corners ask the winding number.
 * Near a clean face the shortcut is at its safest (the face's own jump of 1 dominates w there);
 * the margin only keeps (p - q).n far above the rounding of the closest point q (about 1e-12
 * voxel in double). Corners nearer than band/254 voxels quantize to 0 and need no sign at all. */
#define VX_SIGN_FACE_MIN 0.01

/* The pseudo-normal of feature `feat` (distance.h codes) of triangle `tri`. */
VX_HD void vx_sign_normal(const vx_sign_data *s, uint64_t tri, int feat, double n[3]) {
  const float *src;
  int i;
  if (feat >= VX_FEAT_E01)
    src = s->edge_n + tri * 9 + (uint64_t)(feat - VX_FEAT_E01) * 3;
  else if (feat >= VX_FEAT_V0)
    src = s->vert_n + (uint64_t)s->vid[tri * 3 + (uint64_t)(feat - VX_FEAT_V0)] * 3;
  else
    src = s->face_n + tri * 3;
  for (i = 0; i < 3; i++) n[i] = src[i];
  /* A pseudo-normal that cancelled (opposite windings meet) says nothing: use the face's own. */
  if (n[0] * n[0] + n[1] * n[1] + n[2] * n[2] < 1e-6)
    for (i = 0; i < 3; i++) n[i] = s->face_n[tri * 3 + i];
}

/* -1 when p lies inside by the pseudo-normal rule, +1 otherwise; q is the closest point of `tri`
 * to p and feat its feature. */
VX_HD double vx_sign_of(const vx_sign_data *s, uint64_t tri, int feat, const double p[3],
                        const double q[3]) {
  double n[3], d[3];
  int i;
  vx_sign_normal(s, tri, feat, n);
  for (i = 0; i < 3; i++) d[i] = p[i] - q[i];
  return vx_dot3d(d, n) < 0.0 ? -1.0 : 1.0;
}

/* Whether the pseudo-normal decides under the winding rule: 0 when the winding number must (p is
 * within VX_SIGN_FACE_MIN voxels, or the triangles around the feature are not clean), else the
 * feature's clean code (1: the pseudo-normal's side, otherwise the opposite side). The per-corner
 * rule that combines this with vx_sign_of and vx_sign_by_winding is field_eval.h's. */
VX_HD int vx_sign_clean(const vx_sign_data *s, uint64_t tri, int feat, double d) {
  const uint32_t *v = s->vid + tri * 3;
  int clean;
  if (!(d > VX_SIGN_FACE_MIN)) return 0;
  if (feat >= VX_FEAT_E01) { /* both ends clean alike: so are the two triangles on the edge */
    clean = s->vclean[v[feat - VX_FEAT_E01]];
    if (clean != s->vclean[v[(feat - VX_FEAT_E01 + 1) % 3]]) clean = 0;
  } else if (feat >= VX_FEAT_V0) {
    clean = s->vclean[v[feat - VX_FEAT_V0]];
  } else {
    clean = s->clean[tri];
  }
  return clean;
}

/* -1 when |w(p)| > 1/2 (inside by the winding number), else +1; *exact: the triangles summed
 * exactly (vx_wind_eval_n). */
VX_HD double vx_sign_by_winding_n(const vx_sign_data *s, const double p[3], uint64_t *exact) {
  return fabs(vx_wind_eval_n(&s->wind, p, VX_WIND_BETA, exact)) > 0.5 ? -1.0 : 1.0;
}

VX_HD double vx_sign_by_winding(const vx_sign_data *s, const double p[3]) {
  uint64_t n;
  return vx_sign_by_winding_n(s, p, &n);
}

#endif
