/* SPDX-License-Identifier: Apache-2.0 */
/* color_texview.h - a texture's mip pyramid as the colour pass samples it, on the CPU (color.c,
 * whose pyramids color_tex.c builds) and on the GPU (color_gpu.cu, a copy in device memory).
 * Levels are packed RGBA8 (svo/color.h), rows top first; UV (0, 0) is the bottom-left corner of
 * the image; addressing wraps (repeat), texel centres at half-integers. */
#ifndef VOXLOD_VOXELIZER_COLOR_TEXVIEW_H
#define VOXLOD_VOXELIZER_COLOR_TEXVIEW_H

#include <math.h>
#include <stdint.h>

#include "svo/hostdev.h"

#define CTEX_MAX_LEVELS 33

typedef struct ctex_view { /* one texture's pyramid as the samples read it */
  uint32_t levels;         /* >= 1, down to 1 x 1; 0: the texture is not used */
  uint32_t w[CTEX_MAX_LEVELS], h[CTEX_MAX_LEVELS];
  const uint32_t *px[CTEX_MAX_LEVELS]; /* packed RGBA8, rows top first */
  void *host;              /* the CPU pass's state of this texture (color_tex.h), or NULL */
} ctex_view;

/* The texel index floor(i) for i in [-1, n) (a coordinate of [0, 1) in texels less a half),
 * wrapped into [0, n). */
VX_HD uint32_t ctex_wrap(double i, uint32_t n) {
  if (i < 0.0) return n - 1;
  uint32_t r = (uint32_t)i;
  return r < n ? r : n - 1;
}

/* The texel of level 0 holding (u, v) (finite; wrapped here), packed RGBA8. */
VX_HD uint32_t ctex_texel(const ctex_view *t, double u, double v) {
  u -= floor(u);
  v -= floor(v);
  const uint32_t w = t->w[0], h = t->h[0];
  uint32_t x = ctex_wrap(floor(u * (double)w), w), y = ctex_wrap(floor((1.0 - v) * (double)h), h);
  return t->px[0][(uint64_t)y * w + x];
}

/* The bilinear sample of level `level` at (u, v) (finite; wrapped here): linear r, g, b, a;
 * premul: r, g, b weighted by alpha (plain weights where the four texels' alpha is 0). */
VX_HD void ctex_sample(const ctex_view *t, uint32_t level, double u, double v, int premul,
                       const float *lut, float out[4]) {
  if (level >= t->levels) level = t->levels - 1;
  const uint32_t w = t->w[level], h = t->h[level];
  const uint32_t *px = t->px[level];
  u -= floor(u);
  v -= floor(v);
  double x = u * (double)w - 0.5, y = (1.0 - v) * (double)h - 0.5; /* rows top first */
  double fx0 = floor(x), fy0 = floor(y);
  float fx = (float)(x - fx0), fy = (float)(y - fy0);
  uint32_t x0 = ctex_wrap(fx0, w), y0 = ctex_wrap(fy0, h);
  uint32_t x1 = x0 + 1 < w ? x0 + 1 : 0, y1 = y0 + 1 < h ? y0 + 1 : 0;
  uint32_t c[4];
  c[0] = px[(uint64_t)y0 * w + x0];
  c[1] = px[(uint64_t)y0 * w + x1];
  c[2] = px[(uint64_t)y1 * w + x0];
  c[3] = px[(uint64_t)y1 * w + x1];
  float wt[4], a[4], wa[4], asum = 0.0f;
  wt[0] = (1.0f - fx) * (1.0f - fy);
  wt[1] = fx * (1.0f - fy);
  wt[2] = (1.0f - fx) * fy;
  wt[3] = fx * fy;
  for (int k = 0; k < 4; k++) {
    a[k] = (float)(c[k] >> 24) * (1.0f / 255.0f);
    wa[k] = wt[k] * a[k];
    asum += wa[k];
  }
  const float *ws = premul && asum > 0.0f ? wa : wt; /* premultiplied, or plain */
  const float norm = premul && asum > 0.0f ? 1.0f / asum : 1.0f;
  for (int q = 0; q < 3; q++) {
    const uint32_t sh = 8u * (uint32_t)q;
    out[q] = (ws[0] * lut[c[0] >> sh & 255u] + ws[1] * lut[c[1] >> sh & 255u] +
              ws[2] * lut[c[2] >> sh & 255u] + ws[3] * lut[c[3] >> sh & 255u]) * norm;
  }
  out[3] = asum;
}

#endif
