/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_point_file.c - libFuzzer target: the point files of `voxlod sample` (formats/point_file.h),
 * arbitrary bytes as .npy or text, at most a point limit taken from the input's length. Points
 * that are read must then go out as a three-column .npy and come back with the same bits. Seeds:
 * tests/corpus/point_file (.npy of both types, orders and byte orders; text with comments, CSV,
 * extra columns). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "formats/point_file.h"
#include "sys/alloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  float *xyz = NULL;
  uint64_t n = 0;
  vx_error e;
  const uint64_t max = 1 + size % 4096;
  if (vx_point_file_parse(data, size, max, &xyz, &n, &e) != VX_OK) {
    if (xyz || n) __builtin_trap(); /* a refusal leaves nothing */
    return 0;
  }
  if (n > max || (n && !xyz)) __builtin_trap();
  if (n && (size & 3) == 0) { /* a quarter of them through a file and back */
    char path[64];
    snprintf(path, sizeof path, "/tmp/fuzz-points-%d.npy", (int)getpid());
    float *back = NULL;
    uint64_t m = 0;
    if (vx_value_file_write(path, xyz, NULL, n, 3, &e) != VX_OK ||
        vx_point_file_read(path, 1u << 24, max, &back, &m, &e) != VX_OK || m != n ||
        memcmp(back, xyz, (size_t)n * 12) != 0)
      __builtin_trap();
    vx_free(back);
    unlink(path);
  }
  vx_free(xyz);
  return 0;
}
