/* SPDX-License-Identifier: Apache-2.0 */
/* test_voxelizer_color.c - the colour pass (vx_color_tree) against brute-force references in
 * double precision that share no code with it: exact face colours of a textured cube and their
 * area-weighted means above, a checkerboard at several resolutions (grey where a voxel spans many
 * squares, the squares where texels are larger than voxels), vertex colours against a dense
 * sampling of the triangle, a material colour, a MASK texture with a hole, the dominant filter at
 * a material border, pruning, and thread counts.
 *
 * Built a second time as test_gpu_color (VX_TEST_COLOR_GPU): every colour pass of these tests
 * then makes its triangle parts on the GPU, is held to the same references, and must give the CPU
 * pass's bytes.
 *
 * Also a tiny benchmark driver: `test_voxelizer_color bench RES [N|MESH [THREADS]]` times the
 * build and the colour pass of a textured sphere of N x N/2 quads (a 2048^2 synthetic texture),
 * or of MESH with planar UVs and a 512^2 synthetic texture (needs the mesh importer).
 */
#include "voxelizer/voxelizer.h"
#include "formats/mesh_import.h"
#include "svo/lod.h"
#include "sys/system.h"
#include "check.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__GNUC__)
#pragma weak vx_soup_import
#endif

/* ---- references (no library code) ----------------------------------------------------------- */

static double ref_lin(uint32_t c8) {
  double c = c8 / 255.0;
  return c <= 0.04045 ? c / 12.92 : pow((c + 0.055) / 1.055, 2.4);
}

static int ref_srgb8(double x) {
  if (x < 0) x = 0;
  if (x > 1) x = 1;
  double s = x <= 0.0031308 ? 12.92 * x : 1.055 * pow(x, 1.0 / 2.4) - 0.055;
  return (int)floor(s * 255.0 + 0.5);
}

static uint32_t rgba(uint32_t r, uint32_t g, uint32_t b, uint32_t a) {
  return r | g << 8 | b << 16 | a << 24;
}
static int ch(uint32_t c, int k) { return (int)(c >> (8 * k) & 255u); }

/* ---- building coloured soups ----------------------------------------------------------------- */

typedef struct soupb {
  float *pos, *uv;
  uint32_t *mat, *corner;
  uint64_t n, cap;
} soupb;

static void sb_tri(soupb *b, const double p[9], uint32_t mat, const double uv[6],
                   const uint32_t *corner) {
  if (b->n == b->cap) {
    b->cap = b->cap ? b->cap * 2 : 64;
    b->pos = (float *)realloc(b->pos, b->cap * 9 * sizeof(float));
    b->uv = (float *)realloc(b->uv, b->cap * 6 * sizeof(float));
    b->mat = (uint32_t *)realloc(b->mat, b->cap * sizeof(uint32_t));
    b->corner = (uint32_t *)realloc(b->corner, b->cap * 3 * sizeof(uint32_t));
  }
  for (int k = 0; k < 9; k++) b->pos[b->n * 9 + k] = (float)p[k];
  for (int k = 0; k < 6; k++) b->uv[b->n * 6 + k] = uv ? (float)uv[k] : 0.0f;
  for (int k = 0; k < 3; k++) b->corner[b->n * 3 + k] = corner ? corner[k] : 0xffffffffu;
  b->mat[b->n] = mat;
  b->n++;
}

/* A quad p0, p0+e1, p0+e1+e2, p0+e2 as two triangles, uv = the quad's own (s, t) in [0,1]^2
 * mapped to [u0,u1] x [v0,v1]. */
static void sb_quad(soupb *b, const double p0[3], const double e1[3], const double e2[3],
                    uint32_t mat, double u0, double v0, double u1, double v1) {
  double P[4][3], UV[4][2] = {{u0, v0}, {u1, v0}, {u1, v1}, {u0, v1}};
  for (int k = 0; k < 3; k++) {
    P[0][k] = p0[k];
    P[1][k] = p0[k] + e1[k];
    P[2][k] = p0[k] + e1[k] + e2[k];
    P[3][k] = p0[k] + e2[k];
  }
  int tri[2][3] = {{0, 1, 2}, {0, 2, 3}};
  for (int t = 0; t < 2; t++) {
    double p[9], uv[6];
    for (int v = 0; v < 3; v++) {
      for (int k = 0; k < 3; k++) p[v * 3 + k] = P[tri[t][v]][k];
      uv[v * 2] = UV[tri[t][v]][0];
      uv[v * 2 + 1] = UV[tri[t][v]][1];
    }
    sb_tri(b, p, mat, uv, NULL);
  }
}

/* The soup of b with materials and textures (copied; textures' pixels taken over). */
static void sb_finish(soupb *b, vx_soup *s, const vx_material *mats, uint32_t nmat,
                      vx_texture *texs, uint32_t ntex, int with_uv, int with_corner) {
  memset(s, 0, sizeof *s);
  CHECK(vx_soup_append(s, b->pos, b->n, NULL) == VX_OK && s->tri_count == b->n);
  vx_soup_color *c = (vx_soup_color *)vx_calloc(1, sizeof *c);
  c->materials = (vx_material *)vx_malloc(nmat * sizeof(vx_material));
  memcpy(c->materials, mats, nmat * sizeof(vx_material));
  c->material_count = nmat;
  c->textures = (vx_texture *)vx_calloc(ntex ? ntex : 1, sizeof(vx_texture));
  for (uint32_t i = 0; i < ntex; i++) {
    c->textures[i] = texs[i];
    uint64_t n = (uint64_t)texs[i].width * texs[i].height;
    c->textures[i].rgba = (uint32_t *)vx_malloc(n * 4);
    memcpy(c->textures[i].rgba, texs[i].rgba, n * 4);
  }
  c->texture_count = ntex;
  c->material = (uint32_t *)vx_malloc(b->n * 4);
  memcpy(c->material, b->mat, b->n * 4);
  if (with_uv) {
    c->uv = (float *)vx_malloc(b->n * 24);
    memcpy(c->uv, b->uv, b->n * 24);
  }
  if (with_corner) {
    c->corner_rgba = (uint32_t *)vx_malloc(b->n * 12);
    memcpy(c->corner_rgba, b->corner, b->n * 12);
  }
  s->color = c;
  free(b->pos);
  free(b->uv);
  free(b->mat);
  free(b->corner);
  memset(b, 0, sizeof *b);
}

static vx_material mat_tex(int32_t tex, uint32_t mode, float cutoff) {
  vx_material m = {0xffffffffu, tex, mode, cutoff};
  return m;
}

/* One quad p0 + [0,1] e1 + [0,1] e2 with UVs over the whole texture tx and material m. */
static void textured_quad(vx_soup *s, const double p0[3], const double e1[3], const double e2[3],
                          const vx_material *m, vx_texture *tx) {
  soupb b = {0};
  sb_quad(&b, p0, e1, e2, 0, 0, 0, 1, 1);
  sb_finish(&b, s, m, 1, tx, 1, 1, 0);
}
static vx_material mat_flat(uint32_t factor) {
  vx_material m = {factor, -1, VX_ALPHA_OPAQUE, 0.5f};
  return m;
}

