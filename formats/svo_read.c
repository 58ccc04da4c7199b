/* SPDX-License-Identifier: Apache-2.0 */
/* svo_read.c - decoding a .svo file: a fixed little-endian prologue, a header in a checksummed
 * zstd frame, then one checksummed zstd frame per level (docs/SVO_FORMAT.md is the byte map).
 *
 * Decoding distrusts every byte. Before any allocation: magic, version, flags, the header frame
 * (checksum verified by zstd), depth, finite transform and band, level counts against the octree's
 * bounds (count[0] = 1, count[l] <= 8^l, count[l+1] <= 8 count[l]), each section's declared raw
 * size against count * record size, the sum of section sizes against the file size (exactly: a
 * truncated or padded file is rejected) and the decoded total against the memory limit. Each
 * section must be exactly one zstd frame with a content checksum and the declared content size.
 * After decoding, vx_octree_link() and vx_octree_validate() must pass. Every failure frees what was
 * allocated and leaves the output tree zeroed.
 *
 * Colour (prologue flag bit 0): a colour entry per level after the level entries, each with the
 * level's count, and the colour sections after the level sections, decoded for the loaded levels
 * once the level sections have proven their counts; unknown flags are a newer writer's features
 * (VX_ERR_VERSION).
 *
 * Integrity: besides zstd's content checksum, the header stores for each frame the low 32 bits of
 * XXH64 of the frame's compressed bytes (svo_codec.h's checker), so that a damaged byte that would
 * still decode to the same content is rejected too: every single-byte change of a file is
 * detected.
 */
#define _FILE_OFFSET_BITS 64
#define _POSIX_C_SOURCE 200809L
#include "formats/svo_file.h"
#include "formats/svo_codec.h"
#include "formats/svo_tiled.h"
#include "sys/system.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The check of n bytes (svo_codec.h's checker, in one call). */
int vx_svo_bytes_check(ZSTD_CCtx *cc, const uint8_t *p, uint64_t n, uint32_t *check) {
  vx_svo_checker c;
  c.cc = cc;
  if (!vx_svo_check_begin(&c) || !vx_svo_check_feed(&c, p, (size_t)n, ZSTD_e_end)) return 0;
  *check = vx_svo_check_value(&c);
  return 1;
}

static void *bg_check_run(void *arg) {
  vx_svo_bg_check *c = (vx_svo_bg_check *)arg;
  c->ok = vx_svo_bytes_check(c->cc, c->p, c->n, &c->check);
  return NULL;
}

void vx_svo_check_start(vx_svo_bg_check *c, ZSTD_CCtx *cc, const uint8_t *p, uint64_t n,
                        int beside) {
  c->cc = cc;
  c->p = p;
  c->n = n;
  c->check = 0;
  c->ok = 0;
  c->threaded = beside && pthread_create(&c->th, NULL, bg_check_run, c) == 0;
  if (!c->threaded) bg_check_run(c);
}

int vx_svo_check_join(vx_svo_bg_check *c) {
  if (c->threaded) pthread_join(c->th, NULL);
  c->threaded = 0;
  return c->ok;
}

vx_status vx_svo_encoded_check(const uint8_t *data, size_t size, uint32_t *check, vx_error *err) {
  ZSTD_CCtx *cc = vx_zstd_cctx();
  const int ok = cc && vx_svo_bytes_check(cc, data, size, check);
  ZSTD_freeCCtx(cc);
  return ok ? VX_OK : vx_error_set(err, VX_ERR_NOMEM, "checksumming %zu bytes: out of memory",
                                   size);
}

struct vx_check32_stream {
  vx_svo_checker c;
  int ok;
};

vx_check32_stream *vx_check32_begin(void) {
  vx_check32_stream *c = (vx_check32_stream *)vx_malloc(sizeof *c);
  if (!c) return NULL;
  c->c.cc = vx_zstd_cctx();
  c->ok = c->c.cc && vx_svo_check_begin(&c->c);
  return c;
}

int vx_check32_feed(vx_check32_stream *c, const void *p, size_t n) {
  if (c && c->ok) c->ok = vx_svo_check_feed(&c->c, p, n, ZSTD_e_continue);
  return c && c->ok;
}

int vx_check32_end(vx_check32_stream *c, uint32_t *check) {
  if (!c) return 0;
  const int ok = c->ok && vx_svo_check_feed(&c->c, NULL, 0, ZSTD_e_end);
  if (ok) *check = vx_svo_check_value(&c->c);
  ZSTD_freeCCtx(c->c.cc);
  vx_free(c);
  return ok;
}

void vx_svo_unpack_records(const uint8_t *mask, const uint8_t *rec, uint64_t k, vx_node *n) {
  for (uint64_t i = 0; i < k; i++, rec += 11) {
    n[i].child = 0;
    n[i].info = vx_node_info(mask[i], rec[0], rec[1], rec[2]);
    n[i].normal = vx_get_u32(rec + 3);
    n[i].d = vx_get_f32(rec + 7);
  }
}

