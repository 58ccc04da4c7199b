/* SPDX-License-Identifier: Apache-2.0 */
/* mesh.h - the triangle soup every importer produces and the voxelizer consumes.
 *
 * Owned by the caller that filled it; vx_soup_free() releases it (no-op on a zeroed mesh).
 * Positions are world coordinates with node transforms applied, 9 floats per triangle.
 */
#ifndef VOXLOD_SVO_SOUP_H
#define VOXLOD_SVO_SOUP_H

#include <stdint.h>
#include "svo/svo.h"

VX_EXTERN_C_BEGIN

typedef struct vx_soup {
  float *pos;         /* tri_count * 9 floats: v0 v1 v2, xyz each */
  uint64_t tri_count; /* triangles kept */
  double bbox_min[3], bbox_max[3];
  /* what the importer dropped, for the user: */
  uint64_t skipped_degenerate; /* zero-area (collapsed) triangles */
  uint64_t skipped_nonfinite;  /* triangles with a NaN/Inf coordinate */
  uint64_t skipped_nontriangle;/* points and lines */
  uint32_t mesh_count;         /* meshes in the scene (instances counted) */
} vx_soup;

void vx_soup_free(vx_soup *m);

/* Appends triangles from flat float positions; drops degenerate and non-finite ones (counted),
 * grows the bbox. Fails only on allocation (VX_ERR_NOMEM) or count overflow (VX_ERR_LIMIT). */
vx_status vx_soup_append(vx_soup *m, const float *pos9, uint64_t tri_count, vx_error *err);

VX_EXTERN_C_END

#endif
