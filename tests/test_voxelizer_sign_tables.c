/* SPDX-License-Identifier: Apache-2.0 */
/* test_voxelizer_sign_tables.c - the pseudo-normal tables (sign.c: welded vertices, edges, face,
 * vertex and edge normals), built on all cores, against a reference made by sorting: corners
 * sorted by exact position (then by index) weld into vertices numbered in order of first
 * appearance, edges likewise by their two vertex ids, and every sum over a vertex's or an edge's
 * corners taken in corner order. Bit for bit, for 1 and 3 threads, on welded analytic meshes
 * (one of them larger than a task's 65536 corners), a soup with -0/+0, repeated and reversed
 * triangles, and the messy test meshes. The winding rule's clean flags likewise, against their
 * serial definitions over the same reference ids. */
#include "voxelizer/internal.h"
#include "voxelizer/cert_eval.h"
#include "formats/mesh_import.h"
#include "meshgen.h"
#include "check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__)
#pragma weak vx_soup_import
#endif

typedef struct item {
  uint64_t k0, k1; /* the class key */
  uint32_t c;      /* corner */
} item;

static int by_key(const void *a, const void *b) {
  const item *x = (const item *)a, *y = (const item *)b;
  if (x->k0 != y->k0) return x->k0 < y->k0 ? -1 : 1;
  if (x->k1 != y->k1) return x->k1 < y->k1 ? -1 : 1;
  return x->c < y->c ? -1 : x->c > y->c;
}

static uint64_t bits(float f) {
  uint32_t u;
  if (f == 0.0f) f = 0.0f;
  memcpy(&u, &f, 4);
  return u;
}

/* Classes of n keyed corners numbered by first appearance: id[c]; returns the count. */
static uint32_t number(item *it, uint64_t n, uint32_t *id) {
  qsort(it, (size_t)n, sizeof *it, by_key);
  uint32_t *first = (uint32_t *)malloc(n * sizeof *first); /* per corner: its class's first */
  uint8_t *is_first = (uint8_t *)calloc(n, 1);
  for (uint64_t i = 0; i < n; i++) {
    const int same = i > 0 && it[i].k0 == it[i - 1].k0 && it[i].k1 == it[i - 1].k1;
    first[it[i].c] = same ? first[it[i - 1].c] : it[i].c;
    if (!same) is_first[it[i].c] = 1;
  }
  uint32_t count = 0;
  for (uint64_t c = 0; c < n; c++)
    if (is_first[c]) id[c] = count++;
  for (uint64_t c = 0; c < n; c++) id[c] = id[first[c]];
  free(first);
  free(is_first);
  return count;
}

/* The winding rule's clean flags (sign.c) against their definitions, computed serially over the
 * reference's vertex and edge ids: a triangle is a candidate when each of its edges has two
 * corners of opposite orientations and it has an area, and clean with the certificate's value
 * (vx_cert_triangle on the rule's own tree); a vertex takes its triangles' common value, else 0. */
static void clean_flags_match(const char *what, const vx_soup *m, const uint32_t *vid,
                              const uint32_t *eid, uint32_t nv, uint32_t ne, const uint32_t *ec) {
  const uint64_t T = m->tri_count, n = 3 * T;
  vx_transform xf;
  vx_error err;
  CHECK_MSG(vx_voxelize_transform(m, 64, &xf, &err) == VX_OK, "%s: %s", what, err.msg);
  int32_t *orient = (int32_t *)calloc(ne ? ne : 1, 4);
  for (uint64_t c = 0; c < n; c++) {
    const uint32_t a = vid[c], b = vid[c - c % 3 + (c % 3 + 1) % 3];
    orient[eid[c]] += a < b ? 1 : a > b ? -1 : 2;
  }
  uint8_t *clean = (uint8_t *)malloc(T), *vclean = (uint8_t *)malloc(nv ? nv : 1);
  for (int threads = 1; threads <= 3; threads += 2) {
    vx_sign_data s;
    CHECK_MSG(vx_sign_build_rule_ex(m, &xf, VX_SIGN_WINDING, 0, threads, &s, &err) == VX_OK,
              "%s: %s", what, err.msg);
    uint64_t count = 0;
    for (uint64_t t = 0; t < T; t++) {
      int ok = 1;
      for (int k = 0; k < 3; k++) ok &= ec[eid[3 * t + k]] == 2 && orient[eid[3 * t + k]] == 0;
      const float *p = m->pos + 9 * t;
      double u[3], v[3];
      for (int i = 0; i < 3; i++) {
        u[i] = (double)p[3 + i] - p[i];
        v[i] = (double)p[6 + i] - p[i];
      }
      const double cx = u[1] * v[2] - u[2] * v[1], cy = u[2] * v[0] - u[0] * v[2],
                   cz = u[0] * v[1] - u[1] * v[0];
      uint8_t f = 0;
      if (ok && cx * cx + cy * cy + cz * cz > 0.0) {
        double g[9];
        vx_grid_tri(m, &xf, t, g);
        f = vx_cert_triangle(&s.wind, g);
      }
      clean[t] = f;
      count += f != 0;
    }
    memset(vclean, 0xff, nv);
    for (uint64_t c = 0; c < n; c++) {
      uint8_t *w = vclean + vid[c];
      *w = *w == 0xff || *w == clean[c / 3] ? clean[c / 3] : 0;
    }
    CHECK_MSG(memcmp(s.clean, clean, T) == 0 && memcmp(s.vclean, vclean, nv) == 0 &&
                  s.clean_count == count,
              "%s, %d threads: the clean flags differ (%llu clean, %llu expected)", what, threads,
              (unsigned long long)s.clean_count, (unsigned long long)count);
    vx_sign_free(&s);
  }
  free(orient);
  free(clean);
  free(vclean);
}

