/* SPDX-License-Identifier: Apache-2.0 */
/* winding.h - generalized winding number of a triangle soup, exact and hierarchical (winding.c).
 *
 * w(p) = (1/4pi) * sum over triangles of the signed solid angle they subtend at p (Jacobson,
 * Kavan & Sorkine-Hornung 2013). 1 inside and 0 outside a closed, outward-wound mesh; the
 * voxelizer calls p inside when |w(p)| > 1/2. vx_wind_at evaluates it with the far-field
 * expansion of Barill et al. 2018 over a bounding-volume hierarchy built once per mesh; see
 * winding.c for the accuracy bound and the behaviour on holes, duplicates and overlaps.
 *
 * The tree is immutable after vx_wind_build: any number of threads may query it at once. Each
 * query visits the nodes in one fixed order, so a point's value does not depend on threads.
 */
#ifndef VOXLOD_VOXELIZER_WINDING_H
#define VOXLOD_VOXELIZER_WINDING_H

#include <math.h>
#include <stdint.h>
#include "svo/hostdev.h"
#include "svo/soup.h"
#include "svo/svo.h"

/* Far-field acceptance: a node is summed by its expansion when the query is farther than
 * VX_WIND_BETA times the radius of the node's bounding ball from the ball's centre. */
#define VX_WIND_BETA 3.0
/* Documented accuracy of vx_wind_at against the exact sum (tests/test_voxelizer_sign.c). */
#define VX_WIND_TOL 2e-2

typedef struct vx_wind_node {
  float c[3];      /* area-weighted centroid of its triangles */
  float r;         /* radius of a ball around c holding all of its triangles */
  float n[3];      /* sum of area * unit normal (half the sum of the edge cross products) */
  float m[9];      /* second-order term: sum of area * n_i * (centroid_t - c)_j at [i*3 + j] */
  uint32_t first;  /* leaf: first triangle in tree order; inner: index of the left child */
  uint32_t count;  /* leaf: number of triangles (>= 1); inner: 0 (right child = left + 1) */
} vx_wind_node;

typedef struct vx_wind_tree {
  vx_wind_node *nodes; /* nodes[0] is the root */
  uint64_t node_count;
  float *tri;          /* 9 floats per triangle, in tree (leaf) order: the mesh's own coordinates,
                          mapped into the tree's frame as they are read (vx_wind_leaf_tri) */
  const double *grid;  /* or NULL: the same triangles mapped, 9 doubles each (the GPU's copy, where
                          memory is plentiful and a double division is slow) */
  uint64_t tri_count;
  double origin[3];    /* the tree's frame: x -> (x - origin) / scale, vx_grid_tri's map (0 and 1 */
  double scale;        /* for a tree built without a transform) */
  uint32_t *order;     /* tree position -> the triangle's index in the mesh (vx_free'd and NULL
                          once a caller no longer needs it; queries never read it) */
} vx_wind_tree;

/* Builds the hierarchy over every triangle of `m`, mapped into the grid of `xf` (vx_grid_tri),
 * or in world coordinates when xf is NULL, on `threads` threads (<= 0: all cores): the tree is
 * the same node for node whatever their number. Queries then take points in the same frame. */
vx_status vx_wind_build(const vx_soup *m, const vx_transform *xf, int threads, vx_wind_tree *t,
                        vx_error *err);
void vx_wind_free(vx_wind_tree *t); /* NULL and zeroed trees are fine */

/* The winding number at p (hierarchical; within VX_WIND_TOL of the exact sum, see winding.c). */
double vx_wind_at(const vx_wind_tree *t, const double p[3]);
/* The same with another acceptance ratio: beta = 1 is about 3 times faster, within 0.15. */
double vx_wind_at_beta(const vx_wind_tree *t, const double p[3], double beta);

/* Signed solid angle / 4pi of triangle (a, b, c) seen from p (Van Oosterom & Strackee 1983);
 * positive when p lies behind the triangle's counter-clockwise front. 0 when p is on it. */
