/* SPDX-License-Identifier: Apache-2.0 */
/* test_mesher_tiled.c - vx_tiled_file_mesh (include/voxlod/mesher.h): the full-detail mesh of a
 * tiled file window by window.
 * - Up to 16384^3: the mesh of the joined tree (vx_mesher_extract), triangle for triangle: each
 *   vertex matched to the joined mesh's vertex at the same place and with the same normal (within
 *   1e-3 voxel and 1e-3, exactly one: the vertices of cells that meet at a corner of the surface
 *   share their place, not their normal), the triangles then the same index triples with the same orientation, the colours the
 *   same bytes; tiles of 16^3 to 128^3, windows that keep all of themselves and windows that keep
 *   their middles only.
 * - Past it (32768^3): a sphere where 8 windows' middles meet, watertight, its vertices within a
 *   voxel of the exact sphere.
 * - Every mesh: watertight by an edge count of its own (each directed edge once, with its reverse).
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <unistd.h>

#include "lib/internal.h"
#include "mesher/mesher.h"
#include "tiled_scene.h"

static char dir[64];

static int cmp_u64(const void *a, const void *b) {
  const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Each directed edge of the triangles once and its reverse once: closed and edge-manifold.
 * Returns the edges that break it. */
static uint64_t broken_edges(const uint32_t *tri, uint64_t nt) {
  uint64_t *e = (uint64_t *)malloc((size_t)(3 * nt + 1) * sizeof *e);
  for (uint64_t t = 0; t < nt; t++)
    for (int k = 0; k < 3; k++)
      e[3 * t + (uint64_t)k] = (uint64_t)tri[3 * t + (uint64_t)k] << 32 | tri[3 * t + (uint64_t)(k + 1) % 3];
  const uint64_t n = 3 * nt;
  uint64_t bad = 0;
  qsort(e, (size_t)n, sizeof *e, cmp_u64); /* then each edge's reverse looked up */
  for (uint64_t i = 0; i < n; i++) {
    if (i + 1 < n && e[i + 1] == e[i]) bad++; /* a directed edge twice */
    const uint64_t r = e[i] << 32 | e[i] >> 32;
    uint64_t lo = 0, hi = n;
    while (lo < hi) {
      const uint64_t m = (lo + hi) / 2;
      if (e[m] < r) lo = m + 1;
      else hi = m;
    }
    bad += !(lo < n && e[lo] == r);
  }
  free(e);
  return bad;
}

typedef struct vref {
  float x;
  uint32_t i;
} vref;

static int cmp_vref(const void *a, const void *b) {
  const float x = ((const vref *)a)->x, y = ((const vref *)b)->x;
  return x < y ? -1 : x > y;
}

/* A triangle rotated to start at its smallest index (orientation kept). */
static void canon(uint32_t t[3]) {
  while (t[0] > t[1] || t[0] > t[2]) {
    const uint32_t a = t[0];
    t[0] = t[1], t[1] = t[2], t[2] = a;
  }
}

static int cmp_tri(const void *a, const void *b) {
  const uint32_t *x = (const uint32_t *)a, *y = (const uint32_t *)b;
  for (int k = 0; k < 3; k++)
    if (x[k] != y[k]) return x[k] < y[k] ? -1 : 1;
  return 0;
}

/* Mesh w against mesh r (the reference): the same vertices (within tol world units, exactly one
 * each), the same triangles, the same colours. */
