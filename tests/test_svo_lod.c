/* SPDX-License-Identifier: Apache-2.0 */
/* test_svo_lod.c - per-node planes from moments, the max-error bound, packing error and pruning.
 *
 * References are brute force in double: least squares by Householder QR on the sample list, and
 * every sample of every node's subtree enumerated for max and RMS errors. Trees are built with
 * vx_octree_build() from voxels that an analytic surface (a plane, a sphere) passes through, with
 * exact distances at the corners, quantized as the voxelizer would.
 */
#include "svo/lod.h"
#include "check.h"

/* ---- random numbers (deterministic) ---------------------------------------------------------- */

static uint64_t rng_state = 88172645463325252ull;
static double urand(void) { /* [0, 1) */
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (double)(rng_state >> 11) * (1.0 / 9007199254740992.0);
}
static double srand1(void) { return 2.0 * urand() - 1.0; }

/* ---- least squares by Householder QR ------------------------------------------------------------
 * Minimises |A x - f| for A (N x k, row-major, k <= 4); A and f are destroyed. Returns 0 when A
 * is rank deficient. *res2 receives the residual sum of squares. */
static int lsq_qr(double *A, double *f, size_t N, int k, double *x, double *res2) {
  double *v = (double *)malloc(N * sizeof *v);
  for (int c = 0; c < k; c++) {
    double norm = 0.0;
    for (size_t i = (size_t)c; i < N; i++) norm += A[i * k + c] * A[i * k + c];
    norm = sqrt(norm);
    if (norm == 0.0) {
      free(v);
      return 0;
    }
    double alpha = A[(size_t)c * k + c] > 0.0 ? -norm : norm, vn = 0.0;
    for (size_t i = (size_t)c; i < N; i++) v[i] = A[i * k + c];
    v[c] -= alpha;
    for (size_t i = (size_t)c; i < N; i++) vn += v[i] * v[i];
    for (int j = c; j < k; j++) {
      double dot = 0.0;
      for (size_t i = (size_t)c; i < N; i++) dot += v[i] * A[i * k + j];
      for (size_t i = (size_t)c; i < N; i++) A[i * k + j] -= 2.0 * dot / vn * v[i];
    }
    double dot = 0.0;
    for (size_t i = (size_t)c; i < N; i++) dot += v[i] * f[i];
    for (size_t i = (size_t)c; i < N; i++) f[i] -= 2.0 * dot / vn * v[i];
  }
  free(v);
  for (int c = k - 1; c >= 0; c--) {
    double s = f[c];
    for (int j = c + 1; j < k; j++) s -= A[(size_t)c * k + j] * x[j];
    if (fabs(A[(size_t)c * k + c]) < 1e-12 * fabs(A[0])) return 0;
    x[c] = s / A[(size_t)c * k + c];
  }
  *res2 = 0.0;
  for (size_t i = (size_t)k; i < N; i++) *res2 += f[i] * f[i];
  return 1;
}

/* Plane fit of samples p[N][3], f[N] with the given columns (x, y, z used when use[i]) plus 1. */
static int direct_fit(const double (*p)[3], const double *f, size_t N, const int use[3], double a[3],
                      double *b, double *rms) {
  int k = 0, col[3];
  for (int i = 0; i < 3; i++)
    if (use[i]) col[k++] = i;
  k++;
  double *A = (double *)malloc(N * (size_t)k * sizeof *A), *r = (double *)malloc(N * sizeof *r);
  for (size_t i = 0; i < N; i++) {
    for (int j = 0; j < k - 1; j++) A[i * k + j] = p[i][col[j]];
    A[i * k + k - 1] = 1.0;
    r[i] = f[i];
  }
  double x[4] = {0, 0, 0, 0}, res2 = 0.0;
  int ok = lsq_qr(A, r, N, k, x, &res2);
  a[0] = a[1] = a[2] = 0.0;
  for (int j = 0; j < k - 1; j++) a[col[j]] = x[j];
  *b = x[k - 1];
  *rms = sqrt(res2 / (double)N);
  free(A);
  free(r);
  return ok;
}

/* ---- trees from analytic fields ------------------------------------------------------------------ */

typedef struct shape {
  int sphere;   /* 1: sphere (centre o, radius r); 0: plane n.p + d */
  double o[3], r;
  double n[3], d;
} shape;

static double shape_dist(const shape *s, double x, double y, double z) {
  if (s->sphere) {
    double dx = x - s->o[0], dy = y - s->o[1], dz = z - s->o[2];
    return sqrt(dx * dx + dy * dy + dz * dz) - s->r;
  }
  return s->n[0] * x + s->n[1] * y + s->n[2] * z + s->d;
}

