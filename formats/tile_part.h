/* SPDX-License-Identifier: Apache-2.0 */
/* tile_part.h - a tile built apart from its tiled file (a task on another process or machine):
 * the fixed-size record that goes back to the merging process with the tile's .svo file. It
 * names the build (id, grid, tile size, band, transform), the tile's cell, what the tile holds
 * and the length and check of its file, and carries the root's fit the top tree needs. Records
 * come over the network: vx_tile_part_decode checks every byte (its own check32, the ranges,
 * finite values) before anything uses them. */
#ifndef VOXLOD_FORMATS_TILE_PART_H
#define VOXLOD_FORMATS_TILE_PART_H

#include "formats/svo_tiled.h"

VX_EXTERN_C_BEGIN

#define VX_TILE_PART_BYTES 360u

typedef struct vx_tile_part_rec {
  vx_tiled_header h;   /* the build's */
  uint64_t code;       /* the tile's cell: Morton code at level depth - tile_depth */
  int empty;           /* 1: its triangles only touch its halo: no surface, no file */
  int gpu;             /* 1: built whole on the GPU */
  uint64_t voxels, nodes, corners;
  uint64_t length;     /* of its .svo file */
  uint32_t check;      /* check32 of that file */
  vx_fit_root fit;     /* its root's */
  double sec_build, sec_encode;
  /* a coloured build (h.color): its filter, and the tile root's colour sums when it has some
   * (area, opaque area, rgb: as the top tree's colours are made from them) */
  int dominant, color_has;
  double color_sum[5];
} vx_tile_part_rec;

vx_status vx_tile_part_encode(const vx_tile_part_rec *r, uint8_t out[VX_TILE_PART_BYTES],
                              vx_error *err);
vx_status vx_tile_part_decode(const uint8_t in[VX_TILE_PART_BYTES], vx_tile_part_rec *r,
                              vx_error *err);

/* Sets the record's own check (the last 4 bytes) from its other bytes. */
vx_status vx_tile_part_seal(uint8_t rec[VX_TILE_PART_BYTES], vx_error *err);

/* The length and check32 of the file at path (a regular file). */
vx_status vx_svo_file_check(const char *path, uint64_t *length, uint32_t *check, vx_error *err);

VX_EXTERN_C_END

#endif
