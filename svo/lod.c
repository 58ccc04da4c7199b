/* SPDX-License-Identifier: Apache-2.0 */
/* lod.c - per-node least-squares planes from additive moments, a max-error bound, and pruning.
 *
 * Follows the multiresolution scalar-field SVO of R. Marcus ("Level-of-Detail Independent
 * Voxel-Based Surface Approximations", Utrecht 2017): every inner node carries a linear
 * approximation of the signed-distance field below it, so rendering can stop at any depth and
 * subtrees that one plane already approximates can be dropped.
 *
 * Moments. For samples (p_i, f_i), i = 1..N, keep N, S = sum p, Q = sum p p^T, F = sum f,
 * G = sum f p, H = sum f^2. They add over disjoint sample sets, and a shift of origin p -> p + t is
 *   S' = S + N t,  Q' = Q + S t^T + t S^T + N t t^T,  G' = G + F t,  (N, F, H unchanged),
 * so a parent's moments are the sum of its children's shifted by each child's offset.
 *
 * Fit. Minimise E(a, b) = sum (a.p_i + b - f_i)^2. With the means m = S/N, mf = F/N, the centred
 * covariance C = Q/N - m m^T, the cross term c = G/N - mf m and var_f = H/N - mf^2, the normal
 * equations reduce to C a = c, b = mf - a.m (centring first keeps the 3x3 system well scaled:
 * solving the raw 4x4 system with p measured from a far origin squares the condition number).
 * C is symmetric positive semi-definite; we diagonalise it with cyclic Jacobi rotations and solve
 * with its pseudo-inverse: directions whose eigenvalue is below 1e-10 of the largest (or lost in
 * the round-off of Q/N - m m^T) are left at zero, which is the minimum-norm solution, and the fit
 * reports "ill-conditioned" (samples coplanar, collinear or coincident in p).
 * For any affine q(p) = a.p + b the mean squared residual follows from the moments alone:
 *   mean (q - f)^2 = a^T C a - 2 a.c + var_f + (a.m + b - mf)^2,
 * clamped at 0 against round-off. This gives exact RMS errors without touching samples.
 *
 * Packed plane (node.h). The node stores a unit normal n and an offset, and the renderer treats
 * n.(p - centre) + d*size as a signed distance. We take n = a/|a| from the fit, quantize it
 * (octahedral, 16+16 bits), then choose the offset that minimises the RMS for that quantized
 * normal with unit gradient: q(p) = n.p + e, e = mf - n.m. (The zero set equals the LS plane's
 * when |a| = 1, the SDF case; when |a| < 1, e.g. over curved patches, this offset keeps the stored
 * errors as small as the stored normal allows.) d = (e + n.centre) / size is rounded to float.
 * errrms is then the exact RMS of the *packed* plane (decoded n and d) over the samples.
 * The flag VX_NODE_PLANE_OK is set when the fit is well-conditioned and |a| > 0.05 (a smaller
 * gradient means the samples do not look like one side of one surface, e.g. a thin sheet).
 *
 * Max-error bound. At level D-1 it is exact: the max over the children voxels' corners of
 * |q(p) - f|. Higher up, for a sample x in child c's box, |P(x) - f| <= |P(x) - P_c(x)| + |P_c(x) - f|,
 * and P - P_c is affine so its extreme over a box is at a box corner. The box is the bounding box
 * of c's samples (tracked bottom-up with the moments), which can be much smaller than c's cell
 * when the surface only clips a corner of it (there the child's normal is poorly determined and
 * extrapolating it to the whole cell would inflate the bound):
 *   err(node) = max over children c of (err(c) + max over the corners x of c's sample box
 *               of |P(x) - P_c(x)|),
 * with P and P_c the packed planes. err(c) <= err(node), so the bound grows towards the root,
 * and a node whose bound is <= E has no descendant with a larger one. Codes round up (node.h).
 *
 * Pass. One depth-first post-order walk; because each level is stored in Morton order, it visits
 * every level in increasing index order (streaming). Moments live on the recursion stack only:
 * O(depth) memory whatever the tree size. No node positions are needed: every node works in its
 * own frame (origin at its min corner, units of finest voxels). So a subtree can be fitted alone
 * (vx_octree_fit_subtree on a tree rooted at that node) and its root's results handed to a fit of
 * the levels above (vx_octree_fit_top): the out-of-core build fits each block's subtree on the
 * thread that voxelized it, and the values are bit for bit those of the whole-tree pass.
 *
 * Prune. Top-down, level by level: a node reached from the root whose plane is OK and whose
 * decoded bound is <= E becomes a leaf (mask 0, VX_NODE_PRUNED); its subtree is not kept. Kept
 * nodes are compacted in place (a node's new index never exceeds its old one, and each level is
 * read before it is overwritten), then the arrays are shrunk and vx_octree_link() re-links them.
 * Colours (node_color, voxel_color) move with their nodes and voxels: a pruned leaf keeps the
 * colour it had, the coverage-weighted colour of the subtree it replaces.
 */
