/* SPDX-License-Identifier: Apache-2.0 */
/* tiled_cut.h - one level of a tiled tree as a cut, read tile by tile (lib/tiled_cut.c). */
#ifndef VOXLOD_LIB_TILED_CUT_H
#define VOXLOD_LIB_TILED_CUT_H

#include "lib/internal.h"
#include "formats/grid_cut.h"

/* The cut at `level` (0 .. depth) of the tiled file f (any depth): what vx_cut_build gives on
 * the joined tree, one tile decoded at a time. mem_limit 0: the handle's read limit. */
vx_status vx_tiled_cut(vx_tiled_file *f, uint32_t level, uint64_t mem_limit,
                       vx_progress_fn progress, void *user, vx_cut *out, vx_error *err);

#endif
