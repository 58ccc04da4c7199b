/* SPDX-License-Identifier: Apache-2.0 */
/* files.c - the public output rules (include/voxlod/files.h) over sys/atomic_file.h, the
 * PNG writer, and the library's version. */
#include "lib/internal.h"
#include "formats/png.h"

const char *vx_version(void) { return VOXLOD_VERSION_STRING; }

vx_status vx_check_output(const char *path, const char *const *inputs, size_t n, vx_error *err) {
  if (n && !inputs) return vx_error_set(err, VX_ERR_INVALID_ARG, "no input list");
  return vx_output_check(path, inputs, n, NULL, err);
}

vx_status vx_write_file(const char *path, const void *data, size_t n, vx_error *err) {
  if (!data && n) return vx_error_set(err, VX_ERR_INVALID_ARG, "no data to write");
  return vx_atomic_write_file(path, data ? data : "", n, err);
}

vx_status vx_write_png(const char *path, const uint8_t *rgb, uint32_t width, uint32_t height,
                       vx_error *err) {
  return vx_png_write(path, rgb, width, height, err);
}

void vx_remove_temporaries(void) { vx_atomic_remove_temporaries(); }
