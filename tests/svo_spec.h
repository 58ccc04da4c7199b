/* SPDX-License-Identifier: Apache-2.0 */
/* svo_spec.h - the colour part of docs/SVO_FORMAT.md written again from the text, sharing no
 * code with formats/: adds colour sections to a grey .svo file's bytes, and gives every cell's
 * coordinates from the child masks. Used by the colour tests (codec and public API) as the
 * reference the library's writer, reader and vx_tree_colors are compared with.
 *
 * Needs check.h and zstd.h included before it. */
#ifndef VOXLOD_TESTS_SVO_SPEC_H
#define VOXLOD_TESTS_SVO_SPEC_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint32_t spec_rd32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t spec_rd64(const uint8_t *p) { return spec_rd32(p) | (uint64_t)spec_rd32(p + 4) << 32; }
static void spec_wr32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void spec_wr64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* One zstd frame (content size, checksum) at `level`, single-threaded. */
static size_t spec_frame(const void *src, size_t n, uint8_t *dst, size_t cap, int level) {
  ZSTD_CCtx *c = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
  ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 1);
  size_t z = ZSTD_compress2(c, dst, cap, src, n);
  ZSTD_freeCCtx(c);
  CHECK(!ZSTD_isError(z));
  return z;
}

/* check32: the low 32 bits of XXH64(bytes, seed 0), read off a zstd frame's content checksum. */
static uint32_t spec_check32(const uint8_t *p, size_t n) {
  size_t cap = ZSTD_compressBound(n);
  uint8_t *tmp = (uint8_t *)malloc(cap);
  size_t z = spec_frame(p, n, tmp, cap, 1);
  uint32_t c = spec_rd32(tmp + z - 4);
  free(tmp);
  return c;
}

/* The coloured file for a grey file `in` (flags 0) and its cells' colours: colors[i] for the
 * i-th cell in file order (level 0's node, level 1's nodes, ..., level D's voxels), packed RGBA8
 * (r low). Colour sections at zstd `level`: each cell's r, g, b, a minus its parent's (mod 256;
 * the parent from the masks of the level above: node k's children are the next popcount(mask)
 * cells), as byte planes r, g, b, a. NULL on a malformed input. */
static uint8_t *spec_colorize(const uint8_t *in, size_t n, const uint32_t *colors, int level,
                              size_t *out_n) {
  if (n < 32 || memcmp(in, "VXLOD\0\r\n", 8) != 0 || spec_rd32(in + 12) != 0) return NULL;
  uint32_t hz = spec_rd32(in + 16), hr = spec_rd32(in + 20);
  uint8_t hdr[48 + 64 * 15];
  if (hr > 48 + 32 * 15 || ZSTD_decompress(hdr, hr, in + 32, hz) != hr) return NULL;
  uint32_t D = spec_rd32(hdr);
  if (hr != 48 + 32 * (D + 1)) return NULL;
  size_t geo = 0, cells = 0;
  for (uint32_t l = 0; l <= D; l++) {
    geo += (size_t)spec_rd64(hdr + 48 + 32 * l + 8);
    cells += (size_t)spec_rd64(hdr + 48 + 32 * l);
  }
  if (32 + hz + geo != n) return NULL;
  size_t cap = 32 + 65536 + geo + (D + 1) * 64 + ZSTD_compressBound(cells * 4);
  uint8_t *out = (uint8_t *)malloc(cap), *sec = (uint8_t *)malloc(cap);
  uint8_t *planes = (uint8_t *)malloc(cells * 4 + 1);
  /* parent[i]: the index (file order) of cell i's parent, from the node sections' masks */
  uint64_t *parent = (uint64_t *)calloc(cells + 1, sizeof(uint64_t));
  size_t used = 0, first = 0, off = 32 + hz, next = 1;
  for (uint32_t l = 0; l < D; l++) {
    uint64_t count = spec_rd64(hdr + 48 + 32 * l), raw = spec_rd64(hdr + 48 + 32 * l + 16);
    uint8_t *nodes = (uint8_t *)malloc((size_t)raw + 1); /* masks first */
    CHECK(ZSTD_decompress(nodes, (size_t)raw, in + off, (size_t)spec_rd64(hdr + 48 + 32 * l + 8)) == raw);
    for (uint64_t k = 0; k < count; k++)
      for (int s = 0; s < 8; s++)
        if ((nodes[k] >> s & 1) && next < cells) parent[next++] = first + k;
    off += (size_t)spec_rd64(hdr + 48 + 32 * l + 8);
    first += (size_t)count;
    free(nodes);
  }
  first = 0;
  for (uint32_t l = 0; l <= D; l++) {
    uint64_t count = spec_rd64(hdr + 48 + 32 * l);
    for (uint64_t i = 0; i < count; i++) {
      uint32_t c = colors[first + i], p = l ? colors[parent[first + i]] : 0;
      for (int b = 0; b < 4; b++) planes[b * count + i] = (uint8_t)((c >> (8 * b)) - (p >> (8 * b)));
    }
    size_t z = spec_frame(planes, (size_t)count * 4, sec + used, cap - used, level);
    uint8_t *e = hdr + 48 + 32 * (D + 1) + 32 * l;
    spec_wr64(e, count);
    spec_wr64(e + 8, z);
    spec_wr64(e + 16, count * 4);
    spec_wr32(e + 24, spec_check32(sec + used, z));
    spec_wr32(e + 28, 0);
    used += z;
    first += (size_t)count;
  }
  size_t hr2 = 48 + 64 * (D + 1);
  memcpy(out, in, 32);
  spec_wr32(out + 12, 1); /* the colour flag */
  size_t hz2 = spec_frame(hdr, hr2, out + 32, 65536, 19);
  spec_wr32(out + 16, (uint32_t)hz2);
  spec_wr32(out + 20, (uint32_t)hr2);
  spec_wr32(out + 24, spec_check32(out + 32, hz2));
  memcpy(out + 32 + hz2, in + 32 + hz, geo);
  memcpy(out + 32 + hz2 + geo, sec, used);
  *out_n = 32 + hz2 + geo + used;
  free(sec);
  free(planes);
  free(parent);
  return out;
}

