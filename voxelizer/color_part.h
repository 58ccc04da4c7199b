/* SPDX-License-Identifier: Apache-2.0 */
/* color_part.h - the colour of one triangle part, written once for the CPU pass (color.c) and the
 * GPU pass (color_gpu.cu): the same operations in the same order, so both make the same records
 * bit for bit (the CUDA side is compiled without fused multiply-adds, as the GPU build is).
 *
 * What a part's colour is (the rules are color.c's header): a material colour is constant; vertex
 * colours are linear over the triangle, so their mean over a part is their value at its centroid;
 * a texture is filtered over the part's footprint at the texel rate of that footprint, read
 * through its mip pyramid (color_texview.h).
 *
 * CPART_LEVEL(view, level) must be defined before this header is included: the mip level a
 * sample may use when `level` is wanted (the CPU builds levels 1.. on first use and may fall back
 * to level 0; the GPU has them all).
 */
#ifndef VOXLOD_VOXELIZER_COLOR_PART_H
#define VOXLOD_VOXELIZER_COLOR_PART_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "svo/hostdev.h"
#include "svo/node.h"
#include "svo/soup.h"
#include "voxelizer/color_clip.h"
#include "voxelizer/color_internal.h"
#include "voxelizer/color_texview.h"

#ifndef CPART_LEVEL
#error "define CPART_LEVEL(view, level) before including color_part.h"
#endif

enum { CPART_FLAT = 0, CPART_CORNER = 1, CPART_TEX = 2 };

typedef struct ctri { /* what the colour of one triangle needs */
  int kind;
  uint32_t alpha_mode;
  float cutoff;
  float factor[4]; /* linear */
  float corner[3][4];
  double uv[6];
  double texels; /* |det| of the barycentric -> texel map of level 0 (twice the UV triangle) */
  const ctex_view *tex;
  int dominant;  /* the part's colour is one of the texture's (cpart_color) */
} ctri;

VX_HD void cpart_unpack(const float *lut, uint32_t c, float out[4]) {
  out[0] = lut[c & 255u];
  out[1] = lut[c >> 8 & 255u];
  out[2] = lut[c >> 16 & 255u];
  out[3] = (float)(c >> 24) * (1.0f / 255.0f);
}

/* Triangle t's colour source. What the importer should not hand over is tolerated: a material
 * index out of range is opaque white, a texture out of range or without UVs leaves the material's
 * colour (or the vertex colours), a non-finite UV is 0. */
VX_HD void cpart_tri(const cpart_src *s, uint64_t t, ctri *ti) {
  vx_material white;
  white.factor = 0xffffffffu;
  white.texture = -1;
  white.alpha_mode = VX_ALPHA_OPAQUE;
  white.alpha_cutoff = 0.5f;
  const uint32_t mi = s->material ? s->material[t] : 0; /* no table of them: material 0 */
  const vx_material *m = s->materials && mi < s->material_count ? &s->materials[mi] : &white;
  ti->alpha_mode = m->alpha_mode;
  ti->cutoff = m->alpha_cutoff;
  cpart_unpack(s->lut, m->factor, ti->factor);
  ti->tex = NULL;
  ti->dominant = s->dominant;
  if (m->texture >= 0 && (uint32_t)m->texture < s->texture_count && s->uv &&
      s->tex[m->texture].levels > 0) {
    ti->kind = CPART_TEX;
    ti->tex = &s->tex[m->texture];
    for (int k = 0; k < 6; k++) {
      double u = (double)s->uv[t * 6 + k];
      ti->uv[k] = isfinite(u) ? u : 0.0;
    }
    double W = (double)ti->tex->w[0], H = (double)ti->tex->h[0];
    double du1 = (ti->uv[2] - ti->uv[0]) * W, dv1 = (ti->uv[3] - ti->uv[1]) * H;
    double du2 = (ti->uv[4] - ti->uv[0]) * W, dv2 = (ti->uv[5] - ti->uv[1]) * H;
    ti->texels = fabs(du1 * dv2 - du2 * dv1);
    if (!isfinite(ti->texels)) ti->texels = 1e300;
  } else if (s->corner_rgba) {
    ti->kind = CPART_CORNER;
    for (int k = 0; k < 3; k++) cpart_unpack(s->lut, s->corner_rgba[t * 3 + k], ti->corner[k]);
  } else {
    ti->kind = CPART_FLAT;
  }
}

VX_HD float cpart_alpha(const ctri *ti, float a, uint32_t level) {
  if (ti->alpha_mode == VX_ALPHA_MASK) return level == 0 ? (a >= ti->cutoff ? 1.0f : 0.0f) : a;
  if (ti->alpha_mode == VX_ALPHA_BLEND) return a < 0.0f ? 0.0f : (a > 1.0f ? 1.0f : a);
  return 1.0f;
}

