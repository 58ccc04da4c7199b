/* SPDX-License-Identifier: Apache-2.0 */
/* voxlod/image.h - images in memory: the PNG encoder the library writes its images with, for
 * callers that send or store the bytes themselves (a server, an archive).
 *
 * Images are 8-bit RGB, row-major, top row first (what vx_render draws). The bytes returned are
 * the caller's, released with vx_buffer_free. Encoding is reentrant: any number of threads may
 * encode at the same time.
 */
#ifndef VOXLOD_IMAGE_H
#define VOXLOD_IMAGE_H

#include "voxlod/base.h"

VX_EXTERN_C_BEGIN

/* Encodes width x height pixels of rgb as a PNG file's bytes: *data (*size bytes) on success,
 * NULL and 0 on failure. VX_ERR_LIMIT for images beyond what the encoder addresses (about
 * 1 G bytes of pixels). */
VX_API vx_status vx_encode_png(const uint8_t *rgb, uint32_t width, uint32_t height, void **data,
                               size_t *size, vx_error *err);

VX_EXTERN_C_END

#endif
