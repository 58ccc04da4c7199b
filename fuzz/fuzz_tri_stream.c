/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_tri_stream.c - libFuzzer target: arbitrary bytes as a binary STL or PLY through the
 * streaming triangle reader (formats/tri_stream.h), read to the end in pieces of a size the
 * first byte picks. A reader that accepts the bytes must never give more triangles than its
 * faces allow, and must stop. The same bytes as a file, read whole (vx_soup_import_stream) and
 * piece by piece (vx_tri_pieces, the reading of a mesh split by tile): the same outcome, and
 * when both read it the same triangles, bounds and counts. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "formats/tri_stream.h"

/* The file read whole and piece by piece must agree. */
static void pieces_agree(const uint8_t *data, size_t size) {
  char path[] = "/tmp/fuzz-tri-stream-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return;
  const int wrote = write(fd, data, size) == (ssize_t)size;
  close(fd);
  if (!wrote) {
    unlink(path);
    return;
  }
  vx_soup whole;
  vx_error e;
  const vx_status a = vx_soup_import_stream(path, &whole, &e);
  vx_tri_pieces *p = NULL;
  uint64_t faces = 0, at = 0;
  vx_status b = vx_tri_pieces_open(path, &p, &faces, &e);
  vx_soup tally;
  memset(&tally, 0, sizeof tally);
  for (int i = 0; i < 3; i++) tally.bbox_min[i] = 1.0 / 0.0, tally.bbox_max[i] = -1.0 / 0.0;
  for (uint64_t n = 1; b == VX_OK && n;) {
    const float *tri = NULL;
    b = vx_tri_pieces_next(p, &tally, &tri, &n, &e);
    if (b != VX_OK || !n) break;
    if (a == VX_OK && (at + n > whole.tri_count ||
                       memcmp(whole.pos + 9 * at, tri, (size_t)n * 36) != 0))
      abort(); /* other triangles than the whole read's */
    at += n;
  }
  vx_tri_pieces_close(p);
  if (b == VX_OK && tally.tri_count == 0) b = VX_ERR_EMPTY; /* as the whole read says it */
  if ((a == VX_OK) != (b == VX_OK)) abort();
  if (a == VX_OK &&
      (at != whole.tri_count || tally.tri_count != whole.tri_count ||
       tally.skipped_degenerate != whole.skipped_degenerate ||
       tally.skipped_nonfinite != whole.skipped_nonfinite ||
       tally.skipped_nontriangle != whole.skipped_nontriangle ||
       memcmp(tally.bbox_min, whole.bbox_min, sizeof tally.bbox_min) != 0 ||
       memcmp(tally.bbox_max, whole.bbox_max, sizeof tally.bbox_max) != 0))
    abort();
  if (a == VX_OK) vx_soup_free(&whole);
  unlink(path);
}

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
  if (size > 1) pieces_agree(data + 1, size - 1);
  return 0;
}
