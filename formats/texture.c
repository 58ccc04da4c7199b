/* SPDX-License-Identifier: Apache-2.0 */
/* texture.c - texture files found, read and decoded for the colour import (texture.h).
 * The only file that includes stb_image.
 *
 * JPEG goes to libjpeg-turbo (texture_jpeg.c); stb_image decodes PNG, TGA and BMP (the other
 * formats it knows, its JPEG decoder among them, are left out: textures come in these, and each
 * decoder is more code a hostile file can reach). Its allocations go through the library's
 * allocator, and it checks them: a failure is a decode error. Before it decodes, stbi_info reads
 * the size from the header, and an image that would not fit (texel count, memory left) is refused
 * without allocating anything.
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* DT_* and strcasecmp */
#include "formats/texture.h"
#include "sys/system.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#endif
#define STBI_NO_STDIO
#define STBI_NO_LINEAR
#define STBI_NO_HDR
#define STBI_ONLY_PNG
#define STBI_ONLY_TGA
#define STBI_ONLY_BMP
#define STBI_MAX_DIMENSIONS (1 << 20)
#define STBI_MALLOC(sz) vx_malloc(sz)
#define STBI_REALLOC(p, newsz) vx_realloc(p, newsz)
#define STBI_FREE(p) vx_free(p)
#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#include <stb_image.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
/* the declarations of the decoders left out are reported at the end of the file */
#pragma GCC diagnostic ignored "-Wunused-function"
#endif

/* a PNG's 4-byte big-endian fields (chunk lengths, the IHDR size) */
static uint32_t be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int is_png(const uint8_t *b, size_t n) {
  return n >= 8 && memcmp(b, "\x89PNG\r\n\x1a\n", 8) == 0;
}

/* stb_image 2.27 gathers a PNG's IDAT chunks in a buffer it doubles until the length a chunk
 * claims fits, before it reads the chunk: a file of a few bytes claiming a 2 GiB chunk asks for
 * 2 GiB (found by fuzz/fuzz_texture.c). 0 when a chunk claims more bytes than the file has left
 * (such a file is cut or damaged anyway); a PNG's buffers then stay within the file's size. */
static int png_chunks_ok(const uint8_t *b, size_t n) {
  if (!is_png(b, n)) return 1;
  for (size_t p = 8; p + 8 <= n;) {
    const uint32_t len = be32(b + p);
    if (len > n - p - 8) return 0; /* its data past the end (its CRC may be cut) */
    if (memcmp(b + p + 4, "IEND", 4) == 0) break;
    p += 12 + (size_t)len;
  }
  return 1;
}

vx_status vx_texture_check_size(uint64_t w, uint64_t h, size_t size, uint64_t mem_avail,
                                vx_error *err) {
  uint64_t texels = w * h; /* each side below 2^32 */
  if (texels > VX_TEXTURE_MAX_TEXELS)
    return vx_error_set(err, VX_ERR_LIMIT,
                        "its header claims %llux%llu texels, more than the %llu a texture may have",
                        (unsigned long long)w, (unsigned long long)h,
                        (unsigned long long)VX_TEXTURE_MAX_TEXELS);
  /* stb_image holds the file's samples, its own rows and the 4-channel copy at once: 3x; so
   * does libjpeg-turbo at most (a progressive file's coefficients, 2 bytes a sample of up to 4
   * channels, and the 4-channel output) */
  uint64_t need = texels * 4 * 3 + size;
  if (mem_avail && need > mem_avail)
    return vx_error_set(err, VX_ERR_LIMIT,
                        "%llux%llu texels need %.1f MiB to decode, more than the %.1f MiB of "
                        "memory left", (unsigned long long)w, (unsigned long long)h,
                        (double)need / 1048576.0, (double)mem_avail / 1048576.0);
  return VX_OK;
}

