/* SPDX-License-Identifier: Apache-2.0 */
/* test_tiled_levels.c - one level of a tiled tree read tile by tile (lib/tiled_cut.c):
 * - up to 16384^3 (128^3 in tiles of 16^3) against the tree vx_tree_load joins: the cut at every
 *   level is vx_cut_build's on the joined tree bit for bit, vx_tiled_file_export writes the
 *   bytes vx_tree_export writes, and the level tree of the finest level is the joined tree node
 *   for node; a coarser level tree holds the level's cells, and its mesh lies on the surface
 *   with (nearly) every crossing closed;
 * - past 16384^3 (32768^3 in tiles of 4096^3, tiled_corner_sphere): the finest cut's cells and
 *   the level-14 and level-12 meshes against the exact distance to the mesh (brute force in
 *   double precision), the exports written, and refusals.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <unistd.h>
#include "lib/internal.h"
#include "lib/tiled_cut.h"
#include "tiled_scene.h"
#include "sample_ref.h"
#include "voxlod/export.h"

static char dir[256];

static int same_file(const char *a, const char *b) {
  FILE *f = fopen(a, "rb"), *g = fopen(b, "rb");
  int same = f && g;
  while (same) {
    int x = fgetc(f), y = fgetc(g);
    if (x != y) same = 0;
    if (x == EOF || y == EOF) break;
  }
  if (f) fclose(f);
  if (g) fclose(g);
  return same;
}

static vx_export_opts export_opts(uint32_t level, vx_export_format fmt) {
  vx_export_opts o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.levels = level + 1;
  o.format = fmt;
  return o;
}

/* The mesh of tree t at its finest level: closed (no open edge, every edge of two triangles in
 * opposite directions is what the mesher's stats and its own checks guarantee; counted here). */
static vx_mesh *mesh_of(const vx_tree *t, uint64_t *open_edges) {
  vx_mesher_opts mo;
  memset(&mo, 0, sizeof mo);
  mo.struct_size = sizeof mo;
  mo.cut = VX_MESHER_FINEST;
  vx_mesh *m = NULL;
  vx_error e;
  CHECK_MSG(vx_mesher_extract(t, &mo, &m, &e) == VX_OK, "%s", e.msg);
  vx_mesher_stats ms;
  memset(&ms, 0, sizeof ms);
  ms.struct_size = sizeof ms;
  if (m) vx_mesher_get_stats(m, &ms);
  *open_edges = ms.open_edges;
  return m;
}

