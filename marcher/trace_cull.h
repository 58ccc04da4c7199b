/* SPDX-License-Identifier: Apache-2.0 */
/* trace_cull.h - plane-bound culling, and the crack state that culling must leave as the plain
 * walk would (part of trace.h; include that).
 *
 * Algorithm. Before the walk descends into a node, the node's packed plane and error bounds (the
 * max error E for voxels, the drawn-plane bound of node.h for the planes a cut or auto LOD
 * draws) are evaluated at the ends of the ray's segment in the node; if they keep every
 * drawable cell below from crossing zero there, the walk steps over the node instead
 * (vx_node_excludes_zero). The image does not change (tests/test_marcher_cull.c): nothing below
 * could have been hit, and the crack rule, which reads the field's sign where the previous final
 * cell ended, is given the state that the node's cells would have left (vx_crack_state): the
 * node's sign up to its exit. The walk keeps a node that the rule could fire at, and settles the
 * rare case where the unknown exit values matter by a descent to the point (trace_walk.h). */
#ifndef VOXLOD_MARCHER_TRACE_CULL_H
#define VOXLOD_MARCHER_TRACE_CULL_H

#ifndef VOXLOD_MARCHER_TRACE_H
#error "marcher/trace_cull.h is a part of marcher/trace.h: include that"
#endif

/* 1/sqrt(x): the hardware approximation on the GPU (relative error ~1e-7); only used where a
 * margin covers it, so CPU and GPU may differ in the last bits. */
VX_HD float vx_rsqrt_approx(float x) {
#if defined(__CUDA_ARCH__)
  return rsqrtf(x);
#else
  return 1.0f / sqrtf(x);
#endif
}

/* Plane-bound culling. A node's packed plane P and its max-error bound E hold |f - P| <= E at
 * every corner sample below it (svo/lod.h), and inside a voxel f - P is the trilinear
 * interpolation of its corner differences (P is affine), so |f - P| <= E in every voxel of the
 * subtree. The planes that a render may draw below it instead (a --lod cut, auto LOD, pruned
 * leaves), each across its whole box, are within the node's drawn-plane bound B of P (node.h).
 * P is affine along the ray, so if P > m + eps at both ends of the ray's segment in the node's
 * box (or < -(m + eps) at both), m = E for voxels, B for planes, the larger when either can be
 * drawn, nothing below has a zero on that segment and the walk steps over the node. eps covers
 * the float evaluation (scene.c).
 * P along the ray: with c the node's centre and tm_i = (tx0_i + tx1_i) / 2 the t at which the ray
 * crosses the centre plane of axis i, o_i - c_i = -tm_i d_i, so
 *   P(t) = n . (o + t d - c) + d_node size = sum_i n_i d_i (t - tm_i) + d_node size,
 * from the slab t's the walk already has (d: the direction those t's describe).
 * Returns 1 for "no zero possible"; *neg is set when P is negative at the entry. */
VX_HD int vx_node_excludes_zero(const vx_node *nd, const float d[3], const float tx0[3],
                                const float tx1[3], float size, float tc0, float tc1, float eps,
                                int voxels, int planes, int *neg) {
  uint32_t code = vx_node_errmax_code(nd->info);
  /* the decoded bounds (node.h: E = 2^((code-1)/10 - 10)), E rounded up generously; code 0 (no
   * samples) and 255 (a bound beyond the code range) never cull, nor does B's code 0 (none) */
  float m = voxels ? exp2f((float)code * 0.1f - 10.1f) * 1.001f : 0.0f;
  if (planes) {
    /* node.h's drawn-plane bound, rounded up, by arithmetic (its table would be a second load) */
    uint32_t b = vx_node_bound_code(nd->info);
    float bm = b == 0u ? INFINITY : (b == 1u ? 0.0f : exp2f((float)b * 0.25f - 6.5f) * 1.001f);
    m = vx_tr_max(m, bm);
  }
  m += eps + 1e-5f * size;
  float n[3];
  vx_oct_unfold(nd->normal, n);
  float il = vx_rsqrt_approx(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
  float w0 = n[0] * il * d[0], w1 = n[1] * il * d[1], w2 = n[2] * il * d[2];
  float g0 = w0 * (tc0 - 0.5f * (tx0[0] + tx1[0])) + w1 * (tc0 - 0.5f * (tx0[1] + tx1[1])) +
             w2 * (tc0 - 0.5f * (tx0[2] + tx1[2])) + nd->d * size;
  float g1 = g0 + (w0 + w1 + w2) * (tc1 - tc0);
  *neg = g0 < 0.0f;
  return code - 1u < 254u && ((g0 > m && g1 > m) || (g0 < -m && g1 < -m));
}

/* The crack rule's state along a ray, held by vx_trace_ray in registers: where the last final
 * cell (or culled node) ended and the field there, which the rule reads at the next cell's entry,
 * and whether the rule made the hit, which the hit cell's refinement after the walk repeats. */
typedef struct vx_crack_state {
  float t1;      /* exit t of the last final cell or culled node; -1 before the first */
  float v1;      /* the field at t1; a culled node leaves -1 (negative to its exit) or +INFINITY
                  * (positive to its exit, its cells' exit values unknown) */
  int hit_crack; /* the hit cell was hit by the crack rule (at its entry) */
} vx_crack_state;

/* Is the crack rule armed for a cell entered at tc0: did the ray leave the field positive, at
 * most a round-off tolerance before tc0? Then a cell that starts negative is hit at its entry.
 * A macro, not a VX_HD function: the walk tests it inside && chains, where nvcc compiles a call
 * to other machine code than the test written out, in every kernel. cs: a vx_crack_state (not
 * a pointer); tc0 is evaluated twice. */
#define VX_CRACK_ARMED(cs, tc0) ((cs).v1 > 0.0f && (tc0) - (cs).t1 <= 1e-5f * (1.0f + (tc0)))

#endif