void vx_svo_unpack_nodes(const uint8_t *raw, uint64_t count, vx_node *n) {
  vx_svo_unpack_records(raw, raw + count, count, n);
}

/* Version 1 defined flags bits 0 and 1 only; bits 2..7 (the drawn-plane bound code) came with
 * version 2. */
static vx_status no_bound_codes(const vx_node *n, uint64_t count, const char *name,
                                const char *what, vx_error *err) {
  for (uint64_t i = 0; i < count; i++)
    if (vx_node_bound_code(n[i].info) != 0)
      return vx_error_set(err, VX_ERR_CORRUPT, "%s: %s node %llu: unknown flags 0x%x in a "
                          "version-1 file", name, what, (unsigned long long)i,
                          vx_node_flags(n[i].info));
  return VX_OK;
}

/* Voxels as they are: 8 corners (int8) per voxel, in Morton order (written straight from memory). */
static void unpack_voxels(const uint8_t *raw, uint64_t count, vx_voxel *v) {
  for (uint64_t i = 0; i < count; i++)
    for (int k = 0; k < 8; k++) v[i].c[k] = (int8_t)raw[8 * i + (uint64_t)k];
}

/* ---- decoding ------------------------------------------------------------------------------ */

/* Where the bytes come from: memory (zero-copy) or an open file (read into a scratch buffer). */
typedef struct svo_src {
  const uint8_t *mem;
  FILE *f;
  uint64_t base;      /* the file offset of byte 0 (a tile inside a tiled file) */
  int header_only;    /* stop once the header is checked: counts, no arrays */
  uint64_t size;
  const char *name;
  uint8_t *scratch;
  size_t scratch_cap;
} svo_src;

/* Reads of at least this many bytes are made side by side. */
#define BIG_READ ((uint64_t)32 << 20)

static vx_status src_get(svo_src *s, uint64_t off, uint64_t n, const uint8_t **out, vx_error *err) {
  if (off > s->size || n > s->size - off)
    return vx_error_set(err, VX_ERR_CORRUPT, "%s: truncated (needs %llu bytes, has %llu)", s->name,
                        (unsigned long long)(off + n), (unsigned long long)s->size);
  if (s->mem) {
    *out = s->mem + off;
    return VX_OK;
  }
  if (n > s->scratch_cap) {
    uint8_t *b = (uint8_t *)vx_realloc(s->scratch, n ? (size_t)n : 1);
    if (!b)
      return vx_error_set(err, VX_ERR_NOMEM, "%s: cannot allocate %.1f MiB to read a section",
                          s->name, (double)n / 1048576.0);
    s->scratch = b;
    s->scratch_cap = (size_t)n;
  }
  if (n >= BIG_READ) { /* side by side (sys/system.h) */
    const int r = vx_read_at(fileno(s->f), s->scratch, n, s->base + off, 0);
    if (r != 0)
      return vx_error_set(err, r > 0 ? VX_ERR_IO : VX_ERR_CORRUPT, "%s: cannot read %llu bytes at "
                          "%llu%s%s", s->name, (unsigned long long)n, (unsigned long long)off,
                          r > 0 ? ": " : " (truncated)", r > 0 ? strerror(r) : "");
  } else if (fseeko(s->f, (off_t)(s->base + off), SEEK_SET) != 0 ||
             fread(s->scratch, 1, (size_t)n, s->f) != n) {
    return vx_error_set(err, ferror(s->f) ? VX_ERR_IO : VX_ERR_CORRUPT, "%s: cannot read %llu bytes at %llu%s%s",
                        s->name, (unsigned long long)n, (unsigned long long)off,
                        ferror(s->f) ? ": " : " (truncated)", ferror(s->f) ? strerror(errno) : "");
  }
  *out = s->scratch;
  return VX_OK;
}

const char *vx_svo_frame_problem(const uint8_t *z, uint64_t zsize, uint64_t raw, const char **why) {
  static const uint8_t zmagic[4] = {0x28, 0xb5, 0x2f, 0xfd};
  if (why) *why = NULL;
  if (zsize < 6 || memcmp(z, zmagic, 4) != 0) return "is not a zstd frame";
  uint8_t fhd = z[4];
  if (!(fhd & 0x04) || (fhd & 0x03)) return "lacks its checksum";
  unsigned long long fcs = ZSTD_getFrameContentSize(z, (size_t)zsize);
  if (fcs == ZSTD_CONTENTSIZE_ERROR || fcs == ZSTD_CONTENTSIZE_UNKNOWN || fcs != raw)
    return "declares the wrong size";
  size_t fz = ZSTD_findFrameCompressedSize(z, (size_t)zsize);
  if (ZSTD_isError(fz) || fz != zsize) {
    if (why) *why = ZSTD_isError(fz) ? ZSTD_getErrorName(fz) : "frame size mismatch";
    return "is damaged";
  }
  return NULL;
}

/* Decompresses exactly one zstd frame of `zsize` bytes that must carry a content checksum and
 * declare `raw` content bytes into dst. */
