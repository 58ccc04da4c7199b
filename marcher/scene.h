/* SPDX-License-Identifier: Apache-2.0 */
/* scene.h - host-side set-up of a vx_trace_scene (trace.h) from a tree and render options.
 *
 * Both renderers (CPU and CUDA) call vx_render_check() then vx_trace_scene_init(); the CUDA
 * renderer then swaps the node, voxel and colour pointers for device copies of the same bytes.
 */
#ifndef VOXLOD_MARCHER_SCENE_H
#define VOXLOD_MARCHER_SCENE_H

#include "marcher/marcher.h"
#include "marcher/trace_tiled.h"

VX_EXTERN_C_BEGIN

/* Checks a tree and options before a render: image size in [1, 32768] per side, lod in
 * [VX_LOD_AUTO, depth], a finite camera whose eye differs from its target and whose up is not
 * parallel to the view, fov in (0, 180), nodes present. A lod deeper than the loaded levels is not
 * an error: the render stops at the last loaded level. */
vx_status vx_render_check(const vx_octree *t, const vx_march_opts *o, vx_error *err);

/* Fills s for tree t and options o (which must have passed vx_render_check): the world camera in
 * grid space (world = xf.origin + grid * xf.scale), pixel rays through pixel centres, the LOD cut,
 * a headlight from above-left of the eye. The node, voxel and colour pointers are t's host
 * arrays (colour NULL for a grey tree; holes set whenever there is colour).
 * Returns VX_ERR_INVALID_ARG (and leaves s unusable) when o does not pass vx_render_check. */
vx_status vx_trace_scene_init(vx_trace_scene *s, const vx_octree *t, const vx_march_opts *o);

/* The scene of a tiled tree (trace_tiled.h): top is its top tree as a tree of depth D (K + 1
 * levels of nodes, the whole grid's transform and band), its tiles of depth tile_depth (K = D -
 * tile_depth <= VX_TILED_MAX_GRID_BITS); o's lod in [VX_LOD_AUTO, D]. The tile and cell tables are
 * left NULL for the caller (host or device copies). VX_ERR_INVALID_ARG as vx_render_check. */
vx_status vx_tiled_scene_init(vx_tiled_scene *ts, const vx_octree *top, uint32_t tile_depth,
                              const vx_march_opts *o, vx_error *err);

VX_EXTERN_C_END

#endif