/* Does the surface pass through the closed voxel box at (x, y, z)? */
static int shape_hits(const shape *s, uint32_t x, uint32_t y, uint32_t z) {
  if (!s->sphere) { /* linear: compare the signs at the corners */
    double lo = 1e300, hi = -1e300;
    for (int c = 0; c < 8; c++) {
      double v = shape_dist(s, x + (c & 1), y + (c >> 1 & 1), z + (c >> 2 & 1));
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
    return lo <= 0.0 && hi >= 0.0;
  }
  double near2 = 0.0, far2 = 0.0, b[3] = {x, y, z};
  for (int i = 0; i < 3; i++) {
    double lo = b[i] - s->o[i], hi = lo + 1.0;
    double nd = lo > 0.0 ? lo : (hi < 0.0 ? -hi : 0.0), fd = fabs(lo) > fabs(hi) ? fabs(lo) : fabs(hi);
    near2 += nd * nd;
    far2 += fd * fd;
  }
  return near2 <= s->r * s->r && far2 >= s->r * s->r;
}

static const float BAND = 2.0f;

static void build_shape(uint32_t depth, const shape *s, vx_octree *t) {
  uint64_t cells = (uint64_t)1 << (3 * depth), n = 0;
  uint64_t *codes = (uint64_t *)malloc(cells * sizeof *codes);
  vx_voxel *field = (vx_voxel *)malloc(cells * sizeof *field);
  for (uint64_t m = 0; m < cells; m++) {
    uint32_t x, y, z;
    vx_morton_decode(m, &x, &y, &z);
    if (!shape_hits(s, x, y, z)) continue;
    for (int c = 0; c < 8; c++)
      field[n].c[c] = vx_corner_quantize(shape_dist(s, x + (c & 1), y + (c >> 1 & 1), z + (c >> 2 & 1)), BAND);
    codes[n++] = m;
  }
  vx_status st = vx_octree_build(depth, codes, field, n, t, NULL);
  CHECK(st == VX_OK);
  t->band = BAND;
  t->xf.scale = 1.0;
  free(codes);
  free(field);
}

static void clone_tree(const vx_octree *a, vx_octree *b) {
  *b = *a;
  b->nodes = (vx_node *)aligned_alloc(16, a->node_count * sizeof(vx_node));
  if (a->node_count) memcpy(b->nodes, a->nodes, a->node_count * sizeof(vx_node));
  b->voxels = (vx_voxel *)aligned_alloc(16, ((a->voxel_count * sizeof(vx_voxel)) + 15) & ~(size_t)15);
  if (a->voxel_count) memcpy(b->voxels, a->voxels, a->voxel_count * sizeof(vx_voxel));
}

/* Level-local Morton codes of every node (ncode) and voxel (vcode), top-down from the masks. */
static void tree_codes(const vx_octree *t, uint64_t **ncode, uint64_t **vcode) {
  *ncode = (uint64_t *)calloc(t->node_count + 1, sizeof(uint64_t));
  *vcode = (uint64_t *)calloc(t->voxel_count + 1, sizeof(uint64_t));
  for (uint64_t i = 0; i < t->node_count; i++) {
    const vx_node *nd = &t->nodes[i];
    uint32_t mask = vx_node_mask(nd->info);
    int to_voxels = i >= t->level_first[t->depth - 1];
    for (uint32_t s = 0, r = 0; s < 8; s++)
      if (mask >> s & 1u) (to_voxels ? *vcode : *ncode)[nd->child + r++] = (*ncode)[i] << 3 | s;
  }
}

static uint32_t level_of(const vx_octree *t, uint64_t i) {
  uint32_t l = 0;
  while (l + 1 < t->depth && i >= t->level_first[l + 1]) l++;
  return l;
}

/* The packed plane in double, straight from node.h's definition. */
static double packed_eval(const vx_node *nd, double size, const double mn[3], double x, double y, double z) {
  float n[3];
  vx_oct_decode(nd->normal, n);
  double h = 0.5 * size;
  return n[0] * (x - mn[0] - h) + n[1] * (y - mn[1] - h) + n[2] * (z - mn[2] - h) + (double)nd->d * size;
}

/* Every node's samples, brute force: for each node, its subtree's voxels' corners in node-local
 * coordinates. Fills max |packed - f|, RMS of packed - f, and optionally the direct LS fit. */
typedef struct node_truth {
  double maxerr, rms;
  double a[3], b; /* direct least-squares fit in node-local coordinates */
  double m[3], mf; /* sample means */
  double lo[3], hi[3]; /* sample box, global coordinates */
  size_t count;
} node_truth;

static node_truth *brute_force(const vx_octree *t, int with_fit) {
  uint64_t *ncode, *vcode;
  tree_codes(t, &ncode, &vcode);
  node_truth *tr = (node_truth *)calloc(t->node_count, sizeof *tr);
  const uint32_t D = t->depth;
  /* voxels of a node: a contiguous range at level D (children contiguous, BFS Morton order). */
  uint64_t *lo = (uint64_t *)malloc(t->node_count * sizeof(uint64_t));
  uint64_t *hi = (uint64_t *)malloc(t->node_count * sizeof(uint64_t));
  for (uint64_t i = t->node_count; i-- > 0;) {
    const vx_node *nd = &t->nodes[i];
    uint32_t pc = vx_popcount8(vx_node_mask(nd->info));
    if (level_of(t, i) + 1 == D) {
      lo[i] = nd->child;
      hi[i] = nd->child + pc;
    } else {
      lo[i] = lo[nd->child];
      hi[i] = hi[nd->child + pc - 1];
    }
  }
  for (uint64_t i = 0; i < t->node_count; i++) {
    uint32_t l = level_of(t, i), x, y, z;
    double size = ldexp(1.0, (int)(D - l)), mn[3];
    vx_morton_decode(ncode[i], &x, &y, &z);
    mn[0] = x * size;
    mn[1] = y * size;
    mn[2] = z * size;
    size_t N = (size_t)(hi[i] - lo[i]) * 8, k = 0;
    double (*p)[3] = (double (*)[3])malloc(N * sizeof *p), *f = (double *)malloc(N * sizeof *f);
    double sum2 = 0.0;
    for (int j = 0; j < 3; j++) {
      tr[i].lo[j] = 1e300;
      tr[i].hi[j] = -1e300;
    }
    for (uint64_t v = lo[i]; v < hi[i]; v++) {
      uint32_t vx, vy, vz;
      vx_morton_decode(vcode[v], &vx, &vy, &vz);
      for (int c = 0; c < 8; c++, k++) {
        double px = vx + (c & 1), py = vy + (c >> 1 & 1), pz = vz + (c >> 2 & 1);
        double fv = (double)vx_corner_value(t->voxels[v].c[c], t->band);
        double e = fabs(packed_eval(&t->nodes[i], size, mn, px, py, pz) - fv);
        if (e > tr[i].maxerr) tr[i].maxerr = e;
        sum2 += e * e;
        double g[3] = {px, py, pz};
        for (int j = 0; j < 3; j++) {
          if (g[j] < tr[i].lo[j]) tr[i].lo[j] = g[j];
          if (g[j] > tr[i].hi[j]) tr[i].hi[j] = g[j];
        }
        p[k][0] = px - mn[0];
        p[k][1] = py - mn[1];
        p[k][2] = pz - mn[2];
        f[k] = fv;
        for (int j = 0; j < 3; j++) tr[i].m[j] += p[k][j] / (double)N;
        tr[i].mf += fv / (double)N;
      }
    }
    tr[i].count = N;
    tr[i].rms = sqrt(sum2 / (double)N);
    if (with_fit) {
      int use[3] = {1, 1, 1};
      double r;
      direct_fit((const double (*)[3])p, f, N, use, tr[i].a, &tr[i].b, &r);
    }
    free(p);
    free(f);
  }
  free(lo);
  free(hi);
  free(ncode);
  free(vcode);
  return tr;
}

/* ---- moments ------------------------------------------------------------------------------------- */

static void lod_moments_fit_matches_direct_least_squares(void) {
  double worst_a = 0, worst_b = 0, worst_rms = 0;
  for (int trial = 0; trial < 200; trial++) {
    size_t N = 4 + (size_t)(urand() * 300);
    /* like a node's frame: the samples' spread is comparable to their distance from the origin */
    double spread = 0.5 + 10 * urand(), off[3] = {4 * spread * urand(), 4 * spread * urand(), 4 * spread * urand()};
    double a0[3] = {srand1(), srand1(), srand1()}, b0 = 5 * srand1(), noise = urand();
    double (*p)[3] = (double (*)[3])malloc(N * sizeof *p), *f = (double *)malloc(N * sizeof *f);
    vx_moments m;
    memset(&m, 0, sizeof m);
    for (size_t i = 0; i < N; i++) {
      for (int j = 0; j < 3; j++) p[i][j] = off[j] + spread * srand1();
      f[i] = a0[0] * p[i][0] + a0[1] * p[i][1] + a0[2] * p[i][2] + b0 + noise * srand1();
      vx_moments_add(&m, p[i][0], p[i][1], p[i][2], f[i]);
    }
    double a[3], b, rms, ra[3], rb, rrms;
    int use[3] = {1, 1, 1};
    CHECK(vx_moments_fit(&m, a, &b, &rms) == 1);
    CHECK(direct_fit((const double (*)[3])p, f, N, use, ra, &rb, &rrms) == 1);
    for (int j = 0; j < 3; j++)
      if (fabs(a[j] - ra[j]) > worst_a) worst_a = fabs(a[j] - ra[j]);
    /* compare the planes' values at the samples' centre */
    double bs = fabs((a[0] - ra[0]) * off[0] + (a[1] - ra[1]) * off[1] + (a[2] - ra[2]) * off[2] + b - rb);
    if (bs > worst_b) worst_b = bs;
    /* The moments give the mean squared residual as a difference of terms of size mean(f^2):
     * expect its error relative to mean(f^2), a few ulps times the sample count at worst. */
    double f2 = 0.0;
    for (size_t i = 0; i < N; i++) f2 += f[i] * f[i] / (double)N;
    double dr = fabs(rms * rms - rrms * rrms) / f2;
    if (dr > worst_rms) worst_rms = dr;
    free(p);
    free(f);
  }
  fprintf(stderr, "  moments vs QR: max |da| %.3g, max db at the centre %.3g, max |d mse| / mean f^2 %.3g\n", worst_a,
          worst_b, worst_rms);
  CHECK(worst_a < 1e-9);
  CHECK(worst_b < 1e-9);
  CHECK(worst_rms < 1e-12);
  /* far from the origin (raw moments lose digits to cancellation, which centring cannot undo):
   * still close, with looser tolerances */
  for (int trial = 0; trial < 20; trial++) {
    size_t N = 100;
    double p[100][3], f[100], a[3], b, rms, ra[3], rb, rrms;
    int use[3] = {1, 1, 1};
    vx_moments m;
    memset(&m, 0, sizeof m);
    for (size_t i = 0; i < N; i++) {
      for (int j = 0; j < 3; j++) p[i][j] = 8192 + 4 * srand1();
      f[i] = 0.6 * p[i][0] - 0.8 * p[i][2] + 0.01 * srand1();
      vx_moments_add(&m, p[i][0], p[i][1], p[i][2], f[i]);
    }
    CHECK(vx_moments_fit(&m, a, &b, &rms) == 1);
    CHECK(direct_fit((const double (*)[3])p, f, N, use, ra, &rb, &rrms) == 1);
    for (int j = 0; j < 3; j++) CHECK_NEAR(a[j], ra[j], 1e-5);
    CHECK_NEAR(rms, rrms, 1e-4);
  }
}

static void lod_moments_fit_degenerate_gives_minimum_norm(void) {
  /* Coplanar in p (z = 3): the z slope is undetermined and must be 0; x, y as in a 2D fit. */
  size_t N = 50;
  double p[50][3], f[50];
  vx_moments m;
  memset(&m, 0, sizeof m);
  for (size_t i = 0; i < N; i++) {
    p[i][0] = 10 * srand1();
    p[i][1] = 10 * srand1();
    p[i][2] = 3.0;
    f[i] = 2 * p[i][0] - p[i][1] + 0.5 + 0.1 * srand1();
    vx_moments_add(&m, p[i][0], p[i][1], p[i][2], f[i]);
  }
  double a[3], b, rms, ra[3], rb, rrms;
  int use[3] = {1, 1, 0};
  CHECK(vx_moments_fit(&m, a, &b, &rms) == 0);
  CHECK(direct_fit((const double (*)[3])p, f, N, use, ra, &rb, &rrms) == 1);
  CHECK_NEAR(a[0], ra[0], 1e-9);
  CHECK_NEAR(a[1], ra[1], 1e-9);
  CHECK_NEAR(a[2], 0.0, 1e-9);
  CHECK_NEAR(b, rb, 1e-8);
  CHECK_NEAR(rms, rrms, 1e-8);
  /* Collinear along u = (1,2,3): a is parallel to u with a.u = the slope along the line. */
  memset(&m, 0, sizeof m);
  for (int i = 0; i < 20; i++) {
    double s = srand1();
    vx_moments_add(&m, 5 + s, -1 + 2 * s, 7 + 3 * s, 4.0 * s + 1.0);
  }
  CHECK(vx_moments_fit(&m, a, &b, &rms) == 0);
  for (int j = 0; j < 3; j++) CHECK_NEAR(a[j], 4.0 * (j + 1) / 14.0, 1e-9);
  CHECK_NEAR(a[0] * 5 - a[1] + a[2] * 7 + b, 1.0, 1e-9);
  CHECK_NEAR(rms, 0.0, 1e-6);
  /* One point: no gradient, b is the mean. */
  memset(&m, 0, sizeof m);
  vx_moments_add(&m, 1e4, 2e4, 3e4, 1.0);
  vx_moments_add(&m, 1e4, 2e4, 3e4, 2.0);
  CHECK(vx_moments_fit(&m, a, &b, &rms) == 0);
  CHECK(a[0] == 0.0 && a[1] == 0.0 && a[2] == 0.0);
  CHECK_NEAR(b, 1.5, 1e-12);
  CHECK_NEAR(rms, 0.5, 1e-9);
  /* No samples. */
  memset(&m, 0, sizeof m);
  CHECK(vx_moments_fit(&m, a, &b, &rms) == 0);
  CHECK(a[0] == 0.0 && b == 0.0 && rms == 0.0);
}

static void lod_moments_merge_with_shift_equals_shifted_accumulation(void) {
  for (int trial = 0; trial < 50; trial++) {
    vx_moments dst, src, ref;
    memset(&dst, 0, sizeof dst);
    memset(&src, 0, sizeof src);
    memset(&ref, 0, sizeof ref);
    double t[3] = {64 * urand(), 64 * urand(), 64 * urand()};
    for (int i = 0; i < 30; i++) {
      double x = 16 * urand(), y = 16 * urand(), z = 16 * urand(), f = srand1();
      vx_moments_add(&dst, x, y, z, f);
      vx_moments_add(&ref, x, y, z, f);
    }
    for (int i = 0; i < 40; i++) {
      double x = 8 * urand(), y = 8 * urand(), z = 8 * urand(), f = 2 * srand1();
      vx_moments_add(&src, x, y, z, f);
      vx_moments_add(&ref, x + t[0], y + t[1], z + t[2], f);
    }
    vx_moments_merge(&dst, &src, t);
    const double *a = (const double *)&dst, *b = (const double *)&ref;
    for (size_t k = 0; k < sizeof dst / sizeof(double); k++)
      CHECK_MSG(fabs(a[k] - b[k]) <= 1e-11 * (1.0 + fabs(b[k])), "field %zu: %.17g vs %.17g", k, a[k], b[k]);
  }
}

/* ---- planes on trees ------------------------------------------------------------------------------ */

static const double STEP = 2.0 / 127.0; /* quantization step of the corner values (band 2) */

/* atan2 of |cross| and dot: acos near 1 would turn float round-off into 1e-4 rad. */
static double angle_between(const float n[3], const double v[3]) {
  double cr[3] = {n[1] * v[2] - n[2] * v[1], n[2] * v[0] - n[0] * v[2], n[0] * v[1] - n[1] * v[0]};
  return atan2(sqrt(cr[0] * cr[0] + cr[1] * cr[1] + cr[2] * cr[2]), n[0] * v[0] + n[1] * v[1] + n[2] * v[2]);
}

static void check_bounds(const vx_octree *t, const node_truth *tr, const char *what) {
  int bad_max = 0, bad_rms = 0;
  for (uint64_t i = 0; i < t->node_count; i++) {
    double bound = vx_err_decode(vx_node_errmax_code(t->nodes[i].info));
    uint32_t rc = vx_node_errrms_code(t->nodes[i].info);
    if (!(tr[i].maxerr <= bound * (1 + 1e-6) + 1e-9)) {
      if (!bad_max++)
        fprintf(stderr, "  %s node %llu: max error %.9g over bound %.9g\n", what,
                (unsigned long long)i, tr[i].maxerr, bound);
    }
    /* the RMS code is the rounded-up code of the brute-force RMS (within round-off) */
    double r = tr[i].rms;
    int ok = vx_err_decode(rc) >= r * (1 - 1e-9) - 1e-12 && (rc <= 1 || vx_err_decode(rc - 1) < r * (1 + 1e-6) + 1e-9);
    if (!ok && !bad_rms++)
      fprintf(stderr, "  %s node %llu: rms %.9g, code %u decodes to %.9g\n", what,
              (unsigned long long)i, r, rc, vx_err_decode(rc));
  }
  CHECK_MSG(bad_max == 0, "%s: %d nodes whose max error exceeds the bound", what, bad_max);
  CHECK_MSG(bad_rms == 0, "%s: %d nodes whose RMS code is off", what, bad_rms);
}

static void lod_planar_field_has_zero_error_at_every_level(void) {
  const double normals[3][3] = {{0.3, -0.5, 0.81}, {0, 0, 1}, {-0.7, 0.2, 0.1}};
  const double points[3][3] = {{31.3, 30.7, 32.1}, {10, 10, 20}, {17.2, 40.1, 33.3}};
  for (int k = 0; k < 3; k++) {
    shape s;
    memset(&s, 0, sizeof s);
    double l = sqrt(normals[k][0] * normals[k][0] + normals[k][1] * normals[k][1] + normals[k][2] * normals[k][2]);
    for (int j = 0; j < 3; j++) s.n[j] = normals[k][j] / l;
    s.d = -(s.n[0] * points[k][0] + s.n[1] * points[k][1] + s.n[2] * points[k][2]);
    vx_octree t;
    build_shape(6, &s, &t);
    CHECK(vx_octree_fit_planes(&t, NULL, NULL, NULL) == VX_OK);
    CHECK(vx_octree_validate(&t, NULL) == VX_OK);
    node_truth *tr = brute_force(&t, 0);
    double worst_ang[6] = {0}, worst_err[6] = {0}, worst_bound[6] = {0}, worst_exact[6] = {0}, worst_wide_ang = 0;
    uint64_t *ncode, *vcode;
    tree_codes(&t, &ncode, &vcode);
    int not_ok = 0;
    for (uint64_t i = 0; i < t.node_count; i++) {
      uint32_t lv = level_of(&t, i);
      float n[3];
      vx_oct_decode(t.nodes[i].normal, n);
      double ang = angle_between(n, s.n);
      /* |packed plane - exact plane| over the node's sample box: the surface itself */
      double size = ldexp(1.0, 6 - (int)lv), mn[3];
      uint32_t x, y, z;
      vx_morton_decode(ncode[i], &x, &y, &z);
      mn[0] = x * size;
      mn[1] = y * size;
      mn[2] = z * size;
      for (int c = 0; c < 8; c++) {
        double px = tr[i].lo[0] + (c & 1) * (tr[i].hi[0] - tr[i].lo[0]);
        double py = tr[i].lo[1] + (c >> 1 & 1) * (tr[i].hi[1] - tr[i].lo[1]);
        double pz = tr[i].lo[2] + (c >> 2 & 1) * (tr[i].hi[2] - tr[i].lo[2]);
        double dev = fabs(packed_eval(&t.nodes[i], size, mn, px, py, pz) - shape_dist(&s, px, py, pz));
        if (dev > worst_exact[lv]) worst_exact[lv] = dev;
      }
      double bound = vx_err_decode(vx_node_errmax_code(t.nodes[i].info));
      /* The normal of a small patch (the plane clipping a corner of the node) is set by few
       * rounded samples; over a patch at least 16 voxels wide in two directions it must be as
       * good as a step over the patch. */
      double ext[3] = {tr[i].hi[0] - tr[i].lo[0], tr[i].hi[1] - tr[i].lo[1], tr[i].hi[2] - tr[i].lo[2]};
      int wide = (ext[0] >= 16) + (ext[1] >= 16) + (ext[2] >= 16);
      if (wide >= 2) {
        if (ang > worst_wide_ang) worst_wide_ang = ang;
        CHECK_MSG(ang <= STEP / 16, "level %u node %llu: normal off by %g rad", lv, (unsigned long long)i, ang);
      }
      if (ang > worst_ang[lv]) worst_ang[lv] = ang;
      if (tr[i].maxerr > worst_err[lv]) worst_err[lv] = tr[i].maxerr;
      if (bound > worst_bound[lv]) worst_bound[lv] = bound;
      not_ok += !(vx_node_flags(t.nodes[i].info) & VX_NODE_PLANE_OK);
    }
    CHECK(not_ok == 0);
    fprintf(stderr, "  plane %d (%llu voxels): level, max normal angle (rad), max |plane - f|, "
                    "max |plane - exact| on the sample box, max bound\n",
            k, (unsigned long long)t.voxel_count);
    for (uint32_t lv = 0; lv < 6; lv++) {
      fprintf(stderr, "    %u  %.3g  %.4f  %.4f  %.4f\n", lv, worst_ang[lv], worst_err[lv], worst_exact[lv],
              worst_bound[lv]);
      CHECK_MSG(worst_exact[lv] <= STEP, "level %u: plane off the exact plane by %g", lv, worst_exact[lv]);
      /* The samples are the plane's distances rounded to STEP: the fit is off by at most half a
       * step, the stored plane by its packing error on top. */
      CHECK_MSG(worst_err[lv] <= STEP, "level %u: error %g > step %g", lv, worst_err[lv], STEP);
      CHECK_MSG(worst_bound[lv] <= 2 * STEP, "level %u: bound %g > 2 steps", lv, worst_bound[lv]);
    }
    fprintf(stderr, "    max normal angle over patches >= 16 voxels wide: %.3g rad\n", worst_wide_ang);
    check_bounds(&t, tr, "plane");
    free(ncode);
    free(vcode);
    free(tr);
    vx_octree_free(&t);
  }
}

static shape sphere_shape(uint32_t depth) {
  shape s;
  memset(&s, 0, sizeof s);
  s.sphere = 1;
  double R = ldexp(1.0, (int)depth);
  s.o[0] = 0.5 * R + 0.31;
  s.o[1] = 0.5 * R - 0.17;
  s.o[2] = 0.5 * R + 0.05;
  s.r = R / 3.0;
  return s;
}

static void lod_sphere_error_shrinks_with_depth(void) {
  const uint32_t D = 7;
  shape s = sphere_shape(D);
  vx_octree t;
  build_shape(D, &s, &t);
  CHECK(vx_octree_fit_planes(&t, NULL, NULL, NULL) == VX_OK);
  CHECK(vx_octree_validate(&t, NULL) == VX_OK);
  node_truth *tr = brute_force(&t, 0);
  double bound_max[VX_MAX_DEPTH] = {0}, err_max[VX_MAX_DEPTH] = {0}, rms2[VX_MAX_DEPTH] = {0};
  double code_rms2[VX_MAX_DEPTH] = {0}, samples[VX_MAX_DEPTH] = {0};
  uint64_t ok[VX_MAX_DEPTH] = {0};
  for (uint64_t i = 0; i < t.node_count; i++) {
    uint32_t lv = level_of(&t, i);
    double bound = vx_err_decode(vx_node_errmax_code(t.nodes[i].info));
    double rc = vx_err_decode(vx_node_errrms_code(t.nodes[i].info));
    if (bound > bound_max[lv]) bound_max[lv] = bound;
    if (tr[i].maxerr > err_max[lv]) err_max[lv] = tr[i].maxerr;
    rms2[lv] += tr[i].rms * tr[i].rms * tr[i].count;
    code_rms2[lv] += rc * rc * tr[i].count;
    samples[lv] += tr[i].count;
    ok[lv] += (vx_node_flags(t.nodes[i].info) & VX_NODE_PLANE_OK) != 0;
  }
  fprintf(stderr, "  sphere r=%.2f at depth %u, %llu voxels\n", s.r, D, (unsigned long long)t.voxel_count);
  fprintf(stderr, "  level  nodes  plane_ok  max_bound  max_err  rms(brute)  rms(codes)  ratio(rms)\n");
  double rms[VX_MAX_DEPTH];
  for (uint32_t lv = 0; lv < D; lv++) {
    rms[lv] = sqrt(rms2[lv] / samples[lv]);
    fprintf(stderr, "  %5u %6llu %9llu %10.4f %8.4f %11.5f %11.5f %8.2f\n", lv,
            (unsigned long long)t.level_count[lv], (unsigned long long)ok[lv], bound_max[lv],
            err_max[lv], rms[lv], sqrt(code_rms2[lv] / samples[lv]), lv ? rms[lv - 1] / rms[lv] : 0.0);
  }
  /* Error shrinks monotonically with depth below the root (the root sees the whole sphere). */
  for (uint32_t lv = 2; lv < D; lv++) {
    CHECK_MSG(bound_max[lv] < bound_max[lv - 1], "bound: level %u %g vs %g", lv, bound_max[lv], bound_max[lv - 1]);
    CHECK_MSG(err_max[lv] < err_max[lv - 1], "max: level %u %g vs %g", lv, err_max[lv], err_max[lv - 1]);
    CHECK_MSG(rms[lv] < rms[lv - 1], "rms: level %u %g vs %g", lv, rms[lv], rms[lv - 1]);
  }
  /* A curved surface of radius r deviates from its tangent plane by about s^2 / (8r) over a
   * patch of size s: the RMS falls about 4x per level while the node is large against the
   * quantization step and small against r. */
  for (uint32_t lv = 3; lv + 1 < D; lv++) {
    double ratio = rms[lv - 1] / rms[lv];
    CHECK_MSG(ratio > 2.5 && ratio < 6.0, "level %u: rms ratio %g", lv, ratio);
  }
  check_bounds(&t, tr, "sphere");
  free(tr);
  vx_octree_free(&t);
}

/* A field that no plane fits (random corner values on random voxels): the bound must still hold. */
/* The drawn-plane bound (node.h) against brute force: for every node N and every node c below
 * it, |Pc - P_N| at the 8 corners of c's box (the extremes of an affine function over the box)
 * must not exceed N's decoded bound; level D-1 nodes have bound 0 (code 1); code 0 (none) only
 * where a node below lacks a usable plane or the bound leaves the code's range. */
static void check_drawn_bounds(const vx_octree *t, const char *what) {
  uint64_t *ncode, *vcode;
  tree_codes(t, &ncode, &vcode);
  const uint32_t D = t->depth;
  uint64_t *stack = (uint64_t *)malloc((t->node_count + 1) * sizeof *stack);
  uint64_t checked = 0, bad = 0, none = 0, none_unexplained = 0;
  double worst_ratio = 0.0;
  for (uint64_t i = 0; i < t->node_count; i++) {
    uint32_t l = level_of(t, i), code = vx_node_bound_code(t->nodes[i].info);
    if (l + 1 == D) {
      bad += code != 1u;
      continue;
    }
    double size = ldexp(1.0, (int)(D - l)), mn[3];
    uint32_t x, y, z;
    vx_morton_decode(ncode[i], &x, &y, &z);
    mn[0] = x * size;
    mn[1] = y * size;
    mn[2] = z * size;
    double worst = 0.0;
    int all_ok = 1;
    uint64_t sp = 0;
    /* descendants: the children ranges, level by level (node levels only) */
    uint32_t pc = vx_popcount8(vx_node_mask(t->nodes[i].info));
    for (uint32_t k = 0; k < pc; k++) stack[sp++] = t->nodes[i].child + k;
    while (sp > 0) {
      uint64_t c = stack[--sp];
      const vx_node *nc = &t->nodes[c];
      uint32_t lc = level_of(t, c);
      all_ok &= (vx_node_flags(nc->info) & VX_NODE_PLANE_OK) != 0;
      double sc = ldexp(1.0, (int)(D - lc)), mc[3];
      vx_morton_decode(ncode[c], &x, &y, &z);
      mc[0] = x * sc;
      mc[1] = y * sc;
      mc[2] = z * sc;
      for (int k = 0; k < 8; k++) {
        double px = mc[0] + (k & 1) * sc, py = mc[1] + (k >> 1 & 1) * sc, pz = mc[2] + (k >> 2 & 1) * sc;
        double dv = fabs(packed_eval(nc, sc, mc, px, py, pz) - packed_eval(&t->nodes[i], size, mn, px, py, pz));
        if (dv > worst) worst = dv;
      }
      if (lc + 1 < D) {
        uint32_t cc = vx_popcount8(vx_node_mask(nc->info));
        for (uint32_t k = 0; k < cc; k++) stack[sp++] = nc->child + k;
      }
    }
    if (code == 0u) {
      none++;
      none_unexplained += all_ok && worst <= 600.0;
      continue;
    }
    checked++;
    double b = (double)vx_bound_decode(code);
    bad += worst > b;
    if (b > 0.0 && worst / b > worst_ratio) worst_ratio = worst / b;
  }
  CHECK_MSG(bad == 0, "%s: %llu nodes' drawn-plane bounds are too small", what, (unsigned long long)bad);
  CHECK_MSG(none_unexplained == 0, "%s: %llu nodes without a bound that could have one", what,
            (unsigned long long)none_unexplained);
  CHECK_MSG(checked > 0, "%s: no node above level D-1 has a bound", what);
  fprintf(stderr, "  %s: drawn-plane bounds hold on %llu nodes (tightest at %.2f of the bound), %llu without\n",
          what, (unsigned long long)checked, worst_ratio, (unsigned long long)none);
  free(stack);
  free(ncode);
  free(vcode);
}

static void lod_bound_holds_on_random_fields(void) {
  for (int trial = 0; trial < 5; trial++) {
    const uint32_t D = 5;
    uint64_t cells = (uint64_t)1 << (3 * D), n = 0;
    uint64_t *codes = (uint64_t *)malloc(cells * sizeof *codes);
    vx_voxel *field = (vx_voxel *)malloc(cells * sizeof *field);
    for (uint64_t m = 0; m < cells; m++) {
      if (urand() > 0.05 + 0.1 * trial) continue;
      for (int c = 0; c < 8; c++) field[n].c[c] = (int8_t)(254 * urand() - 127);
      codes[n++] = m;
    }
    vx_octree t;
    CHECK(vx_octree_build(D, codes, field, n, &t, NULL) == VX_OK);
    t.band = BAND;
    t.xf.scale = 1.0;
    CHECK(vx_octree_fit_planes(&t, NULL, NULL, NULL) == VX_OK);
    CHECK(vx_octree_validate(&t, NULL) == VX_OK);
    node_truth *tr = brute_force(&t, 0);
    check_bounds(&t, tr, "random");
    check_drawn_bounds(&t, "random");
    free(tr);
    vx_octree_free(&t);
    free(codes);
    free(field);
  }
  /* and on the sphere at depth 6 */
  shape s = sphere_shape(6);
  vx_octree t;
  build_shape(6, &s, &t);
  CHECK(vx_octree_fit_planes(&t, NULL, NULL, NULL) == VX_OK);
  node_truth *tr = brute_force(&t, 0);
  check_bounds(&t, tr, "sphere6");
  check_drawn_bounds(&t, "sphere6");
  free(tr);
  vx_octree_free(&t);
}

/* Packing error: the stored normal against the direct least-squares normal, and the stored
 * offset against the offset of the unit-gradient plane with that exact normal (see lod.c). */
static void lod_packed_plane_quantization_error(void) {
  shape s = sphere_shape(6);
  vx_octree t;
  build_shape(6, &s, &t);
  CHECK(vx_octree_fit_planes(&t, NULL, NULL, NULL) == VX_OK);
  node_truth *tr = brute_force(&t, 1);
  double worst_ang = 0, worst_d = 0, worst_d_rel = 0;
  for (uint64_t i = 0; i < t.node_count; i++) {
    if (!(vx_node_flags(t.nodes[i].info) & VX_NODE_PLANE_OK)) continue;
    double size = ldexp(1.0, 6 - (int)level_of(&t, i)), h = 0.5 * size;
    double g = sqrt(tr[i].a[0] * tr[i].a[0] + tr[i].a[1] * tr[i].a[1] + tr[i].a[2] * tr[i].a[2]);
    double n[3] = {tr[i].a[0] / g, tr[i].a[1] / g, tr[i].a[2] / g};
    float pn[3];
    vx_oct_decode(t.nodes[i].normal, pn);
    double ang = angle_between(pn, n);
    /* unit-gradient plane through the means: value at the centre = mf - n.(m - centre) */
    double dc = tr[i].mf - (n[0] * (tr[i].m[0] - h) + n[1] * (tr[i].m[1] - h) + n[2] * (tr[i].m[2] - h));
    double dd = fabs((double)t.nodes[i].d * size - dc);
    if (ang > worst_ang) worst_ang = ang;
    if (dd > worst_d) worst_d = dd;
    if (dd / size > worst_d_rel) worst_d_rel = dd / size;
  }
  fprintf(stderr, "  packing: max normal angle %.3g rad (%.4f deg), max offset error %.3g voxels "
                  "(%.3g node sizes)\n", worst_ang, worst_ang * 57.29577951308232, worst_d, worst_d_rel);
  /* 16-bit octahedral: a cell is ~2/65535 wide in u, v, i.e. at most ~3e-5 rad off. */
  CHECK(worst_ang < 1e-4);
  /* the offset moves by the tilt times the distance of the sample mean from the centre (< size) */
  CHECK(worst_d_rel < 2e-4);
  free(tr);
  vx_octree_free(&t);
}

static void lod_plane_eval_follows_node_definition(void) {
  vx_node nd;
  memset(&nd, 0, sizeof nd);
  double v[3] = {0.2, -0.4, 0.7}, l = sqrt(0.04 + 0.16 + 0.49);
  nd.normal = vx_oct_encode(v[0] / l, v[1] / l, v[2] / l);
  nd.d = 0.125f;
  float n[3];
  vx_oct_decode(nd.normal, n);
  const uint32_t depth = 8, level = 3;
  double size = 32.0, mn[3] = {64, 96, 160};
  for (int i = 0; i < 100; i++) {
    double p[3] = {mn[0] + size * urand(), mn[1] + size * urand(), mn[2] + size * urand()};
    double u[3] = {(p[0] - mn[0]) / size, (p[1] - mn[1]) / size, (p[2] - mn[2]) / size};
    double want = size * (n[0] * (u[0] - 0.5) + n[1] * (u[1] - 0.5) + n[2] * (u[2] - 0.5) + 0.125);
    CHECK_NEAR(vx_node_plane_eval(&nd, depth, level, mn, p), want, 1e-4);
  }
}

/* ---- pruning ------------------------------------------------------------------------------------- */

static void lod_prune_zero_changes_nothing(void) {
  shape s = sphere_shape(6);
  vx_octree t, c;
  build_shape(6, &s, &t);
  CHECK(vx_octree_fit_planes(&t, NULL, NULL, NULL) == VX_OK);
  clone_tree(&t, &c);
  CHECK(vx_octree_prune(&c, 0.0f, NULL) == VX_OK);
  CHECK(vx_octree_prune(&c, -1.0f, NULL) == VX_OK);
  CHECK(vx_octree_prune(&c, NAN, NULL) == VX_OK);
  CHECK(c.nodes == NULL || memcmp(c.nodes, t.nodes, t.node_count * sizeof(vx_node)) == 0);
  CHECK(memcmp(c.voxels, t.voxels, t.voxel_count * sizeof(vx_voxel)) == 0);
  CHECK(c.node_count == t.node_count && c.voxel_count == t.voxel_count && c.prune_error == 0.0f);
  CHECK(memcmp(c.level_count, t.level_count, sizeof t.level_count) == 0);
  CHECK(memcmp(c.level_first, t.level_first, sizeof t.level_first) == 0);
  vx_octree_free(&c);
  vx_octree_free(&t);
}

/* Finds the node at (level, code) in t by walking from the root; -1 when absent or below a leaf. */
static int64_t find_node(const vx_octree *t, uint32_t level, uint64_t code) {
  uint64_t i = 0;
  for (uint32_t l = 0; l < level; l++) {
    uint32_t mask = vx_node_mask(t->nodes[i].info), slot = (uint32_t)(code >> (3 * (level - l - 1))) & 7u;
    if (!(mask >> slot & 1u)) return -1;
    i = vx_child_index(t->nodes[i].child, mask, slot);
  }
  return (int64_t)i;
}

static void lod_prune_keeps_nodes_over_the_error(void) {
  const uint32_t D = 6;
  shape s = sphere_shape(D);
  vx_octree t;
  build_shape(D, &s, &t);
  CHECK(vx_octree_fit_planes(&t, NULL, NULL, NULL) == VX_OK);
  uint64_t *ncode, *vcode;
  tree_codes(&t, &ncode, &vcode);
  const float Es[5] = {0.01f, 0.05f, 0.2f, 1.0f, 1e4f};
  for (int k = 0; k < 5; k++) {
    const float E = Es[k];
    vx_octree p;
    clone_tree(&t, &p);
    vx_error e;
    CHECK(vx_octree_prune(&p, E, &e) == VX_OK);
    vx_status vs = vx_octree_validate(&p, &e);
    CHECK_MSG(vs == VX_OK, "%s", e.msg);
    CHECK(p.prune_error == E);
    /* Brute force over the original tree: a node survives exactly when no proper ancestor is
     * prunable; it becomes a leaf when it is prunable itself. */
    uint64_t want_nodes = 0, want_leaves = 0, want_voxels = 0, got_leaves = 0;
    int bad = 0;
    for (uint64_t i = 0; i < t.node_count; i++) {
      uint32_t lv = level_of(&t, i);
      int alive = 1;
      for (uint32_t a = 0; a < lv && alive; a++) {
        int64_t j = find_node(&t, a, ncode[i] >> (3 * (lv - a)));
        uint32_t info = t.nodes[j].info;
        if ((vx_node_flags(info) & VX_NODE_PLANE_OK) && vx_err_decode(vx_node_errmax_code(info)) <= E)
          alive = 0;
      }
      uint32_t info = t.nodes[i].info;
      int prunable = (vx_node_flags(info) & VX_NODE_PLANE_OK) && vx_err_decode(vx_node_errmax_code(info)) <= E;
      /* bounds only grow towards the root, so a node over E never has a prunable ancestor */
      if (vx_err_decode(vx_node_errmax_code(info)) > E && !alive) bad++;
      int64_t j = find_node(&p, lv, ncode[i]);
      if (!alive) {
        if (j >= 0) bad++;
        continue;
      }
      want_nodes++;
      if (j < 0) {
        bad++;
        continue;
      }
      uint32_t pinfo = p.nodes[j].info;
      if (prunable) {
        want_leaves++;
        if (vx_node_mask(pinfo) != 0 || !(vx_node_flags(pinfo) & VX_NODE_PRUNED)) bad++;
      } else {
        if (pinfo != info || memcmp(&p.nodes[j].normal, &t.nodes[i].normal, 8) != 0) bad++;
        if (lv + 1 == D) want_voxels += vx_popcount8(vx_node_mask(info));
      }
      if (p.nodes[j].normal != t.nodes[i].normal || p.nodes[j].d != t.nodes[i].d) bad++;
    }
    for (uint64_t j = 0; j < p.node_count; j++) got_leaves += (vx_node_flags(p.nodes[j].info) & VX_NODE_PRUNED) != 0;
    CHECK_MSG(bad == 0, "E=%g: %d nodes kept or dropped wrongly", E, bad);
    CHECK(p.node_count == want_nodes);
    CHECK(got_leaves == want_leaves);
    CHECK(p.voxel_count == want_voxels);
    /* kept voxels are the original voxels under kept level D-1 nodes, in order */
    uint64_t *pn, *pv, vi = 0;
    tree_codes(&p, &pn, &pv);
    int vbad = 0;
    for (uint64_t v = 0; v < t.voxel_count && vi < p.voxel_count; v++)
      if (vcode[v] == pv[vi]) {
        if (memcmp(&t.voxels[v], &p.voxels[vi], sizeof(vx_voxel)) != 0) vbad++;
        vi++;
      }
    CHECK(vi == p.voxel_count && vbad == 0);
    fprintf(stderr, "  E=%-6g nodes %6llu -> %6llu, leaves %6llu, voxels %6llu -> %6llu\n", E,
            (unsigned long long)t.node_count, (unsigned long long)p.node_count,
            (unsigned long long)got_leaves, (unsigned long long)t.voxel_count,
            (unsigned long long)p.voxel_count);
    free(pn);
    free(pv);
    /* pruning a pruned tree again with the same E changes nothing; fitting it is refused */
    vx_octree q;
    clone_tree(&p, &q);
    CHECK(vx_octree_prune(&q, E, NULL) == VX_OK);
    CHECK(q.node_count == p.node_count && memcmp(q.nodes, p.nodes, p.node_count * sizeof(vx_node)) == 0);
    if (got_leaves) CHECK(vx_octree_fit_planes(&q, NULL, NULL, NULL) == VX_ERR_INVALID_ARG);
    vx_octree_free(&q);
    vx_octree_free(&p);
  }
  free(ncode);
  free(vcode);
  vx_octree_free(&t);
}

static int cancel_at_half(void *user, const char *phase, double f) {
  (void)phase;
  *(int *)user += 1;
  return f >= 0.5;
}

static void lod_fit_reports_progress_and_can_be_cancelled(void) {
  shape s = sphere_shape(5);
  vx_octree t;
  build_shape(5, &s, &t);
  int calls = 0;
  vx_error e;
  CHECK(vx_octree_fit_planes(&t, cancel_at_half, &calls, &e) == VX_ERR_INTERRUPTED);
  CHECK(calls >= 2 && calls < 100); /* stopped about half way, reported in ~1% steps */
  CHECK(e.status == VX_ERR_INTERRUPTED);
  vx_octree_free(&t);
}

int main(void) {
  RUN(lod_moments_fit_matches_direct_least_squares);
  RUN(lod_moments_fit_degenerate_gives_minimum_norm);
  RUN(lod_moments_merge_with_shift_equals_shifted_accumulation);
  RUN(lod_plane_eval_follows_node_definition);
  RUN(lod_planar_field_has_zero_error_at_every_level);
  RUN(lod_sphere_error_shrinks_with_depth);
  RUN(lod_bound_holds_on_random_fields);
  RUN(lod_packed_plane_quantization_error);
  RUN(lod_prune_zero_changes_nothing);
  RUN(lod_prune_keeps_nodes_over_the_error);
  RUN(lod_fit_reports_progress_and_can_be_cancelled);
  return check_summary();
}
