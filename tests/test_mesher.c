/* SPDX-License-Identifier: Apache-2.0 */
/* test_mesher.c - dual contouring (mesher/): watertight and edge-manifold meshes at every cut,
 * distance to the source mesh, re-voxelization, the single-valued corner field, determinism,
 * orientation and errors.
 *
 * References are brute force in double precision: every edge of a mesh is looked up by sorting
 * its directed half-edges; the two-sided Hausdorff distance is estimated from points sampled on
 * both meshes (vertices, edge midpoints and triangle centroids, plus a fixed pseudo-random set),
 * each measured against every triangle of the other mesh with an exact point-to-triangle distance
 * written here (Voronoi regions of the triangle, Ericson's "Real-Time Collision Detection" 5.1.5).
 * Inputs are closed analytic shapes (tests/meshgen.h), so every cut must be watertight.
 */
#include "formats/mesh_import.h"
#include "mesher/mesher.h"
#include "svo/lod.h"
#include "voxelizer/voxelizer.h"
#include "check.h"
#include "meshgen.h"

#include <stdint.h>

/* ---- meshes under test ---------------------------------------------------------------------- */

static int build(const vx_soup *s, uint32_t res, vx_octree *t) {
  vx_voxelize_opts o;
  memset(&o, 0, sizeof o);
  o.resolution = res;
  o.threads = 2;
  vx_error e;
  vx_status st = vx_voxelize(s, &o, t, NULL, &e);
  CHECK_MSG(st == VX_OK, "voxelize: %s", e.msg);
  return st == VX_OK;
}

static int extract(const vx_octree *t, int cut, uint32_t level, float err, int threads,
                   vx_dc_mesh *m, vx_dc_stats *st) {
  vx_dc_opts o;
  memset(&o, 0, sizeof o);
  o.cut = cut;
  o.level = level;
  o.max_error = err;
  o.threads = threads;
  vx_error e;
  vx_status s = vx_dc_extract(t, &o, m, st, &e);
  CHECK_MSG(s == VX_OK, "extract: %s", e.msg);
  return s == VX_OK;
}

/* ---- topology: every edge in exactly two triangles, once in each direction ------------------- */

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

typedef struct topo {
  uint64_t degenerate;  /* triangles with a repeated index */
  uint64_t duplicated;  /* directed edges used twice or more */
  uint64_t unmatched;   /* directed edges whose reverse is missing: boundary or flipped */
  uint64_t bad_index;
} topo;

static topo check_topology(const vx_dc_mesh *m) {
  topo r;
  memset(&r, 0, sizeof r);
  uint64_t n = m->triangle_count * 3;
  uint64_t *h = (uint64_t *)malloc((n ? n : 1) * sizeof *h);
  for (uint64_t t = 0; t < m->triangle_count; t++) {
    const uint32_t *v = m->tri + 3 * t;
    for (int k = 0; k < 3; k++) r.bad_index += v[k] >= m->vertex_count;
    r.degenerate += v[0] == v[1] || v[1] == v[2] || v[0] == v[2];
    for (int k = 0; k < 3; k++) h[3 * t + k] = (uint64_t)v[k] << 32 | v[(k + 1) % 3];
  }
  qsort(h, n, sizeof *h, cmp_u64);
  for (uint64_t i = 0; i < n; i++) {
    if (i + 1 < n && h[i + 1] == h[i]) r.duplicated++;
    uint64_t rev = h[i] << 32 | h[i] >> 32;
    if (!bsearch(&rev, h, n, sizeof *h, cmp_u64)) r.unmatched++;
  }
  free(h);
  return r;
}

