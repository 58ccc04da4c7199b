/* SPDX-License-Identifier: Apache-2.0 */
/* tiled_scene.h - what the tiled-tree tests share: the scene (a torus around a sphere, off
 * centre: tiles full, empty and cut through), a conversion to a file, and reading a file whole. */
#ifndef VOXLOD_TESTS_TILED_SCENE_H
#define VOXLOD_TESTS_TILED_SCENE_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "meshgen.h"
#include "voxlod.h" /* after lib/internal.h where a test includes both */

/* splitmix64: the next number in [0, 1) of the sequence in *state. */
static inline double tiled_rnd(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return (double)((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
}

/* Points of a tree (ti, joined) in tiles of 2^T: `faces` near the tiles' faces, edges and corners
 * (within 3 band widths), `anywhere` in and around the box, `surf` within spread x band of the
 * surface (vx_tree_surface_points), then 6 non-finite or huge ones; *n their count. */
static inline float *tiled_points(const vx_tree_info *ti, const vx_tree *joined, uint32_t T,
                                  uint64_t faces, uint64_t anywhere, uint64_t surf, float spread,
                                  uint64_t *state, uint64_t *n) {
  const uint64_t bad = 6;
  *n = faces + anywhere + surf + bad;
  float *p = (float *)malloc(*n * 3 * sizeof(float));
  const double R = ti->resolution, tile = (double)(1u << T);
  uint64_t k = 0;
  for (uint64_t i = 0; i < faces; i++, k++) {
    double g[3];
    for (int a = 0; a < 3; a++) g[a] = tiled_rnd(state) * R;
    /* one, two or three coordinates on a tile face, within 3 band widths of it */
    const int on = 1 + (int)(tiled_rnd(state) * 3.0);
    for (int a = 0; a < on; a++) {
      const int ax = (int)(tiled_rnd(state) * 3.0);
      const double f = floor(tiled_rnd(state) * (R / tile + 1.0)) * tile;
      g[ax] = f + (tiled_rnd(state) * 2.0 - 1.0) * 3.0 * ti->band;
    }
    for (int a = 0; a < 3; a++) p[3 * k + a] = (float)(ti->origin[a] + g[a] * ti->scale);
  }
  for (uint64_t i = 0; i < anywhere; i++, k++)
    for (int a = 0; a < 3; a++)
      p[3 * k + a] = (float)(ti->origin[a] + (tiled_rnd(state) * 1.2 - 0.1) * R * ti->scale);
  vx_surface_points_opts so;
  memset(&so, 0, sizeof so);
  so.struct_size = sizeof so;
  so.spread = spread * ti->band;
  so.seed = 3;
  CHECK(vx_tree_surface_points(joined, &so, surf, p + 3 * k, NULL) == VX_OK);
  k += surf;
  const float inf = INFINITY, nan = NAN;
  const float odd[6][3] = {{nan, 0, 0}, {0, inf, 0}, {0, 0, -inf}, {1e30f, 0, 0},
                           {-3e38f, 3e38f, 0}, {0, 0, 1e38f}};
  for (uint64_t i = 0; i < bad; i++, k++)
    for (int a = 0; a < 3; a++) p[3 * k + a] = odd[i][a];
  return p;
}

/* A point on one of the first `tris` triangles of s (uniform on it), moved by up to `off` world
 * units per axis, into out. */
static inline void tiled_point_near(const vx_soup *s, uint64_t tris, double off, uint64_t *state,
                                    float out[3]) {
  const uint64_t t = (uint64_t)(tiled_rnd(state) * (double)tris);
  double a = tiled_rnd(state), b = tiled_rnd(state);
  if (a + b > 1.0) a = 1.0 - a, b = 1.0 - b;
  const float *P = s->pos + 9 * t;
  for (int k = 0; k < 3; k++) {
    const double on = P[k] + a * (P[3 + k] - P[k]) + b * (P[6 + k] - P[k]);
    out[k] = (float)(on + (tiled_rnd(state) * 2.0 - 1.0) * off);
  }
}

/* A generated soup as a mesh (the soup kept). */
static inline vx_mesh *tiled_mesh_of(const vx_soup *s) {
  float *v = (float *)malloc(s->tri_count * 9 * sizeof(float));
  uint32_t *ix = (uint32_t *)malloc(s->tri_count * 3 * sizeof(uint32_t));
  memcpy(v, s->pos, s->tri_count * 9 * sizeof(float));
  for (uint32_t i = 0; i < s->tri_count * 3; i++) ix[i] = i;
  vx_mesh *m = NULL;
  CHECK(vx_mesh_from_arrays(v, s->tri_count * 3, ix, s->tri_count, &m, NULL) == VX_OK);
  free(v);
  free(ix);
  return m;
}

/* The scene's triangles into s (emptied first): a torus around a sphere, off centre. */
static inline void tiled_scene_soup(vx_soup *s) {
  memset(s, 0, sizeof *s);
  meshgen_sphere(s, 0.2, 0.1, 0.0, 0.6, 40, 20);
  meshgen_torus(s, 0.0, 0.0, 0.1, 1.0, 0.25, 48, 16);
}

static inline vx_mesh *tiled_scene(void) {
  vx_soup s;
  tiled_scene_soup(&s);
  vx_mesh *m = tiled_mesh_of(&s);
  vx_soup_free(&s);
  return m;
}

/* A colour at every vertex of m (the soup s's) from its position: a smooth field of hues with
 * spatial frequency k; with `holes`, one band of the torus half transparent, the sphere's top cap
 * wholly so (else alpha 255). */
static inline void tiled_color_by_position(vx_mesh *m, const vx_soup *s, double k, int holes) {
  const uint64_t nv = s->tri_count * 3;
  uint8_t *c = (uint8_t *)malloc(nv * 4);
  for (uint64_t i = 0; i < nv; i++) {
    const float *p = s->pos + 3 * i;
    c[4 * i + 0] = (uint8_t)(127.5 + 127.0 * sin(3.0 * k * p[0]));
    c[4 * i + 1] = (uint8_t)(127.5 + 127.0 * cos(5.0 * k * p[1]));
    c[4 * i + 2] = (uint8_t)(127.5 + 127.0 * sin(4.0 * k * p[2] + p[0]));
    c[4 * i + 3] = !holes ? 255 : p[2] > 0.4f ? 0 : p[0] > 0.8f ? 96 : 255;
  }
  vx_error e;
  CHECK_MSG(m && vx_mesh_set_vertex_colors(m, c, nv, 4, &e) == VX_OK, "%s", e.msg);
  free(c);
}

/* The tiled scene coloured by tiled_color_by_position with holes (the tiles that only the
 * sphere's cap reaches have no opaque surface, so their colour comes from above). */
static inline vx_mesh *tiled_colored_scene(void) {
  vx_soup s;
  tiled_scene_soup(&s);
  vx_mesh *m = tiled_mesh_of(&s);
  tiled_color_by_position(m, &s, 1.0, 1);
  vx_soup_free(&s);
  return m;
}

/* A scene for 32768^3: a sphere of about 130 voxels around the corner of 8 tiles of 4096^3, and
 * two little cubes at the box's corners that make the grid that wide. Returns the sphere's
 * triangles (the first ones of s). */
static inline uint64_t tiled_corner_sphere(vx_soup *s) {
  memset(s, 0, sizeof *s);
  meshgen_sphere(s, 0.125, 0.125, 0.125, 0.004, 48, 24);
  const uint64_t sphere_tris = s->tri_count;
  const double a0[3] = {0, 0, 0}, a1[3] = {0.002, 0.002, 0.002};
  const double b0[3] = {0.998, 0.998, 0.998}, b1[3] = {1, 1, 1};
  meshgen_box(s, a0, a1);
  meshgen_box(s, b0, b1);
  return sphere_tris;
}

/* The options of a grey build at res^3 in tiles of 2^tile_depth (0: one tree). */
static inline vx_convert_opts tiled_opts(uint32_t res, uint32_t tile_depth, vx_device dev,
                                         int gpus, int threads) {
  vx_convert_opts o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.resolution = res;
  o.tile_depth = tile_depth;
  o.device = dev;
  o.gpus = gpus;
  o.threads = threads;
  o.color = VX_COLOR_OFF;
  return o;
}

/* mesh -> path with tiled_opts. */
static inline vx_status tiled_convert(const vx_mesh *m, uint32_t res, uint32_t tile_depth,
                                      vx_device dev, int gpus, int threads, const char *path,
                                      vx_error *err) {
  vx_convert_opts o = tiled_opts(res, tile_depth, dev, gpus, threads);
  return vx_convert_to_file(m, &o, path, NULL, err);
}

/* tiled_corner_sphere (its soup in s, the sphere's triangles first: *sphere_tris, may be NULL)
 * converted at 32768^3 in tiles of 4096^3 into path, opened, its info in ti; NULL (and a failed
 * check) when that fails. */
static inline vx_tiled_file *tiled_corner_file(const char *path, vx_soup *s, vx_tree_info *ti,
                                               uint64_t *sphere_tris) {
  const uint64_t n = tiled_corner_sphere(s);
  if (sphere_tris) *sphere_tris = n;
  vx_mesh *m = tiled_mesh_of(s);
  vx_error e;
  CHECK_MSG(tiled_convert(m, 32768, 12, VX_DEVICE_CPU, 0, 2, path, &e) == VX_OK, "%s", e.msg);
  vx_mesh_free(m);
  vx_tiled_file *f = NULL;
  CHECK_MSG(vx_tiled_file_open(path, NULL, &f, &e) == VX_OK, "%s", e.msg);
  memset(ti, 0, sizeof *ti);
  ti->struct_size = sizeof *ti;
  if (f) vx_tiled_file_get_info(f, ti);
  return f;
}

/* A whole file in memory (malloc'ed; *n its size), NULL when it cannot be read. */
static inline uint8_t *tiled_slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  *n = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *b = (uint8_t *)malloc(*n ? *n : 1);
  if (fread(b, 1, *n, f) != *n) *n = 0;
  fclose(f);
  return b;
}

/* 1 when the files at a and b hold the same bytes (and some). */
static inline int tiled_same_file(const char *a, const char *b) {
  size_t na = 0, nb = 0;
  uint8_t *x = tiled_slurp(a, &na), *y = tiled_slurp(b, &nb);
  const int same = x && y && na == nb && na > 0 && memcmp(x, y, na) == 0;
  free(x);
  free(y);
  return same;
}

/* n triangles (9 floats each) as a binary STL at path (a little-endian host's). */
static inline void tiled_write_stl(const char *path, const float *t, uint64_t n) {
  FILE *f = fopen(path, "wb");
  CHECK_MSG(f != NULL, "cannot write %s", path);
  if (!f) return;
  uint8_t head[84] = {0};
  const uint32_t c = (uint32_t)n;
  memcpy(head + 80, &c, 4);
  fwrite(head, 1, 84, f);
  for (uint64_t i = 0; i < n; i++) {
    uint8_t r[50] = {0};
    memcpy(r + 12, t + 9 * i, 36);
    fwrite(r, 1, 50, f);
  }
  fclose(f);
}

/* Of n samples (distances d, gradients g, flags f), how many differ between the two sets. */
static inline uint64_t tiled_samples_differ(uint64_t n, const float *d0, const float *g0,
                                            const uint8_t *f0, const float *d1, const float *g1,
                                            const uint8_t *f1) {
  uint64_t diff = 0;
  for (uint64_t i = 0; i < n; i++)
    diff += memcmp(d0 + i, d1 + i, 4) != 0 || memcmp(g0 + 3 * i, g1 + 3 * i, 12) != 0 ||
            f0[i] != f1[i];
  return diff;
}

#endif
