/* SPDX-License-Identifier: Apache-2.0 */
/* dc_bound.c - the error cut's promise: every face it emits lies within max_error of the
 * full-detail surface, and every full-detail vertex within max_error of the faces.
 *
 * The cut starts from the nodes whose stored bound (lod.h: the plane's fit to the field samples)
 * is within max_error. That bound is about the field, not about the geometry dual contouring
 * emits from it: a node's vertex may sit off the surface, a face joins vertices of cells of
 * different sizes and cuts corners, and a thin part or a hole inside a node vanishes from it.
 * So the geometry is checked, after each pass of vertices and faces, and the nodes whose
 * geometry fails are vetoed (their children are tried in the next pass) until none fails; a
 * voxel is always within (it is the full-detail mesh's own cell), so this ends.
 *
 * Faces to the surface. For a point q of a face each of its cells offers an upper bound of the
 * distance from q to the full-detail surface: a voxel its own vertex, which is a vertex of the
 * full-detail mesh (|q - v|); a node X the plane through its vertex with its normal, from which
 * the full-detail vertices inside X lie at signed distances mid(X) -+ slab(X) (dc_vertex.c), so
 * |n.(q - v) - mid(X)| + slab(X) (this assumes the surface inside X spans the plane under q, as
 * it does away from holes, which are refined apart, and from thin ends, which the fans catch). The
 * face is within the bound where the smallest of these is, at every point: checked at once when
 * one node's plane bound holds at every corner of the face (then on all of it), else on both
 * triangulations of the face by subdivision (triangle_within; within DC_CHECK_TOL). A failing
 * face vetoes its largest node cells.
 *
 * The surface to the faces. Every full-detail vertex inside a node of the cut must lie within
 * max_error of the node's faces (its fan: the faces around the minimal edges on its boundary;
 * a quad counts by the farther of its two triangulations), exactly, point to triangle. A node
 * with full-detail vertices and no face (a part inside it vanished) fails too.
 *
 * Holes and split contacts. A sign change next to a place outside the tree (open input) has no
 * face, and at a coarse cell that gap is larger than at full detail: the nodes along every hole
 * of the full-detail mesh are split down to its voxels (dc_veto_holes, once), and those along a
 * hole of the cut as it appears (check_holes). A contact that two sheets pass through gets a
 * vertex of its own placed from its two cells' vertices (dc_mesh.c): exact only between voxels,
 * so the nodes of such contacts are split.
 */
#include "mesher/dc_internal.h"
#include "sys/system.h"

#include <math.h>
#include <stdlib.h>

/* ---- the faces to the surface ---------------------------------------------------------------- */

/* Subdivision stops where a piece is this small (finest voxels); a piece still undecided there
 * counts as beyond the bound. */
#define DC_CHECK_TOL 0.02

typedef struct bound_cell {
  double v[3], n[3], slab, mid;
  int node;
} bound_cell;

static double cell_bound(const bound_cell *c, const double q[3]);

static double bound_at(const bound_cell *c, int k, const double q[3]) {
  double best = INFINITY;
  for (int i = 0; i < k; i++) best = fmin(best, cell_bound(&c[i], q));
  return best;
}

static double dist3(const double *a, const double *b) {
  return sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) +
              (a[2] - b[2]) * (a[2] - b[2]));
}

/* One cell's bound at q. */
static double cell_bound(const bound_cell *c, const double q[3]) {
  double d[3] = {q[0] - c->v[0], q[1] - c->v[1], q[2] - c->v[2]};
  if (c->node) return fabs(c->n[0] * d[0] + c->n[1] * d[1] + c->n[2] * d[2] - c->mid) + c->slab;
  return sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
}

/* 1 when the bound of the face's cells (their smallest at each point) is <= E on all of
 * triangle (a, b, c). Each cell's own bound is convex (|affine| + constant, or a distance to a
 * point), so over the triangle it is largest at a corner: the triangle is accepted when one
 * cell's bound is <= E at all three corners, rejected when the smallest bound at a corner
 * exceeds E, and otherwise split in four at its edges' midpoints, down to DC_CHECK_TOL (where
 * the 1-Lipschitz bound at the centroid plus the circumradius decides). */
