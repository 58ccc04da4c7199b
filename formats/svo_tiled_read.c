/* SPDX-License-Identifier: Apache-2.0 */
/* svo_tiled_read.c - reading a tiled .svo (svo_tiled.h; docs/SVO_FORMAT.md, "Tiled files"):
 * the prologue, trailer, header and directory checked before anything is allocated from them,
 * then tiles read alone (against the index and the top tree) or joined into one tree.
 */
#define _FILE_OFFSET_BITS 64
#define _POSIX_C_SOURCE 200809L
#include "formats/svo_tiled_internal.h"
#include "formats/svo_codec.h"
#include "sys/system.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct vx_tiled {
  const uint8_t *mem;
  FILE *f;
  uint64_t size;
  char *name;
  uint64_t mem_limit;
  vx_tiled_header h;
  vx_octree top;
  uint64_t n;
  vx_tile_entry *e;
  uint64_t nodes, voxels;
  uint32_t color; /* the prologue's colour flag */
  ZSTD_CCtx *ck;
  ZSTD_DCtx *dc;
};

void vx_tiled_close(vx_tiled *t) {
  if (!t) return;
  if (t->f) fclose(t->f);
  vx_free(t->name);
  vx_octree_free(&t->top);
  vx_free(t->e);
  ZSTD_freeCCtx(t->ck);
  ZSTD_freeDCtx(t->dc);
  vx_free(t);
}

/* n bytes at off: a pointer into memory, or read into *buf (vx_malloc'ed, the caller frees). */
static vx_status get(vx_tiled *t, uint64_t off, uint64_t n, const uint8_t **p, uint8_t **buf,
                     vx_error *err) {
  *buf = NULL;
  if (off > t->size || n > t->size - off)
    return vx_error_set(err, VX_ERR_CORRUPT, "%s: truncated (needs %llu bytes, has %llu)", t->name,
                        (unsigned long long)(off + n), (unsigned long long)t->size);
  if (t->mem) {
    *p = t->mem + off;
    return VX_OK;
  }
  if (n > t->mem_limit)
    return vx_error_set(err, VX_ERR_LIMIT, "%s: a %.1f MiB piece is over the memory limit",
                        t->name, (double)n / 1048576.0);
  *buf = (uint8_t *)vx_malloc(n ? (size_t)n : 1);
  if (!*buf)
    return vx_error_set(err, VX_ERR_NOMEM, "%s: cannot allocate %.1f MiB", t->name,
                        (double)n / 1048576.0);
  const int big = n >= ((uint64_t)32 << 20); /* side by side (sys/system.h) */
  if (big ? vx_read_at(fileno(t->f), *buf, n, off, 0) != 0
          : fseeko(t->f, (off_t)off, SEEK_SET) != 0 || fread(*buf, 1, (size_t)n, t->f) != n) {
    vx_free(*buf);
    *buf = NULL;
    return vx_error_set(err, VX_ERR_IO, "%s: cannot read %llu bytes at %llu", t->name,
                        (unsigned long long)n, (unsigned long long)off);
  }
  *p = *buf;
  return VX_OK;
}

/* A frame at off: its check, then its content (raw bytes) into dst. */
static vx_status get_frame(vx_tiled *t, uint64_t off, uint64_t z, uint32_t check, uint8_t *dst,
                           uint64_t raw, const char *what, vx_error *err) {
  const uint8_t *p;
  uint8_t *buf;
  vx_status s = get(t, off, z, &p, &buf, err);
  uint32_t got = 0;
  if (s == VX_OK && !vx_svo_bytes_check(t->ck, p, z, &got))
    s = vx_error_set(err, VX_ERR_NOMEM, "%s: cannot checksum %s", t->name, what);
  if (s == VX_OK && got != check)
    s = vx_error_set(err, VX_ERR_CORRUPT, "%s: %s is damaged (checksum mismatch)", t->name, what);
  if (s == VX_OK) s = vx_svo_unframe(t->dc, p, z, dst, raw, t->name, what, err);
  vx_free(buf);
  return s;
}

