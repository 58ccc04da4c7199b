/* SPDX-License-Identifier: Apache-2.0 */
/* test_export.c - grids and voxel formats out, OpenVDB level sets in (include/voxlod/export.h).
 *
 * The exported files are decoded by readers written here from the public format descriptions
 * (binvox: patrickmin.com/binvox/binvox.html; .vox: github.com/ephtracy/voxel-model, the format
 * and its scene-graph extension; PLY: the binary little-endian header and body), not by our
 * writers' code, and compared with the tree's own voxels found by walking its node arrays.
 * NanoVDB's reader and pyopenvdb check the grids (test_export_nanovdb.cpp, test_export_vdb.py).
 * Also: every refusal (too large, --lod beyond the tree, an unwritable path, a fog volume, a
 * damaged .vdb) gives a clear error and leaves no file.
 */
#include "check.h"
#include "meshgen.h"
#include "voxlod.h"
#include "formats/vdb_read.h"
#include "svo/node.h"

#include <errno.h>
#include <stdint.h>
#include <unistd.h>

static char dir[200];
/* paths below are dir + "/" + a short name */

static void path_in(char *buf, size_t n, const char *name) {
  snprintf(buf, n, "%.200s/%.40s", dir, name);
}

static int exists(const char *p) {
  struct stat st;
  return stat(p, &st) == 0;
}

