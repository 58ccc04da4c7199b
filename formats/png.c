/* SPDX-License-Identifier: Apache-2.0 */
/* png.c - 8-bit RGB to PNG: stb_image_write encodes into memory (stbi_write_png_to_func); the
 * bytes are handed to the caller, or go to disk through the atomic writer, so a failed write
 * leaves no partial image.
 * The only file that includes stb_image_write.
 *
 * stb_image_write does not check its allocations. Its memory comes from the library's allocator
 * through wrappers that keep every block in a list: when one fails they jump back out of the
 * encoder (longjmp; stb_image_write is C, it holds nothing but these blocks) and free the list,
 * so an allocation failure is an error, not a crash or a leak.
 */
#include "formats/png.h"
#include "sys/atomic_file.h"

#include <limits.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

/* Every block stb_image_write holds, behind a 32-byte header linking it into the encoder's list
 * (32 keeps the caller's block 16-byte aligned). */
typedef struct png_block {
  struct png_block *prev, *next;
  size_t pad[2];
} png_block;

typedef struct png_arena {
  jmp_buf out;
  png_block head; /* the list's sentinel */
} png_arena;

static _Thread_local png_arena *png_cur;

static void png_link(png_block *b) {
  b->prev = &png_cur->head;
  b->next = png_cur->head.next;
  png_cur->head.next->prev = b;
  png_cur->head.next = b;
}

static void png_unlink(png_block *b) {
  b->prev->next = b->next;
  b->next->prev = b->prev;
}

static void *png_alloc(size_t n) {
  png_block *b = (png_block *)vx_malloc(sizeof(png_block) + n);
  if (!b) longjmp(png_cur->out, 1);
  png_link(b);
  return b + 1;
}

static void png_free(void *p) {
  if (!p) return;
  png_block *b = (png_block *)p - 1;
  png_unlink(b);
  vx_free(b);
}

static void *png_realloc(void *p, size_t n) {
  if (!p) return png_alloc(n);
  png_block *b = (png_block *)p - 1;
  png_unlink(b);
  png_block *g = (png_block *)vx_realloc(b, sizeof(png_block) + n);
  if (!g) {
    png_link(b); /* still ours: freed with the rest */
    longjmp(png_cur->out, 1);
  }
  png_link(g);
  return g + 1;
}

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif
#define STBI_WRITE_NO_STDIO
#define STBIW_MALLOC(sz) png_alloc(sz)
#define STBIW_REALLOC(p, newsz) png_realloc(p, newsz)
#define STBIW_FREE(p) png_free(p)
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

vx_status vx_png_encode(const uint8_t *rgb, uint32_t width, uint32_t height, uint8_t **data,
                        size_t *size, vx_error *err) {
  if (!data || !size) return vx_error_set(err, VX_ERR_INVALID_ARG, "PNG: no place for the bytes");
  *data = NULL;
  *size = 0;
  if (!rgb || width == 0 || height == 0)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "PNG of %ux%u pixels: nothing to write", width,
                        height);
  if (width > (uint32_t)(INT_MAX / 3) || (uint64_t)width * height * 3 > (uint64_t)INT_MAX / 2)
    return vx_error_set(err, VX_ERR_LIMIT, "PNG of %ux%u pixels is too large", width, height);
  png_buf b;
  memset(&b, 0, sizeof b);
  png_arena arena;
  arena.head.prev = arena.head.next = &arena.head;
  png_arena *volatile saved = png_cur;
  png_cur = &arena;
  volatile int ok = 0;
  if (setjmp(arena.out) == 0)
    ok = stbi_write_png_to_func(png_sink, &b, (int)width, (int)height, 3, rgb, (int)width * 3);
  while (arena.head.next != &arena.head) { /* what the encoder held when it failed */
    png_block *k = arena.head.next;
    png_unlink(k);
    vx_free(k);
  }
  png_cur = saved;
  if (!ok || b.failed) {
    vx_free(b.data);
    return vx_error_set(err, VX_ERR_NOMEM, "cannot encode a %ux%u PNG (out of memory)", width,
                        height);
  }
  *data = b.data;
  *size = b.size;
  return VX_OK;
}

vx_status vx_png_write(const char *path, const uint8_t *rgb, uint32_t width, uint32_t height,
                       vx_error *err) {
  if (!path)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "PNG of %ux%u pixels: no path", width, height);
  uint8_t *data;
  size_t size;
  vx_status s = vx_png_encode(rgb, width, height, &data, &size, err);
  if (s != VX_OK) return s;
  s = vx_atomic_write_file(path, data, size, err);
  vx_free(data);
  return s;
}