static vx_status parse_header(vx_tiled *t, const uint8_t *hdr, uint32_t hraw, uint64_t hoff,
                              uint32_t hzn, uint64_t *dz, uint64_t *draw, uint32_t *dcheck,
                              vx_error *err) {
  vx_tiled_header *h = &t->h;
  const char *name = t->name;
  vx_tiled_header_get(hdr, h);
  h->color = t->color;
  t->n = vx_get_u64(hdr + 56);
  *dz = vx_get_u64(hdr + 64);
  *draw = vx_get_u64(hdr + 72);
  *dcheck = vx_get_u32(hdr + 80);
  t->voxels = vx_get_u64(hdr + 88);
  t->nodes = vx_get_u64(hdr + 96);
  vx_status s = vx_tiled_header_check(h, name, err);
  if (s != VX_OK) return s;
  const uint32_t K = h->depth - h->tile_depth;
  if (tl_header_size(K) != hraw)
    return vx_error_set(err, VX_ERR_CORRUPT, "%s: %u top levels disagree with the header's size",
                        name, K);
  if (vx_get_u32(hdr + 84) != 0 || vx_get_u64(hdr + 104) != 0)
    return vx_error_set(err, VX_ERR_CORRUPT, "%s: reserved header field is not 0", name);
  /* the tiles lie between the prologue and the header, each at least TL_TILE_MIN bytes */
  if (t->n == 0 || t->n > (UINT64_C(1) << 3 * K) || t->n > (hoff - TL_PROLOGUE) / TL_TILE_MIN)
    return vx_error_set(err, VX_ERR_CORRUPT, "%s: %llu tiles: impossible in a %u^3 grid of tiles "
                        "and %llu bytes", name, (unsigned long long)t->n, 1u << K,
                        (unsigned long long)t->size);
  uint64_t top_nodes = 0;
  for (uint32_t l = 0; l <= K; l++) {
    uint64_t c = vx_get_u64(hdr + TL_HEADER_FIXED + 8 * l);
    if ((l == 0 && c != 1) || (l > 0 && c > 8 * t->top.level_count[l - 1]) || (l == K && c != t->n))
      return vx_error_set(err, VX_ERR_CORRUPT, "%s: top level %u holds %llu nodes: more than its "
                          "parents allow or not the tile count", name, l, (unsigned long long)c);
    t->top.level_count[l] = c;
    top_nodes += c;
  }
  if (*draw != tl_directory_size(top_nodes, t->n, (int)h->color))
    return vx_error_set(err, VX_ERR_CORRUPT, "%s: the directory declares %llu bytes for %llu "
                        "nodes and %llu tiles", name, (unsigned long long)*draw,
                        (unsigned long long)top_nodes, (unsigned long long)t->n);
  if (*dz > t->size || hoff + hzn + *dz + TL_TRAILER != t->size)
    return vx_error_set(err, VX_ERR_CORRUPT, "%s: file has %llu bytes but its trailer and header "
                        "describe another size", name, (unsigned long long)t->size);
  const double need = (double)*draw + (h->color ? 20.0 : 16.0) * (double)top_nodes +
                      (double)t->n * sizeof(vx_tile_entry);
  if (need > (double)t->mem_limit)
    return vx_error_set(err, VX_ERR_LIMIT, "%s: its directory needs %.1f MiB, over the memory "
                        "limit of %.1f MiB", name, need / 1048576.0,
                        (double)t->mem_limit / 1048576.0);
  return VX_OK;
}

/* The codes of level K's nodes, from the top tree's masks (ascending). */
static vx_status top_codes(const vx_octree *top, uint32_t K, uint64_t **out, vx_error *err) {
  uint64_t *a = (uint64_t *)vx_malloc((size_t)top->node_count * sizeof(uint64_t));
  if (!a) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  a[0] = 0;
  for (uint32_t l = 0; l < K; l++) {
    uint64_t w = top->level_first[l + 1];
    for (uint64_t k = 0; k < top->level_count[l]; k++) {
      const uint64_t i = top->level_first[l] + k;
      const uint32_t m = vx_node_mask(top->nodes[i].info);
      for (uint32_t s = 0; s < 8; s++)
        if (m >> s & 1) a[w++] = a[i] << 3 | s;
    }
  }
  *out = a;
  return VX_OK;
}

