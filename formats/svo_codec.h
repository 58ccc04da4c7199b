/* SPDX-License-Identifier: Apache-2.0 */
/* svo_codec.h - what the .svo writer (svo_write.c) and reader (svo_read.c) share: the format's
 * constants (docs/SVO_FORMAT.md is the byte map), explicit little-endian field access, the zstd
 * settings and the frame check. Internal to formats/. */
#ifndef VOXLOD_FORMATS_SVO_CODEC_H
#define VOXLOD_FORMATS_SVO_CODEC_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_customMem */
#include <zstd.h>

#include "formats/svo_file.h"
#include "svo/svo.h"

#define VX_SVO_MAGIC "VXLOD\0\r\n"
#define VX_SVO_VERSION 2u
#define VX_SVO_PROLOGUE 32u
#define VX_SVO_HEADER_FIXED 48u
#define VX_SVO_LEVEL_ENTRY 32u
#define VX_SVO_NODE_RECORD 12u /* mask, then errmax, errrms, flags, normal u32, d f32 */
#define VX_SVO_VOXEL_RECORD 8u /* 8 corners */
#define VX_SVO_COLOR_RECORD 4u /* packed RGBA8 (svo/color.h) */
#define VX_SVO_FLAG_COLOR 1u   /* prologue flag: colour sections follow the level sections */
#define VX_SVO_FLAGS_KNOWN VX_SVO_FLAG_COLOR
#define VX_SVO_MAX_SECTIONS (2 * (VX_MAX_DEPTH + 1)) /* D+1 level sections, D+1 colour sections */
#define VX_SVO_MAX_HEADER (VX_SVO_HEADER_FIXED + VX_SVO_LEVEL_ENTRY * VX_SVO_MAX_SECTIONS)
#define VX_SVO_MAX_HEADER_FRAME 65536u
#define VX_SVO_SMALL_RAW ((uint64_t)8 << 20) /* below: zstd level 19 */
#define VX_SVO_BIG_RAW ((uint64_t)64 << 20)  /* from here: level 3 and worker threads; between: 9 */

static inline void vx_put_u32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline void vx_put_u64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline void vx_put_f32(uint8_t *p, float f) {
  uint32_t v;
  memcpy(&v, &f, 4);
  vx_put_u32(p, v);
}
static inline void vx_put_f64(uint8_t *p, double f) {
  uint64_t v;
  memcpy(&v, &f, 8);
  vx_put_u64(p, v);
}
static inline uint32_t vx_get_u32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t vx_get_u64(const uint8_t *p) {
  return (uint64_t)vx_get_u32(p) | (uint64_t)vx_get_u32(p + 4) << 32;
}
static inline float vx_get_f32(const uint8_t *p) {
  uint32_t v = vx_get_u32(p);
  float f;
  memcpy(&f, &v, 4);
  return f;
}
static inline double vx_get_f64(const uint8_t *p) {
  uint64_t v = vx_get_u64(p);
  double f;
  memcpy(&f, &v, 8);
  return f;
}

/* Bytes of the header record of a tree of `depth` levels, with or without colour entries. */
static inline uint64_t vx_svo_header_size(uint32_t depth, int color) {
  return VX_SVO_HEADER_FIXED + (uint64_t)VX_SVO_LEVEL_ENTRY * (depth + 1) * (color ? 2u : 1u);
}

/* Colour sections (SVO_FORMAT.md): the n colours of a level, each minus its parent's colour
 * byte by byte (mod 256; level 0 as it is), stored as byte planes: all r, then g, b, a. A cell's
 * parent is found from the level above's masks (up[k], colours upc[k], k < nup; up == NULL at
 * level 0): node k's children are the next popcount(mask) cells. Cells past what the masks
 * name (an inconsistent tree, refused elsewhere) count from 0. Chosen by measurement (less than
 * interleaved RGBA or plain planes on both a texture and a noisy field). */
static inline void vx_svo_pack_colors(const uint32_t *c, uint64_t n, const vx_node *up,
                                      const uint32_t *upc, uint64_t nup, uint8_t *raw) {
  uint64_t i = 0;
  for (uint64_t k = 0; up && k < nup && i < n; k++) {
    const uint32_t p = upc[k];
    for (uint32_t j = vx_popcount8(vx_node_mask(up[k].info)); j > 0 && i < n; j--, i++)
      for (int b = 0; b < 4; b++) raw[(uint64_t)b * n + i] = (uint8_t)((c[i] >> (8 * b)) - (p >> (8 * b)));
  }
  for (; i < n; i++)
    for (int b = 0; b < 4; b++) raw[(uint64_t)b * n + i] = (uint8_t)(c[i] >> (8 * b));
}
/* The children of parents up[0 .. nup-1] (colours upc), the first of them cell i of the level:
 * returns the cell after the last. */
