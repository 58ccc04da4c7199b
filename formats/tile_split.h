/* SPDX-License-Identifier: Apache-2.0 */
/* tile_split.h - the parts file of a mesh split by tile for tasks on other processes (a Dask
 * cluster): one process reads the mesh file and writes each tile's triangles into it
 * (lib/convert_split.c, vx_tile_split), every task reads only its own tile's part. It lives beside
 * the output on a shared file system, so it is read as input from outside: every byte is checked
 * (the header's own check, the index's check, each part's check, the ranges) before it is used.
 *
 * Layout, little-endian:
 *   0 "VXSPLT1\n"   8 header bytes u32 (256)   12 sign rule u32
 *  16 the build's header fields as the tiled header record holds them (56 bytes: depth, tile
 *     depth, band, prune error, origin, scale, build id; vx_tiled_header_put)
 *  72 triangles u64 (the mesh's usable ones, exact copies included: every record's index is
 *     below)   80 copies u64 (exact duplicates, dropped by the build)   88 records u64
 *  96 runs u64  104 tiles u64  112 largest part u64 (records)  120 index offset u64
 * 128 index check32 u32   132 .. 251 reserved (0)   252 check32 of bytes 0 .. 251
 * 256 the records, 40 bytes each: the triangle's index in the mesh u32, its 9 coordinates f32
 * index offset: the runs, 32 bytes each, by (tile, offset): tile code u64, offset u64, records
 *     u64, check32 of the run's bytes u32, reserved u32 (0); the file ends after them.
 * A tile's part is its runs in order: its triangles in the mesh's order, each once. */
#ifndef VOXLOD_FORMATS_TILE_SPLIT_H
#define VOXLOD_FORMATS_TILE_SPLIT_H

#include "formats/svo_tiled.h"

VX_EXTERN_C_BEGIN

#define VX_SPLIT_HEADER 256u
#define VX_SPLIT_RECORD 40u
#define VX_SPLIT_RUN 32u

typedef struct vx_split_run {
  uint64_t code, at, n; /* the tile, the run's byte offset, its records */
  uint32_t check;       /* check32 of its n * VX_SPLIT_RECORD bytes */
} vx_split_run;

typedef struct vx_split_head {
  vx_tiled_header h;    /* the build's, its id included */
  uint32_t sign_rule;
  uint64_t triangles, copies, records, runs, tiles, max_part;
  uint64_t index_at;
  uint32_t index_check;
} vx_split_head;

void vx_split_head_encode(const vx_split_head *h, uint8_t out[VX_SPLIT_HEADER]);
/* The header of a parts file of file_size bytes (name: for messages): its own check, the
 * build's fields (vx_tiled_header_check), the counts against each other and the file's size. */
vx_status vx_split_head_decode(const uint8_t in[VX_SPLIT_HEADER], uint64_t file_size,
                               const char *name, vx_split_head *h, vx_error *err);

/* The index: h->runs runs out of / into h->runs * VX_SPLIT_RUN bytes. Decoding checks the bytes'
 * check32 against the header's, and each run: inside the records, not empty, its tile in the grid
 * of tiles, in (tile, offset) order; their records summing to the header's, their tiles counting
 * its tiles, no part larger than its largest. */
void vx_split_runs_encode(const vx_split_run *r, uint64_t n, uint8_t *out);
vx_status vx_split_runs_decode(const uint8_t *in, const vx_split_head *h, const char *name,
                               vx_split_run *r, vx_error *err);

/* A record: triangle tri's index and its 9 coordinates into VX_SPLIT_RECORD bytes. */
void vx_split_record_put(uint8_t *out, uint32_t tri, const float *p);

/* One run's records (raw: run->n * VX_SPLIT_RECORD bytes read from run->at) into a part: the
 * triangles' indices into idx and their coordinates into pos (9 floats each). Checks the run's
 * check32, each index below h->triangles and above *last (the previous record's of the part;
 * start with -1), each coordinate finite; the run's check32 too when `verify` (a file from
 * outside; not the process's own nameless file). */
vx_status vx_split_run_decode(const uint8_t *raw, const vx_split_run *run,
                              const vx_split_head *h, const char *name, int verify,
                              int64_t *last, uint32_t *idx, float *pos, vx_error *err);

VX_EXTERN_C_END

#endif