/* The directory: the top tree (linked, validated) and the index against it and the file. */
static vx_status parse_directory(vx_tiled *t, const uint8_t *raw, uint64_t hoff, vx_error *err) {
  const uint32_t K = t->h.depth - t->h.tile_depth;
  const char *name = t->name;
  t->top.depth = K + 1;
  t->top.levels_loaded = K + 1;
  t->top.band = t->h.band;
  t->top.xf = t->h.xf;
  vx_status s = vx_octree_alloc(&t->top, err);
  if (s != VX_OK) return s;
  const uint8_t *p = raw;
  for (uint32_t l = 0; l <= K; l++) {
    vx_svo_unpack_nodes(p, t->top.level_count[l], t->top.nodes + t->top.level_first[l]);
    p += t->top.level_count[l] * VX_SVO_NODE_RECORD;
  }
  if ((s = tl_link_top(&t->top, K, t->n, err)) != VX_OK)
    return vx_error_set(err, VX_ERR_CORRUPT, "%s: top tree: %s", name, err ? err->msg : "invalid");
  t->e = (vx_tile_entry *)vx_malloc((size_t)t->n * sizeof(vx_tile_entry));
  if (!t->e) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  uint64_t *codes = NULL;
  if ((s = top_codes(&t->top, K, &codes, err)) != VX_OK) return s;
  const uint64_t *kc = codes + t->top.level_first[K];
  uint64_t at = TL_PROLOGUE, nodes = 0, voxels = 0;
  for (uint32_t l = 0; l < K; l++) nodes += t->top.level_count[l];
  for (uint64_t i = 0; i < t->n && s == VX_OK; i++, p += TL_INDEX_RECORD) {
    vx_tile_entry *e = &t->e[i];
    e->code = vx_get_u64(p);
    e->offset = vx_get_u64(p + 8);
    e->length = vx_get_u64(p + 16);
    e->voxels = vx_get_u64(p + 24);
    e->nodes = vx_get_u64(p + 32);
    e->check = vx_get_u32(p + 40);
    if (vx_get_u32(p + 44) != 0)
      s = vx_error_set(err, VX_ERR_CORRUPT, "%s: tile %llu: reserved field is not 0", name,
                       (unsigned long long)i);
    else if ((e->code >> 3 * K) != 0)
      s = vx_error_set(err, VX_ERR_CORRUPT, "%s: tile %llu points outside the %u^3 grid of tiles "
                       "(cell %llu)", name, (unsigned long long)i, 1u << K,
                       (unsigned long long)e->code);
    else if (i > 0 && e->code <= t->e[i - 1].code)
      s = vx_error_set(err, VX_ERR_CORRUPT, "%s: tile %llu (cell %llu) is %s", name,
                       (unsigned long long)i, (unsigned long long)e->code,
                       e->code == t->e[i - 1].code ? "a duplicate" : "out of order");
    else if (e->offset != at || e->length < TL_TILE_MIN || e->length > hoff - at)
      s = vx_error_set(err, VX_ERR_CORRUPT, "%s: tile %llu's bytes (%llu at %llu) are not where "
                       "the tiles before it end", name, (unsigned long long)i,
                       (unsigned long long)e->length, (unsigned long long)e->offset);
    else if (e->voxels > (UINT64_C(1) << 3 * t->h.tile_depth) || e->nodes > (UINT64_C(1) << 32) ||
             /* a pruned tile may have no voxels left (its root or nodes above them stand in) */
             (e->voxels == 0 && !(t->h.prune_error > 0.0f)) || e->nodes == 0)
      s = vx_error_set(err, VX_ERR_CORRUPT, "%s: tile %llu claims %llu voxels and %llu nodes", name,
                       (unsigned long long)i, (unsigned long long)e->voxels,
                       (unsigned long long)e->nodes);
    if (s == VX_OK) {
      at += e->length;
      nodes += e->nodes;
      voxels += e->voxels;
    }
  }
  for (uint64_t i = 0; i < t->n && s == VX_OK; i++) /* in order: the cells the top tree names */
    if (t->e[i].code != kc[i])
      s = vx_error_set(err, VX_ERR_CORRUPT, "%s: tile %llu (cell %llu) is not the cell the top "
                       "tree names there (%llu): a tile is missing or extra", name,
                       (unsigned long long)i, (unsigned long long)t->e[i].code,
                       (unsigned long long)kc[i]);
  vx_free(codes);
  if (s == VX_OK && at != hoff)
    s = vx_error_set(err, VX_ERR_CORRUPT, "%s: the tiles end at %llu, the header starts at %llu",
                     name, (unsigned long long)at, (unsigned long long)hoff);
  if (s == VX_OK && (nodes != t->nodes || voxels != t->voxels))
    s = vx_error_set(err, VX_ERR_CORRUPT, "%s: the tiles hold %llu nodes and %llu voxels, the "
                     "header says %llu and %llu", name, (unsigned long long)nodes,
                     (unsigned long long)voxels, (unsigned long long)t->nodes,
                     (unsigned long long)t->voxels);
  if (s == VX_OK && t->h.color) { /* the top tree's colours, as a version-2 file's */
    vx_octree *top = &t->top;
    top->node_color = (uint32_t *)vx_malloc((size_t)top->node_count * sizeof(uint32_t));
    if (!top->node_color) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
    for (uint32_t l = 0; l <= K; l++) {
      const uint64_t f = top->level_first[l], c = top->level_count[l];
      const uint64_t uf = l ? top->level_first[l - 1] : 0, un = l ? top->level_count[l - 1] : 0;
      vx_svo_unpack_colors(p, c, l ? top->nodes + uf : NULL, top->node_color + uf, un,
                           top->node_color + f);
      p += 4 * c;
    }
  }
  return s;
}

