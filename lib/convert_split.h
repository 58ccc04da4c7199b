/* SPDX-License-Identifier: Apache-2.0 */
/* convert_split.h - a mesh file converted to a tiled tree without holding the mesh: split by tile
 * in streaming passes (convert_split.c explains how, and why the bytes are vx_convert_tiled's). */
#ifndef VOXLOD_LIB_CONVERT_SPLIT_H
#define VOXLOD_LIB_CONVERT_SPLIT_H

#include "lib/internal.h"

/* 1 when a conversion with the checked options o can be split by tile: a tiled tree with the
 * pseudo-normal rule (the winding number's sign needs the whole mesh at every corner). */
int vx_split_applies(const vx_convert_opts *o);

/* The binary STL or PLY at mesh_path to a tiled .svo at out_path (checked options o; parts and
 * spills in tmp_dir): VX_ERR_FORMAT, within the first pass, when the streaming reader leaves the
 * file to assimp (the caller then loads it; later a changed file is VX_ERR_IO). info (may be
 * NULL) receives the mesh's figures as vx_mesh_get_info would give them; statistics and notes
 * into b. */
vx_status vx_convert_split(const char *mesh_path, const vx_convert_opts *o, const char *out_path,
                           const char *tmp_dir, vx_mesh_info *info, vx_conversion *b,
                           vx_error *err);

/* Tests: the split's record buffer holds `records` (0: what the memory limit gives, an eighth
 * of it up to 512 MiB), so that small meshes take the paths of large ones (full buffers, ranges of
 * triangles whose records alone exceed it). */
void vx_split_test_buffer(uint64_t records);

#endif
