/* svo_stream.c - a .svo file from a level-by-level stream, in bounded memory.
 *
 * The format (SVO_FORMAT.md) puts the header, which holds every section's compressed size and
 * check, before the sections. So the sections are compressed first, one after the other, into an
 * unlinked staging file; then the prologue and header are written to the atomic temporary
 * (atomic_file.h), the staged sections are copied after them, and the file is committed.
 *
 * Same bytes as vx_svo_write. Each level's raw section (masks, then 11-byte records; or 8-byte
 * voxels) is produced piece by piece from the stream by the same packing rules as svo_file.c.
 * zstd's output depends on how it is driven: with worker threads (ZSTD_c_nbWorkers > 0) it cuts
 * the input into jobs of a fixed size and the frame does not depend on how the input arrives,
 * whereas single-threaded streaming differs from a one-call compression once the input exceeds
 * the window. Hence: with workers, the section is fed in 1 MiB pieces with its size pledged;
 * without, it is packed whole and compressed with ZSTD_compress2, the call vx_svo_write makes.
 * The frame checks (low 32 bits of XXH64 of the frame bytes, obtained from a zstd frame's content
 * checksum at the fastest level, as svo_file.c does) are computed incrementally.
 */
#define _FILE_OFFSET_BITS 64
#define _POSIX_C_SOURCE 200809L
#include "formats/svo_stream.h"
#include "formats/svo_codec.h"
#include "formats/atomic_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#define PIECE ((size_t)1 << 20)


/* ---- raw sections, piece by piece ------------------------------------------------------------ */

typedef struct section_reader {
  vx_stream *s;
  uint32_t level;
  uint64_t count, raw, pos; /* pos: bytes of the raw section produced so far */
  uint8_t *scratch;         /* records read from the stream */
  uint64_t scratch_n;       /* records it holds */
  uint64_t children;        /* popcount sum of the masks produced */
} section_reader;

#define BATCH 65536u /* records read from the stream at a time */

/* Produces raw bytes [pos, pos + n) of the section into dst (n <= what is left). */
static vx_status section_fill(section_reader *r, uint8_t *dst, size_t n, vx_error *err) {
  vx_stream *s = r->s;
  const int nodes = r->level < s->depth;
  while (n) {
    if (!nodes) { /* voxels: 8 corner bytes each, as they are */
      uint64_t first = r->pos / 8, k = n / 8 < BATCH ? n / 8 : BATCH;
      vx_status st = vx_stream_read(s, r->level, first, k, r->scratch, err);
      if (st != VX_OK) return st;
      const vx_voxel *v = (const vx_voxel *)r->scratch;
      for (uint64_t i = 0; i < k; i++)
        for (int c = 0; c < 8; c++) dst[8 * i + (uint64_t)c] = (uint8_t)v[i].c[c];
      dst += 8 * k;
      n -= (size_t)(8 * k);
      r->pos += 8 * k;
    } else if (r->pos < r->count) { /* the masks */
      uint64_t first = r->pos, k = r->count - first;
      if (k > n) k = n;
      if (k > BATCH) k = BATCH;
      vx_status st = vx_stream_read(s, r->level, first, k, r->scratch, err);
      if (st != VX_OK) return st;
      const vx_node *nd = (const vx_node *)r->scratch;
      for (uint64_t i = 0; i < k; i++) {
        uint32_t m = vx_node_mask(nd[i].info);
        dst[i] = (uint8_t)m;
        r->children += vx_popcount8(m);
      }
      dst += k;
      n -= (size_t)k;
      r->pos += k;
    } else { /* 11-byte records: errmax, errrms, flags, normal u32 LE, d f32 LE */
      uint64_t off = r->pos - r->count, first = off / 11, skip = off % 11;
      uint64_t k = (skip + n + 10) / 11;
      if (k > BATCH) k = BATCH;
      if (k > r->count - first) k = r->count - first;
      vx_status st = vx_stream_read(s, r->level, first, k, r->scratch, err);
      if (st != VX_OK) return st;
      const vx_node *nd = (const vx_node *)r->scratch;
      for (uint64_t i = 0; i < k && n; i++) {
        uint8_t rec[11];
        uint32_t info = nd[i].info;
        rec[0] = (uint8_t)vx_node_errmax_code(info);
        rec[1] = (uint8_t)vx_node_errrms_code(info);
        rec[2] = (uint8_t)vx_node_flags(info);
        vx_put_u32(rec + 3, nd[i].normal);
        vx_put_f32(rec + 7, nd[i].d);
        size_t take = 11 - (size_t)skip;
        if (take > n) take = n;
        memcpy(dst, rec + skip, take);
        dst += take;
        n -= take;
        r->pos += take;
        skip = 0;
      }
    }
  }
  return VX_OK;
}

