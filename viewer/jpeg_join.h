/* SPDX-License-Identifier: Apache-2.0 */
/* jpeg_join.h - strips of one frame, each encoded as its own baseline JPEG, spliced into one
 * baseline JPEG with restart markers. Pure byte work over the caller's memory (no libjpeg), so
 * that it is tested on its own (viewer/jpeg_test.c).
 *
 * Why the result is the frame: a baseline JPEG codes each 8x8 block on its own except for the DC
 * coefficient, which is coded as the difference from the previous block's (per component). A
 * restart marker (RSTn) resets that prediction to zero, which is exactly how every strip's JPEG
 * starts. A strip whose height is a multiple of the MCU height holds whole MCU rows, so its
 * blocks, colour conversion and chroma subsampling are those of the same rows in a single-pass
 * encode: the coefficients are identical, and a decoder turns the joined file into the very
 * pixels it would make of a single-pass encode. What the join needs:
 *   - the same tables in every strip (quantisation: same quality and subsampling; Huffman:
 *     libjpeg's standard tables, no optimisation): checked, every header byte but the height;
 *   - every strip but the last of the same height, a multiple of the MCU height, so that each
 *     holds the same number of MCUs: the restart interval (DRI), at most 65535;
 *   - each strip's entropy-coded data padded to a whole byte with 1 bits, which libjpeg does at
 *     the end of an image as it does before a restart marker.
 * The joined file: the first strip's header with the frame's height in its SOF and a DRI segment
 * before its SOS, then the strips' entropy-coded data separated by RST0..RST7 (cycling), then EOI.
 */
#ifndef VOXLOD_VIEWER_JPEG_JOIN_H
#define VOXLOD_VIEWER_JPEG_JOIN_H

#include <stddef.h>
#include <stdint.h>

/* Bytes the joined file may need beyond the strips' total: the DRI segment. */
#define VW_JPEG_JOIN_EXTRA 6
/* The most strips joined at once. */
#define VW_JPEG_JOIN_MAX 256

/* Joins the n strips (1 .. VW_JPEG_JOIN_MAX, top to bottom) lying in buf at off[k], len[k] bytes
 * each, in increasing order without overlap, into one JPEG written at buf + at, where
 * at + VW_JPEG_JOIN_EXTRA <= off[0]: the join moves bytes towards the front only, so it needs no
 * second buffer. Returns the joined length (at most the strips' total + VW_JPEG_JOIN_EXTRA), or 0
 * with the reason in why when the strips are not JPEGs this can join; buf is then left as it was.
 */
size_t vw_jpeg_join(uint8_t *buf, size_t at, const size_t *off, const size_t *len, unsigned n,
                    char *why, size_t why_n);

#endif
