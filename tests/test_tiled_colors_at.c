/* SPDX-License-Identifier: Apache-2.0 */
/* test_tiled_colors_at.c - vx_tiled_file_colors (include/voxlod/sample.h): up to 16384^3 byte for
 * byte vx_tree_colors on the joined tree, at every level, on points everywhere (at the tiles'
 * faces, edges and corners, in and around the box, near the surface, non-finite), pruned and not,
 * tiles of 16^3 and of 4^3, with a tile cache of any size; past it (32768^3 in tiles of 4096^3)
 * against a brute force over every cell of every tile; and its refusals. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <unistd.h>
#include <zstd.h>

#include "tiled_scene.h"
#include "svo_spec.h"
#include "voxlod/sample.h"

static char dir[64];

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static double rnd(void) { return tiled_rnd(&rng_state); }

static vx_tree_info info_of_file(const vx_tiled_file *f) {
  vx_tree_info ti;
  memset(&ti, 0, sizeof ti);
  ti.struct_size = sizeof ti;
  vx_tiled_file_get_info(f, &ti);
  return ti;
}

/* r g b a bytes as packed RGBA8 (r in the low byte). */
static uint32_t packed(const uint8_t *c) {
  return (uint32_t)c[0] | (uint32_t)c[1] << 8 | (uint32_t)c[2] << 16 | (uint32_t)c[3] << 24;
}

/* A coloured conversion at res^3 in tiles of 2^T, pruned at max_error. */
static int colored_convert(vx_mesh *m, uint32_t res, uint32_t T, float max_error,
                           const char *path) {
  vx_convert_opts o = tiled_opts(res, T, VX_DEVICE_CPU, 0, 2);
  o.color = VX_COLOR_AUTO;
  o.max_error = max_error;
  vx_error e;
  const vx_status s = vx_convert_to_file(m, &o, path, NULL, &e);
  CHECK_MSG(s == VX_OK, "%s", e.msg);
  return s == VX_OK;
}

/* The coloured scene at res^3 in tiles of 2^T (pruned at max_error) against its joined tree:
 * every level, the default cache and one of a byte. */
static void joined_equal(uint32_t res, uint32_t T, float max_error) {
  char path[128];
  snprintf(path, sizeof path, "%s/c%u_%u_%g.svo", dir, res, T, (double)max_error);
  vx_mesh *m = tiled_colored_scene();
  const int ok = colored_convert(m, res, T, max_error, path);
  vx_mesh_free(m);
  if (!ok) return;
  vx_error e;
  vx_tree *t = NULL;
  vx_tiled_file *f = NULL;
  CHECK_MSG(vx_tree_load(path, NULL, &t, &e) == VX_OK, "%s", e.msg);
  CHECK_MSG(vx_tiled_file_open(path, NULL, &f, &e) == VX_OK, "%s", e.msg);
  if (!t || !f) {
    vx_tree_free(t);
    vx_tiled_file_close(f);
    return;
  }
  const vx_tree_info ti = info_of_file(f);
  CHECK(ti.has_color);
  uint64_t n = 0;
  float *p = tiled_points(&ti, t, T, 8000, 3000, 5000, 1.5f, &rng_state, &n);
  uint8_t *want = (uint8_t *)malloc(4 * n), *got = (uint8_t *)malloc(4 * n);
  uint64_t differ = 0, colored = 0, blank = 0;
  for (int level = -1; level <= (int)ti.depth; level++)
    for (int small = 0; small < 2; small++) {
      vx_tiled_sample_opts to;
      memset(&to, 0, sizeof to);
      to.struct_size = sizeof to;
      to.cache_bytes = small ? 1 : 0;
      CHECK_MSG(vx_tree_colors(t, p, n, level, want, &e) == VX_OK, "%s", e.msg);
      memset(got, 0xa5, 4 * n);
      CHECK_MSG(vx_tiled_file_colors(f, &to, p, n, level, got, &e) == VX_OK, "%s", e.msg);
      uint64_t d = 0, first = UINT64_MAX;
      for (uint64_t i = 0; i < n; i++)
        if (memcmp(want + 4 * i, got + 4 * i, 4) != 0) {
          d++;
          if (first == UINT64_MAX) first = i;
        }
      CHECK_MSG(d == 0, "level %d, cache %s: %llu of %llu points differ (first %llu)", level,
                small ? "1 byte" : "default", (unsigned long long)d, (unsigned long long)n,
                (unsigned long long)first);
      differ += d;
      if (level == -1 && !small)
        for (uint64_t i = 0; i < n; i++) {
          const uint32_t v = packed(got + 4 * i);
          colored += v != 0;
          blank += v == 0;
        }
    }
  /* the points must test both answers: a colour, and none */
  CHECK_MSG(colored > n / 4 && blank > n / 10, "%llu coloured, %llu without colour",
            (unsigned long long)colored, (unsigned long long)blank);
  fprintf(stderr, "  %u^3 in tiles of %u^3, max error %g: %llu points x %u levels x 2 caches, "
          "%llu differ (finest: %llu coloured)\n", res, 1u << T, (double)max_error,
          (unsigned long long)n, ti.depth + 2, (unsigned long long)differ,
          (unsigned long long)colored);
  free(p);
  free(want);
  free(got);
  vx_tree_free(t);
  vx_tiled_file_close(f);
}

