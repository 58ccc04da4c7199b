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

#include <stdint.h>
#include "svo/mesh.h"
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
  double *tri;         /* 9 doubles per triangle, in tree (leaf) order, in the tree's frame */
  uint64_t tri_count;
} vx_wind_tree;

/* Builds the hierarchy over every triangle of `m`, mapped into the grid of `xf` (vx_grid_tri),
 * or in world coordinates when xf is NULL. Queries then take points in the same frame. */
vx_status vx_wind_build(const vx_mesh *m, const vx_transform *xf, vx_wind_tree *t, vx_error *err);
void vx_wind_free(vx_wind_tree *t); /* NULL and zeroed trees are fine */

/* The winding number at p (hierarchical; within VX_WIND_TOL of the exact sum, see winding.c). */
double vx_wind_at(const vx_wind_tree *t, const double p[3]);
/* The same with another acceptance ratio: beta = 1 is about 3 times faster, within 0.15. */
double vx_wind_at_beta(const vx_wind_tree *t, const double p[3], double beta);

/* Signed solid angle / 4pi of triangle (a, b, c) seen from p (Van Oosterom & Strackee 1983);
 * positive when p lies behind the triangle's counter-clockwise front. 0 when p is on it. */
double vx_wind_triangle(const double *a, const double *b, const double *c, const double p[3]);

#endif
