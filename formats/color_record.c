/* SPDX-License-Identifier: Apache-2.0 */
/* color_record.c - a soup's colour to bytes and back, checked (color_record.h). */
#include "formats/color_record.h"
#include "formats/svo_codec.h"
#include "formats/texture.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { MATERIAL_BYTES = 16, CHUNK = 65536 /* bytes converted at a time */ };

void vx_color_summary_put(const vx_soup_color *c, uint8_t rec[VX_COLOR_SUMMARY_BYTES]) {
  memset(rec, 0, VX_COLOR_SUMMARY_BYTES);
  if (!c) return;
  uint64_t texels = 0;
  for (uint32_t i = 0; i < c->texture_count; i++)
    texels += (uint64_t)c->textures[i].width * c->textures[i].height;
  size_t wl = c->warnings ? strlen(c->warnings) : 0;
  vx_put_u32(rec, 1);
  vx_put_u32(rec + 4, c->material_count);
  vx_put_u32(rec + 8, c->texture_count);
  vx_put_u32(rec + 12, c->uv != NULL);
  vx_put_u32(rec + 16, c->corner_rgba != NULL);
  vx_put_u32(rec + 20, (uint32_t)(wl < VX_COLOR_MAX_WARNINGS ? wl : VX_COLOR_MAX_WARNINGS));
  vx_put_u64(rec + 24, texels);
}

vx_status vx_color_summary_get(const uint8_t rec[VX_COLOR_SUMMARY_BYTES], vx_color_summary *s,
                               vx_error *err) {
  s->present = vx_get_u32(rec);
  s->material_count = vx_get_u32(rec + 4);
  s->texture_count = vx_get_u32(rec + 8);
  s->has_uv = vx_get_u32(rec + 12);
  s->has_corner = vx_get_u32(rec + 16);
  s->warnings_len = vx_get_u32(rec + 20);
  s->texels = vx_get_u64(rec + 24);
  int ok = s->present <= 1 && s->has_uv <= 1 && s->has_corner <= 1 &&
           s->material_count <= VX_COLOR_MAX_MATERIALS &&
           s->texture_count <= VX_COLOR_MAX_TEXTURES &&
           s->warnings_len <= VX_COLOR_MAX_WARNINGS && s->texels >= s->texture_count &&
           s->texels <= (uint64_t)s->texture_count * VX_TEXTURE_MAX_TEXELS;
  if (ok && !s->present)
    ok = !s->material_count && !s->texture_count && !s->has_uv && !s->has_corner &&
         !s->warnings_len && !s->texels;
  if (ok && s->present) ok = s->material_count >= 1;
  if (!ok) return vx_error_set(err, VX_ERR_FORMAT, "the colour record makes no sense");
  return VX_OK;
}

double vx_color_summary_bytes(const vx_color_summary *s, uint64_t tri_count) {
  if (!s->present) return 0.0;
  double per_tri = 4.0 + (s->has_uv ? 24.0 : 0.0) + (s->has_corner ? 12.0 : 0.0);
  return (double)sizeof(vx_soup_color) + (double)s->material_count * sizeof(vx_material) +
         (double)s->texture_count * sizeof(vx_texture) + 4.0 * (double)s->texels +
         per_tri * (double)tri_count + (double)s->warnings_len + 1.0;
}

/* ---- writing ---------------------------------------------------------------------------------- */

/* n 32-bit words (u32 or f32 bit patterns) as little-endian bytes. */
static int write_words(const uint32_t *w, uint64_t n, vx_color_write_fn wr, void *ctx) {
  uint8_t buf[CHUNK];
  while (n > 0) {
    size_t k = n < CHUNK / 4 ? (size_t)n : CHUNK / 4;
    for (size_t i = 0; i < k; i++) vx_put_u32(buf + 4 * i, w[i]);
    int r = wr(ctx, buf, 4 * k);
    if (r) return r;
    w += k;
    n -= k;
  }
  return 0;
}