static vx_status open_common(vx_tiled *t, vx_error *err) {
  const char *name = t->name;
  const uint8_t *p;
  uint8_t *buf;
  if (t->size < TL_PROLOGUE + TL_TRAILER)
    return vx_error_set(err, t->size >= 8 ? VX_ERR_CORRUPT : VX_ERR_FORMAT,
                        "%s: too short for a tiled .svo (%llu bytes)", name,
                        (unsigned long long)t->size);
  vx_status s = get(t, 0, TL_PROLOGUE, &p, &buf, err);
  if (s != VX_OK) return s;
  if (memcmp(p, VX_SVO_MAGIC, 8) != 0)
    s = vx_error_set(err, VX_ERR_FORMAT, "%s: not a voxlod .svo file (bad signature)", name);
  else if (vx_get_u32(p + 8) != VX_SVO_TILED_VERSION)
    s = vx_error_set(err, VX_ERR_FORMAT, "%s: a version-%u .svo, not a tiled one", name,
                     vx_get_u32(p + 8));
  else if ((vx_get_u32(p + 12) & ~TL_FLAG_COLOR) != 0)
    s = vx_error_set(err, VX_ERR_VERSION, "%s: uses features this reader does not know (flags "
                     "0x%x): made by a newer voxlod", name, vx_get_u32(p + 12));
  else
    for (int i = 16; i < (int)TL_PROLOGUE && s == VX_OK; i++)
      if (p[i] != 0) s = vx_error_set(err, VX_ERR_CORRUPT, "%s: reserved prologue bytes", name);
  if (s == VX_OK) t->color = vx_get_u32(p + 12) & TL_FLAG_COLOR;
  vx_free(buf);
  if (s != VX_OK) return s;
  if ((s = get(t, t->size - TL_TRAILER, TL_TRAILER, &p, &buf, err)) != VX_OK) return s;
  const uint64_t hoff = vx_get_u64(p);
  const uint32_t hzn = vx_get_u32(p + 8), hraw = vx_get_u32(p + 12), hcheck = vx_get_u32(p + 16);
  if (memcmp(p + 24, TL_TRAILER_MAGIC, 8) != 0 || vx_get_u32(p + 20) != 0)
    s = vx_error_set(err, VX_ERR_CORRUPT, "%s: the tiled trailer is missing or damaged "
                     "(truncated file?)", name);
  else if (hzn > VX_SVO_MAX_HEADER_FRAME || hraw < tl_header_size(1) ||
           hraw > tl_header_size(VX_MAX_DEPTH - 1) || hoff < TL_PROLOGUE + TL_TILE_MIN ||
           hoff > t->size - TL_TRAILER || hzn > t->size - TL_TRAILER - hoff)
    s = vx_error_set(err, VX_ERR_CORRUPT, "%s: header at %llu (%u/%u bytes) is impossible", name,
                     (unsigned long long)hoff, hzn, hraw);
  vx_free(buf);
  if (s != VX_OK) return s;
  uint8_t hdr[TL_HEADER_FIXED + 8 * VX_MAX_DEPTH];
  uint64_t dz = 0, draw = 0;
  uint32_t dcheck = 0;
  if ((s = get_frame(t, hoff, hzn, hcheck, hdr, hraw, "the tiled header", err)) != VX_OK ||
      (s = parse_header(t, hdr, hraw, hoff, hzn, &dz, &draw, &dcheck, err)) != VX_OK)
    return s;
  uint8_t *raw = (uint8_t *)vx_malloc((size_t)draw);
  if (!raw) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  s = get_frame(t, hoff + hzn, dz, dcheck, raw, draw, "the tile directory", err);
  if (s == VX_OK) s = parse_directory(t, raw, hoff, err);
  vx_free(raw);
  return s;
}