/* The colour at barycentric (b1, b2), linear rgba before the alpha mode: the texture (the
 * bilinear sample of `level`, or with `texel` the texel of level 0 holding the point) times the
 * material's factor, the vertex colours' value there, or the material's colour. */
VX_HD void cpart_at(const float *lut, const ctri *ti, double b1, double b2, uint32_t level,
                    int texel, float s[4]) {
  double b0 = 1.0 - b1 - b2;
  if (ti->kind == CPART_TEX) {
    double u = b0 * ti->uv[0] + b1 * ti->uv[2] + b2 * ti->uv[4];
    double v = b0 * ti->uv[1] + b1 * ti->uv[3] + b2 * ti->uv[5];
    if (!isfinite(u)) u = 0.0;
    if (!isfinite(v)) v = 0.0;
    if (texel) cpart_unpack(lut, ctex_texel(ti->tex, u, v), s);
    else ctex_sample(ti->tex, level, u, v, ti->alpha_mode != VX_ALPHA_OPAQUE, lut, s);
    for (int k = 0; k < 4; k++) s[k] *= ti->factor[k];
  } else if (ti->kind == CPART_CORNER) {
    for (int k = 0; k < 4; k++)
      s[k] = (float)(b0 * ti->corner[0][k] + b1 * ti->corner[1][k] + b2 * ti->corner[2][k]);
  } else {
    for (int k = 0; k < 4; k++) s[k] = ti->factor[k];
  }
}

/* Adds weight w of the colour at barycentric (b1, b2) to acc (alpha * rgb, alpha). */
VX_HD void cpart_accumulate(const float *lut, const ctri *ti, double b1, double b2,
                            uint32_t level, double w, double acc[4]) {
  float s[4];
  cpart_at(lut, ti, b1, b2, level, 0, s);
  double a = w * (double)cpart_alpha(ti, s[3], level);
  acc[0] += a * s[0];
  acc[1] += a * s[1];
  acc[2] += a * s[2];
  acc[3] += a;
}

/* Mean over part P of alpha * rgb and of alpha (out: 4 values per unit area). A part within half
 * a texel takes the bilinear value of level 0 at its centroid; a larger footprint is sampled
 * about four times per texel (up to 32 samples: each fan triangle of the part split at its edge
 * midpoints) on the mip level where it spans at most that many texels. */
VX_HD void cpart_mean(const float *lut, const ctri *ti, const clip_poly *P, double out[4]) {
  out[0] = out[1] = out[2] = out[3] = 0.0;
  if (ti->kind == CPART_FLAT) {
    cpart_accumulate(lut, ti, 0.0, 0.0, 0, 1.0, out);
    return;
  }
  /* the fan triangles in barycentric space, where areas are proportional to the 3D ones */
  double fan[CLIP_MAX], total = 0.0, c1 = 0.0, c2 = 0.0;
  const int nf = P->n - 2;
  for (int i = 0; i < nf; i++) {
    const double *p0 = P->v[0].b, *p1 = P->v[i + 1].b, *p2 = P->v[i + 2].b;
    double a = 0.5 * fabs((p1[0] - p0[0]) * (p2[1] - p0[1]) - (p2[0] - p0[0]) * (p1[1] - p0[1]));
    fan[i] = a;
    total += a;
    c1 += a * (p0[0] + p1[0] + p2[0]) / 3.0;
    c2 += a * (p0[1] + p1[1] + p2[1]) / 3.0;
  }
  if (!(total > 0.0)) {
    c1 = c2 = 0.0;
    for (int i = 0; i < P->n; i++) {
      c1 += P->v[i].b[0] / P->n;
      c2 += P->v[i].b[1] / P->n;
    }
    cpart_accumulate(lut, ti, c1, c2, 0, 1.0, out);
    return;
  }
  c1 /= total;
  c2 /= total;
  double texels = ti->kind == CPART_TEX ? ti->texels * total : 0.0; /* the footprint, level 0 */
  int sampled = ti->kind == CPART_TEX ? texels >= 0.5 : ti->alpha_mode == VX_ALPHA_MASK;
  if (!sampled) { /* linear colours, or a footprint within one texel: the centroid */
    cpart_accumulate(lut, ti, c1, c2, 0, 1.0, out);
    return;
  }
  const int kmax = nf <= 2 ? 2 : (nf <= 8 ? 1 : 0);
  const double want = ti->kind == CPART_TEX ? 4.0 * texels : 16.0;
  int k = 0;
  while (k < kmax && (double)(nf << (2 * k)) < want) k++;
  const int m = 1 << k;
  uint32_t level = 0;
  if (ti->kind == CPART_TEX) {
    const double S = (double)(nf * m * m);
    while (level + 1 < ti->tex->levels && texels > S * ldexp(1.0, 2 * (int)level)) level++;
    level = CPART_LEVEL(ti->tex, level);
  }
  for (int f = 0; f < nf; f++) {
    if (!(fan[f] > 0.0)) continue;
    const double *p0 = P->v[0].b, *p1 = P->v[f + 1].b, *p2 = P->v[f + 2].b;
    const double w = fan[f] / total / (double)(m * m);
    for (int a = 0; a < m; a++)
      for (int b = 0; a + b < m; b++)
        for (int down = 0; down < 2; down++) {
          if (down && a + b + 2 > m) continue;
          double s = ((double)a + (down ? 2.0 : 1.0) / 3.0) / m;
          double t = ((double)b + (down ? 2.0 : 1.0) / 3.0) / m;
          double b1 = p0[0] + s * (p1[0] - p0[0]) + t * (p2[0] - p0[0]);
          double b2 = p0[1] + s * (p1[1] - p0[1]) + t * (p2[1] - p0[1]);
          cpart_accumulate(lut, ti, b1, b2, level, w, out);
        }
  }
}

