/* SPDX-License-Identifier: Apache-2.0 */
/* color_record.h - a soup's colour (svo/soup.h vx_soup_color) as bytes, for the isolated import:
 * the child writes it after the triangles, the parent reads it back. Explicit little-endian fields.
 *
 *   summary (VX_COLOR_SUMMARY_BYTES, inside the import's fixed record): present u32,
 *     material_count u32, texture_count u32, has_uv u32, has_corner u32, warnings_len u32,
 *     texels u64 (the sum of width * height over the textures)
 *   stream: materials (16 bytes each: factor u32, texture i32, alpha_mode u32, cutoff f32),
 *     texture sizes (width u32, height u32 each), their texels (u32 each), material per triangle
 *     (u32), uv (f32 x 6 per triangle, if has_uv), corner colours (u32 x 3, if has_corner), the
 *     warnings (warnings_len bytes, no NUL).
 *
 * The reader checks every count, size and index against the limits below and the memory the
 * caller allows before it allocates anything: the writer had just parsed a hostile file. Internal
 * to formats/. */
#ifndef VOXLOD_FORMATS_COLOR_RECORD_H
#define VOXLOD_FORMATS_COLOR_RECORD_H

#include <stddef.h>
#include <stdint.h>
#include "svo/soup.h"

VX_EXTERN_C_BEGIN

#define VX_COLOR_SUMMARY_BYTES 32u
#define VX_COLOR_MAX_MATERIALS 65536u  /* distinct materials of one soup */
#define VX_COLOR_MAX_TEXTURES 65536u
#define VX_COLOR_MAX_WARNINGS 65536u   /* bytes of warning text */

typedef struct vx_color_summary {
  uint32_t present, material_count, texture_count, has_uv, has_corner, warnings_len;
  uint64_t texels;
} vx_color_summary;

/* The summary of c (NULL: no colour) into rec. */
void vx_color_summary_put(const vx_soup_color *c, uint8_t rec[VX_COLOR_SUMMARY_BYTES]);

/* Reads and checks a summary (counts within the limits, a coloured soup has at least one
 * material, an uncoloured one nothing else). VX_ERR_FORMAT when it makes no sense. */
vx_status vx_color_summary_get(const uint8_t rec[VX_COLOR_SUMMARY_BYTES], vx_color_summary *s,
                               vx_error *err);

/* Bytes the colour of tri_count triangles takes in memory, as the summary describes it. */
double vx_color_summary_bytes(const vx_color_summary *s, uint64_t tri_count);

/* Where the bytes go and come from: 0 when all n moved; else a code the caller gives meaning
 * to (the isolated import: 1 time-out, 2 end of pipe). */
typedef int (*vx_color_write_fn)(void *ctx, const void *p, size_t n);
typedef int (*vx_color_read_fn)(void *ctx, void *p, size_t n);

/* Writes the stream of c for tri_count triangles; returns wr's first non-zero code, else 0. */
int vx_soup_color_write(const vx_soup_color *c, uint64_t tri_count, vx_color_write_fn wr,
                        void *ctx);

/* Reads the stream a summary announces (s->present) for tri_count triangles into a new
 * vx_soup_color. mem_avail (0: no bound) bounds what it allocates. *rd_code gets rd's non-zero
 * code when reading stopped (then VX_ERR_FORMAT with a message, out NULL); VX_ERR_FORMAT too for
 * an index or value out of range, VX_ERR_LIMIT past mem_avail, VX_ERR_NOMEM. */
vx_status vx_soup_color_read(const vx_color_summary *s, uint64_t tri_count, uint64_t mem_avail,
                             vx_color_read_fn rd, void *ctx, vx_soup_color **out, int *rd_code,
                             vx_error *err);

VX_EXTERN_C_END

#endif
