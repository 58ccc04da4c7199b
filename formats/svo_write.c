/* SPDX-License-Identifier: Apache-2.0 */
/* svo_write.c - the one .svo writer, over a source of levels: a tree in memory or a level stream
 * (svo/stream.h) that may live in temporary files (docs/SVO_FORMAT.md is the byte map).
 *
 * Sections. A node level is stored as all its child masks (one byte each), then one 11-byte
 * record per node (errors, flags, normal, plane offset); child indices are not stored (the reader
 * rebuilds them from the masks). Voxels are stored as they lie in memory, 8 corner bytes each.
 * A coloured tree adds one section per level after the voxels: each cell's RGBA8 minus its
 * parent's, as byte planes (svo_codec.h); from a stream, read back with the parents' masks and
 * colours in batches (cdiff), so that no level needs to be in memory. The layouts were chosen by
 * measurement (SVO_FORMAT.md, "Why this layout").
 *
 * Compression. Each level is one zstd frame with its content size and checksum, at the level
 * vx_svo_zstd_level picks, with zstd worker threads for big files. zstd's output depends on how
 * it is driven: with workers it cuts the input into jobs of a fixed size, so the frame does not
 * depend on how the input arrives; single-threaded streaming differs from a one-call compression
 * once the input passes the window. Hence a level is packed whole and compressed in one call,
 * except from a stream with workers, where it is fed in 1 MiB pieces with its size pledged: the
 * same bytes, in bounded memory.
 *
 * Where the frames go. From a tree they stay in memory (one slot per level), and each finished
 * frame's check (svo_codec.h) runs on a thread of its own while the next levels compress, beside
 * the tree's validation; from a stream they go to an unlinked staging file and are checked as
 * they appear. The format puts the header (every frame's size and check) first, so the file is
 * written last: prologue, header, frames, through the atomic writer (sys/atomic_file.h).
 */
#define _FILE_OFFSET_BITS 64
#define _POSIX_C_SOURCE 200809L
#include "formats/svo_file.h"
#include "formats/svo_codec.h"
#include "sys/atomic_file.h"
#include "sys/system.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PIECE ((size_t)1 << 20) /* stream pieces, copy buffer */
#define BATCH 65536u            /* records read from a stream at a time */

/* The highest zstd level colour sections are compressed at. */
#define VX_SVO_COLOR_ZSTD_LEVEL 9

int vx_svo_zstd_level(int requested, uint64_t raw_total) {
  int level = requested > 0                  ? requested
              : raw_total < VX_SVO_SMALL_RAW ? 19
              : raw_total < VX_SVO_BIG_RAW   ? 9
                                             : 3;
  return level > ZSTD_maxCLevel() ? ZSTD_maxCLevel() : level;
}

/* Big files are compressed by zstd's worker threads, at least one even on one core: zstd's
 * output is the same for any number of workers, but not the same without any, and a file must
 * not depend on the machine that wrote it (tiles built on a cluster's machines are merged). */
int vx_svo_zstd_workers(uint64_t raw_total) {
  if (raw_total < VX_SVO_BIG_RAW) return 0;
  const int cpus = vx_cpu_count();
  return cpus > 16 ? 16 : cpus < 1 ? 1 : cpus;
}

/* ---- the source of levels ------------------------------------------------------------------ */

/* Sections are numbered in file order: 0 .. D are the levels (nodes, then voxels at D), and a
 * coloured tree adds D+1 .. 2D+1, the colours of levels 0 .. D. */
typedef struct source {
  const vx_octree *t; /* a tree in memory, or */
  vx_stream *s;       /* a stream (coloured when s->color) */
  uint32_t depth;
  uint32_t sections;  /* D+1, or 2(D+1) with colour */
  int color;
  const uint64_t *count;
} source;

static uint64_t raw_size(const source *q, uint32_t sec) {
  if (sec > q->depth) return q->count[sec - q->depth - 1] * VX_SVO_COLOR_RECORD;
  return q->count[sec] * (sec < q->depth ? VX_SVO_NODE_RECORD : VX_SVO_VOXEL_RECORD);
}

/* The colours of a stream's level cl in order, each with its parent's colour (0 past the
 * parents' children, and on level 0), as vx_svo_pack_colors pairs them: batches of the level's
 * colours and of the parents' nodes and colours read as they are needed. */
typedef struct cdiff {
  vx_stream *s;
  uint32_t cl;
  uint64_t i, n;           /* the next cell; the level's count */
  uint64_t k, nup;         /* the next parent; the parents' count */
  uint32_t left, pc;       /* children of the current parent still to come; its colour */
  vx_node *pn;             /* BATCH parents from pfirst */
  uint32_t *pcol, *cc;     /* BATCH parents' colours; BATCH cells' colours from cfirst */
  uint64_t pfirst, pcount, cfirst, ccount;
} cdiff;

static void cdiff_free(cdiff *g) {
  vx_free(g->pn);
  vx_free(g->pcol);
  vx_free(g->cc);
  memset(g, 0, sizeof *g);
}

static vx_status cdiff_start(cdiff *g, vx_stream *s, uint32_t cl, vx_error *err) {
  vx_node *pn = g->pn;
  uint32_t *pcol = g->pcol, *cc = g->cc;
  memset(g, 0, sizeof *g);
  g->s = s;
  g->cl = cl;
  g->n = s->level_count[cl];
  g->nup = cl ? s->level_count[cl - 1] : 0;
  g->pn = pn ? pn : (vx_node *)vx_malloc(BATCH * sizeof(vx_node));
  g->pcol = pcol ? pcol : (uint32_t *)vx_malloc(BATCH * sizeof(uint32_t));
  g->cc = cc ? cc : (uint32_t *)vx_malloc(BATCH * sizeof(uint32_t));
  if (!g->pn || !g->pcol || !g->cc) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  return VX_OK;
}