static int build(const vx_soup *s, uint32_t res, vx_octree *t) {
  vx_voxelize_opts o;
  memset(&o, 0, sizeof o);
  o.resolution = res;
  o.threads = 2;
  vx_error e;
  vx_status st = vx_voxelize(s, &o, t, NULL, &e);
  CHECK_MSG(st == VX_OK, "%s", e.msg);
  return st == VX_OK;
}

static void copy_tree(const vx_octree *a, vx_octree *b);

static int color(const vx_soup *s, vx_octree *t, vx_color_filter f, int threads) {
  vx_error e;
#ifdef VX_TEST_COLOR_GPU
  vx_octree cpu;
  copy_tree(t, &cpu);
  vx_error note;
  memset(&note, 0, sizeof note);
  int on_gpu = 0;
  vx_status st = vx_color_tree_ex(s, t, f, threads, 0, 1, &on_gpu, &note, &e);
  if (st == VX_OK && !on_gpu && note.status == VX_ERR_NO_GPU) CHECK_SKIP("%s", note.msg);
  CHECK_MSG(st != VX_OK || on_gpu, "the GPU did not make the parts: %s", note.msg);
  if (st == VX_OK) {
    vx_status cs = vx_color_tree(s, &cpu, f, threads, 0, &e);
    CHECK_MSG(cs == VX_OK, "%s", e.msg);
    if (cs == VX_OK) {
      CHECK_MSG(!memcmp(cpu.node_color, t->node_color, t->node_count * 4),
                "GPU and CPU node colours differ");
      CHECK_MSG(!memcmp(cpu.voxel_color, t->voxel_color, t->voxel_count * 4),
                "GPU and CPU voxel colours differ");
    }
  }
  vx_octree_free(&cpu);
#else
  vx_status st = vx_color_tree(s, t, f, threads, 0, &e);
#endif
  CHECK_MSG(st == VX_OK, "%s", e.msg);
  CHECK(st != VX_OK || (t->node_color && t->voxel_color));
  return st == VX_OK;
}

/* Every cell of every level with its position (level, integer cell coordinates) and colour. */
typedef void (*cell_fn)(void *ctx, uint32_t level, uint32_t x, uint32_t y, uint32_t z,
                        uint32_t color, int leaf);

static void walk(const vx_octree *t, cell_fn fn, void *ctx) {
  /* a plain recursion from the root over the masks (independent of the library's walk) */
  typedef struct item { uint64_t idx; uint32_t x, y, z; } item;
  item *cur = (item *)malloc(sizeof(item)), *nxt;
  cur[0].idx = 0;
  cur[0].x = cur[0].y = cur[0].z = 0;
  uint64_t n = 1;
  for (uint32_t l = 0; l <= t->depth; l++) {
    uint64_t cap = l < t->depth ? t->level_count[l + 1] : 0, m = 0;
    nxt = (item *)malloc((cap ? cap : 1) * sizeof(item));
    for (uint64_t i = 0; i < n; i++) {
      if (l == t->depth) {
        fn(ctx, l, cur[i].x, cur[i].y, cur[i].z, t->voxel_color[cur[i].idx], 1);
        continue;
      }
      const vx_node *nd = &t->nodes[cur[i].idx];
      uint32_t mask = nd->info & 255u;
      fn(ctx, l, cur[i].x, cur[i].y, cur[i].z, t->node_color[cur[i].idx], mask == 0);
      uint32_t k = 0;
      for (uint32_t s = 0; s < 8; s++)
        if (mask >> s & 1u) {
          nxt[m].idx = nd->child + k++;
          nxt[m].x = cur[i].x * 2 + (s & 1);
          nxt[m].y = cur[i].y * 2 + (s >> 1 & 1);
          nxt[m].z = cur[i].z * 2 + (s >> 2 & 1);
          m++;
        }
    }
    free(cur);
    cur = nxt;
    n = m;
  }
  free(cur);
}

/* ---- 1. a cube with six solid face colours through a 6x1 texture ----------------------------- */

static const uint32_t face_rgb[6] = {0x0000ffu, 0x00ff00u, 0xff0000u, 0x00ffffu, 0xffff00u,
                                     0x204080u};

typedef struct cube_ctx {
  uint32_t R;
  int bad, checked;
} cube_ctx;

static void cube_cell(void *vctx, uint32_t level, uint32_t x, uint32_t y, uint32_t z,
                      uint32_t c, int leaf) {
  (void)leaf;
  cube_ctx *k = (cube_ctx *)vctx;
  uint32_t size = k->R >> level, lo[3] = {x * size, y * size, z * size};
  /* faces: 0 x=0, 1 x=R, 2 y=0, 3 y=R, 4 z=0, 5 z=R; a face lies in the cells whose box touches
   * its plane from inside the cube; its area there is size^2 */
  double w[6], sum = 0, lin[3] = {0, 0, 0};
  for (int f = 0; f < 6; f++) {
    int axis = f / 2, hi = f & 1;
    w[f] = hi ? (lo[axis] + size == k->R) : (lo[axis] == 0);
    sum += w[f];
    for (int q = 0; q < 3; q++) lin[q] += w[f] * ref_lin(face_rgb[f] >> (8 * q) & 255u);
  }
  if (sum == 0) return; /* an inner cell (none: only surface cells exist) */
  k->checked++;
  for (int q = 0; q < 3; q++) {
    int want = ref_srgb8(lin[q] / sum);
    if (abs(ch(c, q) - want) > 1) {
      if (k->bad++ < 5)
        fprintf(stderr, "level %u cell %u %u %u: channel %d is %d, want %d\n", level, x, y, z, q,
                ch(c, q), want);
    }
  }
  if (ch(c, 3) != 255) k->bad++;
  if (level == 0) {
    /* the root: the plain mean of the six */
    double m = 0;
    for (int f = 0; f < 6; f++) m += ref_lin(face_rgb[f] & 255u) / 6.0;
    CHECK(abs(ch(c, 0) - ref_srgb8(m)) <= 1);
  }
}

static void cube_six_face_colours(void) {
  uint32_t px[6];
  for (int f = 0; f < 6; f++) px[f] = face_rgb[f] | 0xff000000u;
  vx_texture tx = {6, 1, px};
  vx_material m = mat_tex(0, VX_ALPHA_OPAQUE, 0.5f);
  soupb b = {0};
  for (int f = 0; f < 6; f++) {
    int axis = f / 2, hi = f & 1;
    double p0[3] = {0, 0, 0}, e1[3] = {0, 0, 0}, e2[3] = {0, 0, 0};
    p0[axis] = hi ? 1.0 : 0.0;
    e1[(axis + 1) % 3] = 1.0;
    e2[(axis + 2) % 3] = 1.0;
    double u = (f + 0.5) / 6.0;
    sb_quad(&b, p0, e1, e2, 0, u, 0.5, u, 0.5);
  }
  vx_soup s;
  sb_finish(&b, &s, &m, 1, &tx, 1, 1, 0);
  for (uint32_t R = 2; R <= 32; R *= 4) {
    vx_octree t;
    if (!build(&s, R, &t)) continue;
    if (color(&s, &t, VX_COLOR_FILTER_MEAN, 2)) {
      cube_ctx k = {R, 0, 0};
      walk(&t, cube_cell, &k);
      CHECK_MSG(k.bad == 0, "R %u: %d of %d cells off", R, k.bad, k.checked);
      CHECK(k.checked == (int)(t.node_count + t.voxel_count));
    }
    vx_octree_free(&t);
  }
  vx_soup_free(&s);
}