static int triangle_within(const bound_cell *cells, int k, const double *a, const double *b,
                           const double *c, double E, int depth) {
  double lo = 0.0, hi = INFINITY; /* largest of the corners' smallest; smallest cell maximum */
  double m[3] = {INFINITY, INFINITY, INFINITY};
  for (int i = 0; i < k; i++) {
    double ga = cell_bound(&cells[i], a), gb = cell_bound(&cells[i], b),
           gc = cell_bound(&cells[i], c);
    hi = fmin(hi, fmax(ga, fmax(gb, gc)));
    m[0] = fmin(m[0], ga), m[1] = fmin(m[1], gb), m[2] = fmin(m[2], gc);
  }
  lo = fmax(m[0], fmax(m[1], m[2]));
  if (lo > E) return 0;
  if (hi <= E) return 1;
  double g[3];
  for (int x = 0; x < 3; x++) g[x] = (a[x] + b[x] + c[x]) / 3.0;
  double f = bound_at(cells, k, g);
  if (f > E) return 0;
  double r = fmax(dist3(g, a), fmax(dist3(g, b), dist3(g, c)));
  if (f + r <= E) return 1;
  if (r <= DC_CHECK_TOL || depth >= 24) return 0; /* unresolved: counted as beyond */
  double ab[3], bc[3], ca[3];
  for (int x = 0; x < 3; x++) {
    ab[x] = 0.5 * (a[x] + b[x]);
    bc[x] = 0.5 * (b[x] + c[x]);
    ca[x] = 0.5 * (c[x] + a[x]);
  }
  return triangle_within(cells, k, a, ab, ca, E, depth + 1) &&
         triangle_within(cells, k, ab, b, bc, E, depth + 1) &&
         triangle_within(cells, k, ca, bc, c, E, depth + 1) &&
         triangle_within(cells, k, ab, bc, ca, E, depth + 1);
}

static uint64_t check_faces(const dc_tree *T, const dc_verts *V, const dc_face *faces, uint64_t n) {
  uint64_t vetoed = 0;
  const double E = (double)T->max_error;
  for (uint64_t fi = 0; fi < n; fi++) {
    const dc_face *f = &faces[fi];
    int k = f->c[3] == DC_NONE ? 3 : 4, nodes = 0;
    uint32_t coarsest = T->D;
    bound_cell cells[4];
    for (int i = 0; i < k; i++) {
      uint32_t X = f->c[i];
      const float *px = V->pos + (X - V->lo) * 3, *nx = V->nrm + (X - V->lo) * 3;
      for (int x = 0; x < 3; x++) cells[i].v[x] = px[x], cells[i].n[x] = nx[x];
      cells[i].node = X < T->node_count;
      cells[i].slab = cells[i].node ? (double)V->slab[X] : 0.0;
      cells[i].mid = cells[i].node ? (double)V->mid[X] : 0.0;
      if (!cells[i].node) continue;
      nodes++;
      uint32_t lev = (uint32_t)(V->box[X] >> 56);
      if (lev < coarsest) coarsest = lev;
    }
    if (!nodes) continue;
    /* Quick accept: one node's plane bound holds at every corner, hence on the whole face. */
    int inside = 0;
    for (int i = 0; i < k && !inside; i++) {
      if (!cells[i].node) continue;
      double worst = 0.0;
      for (int j = 0; j < k; j++) worst = fmax(worst, cell_bound(&cells[i], cells[j].v));
      inside = worst <= E;
    }
    if (inside) continue;
    int bad;
    if (k == 3) {
      bad = !triangle_within(cells, k, cells[0].v, cells[1].v, cells[2].v, E, 0);
    } else {
      bad = 0;
      for (int o = 0; o < 4 && !bad; o++)
        bad = !triangle_within(cells, k, cells[o].v, cells[(o + 1) % 4].v, cells[(o + 2) % 4].v,
                               E, 0);
    }
    if (!bad) continue;
    for (int i = 0; i < k; i++) {
      uint32_t X = f->c[i];
      if (X >= T->node_count || (uint32_t)(V->box[X] >> 56) != coarsest || T->veto[X]) continue;
      T->veto[X] = 1;
      vetoed++;
    }
  }
  return vetoed;
}

/* ---- the surface to the faces ----------------------------------------------------------------- */