vx_status vx_texture_decode(const void *data, size_t size, uint64_t mem_avail, vx_texture *out,
                            int *has_alpha, vx_error *err) {
  memset(out, 0, sizeof *out);
  if (has_alpha) *has_alpha = 0;
  if (!data || size == 0) return vx_error_set(err, VX_ERR_FORMAT, "empty file");
  if (size > (size_t)0x7fffffff) return vx_error_set(err, VX_ERR_LIMIT, "file over 2 GiB");
  const stbi_uc *b = (const stbi_uc *)data;
  /* JPEG: SOI (0xFF 0xD8), which may follow fill bytes (0xFF, as before any marker); libjpeg
   * wants the file to start with SOI itself, so it is given the file from the last fill byte.
   * PNG, TGA and BMP cannot start so. */
  size_t lead = 0;
  while (lead < size && b[lead] == 0xff) lead++;
  if (lead > 0 && lead < size && b[lead] == 0xd8)
    return vx_texture_decode_jpeg(b + lead - 1, size - lead + 1, mem_avail, out, err);
  int w = 0, h = 0, comp = 0;
  if (!stbi_info_from_memory(b, (int)size, &w, &h, &comp) || w <= 0 || h <= 0) {
    /* stb_image refuses a PNG over 2^30 decoded bytes already; say what its header claims */
    if (size >= 24 && is_png(b, size) && memcmp(b + 12, "IHDR", 4) == 0 &&
        vx_texture_check_size(be32(b + 16), be32(b + 20), size, 0, err) != VX_OK)
      return VX_ERR_LIMIT;
    return vx_error_set(err, VX_ERR_FORMAT, "not an image voxlod reads (PNG, JPEG, TGA, BMP)");
  }
  vx_status st = vx_texture_check_size((uint64_t)w, (uint64_t)h, size, mem_avail, err);
  if (st != VX_OK) return st;
  const uint64_t texels = (uint64_t)w * (uint64_t)h;
  if (!png_chunks_ok(b, size))
    return vx_error_set(err, VX_ERR_FORMAT, "damaged image (a PNG chunk longer than the file)");
  int dw = 0, dh = 0, dc = 0;
  stbi_uc *px = stbi_load_from_memory(b, (int)size, &dw, &dh, &dc, 4);
  if (!px) {
    const char *why = stbi_failure_reason();
    return vx_error_set(err, VX_ERR_FORMAT, "damaged image (%s)", why ? why : "decode failed");
  }
  if (dw != w || dh != h) { /* the header read twice must agree */
    stbi_image_free(px);
    return vx_error_set(err, VX_ERR_FORMAT, "damaged image (its size is not what it says)");
  }
  /* packed RGBA8 is r | g << 8 | b << 16 | a << 24: the bytes r, g, b, a on a little-endian host */
  uint32_t *rgba = (uint32_t *)vx_malloc((size_t)texels * 4);
  if (!rgba) {
    stbi_image_free(px);
    return vx_error_set(err, VX_ERR_NOMEM, "%dx%d texels: out of memory", w, h);
  }
  int alpha = 0;
  for (uint64_t i = 0; i < texels; i++) {
    const stbi_uc *p = px + 4 * i;
    rgba[i] = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    alpha |= p[3] != 255;
  }
  stbi_image_free(px);
  out->width = (uint32_t)w;
  out->height = (uint32_t)h;
  out->rgba = rgba;
  if (has_alpha) *has_alpha = alpha && (comp == 2 || comp == 4);
  return VX_OK;
}