vx_status vx_svo_unframe(ZSTD_DCtx *dc, const uint8_t *z, uint64_t zsize, uint8_t *dst, uint64_t raw,
                         const char *name, const char *what, vx_error *err) {
  const char *why, *problem = vx_svo_frame_problem(z, zsize, raw, &why);
  if (problem && why)
    return vx_error_set(err, VX_ERR_CORRUPT, "%s: %s %s (%s)", name, what, problem, why);
  if (problem) return vx_error_set(err, VX_ERR_CORRUPT, "%s: %s %s", name, what, problem);
  uint8_t dummy;
  size_t r = ZSTD_decompressDCtx(dc, raw ? dst : &dummy, (size_t)raw, z, (size_t)zsize);
  if (ZSTD_isError(r) || r != raw)
    return vx_error_set(err, VX_ERR_CORRUPT, "%s: %s is damaged (%s)", name, what,
                        ZSTD_isError(r) ? ZSTD_getErrorName(r) : "short");
  return VX_OK;
}

/* The stored check of a frame's compressed bytes must match. */
static vx_status checked(ZSTD_CCtx *ck, const uint8_t *z, uint64_t n, uint32_t want,
                         const char *name, const char *what, vx_error *err) {
  uint32_t got = 0;
  if (!vx_svo_bytes_check(ck, z, n, &got))
    return vx_error_set(err, VX_ERR_NOMEM, "%s: cannot checksum %s", name, what);
  if (got != want)
    return vx_error_set(err, VX_ERR_CORRUPT, "%s: %s is damaged (checksum mismatch)", name, what);
  return VX_OK;
}

/* The sections of a partial read that were not decoded, each against its check32: levels
 * `levels` .. D from file offset `at` (then, coloured, the colour sections of those levels),
 * read in pieces of at most 4 MiB. */
static vx_status check_rest(svo_src *src, ZSTD_CCtx *ck, const vx_octree *t, int color,
                            const uint64_t *zsize, const uint32_t *zcheck, uint32_t levels,
                            uint64_t at, vx_error *err) {
  const uint32_t csec = t->depth + 1, nsec = color ? 2 * csec : csec;
  vx_status s = VX_OK;
  for (uint32_t k = 0; k < nsec && s == VX_OK; k++) {
    const uint32_t l = k < csec ? k : k - csec;
    if (l >= levels) {
      vx_svo_checker c;
      c.cc = ck;
      if (!vx_svo_check_begin(&c)) return vx_error_set(err, VX_ERR_NOMEM, "%s: cannot checksum", src->name);
      for (uint64_t done = 0; s == VX_OK && done < zsize[k];) {
        const uint64_t n = zsize[k] - done < (4u << 20) ? zsize[k] - done : (4u << 20);
        const uint8_t *p;
        if ((s = src_get(src, at + done, n, &p, err)) != VX_OK) break;
        if (!vx_svo_check_feed(&c, p, (size_t)n, ZSTD_e_continue))
          s = vx_error_set(err, VX_ERR_NOMEM, "%s: cannot checksum", src->name);
        done += n;
      }
      if (s == VX_OK && !vx_svo_check_feed(&c, NULL, 0, ZSTD_e_end))
        s = vx_error_set(err, VX_ERR_NOMEM, "%s: cannot checksum", src->name);
      if (s == VX_OK && vx_svo_check_value(&c) != zcheck[k])
        s = vx_error_set(err, VX_ERR_CORRUPT, "%s: %s %u is damaged (checksum mismatch)",
                         src->name, k < csec ? "level" : "the colours of level", l);
    }
    at += zsize[k];
  }
  return s;
}

/* The colour sections of levels 0 .. levels-1, the first at file offset `at`, into new
 * node_color / voxel_color arrays sized by the counts the level sections proved. raw holds the
 * largest loaded level section, hence any of these colour sections (4 bytes a cell, less than a
 * node's 12 or a voxel's 8). */
static vx_status decode_colors(svo_src *src, ZSTD_DCtx *dc, ZSTD_CCtx *ck, vx_octree *t,
                               const uint64_t *zsize, const uint32_t *zcheck, uint32_t levels,
                               uint64_t at, uint8_t *raw, vx_error *err) {
  const char *name = src->name;
  const uint32_t D = t->depth, csec = D + 1;
  if (t->node_count &&
      !(t->node_color = (uint32_t *)vx_malloc((size_t)t->node_count * sizeof(uint32_t))))
    return vx_error_set(err, VX_ERR_NOMEM, "%s: cannot allocate %llu node colours", name,
                        (unsigned long long)t->node_count);
  if (t->voxel_count &&
      !(t->voxel_color = (uint32_t *)vx_malloc((size_t)t->voxel_count * sizeof(uint32_t))))
    return vx_error_set(err, VX_ERR_NOMEM, "%s: cannot allocate %llu voxel colours", name,
                        (unsigned long long)t->voxel_count);
  for (uint32_t l = 0; l < levels; l++) {
    char what[40];
    snprintf(what, sizeof what, "the colours of level %u", l);
    const uint8_t *p;
    vx_status s;
    if ((s = src_get(src, at, zsize[csec + l], &p, err)) != VX_OK ||
        (s = checked(ck, p, zsize[csec + l], zcheck[csec + l], name, what, err)) != VX_OK ||
        (s = vx_svo_unframe(dc, p, zsize[csec + l], raw, t->level_count[l] * VX_SVO_COLOR_RECORD, name,
                     what, err)) != VX_OK)
      return s;
    vx_svo_unpack_colors(raw, t->level_count[l], l ? t->nodes + t->level_first[l - 1] : NULL,
                         l ? t->node_color + t->level_first[l - 1] : NULL,
                         l ? t->level_count[l - 1] : 0,
                         l < D ? t->node_color + t->level_first[l] : t->voxel_color);
    at += zsize[csec + l];
  }
  return VX_OK;
}

