/* SPDX-License-Identifier: Apache-2.0 */
/* test_export_color.c - colour in the outputs: meshes (vx_mesher_extract, vx_mesh_colors and the
 * PLY/GLB/OBJ writers) and exported grids (.vox palette, .vdb Cd, .nvdb Cd, PLY points) of a tree
 * coloured by hand.
 *
 *   test_export_color             checks through the library's own accessors
 *   test_export_color WORKDIR     also writes the files into WORKDIR for the readers that share
 *                                 no code with ours (test_export_color.py: trimesh, a .vox parser
 *                                 written from the format description, pyopenvdb)
 *
 * The tree: a sphere converted at 64^3 (depth 6). Every cell (node or voxel) gets the colour of
 * the octant (around the grid's centre, a node boundary from level 1 on) its box lies in, with its
 * level in the blue channel: r = 40 + 120 * bit0 + 60 * bit2, g = 60 + 120 * bit1, b = 20 + 25 *
 * level. So a mesh at --lod L must carry b = 20 + 25 L on every vertex, and each vertex the
 * octant of its position (vertices lie in their cells, clamped to them: those on an octant
 * plane can be either). Cells wholly above the cap plane z = centre + 0.6 r get alpha 0: holes,
 * not meshed.
 */
#define _POSIX_C_SOURCE 200809L
#define VOXLOD_EXPERIMENTAL /* lib/internal.h holds every handle */
#include "check.h"
#include "meshgen.h"
#include "voxlod.h"
#include "lib/internal.h"
#include "svo/color.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RES 64u
#define RADIUS 0.8
static const double CENTRE[3] = {0.03, -0.02, 0.05};
#define CAP 0.6 /* holes above z = centre z + CAP * RADIUS (world) */

static uint32_t octant_color(uint32_t oct, uint32_t level, uint32_t alpha) {
  uint32_t r = 40 + 120 * (oct & 1) + 60 * (oct >> 2 & 1), g = 60 + 120 * (oct >> 1 & 1);
  uint32_t b = 20 + 25 * level;
  return r | g << 8 | b << 16 | alpha << 24;
}

/* grid -> world of the tree, and the grid's centre (the octants' origin) */
typedef struct frame {
  double origin[3], scale, mid[3], cap_z;
  uint32_t D;
} frame;

static frame frame_of(const vx_octree *t) {
  frame f;
  f.D = t->depth;
  f.scale = t->xf.scale;
  for (int k = 0; k < 3; k++) {
    f.origin[k] = t->xf.origin[k];
    f.mid[k] = f.origin[k] + 0.5 * (double)(1u << t->depth) * f.scale;
  }
  f.cap_z = CENTRE[2] + CAP * RADIUS;
  return f;
}

/* Colours the cell of `level` with minimum corner c (finest voxels) and size s (finest voxels). */
static uint32_t cell_color(const frame *f, uint32_t level, const uint32_t c[3], uint32_t s) {
  double lo[3], hi[3];
  uint32_t oct = 0;
  for (int k = 0; k < 3; k++) {
    lo[k] = f->origin[k] + c[k] * f->scale;
    hi[k] = lo[k] + s * f->scale;
    if (0.5 * (lo[k] + hi[k]) > f->mid[k]) oct |= 1u << k;
  }
  return octant_color(oct, level, lo[2] > f->cap_z ? 0u : 255u);
}

static void color_node(vx_octree *t, const frame *f, uint64_t idx, uint32_t l,
                       const uint32_t c[3]) {
  uint32_t s = 1u << (t->depth - l);
  t->node_color[idx] = cell_color(f, l, c, s);
  const vx_node *n = &t->nodes[idx];
  uint32_t mask = vx_node_mask(n->info);
  for (uint32_t k = 0; k < 8; k++) {
    if (!(mask >> k & 1u)) continue;
    uint32_t ci = vx_child_index(n->child, mask, k);
    uint32_t cc[3] = {c[0] + (k & 1) * s / 2, c[1] + (k >> 1 & 1) * s / 2,
                      c[2] + (k >> 2 & 1) * s / 2};
    if (l + 1 < t->depth) color_node(t, f, ci, l + 1, cc);
    else t->voxel_color[ci] = cell_color(f, t->depth, cc, 1);
  }
}