static void tiles_of_16(void) { joined_equal(128, 4, 0.0f); }

/* More points in one tile than one search takes (2^20): searched in parts, the same bytes. */
static void one_crowded_tile(void) {
  char path[128];
  snprintf(path, sizeof path, "%s/crowd.svo", dir);
  vx_mesh *m = tiled_colored_scene();
  const int ok = colored_convert(m, 64, 4, 0.0f, path);
  vx_mesh_free(m);
  vx_error e;
  vx_tree *t = NULL;
  vx_tiled_file *f = NULL;
  if (ok) CHECK_MSG(vx_tree_load(path, NULL, &t, &e) == VX_OK, "%s", e.msg);
  if (ok) CHECK_MSG(vx_tiled_file_open(path, NULL, &f, &e) == VX_OK, "%s", e.msg);
  if (t && f) {
    const vx_tree_info ti = info_of_file(f);
    vx_tile_info best; /* the tile with the most voxels */
    memset(&best, 0, sizeof best);
    for (uint64_t i = 0; i < ti.tile_count; i++) {
      vx_tile_info tl;
      memset(&tl, 0, sizeof tl);
      tl.struct_size = sizeof tl;
      vx_tiled_file_get_tile(f, i, &tl);
      if (tl.voxel_count > best.voxel_count) best = tl;
    }
    const uint64_t n = ((uint64_t)1 << 20) + 12345;
    float *p = (float *)malloc(n * 3 * sizeof(float));
    for (uint64_t i = 0; i < 3 * n; i++)
      p[i] = (float)(best.origin[i % 3] + rnd() * best.edge);
    uint8_t *want = (uint8_t *)malloc(4 * n), *got = (uint8_t *)malloc(4 * n);
    CHECK_MSG(vx_tree_colors(t, p, n, -1, want, &e) == VX_OK, "%s", e.msg);
    CHECK_MSG(vx_tiled_file_colors(f, NULL, p, n, -1, got, &e) == VX_OK, "%s", e.msg);
    uint64_t d = 0, colored = 0;
    for (uint64_t i = 0; i < n; i++) {
      d += memcmp(want + 4 * i, got + 4 * i, 4) != 0;
      colored += packed(got + 4 * i) != 0;
    }
    CHECK_MSG(d == 0 && colored > n / 20, "%llu of %llu points differ, %llu coloured",
              (unsigned long long)d, (unsigned long long)n, (unsigned long long)colored);
    free(p);
    free(want);
    free(got);
  }
  vx_tree_free(t);
  vx_tiled_file_close(f);
}
static void tiles_of_4(void) { joined_equal(64, 2, 0.0f); }
static void pruned(void) {
  joined_equal(128, 4, 0.5f);
  joined_equal(128, 3, 4.0f);
}

/* ---- past 16384^3: a brute force over every cell ------------------------------------------ */

typedef struct cell_list {
  uint64_t n, cap;
  uint32_t *xyz;  /* 3 per cell: its coordinates at its level in the whole grid */
  uint8_t *lvl;   /* its level in the whole tree */
  uint8_t *leaf;  /* 1: a node without children above the finest level (stands for its box) */
  uint32_t *rgba; /* packed RGBA8 */
} cell_list;