/* Trees of at least this many decoded bytes are decoded section by section side by side. */
#define WHOLE_RAW ((uint64_t)4 << 20)

/* The loaded levels of a large tree, every section at once (vx_svo_decode_levels), where its
 * memory (`need` bytes besides the sections' buffers) allows: 1 when t has its arrays. The
 * sections start at byte `first`; a file's are read first, in one piece. Otherwise (0) nothing
 * is allocated and the caller goes level by level. */
static int decode_whole(svo_src *src, const vx_svo_read_opts *opts, vx_octree *t,
                        uint32_t version, uint32_t levels, uint64_t first, const uint64_t *zsize,
                        const uint32_t *zcheck, uint64_t need, uint64_t limit) {
  const int threads = opts ? opts->threads : 0;
  if (threads == 1 || version < 2) return 0;
  uint64_t raw = 0, zall = 0, color_raw = 0;
  for (uint32_t l = 0; l < levels; l++) {
    raw += t->level_count[l] * (l < t->depth ? VX_SVO_NODE_RECORD : VX_SVO_VOXEL_RECORD);
    zall += zsize[l];
    if (t->level_count[l] * VX_SVO_COLOR_RECORD > color_raw)
      color_raw = t->level_count[l] * VX_SVO_COLOR_RECORD;
  }
  need += (src->mem ? 0 : zall) + t->node_count /* masks */ + color_raw;
  if ((threads <= 0 && raw < WHOLE_RAW) || need > limit) return 0;
  const uint8_t *p, *z[VX_MAX_DEPTH + 1];
  vx_error e;
  if (src_get(src, first, zall, &p, &e) != VX_OK) return 0;
  for (uint32_t l = 0; l < levels; p += zsize[l], l++) z[l] = p;
  return vx_svo_decode_levels(t, levels, z, zsize, zcheck, threads) == VX_OK;
}

/* The colour sections of the levels loaded, side by side (vx_svo_decode_colors), after
 * decode_whole: 1 when t has its colours. They start at byte `at`; `need` bytes are held besides
 * their buffers. Otherwise (0) nothing is allocated and the caller reads them one by one. */
static int colors_whole(svo_src *src, const vx_svo_read_opts *opts, vx_octree *t,
                        uint32_t levels, uint64_t at, const uint64_t *zsize,
                        const uint32_t *zcheck, uint64_t need, uint64_t limit) {
  uint64_t zall = 0;
  for (uint32_t l = 0; l < levels; l++) {
    need += t->level_count[l] * VX_SVO_COLOR_RECORD;
    zall += zsize[l];
  }
  if (need + (src->mem ? 0 : zall) > limit) return 0;
  const uint8_t *p, *z[VX_MAX_DEPTH + 1];
  vx_error e;
  if (src_get(src, at, zall, &p, &e) != VX_OK) return 0;
  for (uint32_t l = 0; l < levels; p += zsize[l], l++) z[l] = p;
  return vx_svo_decode_colors(t, z, zsize, zcheck, opts ? opts->threads : 0) == VX_OK;
}

static int finite_d(double v) { return v == v && v <= 1.7e308 && v >= -1.7e308; }

