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
#include "formats/svo_tiled_internal.h"
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

#define TL_COPY (1u << 20)

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

int tl_same_f32(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }
static int same_f64(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

vx_status tl_tile_matches(const vx_tiled_header *h, uint64_t code, const vx_octree *t,
                              const vx_svo_file_info *fi, const char *name, vx_error *err) {
  vx_transform want;
  vx_tile_transform(h, code, &want);
  const uint32_t flags = h->color ? VX_SVO_FLAG_COLOR : 0u;
  if (fi->version != VX_SVO_VERSION || fi->flags != flags)
    return vx_error_set(err, VX_ERR_CORRUPT, "%s: tile %llu is a version-%u file with flags 0x%x, "
                        "not a %s version-%u tree", name, (unsigned long long)code, fi->version,
                        fi->flags, h->color ? "coloured" : "grey", VX_SVO_VERSION);
  if (t->depth != h->tile_depth || !tl_same_f32(t->band, h->band) ||
      !tl_same_f32(t->prune_error, h->prune_error))
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

uint64_t tl_tree_nodes(const vx_octree *t) {
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
  uint32_t *rootc; /* a coloured file: each tile root's colour */
  uint64_t voxels, nodes;
  ZSTD_CCtx *cc;
  vx_tiled_color_fn color;
  void *color_ctx;
};

void vx_tiled_writer_abort(vx_tiled_writer *w) {
  if (!w) return;
  vx_atomic_abort(&w->af);
  vx_free(w->e);
  vx_free(w->root);
  vx_free(w->fit);
  vx_free(w->code);
  vx_free(w->rootc);
  ZSTD_freeCCtx(w->cc);
  vx_free(w);
}

void vx_tiled_writer_set_color(vx_tiled_writer *w, vx_tiled_color_fn fn, void *ctx) {
  w->color = fn;
  w->color_ctx = ctx;
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
  vx_put_u32(p + 12, h->color ? TL_FLAG_COLOR : 0u);
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
  vx_status s = tl_tile_matches(&w->h, code, t, fi, "tiled writer", err);
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
    uint32_t *rc = (uint32_t *)vx_realloc(w->rootc, (size_t)c * sizeof *rc);
    if (rc) w->rootc = rc;
    if (!e || !r || !f || !k || !rc) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
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
  e->nodes = tl_tree_nodes(t);
  e->check = check;
  w->root[w->n] = t->nodes[0];
  w->root[w->n].child = 0;
  w->fit[w->n] = *fit;
  w->code[w->n] = code;
  w->rootc[w->n] = t->node_color ? t->node_color[0] : 0u;
  w->voxels += e->voxels;
  w->nodes += e->nodes;
  w->at += length;
  w->n++;
}

vx_status vx_tiled_writer_add(vx_tiled_writer *w, uint64_t code, uint64_t build_id,
                              const uint8_t *svo, size_t n, const uint32_t *known,
                              const vx_fit_root *fit, vx_error *err) {
  vx_svo_read_opts ro = {0, 0, 0, 0}; /* the root */
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
  vx_svo_read_opts ro = {0, 0, 1, 0}; /* the root, every other section checked */
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

/* Level K's children are the tiles' level 1, as many as its masks name (the tiles check them). */
vx_status tl_link_top(vx_octree *top, uint32_t K, uint64_t n, vx_error *err) {
  uint64_t below = 0;
  for (uint64_t k = 0; k < n; k++)
    below += vx_popcount8(vx_node_mask(top->nodes[top->level_first[K] + k].info));
  top->level_count[K + 1] = below;
  vx_status s = vx_octree_link(top, err);
  return s == VX_OK ? vx_octree_validate(top, err) : s;
}

/* A coloured file's top tree colours, from the writer's callback, each tile root's alpha checked
 * against its tile's. */
static vx_status top_colors(vx_tiled_writer *w, vx_octree *top, uint32_t K,
                           uint32_t **out, vx_error *err) {
  *out = NULL;
  if (!w->color)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "a coloured tiled file needs its top tree's "
                        "colours (vx_tiled_writer_set_color)");
  uint32_t *c = (uint32_t *)vx_malloc((size_t)top->node_count * sizeof *c);
  if (!c) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  vx_status s = w->color(w->color_ctx, top, K, c, err);
  const uint32_t *kc = c + top->level_first[K];
  for (uint64_t i = 0; s == VX_OK && i < w->n; i++)
    if (kc[i] >> 24 != w->rootc[i] >> 24)
      s = vx_error_set(err, VX_ERR_INVALID_ARG, "tile %llu's root has alpha %u, the top tree's "
                       "colour for it %u", (unsigned long long)w->code[i], w->rootc[i] >> 24,
                       kc[i] >> 24);
  if (s != VX_OK) vx_free(c);
  else *out = c;
  return s;
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
  if (s == VX_OK && (s = tl_link_top(&top, K, w->n, err)) != VX_OK)
    s = vx_error_set(err, VX_ERR_INVALID_ARG, "the tiles' root fits give a top tree no reader "
                     "takes: %s", err ? err->msg : "invalid");
  const uint64_t rawn = tl_directory_size(top.node_count, w->n, (int)h->color);
  if (s == VX_OK && !(raw = (uint8_t *)vx_malloc((size_t)rawn)))
    s = vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  uint32_t *colors = NULL;
  if (s == VX_OK && h->color) s = top_colors(w, &top, K, &colors, err);
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
    for (uint32_t l = 0; colors && l <= K; l++) { /* as a version-2 file's colour sections */
      const uint64_t f = top.level_first[l], c = top.level_count[l];
      const uint64_t uf = l ? top.level_first[l - 1] : 0, un = l ? top.level_count[l - 1] : 0;
      vx_svo_pack_colors(colors + f, c, l ? top.nodes + uf : NULL, colors + uf, un, p);
      p += 4 * c;
    }
    s = frame(w->cc, raw, (size_t)rawn, &dz, &dzn, &dcheck, err);
  }
  uint8_t hdr[TL_HEADER_FIXED + 8 * (VX_MAX_DEPTH + 1)];
  const uint64_t hn = tl_header_size(K);
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
  vx_free(colors);
  vx_octree_free(&top);
  vx_tiled_writer_abort(w); /* a committed file is closed: this frees the rest */
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
  h->color = 0;
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
