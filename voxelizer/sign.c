/* sign.c - inside or outside: angle-weighted pseudo-normals of the closest feature.
 *
 * Rule (J. A. Baerentzen and H. Aanaes, "Signed distance computation using the angle weighted
 * pseudonormal", IEEE TVCG 2005): let q be the point of the mesh closest to p and n the
 * pseudo-normal of the feature q lies on - the face normal inside a face, the sum of the two face
 * normals on an edge, the sum of the incident face normals weighted by their angles at a vertex.
 * Then p is inside exactly when (p - q) . n < 0, for a closed, consistently oriented 2-manifold.
 * The voxelizer applies it to the closest triangle among the candidates of a corner (field.c);
 * that is the true closest point whenever the corner is within one voxel of the mesh.
 *
 * Adjacency is rebuilt from the triangle soup: vertices are welded by exact position (bitwise
 * equal floats, -0 = +0) and edges by their two welded vertices, with hash tables; vertex and edge
 * normals are accumulated in triangle order, so the result does not depend on threads.
 *
 * What the rule does on imperfect meshes (real scans), and so what the field shows:
 * - Holes (boundary edges, one triangle): the edge pseudo-normal is that triangle's normal, and a
 *   boundary vertex averages its incident faces only. Points whose closest feature is the rim get
 *   the side of the rim triangles' planes, so the sign flips across those planes extended past the
 *   rim: the zero set of the field continues the open surface by at most the voxels that hold the
 *   rim (only surface voxels carry values), and closes nothing across the hole. Away from the rim
 *   the sign is that of the closed case: a sphere with a polar hole has every corner right below
 *   the rim (tests/test_voxelizer_field.c). messy/sphereWithHole.stl (9 boundary edges) at 64^3:
 *   49% negative / 51% positive corners; 176 voxel edges change sign with no surface between
 *   them, which a true distance field never does (test_voxelizer_build prints these numbers for
 *   every messy mesh; the analytic holed sphere shows such flips only near its rim).
 * - Duplicate triangles with opposite windings (messy/degenerated.obj: the three coordinate
 *   planes' triangles, each twice, both ways; 6 non-manifold edges): normals cancel on shared
 *   edges and vertices. A pseudo-normal that cancels to (nearly) zero falls back to the closest
 *   triangle's own face normal, and of two coincident triangles the lower index wins the distance
 *   tie, so the sign follows the first-listed winding; such a mesh encloses nothing, and its signs
 *   say only which side of each plane a corner is on.
 * - Self-intersecting shells (messy/two-boxes-bad-self-union.ply, 8 boundary edges): each corner
 *   takes the side of its closest shell; no sign change without a surface between at 64^3.
 * - Folds (messy/cube_with_fold.ply: no boundary or non-manifold edges, a folded-in patch): the
 *   fold's pseudo-normals follow its own faces; 258 voxel edges change sign with no surface
 *   between them. The cube fills the grid, so nearly all its corners are inside or on faces.
 * - Inconsistent winding in general: the sign follows each triangle's own normal, so a flipped
 *   patch flips the sign next to it; edges between flipped and unflipped triangles cancel and
 *   fall back to the face normal.
 * A generalized winding number (Jacobson et al. 2013) would close holes smoothly but costs a
 * hierarchy over the whole mesh per corner; the pseudo-normal costs nothing beyond the distance.
 */
#include "voxelizer/internal.h"
#include "voxelizer/distance.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void vx_sign_free(vx_sign_data *s) {
  if (!s) return;
  free(s->face_n);
  free(s->edge_n);
  free(s->vid);
  free(s->vert_n);
  memset(s, 0, sizeof *s);
}

static uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

static uint32_t float_key(float f) {
  uint32_t u;
  if (f == 0.0f) f = 0.0f; /* -0 welds with +0 */
  memcpy(&u, &f, 4);
  return u;
}

static uint64_t table_size(uint64_t n) {
  uint64_t s = 16;
  while (s < 2 * n) s <<= 1;
  return s;
}