static vx_status decode(svo_src *src, const vx_svo_read_opts *opts, vx_octree *t, vx_svo_file_info *info,
                        vx_error *err) {
  const char *name = src->name;
  const uint8_t *p;
  vx_status s;
  size_t have = src->size < 8 ? (size_t)src->size : 8;
  if (have == 0) return vx_error_set(err, VX_ERR_FORMAT, "%s: empty file, not a .svo", name);
  if ((s = src_get(src, 0, have, &p, err)) != VX_OK) return s;
  if (memcmp(p, VX_SVO_MAGIC, have) != 0) {
    if (have >= 5 && memcmp(p, VX_SVO_MAGIC, 5) == 0)
      return vx_error_set(err, VX_ERR_CORRUPT, "%s: damaged .svo signature", name);
    return vx_error_set(err, VX_ERR_FORMAT, "%s: not a voxlod .svo file (bad signature)", name);
  }
  if (src->size < VX_SVO_PROLOGUE)
    return vx_error_set(err, VX_ERR_CORRUPT, "%s: truncated .svo file (%llu bytes)", name,
                        (unsigned long long)src->size);
  if ((s = src_get(src, 0, VX_SVO_PROLOGUE, &p, err)) != VX_OK) return s;
  uint32_t version = vx_get_u32(p + 8), flags = vx_get_u32(p + 12);
  uint32_t hz = vx_get_u32(p + 16), hraw = vx_get_u32(p + 20);
  uint32_t hcheck = vx_get_u32(p + 24), preserved = vx_get_u32(p + 28);
  if (info) {
    memset(info, 0, sizeof *info);
    info->version = version;
    info->file_bytes = src->size;
  }
  if (version == VX_SVO_TILED_VERSION)
    return vx_error_set(err, VX_ERR_FORMAT,
                        "%s: a tiled tree (file version %u): its tiles are read one by one "
                        "(formats/svo_tiled.h)", name, version);
  if (version > VX_SVO_VERSION)
    return vx_error_set(err, VX_ERR_VERSION,
                        "%s: made by a newer voxlod (file version %u, this reads up to %u)", name,
                        version, VX_SVO_VERSION);
  if (version == 0) return vx_error_set(err, VX_ERR_CORRUPT, "%s: file version 0 is invalid", name);
  /* Flags came with version 2: version 1 has none. A version-2 flag this reader does not know
   * is a feature of a newer writer, not damage. */
  if (preserved != 0 || (version < 2 && flags != 0))
    return vx_error_set(err, VX_ERR_CORRUPT, "%s: unknown flags 0x%x in a version-%u file", name,
                        flags, version);
  if (flags & ~VX_SVO_FLAGS_KNOWN)
    return vx_error_set(err, VX_ERR_VERSION,
                        "%s: uses features this reader does not know (flags 0x%x): made by a "
                        "newer voxlod", name, flags & ~VX_SVO_FLAGS_KNOWN);
  const int color = (flags & VX_SVO_FLAG_COLOR) != 0;
  if (hraw < vx_svo_header_size(VX_MIN_DEPTH, 0) || hraw > vx_svo_header_size(VX_MAX_DEPTH, color) ||
      (hraw - VX_SVO_HEADER_FIXED) % VX_SVO_LEVEL_ENTRY != 0 || hz > VX_SVO_MAX_HEADER_FRAME)
    return vx_error_set(err, VX_ERR_CORRUPT, "%s: header sizes %u/%u are impossible", name, hz, hraw);
  uint8_t hdr[VX_SVO_MAX_HEADER];
  ZSTD_DCtx *dc = vx_zstd_dctx();
  ZSTD_CCtx *ck = vx_zstd_cctx();
  if (!dc || !ck) {
    ZSTD_freeDCtx(dc);
    ZSTD_freeCCtx(ck);
    return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  }
  if ((s = src_get(src, VX_SVO_PROLOGUE, hz, &p, err)) != VX_OK ||
      (s = checked(ck, p, hz, hcheck, name, "the header", err)) != VX_OK ||
      (s = vx_svo_unframe(dc, p, hz, hdr, hraw, name, "the header", err)) != VX_OK) {
    ZSTD_freeDCtx(dc);
    ZSTD_freeCCtx(ck);
    return s;
  }
  memset(t, 0, sizeof *t);
  t->depth = vx_get_u32(hdr);
  t->band = vx_get_f32(hdr + 4);
  t->prune_error = vx_get_f32(hdr + 8);
  uint32_t reserved = vx_get_u32(hdr + 12);
  for (int i = 0; i < 3; i++) t->xf.origin[i] = vx_get_f64(hdr + 16 + 8 * i);
  t->xf.scale = vx_get_f64(hdr + 40);
  s = VX_OK;
  if (t->depth >= VX_MIN_DEPTH && t->depth <= VX_MAX_DEPTH && color &&
      vx_svo_header_size(t->depth, 0) == hraw)
    s = vx_error_set(err, VX_ERR_CORRUPT, "%s: the colour flag is set but the header has no "
                     "colour entries", name);
  else if (t->depth < VX_MIN_DEPTH || t->depth > VX_MAX_DEPTH ||
           vx_svo_header_size(t->depth, color) != hraw)
    s = vx_error_set(err, VX_ERR_CORRUPT, "%s: depth %u is out of range or disagrees with the header", name, t->depth);
  else if (reserved != 0)
    s = vx_error_set(err, VX_ERR_CORRUPT, "%s: reserved header field is %u, not 0", name, reserved);
  else if (!(t->band > 0.0f) || !(t->band < 1e6f) || !(t->prune_error >= 0.0f) ||
           !(t->prune_error < 1e30f))
    s = vx_error_set(err, VX_ERR_CORRUPT, "%s: field band %g or prune error %g is invalid", name,
                     t->band, t->prune_error);
  else if (!finite_d(t->xf.origin[0]) || !finite_d(t->xf.origin[1]) || !finite_d(t->xf.origin[2]) ||
           !(t->xf.scale > 0.0) || !finite_d(t->xf.scale))
    s = vx_error_set(err, VX_ERR_CORRUPT, "%s: grid-to-world transform is not finite", name);
  /* Section sizes and checks in file order: levels 0 .. D, then (colour) colours of 0 .. D. */
  uint64_t zsize[VX_SVO_MAX_SECTIONS];
  uint32_t zcheck[VX_SVO_MAX_SECTIONS];
  uint64_t offset = (uint64_t)VX_SVO_PROLOGUE + hz, end = offset;
  for (uint32_t l = 0; s == VX_OK && l <= t->depth; l++) {
    const uint8_t *e = hdr + VX_SVO_HEADER_FIXED + VX_SVO_LEVEL_ENTRY * l;
    uint64_t count = vx_get_u64(e), z = vx_get_u64(e + 8), raw = vx_get_u64(e + 16);
    zcheck[l] = vx_get_u32(e + 24);
    uint64_t rec = l < t->depth ? VX_SVO_NODE_RECORD : VX_SVO_VOXEL_RECORD;
    if (vx_get_u32(e + 28) != 0)
      s = vx_error_set(err, VX_ERR_CORRUPT, "%s: level %u: reserved field is not 0", name, l);
    else if (l == 0 && count != 1)
      s = vx_error_set(err, VX_ERR_CORRUPT, "%s: level 0 holds %llu nodes, not 1", name, (unsigned long long)count);
    else if (count > (UINT64_C(1) << (3 * l)) || (l > 0 && count > 8 * t->level_count[l - 1]))
      s = vx_error_set(err, VX_ERR_CORRUPT, "%s: level %u holds %llu cells, more than its parents allow",
                       name, l, (unsigned long long)count);
    else if (raw != count * rec)
      s = vx_error_set(err, VX_ERR_CORRUPT, "%s: level %u declares %llu bytes for %llu cells", name, l,
                       (unsigned long long)raw, (unsigned long long)count);
    else if (z > src->size || end > src->size - z)
      s = vx_error_set(err, VX_ERR_CORRUPT, "%s: truncated: level %u ends past the end of the file (%llu bytes)",
                       name, l, (unsigned long long)src->size);
    t->level_count[l] = count;
    zsize[l] = z;
    if (info && s == VX_OK) info->level_disk_bytes[l] = z;
    end += z;
  }
  const uint32_t csec = t->depth + 1; /* colour section of level l: csec + l */
  for (uint32_t l = 0; s == VX_OK && color && l <= t->depth; l++) {
    const uint8_t *e = hdr + VX_SVO_HEADER_FIXED + VX_SVO_LEVEL_ENTRY * (csec + l);
    uint64_t count = vx_get_u64(e), z = vx_get_u64(e + 8), raw = vx_get_u64(e + 16);
    zcheck[csec + l] = vx_get_u32(e + 24);
    if (vx_get_u32(e + 28) != 0)
      s = vx_error_set(err, VX_ERR_CORRUPT, "%s: colours of level %u: reserved field is not 0",
                       name, l);
    else if (count != t->level_count[l])
      s = vx_error_set(err, VX_ERR_CORRUPT, "%s: colours of level %u: %llu colours for %llu cells",
                       name, l, (unsigned long long)count, (unsigned long long)t->level_count[l]);
    else if (raw != count * VX_SVO_COLOR_RECORD)
      s = vx_error_set(err, VX_ERR_CORRUPT, "%s: colours of level %u declare %llu bytes for %llu "
                       "cells", name, l, (unsigned long long)raw, (unsigned long long)count);
    else if (z > src->size || end > src->size - z)
      s = vx_error_set(err, VX_ERR_CORRUPT, "%s: truncated: the colours of level %u end past the "
                       "end of the file (%llu bytes)", name, l, (unsigned long long)src->size);
    zsize[csec + l] = z;
    if (info && s == VX_OK) info->level_color_disk_bytes[l] = z;
    end += z;
  }
  if (info) info->flags = flags;
  if (info) info->header_bytes = (uint64_t)VX_SVO_PROLOGUE + hz;
  if (s == VX_OK && end != src->size)
    s = vx_error_set(err, VX_ERR_CORRUPT, "%s: file has %llu bytes but its header describes %llu", name,
                     (unsigned long long)src->size, (unsigned long long)end);
  if (s == VX_OK && src->header_only) { /* the counts and sizes, proven against the size */
    ZSTD_freeDCtx(dc);
    ZSTD_freeCCtx(ck);
    t->levels_loaded = 0;
    return VX_OK;
  }
  /* Levels to load, and the memory they need, before any allocation. */
  uint32_t levels = t->depth + 1;
  if (opts && opts->max_level >= 0 && (uint32_t)opts->max_level < t->depth)
    levels = (uint32_t)opts->max_level + 1;
  uint64_t raw_max = 0, z_max = 0;
  for (uint32_t l = 0; s == VX_OK && l < levels; l++) {
    uint64_t rec = l < t->depth ? VX_SVO_NODE_RECORD : VX_SVO_VOXEL_RECORD;
    if (t->level_count[l] * rec > raw_max) raw_max = t->level_count[l] * rec;
    if (zsize[l] > z_max) z_max = zsize[l];
    if (color && t->level_count[l] * VX_SVO_COLOR_RECORD > raw_max)
      raw_max = t->level_count[l] * VX_SVO_COLOR_RECORD;
    if (color && zsize[csec + l] > z_max) z_max = zsize[csec + l];
  }
  if (s == VX_OK) {
    t->levels_loaded = levels;
    s = vx_octree_layout(t, err); /* counts, offsets; no allocation */
  }
  uint64_t limit = opts && opts->mem_limit ? opts->mem_limit : vx_default_mem_limit();
  uint64_t need = t->node_count * sizeof(vx_node) + t->voxel_count * sizeof(vx_voxel) + raw_max +
                  (src->mem ? 0 : z_max);
  if (color) need += (t->node_count + t->voxel_count) * VX_SVO_COLOR_RECORD;
  if (s == VX_OK && need > limit) {
    char a[32], b[32];
    s = vx_error_set(err, VX_ERR_LIMIT, "%s: loading needs %s, over the %s limit", name,
                     vx_bytes_text((double)need, a, sizeof a),
                     vx_bytes_text((double)limit, b, sizeof b));
  }
  /* Level by level, memory growing with what has been proven: level l+1 is allocated only after
   * the masks of level l, just decoded, name exactly its declared count. A file whose header
   * claims far more cells than its sections hold is refused at the first level that disagrees,
   * having cost that level's bytes, not the whole claim (a decompression bomb). */
  uint8_t *raw = NULL;
  size_t raw_cap = 0;
  uint64_t node_cap = 0;
  const uint64_t node_count = t->node_count, voxel_count = t->voxel_count;
  const int whole = s == VX_OK && decode_whole(src, opts, t, version, levels, offset, zsize, zcheck,
                                               need - raw_max - (src->mem ? 0 : z_max), limit);
  if (info) info->side_by_side = whole;
  if (!whole) {
    t->node_count = 0;
    t->voxel_count = 0;
  }
  for (uint32_t l = 0; !whole && s == VX_OK && l < levels; l++) {
    char what[32];
    snprintf(what, sizeof what, "level %u", l);
    uint64_t rs = t->level_count[l] * (l < t->depth ? VX_SVO_NODE_RECORD : VX_SVO_VOXEL_RECORD);
    if (rs > raw_cap) {
      uint8_t *r = (uint8_t *)vx_realloc(raw, (size_t)rs);
      if (!r) {
        s = vx_error_set(err, VX_ERR_NOMEM, "%s: cannot allocate %.1f MiB to decode %s", name,
                         (double)rs / 1048576.0, what);
        break;
      }
      raw = r;
      raw_cap = (size_t)rs;
    }
    if (l < t->depth) {
      uint64_t want = t->level_first[l] + t->level_count[l];
      if (want > node_cap) {
        vx_node *n = (vx_node *)vx_realloc(t->nodes, (size_t)want * sizeof(vx_node));
        if (!n) {
          s = vx_error_set(err, VX_ERR_NOMEM, "%s: cannot allocate %llu nodes (%.1f MiB)", name,
                           (unsigned long long)want, (double)want * 16.0 / 1048576.0);
          break;
        }
        t->nodes = n;
        node_cap = want;
        t->node_count = want;
      }
    } else {
      t->voxels = (vx_voxel *)vx_malloc((size_t)voxel_count * sizeof(vx_voxel));
      if (!t->voxels) {
        s = vx_error_set(err, VX_ERR_NOMEM, "%s: cannot allocate %llu voxels (%.1f MiB)", name,
                         (unsigned long long)voxel_count, (double)voxel_count * 8.0 / 1048576.0);
        break;
      }
      t->voxel_count = voxel_count;
    }
    if ((s = src_get(src, offset, zsize[l], &p, err)) != VX_OK) break;
    if ((s = checked(ck, p, zsize[l], zcheck[l], name, what, err)) != VX_OK) break;
    if ((s = vx_svo_unframe(dc, p, zsize[l], raw, rs, name, what, err)) != VX_OK) break;
    if (l < t->depth) {
      vx_node *lv = t->nodes + t->level_first[l];
      vx_svo_unpack_nodes(raw, t->level_count[l], lv);
      if (version < 2 && (s = no_bound_codes(lv, t->level_count[l], name, what, err)) != VX_OK)
        break;
      uint64_t children = 0;
      for (uint64_t i = 0; i < t->level_count[l]; i++) children += vx_popcount8(vx_node_mask(lv[i].info));
      if (children != t->level_count[l + 1]) {
        s = vx_error_set(err, VX_ERR_CORRUPT,
                         "%s: level %u: the masks name %llu children but level %u declares %llu",
                         name, l, (unsigned long long)children, l + 1,
                         (unsigned long long)t->level_count[l + 1]);
        break;
      }
    } else {
      unpack_voxels(raw, t->level_count[l], t->voxels);
    }
    offset += zsize[l];
  }
  /* The colours of the levels loaded, once those levels have proven their counts. */
  if (s == VX_OK && color) {
    uint64_t at = (uint64_t)VX_SVO_PROLOGUE + hz;
    for (uint32_t l = 0; l <= t->depth; l++) at += zsize[l];
    if (whole && colors_whole(src, opts, t, levels, at, zsize + t->depth + 1,
                              zcheck + t->depth + 1, need - raw_max, limit)) {
      if (info) info->side_by_side = 2;
    } else {
      if (whole) { /* the levels went side by side: room for the largest colour section */
        raw_cap = (size_t)(raw_max < VX_SVO_COLOR_RECORD ? VX_SVO_COLOR_RECORD : raw_max);
        if (!(raw = (uint8_t *)vx_malloc(raw_cap)))
          s = vx_error_set(err, VX_ERR_NOMEM, "%s: cannot allocate %.1f MiB to decode the "
                           "colours", name, (double)raw_cap / 1048576.0);
      }
      if (s == VX_OK) s = decode_colors(src, dc, ck, t, zsize, zcheck, levels, at, raw, err);
    }
  }
  if (s == VX_OK && opts && opts->check_rest && levels <= t->depth)
    s = check_rest(src, ck, t, color, zsize, zcheck, levels, (uint64_t)VX_SVO_PROLOGUE + hz, err);
  vx_free(raw);
  ZSTD_freeDCtx(dc);
  ZSTD_freeCCtx(ck);
  if (s == VX_OK && (t->node_count != node_count || t->voxel_count != voxel_count))
    s = vx_error_set(err, VX_ERR_CORRUPT, "%s: level sizes are inconsistent", name);
  if (s == VX_OK && !whole) s = vx_octree_link(t, err);
  if (s == VX_OK) s = whole ? vx_octree_validate_shape(t, err) : vx_octree_validate(t, err);
  if (s != VX_OK) {
    if (s == VX_ERR_CORRUPT) vx_error_prefix(err, name);
    vx_octree_free(t);
  }
  return s;
}