static vx_status cdiff_next(cdiff *g, uint32_t *c, uint32_t *p, vx_error *err) {
  vx_status st;
  if (g->i >= g->cfirst + g->ccount) {
    uint64_t k = g->n - g->i < BATCH ? g->n - g->i : BATCH;
    if ((st = vx_stream_read_color(g->s, g->cl, g->i, k, g->cc, err)) != VX_OK) return st;
    g->cfirst = g->i;
    g->ccount = k;
  }
  *c = g->cc[g->i - g->cfirst];
  *p = 0;
  while (g->left == 0 && g->k < g->nup) {
    if (g->k >= g->pfirst + g->pcount) {
      uint64_t k = g->nup - g->k < BATCH ? g->nup - g->k : BATCH;
      if ((st = vx_stream_read(g->s, g->cl - 1, g->k, k, g->pn, err)) != VX_OK ||
          (st = vx_stream_read_color(g->s, g->cl - 1, g->k, k, g->pcol, err)) != VX_OK)
        return st;
      g->pfirst = g->k;
      g->pcount = k;
    }
    g->left = vx_popcount8(vx_node_mask(g->pn[g->k - g->pfirst].info));
    g->pc = g->pcol[g->k - g->pfirst];
    g->k++;
  }
  if (g->left) {
    *p = g->pc;
    g->left--;
  }
  g->i++;
  return VX_OK;
}

/* The colours of colour section sec (trees only). */
static const uint32_t *section_colors(const source *q, uint32_t sec) {
  uint32_t l = sec - q->depth - 1;
  return l < q->depth ? q->t->node_color + q->t->level_first[l] : q->t->voxel_color;
}

/* Records first .. first+n-1 of level l into dst (vx_node or vx_voxel records). */
static vx_status source_read(const source *q, uint32_t l, uint64_t first, uint64_t n, void *dst,
                             vx_error *err) {
  if (q->s) return vx_stream_read(q->s, l, first, n, dst, err);
  const vx_octree *t = q->t;
  if (l < t->depth)
    memcpy(dst, t->nodes + t->level_first[l] + first, (size_t)n * sizeof(vx_node));
  else
    memcpy(dst, t->voxels + first, (size_t)n * sizeof(vx_voxel));
  return VX_OK;
}

/* ---- packing -------------------------------------------------------------------------------- */

/* Nodes first .. first+k-1 (at nd[0 .. k-1]) of a level of `count` into the raw section: mask
 * bytes at the front, 11-byte records after them (errmax, errrms, flags, normal u32, d f32). */
void vx_svo_pack_nodes(const vx_node *nd, uint64_t count, uint64_t first, uint64_t k,
                       uint8_t *raw) {
  uint8_t *rec = raw + count + first * 11;
  for (uint64_t i = 0; i < k; i++, rec += 11) {
    uint32_t info = nd[i].info;
    raw[first + i] = (uint8_t)vx_node_mask(info);
    rec[0] = (uint8_t)vx_node_errmax_code(info);
    rec[1] = (uint8_t)vx_node_errrms_code(info);
    rec[2] = (uint8_t)vx_node_flags(info);
    vx_put_u32(rec + 3, nd[i].normal);
    vx_put_f32(rec + 7, nd[i].d);
  }
}

typedef struct pack_job {
  const vx_node *n;
  uint64_t count, next, chunk;
  uint8_t *raw;
  pthread_mutex_t mu;
} pack_job;

static void *pack_worker(void *arg) {
  pack_job *j = (pack_job *)arg;
  for (;;) {
    pthread_mutex_lock(&j->mu);
    uint64_t lo = j->next;
    j->next = lo + j->chunk < j->count ? lo + j->chunk : j->count;
    pthread_mutex_unlock(&j->mu);
    if (lo >= j->count) return NULL;
    uint64_t hi = lo + j->chunk < j->count ? lo + j->chunk : j->count;
    vx_svo_pack_nodes(j->n + lo, j->count, lo, hi - lo, j->raw);
  }
}

/* The whole raw section l into raw (raw_size bytes): a tree's node levels on up to 16 threads
 * when large (the same bytes either way), a stream's batch by batch; colours as differences
 * from the parents' colours in byte planes (svo_codec.h). */
static vx_status pack_level(const source *q, uint32_t l, uint8_t *raw, vx_node *scratch,
                            uint64_t *children, vx_error *err) {
  if (l > q->depth && q->s) { /* a stream's colours, in one pass */
    const uint32_t cl = l - q->depth - 1;
    const uint64_t n = q->count[cl];
    cdiff g;
    memset(&g, 0, sizeof g);
    vx_status st = cdiff_start(&g, q->s, cl, err);
    for (uint64_t i = 0; i < n && st == VX_OK; i++) {
      uint32_t c, p;
      if ((st = cdiff_next(&g, &c, &p, err)) != VX_OK) break;
      for (int b = 0; b < 4; b++)
        raw[(uint64_t)b * n + i] = (uint8_t)((c >> (8 * b)) - (p >> (8 * b)));
    }
    cdiff_free(&g);
    return st;
  }
  if (l > q->depth) {
    const uint32_t cl = l - q->depth - 1; /* the cells' level */
    const vx_octree *t = q->t;
    vx_svo_pack_colors(section_colors(q, l), q->count[cl],
                       cl ? t->nodes + t->level_first[cl - 1] : NULL,
                       cl ? t->node_color + t->level_first[cl - 1] : NULL,
                       cl ? q->count[cl - 1] : 0, raw);
    return VX_OK;
  }
  uint64_t count = q->count[l];
  if (l == q->depth) {
    for (uint64_t first = 0; first < count; first += BATCH) {
      uint64_t k = count - first < BATCH ? count - first : BATCH;
      vx_status st = source_read(q, l, first, k, raw + first * 8, err);
      if (st != VX_OK) return st;
    }
    return VX_OK;
  }
  if (q->t) {
    pack_job j;
    j.n = q->t->nodes + q->t->level_first[l];
    j.count = count;
    j.next = 0;
    j.chunk = (uint64_t)1 << 18;
    j.raw = raw;
    pthread_mutex_init(&j.mu, NULL);
    vx_parallel(count < ((uint64_t)1 << 20) ? 1 : vx_thread_count(0, 16), pack_worker, &j);
    pthread_mutex_destroy(&j.mu);
  } else {
    for (uint64_t first = 0; first < count; first += BATCH) {
      uint64_t k = count - first < BATCH ? count - first : BATCH;
      vx_status st = source_read(q, l, first, k, scratch, err);
      if (st != VX_OK) return st;
      vx_svo_pack_nodes(scratch, count, first, k, raw);
    }
  }
  for (uint64_t i = 0; i < count; i++) *children += vx_popcount8(raw[i]);
  return VX_OK;
}

