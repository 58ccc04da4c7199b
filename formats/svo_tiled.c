/* SPDX-License-Identifier: Apache-2.0 */
/* svo_tiled.c - the tiled .svo file (svo_tiled.h; docs/SVO_FORMAT.md, "Tiled files").
 *
 * Layout: prologue (32 bytes) | tile 0 | tile 1 | ... | header frame | directory frame | trailer
 * (32 bytes). The tiles come first so that a build can append each one as it finishes; the
 * trailer says where the header is. Each tile is a whole version-2 .svo, so any reader of those
 * reads a tile cut out of the file. The directory is one frame: the top tree's node sections
 * (levels 0 .. K, as in a version-2 file) and the index of the tiles.
 */
#define _FILE_OFFSET_BITS 64
#define _POSIX_C_SOURCE 200809L
#include "formats/svo_tiled.h"
#include "formats/svo_codec.h"
#include "sys/atomic_file.h"
#include "sys/system.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TL_PROLOGUE 32u
#define TL_TRAILER 32u
#define TL_TRAILER_MAGIC "VXTILES\n"
#define TL_HEADER_FIXED 112u
#define TL_INDEX_RECORD 48u
#define TL_TILE_MIN 64u /* no version-2 file is shorter: a tile index claims at most this many */
#define TL_COPY (1u << 20)

static uint64_t header_size(uint32_t K) { return TL_HEADER_FIXED + 8ull * (K + 1); }

int vx_svo_is_tiled(const uint8_t *head, size_t n) {
  return n >= 12 && memcmp(head, VX_SVO_MAGIC, 8) == 0 && vx_get_u32(head + 8) == VX_SVO_TILED_VERSION;
}

int vx_svo_path_is_tiled(const char *path) {
  FILE *f = NULL;
  uint64_t size = 0;
  if (vx_svo_open_regular(path, &f, &size, NULL) != VX_OK) return 0;
  uint8_t head[12];
  size_t n = fread(head, 1, sizeof head, f);
  fclose(f);
  return vx_svo_is_tiled(head, n);
}

void vx_tile_transform(const vx_tiled_header *h, uint64_t code, vx_transform *out) {
  vx_transform_cell(&h->xf, code, h->tile_depth, out);
}

