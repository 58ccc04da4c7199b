/* SPDX-License-Identifier: Apache-2.0 */
/* jpeg.h - frames to JPEG for the viewer's stream, through libturbojpeg (the only file that
 * includes it is jpeg.c). One encoder per thread: an encoder is not shared. */
#ifndef VOXLOD_VIEWER_JPEG_H
#define VOXLOD_VIEWER_JPEG_H

#include <stddef.h>
#include <stdint.h>

typedef struct vw_jpeg vw_jpeg;

/* NULL when libturbojpeg cannot make an encoder (out of memory). */
vw_jpeg *vw_jpeg_new(void);
void vw_jpeg_free(vw_jpeg *j);

/* The MCU (minimum coded unit) at that quality: 16x16 pixels for 4:2:0, 8x8 for 4:4:4. Strips
 * of a frame encoded apart (encoder.c) are cut at multiples of its height. */
void vw_jpeg_mcu(int quality, uint32_t *width, uint32_t *height);

/* The most bytes a width x height frame can take (what dst must hold). */
size_t vw_jpeg_bound(uint32_t width, uint32_t height);

/* Encodes 8-bit RGB (row-major, top row first, rows width * 3 bytes apart) at quality 1..100
 * into dst (cap bytes, at least vw_jpeg_bound): a baseline JPEG with libjpeg's standard Huffman
 * tables and no restart markers, so that strips of one frame can be joined (jpeg_join.h).
 * Returns the JPEG's length, or 0 on failure with the reason in why. */
size_t vw_jpeg_encode(vw_jpeg *j, const uint8_t *rgb, uint32_t width, uint32_t height,
                      int quality, uint8_t *dst, size_t cap, char *why, size_t why_n);

#endif