static vx_tree *sphere_tree(int colored) {
  vx_soup s;
  memset(&s, 0, sizeof s);
  CHECK(meshgen_sphere(&s, CENTRE[0], CENTRE[1], CENTRE[2], RADIUS, 64, 32) == 0);
  vx_mesh *m = NULL;
  vx_error e;
  CHECK(vx_mesh_from_arrays(s.pos, 3 * s.tri_count, NULL, s.tri_count, &m, &e) == VX_OK);
  vx_soup_free(&s);
  if (!m) return NULL;
  vx_convert_opts co;
  memset(&co, 0, sizeof co);
  co.struct_size = sizeof co;
  co.resolution = RES;
  co.device = VX_DEVICE_CPU;
  co.threads = 2;
  vx_conversion *b = NULL;
  vx_status st = vx_convert(m, &co, &b, &e);
  CHECK_MSG(st == VX_OK, "convert: %s", e.msg);
  vx_tree *t = st == VX_OK ? vx_conversion_take_tree(b) : NULL;
  vx_conversion_free(b);
  vx_mesh_free(m);
  if (!t || !colored) return t;
  vx_octree *o = &t->oct;
  vx_free(o->node_color);
  vx_free(o->voxel_color);
  o->node_color = (uint32_t *)vx_malloc((size_t)o->node_count * 4);
  o->voxel_color = (uint32_t *)vx_malloc((size_t)(o->voxel_count ? o->voxel_count : 1) * 4);
  CHECK(o->node_color && o->voxel_color);
  frame f = frame_of(o);
  const uint32_t zero[3] = {0, 0, 0};
  color_node(o, &f, 0, 0, zero);
  return t;
}

static vx_mesh *mesh_at(const vx_tree *t, int level) {
  vx_mesher_opts o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.threads = 2;
  if (level >= 0) {
    o.cut = VX_MESHER_LEVEL;
    o.level = (uint32_t)level;
  }
  vx_mesh *m = NULL;
  vx_error e;
  vx_status st = vx_mesher_extract(t, &o, &m, &e);
  CHECK_MSG(st == VX_OK, "mesh: %s", e.msg);
  return m;
}

/* Every vertex: blue = the level's marker; the octant of its position (away from the planes);
 * nothing above the holes' plane (plus the cells around it). Returns vertices checked. */
static uint64_t check_mesh_colors(const vx_mesh *m, const frame *f, uint32_t level) {
  uint64_t n = 0, nc = 0, checked = 0, bad = 0, bad_blue = 0, above = 0;
  const float *p = vx_mesh_vertices(m, &n);
  const uint8_t *c = vx_mesh_colors(m, &nc);
  CHECK(c != NULL && nc == n);
  if (!c || nc != n) return 0;
  double cell = f->scale * (double)(1u << (f->D - level));
  for (uint64_t i = 0; i < n; i++) {
    uint32_t oct = 0;
    int near_plane = 0;
    for (int k = 0; k < 3; k++) {
      double d = p[3 * i + k] - f->mid[k];
      if (d > 0) oct |= 1u << k;
      if (d > -1e-3 * cell && d < 1e-3 * cell) near_plane = 1;
    }
    uint32_t want = octant_color(oct, level, 255);
    uint32_t got = c[4 * i] | (uint32_t)c[4 * i + 1] << 8 | (uint32_t)c[4 * i + 2] << 16 |
                   (uint32_t)c[4 * i + 3] << 24;
    if (c[4 * i + 2] != (want >> 16 & 255u)) bad_blue++;
    if (p[3 * i + 2] > f->cap_z + cell) above++;
    if (near_plane) continue;
    checked++;
    if (got != want) bad++;
  }
  CHECK_MSG(bad == 0, "level %u: %llu of %llu vertices off their octant's colour", level,
            (unsigned long long)bad, (unsigned long long)checked);
  CHECK_MSG(bad_blue == 0, "level %u: %llu vertices without the level's colour", level,
            (unsigned long long)bad_blue);
  CHECK_MSG(above == 0, "level %u: %llu vertices in the holes", level, (unsigned long long)above);
  CHECK_MSG(checked * 2 > n, "level %u: only %llu of %llu vertices away from the planes", level,
            (unsigned long long)checked, (unsigned long long)n);
  return checked;
}

