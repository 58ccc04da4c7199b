/* png.c - 8-bit RGB to PNG: stb_image_write encodes into memory (stbi_write_png_to_func), then
 * the bytes go to disk through the atomic writer, so a failed write leaves no partial image.
 * The only file that includes stb_image_write.
 */
#include "formats/png.h"
#include "formats/atomic_file.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif
#define STBI_WRITE_NO_STDIO
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb_image_write.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

typedef struct png_buf {
  unsigned char *data;
  size_t size, cap;
  int failed;
} png_buf;

static void png_sink(void *ctx, void *data, int size) {
  png_buf *b = (png_buf *)ctx;
  if (b->failed || size <= 0) return;
  if (b->size + (size_t)size > b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 65536;
    while (cap < b->size + (size_t)size) cap *= 2;
    unsigned char *g = (unsigned char *)vx_realloc(b->data, cap);
    if (!g) {
      b->failed = 1;
      return;
    }
    b->data = g;
    b->cap = cap;
  }
  memcpy(b->data + b->size, data, (size_t)size);
  b->size += (size_t)size;
}

vx_status vx_png_write(const char *path, const uint8_t *rgb, uint32_t width, uint32_t height,
                       vx_error *err) {
  if (!path || !rgb || width == 0 || height == 0)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "PNG of %ux%u pixels: nothing to write", width,
                        height);
  if (width > (uint32_t)(INT_MAX / 3) || (uint64_t)width * height * 3 > (uint64_t)INT_MAX / 2)
    return vx_error_set(err, VX_ERR_LIMIT, "PNG of %ux%u pixels is too large", width, height);
  png_buf b;
  memset(&b, 0, sizeof b);
  int ok = stbi_write_png_to_func(png_sink, &b, (int)width, (int)height, 3, rgb, (int)width * 3);
  if (!ok || b.failed) {
    vx_free(b.data);
    return vx_error_set(err, VX_ERR_NOMEM, "cannot encode a %ux%u PNG (out of memory)", width,
                        height);
  }
  vx_status s = vx_atomic_write_file(path, b.data, b.size, err);
  vx_free(b.data);
  return s;
}