/* Bytes [pos, pos + n) of level l's raw section, for a stream fed piece by piece. */
typedef struct piece_reader {
  const source *q;
  uint32_t level;
  uint64_t count, pos; /* raw bytes produced so far */
  vx_node *scratch;    /* BATCH records */
  uint64_t children;   /* popcount sum of the masks produced */
  cdiff g;             /* colour sections: the current byte plane's walk */
} piece_reader;

static vx_status piece_fill(piece_reader *r, uint8_t *dst, size_t n, vx_error *err) {
  const source *q = r->q;
  while (n) {
    vx_status st;
    if (r->level > q->depth) { /* colours: byte plane b of cell i, each plane walked anew */
      const uint32_t cl = r->level - q->depth - 1;
      const uint64_t cnt = q->count[cl], b = r->pos / cnt, i = r->pos % cnt;
      if (i == 0 && (st = cdiff_start(&r->g, q->s, cl, err)) != VX_OK) return st;
      uint64_t k = cnt - i < n ? cnt - i : n;
      for (uint64_t m = 0; m < k; m++) {
        uint32_t c, p;
        if ((st = cdiff_next(&r->g, &c, &p, err)) != VX_OK) return st;
        dst[m] = (uint8_t)((c >> (8 * b)) - (p >> (8 * b)));
      }
      dst += k;
      n -= (size_t)k;
      r->pos += k;
    } else if (r->level == q->depth) { /* voxels: as they are */
      uint64_t first = r->pos / 8, k = n / 8 < BATCH ? n / 8 : BATCH;
      if ((st = source_read(q, r->level, first, k, dst, err)) != VX_OK) return st;
      dst += 8 * k;
      n -= (size_t)(8 * k);
      r->pos += 8 * k;
    } else if (r->pos < r->count) { /* masks */
      uint64_t first = r->pos, k = r->count - first;
      if (k > n) k = n;
      if (k > BATCH) k = BATCH;
      if ((st = source_read(q, r->level, first, k, r->scratch, err)) != VX_OK) return st;
      for (uint64_t i = 0; i < k; i++) {
        uint32_t m = vx_node_mask(r->scratch[i].info);
        dst[i] = (uint8_t)m;
        r->children += vx_popcount8(m);
      }
      dst += k;
      n -= (size_t)k;
      r->pos += k;
    } else { /* 11-byte records, possibly starting or ending inside one */
      uint64_t off = r->pos - r->count, first = off / 11, skip = off % 11;
      uint64_t k = (skip + n + 10) / 11;
      if (k > BATCH) k = BATCH;
      if (k > r->count - first) k = r->count - first;
      if ((st = source_read(q, r->level, first, k, r->scratch, err)) != VX_OK) return st;
      for (uint64_t i = 0; i < k && n; i++) {
        uint8_t rec[11 + 1]; /* pack_nodes writes a mask byte before the record */
        vx_svo_pack_nodes(r->scratch + i, 1, 0, 1, rec);
        size_t take = 11 - (size_t)skip;
        if (take > n) take = n;
        memcpy(dst, rec + 1 + skip, take);
        dst += take;
        n -= take;
        r->pos += take;
        skip = 0;
      }
    }
  }
  return VX_OK;
}

/* ---- the writer ----------------------------------------------------------------------------- */

typedef struct validate_job {
  const vx_octree *t;
  vx_error err;
  vx_status status;
} validate_job;

static void *validate_worker(void *arg) {
  validate_job *j = (validate_job *)arg;
  j->status = vx_octree_validate(j->t, &j->err);
  return NULL;
}

typedef struct writer {
  source q;
  const char *tmp_dir;    /* staging file's directory (streams) */
  ZSTD_CCtx *cc;
  int zlevel;             /* the zstd level of the geometry sections */
  int threaded;           /* zstd worker threads are on */
  uint8_t *raw;           /* a packed level (whole-level compression) */
  vx_node *scratch;       /* BATCH records */
  uint8_t *in, *out;      /* PIECE buffers (streams) */
  size_t out_cap;
  /* frames in memory (trees): section l at mem + slot[l] */
  uint8_t *mem;
  size_t mem_cap, slot[VX_SVO_MAX_SECTIONS];
  vx_svo_bg_check cj[VX_SVO_MAX_SECTIONS];
  /* frames in a staging file (streams), checked as they appear */
  FILE *stage;
  vx_svo_checker ck;
  uint64_t zsize[VX_SVO_MAX_SECTIONS], staged;
  uint32_t check[VX_SVO_MAX_SECTIONS];
  uint64_t done, total;   /* progress: raw bytes compressed + bytes written */
  vx_progress_fn progress;
  void *user;
  /* colours still being made (vx_svo_write_pending): asked for once, before the first colour
   * section; grey: the answer was no colour */
  vx_svo_colors_fn ready;
  void *ready_user;
  int grey;
} writer;