vx_status vx_texture_read_file(const char *path, uint64_t max_bytes, uint8_t **data, size_t *size,
                               vx_error *err) {
  *data = NULL;
  *size = 0;
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return vx_error_set(err, VX_ERR_IO, "cannot open it: %s", strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return vx_error_set(err, VX_ERR_IO, "cannot open it: %s", strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return vx_error_set(err, VX_ERR_IO, "not a regular file (%s)",
                        S_ISDIR(st.st_mode) ? "a directory" : S_ISFIFO(st.st_mode) ? "a FIFO"
                        : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device" : "a special file");
  }
  if (st.st_size <= 0) {
    close(fd);
    return vx_error_set(err, VX_ERR_FORMAT, "empty file");
  }
  if ((uint64_t)st.st_size > max_bytes) {
    close(fd);
    return vx_error_set(err, VX_ERR_LIMIT, "%.1f MiB, more than the %.1f MiB a texture file may have",
                        (double)st.st_size / 1048576.0, (double)max_bytes / 1048576.0);
  }
  size_t n = (size_t)st.st_size;
  uint8_t *buf = (uint8_t *)vx_malloc(n);
  if (!buf) {
    close(fd);
    return vx_error_set(err, VX_ERR_NOMEM, "out of memory reading it");
  }
  size_t got = 0;
  while (got < n) { /* a regular file: O_NONBLOCK has no effect on its reads */
    ssize_t r = read(fd, buf + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  close(fd);
  if (got == 0) {
    vx_free(buf);
    return vx_error_set(err, VX_ERR_IO, "cannot read it");
  }
  *data = buf;
  *size = got; /* a file that shrank meanwhile: what was there */
  return VX_OK;
}

/* ---- finding the file ------------------------------------------------------------------------- */

static int exists(const char *p) {
  struct stat st;
  return lstat(p, &st) == 0;
}

/* base/comp exactly, else the one entry of base equal to comp without regard to case. */
static int join_component(char *path, size_t cap, size_t len, const char *comp, size_t cl) {
  if (len + 1 + cl + 1 > cap) return -1;
  size_t at = len;
  if (len > 0 && path[len - 1] != '/') path[at++] = '/';
  memcpy(path + at, comp, cl);
  path[at + cl] = 0;
  if (exists(path)) return (int)(at + cl);
  if (cl == 1 && comp[0] == '.') return -1;
  path[len] = 0;
  DIR *d = opendir(len ? path : ".");
  if (!d) return -1;
  int found = -1;
  unsigned scanned = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL && scanned++ < 100000) {
    if (strlen(e->d_name) == cl && strncasecmp(e->d_name, comp, cl) == 0) {
      if (at > len) path[len] = '/';
      memcpy(path + at, e->d_name, cl);
      path[at + cl] = 0;
      found = (int)(at + cl);
      break;
    }
  }
  closedir(d);
  if (found < 0) path[len] = 0;
  return found;
}

/* rel (components split on '/') below base, each component exactly or in another case. */
static int walk(const char *base, const char *rel, char *out, size_t cap) {
  size_t len = strlen(base);
  if (len + 1 > cap) return 0;
  memcpy(out, base, len + 1);
  if (rel[0] == '/') { /* absolute */
    out[0] = '/';
    out[1] = 0;
    len = 1;
  }
  int comps = 0;
  for (const char *p = rel; *p;) {
    while (*p == '/') p++;
    if (!*p) break;
    const char *q = p;
    while (*q && *q != '/') q++;
    if (++comps > 32) return 0;
    int r = join_component(out, cap, len, p, (size_t)(q - p));
    if (r < 0) return 0;
    len = (size_t)r;
    p = q;
  }
  return comps > 0;
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

int vx_texture_resolve(const char *dir, const char *ref, char *out, size_t cap) {
  if (!ref || !*ref || cap < 2) return 0;
  size_t n = strlen(ref);
  if (n > 4096) return 0;
  char *a = (char *)vx_malloc(n + 1), *b = (char *)vx_malloc(n + 1);
  int ok = 0;
  if (a && b) {
    const char *r = ref;
    if (strncasecmp(r, "file://", 7) == 0) r += 7;
    size_t k = 0;
    for (; *r; r++) a[k++] = *r == '\\' ? '/' : *r;
    a[k] = 0;
    size_t j = 0; /* URL escapes decoded (a %00 ends the name) */
    for (size_t i = 0; i < k; i++) {
      int h1, h2;
      if (a[i] == '%' && i + 2 < k && (h1 = hexval(a[i + 1])) >= 0 &&
          (h2 = hexval(a[i + 2])) >= 0) {
        b[j++] = (char)(h1 * 16 + h2);
        i += 2;
      } else {
        b[j++] = a[i];
      }
    }
    b[j] = 0;
    const char *base = dir && *dir ? dir : ".";
    const char *cand[2] = {a, strcmp(a, b) ? b : NULL};
    for (int c = 0; c < 2 && !ok; c++)
      if (cand[c] && cand[c][0]) ok = walk(base, cand[c], out, cap);
    /* a path from another machine ("C:/art/maps/wood.png"): its tails below the mesh's folder,
     * longest first, down to the bare file name */
    for (int c = 0; c < 2 && !ok; c++) {
      if (!cand[c]) continue;
      int tails = 0;
      for (const char *p = cand[c]; *p && !ok && tails < 16; p++)
        if (*p == '/' && p[1] && p[1] != '/') {
          tails++;
          ok = walk(base, p + 1, out, cap);
        }
    }
  }
  vx_free(a);
  vx_free(b);
  return ok;
}

void vx_texture_display_name(const char *name, size_t max, char *out, size_t cap) {
  if (!cap) return;
  if (!name) name = "";
  size_t n = strlen(name), start = 0, k = 0;
  if (max < 8) max = 8;
  if (n > max) {
    start = n - (max - 3);
    if (cap > 3) {
      memcpy(out, "...", 3);
      k = 3;
    }
  }
  for (size_t i = start; i < n && k + 1 < cap; i++) {
    unsigned char c = (unsigned char)name[i];
    out[k++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
  }
  out[k] = 0;
}

uint64_t vx_memory_headroom(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return 0;
  uint64_t used = vx_virtual_bytes();
  uint64_t lim = (uint64_t)rl.rlim_cur;
  return used + 1 < lim ? lim - used : 1;
}