#include "svo/lod.h"
#include "svo/lod_eval.h"

#include <stdlib.h>
#include <string.h>

/* ---- moments (public wrappers of lod_eval.h) ------------------------------------------------- */

void vx_moments_add(vx_moments *m, double x, double y, double z, double f) {
  vx_mom_add(m, x, y, z, f);
}

void vx_moments_merge(vx_moments *dst, const vx_moments *src, const double t[3]) {
  vx_mom_merge(dst, src, t);
}

int vx_moments_fit(const vx_moments *m, double a[3], double *b, double *rms) {
  return vx_mom_fit(m, a, b, rms);
}

float vx_node_plane_eval(const vx_node *n, uint32_t depth, uint32_t level, const double node_min[3],
                         const double p[3]) {
  double size = ldexp(1.0, (int)depth - (int)level);
  vx_plane P;
  vx_plane_decode(n, size, &P);
  return (float)vx_plane_at(&P, p[0] - node_min[0], p[1] - node_min[1], p[2] - node_min[2]);
}

/* ---- fit pass ------------------------------------------------------------------------------------ */

typedef struct fit_ctx {
  vx_octree *t;
  uint32_t D;
  const vx_fit_root *leaves; /* vx_octree_fit_top: fits of the nodes at leaf_level, given */
  uint32_t leaf_level;
  uint64_t done, total, next_report, report_step; /* level D-1 nodes, for progress */
  vx_progress_fn progress;
  void *user;
  vx_error *err;
} fit_ctx;

/* Fits node `idx` (global index into nodes[]) at `level`; returns its moments, its max-error
 * bound and the box of its samples [lo, hi] (node frame, finest voxels). */
static vx_status fit_node(fit_ctx *x, uint32_t level, uint64_t idx, vx_fit_root *r) {
  vx_octree *t = x->t;
  vx_node *nd = &t->nodes[idx];
  const uint32_t mask = vx_node_mask(nd->info);
  const double size = ldexp(1.0, (int)(x->D - level));
  if (x->leaves && level == x->leaf_level) {
    /* A subtree fitted elsewhere (vx_octree_fit_top): its root's results, as fit_node gave them. */
    *r = x->leaves[idx - t->level_first[level]];
    return VX_OK;
  }
  if (mask == 0)
    return vx_error_set(x->err, VX_ERR_INVALID_ARG,
                        "cannot fit planes of a pruned tree (level %u node %llu has no children)",
                        level, (unsigned long long)(idx - t->level_first[level]));
  if (level + 1 == x->D) {
    /* Children are voxels: their corner samples, the exact max error. */
    vx_fit_over_voxels(nd, t->voxels + nd->child, mask, t->band, size, r);
    if (++x->done >= x->next_report && x->progress) {
      x->next_report = x->done + x->report_step;
      if (x->progress(x->user, "fitting planes", (double)x->done / (double)x->total))
        return vx_error_set(x->err, VX_ERR_INTERRUPTED, "plane fit interrupted");
    }
    return VX_OK;
  }
  /* Children are nodes: fit them first, then merge their moments and bound through their planes. */
  vx_fit_root cr[8];
  uint32_t nk = vx_popcount8(mask);
  for (uint32_t k = 0; k < nk; k++) {
    vx_status st = fit_node(x, level + 1, (uint64_t)nd->child + k, &cr[k]);
    if (st != VX_OK) return st;
  }
  vx_fit_over_nodes(nd, &t->nodes[nd->child], cr, mask, size, r);
  return VX_OK;
}