/* VX_ERR_INVALID_ARG unless t's colour arrays are all there (or none are). */
static vx_status colors_whole(const vx_octree *t, vx_error *err) {
  if ((t->node_count && !t->node_color) || (t->voxel_count && !t->voxel_color))
    return vx_error_set(err, VX_ERR_INVALID_ARG,
                        "the tree's colours are incomplete (node colours %s, voxel colours %s)",
                        t->node_color ? "present" : "missing",
                        t->voxel_color ? "present" : "missing");
  return VX_OK;
}

/* The pending colours, once: VX_OK with w->grey set when the tree stays grey, an error when they
 * failed or the tree's colour arrays are incomplete. */
static vx_status await_colors(writer *w, vx_error *err) {
  if (!w->ready) return VX_OK;
  vx_svo_colors_fn ready = w->ready;
  w->ready = NULL;
  int has = 0;
  vx_status st = ready(w->ready_user, &has, err);
  if (st != VX_OK) return st;
  const vx_octree *t = w->q.t;
  if (!has) {
    w->grey = 1;
    return VX_OK;
  }
  return colors_whole(t, err);
}

static vx_status tick(writer *w, uint64_t bytes, vx_error *err) {
  w->done += bytes;
  if (w->progress &&
      w->progress(w->user, "writing", w->total ? (double)w->done / (double)w->total : 1.0))
    return vx_error_set(err, VX_ERR_INTERRUPTED, "writing interrupted");
  return VX_OK;
}

static vx_status stage_write(writer *w, const void *p, size_t n, vx_error *err) {
  if (n && fwrite(p, 1, n, w->stage) != n)
    return vx_error_set(err, VX_ERR_IO, "cannot write a temporary file in '%s': %s", w->tmp_dir,
                        strerror(errno));
  if (!vx_svo_check_feed(&w->ck, p, n, ZSTD_e_continue))
    return vx_svo_zstd_fail(err, "checksumming", 0);
  w->staged += n;
  return VX_OK;
}

static vx_status open_stage(writer *w, vx_error *err) {
  const char *dir = w->tmp_dir ? w->tmp_dir : ".";
  size_t n = strlen(dir) + 40;
  char *name = (char *)vx_malloc(n);
  if (!name) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  snprintf(name, n, "%s/.voxlod-sections-XXXXXX", dir);
  int fd = mkstemp(name);
  vx_status st = VX_OK;
  if (fd < 0) {
    st = vx_error_set(err, VX_ERR_IO, "cannot create a temporary file in '%s': %s", dir,
                      strerror(errno));
  } else {
    unlink(name);
    w->stage = fdopen(fd, "w+b");
    if (!w->stage) {
      close(fd);
      st = vx_error_set(err, VX_ERR_IO, "cannot open a temporary file: %s", strerror(errno));
    }
  }
  vx_free(name);
  return st;
}

/* Section l, packed whole into rawbuf and compressed by cc in one call, into its memory slot or
 * the staging file. Progress is the caller's (tick): the colour lane runs this off the calling
 * thread. */
static vx_status section_whole(writer *w, ZSTD_CCtx *cc, uint8_t *rawbuf, uint32_t l,
                               uint64_t *children, vx_error *err) {
  const source *q = &w->q;
  uint64_t raw = raw_size(q, l);
  const uint8_t *src = rawbuf;
  vx_status st = VX_OK;
  if (l == q->depth && q->t)
    src = (const uint8_t *)q->t->voxels; /* voxels are their own raw section */
  else if ((st = pack_level(q, l, rawbuf, w->scratch, children, err)) != VX_OK)
    return st;
  if (w->mem) {
    /* its own slot only: zstd may write past the frame it returns within the capacity it is
     * given (literals tried compressed, then stored raw), which would land in the next slots,
     * the voxels' frame among them, compressed first and being checked meanwhile */
    size_t z = ZSTD_compress2(cc, w->mem + w->slot[l], ZSTD_compressBound((size_t)raw), src,
                              (size_t)raw);
    if (ZSTD_isError(z)) return vx_svo_zstd_fail(err, "compressing a level", z);
    w->zsize[l] = z;
    ZSTD_CCtx *ck = vx_zstd_cctx();
    if (!ck) return vx_error_set(err, VX_ERR_NOMEM, "out of memory for a frame check");
    vx_svo_check_start(&w->cj[l], ck, w->mem + w->slot[l], z, 1);
    return VX_OK;
  }
  size_t bound = ZSTD_compressBound((size_t)raw);
  uint8_t *z = (uint8_t *)vx_malloc(bound);
  if (!z)
    return vx_error_set(err, VX_ERR_NOMEM, "cannot allocate %.1f MiB to compress level %u",
                        (double)bound / 1048576.0, l);
  size_t zn = ZSTD_compress2(cc, z, bound, src, (size_t)raw);
  if (ZSTD_isError(zn))
    st = vx_svo_zstd_fail(err, "compressing a level", zn);
  else
    st = stage_write(w, z, zn, err);
  vx_free(z);
  w->zsize[l] = ZSTD_isError(zn) ? 0 : zn;
  return st;
}

static vx_status level_whole(writer *w, uint32_t l, uint64_t *children, vx_error *err) {
  vx_status st = section_whole(w, w->cc, w->raw, l, children, err);
  return st == VX_OK ? tick(w, raw_size(&w->q, l), err) : st;
}