static double max_z(const vx_mesh *m) {
  uint64_t n = 0;
  const float *p = vx_mesh_vertices(m, &n);
  double z = -1e30;
  for (uint64_t i = 0; i < n; i++)
    if (p[3 * i + 2] > z) z = p[3 * i + 2];
  return z;
}

static const char *workdir;
static char tmpdir[64];

static void save(const vx_mesh *m, const char *name) {
  if (!workdir) return;
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", workdir, name);
  vx_error e;
  vx_status st = vx_mesh_save(m, path, &e);
  CHECK_MSG(st == VX_OK, "save %s: %s", name, e.msg);
}

static void meshes_carry_the_cells_colors(void) {
  vx_tree *t = sphere_tree(1);
  vx_tree *g = sphere_tree(0);
  if (!t || !g) return;
  frame f = frame_of(&t->oct);
  if (workdir) { /* the frame, for test_export_color.py */
    char path[1024];
    snprintf(path, sizeof path, "%s/frame.txt", workdir);
    FILE *o = fopen(path, "w");
    CHECK(o != NULL);
    if (o) {
      fprintf(o, "%.17g %.17g %.17g %.17g %u %.17g %.17g %.17g %.17g\n", f.origin[0], f.origin[1],
              f.origin[2], f.scale, f.D, f.cap_z, f.mid[0], f.mid[1], f.mid[2]);
      fclose(o);
    }
  }
  vx_mesh *fine = mesh_at(t, -1), *grey = mesh_at(g, -1);
  if (fine && grey) {
    check_mesh_colors(fine, &f, f.D);
    uint64_t n;
    CHECK(vx_mesh_colors(grey, &n) == NULL && n == 0);
    /* the holes: the grey sphere reaches its top, the coloured one stops at the cap */
    CHECK(max_z(grey) > CENTRE[2] + 0.95 * RADIUS);
    CHECK(max_z(fine) < f.cap_z + 2.0 * f.scale);
    uint64_t tf = 0, tg = 0;
    vx_mesh_indices(fine, &tf);
    vx_mesh_indices(grey, &tg);
    CHECK(tf < tg);
    save(fine, "fine.ply");
    save(fine, "fine.glb");
    save(fine, "fine.obj");
    save(grey, "grey.ply");
  }
  for (int level = 3; level <= 5; level++) {
    vx_mesh *m = mesh_at(t, level);
    if (!m) continue;
    check_mesh_colors(m, &f, (uint32_t)level);
    if (level == 4) save(m, "lod4.ply");
    vx_mesh_free(m);
  }
  /* the error cut: cells of several levels, each vertex its octant's colour at one of them */
  vx_mesher_opts eo;
  memset(&eo, 0, sizeof eo);
  eo.struct_size = sizeof eo;
  eo.cut = VX_MESHER_ERROR;
  eo.max_error = 2.0f;
  vx_mesh *em = NULL;
  vx_error ee;
  CHECK(vx_mesher_extract(t, &eo, &em, &ee) == VX_OK);
  vx_mesher_stats ms;
  memset(&ms, 0, sizeof ms);
  if (em && vx_mesher_get_stats(em, &ms) == VX_OK) {
    CHECK(ms.level_min < ms.level_max);
    uint64_t n = 0, bad = 0, checked = 0;
    const float *p = vx_mesh_vertices(em, &n);
    const uint8_t *c = vx_mesh_colors(em, NULL);
    for (uint64_t i = 0; c && i < n; i++) {
      uint32_t oct = 0;
      int near_plane = 0;
      for (int k = 0; k < 3; k++) {
        double d = p[3 * i + k] - f.mid[k];
        oct |= (d > 0) << k;
        near_plane |= d > -0.01 * f.scale && d < 0.01 * f.scale;
      }
      if (near_plane) continue;
      uint32_t got = c[4 * i] | (uint32_t)c[4 * i + 1] << 8 | (uint32_t)c[4 * i + 2] << 16 |
                     (uint32_t)c[4 * i + 3] << 24;
      int ok = 0;
      for (uint32_t l = ms.level_min; l <= ms.level_max; l++)
        ok |= got == octant_color(oct, l, 255);
      bad += !ok;
      checked++;
    }
    CHECK(c != NULL && checked * 2 > n);
    CHECK_MSG(bad == 0, "error cut: %llu of %llu vertices off their octant's colour",
              (unsigned long long)bad, (unsigned long long)checked);
  }
  vx_mesh_free(em);
  /* a mesh of only holes is refused, with the reason */
  for (uint64_t i = 0; i < t->oct.node_count; i++) t->oct.node_color[i] &= 0xffffffu;
  for (uint64_t i = 0; i < t->oct.voxel_count; i++) t->oct.voxel_color[i] &= 0xffffffu;
  vx_mesh *none = NULL;
  vx_error e;
  CHECK(vx_mesher_extract(t, NULL, &none, &e) == VX_ERR_EMPTY && !none);
  CHECK(strstr(e.msg, "cut out") != NULL);
  vx_mesh_free(fine);
  vx_mesh_free(grey);
  vx_tree_free(t);
  vx_tree_free(g);
}

