/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_tri_stream.c - libFuzzer target: arbitrary bytes as a binary STL or PLY through the
 * streaming triangle reader (formats/tri_stream.h), read to the end in pieces of a size the
 * first byte picks. A reader that accepts the bytes must never give more triangles than its
 * faces allow, and must stop. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "formats/tri_stream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > (1u << 20)) return 0;
  const uint64_t piece = 1u + data[0] % 64u;
  FILE *f = fmemopen((void *)(data + 1), size - 1 ? size - 1 : 1, "rb");
  if (!f) return 0;
  vx_tri_stream *s = NULL;
  uint64_t faces = 0;
  vx_error e;
  if (size > 1 && vx_tri_stream_open(f, size - 1, "the bytes", &s, &faces, &e) == VX_OK) {
    float tri[64 * 9];
    uint64_t total = 0, got = 0;
    while (vx_tri_stream_read(s, tri, piece, &got, &e) == VX_OK && got) {
      total += got;
      if (got > piece || total > faces) abort(); /* one triangle a face at most */
    }
    vx_tri_stream_close(s);
  }
  fclose(f);
  return 0;
}