static void same_mesh(const vx_mesh *w, const vx_mesh *r, double tol) {
  uint64_t nw = 0, nr = 0, tw = 0, tr = 0;
  const float *pw = vx_mesh_vertices(w, &nw), *pr = vx_mesh_vertices(r, &nr);
  const uint32_t *iw = vx_mesh_indices(w, &tw), *ir = vx_mesh_indices(r, &tr);
  const float *nw_ = vx_mesh_normals(w, NULL), *nr_ = vx_mesh_normals(r, NULL);
  CHECK_MSG(nw == nr && tw == tr, "windows: %llu vertices, %llu triangles; joined: %llu, %llu",
            (unsigned long long)nw, (unsigned long long)tw, (unsigned long long)nr,
            (unsigned long long)tr);
  if (!pw || !pr || !iw || !ir) return;
  vref *s = (vref *)malloc((size_t)(nr + 1) * sizeof *s);
  for (uint64_t i = 0; i < nr; i++) s[i].x = pr[3 * i], s[i].i = (uint32_t)i;
  qsort(s, (size_t)nr, sizeof *s, cmp_vref);
  uint32_t *to = (uint32_t *)malloc((size_t)(nw + 1) * sizeof *to);
  uint64_t none = 0, several = 0;
  for (uint64_t v = 0; v < nw; v++) {
    const float *p = pw + 3 * v;
    uint64_t lo = 0, hi = nr;
    while (lo < hi) {
      const uint64_t m = (lo + hi) / 2;
      if (s[m].x < p[0] - tol) lo = m + 1;
      else hi = m;
    }
    int found = 0;
    double best = INFINITY;
    for (uint64_t k = lo; k < nr && s[k].x <= p[0] + tol; k++) {
      const float *q = pr + 3 * (uint64_t)s[k].i, *a = nw_ + 3 * v, *b = nr_ + 3 * (uint64_t)s[k].i;
      if (fabs(q[1] - p[1]) <= tol && fabs(q[2] - p[2]) <= tol && fabs(a[0] - b[0]) <= 1e-3 &&
          fabs(a[1] - b[1]) <= 1e-3 && fabs(a[2] - b[2]) <= 1e-3) {
        const double d = fabs(q[0] - p[0]) + fabs(q[1] - p[1]) + fabs(q[2] - p[2]);
        if (d < best) best = d, to[v] = s[k].i;
        found++;
      }
    }
    none += found == 0;
    several += found > 1;
  }
  CHECK_MSG(none == 0 && several == 0, "%llu vertices unmatched, %llu ambiguous",
            (unsigned long long)none, (unsigned long long)several);
  if (none == 0 && several == 0 && tw == tr) {
    uint32_t *a = (uint32_t *)malloc((size_t)(3 * tw + 1) * 4), *b = (uint32_t *)malloc((size_t)(3 * tr + 1) * 4);
    for (uint64_t i = 0; i < 3 * tw; i++) a[i] = to[iw[i]];
    memcpy(b, ir, (size_t)(3 * tr) * 4);
    for (uint64_t t = 0; t < tw; t++) canon(a + 3 * t), canon(b + 3 * t);
    qsort(a, (size_t)tw, 12, cmp_tri);
    qsort(b, (size_t)tr, 12, cmp_tri);
    uint64_t differ = 0;
    for (uint64_t t = 0; t < tw; t++) differ += cmp_tri(a + 3 * t, b + 3 * t) != 0;
    CHECK_MSG(differ == 0, "%llu of %llu triangles differ", (unsigned long long)differ,
              (unsigned long long)tw);
    const uint8_t *cw = vx_mesh_colors(w, NULL), *cr = vx_mesh_colors(r, NULL);
    CHECK((cw == NULL) == (cr == NULL));
    uint64_t cdiff = 0;
    for (uint64_t v = 0; cw && cr && v < nw; v++) cdiff += memcmp(cw + 4 * v, cr + 4 * (uint64_t)to[v], 4) != 0;
    CHECK_MSG(cdiff == 0, "%llu vertex colours differ", (unsigned long long)cdiff);
    free(a);
    free(b);
  }
  free(to);
  free(s);
}

/* Mesh m converted at res^3 in tiles of 2^T: window by window (windows keeping `margin` voxels
 * around their middles; 0: the library's) as joined (m freed). */
