/* SPDX-License-Identifier: Apache-2.0 */
/* vox.c - a cut as a MagicaVoxel .vox file (github.com/ephtracy/voxel-model: the .vox format and
 * its scene-graph extension).
 *
 * Layout: "VOX " int32 150, then chunk MAIN (chunks are id[4], int32 content bytes, int32
 * children bytes, content, children) whose children are, in order:
 *   per model: SIZE (int32 x, y, z) and XYZI (int32 n, then n x (x, y, z, colour index) bytes);
 *   the scene graph: nTRN 0 -> nGRP 1 -> per model k: nTRN 2+2k (frame attribute _t = "x y z")
 *   -> nSHP 3+2k -> model k;
 *   RGBA: the palette (a grey tree: colour index 1 is the voxels' grey; a coloured one: the
 *   palette of palette.h, exact up to 255 colours, else median cut in OKLab).
 * A voxel coordinate is one byte, so a model holds at most 256^3 cells: the grid is split into
 * tiles of 256^3 (the last of each axis smaller), each non-empty tile one model. The format anchors
 * _t at the model box's centre, so a tile with minimum corner m and size s gets _t = m + s/2
 * (integer division) - (R/2, R/2, 0): the grid stands centred on MagicaVoxel's ground, its z up.
 * Cell (x, y, z) of the cut is voxel (x, y, z): the tree's axes are kept (a y-up model lies on its
 * back in MagicaVoxel, whose z is up).
 *
 * Limits refused before writing: a grid wider than 2048 cells (MagicaVoxel's world is 2048 wide)
 * and a file of 2 GiB or more (chunk sizes are int32). The runs are collected once (8 bytes each),
 * counted per model to size every chunk, then each model's voxels are written in turn.
 *
 * Colour: each surface cell takes the palette entry of its colour; a cell inside (solid) that of
 * the surface cell below it in its column (the run it continues); a surface cell whose colour has
 * alpha 0 (a hole) is left out. One byte per filled cell holds the entries while the models are
 * written.
 */
#include "sys/atomic_file.h"
#include "formats/grid_export.h"
#include "formats/palette.h"
#include "formats/svo_codec.h"
#include "sys/system.h"

#include <stdio.h>
#include <string.h>

#define TILES (VX_VOX_MAX_RES / VX_VOX_MODEL)

typedef struct run {
  uint16_t x, z, y0, y1;
} run;

typedef struct runs {
  run *r;
  uint64_t n, cap, max;
  uint64_t filled;
} runs;

static vx_status collect(void *user, uint32_t x, uint32_t z, uint32_t y0, uint32_t y1,
                         vx_error *err) {
  runs *rs = (runs *)user;
  if (rs->n == rs->cap) {
    uint64_t cap = rs->cap ? 2 * rs->cap : 4096;
    if (cap > rs->max) cap = rs->max;
    if (cap <= rs->n) return vx_error_set(err, VX_ERR_LIMIT, "the .vox runs do not fit the memory "
                                          "limit");
    run *p = (run *)vx_realloc(rs->r, (size_t)cap * sizeof *p);
    if (!p) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
    rs->r = p;
    rs->cap = cap;
  }
  run *r = &rs->r[rs->n++];
  r->x = (uint16_t)x;
  r->z = (uint16_t)z;
  r->y0 = (uint16_t)y0;
  r->y1 = (uint16_t)y1;
  rs->filled += y1 - y0;
  return VX_OK;
}

/* The palette of the cut's non-hole cells, and per filled cell (run order) its entry + 1: a
 * surface cell's from its colour (0 for a hole), an inside cell's from the surface cell below it
 * in the column (the first non-hole one above when there is none below). */
