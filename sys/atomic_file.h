/* SPDX-License-Identifier: Apache-2.0 */
/* atomic_file.h - every output file of the library: written whole or not at all, and never over
 * something that must not be replaced.
 *
 * Where the bytes go depends on what the path names (vx_output_resolve):
 * - nothing yet, or a regular file: a temporary "<name>.voxlod-tmp-XXXXXX" in the same directory
 *   (same file system), flushed, fsynced, given the mode a plain create would give (0666 &
 *   ~umask, or the replaced file's mode) and renamed over the target, then the directory is
 *   fsynced: readers and crashes see the old file or the complete new one. A symbolic link is
 *   followed: its final target is replaced in the target's own directory and the link stays.
 * - a character device or a FIFO (/dev/null, /dev/stdout, a pipe), or "-" (standard output): the
 *   bytes are written to it directly, without a temporary (such a target cannot be replaced).
 * - a directory, a block device, a socket: refused.
 * An output that is the same file (device and inode, through any links) as an input is refused
 * before any work: inputs are those the caller names and every file a live library object was
 * read from (vx_input_hold).
 *
 * Failure, or vx_atomic_abort, removes the temporary: an existing target is left untouched.
 * Temporaries in progress are listed so that a fatal signal handler can remove them
 * (vx_atomic_remove_temporaries, async-signal-safe); only SIGKILL (or a crash of the machine) can
 * leave "<name>.voxlod-tmp-XXXXXX" behind, which is then safe to delete. Every write(2) result is
 * checked: a full disk or a file size limit (EFBIG, with SIGXFSZ ignored) fails cleanly.
 * Thread-safe; vx_atomic_commit reads the process umask (umask(2) twice), which races only with a
 * concurrent umask change.
 */
#ifndef VOXLOD_FORMATS_ATOMIC_FILE_H
#define VOXLOD_FORMATS_ATOMIC_FILE_H

#include <stddef.h>
#include <stdint.h>
#include "sys/error.h"
#include "sys/alloc.h"

VX_EXTERN_C_BEGIN

typedef struct vx_atomic_file {
  int fd;         /* -1 when closed */
  int direct;     /* 1: writing to a device, FIFO or standard output (no temporary) */
  char *path;     /* the final target (symbolic links resolved) */
  char *tmp_path; /* the temporary beside it, NULL when direct */
  int slot;       /* entry in the table of temporaries in progress, -1 when none */
} vx_atomic_file;

/* Identity of a file (stat(2), links followed). */
typedef struct vx_file_id {
  uint64_t dev, ino;
} vx_file_id;

/* 1 and *id filled when path names an existing file, else 0. */
int vx_file_id_of(const char *path, vx_file_id *id);

/* Files read by live library objects (trees, meshes): outputs may not replace them. Counted:
 * each hold needs one release. */
void vx_input_hold(const vx_file_id *id);
void vx_input_release(const vx_file_id *id);

/* Checks that path can be written as described above, before any work: the directory exists and
 * is writable, the target is not a directory or another refused kind, and it is none of the n
 * input paths (those that exist) nor a held input. VX_ERR_IO or VX_ERR_INVALID_ARG with a
 * message naming the path. When tmp_dir is given it receives the directory the temporary will
 * live in (vx_malloc'ed; the caller vx_frees it), NULL for direct targets. */
vx_status vx_output_check(const char *path, const char *const *inputs, size_t n, char **tmp_dir,
                          vx_error *err);

/* Opens the output (vx_output_check first). On failure nothing exists and af needs no cleanup. */
vx_status vx_atomic_open(vx_atomic_file *af, const char *path, vx_error *err);

/* Appends n bytes. On failure the caller must still call vx_atomic_abort(). */
vx_status vx_atomic_write(vx_atomic_file *af, const void *data, size_t n, vx_error *err);

/* Appends n bytes of the open file fd from offset `at` (name: for messages), in the kernel where
 * the file systems allow (copy_file_range), else through a buffer. fd's own offset is not used. */
vx_status vx_atomic_write_from(vx_atomic_file *af, int fd, uint64_t at, uint64_t n,
                               const char *name, vx_error *err);

/* Completes the file: fsync, close, rename over the target (or just close a direct target). On
 * failure the temporary is removed. af is closed either way. */
vx_status vx_atomic_commit(vx_atomic_file *af, vx_error *err);

/* Closes and removes the temporary (no-op on a closed af). */
void vx_atomic_abort(vx_atomic_file *af);

/* open + write + commit of one buffer. */
vx_status vx_atomic_write_file(const char *path, const void *data, size_t n, vx_error *err);

/* Unlinks every temporary being written now. Async-signal-safe: for a fatal signal's handler. */
void vx_atomic_remove_temporaries(void);

VX_EXTERN_C_END

#endif