/* The colour at barycentric (b1, b2) as the dominant filter takes it (cpart_at's point colour),
 * alpha after the material's mode. */
VX_HD void cpart_point(const float *lut, const ctri *ti, double b1, double b2, float out[4]) {
  cpart_at(lut, ti, b1, b2, 0, 1, out);
  out[3] = cpart_alpha(ti, out[3], 0);
}

/* The colour of part P (out: 4 values per unit area, as cpart_mean's). Mean filter: cpart_mean.
 * Dominant filter: the part's alpha is its mean (its coverage), its colour is a colour of the
 * surface itself, not a mixture: the point colour (cpart_point) at the part's vertex centroid,
 * or, where that is cut out, at the first of its vertices that is not. */
VX_HD void cpart_color(const float *lut, const ctri *ti, const clip_poly *P, double out[4]) {
  cpart_mean(lut, ti, P, out);
  if (!ti->dominant || !(out[3] > 0.0)) return;
  double c1 = 0.0, c2 = 0.0;
  for (int i = 0; i < P->n; i++) {
    c1 += P->v[i].b[0];
    c2 += P->v[i].b[1];
  }
  float pt[4];
  cpart_point(lut, ti, c1 / P->n, c2 / P->n, pt);
  for (int i = 0; i < P->n && !(pt[3] > 0.0f); i++)
    cpart_point(lut, ti, P->v[i].b[0], P->v[i].b[1], pt);
  for (int k = 0; k < 3; k++) out[k] = out[3] * (double)pt[k];
}

/* The voxel code(s) a part in voxel (x, y, z) gives: its own, or, when its triangle lies on the
 * inner grid plane of axis `plane` (>= 0), the voxels on each side (below first). Returns how
 * many. */
VX_HD int cpart_codes(uint32_t x, uint32_t y, uint32_t z, int plane, uint64_t code[2]) {
  uint32_t xyz[3];
  xyz[0] = x;
  xyz[1] = y;
  xyz[2] = z;
  const int copies = plane >= 0 ? 2 : 1;
  for (int i = 0; i < copies; i++) {
    if (plane >= 0) xyz[plane] = (plane == 0 ? x : plane == 1 ? y : z) - 1 + (uint32_t)i;
    code[i] = vx_morton_encode(xyz[0], xyz[1], xyz[2]);
  }
  return copies;
}

/* Whether voxel code `code` lies in the cell of code `cell` at `sh` / 3 levels above the voxels;
 * *local: its code within that cell (mask: 8^(sh / 3) - 1). The colour of a block or a tile keeps
 * only its own records, so coded. */
VX_HD int cpart_in_cell(uint64_t code, uint32_t sh, uint64_t cell, uint64_t mask,
                        uint64_t *local) {
  *local = code & mask;
  return (code >> sh) == cell;
}

/* The record(s) of part P of triangle `tri` in voxel (x, y, z), area `area`: one, or two halves
 * when the triangle lies on the inner grid plane of axis `plane` (>= 0), one in the voxel on each
 * side (cpart_codes). Returns how many were written to r. */
VX_HD int cpart_records(const float *lut, const ctri *ti, const clip_poly *P, double area,
                        uint32_t x, uint32_t y, uint32_t z, int plane, uint32_t tri, crec r[2]) {
  double c[4];
  cpart_color(lut, ti, P, c);
  uint64_t code[2];
  const int copies = cpart_codes(x, y, z, plane, code);
  const double A = area / copies;
  for (int i = 0; i < copies; i++) {
    r[i].code = code[i];
    r[i].tri = tri;
    r[i].area = (float)A;
    for (int k = 0; k < 3; k++) r[i].rgb[k] = (float)(A * c[k]);
    r[i].a = (float)(A * c[3]);
  }
  return copies;
}

#endif