vx_status vx_octree_fit_subtree(vx_octree *t, vx_fit_root *root, vx_progress_fn progress, void *user,
                               vx_error *err) {
  if (!t || !t->nodes || t->depth < VX_MIN_DEPTH || t->depth > VX_MAX_DEPTH)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "plane fit needs a built tree");
  if (t->levels_loaded != t->depth + 1 || !t->voxels || t->voxel_count == 0)
    return vx_error_set(err, VX_ERR_INVALID_ARG,
                        "plane fit needs every level loaded (%u of %u) with its voxels",
                        t->levels_loaded, t->depth + 1);
  if (!(t->band > 0.0f))
    return vx_error_set(err, VX_ERR_INVALID_ARG, "field band %g is not positive", t->band);
  fit_ctx x;
  memset(&x, 0, sizeof x);
  x.t = t;
  x.D = t->depth;
  x.total = t->level_count[t->depth - 1];
  x.report_step = x.total / 100 > 1 ? x.total / 100 : 1;
  x.progress = progress;
  x.user = user;
  x.err = err;
  if (progress && progress(user, "fitting planes", 0.0))
    return vx_error_set(err, VX_ERR_INTERRUPTED, "plane fit interrupted");
  vx_fit_root r;
  vx_status s = fit_node(&x, 0, 0, &r);
  if (s != VX_OK) return s;
  if (root) *root = r;
  if (progress && progress(user, "fitting planes", 1.0))
    return vx_error_set(err, VX_ERR_INTERRUPTED, "plane fit interrupted");
  return VX_OK;
}

vx_status vx_octree_fit_planes(vx_octree *t, vx_progress_fn progress, void *user, vx_error *err) {
  return vx_octree_fit_subtree(t, NULL, progress, user, err);
}

vx_status vx_octree_fit_top(vx_octree *t, uint32_t depth, const vx_fit_root *leaves,
                           vx_fit_root *root, vx_error *err) {
  if (!t || !t->nodes || !leaves || depth < VX_MIN_DEPTH || depth > VX_MAX_TILED_DEPTH ||
      t->levels_loaded < 1 || t->levels_loaded > depth || t->level_count[0] != 1)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "top-level plane fit needs levels 0..L < depth");
  if (!(t->band > 0.0f))
    return vx_error_set(err, VX_ERR_INVALID_ARG, "field band %g is not positive", t->band);
  fit_ctx x;
  memset(&x, 0, sizeof x);
  x.t = t;
  x.D = depth;
  x.leaves = leaves;
  x.leaf_level = t->levels_loaded - 1;
  x.err = err;
  vx_fit_root r;
  vx_status st = fit_node(&x, 0, 0, &r);
  if (st == VX_OK && root) *root = r;
  return st;
}

vx_status vx_octree_top_build(const uint64_t *codes, const vx_node *roots,
                              const vx_fit_root *fits, uint64_t n, uint32_t S, uint32_t depth,
                              float band, vx_octree *out, vx_fit_root *root, vx_error *err) {
  memset(out, 0, sizeof *out);
  if (S < 1 || S + 1 > VX_MAX_DEPTH || S >= depth || n == 0)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "no top levels for %llu roots at level %u",
                        (unsigned long long)n, S);
  for (uint64_t i = 0; i < n; i++)
    if ((codes[i] >> 3 * S) != 0 || (i > 0 && codes[i] <= codes[i - 1]))
      return vx_error_set(err, VX_ERR_INVALID_ARG,
                          "root %llu: code %llu out of order or outside level %u",
                          (unsigned long long)i, (unsigned long long)codes[i], S);
  vx_octree t;
  memset(&t, 0, sizeof t);
  t.depth = S + 1; /* the storage of levels 0 .. S; the planes are fitted for `depth` levels */
  t.levels_loaded = S + 1;
  t.band = band;
  for (uint32_t l = 0; l < S; l++) {
    const uint32_t shift = 3 * (S - l);
    uint64_t c = 0;
    for (uint64_t i = 0; i < n; i++) c += i == 0 || (codes[i] >> shift) != (codes[i - 1] >> shift);
    t.level_count[l] = c;
  }
  t.level_count[S] = n;
  vx_status st = vx_octree_alloc(&t, err);
  if (st != VX_OK) return st;
  for (uint32_t l = 0; l < S; l++) {
    const uint32_t shift = 3 * (S - l);
    vx_node *lvl = t.nodes + t.level_first[l];
    uint64_t k = (uint64_t)-1;
    for (uint64_t i = 0; i < n; i++) {
      if (i == 0 || (codes[i] >> shift) != (codes[i - 1] >> shift)) k++;
      lvl[k].info |= 1u << ((codes[i] >> (shift - 3)) & 7u);
    }
  }
  memcpy(t.nodes + t.level_first[S], roots, (size_t)n * sizeof(vx_node));
  for (uint32_t l = 0; l < S; l++) { /* child = first index of the next level + running sum */
    vx_node *lvl = t.nodes + t.level_first[l];
    uint64_t run = t.level_first[l + 1];
    for (uint64_t k = 0; k < t.level_count[l]; k++) {
      lvl[k].child = (uint32_t)run;
      run += vx_popcount8(vx_node_mask(lvl[k].info));
    }
  }
  st = vx_octree_fit_top(&t, depth, fits, root, err);
  if (st != VX_OK) {
    vx_octree_free(&t);
    return st;
  }
  *out = t;
  return VX_OK;
}

