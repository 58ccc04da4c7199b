/* SPDX-License-Identifier: Apache-2.0 */
/* test_api_image.c - vx_encode_png (include/voxlod/image.h) through the public header: the bytes
 * decode (stb_image) to the same pixels, and bad arguments fail with no buffer left behind. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "voxlod.h"
#include "check.h"

#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wsign-compare"
#endif
#include <stb_image.h>

static void encode_png_round_trips_pixels(void) {
  const uint32_t w = 61, h = 17;
  uint8_t *rgb = (uint8_t *)malloc(w * h * 3);
  for (uint32_t i = 0; i < w * h * 3; i++) rgb[i] = (uint8_t)(i * 13 + i / 7);
  void *png = NULL;
  size_t n = 0;
  vx_error e;
  memset(&e, 0, sizeof e);
  CHECK_MSG(vx_encode_png(rgb, w, h, &png, &n, &e) == VX_OK, "%s", e.msg);
  CHECK(png && n > 8 && memcmp(png, "\x89PNG\r\n\x1a\n", 8) == 0);
  int x = 0, y = 0, c = 0;
  unsigned char *back = png ? stbi_load_from_memory((const unsigned char *)png, (int)n, &x, &y, &c, 3) : NULL;
  CHECK(back && x == (int)w && y == (int)h);
  if (back) CHECK(memcmp(back, rgb, w * h * 3) == 0);
  stbi_image_free(back);
  vx_buffer_free(png);
  free(rgb);
}

static void encode_png_one_pixel(void) {
  const uint8_t px[3] = {10, 200, 30};
  void *png = NULL;
  size_t n = 0;
  CHECK(vx_encode_png(px, 1, 1, &png, &n, NULL) == VX_OK && png && n > 0);
  vx_buffer_free(png);
}

static void encode_png_refuses_bad_arguments(void) {
  uint8_t px[12] = {0};
  void *png = (void *)px; /* must come back NULL */
  size_t n = 7;
  vx_error e;
  CHECK(vx_encode_png(NULL, 2, 2, &png, &n, &e) == VX_ERR_INVALID_ARG && png == NULL && n == 0);
  CHECK(vx_encode_png(px, 0, 2, &png, &n, &e) == VX_ERR_INVALID_ARG && png == NULL);
  CHECK(vx_encode_png(px, 2, 0, &png, &n, &e) == VX_ERR_INVALID_ARG && png == NULL);
  CHECK(vx_encode_png(px, 2, 2, NULL, &n, &e) == VX_ERR_INVALID_ARG);
  CHECK(vx_encode_png(px, 2, 2, &png, NULL, &e) == VX_ERR_INVALID_ARG);
  /* beyond what stb_image_write addresses: refused before any pixel is read */
  CHECK(vx_encode_png(px, 1u << 30, 1u << 30, &png, &n, &e) == VX_ERR_LIMIT && png == NULL);
  CHECK_MSG(strstr(e.msg, "too large") != NULL, "%s", e.msg);
  vx_buffer_free(NULL);
}

int main(void) {
  RUN(encode_png_round_trips_pixels);
  RUN(encode_png_one_pixel);
  RUN(encode_png_refuses_bad_arguments);
  return check_summary();
}
