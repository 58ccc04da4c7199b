/* SPDX-License-Identifier: Apache-2.0 */
/* trace_walk.h - the octree walk of one ray (part of trace.h; include that).
 *
 * Algorithm (vx_trace_ray)
 * 1. The ray, in grid space, is clipped to the root box [0, 2^D]^3 (slab test). It is then
 *    mirrored into the positive octant, as in Laine & Karras, "Efficient Sparse Voxel Octrees"
 *    (ESVO, 2010): every axis with a negative direction is flipped (o -> 2^D - o, d -> -d) and
 *    remembered in a 3-bit mask, so a cell's slot in the real tree is its slot in the mirrored
 *    tree xor that mask, and front-to-back order is always "low half first".
 * 2. Traversal is the parametric octree walk of Revelles, Urena & Lastra, "An efficient
 *    parametric algorithm for octree traversal" (2000), in ESVO's PUSH / ADVANCE / POP form: cell
 *    boundaries are integer grid coordinates (exact in float up to 2^24), the entry/exit t of a
 *    cell is a max / min of plane * (1/d) - o * (1/d) per axis (one FMA per plane on the GPU),
 *    the first child is chosen by comparing the entry t with the node's mid-plane t per axis, and
 *    ADVANCE steps over every axis whose exit plane is the cell's exit; when that step leaves the
 *    parent, POP goes straight to the ancestor named by the highest position bit the step changes
 *    (ESVO), whose walk resumes at the cell holding the new position. The stack holds (first
 *    child, mask) per level: at most VX_MAX_DEPTH entries, two words each; slots and origins
 *    follow from the position.
 * 3. A node at level l is final (not descended) when l reaches s->max_level or the last loaded
 *    level, when it is a pruned leaf (mask 0), or, with auto LOD, when its size 2^(D-l) is below
 *    t_entry * s->pixel_angle (ESVO's pixel-cone rule). A final cell is intersected by
 *    vx_trace_cell (trace_cell.h); a node that culling excludes is stepped over (trace_cull.h).
 *    A hit cell whose colour has alpha 0 (a hole) is passed as a cell without a hit.
 * 4. The walk only decides which cell is hit; that cell's root refinement and normal are
 *    computed once after the loop, where the GPU rejoins the warp's lanes (VX_WARP_JOIN),
 *    instead of a few lanes at a time inside it; the hit keeps the cell's index and level, for
 *    its colour. */
#ifndef VOXLOD_MARCHER_TRACE_WALK_H
#define VOXLOD_MARCHER_TRACE_WALK_H

#ifndef VOXLOD_MARCHER_TRACE_H
#error "marcher/trace_walk.h is a part of marcher/trace.h: include that"
#endif

/* Warp convergence on the GPU (nothing on the CPU): VX_WARP_LANES() names the lanes that are
 * here together, VX_WARP_JOIN(m) waits until all of them have arrived. */
#if defined(__CUDA_ARCH__)
#define VX_WARP_LANES() __activemask()
#define VX_WARP_JOIN(m) __syncwarp(m)
#else
#define VX_WARP_LANES() 0u
#define VX_WARP_JOIN(m) ((void)(m))
#endif

/* Node and voxel loads: svo/fetch.h (vx_fetch_node, vx_fetch_voxel). */
#include "svo/fetch.h"

/* The slab t's of the mirrored cell at pos with edge S: entry and exit per axis, and the cell's
 * entry tc0 (not before 0) and exit tc1. */
VX_HD void vx_cell_slabs(const uint32_t pos[3], uint32_t S, const float inv[3], const float ob[3],
                         float tx0[3], float tx1[3], float *tc0, float *tc1) {
  float t0 = 0.0f, t1 = INFINITY;
  VX_UNROLL
  for (int i = 0; i < 3; i++) {
    tx0[i] = (float)pos[i] * inv[i] - ob[i];
    tx1[i] = (float)(pos[i] + S) * inv[i] - ob[i];
    t0 = vx_tr_max(t0, tx0[i]);
    t1 = vx_tr_min(t1, tx1[i]);
  }
  *tc0 = t0;
  *tc1 = t1;
}

/* Index of the highest set bit of x (x != 0). */
VX_HD uint32_t vx_highest_bit(uint32_t x) {
#if defined(__CUDA_ARCH__)
  return 31u - (uint32_t)__clz(x);
#elif defined(__GNUC__)
  return 31u - (uint32_t)__builtin_clz(x);
#else
  uint32_t b = 0;
  while (x >>= 1) b++;
  return b;
#endif
}

/* Does a cell that the walk of vx_trace_ray would draw (a final cell) hold the ray's points just
 * before t (after = 0) or just after t (after = 1)? A descent from the root along that point with
 * the walk's slab t's and final-cell rules (lmax: the deepest level drawn). Used only to settle
 * the crack rule after culling. */