static void compare(const char *what, const vx_soup *m) {
  const uint64_t T = m->tri_count, n = 3 * T;
  item *it = (item *)malloc(n * sizeof *it);
  uint32_t *vid = (uint32_t *)malloc(n * 4), *eid = (uint32_t *)malloc(n * 4);
  for (uint64_t c = 0; c < n; c++) {
    const float *p = m->pos + 3 * c;
    it[c] = (item){bits(p[0]) << 32 | bits(p[1]), bits(p[2]), (uint32_t)c};
  }
  const uint32_t nv = number(it, n, vid);
  for (uint64_t c = 0; c < n; c++) {
    uint32_t a = vid[c], b = vid[c - c % 3 + (c % 3 + 1) % 3];
    it[c] = (item){a < b ? a : b, a < b ? b : a, (uint32_t)c};
  }
  const uint32_t ne = number(it, n, eid);
  free(it);
  /* normals: per triangle, then sums in corner order */
  float *face = (float *)malloc(T * 3 * sizeof(float));
  double *vs = (double *)calloc((size_t)nv * 4, sizeof(double));
  double *es = (double *)calloc((size_t)ne * 3, sizeof(double));
  uint32_t *ec = (uint32_t *)calloc(ne, 4);
  for (uint64_t t = 0; t < T; t++) {
    const float *p = m->pos + 9 * t;
    double e0[3], e1[3], nn[3];
    for (int i = 0; i < 3; i++) {
      e0[i] = (double)p[3 + i] - (double)p[i];
      e1[i] = (double)p[6 + i] - (double)p[i];
    }
    nn[0] = e0[1] * e1[2] - e0[2] * e1[1];
    nn[1] = e0[2] * e1[0] - e0[0] * e1[2];
    nn[2] = e0[0] * e1[1] - e0[1] * e1[0];
    const double l = sqrt(nn[0] * nn[0] + nn[1] * nn[1] + nn[2] * nn[2]);
    for (int i = 0; i < 3; i++) nn[i] = l > 0.0 ? nn[i] / l : 0.0;
    for (int i = 0; i < 3; i++) face[3 * t + i] = (float)nn[i];
    for (int k = 0; k < 3; k++) {
      const float *a = p + 3 * k, *b = p + 3 * ((k + 1) % 3), *c = p + 3 * ((k + 2) % 3);
      double u[3], w[3];
      for (int i = 0; i < 3; i++) {
        u[i] = (double)b[i] - (double)a[i];
        w[i] = (double)c[i] - (double)a[i];
      }
      const double lu = sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
      const double lw = sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2]);
      double ca = lu > 0.0 && lw > 0.0 ? (u[0] * w[0] + u[1] * w[1] + u[2] * w[2]) / (lu * lw) : 1.0;
      ca = ca > 1.0 ? 1.0 : ca < -1.0 ? -1.0 : ca;
      const double ang = acos(ca);
      const uint32_t v = vid[3 * t + k];
      for (int i = 0; i < 3; i++) vs[4 * v + i] += ang * nn[i];
      vs[4 * v + 3] += ang;
    }
  }
  for (uint64_t c = 0; c < n; c++) {
    ec[eid[c]]++;
    for (int i = 0; i < 3; i++) es[3 * eid[c] + i] += face[3 * (c / 3) + i];
  }
  uint64_t boundary = 0, nonmanifold = 0;
  for (uint32_t e = 0; e < ne; e++) {
    boundary += ec[e] == 1;
    nonmanifold += ec[e] > 2;
  }
  for (int threads = 1; threads <= 3; threads += 2) {
    vx_sign_data s;
    vx_error err;
    CHECK_MSG(vx_sign_build_threads(m, threads, &s, &err) == VX_OK, "%s: %s", what, err.msg);
    CHECK(s.vert_count == nv && s.edge_count == ne);
    CHECK(s.boundary_edges == boundary && s.nonmanifold_edges == nonmanifold);
    CHECK(memcmp(s.vid, vid, n * 4) == 0);
    CHECK(memcmp(s.eid, eid, n * 4) == 0);
    CHECK(memcmp(s.face_n, face, T * 3 * sizeof(float)) == 0);
    uint64_t bad = 0;
    for (uint32_t v = 0; v < nv; v++)
      for (int i = 0; i < 3; i++) {
        const float want = vs[4 * v + 3] > 0.0 ? (float)(vs[4 * v + i] / vs[4 * v + 3]) : 0.0f;
        bad += memcmp(&want, &s.vert_n[3 * v + i], 4) != 0;
      }
    for (uint64_t c = 0; c < n; c++)
      for (int i = 0; i < 3; i++) {
        const float want = (float)(es[3 * eid[c] + i] / (double)ec[eid[c]]);
        bad += memcmp(&want, &s.edge_n[3 * c + i], 4) != 0;
      }
    CHECK_MSG(bad == 0, "%s, %d threads: %llu normals differ", what, threads,
              (unsigned long long)bad);
    fprintf(stderr, "  %-28s %2d thread%s: %8llu triangles, %8u vertices, %8u edges (%llu "
            "boundary, %llu non-manifold): the reference's bits\n", what, threads,
            threads == 1 ? " " : "s", (unsigned long long)T, nv, ne,
            (unsigned long long)boundary, (unsigned long long)nonmanifold);
    vx_free(s.eid);
    s.eid = NULL;
    vx_sign_free(&s);
  }
  clean_flags_match(what, m, vid, eid, nv, ne, ec);
  free(vid);
  free(eid);
  free(face);
  free(vs);
  free(es);
  free(ec);
}