static void joined_equal(vx_mesh *m, uint32_t res, uint32_t T, int colored, uint32_t margin) {
  char path[128];
  snprintf(path, sizeof path, "%s/m%u_%u.svo", dir, res, T);
  vx_error e;
  vx_convert_opts o = tiled_opts(res, T, VX_DEVICE_CPU, 0, 2);
  if (colored) o.color = VX_COLOR_AUTO;
  CHECK_MSG(vx_convert_to_file(m, &o, path, NULL, &e) == VX_OK, "%s", e.msg);
  vx_mesh_free(m);
  vx_tree *t = NULL;
  vx_tiled_file *f = NULL;
  CHECK(vx_tree_load(path, NULL, &t, &e) == VX_OK);
  CHECK_MSG(vx_tiled_file_open(path, NULL, &f, &e) == VX_OK, "%s", e.msg);
  vx_mesh *r = NULL, *w = NULL;
  CHECK_MSG(t && vx_mesher_extract(t, NULL, &r, &e) == VX_OK, "%s", e.msg);
  vx_mesher_opts mo;
  memset(&mo, 0, sizeof mo);
  mo.struct_size = sizeof mo;
  mo.threads = (int)(res % 3); /* 0, 1 or 2 */
  CHECK_MSG(f && (margin ? vx_tiled_file_mesh_margin(f, &mo, margin, &w, &e)
                          : vx_tiled_file_mesh(f, &mo, &w, &e)) == VX_OK,
            "%s", e.msg);
  if (r && w) {
    vx_tree_info ti;
    memset(&ti, 0, sizeof ti);
    ti.struct_size = sizeof ti;
    vx_tree_get_info(t, &ti);
    same_mesh(w, r, 1e-3 * ti.scale);
    uint64_t nt = 0;
    const uint32_t *ix = vx_mesh_indices(w, &nt);
    CHECK(colored || broken_edges(ix, nt) == 0); /* the coloured scene's holes are cut out */
    CHECK(colored == (vx_mesh_colors(w, NULL) != NULL));
    /* the windows count their own grid points: the joined tree's counts */
    vx_mesher_stats a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    a.struct_size = b.struct_size = sizeof a;
    CHECK(vx_mesher_get_stats(w, &a) == VX_OK && vx_mesher_get_stats(r, &b) == VX_OK);
    CHECK_MSG(a.corners_shared == b.corners_shared && a.corners_disputed == b.corners_disputed &&
              a.corners_repaired == b.corners_repaired && a.open_edges == b.open_edges &&
              a.contacts_split == b.contacts_split && a.cells == b.cells,
              "windows %llu %llu %llu %llu %llu, joined %llu %llu %llu %llu %llu",
              (unsigned long long)a.corners_shared, (unsigned long long)a.corners_disputed,
              (unsigned long long)a.corners_repaired, (unsigned long long)a.open_edges,
              (unsigned long long)a.contacts_split, (unsigned long long)b.corners_shared,
              (unsigned long long)b.corners_disputed, (unsigned long long)b.corners_repaired,
              (unsigned long long)b.open_edges, (unsigned long long)b.contacts_split);
    fprintf(stderr, "  %u^3 in tiles of %u^3%s: %llu triangles, the joined tree's\n", res, 1u << T,
            colored ? ", coloured" : "", (unsigned long long)nt);
  }
  /* the coarser cuts are a level tree's */
  mo.cut = VX_MESHER_LEVEL;
  mo.level = 3;
  vx_mesh *x = NULL;
  CHECK(f && vx_tiled_file_mesh(f, &mo, &x, &e) == VX_ERR_INVALID_ARG && !x &&
        strstr(e.msg, "level_tree"));
  vx_mesh_free(r);
  vx_mesh_free(w);
  vx_tree_free(t);
  vx_tiled_file_close(f);
  remove(path);
}

static void tiles_of_16(void) { joined_equal(tiled_scene(), 128, 4, 0, 0); }
static void tiles_of_32(void) { joined_equal(tiled_scene(), 256, 5, 0, 0); }
/* windows of 256^3 that keep their middles of 128^3 and 32 voxels around them (this scene has no
 * thin parts whose re-signed voxels chain further), and the library's own */
static void tiles_of_128(void) {
  joined_equal(tiled_scene(), 1024, 7, 0, 32);
  joined_equal(tiled_scene(), 1024, 7, 0, 0);
}
static void coloured(void) { joined_equal(tiled_colored_scene(), 256, 5, 1, 0); }

/* 32768^3 in tiles of 4096^3: a sphere of about 130 voxels around the point where 8 windows'
 * middles meet (6144 voxels from the corner), two little cubes at the box's corners. */