VX_HD int vx_final_cell_at(const vx_trace_scene *s, const float inv[3], const float ob[3],
                           uint32_t mirror, int lmax, float t, int after, uint32_t *visits) {
  const uint32_t D = s->depth;
  uint32_t S = 1u << D, pos[3] = {0u, 0u, 0u};
  vx_node node = vx_fetch_node(&s->nodes[0]);
  (*visits)++;
  for (uint32_t cl = 1; cl <= D; cl++) {
    uint32_t mask = vx_node_mask(node.info), idx = 0;
    S >>= 1;
    float tc0 = 0.0f;
    VX_UNROLL
    for (int i = 0; i < 3; i++) {
      float tm = (float)(pos[i] + S) * inv[i] - ob[i];
      uint32_t bit = (after ? tm <= t : tm < t) ? 1u : 0u;
      idx |= bit << i;
      pos[i] += bit * S;
      tc0 = vx_tr_max(tc0, (float)pos[i] * inv[i] - ob[i]);
    }
    uint32_t slot = idx ^ mirror;
    if (!(mask >> slot & 1u)) return 0;
    if (cl == D) return 1; /* a voxel */
    node = vx_fetch_node(&s->nodes[vx_child_index(node.child, mask, slot)]);
    (*visits)++;
    if (vx_node_mask(node.info) == 0 || (int)cl >= lmax ||
        (s->auto_lod && (float)S < tc0 * s->pixel_angle))
      return 1;
  }
  return 0;
}