static vx_status colour_cells(const vx_cut *c, const runs *rs, vx_palette *pal, uint8_t **out,
                              uint64_t limit, vx_error *err) {
  *out = NULL;
  uint64_t rss = vx_resident_bytes(), opaque = 0;
  for (uint64_t i = 0; i < c->count; i++) opaque += (c->rgba[i] >> 24) != 0;
  if (opaque == 0)
    return vx_error_set(err, VX_ERR_EMPTY, "every cell is cut out (alpha 0): no voxel to write");
  if ((double)rss + (double)rs->filled + 9.0 * (double)opaque > (double)limit)
    return vx_error_set(err, VX_ERR_LIMIT, "the colours of %llu voxels do not fit the memory limit",
                        (unsigned long long)rs->filled);
  uint32_t *cols = (uint32_t *)vx_malloc((size_t)opaque * sizeof *cols);
  uint8_t *ci = (uint8_t *)vx_malloc((size_t)(rs->filled ? rs->filled : 1));
  if (!cols || !ci) {
    vx_free(cols);
    vx_free(ci);
    return vx_error_set(err, VX_ERR_NOMEM, "out of memory for the voxels' colours");
  }
  for (uint64_t i = 0, k = 0; i < c->count; i++)
    if (c->rgba[i] >> 24) cols[k++] = c->rgba[i];
  vx_status s = vx_palette_build(cols, opaque, pal, err);
  vx_free(cols);
  if (s != VX_OK) {
    vx_free(ci);
    return s;
  }
  uint64_t at = 0;
  uint8_t below = 0;
  for (uint64_t i = 0; i < rs->n; i++) {
    const run *r = &rs->r[i];
    if (i == 0 || rs->r[i - 1].x != r->x || rs->r[i - 1].z != r->z) below = 0;
    for (uint32_t y = r->y0; y < r->y1; y++, at++) {
      uint64_t j = vx_cut_find(c, vx_morton_encode(r->x, y, r->z));
      if (j != UINT64_MAX) {
        ci[at] = c->rgba[j] >> 24 ? (uint8_t)(vx_palette_index(pal, c->rgba[j]) + 1) : 0;
        if (ci[at]) below = ci[at];
        continue;
      }
      uint8_t v = below; /* inside */
      for (uint32_t q = y + 1; !v && q < r->y1; q++) {
        uint64_t k = vx_cut_find(c, vx_morton_encode(r->x, q, r->z));
        if (k != UINT64_MAX && c->rgba[k] >> 24)
          v = (uint8_t)(vx_palette_index(pal, c->rgba[k]) + 1);
      }
      ci[at] = v ? v : 1;
    }
  }
  *out = ci;
  return VX_OK;
}

/* A byte buffer for the small chunks (sized by the caller). */
typedef struct bytes {
  uint8_t *b;
  size_t n;
} bytes;

static void put_u32(bytes *o, uint32_t v) {
  vx_put_u32(o->b + o->n, v);
  o->n += 4;
}
static void put_str(bytes *o, const char *s) {
  size_t n = strlen(s);
  put_u32(o, (uint32_t)n);
  memcpy(o->b + o->n, s, n);
  o->n += n;
}
static void put_id(bytes *o, const char *id) {
  memcpy(o->b + o->n, id, 4);
  o->n += 4;
}
/* a chunk without children: id, content size (chunk_close), 0, then the content */
static size_t chunk_open(bytes *o, const char *id) {
  put_id(o, id);
  size_t at = o->n;
  put_u32(o, 0);
  put_u32(o, 0);
  return at;
}
static void chunk_close(bytes *o, size_t at) { vx_put_u32(o->b + at, (uint32_t)(o->n - at - 8)); }

/* The scene-graph nodes of model k (tile t0 with its size) and its SIZE chunk. */
static void model_nodes(bytes *o, uint32_t k, const uint32_t m[3], const uint32_t s[3],
                        uint32_t res) {
  char t[64];
  snprintf(t, sizeof t, "%d %d %d", (int)(m[0] + s[0] / 2) - (int)(res / 2),
           (int)(m[1] + s[1] / 2) - (int)(res / 2), (int)(m[2] + s[2] / 2));
  size_t at = chunk_open(o, "nTRN");
  put_u32(o, 2 + 2 * k);
  put_u32(o, 0); /* no node attributes */
  put_u32(o, 3 + 2 * k);
  put_u32(o, 0xffffffffu); /* reserved: -1 */
  put_u32(o, 0);           /* layer 0 */
  put_u32(o, 1);           /* one frame */
  put_u32(o, 1);
  put_str(o, "_t");
  put_str(o, t);
  chunk_close(o, at);
  at = chunk_open(o, "nSHP");
  put_u32(o, 3 + 2 * k);
  put_u32(o, 0);
  put_u32(o, 1); /* one model */
  put_u32(o, k);
  put_u32(o, 0);
  chunk_close(o, at);
}