static uint8_t *slurp(const char *p, size_t *n) {
  FILE *f = fopen(p, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *b = (uint8_t *)malloc((size_t)len + 1);
  *n = fread(b, 1, (size_t)len, f);
  fclose(f);
  return b;
}

static vx_tree *tree_of(vx_soup *m, uint32_t res) {
  vx_mesh *mesh = NULL;
  vx_error e;
  vx_status s = vx_mesh_from_arrays(m->pos, 3 * m->tri_count, NULL, m->tri_count, &mesh, &e);
  CHECK_MSG(s == VX_OK, "%s", e.msg);
  vx_convert_opts o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.resolution = res;
  o.device = VX_DEVICE_CPU;
  vx_conversion *b = NULL;
  s = vx_convert(mesh, &o, &b, &e);
  CHECK_MSG(s == VX_OK, "%s", e.msg);
  vx_mesh_free(mesh);
  vx_tree *t = vx_conversion_take_tree(b);
  vx_conversion_free(b);
  return t;
}

/* A sphere of radius 0.4 at the origin in a res^3 tree. */
static vx_tree *sphere_tree(uint32_t res) {
  vx_soup m;
  memset(&m, 0, sizeof m);
  meshgen_sphere(&m, 0, 0, 0, 0.4, 48, 24);
  vx_tree *t = tree_of(&m, res);
  vx_soup_free(&m);
  return t;
}

/* Two small boxes at opposite corners of the bounding box: few voxels in a large grid. */
static vx_tree *corners_tree(uint32_t res) {
  vx_soup m;
  memset(&m, 0, sizeof m);
  double a0[3] = {0, 0, 0}, a1[3] = {0.01, 0.01, 0.01}, b0[3] = {0.99, 0.99, 0.99}, b1[3] = {1, 1, 1};
  meshgen_box(&m, a0, a1);
  meshgen_box(&m, b0, b1);
  vx_tree *t = tree_of(&m, res);
  vx_soup_free(&m);
  return t;
}

static vx_tree_info info_of(const vx_tree *t) {
  vx_tree_info i;
  memset(&i, 0, sizeof i);
  i.struct_size = sizeof i;
  vx_tree_get_info(t, &i);
  return i;
}

/* The grid coordinates of every surface voxel, by walking the node arrays level by level (nodes
 * of a level in Morton order, children contiguous): xyz[3 * i ..] of voxel i. */
static uint32_t *voxel_coords(const vx_tree *t, uint64_t *count) {
  vx_tree_info ti = info_of(t);
  uint64_t nn;
  const vx_node *nodes = (const vx_node *)vx_tree_nodes(t, &nn);
  uint32_t *cur = (uint32_t *)calloc(3, sizeof(uint32_t));
  for (uint32_t l = 0; l < ti.depth; l++) {
    uint64_t first = vx_tree_level_first(t, l), n = vx_tree_level_count(t, l);
    uint64_t next_n = vx_tree_level_count(t, l + 1);
    uint64_t next_first = l + 1 < ti.depth ? vx_tree_level_first(t, l + 1) : 0;
    uint32_t *next = (uint32_t *)calloc(3 * next_n + 3, sizeof(uint32_t));
    for (uint64_t i = 0; i < n; i++) {
      const vx_node *nd = &nodes[first + i];
      uint32_t mask = vx_node_mask(nd->info);
      for (uint32_t s = 0; s < 8; s++) {
        if (!(mask >> s & 1)) continue;
        uint64_t c = vx_child_index(nd->child, mask, s) - next_first;
        next[3 * c] = 2 * cur[3 * i] + (s & 1);
        next[3 * c + 1] = 2 * cur[3 * i + 1] + (s >> 1 & 1);
        next[3 * c + 2] = 2 * cur[3 * i + 2] + (s >> 2 & 1);
      }
    }
    free(cur);
    cur = next;
  }
  *count = vx_tree_level_count(t, ti.depth);
  return cur;
}

/* A dense occupancy map of the tree's voxels (res^3 bytes). */
static uint8_t *voxel_map(const vx_tree *t, uint64_t *count) {
  vx_tree_info ti = info_of(t);
  uint64_t r = ti.resolution;
  uint8_t *m = (uint8_t *)calloc(r * r * r, 1);
  uint32_t *xyz = voxel_coords(t, count);
  for (uint64_t i = 0; i < *count; i++)
    m[(xyz[3 * i] * r + xyz[3 * i + 1]) * r + xyz[3 * i + 2]] = 1;
  free(xyz);
  return m;
}

static vx_status export_to(const vx_tree *t, const char *name, vx_export_opts *o, char *path,
                           vx_export_stats *st, vx_error *e) {
  path_in(path, 256, name);
  unlink(path);
  if (st) {
    memset(st, 0, sizeof *st);
    st->struct_size = sizeof *st;
  }
  return vx_tree_export(t, path, o, st, e);
}

/* ---- binvox ------------------------------------------------------------------------------------ */

/* Decodes a .binvox (header lines, then value/count pairs, y fastest, then z, then x) into a
 * dense map indexed [x][y][z]. */
static uint8_t *binvox_read(const char *p, uint32_t *dim, double tr[3], double *scale) {
  size_t n;
  uint8_t *b = slurp(p, &n);
  if (!b) return NULL;
  b[n] = 0;
  char *data = strstr((char *)b, "\ndata\n");
  int d0, d1, d2;
  if (strncmp((char *)b, "#binvox 1\n", 10) != 0 || !data ||
      sscanf((char *)b, "#binvox 1\ndim %d %d %d\ntranslate %lf %lf %lf\nscale %lf", &d0, &d1, &d2,
             &tr[0], &tr[1], &tr[2], scale) != 7 || d0 != d1 || d1 != d2 || d0 <= 0) {
    free(b);
    return NULL;
  }
  uint64_t d = (uint64_t)d0, total = d * d * d, at = 0;
  uint8_t *m = (uint8_t *)calloc(total, 1);
  const uint8_t *q = (const uint8_t *)data + 6, *end = b + n;
  for (; q + 1 < end && at < total; q += 2) {
    for (uint32_t k = 0; k < q[1] && at < total; k++, at++) {
      uint64_t x = at / (d * d), z = at / d % d, y = at % d;
      m[(x * d + y) * d + z] = q[0];
    }
  }
  int ok = at == total && q == end;
  free(b);
  if (!ok) {
    free(m);
    return NULL;
  }
  *dim = (uint32_t)d;
  return m;
}

static void binvox_matches_tree_voxels(void) {
  vx_tree *t = sphere_tree(32);
  vx_tree_info ti = info_of(t);
  char p[256];
  vx_error e;
  vx_export_stats st;
  CHECK_MSG(export_to(t, "s.binvox", NULL, p, &st, &e) == VX_OK, "%s", e.msg);
  uint32_t d = 0;
  double tr[3], sc = 0;
  uint8_t *m = binvox_read(p, &d, tr, &sc);
  CHECK(m != NULL);
  uint64_t nv;
  uint8_t *want = voxel_map(t, &nv);
  CHECK(d == 32);
  CHECK(st.values == nv && st.cells == nv);
  if (m) CHECK(memcmp(m, want, 32 * 32 * 32) == 0);
  for (int k = 0; k < 3; k++) CHECK_NEAR(tr[k], ti.origin[k], 1e-12);
  CHECK_NEAR(sc, 32 * ti.scale, 1e-12);
  free(m);
  free(want);
  vx_tree_free(t);
}

static void binvox_solid_fills_the_inside(void) {
  vx_tree *t = sphere_tree(32);
  vx_tree_info ti = info_of(t);
  char p[256];
  vx_error e;
  vx_export_opts o;
  memset(&o, 0, sizeof o);
  o.solid = 1;
  CHECK_MSG(export_to(t, "solid.binvox", &o, p, NULL, &e) == VX_OK, "%s", e.msg);
  uint32_t d = 0;
  double tr[3], sc;
  uint8_t *m = binvox_read(p, &d, tr, &sc);
  uint64_t nv;
  uint8_t *surf = voxel_map(t, &nv);
  CHECK(m != NULL && d == 32);
  uint64_t bad_in = 0, bad_out = 0, lost = 0;
  for (uint32_t x = 0; m && x < d; x++)
    for (uint32_t y = 0; y < d; y++)
      for (uint32_t z = 0; z < d; z++) {
        size_t i = ((size_t)x * d + y) * d + z;
        double c[3] = {x + 0.5, y + 0.5, z + 0.5}, r2 = 0;
        for (int k = 0; k < 3; k++) {
          double w = ti.origin[k] + c[k] * ti.scale;
          r2 += w * w;
        }
        double r = sqrt(r2) / ti.scale, R = 0.4 / ti.scale; /* voxels */
        lost += surf[i] && !m[i];
        bad_in += r < R - 2.0 && !m[i];
        bad_out += r > R + 2.0 && m[i];
      }
  CHECK_MSG(lost == 0 && bad_in == 0 && bad_out == 0, "lost %llu, inside empty %llu, outside "
            "filled %llu", (unsigned long long)lost, (unsigned long long)bad_in,
            (unsigned long long)bad_out);
  free(m);
  free(surf);
  vx_tree_free(t);
}

/* ---- MagicaVoxel -------------------------------------------------------------------------------- */

static int32_t rd32(const uint8_t *p) {
  return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

/* Decodes a .vox into a dense map of side res, placing each model by the scene graph: its
 * transform's _t anchors the model box's centre (size / 2), and the writer's documented offset
 * (-res/2, -res/2, 0) puts the grid back at the origin. Returns the model count, -1 on a
 * malformed file. */
static int vox_read(const char *p, uint32_t res, uint8_t *map, uint64_t *voxels) {
  size_t n;
  uint8_t *b = slurp(p, &n);
  if (!b) return -1;
  int models = 0, ok = n >= 20 && memcmp(b, "VOX ", 4) == 0 && rd32(b + 4) == 150 &&
                   memcmp(b + 8, "MAIN", 4) == 0 && rd32(b + 12) == 0 &&
                   (size_t)rd32(b + 16) == n - 20;
  int32_t size[64][3];
  const uint8_t *xyzi[64];
  int32_t count[64];
  int32_t shape_model[256], trn_child[256], trn_t[256][3], nodes = 0;
  for (int i = 0; i < 256; i++) shape_model[i] = trn_child[i] = -1;
  *voxels = 0;
  for (size_t at = 20; ok && at + 12 <= n;) {
    const uint8_t *c = b + at;
    int32_t len = rd32(c + 4), kids = rd32(c + 8);
    if (len < 0 || kids != 0 || at + 12 + (size_t)len > n) {
      ok = 0;
      break;
    }
    const uint8_t *q = c + 12;
    if (memcmp(c, "SIZE", 4) == 0 && models < 64) {
      for (int k = 0; k < 3; k++) size[models][k] = rd32(q + 4 * k);
    } else if (memcmp(c, "XYZI", 4) == 0 && models < 64) {
      count[models] = rd32(q);
      xyzi[models] = q + 4;
      ok = (size_t)count[models] * 4 + 4 == (size_t)len;
      models++;
    } else if (memcmp(c, "nTRN", 4) == 0) {
      int32_t id = rd32(q), na = rd32(q + 4);
      ok = ok && na == 0 && id >= 0 && id < 256;
      const uint8_t *r = q + 8;
      int32_t child = rd32(r), frames = rd32(r + 12);
      r += 16;
      ok = ok && frames == 1;
      int32_t pairs = rd32(r);
      r += 4;
      int32_t t[3] = {0, 0, 0};
      for (int k = 0; k < pairs; k++) {
        int32_t kl = rd32(r);
        const char *key = (const char *)r + 4;
        r += 4 + kl;
        int32_t vl = rd32(r);
        char val[64];
        snprintf(val, sizeof val, "%.*s", (int)vl, (const char *)r + 4);
        r += 4 + vl;
        if (kl == 2 && memcmp(key, "_t", 2) == 0) ok = ok && sscanf(val, "%d %d %d", &t[0], &t[1], &t[2]) == 3;
      }
      if (ok) {
        trn_child[id] = child;
        memcpy(trn_t[id], t, sizeof t);
      }
      nodes++;
    } else if (memcmp(c, "nSHP", 4) == 0) {
      int32_t id = rd32(q);
      ok = ok && id >= 0 && id < 256 && rd32(q + 4) == 0 && rd32(q + 8) == 1;
      if (ok) shape_model[id] = rd32(q + 12);
      nodes++;
    }
    at += 12 + (size_t)len;
  }
  /* each transform whose child is a shape places that shape's model */
  int placed = 0;
  for (int id = 0; ok && id < 256; id++) {
    int32_t ch = trn_child[id];
    if (ch < 0 || ch >= 256 || shape_model[ch] < 0) continue;
    int32_t m = shape_model[ch];
    ok = m < models;
    if (!ok) break;
    placed++;
    for (int32_t v = 0; v < count[m]; v++) {
      const uint8_t *q = xyzi[m] + 4 * v;
      int64_t g[3];
      for (int k = 0; k < 3; k++) {
        g[k] = trn_t[id][k] - size[m][k] / 2 + q[k] + (k < 2 ? (int64_t)res / 2 : 0);
        ok = ok && g[k] >= 0 && g[k] < res && q[k] < size[m][k];
      }
      ok = ok && q[3] == 1;
      if (ok) map[((size_t)g[0] * res + (size_t)g[1]) * res + (size_t)g[2]] = 1;
      (*voxels)++;
    }
  }
  free(b);
  return ok && placed == models ? models : -1;
}

static void vox_matches_tree_voxels_across_models(void) {
  vx_tree *t = corners_tree(512);
  char p[256];
  vx_error e;
  vx_export_stats st;
  CHECK_MSG(export_to(t, "c.vox", NULL, p, &st, &e) == VX_OK, "%s", e.msg);
  uint64_t nv, got = 0;
  uint8_t *want = voxel_map(t, &nv);
  uint8_t *map = (uint8_t *)calloc((size_t)512 * 512 * 512, 1);
  int models = vox_read(p, 512, map, &got);
  CHECK_MSG(models == 2 && st.models == 2, "%d models", models);
  CHECK(got == nv && st.values == nv);
  CHECK(memcmp(map, want, (size_t)512 * 512 * 512) == 0);
  free(map);
  free(want);
  vx_tree_free(t);
}

static void vox_solid_matches_binvox_solid(void) {
  vx_tree *t = sphere_tree(32);
  char p[256], q[256];
  vx_error e;
  vx_export_opts o;
  memset(&o, 0, sizeof o);
  o.solid = 1;
  CHECK_MSG(export_to(t, "solid.vox", &o, p, NULL, &e) == VX_OK, "%s", e.msg);
  CHECK_MSG(export_to(t, "solid2.binvox", &o, q, NULL, &e) == VX_OK, "%s", e.msg);
  uint8_t *map = (uint8_t *)calloc(32 * 32 * 32, 1);
  uint64_t got;
  uint32_t d;
  double tr[3], sc;
  CHECK(vox_read(p, 32, map, &got) == 1);
  uint8_t *bv = binvox_read(q, &d, tr, &sc);
  CHECK(bv && memcmp(bv, map, 32 * 32 * 32) == 0);
  free(bv);
  free(map);
  vx_tree_free(t);
}

static void too_large_grids_are_refused_without_a_file(void) {
  vx_tree *t = corners_tree(4096);
  char p[256];
  vx_error e;
  vx_status s = export_to(t, "big.vox", NULL, p, NULL, &e);
  CHECK_MSG(s == VX_ERR_LIMIT && strstr(e.msg, "too large for .vox"), "%d %s", s, e.msg);
  CHECK(!exists(p));
  /* an existing file stays as it was */
  FILE *f = fopen(p, "wb");
  fputs("old", f);
  fclose(f);
  s = vx_tree_export(t, p, NULL, NULL, &e);
  CHECK(s == VX_ERR_LIMIT);
  size_t n;
  uint8_t *b = slurp(p, &n);
  CHECK(b && n == 3 && memcmp(b, "old", 3) == 0);
  free(b);
  vx_export_opts o;
  memset(&o, 0, sizeof o);
  o.levels = 12; /* level 11: 2048^3, which .vox holds */
  vx_export_stats st;
  s = export_to(t, "big2.vox", &o, p, &st, &e);
  CHECK_MSG(s == VX_OK && st.resolution == 2048, "%s", e.msg);
  vx_tree_free(t);
  t = corners_tree(8192);
  s = export_to(t, "big.binvox", NULL, p, NULL, &e);
  CHECK_MSG(s == VX_ERR_LIMIT && strstr(e.msg, "too large for .binvox"), "%d %s", s, e.msg);
  CHECK(!exists(p));
  vx_tree_free(t);
}

static void bad_options_and_paths_are_refused(void) {
  vx_tree *t = sphere_tree(16);
  char p[256];
  vx_error e;
  vx_export_opts o;
  memset(&o, 0, sizeof o);
  o.levels = 6; /* level 5 of a depth-4 tree */
  vx_status s = export_to(t, "lod.vdb", &o, p, NULL, &e);
  CHECK_MSG(s == VX_ERR_INVALID_ARG && strstr(e.msg, "beyond the tree's depth"), "%s", e.msg);
  CHECK(!exists(p));
  s = export_to(t, "x.unknown", NULL, p, NULL, &e);
  CHECK_MSG(s == VX_ERR_INVALID_ARG && strstr(e.msg, "unknown output format"), "%s", e.msg);
  s = vx_tree_export(t, "/nonexistent-dir/x.binvox", NULL, NULL, &e);
  CHECK_MSG(s == VX_ERR_IO || s == VX_ERR_INVALID_ARG, "%d %s", s, e.msg);
  memset(&o, 0, sizeof o);
  o.band = 100;
  s = export_to(t, "b.nvdb", &o, p, NULL, &e);
  CHECK(s == VX_ERR_INVALID_ARG && !exists(p));
  memset(&o, 0, sizeof o);
  o.grid_name = "bad\nname";
  s = export_to(t, "n.vdb", &o, p, NULL, &e);
  CHECK(s == VX_ERR_INVALID_ARG && !exists(p));
  /* options of another format are refused, not ignored */
  const char *misfit[] = {"s.nvdb", "b.ply", "g.vox", "p.binvox"};
  for (int k = 0; k < 4; k++) {
    memset(&o, 0, sizeof o);
    if (k == 0) o.solid = 1;
    if (k == 1) o.band = 3.0f;
    if (k == 2) o.grid_name = "g";
    if (k == 3) o.surface_points = 1;
    s = export_to(t, misfit[k], &o, p, NULL, &e);
    CHECK_MSG(s == VX_ERR_INVALID_ARG && !exists(p), "%s: %d %s", misfit[k], s, e.msg);
  }
  vx_tree_free(t);
}

/* ---- PLY --------------------------------------------------------------------------------------- */

static float *ply_read(const char *p, uint64_t *n) {
  size_t len;
  uint8_t *b = slurp(p, &len);
  if (!b) return NULL;
  b[len] = 0;
  char *end = strstr((char *)b, "end_header\n");
  unsigned long long nv = 0;
  char *ev = strstr((char *)b, "element vertex ");
  int ok = strncmp((char *)b, "ply\nformat binary_little_endian 1.0\n", 36) == 0 && end && ev &&
           sscanf(ev, "element vertex %llu", &nv) == 1;
  const char *props[6] = {"property float x\n", "property float y\n", "property float z\n",
                          "property float nx\n", "property float ny\n", "property float nz\n"};
  char *at = ev;
  for (int k = 0; ok && k < 6; k++) {
    char *f = strstr(at, props[k]);
    ok = f && f < end;
    at = f;
  }
  size_t body = (size_t)(end + 11 - (char *)b);
  ok = ok && len - body == nv * 24;
  float *v = NULL;
  if (ok) {
    v = (float *)malloc(nv * 24 + 1);
    memcpy(v, b + body, nv * 24);
    *n = nv;
  }
  free(b);
  return v;
}

static void ply_points_lie_on_the_tree(void) {
  vx_tree *t = sphere_tree(32);
  vx_tree_info ti = info_of(t);
  uint64_t nv;
  uint32_t *xyz = voxel_coords(t, &nv);
  for (int surface = 0; surface < 2; surface++) {
    char p[256];
    vx_error e;
    vx_export_opts o;
    memset(&o, 0, sizeof o);
    o.surface_points = surface;
    CHECK_MSG(export_to(t, surface ? "s2.ply" : "s.ply", &o, p, NULL, &e) == VX_OK, "%s", e.msg);
    uint64_t n = 0;
    float *v = ply_read(p, &n);
    CHECK(v && n == nv);
    uint64_t off = 0, inward = 0, far = 0;
    for (uint64_t i = 0; v && i < n; i++) {
      const float *q = v + 6 * i;
      double len = sqrt((double)q[3] * q[3] + (double)q[4] * q[4] + (double)q[5] * q[5]);
      double r = sqrt((double)q[0] * q[0] + (double)q[1] * q[1] + (double)q[2] * q[2]);
      double dot = (q[0] * q[3] + q[1] * q[4] + q[2] * q[5]) / (r * len);
      inward += !(dot > 0.5);
      off += fabs(len - 1.0) > 1e-5;
      for (int k = 0; k < 3 && !surface; k++)
        off += fabs(q[k] - (ti.origin[k] + (xyz[3 * i + k] + 0.5) * ti.scale)) > 1e-5;
      if (surface) far += fabs(r - 0.4) > 0.5 * ti.scale; /* on the surface within half a voxel */
    }
    CHECK_MSG(off == 0 && inward == 0 && far == 0, "surface %d: %llu off, %llu inward, %llu far",
              surface, (unsigned long long)off, (unsigned long long)inward, (unsigned long long)far);
    free(v);
  }
  free(xyz);
  vx_tree_free(t);
}

/* ---- .vdb in --------------------------------------------------------------------------------- */

static void vdb_round_trip_within_one_step(void) {
  if (!vx_export_available(VX_EXPORT_VDB)) return;
  vx_tree *t = sphere_tree(32);
  vx_tree_info ti = info_of(t);
  char p[256];
  vx_error e;
  CHECK_MSG(export_to(t, "rt.vdb", NULL, p, NULL, &e) == VX_OK, "%s", e.msg);
  vx_vdb_listing l;
  CHECK_MSG(vx_vdb_scan(p, &l, &e) == VX_OK, "%s", e.msg);
  CHECK(l.grid_count == 1 && l.listed == 1 && strcmp(l.grids[0].name, "surface") == 0 &&
        l.grids[0].is_float && l.grids[0].is_level_set && l.has_offsets);
  vx_conversion *b = NULL;
  vx_status s = vx_convert_grid(p, NULL, NULL, &b, &e);
  CHECK_MSG(s == VX_OK, "%s", e.msg);
  const vx_tree *u = vx_conversion_tree(b);
  vx_tree_info ui = info_of(u);
  CHECK(ui.depth == ti.depth && ui.scale == ti.scale);
  for (int k = 0; k < 3; k++) CHECK(ui.origin[k] == ti.origin[k]);
  /* every voxel of the original whose corners change sign is there, corners within one step */
  uint64_t na, nb;
  uint32_t *xa = voxel_coords(t, &na), *xb = voxel_coords(u, &nb);
  const vx_voxel *va = (const vx_voxel *)vx_tree_voxels(t, NULL);
  const vx_voxel *vb = (const vx_voxel *)vx_tree_voxels(u, NULL);
  uint64_t j = 0, missing = 0, off = 0;
  for (uint64_t i = 0; i < na; i++) {
    int neg = 0, pos = 0;
    for (int k = 0; k < 8; k++) {
      neg |= va[i].c[k] < 0;
      pos |= va[i].c[k] >= 0;
    }
    uint64_t code = vx_morton_encode(xa[3 * i], xa[3 * i + 1], xa[3 * i + 2]);
    while (j < nb && vx_morton_encode(xb[3 * j], xb[3 * j + 1], xb[3 * j + 2]) < code) j++;
    int found = j < nb && vx_morton_encode(xb[3 * j], xb[3 * j + 1], xb[3 * j + 2]) == code;
    if (neg && pos && !found) missing++;
    for (int k = 0; found && k < 8; k++) off += abs(va[i].c[k] - vb[j].c[k]) > 1;
  }
  CHECK_MSG(missing == 0 && off == 0, "%llu voxels missing, %llu corners off",
            (unsigned long long)missing, (unsigned long long)off);
  free(xa);
  free(xb);
  vx_conversion_free(b);
  /* and with a resolution: resampled onto 16^3 */
  vx_convert_opts co;
  memset(&co, 0, sizeof co);
  co.resolution = 16;
  s = vx_convert_grid(p, NULL, &co, &b, &e);
  CHECK_MSG(s == VX_OK && info_of(vx_conversion_tree(b)).resolution == 16, "%s", e.msg);
  CHECK(strstr(vx_conversion_notes(b), "resampled") != NULL);
  vx_conversion_free(b);
  vx_tree_free(t);
}

static void vdb_without_a_level_set_is_refused(void) {
  char fog[512], out[256];
  snprintf(fog, sizeof fog, "%s/vdb/fog.vdb", VX_CORPUS_DIR);
  path_in(out, sizeof out, "fog.svo");
  vx_error e;
  vx_conversion *b = NULL;
  vx_status s = vx_convert_grid_to_file(fog, NULL, NULL, out, &b, &e);
  CHECK_MSG(s == VX_ERR_FORMAT && strstr(e.msg, "no float level set") && strstr(e.msg, "density"),
            "%d %s", s, e.msg);
  vx_grid_opts g;
  memset(&g, 0, sizeof g);
  g.grid = "density";
  s = vx_convert_grid_to_file(fog, &g, NULL, out, &b, &e);
  CHECK_MSG(s == VX_ERR_FORMAT && strstr(e.msg, "not a float level set"), "%d %s", s, e.msg);
  g.grid = "nothere";
  s = vx_convert_grid_to_file(fog, &g, NULL, out, &b, &e);
  CHECK_MSG(s == VX_ERR_FORMAT && strstr(e.msg, "no grid named 'nothere'"), "%d %s", s, e.msg);
  CHECK(!exists(out) && b == NULL);
  path_in(fog, sizeof fog, "notvdb.vdb");
  FILE *f = fopen(fog, "wb");
  fputs("hello, not a grid", f);
  fclose(f);
  s = vx_convert_grid_to_file(fog, NULL, NULL, out, &b, &e);
  CHECK_MSG(s == VX_ERR_FORMAT && strstr(e.msg, "not an OpenVDB file"), "%d %s", s, e.msg);
  CHECK(!exists(out));
}

/* Every truncation and a sweep of damaged bytes: an error or a valid tree, never a crash, and no
 * output file when it fails. */
static void damaged_vdb_gives_errors_not_crashes(void) {
  if (!vx_export_available(VX_EXPORT_VDB)) return;
  vx_tree *t = sphere_tree(8);
  char p[256], q[256], out[256];
  vx_error e;
  CHECK_MSG(export_to(t, "small.vdb", NULL, p, NULL, &e) == VX_OK, "%s", e.msg);
  vx_tree_free(t);
  size_t n;
  uint8_t *b = slurp(p, &n);
  path_in(q, sizeof q, "damaged.vdb");
  path_in(out, sizeof out, "damaged.svo");
  vx_grid_opts g;
  memset(&g, 0, sizeof g);
  g.timeout_s = 20;
  uint64_t ok = 0, failed = 0;
  unlink(out);
  for (size_t cut = 0; b && cut < n; cut += cut < 400 ? 7 : n / 23) {
    FILE *f = fopen(q, "wb");
    fwrite(b, 1, cut, f);
    fclose(f);
    vx_conversion *r = NULL;
    vx_status s = vx_convert_grid_to_file(q, &g, NULL, out, &r, &e);
    CHECK_MSG(s != VX_OK && e.msg[0] && !exists(out), "cut %zu: %d %s", cut, s, e.msg);
    vx_conversion_free(r);
    failed += s != VX_OK;
  }
  for (size_t at = 0; b && at < n; at += 1 + n / 61) {
    uint8_t keep = b[at];
    b[at] ^= 0x5a;
    FILE *f = fopen(q, "wb");
    fwrite(b, 1, n, f);
    fclose(f);
    b[at] = keep;
    unlink(out);
    vx_conversion *r = NULL;
    vx_status s = vx_convert_grid_to_file(q, &g, NULL, out, &r, &e);
    if (s == VX_OK) ok++;
    else failed++;
    CHECK_MSG(s == VX_OK ? exists(out) : (!exists(out) && e.msg[0] != 0), "byte %zu: %d %s", at, s,
              e.msg);
    vx_conversion_free(r);
  }
  fprintf(stderr, "  damaged .vdb: %llu read, %llu refused\n", (unsigned long long)ok,
          (unsigned long long)failed);
  free(b);
}

int main(void) {
  snprintf(dir, sizeof dir, "%s/test_export_tmp", VX_BUILD_DIR);
  mkdir(dir, 0755);
  RUN(binvox_matches_tree_voxels);
  RUN(binvox_solid_fills_the_inside);
  RUN(vox_matches_tree_voxels_across_models);
  RUN(vox_solid_matches_binvox_solid);
  RUN(too_large_grids_are_refused_without_a_file);
  RUN(bad_options_and_paths_are_refused);
  RUN(ply_points_lie_on_the_tree);
  RUN(vdb_round_trip_within_one_step);
  RUN(vdb_without_a_level_set_is_refused);
  RUN(damaged_vdb_gives_errors_not_crashes);
  return check_summary();
}
