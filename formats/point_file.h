/* SPDX-License-Identifier: Apache-2.0 */
/* point_file.h - points in, values out: the files of `voxlod sample`.
 *
 * Points (read; the format is told by the bytes, not the name):
 *   .npy  numpy's format (versions 1 to 3): float32 or float64 of either byte order, shape
 *         (N, 3), C or Fortran order, nothing after the data.
 *   text  one point per line: three or more numbers (strtod's syntax, so nan and inf too)
 *         separated by spaces, tabs, commas or semicolons, the first three the point's x y z;
 *         every line with the same count (.xyz files with normals, CSV with more columns). Blank
 *         lines and lines starting with '#' are skipped; anything else is refused with its line.
 * Values (written by files.h's rules: whole or not at all): n rows of 1 to 16 columns, float32 or
 *   uint8; .npy when the path ends so (shape (N,) for one column, else (N, C)), else text (one
 *   row per line, columns separated by a space, floats with 9 significant digits: they read back
 *   to the same float32).
 */
#ifndef VOXLOD_FORMATS_POINT_FILE_H
#define VOXLOD_FORMATS_POINT_FILE_H

#include <stddef.h>
#include <stdint.h>
#include "sys/error.h"

VX_EXTERN_C_BEGIN

/* Parses a point file held in memory (size bytes at data; data[size] need not exist), through
 * the same code as vx_point_file_read. At most
 * max_points points (else VX_ERR_LIMIT). *xyz (3 * *n floats, vx_malloc'ed, NULL when *n is 0)
 * is the caller's. Errors name the line (text) or the header field (.npy). */
vx_status vx_point_file_parse(const uint8_t *data, size_t size, uint64_t max_points, float **xyz,
                              uint64_t *n, vx_error *err);

/* Reads path ("-": standard input; a regular file, FIFO or character device), at most max_bytes,
 * in pieces through one buffer (1 MiB; a text line or an .npy header may not be longer): only
 * the points are held. An .npy whose shape needs more bytes than the file has (or than max_bytes
 * allows, from a pipe) is refused before its points are allocated. */
vx_status vx_point_file_read(const char *path, uint64_t max_bytes, uint64_t max_points,
                             float **xyz, uint64_t *n, vx_error *err);

/* Writes n rows of `columns` values: f32 (float32) or u8 (uint8), exactly one of them given. */
vx_status vx_value_file_write(const char *path, const float *f32, const uint8_t *u8, uint64_t n,
                              uint32_t columns, vx_error *err);

VX_EXTERN_C_END

#endif
