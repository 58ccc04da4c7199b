/* SPDX-License-Identifier: Apache-2.0 */
/* texture.h - texture images for the colour import: where a material's texture file is, reading
 * it without blocking or swallowing a device, and decoding it (libjpeg-turbo: JPEG; stb_image:
 * PNG, TGA, BMP) under a size and a memory bound checked before the decoder allocates. Internal
 * to formats/. */
#ifndef VOXLOD_FORMATS_TEXTURE_H
#define VOXLOD_FORMATS_TEXTURE_H

#include <stddef.h>
#include <stdint.h>
#include "svo/soup.h"

VX_EXTERN_C_BEGIN

#define VX_TEXTURE_MAX_TEXELS (UINT64_C(1) << 28)    /* one texture: 16384 x 16384 */
#define VX_TEXTURE_MAX_FILE ((uint64_t)256 << 20)    /* bytes of one texture file */

/* Decodes an image from memory into out (rows top first, packed RGBA8: svo/color.h). The size in
 * its header is checked before decoding: more than VX_TEXTURE_MAX_TEXELS, or a decode that would
 * need more than mem_avail bytes (0: no bound), is VX_ERR_LIMIT; not an image or a damaged one is
 * VX_ERR_FORMAT. *has_alpha (may be NULL): the image has an alpha channel with a texel below 255.
 * The message names no file (the caller adds it). */
vx_status vx_texture_decode(const void *data, size_t size, uint64_t mem_avail, vx_texture *out,
                            int *has_alpha, vx_error *err);

/* The two halves of vx_texture_decode. vx_texture_check_size: the bounds on an image of w x h
 * texels from a file of size bytes (VX_ERR_LIMIT with its message, else VX_OK).
 * vx_texture_decode_jpeg (texture_jpeg.c): a JPEG, data starting with its SOI marker (0xFF 0xD8),
 * checked and decoded as vx_texture_decode says; always opaque. */
vx_status vx_texture_check_size(uint64_t w, uint64_t h, size_t size, uint64_t mem_avail,
                                vx_error *err);
vx_status vx_texture_decode_jpeg(const uint8_t *data, size_t size, uint64_t mem_avail,
                                 vx_texture *out, vx_error *err);

/* Reads a whole texture file, opened without blocking (O_NONBLOCK): only a regular file of at most
 * max_bytes is read (a directory, FIFO, device or socket is VX_ERR_IO). *data is vx_malloc'd. */
vx_status vx_texture_read_file(const char *path, uint64_t max_bytes, uint8_t **data, size_t *size,
                               vx_error *err);

/* Finds the file a material names: ref as the file writes it ('\\' or '/' separators, URL escapes
 * such as %20, a file:// prefix), relative to dir (the mesh file's folder; NULL: the current one)
 * or absolute; each path component matched exactly, else without regard to case; last, the path's
 * tails below dir (a path from another machine, "C:\\art\\maps\\a.png": "maps/a.png", then
 * "a.png"). Writes the path found (which exists, of whatever type) to out; returns 1, or 0
 * when none exists. */
int vx_texture_resolve(const char *dir, const char *ref, char *out, size_t cap);

/* A name from a file made fit for a message: bytes outside printable ASCII become '?', and a name
 * longer than max characters keeps its end behind "...". */
void vx_texture_display_name(const char *name, size_t max, char *out, size_t cap);

/* Bytes this process may still allocate: its address-space limit (RLIMIT_AS, which the isolated
 * import sets) less its address space now; 0 when there is no limit. */
uint64_t vx_memory_headroom(void);

VX_EXTERN_C_END

#endif
