/* SPDX-License-Identifier: Apache-2.0 */
/* quality.h - image error of one tree against another (`voxlod compare`, `stats --error`). */
#ifndef VOXLOD_TOOLS_QUALITY_H
#define VOXLOD_TOOLS_QUALITY_H

#include "tools/cli.h"

typedef struct vx_quality {
  double psnr_db;           /* RGB PSNR over all pixels (INFINITY when identical) */
  double depth_bad_frac;    /* pixels whose depth differs by > one finest voxel of the reference,
                               or that one image hits and the other misses */
  double hit_mismatch_frac; /* pixels that one image hits and the other misses */
  uint64_t pixels;
  uint64_t full_bytes, pruned_bytes; /* filled by the callers that know them */
} vx_quality;

/* Renders a and b from `views` orbit views framed on a (the view args' size, cut, shading and
 * device; each tree at its own finest level unless --lod is given) and compares the images. */
vx_status vx_cli_quality(const vx_tree *a, const vx_tree *b, const vx_view_args *va, int views,
                         vx_quality *q, vx_error *err);

#endif
