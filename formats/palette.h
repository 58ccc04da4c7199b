/* SPDX-License-Identifier: Apache-2.0 */
/* palette.h - at most 255 colours standing for the colours of a set of cells: the palette of a
 * MagicaVoxel .vox file (vox.c).
 *
 * Exact when the cells have 255 distinct colours or fewer (alpha ignored). Otherwise median cut
 * (Heckbert, "Color image quantization for frame buffer display", 1982) in OKLab (Ottosson, 2020:
 * a perceptual space in which Euclidean distance follows perceived difference): starting from one
 * box holding every distinct colour weighted by its cells, the box with the largest extent along
 * an OKLab axis is split at the weighted median of that axis, until there are 255 boxes; each box
 * gives the cell-weighted mean of its colours, in linear light; each colour then takes its
 * nearest palette entry in OKLab. Deterministic. Never prints.
 */
#ifndef VOXLOD_FORMATS_PALETTE_H
#define VOXLOD_FORMATS_PALETTE_H

#include <stdint.h>
#include "svo/svo.h"

VX_EXTERN_C_BEGIN

#define VX_PALETTE_MAX 255u

typedef struct vx_palette {
  uint32_t count;                /* entries, 1 .. 255 */
  uint32_t rgba[VX_PALETTE_MAX]; /* packed RGBA8 (svo/color.h), alpha 255 */
  int exact;                     /* 1: every colour is an entry */
  /* the lookup: the distinct colours (rgb, sorted) and the entry of each */
  uint32_t *colors;
  uint8_t *entry;
  uint64_t distinct;
} vx_palette;

/* The palette of n colours (packed RGBA8; alpha ignored), each standing for one cell. */
vx_status vx_palette_build(const uint32_t *colors, uint64_t n, vx_palette *p, vx_error *err);
/* The palette entry (0 .. count-1) for a colour that was among those given. */
uint32_t vx_palette_index(const vx_palette *p, uint32_t rgba);
void vx_palette_free(vx_palette *p);

/* OKLab of a linear sRGB colour, and back (exposed for the tests' reference). */
void vx_oklab_from_linear(const float rgb[3], float lab[3]);
void vx_oklab_to_linear(const float lab[3], float rgb[3]);

VX_EXTERN_C_END

#endif
