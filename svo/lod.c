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
 * (vx_tree_fit_subtree on a tree rooted at that node) and its root's results handed to a fit of
 * the levels above (vx_tree_fit_top): the out-of-core build fits each block's subtree on the
 * thread that voxelized it, and the values are bit for bit those of the whole-tree pass.
 *
 * Prune. Top-down, level by level: a node reached from the root whose plane is OK and whose
 * decoded bound is <= E becomes a leaf (mask 0, VX_NODE_PRUNED); its subtree is not kept. Kept
 * nodes are compacted in place (a node's new index never exceeds its old one, and each level is
 * read before it is overwritten), then the arrays are shrunk and vx_tree_link() re-links them.
 */
#include "svo/lod.h"

#include <stdlib.h>
#include <string.h>

/* ---- moments --------------------------------------------------------------------------------- */

void vx_moments_add(vx_moments *m, double x, double y, double z, double f) {
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
static int sym(int i, int j) {
  static const int idx[3][3] = {{0, 1, 2}, {1, 3, 4}, {2, 4, 5}};
  return idx[i][j];
}

void vx_moments_merge(vx_moments *dst, const vx_moments *src, const double t[3]) {
  const double n = src->n;
  for (int i = 0; i < 3; i++)
    for (int j = i; j < 3; j++)
      dst->ss[sym(i, j)] += src->ss[sym(i, j)] + src->s[i] * t[j] + t[i] * src->s[j] + n * t[i] * t[j];
  for (int i = 0; i < 3; i++) {
    dst->s[i] += src->s[i] + n * t[i];
    dst->fs[i] += src->fs[i] + src->f * t[i];
  }
  dst->n += n;
  dst->f += src->f;
  dst->ff += src->ff;
}

/* Means and centred second moments (see the top of the file). Requires m->n > 0. */
typedef struct centred {
  double m[3], mf; /* means of p and f */
  double C[3][3];  /* covariance of p */
  double c[3];     /* covariance of p and f */
  double vf;       /* variance of f */
  double scale;    /* trace(Q/N): the size of the terms that cancel in C */
} centred;

static void centre(const vx_moments *mo, centred *z) {
  const double inv = 1.0 / mo->n;
  for (int i = 0; i < 3; i++) z->m[i] = mo->s[i] * inv;
  z->mf = mo->f * inv;
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) z->C[i][j] = mo->ss[sym(i, j)] * inv - z->m[i] * z->m[j];
  for (int i = 0; i < 3; i++) z->c[i] = mo->fs[i] * inv - z->mf * z->m[i];
  z->vf = mo->ff * inv - z->mf * z->mf;
  z->scale = (mo->ss[0] + mo->ss[3] + mo->ss[5]) * inv;
}