/* ---- the writer ------------------------------------------------------------------------------- */

typedef struct writer {
  vx_stream *s;
  ZSTD_CCtx *cc;
  vx_svo_checker ck;
  FILE *stage;        /* compressed sections, unlinked */
  uint8_t *in, *out;  /* PIECE-sized buffers */
  size_t out_cap;
  uint64_t done, total; /* progress: raw bytes compressed + bytes copied */
  vx_progress_fn progress;
  void *user;
} writer;

static vx_status tick(writer *w, uint64_t bytes, vx_error *err) {
  w->done += bytes;
  if (w->progress && w->progress(w->user, "writing", (double)w->done / (double)w->total))
    return vx_error_set(err, VX_ERR_INTERRUPTED, "writing interrupted");
  return VX_OK;
}

static vx_status stage_write(writer *w, const void *p, size_t n, vx_error *err) {
  if (n && fwrite(p, 1, n, w->stage) != n)
    return vx_error_set(err, VX_ERR_IO, "cannot write a temporary file in '%s': %s",
                        w->s->tmp_dir, strerror(errno));
  return VX_OK;
}


/* Compresses one level into the staging file; returns its frame size and check. */
static vx_status write_level(writer *w, uint32_t level, int threaded, uint64_t *zsize,
                             uint32_t *check, vx_error *err) {
  vx_stream *s = w->s;
  section_reader r;
  memset(&r, 0, sizeof r);
  r.s = s;
  r.level = level;
  r.count = s->level_count[level];
  r.raw = r.count * (level < s->depth ? VX_SVO_NODE_RECORD : VX_SVO_VOXEL_RECORD);
  r.scratch = (uint8_t *)malloc(BATCH * sizeof(vx_node));
  if (!r.scratch) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  vx_status st = VX_OK;
  *zsize = 0;
  if (!vx_svo_check_begin(&w->ck)) st = vx_svo_zstd_fail(err, "checksumming", 0);
  if (st == VX_OK && threaded) {
    size_t rc = ZSTD_CCtx_reset(w->cc, ZSTD_reset_session_only);
    if (!ZSTD_isError(rc)) rc = ZSTD_CCtx_setPledgedSrcSize(w->cc, r.raw);
    if (ZSTD_isError(rc)) st = vx_svo_zstd_fail(err, "starting a level", rc);
    while (st == VX_OK) {
      size_t n = r.raw - r.pos < PIECE ? (size_t)(r.raw - r.pos) : PIECE;
      if ((st = section_fill(&r, w->in, n, err)) != VX_OK) break;
      ZSTD_EndDirective end = r.pos == r.raw ? ZSTD_e_end : ZSTD_e_continue;
      ZSTD_inBuffer in = {w->in, n, 0};
      do {
        ZSTD_outBuffer out = {w->out, w->out_cap, 0};
        rc = ZSTD_compressStream2(w->cc, &out, &in, end);
        if (ZSTD_isError(rc)) {
          st = vx_svo_zstd_fail(err, "compressing a level", rc);
          break;
        }
        if ((st = stage_write(w, w->out, out.pos, err)) != VX_OK) break;
        if (!vx_svo_check_feed(&w->ck, w->out, out.pos, ZSTD_e_continue)) st = vx_svo_zstd_fail(err, "checksumming", 0);
        *zsize += out.pos;
      } while (st == VX_OK && (end == ZSTD_e_end ? rc != 0 : in.pos < in.size));
      if (st == VX_OK) st = tick(w, n, err);
      if (end == ZSTD_e_end) break;
    }
  } else if (st == VX_OK) {
    /* Single-threaded zstd: the whole section in one call, as vx_svo_write does. */
    size_t bound = ZSTD_compressBound((size_t)r.raw);
    uint8_t *raw = (uint8_t *)malloc(r.raw ? (size_t)r.raw : 1), *z = (uint8_t *)malloc(bound);
    if (!raw || !z) {
      st = vx_error_set(err, VX_ERR_NOMEM, "cannot allocate %.1f MiB to compress level %u",
                        (double)(r.raw + bound) / 1048576.0, level);
    } else if ((st = section_fill(&r, raw, (size_t)r.raw, err)) == VX_OK) {
      size_t zn = ZSTD_compress2(w->cc, z, bound, raw, (size_t)r.raw);
      if (ZSTD_isError(zn))
        st = vx_svo_zstd_fail(err, "compressing a level", zn);
      else if ((st = stage_write(w, z, zn, err)) == VX_OK) {
        if (!vx_svo_check_feed(&w->ck, z, zn, ZSTD_e_continue)) st = vx_svo_zstd_fail(err, "checksumming", 0);
        *zsize = zn;
        if (st == VX_OK) st = tick(w, r.raw, err);
      }
    }
    free(raw);
    free(z);
  }
  if (st == VX_OK && !vx_svo_check_feed(&w->ck, NULL, 0, ZSTD_e_end)) st = vx_svo_zstd_fail(err, "checksumming", 0);
  *check = vx_svo_check_value(&w->ck);
  if (st == VX_OK && level < s->depth && r.children != s->level_count[level + 1])
    st = vx_error_set(err, VX_ERR_INVALID_ARG,
                      "level %u: masks name %llu children but level %u holds %llu", level,
                      (unsigned long long)r.children, level + 1,
                      (unsigned long long)s->level_count[level + 1]);
  free(r.scratch);
  return st;
}