static void tables_match_reference(void) {
  vx_soup m;
  memset(&m, 0, sizeof m);
  meshgen_sphere(&m, 0.1, -0.2, 0.05, 0.8, 40, 20);
  meshgen_torus(&m, 0.3, 0.2, -0.1, 0.6, 0.2, 36, 16);
  compare("sphere + torus", &m);
  vx_soup_free(&m);
  memset(&m, 0, sizeof m);
  meshgen_sphere(&m, 0.0, 0.0, 0.0, 1.0, 40, 20); /* one triangle flipped: its edges unbalanced */
  for (int i = 0; i < 3; i++) {
    float *p = m.pos + 9 * 100;
    const float keep = p[3 + i];
    p[3 + i] = p[6 + i];
    p[6 + i] = keep;
  }
  compare("sphere, one triangle flipped", &m);
  vx_soup_free(&m);
  memset(&m, 0, sizeof m);
  meshgen_sphere(&m, 0.0, 0.0, 0.0, 1.0, 240, 120); /* 57k triangles: several tasks */
  compare("sphere, 240 x 120", &m);
  vx_soup_free(&m);
  /* a soup: -0 and +0, a triangle repeated, reversed, and a fan of four on one edge */
  static const float tri[][9] = {
      {0, 0, 0, 1, 0, 0, 0, 1, 0},      {-0.0f, 0, 0, 1, 0, 0, 0, 1, 0}, {0, 1, 0, 1, 0, 0, 0, 0, 0},
      {1, 0, 0, 0, 0, -0.0f, 0, 0, 1},  {1, 0, 0, 0, 0, 0, 0, -1, 0},    {0, 0, 0, 1, 0, 0, 1, 1, 1},
      {0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 1, 2, 3}, /* degenerate */
  };
  m.tri_count = sizeof tri / sizeof tri[0];
  m.pos = (float *)vx_malloc(sizeof tri);
  memcpy(m.pos, tri, sizeof tri);
  for (int i = 0; i < 3; i++) m.bbox_min[i] = -1.0, m.bbox_max[i] = 3.0; /* holds every vertex */
  compare("soup: -0, repeats, a fan", &m);
  vx_soup_free(&m);
  static const char *names[] = {"messy/sphere_with_hole.stl", "messy/doubled_cube.obj",
                                "messy/two_boxes.ply", "messy/cube_with_fold.ply"};
  CHECK_MSG(vx_soup_import != NULL, "no mesh importer linked");
  for (int i = 0; i < 4 && vx_soup_import; i++) {
    char buf[1024];
    vx_error err;
    memset(&m, 0, sizeof m);
    CHECK_MSG(vx_soup_import(check_test_mesh(names[i], buf, sizeof buf), &m, &err) == VX_OK,
              "%s: %s", names[i], err.msg);
    if (m.tri_count) compare(names[i], &m);
    vx_soup_free(&m);
  }
}

int main(void) {
  RUN(tables_match_reference);
  return check_summary();
}