static double dot3(const double *a, const double *b) {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

/* Squared distance from p to triangle (a, b, c) (Ericson, Real-Time Collision Detection, 5.1.5). */
static double tri_dist2(const double p[3], const double a[3], const double b[3], const double c[3]) {
  double ab[3], ac[3], ap[3], q[3];
  for (int i = 0; i < 3; i++) ab[i] = b[i] - a[i], ac[i] = c[i] - a[i], ap[i] = p[i] - a[i];
  double d1 = dot3(ab, ap), d2 = dot3(ac, ap);
  if (d1 <= 0 && d2 <= 0) {
    for (int i = 0; i < 3; i++) q[i] = a[i];
  } else {
    double bp[3], cp[3];
    for (int i = 0; i < 3; i++) bp[i] = p[i] - b[i], cp[i] = p[i] - c[i];
    double d3 = dot3(ab, bp), d4 = dot3(ac, bp), d5 = dot3(ab, cp), d6 = dot3(ac, cp);
    double vc = d1 * d4 - d3 * d2, vb = d5 * d2 - d1 * d6, va = d3 * d6 - d5 * d4;
    if (d3 >= 0 && d4 <= d3) {
      for (int i = 0; i < 3; i++) q[i] = b[i];
    } else if (vc <= 0 && d1 >= 0 && d3 <= 0) {
      double v = d1 / (d1 - d3);
      for (int i = 0; i < 3; i++) q[i] = a[i] + v * ab[i];
    } else if (d6 >= 0 && d5 <= d6) {
      for (int i = 0; i < 3; i++) q[i] = c[i];
    } else if (vb <= 0 && d2 >= 0 && d6 <= 0) {
      double w = d2 / (d2 - d6);
      for (int i = 0; i < 3; i++) q[i] = a[i] + w * ac[i];
    } else if (va <= 0 && (d4 - d3) >= 0 && (d5 - d6) >= 0) {
      double w = (d4 - d3) / ((d4 - d3) + (d5 - d6));
      for (int i = 0; i < 3; i++) q[i] = b[i] + w * (c[i] - b[i]);
    } else {
      double den = va + vb + vc;
      double v = den != 0.0 ? vb / den : 0.0, w = den != 0.0 ? vc / den : 0.0;
      for (int i = 0; i < 3; i++) q[i] = a[i] + ab[i] * v + ac[i] * w;
    }
  }
  double d = 0.0;
  for (int i = 0; i < 3; i++) d += (p[i] - q[i]) * (p[i] - q[i]);
  return d;
}

/* Squared distance from p to face f, as the farther of its triangulations. */
static double face_dist2(const dc_verts *V, const dc_face *f, const double p[3]) {
  int k = f->c[3] == DC_NONE ? 3 : 4;
  double v[4][3];
  for (int i = 0; i < k; i++) {
    const float *q = V->pos + (f->c[i] - V->lo) * 3;
    for (int x = 0; x < 3; x++) v[i][x] = q[x];
  }
  if (k == 3) return tri_dist2(p, v[0], v[1], v[2]);
  double a = fmin(tri_dist2(p, v[0], v[1], v[2]), tri_dist2(p, v[0], v[2], v[3]));
  double b = fmin(tri_dist2(p, v[1], v[2], v[3]), tri_dist2(p, v[1], v[3], v[0]));
  return fmax(a, b);
}

typedef struct fan_ctx {
  const dc_tree *T;
  const dc_verts *V;
  const dc_face *faces;
  const uint32_t *fan;   /* face indices, by node */
  uint64_t begin, end;   /* this node's range in fan */
  uint64_t last;         /* the fan face that held the previous vertex: tried first */
  double E2;
} fan_ctx;

/* 1 when every full-detail vertex below cell (level, idx) lies within the bound of the fan. */
static int subtree_covered(fan_ctx *x, uint32_t level, uint32_t idx) {
  const dc_tree *T = x->T;
  if (level == T->D) {
    uint64_t id = T->node_count + idx - x->V->lo;
    if (x->V->placed[id] != 1) return 1;
    const float *w = x->V->pos + id * 3;
    double p[3] = {w[0], w[1], w[2]};
    if (x->last < x->end && face_dist2(x->V, &x->faces[x->fan[x->last]], p) <= x->E2) return 1;
    for (uint64_t k = x->begin; k < x->end; k++)
      if (k != x->last && face_dist2(x->V, &x->faces[x->fan[k]], p) <= x->E2) {
        x->last = k;
        return 1;
      }
    return 0;
  }
  const vx_node *nd = &T->t->nodes[idx];
  uint32_t mask = vx_node_mask(nd->info);
  for (uint32_t s = 0; s < 8; s++)
    if ((mask >> s & 1u) && !subtree_covered(x, level + 1, vx_child_index(nd->child, mask, s)))
      return 0;
  return 1;
}

/* Vetoes the nodes of the cut whose full-detail vertices are not all within the bound of their
 * faces. Returns how many, or UINT64_MAX when out of memory. */
static uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* A node whose fan is the same as in the pass before (same faces, same cells: its signature,
 * an order-free hash of them) and held then, holds now: V->fan_sig keeps the signature of the
 * last fan that held (0: none). */
static uint64_t check_fans(const dc_tree *T, const dc_verts *V, const dc_face *faces, uint64_t n) {
  const uint64_t nn = T->node_count;
  uint64_t *start = (uint64_t *)vx_calloc((size_t)nn + 1, sizeof(uint64_t));
  if (!start) return UINT64_MAX;
  for (uint64_t fi = 0; fi < n; fi++)
    for (int i = 0; i < 4 && faces[fi].c[i] != DC_NONE; i++)
      if (faces[fi].c[i] < nn) start[faces[fi].c[i] + 1]++;
  for (uint64_t i = 0; i < nn; i++) start[i + 1] += start[i];
  uint32_t *fan = (uint32_t *)vx_malloc((size_t)(start[nn] ? start[nn] : 1) * sizeof(uint32_t));
  uint64_t *at = (uint64_t *)vx_malloc((size_t)(nn ? nn : 1) * sizeof(uint64_t));
  if (!fan || !at) {
    vx_free(start);
    vx_free(fan);
    vx_free(at);
    return UINT64_MAX;
  }
  memcpy(at, start, (size_t)nn * sizeof(uint64_t));
  for (uint64_t fi = 0; fi < n; fi++)
    for (int i = 0; i < 4 && faces[fi].c[i] != DC_NONE; i++)
      if (faces[fi].c[i] < nn) fan[at[faces[fi].c[i]]++] = (uint32_t)fi;
  fan_ctx x;
  x.T = T;
  x.V = V;
  x.faces = faces;
  x.fan = fan;
  x.E2 = (double)T->max_error * (double)T->max_error;
  uint64_t vetoed = 0;
  for (uint64_t X = 0; X < nn; X++) {
    if (V->placed[X] != 1 || T->veto[X]) continue; /* not a cell of the cut */
    x.begin = start[X];
    x.end = start[X + 1];
    x.last = x.begin;
    uint64_t sig = 0x9e3779b97f4a7c15ull + (x.end - x.begin);
    for (uint64_t k = x.begin; k < x.end; k++) {
      const dc_face *f = &faces[fan[k]];
      sig += mix64(mix64(mix64(mix64(f->c[0]) ^ f->c[1]) ^ f->c[2]) ^ f->c[3]);
    }
    if (!sig) sig = 1;
    if (V->fan_sig[X] == sig) continue;
    if (!subtree_covered(&x, (uint32_t)(V->box[X] >> 56), (uint32_t)X)) {
      T->veto[X] = 1;
      vetoed++;
    } else {
      V->fan_sig[X] = sig;
    }
  }
    vx_free(start);
  vx_free(fan);
  vx_free(at);
  return vetoed;
}

/* ---- holes ------------------------------------------------------------------------------------ */

/* A sign change next to a place outside the tree (open input) has no face; at a coarse cut that
 * missing face is larger than at full detail, and a node's plane runs on past the rim of the
 * surface it holds. The nodes next to such a place are refined until the hole's rim is the
 * full-detail mesh's own. The records are dropped from faces; returns the vetoed count. */
/* Vetoes node idx (level, minimum corner c in finest coordinates) and every node below it whose
 * box touches the segment lo .. hi (finest coordinates, closed boxes). */
static uint64_t veto_along(const dc_tree *T, uint32_t level, uint32_t idx, const uint32_t c[3],
                           const uint32_t lo[3], const uint32_t hi[3]) {
  uint32_t s = 1u << (T->D - level);
  for (int i = 0; i < 3; i++)
    if (hi[i] < c[i] || lo[i] > c[i] + s) return 0;
  if (level == T->D) return 0;
  uint64_t n = !T->veto[idx];
  T->veto[idx] = 1;
  const vx_node *nd = &T->t->nodes[idx];
  uint32_t mask = vx_node_mask(nd->info);
  for (uint32_t k = 0; k < 8; k++) {
    if (!(mask >> k & 1u)) continue;
    uint32_t q[3] = {c[0] + (k & 1) * s / 2, c[1] + (k >> 1 & 1) * s / 2, c[2] + (k >> 2 & 1) * s / 2};
    n += veto_along(T, level + 1, vx_child_index(nd->child, mask, k), q, lo, hi);
  }
  return n;
}

static uint64_t check_holes(const dc_tree *T, const dc_verts *V, dc_face *faces, uint64_t *n) {
  uint64_t vetoed = 0, m = 0;
  for (uint64_t fi = 0; fi < *n; fi++) {
    if (!faces[fi].open) {
      faces[m++] = faces[fi];
      continue;
    }
    uint32_t lo[3], hi[3], axis = dc_edge_axis(faces[fi].edge);
    vx_morton_decode(dc_edge_morton(faces[fi].edge), &lo[0], &lo[1], &lo[2]);
    for (int i = 0; i < 3; i++) hi[i] = lo[i];
    hi[axis] += 1u << (T->D - dc_edge_level(faces[fi].edge));
    for (int i = 0; i < 4; i++) {
      uint32_t X = faces[fi].c[i], c[3];
      if (X == DC_NONE || X >= T->node_count) continue;
      vx_morton_decode(V->box[X] & ((UINT64_C(1) << 48) - 1), &c[0], &c[1], &c[2]);
      vetoed += veto_along(T, (uint32_t)(V->box[X] >> 56), X, c, lo, hi);
    }
  }
  *n = m;
  return vetoed;
}

/* A contact that two sheets pass through gets a vertex of its own between its two cells
 * (dc_mesh.c), placed from their vertices: exact between voxels, not between a voxel and a node.
 * Such nodes are refined. */
static uint64_t check_splits(const dc_tree *T, const dc_face *faces, uint64_t n) {
  uint64_t vetoed = 0;
  for (uint64_t fi = 0; fi < n; fi++) {
    const dc_face *f = &faces[fi];
    if (!f->split) continue;
    int k = f->c[3] == DC_NONE ? 3 : 4;
    for (int i = 0; i < k; i++) {
      if (!(f->split >> i & 1u)) continue;
      uint32_t ab[2] = {f->c[i], f->c[(i + 1) % k]};
      for (int j = 0; j < 2; j++)
        if (ab[j] < T->node_count && !T->veto[ab[j]]) {
          T->veto[ab[j]] = 1;
          vetoed++;
        }
    }
  }
  return vetoed;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* The same between two nodes: a side shared by more than two faces. UINT64_MAX: no memory. */
static uint64_t check_node_splits(const dc_tree *T, const dc_face *faces, uint64_t n) {
  uint64_t m = 0, vetoed = 0;
  for (uint64_t fi = 0; fi < n; fi++) {
    int k = faces[fi].c[3] == DC_NONE ? 3 : 4;
    for (int i = 0; i < k; i++)
      m += faces[fi].c[i] < T->node_count && faces[fi].c[(i + 1) % k] < T->node_count;
  }
  if (!m) return 0;
  uint64_t *side = (uint64_t *)vx_malloc((size_t)m * sizeof(uint64_t));
  if (!side) return UINT64_MAX;
  m = 0;
  for (uint64_t fi = 0; fi < n; fi++) {
    int k = faces[fi].c[3] == DC_NONE ? 3 : 4;
    for (int i = 0; i < k; i++) {
      uint64_t a = faces[fi].c[i], b = faces[fi].c[(i + 1) % k];
      if (a < T->node_count && b < T->node_count) side[m++] = a < b ? a << 32 | b : b << 32 | a;
    }
  }
  qsort(side, (size_t)m, sizeof *side, cmp_u64);
  for (uint64_t i = 0; i < m;) {
    uint64_t e = i + 1;
    while (e < m && side[e] == side[i]) e++;
    if (e - i > 2) {
      uint32_t ab[2] = {(uint32_t)(side[i] >> 32), (uint32_t)side[i]};
      for (int j = 0; j < 2; j++)
        if (!T->veto[ab[j]]) T->veto[ab[j]] = 1, vetoed++;
    }
    i = e;
  }
  vx_free(side);
  return vetoed;
}

uint64_t dc_veto_holes(const dc_tree *T, const dc_face *holes, uint64_t n) {
  uint64_t vetoed = 0;
  const uint32_t origin[3] = {0, 0, 0};
  for (uint64_t i = 0; i < n && T->node_count; i++) {
    uint32_t lo[3], hi[3], axis = dc_edge_axis(holes[i].edge);
    vx_morton_decode(dc_edge_morton(holes[i].edge), &lo[0], &lo[1], &lo[2]);
    for (int k = 0; k < 3; k++) hi[k] = lo[k];
    hi[axis] += 1u << (T->D - dc_edge_level(holes[i].edge));
    vetoed += veto_along(T, 0, 0, origin, lo, hi);
  }
  return vetoed;
}

uint64_t dc_check_bound(const dc_tree *T, const dc_verts *V, dc_face *faces, uint64_t *n) {
  uint64_t ns = check_node_splits(T, faces, *n);
  if (ns == UINT64_MAX) return ns;
  uint64_t h = check_holes(T, V, faces, n) + check_splits(T, faces, *n) + ns;
  uint64_t a = check_faces(T, V, faces, *n);
  uint64_t b = check_fans(T, V, faces, *n);
  return b == UINT64_MAX ? UINT64_MAX : h + a + b;
}