/* The colour lane: a tree's colour sections compressed on a thread of their own, with their own
 * context and packing buffer, while the calling thread compresses the levels. Each section is
 * one call on a fresh session at the same parameters, so the frames are the bytes the calling
 * thread would make; only the time changes (a noisy texture's colours take as long as the
 * levels). Only a tree's sections, only without zstd workers (which have the cores already),
 * and their packing never touches the shared scratch (colours are packed from the tree). */
typedef struct color_lane {
  writer *w;
  ZSTD_CCtx *cc;
  uint8_t *raw;
  int level;
  vx_status status;
  vx_error err;
} color_lane;

static void *color_lane_worker(void *arg) {
  color_lane *c = (color_lane *)arg;
  const source *q = &c->w->q;
  if ((c->status = await_colors(c->w, &c->err)) != VX_OK || c->w->grey) return NULL;
  size_t rc = ZSTD_CCtx_setParameter(c->cc, ZSTD_c_compressionLevel, c->level);
  if (!ZSTD_isError(rc)) rc = ZSTD_CCtx_setParameter(c->cc, ZSTD_c_checksumFlag, 1);
  if (ZSTD_isError(rc)) {
    c->status = vx_svo_zstd_fail(&c->err, "setting the level", rc);
    return NULL;
  }
  for (uint32_t l = q->depth + 1; l < q->sections && c->status == VX_OK; l++) {
    uint64_t children = 0;
    c->status = section_whole(c->w, c->cc, c->raw, l, &children, &c->err);
  }
  return NULL;
}


/* Level l of a stream, fed to zstd's workers in pieces with its size pledged. */
static vx_status level_pieces(writer *w, uint32_t l, uint64_t *children, vx_error *err) {
  piece_reader r;
  memset(&r, 0, sizeof r);
  r.q = &w->q;
  r.level = l;
  r.count = w->q.count[l];
  r.scratch = w->scratch;
  uint64_t raw = raw_size(&w->q, l), start = w->staged;
  size_t rc = ZSTD_CCtx_reset(w->cc, ZSTD_reset_session_only);
  if (!ZSTD_isError(rc)) rc = ZSTD_CCtx_setPledgedSrcSize(w->cc, raw);
  if (ZSTD_isError(rc)) return vx_svo_zstd_fail(err, "starting a level", rc);
  vx_status st = VX_OK;
  for (;;) {
    size_t n = raw - r.pos < PIECE ? (size_t)(raw - r.pos) : PIECE;
    if ((st = piece_fill(&r, w->in, n, err)) != VX_OK) break;
    ZSTD_EndDirective end = r.pos == raw ? ZSTD_e_end : ZSTD_e_continue;
    ZSTD_inBuffer in = {w->in, n, 0};
    do {
      ZSTD_outBuffer out = {w->out, w->out_cap, 0};
      rc = ZSTD_compressStream2(w->cc, &out, &in, end);
      if (ZSTD_isError(rc)) {
        st = vx_svo_zstd_fail(err, "compressing a level", rc);
        break;
      }
      st = stage_write(w, w->out, out.pos, err);
    } while (st == VX_OK && (end == ZSTD_e_end ? rc != 0 : in.pos < in.size));
    if (st == VX_OK) st = tick(w, n, err);
    if (st != VX_OK || end == ZSTD_e_end) break;
  }
  w->zsize[l] = w->staged - start;
  *children = r.children;
  cdiff_free(&r.g);
  return st;
}

