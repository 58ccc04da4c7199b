/* SPDX-License-Identifier: Apache-2.0 */
/* resigned.h - the voxels that the thin-feature rule re-signed, found from the corner values.
 *
 * The voxelizer computes each grid point's distance once and stores it in every surface voxel
 * that has that corner, except that a voxel whose 8 corners are all outside (a part thinner than
 * a voxel, an open sheet) is re-signed in itself: each corner keeps its magnitude and takes the
 * sign of its side of the plane of the nearest triangle (voxelizer/field.c). So a re-signed
 * voxel stores less than a neighbour does at a corner they share (-|d| against +|d|), and an
 * ordinary voxel never does: values at a corner are all equal, or the larger is the distance
 * field's own. A negative corner of a re-signed voxel lies outside, so a voxel storing a
 * negative value there was re-signed too (the closure): that reaches a thin part whose voxels
 * share their negative corners only with each other, from one that borders an ordinary voxel.
 * Not found: re-signed voxels with no ordinary voxel anywhere around them (an open sheet lying
 * in one layer of voxels, far from anything else). On the 871k-triangle dragon at 512^3, 534 of
 * the 536 the converter re-signed are found (532 without the closure), all 44 of spot's at
 * 256^3, and nothing else.
 * The sampler uses the set wherever a voxel gives a point its value or sign (sampler/sample_eval.h):
 * a re-signed voxel's corners were all outside before the rule, so such a point lies outside.
 */
#ifndef VOXLOD_SVO_RESIGNED_H
#define VOXLOD_SVO_RESIGNED_H

#include "svo/svo.h"

VX_EXTERN_C_BEGIN

/* A bit per voxel of t (bit i & 31 of word i >> 5), set where the voxel was re-signed, into
 * *bits (vx_malloc'ed, vx_free it). *bits is NULL when t has no voxels loaded or is pruned
 * throughout. Runs on `threads` threads (0: all cores); the result does not depend on it. */
vx_status vx_octree_resigned(const vx_octree *t, int threads, uint32_t **bits, vx_error *err);

VX_EXTERN_C_END

#endif
