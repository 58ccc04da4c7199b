/* SPDX-License-Identifier: Apache-2.0 */
/* color_soup.h - a generated coloured soup for the colour tests: textured triangles (opaque, MASK
 * cut-outs with a hole wider than several blocks, BLEND), vertex-coloured and flat-coloured ones,
 * exact duplicates, a quad on the grid plane between two blocks and one whose edge runs along a
 * block face; the box is [0, 1]^3. Needs check.h and the voxelizer's soup (svo/soup.h). */
#ifndef VOXLOD_TESTS_COLOR_SOUP_H
#define VOXLOD_TESTS_COLOR_SOUP_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

static inline uint32_t rgba(uint32_t r, uint32_t g, uint32_t b, uint32_t a) {
  return r | g << 8 | b << 16 | a << 24;
}

/* ---- generated coloured soups ---------------------------------------------------------------- */

typedef struct soupb {
  float *pos, *uv;
  uint32_t *mat, *corner;
  uint64_t n, cap;
} soupb;

static inline void tri(soupb *b, const double p[9], uint32_t mat, const double uv[6]) {
  if (b->n == b->cap) {
    b->cap = b->cap ? b->cap * 2 : 64;
    b->pos = (float *)realloc(b->pos, b->cap * 9 * sizeof(float));
    b->uv = (float *)realloc(b->uv, b->cap * 6 * sizeof(float));
    b->mat = (uint32_t *)realloc(b->mat, b->cap * sizeof(uint32_t));
    b->corner = (uint32_t *)realloc(b->corner, b->cap * 3 * sizeof(uint32_t));
  }
  for (int k = 0; k < 9; k++) b->pos[b->n * 9 + k] = (float)p[k];
  for (int k = 0; k < 6; k++) b->uv[b->n * 6 + k] = (float)uv[k];
  for (int k = 0; k < 3; k++) /* a colour from the corner's position */
    b->corner[b->n * 3 + k] = rgba((uint32_t)(255 * p[3 * k]), (uint32_t)(255 * p[3 * k + 1]),
                                   (uint32_t)(255 * p[3 * k + 2]), 255);
  b->mat[b->n] = mat;
  b->n++;
}

/* p0 + [0,1] e1 + [0,1] e2 as two triangles, UVs over the whole texture. */
static inline void quad(soupb *b, const double p0[3], const double e1[3], const double e2[3],
                 uint32_t mat) {
  double P[4][3], UV[4][2] = {{0, 0}, {1, 0}, {1, 1}, {0, 1}};
  for (int k = 0; k < 3; k++) {
    P[0][k] = p0[k];
    P[1][k] = p0[k] + e1[k];
    P[2][k] = p0[k] + e1[k] + e2[k];
    P[3][k] = p0[k] + e2[k];
  }
  const int T[2][3] = {{0, 1, 2}, {0, 2, 3}};
  for (int t = 0; t < 2; t++) {
    double p[9], uv[6];
    for (int v = 0; v < 3; v++) {
      for (int k = 0; k < 3; k++) p[v * 3 + k] = P[T[t][v]][k];
      uv[v * 2] = UV[T[t][v]][0];
      uv[v * 2 + 1] = UV[T[t][v]][1];
    }
    tri(b, p, mat, uv);
  }
}

static inline void sphere(soupb *b, int nu, int nv, uint32_t nmat) {
  for (int j = 0; j < nv; j++)
    for (int i = 0; i < nu; i++) {
      double P[4][3], UV[4][2];
      for (int c = 0; c < 4; c++) {
        int ii = i + (c == 1 || c == 2), jj = j + (c >= 2);
        double th = 2 * M_PI * ii / nu, ph = M_PI * jj / nv;
        P[c][0] = 0.5 + 0.3 * sin(ph) * cos(th);
        P[c][1] = 0.5 + 0.3 * sin(ph) * sin(th);
        P[c][2] = 0.5 + 0.3 * cos(ph);
        UV[c][0] = 3.0 * ii / nu;
        UV[c][1] = 1.0 - 2.0 * jj / nv;
      }
      const int T[2][3] = {{0, 1, 2}, {0, 2, 3}};
      for (int t = 0; t < 2; t++) {
        double p[9], uv[6];
        for (int v = 0; v < 3; v++) {
          for (int k = 0; k < 3; k++) p[v * 3 + k] = P[T[t][v]][k];
          uv[v * 2] = UV[T[t][v]][0];
          uv[v * 2 + 1] = UV[T[t][v]][1];
        }
        if ((j == 0 && t == 0) || (j == nv - 1 && t == 1)) continue; /* collapsed at the poles */
        tri(b, p, (uint32_t)(j % (int)nmat), uv);
      }
    }
}

