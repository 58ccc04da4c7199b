/* SPDX-License-Identifier: Apache-2.0 */
/* mesh_precheck.h - the element counts a mesh file's header declares, checked against the bytes
 * the file holds, before an importer sizes its arrays from them.
 *
 * assimp allocates (and often zero-fills) what a header claims before it reads the data: a
 * 200-byte PLY header declaring 4e8 vertices costs gigabytes. Each count is multiplied by the
 * fewest bytes one element can take in the file, so this test never refuses a file that is only
 * a few trailing bytes short:
 * - PLY, ascii: 2 bytes per property (one character and a separator), the last separator may be
 *   missing; binary: the sum of the scalar property sizes, a list property its count field;
 * - binary STL: 84 + 50 bytes per triangle; fewer bytes than the count claims is refused, more is
 *   left to assimp (which reads a file of any other size as ascii or refuses it);
 * - OFF: 2 bytes per coordinate per vertex line and 2 per face line.
 * Elements without properties take no bytes, so their count may not pass the file's size. The
 * data of a PLY in the bytes looked at is then read as assimp reads it (precheck_ply.c): each
 * list count against the bytes that can hold its values (binary: count * value size; ascii: 2c
 * bytes less one on its line), and in ascii the quirks of assimp's line reader that make it read
 * a count from other bytes than the line's (a line buffer reused without clearing, the last line
 * re-read when the data ends early) are refused. assimp reserves a list's count before it reads
 * the values.
 */
#ifndef VOXLOD_FORMATS_MESH_PRECHECK_H
#define VOXLOD_FORMATS_MESH_PRECHECK_H

#include <stddef.h>
#include <stdint.h>
#include "svo/svo.h"

VX_EXTERN_C_BEGIN

/* Bytes of a file the checks look at: a header must end within them. */
#define VX_MESH_PRECHECK_HEAD 65536u

/* head: the first n bytes of the data (only the first VX_MESH_PRECHECK_HEAD are looked at), size:
 * the data's whole size, ext: the file's extension or the importer's format hint ("stl", any case;
 * NULL: none), what: how a message names the data ("'bunny.ply'", "the mesh data").
 * VX_ERR_CORRUPT when a count claims more than the data can hold; VX_OK otherwise, also for data
 * in other formats and for headers it cannot parse (the importer reports those). */
vx_status vx_mesh_precheck(const unsigned char *head, size_t n, uint64_t size, const char *ext,
                           const char *what, vx_error *err);

/* The same for a file, its extension taken from its name; reads at most its first
 * VX_MESH_PRECHECK_HEAD bytes. VX_OK when the file cannot be read: the import says why. */
vx_status vx_mesh_precheck_file(const char *path, vx_error *err);

/* The extension of path's last component ("ply" for "a/b.PLY": as written), or NULL. */
const char *vx_mesh_path_ext(const char *path);

/* Whether assimp 5.2 would misplace the start of the data of the binary PLY whose first bytes are
 * p[0, n): its header's last line ends in CR LF, or its data starts with a line feed. */
int vx_ply_misread(const unsigned char *p, size_t n);
/* The whole file p[0, size) rewritten so that assimp reads it right (*out, vx_malloc'd; NULL when
 * it needs no rewrite): the header's last line ended by LF alone; where the data starts with a
 * line feed, the first vertex traded with the first that does not, and their indices in the
 * vertex_indices lists (precheck_ply.c). VX_ERR_FORMAT when that cannot be done. */
vx_status vx_ply_rewrite(const unsigned char *p, size_t size, const char *what,
                         unsigned char **out, size_t *out_size, vx_error *err);

VX_EXTERN_C_END

#endif
