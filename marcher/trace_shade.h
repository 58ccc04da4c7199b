/* SPDX-License-Identifier: Apache-2.0 */
/* trace_shade.h - one pixel: its ray, the walk, and the colour (part of trace.h; include that).
 *
 * Algorithm. The pixel's ray is dir00 + px du + py dv from the eye (scene.c), normalised. A hit
 * is shaded Lambert with the light s->light plus an ambient term, on the albedo of its cell,
 * then encoded with a gamma of 2 to 8 bits; the normal is first turned to face the viewer (zero
 * crossings count in both directions, so a hit normal may point either way). The albedo is the
 * hit cell's colour (svo/color.h: sRGB decoded to linear light), read once here from the cell
 * index the walk leaves in the hit, or a constant warm grey when the tree has no colour (the
 * images of grey trees are those of before colour existed). A miss is the constant background
 * colour. VX_SHADE_NORMALS writes the facing normal as a colour instead; VX_SHADE_ALBEDO the
 * unlit albedo as stored: the cell's sRGB bytes as they are (so an image compares with the
 * input's texture colours directly), or sRGB-encoded grey 0.8 for a grey tree. Blocks mode is
 * lit and coloured as the smooth surface. */
#ifndef VOXLOD_MARCHER_TRACE_SHADE_H
#define VOXLOD_MARCHER_TRACE_SHADE_H

#ifndef VOXLOD_MARCHER_TRACE_H
#error "marcher/trace_shade.h is a part of marcher/trace.h: include that"
#endif

/* Background colour (8-bit RGB), the albedo of a grey tree (linear) when lit, and when unlit
 * (VX_SHADE_ALBEDO, linear grey). */
#define VX_BG_R 34
#define VX_BG_G 38
#define VX_BG_B 46
#define VX_ALBEDO_R 0.86f
#define VX_ALBEDO_G 0.80f
#define VX_ALBEDO_B 0.72f
#define VX_GREY 0.8f
#define VX_AMBIENT 0.18f

/* 8-bit channel from a linear value: gamma 2 (sqrt), clamped. */
VX_HD uint8_t vx_to_srgb8(float v) {
  v = vx_tr_min(vx_tr_max(v, 0.0f), 1.0f);
  return (uint8_t)(sqrtf(v) * 255.0f + 0.5f);
}

/* The unit direction of pixel (px, py)'s ray (declared in trace.h). */
VX_HD void vx_pixel_ray(const vx_trace_scene *s, uint32_t px, uint32_t py, float d[3]) {
  VX_UNROLL
  for (int i = 0; i < 3; i++) d[i] = s->dir00[i] + (float)px * s->du[i] + (float)py * s->dv[i];
  float il = 1.0f / sqrtf(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
  VX_UNROLL
  for (int i = 0; i < 3; i++) d[i] *= il;
}

/* vx_render_pixel (declared in trace.h). */
VX_HD void vx_render_pixel(const vx_trace_scene *s, uint32_t px, uint32_t py, vx_pixel *out) {
  float d[3];
  vx_pixel_ray(s, px, py, d);
  vx_trace_hit h;
  vx_trace_ray(s, s->eye, d, &h);
  vx_shade_hit(s, d, &h, out);
}

/* vx_shade_hit (declared in trace.h). */
VX_HD void vx_shade_hit(const vx_trace_scene *s, const float d[3], const vx_trace_hit *hp,
                        vx_pixel *out) {
  const vx_trace_hit h = *hp;
  out->visits = h.visits;
  if (!h.hit) {
    out->rgb[0] = VX_BG_R;
    out->rgb[1] = VX_BG_G;
    out->rgb[2] = VX_BG_B;
    out->depth = INFINITY;
    return;
  }
  /* A hit beyond float range (world coordinates near 3.4e38) is still a hit: FLT_MAX, never
   * the miss value INFINITY. */
  out->depth = vx_tr_min(h.t * s->world_per_grid, 3.402823466e+38f);
  float n[3] = {h.n[0], h.n[1], h.n[2]};
  if (n[0] * d[0] + n[1] * d[1] + n[2] * d[2] > 0.0f) { /* face the viewer */
    n[0] = -n[0];
    n[1] = -n[1];
    n[2] = -n[2];
  }
  if (s->shade == 2 /* VX_SHADE_NORMALS */) {
    out->rgb[0] = (uint8_t)((n[0] * 0.5f + 0.5f) * 255.0f + 0.5f);
    out->rgb[1] = (uint8_t)((n[1] * 0.5f + 0.5f) * 255.0f + 0.5f);
    out->rgb[2] = (uint8_t)((n[2] * 0.5f + 0.5f) * 255.0f + 0.5f);
    return;
  }
  const uint32_t *colors = vx_tr_colors(s, h.level);
  uint32_t c = colors ? vx_tr_fetch_color(&colors[h.cell]) : 0u; /* the one colour read */
  if (s->shade == 3 /* VX_SHADE_ALBEDO */) {
    if (colors) {
      out->rgb[0] = (uint8_t)(c & 255u);
      out->rgb[1] = (uint8_t)(c >> 8 & 255u);
      out->rgb[2] = (uint8_t)(c >> 16 & 255u);
    } else {
      out->rgb[0] = out->rgb[1] = out->rgb[2] = (uint8_t)vx_unorm8(vx_linear_to_srgb(VX_GREY));
    }
    return;
  }
  float alb[3] = {VX_ALBEDO_R, VX_ALBEDO_G, VX_ALBEDO_B};
  if (colors) {
    float lin[4];
    vx_rgba_unpack_linear(c, lin);
    alb[0] = lin[0];
    alb[1] = lin[1];
    alb[2] = lin[2];
  }
  float diff = vx_tr_max(n[0] * s->light[0] + n[1] * s->light[1] + n[2] * s->light[2], 0.0f);
  float lum = VX_AMBIENT + (1.0f - VX_AMBIENT) * diff;
  out->rgb[0] = vx_to_srgb8(alb[0] * lum);
  out->rgb[1] = vx_to_srgb8(alb[1] * lum);
  out->rgb[2] = vx_to_srgb8(alb[2] * lum);
}

#endif