static int same_f32(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }
static int same_f64(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

/* A tile's header (a partial decode: levels 0 only) against the tiled header: depth, band, prune
 * error and its cell's transform, grey. */
static vx_status tile_matches(const vx_tiled_header *h, uint64_t code, const vx_octree *t,
                              const vx_svo_file_info *fi, const char *name, vx_error *err) {
  vx_transform want;
  vx_tile_transform(h, code, &want);
  if (fi->version != VX_SVO_VERSION || fi->flags != 0)
    return vx_error_set(err, VX_ERR_CORRUPT, "%s: tile %llu is a version-%u file with flags 0x%x, "
                        "not a grey version-%u tree", name, (unsigned long long)code, fi->version,
                        fi->flags, VX_SVO_VERSION);
  if (t->depth != h->tile_depth || !same_f32(t->band, h->band) ||
      !same_f32(t->prune_error, h->prune_error))
    return vx_error_set(err, VX_ERR_CORRUPT, "%s: tile %llu (depth %u, band %g) disagrees with the "
                        "tiled header (tile depth %u, band %g)", name, (unsigned long long)code,
                        t->depth, (double)t->band, h->tile_depth, (double)h->band);
  for (int i = 0; i < 3; i++)
    if (!same_f64(t->xf.origin[i], want.origin[i]) || !same_f64(t->xf.scale, want.scale))
      return vx_error_set(err, VX_ERR_CORRUPT, "%s: tile %llu is not placed at its cell (its "
                          "transform differs from the grid's there)", name,
                          (unsigned long long)code);
  return VX_OK;
}

static uint64_t tree_nodes(const vx_octree *t) {
  uint64_t n = 0;
  for (uint32_t l = 0; l < t->depth; l++) n += t->level_count[l];
  return n;
}

struct vx_tiled_id {
  vx_check32_stream *c;
};

vx_tiled_id *vx_tiled_id_begin(void) {
  vx_tiled_id *h = (vx_tiled_id *)vx_malloc(sizeof *h);
  if (h) h->c = vx_check32_begin();
  return h;
}

int vx_tiled_id_feed(vx_tiled_id *h, const void *positions, size_t n) {
  return h && vx_check32_feed(h->c, positions, n);
}

uint64_t vx_tiled_id_end(vx_tiled_id *h, uint32_t depth, uint32_t tile_depth, float band,
                         int sign_rule, float prune_error) {
  uint32_t a = 0, b = 0;
  uint8_t rec[20];
  vx_put_u32(rec, depth);
  vx_put_u32(rec + 4, tile_depth);
  vx_put_f32(rec + 8, band);
  vx_put_u32(rec + 12, (uint32_t)sign_rule);
  vx_put_f32(rec + 16, prune_error);
  /* an unpruned build's id is that of the fields before pruning existed */
  if (h && vx_check32_end(h->c, &a) &&
      vx_svo_encoded_check(rec, prune_error > 0.0f ? 20 : 16, &b, NULL) != VX_OK)
    a = 0;
  vx_free(h);
  return (uint64_t)a << 32 | b;
}

uint64_t vx_tiled_build_id(const void *positions, size_t n, uint32_t depth, uint32_t tile_depth,
                           float band, int sign_rule, float prune_error) {
  vx_tiled_id *h = vx_tiled_id_begin();
  vx_tiled_id_feed(h, positions, n);
  return vx_tiled_id_end(h, depth, tile_depth, band, sign_rule, prune_error);
}

/* ---- writing ---------------------------------------------------------------------------------- */

struct vx_tiled_writer {
  vx_atomic_file af;
  vx_tiled_header h;
  uint64_t at; /* bytes written */
  uint64_t n, cap;
  vx_tile_entry *e;
  vx_node *root;
  vx_fit_root *fit;
  uint64_t *code;
  uint64_t voxels, nodes;
  ZSTD_CCtx *cc;
};

void vx_tiled_writer_abort(vx_tiled_writer *w) {
  if (!w) return;
  vx_atomic_abort(&w->af);
  vx_free(w->e);
  vx_free(w->root);
  vx_free(w->fit);
  vx_free(w->code);
  ZSTD_freeCCtx(w->cc);
  vx_free(w);
}

void vx_tiled_writer_set_build_id(vx_tiled_writer *w, uint64_t build_id) {
  w->h.build_id = build_id;
}

vx_status vx_tiled_writer_open(const char *path, const vx_tiled_header *h, vx_tiled_writer **out,
                               vx_error *err) {
  *out = NULL;
  if (h->depth < 2 || h->depth > VX_MAX_TILED_DEPTH || h->tile_depth < 1 ||
      h->tile_depth > VX_MAX_DEPTH || h->tile_depth >= h->depth ||
      h->depth - h->tile_depth > VX_MAX_DEPTH - 1)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "tiles of depth %u in a tree of depth %u: the "
                        "tiles take 1..%d levels and leave 1..%d above them", h->tile_depth,
                        h->depth, VX_MAX_DEPTH, VX_MAX_DEPTH - 1);
  vx_tiled_writer *w = (vx_tiled_writer *)vx_calloc(1, sizeof *w);
  if (!w) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  w->h = *h;
  w->af.fd = -1;
  w->cc = vx_zstd_cctx();
  if (!w->cc) {
    vx_free(w);
    return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  }
  vx_status s = vx_atomic_open(&w->af, path, err);
  if (s != VX_OK) {
    ZSTD_freeCCtx(w->cc);
    vx_free(w);
    return s;
  }
  uint8_t p[TL_PROLOGUE];
  memset(p, 0, sizeof p);
  memcpy(p, VX_SVO_MAGIC, 8);
  vx_put_u32(p + 8, VX_SVO_TILED_VERSION);
  s = vx_atomic_write(&w->af, p, sizeof p, err);
  if (s != VX_OK) {
    vx_tiled_writer_abort(w);
    return s;
  }
  w->at = TL_PROLOGUE;
  *out = w;
  return VX_OK;
}