static vx_status export_to(const vx_tree *t, const char *name, uint32_t levels, int solid,
                           vx_export_stats *st) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", workdir ? workdir : tmpdir, name);
  vx_export_opts o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.levels = levels;
  o.solid = solid;
  vx_error e;
  vx_status s = vx_tree_export(t, path, &o, st, &e);
  CHECK_MSG(s == VX_OK, "export %s: %s", name, e.msg);
  return s;
}

static uint8_t *slurp(const char *name, size_t *n) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", workdir ? workdir : tmpdir, name);
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *b = (uint8_t *)malloc((size_t)len + 1);
  *n = b && fread(b, 1, (size_t)len, f) == (size_t)len ? (size_t)len : 0;
  fclose(f);
  return b;
}

static uint32_t rd32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* A .vox read from the format's description: the palette (RGBA chunk: entry i is colour index
 * i + 1) and every voxel's colour index, counted per colour in *hist (256 entries). */
static uint8_t (*vox_list)[4]; /* read_vox: every voxel (x, y, z, colour index) when set */
static uint64_t vox_cap;

static int read_vox(const char *name, uint32_t pal[256], uint64_t hist[256], uint64_t *voxels) {
  size_t n = 0;
  uint8_t *b = slurp(name, &n);
  memset(hist, 0, 256 * sizeof *hist);
  *voxels = 0;
  int ok = b && n >= 20 && memcmp(b, "VOX ", 4) == 0 && memcmp(b + 8, "MAIN", 4) == 0;
  for (size_t at = 20; ok && at + 12 <= n;) {
    uint32_t len = rd32(b + at + 4);
    const uint8_t *c = b + at + 12;
    if (at + 12 + len > n) ok = 0;
    else if (memcmp(b + at, "XYZI", 4) == 0) {
      uint32_t k = rd32(c);
      for (uint32_t i = 0; i < k; i++) {
        hist[c[4 + 4 * i + 3]]++;
        if (vox_list && *voxels + i < vox_cap) memcpy(vox_list[*voxels + i], c + 4 + 4 * i, 4);
      }
      *voxels += k;
    } else if (memcmp(b + at, "RGBA", 4) == 0) {
      for (int i = 0; i < 256; i++) pal[(i + 1) & 255] = rd32(c + 4 * i);
    }
    at += 12 + len + rd32(b + at + 8);
  }
  free(b);
  return ok;
}