/* Mean squared residual of q(p) = a.p + b over the samples, from the centred moments. */
static double mean_sq_residual(const centred *z, const double a[3], double b) {
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
static void eigen_sym3(double A[3][3], double lam[3], double V[3][3]) {
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
static int solve_centred(const centred *z, double a[3]) {
  double A[3][3], lam[3], V[3][3];
  memcpy(A, z->C, sizeof A);
  eigen_sym3(A, lam, V);
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

int vx_moments_fit(const vx_moments *m, double a[3], double *b, double *rms) {
  a[0] = a[1] = a[2] = 0.0;
  *b = 0.0;
  *rms = 0.0;
  if (!(m->n > 0.0)) return 0;
  centred z;
  centre(m, &z);
  int ok = solve_centred(&z, a);
  *b = z.mf - (a[0] * z.m[0] + a[1] * z.m[1] + a[2] * z.m[2]);
  *rms = sqrt(mean_sq_residual(&z, a, *b));
  return ok;
}

/* ---- packed planes ----------------------------------------------------------------------------- */

/* A node's plane as stored, decoded to double, in the node's frame (origin at its min corner). */
typedef struct plane {
  double n[3]; /* decoded unit normal */
  double e;    /* value = n.p + e */
} plane;

static double plane_at(const plane *P, double x, double y, double z) {
  return P->n[0] * x + P->n[1] * y + P->n[2] * z + P->e;
}

static void plane_decode(const vx_node *nd, double size, plane *P) {
  float n[3];
  vx_oct_decode(nd->normal, n);
  double h = 0.5 * size;
  for (int i = 0; i < 3; i++) P->n[i] = (double)n[i];
  P->e = (double)nd->d * size - h * (P->n[0] + P->n[1] + P->n[2]);
}

float vx_node_plane_eval(const vx_node *n, uint32_t depth, uint32_t level, const double node_min[3],
                         const double p[3]) {
  double size = ldexp(1.0, (int)depth - (int)level);
  plane P;
  plane_decode(n, size, &P);
  return (float)plane_at(&P, p[0] - node_min[0], p[1] - node_min[1], p[2] - node_min[2]);
}

/* Fits the moments, writes normal and d into nd, returns the decoded plane in P, the RMS of the
 * packed plane in *rms, and VX_NODE_PLANE_OK or 0. */
static uint32_t pack_plane(const vx_moments *m, double size, vx_node *nd, plane *P, double *rms) {
  double a[3], b, rls;
  int ok = vx_moments_fit(m, a, &b, &rls);
  double g = sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]);
  uint32_t code = g > 0.0 ? vx_oct_encode(a[0] / g, a[1] / g, a[2] / g) : vx_oct_encode(0, 0, 1);
  nd->normal = code;
  centred z;
  if (m->n > 0.0) {
    centre(m, &z);
  } else {
    memset(&z, 0, sizeof z);
  }
  float n[3];
  vx_oct_decode(code, n);
  double h = 0.5 * size;
  double e = z.mf - ((double)n[0] * z.m[0] + (double)n[1] * z.m[1] + (double)n[2] * z.m[2]);
  double d = (e + h * ((double)n[0] + (double)n[1] + (double)n[2])) / size;
  nd->d = (float)d;
  plane_decode(nd, size, P);
  *rms = m->n > 0.0 ? sqrt(mean_sq_residual(&z, P->n, P->e)) : 0.0;
  return ok && g > 0.05 ? VX_NODE_PLANE_OK : 0u;
}

/* A computed bound, made safe against the round-off of its own double evaluation. */
static double pad(double e, double size) { return e * (1.0 + 1e-12) + 1e-12 * size; }

/* ---- fit pass ------------------------------------------------------------------------------------ */

typedef struct fit_ctx {
  vx_tree *t;
  uint32_t D;
  const vx_fit_root *leaves; /* vx_tree_fit_top: fits of the nodes at leaf_level, given */
  uint32_t leaf_level;
  uint64_t done, total, next_report, report_step; /* level D-1 nodes, for progress */
  vx_progress_fn progress;
  void *user;
  vx_error *err;
} fit_ctx;

/* Fits node `idx` (global index into nodes[]) at `level`; returns its moments, its max-error
 * bound and the box of its samples [lo, hi] (node frame, finest voxels). */
static vx_status fit_node(fit_ctx *x, uint32_t level, uint64_t idx, vx_moments *out, double *bound,
                          double lo[3], double hi[3]) {
  vx_tree *t = x->t;
  vx_node *nd = &t->nodes[idx];
  const uint32_t mask = vx_node_mask(nd->info);
  const double size = ldexp(1.0, (int)(x->D - level)), half = 0.5 * size;
  memset(out, 0, sizeof *out);
  for (int i = 0; i < 3; i++) {
    lo[i] = size;
    hi[i] = 0.0;
  }
  if (x->leaves && level == x->leaf_level) {
    /* A subtree fitted elsewhere (vx_tree_fit_top): its root's results, as fit_node gave them. */
    const vx_fit_root *r = &x->leaves[idx - t->level_first[level]];
    *out = r->m;
    *bound = r->bound;
    memcpy(lo, r->lo, sizeof r->lo);
    memcpy(hi, r->hi, sizeof r->hi);
    return VX_OK;
  }
  if (mask == 0)
    return vx_error_set(x->err, VX_ERR_INVALID_ARG,
                        "cannot fit planes of a pruned tree (level %u node %llu has no children)",
                        level, (unsigned long long)(idx - t->level_first[level]));
  plane P;
  double rms, emax = 0.0;
  uint32_t flags;
  if (level + 1 == x->D) {
    /* Children are voxels: accumulate their corner samples, then measure the exact max error. */
    const float band = t->band;
    const vx_voxel *v = t->voxels + nd->child;
    for (uint32_t s = 0, r = 0; s < 8; s++) {
      if (!(mask >> s & 1u)) continue;
      const vx_voxel *vox = &v[r++];
      for (int i = 0; i < 3; i++) {
        double o = (double)(s >> i & 1);
        if (o < lo[i]) lo[i] = o;
        if (o + 1.0 > hi[i]) hi[i] = o + 1.0;
      }
      for (int c = 0; c < 8; c++)
        vx_moments_add(out, (double)((s & 1) + (c & 1)), (double)((s >> 1 & 1) + (c >> 1 & 1)),
                       (double)((s >> 2 & 1) + (c >> 2 & 1)),
                       (double)vx_corner_value(vox->c[c], band));
    }
    flags = pack_plane(out, size, nd, &P, &rms);
    for (uint32_t s = 0, r = 0; s < 8; s++) {
      if (!(mask >> s & 1u)) continue;
      const vx_voxel *vox = &v[r++];
      for (int c = 0; c < 8; c++) {
        double q = plane_at(&P, (double)((s & 1) + (c & 1)), (double)((s >> 1 & 1) + (c >> 1 & 1)),
                            (double)((s >> 2 & 1) + (c >> 2 & 1)));
        double e = fabs(q - (double)vx_corner_value(vox->c[c], band));
        if (e > emax) emax = e;
      }
    }
    if (++x->done >= x->next_report && x->progress) {
      x->next_report = x->done + x->report_step;
      if (x->progress(x->user, "fitting planes", (double)x->done / (double)x->total))
        return vx_error_set(x->err, VX_ERR_INTERRUPTED, "plane fit interrupted");
    }
  } else {
    /* Children are nodes: merge their moments, then bound the error through their planes. */
    double child_bound[8], clo[8][3], chi[8][3];
    for (uint32_t s = 0, r = 0; s < 8; s++) {
      if (!(mask >> s & 1u)) continue;
      vx_moments cm;
      vx_status st = fit_node(x, level + 1, (uint64_t)nd->child + r, &cm, &child_bound[r], clo[r], chi[r]);
      if (st != VX_OK) return st;
      double off[3] = {(s & 1) * half, (s >> 1 & 1) * half, (s >> 2 & 1) * half};
      vx_moments_merge(out, &cm, off);
      for (int i = 0; i < 3; i++) {
        if (clo[r][i] + off[i] < lo[i]) lo[i] = clo[r][i] + off[i];
        if (chi[r][i] + off[i] > hi[i]) hi[i] = chi[r][i] + off[i];
      }
      r++;
    }
    flags = pack_plane(out, size, nd, &P, &rms);
    for (uint32_t s = 0, r = 0; s < 8; s++) {
      if (!(mask >> s & 1u)) continue;
      plane Pc;
      plane_decode(&t->nodes[(uint64_t)nd->child + r], half, &Pc);
      double off[3] = {(s & 1) * half, (s >> 1 & 1) * half, (s >> 2 & 1) * half};
      double worst = 0.0; /* over the corners of the child's sample box (child frame) */
      for (int c = 0; c < 8; c++) {
        double lx = (c & 1) ? chi[r][0] : clo[r][0], ly = (c >> 1 & 1) ? chi[r][1] : clo[r][1],
               lz = (c >> 2 & 1) ? chi[r][2] : clo[r][2];
        double diff = fabs(plane_at(&P, off[0] + lx, off[1] + ly, off[2] + lz) - plane_at(&Pc, lx, ly, lz));
        if (diff > worst) worst = diff;
      }
      double e = child_bound[r] + worst;
      if (e > emax) emax = e;
      r++;
    }
  }
  *bound = pad(emax, size);
  nd->info = vx_node_info(mask, vx_err_encode(*bound), vx_err_encode(rms), flags);
  return VX_OK;
}

vx_status vx_tree_fit_subtree(vx_tree *t, vx_fit_root *root, vx_progress_fn progress, void *user,
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
  vx_status s = fit_node(&x, 0, 0, &r.m, &r.bound, r.lo, r.hi);
  if (s != VX_OK) return s;
  if (root) *root = r;
  if (progress && progress(user, "fitting planes", 1.0))
    return vx_error_set(err, VX_ERR_INTERRUPTED, "plane fit interrupted");
  return VX_OK;
}

vx_status vx_tree_fit_planes(vx_tree *t, vx_progress_fn progress, void *user, vx_error *err) {
  return vx_tree_fit_subtree(t, NULL, progress, user, err);
}

vx_status vx_tree_fit_top(vx_tree *t, uint32_t depth, const vx_fit_root *leaves, vx_error *err) {
  if (!t || !t->nodes || !leaves || depth < VX_MIN_DEPTH || depth > VX_MAX_DEPTH ||
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
  return fit_node(&x, 0, 0, &r.m, &r.bound, r.lo, r.hi);
}

/* ---- pruning ------------------------------------------------------------------------------------ */

/* Copies n elements of `size` bytes into a fresh 16-byte aligned block of exactly that size and
 * frees the old one; keeps the old (larger, still valid) block when the allocation fails. */
static void *shrink(void *old, size_t n, size_t size) {
  if (n == 0) {
    free(old);
    return NULL;
  }
  size_t bytes = (n * size + 15) & ~(size_t)15;
  void *p = aligned_alloc(16, bytes);
  if (!p) return old;
  memcpy(p, old, n * size);
  free(old);
  return p;
}

/* A node whose plane stands for its subtree within max_error (the prune rule). */
static int prunable(uint32_t info, float max_error) {
  uint32_t code = vx_node_errmax_code(info);
  return vx_node_mask(info) && (vx_node_flags(info) & VX_NODE_PLANE_OK) && code < 255 &&
         vx_err_decode(code) <= max_error;
}

vx_status vx_tree_prune(vx_tree *t, float max_error, vx_error *err) {
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
  uint8_t *keep = (uint8_t *)malloc((size_t)widest), *next = (uint8_t *)malloc((size_t)widest);
  if (!keep || !next) {
    free(keep);
    free(next);
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
      uint32_t info = nd.info, mask = vx_node_mask(info), flags = vx_node_flags(info);
      uint32_t code = vx_node_errmax_code(info);
      int kept = keep[k];
      int leaf = kept && prunable(info, max_error);
      for (uint32_t j = vx_popcount8(mask); j > 0; j--) next[nn++] = (uint8_t)(kept && !leaf);
      if (!kept) continue;
      if (leaf) {
        nd.info = vx_node_info(0, code, vx_node_errrms_code(info), flags | VX_NODE_PRUNED);
        nd.child = 0;
      }
      t->nodes[w++] = nd;
    }
    count[l] = w - first[l];
    uint8_t *tmp = keep;
    keep = next;
    next = tmp;
  }
  uint64_t vw = 0;
  for (uint64_t k = 0; k < t->level_count[D]; k++)
    if (keep[k]) t->voxels[vw++] = t->voxels[k];
  count[D] = vw;
  free(keep);
  free(next);
  if (w != t->node_count) t->nodes = (vx_node *)shrink(t->nodes, (size_t)w, sizeof(vx_node));
  if (vw != t->voxel_count) t->voxels = (vx_voxel *)shrink(t->voxels, (size_t)vw, sizeof(vx_voxel));
  for (uint32_t l = 0; l <= D; l++) {
    t->level_count[l] = count[l];
    if (l < D) t->level_first[l] = first[l];
  }
  t->node_count = w;
  t->voxel_count = vw;
  if (max_error > t->prune_error) t->prune_error = max_error;
  return vx_tree_link(t, err);
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
  uint8_t *keep = (uint8_t *)calloc((size_t)(widest / 8 + 1), 1);
  uint8_t *next = (uint8_t *)calloc((size_t)(widest / 8 + 1), 1);
  vx_node *buf = (vx_node *)aligned_alloc(16, PRUNE_BATCH * sizeof(vx_node));
  if (!keep || !next || !buf)
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
      if (st != VX_OK) break;
      if (l == D) { /* voxels: 8-byte records */
        vx_voxel *v = (vx_voxel *)buf;
        for (uint64_t i = 0; i < n; i++)
          if (bit_get(keep, at + i)) v[w++] = v[i];
      } else {
        for (uint64_t i = 0; i < n; i++) {
          vx_node nd = buf[i];
          uint32_t info = nd.info, mask = vx_node_mask(info);
          int kept = bit_get(keep, at + i), leaf = kept && prunable(info, max_error);
          for (uint32_t c = vx_popcount8(mask); c > 0; c--, nn++)
            if (kept && !leaf) next[nn >> 3] |= (uint8_t)(1u << (nn & 7));
          if (!kept) continue;
          if (leaf) {
            nd.info = vx_node_info(0, vx_node_errmax_code(info), vx_node_errrms_code(info),
                                   vx_node_flags(info) | VX_NODE_PRUNED);
            nd.child = 0;
          }
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
  free(keep);
  free(next);
  free(buf);
  if (st != VX_OK) vx_stream_free(out);
  return st;
}
