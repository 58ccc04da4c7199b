/* SPDX-License-Identifier: Apache-2.0 */
/* voxlod/files.h - output files: every file the library writes goes through these rules.
 *
 * - A new path, or a regular file: written to "<name>.voxlod-tmp-XXXXXX" beside it, flushed,
 *   fsynced and renamed over it, so readers see the old file or the complete new one; on failure
 *   or cancellation the temporary is removed and an existing file is untouched. Only SIGKILL or a
 *   crash can leave such a temporary; it is safe to delete.
 * - A symbolic link: followed; its final target is replaced in its own directory, the link stays.
 * - A character device or FIFO (/dev/null, /dev/stdout, a named pipe), or "-" for standard output:
 *   written directly, for pipelines.
 * - A directory, a block device, a socket: refused. So is an output that is the same file (through
 *   any links) as an input: one named to vx_check_output, or one a live tree or mesh was read from.
 */
#ifndef VOXLOD_FILES_H
#define VOXLOD_FILES_H

#include "voxlod/base.h"

VX_EXTERN_C_BEGIN

/* Checks, before any work, that path can be written by the rules above and is none of the n
 * input paths: its directory exists and is writable, it is not a refused kind of file. */
VX_API vx_status vx_check_output(const char *path, const char *const *inputs, size_t n,
                                 vx_error *err);

/* Writes n bytes to path by the rules above. */
VX_API vx_status vx_write_file(const char *path, const void *data, size_t n, vx_error *err);

/* Writes an 8-bit RGB image (row-major, top row first) as PNG by the rules above. */
VX_API vx_status vx_write_png(const char *path, const uint8_t *rgb, uint32_t width,
                              uint32_t height, vx_error *err);

/* Removes the temporaries of writes in progress. Async-signal-safe: call it from a handler of a
 * fatal signal before the process dies (the command line does, for SIGINT, SIGTERM and SIGHUP). */
VX_API void vx_remove_temporaries(void);

VX_EXTERN_C_END

#endif