int vx_soup_color_write(const vx_soup_color *c, uint64_t tri_count, vx_color_write_fn wr,
                        void *ctx) {
  if (!c) return 0;
  int r = 0;
  for (uint32_t i = 0; !r && i < c->material_count; i++) {
    uint8_t m[MATERIAL_BYTES];
    vx_put_u32(m, c->materials[i].factor);
    vx_put_u32(m + 4, (uint32_t)c->materials[i].texture);
    vx_put_u32(m + 8, c->materials[i].alpha_mode);
    vx_put_f32(m + 12, c->materials[i].alpha_cutoff);
    r = wr(ctx, m, sizeof m);
  }
  for (uint32_t i = 0; !r && i < c->texture_count; i++) {
    uint8_t d[8];
    vx_put_u32(d, c->textures[i].width);
    vx_put_u32(d + 4, c->textures[i].height);
    r = wr(ctx, d, sizeof d);
  }
  for (uint32_t i = 0; !r && i < c->texture_count; i++)
    r = write_words(c->textures[i].rgba, (uint64_t)c->textures[i].width * c->textures[i].height,
                    wr, ctx);
  if (!r) r = write_words(c->material, tri_count, wr, ctx);
  if (!r && c->uv) {
    uint32_t w[CHUNK / 4];
    for (uint64_t i = 0; !r && i < tri_count * 6; i += CHUNK / 4) {
      uint64_t k = tri_count * 6 - i < CHUNK / 4 ? tri_count * 6 - i : CHUNK / 4;
      memcpy(w, c->uv + i, (size_t)k * 4);
      r = write_words(w, k, wr, ctx);
    }
  }
  if (!r && c->corner_rgba) r = write_words(c->corner_rgba, tri_count * 3, wr, ctx);
  if (!r && c->warnings) {
    size_t wl = strlen(c->warnings);
    r = wr(ctx, c->warnings, wl < VX_COLOR_MAX_WARNINGS ? wl : VX_COLOR_MAX_WARNINGS);
  }
  return r;
}

/* ---- reading ---------------------------------------------------------------------------------- */

static int read_words(uint32_t *w, uint64_t n, vx_color_read_fn rd, void *ctx) {
  uint8_t buf[CHUNK];
  while (n > 0) {
    size_t k = n < CHUNK / 4 ? (size_t)n : CHUNK / 4;
    int r = rd(ctx, buf, 4 * k);
    if (r) return r;
    for (size_t i = 0; i < k; i++) w[i] = vx_get_u32(buf + 4 * i);
    w += k;
    n -= k;
  }
  return 0;
}

