/* SPDX-License-Identifier: Apache-2.0 */
/* trace_cell.h - where a ray meets the surface inside one final cell of the walk (part of
 * trace.h; include that).
 *
 * Algorithm. A final cell (a node the walk does not descend into, or a voxel) is drawn as:
 * - a plane: a node with a usable plane (VX_NODE_PLANE_OK) is drawn as its plane clipped to the
 *   node's box; n.(u - 1/2) + d is linear in t, so the crossing inside [t_entry, t_exit] is one
 *   division, and no crossing means the ray goes on to the next cell;
 * - a box: a node without a usable plane, and every cell in blocks mode, is hit at its entry
 *   face, so nothing vanishes;
 * - a voxel: the first zero of its trilinear field along the ray (trace_root.h). Before the root
 *   is isolated, the cubic's Bernstein coefficients on the segment reject the voxels it has no
 *   zero in.
 * The crack rule (trace_walk.h) makes a cell that the ray enters negative right after leaving
 * the previous one positive a hit at its entry; the cell reports the field where the ray enters
 * and leaves it for that rule. */
#ifndef VOXLOD_MARCHER_TRACE_CELL_H
#define VOXLOD_MARCHER_TRACE_CELL_H

#ifndef VOXLOD_MARCHER_TRACE_H
#error "marcher/trace_cell.h is a part of marcher/trace.h: include that"
#endif

/* Box face normal at the entry of a cell: the axis whose entry plane is the last one crossed.
 * tx0: entry t per axis; d: real ray direction. Inside the box at t = 0: facing the ray. */
VX_HD void vx_box_entry_normal(const float tx0[3], float tc0, const float d[3], float n[3]) {
  /* selects, not indexing: a run-time index would put tx0, d and n in GPU local memory */
  float t01 = vx_tr_max(tx0[0], tx0[1]);
  int ax1 = tx0[1] > tx0[0], ax2 = tx0[2] > t01;
  float tmax = ax2 ? tx0[2] : t01;
  if (!(tmax >= tc0)) { /* started inside: face the viewer */
    n[0] = -d[0];
    n[1] = -d[1];
    n[2] = -d[2];
    return;
  }
  int axis = ax2 ? 2 : ax1;
  n[0] = axis == 0 ? (d[0] > 0.0f ? -1.0f : 1.0f) : 0.0f;
  n[1] = axis == 1 ? (d[1] > 0.0f ? -1.0f : 1.0f) : 0.0f;
  n[2] = axis == 2 ? (d[2] > 0.0f ? -1.0f : 1.0f) : 0.0f;
}

/* Intersects a final cell with the ray on [tc0, tc1]. The cell is a voxel (level == depth) or a
 * node. cmin: the cell's real minimum corner (grid units), size: its edge. Returns 1 on a hit.
 * refine 0: only decides whether the cell is hit and sets *exit_val and *entry_val (the field
 * where the ray leaves and enters it, for the crack rule; a box's entry is +1: the rule does not
 * change a box); h is not written. refine 1: also the hit's t and normal in h.
 * The walk calls it with 0 per cell and, for the one cell that is hit, with 1 after its loop,
 * where the warp's lanes have converged (the root refinement is the longest serial chain). The
 * two calls take the same branches, so they agree on the hit. */