static vx_status open_stage(writer *w, vx_error *err) {
  size_t n = strlen(w->s->tmp_dir) + 40;
  char *name = (char *)malloc(n);
  if (!name) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  snprintf(name, n, "%s/.voxlod-sections-XXXXXX", w->s->tmp_dir);
  int fd = mkstemp(name);
  vx_status st = VX_OK;
  if (fd < 0) {
    st = vx_error_set(err, VX_ERR_IO, "cannot create a temporary file in '%s': %s",
                      w->s->tmp_dir, strerror(errno));
  } else {
    unlink(name);
    w->stage = fdopen(fd, "w+b");
    if (!w->stage) {
      close(fd);
      st = vx_error_set(err, VX_ERR_IO, "cannot open a temporary file: %s", strerror(errno));
    }
  }
  free(name);
  return st;
}

vx_status vx_svo_write_stream(const char *path, vx_stream *s, int zstd_level,
                              vx_progress_fn progress, void *user, vx_error *err) {
  const uint32_t D = s->depth;
  if (D < VX_MIN_DEPTH || D > VX_MAX_DEPTH || s->level_count[0] != 1 || s->level_count[D] == 0)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "cannot write an incomplete stream");
  uint64_t raw_total = 0;
  for (uint32_t l = 0; l <= D; l++)
    raw_total += s->level_count[l] * (l < D ? VX_SVO_NODE_RECORD : VX_SVO_VOXEL_RECORD);
  writer w;
  memset(&w, 0, sizeof w);
  w.s = s;
  w.progress = progress;
  w.user = user;
  w.total = 2 * raw_total; /* compressing, then copying (counted as raw for lack of better) */
  w.cc = ZSTD_createCCtx();
  w.ck.cc = ZSTD_createCCtx();
  w.out_cap = ZSTD_CStreamOutSize();
  w.in = (uint8_t *)malloc(PIECE);
  w.out = (uint8_t *)malloc(w.out_cap > PIECE ? w.out_cap : PIECE);
  if (w.out_cap < PIECE) w.out_cap = PIECE;
  vx_status st = VX_OK;
  if (!w.cc || !w.ck.cc || !w.in || !w.out) st = vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  /* Parameters exactly as vx_svo_write sets them. */
  int threaded = 0;
  if (st == VX_OK) {
    size_t rc = ZSTD_CCtx_setParameter(w.cc, ZSTD_c_compressionLevel,
                                       vx_svo_zstd_level(zstd_level, raw_total));
    if (!ZSTD_isError(rc)) rc = ZSTD_CCtx_setParameter(w.cc, ZSTD_c_checksumFlag, 1);
    if (!ZSTD_isError(rc)) rc = ZSTD_CCtx_setParameter(w.cc, ZSTD_c_contentSizeFlag, 1);
    if (ZSTD_isError(rc)) st = vx_svo_zstd_fail(err, "setting parameters", rc);
    int workers = vx_svo_zstd_workers(raw_total);
    if (st == VX_OK && workers)
      threaded = !ZSTD_isError(ZSTD_CCtx_setParameter(w.cc, ZSTD_c_nbWorkers, workers));
  }
  if (st == VX_OK) st = open_stage(&w, err);
  uint8_t hdr[VX_SVO_HEADER_FIXED + VX_SVO_LEVEL_ENTRY * (VX_MAX_DEPTH + 1)];
  const size_t hsize = VX_SVO_HEADER_FIXED + (size_t)VX_SVO_LEVEL_ENTRY * (D + 1);
  vx_put_u32(hdr + 0, D);
  vx_put_f32(hdr + 4, s->band);
  vx_put_f32(hdr + 8, s->prune_error);
  vx_put_u32(hdr + 12, 0);
  for (int i = 0; i < 3; i++) vx_put_f64(hdr + 16 + 8 * i, s->xf.origin[i]);
  vx_put_f64(hdr + 40, s->xf.scale);
  uint64_t staged = 0;
  for (uint32_t l = 0; l <= D && st == VX_OK; l++) {
    uint64_t z = 0;
    uint32_t check = 0;
    st = write_level(&w, l, threaded, &z, &check, err);
    uint8_t *e = hdr + VX_SVO_HEADER_FIXED + VX_SVO_LEVEL_ENTRY * l;
    vx_put_u64(e, s->level_count[l]);
    vx_put_u64(e + 8, z);
    vx_put_u64(e + 16, s->level_count[l] * (l < D ? VX_SVO_NODE_RECORD : VX_SVO_VOXEL_RECORD));
    vx_put_u32(e + 24, check);
    vx_put_u32(e + 28, 0);
    staged += z;
  }
  if (st == VX_OK && fflush(w.stage) != 0)
    st = vx_error_set(err, VX_ERR_IO, "cannot write a temporary file: %s", strerror(errno));
  /* The header: one small frame, single-threaded at level 19, and its check. */
  uint8_t ph[VX_SVO_PROLOGUE + VX_SVO_MAX_HEADER_FRAME];
  size_t hz = 0;
  if (st == VX_OK) {
    (void)ZSTD_CCtx_setParameter(w.cc, ZSTD_c_nbWorkers, 0);
    (void)ZSTD_CCtx_setParameter(w.cc, ZSTD_c_compressionLevel, 19);
    hz = ZSTD_compress2(w.cc, ph + VX_SVO_PROLOGUE, VX_SVO_MAX_HEADER_FRAME, hdr, hsize);
    if (ZSTD_isError(hz) || !vx_svo_check_begin(&w.ck) ||
        !vx_svo_check_feed(&w.ck, ph + VX_SVO_PROLOGUE, hz, ZSTD_e_end))
      st = vx_svo_zstd_fail(err, "compressing the header", hz);
  }
  if (st == VX_OK) {
    memcpy(ph, VX_SVO_MAGIC, 8);
    vx_put_u32(ph + 8, VX_SVO_VERSION);
    vx_put_u32(ph + 12, 0);
    vx_put_u32(ph + 16, (uint32_t)hz);
    vx_put_u32(ph + 20, (uint32_t)hsize);
    vx_put_u32(ph + 24, vx_svo_check_value(&w.ck));
    vx_put_u32(ph + 28, 0);
  }
  /* Prologue and header, then the staged sections, into the atomic temporary. */
  if (st == VX_OK) {
    vx_atomic_file af;
    st = vx_atomic_open(&af, path, err);
    if (st == VX_OK) {
      st = vx_atomic_write(&af, ph, VX_SVO_PROLOGUE + hz, err);
      int fd = fileno(w.stage);
      uint64_t at = 0;
      while (st == VX_OK && at < staged) {
        size_t n = staged - at < PIECE ? (size_t)(staged - at) : PIECE;
        ssize_t got = pread(fd, w.in, n, (off_t)at);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
          st = vx_error_set(err, VX_ERR_IO, "cannot read back a temporary file: %s",
                            got < 0 ? strerror(errno) : "short file");
          break;
        }
        st = vx_atomic_write(&af, w.in, (size_t)got, err);
        at += (uint64_t)got;
        if (st == VX_OK) st = tick(&w, (uint64_t)got * raw_total / (staged ? staged : 1), err);
      }
      if (st == VX_OK)
        st = vx_atomic_commit(&af, err);
      else
        vx_atomic_abort(&af);
    }
  }
  if (w.stage) fclose(w.stage);
  ZSTD_freeCCtx(w.cc);
  ZSTD_freeCCtx(w.ck.cc);
  free(w.in);
  free(w.out);
  return st;
}