/* ---- 2. a checkerboard plane ---------------------------------------------------------------- */

/* N x N texels, squares of sq texels; square (i, j) counted from the bottom-left (uv (0,0)) is
 * white when i + j is even. Rows stored top first. */
static uint32_t *checker(uint32_t N, uint32_t sq) {
  uint32_t *px = (uint32_t *)malloc((size_t)N * N * 4);
  for (uint32_t row = 0; row < N; row++)
    for (uint32_t col = 0; col < N; col++) {
      uint32_t j = (N - 1 - row) / sq, i = col / sq;
      px[row * N + col] = (i + j) % 2 == 0 ? 0xffffffffu : 0xff000000u;
    }
  return px;
}

typedef struct plane_ctx {
  uint32_t R, N, sq, zlevel_cells;
  int grey_bad, grey_n, square_bad, square_n;
  double grey_worst;
} plane_ctx;

static void plane_cell(void *vctx, uint32_t level, uint32_t x, uint32_t y, uint32_t z,
                       uint32_t c, int leaf) {
  (void)leaf;
  (void)z;
  plane_ctx *k = (plane_ctx *)vctx;
  if (level != 0 && (k->R >> level) == 0) return;
  double size = (double)(k->R >> level) / k->R; /* cell side in uv units */
  double squares = size * k->N / k->sq;         /* squares per cell side */
  if (squares >= 4.0 && fmod(squares, 2.0) == 0.0) {
    /* an even number of whole squares per side: exactly half white -> linear 0.5 */
    int want = ref_srgb8(0.5);
    double d = 0;
    for (int q = 0; q < 3; q++) d = fmax(d, fabs((double)ch(c, q) - want));
    k->grey_worst = fmax(k->grey_worst, d);
    k->grey_n++;
    if (d > 2) k->grey_bad++;
  } else if (level == (uint32_t)(31 - __builtin_clz(k->R))) {
    /* a voxel: the square under its centre, when the voxel lies a texel or more inside it */
    double texel = 1.0 / k->N, cu = (x + 0.5) / k->R, cv = (y + 0.5) / k->R;
    double su = cu * k->N / k->sq, sv = cv * k->N / k->sq; /* in squares */
    double du = fmin(su - floor(su), ceil(su) - su) * k->sq * texel,
           dv = fmin(sv - floor(sv), ceil(sv) - sv) * k->sq * texel;
    if (fmin(du, dv) < texel + 1.0 / k->R) return;
    int white = ((int)floor(su) + (int)floor(sv)) % 2 == 0;
    k->square_n++;
    for (int q = 0; q < 3; q++)
      if (ch(c, q) != (white ? 255 : 0)) {
        if (k->square_bad++ < 5)
          fprintf(stderr, "voxel %u %u: %08x, want %s\n", x, y, c, white ? "white" : "black");
        break;
      }
  }
}

static void checkerboard_plane(void) {
  struct { uint32_t N, sq, R; } cases[] = {{64, 1, 8}, {64, 2, 16}, {64, 8, 256}, {16, 4, 64}};
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    uint32_t N = cases[ci].N, sq = cases[ci].sq, R = cases[ci].R;
    uint32_t *px = checker(N, sq);
    vx_texture tx = {N, N, px};
    vx_material m = mat_tex(0, VX_ALPHA_OPAQUE, 0.5f);
    const double p0[3] = {0, 0, 0}, e1[3] = {1, 0, 0}, e2[3] = {0, 1, 0};
    vx_soup s;
    textured_quad(&s, p0, e1, e2, &m, &tx);
    free(px);
    vx_octree t;
    if (build(&s, R, &t) && color(&s, &t, VX_COLOR_FILTER_MEAN, 2)) {
      plane_ctx k;
      memset(&k, 0, sizeof k);
      k.R = R;
      k.N = N;
      k.sq = sq;
      walk(&t, plane_cell, &k);
      CHECK_MSG(k.grey_bad == 0, "N %u sq %u R %u: %d of %d grey cells off (worst %.0f)", N, sq,
                R, k.grey_bad, k.grey_n, k.grey_worst);
      CHECK(k.grey_n > 0);
      CHECK_MSG(k.square_bad == 0, "N %u sq %u R %u: %d of %d voxels off their square", N, sq, R,
                k.square_bad, k.square_n);
      if (R >= 64) CHECK(k.square_n > 0);
    }
    vx_octree_free(&t);
    vx_soup_free(&s);
  }
}

/* A noise texture (the worst case for sampling) on the plane, at voxels of 8 texels down to half
 * a texel: every voxel against the mean over its footprint of the texture (bilinear, wrapped,
 * linear light) sampled densely: mean and largest difference in 8-bit sRGB steps (measured: mean
 * <= 0.83, worst <= 4), and the mean difference of the mean taken in sRGB space instead (16-24
 * steps). */
typedef struct noise_ctx {
  uint32_t R, N;
  const uint32_t *px;
  double sum, worst, srgb_sum;
  int n;
} noise_ctx;

/* The texture's bilinear value at (u, v), wrapped, per channel: linear light (lin) and sRGB
 * units (srgb). Rows top first, uv (0, 0) at the bottom-left. */
static void ref_bilinear(const uint32_t *px, uint32_t N, double u, double v, double lin[3],
                         double srgb[3]) {
  double x = (u - floor(u)) * N - 0.5, y = (1.0 - (v - floor(v))) * N - 0.5;
  double fx = x - floor(x), fy = y - floor(y);
  int x0 = ((int)floor(x) + (int)N) % (int)N, y0 = ((int)floor(y) + (int)N) % (int)N;
  int x1 = (x0 + 1) % (int)N, y1 = (y0 + 1) % (int)N;
  uint32_t c[4] = {px[y0 * N + x0], px[y0 * N + x1], px[y1 * N + x0], px[y1 * N + x1]};
  double w[4] = {(1 - fx) * (1 - fy), fx * (1 - fy), (1 - fx) * fy, fx * fy};
  for (int q = 0; q < 3; q++) {
    lin[q] = srgb[q] = 0;
    for (int k = 0; k < 4; k++) {
      lin[q] += w[k] * ref_lin(c[k] >> (8 * q) & 255u);
      srgb[q] += w[k] * (double)(c[k] >> (8 * q) & 255u) / 255.0;
    }
  }
}