VX_HD int vx_trace_cell(const vx_trace_scene *s, const float o[3], const float d[3], uint32_t level,
                        const float cmin[3], float size, float tc0, float tc1, const float tx0[3],
                        const vx_node *node, const vx_voxel *vox, int crack, int refine,
                        float *exit_val, float *entry_val, vx_trace_hit *h) {
  *entry_val = 1.0f;
  if (s->shade == 1 /* VX_SHADE_BLOCKS */ ||
      (level < s->depth && !(vx_node_flags(node->info) & VX_NODE_PLANE_OK))) {
    if (refine) {
      h->t = tc0;
      vx_box_entry_normal(tx0, tc0, d, h->n);
    }
    return 1;
  }
  /* 1/size exactly: size is a power of two, so its reciprocal's exponent is the negated one
   * (bits 0x7f000000 - bits(size)); products by it are the quotients bit for bit. */
  float inv_size;
  {
    uint32_t b;
    memcpy(&b, &size, sizeof b);
    b = 0x7f000000u - b;
    memcpy(&inv_size, &b, sizeof b);
  }
  float a[3];
  VX_UNROLL
  for (int i = 0; i < 3; i++) a[i] = (o[i] + tc0 * d[i] - cmin[i]) * inv_size;
  if (level < s->depth) {
    /* plane n.(u - 1/2) + dd = 0 in node units u = (p - cmin) / size */
    float n[3];
    vx_oct_decode(node->normal, n);
    float g0 = n[0] * (a[0] - 0.5f) + n[1] * (a[1] - 0.5f) + n[2] * (a[2] - 0.5f) + node->d;
    float slope = (n[0] * d[0] + n[1] * d[1] + n[2] * d[2]) * inv_size;
    *exit_val = g0 + slope * (tc1 - tc0);
    *entry_val = g0;
    float sr;
    if (g0 == 0.0f || (crack && g0 < 0.0f)) sr = 0.0f;
    else if (slope == 0.0f) return 0;
    else sr = -g0 / slope;
    if (!(sr >= 0.0f) || tc0 + sr > tc1) return 0;
    if (!refine) return 1;
    h->t = tc0 + sr;
    h->n[0] = n[0];
    h->n[1] = n[1];
    h->n[2] = n[2];
    return 1;
  }
  /* voxel: first zero of the trilinear field along the segment. The corner values are used as
   * stored (q, not q * band / 127): the root, the normalised gradient and the sign of the exit
   * value (all the crack rule reads) do not depend on a positive scale. */
  float c[8];
  VX_UNROLL
  for (int i = 0; i < 8; i++) c[i] = (float)vox->c[i];
  float k[4];
  vx_trilinear_cubic(c, a, d, k); /* size is 1 for voxels: s is in grid units */
  float smax = tc1 - tc0;
  *entry_val = k[0];
  {
    /* Exact early out: on [0, smax] the cubic is a convex combination of its Bernstein
     * coefficients b0..b3 (convex-hull property), so if all four have one sign it has no zero
     * on the segment. Rejects ~60 % of the voxels a ray visits (those it passes without a hit)
     * before the derivative's roots. The corners' own convex hull (all 8 of one sign) never
     * fires: the voxelizer stores only voxels whose corners change sign. b3 = f(smax) is the
     * exit value. A negative segment still hits at its entry when the crack rule says so. */
    float a1 = k[1] * smax, a2 = k[2] * smax * smax, a3 = k[3] * smax * smax * smax;
    float b1 = k[0] + a1 * (1.0f / 3.0f);
    float b2 = b1 + (a1 + a2) * (1.0f / 3.0f);
    float b3 = k[0] + a1 + a2 + a3;
    int pos = k[0] > 0.0f && b1 > 0.0f && b2 > 0.0f && b3 > 0.0f;
    int neg = k[0] < 0.0f && b1 < 0.0f && b2 < 0.0f && b3 < 0.0f;
    if (pos || (neg && !crack)) {
      *exit_val = b3;
      return 0;
    }
  }
  *exit_val = vx_cubic_eval(k, smax);
  float sr = 0.0f, br[4];
  if (!(crack && k[0] < 0.0f)) {
    if (!vx_cubic_first_bracket(k, smax, br)) return 0;
    if (!refine) return 1;
    sr = vx_cubic_refine(k, br);
  }
  if (!refine) return 1;
  float x[3];
  VX_UNROLL
  for (int i = 0; i < 3; i++) x[i] = vx_tr_min(vx_tr_max(a[i] + sr * d[i], 0.0f), 1.0f);
  float g[3];
  vx_trilinear_grad(c, x, g);
  float len = sqrtf(g[0] * g[0] + g[1] * g[1] + g[2] * g[2]);
  if (len > 0.0f) {
    float il = 1.0f / len;
    h->n[0] = g[0] * il;
    h->n[1] = g[1] * il;
    h->n[2] = g[2] * il;
  } else {
    h->n[0] = -d[0];
    h->n[1] = -d[1];
    h->n[2] = -d[2];
  }
  h->t = tc0 + sr;
  return 1;
}

#endif