/* Welds the 3T corners by exact position; fills s->vid, returns the vertex count or -1 on NOMEM. */
static int64_t weld(const vx_mesh *m, uint32_t *vid) {
  uint64_t n = m->tri_count * 3, size = table_size(n), mask = size - 1;
  uint32_t *slot = (uint32_t *)malloc(size * sizeof *slot); /* first corner of the vertex + 1 */
  if (!slot) return -1;
  memset(slot, 0, size * sizeof *slot);
  uint32_t count = 0;
  for (uint64_t c = 0; c < n; c++) {
    const float *p = m->pos + c * 3;
    uint32_t kx = float_key(p[0]), ky = float_key(p[1]), kz = float_key(p[2]);
    uint64_t h = mix64(((uint64_t)kx << 32 | ky) ^ mix64(kz)) & mask;
    for (;;) {
      uint32_t e = slot[h];
      if (e == 0) {
        slot[h] = (uint32_t)c + 1;
        vid[c] = count++;
        break;
      }
      const float *o = m->pos + (uint64_t)(e - 1) * 3;
      if (float_key(o[0]) == kx && float_key(o[1]) == ky && float_key(o[2]) == kz) {
        vid[c] = vid[e - 1];
        break;
      }
      h = (h + 1) & mask;
    }
  }
  free(slot);
  return count;
}

/* out = v / w: an average of unit normals, whose length tells how much they cancelled. */
static void average_to(const double v[3], double w, float *out) {
  for (int i = 0; i < 3; i++) out[i] = w > 0.0 ? (float)(v[i] / w) : 0.0f;
}

