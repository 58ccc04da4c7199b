/* SPDX-License-Identifier: Apache-2.0 */
/* png.h - 8-bit RGB images to PNG through stb_image_write: into memory, or written atomically. */
#ifndef VOXLOD_FORMATS_PNG_H
#define VOXLOD_FORMATS_PNG_H

#include <stdint.h>
#include "svo/svo.h"

VX_EXTERN_C_BEGIN

/* Encodes into a buffer from vx_malloc (*data, *size bytes; release it with vx_free). */
vx_status vx_png_encode(const uint8_t *rgb, uint32_t width, uint32_t height, uint8_t **data,
                        size_t *size, vx_error *err);

vx_status vx_png_write(const char *path, const uint8_t *rgb, uint32_t width, uint32_t height,
                       vx_error *err);

VX_EXTERN_C_END

#endif