static void noise_cell(void *vctx, uint32_t level, uint32_t x, uint32_t y, uint32_t z, uint32_t c,
                       int leaf) {
  (void)leaf;
  noise_ctx *k = (noise_ctx *)vctx;
  if (level != (uint32_t)(31 - __builtin_clz(k->R)) || z != k->R / 2) return; /* one side */
  if (k->R >= 64 && (x + y) % 4) return; /* a quarter of the voxels of the finer grids */
  const int M = 32;
  double lin[3] = {0, 0, 0}, sr[3] = {0, 0, 0}, l[3], s[3];
  for (int i = 0; i < M; i++)
    for (int j = 0; j < M; j++) {
      ref_bilinear(k->px, k->N, (x + (i + 0.5) / M) / k->R, (y + (j + 0.5) / M) / k->R, l, s);
      for (int q = 0; q < 3; q++) {
        lin[q] += l[q];
        sr[q] += s[q];
      }
    }
  for (int q = 0; q < 3; q++) {
    int want = ref_srgb8(lin[q] / (M * M));
    double d = fabs((double)ch(c, q) - want);
    k->sum += d;
    k->worst = fmax(k->worst, d);
    k->srgb_sum += fabs(floor(sr[q] / (M * M) * 255.0 + 0.5) - want);
    k->n++;
  }
}

/* 24 random bits (a 64-bit LCG's top ones): a noise texel's rgb. */
static uint32_t noise_rgb(uint64_t *seed) {
  *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(*seed >> 40);
}

static void noise_footprint_mean(void) {
  const uint32_t N = 64;
  uint32_t *px = (uint32_t *)malloc(N * N * 4);
  uint64_t seed = 99;
  for (uint32_t i = 0; i < N * N; i++) px[i] = noise_rgb(&seed) | 0xff000000u;
  vx_texture tx = {N, N, px};
  vx_material m = mat_tex(0, VX_ALPHA_OPAQUE, 0.5f);
  for (uint32_t R = 8; R <= 128; R *= 2) {
    const double p0[3] = {0, 0, 0}, e1[3] = {1, 0, 0}, e2[3] = {0, 1, 0};
    vx_soup s;
    textured_quad(&s, p0, e1, e2, &m, &tx);
    vx_octree t;
    if (build(&s, R, &t) && color(&s, &t, VX_COLOR_FILTER_MEAN, 2)) {
      noise_ctx k;
      memset(&k, 0, sizeof k);
      k.R = R;
      k.N = N;
      k.px = px;
      walk(&t, noise_cell, &k);
      /* a mean in sRGB space is far off, so these can fail */
      CHECK_MSG(k.sum / k.n <= 1.0 && k.worst <= 5 && k.srgb_sum / k.n > 10.0,
                "R %u: mean %.2f worst %.0f (sRGB-space mean %.2f)", R, k.sum / k.n, k.worst,
                k.srgb_sum / k.n);
    }
    vx_octree_free(&t);
    vx_soup_free(&s);
  }
  free(px);
}

/* ---- 3. vertex colours and a material colour ------------------------------------------------ */

static void vertex_colours_match_integral(void) {
  const uint32_t R = 16;
  const double p[9] = {0.05, 0.1, 0.2, 0.95, 0.3, 0.55, 0.3, 0.9, 0.8};
  const uint32_t corner[3] = {rgba(255, 0, 0, 255), rgba(0, 255, 0, 255), rgba(0, 0, 255, 255)};
  soupb b = {0};
  sb_tri(&b, p, 0, NULL, corner);
  vx_material m = mat_flat(0xffffffffu);
  vx_soup s;
  sb_finish(&b, &s, &m, 1, NULL, 0, 0, 1);
  vx_octree t;
  if (build(&s, R, &t) && color(&s, &t, VX_COLOR_FILTER_MEAN, 1)) {
    /* the reference: the triangle sampled at M(M+1)/2 points on a regular barycentric lattice,
     * binned into voxels in the tree's grid */
    const int M = 1500;
    uint64_t cells = (uint64_t)R * R * R;
    double *acc = (double *)calloc(cells * 4, sizeof(double));
    for (int i = 0; i < M; i++)
      for (int j = 0; i + j < M; j++) {
        double b1 = (i + 1.0 / 3) / M, b2 = (j + 1.0 / 3) / M, b0 = 1 - b1 - b2;
        double g[3];
        for (int q = 0; q < 3; q++)
          g[q] = ((b0 * (float)p[q] + b1 * (float)p[3 + q] + b2 * (float)p[6 + q]) -
                  t.xf.origin[q]) / t.xf.scale;
        int vx = (int)floor(g[0]), vy = (int)floor(g[1]), vz = (int)floor(g[2]);
        if (vx < 0 || vy < 0 || vz < 0 || vx >= (int)R || vy >= (int)R || vz >= (int)R) continue;
        double *a = acc + 4 * ((uint64_t)vx + R * ((uint64_t)vy + R * vz));
        a[0] += b0;
        a[1] += b1;
        a[2] += b2;
        a[3] += 1;
      }
    int checked = 0, bad = 0;
    for (uint32_t z = 0; z < R; z++)
      for (uint32_t y = 0; y < R; y++)
        for (uint32_t x = 0; x < R; x++) {
          double *a = acc + 4 * ((uint64_t)x + R * ((uint64_t)y + R * z));
          if (a[3] < 2000) continue; /* enough of the triangle in it for a precise mean */
          /* find the voxel by descending the tree */
          uint64_t idx = 0;
          int found = 1;
          for (uint32_t l = 0; l < t.depth && found; l++) {
            uint32_t sh = t.depth - 1 - l;
            uint32_t slot = (x >> sh & 1) | (y >> sh & 1) << 1 | (z >> sh & 1) << 2;
            const vx_node *nd = &t.nodes[idx];
            uint32_t mask = nd->info & 255u;
            if (!(mask >> slot & 1)) {
              found = 0;
              break;
            }
            idx = nd->child + __builtin_popcount(mask & ((1u << slot) - 1));
          }
          CHECK(found);
          if (!found) continue;
          uint32_t c = t.voxel_color[idx];
          checked++;
          for (int q = 0; q < 3; q++) {
            /* corner q is pure channel q: linear value = mean barycentric weight q */
            int want = ref_srgb8(a[q] / a[3]);
            if (abs(ch(c, q) - want) > 2) {
              if (bad++ < 5) fprintf(stderr, "voxel %u %u %u ch %d: %d want %d\n", x, y, z, q,
                                     ch(c, q), want);
            }
          }
          if (ch(c, 3) != 255) bad++;
        }
    CHECK(checked > 10);
    CHECK_MSG(bad == 0, "%d of %d voxels off", bad, checked);
    free(acc);
  }
  vx_octree_free(&t);
  vx_soup_free(&s);
}

/* Random triangles, corner colours from their positions: the root's colour is the area-weighted mean of
 * the triangles' mean colours (their corners' mean in linear light), so no part of any triangle
 * is lost or counted twice by the clipping. */