vx_status vx_svo_decode(const uint8_t *data, size_t size, const vx_svo_read_opts *opts, vx_octree *out,
                        vx_svo_file_info *info, vx_error *err) {
  memset(out, 0, sizeof *out);
  svo_src src;
  memset(&src, 0, sizeof src);
  src.mem = data ? data : (const uint8_t *)"";
  src.size = data ? size : 0;
  src.name = "svo data";
  return decode(&src, opts, out, info, err);
}

vx_status vx_svo_open_regular(const char *path, FILE **f, uint64_t *size, vx_error *err) {
  *f = NULL;
  *size = 0;
  /* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever; the
   * fstat below then refuses anything but a regular file. */
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return vx_error_set(err, VX_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
  struct stat st;
  memset(&st, 0, sizeof st);
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return vx_error_set(err, VX_ERR_IO, "cannot read '%s': %s", path,
                        S_ISDIR(st.st_mode) ? "it is a directory" : "not a regular file");
  }
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0) (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  *f = fdopen(fd, "rb");
  if (!*f) {
    close(fd);
    return vx_error_set(err, VX_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
  }
  *size = (uint64_t)st.st_size;
  return VX_OK;
}

/* decode() of `size` bytes from memory or from file f at `base`, the header alone or not. */
static vx_status decode_at(const uint8_t *mem, FILE *f, uint64_t base, uint64_t size,
                           const char *name, int header_only, const vx_svo_read_opts *opts,
                           vx_octree *out, vx_svo_file_info *info, vx_error *err) {
  memset(out, 0, sizeof *out);
  svo_src src;
  memset(&src, 0, sizeof src);
  src.mem = mem;
  src.f = mem ? NULL : f;
  src.base = mem ? 0 : base;
  src.size = size;
  src.name = name;
  src.header_only = header_only;
  vx_status s = decode(&src, opts, out, info, err);
  vx_free(src.scratch);
  if (s != VX_OK) memset(out, 0, sizeof *out);
  return s;
}

vx_status vx_svo_decode_header(const uint8_t *mem, FILE *f, uint64_t base, uint64_t size,
                               const char *name, vx_octree *out, vx_svo_file_info *info,
                               vx_error *err) {
  return decode_at(mem, f, base, size, name, 1, NULL, out, info, err);
}

vx_status vx_svo_decode_range(const uint8_t *mem, FILE *f, uint64_t base, uint64_t size,
                              const char *name, const vx_svo_read_opts *opts, vx_octree *out,
                              vx_svo_file_info *info, vx_error *err) {
  return decode_at(mem, f, base, size, name, 0, opts, out, info, err);
}

vx_status vx_svo_read(const char *path, const vx_svo_read_opts *opts, vx_octree *out,
                      vx_svo_file_info *info, vx_error *err) {
  memset(out, 0, sizeof *out);
  svo_src src;
  memset(&src, 0, sizeof src);
  vx_status s = vx_svo_open_regular(path, &src.f, &src.size, err);
  if (s != VX_OK) return s;
  src.name = path;
  s = decode(&src, opts, out, info, err);
  vx_free(src.scratch);
  fclose(src.f);
  return s;
}