/* Reference OKLab (Ottosson 2020), double precision, from sRGB bytes. */
static void ref_oklab(uint32_t rgb, double lab[3]) {
  double c[3];
  for (int k = 0; k < 3; k++) {
    double v = (double)(rgb >> 8 * k & 255u) / 255.0;
    c[k] = v <= 0.04045 ? v / 12.92 : pow((v + 0.055) / 1.055, 2.4);
  }
  double l = cbrt(0.4122214708 * c[0] + 0.5363325363 * c[1] + 0.0514459929 * c[2]);
  double m = cbrt(0.2119034982 * c[0] + 0.6806995451 * c[1] + 0.1073969566 * c[2]);
  double s = cbrt(0.0883024619 * c[0] + 0.2817188376 * c[1] + 0.6299787005 * c[2]);
  lab[0] = 0.2104542553 * l + 0.7936177850 * m - 0.0040720468 * s;
  lab[1] = 1.9779984951 * l - 2.4285922050 * m + 0.4505937099 * s;
  lab[2] = 0.0259040371 * l + 0.7827717662 * m - 0.8086757660 * s;
}

static double lab_dist(uint32_t a, uint32_t b) {
  double x[3], y[3];
  ref_oklab(a, x);
  ref_oklab(b, y);
  return sqrt((x[0] - y[0]) * (x[0] - y[0]) + (x[1] - y[1]) * (x[1] - y[1]) +
              (x[2] - y[2]) * (x[2] - y[2]));
}

/* The voxels' colours as a dense RES^3 grid (finest coordinates). */
static void dense_colors(const vx_octree *t, uint64_t idx, uint32_t l, const uint32_t c[3],
                         uint32_t *grid) {
  uint32_t s = 1u << (t->depth - l);
  const vx_node *n = &t->nodes[idx];
  uint32_t mask = vx_node_mask(n->info);
  for (uint32_t k = 0; k < 8; k++) {
    if (!(mask >> k & 1u)) continue;
    uint32_t ci = vx_child_index(n->child, mask, k);
    uint32_t cc[3] = {c[0] + (k & 1) * s / 2, c[1] + (k >> 1 & 1) * s / 2,
                      c[2] + (k >> 2 & 1) * s / 2};
    if (l + 1 < t->depth) dense_colors(t, ci, l + 1, cc, grid);
    else grid[((uint64_t)cc[2] * RES + cc[1]) * RES + cc[0]] = t->voxel_color[ci];
  }
}

/* .vox: the palette holds the colours of the level exported (exact: at most 16 here), the holes
 * are left out; a tree of many colours gets 255 entries close to them. PLY points, .vdb and .nvdb
 * are written for the readers of test_export_color.py and test_export_nanovdb.cpp. */