static inline uint64_t vx_svo_unpack_colors_from(const uint8_t *raw, uint64_t n, uint64_t i,
                                                 const vx_node *up, const uint32_t *upc,
                                                 uint64_t nup, uint32_t *c) {
  for (uint64_t k = 0; up && k < nup && i < n; k++) {
    const uint32_t p = upc[k];
    for (uint32_t j = vx_popcount8(vx_node_mask(up[k].info)); j > 0 && i < n; j--, i++) {
      uint32_t v = 0;
      for (int b = 0; b < 4; b++)
        v |= (uint32_t)(uint8_t)(raw[(uint64_t)b * n + i] + (uint8_t)(p >> (8 * b))) << (8 * b);
      c[i] = v;
    }
  }
  return i;
}
static inline void vx_svo_unpack_colors(const uint8_t *raw, uint64_t n, const vx_node *up,
                                        const uint32_t *upc, uint64_t nup, uint32_t *c) {
  uint64_t i = vx_svo_unpack_colors_from(raw, n, 0, up, upc, nup, c);
  for (; i < n; i++)
    c[i] = (uint32_t)raw[i] | (uint32_t)raw[n + i] << 8 | (uint32_t)raw[2 * n + i] << 16 |
           (uint32_t)raw[3 * n + i] << 24;
}

/* The zstd level for `requested` (0: default by size) and a decoded total of raw_total bytes, and
 * the number of zstd worker threads (0: single-threaded). Defined in svo_write.c. */
int vx_svo_zstd_level(int requested, uint64_t raw_total);
int vx_svo_zstd_workers(uint64_t raw_total);

/* Node sections (SVO_FORMAT.md): nodes first .. first+k-1 (at nd[0 .. k-1]) of a level of
 * `count` into the raw section (the mask bytes at the front, 11-byte records after them); and
 * back, child indices 0 (svo_write.c, svo_read.c). */
void vx_svo_pack_nodes(const vx_node *nd, uint64_t count, uint64_t first, uint64_t k,
                       uint8_t *raw);
void vx_svo_unpack_nodes(const uint8_t *raw, uint64_t count, vx_node *n);
/* The records of k nodes (after the masks of a node section) and their masks into n[0 .. k-1],
 * child indices 0. */
void vx_svo_unpack_records(const uint8_t *mask, const uint8_t *rec, uint64_t k, vx_node *n);
/* NULL when z (zsize bytes) is exactly one zstd frame with a content checksum that declares
 * `raw` content bytes; else what is wrong with it ("is not a zstd frame", "is damaged", ...),
 * *why (may be NULL) then the detail that goes in brackets after it, or NULL (svo_read.c). */
const char *vx_svo_frame_problem(const uint8_t *z, uint64_t zsize, uint64_t raw, const char **why);
/* Exactly one zstd frame of zsize bytes, with a content checksum and declaring `raw` content
 * bytes, decompressed into dst; VX_ERR_CORRUPT naming `name` and `what` otherwise (svo_read.c). */
vx_status vx_svo_unframe(ZSTD_DCtx *dc, const uint8_t *z, uint64_t zsize, uint8_t *dst,
                         uint64_t raw, const char *name, const char *what, vx_error *err);
/* Sections 0 .. levels-1 of tree t (its counts and layout set, no arrays yet) decoded side by
 * side on `threads` threads (<= 0: every core) from their compressed bytes z[l], zsize[l] long,
 * each checked against zcheck[l] (svo_read_levels.c). Each node level's masks must name the next
 * level's count before anything of that count's size is allocated. VX_OK: t->nodes (linked, each
 * node vx_node_sound), t->voxels, node_count and voxel_count set. Anything else: nothing is left
 * allocated and the caller decodes the sections one by one, which names what is wrong. */
vx_status vx_svo_decode_levels(vx_octree *t, uint32_t levels, const uint8_t *const *z,
                               const uint64_t *zsize, const uint32_t *zcheck, int threads);
/* The colour sections of the levels t has loaded (its nodes and voxels decoded; no colour arrays
 * yet), level l's at z[l], zsize[l] bytes, check zcheck[l]: decompressed and checked side by side
 * on `threads` threads, then unpacked level by level into t->node_color and t->voxel_color
 * (svo_read_levels.c). Anything but VX_OK leaves no colour array: the caller reads them one by
 * one, which names what is wrong. */
vx_status vx_svo_decode_colors(vx_octree *t, const uint8_t *const *z, const uint64_t *zsize,
                               const uint32_t *zcheck, int threads);
/* The check of n bytes (the checker below, in one call); 0 when zstd fails. */
int vx_svo_bytes_check(ZSTD_CCtx *cc, const uint8_t *p, uint64_t n, uint32_t *check);
/* The same check on a thread of its own, beside other work: vx_svo_check_start runs it on a new
 * thread when `beside` is set and one starts, else at once; vx_svo_check_join waits for it and
 * gives 1 when zstd did not fail (the value in c->check). c->cc stays the caller's. */