static vx_status open_with(vx_tiled *t, const vx_svo_read_opts *opts, vx_tiled **out,
                           vx_error *err) {
  t->mem_limit = opts && opts->mem_limit ? opts->mem_limit : vx_default_mem_limit();
  t->ck = vx_zstd_cctx();
  t->dc = vx_zstd_dctx();
  vx_status s = t->ck && t->dc && t->name ? open_common(t, err)
                                          : vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  if (s != VX_OK) {
    vx_tiled_close(t);
    return s;
  }
  *out = t;
  return VX_OK;
}

vx_status vx_tiled_open(const char *path, const vx_svo_read_opts *opts, vx_tiled **out,
                        vx_error *err) {
  *out = NULL;
  vx_tiled *t = (vx_tiled *)vx_calloc(1, sizeof *t);
  if (!t) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  vx_status s = vx_svo_open_regular(path, &t->f, &t->size, err);
  if (s != VX_OK) {
    vx_free(t);
    return s;
  }
  t->name = vx_strdup(path);
  return open_with(t, opts, out, err);
}

vx_status vx_tiled_open_memory(const uint8_t *data, size_t size, const vx_svo_read_opts *opts,
                               vx_tiled **out, vx_error *err) {
  *out = NULL;
  vx_tiled *t = (vx_tiled *)vx_calloc(1, sizeof *t);
  if (!t) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  t->mem = data ? data : (const uint8_t *)"";
  t->size = data ? size : 0;
  t->name = vx_strdup("tiled svo data");
  return open_with(t, opts, out, err);
}

const vx_tiled_header *vx_tiled_get_header(const vx_tiled *t) { return &t->h; }
uint64_t vx_tiled_tile_count(const vx_tiled *t) { return t->n; }
const vx_tile_entry *vx_tiled_tile(const vx_tiled *t, uint64_t i) {
  return i < t->n ? &t->e[i] : NULL;
}
const vx_octree *vx_tiled_top(const vx_tiled *t) { return &t->top; }
void vx_tiled_totals(const vx_tiled *t, uint64_t *nodes, uint64_t *voxels, uint64_t *file_bytes) {
  if (nodes) *nodes = t->nodes;
  if (voxels) *voxels = t->voxels;
  if (file_bytes) *file_bytes = t->size;
}