vx_status vx_sign_build(const vx_mesh *m, vx_sign_data *s, vx_error *err) {
  memset(s, 0, sizeof *s);
  uint64_t T = m->tri_count;
  if (T == 0) return vx_error_set(err, VX_ERR_EMPTY, "no triangles");
  if (T * 3 >= UINT32_MAX)
    return vx_error_set(err, VX_ERR_LIMIT, "too many triangles for the sign tables (%llu)",
                        (unsigned long long)T);
  s->face_n = (float *)malloc(T * 3 * sizeof(float));
  s->edge_n = (float *)malloc(T * 9 * sizeof(float));
  s->vid = (uint32_t *)malloc(T * 3 * sizeof(uint32_t));
  uint32_t *eid = (uint32_t *)malloc(T * 3 * sizeof(uint32_t));
  if (!s->face_n || !s->edge_n || !s->vid || !eid) goto nomem;
  int64_t nv = weld(m, s->vid);
  if (nv < 0) goto nomem;
  s->vert_count = (uint64_t)nv;
  double *vacc = (double *)calloc((size_t)nv * 4, sizeof(double));
  if (!vacc) goto nomem;

  /* Face normals and angle-weighted vertex sums. */
  for (uint64_t t = 0; t < T; t++) {
    const float *p = m->pos + t * 9;
    double v[3][3], n[3];
    for (int k = 0; k < 3; k++)
      for (int i = 0; i < 3; i++) v[k][i] = p[k * 3 + i];
    double e0[3], e1[3];
    for (int i = 0; i < 3; i++) {
      e0[i] = v[1][i] - v[0][i];
      e1[i] = v[2][i] - v[0][i];
    }
    n[0] = e0[1] * e1[2] - e0[2] * e1[1];
    n[1] = e0[2] * e1[0] - e0[0] * e1[2];
    n[2] = e0[0] * e1[1] - e0[1] * e1[0];
    double l = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
    for (int i = 0; i < 3; i++) n[i] = l > 0.0 ? n[i] / l : 0.0;
    for (int i = 0; i < 3; i++) s->face_n[t * 3 + i] = (float)n[i];
    for (int k = 0; k < 3; k++) {
      const double *a = v[k], *b = v[(k + 1) % 3], *c = v[(k + 2) % 3];
      double u[3], w[3];
      for (int i = 0; i < 3; i++) {
        u[i] = b[i] - a[i];
        w[i] = c[i] - a[i];
      }
      double lu = sqrt(vx_dot3d(u, u)), lw = sqrt(vx_dot3d(w, w));
      double cosang = lu > 0.0 && lw > 0.0 ? vx_dot3d(u, w) / (lu * lw) : 1.0;
      if (cosang > 1.0) cosang = 1.0;
      if (cosang < -1.0) cosang = -1.0;
      double ang = acos(cosang);
      uint32_t id = s->vid[t * 3 + k];
      for (int i = 0; i < 3; i++) vacc[(uint64_t)id * 4 + i] += ang * n[i];
      vacc[(uint64_t)id * 4 + 3] += ang;
    }
  }
  s->vert_n = (float *)malloc((size_t)nv * 3 * sizeof(float));
  if (!s->vert_n) {
    free(vacc);
    goto nomem;
  }
  for (int64_t i = 0; i < nv; i++) average_to(vacc + i * 4, vacc[i * 4 + 3], s->vert_n + i * 3);
  free(vacc);

  /* Edges: weld by their two vertex ids, sum the face normals of all triangles on each. */
  {
    uint64_t n = T * 3, size = table_size(n), mask = size - 1;
    uint64_t *key = (uint64_t *)malloc(size * sizeof *key);
    uint32_t *val = (uint32_t *)malloc(size * sizeof *val);
    double *eacc = (double *)calloc(n * 3, sizeof(double));
    uint32_t *ecount = (uint32_t *)calloc(n, sizeof(uint32_t));
    if (!key || !val || !eacc || !ecount) {
      free(key);
      free(val);
      free(eacc);
      free(ecount);
      goto nomem;
    }
    memset(key, 0xff, size * sizeof *key);
    uint32_t edges = 0;
    for (uint64_t c = 0; c < n; c++) {
      uint64_t t = c / 3, k = c % 3;
      uint32_t a = s->vid[c], b = s->vid[t * 3 + (k + 1) % 3];
      uint64_t kk = a < b ? (uint64_t)a << 32 | b : (uint64_t)b << 32 | a;
      uint64_t h = mix64(kk) & mask;
      while (key[h] != UINT64_MAX && key[h] != kk) h = (h + 1) & mask;
      if (key[h] == UINT64_MAX) {
        key[h] = kk;
        val[h] = edges++;
      }
      uint32_t e = val[h];
      eid[c] = e;
      ecount[e]++;
      for (int i = 0; i < 3; i++) eacc[(uint64_t)e * 3 + i] += s->face_n[t * 3 + i];
    }
    for (uint32_t e = 0; e < edges; e++) {
      if (ecount[e] == 1) s->boundary_edges++;
      if (ecount[e] > 2) s->nonmanifold_edges++;
    }
    for (uint64_t c = 0; c < n; c++)
      average_to(eacc + (uint64_t)eid[c] * 3, (double)ecount[eid[c]], s->edge_n + c * 3);
    free(key);
    free(val);
    free(eacc);
    free(ecount);
  }
  free(eid);
  return VX_OK;
nomem:
  free(eid);
  vx_sign_free(s);
  return vx_error_set(err, VX_ERR_NOMEM, "cannot allocate the sign tables for %llu triangles",
                      (unsigned long long)T);
}

void vx_sign_normal(const vx_sign_data *s, uint64_t tri, int feat, double n[3]) {
  const float *src;
  if (feat >= VX_FEAT_E01)
    src = s->edge_n + tri * 9 + (uint64_t)(feat - VX_FEAT_E01) * 3;
  else if (feat >= VX_FEAT_V0)
    src = s->vert_n + (uint64_t)s->vid[tri * 3 + (uint64_t)(feat - VX_FEAT_V0)] * 3;
  else
    src = s->face_n + tri * 3;
  for (int i = 0; i < 3; i++) n[i] = src[i];
  /* A pseudo-normal that cancelled (opposite windings meet) says nothing: use the face's own. */
  if (n[0] * n[0] + n[1] * n[1] + n[2] * n[2] < 1e-6)
    for (int i = 0; i < 3; i++) n[i] = s->face_n[tri * 3 + i];
}

double vx_sign_of(const vx_sign_data *s, uint64_t tri, int feat, const double p[3],
                  const double q[3]) {
  double n[3], d[3];
  vx_sign_normal(s, tri, feat, n);
  for (int i = 0; i < 3; i++) d[i] = p[i] - q[i];
  return vx_dot3d(d, n) < 0.0 ? -1.0 : 1.0;
}