/* vx_trace_ray_cs (declared in trace.h): steps 1-4 at the top of this file. */
VX_HD int vx_trace_ray_cs(const vx_trace_scene *s, const float o[3], const float d_in[3],
                          vx_trace_hit *h, vx_crack_state *cs_io) {
  const uint32_t D = s->depth;
  const uint32_t R = 1u << D;
  const float Rf = (float)R;
  h->hit = 0;
  h->t = INFINITY;
  h->n[0] = h->n[1] = h->n[2] = 0.0f;
  h->visits = 0;
  h->cell = 0;
  h->level = 0;

  /* mirror into the positive octant; d: the direction with components under 1e-12 raised to
   * +-1e-12, the ray the slab t's below describe */
  uint32_t mirror = 0;
  float d[3], inv[3], ob[3]; /* a plane P of the mirrored grid is crossed at t = P * inv - ob */
  VX_UNROLL
  for (int i = 0; i < 3; i++) {
    float di = d_in[i], oi = o[i];
    if (di < 0.0f) {
      mirror |= 1u << i;
      di = -di;
      oi = Rf - oi;
    }
    if (di < 1e-12f) di = 1e-12f;
    d[i] = (mirror >> i & 1u) ? -di : di;
    inv[i] = 1.0f / di;
    ob[i] = oi * inv[i];
  }

  /* root box */
  float tx0[3], tx1[3];
  VX_UNROLL
  for (int i = 0; i < 3; i++) {
    tx0[i] = -ob[i];
    tx1[i] = Rf * inv[i] - ob[i];
  }
  float t0 = vx_tr_max(vx_tr_max(vx_tr_max(tx0[0], tx0[1]), tx0[2]), 0.0f);
  float t1 = vx_tr_min(vx_tr_min(tx1[0], tx1[1]), tx1[2]);
  if (!(t0 <= t1)) return 0;

  /* last level to descend to */
  int lmax = s->max_level;
  if (lmax > (int)s->levels_loaded - 1) lmax = (int)s->levels_loaded - 1;
  if (lmax > (int)D) lmax = (int)D;
  if (lmax == (int)D && !s->voxels) lmax = (int)D - 1;

  vx_node node = vx_fetch_node(&s->nodes[0]);
  h->visits++;
  {
    uint32_t mask = vx_node_mask(node.info);
    if (mask == 0 || lmax <= 0 || (s->auto_lod && Rf < t0 * s->pixel_angle)) {
      float cmin[3] = {0.0f, 0.0f, 0.0f};
      float rtx0[3];
      VX_UNROLL
      for (int i = 0; i < 3; i++) rtx0[i] = tx0[i];
      float v0, v1;
      const int crack = VX_CRACK_ARMED(*cs_io, t0);
      h->hit = vx_trace_cell(s, o, d, 0, cmin, Rf, t0, t1, rtx0, &node, 0, crack, 1, &v1, &v0, h);
      if (h->hit && s->holes && vx_tr_is_hole(s, 0, 0)) h->hit = 0; /* the only cell: a hole */
      h->cell = 0;
      h->level = 0;
      if (!h->hit) {
        h->t = INFINITY;
        cs_io->t1 = t1;
        cs_io->v1 = v1;
      }
      return h->hit;
    }
  }
  /* what a culled node could have drawn below it: voxels (full detail, auto LOD), planes (a
   * cut, auto LOD, pruned leaves) */
  const int voxels_drawn = lmax == (int)D;
  const int planes_drawn = lmax < (int)D || s->auto_lod || s->pruned;

  /* State: the node at level l whose children we walk (child, mask), the current child's
   * mirrored slot idx, origin pos (mirrored grid units) and size S = 2^(D-l-1). The stack holds
   * the (child, mask) of the nodes above; a popped cell's slot and origin follow from pos. */
  uint32_t stk_child[VX_MAX_DEPTH], stk_mask[VX_MAX_DEPTH];
  uint32_t child = node.child, mask = vx_node_mask(node.info);
  uint32_t l = 0;
  uint32_t S = R >> 1;
  uint32_t pos[3], idx = 0;
  VX_UNROLL
  for (int i = 0; i < 3; i++) {
    float tm = (float)S * inv[i] - ob[i];
    uint32_t bit = tm <= t0 ? 1u : 0u;
    idx |= bit << i;
    pos[i] = bit * S;
  }

  vx_crack_state cs = *cs_io; /* nothing before the first cell, or the last tile's exit */
  int hit = 0;                            /* the cell being visited is hit */
  const uint32_t lanes = VX_WARP_LANES();
  for (uint32_t iter = 0; iter < (1u << 26); iter++) {
    float Sf = (float)S, tc0, tc1;
    vx_cell_slabs(pos, S, inv, ob, tx0, tx1, &tc0, &tc1);
    uint32_t slot = idx ^ mirror;
    if ((mask >> slot & 1u) && tc0 <= tc1) {
      uint32_t ci = vx_child_index(child, mask, slot);
      uint32_t cl = l + 1; /* the cell's level */
      int final_cell = 1, culled = 0;
      if (cl < D) {
        node = vx_fetch_node(&s->nodes[ci]); /* one 16-byte load */
        h->visits++;
        uint32_t cmask = vx_node_mask(node.info);
        final_cell = cmask == 0 || (int)cl >= lmax || (s->auto_lod && Sf < tc0 * s->pixel_angle);
        if (!final_cell && s->cull) {
          /* Plane-bound culling: nothing drawn below has a zero on this segment, so step over
           * the node. Kept when the crack rule could fire at its entry (a negative node right
           * after a final cell left positive). With auto LOD a node below is drawn as a plane
           * when its size < t * pixel_angle, and t <= tc1 below this node: no planes while
           * tc1 * pixel_angle <= 2 in a tree without pruned leaves. */
          int planes = planes_drawn && !(s->auto_lod && !s->pruned && voxels_drawn &&
                                         tc1 * s->pixel_angle <= 2.0f);
          int neg = 0;
          if (vx_node_excludes_zero(&node, d, tx0, tx1, Sf, tc0, tc1, s->cull_eps, voxels_drawn,
                                    planes, &neg) &&
              !(neg && VX_CRACK_ARMED(cs, tc0))) {
            culled = 1;
            /* the crack state its cells would leave: the field's sign up to the node's exit */
            cs.t1 = tc1;
            cs.v1 = neg ? -1.0f : INFINITY;
          }
        }
        if (!final_cell && !culled) {
          // PUSH: descend into the cell; its first child is the one holding the entry point.
          stk_child[l] = child;
          stk_mask[l] = mask;
          child = node.child;
          mask = cmask;
          l = cl;
          S >>= 1;
          idx = 0;
          VX_UNROLL
          for (int i = 0; i < 3; i++) {
            float tm = (float)(pos[i] + S) * inv[i] - ob[i];
            uint32_t bit = tm <= tc0 ? 1u : 0u;
            idx |= bit << i;
            pos[i] += bit * S;
          }
          continue;
        }
      }
      if (!culled) {
        /* a final cell: plane, box or voxel */
        float cmin[3];
        VX_UNROLL
        for (int i = 0; i < 3; i++)
          cmin[i] = (mirror >> i & 1u) ? Rf - (float)pos[i] - Sf : (float)pos[i];
        vx_voxel vox = {{0}};
        if (cl == D) {
          vox = vx_fetch_voxel(&s->voxels[ci]); /* one 8-byte load */
          h->visits++;
        }
        /* Crack filling: two adjacent final cells approximated by different planes (LOD cuts,
         * pruned leaves) need not meet on their common face. A ray that leaves one cell outside
         * (field > 0) and enters the adjacent one inside (< 0) passed through such a crack: it
         * hits the entry face. Finest voxels share corner values, so between two voxels this
         * fires only where the thin-feature rule re-signed one of them (voxelizer). */
        int crack = VX_CRACK_ARMED(cs, tc0);
        /* After a culled node that is positive to its exit, whether a final cell of it ended
         * within the tolerance before this one (the plain walk's crack state) is unknown; it
         * only matters when this cell starts negative, rare (a sign discontinuity), and then
         * descents to the ends of that window tell (the cells there are positive: the node's
         * bound). Not seen: a final cell lying wholly inside the window, between the two. */
        int unsure = crack && cs.v1 == INFINITY;
        float v0 = 0.0f, v1 = 0.0f;
        int hc = vx_trace_cell(s, o, d, cl, cmin, Sf, tc0, tc1, tx0, &node, &vox, crack && !unsure,
                               0, &v1, &v0, h);
        if (unsure) {
          crack = v0 < 0.0f &&
                  (vx_final_cell_at(s, inv, ob, mirror, lmax, tc0, 0, &h->visits) ||
                   vx_final_cell_at(s, inv, ob, mirror, lmax, tc0 - 1e-5f * (1.0f + tc0), 1,
                                    &h->visits));
          hc |= crack; /* the crack rule hits at the entry */
        }
        /* A hole (alpha 0) is passed as a cell without a hit: its exit value still sets the
         * crack state, as any final cell's. Read only for a hit cell, only in trees with holes. */
        if (hc && !(s->holes && vx_tr_is_hole(s, cl, ci))) {
          hit = 1;
          cs.hit_crack = crack;
          break;
        }
        cs.t1 = tc1;
        cs.v1 = v1;
      }
    }
    // ADVANCE: step over the cell's exit planes, within the parent when they are inside it.
    float te = vx_tr_min(vx_tr_min(tx1[0], tx1[1]), tx1[2]);
    uint32_t step = (tx1[0] <= te ? 1u : 0u) | (tx1[1] <= te ? 2u : 0u) | (tx1[2] <= te ? 4u : 0u);
    if (!(idx & step)) {
      idx |= step;
      VX_UNROLL
      for (int i = 0; i < 3; i++) pos[i] += (step >> i & 1u) * S;
      continue;
    }
    // POP (ESVO): the highest bit that the step changes in pos names the level of the first
    // ancestor whose cell the ray stays in; its walk resumes at the cell holding the new pos
    // (the chain of one-level pops reaches the same cell: a parent exits through the same planes).
    uint32_t diff = 0;
    VX_UNROLL
    for (int i = 0; i < 3; i++) {
      uint32_t np = pos[i] + (step >> i & 1u) * S;
      diff |= pos[i] ^ np;
      pos[i] = np;
    }
    uint32_t hb = vx_highest_bit(diff); /* the new cell's size is 2^hb */
    if (hb >= D) break;                  /* left the root */
    l = D - 1u - hb;
    S = 1u << hb;
    child = stk_child[l];
    mask = stk_mask[l];
    idx = 0;
    VX_UNROLL
    for (int i = 0; i < 3; i++) {
      pos[i] &= ~(S - 1u);
      idx |= (pos[i] >> hb & 1u) << i;
    }
  }
  /* The lanes that walked together leave the loop together: the compiler does not reconverge
   * them at its exit by itself (measured: the refinement below ran with 4 of 32 lanes). */
  VX_WARP_JOIN(lanes);
  if (!hit) {
    *cs_io = cs;
    return 0;
  }

  /* The hit cell, once more with the root refinement and the normal: the loop's state still
   * describes it (the break left it as it was), and every lane of a warp that hits runs this
   * together after the loop instead of alone inside it. Its node or voxel is read again (a cache
   * hit, not counted in visits) rather than kept in registers through the loop. */
  {
    uint32_t ci = vx_child_index(child, mask, idx ^ mirror);
    vx_voxel vox = {{0}};
    if (l + 1 < D) node = vx_fetch_node(&s->nodes[ci]);
    else vox = vx_fetch_voxel(&s->voxels[ci]);
    float Sf = (float)S, tc0, tc1, cmin[3];
    vx_cell_slabs(pos, S, inv, ob, tx0, tx1, &tc0, &tc1);
    VX_UNROLL
    for (int i = 0; i < 3; i++)
      cmin[i] = (mirror >> i & 1u) ? Rf - (float)pos[i] - Sf : (float)pos[i];
    float v0, v1;
    h->hit = vx_trace_cell(s, o, d, l + 1, cmin, Sf, tc0, tc1, tx0, &node, &vox, cs.hit_crack, 1,
                           &v1, &v0, h);
    h->cell = ci; /* its colour is read once, by the shading (trace_shade.h) */
    h->level = l + 1;
    if (!h->hit) h->t = INFINITY; /* cannot happen: the same branches as in the loop */
  }
  return h->hit;
}

VX_HD int vx_trace_ray(const vx_trace_scene *s, const float o[3], const float d_in[3],
                       vx_trace_hit *h) {
  vx_crack_state cs = {-1.0f, 0.0f, 0}; /* nothing before the first cell */
  return vx_trace_ray_cs(s, o, d_in, h, &cs);
}

#endif