/* Tile i's header (out: depth, transform, counts) against the tiled header and its index entry. */
static vx_status tile_as_indexed(const vx_tiled *t, uint64_t i, const vx_octree *out,
                                 const vx_svo_file_info *fi, vx_error *err) {
  const vx_tile_entry *e = &t->e[i];
  vx_status s = tl_tile_matches(&t->h, e->code, out, fi, t->name, err);
  if (s == VX_OK && (out->level_count[out->depth] != e->voxels || tl_tree_nodes(out) != e->nodes))
    s = vx_error_set(err, VX_ERR_CORRUPT, "%s: tile %llu holds %llu voxels and %llu nodes, its "
                     "index entry says %llu and %llu", t->name, (unsigned long long)i,
                     (unsigned long long)out->level_count[out->depth],
                     (unsigned long long)tl_tree_nodes(out), (unsigned long long)e->voxels,
                     (unsigned long long)e->nodes);
  return s;
}

static vx_status tile_index_ok(const vx_tiled *t, uint64_t i, vx_error *err) {
  return i < t->n ? VX_OK
                  : vx_error_set(err, VX_ERR_INVALID_ARG, "tile %llu of %llu",
                                 (unsigned long long)i, (unsigned long long)t->n);
}

vx_status vx_tiled_tile_header(vx_tiled *t, uint64_t i, vx_octree *out, vx_svo_file_info *fi,
                               vx_error *err) {
  memset(out, 0, sizeof *out);
  if (tile_index_ok(t, i, err) != VX_OK) return VX_ERR_INVALID_ARG;
  const vx_tile_entry *e = &t->e[i];
  vx_status s = vx_svo_decode_header(t->mem ? t->mem + e->offset : NULL, t->f, e->offset,
                                     e->length, t->name, out, fi, err);
  if (s == VX_OK) s = tile_as_indexed(t, i, out, fi, err);
  if (s != VX_OK) memset(out, 0, sizeof *out);
  return s;
}

/* A coloured tile's rgb from the top tree's colour of its root: every colour of the tile moved by
 * the difference, byte by byte (colours are stored as differences from their parents', so this
 * is the tile decoded from the top's root colour). The alpha is the tile's own and must agree. */
static vx_status tile_colors(const vx_tiled *t, uint64_t i, vx_octree *out, vx_error *err) {
  const uint32_t K = t->h.depth - t->h.tile_depth;
  const uint32_t want = t->top.node_color[t->top.level_first[K] + i];
  if (!out->node_color || want >> 24 != out->node_color[0] >> 24)
    return vx_error_set(err, VX_ERR_CORRUPT, "%s: tile %llu's root colour disagrees with the top "
                        "tree", t->name, (unsigned long long)i);
  uint32_t d = 0;
  for (int b = 0; b < 3; b++)
    d |= (uint32_t)(uint8_t)((want >> 8 * b) - (out->node_color[0] >> 8 * b)) << 8 * b;
  if (d == 0) return VX_OK;
  uint32_t *arr[2] = {out->node_color, out->voxel_color};
  const uint64_t n[2] = {out->node_count, out->voxel_color ? out->voxel_count : 0};
  for (int a = 0; a < 2; a++)
    for (uint64_t k = 0; k < n[a]; k++) {
      uint32_t c = arr[a][k], v = c & 0xff000000u;
      for (int b = 0; b < 3; b++)
        v |= (uint32_t)(uint8_t)((c >> 8 * b) + (d >> 8 * b)) << 8 * b;
      arr[a][k] = v;
    }
  return VX_OK;
}