static void finer_than_one_tree(void) {
  vx_soup s;
  memset(&s, 0, sizeof s);
  const double c = 6144.0 / 32768.0, rad = 0.004;
  meshgen_sphere(&s, c, c, c, rad, 48, 24);
  const double a0[3] = {0, 0, 0}, a1[3] = {0.002, 0.002, 0.002};
  const double b0[3] = {0.998, 0.998, 0.998}, b1[3] = {1, 1, 1};
  meshgen_box(&s, a0, a1);
  meshgen_box(&s, b0, b1);
  vx_mesh *m = tiled_mesh_of(&s);
  vx_soup_free(&s);
  char path[128];
  snprintf(path, sizeof path, "%s/deep.svo", dir);
  vx_error e;
  CHECK_MSG(tiled_convert(m, 32768, 12, VX_DEVICE_CPU, 0, 2, path, &e) == VX_OK, "%s", e.msg);
  vx_mesh_free(m);
  vx_tiled_file *f = NULL;
  CHECK_MSG(vx_tiled_file_open(path, NULL, &f, &e) == VX_OK, "%s", e.msg);
  vx_mesh *w = NULL;
  CHECK_MSG(f && vx_tiled_file_mesh(f, NULL, &w, &e) == VX_OK, "%s", e.msg);
  if (w) {
    vx_tree_info ti;
    memset(&ti, 0, sizeof ti);
    ti.struct_size = sizeof ti;
    vx_tiled_file_get_info(f, &ti);
    uint64_t nv = 0, nt = 0;
    const float *p = vx_mesh_vertices(w, &nv);
    const uint32_t *ix = vx_mesh_indices(w, &nt);
    CHECK(broken_edges(ix, nt) == 0);
    uint64_t on_sphere = 0, off = 0;
    double worst = 0.0;
    for (uint64_t v = 0; v < nv; v++) {
      const double dx = p[3 * v] - c, dy = p[3 * v + 1] - c, dz = p[3 * v + 2] - c;
      const double d = sqrt(dx * dx + dy * dy + dz * dz);
      if (d > 2.0 * rad) continue; /* a cube's */
      on_sphere++;
      const double err = fabs(d - rad) / ti.scale;
      worst = err > worst ? err : worst;
      off += err > 1.0;
    }
    fprintf(stderr, "  32768^3: %llu triangles, %llu vertices on the sphere, %.3f voxel from it "
            "at most\n", (unsigned long long)nt, (unsigned long long)on_sphere, worst);
    CHECK(on_sphere > 100000); /* a sphere of 130 voxels: about 4 pi 130^2 cells */
    CHECK(off == 0);
  }
  vx_mesh_free(w);
  vx_tiled_file_close(f);
  /* a mesh past the memory limit is refused before the work, with its estimate */
  vx_read_opts ro;
  memset(&ro, 0, sizeof ro);
  ro.struct_size = sizeof ro;
  ro.mem_limit = (uint64_t)16 << 20; /* the tiles fit; 2 x 322 k triangles x 60 bytes do not */
  f = NULL;
  w = NULL;
  CHECK_MSG(vx_tiled_file_open(path, &ro, &f, &e) == VX_OK, "%s", e.msg);
  CHECK(f && vx_tiled_file_mesh(f, NULL, &w, &e) == VX_ERR_LIMIT && !w &&
        strstr(e.msg, "memory limit") && strstr(e.msg, "GiB"));
  vx_tiled_file_close(f);
  remove(path);
}

int main(int argc, char **argv) {
  snprintf(dir, sizeof dir, "/tmp/voxlod-mtiled-XXXXXX");
  if (!mkdtemp(dir)) return 1;
  RUN_ONE(tiles_of_16);
  RUN_ONE(tiles_of_32);
  RUN_ONE(coloured);
  if (argc >= 2) RUN_ONE(tiles_of_128); /* heavy: its own ctest entry (tests/mesher.cmake) */
  RUN_ONE(finer_than_one_tree);
  rmdir(dir);
  return check_summary();
}