/* The soup: materials 0 opaque texture, 1 MASK texture, 2 BLEND texture, 3 flat, 4 flat BLEND
 * at half alpha; the texture noise with a cut-out square (alpha 0) over uv [0.25, 0.75)^2;
 * corner colours on every triangle when `corners` (then they colour the untextured ones). */
static inline void make_soup(vx_soup *s, int corners) {
  soupb b = {0};
  const double lo[9] = {0, 0, 0, 0.1, 0, 0, 0, 0.1, 0}, hi[9] = {1, 1, 1, 0.9, 1, 1, 1, 0.9, 1};
  const double uv0[6] = {0.1, 0.1, 0.2, 0.1, 0.1, 0.2};
  tri(&b, lo, 3, uv0); /* the box is [0, 1]^3: grid = R * position */
  tri(&b, hi, 4, uv0);
  sphere(&b, 24, 12, 5);
  { /* on the plane z = 1/2 (between blocks), one edge along x = 1/2 (a block face) */
    const double p0[3] = {0.25, 0.25, 0.5}, e1[3] = {0.25, 0, 0}, e2[3] = {0, 0.5, 0};
    quad(&b, p0, e1, e2, 1);
  }
  { /* a wide MASK quad whose hole spans many blocks */
    const double p0[3] = {0, 0.125, 0}, e1[3] = {1, 0, 0}, e2[3] = {0, 0, 1};
    quad(&b, p0, e1, e2, 1);
  }
  { /* a slanted opaque quad through block corners */
    const double p0[3] = {0.0625, 0.75, 0.0625}, e1[3] = {0.875, 0.125, 0},
                 e2[3] = {0, 0.125, 0.875};
    quad(&b, p0, e1, e2, 0);
  }
  const uint64_t n0 = b.n;
  for (uint64_t t = 2; t < 14 && t < n0; t++) { /* exact duplicates */
    double p[9], uv[6];
    for (int k = 0; k < 9; k++) p[k] = b.pos[t * 9 + k];
    for (int k = 0; k < 6; k++) uv[k] = b.uv[t * 6 + k];
    tri(&b, p, b.mat[t], uv);
  }
  memset(s, 0, sizeof *s);
  CHECK(vx_soup_append(s, b.pos, b.n, NULL) == VX_OK && s->tri_count == b.n);
  vx_soup_color *c = (vx_soup_color *)vx_calloc(1, sizeof *c);
  const uint32_t N = 32;
  c->textures = (vx_texture *)vx_calloc(1, sizeof(vx_texture));
  c->textures[0].width = c->textures[0].height = N;
  c->textures[0].rgba = (uint32_t *)vx_malloc(N * N * 4);
  uint64_t seed = 12345;
  for (uint32_t i = 0; i < N * N; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    uint32_t r = i / N, col = i % N, x = (uint32_t)(seed >> 33);
    int hole = r >= 8 && r < 24 && col >= 8 && col < 24;
    c->textures[0].rgba[i] =
        rgba(x & 255, x >> 8 & 255, x >> 16 & 255, hole ? 0 : 200 + (x >> 24) % 56);
  }
  c->texture_count = 1;
  vx_material m[5] = {{0xffffffffu, 0, VX_ALPHA_OPAQUE, 0.5f},
                      {0xffffffffu, 0, VX_ALPHA_MASK, 0.5f},
                      {rgba(255, 200, 160, 255), 0, VX_ALPHA_BLEND, 0.5f},
                      {rgba(40, 160, 90, 255), -1, VX_ALPHA_OPAQUE, 0.5f},
                      {rgba(200, 30, 60, 128), -1, VX_ALPHA_BLEND, 0.5f}};
  c->materials = (vx_material *)vx_malloc(sizeof m);
  memcpy(c->materials, m, sizeof m);
  c->material_count = 5;
  c->material = (uint32_t *)vx_malloc(b.n * 4);
  memcpy(c->material, b.mat, b.n * 4);
  c->uv = (float *)vx_malloc(b.n * 24);
  memcpy(c->uv, b.uv, b.n * 24);
  if (corners) {
    c->corner_rgba = (uint32_t *)vx_malloc(b.n * 12);
    memcpy(c->corner_rgba, b.corner, b.n * 12);
  }
  s->color = c;
  free(b.pos);
  free(b.uv);
  free(b.mat);
  free(b.corner);
}

#endif