static void cells_push(cell_list *c, const uint32_t xyz[3], uint32_t lvl, int leaf,
                       uint32_t rgba) {
  if (c->n == c->cap) {
    c->cap = c->cap ? 2 * c->cap : 4096;
    c->xyz = (uint32_t *)realloc(c->xyz, c->cap * 3 * sizeof(uint32_t));
    c->lvl = (uint8_t *)realloc(c->lvl, c->cap);
    c->leaf = (uint8_t *)realloc(c->leaf, c->cap);
    c->rgba = (uint32_t *)realloc(c->rgba, c->cap * sizeof(uint32_t));
  }
  memcpy(c->xyz + 3 * c->n, xyz, 3 * sizeof(uint32_t));
  c->lvl[c->n] = (uint8_t)lvl;
  c->leaf[c->n] = (uint8_t)leaf;
  c->rgba[c->n++] = rgba;
}

/* Every cell of every tile of f (levels K .. D of the whole tree), through the public calls:
 * each tile loaded as a tree, its cells placed by the format's breadth-first order
 * (tests/svo_spec.h, not the library's code). */
static void all_cells(vx_tiled_file *f, const vx_tree_info *ti, cell_list *out) {
  const uint32_t T = ti->tile_depth, K = ti->depth - T;
  for (uint64_t i = 0; i < ti->tile_count; i++) {
    vx_tile_info tl;
    memset(&tl, 0, sizeof tl);
    tl.struct_size = sizeof tl;
    vx_tree *t = NULL;
    vx_error e;
    CHECK(vx_tiled_file_get_tile(f, i, &tl) == VX_OK);
    CHECK_MSG(vx_tiled_file_load_tile(f, i, NULL, &t, &e) == VX_OK, "%s", e.msg);
    if (!t) continue;
    uint64_t count[16] = {0}, nn = 0, nv = 0, total = 0;
    for (uint32_t l = 0; l <= T; l++) total += count[l] = vx_tree_level_count(t, l);
    const uint8_t *nodes = (const uint8_t *)vx_tree_nodes(t, &nn);
    vx_tree_voxels(t, &nv);
    const uint32_t *nc = vx_tree_node_colors(t, NULL), *vc = vx_tree_voxel_colors(t, NULL);
    CHECK(nn + nv == total && nc && (nv == 0 || vc));
    uint8_t *mask = (uint8_t *)calloc(nn + 1, 1);
    for (uint64_t k = 0; k < nn; k++) mask[k] = nodes[16 * k + 4];
    uint32_t *xyz = (uint32_t *)malloc((total + 1) * 3 * sizeof(uint32_t));
    uint8_t *lvl = (uint8_t *)malloc(total + 1);
    spec_cells(T, count, mask, xyz, lvl);
    for (uint64_t k = 0; k < total; k++) {
      uint32_t g[3];
      for (int a = 0; a < 3; a++) g[a] = (tl.cell[a] << lvl[k]) + xyz[3 * k + a];
      cells_push(out, g, K + lvl[k], k < nn && mask[k] == 0, k < nn ? nc[k] : vc[k - nn]);
    }
    free(mask);
    free(xyz);
    free(lvl);
    vx_tree_free(t);
  }
}

static uint64_t morton3(uint64_t x, uint64_t y, uint64_t z) {
  uint64_t m = 0;
  for (int b = 0; b < 21; b++)
    m |= (x >> b & 1) << (3 * b) | (y >> b & 1) << (3 * b + 1) | (z >> b & 1) << (3 * b + 2);
  return m;
}

/* vx_tree_colors' rule by brute force: the cell of level L (a leaf above it standing for its
 * box) nearest the point's cell within Chebyshev radius ceil(band / cell), ties to the smaller
 * Morton code. */
