/* SPDX-License-Identifier: Apache-2.0 */
/* convert_tiled.h - the tiled conversion (convert_tiled.c), run by vx_convert_to_file when
 * opts->tile_depth is set or the resolution is finer than one tree holds. */
#ifndef VOXLOD_LIB_CONVERT_TILED_H
#define VOXLOD_LIB_CONVERT_TILED_H

#include "lib/internal.h"

/* soup to a tiled .svo at out_path with the checked options o (tile_depth set); spill files in
 * tmp_dir; notes and statistics into b. */
vx_status vx_convert_tiled(const vx_soup *soup, const vx_convert_opts *o, const char *out_path,
                           const char *tmp_dir, vx_conversion *b, vx_error *err);

#endif
