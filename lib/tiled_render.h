/* SPDX-License-Identifier: Apache-2.0 */
/* tiled_render.h - drawing a tiled tree within a memory budget (the renderer of
 * vx_renderer_create_tiled; marcher/trace_tiled.h is the per-ray part).
 *
 * Residency. Every tile keeps a coarse copy: its levels 0..B, B the deepest level at which all
 * tiles' coarse copies fit in a quarter of the budget. Each frame, every tile gets a target level:
 * what its nearest point needs (the finest level, the cut, or with the pixel-cone rule the first
 * level whose cells are smaller than a pixel there), its coarse level when it is outside the view
 * or the cut is above the tiles. Visible tiles are served nearest first: a tile gets the finest
 * copy up to its target that fits in what the budget has left, or stays coarse. Copies no longer
 * wanted are freed before new ones are read, so what is resident never exceeds the budget.
 * Loading: four loader threads, each with a reader of its own on the file (opened again from
 * its path, and checked to be the same file), read the wanted copies nearest first; the frame
 * uploads (GPU) or adopts (CPU) what they finished. With `stream` 0 a frame waits until every copy
 * it wants is resident (an image that does not depend on timing); with `stream` 1 (the viewer) it
 * draws what is resident, the rest from coarse copies, never waiting.
 * Memory is the device's (tiles uploaded as svo/gpu_tree.h residents) or, on the CPU, the host's;
 * reads in flight hold host copies until a frame takes them.
 */
#ifndef VOXLOD_LIB_TILED_RENDER_H
#define VOXLOD_LIB_TILED_RENDER_H

#include "lib/internal.h"
#include "marcher/marcher.h"

typedef struct vx_tiled_render vx_tiled_render;

/* gpu 1: on the current CUDA device (VX_ERR_NO_GPU without one), 0: the CPU renderer with
 * `threads`. budget 0: three quarters of the device's free memory, or half the default memory
 * limit on the CPU. VX_ERR_LIMIT when even the tiles' roots do not fit in the budget. */
vx_status vx_tiled_render_create(vx_tiled_file *f, int gpu, int threads, uint64_t budget,
                                 int stream, vx_tiled_render **out, vx_error *err);
void vx_tiled_render_free(vx_tiled_render *tr);

/* The top tree as a tree of the whole depth D (K + 1 levels of nodes), for cameras and checks. */
const vx_octree *vx_tiled_render_shape(const vx_tiled_render *tr);
const char *vx_tiled_render_device(const vx_tiled_render *tr);

typedef struct vx_tiled_residency {
  uint64_t budget_bytes, resident_bytes;
  uint64_t tiles, tiles_detailed; /* tiles drawn from more than their coarse copy */
  uint32_t coarse_level;          /* the coarse copies' finest level, in the whole tree */
  uint32_t loaded, pending;       /* copies read for the last frame; still wanted and missing */
} vx_tiled_residency;
void vx_tiled_render_residency(const vx_tiled_render *tr, vx_tiled_residency *out);

/* One frame for options m (lod in VX_LOD_AUTO..D): residency, then the image (depth not NULL). */
vx_status vx_tiled_render_frame(vx_tiled_render *tr, const vx_march_opts *m, uint8_t *rgb,
                                float *depth, double *ms_render, double *ms_copy, vx_error *err);

#endif
