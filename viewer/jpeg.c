/* SPDX-License-Identifier: Apache-2.0 */
/* jpeg.c - libturbojpeg behind jpeg.h. Chroma is subsampled 4:2:0 (what video does: a third of
 * the bytes of 4:4:4 and half the encode time at 1080p), except at quality 95 and above, where
 * the user asked for detail. The JPEG is written straight into the caller's buffer (sized by
 * tjBufSize, TJFLAG_NOREALLOC), so the stream sends it without a copy. No flag that changes the
 * tables (TJFLAG_PROGRESSIVE, Huffman optimisation) is set: every strip of a frame then carries
 * the same tables, which is what lets jpeg_join.c splice strips into one image. */
#include "viewer/jpeg.h"

#include <stdio.h>
#include <stdlib.h>
#include <turbojpeg.h>

struct vw_jpeg {
  tjhandle tj;
};

vw_jpeg *vw_jpeg_new(void) {
  vw_jpeg *j = (vw_jpeg *)calloc(1, sizeof *j);
  if (!j) return NULL;
  j->tj = tjInitCompress();
  if (!j->tj) {
    free(j);
    return NULL;
  }
  return j;
}

void vw_jpeg_free(vw_jpeg *j) {
  if (!j) return;
  tjDestroy(j->tj);
  free(j);
}

static int subsampling(int quality) { return quality >= 95 ? TJSAMP_444 : TJSAMP_420; }

void vw_jpeg_mcu(int quality, uint32_t *width, uint32_t *height) {
  int s = subsampling(quality);
  *width = (uint32_t)tjMCUWidth[s];
  *height = (uint32_t)tjMCUHeight[s];
}

size_t vw_jpeg_bound(uint32_t width, uint32_t height) {
  if (width == 0 || height == 0 || width > 65535 || height > 65535) return 0;
  unsigned long a = tjBufSize((int)width, (int)height, TJSAMP_444);
  unsigned long b = tjBufSize((int)width, (int)height, TJSAMP_420);
  if (a == (unsigned long)-1 || b == (unsigned long)-1) return 0;
  return (size_t)(a > b ? a : b);
}

size_t vw_jpeg_encode(vw_jpeg *j, const uint8_t *rgb, uint32_t width, uint32_t height,
                      int quality, uint8_t *dst, size_t cap, char *why, size_t why_n) {
  size_t need = vw_jpeg_bound(width, height);
  if (!j || !rgb || !dst || need == 0 || cap < need || quality < 1 || quality > 100) {
    snprintf(why, why_n, "JPEG of %ux%u pixels at quality %d: bad arguments", width, height,
             quality);
    return 0;
  }
  unsigned char *out = dst;
  unsigned long size = (unsigned long)cap;
  if (tjCompress2(j->tj, rgb, (int)width, 0, (int)height, TJPF_RGB, &out, &size,
                  subsampling(quality), quality, TJFLAG_NOREALLOC) != 0) {
    snprintf(why, why_n, "JPEG encoding failed: %s", tjGetErrorStr2(j->tj));
    return 0;
  }
  return (size_t)size;
}