/* Every level's frame; for a tree, its validation runs meanwhile and must pass. */
static vx_status compress_levels(writer *w, int zstd_level, vx_error *err) {
  const source *q = &w->q;
  uint64_t raw_total = 0, raw_max = 0, bound_total = 0;
  for (uint32_t l = 0; l < q->sections; l++) {
    uint64_t r = raw_size(q, l);
    raw_total += r;
    if (r > raw_max) raw_max = r;
    w->slot[l] = (size_t)bound_total;
    bound_total += ZSTD_compressBound((size_t)r);
  }
  w->total = 2 * raw_total;
  w->cc = vx_zstd_cctx();
  if (!w->cc) return vx_error_set(err, VX_ERR_NOMEM, "out of memory for zstd");
  w->zlevel = vx_svo_zstd_level(zstd_level, raw_total);
  size_t rc = ZSTD_CCtx_setParameter(w->cc, ZSTD_c_compressionLevel, w->zlevel);
  if (!ZSTD_isError(rc)) rc = ZSTD_CCtx_setParameter(w->cc, ZSTD_c_checksumFlag, 1);
  if (!ZSTD_isError(rc)) rc = ZSTD_CCtx_setParameter(w->cc, ZSTD_c_contentSizeFlag, 1);
  if (ZSTD_isError(rc)) return vx_svo_zstd_fail(err, "setting parameters", rc);
  int workers = vx_svo_zstd_workers(raw_total);
  if (workers) w->threaded = !ZSTD_isError(ZSTD_CCtx_setParameter(w->cc, ZSTD_c_nbWorkers, workers));
  const int pieces = q->s && w->threaded;
  const int lane_on = q->t && q->color && !w->threaded;
  w->scratch = (vx_node *)vx_malloc(BATCH * sizeof(vx_node));
  if (!w->scratch) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  if (pieces) {
    w->out_cap = ZSTD_CStreamOutSize() > PIECE ? ZSTD_CStreamOutSize() : PIECE;
    w->in = (uint8_t *)vx_malloc(PIECE);
    w->out = (uint8_t *)vx_malloc(w->out_cap);
    if (!w->in || !w->out) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  } else {
    /* A tree's voxels are compressed in place: the packing buffer holds node levels and
     * colours only. */
    uint64_t need = 0;
    for (uint32_t l = 0; l < (lane_on ? q->depth + 1 : q->sections); l++)
      if ((l != q->depth || !q->t) && raw_size(q, l) > need) need = raw_size(q, l);
    w->raw = (uint8_t *)vx_malloc((size_t)need);
    if (!w->raw)
      return vx_error_set(err, VX_ERR_NOMEM, "cannot allocate %.1f MiB to pack a level",
                          (double)need / 1048576.0);
  }
  vx_status st = VX_OK;
  if (q->t) {
    w->mem_cap = (size_t)bound_total;
    w->mem = (uint8_t *)vx_malloc(w->mem_cap);
    if (!w->mem)
      return vx_error_set(err, VX_ERR_NOMEM, "cannot allocate %.1f MiB to compress the tree",
                          (double)bound_total / 1048576.0);
  } else {
    if ((st = open_stage(w, err)) != VX_OK) return st;
    if (!(w->ck.cc = vx_zstd_cctx())) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  }
  validate_job vj;
  memset(&vj, 0, sizeof vj);
  vj.t = q->t;
  pthread_t vth;
  int vthread = 0;
  if (q->t) {
    vthread = pthread_create(&vth, NULL, validate_worker, &vj) == 0;
    if (!vthread) validate_worker(&vj);
  }
  color_lane lane;
  memset(&lane, 0, sizeof lane);
  pthread_t lth;
  int lthread = 0;
  if (lane_on && st == VX_OK) {
    uint64_t need = 0;
    for (uint32_t l = q->depth + 1; l < q->sections; l++)
      if (raw_size(q, l) > need) need = raw_size(q, l);
    lane.w = w;
    lane.level = w->zlevel > VX_SVO_COLOR_ZSTD_LEVEL ? VX_SVO_COLOR_ZSTD_LEVEL : w->zlevel;
    lane.cc = vx_zstd_cctx();
    lane.raw = (uint8_t *)vx_malloc(need ? (size_t)need : 1);
    if (!lane.cc || !lane.raw)
      st = vx_error_set(err, VX_ERR_NOMEM, "cannot allocate %.1f MiB to pack the colours",
                        (double)need / 1048576.0);
    else if (!(lthread = pthread_create(&lth, NULL, color_lane_worker, &lane) == 0))
      color_lane_worker(&lane);
  }
  /* The voxels (the largest section) first, so that their frame's check runs while the node
   * levels and the colours compress; a frame does not depend on what the context compressed
   * before. Streams go in file order: their frames are staged one after the other. */
  const uint32_t here = lane_on ? q->depth + 1 : q->sections; /* the rest: the colour lane's */
  for (uint32_t o = 0; o < here && st == VX_OK; o++) {
    const uint32_t l = q->t ? (o == 0 ? q->depth : o <= q->depth ? o - 1 : o) : o;
    uint64_t children = 0;
    if (l > q->depth && ((st = await_colors(w, err)) != VX_OK || w->grey)) break;
    if (!w->mem && !vx_svo_check_begin(&w->ck)) {
      st = vx_svo_zstd_fail(err, "checksumming", 0);
      break;
    }
    /* Colour sections at most at VX_SVO_COLOR_ZSTD_LEVEL: past it zstd spends many times the
     * time for a few percent (a noisy 512^3 texture: 1.45 s more at 19 than at 9 for 7 %). */
    const int lv = l > q->depth && w->zlevel > VX_SVO_COLOR_ZSTD_LEVEL ? VX_SVO_COLOR_ZSTD_LEVEL
                                                                       : w->zlevel;
    const size_t pr = ZSTD_CCtx_setParameter(w->cc, ZSTD_c_compressionLevel, lv);
    if (ZSTD_isError(pr)) st = vx_svo_zstd_fail(err, "setting the level", pr);
    if (st == VX_OK)
      st = pieces ? level_pieces(w, l, &children, err) : level_whole(w, l, &children, err);
    if (st == VX_OK && !w->mem) {
      if (!vx_svo_check_feed(&w->ck, NULL, 0, ZSTD_e_end))
        st = vx_svo_zstd_fail(err, "checksumming", 0);
      w->check[l] = vx_svo_check_value(&w->ck);
    }
    if (st == VX_OK && q->s && l < q->depth && children != q->count[l + 1])
      st = vx_error_set(err, VX_ERR_INVALID_ARG,
                        "level %u: masks name %llu children but level %u holds %llu", l,
                        (unsigned long long)children, l + 1, (unsigned long long)q->count[l + 1]);
  }
  if (lthread) pthread_join(lth, NULL);
  if (lane.w) {
    if (st == VX_OK && lane.status != VX_OK) {
      if (err) *err = lane.err;
      st = lane.status;
    }
    for (uint32_t l = q->depth + 1; l < q->sections && st == VX_OK; l++)
      st = tick(w, raw_size(q, l), err);
  }
  ZSTD_freeCCtx(lane.cc);
  vx_free(lane.raw);
  if (st == VX_OK && w->grey) { /* the colours did not come: a grey file */
    w->q.color = 0;
    w->q.sections = q->depth + 1;
  }
  for (uint32_t l = 0; l < q->sections; l++) {
    vx_svo_bg_check *j = &w->cj[l];
    if (j->cc) {
      const int ok = vx_svo_check_join(j);
      ZSTD_freeCCtx(j->cc);
      if (!ok && st == VX_OK) st = vx_svo_zstd_fail(err, "checksumming", 0);
      w->check[l] = j->check;
    }
    memset(j, 0, sizeof *j);
  }
  if (vthread) pthread_join(vth, NULL);
  if (st == VX_OK && vj.status != VX_OK) {
    if (err) *err = vj.err;
    st = vj.status;
  }
  if (st == VX_OK && w->stage && fflush(w->stage) != 0)
    st = vx_error_set(err, VX_ERR_IO, "cannot write a temporary file: %s", strerror(errno));
  return st;
}

/* Prologue and header frame (SVO_FORMAT.md) for the frames just made: ph gets
 * VX_SVO_PROLOGUE + the header frame's bytes, *n their count. */