static void random_soup_root_mean(void) {
  soupb b = {0};
  uint64_t seed = 12345;
  double sum[3] = {0, 0, 0}, area = 0;
  for (int i = 0; i < 300; i++) {
    double p[9];
    uint32_t corner[3];
    for (int k = 0; k < 9; k++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      p[k] = (double)(seed >> 11) / 9007199254740992.0;
      if (i % 7 == 0 && k % 3 == 2) p[k] = 0.5; /* some lie on a grid plane */
    }
    for (int v = 0; v < 3; v++) /* the colour follows the position: lost parts bias it */
      corner[v] = rgba((uint32_t)(255 * p[v * 3]), (uint32_t)(255 * p[v * 3 + 1]),
                       (uint32_t)(255 * p[v * 3 + 2]), 255);
    double u[3], w[3];
    for (int k = 0; k < 3; k++) {
      u[k] = (float)p[3 + k] - (float)p[k];
      w[k] = (float)p[6 + k] - (float)p[k];
    }
    double cx = u[1] * w[2] - u[2] * w[1], cy = u[2] * w[0] - u[0] * w[2],
           cz = u[0] * w[1] - u[1] * w[0], A = 0.5 * sqrt(cx * cx + cy * cy + cz * cz);
    area += A;
    for (int q = 0; q < 3; q++)
      for (int v = 0; v < 3; v++) sum[q] += A * ref_lin(corner[v] >> (8 * q) & 255u) / 3.0;
    sb_tri(&b, p, 0, NULL, corner);
  }
  vx_material m = mat_flat(0xffffffffu);
  vx_soup s;
  sb_finish(&b, &s, &m, 1, NULL, 0, 0, 1);
  vx_octree t;
  if (build(&s, 16, &t) && color(&s, &t, VX_COLOR_FILTER_MEAN, 2)) {
    for (int q = 0; q < 3; q++)
      CHECK_MSG(abs(ch(t.node_color[0], q) - ref_srgb8(sum[q] / area)) <= 1, "channel %d: %d, want %d",
                q, ch(t.node_color[0], q), ref_srgb8(sum[q] / area));
    CHECK(ch(t.node_color[0], 3) == 255);
  }
  vx_octree_free(&t);
  vx_soup_free(&s);
}

static void material_colour_exact(void) {
  soupb b = {0};
  /* a closed box of 12 triangles, slanted so its faces cut voxels */
  const double lo[3] = {0.1, 0.2, 0.15}, hi[3] = {0.9, 0.7, 0.8};
  for (int f = 0; f < 6; f++) {
    int axis = f / 2, side = f & 1;
    double p0[3] = {lo[0], lo[1], lo[2]}, e1[3] = {0, 0, 0}, e2[3] = {0, 0, 0};
    p0[axis] = side ? hi[axis] : lo[axis];
    e1[(axis + 1) % 3] = hi[(axis + 1) % 3] - lo[(axis + 1) % 3];
    e2[(axis + 2) % 3] = hi[(axis + 2) % 3] - lo[(axis + 2) % 3];
    sb_quad(&b, p0, e1, e2, 0, 0, 0, 1, 1);
  }
  const uint32_t want = rgba(200, 100, 50, 255);
  vx_material m = mat_flat(want);
  vx_soup s;
  sb_finish(&b, &s, &m, 1, NULL, 0, 0, 0);
  vx_octree t;
  if (build(&s, 32, &t) && color(&s, &t, VX_COLOR_FILTER_MEAN, 2)) {
    int bad = 0;
    for (uint64_t i = 0; i < t.node_count; i++) bad += t.node_color[i] != want;
    for (uint64_t i = 0; i < t.voxel_count; i++) bad += t.voxel_color[i] != want;
    CHECK_MSG(bad == 0, "%d cells not exactly the material colour", bad);
  }
  vx_octree_free(&t);
  vx_soup_free(&s);
}

/* ---- 4. a MASK texture with a hole ----------------------------------------------------------- */

typedef struct hole_ctx {
  uint32_t R;
  int in_bad, out_bad, in_n, out_n;
  uint32_t root;
} hole_ctx;

static void hole_cell(void *vctx, uint32_t level, uint32_t x, uint32_t y, uint32_t z, uint32_t c,
                      int leaf) {
  (void)z;
  (void)leaf;
  hole_ctx *k = (hole_ctx *)vctx;
  if (level == 0) k->root = c;
  uint32_t size = k->R >> level;
  double x0 = (double)x * size / k->R, x1 = (double)(x + 1) * size / k->R;
  double y0 = (double)y * size / k->R, y1 = (double)(y + 1) * size / k->R;
  if (x0 >= 0.25 && x1 <= 0.75 && y0 >= 0.25 && y1 <= 0.75) {
    k->in_n++;
    if (ch(c, 3) != 0 && k->in_bad++ < 5)
      fprintf(stderr, "level %u cell %u %u %u: %08x\n", level, x, y, z, c);
  } else if (x1 <= 0.25 || x0 >= 0.75 || y1 <= 0.25 || y0 >= 0.75) {
    k->out_n++;
    if ((ch(c, 3) != 255 || ch(c, 0) != 40 || ch(c, 1) != 160 || ch(c, 2) != 90) &&
        k->out_bad++ < 5)
      fprintf(stderr, "level %u cell %u %u %u: %08x\n", level, x, y, z, c);
  }
}

static void mask_hole(void) {
  const uint32_t N = 64;
  uint32_t px[64 * 64];
  for (uint32_t i = 0; i < N * N; i++) {
    uint32_t r = i / N, c = i % N;
    int hole = r >= 16 && r < 48 && c >= 16 && c < 48; /* uv [0.25, 0.75]^2 */
    px[i] = hole ? rgba(255, 0, 255, 0) : rgba(40, 160, 90, 255);
  }
  vx_texture tx = {N, N, px};
  vx_material m = mat_tex(0, VX_ALPHA_MASK, 0.5f);
  soupb b = {0};
  const double p0[3] = {0, 0, 0}, e1[3] = {1, 0, 0}, e2[3] = {0, 1, 0};
  sb_quad(&b, p0, e1, e2, 0, 0, 0, 1, 1);
  vx_soup s;
  sb_finish(&b, &s, &m, 1, &tx, 1, 1, 0);
  vx_octree t;
  if (build(&s, 32, &t) && color(&s, &t, VX_COLOR_FILTER_MEAN, 2)) {
    hole_ctx k;
    memset(&k, 0, sizeof k);
    k.R = 32;
    walk(&t, hole_cell, &k);
    CHECK(k.in_n > 100 && k.out_n > 100);
    CHECK_MSG(k.in_bad == 0, "%d of %d cells over the hole not cut out", k.in_bad, k.in_n);
    CHECK_MSG(k.out_bad == 0, "%d of %d cells off the hole not opaque green", k.out_bad, k.out_n);
    /* the root: a quarter of the quad is cut out */
    CHECK_MSG(abs(ch(k.root, 3) - 191) <= 1, "root alpha %d", ch(k.root, 3));
  }
  vx_octree_free(&t);
  vx_soup_free(&s);
}

/* ---- 5. dominant filter at a material border ------------------------------------------------- */

typedef struct dom_ctx {
  uint32_t R, a, b;
  int other, wrong, border, mixed;
} dom_ctx;

