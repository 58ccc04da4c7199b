/* SPDX-License-Identifier: Apache-2.0 */
/* encoder.h - a frame to JPEG on several threads: the frame is cut into horizontal strips of
 * whole MCU rows, the strips are encoded at once (libturbojpeg, jpeg.h) by the calling thread and
 * a small pool of encoder threads shared by every tab, and spliced into one baseline JPEG with
 * restart markers (jpeg_join.h). The page gets one ordinary JPEG, which decodes to the pixels a
 * single-pass encode gives (jpeg_join.h says why).
 *
 * The pool's threads are started once, with the server, and each holds its own libturbojpeg
 * encoder. A caller (a tab's writer) queues its frame's strips, encodes strips of its own frame
 * itself until none is left to take, then waits for those the pool took; so with T threads in
 * all, T - 1 are started here, and T = 1 encodes every frame in one piece on the caller, as
 * before strips. Frames of several tabs share the pool, oldest first.
 *
 * A frame is cut into about VW_STRIPS_PER_THREAD strips per thread, not one, and each thread takes
 * the next strip when it is free: a strip across the object costs several times one of
 * background, and a pool thread woken from a long sleep may start late (an idle virtual CPU can
 * take a millisecond to be scheduled again), so fixed shares would make the frame wait for the
 * slowest. A strip costs about 5 µs of setup and 2 bytes (its restart marker), so strips are at
 * least VW_STRIP_MIN_PIXELS (about 0.1 ms of encoding): frames under twice that (small previews)
 * are encoded in one piece. Measured on a 16-core host, 1080p on 8 threads: 65536-pixel strips
 * or 2 per thread were 5-20% slower, 16384-pixel strips no faster.
 */
#ifndef VOXLOD_VIEWER_ENCODER_H
#define VOXLOD_VIEWER_ENCODER_H

#include <stddef.h>
#include <stdint.h>

#include "viewer/jpeg.h"

#define VW_ENCODE_THREADS_MAX 64        /* --encode-threads */
#define VW_ENCODE_THREADS_DEFAULT_MAX 8 /* --encode-threads 0: min(this, cores) */
#define VW_STRIP_MIN_PIXELS 32768       /* smallest strip worth a thread */
#define VW_STRIPS_PER_THREAD 4          /* strips per thread, taken as threads come free */

typedef struct vw_encoder vw_encoder;

/* A growable byte buffer. */
typedef struct vw_buf {
  uint8_t *p;
  size_t cap;
} vw_buf;

/* Makes b hold at least n bytes (its contents kept); 0, or -1 out of memory. */
int vw_buf_reserve(vw_buf *b, size_t n);

/* The thread count --encode-threads 0 stands for: min(VW_ENCODE_THREADS_DEFAULT_MAX, cores). */
unsigned vw_encoder_default_threads(void);

/* An encoder for `threads` threads in all (1 .. VW_ENCODE_THREADS_MAX; 0: the default): starts
 * threads - 1 of them. NULL when memory or a thread cannot be had. */
vw_encoder *vw_encoder_new(unsigned threads);
/* Stops and joins the pool's threads; no call may be in progress. */
void vw_encoder_free(vw_encoder *e);
unsigned vw_encoder_threads(const vw_encoder *e);

/* Frames encoded in one piece because their strips could not be joined (which should never
 * happen; jpeg_join.c checks rather than trusts), with the last reason in why. */
unsigned long vw_encoder_fallbacks(vw_encoder *e, char *why, size_t why_n);

/* Encodes 8-bit RGB (row-major, top row first) at quality 1..100 into out->p + at, growing out
 * as needed. own: the caller's encoder, for the strips it takes itself. Returns the JPEG's length
 * (*strips: the strips it was made of), or 0 on failure with the reason in why. Thread safe: any
 * number of callers, each with its own `own` and `out`. */
size_t vw_encode_jpeg(vw_encoder *e, vw_jpeg *own, const uint8_t *rgb, uint32_t width,
                      uint32_t height, int quality, vw_buf *out, size_t at, unsigned *strips,
                      char *why, size_t why_n);

/* The strips vw_encode_jpeg cuts a width x height frame into on `threads` threads (*strip_h:
 * their height, the last one's at most that); 1 for a frame encoded in one piece. */
unsigned vw_encode_plan(uint32_t width, uint32_t height, int quality, unsigned threads,
                        uint32_t *strip_h);

#endif