vx_status vx_tiled_read_tile(vx_tiled *t, uint64_t i, const vx_svo_read_opts *opts,
                             vx_octree *out, vx_error *err) {
  memset(out, 0, sizeof *out);
  if (tile_index_ok(t, i, err) != VX_OK) return VX_ERR_INVALID_ARG;
  const vx_tile_entry *e = &t->e[i];
  const uint8_t *p;
  uint8_t *buf = NULL;
  vx_status s = VX_OK;
  vx_svo_file_info fi;
  /* A partial read takes the header and the sections it decodes (each with its own check), not
   * the whole tile: the coarse levels of a 16384^3 tile are a few MiB of its GiBs. */
  const int partial = opts && opts->max_level >= 0 && (uint32_t)opts->max_level < t->h.tile_depth;
  if (partial)
    s = vx_svo_decode_range(t->mem ? t->mem + e->offset : NULL, t->f, e->offset, e->length,
                            t->name, opts, out, &fi, err);
  else if ((s = get(t, e->offset, e->length, &p, &buf, err)) != VX_OK)
    return s;
  else { /* the tile's check beside its decoding; a failed check is the answer either way */
    vx_svo_bg_check c;
    vx_svo_check_start(&c, t->ck, p, e->length, e->length >= ((uint64_t)1 << 20));
    const int beside = c.threaded;
    if (beside) s = vx_svo_decode(p, (size_t)e->length, opts, out, &fi, err);
    const int ok = vx_svo_check_join(&c);
    if (!ok || c.check != e->check) {
      if (beside && s == VX_OK) vx_octree_free(out);
      s = !ok ? vx_error_set(err, VX_ERR_NOMEM, "%s: cannot checksum tile %llu", t->name,
                             (unsigned long long)i)
              : vx_error_set(err, VX_ERR_CORRUPT, "%s: tile %llu is damaged (checksum "
                             "mismatch)", t->name, (unsigned long long)i);
    } else if (!beside) {
      s = vx_svo_decode(p, (size_t)e->length, opts, out, &fi, err);
    }
  }
  vx_free(buf);
  if (s != VX_OK) return s;
  const vx_node *r = &t->top.nodes[t->top.level_first[t->h.depth - t->h.tile_depth] + i];
  s = tile_as_indexed(t, i, out, &fi, err);
  if (s == VX_OK && (out->nodes[0].info != r->info || out->nodes[0].normal != r->normal ||
                     !tl_same_f32(out->nodes[0].d, r->d)))
    s = vx_error_set(err, VX_ERR_CORRUPT, "%s: tile %llu's root disagrees with the top tree",
                     t->name, (unsigned long long)i);
  if (s == VX_OK && t->h.color) s = tile_colors(t, i, out, err);
  if (s != VX_OK) vx_octree_free(out);
  return s;
}

