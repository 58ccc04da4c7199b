/* SPDX-License-Identifier: Apache-2.0 */
/* error.h - status codes and the one-line messages of fallible functions: every layer reports
 * failures through vx_error_set, and never prints.
 */
#ifndef VOXLOD_SYS_ERROR_H
#define VOXLOD_SYS_ERROR_H

#include "voxlod/base.h"

VX_EXTERN_C_BEGIN

/* vx_status, vx_error and vx_progress_fn are the public ones (include/voxlod/base.h). */

/* Sets err (if non-NULL) to status s with a printf-style message followed by the library source
 * file and line of the call, " (formats/svo_read.c:412)"; returns s. A macro, so that the location
 * is the caller's, never a helper's. */
vx_status vx_error_set_at(const char *file, int line, vx_error *err, vx_status s, const char *fmt,
                          ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;
#define vx_error_set(err, s, ...) vx_error_set_at(__FILE__, __LINE__, (err), (s), __VA_ARGS__)

/* Copies text into dst (cap bytes, always NUL-terminated, cut before a character that does not
 * fit) with every control character (C0, DEL, C1) and every byte that is not part of valid UTF-8
 * written as \xNN, so that names from files cannot steer a terminal or fake a line of output
 * (ESC becomes the four characters \x1b). Applying it twice gives the same text. Every library
 * message goes through it (vx_error_set, vx_error_prefix, notes). Returns dst. */
char *vx_text_escape(char *dst, size_t cap, const char *src);

/* Prefixes err's message with "<prefix>: " (when it does not start with prefix already), keeping
 * the location at its end. */
void vx_error_prefix(vx_error *err, const char *prefix);

VX_EXTERN_C_END

#endif
