/* SPDX-License-Identifier: Apache-2.0 */
/* hausdorff.h - how far apart two triangle meshes are: the exact distance from a point to the
 * nearest triangle of a mesh (a uniform grid of triangle lists finds the candidates), and the
 * two-sided Hausdorff distance estimated from points sampled on both meshes.
 *
 * For the mesh benchmark (bench/mesh_bench.cpp), not the voxlod binary. Distances are computed
 * in double precision with the Voronoi-region closest-point test (Ericson, "Real-Time Collision
 * Detection", 5.1.5), so each sampled point's distance is exact; the maximum over the samples is
 * a lower bound of the Hausdorff distance that tightens as samples are added (every vertex is a
 * sample, plus uniform random points by area).
 */
#ifndef VOXLOD_TOOLS_HAUSDORFF_H
#define VOXLOD_TOOLS_HAUSDORFF_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vx_hd_mesh {
  const float *pos;     /* vertex xyz */
  uint64_t vertex_count;
  const uint32_t *tri;  /* index triples; NULL: pos is a soup, 3 vertices per triangle */
  uint64_t tri_count;
} vx_hd_mesh;

/* Nearest-triangle queries against one mesh, within the box [lo, hi] (which must hold every
 * point that will be queried and the mesh). */
typedef struct vx_hd_grid vx_hd_grid;
vx_hd_grid *vx_hd_grid_build(const vx_hd_mesh *m, const double lo[3], const double hi[3]);
double vx_hd_grid_dist(const vx_hd_grid *g, const double p[3]);
void vx_hd_grid_free(vx_hd_grid *g);

/* The squared distance from p to triangle (a, b, c), exact in double. */
double vx_hd_point_tri_dist2(const double p[3], const double a[3], const double b[3],
                             const double c[3]);

typedef struct vx_hd_result {
  double max;            /* over every sample (vertices and random points), world units */
  double mean, p99, p999; /* over the random points (uniform by area), world units */
  uint64_t samples;
  double at[3];          /* the sample farthest from the other mesh */
  double max_ab, max_ba; /* vx_hd_two_sided: a's samples to b, b's to a */
} vx_hd_result;

/* Distances from points of a (its vertices and `random` points uniform by area, from `seed`) to
 * the mesh behind g, on `threads` threads. */
int vx_hd_one_sided(const vx_hd_mesh *a, const vx_hd_grid *g, uint64_t random, uint64_t seed,
                    int threads, vx_hd_result *r);

/* Both ways: max of the two one-sided maxima (and the larger mean, p99 and p999). lo/hi: a box holding
 * both meshes. 0 on out of memory. */
int vx_hd_two_sided(const vx_hd_mesh *a, const vx_hd_mesh *b, const double lo[3],
                    const double hi[3], uint64_t random, int threads, vx_hd_result *r);

/* The bounding box of m. */
void vx_hd_bbox(const vx_hd_mesh *m, double lo[3], double hi[3]);

#ifdef __cplusplus
}
#endif

#endif