/* ---- pruning ------------------------------------------------------------------------------------ */

/* Copies n elements of `size` bytes into a fresh 16-byte aligned block of exactly that size and
 * frees the old one; keeps the old (larger, still valid) block when the allocation fails. */
static void *shrink(void *old, size_t n, size_t size) {
  if (n == 0) {
    vx_free(old);
    return NULL;
  }
  size_t bytes = (n * size + 15) & ~(size_t)15;
  void *p = vx_malloc(bytes);
  if (!p) return old;
  memcpy(p, old, n * size);
  vx_free(old);
  return p;
}

vx_status vx_octree_prune(vx_octree *t, float max_error, vx_error *err) {
  if (!(max_error > 0.0f)) return VX_OK;
  if (!t || !t->nodes || t->depth < VX_MIN_DEPTH || t->depth > VX_MAX_DEPTH)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "pruning needs a built tree");
  if (t->levels_loaded != t->depth + 1)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "pruning needs every level loaded (%u of %u)",
                        t->levels_loaded, t->depth + 1);
  const uint32_t D = t->depth;
  uint64_t widest = 1;
  for (uint32_t l = 0; l <= D; l++)
    if (t->level_count[l] > widest) widest = t->level_count[l];
  /* keep[k]: node k of the current level survives; next[]: the same for the level below. */
  uint8_t *keep = (uint8_t *)vx_malloc((size_t)widest), *next = (uint8_t *)vx_malloc((size_t)widest);
  if (!keep || !next) {
    vx_free(keep);
    vx_free(next);
    return vx_error_set(err, VX_ERR_NOMEM, "cannot allocate %.1f MiB for pruning",
                        2.0 * (double)widest / 1048576.0);
  }
  uint64_t count[VX_MAX_DEPTH + 1], first[VX_MAX_DEPTH + 1], w = 0;
  keep[0] = 1;
  for (uint32_t l = 0; l < D; l++) {
    const uint64_t base = t->level_first[l];
    uint64_t nn = 0;
    first[l] = w;
    for (uint64_t k = 0; k < t->level_count[l]; k++) {
      vx_node nd = t->nodes[base + k]; /* read before any write can reach index base + k */
      uint32_t col = t->node_color ? t->node_color[base + k] : 0;
      const uint32_t mask = vx_node_mask(nd.info);
      const int kept = keep[k], leaf = kept && vx_node_prunable(nd.info, max_error);
      for (uint32_t j = vx_popcount8(mask); j > 0; j--) next[nn++] = (uint8_t)(kept && !leaf);
      if (!kept) continue;
      if (leaf) vx_node_make_pruned(&nd);
      if (t->node_color) t->node_color[w] = col; /* a pruned leaf keeps its subtree's colour */
      t->nodes[w++] = nd;
    }
    count[l] = w - first[l];
    uint8_t *tmp = keep;
    keep = next;
    next = tmp;
  }
  uint64_t vw = 0;
  for (uint64_t k = 0; k < t->level_count[D]; k++)
    if (keep[k]) {
      if (t->voxel_color) t->voxel_color[vw] = t->voxel_color[k];
      t->voxels[vw++] = t->voxels[k];
    }
  count[D] = vw;
  vx_free(keep);
  vx_free(next);
  if (w != t->node_count) t->nodes = (vx_node *)shrink(t->nodes, (size_t)w, sizeof(vx_node));
  if (vw != t->voxel_count) t->voxels = (vx_voxel *)shrink(t->voxels, (size_t)vw, sizeof(vx_voxel));
  if (t->node_color && w != t->node_count)
    t->node_color = (uint32_t *)shrink(t->node_color, (size_t)w, sizeof(uint32_t));
  if (t->voxel_color && vw != t->voxel_count) {
    t->voxel_color = (uint32_t *)shrink(t->voxel_color, (size_t)vw, sizeof(uint32_t));
    if (!t->voxel_color) t->voxel_color = (uint32_t *)vx_malloc(sizeof(uint32_t)); /* none left */
  }
  for (uint32_t l = 0; l <= D; l++) {
    t->level_count[l] = count[l];
    if (l < D) t->level_first[l] = first[l];
  }
  t->node_count = w;
  t->voxel_count = vw;
  if (max_error > t->prune_error) t->prune_error = max_error;
  return vx_octree_link(t, err);
}