static uint32_t brute_color(const cell_list *c, const vx_tree_info *ti, uint32_t L,
                            const float p[3]) {
  const double size = ldexp(1.0, (int)(ti->depth - L));
  const int64_t r = (int64_t)ceil((double)ti->band / size);
  int64_t q[3];
  for (int a = 0; a < 3; a++) {
    const double g = floor(((double)p[a] - ti->origin[a]) / (ti->scale * size));
    if (!(g > -1e9 && g < 1e9)) return 0;
    q[a] = (int64_t)g;
  }
  int found = 0;
  uint64_t best_d2 = 0, best_m = 0;
  uint32_t best = 0;
  for (uint64_t k = 0; k < c->n; k++) {
    const uint32_t l = c->lvl[k];
    if (l > L || (l < L && !c->leaf[k])) continue;
    int64_t x[3], d2 = 0, cheb = 0;
    for (int a = 0; a < 3; a++) {
      const int64_t lo = (int64_t)c->xyz[3 * k + a] << (L - l), hi = lo + ((int64_t)1 << (L - l)) - 1;
      x[a] = q[a] < lo ? lo : q[a] > hi ? hi : q[a]; /* the box's cell nearest the point's */
      const int64_t d = llabs(x[a] - q[a]);
      cheb = d > cheb ? d : cheb;
      d2 += d * d;
    }
    if (cheb > r) continue;
    const uint64_t m = morton3((uint64_t)x[0], (uint64_t)x[1], (uint64_t)x[2]);
    if (!found || (uint64_t)d2 < best_d2 || ((uint64_t)d2 == best_d2 && m < best_m)) {
      found = 1;
      best_d2 = (uint64_t)d2;
      best_m = m;
      best = c->rgba[k];
    }
  }
  return best;
}

/* 32768^3 in tiles of 4096^3 (tiled_corner_sphere, coloured by position): every level from the
 * tiles' roots down against the brute force. */
static void finer_than_one_tree(void) {
  vx_soup s;
  const uint64_t sphere_tris = tiled_corner_sphere(&s);
  vx_mesh *m = tiled_mesh_of(&s);
  tiled_color_by_position(m, &s, 500.0, 0);
  vx_error e;
  char path[128];
  snprintf(path, sizeof path, "%s/big.svo", dir);
  const int ok = colored_convert(m, 32768, 12, 0.0f, path);
  vx_mesh_free(m);
  vx_tiled_file *f = NULL;
  if (ok) CHECK_MSG(vx_tiled_file_open(path, NULL, &f, &e) == VX_OK, "%s", e.msg);
  if (!f) {
    vx_soup_free(&s);
    return;
  }
  const vx_tree_info ti = info_of_file(f);
  CHECK(ti.depth == 15 && ti.tile_depth == 12 && ti.has_color);
  cell_list cells;
  memset(&cells, 0, sizeof cells);
  all_cells(f, &ti, &cells);
  /* points within 2 band widths of the sphere's facets, and some anywhere in and around it */
  const uint64_t n = 600;
  float *p = (float *)malloc(n * 3 * sizeof(float));
  for (uint64_t i = 0; i < n; i++) {
    if (i % 6 == 5) {
      for (int k = 0; k < 3; k++) p[3 * i + k] = (float)(0.125 + (rnd() - 0.5) * 0.012);
      continue;
    }
    tiled_point_near(&s, sphere_tris, 2.0 * ti.band * ti.scale, &rng_state, p + 3 * i);
  }
  uint8_t *got = (uint8_t *)malloc(4 * n);
  const uint32_t K = ti.depth - ti.tile_depth, levels[] = {15, 14, 12, 9, 6, 4};
  uint64_t differ = 0, colored = 0;
  for (size_t li = 0; li < sizeof levels / sizeof *levels; li++) {
    const uint32_t L = levels[li];
    CHECK(L > K);
    CHECK_MSG(vx_tiled_file_colors(f, NULL, p, n, (int)L, got, &e) == VX_OK, "%s", e.msg);
    uint64_t d = 0;
    for (uint64_t i = 0; i < n; i++) {
      const uint32_t want = brute_color(&cells, &ti, L, p + 3 * i);
      const uint32_t v = packed(got + 4 * i);
      d += v != want;
      colored += v != 0;
    }
    CHECK_MSG(d == 0, "level %u: %llu of %llu points differ from the brute force", L,
              (unsigned long long)d, (unsigned long long)n);
    differ += d;
  }
  CHECK(colored > n);
  /* at the tiles' roots and above: the top tree alone; at level K its cells are the tiles' roots */
  CHECK_MSG(vx_tiled_file_colors(f, NULL, p, n, (int)K, got, &e) == VX_OK, "%s", e.msg);
  uint64_t dk = 0;
  for (uint64_t i = 0; i < n; i++) {
    const uint32_t want = brute_color(&cells, &ti, K, p + 3 * i);
    dk += packed(got + 4 * i) != want;
  }
  CHECK_MSG(dk == 0, "level %u: %llu points differ from the tiles' roots", K,
            (unsigned long long)dk);
  CHECK_MSG(vx_tiled_file_colors(f, NULL, p, n, 0, got, &e) == VX_OK, "%s", e.msg);
  fprintf(stderr, "  32768^3 in %llu tiles of 4096^3, %llu cells: %llu points x %zu levels, %llu "
          "differ from the brute force\n", (unsigned long long)ti.tile_count,
          (unsigned long long)cells.n, (unsigned long long)n, sizeof levels / sizeof *levels + 1,
          (unsigned long long)(differ + dk));
  free(p);
  free(got);
  free(cells.xyz);
  free(cells.lvl);
  free(cells.leaf);
  free(cells.rgba);
  vx_tiled_file_close(f);
  vx_soup_free(&s);
}