/* Each cell's level and coordinates (in cells of its level) in file order, from the child masks
 * of the nodes (mask_of(i): node i's mask, breadth first) and the level counts; xyz gets 3 per
 * cell, lvl one. A pruned leaf (mask 0) has no children. */
static void spec_cells(uint32_t depth, const uint64_t *count, const uint8_t *masks, uint32_t *xyz,
                       uint8_t *lvl) {
  xyz[0] = xyz[1] = xyz[2] = 0;
  lvl[0] = 0;
  uint64_t first = 0, next = 1;
  for (uint32_t l = 0; l < depth; l++) {
    uint64_t w = next;
    for (uint64_t i = 0; i < count[l]; i++)
      for (uint32_t s = 0; s < 8; s++)
        if (masks[first + i] >> s & 1u) {
          const uint32_t *p = xyz + 3 * (first + i);
          xyz[3 * w] = 2 * p[0] + (s & 1u);
          xyz[3 * w + 1] = 2 * p[1] + (s >> 1 & 1u);
          xyz[3 * w + 2] = 2 * p[2] + (s >> 2 & 1u);
          lvl[w++] = (uint8_t)(l + 1);
        }
    CHECK(w == next + count[l + 1]);
    first = next;
    next = w;
  }
}

/* A deterministic colour for a cell: smooth in position, a little hash noise, alpha 255 but for a
 * few cells (so that every byte plane varies). */
static uint32_t spec_color(uint32_t level, uint32_t x, uint32_t y, uint32_t z) {
  double s = 1.0 / (double)(1u << level);
  double u = (x + 0.5) * s, v = (y + 0.5) * s, w = (z + 0.5) * s;
  uint32_t h = (x * 73856093u) ^ (y * 19349663u) ^ (z * 83492791u) ^ (level * 2654435761u);
  h ^= h >> 13;
  h *= 0x5bd1e995u;
  h ^= h >> 15;
  int r = (int)(128 + 100 * sin(6.0 * u + 2.0 * w)) + (int)(h & 7) - 3;
  int g = (int)(128 + 100 * cos(5.0 * v - 3.0 * u)) + (int)(h >> 3 & 7) - 3;
  int b = (int)(128 + 90 * sin(4.0 * w + v)) + (int)(h >> 6 & 7) - 3;
  int a = (h >> 9 & 31) == 0 ? (int)(h >> 14 & 255) : 255;
  return (uint32_t)r | (uint32_t)g << 8 | (uint32_t)b << 16 | (uint32_t)a << 24;
}

#endif
