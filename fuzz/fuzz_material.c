/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_material.c - libFuzzer target: arbitrary bytes as the colour record the import child sends
 * its parent (formats/color_record.h): a summary (the first VX_COLOR_SUMMARY_BYTES), a triangle
 * count (next 2 bytes), then the stream (materials, textures, per-triangle attributes, warnings).
 * What the parser accepts must be within range: every triangle's material in the table, every
 * material's texture there or -1, finite UVs, plain-text warnings; and written back it must give
 * the same bytes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "formats/color_record.h"

typedef struct src {
  const uint8_t *p;
  size_t n, at;
} src;

static int rd(void *ctx, void *p, size_t n) {
  src *s = (src *)ctx;
  if (n > s->n - s->at) return 2;
  memcpy(p, s->p + s->at, n);
  s->at += n;
  return 0;
}

static int cmp(void *ctx, const void *p, size_t n) {
  src *s = (src *)ctx;
  if (n > s->n - s->at || memcmp(p, s->p + s->at, n) != 0) abort(); /* not what was read */
  s->at += n;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < VX_COLOR_SUMMARY_BYTES + 2) return 0;
  vx_color_summary sum;
  vx_error e;
  if (vx_color_summary_get(data, &sum, &e) != VX_OK) return 0;
  uint64_t tris = (uint64_t)data[VX_COLOR_SUMMARY_BYTES] | (uint64_t)data[VX_COLOR_SUMMARY_BYTES + 1] << 8;
  src s = {data + VX_COLOR_SUMMARY_BYTES + 2, size - VX_COLOR_SUMMARY_BYTES - 2, 0};
  vx_soup_color *c = NULL;
  int code = 0;
  vx_status st = vx_soup_color_read(&sum, tris, (uint64_t)64 << 20, rd, &s, &c, &code, &e);
  if (st != VX_OK) {
    if (c) abort();
    return 0;
  }
  if (!sum.present) {
    if (c) abort();
    return 0;
  }
  if (!c || c->material_count != sum.material_count || c->texture_count != sum.texture_count)
    abort();
  for (uint64_t t = 0; t < tris; t++)
    if (c->material[t] >= c->material_count) abort();
  for (uint32_t i = 0; i < c->material_count; i++)
    if (c->materials[i].texture < -1 || c->materials[i].texture >= (int32_t)c->texture_count)
      abort();
  for (uint64_t i = 0; c->uv && i < tris * 6; i++)
    if (!isfinite(c->uv[i])) abort();
  if (c->warnings && strlen(c->warnings) != sum.warnings_len) abort();
  uint8_t again[VX_COLOR_SUMMARY_BYTES];
  vx_color_summary_put(c, again);
  if (memcmp(again, data, VX_COLOR_SUMMARY_BYTES) != 0) abort();
  src back = {data + VX_COLOR_SUMMARY_BYTES + 2, s.at, 0};
  if (vx_soup_color_write(c, tris, cmp, &back) != 0 || back.at != s.at) abort();
  vx_soup_color_free(c);
  return 0;
}