vx_status vx_tiled_stitch(vx_tiled *t, const vx_svo_read_opts *opts, vx_octree *out,
                          vx_error *err) {
  memset(out, 0, sizeof *out);
  const uint32_t D = t->h.depth, T = t->h.tile_depth, K = D - T;
  if (D > VX_MAX_DEPTH)
    return vx_error_set(err, VX_ERR_LIMIT, "%s: a %u^3 tiled tree is finer than one tree holds "
                        "(%u^3): `voxlod stats --tiles` and the library's vx_tiled_file calls "
                        "read it tile by tile", t->name, 1u << D, 1u << VX_MAX_DEPTH);
  /* levels 0 .. L: below K from the top tree alone, else the tiles' levels 0 .. L - K too */
  const uint32_t L = opts && opts->max_level >= 0 && (uint32_t)opts->max_level < D
                         ? (uint32_t)opts->max_level
                         : D;
  const uint64_t limit = opts && opts->mem_limit ? opts->mem_limit : t->mem_limit;
  vx_status s = VX_OK;
  out->depth = D;
  out->levels_loaded = L + 1;
  out->band = t->h.band;
  out->prune_error = t->h.prune_error;
  out->xf = t->h.xf;
  for (uint32_t l = 0; l <= K; l++) out->level_count[l] = t->top.level_count[l];
  if (L >= K) { /* the deeper levels' sizes, from the tiles' header frames */
    for (uint32_t l = K; l <= D; l++) out->level_count[l] = 0;
    for (uint64_t i = 0; i < t->n && s == VX_OK; i++) {
      vx_octree hd;
      vx_svo_file_info fi;
      if ((s = vx_tiled_tile_header(t, i, &hd, &fi, err)) != VX_OK) break;
      for (uint32_t l = 0; l <= T; l++) out->level_count[K + l] += hd.level_count[l];
    }
  } else { /* level L's masks name level L + 1: the top tree's counts say how many */
    out->level_count[L + 1] = t->top.level_count[L + 1];
  }
  if (s == VX_OK) s = vx_octree_layout(out, err);
  const int color = t->h.color != 0;
  const double need = (color ? 20.0 : 16.0) * (double)out->node_count +
                      (color && L == D ? 12.0 : 8.0) * (double)out->voxel_count;
  if (s == VX_OK && need > (double)limit)
    s = vx_error_set(err, VX_ERR_LIMIT, "%s: levels 0..%u need %.1f MiB, over the memory limit "
                     "of %.1f MiB", t->name, L, need / 1048576.0, (double)limit / 1048576.0);
  if (s == VX_OK) s = vx_octree_alloc(out, err);
  if (s == VX_OK && color) {
    out->node_color = (uint32_t *)vx_malloc((size_t)(out->node_count ? out->node_count : 1) * 4);
    if (L == D)
      out->voxel_color = (uint32_t *)vx_malloc((size_t)(out->voxel_count ? out->voxel_count : 1) * 4);
    if (!out->node_color || (L == D && !out->voxel_color))
      s = vx_error_set(err, VX_ERR_NOMEM, "out of memory for the colours");
  }
  if (s == VX_OK) {
    const uint32_t top_levels = L < K ? L + 1 : K;
    const size_t top_n = (size_t)(t->top.level_first[top_levels - 1] +
                                  t->top.level_count[top_levels - 1]);
    memcpy(out->nodes, t->top.nodes, top_n * sizeof(vx_node));
    if (color) memcpy(out->node_color, t->top.node_color, top_n * sizeof(uint32_t));
  }
  uint64_t at[VX_MAX_DEPTH + 1];
  for (uint32_t l = 0; l <= D; l++) at[l] = 0;
  vx_svo_read_opts part = {L == D ? -1 : (int)(L - K), limit, 0, 0};
  vx_octree tile;
  for (uint64_t i = 0; L >= K && i < t->n && s == VX_OK; i++) {
    if ((s = vx_tiled_read_tile(t, i, &part, &tile, err)) != VX_OK) break;
    for (uint32_t l = 0; K + l <= L && s == VX_OK; l++) {
      const uint64_t c = tile.level_count[l];
      if (at[K + l] + c > out->level_count[K + l]) {
        s = vx_error_set(err, VX_ERR_CORRUPT, "%s: tile %llu changed while read",
                         t->name, (unsigned long long)i);
      } else if (c == 0) { /* a pruned tile's levels may be empty */
      } else if (l < T) {
        const uint64_t o = out->level_first[K + l] + at[K + l];
        memcpy(out->nodes + o, tile.nodes + tile.level_first[l], (size_t)c * sizeof(vx_node));
        if (color) memcpy(out->node_color + o, tile.node_color + tile.level_first[l], (size_t)c * 4);
      } else {
        memcpy(out->voxels + at[D], tile.voxels, (size_t)c * sizeof(vx_voxel));
        if (color) memcpy(out->voxel_color + at[D], tile.voxel_color, (size_t)c * 4);
      }
      at[K + l] += c;
    }
    vx_octree_free(&tile);
  }
  if (s == VX_OK) s = vx_octree_link(out, err);
  if (s == VX_OK) s = vx_octree_validate(out, err);
  if (s != VX_OK) vx_octree_free(out);
  return s;
}