vx_status vx_soup_color_read(const vx_color_summary *s, uint64_t tri_count, uint64_t mem_avail,
                             vx_color_read_fn rd, void *ctx, vx_soup_color **out, int *rd_code,
                             vx_error *err) {
  *out = NULL;
  *rd_code = 0;
  if (!s->present) return VX_OK;
  if (tri_count > (UINT64_C(1) << 32))
    return vx_error_set(err, VX_ERR_FORMAT, "the colour record makes no sense");
  double need = vx_color_summary_bytes(s, tri_count);
  if (mem_avail && need > (double)mem_avail)
    return vx_error_set(err, VX_ERR_LIMIT,
                        "the colours (%.1f MiB) do not fit in the memory left (%.1f MiB)",
                        need / 1048576.0, (double)mem_avail / 1048576.0);
  vx_soup_color *c = (vx_soup_color *)vx_calloc(1, sizeof *c);
  if (!c) return vx_error_set(err, VX_ERR_NOMEM, "out of memory for the colours");
  vx_status st = VX_OK;
  int r = 0;
  const char *bad = NULL;
  c->materials = (vx_material *)vx_calloc(s->material_count, sizeof(vx_material));
  c->material = (uint32_t *)vx_malloc(tri_count ? (size_t)tri_count * 4 : 1);
  if (s->texture_count)
    c->textures = (vx_texture *)vx_calloc(s->texture_count, sizeof(vx_texture));
  if (!c->materials || !c->material || (s->texture_count && !c->textures)) goto nomem;
  c->material_count = s->material_count;
  c->texture_count = s->texture_count;
  for (uint32_t i = 0; !r && !bad && i < s->material_count; i++) {
    uint8_t m[MATERIAL_BYTES];
    if ((r = rd(ctx, m, sizeof m)) != 0) break;
    vx_material *x = &c->materials[i];
    x->factor = vx_get_u32(m);
    x->texture = (int32_t)vx_get_u32(m + 4);
    x->alpha_mode = vx_get_u32(m + 8);
    x->alpha_cutoff = vx_get_f32(m + 12);
    if (x->texture < -1 || (x->texture >= 0 && (uint32_t)x->texture >= s->texture_count))
      bad = "a material names a texture that is not there";
    else if (x->alpha_mode > VX_ALPHA_BLEND)
      bad = "a material has an unknown alpha mode";
    else if (!(x->alpha_cutoff >= 0.0f && x->alpha_cutoff <= 1.0f))
      bad = "a material has an alpha cutoff outside [0, 1]";
  }
  uint64_t texels = 0;
  for (uint32_t i = 0; !r && !bad && i < s->texture_count; i++) {
    uint8_t d[8];
    if ((r = rd(ctx, d, sizeof d)) != 0) break;
    uint32_t w = vx_get_u32(d), h = vx_get_u32(d + 4);
    uint64_t n = (uint64_t)w * h;
    if (w == 0 || h == 0 || n > VX_TEXTURE_MAX_TEXELS || texels + n > s->texels)
      bad = "a texture's size does not add up";
    else {
      c->textures[i].width = w;
      c->textures[i].height = h;
      texels += n;
    }
  }
  if (!r && !bad && texels != s->texels) bad = "the textures' sizes do not add up";
  for (uint32_t i = 0; !r && !bad && i < s->texture_count; i++) {
    uint64_t n = (uint64_t)c->textures[i].width * c->textures[i].height;
    c->textures[i].rgba = (uint32_t *)vx_malloc((size_t)n * 4);
    if (!c->textures[i].rgba) goto nomem;
    r = read_words(c->textures[i].rgba, n, rd, ctx);
  }
  if (!r && !bad) r = read_words(c->material, tri_count, rd, ctx);
  for (uint64_t t = 0; !r && !bad && t < tri_count; t++)
    if (c->material[t] >= s->material_count) bad = "a triangle names a material that is not there";
  if (!r && !bad && s->has_uv) {
    c->uv = (float *)vx_malloc(tri_count ? (size_t)tri_count * 24 : 1);
    if (!c->uv) goto nomem;
    r = read_words((uint32_t *)(void *)c->uv, tri_count * 6, rd, ctx);
    for (uint64_t i = 0; !r && !bad && i < tri_count * 6; i++)
      if (!isfinite(c->uv[i])) bad = "a texture coordinate is not a finite number";
  }
  if (!r && !bad && s->has_corner) {
    c->corner_rgba = (uint32_t *)vx_malloc(tri_count ? (size_t)tri_count * 12 : 1);
    if (!c->corner_rgba) goto nomem;
    r = read_words(c->corner_rgba, tri_count * 3, rd, ctx);
  }
  if (!r && !bad && s->warnings_len) {
    c->warnings = (char *)vx_malloc((size_t)s->warnings_len + 1);
    if (!c->warnings) goto nomem;
    r = rd(ctx, c->warnings, s->warnings_len);
    if (!r) {
      c->warnings[s->warnings_len] = 0;
      for (uint32_t i = 0; i < s->warnings_len && !bad; i++) {
        unsigned char ch = (unsigned char)c->warnings[i];
        if (ch != '\n' && (ch < 0x20 || ch >= 0x7f)) bad = "the warnings are not plain text";
      }
    }
  }
  if (r) {
    *rd_code = r;
    st = vx_error_set(err, VX_ERR_FORMAT, "the colour record ended early");
  } else if (bad) {
    st = vx_error_set(err, VX_ERR_FORMAT, "the colour record makes no sense: %s", bad);
  }
  if (st != VX_OK) {
    vx_soup_color_free(c);
    return st;
  }
  *out = c;
  return VX_OK;
nomem:
  vx_soup_color_free(c);
  return vx_error_set(err, VX_ERR_NOMEM, "out of memory for the colours");
}