/* Checks tile `code` (its header decoded into *t) and makes room for its entry. */
static vx_status add_begin(vx_tiled_writer *w, uint64_t code, uint64_t build_id,
                           const vx_octree *t, const vx_svo_file_info *fi, vx_error *err) {
  const uint32_t K = w->h.depth - w->h.tile_depth;
  if (build_id != w->h.build_id)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "tile %llu comes from another build (id "
                        "%016llx, this file's %016llx)", (unsigned long long)code,
                        (unsigned long long)build_id, (unsigned long long)w->h.build_id);
  if ((code >> 3 * K) != 0 || (w->n && code <= w->code[w->n - 1]))
    return vx_error_set(err, VX_ERR_INVALID_ARG, "tile %llu is outside the %u^3 grid of tiles or "
                        "not after the last one", (unsigned long long)code, 1u << K);
  vx_status s = tile_matches(&w->h, code, t, fi, "tiled writer", err);
  if (s != VX_OK) return s;
  if (w->n == w->cap) {
    uint64_t c = w->cap * 2 + 64;
    vx_tile_entry *e = (vx_tile_entry *)vx_realloc(w->e, (size_t)c * sizeof *e);
    if (e) w->e = e;
    vx_node *r = (vx_node *)vx_realloc(w->root, (size_t)c * sizeof *r);
    if (r) w->root = r;
    vx_fit_root *f = (vx_fit_root *)vx_realloc(w->fit, (size_t)c * sizeof *f);
    if (f) w->fit = f;
    uint64_t *k = (uint64_t *)vx_realloc(w->code, (size_t)c * sizeof *k);
    if (k) w->code = k;
    if (!e || !r || !f || !k) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
    w->cap = c;
  }
  return VX_OK;
}

static void add_end(vx_tiled_writer *w, uint64_t code, const vx_octree *t, uint64_t length,
                    uint32_t check, const vx_fit_root *fit) {
  vx_tile_entry *e = &w->e[w->n];
  e->code = code;
  e->offset = w->at;
  e->length = length;
  e->voxels = t->level_count[t->depth];
  e->nodes = tree_nodes(t);
  e->check = check;
  w->root[w->n] = t->nodes[0];
  w->root[w->n].child = 0;
  w->fit[w->n] = *fit;
  w->code[w->n] = code;
  w->voxels += e->voxels;
  w->nodes += e->nodes;
  w->at += length;
  w->n++;
}

vx_status vx_tiled_writer_add(vx_tiled_writer *w, uint64_t code, uint64_t build_id,
                              const uint8_t *svo, size_t n, const uint32_t *known,
                              const vx_fit_root *fit, vx_error *err) {
  vx_svo_read_opts ro = {0, 0, 0}; /* the root */
  vx_svo_file_info fi;
  vx_octree t;
  vx_status s = vx_svo_decode(svo, n, &ro, &t, &fi, err);
  if (s == VX_OK) s = add_begin(w, code, build_id, &t, &fi, err);
  uint32_t check = known ? *known : 0;
  if (s == VX_OK && !known && !vx_svo_bytes_check(w->cc, svo, n, &check))
    s = vx_svo_zstd_fail(err, "checksumming a tile", 0);
  if (s == VX_OK) s = vx_atomic_write(&w->af, svo, n, err);
  if (s == VX_OK) add_end(w, code, &t, n, check, fit);
  vx_octree_free(&t);
  return s;
}