/* The same rule on a stream, level by level: a bit per record says whether it is kept (reached
 * from the root through no leaf); each level is read in batches and its kept records appended to
 * the output stream, whose files hold the result when the input was spilled. */
#define PRUNE_BATCH 65536u

static int bit_get(const uint8_t *b, uint64_t i) { return b[i >> 3] >> (i & 7) & 1; }

vx_status vx_stream_prune(vx_stream *in, float max_error, vx_stream *out, vx_error *err) {
  memset(out, 0, sizeof *out);
  const uint32_t D = in->depth;
  uint64_t widest = 1;
  for (uint32_t l = 0; l <= D; l++)
    if (in->level_count[l] > widest) widest = in->level_count[l];
  vx_status st = vx_stream_init(out, D, 0, in->tmp_dir, in->spilled ? 1 : in->mem_budget, err);
  if (st != VX_OK) return st;
  out->xf = in->xf;
  out->band = in->band;
  out->prune_error = max_error > in->prune_error ? max_error : in->prune_error;
  if (in->color) vx_stream_init_color(out); /* colours move with their records */
  uint32_t *cbuf = in->color ? (uint32_t *)vx_malloc(PRUNE_BATCH * sizeof(uint32_t)) : NULL;
  uint8_t *keep = (uint8_t *)vx_calloc((size_t)(widest / 8 + 1), 1);
  uint8_t *next = (uint8_t *)vx_calloc((size_t)(widest / 8 + 1), 1);
  vx_node *buf = (vx_node *)vx_malloc(PRUNE_BATCH * sizeof(vx_node));
  if (!keep || !next || !buf || (in->color && !cbuf))
    st = vx_error_set(err, VX_ERR_NOMEM, "cannot allocate %.1f MiB for pruning",
                      (double)widest / 4.0 / 1048576.0);
  if (st == VX_OK) keep[0] = 1;
  for (uint32_t l = 0; l <= D && st == VX_OK; l++) {
    const uint64_t count = in->level_count[l];
    uint64_t nn = 0; /* children seen so far (bits of next) */
    if (l < D) memset(next, 0, (size_t)(in->level_count[l + 1] / 8 + 1));
    for (uint64_t at = 0; at < count && st == VX_OK; at += PRUNE_BATCH) {
      uint64_t n = count - at < PRUNE_BATCH ? count - at : PRUNE_BATCH, w = 0;
      st = vx_stream_read(in, l, at, n, buf, err);
      if (st == VX_OK && cbuf) st = vx_stream_read_color(in, l, at, n, cbuf, err);
      if (st != VX_OK) break;
      if (cbuf) { /* a kept record keeps its colour (a pruned leaf: its subtree's) */
        uint64_t cw = 0;
        for (uint64_t i = 0; i < n; i++)
          if (bit_get(keep, at + i)) cbuf[cw++] = cbuf[i];
        st = vx_stream_append_color(out, l, cbuf, cw, err);
        if (st != VX_OK) break;
      }
      if (l == D) { /* voxels: 8-byte records */
        vx_voxel *v = (vx_voxel *)buf;
        for (uint64_t i = 0; i < n; i++)
          if (bit_get(keep, at + i)) v[w++] = v[i];
      } else {
        for (uint64_t i = 0; i < n; i++) {
          vx_node nd = buf[i];
          uint32_t info = nd.info, mask = vx_node_mask(info);
          int kept = bit_get(keep, at + i), leaf = kept && vx_node_prunable(info, max_error);
          for (uint32_t c = vx_popcount8(mask); c > 0; c--, nn++)
            if (kept && !leaf) next[nn >> 3] |= (uint8_t)(1u << (nn & 7));
          if (!kept) continue;
          if (leaf) vx_node_make_pruned(&nd);
          buf[w++] = nd;
        }
      }
      st = vx_stream_append(out, l, buf, w, err);
    }
    uint8_t *tmp = keep;
    keep = next;
    next = tmp;
  }
  if (st == VX_OK) st = vx_stream_finish(out, err);
  vx_free(keep);
  vx_free(next);
  vx_free(buf);
  vx_free(cbuf);
  if (st != VX_OK) vx_stream_free(out);
  return st;
}
