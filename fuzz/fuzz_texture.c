/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_texture.c - libFuzzer target: arbitrary bytes as a texture file through the decode path of
 * the colour import (formats/texture.c, texture_jpeg.c: the header read by stb_image or
 * libjpeg-turbo, the size checks against the texel cap and a 64 MiB memory bound, the decode, the
 * RGBA packing). A decoded texture must have the size its header claims, within the bounds.
 * libjpeg-turbo is the system's, not instrumented: the fuzzer sees no coverage inside it, only
 * ASan's checks on the buffers it is given. */
#include <stdint.h>
#include <stdlib.h>
#include "formats/texture.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  vx_texture t;
  vx_error e;
  int alpha = 0;
  const uint64_t mem = (uint64_t)64 << 20;
  if (vx_texture_decode(data, size, mem, &t, &alpha, &e) == VX_OK) {
    uint64_t n = (uint64_t)t.width * t.height;
    if (!t.rgba || n == 0 || n > VX_TEXTURE_MAX_TEXELS || n * 12 > mem) abort();
    uint32_t acc = 0;
    for (uint64_t i = 0; i < n; i++) acc |= ~t.rgba[i] >> 24; /* every texel readable */
    if (alpha && acc == 0) abort(); /* "has alpha" only with a texel below 255 */
    vx_free(t.rgba);
  } else if (t.rgba || t.width || t.height) {
    abort();
  }
  return 0;
}
