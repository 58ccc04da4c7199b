/* SPDX-License-Identifier: Apache-2.0 */
/* lod.h - level of detail: a least-squares plane per node, fitted from additive moments, and
 * pruning of subtrees that their root's plane already approximates.
 *
 * The samples below a node are the corner values of the surface voxels in its subtree (each voxel
 * contributes its 8 corners; a corner shared by k voxels counts k times, which weights the fit by
 * surface area). The fit f(p) ~ a.p + b minimises sum (a.p_i + b - f_i)^2; it needs only the
 * moments sum 1, p, p p^T, f, f p, f^2, which add over children (after a shift of origin), so one
 * bottom-up pass gives every node's plane and its exact RMS error. The max error is bounded
 * bottom-up: err(parent) <= max over children c of (err(c) + max over c's box corners
 * |P_parent - P_child|), exact at level D-1 where the children are voxels.
 */
#ifndef VOXLOD_SVO_LOD_H
#define VOXLOD_SVO_LOD_H

#include "svo/svo.h"
#include "svo/stream.h"

VX_EXTERN_C_BEGIN

/* Moments of samples (p, f); p in a local frame chosen by the owner. */
typedef struct vx_moments {
  double n;
  double s[3];  /* sum p */
  double ss[6]; /* sum p p^T: xx xy xz yy yz zz */
  double f;     /* sum f */
  double fs[3]; /* sum f p */
  double ff;    /* sum f^2 */
} vx_moments;

void vx_moments_add(vx_moments *m, double x, double y, double z, double f);

/* dst += src with src's points shifted by t (src's frame origin sits at t in dst's frame). */
void vx_moments_merge(vx_moments *dst, const vx_moments *src, const double t[3]);

/* Least-squares plane f ~ a.p + b. Returns 1 when well-conditioned, 0 when the samples do not
 * determine a plane (then a is the best gradient found by a regularised solve, possibly 0).
 * *rms receives sqrt(mean squared residual). */
int vx_moments_fit(const vx_moments *m, double a[3], double *b, double *rms);

/* Computes every node's plane, RMS error and max-error bound from the voxels (all levels must be
 * loaded). progress may be NULL. */
vx_status vx_octree_fit_planes(vx_octree *t, vx_progress_fn progress, void *user, vx_error *err);

/* What a subtree's fit hands to its parent: the moments of its samples (frame at the subtree
 * root's min corner, finest voxels), its root's max-error bound and the box of its samples. */
typedef struct vx_fit_root {
  vx_moments m;
  double bound;
  double lo[3], hi[3];
} vx_fit_root;

/* Split fits (the out-of-core build). Every node's values depend only on its subtree and are
 * computed in the node's own frame, so a subtree fitted on its own as a tree whose root is that
 * node gives the bits the whole-tree fit would give.
 * vx_octree_fit_subtree: vx_octree_fit_planes, also returning the root's results (root may be NULL).
 * vx_octree_fit_top: fits levels 0 .. L-1 of a tree of `depth` levels (up to
 * VX_MAX_TILED_DEPTH) whose levels 0 .. L are loaded (L = t->levels_loaded - 1 < depth, child
 * indices set for levels < L); the nodes of level L already carry their planes, and leaves[k] is
 * the vx_fit_root of node k of level L. *root (may be NULL) receives the root's results. */
vx_status vx_octree_fit_subtree(vx_octree *t, vx_fit_root *root, vx_progress_fn progress, void *user,
                               vx_error *err);
vx_status vx_octree_fit_top(vx_octree *t, uint32_t depth, const vx_fit_root *leaves,
                           vx_fit_root *root, vx_error *err);

/* The levels 0 .. S above n fitted subtree roots of level S (1 <= S <= VX_MAX_DEPTH - 1) of a
 * tree of `depth` levels: codes[i] the Morton code of root i in level S's grid (ascending),
 * roots[i] its node (plane and errors set; its child index is kept as it is), fits[i] its
 * vx_fit_root. *out holds levels 0 .. S (out->depth = levels_loaded = S + 1: only the storage;
 * the planes are those of a `depth`-level tree), child indices set above level S, planes fitted
 * (vx_octree_fit_top); *root (may be NULL) receives the root's results. The out-of-core build
 * makes its levels above the blocks with it, the tiled build its top tree above the tiles. */
vx_status vx_octree_top_build(const uint64_t *codes, const vx_node *roots,
                              const vx_fit_root *fits, uint64_t n, uint32_t S, uint32_t depth,
                              float band, vx_octree *out, vx_fit_root *root, vx_error *err);

/* Replaces each subtree whose root plane's max error bound is <= max_error (finest voxels) by that
 * root (flag VX_NODE_PRUNED, mask 0), top-down, and compacts the arrays (colours with them: a
 * pruned leaf keeps its own colour, the mean of the subtree it replaces). max_error <= 0 changes
 * nothing. */
vx_status vx_octree_prune(vx_octree *t, float max_error, vx_error *err);

/* vx_octree_prune's rule applied to a stream (svo/stream.h) level by level, into a new stream *out
 * (split 0: every level appended) that spills to files when `in` had spilled; memory: two bits
 * per record of the widest level and a batch buffer. `in` is only read. */
vx_status vx_stream_prune(vx_stream *in, float max_error, vx_stream *out, vx_error *err);

/* Evaluates a node's packed plane at grid point p (finest voxels) for a node at `level` whose
 * minimum corner is `node_min` (finest voxels): the signed distance in finest voxels. */
float vx_node_plane_eval(const vx_node *n, uint32_t depth, uint32_t level, const double node_min[3],
                         const double p[3]);

VX_EXTERN_C_END

#endif