typedef struct vx_svo_bg_check {
  ZSTD_CCtx *cc;
  const uint8_t *p;
  uint64_t n;
  uint32_t check;
  int ok, threaded;
  pthread_t th;
} vx_svo_bg_check;
void vx_svo_check_start(vx_svo_bg_check *c, ZSTD_CCtx *cc, const uint8_t *p, uint64_t n,
                        int beside);
int vx_svo_check_join(vx_svo_bg_check *c);

/* The header of a version-2 file of `size` bytes, in memory (mem) or at file offset `base` of f:
 * every check of vx_svo_decode up to the level counts and section sizes (against `size`), then
 * *out holds the depth, transform, band and level counts, no arrays (levels_loaded 0). */
vx_status vx_svo_decode_header(const uint8_t *mem, FILE *f, uint64_t base, uint64_t size,
                               const char *name, vx_octree *out, vx_svo_file_info *info,
                               vx_error *err);

/* vx_svo_decode of a file of `size` bytes at file offset `base` of f (or in memory, mem), read
 * section by section: a partial read (opts->max_level) reads only the header and the sections it
 * decodes, each checked as vx_svo_decode checks it. */
vx_status vx_svo_decode_range(const uint8_t *mem, FILE *f, uint64_t base, uint64_t size,
                              const char *name, const vx_svo_read_opts *opts, vx_octree *out,
                              vx_svo_file_info *info, vx_error *err);

/* Opens path for reading, refusing anything but a regular file (a FIFO without blocking). */
vx_status vx_svo_open_regular(const char *path, FILE **f, uint64_t *size, vx_error *err);

/* A zstd failure as a status with a message (a macro: the location is the caller's). */
#define vx_svo_zstd_fail(err, what, code)                                                       \
  vx_error_set((err), VX_ERR_NOMEM, "zstd failed while %s: %s", (what),                        \
               ZSTD_isError(code) ? ZSTD_getErrorName(code) : "out of memory")

/* zstd contexts whose memory comes from the library's allocator (sys/alloc.h). */
static inline ZSTD_CCtx *vx_zstd_cctx(void) {
  ZSTD_customMem m = {vx_zstd_alloc, vx_zstd_free, NULL};
  return ZSTD_createCCtx_advanced(m);
}
static inline ZSTD_DCtx *vx_zstd_dctx(void) {
  ZSTD_customMem m = {vx_zstd_alloc, vx_zstd_free, NULL};
  return ZSTD_createDCtx_advanced(m);
}

/* ---- frame checks, incrementally: the low 32 bits of XXH64 of a section's bytes, taken from the
 * content checksum of a zstd frame made of them at the fastest level (zstd's public API offers
 * XXH64 only that way); only the last 4 bytes of that output are kept. c->cc is the caller's. */
/* -------------------------------------------------------------- */

typedef struct vx_svo_checker {
  ZSTD_CCtx *cc;
  uint8_t tail[4];
  uint8_t buf[16384];
} vx_svo_checker;

static inline int vx_svo_check_begin(vx_svo_checker *c) {
  memset(c->tail, 0, sizeof c->tail);
  size_t r = ZSTD_CCtx_reset(c->cc, ZSTD_reset_session_and_parameters);
  if (!ZSTD_isError(r)) r = ZSTD_CCtx_setParameter(c->cc, ZSTD_c_compressionLevel, ZSTD_minCLevel());
  if (!ZSTD_isError(r)) r = ZSTD_CCtx_setParameter(c->cc, ZSTD_c_checksumFlag, 1);
  return !ZSTD_isError(r);
}

static inline int vx_svo_check_feed(vx_svo_checker *c, const void *p, size_t n, ZSTD_EndDirective end) {
  ZSTD_inBuffer in = {p, n, 0};
  size_t r;
  do {
    ZSTD_outBuffer out = {c->buf, sizeof c->buf, 0};
    r = ZSTD_compressStream2(c->cc, &out, &in, end);
    if (ZSTD_isError(r)) return 0;
    if (out.pos >= sizeof c->tail) { /* the output's last 4 bytes are all that is kept */
      memcpy(c->tail, c->buf + out.pos - sizeof c->tail, sizeof c->tail);
    } else {
      for (size_t i = 0; i < out.pos; i++) {
        c->tail[0] = c->tail[1];
        c->tail[1] = c->tail[2];
        c->tail[2] = c->tail[3];
        c->tail[3] = c->buf[i];
      }
    }
  } while (end == ZSTD_e_end ? r != 0 : in.pos < in.size);
  return 1;
}

static inline uint32_t vx_svo_check_value(const vx_svo_checker *c) {
  return (uint32_t)c->tail[0] | (uint32_t)c->tail[1] << 8 | (uint32_t)c->tail[2] << 16 |
         (uint32_t)c->tail[3] << 24;
}


#endif