static void expect_closed(const vx_dc_mesh *m, const char *what) {
  topo r = check_topology(m);
  CHECK_MSG(m->triangle_count > 0, "%s: no triangles", what);
  CHECK_MSG(r.bad_index == 0, "%s: %llu indices out of range", what,
            (unsigned long long)r.bad_index);
  CHECK_MSG(r.degenerate == 0, "%s: %llu degenerate triangles", what,
            (unsigned long long)r.degenerate);
  CHECK_MSG(r.duplicated == 0, "%s: %llu directed edges used twice (non-manifold)", what,
            (unsigned long long)r.duplicated);
  CHECK_MSG(r.unmatched == 0, "%s: %llu directed edges without their reverse (open or flipped)",
            what, (unsigned long long)r.unmatched);
}

/* ---- exact point-to-triangle distance in double -------------------------------------------- */

static double dot3(const double *a, const double *b) {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

static double point_tri_dist2(const double p[3], const double a[3], const double b[3],
                              const double c[3]) {
  double ab[3], ac[3], ap[3], q[3];
  for (int i = 0; i < 3; i++) ab[i] = b[i] - a[i], ac[i] = c[i] - a[i], ap[i] = p[i] - a[i];
  double d1 = dot3(ab, ap), d2 = dot3(ac, ap);
  if (d1 <= 0 && d2 <= 0) {
    for (int i = 0; i < 3; i++) q[i] = a[i];
    goto done;
  }
  double bp[3];
  for (int i = 0; i < 3; i++) bp[i] = p[i] - b[i];
  double d3 = dot3(ab, bp), d4 = dot3(ac, bp);
  if (d3 >= 0 && d4 <= d3) {
    for (int i = 0; i < 3; i++) q[i] = b[i];
    goto done;
  }
  double vc = d1 * d4 - d3 * d2;
  if (vc <= 0 && d1 >= 0 && d3 <= 0) {
    double v = d1 / (d1 - d3);
    for (int i = 0; i < 3; i++) q[i] = a[i] + v * ab[i];
    goto done;
  }
  double cp[3];
  for (int i = 0; i < 3; i++) cp[i] = p[i] - c[i];
  double d5 = dot3(ab, cp), d6 = dot3(ac, cp);
  if (d6 >= 0 && d5 <= d6) {
    for (int i = 0; i < 3; i++) q[i] = c[i];
    goto done;
  }
  double vb = d5 * d2 - d1 * d6;
  if (vb <= 0 && d2 >= 0 && d6 <= 0) {
    double w = d2 / (d2 - d6);
    for (int i = 0; i < 3; i++) q[i] = a[i] + w * ac[i];
    goto done;
  }
  double va = d3 * d6 - d5 * d4;
  if (va <= 0 && (d4 - d3) >= 0 && (d5 - d6) >= 0) {
    double w = (d4 - d3) / ((d4 - d3) + (d5 - d6));
    for (int i = 0; i < 3; i++) q[i] = b[i] + w * (c[i] - b[i]);
    goto done;
  }
  {
    double den = 1.0 / (va + vb + vc), v = vb * den, w = vc * den;
    for (int i = 0; i < 3; i++) q[i] = a[i] + ab[i] * v + ac[i] * w;
  }
done:;
  double d = 0.0;
  for (int i = 0; i < 3; i++) d += (p[i] - q[i]) * (p[i] - q[i]);
  return d;
}

/* Triangles as 9 doubles each. */
typedef struct tris {
  double *t;
  uint64_t n;
} tris;

static tris tris_of_soup(const vx_soup *s) {
  tris r;
  r.n = s->tri_count;
  r.t = (double *)malloc((r.n ? r.n : 1) * 9 * sizeof(double));
  for (uint64_t i = 0; i < r.n * 9; i++) r.t[i] = s->pos[i];
  return r;
}

static tris tris_of_mesh(const vx_dc_mesh *m) {
  tris r;
  r.n = m->triangle_count;
  r.t = (double *)malloc((r.n ? r.n : 1) * 9 * sizeof(double));
  for (uint64_t i = 0; i < r.n; i++)
    for (int k = 0; k < 3; k++)
      for (int c = 0; c < 3; c++)
        r.t[9 * i + 3 * k + c] = m->pos[3 * (uint64_t)m->tri[3 * i + k] + c];
  return r;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static double urand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (double)(rng >> 11) * (1.0 / 9007199254740992.0);
}

/* Sample points of a: vertices, edge midpoints, centroids (of at most `cap` triangles, spread over
 * the list) and `extra` random points, uniform by area. */
static double *samples(const tris *a, uint64_t cap, uint64_t extra, uint64_t *n) {
  uint64_t step = a->n > cap ? a->n / cap : 1, k = 0;
  double *p = (double *)malloc(((a->n / step + 1) * 7 + extra) * 3 * sizeof(double));
  for (uint64_t i = 0; i < a->n; i += step) {
    const double *t = a->t + 9 * i;
    for (int v = 0; v < 3; v++, k++)
      for (int c = 0; c < 3; c++) p[3 * k + c] = t[3 * v + c];
    for (int v = 0; v < 3; v++, k++)
      for (int c = 0; c < 3; c++) p[3 * k + c] = 0.5 * (t[3 * v + c] + t[3 * ((v + 1) % 3) + c]);
    for (int c = 0; c < 3; c++) p[3 * k + c] = (t[c] + t[3 + c] + t[6 + c]) / 3.0;
    k++;
  }
  double *area = (double *)malloc((a->n ? a->n : 1) * sizeof(double)), total = 0.0;
  for (uint64_t i = 0; i < a->n; i++) {
    const double *t = a->t + 9 * i;
    double e1[3], e2[3];
    for (int c = 0; c < 3; c++) e1[c] = t[3 + c] - t[c], e2[c] = t[6 + c] - t[c];
    double x = e1[1] * e2[2] - e1[2] * e2[1], y = e1[2] * e2[0] - e1[0] * e2[2],
           z = e1[0] * e2[1] - e1[1] * e2[0];
    total += 0.5 * sqrt(x * x + y * y + z * z);
    area[i] = total;
  }
  for (uint64_t s = 0; s < extra && a->n; s++, k++) {
    double r = urand() * total;
    uint64_t lo = 0, hi = a->n - 1;
    while (lo < hi) {
      uint64_t mid = (lo + hi) / 2;
      if (area[mid] < r) lo = mid + 1;
      else hi = mid;
    }
    double u = urand(), v = urand();
    if (u + v > 1.0) u = 1.0 - u, v = 1.0 - v;
    const double *t = a->t + 9 * lo;
    for (int c = 0; c < 3; c++) p[3 * k + c] = t[c] + u * (t[3 + c] - t[c]) + v * (t[6 + c] - t[c]);
  }
  free(area);
  *n = k;
  return p;
}

/* max over a's samples of the distance to b (every triangle). */
static double one_sided(const tris *a, const tris *b, uint64_t cap, uint64_t extra) {
  uint64_t n;
  double *p = samples(a, cap, extra, &n), worst = 0.0;
  for (uint64_t i = 0; i < n; i++) {
    double best = INFINITY;
    for (uint64_t j = 0; j < b->n && best > worst; j++) {
      const double *t = b->t + 9 * j;
      double d = point_tri_dist2(p + 3 * i, t, t + 3, t + 6);
      if (d < best) best = d;
    }
    if (best > worst) worst = best;
  }
  free(p);
  return sqrt(worst);
}

/* ---- shapes ------------------------------------------------------------------------------- */

static void shape_sphere(vx_soup *s) { meshgen_sphere(s, 0.1, -0.2, 0.05, 1.0, 48, 24); }
static void shape_torus(vx_soup *s) { meshgen_torus(s, 0.0, 0.0, 0.0, 1.0, 0.35, 48, 24); }
/* A sphere, a box whose faces lie on grid planes (quantized zeros) and a thin torus apart. */
static void shape_scene(vx_soup *s) {
  meshgen_sphere(s, 0, 0, 0, 1.0, 64, 32);
  double lo[3] = {1.5, -0.3, -0.3}, hi[3] = {2.2, 0.3, 0.4};
  meshgen_box(s, lo, hi);
  meshgen_torus(s, 0.2, 0.3, 1.3, 0.6, 0.15, 48, 24);
}

/* A cube: its faces lie on the grid's own boundary planes and its corners on the grid's corners. */
static void shape_box(vx_soup *s) {
  double lo[3] = {-1.0, -1.0, -1.0}, hi[3] = {1.0, 1.0, 1.0};
  meshgen_box(s, lo, hi);
}

/* ---- the tests ---------------------------------------------------------------------------- */

static void closed_at_every_cut(void (*shape)(vx_soup *), uint32_t res, const char *name) {
  vx_soup s;
  memset(&s, 0, sizeof s);
  shape(&s);
  vx_octree t;
  if (!build(&s, res, &t)) return;
  char what[96];
  for (uint32_t l = 1; l <= t.depth; l++) {
    vx_dc_mesh m;
    vx_dc_stats st;
    if (!extract(&t, VX_DC_LEVEL, l, 0, 2, &m, &st)) continue;
    snprintf(what, sizeof what, "%s %u^3 level %u", name, res, l);
    if (l >= 2) expect_closed(&m, what);
    CHECK_MSG(st.open_edges == 0, "%s: %llu open edges", what, (unsigned long long)st.open_edges);
    vx_dc_mesh_free(&m);
  }
  const float errs[] = {0.1f, 0.25f, 0.5f, 1.0f, 2.0f, 4.0f};
  for (int k = 0; k < 6; k++) {
    vx_dc_mesh m;
    vx_dc_stats st;
    if (!extract(&t, VX_DC_ERROR, 0, errs[k], 2, &m, &st)) continue;
    snprintf(what, sizeof what, "%s %u^3 error %g (levels %u..%u)", name, res, (double)errs[k],
             st.level_min, st.level_max);
    expect_closed(&m, what);
    vx_dc_mesh_free(&m);
  }
  vx_octree_free(&t);
  vx_soup_free(&s);
}

static void mesher_sphere_is_closed_at_every_cut(void) {
  closed_at_every_cut(shape_sphere, 64, "sphere");
}
static void mesher_torus_is_closed_at_every_cut(void) {
  closed_at_every_cut(shape_torus, 128, "torus");
}
static void mesher_scene_with_grid_plane_faces_is_closed(void) {
  closed_at_every_cut(shape_scene, 64, "scene");
  closed_at_every_cut(shape_scene, 128, "scene");
  closed_at_every_cut(shape_box, 32, "cube");
}

/* Spot (a closed scan, data/spot.obj). */
static void mesher_spot_is_closed_at_every_cut(void) {
  char buf[512];
  const char *path = check_data_mesh("spot.obj", buf, sizeof buf);
  vx_soup s;
  vx_error e;
  if (vx_soup_import(path, &s, &e) != VX_OK) {
    CHECK_MSG(0, "spot: %s", e.msg);
    return;
  }
  vx_octree t;
  if (build(&s, 128, &t)) {
    for (uint32_t l = 3; l <= t.depth; l++) {
      vx_dc_mesh m;
      vx_dc_stats st;
      char what[64];
      snprintf(what, sizeof what, "spot 128^3 level %u", l);
      if (extract(&t, VX_DC_LEVEL, l, 0, 2, &m, &st)) expect_closed(&m, what), vx_dc_mesh_free(&m);
    }
    vx_dc_mesh m;
    vx_dc_stats st;
    if (extract(&t, VX_DC_ERROR, 0, 1.0f, 2, &m, &st))
      expect_closed(&m, "spot error 1"), vx_dc_mesh_free(&m);
    vx_octree_free(&t);
  }
  vx_soup_free(&s);
}

/* Full detail lies within one voxel of the source, both ways; coarser cuts within their cell. */
static void mesher_full_detail_is_within_one_voxel(void) {
  void (*shapes[2])(vx_soup *) = {shape_sphere, shape_torus};
  const char *names[2] = {"sphere", "torus"};
  for (int k = 0; k < 2; k++) {
    vx_soup s;
    memset(&s, 0, sizeof s);
    shapes[k](&s);
    vx_octree t;
    if (!build(&s, 64, &t)) continue;
    tris src = tris_of_soup(&s);
    vx_dc_mesh m;
    vx_dc_stats st;
    if (extract(&t, VX_DC_FINEST, 0, 0, 2, &m, &st)) {
      tris out = tris_of_mesh(&m);
      double h1 = one_sided(&out, &src, 2000, 2000) / t.xf.scale;
      double h2 = one_sided(&src, &out, 2000, 2000) / t.xf.scale;
      fprintf(stderr, "  %s 64^3 full detail: mesh->source %.3f, source->mesh %.3f voxels, %llu "
              "triangles\n", names[k], h1, h2, (unsigned long long)m.triangle_count);
      CHECK_MSG(h1 <= 1.0 && h2 <= 1.0, "%s: Hausdorff %.3f / %.3f voxels > 1", names[k], h1, h2);
      free(out.t);
      vx_dc_mesh_free(&m);
    }
    /* A coarse level: within the cell size. */
    if (extract(&t, VX_DC_LEVEL, t.depth - 2, 0, 2, &m, &st)) {
      tris out = tris_of_mesh(&m);
      double h = fmax(one_sided(&out, &src, 2000, 1000), one_sided(&src, &out, 2000, 1000)) /
                 t.xf.scale;
      fprintf(stderr, "  %s level %u: Hausdorff %.3f voxels\n", names[k], t.depth - 2, h);
      CHECK_MSG(h <= 4.0, "%s level %u: Hausdorff %.3f voxels > a cell (4)", names[k],
                t.depth - 2, h);
      free(out.t);
      vx_dc_mesh_free(&m);
    }
    free(src.t);
    vx_octree_free(&t);
    vx_soup_free(&s);
  }
}

/* Voxelizing the full-detail mesh on the same grid gives the same surface voxels, within one. */
static int cmp_code(const void *a, const void *b) { return cmp_u64(a, b); }

static uint64_t *voxel_codes(const vx_octree *t) {
  /* Morton codes of level D in order: walk the tree (breadth first arrays, Morton order). */
  uint64_t *c = (uint64_t *)malloc((t->voxel_count ? t->voxel_count : 1) * sizeof *c);
  uint64_t *cur = (uint64_t *)malloc(sizeof *cur), n = 1;
  cur[0] = 0;
  for (uint32_t l = 0; l < t->depth; l++) {
    uint64_t *next = (uint64_t *)malloc((t->level_count[l + 1] ? t->level_count[l + 1] : 1) *
                                        sizeof *next),
             k = 0;
    for (uint64_t i = 0; i < n; i++) {
      uint32_t mask = vx_node_mask(t->nodes[t->level_first[l] + i].info);
      for (uint32_t s = 0; s < 8; s++)
        if (mask >> s & 1u) next[k++] = cur[i] << 3 | s;
    }
    free(cur);
    cur = next;
    n = k;
  }
  memcpy(c, cur, n * sizeof *c);
  free(cur);
  return c;
}

static int near_voxel(const uint64_t *codes, uint64_t n, uint64_t code) {
  uint32_t x, y, z;
  vx_morton_decode(code, &x, &y, &z);
  for (int dz = -1; dz <= 1; dz++)
    for (int dy = -1; dy <= 1; dy++)
      for (int dx = -1; dx <= 1; dx++) {
        int64_t a = (int64_t)x + dx, b = (int64_t)y + dy, c = (int64_t)z + dz;
        if (a < 0 || b < 0 || c < 0) continue;
        uint64_t k = vx_morton_encode((uint32_t)a, (uint32_t)b, (uint32_t)c);
        if (bsearch(&k, codes, n, sizeof k, cmp_code)) return 1;
      }
  return 0;
}

static void mesher_revoxelized_mesh_has_the_same_surface_voxels(void) {
  vx_soup s;
  memset(&s, 0, sizeof s);
  shape_torus(&s);
  vx_octree a;
  if (!build(&s, 64, &a)) return;
  vx_dc_mesh m;
  vx_dc_stats st;
  if (extract(&a, VX_DC_FINEST, 0, 0, 2, &m, &st)) {
    vx_soup r;
    memset(&r, 0, sizeof r);
    float tri[9];
    for (uint64_t i = 0; i < m.triangle_count; i++) {
      for (int k = 0; k < 3; k++) memcpy(tri + 3 * k, m.pos + 3 * (uint64_t)m.tri[3 * i + k], 12);
      vx_soup_append(&r, tri, 1, NULL);
    }
    /* The source's box, so that the grid is the same one. */
    for (int k = 0; k < 3; k++) r.bbox_min[k] = s.bbox_min[k], r.bbox_max[k] = s.bbox_max[k];
    vx_octree b;
    if (build(&r, 64, &b)) {
      uint64_t *ca = voxel_codes(&a), *cb = voxel_codes(&b), miss_a = 0, miss_b = 0;
      for (uint64_t i = 0; i < a.voxel_count; i++) miss_a += !near_voxel(cb, b.voxel_count, ca[i]);
      for (uint64_t i = 0; i < b.voxel_count; i++) miss_b += !near_voxel(ca, a.voxel_count, cb[i]);
      fprintf(stderr, "  torus 64^3: %llu and %llu surface voxels (source, re-voxelized); %llu "
              "and %llu farther than one voxel from the other set\n",
              (unsigned long long)a.voxel_count, (unsigned long long)b.voxel_count,
              (unsigned long long)miss_a, (unsigned long long)miss_b);
      CHECK(miss_a == 0 && miss_b == 0);
      free(ca);
      free(cb);
      vx_octree_free(&b);
    }
    vx_soup_free(&r);
    vx_dc_mesh_free(&m);
  }
  vx_octree_free(&a);
  vx_soup_free(&s);
}

/* The corner field is single-valued, and where stored values differ the larger one won unless
 * the sign repair changed the point. A thin sheet makes the voxelizer re-sign voxels. */
typedef struct pv {
  uint64_t code;
  int8_t v, raw_max;
} pv;
static int cmp_pv(const void *a, const void *b) {
  return cmp_u64(&((const pv *)a)->code, &((const pv *)b)->code);
}

static void mesher_corner_field_is_single_valued(void) {
  vx_soup s;
  memset(&s, 0, sizeof s);
  shape_sphere(&s);
  const double p0[3] = {-1.2, -1.4, 0.37}, u[3] = {2.4, 0.3, 0.0}, w[3] = {0.0, 2.2, 0.15};
  meshgen_sheet(&s, p0, u, w); /* cuts through the sphere: thin voxels outside it */
  vx_octree t;
  if (!build(&s, 64, &t)) return;
  vx_voxel *f = (vx_voxel *)malloc(t.voxel_count * sizeof *f);
  uint64_t shared = 0, disputed = 0;
  vx_error e;
  CHECK(vx_dc_corner_field(&t, 2, f, &shared, &disputed, &e) == VX_OK);
  uint64_t *codes = voxel_codes(&t), n = t.voxel_count * 8, bad = 0, lowered = 0;
  pv *p = (pv *)malloc(n * sizeof *p);
  for (uint64_t i = 0; i < t.voxel_count; i++) {
    uint32_t x, y, z;
    vx_morton_decode(codes[i], &x, &y, &z);
    for (int c = 0; c < 8; c++) {
      p[8 * i + c].code = vx_morton_encode(x + (c & 1), y + (c >> 1 & 1), z + (c >> 2 & 1));
      p[8 * i + c].v = f[i].c[c];
      p[8 * i + c].raw_max = t.voxels[i].c[c];
    }
  }
  qsort(p, n, sizeof *p, cmp_pv);
  uint64_t points = 0, differed = 0;
  for (uint64_t i = 0; i < n;) {
    uint64_t j = i;
    int8_t mx = -128, mn = 127;
    while (j < n && p[j].code == p[i].code) {
      if (p[j].raw_max > mx) mx = p[j].raw_max;
      if (p[j].raw_max < mn) mn = p[j].raw_max;
      bad += p[j].v != p[i].v;
      j++;
    }
    points++;
    if (mx != mn) {
      differed++;
      /* the larger won, or the repair changed the sign of the point (magnitude kept) */
      lowered += !(p[i].v == mx || p[i].v == -mx || (mx == 0 && p[i].v == -1));
    }
    i = j;
  }
  fprintf(stderr, "  sphere + sheet 64^3: %llu grid points, %llu with different stored values\n",
          (unsigned long long)points, (unsigned long long)differed);
  CHECK_MSG(bad == 0, "%llu corners differ from their point's value", (unsigned long long)bad);
  CHECK(differed > 0); /* the sheet's thin voxels were re-signed */
  CHECK(lowered == 0);
  CHECK(shared > 0 && disputed >= differed);
  free(p);
  free(codes);
  free(f);
  vx_octree_free(&t);
  vx_soup_free(&s);
}

/* Threads do not change the mesh. */
static void mesher_is_deterministic(void) {
  vx_soup s;
  memset(&s, 0, sizeof s);
  shape_scene(&s);
  vx_octree t;
  if (!build(&s, 64, &t)) return;
  for (int k = 0; k < 2; k++) {
    vx_dc_mesh a, b;
    vx_dc_stats st;
    int cut = k ? VX_DC_ERROR : VX_DC_FINEST;
    if (!extract(&t, cut, 0, 1.0f, 1, &a, &st)) continue;
    if (extract(&t, cut, 0, 1.0f, 3, &b, &st)) {
      CHECK(a.vertex_count == b.vertex_count && a.triangle_count == b.triangle_count);
      if (a.vertex_count == b.vertex_count && a.triangle_count == b.triangle_count) {
        CHECK(memcmp(a.pos, b.pos, a.vertex_count * 12) == 0);
        CHECK(memcmp(a.tri, b.tri, a.triangle_count * 12) == 0);
      }
      vx_dc_mesh_free(&b);
    }
    vx_dc_mesh_free(&a);
  }
  vx_octree_free(&t);
  vx_soup_free(&s);
}

/* Outward: normals point away from the centre, and the enclosed volume is positive and close to
 * the sphere's. */
static void mesher_sphere_faces_outward(void) {
  vx_soup s;
  memset(&s, 0, sizeof s);
  shape_sphere(&s);
  vx_octree t;
  if (!build(&s, 64, &t)) return;
  const uint32_t levels[3] = {4, 5, 6};
  for (int k = 0; k < 3; k++) {
    vx_dc_mesh m;
    vx_dc_stats st;
    if (!extract(&t, VX_DC_LEVEL, levels[k], 0, 2, &m, &st)) continue;
    const double c[3] = {0.1, -0.2, 0.05};
    uint64_t inward = 0;
    for (uint64_t i = 0; i < m.vertex_count; i++) {
      double d = 0.0;
      for (int a = 0; a < 3; a++) d += (m.pos[3 * i + a] - c[a]) * m.nrm[3 * i + a];
      inward += d <= 0.0;
    }
    double vol = 0.0;
    for (uint64_t i = 0; i < m.triangle_count; i++) {
      const float *a = m.pos + 3 * (uint64_t)m.tri[3 * i],
                  *b = m.pos + 3 * (uint64_t)m.tri[3 * i + 1],
                  *q = m.pos + 3 * (uint64_t)m.tri[3 * i + 2];
      vol += (a[0] * ((double)b[1] * q[2] - (double)b[2] * q[1]) -
              a[1] * ((double)b[0] * q[2] - (double)b[2] * q[0]) +
              a[2] * ((double)b[0] * q[1] - (double)b[1] * q[0])) / 6.0;
    }
    fprintf(stderr, "  sphere level %u: volume %.4f (4/3 pi = %.4f)\n", levels[k], vol,
            4.0 * M_PI / 3.0);
    CHECK_MSG(inward == 0, "level %u: %llu normals point inwards", levels[k],
              (unsigned long long)inward);
    CHECK_NEAR(vol, 4.0 * M_PI / 3.0, 0.1 * (7 - levels[k]));
    vx_dc_mesh_free(&m);
  }
  vx_octree_free(&t);
  vx_soup_free(&s);
}

/* Level 0 is one cell; a level beyond the tree, a pruned or partial tree are refused. */
static void mesher_refuses_what_it_cannot_mesh(void) {
  vx_soup s;
  memset(&s, 0, sizeof s);
  shape_sphere(&s);
  vx_octree t;
  if (!build(&s, 32, &t)) return;
  vx_dc_mesh m;
  vx_dc_stats st;
  vx_dc_opts o;
  memset(&o, 0, sizeof o);
  vx_error e;
  o.cut = VX_DC_LEVEL;
  o.level = 0;
  CHECK(vx_dc_extract(&t, &o, &m, &st, &e) == VX_OK && m.triangle_count == 0);
  vx_dc_mesh_free(&m);
  o.level = t.depth + 1;
  CHECK(vx_dc_extract(&t, &o, &m, &st, &e) == VX_ERR_INVALID_ARG && strstr(e.msg, "beyond"));
  o.cut = VX_DC_ERROR;
  o.max_error = 0.0f;
  CHECK(vx_dc_extract(&t, &o, &m, &st, &e) == VX_ERR_INVALID_ARG);
  o.max_error = NAN;
  CHECK(vx_dc_extract(&t, &o, &m, &st, &e) == VX_ERR_INVALID_ARG);
  o.cut = 7;
  CHECK(vx_dc_extract(&t, &o, &m, &st, &e) == VX_ERR_INVALID_ARG);
  o.cut = VX_DC_FINEST;
  uint32_t loaded = t.levels_loaded;
  t.levels_loaded = t.depth;
  CHECK(vx_dc_extract(&t, &o, &m, &st, &e) == VX_ERR_INVALID_ARG && strstr(e.msg, "loaded"));
  t.levels_loaded = loaded;
  CHECK(vx_octree_prune(&t, 1.0f, &e) == VX_OK);
  t.prune_error = 1.0f;
  CHECK(vx_dc_extract(&t, &o, &m, &st, &e) == VX_ERR_INVALID_ARG && strstr(e.msg, "pruned"));
  CHECK(m.triangle_count == 0 && m.pos == NULL);
  vx_octree_free(&t);
  vx_soup_free(&s);
}

int main(void) {
  RUN(mesher_sphere_is_closed_at_every_cut);
  RUN(mesher_torus_is_closed_at_every_cut);
  RUN(mesher_scene_with_grid_plane_faces_is_closed);
  RUN(mesher_spot_is_closed_at_every_cut);
  RUN(mesher_full_detail_is_within_one_voxel);
  RUN(mesher_revoxelized_mesh_has_the_same_surface_voxels);
  RUN(mesher_corner_field_is_single_valued);
  RUN(mesher_is_deterministic);
  RUN(mesher_sphere_faces_outward);
  RUN(mesher_refuses_what_it_cannot_mesh);
  return check_summary();
}
