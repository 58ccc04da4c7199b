/* SPDX-License-Identifier: Apache-2.0 */
/* tri_stream.h - the triangles of a binary STL or binary PLY file read in one streaming pass,
 * without loading the file or a scene: for meshes too large for assimp, which holds the whole
 * file and its scene at once (a 10^8-triangle PLY: 5 GB of file and as much again of scene).
 *
 * Binary STL: 84 + 50 n bytes (the rule assimp uses to tell it from ascii), no "COLOR=" in its
 * header (Materialise colours are assimp's to read). Binary PLY (either byte order, header lines
 * ended by LF or CR LF, as the PLY format defines them): a "vertex" element with x, y, z (float or
 * double; also nx ny nz, quality, confidence: ignored) before a "face" element whose list
 * vertex_indices (or vertex_index) holds 3 indices (fewer: a point or line, dropped and counted
 * as assimp does; more: a polygon, which assimp triangulates its own way, so the file is left to
 * it), with flags or quality beside it; other elements only after the faces. Anything else
 * (colours, texture coordinates, materials, other elements or properties) is VX_ERR_FORMAT:
 * the caller reads such a file through assimp, which knows what they mean.
 *
 * The vertices are held (12 bytes each), the faces read in pieces of the caller's size. Runs of
 * vertices and of triangles of the common layouts that lie whole in the read buffer are decoded
 * on every core (the same floats as one at a time). Every
 * count, index and length from the file is checked before use: a face index past the vertices,
 * a list count above 2^20, a file that ends early are VX_ERR_CORRUPT; nothing is allocated from
 * a count before the file's size shows it can hold it.
 */
#ifndef VOXLOD_FORMATS_TRI_STREAM_H
#define VOXLOD_FORMATS_TRI_STREAM_H

#include <stdint.h>
#include <stdio.h>
#include "svo/soup.h"

VX_EXTERN_C_BEGIN

typedef struct vx_tri_stream vx_tri_stream;

/* Opens f (size bytes, positioned at its start; borrowed: the caller closes it after
 * vx_tri_stream_close). what: the file's name in messages, kept (not copied) until the close.
 * *faces: the faces the file declares (its triangles for STL). */
vx_status vx_tri_stream_open(FILE *f, uint64_t size, const char *what, vx_tri_stream **out,
                             uint64_t *faces, vx_error *err);

/* Up to max triangles (9 floats each, file coordinates) into tri; *got 0 at the end. */
vx_status vx_tri_stream_read(vx_tri_stream *s, float *tri, uint64_t max, uint64_t *got,
                             vx_error *err);

/* Faces of fewer than 3 vertices read so far (points and lines: no triangle). */
uint64_t vx_tri_stream_dropped(const vx_tri_stream *s);

void vx_tri_stream_close(vx_tri_stream *s);

/* The whole file as a soup (vx_soup_append's filter; one mesh, no colour), bit for bit the
 * triangles assimp gives for the same file. VX_ERR_FORMAT as above, VX_ERR_EMPTY without a
 * triangle left. */
vx_status vx_soup_import_stream(const char *path, vx_soup *out, vx_error *err);

/* The same within limits, for a caller that reads in its own process (this parser checks every
 * byte, and the fuzzer runs it): with mem_limit, VX_ERR_LIMIT before the triangles are allocated
 * when the process's resident bytes and 36 bytes a declared face exceed it; with timeout_s,
 * VX_ERR_FORMAT once a piece ends past it. *taken (may be NULL): 1 when the file is one this pass
 * reads (its result, good or bad, is final), 0 when it is left to assimp (VX_ERR_FORMAT). */
vx_status vx_soup_import_stream_limited(const char *path, uint64_t mem_limit, double timeout_s,
                                        vx_soup *out, int *taken, vx_error *err);

/* The usable triangles of a file this pass reads (vx_soup_import_stream's, in order), a piece
 * at a time, without holding them: for a caller that reads the file more than once (a mesh split
 * by tile). Open: VX_ERR_FORMAT when the file is left to assimp. Next: *tri and *n the piece
 * (valid until the next call; *n 0 at the end); tally (bbox set to +-infinity, counts to 0 by the
 * caller) accumulates the kept triangles' count and bounds and what was dropped. */
typedef struct vx_tri_pieces vx_tri_pieces;
vx_status vx_tri_pieces_open(const char *path, vx_tri_pieces **out, uint64_t *faces,
                             vx_error *err);
vx_status vx_tri_pieces_next(vx_tri_pieces *p, vx_soup *tally, const float **tri, uint64_t *n,
                             vx_error *err);
void vx_tri_pieces_close(vx_tri_pieces *p);

VX_EXTERN_C_END

#endif