static void grids_carry_the_cells_colors(void) {
  vx_tree *t = sphere_tree(1);
  if (!t) return;
  const uint32_t D = t->oct.depth;
  vx_export_stats st;
  uint32_t pal[256];
  uint64_t hist[256], voxels = 0;
  for (uint32_t level = D; level >= D - 2; level--) {
    char name[64];
    snprintf(name, sizeof name, "lod%u.vox", level);
    if (export_to(t, name, level + 1, 0, &st) != VX_OK) continue;
    CHECK(read_vox(name, pal, hist, &voxels));
    CHECK(voxels == st.values && voxels > 0);
    /* every voxel's colour is an octant colour of this level, opaque */
    uint64_t good = 0;
    for (int i = 1; i < 256; i++) {
      if (!hist[i]) continue;
      int known = 0;
      for (uint32_t oct = 0; oct < 8; oct++)
        known |= pal[i] == octant_color(oct, level, 255);
      CHECK_MSG(known, "level %u: palette entry %d is %08x", level, i, pal[i]);
      good += known ? hist[i] : 0;
    }
    CHECK(good == voxels);
    CHECK(hist[0] == 0);
    /* the holes are left out: fewer voxels than surface cells */
    CHECK(st.values < st.cells);
  }
  /* solid: inside voxels take colours of the palette too */
  if (export_to(t, "solid.vox", D - 1, 1, &st) == VX_OK) {
    CHECK(read_vox("solid.vox", pal, hist, &voxels));
    CHECK(voxels == st.values && voxels > st.cells / 2);
  }
  export_to(t, "points.ply", 0, 0, &st);
  if (vx_export_available(VX_EXPORT_VDB)) export_to(t, "lod5.vdb", D, 0, &st);
  if (vx_export_available(VX_EXPORT_NVDB)) export_to(t, "lod5.nvdb", D, 0, &st);
  /* many colours: a median cut; each voxel's entry within a small distance of its colour */
  vx_octree *o = &t->oct;
  for (uint64_t i = 0; i < o->voxel_count; i++)
    o->voxel_color[i] = (uint32_t)((i * 2654435761u) & 0xffffffu) | 0xff000000u;
  uint32_t *dense = (uint32_t *)calloc((size_t)RES * RES * RES, sizeof(uint32_t));
  vox_cap = o->voxel_count;
  vox_list = (uint8_t(*)[4])malloc((size_t)vox_cap * 4);
  CHECK(dense && vox_list);
  if (dense && vox_list && export_to(t, "many.vox", 0, 0, &st) == VX_OK) {
    const uint32_t zero[3] = {0, 0, 0};
    dense_colors(o, 0, 0, zero, dense);
    CHECK(read_vox("many.vox", pal, hist, &voxels));
    CHECK(voxels == o->voxel_count);
    int used = 0;
    for (int i = 1; i < 256; i++) used += hist[i] != 0;
    CHECK_MSG(used > 200, "%d palette entries used", used);
    /* each voxel: the entry nearest to its colour in OKLab (up to float rounding), and the
     * quantisation error small for 255 entries over random colours */
    double sum = 0.0;
    uint64_t not_nearest = 0;
    for (uint64_t i = 0; i < voxels && i < vox_cap; i++) {
      const uint8_t *q = vox_list[i];
      uint32_t truth = dense[((uint64_t)q[2] * RES + q[1]) * RES + q[0]];
      double d = lab_dist(truth, pal[vox_list[i][3]]), best = 1e30;
      for (int k = 1; k < 256; k++) { /* every entry of the palette (index 256 does not exist) */
        double e = lab_dist(truth, pal[k]);
        if (e < best) best = e;
      }
      if (d > best + 1e-4) not_nearest++;
      sum += d;
    }
    CHECK_MSG(not_nearest == 0, "%llu voxels not on their nearest palette entry",
              (unsigned long long)not_nearest);
    CHECK_MSG(sum / (double)voxels < 0.06, "mean OKLab error %.4f", sum / (double)voxels);
    fprintf(stderr, "many.vox: %d entries used, mean OKLab error %.4f\n", used,
            sum / (double)voxels);
  }
  free(dense);
  free(vox_list);
  vox_list = NULL;
  vx_tree_free(t);
}

int main(int argc, char **argv) {
  if (argc > 1) workdir = argv[1];
  if (workdir) mkdir(workdir, 0755); /* may exist */
  snprintf(tmpdir, sizeof tmpdir, "/tmp/vx_color_XXXXXX");
  if (!workdir) CHECK(mkdtemp(tmpdir) != NULL);
  RUN(meshes_carry_the_cells_colors);
  RUN(grids_carry_the_cells_colors);
  if (!workdir) { /* the files of a run without a directory */
    DIR *d = opendir(tmpdir);
    struct dirent *e;
    char path[1024];
    while (d && (e = readdir(d)))
      if (e->d_name[0] != '.') {
        snprintf(path, sizeof path, "%s/%s", tmpdir, e->d_name);
        unlink(path);
      }
    if (d) closedir(d);
    rmdir(tmpdir);
  }
  return check_summary();
}
