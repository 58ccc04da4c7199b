/* SPDX-License-Identifier: Apache-2.0 */
/* files.c - the public output rules (include/voxlod/files.h) over sys/atomic_file.h, the PNG
 * writer, the point files of include/voxlod/sample.h, and the library's version. */
#include "lib/internal.h"
#include "formats/png.h"
#include "formats/point_file.h"
#include "sys/system.h"

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

/* ---- point files (include/voxlod/sample.h) --------------------------------------------------- */

vx_status vx_points_read(const char *path, uint64_t max_bytes, float **points, uint64_t *n,
                         vx_error *err) {
  if (!path || !points || !n)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "points to read: a path and two outputs");
  return vx_point_file_read(path, max_bytes ? max_bytes : vx_default_mem_limit(), UINT64_MAX / 16,
                            points, n, err);
}

vx_status vx_values_write(const char *path, const float *f32, const uint8_t *u8, uint64_t n,
                          uint32_t columns, vx_error *err) {
  return vx_value_file_write(path, f32, u8, n, columns, err);
}
