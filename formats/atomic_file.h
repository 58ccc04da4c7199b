/* atomic_file.h - write a whole file so that readers see the old bytes or the new, never a part.
 *
 * The bytes go to "<path>.tmp.XXXXXX" beside the target (same directory, hence same file
 * system), created by mkstemp; commit flushes, fsyncs, gives it the mode a plain create would
 * (0666 & ~umask, or the mode of the file it replaces), renames it over the target and fsyncs the
 * directory. Any failure unlinks the temporary, so an existing target is left untouched and no
 * temporary remains. Every write(2) result is checked: a full disk or a file size limit (EFBIG,
 * with SIGXFSZ ignored) fails cleanly with VX_ERR_IO.
 *
 * Signals: a process killed between open and commit leaves its temporary behind; callers that
 * must survive SIGINT/SIGTERM block them around the write (tools/voxlod.c does).
 * Thread-compatible; commit reads the process umask (umask(2) twice), which is not thread-safe
 * against concurrent umask changes.
 */
#ifndef VOXLOD_FORMATS_ATOMIC_FILE_H
#define VOXLOD_FORMATS_ATOMIC_FILE_H

#include <stddef.h>
#include "svo/svo.h"

VX_EXTERN_C_BEGIN

typedef struct vx_atomic_file {
  int fd;         /* -1 when closed */
  char *path;     /* target */
  char *tmp_path; /* temporary beside it */
} vx_atomic_file;

/* Creates the temporary for path. On failure nothing exists and af needs no cleanup. */
vx_status vx_atomic_open(vx_atomic_file *af, const char *path, vx_error *err);

/* Appends n bytes. On failure the caller must still call vx_atomic_abort(). */
vx_status vx_atomic_write(vx_atomic_file *af, const void *data, size_t n, vx_error *err);

/* fsync, close, rename over the target. On failure the temporary is removed. af is closed
 * either way. */
vx_status vx_atomic_commit(vx_atomic_file *af, vx_error *err);

/* Closes and removes the temporary (no-op on a closed af). */
void vx_atomic_abort(vx_atomic_file *af);

/* open + write + commit of one buffer. */
vx_status vx_atomic_write_file(const char *path, const void *data, size_t n, vx_error *err);

VX_EXTERN_C_END

#endif
