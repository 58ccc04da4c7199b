/* SPDX-License-Identifier: Apache-2.0 */
/* image.c - the public image encoders (include/voxlod/image.h) over formats/png.h. */
#include "lib/internal.h"
#include "formats/png.h"
#include "voxlod/image.h"

vx_status vx_encode_png(const uint8_t *rgb, uint32_t width, uint32_t height, void **data,
                        size_t *size, vx_error *err) {
  if (!data || !size) return vx_error_set(err, VX_ERR_INVALID_ARG, "no place for the PNG bytes");
  uint8_t *bytes = NULL;
  vx_status s = vx_png_encode(rgb, width, height, &bytes, size, err);
  *data = bytes;
  return s;
}