static void dom_cell(void *vctx, uint32_t level, uint32_t x, uint32_t y, uint32_t z, uint32_t c,
                     int leaf) {
  (void)y;
  (void)z;
  (void)leaf;
  dom_ctx *k = (dom_ctx *)vctx;
  if (c != k->a && c != k->b) k->other++;
  if (level == 31u - (uint32_t)__builtin_clz(k->R)) {
    double left = fmin(fmax(0.3 * k->R - x, 0.0), 1.0);
    /* the plane z = 0.2 y is at grid z = 0.2 y + 12.8 (the box centred): does it cross the
     * voxel's inside (not only an edge)? */
    double zlo = 0.2 * y + 12.8, zhi = zlo + 0.2;
    int crossed = fmax(zlo, (double)z) < fmin(zhi, z + 1.0);
    if (left > 0 && left < 1 && crossed) {
      k->border++;
      if (fabs(left - 0.5) > 0.01 && c != (left > 0.5 ? k->a : k->b) && k->wrong++ < 5)
        fprintf(stderr, "border voxel %u %u %u: %08x\n", x, y, z, c);
    }
  }
}

static void mixed_cell(void *vctx, uint32_t level, uint32_t x, uint32_t y, uint32_t z, uint32_t c,
                       int leaf) {
  (void)level, (void)x, (void)y, (void)z, (void)leaf;
  dom_ctx *k = (dom_ctx *)vctx;
  if (c != k->a && c != k->b) k->mixed++;
}

static void dominant_two_materials(void) {
  const uint32_t red = rgba(230, 20, 10, 255), blue = rgba(10, 30, 220, 255);
  vx_material m[2] = {mat_flat(red), mat_flat(blue)};
  soupb b = {0};
  const double pa[3] = {0, 0, 0}, ea1[3] = {0.3, 0, 0}, e2[3] = {0, 1, 0.2};
  const double pb[3] = {0.3, 0, 0}, eb1[3] = {0.7, 0, 0};
  sb_quad(&b, pa, ea1, e2, 0, 0, 0, 1, 1);
  sb_quad(&b, pb, eb1, e2, 1, 0, 0, 1, 1);
  vx_soup s;
  sb_finish(&b, &s, m, 2, NULL, 0, 0, 0);
  vx_octree t;
  if (build(&s, 32, &t)) {
    dom_ctx k;
    memset(&k, 0, sizeof k);
    k.R = 32;
    k.a = red;
    k.b = blue;
    if (color(&s, &t, VX_COLOR_FILTER_DOMINANT, 2)) {
      walk(&t, dom_cell, &k);
      CHECK(k.border > 10);
      CHECK_MSG(k.other == 0, "%d cells of an invented colour", k.other);
      CHECK_MSG(k.wrong == 0, "%d border voxels not the colour of their larger part", k.wrong);
    }
    /* the mean filter does mix them there (so the check above can fail) */
    if (color(&s, &t, VX_COLOR_FILTER_MEAN, 2)) {
      walk(&t, mixed_cell, &k);
      CHECK(k.mixed > 10);
    }
  }
  vx_octree_free(&t);
  vx_soup_free(&s);
}

/* The dominant filter takes colours of the surface itself: on a noise texture every cell's colour
 * is one of the texels' (those that are not cut out), at every level; the mean filter's are
 * mixtures (so the check can fail). */
typedef struct texel_ctx {
  const uint32_t *rgb; /* sorted texel colours (24 bits) */
  uint32_t n;
  int cells, other;
} texel_ctx;

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

static void texel_cell(void *ctx, uint32_t level, uint32_t x, uint32_t y, uint32_t z,
                       uint32_t color, int leaf) {
  (void)level, (void)x, (void)y, (void)z, (void)leaf;
  texel_ctx *k = (texel_ctx *)ctx;
  if ((color >> 24) == 0) return; /* a hole */
  uint32_t c = color & 0xffffffu;
  k->cells++;
  k->other += bsearch(&c, k->rgb, k->n, 4, cmp_u32) == NULL;
}

static void dominant_texel_colours(void) {
  const uint32_t N = 64;
  uint32_t *px = (uint32_t *)malloc(N * N * 4), *rgb = (uint32_t *)malloc(N * N * 4);
  uint64_t seed = 7;
  for (int masked = 0; masked < 2; masked++) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < N * N; i++) {
      int cut = masked && ((i % N) / 4 + (i / N) / 4) % 2; /* 4 x 4 texel squares cut out */
      px[i] = noise_rgb(&seed) | (cut ? 0u : 0xff000000u);
      if (!cut) rgb[n++] = px[i] & 0xffffffu;
    }
    qsort(rgb, n, 4, cmp_u32);
    vx_texture tx = {N, N, px};
    vx_material m = mat_tex(0, masked ? VX_ALPHA_MASK : VX_ALPHA_OPAQUE, 0.5f);
    for (uint32_t R = 8; R <= 64; R *= 2) {
      const double p0[3] = {0, 0, 0.3}, e1[3] = {1, 0, 0}, e2[3] = {0, 1, 0.4};
      vx_soup s;
      textured_quad(&s, p0, e1, e2, &m, &tx);
      vx_octree t;
      if (build(&s, R, &t)) {
        texel_ctx k = {rgb, n, 0, 0};
        if (color(&s, &t, VX_COLOR_FILTER_DOMINANT, 2)) walk(&t, texel_cell, &k);
        CHECK_MSG(k.cells > 20 && k.other == 0, "masked %d R %u: %d of %d cells not a texel's",
                  masked, R, k.other, k.cells);
        texel_ctx q = {rgb, n, 0, 0};
        if (R == 8 && color(&s, &t, VX_COLOR_FILTER_MEAN, 2)) walk(&t, texel_cell, &q);
        CHECK(R != 8 || q.other > q.cells / 2);
      }
      vx_octree_free(&t);
      vx_soup_free(&s);
    }
  }
  free(px);
  free(rgb);
}

/* ---- 6, 7. pruning and threads ------------------------------------------------------------- */

/* A textured, vertex-coloured and flat-coloured sphere (three materials by latitude band). */
static void sphere_soup(vx_soup *s, int nu, int nv, uint32_t texN) {
  soupb b = {0};
  for (int j = 0; j < nv; j++)
    for (int i = 0; i < nu; i++) {
      double P[4][3], UV[4][2];
      for (int c = 0; c < 4; c++) {
        int ii = i + (c == 1 || c == 2), jj = j + (c >= 2);
        double th = 2 * M_PI * ii / nu, ph = M_PI * jj / nv;
        P[c][0] = 0.5 + 0.45 * sin(ph) * cos(th);
        P[c][1] = 0.5 + 0.45 * sin(ph) * sin(th);
        P[c][2] = 0.5 + 0.45 * cos(ph);
        UV[c][0] = 2.0 * ii / nu;
        UV[c][1] = 1.0 - (double)jj / nv;
      }
      uint32_t mat = j < nv / 2 ? 0 : (j < 3 * nv / 4 ? 1 : 2);
      int tri[2][3] = {{0, 1, 2}, {0, 2, 3}};
      for (int t = 0; t < 2; t++) {
        double p[9], uv[6];
        uint32_t corner[3];
        for (int v = 0; v < 3; v++) {
          int c = tri[t][v];
          for (int q = 0; q < 3; q++) p[v * 3 + q] = P[c][q];
          uv[v * 2] = UV[c][0];
          uv[v * 2 + 1] = UV[c][1];
          corner[v] = rgba((uint32_t)(255 * P[c][0]), (uint32_t)(255 * P[c][1]),
                           (uint32_t)(255 * P[c][2]), 255);
        }
        double u[3], w[3];
        for (int q = 0; q < 3; q++) {
          u[q] = (float)p[3 + q] - (float)p[q];
          w[q] = (float)p[6 + q] - (float)p[q];
        }
        double cx = u[1] * w[2] - u[2] * w[1], cy = u[2] * w[0] - u[0] * w[2],
               cz = u[0] * w[1] - u[1] * w[0];
        if (cx * cx + cy * cy + cz * cz < 1e-20) continue; /* the poles' collapsed triangles */
        sb_tri(&b, p, mat, uv, corner);
      }
    }
  uint32_t *px = checker(texN, texN / 16 ? texN / 16 : 1);
  vx_texture tx = {texN, texN, px};
  vx_material m[3] = {mat_tex(0, VX_ALPHA_OPAQUE, 0.5f), mat_flat(rgba(90, 200, 120, 255)),
                      mat_tex(0, VX_ALPHA_BLEND, 0.5f)};
  m[2].factor = rgba(255, 255, 255, 128);
  sb_finish(&b, s, m, 3, &tx, 1, 1, 0);
  free(px);
}