static vx_status make_head(writer *w, float band, float prune_error, const vx_transform *xf,
                           uint8_t *ph, size_t *n, vx_error *err) {
  const source *q = &w->q;
  uint8_t hdr[VX_SVO_MAX_HEADER];
  const size_t hsize = (size_t)vx_svo_header_size(q->depth, q->color);
  vx_put_u32(hdr + 0, q->depth);
  vx_put_f32(hdr + 4, band);
  vx_put_f32(hdr + 8, prune_error);
  vx_put_u32(hdr + 12, 0);
  for (int i = 0; i < 3; i++) vx_put_f64(hdr + 16 + 8 * i, xf->origin[i]);
  vx_put_f64(hdr + 40, xf->scale);
  for (uint32_t l = 0; l < q->sections; l++) { /* level entries, then colour entries */
    uint8_t *e = hdr + VX_SVO_HEADER_FIXED + VX_SVO_LEVEL_ENTRY * l;
    vx_put_u64(e, q->count[l > q->depth ? l - q->depth - 1 : l]);
    vx_put_u64(e + 8, w->zsize[l]);
    vx_put_u64(e + 16, raw_size(q, l));
    vx_put_u32(e + 24, w->check[l]);
    vx_put_u32(e + 28, 0);
  }
  /* The header: one small frame, single-threaded at level 19, and its check. */
  (void)ZSTD_CCtx_setParameter(w->cc, ZSTD_c_nbWorkers, 0);
  (void)ZSTD_CCtx_setParameter(w->cc, ZSTD_c_compressionLevel, 19);
  size_t hz = ZSTD_compress2(w->cc, ph + VX_SVO_PROLOGUE, VX_SVO_MAX_HEADER_FRAME, hdr, hsize);
  if (ZSTD_isError(hz)) return vx_svo_zstd_fail(err, "compressing the header", hz);
  vx_svo_checker c;
  c.cc = vx_zstd_cctx();
  int ok = c.cc && vx_svo_check_begin(&c) &&
           vx_svo_check_feed(&c, ph + VX_SVO_PROLOGUE, hz, ZSTD_e_end);
  uint32_t hcheck = vx_svo_check_value(&c);
  ZSTD_freeCCtx(c.cc);
  if (!ok) return vx_svo_zstd_fail(err, "checksumming the header", 0);
  memcpy(ph, VX_SVO_MAGIC, 8);
  vx_put_u32(ph + 8, VX_SVO_VERSION);
  vx_put_u32(ph + 12, q->color ? VX_SVO_FLAG_COLOR : 0u);
  vx_put_u32(ph + 16, (uint32_t)hz);
  vx_put_u32(ph + 20, (uint32_t)hsize);
  vx_put_u32(ph + 24, hcheck);
  vx_put_u32(ph + 28, 0);
  *n = VX_SVO_PROLOGUE + hz;
  return VX_OK;
}

static void writer_free(writer *w) {
  ZSTD_freeCCtx(w->cc);
  ZSTD_freeCCtx(w->ck.cc);
  vx_free(w->raw);
  vx_free(w->scratch);
  vx_free(w->in);
  vx_free(w->out);
  vx_free(w->mem);
  if (w->stage) fclose(w->stage);
}

/* Sets up a writer on a tree (t) or a stream (s) and makes every frame and the head. */
static vx_status encode(writer *w, const vx_octree *t, vx_stream *s, int zstd_level, uint8_t *ph,
                        size_t *phn, vx_error *err) {
  float band, prune;
  vx_transform xf;
  if (t) {
    if (t->levels_loaded != t->depth + 1)
      return vx_error_set(err, VX_ERR_INVALID_ARG,
                          "cannot write a partially loaded tree (levels %u of %u)",
                          t->levels_loaded, t->depth + 1);
    w->q.t = t;
    w->q.depth = t->depth;
    w->q.count = t->level_count;
    w->q.color = w->ready != NULL || t->node_color != NULL || t->voxel_color != NULL;
    vx_status cs = !w->ready && w->q.color ? colors_whole(t, err) : VX_OK;
    if (cs != VX_OK) return cs;
    band = t->band;
    prune = t->prune_error;
    xf = t->xf;
  } else {
    w->q.s = s;
    w->q.depth = s->depth;
    w->q.count = s->level_count;
    w->q.color = s->color;
    for (uint32_t l = 0; s->color && l <= s->depth; l++)
      if (s->color_count[l] != s->level_count[l])
        return vx_error_set(err, VX_ERR_INVALID_ARG, "level %u holds %llu colours for %llu cells",
                            l, (unsigned long long)s->color_count[l],
                            (unsigned long long)s->level_count[l]);
    w->tmp_dir = s->tmp_dir;
    band = s->band;
    prune = s->prune_error;
    xf = s->xf;
  }
  const uint32_t D = w->q.depth;
  w->q.sections = (D + 1) * (w->q.color ? 2u : 1u);
  if (D < VX_MIN_DEPTH || D > VX_MAX_DEPTH || w->q.count[0] != 1 || (s && w->q.count[D] == 0))
    return vx_error_set(err, VX_ERR_INVALID_ARG, "cannot write an incomplete tree (depth %u)", D);
  if (!isfinite(xf.origin[0]) || !isfinite(xf.origin[1]) || !isfinite(xf.origin[2]) ||
      !isfinite(xf.scale) || !isfinite(prune) || prune < 0.0f)
    return vx_error_set(err, VX_ERR_INVALID_ARG, "tree transform or prune error is not finite");
  vx_status st = compress_levels(w, zstd_level, err);
  if (st == VX_OK) st = make_head(w, band, prune, &xf, ph, phn, err);
  return st;
}