double vx_wind_triangle(const double *a, const double *b, const double *c, const double p[3]);

/* ---- evaluation, host and device (the GPU build runs these same functions) ------------------ */

#define VX_WIND_PI 3.14159265358979323846
#define VX_WIND_STACK 192 /* tree depth is bounded by the 63-bit Morton split (winding.c) */

/* vx_wind_triangle's body: Van Oosterom & Strackee's signed solid angle / 4pi. */
VX_HD double vx_wind_solid(const double *a, const double *b, const double *c, const double p[3]) {
  double x[3], y[3], z[3];
  int i;
  for (i = 0; i < 3; i++) {
    x[i] = a[i] - p[i];
    y[i] = b[i] - p[i];
    z[i] = c[i] - p[i];
  }
  double lx = sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2]);
  double ly = sqrt(y[0] * y[0] + y[1] * y[1] + y[2] * y[2]);
  double lz = sqrt(z[0] * z[0] + z[1] * z[1] + z[2] * z[2]);
  double det = x[0] * (y[1] * z[2] - y[2] * z[1]) + x[1] * (y[2] * z[0] - y[0] * z[2]) +
               x[2] * (y[0] * z[1] - y[1] * z[0]);
  /* In the triangle's plane (up to rounding; or degenerate): no solid angle. Without the
   * tolerance a point on the face would get +-1/2 from the rounding of det. */
  if (fabs(det) <= 1e-12 * lx * ly * lz) return 0.0;
  double den = lx * ly * lz + (x[0] * y[0] + x[1] * y[1] + x[2] * y[2]) * lz +
               (y[0] * z[0] + y[1] * z[1] + y[2] * z[2]) * lx +
               (z[0] * x[0] + z[1] * x[1] + z[2] * x[2]) * ly;
  return atan2(det, den) * (0.5 / VX_WIND_PI); /* Omega / (4 pi), Omega = 2 atan2 */
}


/* A triangle of the mesh (9 floats) in the tree's frame: the bits vx_grid_tri gives it. */
VX_HD void vx_wind_frame(const vx_wind_tree *t, const float *p, double g[9]) {
  int v, i;
  for (v = 0; v < 3; v++)
    for (i = 0; i < 3; i++) g[v * 3 + i] = ((double)p[v * 3 + i] - t->origin[i]) / t->scale;
}

/* Tree triangle k (in leaf order) in the tree's frame. The host keeps the mesh's floats, half the
 * bytes of the doubles, and maps them as they are read; the GPU maps them once (t->grid). */
VX_HD void vx_wind_leaf_tri(const vx_wind_tree *t, uint64_t k, double g[9]) {
  int i;
  if (t->grid)
    for (i = 0; i < 9; i++) g[i] = t->grid[k * 9 + i];
  else
    vx_wind_frame(t, t->tri + k * 9, g);
}

/* A node's far-field term at a point: (x, y, z) = its centre minus the point, d2 = their
 * squared length. K(c).N + sum_ij dK_i/dx_j(c) M_ij with K(x) = (x - p)/|x - p|^3. */
VX_HD double vx_wind_far(const vx_wind_node *nd, double x, double y, double z, double d2) {
  const float *m = nd->m;
  double inv = 1.0 / sqrt(d2), inv3 = inv * inv * inv;
  double t1 = x * nd->n[0] + y * nd->n[1] + z * nd->n[2];
  double tr = (double)m[0] + m[4] + m[8];
  double xmx = x * (m[0] * x + m[1] * y + m[2] * z) + y * (m[3] * x + m[4] * y + m[5] * z) +
               z * (m[6] * x + m[7] * y + m[8] * z);
  return (t1 + tr) * inv3 - 3.0 * xmx * inv3 * inv * inv;
}
/* vx_wind_at_beta's body over a node array and the tree-ordered triangles; *exact (not NULL)
 * receives the number of triangles whose solid angle it summed exactly: the query's cost, which
 * the builds charge against the memory limit beyond VX_WIND_EXACT_FREE (internal.h). */