static void copy_tree(const vx_octree *a, vx_octree *b) {
  *b = *a;
  b->nodes = (vx_node *)vx_malloc(a->node_count * sizeof(vx_node));
  b->voxels = (vx_voxel *)vx_malloc(a->voxel_count * sizeof(vx_voxel));
  memcpy(b->nodes, a->nodes, a->node_count * sizeof(vx_node));
  memcpy(b->voxels, a->voxels, a->voxel_count * sizeof(vx_voxel));
  b->node_color = b->voxel_color = NULL;
  if (a->node_color) {
    b->node_color = (uint32_t *)vx_malloc(a->node_count * 4);
    b->voxel_color = (uint32_t *)vx_malloc(a->voxel_count * 4);
    memcpy(b->node_color, a->node_color, a->node_count * 4);
    memcpy(b->voxel_color, a->voxel_color, a->voxel_count * 4);
  }
}

typedef struct leaf_ctx {
  const vx_octree *full;
  int leaves, bad;
} leaf_ctx;

/* The colour of the cell (level, x, y, z) of the full tree, found by descending it. */
static int full_color(const vx_octree *t, uint32_t level, uint32_t x, uint32_t y, uint32_t z,
                      uint32_t *c) {
  uint64_t idx = 0;
  for (uint32_t l = 0; l < level; l++) {
    uint32_t sh = level - 1 - l;
    uint32_t slot = (x >> sh & 1) | (y >> sh & 1) << 1 | (z >> sh & 1) << 2;
    const vx_node *nd = &t->nodes[idx];
    uint32_t mask = nd->info & 255u;
    if (!(mask >> slot & 1)) return 0;
    idx = nd->child + __builtin_popcount(mask & ((1u << slot) - 1));
  }
  *c = level < t->depth ? t->node_color[idx] : t->voxel_color[idx];
  return 1;
}

static void leaf_cell(void *vctx, uint32_t level, uint32_t x, uint32_t y, uint32_t z, uint32_t c,
                      int leaf) {
  leaf_ctx *k = (leaf_ctx *)vctx;
  uint32_t want = 0;
  if (!full_color(k->full, level, x, y, z, &want) || want != c) k->bad++;
  if (leaf && level < k->full->depth) k->leaves++;
}

static void prune_keeps_colours(void) {
  vx_soup s;
  sphere_soup(&s, 48, 24, 64);
  vx_octree t;
  if (build(&s, 64, &t) && color(&s, &t, VX_COLOR_FILTER_MEAN, 2)) {
    vx_octree a, b;
    copy_tree(&t, &a);
    copy_tree(&t, &b);
    vx_free(b.node_color);
    vx_free(b.voxel_color);
    b.node_color = b.voxel_color = NULL;
    vx_error e;
    CHECK(vx_octree_prune(&a, 0.3f, &e) == VX_OK); /* coloured, then pruned */
    CHECK(vx_octree_prune(&b, 0.3f, &e) == VX_OK); /* pruned, then coloured */
    CHECK(a.node_count < t.node_count && a.voxel_count < t.voxel_count);
    if (color(&s, &b, VX_COLOR_FILTER_MEAN, 1)) {
      CHECK(a.node_count == b.node_count && a.voxel_count == b.voxel_count);
      CHECK(!memcmp(a.node_color, b.node_color, a.node_count * 4));
      CHECK(!memcmp(a.voxel_color, b.voxel_color, a.voxel_count * 4));
    }
    leaf_ctx k = {&t, 0, 0};
    walk(&a, leaf_cell, &k);
    CHECK(k.leaves > 0);
    CHECK_MSG(k.bad == 0, "%d cells of the pruned tree differ from the full tree's", k.bad);
    vx_octree_free(&a);
    vx_octree_free(&b);
  }
  vx_octree_free(&t);
  vx_soup_free(&s);
}

static void threads_same_bytes(void) {
  vx_soup s;
  sphere_soup(&s, 64, 40, 256); /* > 4 chunks of triangles */
  for (int f = 0; f < 2; f++) {
    vx_octree t1, t2;
    if (build(&s, 128, &t1)) {
      copy_tree(&t1, &t2);
      if (color(&s, &t1, (vx_color_filter)f, 1) && color(&s, &t2, (vx_color_filter)f, 2)) {
        CHECK(!memcmp(t1.node_color, t2.node_color, t1.node_count * 4));
        CHECK(!memcmp(t1.voxel_color, t2.voxel_color, t1.voxel_count * 4));
        /* asked for the GPU: its parts, or the CPU's with a note why; the same bytes */
        vx_octree t3;
        copy_tree(&t1, &t3);
        vx_free(t3.node_color);
        vx_free(t3.voxel_color);
        t3.node_color = t3.voxel_color = NULL;
        vx_error e, note;
        memset(&note, 0, sizeof note);
        int on_gpu = -1;
        CHECK(vx_color_tree_ex(&s, &t3, (vx_color_filter)f, 2, 0, 1, &on_gpu, &note, &e) == VX_OK);
        CHECK(on_gpu == 1 || (on_gpu == 0 && note.msg[0] && note.status != VX_OK));
        CHECK(t3.node_color && !memcmp(t1.node_color, t3.node_color, t1.node_count * 4));
        CHECK(t3.voxel_color && !memcmp(t1.voxel_color, t3.voxel_color, t1.voxel_count * 4));
        vx_octree_free(&t3);
      }
      vx_octree_free(&t2);
    }
    vx_octree_free(&t1);
  }
  vx_soup_free(&s);
}