/* Prologue, header and the frames, in file order, into the atomic writer. */
static vx_status emit(writer *w, vx_atomic_file *af, const uint8_t *ph, size_t phn,
                      vx_error *err) {
  vx_status st = vx_atomic_write(af, ph, phn, err);
  if (w->mem) {
    for (uint32_t l = 0; l < w->q.sections && st == VX_OK; l++) {
      /* in pieces, so that progress (and a cancel) is seen during a long write */
      for (uint64_t at = 0; at < w->zsize[l] && st == VX_OK; at += 64 * PIECE) {
        size_t n = w->zsize[l] - at < 64 * PIECE ? (size_t)(w->zsize[l] - at) : 64 * PIECE;
        st = vx_atomic_write(af, w->mem + w->slot[l] + at, n, err);
        if (st == VX_OK) st = tick(w, n, err);
      }
    }
    return st;
  }
  if (!w->in && !(w->in = (uint8_t *)vx_malloc(PIECE)))
    return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  int fd = fileno(w->stage);
  uint64_t at = 0;
  while (st == VX_OK && at < w->staged) {
    size_t n = w->staged - at < PIECE ? (size_t)(w->staged - at) : PIECE;
    ssize_t got = pread(fd, w->in, n, (off_t)at);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      st = vx_error_set(err, VX_ERR_IO, "cannot read back a temporary file: %s",
                        got < 0 ? strerror(errno) : "short file");
      break;
    }
    st = vx_atomic_write(af, w->in, (size_t)got, err);
    at += (uint64_t)got;
    if (st == VX_OK) st = tick(w, (uint64_t)got, err);
  }
  return st;
}

static vx_status write_file(const char *path, const vx_octree *t, vx_stream *s, int zstd_level,
                            vx_progress_fn progress, void *user, vx_svo_colors_fn ready,
                            void *ready_user, vx_error *err) {
  writer w;
  memset(&w, 0, sizeof w);
  w.progress = progress;
  w.user = user;
  w.ready = ready;
  w.ready_user = ready_user;
  uint8_t ph[VX_SVO_PROLOGUE + VX_SVO_MAX_HEADER_FRAME];
  size_t phn = 0;
  /* The output path is checked before any work (a missing directory, a refused target). */
  vx_atomic_file af;
  vx_status st = vx_atomic_open(&af, path, err);
  if (st == VX_OK) {
    st = encode(&w, t, s, zstd_level, ph, &phn, err);
    if (st == VX_OK) {
      /* The second half of the progress is the write: scale it to the compressed bytes. */
      uint64_t frames = 0;
      for (uint32_t l = 0; l < w.q.sections; l++) frames += w.zsize[l];
      w.total = w.done + frames;
      st = emit(&w, &af, ph, phn, err);
    }
    if (st == VX_OK)
      st = vx_atomic_commit(&af, err);
    else
      vx_atomic_abort(&af);
  }
  if (w.ready) { /* failed before asking for them: the colours are still awaited */
    vx_error ignored;
    int has;
    (void)w.ready(w.ready_user, &has, &ignored);
  }
  writer_free(&w);
  return st;
}

vx_status vx_svo_write(const char *path, const vx_octree *t, int zstd_level,
                       vx_progress_fn progress, void *user, vx_error *err) {
  if (!t) return vx_error_set(err, VX_ERR_INVALID_ARG, "no tree to write");
  return write_file(path, t, NULL, zstd_level, progress, user, NULL, NULL, err);
}

vx_status vx_svo_write_pending(const char *path, const vx_octree *t, int zstd_level,
                               vx_progress_fn progress, void *user, vx_svo_colors_fn ready,
                               void *ready_user, vx_error *err) {
  if (!t || !ready) {
    if (ready) {
      vx_error ignored;
      int has;
      (void)ready(ready_user, &has, &ignored);
    }
    return vx_error_set(err, VX_ERR_INVALID_ARG, "no tree to write");
  }
  return write_file(path, t, NULL, zstd_level, progress, user, ready, ready_user, err);
}

vx_status vx_svo_write_stream(const char *path, vx_stream *s, int zstd_level,
                              vx_progress_fn progress, void *user, vx_error *err) {
  if (!s) return vx_error_set(err, VX_ERR_INVALID_ARG, "no stream to write");
  return write_file(path, NULL, s, zstd_level, progress, user, NULL, NULL, err);
}

vx_status vx_svo_encode(const vx_octree *t, int zstd_level, uint8_t **out, size_t *out_size,
                        vx_error *err) {
  *out = NULL;
  *out_size = 0;
  if (!t) return vx_error_set(err, VX_ERR_INVALID_ARG, "no tree to encode");
  writer w;
  memset(&w, 0, sizeof w);
  uint8_t *ph = (uint8_t *)vx_malloc(VX_SVO_PROLOGUE + VX_SVO_MAX_HEADER_FRAME);
  size_t phn = 0;
  vx_status st = ph ? encode(&w, t, NULL, zstd_level, ph, &phn, err)
                    : vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  if (st == VX_OK) {
    size_t n = phn;
    for (uint32_t l = 0; l < w.q.sections; l++) n += (size_t)w.zsize[l];
    uint8_t *buf = (uint8_t *)vx_malloc(n);
    if (!buf) {
      st = vx_error_set(err, VX_ERR_NOMEM, "cannot allocate %.1f MiB for the file",
                        (double)n / 1048576.0);
    } else {
      memcpy(buf, ph, phn);
      size_t at = phn;
      for (uint32_t l = 0; l < w.q.sections; l++) {
        memcpy(buf + at, w.mem + w.slot[l], (size_t)w.zsize[l]);
        at += (size_t)w.zsize[l];
      }
      *out = buf;
      *out_size = n;
    }
  }
  vx_free(ph);
  writer_free(&w);
  return st;
}