VX_HD double vx_wind_eval_n(const vx_wind_tree *t, const double p[3], double beta,
                            uint64_t *exact) {
  const vx_wind_node *nodes = t->nodes;
  uint32_t stack[VX_WIND_STACK];
  int sp = 0;
  double far = 0.0, near = 0.0;
  uint64_t n = 0;
  const double b2 = beta * beta;
  stack[sp++] = 0;
  while (sp > 0) {
    const vx_wind_node *nd = nodes + stack[--sp];
    double x = (double)nd->c[0] - p[0], y = (double)nd->c[1] - p[1], z = (double)nd->c[2] - p[2];
    double d2 = x * x + y * y + z * z, r = nd->r;
    if (d2 > b2 * r * r) {
      far += vx_wind_far(nd, x, y, z, d2);
    } else if (nd->count) {
      /* LEAF near p: exact solid angles */
      uint32_t k;
      for (k = 0; k < nd->count; k++) {
        double g[9];
        vx_wind_leaf_tri(t, (uint64_t)nd->first + k, g);
        near += vx_wind_solid(g, g + 3, g + 6, p);
      }
      n += nd->count;
    } else if (sp + 2 <= VX_WIND_STACK) {
      /* INNER near p: left child first */
      stack[sp++] = nd->first + 1;
      stack[sp++] = nd->first;
    }
  }
  *exact = n;
  return near + far * (0.25 / VX_WIND_PI);
}

/* vx_wind_eval_n at two points p[0] and p[1] (the count left out) in one walk of the tree: a node
 * is visited once for both while both points descend into it, and each point's terms are summed
 * in its own walk's order, so *w0 and *w1 are bit for bit vx_wind_eval's. Pays where the points
 * are close (the two sides of a face: sign.c's clean test). */
VX_HD void vx_wind_eval2(const vx_wind_tree *t, const double p[2][3], double beta, double *w0,
                         double *w1) {
  const vx_wind_node *nodes = t->nodes;
  uint32_t stack[VX_WIND_STACK];
  uint8_t active[VX_WIND_STACK]; /* bit k: point k's own walk visits the node */
  int sp = 0, k;
  double far[2] = {0.0, 0.0}, near[2] = {0.0, 0.0};
  const double b2 = beta * beta;
  stack[sp] = 0;
  active[sp++] = 3;
  while (sp > 0) {
    --sp;
    const vx_wind_node *nd = nodes + stack[sp];
    const uint32_t on = active[sp];
    uint32_t down = 0;
    for (k = 0; k < 2; k++) {
      if (!(on >> k & 1u)) continue;
      const double *q = p[k];
      double x = (double)nd->c[0] - q[0], y = (double)nd->c[1] - q[1], z = (double)nd->c[2] - q[2];
      double d2 = x * x + y * y + z * z, r = nd->r;
      if (d2 > b2 * r * r) {
        far[k] += vx_wind_far(nd, x, y, z, d2);
      } else if (nd->count) {
        uint32_t i;
        for (i = 0; i < nd->count; i++) {
          double g[9];
          vx_wind_leaf_tri(t, (uint64_t)nd->first + i, g);
          near[k] += vx_wind_solid(g, g + 3, g + 6, q);
        }
      } else {
        down |= 1u << k;
      }
    }
    if (down && sp + 2 <= VX_WIND_STACK) {
      stack[sp] = nd->first + 1;
      active[sp++] = (uint8_t)down;
      stack[sp] = nd->first;
      active[sp++] = (uint8_t)down;
    }
  }
  *w0 = near[0] + far[0] * (0.25 / VX_WIND_PI);
  *w1 = near[1] + far[1] * (0.25 / VX_WIND_PI);
}

/* The same without the count. */
VX_HD double vx_wind_eval(const vx_wind_tree *t, const double p[3], double beta) {
  uint64_t n;
  return vx_wind_eval_n(t, p, beta, &n);
}

#endif