static void refusals(void) {
  vx_soup s;
  sphere_soup(&s, 16, 8, 16);
  vx_octree t;
  vx_error e;
  if (build(&s, 32, &t)) {
    /* a limit below what the process already holds: refused, the tree left grey */
    CHECK(vx_color_tree(&s, &t, VX_COLOR_FILTER_MEAN, 1, 1024, &e) == VX_ERR_LIMIT);
    CHECK(strstr(e.msg, "colour") != NULL);
    CHECK(t.node_color == NULL && t.voxel_color == NULL);
    /* limits around what it needs: either colours or VX_ERR_LIMIT and the tree left grey (the
     * refusal before any part, and the one while the parts are made) */
    /* the bounds leave room for the resident size to move between calls (an allocator may
     * return pages to the system or keep freed blocks, as ASan's quarantine does) */
    uint64_t rss = vx_resident_bytes(), lo = rss / 2, hi = rss * 2 + (64u << 20);
    int refused = 0, done = 0;
    for (int i = 0; i < 14; i++) {
      uint64_t mid = lo + (hi - lo) / 2;
      vx_status st = vx_color_tree(&s, &t, VX_COLOR_FILTER_MEAN, 2, mid, &e);
      CHECK(st == VX_OK || st == VX_ERR_LIMIT);
      if (st == VX_OK) {
        CHECK(t.node_color && t.voxel_color);
        vx_free(t.node_color);
        vx_free(t.voxel_color);
        t.node_color = t.voxel_color = NULL;
        done++;
        hi = mid;
      } else {
        CHECK(t.node_color == NULL && t.voxel_color == NULL && strstr(e.msg, "colour needs"));
        refused++;
        lo = mid;
      }
    }
    CHECK(refused > 0 && done > 0);
    CHECK(vx_color_tree(&s, &t, (vx_color_filter)7, 1, 0, &e) == VX_ERR_INVALID_ARG);
    /* no colour: nothing to do */
    vx_soup_color *c = s.color;
    s.color = NULL;
    CHECK(vx_color_tree(&s, &t, VX_COLOR_FILTER_MEAN, 1, 0, &e) == VX_OK && !t.node_color);
    s.color = c;
    /* out-of-range materials and textures fall back to white, non-finite UVs to 0 */
    c->material[0] = 99;
    c->materials[1].texture = 5;
    c->uv[3] = NAN;
    c->uv[7] = 1e30f;
    CHECK(vx_color_tree(&s, &t, VX_COLOR_FILTER_MEAN, 1, 0, &e) == VX_OK && t.node_color);
  }
  vx_octree_free(&t);
  vx_soup_free(&s);
}

/* A mesh from a file with a synthetic texture: UVs the planar projection of x, y over the box
 * (the texture repeated twice across it), a texN^2 checker of 16 texel squares. */
static int mesh_soup(const char *path, vx_soup *s, uint32_t texN) {
  vx_error e;
  if (!vx_soup_import) {
    fprintf(stderr, "no mesh importer linked\n");
    return 0;
  }
  if (vx_soup_import(path, s, &e) != VX_OK) {
    fprintf(stderr, "%s\n", e.msg);
    return 0;
  }
  vx_soup_color *c = (vx_soup_color *)vx_calloc(1, sizeof *c);
  vx_material m = mat_tex(0, VX_ALPHA_OPAQUE, 0.5f);
  c->materials = (vx_material *)vx_malloc(sizeof m);
  c->materials[0] = m;
  c->material_count = 1;
  c->textures = (vx_texture *)vx_calloc(1, sizeof(vx_texture));
  uint32_t *px = checker(texN, 16);
  c->textures[0].width = c->textures[0].height = texN;
  c->textures[0].rgba = (uint32_t *)vx_malloc((size_t)texN * texN * 4);
  memcpy(c->textures[0].rgba, px, (size_t)texN * texN * 4);
  free(px);
  c->texture_count = 1;
  c->material = (uint32_t *)vx_calloc(s->tri_count, 4);
  c->uv = (float *)vx_malloc(s->tri_count * 24);
  double ext = fmax(s->bbox_max[0] - s->bbox_min[0], s->bbox_max[1] - s->bbox_min[1]);
  for (uint64_t t = 0; t < s->tri_count * 3; t++)
    for (int k = 0; k < 2; k++)
      c->uv[t * 2 + k] = (float)(2.0 * (s->pos[t * 3 + k] - s->bbox_min[k]) / ext);
  s->color = c;
  return 1;
}

static int bench(int argc, char **argv) {
  uint32_t R = (uint32_t)atoi(argv[2]);
  int threads = argc > 4 ? atoi(argv[4]) : 0;
  const char *what = argc > 3 ? argv[3] : "512";
  vx_soup s;
  struct stat sb;
  if (stat(what, &sb) == 0) {
    if (!mesh_soup(what, &s, 512)) return 1;
  } else {
    int nu = atoi(what);
    sphere_soup(&s, nu, nu / 2, 2048);
  }
  vx_voxelize_opts o;
  memset(&o, 0, sizeof o);
  o.resolution = R;
  o.threads = threads;
  vx_octree t;
  vx_error e;
  struct timespec c0, c1, c2;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
  double t0 = vx_clock_seconds();
  if (vx_voxelize(&s, &o, &t, NULL, &e) != VX_OK) {
    fprintf(stderr, "%s\n", e.msg);
    return 1;
  }
  double t1 = vx_clock_seconds();
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
  if (vx_color_tree(&s, &t, VX_COLOR_FILTER_MEAN, threads, 0, &e) != VX_OK) {
    fprintf(stderr, "%s\n", e.msg);
    return 1;
  }
  double t2 = vx_clock_seconds();
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c2);
  double cb = (double)(c1.tv_sec - c0.tv_sec) + 1e-9 * (double)(c1.tv_nsec - c0.tv_nsec);
  double cc = (double)(c2.tv_sec - c1.tv_sec) + 1e-9 * (double)(c2.tv_nsec - c1.tv_nsec);
  uint64_t h = 14695981039346656037ull; /* FNV-1a of the colours, to compare builds */
  for (uint64_t i = 0; i < t.node_count + t.voxel_count; i++) {
    uint32_t c = i < t.node_count ? t.node_color[i] : t.voxel_color[i - t.node_count];
    for (int k = 0; k < 4; k++) h = (h ^ (c >> (8 * k) & 255u)) * 1099511628211ull;
  }
  printf("%llu triangles, %u^3: %llu voxels, %llu nodes; build %.2f s (CPU %.2f s), colour %.2f s "
         "(CPU %.2f s, +%.0f%% of the build's CPU time); colours %016llx\n",
         (unsigned long long)s.tri_count, R, (unsigned long long)t.voxel_count,
         (unsigned long long)t.node_count, t1 - t0, cb, t2 - t1, cc, 100.0 * cc / cb,
         (unsigned long long)h);
  vx_octree_free(&t);
  vx_soup_free(&s);
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 2 && !strcmp(argv[1], "bench")) return bench(argc, argv);
  RUN(cube_six_face_colours);
  RUN(checkerboard_plane);
  RUN(noise_footprint_mean);
  RUN(vertex_colours_match_integral);
  RUN(random_soup_root_mean);
  RUN(material_colour_exact);
  RUN(mask_hole);
  RUN(dominant_two_materials);
  RUN(dominant_texel_colours);
  RUN(prune_keeps_colours);
  RUN(threads_same_bytes);
  RUN(refusals);
  return check_summary();
}