static int cmp_u64(const void *a, const void *b) {
  const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Directed edges of an indexed mesh: each must appear once and its reverse once. */
static uint64_t unpaired_edges(const vx_mesh *m) {
  uint64_t nt = 0;
  const uint32_t *ix = vx_mesh_indices(m, &nt);
  uint64_t *e = (uint64_t *)malloc(nt * 3 * sizeof *e);
  for (uint64_t t = 0; t < nt; t++)
    for (int k = 0; k < 3; k++)
      e[3 * t + k] = (uint64_t)ix[3 * t + k] << 32 | ix[3 * t + (k + 1) % 3];
  qsort(e, nt * 3, sizeof *e, cmp_u64);
  uint64_t bad = 0;
  for (uint64_t i = 0; i < nt * 3; i++) {
    const uint64_t r = e[i] << 32 | e[i] >> 32;
    uint64_t lo = 0, hi = nt * 3;
    while (lo < hi) {
      uint64_t mid = (lo + hi) / 2;
      if (e[mid] < r) lo = mid + 1;
      else hi = mid;
    }
    bad += lo == nt * 3 || e[lo] != r || (i + 1 < nt * 3 && e[i + 1] == e[i]);
  }
  free(e);
  return bad;
}

/* The exact distance (in cells of size h) of the mesh's vertices to s: the worst and the mean,
 * over the vertices within near[3] of (near[0], near[1], near[2]) (NULL: all). */
static void vertex_error(const vx_mesh *m, const vx_soup *s, const double *near, double h,
                         double *worst, double *mean, uint64_t *n) {
  uint64_t nv = 0;
  const float *v = vx_mesh_vertices(m, &nv);
  *worst = *mean = 0.0;
  *n = 0;
  for (uint64_t i = 0; i < nv; i++) {
    const float *p = v + 3 * i;
    const double dx = p[0] - (near ? near[0] : 0), dy = p[1] - (near ? near[1] : 0),
                 dz = p[2] - (near ? near[2] : 0);
    if (near && dx * dx + dy * dy + dz * dz > near[3] * near[3]) continue;
    const double d = fabs(ref_sdf(s, p)) / h;
    *worst = d > *worst ? d : *worst;
    *mean += d;
    ++*n;
  }
  if (*n) *mean /= (double)*n;
}

/* Up to 16384^3: the same cuts, files and finest tree as the joined tree. */
static void joined(void) {
  vx_mesh *m = tiled_scene();
  vx_soup scene;
  memset(&scene, 0, sizeof scene);
  meshgen_sphere(&scene, 0.2, 0.1, 0.0, 0.6, 40, 20);
  meshgen_torus(&scene, 0.0, 0.0, 0.1, 1.0, 0.25, 48, 16);
  char u[300], t[300];
  snprintf(u, sizeof u, "%s/u.svo", dir);
  snprintf(t, sizeof t, "%s/t.svo", dir);
  vx_error e;
  CHECK(tiled_convert(m, 128, 4, VX_DEVICE_CPU, 0, 0, t, &e) == VX_OK);
  vx_mesh_free(m);
  vx_tree *j = NULL;
  vx_tiled_file *f = NULL;
  CHECK_MSG(vx_tree_load(t, NULL, &j, &e) == VX_OK, "%s", e.msg);
  CHECK_MSG(vx_tiled_file_open(t, NULL, &f, &e) == VX_OK, "%s", e.msg);
  if (!j || !f) return;
  const uint32_t D = j->oct.depth;
  for (uint32_t L = 0; L <= D; L++) {
    vx_cut a, b;
    CHECK_MSG(vx_cut_build(&j->oct, L, 0, NULL, NULL, &a, &e) == VX_OK, "%s", e.msg);
    CHECK_MSG(vx_tiled_cut(f, L, 0, NULL, NULL, &b, &e) == VX_OK, "%s", e.msg);
    CHECK_MSG(a.count == b.count && a.plane_cells == b.plane_cells && a.res == b.res &&
                  a.h == b.h && memcmp(a.origin, b.origin, sizeof a.origin) == 0,
              "level %u: %llu cells joined, %llu tile by tile", L, (unsigned long long)a.count,
              (unsigned long long)b.count);
    CHECK(a.count == b.count && memcmp(a.codes, b.codes, a.count * sizeof *a.codes) == 0 &&
          memcmp(a.field, b.field, a.count * sizeof *a.field) == 0);
    vx_cut_free(&a);
    vx_cut_free(&b);
  }
  printf("128^3 in 16^3 tiles: the cut at every level (0..%u) as the joined tree's\n", D);
  /* the files: PLY always, NanoVDB and OpenVDB where built */
  /* (OpenVDB gives each file a random UUID, so .vdb files never match byte for byte: the cuts
   * they come from are compared above) */
  const vx_export_format fmts[2] = {VX_EXPORT_PLY, VX_EXPORT_NVDB};
  const char *ext[2] = {"ply", "nvdb"};
  const uint32_t levels[3] = {D, 5, 2};
  for (int k = 0; k < 2; k++) {
    if (!vx_export_available(fmts[k])) {
      printf("  .%s: not built, skipped\n", ext[k]);
      continue;
    }
    for (int l = 0; l < 3; l++) {
      char pa[320], pb[320];
      snprintf(pa, sizeof pa, "%s/j%d.%s", dir, l, ext[k]);
      snprintf(pb, sizeof pb, "%s/t%d.%s", dir, l, ext[k]);
      vx_export_opts o = export_opts(levels[l], fmts[k]);
      vx_export_stats sa, sb;
      memset(&sa, 0, sizeof sa);
      memset(&sb, 0, sizeof sb);
      CHECK_MSG(vx_tree_export(j, pa, &o, &sa, &e) == VX_OK, "%s", e.msg);
      CHECK_MSG(vx_tiled_file_export(f, pb, &o, &sb, &e) == VX_OK, "%s", e.msg);
      CHECK_MSG(same_file(pa, pb) && sa.file_bytes == sb.file_bytes && sa.values == sb.values &&
                    sb.level == levels[l] && sb.cells > 0,
                "level %u .%s differs", levels[l], ext[k]);
      remove(pa);
      remove(pb);
    }
  }
  printf("  export tile by tile: the joined tree's bytes (.ply; .nvdb where built)\n");
  /* the finest level tree is the joined tree */
  vx_tree *lt = NULL;
  CHECK_MSG(vx_tiled_file_level_tree(f, D, NULL, &lt, &e) == VX_OK, "%s", e.msg);
  if (lt) {
    const vx_octree *x = &j->oct, *y = &lt->oct;
    CHECK(x->depth == y->depth && x->node_count == y->node_count &&
          x->voxel_count == y->voxel_count && x->band == y->band &&
          memcmp(&x->xf, &y->xf, sizeof x->xf) == 0);
    CHECK(x->node_count == y->node_count &&
          memcmp(x->nodes, y->nodes, x->node_count * sizeof(vx_node)) == 0);
    CHECK(x->voxel_count == y->voxel_count &&
          memcmp(x->voxels, y->voxels, x->voxel_count * sizeof(vx_voxel)) == 0);
    vx_tree_free(lt);
  }
  /* a coarser level: a tree of that depth over the level's cells, whose mesh is closed */
  for (uint32_t L = 4; L <= 6; L++) {
    lt = NULL;
    CHECK_MSG(vx_tiled_file_level_tree(f, L, NULL, &lt, &e) == VX_OK, "%s", e.msg);
    if (!lt) continue;
    vx_cut c;
    CHECK(vx_tiled_cut(f, L, 0, NULL, NULL, &c, &e) == VX_OK);
    CHECK(lt->oct.depth == L && lt->oct.voxel_count >= c.count &&
          lt->oct.xf.scale == j->oct.xf.scale * (double)(1u << (D - L)) &&
          vx_octree_validate(&lt->oct, &e) == VX_OK);
    /* every cell of the cut is one of its voxels (it may have more: the cells around
     * crossings the level's cells lack) */
    vx_cut lc;
    CHECK(vx_cut_build(&lt->oct, L, 0, NULL, NULL, &lc, &e) == VX_OK);
    uint64_t missing = 0;
    for (uint64_t i = 0, k = 0; i < c.count && lc.count; i++) {
      while (k < lc.count && lc.codes[k] < c.codes[i]) k++;
      missing += k == lc.count || lc.codes[k] != c.codes[i];
    }
    CHECK_MSG(missing == 0 && lc.count >= c.count, "level %u: %llu cells of the cut missing", L,
              (unsigned long long)missing);
    vx_cut_free(&lc);
    vx_cut_free(&c);
    /* its mesh: on the surface; open only where a crossing's cells lack corner values (the
     * mesher counts those: a few in 10^4 triangles where the torus meets the sphere) */
    uint64_t open = 0, nt = 0, n = 0;
    vx_mesh *lm = mesh_of(lt, &open);
    double worst = 0.0, mean = 0.0;
    if (lm) {
      vx_mesh_indices(lm, &nt);
      vertex_error(lm, &scene, NULL, lt->oct.xf.scale, &worst, &mean, &n);
    }
    printf("  level tree %u: %llu voxels, band %g; mesh of %llu triangles, vertices %.3f cells "
           "from the surface at most, %.3f on average, %llu crossings open\n", L,
           (unsigned long long)lt->oct.voxel_count, (double)lt->oct.band, (unsigned long long)nt,
           worst, mean, (unsigned long long)open);
    CHECK(lm && n > 100 && worst <= 1.5 && mean <= 0.1 && open * 1000 <= nt);
    vx_mesh_free(lm);
    vx_tree_free(lt);
  }
  /* refusals */
  lt = NULL;
  CHECK(vx_tiled_file_level_tree(f, 0, NULL, &lt, &e) == VX_ERR_INVALID_ARG && !lt);
  CHECK(vx_tiled_file_level_tree(f, D + 1, NULL, &lt, &e) == VX_ERR_INVALID_ARG && !lt);
  vx_export_opts o = export_opts(D + 1, VX_EXPORT_PLY);
  char p[320];
  snprintf(p, sizeof p, "%s/x.ply", dir);
  CHECK(vx_tiled_file_export(f, p, &o, NULL, &e) == VX_ERR_INVALID_ARG && access(p, F_OK) != 0);
  o = export_opts(D, VX_EXPORT_PLY);
  o.mem_limit = 1; /* the cells do not fit: refused, nothing written */
  CHECK(vx_tiled_file_export(f, p, &o, NULL, &e) == VX_ERR_LIMIT && access(p, F_OK) != 0);
  vx_tiled_file_close(f);
  vx_tree_free(j);
  vx_soup_free(&scene);
  remove(t);
}

/* Past 16384^3: 32768^3 in tiles of 4096^3. */
static void deep(void) {
  vx_soup s;
  char path[300];
  snprintf(path, sizeof path, "%s/big.svo", dir);
  vx_tree_info ti;
  vx_tiled_file *f = tiled_corner_file(path, &s, &ti, NULL);
  if (!f) {
    vx_soup_free(&s);
    return;
  }
  vx_error e;
  CHECK(ti.depth == 15);
  /* the finest cut: one cell per surface voxel, each within the band of the mesh */
  vx_cut c;
  CHECK_MSG(vx_tiled_cut(f, 15, 0, NULL, NULL, &c, &e) == VX_OK, "%s", e.msg);
  CHECK(c.count == ti.voxel_count && c.plane_cells == 0 && c.res == 32768);
  uint64_t far = 0;
  for (uint64_t i = 0; i < c.count; i += 7) {
    uint32_t x, y, z;
    vx_morton_decode(c.codes[i], &x, &y, &z);
    const float w[3] = {(float)(ti.origin[0] + (x + 0.5) * ti.scale),
                        (float)(ti.origin[1] + (y + 0.5) * ti.scale),
                        (float)(ti.origin[2] + (z + 0.5) * ti.scale)};
    far += fabs(ref_sdf(&s, w)) / ti.scale > ti.band + 1.0;
  }
  CHECK_MSG(far == 0, "%llu cells of the finest cut beyond the band", (unsigned long long)far);
  vx_cut_free(&c);
  /* the exports: the finest as points, level 12 as a grid */
  char p[320];
  snprintf(p, sizeof p, "%s/big.ply", dir);
  vx_export_opts o = export_opts(15, VX_EXPORT_PLY);
  vx_export_stats st;
  memset(&st, 0, sizeof st);
  CHECK_MSG(vx_tiled_file_export(f, p, &o, &st, &e) == VX_OK, "%s", e.msg);
  CHECK(st.level == 15 && st.resolution == 32768 && st.cells == ti.voxel_count &&
        st.values == st.cells && st.file_bytes > 24 * st.cells);
  remove(p);
  if (vx_export_available(VX_EXPORT_NVDB)) {
    snprintf(p, sizeof p, "%s/big.nvdb", dir);
    o = export_opts(12, VX_EXPORT_NVDB);
    memset(&st, 0, sizeof st);
    CHECK_MSG(vx_tiled_file_export(f, p, &o, &st, &e) == VX_OK, "%s", e.msg);
    CHECK(st.level == 12 && st.resolution == 4096 && st.cells > 0 && st.values > st.cells);
    remove(p);
  }
  /* levels 14 and 12 as trees, meshed: closed, on the mesh */
  for (uint32_t L = 14; L >= 12; L -= 2) {
    vx_tree *lt = NULL;
    CHECK_MSG(vx_tiled_file_level_tree(f, L, NULL, &lt, &e) == VX_OK, "%s", e.msg);
    if (!lt) continue;
    const double h = ti.scale * (double)(1u << (15 - L));
    CHECK(lt->oct.depth == L && lt->oct.xf.scale == h);
    uint64_t open = 0, n = 0;
    vx_mesh *lm = mesh_of(lt, &open);
    double worst = 0.0, mean = 0.0;
    const double sphere[4] = {0.125, 0.125, 0.125, 0.01};
    if (lm) vertex_error(lm, &s, sphere, h, &worst, &mean, &n);
    const uint64_t unpaired = lm ? unpaired_edges(lm) : 1;
    printf("32768^3, level %u as a tree: %llu voxels; its mesh: %llu vertices on the sphere, "
           "%.3f cells from it at most, %.3f on average; %llu open, %llu unpaired edges\n", L,
           (unsigned long long)lt->oct.voxel_count, (unsigned long long)n, worst, mean,
           (unsigned long long)open, (unsigned long long)unpaired);
    CHECK(n > 100 && open == 0 && unpaired == 0);
    CHECK_MSG(worst <= 1.0 && mean <= 0.2, "level %u: vertices %.3f cells off (mean %.3f)", L,
              worst, mean);
    vx_mesh_free(lm);
    vx_tree_free(lt);
  }
  vx_tree *lt = NULL;
  CHECK(vx_tiled_file_level_tree(f, 15, NULL, &lt, &e) == VX_ERR_INVALID_ARG && !lt);
  vx_tiled_file_close(f);
  vx_soup_free(&s);
  remove(path);
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/vx_tiled_levels_%d", (int)getpid());
  char cmd[300];
  snprintf(cmd, sizeof cmd, "mkdir -p %s", dir);
  if (system(cmd) != 0) return 1;
  joined();
  deep();
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) return 1;
  return check_summary();
}
