/* SPDX-License-Identifier: Apache-2.0 */
/* color_tex.h - textures as the colour pass reads them (color.c): a mip pyramid per texture and
 * bilinear samples of one level, in linear light.
 *
 * Level 0 is the texture itself (not copied). Level k + 1 halves each side, rounding up (a side
 * of 1 stays 1), each texel the mean in linear light of the <= 2 x 2 texels of level k it covers
 * (r, g, b decoded from sRGB, averaged, re-encoded; alpha averaged as it is), stored as packed
 * RGBA8 like the texture: the pyramid costs a third of the texture more. For a texture whose alpha
 * matters (a MASK or BLEND material uses it) the averages of r, g, b are weighted by alpha, and
 * so are the bilinear samples of such materials (premultiplied filtering), so that the colour of
 * cut-out texels never bleeds into the visible ones; an opaque material's texture is filtered
 * plainly (its alpha may hold anything). Samples are color_texview.h's.
 */
#ifndef VOXLOD_VOXELIZER_COLOR_TEX_H
#define VOXLOD_VOXELIZER_COLOR_TEX_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include "svo/soup.h"
#include "voxelizer/color_texview.h"

typedef struct ctex {
  ctex_view *v;                     /* px[1..] once ctex_mips has built them */
  uint32_t *owned;                  /* levels 1.. in one block */
  int premul;                       /* levels 1.. averaged with alpha weights */
  atomic_int state;                 /* levels 1..: 0 not built, 1 built, 2 out of memory */
  pthread_mutex_t mu;
} ctex;

/* Texels of levels 1.. of a w x h texture (what ctex_mips allocates, 4 bytes each). */
uint64_t ctex_mip_texels(uint32_t w, uint32_t h);

/* The 256 sRGB codes decoded to linear light. */
void ctex_lut(float lut[256]);

/* Level 0 of src (width, height >= 1, rgba set) in *v (v->host = t) and the sizes of the
 * others, which are built on first use (ctex_mips): a pass whose parts all fit within a texel
 * never builds them. */
void ctex_init(ctex *t, ctex_view *v, const vx_texture *src, int premul);
/* Whether levels 1.. are there, building them on the first call (thread-safe); 0 when out of
 * memory (then only level 0 can be sampled). */
int ctex_mips(ctex *t, const float lut[256]);
void ctex_free(ctex *t);

/* The level a CPU sample may read when `level` is wanted: levels 1.. are built by the first part
 * that needs them; without memory for them, level 0 (CPART_LEVEL of the CPU passes). */
static inline uint32_t ctex_cpu_level(const ctex_view *v, uint32_t level, const float *lut) {
  return level > 0 && !ctex_mips((ctex *)v->host, lut) ? 0 : level;
}

#endif
