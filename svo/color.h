/* SPDX-License-Identifier: Apache-2.0 */
/* color.h - the colour vocabulary shared by the builder, the file codec, the renderers (CPU and
 * CUDA), the mesher and the exporters. Host and device code (hostdev.h).
 *
 * A colour is packed RGBA8 in one uint32: r | g << 8 | b << 16 | a << 24. r, g, b are sRGB-encoded
 * (the transfer function of IEC 61966-2-1), so 8 bits hold them without visible banding; a is
 * linear: the opaque share of the surface the colour stands for (1 = fully opaque, 0 = only
 * cut-out parts: the cell is a hole, neither drawn nor meshed). Averages are always taken in
 * linear light: decode, weight, sum, encode.
 */
#ifndef VOXLOD_SVO_COLOR_H
#define VOXLOD_SVO_COLOR_H

#include <stdint.h>
#include <math.h>
#include "svo/hostdev.h"

VX_HD float vx_srgb_to_linear(float c) {
  return c <= 0.04045f ? c * (1.0f / 12.92f) : powf((c + 0.055f) * (1.0f / 1.055f), 2.4f);
}

VX_HD float vx_linear_to_srgb(float c) {
  c = c < 0.0f ? 0.0f : (c > 1.0f ? 1.0f : c);
  return c <= 0.0031308f ? c * 12.92f : 1.055f * powf(c, 1.0f / 2.4f) - 0.055f;
}

VX_HD uint32_t vx_unorm8(float c) {
  if (!(c > 0.0f)) return 0u; /* NaN too */
  return c >= 1.0f ? 255u : (uint32_t)(c * 255.0f + 0.5f);
}

/* Linear r, g, b, a in [0, 1] -> packed RGBA8 (rgb sRGB-encoded). */
VX_HD uint32_t vx_rgba_pack_linear(float r, float g, float b, float a) {
  return vx_unorm8(vx_linear_to_srgb(r)) | vx_unorm8(vx_linear_to_srgb(g)) << 8 |
         vx_unorm8(vx_linear_to_srgb(b)) << 16 | vx_unorm8(a) << 24;
}

/* Packed RGBA8 -> linear r, g, b, a. */
VX_HD void vx_rgba_unpack_linear(uint32_t c, float out[4]) {
  out[0] = vx_srgb_to_linear((float)(c & 255u) * (1.0f / 255.0f));
  out[1] = vx_srgb_to_linear((float)(c >> 8 & 255u) * (1.0f / 255.0f));
  out[2] = vx_srgb_to_linear((float)(c >> 16 & 255u) * (1.0f / 255.0f));
  out[3] = (float)(c >> 24) * (1.0f / 255.0f);
}

#endif