vx_status vx_vox_write(const char *path, const vx_cut *c, int solid, uint64_t mem_limit,
                       uint64_t *filled, uint32_t *models, uint64_t *nbytes, vx_error *err) {
  *filled = *nbytes = 0;
  *models = 0;
  if (c->res > VX_VOX_MAX_RES)
    return vx_error_set(err, VX_ERR_LIMIT, "a %u^3 grid is too large for .vox (MagicaVoxel's world "
                        "is %u voxels wide): export a coarser level with --lod", c->res,
                        VX_VOX_MAX_RES);
  uint64_t limit = mem_limit ? mem_limit : UINT64_C(1) << 40;
  runs rs;
  memset(&rs, 0, sizeof rs);
  uint64_t rss = vx_resident_bytes(); /* the runs take what the limit leaves beside the cut */
  rs.max = (limit > rss ? limit - rss : 0) / sizeof(run);
  vx_status s = vx_cut_runs(c, solid, mem_limit, collect, &rs, err);
  if (s != VX_OK) {
    vx_free(rs.r);
    return s;
  }
  /* colours: a palette entry + 1 per filled cell in run order (0: a hole, left out) */
  vx_palette pal;
  memset(&pal, 0, sizeof pal);
  uint8_t *ci = NULL;
  if (c->rgba) {
    s = colour_cells(c, &rs, &pal, &ci, limit, err);
    if (s != VX_OK) {
      vx_free(rs.r);
      return s;
    }
  }
  /* voxels per tile */
  const uint32_t nt = (c->res + VX_VOX_MODEL - 1) / VX_VOX_MODEL;
  static const uint32_t none = 0xffffffffu;
  uint64_t count[TILES * TILES * TILES];
  uint32_t index[TILES * TILES * TILES];
  memset(count, 0, sizeof count);
  for (uint64_t i = 0, at = 0; i < rs.n; i++) {
    const run *r = &rs.r[i];
    for (uint32_t y = r->y0; y < r->y1 && ci; y++, at++)
      if (ci[at]) count[(r->x / VX_VOX_MODEL * nt + y / VX_VOX_MODEL) * nt + r->z / VX_VOX_MODEL]++;
    for (uint32_t y = r->y0; y < r->y1 && !ci;) {
      uint32_t end = (y / VX_VOX_MODEL + 1) * VX_VOX_MODEL;
      if (end > r->y1) end = r->y1;
      count[(r->x / VX_VOX_MODEL * nt + y / VX_VOX_MODEL) * nt + r->z / VX_VOX_MODEL] += end - y;
      y = end;
    }
  }
  uint64_t written = 0;
  for (uint32_t t = 0; t < nt * nt * nt; t++) written += count[t];
  uint32_t nm = 0;
  uint64_t voxel_bytes = 0;
  for (uint32_t t = 0; t < nt * nt * nt; t++) {
    index[t] = count[t] ? nm++ : none;
    if (count[t]) voxel_bytes += 24 + 16 + 4 * count[t]; /* SIZE, XYZI */
  }
  /* the scene graph and the palette, built first: MAIN's size comes before its children */
  bytes tail, head;
  uint8_t head_b[32];
  head.b = head_b;
  head.n = 0;
  tail.n = 0;
  tail.b = (uint8_t *)vx_malloc(4096 + 160 * (size_t)nm);
  uint8_t *xyzi = (uint8_t *)vx_malloc(4u * VX_VOX_MODEL * VX_VOX_MODEL * VX_VOX_MODEL);
  if (!tail.b || !xyzi) {
    vx_free(tail.b);
    vx_free(xyzi);
    vx_free(rs.r);
    vx_free(ci);
    vx_palette_free(&pal);
    return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  }
  size_t at = chunk_open(&tail, "nTRN"); /* root transform 0 -> group 1 */
  put_u32(&tail, 0);
  put_u32(&tail, 0);
  put_u32(&tail, 1);
  put_u32(&tail, 0xffffffffu);
  put_u32(&tail, 0xffffffffu);
  put_u32(&tail, 1);
  put_u32(&tail, 0);
  chunk_close(&tail, at);
  at = chunk_open(&tail, "nGRP");
  put_u32(&tail, 1);
  put_u32(&tail, 0);
  put_u32(&tail, nm);
  for (uint32_t k = 0; k < nm; k++) put_u32(&tail, 2 + 2 * k);
  chunk_close(&tail, at);
  for (uint32_t t = 0; t < nt * nt * nt; t++) {
    if (index[t] == none) continue;
    uint32_t m[3] = {t / (nt * nt) * VX_VOX_MODEL, t / nt % nt * VX_VOX_MODEL, t % nt * VX_VOX_MODEL};
    uint32_t sz[3];
    for (int a = 0; a < 3; a++) sz[a] = c->res - m[a] < VX_VOX_MODEL ? c->res - m[a] : VX_VOX_MODEL;
    model_nodes(&tail, index[t], m, sz, c->res);
  }
  at = chunk_open(&tail, "RGBA");
  for (int i = 0; i < 256; i++) /* R G B A */
    put_u32(&tail, !ci ? (i == 0 ? 0xffc8c8c8u : 0xff000000u)
                       : ((uint32_t)i < pal.count ? pal.rgba[i] | 0xff000000u : 0xff000000u));
  chunk_close(&tail, at);
  uint64_t children = voxel_bytes + tail.n;
  if (20 + children >= UINT64_C(0x7fffffff)) {
    vx_free(tail.b);
    vx_free(xyzi);
    vx_free(rs.r);
    vx_free(ci);
    vx_palette_free(&pal);
    return vx_error_set(err, VX_ERR_LIMIT, "the .vox would hold %llu voxels (%.1f GiB): more than "
                        "the format's 2 GiB (int32 chunk sizes); export a coarser level with --lod",
                        (unsigned long long)rs.filled, (double)(20 + children) / 1073741824.0);
  }
  vx_atomic_file af;
  vx_status s2 = vx_atomic_open(&af, path, err);
  if (s2 == VX_OK) {
    put_id(&head, "VOX ");
    put_u32(&head, 150);
    put_id(&head, "MAIN");
    put_u32(&head, 0);
    put_u32(&head, (uint32_t)children);
    s2 = vx_atomic_write(&af, head.b, head.n, err);
  }
  /* each model: its tile's voxels from the runs */
  for (uint32_t t = 0; t < nt * nt * nt && s2 == VX_OK; t++) {
    if (index[t] == none) continue;
    uint32_t tx = t / (nt * nt), ty = t / nt % nt, tz = t % nt;
    uint32_t m[3] = {tx * VX_VOX_MODEL, ty * VX_VOX_MODEL, tz * VX_VOX_MODEL}, sz[3];
    for (int a = 0; a < 3; a++) sz[a] = c->res - m[a] < VX_VOX_MODEL ? c->res - m[a] : VX_VOX_MODEL;
    size_t n = 0;
    for (uint64_t i = 0, at = 0; i < rs.n; at += rs.r[i].y1 - rs.r[i].y0, i++) {
      const run *r = &rs.r[i];
      if (r->x / VX_VOX_MODEL != tx || r->z / VX_VOX_MODEL != tz) continue;
      uint32_t a = r->y0 > m[1] ? r->y0 : m[1], b = r->y1 < m[1] + sz[1] ? r->y1 : m[1] + sz[1];
      for (uint32_t y = a; y < b; y++) {
        uint8_t col = ci ? ci[at + (y - r->y0)] : 1;
        if (!col) continue;
        xyzi[4 * n] = (uint8_t)(r->x - m[0]);
        xyzi[4 * n + 1] = (uint8_t)(y - m[1]);
        xyzi[4 * n + 2] = (uint8_t)(r->z - m[2]);
        xyzi[4 * n + 3] = col;
        n++;
      }
    }
    uint8_t hb[40];
    bytes h;
    h.b = hb;
    h.n = 0;
    at = chunk_open(&h, "SIZE");
    for (int a = 0; a < 3; a++) put_u32(&h, sz[a]);
    chunk_close(&h, at);
    put_id(&h, "XYZI");
    put_u32(&h, (uint32_t)(4 + 4 * n));
    put_u32(&h, 0);
    put_u32(&h, (uint32_t)n);
    s2 = vx_atomic_write(&af, h.b, h.n, err);
    if (s2 == VX_OK && n) s2 = vx_atomic_write(&af, xyzi, 4 * n, err);
  }
  if (s2 == VX_OK) s2 = vx_atomic_write(&af, tail.b, tail.n, err);
  if (s2 == VX_OK) s2 = vx_atomic_commit(&af, err);
  else vx_atomic_abort(&af);
  vx_free(tail.b);
  vx_free(xyzi);
  vx_free(rs.r);
  vx_free(ci);
  vx_palette_free(&pal);
  if (s2 == VX_OK) {
    *filled = written;
    *models = nm;
    *nbytes = 20 + children;
  }
  return s2;
}
