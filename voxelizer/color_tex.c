/* SPDX-License-Identifier: Apache-2.0 */
/* color_tex.c - mip pyramids and bilinear samples of textures for the colour pass. */
#include "voxelizer/color_tex.h"
#include "svo/color.h"
#include "sys/alloc.h"

#include <math.h>
#include <string.h>

static uint32_t half_up(uint32_t n) { return n > 1 ? (n + 1) / 2 : 1; }

uint64_t ctex_mip_texels(uint32_t w, uint32_t h) {
  uint64_t n = 0;
  while (w > 1 || h > 1) {
    w = half_up(w);
    h = half_up(h);
    n += (uint64_t)w * h;
  }
  return n;
}

void ctex_lut(float lut[256]) {
  for (int i = 0; i < 256; i++) lut[i] = vx_srgb_to_linear((float)i * (1.0f / 255.0f));
}

void ctex_free(ctex *t) {
  if (!t || !t->v) return;
  vx_free(t->owned);
  pthread_mutex_destroy(&t->mu);
  memset(t, 0, sizeof *t);
}

void ctex_init(ctex *t, ctex_view *v, const vx_texture *src, int premul) {
  memset(t, 0, sizeof *t);
  memset(v, 0, sizeof *v);
  t->v = v;
  v->host = t;
  t->premul = premul;
  v->levels = 1;
  v->w[0] = src->width;
  v->h[0] = src->height;
  v->px[0] = src->rgba;
  while (v->w[v->levels - 1] > 1 || v->h[v->levels - 1] > 1) {
    v->w[v->levels] = half_up(v->w[v->levels - 1]);
    v->h[v->levels] = half_up(v->h[v->levels - 1]);
    v->levels++;
  }
  atomic_init(&t->state, v->levels == 1 ? 1 : 0);
  pthread_mutex_init(&t->mu, NULL);
}

static int build_levels(ctex *t, const float lut[256]);

int ctex_mips(ctex *t, const float lut[256]) {
  int s = atomic_load(&t->state);
  if (s == 0) {
    pthread_mutex_lock(&t->mu);
    s = atomic_load(&t->state);
    if (s == 0) {
      s = build_levels(t, lut) ? 1 : 2;
      atomic_store(&t->state, s);
    }
    pthread_mutex_unlock(&t->mu);
  }
  return s == 1;
}

/* Linear [0, 1] -> sRGB code: the code whose interval (its value +-1/2 in sRGB units) holds x,
 * as vx_unorm8(vx_linear_to_srgb(x)) rounds, found among the intervals' bounds in linear light
 * (up[c]: the linear value at code c + 1/2) by binary search instead of a power per channel. */
static uint32_t encode8(const float up[256], float x) {
  uint32_t lo = 0, hi = 255; /* the first code whose upper bound is above x */
  while (lo < hi) {
    uint32_t mid = (lo + hi) / 2;
    if (up[mid] > x) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

static int build_levels(ctex *t, const float lut[256]) {
  float up[256];
  for (int c = 0; c < 255; c++) up[c] = vx_srgb_to_linear(((float)c + 0.5f) * (1.0f / 255.0f));
  up[255] = INFINITY;
  const int premul = t->premul;
  ctex_view *v = t->v;
  t->owned = (uint32_t *)vx_malloc((size_t)ctex_mip_texels(v->w[0], v->h[0]) * sizeof(uint32_t));
  if (!t->owned) return 0;
  uint32_t *at = t->owned;
  for (uint32_t k = 1; k < v->levels; k++) {
    uint32_t sw = v->w[k - 1], sh = v->h[k - 1], w = v->w[k], h = v->h[k];
    const uint32_t *s = v->px[k - 1];
    for (uint32_t y = 0; y < h; y++)
      for (uint32_t x = 0; x < w; x++) {
        float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f}, pm[3] = {0.0f, 0.0f, 0.0f};
        int n = 0;
        for (uint32_t dy = 0; dy < 2; dy++)
          for (uint32_t dx = 0; dx < 2; dx++) {
            uint32_t sx = 2 * x + dx, sy = 2 * y + dy;
            if (sx >= sw || sy >= sh) continue;
            uint32_t c = s[(uint64_t)sy * sw + sx];
            float a = (float)(c >> 24) * (1.0f / 255.0f);
            for (int q = 0; q < 3; q++) {
              float l = lut[c >> (8 * q) & 255u];
              acc[q] += l;
              pm[q] += a * l;
            }
            acc[3] += a;
            n++;
          }
        float inv = 1.0f / (float)n;
        if (premul && acc[3] > 0.0f)
          for (int q = 0; q < 3; q++) acc[q] = pm[q] / acc[3] * (float)n;
        at[(uint64_t)y * w + x] = encode8(up, acc[0] * inv) | encode8(up, acc[1] * inv) << 8 |
                                  encode8(up, acc[2] * inv) << 16 | vx_unorm8(acc[3] * inv) << 24;
      }
    v->px[k] = at;
    at += (uint64_t)w * h;
  }
  return 1;
}