vx_status vx_tile_file_check(const char *path, const uint64_t *length, const uint32_t *check,
                             vx_tile_file *f, vx_error *err) {
  memset(f, 0, sizeof *f);
  f->fd = open(path, O_RDONLY | O_CLOEXEC);
  if (f->fd < 0) return vx_error_set(err, VX_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
  struct stat st;
  vx_status s = fstat(f->fd, &st) == 0 && S_ISREG(st.st_mode)
                    ? VX_OK
                    : vx_error_set(err, VX_ERR_IO, "'%s' is not a regular file", path);
  if (s == VX_OK) {
    f->length = (uint64_t)st.st_size;
    f->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
  }
  vx_svo_read_opts ro = {0, 0, 1}; /* the root, every other section checked */
  if (s == VX_OK) s = vx_svo_read(path, &ro, &f->root, &f->fi, err);
  f->have_root = s == VX_OK;
  vx_svo_checker ck;
  ck.cc = s == VX_OK ? vx_zstd_cctx() : NULL;
  uint8_t *buf = ck.cc ? (uint8_t *)vx_malloc(TL_COPY) : NULL;
  if (s == VX_OK && (!buf || !vx_svo_check_begin(&ck)))
    s = vx_error_set(err, VX_ERR_NOMEM, "out of memory checksumming '%s'", path);
  for (uint64_t done = 0; s == VX_OK && done < f->length;) { /* the whole file's check32 */
    const size_t k = f->length - done < TL_COPY ? (size_t)(f->length - done) : TL_COPY;
    const ssize_t r = pread(f->fd, buf, k, (off_t)done);
    if (r <= 0 && !(r < 0 && errno == EINTR))
      s = vx_error_set(err, VX_ERR_IO, "cannot read '%s': %s", path, r ? strerror(errno) :
                       "it shrank");
    else if (r > 0 && !vx_svo_check_feed(&ck, buf, (size_t)r, ZSTD_e_continue))
      s = vx_svo_zstd_fail(err, "checksumming a tile", 0);
    done += r > 0 ? (uint64_t)r : 0;
  }
  if (s == VX_OK && !vx_svo_check_feed(&ck, NULL, 0, ZSTD_e_end))
    s = vx_svo_zstd_fail(err, "checksumming a tile", 0);
  f->check = s == VX_OK ? vx_svo_check_value(&ck) : 0;
  vx_free(buf);
  ZSTD_freeCCtx(ck.cc);
  if (s == VX_OK && ((length && *length != f->length) || (check && *check != f->check)))
    s = vx_error_set(err, VX_ERR_CORRUPT, "'%s' is not the file its builder wrote (%llu bytes, "
                     "check %08x; built: %llu bytes, check %08x)", path,
                     (unsigned long long)f->length, f->check,
                     (unsigned long long)(length ? *length : f->length), check ? *check : f->check);
  if (s != VX_OK) vx_tile_file_close(f);
  return s;
}

void vx_tile_file_close(vx_tile_file *f) {
  if (f->fd >= 0) close(f->fd);
  if (f->have_root) vx_octree_free(&f->root);
  memset(f, 0, sizeof *f);
  f->fd = -1;
}

vx_status vx_tiled_writer_add_checked_file(vx_tiled_writer *w, uint64_t code, uint64_t build_id,
                                           const char *path, vx_tile_file *f,
                                           const vx_fit_root *fit, vx_error *err) {
  vx_status s = add_begin(w, code, build_id, &f->root, &f->fi, err);
  struct stat st;
  if (s == VX_OK && (fstat(f->fd, &st) != 0 || (uint64_t)st.st_size != f->length ||
                     (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec != f->mtime_ns))
    s = vx_error_set(err, VX_ERR_IO, "'%s' changed after it was checked", path);
  if (s == VX_OK) s = vx_atomic_write_from(&w->af, f->fd, 0, f->length, path, err);
  if (s == VX_OK) add_end(w, code, &f->root, f->length, f->check, fit);
  return s;
}

/* vx_tiled_writer_add_file; length and check (may be NULL): what the builder wrote. */
static vx_status add_file(vx_tiled_writer *w, uint64_t code, uint64_t build_id,
                          const char *svo_path, const vx_fit_root *fit, const uint64_t *length,
                          const uint32_t *check, vx_error *err) {
  vx_tile_file f;
  vx_status s = vx_tile_file_check(svo_path, length, check, &f, err);
  if (s == VX_OK) s = vx_tiled_writer_add_checked_file(w, code, build_id, svo_path, &f, fit, err);
  if (s == VX_ERR_CORRUPT && length) {
    char pre[48];
    snprintf(pre, sizeof pre, "tile %llu: ", (unsigned long long)code);
    vx_error_prefix(err, pre);
  }
  vx_tile_file_close(&f);
  return s;
}

vx_status vx_tiled_writer_add_file(vx_tiled_writer *w, uint64_t code, uint64_t build_id,
                                   const char *svo_path, const vx_fit_root *fit, vx_error *err) {
  return add_file(w, code, build_id, svo_path, fit, NULL, NULL, err);
}

vx_status vx_tiled_writer_add_checked(vx_tiled_writer *w, uint64_t code, uint64_t build_id,
                                      const char *svo_path, const vx_fit_root *fit,
                                      uint64_t length, uint32_t check, vx_error *err) {
  return add_file(w, code, build_id, svo_path, fit, &length, &check, err);
}

/* One zstd frame (level 19, content size and checksum) of raw bytes; *z from vx_malloc. */
static vx_status frame(ZSTD_CCtx *cc, const uint8_t *raw, size_t n, uint8_t **z, size_t *zn,
                       uint32_t *check, vx_error *err) {
  size_t cap = ZSTD_compressBound(n);
  *z = (uint8_t *)vx_malloc(cap ? cap : 1);
  if (!*z) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  size_t r = ZSTD_CCtx_reset(cc, ZSTD_reset_session_and_parameters);
  if (!ZSTD_isError(r)) r = ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, 19);
  if (!ZSTD_isError(r)) r = ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
  if (!ZSTD_isError(r)) r = ZSTD_compress2(cc, *z, cap, raw, n);
  if (ZSTD_isError(r)) return vx_svo_zstd_fail(err, "compressing the tile directory", r);
  *zn = r;
  if (!vx_svo_bytes_check(cc, *z, r, check)) return vx_svo_zstd_fail(err, "checksumming", 0);
  return VX_OK;
}

/* The top tree's levels 0 .. K (n tiles at level K) linked and validated: level K's children are
 * the tiles' level 1, as many as its masks name (the tiles check them). */
static vx_status link_top(vx_octree *top, uint32_t K, uint64_t n, vx_error *err) {
  uint64_t below = 0;
  for (uint64_t k = 0; k < n; k++)
    below += vx_popcount8(vx_node_mask(top->nodes[top->level_first[K] + k].info));
  top->level_count[K + 1] = below;
  vx_status s = vx_octree_link(top, err);
  return s == VX_OK ? vx_octree_validate(top, err) : s;
}

vx_status vx_tiled_writer_finish(vx_tiled_writer *w, uint64_t *bytes, uint64_t *nodes,
                                 vx_error *err) {
  const vx_tiled_header *h = &w->h;
  const uint32_t K = h->depth - h->tile_depth;
  vx_octree top;
  memset(&top, 0, sizeof top);
  uint8_t *raw = NULL, *dz = NULL, *hz = NULL;
  size_t dzn = 0, hzn = 0;
  uint32_t dcheck = 0, hcheck = 0;
  vx_status s = w->n ? VX_OK : vx_error_set(err, VX_ERR_EMPTY, "no tile has surface voxels");
  if (s == VX_OK)
    s = vx_octree_top_build(w->code, w->root, w->fit, w->n, K, h->depth, h->band, &top, NULL, err);
  /* what a reader checks (fits that came from elsewhere could give planes it refuses) */
  top.band = h->band;
  top.xf = h->xf;
  if (s == VX_OK && (s = link_top(&top, K, w->n, err)) != VX_OK)
    s = vx_error_set(err, VX_ERR_INVALID_ARG, "the tiles' root fits give a top tree no reader "
                     "takes: %s", err ? err->msg : "invalid");
  const uint64_t rawn = top.node_count * VX_SVO_NODE_RECORD + w->n * TL_INDEX_RECORD;
  if (s == VX_OK && !(raw = (uint8_t *)vx_malloc((size_t)rawn)))
    s = vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  if (s == VX_OK) {
    uint8_t *p = raw;
    for (uint32_t l = 0; l <= K; l++) {
      vx_svo_pack_nodes(top.nodes + top.level_first[l], top.level_count[l], 0, top.level_count[l],
                        p);
      p += top.level_count[l] * VX_SVO_NODE_RECORD;
    }
    for (uint64_t i = 0; i < w->n; i++, p += TL_INDEX_RECORD) {
      const vx_tile_entry *e = &w->e[i];
      vx_put_u64(p, e->code);
      vx_put_u64(p + 8, e->offset);
      vx_put_u64(p + 16, e->length);
      vx_put_u64(p + 24, e->voxels);
      vx_put_u64(p + 32, e->nodes);
      vx_put_u32(p + 40, e->check);
      vx_put_u32(p + 44, 0);
    }
    s = frame(w->cc, raw, (size_t)rawn, &dz, &dzn, &dcheck, err);
  }
  uint8_t hdr[TL_HEADER_FIXED + 8 * (VX_MAX_DEPTH + 1)];
  const uint64_t hn = header_size(K);
  if (s == VX_OK) {
    memset(hdr, 0, sizeof hdr);
    vx_tiled_header_put(hdr, h);
    vx_put_u64(hdr + 56, w->n);
    vx_put_u64(hdr + 64, dzn);
    vx_put_u64(hdr + 72, rawn);
    vx_put_u32(hdr + 80, dcheck);
    vx_put_u64(hdr + 88, w->voxels);
    uint64_t top_nodes = 0;
    for (uint32_t l = 0; l < K; l++) top_nodes += top.level_count[l];
    vx_put_u64(hdr + 96, w->nodes + top_nodes);
    for (uint32_t l = 0; l <= K; l++) vx_put_u64(hdr + TL_HEADER_FIXED + 8 * l, top.level_count[l]);
    s = frame(w->cc, hdr, (size_t)hn, &hz, &hzn, &hcheck, err);
  }
  if (s == VX_OK && hzn > VX_SVO_MAX_HEADER_FRAME)
    s = vx_error_set(err, VX_ERR_LIMIT, "tiled header frame of %zu bytes", hzn);
  uint8_t tr[TL_TRAILER];
  if (s == VX_OK) {
    vx_put_u64(tr, w->at);
    vx_put_u32(tr + 8, (uint32_t)hzn);
    vx_put_u32(tr + 12, (uint32_t)hn);
    vx_put_u32(tr + 16, hcheck);
    vx_put_u32(tr + 20, 0);
    memcpy(tr + 24, TL_TRAILER_MAGIC, 8);
    s = vx_atomic_write(&w->af, hz, hzn, err);
  }
  if (s == VX_OK) s = vx_atomic_write(&w->af, dz, dzn, err);
  if (s == VX_OK) s = vx_atomic_write(&w->af, tr, sizeof tr, err);
  if (s == VX_OK) {
    if (bytes) *bytes = w->at + hzn + dzn + TL_TRAILER;
    if (nodes) *nodes = vx_get_u64(hdr + 96);
    s = vx_atomic_commit(&w->af, err);
  }
  vx_free(raw);
  vx_free(dz);
  vx_free(hz);
  vx_octree_free(&top);
  vx_tiled_writer_abort(w); /* a committed file is closed: this frees the rest */
  return s;
}

/* ---- reading ---------------------------------------------------------------------------------- */

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
  if (fseeko(t->f, (off_t)off, SEEK_SET) != 0 || fread(*buf, 1, (size_t)n, t->f) != n) {
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

static int finite_d(double v) { return v == v && v <= 1.7e308 && v >= -1.7e308; }

void vx_tiled_header_put(uint8_t *p, const vx_tiled_header *h) {
  vx_put_u32(p, h->depth);
  vx_put_u32(p + 4, h->tile_depth);
  vx_put_f32(p + 8, h->band);
  vx_put_f32(p + 12, h->prune_error);
  for (int i = 0; i < 3; i++) vx_put_f64(p + 16 + 8 * i, h->xf.origin[i]);
  vx_put_f64(p + 40, h->xf.scale);
  vx_put_u64(p + 48, h->build_id);
}

void vx_tiled_header_get(const uint8_t *p, vx_tiled_header *h) {
  h->depth = vx_get_u32(p);
  h->tile_depth = vx_get_u32(p + 4);
  h->band = vx_get_f32(p + 8);
  h->prune_error = vx_get_f32(p + 12);
  for (int i = 0; i < 3; i++) h->xf.origin[i] = vx_get_f64(p + 16 + 8 * i);
  h->xf.scale = vx_get_f64(p + 40);
  h->build_id = vx_get_u64(p + 48);
}

vx_status vx_tiled_header_check(const vx_tiled_header *h, const char *name, vx_error *err) {
  const uint32_t D = h->depth, T = h->tile_depth;
  if (D < 2 || D > VX_MAX_TILED_DEPTH || T < 1 || T > VX_MAX_DEPTH || T >= D ||
      D - T > VX_MAX_DEPTH - 1)
    return vx_error_set(err, VX_ERR_CORRUPT, "%s: depth %u in tiles of depth %u is out of range",
                        name, D, T);
  if (!(h->band > 0.0f) || !(h->band < 1e6f) || !(h->prune_error >= 0.0f) ||
      !(h->prune_error < 1e30f))
    return vx_error_set(err, VX_ERR_CORRUPT, "%s: field band %g or prune error %g is invalid",
                        name, (double)h->band, (double)h->prune_error);
  if (!finite_d(h->xf.origin[0]) || !finite_d(h->xf.origin[1]) || !finite_d(h->xf.origin[2]) ||
      !(h->xf.scale > 0.0) || !finite_d(h->xf.scale))
    return vx_error_set(err, VX_ERR_CORRUPT, "%s: grid-to-world transform is not finite", name);
  return VX_OK;
}

/* The header record: ranges, the top levels' counts, the directory's size. */
static vx_status parse_header(vx_tiled *t, const uint8_t *hdr, uint32_t hraw, uint64_t hoff,
                              uint32_t hzn, uint64_t *dz, uint64_t *draw, uint32_t *dcheck,
                              vx_error *err) {
  vx_tiled_header *h = &t->h;
  const char *name = t->name;
  vx_tiled_header_get(hdr, h);
  t->n = vx_get_u64(hdr + 56);
  *dz = vx_get_u64(hdr + 64);
  *draw = vx_get_u64(hdr + 72);
  *dcheck = vx_get_u32(hdr + 80);
  t->voxels = vx_get_u64(hdr + 88);
  t->nodes = vx_get_u64(hdr + 96);
  vx_status s = vx_tiled_header_check(h, name, err);
  if (s != VX_OK) return s;
  const uint32_t K = h->depth - h->tile_depth;
  if (header_size(K) != hraw)
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
  if (*draw != top_nodes * VX_SVO_NODE_RECORD + t->n * TL_INDEX_RECORD)
    return vx_error_set(err, VX_ERR_CORRUPT, "%s: the directory declares %llu bytes for %llu "
                        "nodes and %llu tiles", name, (unsigned long long)*draw,
                        (unsigned long long)top_nodes, (unsigned long long)t->n);
  if (*dz > t->size || hoff + hzn + *dz + TL_TRAILER != t->size)
    return vx_error_set(err, VX_ERR_CORRUPT, "%s: file has %llu bytes but its trailer and header "
                        "describe another size", name, (unsigned long long)t->size);
  const double need = (double)*draw + 16.0 * (double)top_nodes +
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
  if ((s = link_top(&t->top, K, t->n, err)) != VX_OK)
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
  else if (vx_get_u32(p + 12) != 0)
    s = vx_error_set(err, VX_ERR_VERSION, "%s: uses features this reader does not know (flags "
                     "0x%x): made by a newer voxlod", name, vx_get_u32(p + 12));
  else
    for (int i = 16; i < (int)TL_PROLOGUE && s == VX_OK; i++)
      if (p[i] != 0) s = vx_error_set(err, VX_ERR_CORRUPT, "%s: reserved prologue bytes", name);
  vx_free(buf);
  if (s != VX_OK) return s;
  if ((s = get(t, t->size - TL_TRAILER, TL_TRAILER, &p, &buf, err)) != VX_OK) return s;
  const uint64_t hoff = vx_get_u64(p);
  const uint32_t hzn = vx_get_u32(p + 8), hraw = vx_get_u32(p + 12), hcheck = vx_get_u32(p + 16);
  if (memcmp(p + 24, TL_TRAILER_MAGIC, 8) != 0 || vx_get_u32(p + 20) != 0)
    s = vx_error_set(err, VX_ERR_CORRUPT, "%s: the tiled trailer is missing or damaged "
                     "(truncated file?)", name);
  else if (hzn > VX_SVO_MAX_HEADER_FRAME || hraw < header_size(1) ||
           hraw > header_size(VX_MAX_DEPTH - 1) || hoff < TL_PROLOGUE + TL_TILE_MIN ||
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
  vx_status s = tile_matches(&t->h, e->code, out, fi, t->name, err);
  if (s == VX_OK && (out->level_count[out->depth] != e->voxels || tree_nodes(out) != e->nodes))
    s = vx_error_set(err, VX_ERR_CORRUPT, "%s: tile %llu holds %llu voxels and %llu nodes, its "
                     "index entry says %llu and %llu", t->name, (unsigned long long)i,
                     (unsigned long long)out->level_count[out->depth],
                     (unsigned long long)tree_nodes(out), (unsigned long long)e->voxels,
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

vx_status vx_tiled_read_tile(vx_tiled *t, uint64_t i, const vx_svo_read_opts *opts,
                             vx_octree *out, vx_error *err) {
  memset(out, 0, sizeof *out);
  if (tile_index_ok(t, i, err) != VX_OK) return VX_ERR_INVALID_ARG;
  const vx_tile_entry *e = &t->e[i];
  const uint8_t *p;
  uint8_t *buf = NULL;
  vx_status s = VX_OK;
  uint32_t got = 0;
  vx_svo_file_info fi;
  /* A partial read takes the header and the sections it decodes (each with its own check), not
   * the whole tile: the coarse levels of a 16384^3 tile are a few MiB of its GiBs. */
  const int partial = opts && opts->max_level >= 0 && (uint32_t)opts->max_level < t->h.tile_depth;
  if (partial)
    s = vx_svo_decode_range(t->mem ? t->mem + e->offset : NULL, t->f, e->offset, e->length,
                            t->name, opts, out, &fi, err);
  else if ((s = get(t, e->offset, e->length, &p, &buf, err)) != VX_OK)
    return s;
  else if (!vx_svo_bytes_check(t->ck, p, e->length, &got))
    s = vx_error_set(err, VX_ERR_NOMEM, "%s: cannot checksum tile %llu", t->name,
                     (unsigned long long)i);
  else if (got != e->check)
    s = vx_error_set(err, VX_ERR_CORRUPT, "%s: tile %llu is damaged (checksum mismatch)", t->name,
                     (unsigned long long)i);
  else
    s = vx_svo_decode(p, (size_t)e->length, opts, out, &fi, err);
  vx_free(buf);
  if (s != VX_OK) return s;
  const vx_node *r = &t->top.nodes[t->top.level_first[t->h.depth - t->h.tile_depth] + i];
  s = tile_as_indexed(t, i, out, &fi, err);
  if (s == VX_OK && (out->nodes[0].info != r->info || out->nodes[0].normal != r->normal ||
                     !same_f32(out->nodes[0].d, r->d)))
    s = vx_error_set(err, VX_ERR_CORRUPT, "%s: tile %llu's root disagrees with the top tree",
                     t->name, (unsigned long long)i);
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
  const double need = 16.0 * (double)out->node_count + 8.0 * (double)out->voxel_count;
  if (s == VX_OK && need > (double)limit)
    s = vx_error_set(err, VX_ERR_LIMIT, "%s: levels 0..%u need %.1f MiB, over the memory limit "
                     "of %.1f MiB", t->name, L, need / 1048576.0, (double)limit / 1048576.0);
  if (s == VX_OK) s = vx_octree_alloc(out, err);
  if (s == VX_OK) {
    const uint32_t top_levels = L < K ? L + 1 : K;
    memcpy(out->nodes, t->top.nodes,
           (size_t)(t->top.level_first[top_levels - 1] + t->top.level_count[top_levels - 1]) *
               sizeof(vx_node));
  }
  uint64_t at[VX_MAX_DEPTH + 1];
  for (uint32_t l = 0; l <= D; l++) at[l] = 0;
  vx_svo_read_opts part = {L == D ? -1 : (int)(L - K), limit, 0};
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
        memcpy(out->nodes + out->level_first[K + l] + at[K + l], tile.nodes + tile.level_first[l],
               (size_t)c * sizeof(vx_node));
      } else {
        memcpy(out->voxels + at[D], tile.voxels, (size_t)c * sizeof(vx_voxel));
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