/* Refusals: a grey file, levels outside the tree, missing arrays, no handle. */
static void refusals(void) {
  char path[128];
  snprintf(path, sizeof path, "%s/grey.svo", dir);
  vx_mesh *m = tiled_scene();
  vx_error e;
  CHECK_MSG(tiled_convert(m, 64, 3, VX_DEVICE_CPU, 0, 2, path, &e) == VX_OK, "%s", e.msg);
  vx_mesh_free(m);
  vx_tiled_file *f = NULL;
  CHECK_MSG(vx_tiled_file_open(path, NULL, &f, &e) == VX_OK, "%s", e.msg);
  const float p[3] = {0, 0, 0};
  uint8_t rgba[4];
  CHECK(vx_tiled_file_colors(f, NULL, p, 1, -1, rgba, &e) == VX_ERR_INVALID_ARG);
  CHECK(strstr(e.msg, "no colour") != NULL);
  vx_tiled_file_close(f);
  snprintf(path, sizeof path, "%s/col.svo", dir);
  m = tiled_colored_scene();
  const int ok = colored_convert(m, 64, 3, 0.0f, path);
  vx_mesh_free(m);
  f = NULL;
  if (ok) CHECK_MSG(vx_tiled_file_open(path, NULL, &f, &e) == VX_OK, "%s", e.msg);
  if (!f) return;
  CHECK(vx_tiled_file_colors(f, NULL, p, 1, -2, rgba, &e) == VX_ERR_INVALID_ARG);
  CHECK(vx_tiled_file_colors(f, NULL, p, 1, 7, rgba, &e) == VX_ERR_INVALID_ARG);
  CHECK(vx_tiled_file_colors(f, NULL, NULL, 1, -1, rgba, &e) == VX_ERR_INVALID_ARG);
  CHECK(vx_tiled_file_colors(f, NULL, p, 1, -1, NULL, &e) == VX_ERR_INVALID_ARG);
  CHECK(vx_tiled_file_colors(f, NULL, p, UINT64_MAX / 2, -1, rgba, &e) == VX_ERR_INVALID_ARG);
  CHECK(vx_tiled_file_colors(NULL, NULL, p, 1, -1, rgba, &e) == VX_ERR_INVALID_ARG);
  vx_tiled_sample_opts bad;
  memset(&bad, 0, sizeof bad);
  bad.struct_size = 3;
  CHECK(vx_tiled_file_colors(f, &bad, p, 1, -1, rgba, &e) == VX_ERR_INVALID_ARG);
  CHECK(vx_tiled_file_colors(f, NULL, NULL, 0, -1, NULL, &e) == VX_OK);
  CHECK_MSG(vx_tiled_file_colors(f, NULL, p, 1, 6, rgba, &e) == VX_OK, "%s", e.msg);
  vx_tiled_file_close(f);
}

int main(int argc, char **argv) {
  snprintf(dir, sizeof dir, "/tmp/voxlod-ctiled-XXXXXX");
  if (!mkdtemp(dir)) return 1;
  (void)tiled_slurp;
  (void)spec_color;
  (void)spec_colorize;
  RUN_ONE(refusals);
  RUN_ONE(tiles_of_16);
  RUN_ONE(tiles_of_4);
  RUN_ONE(one_crowded_tile);
  RUN_ONE(pruned);
  RUN_ONE(finer_than_one_tree);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) return 1;
  return check_summary();
}
